//! Runs the real Claude Code (from `e2e/node_modules`) against [`MockAnthropic`] with a
//! recording hook on every hook event, and prints what happened.
//!
//! ```text
//! cargo run -p sessionpipe-testkit --example claude_probe [-- OPTIONS]
//!   --ask           no allowed tools, `--permission-mode default`; read-only commands
//!                   such as `echo` are still auto-approved, so pair it with e.g.
//!                   `--command "touch x"` to see PermissionRequest
//!   --command CMD   what the scripted model runs with Bash (default: `echo hello`)
//!   --agent         the scripted model starts a foreground subagent instead of Bash
//!   --prompt TEXT   the prompt (default: asks to run the command); `/compact` works
//!   --base-path P   appended to the mock's URL in ANTHROPIC_BASE_URL (`/nowhere`
//!                   makes every model call a 404, to see StopFailure)
//!   --then TEXT     afterwards, run `claude -p TEXT --continue` in the same HOME
//!                   (`--then /compact` shows PreCompact/PostCompact)
//!   --out DIR       where the HOME, hook records and report go (default: a new temp dir)
//!   --claude PATH   the claude binary (default: $CLAUDE_BIN, else e2e/node_modules)
//! ```
//!
//! Needs `npm install` in `e2e/` first. The run is hermetic: the environment is
//! cleared except `PATH`, `LANG` and `SHELL`, `HOME` is a fresh directory, and the
//! model API is the mock on loopback.

use std::fmt::Write as _;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use sessionpipe_testkit::{MockAnthropic, Request, Script, Turn};

/// Every Claude Code hook event the probe records.
const EVENTS: &[&str] = &[
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PermissionRequest",
    "Notification",
    "Stop",
    "StopFailure",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "PostCompact",
    "SessionEnd",
];
/// Events whose configuration takes a matcher.
const MATCHED: &[&str] = &[
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PermissionRequest",
];

const PROMPT: &str = "Run the shell command, then tell me what it printed.";
const TIMEOUT: Duration = Duration::from_secs(90);

/// Records one hook call: stdin to `NNN-EVENT.json`, the environment to `NNN-EVENT.env`.
/// A `mkdir` lock keeps the numbering right when hooks run at the same time.
const RECORDER: &str = r#"#!/bin/sh
out="__OUT__"
event="$1"
while ! mkdir "$out/.lock" 2>/dev/null; do sleep 0.01; done
n=$(cat "$out/.counter" 2>/dev/null || echo 0)
n=$((n + 1))
echo "$n" > "$out/.counter"
rmdir "$out/.lock"
name=$(printf '%03d-%s' "$n" "$event")
cat > "$out/$name.json"
env > "$out/$name.env"
exit 0
"#;

struct Options {
    prompt: String,
    then: Option<String>,
    base_path: String,
    ask: bool,
    agent: bool,
    command: String,
    out: Option<PathBuf>,
    claude: Option<PathBuf>,
}

fn parse_args() -> Options {
    let mut options = Options {
        prompt: PROMPT.to_string(),
        then: None,
        base_path: String::new(),
        ask: false,
        agent: false,
        command: "echo hello".to_string(),
        out: None,
        claude: std::env::var_os("CLAUDE_BIN").map(PathBuf::from),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--ask" => options.ask = true,
            "--then" => options.then = args.next(),
            "--prompt" => options.prompt = args.next().unwrap_or_default(),
            "--base-path" => options.base_path = args.next().unwrap_or_default(),
            "--agent" => options.agent = true,
            "--command" => options.command = args.next().unwrap_or_default(),
            "--out" => options.out = args.next().map(PathBuf::from),
            "--claude" => options.claude = args.next().map(PathBuf::from),
            other => {
                eprintln!("unknown argument {other}");
                std::process::exit(2);
            }
        }
    }
    options
}

/// The native binary npm left in the platform package (npm 11 runs no install script).
fn find_claude() -> Option<PathBuf> {
    let scope = Path::new(env!("CARGO_MANIFEST_DIR")).join("../e2e/node_modules/@anthropic-ai");
    let mut candidates: Vec<PathBuf> = fs::read_dir(&scope)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().unwrap_or_default().to_string_lossy();
            name.starts_with("claude-code-")
        })
        .map(|p| p.join("claude"))
        .filter(|p| p.is_file())
        .collect();
    candidates.sort();
    candidates.push(scope.join("claude-code/bin/claude.exe"));
    candidates.into_iter().find(|p| p.is_file())
}

fn settings(recorder: &Path) -> Value {
    let mut hooks = serde_json::Map::new();
    for event in EVENTS {
        let command = format!("{} {event}", recorder.display());
        let mut group = json!({"hooks": [{"type": "command", "command": command}]});
        if MATCHED.contains(event) {
            group["matcher"] = json!("");
        }
        hooks.insert((*event).to_string(), json!([group]));
    }
    json!({ "hooks": hooks })
}

fn describe(request: &Request) -> String {
    let body = request.json().unwrap_or(Value::Null);
    let streamed = body["stream"].as_bool().unwrap_or(false);
    let tools = body["tools"].as_array().map_or(0, Vec::len);
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let last = messages.last().map(|m| {
        let content = &m["content"];
        match content {
            Value::String(s) => format!("{}: {:.60}", m["role"], s),
            Value::Array(blocks) => {
                let kinds: Vec<String> = blocks
                    .iter()
                    .map(|b| b["type"].as_str().unwrap_or("?").to_string())
                    .collect();
                format!("{}: [{}]", m["role"], kinds.join(", "))
            }
            _ => String::new(),
        }
    });
    format!(
        "{} {} model={} stream={} tools={} max_tokens={} messages={} last={}",
        request.method,
        request.target,
        body["model"],
        streamed,
        tools,
        body["max_tokens"],
        messages.len(),
        last.unwrap_or_default()
    )
}

fn main() {
    let options = parse_args();
    let claude = options
        .claude
        .clone()
        .or_else(find_claude)
        .expect("no claude binary: run `npm install` in e2e/ or pass --claude");
    let stamp = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis();
    let out = options
        .out
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join(format!("claude-probe-{stamp}")));
    let home = out.join("home");
    let hooks_dir = out.join("hooks");
    let work = home.join("work/project");
    for dir in [&hooks_dir, &work, &home.join(".claude")] {
        fs::create_dir_all(dir).expect("create probe dirs");
    }
    let recorder = out.join("record-hook.sh");
    // A `sh` script, run by the Linux build of Claude Code in e2e/.
    sessionpipe_testkit::executable::write_executable(
        &recorder,
        &RECORDER.replace("__OUT__", &hooks_dir.display().to_string()),
    );
    fs::write(
        home.join(".claude/settings.json"),
        serde_json::to_string_pretty(&settings(&recorder)).unwrap(),
    )
    .unwrap();

    let script = if options.agent {
        Script::new([
            Turn::tool_use(
                "Agent",
                json!({"description": "Probe subagent", "prompt": "Say hi.",
                       "run_in_background": false}),
            ),
            Turn::text("The subagent finished."),
        ])
    } else {
        Script::bash_then_text(options.command.clone(), "The command printed: hello")
    };
    let mock = MockAnthropic::start(script);

    let base_url = format!("{}{}", mock.base_url(), options.base_path);
    let mut args = vec!["-p".to_string(), options.prompt.clone()];
    args.extend(["--output-format".into(), "json".into()]);
    if options.ask {
        args.extend(["--permission-mode".into(), "default".into()]);
    } else {
        args.extend(["--allowedTools".into(), "Bash,Agent".into()]);
    }
    let mut runs = vec![run(&claude, &args, &work, &home, &base_url)];
    if let Some(then) = &options.then {
        let args = vec![
            "-p".to_string(),
            then.clone(),
            "--continue".into(),
            "--output-format".into(),
            "json".into(),
        ];
        runs.push(run(&claude, &args, &work, &home, &base_url));
    }

    let mode = if options.ask { "ask" } else { "allowed" };
    let mut report = String::new();
    let _ = writeln!(report, "# claude probe ({mode})");
    let _ = writeln!(report, "claude: {}", claude.display());
    let _ = writeln!(report, "out: {}", out.display());
    let _ = writeln!(report, "tool use ids: {:?}", mock.tool_use_ids());
    for run in &runs {
        let _ = writeln!(report, "\n## run\ncommand: {}", run.line);
        let _ = writeln!(
            report,
            "exit: {}  elapsed: {:.2}s",
            run.status
                .map_or("killed after timeout".to_string(), |s| s.to_string()),
            run.elapsed.as_secs_f64()
        );
        let _ = writeln!(
            report,
            "### stdout\n{}\n### stderr\n{}",
            run.stdout, run.stderr
        );
    }
    let _ = writeln!(report, "## requests");
    for (i, request) in mock.requests().iter().enumerate() {
        let _ = writeln!(report, "{i:2}. {}", describe(request));
    }
    let mut fired: Vec<String> = fs::read_dir(&hooks_dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".json"))
                .collect()
        })
        .unwrap_or_default();
    fired.sort();
    let _ = writeln!(report, "\n## hooks fired");
    for name in &fired {
        let _ = writeln!(report, "{}", name.trim_end_matches(".json"));
    }
    print!("{report}");
    fs::write(out.join("report.txt"), &report).unwrap();

    // Keep the raw requests for a closer look.
    let requests: Vec<Value> = mock
        .requests()
        .iter()
        .map(|r| {
            json!({
                "method": r.method,
                "target": r.target,
                "headers": r.headers.iter()
                    .filter(|(n, _)| !n.eq_ignore_ascii_case("x-api-key")
                        && !n.eq_ignore_ascii_case("authorization"))
                    .map(|(n, v)| json!([n, v])).collect::<Vec<_>>(),
                "body": r.json().unwrap_or_else(|| json!(String::from_utf8_lossy(&r.body))),
            })
        })
        .collect();
    fs::write(
        out.join("requests.json"),
        serde_json::to_string_pretty(&requests).unwrap(),
    )
    .unwrap();
    if runs.iter().any(|r| r.status.is_none_or(|s| !s.success())) {
        std::process::exit(1);
    }
}

struct Run {
    line: String,
    status: Option<std::process::ExitStatus>,
    elapsed: Duration,
    stdout: String,
    stderr: String,
}

/// Runs claude once in a cleared environment; kills it after [`TIMEOUT`].
fn run(claude: &Path, args: &[String], work: &Path, home: &Path, base_url: &str) -> Run {
    let mut command = Command::new(claude);
    command
        .args(args)
        .current_dir(work)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("LANG", "C.UTF-8")
        .env("SHELL", "/bin/bash")
        .env("HOME", home)
        .env("ANTHROPIC_BASE_URL", base_url)
        .env("ANTHROPIC_API_KEY", "sk-test")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let line = format!("{command:?}");
    let started = Instant::now();
    let mut child = command.spawn().expect("spawn claude");
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait claude") {
            break Some(status);
        }
        if started.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let elapsed = started.elapsed();
    Run {
        line,
        status,
        elapsed,
        stdout: out_reader.join().unwrap_or_default(),
        stderr: err_reader.join().unwrap_or_default(),
    }
}
