//! Antigravity's CLI (`agy`) driven headless (ADAPTERS.md, Antigravity row:
//! Control and Start options): the argument list of a start or a resume, where
//! a conversation's transcript is, and the reader of
//! `--output-format stream-json`.
//!
//! Owns only agy's words: it starts no process. Must never pass
//! `--dangerously-skip-permissions`: safe passes no permission flag at all
//! (agy denies what needs approval and lists it in `denied_actions`), edits
//! `--mode accept-edits`, its widest. agy picks the conversation id (`init`).
//!
//! No agy binary has been run for this reader: its stream is as public
//! integrations driving agy 1.x describe it, every line keyed by `event` with
//! its body under that name: `{"event":"init","init":{"conversation_id":…}}`,
//! `{"event":"step_update","step_update":{"step_type":"agent_response",
//! "text_delta":…}}`, `{"event":"result","result":{"status":"SUCCESS",
//! "response":…,"error":…,"denied_actions":[{"action":…,"display_name":…}]}}`.
//! Gemini CLI's documented stream-json, which agy succeeded, is read as well:
//! flat lines keyed by `type` (`init`, `message` with `role: assistant` and
//! `delta`, `result` with `status` `success` | `error`), the id as
//! `conversation_id` or `session_id`. The first recording of a real run should
//! settle which one agy writes.

use super::Antigravity;
use super::places::{data_dirs, transcript_in};
use harness::headless::{
    Headless, Launch, Level, NotOffered, Options, Place, Progress, Run, StreamReader,
};
use harness::install::Host;
use harness::payload::is_uuid;
use serde_json::Value;
use std::path::Path;

impl Headless for Antigravity {
    fn program(&self) -> &'static str {
        "agy"
    }

    /// No read-only mode is known, and accept-edits is the widest.
    fn levels(&self, _help: &str) -> Vec<Level> {
        vec![Level::Safe, Level::Edits]
    }

    fn auto_default(&self) -> Level {
        Level::Edits
    }

    /// Not measured yet (the row).
    fn takes_model(&self) -> bool {
        false
    }

    fn launch(
        &self,
        run: &Run<'_>,
        cwd: &Path,
        text: &str,
        options: &Options,
        _place: &Place,
        _help: &str,
    ) -> Result<Launch, NotOffered> {
        if options.model.is_some() {
            return Err(NotOffered::Model);
        }
        let mut args: Vec<String> = vec!["--output-format".into(), "stream-json".into()];
        match options.level {
            None | Some(Level::Safe) => {}
            Some(Level::Edits) => args.extend(["--mode".to_string(), "accept-edits".to_string()]),
            Some(other @ (Level::Read | Level::Auto)) => {
                return Err(NotOffered::Level(other.as_str()));
            }
        }
        match run {
            Run::Start { .. } => {}
            Run::Resume { id } => args.extend(["--conversation".to_string(), id.to_string()]),
            Run::Fork { .. } => return Err(NotOffered::Run("fork")),
        }
        // Last, and as the value of `-p`, which takes the next argument
        // whatever it starts with: the text is never read as a flag.
        args.extend(["-p".to_string(), text.to_string()]);
        Ok(Launch {
            args,
            env: Vec::new(),
            cwd: cwd.to_path_buf(),
            input: None,
        })
    }

    fn reader(&self) -> Box<dyn StreamReader> {
        Box::new(StreamJson::default())
    }

    /// The conversation's transcript in the first data folder that has it.
    fn place(&self, host: &Host, id: &str) -> Place {
        if !is_uuid(id) {
            return Place::default(); // never a path built from anything else
        }
        Place {
            transcript: data_dirs(&host.home)
                .map(|d| transcript_in(&d, id))
                .find(|p| p.is_file()),
            env: Vec::new(),
        }
    }

    fn picks_ids(&self) -> bool {
        true
    }
}

/// Reads agy's stream-json (either keying, see the top of this file).
#[derive(Debug, Default)]
struct StreamJson {
    /// Whole assistant messages, one paragraph each.
    whole: Vec<String>,
    /// The message streaming now, delta by delta.
    streaming: String,
}

impl StreamJson {
    fn reply(&self) -> String {
        self.whole
            .iter()
            .map(String::as_str)
            .chain(Some(self.streaming.as_str()).filter(|s| !s.is_empty()))
            .collect::<Vec<_>>()
            .join("\n\n")
    }

    /// A text delta of the message streaming now.
    fn delta(&mut self, text: &str) {
        self.streaming.push_str(text);
    }

    /// A step that is no text (a tool call) ends the message before it.
    fn flush(&mut self) {
        let done = std::mem::take(&mut self.streaming);
        if !done.is_empty() {
            self.whole.push(done);
        }
    }

    /// A whole message: the one that streamed when it begins with those
    /// words, else one after it.
    fn message(&mut self, text: &str) {
        let streamed = std::mem::take(&mut self.streaming);
        if !streamed.is_empty() && !text.starts_with(streamed.trim_end()) {
            self.whole.push(streamed);
        }
        if !text.is_empty() {
            self.whole.push(text.to_string());
        }
    }

    fn end(&mut self, body: &Value) -> (String, Result<(), String>) {
        let response = body
            .get("response")
            .and_then(Value::as_str)
            .filter(|r| !r.trim().is_empty());
        let mut reply = match response {
            Some(r) => r.to_string(),
            None => self.reply(),
        };
        let denied = denied(body);
        if !denied.is_empty() {
            if !reply.is_empty() {
                reply.push_str("\n\n");
            }
            reply.push_str(&format!(
                "(Not run without approval: {}.)",
                denied.join(", ")
            ));
        }
        let error = match body.get("error") {
            Some(Value::String(s)) if !s.trim().is_empty() => Some(s.clone()),
            Some(e @ Value::Object(_)) => e
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_string)
                .or_else(|| Some(e.to_string())),
            _ => None,
        };
        let status = body.get("status").and_then(Value::as_str);
        let ok = match status {
            Some(s) => s.eq_ignore_ascii_case("success"),
            None => error.is_none(),
        };
        let end = if ok {
            Ok(())
        } else {
            Err(error.unwrap_or_else(|| {
                format!("agy ended with status {}", status.unwrap_or("unknown"))
            }))
        };
        (reply, end)
    }
}

/// What safe mode refused, as agy names it.
fn denied(body: &Value) -> Vec<String> {
    body.get("denied_actions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|d| match d {
            Value::String(s) => Some(s.clone()),
            Value::Object(_) => ["display_name", "action", "tool_name", "name"]
                .iter()
                .find_map(|k| d.get(*k).and_then(Value::as_str))
                .map(str::to_string),
            _ => None,
        })
        .filter(|s| !s.trim().is_empty())
        .collect()
}

/// The conversation id a line names: its body's or its own.
fn conversation_id<'a>(line: &'a Value, body: &'a Value) -> Option<&'a str> {
    ["conversation_id", "session_id"]
        .iter()
        .find_map(|k| {
            body.get(*k)
                .or_else(|| line.get(*k))
                .and_then(Value::as_str)
        })
        .filter(|id| !id.trim().is_empty())
}

impl StreamReader for StreamJson {
    fn line(&mut self, line: &str, progress: &mut Progress) {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            return;
        };
        let kind = v
            .get("event")
            .and_then(Value::as_str)
            .or_else(|| v.get("type").and_then(Value::as_str));
        let Some(kind) = kind else {
            return;
        };
        // agy nests the body under the event's name; Gemini CLI's is flat.
        let body = v.get(kind).filter(|b| b.is_object()).unwrap_or(&v);
        let id = conversation_id(&v, body);
        match kind {
            "init" => {
                if let Some(id) = id {
                    progress.session = Some(id.to_string());
                }
                return;
            }
            "step_update" => {
                let step = body
                    .get("step_type")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_ascii_lowercase();
                if !step.ends_with("agent_response") {
                    self.flush();
                } else if let Some(text) = body.get("text_delta").and_then(Value::as_str) {
                    self.delta(text);
                }
            }
            "tool_use" | "tool_result" => self.flush(),
            "message" if body.get("role").and_then(Value::as_str) == Some("assistant") => {
                let text = body
                    .get("content")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if body.get("delta").and_then(Value::as_bool) == Some(true) {
                    self.delta(text);
                } else {
                    self.message(text);
                }
            }
            "result" => {
                let (reply, end) = self.end(body);
                progress.reply = reply.clone();
                progress.end = Some(end.map(|()| reply));
                if progress.session.is_none() {
                    progress.session = id.map(str::to_string);
                }
                return;
            }
            _ => return, // tool calls, warnings: not the reply
        }
        if progress.session.is_none() {
            progress.session = id.map(str::to_string);
        }
        progress.reply = self.reply();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    const CONV: &str = "2388249c-5a48-40f1-bf3b-5c6e5d3a5a0e";

    fn launch(run: Run<'_>, level: Option<Level>) -> Result<Launch, NotOffered> {
        let options = Options {
            level,
            model: None,
            allowed_tools: vec!["mcp__sessionpipe".into()],
        };
        Antigravity.launch(
            &run,
            Path::new("/home/ann/project"),
            "-rm this",
            &options,
            &Place::default(),
            "",
        )
    }

    fn args(run: Run<'_>, level: Option<Level>) -> Vec<String> {
        launch(run, level).unwrap().args
    }

    fn strs(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn arguments_for_every_level_and_run() {
        let start = Run::Start { id: "ours" };
        let resume = Run::Resume { id: CONV };
        let head = ["--output-format", "stream-json"];
        let tail = ["-p", "-rm this"];
        let with = |mid: &[&str]| strs(&[&head[..], mid, &tail[..]].concat());
        assert_eq!(args(start.clone(), None), with(&[]));
        assert_eq!(args(start.clone(), Some(Level::Safe)), with(&[]));
        assert_eq!(
            args(start.clone(), Some(Level::Edits)),
            with(&["--mode", "accept-edits"])
        );
        assert_eq!(
            args(resume.clone(), Some(Level::Safe)),
            with(&["--conversation", CONV])
        );
        assert_eq!(
            args(resume, Some(Level::Edits)),
            with(&["--mode", "accept-edits", "--conversation", CONV])
        );
        let l = launch(start, None).unwrap();
        assert_eq!(l.cwd, Path::new("/home/ann/project"));
        assert!(l.env.is_empty());
    }

    #[test]
    fn what_is_not_offered_and_never_a_bypass() {
        assert_eq!(
            launch(Run::Fork { id: CONV }, None),
            Err(NotOffered::Run("fork"))
        );
        assert_eq!(
            launch(Run::Start { id: "x" }, Some(Level::Read)),
            Err(NotOffered::Level("read"))
        );
        assert_eq!(
            launch(Run::Start { id: "x" }, Some(Level::Auto)),
            Err(NotOffered::Level("auto"))
        );
        let with_model = Options {
            model: Some("gemini-3.1-pro".into()),
            ..Default::default()
        };
        assert_eq!(
            Antigravity.launch(
                &Run::Start { id: "x" },
                Path::new("/"),
                "hi",
                &with_model,
                &Place::default(),
                ""
            ),
            Err(NotOffered::Model)
        );
        assert_eq!(Antigravity.levels(""), [Level::Safe, Level::Edits]);
        assert_eq!(Antigravity.auto_default(), Level::Edits);
        assert!(!Antigravity.takes_model());
        assert!(Antigravity.picks_ids());
        assert!(!Antigravity.forks());
        assert_eq!(Antigravity.program(), "agy");
        for level in [None].into_iter().chain(Level::ALL.map(Some)) {
            for run in [
                Run::Start { id: "x" },
                Run::Resume { id: CONV },
                Run::Fork { id: CONV },
            ] {
                let Ok(l) = launch(run, level) else { continue };
                let flags = &l.args[..l.args.len() - 2];
                assert!(
                    !flags
                        .iter()
                        .any(|a| a.contains("dangerously") || a.contains("skip")),
                    "{:?}",
                    l.args
                );
                assert_eq!(l.args[l.args.len() - 2], "-p");
            }
        }
    }

    #[test]
    fn place_is_the_transcript_in_a_data_folder() {
        let home = tempfile::tempdir().unwrap();
        let t = transcript_in(&home.path().join(".gemini/antigravity-cli"), CONV);
        std::fs::create_dir_all(t.parent().unwrap()).unwrap();
        std::fs::write(&t, "{}\n").unwrap();
        let host = Host {
            home: home.path().to_path_buf(),
            vars: BTreeMap::new(),
        };
        assert_eq!(Antigravity.place(&host, CONV).transcript, Some(t));
        assert_eq!(
            Antigravity.place(&host, "3388249c-5a48-40f1-bf3b-5c6e5d3a5a0e"),
            Place::default()
        );
        assert_eq!(Antigravity.place(&host, "../../x"), Place::default());
    }

    fn read(lines: &[&str]) -> (Progress, Vec<String>) {
        let mut reader = Antigravity.reader();
        let mut p = Progress::default();
        let mut replies = Vec::new();
        for line in lines {
            reader.line(line, &mut p);
            if replies.last() != Some(&p.reply) {
                replies.push(p.reply.clone());
            }
        }
        (p, replies)
    }

    #[test]
    fn agys_event_keyed_stream() {
        let init = format!(r#"{{"event":"init","init":{{"conversation_id":"{CONV}"}}}}"#);
        let (p, replies) = read(&[
            &init,
            r#"{"event":"step_update","step_update":{"step_type":"agent_response","state":"ACTIVE","text_delta":"Let me "}}"#,
            r#"{"event":"step_update","step_update":{"step_type":"AGENT_RESPONSE","state":"ACTIVE","text_delta":"look."}}"#,
            r#"{"event":"step_update","step_update":{"step_type":"tool","state":"ACTIVE","tool_name":"run_command"}}"#,
            r#"{"event":"step_update","step_update":{"step_type":"agent_response","state":"ACTIVE","text_delta":"Not allowed."}}"#,
            "Checking for updates...",
            r#"{"event":"result","result":{"conversation_id":"2388249c-5a48-40f1-bf3b-5c6e5d3a5a0e","status":"SUCCESS","response":"Let me look.\n\nNot allowed.","denied_actions":[{"action":"run_command","display_name":"run_command(rm -rf build)"},"write_to_file"]}}"#,
        ]);
        assert_eq!(p.session.as_deref(), Some(CONV));
        let whole = "Let me look.\n\nNot allowed.\n\n(Not run without approval: run_command(rm -rf build), write_to_file.)";
        assert_eq!(
            replies,
            [
                "",
                "Let me ",
                "Let me look.",
                "Let me look.\n\nNot allowed.",
                whole
            ]
        );
        assert_eq!(p.end, Some(Ok(whole.to_string())));
    }

    #[test]
    fn a_failed_result_ends_with_its_error() {
        let (p, _) = read(&[
            r#"{"event":"result","result":{"conversation_id":"c-1","status":"ERROR","error":"quota exhausted"}}"#,
        ]);
        assert_eq!(p.session.as_deref(), Some("c-1"));
        assert_eq!(p.end, Some(Err("quota exhausted".to_string())));
        let (p, _) = read(&[r#"{"event":"result","result":{"status":"CANCELLED"}}"#]);
        assert_eq!(
            p.end,
            Some(Err("agy ended with status CANCELLED".to_string()))
        );
    }

    /// The testkit's stand-in for agy (not agy) run with this adapter's
    /// argument lists: its stream reads back, and a resume keeps its id.
    #[cfg(unix)]
    #[test]
    fn the_stand_in_runs_and_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let agy = sessionpipe_testkit::agy::stand_in(dir.path(), "All \"done\".\nBye.");
        let run = |run: Run<'_>| {
            let l = launch(run, Some(Level::Edits)).unwrap();
            let out = std::process::Command::new(&agy)
                .args(&l.args)
                .current_dir(dir.path())
                .output()
                .unwrap();
            assert!(out.status.success());
            let mut reader = Antigravity.reader();
            let mut p = Progress::default();
            for line in String::from_utf8_lossy(&out.stdout).lines() {
                reader.line(line, &mut p);
            }
            p
        };
        let p = run(Run::Start { id: "ours" });
        assert_eq!(p.end, Some(Ok("All \"done\".\nBye.".to_string())));
        let id = p.session.unwrap();
        let p = run(Run::Resume { id: &id });
        assert_eq!(p.session.as_deref(), Some(id.as_str()));
        assert_eq!(
            std::fs::read_to_string(dir.path().join("agy-argv-2.txt")).unwrap(),
            format!(
                "--output-format\nstream-json\n--mode\naccept-edits\n--conversation\n{id}\n-p\n-rm this\n"
            )
        );
    }

    #[test]
    fn gemini_clis_flat_stream() {
        let (p, replies) = read(&[
            r#"{"type":"init","timestamp":"2026-06-01T00:00:00Z","session_id":"s-1","model":"gemini-3"}"#,
            r#"{"type":"message","role":"user","content":"hi"}"#,
            r#"{"type":"message","role":"assistant","content":"One","delta":true}"#,
            r#"{"type":"message","role":"assistant","content":" two.","delta":true}"#,
            r#"{"type":"tool_use","tool_name":"ls","tool_id":"t1","parameters":{}}"#,
            r#"{"type":"error","severity":"warning","message":"loop detected"}"#,
            r#"{"type":"message","role":"assistant","content":"Three."}"#,
            r#"{"type":"result","status":"success","stats":{"total_tokens":3}}"#,
        ]);
        assert_eq!(p.session.as_deref(), Some("s-1"));
        assert_eq!(replies, ["", "One", "One two.", "One two.\n\nThree."]);
        assert_eq!(p.end, Some(Ok("One two.\n\nThree.".to_string())));
        let (p, _) = read(&[
            r#"{"type":"result","status":"error","error":{"type":"FatalAuthenticationError","message":"Not signed in"}}"#,
        ]);
        assert_eq!(p.end, Some(Err("Not signed in".to_string())));
    }
}
