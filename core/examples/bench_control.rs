//! Benchmark: control's round trip on loopback. A machine paired with the
//! workspace receiver (through `sessionpipe control pair` and a software
//! passkey), a running daemon, and per sample one signed command posted to the
//! receiver: the clock starts before the POST and stops when the consumer
//! printed it, so it counts the receiver's queue, the long-poll, verification
//! (signatures, the nonce committed), the hub and the local socket.
//!
//! - `permission.answer`: a real `sessionpipe-hook claude-code
//!   PermissionRequest` waits; stop when it printed the decision.
//! - `prompt`: a `sessionpipe wait --session` waits; stop when it printed the
//!   framed message. (A Stop hook does not wait for a message: it takes one
//!   that is queued, which `bench_control` times as the Stop hook's own run.)
//!
//! Usage: bench_control HOOK SESSIONPIPE [SAMPLES]. Run by `bench/run.sh`.

mod common;

use common::{Env, post, report};
use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

const SESSION: &str = "0b0b0b0b-0000-4000-8000-00000000c0de";

/// One Claude Code hook call of the bench's session, started.
fn call_hook(env: &Env, event: &str, extra: Value) -> std::process::Child {
    let mut p = json!({"session_id": SESSION, "transcript_path": "/nowhere.jsonl",
        "cwd": env.project, "hook_event_name": event, "prompt_id": "p-bench"});
    for (k, v) in extra.as_object().cloned().unwrap_or_default() {
        p[k] = v;
    }
    let mut child = env
        .command(&env.hook)
        .args(["claude-code", event])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the hook runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(p.to_string().as_bytes())
        .unwrap();
    child
}

fn hook_done(env: &Env, event: &str, extra: Value) -> Vec<u8> {
    call_hook(env, event, extra)
        .wait_with_output()
        .unwrap()
        .stdout
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: bench_control HOOK SESSIONPIPE [SAMPLES]";
    let hook = PathBuf::from(args.get(1).expect(usage));
    let sessionpipe = PathBuf::from(args.get(2).expect(usage));
    let samples: usize = args.get(3).and_then(|n| n.parse().ok()).unwrap_or(200);
    let dir = tempfile::tempdir().unwrap();
    let env = Env::new(dir.path(), hook, sessionpipe);
    let paired = common::pair(&env);
    let session = format!("claude-code:{SESSION}");
    let sign = |kind: &str, fields: Value| paired.sign(kind, &session, fields);
    let mut daemon = env
        .command(&env.sessionpipe)
        .args(["daemon", "--no-api"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let control_sock = env.state.join("control.sock");
    while !control_sock.exists() {
        std::thread::sleep(Duration::from_millis(5));
    }
    hook_done(&env, "SessionStart", json!({"source": "startup"}));
    hook_done(&env, "UserPromptSubmit", json!({"prompt": "bench"}));
    // The daemon said hello: it polls.
    std::thread::sleep(Duration::from_millis(500));
    let enqueue = paired.enqueue_url();

    let warm = 10;
    let mut answer_ms = Vec::new();
    for i in 0..samples + warm {
        let input = json!({"command": format!("touch f{i}")});
        let child = call_hook(
            &env,
            "PermissionRequest",
            json!({"tool_name": "Bash", "tool_input": input}),
        );
        let attention = sessionpipe_core::harness::claude_shaped::permission_attention_id(
            "p-bench", "Bash", &input,
        );
        // The prompt is open once ingest took the hook's job.
        wait_open(&env.state.join("outbox.db"), &attention);
        let body = sign(
            "permission.answer",
            json!({"for": attention, "decision": "allow"}),
        );
        let t = Instant::now();
        post(&enqueue, &body);
        let out = child.wait_with_output().unwrap().stdout;
        let took = t.elapsed();
        assert!(
            String::from_utf8_lossy(&out).contains("allow"),
            "no decision printed"
        );
        if i >= warm {
            answer_ms.push(took.as_secs_f64() * 1000.0);
        }
        // The tool runs: the attention closes.
        hook_done(
            &env,
            "PreToolUse",
            json!({"tool_name": "Bash", "tool_input": input, "tool_use_id": format!("t{i}")}),
        );
    }

    let mut prompt_ms = Vec::new();
    for i in 0..samples + warm {
        let waiter = env
            .command(&env.sessionpipe)
            .args(["wait", "--session", &format!("claude-code:{SESSION}")])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        // Its connection registers within milliseconds; not timed.
        std::thread::sleep(Duration::from_millis(100));
        let body = sign("prompt", json!({"text": format!("message {i}")}));
        let t = Instant::now();
        post(&enqueue, &body);
        let out = waiter.wait_with_output().unwrap().stdout;
        let took = t.elapsed();
        assert!(String::from_utf8_lossy(&out).contains(&format!("message {i}")));
        if i >= warm {
            prompt_ms.push(took.as_secs_f64() * 1000.0);
        }
    }

    // A paired daemon at rest: its CPU over 10 s with the receiver up (one
    // long-poll held), then with the receiver gone (polls failing, backing off).
    let idle_up = cpu_ms_over(daemon.id(), Duration::from_secs(10));
    paired.rx.stop();
    let idle_down = cpu_ms_over(daemon.id(), Duration::from_secs(10));
    let _ = daemon.kill();
    let _ = daemon.wait();
    println!(
        "paired daemon at rest: {:.1} ms of CPU per second with the receiver up, {:.1} with it gone",
        idle_up / 10.0,
        idle_down / 10.0
    );
    report(
        "signed permission.answer posted → the waiting PermissionRequest hook printed the decision",
        &mut answer_ms,
    );
    report(
        "signed prompt posted → the waiting `sessionpipe wait` printed the message",
        &mut prompt_ms,
    );
}

/// Waits until the outbox holds the `attention.needed` of `attention`.
fn wait_open(outbox: &Path, attention: &str) {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(conn) = rusqlite::Connection::open_with_flags(
            outbox,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        ) {
            let n: i64 = conn
                .query_row(
                    "SELECT count(*) FROM events WHERE type = 'attention.needed' AND instr(envelope, ?1) > 0",
                    [attention],
                    |r| r.get(0),
                )
                .unwrap_or(0);
            if n > 0 {
                return;
            }
        }
        assert!(Instant::now() < until, "the prompt never opened");
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// The CPU time (user + system, ms) process `pid` used over `span`.
fn cpu_ms_over(pid: u32, span: Duration) -> f64 {
    let ticks = || -> f64 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
        let f: Vec<&str> = after.split_whitespace().collect();
        let n = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
        n(11) + n(12) // utime, stime (fields 14 and 15 of stat)
    };
    let before = ticks();
    std::thread::sleep(span);
    // Clock ticks are 1/100 s on Linux.
    (ticks() - before) * 10.0
}
