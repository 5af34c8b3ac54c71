//! Benchmarks: delivery throughput (events per second, a backlog of N stored
//! events drained by one HTTP sink at tier 3), twice: to the loopback receiver
//! of the workspace (which stores every event, on the same cores), and to a
//! receiver that answers 202 and stores nothing (`NullReceiver`, inside this
//! bench), so the daemon's own rate shows apart from the receiver's; then hook
//! to receiver latency (one hook at a time, through a running daemon, until the
//! receiver counted the event), to each of the two. Run by `bench/run.sh` with
//! the release binaries: `bench_delivery HOOK SESSIONPIPE [EVENTS] [HOOKS]`.
//! It times; it asserts nothing about the times.

use sessionpipe_core::pipeline::ingest::Ingest;
use sessionpipe_core::pipeline::outbox::Outbox;
use sessionpipe_core::spool::Job;
use sessionpipe_core::spool::Spool;
use sessionpipe_core::spool::StatePaths;
use sessionpipe_receiver::{Options, Receiver};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
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

/// A state dir whose outbox holds the events of `n` PreToolUse calls of 20
/// sessions, and how many events that is.
fn backlog(n: usize) -> (tempfile::TempDir, StatePaths, usize) {
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
    (dir, paths, stored)
}

/// One drain: from the daemon's start to the last event taken, the rate from
/// the first batch taken on (the daemon's start left out), and the daemon's
/// CPU time by the end.
struct Drained {
    took: Duration,
    steady: f64,
    cpu: Option<Duration>,
    /// This process's CPU over the drain: the receiver's work (and this
    /// loop's polling of a counter, which is little: `stats` would count the
    /// stored rows, a scan of the table a millisecond, and measure that).
    receiver_cpu: Option<Duration>,
}

/// Starts the daemon on a state dir with a sink and waits until `taken` says
/// the receiver has all `stored` events.
fn drain(sp: &str, paths: &StatePaths, stored: usize, taken: impl Fn() -> usize) -> Drained {
    let ours = cpu_time(std::process::id());
    let t = Instant::now();
    let mut d = daemon(sp, &paths.root);
    let mut first = None;
    loop {
        let now = taken();
        if now > 0 && first.is_none() {
            first = Some((Instant::now(), now));
        }
        if now >= stored {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let took = t.elapsed();
    let cpu = cpu_time(d.id());
    let receiver_cpu = ours.and_then(|o| Some(cpu_time(std::process::id())?.saturating_sub(o)));
    let _ = d.kill();
    let _ = d.wait();
    let (t1, n1) = first.expect("events were taken");
    let steady = (stored - n1) as f64 / t1.elapsed().as_secs_f64().max(1e-9);
    Drained {
        took,
        steady,
        cpu,
        receiver_cpu,
    }
}

fn row(receiver: &str, stored: usize, d: &Drained) {
    println!(
        "| {receiver} | {stored} | {:.2} s | {:.0} | {:.0} | {} | {} |",
        d.took.as_secs_f64(),
        stored as f64 / d.took.as_secs_f64(),
        d.steady,
        seconds(d.cpu),
        seconds(d.receiver_cpu)
    );
}

fn seconds(d: Option<Duration>) -> String {
    d.map_or("-".to_string(), |c| format!("{:.2} s", c.as_secs_f64()))
}

/// A process's user and system time so far (Linux: `/proc/PID/stat`, in the
/// kernel's clock ticks, 100 a second on the machines this runs on).
fn cpu_time(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command's name, which is in parentheses.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
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

    // Throughput: a backlog of n events, then one sink drains it; once to
    // the real receiver, once to the one that stores nothing.
    println!(
        "delivery: a backlog of {n} hook calls, one HTTP sink at tier 3, batches of 50 (the receiver's maximum); time from the daemon's start to the last event taken; events/s after the first batch taken (the daemon's start left out); the daemon's CPU (user + system) by the end, and the receiver's (this process's)"
    );
    println!(
        "| receiver | events | time | events/s | after the first batch | daemon CPU | receiver CPU |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    {
        let (_dir, paths, stored) = backlog(n);
        let mut opts = Options::new(TOKEN);
        opts.max_tier = 3;
        let receiver = Receiver::start(opts).unwrap();
        add_sink(&sp, &paths.root, &receiver.url());
        let d = drain(&sp, &paths, stored, || receiver.accepted() as usize);
        row("the workspace's (stores)", stored, &d);
        receiver.stop();
    }
    {
        let (_dir, paths, stored) = backlog(n);
        let receiver = NullReceiver::start();
        add_sink(&sp, &paths.root, &receiver.url);
        let d = drain(&sp, &paths, stored, || receiver.events());
        row("202 unread (the daemon alone)", stored, &d);
    }

    // Latency: one hook at a time, hook spawn to the receiver's count; once
    // to the real receiver (stored), once to the one that stores nothing.
    println!();
    println!("hook → receiver, {hooks} hooks one at a time, daemon running, HTTP sink on loopback");
    println!("| receiver | p50 | p90 | p99 | max |");
    println!("|---|---:|---:|---:|---:|");
    {
        let mut opts = Options::new(TOKEN);
        opts.max_tier = 3;
        let receiver = Receiver::start(opts).unwrap();
        let lat = latency(&sp, &hook, hooks, &receiver.url(), || {
            receiver.accepted() as usize
        });
        latency_row("the workspace's (stored)", lat);
        receiver.stop();
    }
    {
        let receiver = NullReceiver::start();
        let lat = latency(&sp, &hook, hooks, &receiver.url, || receiver.events());
        latency_row("202 unread (the daemon alone)", lat);
    }
}

/// `hooks` PreToolUse calls one at a time through a daemon whose one sink is
/// `url`, each timed from the hook's spawn until `taken` counts its event.
fn latency(
    sp: &str,
    hook: &str,
    hooks: usize,
    url: &str,
    taken: impl Fn() -> usize,
) -> Vec<Duration> {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    add_sink(sp, &state, url);
    let mut d = daemon(sp, &state);
    let mut lat = Vec::with_capacity(hooks);
    for i in 0..hooks + 20 {
        let before = taken();
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
        while taken() <= before {
            std::thread::sleep(Duration::from_micros(200));
        }
        if i >= 20 {
            lat.push(t.elapsed());
        }
    }
    let _ = d.kill();
    let _ = d.wait();
    lat
}

fn latency_row(receiver: &str, mut lat: Vec<Duration>) {
    lat.sort();
    let pct = |p: f64| lat[((lat.len() - 1) as f64 * p).round() as usize].as_secs_f64() * 1000.0;
    println!(
        "| {receiver} | {:.1} ms | {:.1} ms | {:.1} ms | {:.1} ms |",
        pct(0.5),
        pct(0.9),
        pct(0.99),
        pct(1.0)
    );
}

/// A receiver that answers every batch 202 and stores nothing: a loopback
/// HTTP/1.1 server on std threads (one per connection; a sink keeps one),
/// serving the discovery document and taking `POST`s. It counts the events of
/// each batch by a scan of the body's JSON nesting (the objects inside the
/// `events` array), never parsing them, so the daemon's own delivery rate is
/// measured with as little of the receiver's cost on the same cores as can be.
struct NullReceiver {
    url: String,
    events: Arc<AtomicUsize>,
}

impl NullReceiver {
    fn start() -> NullReceiver {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let events = Arc::new(AtomicUsize::new(0));
        let counter = events.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let counter = counter.clone();
                std::thread::spawn(move || null_serve(conn, &counter));
            }
        });
        NullReceiver { url, events }
    }

    fn events(&self) -> usize {
        self.events.load(Ordering::Relaxed)
    }
}

fn null_serve(conn: TcpStream, events: &AtomicUsize) {
    let _ = conn.set_nodelay(true);
    let mut out = conn.try_clone().unwrap();
    let mut reader = BufReader::new(conn);
    let mut line = String::new();
    let mut body = Vec::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let get = line.starts_with("GET ");
        let mut length = 0usize;
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if line == "\r\n" || line == "\n" {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        body.resize(length, 0);
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let answer = if get {
            "{\"protocol\":[1],\"max_tier\":3,\"capabilities\":[\"events\",\"backfill\",\"forget\"],\"auth\":[\"bearer\"],\"endpoints\":{\"events\":\"/v1/events\"},\"batch\":{\"max_events\":50,\"max_bytes\":262144}}".to_string()
        } else {
            let n = count_events(&body);
            events.fetch_add(n, Ordering::Relaxed);
            format!("{{\"accepted\":{n},\"duplicates\":0,\"rejected\":[]}}")
        };
        let status = if get { "200 OK" } else { "202 Accepted" };
        let head = format!(
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            answer.len()
        );
        if out.write_all(format!("{head}{answer}").as_bytes()).is_err() {
            return;
        }
    }
}

/// The objects at depth 2 of `{"events":[{…},{…}]}`: one per event.
fn count_events(body: &[u8]) -> usize {
    let (mut depth, mut n, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for &b in body {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                if b == b'{' && depth == 3 {
                    n += 1;
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    n
}
