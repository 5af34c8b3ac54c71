//! The control side's state (`Control`): its settings, its store, the
//! tokens it checks, and one wake-up per machine for the long-polls this
//! process holds (woken here, and from other receiver processes on the same
//! PostgreSQL through the database's notifications); and the random values
//! and hashes a pairing is made of.
//!
//! This module owns that state and the wake-ups. It must not speak HTTP
//! (`http` does) nor touch a table (the store does).

use super::error::StoreError;
use super::options::ControlOptions;
use super::store::ControlStore;
use crate::db::{Db, Wake};
use crate::owners::Owners;
use crate::request::RequestLog;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::{Notify, watch};

/// One machine's wake-up, for the polls of it this process holds: a message
/// queued, a newer poll, or `off`, here or in another process.
#[derive(Default)]
pub(super) struct Slot {
    pub(super) wake: Notify,
}

type Slots = Arc<Mutex<HashMap<String, Arc<Slot>>>>;

fn lock(slots: &Slots) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Slot>>> {
    slots.lock().unwrap_or_else(|p| p.into_inner())
}

/// The control side's state.
pub struct Control {
    pub(crate) opts: ControlOptions,
    pub(crate) store: ControlStore,
    pub(super) db: Arc<Db>,
    /// Whose a sink token is: the pairing's token, and the machine's events'.
    pub(super) owners: Arc<Owners>,
    /// Where a pairing's link points: the page's origin when it is on (its
    /// passkeys work only there); `None` links to this side's plain page.
    pub(super) page_origin: Option<String>,
    pub(super) log: RequestLog,
    slots: Slots,
    pub(super) stop: watch::Receiver<bool>,
}

impl Control {
    /// The control side over `db`; `stop` turning true ends every poll held.
    /// On PostgreSQL a task listens for the other processes' wake-ups (on the
    /// caller's runtime: call it inside one).
    pub async fn open(
        opts: ControlOptions,
        db: Arc<Db>,
        owners: Arc<Owners>,
        page_origin: Option<String>,
        log: RequestLog,
        stop: watch::Receiver<bool>,
    ) -> Result<Control, StoreError> {
        let slots: Slots = Arc::default();
        if let Some(mut wakes) = db.wakes().await.map_err(StoreError::from)? {
            let (slots, mut stop) = (Arc::clone(&slots), stop.clone());
            tokio::spawn(async move {
                loop {
                    tokio::select! {
                        w = wakes.next() => match w {
                            Wake::Topic(machine) => {
                                if let Some(s) = lock(&slots).get(&machine) {
                                    s.wake.notify_waiters();
                                }
                            }
                            Wake::All => {
                                for s in lock(&slots).values() {
                                    s.wake.notify_waiters();
                                }
                            }
                        },
                        _ = stop.changed() => break,
                    }
                }
            });
        }
        Ok(Control {
            opts,
            store: ControlStore::new(Arc::clone(&db)),
            db,
            owners,
            page_origin,
            log,
            slots,
            stop,
        })
    }

    /// The control settings.
    pub fn options(&self) -> &ControlOptions {
        &self.opts
    }

    pub(super) fn slot(&self, machine: &str) -> Arc<Slot> {
        Arc::clone(lock(&self.slots).entry(machine.to_string()).or_default())
    }

    /// Wakes the machine's polls, in this process and (through the database)
    /// in every other one.
    pub async fn wake(&self, machine: &str) {
        if let Some(s) = lock(&self.slots).get(machine) {
            s.wake.notify_waiters();
        }
        // A lost notification costs a poll its early wake-up, never a message:
        // the message waits in the queue for the machine's next look.
        let _ = self.db.notify(machine).await;
    }

    /// A machine gone (`off`): its polls end, here and elsewhere.
    pub(super) async fn forget_slot(&self, machine: &str) {
        self.wake(machine).await;
        lock(&self.slots).remove(machine);
    }
}

/// The name a file is served under at `{control}/files/{sha256}`: the
/// base64url SHA-256 of its bytes, no padding (a command's `files[].sha256`).
pub fn file_sha256(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(bytes))
}

/// `n` bytes from the OS's random source, base64url.
pub(super) fn random_b64(n: usize) -> String {
    let mut b = vec![0u8; n];
    getrandom::fill(&mut b).expect("the OS has a random source");
    URL_SAFE_NO_PAD.encode(b)
}

/// Six random digits (the pairing's `check`).
pub(super) fn six_digits() -> String {
    let mut b = [0u8; 4];
    getrandom::fill(&mut b).expect("the OS has a random source");
    format!("{:06}", u32::from_le_bytes(b) % 1_000_000)
}

pub(super) fn sha256(s: &str) -> [u8; 32] {
    Sha256::digest(s.as_bytes()).into()
}
