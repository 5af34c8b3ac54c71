//! What Grok Build keeps beside each session's update stream and in its home:
//! `summary.json` (title, model, folder, branch, times) and `version.json`.
//!
//! Owns reading those two files, for the live session's facts and for backfill
//! alike; it never writes them. Their keys are the ones ADAPTERS.md's Grok Build
//! row names (no Grok Build runs where this was written, so the test data is
//! made from that row): `generated_title` (Grok's title, which a `/rename`
//! replaces, so it is the harness's), `current_model_id`, `info.cwd`,
//! `head_branch`, `created_at`, `last_active_at`; `version.json`'s `version`.

use protocol::{SessionBlock, TitleSource};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// One session's `summary.json`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    pub block: SessionBlock,
    pub created_ms: Option<i64>,
    pub last_active_ms: Option<i64>,
}

/// Reads `summary.json`; `home` is written `~` in the folder. `None` when the
/// file is missing or not a JSON object.
pub fn read(path: &Path, home: Option<&Path>) -> Option<Summary> {
    let v: Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    let text = |p: &str| {
        v.pointer(p)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let title = text("/generated_title");
    let block = SessionBlock {
        title_source: title.as_ref().map(|_| TitleSource::Harness),
        title,
        model: text("/current_model_id"),
        cwd: text("/info/cwd").map(|c| spool::paths::tilde(&c, home)),
        branch: text("/head_branch"),
        ..Default::default()
    };
    v.is_object().then(|| Summary {
        block,
        created_ms: v.get("created_at").and_then(epoch_ms),
        last_active_ms: v.get("last_active_at").and_then(epoch_ms),
    })
}

/// An instant as Grok writes one: unix seconds (its update stream's unit),
/// whole or not, or an RFC 3339 string.
pub fn epoch_ms(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_f64().map(|s| (s * 1000.0).round() as i64),
        Value::String(s) => protocol::time::parse_rfc3339_ms(s),
        _ => None,
    }
}

/// Grok's home, from a session's transcript:
/// `<home>/sessions/<url-encoded cwd>/<session id>/updates.jsonl`.
pub fn home_of(transcript: &Path) -> Option<PathBuf> {
    let sessions = transcript.parent()?.parent()?.parent()?;
    (sessions.file_name()? == "sessions").then(|| sessions.parent().map(Path::to_path_buf))?
}

/// The version `<grok home>/version.json` names (`{"version": …}`).
pub fn version(grok_home: &Path) -> Option<String> {
    let v: Value =
        serde_json::from_slice(&std::fs::read(grok_home.join("version.json")).ok()?).ok()?;
    v.get("version")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_summary_gives_the_session_block_and_times() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("summary.json");
        std::fs::write(
            &path,
            json!({"generated_title": "Fix the parser", "current_model_id": "grok-code-fast-1",
                   "info": {"cwd": "/home/ann/src/app"}, "head_branch": "main",
                   "created_at": "2026-11-11T10:00:00Z", "last_active_at": 1_794_391_205.5})
            .to_string(),
        )
        .unwrap();
        let s = read(&path, Some(Path::new("/home/ann"))).unwrap();
        assert_eq!(
            (s.block.title.as_deref(), s.block.title_source),
            (Some("Fix the parser"), Some(TitleSource::Harness))
        );
        assert_eq!(s.block.model.as_deref(), Some("grok-code-fast-1"));
        assert_eq!(s.block.cwd.as_deref(), Some("~/src/app"));
        assert_eq!(s.block.branch.as_deref(), Some("main"));
        assert_eq!(s.created_ms, Some(1_794_391_200_000));
        assert_eq!(s.last_active_ms, Some(1_794_391_205_500));
        std::fs::write(&path, r#"{"generated_title": "  "}"#).unwrap();
        let bare = read(&path, None).unwrap();
        assert_eq!((bare.block.title, bare.block.title_source), (None, None));
        std::fs::write(&path, "[]").unwrap();
        assert!(read(&path, None).is_none());
    }

    #[test]
    fn grok_home_and_its_version() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join(".grok");
        let t = home.join("sessions/%2Fw/019a72c4/updates.jsonl");
        assert_eq!(home_of(&t), Some(home.clone()));
        assert_eq!(home_of(Path::new("/x/updates.jsonl")), None);
        assert_eq!(home_of(&dir.path().join("a/b/c/updates.jsonl")), None);
        std::fs::create_dir_all(&home).unwrap();
        assert_eq!(version(&home), None);
        std::fs::write(home.join("version.json"), r#"{"version": "1.0.77"}"#).unwrap();
        assert_eq!(version(&home).as_deref(), Some("1.0.77"));
    }
}
