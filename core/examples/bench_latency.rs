//! Benchmark: hook → outbox latency. One hook at a time runs against a running
//! daemon; the clock starts before the hook is spawned and stops when the event
//! is readable in the outbox (a read-only SQLite connection polled every 100 µs).
//! Run by `bench/run.sh`.

use sessionpipe_core::pipeline::outbox::Outbox;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let hook = args
        .get(1)
        .expect("usage: bench_latency HOOK SESSIONPIPE [RUNS]");
    let sessionpipe = args
        .get(2)
        .expect("usage: bench_latency HOOK SESSIONPIPE [RUNS]");
    let runs: usize = args.get(3).and_then(|n| n.parse().ok()).unwrap_or(500);
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let mut daemon = Command::new(sessionpipe)
        .arg("daemon")
        .env("SESSIONPIPE_STATE_DIR", &state)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    while !state.join("wake.sock").exists() {
        std::thread::sleep(Duration::from_millis(5));
    }
    let outbox_path = state.join("outbox.db");
    while !outbox_path.exists() {
        std::thread::sleep(Duration::from_millis(5));
    }
    let outbox = loop {
        if let Some(o) = Outbox::open_readonly(&outbox_path).unwrap() {
            break o;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let mut seen = outbox.counts().unwrap().events;
    let mut lat = Vec::with_capacity(runs);
    for i in 0..runs + 50 {
        let payload = format!(
            "{{\"session_id\":\"00000000-0000-4000-8000-000000000001\",\"transcript_path\":\"/t\",\"cwd\":\"/w\",\"prompt_id\":\"p\",\"hook_event_name\":\"PreToolUse\",\"tool_name\":\"Bash\",\"tool_use_id\":\"t-{i}\",\"tool_input\":{{\"command\":\"true\"}}}}\n"
        );
        let t = Instant::now();
        let mut child = Command::new(hook)
            .args(["claude-code", "PreToolUse"])
            .env("SESSIONPIPE_STATE_DIR", &state)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(payload.as_bytes())
            .unwrap();
        child.wait().unwrap();
        loop {
            let n = outbox.counts().unwrap().events;
            if n > seen {
                seen = n;
                break;
            }
            std::thread::sleep(Duration::from_micros(100));
        }
        if i >= 50 {
            lat.push(t.elapsed());
        }
    }
    let _ = daemon.kill();
    let _ = daemon.wait();
    lat.sort();
    let pct = |p: f64| lat[((lat.len() - 1) as f64 * p).round() as usize].as_secs_f64() * 1000.0;
    println!("hook → outbox, {runs} hooks one at a time, daemon running");
    println!("| p50 | p90 | p99 | max |");
    println!("|---:|---:|---:|---:|");
    println!(
        "| {:.2} ms | {:.2} ms | {:.2} ms | {:.2} ms |",
        pct(0.5),
        pct(0.9),
        pct(0.99),
        pct(1.0)
    );
}
