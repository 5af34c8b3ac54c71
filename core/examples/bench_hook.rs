//! Benchmark: the hook's whole-process wall time (fork, exec, read a 2 KB payload,
//! spool it, wake the daemon, exit) against `/bin/true` run exactly the same way
//! (spawned with the payload file as stdin, stdout to /dev/null, waited for),
//! interleaved in one run so both see the same machine. A daemon runs, as on a
//! person's machine. Given a second hook binary (an earlier build's), it runs
//! interleaved too, against the same daemon: before and after in one run.
//! `EVENT` (default `PreToolUse`) names the hook call: `Stop` is one of the two
//! that ask control, which on a machine without control costs one failed `openat`.
//! `HARNESS PAYLOAD_FILE` run the same measurement for another harness, its
//! payload read from the file (`bench/payloads/<harness>-<event>.json`);
//! without them the call is Claude Code's, with a 2 KB payload of its shape.
//! Run by `bench/run.sh`; prints one markdown table row each.

use std::fs::File;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn spawn_once(
    program: &str,
    args: &[&str],
    payload: &std::path::Path,
    env: &[(&str, &str)],
) -> Duration {
    let stdin = File::open(payload).expect("the payload file");
    let t = Instant::now();
    let status = Command::new(program)
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::from(stdin))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("the program runs");
    let d = t.elapsed();
    assert!(status.success());
    d
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let hook = args.get(1).expect(
        "usage: bench_hook HOOK SESSIONPIPE [RUNS [BASELINE_HOOK [EVENT [HARNESS PAYLOAD_FILE]]]]",
    );
    let sessionpipe = args.get(2).expect(
        "usage: bench_hook HOOK SESSIONPIPE [RUNS [BASELINE_HOOK [EVENT [HARNESS PAYLOAD_FILE]]]]",
    );
    let runs: usize = args.get(3).and_then(|n| n.parse().ok()).unwrap_or(2000);
    let baseline = args.get(4).filter(|b| !b.is_empty());
    let event = args
        .get(5)
        .map(String::as_str)
        .filter(|e| !e.is_empty())
        .unwrap_or("PreToolUse");
    let harness = args.get(6).map(String::as_str).unwrap_or("claude-code");
    let payload_file = args.get(7);

    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let state_s = state.to_str().unwrap().to_string();
    let payload = dir.path().join("payload.json");
    // A 2 KB PreToolUse payload of Claude Code's shape.
    let command = "x".repeat(1560);
    let body = format!(
        "{{\"session_id\":\"3bd5639e-04f7-44e6-a4c2-2f9bb68adad6\",\"transcript_path\":\"/home/ann/.claude/projects/-home-ann-src/3bd5639e-04f7-44e6-a4c2-2f9bb68adad6.jsonl\",\"cwd\":\"/home/ann/src\",\"prompt_id\":\"5e6e20e7-82a4-4865-8967-b2c9adae76c4\",\"permission_mode\":\"default\",\"hook_event_name\":\"PreToolUse\",\"tool_name\":\"Bash\",\"tool_input\":{{\"command\":\"echo {command}\",\"description\":\"d\"}},\"tool_use_id\":\"toolu_013DRPrVtDMVkX2NHpLV2vSf\"}}\n"
    );
    let body = match payload_file {
        Some(f) => std::fs::read_to_string(f).expect("the payload file"),
        None => body,
    };
    std::fs::write(&payload, &body).unwrap();
    let env = [
        ("SESSIONPIPE_STATE_DIR", state_s.as_str()),
        ("HOME", "/nonexistent"),
    ];

    let mut daemon = Command::new(sessionpipe)
        .arg("daemon")
        .env("SESSIONPIPE_STATE_DIR", &state)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    while !state.join("wake.sock").exists() {
        std::thread::sleep(Duration::from_millis(5));
    }

    let hook_args = [harness, event];
    for _ in 0..200 {
        spawn_once(hook, &hook_args, &payload, &env);
        if let Some(b) = baseline {
            spawn_once(b, &hook_args, &payload, &env);
        }
        spawn_once("/bin/true", &hook_args, &payload, &env);
    }
    let (mut h, mut t, mut b) = (
        Vec::with_capacity(runs),
        Vec::with_capacity(runs),
        Vec::new(),
    );
    for _ in 0..runs {
        h.push(spawn_once(hook, &hook_args, &payload, &env));
        if let Some(base) = baseline {
            b.push(spawn_once(base, &hook_args, &payload, &env));
        }
        t.push(spawn_once("/bin/true", &hook_args, &payload, &env));
    }
    let _ = daemon.kill();
    let _ = daemon.wait();
    h.sort();
    t.sort();
    b.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "`{harness} {event}`, payload: {} bytes, runs: {runs} each, interleaved, daemon running",
        body.len()
    );
    println!("| program | median | p90 | p99 |");
    println!("|---|---:|---:|---:|");
    let mut rows = vec![("sessionpipe-hook", &h)];
    if baseline.is_some() {
        rows.push(("sessionpipe-hook (baseline build)", &b));
    }
    rows.push(("/bin/true", &t));
    for (name, v) in rows {
        println!(
            "| `{name}` | {:.3} ms | {:.3} ms | {:.3} ms |",
            ms(percentile(v, 0.5)),
            ms(percentile(v, 0.9)),
            ms(percentile(v, 0.99))
        );
    }
    println!(
        "ratio of medians (hook / true): {:.2}",
        ms(percentile(&h, 0.5)) / ms(percentile(&t, 0.5))
    );
    if baseline.is_some() {
        println!(
            "ratio of medians (baseline hook / true): {:.2}; hook / baseline hook: {:.2}",
            ms(percentile(&b, 0.5)) / ms(percentile(&t, 0.5)),
            ms(percentile(&h, 0.5)) / ms(percentile(&b, 0.5))
        );
    }
}
