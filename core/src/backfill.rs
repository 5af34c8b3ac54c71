//! Layer 3, backfill: one `session.backfill` (seq 0) per session
//! the harnesses' own files hold from the last N days, so a receiver sees what
//! happened before the hooks were installed.
//!
//! Each adapter lists its sessions (`Adapter::backfill`); this appends them.
//! Idempotent: a session the outbox already knows (live or backfilled) is passed
//! over, and seq 0 is unique per (harness, session). The tokens of every
//! session found go to the usage table, a known session's too (one watched
//! before usage was kept has none yet); each response is kept once. They are
//! kept as the files are read, a few thousand responses a transaction, not
//! held until the sessions are sent (a year's would be tens of MB). It never
//! touches a session's live seq. With remote titles on, a session its
//! harness's service names is backfilled under that name (the asker is
//! handed in). How far it is goes to an observer the caller hands in
//! (`state::progress::Progress`); this module draws and files nothing.

use crate::control::host::AcpNames;
use crate::pipeline::outbox::{Outbox, OutboxError};
use crate::pipeline::titles::RemoteTitles;
use crate::state::progress::{Progress, Stage, Work};
use harness::Adapter;
use harness::backfill::Backfilled;
use harness::install::Host;
use harness::usage::Usage;
use protocol::SessionBlock;
use serde::Serialize;

/// Per harness: sessions found in the files, appended now, known already.
#[derive(Clone, Debug, Default, Serialize)]
pub struct HarnessCount {
    pub harness: String,
    pub found: usize,
    pub added: usize,
    pub known: usize,
}

/// Appends a `session.backfill` for every session of the last `days` days that
/// the outbox does not know. Every harness's files are read first (so the
/// sessions to send are counted before the first is sent), then the sessions
/// are appended in the order each harness lists them. `progress` is told each
/// step (`Stage::Reading`: before each harness and after the last;
/// `Stage::Sending`: before the first session and after each); it is the
/// caller's to show or file. `titles`, when on, names each new one its
/// harness's service names.
#[allow(clippy::too_many_arguments)]
pub fn run(
    outbox: &mut Outbox,
    host: &Host,
    days: u32,
    only: &[String],
    machine: &str,
    titles: Option<&dyn RemoteTitles>,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Vec<HarnessCount>, OutboxError> {
    let titles = titles.filter(|t| t.on());
    let since = protocol::time::now_ms() - i64::from(days) * 86_400_000;
    let step = |stage, done, total, harness: &str| {
        Progress::new(Work::Backfill, stage, done, total, harness)
    };
    // `only` (empty: every harness) names harnesses the CLI checked.
    let adapters: Vec<&dyn Adapter> = adapters::REGISTRY
        .iter()
        .copied()
        .filter(|a| only.is_empty() || only.iter().any(|o| o == a.name()))
        .collect();
    let harnesses = adapters.len();
    let mut read = Vec::with_capacity(harnesses);
    for (i, adapter) in adapters.into_iter().enumerate() {
        progress(&step(Stage::Reading, i, harnesses, adapter.name()));
        let mut usage = UsageBatch::new(adapter.name());
        let found = adapter.backfill_each(host, since, &mut |b| usage.take(outbox, b));
        usage.flush(outbox)?;
        read.push((adapter, found));
    }
    let last = read.last().map_or("", |(a, _)| a.name());
    progress(&step(Stage::Reading, harnesses, harnesses, last));
    let total: usize = read.iter().map(|(_, found)| found.len()).sum();
    let first = read
        .iter()
        .find(|(_, found)| !found.is_empty())
        .map_or("", |(a, _)| a.name());
    progress(&step(Stage::Sending, 0, total, first));
    let mut done = 0;
    let mut counts = Vec::new();
    for (adapter, found) in read {
        let mut count = HarnessCount {
            harness: adapter.name().into(),
            found: found.len(),
            ..Default::default()
        };
        for b in &found {
            if append(outbox, adapter, b, machine, titles)? {
                count.added += 1;
            } else {
                count.known += 1;
            }
            done += 1;
            progress(&step(Stage::Sending, done, total, adapter.name()));
        }
        counts.push(count);
    }
    Ok(counts)
}

/// The responses taken from the sessions as they are read, kept a batch at
/// a time: a transaction per batch, so a year's backfill neither holds them
/// all nor makes the daemon's writer wait for more than one batch.
struct UsageBatch {
    harness: &'static str,
    /// (the session's id as its files name it, its account and model, its responses)
    sessions: Vec<(String, SessionBlock, Vec<Usage>)>,
    rows: usize,
    /// The first failure; nothing is kept after it, and `flush` returns it.
    failed: Option<OutboxError>,
}

/// Responses a batch holds before it is written.
const USAGE_BATCH_ROWS: usize = 4096;

impl UsageBatch {
    fn new(harness: &'static str) -> UsageBatch {
        UsageBatch {
            harness,
            sessions: Vec::new(),
            rows: 0,
            failed: None,
        }
    }

    /// Takes `b`'s responses (the session keeps none), writing the batch
    /// when it is full.
    fn take(&mut self, outbox: &mut Outbox, b: &mut Backfilled) {
        let rows = std::mem::take(&mut b.usage);
        // As `append` would pass it over.
        if rows.is_empty() || self.failed.is_some() || !protocol::valid_session_id(&b.session_id) {
            return;
        }
        self.rows += rows.len();
        // What `put_usage` reads of the block: the account and the model.
        let whose = SessionBlock {
            account_id: b.block.account_id.clone(),
            model: b.block.model.clone(),
            ..Default::default()
        };
        self.sessions.push((b.session_id.clone(), whose, rows));
        if self.rows >= USAGE_BATCH_ROWS
            && let Err(e) = self.write(outbox)
        {
            self.failed = Some(e);
        }
    }

    /// Writes what the batch holds, or returns its first failure.
    fn flush(&mut self, outbox: &mut Outbox) -> Result<(), OutboxError> {
        match self.failed.take() {
            Some(e) => Err(e),
            None => self.write(outbox),
        }
    }

    fn write(&mut self, outbox: &mut Outbox) -> Result<(), OutboxError> {
        if self.sessions.is_empty() {
            return Ok(());
        }
        let tx = outbox.begin()?;
        for (id, whose, rows) in self.sessions.drain(..) {
            // Under the name `append` backfills the session by.
            let session = tx.given_name(&AcpNames, self.harness, &id)?.unwrap_or(id);
            tx.put_usage(self.harness, &session, &whose, &rows)?;
        }
        tx.commit()?;
        self.rows = 0;
        Ok(())
    }
}

/// Appends one backfill unless the session is known. True when appended.
fn append(
    outbox: &mut Outbox,
    adapter: &dyn Adapter,
    b: &Backfilled,
    machine: &str,
    titles: Option<&dyn RemoteTitles>,
) -> Result<bool, OutboxError> {
    if !protocol::valid_session_id(&b.session_id) {
        return Ok(false);
    }
    // Asked before the transaction (an ask may take its 3 s, and the
    // daemon's ingest waits on a writer), and only for a session not known
    // (known ones are `titles refresh`'s).
    let asked = match titles {
        Some(t) if outbox.session(adapter.name(), &b.session_id)?.is_none() => t
            .remote_id(adapter.name(), &b.block)
            .and_then(|remote| t.ask_past(b, &remote)),
        _ => None,
    };
    let tx = outbox.begin()?;
    // A session an ACP start of control named is known by that name (its
    // hooks' events carry it): backfilled under its own id it would be two.
    let session = tx
        .given_name(&AcpNames, adapter.name(), &b.session_id)?
        .unwrap_or_else(|| b.session_id.clone());
    if tx.session_known(adapter.name(), &session)? {
        tx.commit()?;
        return Ok(false);
    }
    let mut block = b.block.clone();
    block.machine = block.machine.or(Some(machine.to_string()));
    if let Some(title) = asked {
        crate::pipeline::titles::name(&mut block, title);
    }
    let env = crate::pipeline::append::backfill_envelope(adapter.name(), b, &session, &block);
    let added = tx.append_backfill(&env)?;
    tx.commit()?;
    Ok(added)
}
