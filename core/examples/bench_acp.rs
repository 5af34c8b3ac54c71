//! Benchmark: control's overhead on a `start` over ACP, against the same
//! agent driven by a minimal JSON-RPC client written here, in the same run
//! (issue 15). The agent is testkit's scripted `acp-test-agent` in its
//! default mode (it answers a prompt with a tool call, then the
//! `agent_message_chunk`s "Echo: " and the prompt's text, then the end of
//! the turn), standing in for goose (`SESSIONPIPE_ACP_GOOSE`). A wrapper
//! notes the moment the agent's process runs and `exec`s it.
//!
//! - through control: a signed `start` posted to the receiver → the wrapper
//!   ran (the receiver's queue, the long-poll, verification, admission, the
//!   ACP rung, the spawn), → the receiver holds the first words back (the
//!   first `progress` ack, or the final ack when it comes first), and → the
//!   receiver holds the final `delivered` ack; the view is polled every 2 ms,
//!   over one client kept for the run (the post too). The first `progress`
//!   ack leaves as soon as the first words exist (the rate limit sleeps after
//!   an ack, not before one), but a turn that ends at once can cut it off in
//!   flight; then the final ack is the first words back. The `taken` ack,
//!   the final ack's `at` and its arrival are also read from the stamps the
//!   daemon and the receiver keep (whole milliseconds), for where the time
//!   goes;
//! - by hand: spawning the wrapper → it ran, → the first
//!   `agent_message_chunk` read from its stdout (after `initialize`,
//!   `session/new` and `session/prompt`, each sent once the one before was
//!   answered, as the daemon sends them), and → the prompt's answer.
//!
//! The two are interleaved sample by sample, so a change of the machine's
//! load falls on both; warm-up samples are left out. Our overhead is the
//! difference of the p50s. Then memory: the daemon's VmRSS with every
//! session of the timing samples held idle, and a fresh daemon's (paired,
//! its hello sent) before any start and with exactly 10 idle ACP sessions
//! held, with the sum of those 10 agents' VmRSS apart; the held agents are
//! counted as the daemon's live children running the test agent.
//!
//! Usage: bench_acp HOOK SESSIONPIPE ACP_TEST_AGENT [SAMPLES] (50 by
//! default). Run by `bench/run.sh`. It times and reports only: it must not
//! decide anything the daemon does, nor touch anything outside its own
//! temporary folder (and the processes it started).

mod common;

use common::{Env, epoch_ns, p50, ran_after, timing_wrapper};
use serde_json::{Value, json};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// What each start (and each prompt by hand) asks.
const TEXT: &str = "Tidy the folder.";
/// Samples of each kind left out at the start.
const WARM: usize = 3;
/// The held sessions whose memory is measured.
const HELD: usize = 10;

/// A daemon ended when this is dropped (a panic included), or stopped as a
/// person stops it with `stop`.
struct Daemon(std::process::Child);

impl Daemon {
    fn pid(&self) -> u32 {
        self.0.id()
    }

    /// SIGTERM, so it ends the agents it holds, then waits for it.
    fn stop(mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status();
        let _ = self.0.wait();
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn uuid(i: usize) -> String {
    format!("acb7ed00-0000-4000-8000-{:012x}", i + 1)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// A process's VmRSS in kB (0 once it is gone).
fn rss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// The live children of `parent` whose command is `comm`.
fn children(parent: u32, comm: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // `pid (comm) state ppid …`; the command may hold spaces or parens.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let mut rest = stat[close + 1..].split_whitespace();
        let (state, ppid) = (rest.next(), rest.next().and_then(|p| p.parse().ok()));
        if &stat[open + 1..close] == comm && ppid == Some(parent) && state != Some("Z") {
            found.push(pid);
        }
    }
    found
}

fn mb(kb: u64) -> String {
    format!("{:.1} MB", kb as f64 / 1024.0)
}

/// Posts to the receiver and reads its view of one machine's messages, over
/// one client kept for the whole run.
struct Viewer {
    http: reqwest::blocking::Client,
    url: String,
}

impl Viewer {
    fn new(paired: &common::Paired) -> Viewer {
        Viewer {
            http: common::client(),
            url: format!(
                "{}/test/control/messages?machine={}",
                paired.url, paired.machine
            ),
        }
    }

    fn view(&self) -> Value {
        self.http
            .get(&self.url)
            .bearer_auth(common::TOKEN)
            .send()
            .unwrap()
            .json()
            .unwrap()
    }

    /// `common::post` over this client: a client of its own per call
    /// (its runtime thread, the system's root certificates read) would be
    /// timed as control's.
    fn message(&self, id: &str) -> Value {
        self.view()["messages"]
            .as_array()
            .and_then(|ms| ms.iter().find(|m| m["id"] == id).cloned())
            .unwrap_or_default()
    }
}

/// When one start through control reached each point, from before its post.
struct Through {
    /// The receiver answered the post (the message is in its queue).
    queued: f64,
    ran: f64,
    first_words: f64,
    /// Whether a `progress` ack reached the receiver before the final.
    progress_first: bool,
    delivered: f64,
    /// Stamped by the daemon and the receiver (whole milliseconds): the
    /// receiver held the `taken` ack, the daemon wrote the final ack (its
    /// `at`: the turn ended), the receiver held the final ack.
    taken_received: f64,
    turn_ended: f64,
    final_received: f64,
}

/// Posts a signed start of `session` and follows it to its final ack, which
/// must be `delivered` with the echo.
fn through_control(
    paired: &common::Paired,
    viewer: &Viewer,
    env: &Env,
    session: &str,
    log: &Path,
    ran: usize,
) -> Through {
    let body = paired.sign(
        "start",
        session,
        json!({"text": TEXT, "cwd": env.project.to_string_lossy()}),
    );
    let t0 = epoch_ns();
    let t = Instant::now();
    let id = common::post(&paired.enqueue_url(), &body)["id"]
        .as_str()
        .unwrap()
        .to_string();
    let queued = ms(t.elapsed());
    let started = ran_after(log, ran);
    let mut progress = None;
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        let m = viewer.message(&id);
        if progress.is_none() && m["acks"]["progress"].is_object() {
            progress = Some(t.elapsed());
        }
        let fin = &m["acks"]["final"];
        if !fin.is_null() {
            let done = t.elapsed();
            assert_eq!(fin["outcome"], "delivered", "{m}");
            assert!(
                fin["reply"].as_str().is_some_and(|r| r.contains("Echo:")),
                "{m}"
            );
            let since = |at: &Value| {
                let at = at.as_str().and_then(protocol::time::parse_rfc3339_ms);
                (at.expect("a time") as f64) - t0 as f64 / 1e6
            };
            return Through {
                queued,
                ran: (started - t0) as f64 / 1e6,
                first_words: ms(progress.unwrap_or(done)),
                progress_first: progress.is_some(),
                delivered: ms(done),
                taken_received: since(&m["acks"]["taken_at"]),
                turn_ended: since(&fin["at"]),
                final_received: since(&m["acks"]["final_received_at"]),
            };
        }
        assert!(Instant::now() < until, "no final ack: {m}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// When one run by hand reached each point, from before its spawn.
struct ByHand {
    ran: f64,
    first_chunk: f64,
    answered: f64,
}

fn send(stdin: &mut std::process::ChildStdin, v: Value) {
    let mut line = v.to_string();
    line.push('\n');
    stdin.write_all(line.as_bytes()).unwrap();
}

/// The next line that is the answer to request `id`.
fn answer(lines: &mut impl Iterator<Item = std::io::Result<String>>, id: u64) -> Value {
    for line in lines {
        let v: Value = serde_json::from_str(&line.unwrap()).unwrap_or_default();
        if v["id"] == id && v.get("method").is_none() {
            assert!(v.get("error").is_none(), "{v}");
            return v["result"].clone();
        }
    }
    panic!("the agent ended before answering {id}");
}

/// The wrapper spawned with the launch line the daemon uses, and a minimal
/// ACP client: `initialize`, `session/new`, one `session/prompt`.
fn by_hand(env: &Env, wrapped: &Path, log: &Path, ran: usize) -> ByHand {
    let t0 = epoch_ns();
    let t = Instant::now();
    let mut child = env
        .command(wrapped)
        .arg("acp")
        .current_dir(&env.project)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"protocolVersion": 1, "clientCapabilities": {}}}),
    );
    assert_eq!(answer(&mut lines, 1)["protocolVersion"], 1);
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
               "params": {"cwd": env.project.to_string_lossy(), "mcpServers": []}}),
    );
    let session = answer(&mut lines, 2)["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
               "params": {"sessionId": session,
                          "prompt": [{"type": "text", "text": TEXT}]}}),
    );
    let mut first = None;
    let answered = loop {
        let line = lines.next().expect("the agent answers the prompt").unwrap();
        let v: Value = serde_json::from_str(&line).unwrap_or_default();
        if first.is_none()
            && v["method"] == "session/update"
            && v["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
        {
            first = Some(t.elapsed());
        }
        if v["id"] == 3 && v.get("method").is_none() {
            break t.elapsed();
        }
    };
    // Its stdin closed, the agent ends.
    drop(stdin);
    let _ = child.wait();
    let started = ran_after(log, ran);
    ByHand {
        ran: (started - t0) as f64 / 1e6,
        first_chunk: ms(first.expect("an agent_message_chunk")),
        answered: ms(answered),
    }
}

/// A daemon for this machine, its ACP agent for goose the wrapper; waits
/// for a hello newer than `after` that offers goose's starts.
fn daemon(env: &Env, viewer: &Viewer, wrapped: &Path, after: &Value) -> Daemon {
    let d = Daemon(
        env.command(&env.sessionpipe)
            .args(["daemon", "--no-api"])
            .env("SESSIONPIPE_ACP_GOOSE", wrapped)
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let v = viewer.view();
        if v["hello_at"] != *after && v["hello"]["starts"]["goose"].is_object() {
            return d;
        }
        assert!(Instant::now() < until, "no hello offering goose: {v}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: bench_acp HOOK SESSIONPIPE ACP_TEST_AGENT [SAMPLES]";
    let hook = PathBuf::from(args.get(1).expect(usage));
    let sessionpipe = PathBuf::from(args.get(2).expect(usage));
    let agent = std::fs::canonicalize(args.get(3).expect(usage)).expect("ACP_TEST_AGENT exists");
    let samples: usize = args.get(4).and_then(|n| n.parse().ok()).unwrap_or(50);
    let dir = tempfile::tempdir().unwrap();
    let env = Env::new(dir.path(), hook, sessionpipe);
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = dir.path().join("ran.log");
    let wrapped = timing_wrapper(&bin, "goose", &agent, &log);
    let paired = common::pair(&env);
    let viewer = Viewer::new(&paired);
    // Enough starts for the bench (the default is 10 an hour), and every
    // session held for the whole run (the default is 10 minutes idle). A
    // held session takes no start or run slot once its turn ended, so the
    // caps on those (2 and 3 at once) stay as they are.
    std::fs::write(
        env.state.join("config.json"),
        json!({"control_folders": [env.project], "control_starts_hourly": 100_000,
               "acp_idle_minutes": 60})
        .to_string(),
    )
    .unwrap();
    let load_before = loadavg();
    let timing = daemon(&env, &viewer, &wrapped, &Value::Null);

    let mut through = Vec::new();
    let mut hand = Vec::new();
    let mut ran = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .count();
    for i in 0..samples + WARM {
        let c = through_control(
            &paired,
            &viewer,
            &env,
            &format!("goose:{}", uuid(i)),
            &log,
            ran,
        );
        ran += 1;
        let h = by_hand(&env, &wrapped, &log, ran);
        ran += 1;
        if i >= WARM {
            through.push(c);
            hand.push(h);
        }
    }
    let load_after = loadavg();

    // Every start above left its session held, idle.
    std::thread::sleep(Duration::from_secs(2));
    let all_held = children(timing.pid(), "acp-test-agent").len();
    let all_rss = rss_kb(timing.pid());
    let hello_at = viewer.view()["hello_at"].clone();
    timing.stop();

    // A fresh daemon of the same machine: before any start, then with
    // exactly HELD idle sessions.
    let fresh = daemon(&env, &viewer, &wrapped, &hello_at);
    std::thread::sleep(Duration::from_secs(3));
    let before = rss_kb(fresh.pid());
    assert!(children(fresh.pid(), "acp-test-agent").is_empty());
    for i in 0..HELD {
        through_control(
            &paired,
            &viewer,
            &env,
            &format!("goose:{}", uuid(10_000 + i)),
            &log,
            ran + i,
        );
    }
    std::thread::sleep(Duration::from_secs(3));
    let with_held = rss_kb(fresh.pid());
    let agents = children(fresh.pid(), "acp-test-agent");
    assert_eq!(agents.len(), HELD, "every session is held: {agents:?}");
    let agents_rss: u64 = agents.iter().map(|p| rss_kb(*p)).sum();
    fresh.stop();

    println!("load: {load_before} before the timing samples, {load_after} after");
    let col = |f: fn(&Through) -> f64| through.iter().map(f).collect::<Vec<f64>>();
    let hcol = |f: fn(&ByHand) -> f64| hand.iter().map(f).collect::<Vec<f64>>();
    let mut c_queued = col(|c| c.queued);
    let (mut c_ran, mut c_first, mut c_done) =
        (col(|c| c.ran), col(|c| c.first_words), col(|c| c.delivered));
    let (mut h_ran, mut h_first, mut h_done) = (
        hcol(|h| h.ran),
        hcol(|h| h.first_chunk),
        hcol(|h| h.answered),
    );
    common::report_at(
        0.9,
        "signed start posted → the receiver answered the post (queued)",
        &mut c_queued,
    );
    common::report_at(
        0.9,
        "signed start posted → agent running (through control)",
        &mut c_ran,
    );
    common::report_at(0.9, "agent spawned by hand → agent running", &mut h_ran);
    common::report_at(
        0.9,
        "signed start posted → first words at the receiver (first progress ack, else the final)",
        &mut c_first,
    );
    common::report_at(
        0.9,
        "agent spawned by hand → first agent_message_chunk on its stdout",
        &mut h_first,
    );
    common::report_at(
        0.9,
        "signed start posted → final delivered ack at the receiver",
        &mut c_done,
    );
    common::report_at(
        0.9,
        "agent spawned by hand → its answer to session/prompt",
        &mut h_done,
    );
    println!(
        "a progress ack reached the receiver before the final in {} of {} starts",
        through.iter().filter(|c| c.progress_first).count(),
        through.len()
    );
    println!(
        "control's overhead at p50: {:.1} ms to the agent running, {:.1} ms to the first words back, {:.1} ms to the end of the turn",
        p50(&c_ran) - p50(&h_ran),
        p50(&c_first) - p50(&h_first),
        p50(&c_done) - p50(&h_done)
    );
    println!(
        "through control, p50 from the post by the receiver's and the daemon's own stamps (whole ms): `taken` at the receiver {:.1} ms, the turn ended in the daemon {:.1} ms, the final ack at the receiver {:.1} ms (seen here {:.1} ms)",
        p50(&col(|c| c.taken_received)),
        p50(&col(|c| c.turn_ended)),
        p50(&col(|c| c.final_received)),
        p50(&c_done)
    );
    println!(
        "daemon VmRSS after the timing samples, {all_held} idle ACP sessions held: {}",
        mb(all_rss)
    );
    println!(
        "a fresh daemon's VmRSS, paired and its hello sent, before any start: {}; with {HELD} idle ACP sessions held: {} (+{})",
        mb(before),
        mb(with_held),
        mb(with_held.saturating_sub(before))
    );
    println!(
        "the {} held agent processes (acp-test-agent, live children of the daemon): {} VmRSS in all",
        agents.len(),
        mb(agents_rss)
    );
}
