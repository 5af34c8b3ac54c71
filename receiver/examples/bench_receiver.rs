//! The receiver's numbers in BENCHMARKS.md, against the `sessionpipe-receiver`
//! binary over real HTTP on loopback:
//!
//! - events ingested per second with batches of 50, on SQLite and (when
//!   PostgreSQL is installed) on a throwaway PostgreSQL, against the same
//!   receiver answering every batch 202 before looking at it (its fault door):
//!   the baseline is HTTP alone, the ratio what storing costs;
//! - MACHINES paired machines long-polling at once: the receiver's resident
//!   memory with them all held, and the time from a command queued to its
//!   machine's poll answering (p50/p99), against the same with one machine.
//!   The machines come from many loopback addresses, `MACHINES_PER_ADDRESS`
//!   each (as households and offices behind one address do), so the
//!   receiver's cap on one client's connections is not what is measured; its
//!   cap on all connections is raised above MACHINES (the caller raises the
//!   file limit: bench/receiver.sh).
//!
//! With BASELINE_BIN (another build's receiver, an earlier commit's), each
//! part runs for both in the same run: the ingest runs alternated (this
//! build, the baseline, the baseline, this build, so a drift of the shared
//! machine's load falls on both alike), the long-polls one build after the
//! other; ratios are this build over the baseline. A BATCHES or MACHINES of 0
//! leaves that part out (a baseline from before `--max-connections` can only
//! run the ingest).
//!
//! Usage: bench_receiver RECEIVER_BIN [BATCHES] [MACHINES] [BASELINE_BIN]

use serde_json::{Value, json};
use sessionpipe_testkit::sandbox::UrlProcess;
use sessionpipe_verifier::softkey::{self, SoftPasskey};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

const TOKEN: &str = "bench-receiver-token";
const SENDERS: usize = 4;
const SAMPLES: usize = 200;
/// Machines long-polling from one loopback address: under the receiver's
/// 256 connections per client, with room for their acks.
const MACHINES_PER_ADDRESS: usize = 100;

struct Rx {
    process: UrlProcess,
    url: String,
    _dir: tempfile::TempDir,
}

impl Rx {
    fn start(bin: &str, extra: &[&str]) -> Rx {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = Command::new(bin);
        cmd.args(["--token", TOKEN, "--quiet", "--data"])
            .arg(dir.path())
            .args(extra);
        let process = UrlProcess::spawn(cmd);
        Rx {
            url: process.url.clone(),
            process,
            _dir: dir,
        }
    }

    fn rss_kb(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.process.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }

    /// TCP connections the receiver process holds open (its sockets less
    /// its listener).
    fn connections(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.process.child.id()))
            .map(|d| {
                d.filter_map(Result::ok)
                    .filter_map(|e| std::fs::read_link(e.path()).ok())
                    .filter(|l| l.to_string_lossy().starts_with("socket:"))
                    .count()
            })
            .unwrap_or(0)
            .saturating_sub(1)
    }
}

fn event(session: &str, seq: u64) -> Value {
    json!({
        "protocol": 1,
        "id": ulid::Ulid::generate().to_string(),
        "type": "tool.started",
        "time": protocol::time::rfc3339_ms(protocol::time::now_ms()),
        "tier": 1,
        "harness": {"name": "claude-code", "version": "2.1.0", "event": "PreToolUse"},
        "session": {"id": session, "seq": seq, "machine": "bench", "cwd": "~/work/project",
                    "model": "claude-sonnet-4"},
        "privacy": {"rulesets": ["secrets@1"], "pii": false},
        "data": {"tool": "Bash", "call_id": format!("toolu_{seq:020}")},
    })
}

/// Events per second over `batches` batches of 50, from `SENDERS` senders.
async fn ingest(client: &reqwest::Client, url: &str, batches: usize, run: &str) -> f64 {
    let started = Instant::now();
    let mut tasks = Vec::new();
    for s in 0..SENDERS {
        let (client, url, run) = (client.clone(), url.to_string(), run.to_string());
        tasks.push(tokio::spawn(async move {
            for b in (s..batches).step_by(SENDERS) {
                let session = format!("{run}-{}", b % 200);
                let events: Vec<Value> = (0..50)
                    .map(|i| event(&session, (b / 200 * 50 + i) as u64))
                    .collect();
                let body = serde_json::to_vec(&json!({"events": events})).unwrap();
                let r = client
                    .post(format!("{url}/v1/events"))
                    .bearer_auth(TOKEN)
                    .header("content-type", "application/json")
                    .body(body)
                    .send()
                    .await
                    .unwrap();
                assert_eq!(r.status(), 202, "{}", r.text().await.unwrap_or_default());
                let _ = r.bytes().await;
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    (batches * 50) as f64 / started.elapsed().as_secs_f64()
}

async fn post(client: &reqwest::Client, url: &str, bearer: &str, body: Value) -> Value {
    let r = client
        .post(url)
        .bearer_auth(bearer)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = r.status();
    let text = r.text().await.unwrap();
    assert!(status.is_success(), "{url}: {status} {text}");
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

/// Events stored per second by `bin` on one database, printed beside the
/// same receiver's rate answering unread; the stored rate.
async fn ingest_pair(
    client: &reqwest::Client,
    bin: &str,
    batches: usize,
    extra: &[&str],
    what: &str,
) -> f64 {
    let rx = Rx::start(bin, extra);
    // Warm up the connections and the database's first pages.
    ingest(client, &rx.url, 40, "warm").await;
    post(
        client,
        &format!("{}/test/faults", rx.url),
        TOKEN,
        json!({"status": 202, "count": batches, "body": {"accepted": 50, "duplicates": 0, "rejected": []}}),
    )
    .await;
    let http_only = ingest(client, &rx.url, batches, "base").await;
    let stored = ingest(client, &rx.url, batches, "run").await;
    println!(
        "ingest, {what}: {stored:.0} events/s stored; {http_only:.0} events/s answered 202 unread \
         (baseline); ratio {:.2} ({batches} batches of 50, {SENDERS} senders)",
        stored / http_only
    );
    stored
}

/// The ingest on one database: this build's alone, or with a baseline
/// alternated with it (this, baseline, baseline, this) and the ratio of their
/// mean stored rates. `extra(i)` is the `i`th run's arguments (which
/// database: a fresh one each run, so every run starts from empty tables and
/// each build's own schema).
async fn ingest_both(
    client: &reqwest::Client,
    bins: &Bins<'_>,
    batches: usize,
    what: &str,
    extra: impl Fn(usize) -> Vec<String>,
) {
    let Some(base) = bins.baseline else {
        let e = extra(0);
        let e: Vec<&str> = e.iter().map(String::as_str).collect();
        ingest_pair(client, bins.this, batches, &e, what).await;
        return;
    };
    let mut rates = [0.0; 4];
    let (this, baseline) = ((bins.this, "this build"), (base, "baseline"));
    for (i, (bin, which)) in [this, baseline, baseline, this].into_iter().enumerate() {
        let e = extra(i);
        let e: Vec<&str> = e.iter().map(String::as_str).collect();
        let label = format!("{what}, {which}");
        rates[i] = ingest_pair(client, bin, batches, &e, &label).await;
    }
    let (a, b) = ((rates[0] + rates[3]) / 2.0, (rates[1] + rates[2]) / 2.0);
    println!(
        "ingest, {what}: this build {a:.0} events/s stored, the baseline {b:.0} (means of two \
         runs each); this build over the baseline x{:.2}",
        a / b
    );
}

/// The receiver binaries a run measures.
struct Bins<'a> {
    this: &'a str,
    baseline: Option<&'a str>,
}

/// Pairs `n` machines through the test door; their (id, token).
async fn pair(client: &reqwest::Client, url: &str, n: usize) -> Vec<(String, String)> {
    let passkey = SoftPasskey::es256("localhost", "http://localhost");
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let started = post(
            client,
            &format!("{url}/v1/control/pair"),
            TOKEN,
            json!({"name": format!("bench-{i}"), "harnesses": ["claude-code"], "modes": ["turn"],
                   "version": "0.1.0"}),
        )
        .await;
        let (machine, code) = (
            started["machine"].as_str().unwrap(),
            started["code"].as_str().unwrap(),
        );
        let proof = softkey::enrollment_proof(&passkey, machine, code);
        post(
            client,
            &format!("{url}/test/pair/approve"),
            TOKEN,
            json!({"code": code, "key": passkey.trusted(), "proof": proof}),
        )
        .await;
        let text = client
            .get(format!("{url}/v1/control/pair?code={code}"))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let paired: Value = serde_json::from_str(&text).unwrap();
        out.push((
            machine.to_string(),
            paired["token"].as_str().unwrap().to_string(),
        ));
    }
    out
}

type Arrivals = Arc<std::sync::Mutex<std::collections::HashMap<String, Instant>>>;

/// The loopback address the `i`th machine polls from: 127.1.0.1, 127.1.0.2
/// and so on, `MACHINES_PER_ADDRESS` machines each.
fn address_of(i: usize) -> std::net::IpAddr {
    let a = i / MACHINES_PER_ADDRESS + 1;
    std::net::IpAddr::from([127, 1, (a / 256) as u8, (a % 256) as u8])
}

/// Each machine long-polls until its task is aborted; every message's
/// arrival is noted and acked.
fn poll_all(
    url: &str,
    machines: &[(String, String)],
    arrivals: &Arrivals,
) -> Vec<tokio::task::JoinHandle<()>> {
    let mut clients = std::collections::HashMap::new();
    let mut tasks = Vec::with_capacity(machines.len());
    for (i, (machine, token)) in machines.iter().enumerate() {
        let client = clients
            .entry(address_of(i))
            .or_insert_with(|| {
                reqwest::Client::builder()
                    .local_address(address_of(i))
                    .pool_max_idle_per_host(MACHINES_PER_ADDRESS * 2)
                    .timeout(Duration::from_secs(60))
                    .build()
                    .unwrap()
            })
            .clone();
        let (url, machine, token, arrivals) = (
            url.to_string(),
            machine.clone(),
            token.clone(),
            Arc::clone(arrivals),
        );
        tasks.push(tokio::spawn(async move {
            loop {
                let Ok(r) = client
                    .get(format!("{url}/v1/control?machine={machine}&wait=25"))
                    .bearer_auth(&token)
                    .send()
                    .await
                else {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                };
                if r.status() != 200 {
                    let _ = r.bytes().await;
                    continue;
                }
                let doc: Value = r
                    .text()
                    .await
                    .ok()
                    .and_then(|t| serde_json::from_str(&t).ok())
                    .unwrap_or(Value::Null);
                let now = Instant::now();
                let mut acks = Vec::new();
                for m in doc["messages"].as_array().into_iter().flatten() {
                    let id = m["id"].as_str().unwrap_or("").to_string();
                    arrivals.lock().unwrap().insert(id.clone(), now);
                    acks.push(json!({"id": id, "outcome": "delivered",
                        "at": protocol::time::rfc3339_ms(protocol::time::now_ms()), "mode": "turn"}));
                }
                let _ = client
                    .post(format!("{url}/v1/control/ack"))
                    .bearer_auth(&token)
                    .header("content-type", "application/json")
                    .body(json!({"acks": acks}).to_string())
                    .send()
                    .await;
            }
        }));
    }
    tasks
}

/// Queues `SAMPLES` commands one at a time to machines in turn; the
/// milliseconds from each queueing to its poll's answer.
async fn wakeups(
    client: &reqwest::Client,
    url: &str,
    machines: &[(String, String)],
    arrivals: &Arrivals,
) -> Vec<f64> {
    let mut out = Vec::with_capacity(SAMPLES);
    for i in 0..SAMPLES {
        let (machine, _) = &machines[(i * 7919) % machines.len()];
        let sent = Instant::now();
        let queued = post(
            client,
            &format!("{url}/test/control/enqueue"),
            TOKEN,
            json!({"machine": machine, "cmd": format!("{{\"bench\":{i}}}")}),
        )
        .await;
        let id = queued["id"].as_str().unwrap().to_string();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(at) = arrivals.lock().unwrap().get(&id) {
                out.push(at.duration_since(sent).as_secs_f64() * 1000.0);
                break;
            }
            assert!(
                Instant::now() < deadline,
                "message {id} never reached its poll"
            );
            tokio::time::sleep(Duration::from_micros(200)).await;
        }
    }
    out.sort_by(f64::total_cmp);
    out
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// The long-polls for one build; with `label`, its lines say which; the
/// RSS with every poll held.
async fn long_polls(client: &reqwest::Client, bin: &str, n: usize, label: &str) -> u64 {
    let cap = (n + 1024).to_string();
    let mut held_kb = 0;
    let mut one: Option<(f64, f64)> = None;
    for count in [1, n] {
        let rx = Rx::start(
            bin,
            &["--control", "--wait-max-s", "25", "--max-connections", &cap],
        );
        let before = rx.rss_kb();
        let t = Instant::now();
        let machines = pair(client, &rx.url, count).await;
        let paired = t.elapsed();
        let after_pairing = rx.rss_kb();
        let arrivals: Arrivals = Arc::default();
        let pollers = poll_all(&rx.url, &machines, &arrivals);
        // Every poll held (they are answered only by a message or the
        // wait): the receiver's open connections reach one per machine.
        let t = Instant::now();
        while rx.connections() < count && t.elapsed() < Duration::from_secs(60) {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
        let (held, open) = (rx.rss_kb(), rx.connections());
        let ms = wakeups(client, &rx.url, &machines, &arrivals).await;
        // Done with this receiver: its machines stop, so they do not poll
        // the next one's port (or load the machine) after it is gone.
        for t in pollers {
            t.abort();
        }
        let (p50, p99) = (pct(&ms, 0.5), pct(&ms, 0.99));
        let ratio = one.map_or(String::new(), |(b50, b99)| {
            format!(
                "; against one machine: p50 x{:.2}, p99 x{:.2}",
                p50 / b50,
                p99 / b99
            )
        });
        held_kb = held;
        println!(
            "long-polls{label}, {count} machine(s) held: RSS {} MB with them held ({} MB before pairing, \
             {} MB after; {open} connections open, paired in {:.1} s); queued command to its poll's \
             answer p50 {p50:.2} ms, p99 {p99:.2} ms ({SAMPLES} commands){ratio}",
            held / 1024,
            before / 1024,
            after_pairing / 1024,
            paired.as_secs_f64(),
        );
        one.get_or_insert((p50, p99));
    }
    held_kb
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let bin = args
        .get(1)
        .expect("usage: bench_receiver RECEIVER_BIN [BATCHES] [MACHINES] [BASELINE_BIN]");
    let batches: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(2000);
    let machines: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(1000);
    let bins = Bins {
        this: bin,
        baseline: args.get(4).map(String::as_str).filter(|b| !b.is_empty()),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(SENDERS * 2)
            .timeout(Duration::from_secs(60))
            .build()
            .unwrap();
        if batches > 0 {
            ingest_both(&client, &bins, batches, "SQLite", |_| Vec::new()).await;
            match sessionpipe_testkit::postgres::Postgres::start() {
                Ok(pg) => {
                    let pg = &pg;
                    ingest_both(&client, &bins, batches, "PostgreSQL", |i| {
                        let url = pg.create_database(&format!("bench{i}")).unwrap();
                        vec!["--database".to_string(), url]
                    })
                    .await;
                }
                Err(e) => println!("ingest, PostgreSQL: skipped ({e})"),
            }
        }
        if machines > 0 {
            let Some(base) = bins.baseline else {
                long_polls(&client, bin, machines, "").await;
                return;
            };
            let this = long_polls(&client, bin, machines, " (this build)").await;
            let before = long_polls(&client, base, machines, " (baseline)").await;
            println!(
                "long-polls, {machines} machines held: RSS {} MB this build, {} MB the baseline; \
                 x{:.2}",
                this / 1024,
                before / 1024,
                this as f64 / before.max(1) as f64
            );
        }
    });
}
