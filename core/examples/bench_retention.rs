//! Benchmark: retention on a large outbox (issue 17). An outbox of N events
//! (default 100 000; about 1 KiB each, Claude Code `tool.started`s of 20
//! sessions), the first 60 % stamped 40 days ago and the rest a day ago, every
//! one taken by every sink, is pruned as the daemon's pass prunes it
//! (`prune_batch` of `retention::BATCH` events, `retention::PAUSE` between),
//! while another connection appends one event every 5 ms as ingest does
//! (its own transaction, synchronous=FULL). Reported: each batch's time; the
//! appends' latency before the pass and during it; the incremental vacuum
//! that gives the freed pages back, and the file's size before and after;
//! then, for an outbox made before auto-vacuum (as every outbox of earlier
//! versions is), the one VACUUM that switches it once it is pruned.
//!
//! Usage: bench_retention [N]. It times and reports only, in its own
//! temporary folder.

mod common;

use sessionpipe_core::pipeline::outbox::{self, Outbox};
use sessionpipe_core::pipeline::session::{Stamp, envelope};
use sessionpipe_core::protocol::{self, EventData, SessionBlock, ToolStarted};
use sessionpipe_core::retention;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const DAY_MS: i64 = 86_400_000;

fn event(i: usize, time_ms: i64) -> protocol::Envelope {
    let session = format!("00000000-0000-4000-8000-{:012}", i % 20);
    let block = SessionBlock {
        cwd: Some("~/src/sessionpipe".into()),
        title: Some("Tidy the outbox module and add retention".into()),
        model: Some("claude-opus-5-5".into()),
        ..Default::default()
    };
    let stamp = Stamp {
        harness: "claude-code",
        harness_event: Some("PreToolUse"),
        version: Some("2.3.1"),
        session_id: &session,
        block: &block,
        time_ms,
    };
    let command = format!(
        "cargo test --workspace -- --nocapture {i} {}",
        "x".repeat(600)
    );
    envelope(
        &stamp,
        0,
        EventData::ToolStarted(ToolStarted {
            tool: "Bash".into(),
            call_id: Some(format!("toolu_{i:020}")),
            input: Some(serde_json::json!({"command": command, "description": "Run the tests"})),
            ..Default::default()
        }),
    )
}

/// An outbox of `n` events, 60 % of them 40 days old.
fn fill(path: &Path, n: usize, now: i64) {
    let mut ob = Outbox::open(path).unwrap();
    let old = n * 6 / 10;
    for chunk in (0..n).collect::<Vec<_>>().chunks(2000) {
        let tx = ob.begin().unwrap();
        for &i in chunk {
            let t = if i < old {
                now - 40 * DAY_MS
            } else {
                now - DAY_MS
            };
            tx.append(&mut event(i, t)).unwrap();
        }
        tx.commit().unwrap();
    }
    ob.checkpoint().unwrap();
}

fn mib(b: u64) -> f64 {
    b as f64 / (1024.0 * 1024.0)
}

/// Appends one event every 5 ms until `stop`; each append's time in ms.
fn appender(path: &Path, stop: Arc<AtomicBool>, now: i64) -> std::thread::JoinHandle<Vec<f64>> {
    let path = path.to_path_buf();
    std::thread::spawn(move || {
        let mut ob = Outbox::open(&path).unwrap();
        let mut ms = Vec::new();
        let mut i = 1_000_000;
        while !stop.load(Ordering::Relaxed) {
            let t = Instant::now();
            ob.append(&mut event(i, now)).unwrap();
            ms.push(t.elapsed().as_secs_f64() * 1000.0);
            i += 1;
            std::thread::sleep(Duration::from_millis(5));
        }
        ms
    })
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("outbox.db");
    let now = protocol::time::now_ms();
    let t = Instant::now();
    fill(&path, n, now);
    let before = outbox::size_on_disk(&path);
    println!(
        "{n} events in {:.1} MiB (made in {:.1} s, not counted)",
        mib(before),
        t.elapsed().as_secs_f64()
    );

    // Appends alone, for the baseline.
    let stop = Arc::new(AtomicBool::new(false));
    let alone = appender(&path, stop.clone(), now);
    std::thread::sleep(Duration::from_secs(3));
    stop.store(true, Ordering::Relaxed);
    let mut alone = alone.join().unwrap();

    // The pass, with appends beside it.
    let stop = Arc::new(AtomicBool::new(false));
    let beside = appender(&path, stop.clone(), now);
    let mut ob = Outbox::open_for_retention(&path).unwrap();
    let mut batches = Vec::new();
    let mut deleted = 0;
    let pass = Instant::now();
    loop {
        let t = Instant::now();
        let step = ob
            .prune_batch(
                i64::MAX,
                retention::cutoff_ms(now, 30),
                now,
                retention::BATCH,
            )
            .unwrap();
        batches.push(t.elapsed().as_secs_f64() * 1000.0);
        deleted += step.deleted;
        if !step.more {
            break;
        }
        std::thread::sleep(retention::PAUSE);
    }
    let pruned_in = pass.elapsed();
    let free = ob.pages().unwrap().free;
    let mut steps = Vec::new();
    let vacuum = Instant::now();
    while ob.pages().unwrap().free > 0 {
        let t = Instant::now();
        ob.incremental_vacuum(retention::VACUUM_PAGES).unwrap();
        steps.push(t.elapsed().as_secs_f64() * 1000.0);
        std::thread::sleep(retention::PAUSE);
    }
    let vacuumed_in = vacuum.elapsed();
    stop.store(true, Ordering::Relaxed);
    let mut beside = beside.join().unwrap();
    ob.checkpoint().unwrap();
    let after = outbox::size_on_disk(&path);
    println!(
        "pruned {deleted} events in {} batches of {} over {:.1} s (pauses of {} ms included)",
        batches.len(),
        retention::BATCH,
        pruned_in.as_secs_f64(),
        retention::PAUSE.as_millis()
    );
    common::report("a prune batch (one write transaction)", &mut batches);
    common::report("an append, alone", &mut alone);
    common::report("an append, during the pass", &mut beside);
    common::report(
        &format!(
            "an incremental_vacuum step of {} pages ({free} free pages in {:.1} s)",
            retention::VACUUM_PAGES,
            vacuumed_in.as_secs_f64()
        ),
        &mut steps,
    );
    println!(
        "on disk: {:.1} MiB before, {:.1} MiB after",
        mib(before),
        mib(after)
    );

    // An outbox of an earlier version: no auto-vacuum until one VACUUM.
    let old = dir.path().join("old.db");
    {
        let c = rusqlite::Connection::open(&old).unwrap();
        c.execute_batch(
            "PRAGMA auto_vacuum = NONE; PRAGMA journal_mode = WAL; CREATE TABLE t (x);",
        )
        .unwrap();
    }
    fill(&old, n, now);
    let mut ob = Outbox::open_for_retention(&old).unwrap();
    assert!(!ob.pages().unwrap().incremental);
    while ob
        .prune_batch(
            i64::MAX,
            retention::cutoff_ms(now, 30),
            now,
            retention::BATCH,
        )
        .unwrap()
        .more
    {}
    let pages = ob.pages().unwrap();
    let t = Instant::now();
    ob.vacuum_to_incremental().unwrap();
    let took = t.elapsed();
    ob.checkpoint().unwrap();
    println!(
        "an earlier version's outbox, pruned: one VACUUM of {:.1} MiB held ({:.1} MiB file) took {:.0} ms (the write lock held throughout); {:.1} MiB after",
        mib(pages.used_bytes() as u64),
        mib((pages.page_count * pages.page_size) as u64),
        took.as_secs_f64() * 1000.0,
        mib(outbox::size_on_disk(&old))
    );
}
