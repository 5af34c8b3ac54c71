//! Droid's hooks file, `~/.factory/hooks.json`: Claude Code's matcher groups
//! with the event names **at the top level**, `{"<Event>": [{"matcher": …,
//! "hooks": [{"type": "command", "command": …, "timeout": …}]}], …}`. Droid
//! ignores a `{"hooks": {...}}` wrapper in silence, so our entries never go in
//! one; a wrapper the person wrote is left where it is.
//!
//! Owns only our handlers (a command that runs `sessionpipe-hook droid …`, any
//! install path): the person's groups, handlers and other keys are kept byte for
//! byte by `jsonedit`. An event list (or the whole file) our removal empties goes
//! too, unless it was there before our first write. Must not touch any other
//! file of Droid's.

use super::{Droid, SUBAGENT_STOP, TABLE, factory_dir};
use harness::install::hooks_json::{Found, command, group, is_ours, judge};
use harness::install::jsonedit::{Doc, Edits, Node};
use harness::install::{
    ConfigFormat, Ctx, EntryState, HookEvent, HookInstall, HooksLayout, Host, Skip, Target,
};
use serde_json::Value;
use std::borrow::Cow;
use std::path::Path;
use std::sync::LazyLock;

pub(super) struct DroidHooks {
    layout: HooksLayout,
    /// Our events' names: the keys duplicates are refused under.
    names: Vec<&'static str>,
}

pub(super) static HOOKS: LazyLock<DroidHooks> = LazyLock::new(|| DroidHooks {
    layout: HooksLayout {
        events: Cow::Owned(hook_events()),
        timeout_s: TABLE.timeout_s,
        timeout_unit_ms: false,
        handler_name: None,
    },
    names: hook_events().iter().map(|e| e.name).collect(),
});

impl DroidHooks {
    fn group_for(&self, hook_bin: &Path, harness: &str, e: &HookEvent) -> Value {
        group(&self.layout, e, command(hook_bin, harness, e.name))
    }

    /// The file read for our entries: plain JSON, an object at the top, no key
    /// of ours written twice.
    fn doc_of<'t>(&self, text: &'t str) -> Result<Doc<'t>, Skip> {
        let doc = Doc::parse_under(text, &self.names)?;
        if !doc.root.is_object() {
            return Err(Skip::Shape(
                "the file's top level is not a JSON object".into(),
            ));
        }
        Ok(doc)
    }
}

/// (event member, group, handler) indexes, the event, the group and the
/// handler of each of ours.
type Place<'d> = ((usize, usize, usize), String, &'d Node, &'d Node);

fn our_places<'d>(doc: &'d Doc<'_>, harness: &str) -> Vec<Place<'d>> {
    let mut out = Vec::new();
    for (ei, member) in doc.root.members().iter().enumerate() {
        if !member.value.is_array() {
            continue;
        }
        for (gi, g) in member.value.elements().iter().enumerate() {
            let Some(handlers) = g.get("hooks").filter(|h| h.is_array()) else {
                continue;
            };
            for (hi, handler) in handlers.elements().iter().enumerate() {
                let cmd = handler
                    .get("command")
                    .and_then(|c| serde_json::from_str::<String>(&doc.text[c.start..c.end]).ok());
                if cmd.is_some_and(|c| is_ours(&c, harness)) {
                    out.push(((ei, gi, hi), member.key.clone(), g, handler));
                }
            }
        }
    }
    out
}

fn value_of(doc: &Doc<'_>, node: &Node) -> Value {
    serde_json::from_str(&doc.text[node.start..node.end]).unwrap_or_default()
}

impl ConfigFormat for DroidHooks {
    fn judge(&self, text: &str, ctx: &Ctx<'_>) -> Result<EntryState, Skip> {
        let doc = self.doc_of(text)?;
        let found: Vec<Found> = our_places(&doc, ctx.harness)
            .into_iter()
            .map(|(_, event, g, handler)| {
                let current = self
                    .layout
                    .events
                    .iter()
                    .find(|e| e.name == event)
                    .is_some_and(|e| {
                        let want = self.group_for(ctx.hook_bin, ctx.harness, e);
                        let matcher = g.get("matcher").map(|m| value_of(&doc, m));
                        want["hooks"][0] == value_of(&doc, handler)
                            && want.get("matcher").cloned() == matcher
                    });
                Found { event, current }
            })
            .collect();
        Ok(judge(&found, &self.layout))
    }

    fn add(&self, text: &str, ctx: &Ctx<'_>) -> Result<String, Skip> {
        let fresh_file = text.trim().is_empty();
        let mut text = if fresh_file {
            "{}".to_string()
        } else {
            text.to_string()
        };
        // One addition per pass: two into one object would splice at one place.
        for e in self.layout.events.iter() {
            let doc = self.doc_of(&text)?;
            let g = self.group_for(ctx.hook_bin, ctx.harness, e);
            let mut edits = Edits::default();
            match doc.root.get(e.name) {
                None => edits.add_member(&doc, &doc.root, e.name, &Value::Array(vec![g])),
                Some(list) if list.is_array() => edits.push_element(&doc, list, &g),
                Some(_) => return Err(Skip::Shape(format!("\"{}\" is not a list", e.name))),
            }
            text = edits.apply(&text);
        }
        Ok(if fresh_file {
            format!("{text}\n")
        } else {
            text
        })
    }

    fn remove(&self, text: &str, original: Option<&str>, ctx: &Ctx<'_>) -> Result<String, Skip> {
        let orig: Option<Value> =
            original.and_then(|o| serde_json::from_str(o.trim_start_matches('\u{feff}')).ok());
        let had = |event: &str| orig.as_ref().is_some_and(|o| o.get(event).is_some());
        let mut text = text.to_string();
        loop {
            let doc = self.doc_of(&text)?;
            let places = our_places(&doc, ctx.harness);
            let Some(&((ei, gi, hi), ref event, g, _)) = places.first() else {
                return Ok(text);
            };
            let list = &doc.root.members()[ei].value;
            let handlers = g.get("hooks").expect("our handler is in a group's hooks");
            let mut edits = Edits::default();
            if handlers.elements().len() > 1 {
                edits.remove_element(handlers, hi);
            } else if list.elements().len() > 1 || had(event) {
                edits.remove_element(list, gi);
            } else {
                edits.remove_member(&doc.root, ei);
            }
            text = edits.apply(&text);
        }
    }

    /// Our entries are current at the top level whatever else the file holds;
    /// only a file that is not an object is refused (in `judge`).
    fn inactive(&self, _text: &str) -> Option<String> {
        None
    }
}

impl HookInstall for Droid {
    /// `~/.factory/hooks.json`, shared with the person's own hooks. Not found
    /// when `~/.factory` does not exist and `droid` is not on `PATH`.
    fn looked_for(&self, host: &Host) -> Vec<String> {
        vec![host.show(&factory_dir(host)), "`droid` on PATH".into()]
    }

    fn targets(&self, host: &Host) -> Vec<Target> {
        let dir = factory_dir(host);
        if !dir.is_dir() && !host.on_path("droid") {
            return Vec::new();
        }
        vec![Target::shared(dir.join("hooks.json"), &*HOOKS)]
    }
}

/// The events our entries are written for, in the table's order, and
/// `SubagentStop`.
fn hook_events() -> Vec<HookEvent> {
    let mut events: Vec<HookEvent> = TABLE.rows.iter().map(|r| r.hook).collect();
    events.push(SUBAGENT_STOP);
    events
}

#[cfg(test)]
mod tests {
    use super::super::NAME as HARNESS;
    use super::*;
    use serde_json::json;

    fn ctx() -> Ctx<'static> {
        Ctx {
            harness: HARNESS,
            hook_bin: Path::new("/opt/sp/bin/sessionpipe-hook"),
        }
    }

    const THEIRS: &str = "{\n    \"PreToolUse\": [\n        {\n            \"matcher\": \"Execute\",\n            \"hooks\": [{\"type\": \"command\", \"command\": \"~/bin/guard.sh\"}]\n        }\n    ],\n    \"hooks\": {\"Stop\": []}\n}\n";

    #[test]
    fn entries_go_at_the_top_level_beside_theirs_and_come_out_exactly() {
        assert_eq!(HOOKS.judge(THEIRS, &ctx()), Ok(EntryState::Missing));
        let added = HOOKS.add(THEIRS, &ctx()).unwrap();
        let v: Value = serde_json::from_str(&added).unwrap();
        let cmd = |e: &str| format!("\"/opt/sp/bin/sessionpipe-hook\" droid {e}");
        assert_eq!(
            v["PreToolUse"],
            json!([
                {"matcher": "Execute", "hooks": [{"type": "command", "command": "~/bin/guard.sh"}]},
                {"matcher": "*", "hooks": [{"type": "command", "command": cmd("PreToolUse"), "timeout": 5}]}
            ])
        );
        assert_eq!(
            v["Stop"],
            json!([{"hooks": [{"type": "command", "command": cmd("Stop"), "timeout": 10}]}])
        );
        assert_eq!(
            v["hooks"],
            json!({"Stop": []}),
            "the person's wrapper is theirs"
        );
        assert!(
            added.contains("\n    \"Stop\": [\n"),
            "their indentation: {added}"
        );
        assert_eq!(HOOKS.judge(&added, &ctx()), Ok(EntryState::Current));
        assert_eq!(HOOKS.remove(&added, Some(THEIRS), &ctx()).unwrap(), THEIRS);
    }

    #[test]
    fn a_new_file_holds_only_events_and_empties_out() {
        let fresh = HOOKS.add("", &ctx()).unwrap();
        let v: Value = serde_json::from_str(&fresh).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, HOOKS.names.as_slice());
        assert_eq!(keys.last(), Some(&"SubagentStop"), "the ninth event");
        assert_eq!(keys.len(), 9);
        assert!(v.get("hooks").is_none());
        assert_eq!(HOOKS.judge(&fresh, &ctx()), Ok(EntryState::Current));
        let old = Ctx {
            harness: HARNESS,
            hook_bin: Path::new("/old/sessionpipe-hook"),
        };
        assert!(matches!(
            HOOKS.judge(&fresh, &old),
            Ok(EntryState::Outdated(_))
        ));
        let edited = fresh.replacen("\"*\"", "\"Execute\"", 1);
        assert!(matches!(
            HOOKS.judge(&edited, &ctx()),
            Ok(EntryState::Outdated(_))
        ));
        assert_eq!(HOOKS.remove(&fresh, None, &ctx()).unwrap().trim(), "{}");
    }

    #[test]
    fn an_install_from_before_subagent_stop_is_outdated_and_upgraded() {
        let fresh = HOOKS.add(THEIRS, &ctx()).unwrap();
        let mut old: Value = serde_json::from_str(&fresh).unwrap();
        old.as_object_mut().unwrap().remove("SubagentStop");
        let old = serde_json::to_string_pretty(&old).unwrap();
        assert_eq!(
            HOOKS.judge(&old, &ctx()),
            Ok(EntryState::Outdated("8 of 9 events current".into()))
        );
        // What `install` does with an outdated file: ours out, ours in.
        let upgraded = HOOKS
            .add(&HOOKS.remove(&old, Some(THEIRS), &ctx()).unwrap(), &ctx())
            .unwrap();
        assert_eq!(HOOKS.judge(&upgraded, &ctx()), Ok(EntryState::Current));
        let v: Value = serde_json::from_str(&upgraded).unwrap();
        assert_eq!(
            v["SubagentStop"][0]["hooks"][0]["command"],
            "\"/opt/sp/bin/sessionpipe-hook\" droid SubagentStop"
        );
        // (Re-indented by this test's edit; their entries are all that is left.)
        let left = HOOKS.remove(&upgraded, Some(THEIRS), &ctx()).unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&left).unwrap(),
            serde_json::from_str::<Value>(THEIRS).unwrap()
        );
    }

    #[test]
    fn files_it_cannot_edit_are_refused() {
        for bad in [
            "{\n  // mine\n  \"Stop\": []\n}",
            "[]",
            "{\"Stop\": {}}",
            "{\"Stop\": [], \"Stop\": []}",
        ] {
            let judged = HOOKS.judge(bad, &ctx());
            let added = HOOKS.add(bad, &ctx());
            assert!(judged.is_err() || added.is_err(), "{bad}");
        }
    }
}
