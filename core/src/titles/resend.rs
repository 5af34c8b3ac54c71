//! What turning remote titles on does to sessions already sent (ADAPTERS.md,
//! Claude Code row, Facts): every session of the last 30 days with a claude.ai
//! link is asked about, and each one the outbox already holds under another
//! name is sent again as `session.backfill`, seq 0, with claude.ai's name.
//!
//! A receiver deduplicates on (harness, session, seq), so the re-send is a
//! duplicate key by design; the rule in the book's sinks page (a `session.backfill` at seq 0
//! under a new event id is the session's newer name) is how it still lands.
//! This module owns choosing the sessions and making the re-sent envelope. It
//! must not touch a session's live seq, re-send one that has a `custom` title
//! or one the outbox never sent, nor add sessions (that is `backfill`'s).

use super::asker::Titles;
use crate::control::host::AcpNames;
use crate::pipeline::outbox::{Outbox, OutboxError};
use crate::pipeline::session::RemoteTitle;
use crate::pipeline::titles::{self as rules, RemoteTitles};
use crate::state::progress::{Progress, Stage, Work};
use harness::Adapter as _;
use harness::backfill::Backfilled;
use harness::install::Host;
use serde::Serialize;

/// How far back turning it on asks.
pub const DAYS: u32 = 30;

/// What a re-send did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Resent {
    /// Sessions with a claude.ai link that were asked about.
    pub asked: usize,
    /// Of those, the ones claude.ai had a name for.
    pub named: usize,
    /// Of those, the ones sent again under that name.
    pub resent: usize,
}

/// Asks about every Claude Code session of the last `days` days and re-sends
/// the ones already sent under another name. `progress` is told each step
/// (reading Claude Code's files, then each session of them looked at).
pub fn resend(
    outbox: &mut Outbox,
    host: &Host,
    titles: &Titles,
    days: u32,
    machine: &str,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Resent, OutboxError> {
    let claude = &adapters::claude_code::ClaudeCode;
    let since = protocol::time::now_ms() - i64::from(days) * 86_400_000;
    let mut done = Resent::default();
    let step = |stage, done, total| Progress::new(Work::Titles, stage, done, total, claude.name());
    progress(&step(Stage::Reading, 0, 1));
    let found = claude.backfill(host, since);
    progress(&step(Stage::Reading, 1, 1));
    progress(&step(Stage::Sending, 0, found.len()));
    for (i, past) in found.iter().enumerate() {
        look_at(outbox, titles, past, machine, &mut done)?;
        progress(&step(Stage::Sending, i + 1, found.len()));
    }
    tracing::info!(
        "remote titles: {} sessions asked about, {} named, {} sent again under their name",
        done.asked,
        done.named,
        done.resent
    );
    Ok(done)
}

/// Asks about `past` when it has a claude.ai link, and sends it again when
/// it was sent under another name; `done` counts what happened.
fn look_at(
    outbox: &mut Outbox,
    titles: &Titles,
    past: &Backfilled,
    machine: &str,
    done: &mut Resent,
) -> Result<(), OutboxError> {
    let claude = &adapters::claude_code::ClaudeCode;
    let Some(remote) = titles.remote_id(claude.name(), &past.block) else {
        return Ok(());
    };
    done.asked += 1;
    let Some(title) = titles.ask_past(past, &remote) else {
        return Ok(());
    };
    done.named += 1;
    if resend_one(outbox, past, title, machine)? {
        done.resent += 1;
    }
    Ok(())
}

/// Sends `past` again under `title` when the outbox sent it under another
/// name; remembers the name in its record either way. True when re-sent.
fn resend_one(
    outbox: &mut Outbox,
    past: &Backfilled,
    title: String,
    machine: &str,
) -> Result<bool, OutboxError> {
    let harness = adapters::claude_code::ClaudeCode.name();
    let tx = outbox.begin()?;
    let session = tx
        .given_name(&AcpNames, harness, &past.session_id)?
        .unwrap_or_else(|| past.session_id.clone());
    if !protocol::valid_session_id(&session) || !tx.session_known(harness, &session)? {
        return Ok(false);
    }
    let mut record = tx.load_session(harness, &session)?;
    // What was sent: the files' view (a session only backfilled has an empty
    // record), with whatever live events said over it.
    let mut block = past.block.clone();
    block.merge(&record.block);
    block.machine = block.machine.or_else(|| Some(machine.to_string()));
    let changed = rules::name(&mut block, title.clone());
    let now = protocol::time::now_ms();
    record.remote_title = Some(RemoteTitle {
        title: Some(title),
        asked_ms: now,
    });
    rules::apply(&mut record);
    if changed {
        let env = crate::pipeline::append::backfill_envelope(harness, past, &session, &block);
        tx.append_resent_backfill(&env)?;
    }
    tx.save_session(harness, &session, &record)?;
    tx.commit()?;
    Ok(changed)
}
