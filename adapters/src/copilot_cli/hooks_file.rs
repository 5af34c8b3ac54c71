//! Copilot CLI's hooks file of ours, `<copilot home>/hooks/sessionpipe.json`:
//! `{"version": 1, "hooks": {"<event>": [{"type": "command", "bash": …,
//! "timeoutSec": …}, …]}}`. Each event holds a flat list of handlers (no
//! matcher groups); ours is one handler per event, found by its `bash` command
//! (`sessionpipe-hook copilot-cli …`, any install path).
//!
//! Owns where the file is and our handler's fields; the kit's `event_lists`
//! edits the file (anything else in it is kept byte for byte, a new file gets
//! `version: 1`). Must not touch any other file of Copilot's folder.

use super::{CopilotCli, TABLE, copilot_home};
use harness::install::event_lists::EventLists;
use harness::install::{HookEvent, HookInstall, HooksLayout, Host, Target};
use serde_json::{Value, json};
use std::borrow::Cow;
use std::sync::LazyLock;

pub(super) static HOOKS: EventLists = EventLists {
    layout: LazyLock::new(|| HooksLayout {
        events: Cow::Owned(hook_events()),
        timeout_s: TABLE.timeout_s,
        timeout_unit_ms: false,
        handler_name: None,
    }),
    command_key: "bash",
    handler_of: handler,
    reader: "Copilot CLI",
};

/// Our handler: a `bash` command with its timeout in seconds.
fn handler(command: String, timeout: u64, _: &HookEvent) -> Value {
    json!({"type": "command", "bash": command, "timeoutSec": timeout})
}

impl HookInstall for CopilotCli {
    /// `<copilot home>/hooks/sessionpipe.json`, a file of our own. Not found
    /// when Copilot's folder does not exist and `copilot` is not on `PATH`.
    fn looked_for(&self, host: &Host) -> Vec<String> {
        vec![host.show(&copilot_home(host)), "`copilot` on PATH".into()]
    }

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
    use harness::install::{ConfigFormat, Ctx, EntryState};
    use std::path::Path;

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
    fn an_install_from_before_subagents_is_outdated_and_upgraded() {
        let fresh = HOOKS.add("", &ctx()).unwrap();
        let mut old: Value = serde_json::from_str(&fresh).unwrap();
        let hooks = old["hooks"].as_object_mut().unwrap();
        assert!(hooks.remove("subagentStart").is_some() && hooks.remove("subagentStop").is_some());
        let old = serde_json::to_string_pretty(&old).unwrap();
        assert_eq!(
            HOOKS.judge(&old, &ctx()),
            Ok(EntryState::Outdated("10 of 12 events current".into()))
        );
        // What `install` does with an outdated file: ours out, ours in.
        let upgraded = HOOKS
            .add(&HOOKS.remove(&old, None, &ctx()).unwrap(), &ctx())
            .unwrap();
        assert_eq!(HOOKS.judge(&upgraded, &ctx()), Ok(EntryState::Current));
        let v: Value = serde_json::from_str(&upgraded).unwrap();
        for event in ["subagentStart", "subagentStop"] {
            assert_eq!(
                v["hooks"][event],
                json!([{"type": "command", "timeoutSec": 30,
                    "bash": format!("\"/opt/sp/bin/sessionpipe-hook\" copilot-cli {event}")}])
            );
        }
        assert!(v["hooks"].get("userPromptTransformed").is_none());
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
