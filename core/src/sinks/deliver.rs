//! Running the sinks: one thread per sink reads the outbox after its cursor,
//! filters each event to the sink's tier, sends batches, and moves the cursor only
//! when the sink took them. Every answer of the binding's error table has its
//! rule here: drop, pause, lower the tier, halve, wait, or back off (2 s, 10 s,
//! 60 s, 5 min, 30 min, then every 30 min, forever).
//!
//! A sink never loses an event to an outage: the cursor stays where it was, the
//! outbox keeps everything. Rowid order is seq order per session, so a batch
//! holds one session's events in seq order.

use super::http::{self, Answer};
use super::{Sink, SinkList, Target};
use crate::outbox::Outbox;
use crate::paths::StatePaths;
use crate::privacy::filter;
use crate::protocol::Envelope;
use crate::secrets::Secrets;
use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The backoff after network and server errors, then every 30 minutes forever.
const BACKOFF: [u64; 5] = [2, 10, 60, 300, 1800];
/// How long a sink waits for new events before looking again anyway.
const IDLE_WAIT: Duration = Duration::from_millis(500);
/// Discovery is read again at most this often.
const REDISCOVER_MS: i64 = 24 * 3600 * 1000;
/// How often a sink whose secrets cannot be read looks again.
const SECRET_RETRY: Duration = Duration::from_secs(15);

/// Rung by ingest after each commit, so sinks send without polling delay.
#[derive(Default)]
pub struct Notify {
    generation: Mutex<u64>,
    rung: Condvar,
}

impl Notify {
    pub fn ring(&self) {
        *self.generation.lock().unwrap_or_else(|p| p.into_inner()) += 1;
        self.rung.notify_all();
    }

    fn wait(&self, seen: u64, timeout: Duration) -> u64 {
        let g = self.generation.lock().unwrap_or_else(|p| p.into_inner());
        if *g != seen {
            return *g;
        }
        let (g, _) = self
            .rung
            .wait_timeout(g, timeout)
            .unwrap_or_else(|p| p.into_inner());
        *g
    }

    fn now(&self) -> u64 {
        *self.generation.lock().unwrap_or_else(|p| p.into_inner())
    }
}

struct Running {
    sink: Sink,
    stop: Arc<AtomicBool>,
    caught_up: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

/// Starts, restarts and stops sink threads as `sinks.json` changes.
pub struct Manager {
    paths: StatePaths,
    notify: Arc<Notify>,
    running: HashMap<String, Running>,
    with_stdout: bool,
}

impl Manager {
    /// `with_stdout`: run stdout sinks (a foreground daemon has a terminal; a
    /// drain worker does not, and leaves them for the daemon).
    pub fn new(paths: StatePaths, notify: Arc<Notify>, with_stdout: bool) -> Manager {
        Manager {
            paths,
            notify,
            running: HashMap::new(),
            with_stdout,
        }
    }

    /// Brings the threads in line with the sink list on disk.
    pub fn refresh(&mut self) {
        let list = match SinkList::load(&self.paths) {
            Ok(l) => l,
            Err(e) => {
                crate::log::warn(&e);
                return;
            }
        };
        let wanted: Vec<Sink> = list
            .sinks
            .into_iter()
            .filter(|s| self.with_stdout || s.target != Target::Stdout)
            .collect();
        // A sink's own thread writes its tier and last error back to the list;
        // only a change of where it sends (or a pause) restarts it.
        let stale: Vec<String> = self
            .running
            .iter()
            .filter(|(id, r)| {
                r.thread.is_finished()
                    || !wanted.iter().any(|w| {
                        &w.id == *id
                            && w.target == r.sink.target
                            && w.pii == r.sink.pii
                            && w.paused.is_none()
                    })
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in stale {
            if let Some(r) = self.running.remove(&id) {
                r.stop.store(true, Ordering::Relaxed);
                self.notify.ring();
                let _ = r.thread.join();
            }
        }
        for sink in wanted {
            if self.running.contains_key(&sink.id) || sink.paused.is_some() {
                continue;
            }
            let stop = Arc::new(AtomicBool::new(false));
            let caught_up = Arc::new(AtomicBool::new(false));
            let (paths, notify, s, st, cu) = (
                self.paths.clone(),
                self.notify.clone(),
                sink.clone(),
                stop.clone(),
                caught_up.clone(),
            );
            let thread = std::thread::Builder::new()
                .name(format!("sink-{}", sink.id))
                .spawn(move || run(paths, s, st, cu, notify))
                .expect("a sink thread starts");
            self.running.insert(
                sink.id.clone(),
                Running {
                    sink,
                    stop,
                    caught_up,
                    thread,
                },
            );
        }
    }

    /// True when every running sink has sent all it can (or waits out an error).
    pub fn settled(&self) -> bool {
        self.running
            .values()
            .all(|r| r.caught_up.load(Ordering::Relaxed))
    }

    pub fn stop(&mut self) {
        for (_, r) in self.running.drain() {
            r.stop.store(true, Ordering::Relaxed);
            self.notify.ring();
            let _ = r.thread.join();
        }
    }
}

/// One sink's loop, until stopped or paused.
fn run(
    paths: StatePaths,
    mut sink: Sink,
    stop: Arc<AtomicBool>,
    caught_up: Arc<AtomicBool>,
    notify: Arc<Notify>,
) {
    let Ok(mut ob) = Outbox::open_for_sink(&paths.outbox()) else {
        crate::log::warn(&format!("sink {}: cannot open the outbox", sink.id));
        return;
    };
    let secrets = Secrets::new(&paths.root);
    let token = secrets.get(&sink.token_key());
    let webhook = secrets.get(&sink.webhook_key());
    let client = http::client();
    let home = crate::paths::home_dir().map(|h| h.to_string_lossy().into_owned());
    let mut sender = Sender {
        client,
        token,
        webhook,
        max_events_cap: None,
        failures: 0,
    };
    let mut seen = notify.now();
    while !stop.load(Ordering::Relaxed) {
        rediscover(&paths, &mut sink);
        let cursor = ob.sink_cursor(&sink.id).unwrap_or(0);
        let rows = match ob.events_after(cursor, 2000) {
            Ok(r) => r,
            Err(e) => {
                crate::log::warn(&format!("sink {}: outbox: {e}", sink.id));
                pause_for(&stop, Duration::from_secs(1));
                continue;
            }
        };
        let batch = Batch::build(
            &rows,
            &sink,
            home.as_deref(),
            sender.max_events(&sink),
            max_bytes(&sink),
        );
        if rows.is_empty() {
            caught_up.store(true, Ordering::Relaxed);
            seen = notify.wait(seen, IDLE_WAIT);
            continue;
        }
        caught_up.store(false, Ordering::Relaxed);
        for dropped in &batch.dropped {
            crate::log::warn(&format!(
                "sink {}: dropped event {dropped}: larger than the receiver takes",
                sink.id
            ));
        }
        if batch.lines.is_empty() {
            let _ = ob.set_sink_cursor(&sink.id, batch.through);
            continue;
        }
        if let Err(why) = sender.load_secrets(&sink, &secrets) {
            record_error(&paths, &mut sink, &why);
            caught_up.store(true, Ordering::Relaxed);
            pause_for(&stop, SECRET_RETRY);
            continue;
        }
        match sender.send(&sink, &batch) {
            Step::Advance => {
                let _ = ob.set_sink_cursor(&sink.id, batch.through);
                sender.failures = 0;
                if sink.last_error.take().is_some() {
                    let _ = SinkList::update(&paths, &sink.id, |s| s.last_error = None);
                }
            }
            Step::Retry => {}
            Step::LowerTier(t) => {
                crate::log::warn(&format!(
                    "sink {}: the receiver takes tier {t} at most; lowering",
                    sink.id
                ));
                sink.tier = sink.tier.min(t);
                let tier = sink.tier;
                let _ = SinkList::update(&paths, &sink.id, |s| s.tier = tier);
            }
            Step::Wait(d, why) => {
                record_error(&paths, &mut sink, &why);
                caught_up.store(true, Ordering::Relaxed);
                pause_for(&stop, d);
            }
            Step::Pause(why) => {
                crate::log::warn(&format!("sink {} paused: {why}", sink.id));
                let _ = SinkList::update(&paths, &sink.id, |s| s.paused = Some(why.clone()));
                caught_up.store(true, Ordering::Relaxed);
                return;
            }
        }
    }
}

fn record_error(paths: &StatePaths, sink: &mut Sink, why: &str) {
    if sink.last_error.as_deref() != Some(why) {
        crate::log::warn(&format!("sink {}: {why}", sink.id));
        sink.last_error = Some(why.to_string());
        let _ = SinkList::update(paths, &sink.id, |s| s.last_error = Some(why.to_string()));
    }
}

/// Re-reads an HTTP receiver's discovery once a day.
fn rediscover(paths: &StatePaths, sink: &mut Sink) {
    let (Target::Http { url }, Some(d)) = (&sink.target, &sink.discovery) else {
        return;
    };
    if crate::time::now_ms() - d.read_at < REDISCOVER_MS {
        return;
    }
    if let Ok(fresh) = http::discover(url) {
        sink.tier = sink.tier.min(fresh.max_tier);
        sink.discovery = Some(fresh.clone());
        let tier = sink.tier;
        let _ = SinkList::update(paths, &sink.id, |s| {
            s.discovery = Some(fresh);
            s.tier = tier;
        });
    }
}

fn max_bytes(sink: &Sink) -> usize {
    sink.discovery.as_ref().map_or(usize::MAX, |d| d.max_bytes)
}

/// Sleeps `d` in small steps so a stop is seen soon.
fn pause_for(stop: &AtomicBool, d: Duration) {
    let until = Instant::now() + d;
    while Instant::now() < until && !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(100).min(until - Instant::now()));
    }
}

/// A batch ready to send, and how far the cursor may move once it is taken.
struct Batch {
    lines: Vec<String>,
    /// The rowid through which every row is in `lines`, filtered out, or dropped.
    through: i64,
    dropped: Vec<String>,
}

impl Batch {
    fn build(
        rows: &[crate::outbox::StoredEvent],
        sink: &Sink,
        home: Option<&str>,
        max_events: usize,
        max_bytes: usize,
    ) -> Batch {
        // `{"events":[` … `]}` and the commas between.
        let mut bytes = 13;
        let mut b = Batch {
            lines: Vec::new(),
            through: 0,
            dropped: Vec::new(),
        };
        for row in rows {
            let Some(line) = view(&row.envelope, sink, home) else {
                b.through = row.rowid; // not for this sink: passed over
                continue;
            };
            if 14 + line.len() > max_bytes {
                b.dropped.push(format!("rowid {}", row.rowid));
                b.through = row.rowid;
                continue;
            }
            if b.lines.len() == max_events || bytes + line.len() + 1 > max_bytes {
                break;
            }
            bytes += line.len() + 1;
            b.lines.push(line);
            b.through = row.rowid;
        }
        b
    }
}

/// The stored envelope as this sink may see it, serialised; `None` when not.
fn view(stored: &str, sink: &Sink, home: Option<&str>) -> Option<String> {
    let env: Envelope = serde_json::from_str(stored).ok()?;
    let capability = match env.kind.as_str() {
        "session.forgotten" => Some("forget"),
        "session.backfill" => Some("backfill"),
        _ => None,
    };
    if capability.is_some_and(|c| !sink.takes(c)) {
        return None;
    }
    let out = filter(&env, sink.tier, sink.pii, home)?;
    Some(serde_json::to_string(&out).expect("an envelope serialises"))
}

/// What the loop does after a send.
enum Step {
    Advance,
    Retry,
    LowerTier(u8),
    Wait(Duration, String),
    Pause(String),
}

struct Sender {
    client: reqwest::blocking::Client,
    token: Option<String>,
    webhook: Option<String>,
    /// Halved after a 413, for the rest of this thread's life.
    max_events_cap: Option<usize>,
    failures: usize,
}

impl Sender {
    /// Reads again a token or webhook secret the sink was added with and that
    /// could not be read before: a keychain unlocks some time after login.
    /// Sending without it would get the sink paused by a 401, or send unsigned.
    fn load_secrets(&mut self, sink: &Sink, secrets: &Secrets) -> Result<(), String> {
        if sink.has_token && self.token.is_none() {
            self.token = secrets.get(&sink.token_key());
        }
        if sink.has_webhook_secret && self.webhook.is_none() {
            self.webhook = secrets.get(&sink.webhook_key());
        }
        let missing = (sink.has_token && self.token.is_none())
            || (sink.has_webhook_secret && self.webhook.is_none());
        if missing {
            return Err("its secrets cannot be read (a locked keychain?); waiting".into());
        }
        Ok(())
    }

    fn max_events(&self, sink: &Sink) -> usize {
        let d = sink.discovery.as_ref().map_or(500, |d| d.max_events);
        self.max_events_cap.map_or(d, |c| c.min(d)).max(1)
    }

    fn send(&mut self, sink: &Sink, batch: &Batch) -> Step {
        match &sink.target {
            Target::Stdout => {
                let mut out = std::io::stdout().lock();
                let ok = batch
                    .lines
                    .iter()
                    .try_for_each(|l| writeln!(out, "{l}"))
                    .and_then(|_| out.flush());
                self.io_step(ok, "stdout")
            }
            Target::File { path } => {
                let ok = append_lines(std::path::Path::new(path), &batch.lines);
                self.io_step(ok, path)
            }
            Target::Http { .. } => {
                let url = sink
                    .discovery
                    .as_ref()
                    .map(|d| d.events.clone())
                    .unwrap_or_default();
                let body = http::batch_body(&batch.lines);
                match http::send(
                    &self.client,
                    &url,
                    self.token.as_deref(),
                    self.webhook.as_deref(),
                    body,
                ) {
                    Answer::Accepted { rejected, max_tier } => {
                        for (id, reason) in rejected {
                            crate::log::warn(&format!(
                                "sink {}: event {id} rejected: {reason}",
                                sink.id
                            ));
                        }
                        match max_tier {
                            Some(t) if t < sink.tier => Step::LowerTier(t),
                            _ => Step::Advance,
                        }
                    }
                    Answer::Malformed(why) => {
                        crate::log::warn(&format!(
                            "sink {}: a batch of {} was refused as malformed ({why}) and dropped",
                            sink.id,
                            batch.lines.len()
                        ));
                        Step::Advance
                    }
                    Answer::Unsupported => {
                        Step::Pause("the receiver does not speak protocol 1".into())
                    }
                    Answer::Unauthorized => Step::Pause(
                        "401: the token was refused (sink add again with a new token)".into(),
                    ),
                    Answer::TierAboveMax(t) => Step::LowerTier(t),
                    Answer::TooLarge if batch.lines.len() > 1 => {
                        self.max_events_cap = Some(batch.lines.len() / 2);
                        Step::Retry
                    }
                    Answer::TooLarge => {
                        crate::log::warn(&format!(
                            "sink {}: a single event was too large for the receiver and was dropped",
                            sink.id
                        ));
                        Step::Advance
                    }
                    Answer::RetryAfter(d) => {
                        Step::Wait(d, format!("429: waiting {}s", d.as_secs()))
                    }
                    Answer::Transient(why) => self.backoff(why),
                }
            }
        }
    }

    fn io_step(&mut self, ok: std::io::Result<()>, what: &str) -> Step {
        match ok {
            Ok(()) => Step::Advance,
            Err(e) => self.backoff(format!("{what}: {e}")),
        }
    }

    fn backoff(&mut self, why: String) -> Step {
        let secs = BACKOFF[self.failures.min(BACKOFF.len() - 1)];
        self.failures += 1;
        Step::Wait(
            Duration::from_secs(secs),
            format!("{why}; retrying in {secs}s"),
        )
    }
}

/// Appends lines to a JSONL file and syncs them before the cursor moves.
fn append_lines(path: &std::path::Path, lines: &[String]) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    let mut buf = String::with_capacity(lines.iter().map(|l| l.len() + 1).sum());
    for l in lines {
        buf.push_str(l);
        buf.push('\n');
    }
    f.write_all(buf.as_bytes())?;
    f.sync_data()
}
