//! Benchmark: a year of heavy use (issue 17). A synthetic but realistic
//! state dir, 20 000 sessions over 365 days and 3 million events (six
//! harnesses; tool calls with the inputs and outputs their hooks carry;
//! permission prompts, subagents, limits; a tier-2 transcript for a third of
//! the turns; a file sink that took everything and an HTTP sink paused six
//! weeks ago), and 1 GB of Claude Code and Codex transcripts over the last 30
//! days, measured against a fresh install (100 sessions, their transcripts)
//! in the same run:
//!
//! - the real daemon's start-up until its API answers, and its resident
//!   memory after (`/proc/PID/status`, 3 s after the API answered, and again
//!   after the API requests below);
//! - `GET /api/overview` (the board) and one session's
//!   `GET /api/sessions/{harness}/{id}/events` (the UI's 50; today's busiest
//!   and one of ten months ago), over loopback;
//! - `sessionpipe tail --no-follow -n 100`, the whole process and its peak
//!   memory;
//! - `sessionpipe status` and `status --json`, the whole process (a sink
//!   paused six weeks ago has 350 000 events to tally);
//! - `sessionpipe backfill --days 30 --json` into a new state dir, the whole
//!   process and its peak memory;
//! - one retention pass at the default 30 days (what the first pass after
//!   upgrading does to an outbox kept for a year, or a lowered
//!   `retention_days`): its batches as the daemon runs them (`prune_batch`
//!   of `retention::BATCH`, `retention::PAUSE` between) with an append every
//!   5 ms beside them as ingest makes, then the daemon's own compaction
//!   (`retention::compact`), a pass an hour on, and the compaction once the
//!   machine is quiet (no session for `retention::QUIET_FOR`).
//!
//! The year is generated once (a few minutes) through the outbox's own write
//! path into `$BENCH_YEAR_DIR` (default `target/bench-year`, beside the
//! binaries) and kept; each run adds the last 24 hours afresh (55 sessions,
//! some working now, two waiting on a prompt), relative to the run's clock, so
//! the board has today's sessions whenever it runs. Retention works on a copy.
//!
//! Usage: bench_year HOOK SESSIONPIPE [SAMPLES]. `BENCH_YEAR_SKIP` (a comma
//! list of `api`, `tail`, `status`, `backfill`, `retention`) leaves phases out.

#[path = "../common/mod.rs"]
mod common;
mod rng;
mod synth;
mod transcripts;

use common::Env;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sessionpipe_core::pipeline::outbox::{self, Outbox};
use sessionpipe_core::protocol;
use sessionpipe_core::retention;
use sessionpipe_core::sinks::SinkList;
use sessionpipe_core::spool::StatePaths;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use synth::{DAY_MS, End, Plan};

/// Bumped when what is generated changes: a cache of another version is
/// made again.
const GEN_VERSION: u32 = 1;
const YEAR_SESSIONS: usize = 20_000;
const YEAR_EVENTS: usize = 3_000_000;
/// Sessions of the last 24 hours (of the year's 20 000), made at each run.
const RECENT: usize = 55;
const TRANSCRIPT_BYTES: u64 = 1_000_000_000;
const FRESH_SESSIONS: usize = 100;
const FRESH_RECENT: usize = 10;

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Meta {
    version: u32,
    t0_ms: i64,
    scale: f64,
    sessions: usize,
    events: usize,
    outbox_bytes: u64,
    /// Each transcript (relative to the year's home) and its age at `t0_ms`.
    transcripts: Vec<(PathBuf, i64)>,
    transcript_bytes: u64,
    bytes_per_weight: f64,
    /// A session of ten months ago, for the timeline.
    old_session: (String, String),
    generated_s: f64,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn mib(b: u64) -> f64 {
    b as f64 / (1024.0 * 1024.0)
}

fn now_ms() -> i64 {
    protocol::time::now_ms()
}

fn say(what: &str) {
    eprintln!(
        "[bench_year {:>8.1}s] {what}",
        START.elapsed().as_secs_f64()
    );
}

static START: std::sync::LazyLock<Instant> = std::sync::LazyLock::new(Instant::now);

/// The history's plans: the year but its last day, with its stuck sessions.
fn history_plans(t0: i64, scale: f64) -> Vec<Plan> {
    let mut plans = synth::plans(
        1,
        YEAR_SESSIONS - RECENT,
        t0 - 364 * DAY_MS,
        t0 - DAY_MS,
        scale,
    );
    // A harness killed mid-turn or at a prompt, now and then over the year.
    let mut r = rng::Rng::new(5);
    for _ in 0..20 {
        let i = r.below(plans.len() as u64) as usize;
        plans[i].end = End::Working;
    }
    for _ in 0..6 {
        let i = r.below(plans.len() as u64) as usize;
        plans[i].end = End::NeedsYou;
    }
    synth::ending_before(plans, t0 - DAY_MS)
}

/// The tool-call scale that gives `target` events for `plans_at(scale)`.
fn tune(target: usize, plans_at: impl Fn(f64) -> Vec<Plan>) -> f64 {
    let mut scale = 1.0;
    for _ in 0..3 {
        let got = synth::count(&plans_at(scale)) as f64;
        // Tool events are about 80 % of all.
        scale *= 1.0 + (target as f64 / got - 1.0) / 0.8;
    }
    scale
}

fn generate(cache: &Path) -> Meta {
    let t = Instant::now();
    let year = cache.join("year");
    let _ = std::fs::remove_dir_all(&year);
    std::fs::create_dir_all(year.join("state")).unwrap();
    let t0 = now_ms() / 60_000 * 60_000;
    let history_target = YEAR_EVENTS - RECENT * (YEAR_EVENTS / YEAR_SESSIONS);
    say("tuning the plans");
    let scale = tune(history_target, |s| history_plans(t0, s));
    let plans = history_plans(t0, scale);
    let old = plans
        .iter()
        .filter(|p| p.start_ms < t0 - 300 * DAY_MS && p.harness == "claude-code")
        .max_by_key(|p| p.tools.iter().sum::<u32>())
        .map(|p| (p.harness.to_string(), p.id.clone()))
        .unwrap();
    say(&format!(
        "writing {} sessions (scale {scale:.2})",
        plans.len()
    ));
    let path = year.join("state/outbox.db");
    let mut ob = Outbox::open(&path).unwrap();
    let recent_days: Vec<Plan> = plans
        .iter()
        .filter(|p| matches!(p.harness, "claude-code" | "codex") && p.start_ms >= t0 - 30 * DAY_MS)
        .cloned()
        .collect();
    let events = synth::write(&mut ob, plans);
    ob.checkpoint().unwrap();
    assert_eq!(
        ob.schema_version().unwrap(),
        Outbox::open_readonly(&path)
            .unwrap()
            .unwrap()
            .schema_version()
            .unwrap()
    );
    drop(ob);
    say(&format!(
        "{events} events, {:.0} MiB; now the transcripts",
        mib(outbox::size_on_disk(&path))
    ));
    let home = year.join("home");
    let total: u64 = recent_days.iter().map(transcripts::weight).sum();
    let per_weight = TRANSCRIPT_BYTES as f64 / total as f64;
    let (files, bytes) = write_transcripts(&home, &recent_days, per_weight, t0);
    let meta = Meta {
        version: GEN_VERSION,
        t0_ms: t0,
        scale,
        sessions: YEAR_SESSIONS,
        events,
        outbox_bytes: outbox::size_on_disk(&path),
        transcripts: files,
        transcript_bytes: bytes,
        bytes_per_weight: per_weight,
        old_session: old,
        generated_s: t.elapsed().as_secs_f64(),
    };
    std::fs::write(
        cache.join("meta.json"),
        serde_json::to_string_pretty(&meta).unwrap(),
    )
    .unwrap();
    say(&format!(
        "generated in {:.0} s ({} transcripts, {:.0} MiB)",
        meta.generated_s,
        meta.transcripts.len(),
        mib(bytes)
    ));
    meta
}

/// The plans' transcripts under `home`, the budget kept on the whole as it
/// goes; each file with its age at `at`.
fn write_transcripts(
    home: &Path,
    plans: &[Plan],
    per_weight: f64,
    at: i64,
) -> (Vec<(PathBuf, i64)>, u64) {
    let (mut want, mut got) = (0f64, 0u64);
    let mut files = Vec::new();
    for p in plans {
        let share = transcripts::weight(p) as f64 * per_weight;
        // What the files so far fell short by (or went over) goes to this one.
        let budget = (share + (want - got as f64)).max(share * 0.25) as u64;
        want += share;
        let (bytes, last) = transcripts::write(home, p, budget);
        got += bytes;
        let rel = transcripts::path(home, p)
            .strip_prefix(home)
            .unwrap()
            .to_path_buf();
        files.push((rel, (at - last).max(0)));
    }
    (files, got)
}

/// The year, generated when the cache has none (or one of another version).
fn year(cache: &Path) -> Meta {
    let meta: Option<Meta> = std::fs::read(cache.join("meta.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .filter(|m: &Meta| m.version == GEN_VERSION && cache.join("year/state/outbox.db").exists());
    match meta {
        Some(m) => {
            say("the year is cached");
            m
        }
        None => {
            std::fs::create_dir_all(cache).unwrap();
            generate(cache)
        }
    }
}

/// Sessions of the last day: the stuck ones (working now, waiting on a
/// prompt) with their last event minutes ago, the rest over the day.
fn today(seed: u64, n: usize, now: i64, scale: f64, working: usize, waiting: usize) -> Vec<Plan> {
    let mut plans = synth::plans(seed, n, now - DAY_MS, now - 30 * 60_000, scale);
    let mut r = rng::Rng::new(seed + 1);
    for (i, p) in plans.iter_mut().rev().take(working + waiting).enumerate() {
        p.end = if i < working {
            End::Working
        } else {
            End::NeedsYou
        };
        let took = synth::play(p, false).last_ms() - p.start_ms;
        p.start_ms = now - took - r.range(30_000, 10 * 60_000);
    }
    synth::ending_before(plans, now - 60_000)
}

/// Replaces the last run's sessions of today with today's, and sets the
/// sinks' cursors and the settings.
fn refresh_today(state: &Path, plans: Vec<Plan>, now: i64) -> (String, String) {
    let listed = state.join("bench-today.json");
    let before: Vec<(String, String)> = std::fs::read(&listed)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    {
        let c = rusqlite::Connection::open(state.join("outbox.db")).unwrap();
        c.busy_timeout(Duration::from_secs(10)).unwrap();
        c.execute_batch("BEGIN").unwrap();
        for (h, id) in &before {
            c.execute(
                "DELETE FROM events WHERE harness = ?1 AND session = ?2",
                [h, id],
            )
            .unwrap();
            c.execute(
                "DELETE FROM sessions WHERE harness = ?1 AND session = ?2",
                [h, id],
            )
            .unwrap();
        }
        c.execute_batch("COMMIT").unwrap();
    }
    let now_list: Vec<(String, String)> = plans
        .iter()
        .map(|p| (p.harness.to_string(), p.id.clone()))
        .collect();
    // The busiest session of the day, for the timeline.
    let big = plans
        .iter()
        .max_by_key(|p| p.tools.iter().sum::<u32>())
        .map(|p| (p.harness.to_string(), p.id.clone()))
        .unwrap();
    let mut ob = Outbox::open(&state.join("outbox.db")).unwrap();
    synth::write(&mut ob, plans);
    synth::sinks(state, &mut ob, now);
    ob.checkpoint().unwrap();
    std::fs::write(&listed, serde_json::to_string(&now_list).unwrap()).unwrap();
    // Kept: the year stays whole (the benchmark's retention pass says what
    // the default would do).
    std::fs::write(
        state.join("config.json"),
        json!({"retention_days": 3650}).to_string(),
    )
    .unwrap();
    big
}

/// A state dir and what the benchmark reads in it.
struct Setup {
    name: String,
    env: Env,
    /// The home whose transcripts backfill reads.
    transcripts_home: PathBuf,
    transcript_bytes: u64,
    transcript_files: usize,
    timeline: Vec<(String, (String, String))>,
    sessions: i64,
    events: i64,
    outbox_bytes: u64,
}

fn setup(
    name: &str,
    env: Env,
    transcripts_home: PathBuf,
    bytes: u64,
    files: usize,
    timeline: Vec<(String, (String, String))>,
) -> Setup {
    let ob = Outbox::open_readonly(&env.state.join("outbox.db"))
        .unwrap()
        .unwrap();
    let c = ob.counts().unwrap();
    Setup {
        name: name.into(),
        outbox_bytes: outbox::size_on_disk(&env.state.join("outbox.db")),
        env,
        transcripts_home,
        transcript_bytes: bytes,
        transcript_files: files,
        timeline,
        sessions: c.sessions,
        events: c.events,
    }
}

/// A child ended when this is dropped (a panic included).
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn proc_kb(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with(field))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

fn get(url: &str, token: &str) -> Option<(u16, usize)> {
    let r = common::client().get(url).bearer_auth(token).send().ok()?;
    let status = r.status().as_u16();
    let body = r.bytes().ok()?;
    Some((status, body.len()))
}

/// Samples of `f` (ms) until `n` of them or `budget` spent, at least `min`.
fn sample(n: usize, min: usize, budget: Duration, mut f: impl FnMut() -> f64) -> Vec<f64> {
    let t = Instant::now();
    let mut v = Vec::new();
    while v.len() < n && (v.len() < min || t.elapsed() < budget) {
        v.push(f());
    }
    v
}

#[derive(Default)]
struct Results {
    rows: Vec<(String, String, String, Option<f64>)>,
}

impl Results {
    fn add(&mut self, what: &str, fresh: String, year: String) {
        self.push(what, fresh, year, None);
    }

    /// A row of samples (ms): p50 / p99, and the year's p50 over the fresh one's.
    fn add_ms(&mut self, what: &str, fresh: &mut [f64], year: &mut [f64]) {
        let ratio =
            (!fresh.is_empty() && !year.is_empty()).then(|| pct(year, 0.5) / pct(fresh, 0.5));
        self.push(what, p50_p99(fresh), p50_p99(year), ratio);
    }

    /// A row of one number each, and their ratio.
    fn add_ratio(&mut self, what: &str, fresh: String, year: String, ratio: f64) {
        self.push(what, fresh, year, Some(ratio));
    }

    /// Printed as it comes (a long run says what it has so far), and kept.
    fn push(&mut self, what: &str, fresh: String, year: String, ratio: Option<f64>) {
        let r = ratio.map_or(String::new(), |x| format!("{x:.2}"));
        println!("| {what} | {fresh} | {year} | {r} |");
        self.rows.push((what.into(), fresh, year, ratio));
    }
}

fn pct(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[((v.len() as f64 - 1.0) * q).round() as usize]
}

fn p50_p99(v: &mut [f64]) -> String {
    if v.is_empty() {
        return "n/a".into();
    }
    format!(
        "{} / {} ({})",
        fmt_ms(pct(v, 0.5)),
        fmt_ms(pct(v, 0.99)),
        v.len()
    )
}

fn fmt_ms(x: f64) -> String {
    if x >= 10_000.0 {
        format!("{:.1} s", x / 1000.0)
    } else if x >= 100.0 {
        format!("{x:.0} ms")
    } else {
        format!("{x:.1} ms")
    }
}

/// What the daemon phase measured.
#[derive(Default)]
struct DaemonRun {
    start: Vec<f64>,
    rss_kb: Vec<f64>,
    rss_after_api_kb: f64,
    overview: Vec<f64>,
    overview_bytes: usize,
    timelines: Vec<(String, Vec<f64>, usize)>,
}

fn daemon_phase(s: &Setup, starts: usize, samples: usize) -> DaemonRun {
    let mut run = DaemonRun::default();
    let ui = s.env.state.join("ui.json");
    for i in 0..starts {
        let _ = std::fs::remove_file(&ui);
        let t = Instant::now();
        let child = Killed(
            s.env
                .command(&s.env.sessionpipe)
                .arg("daemon")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        let pid = child.0.id();
        let (url, token) = loop {
            assert!(
                t.elapsed() < Duration::from_secs(120),
                "the daemon never answered"
            );
            let addr = std::fs::read(&ui)
                .ok()
                .and_then(|b| serde_json::from_slice::<Value>(&b).ok());
            if let Some(a) = addr {
                let url = a["url"].as_str().unwrap_or_default().to_string();
                let token = a["token"].as_str().unwrap_or_default().to_string();
                if get(&format!("{url}/api/settings"), &token).is_some_and(|(s, _)| s == 200) {
                    break (url, token);
                }
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        run.start.push(ms(t.elapsed()));
        std::thread::sleep(Duration::from_secs(3));
        run.rss_kb.push(proc_kb(pid, "VmRSS:").unwrap_or(0) as f64);
        if i + 1 == starts {
            let overview = format!("{url}/api/overview");
            run.overview = sample(samples, 5, Duration::from_secs(60), || {
                let t = Instant::now();
                let (status, bytes) = get(&overview, &token).unwrap();
                assert_eq!(status, 200);
                run.overview_bytes = bytes;
                ms(t.elapsed())
            });
            for (what, (h, id)) in &s.timeline {
                let u = format!("{url}/api/sessions/{h}/{id}/events?limit=50");
                let mut bytes = 0;
                let v = sample(samples, 5, Duration::from_secs(30), || {
                    let t = Instant::now();
                    let (status, b) = get(&u, &token).unwrap();
                    assert_eq!(status, 200);
                    bytes = b;
                    ms(t.elapsed())
                });
                run.timelines.push((what.clone(), v, bytes));
            }
            run.rss_after_api_kb = proc_kb(pid, "VmRSS:").unwrap_or(0) as f64;
        }
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status();
        let mut child = child;
        let _ = child.0.wait();
    }
    run
}

/// Runs `cmd` to its end: its time (ms), its peak RSS (kB, VmHWM read every
/// 5 ms) and its stdout.
fn measured(mut cmd: std::process::Command) -> (f64, f64, Vec<u8>, bool) {
    let t = Instant::now();
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        stdout.read_to_end(&mut out).unwrap();
        out
    });
    let mut peak = 0;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if let Some(kb) = proc_kb(pid, "VmHWM:") {
            peak = peak.max(kb);
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let took = ms(t.elapsed());
    (took, peak as f64, reader.join().unwrap(), status.success())
}

struct TailRun {
    ms: Vec<f64>,
    peak_kb: Vec<f64>,
    lines: usize,
}

fn tail_phase(s: &Setup, samples: usize) -> TailRun {
    let mut run = TailRun {
        ms: Vec::new(),
        peak_kb: Vec::new(),
        lines: 0,
    };
    let t = Instant::now();
    while run.ms.len() < samples && (run.ms.is_empty() || t.elapsed() < Duration::from_secs(60)) {
        let mut cmd = s.env.command(&s.env.sessionpipe);
        cmd.args(["tail", "--no-follow", "-n", "100"]);
        let (took, peak, out, ok) = measured(cmd);
        assert!(ok, "tail failed");
        run.ms.push(took);
        run.peak_kb.push(peak);
        run.lines = out.iter().filter(|&&b| b == b'\n').count();
    }
    run
}

/// `sessionpipe status` (and `--json`), the whole process: the outbox's
/// counts and each sink's tally.
fn status_phase(s: &Setup, samples: usize, json: bool) -> Vec<f64> {
    let mut ms = Vec::new();
    let t = Instant::now();
    while ms.len() < samples && (ms.is_empty() || t.elapsed() < Duration::from_secs(60)) {
        let mut cmd = s.env.command(&s.env.sessionpipe);
        cmd.arg("status");
        if json {
            cmd.arg("--json");
        }
        let (took, _, _, ok) = measured(cmd);
        assert!(ok, "status failed");
        ms.push(took);
    }
    ms
}

struct BackfillRun {
    ms: Vec<f64>,
    peak_kb: Vec<f64>,
    added: u64,
}

fn backfill_phase(s: &Setup, work: &Path, runs: usize) -> BackfillRun {
    let mut out = BackfillRun {
        ms: Vec::new(),
        peak_kb: Vec::new(),
        added: 0,
    };
    for i in 0..runs {
        let state = work.join(format!("backfill-{}-{i}", s.name));
        let _ = std::fs::remove_dir_all(&state);
        let env = Env {
            hook: s.env.hook.clone(),
            sessionpipe: s.env.sessionpipe.clone(),
            home: s.transcripts_home.clone(),
            state: state.clone(),
            project: s.transcripts_home.clone(),
        };
        let mut cmd = env.command(&env.sessionpipe);
        cmd.args(["backfill", "--days", "30", "--json"]);
        let (took, peak, stdout, ok) = measured(cmd);
        assert!(ok, "backfill failed");
        out.ms.push(took);
        out.peak_kb.push(peak);
        let report: Value = serde_json::from_slice(&stdout).unwrap_or(Value::Null);
        out.added = report
            .as_array()
            .map(|a| a.iter().filter_map(|c| c["added"].as_u64()).sum())
            .unwrap_or(0);
        let _ = std::fs::remove_dir_all(&state);
    }
    out
}

struct RetentionRun {
    deleted: usize,
    batches: Vec<f64>,
    pass_s: f64,
    compact: retention::Pass,
    compact_s: f64,
    next: Vec<f64>,
    next_deleted: usize,
    appends_alone: Vec<f64>,
    appends_during: Vec<f64>,
    /// Then the same once the machine is quiet (`retention::QUIET_FOR` on).
    quiet: retention::Pass,
    quiet_s: f64,
    appends_quiet: Vec<f64>,
    before: u64,
    after: u64,
}

/// Appends an event every 5 ms as ingest does (its own transaction,
/// synchronous=FULL) until `stop`; each append's time in ms.
fn appender(path: &Path, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Vec<f64>> {
    use sessionpipe_core::pipeline::session::{Stamp, envelope};
    use sessionpipe_core::protocol::{EventData, SessionBlock, ToolStarted};
    let path = path.to_path_buf();
    std::thread::spawn(move || {
        let mut ob = Outbox::open(&path).unwrap();
        let block = SessionBlock {
            cwd: Some("/home/ann/src/sessionpipe".into()),
            ..Default::default()
        };
        let mut v = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            let stamp = Stamp {
                harness: "claude-code",
                harness_event: Some("PreToolUse"),
                version: Some("2.1.332"),
                session_id: "00000000-0000-4000-8000-00000000beef",
                block: &block,
                time_ms: now_ms(),
            };
            let mut env = envelope(
                &stamp,
                0,
                EventData::ToolStarted(ToolStarted {
                    tool: "Bash".into(),
                    input: Some(json!({"command": "cargo test", "description": "x".repeat(400)})),
                    ..Default::default()
                }),
            );
            let t = Instant::now();
            // An append that waited out its 10 s for the write lock and
            // gave up counts with the time it waited (and is said).
            if let Err(e) = ob.append(&mut env) {
                say(&format!(
                    "an append failed after {:.0} ms: {e}",
                    ms(t.elapsed())
                ));
            }
            v.push(ms(t.elapsed()));
            std::thread::sleep(Duration::from_millis(5));
        }
        v
    })
}

/// The batches of a pass at `now`, as `retention::pass` runs them: each
/// one's time (ms) and the events deleted.
fn prune(ob: &mut Outbox, sinks: &SinkList, now: i64) -> (Vec<f64>, usize) {
    let mut batches = Vec::new();
    let mut deleted = 0;
    loop {
        let t = Instant::now();
        let taken = retention::taken_by_all(ob, sinks).unwrap();
        let step = ob
            .prune_batch(taken, retention::cutoff_ms(now, 30), now, retention::BATCH)
            .unwrap();
        let took = ms(t.elapsed());
        if took > 1000.0 {
            say(&format!(
                "a prune batch took {took:.0} ms (batch {}, {deleted} deleted before it)",
                batches.len()
            ));
        }
        batches.push(took);
        deleted += step.deleted;
        if batches.len() % 1000 == 0 {
            say(&format!(
                "{} batches, {deleted} deleted, p50 {:.1} ms",
                batches.len(),
                common::p50(&batches)
            ));
        }
        if !step.more {
            return (batches, deleted);
        }
        std::thread::sleep(retention::PAUSE);
    }
}

fn retention_phase(s: &Setup, work: &Path) -> RetentionRun {
    let dir = work.join(format!("retention-{}", s.name));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for f in ["outbox.db", "sinks.json"] {
        std::fs::copy(s.env.state.join(f), dir.join(f)).unwrap();
    }
    let paths = StatePaths::new(&dir);
    let path = paths.outbox();
    let before = outbox::size_on_disk(&path);
    let mut ob = Outbox::open_for_retention(&path).unwrap();
    let sinks = SinkList::load(&paths).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let alone = appender(&path, stop.clone());
    std::thread::sleep(Duration::from_secs(2));
    stop.store(true, Ordering::Relaxed);
    let appends_alone = alone.join().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let beside = appender(&path, stop.clone());
    let now = now_ms();
    let pass = Instant::now();
    let (batches, deleted) = prune(&mut ob, &sinks, now);
    let pass_s = pass.elapsed().as_secs_f64();
    // Then the daemon's own compaction, as the pass ends it.
    let shared: retention::Shared = Arc::new(std::sync::Mutex::new(ob));
    let mut compact = retention::Pass::default();
    let t = Instant::now();
    sessionpipe_core::runtime::block_on(retention::compact(&paths, &shared, &mut compact)).unwrap();
    let compact_s = t.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let appends_during = beside.join().unwrap();
    // The next pass, an hour on: what a pass costs from then on.
    let mut ob = shared.lock().unwrap();
    let (next, next_deleted) = prune(&mut ob, &sinks, now + 3_600_000);
    drop(ob);
    // Then the machine goes quiet: no session for `QUIET_FOR` after the last
    // one did anything (today's working sessions run a little ahead of the
    // generator's clock), as retention's clock says (the test-only setting,
    // read by `retention::now_ms`).
    let last = shared
        .lock()
        .unwrap()
        .last_activity_ms()
        .unwrap()
        .unwrap_or(0);
    let quiet_at = now_ms().max(last) + retention::QUIET_FOR.as_millis() as i64 + 60_000;
    // SAFETY: no other thread of this process reads or writes the
    // environment now (the appender is started after).
    unsafe { std::env::set_var(retention::NOW_VAR, quiet_at.to_string()) };
    let stop = Arc::new(AtomicBool::new(false));
    let beside = appender(&path, stop.clone());
    let mut quiet = retention::Pass::default();
    let t = Instant::now();
    sessionpipe_core::runtime::block_on(retention::compact(&paths, &shared, &mut quiet)).unwrap();
    let quiet_s = t.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let appends_quiet = beside.join().unwrap();
    // SAFETY: as above; the appender has ended.
    unsafe { std::env::remove_var(retention::NOW_VAR) };
    shared.lock().unwrap().checkpoint().unwrap();
    drop(shared);
    let after = outbox::size_on_disk(&path);
    let _ = std::fs::remove_dir_all(&dir);
    RetentionRun {
        deleted,
        batches,
        pass_s,
        compact,
        compact_s,
        next,
        next_deleted,
        appends_alone,
        appends_during,
        quiet,
        quiet_s,
        appends_quiet,
        before,
        after,
    }
}

fn main() {
    let _ = *START;
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: bench_year HOOK SESSIONPIPE [SAMPLES]";
    let hook = PathBuf::from(args.get(1).expect(usage));
    let sessionpipe = std::fs::canonicalize(args.get(2).expect(usage)).expect("SESSIONPIPE exists");
    let samples: usize = args.get(3).and_then(|n| n.parse().ok()).unwrap_or(100);
    let skip = std::env::var("BENCH_YEAR_SKIP").unwrap_or_default();
    let skips = |phase: &str| skip.split(',').any(|s| s.trim() == phase);
    let cache = std::env::var_os("BENCH_YEAR_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| sessionpipe.parent().unwrap().join("../bench-year"));
    let meta = year(&cache);
    let now = now_ms();

    // The year, with today's sessions made now.
    let year_state = cache.join("year/state");
    let big = refresh_today(&year_state, today(2, RECENT, now, meta.scale, 3, 2), now);
    let year_home = cache.join("year/home");
    let files: Vec<(PathBuf, i64)> = meta
        .transcripts
        .iter()
        .map(|(rel, age)| (year_home.join(rel), *age))
        .collect();
    transcripts::touch(&files, now, 29 * DAY_MS + DAY_MS / 2);
    let daemon_home = cache.join("year/daemon-home");
    std::fs::create_dir_all(&daemon_home).unwrap();
    let year = setup(
        "year",
        Env {
            hook: hook.clone(),
            sessionpipe: sessionpipe.clone(),
            home: daemon_home.clone(),
            state: year_state.clone(),
            project: daemon_home.clone(),
        },
        year_home,
        meta.transcript_bytes,
        files.len(),
        vec![
            ("today's busiest session".into(), big),
            (
                "a session of ten months ago".into(),
                meta.old_session.clone(),
            ),
        ],
    );

    // A fresh install: 100 sessions over the last 60 days, today's among them.
    let work = tempfile::tempdir_in(&cache).unwrap();
    let fresh_state = work.path().join("fresh/state");
    std::fs::create_dir_all(&fresh_state).unwrap();
    let mut fresh_plans = synth::plans(
        3,
        FRESH_SESSIONS - FRESH_RECENT,
        now - 60 * DAY_MS,
        now - DAY_MS,
        meta.scale,
    );
    fresh_plans = synth::ending_before(fresh_plans, now - DAY_MS);
    let old_fresh = fresh_plans
        .iter()
        .filter(|p| p.start_ms < now - 40 * DAY_MS)
        .max_by_key(|p| p.tools.iter().sum::<u32>())
        .map(|p| (p.harness.to_string(), p.id.clone()))
        .unwrap();
    let fresh_recent_days: Vec<Plan> = fresh_plans
        .iter()
        .filter(|p| matches!(p.harness, "claude-code" | "codex") && p.start_ms >= now - 30 * DAY_MS)
        .cloned()
        .collect();
    {
        let mut ob = Outbox::open(&fresh_state.join("outbox.db")).unwrap();
        synth::write(&mut ob, fresh_plans);
    }
    let fresh_big = refresh_today(
        &fresh_state,
        today(4, FRESH_RECENT, now, meta.scale, 1, 1),
        now,
    );
    let fresh_home = work.path().join("fresh/home");
    let (fresh_files, fresh_bytes) =
        write_transcripts(&fresh_home, &fresh_recent_days, meta.bytes_per_weight, now);
    let fresh_files: Vec<(PathBuf, i64)> = fresh_files
        .into_iter()
        .map(|(rel, age)| (fresh_home.join(rel), age))
        .collect();
    transcripts::touch(&fresh_files, now, 29 * DAY_MS + DAY_MS / 2);
    let fresh_daemon_home = work.path().join("fresh/daemon-home");
    std::fs::create_dir_all(&fresh_daemon_home).unwrap();
    let fresh = setup(
        "fresh",
        Env {
            hook: hook.clone(),
            sessionpipe: sessionpipe.clone(),
            home: fresh_daemon_home.clone(),
            state: fresh_state.clone(),
            project: fresh_daemon_home,
        },
        fresh_home,
        fresh_bytes,
        fresh_files.len(),
        vec![
            ("today's busiest session".into(), fresh_big),
            ("a session of ten months ago".into(), old_fresh),
        ],
    );
    say("ready");

    println!(
        "A year: {} sessions, {} events, {:.0} MiB outbox; {} transcripts, {:.0} MiB (generated once in {:.0} s, not counted). A fresh install: {} sessions, {} events, {:.1} MiB; {} transcripts, {:.1} MiB.",
        year.sessions,
        year.events,
        mib(year.outbox_bytes),
        year.transcript_files,
        mib(year.transcript_bytes),
        meta.generated_s,
        fresh.sessions,
        fresh.events,
        mib(fresh.outbox_bytes),
        fresh.transcript_files,
        mib(fresh.transcript_bytes),
    );
    println!();
    println!("| | fresh install | a year | year / fresh |");
    println!("|---|---:|---:|---:|");
    let mut r = Results::default();
    if !skips("api") {
        say("daemon and API");
        let mut d: Vec<DaemonRun> = [&fresh, &year]
            .iter()
            .map(|s| daemon_phase(s, 5, samples))
            .collect();
        let (a, b) = d.split_at_mut(1);
        let (f, y) = (&mut a[0], &mut b[0]);
        r.add_ms(
            "daemon start-up until the API answers, p50 / p99 (runs)",
            &mut f.start,
            &mut y.start,
        );
        let rss = |v: &mut [f64]| format!("{:.1} MB", pct(v, 0.5) / 1024.0);
        let ratio = pct(&mut y.rss_kb, 0.5) / pct(&mut f.rss_kb, 0.5);
        r.add_ratio(
            "daemon RSS 3 s after start (p50 of the starts)",
            rss(&mut f.rss_kb),
            rss(&mut y.rss_kb),
            ratio,
        );
        r.add_ms(
            "`GET /api/overview`, p50 / p99 (samples)",
            &mut f.overview,
            &mut y.overview,
        );
        r.add(
            "its body",
            format!("{:.1} KB", f.overview_bytes as f64 / 1000.0),
            format!("{:.1} KB", y.overview_bytes as f64 / 1000.0),
        );
        for i in 0..f.timelines.len() {
            let what = format!(
                "`GET /api/sessions/…/events?limit=50`, {}, p50 / p99",
                f.timelines[i].0
            );
            r.add_ms(&what, &mut f.timelines[i].1, &mut y.timelines[i].1);
        }
        r.add_ratio(
            "daemon RSS after those requests",
            format!("{:.1} MB", f.rss_after_api_kb / 1024.0),
            format!("{:.1} MB", y.rss_after_api_kb / 1024.0),
            y.rss_after_api_kb / f.rss_after_api_kb,
        );
    }
    if !skips("tail") {
        say("tail");
        let mut f = tail_phase(&fresh, samples.min(30));
        let mut y = tail_phase(&year, samples.min(30));
        r.add_ms(
            "`sessionpipe tail --no-follow -n 100`, whole process, p50 / p99 (runs)",
            &mut f.ms,
            &mut y.ms,
        );
        let ratio = pct(&mut y.peak_kb, 0.5) / pct(&mut f.peak_kb, 0.5);
        r.add_ratio(
            "its peak RSS (VmHWM), p50; lines it printed",
            format!("{:.1} MB; {}", pct(&mut f.peak_kb, 0.5) / 1024.0, f.lines),
            format!("{:.1} MB; {}", pct(&mut y.peak_kb, 0.5) / 1024.0, y.lines),
            ratio,
        );
    }
    if !skips("status") {
        say("status");
        for json in [false, true] {
            let mut f = status_phase(&fresh, samples.min(30), json);
            let mut y = status_phase(&year, samples.min(30), json);
            r.add_ms(
                &format!(
                    "`sessionpipe status{}`, whole process, p50 / p99 (runs)",
                    if json { " --json" } else { "" }
                ),
                &mut f,
                &mut y,
            );
        }
    }
    if !skips("backfill") {
        say("backfill");
        let mut f = backfill_phase(&fresh, work.path(), 3);
        let mut y = backfill_phase(&year, work.path(), 3);
        r.add_ms(
            "`sessionpipe backfill --days 30 --json`, whole process, p50 / p99 (runs)",
            &mut f.ms,
            &mut y.ms,
        );
        let ratio = pct(&mut y.peak_kb, 0.5) / pct(&mut f.peak_kb, 0.5);
        r.add_ratio(
            "its peak RSS (VmHWM), p50",
            format!("{:.1} MB", pct(&mut f.peak_kb, 0.5) / 1024.0),
            format!("{:.1} MB", pct(&mut y.peak_kb, 0.5) / 1024.0),
            ratio,
        );
        r.add(
            "transcripts read / sessions added",
            format!("{:.0} MiB / {}", mib(fresh.transcript_bytes), f.added),
            format!("{:.0} MiB / {}", mib(year.transcript_bytes), y.added),
        );
    }
    if !skips("retention") {
        say("retention");
        let mut runs: Vec<RetentionRun> = [&fresh, &year]
            .iter()
            .map(|s| retention_phase(s, work.path()))
            .collect();
        let (a, b) = runs.split_at_mut(1);
        let (f, y) = (&mut a[0], &mut b[0]);
        r.add(
            "retention pass at 30 days: events pruned",
            f.deleted.to_string(),
            y.deleted.to_string(),
        );
        r.add_ms(
            "a prune batch (one write transaction), p50 / p99 (batches)",
            &mut f.batches,
            &mut y.batches,
        );
        r.add_ratio(
            "the pass, pauses included",
            format!("{:.1} s", f.pass_s),
            format!("{:.1} s", y.pass_s),
            y.pass_s / f.pass_s,
        );
        let how = |p: &retention::Pass, secs: f64| {
            format!(
                "{:.0} MiB in {secs:.1} s{}",
                mib(p.freed_bytes as u64),
                if p.vacuumed {
                    " (one VACUUM)"
                } else if p.freed_bytes == 0 {
                    " (free pages kept for new events)"
                } else {
                    " (incremental steps)"
                }
            )
        };
        r.add(
            "then the compaction: given back",
            how(&f.compact, f.compact_s),
            how(&y.compact, y.compact_s),
        );
        r.add_ms(
            &format!(
                "the next pass, an hour on ({} / {} events): a batch, p50 / p99",
                f.next_deleted, y.next_deleted
            ),
            &mut f.next,
            &mut y.next,
        );
        r.add_ms(
            "an append, alone, p50 / p99",
            &mut f.appends_alone,
            &mut y.appends_alone,
        );
        r.add_ms(
            "an append during the pass, p50 / p99",
            &mut f.appends_during,
            &mut y.appends_during,
        );
        r.add(
            "once quiet (no session for 30 min): given back",
            how(&f.quiet, f.quiet_s),
            how(&y.quiet, y.quiet_s),
        );
        r.add_ms(
            "an append during that, p50 / p99",
            &mut f.appends_quiet,
            &mut y.appends_quiet,
        );
        r.add(
            "outbox on disk before / after",
            format!("{:.1} / {:.1} MiB", mib(f.before), mib(f.after)),
            format!("{:.0} / {:.0} MiB", mib(y.before), mib(y.after)),
        );
    }
    say(&format!("done: {} rows", r.rows.len()));
}
