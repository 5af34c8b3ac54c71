//! Control through the real daemon, the real hook binary and the workspace
//! receiver over real HTTP, signed for real by a software passkey: pairing from
//! the CLI, a permission answer reaching a waiting hook, a prompt reaching a
//! running turn's Stop, and every refusal the machine makes (replay, a folder
//! off the allowlist, no such attention, no such session), each acked once.
//! The real Claude Code runs the same paths in `harnesses/real_claude_code_control.rs`.

use serde_json::{Value, json};
use sessionpipe_receiver::Handle;
use sessionpipe_testkit::Sandbox;
use sessionpipe_testkit::control::{self, Device};
use std::time::{Duration, Instant};

struct Paired {
    sb: Sandbox,
    rx: Handle,
    device: Device,
    project: std::path::PathBuf,
    _daemon: sessionpipe_testkit::sandbox::Daemon,
}

fn paired() -> Paired {
    let sb = Sandbox::new();
    let project = sb.home.join("work/project");
    std::fs::create_dir_all(&project).unwrap();
    let control::PairedMachine { rx, device } = control::paired_machine(&sb, &project);
    let daemon = sb.start_daemon();
    Paired {
        sb,
        rx,
        device,
        project,
        _daemon: daemon,
    }
}

fn payload(session: &str, cwd: &std::path::Path, event: &str, extra: Value) -> Vec<u8> {
    let mut p = json!({"session_id": session, "transcript_path": "/nowhere.jsonl",
        "cwd": cwd, "hook_event_name": event, "prompt_id": "p1"});
    for (k, v) in extra.as_object().cloned().unwrap_or_default() {
        p[k] = v;
    }
    p.to_string().into_bytes()
}

/// One Claude Code hook call of `session` in `cwd`, which must exit 0.
fn hook_ok(sb: &Sandbox, session: &str, cwd: &std::path::Path, event: &str, extra: Value) {
    let out = sb.hook("claude-code", event, &payload(session, cwd, event, extra));
    assert!(out.status.success(), "{event}: {out:?}");
}

/// Waits for an event of `kind` of `session` in the outbox.
fn wait_event(sb: &Sandbox, session: &str, kind: &str) -> Value {
    let evs = sb.wait_until(Duration::from_secs(10), |evs| {
        evs.iter()
            .any(|e| e["type"] == kind && e["session"]["id"] == session)
    });
    evs.into_iter()
        .find(|e| e["type"] == kind && e["session"]["id"] == session)
        .unwrap_or_else(|| panic!("no {kind} for {session}"))
}

const BASH: &str = r#"{"tool_name":"Bash","tool_input":{"command":"touch x"}}"#;

#[test]
fn a_verified_answer_reaches_the_waiting_permission_hook_once() {
    let p = paired();
    let s = "11111111-1111-4111-8111-111111111111";
    let sess = format!("claude-code:{s}");
    let hello = p.device.wait_hello(Duration::from_secs(10), |h| {
        h["keys"].as_array().is_some_and(|k| !k.is_empty())
    });
    assert_eq!(hello["modes"], json!(["turn", "waiter"]), "{hello}");
    // Signed in to Claude Code: the next hello names the account.
    std::fs::create_dir_all(p.sb.home.join(".claude")).unwrap();
    std::fs::write(
        p.sb.home.join(".claude.json"),
        r#"{"oauthAccount":{"accountUuid":"acct-7","emailAddress":"ann@example.com"}}"#,
    )
    .unwrap();
    let hello = p.device.wait_hello(Duration::from_secs(10), |h| {
        h["accounts"]
            == json!([{"harness": "claude-code", "id": "acct-7", "email": "ann@example.com"}])
    });
    assert_eq!(
        hello["folders"],
        json!([p.project.canonicalize().unwrap()]),
        "{hello}"
    );
    hook_ok(
        &p.sb,
        s,
        &p.project,
        "UserPromptSubmit",
        json!({"prompt": "go"}),
    );

    // The permission hook waits on the daemon while the terminal would show
    // its own prompt.
    let sb = &p.sb;
    let asked = payload(
        s,
        &p.project,
        "PermissionRequest",
        serde_json::from_str(BASH).unwrap(),
    );
    let answer = std::thread::scope(|scope| {
        let hook = scope.spawn(|| sb.hook("claude-code", "PermissionRequest", &asked));
        let needed = wait_event(sb, s, "attention.needed");
        let attention = needed["data"]["attention_id"].as_str().unwrap().to_string();
        let signed = p.device.sign(
            "permission.answer",
            &sess,
            json!({"for": attention, "decision": "allow"}),
        );
        let id = p.device.enqueue(&signed, 60);
        let t = Instant::now();
        let out = hook.join().unwrap();
        let ack = p.device.final_ack(&id, Duration::from_secs(10));
        assert_eq!(ack["outcome"], "delivered", "{ack}");
        assert_eq!(ack["mode"], "turn");
        assert!(t.elapsed() < Duration::from_secs(10));

        // The same signed command again (a receiver's replay): refused.
        let again = p.device.enqueue(&signed, 60);
        let ack = p.device.final_ack(&again, Duration::from_secs(10));
        assert_eq!(
            (ack["outcome"].as_str(), ack["code"].as_str()),
            (Some("refused"), Some("replay")),
            "{ack}"
        );
        out
    });
    assert!(answer.status.success());
    let printed: Value = serde_json::from_slice(&answer.stdout).expect("the hook printed JSON");
    assert_eq!(
        printed["hookSpecificOutput"]["decision"]["behavior"], "allow",
        "{printed}"
    );

    // The tool then runs: the attention closes; a late answer is expired and
    // an allow for an attention never seen is refused.
    assert!(
        sb.hook(
            "claude-code",
            "PreToolUse",
            &payload(
                s,
                &p.project,
                "PreToolUse",
                serde_json::from_str(BASH).unwrap()
            )
        )
        .status
        .success()
    );
    wait_event(sb, s, "attention.cleared");
    let late = p.device.sign(
        "permission.answer",
        &sess,
        json!({"for": "perm-0000000000000000", "decision": "allow"}),
    );
    let id = p.device.enqueue(&late, 60);
    let ack = p.device.final_ack(&id, Duration::from_secs(10));
    assert_eq!(ack["code"], "no_attention", "{ack}");
    drop(p.rx);
}

#[test]
fn a_prompt_reaches_the_running_turn_at_its_stop_and_nothing_runs_off_the_allowlist() {
    let p = paired();
    let s = "22222222-2222-4222-8222-222222222222";
    let sess = format!("claude-code:{s}");
    let sb = &p.sb;
    hook_ok(
        sb,
        s,
        &p.project,
        "UserPromptSubmit",
        json!({"prompt": "go"}),
    );
    wait_event(sb, s, "turn.started");
    let signed = p
        .device
        .sign("prompt", &sess, json!({"text": "also run the tests"}));
    let id = p.device.enqueue(&signed, 60);
    // Verified and queued for the Stop: no final ack yet.
    let until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < until {
        let v = p.device.view();
        if v["messages"][0]["deliveries"].as_i64().unwrap_or(0) > 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    let stop = sb.hook(
        "claude-code",
        "Stop",
        &payload(s, &p.project, "Stop", json!({"stop_hook_active": false})),
    );
    let printed: Value = serde_json::from_slice(&stop.stdout).expect("the Stop printed a block");
    assert_eq!(printed["decision"], "block");
    let reason = printed["reason"].as_str().unwrap();
    assert!(reason.ends_with("\nalso run the tests"), "{reason}");
    assert!(
        reason.starts_with(
            "Message via 127.0.0.1 (sessionpipe control, signed on the sender's device; message "
        ),
        "{reason}"
    );
    // The next Stop takes nothing: one message, one delivery. It ends the
    // turn that answered the message: the final ack comes then (no
    // transcript here, so without a reply).
    let again = sb.hook(
        "claude-code",
        "Stop",
        &payload(s, &p.project, "Stop", json!({"stop_hook_active": true})),
    );
    assert!(again.stdout.is_empty());
    let ack = p.device.final_ack(&id, Duration::from_secs(10));
    assert_eq!(
        (ack["outcome"].as_str(), ack["mode"].as_str()),
        (Some("delivered"), Some("turn"))
    );

    // A session in a folder off the allowlist is refused `folder`; one this
    // machine never saw `no_session`.
    let other = "33333333-3333-4333-8333-333333333333";
    let elsewhere = sb.home.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    assert!(
        sb.hook(
            "claude-code",
            "UserPromptSubmit",
            &payload(
                other,
                &elsewhere,
                "UserPromptSubmit",
                json!({"prompt": "x"})
            )
        )
        .status
        .success()
    );
    wait_event(sb, other, "turn.started");
    let off = p.device.enqueue(
        &p.device.sign(
            "prompt",
            &format!("claude-code:{other}"),
            json!({"text": "hi"}),
        ),
        60,
    );
    assert_eq!(
        p.device.final_ack(&off, Duration::from_secs(10))["code"],
        "folder"
    );
    let unknown = p.device.enqueue(
        &p.device.sign(
            "prompt",
            "claude-code:44444444-4444-4444-8444-444444444444",
            json!({"text": "hi"}),
        ),
        60,
    );
    assert_eq!(
        p.device.final_ack(&unknown, Duration::from_secs(10))["code"],
        "no_session"
    );
    // A command signed for another machine is refused by the verifier.
    let mut foreign = p.device.sign("prompt", &sess, json!({"text": "x"}));
    foreign.cmd = foreign
        .cmd
        .replace(&p.device.machine, "m_someoneelse000000000");
    let bad = p.device.enqueue(&foreign, 60);
    let ack = p.device.final_ack(&bad, Duration::from_secs(10));
    assert_eq!(ack["outcome"], "refused");
}

#[test]
fn a_machine_without_control_asks_nothing_and_prints_nothing() {
    let sb = Sandbox::new();
    let _d = sb.start_daemon();
    let s = "55555555-5555-4555-8555-555555555555";
    let cwd = sb.home.clone();
    let t = Instant::now();
    let out = sb.hook(
        "claude-code",
        "PermissionRequest",
        &payload(
            s,
            &cwd,
            "PermissionRequest",
            serde_json::from_str(BASH).unwrap(),
        ),
    );
    assert!(out.status.success());
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(t.elapsed() < Duration::from_secs(3), "it did not wait");
    let stop = sb.hook("claude-code", "Stop", &payload(s, &cwd, "Stop", json!({})));
    assert!(stop.stdout.is_empty());
    assert!(!sb.state.join("control.on").exists());
}

#[test]
fn a_kill_between_verification_and_delivery_runs_the_command_once_and_acks_it_after() {
    let Paired {
        sb,
        rx: _rx,
        device,
        project,
        _daemon,
    } = paired();
    let s = "66666666-6666-4666-8666-666666666666";
    let sess = format!("claude-code:{s}");
    hook_ok(
        &sb,
        s,
        &project,
        "UserPromptSubmit",
        json!({"prompt": "go"}),
    );
    wait_event(&sb, s, "turn.started");
    let id = device.enqueue(
        &device.sign("prompt", &sess, json!({"text": "once only"})),
        60,
    );
    // Verified and kept (its nonce and its row) before the kill.
    let db = sb.state.join("outbox.db");
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let conn =
            rusqlite::Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
                .unwrap();
        let n: i64 = conn
            .query_row(
                "SELECT count(*) FROM control_messages WHERE state = 'queued'",
                [],
                |r| r.get(0),
            )
            .unwrap_or(0);
        if n == 1 {
            break;
        }
        assert!(Instant::now() < until, "the message was never kept");
        std::thread::sleep(Duration::from_millis(50));
    }
    _daemon.kill();
    let _again = sb.start_daemon();
    let stop = sb.hook(
        "claude-code",
        "Stop",
        &payload(s, &project, "Stop", json!({})),
    );
    let printed: Value =
        serde_json::from_slice(&stop.stdout).expect("the Stop after the restart took it");
    assert!(printed["reason"].as_str().unwrap().ends_with("once only"));
    let second = sb.hook(
        "claude-code",
        "Stop",
        &payload(s, &project, "Stop", json!({})),
    );
    assert!(second.stdout.is_empty(), "delivered once");
    // Its turn ended: the final ack.
    let ack = device.final_ack(&id, Duration::from_secs(10));
    assert_eq!(ack["outcome"], "delivered");
    let view = device.view();
    let m = &view["messages"].as_array().unwrap()[0];
    assert_eq!(m["acks"]["duplicates"], 0, "one final ack: {m}");
}

/// A message kept while it waits, whose kept form no longer reads (here its
/// prompt lost its words), is answered after the restart: `failed`, with
/// why, and never run; it is not left waiting for an ack that never comes.
#[test]
fn a_kept_message_that_does_not_read_is_acked_failed_with_why() {
    let Paired {
        sb,
        rx: _rx,
        device,
        project,
        _daemon,
    } = paired();
    let s = "68686868-6868-4868-8868-686868686868";
    let sess = format!("claude-code:{s}");
    hook_ok(
        &sb,
        s,
        &project,
        "UserPromptSubmit",
        json!({"prompt": "go"}),
    );
    wait_event(&sb, s, "turn.started");
    let id = device.enqueue(
        &device.sign("prompt", &sess, json!({"text": "never run"})),
        60,
    );
    let db = sb.state.join("outbox.db");
    let until = Instant::now() + Duration::from_secs(10);
    while rusqlite::Connection::open(&db)
        .unwrap()
        .query_row(
            "SELECT count(*) FROM control_messages WHERE state = 'queued'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .unwrap_or(0)
        != 1
    {
        assert!(Instant::now() < until, "the message was never kept");
        std::thread::sleep(Duration::from_millis(50));
    }
    _daemon.kill();
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute(
            "UPDATE control_messages SET command = json_remove(command, '$.text') WHERE state = 'queued'",
            [],
        )
        .unwrap();
    let _again = sb.start_daemon();
    let ack = device.final_ack(&id, Duration::from_secs(10));
    assert_eq!(ack["outcome"], "failed", "{ack}");
    let detail = ack["detail"].as_str().unwrap();
    assert!(
        detail.contains("a kept prompt has no text") && detail.contains("it was not run"),
        "{detail}"
    );
    // Never handed over: the Stop gets nothing.
    let stop = sb.hook(
        "claude-code",
        "Stop",
        &payload(s, &project, "Stop", json!({})),
    );
    assert!(stop.stdout.is_empty(), "it was run");
    let view = device.view();
    let m = &view["messages"].as_array().unwrap()[0];
    assert_eq!(m["acks"]["duplicates"], 0, "one final ack: {m}");
}

#[test]
fn the_terminal_answering_first_releases_the_hook_and_a_later_answer_is_expired() {
    let p = paired();
    let s = "77777777-7777-4777-8777-777777777777";
    let sess = format!("claude-code:{s}");
    let sb = &p.sb;
    hook_ok(
        sb,
        s,
        &p.project,
        "UserPromptSubmit",
        json!({"prompt": "go"}),
    );
    let asked = payload(
        s,
        &p.project,
        "PermissionRequest",
        serde_json::from_str(BASH).unwrap(),
    );
    let (out, attention) = std::thread::scope(|scope| {
        let hook = scope.spawn(|| sb.hook("claude-code", "PermissionRequest", &asked));
        let needed = wait_event(sb, s, "attention.needed");
        std::thread::sleep(Duration::from_millis(200));
        // The person answered in the terminal: the tool starts.
        let t = Instant::now();
        assert!(
            sb.hook(
                "claude-code",
                "PreToolUse",
                &payload(
                    s,
                    &p.project,
                    "PreToolUse",
                    serde_json::from_str(BASH).unwrap()
                )
            )
            .status
            .success()
        );
        let out = hook.join().unwrap();
        assert!(t.elapsed() < Duration::from_secs(5), "released at once");
        (
            out,
            needed["data"]["attention_id"].as_str().unwrap().to_string(),
        )
    });
    assert!(out.stdout.is_empty(), "released without an answer");
    let cleared = wait_event(sb, s, "attention.cleared");
    assert_eq!(cleared["data"]["how"], "answered");
    // A late allow is `expired` too: the prompt was open, and it closed.
    for decision in ["deny", "allow"] {
        let late = p.device.sign(
            "permission.answer",
            &sess,
            json!({"for": attention, "decision": decision}),
        );
        let id = p.device.enqueue(&late, 60);
        assert_eq!(
            p.device.final_ack(&id, Duration::from_secs(10))["outcome"],
            "expired",
            "{decision}"
        );
    }
}

#[test]
fn a_waiter_gets_its_sessions_message_across_a_daemon_restart() {
    let Paired {
        sb,
        rx: _rx,
        device,
        project,
        _daemon,
    } = paired();
    let s = "88888888-8888-4888-8888-888888888888";
    let sess = format!("claude-code:{s}");
    hook_ok(
        &sb,
        s,
        &project,
        "SessionStart",
        json!({"source": "startup"}),
    );
    wait_event(&sb, s, "session.started");
    let waiter = sb
        .command(sessionpipe_testkit::sandbox::bin("sessionpipe"))
        .args(["wait", "--session", &sess])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    device.wait_hello(Duration::from_secs(10), |h| h["waiting"] == json!([sess]));
    // The daemon goes and comes back: the waiter reconnects in silence.
    let before = device.view()["hello_at"].as_str().unwrap().to_string();
    _daemon.kill();
    let _again = sb.start_daemon();
    // The new daemon's hello (not the one the receiver kept) names the waiter.
    let until = Instant::now() + Duration::from_secs(15);
    loop {
        let v = device.view();
        if v["hello_at"].as_str().is_some_and(|t| t > before.as_str())
            && v["hello"]["waiting"] == json!([sess])
        {
            break;
        }
        assert!(Instant::now() < until, "the waiter did not come back: {v}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let id = device.enqueue(
        &device.sign("prompt", &sess, json!({"text": "wake up"})),
        60,
    );
    let out = waiter.wait_with_output().unwrap();
    assert!(out.status.success());
    // The session answers it in the turn the waiter's output starts; its end
    // is the final ack (no transcript here: without a reply).
    sb.hook(
        "claude-code",
        "Stop",
        &payload(s, &project, "Stop", json!({})),
    );
    let ack = device.final_ack(&id, Duration::from_secs(10));
    assert_eq!(
        (ack["outcome"].as_str(), ack["mode"].as_str()),
        (Some("delivered"), Some("waiter")),
        "{ack}"
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("Message via "), "{text}");
    assert!(text.trim_end().ends_with("wake up"), "{text}");
    assert_eq!(
        (ack["outcome"].as_str(), ack["mode"].as_str()),
        (Some("delivered"), Some("waiter"))
    );
}

#[test]
fn a_trusted_device_vouches_for_a_new_passkey_and_an_untrusted_one_is_refused() {
    let p = paired();
    let s = "99999999-9999-4999-8999-999999999999";
    let sess = format!("claude-code:{s}");
    let sb = &p.sb;
    hook_ok(
        sb,
        s,
        &p.project,
        "UserPromptSubmit",
        json!({"prompt": "go"}),
    );
    wait_event(sb, s, "turn.started");
    let port = reqwest::Url::parse(&p.rx.url()).unwrap().port().unwrap();
    let phone = sessionpipe_verifier::softkey::SoftPasskey::es256(
        "localhost",
        &format!("http://localhost:{port}"),
    );
    let other = p.device.another(phone.clone());
    // Before it is enrolled, the phone's commands are refused.
    let early = other.enqueue(&other.sign("prompt", &sess, json!({"text": "hi"})), 60);
    assert_eq!(
        p.device.final_ack(&early, Duration::from_secs(10))["code"],
        "untrusted_key"
    );
    // The trusted device signs `key.add` for it.
    let add = p.device.sign(
        "key.add",
        "sessionpipe:keys",
        json!({"key": phone.trusted(), "name": "Ann's phone"}),
    );
    let id = p.device.enqueue(&add, 60);
    assert_eq!(
        p.device.final_ack(&id, Duration::from_secs(10))["outcome"],
        "delivered"
    );
    let keys = sb.sessionpipe(&["control", "keys"]);
    let listed = String::from_utf8_lossy(&keys.stdout);
    assert!(listed.contains("Ann's phone"), "{listed}");
    assert_eq!(listed.lines().count(), 2, "{listed}");
    // Now the phone's prompt is verified and queued for the Stop.
    let later = other.enqueue(
        &other.sign("prompt", &sess, json!({"text": "from the phone"})),
        60,
    );
    std::thread::sleep(Duration::from_millis(500));
    let stop = sb.hook(
        "claude-code",
        "Stop",
        &payload(s, &p.project, "Stop", json!({})),
    );
    let printed: Value = serde_json::from_slice(&stop.stdout).expect("a block");
    assert!(
        printed["reason"]
            .as_str()
            .unwrap()
            .ends_with("from the phone")
    );
    sb.hook(
        "claude-code",
        "Stop",
        &payload(s, &p.project, "Stop", json!({})),
    );
    assert_eq!(
        p.device.final_ack(&later, Duration::from_secs(10))["outcome"],
        "delivered"
    );
    // Removing it at the machine: refused again.
    let id_arg = phone.trusted().id;
    assert!(
        sb.sessionpipe(&["control", "keys", "remove", &id_arg])
            .status
            .success()
    );
    let gone = other.enqueue(&other.sign("prompt", &sess, json!({"text": "x"})), 60);
    assert_eq!(
        p.device.final_ack(&gone, Duration::from_secs(10))["code"],
        "untrusted_key"
    );
}

#[test]
fn a_harness_without_an_answer_channel_is_acked_unsupported() {
    let p = paired();
    // Gemini CLI's session ids are UUIDs (ADAPTERS.md; the verifier holds a
    // command to that).
    let s = "8b84d4a5-2937-46c4-b6b0-d907dc578c89";
    let sb = &p.sb;
    let payload = json!({"session_id": s, "transcript_path": "/nowhere.json", "cwd": p.project,
        "hook_event_name": "BeforeAgent", "prompt": "go", "timestamp": "2026-12-01T00:00:00Z"});
    assert!(
        sb.hook("gemini-cli", "BeforeAgent", payload.to_string().as_bytes())
            .status
            .success()
    );
    wait_event(sb, s, "turn.started");
    let id = p.device.enqueue(
        &p.device.sign(
            "permission.answer",
            &format!("gemini-cli:{s}"),
            json!({"for": "notif-1", "decision": "allow"}),
        ),
        60,
    );
    let ack = p.device.final_ack(&id, Duration::from_secs(10));
    assert_eq!(ack["outcome"], "unsupported", "{ack}");
    let cancel = p.device.enqueue(
        &p.device
            .sign("cancel", &format!("gemini-cli:{s}"), json!({})),
        60,
    );
    assert_eq!(
        p.device.final_ack(&cancel, Duration::from_secs(10))["outcome"],
        "unsupported"
    );
}

#[test]
fn connect_sets_a_machine_up_in_one_go_a_sink_pairing_and_hooks() {
    let sb = Sandbox::new();
    let project = sb.home.join("work/project");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(sb.home.join(".claude")).unwrap();
    let mut o = sessionpipe_receiver::Options::new(control::TOKEN);
    o.control = Some(sessionpipe_receiver::ControlOptions::new("localhost"));
    let rx = sessionpipe_receiver::Receiver::start(o).unwrap();
    let folder = project.to_string_lossy().into_owned();
    let device = control::pair_by(
        &sb,
        &["connect", &rx.url(), "--token-stdin", "--folder", &folder],
        Some(&format!("{}\n", control::TOKEN)),
        &rx.url(),
        control::TOKEN,
    );
    let sinks = String::from_utf8_lossy(&sb.sessionpipe(&["sink", "list"]).stdout).into_owned();
    assert!(
        sinks.contains(&rx.url().trim_end_matches('/').to_string()),
        "{sinks}"
    );
    let status = String::from_utf8_lossy(&sb.sessionpipe(&["control", "status", "--json"]).stdout)
        .into_owned();
    let doc: Value = serde_json::from_str(&status).unwrap();
    assert_eq!(
        doc["receivers"][0]["machine"],
        device.machine.as_str(),
        "{doc}"
    );
    assert_eq!(doc["receivers"][0]["account"], "test-person");
    let settings = std::fs::read_to_string(sb.home.join(".claude/settings.json")).unwrap();
    assert!(
        settings.contains("sessionpipe-hook"),
        "hooks installed: {settings}"
    );
}

/// Pairing proposes tier 1 and says why in one line; `--tier 0` still pairs,
/// and is said plainly: `connect` with no `--tier`, `connect --tier 0` and
/// `control pair` with none, each against a receiver with open pairing (the
/// sink it hands over gets the tier).
#[test]
fn pairing_proposes_tier_1_saying_why_and_says_tier_0_plainly() {
    use sessionpipe_core::protocol::asked::{HIDDEN_SENTENCE, TIER_1_SENTENCE};
    let mut c = sessionpipe_receiver::ControlOptions::new("localhost");
    c.open_pairing = true;
    let mut o = sessionpipe_receiver::Options::new(control::TOKEN);
    o.control = Some(c);
    let rx = sessionpipe_receiver::Receiver::start(o).unwrap();
    for (args, tier, sentence) in [
        (&["connect"][..], 1, TIER_1_SENTENCE),
        (&["connect", "--tier", "0"][..], 0, HIDDEN_SENTENCE),
        (&["control", "pair"][..], 1, TIER_1_SENTENCE),
    ] {
        let sb = Sandbox::new();
        let project = sb.home.join("work/project");
        std::fs::create_dir_all(&project).unwrap();
        std::fs::create_dir_all(sb.home.join(".claude")).unwrap();
        state_made(&sb);
        let folder = project.to_string_lossy().into_owned();
        let url = rx.url();
        let mut all = args.to_vec();
        all.extend([url.as_str(), "--folder", folder.as_str()]);
        let (device, said) = control::pair_by_saying(&sb, &all, None, &url, control::TOKEN);
        let origin = url.trim_end_matches('/');
        let at = said
            .iter()
            .position(|l| l == &format!("added a sink for {origin} (tier {tier})"))
            .unwrap_or_else(|| panic!("{args:?}: the tier is said: {said:#?}"));
        assert_eq!(
            said.get(at + 1).map(String::as_str),
            Some(sentence),
            "{args:?}: and what it means, on the next line: {said:#?}"
        );
        let other = if tier == 0 {
            TIER_1_SENTENCE
        } else {
            HIDDEN_SENTENCE
        };
        assert!(!said.iter().any(|l| l == other), "{args:?}: {said:#?}");
        let sinks: Value =
            serde_json::from_slice(&sb.sessionpipe(&["sink", "list", "--json"]).stdout)
                .expect("sink list --json");
        assert_eq!(sinks[0]["tier"], tier, "{args:?}: {sinks}");
        let status =
            String::from_utf8_lossy(&sb.sessionpipe(&["control", "status"]).stdout).into_owned();
        assert!(
            status.contains(&format!("  its sink: tier {tier}. {sentence}")),
            "{args:?}: control status says the tier: {status}"
        );
        let status: Value =
            serde_json::from_slice(&sb.sessionpipe(&["control", "status", "--json"]).stdout)
                .expect("control status --json");
        assert_eq!(status["receivers"][0]["tier"], tier, "{args:?}: {status}");
        // The hello tells the page, which says the tier-0 sentence by the machine.
        let _daemon = sb.start_daemon();
        device.wait_hello(Duration::from_secs(15), |h| h["tier"] == tier);
    }
}

#[test]
fn a_pairing_whose_status_poll_is_answered_429_waits_and_pairs() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let sb = Sandbox::new();
    let project = sb.home.join("work/project");
    std::fs::create_dir_all(&project).unwrap();
    state_made(&sb);
    let mut c = sessionpipe_receiver::ControlOptions::new("localhost");
    c.open_pairing = true;
    let mut o = sessionpipe_receiver::Options::new(control::TOKEN);
    o.control = Some(c);
    let rx = sessionpipe_receiver::Receiver::start(o).unwrap();
    // Someone else at this machine's address asks after pairings a hundred
    // times as fast as its share refills (5 a second), for FLOOD: a status
    // poll from here is answered 429 meanwhile (all but by a whisker).
    const FLOOD: Duration = Duration::from_secs(8);
    let (stop, refused) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicUsize::new(0)),
    );
    let flooder = {
        let (stop, refused, url) = (Arc::clone(&stop), Arc::clone(&refused), rx.url());
        std::thread::spawn(move || {
            let c = reqwest::blocking::Client::new();
            while !stop.load(Ordering::SeqCst) {
                if let Ok(r) = c.get(format!("{url}/v1/control/pair?code=000000")).send()
                    && r.status() == 429
                {
                    refused.fetch_add(1, Ordering::SeqCst);
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        })
    };
    let started = Instant::now();
    while refused.load(Ordering::SeqCst) == 0 {
        assert!(started.elapsed() < Duration::from_secs(20), "never refused");
        std::thread::sleep(Duration::from_millis(20));
    }
    let flood_ends = Instant::now() + FLOOD;
    {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            std::thread::sleep(flood_ends.saturating_duration_since(Instant::now()));
            stop.store(true, Ordering::SeqCst);
        });
    }
    // The pairing is approved at once; the machine learns it once its polls
    // are answered again, and pairs then instead of giving up at the first
    // 429 (pair_by panics when the pairing fails).
    let folder = project.to_string_lossy().into_owned();
    let device = control::pair_by(
        &sb,
        &["control", "pair", &rx.url(), "--folder", &folder],
        None,
        &rx.url(),
        control::TOKEN,
    );
    flooder.join().unwrap();
    assert!(
        refused.load(Ordering::SeqCst) > 100,
        "the flood was refused"
    );
    let status = String::from_utf8_lossy(&sb.sessionpipe(&["control", "status", "--json"]).stdout)
        .into_owned();
    let doc: Value = serde_json::from_str(&status).unwrap();
    assert_eq!(
        doc["receivers"][0]["machine"],
        device.machine.as_str(),
        "{doc}"
    );
}

/// The state folder as a machine that has run sessionpipe before has it
/// (`control pair` does not make it itself): 0700 where files have mode bits.
fn state_made(sb: &Sandbox) {
    let mut folder = std::fs::DirBuilder::new();
    folder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        folder.mode(0o700);
    }
    folder.create(&sb.state).unwrap();
}
