//! Benchmarks: delivery throughput to the loopback receiver (events per second,
//! a backlog of N stored events drained by one HTTP sink at tier 3), and hook to
//! receiver latency (one hook at a time, through a running daemon, until the
//! receiver stored the event). Run by `bench/run.sh` with the release binaries:
//! `bench_delivery HOOK SESSIONPIPE [EVENTS] [HOOKS]`.

use sessionpipe_core::pipeline::ingest::Ingest;
use sessionpipe_core::pipeline::outbox::Outbox;
use sessionpipe_core::spool::Job;
use sessionpipe_core::spool::Spool;
use sessionpipe_core::spool::StatePaths;
use sessionpipe_receiver::{Options, Receiver};
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const TOKEN: &str = "bench-token";

fn add_sink(sessionpipe: &str, state: &std::path::Path, url: &str) {
    let mut child = Command::new(sessionpipe)
        .args(["sink", "add", url, "--tier", "3", "--token-stdin"])
        .env("SESSIONPIPE_STATE_DIR", state)
        .env("SESSIONPIPE_SECRETS", "file")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(format!("{TOKEN}\n").as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success());
}

fn daemon(sessionpipe: &str, state: &std::path::Path) -> std::process::Child {
    let child = Command::new(sessionpipe)
        .arg("daemon")
        .env("SESSIONPIPE_STATE_DIR", state)
        .env("SESSIONPIPE_SECRETS", "file")
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    while !state.join("wake.sock").exists() {
        std::thread::sleep(Duration::from_millis(5));
    }
    child
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let hook = args
        .get(1)
        .expect("usage: bench_delivery HOOK SESSIONPIPE [EVENTS] [HOOKS]")
        .clone();
    let sp = args
        .get(2)
        .expect("usage: bench_delivery HOOK SESSIONPIPE [EVENTS] [HOOKS]")
        .clone();
    let n: usize = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let hooks: usize = args.get(4).and_then(|a| a.parse().ok()).unwrap_or(300);

    // Throughput: a backlog of n events, then one sink drains it.
    let dir = tempfile::tempdir().unwrap();
    let paths = StatePaths::new(dir.path().join("state"));
    paths.ensure().unwrap();
    for i in 0..n {
        let payload = format!(
            "{{\"session_id\":\"00000000-0000-4000-8000-{:012}\",\"transcript_path\":\"/t\",\"cwd\":\"/w\",\"prompt_id\":\"p\",\"hook_event_name\":\"PreToolUse\",\"tool_name\":\"Bash\",\"tool_use_id\":\"t{i}\",\"tool_input\":{{\"command\":\"cargo build --release {i}\"}}}}\n",
            i % 20
        );
        let job = Job {
            harness: "claude-code".into(),
            event: "PreToolUse".into(),
            at_ns: 1_790_000_000_000_000_000 + i as u64,
            payload: payload.into_bytes(),
            ..Default::default()
        };
        std::fs::write(
            paths.spool().join(format!("{:020}-{i:010}.job", job.at_ns)),
            job.encode(),
        )
        .unwrap();
    }
    let mut ingest = Ingest::new(
        Outbox::open(&paths.outbox()).unwrap(),
        Spool::new(paths.spool(), paths.quarantine()),
        "bench",
    );
    let stored = ingest.drain().unwrap().events;
    drop(ingest);
    let mut opts = Options::new(TOKEN);
    opts.max_tier = 3;
    let receiver = Receiver::start(opts).unwrap();
    add_sink(&sp, &paths.root, &receiver.url());
    let t = Instant::now();
    let mut d = daemon(&sp, &paths.root);
    while receiver.stats().events < stored {
        std::thread::sleep(Duration::from_millis(5));
    }
    let took = t.elapsed();
    let _ = d.kill();
    let _ = d.wait();
    println!(
        "delivery: {stored} events, one HTTP sink at tier 3, batches of 50 (the receiver's maximum)"
    );
    println!("| events | time | events/s |");
    println!("|---:|---:|---:|");
    println!(
        "| {stored} | {:.2} s | {:.0} |",
        took.as_secs_f64(),
        stored as f64 / took.as_secs_f64()
    );
    receiver.stop();

    // Latency: one hook at a time, hook spawn to receiver storage.
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let mut opts = Options::new(TOKEN);
    opts.max_tier = 3;
    let receiver = Receiver::start(opts).unwrap();
    add_sink(&sp, &state, &receiver.url());
    let mut d = daemon(&sp, &state);
    let mut lat = Vec::with_capacity(hooks);
    for i in 0..hooks + 20 {
        let before = receiver.stats().events;
        let payload = format!(
            "{{\"session_id\":\"00000000-0000-4000-8000-000000000001\",\"transcript_path\":\"/t\",\"cwd\":\"/w\",\"prompt_id\":\"p\",\"hook_event_name\":\"PreToolUse\",\"tool_name\":\"Bash\",\"tool_use_id\":\"t-{i}\",\"tool_input\":{{\"command\":\"true\"}}}}\n"
        );
        let t = Instant::now();
        let mut child = Command::new(&hook)
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
        while receiver.stats().events <= before {
            std::thread::sleep(Duration::from_micros(200));
        }
        if i >= 20 {
            lat.push(t.elapsed());
        }
    }
    let _ = d.kill();
    let _ = d.wait();
    lat.sort();
    let pct = |p: f64| lat[((lat.len() - 1) as f64 * p).round() as usize].as_secs_f64() * 1000.0;
    println!();
    println!("hook → receiver, {hooks} hooks one at a time, daemon running, HTTP sink on loopback");
    println!("| p50 | p90 | p99 | max |");
    println!("|---:|---:|---:|---:|");
    println!(
        "| {:.1} ms | {:.1} ms | {:.1} ms | {:.1} ms |",
        pct(0.5),
        pct(0.9),
        pct(0.99),
        pct(1.0)
    );
}
