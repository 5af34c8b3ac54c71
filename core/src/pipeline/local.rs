//! Events the daemon adds to a session itself, beside its hooks' ones:
//! control's `turn.progress` while a run it started streams its reply (tier
//! 2). They go through the same session rules, redaction and stamping as a
//! hook's, written while the session is taken from ingest (its `Busy`), so
//! they sit in `seq` order among the session's own events.
//!
//! Only for a session its hooks already started: an event of ours never opens
//! a session (a synthesized `session.started` ahead of the harness's own would
//! be a second one). Never written where no destination takes tier 2.

use crate::pipeline::append::append_events;
use crate::pipeline::holds::Busy;
use crate::pipeline::outbox::{Outbox, OutboxError};
use crate::state::machine_name::MachineName;
use protocol::EventData;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// The harness event name our own events carry.
pub const LOCAL_EVENT: &str = "sessionpipe:control";

pub struct LocalEvents {
    busy: Arc<Busy>,
    path: PathBuf,
    machine: MachineName,
    outbox: Mutex<Option<Outbox>>,
    /// Called after each append that wrote (a reader that follows the outbox).
    rung: Option<Box<dyn Fn() + Send + Sync>>,
}

impl LocalEvents {
    pub(crate) fn new(busy: Arc<Busy>, path: PathBuf, machine: MachineName) -> LocalEvents {
        LocalEvents {
            busy,
            path,
            machine,
            outbox: Mutex::default(),
            rung: None,
        }
    }

    /// Calls `ring` after each append that wrote, as ingest's commits ring
    /// theirs (the pool's `limits.observed` wake `pace`).
    pub fn ring_after_append(mut self, ring: impl Fn() + Send + Sync + 'static) -> LocalEvents {
        self.rung = Some(Box::new(ring));
        self
    }

    /// Appends `events` to `harness`'s session `session`; false when the
    /// session is not one its hooks started (nothing is written then).
    /// Blocking: it waits for ingest to give the session back.
    pub fn append(
        &self,
        harness: &str,
        session: &str,
        events: Vec<EventData>,
    ) -> Result<bool, OutboxError> {
        let Some(adapter) = adapters::lookup(harness) else {
            return Ok(false);
        };
        let key = (harness.to_string(), session.to_string());
        self.busy.take(&key);
        let done = self.append_taken(adapter, session, events);
        self.busy.give_back(&key);
        if let (Ok(true), Some(ring)) = (&done, &self.rung) {
            ring();
        }
        done
    }

    fn append_taken(
        &self,
        adapter: &dyn harness::Adapter,
        session: &str,
        events: Vec<EventData>,
    ) -> Result<bool, OutboxError> {
        let mut guard = self.outbox.lock().unwrap_or_else(|p| p.into_inner());
        if guard.is_none() {
            *guard = Some(Outbox::open(&self.path)?);
        }
        let ob = guard.as_mut().expect("opened above");
        let tx = ob.begin()?;
        let mut record = tx.load_session(adapter.name(), session)?;
        if !record.started || record.ended {
            return Ok(false);
        }
        record.block.machine = Some(self.machine.get());
        let now = protocol::time::now_ms();
        append_events(&tx, adapter, session, &mut record, LOCAL_EVENT, now, events)?;
        tx.save_session(adapter.name(), session, &record)?;
        tx.commit()?;
        Ok(true)
    }
}
