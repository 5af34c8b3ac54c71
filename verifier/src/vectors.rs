//! One control vector (`conformance/control-vectors/*.json`, format in the
//! conformance README) judged with this verifier: a signed command with its
//! machine, rp id, trusted keys, `now`, `max_age_ms` and `seen_nonces`, or a
//! pairing proof, against its `expect`. It takes the parsed document; reading
//! files and printing are the caller's.
//!
//! `input.signed` is read as a machine reads a polled envelope ([`carried`]),
//! so a vector's optional `input.expires_at` (the receiver's envelope member,
//! exactly as a receiver would send it; the project's own vectors use it) is
//! judged as a machine judges it.

use crate::{
    Assertion, MemoryNonces, Policy, Refusal, TrustedKey, Verified, carried, verify,
    verify_enrollment,
};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Why a vector did not reach its verdict, or could not be read as one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Mismatch {
    #[error("not a control vector: {0}")]
    NotAVector(String),
    #[error("expected {want}, got {got}")]
    Verdict { want: String, got: String },
}

/// Whether `doc` has a control vector's shape (`input.signed` or
/// `input.proof`, and `expect.ok`).
pub fn is_vector(doc: &Value) -> bool {
    doc.pointer("/expect/ok").is_some_and(Value::is_boolean)
        && (doc.pointer("/input/signed").is_some() || doc.pointer("/input/proof").is_some())
}

/// Judges one vector: `Ok` when the verifier reaches the expected verdict.
pub fn judge(doc: &Value) -> Result<(), Mismatch> {
    let input = doc
        .get("input")
        .ok_or_else(|| Mismatch::NotAVector("no input".into()))?;
    let expect = doc
        .get("expect")
        .ok_or_else(|| Mismatch::NotAVector("no expect".into()))?;
    let want_ok = expect
        .get("ok")
        .and_then(Value::as_bool)
        .ok_or_else(|| Mismatch::NotAVector("expect.ok is not a boolean".into()))?;
    if input.get("proof").is_some() {
        return judge_enrollment(input, want_ok);
    }

    let mut envelope = input
        .get("signed")
        .cloned()
        .ok_or_else(|| Mismatch::NotAVector("no input.signed".into()))?;
    if let (Some(env), Some(at)) = (envelope.as_object_mut(), input.get("expires_at")) {
        env.insert("expires_at".into(), at.clone());
    }
    let machine: String = field(input, "machine")?;
    let rp_id: String = field(input, "rp_id")?;
    let trusted: Vec<TrustedKey> = field(input, "trusted")?;
    let now: i64 = field(input, "now")?;
    let mut policy = Policy::new(&machine, &rp_id, &trusted, now);
    if input.get("max_age_ms").is_some() {
        policy.max_age_ms = field(input, "max_age_ms")?;
    }
    let seen: Vec<String> = match input.get("seen_nonces") {
        Some(_) => field(input, "seen_nonces")?,
        None => Vec::new(),
    };
    let mut nonces = MemoryNonces::with_seen(seen.iter().map(String::as_str), now);
    let got = carried(&envelope).and_then(|c| {
        policy.expires_at_ms = c.expires_at_ms;
        verify(&c.signed, &policy, &mut nonces)
    });

    let text = |key| expect.get(key).and_then(Value::as_str);
    let fits = match (&got, want_ok) {
        (Ok(v), true) => {
            text("via").is_none_or(|via| via == v.via.as_str())
                && text("kind").is_none_or(|kind| kind == v.command.kind())
        }
        (Err(r), false) => text("code").is_none_or(|code| code == r.code()),
        _ => false,
    };
    if fits {
        return Ok(());
    }
    let want = if want_ok {
        format!(
            "ok via {} kind {}",
            text("via").unwrap_or("any"),
            text("kind").unwrap_or("any")
        )
    } else {
        format!("refused {}", text("code").unwrap_or("with any code"))
    };
    Err(Mismatch::Verdict {
        want,
        got: describe(&got),
    })
}

fn judge_enrollment(input: &Value, want_ok: bool) -> Result<(), Mismatch> {
    let machine: String = field(input, "machine")?;
    let code: String = field(input, "code")?;
    let key: TrustedKey = field(input, "key")?;
    let proof: Assertion = field(input, "proof")?;
    let rp_id: String = field(input, "rp_id")?;
    let got = verify_enrollment(&machine, &code, &key, &proof, &rp_id);
    if got.is_ok() == want_ok {
        return Ok(());
    }
    Err(Mismatch::Verdict {
        want: if want_ok { "ok" } else { "refused" }.into(),
        got: match got {
            Ok(()) => "ok".into(),
            Err(r) => refusal_words(&r),
        },
    })
}

fn field<T: DeserializeOwned>(input: &Value, name: &str) -> Result<T, Mismatch> {
    let v = input
        .get(name)
        .ok_or_else(|| Mismatch::NotAVector(format!("no input.{name}")))?;
    serde_json::from_value(v.clone())
        .map_err(|e| Mismatch::NotAVector(format!("input.{name}: {e}")))
}

fn describe(got: &Result<Verified, Refusal>) -> String {
    match got {
        Ok(v) => format!("ok via {} kind {}", v.via.as_str(), v.command.kind()),
        Err(r) => refusal_words(r),
    }
}

fn refusal_words(r: &Refusal) -> String {
    format!("refused {} ({r})", r.code())
}
