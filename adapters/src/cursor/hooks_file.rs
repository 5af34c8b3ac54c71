//! Cursor's hooks file, `~/.cursor/hooks.json`: `{"version": 1, "hooks":
//! {"<event>": [{"command": …, "timeout": …}, …]}}`. Each event holds a flat
//! list of handlers, not Claude Code's matcher groups; ours is one handler per
//! event, found by its command (`sessionpipe-hook cursor …`, any install path).
//!
//! Owns where the file is and our handler's fields; the kit's `event_lists`
//! edits the file (everything else in it is kept byte for byte, a new file gets
//! `version: 1`, an existing one without it is left so: 1 is the default). Our `stop` handler takes `loop_limit: null`: each follow-up it
//! answers is one verified control message, and Cursor's default cap (five a
//! conversation) would otherwise drop the sixth while control acks it.

use super::{Cursor, FILE_EDIT, TABLE};
use harness::install::event_lists::EventLists;
use harness::install::{HookEvent, HookInstall, HooksLayout, Host, Target};
use serde_json::{Map, Value, json};
use std::borrow::Cow;
use std::sync::LazyLock;

pub(super) static HOOKS: EventLists = EventLists {
    layout: LazyLock::new(|| HooksLayout {
        events: Cow::Owned(hook_events()),
        timeout_s: 5,
        timeout_unit_ms: false,
        handler_name: None,
    }),
    command_key: "command",
    handler_of: handler,
    reader: "Cursor",
};

/// Our handler: `command` and `timeout` (seconds), and `loop_limit: null` on
/// `stop` (see above).
fn handler(command: String, timeout: u64, e: &HookEvent) -> Value {
    let mut m = Map::new();
    m.insert("command".into(), json!(command));
    m.insert("timeout".into(), json!(timeout));
    if e.name == "stop" {
        m.insert("loop_limit".into(), Value::Null);
    }
    Value::Object(m)
}

/// The events our entries are written for: the table's, and `afterFileEdit`.
/// A `stop` waits for control's answer (within the hook's own 6 s), so it gets
/// a longer timeout than the rest.
fn hook_events() -> Vec<HookEvent> {
    TABLE
        .rows
        .iter()
        .map(|r| match r.hook.name {
            "stop" => r.hook.timeout(10),
            _ => r.hook,
        })
        .chain(std::iter::once(HookEvent::plain(FILE_EDIT)))
        .collect()
}

impl HookInstall for Cursor {
    /// `~/.cursor/hooks.json`, the person's user-level hooks file. Found when
    /// `~/.cursor` exists or `cursor-agent` (Cursor's CLI) or `cursor` is on
    /// `PATH`.
    fn looked_for(&self, host: &Host) -> Vec<String> {
        vec![
            host.show(&host.home.join(".cursor")),
            "`cursor-agent` or `cursor` on PATH".into(),
        ]
    }

    fn targets(&self, host: &Host) -> Vec<Target> {
        let dir = host.home.join(".cursor");
        if !dir.is_dir() && !host.on_path("cursor-agent") && !host.on_path("cursor") {
            return Vec::new();
        }
        vec![Target::shared(dir.join("hooks.json"), &HOOKS)]
    }

    fn note(&self) -> Option<&'static str> {
        Some(
            "Cursor reloads ~/.cursor/hooks.json when it changes; if its Hooks tab does not list sessionpipe's entries, restart Cursor",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::NAME as HARNESS;
    use super::*;
    use harness::install::{ConfigFormat, Ctx, EntryState};
    use std::path::Path;

    fn ctx() -> Ctx<'static> {
        Ctx {
            harness: HARNESS,
            hook_bin: Path::new("/opt/sp/bin/sessionpipe-hook"),
        }
    }

    const THEIRS: &str = "{\r\n\t\"version\": 1,\r\n\t\"hooks\": {\r\n\t\t\"afterFileEdit\": [{\"command\": \"./hooks/format.sh\"}],\r\n\t\t\"beforeShellExecution\": [{\"command\": \"./approve.sh\", \"matcher\": \"curl\"}]\r\n\t}\r\n}\r\n";

    #[test]
    fn our_handlers_are_added_judged_and_removed_without_touching_theirs() {
        assert_eq!(HOOKS.judge(THEIRS, &ctx()), Ok(EntryState::Missing));
        let added = HOOKS.add(THEIRS, &ctx()).unwrap();
        assert!(!added.replace("\r\n", "").contains('\n'), "CRLF kept");
        let v: Value = serde_json::from_str(&added).unwrap();
        let hooks = v["hooks"].as_object().unwrap();
        assert_eq!(hooks.len(), 12, "our eleven events and their shell gate");
        assert_eq!(
            hooks["afterFileEdit"],
            json!([{"command": "./hooks/format.sh"},
                   {"command": "\"/opt/sp/bin/sessionpipe-hook\" cursor afterFileEdit", "timeout": 5}])
        );
        assert_eq!(
            hooks["stop"],
            json!([{"command": "\"/opt/sp/bin/sessionpipe-hook\" cursor stop", "timeout": 10, "loop_limit": null}])
        );
        assert!(!added.contains("beforeShellExecution\": [{\"command\": \"/opt"));
        assert_eq!(HOOKS.judge(&added, &ctx()), Ok(EntryState::Current));
        assert_eq!(HOOKS.inactive(&added), None);
        assert_eq!(HOOKS.remove(&added, Some(THEIRS), &ctx()).unwrap(), THEIRS);
    }

    #[test]
    fn a_new_file_says_its_version_and_goes_back_to_nothing_of_ours() {
        let fresh = HOOKS.add("", &ctx()).unwrap();
        assert!(
            fresh.starts_with("{\n  \"version\": 1,\n  \"hooks\": {\n"),
            "{fresh}"
        );
        assert!(fresh.ends_with("}\n"));
        assert_eq!(HOOKS.judge(&fresh, &ctx()), Ok(EntryState::Current));
        let left = HOOKS.remove(&fresh, None, &ctx()).unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&left).unwrap(),
            json!({"version": 1})
        );
    }

    #[test]
    fn another_build_an_edit_or_a_double_is_outdated() {
        let added = HOOKS.add("{}", &ctx()).unwrap();
        let old = Ctx {
            harness: HARNESS,
            hook_bin: Path::new("/old/sessionpipe-hook"),
        };
        let Ok(EntryState::Outdated(why)) = HOOKS.judge(&added, &old) else {
            panic!()
        };
        assert!(why.contains("0 of 11 events current"), "{why}");
        let edited = added.replacen("\"timeout\": 5", "\"timeout\": 50", 1);
        assert!(matches!(
            HOOKS.judge(&edited, &ctx()),
            Ok(EntryState::Outdated(_))
        ));
        let cleaned = HOOKS.remove(&added, Some("{}"), &ctx()).unwrap();
        assert_eq!(cleaned, "{}");
    }

    #[test]
    fn files_it_cannot_edit_are_refused() {
        for bad in [
            "{\n  // mine\n  \"hooks\": {}\n}",
            "[]",
            "{\"hooks\": []}",
            "{\"hooks\": {\"stop\": {}}}",
            "{\"hooks\": {\"stop\": [], \"stop\": []}}",
        ] {
            let judged = HOOKS.judge(bad, &ctx());
            let added = HOOKS.add(bad, &ctx());
            assert!(judged.is_err() || added.is_err(), "{bad}");
        }
        assert!(HOOKS.inactive("{\"version\": 2, \"hooks\": {}}").is_some());
    }
}
