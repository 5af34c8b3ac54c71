//! The accounts a person added to the pool, as the daemon holds them while
//! it runs: each one's sign-in, its standing and windows as last heard, and
//! which session is pinned to which account.
//!
//! It owns choosing an account for a request (`Pool::pick`): a session keeps
//! the account it was pinned to (that account holds its prompt cache) while
//! that account can be used; a new session, or one whose account cannot be
//! used now, goes to the usable account with the most room. An account is
//! usable when it is enabled, its access token is good, it was not told to
//! sign in again, and it is not `rejected` before its reset.
//! It must not talk to the network or read or write a file: sign-ins come in
//! and go out through the caller (`set_tokens`, `Vault`), windows through
//! `observe` and `observe_usage`.

use crate::limits::{self, Observed, Standing};
use crate::oauth::Tokens;
use protocol::LimitWindow;
use std::collections::HashMap;
use std::sync::Mutex;

/// Pins kept at most; past it the least recently used goes (a session that
/// comes back is pinned afresh, to the account with the most room).
pub const MAX_PINS: usize = 4096;

/// A `rejected` answer without a reset keeps the account out this long.
pub const REJECTED_WITHOUT_RESET_MS: i64 = 5 * 60_000;

/// Where the pool's sign-ins are kept (the keychain, or the 0600 file), as
/// the caller implements it. `store` must be durable when it returns: a
/// rotated refresh token is stored before the old one is let go.
pub trait Vault: Send + Sync {
    fn load(&self, account_id: &str) -> Result<Option<Tokens>, VaultError>;
    fn store(&self, account_id: &str, tokens: &Tokens) -> Result<(), VaultError>;
    fn remove(&self, account_id: &str) -> Result<(), VaultError>;
}

/// A vault's failure, in its own words (never a credential).
#[derive(Debug, thiserror::Error)]
#[error("the pool's secrets store: {0}")]
pub struct VaultError(pub String);

/// An account as the person added it (no credential).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Account {
    /// The account's id (Claude's account uuid).
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    pub enabled: bool,
    /// The Claude Code config dir `pool add --import` copied it from: its
    /// sign-in shares a refresh lineage with Claude Code's own there, so the
    /// daemon reads that one again before refreshing (`claude_login`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imported_from: Option<crate::claude_login::Place>,
}

/// What `pool status` and the hello show of one account.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct AccountView {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    pub enabled: bool,
    /// `allowed` · `allowed_warning` · `rejected` · `unknown` (nothing heard
    /// yet) · `sign_in_again` · `no_sign_in` · `expired`.
    pub status: String,
    /// When a `rejected` account is tried again (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
    pub windows: Vec<LimitWindow>,
    /// When the access token expires (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    /// The last refresh's failure, while the token still works.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_error: Option<String>,
    /// The sessions pinned to it, newest first.
    pub sessions: Vec<String>,
}

struct Held {
    account: Account,
    tokens: Option<Tokens>,
    standing: Standing,
    windows: Vec<LimitWindow>,
    rejected_until_ms: Option<i64>,
    sign_in_again: bool,
    refresh_error: Option<String>,
    /// When an answer last carried its limits (ms).
    heard_ms: Option<i64>,
}

impl Held {
    /// Enabled, signed in until later than now and not rejected. A refresh
    /// the server refused (`sign_in_again`) leaves its token good until it
    /// expires: the account is used until then, and says it needs a sign-in.
    fn usable(&self, now_ms: i64) -> bool {
        self.account.enabled
            && self
                .tokens
                .as_ref()
                .is_some_and(|t| t.expires_at_ms > now_ms)
            && self.rejected_until_ms.is_none_or(|u| u <= now_ms)
    }

    /// The share left in its fullest window (100 when nothing is known).
    fn room(&self) -> f64 {
        100.0 - limits::fullest(&self.windows).map_or(0.0, |w| w.used_percent)
    }
}

struct Pin {
    account: String,
    used: u64,
}

#[derive(Default)]
struct Inner {
    held: Vec<Held>,
    pins: HashMap<String, Pin>,
    clock: u64,
}

/// The accounts and pins, shared by the proxy's requests.
#[derive(Default)]
pub struct Pool {
    inner: Mutex<Inner>,
}

/// The account chosen for one request.
pub struct Chosen {
    pub account_id: String,
    /// The access token, for the one `authorization` header.
    pub bearer: String,
}

impl std::fmt::Debug for Chosen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Chosen({}, ..)", self.account_id)
    }
}

/// Why no account could take a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoAccount {
    /// The pool has no enabled account with a good sign-in.
    NoneSignedIn,
    /// Every usable one is `rejected`; the earliest reset (ms).
    AllRejected { until_ms: Option<i64> },
}

impl Pool {
    pub fn new() -> Pool {
        Pool::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds `account` or updates what is known of it (its tokens when given).
    pub fn put(&self, account: Account, tokens: Option<Tokens>) {
        let mut inner = self.lock();
        match inner.held.iter_mut().find(|h| h.account.id == account.id) {
            Some(h) => {
                h.account = account;
                // The same sign-in again changes nothing (a spent one stays
                // known as spent).
                if let Some(t) = tokens.filter(|t| h.tokens.as_ref() != Some(t)) {
                    h.tokens = Some(t);
                    h.sign_in_again = false;
                    h.refresh_error = None;
                }
            }
            None => inner.held.push(Held {
                account,
                tokens,
                standing: Standing::default(),
                windows: Vec::new(),
                rejected_until_ms: None,
                sign_in_again: false,
                refresh_error: None,
                heard_ms: None,
            }),
        }
    }

    /// Drops an account and its pins (`pool remove`).
    pub fn remove(&self, account_id: &str) {
        let mut inner = self.lock();
        inner.held.retain(|h| h.account.id != account_id);
        inner.pins.retain(|_, p| p.account != account_id);
    }

    /// Keeps the accounts `keep` names, adding or updating each; the rest go.
    pub fn replace_all(&self, keep: Vec<(Account, Option<Tokens>)>) {
        let ids: Vec<String> = keep.iter().map(|(a, _)| a.id.clone()).collect();
        for (a, t) in keep {
            self.put(a, t);
        }
        let gone: Vec<String> = self
            .lock()
            .held
            .iter()
            .map(|h| h.account.id.clone())
            .filter(|id| !ids.contains(id))
            .collect();
        for id in gone {
            self.remove(&id);
        }
    }

    /// A refreshed sign-in (already stored in the vault by the caller).
    pub fn set_tokens(&self, account_id: &str, tokens: Tokens) {
        if let Some(h) = self
            .lock()
            .held
            .iter_mut()
            .find(|h| h.account.id == account_id)
        {
            h.tokens = Some(tokens);
            h.sign_in_again = false;
            h.refresh_error = None;
        }
    }

    /// The API answered 401 to the account's bearer: its access token is
    /// taken as expired now, so no request uses it and the refresher renews
    /// it at its next look (a refused refresh then asks for a sign-in).
    pub fn sign_in_refused(&self, account_id: &str, now_ms: i64) {
        if let Some(h) = self
            .lock()
            .held
            .iter_mut()
            .find(|h| h.account.id == account_id)
            && let Some(t) = h.tokens.as_mut()
        {
            t.expires_at_ms = t.expires_at_ms.min(now_ms);
            h.refresh_error = Some("the API refused its sign-in; it is refreshed next".into());
        }
    }

    /// A refresh failed: the account stays usable until its token expires,
    /// and says so; `sign_in_again` when the server refused the refresh token.
    pub fn refresh_failed(&self, account_id: &str, why: String, sign_in_again: bool) {
        if let Some(h) = self
            .lock()
            .held
            .iter_mut()
            .find(|h| h.account.id == account_id)
        {
            h.refresh_error = Some(why);
            h.sign_in_again |= sign_in_again;
        }
    }

    /// The tokens of every enabled account, for the refresher.
    pub fn tokens(&self) -> Vec<(String, Tokens)> {
        self.lock()
            .held
            .iter()
            .filter(|h| h.account.enabled && !h.sign_in_again)
            .filter_map(|h| Some((h.account.id.clone(), h.tokens.clone()?)))
            .collect()
    }

    /// The account for a request of `session` (none: a request no session
    /// made, which is not pinned), pinning the session to it.
    pub fn pick(&self, session: Option<&str>, now_ms: i64) -> Result<Chosen, NoAccount> {
        let mut inner = self.lock();
        inner.clock += 1;
        let clock = inner.clock;
        let pinned = session
            .and_then(|s| inner.pins.get(s))
            .map(|p| p.account.clone());
        let held = &inner.held;
        let load = |id: &str| inner.pins.values().filter(|p| p.account == id).count();
        let index = pinned
            .and_then(|id| {
                held.iter()
                    .position(|h| h.account.id == id && h.usable(now_ms))
            })
            .or_else(|| {
                let mut best: Option<(usize, f64, usize)> = None;
                for (i, h) in held.iter().enumerate() {
                    if !h.usable(now_ms) {
                        continue;
                    }
                    // Most room first; on a tie, the one fewer sessions hold.
                    let (room, n) = (h.room(), load(&h.account.id));
                    if best.is_none_or(|(_, r, m)| room > r || (room == r && n < m)) {
                        best = Some((i, room, n));
                    }
                }
                best.map(|(i, ..)| i)
            });
        let Some(i) = index else {
            return Err(no_account(held, now_ms));
        };
        let account_id = held[i].account.id.clone();
        let bearer = held[i]
            .tokens
            .as_ref()
            .map(|t| t.access.expose().to_string())
            .unwrap_or_default();
        if let Some(s) = session {
            inner.pins.insert(
                s.to_string(),
                Pin {
                    account: account_id.clone(),
                    used: clock,
                },
            );
            if inner.pins.len() > MAX_PINS
                && let Some(oldest) = inner
                    .pins
                    .iter()
                    .min_by_key(|(_, p)| p.used)
                    .map(|(k, _)| k.clone())
            {
                inner.pins.remove(&oldest);
            }
        }
        Ok(Chosen { account_id, bearer })
    }

    /// An answer on `account_id` carried `observed`: its standing and windows
    /// are kept, and a `rejected` one is left out until its reset.
    pub fn observe(&self, account_id: &str, observed: &Observed, now_ms: i64) {
        if observed.is_empty() {
            return;
        }
        let mut inner = self.lock();
        let Some(h) = inner.held.iter_mut().find(|h| h.account.id == account_id) else {
            return;
        };
        if !observed.windows.is_empty() {
            h.windows = observed.windows.clone();
        }
        h.standing = observed.standing.clone();
        h.heard_ms = Some(now_ms);
        h.rejected_until_ms = observed.standing.rejected().then(|| {
            observed
                .standing
                .reset_ms
                .filter(|r| *r > now_ms)
                .unwrap_or(now_ms + REJECTED_WITHOUT_RESET_MS)
        });
    }

    /// When an answer on `account_id` last carried its limits.
    pub fn heard_at(&self, account_id: &str) -> Option<i64> {
        self.lock()
            .held
            .iter()
            .find(|h| h.account.id == account_id)
            .and_then(|h| h.heard_ms)
    }

    /// An idle account's windows, read from the usage endpoint.
    pub fn observe_usage(&self, account_id: &str, windows: Vec<LimitWindow>) {
        if let Some(h) = self
            .lock()
            .held
            .iter_mut()
            .find(|h| h.account.id == account_id)
        {
            h.windows = windows;
        }
    }

    /// The account a session is pinned to.
    pub fn pinned(&self, session: &str) -> Option<String> {
        self.lock().pins.get(session).map(|p| p.account.clone())
    }

    /// Every account as `pool status` shows it.
    pub fn views(&self, now_ms: i64) -> Vec<AccountView> {
        let inner = self.lock();
        inner
            .held
            .iter()
            .map(|h| {
                let mut sessions: Vec<(&String, u64)> = inner
                    .pins
                    .iter()
                    .filter(|(_, p)| p.account == h.account.id)
                    .map(|(s, p)| (s, p.used))
                    .collect();
                sessions.sort_by_key(|s| std::cmp::Reverse(s.1));
                let rejected = h.rejected_until_ms.filter(|u| *u > now_ms);
                let expired = h.tokens.as_ref().is_some_and(|t| t.expires_at_ms <= now_ms);
                let status = if h.tokens.is_none() {
                    "no_sign_in".to_string()
                } else if expired && h.sign_in_again {
                    "sign_in_again".to_string()
                } else if expired {
                    "expired".to_string()
                } else if rejected.is_some() {
                    "rejected".to_string()
                } else {
                    h.standing
                        .status
                        .clone()
                        .filter(|s| s != "rejected")
                        .unwrap_or_else(|| "unknown".to_string())
                };
                AccountView {
                    id: h.account.id.clone(),
                    email: h.account.email.clone(),
                    enabled: h.account.enabled,
                    status,
                    until: rejected.map(protocol::time::rfc3339_ms),
                    windows: h.windows.clone(),
                    expires_at: h
                        .tokens
                        .as_ref()
                        .map(|t| protocol::time::rfc3339_ms(t.expires_at_ms)),
                    refresh_error: h.refresh_error.clone(),
                    sessions: sessions.into_iter().map(|(s, _)| s.clone()).collect(),
                }
            })
            .collect()
    }
}

fn no_account(held: &[Held], now_ms: i64) -> NoAccount {
    let rejected: Vec<i64> = held
        .iter()
        .filter(|h| h.account.enabled)
        .filter(|h| h.tokens.as_ref().is_some_and(|t| t.expires_at_ms > now_ms))
        .filter_map(|h| h.rejected_until_ms.filter(|u| *u > now_ms))
        .collect();
    if rejected.is_empty() {
        NoAccount::NoneSignedIn
    } else {
        NoAccount::AllRejected {
            until_ms: rejected.into_iter().min(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oauth::Secret;

    const NOW: i64 = 1_800_000_000_000;

    fn tokens(access: &str) -> Tokens {
        Tokens {
            access: Secret::new(access.into()),
            refresh: Secret::new(format!("r-{access}")),
            expires_at_ms: NOW + 3_600_000,
        }
    }

    fn account(id: &str) -> Account {
        Account {
            id: id.into(),
            email: None,
            enabled: true,
            imported_from: None,
        }
    }

    fn window(id: &str, used: f64) -> LimitWindow {
        LimitWindow {
            id: id.into(),
            window_minutes: None,
            used_percent: used,
            resets_at: None,
        }
    }

    fn pool_of(ids: &[&str]) -> Pool {
        let p = Pool::new();
        for id in ids {
            p.put(account(id), Some(tokens(&format!("at-{id}"))));
        }
        p
    }

    #[test]
    fn a_session_stays_on_its_account_and_new_ones_spread() {
        let p = pool_of(&["a", "b"]);
        let first = p.pick(Some("s1"), NOW).unwrap();
        let second = p.pick(Some("s2"), NOW).unwrap();
        assert_ne!(
            first.account_id, second.account_id,
            "a tie goes to the emptier"
        );
        assert_eq!(first.bearer, format!("at-{}", first.account_id));
        for _ in 0..5 {
            assert_eq!(
                p.pick(Some("s1"), NOW).unwrap().account_id,
                first.account_id
            );
            assert_eq!(
                p.pick(Some("s2"), NOW).unwrap().account_id,
                second.account_id
            );
        }
        assert_eq!(p.pinned("s1"), Some(first.account_id.clone()));
        assert!(
            !format!("{first:?}").contains("at-"),
            "Debug shows no token"
        );
    }

    #[test]
    fn a_new_session_goes_to_the_account_with_the_most_room() {
        let p = pool_of(&["a", "b"]);
        p.observe_usage("a", vec![window("five_hour", 80.0)]);
        p.observe_usage(
            "b",
            vec![window("five_hour", 10.0), window("seven_day", 30.0)],
        );
        assert_eq!(p.pick(Some("s"), NOW).unwrap().account_id, "b");
        assert_eq!(p.pick(None, NOW).unwrap().account_id, "b");
        assert_eq!(p.pinned("x"), None);
    }

    #[test]
    fn a_rejected_account_is_skipped_until_its_reset() {
        let p = pool_of(&["a", "b"]);
        assert_eq!(p.pick(Some("s"), NOW).unwrap().account_id, "a");
        let rejected = limits::read([
            ("anthropic-ratelimit-unified-status", "rejected"),
            ("anthropic-ratelimit-unified-reset", "1800000600"),
        ]);
        p.observe("a", &rejected, NOW);
        assert_eq!(p.heard_at("a"), Some(NOW));
        assert_eq!(p.heard_at("b"), None);
        // The pinned session moves: a rejected account answers nothing.
        assert_eq!(p.pick(Some("s"), NOW).unwrap().account_id, "b");
        assert_eq!(p.pick(Some("t"), NOW + 1).unwrap().account_id, "b");
        let views = p.views(NOW);
        assert_eq!(views[0].status, "rejected");
        assert_eq!(
            views[0].until.as_deref(),
            Some(protocol::time::rfc3339_ms(NOW + 600_000).as_str())
        );
        p.observe("b", &rejected, NOW);
        assert_eq!(
            p.pick(Some("s"), NOW).unwrap_err(),
            NoAccount::AllRejected {
                until_ms: Some(NOW + 600_000)
            }
        );
        // After the reset both are tried again.
        assert!(p.pick(Some("u"), NOW + 600_000).is_ok());
    }

    #[test]
    fn an_account_without_a_good_sign_in_is_never_chosen() {
        let p = Pool::new();
        assert_eq!(p.pick(None, NOW).unwrap_err(), NoAccount::NoneSignedIn);
        p.put(account("none"), None);
        let mut expired = tokens("old");
        expired.expires_at_ms = NOW;
        p.put(account("expired"), Some(expired));
        p.put(
            Account {
                enabled: false,
                ..account("off")
            },
            Some(tokens("off")),
        );
        let mut spent = tokens("spent");
        spent.expires_at_ms = NOW;
        p.put(account("spent"), Some(spent));
        p.refresh_failed("spent", "invalid_grant".into(), true);
        assert_eq!(p.pick(None, NOW).unwrap_err(), NoAccount::NoneSignedIn);
        let status: Vec<_> = p.views(NOW).into_iter().map(|v| v.status).collect();
        assert_eq!(
            status,
            ["no_sign_in", "expired", "unknown", "sign_in_again"]
        );
        // A refresh token the server refused: its access token is still used
        // until it expires (never refreshed again), and the view says why.
        p.put(account("refused"), Some(tokens("refused")));
        p.refresh_failed("refused", "sign in again (invalid_grant)".into(), true);
        assert_eq!(p.pick(None, NOW).unwrap().account_id, "refused");
        assert!(!p.tokens().iter().any(|(id, _)| id == "refused"));
        let refused = p
            .views(NOW)
            .into_iter()
            .find(|v| v.id == "refused")
            .unwrap();
        assert_eq!(refused.status, "unknown");
        assert!(refused.refresh_error.unwrap().contains("sign in again"));
        p.remove("refused");
        // A refresh that failed but left the token good keeps it usable.
        p.put(account("ok"), Some(tokens("ok")));
        p.refresh_failed("ok", "the server did not answer".into(), false);
        assert_eq!(p.pick(None, NOW).unwrap().account_id, "ok");
        p.set_tokens("spent", tokens("fresh"));
        assert!(p.tokens().iter().any(|(id, _)| id == "spent"));
    }

    #[test]
    fn pins_are_bounded() {
        let p = pool_of(&["a"]);
        for i in 0..MAX_PINS + 10 {
            p.pick(Some(&format!("s{i}")), NOW).unwrap();
        }
        assert_eq!(p.lock().pins.len(), MAX_PINS);
        assert_eq!(p.pinned("s0"), None, "the least recently used went");
        assert!(p.pinned(&format!("s{}", MAX_PINS + 9)).is_some());
        p.remove("a");
        assert!(p.lock().pins.is_empty());
    }
}
