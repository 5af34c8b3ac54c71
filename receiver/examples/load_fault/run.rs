//! The receiver's load and fault run: two receiver processes on one
//! PostgreSQL behind the test kit's round-robin balancer (which names each
//! client in `x-forwarded-for`; the receivers trust it as their proxy), and
//! at once: machines long-polling, machines sending events, page users
//! signed in with a software passkey reading the board, and commands queued
//! for random machines. During it, one receiver process is SIGKILLed and
//! started again, then PostgreSQL is restarted. What must hold:
//!
//! - every event sent is stored once: each session's rows are exactly the
//!   seqs its sender was answered 202 for, none missing (a batch whose
//!   answer was lost is sent again and counted a duplicate, never twice);
//! - every command queued (answered 201) reaches its machine once, and is
//!   acked once (its final ack recorded; a machine acks before it polls
//!   again, so a message it saw is never handed to it again); a message
//!   whose queueing was not answered may exist or not, and is counted;
//! - no long-poll is held past its window (plus a slack for the faults and
//!   a loaded machine), however it ends;
//! - the page users stay signed in and read their board throughout (a read
//!   refused during a fault is tried again).
//!
//! The actors are in `load.rs`. Used by `receiver/examples/load_fault/main.rs` (full scale, a bench) and
//! `receiver/tests/receiver/load_fault.rs` (small scale, a test). It needs the
//! receiver binary built with its test doors (pairing is approved and
//! commands queued through them) and PostgreSQL (`None` without it).

use super::load::{
    Machine, POLL_SLACK, Process, Seen, TOKEN, free_port, long_poll, page_user, pair,
    queue_commands, rss_mb, send_events,
};
use sessionpipe_testkit::balancer::Balancer;
use sessionpipe_verifier::softkey::SoftPasskey;
use std::collections::HashMap;
use std::net::IpAddr;
use std::path::Path;
use std::process::Child;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How big the run is.
#[derive(Clone, Copy, Debug)]
pub struct Scale {
    /// Machines paired and long-polling.
    pub machines: usize,
    /// Of them, machines sending events (one session each).
    pub senders: usize,
    /// Page users signed in, reading the board.
    pub page_users: usize,
    /// The long-poll window asked for (the receivers' --wait-max-s).
    pub wait: Duration,
    /// From the load running to the SIGKILL of one receiver process.
    pub kill_at: Duration,
    /// From the load running to PostgreSQL's restart.
    pub pg_restart_at: Duration,
    /// From the load running to its end (then what is in flight drains).
    pub run_for: Duration,
    /// Between two commands queued.
    pub command_every: Duration,
    /// Between two batches of one sender (10 events each).
    pub batch_every: Duration,
}

// The example takes `full`, the test `small`: each build of this file uses one.
#[allow(dead_code)]
impl Scale {
    /// The issue's: 2 000 machines, 50 sending, 20 page users.
    pub fn full() -> Scale {
        Scale {
            machines: 2000,
            senders: 50,
            page_users: 20,
            wait: Duration::from_secs(15),
            kill_at: Duration::from_secs(20),
            pg_restart_at: Duration::from_secs(50),
            run_for: Duration::from_secs(80),
            command_every: Duration::from_millis(50),
            batch_every: Duration::from_millis(500),
        }
    }

    /// A test's: the same faults, a tenth of the load, a shorter window.
    pub fn small() -> Scale {
        Scale {
            machines: 200,
            senders: 10,
            page_users: 5,
            wait: Duration::from_secs(5),
            kill_at: Duration::from_secs(6),
            pg_restart_at: Duration::from_secs(16),
            run_for: Duration::from_secs(26),
            command_every: Duration::from_millis(100),
            batch_every: Duration::from_millis(500),
        }
    }
}

/// What the run saw; `violations` is what must be empty.
#[derive(Debug, Default)]
pub struct Report {
    pub lines: Vec<String>,
    pub violations: Vec<String>,
}

impl Report {
    fn say(&mut self, line: String) {
        println!("{line}");
        self.lines.push(line);
    }

    fn check(&mut self, ok: bool, what: impl Into<String>) {
        if !ok {
            let what = what.into();
            println!("VIOLATION: {what}");
            self.violations.push(what);
        }
    }
}

/// Runs it all with `bin` (the receiver, built with its test doors);
/// `None` when PostgreSQL is not installed (said in one line).
pub fn run(bin: &Path, scale: Scale) -> Option<Report> {
    let mut pg = sessionpipe_testkit::postgres::start_or_skip("load and fault run")?;
    let mut report = Report::default();
    let db = pg.create_database("load").expect("a database");
    let dir = tempfile::tempdir().expect("a folder");
    let ports = [free_port(), free_port()];
    let backends: Vec<String> = ports
        .iter()
        .map(|p| format!("http://127.0.0.1:{p}"))
        .collect();
    let lb = Balancer::start_forwarding(&backends).expect("the balancer");
    let url = lb.url();
    let origin = format!("http://localhost:{}", lb.url().rsplit(':').next().unwrap());
    let mut rx: Vec<Process> = ports
        .iter()
        .enumerate()
        .map(|(i, port)| {
            let data = dir.path().join(format!("rx{i}"));
            let args: Vec<String> = [
                "--token",
                TOKEN,
                "--quiet",
                "--database",
                &db,
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--origin",
                &origin,
                "--open-registration",
                "--trusted-proxy",
                "127.0.0.1",
                "--wait-max-s",
                &scale.wait.as_secs().to_string(),
                "--max-connections",
                "20000",
                "--data",
                &data.to_string_lossy(),
            ]
            .iter()
            .map(|s| s.to_string())
            .collect();
            Process::start(bin, args, dir.path().join(format!("rx{i}.log")))
        })
        .collect();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(scale.machines + 100)
        .timeout(Duration::from_secs(60))
        .build()
        .expect("a client");
    let seen = Arc::new(Seen::default());
    // The load (events, commands, page users) stops first; the polls after
    // what was queued has drained.
    let stop = Arc::new(AtomicBool::new(false));
    let stop_polls = Arc::new(AtomicBool::new(false));

    // Page users first (their first sign-up is the events' owner's), each
    // from an address of its own: the receivers tell them apart through the
    // balancer's x-forwarded-for.
    let users: Vec<_> = (0..scale.page_users)
        .map(|n| {
            let (url, origin, seen, stop) = (
                url.clone(),
                origin.clone(),
                Arc::clone(&seen),
                Arc::clone(&stop),
            );
            let from = IpAddr::from([127, 0, 2, 1 + n as u8]);
            std::thread::spawn(move || page_user(url, origin, from, n, seen, stop))
        })
        .collect();

    let t = Instant::now();
    let passkey = SoftPasskey::es256("localhost", &origin);
    let machines: Vec<Machine> = rt.block_on(async {
        let mut out = Vec::with_capacity(scale.machines);
        for chunk in (0..scale.machines).collect::<Vec<_>>().chunks(32) {
            let tasks: Vec<_> = chunk
                .iter()
                .map(|&i| {
                    let (c, url, pk) = (client.clone(), url.clone(), passkey.clone());
                    tokio::spawn(async move { pair(&c, &url, &pk, i).await })
                })
                .collect();
            for task in tasks {
                out.push(task.await.expect("paired"));
            }
        }
        out
    });
    report.say(format!(
        "paired {} machines through the balancer in {:.1} s",
        machines.len(),
        t.elapsed().as_secs_f64()
    ));
    let machines = Arc::new(machines);

    let started = Instant::now();
    let (pollers, senders, queuer) = {
        let _in = rt.enter();
        let pollers: Vec<_> = machines
            .iter()
            .map(|m| {
                tokio::spawn(long_poll(
                    client.clone(),
                    url.clone(),
                    m.clone(),
                    scale.wait,
                    Arc::clone(&seen),
                    Arc::clone(&stop_polls),
                ))
            })
            .collect();
        let senders: Vec<_> = machines
            .iter()
            .take(scale.senders)
            .map(|m| {
                tokio::spawn(send_events(
                    client.clone(),
                    url.clone(),
                    m.id.clone(),
                    scale.batch_every,
                    Arc::clone(&seen),
                    Arc::clone(&stop),
                ))
            })
            .collect();
        let queuer = tokio::spawn(queue_commands(
            client.clone(),
            url.clone(),
            Arc::clone(&machines),
            scale.command_every,
            Arc::clone(&stop),
        ));
        (pollers, senders, queuer)
    };
    let at = |d: Duration| std::thread::sleep(d.saturating_sub(started.elapsed()));

    at(scale.kill_at);
    let pid = rx[0].child.as_ref().map(Child::id).unwrap_or(0);
    let rss = (
        rss_mb(pid),
        rss_mb(rx[1].child.as_ref().map(Child::id).unwrap_or(0)),
    );
    rx[0].sigkill();
    report.say(format!(
        "{:.0} s: receiver 1 (pid {pid}) SIGKILLed (RSS before: {} and {} MB); {} polls so far",
        started.elapsed().as_secs_f64(),
        rss.0,
        rss.1,
        seen.polls.load(Ordering::Relaxed)
    ));
    std::thread::sleep(Duration::from_secs(2));
    rx[0].spawn();
    report.say(format!(
        "{:.0} s: receiver 1 started again",
        started.elapsed().as_secs_f64()
    ));

    at(scale.pg_restart_at);
    let t = Instant::now();
    pg.restart().expect("PostgreSQL restarts");
    report.say(format!(
        "{:.0} s: PostgreSQL restarted ({:.1} s down)",
        started.elapsed().as_secs_f64(),
        t.elapsed().as_secs_f64()
    ));

    at(scale.run_for);
    stop.store(true, Ordering::SeqCst);
    let (known, unanswered) = rt.block_on(queuer).expect("the queuer");
    let sent: Vec<(String, u64)> = rt.block_on(async {
        let mut out = Vec::new();
        for s in senders {
            out.push(s.await.expect("a sender"));
        }
        out
    });
    // What is queued drains: the pollers go on until every command answered
    // 201 was acked, or a deadline.
    let drain = Instant::now();
    while drain.elapsed() < scale.wait * 2 + Duration::from_secs(30) {
        let acked = seen.acked.lock().unwrap();
        if known.keys().all(|id| acked.contains_key(id)) {
            break;
        }
        drop(acked);
        std::thread::sleep(Duration::from_millis(200));
    }
    stop_polls.store(true, Ordering::SeqCst);
    let drained = drain.elapsed();
    // Every poll ends within its window: one still held past it is stuck.
    let held = rt.block_on(async {
        let until = tokio::time::Instant::now() + scale.wait + POLL_SLACK + Duration::from_secs(5);
        let mut held = 0;
        for p in pollers {
            if tokio::time::timeout_at(until, p).await.is_err() {
                held += 1;
            }
        }
        held
    });
    report.check(
        held == 0,
        format!("{held} long-polls still held past their window at the end"),
    );
    for u in users {
        match u.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => report.check(false, format!("a page user: {e}")),
            Err(_) => report.check(false, "a page user's thread panicked"),
        }
    }
    let ran = started.elapsed();

    // Events: each session's rows are exactly its sender's seqs, each once.
    let rows = pg
        .psql(
            "load",
            "SELECT session, count(*), count(DISTINCT seq), min(seq), max(seq) \
             FROM events GROUP BY session ORDER BY session",
        )
        .expect("events");
    let stored: HashMap<String, (u64, u64, u64, u64)> = rows
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('|').collect();
            Some((
                f[0].to_string(),
                (
                    f.get(1)?.parse().ok()?,
                    f.get(2)?.parse().ok()?,
                    f.get(3)?.parse().ok()?,
                    f.get(4)?.parse().ok()?,
                ),
            ))
        })
        .collect();
    let total_sent: u64 = sent.iter().map(|(_, n)| n).sum();
    let total_stored: u64 = stored.values().map(|(n, _, _, _)| n).sum();
    for (session, n) in &sent {
        let got = stored.get(session).copied().unwrap_or((0, 0, 0, 0));
        report.check(
            *n == 0 || got == (*n, *n, 0, n - 1),
            format!(
                "{session}: sent seqs 0..{n}, stored {} rows of {} seqs ({}..={})",
                got.0, got.1, got.2, got.3
            ),
        );
    }
    report.check(
        total_stored == total_sent,
        format!("events: {total_sent} sent, {total_stored} stored"),
    );
    report.say(format!(
        "events: {total_sent} sent by {} machines in batches of 10, {total_stored} stored, each once; \
         {} batches sent again after a refusal or a lost answer, {} events answered as duplicates",
        sent.len(),
        seen.batch_retries.load(Ordering::Relaxed),
        seen.duplicates_answered.load(Ordering::Relaxed)
    ));

    // Commands: each answered 201 reached its machine once and was acked.
    let rows = pg
        .psql(
            "load",
            "SELECT id, deliveries, acks, duplicates, final_ack IS NOT NULL FROM messages",
        )
        .expect("messages");
    let kept: HashMap<String, (u64, u64, u64, bool)> = rows
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('|').collect();
            Some((
                f[0].to_string(),
                (
                    f[1].parse().ok()?,
                    f[2].parse().ok()?,
                    f[3].parse().ok()?,
                    f[4] == "t",
                ),
            ))
        })
        .collect();
    let received = seen.received.lock().unwrap().clone();
    let mut missing = 0;
    for id in known.keys() {
        let times = received.get(id).copied().unwrap_or(0);
        if times == 0 {
            missing += 1;
        }
        report.check(
            times <= 1,
            format!("command {id} reached its machine {times} times"),
        );
        let final_ack = kept.get(id).is_some_and(|k| k.3);
        report.check(final_ack, format!("command {id}: no final ack recorded"));
    }
    report.check(
        missing == 0,
        format!(
            "{missing} of {} commands never reached their machine",
            known.len()
        ),
    );
    let strangers = received
        .keys()
        .filter(|id| !known.contains_key(*id))
        .count() as u64;
    report.check(
        strangers <= unanswered,
        format!("{strangers} messages delivered that were not queued by an answered or unanswered call ({unanswered})"),
    );
    let twice = received.values().filter(|n| **n > 1).count();
    report.check(
        twice == 0,
        format!("{twice} messages reached their machine more than once"),
    );
    let deliveries: u64 = kept.values().map(|k| k.0).sum();
    let ack_dups: u64 = kept.values().map(|k| k.2).sum();
    report.say(format!(
        "commands: {} queued (201), {} queueings unanswered ({strangers} of them kept and delivered); \
         each reached its machine once and was acked once (drained {:.1} s after the load stopped); \
         the receivers handed them out {deliveries} times for {} messages (more when a poll's answer \
         was lost with its process), {} acks sent again after a lost answer ({ack_dups} recorded as \
         duplicates)",
        known.len(),
        unanswered,
        drained.as_secs_f64(),
        kept.len(),
        seen.ack_retries.load(Ordering::Relaxed)
    ));

    // Polls: none past its window.
    let stuck = seen.polls_stuck.load(Ordering::Relaxed);
    report.check(
        stuck == 0,
        format!("{stuck} long-polls ended past their window + {POLL_SLACK:?}"),
    );
    report.say(format!(
        "long-polls: {} answered or broken off, {} of them errors (a process killed, the database \
         down) tried again; the longest took {:.1} s for a {} s window",
        seen.polls.load(Ordering::Relaxed),
        seen.poll_errors.load(Ordering::Relaxed),
        seen.poll_longest_ms.load(Ordering::Relaxed) as f64 / 1000.0,
        scale.wait.as_secs()
    ));
    report.say(format!(
        "page: {} users signed in ({} sign-ins), {} board reads, {} tried again",
        scale.page_users,
        seen.sign_ins.load(Ordering::Relaxed),
        seen.board_reads.load(Ordering::Relaxed),
        seen.board_retries.load(Ordering::Relaxed)
    ));
    report.check(
        seen.board_reads.load(Ordering::Relaxed) > 0 || scale.page_users == 0,
        "no board was read",
    );
    report.say(format!(
        "{:.0} s in all; requests per receiver process: {:?}",
        ran.as_secs_f64(),
        lb.served()
    ));
    drop(rx);
    Some(report)
}
