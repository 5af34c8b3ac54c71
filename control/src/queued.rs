//! A verified message as it waits on this machine (`Queued`): its session,
//! the command as the verifier read it (the verifier's own `Body`, read once
//! at its edge), the device's note and when it expires; and the form it is
//! kept in while it waits (`control_messages.command`), so a restart offers
//! it again.
//!
//! The kept form is the one earlier versions wrote, member for member: a
//! message queued before an upgrade reads as it was kept. A kept form that
//! does not read says why, and the message is answered with that (`run`
//! acks it `failed`), never dropped in silence.

use super::hub::MessageRef;
use harness::headless::Level;
use serde::{Deserialize, Serialize};
use sessionpipe_verifier::{Body, Decision, FileRef, SessionRef};

/// What a verified message needs to be offered again after a restart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Queued {
    pub session: SessionRef,
    /// What it asks, as verified (a local ask's, as `sessionpipe ask` made it).
    pub body: Body,
    /// The device's note (a deny's reason).
    pub note: Option<String>,
    /// `expires_at` of the receiver's envelope (epoch ms).
    pub expires_ms: i64,
}

impl Queued {
    /// The protocol's name of its kind (`prompt`, `start`, …).
    pub fn kind(&self) -> &'static str {
        self.body.kind()
    }

    /// The words of a prompt or a start.
    pub fn text(&self) -> Option<&str> {
        match &self.body {
            Body::Prompt { text } | Body::Start { text, .. } => Some(text),
            _ => None,
        }
    }

    /// The highest level a run for it may take, as the message has it: a
    /// start's own; `safe` for one asked at this machine (`sessionpipe ask`:
    /// an agent asked it); otherwise none (the machine's mode decides).
    pub fn level(&self, from: &MessageRef) -> Option<Level> {
        match &self.body {
            Body::Start { level, .. } => *level,
            _ if from.is_local() => Some(Level::Safe),
            _ => None,
        }
    }

    /// The kept form (JSON), as `control_messages.command` holds it.
    pub fn to_kept(&self) -> String {
        serde_json::to_string(&Kept::from(self)).expect("a kept command serialises")
    }

    /// Reads a kept form back; why not, when it does not read.
    pub fn from_kept(text: &str) -> Result<Queued, String> {
        let kept: Kept = serde_json::from_str(text).map_err(|e| e.to_string())?;
        kept.try_into()
    }
}

/// The kept form, member for member what earlier versions wrote.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Kept {
    session: String,
    kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    attention: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    allow: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    note: Option<String>,
    expires_ms: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cwd: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    files: Vec<KeptFile>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    level: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    model: Option<String>,
}

/// A start's file as kept: `{name, type, size, sha256}`.
#[derive(Debug, Serialize, Deserialize)]
struct KeptFile {
    name: String,
    #[serde(rename = "type")]
    media_type: String,
    size: u64,
    sha256: String,
}

impl From<&Queued> for Kept {
    fn from(q: &Queued) -> Kept {
        let mut kept = Kept {
            session: q.session.to_string(),
            kind: q.kind().to_string(),
            note: q.note.clone(),
            expires_ms: q.expires_ms,
            ..Kept::default()
        };
        match &q.body {
            Body::Prompt { text } => kept.text = Some(text.clone()),
            Body::Start {
                text,
                cwd,
                files,
                level,
                model,
            } => {
                kept.text = Some(text.clone());
                kept.cwd = Some(cwd.clone());
                kept.files = files
                    .iter()
                    .map(|f| KeptFile {
                        name: f.name.clone(),
                        media_type: f.media_type.clone(),
                        size: f.size,
                        sha256: f.sha256.clone(),
                    })
                    .collect();
                kept.level = level.map(|l| l.as_str().to_string());
                kept.model = model.clone();
            }
            Body::PermissionAnswer {
                for_attention,
                decision,
            } => {
                kept.attention = Some(for_attention.clone());
                kept.allow = Some(matches!(decision, Decision::Allow));
            }
            Body::Cancel | Body::KeyAdd { .. } => {}
        }
        kept
    }
}

impl TryFrom<Kept> for Queued {
    type Error = String;

    fn try_from(k: Kept) -> Result<Queued, String> {
        let session = sessionpipe_verifier::parse_session(&k.session)
            .ok_or_else(|| format!("{:?} is not a session", k.session))?;
        let missing = |what: &str| format!("a kept {} has no {what}", k.kind);
        let body = match k.kind.as_str() {
            "prompt" => Body::Prompt {
                text: k.text.clone().ok_or_else(|| missing("text"))?,
            },
            "start" => Body::Start {
                text: k.text.clone().ok_or_else(|| missing("text"))?,
                cwd: k.cwd.clone().ok_or_else(|| missing("folder"))?,
                files: k
                    .files
                    .into_iter()
                    .map(|f| FileRef {
                        name: f.name,
                        media_type: f.media_type,
                        size: f.size,
                        sha256: f.sha256,
                    })
                    .collect(),
                level: match k.level.as_deref() {
                    None => None,
                    Some(l) => {
                        Some(Level::parse(l).ok_or_else(|| format!("{l:?} is not a level"))?)
                    }
                },
                model: k.model.clone(),
            },
            "permission.answer" => Body::PermissionAnswer {
                for_attention: k.attention.clone().ok_or_else(|| missing("attention"))?,
                decision: match k.allow.ok_or_else(|| missing("decision"))? {
                    true => Decision::Allow,
                    false => Decision::Deny,
                },
            },
            "cancel" => Body::Cancel,
            other => return Err(format!("{other:?} is not a kind a message waits as")),
        };
        Ok(Queued {
            session,
            body,
            note: k.note,
            expires_ms: k.expires_ms,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session() -> SessionRef {
        sessionpipe_verifier::parse_session("claude-code:s-1").unwrap()
    }

    /// Every kind goes to its kept form and back unchanged, and the kept form
    /// is what earlier versions wrote and read.
    #[test]
    fn every_kind_is_kept_as_earlier_versions_kept_it() {
        let file = FileRef {
            name: "a.txt".into(),
            media_type: "text/plain".into(),
            size: 3,
            sha256: "x".repeat(43),
        };
        let kinds = [
            Body::Prompt { text: "Hi".into() },
            Body::Start {
                text: "Go".into(),
                cwd: "/w".into(),
                files: vec![file],
                level: Some(Level::Edits),
                model: Some("m-1".into()),
            },
            Body::PermissionAnswer {
                for_attention: "perm-1".into(),
                decision: Decision::Deny,
            },
            Body::Cancel,
        ];
        for body in kinds {
            let q = Queued {
                session: session(),
                body,
                note: Some("why".into()),
                expires_ms: 42,
            };
            assert_eq!(Queued::from_kept(&q.to_kept()), Ok(q.clone()));
        }
        // As an earlier version kept a start and an answer.
        let start = r#"{"session":"claude-code:s-1","kind":"start","text":"Go","expires_ms":42,"cwd":"/w","files":[{"name":"a.txt","type":"text/plain","size":3,"sha256":"h"}],"level":"safe"}"#;
        let q = Queued::from_kept(start).unwrap();
        assert_eq!(q.to_kept(), start, "written back byte for byte");
        let answer = r#"{"session":"claude-code:s-1","kind":"permission.answer","attention":"perm-1","allow":true,"expires_ms":1}"#;
        let q = Queued::from_kept(answer).unwrap();
        assert!(matches!(
            q.body,
            Body::PermissionAnswer {
                decision: Decision::Allow,
                ..
            }
        ));
    }

    #[test]
    fn a_kept_form_that_does_not_read_says_why() {
        for (kept, why) in [
            (
                r#"{"session":"claude-code:s-1","kind":"prompt","expires_ms":1}"#,
                "a kept prompt has no text",
            ),
            (
                r#"{"session":"claude-code:s-1","kind":"key.add","expires_ms":1}"#,
                "\"key.add\" is not a kind a message waits as",
            ),
            (
                r#"{"session":"nothing","kind":"cancel","expires_ms":1}"#,
                "\"nothing\" is not a session",
            ),
            (
                r#"{"session":"codex:s","kind":"start","text":"t","cwd":"/w","level":"root","expires_ms":1}"#,
                "\"root\" is not a level",
            ),
        ] {
            assert_eq!(Queued::from_kept(kept), Err(why.to_string()), "{kept}");
        }
        assert!(Queued::from_kept("{not json").is_err());
    }
}
