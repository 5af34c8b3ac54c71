//! Appending a call's events: the session rules, the stamp every envelope
//! carries, `secrets@1` over each envelope, then the outbox.
//!
//! Both writers of events use it (the ingest thread and the hold worker, and
//! `forget` for its one event), so the rules run the same way on every path.
//! It updates the session's record but never saves it or commits: the caller
//! owns the transaction.

use crate::pipeline::outbox::{OutboxError, OutboxTx};
use crate::pipeline::reading;
use crate::pipeline::session::{self, SessionRecord, Stamp};
use harness::Adapter;
use protocol::EventData;

/// What one call's append did to the session's attentions (control releases a
/// waiting hook when its attention closes).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Appended {
    pub count: usize,
    /// Attentions this call opened.
    pub opened: Vec<String>,
    /// Attentions this call closed (by the session's next event or a clear).
    pub cleared: Vec<String>,
}

/// Applies the session rules to `events`, stamps and redacts them, and appends
/// them; `record` is updated, not saved.
pub fn append_events(
    tx: &OutboxTx<'_>,
    adapter: &dyn Adapter,
    session_id: &str,
    record: &mut SessionRecord,
    harness_event: &str,
    time_ms: i64,
    events: Vec<EventData>,
) -> Result<Appended, OutboxError> {
    let mut events = events;
    if let Some(beat) = session::heartbeat_due(record, &events, time_ms) {
        events.insert(0, beat);
    }
    let events = session::apply_rules(record, events);
    reading::track_running_turn(record, &events);
    record.saw(&events, time_ms);
    let stamp = Stamp {
        harness: adapter.name(),
        harness_event: Some(harness_event),
        version: record.version.as_deref(),
        session_id,
        block: &record.block,
        time_ms,
    };
    let mut done = Appended {
        count: events.len(),
        ..Default::default()
    };
    for event in events {
        match &event {
            EventData::AttentionNeeded(a) => done.opened.push(a.attention_id.clone()),
            EventData::AttentionCleared(c) => done.cleared.push(c.attention_id.clone()),
            _ => {}
        }
        tx.append(&mut stored_envelope(&stamp, 0, event))?;
    }
    Ok(done)
}

/// An event as the outbox keeps it: stamped, through `secrets@1`, then fitted
/// to the schema (after the scrub: a redacted string can be longer). Every
/// envelope sessionpipe stores is made here.
pub fn stored_envelope(stamp: &Stamp<'_>, seq: u64, event: EventData) -> protocol::Envelope {
    let mut env = session::envelope(stamp, seq, event);
    crate::pipeline::scrub::envelope(&mut env);
    env.session.fit();
    env
}

/// The `session.backfill` (seq 0) of a past session, under `session` with
/// `block`: what a backfill stores, and a re-send under a new name.
pub fn backfill_envelope(
    harness: &str,
    past: &harness::backfill::Backfilled,
    session: &str,
    block: &protocol::SessionBlock,
) -> protocol::Envelope {
    let stamp = Stamp {
        harness,
        harness_event: None,
        version: past.version.as_deref(),
        session_id: session,
        block,
        time_ms: past.last_ms,
    };
    let event = EventData::SessionBackfill(protocol::SessionBackfill {
        started_at: protocol::time::rfc3339_ms(past.started_ms),
        last_at: protocol::time::rfc3339_ms(past.last_ms),
        turns: past.turns,
    });
    stored_envelope(&stamp, 0, event)
}
