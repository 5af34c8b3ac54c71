//! The model the property tests hold the JSON editor to: our entries taken out
//! and put in as values (`serde_json`, which reads a doubled key as the harness
//! does: the last), and what "only inserted" means for the bytes. Written from
//! what the format promises, not from its code.

use crate::install::Ctx;
use crate::install::hooks_json::{ClaudeHooks, HookEvent, HooksLayout, command, group, is_ours};
use serde_json::{Value, json};
use std::borrow::Cow;
use std::path::Path;

/// The harness and the layout the documents are edited for: an event without
/// a matcher, one with `""`, one with a matcher of its own.
pub const HARNESS: &str = "claude-code";

pub static FORMAT: ClaudeHooks = ClaudeHooks {
    layout: HooksLayout {
        events: Cow::Borrowed(&[
            HookEvent::plain("Stop"),
            HookEvent::matched("PreToolUse"),
            HookEvent::with_matcher("Notification", "x"),
        ]),
        timeout_s: 5,
        timeout_unit_ms: false,
        handler_name: None,
    },
    accepted_events: None,
};

pub fn bin() -> &'static Path {
    Path::new("/opt/sp/bin/sessionpipe-hook")
}

pub fn ctx() -> Ctx<'static> {
    Ctx {
        harness: HARNESS,
        hook_bin: bin(),
    }
}

/// A document's value as the harness reads it (of a doubled key, the last).
pub fn value(text: &str) -> Value {
    serde_json::from_str(text.trim_start_matches('\u{feff}')).expect("valid JSON")
}

/// True for a handler that runs our hook for `HARNESS`.
pub fn ours(handler: &Value) -> bool {
    handler
        .get("command")
        .and_then(Value::as_str)
        .is_some_and(|c| is_ours(c, HARNESS))
}

/// `v` without our handlers, as uninstall takes them out: a handler, or its
/// group when it was the group's last; a list or `hooks` emptied that way goes
/// too unless `original` had it.
pub fn strip(v: &mut Value, original: Option<&Value>) {
    let had_hooks = original.and_then(|o| o.get("hooks")).is_some();
    let had = |e: &str| original.and_then(|o| o.get("hooks")?.get(e)).is_some();
    loop {
        let Some(hooks) = v.get_mut("hooks").and_then(Value::as_object_mut) else {
            return;
        };
        let place = hooks.iter().find_map(|(e, list)| {
            list.as_array()?.iter().enumerate().find_map(|(gi, g)| {
                let hi = g.get("hooks")?.as_array()?.iter().position(ours)?;
                Some((e.clone(), gi, hi))
            })
        });
        let Some((e, gi, hi)) = place else { return };
        let n_events = hooks.len();
        let list = hooks[&e].as_array_mut().expect("a list");
        let handlers = list[gi]["hooks"].as_array_mut().expect("handlers");
        if handlers.len() > 1 {
            handlers.remove(hi);
        } else if list.len() > 1 || had(&e) {
            list.remove(gi);
        } else if n_events > 1 || had_hooks {
            hooks.shift_remove(&e);
        } else {
            v.as_object_mut().expect("an object").shift_remove("hooks");
        }
    }
}

/// `v` with our group appended to each event's list (created when missing).
pub fn with_ours(v: &Value) -> Value {
    let mut v = if v.is_object() { v.clone() } else { json!({}) };
    let hooks = v
        .as_object_mut()
        .expect("an object")
        .entry("hooks")
        .or_insert_with(|| json!({}));
    for e in FORMAT.layout.events.iter() {
        let list = hooks
            .as_object_mut()
            .expect("hooks is an object")
            .entry(e.name)
            .or_insert_with(|| json!([]));
        list.as_array_mut().expect("a list").push(group(
            &FORMAT.layout,
            e,
            command(bin(), HARNESS, e.name),
        ));
    }
    v
}

/// `text` with the blanks inside every empty container taken out (outside
/// strings): the one change an insertion makes to the input's bytes.
pub fn squash(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_string = false;
    let mut escaped = false;
    let mut pending: Option<(char, String)> = None;
    for c in text.chars() {
        if let Some((open, blanks)) = pending.take() {
            if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
                pending = Some((open, blanks + &c.to_string()));
                continue;
            }
            let closes = (open == '{' && c == '}') || (open == '[' && c == ']');
            if !closes {
                out.push_str(&blanks);
            }
        }
        out.push(c);
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
        } else if c == '"' {
            in_string = true;
        } else if c == '{' || c == '[' {
            pending = Some((c, String::new()));
        }
    }
    if let Some((_, blanks)) = pending {
        out.push_str(&blanks);
    }
    out
}

/// True when `small`'s bytes all appear in `big`, in order.
pub fn kept_in_order(small: &str, big: &str) -> bool {
    let mut big = big.bytes();
    small.bytes().all(|b| big.any(|x| x == b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn squash_takes_blanks_out_of_empty_containers_only() {
        assert_eq!(
            squash("{ \"a\": [ ], \"b\": \"[ ]\", \"c\": [ 1 ] }"),
            "{ \"a\": [], \"b\": \"[ ]\", \"c\": [ 1 ] }"
        );
        assert_eq!(squash("{\r\n}"), "{}");
        assert!(kept_in_order("abc", "xaybzc"));
        assert!(!kept_in_order("abc", "acb"));
    }
}
