//! What the daemon's control parts share: the `Control` handle (the store,
//! the hub, the headless runs, the one HTTP client), and how the acks every
//! part makes (`ack`) leave: a final one kept on disk before it goes, `taken`
//! and `progress` sent at once and never retried (the next one, or the final,
//! supersedes them).
//!
//! It decides nothing: `admit` verifies and checks, `run` polls and offers,
//! `ladder` runs what the hub cannot take in place.

use super::ack::Ack;
use super::host::{Host, ProgressEvents, SessionFacts, Settings};
use super::hub::{Final, Hub, MessageRef};
use super::runs::Runs;
use super::store::{Receiver, Store};
use super::wire;
use serde_json::Value;
use sessionpipe_verifier::SessionRef;
use spool::StatePaths;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Everything control's parts share, for the daemon's life.
pub struct Control {
    pub(super) paths: StatePaths,
    /// What control asks of the daemon (its settings in force, tokens, the
    /// outbox's records).
    pub(super) host: Arc<dyn Host>,
    pub(super) hub: Arc<Hub>,
    store: Mutex<Store>,
    /// Rung per receiver when acks wait to be sent.
    ack_bells: Mutex<HashMap<String, Arc<tokio::sync::Notify>>>,
    /// Every call to every receiver: one client for the daemon's life.
    pub(super) http: reqwest::Client,
    pub(super) runs: Runs,
    /// The sessions held in ACP agents this daemon started.
    pub(super) acp: super::held::AcpSessions,
    /// Where a run's growing reply becomes `turn.progress` events (only
    /// where a destination takes tier 2).
    pub(super) progress_events: Option<Arc<dyn ProgressEvents>>,
    /// Each receiver's `control.session_tools`, read when its loop starts.
    session_tools: Mutex<HashMap<String, Vec<String>>>,
    /// Each polled receiver and its machine token, as its loop read them (a
    /// `progress` ack must not wait on the keychain).
    polled: Mutex<HashMap<String, (Receiver, String)>>,
    /// Local asks waiting for their final ack, by message id.
    local: Mutex<HashMap<String, tokio::sync::oneshot::Sender<Value>>>,
}

impl Control {
    pub(super) fn new(
        paths: &StatePaths,
        host: Arc<dyn Host>,
        hub: Arc<Hub>,
        store: Store,
        runs: Runs,
        progress_events: Option<Arc<dyn ProgressEvents>>,
    ) -> Control {
        Control {
            progress_events,
            paths: paths.clone(),
            host,
            hub,
            store: Mutex::new(store),
            ack_bells: Mutex::default(),
            http: wire::client(),
            runs,
            acp: Default::default(),
            session_tools: Mutex::default(),
            local: Mutex::default(),
            polled: Mutex::default(),
        }
    }

    /// A receiver's loop started with this token.
    pub(super) fn polling(&self, receiver: &Receiver, token: &str) {
        self.polled
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(
                receiver.origin.clone(),
                (receiver.clone(), token.to_string()),
            );
    }

    /// The final ack of the local message `id`, when it comes.
    pub(super) fn wait_local(&self, id: &str) -> tokio::sync::oneshot::Receiver<Value> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.local
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.to_string(), tx);
        rx
    }

    /// The MCP servers a run for `receiver` may use without asking.
    pub(super) fn session_tools(&self, receiver: &str) -> Vec<String> {
        self.session_tools
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(receiver)
            .cloned()
            .unwrap_or_default()
    }

    pub(super) fn set_session_tools(&self, receiver: &str, tools: Vec<String>) {
        self.session_tools
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(receiver.to_string(), tools);
    }

    pub(super) fn bell(&self, receiver: &str) -> Arc<tokio::sync::Notify> {
        self.ack_bells
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(receiver.to_string())
            .or_default()
            .clone()
    }

    /// Control's settings in force now (the last that read while
    /// `config.json` does not).
    pub(super) fn config(&self) -> Settings {
        self.host.settings()
    }

    pub(super) fn store(&self) -> std::sync::MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A receiver and its machine token, read for a call outside its loops.
pub(super) async fn receiver_and_token(
    control: &Arc<Control>,
    origin: &str,
) -> Option<(Receiver, String)> {
    let polled = control
        .polled
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(origin)
        .cloned();
    if polled.is_some() {
        return polled;
    }
    let c = control.clone();
    let o = origin.to_string();
    let receiver = crate::runtime::blocking(move || c.store().receiver(&o).ok().flatten()).await?;
    let (host, key) = (control.host.clone(), receiver.token_key());
    let token = crate::runtime::blocking(move || host.token(&key)).await?;
    Some((receiver, token))
}

/// A not-final ack (`taken`, `progress`) of the message `id` from `origin`,
/// sent at once, best effort.
async fn say_now(control: &Arc<Control>, origin: &str, id: &str, ack: Ack) {
    let Some((receiver, token)) = receiver_and_token(control, origin).await else {
        return;
    };
    let ack = ack.json(id);
    if let Err(e) = wire::ack(&control.http, &receiver.control_url, &token, &[ack]).await {
        tracing::info!("control: an ack to {}: {e}", receiver.origin);
    }
}

/// `taken`: the machine holds the message and a final ack follows.
pub(super) async fn say_taken(control: &Arc<Control>, origin: &str, id: &str) {
    say_now(control, origin, id, Ack::Taken).await;
}

/// `progress`: the reply so far, whole, with a rising `seq`.
pub(super) async fn say_progress(
    control: &Arc<Control>,
    origin: &str,
    id: &str,
    seq: u64,
    reply: &str,
) {
    let ack = Ack::Progress {
        seq,
        reply: reply.to_string(),
    };
    say_now(control, origin, id, ack).await;
}

/// Keeps `ack`, the final one of the message `from` names, and sends it.
pub(super) async fn finish(control: &Arc<Control>, from: &MessageRef, ack: Ack) {
    keep_final(control, Final::of(from, &ack)).await;
}

/// Keeps a final ack on disk, then rings its receiver's ack loop.
pub(super) async fn keep_final(control: &Arc<Control>, f: Final) {
    if f.receiver == super::hub::LOCAL {
        let waiting = control
            .local
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&f.id);
        if let Some(tx) = waiting {
            let _ = tx.send(f.ack);
        }
        return;
    }
    let c = control.clone();
    let (receiver, id, ack) = (f.receiver.clone(), f.id.clone(), f.ack.to_string());
    let kept = crate::runtime::blocking(move || c.store().finish(&receiver, &id, &ack)).await;
    if let Err(e) = kept {
        tracing::warn!("control: cannot keep an ack: {e}");
    }
    control.bell(&f.receiver).notify_one();
}

/// How a message is framed where it is delivered (`harness::frames`).
#[derive(Clone, Copy)]
pub enum Frame {
    /// Handed to a live session (a Stop, a waiter, an inbox).
    InPlace,
    /// Into a session that exists, headless.
    IntoSession,
    /// A new session's first words.
    NewSession,
}

/// `text` framed for where it goes; a local ask carries its own paragraph
/// (`frames::asked`) and no receiver's frame.
pub fn framed(from: &MessageRef, how: Frame, text: &str) -> String {
    if from.is_local() {
        return text.to_string();
    }
    let host = from_host(&from.receiver);
    match how {
        Frame::InPlace => harness::frames::in_place(&host, &from.id, text),
        Frame::IntoSession => harness::frames::into_session(&host, text),
        Frame::NewSession => harness::frames::new_session(&host, text),
    }
}

/// The receiver's host, the `<host>` of the frame ("Message via <host> …").
pub fn from_host(origin: &str) -> String {
    reqwest::Url::parse(origin)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
        .unwrap_or_else(|| origin.to_string())
}

/// What the outbox's record of a session says; none without an outbox, for
/// a session it does not hold, or when it cannot be read. Blocking (callers
/// on the runtime wrap it in `runtime::blocking`).
pub(super) fn session_record(control: &Control, harness: &str, id: &str) -> Option<SessionFacts> {
    control.host.session(&SessionRef {
        harness: harness.to_string(),
        id: id.to_string(),
    })
}

/// A session's folder as this machine names it: as given, or with a leading
/// `~` (how a session's record keeps a folder under home) made the home
/// folder. `None` for `~` with no home known.
pub fn local_folder(cwd: &str) -> Option<std::path::PathBuf> {
    match cwd.strip_prefix('~') {
        Some(rest) => spool::paths::home_dir().map(|home| home.join(rest.trim_start_matches('/'))),
        None => Some(std::path::PathBuf::from(cwd)),
    }
}

/// True when `cwd` (as the session's record keeps it, home as `~`) is inside
/// one of `folders`.
pub fn folder_allowed(cwd: Option<&str>, folders: &[String]) -> bool {
    let Some(cwd) = cwd.and_then(local_folder) else {
        return false;
    };
    let cwd = std::fs::canonicalize(&cwd).unwrap_or(cwd);
    folders.iter().any(|f| {
        let f = std::path::Path::new(f);
        let f = std::fs::canonicalize(f).unwrap_or_else(|_| f.to_path_buf());
        cwd.starts_with(&f)
    })
}

/// Keeps what a session name control gave out stands for.
pub(super) async fn name_session(
    control: &Arc<Control>,
    harness: &str,
    name: &str,
    session: super::store::NamedSession,
) {
    let c = control.clone();
    let (h, n) = (harness.to_string(), name.to_string());
    let kept = crate::runtime::blocking(move || {
        c.store()
            .name_session(&h, &n, &session, protocol::time::now_ms())
    })
    .await;
    if let Err(e) = kept {
        tracing::warn!("control: cannot keep a session's name: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_is_allowed_only_inside_an_allowed_one() {
        let dir = tempfile::tempdir().unwrap();
        let inside = dir.path().join("proj");
        std::fs::create_dir_all(&inside).unwrap();
        let allowed = vec![dir.path().to_string_lossy().into_owned()];
        assert!(folder_allowed(inside.to_str(), &allowed));
        assert!(folder_allowed(dir.path().to_str(), &allowed));
        let sibling = format!("{}-other", dir.path().display());
        assert!(
            !folder_allowed(Some(&sibling), &allowed),
            "a prefix of the name is not inside"
        );
        assert!(!folder_allowed(Some("/etc"), &allowed));
        assert!(!folder_allowed(None, &allowed));
        assert!(
            !folder_allowed(inside.to_str(), &[]),
            "no folder: nothing allowed"
        );
    }
}
