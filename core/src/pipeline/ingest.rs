//! From spool to outbox: read jobs in arrival order, map each with its harness's
//! adapter, put a subagent's call under the session it works for
//! (`subagents`), name its session (`names`), apply the session rules, run
//! `secrets@1`, append, and only then remove the job files.
//!
//! A batch of jobs commits in one transaction together with the names of the jobs
//! it took, so a crash at any point either keeps the jobs for the next run or
//! remembers they are done: never lost, never appended twice. A job that cannot be
//! read is quarantined with its reason and never retried. This module does not
//! deliver or filter; it is the only writer of the outbox's events.
//!
//! It never waits on the network. A call that makes a remote-titles ask due
//! is put back as it was found and its session handed, still taken, to the
//! titles worker (`title_worker`); the call is taken again once the answer is
//! in, so it is appended once, in order, under the name, while every other
//! session's calls go on.

use crate::pipeline::append::append_events;
use crate::pipeline::holds::{Busy, HoldTask, HoldWorker, SessionKey};
use crate::pipeline::names::{self, Names};
use crate::pipeline::outbox::{GivenNames, Outbox, OutboxError, OutboxTx};
use crate::pipeline::reading::{self, LivePaths, Reads, Turns};
use crate::pipeline::session::SessionRecord;
use crate::pipeline::subagents::Subagents;
use crate::pipeline::title_worker::{TitleTask, TitleWorker};
use crate::pipeline::titles::{self, RemoteTitles};
use crate::state::live_config::LiveConfig;
use crate::state::machine_name::MachineName;
use harness::Mapped;
use protocol::EventData;
use spool::Job;
use spool::Spool;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// Jobs per transaction: large enough to amortise a commit's fsync under a hook
/// storm, small enough that one batch stays a few milliseconds.
const BATCH: usize = 1024;

/// Whether the daemon's stop flag (when it has one) is set.
fn asked_to_stop(flag: Option<&std::sync::atomic::AtomicBool>) -> bool {
    flag.is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed))
}

/// How often a drain with nothing else to do looks at the spool again while
/// a remote-titles ask it handed over runs (a given-back session wakes it
/// sooner).
const ASK_POLL: std::time::Duration = std::time::Duration::from_millis(50);

pub struct Ingest {
    outbox: Outbox,
    spool: Spool,
    machine: MachineName,
    /// Where committed jobs are moved instead of removed (a diagnostic, and how
    /// the project records fixtures from real harnesses).
    archive: Option<std::path::PathBuf>,
    turns: Turns,
    /// `transcripts` in config.json, followed: turned on or off in the UI
    /// or with `config set`, it applies from the next batch.
    transcripts: Option<FollowedTranscripts>,
    busy: Arc<Busy>,
    /// Real transcript paths the records keep redacted (shared with the worker).
    live: Arc<LivePaths>,
    holds: Option<HoldWorker>,
    /// Which session each call goes under (a control start's name, or the
    /// harness's own id), remembered across batches.
    names: Names,
    /// The session each subagent that fires its hooks under its own id works
    /// for, remembered across batches.
    subagents: Subagents,
    /// Rung after each commit that appended events (the sinks wait on it).
    after_commit: Option<Box<dyn Fn() + Send>>,
    /// Told, after each commit, of every hook call it took.
    on_seen: Option<Box<dyn Fn(Committed) + Send>>,
    stop: Option<Arc<std::sync::atomic::AtomicBool>>,
    /// Remote titles' asker (the daemon's; none asks nothing).
    titles: Option<Arc<dyn RemoteTitles>>,
    /// Where its live asks run (started with it; none asks nothing, and a
    /// name already heard still applies).
    asks: Option<TitleWorker>,
}

/// Why a drain stopped: the spool cannot be listed, or the outbox not written.
/// The jobs stay in the spool for the next drain.
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    #[error("cannot list the spool: {0}")]
    Spool(std::io::Error),
    #[error(transparent)]
    Outbox(#[from] OutboxError),
}

/// What became of one job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Appended(usize),
    Ignored(String),
    Quarantined(String),
}

impl Outcome {
    /// The outcome as `jobs_done` keeps it.
    fn record(&self) -> String {
        match self {
            Outcome::Appended(n) => format!("appended {n}"),
            Outcome::Ignored(why) => format!("ignored: {why}"),
            Outcome::Quarantined(why) => format!("quarantined: {why}"),
        }
    }

    /// Reads back what `record` wrote (anything else is an older note: ignored).
    fn from_record(s: &str) -> Outcome {
        if let Some(why) = s.strip_prefix("quarantined: ") {
            return Outcome::Quarantined(why.to_string());
        }
        if let Some(n) = s.strip_prefix("appended ").and_then(|n| n.parse().ok()) {
            return Outcome::Appended(n);
        }
        Outcome::Ignored(s.strip_prefix("ignored: ").unwrap_or(s).to_string())
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DrainReport {
    pub jobs: usize,
    pub events: usize,
    pub quarantined: usize,
    /// Jobs left for later because their session was taken (a held turn).
    pub deferred: usize,
}

/// One committed hook call, for those who act on a session's hooks (control:
/// a Stop that may take a queued message, a permission prompt an answer may
/// reach, an attention closed by the session's next event).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    /// The spool job's name (the hook that wrote it asks by this name).
    pub job: String,
    pub harness: String,
    pub session: String,
    /// The harness's own hook name.
    pub event: String,
    pub attentions: crate::pipeline::append::Appended,
    /// The call ended its session's turn (or the session).
    pub turn_ended: bool,
    /// The session's transcript, as the call names it (control reads a
    /// reply there).
    pub transcript: Option<std::path::PathBuf>,
    /// The subagent whose own call this was, put under the session it works
    /// for (`subagents`): its Stop is not the session's, and control hands it
    /// nothing of the session's.
    pub subagent: Option<String>,
}

/// What one commit tells control (`Ingest::tell_seen`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Committed {
    /// The hook calls it reported into their sessions.
    pub calls: Vec<Seen>,
    /// The jobs it took that report nothing (ignored: not a session's, or
    /// not its session's to report; quarantined; or committed before, their
    /// file left behind by a crash): a hook that asks about one waits for
    /// nothing.
    pub passed: Vec<String>,
}

/// What ingesting one job did, beyond its outcome.
enum Taken {
    Done(
        Outcome,
        Option<(SessionKey, Option<HoldTask>)>,
        Option<Box<Seen>>,
    ),
    /// Its session is taken: the job waits in the spool.
    Deferred(SessionKey),
    /// It made a remote-titles ask due: put back as it was, it waits in the
    /// spool while its session, still taken, goes to the titles worker.
    Asking(TitleTask),
}

/// `transcripts` as the settings in force say, and where turns go when on.
struct FollowedTranscripts {
    config: LiveConfig,
    outbox: std::path::PathBuf,
}

impl FollowedTranscripts {
    fn on(&self) -> bool {
        self.config.now().transcripts
    }
}

impl Ingest {
    pub fn new(outbox: Outbox, spool: Spool, machine: impl Into<MachineName>) -> Ingest {
        Ingest {
            outbox,
            spool,
            machine: machine.into(),
            archive: None,
            turns: Turns::FactsOnly,
            transcripts: None,
            busy: Arc::new(Busy::default()),
            live: Arc::new(LivePaths::default()),
            holds: None,
            names: Names::default(),
            subagents: Subagents::default(),
            after_commit: None,
            on_seen: None,
            stop: None,
            titles: None,
            asks: None,
        }
    }

    /// Asks `given` for the names control's starts gave sessions whose hooks
    /// report under the harness's own id (`names`).
    pub fn name_by(&mut self, given: Arc<dyn GivenNames>) {
        self.names = Names::asking(given);
    }

    /// Asks a harness's service for session names through `titles` (which
    /// says itself whether the person turned it on), on a worker of its own.
    pub fn ask_titles(&mut self, titles: Arc<dyn RemoteTitles>) {
        self.titles = Some(titles);
        if self.asks.is_none() {
            match TitleWorker::start(self.busy.clone()) {
                Ok(w) => self.asks = Some(w),
                Err(e) => tracing::warn!(
                    "remote titles: the titles worker did not start ({e}); names already heard \
                     still apply, none is asked"
                ),
            }
        }
    }

    /// Calls `ring` after each commit that appended events (the sinks wait on it).
    pub fn ring_after_commit(&mut self, ring: impl Fn() + Send + 'static) {
        self.after_commit = Some(Box::new(ring));
    }

    /// Calls `seen` after each commit with the jobs it took (control).
    pub fn tell_seen(&mut self, seen: impl Fn(Committed) + Send + 'static) {
        self.on_seen = Some(Box::new(seen));
    }

    /// Keeps every committed job in `dir`. Payloads hold prompts and tool output:
    /// only for diagnostics and recording fixtures.
    pub fn keep_jobs_in(&mut self, dir: std::path::PathBuf) {
        self.archive = Some(dir);
    }

    /// Sends `turn.transcript` events (some destination takes tier 2), with a
    /// worker that waits for a turn's words to reach the transcript file.
    pub fn send_turns(&mut self, outbox_path: std::path::PathBuf) {
        self.turns = Turns::Send;
        if self.holds.is_none() {
            self.holds = Some(HoldWorker::start(
                outbox_path,
                self.busy.clone(),
                self.live.clone(),
                self.machine.clone(),
            ));
        }
    }

    /// Sends `turn.transcript` events into `outbox` while `transcripts` is
    /// on in the settings in force, looked at (one `stat`) before each batch.
    pub fn send_turns_as_configured(&mut self, config: LiveConfig, outbox: std::path::PathBuf) {
        let followed = FollowedTranscripts { config, outbox };
        if followed.on() {
            self.send_turns(followed.outbox.clone());
        }
        self.transcripts = Some(followed);
    }

    /// Follows `transcripts` before a batch: the worker starts the first
    /// time it is on; off, turns are read for their facts alone.
    fn follow_transcripts(&mut self) {
        let Some(on) = self.transcripts.as_ref().map(FollowedTranscripts::on) else {
            return;
        };
        match (on, self.turns) {
            (true, Turns::FactsOnly) => {
                let outbox = self.transcripts.as_ref().map(|t| t.outbox.clone());
                if let Some(outbox) = outbox {
                    tracing::info!("transcripts turned on: turns are read into turn.transcript");
                    self.send_turns(outbox);
                }
            }
            (false, Turns::Send) => {
                tracing::info!("transcripts turned off: turns are read for their facts alone");
                self.turns = Turns::FactsOnly;
            }
            _ => {}
        }
    }

    /// Where the daemon adds its own events of any tier to sessions (the
    /// pool's `limits.observed`), in step with this ingest.
    pub fn own_events(
        &self,
        outbox_path: std::path::PathBuf,
    ) -> crate::pipeline::local::LocalEvents {
        crate::pipeline::local::LocalEvents::new(
            self.busy.clone(),
            outbox_path,
            self.machine.clone(),
        )
    }

    /// Where the daemon adds its own events to sessions (`turn.progress`),
    /// in step with this ingest; `None` unless turns are sent (tier 2).
    pub fn local_events(
        &self,
        outbox_path: std::path::PathBuf,
    ) -> Option<crate::pipeline::local::LocalEvents> {
        matches!(self.turns, Turns::Send).then(|| {
            crate::pipeline::local::LocalEvents::new(
                self.busy.clone(),
                outbox_path,
                self.machine.clone(),
            )
        })
    }

    /// True when no session is taken, no held turn waits and no title ask runs.
    pub fn idle(&self) -> bool {
        self.busy.is_idle() && self.holds.as_ref().is_none_or(HoldWorker::idle) && !self.asking()
    }

    /// True while a remote-titles ask this ingest handed over runs.
    fn asking(&self) -> bool {
        self.asks.as_ref().is_some_and(TitleWorker::asking)
    }

    /// Stops a drain between two batches once `flag` is set (the daemon's
    /// signal): what was taken is committed, the rest stays in the spool.
    pub fn stop_when(&mut self, flag: Arc<std::sync::atomic::AtomicBool>) {
        self.stop = Some(flag);
    }

    fn stopping(&self) -> bool {
        asked_to_stop(self.stop.as_deref())
    }

    /// Waits a little for a taken session to be given back.
    pub fn wait_for_sessions(&self, timeout: std::time::Duration) {
        self.busy.wait(timeout);
    }

    /// Takes every job in the spool, batch by batch, until none is left or every
    /// job left waits for its session. A job waiting for its session's title
    /// ask is waited for (the ask is bounded), looking at the spool again
    /// meanwhile, so a drain never leaves a call behind for a wake that may
    /// not come, and other sessions' calls still go in while it waits.
    pub fn drain(&mut self) -> Result<DrainReport, IngestError> {
        let mut report = DrainReport::default();
        loop {
            // One listing per pass: a storm leaves thousands of files, and each
            // listing reads them all.
            let names = self.spool.pending(usize::MAX).map_err(IngestError::Spool)?;
            if names.is_empty() && !self.asking() {
                return Ok(report);
            }
            // Sessions deferred early in the pass stay deferred to its end, so
            // a later job of theirs never goes before an earlier one.
            let mut deferred: HashSet<SessionKey> = HashSet::new();
            let mut progressed = false;
            report.deferred = 0;
            for chunk in names.chunks(BATCH) {
                if self.stopping() {
                    return Ok(report);
                }
                let (outcomes, waiting) = self.batch(chunk, &mut deferred)?;
                progressed |= !outcomes.is_empty();
                report.deferred += waiting;
                self.finish(outcomes, &mut report);
            }
            if !progressed {
                if !self.asking() || self.stopping() {
                    return Ok(report);
                }
                self.busy.wait(ASK_POLL);
            }
        }
    }

    /// Removes (or archives, or quarantines) the jobs a batch committed.
    fn finish(&self, outcomes: Vec<(String, Outcome)>, report: &mut DrainReport) {
        for (name, outcome) in outcomes {
            report.jobs += 1;
            match &outcome {
                Outcome::Appended(n) => report.events += n,
                Outcome::Quarantined(why) => {
                    report.quarantined += 1;
                    tracing::warn!("quarantined {name}: {why}");
                }
                Outcome::Ignored(_) => {}
            }
            let done = match (&outcome, &self.archive) {
                (Outcome::Quarantined(why), _) => {
                    self.spool
                        .quarantine(&name, why, &crate::pipeline::scrub::quarantined)
                }
                (_, Some(dir)) => self.spool.archive(&name, dir),
                (_, None) => self.spool.remove(&name),
            };
            if let Err(e) = done {
                // Committed already: the next drain finds it in jobs_done.
                tracing::warn!("cannot remove job {name}: {e}");
            }
        }
    }

    /// Commits one batch: each job's outcome in order, and how many were deferred.
    fn batch(
        &mut self,
        names: &[String],
        deferred: &mut HashSet<SessionKey>,
    ) -> Result<(Vec<(String, Outcome)>, usize), OutboxError> {
        self.follow_transcripts();
        let machine = self.machine.get();
        let ctx = Ctx {
            machine: &machine,
            reads: Reads {
                turns: self.turns,
                live: &self.live,
                titles: self.titles.as_deref(),
            },
            busy: &self.busy,
            asks: self.asks.as_ref(),
        };
        let mut taken: HashSet<SessionKey> = HashSet::new();
        // Each session's record is read once per batch and written at its end.
        let mut records: HashMap<SessionKey, SessionRecord> = HashMap::new();
        let mut holds: Vec<HoldTask> = Vec::new();
        let mut asks: Vec<TitleTask> = Vec::new();
        let mut outcomes = Vec::with_capacity(names.len());
        let mut waiting = 0;
        let mut seen = Committed::default();
        // Held apart from `self`: the transaction borrows the outbox.
        let stop = self.stop.clone();
        let tx = self.outbox.begin()?;
        for name in names {
            // A stop asked mid-batch commits what is done and leaves the rest
            // in the spool for the next start: a whole batch on a slow (or
            // debug) build can outlast the stop's bound.
            if asked_to_stop(stop.as_deref()) {
                break;
            }
            if let Some(done) = tx.job_outcome(name)? {
                seen.passed.push(name.clone());
                outcomes.push((name.clone(), Outcome::from_record(&done)));
                continue;
            }
            let taken_now = match Job::read(&self.spool.path(name)) {
                Ok(job) => ingest_job(
                    &tx,
                    &job,
                    &ctx,
                    &mut self.names,
                    &mut self.subagents,
                    Sessions {
                        taken: &mut taken,
                        deferred,
                        records: &mut records,
                        holds: &holds,
                    },
                )?,
                Err(why) => Taken::Done(Outcome::Quarantined(why.to_string()), None, None),
            };
            match taken_now {
                Taken::Deferred(key) => {
                    waiting += 1;
                    deferred.insert(key);
                }
                Taken::Asking(task) => {
                    waiting += 1;
                    deferred.insert(task.key.clone());
                    asks.push(task);
                }
                Taken::Done(outcome, session, seen_now) => {
                    match seen_now {
                        Some(call) => seen.calls.push(*call),
                        None => seen.passed.push(name.clone()),
                    }
                    if let Some((_, Some(hold))) = session {
                        holds.retain(|h| h.key != hold.key);
                        holds.push(hold);
                    }
                    tx.mark_job(name, &outcome.record(), protocol::time::now_ms())?;
                    outcomes.push((name.clone(), outcome));
                }
            }
        }
        for ((harness, session), record) in &records {
            tx.save_session(harness, session, record)?;
        }
        let committed = tx.commit();
        // Sessions go back once their events are committed; a held turn's session
        // stays taken and goes to the hold worker, an asked one to the titles
        // worker (neither when the commit failed: the jobs are all retried).
        for key in &taken {
            let handed = holds.iter().any(|h| &h.key == key) || asks.iter().any(|a| &a.key == key);
            if !(committed.is_ok() && handed) {
                self.busy.give_back(key);
            }
        }
        committed?;
        if let Some(ring) = &self.after_commit
            && outcomes
                .iter()
                .any(|(_, o)| matches!(o, Outcome::Appended(n) if *n > 0))
        {
            ring();
        }
        if let Some(tell) = &self.on_seen
            && !(seen.calls.is_empty() && seen.passed.is_empty())
        {
            tell(seen);
        }
        for hold in holds {
            match &self.holds {
                Some(w) => w.submit(hold),
                None => self.busy.give_back(&hold.key),
            }
        }
        for ask in asks {
            match &self.asks {
                Some(w) => w.submit(ask),
                None => self.busy.give_back(&ask.key),
            }
        }
        Ok((outcomes, waiting))
    }

    pub fn outbox(&self) -> &Outbox {
        &self.outbox
    }
}

struct Ctx<'a> {
    machine: &'a str,
    reads: Reads<'a>,
    busy: &'a Busy,
    /// Where a due title ask goes; none asks nothing.
    asks: Option<&'a TitleWorker>,
}

/// What a batch knows of its sessions when it takes its next job.
struct Sessions<'a> {
    /// Taken by this batch.
    taken: &'a mut HashSet<SessionKey>,
    /// Deferred in this pass: their later jobs wait too.
    deferred: &'a HashSet<SessionKey>,
    /// Read in this batch, saved at its end.
    records: &'a mut HashMap<SessionKey, SessionRecord>,
    /// Held turns of this batch (their sessions go to the hold worker).
    holds: &'a [HoldTask],
}

/// Maps one job and appends its events inside `tx`, unless its session is taken.
fn ingest_job(
    tx: &OutboxTx<'_>,
    job: &Job,
    ctx: &Ctx<'_>,
    names: &mut Names,
    subagents: &mut Subagents,
    sessions: Sessions<'_>,
) -> Result<Taken, OutboxError> {
    let Sessions {
        taken,
        deferred,
        records,
        holds,
    } = sessions;
    let Some(adapter) = adapters::lookup(&job.harness) else {
        let why = format!("no adapter for harness {:?}", job.harness);
        return Ok(Taken::Done(Outcome::Quarantined(why), None, None));
    };
    // An adapter that panics on a payload quarantines that one job; it must not
    // take the ingest loop down with it, nor stop every later job behind it.
    let mapped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| adapter.map(job)));
    let mut mapping = match mapped {
        Ok(Ok(Mapped::Events(m))) => *m,
        Ok(Ok(Mapped::Ignored(why))) => return Ok(Taken::Done(Outcome::Ignored(why), None, None)),
        Ok(Err(e)) => return Ok(Taken::Done(Outcome::Quarantined(e.0), None, None)),
        Err(panic) => {
            let why = format!(
                "the {} adapter failed on it: {}",
                adapter.name(),
                panic_text(&panic)
            );
            return Ok(Taken::Done(Outcome::Quarantined(why), None, None));
        }
    };
    // A subagent's own call goes under the session it works for, as a
    // subagent's: none of it is that session's to read, name or describe.
    let subagent = subagents.route(adapter.name(), &mut mapping);
    // The id the events carry and the session's record is kept under: a
    // control start's name where the daemon started the session (`names`).
    // Decided here, before the session is taken, so its seq, its order and
    // its `session.started` are the named session's; everything that reads
    // the harness's files reads them from the call, by the harness's own id.
    let native = mapping.session_id.as_str();
    let var = job.env(names::CONTROL_SESSION);
    let session = names.session_of(tx, adapter.name(), native, var, records)?;
    let key: SessionKey = (adapter.name().to_string(), session);
    // Later jobs of a deferred session wait too, so its events stay in order;
    // so do those of a session whose turn this batch holds: the hold worker
    // has it once the batch commits, as it would for a job of the next batch
    // (a Stop and its session's end often come in one batch, and the end must
    // not read the turn before the worker had its time for it).
    let held = holds.iter().any(|h| h.key == key);
    if held || deferred.contains(&key) || (!taken.contains(&key) && !ctx.busy.try_take(&key)) {
        return Ok(Taken::Deferred(key));
    }
    taken.insert(key.clone());

    // Not read yet in this batch: putting the call back is forgetting the
    // record again (a session's first call must not leave a record behind).
    let fresh = !records.contains_key(&key);
    let record = match records.entry(key.clone()) {
        std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
        std::collections::hash_map::Entry::Vacant(e) => {
            e.insert(tx.load_session(adapter.name(), &key.1)?)
        }
    };
    // The answer to the ask this call made (it is being taken again), kept
    // before anything of the call, which then finds no ask due.
    if let Some(heard) = ctx.asks.and_then(|w| w.take(&key)) {
        titles::heard(record, heard);
    }
    // Whether this call may make an ask due: it must be able to wait in the
    // spool for the answer (a worker to ask, and the record as it was found to
    // put back; a held turn of this batch deferred the call above).
    let can_ask = ctx.asks.is_some()
        && ctx.reads.titles.is_some()
        && subagent.is_none()
        && !only_tools(&mapping.events);
    let before_call = (can_ask && !fresh).then(|| record.clone());
    names::bind(record, &key.1, native, var);
    let mut events = mapping.events;
    adapter.remember(job, &mut events, &mut record.memo);
    if subagent.is_none() {
        let mut block = mapping.block;
        block.machine = Some(ctx.machine.to_string());
        crate::pipeline::scrub::block(&mut block);
        record.block.merge(&block);
        if mapping.harness_version.is_some() {
            record.version = mapping.harness_version;
        }
    }
    // A subagent's call reads nothing of the session: its files are its own.
    let tool_event = subagent.is_some() || only_tools(&events);
    let files = match subagent {
        Some(_) => harness::SessionFiles::default(),
        None => adapter.files(job),
    };
    // Reading a harness's files: a panic there costs this call its reads (the
    // record as it was before them), never the call's own events.
    let before_reads = record.clone();
    let read = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let around =
            reading::around_call(adapter, job, &files, tool_event, record, &ctx.reads, &key.1);
        let ask = if tool_event {
            None
        } else {
            let titles = ctx.reads.titles;
            titles::around_call(titles, adapter.name(), job, &files, record, can_ask)
        };
        (around, ask)
    }));
    let (around, ask) = read.unwrap_or_else(|panic| {
        tracing::warn!(
            "reading {}'s files for {} failed: {}",
            adapter.name(),
            job.name,
            panic_text(&panic)
        );
        *record = before_reads;
        (reading::Around::default(), None)
    });
    if let Some(due) = ask {
        // Put back as it was found: nothing of this call is kept until it is
        // taken again, with the answer, once the worker gives the session back.
        // (`can_ask` was only true with one of the two to put back.)
        if fresh {
            records.remove(&key);
        } else if let Some(before) = before_call {
            *record = before;
        }
        return Ok(Taken::Asking(TitleTask {
            key,
            asked_ms: due.asked_ms,
            ask: due.ask,
        }));
    }
    let turn_ended = events
        .iter()
        .any(|e| matches!(e, EventData::TurnEnded(_) | EventData::SessionEnded(_)));
    if !adapter.reports_file_changes() {
        let home = job.home().map(|h| h.to_string_lossy().into_owned());
        let cwd = record.block.cwd.as_deref();
        super::edited::add_files_changed(&mut events, cwd, home.as_deref());
    }
    // The tokens read go to the usage table whatever the sinks' tiers: they
    // are the person's own, kept here, never an event.
    tx.put_usage(adapter.name(), &key.1, &record.block, &around.usage)?;
    let mut all = around.before;
    all.extend(events);
    all.extend(around.after);
    let appended = append_events(tx, adapter, &key.1, record, &job.event, job.at_ms(), all)?;
    let hold = around.hold.map(|hold| HoldTask {
        key: key.clone(),
        event: job.event.clone(),
        hold,
        since: std::time::Instant::now(),
    });
    let seen = Seen {
        job: job.name.clone(),
        harness: key.0.clone(),
        session: key.1.clone(),
        event: job.event.clone(),
        attentions: appended.clone(),
        turn_ended,
        transcript: files.transcript.clone(),
        subagent,
    };
    Ok(Taken::Done(
        Outcome::Appended(appended.count),
        Some((key, hold)),
        Some(Box::new(seen)),
    ))
}

/// True when a call's events are tool events only (such a call reads no facts
/// and asks nothing).
fn only_tools(events: &[EventData]) -> bool {
    !events.is_empty()
        && events
            .iter()
            .all(|e| matches!(e, EventData::ToolStarted(_) | EventData::ToolEnded(_)))
}

/// A panic's message, for a quarantine reason or the log.
fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".into())
}
