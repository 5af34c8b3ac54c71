//! Sessions as units of work, and the worker that waits for a turn's end.
//!
//! `Busy` says which sessions someone is working on: the ingest thread takes a
//! session for each hook call it handles (and defers a call whose session is
//! taken, so a session's events stay in order while other sessions go on); the
//! hold worker takes it while it re-reads a transcript for a Stop whose words
//! were not in the file yet. Budgets are on `Instant`, a clock that only goes
//! forward (ADAPTERS.md: re-read for 400 ms holding the session, then every
//! 100 ms for 5 s without holding it, then at later hooks for a minute).

use crate::pipeline::append::append_events;
use crate::pipeline::outbox::{Outbox, OutboxError};
use crate::pipeline::reading::{self, LivePaths};
use crate::pipeline::session::Hold;
use crate::state::machine_name::MachineName;
use harness::Adapter;
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// `(harness, session id)`.
pub type SessionKey = (String, String);

/// The sessions someone is working on.
#[derive(Default)]
pub struct Busy {
    set: Mutex<HashSet<SessionKey>>,
    changed: Condvar,
}

impl Busy {
    /// Takes `key` when nobody has it.
    pub fn try_take(&self, key: &SessionKey) -> bool {
        self.set
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key.clone())
    }

    /// Takes `key`, waiting for whoever has it.
    pub fn take(&self, key: &SessionKey) {
        let mut set = self.set.lock().unwrap_or_else(|p| p.into_inner());
        while set.contains(key) {
            set = self.changed.wait(set).unwrap_or_else(|p| p.into_inner());
        }
        set.insert(key.clone());
    }

    pub fn give_back(&self, key: &SessionKey) {
        self.set
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(key);
        self.changed.notify_all();
    }

    /// Waits until some session is given back, or `timeout`.
    pub fn wait(&self, timeout: Duration) {
        let set = self.set.lock().unwrap_or_else(|p| p.into_inner());
        let _ = self.changed.wait_timeout(set, timeout);
    }

    pub fn is_idle(&self) -> bool {
        self.set
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_empty()
    }
}

/// A Stop's turn to wait for: the session stays taken until the worker lets go.
#[derive(Clone, Debug)]
pub struct HoldTask {
    pub key: SessionKey,
    /// The hook event whose turn this is (for `harness.event`).
    pub event: String,
    pub hold: Hold,
    pub since: Instant,
}

const UNDER_LOCK: Duration = Duration::from_millis(400);
const WITHOUT_LOCK: Duration = Duration::from_secs(5);
const FAST_POLL: Duration = Duration::from_millis(25);
const SLOW_POLL: Duration = Duration::from_millis(100);

/// The hold worker: one thread taking `HoldTask`s in turn.
pub struct HoldWorker {
    tx: Sender<HoldTask>,
    pending: Arc<Mutex<usize>>,
}

impl HoldWorker {
    pub fn start(
        outbox: PathBuf,
        busy: Arc<Busy>,
        live: Arc<LivePaths>,
        machine: MachineName,
    ) -> HoldWorker {
        let (tx, rx) = channel::<HoldTask>();
        let pending = Arc::new(Mutex::new(0usize));
        let counter = pending.clone();
        let shared = Shared {
            busy,
            live,
            machine,
        };
        std::thread::Builder::new()
            .name("hold-worker".into())
            .spawn(move || run(rx, outbox, shared, counter))
            .expect("the hold worker starts");
        HoldWorker { tx, pending }
    }

    /// Hands over a task; the task's session must be taken by the caller.
    pub fn submit(&self, task: HoldTask) {
        *self.pending.lock().unwrap_or_else(|p| p.into_inner()) += 1;
        let _ = self.tx.send(task);
    }

    /// True when no task waits or runs.
    pub fn idle(&self) -> bool {
        *self.pending.lock().unwrap_or_else(|p| p.into_inner()) == 0
    }
}

/// What the worker shares with the ingest thread.
struct Shared {
    busy: Arc<Busy>,
    live: Arc<LivePaths>,
    machine: MachineName,
}

fn run(rx: Receiver<HoldTask>, path: PathBuf, shared: Shared, pending: Arc<Mutex<usize>>) {
    let mut outbox = None;
    for task in rx {
        if outbox.is_none() {
            outbox = Outbox::open(&path)
                .map_err(|e| tracing::warn!("hold worker: outbox: {e}"))
                .ok();
        }
        if let Some(ob) = outbox.as_mut() {
            wait_for_turn(ob, &shared, &task);
        } else {
            shared.busy.give_back(&task.key);
        }
        *pending.lock().unwrap_or_else(|p| p.into_inner()) -= 1;
    }
}

/// Re-reads until the turn is sent (by us or by a later hook's read) or the
/// budgets run out. Holds the session for the first 400 ms only.
fn wait_for_turn(ob: &mut Outbox, shared: &Shared, task: &HoldTask) {
    let busy = &shared.busy;
    let Some(adapter) = adapters::lookup(&task.key.0) else {
        busy.give_back(&task.key);
        return;
    };
    let mut holding = true;
    loop {
        let elapsed = task.since.elapsed();
        if holding && elapsed >= UNDER_LOCK {
            busy.give_back(&task.key);
            holding = false;
        }
        if elapsed >= WITHOUT_LOCK {
            break;
        }
        std::thread::sleep(if holding { FAST_POLL } else { SLOW_POLL });
        if !holding {
            busy.take(&task.key);
        }
        let done = append_held_turn(ob, adapter, task, shared).unwrap_or_else(|e| {
            tracing::warn!("hold worker: {e}");
            true
        });
        if !holding {
            busy.give_back(&task.key);
        }
        if done {
            break;
        }
    }
    if holding {
        busy.give_back(&task.key);
    }
}

/// One attempt of the hold worker: reads the transcript for a held turn and
/// appends it when whole. True when there is nothing more to wait for.
fn append_held_turn(
    ob: &mut Outbox,
    adapter: &dyn Adapter,
    task: &HoldTask,
    shared: &Shared,
) -> Result<bool, OutboxError> {
    let (session_id, hold) = (task.key.1.as_str(), &task.hold);
    let tx = ob.begin()?;
    let mut record = tx.load_session(adapter.name(), session_id)?;
    if record.hold.as_ref() != Some(hold) {
        return Ok(true); // a later hook sent it, or a newer turn holds
    }
    record.block.machine = Some(shared.machine.get());
    let path = shared.live.get(adapter.name(), session_id);
    let Some(held) = reading::held_turn(adapter, &mut record, protocol::time::now_ms(), path)
    else {
        return Ok(false);
    };
    record.hold = None;
    tx.put_usage(adapter.name(), session_id, &record.block, &held.usage)?;
    let turns = held.events;
    if !turns.is_empty() {
        append_events(
            &tx,
            adapter,
            session_id,
            &mut record,
            &task.event,
            protocol::time::now_ms(),
            turns,
        )?;
    }
    tx.save_session(adapter.name(), session_id, &record)?;
    tx.commit()?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_taken_session_waits_for_its_holder() {
        let busy = Arc::new(Busy::default());
        let key = ("h".to_string(), "s".to_string());
        assert!(busy.try_take(&key));
        assert!(!busy.try_take(&key));
        let b = busy.clone();
        let k = key.clone();
        let waiter = std::thread::spawn(move || {
            let t = Instant::now();
            b.take(&k);
            t.elapsed()
        });
        std::thread::sleep(Duration::from_millis(50));
        busy.give_back(&key);
        assert!(waiter.join().unwrap() >= Duration::from_millis(40));
        assert!(!busy.is_idle());
        busy.give_back(&key);
        assert!(busy.is_idle());
    }
}
