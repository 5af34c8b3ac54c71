//! Control into the real Claude Code, offline: the machine paired with the
//! workspace receiver (`sessionpipe control pair`, approved with a software
//! passkey), commands signed for real and queued at the receiver, the real
//! hooks asking the real daemon. A `prompt` queued while a turn runs reaches
//! its Stop and the model's next request carries the framed words; a
//! `permission.answer` allow lets a real tool run, a deny stops it and the
//! model reads the note; each is acked once.

use serde_json::{Value, json};
use sessionpipe_receiver::Handle;
use sessionpipe_testkit::control::{self, Device};
use sessionpipe_testkit::{MockAnthropic, Sandbox, Script, Turn, sandbox::Daemon};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// A sandbox with Claude Code's hooks installed, paired with a workspace
/// receiver (control on rp id `localhost`) through its sink, its daemon polling.
pub(crate) struct Setup {
    pub(crate) sb: Sandbox,
    pub(crate) claude: PathBuf,
    pub(crate) project: PathBuf,
    pub(crate) device: Device,
    _rx: Handle,
    _daemon: Daemon,
}

pub(crate) fn setup(claude: PathBuf) -> Setup {
    let sb = Sandbox::new();
    let project = sb.home.join("work/project");
    std::fs::create_dir_all(&project).unwrap();
    let path = Sandbox::path_with(claude.parent().unwrap());
    let install = sb
        .command(sessionpipe_testkit::sandbox::bin("sessionpipe"))
        .env("PATH", &path)
        .args(["install", "--harness", "claude-code"])
        .output()
        .unwrap();
    assert!(install.status.success());
    let control::PairedMachine { rx, device } = control::paired_machine(&sb, &project);
    let daemon = sb.start_daemon();
    // The daemon polls once it said hello.
    device.wait_hello(Duration::from_secs(15), |h| h.is_object());
    Setup {
        sb,
        claude,
        project,
        device,
        _rx: rx,
        _daemon: daemon,
    }
}

fn claude_command(s: &Setup, api: &MockAnthropic, args: &[&str]) -> std::process::Command {
    let mut c = s.sb.command(&s.claude);
    c.current_dir(&s.project)
        .env("ANTHROPIC_BASE_URL", api.base_url())
        .env("ANTHROPIC_API_KEY", "sk-test-not-a-key")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("SHELL", "/bin/bash")
        .args(args)
        .args(["--output-format", "json"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    c
}

fn finish(child: std::process::Child) -> Value {
    let out = child.wait_with_output().expect("claude ends");
    assert!(
        out.status.success(),
        "claude failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("claude prints its JSON result")
}

/// The first event of `kind` in the outbox, waited for.
pub(crate) fn wait_event(sb: &Sandbox, kind: &str) -> Value {
    let evs = sb.wait_until(Duration::from_secs(60), |evs| {
        evs.iter().any(|e| e["type"] == kind)
    });
    evs.into_iter()
        .find(|e| e["type"] == kind)
        .unwrap_or_else(|| panic!("no {kind}"))
}

/// True when one of the model's requests carries `words`.
fn asked_with(api: &MockAnthropic, words: &str) -> bool {
    sessionpipe_testkit::http::any_body_has(&api.requests(), words)
}

#[test]
fn a_signed_prompt_reaches_a_running_turn_at_its_stop() {
    let Some(claude) = sessionpipe_testkit::harnesses::claude() else {
        return;
    };
    let s = setup(claude);
    // The turn runs a slow command, so the message comes while it runs.
    let api = MockAnthropic::start(Script::new([
        Turn::bash("sleep 4"),
        Turn::text("First answer."),
        Turn::text("The tests pass."),
    ]));
    let child = claude_command(&s, &api, &["-p", "Do the thing.", "--allowedTools", "Bash"])
        .spawn()
        .unwrap();
    let started = wait_event(&s.sb, "tool.started");
    let session = format!("claude-code:{}", started["session"]["id"].as_str().unwrap());
    let words = "Also run the tests, please.";
    let id = s.device.enqueue(
        &s.device.sign("prompt", &session, json!({"text": words})),
        120,
    );
    let result = finish(child);
    let ack = s.device.final_ack(&id, Duration::from_secs(30));
    // Acked with the reply of the turn that answered it, read from the
    // session's own transcript.
    assert_eq!(
        (
            ack["outcome"].as_str(),
            ack["mode"].as_str(),
            ack["reply"].as_str()
        ),
        (Some("delivered"), Some("turn"), Some("The tests pass.")),
        "{ack}"
    );
    // The model's next request carries the framed message, and the turn went
    // on to answer it.
    assert!(asked_with(&api, words), "no request carried the message");
    assert!(asked_with(&api, control::FRAMED), "not framed");
    assert_eq!(result["result"], "The tests pass.", "{result}");
    // Delivered once: a replay of the same command is refused.
    let again = s.device.enqueue(
        &s.device.sign("prompt", &session, json!({"text": words})),
        120,
    );
    let ack = s.device.final_ack(&again, Duration::from_secs(60));
    // No running turn and no process now: this daemon's PATH has no
    // `claude`, so the resume it would run fails and says why.
    assert_eq!(
        (ack["outcome"].as_str(), ack["detail"].as_str()),
        (Some("failed"), Some("claude is not on this machine's PATH")),
        "{ack}"
    );

    // A real session in a folder off the allowlist: refused `folder`.
    let elsewhere = s.sb.home.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let api = MockAnthropic::start(Script::new([Turn::text("Hi.")]));
    let mut c = claude_command(&s, &api, &["-p", "Say hi."]);
    c.current_dir(&elsewhere);
    let other = finish(c.spawn().unwrap());
    let other = format!("claude-code:{}", other["session_id"].as_str().unwrap());
    s.sb.wait_until(Duration::from_secs(30), |evs| {
        evs.iter().any(|e| {
            e["type"] == "session.ended"
                && format!("claude-code:{}", e["session"]["id"].as_str().unwrap_or("")) == other
        })
    });
    let off = s.device.enqueue(
        &s.device.sign("prompt", &other, json!({"text": words})),
        120,
    );
    let ack = s.device.final_ack(&off, Duration::from_secs(30));
    assert_eq!(
        (ack["outcome"].as_str(), ack["code"].as_str()),
        (Some("refused"), Some("folder")),
        "{ack}"
    );
}

#[test]
fn a_signed_allow_lets_a_real_tool_run_and_a_deny_stops_it_with_its_note() {
    let Some(claude) = sessionpipe_testkit::harnesses::claude() else {
        return;
    };
    let s = setup(claude);
    for (decision, note) in [("allow", None), ("deny", Some("Not on main, please."))] {
        let file = format!("made-by-{decision}.txt");
        let api = MockAnthropic::start(Script::bash_then_text(format!("touch {file}"), "Done."));
        let before = s.sb.events().len();
        let child = claude_command(
            &s,
            &api,
            &["-p", "Make the file.", "--permission-mode", "default"],
        )
        .spawn()
        .unwrap();
        // The real PermissionRequest waits on the daemon.
        let needed =
            s.sb.wait_event_after(before, "attention.needed", Duration::from_secs(60));
        let session = format!("claude-code:{}", needed["session"]["id"].as_str().unwrap());
        let mut fields = json!({"for": needed["data"]["attention_id"], "decision": decision});
        if let Some(n) = note {
            fields["note"] = json!(n);
        }
        let t = Instant::now();
        let signed = s.device.sign("permission.answer", &session, fields);
        let id = s.device.enqueue(&signed, 120);
        finish(child);
        assert!(t.elapsed() < Duration::from_secs(60));
        let ack = s.device.final_ack(&id, Duration::from_secs(30));
        assert_eq!(ack["outcome"], "delivered", "{ack}");
        let made = s.project.join(&file).exists();
        match decision {
            "allow" => assert!(made, "the allowed tool ran"),
            _ => {
                assert!(!made, "the denied tool did not run");
                assert!(asked_with(&api, note.unwrap()), "the model read the note");
            }
        }
        // A replayed command is refused `replay`.
        let replay = s.device.enqueue(&signed, 120);
        let ack = s.device.final_ack(&replay, Duration::from_secs(30));
        assert_eq!(ack["code"], "replay", "{ack}");
    }
}

#[test]
fn an_unpaired_machines_hooks_print_nothing_and_claude_code_asks_as_usual() {
    let Some(claude) = sessionpipe_testkit::harnesses::claude() else {
        return;
    };
    let sb = Sandbox::new();
    let project = sb.home.join("work/project");
    std::fs::create_dir_all(&project).unwrap();
    let path = Sandbox::path_with(claude.parent().unwrap());
    let install = sb
        .command(sessionpipe_testkit::sandbox::bin("sessionpipe"))
        .env("PATH", &path)
        .args(["install", "--harness", "claude-code"])
        .output()
        .unwrap();
    assert!(install.status.success());
    let _d = sb.start_daemon();
    let api = MockAnthropic::start(Script::bash_then_text("touch nope.txt", "It was refused."));
    let t = Instant::now();
    let out = sb
        .command(&claude)
        .current_dir(&project)
        .env("ANTHROPIC_BASE_URL", api.base_url())
        .env("ANTHROPIC_API_KEY", "sk-test-not-a-key")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .args([
            "-p",
            "Make the file.",
            "--permission-mode",
            "default",
            "--output-format",
            "json",
        ])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(
        !project.join("nope.txt").exists(),
        "nothing is ever auto-allowed"
    );
    assert!(
        t.elapsed() < Duration::from_secs(60),
        "no hook waited its window"
    );
}
