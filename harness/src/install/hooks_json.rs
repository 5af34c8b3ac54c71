//! Claude-shaped hook entries in a JSON config:
//! `{"hooks": {"<Event>": [{"matcher": …, "hooks": [{"type": "command", …}]}]}}`.
//!
//! Finds our entries (a handler whose command runs `sessionpipe-hook <harness>`),
//! judges them current or not, and computes the text with them added or removed.
//! Only our handlers are touched; a group or event list is removed only when our
//! removal emptied it and the original file did not have it. A key written twice
//! anywhere under `hooks` makes the file one we skip (`Doc::parse_under`).

use super::format::{ConfigFormat, Ctx, EntryState, Skip};
use super::jsonedit::{Doc, Edits, Node};
use serde_json::{Map, Value, json};
use std::borrow::Cow;
use std::path::Path;

/// One event we register, and its matcher when the harness wants one there.
#[derive(Clone, Copy, Debug)]
pub struct HookEvent {
    pub name: &'static str,
    pub matcher: Option<&'static str>,
    /// Overrides the layout's timeout (seconds) for this event.
    pub timeout_s: Option<u64>,
}

impl HookEvent {
    pub const fn plain(name: &'static str) -> HookEvent {
        HookEvent {
            name,
            matcher: None,
            timeout_s: None,
        }
    }
    /// An event with the match-everything matcher `""`.
    pub const fn matched(name: &'static str) -> HookEvent {
        HookEvent {
            name,
            matcher: Some(""),
            timeout_s: None,
        }
    }
    pub const fn with_matcher(name: &'static str, matcher: &'static str) -> HookEvent {
        HookEvent {
            name,
            matcher: Some(matcher),
            timeout_s: None,
        }
    }
    pub const fn timeout(mut self, seconds: u64) -> HookEvent {
        self.timeout_s = Some(seconds);
        self
    }
}

/// How a harness wants its Claude-shaped hook entries written.
#[derive(Debug)]
pub struct HooksLayout {
    pub events: Cow<'static, [HookEvent]>,
    /// Timeout in seconds.
    pub timeout_s: u64,
    /// The harness reads timeouts in milliseconds.
    pub timeout_unit_ms: bool,
    /// A `name` the harness wants on each handler.
    pub handler_name: Option<&'static str>,
}

impl HooksLayout {
    pub fn timeout_for(&self, e: &HookEvent) -> u64 {
        let s = e.timeout_s.unwrap_or(self.timeout_s);
        if self.timeout_unit_ms { s * 1000 } else { s }
    }
}

/// The command a harness runs: the hook's quoted absolute path, harness, event.
pub fn command(hook_bin: &Path, harness: &str, event: &str) -> String {
    format!("{} {harness} {event}", quote(&hook_bin.to_string_lossy()))
}

/// Double-quotes a path for the shell a harness runs its hooks with.
fn quote(path: &str) -> String {
    if cfg!(windows) {
        return format!("\"{path}\"");
    }
    let mut out = String::with_capacity(path.len() + 2);
    out.push('"');
    for c in path.chars() {
        if matches!(c, '"' | '\\' | '$' | '`') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// True when `command` runs sessionpipe's hook for `harness` (any install path,
/// so an entry written by an older version is still recognised as ours).
pub fn is_ours(command: &str, harness: &str) -> bool {
    let c = command.trim_start();
    let (program, rest) = match c.strip_prefix('"') {
        Some(quoted) => {
            let mut end = None;
            let mut escaped = false;
            for (i, ch) in quoted.char_indices() {
                match ch {
                    '\\' if !escaped => escaped = true,
                    '"' if !escaped => {
                        end = Some(i);
                        break;
                    }
                    _ => escaped = false,
                }
            }
            let Some(end) = end else { return false };
            (quoted[..end].replace('\\', "/"), &quoted[end + 1..])
        }
        None => {
            let end = c.find(char::is_whitespace).unwrap_or(c.len());
            (c[..end].replace('\\', "/"), &c[end..])
        }
    };
    let file = program.rsplit('/').next().unwrap_or("");
    let is_hook = file == "sessionpipe-hook" || file.eq_ignore_ascii_case("sessionpipe-hook.exe");
    is_hook && rest.split_whitespace().next() == Some(harness)
}

/// The group we write for one event.
pub fn group(layout: &HooksLayout, event: &HookEvent, command: String) -> Value {
    let mut handler = Map::new();
    handler.insert("type".into(), json!("command"));
    handler.insert("command".into(), json!(command));
    if let Some(name) = layout.handler_name {
        handler.insert("name".into(), json!(name));
    }
    handler.insert("timeout".into(), json!(layout.timeout_for(event)));
    let mut g = Map::new();
    if let Some(m) = event.matcher {
        g.insert("matcher".into(), json!(m));
    }
    g.insert("hooks".into(), Value::Array(vec![Value::Object(handler)]));
    Value::Object(g)
}

/// The root key everything this format reads and writes lives under.
const ROOT: &[&str] = &["hooks"];

/// One of our handlers found in a file.
#[derive(Clone, Debug)]
pub struct Found {
    pub event: String,
    pub current: bool,
}

/// Where our handlers sit: (event member index, group index, handler index).
type Place = (usize, usize, usize);

fn hooks_object<'d>(doc: &'d Doc<'_>) -> Option<&'d Node> {
    doc.root.get("hooks").filter(|h| h.is_object())
}

fn our_places<'d>(doc: &'d Doc<'_>, harness: &str) -> Vec<(Place, String, &'d Node, &'d Node)> {
    let mut out = Vec::new();
    let Some(hooks) = hooks_object(doc) else {
        return out;
    };
    for (ei, member) in hooks.members().iter().enumerate() {
        for (gi, group) in member.value.elements().iter().enumerate() {
            let Some(handlers) = group.get("hooks") else {
                continue;
            };
            for (hi, handler) in handlers.elements().iter().enumerate() {
                let cmd = handler
                    .get("command")
                    .and_then(|c| serde_json::from_str::<String>(&doc.text[c.start..c.end]).ok());
                if cmd.is_some_and(|c| is_ours(&c, harness)) {
                    out.push(((ei, gi, hi), member.key.clone(), group, handler));
                }
            }
        }
    }
    out
}

/// Our handlers in `doc`, each judged against the entry we would write now.
pub fn find(doc: &Doc<'_>, layout: &HooksLayout, harness: &str, hook_bin: &Path) -> Vec<Found> {
    our_places(doc, harness)
        .into_iter()
        .map(|(_, event, group, handler)| {
            let current = layout
                .events
                .iter()
                .find(|e| e.name == event)
                .is_some_and(|spec| {
                    let want = group_value(&group_of(layout, spec, hook_bin, harness));
                    let have_handler: Value =
                        serde_json::from_str(&doc.text[handler.start..handler.end])
                            .unwrap_or_default();
                    let have_matcher = group.get("matcher").and_then(|m| {
                        serde_json::from_str::<Value>(&doc.text[m.start..m.end]).ok()
                    });
                    want.0 == have_handler && want.1 == have_matcher
                });
            Found { event, current }
        })
        .collect()
}

fn group_of(layout: &HooksLayout, spec: &HookEvent, hook_bin: &Path, harness: &str) -> Value {
    group(layout, spec, command(hook_bin, harness, spec.name))
}

/// (the handler, the matcher) of a group we write.
fn group_value(g: &Value) -> (Value, Option<Value>) {
    (g["hooks"][0].clone(), g.get("matcher").cloned())
}

pub fn judge(found: &[Found], layout: &HooksLayout) -> EntryState {
    if found.is_empty() {
        return EntryState::Missing;
    }
    let current_events = layout
        .events
        .iter()
        .filter(|e| {
            found
                .iter()
                .filter(|f| f.event == e.name && f.current)
                .count()
                == 1
        })
        .count();
    let stale = found.iter().filter(|f| !f.current).count();
    let doubled = found.len() - stale - current_events;
    if current_events == layout.events.len() && stale == 0 && doubled == 0 {
        return EntryState::Current;
    }
    let mut why = Vec::new();
    if current_events < layout.events.len() {
        why.push(format!(
            "{} of {} events current",
            current_events,
            layout.events.len()
        ));
    }
    if stale > 0 {
        why.push(format!("{stale} entries from another version or edited"));
    }
    if doubled > 0 {
        why.push(format!("{doubled} duplicate entries"));
    }
    EntryState::Outdated(why.join(", "))
}

/// `text` without any of our handlers for `harness`. `original` is the file as it
/// was before our first write: an event list or `hooks` object it had is kept
/// even when our removal empties it.
pub fn remove_ours(text: &str, harness: &str, original: Option<&str>) -> Result<String, Skip> {
    let had = |event: Option<&str>| -> bool {
        let Some(orig) = original
            .and_then(|o| serde_json::from_str::<Value>(o.trim_start_matches('\u{feff}')).ok())
        else {
            return false;
        };
        match event {
            None => orig.get("hooks").is_some(),
            Some(e) => orig.get("hooks").and_then(|h| h.get(e)).is_some(),
        }
    };
    let mut text = text.to_string();
    // One removal per pass: splices next to each other in one list would overlap.
    loop {
        let doc = Doc::parse_under(&text, ROOT)?;
        let places = our_places(&doc, harness);
        let Some(&((ei, gi, hi), ref event, group, _)) = places.first() else {
            return Ok(text);
        };
        let hooks = hooks_object(&doc).expect("our places are inside hooks");
        let event_list = &hooks.members()[ei].value;
        let handlers = group
            .get("hooks")
            .expect("our handler is in a group's hooks");
        let mut edits = Edits::default();
        if handlers.elements().len() > 1 {
            edits.remove_element(handlers, hi);
        } else if event_list.elements().len() > 1 || had(Some(event)) {
            edits.remove_element(event_list, gi);
        } else if hooks.members().len() > 1 || had(None) {
            edits.remove_member(hooks, ei);
        } else {
            let idx = doc
                .root
                .members()
                .iter()
                .position(|m| m.key == "hooks")
                .expect("hooks member");
            edits.remove_member(&doc.root, idx);
        }
        text = edits.apply(&text);
    }
}

/// `text` (plain JSON, our entries already removed) with our entries added for
/// every event of the layout.
pub fn add_ours(
    text: &str,
    layout: &HooksLayout,
    harness: &str,
    hook_bin: &Path,
) -> Result<String, Skip> {
    let fresh_file = text.trim().is_empty();
    let base = if fresh_file { "{}" } else { text };
    let doc = Doc::parse_under(base, ROOT)?;
    if !doc.root.is_object() {
        return Err(Skip::Shape(
            "the file's top level is not a JSON object".into(),
        ));
    }
    let groups: Vec<(&HookEvent, Value)> = layout
        .events
        .iter()
        .map(|e| (e, group_of(layout, e, hook_bin, harness)))
        .collect();
    let mut text = base.to_string();
    if doc.root.get("hooks").is_none() {
        let mut all = Map::new();
        for (e, g) in &groups {
            all.insert(e.name.to_string(), Value::Array(vec![g.clone()]));
        }
        let mut edits = Edits::default();
        edits.add_member(&doc, &doc.root, "hooks", &Value::Object(all));
        text = edits.apply(&text);
    } else {
        // One addition per pass: several into one (possibly empty) object would
        // splice at the same place.
        for (e, g) in &groups {
            let doc = Doc::parse_under(&text, ROOT)?;
            let Some(hooks) = hooks_object(&doc) else {
                return Err(Skip::Shape("\"hooks\" is not an object".into()));
            };
            let mut edits = Edits::default();
            match hooks.get(e.name) {
                None => edits.add_member(&doc, hooks, e.name, &Value::Array(vec![g.clone()])),
                Some(list) if list.is_array() => edits.push_element(&doc, list, g),
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

/// Claude-shaped hooks in a JSON file, written to one harness's layout.
pub struct ClaudeHooks {
    pub layout: HooksLayout,
    /// The only event names the harness accepts in the whole file, when it
    /// rejects a file that names any other (Devin does).
    pub accepted_events: Option<&'static [&'static str]>,
}

impl ConfigFormat for ClaudeHooks {
    fn judge(&self, text: &str, ctx: &Ctx<'_>) -> Result<EntryState, Skip> {
        let doc = Doc::parse_under(text, ROOT)?;
        if !doc.root.is_object() {
            return Err(Skip::Shape(
                "the file's top level is not a JSON object".into(),
            ));
        }
        Ok(judge(
            &find(&doc, &self.layout, ctx.harness, ctx.hook_bin),
            &self.layout,
        ))
    }

    fn add(&self, text: &str, ctx: &Ctx<'_>) -> Result<String, Skip> {
        add_ours(text, &self.layout, ctx.harness, ctx.hook_bin)
    }

    fn remove(&self, text: &str, original: Option<&str>, ctx: &Ctx<'_>) -> Result<String, Skip> {
        remove_ours(text, ctx.harness, original)
    }

    fn inactive(&self, text: &str) -> Option<String> {
        let accepted = self.accepted_events?;
        let v: Value = serde_json::from_str(text.trim_start_matches('\u{feff}')).ok()?;
        let unknown: Vec<&String> = v
            .get("hooks")?
            .as_object()?
            .keys()
            .filter(|k| !accepted.contains(&k.as_str()))
            .collect();
        if unknown.is_empty() {
            return None;
        }
        let names: Vec<&str> = unknown.iter().map(|s| s.as_str()).collect();
        Some(format!(
            "the file names events the harness does not know ({}), so it loads none of the hooks in it",
            names.join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static LAYOUT: HooksLayout = HooksLayout {
        events: Cow::Borrowed(&[HookEvent::plain("Stop"), HookEvent::matched("PreToolUse")]),
        timeout_s: 5,
        timeout_unit_ms: false,
        handler_name: None,
    };

    fn bin() -> &'static Path {
        Path::new("/opt/sp/bin/sessionpipe-hook")
    }

    #[test]
    fn recognises_our_commands_at_any_path() {
        assert!(is_ours(
            "\"/opt/sp/bin/sessionpipe-hook\" claude-code Stop",
            "claude-code"
        ));
        assert!(is_ours(
            "/usr/bin/sessionpipe-hook claude-code Stop",
            "claude-code"
        ));
        assert!(is_ours(
            "\"C:\\\\Program Files\\\\sp\\\\sessionpipe-hook.exe\" codex Stop",
            "codex"
        ));
        assert!(!is_ours(
            "\"/opt/sp/bin/sessionpipe-hook\" codex Stop",
            "claude-code"
        ));
        assert!(!is_ours(
            "/usr/bin/other-hook claude-code Stop",
            "claude-code"
        ));
        assert!(!is_ours("echo sessionpipe-hook claude-code", "claude-code"));
    }

    #[test]
    fn quoting_protects_shell_characters() {
        assert_eq!(
            command(Path::new("/a b/$x`y\"/sessionpipe-hook"), "codex", "Stop"),
            "\"/a b/\\$x\\`y\\\"/sessionpipe-hook\" codex Stop"
        );
        assert!(is_ours(
            &command(Path::new("/a b/$x/sessionpipe-hook"), "codex", "Stop"),
            "codex"
        ));
    }

    #[test]
    fn add_then_judge_then_remove_restores_the_text() {
        let original = "{\n  \"hooks\": {\n    \"Stop\": [\n      {\n        \"hooks\": [\n          {\"type\": \"command\", \"command\": \"notify-send done\"}\n        ]\n      }\n    ]\n  },\n  \"model\": \"opus\"\n}\n";
        let added = add_ours(original, &LAYOUT, "claude-code", bin()).unwrap();
        let doc = Doc::parse(&added).unwrap();
        let found = find(&doc, &LAYOUT, "claude-code", bin());
        assert_eq!(judge(&found, &LAYOUT), EntryState::Current);
        assert!(added.contains("notify-send done"));
        let other_bin = find(
            &doc,
            &LAYOUT,
            "claude-code",
            Path::new("/old/sessionpipe-hook"),
        );
        assert!(matches!(
            judge(&other_bin, &LAYOUT),
            EntryState::Outdated(_)
        ));
        assert_eq!(
            remove_ours(&added, "claude-code", Some(original)).unwrap(),
            original
        );
    }

    #[test]
    fn a_file_without_hooks_gets_them_and_loses_them() {
        for original in [
            "{}",
            "{\"a\": 1}",
            "{\n\t\"a\": 1\n}\n",
            "{\r\n  \"a\": 1\r\n}\r\n",
        ] {
            let added = add_ours(original, &LAYOUT, "claude-code", bin()).unwrap();
            assert!(added.contains("\"matcher\""));
            assert_eq!(
                remove_ours(&added, "claude-code", Some(original)).unwrap(),
                original
            );
        }
        let fresh = add_ours("", &LAYOUT, "claude-code", bin()).unwrap();
        assert!(fresh.starts_with("{\n  \"hooks\": {\n    \"Stop\": [") && fresh.ends_with("}\n"));
    }

    #[test]
    fn removal_keeps_foreign_handlers_in_a_shared_group() {
        let text = format!(
            "{{\"hooks\": {{\"Stop\": [{{\"hooks\": [{{\"type\": \"command\", \"command\": {}}}, {{\"type\": \"command\", \"command\": \"x\"}}]}}]}}}}",
            serde_json::to_string(&command(bin(), "claude-code", "Stop")).unwrap()
        );
        let out = remove_ours(&text, "claude-code", None).unwrap();
        assert_eq!(
            out,
            "{\"hooks\": {\"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"x\"}]}]}}"
        );
    }

    #[test]
    fn judge_names_partial_stale_and_doubled() {
        let f = |e: &str, c| Found {
            event: e.into(),
            current: c,
        };
        assert_eq!(judge(&[], &LAYOUT), EntryState::Missing);
        assert_eq!(
            judge(&[f("Stop", true), f("PreToolUse", true)], &LAYOUT),
            EntryState::Current
        );
        let EntryState::Outdated(why) = judge(&[f("Stop", true)], &LAYOUT) else {
            panic!()
        };
        assert!(why.contains("1 of 2"));
        let EntryState::Outdated(why) = judge(
            &[f("Stop", true), f("Stop", true), f("PreToolUse", true)],
            &LAYOUT,
        ) else {
            panic!()
        };
        assert!(why.contains("duplicate"), "{why}");
    }

    #[test]
    fn refuses_shapes_it_cannot_extend() {
        assert!(add_ours("[1]", &LAYOUT, "h", bin()).is_err());
        assert!(add_ours("{\"hooks\": []}", &LAYOUT, "h", bin()).is_err());
        assert!(add_ours("{\"hooks\": {\"Stop\": {}}}", &LAYOUT, "h", bin()).is_err());
    }
}
