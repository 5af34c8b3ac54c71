//! The pool's side of the daemon: while the person has the pool on, the
//! loopback listener (127.0.0.1 only, its token checked on every request);
//! for every account added, its sign-in refreshed before it expires and its
//! windows read from the usage endpoint while idle; and each session's
//! `limits.observed` from the answers to its own requests.
//!
//! It owns the daemon's schedule for those: `pool.json` looked at every
//! `LOOK` (so `pool on|off|add|remove|enable|disable` need no restart), a
//! refresh within `oauth::REFRESH_MARGIN_MS` of expiry with the rotated sign-in stored
//! before it is used (and before the old one is let go), usage at most every
//! `usage::MIN_INTERVAL` per account and at once after it is added, enabled or
//! refreshed. It must not write a harness's file (`pool on` does, at the
//! person's command) nor keep or log a request, an answer or a credential.
//!
//! Refreshes and a daemon killed at any point. The token server rotates the
//! refresh token on every refresh. The pair it answers is stored (the
//! keychain, or the secrets file by a temp file and a rename) before the pool
//! bears it; a pair that could not be stored is kept in memory and stored at
//! the next look, never refreshed again meanwhile (its old refresh token is
//! spent). A daemon killed after the server rotated but before the store
//! (the answer still on the wire) restarts with the old pair, which is still
//! due (a refresh happens only when due, and due stays due): the first look,
//! at start, refreshes it again, within the few seconds in which a rotating
//! server takes a just-spent refresh token again and answers the same pair.
//! A refresh that fails leaves the account usable until its access token
//! expires, with `refresh_error` in `pool-status.json` saying why; one the
//! server refused (`invalid_grant`) asks for a new sign-in.
//!
//! An imported account (`pool add --import`) shares its refresh lineage with
//! Claude Code's own sign-in in its config dir: before refreshing one, the
//! daemon reads Claude Code's copy again and, when it holds another sign-in
//! of the same account that expires later (Claude Code refreshed it, which
//! spent the pool's copy), stores and takes that one instead. Claude Code's
//! file is never written.
//!
//! `SESSIONPIPE_POOL_LOOK_MS` (tests only; `doctor` notes it, the daemon
//! warns) sets `LOOK` in milliseconds, so a test can go through many
//! refreshes quickly.

use super::store::{PoolFile, SecretsVault};
use crate::pipeline::local::LocalEvents;
use crate::state::live_config::LiveConfig;
use protocol::{AttentionKind, AttentionNeeded, EventData, LimitsObserved};
use sessionpipe_pool::accounts::{Account, AccountView, Pool, Vault, VaultError};
use sessionpipe_pool::claude_login;
use sessionpipe_pool::limits::Observed;
use sessionpipe_pool::oauth::{self, OAuthError, Tokens};
use sessionpipe_pool::proxy::{Observer, Proxy};
use sessionpipe_pool::{endpoints, usage};
use spool::StatePaths;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

/// The harness whose sessions the pool serves.
const CLAUDE_CODE: &str = "claude-code";
/// How often `pool.json` is looked at (and sign-ins due are refreshed).
const LOOK: Duration = Duration::from_secs(2);
/// The test-only setting of `LOOK`, in milliseconds.
pub const LOOK_VAR: &str = "SESSIONPIPE_POOL_LOOK_MS";

/// `LOOK`, or the test setting (at least 10 ms) when it is set.
fn look() -> Duration {
    match std::env::var(LOOK_VAR)
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        Some(ms) => {
            let ms = ms.max(10);
            tracing::warn!("{LOOK_VAR} is set: the pool looks every {ms} ms (for tests only)");
            Duration::from_millis(ms)
        }
        None => LOOK,
    }
}

/// What an attention about a session's account nearing a limit starts
/// with (`notify` words it as such).
pub const LIMIT_ATTENTION: &str = "pool-limit:";

/// Sessions whose last `limits.observed` is remembered (to send one only
/// when something changed); past it the oldest half is forgotten.
const REMEMBERED: usize = 4096;

/// What the running daemon last heard of each account, for `pool status`
/// and the UI (`pool-status.json`, 0600: ids, emails, windows and session
/// ids, no credential).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Snapshot {
    pub at_ms: i64,
    pub accounts: Vec<AccountView>,
}

impl Snapshot {
    pub fn path(paths: &StatePaths) -> std::path::PathBuf {
        paths.root.join("pool-status.json")
    }

    pub fn load(paths: &StatePaths) -> Option<Snapshot> {
        crate::state::file::load(&Snapshot::path(paths))
            .ok()
            .flatten()
    }
}

/// The running pool (its accounts live in the supervisor's task).
pub struct PoolService {
    task: tokio::task::JoinHandle<()>,
}

impl PoolService {
    /// Starts watching `pool.json`. Nothing listens and nothing is read until
    /// the file says so. `events` is where a session's limits go.
    /// `config` is the settings in force (the alert's percent).
    pub fn start(paths: &StatePaths, config: LiveConfig, events: Arc<LocalEvents>) -> PoolService {
        let observer: Arc<dyn Observer> = Arc::new(SessionLimits::start(config, events));
        let task = tokio::spawn(supervise(paths.clone(), Arc::new(Pool::new()), observer));
        PoolService { task }
    }

    pub fn stop(self) {
        self.task.abort();
    }
}

/// What the supervisor keeps between looks.
struct Running {
    /// `pool.json` as last read, and its modification time and length then:
    /// a new stamp is a command since (even one that left the text as it
    /// was, `add --import` again with a new sign-in).
    seen: Option<PoolFile>,
    stamp: Option<(std::time::SystemTime, u64)>,
    listener: Option<(u16, tokio::sync::oneshot::Sender<()>)>,
    /// When each account's usage was last read (ms).
    usage_read: HashMap<String, i64>,
    /// The accounts as `pool-status.json` last said them.
    said: Option<Vec<AccountView>>,
    /// Refreshed sign-ins the vault did not take yet: stored at the next
    /// look, and only then used (their old refresh tokens are spent).
    unstored: HashMap<String, Tokens>,
}

async fn supervise(paths: StatePaths, pool: Arc<Pool>, observer: Arc<dyn Observer>) {
    // The proxy's client has no deadline on a whole answer (a turn streams
    // for minutes); sign-in calls and usage reads get the OAuth client's.
    let client = sessionpipe_pool::proxy::client();
    let oauth = oauth::client();
    let vault = Arc::new(SecretsVault::new(&paths));
    let mut running = Running {
        seen: None,
        stamp: None,
        listener: None,
        usage_read: HashMap::new(),
        said: None,
        unstored: HashMap::new(),
    };
    let look = look();
    // The first look is at once: a refresh a killed daemon may have lost is
    // made again while the server still takes the spent token.
    loop {
        let stamp = std::fs::metadata(paths.pool())
            .ok()
            .and_then(|m| Some((m.modified().ok()?, m.len())));
        if stamp != running.stamp {
            let p = paths.clone();
            match crate::runtime::blocking(move || PoolFile::load(&p)).await {
                Ok(file) => {
                    reconcile(&pool, &vault, &observer, &client, &mut running, file).await;
                    running.stamp = stamp;
                }
                Err(e) => tracing::warn!("pool: {e}"),
            }
        }
        refresh_due(&pool, &vault, &oauth, &mut running).await;
        read_usage(&pool, &oauth, &mut running).await;
        say(&paths, &pool, &mut running).await;
        tokio::time::sleep(look).await;
    }
}

/// Writes `pool-status.json` when what it says changed (nothing is
/// written for a pool nobody added an account to).
async fn say(paths: &StatePaths, pool: &Arc<Pool>, running: &mut Running) {
    let now = protocol::time::now_ms();
    let views = pool.views(now);
    if running.said.as_ref() == Some(&views) || (views.is_empty() && running.said.is_none()) {
        return;
    }
    let snapshot = Snapshot {
        at_ms: now,
        accounts: views.clone(),
    };
    let path = Snapshot::path(paths);
    match crate::runtime::blocking(move || crate::state::file::save(&path, &snapshot)).await {
        Ok(()) => running.said = Some(views),
        Err(e) => tracing::warn!("pool: {e}"),
    }
}

/// Brings the accounts and the listener in line with `file`.
async fn reconcile(
    pool: &Arc<Pool>,
    vault: &Arc<SecretsVault>,
    observer: &Arc<dyn Observer>,
    client: &reqwest::Client,
    running: &mut Running,
    file: PoolFile,
) {
    let before = running.seen.take().unwrap_or_default();
    let mut keep = Vec::new();
    for account in &file.accounts {
        // Read again at every command: one may have replaced it (`add
        // --import` again). The pool takes it only when it differs.
        let (v, id) = (vault.clone(), account.id.clone());
        let tokens = match crate::runtime::blocking(move || v.load(&id)).await {
            Ok(t) => t,
            Err(e) => {
                tracing::warn!("pool: {e}");
                None
            }
        };
        if before.account(&account.id) != Some(account) && account.enabled {
            // Added or enabled: its usage is read at once.
            running.usage_read.remove(&account.id);
        }
        keep.push((account.clone(), tokens));
    }
    pool.replace_all(keep);
    running
        .usage_read
        .retain(|id, _| file.account(id).is_some());
    running.unstored.retain(|id, _| file.account(id).is_some());

    let want = file.on.then_some(file.port).flatten();
    let have = running.listener.as_ref().map(|(p, _)| *p);
    if want != have {
        if let Some((port, stop)) = running.listener.take() {
            let _ = stop.send(());
            tracing::info!("pool: the listener on 127.0.0.1:{port} stopped");
        }
        if let Some(port) = want {
            let token = {
                let v = vault.clone();
                crate::runtime::blocking(move || v.listener_token()).await
            };
            match token {
                Ok(token) => match listen(port, token, pool, observer, client).await {
                    Ok(stop) => running.listener = Some((port, stop)),
                    Err(e) => tracing::warn!(
                        "pool: cannot listen on 127.0.0.1:{port}: {e} (Claude Code's requests \
                         fail until it can; `sessionpipe pool off` puts its settings back)"
                    ),
                },
                Err(e) => tracing::warn!("pool: {e}"),
            }
        }
    }
    running.seen = Some(file);
}

/// Serves the proxy on 127.0.0.1:`port` until the sender is used or dropped.
async fn listen(
    port: u16,
    token: String,
    pool: &Arc<Pool>,
    observer: &Arc<dyn Observer>,
    client: &reqwest::Client,
) -> std::io::Result<tokio::sync::oneshot::Sender<()>> {
    // Loopback only, whatever anyone asks: the pool is this person's.
    let listener = tokio::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, port)).await?;
    let proxy = Proxy::new(
        token,
        endpoints::api_base(),
        client.clone(),
        pool.clone(),
        observer.clone(),
    );
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(sessionpipe_listener::serve(
        listener,
        proxy.router(),
        sessionpipe_listener::Limits::POOL,
        async move {
            let _ = stopped.await;
        },
    ));
    tracing::info!("pool: listening on 127.0.0.1:{port}");
    Ok(stop)
}

/// Refreshes each account within `oauth::REFRESH_MARGIN_MS` of its expiry. The new
/// sign-in is stored first; only then does the pool use it. A refresh that
/// fails leaves the old token in use until it expires, and says so.
async fn refresh_due(
    pool: &Arc<Pool>,
    vault: &Arc<SecretsVault>,
    client: &reqwest::Client,
    running: &mut Running,
) {
    let now = protocol::time::now_ms();
    for (id, tokens) in pool.tokens() {
        // Refreshed at an earlier look and not stored then: stored now, not
        // refreshed again (the server spent the refresh token it replaced).
        if let Some(fresh) = running.unstored.remove(&id) {
            if let Err(e) = store(vault, &id, &fresh).await {
                tracing::warn!("pool: {id}'s refreshed sign-in is still not stored: {e}");
                pool.refresh_failed(
                    &id,
                    format!("the refreshed sign-in was not stored: {e}"),
                    false,
                );
                running.unstored.insert(id, fresh);
                continue;
            }
            pool.set_tokens(&id, fresh);
            running.usage_read.remove(&id);
            tracing::info!("pool: {id}'s refreshed sign-in stored");
            continue;
        }
        if !oauth::needs_refresh(&tokens, now) {
            continue;
        }
        let mut tokens = tokens;
        let account = running.seen.as_ref().and_then(|f| f.account(&id)).cloned();
        if let Some(newer) = claude_codes_newer(account.as_ref(), &tokens).await {
            if let Err(e) = store(vault, &id, &newer).await {
                tracing::warn!("pool: {id}'s sign-in from Claude Code was not stored: {e}");
                pool.refresh_failed(
                    &id,
                    format!("Claude Code's newer sign-in was not stored: {e}"),
                    false,
                );
                continue;
            }
            pool.set_tokens(&id, newer.clone());
            running.usage_read.remove(&id);
            tracing::info!(
                "pool: {id} took Claude Code's newer sign-in instead of refreshing its own"
            );
            if !oauth::needs_refresh(&newer, now) {
                continue;
            }
            tokens = newer;
        }
        match oauth::refresh(client, &tokens.refresh).await {
            Ok(fresh) => match store(vault, &id, &fresh).await {
                Ok(()) => {
                    pool.set_tokens(&id, fresh);
                    running.usage_read.remove(&id);
                    tracing::info!("pool: {id}'s sign-in refreshed");
                }
                Err(e) => {
                    // Not stored, not used: the old access token works until
                    // it expires, and the next look stores this pair again.
                    tracing::warn!("pool: {id}'s refreshed sign-in was not stored: {e}");
                    pool.refresh_failed(
                        &id,
                        format!("the refreshed sign-in was not stored: {e}"),
                        false,
                    );
                    running.unstored.insert(id, fresh);
                }
            },
            Err(e) => {
                let again = matches!(e, OAuthError::SignInAgain { .. });
                tracing::warn!("pool: refreshing {id}'s sign-in failed: {e}");
                pool.refresh_failed(&id, e.to_string(), again);
            }
        }
    }
}

/// Stores `tokens` as `id`'s sign-in (durable when it returns).
async fn store(vault: &Arc<SecretsVault>, id: &str, tokens: &Tokens) -> Result<(), VaultError> {
    let (v, i, t) = (vault.clone(), id.to_string(), tokens.clone());
    crate::runtime::blocking(move || v.store(&i, &t)).await
}

/// Claude Code's own copy of an imported account's sign-in, read again, when
/// it is another sign-in than `held` that expires later and its config dir
/// still names this account: Claude Code refreshed it since `add --import`
/// (or the pool's last look at it), which spent `held`'s refresh token.
async fn claude_codes_newer(account: Option<&Account>, held: &Tokens) -> Option<Tokens> {
    let account = account?;
    let place = account.imported_from.clone()?;
    let id = account.id.clone();
    let read = crate::runtime::blocking(move || {
        let home = spool::paths::home_dir();
        let same = adapters::claude_code::config_dir_account(home.as_deref(), &place.config_dir)
            .is_some_and(|a| a.id == id);
        if !same {
            return None;
        }
        claude_login::read_tokens(&place).ok()
    })
    .await?;
    (read != *held && read.expires_at_ms > held.expires_at_ms).then_some(read)
}

/// Reads idle accounts' windows from the usage endpoint, at most every
/// `usage::MIN_INTERVAL` each (an account that answered a request since
/// has its windows from that answer's headers).
async fn read_usage(pool: &Arc<Pool>, client: &reqwest::Client, running: &mut Running) {
    let now = protocol::time::now_ms();
    let every = usage::MIN_INTERVAL.as_millis() as i64;
    for (id, tokens) in pool.tokens() {
        if tokens.expires_at_ms <= now
            || pool.heard_at(&id).is_some_and(|at| now - at < every)
            || running
                .usage_read
                .get(&id)
                .is_some_and(|at| now - at < every)
        {
            continue;
        }
        running.usage_read.insert(id.clone(), now);
        match usage::read(client, &tokens.access).await {
            Ok(windows) => pool.observe_usage(&id, windows),
            Err(e) => tracing::debug!("pool: {id}'s usage was not read: {e}"),
        }
    }
}

/// The observer the proxy is handed: each session's limits, when they
/// changed, become a `limits.observed` on it, written off the request's task,
/// with an `attention.needed` (`question`) for each window of its account
/// that reached `pool_alert_percent`, once per window and reset.
struct SessionLimits {
    tx: Option<mpsc::Sender<(String, LimitsObserved)>>,
}

impl SessionLimits {
    fn start(config: LiveConfig, events: Arc<LocalEvents>) -> SessionLimits {
        let (tx, rx) = mpsc::channel::<(String, LimitsObserved)>();
        let spawned = std::thread::Builder::new()
            .name("pool-limits".into())
            .spawn(move || {
                let mut last: HashMap<String, LimitsObserved> = HashMap::new();
                for (session, limits) in rx {
                    let before = last.get(&session);
                    if before == Some(&limits) {
                        continue;
                    }
                    let percent = config.now().pool_alert_percent();
                    let mut batch = vec![EventData::LimitsObserved(limits.clone())];
                    batch.extend(alerts(&limits, before, percent).map(EventData::AttentionNeeded));
                    match events.append(CLAUDE_CODE, &session, batch) {
                        Ok(true) => {}
                        // A session its hooks did not start gets none.
                        Ok(false) => continue,
                        Err(e) => {
                            tracing::warn!("pool: a session's limits were not written: {e}");
                            continue;
                        }
                    }
                    if last.len() >= REMEMBERED {
                        let drop: Vec<String> = last.keys().take(REMEMBERED / 2).cloned().collect();
                        for k in drop {
                            last.remove(&k);
                        }
                    }
                    last.insert(session, limits);
                }
            });
        match spawned {
            Ok(_) => SessionLimits { tx: Some(tx) },
            Err(e) => {
                tracing::warn!("pool: the limits writer did not start: {e}");
                SessionLimits { tx: None }
            }
        }
    }
}

/// The attentions `limits` calls for on its session: each window at or past
/// `percent` that was not already there in what the session last heard
/// (`before`) for the same period (its `resets_at`).
fn alerts<'a>(
    limits: &'a LimitsObserved,
    before: Option<&'a LimitsObserved>,
    percent: u8,
) -> impl Iterator<Item = AttentionNeeded> + 'a {
    let account = limits.account_id.as_deref().unwrap_or("?");
    let was_full = move |w: &protocol::LimitWindow| {
        before.is_some_and(|b| {
            b.account_id == limits.account_id
                && b.windows.iter().any(|o| {
                    o.id == w.id
                        && o.resets_at == w.resets_at
                        && o.used_percent >= f64::from(percent)
                })
        })
    };
    limits
        .windows
        .iter()
        .filter(move |w| w.used_percent >= f64::from(percent) && !was_full(w))
        .map(move |w| AttentionNeeded {
            attention_id: format!(
                "{LIMIT_ATTENTION}{account}:{}:{}",
                w.id,
                w.resets_at.as_deref().unwrap_or("")
            ),
            kind: AttentionKind::Question,
            tool: None,
            message: Some(format!(
                "the {} limit of account {account} is {:.0}% used{}",
                w.id.replace('_', " "),
                w.used_percent,
                w.resets_at
                    .as_deref()
                    .map(|r| format!("; it resets at {r}"))
                    .unwrap_or_default()
            )),
            agent_id: None,
        })
}

impl Observer for SessionLimits {
    fn observed(&self, session: Option<&str>, account_id: &str, observed: &Observed) {
        if let (Some(tx), Some(session)) = (&self.tx, session) {
            let _ = tx.send((session.to_string(), observed.event(account_id)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::LimitWindow;

    fn limits(used: f64, resets: &str) -> LimitsObserved {
        LimitsObserved {
            account_id: Some("acct-1".into()),
            status: Some("allowed_warning".into()),
            windows: vec![
                LimitWindow {
                    id: "five_hour".into(),
                    window_minutes: Some(300),
                    used_percent: used,
                    resets_at: Some(resets.into()),
                },
                LimitWindow {
                    id: "seven_day".into(),
                    window_minutes: Some(10_080),
                    used_percent: 12.0,
                    resets_at: None,
                },
            ],
        }
    }

    #[test]
    fn a_window_that_reaches_the_threshold_asks_once_per_period() {
        let low = limits(80.0, "2026-12-03T15:00:00Z");
        assert_eq!(alerts(&low, None, 90).count(), 0);
        let high = limits(91.4, "2026-12-03T15:00:00Z");
        let asked: Vec<_> = alerts(&high, Some(&low), 90).collect();
        assert_eq!(asked.len(), 1);
        assert_eq!(asked[0].kind, AttentionKind::Question);
        assert_eq!(
            asked[0].attention_id,
            "pool-limit:acct-1:five_hour:2026-12-03T15:00:00Z"
        );
        assert_eq!(
            asked[0].message.as_deref(),
            Some(
                "the five hour limit of account acct-1 is 91% used; it resets at 2026-12-03T15:00:00Z"
            )
        );
        // Fuller in the same period: asked already.
        let higher = limits(95.0, "2026-12-03T15:00:00Z");
        assert_eq!(alerts(&higher, Some(&high), 90).count(), 0);
        // The next period, full again: asked again.
        let next = limits(92.0, "2026-12-03T20:00:00Z");
        assert_eq!(alerts(&next, Some(&higher), 90).count(), 1);
        // The person's own threshold.
        assert_eq!(alerts(&low, None, 75).count(), 1);
    }
}
