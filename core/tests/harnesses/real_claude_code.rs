//! The real Claude Code, offline, end to end: `sessionpipe install` writes hooks
//! into a temporary HOME, `claude -p` runs a whole turn against a scripted
//! Messages API on loopback (one Bash call, then text), its real hooks run the
//! real `sessionpipe-hook`, the daemon turns them into events.
//!
//! Claude Code comes from the npm registry (`e2e/package.json`, installed by
//! `scripts/test.sh`). Without it the test says so and passes, unless
//! `SESSIONPIPE_REQUIRE_HARNESSES=1` (set by the test script), where it fails.
//! With `SESSIONPIPE_RECORD_FIXTURES=DIR` it also writes the payloads it saw as
//! conformance fixtures into DIR.

use serde_json::Value;
use sessionpipe_core::spool::Job;
use sessionpipe_testkit::{MockAnthropic, Sandbox, Script, sandbox::Daemon};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Runs one `claude -p` turn in `project` and returns its JSON result.
fn run_claude(
    sb: &Sandbox,
    claude: &Path,
    api: &MockAnthropic,
    project: &Path,
    prompt: &str,
) -> Value {
    run_claude_with(
        sb,
        claude,
        api,
        project,
        &["-p", prompt, "--allowedTools", "Bash"],
    )
}

pub(crate) fn run_claude_with(
    sb: &Sandbox,
    claude: &Path,
    api: &MockAnthropic,
    project: &Path,
    args: &[&str],
) -> Value {
    let out = sb
        .command(claude)
        .current_dir(project)
        .env("ANTHROPIC_BASE_URL", api.base_url())
        .env("ANTHROPIC_API_KEY", "sk-test-not-a-key")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("SHELL", "/bin/bash")
        .args(args)
        .args(["--output-format", "json"])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("claude runs");
    assert!(
        out.status.success(),
        "claude failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("claude prints its JSON result")
}

/// The prompt id Claude Code gave the turn, from its own transcript.
fn prompt_id_from_transcript(home: &Path, session: &str) -> String {
    let projects = home.join(".claude/projects");
    for dir in std::fs::read_dir(&projects).unwrap().flatten() {
        let file = dir.path().join(format!("{session}.jsonl"));
        if let Ok(text) = std::fs::read_to_string(&file) {
            for line in text.lines() {
                let rec: Value = serde_json::from_str(line).unwrap_or(Value::Null);
                if rec["type"] == "user"
                    && let Some(id) = rec["promptId"].as_str()
                {
                    return id.to_string();
                }
            }
        }
    }
    panic!("no promptId in the transcript of {session}");
}

/// A sandbox with Claude Code's hooks installed and a daemon keeping every job.
pub(crate) struct Setup {
    pub(crate) sb: Sandbox,
    pub(crate) claude: PathBuf,
    pub(crate) archive: PathBuf,
    pub(crate) project: PathBuf,
    pub(crate) _daemon: Daemon,
}

pub(crate) fn setup(claude: PathBuf) -> Setup {
    let sb = Sandbox::new();
    let archive = sb.root().join("jobs");
    let project = sb.home.join("work/project");
    std::fs::create_dir_all(&project).unwrap();

    // `claude` on PATH is how the installer finds Claude Code in a fresh HOME.
    let path = sessionpipe_testkit::Sandbox::path_with(claude.parent().unwrap());
    let install = sb
        .command(sessionpipe_testkit::sandbox::bin("sessionpipe"))
        .env("PATH", &path)
        .args(["install", "--harness", "claude-code"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&install.stdout);
    assert!(
        install.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&install.stderr)
    );
    assert!(
        said.starts_with("claude-code: installed (~/.claude/settings.json)"),
        "{said}"
    );
    let again = sb
        .command(sessionpipe_testkit::sandbox::bin("sessionpipe"))
        .env("PATH", &path)
        .args(["install"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&again.stdout).contains("claude-code: current"));

    let daemon = sb.start_daemon_with(&[("SESSIONPIPE_JOB_ARCHIVE", archive.as_os_str())]);
    Setup {
        sb,
        claude,
        archive,
        project,
        _daemon: daemon,
    }
}

#[test]
fn a_real_claude_code_turn_becomes_protocol_events() {
    let Some(claude) = sessionpipe_testkit::harnesses::claude() else {
        return;
    };
    let Setup {
        sb,
        claude,
        archive,
        project,
        _daemon,
    } = setup(claude);
    let api = MockAnthropic::start(Script::bash_then_text(
        "echo hello",
        "The command printed: hello",
    ));
    let result = run_claude(
        &sb,
        &claude,
        &api,
        &project,
        "Run the shell command, then tell me what it printed.",
    );
    let session = result["session_id"]
        .as_str()
        .expect("a session id")
        .to_string();
    let tool_use_id = api
        .tool_use_ids()
        .first()
        .expect("the model asked for a tool")
        .clone();
    let prompt_id = prompt_id_from_transcript(&sb.home, &session);

    let events = wait_for(&sb, |evs| evs.iter().any(|e| e["type"] == "session.ended"));
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
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
        assert_eq!(e["session"]["id"], session.as_str());
        assert_eq!(e["session"]["cwd"], "~/work/project");
        assert_eq!(e["harness"]["name"], "claude-code");
        assert_eq!(e["harness"]["version"], "2.1.332");
        assert_eq!(
            e["session"]["attended"], false,
            "a headless run says ATTENDED=0"
        );
    }
    assert_eq!(events[0]["data"]["source"], "startup");
    assert_eq!(events[1]["data"]["turn_id"], prompt_id.as_str());
    for e in &events[2..4] {
        assert_eq!(e["data"]["tool"], "Bash");
        assert_eq!(e["data"]["call_id"], tool_use_id.as_str());
        assert_eq!(e["data"]["turn_id"], prompt_id.as_str());
    }
    assert_eq!(events[2]["data"]["input"]["command"], "echo hello");
    assert_eq!(events[3]["data"]["ok"], true);
    assert_eq!(events[3]["data"]["output"]["stdout"], "hello");
    assert_eq!(events[4]["data"]["reason"], "stop");
    assert_eq!(events[4]["data"]["turn_id"], prompt_id.as_str());
    assert_eq!(events[5]["data"]["reason"], "other");

    // Tier 0 sees the session's shape and none of its tools.
    let tier0: Vec<Value> = sb.events_at(&["--tier", "0"]);
    assert!(
        tier0
            .iter()
            .all(|e| !e["type"].as_str().unwrap().starts_with("tool."))
    );
    assert_eq!(tier0.len(), 4);

    let jobs = archived_jobs(&archive);
    assert_eq!(jobs.len(), 6, "one job per hook call");
    if let Ok(dir) = std::env::var("SESSIONPIPE_RECORD_FIXTURES") {
        record_fixtures(&jobs, Path::new(&dir));
    }
}

#[test]
fn a_failed_tool_a_refused_permission_and_a_compaction_from_real_runs() {
    let Some(claude) = sessionpipe_testkit::harnesses::claude() else {
        return;
    };
    let Setup {
        sb,
        claude,
        archive,
        project,
        _daemon,
    } = setup(claude);

    // A command that fails: PostToolUseFailure.
    let api = MockAnthropic::start(Script::bash_then_text(
        "ls /nonexistent-sessionpipe-test",
        "It failed.",
    ));
    let failed = run_claude(&sb, &claude, &api, &project, "List that folder.");
    let failed_id = failed["session_id"].as_str().unwrap().to_string();
    let failed_call = api.tool_use_ids()[0].clone();

    // A command that needs approval, with no tool allowed: PermissionRequest, and
    // `-p` refuses it at once.
    let api = MockAnthropic::start(Script::bash_then_text(
        "touch made-by-test.txt",
        "It was refused.",
    ));
    let refused = run_claude_with(
        &sb,
        &claude,
        &api,
        &project,
        &["-p", "Make the file.", "--permission-mode", "default"],
    );
    let refused_id = refused["session_id"].as_str().unwrap().to_string();

    // The refused session again, compacted: PreCompact then PostCompact.
    let api = MockAnthropic::start(Script::new([]));
    run_claude_with(
        &sb,
        &claude,
        &api,
        &project,
        &["-p", "/compact", "--continue"],
    );

    let events = wait_for(&sb, |evs| {
        evs.iter().filter(|e| e["type"] == "session.ended").count() >= 3
    });
    let of =
        |id: &str| -> Vec<&Value> { events.iter().filter(|e| e["session"]["id"] == id).collect() };

    let failed_events = of(&failed_id);
    let ended = failed_events
        .iter()
        .find(|e| e["type"] == "tool.ended")
        .expect("a tool.ended");
    assert_eq!(ended["data"]["ok"], false);
    assert_eq!(ended["data"]["call_id"], failed_call.as_str());
    assert!(
        ended["data"]["error"]
            .as_str()
            .is_some_and(|e| !e.is_empty()),
        "{ended}"
    );

    let refused_events = of(&refused_id);
    let kinds: Vec<&str> = refused_events
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    let start = kinds.iter().position(|k| *k == "tool.started").unwrap();
    assert_eq!(
        &kinds[start..start + 4],
        [
            "tool.started",
            "attention.needed",
            "attention.cleared",
            "turn.ended"
        ],
        "{kinds:?}"
    );
    let needed = refused_events[start + 1];
    let id = needed["data"]["attention_id"].as_str().unwrap();
    assert_eq!(needed["data"]["kind"], "permission");
    assert_eq!(needed["data"]["tool"], "Bash");
    assert_eq!(needed["data"]["message"], "Bash touch made-by-test.txt");
    assert_eq!(refused_events[start + 2]["data"]["attention_id"], id);
    // The minted id is the one a permission.answer must name: the same request
    // always hashes to it.
    let job = archived_jobs(&archive)
        .into_iter()
        .find(|j| j.event == "PermissionRequest")
        .expect("the PermissionRequest payload");
    let p: Value = serde_json::from_slice(&job.payload).unwrap();
    assert!(
        p.get("tool_use_id").is_none(),
        "Claude Code gives no tool use id here"
    );
    let want = sessionpipe_core::adapters::claude_code::permission_attention_id(
        p["prompt_id"].as_str().unwrap(),
        "Bash",
        &p["tool_input"],
    );
    assert_eq!(id, want);

    let compacted: Vec<&&Value> = refused_events
        .iter()
        .filter(|e| e["type"] == "context.compacted")
        .collect();
    assert_eq!(
        compacted.len(),
        1,
        "PreCompact and PostCompact are one compaction"
    );
    assert_eq!(compacted[0]["data"]["trigger"], "manual");
    let sources: Vec<&str> = refused_events
        .iter()
        .filter(|e| e["type"] == "session.started")
        .map(|e| e["data"]["source"].as_str().unwrap())
        .collect();
    assert_eq!(sources, ["startup", "resume", "compact"]);

    if let Ok(dir) = std::env::var("SESSIONPIPE_RECORD_FIXTURES") {
        let wanted = [
            "PostToolUseFailure",
            "PermissionRequest",
            "PreCompact",
            "PostCompact",
        ];
        let jobs: Vec<Job> = archived_jobs(&archive)
            .into_iter()
            .filter(|j| wanted.contains(&j.event.as_str()))
            .collect();
        record_fixtures(&jobs, Path::new(&dir));
    }
}

pub(crate) fn wait_for(sb: &Sandbox, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    sb.wait_until(Duration::from_secs(20), done)
}

fn archived_jobs(dir: &Path) -> Vec<Job> {
    sessionpipe_core::conformance::harness::jobs_in(dir).unwrap()
}

fn record_fixtures(jobs: &[Job], dir: &Path) {
    let how = "claude -p against a scripted Messages API on loopback, hooks written by `sessionpipe install`";
    sessionpipe_core::conformance::harness::record_fixtures(jobs, dir, "2.1.332", how).unwrap();
}
