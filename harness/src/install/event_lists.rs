//! A hooks file of per-event handler lists:
//! `{"version": 1, "hooks": {"<event>": [<handler>, …]}}`, each event holding a
//! flat list of handlers (no matcher groups), the shape Copilot CLI and Cursor
//! share; only the handler's own fields differ, which the harness gives
//! (`EventLists::handler`). Ours is one handler per event, found by the command
//! under `command_key` (`sessionpipe-hook <harness> …`, any install path).
//!
//! Owns finding, judging, adding and removing our handlers in such a file.
//! Everything else in it (other handlers, `version`, keys the harness adds
//! later) is kept byte for byte by `jsonedit`; a new file gets `version: 1`;
//! an event list or `hooks` our removal empties goes too, unless the file had
//! it before our first write. Must not know any one harness's fields.

use super::format::{ConfigFormat, Ctx, EntryState, Skip};
use super::hooks_json::{Found, HookEvent, HooksLayout, command, is_ours, judge};
use super::jsonedit::{Doc, Edits, Node};
use serde_json::{Map, Value, json};
use std::path::Path;
use std::sync::LazyLock;

/// The root key our entries live under.
const ROOT: &[&str] = &["hooks"];

/// One harness's file of this shape.
pub struct EventLists {
    pub layout: LazyLock<HooksLayout>,
    /// The handler's key holding the command (`bash`, `command`).
    pub command_key: &'static str,
    /// Our handler for an event: its command and timeout in the harness's own
    /// fields.
    pub handler_of: fn(command: String, timeout: u64, event: &HookEvent) -> Value,
    /// Who reads the file, for the version message ("Copilot CLI").
    pub reader: &'static str,
}

impl EventLists {
    /// Our handler for one event, as it should be now.
    pub fn handler(&self, hook_bin: &Path, harness: &str, e: &HookEvent) -> Value {
        (self.handler_of)(
            command(hook_bin, harness, e.name),
            self.layout.timeout_for(e),
            e,
        )
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
fn our_places<'d>(
    doc: &'d Doc<'_>,
    harness: &str,
    command_key: &str,
) -> Vec<(usize, usize, String, &'d Node)> {
    let Some(hooks) = doc.root.get("hooks") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (ei, member) in hooks.members().iter().enumerate() {
        for (hi, handler) in member.value.elements().iter().enumerate() {
            let cmd = handler
                .get(command_key)
                .and_then(|c| serde_json::from_str::<String>(&doc.text[c.start..c.end]).ok());
            if cmd.is_some_and(|c| is_ours(&c, harness)) {
                out.push((ei, hi, member.key.clone(), handler));
            }
        }
    }
    out
}

impl ConfigFormat for EventLists {
    fn judge(&self, text: &str, ctx: &Ctx<'_>) -> Result<EntryState, Skip> {
        let doc = doc_of(text)?;
        let found: Vec<Found> = our_places(&doc, ctx.harness, self.command_key)
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
            let places = our_places(&doc, ctx.harness, self.command_key);
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

    /// The harness reads these files in version 1; no `version` is 1.
    fn inactive(&self, text: &str) -> Option<String> {
        let v: Value = serde_json::from_str(text.trim_start_matches('\u{feff}')).ok()?;
        match v.get("version")? {
            Value::Number(n) if n.as_u64() == Some(1) => None,
            other => Some(format!(
                "the file says \"version\": {other}, and {} reads hooks files of version 1",
                self.reader
            )),
        }
    }
}
