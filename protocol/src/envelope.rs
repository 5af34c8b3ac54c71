//! The envelope (PROTOCOL-NOTES §1) and the session block (§2).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub const PROTOCOL_VERSION: u32 = 1;

/// One event on the wire: exactly these members, in this order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
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
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
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
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
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

/// The schema's bound on each string of a session block, in characters.
pub const BLOCK_BOUNDS: &[(&str, usize)] = &[
    ("machine", 80),
    ("cwd", 1024),
    ("repo", 512),
    ("branch", 256),
    ("model", 128),
    ("title", 200),
    ("url", 1024),
    ("account_id", 128),
];

impl SessionBlock {
    fn bounded(&mut self) -> [(&'static str, usize, &mut Option<String>); 8] {
        let b = |name: &str| {
            BLOCK_BOUNDS
                .iter()
                .find(|(n, _)| *n == name)
                .map_or(0, |(_, max)| *max)
        };
        [
            ("machine", b("machine"), &mut self.machine),
            ("cwd", b("cwd"), &mut self.cwd),
            ("repo", b("repo"), &mut self.repo),
            ("branch", b("branch"), &mut self.branch),
            ("model", b("model"), &mut self.model),
            ("title", b("title"), &mut self.title),
            ("url", b("url"), &mut self.url),
            ("account_id", b("account_id"), &mut self.account_id),
        ]
    }

    /// What in the block the schema refuses, if anything.
    pub fn problem(&self) -> Option<String> {
        let mut copy = self.clone();
        for (name, max, v) in copy.bounded() {
            if let Some(n) = v.as_deref().map(|s| s.chars().count()).filter(|n| *n > max) {
                return Some(format!("session.{name} is {n} characters, above {max}"));
            }
        }
        if let Some(p) = self
            .parent_id
            .as_deref()
            .filter(|p| !crate::valid_session_id(p))
        {
            return Some(format!("session.parent_id {p:?} is not a session id"));
        }
        if let Some(u) = self.url.as_deref().filter(|u| !looks_like_uri(u)) {
            return Some(format!("session.url {u:?} is not a URI"));
        }
        None
    }

    /// Makes the block one the schema takes: each string cut to its bound (a
    /// harness's folder or title may be longer), a `parent_id` that is not a
    /// session id and a `url` that is not a URI dropped. The sender's last
    /// step before an envelope is stored.
    pub fn fit(&mut self) {
        for (_, max, v) in self.bounded() {
            if let Some(s) = v.as_mut()
                && s.chars().count() > max
            {
                *s = s.chars().take(max).collect();
            }
        }
        if self
            .parent_id
            .as_deref()
            .is_some_and(|p| !crate::valid_session_id(p))
        {
            self.parent_id = None;
        }
        if self.url.as_deref().is_some_and(|u| !looks_like_uri(u)) {
            self.url = None;
        }
    }
}

/// A scheme, a colon, and no space or control character (RFC 3986's shape, as
/// far as a receiver's `format: uri` check goes).
fn looks_like_uri(s: &str) -> bool {
    let Some((scheme, _)) = s.split_once(':') else {
        return false;
    };
    let mut c = scheme.chars();
    c.next().is_some_and(|f| f.is_ascii_alphabetic())
        && c.all(|ch| ch.is_ascii_alphanumeric() || "+.-".contains(ch))
        && !s.chars().any(|ch| ch.is_whitespace() || ch.is_control())
}

/// Where a title came from; a better source is never replaced by a worse one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
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
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
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

    /// The bounds are the schema's (`../shared/spec/schemas/event.json`,
    /// skipped with one line when the shared folder is absent).
    #[test]
    fn the_block_bounds_are_the_schemas() {
        let schema = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../shared/spec/schemas/event.json");
        let Ok(text) = std::fs::read(&schema) else {
            println!("skipped: no schema at {}", schema.display());
            return;
        };
        let doc: Value = serde_json::from_slice(&text).unwrap();
        let props = &doc["properties"]["session"]["properties"];
        let mut theirs: Vec<(String, u64)> = props
            .as_object()
            .unwrap()
            .iter()
            .filter(|(k, v)| v["type"] == "string" && v["maxLength"].is_u64() && *k != "id")
            .map(|(k, v)| (k.clone(), v["maxLength"].as_u64().unwrap()))
            .collect();
        let mut ours: Vec<(String, u64)> = BLOCK_BOUNDS
            .iter()
            .map(|(k, n)| (k.to_string(), *n as u64))
            .collect();
        theirs.sort();
        ours.sort();
        assert_eq!(ours, theirs);
    }

    #[test]
    fn a_block_is_fitted_to_the_schema() {
        let mut b = SessionBlock {
            id: "s".into(),
            cwd: Some("é".repeat(2000)),
            title: Some("t".repeat(201)),
            parent_id: Some("not an id".into()),
            url: Some("no scheme here".into()),
            model: Some("m".into()),
            ..Default::default()
        };
        assert!(b.problem().unwrap().contains("session.cwd"));
        b.fit();
        assert_eq!(b.problem(), None);
        assert_eq!(b.cwd.as_ref().unwrap().chars().count(), 1024);
        assert_eq!(b.title.as_ref().unwrap().len(), 200);
        assert_eq!(
            (b.parent_id, b.url, b.model.as_deref()),
            (None, None, Some("m"))
        );
        let mut ok = SessionBlock {
            url: Some("https://claude.ai/code/s".into()),
            parent_id: Some("p-1".into()),
            ..Default::default()
        };
        let before = ok.clone();
        ok.fit();
        assert_eq!(ok, before);
    }

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
