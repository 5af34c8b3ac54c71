//! The events side's state (`Events`): its settings, the database and the
//! sink tokens it stores under, who to tell of an attention, the request
//! log, and its counters.
//!
//! This module owns that state. It must not speak HTTP (`batch` does).

use crate::db::{Db, DbError};
use crate::notify::Notifier;
use crate::owners::Owners;
use crate::request::RequestLog;
use crate::store;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The events endpoint, as the well-known document names it.
pub const EVENTS_PATH: &str = "/v1/events";

/// The events side's settings, fixed at start.
pub struct Settings {
    /// 0–3: events above it refuse their batch with 403 `tier_above_max`.
    pub max_tier: u8,
    /// 1–50 events per batch.
    pub max_events: usize,
    /// 1 024–262 144 bytes per batch body.
    pub max_bytes: usize,
    /// The key of a `whsec_…` secret: every batch must then be signed.
    pub webhook_key: Option<Vec<u8>>,
}

/// Counters since start (`posts` counts every event POST, faults included) and
/// what is stored now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub posts: u64,
    pub accepted: u64,
    pub duplicates: u64,
    pub rejected: u64,
    pub sessions: usize,
    pub events: usize,
}

#[derive(Default)]
pub(super) struct Counters {
    pub(super) posts: AtomicU64,
    pub(super) accepted: AtomicU64,
    pub(super) duplicates: AtomicU64,
    pub(super) rejected: AtomicU64,
}

/// The events side's state.
pub struct Events {
    pub(crate) settings: Settings,
    pub(crate) db: Arc<Db>,
    pub(crate) owners: Arc<Owners>,
    /// Tells devices of the attentions stored, when the page is on.
    pub(super) notifier: Option<Arc<Notifier>>,
    pub(super) log: RequestLog,
    pub(super) counters: Counters,
    /// The fault door's armed answer.
    #[cfg(feature = "test-doors")]
    pub(super) fault: std::sync::Mutex<Option<super::fault::Fault>>,
}

impl Events {
    pub fn new(
        settings: Settings,
        db: Arc<Db>,
        owners: Arc<Owners>,
        notifier: Option<Arc<Notifier>>,
        log: RequestLog,
    ) -> Events {
        Events {
            settings,
            db,
            owners,
            notifier,
            log,
            counters: Counters::default(),
            #[cfg(feature = "test-doors")]
            fault: std::sync::Mutex::new(None),
        }
    }

    /// Events stored since start, from the counter alone: no database read.
    pub fn accepted(&self) -> u64 {
        self.counters.accepted.load(Ordering::Relaxed)
    }

    pub async fn stats(&self) -> Result<Stats, DbError> {
        let (sessions, events) = store::counts(&self.db).await?;
        let c = &self.counters;
        Ok(Stats {
            posts: c.posts.load(Ordering::Relaxed),
            accepted: c.accepted.load(Ordering::Relaxed),
            duplicates: c.duplicates.load(Ordering::Relaxed),
            rejected: c.rejected.load(Ordering::Relaxed),
            sessions,
            events,
        })
    }
}
