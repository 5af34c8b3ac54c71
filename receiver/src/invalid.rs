//! Layer 1, invalid: why what the receiver was given (its options, a webhook
//! secret, a fault for the fault door) cannot be used; the words say which
//! part.
//!
//! This module owns that one error type, so that every layer may refuse its
//! own settings with it. It must not hold a secret in its words.

/// Why what the receiver was given cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invalid(pub String);

impl std::fmt::Display for Invalid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Invalid {}

impl From<&str> for Invalid {
    fn from(s: &str) -> Self {
        Invalid(s.to_string())
    }
}
