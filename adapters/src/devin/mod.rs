//! Devin CLI (`devin`): ADAPTERS.md's Devin row.
//!
//! Owns the mapping of Devin's Claude-shaped hook payloads and where its hooks are
//! written: the `hooks` key of the user config file. Devin's payloads differ from
//! Claude Code's in what they lack (no `cwd`, no `transcript_path`, a word-word
//! slug for a session id) and in `tool_response`, which is `{success, output,
//! error}`. The folder comes from `DEVIN_PROJECT_DIR` alone.
//!
//! Tier 2, facts and backfill come from Devin's session store, one SQLite
//! database for every session, read read-only (`store`): a session's transcript
//! is addressed `<database>#<session id>` (`transcript`), its facts are the
//! store's row, first prompt, installed version and org id (`facts`), and past
//! sessions are the store's rows (`backfill`).
//!
//! Must not register an event Devin does not know: one unknown name makes Devin
//! reject the whole file and run none of its hooks, ours or anyone's. Must not
//! invent what Devin does not say: no `Stop` is guaranteed, and none is made up.
//! Must never write to the store.

mod backfill;
mod facts;
mod store;
#[cfg(test)]
mod testdb;
mod transcript;

use harness::claude_shaped::{
    self, Call, Folder, NotMapped, PermissionId, Read, Row, Rule, Shaped, StopWithout, Table,
    Trigger,
};
use harness::install::{ClaudeHooks, HookEvent, HookInstall, Host, Target};
use harness::payload::{CLAUDE_TOOL_KEYS, capped, error_text, payload_object, str_of};
use harness::transcript::TranscriptSource;
use harness::{Adapter, Job, MapError, Mapped, SessionFiles};
use protocol::*;
use serde_json::{Map, Value};
use std::path::PathBuf;
use std::sync::LazyLock;

pub struct Devin;

const NAME: &str = "devin";

/// Every event name Devin reads; any other in the file disables all of it.
const DEVIN_EVENTS: &[&str] = &[
    "PreToolUse",
    "PostToolUse",
    "UserPromptSubmit",
    "Stop",
    "PostCompaction",
    "SessionStart",
    "SessionEnd",
    "PermissionRequest",
];

/// ADAPTERS.md's Devin row: exactly Devin's eight events, the matcher (a regex,
/// where `""` matches every tool) only where Devin matches on a tool name. The
/// folder comes from `DEVIN_PROJECT_DIR` alone: the payload never names it, and
/// the hook's own working directory is not taken for it. The store's messages
/// carry no prompt id to tell a prompt's own turn by, so a prompt reads the turns
/// a later ask closed; a Stop is not guaranteed (a turn whose tool was rejected
/// ended with no Stop, ADAPTERS.md Quirks), so a session's end reads everything;
/// the store has no interruption record to look for.
static TABLE: Table = Table {
    harness: NAME,
    session_key: "session_id",
    tool: CLAUDE_TOOL_KEYS,
    agent_keys: &["agent_id"],
    folder: &[Folder::Env("DEVIN_PROJECT_DIR")],
    model_key: None,
    transcript_key: None,
    start_keys: &["source"],
    start_words: &[],
    end_words: &[],
    folded_names: false,
    interruptions: false,
    timeout_s: 5,
    rows: &[
        Row::new(
            HookEvent::plain("SessionStart"),
            Rule::SessionStart,
            Read::Closed,
        ),
        Row::new(
            HookEvent::plain("UserPromptSubmit"),
            Rule::Prompt,
            Read::Closed,
        ),
        Row::new(
            HookEvent::matched("PreToolUse"),
            Rule::ToolStart,
            Read::Nothing,
        ),
        Row::new(
            HookEvent::matched("PostToolUse"),
            Rule::ToolEnd { ok: true },
            Read::Nothing,
        ),
        // This payload carries the tool-use id (it follows the PreToolUse of the
        // same id), so the attention is named by it; minted the way Claude
        // Code's is only if a build ever leaves it out.
        Row::new(
            HookEvent::matched("PermissionRequest"),
            Rule::Permission(PermissionId::ToolUseOrMinted),
            Read::Nothing,
        ),
        // Ended on a tool call: its turn as it stands, not a later one.
        Row::new(
            HookEvent::plain("Stop"),
            Rule::TurnEnd(TurnEndReason::Stop),
            Read::StopWords {
                otherwise: StopWithout::AskedBefore,
            },
        ),
        // Devin has no pre-compaction hook and says nothing of who asked.
        Row::new(
            HookEvent::plain("PostCompaction"),
            Rule::Compact(Trigger::Auto),
            Read::Closed,
        ),
        Row::new(HookEvent::plain("SessionEnd"), Rule::SessionEnd, Read::All),
    ],
};

static HOOKS: LazyLock<ClaudeHooks> = LazyLock::new(|| ClaudeHooks {
    layout: TABLE.layout(),
    accepted_events: Some(DEVIN_EVENTS),
});

impl Adapter for Devin {
    fn name(&self) -> &'static str {
        NAME
    }

    fn map(&self, job: &Job) -> Result<Mapped, MapError> {
        claude_shaped::map(self, job)
    }

    fn hooks(&self) -> Option<&dyn HookInstall> {
        Some(self)
    }

    /// The session's transcript is its chain in the store, when the store
    /// exists; what each event reads is the table's.
    fn files(&self, job: &Job) -> SessionFiles {
        claude_shaped::files(self, job)
    }

    fn transcript(&self) -> Option<&dyn TranscriptSource> {
        Some(&transcript::DevinTranscript)
    }

    fn facts(&self, job: &Job, _files: &SessionFiles) -> SessionBlock {
        match payload_object(job)
            .ok()
            .and_then(|p| str_of(&p, "session_id"))
        {
            Some(id) => facts::facts(job, &id),
            None => SessionBlock::default(),
        }
    }

    fn backfill(&self, host: &Host, since_ms: i64) -> Vec<harness::backfill::Backfilled> {
        let var = |k: &str| host.var(k).map(str::to_string);
        backfill::sessions(
            &store::data_dir(&host.home, &var),
            &store::config_dir(&host.home, &var),
            &host.home,
            since_ms,
        )
    }
}

impl Shaped for Devin {
    fn table(&self) -> &'static Table {
        &TABLE
    }

    fn adjust(&self, call: &Call<'_>, event: &mut EventData) -> Result<(), NotMapped> {
        if let EventData::ToolEnded(ended) = event {
            tool_result(call.payload, ended);
        }
        Ok(())
    }

    /// `<database>#<session id>` in Devin's store, when the store exists.
    fn transcript(&self, job: &Job, p: &Map<String, Value>) -> Option<PathBuf> {
        let home = job.home()?;
        let id = str_of(p, "session_id")?;
        let var = |k: &str| job.env(k).map(str::to_string);
        let database = store::database(&store::data_dir(&home, &var));
        database.is_file().then(|| store::address(&database, &id))
    }
}

/// `tool.ended` from Devin's `tool_response: {success, output, error}`. A response
/// without `success` is judged by its error; one that is not an object is the
/// output as it stands.
fn tool_result(p: &Map<String, Value>, ended: &mut ToolEnded) {
    let response = p.get("tool_response");
    let field = |key: &str| response.and_then(|r| r.get(key));
    let error = error_text(field("error"));
    ended.ok = field("success")
        .and_then(Value::as_bool)
        .unwrap_or(error.is_none());
    ended.error = error
        .filter(|e| !e.is_empty())
        .map(|e| harness::payload::cut_chars(&e, harness::payload::MAX_ERROR_CHARS));
    if response.is_some_and(Value::is_object) {
        ended.output = field("output").filter(|v| !v.is_null()).map(capped);
    }
}

impl HookInstall for Devin {
    /// The user config file, the only place a user-wide Devin hook lives
    /// (`.devin/hooks.v1.json` is per project). Not found when Devin's config
    /// folder does not exist and `devin` is not on `PATH`.
    fn looked_for(&self, host: &Host) -> Vec<String> {
        vec![
            host.show(&store::config_dir(&host.home, &|k| {
                host.var(k).map(str::to_string)
            })),
            "`devin` on PATH".into(),
        ]
    }

    fn targets(&self, host: &Host) -> Vec<Target> {
        let dir = store::config_dir(&host.home, &|k| host.var(k).map(str::to_string));
        if !dir.is_dir() && !host.on_path("devin") {
            return Vec::new();
        }
        vec![Target::shared(dir.join("config.json"), &*HOOKS)]
    }

    fn note(&self) -> Option<&'static str> {
        Some(
            "`/hooks` inside devin lists the hooks that loaded; one event name Devin does not know in config.json disables every hook in it",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness::Mapping;
    use harness::transcript::Want;
    use serde_json::json;
    use std::collections::BTreeMap;
    use std::path::Path;

    const CALL: &str = "call_e4ee5fa9d8e744d18ac42d8e#42f1582708a345a09d67f3e7324bcede";

    fn job(event: &str, extra: Value) -> Job {
        let mut p = json!({
            "hook_event_name": event,
            "session_id": "frill-vulture",
            "prompt_id": "715ae593-e501-4349-b11f-ed487c21047f",
        });
        p.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        Job {
            harness: NAME.into(),
            event: event.into(),
            argv: vec![NAME.into(), event.into()],
            at_ns: 1_700_000_000_000_000_000,
            payload: p.to_string().into_bytes(),
            env: BTreeMap::from([
                ("HOME".to_string(), "/home/ann".to_string()),
                (
                    "DEVIN_PROJECT_DIR".to_string(),
                    "/home/ann/src/app".to_string(),
                ),
            ]),
            ..Default::default()
        }
    }

    fn mapped(j: &Job) -> Mapping {
        match Devin.map(j).unwrap() {
            Mapped::Events(m) => *m,
            Mapped::Ignored(why) => panic!("ignored: {why}"),
        }
    }

    fn only(event: &str, extra: Value) -> Value {
        let m = mapped(&job(event, extra));
        assert_eq!(m.session_id, "frill-vulture");
        assert_eq!(m.block.cwd.as_deref(), Some("~/src/app"));
        assert_eq!(m.events.len(), 1);
        let (kind, data) = m.events[0].clone().into_parts();
        json!({"type": kind, "data": data})
    }

    #[test]
    fn tool_response_gives_ok_error_and_output() {
        let failed = only(
            "PostToolUse",
            json!({"tool_name": "exec", "tool_use_id": CALL,
                   "tool_response": {"success": false, "output": "", "error": "exit status 2"}}),
        );
        assert_eq!(failed["type"], "tool.ended");
        assert_eq!(failed["data"]["ok"], false);
        assert_eq!(failed["data"]["error"], "exit status 2");
        assert_eq!(failed["data"]["output"], "");
        assert_eq!(failed["data"]["call_id"], CALL);
        let ok = only(
            "PostToolUse",
            json!({"tool_name": "read", "tool_response": {"success": true, "output": {"lines": 3}, "error": null}}),
        );
        assert_eq!(ok["data"]["ok"], true);
        assert_eq!(ok["data"]["output"], json!({"lines": 3}));
        assert!(ok["data"].get("error").is_none());
        // No `success`: the error decides; not an object: it is the output.
        let judged = only(
            "PostToolUse",
            json!({"tool_name": "x", "tool_response": {"error": "denied"}}),
        );
        assert_eq!(judged["data"]["ok"], false);
        let bare = only(
            "PostToolUse",
            json!({"tool_name": "x", "tool_response": "plain"}),
        );
        assert_eq!(
            (bare["data"]["ok"].clone(), bare["data"]["output"].clone()),
            (json!(true), json!("plain"))
        );
    }

    #[test]
    fn permission_is_named_by_its_tool_use_id() {
        let e = only(
            "PermissionRequest",
            json!({"tool_name": "exec", "tool_use_id": CALL, "tool_input": {"command": "rm -rf build"}}),
        );
        assert_eq!(
            e["data"],
            json!({"attention_id": CALL, "kind": "permission", "tool": "exec", "message": "exec rm -rf build"})
        );
        let minted = only(
            "PermissionRequest",
            json!({"tool_name": "exec", "tool_input": {"command": "ls"}}),
        );
        assert!(
            minted["data"]["attention_id"]
                .as_str()
                .unwrap()
                .starts_with("perm-")
        );
    }

    #[test]
    fn the_other_events() {
        assert_eq!(
            only("SessionStart", json!({"source": "resume"}))["data"],
            json!({"source": "resume"})
        );
        assert_eq!(
            only("UserPromptSubmit", json!({"prompt": "héllo"}))["data"],
            json!({"turn_id": "715ae593-e501-4349-b11f-ed487c21047f", "prompt_chars": 5})
        );
        assert_eq!(
            only("PostCompaction", json!({}))["data"],
            json!({"trigger": "auto"})
        );
        assert_eq!(
            only("Stop", json!({"stop_hook_active": false}))["data"]["reason"],
            "stop"
        );
        assert_eq!(
            only("SessionEnd", json!({"reason": "exit"}))["data"],
            json!({"reason": "exit"})
        );
    }

    #[test]
    fn unknown_events_are_ignored_and_the_folder_comes_only_from_the_environment() {
        assert!(matches!(
            Devin.map(&job("Notification", json!({}))).unwrap(),
            Mapped::Ignored(_)
        ));
        let mut j = job("Stop", json!({}));
        j.env.remove("DEVIN_PROJECT_DIR");
        j.cwd = "/home/ann/src/app".into();
        assert_eq!(mapped(&j).block.cwd, None);
        // A slug is a session id; one the protocol cannot carry is an error.
        let mut bad = job("Stop", json!({}));
        bad.payload = br#"{"session_id": "a b"}"#.to_vec();
        assert!(Devin.map(&bad).is_err());
    }

    fn host(home: &Path, vars: &[(&str, &str)]) -> Host {
        Host {
            home: home.to_path_buf(),
            vars: vars
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    #[test]
    fn the_config_file_follows_xdg_and_needs_devin_to_be_there() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        assert!(Devin.targets(&host(&home, &[("PATH", "")])).is_empty());
        std::fs::create_dir_all(home.join(".config/devin")).unwrap();
        let t = Devin.targets(&host(&home, &[]));
        assert_eq!(t[0].path, home.join(".config/devin/config.json"));
        let xdg = tmp.path().join("xdg");
        std::fs::create_dir_all(xdg.join("devin")).unwrap();
        let xdg_s = xdg.to_str().unwrap();
        let t = Devin.targets(&host(&home, &[("XDG_CONFIG_HOME", xdg_s)]));
        assert_eq!(t[0].path, xdg.join("devin/config.json"));
        // A relative XDG_CONFIG_HOME is ignored, as the XDG spec says.
        let t = Devin.targets(&host(&home, &[("XDG_CONFIG_HOME", "rel")]));
        assert_eq!(t[0].path, home.join(".config/devin/config.json"));
    }

    #[test]
    fn the_layout_registers_exactly_devins_events() {
        let names: Vec<&str> = HOOKS.layout.events.iter().map(|e| e.name).collect();
        let mut sorted = names.clone();
        sorted.sort();
        let mut want = DEVIN_EVENTS.to_vec();
        want.sort();
        assert_eq!(sorted, want);
        let matched: Vec<&str> = HOOKS
            .layout
            .events
            .iter()
            .filter(|e| e.matcher.is_some())
            .map(|e| e.name)
            .collect();
        assert_eq!(matched, ["PreToolUse", "PostToolUse", "PermissionRequest"]);
    }

    #[test]
    fn each_event_reads_what_it_ends_and_the_store_is_the_transcript() {
        let home = tempfile::tempdir().unwrap();
        let with_home = |event: &str, extra: Value| {
            let mut j = job(event, extra);
            j.env
                .insert("HOME".into(), home.path().display().to_string());
            j
        };
        let plan = |event: &str, extra: Value| Devin.files(&with_home(event, extra)).read;
        assert_eq!(
            plan("UserPromptSubmit", json!({})).unwrap().want,
            Want::Closed
        );
        let stop = plan(
            "Stop",
            json!({"last_assistant_message": "alpha-token-marker-42"}),
        )
        .unwrap();
        assert_eq!(
            (stop.want, stop.after, stop.hold),
            (Want::EndedWith("alpha-token-marker-42".into()), true, true)
        );
        assert_eq!(
            plan("Stop", json!({})).unwrap().want,
            Want::AskedBefore(1_700_000_000_000)
        );
        let end = plan("SessionEnd", json!({})).unwrap();
        assert_eq!((end.want, end.after), (Want::All, false));
        assert_eq!(plan("SessionStart", json!({})).unwrap().want, Want::Closed);
        assert_eq!(plan("PreToolUse", json!({})), None);

        // No store, no transcript; the folder is DEVIN_PROJECT_DIR's.
        let f = Devin.files(&with_home("Stop", json!({})));
        assert_eq!(f.transcript, None);
        assert_eq!(f.folder.as_deref(), Some(Path::new("/home/ann/src/app")));
        let data = home.path().join(".local/share/devin/cli");
        std::fs::create_dir_all(&data).unwrap();
        std::fs::write(data.join("sessions.db"), "").unwrap();
        let f = Devin.files(&with_home("Stop", json!({})));
        assert_eq!(
            f.transcript,
            Some(store::address(&data.join("sessions.db"), "frill-vulture"))
        );
    }
}
