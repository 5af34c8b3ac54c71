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

use serde_json::{Value, json};
use sessionpipe_receiver::{ControlOptions, Options, Receiver};
use sessionpipe_verifier::softkey::{self, DayKey, SoftPasskey};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const TOKEN: &str = "bench-token";
const SESSION: &str = "0b0b0b0b-0000-4000-8000-00000000c0de";

struct Env {
    hook: PathBuf,
    sessionpipe: PathBuf,
    home: PathBuf,
    state: PathBuf,
    project: PathBuf,
}

impl Env {
    fn command(&self, program: &Path) -> Command {
        let mut c = Command::new(program);
        c.env_clear()
            .env("HOME", &self.home)
            .env("SESSIONPIPE_STATE_DIR", &self.state)
            .env("SESSIONPIPE_SECRETS", "file")
            .env("PATH", std::env::var_os("PATH").unwrap_or_default());
        c
    }

    fn hook(&self, event: &str, extra: Value) -> std::process::Child {
        let mut p = json!({"session_id": SESSION, "transcript_path": "/nowhere.jsonl",
            "cwd": self.project, "hook_event_name": event, "prompt_id": "p-bench"});
        for (k, v) in extra.as_object().cloned().unwrap_or_default() {
            p[k] = v;
        }
        let mut child = self
            .command(&self.hook)
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

    fn hook_done(&self, event: &str, extra: Value) -> Vec<u8> {
        self.hook(event, extra).wait_with_output().unwrap().stdout
    }
}

fn client() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

fn post(url: &str, body: &Value) -> Value {
    let r = client()
        .post(url)
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .expect("the receiver answers");
    assert!(r.status().is_success(), "{url}: {}", r.status());
    serde_json::from_str(&r.text().unwrap()).unwrap_or(Value::Null)
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: bench_control HOOK SESSIONPIPE [SAMPLES]";
    let hook = PathBuf::from(args.get(1).expect(usage));
    let sessionpipe = PathBuf::from(args.get(2).expect(usage));
    let samples: usize = args.get(3).and_then(|n| n.parse().ok()).unwrap_or(200);
    let dir = tempfile::tempdir().unwrap();
    let env = Env {
        hook,
        sessionpipe,
        home: dir.path().join("home"),
        state: dir.path().join("state"),
        project: dir.path().join("home/project"),
    };
    std::fs::create_dir_all(&env.project).unwrap();

    let mut opts = Options::new(TOKEN);
    let mut c = ControlOptions::new("localhost");
    c.max_queue = 10_000;
    opts.control = Some(c);
    let rx = Receiver::start(opts).unwrap();
    let url = rx.url();

    let mut add = env
        .command(&env.sessionpipe)
        .args(["sink", "add", &url, "--token-stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    add.stdin
        .take()
        .unwrap()
        .write_all(format!("{TOKEN}\n").as_bytes())
        .unwrap();
    assert!(add.wait().unwrap().success());

    // Pairing, as a person does it.
    let mut pair = env
        .command(&env.sessionpipe)
        .args(["control", "pair", &url, "--folder"])
        .arg(&env.project)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(pair.stdout.take().unwrap()).lines();
    let mut machine = String::new();
    let code = loop {
        let line = lines.next().expect("pairing prints").unwrap();
        if let Some(m) = line.strip_prefix("Pairing this machine as ") {
            machine = m.trim_end_matches('.').to_string();
        }
        if let Some(rest) = line.strip_prefix("Open ") {
            let link = rest.split_whitespace().next().unwrap();
            break link.rsplit('/').next().unwrap().to_string();
        }
    };
    let port = rx.addr().port();
    let passkey = SoftPasskey::es256("localhost", &format!("http://localhost:{port}"));
    let proof = softkey::enrollment_proof(&passkey, &machine, &code);
    post(
        &format!("{url}/test/pair/approve"),
        &json!({"code": code, "key": passkey.trusted(), "proof": proof}),
    );
    // The rest of what pairing says, so it never blocks on a full pipe.
    for _ in lines.by_ref() {}
    assert!(pair.wait().unwrap().success(), "pairing failed");
    let day = DayKey::generate();
    let grant = softkey::grant(
        &passkey,
        &day,
        now_ms() - 1000,
        now_ms() + 12 * 3600 * 1000,
        "localhost",
    );
    let sign = |kind: &str, fields: Value| {
        let mut cmd = json!({"v": 1, "t": "sessionpipe.control", "machine": machine,
            "kind": kind, "session": format!("claude-code:{SESSION}")});
        for (k, v) in fields.as_object().cloned().unwrap_or_default() {
            cmd[k] = v;
        }
        cmd["nonce"] = json!(softkey::random_nonce());
        cmd["iat"] = json!(now_ms());
        let signed = softkey::sign_with_grant(&softkey::compact(&cmd), &day, &grant);
        let mut body = serde_json::to_value(signed).unwrap();
        body["machine"] = json!(machine);
        body["expires_in_s"] = json!(600);
        body
    };

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
    env.hook_done("SessionStart", json!({"source": "startup"}));
    env.hook_done("UserPromptSubmit", json!({"prompt": "bench"}));
    // The daemon said hello: it polls.
    std::thread::sleep(Duration::from_millis(500));
    let enqueue = format!("{url}/test/control/enqueue");

    let warm = 10;
    let mut answer_ms = Vec::new();
    for i in 0..samples + warm {
        let input = json!({"command": format!("touch f{i}")});
        let child = env.hook(
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
        env.hook_done(
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
    rx.stop();
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

fn report(what: &str, ms: &mut [f64]) {
    ms.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let at = |q: f64| ms[((ms.len() as f64 - 1.0) * q).round() as usize];
    println!(
        "{what}: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms over {} samples",
        at(0.5),
        at(0.99),
        ms[ms.len() - 1],
        ms.len()
    );
}
