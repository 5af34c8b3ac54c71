//! Benchmark: control's overhead on a headless `start`, against the same
//! `claude -p` started by hand in the same run. The real Claude Code talks to
//! a scripted Anthropic API on loopback; a wrapper on `PATH` notes the moment
//! the harness process runs and `exec`s the real binary.
//!
//! - through control: a signed `start` posted to the receiver → the wrapper
//!   ran (the receiver's queue, the long-poll, verification, the ladder, the
//!   spawn), and → the receiver holds the first `progress` ack (the reply's
//!   first words back over the wire; the view is polled every 2 ms);
//! - by hand: spawning the wrapper with the same arguments → it ran, and →
//!   the first text delta on its stdout.
//!
//! Our overhead is the difference of the p50s. Usage: bench_start HOOK
//! SESSIONPIPE CLAUDE [SAMPLES]. Run by `bench/run.sh` when Claude Code is
//! installed under `e2e/`.

mod common;

use common::{Env, epoch_ns, p50, post, ran_after, report, timing_wrapper};
use serde_json::json;
use sessionpipe_testkit::{MockAnthropic, Script, Turn};
use std::io::BufRead;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// A child ended when this is dropped (a panic included).
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn uuid(i: usize) -> String {
    format!("5ea7ed00-0000-4000-8000-{:012x}", i + 1)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: bench_start HOOK SESSIONPIPE CLAUDE [SAMPLES]";
    let hook = PathBuf::from(args.get(1).expect(usage));
    let sessionpipe = PathBuf::from(args.get(2).expect(usage));
    let claude = std::fs::canonicalize(args.get(3).expect(usage)).expect("CLAUDE exists");
    let samples: usize = args.get(4).and_then(|n| n.parse().ok()).unwrap_or(20);
    let dir = tempfile::tempdir().unwrap();
    let env = Env::new(dir.path(), hook, sessionpipe);
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = dir.path().join("ran.log");
    let wrapped = timing_wrapper(&bin, "claude", &claude, &log);
    let words = "Working on it: the first words of a longer answer, then the rest of it.";
    let api =
        MockAnthropic::start(Script::new([Turn::text(words)]).paced(Duration::from_millis(20)));
    let paired = common::pair(&env);
    // Enough starts for the bench (the default is 10 an hour).
    std::fs::write(
        env.state.join("config.json"),
        json!({"control_folders": [env.project], "control_starts_hourly": 100_000}).to_string(),
    )
    .unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let model_env = [
        ("ANTHROPIC_BASE_URL", api.base_url()),
        ("ANTHROPIC_API_KEY", "sk-test-not-a-key".to_string()),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".to_string()),
    ];
    let daemon = Killed(
        env.command(&env.sessionpipe)
            .args(["daemon", "--no-api"])
            .env("PATH", &path)
            .envs(model_env.iter().map(|(k, v)| (k, v)))
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // Polling once the hello names Claude Code's starts.
    let until = Instant::now() + Duration::from_secs(30);
    while !paired.view()["hello"]["starts"]["claude-code"].is_object() {
        assert!(Instant::now() < until, "no hello");
        std::thread::sleep(Duration::from_millis(50));
    }

    let warm = 2;
    let (mut ctl_run, mut ctl_progress) = (Vec::new(), Vec::new());
    // The daemon read `claude --help` for the hello: that run is noted too.
    let mut ran = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .count();
    for i in 0..samples + warm {
        let session = format!("claude-code:{}", uuid(i));
        let body = paired.sign(
            "start",
            &session,
            json!({"text": "Plan it.", "cwd": env.project.to_string_lossy()}),
        );
        let t0 = epoch_ns();
        let t = Instant::now();
        let id = post(&paired.enqueue_url(), &body)["id"]
            .as_str()
            .unwrap()
            .to_string();
        let started = ran_after(&log, ran);
        ran += 1;
        let first = loop {
            let v = paired.view();
            let m = v["messages"]
                .as_array()
                .and_then(|ms| ms.iter().find(|m| m["id"] == id).cloned())
                .unwrap_or_default();
            if m["acks"]["progress"].is_object() || !m["acks"]["final"].is_null() {
                assert!(
                    m["acks"]["progress"].is_object(),
                    "a final ack before any progress: {m}"
                );
                break t.elapsed();
            }
            std::thread::sleep(Duration::from_millis(2));
        };
        // Let the run finish before the next.
        let until = Instant::now() + Duration::from_secs(60);
        while paired.view()["messages"]
            .as_array()
            .and_then(|ms| ms.iter().find(|m| m["id"] == id).cloned())
            .is_some_and(|m| m["acks"]["final"].is_null())
        {
            assert!(Instant::now() < until);
            std::thread::sleep(Duration::from_millis(20));
        }
        if i >= warm {
            ctl_run.push((started - t0) as f64 / 1e6);
            ctl_progress.push(first.as_secs_f64() * 1000.0);
        }
    }

    let (mut hand_run, mut hand_progress) = (Vec::new(), Vec::new());
    for i in 0..samples + warm {
        let t0 = epoch_ns();
        let t = Instant::now();
        let mut child = env
            .command(&wrapped)
            .current_dir(&env.project)
            .env("PATH", &path)
            .envs(model_env.iter().map(|(k, v)| (k, v)))
            .args([
                "-p",
                "--output-format",
                "stream-json",
                "--verbose",
                "--include-partial-messages",
                "--permission-mode",
                "dontAsk",
                "--session-id",
                &uuid(1000 + i),
                "--",
                "Plan it.",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut first = None;
        for line in std::io::BufReader::new(child.stdout.take().unwrap()).lines() {
            let line = line.unwrap();
            if first.is_none() && line.contains("\"text_delta\"") {
                first = Some(t.elapsed());
            }
        }
        assert!(child.wait().unwrap().success());
        let started = ran_after(&log, ran);
        ran += 1;
        if i >= warm {
            hand_run.push((started - t0) as f64 / 1e6);
            hand_progress.push(first.expect("a text delta").as_secs_f64() * 1000.0);
        }
    }
    drop(daemon);

    report(
        "signed start posted → claude running (through control)",
        &mut ctl_run,
    );
    report("claude -p spawned by hand → claude running", &mut hand_run);
    report(
        "signed start posted → first progress ack at the receiver",
        &mut ctl_progress,
    );
    report(
        "claude -p spawned by hand → first text delta on its stdout",
        &mut hand_progress,
    );
    println!(
        "control's overhead at p50: {:.1} ms to the process running, {:.1} ms to the first words back",
        p50(&ctl_run) - p50(&hand_run),
        p50(&ctl_progress) - p50(&hand_progress)
    );
}
