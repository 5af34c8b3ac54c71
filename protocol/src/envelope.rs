//! The envelope (PROTOCOL-NOTES §1) and the session block (§2).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub const PROTOCOL_VERSION: u32 = 1;

/// One event on the wire: exactly these members, in this order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    pub protocol: u32,
    pub id: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub time: String,
    pub tier: u8,
    pub harness: HarnessRef,
    pub session: SessionBlock,
    pub privacy: Privacy,
    pub data: Map<String, Value>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HarnessRef {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
}

/// What the sender knows of a session. Receivers merge these with COALESCE, so an
/// absent field never blanks a known one; `merge` does the same on this side.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionBlock {
    pub id: String,
    pub seq: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repo: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title_source: Option<TitleSource>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attended: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delegated_by: Option<String>,
}

/// Where a title came from; a better source is never replaced by a worse one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TitleSource {
    FirstAsk,
    Harness,
    Custom,
}

impl SessionBlock {
    /// Folds `newer` into `self`: a non-empty newer value wins, except that the
    /// folder the session started in stays, and a title only moves to an equal or
    /// better source.
    pub fn merge(&mut self, newer: &SessionBlock) {
        fn take(slot: &mut Option<String>, v: &Option<String>) {
            if let Some(v) = v.as_ref().filter(|v| !v.is_empty()) {
                *slot = Some(v.clone());
            }
        }
        if self.cwd.as_deref().is_none_or(str::is_empty) {
            take(&mut self.cwd, &newer.cwd);
        }
        take(&mut self.machine, &newer.machine);
        take(&mut self.repo, &newer.repo);
        take(&mut self.branch, &newer.branch);
        take(&mut self.model, &newer.model);
        take(&mut self.url, &newer.url);
        take(&mut self.account_id, &newer.account_id);
        take(&mut self.parent_id, &newer.parent_id);
        take(&mut self.delegated_by, &newer.delegated_by);
        if newer.attended.is_some() {
            self.attended = newer.attended;
        }
        if let (Some(title), Some(source)) = (newer.title.as_ref(), newer.title_source) {
            let better_or_equal = self.title_source.is_none_or(|old| source >= old);
            if !title.is_empty() && better_or_equal {
                self.title = Some(title.clone());
                self.title_source = Some(source);
            }
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Privacy {
    pub rulesets: Vec<String>,
    pub pii: bool,
}

/// A stored envelope for unit tests: a Claude Code event of session `s`, seq 1,
/// tier 3, with `data` (an object; anything else is empty data).
#[cfg(any(test, feature = "test-util"))]
pub fn test_envelope(kind: &str, data: Value) -> Envelope {
    Envelope {
        protocol: 1,
        id: "01J00000000000000000000000".into(),
        kind: kind.into(),
        time: "2026-01-01T00:00:00.000Z".into(),
        tier: 3,
        harness: HarnessRef {
            name: "claude-code".into(),
            ..Default::default()
        },
        session: SessionBlock {
            id: "s".into(),
            seq: 1,
            ..Default::default()
        },
        privacy: Privacy::default(),
        data: match data {
            Value::Object(m) => m,
            _ => Map::new(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_never_blanks_and_keeps_the_start_folder() {
        let mut a = SessionBlock {
            id: "s".into(),
            cwd: Some("~/a".into()),
            model: Some("m1".into()),
            ..Default::default()
        };
        let b = SessionBlock {
            cwd: Some("~/b".into()),
            model: Some(String::new()),
            branch: Some("main".into()),
            ..Default::default()
        };
        a.merge(&b);
        assert_eq!(a.cwd.as_deref(), Some("~/a"));
        assert_eq!(a.model.as_deref(), Some("m1"));
        assert_eq!(a.branch.as_deref(), Some("main"));
    }

    #[test]
    fn a_title_never_moves_to_a_worse_source() {
        let mut a = SessionBlock::default();
        let titled = |t: &str, s| SessionBlock {
            title: Some(t.into()),
            title_source: Some(s),
            ..Default::default()
        };
        a.merge(&titled("ask", TitleSource::FirstAsk));
        a.merge(&titled("named", TitleSource::Custom));
        a.merge(&titled("auto", TitleSource::Harness));
        assert_eq!(a.title.as_deref(), Some("named"));
        a.merge(&titled("renamed", TitleSource::Custom));
        assert_eq!(a.title.as_deref(), Some("renamed"));
    }

    #[test]
    fn envelope_members_keep_their_order() {
        let env = test_envelope("session.heartbeat", Value::Null);
        let json = serde_json::to_string(&env).unwrap();
        let keys: Vec<&str> = [
            "protocol", "id", "type", "time", "tier", "harness", "session", "privacy", "data",
        ]
        .to_vec();
        let mut last = 0;
        for k in keys {
            let at = json.find(&format!("\"{k}\":")).unwrap();
            assert!(at >= last, "{k} out of order in {json}");
            last = at;
        }
    }
}
