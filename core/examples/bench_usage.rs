//! Benchmark: `sessionpipe usage` over a year of use (issue 33), against a
//! fresh install measured in the same run.
//!
//! The year is bench_year's: the same 20 000 session plans over 365 days
//! (`bench_year/synth.rs`, the same seed, harnesses, models, accounts, turns
//! and tool calls), each played for its times, with one model response per
//! tool call and one per turn's end, written through the daemon's own write
//! path (`OutboxTx::put_usage`) into an outbox of its own (usage reads never
//! touch the events, so they are left out). The fresh install is 100
//! sessions over 60 days. Generated once into `$BENCH_USAGE_DIR` (default
//! `bench-usage` beside the binaries' folder) and kept.
//!
//! Measured, whole processes (p50 / p99 of SAMPLES runs): `usage --since 365d
//! --by day`, the same with `--json`, and `--by session`; the report alone,
//! in this process (`usage::report`); and the Usage page's API as the window
//! asks it (`GET /api/usage/days`, `/api/usage/sessions`, `/api/usage/limits`
//! over the page's widest span, 90 days, and over 365) against a real
//! `sessionpipe daemon` on each state dir, with the daemon's resident memory
//! after.
//!
//! Usage: bench_usage SESSIONPIPE [SAMPLES]

#[path = "bench_year/rng.rs"]
#[allow(dead_code)]
mod rng;
#[path = "bench_year/synth.rs"]
#[allow(dead_code)]
mod synth;

use sessionpipe_core::harness::usage::Usage;
use sessionpipe_core::pipeline::outbox::Outbox;
use sessionpipe_core::protocol::EventData;
use sessionpipe_core::usage::prices::Prices;
use sessionpipe_core::usage::{Ask, By};
use std::path::{Path, PathBuf};
use std::time::Instant;
use synth::DAY_MS;

const YEAR_SESSIONS: usize = 20_000;
const FRESH_SESSIONS: usize = 100;
/// Bumped when what is generated changes.
const GEN_VERSION: &str = "1";

/// A session's model responses: one at each tool call and at each turn's
/// end, with token counts of the sizes real sessions show.
fn responses(
    plan: &synth::Plan,
    r: &mut rng::Rng,
) -> (Vec<Usage>, sessionpipe_core::protocol::SessionBlock) {
    let played = synth::play(plan, false);
    let mut out = Vec::new();
    for ev in played.events.iter().flatten() {
        if matches!(ev.data, EventData::ToolStarted(_) | EventData::TurnEnded(_)) {
            out.push(Usage {
                key: format!("r{}", out.len()),
                at_ms: ev.ms,
                model: Some(plan.model.to_string()),
                input: r.range(2, 5_000) as u64,
                output: r.range(50, 2_000) as u64,
                cache_read: r.range(5_000, 150_000) as u64,
                cache_write: r.range(0, 20_000) as u64,
            });
        }
    }
    (out, played.block)
}

/// Writes the plans' usage into a new outbox at `state`; the responses.
fn generate(state: &Path, plans: &[synth::Plan]) -> usize {
    let _ = std::fs::remove_dir_all(state);
    std::fs::create_dir_all(state).unwrap();
    let mut ob = Outbox::open(&state.join("outbox.db")).unwrap();
    let mut r = rng::Rng::new(33);
    let mut written = 0;
    for chunk in plans.chunks(200) {
        let tx = ob.begin().unwrap();
        for p in chunk {
            let (rows, block) = responses(p, &mut r);
            written += rows.len();
            tx.put_usage(p.harness, &p.id, &block, &rows).unwrap();
        }
        tx.commit().unwrap();
    }
    ob.checkpoint().unwrap();
    std::fs::write(state.join("bench-usage.version"), GEN_VERSION).unwrap();
    written
}

/// The state dir at `state`, generated unless it is there already.
fn made(state: &Path, plans: impl FnOnce() -> Vec<synth::Plan>) {
    let current = std::fs::read_to_string(state.join("bench-usage.version")).ok();
    if current.as_deref() == Some(GEN_VERSION) {
        eprintln!("{}: cached", state.display());
        return;
    }
    let t = Instant::now();
    let plans = plans();
    let n = generate(state, &plans);
    eprintln!(
        "{}: {} sessions, {n} responses, generated in {:.0} s",
        state.display(),
        plans.len(),
        t.elapsed().as_secs_f64()
    );
}

fn pct(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() as f64 - 1.0) * q).round() as usize]
}

/// `sessionpipe ARGS` in `state`, `n` times: each run's wall time (ms).
fn runs(sessionpipe: &Path, state: &Path, args: &[&str], n: usize) -> Vec<f64> {
    (0..n)
        .map(|_| {
            let t = Instant::now();
            let out = std::process::Command::new(sessionpipe)
                .env("SESSIONPIPE_STATE_DIR", state)
                .env("HOME", state)
                .env("NO_COLOR", "1")
                .args(args)
                .output()
                .unwrap();
            let took = t.elapsed().as_secs_f64() * 1000.0;
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            took
        })
        .collect()
}

/// The daemon's resident memory (VmRSS, kB).
fn rss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// A `sessionpipe daemon` on `state`, the Usage page's three reads over the
/// last `span_days` `n` times (each round's wall time, ms), and its RSS
/// before and after (kB).
fn page_api(sessionpipe: &Path, state: &Path, span_days: i64, n: usize) -> (Vec<f64>, u64, u64) {
    let _ = std::fs::remove_file(state.join("ui.json"));
    let mut daemon = std::process::Command::new(sessionpipe)
        .env("SESSIONPIPE_STATE_DIR", state)
        .env("HOME", state)
        .arg("daemon")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let ui = state.join("ui.json");
    let until = Instant::now() + std::time::Duration::from_secs(20);
    let link: serde_json::Value = loop {
        if let Some(v) = std::fs::read(&ui)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
        {
            break v;
        }
        assert!(Instant::now() < until, "the daemon wrote no ui.json");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let base = link["url"]
        .as_str()
        .unwrap()
        .trim_end_matches('/')
        .to_string();
    let token = link["token"].as_str().unwrap().to_string();
    let client = reqwest::blocking::Client::new();
    let get = |path: &str| {
        let r = client
            .get(format!("{base}{path}"))
            .bearer_auth(&token)
            .send()
            .unwrap();
        assert!(r.status().is_success(), "{path}: {}", r.status());
        r.bytes().unwrap();
    };
    std::thread::sleep(std::time::Duration::from_secs(2));
    let before = rss_kb(daemon.id());
    let since = sessionpipe_core::protocol::time::rfc3339_ms(
        sessionpipe_core::protocol::time::now_ms() - span_days * DAY_MS,
    );
    let rounds = (0..n)
        .map(|_| {
            let t = Instant::now();
            get(&format!(
                "/api/usage/days?since={since}&tz_offset_minutes=60"
            ));
            get(&format!("/api/usage/sessions?since={since}&limit=10"));
            get("/api/usage/limits");
            t.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    let after = rss_kb(daemon.id());
    let _ = daemon.kill();
    let _ = daemon.wait();
    (rounds, before, after)
}

/// The report alone, in this process, `n` times (ms).
fn in_process(state: &Path, n: usize) -> Vec<f64> {
    let prices = Prices::new(&Default::default());
    let ob = Outbox::open_readonly(&state.join("outbox.db")).unwrap();
    let now = sessionpipe_core::protocol::time::now_ms();
    (0..n)
        .map(|_| {
            let t = Instant::now();
            let ask = Ask {
                since_ms: now - 365 * DAY_MS,
                until_ms: now,
                tz_offset_minutes: 0,
                by: By::Day,
            };
            let r = sessionpipe_core::usage::report(ob.as_ref(), &prices, ask).unwrap();
            assert!(r.total.tokens.responses > 0);
            t.elapsed().as_secs_f64() * 1000.0
        })
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: bench_usage SESSIONPIPE [SAMPLES]";
    let sessionpipe = std::fs::canonicalize(args.get(1).expect(usage)).expect("SESSIONPIPE exists");
    let samples: usize = args.get(2).and_then(|n| n.parse().ok()).unwrap_or(30);
    let cache = std::env::var_os("BENCH_USAGE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| sessionpipe.parent().unwrap().join("../bench-usage"));
    let now = sessionpipe_core::protocol::time::now_ms() / 60_000 * 60_000;
    let year = cache.join("year");
    let fresh = cache.join("fresh");
    made(&year, || {
        synth::ending_before(
            synth::plans(1, YEAR_SESSIONS, now - 364 * DAY_MS, now - DAY_MS, 1.0),
            now,
        )
    });
    made(&fresh, || {
        synth::ending_before(
            synth::plans(3, FRESH_SESSIONS, now - 60 * DAY_MS, now - DAY_MS, 1.0),
            now,
        )
    });
    for (what, args) in [
        (
            "usage --since 365d --by day",
            vec!["usage", "--since", "365d", "--by", "day"],
        ),
        (
            "usage --since 365d --by day --json",
            vec!["usage", "--since", "365d", "--by", "day", "--json"],
        ),
        (
            "usage --since 365d --by session",
            vec!["usage", "--since", "365d", "--by", "session"],
        ),
    ] {
        let mut f = runs(&sessionpipe, &fresh, &args, samples);
        let mut y = runs(&sessionpipe, &year, &args, samples);
        let (fp50, yp50) = (pct(&mut f, 0.5), pct(&mut y, 0.5));
        println!(
            "{what}: fresh p50 {fp50:.1} ms p99 {:.1} ms; year p50 {yp50:.1} ms p99 {:.1} ms; year / fresh x{:.2} ({samples} runs each)",
            pct(&mut f, 0.99),
            pct(&mut y, 0.99),
            yp50 / fp50
        );
    }
    let mut f = in_process(&fresh, samples);
    let mut y = in_process(&year, samples);
    println!(
        "the report alone (in process, by day, 365 days): fresh p50 {:.2} ms; year p50 {:.2} ms p99 {:.2} ms",
        pct(&mut f, 0.5),
        pct(&mut y, 0.5),
        pct(&mut y, 0.99)
    );
    // The page's widest span is 90 days; a year is every row the store has.
    for span_days in [90, 365] {
        let (mut f, f_before, f_after) = page_api(&sessionpipe, &fresh, span_days, samples);
        let (mut y, y_before, y_after) = page_api(&sessionpipe, &year, span_days, samples);
        println!(
            "the Usage page's API (days, top sessions, limits over {span_days} days, one round): fresh p50 {:.1} ms p99 {:.1} ms; year p50 {:.1} ms p99 {:.1} ms; daemon RSS fresh {:.1} -> {:.1} MB, year {:.1} -> {:.1} MB",
            pct(&mut f, 0.5),
            pct(&mut f, 0.99),
            pct(&mut y, 0.5),
            pct(&mut y, 0.99),
            f_before as f64 / 1024.0,
            f_after as f64 / 1024.0,
            y_before as f64 / 1024.0,
            y_after as f64 / 1024.0
        );
    }
    let rows = |state: &Path| -> (i64, i64) {
        let c = rusqlite::Connection::open(state.join("outbox.db")).unwrap();
        c.query_row(
            "SELECT (SELECT count(*) FROM usage), (SELECT count(*) FROM usage_quarters)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap()
    };
    let ((fr, fq), (yr, yq)) = (rows(&fresh), rows(&year));
    println!(
        "rows: fresh {fr} responses in {fq} quarter sums; year {yr} responses in {yq} quarter sums, {:.1} MiB on disk",
        sessionpipe_core::pipeline::outbox::size_on_disk(&year.join("outbox.db")) as f64
            / 1048576.0
    );
}
