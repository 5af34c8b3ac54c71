//! Claude Code driven headless (ADAPTERS.md, Claude Code row: Start options
//! and Control in place): the `claude -p` argument list of a start, a resume
//! or a fork, the levels the installed build's `--help` offers, where a
//! session's transcript and live process are (its config dir, the per-process
//! registry `<config>/sessions/<pid>.json`), and the reader of
//! `--output-format stream-json`.
//!
//! Owns only Claude Code's words: it starts no process and opens no socket.
//! Must never pass `bypassPermissions` or `--dangerously-skip-permissions`:
//! no level maps to either.
//!
//! Measured on 2.1.332: `stream-json` under `-p` needs `--verbose` (the run
//! exits 1 without it); an `assistant` line carries one content block (a
//! message with text and a tool call is two lines with the same
//! `message.id`); the `result` names only the last message's text. The turn
//! goes in on stdin (`--input-format stream-json`, one `user` line; no
//! argument, so a prompt that opens with `-` is never read as a flag), which
//! is how the Agent SDK interrupts a turn: a `control_request` of subtype
//! `interrupt` on the same stdin is answered `control_response` `success`,
//! the transcript gets `[Request interrupted by user]`, and the `result` that
//! follows says `terminal_reason: aborted_streaming` (interrupted while the
//! reply streamed) with `is_error` and `subtype: error_during_execution`.
//! Stdin closed after the `result`, the process exits 0; start, `--resume`
//! and `--fork-session` all read it so.

use super::ClaudeCode;
use super::facts::{config_dirs, read_json};
use harness::headless::{
    CANCELLED, Headless, InboxOutcome, Input, Launch, Level, Live, NotOffered, Options, Place,
    Progress, Run, StreamReader,
};
use harness::install::Host;
use harness::payload::is_uuid;
use serde_json::Value;
use std::path::{Path, PathBuf};

impl Headless for ClaudeCode {
    fn program(&self) -> &'static str {
        "claude"
    }

    /// `safe` always; the others only where `--permission-mode` lists the mode
    /// they map to.
    fn levels(&self, help: &str) -> Vec<Level> {
        let modes = permission_modes(help);
        let has = |m: &str| modes.iter().any(|x| x == m);
        let mut out = Vec::new();
        if has("plan") {
            out.push(Level::Read);
        }
        out.push(Level::Safe);
        if has("acceptEdits") {
            out.push(Level::Edits);
        }
        if has("auto") {
            out.push(Level::Auto);
        }
        out
    }

    fn launch(
        &self,
        run: &Run<'_>,
        cwd: &Path,
        text: &str,
        options: &Options,
        place: &Place,
        help: &str,
    ) -> Result<Launch, NotOffered> {
        let mut args: Vec<String> = [
            "-p",
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
            "--include-partial-messages",
        ]
        .map(String::from)
        .into();
        if let Some(level) = options.level {
            if !self.levels(help).contains(&level) {
                return Err(NotOffered::Level(level.as_str()));
            }
            args.extend(level_args(level, help));
        }
        if let Some(model) = &options.model {
            args.extend(["--model".to_string(), model.clone()]);
        }
        if !options.allowed_tools.is_empty() {
            args.extend([
                "--allowedTools".to_string(),
                options.allowed_tools.join(","),
            ]);
        }
        match run {
            Run::Start { id } => args.extend(["--session-id".to_string(), id.to_string()]),
            Run::Resume { id } => args.extend(["--resume".to_string(), id.to_string()]),
            Run::Fork { id } => args.extend([
                "--resume".to_string(),
                id.to_string(),
                "--fork-session".to_string(),
            ]),
        }
        Ok(Launch {
            args,
            env: place.env.clone(),
            cwd: cwd.to_path_buf(),
            input: Some(Input {
                turn: user_line(text),
                interrupt: INTERRUPT.to_string(),
            }),
        })
    }

    fn reader(&self) -> Box<dyn StreamReader> {
        Box::new(StreamJson::default())
    }

    /// `<config>/projects/*/<id>.jsonl` in every config dir; a run resuming it
    /// from a config dir other than `~/.claude` is pointed there.
    fn place(&self, host: &Host, id: &str) -> Place {
        if !is_uuid(id) {
            return Place::default(); // never a path built from anything else
        }
        let default = host.home.join(".claude");
        for dir in config_dirs(host) {
            if let Some(transcript) = transcript_in(&dir, id) {
                let env = if dir == default {
                    Vec::new()
                } else {
                    vec![(
                        "CLAUDE_CONFIG_DIR".to_string(),
                        dir.to_string_lossy().into_owned(),
                    )]
                };
                return Place {
                    transcript: Some(transcript),
                    env,
                };
            }
        }
        Place::default()
    }

    /// The registry record of a running process holding `id`. A record a
    /// crashed process left behind names a dead pid and is passed over.
    fn live(&self, host: &Host, id: &str) -> Option<Live> {
        config_dirs(host)
            .iter()
            .find_map(|dir| live_in(&dir.join("sessions"), id))
    }

    fn forks(&self) -> bool {
        true
    }

    /// One line to the session's inbox, no class declared (so only a
    /// session that bypasses permissions holds it), answered as the socket
    /// answers.
    fn inbox(&self, socket: &Path, from: &str, framed: &str, memo: &harness::Memo) -> InboxOutcome {
        // A session that would hold the line (and drop it) never gets it.
        let mode = memo
            .get(super::facts::MEMO_PERMISSION_MODE)
            .and_then(Value::as_str);
        if mode.and_then(|m| super::inbox::holds("", m)) == Some(true) {
            return InboxOutcome::Held;
        }
        let line = super::inbox::line(from, "", framed);
        match super::inbox::deliver(socket, &line, std::time::Duration::from_secs(5)) {
            Ok(super::inbox::InboxAnswer::Taken) => InboxOutcome::Taken,
            Ok(super::inbox::InboxAnswer::Held) => InboxOutcome::Held,
            Err(e) if e.next_rung() => InboxOutcome::Missed(e.to_string()),
            Err(e) => InboxOutcome::Unsure(e.to_string()),
        }
    }
}

/// The flags of `level` on this build.
fn level_args(level: Level, help: &str) -> Vec<String> {
    let mode = |m: &str| vec!["--permission-mode".to_string(), m.to_string()];
    match level {
        Level::Read => mode("plan"),
        Level::Edits => mode("acceptEdits"),
        Level::Auto => mode("auto"),
        Level::Safe => {
            let modes = permission_modes(help);
            let has = |m: &str| modes.iter().any(|x| x == m);
            if has("dontAsk") {
                return mode("dontAsk");
            }
            // An older build: its default mode asks, and nobody answers.
            let mut args = mode(if !has("default") && has("manual") {
                "manual"
            } else {
                "default"
            });
            if lists_flag(help, "--permission-prompts") {
                args.extend(["--permission-prompts".to_string(), "none".to_string()]);
            }
            args
        }
    }
}

/// The `(choices: …)` of `--permission-mode` in `claude --help`, which wraps
/// them over several lines; empty when the help lists none.
fn permission_modes(help: &str) -> Vec<String> {
    let mut lines = help
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("--permission-mode "));
    let Some(first) = lines.next() else {
        return Vec::new();
    };
    let mut text = first.to_string();
    for line in lines {
        let t = line.trim_start();
        if t.is_empty() || t.starts_with('-') {
            break; // the next option, or the end of the list
        }
        text.push(' ');
        text.push_str(t);
    }
    let Some(at) = text.find("choices:") else {
        return Vec::new();
    };
    let rest = &text[at + "choices:".len()..];
    let rest = rest.split(')').next().unwrap_or(rest);
    rest.split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// Whether the help has an option line for `flag`.
fn lists_flag(help: &str, flag: &str) -> bool {
    help.lines().any(|l| {
        l.trim_start()
            .strip_prefix(flag)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', ',', '=']))
    })
}

/// `<dir>/projects/<slug>/<id>.jsonl`, when one exists.
fn transcript_in(dir: &Path, id: &str) -> Option<PathBuf> {
    let name = format!("{id}.jsonl");
    std::fs::read_dir(dir.join("projects"))
        .ok()?
        .flatten()
        .map(|e| e.path().join(&name))
        .find(|p| p.is_file())
}

/// The live process whose registry record in `sessions` names `id`.
fn live_in(sessions: &Path, id: &str) -> Option<Live> {
    let mut records: Vec<PathBuf> = std::fs::read_dir(sessions)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    records.sort(); // the same answer every time when two are alive
    records.into_iter().find_map(|path| {
        let record = read_json(&path)?;
        if record.get("sessionId").and_then(Value::as_str) != Some(id) {
            return None;
        }
        let pid = record
            .get("pid")
            .and_then(Value::as_u64)
            .or_else(|| path.file_stem()?.to_str()?.parse().ok())
            .and_then(|p| u32::try_from(p).ok())?;
        if !alive(pid, record.get("procStart")) {
            return None;
        }
        let inbox = (record.get("peerProtocol").and_then(Value::as_u64)
            == Some(super::inbox::PEER_PROTOCOL))
        .then(|| record.get("messagingSocketPath").and_then(Value::as_str))
        .flatten()
        .filter(|s| !s.is_empty())
        .map(PathBuf::from);
        Some(Live { pid, inbox })
    })
}

/// Linux: the process exists and, where the record names its `procStart`
/// (the start time in `/proc/<pid>/stat`, measured on 2.1.332), is the same
/// process and not a later one given the pid.
#[cfg(target_os = "linux")]
fn alive(pid: u32, proc_start: Option<&Value>) -> bool {
    if !Path::new(&format!("/proc/{pid}")).exists() {
        return false;
    }
    let want = match proc_start {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => return true,
    };
    match start_time(pid) {
        Some(got) => got == want,
        None => true, // unreadable: the pid exists, which is all that is known
    }
}

/// Field 22 of `/proc/<pid>/stat`; the command name before it may hold
/// spaces and parentheses.
#[cfg(target_os = "linux")]
fn start_time(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(19)
        .map(str::to_string)
}

/// Elsewhere there is no cheap look at another process: a record is taken as
/// alive, as Claude Code removes its own on exit.
#[cfg(not(target_os = "linux"))]
fn alive(_pid: u32, _proc_start: Option<&Value>) -> bool {
    true
}

/// The `control_request` that asks the running turn to stop (the Agent SDK's
/// `interrupt`).
const INTERRUPT: &str = "{\"type\":\"control_request\",\"request_id\":\"sessionpipe-cancel\",\"request\":{\"subtype\":\"interrupt\"}}\n";

/// `text` as the one `user` line `--input-format stream-json` reads.
fn user_line(text: &str) -> String {
    let line = serde_json::json!({
        "type": "user",
        "message": {"role": "user", "content": text},
        "parent_tool_use_id": null,
    });
    format!("{line}\n")
}

/// Reads `claude -p --output-format stream-json --include-partial-messages`.
/// The reply is the turn's assistant texts, one paragraph each: a text's
/// deltas stand in for it until its `assistant` line brings the whole.
#[derive(Debug, Default)]
struct StreamJson {
    /// Texts whose `assistant` line came.
    whole: Vec<String>,
    /// Text blocks streaming now: (content block index, text so far).
    streaming: Vec<(u64, String)>,
}

impl StreamJson {
    fn reply(&self) -> String {
        self.whole
            .iter()
            .map(String::as_str)
            .chain(
                self.streaming
                    .iter()
                    .map(|(_, t)| t.as_str())
                    .filter(|t| !t.is_empty()),
            )
            .collect::<Vec<_>>()
            .join("\n\n")
    }

    fn stream_event(&mut self, event: &Value) {
        let index = event.get("index").and_then(Value::as_u64).unwrap_or(0);
        match event.get("type").and_then(Value::as_str) {
            Some("message_start") => {
                // Blocks of the message before that never got their whole
                // line are kept as they streamed.
                let left: Vec<String> = self.streaming.drain(..).map(|(_, t)| t).collect();
                self.whole
                    .extend(left.into_iter().filter(|t| !t.is_empty()));
            }
            Some("content_block_start")
                if event.pointer("/content_block/type").and_then(Value::as_str) == Some("text") =>
            {
                self.streaming.push((index, String::new()));
            }
            Some("content_block_delta")
                if event.pointer("/delta/type").and_then(Value::as_str) == Some("text_delta") =>
            {
                let Some(text) = event.pointer("/delta/text").and_then(Value::as_str) else {
                    return;
                };
                match self.streaming.iter_mut().find(|(i, _)| *i == index) {
                    Some((_, so_far)) => so_far.push_str(text),
                    None => self.streaming.push((index, text.to_string())),
                }
            }
            _ => {}
        }
    }

    fn assistant(&mut self, line: &Value) {
        if line.get("is_api_error_message").and_then(Value::as_bool) == Some(true) {
            return; // Claude Code's own words for a failed request: the result says it
        }
        let Some(parts) = line.pointer("/message/content").and_then(Value::as_array) else {
            return;
        };
        for part in parts {
            if part.get("type").and_then(Value::as_str) != Some("text") {
                continue;
            }
            let Some(text) = part.get("text").and_then(Value::as_str) else {
                continue;
            };
            if !self.streaming.is_empty() {
                self.streaming.remove(0); // the oldest streaming block is this one
            }
            if !text.is_empty() {
                self.whole.push(text.to_string());
            }
        }
    }

    fn result(&self, line: &Value) -> Result<String, String> {
        let result = line
            .get("result")
            .and_then(Value::as_str)
            .unwrap_or_default();
        // Ended by an interrupt (a verified `cancel`): what it had said, and
        // that it stopped, as an ACP turn that was cancelled says it.
        if line
            .get("terminal_reason")
            .and_then(Value::as_str)
            .is_some_and(|r| r.starts_with("aborted"))
        {
            let reply = self.reply();
            return Ok(if reply.is_empty() {
                CANCELLED.to_string()
            } else {
                format!("{reply}\n\n{CANCELLED}")
            });
        }
        let failed = line.get("is_error").and_then(Value::as_bool) == Some(true)
            || line.get("subtype").and_then(Value::as_str) != Some("success");
        if failed {
            if !result.trim().is_empty() {
                return Err(result.to_string());
            }
            let errors: Vec<&str> = line
                .get("errors")
                .and_then(Value::as_array)
                .map(|e| e.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if !errors.is_empty() {
                return Err(errors.join("; "));
            }
            let subtype = line.get("subtype").and_then(Value::as_str);
            return Err(subtype.unwrap_or("the run failed").to_string());
        }
        // `result` is only the last message's text; the reply is all of them.
        let reply = self.reply();
        Ok(if reply.is_empty() {
            result.to_string()
        } else {
            reply
        })
    }
}

impl StreamReader for StreamJson {
    fn line(&mut self, line: &str, progress: &mut Progress) {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            return;
        };
        // A subagent's words (`--forward-subagent-text`) are not the reply.
        if v.get("parent_tool_use_id").is_some_and(|p| !p.is_null()) {
            return;
        }
        match v.get("type").and_then(Value::as_str) {
            Some("system") if v.get("subtype").and_then(Value::as_str) == Some("init") => {
                if let Some(id) = v.get("session_id").and_then(Value::as_str) {
                    progress.session = Some(id.to_string());
                }
                return;
            }
            Some("stream_event") => {
                if let Some(event) = v.get("event") {
                    self.stream_event(event);
                }
            }
            Some("assistant") => self.assistant(&v),
            Some("result") => {
                let end = self.result(&v);
                if let Ok(reply) = &end {
                    progress.reply = reply.clone();
                }
                progress.end = Some(end);
                return;
            }
            _ => return,
        }
        progress.reply = self.reply();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// `--help` of the installed build, 2.1.332 (the lines around the modes).
    const HELP: &str = r#"  --output-format <format>              Output format (only works with --print):
                                        "text" (default), "json" (single
                                        result), or "stream-json" (realtime
                                        streaming) (choices: "text", "json",
                                        "stream-json")
  --permission-mode <mode>              Permission mode to use for the session
                                        (choices: "acceptEdits", "auto",
                                        "bypassPermissions", "manual",
                                        "dontAsk", "plan")
  --permission-prompts <target>         Who answers permission prompts with
                                        --print: "host" (the SDK host or
                                        --permission-prompt-tool) or "none"
                                        (choices: "host", "none", default:
                                        "host")
  -p, --print                           Print response and exit
"#;

    /// A build without `dontAsk`, `auto` or `--permission-prompts`.
    const OLD_HELP: &str = r#"  --permission-mode <mode>  Permission mode to use for the session (choices:
                            "acceptEdits", "bypassPermissions", "default", "plan")
  -p, --print               Print response and exit
"#;

    /// A build with `manual` and no `default` or `dontAsk`.
    const MANUAL_HELP: &str = r#"  --permission-mode <mode>  Permission mode (choices: "acceptEdits", "manual",
                            "plan")
  --permission-prompts <target>  Who answers permission prompts
"#;

    const ID: &str = "11111111-2222-4333-8444-555555555555";

    fn launch(run: Run<'_>, options: &Options, help: &str) -> Result<Launch, NotOffered> {
        ClaudeCode.launch(
            &run,
            Path::new("/home/ann/project"),
            "-what is up",
            options,
            &Place::default(),
            help,
        )
    }

    fn args(run: Run<'_>, options: &Options, help: &str) -> Vec<String> {
        launch(run, options, help).unwrap().args
    }

    fn at(level: Level) -> Options {
        Options {
            level: Some(level),
            ..Default::default()
        }
    }

    fn strs(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    const HEAD: [&str; 7] = [
        "-p",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--verbose",
        "--include-partial-messages",
    ];

    #[test]
    fn levels_are_the_modes_the_help_lists() {
        assert_eq!(
            ClaudeCode.levels(HELP),
            [Level::Read, Level::Safe, Level::Edits, Level::Auto]
        );
        assert_eq!(
            ClaudeCode.levels(OLD_HELP),
            [Level::Read, Level::Safe, Level::Edits]
        );
        assert_eq!(ClaudeCode.levels(""), [Level::Safe]);
        assert_eq!(
            permission_modes(HELP),
            strs(&[
                "acceptEdits",
                "auto",
                "bypassPermissions",
                "manual",
                "dontAsk",
                "plan"
            ])
        );
    }

    #[test]
    fn every_level_and_run_has_its_exact_arguments() {
        let level = |l: Level, help: &str| {
            let mut want = strs(&HEAD);
            want.extend(level_args(l, help));
            want.extend(strs(&["--session-id", ID]));
            assert_eq!(args(Run::Start { id: ID }, &at(l), help), want, "{l:?}");
            level_args(l, help)
        };
        assert_eq!(level(Level::Read, HELP), ["--permission-mode", "plan"]);
        assert_eq!(level(Level::Safe, HELP), ["--permission-mode", "dontAsk"]);
        assert_eq!(
            level(Level::Edits, HELP),
            ["--permission-mode", "acceptEdits"]
        );
        assert_eq!(level(Level::Auto, HELP), ["--permission-mode", "auto"]);
        assert_eq!(
            level(Level::Safe, OLD_HELP),
            ["--permission-mode", "default"]
        );
        assert_eq!(
            level(Level::Safe, MANUAL_HELP),
            [
                "--permission-mode",
                "manual",
                "--permission-prompts",
                "none"
            ]
        );

        let none = Options::default();
        let mut want = strs(&HEAD);
        want.extend(strs(&["--session-id", ID]));
        assert_eq!(args(Run::Start { id: ID }, &none, HELP), want);
        let mut want = strs(&HEAD);
        want.extend(strs(&["--resume", ID]));
        assert_eq!(args(Run::Resume { id: ID }, &none, HELP), want);
        let mut want = strs(&HEAD);
        want.extend(strs(&["--resume", ID, "--fork-session"]));
        assert_eq!(args(Run::Fork { id: ID }, &none, HELP), want);

        let full = Options {
            level: Some(Level::Edits),
            model: Some("claude-sonnet-4-5".into()),
            allowed_tools: strs(&["mcp__a", "mcp__b"]),
        };
        let mut want = strs(&HEAD);
        want.extend(strs(&[
            "--permission-mode",
            "acceptEdits",
            "--model",
            "claude-sonnet-4-5",
            "--allowedTools",
            "mcp__a,mcp__b",
            "--resume",
            ID,
        ]));
        assert_eq!(args(Run::Resume { id: ID }, &full, HELP), want);
    }

    #[test]
    fn a_level_the_build_lacks_is_not_offered_and_none_bypasses() {
        assert_eq!(
            launch(Run::Start { id: ID }, &at(Level::Auto), OLD_HELP),
            Err(NotOffered::Level("auto"))
        );
        assert_eq!(
            launch(Run::Start { id: ID }, &at(Level::Read), ""),
            Err(NotOffered::Level("read"))
        );
        for help in [HELP, OLD_HELP, MANUAL_HELP, ""] {
            for level in [None].into_iter().chain(Level::ALL.map(Some)) {
                for run in [
                    Run::Start { id: ID },
                    Run::Resume { id: ID },
                    Run::Fork { id: ID },
                ] {
                    let options = Options {
                        level,
                        model: Some("m".into()),
                        allowed_tools: strs(&["mcp__x"]),
                    };
                    let Ok(l) = launch(run, &options, help) else {
                        continue;
                    };
                    let flags = &l.args;
                    assert!(
                        !flags.iter().any(|a| a.contains("bypass")
                            || a.contains("dangerously")
                            || a.contains("skip-permissions")),
                        "{:?}",
                        l.args
                    );
                    assert!(
                        !flags.iter().any(|a| a.contains("what is up")),
                        "the text is never an argument"
                    );
                    let input = l.input.as_ref().expect("the turn goes in on stdin");
                    let turn: Value = serde_json::from_str(input.turn.trim_end()).unwrap();
                    assert_eq!(turn["message"]["content"], "-what is up");
                    assert!(input.turn.ends_with('\n') && input.turn.matches('\n').count() == 1);
                    assert_eq!(
                        flags.iter().any(|a| a == "--permission-mode"),
                        level.is_some()
                    );
                }
            }
        }
    }

    #[test]
    fn the_turn_goes_in_on_stdin_and_an_interrupt_is_the_sdks() {
        let l = launch(Run::Start { id: ID }, &Options::default(), HELP).unwrap();
        let input = l.input.unwrap();
        let turn: Value = serde_json::from_str(input.turn.trim_end()).unwrap();
        assert_eq!(turn["type"], "user");
        assert_eq!(turn["message"]["role"], "user");
        let stop: Value = serde_json::from_str(input.interrupt.trim_end()).unwrap();
        assert_eq!(stop["type"], "control_request");
        assert_eq!(stop["request"]["subtype"], "interrupt");
        // A multi-line prompt is still one line of JSON.
        let l = ClaudeCode
            .launch(
                &Run::Start { id: ID },
                Path::new("/p"),
                "a\nb\n",
                &Options::default(),
                &Place::default(),
                HELP,
            )
            .unwrap();
        assert_eq!(l.input.unwrap().turn.matches('\n').count(), 1);
    }

    #[test]
    fn the_run_lands_in_its_folder_with_its_config_dirs_env() {
        let place = Place {
            transcript: None,
            env: vec![("CLAUDE_CONFIG_DIR".into(), "/home/ann/.claude-work".into())],
        };
        let l = ClaudeCode
            .launch(
                &Run::Resume { id: ID },
                Path::new("/home/ann/project"),
                "hi",
                &Options::default(),
                &place,
                HELP,
            )
            .unwrap();
        assert_eq!(l.cwd, Path::new("/home/ann/project"));
        assert_eq!(l.env, place.env);
        assert!(ClaudeCode.forks());
        assert!(!ClaudeCode.picks_ids());
        assert_eq!(ClaudeCode.program(), "claude");
    }

    fn host(home: &Path, vars: &[(&str, &str)]) -> Host {
        Host {
            home: home.to_path_buf(),
            vars: vars
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>(),
        }
    }

    #[test]
    fn place_finds_the_transcript_in_any_config_dir() {
        let home = tempfile::tempdir().unwrap();
        let h = home.path();
        let other = "22222222-2222-4333-8444-555555555555";
        for (dir, id) in [(".claude", ID), (".claude-work", other)] {
            let slug = h.join(dir).join("projects/-home-ann-project");
            std::fs::create_dir_all(&slug).unwrap();
            std::fs::write(slug.join(format!("{id}.jsonl")), "{}\n").unwrap();
        }
        let host = host(h, &[]);
        let p = ClaudeCode.place(&host, ID);
        assert_eq!(
            p.transcript,
            Some(h.join(format!(".claude/projects/-home-ann-project/{ID}.jsonl")))
        );
        assert!(p.env.is_empty(), "~/.claude needs no env");
        let p = ClaudeCode.place(&host, other);
        assert_eq!(
            p.env,
            [(
                "CLAUDE_CONFIG_DIR".to_string(),
                h.join(".claude-work").to_string_lossy().into_owned()
            )]
        );
        assert_eq!(
            ClaudeCode.place(&host, "33333333-2222-4333-8444-555555555555"),
            Place::default()
        );
        assert_eq!(
            ClaudeCode.place(&host, "../../etc/passwd"),
            Place::default()
        );
    }

    #[test]
    fn live_is_a_registry_record_of_a_running_process() {
        let home = tempfile::tempdir().unwrap();
        let sessions = home.path().join(".claude/sessions");
        std::fs::create_dir_all(&sessions).unwrap();
        let me = std::process::id();
        let dead = 4_000_000_000u32; // beyond any pid Linux hands out
        let record = |pid: u32, sid: &str, extra: &str| {
            std::fs::write(
                sessions.join(format!("{pid}.json")),
                format!(
                    r#"{{"pid":{pid},"sessionId":"{sid}","messagingSocketPath":"/tmp/cc-socks/{pid}.sock"{extra}}}"#
                ),
            )
            .unwrap();
        };
        let other = "22222222-2222-4333-8444-555555555555";
        let third = "33333333-2222-4333-8444-555555555555";
        record(me, ID, r#","peerProtocol":1"#);
        record(dead, other, r#","peerProtocol":1"#);
        std::fs::write(sessions.join("12.key"), "not a record").unwrap();
        let host = host(home.path(), &[]);

        assert_eq!(
            ClaudeCode.live(&host, ID),
            Some(Live {
                pid: me,
                inbox: Some(PathBuf::from(format!("/tmp/cc-socks/{me}.sock")))
            })
        );
        assert_eq!(
            ClaudeCode.live(&host, other),
            None,
            "a dead pid holds nothing"
        );
        assert_eq!(ClaudeCode.live(&host, third), None);

        // Another protocol, or none: no inbox, the process still holds it.
        record(me, ID, r#","peerProtocol":2"#);
        assert_eq!(ClaudeCode.live(&host, ID).and_then(|l| l.inbox), None);
        record(me, ID, r#","peerProtocol":"1""#);
        assert_eq!(ClaudeCode.live(&host, ID).and_then(|l| l.inbox), None);
        record(me, ID, "");
        assert_eq!(ClaudeCode.live(&host, ID).map(|l| l.pid), Some(me));

        #[cfg(target_os = "linux")]
        {
            // A pid reused by a later process is not the session's.
            let start = start_time(me).unwrap();
            record(
                me,
                ID,
                &format!(r#","peerProtocol":1,"procStart":"{start}""#),
            );
            assert!(ClaudeCode.live(&host, ID).is_some());
            record(me, ID, r#","peerProtocol":1,"procStart":"1""#);
            assert_eq!(ClaudeCode.live(&host, ID), None);
        }
    }

    fn read(stream: &str) -> (Progress, Vec<String>) {
        let mut reader = ClaudeCode.reader();
        let mut p = Progress::default();
        let mut replies = Vec::new();
        for line in stream.lines() {
            reader.line(line, &mut p);
            if replies.last() != Some(&p.reply) {
                replies.push(p.reply.clone());
            }
        }
        (p, replies)
    }

    /// A real run (2.1.332, the testkit's scripted API): text, a Bash call
    /// that `dontAsk` denied, then text, streamed with partial messages.
    const DENIED: &str = include_str!("streams/denied-then-answer.jsonl");
    /// A real run against an API that refused the connection.
    const API_ERROR: &str = include_str!("streams/api-error.jsonl");
    /// A real run stopped by `--max-turns 1` after a tool call.
    const MAX_TURNS: &str = include_str!("streams/max-turns.jsonl");

    #[test]
    fn the_recorded_stream_grows_the_whole_reply_and_ends_with_it() {
        let (p, replies) = read(DENIED);
        assert_eq!(
            p.session.as_deref(),
            Some("fdceebe3-f477-4b1a-bc08-e45da1f32522")
        );
        assert_eq!(
            replies,
            [
                "",
                "I wil",
                "I will run",
                "I will run it.",
                "I will run it.\n\nCould ",
                "I will run it.\n\nCould not ru",
                "I will run it.\n\nCould not run it.",
            ]
        );
        assert_eq!(
            p.end,
            Some(Ok("I will run it.\n\nCould not run it.".to_string()))
        );
    }

    #[test]
    fn a_failed_run_ends_with_its_own_words() {
        let (p, _) = read(API_ERROR);
        assert!(p.session.is_some());
        assert_eq!(
            p.end,
            Some(Err(
                "API Error: Connection refused — a firewall or proxy may be blocking it (ECONNREFUSED)"
                    .to_string()
            ))
        );
        assert_eq!(p.reply, "", "the synthetic error message is not a reply");
        let (p, _) = read(MAX_TURNS);
        assert_eq!(
            p.end,
            Some(Err("Reached maximum number of turns (1)".to_string()))
        );
    }

    #[test]
    fn whole_messages_stand_without_deltas_and_odd_lines_are_ignored() {
        let stream = [
            "not json",
            r#"{"type":"system","subtype":"init","session_id":"s-1"}"#,
            r#"{"type":"mystery"}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"text","text":"One."}]},"parent_tool_use_id":null}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"text","text":"A subagent."}]},"parent_tool_use_id":"toolu_1"}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Bash"}]}}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"text","text":"Two."}]}}"#,
            r#"{"type":"result","subtype":"success","is_error":false,"result":"Two."}"#,
        ]
        .join("\n");
        let (p, _) = read(&stream);
        assert_eq!(p.session.as_deref(), Some("s-1"));
        assert_eq!(p.end, Some(Ok("One.\n\nTwo.".to_string())));
        assert_eq!(p.reply, "One.\n\nTwo.");

        let (p, _) =
            read(r#"{"type":"result","subtype":"success","is_error":false,"result":"Only this."}"#);
        assert_eq!(p.end, Some(Ok("Only this.".to_string())));
        let (p, _) = read(
            r#"{"type":"result","subtype":"error_during_execution","is_error":true,"errors":["a","b"]}"#,
        );
        assert_eq!(p.end, Some(Err("a; b".to_string())));
    }

    /// The lines 2.1.332 wrote for an interrupt mid-reply (trimmed of usage).
    #[test]
    fn an_interrupted_turn_ends_with_what_it_said_and_that_it_stopped() {
        let stream = [
            r#"{"type":"system","subtype":"init","session_id":"s-1"}"#,
            r#"{"type":"stream_event","event":{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}}"#,
            r#"{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"word0 word1 "}}}"#,
            r#"{"type":"control_response","response":{"subtype":"success","request_id":"sessionpipe-cancel","response":{"still_queued":[]}}}"#,
            r#"{"type":"assistant","message":{"id":"msg_1","content":[{"type":"text","text":"word0 word1 "}]}}"#,
            r#"{"type":"user","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user]"}]}}"#,
            r#"{"type":"result","subtype":"error_during_execution","is_error":true,"stop_reason":null,"terminal_reason":"aborted_streaming","errors":["[ede_diagnostic] result_type=user last_content_type=n/a stop_reason=null"]}"#,
        ]
        .join("\n");
        let (p, _) = read(&stream);
        assert_eq!(p.end, Some(Ok(format!("word0 word1 \n\n{CANCELLED}"))));
        let (p, _) = read(
            r#"{"type":"result","subtype":"error_during_execution","is_error":true,"terminal_reason":"aborted_streaming"}"#,
        );
        assert_eq!(p.end, Some(Ok(CANCELLED.to_string())));
    }
}
