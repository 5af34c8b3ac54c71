//! The ACP agents this daemon holds, one per session (by `<harness>:<name>`),
//! with what a turn needs of each: the agent's own session id, the lock that
//! keeps its turns one at a time, when it was last used. Only the map and its
//! entries; `acp` decides what runs, and when an idle one is ended.

use sessionpipe_acp::Agent;
use sessionpipe_verifier::SessionRef;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The sessions this daemon holds an agent process for.
#[derive(Default)]
pub struct AcpSessions {
    pub(super) held: Mutex<HashMap<SessionRef, Arc<Held>>>,
}

pub(super) struct Held {
    pub(super) agent: Agent,
    /// The agent's own session id.
    pub(super) session: String,
    /// One turn at a time.
    pub(super) turn: tokio::sync::Mutex<()>,
    pub(super) used: Mutex<tokio::time::Instant>,
}

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl AcpSessions {
    pub(super) fn get(&self, session: &SessionRef) -> Option<Arc<Held>> {
        lock(&self.held).get(session).cloned()
    }

    pub(super) fn forget(&self, session: &SessionRef) -> Option<Arc<Held>> {
        lock(&self.held).remove(session)
    }
}
