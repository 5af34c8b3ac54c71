//! Control's rungs past the in-place ones, through the real daemon and the
//! workspace receiver, without a real harness: a live Claude Code session
//! (its registry record) whose inbox speaks the recorded line format takes a
//! message in place and its turn's end is the final ack; Antigravity, driven
//! through a scripted stand-in of its CLI (`testkit::agy`, not the real
//! binary, which no test machine has), starts a conversation whose id the
//! stand-in picks, and a prompt to the start's name continues it.

use serde_json::{Value, json};
use sessionpipe_testkit::Sandbox;
use sessionpipe_testkit::control::{self, Device};
use std::time::Duration;

fn payload(session: &str, cwd: &std::path::Path, event: &str) -> Vec<u8> {
    json!({"session_id": session, "transcript_path": "/nowhere.jsonl", "cwd": cwd,
           "hook_event_name": event, "prompt_id": "p1"})
    .to_string()
    .into_bytes()
}

#[test]
fn a_live_sessions_inbox_takes_one_line_and_its_turns_end_is_the_final_ack() {
    let sb = Sandbox::new();
    let project = sb.home.join("work/project");
    std::fs::create_dir_all(&project).unwrap();
    let control::PairedMachine { rx: _rx, device } = control::paired_machine(&sb, &project);
    let _daemon = sb.start_daemon();
    let s = "44444444-4444-4444-8444-444444444444";
    assert!(
        sb.hook(
            "claude-code",
            "SessionStart",
            &payload(s, &project, "SessionStart")
        )
        .status
        .success()
    );
    sb.wait_until(Duration::from_secs(10), |evs| {
        evs.iter().any(|e| e["type"] == "session.started")
    });
    // A live process holds the session and publishes an inbox of protocol 1.
    let mut holder = std::process::Command::new("sleep")
        .arg("600")
        .spawn()
        .unwrap();
    let socket_path = sb.root().join("inbox.sock");
    let inbox = sessionpipe_testkit::inbox::InboxSocket::bind(&socket_path).unwrap();
    sessionpipe_testkit::inbox::registry_record(
        &sb.home.join(".claude"),
        holder.id(),
        s,
        &socket_path,
        Some(1),
    )
    .unwrap();
    let id = device.enqueue(
        &device.sign(
            "prompt",
            &format!("claude-code:{s}"),
            json!({"text": "look at the logs"}),
        ),
        60,
    );
    let lines = inbox.wait_for(1, Duration::from_secs(15));
    let line: Value = serde_json::from_str(&lines[0]).unwrap();
    assert_eq!(
        (line["type"].as_str(), line["priority"].as_str()),
        (Some("user"), Some("later"))
    );
    let content = line["message"]["content"].as_str().unwrap();
    assert!(
        content.starts_with("<cross-session-message from-name=\"sessionpipe via 127.0.0.1\""),
        "{content}"
    );
    assert!(
        content.contains("(sessionpipe control, signed on the sender's device; message "),
        "{content}"
    );
    assert!(content.contains("\nlook at the logs\n"), "{content}");
    // Taken, not final: the session answers in a turn of its own.
    std::thread::sleep(Duration::from_millis(300));
    assert!(final_of(&device, &id).is_null());
    assert!(
        sb.hook("claude-code", "Stop", &payload(s, &project, "Stop"))
            .status
            .success()
    );
    let ack = device.final_ack(&id, Duration::from_secs(15));
    assert_eq!(
        (ack["outcome"].as_str(), ack["mode"].as_str()),
        (Some("delivered"), Some("api")),
        "{ack}"
    );
    assert_eq!(inbox.lines().len(), 1, "one line, once");
    let _ = holder.kill();
    let _ = holder.wait();
}

fn final_of(device: &Device, id: &str) -> Value {
    device.view()["messages"]
        .as_array()
        .and_then(|ms| ms.iter().find(|m| m["id"] == id).cloned())
        .map(|m| m["acks"]["final"].clone())
        .unwrap_or(Value::Null)
}

#[test]
fn antigravity_starts_through_its_cli_and_a_prompt_to_the_starts_name_continues_it() {
    let sb = Sandbox::new();
    let project = sb.home.join("work/project");
    std::fs::create_dir_all(&project).unwrap();
    let bin = sb.root().join("agy-bin");
    std::fs::create_dir_all(&bin).unwrap();
    sessionpipe_testkit::agy::stand_in(&bin, "Stand-in answer: all done.");
    let control::PairedMachine { rx: _rx, device } = control::paired_machine(&sb, &project);
    let path = Sandbox::path_with(&bin);
    let _daemon = sb.start_daemon_with(&[("PATH", path.as_ref())]);
    let hello = device.wait_hello(Duration::from_secs(20), |h| {
        h["starts"]["antigravity"].is_object()
    });
    assert_eq!(
        hello["starts"]["antigravity"]["levels"],
        json!(["safe"]),
        "a safe machine: {hello}"
    );
    let name = "9b2d4f6a-1c3e-4a5b-8d7f-0e1f2a3b4c5d";
    let session = format!("antigravity:{name}");
    let id = device.enqueue(
        &device.sign_start(&session, "Tidy the folder.", &project, &[]),
        60,
    );
    // A prompt right behind the start, to the start's name: it waits for the
    // start's run, then continues the conversation agy named.
    let behind = device.enqueue(
        &device.sign("prompt", &session, json!({"text": "Then the docs."})),
        60,
    );
    let ack = device.final_ack(&id, Duration::from_secs(30));
    assert_eq!(
        (
            ack["outcome"].as_str(),
            ack["session"].as_str(),
            ack["reply"].as_str()
        ),
        (
            Some("delivered"),
            Some(session.as_str()),
            Some("Stand-in answer: all done.")
        ),
        "{ack}"
    );
    let argv = |n: usize| -> Vec<String> {
        std::fs::read_to_string(bin.join(format!("agy-argv-{n}.txt")))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    };
    // The first call may be `--help` (the levels are read from it).
    let calls: Vec<Vec<String>> = (1..=4)
        .map(argv)
        .filter(|a| !a.is_empty() && a[0] != "--help")
        .collect();
    let start = &calls[0];
    assert!(
        start
            .windows(2)
            .any(|w| w == ["--output-format", "stream-json"]),
        "{start:?}"
    );
    assert!(
        start.iter().any(|a| a.starts_with("Tidy the folder.")),
        "{start:?}"
    );
    assert!(
        !start
            .iter()
            .any(|a| a == "--mode" || a.contains("dangerously")),
        "safe passes no flag: {start:?}"
    );
    assert!(!start.iter().any(|a| a == "--conversation"));

    let ack = device.final_ack(&behind, Duration::from_secs(30));
    assert_eq!(
        (ack["outcome"].as_str(), ack["mode"].as_str()),
        (Some("delivered"), Some("resume")),
        "{ack}"
    );
    let calls: Vec<Vec<String>> = (1..=6)
        .map(argv)
        .filter(|a| !a.is_empty() && a[0] != "--help")
        .collect();
    assert!(
        calls[1].iter().any(|a| a == "--conversation")
            && calls[1].iter().any(|a| a.contains("Then the docs.")),
        "after the start, in its conversation: {calls:?}"
    );

    // A prompt to the start's name continues the conversation agy picked.
    let id = device.enqueue(
        &device.sign("prompt", &session, json!({"text": "And the tests?"})),
        60,
    );
    let ack = device.final_ack(&id, Duration::from_secs(30));
    assert_eq!(
        (ack["outcome"].as_str(), ack["mode"].as_str()),
        (Some("delivered"), Some("resume")),
        "{ack}"
    );
    let calls: Vec<Vec<String>> = (1..=9)
        .map(argv)
        .filter(|a| !a.is_empty() && a[0] != "--help")
        .collect();
    let resumed = calls.last().unwrap();
    let at = resumed
        .iter()
        .position(|a| a == "--conversation")
        .expect("continued");
    assert_ne!(resumed[at + 1], name, "agy's own id, not the start's name");
    assert!(
        resumed.iter().any(|a| a.contains("And the tests?")),
        "{resumed:?}"
    );
}

#[test]
fn one_session_asks_another_harness_and_prints_its_whole_answer() {
    let sb = Sandbox::new();
    let project = sb.home.join("work/project");
    std::fs::create_dir_all(&project).unwrap();
    let bin = sb.root().join("agy-bin");
    std::fs::create_dir_all(&bin).unwrap();
    sessionpipe_testkit::agy::stand_in(&bin, "The folder is tidy now.");
    let control::PairedMachine {
        rx: _rx,
        device: _device,
    } = control::paired_machine(&sb, &project);
    let path = Sandbox::path_with(&bin);
    let _daemon = sb.start_daemon_with(&[("PATH", path.as_ref())]);
    let asker = "claude-code:55555555-5555-4555-8555-555555555555";
    let out = sb
        .command(sessionpipe_testkit::sandbox::bin("sessionpipe"))
        .current_dir(&project)
        .args([
            "ask",
            "antigravity",
            "--from",
            asker,
            "Tidy",
            "the",
            "folder.",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "The folder is tidy now."
    );
    // The asked session's words say whose task it is.
    let asked = (1..=4)
        .map(|n| std::fs::read_to_string(bin.join(format!("agy-argv-{n}.txt"))).unwrap_or_default())
        .find(|a| a.contains("Tidy the folder."))
        .expect("agy ran the task");
    assert!(
        asked.contains(&format!(
            "(Asked by {asker} on this machine with sessionpipe ask. Answer here in full:"
        )),
        "{asked}"
    );
    assert!(!asked.contains("--mode"), "never above safe: {asked}");

    // A folder off the control folders is refused, and says so.
    let elsewhere = sb.home.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let out = sb
        .command(sessionpipe_testkit::sandbox::bin("sessionpipe"))
        .current_dir(&elsewhere)
        .args(["ask", "antigravity", "Tidy."])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("control folders"),
        "{out:?}"
    );
}

#[test]
fn a_handoff_returns_at_once_and_its_answer_reaches_the_asking_session() {
    let sb = Sandbox::new();
    let project = sb.home.join("work/project");
    std::fs::create_dir_all(&project).unwrap();
    let bin = sb.root().join("agy-bin");
    std::fs::create_dir_all(&bin).unwrap();
    sessionpipe_testkit::agy::stand_in(&bin, "Docs written.");
    let control::PairedMachine {
        rx: _rx,
        device: _device,
    } = control::paired_machine(&sb, &project);
    let path = Sandbox::path_with(&bin);
    let _daemon = sb.start_daemon_with(&[("PATH", path.as_ref())]);
    // The asking session: known here, with its waiter listening.
    let asker = "66666666-6666-4666-8666-666666666666";
    assert!(
        sb.hook(
            "claude-code",
            "SessionStart",
            &payload(asker, &project, "SessionStart")
        )
        .status
        .success()
    );
    sb.wait_until(Duration::from_secs(10), |evs| {
        evs.iter().any(|e| e["type"] == "session.started")
    });
    let waiter = sb
        .command(sessionpipe_testkit::sandbox::bin("sessionpipe"))
        .args(["wait", "--session", &format!("claude-code:{asker}")])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let t = std::time::Instant::now();
    let out = sb
        .command(sessionpipe_testkit::sandbox::bin("sessionpipe"))
        .current_dir(&project)
        .args([
            "handoff",
            "antigravity",
            "--from",
            &format!("claude-code:{asker}"),
            "Write the docs.",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(t.elapsed() < Duration::from_secs(5), "returned at once");
    let got = waiter.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&got.stdout);
    // Named by the session the task started (its short id).
    assert!(
        text.starts_with("Answer from antigravity:")
            && !text.starts_with("Answer from antigravity: "),
        "{text}"
    );
    assert!(
        text.contains("(sessionpipe handoff, the task this session handed over):\nDocs written."),
        "{text}"
    );
}

#[test]
fn a_session_that_bypasses_permissions_is_never_handed_a_line_its_inbox_would_drop() {
    let sb = Sandbox::new();
    let project = sb.home.join("work/project");
    std::fs::create_dir_all(&project).unwrap();
    let control::PairedMachine { rx: _rx, device } = control::paired_machine(&sb, &project);
    let _daemon = sb.start_daemon();
    let s = "77777777-7777-4777-8777-777777777770";
    let mut start: Value = serde_json::from_slice(&payload(s, &project, "SessionStart")).unwrap();
    start["permission_mode"] = json!("bypassPermissions");
    assert!(
        sb.hook("claude-code", "SessionStart", start.to_string().as_bytes())
            .status
            .success()
    );
    sb.wait_until(Duration::from_secs(10), |evs| {
        evs.iter().any(|e| e["type"] == "session.started")
    });
    let mut holder = std::process::Command::new("sleep")
        .arg("600")
        .spawn()
        .unwrap();
    let socket_path = sb.root().join("inbox.sock");
    let inbox = sessionpipe_testkit::inbox::InboxSocket::bind(&socket_path).unwrap();
    sessionpipe_testkit::inbox::registry_record(
        &sb.home.join(".claude"),
        holder.id(),
        s,
        &socket_path,
        Some(1),
    )
    .unwrap();
    let id = device.enqueue(
        &device.sign(
            "prompt",
            &format!("claude-code:{s}"),
            json!({"text": "look"}),
        ),
        60,
    );
    // The next rung is a fork, which needs `claude` (not on this PATH).
    let ack = device.final_ack(&id, Duration::from_secs(15));
    assert_eq!(
        (ack["outcome"].as_str(), ack["detail"].as_str()),
        (Some("failed"), Some("claude is not on this machine's PATH")),
        "{ack}"
    );
    assert!(
        inbox.lines().is_empty(),
        "no line written: {:?}",
        inbox.lines()
    );
    let _ = holder.kill();
    let _ = holder.wait();
}
