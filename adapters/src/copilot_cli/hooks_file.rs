//! Copilot CLI's hooks file of ours, `<copilot home>/hooks/sessionpipe.json`:
//! `{"version": 1, "hooks": {"<event>": [{"type": "command", "bash": …,
//! "timeoutSec": …}, …]}}`. Each event holds a flat list of handlers (no
//! matcher groups); ours is one handler per event, found by its `bash` command
//! (`sessionpipe-hook copilot-cli …`, any install path).
//!
//! Owns only our handlers: anything else someone put in the file (another
//! handler, keys Copilot adds later) is kept byte for byte by `jsonedit`. A new
//! file gets `version: 1`. Must not touch any other file of Copilot's folder.

use super::{CopilotCli, TABLE, copilot_home};
use harness::install::hooks_json::{Found, command, is_ours, judge};
use harness::install::jsonedit::{Doc, Edits, Node};
use harness::install::{
    ConfigFormat, Ctx, EntryState, HookEvent, HookInstall, HooksLayout, Host, Skip, Target,
};
use serde_json::{Map, Value, json};
use std::borrow::Cow;
use std::path::Path;
use std::sync::LazyLock;

/// The root key our entries live under.
const ROOT: &[&str] = &["hooks"];

pub(super) struct CopilotHooks {
    layout: LazyLock<HooksLayout>,
}

pub(super) static HOOKS: CopilotHooks = CopilotHooks {
    layout: LazyLock::new(|| HooksLayout {
        events: Cow::Owned(hook_events()),
        timeout_s: TABLE.timeout_s,
        timeout_unit_ms: false,
        handler_name: None,
    }),
};

impl CopilotHooks {
    /// Our handler for one event, as it should be now.
    fn handler(&self, hook_bin: &Path, harness: &str, e: &HookEvent) -> Value {
        json!({
            "type": "command",
            "bash": command(hook_bin, harness, e.name),
            "timeoutSec": self.layout.timeout_for(e),
        })
    }
}

/// The file read for our entries: plain JSON, an object at the top, `hooks` an
/// object when there.
fn doc_of(text: &str) -> Result<Doc<'_>, Skip> {
    let doc = Doc::parse_under(text, ROOT)?;
    if !doc.root.is_object() {
        return Err(Skip::Shape(
            "the file's top level is not a JSON object".into(),
        ));
    }
    if doc.root.get("hooks").is_some_and(|h| !h.is_object()) {
        return Err(Skip::Shape("\"hooks\" is not an object".into()));
    }
    Ok(doc)
}

/// (event member index, handler index, event name, handler) of each of ours.
fn our_places<'d>(doc: &'d Doc<'_>, harness: &str) -> Vec<(usize, usize, String, &'d Node)> {
    let Some(hooks) = doc.root.get("hooks") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (ei, member) in hooks.members().iter().enumerate() {
        for (hi, handler) in member.value.elements().iter().enumerate() {
            let cmd = handler
                .get("bash")
                .and_then(|c| serde_json::from_str::<String>(&doc.text[c.start..c.end]).ok());
            if cmd.is_some_and(|c| is_ours(&c, harness)) {
                out.push((ei, hi, member.key.clone(), handler));
            }
        }
    }
    out
}

impl ConfigFormat for CopilotHooks {
    fn judge(&self, text: &str, ctx: &Ctx<'_>) -> Result<EntryState, Skip> {
        let doc = doc_of(text)?;
        let found: Vec<Found> = our_places(&doc, ctx.harness)
            .into_iter()
            .map(|(_, _, event, node)| {
                let have: Value =
                    serde_json::from_str(&doc.text[node.start..node.end]).unwrap_or_default();
                let current = self
                    .layout
                    .events
                    .iter()
                    .find(|e| e.name == event)
                    .is_some_and(|e| have == self.handler(ctx.hook_bin, ctx.harness, e));
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
            edits.add_member(&doc, &doc.root, "version", &json!(1));
            edits.apply("{}")
        } else {
            text.to_string()
        };
        let doc = doc_of(&text)?;
        if doc.root.get("hooks").is_none() {
            let mut all = Map::new();
            for e in self.layout.events.iter() {
                all.insert(
                    e.name.to_string(),
                    json!([self.handler(ctx.hook_bin, ctx.harness, e)]),
                );
            }
            let mut edits = Edits::default();
            edits.add_member(&doc, &doc.root, "hooks", &Value::Object(all));
            text = edits.apply(&text);
        } else {
            // One addition per pass: two into one object would splice at one place.
            for e in self.layout.events.iter() {
                let doc = doc_of(&text)?;
                let hooks = doc.root.get("hooks").expect("checked above");
                let handler = self.handler(ctx.hook_bin, ctx.harness, e);
                let mut edits = Edits::default();
                match hooks.get(e.name) {
                    None => edits.add_member(&doc, hooks, e.name, &json!([handler])),
                    Some(list) if list.is_array() => edits.push_element(&doc, list, &handler),
                    Some(_) => return Err(Skip::Shape(format!("hooks.{} is not a list", e.name))),
                }
                text = edits.apply(&text);
            }
        }
        Ok(if fresh_file {
            format!("{text}\n")
        } else {
            text
        })
    }

    /// Our handlers out, one per pass. An event list or `hooks` our removal
    /// empties goes too, unless the file had it before our first write.
    fn remove(&self, text: &str, original: Option<&str>, ctx: &Ctx<'_>) -> Result<String, Skip> {
        let orig: Option<Value> =
            original.and_then(|o| serde_json::from_str(o.trim_start_matches('\u{feff}')).ok());
        let had = |event: Option<&str>| match (&orig, event) {
            (None, _) => false,
            (Some(o), None) => o.get("hooks").is_some(),
            (Some(o), Some(e)) => o.get("hooks").and_then(|h| h.get(e)).is_some(),
        };
        let mut text = text.to_string();
        loop {
            let doc = doc_of(&text)?;
            let places = our_places(&doc, ctx.harness);
            let Some((ei, hi, event, _)) = places.first() else {
                return Ok(text);
            };
            let hooks = doc.root.get("hooks").expect("our handlers are in hooks");
            let list = &hooks.members()[*ei].value;
            let mut edits = Edits::default();
            if list.elements().len() > 1 || had(Some(event)) {
                edits.remove_element(list, *hi);
            } else if hooks.members().len() > 1 || had(None) {
                edits.remove_member(hooks, *ei);
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

    /// Copilot reads hooks files of version 1.
    fn inactive(&self, text: &str) -> Option<String> {
        let v: Value = serde_json::from_str(text.trim_start_matches('\u{feff}')).ok()?;
        match v.get("version")? {
            Value::Number(n) if n.as_u64() == Some(1) => None,
            other => Some(format!(
                "the file says \"version\": {other}, and Copilot CLI reads hooks files of version 1"
            )),
        }
    }
}

impl HookInstall for CopilotCli {
    /// `<copilot home>/hooks/sessionpipe.json`, a file of our own. Not found
    /// when Copilot's folder does not exist and `copilot` is not on `PATH`.
    fn targets(&self, host: &Host) -> Vec<Target> {
        let dir = copilot_home(host);
        if !dir.is_dir() && !host.on_path("copilot") {
            return Vec::new();
        }
        vec![Target {
            path: dir.join("hooks/sessionpipe.json"),
            format: &HOOKS,
            owned: true,
        }]
    }
}

/// The entries written: one per row of the table.
fn hook_events() -> Vec<HookEvent> {
    TABLE.rows.iter().map(|r| r.hook).collect()
}

#[cfg(test)]
mod tests {
    use super::super::NAME as HARNESS;
    use super::*;

    fn ctx() -> Ctx<'static> {
        Ctx {
            harness: HARNESS,
            hook_bin: Path::new("/opt/sp/bin/sessionpipe-hook"),
        }
    }

    const THEIRS: &str = "{\r\n\t\"version\": 1,\r\n\t\"hooks\": {\r\n\t\t\"sessionStart\": [{\"type\": \"command\", \"bash\": \"./log.sh\", \"timeoutSec\": 5}]\r\n\t}\r\n}\r\n";

    #[test]
    fn our_handlers_are_added_judged_and_removed_without_touching_theirs() {
        assert_eq!(HOOKS.judge(THEIRS, &ctx()), Ok(EntryState::Missing));
        let added = HOOKS.add(THEIRS, &ctx()).unwrap();
        assert!(!added.replace("\r\n", "").contains('\n'), "CRLF kept");
        let v: Value = serde_json::from_str(&added).unwrap();
        let hooks = v["hooks"].as_object().unwrap();
        assert_eq!(hooks.len(), hook_events().len());
        assert_eq!(
            hooks["sessionStart"],
            json!([{"type": "command", "bash": "./log.sh", "timeoutSec": 5},
                   {"type": "command", "bash": "\"/opt/sp/bin/sessionpipe-hook\" copilot-cli sessionStart",
                    "timeoutSec": 30}])
        );
        assert!(hooks.get("permissionRequest").is_none());
        assert_eq!(HOOKS.judge(&added, &ctx()), Ok(EntryState::Current));
        assert_eq!(HOOKS.inactive(&added), None);
        assert_eq!(HOOKS.remove(&added, Some(THEIRS), &ctx()).unwrap(), THEIRS);
    }

    #[test]
    fn a_new_file_says_its_version_and_an_old_entry_is_outdated() {
        let fresh = HOOKS.add("", &ctx()).unwrap();
        assert!(
            fresh.starts_with("{\n  \"version\": 1,\n  \"hooks\": {\n"),
            "{fresh}"
        );
        assert_eq!(HOOKS.judge(&fresh, &ctx()), Ok(EntryState::Current));
        let old = Ctx {
            harness: HARNESS,
            hook_bin: Path::new("/old/sessionpipe-hook"),
        };
        assert!(matches!(
            HOOKS.judge(&fresh, &old),
            Ok(EntryState::Outdated(_))
        ));
        let left = HOOKS.remove(&fresh, None, &ctx()).unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&left).unwrap(),
            json!({"version": 1})
        );
        assert!(HOOKS.inactive("{\"version\": 2, \"hooks\": {}}").is_some());
    }

    #[test]
    fn files_it_cannot_edit_are_refused() {
        for bad in [
            "{\n  // mine\n  \"hooks\": {}\n}",
            "[]",
            "{\"hooks\": []}",
            "{\"hooks\": {\"agentStop\": {}}}",
            "{\"hooks\": {\"agentStop\": [], \"agentStop\": []}}",
        ] {
            let judged = HOOKS.judge(bad, &ctx());
            let added = HOOKS.add(bad, &ctx());
            assert!(judged.is_err() || added.is_err(), "{bad}");
        }
    }
}
