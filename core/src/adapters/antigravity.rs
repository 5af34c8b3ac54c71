//! Antigravity (`antigravity`): ADAPTERS.md's Antigravity row.
//!
//! Owns the mapping of Antigravity's hook payloads and its hooks file,
//! `~/.gemini/config/hooks.json`, whose top-level keys are hook *names*: ours is
//! one named entry, `sessionpipe`, written and removed by `jsonedit` so that every
//! other byte of the file stays as it was. Antigravity's payloads are camelCase
//! and carry no event name (it rides in argv), no prompt and no tool-use id; it
//! has no session end. What it cannot tell is left out, not made up: a later
//! invocation or a PostToolUse that names no tool is only a heartbeat, which
//! reaches tier-0 destinations alone.
//!
//! Must never register `PreToolUse`: Antigravity reads a PreToolUse answer
//! without a `decision` as a deny, so our `{}` would block every tool. An entry
//! left by an older version is reported `outdated` and removed by `install`; the
//! hook answers one still loaded with an `ask` (`hook/src/stdout_rule.rs`).

use super::common::{
    MAX_ERROR_CHARS, capped, cut_chars, cwd_for, error_text, payload_object, session_id, str_of,
    turn_error, u64_of,
};
use super::{Adapter, MapError, Mapped, Mapping, Memo};
use crate::install::hooks_json::{command, group};
use crate::install::jsonedit::{Doc, Edits};
use crate::install::{
    ConfigFormat, Ctx, EntryState, HookEvent, HookInstall, HooksLayout, Host, Target,
};
use crate::job::Job;
use crate::protocol::*;
use serde_json::{Map, Value};
use std::path::Path;

pub struct Antigravity;

const NAME: &str = "antigravity";

/// The hook name our entry is filed under in `hooks.json`.
const ENTRY: &str = "sessionpipe";

/// A heartbeat stands in for activity a tier-0 destination cannot see, at most
/// once a minute (PROTOCOL-NOTES §3).
const HEARTBEAT_EVERY_MS: i64 = 60_000;

impl Adapter for Antigravity {
    fn name(&self) -> &'static str {
        NAME
    }

    fn map(&self, job: &Job) -> Result<Mapped, MapError> {
        let p = payload_object(job)?;
        let session_id = session_id(&p, "conversationId")?;
        if job.event.is_empty() {
            return Err(
                "the hook ran without an event in argv, and Antigravity's payload names none"
                    .into(),
            );
        }
        let events = match job.event.as_str() {
            // The first invocation opens the conversation and its turn; Antigravity
            // has no prompt hook, so the turn carries no id and no prompt size.
            "PreInvocation" if u64_of(&p, "invocationNum") == Some(0) => vec![
                EventData::SessionStarted(SessionStarted {
                    source: StartSource::Unknown,
                }),
                EventData::TurnStarted(TurnStarted::default()),
            ],
            "PreInvocation" | "PostInvocation" => vec![heartbeat()],
            "PostToolUse" => vec![tool_result(&p).unwrap_or_else(heartbeat)],
            "Stop" => vec![EventData::TurnEnded(turn_end(&p))],
            "PreToolUse" => {
                return Ok(Mapped::Ignored(
                    "a stale PreToolUse entry (sessionpipe no longer registers it; `sessionpipe install` removes it)".into(),
                ));
            }
            other => return Ok(Mapped::Ignored(format!("{other} is not mapped"))),
        };
        let block = SessionBlock {
            cwd: first_workspace(&p).map(|folder| cwd_for(job, &folder)),
            // `auto` is Antigravity choosing per request: no model is named.
            model: str_of(&p, "modelName").filter(|m| !m.eq_ignore_ascii_case("auto")),
            ..Default::default()
        };
        Ok(Mapped::Events(Box::new(Mapping {
            session_id,
            block,
            harness_version: None,
            events,
        })))
    }

    /// A conversation starts once: a later first invocation is a new turn of it,
    /// not a new session. Heartbeats are kept to one a minute, counted from the
    /// last one or the turn's start (which a tier-0 destination sees itself).
    fn remember(&self, job: &Job, events: &mut Vec<EventData>, memo: &mut Memo) {
        if memo.contains_key("seen") {
            events.retain(|e| !matches!(e, EventData::SessionStarted(_)));
        }
        memo.insert("seen".into(), Value::Bool(true));
        let now = job.at_ms();
        let last = memo.get("beat_ms").and_then(Value::as_i64);
        // A clock that went back counts as due, so heartbeats never stop for good.
        let due = last.is_none_or(|t| now < t || now - t >= HEARTBEAT_EVERY_MS);
        events.retain(|e| due || !matches!(e, EventData::SessionHeartbeat(_)));
        if events.iter().any(|e| {
            matches!(
                e,
                EventData::SessionHeartbeat(_) | EventData::TurnStarted(_)
            )
        }) {
            memo.insert("beat_ms".into(), Value::from(now));
        }
    }

    fn hooks(&self) -> Option<&dyn HookInstall> {
        Some(self)
    }
}

fn heartbeat() -> EventData {
    EventData::SessionHeartbeat(Empty {})
}

/// `tool.ended` for a PostToolUse that names its tool (`toolCall.name`); none
/// when it names only a step, as every documented one does.
fn tool_result(p: &Map<String, Value>) -> Option<EventData> {
    let call = p.get("toolCall")?.as_object()?;
    let error = error_text(p.get("error"));
    Some(EventData::ToolEnded(ToolEnded {
        tool: str_of(call, "name")?,
        ok: error.is_none(),
        error: error.map(|e| cut_chars(&e, MAX_ERROR_CHARS)),
        input: call.get("args").map(capped),
        ..Default::default()
    }))
}

/// `turn.ended`: `terminationReason: error` is an error, every other reason
/// (the model stopped, the person stopped it, a limit) a stop.
fn turn_end(p: &Map<String, Value>) -> TurnEnded {
    let reason = match str_of(p, "terminationReason").as_deref() {
        Some("error") => TurnEndReason::Error,
        _ => TurnEndReason::Stop,
    };
    let mut ended = TurnEnded::new(None, reason);
    ended.error = turn_error(p.get("error"));
    ended
}

/// The first of `workspacePaths` (a list, or one string) as a folder.
fn first_workspace(p: &Map<String, Value>) -> Option<String> {
    let first = match p.get("workspacePaths")? {
        Value::Array(list) => list.iter().find_map(Value::as_str)?,
        Value::String(one) => one.as_str(),
        _ => return None,
    };
    let folder = folder_of(first);
    (!folder.is_empty()).then_some(folder)
}

/// A workspace path as a folder: a plain path as is, a `file://` URI decoded
/// (`file:///home/a%20b` → `/home/a b`, `file:///C:/x` → `C:/x`, a host other
/// than `localhost` → `//host/share`).
fn folder_of(path: &str) -> String {
    let has_scheme = path.len() >= 7 && path[..7].eq_ignore_ascii_case("file://");
    if !has_scheme {
        return path.to_string();
    }
    let rest = &path[7..];
    let (host, local) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let decoded = percent_decode(local);
    if !host.is_empty() && !host.eq_ignore_ascii_case("localhost") {
        return format!("//{}{decoded}", percent_decode(host));
    }
    let b = decoded.as_bytes();
    if b.len() >= 3 && b[0] == b'/' && b[1].is_ascii_alphabetic() && b[2] == b':' {
        return decoded[1..].to_string();
    }
    decoded
}

/// `%XX` escapes as bytes; the result read as UTF-8 (invalid bytes replaced).
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%'
            && let (Some(hi), Some(lo)) = (
                b.get(i + 1).and_then(|c| hex(*c)),
                b.get(i + 2).and_then(|c| hex(*c)),
            )
        {
            out.push((hi * 16 + lo) as u8);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The events of our entry, in Antigravity's own shapes: the tool event takes a
/// matcher group (`"*"`, every tool), the invocation and stop events a handler
/// list. Timeouts in seconds.
static LAYOUT: HooksLayout = HooksLayout {
    events: &[
        HookEvent::plain("PreInvocation"),
        HookEvent::plain("PostInvocation"),
        HookEvent::with_matcher("PostToolUse", "*"),
        HookEvent::plain("Stop"),
    ],
    timeout_s: 5,
    timeout_unit_ms: false,
    handler_name: None,
};

/// Our entry as it should be now.
fn entry(hook_bin: &Path, harness: &str) -> Value {
    let mut m = Map::new();
    m.insert("enabled".into(), Value::Bool(true));
    for e in LAYOUT.events {
        let g = group(&LAYOUT, e, command(hook_bin, harness, e.name));
        let item = if e.matcher.is_some() {
            g
        } else {
            g["hooks"][0].clone()
        };
        m.insert(e.name.into(), Value::Array(vec![item]));
    }
    Value::Object(m)
}

/// Why the entry in the file is not the one we would write.
fn differences(have: &Value, want: &Value) -> String {
    let mut why = Vec::new();
    let mut rest = have.clone();
    if let Some(obj) = rest.as_object_mut() {
        if obj.remove("PreToolUse").is_some() {
            why.push(
                "a stale PreToolUse hook, which Antigravity reads as a deny (sessionpipe no longer registers it)",
            );
        }
        if obj.get("enabled") == Some(&Value::Bool(false)) {
            why.push("disabled (\"enabled\": false)");
            obj.insert("enabled".into(), Value::Bool(true));
        }
    }
    if rest != *want {
        why.push("from another version or edited");
    }
    why.join(", ")
}

/// `hooks.json`: our named entry among the person's others.
struct AntigravityHooks;

static HOOKS: AntigravityHooks = AntigravityHooks;

fn object_doc(text: &str) -> Result<Doc<'_>, String> {
    let doc = Doc::parse(text)?;
    if !doc.root.is_object() {
        return Err("the file's top level is not a JSON object".into());
    }
    Ok(doc)
}

impl ConfigFormat for AntigravityHooks {
    fn judge(&self, text: &str, ctx: &Ctx<'_>) -> Result<EntryState, String> {
        let doc = object_doc(text)?;
        let ours: Vec<_> = doc
            .root
            .members()
            .iter()
            .filter(|m| m.key == ENTRY)
            .collect();
        let [one] = ours.as_slice() else {
            return Ok(match ours.len() {
                0 => EntryState::Missing,
                n => EntryState::Outdated(format!("{n} entries named {ENTRY}")),
            });
        };
        let have: Value = serde_json::from_str(&doc.text[one.value.start..one.value.end])
            .map_err(|e| e.to_string())?;
        let want = entry(ctx.hook_bin, ctx.harness);
        Ok(if have == want {
            EntryState::Current
        } else {
            EntryState::Outdated(differences(&have, &want))
        })
    }

    fn add(&self, text: &str, ctx: &Ctx<'_>) -> Result<String, String> {
        let fresh_file = text.trim().is_empty();
        let base = if fresh_file { "{}" } else { text };
        let doc = object_doc(base)?;
        let mut edits = Edits::default();
        edits.add_member(&doc, &doc.root, ENTRY, &entry(ctx.hook_bin, ctx.harness));
        let added = edits.apply(base);
        Ok(if fresh_file {
            format!("{added}\n")
        } else {
            added
        })
    }

    /// Removes every member named `sessionpipe` (one per pass: two removals in
    /// one object would splice overlapping separators). Nothing else is ours.
    fn remove(
        &self,
        text: &str,
        _original: Option<&str>,
        _ctx: &Ctx<'_>,
    ) -> Result<String, String> {
        let mut text = text.to_string();
        loop {
            let doc = Doc::parse(&text)?;
            let Some(i) = doc.root.members().iter().position(|m| m.key == ENTRY) else {
                return Ok(text);
            };
            let mut edits = Edits::default();
            edits.remove_member(&doc.root, i);
            text = edits.apply(&text);
        }
    }
}

impl HookInstall for Antigravity {
    /// `~/.gemini/config/hooks.json`. Found when Antigravity has left a trace in
    /// `~/.gemini` (its `config` folder, or a data dir `antigravity`,
    /// `antigravity-cli`, `antigravity-ide`, …) or its CLI (`agy`) or app launcher
    /// (`antigravity`) is on `PATH`. `~/.gemini` alone is Gemini CLI's too, and
    /// is no sign of Antigravity.
    fn targets(&self, host: &Host) -> Vec<Target> {
        let gemini = host.home.join(".gemini");
        let config = gemini.join("config");
        let data_dir = std::fs::read_dir(&gemini).is_ok_and(|entries| {
            entries.flatten().any(|e| {
                e.file_name().to_string_lossy().starts_with("antigravity") && e.path().is_dir()
            })
        });
        let found =
            config.is_dir() || data_dir || host.on_path("agy") || host.on_path("antigravity");
        if !found {
            return Vec::new();
        }
        vec![Target::shared(config.join("hooks.json"), &HOOKS)]
    }

    fn note(&self) -> Option<&'static str> {
        Some(
            "Antigravity reads its hooks when a conversation starts: conversations already open report nothing until a new one",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::BTreeMap;

    const CONV: &str = "ec33ebf9-0cba-4100-8142-c61503f6c587";

    fn job(event: &str, extra: Value, at_ms: u64) -> Job {
        let mut p = json!({
            "conversationId": CONV,
            "workspacePaths": ["file:///home/ann/src/my%20app"],
            "transcriptPath": "/home/ann/.gemini/antigravity/brain/x/transcript.jsonl",
            "artifactDirectoryPath": "/home/ann/.gemini/antigravity/brain/x",
            "modelName": "gemini-3.1-pro",
        });
        p.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        Job {
            harness: NAME.into(),
            event: event.into(),
            argv: vec![NAME.into(), event.into()],
            at_ns: at_ms * 1_000_000,
            payload: p.to_string().into_bytes(),
            env: BTreeMap::from([("HOME".to_string(), "/home/ann".to_string())]),
            ..Default::default()
        }
    }

    fn mapped(j: &Job) -> Mapping {
        match Antigravity.map(j).unwrap() {
            Mapped::Events(m) => *m,
            Mapped::Ignored(why) => panic!("ignored: {why}"),
        }
    }

    fn kinds_of(event: &str, extra: Value) -> Vec<Value> {
        mapped(&job(event, extra, 1))
            .events
            .into_iter()
            .map(|e| {
                let (kind, data) = e.into_parts();
                json!({"type": kind, "data": data})
            })
            .collect()
    }

    #[test]
    fn the_first_invocation_opens_the_session_and_its_turn() {
        let m = mapped(&job("PreInvocation", json!({"invocationNum": 0}), 1));
        assert_eq!(m.session_id, CONV);
        assert_eq!(m.block.cwd.as_deref(), Some("~/src/my app"));
        assert_eq!(m.block.model.as_deref(), Some("gemini-3.1-pro"));
        assert_eq!(
            kinds_of("PreInvocation", json!({"invocationNum": 0})),
            [
                json!({"type": "session.started", "data": {"source": "unknown"}}),
                json!({"type": "turn.started", "data": {}})
            ]
        );
        let beat = json!({"type": "session.heartbeat", "data": {}});
        for later in ["PreInvocation", "PostInvocation"] {
            let evs = kinds_of(later, json!({"invocationNum": 3}));
            assert_eq!(evs, std::slice::from_ref(&beat), "{later}");
        }
    }

    #[test]
    fn post_tool_use_is_a_heartbeat_unless_it_names_its_tool() {
        assert_eq!(
            kinds_of("PostToolUse", json!({"stepIdx": 4, "error": null}))[0]["type"],
            "session.heartbeat"
        );
        assert_eq!(
            kinds_of(
                "PostToolUse",
                json!({"stepIdx": 4, "toolCall": {"name": "run_command", "args": {"CommandLine": "ls"}}})
            )[0],
            json!({"type": "tool.ended", "data": {"tool": "run_command", "ok": true, "input": {"CommandLine": "ls"}}})
        );
        let failed = kinds_of(
            "PostToolUse",
            json!({"toolCall": {"name": "view_file"}, "error": "no such file"}),
        );
        assert_eq!(
            failed[0]["data"],
            json!({"tool": "view_file", "ok": false, "error": "no such file"})
        );
    }

    #[test]
    fn stop_ends_the_turn_by_its_termination_reason() {
        assert_eq!(
            kinds_of(
                "Stop",
                json!({"terminationReason": "model_stop", "fullyIdle": true})
            )[0],
            json!({"type": "turn.ended", "data": {"reason": "stop"}})
        );
        assert_eq!(
            kinds_of(
                "Stop",
                json!({"terminationReason": "error", "error": "quota exceeded"})
            )[0]["data"],
            json!({"reason": "error", "error": "quota exceeded"})
        );
    }

    #[test]
    fn calls_it_cannot_place() {
        let stale = job("PreToolUse", json!({"toolCall": {"name": "x"}}), 1);
        assert!(matches!(
            Antigravity.map(&stale).unwrap(),
            Mapped::Ignored(_)
        ));
        let mut no_event = job("", json!({}), 1);
        no_event.argv.truncate(1);
        assert!(Antigravity.map(&no_event).is_err());
        let mut no_id = job("Stop", json!({}), 1);
        no_id.payload = br#"{"workspacePaths": ["/w"]}"#.to_vec();
        assert!(Antigravity.map(&no_id).is_err());
    }

    #[test]
    fn one_start_per_conversation_and_a_heartbeat_a_minute() {
        let mut memo = Memo::new();
        let mut run = |event: &str, n: u64, at_ms: u64| -> Vec<&'static str> {
            let j = job(event, json!({"invocationNum": n}), at_ms);
            let mut evs = mapped(&j).events;
            Antigravity.remember(&j, &mut evs, &mut memo);
            evs.iter().map(EventData::kind).collect()
        };
        assert_eq!(
            run("PreInvocation", 0, 0),
            ["session.started", "turn.started"]
        );
        assert!(run("PreInvocation", 1, 30_000).is_empty());
        assert!(run("PostInvocation", 1, 59_999).is_empty());
        assert_eq!(run("PreInvocation", 2, 60_000), ["session.heartbeat"]);
        assert!(run("PreInvocation", 3, 61_000).is_empty());
        assert_eq!(run("Stop", 3, 62_000), ["turn.ended"]);
        // The next turn of the same conversation is a turn, not a new session.
        assert_eq!(run("PreInvocation", 0, 200_000), ["turn.started"]);
        assert!(run("PreInvocation", 1, 230_000).is_empty());
        // A clock that went back does not silence heartbeats.
        assert_eq!(run("PreInvocation", 2, 1_000), ["session.heartbeat"]);
    }

    #[test]
    fn workspace_paths_as_paths_or_file_uris() {
        for (given, folder) in [
            ("/srv/app", "/srv/app"),
            ("file:///srv/my%20app/%C3%A9", "/srv/my app/é"),
            ("FILE://localhost/srv/x", "/srv/x"),
            ("file:///C:/Users/ann/app", "C:/Users/ann/app"),
            ("file://nas/share/app", "//nas/share/app"),
            ("file:///bad%zz%4", "/bad%zz%4"),
        ] {
            assert_eq!(folder_of(given), folder, "{given}");
        }
        let one = json!({"workspacePaths": "/srv/one"});
        assert_eq!(
            first_workspace(one.as_object().unwrap()).as_deref(),
            Some("/srv/one")
        );
        let none = json!({"workspacePaths": []});
        assert_eq!(first_workspace(none.as_object().unwrap()), None);
    }

    fn ctx() -> Ctx<'static> {
        Ctx {
            harness: NAME,
            hook_bin: Path::new("/opt/sp/bin/sessionpipe-hook"),
        }
    }

    const THEIRS: &str = "{\r\n\t\"my-linter\": {\r\n\t\t\"PostToolUse\": [\r\n\t\t\t{\"matcher\": \"run_command\", \"hooks\": [{\"type\": \"command\", \"command\": \"./lint.sh\"}]}\r\n\t\t]\r\n\t},\r\n\t\"reminder\": {\"PreInvocation\": [{\"type\": \"command\", \"command\": \"./r.sh\"}]}\r\n}";

    #[test]
    fn our_entry_is_added_judged_and_removed_without_touching_theirs() {
        assert_eq!(HOOKS.judge(THEIRS, &ctx()), Ok(EntryState::Missing));
        let added = HOOKS.add(THEIRS, &ctx()).unwrap();
        assert!(added.starts_with(&THEIRS[..THEIRS.len() - 3]));
        assert!(!added.replace("\r\n", "").contains('\n'), "CRLF kept");
        let v: Value = serde_json::from_str(&added).unwrap();
        let ours = &v[ENTRY];
        assert_eq!(ours, &entry(ctx().hook_bin, NAME));
        assert_eq!(ours["enabled"], true);
        assert_eq!(ours["PostToolUse"][0]["matcher"], "*");
        assert_eq!(
            ours["Stop"][0],
            json!({"type": "command", "command": "\"/opt/sp/bin/sessionpipe-hook\" antigravity Stop", "timeout": 5})
        );
        assert!(ours.get("PreToolUse").is_none());
        assert_eq!(HOOKS.judge(&added, &ctx()), Ok(EntryState::Current));
        assert_eq!(HOOKS.remove(&added, None, &ctx()).unwrap(), THEIRS);

        let fresh = HOOKS.add("", &ctx()).unwrap();
        assert!(fresh.starts_with("{\n  \"sessionpipe\": {\n    \"enabled\": true,"));
        assert_eq!(HOOKS.remove(&fresh, None, &ctx()).unwrap(), "{}\n");
    }

    #[test]
    fn a_stale_pre_tool_use_or_an_edit_is_outdated_and_named() {
        let mut stale = entry(ctx().hook_bin, NAME);
        stale["PreToolUse"] =
            json!([{"matcher": "*", "hooks": [{"type": "command", "command": "x"}]}]);
        let text = json!({ "other": {}, ENTRY: stale }).to_string();
        let Ok(EntryState::Outdated(why)) = HOOKS.judge(&text, &ctx()) else {
            panic!()
        };
        assert!(why.starts_with("a stale PreToolUse hook"), "{why}");
        assert!(!why.contains("edited"), "{why}");
        let cleaned = HOOKS.remove(&text, None, &ctx()).unwrap();
        assert_eq!(cleaned, "{\"other\":{}}");
        assert!(!HOOKS.add(&cleaned, &ctx()).unwrap().contains("PreToolUse"));

        let mut off = entry(Path::new("/old/sessionpipe-hook"), NAME);
        off["enabled"] = json!(false);
        let Ok(EntryState::Outdated(why)) = HOOKS.judge(&json!({ ENTRY: off }).to_string(), &ctx())
        else {
            panic!()
        };
        assert_eq!(
            why,
            "disabled (\"enabled\": false), from another version or edited"
        );
        let twice = format!("{{\"{ENTRY}\": {{}}, \"{ENTRY}\": {{}}}}");
        assert_eq!(
            HOOKS.judge(&twice, &ctx()),
            Ok(EntryState::Outdated("2 entries named sessionpipe".into()))
        );
        assert_eq!(HOOKS.remove(&twice, None, &ctx()).unwrap(), "{}");
    }

    #[test]
    fn files_it_cannot_edit_are_refused() {
        assert!(HOOKS.judge("{\n  // mine\n}", &ctx()).is_err());
        assert!(HOOKS.judge("[]", &ctx()).is_err());
        assert!(HOOKS.add("[]", &ctx()).is_err());
    }

    #[test]
    fn found_by_its_traces_not_by_gemini_cli_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().to_path_buf();
        let host = |path: &str| Host {
            home: home.clone(),
            vars: [("PATH".to_string(), path.to_string())].into(),
        };
        std::fs::create_dir_all(home.join(".gemini")).unwrap();
        std::fs::write(home.join(".gemini/settings.json"), "{}").unwrap();
        assert!(Antigravity.targets(&host("")).is_empty());
        std::fs::create_dir_all(home.join(".gemini/antigravity-cli")).unwrap();
        assert_eq!(
            Antigravity.targets(&host(""))[0].path,
            home.join(".gemini/config/hooks.json")
        );
        std::fs::remove_dir(home.join(".gemini/antigravity-cli")).unwrap();
        let bin = home.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(bin.join("agy"), "").unwrap();
        assert_eq!(Antigravity.targets(&host(bin.to_str().unwrap())).len(), 1);
    }
}
