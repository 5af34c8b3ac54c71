//! Kiro (`kiro`): ADAPTERS.md's Kiro row, read against Kiro's hooks pages
//! (kiro.dev/docs/hooks, the CLI's v3 hooks). No Kiro runs where this was
//! written: the payloads it is tested on are built from the documented shapes
//! and say so (`conformance/harness/kiro/`), and the row is still *recording
//! pending*.
//!
//! Owns the mapping of Kiro's command hooks (JSON on stdin: `hook_event_name`,
//! `session_id`, `cwd`, and for tools `tool_name`, `tool_input`,
//! `tool_response`) and sessionpipe's own hooks file in Kiro's hooks folder,
//! `~/.kiro/hooks/sessionpipe.json`, in the v1 schema (`hooks_file.rs`). A
//! saved file (`PostFileSave`) becomes `files.changed`, its path relative to
//! the session's folder (or the home); the docs name no key for it, so the
//! Claude-shaped `file_path` is read, and `file_paths` / `paths` as lists.
//!
//! **No session end.** Kiro fires no hook when a session is over (its v3 table
//! calls `Stop` the session's end, its IDE pages the end of the agent's turn;
//! ADAPTERS.md maps it to `turn.ended`, and so does this). A Kiro session
//! therefore never sends `session.ended`: after its last `turn.ended` it falls
//! silent, and a receiver reads "done" from that silence, as its own reading.
//!
//! **No control.** Only `PreToolUse` and `UserPromptSubmit` can block (exit 2)
//! and `Stop` takes no answer, so there is no `turn` rung and nothing here
//! prints: Kiro shows a hook's stdout to the agent. Must not write any file in
//! Kiro's folders but its own, and no transcript is read (none is named).

mod hooks_file;

use harness::claude_shaped::{self, Call, Folder, NotMapped, Read, Row, Rule, Shaped, Table};
use harness::install::{HookEvent, HookInstall};
use harness::payload::{ToolKeys, str_of};
use harness::{Adapter, Job, MapError, Mapped, SessionFiles};
use protocol::*;
use serde_json::Value;

pub struct Kiro;

const NAME: &str = "kiro";

/// The one event mapped beside the table: a file saved in the workspace.
const FILE_SAVE: &str = "PostFileSave";

/// ADAPTERS.md's Kiro row. Kiro names no turn and no tool-use id in what it
/// documents; the keys are read where a build sends them. Names match ignoring
/// case (the CLI's older `userPromptSubmit` is `UserPromptSubmit`).
static TABLE: Table = Table {
    harness: NAME,
    session_key: "session_id",
    tool: ToolKeys {
        tool: "tool_name",
        call_id: "tool_use_id",
        turn_id: "turn_id",
        agent_id: "agent_id",
        input: "tool_input",
        output: "tool_response",
        ms: "duration_ms",
    },
    agent_keys: &["agent_id"],
    folder: &[Folder::Payload("cwd"), Folder::HookCwd],
    model_key: None,
    transcript_key: None,
    start_keys: &["source"],
    start_words: &[],
    end_words: &[],
    folded_names: true,
    interruptions: false,
    timeout_s: 5,
    rows: &[
        Row::new(
            HookEvent::plain("SessionStart"),
            Rule::SessionStart,
            Read::Nothing,
        ),
        Row::new(
            HookEvent::plain("UserPromptSubmit"),
            Rule::Prompt,
            Read::Nothing,
        ),
        Row::new(
            HookEvent::plain("PreToolUse"),
            Rule::ToolStart,
            Read::Nothing,
        ),
        Row::new(
            HookEvent::plain("PostToolUse"),
            Rule::ToolEnd { ok: true },
            Read::Nothing,
        ),
        Row::new(
            HookEvent::plain("Stop"),
            Rule::TurnEnd(TurnEndReason::Stop),
            Read::Nothing,
        ),
    ],
};

impl Adapter for Kiro {
    fn reports_file_changes(&self) -> bool {
        true
    }
    fn name(&self) -> &'static str {
        NAME
    }

    fn map(&self, job: &Job) -> Result<Mapped, MapError> {
        claude_shaped::map(self, job)
    }

    fn hooks(&self) -> Option<&dyn HookInstall> {
        Some(self)
    }

    fn files(&self, job: &Job) -> SessionFiles {
        claude_shaped::files(self, job)
    }
}

impl Shaped for Kiro {
    fn table(&self) -> &'static Table {
        &TABLE
    }

    /// A tool's result says whether it worked: `tool_response.success: false`
    /// is a failure, its `error` (or `result`) the failure's words.
    fn adjust(&self, call: &Call<'_>, event: &mut EventData) -> Result<(), NotMapped> {
        if let EventData::ToolEnded(t) = event
            && let Some(r) = call.payload.get("tool_response").and_then(Value::as_object)
            && r.get("success") == Some(&Value::Bool(false))
        {
            t.ok = false;
            let why = harness::payload::error_text(r.get("error").or_else(|| r.get("result")));
            t.error =
                why.map(|e| harness::payload::cut_chars(&e, harness::payload::MAX_ERROR_CHARS));
        }
        Ok(())
    }

    /// `PostFileSave` → `files.changed`, relative to the session's folder.
    fn unlisted(&self, call: &Call<'_>) -> Result<Vec<EventData>, NotMapped> {
        if !call.event.eq_ignore_ascii_case(FILE_SAVE) {
            return Err(NotMapped::Ignored(format!("{} is not mapped", call.event)));
        }
        let p = call.payload;
        let mut named: Vec<&str> = p
            .get("file_path")
            .and_then(Value::as_str)
            .into_iter()
            .collect();
        for key in ["file_paths", "paths"] {
            if let Some(list) = p.get(key).and_then(Value::as_array) {
                named.extend(list.iter().filter_map(Value::as_str));
            }
        }
        let roots: Vec<String> = str_of(p, "cwd").into_iter().collect();
        let home = call.job.home().map(|h| h.to_string_lossy().into_owned());
        let paths = protocol::changes::relative_paths(named, &roots, home.as_deref());
        if paths.is_empty() {
            return Err(NotMapped::Ignored(
                "the save names no file inside the session's folder or the home".into(),
            ));
        }
        Ok(vec![EventData::FilesChanged(FilesChanged { paths })])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness::install::Host;
    use serde_json::json;
    use std::collections::BTreeMap;

    const SESSION: &str = "4f2c9d1e-8a7b-4c3d-9e0f-1a2b3c4d5e6f";

    fn job(event: &str, extra: Value) -> Job {
        let mut p =
            json!({"hook_event_name": event, "session_id": SESSION, "cwd": "/home/ann/src/app"});
        p.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        Job {
            harness: NAME.into(),
            event: event.into(),
            argv: vec![NAME.into(), event.into()],
            at_ns: 1_700_000_000_123_000_000,
            payload: p.to_string().into_bytes(),
            env: BTreeMap::from([("HOME".to_string(), "/home/ann".to_string())]),
            ..Default::default()
        }
    }

    fn outcome(event: &str, extra: Value) -> Result<(SessionBlock, Value), String> {
        match Kiro.map(&job(event, extra)).unwrap() {
            Mapped::Events(m) => {
                assert_eq!(m.session_id, SESSION);
                assert_eq!(m.events.len(), 1);
                let (kind, data) = m.events[0].clone().into_parts();
                Ok((m.block, json!({"type": kind, "data": data})))
            }
            Mapped::Ignored(why) => Err(why),
        }
    }

    fn only(event: &str, extra: Value) -> Value {
        outcome(event, extra).unwrap().1
    }

    #[test]
    fn each_trigger_maps_to_its_event() {
        let (block, start) = outcome("SessionStart", json!({})).unwrap();
        assert_eq!(
            start,
            json!({"type": "session.started", "data": {"source": "unknown"}})
        );
        assert_eq!(block.cwd.as_deref(), Some("~/src/app"));
        assert_eq!(
            only("UserPromptSubmit", json!({"prompt": "add tests"})),
            json!({"type": "turn.started", "data": {"prompt_chars": 9}})
        );
        let input = json!({"command": "cargo test"});
        assert_eq!(
            only(
                "PreToolUse",
                json!({"tool_name": "execute_bash", "tool_input": input})
            ),
            json!({"type": "tool.started", "data": {"tool": "execute_bash", "input": input}})
        );
        assert_eq!(
            only("Stop", json!({})),
            json!({"type": "turn.ended", "data": {"reason": "stop"}})
        );
        // The CLI's older camelCase names, as `hook_event_name` carries them.
        let mut j = job(
            "",
            json!({"hook_event_name": "userPromptSubmit", "prompt": "x"}),
        );
        j.argv = vec![NAME.into()];
        assert!(matches!(Kiro.map(&j).unwrap(), Mapped::Events(_)));
        assert!(outcome("SessionEnd", json!({})).is_err(), "Kiro has none");
    }

    #[test]
    fn a_tool_result_says_whether_it_worked() {
        let ok = only(
            "PostToolUse",
            json!({"tool_name": "fs_write", "tool_input": {"path": "a"}, "tool_response": {"success": true, "result": ["done"]}}),
        );
        assert_eq!(ok["data"]["ok"], true);
        let failed = only(
            "PostToolUse",
            json!({"tool_name": "execute_bash", "tool_response": {"success": false, "result": "exit status 1"}}),
        );
        assert_eq!(
            (&failed["data"]["ok"], &failed["data"]["error"]),
            (&json!(false), &json!("exit status 1"))
        );
    }

    #[test]
    fn saved_files_are_relative_to_the_folder() {
        assert_eq!(
            only(
                "PostFileSave",
                json!({"file_path": "/home/ann/src/app/src/lib.rs"})
            ),
            json!({"type": "files.changed", "data": {"paths": ["src/lib.rs"]}})
        );
        assert_eq!(
            only(
                "PostFileSave",
                json!({"paths": ["README.md", "/home/ann/.kiro/steering/x.md"]})
            )["data"]["paths"],
            json!(["README.md", "~/.kiro/steering/x.md"])
        );
        assert!(outcome("PostFileSave", json!({"file_path": "/etc/hosts"})).is_err());
        assert!(outcome("PostFileSave", json!({})).is_err());
    }

    #[test]
    fn a_payload_without_a_session_is_refused() {
        let j = Job {
            payload: br#"{"hook_event_name": "Stop", "cwd": "/w"}"#.to_vec(),
            ..job("Stop", json!({}))
        };
        assert!(Kiro.map(&j).is_err());
        assert!(
            Kiro.control().is_none(),
            "no turn rung: Kiro's Stop takes no answer"
        );
    }

    #[test]
    fn our_own_file_in_kiros_hooks_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().to_path_buf();
        let host = |path: &str| Host {
            home: home.clone(),
            vars: [("PATH".to_string(), path.to_string())].into(),
        };
        assert!(Kiro.targets(&host("")).is_empty());
        std::fs::create_dir_all(home.join(".kiro")).unwrap();
        let t = &Kiro.targets(&host(""))[0];
        assert_eq!(t.path, home.join(".kiro/hooks/sessionpipe.json"));
        assert!(t.owned);
    }

    /// Every fixture of ours says it was built from the documented shape.
    #[test]
    fn the_fixtures_say_they_are_built_not_recorded() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../conformance/harness")
            .join(NAME);
        let mut n = 0;
        for f in std::fs::read_dir(dir).unwrap() {
            let doc: Value =
                serde_json::from_slice(&std::fs::read(f.unwrap().path()).unwrap()).unwrap();
            let how = doc["recorded"]["how"].as_str().unwrap();
            assert!(
                how.contains("documented shape") && how.contains("not recorded"),
                "{how}"
            );
            n += 1;
        }
        assert!(n >= 6, "{n} fixtures");
    }
}
