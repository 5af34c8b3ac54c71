//! The control side's settings (`ControlOptions`), their bounds, and what
//! the well-known document says of them.
//!
//! This module owns those settings. It must not act on them.

use super::shapes;
use crate::invalid::Invalid;
use std::time::Duration;

/// The control endpoint, as the well-known document names it.
pub const CONTROL_PATH: &str = "/v1/control";

/// The control side's settings. `ControlOptions::new(rp_id)` gives the defaults:
/// polls held up to 25 s, no open pairing, no session tools, a `taken` pause of
/// 35 minutes (CONTROL §10), pairings open for 10 minutes, 256 live messages per
/// machine, 512 pairings pending at once, 8 of them open pairings from any one
/// client.
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
    /// Open pairings (without the sink token) pending at once from one
    /// client (an address, an IPv6 /64): one client cannot fill
    /// `max_pairings`.
    pub pairings_per_client: usize,
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
            max_pairings: 512,
            pairings_per_client: 8,
        }
    }

    pub fn check(&self) -> Result<(), Invalid> {
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
        if self.max_queue == 0 || self.max_pairings == 0 || self.pairings_per_client == 0 {
            return Err(
                "max_queue, max_pairings and pairings_per_client must be at least 1".into(),
            );
        }
        Ok(())
    }

    /// The well-known document's `control` member.
    pub fn discovery(&self) -> serde_json::Value {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::state::{random_b64, six_digits};

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
            ControlOptions {
                pairings_per_client: 0,
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
