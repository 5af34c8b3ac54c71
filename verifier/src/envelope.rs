//! A message as a receiver carries it to a machine (CONTROL §3.3): the
//! signed command with its signatures (`cmd`, `csig`, `grant`, `confirm`),
//! and the receiver's own `expires_at`. The receiver's `id` and `at` are the
//! caller's (the ack key, a time to show); nothing here is signed but `cmd`.
//!
//! `expires_at` lives here, in the envelope, not in the command: the receiver
//! sets it and nobody signs it. It bounds a command (CONTROL §5 step 4), so a
//! member of the wrong JSON type is refused as the command's own are
//! (`malformed`, step 1) rather than read as no bound at all.

use crate::{Refusal, Signed};
use serde_json::Value;

/// A polled envelope, read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Carried {
    pub signed: Signed,
    /// The envelope's `expires_at`, epoch ms; `None` when it has none (the
    /// machine's own age limit still holds).
    pub expires_at_ms: Option<i64>,
}

/// Reads `envelope`: `malformed` when it is not an object, when `cmd`,
/// `csig`, `grant` or `confirm` is not of its shape (`csig`, `grant` and
/// `confirm` may be `null`), or when `expires_at` is there and is not a
/// string holding an RFC 3339 time.
pub fn carried(envelope: &Value) -> Result<Carried, Refusal> {
    if !envelope.is_object() {
        return Err(Refusal::Malformed);
    }
    let signed: Signed =
        serde_json::from_value(envelope.clone()).map_err(|_| Refusal::Malformed)?;
    let expires_at_ms = match envelope.get("expires_at") {
        None => None,
        Some(Value::String(at)) => {
            Some(protocol::time::parse_rfc3339_ms(at).ok_or(Refusal::Malformed)?)
        }
        Some(_) => return Err(Refusal::Malformed),
    };
    Ok(Carried {
        signed,
        expires_at_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn expires_at_is_a_time_or_absent() {
        let env = json!({"id": "01K6ZT0000000000000000000A", "cmd": "{}", "csig": "AA",
                         "at": "2026-10-08T09:14:02.110Z",
                         "expires_at": "2026-10-09T09:14:02.110Z"});
        let read = carried(&env).unwrap();
        assert_eq!(read.expires_at_ms, Some(1_791_537_242_110));
        assert_eq!(read.signed.cmd, "{}");
        assert_eq!(read.signed.csig.as_deref(), Some("AA"));

        let mut without = env.clone();
        without.as_object_mut().unwrap().remove("expires_at");
        assert_eq!(carried(&without).unwrap().expires_at_ms, None);

        for bad in [
            json!(1_791_537_242_110i64),
            json!(null),
            json!(true),
            json!(["2026-10-09T09:14:02.110Z"]),
            json!("tomorrow"),
            json!("2026-10-09T09:14:02.110"),
        ] {
            let mut e = env.clone();
            e["expires_at"] = bad.clone();
            assert_eq!(carried(&e), Err(Refusal::Malformed), "{bad}");
        }
    }

    #[test]
    fn the_signed_part_is_of_its_shape() {
        assert_eq!(carried(&json!("cmd")), Err(Refusal::Malformed));
        assert_eq!(carried(&json!({"cmd": 5})), Err(Refusal::Malformed));
        assert_eq!(carried(&json!({"csig": "AA"})), Err(Refusal::Malformed));
        assert_eq!(
            carried(&json!({"cmd": "{}", "grant": "a grant"})),
            Err(Refusal::Malformed)
        );
        let nulls = carried(&json!({"cmd": "{}", "csig": null, "grant": null, "confirm": null}));
        assert_eq!(nulls.unwrap().signed.grant, None);
    }
}
