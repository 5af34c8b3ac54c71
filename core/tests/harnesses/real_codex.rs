//! The real Codex, offline, end to end: `sessionpipe install` writes `hooks.json`
//! and the `notify` line of `config.toml` into a temporary `CODEX_HOME`, the test
//! adds a model provider pointing at a scripted Responses API on loopback (one
//! `exec_command` call, then text), `codex exec` runs a whole turn, its real hooks
//! and its notify run the real `sessionpipe-hook`, and the daemon turns them into
//! events. The home starts with a notify of the person's own, which the installer
//! chains and the hook still runs.
//!
//! Codex's hooks run only once the person trusts them (`/hooks` in the CLI), which
//! a test cannot do interactively and the installer must never do for them. So the
//! runs that need the hooks pass `--dangerously-bypass-hook-trust`: it skips the
//! trust check for that one invocation and nothing else, and it is only ever used
//! here, on a throwaway home. The run with hooks off passes `--disable hooks`.
//!
//! With transcripts on (`config.json {"transcripts": true}`), the same setup shows
//! tier 2 and the facts end to end: each turn's `turn.transcript` right after its
//! `turn.ended`, Codex's version, model, branch and repository in the session
//! block, `limits.observed` from the rate-limit headers the mock sends (once,
//! while they stay the same), and `sessionpipe backfill` of the runs' rollouts.
//!
//! Codex comes from the npm registry (`e2e/package.json`, installed by
//! `scripts/test.sh`). Without it the test says so and passes, unless
//! `SESSIONPIPE_REQUIRE_HARNESSES=1` (set by the test script), where it fails. With
//! `SESSIONPIPE_RECORD_FIXTURES=DIR` it also writes the payloads it saw as
//! conformance fixtures into DIR.

use serde_json::Value;
use sessionpipe_core::spool::Job;
use sessionpipe_testkit::openai::{MockOpenAI, RateLimits, Step, Window};
use sessionpipe_testkit::{Sandbox, sandbox::Daemon};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const VERSION: &str = "0.171.0";

pub(crate) fn codex_binary() -> Option<PathBuf> {
    sessionpipe_testkit::codex::binary()
}

/// A sandbox with Codex's hooks and notify installed, `api` configured as its
/// provider, and a daemon keeping every job (sending transcripts when
/// `transcripts` is set).
pub(crate) struct Setup {
    pub(crate) sb: Sandbox,
    codex: PathBuf,
    codex_home: PathBuf,
    path: String,
    archive: PathBuf,
    project: PathBuf,
    api: MockOpenAI,
    _daemon: Daemon,
}

pub(crate) fn setup(codex: PathBuf, api: MockOpenAI, transcripts: bool) -> Setup {
    let sb = Sandbox::new();
    let archive = sb.root().join("jobs");
    let project = sb.home.join("work/project");
    std::fs::create_dir_all(&project).unwrap();
    let codex_home = sb.home.join(".codex");

    // The person already has a notify program: it must keep running, chained.
    let previous = sb.root().join("previous-notify.sh");
    std::fs::write(
        &previous,
        format!(
            "printf '%s\\n' \"$1\" >> '{}'\n",
            sb.root().join("previous-notify.log").display()
        ),
    )
    .unwrap();
    std::fs::create_dir_all(&codex_home).unwrap();
    std::fs::write(
        codex_home.join("config.toml"),
        format!("notify = [\"/bin/sh\", \"{}\"]\n", previous.display()),
    )
    .unwrap();

    // `codex` on PATH is how the installer finds Codex in a fresh home.
    let path = sessionpipe_testkit::Sandbox::path_with(codex.parent().unwrap());
    let install = sb
        .command(sessionpipe_testkit::sandbox::bin("sessionpipe"))
        .env("PATH", &path)
        .env("CODEX_HOME", &codex_home)
        .args(["install", "--harness", "codex"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&install.stdout);
    let note = String::from_utf8_lossy(&install.stderr);
    assert!(install.status.success(), "{said}{note}");
    assert_eq!(
        said,
        "codex: installed (~/.codex/hooks.json, ~/.codex/config.toml)\n"
    );
    assert!(note.contains("/hooks"), "the trust note: {note}");

    // What a person sets up to use a provider of their own, after installing.
    let config = codex_home.join("config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&sessionpipe_testkit::codex::provider_at(&api.base_url()));
    std::fs::write(&config, text).unwrap();
    let status = sb
        .command(sessionpipe_testkit::sandbox::bin("sessionpipe"))
        .env("CODEX_HOME", &codex_home)
        .arg("status")
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&status.stdout)
            .contains("codex: current (~/.codex/hooks.json, ~/.codex/config.toml)"),
        "{}",
        String::from_utf8_lossy(&status.stdout)
    );

    if transcripts {
        std::fs::create_dir_all(&sb.state).unwrap();
        std::fs::write(sb.state.join("config.json"), r#"{"transcripts": true}"#).unwrap();
    }
    let daemon = sb.start_daemon_with(&[("SESSIONPIPE_JOB_ARCHIVE", archive.as_os_str())]);
    Setup {
        sb,
        codex,
        codex_home,
        path,
        archive,
        project,
        api,
        _daemon: daemon,
    }
}

impl Setup {
    /// Runs one `codex exec` turn and returns its thread id (`thread.started`).
    pub(crate) fn exec(&self, flags: &[&str], prompt: &str) -> String {
        let out = self.codex_exec(flags, prompt).output().expect("codex runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "codex failed: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|e| e["type"] == "thread.started")
            .and_then(|e| e["thread_id"].as_str().map(str::to_string))
            .unwrap_or_else(|| panic!("no thread.started in {stdout}"))
    }

    /// `codex exec` with `flags` and `prompt`, not started yet.
    fn codex_exec(&self, flags: &[&str], prompt: &str) -> std::process::Command {
        let mut c = self.sb.command(&self.codex);
        c.current_dir(&self.project)
            .env("PATH", &self.path)
            .env("CODEX_HOME", &self.codex_home)
            .env("MOCK_API_KEY", "not-a-key")
            .env("SHELL", "/bin/bash")
            .args(["exec", "--json", "--skip-git-repo-check"])
            .args(flags)
            .arg(prompt)
            .stdin(std::process::Stdio::null());
        c
    }

    /// Runs `codex exec` and stops it with SIGINT (as Ctrl-C does) once
    /// `running` says its turn is under way.
    fn exec_interrupted(&self, flags: &[&str], prompt: &str, running: impl Fn(&[Job]) -> bool) {
        let mut child = self
            .codex_exec(flags, prompt)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("codex runs");
        let deadline = Instant::now() + Duration::from_secs(20);
        while !running(&archived_jobs(&self.archive)) {
            assert!(Instant::now() < deadline, "the turn did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        let sigint = std::process::Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(sigint.success());
        child.wait().unwrap();
    }

    /// The turn id Codex sent with its model requests for `thread`.
    fn turn_id(&self, thread: &str) -> String {
        self.api
            .requests()
            .iter()
            .filter(|r| r.header("thread-id") == Some(thread))
            .find_map(|r| {
                let meta: Value = serde_json::from_str(r.header("x-codex-turn-metadata")?).ok()?;
                meta["turn_id"].as_str().map(str::to_string)
            })
            .expect("a model request with turn metadata")
    }

    /// Waits until the daemon has taken the jobs `done` asks for, then returns the
    /// events of `session` and every job taken so far.
    pub(crate) fn settle(
        &self,
        session: &str,
        done: impl Fn(&[Job]) -> bool,
    ) -> (Vec<Value>, Vec<Job>) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let jobs = archived_jobs(&self.archive);
            if done(&jobs) || Instant::now() > deadline {
                let events = self
                    .sb
                    .events()
                    .into_iter()
                    .filter(|e| e["session"]["id"] == session)
                    .collect();
                return (events, jobs);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn kinds(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

/// True when a job of `event` for `thread` (hook payload or notify argument) was taken.
pub(crate) fn took(jobs: &[Job], event: &str, thread: &str) -> bool {
    taken(jobs, event, thread) > 0
}

/// How many jobs of `event` for `thread` were taken.
fn taken(jobs: &[Job], event: &str, thread: &str) -> usize {
    jobs.iter()
        .filter(|j| {
            j.event == event
                && (String::from_utf8_lossy(&j.payload).contains(thread)
                    || j.argv.last().is_some_and(|a| a.contains(thread)))
        })
        .count()
}

#[test]
fn real_codex_turns_with_hooks_on_off_and_ephemeral() {
    let Some(codex) = codex_binary() else {
        return;
    };
    let started = Instant::now();
    let api = MockOpenAI::start(Step::command_then_text(
        "echo hello",
        "The command printed: hello",
    ));
    let s = setup(codex, api, false);

    // Hooks on: the hooks report the whole turn, notify adds nothing.
    let thread = s.exec(
        &["--dangerously-bypass-hook-trust"],
        "Run the shell command, then tell me what it printed.",
    );
    let call_id = s.api.call_ids()[0].clone();
    let turn_id = s.turn_id(&thread);
    let (events, jobs) = s.settle(&thread, |jobs| {
        took(jobs, "SessionEnd", &thread) && took(jobs, "notify", &thread)
    });
    assert_eq!(
        kinds(&events),
        [
            "session.started",
            "turn.started",
            "tool.started",
            "tool.ended",
            "turn.ended",
            "session.ended"
        ],
        "{events:#?}"
    );
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e["session"]["seq"], i as u64 + 1);
        assert_eq!(e["session"]["cwd"], "~/work/project");
        assert_eq!(e["session"]["model"], "mock-model");
        assert_eq!(e["harness"]["name"], "codex");
    }
    assert_eq!(events[0]["data"]["source"], "startup");
    assert_eq!(events[1]["data"]["turn_id"], turn_id.as_str());
    for e in &events[2..4] {
        assert_eq!(e["data"]["tool"], "Bash");
        assert_eq!(e["data"]["call_id"], call_id.as_str());
        assert_eq!(e["data"]["turn_id"], turn_id.as_str());
        assert!(e["data"].get("agent_id").is_none());
    }
    assert_eq!(events[2]["data"]["input"]["command"], "echo hello");
    assert_eq!(events[3]["data"]["ok"], true);
    assert_eq!(events[3]["data"]["output"], "hello\n");
    assert_eq!(
        events[4]["data"],
        serde_json::json!({"turn_id": turn_id, "reason": "stop"})
    );
    assert_eq!(events[5]["data"]["reason"], "other");
    // The person's own notify ran too, with Codex's argument.
    let log = s.sb.root().join("previous-notify.log");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !std::fs::read_to_string(&log).is_ok_and(|l| l.contains(&thread)) {
        assert!(Instant::now() < deadline, "the previous notify did not run");
        std::thread::sleep(Duration::from_millis(20));
    }
    let line = std::fs::read_to_string(&log).unwrap();
    let arg: Value = serde_json::from_str(line.lines().next().unwrap()).unwrap();
    assert_eq!(arg["type"], "agent-turn-complete");
    assert_eq!(arg["thread-id"], thread.as_str());
    let hooks_on: Vec<Job> = jobs.clone();
    let run_jobs: Vec<&str> = hooks_on.iter().map(|j| j.event.as_str()).collect();
    assert_eq!(
        run_jobs.iter().filter(|e| **e != "notify").count(),
        6,
        "one job per hook call: {run_jobs:?}"
    );

    // Hooks off: notify alone says the turn ended, after a start the daemon adds.
    let off = s.exec(&["--disable", "hooks"], "Run it again.");
    let (events, jobs) = s.settle(&off, |jobs| took(jobs, "notify", &off));
    assert_eq!(
        kinds(&events),
        ["session.started", "turn.ended"],
        "{events:#?}"
    );
    assert_eq!(events[0]["data"]["source"], "unknown");
    assert_eq!(events[1]["harness"]["event"], "notify");
    assert_eq!(
        events[1]["data"],
        serde_json::json!({"turn_id": s.turn_id(&off), "reason": "stop"})
    );
    assert_eq!(events[1]["session"]["cwd"], "~/work/project");
    let notify_off: Vec<Job> = jobs
        .into_iter()
        .filter(|j| j.event == "notify" && took(std::slice::from_ref(j), "notify", &off))
        .collect();

    // An ephemeral thread is not the person's session: nothing at all, hooks or notify.
    let ephemeral = s.exec(
        &["--ephemeral", "--dangerously-bypass-hook-trust"],
        "Run it once more.",
    );
    let (events, jobs) = s.settle(&ephemeral, |jobs| {
        took(jobs, "SessionEnd", &ephemeral) && took(jobs, "notify", &ephemeral)
    });
    assert!(events.is_empty(), "{events:#?}");
    let ephemeral_jobs: Vec<Job> = jobs
        .into_iter()
        .filter(|j| j.event != "notify" && took(std::slice::from_ref(j), &j.event, &ephemeral))
        .collect();
    assert_eq!(ephemeral_jobs.len(), 6);

    let took_s = started.elapsed().as_secs_f64();
    eprintln!("real Codex: three runs in {took_s:.1} s");
    assert!(
        took_s < 45.0,
        "the real Codex test must stay well under a minute"
    );

    if let Ok(dir) = std::env::var("SESSIONPIPE_RECORD_FIXTURES") {
        let dir = Path::new(&dir);
        let how = "codex exec against a scripted Responses API on loopback, hooks and notify written by `sessionpipe install`";
        let hooks: Vec<Job> = hooks_on
            .into_iter()
            .filter(|j| j.event != "notify")
            .collect();
        record(
            &hooks,
            dir,
            &format!("{how}, --dangerously-bypass-hook-trust"),
        );
        record(&notify_off, dir, &format!("{how}, --disable hooks"));
        // An ephemeral thread's notify is told by its missing rollout, which a
        // replay cannot see: only its hooks are kept.
        record(
            &ephemeral_jobs,
            &dir.join("ephemeral"),
            &format!("{how}, --ephemeral"),
        );
    }
}

const ASK: &str = "Run the shell command, then tell me what it printed.";

/// What the mock's every response says of the account.
const LIMITS: RateLimits = RateLimits {
    primary: Window {
        used_percent: 12.5,
        window_minutes: 300,
        reset_at: 1_795_990_000,
    },
    secondary: Some(Window {
        used_percent: 40.0,
        window_minutes: 10_080,
        reset_at: 1_796_500_000,
    }),
};

/// Makes `dir` a git repository on `main` whose origin URL holds credentials.
fn git_repo(dir: &Path) {
    for args in [
        &["init", "-q", "-b", "main"][..],
        &[
            "remote",
            "add",
            "origin",
            "https://ann:hunter2@github.com/ann/repo.git",
        ],
        &[
            "-c",
            "user.email=ann@example.com",
            "-c",
            "user.name=Ann",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "init",
        ],
    ] {
        let out = std::process::Command::new("git")
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .args(args)
            .output()
            .expect("git runs");
        assert!(out.status.success(), "git {args:?}: {out:?}");
    }
}

#[test]
fn real_codex_transcripts_facts_limits_and_backfill() {
    let Some(codex) = codex_binary() else {
        return;
    };
    let started = Instant::now();
    // Turn 1 runs a command and answers; turn 2 (a resume) answers at once;
    // turn 3 (another resume) runs a long command and is interrupted.
    let api = MockOpenAI::start_with_limits(
        vec![
            Step::command("echo hello"),
            Step::text("The command printed: hello"),
            Step::text("Nothing else to do."),
            Step::command("sleep 30"),
        ],
        LIMITS,
    );
    let s = setup(codex, api, true);
    git_repo(&s.project);
    let trust = "--dangerously-bypass-hook-trust";
    let thread = s.exec(&[trust], ASK);
    assert_eq!(
        s.exec(&[trust, "resume", &thread], "Anything else?"),
        thread
    );
    s.exec_interrupted(&[trust, "resume", &thread], "Sleep a while.", |jobs| {
        taken(jobs, "PreToolUse", &thread) == 2
    });
    let fork = s.exec(&[trust, "fork", &thread], "What did it print?");
    let (events, _) = s.settle(&thread, |jobs| {
        taken(jobs, "SessionEnd", &thread) == 3 && took(jobs, "SessionEnd", &fork)
    });
    assert_eq!(
        kinds(&events),
        [
            "session.started",
            "turn.started",
            "tool.started",
            "tool.ended",
            "turn.ended",
            "turn.transcript",
            "limits.observed",
            "session.ended",
            // The resume: the limits are the same, so they are not sent again.
            "session.started",
            "turn.started",
            "turn.ended",
            "turn.transcript",
            "session.ended",
            // Interrupted: no Stop; the turn ends with what it had said.
            "session.started",
            "turn.started",
            "tool.started",
            "turn.ended",
            "turn.transcript",
            "session.ended",
        ],
        "{events:#?}"
    );
    let interrupted = &events[events.len() - 3];
    assert_eq!(interrupted["data"]["reason"], "interrupt");
    let sides: Vec<_> = events
        .iter()
        .filter(|e| e["type"] == "turn.transcript")
        .map(|e| {
            let d = &e["data"];
            (
                d["turn"].as_u64(),
                d["user"].as_str(),
                d["assistant"].as_str(),
            )
        })
        .collect();
    assert_eq!(
        sides,
        [
            (Some(1), Some(ASK), Some("The command printed: hello")),
            (Some(2), Some("Anything else?"), Some("Nothing else to do.")),
            (Some(3), Some("Sleep a while."), Some("")),
        ]
    );
    let limits = events
        .iter()
        .find(|e| e["type"] == "limits.observed")
        .unwrap();
    assert_eq!(
        limits["data"],
        serde_json::json!({"windows": [
            {"id": "primary", "window_minutes": 300, "used_percent": 12.5, "resets_at": "2026-11-29T22:06:40.000Z"},
            {"id": "secondary", "window_minutes": 10080, "used_percent": 40.0, "resets_at": "2026-12-05T19:46:40.000Z"},
        ]})
    );
    // Facts: the version from the rollout stamps every event; the session block
    // has the model, the repository without its credentials, the branch, and
    // the first ask as the title.
    for e in &events {
        assert_eq!(e["harness"]["version"], VERSION, "{e}");
    }
    let session = &events.last().unwrap()["session"];
    assert_eq!(session["model"], "mock-model");
    assert_eq!(session["repo"], "https://github.com/ann/repo.git");
    assert_eq!(session["branch"], "main");
    assert_eq!(session["cwd"], "~/work/project");
    assert_eq!(
        (session["title"].as_str(), session["title_source"].as_str()),
        (Some(ASK), Some("first-ask"))
    );
    // The fork is a session of its own, with its own first turn.
    let forked: Vec<Value> =
        s.sb.events()
            .into_iter()
            .filter(|e| e["session"]["id"] == fork.as_str() && e["type"] == "turn.transcript")
            .collect();
    assert_eq!(forked.len(), 1);
    assert_eq!(forked[0]["data"]["user"], "What did it print?");

    // Each tier sees what it may: tier 1 no transcript, tier 0 still the limits.
    let at = |tier: &str| -> Vec<String> {
        s.sb.events_at(&["--tier", tier, "--session", &thread])
            .iter()
            .map(|e| e["type"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        at("2").iter().filter(|k| *k == "turn.transcript").count(),
        3
    );
    assert!(!at("1").iter().any(|k| k == "turn.transcript"));
    assert!(at("0").iter().any(|k| k == "limits.observed"));

    // Backfill: the daemon's outbox knows both sessions already; a fresh one
    // gets one `session.backfill` each, once.
    let backfill = |state: &Path| -> Value {
        let out =
            s.sb.command(sessionpipe_testkit::sandbox::bin("sessionpipe"))
                .env("SESSIONPIPE_STATE_DIR", state)
                .args(["backfill", "--json"])
                .output()
                .unwrap();
        assert!(out.status.success(), "{out:?}");
        let counts: Value = serde_json::from_slice(&out.stdout).unwrap();
        let codex = counts
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["harness"] == "codex");
        let c = codex.unwrap();
        serde_json::json!([c["found"], c["added"], c["known"]])
    };
    assert_eq!(backfill(&s.sb.state), serde_json::json!([2, 0, 2]));
    let fresh = s.sb.root().join("fresh-state");
    assert_eq!(backfill(&fresh), serde_json::json!([2, 2, 0]));
    assert_eq!(backfill(&fresh), serde_json::json!([2, 0, 2]), "idempotent");
    let tail =
        s.sb.command(sessionpipe_testkit::sandbox::bin("sessionpipe"))
            .env("SESSIONPIPE_STATE_DIR", &fresh)
            .args(["tail", "--json", "--no-follow", "--tier", "3"])
            .output()
            .unwrap();
    let past: Vec<Value> = String::from_utf8_lossy(&tail.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let b = past
        .iter()
        .find(|e| e["session"]["id"] == thread.as_str())
        .expect("the thread was backfilled");
    assert_eq!(
        (b["type"].as_str(), b["session"]["seq"].as_u64()),
        (Some("session.backfill"), Some(0))
    );
    assert_eq!(b["data"]["turns"], 3);
    assert_eq!(b["harness"]["version"], VERSION);
    for (key, want) in [
        ("cwd", "~/work/project"),
        ("branch", "main"),
        ("repo", "https://github.com/ann/repo.git"),
        ("model", "mock-model"),
        ("title", ASK),
    ] {
        assert_eq!(b["session"][key], want, "{key}");
    }
    let f = past
        .iter()
        .find(|e| e["session"]["id"] == fork.as_str())
        .unwrap();
    assert_eq!(f["data"]["turns"], 1);

    let took_s = started.elapsed().as_secs_f64();
    eprintln!("real Codex with transcripts: four runs and backfill in {took_s:.1} s");
    assert!(
        took_s < 45.0,
        "the real Codex test must stay well under a minute"
    );
}

fn archived_jobs(dir: &Path) -> Vec<Job> {
    if !dir.is_dir() {
        return Vec::new();
    }
    sessionpipe_core::conformance::harness::jobs_in(dir).unwrap()
}

fn record(jobs: &[Job], dir: &Path, how: &str) {
    sessionpipe_core::conformance::harness::record_fixtures(jobs, dir, VERSION, how).unwrap();
}
