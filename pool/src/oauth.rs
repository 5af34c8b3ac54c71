//! An account's sign-in: its tokens (`Tokens`, each a `Secret`), and (to
//! come in this file) signing an account in and refreshing it.
//!
//! It owns the tokens' type and their one serialised form, for the vault.
//! It must not print, log or serialise a token by any other way.

/// A credential. Not `Display`, not `Serialize`, and its `Debug` shows
/// nothing of it, so no format string can leak it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: String) -> Secret {
        Secret(value)
    }

    /// The value, for the one header or form field it goes into.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// An account's sign-in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tokens {
    pub access: Secret,
    pub refresh: Secret,
    /// When the access token expires (ms since the epoch).
    pub expires_at_ms: i64,
}

impl Tokens {
    /// The vault's form: the only way tokens become text.
    pub fn to_vault_json(&self) -> String {
        serde_json::json!({
            "access": self.access.0,
            "refresh": self.refresh.0,
            "expires_at_ms": self.expires_at_ms,
        })
        .to_string()
    }

    pub fn from_vault_json(text: &str) -> Option<Tokens> {
        let v: serde_json::Value = serde_json::from_str(text).ok()?;
        let s = |k: &str| v.get(k)?.as_str().map(|s| Secret(s.to_string()));
        Some(Tokens {
            access: s("access")?,
            refresh: s("refresh")?,
            expires_at_ms: v.get("expires_at_ms")?.as_i64()?,
        })
    }
}
