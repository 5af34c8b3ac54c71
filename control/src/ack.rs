//! What a message's acks say (CONTROL.md §7, the `ack` schema): the outcome
//! and what it carries, built as an [`Ack`], and made JSON in one place
//! ([`Ack::json`]), which applies every bound the schema sets to every
//! outcome: a `detail` loses its secrets and is cut to 500 characters, a
//! `reply` loses its secrets and keeps its last 20 000.
//!
//! It sends and keeps nothing (`machine` does) and decides no outcome.

use serde_json::{Value, json};
use sessionpipe_verifier::SessionRef;

/// Most characters of a `detail` (the schema's).
const DETAIL_MAX: usize = 500;
/// Most characters of a `reply` (the schema's).
const REPLY_MAX: usize = 20_000;

/// One ack's outcome and what it carries (its message's id and its time are
/// added when it is made JSON).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ack {
    /// The machine holds the message and a final ack follows.
    Taken,
    /// The reply so far, whole, with a rising `seq` (sent at once, never
    /// kept or retried: the next one supersedes it).
    Progress { seq: u64, reply: String },
    /// It reached its session: by `mode` (the rung), with the turn's reply
    /// when there is one, and the session it ran in when control named one
    /// (a start, a fork).
    Delivered {
        mode: Option<&'static str>,
        reply: Option<String>,
        session: Option<SessionRef>,
    },
    /// A check refused it, with the spec's `code`.
    Refused { code: &'static str, detail: String },
    /// This machine has no way to do what it asks.
    Unsupported { detail: String },
    /// It was tried and did not happen: `code` where the spec names one
    /// (`file`), `mode` where a rung took it and failed to hand it over.
    Failed {
        code: Option<&'static str>,
        mode: Option<&'static str>,
        detail: String,
    },
    /// Too late: past its `expires_at`, or its attention closed first.
    Expired { detail: String },
}

impl Ack {
    /// `delivered` by `mode`, with nothing more.
    pub fn delivered(mode: &'static str) -> Ack {
        Ack::Delivered {
            mode: Some(mode),
            reply: None,
            session: None,
        }
    }

    pub fn refused(code: &'static str, detail: impl Into<String>) -> Ack {
        Ack::Refused {
            code,
            detail: detail.into(),
        }
    }

    pub fn unsupported(detail: impl Into<String>) -> Ack {
        Ack::Unsupported {
            detail: detail.into(),
        }
    }

    /// `failed`, with no code.
    pub fn failed(detail: impl Into<String>) -> Ack {
        Ack::Failed {
            code: None,
            mode: None,
            detail: detail.into(),
        }
    }

    /// `failed` with the spec's `code`.
    pub fn failed_with(code: &'static str, detail: impl Into<String>) -> Ack {
        Ack::Failed {
            code: Some(code),
            mode: None,
            detail: detail.into(),
        }
    }

    pub fn expired(detail: impl Into<String>) -> Ack {
        Ack::Expired {
            detail: detail.into(),
        }
    }

    /// The schema's name of the outcome.
    pub fn outcome(&self) -> &'static str {
        match self {
            Ack::Taken => "taken",
            Ack::Progress { .. } => "progress",
            Ack::Delivered { .. } => "delivered",
            Ack::Refused { .. } => "refused",
            Ack::Unsupported { .. } => "unsupported",
            Ack::Failed { .. } => "failed",
            Ack::Expired { .. } => "expired",
        }
    }

    /// The ack of message `id` as the wire and the store carry it, stamped
    /// now, every bound applied.
    pub fn json(&self, id: &str) -> Value {
        let mut ack = json!({"id": id, "outcome": self.outcome(), "at": now_text()});
        let mut set = |k: &str, v: Value| {
            ack[k] = v;
        };
        match self {
            Ack::Taken => {}
            Ack::Progress { seq, reply } => {
                set("seq", json!(seq));
                set("reply", json!(reply_text(reply)));
            }
            Ack::Delivered {
                mode,
                reply,
                session,
            } => {
                if let Some(m) = mode {
                    set("mode", json!(m));
                }
                if let Some(r) = reply {
                    set("reply", json!(reply_text(r)));
                }
                if let Some(s) = session {
                    set("session", json!(s.to_string()));
                }
            }
            Ack::Refused { code, detail } => {
                set("code", json!(code));
                set("detail", json!(detail_text(detail)));
            }
            Ack::Failed { code, mode, detail } => {
                if let Some(c) = code {
                    set("code", json!(c));
                }
                if let Some(m) = mode {
                    set("mode", json!(m));
                }
                set("detail", json!(detail_text(detail)));
            }
            Ack::Unsupported { detail } | Ack::Expired { detail } => {
                set("detail", json!(detail_text(detail)));
            }
        }
        ack
    }
}

/// A reply as an ack carries it: secrets removed, at most the schema's
/// 20 000 characters (the end kept: it is where an answer concludes).
pub fn reply_text(reply: &str) -> String {
    let clean = redact::secrets(reply.trim());
    let n = clean.chars().count();
    if n <= REPLY_MAX {
        return clean.into_owned();
    }
    let tail: String = clean.chars().skip(n - (REPLY_MAX - 2)).collect();
    format!("…\n{tail}")
}

/// A detail as an ack carries it: secrets removed, at most 500 characters.
pub fn detail_text(detail: &str) -> String {
    let clean = redact::secrets(detail.trim());
    clean.chars().take(DETAIL_MAX).collect()
}

pub fn now_text() -> String {
    protocol::time::rfc3339_ms(protocol::time::now_ms())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_loses_its_secrets_and_keeps_its_end() {
        let key = format!("sk-ant-api03-{}", "A1b2C3d4".repeat(12));
        let r = reply_text(&format!("Set it to {key} and run."));
        assert!(!r.contains(&key), "{r}");
        let long = format!("{}THE END", "x".repeat(30_000));
        let r = reply_text(&long);
        assert_eq!(r.chars().count(), 20_000);
        assert!(r.ends_with("THE END"));
    }

    /// Every outcome that carries a detail holds it to the schema's bound
    /// and without secrets (a refusal's detail was once written as given).
    #[test]
    fn every_detail_is_bounded_and_loses_its_secrets() {
        let key = format!("sk-ant-api03-{}", "A1b2C3d4".repeat(12));
        let long = format!("{key} {}", "y".repeat(2_000));
        for ack in [
            Ack::refused("folder", &long),
            Ack::unsupported(&long),
            Ack::failed(&long),
            Ack::failed_with("file", &long),
            Ack::expired(&long),
        ] {
            let j = ack.json("m1");
            let detail = j["detail"].as_str().unwrap();
            assert!(detail.chars().count() <= 500, "{}", ack.outcome());
            assert!(!detail.contains(&key), "{}", ack.outcome());
            assert_eq!(
                (j["id"].as_str(), j["outcome"].as_str()),
                (Some("m1"), Some(ack.outcome()))
            );
            assert!(j["at"].as_str().is_some_and(|t| t.ends_with('Z')));
        }
        let j = Ack::Progress {
            seq: 3,
            reply: "x".repeat(30_000),
        }
        .json("m2");
        assert_eq!(j["seq"], 3);
        assert_eq!(j["reply"].as_str().unwrap().chars().count(), 20_000);
    }

    #[test]
    fn an_ack_carries_only_its_outcomes_members() {
        let s = sessionpipe_verifier::parse_session("codex:s-1").unwrap();
        let j = Ack::Delivered {
            mode: Some("resume"),
            reply: Some("Done.".into()),
            session: Some(s),
        }
        .json("m1");
        let keys: Vec<&str> = j.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            ["id", "outcome", "at", "mode", "reply", "session"],
            "{j}"
        );
        assert_eq!(j["session"], "codex:s-1");
        let keys =
            |a: Ack| -> Vec<String> { a.json("m").as_object().unwrap().keys().cloned().collect() };
        assert_eq!(keys(Ack::Taken), ["id", "outcome", "at"]);
        assert_eq!(keys(Ack::delivered("api")), ["id", "outcome", "at", "mode"]);
        assert_eq!(keys(Ack::failed("x")), ["id", "outcome", "at", "detail"]);
        assert_eq!(
            keys(Ack::refused("mode", "x")),
            ["id", "outcome", "at", "code", "detail"]
        );
    }
}
