//! The day grant: a passkey's assertion over sha256(`str`), where `str` is
//! `{"v":1,"t":"sessionpipe.grant","pub":…,"iat":…,"exp":…,"rp":…}` naming the
//! day key that signs each command's `csig`. This file reads and bounds `str`
//! once its assertion verified; the assertion itself is `webauthn`'s.

use crate::json;
use crate::keys::{day_key, is_b64url};
use crate::refusal::GrantFault;
use crate::webauthn::Assertion;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The longest a grant may last.
pub const MAX_GRANT_MS: i64 = 24 * 60 * 60 * 1000;
/// How long before its grant's `iat` a command may be dated (clock skew
/// between the moment the grant and the command were made).
pub const GRANT_LEAD_MS: i64 = 5 * 60 * 1000;
/// A grant's `str`, in characters (the poll schema's bound).
pub const MAX_GRANT_CHARS: usize = 2_000;

/// A grant as carried: `{str, cred, ad, cd, sig}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grant {
    pub str: String,
    #[serde(flatten)]
    pub assertion: Assertion,
}

/// What a grant's `str` says.
pub(crate) struct GrantTerms {
    pub day: p256::ecdsa::VerifyingKey,
    pub iat_ms: i64,
    pub exp_ms: i64,
}

impl GrantTerms {
    /// Whether a command signed at `iat_ms` falls within the grant.
    pub(crate) fn covers(&self, iat_ms: i64) -> bool {
        iat_ms >= self.iat_ms.saturating_sub(GRANT_LEAD_MS) && iat_ms <= self.exp_ms
    }
}

/// Reads `str`: exactly its six members, for `rp_id`, at most a day long, its
/// `pub` a P-256 key. A member it does not know is refused: the passkey vouched
/// for these words and no others.
pub(crate) fn terms(text: &str, rp_id: &str) -> Result<GrantTerms, GrantFault> {
    if text.chars().count() > MAX_GRANT_CHARS {
        return Err(GrantFault::TooLong);
    }
    let map = json::object(text).map_err(|e| GrantFault::Json(e.to_string()))?;
    if map.get("v").and_then(Value::as_i64) != Some(1)
        || map.get("t").and_then(Value::as_str) != Some("sessionpipe.grant")
    {
        return Err(GrantFault::NotAGrant);
    }
    if let Some(foreign) = map
        .keys()
        .find(|k| !["v", "t", "pub", "iat", "exp", "rp"].contains(&k.as_str()))
    {
        return Err(GrantFault::Foreign(foreign.clone()));
    }
    let int = |name| {
        map.get(name)
            .and_then(Value::as_i64)
            .filter(|n| *n >= 1)
            .ok_or(GrantFault::Field(name))
    };
    let (iat_ms, exp_ms) = (int("iat")?, int("exp")?);
    let rp = map
        .get("rp")
        .and_then(Value::as_str)
        .ok_or(GrantFault::Field("rp"))?;
    if rp != rp_id {
        return Err(GrantFault::WrongRp(rp.to_string()));
    }
    if exp_ms < iat_ms {
        return Err(GrantFault::Backwards);
    }
    if exp_ms - iat_ms > MAX_GRANT_MS {
        return Err(GrantFault::TooLongLived);
    }
    let day = map
        .get("pub")
        .and_then(Value::as_str)
        .filter(|p| is_b64url(p, 1, MAX_GRANT_CHARS))
        .and_then(day_key)
        .ok_or(GrantFault::DayKey)?;
    Ok(GrantTerms {
        day,
        iat_ms,
        exp_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PUB: &str = "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEg32jJhY1PMn1jVuCJmpSSRrKACzEJY1fWf46-7xnUkDekGF3KZQgwcMJtr57dTJBCiEhdXgHrB_TK6uPKReybw";

    fn str_of(iat: i64, exp: i64, rp: &str) -> String {
        format!(
            r#"{{"v":1,"t":"sessionpipe.grant","pub":"{PUB}","iat":{iat},"exp":{exp},"rp":"{rp}"}}"#
        )
    }

    #[test]
    fn a_day_grant() {
        let t = terms(
            &str_of(1_000, 1_000 + MAX_GRANT_MS, "r.example"),
            "r.example",
        )
        .unwrap();
        assert!(t.covers(1_000 - GRANT_LEAD_MS));
        assert!(!t.covers(1_000 - GRANT_LEAD_MS - 1));
        assert!(t.covers(1_000 + MAX_GRANT_MS));
        assert!(!t.covers(1_000 + MAX_GRANT_MS + 1));
    }

    /// A grant string and what its refusal must be.
    type Case = (String, fn(&GrantFault) -> bool);

    #[test]
    fn refusals() {
        let rp = "r.example";
        let cases: &[Case] = &[
            (str_of(1, 2, "evil.example"), |f| {
                matches!(f, GrantFault::WrongRp(_))
            }),
            (str_of(1, 2 + MAX_GRANT_MS, rp), |f| {
                *f == GrantFault::TooLongLived
            }),
            (str_of(5, 4, rp), |f| *f == GrantFault::Backwards),
            (str_of(0, 4, rp), |f| *f == GrantFault::Field("iat")),
            ("{\"v\":1}".into(), |f| *f == GrantFault::NotAGrant),
            ("nope".into(), |f| matches!(f, GrantFault::Json(_))),
            (
                str_of(1, 2, rp).replace("\"rp\"", "\"scope\":\"all\",\"rp\""),
                |f| matches!(f, GrantFault::Foreign(_)),
            ),
            (str_of(1, 2, rp).replace(PUB, "AAAA"), |f| {
                *f == GrantFault::DayKey
            }),
            (format!("{}{}", str_of(1, 2, rp), " ".repeat(2000)), |f| {
                *f == GrantFault::TooLong
            }),
        ];
        for (text, want) in cases {
            let got = terms(text, rp).err().expect(text);
            assert!(want(&got), "{text}: {got:?}");
        }
    }
}
