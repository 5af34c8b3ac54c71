//! The `statusLine` entry of Claude Code's `settings.json`, for `install
//! --status-line` (ADAPTERS.md, Claude Code row, Limits): the only way Claude
//! Code hands over the account's limits.
//!
//! Owns one top-level member, `"statusLine": {"type": "command", "command":
//! "<hook> claude-code StatusLine", "refreshInterval": 60}`: finding it, judging
//! it, adding and removing it byte-preservingly (`jsonedit`), beside the hooks
//! the hooks format writes into the same file. A status line hides most of
//! Claude Code's footer hints, so it is opt-in; and it must never replace a
//! `statusLine` the person set (`occupied` says so, and the installer keeps it).
//! A file that names `statusLine` twice is skipped: the harness reads the last.

use super::limits;
use harness::install::hooks_json::{command, is_ours};
use harness::install::jsonedit::{Doc, Edits};
use harness::install::{ConfigFormat, Ctx, EntryState, Skip};
use serde_json::{Value, json};

/// What `install` is asked for by (`--status-line`) and reports call it.
pub const ENTRY: &str = "status-line";
/// The settings key.
const KEY: &str = "statusLine";
/// Seconds between runs Claude Code makes besides its own events, so a change
/// the hook held back within a minute goes out at the next minute, not the
/// next prompt.
const REFRESH_S: u64 = 60;

pub struct StatusLine {
    /// The harness whose status line it is (its hook entries are named by it).
    pub harness: &'static str,
}

/// The `statusLine` member in a file, as far as sessionpipe is concerned.
enum Found {
    Absent,
    /// Ours (its command runs the hook for this harness); `current` when it is
    /// exactly what we write now.
    Ours {
        index: usize,
        current: bool,
    },
    /// The person's own (or anything that is not ours): never replaced.
    Theirs,
}

fn ours(ctx: &Ctx<'_>) -> Value {
    json!({
        "type": "command",
        "command": command(ctx.hook_bin, ctx.harness, limits::EVENT),
        "refreshInterval": REFRESH_S,
    })
}

fn parse(text: &str) -> Result<Doc<'_>, Skip> {
    // A doubled `statusLine` (or a key doubled inside it) is refused: Claude
    // Code reads the last, and ours could be the other.
    let doc = Doc::parse_under(text, &[KEY])?;
    if !doc.root.is_object() {
        return Err(Skip::Shape(
            "the file's top level is not a JSON object".into(),
        ));
    }
    Ok(doc)
}

fn find(doc: &Doc<'_>, ctx: &Ctx<'_>) -> Found {
    let Some(index) = doc.root.members().iter().position(|m| m.key == KEY) else {
        return Found::Absent;
    };
    let node = &doc.root.members()[index].value;
    let value: Value = serde_json::from_str(&doc.text[node.start..node.end]).unwrap_or_default();
    match value.get("command").and_then(Value::as_str) {
        Some(c) if is_ours(c, ctx.harness) => Found::Ours {
            index,
            current: value == ours(ctx),
        },
        _ => Found::Theirs,
    }
}

impl ConfigFormat for StatusLine {
    fn judge(&self, text: &str, ctx: &Ctx<'_>) -> Result<EntryState, Skip> {
        Ok(match find(&parse(text)?, ctx) {
            Found::Ours { current: true, .. } => EntryState::Current,
            Found::Ours { current: false, .. } => {
                EntryState::Outdated("the statusLine is from another version or edited".into())
            }
            Found::Absent | Found::Theirs => EntryState::Missing,
        })
    }

    fn occupied(&self, text: &str) -> Option<String> {
        let doc = parse(text).ok()?;
        let node = doc.root.get(KEY)?;
        let value: Value = serde_json::from_str(&doc.text[node.start..node.end]).ok()?;
        let command = value.get("command").and_then(Value::as_str).unwrap_or("");
        (!is_ours(command, self.harness)).then(|| {
            "the statusLine there is the person's own, and is kept; sessionpipe's is not written"
                .into()
        })
    }

    fn add(&self, text: &str, ctx: &Ctx<'_>) -> Result<String, Skip> {
        let fresh_file = text.trim().is_empty();
        let base = if fresh_file { "{}" } else { text };
        let doc = parse(base)?;
        if !matches!(find(&doc, ctx), Found::Absent) {
            return Err(Skip::Shape("a statusLine is already set".into()));
        }
        let mut edits = Edits::default();
        edits.add_member(&doc, &doc.root, KEY, &ours(ctx));
        let out = edits.apply(base);
        Ok(if fresh_file { format!("{out}\n") } else { out })
    }

    fn remove(&self, text: &str, _original: Option<&str>, ctx: &Ctx<'_>) -> Result<String, Skip> {
        let doc = parse(text)?;
        let Found::Ours { index, .. } = find(&doc, ctx) else {
            return Ok(text.to_string());
        };
        let mut edits = Edits::default();
        edits.remove_member(&doc.root, index);
        Ok(edits.apply(text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static STATUS_LINE: StatusLine = StatusLine {
        harness: "claude-code",
    };
    use std::path::Path;

    fn ctx() -> Ctx<'static> {
        Ctx {
            harness: "claude-code",
            hook_bin: Path::new("/opt/sp/bin/sessionpipe-hook"),
        }
    }

    #[test]
    fn add_judge_remove_round_trips_in_the_files_style() {
        for original in [
            "{}",
            "{\"model\": \"opus\"}",
            "{\n\t\"model\": \"opus\"\n}\n",
            "{\r\n  \"model\": \"opus\",\r\n  \"hooks\": {}\r\n}\r\n",
        ] {
            assert_eq!(STATUS_LINE.judge(original, &ctx()), Ok(EntryState::Missing));
            assert_eq!(STATUS_LINE.occupied(original), None);
            let added = STATUS_LINE.add(original, &ctx()).unwrap();
            assert_eq!(STATUS_LINE.judge(&added, &ctx()), Ok(EntryState::Current));
            let v: Value = serde_json::from_str(&added).unwrap();
            assert_eq!(
                v[KEY],
                json!({"type": "command", "command": "\"/opt/sp/bin/sessionpipe-hook\" claude-code StatusLine", "refreshInterval": 60})
            );
            assert_eq!(
                STATUS_LINE.remove(&added, Some(original), &ctx()).unwrap(),
                original
            );
        }
        let fresh = STATUS_LINE.add("", &ctx()).unwrap();
        assert!(fresh.starts_with("{\n  \"statusLine\": {\n    \"type\": \"command\","));
        assert!(fresh.ends_with("}\n"));
    }

    #[test]
    fn the_persons_own_is_never_ours() {
        let theirs =
            "{\"statusLine\": {\"type\": \"command\", \"command\": \"~/.claude/line.sh\"}}";
        assert_eq!(STATUS_LINE.judge(theirs, &ctx()), Ok(EntryState::Missing));
        assert!(
            STATUS_LINE
                .occupied(theirs)
                .unwrap()
                .contains("person's own")
        );
        assert!(STATUS_LINE.add(theirs, &ctx()).is_err());
        assert_eq!(STATUS_LINE.remove(theirs, None, &ctx()).unwrap(), theirs);
        assert!(STATUS_LINE.occupied("{\"statusLine\": null}").is_some());
    }

    #[test]
    fn an_older_or_edited_entry_of_ours_is_outdated() {
        let old = "{\"statusLine\": {\"type\": \"command\", \"command\": \"/old/sessionpipe-hook claude-code StatusLine\", \"refreshInterval\": 60}}";
        assert!(matches!(
            STATUS_LINE.judge(old, &ctx()),
            Ok(EntryState::Outdated(_))
        ));
        assert_eq!(STATUS_LINE.occupied(old), None);
        assert_eq!(STATUS_LINE.remove(old, None, &ctx()).unwrap(), "{}");
    }

    #[test]
    fn files_that_are_not_an_object_are_refused() {
        for odd in ["[1]", "{\"a\": 1,}", "// x\n{}"] {
            assert!(STATUS_LINE.judge(odd, &ctx()).is_err(), "{odd}");
            assert!(STATUS_LINE.add(odd, &ctx()).is_err(), "{odd}");
            assert!(STATUS_LINE.remove(odd, None, &ctx()).is_err(), "{odd}");
            assert_eq!(STATUS_LINE.occupied(odd), None);
        }
    }
}
