//! Property tests of every adapter's `map`, the parser of what harnesses send:
//! the recorded payloads of `conformance/harness/` (the project's own, always
//! in the repository), mutated (a value replaced by another of any type, a key
//! removed or added, a string made long or odd), under each of the adapter's
//! hook events and a made-up one. Bounded in the test run; longer by hand with
//! `PROPTEST_CASES=100000 cargo test -p sessionpipe-adapters map_props`.
//!
//! The invariants: `map` never panics; what it maps is a session whose id is
//! one the protocol takes, and every event it gives, with the session block it
//! gives as the pipeline fits it, makes an envelope the protocol's checks
//! accept (a receiver would refuse it otherwise, and a refused event is never
//! sent again).

use crate::REGISTRY;
use harness::Mapped;
use proptest::prelude::*;
use serde_json::Value;
use spool::Job;

/// `(harness, event, payload)` of every recorded call, read once.
fn seeds() -> &'static [(String, String, Value)] {
    static SEEDS: std::sync::OnceLock<Vec<(String, String, Value)>> = std::sync::OnceLock::new();
    SEEDS.get_or_init(read_seeds)
}

fn read_seeds() -> Vec<(String, String, Value)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../conformance/harness");
    let mut out = Vec::new();
    let mut dirs = vec![dir];
    while let Some(d) = dirs.pop() {
        for f in std::fs::read_dir(&d).expect("conformance/harness is in the repository") {
            let path = f.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "json") {
                continue;
            }
            let fixture: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
            if !fixture["input"]["stdin"].is_string() {
                continue; // a folder's session transcript, not a hook call
            }
            let stdin = fixture["input"]["stdin"].as_str().unwrap_or("{}");
            let payload = serde_json::from_str(stdin).unwrap_or(Value::Null);
            out.push((
                fixture["harness"].as_str().unwrap().to_string(),
                fixture["event"].as_str().unwrap().to_string(),
                payload,
            ));
        }
    }
    assert!(out.len() >= 20, "only {} recorded calls", out.len());
    out
}

fn odd_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        ".{0,40}".prop_map(Value::String),
        "[ -~]{0,12}".prop_map(Value::String),
        (1usize..20_000).prop_map(|n| Value::String("x".repeat(n))),
        Just(Value::String("../../etc/passwd".into())),
        Just(Value::String("a b\u{0}c\nd".into())),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,12}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// One edit of `v` at the place `at` picks among its values.
#[derive(Clone, Debug)]
enum Edit {
    Replace(Value),
    Remove,
    Add(String, Value),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        odd_value().prop_map(Edit::Replace),
        Just(Edit::Remove),
        ("[a-z_]{1,16}", odd_value()).prop_map(|(k, v)| Edit::Add(k, v)),
    ]
}

/// Applies `e` at the `n`-th value of `v` in document order (`n` modulo their count).
fn apply(v: &mut Value, n: usize, e: &Edit) {
    fn count(v: &Value) -> usize {
        1 + match v {
            Value::Array(a) => a.iter().map(count).sum(),
            Value::Object(m) => m.values().map(count).sum(),
            _ => 0,
        }
    }
    fn at(v: &mut Value, n: &mut usize, e: &Edit) -> bool {
        if *n == 0 {
            match e {
                Edit::Replace(new) => *v = new.clone(),
                Edit::Add(k, new) => {
                    if let Value::Object(m) = v {
                        m.insert(k.clone(), new.clone());
                    } else {
                        *v = new.clone();
                    }
                }
                Edit::Remove => {
                    if let Value::Object(m) = v
                        && let Some(k) = m.keys().next().cloned()
                    {
                        m.remove(&k);
                    }
                }
            }
            return true;
        }
        *n -= 1;
        match v {
            Value::Array(a) => a.iter_mut().any(|c| at(c, n, e)),
            Value::Object(m) => m.values_mut().any(|c| at(c, n, e)),
            _ => false,
        }
    }
    let mut n = n % count(v);
    at(v, &mut n, e);
}

fn checked(harness: &str, event: &str, payload: Vec<u8>) -> Result<(), TestCaseError> {
    let adapter = crate::lookup(harness).expect("a recorded harness has an adapter");
    let job = Job {
        name: "1-1.job".into(),
        harness: harness.into(),
        event: event.into(),
        argv: vec![harness.into(), event.into()],
        cwd: "/w".into(),
        at_ns: 1_790_000_000_000_000_000,
        payload,
        ..Default::default()
    };
    let Ok(Mapped::Events(m)) = adapter.map(&job) else {
        return Ok(()); // ignored or refused with a reason: both fine
    };
    prop_assert!(
        protocol::valid_session_id(&m.session_id),
        "{harness} {event}: session id {:?}",
        m.session_id
    );
    for ev in m.events {
        let (kind, data) = ev.into_parts();
        let mut env = protocol::test_envelope(&kind, Value::Object(data));
        env.harness.name = harness.into();
        env.session = m.block.clone();
        env.session.id = m.session_id.clone();
        env.session.seq = 1;
        env.session.fit(); // as the pipeline does before it stores
        env.privacy.rulesets = vec!["secrets@1".into()];
        if let Err(e) = protocol::validate_envelope(&env) {
            return Err(TestCaseError::fail(format!(
                "{harness} {event}: {kind} is refused by the protocol's checks: {e}\n{}",
                serde_json::to_string(&env).unwrap()
            )));
        }
    }
    Ok(())
}

proptest! {
    #[test]
    fn every_adapter_maps_mutated_recordings_into_valid_events_or_refuses(
        seed in any::<prop::sample::Index>(),
        edits in prop::collection::vec((any::<usize>(), edit()), 1..4),
        other_event in any::<prop::sample::Index>(),
    ) {
        let seeds = seeds();
        let (harness, event, mut payload) = seeds[seed.index(seeds.len())].clone();
        for (n, e) in &edits {
            apply(&mut payload, *n, e);
        }
        // The recorded event's name, or another of the same harness's.
        let events: Vec<&str> = seeds.iter().filter(|s| s.0 == harness).map(|s| s.1.as_str()).collect();
        let event = if other_event.index(4) == 0 { events[other_event.index(events.len())] } else { event.as_str() };
        checked(&harness, event, serde_json::to_vec(&payload).unwrap())?;
    }

    #[test]
    fn every_adapter_survives_any_bytes(
        adapter in any::<prop::sample::Index>(),
        event in "[A-Za-z_]{0,20}",
        bytes in prop::collection::vec(any::<u8>(), 0..300),
    ) {
        let a = REGISTRY[adapter.index(REGISTRY.len())];
        checked(a.name(), &event, bytes)?;
    }
}
