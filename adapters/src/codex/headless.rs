//! Codex driven headless (ADAPTERS.md, Codex row: Control and Start options):
//! the `codex exec` and `codex exec resume` argument lists, the models the
//! hello lists (`$CODEX_HOME/models_cache.json`), where a thread's rollout is,
//! and the reader of `codex exec --json`.
//!
//! Owns only Codex's words: it starts no process. Must never pass
//! `--dangerously-bypass-approvals-and-sandbox`,
//! `--dangerously-bypass-hook-trust` or `danger-full-access`: no level maps
//! to one. Codex picks the thread id (`thread.started`), so a start's id is
//! not passed.
//!
//! Measured on 0.171.0 (offline, the testkit's scripted Responses API): `--`
//! before the text keeps a text that opens with `-` a prompt, on `exec` and on
//! `exec resume` (where it comes after the id); `exec resume` takes neither
//! `-C` nor `-s`, and its `-c` overrides land in the rollout's `turn_context`
//! (`approval_policy: on-request`, `approvals_reviewer: auto_review`).

use super::Codex;
use super::backfill::rollouts;
use super::transcript::rollout_thread;
use harness::headless::{
    Headless, Launch, Level, NotOffered, Options, Place, Progress, Run, StreamReader,
};
use harness::install::Host;
use serde_json::Value;
use std::path::Path;

/// At most this many models in the hello (the row).
const MAX_MODELS: usize = 50;

impl Headless for Codex {
    fn program(&self) -> &'static str {
        "codex"
    }

    /// Codex's safe is its workspace sandbox (edits inside the folder), so
    /// `edits` is not a level of its own.
    fn levels(&self, _help: &str) -> Vec<Level> {
        vec![Level::Read, Level::Safe, Level::Auto]
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
        if options.level == Some(Level::Edits) {
            return Err(NotOffered::Level(Level::Edits.as_str()));
        }
        let model = options
            .model
            .iter()
            .flat_map(|m| ["-m".to_string(), m.clone()]);
        let mut args: Vec<String> = Vec::new();
        match run {
            Run::Start { .. } => {
                args.extend(["exec", "--json", "--skip-git-repo-check", "-C"].map(String::from));
                args.push(cwd.to_string_lossy().into_owned());
                args.extend(options.level.map(start_flags).unwrap_or_default());
                args.extend(model);
                args.extend(["--".to_string(), text.to_string()]);
            }
            Run::Resume { id } => {
                args.extend(
                    ["exec", "resume", "--json", "--skip-git-repo-check"].map(String::from),
                );
                args.extend(options.level.map(resume_overrides).unwrap_or_default());
                args.extend(model);
                args.extend(["--".to_string(), id.to_string(), text.to_string()]);
            }
            Run::Fork { .. } => return Err(NotOffered::Run("fork")),
        }
        Ok(Launch {
            args,
            env: Vec::new(),
            cwd: cwd.to_path_buf(),
            input: None,
        })
    }

    fn reader(&self) -> Box<dyn StreamReader> {
        Box::new(ExecJson::default())
    }

    /// The slugs Codex's own cache lists for its picker (`visibility: list`).
    fn models(&self, host: &Host) -> Vec<String> {
        let Ok(bytes) = std::fs::read(super::codex_home(host).join("models_cache.json")) else {
            return Vec::new();
        };
        let Ok(cache) = serde_json::from_slice::<Value>(&bytes) else {
            return Vec::new();
        };
        let mut out: Vec<String> = Vec::new();
        for m in cache
            .get("models")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if m.get("visibility").and_then(Value::as_str) != Some("list") {
                continue;
            }
            let Some(slug) = m.get("slug").and_then(Value::as_str) else {
                continue;
            };
            if !slug.is_empty() && !out.iter().any(|s| s == slug) {
                out.push(slug.to_string());
            }
            if out.len() == MAX_MODELS {
                break;
            }
        }
        out
    }

    /// The thread's rollout under `$CODEX_HOME/sessions/YYYY/MM/DD/`; the
    /// plain file over a compressed twin caught mid-compression.
    fn place(&self, host: &Host, id: &str) -> Place {
        let id = id.to_ascii_lowercase();
        let mut found: Vec<_> = rollouts(&super::codex_home(host).join("sessions"))
            .into_iter()
            .filter(|p| rollout_thread(p).as_deref() == Some(id.as_str()))
            .collect();
        found.sort_by_key(|p| p.extension().is_some_and(|x| x == "zst"));
        Place {
            transcript: found.into_iter().next(),
            env: Vec::new(),
        }
    }

    fn auto_default(&self) -> Level {
        Level::Auto
    }

    fn picks_ids(&self) -> bool {
        true
    }
}

/// `codex exec`'s flags for `level`.
fn start_flags(level: Level) -> Vec<String> {
    match level {
        Level::Read => vec!["-s".into(), "read-only".into()],
        Level::Safe => vec!["-s".into(), "workspace-write".into()],
        Level::Auto => vec!["--approve-for-me".into()],
        Level::Edits => Vec::new(), // refused before this
    }
}

/// `codex exec resume` takes no `-s` or `--approve-for-me`: the same in
/// config overrides.
fn resume_overrides(level: Level) -> Vec<String> {
    let sandbox = |mode: &str| vec!["-c".to_string(), format!("sandbox_mode=\"{mode}\"")];
    match level {
        Level::Read => sandbox("read-only"),
        Level::Safe => sandbox("workspace-write"),
        Level::Auto => {
            let mut args = sandbox("workspace-write");
            args.extend([
                "-c".to_string(),
                "approval_policy=\"on-request\"".to_string(),
                "-c".to_string(),
                "approvals_reviewer=\"auto_review\"".to_string(),
            ]);
            args
        }
        Level::Edits => Vec::new(), // refused before this
    }
}

/// Reads `codex exec --json`: the reply is the turn's `agent_message` items,
/// one paragraph each. `error` lines and items are warnings (a model Codex has
/// no metadata for, a reconnect): `turn.failed` is the failure.
#[derive(Debug, Default)]
struct ExecJson {
    messages: Vec<String>,
}

impl StreamReader for ExecJson {
    fn line(&mut self, line: &str, progress: &mut Progress) {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            return;
        };
        match v.get("type").and_then(Value::as_str) {
            Some("thread.started") => {
                if let Some(id) = v.get("thread_id").and_then(Value::as_str) {
                    progress.session = Some(id.to_string());
                }
            }
            Some("item.completed")
                if v.pointer("/item/type").and_then(Value::as_str) == Some("agent_message") =>
            {
                if let Some(text) = v
                    .pointer("/item/text")
                    .and_then(Value::as_str)
                    .filter(|t| !t.is_empty())
                {
                    self.messages.push(text.to_string());
                    progress.reply = self.messages.join("\n\n");
                }
            }
            Some("turn.completed") => progress.end = Some(Ok(self.messages.join("\n\n"))),
            Some("turn.failed") => {
                let message = v
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .filter(|m| !m.trim().is_empty())
                    .unwrap_or("the turn failed");
                progress.end = Some(Err(message.to_string()));
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    const THREAD: &str = "01a23442-9969-72c0-ac31-fe5497fdbea5";

    fn launch(
        run: Run<'_>,
        level: Option<Level>,
        model: Option<&str>,
    ) -> Result<Launch, NotOffered> {
        let options = Options {
            level,
            model: model.map(String::from),
            allowed_tools: vec!["mcp__sessionpipe".into()],
        };
        Codex.launch(
            &run,
            Path::new("/home/ann/project"),
            "-hello there",
            &options,
            &Place::default(),
            "",
        )
    }

    fn args(run: Run<'_>, level: Option<Level>, model: Option<&str>) -> Vec<String> {
        launch(run, level, model).unwrap().args
    }

    fn strs(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn start_arguments_for_every_level() {
        let start = Run::Start { id: "ours" };
        let with = |flags: &[&str]| {
            let mut v = strs(&[
                "exec",
                "--json",
                "--skip-git-repo-check",
                "-C",
                "/home/ann/project",
            ]);
            v.extend(strs(flags));
            v.extend(strs(&["--", "-hello there"]));
            v
        };
        assert_eq!(args(start.clone(), None, None), with(&[]));
        assert_eq!(
            args(start.clone(), Some(Level::Read), None),
            with(&["-s", "read-only"])
        );
        assert_eq!(
            args(start.clone(), Some(Level::Safe), None),
            with(&["-s", "workspace-write"])
        );
        assert_eq!(
            args(start.clone(), Some(Level::Auto), Some("gpt-5.5")),
            with(&["--approve-for-me", "-m", "gpt-5.5"])
        );
        let l = launch(start, None, None).unwrap();
        assert_eq!(l.cwd, Path::new("/home/ann/project"));
        assert!(l.env.is_empty());
    }

    #[test]
    fn resume_arguments_say_the_level_in_overrides() {
        let resume = Run::Resume { id: THREAD };
        let with = |flags: &[&str]| {
            let mut v = strs(&["exec", "resume", "--json", "--skip-git-repo-check"]);
            v.extend(strs(flags));
            v.extend(strs(&["--", THREAD, "-hello there"]));
            v
        };
        assert_eq!(args(resume.clone(), None, None), with(&[]));
        assert_eq!(
            args(resume.clone(), Some(Level::Read), None),
            with(&["-c", "sandbox_mode=\"read-only\""])
        );
        assert_eq!(
            args(resume.clone(), Some(Level::Safe), Some("gpt-5.5")),
            with(&["-c", "sandbox_mode=\"workspace-write\"", "-m", "gpt-5.5"])
        );
        assert_eq!(
            args(resume, Some(Level::Auto), None),
            with(&[
                "-c",
                "sandbox_mode=\"workspace-write\"",
                "-c",
                "approval_policy=\"on-request\"",
                "-c",
                "approvals_reviewer=\"auto_review\"",
            ])
        );
    }

    #[test]
    fn no_fork_no_edits_and_never_a_bypass() {
        assert_eq!(
            launch(Run::Fork { id: THREAD }, None, None),
            Err(NotOffered::Run("fork"))
        );
        assert_eq!(
            launch(Run::Start { id: "x" }, Some(Level::Edits), None),
            Err(NotOffered::Level("edits"))
        );
        assert_eq!(Codex.levels(""), [Level::Read, Level::Safe, Level::Auto]);
        assert_eq!(Codex.auto_default(), Level::Auto);
        assert!(Codex.picks_ids());
        assert!(!Codex.forks());
        for level in [None].into_iter().chain(Level::ALL.map(Some)) {
            for run in [
                Run::Start { id: "x" },
                Run::Resume { id: THREAD },
                Run::Fork { id: THREAD },
            ] {
                let Ok(l) = launch(run, level, Some("m")) else {
                    continue;
                };
                let flags = &l.args[..l.args.iter().position(|a| a == "--").unwrap()];
                assert!(
                    !flags
                        .iter()
                        .any(|a| a.contains("dangerously") || a.contains("danger-full-access")),
                    "{:?}",
                    l.args
                );
            }
        }
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
    fn models_are_the_listed_slugs_of_codexs_cache() {
        let home = tempfile::tempdir().unwrap();
        let codex = home.path().join("elsewhere");
        std::fs::create_dir_all(&codex).unwrap();
        // The cache's shape (codex-rs `ModelsCache`): `models` are the
        // catalog's entries, each with its `slug` and `visibility`.
        let mut models = vec![
            serde_json::json!({"slug": "gpt-6.2-sol", "visibility": "list", "priority": 1}),
            serde_json::json!({"slug": "codex-auto-review", "visibility": "hide"}),
            serde_json::json!({"slug": "gpt-5.5", "visibility": "list"}),
            serde_json::json!({"visibility": "list"}),
            serde_json::json!({"slug": "gpt-5.5", "visibility": "list"}),
        ];
        models.extend(
            (0..60).map(|i| serde_json::json!({"slug": format!("m-{i}"), "visibility": "list"})),
        );
        let cache = serde_json::json!({
            "fetched_at": "2026-12-01T00:00:00Z",
            "etag": "\"abc\"",
            "client_version": "0.171.0",
            "models": models,
        });
        std::fs::write(codex.join("models_cache.json"), cache.to_string()).unwrap();
        let h = host(home.path(), &[("CODEX_HOME", codex.to_str().unwrap())]);
        let got = Codex.models(&h);
        assert_eq!(got.len(), MAX_MODELS);
        assert_eq!(&got[..3], ["gpt-6.2-sol", "gpt-5.5", "m-0"]);
        assert!(
            Codex.models(&host(home.path(), &[])).is_empty(),
            "no ~/.codex cache"
        );
        std::fs::write(codex.join("models_cache.json"), "not json").unwrap();
        assert!(Codex.models(&h).is_empty());
    }

    #[test]
    fn place_is_the_threads_rollout() {
        let home = tempfile::tempdir().unwrap();
        let day = home.path().join(".codex/sessions/2026/12/02");
        std::fs::create_dir_all(&day).unwrap();
        let plain = day.join(format!("rollout-2026-12-02T00-58-29-{THREAD}.jsonl"));
        std::fs::write(
            day.join(format!("rollout-2026-12-02T00-58-29-{THREAD}.jsonl.zst")),
            "",
        )
        .unwrap();
        std::fs::write(&plain, "{}\n").unwrap();
        std::fs::write(
            day.join("rollout-2026-12-02T00-59-00-01a23444-79ff-7f63-b900-023e32f8db30.jsonl"),
            "{}\n",
        )
        .unwrap();
        let h = host(home.path(), &[]);
        assert_eq!(Codex.place(&h, THREAD).transcript, Some(plain.clone()));
        assert_eq!(
            Codex.place(&h, &THREAD.to_ascii_uppercase()).transcript,
            Some(plain)
        );
        assert_eq!(
            Codex.place(&h, "01a23445-a8f4-7cc2-a6b8-6e1aa0d53bc2"),
            Place::default()
        );
        assert_eq!(Codex.place(&h, "../.."), Place::default());
    }

    fn read(stream: &str) -> Progress {
        let mut reader = Codex.reader();
        let mut p = Progress::default();
        for line in stream.lines() {
            reader.line(line, &mut p);
        }
        p
    }

    /// A real `codex exec --json` run (0.171.0, the testkit's scripted
    /// Responses API): a warning item, one command, then the answer.
    const ANSWER: &str = include_str!("streams/command-then-answer.jsonl");
    /// A real run whose model the API refused (a 400): a warning line, then
    /// `turn.failed`.
    const FAILED: &str = include_str!("streams/turn-failed.jsonl");

    #[test]
    fn the_recorded_streams() {
        let p = read(ANSWER);
        assert_eq!(p.session.as_deref(), Some(THREAD));
        assert_eq!(p.reply, "All done.");
        assert_eq!(p.end, Some(Ok("All done.".to_string())));

        let p = read(FAILED);
        assert_eq!(
            p.session.as_deref(),
            Some("01a23445-a8f4-7cc2-a6b8-6e1aa0d53bc2")
        );
        assert_eq!(p.reply, "");
        assert_eq!(
            p.end,
            Some(Err("The model `nope` does not exist.".to_string()))
        );
    }

    #[test]
    fn messages_join_and_warnings_end_nothing() {
        let stream = [
            r#"{"type":"thread.started","thread_id":"t-1"}"#,
            r#"{"type":"error","message":"Reconnecting... 1/5"}"#,
            r#"{"type":"item.completed","item":{"id":"item_0","type":"error","message":"a warning"}}"#,
            r#"{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"First."}}"#,
            "garbage",
            r#"{"type":"item.completed","item":{"id":"item_2","type":"agent_message","text":"Second."}}"#,
        ]
        .join("\n");
        let p = read(&stream);
        assert_eq!(p.reply, "First.\n\nSecond.");
        assert_eq!(p.end, None, "a warning is no end");
        let p = read(&format!(
            "{stream}\n{{\"type\":\"turn.completed\",\"usage\":{{}}}}"
        ));
        assert_eq!(p.end, Some(Ok("First.\n\nSecond.".to_string())));
        let p = read(r#"{"type":"turn.failed","error":{}}"#);
        assert_eq!(p.end, Some(Err("the turn failed".to_string())));
    }
}
