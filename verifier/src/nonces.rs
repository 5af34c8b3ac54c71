//! The nonce store the verifier records into, as a trait the caller brings
//! (the daemon's is durable; a crash must not forget a nonce), and a plain
//! in-memory one for tests, vectors and a receiver's early word.

use crate::refusal::NonceStoreError;
use std::collections::HashMap;

/// How long a nonce stays remembered: a command is refused once signed over
/// 24 hours ago, so 25 hours covers it with room for clock skew.
pub const NONCE_WINDOW_MS: i64 = 25 * 60 * 60 * 1000;

/// Whether the nonce was new when recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recorded {
    New,
    Seen,
}

/// Where used nonces are kept. `record` must be atomic (seen-or-insert in one
/// step) and durable before it returns `New`: the command runs right after.
pub trait NonceStore {
    /// Records `nonce` of a command signed at `iat_ms`, judged at `now_ms`;
    /// says whether it was seen within the window before.
    fn record(
        &mut self,
        nonce: &str,
        iat_ms: i64,
        now_ms: i64,
    ) -> Result<Recorded, NonceStoreError>;
}

/// Nonces in memory, each kept until its command's `iat` is a window old.
#[derive(Clone, Debug, Default)]
pub struct MemoryNonces(HashMap<String, i64>);

impl MemoryNonces {
    pub fn new() -> Self {
        Self::default()
    }

    /// A store that has already seen `nonces` (signed at `iat_ms`).
    pub fn with_seen<'a>(nonces: impl IntoIterator<Item = &'a str>, iat_ms: i64) -> Self {
        MemoryNonces(
            nonces
                .into_iter()
                .map(|n| (n.to_string(), iat_ms))
                .collect(),
        )
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl NonceStore for MemoryNonces {
    fn record(
        &mut self,
        nonce: &str,
        iat_ms: i64,
        now_ms: i64,
    ) -> Result<Recorded, NonceStoreError> {
        self.0
            .retain(|_, iat| now_ms.saturating_sub(*iat) <= NONCE_WINDOW_MS);
        if self.0.contains_key(nonce) {
            return Ok(Recorded::Seen);
        }
        self.0.insert(nonce.to_string(), iat_ms);
        Ok(Recorded::New)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nonce_counts_once_within_the_window() {
        let mut store = MemoryNonces::new();
        assert_eq!(store.record("n1", 1_000, 2_000), Ok(Recorded::New));
        assert_eq!(store.record("n1", 1_000, 3_000), Ok(Recorded::Seen));
        assert_eq!(store.record("n2", 1_000, 3_000), Ok(Recorded::New));
        assert_eq!(store.len(), 2);
    }

    #[test]
    fn forgets_after_the_window() {
        let mut store = MemoryNonces::with_seen(["old"], 0);
        assert_eq!(store.record("old", 0, NONCE_WINDOW_MS), Ok(Recorded::Seen));
        assert_eq!(
            store.record("x", NONCE_WINDOW_MS, NONCE_WINDOW_MS + 1),
            Ok(Recorded::New)
        );
        assert_eq!(store.len(), 1, "the old one is gone");
    }
}
