//! Property tests of the two readers of outside bytes in this crate: the JSON
//! reader (the hook runs it on payloads) and the job file parser (the daemon
//! runs it on whatever is in the spool). Bounded in the test run; longer by
//! hand with `PROPTEST_CASES=100000 cargo test -p sessionpipe-spool props`.
//!
//! The invariants: no input panics; the reader agrees with serde_json on every
//! document serde_json writes, and accepts exactly what serde_json accepts on
//! mutations of them (within `MAX_DEPTH`); a job round-trips whole, and no
//! strict prefix of a job file (a torn write) is taken for a job.

use crate::job::Job;
use crate::json::{self, Value};
use proptest::prelude::*;

fn to_serde(v: &Value) -> serde_json::Value {
    match v {
        Value::Null => serde_json::Value::Null,
        Value::Bool(b) => serde_json::Value::Bool(*b),
        Value::Number(n) => serde_json::from_str(n).expect("a number literal"),
        Value::String(s) => serde_json::Value::String(s.clone()),
        Value::Array(a) => serde_json::Value::Array(a.iter().map(to_serde).collect()),
        Value::Object(m) => {
            serde_json::Value::Object(m.iter().map(|(k, v)| (k.clone(), to_serde(v))).collect())
        }
    }
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::Bool),
        any::<i64>().prop_map(|n| serde_json::json!(n)),
        any::<u64>().prop_map(|n| serde_json::json!(n)),
        (-1e300f64..1e300).prop_map(|f| serde_json::json!(f)),
        ".*".prop_map(serde_json::Value::String),
        "[\\u{0}-\\u{7f}\\u{80}-\\u{10ffff}]{0,12}".prop_map(serde_json::Value::String),
    ];
    leaf.prop_recursive(6, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(serde_json::Value::Array),
            prop::collection::btree_map(".{0,8}", inner, 0..8)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A document with one edit: a byte changed, inserted or removed.
fn mutated() -> impl Strategy<Value = Vec<u8>> {
    (
        json_value(),
        any::<prop::sample::Index>(),
        any::<u8>(),
        0..3u8,
    )
        .prop_map(|(v, at, byte, how)| {
            let mut b = serde_json::to_vec(&v).unwrap();
            let i = at.index(b.len() + 1);
            match how {
                0 if i < b.len() => b[i] = byte,
                1 => b.insert(i, byte),
                _ if i < b.len() => {
                    b.remove(i);
                }
                _ => b.push(byte),
            }
            b
        })
}

fn depth(v: &serde_json::Value) -> usize {
    match v {
        serde_json::Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
        serde_json::Value::Object(m) => 1 + m.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

fn job() -> impl Strategy<Value = Job> {
    (
        ".{0,20}",
        ".{0,20}",
        prop::collection::vec(".{0,10}", 0..4),
        ".{0,30}",
        any::<u32>(),
        any::<Option<u32>>(),
        any::<u64>(),
        prop::collection::btree_map("[A-Z_]{1,12}", ".{0,20}", 0..4),
        prop::collection::vec(any::<u8>(), 0..300),
        any::<u64>(),
    )
        .prop_map(
            |(harness, event, argv, cwd, pid, ppid, at_ns, env, payload, dropped)| Job {
                name: "x.job".into(),
                harness,
                event,
                argv,
                cwd,
                pid,
                ppid,
                at_ns,
                env,
                payload,
                dropped,
            },
        )
}

proptest! {
    #[test]
    fn the_json_reader_never_panics_on_any_bytes(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        let _ = json::parse(&bytes);
    }

    #[test]
    fn the_json_reader_reads_what_serde_json_writes(v in json_value()) {
        let text = serde_json::to_string(&v).unwrap();
        let read = json::parse(text.as_bytes());
        prop_assert!(read.is_some(), "refused {}", text);
        // Through serde_json's own number parsing on both sides: the reader
        // keeps a number's literal, which is the point.
        let theirs: serde_json::Value = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(to_serde(&read.unwrap()), theirs);
    }

    #[test]
    fn the_json_reader_accepts_what_serde_json_accepts(bytes in mutated()) {
        let theirs = serde_json::from_slice::<serde_json::Value>(&bytes);
        let ours = json::parse(&bytes);
        if let Ok(v) = &theirs && depth(v) < json::MAX_DEPTH {
            prop_assert!(ours.is_some(), "refused what serde_json takes: {:?}", String::from_utf8_lossy(&bytes));
        }
        // A number beyond f64 is valid JSON that serde_json declines; the reader
        // keeps its literal (RFC 8259 leaves the range to the reader).
        if let Err(e) = &theirs && !e.to_string().contains("number out of range") {
            prop_assert!(ours.is_none(), "took what serde_json refuses: {:?}", String::from_utf8_lossy(&bytes));
        }
    }

    #[test]
    fn a_job_round_trips_and_no_torn_prefix_is_a_job(j in job(), cut in any::<prop::sample::Index>()) {
        let bytes = j.encode();
        prop_assert_eq!(Job::parse("x.job", &bytes).unwrap(), j);
        let at = cut.index(bytes.len());
        prop_assert!(Job::parse("x.job", &bytes[..at]).is_err(), "a prefix of {} bytes of {}", at, bytes.len());
    }

    #[test]
    fn the_job_parser_never_panics_on_any_bytes(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        let _ = Job::parse("x.job", &bytes);
    }
}
