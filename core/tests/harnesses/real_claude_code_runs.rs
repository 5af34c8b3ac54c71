//! Control's headless rungs on the real Claude Code, offline: the machine
//! paired with the workspace receiver, commands signed for real, the real
//! daemon running the real `claude -p` against a scripted Anthropic API.
//! A `start` runs a new session in an allowed folder and its reply comes back
//! in the ack (with `progress` acks growing while the model streams slowly);
//! a `prompt` to a session no process holds resumes it; one to a session a
//! live process holds (a registry record whose inbox speaks another protocol)
//! forks it, and the next goes to the same fork; a start's two files land on
//! disk and the model sees their list, a file whose bytes are not the signed
//! hash starts nothing; the eleventh start in an hour is refused. A signed
//! `cancel` stops a start's running turn through Claude Code's own interrupt
//! (the Agent SDK's `control_request` on the run's stdin), offered in the
//! hello's `cancels` only while that turn runs.

use serde_json::{Value, json};
use sessionpipe_receiver::Handle;
use sessionpipe_testkit::control::{self, Device};
use sessionpipe_testkit::{MockAnthropic, Sandbox, Script, Turn, sandbox::Daemon};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub(crate) struct Setup {
    pub(crate) sb: Sandbox,
    pub(crate) project: PathBuf,
    pub(crate) device: Device,
    pub(crate) rx: Handle,
    _daemon: Daemon,
}

/// A paired sandbox whose daemon finds `claude` on its PATH and talks to
/// `api` (the daemon's runs inherit its environment, as a person's do).
pub(crate) fn setup(claude: &Path, api: &MockAnthropic) -> Setup {
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
    // A destination at tier 2: transcripts are read, and a run's growing
    // reply is a `turn.progress` event too.
    let config = sb.state.join("config.json");
    let mut c: Value = serde_json::from_slice(&std::fs::read(&config).unwrap()).unwrap();
    c["transcripts"] = json!(true);
    std::fs::write(&config, c.to_string()).unwrap();
    let base = api.base_url();
    let daemon = sb.start_daemon_with(&[
        ("PATH", path.as_ref()),
        ("ANTHROPIC_BASE_URL", base.as_ref()),
        ("ANTHROPIC_API_KEY", "sk-test-not-a-key".as_ref()),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".as_ref()),
        ("SHELL", "/bin/bash".as_ref()),
    ]);
    device.wait_hello(Duration::from_secs(20), |h| {
        h["starts"]["claude-code"].is_object()
    });
    Setup {
        sb,
        project,
        device,
        rx,
        _daemon: daemon,
    }
}

pub(crate) fn uuid() -> String {
    let r: [u8; 16] = rand_bytes();
    format!(
        "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        u32::from_be_bytes([r[0], r[1], r[2], r[3]]),
        u16::from_be_bytes([r[4], r[5]]),
        u16::from_be_bytes([r[6], r[7]]) & 0x0fff,
        u16::from_be_bytes([r[8], r[9]]) & 0x0fff,
        u64::from_be_bytes([0, 0, r[10], r[11], r[12], r[13], r[14], r[15]])
    )
}

fn rand_bytes() -> [u8; 16] {
    let mut b = [0u8; 16];
    getrandom::fill(&mut b).unwrap();
    b
}

/// True when one of the model's requests carries `words`.
fn asked_with(api: &MockAnthropic, words: &str) -> bool {
    sessionpipe_testkit::http::any_body_has(&api.requests(), words)
}

/// The final ack of `id`, with every `progress` the receiver showed on the
/// way (polled as it grows).
fn final_with_progress(
    device: &Device,
    id: &str,
    timeout: Duration,
) -> (Value, Vec<(u64, String)>) {
    let until = Instant::now() + timeout;
    let mut seen: Vec<(u64, String)> = Vec::new();
    loop {
        let view = device.view();
        let m = view["messages"]
            .as_array()
            .and_then(|ms| ms.iter().find(|m| m["id"] == id).cloned())
            .unwrap_or(Value::Null);
        let p = &m["acks"]["progress"];
        if let (Some(seq), Some(reply)) = (p["seq"].as_u64(), p["reply"].as_str())
            && seen.last().is_none_or(|(s, _)| *s != seq)
        {
            seen.push((seq, reply.to_string()));
        }
        if !m["acks"]["final"].is_null() {
            return (m["acks"]["final"].clone(), seen);
        }
        assert!(Instant::now() < until, "no final ack for {id}: {view}");
        std::thread::sleep(Duration::from_millis(40));
    }
}

/// Waits until the session's transcript exists and no `claude` runs it.
pub(crate) fn transcript_of(sb: &Sandbox, id: &str) -> Option<PathBuf> {
    let projects = sb.home.join(".claude/projects");
    std::fs::read_dir(&projects).ok()?.flatten().find_map(|d| {
        let p = d.path().join(format!("{id}.jsonl"));
        p.exists().then_some(p)
    })
}

#[test]
fn a_signed_start_runs_a_session_whose_reply_comes_back_then_resume_and_fork_reach_it() {
    let Some(claude) = sessionpipe_testkit::harnesses::claude() else {
        return;
    };
    let long = "Here is the plan, worked out step by step: first the tests, then the fix, then the release notes.";
    let api = MockAnthropic::start(
        Script::new([
            Turn::text(long),
            Turn::text("Resumed: the tests pass."),
            Turn::text("Forked: on the copy now."),
            Turn::text("Second to the fork."),
        ])
        .paced(Duration::from_millis(350)),
    );
    let s = setup(&claude, &api);
    let hello = s.device.view()["hello"].clone();
    let offered = &hello["starts"]["claude-code"];
    assert_eq!(offered["default"], "safe", "{hello}");
    assert!(
        hello["modes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m == "resume"),
        "{hello}"
    );
    assert_eq!(hello["files"], true);

    // A start: a new session under the command's id, its reply in the ack,
    // `progress` growing on the way.
    let id = uuid();
    let session = format!("claude-code:{id}");
    let started = Instant::now();
    let msg = s.device.enqueue(
        &s.device
            .sign_start(&session, "Plan the release.", &s.project, &[]),
        600,
    );
    let (ack, progress) = final_with_progress(&s.device, &msg, Duration::from_secs(120));
    assert_eq!(
        (
            ack["outcome"].as_str(),
            ack["mode"].as_str(),
            ack["session"].as_str()
        ),
        (Some("delivered"), Some("resume"), Some(session.as_str())),
        "{ack}"
    );
    assert_eq!(ack["reply"], long, "{ack}");
    assert!(progress.len() >= 2, "progress did not grow: {progress:?}");
    for pair in progress.windows(2) {
        assert!(pair[0].0 < pair[1].0, "seq rises: {progress:?}");
        assert!(
            long.starts_with(pair[1].1.as_str()) && pair[1].1.len() > pair[0].1.len(),
            "{progress:?}"
        );
    }
    assert!(asked_with(&api, "Plan the release."));
    assert!(
        asked_with(
            &api,
            "with sessionpipe control, signed on the sender's device.)"
        ),
        "a new session's first words are framed"
    );
    assert!(
        transcript_of(&s.sb, &id).is_some(),
        "the session has the command's id"
    );
    eprintln!("start → delivered in {:?}", started.elapsed());
    let events = s.sb.events();
    let progress: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "turn.progress" && e["session"]["id"] == id.as_str())
        .collect();
    assert!(!progress.is_empty(), "no turn.progress for the run");
    for p in &progress {
        assert_eq!(
            p["data"]["user"], "Plan the release.",
            "the ask, frames off: {p}"
        );
        assert!(
            long.starts_with(p["data"]["assistant"].as_str().unwrap()),
            "{p}"
        );
    }

    // No process holds it now: a prompt resumes it.
    let msg = s.device.enqueue(
        &s.device
            .sign("prompt", &session, json!({"text": "Run the tests."})),
        600,
    );
    let ack = s.device.final_ack(&msg, Duration::from_secs(120));
    assert_eq!(
        (
            ack["outcome"].as_str(),
            ack["mode"].as_str(),
            ack["reply"].as_str()
        ),
        (
            Some("delivered"),
            Some("resume"),
            Some("Resumed: the tests pass.")
        ),
        "{ack}"
    );
    let last = api
        .requests()
        .last()
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .unwrap();
    assert!(
        last.contains("Plan the release.") && last.contains("Run the tests."),
        "resumed with its history"
    );

    // A live process holds it (its registry record), whose inbox speaks
    // another protocol: the inbox rung is passed over and the session forks.
    let mut holder = std::process::Command::new("sleep")
        .arg("600")
        .spawn()
        .unwrap();
    let sessions = s.sb.home.join(".claude/sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", holder.id())).unwrap();
    let proc_start: String = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .nth(19)
        .unwrap()
        .to_string();
    std::fs::write(
        sessions.join(format!("{}.json", holder.id())),
        json!({"pid": holder.id(), "sessionId": id, "cwd": s.project, "procStart": proc_start,
               "peerProtocol": 2, "messagingSocketPath": s.sb.home.join("no.sock"), "kind": "interactive"})
            .to_string(),
    )
    .unwrap();
    let msg = s.device.enqueue(
        &s.device
            .sign("prompt", &session, json!({"text": "Try it on a copy."})),
        600,
    );
    let ack = s.device.final_ack(&msg, Duration::from_secs(120));
    assert_eq!(
        (
            ack["outcome"].as_str(),
            ack["mode"].as_str(),
            ack["reply"].as_str()
        ),
        (
            Some("delivered"),
            Some("fork"),
            Some("Forked: on the copy now.")
        ),
        "{ack}"
    );
    let fork = ack["session"]
        .as_str()
        .expect("a fork names its session")
        .to_string();
    assert_ne!(fork, session);
    let fork_id = fork.strip_prefix("claude-code:").unwrap().to_string();
    // The original's transcript is untouched by the fork: never two writers.
    let original = std::fs::read_to_string(transcript_of(&s.sb, &id).unwrap()).unwrap();
    assert!(!original.contains("Try it on a copy."));

    // The next message to the same session goes to the same fork.
    let msg = s.device.enqueue(
        &s.device
            .sign("prompt", &session, json!({"text": "And once more."})),
        600,
    );
    let ack = s.device.final_ack(&msg, Duration::from_secs(120));
    assert_eq!(ack["outcome"], "delivered", "{ack}");
    assert_eq!(ack["reply"], "Second to the fork.", "{ack}");
    let forked =
        std::fs::read_to_string(transcript_of(&s.sb, &fork_id).expect("the fork's transcript"))
            .unwrap();
    assert!(
        forked.contains("Try it on a copy.") && forked.contains("And once more."),
        "{forked}"
    );
    let original = std::fs::read_to_string(transcript_of(&s.sb, &id).unwrap()).unwrap();
    assert!(!original.contains("And once more."));
    let _ = holder.kill();
    let _ = holder.wait();
    drop(s.rx);
}

#[test]
fn a_start_with_files_puts_them_on_disk_and_a_bad_hash_or_the_eleventh_starts_nothing() {
    let Some(claude) = sessionpipe_testkit::harnesses::claude() else {
        return;
    };
    let api = MockAnthropic::start(Script::new([Turn::text("I read both files.")]));
    let s = setup(&claude, &api);
    let png = b"\x89PNG\r\n\x1a\n not really an image".to_vec();
    let notes = "line one\nline two\n".repeat(700).into_bytes();
    let files = [
        s.device.put_file("screen shot.png", "image/png", &png),
        s.device.put_file("notes.txt", "text/plain", &notes),
    ];
    let id = uuid();
    let session = format!("claude-code:{id}");
    let msg = s.device.enqueue(
        &s.device
            .sign_start(&session, "Look at these.", &s.project, &files),
        600,
    );
    let ack = s.device.final_ack(&msg, Duration::from_secs(120));
    assert_eq!(ack["outcome"], "delivered", "{ack}");
    let dir = s.project.join(".sessionpipe/files").join(&id);
    assert_eq!(std::fs::read(dir.join("screen shot.png")).unwrap(), png);
    assert_eq!(std::fs::read(dir.join("notes.txt")).unwrap(), notes);
    assert_eq!(
        std::fs::read_to_string(s.project.join(".sessionpipe/.gitignore"))
            .unwrap()
            .trim(),
        "*"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.join("notes.txt"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let listed = format!(
        "Attached files (saved in this folder):\\n- .sessionpipe/files/{id}/screen shot.png (image/png"
    );
    assert!(asked_with(&api, &listed), "the model sees the list");
    assert!(asked_with(
        &api,
        &format!(".sessionpipe/files/{id}/notes.txt (text/plain, 12 KB)")
    ));

    // Bytes that are not the signed hash: `failed` `file`, nothing kept, no
    // session started.
    let requests = api.requests().len();
    let signed_for = control::file_entry("report.txt", "text/plain", b"the real report");
    s.rx.put_file_as(signed_for["sha256"].as_str().unwrap(), b"a swapped report");
    let bad = uuid();
    let msg = s.device.enqueue(
        &s.device.sign_start(
            &format!("claude-code:{bad}"),
            "Read it.",
            &s.project,
            &[signed_for],
        ),
        600,
    );
    let ack = s.device.final_ack(&msg, Duration::from_secs(60));
    assert_eq!(
        (ack["outcome"].as_str(), ack["code"].as_str()),
        (Some("failed"), Some("file")),
        "{ack}"
    );
    assert!(
        ack["detail"].as_str().unwrap().contains("report.txt"),
        "{ack}"
    );
    assert!(
        !s.project.join(".sessionpipe/files").join(&bad).exists(),
        "nothing kept"
    );
    assert!(transcript_of(&s.sb, &bad).is_none(), "no session started");
    assert_eq!(api.requests().len(), requests, "the model was never asked");

    // Ten starts admitted in the hour (the two above and eight more); the
    // eleventh is refused `start_limit`.
    let mut n = 2;
    while n < 10 {
        let msg = s.device.enqueue(
            &s.device.sign_start(
                &format!("claude-code:{}", uuid()),
                "Say hi.",
                &s.project,
                &[],
            ),
            600,
        );
        let ack = s.device.final_ack(&msg, Duration::from_secs(120));
        assert_ne!(ack["code"], "start_limit", "start {n}: {ack}");
        n += 1;
    }
    let msg = s.device.enqueue(
        &s.device.sign_start(
            &format!("claude-code:{}", uuid()),
            "One too many.",
            &s.project,
            &[],
        ),
        600,
    );
    let ack = s.device.final_ack(&msg, Duration::from_secs(30));
    assert_eq!(
        (ack["outcome"].as_str(), ack["code"].as_str()),
        (Some("refused"), Some("start_limit")),
        "{ack}"
    );
}

#[test]
fn a_cancel_stops_a_started_run_through_claude_codes_own_interrupt() {
    let Some(claude) = sessionpipe_testkit::harnesses::claude() else {
        return;
    };
    // A slow model: its answer streams in three pieces, seconds apart.
    let long =
        "First the tests, then the migration, then the release notes, then the announcement.";
    let api = MockAnthropic::start(Script::new([Turn::text(long)]).paced(Duration::from_secs(3)));
    let s = setup(&claude, &api);
    let id = uuid();
    let session = format!("claude-code:{id}");
    let msg = s.device.enqueue(
        &s.device
            .sign_start(&session, "Write the long plan.", &s.project, &[]),
        600,
    );
    // Running: the hello offers it for a cancel, and the reply has begun.
    s.device.wait_hello(Duration::from_secs(60), |h| {
        h["cancels"]
            .as_array()
            .is_some_and(|c| c.iter().any(|x| x == session.as_str()))
    });
    let until = Instant::now() + Duration::from_secs(60);
    while !s.device.view()["messages"]
        .as_array()
        .and_then(|ms| ms.iter().find(|m| m["id"] == msg.as_str()).cloned())
        .is_some_and(|m| m["acks"]["progress"]["reply"].is_string())
    {
        assert!(Instant::now() < until, "the reply never began");
        std::thread::sleep(Duration::from_millis(40));
    }
    let cancel = s
        .device
        .enqueue(&s.device.sign("cancel", &session, json!({})), 120);
    let ack = s.device.final_ack(&cancel, Duration::from_secs(60));
    assert_eq!(
        (ack["outcome"].as_str(), ack["mode"].as_str()),
        (Some("delivered"), Some("sdk")),
        "{ack}"
    );
    // The start's own ack: what it had said, then that it stopped.
    let start = s.device.final_ack(&msg, Duration::from_secs(60));
    assert_eq!(start["outcome"], "delivered", "{start}");
    let reply = start["reply"].as_str().unwrap();
    let said = reply
        .strip_suffix("(The turn was cancelled.)")
        .unwrap_or_else(|| panic!("the reply says it stopped: {reply:?}"))
        .trim_end();
    assert!(
        !said.is_empty() && long.starts_with(said) && said.len() < long.len(),
        "part of the answer, not all of it: {reply:?}"
    );
    // Claude Code itself recorded the interrupt, and the run is gone: the
    // hello no longer offers it, and a second cancel finds nothing to stop.
    let transcript = transcript_of(&s.sb, &id).expect("the session's transcript");
    let text = std::fs::read_to_string(&transcript).unwrap();
    assert!(text.contains("[Request interrupted by user]"), "{text}");
    s.device.wait_hello(Duration::from_secs(20), |h| {
        h["cancels"]
            .as_array()
            .is_some_and(|c| !c.iter().any(|x| x == session.as_str()))
    });
    let again = s
        .device
        .enqueue(&s.device.sign("cancel", &session, json!({})), 120);
    let ack = s.device.final_ack(&again, Duration::from_secs(30));
    assert_eq!(ack["outcome"], "unsupported", "{ack}");
    // The session's events: the turn as far as it went (read from the
    // transcript: this sink takes tier 2), then its end as an interrupt,
    // then the session's end. Claude Code fires no hook for an interrupt
    // (ADAPTERS.md) and the run exits once its stdin closes: the session's
    // end reads the interruption Claude Code wrote in the transcript.
    let mine = |evs: &[Value]| -> Vec<Value> {
        evs.iter()
            .filter(|e| e["session"]["id"] == id.as_str())
            .cloned()
            .collect()
    };
    let evs = mine(&s.sb.wait_until(Duration::from_secs(30), |evs| {
        mine(evs).iter().any(|e| e["type"] == "session.ended")
    }));
    let kinds: Vec<&str> = evs.iter().filter_map(|e| e["type"].as_str()).collect();
    assert!(kinds.ends_with(&["session.ended"]), "{kinds:?}");
    let ended: Vec<&Value> = evs.iter().filter(|e| e["type"] == "turn.ended").collect();
    assert_eq!(ended.len(), 1, "one end of the turn: {kinds:?}");
    assert_eq!(ended[0]["data"]["reason"], "interrupt", "{}", ended[0]);
    let at = |k: &str| kinds.iter().position(|x| *x == k);
    assert!(at("turn.ended") < at("session.ended"), "{kinds:?}");
    let turn = evs
        .iter()
        .find(|e| e["type"] == "turn.transcript")
        .unwrap_or_else(|| panic!("the turn as far as it went: {kinds:?}"));
    assert_eq!(turn["data"]["assistant"].as_str(), Some(said), "{turn}");
}
