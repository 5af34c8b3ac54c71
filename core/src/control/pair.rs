//! Pairing, from this machine only (CONTROL.md §2): discovery, `POST
//! {control}/pair` with the sink token (or none and a poll key where the
//! receiver offers open pairing), the link and six digits shown, the status
//! asked every 2 s until paired, expired or gone (a `429` is waited out as its
//! `retry-after` says, not an end), and the handed key's proof
//! verified before the key is trusted. The machine token goes to the secrets
//! store, the key and the receiver to the control tables.
//!
//! The CLI and the local API both pair through `pair`. It never trusts a key
//! whose proof does not verify, never prints a token, and leaves everything as
//! it was when pairing does not finish.

use crate::sinks::SinkList;
use crate::state::config::Config;
use crate::state::file::FileError;
use crate::state::secrets::Secrets;
use base64::Engine;
use sessionpipe_control::run::{machine_facts, set_marker};
use sessionpipe_control::runs::Runs;
use sessionpipe_control::store::{Key, Receiver, Store, StoreError};
use sessionpipe_control::wire::{self, PairAuth, PairStarted, PairStatus, WireError};
use spool::StatePaths;
use std::time::Duration;

/// How often the pairing's status is asked (the spec's 2 s).
const ASK_EVERY: Duration = Duration::from_secs(2);
/// When the receiver names no `expires_at`, how long the person has.
const DEFAULT_PATIENCE: Duration = Duration::from_secs(10 * 60);

#[derive(Debug, thiserror::Error)]
pub enum PairError {
    #[error(transparent)]
    Wire(#[from] WireError),
    #[error(
        "{0} needs a sink token to pair: add it first (`sessionpipe sink add {0} --token-stdin`) or use `sessionpipe connect`"
    )]
    NoSinkToken(String),
    #[error("the pairing expired before it was approved; run the command again")]
    Expired,
    #[error("the receiver forgot the pairing (404) before it was approved")]
    Gone,
    #[error(
        "the key the receiver handed over does not prove itself for this pairing ({0}): not trusted, nothing changed"
    )]
    Proof(String),
    #[error("the first pairing with a receiver must hand over the machine's token; it did not")]
    NoToken,
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    File(#[from] FileError),
    #[error("{0}")]
    Settings(#[from] crate::state::config::ConfigError),
    #[error("the control folder {0} does not exist")]
    NoFolder(String),
    #[error("name at least one folder commands may act in")]
    NoFolders,
}

/// What the person asked for.
#[derive(Clone, Debug, Default)]
pub struct PairRequest {
    pub receiver: String,
    /// Folders to add to the allowlist (absolute or relative to here).
    pub folders: Vec<String>,
    pub mode: Option<String>,
    pub name: Option<String>,
    /// With no folder named and none allowed yet, allow the folder this
    /// process runs in (the CLI's: where the person typed the command). The
    /// app's daemon runs nowhere in particular, so the API never does.
    pub folder_here: bool,
    /// The tier of the sink a pairing hands over (an open pairing's, or the
    /// account's on a receiver's page): the CLI and the UI propose
    /// `protocol::asked::PAIRING_TIER` (the phone sees what it approves),
    /// and the person may choose another (`--tier 0`). A sink this machine
    /// had already keeps its own.
    pub sink_tier: u8,
}

/// What a finished pairing says.
#[derive(Clone, Debug)]
pub struct PairedMachine {
    pub receiver: Receiver,
    pub key: Key,
    /// The receiver handed a sink token too (open pairing): a sink was added.
    pub sink_added: bool,
    /// The tier of this machine's sink for the receiver, now (the one added,
    /// lowered to what the receiver takes, or the one it had); `None`
    /// without one.
    pub sink_tier: Option<u8>,
}

/// Pairs this machine with a receiver. `started` is told the link and digits
/// to show the person.
pub async fn pair(
    paths: &StatePaths,
    request: &PairRequest,
    started: impl Fn(&PairStarted),
) -> Result<PairedMachine, PairError> {
    let side = wire::discover(&request.receiver).await?;
    let config = settings_with(paths, request)?;
    let secrets = Secrets::new(&paths.root);
    let sink_token = sink_token_for(paths, &secrets, &side.origin);
    let poll_key = random_key();
    let auth = match (&sink_token, side.open_pairing) {
        (Some(t), _) => PairAuth::SinkToken(t),
        (None, true) => PairAuth::PollKey(&poll_key),
        (None, false) => return Err(PairError::NoSinkToken(side.origin.clone())),
    };
    let known = crate::runtime::blocking({
        let outbox = paths.outbox();
        let origin = side.origin.clone();
        move || Store::open(&outbox).and_then(|s| s.receiver(&origin))
    })
    .await?;
    let harnesses = crate::pipeline::outbox::Outbox::open_readonly(&paths.outbox())
        .ok()
        .flatten()
        .and_then(|o| o.harnesses().ok())
        .unwrap_or_default();
    let runs = Runs::new(1);
    let settings = super::host::settings_of(&config);
    let mut body = machine_facts(&settings, harnesses, &runs).await;
    if let Some(name) = &request.name {
        body["name"] = serde_json::json!(name);
    }
    if let Some(r) = &known {
        body["machine"] = serde_json::json!(r.machine);
    }
    if matches!(auth, PairAuth::PollKey(_)) {
        body["poll_key"] = serde_json::json!(poll_key);
    }
    let http = wire::client();
    let start = wire::pair_start(&http, &side.control_url, Some(auth), &body).await?;
    started(&start);
    let until = start
        .expires_at
        .as_deref()
        .and_then(protocol::time::parse_rfc3339_ms)
        .unwrap_or_else(|| protocol::time::now_ms() + DEFAULT_PATIENCE.as_millis() as i64);
    let paired = loop {
        if protocol::time::now_ms() > until {
            return Err(PairError::Expired);
        }
        tokio::time::sleep(ASK_EVERY).await;
        match wire::pair_status(&http, &side.control_url, &start.code, auth).await? {
            PairStatus::Pending => continue,
            PairStatus::Expired => return Err(PairError::Expired),
            PairStatus::Gone => return Err(PairError::Gone),
            // The next ask comes ASK_EVERY after this wait.
            PairStatus::Busy(wait) => {
                tokio::time::sleep(wait.saturating_sub(ASK_EVERY)).await;
                continue;
            }
            PairStatus::Paired(p) => break p,
        }
    };
    let key = sessionpipe_verifier::TrustedKey {
        id: paired.key.id.clone(),
        alg: paired.key.alg,
        spki: paired.key.spki.clone(),
    };
    sessionpipe_verifier::verify_enrollment(
        &start.machine,
        &start.code,
        &key,
        &paired.proof,
        &side.rp_id,
    )
    .map_err(|r| PairError::Proof(r.to_string()))?;

    let token = match (&paired.token, &known) {
        (Some(t), _) => t.clone(),
        (None, Some(_)) => String::new(),
        (None, None) => return Err(PairError::NoToken),
    };
    let receiver = Receiver {
        origin: side.origin.clone(),
        machine: start.machine.clone(),
        control_url: side.control_url.clone(),
        rp_id: side.rp_id.clone(),
        wait_max_s: side.wait_max_s,
        account: paired.account.clone(),
        paired_ms: protocol::time::now_ms(),
        stopped: None,
    };
    let key = Key {
        receiver: side.origin.clone(),
        id: paired.key.id.clone(),
        alg: paired.key.alg,
        spki: paired.key.spki.clone(),
        name: paired.key.name.clone(),
        added_ms: protocol::time::now_ms(),
    };
    let sink_added = keep(
        paths,
        &receiver,
        &key,
        &token,
        &config,
        paired.sink_token.as_deref(),
        request.sink_tier,
    )
    .await?;
    set_marker(paths, true);
    let sink_tier = SinkList::tier_for(paths, &receiver.origin);
    Ok(PairedMachine {
        receiver,
        key,
        sink_added,
        sink_tier,
    })
}

/// Keeps what a pairing handed over: token first (a key without its token is
/// useless), then the receiver and key together, then the settings.
async fn keep(
    paths: &StatePaths,
    receiver: &Receiver,
    key: &Key,
    token: &str,
    config: &Config,
    sink_token: Option<&str>,
    sink_tier: u8,
) -> Result<bool, PairError> {
    let (p, r, k, t, c) = (
        paths.clone(),
        receiver.clone(),
        key.clone(),
        token.to_string(),
        config.clone(),
    );
    crate::runtime::blocking(move || -> Result<(), PairError> {
        if !t.is_empty() {
            Secrets::new(&p.root).set(&r.token_key(), &t)?;
        }
        Store::open(&p.outbox())?.pair(&r, &k)?;
        c.save(&p)?;
        Ok(())
    })
    .await?;
    let Some(sink_token) = sink_token else {
        return Ok(false);
    };
    if sink_token_for(paths, &Secrets::new(&paths.root), &receiver.origin).is_some() {
        return Ok(false);
    }
    let added = crate::sinks::add(
        paths,
        crate::sinks::NewSink {
            target: receiver.origin.clone(),
            tier: sink_tier,
            pii: false,
            token: Some(sink_token.to_string()),
            webhook_secret: None,
        },
    )
    .await;
    match added {
        Ok(_) => Ok(true),
        Err(e) => {
            tracing::warn!("pairing: the handed sink could not be added: {e}");
            Ok(false)
        }
    }
}

/// The settings with the request's folders and mode in them (checked).
fn settings_with(paths: &StatePaths, request: &PairRequest) -> Result<Config, PairError> {
    let mut config = Config::load(paths)?;
    let mut folders = request.folders.clone();
    if folders.is_empty() && config.control_folders.is_empty() {
        // No folder named and none yet: the folder the person paired from.
        match std::env::current_dir() {
            Ok(here) if request.folder_here => folders.push(here.to_string_lossy().into_owned()),
            _ => return Err(PairError::NoFolders),
        }
    }
    for f in folders {
        let abs = absolute_folder(&f)?;
        if !config.control_folders.contains(&abs) {
            config.control_folders.push(abs);
        }
    }
    if let Some(m) = &request.mode {
        config.control_mode = Some(m.clone());
    }
    config.check()?;
    Ok(config)
}

/// A folder as the allowlist keeps it: absolute and resolved.
pub fn absolute_folder(given: &str) -> Result<String, PairError> {
    let path = std::path::Path::new(given);
    let path = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| d.join(path))
            .unwrap_or_else(|_| path.to_path_buf())
    };
    let real = std::fs::canonicalize(&path).map_err(|_| PairError::NoFolder(given.to_string()))?;
    if !real.is_dir() {
        return Err(PairError::NoFolder(given.to_string()));
    }
    Ok(real.to_string_lossy().into_owned())
}

/// The token of the HTTP sink on `origin`, when there is one.
fn sink_token_for(paths: &StatePaths, secrets: &Secrets, origin: &str) -> Option<String> {
    let sinks = SinkList::load(paths).ok()?;
    sinks
        .sinks
        .iter()
        .filter(|s| s.sends_to(origin))
        .find_map(|s| secrets.get(&s.token_key()))
}

/// 32 random bytes, base64url: the open pairing's poll key.
fn random_key() -> String {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the OS gives random bytes");
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// `control off`: tells the receiver (best effort), then forgets it here: its
/// keys, its token, what it sent.
pub async fn off(paths: &StatePaths, origin: &str) -> Result<bool, PairError> {
    let outbox = paths.outbox();
    let o = origin.to_string();
    let known =
        crate::runtime::blocking(move || Store::open(&outbox).and_then(|s| s.receiver(&o))).await?;
    let Some(receiver) = known else {
        return Ok(false);
    };
    let secrets = Secrets::new(&paths.root);
    if let Some(token) = secrets.get(&receiver.token_key())
        && let Err(e) = wire::off(&wire::client(), &receiver.control_url, &token).await
    {
        tracing::warn!("control off: the receiver was not told: {e}");
    }
    secrets.delete(&receiver.token_key());
    let outbox = paths.outbox();
    let o = origin.to_string();
    crate::runtime::blocking(move || Store::open(&outbox)?.remove_receiver(&o)).await?;
    let left = crate::runtime::blocking({
        let outbox = paths.outbox();
        move || Store::open(&outbox).and_then(|s| s.receivers())
    })
    .await?;
    // Settings that do not read leave the marker as it is: the daemon sets
    // it from the last settings that read.
    match Config::load(paths) {
        Ok(config) => set_marker(paths, !left.is_empty() || config.local_approvals),
        Err(e) => tracing::warn!("control off: {e}; `control.on` left to the daemon"),
    }
    Ok(true)
}
