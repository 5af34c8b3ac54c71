//! The control side of the binding (PROTOCOL-NOTES §6, HTTP.md §3): pairing, the
//! machine calls (hello, the per-machine long-poll, acks, off), and the test
//! doors that stand in for a person at a device (approve a pairing, queue a
//! signed message, read a machine's queue back).
//!
//! This module owns the control settings, the refusals and their statuses, and
//! the state shared by the handlers: the store and one wake-up per machine
//! (woken here, and from other receiver processes on the same PostgreSQL
//! through the database's notifications). It
//! must not sign or verify: the receiver carries keys, proofs and signed commands
//! byte for byte and the machine judges them. A bearer token never authorises a
//! command here either; it only says which machine is asking. Machine tokens and
//! poll keys are kept as SHA-256 hashes, compared in constant time, and never
//! logged.

mod http;
mod owned;
pub(crate) mod shapes;
mod store;

pub(crate) use http::routes;
pub use store::StoreError;

use crate::Invalid;
use crate::db::{Db, Wake};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use store::ControlStore;
use tokio::sync::{Notify, watch};

/// The control endpoint, as the well-known document names it.
pub const CONTROL_PATH: &str = "/v1/control";

/// The control side's settings. `ControlOptions::new(rp_id)` gives the defaults:
/// polls held up to 25 s, no open pairing, no session tools, a `taken` pause of
/// 35 minutes (CONTROL §10), pairings open for 10 minutes, 256 live messages per
/// machine, 64 pairings pending at once.
#[derive(Clone, Debug, PartialEq)]
pub struct ControlOptions {
    /// The WebAuthn rp id devices enrol passkeys for (`localhost` in tests).
    pub rp_id: String,
    /// The longest long-poll held, 1-60 s.
    pub wait_max_s: u64,
    /// `POST {control}/pair` without the sink token, with a `poll_key`.
    pub open_pairing: bool,
    /// MCP servers (`mcp__<server>`) a session answering a message may use
    /// without asking (`control.session_tools`, at most 8).
    pub session_tools: Vec<String>,
    /// How long a `taken` ack pauses redelivery.
    pub taken_pause: Duration,
    /// How long a pairing waits for its approval.
    pub pair_ttl: Duration,
    /// Messages waiting per machine (neither finally acked nor expired).
    pub max_queue: usize,
    /// Pairings pending at once, over all machines.
    pub max_pairings: usize,
}

impl ControlOptions {
    pub fn new(rp_id: impl Into<String>) -> ControlOptions {
        ControlOptions {
            rp_id: rp_id.into(),
            wait_max_s: 25,
            open_pairing: false,
            session_tools: Vec::new(),
            taken_pause: Duration::from_secs(35 * 60),
            pair_ttl: Duration::from_secs(600),
            max_queue: 256,
            max_pairings: 64,
        }
    }

    pub(crate) fn check(&self) -> Result<(), Invalid> {
        let rp = &self.rp_id;
        if rp.is_empty() || rp.len() > 253 || !rp.bytes().all(|c| c.is_ascii_graphic()) {
            return Err("rp_id: 1-253 visible ASCII characters".into());
        }
        if !(1..=60).contains(&self.wait_max_s) {
            return Err("wait_max_s is 1-60".into());
        }
        if self.session_tools.len() > 8 {
            return Err("session_tools: at most 8".into());
        }
        if let Some(t) = self.session_tools.iter().find(|t| !is_mcp_server(t)) {
            return Err(Invalid(format!(
                "session_tools: {t:?} is not mcp__ and 1-64 of [A-Za-z0-9_-]"
            )));
        }
        if self.taken_pause.is_zero() || self.pair_ttl.is_zero() {
            return Err("taken_pause and pair_ttl must be above zero".into());
        }
        if self.max_queue == 0 || self.max_pairings == 0 {
            return Err("max_queue and max_pairings must be at least 1".into());
        }
        Ok(())
    }

    /// The well-known document's `control` member.
    pub(crate) fn discovery(&self) -> serde_json::Value {
        let mut c = serde_json::json!({
            "wait_max_s": self.wait_max_s,
            "signing": {"rp_id": self.rp_id, "algs": [-7, -257]},
            "open_pairing": self.open_pairing,
        });
        if !self.session_tools.is_empty() {
            c["session_tools"] = serde_json::json!(self.session_tools);
        }
        c
    }
}

/// `^mcp__[A-Za-z0-9_-]{1,64}$`.
fn is_mcp_server(t: &str) -> bool {
    t.strip_prefix("mcp__")
        .is_some_and(|s| (1..=64).contains(&s.len()) && shapes::is_b64url(s))
}

/// Why a control request is refused; `http` gives each its status.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    #[error("{0}")]
    Malformed(#[from] shapes::Malformed),
    #[error("unauthorized")]
    Unauthorized,
    #[error("loopback only: the test doors are for local tests")]
    LoopbackOnly,
    #[error("{0}")]
    NotFound(&'static str),
    #[error("the pairing was approved already")]
    AlreadyApproved,
    #[error("the pairing expired")]
    Expired,
    #[error("body over {0} bytes")]
    TooLarge(usize),
    #[error("{0}")]
    Full(&'static str),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// One machine's wake-up, for the polls of it this process holds: a message
/// queued, a newer poll, or `off`, here or in another process.
#[derive(Default)]
struct Slot {
    wake: Notify,
}

type Slots = Arc<Mutex<HashMap<String, Arc<Slot>>>>;

fn lock(slots: &Slots) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Slot>>> {
    slots.lock().unwrap_or_else(|p| p.into_inner())
}

/// The control side's shared state.
pub struct Control {
    pub(crate) opts: ControlOptions,
    pub(crate) store: ControlStore,
    db: Arc<Db>,
    slots: Slots,
    stop: watch::Receiver<bool>,
}

impl Control {
    /// The control side over `db`; `stop` turning true ends every poll held.
    /// On PostgreSQL a task listens for the other processes' wake-ups (on the
    /// caller's runtime: call it inside one).
    pub(crate) async fn open(
        opts: ControlOptions,
        db: Arc<Db>,
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
            slots,
            stop,
        })
    }

    fn slot(&self, machine: &str) -> Arc<Slot> {
        Arc::clone(lock(&self.slots).entry(machine.to_string()).or_default())
    }

    /// Wakes the machine's polls, in this process and (through the database)
    /// in every other one.
    pub(crate) async fn wake(&self, machine: &str) {
        if let Some(s) = lock(&self.slots).get(machine) {
            s.wake.notify_waiters();
        }
        // A lost notification costs a poll its early wake-up, never a message:
        // the message waits in the queue for the machine's next look.
        let _ = self.db.notify(machine).await;
    }

    /// A machine gone (`off`): its polls end, here and elsewhere.
    async fn forget_slot(&self, machine: &str) {
        self.wake(machine).await;
        lock(&self.slots).remove(machine);
    }
}

/// `n` bytes from the OS's random source, base64url.
fn random_b64(n: usize) -> String {
    let mut b = vec![0u8; n];
    getrandom::fill(&mut b).expect("the OS has a random source");
    URL_SAFE_NO_PAD.encode(b)
}

/// Six random digits (the pairing's `check`).
fn six_digits() -> String {
    let mut b = [0u8; 4];
    getrandom::fill(&mut b).expect("the OS has a random source");
    format!("{:06}", u32::from_le_bytes(b) % 1_000_000)
}

fn sha256(s: &str) -> [u8; 32] {
    Sha256::digest(s.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_checked() {
        assert_eq!(ControlOptions::new("localhost").check(), Ok(()));
        let bad = [
            ControlOptions::new(""),
            ControlOptions {
                wait_max_s: 61,
                ..ControlOptions::new("localhost")
            },
            ControlOptions {
                session_tools: vec!["Bash".into()],
                ..ControlOptions::new("localhost")
            },
            ControlOptions {
                session_tools: (0..9).map(|i| format!("mcp__s{i}")).collect(),
                ..ControlOptions::new("localhost")
            },
            ControlOptions {
                max_queue: 0,
                ..ControlOptions::new("localhost")
            },
        ];
        for o in bad {
            assert!(o.check().is_err(), "{o:?}");
        }
        let d = ControlOptions {
            session_tools: vec!["mcp__sessionpipe".into()],
            ..ControlOptions::new("localhost")
        }
        .discovery();
        assert_eq!(d["signing"]["algs"], serde_json::json!([-7, -257]));
        assert_eq!(d["session_tools"][0], "mcp__sessionpipe");
        assert_eq!(six_digits().len(), 6);
        assert_eq!(random_b64(32).len(), 43);
    }
}
