//! The person answers the real interactive Claude Code in its terminal while
//! its `PermissionRequest` hook waits on the paired machine's daemon: the
//! machine paired with the workspace receiver as in `real_claude_code_control`
//! (its setup, reused), a scripted Messages API asking for one Bash command in
//! permission mode `default`, Claude Code in a terminal (`script`). The tool
//! runs, the attention clears `answered`, the waiting hook is released, and a
//! signed `permission.answer` sent afterwards is acked `expired`: first answer
//! wins. It owns this one scenario: the pairing is `real_claude_code_control`'s
//! and the terminal the test kit's, neither copied here.
//!
//! Measured on Claude Code 2.1.332 before this was written: Claude Code does
//! not wait for the hook to show its dialog. PreToolUse runs, then the
//! PermissionRequest hook starts, and a fraction of a second later (0.2 s in
//! the run timed at 200 ms) the screen shows "Bash command … Run touch
//! made-in-terminal.txt … Do you want to proceed? ❯ 1. Yes / 2. Yes, and always
//! allow access to … / 3. Yes, and switch to auto mode / 4. No" while the hook
//! still waits. With nobody answering, the dialog stays up past the daemon's
//! 120 s window (watched for 150 s: the screen kept the dialog and no further
//! event came). A key pressed as the dialog appears is dropped (at once: dropped
//! every time; 50 to 100 ms after it was seen: sometimes; 250 ms and later:
//! taken). Pressing `1` runs the tool at once (the file within 0.2 s), the
//! spinner says "running PermissionRequest hook", then "running PostToolUse
//! hook", and the hook process is gone within 0.4 s of the press.

use super::real_claude_code_control::{setup, wait_event};
use serde_json::json;
use sessionpipe_testkit::terminal::{Terminal, script_program};
use sessionpipe_testkit::{MockAnthropic, Sandbox, Script};
use std::path::Path;
use std::time::{Duration, Instant};

/// Running `sessionpipe-hook claude-code PermissionRequest` processes of the
/// sandbox whose home is `home` (read from `/proc`).
fn waiting_hooks(home: &Path) -> usize {
    let home = format!("HOME={}", home.display());
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return 0;
    };
    procs
        .flatten()
        .filter(|p| {
            let cmdline = std::fs::read(p.path().join("cmdline")).unwrap_or_default();
            let environ = std::fs::read(p.path().join("environ")).unwrap_or_default();
            cmdline.ends_with(b"claude-code\0PermissionRequest\0")
                && environ.split(|b| *b == 0).any(|v| v == home.as_bytes())
        })
        .count()
}

#[test]
fn answering_in_the_terminal_first_runs_the_tool_releases_the_hook_and_expires_a_later_answer() {
    let Some(claude) = sessionpipe_testkit::harnesses::claude() else {
        return;
    };
    let Some(script) = script_program() else {
        return;
    };
    let s = setup(claude);
    sessionpipe_testkit::harnesses::claude_first_run_done(&s.sb.home, &s.project);
    let api = MockAnthropic::start(Script::bash_then_text(
        "touch made-in-terminal.txt",
        "Made it.",
    ));
    let mut command = s.sb.command(&s.claude);
    command
        .current_dir(&s.project)
        .env("PATH", Sandbox::path_with(s.claude.parent().unwrap()))
        .env("SHELL", "/bin/bash")
        .env("ANTHROPIC_BASE_URL", api.base_url())
        .env("ANTHROPIC_AUTH_TOKEN", "test-token-not-a-key")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .args(["--permission-mode", "default"]);
    let mut term = Terminal::start(&script, &command);
    term.wait_for_text("❯", Duration::from_secs(60));
    term.type_line("Make the file.");

    // The real PermissionRequest waits on the daemon, and Claude Code shows
    // its own dialog meanwhile.
    let needed = wait_event(&s.sb, "attention.needed");
    let asked = Instant::now();
    term.wait_for_text("Doyouwanttoproceed?", Duration::from_secs(30));
    assert_eq!(waiting_hooks(&s.sb.home), 1, "the hook waits on the daemon");
    assert!(
        !s.sb
            .events()
            .iter()
            .any(|e| e["type"] == "attention.cleared"),
        "nobody answered yet"
    );
    let file = s.project.join("made-in-terminal.txt");
    assert!(!file.exists());

    // The person reads the dialog for a second (Claude Code drops a key
    // pressed as it appears) and presses 1 (Yes).
    std::thread::sleep(Duration::from_secs(1));
    let pressed = Instant::now();
    term.press("1");
    let cleared = wait_event(&s.sb, "attention.cleared");
    assert_eq!(
        cleared["data"],
        json!({"attention_id": needed["data"]["attention_id"], "how": "answered"})
    );
    assert!(file.exists(), "the tool the terminal allowed ran");
    while waiting_hooks(&s.sb.home) > 0 {
        assert!(
            pressed.elapsed() < Duration::from_secs(10),
            "the hook was not released"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        asked.elapsed() < Duration::from_secs(60),
        "answered and released well inside the hook's 120 s window"
    );
    term.wait_for_text("Madeit.", Duration::from_secs(30));

    // A signed answer for the same attention comes too late: an allow and a
    // deny are both `expired` (the prompt was open, and the terminal closed it).
    let session = format!("claude-code:{}", needed["session"]["id"].as_str().unwrap());
    for decision in ["allow", "deny"] {
        let late = s.device.sign(
            "permission.answer",
            &session,
            json!({"for": needed["data"]["attention_id"], "decision": decision}),
        );
        let id = s.device.enqueue(&late, 120);
        let ack = s.device.final_ack(&id, Duration::from_secs(30));
        assert_eq!(ack["outcome"], "expired", "{decision}: {ack}");
    }
    assert!(file.exists(), "what the terminal allowed stays done");
}
