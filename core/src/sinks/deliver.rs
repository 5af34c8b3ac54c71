//! Running the sinks, on the daemon's runtime: one task per sink reads the
//! outbox after its cursor, filters each event to the sink's tier, sends batches,
//! and moves the cursor only when the sink took them. Every answer of the
//! binding's error table has its rule here: drop, pause, lower the tier, halve,
//! wait, or back off (the binding's 2 s, 10 s, 60 s, 5 min, 30 min, then every
//! 30 min forever, each step jittered below its bound so machines that lost the
//! same receiver do not come back in step).
//!
//! A sink never loses an event to an outage: the cursor stays where it was, the
//! outbox keeps everything. Rowid order is seq order per session, so a batch
//! holds one session's events in seq order. An HTTP sink has up to three
//! batches on the wire while its receiver takes them (they may arrive in any
//! order, as the binding allows); their answers are taken in order, and after
//! any answer but a batch taken it sends one at a time until one is taken. SQLite and file writes go through
//! the runtime's blocking pool; only the network is awaited in place.

use super::http::{self, BatchVerdict};
use super::jsonl::Appender;
use super::{Sink, SinkList, Target};
use crate::pipeline::outbox::{Outbox, StoredEvent};
use crate::pipeline::privacy::filter_owned;
use crate::runtime::blocking;
use crate::state::secrets::Secrets;
use protocol::Envelope;
use spool::StatePaths;
use std::collections::{HashMap, VecDeque};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// The binding's backoff after network and server errors; the last step repeats.
const BACKOFF_S: [u64; 5] = [2, 10, 60, 300, 1800];
/// How long a sink waits for new events before looking again anyway.
const IDLE_WAIT: Duration = Duration::from_millis(500);
/// Discovery is read again at most this often.
const REDISCOVER_MS: i64 = 24 * 3600 * 1000;
/// How often a sink whose secrets cannot be read looks again.
const SECRET_RETRY: Duration = Duration::from_secs(15);
/// Rows read from the outbox per look.
const READ_ROWS: usize = 2000;
/// An HTTP sink's batches on the wire at once while its receiver takes them:
/// one being stored, one being read, one crossing (a receiver with one
/// writer, as SQLite's, always has the next batch ready).
const IN_FLIGHT: usize = 3;

/// Rung by ingest after each commit that appended events, so sinks send without
/// waiting out `IDLE_WAIT`. A generation counter: a ring between a sink's read
/// and its wait is never lost.
#[derive(Clone)]
pub struct Ring {
    tx: Arc<watch::Sender<u64>>,
}

impl Default for Ring {
    fn default() -> Self {
        Ring {
            tx: Arc::new(watch::channel(0).0),
        }
    }
}

impl Ring {
    /// Callable from any thread (ingest runs on a blocking one).
    pub fn ring(&self) {
        self.tx.send_modify(|g| *g = g.wrapping_add(1));
    }

    fn subscribe(&self) -> watch::Receiver<u64> {
        self.tx.subscribe()
    }
}

/// Whether a sink's task has sent all it can (or waits out an error).
#[derive(Default)]
struct Flags {
    stop: AtomicBool,
    caught_up: AtomicBool,
}

struct Running {
    sink: Sink,
    flags: Arc<Flags>,
    task: JoinHandle<()>,
}

/// Starts, restarts and stops sink tasks as `sinks.json` changes.
pub struct Manager {
    paths: StatePaths,
    ring: Ring,
    running: HashMap<String, Running>,
    with_stdout: bool,
}

impl Manager {
    /// `with_stdout`: run stdout sinks (a foreground daemon has a terminal; a
    /// drain worker does not, and leaves them for the daemon).
    pub fn new(paths: StatePaths, ring: Ring, with_stdout: bool) -> Manager {
        Manager {
            paths,
            ring,
            running: HashMap::new(),
            with_stdout,
        }
    }

    /// Brings the tasks in line with the sink list on disk.
    pub async fn refresh(&mut self) {
        let paths = self.paths.clone();
        let list = match blocking(move || SinkList::load(&paths)).await {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!("{e}");
                return;
            }
        };
        let wanted: Vec<Sink> = list
            .sinks
            .into_iter()
            .filter(|s| self.with_stdout || s.target != Target::Stdout)
            .collect();
        // A sink's own task writes its tier and last error back to the list;
        // only a change of where it sends (or a pause) restarts it.
        let stale: Vec<String> = self
            .running
            .iter()
            .filter(|(id, r)| {
                r.task.is_finished()
                    || !wanted.iter().any(|w| {
                        &w.id == *id
                            && w.target == r.sink.target
                            && w.pii == r.sink.pii
                            && w.secrets_at == r.sink.secrets_at
                            // A new replay asked: the task starts over on it
                            // (one it already took is cleared by the task).
                            && (w.replay_from.is_none() || w.replay_from == r.sink.replay_from)
                            && w.paused.is_none()
                    })
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in stale {
            if let Some(r) = self.running.remove(&id) {
                r.flags.stop.store(true, Ordering::Relaxed);
                self.ring.ring();
                stop(r, tokio::time::Instant::now() + STOP_GRACE).await;
            }
        }
        for sink in wanted {
            if self.running.contains_key(&sink.id) || sink.paused.is_some() {
                continue;
            }
            let flags = Arc::new(Flags::default());
            let task = tokio::spawn(run(
                self.paths.clone(),
                sink.clone(),
                flags.clone(),
                self.ring.subscribe(),
            ));
            self.running
                .insert(sink.id.clone(), Running { sink, flags, task });
        }
    }

    /// True when every running sink has sent all it can (or waits out an error).
    pub fn settled(&self) -> bool {
        self.running
            .values()
            .all(|r| r.flags.caught_up.load(Ordering::Relaxed) || r.task.is_finished())
    }

    pub async fn stop(&mut self) {
        let running: Vec<Running> = self.running.drain().map(|(_, r)| r).collect();
        for r in &running {
            r.flags.stop.store(true, Ordering::Relaxed);
        }
        self.ring.ring();
        // One grace for them all: a stop is bounded however many sinks there are.
        let deadline = tokio::time::Instant::now() + STOP_GRACE;
        for r in running {
            stop(r, deadline).await;
        }
    }
}

/// How long stopping sinks may take to finish the step they are in.
const STOP_GRACE: Duration = Duration::from_millis(300);

/// Stops a sink's task: at its next step, or at `deadline` when it is in the
/// middle of one (a send, a wait out of an error). A batch cut off in flight is
/// sent again later, and receivers dedup.
async fn stop(mut r: Running, deadline: tokio::time::Instant) {
    r.flags.stop.store(true, Ordering::Relaxed);
    if tokio::time::timeout_at(deadline, &mut r.task)
        .await
        .is_err()
    {
        r.task.abort();
        let _ = r.task.await;
    }
}

/// The sink's own connection to the outbox, moved into blocking steps.
type SharedOutbox = Arc<Mutex<Outbox>>;

fn lock(ob: &SharedOutbox) -> std::sync::MutexGuard<'_, Outbox> {
    ob.lock().unwrap_or_else(|p| p.into_inner())
}

/// One sink's loop, until stopped or paused.
async fn run(paths: StatePaths, mut sink: Sink, flags: Arc<Flags>, mut rung: watch::Receiver<u64>) {
    let outbox_path = paths.outbox();
    let ob = match blocking(move || Outbox::open_for_sink(&outbox_path)).await {
        Ok(ob) => Arc::new(Mutex::new(ob)),
        Err(e) => {
            tracing::warn!(sink = %sink.id, "cannot open the outbox: {e}");
            return;
        }
    };
    // A replay asked for: the cursor goes back before anything is read, and
    // the request is cleared (only if it is still this one).
    if let Some(from) = sink.replay_from.take() {
        let (o, id) = (ob.clone(), sink.id.clone());
        match blocking(move || lock(&o).rewind_sink_cursor(&id, from)).await {
            Ok(()) => {
                tracing::info!(sink = %sink.id, "sending again everything after event {from}");
                update(&paths, &sink.id, move |s| {
                    if s.replay_from == Some(from) {
                        s.replay_from = None;
                    }
                })
                .await;
            }
            Err(e) => {
                tracing::warn!(sink = %sink.id, "the replay did not start (asked again at the next start): {e}");
            }
        }
    }
    let secrets = Arc::new(Secrets::new(&paths.root));
    let (token, webhook) = {
        let (s, t, w) = (secrets.clone(), sink.token_key(), sink.webhook_key());
        blocking(move || (s.get(&t), s.get(&w))).await
    };
    let home = spool::paths::home_dir().map(|h| h.to_string_lossy().into_owned());
    let mut sender = Sender {
        client: http::client(),
        token,
        webhook,
        max_events_cap: None,
        failures: 0,
        file: Appender::default(),
    };
    rung.mark_unchanged();
    // Rows read ahead of the cursor, oldest first: a read takes up to
    // `READ_ROWS`, and batches are cut from them until they run out.
    let mut queue: VecDeque<StoredEvent> = VecDeque::new();
    let mut cursor = None::<i64>;
    // The cursor's last move, still being written while the next batch goes
    // out: at most one at a time, and always done before the sink reads the
    // outbox again or says it is caught up.
    let mut moving = Moving::default();
    // The batches after the one on its way, cut (and sent) meanwhile, oldest
    // first.
    let mut ahead: VecDeque<Ahead> = VecDeque::new();
    while !flags.stop.load(Ordering::Relaxed) {
        if let Some(why) = rediscover(&paths, &mut sink).await {
            moving.done(&sink.id).await;
            return pause(&paths, &sink, &flags, why).await;
        }
        if queue.is_empty() {
            moving.done(&sink.id).await;
            let (id, o) = (sink.id.clone(), ob.clone());
            let read = blocking(move || {
                let o = lock(&o);
                let from = match cursor {
                    Some(c) => c,
                    None => o.sink_cursor(&id)?,
                };
                o.events_after(from, READ_ROWS).map(|rows| (from, rows))
            })
            .await;
            match read {
                Ok((from, rows)) => {
                    cursor = Some(from);
                    queue.extend(rows);
                }
                Err(e) => {
                    tracing::warn!(sink = %sink.id, "{e}");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            }
        }
        if queue.is_empty() {
            flags.caught_up.store(true, Ordering::Relaxed);
            let _ = tokio::time::timeout(IDLE_WAIT, rung.changed()).await;
            continue;
        }
        flags.caught_up.store(false, Ordering::Relaxed);
        let cut = Cut::of(&sink, &sender, queue.front().map(|r| r.rowid));
        let (batch, sent) = match ahead.pop_front() {
            Some(next) if next.cut == cut => (next.batch, next.request),
            _ => {
                // Cut for what no longer holds: they go again, cut afresh.
                ahead.clear();
                (
                    Batch::build(
                        queue.make_contiguous(),
                        &sink,
                        home.as_deref(),
                        cut.max_events,
                        cut.max_bytes,
                    ),
                    None,
                )
            }
        };
        for dropped in &batch.dropped {
            tracing::warn!(sink = %sink.id, "dropped event {dropped}: larger than the receiver takes");
        }
        if batch.lines.is_empty() {
            moving.start(&ob, &sink.id, batch.through).await;
            advance(&mut queue, &mut cursor, batch.through);
            continue;
        }
        if let Err(why) = sender.load_secrets(&sink, &secrets).await {
            moving.done(&sink.id).await;
            record_error(&paths, &mut sink, why).await;
            flags.caught_up.store(true, Ordering::Relaxed);
            tokio::time::sleep(SECRET_RETRY).await;
            continue;
        }
        let step = match &sink.target {
            Target::Http { .. } => {
                // The request runs as its own task (the other worker may take
                // it) while this one cuts the next batches from the rows
                // after it: the receiver's turn and the next batch's JSON
                // overlap instead of taking turns. While the receiver takes
                // every batch, those go at once too (`IN_FLIGHT` requests at
                // a time), so the receiver reads one while it stores another
                // (the binding leaves the order of arrival free; the answers
                // are still taken in order, and the cursor moves only past
                // batches taken).
                let request = match sent {
                    Some(request) => request,
                    None => Request(tokio::spawn(sender.request(&sink, &batch))),
                };
                let mut last = ahead.back().map_or(batch.through, |a| a.batch.through);
                while ahead.len() + 1 < IN_FLIGHT {
                    let rows: &[StoredEvent] = queue.make_contiguous();
                    let rest = &rows[rows.partition_point(|r| r.rowid <= last)..];
                    if rest.is_empty() {
                        break;
                    }
                    let cut = Cut::of(&sink, &sender, rest.first().map(|r| r.rowid));
                    let built =
                        Batch::build(rest, &sink, home.as_deref(), cut.max_events, cut.max_bytes);
                    let request = (sender.failures == 0 && !built.lines.is_empty())
                        .then(|| Request(tokio::spawn(sender.request(&sink, &built))));
                    last = built.through;
                    ahead.push_back(Ahead {
                        cut,
                        batch: built,
                        request,
                    });
                }
                let answer = request.answer().await;
                sender.http_step(&sink, &batch, answer)
            }
            _ => sender.send(&sink, &batch).await,
        };
        match step {
            Step::Advance => {
                moving.start(&ob, &sink.id, batch.through).await;
                if !matches!(sink.target, Target::Http { .. }) {
                    // A file or stdout has nobody to drop a batch sent again
                    // (a receiver drops it by event id): its cursor is saved
                    // before anything else, so a kill between the two
                    // repeats at most what was written in that instant (and a
                    // file's next task leaves that out: `jsonl`).
                    moving.done(&sink.id).await;
                }
                advance(&mut queue, &mut cursor, batch.through);
                sender.failures = 0;
                if sink.last_error.take().is_some() {
                    update(&paths, &sink.id, |s| s.last_error = None).await;
                }
            }
            // Anything but a batch taken: the batches ahead are dropped, their
            // requests cancelled; whatever the receiver made of them, they go
            // again after this one (a receiver drops what it already has).
            Step::Retry => ahead.clear(),
            Step::LowerTier(t) => {
                ahead.clear();
                tracing::warn!(sink = %sink.id, "the receiver takes tier {t} at most; lowering");
                sink.tier = sink.tier.min(t);
                let tier = sink.tier;
                update(&paths, &sink.id, move |s| s.tier = tier).await;
            }
            Step::Wait(d, why) => {
                ahead.clear();
                moving.done(&sink.id).await;
                record_error(&paths, &mut sink, &why).await;
                flags.caught_up.store(true, Ordering::Relaxed);
                tokio::time::sleep(d).await;
            }
            Step::Pause(why) => {
                moving.done(&sink.id).await;
                return pause(&paths, &sink, &flags, why).await;
            }
        }
    }
    moving.done(&sink.id).await;
}

/// What a batch is cut for: the row it starts at and the sink's settings that
/// decide what goes in it. A batch cut ahead is sent only if they still hold.
#[derive(Clone, Debug, PartialEq)]
struct Cut {
    first: Option<i64>,
    tier: u8,
    pii: bool,
    discovery: Option<http::Discovery>,
    max_events: usize,
    max_bytes: usize,
}

impl Cut {
    fn of(sink: &Sink, sender: &Sender, first: Option<i64>) -> Cut {
        Cut {
            first,
            tier: sink.tier,
            pii: sink.pii,
            discovery: sink.discovery.clone(),
            max_events: sender.max_events(sink),
            max_bytes: max_bytes(sink),
        }
    }
}

/// A batch after the one on its way, cut while that one's request ran, and
/// its request when it went at once too. Used only if nothing it was cut for
/// has changed by its turn.
struct Ahead {
    cut: Cut,
    batch: Batch,
    request: Option<Request>,
}

/// A batch's request on its own task; dropped unanswered (the sink stopped),
/// the request is cancelled with it.
struct Request(JoinHandle<BatchVerdict>);

impl Request {
    async fn answer(mut self) -> BatchVerdict {
        match (&mut self.0).await {
            Ok(answer) => answer,
            Err(e) => match e.try_into_panic() {
                Ok(panic) => std::panic::resume_unwind(panic),
                Err(_) => BatchVerdict::Transient("the request was cancelled".into()),
            },
        }
    }
}

impl Drop for Request {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Drops the rows a batch took (or passed over) from the read-ahead.
fn advance(queue: &mut VecDeque<StoredEvent>, cursor: &mut Option<i64>, through: i64) {
    while queue.front().is_some_and(|r| r.rowid <= through) {
        queue.pop_front();
    }
    *cursor = Some(cursor.map_or(through, |c| c.max(through)));
}

/// A move of the sink's cursor on the blocking pool, awaited later: the next
/// batch is cut and sent while SQLite writes the last one's cursor (a batch
/// taken by the receiver is never sent again because of it; one whose move
/// is lost to a crash is, as before, and receivers dedup).
#[derive(Default)]
struct Moving(Option<JoinHandle<Result<(), crate::pipeline::outbox::OutboxError>>>);

impl Moving {
    /// Starts moving the cursor to `through`, once the last move is done.
    async fn start(&mut self, ob: &SharedOutbox, sink: &str, through: i64) {
        self.done(sink).await;
        let (o, id) = (ob.clone(), sink.to_string());
        self.0 = Some(tokio::task::spawn_blocking(move || {
            lock(&o).set_sink_cursor(&id, through)
        }));
    }

    /// Waits for the move under way, if any.
    async fn done(&mut self, sink: &str) {
        let Some(task) = self.0.take() else {
            return;
        };
        match task.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                tracing::warn!(sink, "cannot move the cursor (the batch goes again): {e}")
            }
            Err(e) => match e.try_into_panic() {
                Ok(panic) => std::panic::resume_unwind(panic),
                Err(_) => {
                    tracing::warn!(sink, "the cursor's move was cut off (the batch goes again)")
                }
            },
        }
    }
}

/// Stops the sink until the person adds it again; `status` shows why.
async fn pause(paths: &StatePaths, sink: &Sink, flags: &Flags, why: String) {
    tracing::warn!(sink = %sink.id, "paused: {why}");
    update(paths, &sink.id, move |s| s.paused = Some(why)).await;
    flags.caught_up.store(true, Ordering::Relaxed);
}

/// Changes this sink in `sinks.json`.
async fn update(paths: &StatePaths, id: &str, change: impl FnOnce(&mut Sink) + Send + 'static) {
    let (p, i) = (paths.clone(), id.to_string());
    if let Err(e) = blocking(move || SinkList::update(&p, &i, change)).await {
        tracing::warn!(sink = id, "{e}");
    }
}

async fn record_error(paths: &StatePaths, sink: &mut Sink, why: &str) {
    if sink.last_error.as_deref() != Some(why) {
        tracing::warn!(sink = %sink.id, "{why}");
        sink.last_error = Some(why.to_string());
        let why = why.to_string();
        update(paths, &sink.id, move |s| s.last_error = Some(why)).await;
    }
}

/// Re-reads an HTTP receiver's discovery once a day. A document that now sends
/// the events (and so the token) to another origin pauses the sink: the reason,
/// for the loop to stop on. Other failures keep the document it has.
async fn rediscover(paths: &StatePaths, sink: &mut Sink) -> Option<String> {
    let (Target::Http { url }, Some(d)) = (&sink.target, &sink.discovery) else {
        return None;
    };
    if !http::same_origin(url, &d.events) {
        // Kept by an earlier version, or edited by hand: never sent to.
        return Some(
            http::DiscoveryError::OtherOrigin {
                events: http::shown_url(&d.events),
                added: http::shown_url(url),
            }
            .to_string(),
        );
    }
    if protocol::time::now_ms() - d.read_at < REDISCOVER_MS {
        return None;
    }
    match http::discover(url).await {
        Err(e @ http::DiscoveryError::OtherOrigin { .. }) => return Some(e.to_string()),
        Err(_) => return None,
        Ok(fresh) => {
            sink.tier = sink.tier.min(fresh.max_tier);
            sink.discovery = Some(fresh.clone());
            let tier = sink.tier;
            update(paths, &sink.id, move |s| {
                s.discovery = Some(fresh);
                s.tier = tier;
            })
            .await;
        }
    }
    None
}

fn max_bytes(sink: &Sink) -> usize {
    sink.discovery.as_ref().map_or(usize::MAX, |d| d.max_bytes)
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
        rows: &[StoredEvent],
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
            // A full batch stops before the next row is read and serialised
            // (it would only be thrown away: each batch made one view too many).
            if b.lines.len() == max_events {
                break;
            }
            let Some(line) = view(&row.envelope, sink, home) else {
                b.through = row.rowid; // not for this sink: passed over
                continue;
            };
            if 14 + line.len() > max_bytes {
                b.dropped.push(format!("rowid {}", row.rowid));
                b.through = row.rowid;
                continue;
            }
            if bytes + line.len() + 1 > max_bytes {
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
    let out = filter_owned(env, sink.tier, sink.pii, home)?;
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
    client: reqwest::Client,
    token: Option<String>,
    webhook: Option<String>,
    /// Halved after a 413, for the rest of this task's life.
    max_events_cap: Option<usize>,
    failures: usize,
    /// A file sink's writes.
    file: Appender,
}

impl Sender {
    /// Reads again a token or webhook secret the sink was added with and that
    /// could not be read before: a keychain unlocks some time after login.
    /// Sending without it would get the sink paused by a 401, or send unsigned.
    async fn load_secrets(
        &mut self,
        sink: &Sink,
        secrets: &Arc<Secrets>,
    ) -> Result<(), &'static str> {
        if sink.has_token && self.token.is_none() {
            let (s, k) = (secrets.clone(), sink.token_key());
            self.token = blocking(move || s.get(&k)).await;
        }
        if sink.has_webhook_secret && self.webhook.is_none() {
            let (s, k) = (secrets.clone(), sink.webhook_key());
            self.webhook = blocking(move || s.get(&k)).await;
        }
        let missing = (sink.has_token && self.token.is_none())
            || (sink.has_webhook_secret && self.webhook.is_none());
        if missing {
            return Err("its secrets cannot be read (a locked keychain?); waiting");
        }
        Ok(())
    }

    fn max_events(&self, sink: &Sink) -> usize {
        let d = sink.discovery.as_ref().map_or(500, |d| d.max_events);
        self.max_events_cap.map_or(d, |c| c.min(d)).max(1)
    }

    /// The batch's POST, ready to run on a task of its own.
    fn request(
        &self,
        sink: &Sink,
        batch: &Batch,
    ) -> impl std::future::Future<Output = BatchVerdict> + Send + 'static {
        let client = self.client.clone();
        let url = sink
            .discovery
            .as_ref()
            .map(|d| d.events.clone())
            .unwrap_or_default();
        let (token, webhook) = (self.token.clone(), self.webhook.clone());
        let body = http::batch_body(&batch.lines);
        async move { http::send(&client, &url, token.as_deref(), webhook.as_deref(), body).await }
    }

    async fn send(&mut self, sink: &Sink, batch: &Batch) -> Step {
        match &sink.target {
            Target::Stdout => {
                let lines = batch.lines.clone();
                let ok = blocking(move || {
                    let mut out = std::io::stdout().lock();
                    lines
                        .iter()
                        .try_for_each(|l| writeln!(out, "{l}"))
                        .and_then(|_| out.flush())
                })
                .await;
                self.io_step(ok, "stdout")
            }
            Target::File { path } => {
                let (p, lines) = (path.clone(), batch.lines.clone());
                let mut appender = std::mem::take(&mut self.file);
                let (written, appender) = blocking(move || {
                    let written = appender.append(std::path::Path::new(&p), &lines);
                    (written, appender)
                })
                .await;
                self.file = appender;
                if let Ok(n @ 1..) = written {
                    tracing::info!(sink = %sink.id, "{n} events were at the file's end already (written before a stop, their place not yet saved): not written again");
                }
                self.io_step(written.map(drop), path)
            }
            Target::Http { .. } => {
                let answer = self.request(sink, batch).await;
                self.http_step(sink, batch, answer)
            }
        }
    }

    fn http_step(&mut self, sink: &Sink, batch: &Batch, answer: BatchVerdict) -> Step {
        match answer {
            BatchVerdict::Accepted { rejected, max_tier } => {
                for (id, reason) in rejected {
                    tracing::warn!(sink = %sink.id, "event {id} rejected: {reason}");
                }
                match max_tier {
                    Some(t) if t < sink.tier => Step::LowerTier(t),
                    _ => Step::Advance,
                }
            }
            BatchVerdict::Malformed(why) => {
                tracing::warn!(
                    sink = %sink.id,
                    "a batch of {} was refused as malformed ({why}) and dropped",
                    batch.lines.len()
                );
                Step::Advance
            }
            BatchVerdict::Unsupported => {
                Step::Pause("the receiver does not speak protocol 1".into())
            }
            BatchVerdict::Unauthorized => Step::Pause(format!(
                "401: the token was refused (`sessionpipe sink token {} --token-stdin` gives it a new one)",
                sink.id
            )),
            BatchVerdict::TierAboveMax(t) => Step::LowerTier(t),
            BatchVerdict::TooLarge if batch.lines.len() > 1 => {
                self.max_events_cap = Some(batch.lines.len() / 2);
                Step::Retry
            }
            BatchVerdict::TooLarge => {
                tracing::warn!(
                    sink = %sink.id,
                    "a single event was too large for the receiver and was dropped"
                );
                Step::Advance
            }
            BatchVerdict::RetryAfter(d) => Step::Wait(d, format!("429: waiting {}s", d.as_secs())),
            BatchVerdict::Transient(why) => self.backoff(why),
        }
    }

    fn io_step(&mut self, ok: std::io::Result<()>, what: &str) -> Step {
        match ok {
            Ok(()) => Step::Advance,
            Err(e) => self.backoff(format!("{what}: {e}")),
        }
    }

    fn backoff(&mut self, why: String) -> Step {
        let d = backoff_delay(self.failures, random_unit());
        self.failures += 1;
        Step::Wait(d, format!("{why}; retrying in {}s", d.as_secs().max(1)))
    }
}

/// The wait after `failures` earlier failures in a row: the binding's step,
/// jittered down by up to a fifth (`unit` in [0, 1)), never under the first step.
fn backoff_delay(failures: usize, unit: f64) -> Duration {
    let bound = BACKOFF_S[failures.min(BACKOFF_S.len() - 1)] as f64;
    let jittered = bound * (1.0 - 0.2 * unit.clamp(0.0, 1.0));
    Duration::from_secs_f64(jittered.max(BACKOFF_S[0] as f64))
}

/// A uniform number in [0, 1) from the OS's random source (0 if it fails).
fn random_unit() -> f64 {
    let mut b = [0u8; 8];
    if getrandom::fill(&mut b).is_err() {
        return 0.0;
    }
    (u64::from_le_bytes(b) >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_follows_the_bindings_steps_jittered_below_each() {
        for (failures, bound) in [(0, 2), (1, 10), (2, 60), (3, 300), (4, 1800), (9, 1800)] {
            let top = backoff_delay(failures, 0.0);
            let low = backoff_delay(failures, 0.999);
            assert_eq!(top, Duration::from_secs(bound), "{failures}");
            assert!(low <= top && low >= Duration::from_secs(2), "{failures}");
            if bound > 2 {
                assert!(low < top, "jittered: {low:?} vs {top:?}");
                assert!(low.as_secs_f64() >= bound as f64 * 0.8);
            }
        }
        let a = random_unit();
        assert!((0.0..1.0).contains(&a));
    }
}
