//! The titles worker: runs remote titles' live asks (ADAPTERS.md, Claude Code
//! row, Facts) away from the ingest loop, so a slow or silent claude.ai holds
//! the one session asked about and never the batch every session rides in.
//!
//! How a due ask moves, and why no event is lost, doubled or reordered:
//! ingest finds an ask due (`titles::around_call`) on a hook call of a
//! session it has taken (`Busy`), puts that call back as it found it (the job
//! stays in the spool, uncommitted, like a call whose session is taken) and,
//! once its batch commits, hands the ask here with the session still taken.
//! The worker runs the ask (HTTP, bounded at 3 s) on a thread of its own,
//! keeps what it heard, and only then gives the session back. Ingest then
//! takes the same call again: it finds the answer (`take`), keeps it in the
//! session's record, is no longer due, and appends the call's events, under
//! the name, in its own transaction. So the name lands on the events of the
//! very call that asked, in the transaction that commits them, and the only
//! thing that waits for the network is that one session (the worker holds
//! its lock, as the spec says); every other session goes on meanwhile.
//!
//! It owns running asks and holding their answers until their session's next
//! call takes them. It must not open the outbox or write a session's record
//! (ingest is the only writer of a call's events and of what they change),
//! must not read a sign-in or speak HTTP itself (the ask is handed in, made
//! by the layer above), and must give every session it is handed back, an
//! ask that panics included. An answer lives in memory only: a daemon that
//! stops before the call is taken again loses it, and the next start asks
//! again (the call itself is still in the spool).

use crate::pipeline::holds::{Busy, SessionKey};
use crate::pipeline::titles::{Heard, LiveAsk};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};

/// An ask for one session, whose `Busy` the submitter holds and hands over.
pub struct TitleTask {
    pub key: SessionKey,
    /// The asking call's clock (the schedule's).
    pub asked_ms: i64,
    pub ask: LiveAsk,
}

/// The worker: one thread taking `TitleTask`s, each ask run on a thread of
/// its own so one slow answer never delays another session's ask.
pub struct TitleWorker {
    tx: Sender<TitleTask>,
    shared: Arc<Shared>,
}

/// What the worker shares with ingest.
struct Shared {
    busy: Arc<Busy>,
    /// Answers heard, by session, until the session's next call takes them.
    answers: Mutex<HashMap<SessionKey, Heard>>,
    /// Asks handed over and not yet answered.
    asking: AtomicUsize,
}

impl TitleWorker {
    /// Starts the worker's thread; an error when the system has none to give
    /// (the caller then asks nothing).
    pub fn start(busy: Arc<Busy>) -> std::io::Result<TitleWorker> {
        let (tx, rx) = channel::<TitleTask>();
        let shared = Arc::new(Shared {
            busy,
            answers: Mutex::default(),
            asking: AtomicUsize::new(0),
        });
        let theirs = shared.clone();
        std::thread::Builder::new()
            .name("titles-worker".into())
            .spawn(move || run(rx, theirs))?;
        Ok(TitleWorker { tx, shared })
    }

    /// Hands over an ask; its session must be taken by the caller, and is
    /// given back once the answer is kept.
    pub fn submit(&self, task: TitleTask) {
        self.shared.asking.fetch_add(1, Ordering::SeqCst);
        if let Err(back) = self.tx.send(task) {
            // The worker is gone: heard nothing, so the call goes on under
            // the name it had and the schedule asks again later.
            let task = back.0;
            self.shared.answered(&task.key, None, task.asked_ms);
        }
    }

    /// What the last ask about `key` heard, once (for the session's call
    /// being taken again).
    pub fn take(&self, key: &SessionKey) -> Option<Heard> {
        let mut answers = self
            .shared
            .answers
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if answers.is_empty() {
            return None;
        }
        answers.remove(key)
    }

    /// True while some ask is handed over and not yet answered.
    pub fn asking(&self) -> bool {
        self.shared.asking.load(Ordering::SeqCst) > 0
    }
}

fn run(rx: Receiver<TitleTask>, shared: Arc<Shared>) {
    for task in rx {
        let (key, asked_ms) = (task.key.clone(), task.asked_ms);
        let theirs = shared.clone();
        let spawned = std::thread::Builder::new()
            .name("titles-ask".into())
            .spawn(move || ask(task, &theirs));
        if let Err(e) = spawned {
            // No thread for it: the ask is dropped unasked, and the session
            // goes back at once rather than wait behind this loop.
            tracing::warn!("remote titles: no thread to ask with ({e})");
            shared.answered(&key, None, asked_ms);
        }
    }
}

/// Runs one ask and keeps what it heard; the session goes back either way.
fn ask(task: TitleTask, shared: &Shared) {
    let TitleTask { key, asked_ms, ask } = task;
    let title = std::panic::catch_unwind(std::panic::AssertUnwindSafe(ask)).unwrap_or_else(|_| {
        tracing::warn!("remote titles: an ask about a {} session panicked", key.0);
        None
    });
    shared.answered(&key, title, asked_ms);
}

impl Shared {
    /// Keeps an answer, then gives its session back: in that order, so the
    /// call ingest takes next finds it.
    fn answered(&self, key: &SessionKey, title: Option<String>, asked_ms: i64) {
        self.answers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key.clone(), Heard { title, asked_ms });
        self.asking.fetch_sub(1, Ordering::SeqCst);
        self.busy.give_back(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn an_answer_is_kept_before_its_session_goes_back_and_is_taken_once() {
        let busy = Arc::new(Busy::default());
        let worker = TitleWorker::start(busy.clone()).unwrap();
        let (slow, other) = (
            ("h".to_string(), "slow".to_string()),
            ("h".to_string(), "other".to_string()),
        );
        let (go, gate) = std::sync::mpsc::channel::<()>();
        let gate = Mutex::new(gate);
        assert!(busy.try_take(&slow) && busy.try_take(&other));
        worker.submit(TitleTask {
            key: slow.clone(),
            asked_ms: 7,
            ask: Box::new(move || {
                let _ = gate.lock().unwrap().recv_timeout(Duration::from_secs(20));
                Some("Slow".into())
            }),
        });
        worker.submit(TitleTask {
            key: other.clone(),
            asked_ms: 8,
            ask: Box::new(|| panic!("an ask that fails")),
        });
        // The other session comes back while the slow one is still asked.
        busy.take(&other);
        assert!(worker.asking());
        assert!(!busy.try_take(&slow), "still held by its ask");
        assert_eq!(
            worker.take(&other),
            Some(Heard {
                title: None,
                asked_ms: 8
            }),
            "a panicked ask heard nothing and gave its session back"
        );
        go.send(()).unwrap();
        busy.take(&slow);
        assert!(!worker.asking());
        assert_eq!(
            worker.take(&slow),
            Some(Heard {
                title: Some("Slow".into()),
                asked_ms: 7
            })
        );
        assert_eq!(worker.take(&slow), None, "taken once");
    }
}
