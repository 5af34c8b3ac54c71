//! sessionpipe's hooks file for Kiro, `~/.kiro/hooks/sessionpipe.json`, in
//! Kiro's v1 schema: `{"version": "v1", "hooks": [{"name", "trigger", "action":
//! {"type": "command", "command"}, "timeout", "enabled"}, …]}`. Kiro reads every
//! file of the folder, so ours is a file of its own; an omitted `matcher`
//! matches everything; timeouts are in seconds.
//!
//! The file is ours, but the person may add a hook to it: only the entries whose
//! command runs `sessionpipe-hook kiro …` are ours, and everything else is kept
//! byte for byte by `jsonedit`. A file that is not plain JSON is skipped.

use super::{FILE_SAVE, Kiro, TABLE};
use harness::install::hooks_json::{Found, command, is_ours, judge};
use harness::install::jsonedit::{Doc, Edits, Node};
use harness::install::{ConfigFormat, Ctx, EntryState, HookEvent, HooksLayout, Skip};
use harness::install::{HookInstall, Host, Target};
use serde_json::{Map, Value, json};
use std::borrow::Cow;
use std::path::Path;
use std::sync::LazyLock;

const ROOT: &[&str] = &["hooks"];
/// The schema version Kiro reads these entries in.
const VERSION: &str = "v1";

pub(super) struct KiroHooks {
    layout: LazyLock<HooksLayout>,
}

pub(super) static HOOKS: KiroHooks = KiroHooks {
    layout: LazyLock::new(|| HooksLayout {
        events: Cow::Owned(hook_events()),
        timeout_s: 5,
        timeout_unit_ms: false,
        handler_name: None,
    }),
};

impl KiroHooks {
    /// Our entry for one trigger, as it should be now.
    fn entry(&self, hook_bin: &Path, harness: &str, e: &HookEvent) -> Value {
        let mut m = Map::new();
        m.insert("name".into(), json!(format!("sessionpipe-{}", e.name)));
        m.insert("trigger".into(), json!(e.name));
        m.insert(
            "action".into(),
            json!({"type": "command", "command": command(hook_bin, harness, e.name)}),
        );
        m.insert("timeout".into(), json!(self.layout.timeout_for(e)));
        m.insert("enabled".into(), json!(true));
        Value::Object(m)
    }
}

fn doc_of(text: &str) -> Result<Doc<'_>, Skip> {
    let doc = Doc::parse_under(text, ROOT)?;
    if !doc.root.is_object() {
        return Err(Skip::Shape(
            "the file's top level is not a JSON object".into(),
        ));
    }
    if doc.root.get("hooks").is_some_and(|h| !h.is_array()) {
        return Err(Skip::Shape("\"hooks\" is not a list".into()));
    }
    Ok(doc)
}

/// (index, trigger, entry) of each of our entries.
fn our_places<'d>(doc: &'d Doc<'_>, harness: &str) -> Vec<(usize, String, &'d Node)> {
    let Some(hooks) = doc.root.get("hooks") else {
        return Vec::new();
    };
    let text = |n: &Node| serde_json::from_str::<String>(&doc.text[n.start..n.end]).ok();
    hooks
        .elements()
        .iter()
        .enumerate()
        .filter_map(|(i, e)| {
            let cmd = e.get("action")?.get("command").and_then(text)?;
            is_ours(&cmd, harness).then(|| {
                let trigger = e.get("trigger").and_then(text).unwrap_or_default();
                (i, trigger, e)
            })
        })
        .collect()
}

impl ConfigFormat for KiroHooks {
    fn judge(&self, text: &str, ctx: &Ctx<'_>) -> Result<EntryState, Skip> {
        let doc = doc_of(text)?;
        let found: Vec<Found> = our_places(&doc, ctx.harness)
            .into_iter()
            .map(|(_, event, node)| {
                let have: Value =
                    serde_json::from_str(&doc.text[node.start..node.end]).unwrap_or_default();
                let current = self
                    .layout
                    .events
                    .iter()
                    .find(|e| e.name == event)
                    .is_some_and(|e| have == self.entry(ctx.hook_bin, ctx.harness, e));
                Found { event, current }
            })
            .collect();
        Ok(judge(&found, &self.layout))
    }

    fn add(&self, text: &str, ctx: &Ctx<'_>) -> Result<String, Skip> {
        let fresh_file = text.trim().is_empty();
        let mut text = if fresh_file {
            let doc = Doc::parse("{}")?;
            let mut edits = Edits::default();
            edits.add_member(&doc, &doc.root, "version", &json!(VERSION));
            edits.apply("{}")
        } else {
            text.to_string()
        };
        let entries: Vec<Value> = self
            .layout
            .events
            .iter()
            .map(|e| self.entry(ctx.hook_bin, ctx.harness, e))
            .collect();
        let doc = doc_of(&text)?;
        if doc.root.get("hooks").is_none() {
            let mut edits = Edits::default();
            edits.add_member(&doc, &doc.root, "hooks", &Value::Array(entries));
            text = edits.apply(&text);
        } else {
            // One addition per pass: two into one list would splice at one place.
            for entry in &entries {
                let doc = doc_of(&text)?;
                let list = doc.root.get("hooks").expect("checked above");
                let mut edits = Edits::default();
                edits.push_element(&doc, list, entry);
                text = edits.apply(&text);
            }
        }
        Ok(if fresh_file {
            format!("{text}\n")
        } else {
            text
        })
    }

    /// Our entries out, one per pass; a `hooks` list our removal empties goes
    /// too, unless the file had one before our first write.
    fn remove(&self, text: &str, original: Option<&str>, ctx: &Ctx<'_>) -> Result<String, Skip> {
        let had_hooks = original
            .and_then(|o| serde_json::from_str::<Value>(o.trim_start_matches('\u{feff}')).ok())
            .is_some_and(|o| o.get("hooks").is_some());
        let mut text = text.to_string();
        loop {
            let doc = doc_of(&text)?;
            let places = our_places(&doc, ctx.harness);
            let Some((i, _, _)) = places.first() else {
                return Ok(text);
            };
            let list = doc.root.get("hooks").expect("our entries are in hooks");
            let mut edits = Edits::default();
            if list.elements().len() > 1 || had_hooks {
                edits.remove_element(list, *i);
            } else {
                let at = doc
                    .root
                    .members()
                    .iter()
                    .position(|m| m.key == "hooks")
                    .expect("hooks member");
                edits.remove_member(&doc.root, at);
            }
            text = edits.apply(&text);
        }
    }

    /// Kiro reads this file in the v1 schema; another `version` is not read so.
    fn inactive(&self, text: &str) -> Option<String> {
        let v: Value = serde_json::from_str(text.trim_start_matches('\u{feff}')).ok()?;
        match v.get("version") {
            Some(Value::String(s)) if s == VERSION => None,
            None => Some(format!(
                "the file names no \"version\", and Kiro reads these hooks in schema \"{VERSION}\""
            )),
            Some(other) => Some(format!(
                "the file says \"version\": {other}, and Kiro reads these hooks in schema \"{VERSION}\""
            )),
        }
    }
}

/// The events our entries are written for: the table's, and `PostFileSave`.
fn hook_events() -> Vec<HookEvent> {
    TABLE
        .rows
        .iter()
        .map(|r| r.hook)
        .chain(std::iter::once(HookEvent::plain(FILE_SAVE)))
        .collect()
}

impl HookInstall for Kiro {
    /// `~/.kiro/hooks/sessionpipe.json`, a file of our own among the person's
    /// hooks files. Found when `~/.kiro` exists or `kiro-cli` or `kiro` is on
    /// `PATH`.
    fn looked_for(&self, host: &Host) -> Vec<String> {
        vec![
            host.show(&host.home.join(".kiro")),
            "`kiro-cli` or `kiro` on PATH".into(),
        ]
    }

    fn targets(&self, host: &Host) -> Vec<Target> {
        let dir = host.home.join(".kiro");
        if !dir.is_dir() && !host.on_path("kiro-cli") && !host.on_path("kiro") {
            return Vec::new();
        }
        vec![Target {
            path: dir.join("hooks/sessionpipe.json"),
            format: &HOOKS,
            owned: true,
        }]
    }

    fn note(&self) -> Option<&'static str> {
        Some(
            "Kiro sends no hook when a session ends: a Kiro session goes quiet after its last turn, and receivers read that silence as done",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::NAME;
    use super::*;

    fn ctx() -> Ctx<'static> {
        Ctx {
            harness: NAME,
            hook_bin: Path::new("/opt/sp/bin/sessionpipe-hook"),
        }
    }

    #[test]
    fn a_file_of_our_own_in_the_v1_schema() {
        let fresh = HOOKS.add("", &ctx()).unwrap();
        let v: Value = serde_json::from_str(&fresh).unwrap();
        assert_eq!(v["version"], "v1");
        let hooks = v["hooks"].as_array().unwrap();
        let triggers: Vec<&str> = hooks
            .iter()
            .map(|h| h["trigger"].as_str().unwrap())
            .collect();
        assert_eq!(
            triggers,
            [
                "SessionStart",
                "UserPromptSubmit",
                "PreToolUse",
                "PostToolUse",
                "Stop",
                "PostFileSave"
            ]
        );
        assert_eq!(
            hooks[4],
            json!({"name": "sessionpipe-Stop", "trigger": "Stop",
                   "action": {"type": "command", "command": "\"/opt/sp/bin/sessionpipe-hook\" kiro Stop"},
                   "timeout": 5, "enabled": true})
        );
        assert!(
            hooks.iter().all(|h| h.get("matcher").is_none()),
            "every tool, every file"
        );
        assert_eq!(HOOKS.judge(&fresh, &ctx()), Ok(EntryState::Current));
        assert_eq!(HOOKS.inactive(&fresh), None);
        let left = HOOKS.remove(&fresh, None, &ctx()).unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&left).unwrap(),
            json!({"version": "v1"})
        );
    }

    #[test]
    fn the_persons_own_entry_in_our_file_is_kept() {
        let theirs = "{\n\t\"version\": \"v1\",\n\t\"hooks\": [\n\t\t{\"name\": \"lint\", \"trigger\": \"PostFileSave\", \"matcher\": \"\\\\.ts$\", \"action\": {\"type\": \"command\", \"command\": \"npm run lint\"}}\n\t]\n}\n";
        assert_eq!(HOOKS.judge(theirs, &ctx()), Ok(EntryState::Missing));
        let added = HOOKS.add(theirs, &ctx()).unwrap();
        assert!(added.contains("\t\t{\"name\": \"lint\""));
        assert_eq!(HOOKS.judge(&added, &ctx()), Ok(EntryState::Current));
        assert_eq!(HOOKS.remove(&added, Some(theirs), &ctx()).unwrap(), theirs);
        let old = Ctx {
            harness: NAME,
            hook_bin: Path::new("/old/sessionpipe-hook"),
        };
        let Ok(EntryState::Outdated(why)) = HOOKS.judge(&added, &old) else {
            panic!()
        };
        assert!(why.contains("0 of 6 events current"), "{why}");
        let off = added.replacen("\"enabled\": true", "\"enabled\": false", 1);
        assert!(matches!(
            HOOKS.judge(&off, &ctx()),
            Ok(EntryState::Outdated(_))
        ));
    }

    #[test]
    fn files_it_cannot_edit_are_refused() {
        for bad in [
            "{\n  // mine\n  \"hooks\": []\n}",
            "[]",
            "{\"hooks\": {}}",
            "{\"hooks\": [], \"hooks\": []}",
        ] {
            assert!(HOOKS.judge(bad, &ctx()).is_err(), "{bad}");
            assert!(HOOKS.add(bad, &ctx()).is_err(), "{bad}");
        }
        assert!(
            HOOKS
                .inactive("{\"version\": \"v2\", \"hooks\": []}")
                .is_some()
        );
    }
}
