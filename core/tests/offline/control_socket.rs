//! The control socket's answer to a Stop hook that control hands nothing,
//! through the real daemon, at the protocol level: one request line naming
//! the job, then the answer's bytes and the end of the stream
//! (`core/src/control/socket.rs`). A Stop ingest ignores (an ephemeral Codex
//! thread's, a Codex subagent's) or cannot read is answered with nothing as
//! soon as ingest took it, not when the daemon gives up waiting for it: on a
//! machine with control on, the hook of every such Stop would otherwise hold
//! its harness for those seconds.
//!
//! No clock is read: each answer must come while a request the daemon is
//! still waiting out (a job it never takes), made before it, has none.

use serde_json::{Value, json};
use sessionpipe_core::spool::{self, StatePaths};
use sessionpipe_testkit::Sandbox;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;

/// A Stop hook's request for `job` of `harness` on the control socket.
fn ask_turn(sb: &Sandbox, harness: &str, job: &str) -> UnixStream {
    let mut s = UnixStream::connect(StatePaths::new(&sb.state).control_socket()).unwrap();
    let line = json!({"op": "hook", "job": job, "harness": harness, "ask": "turn"});
    s.write_all(format!("{line}\n").as_bytes()).unwrap();
    s
}

/// Writes a hook call into the spool as the hook does, and wakes the daemon.
fn spool_call(sb: &Sandbox, n: u32, harness: &str, event: &str, stdin: &[u8]) -> String {
    let paths = StatePaths::new(&sb.state);
    let at_ns = spool::job::now_ns();
    let call = spool::Job {
        name: format!("{at_ns:020}-{n:010}.job"),
        harness: harness.into(),
        event: event.into(),
        argv: vec![harness.into(), event.into()],
        cwd: sb.home.to_string_lossy().into_owned(),
        pid: n,
        at_ns,
        env: [("HOME".to_string(), sb.home.to_string_lossy().into_owned())].into(),
        ..Default::default()
    };
    let name = spool::job::write(&paths.spool(), &call, &mut &stdin[..]).unwrap();
    spool::wake::poke(&paths.wake_socket());
    name
}

/// The recorded stdin of a fixture under `conformance/harness/`.
fn recorded(path: &str) -> Value {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/harness")
        .join(path);
    let fixture: Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
    serde_json::from_str(fixture["input"]["stdin"].as_str().unwrap()).unwrap()
}

#[test]
fn a_stop_control_hands_nothing_is_answered_as_soon_as_ingest_took_it() {
    let sb = Sandbox::new();
    let on = sb.sessionpipe(&["control", "approvals", "on"]);
    assert!(on.status.success(), "{on:?}");
    let _daemon = sb.start_daemon();

    // Asked about a job the daemon never takes: it waits the whole while.
    let mut never = ask_turn(&sb, "codex", "00000000000000000001-0000000001.job");

    let ephemeral = recorded("codex/ephemeral/stop.json");
    let mut subagents = recorded("codex/stop.json");
    subagents["agent_id"] = json!("01a228e7-e00b-7af0-b2d9-0dd043f88b2f");
    subagents["agent_type"] = json!("default");
    let stops = [
        ("an ephemeral thread's", ephemeral.to_string().into_bytes()),
        ("a subagent's", subagents.to_string().into_bytes()),
        ("one that cannot be read", b"{\"session_id\": ".to_vec()),
    ];
    for (n, (what, stdin)) in stops.into_iter().enumerate() {
        let job = spool_call(&sb, 100 + n as u32, "codex", "Stop", &stdin);
        let mut answer = Vec::new();
        ask_turn(&sb, "codex", &job)
            .read_to_end(&mut answer)
            .unwrap();
        assert!(answer.is_empty(), "{what}: {answer:?}");
        // Answered while the earlier request still waits.
        never.set_nonblocking(true).unwrap();
        let still = never.read(&mut [0u8; 1]);
        assert!(
            matches!(&still, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
            "{what} Stop was answered only when the daemon gave up on it: {still:?}"
        );
        never.set_nonblocking(false).unwrap();
    }
}
