//! What the daemon's control parts share: the `Control` handle (the store,
//! the hub, the headless runs, the one HTTP client), the verified message as
//! it is kept while it waits (`Queued`), and the acks every part sends: a
//! final one kept on disk before it goes, `taken` and `progress` sent at once
//! and never retried (the next one, or the final, supersedes them).
//!
//! It decides nothing: `admit` verifies and checks, `run` polls and offers,
//! `ladder` runs what the hub cannot take in place.

use super::hub::{Final, Hub};
use super::runs::Runs;
use super::store::{Receiver, Store};
use super::wire;
use crate::state::secrets::Secrets;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use spool::StatePaths;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// What a verified message needs to be offered again after a restart.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Queued {
    pub session: String,
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attention: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    pub expires_ms: i64,
    /// A start's folder, files (`{name, type, size, sha256}`), level and model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// Everything control's parts share, for the daemon's life.
pub struct Control {
    pub(super) paths: StatePaths,
    pub(super) hub: Arc<Hub>,
    store: Mutex<Store>,
    /// Rung per receiver when acks wait to be sent.
    ack_bells: Mutex<HashMap<String, Arc<tokio::sync::Notify>>>,
    /// Every call to every receiver: one client for the daemon's life.
    pub(super) http: reqwest::Client,
    pub(super) runs: Runs,
}

impl Control {
    pub(super) fn new(paths: &StatePaths, hub: Arc<Hub>, store: Store, runs: Runs) -> Control {
        Control {
            paths: paths.clone(),
            hub,
            store: Mutex::new(store),
            ack_bells: Mutex::default(),
            http: wire::client(),
            runs,
        }
    }

    pub(super) fn bell(&self, receiver: &str) -> Arc<tokio::sync::Notify> {
        self.ack_bells
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(receiver.to_string())
            .or_default()
            .clone()
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
    let c = control.clone();
    let o = origin.to_string();
    let receiver = crate::runtime::blocking(move || c.store().receiver(&o).ok().flatten()).await?;
    let secrets = Secrets::new(&control.paths.root);
    let key = receiver.token_key();
    let token = crate::runtime::blocking(move || secrets.get(&key)).await?;
    Some((receiver, token))
}

/// A not-final ack (`taken`, `progress`), sent at once, best effort.
async fn say_now(control: &Arc<Control>, origin: &str, ack: Value) {
    let Some((receiver, token)) = receiver_and_token(control, origin).await else {
        return;
    };
    if let Err(e) = wire::ack(&control.http, &receiver.control_url, &token, &[ack]).await {
        tracing::info!("control: an ack to {}: {e}", receiver.origin);
    }
}

/// `taken`: the machine holds the message and a final ack follows.
pub(super) async fn say_taken(control: &Arc<Control>, origin: &str, id: &str) {
    say_now(
        control,
        origin,
        json!({"id": id, "outcome": "taken", "at": now_text()}),
    )
    .await;
}

/// `progress`: the reply so far, whole, with a rising `seq`.
pub(super) async fn say_progress(
    control: &Arc<Control>,
    origin: &str,
    id: &str,
    seq: u64,
    reply: &str,
) {
    let ack = json!({"id": id, "outcome": "progress", "at": now_text(),
                     "seq": seq, "reply": reply_text(reply)});
    say_now(control, origin, ack).await;
}

/// Keeps a final ack on disk, then rings its receiver's ack loop.
pub(super) async fn keep_final(control: &Arc<Control>, f: Final) {
    let c = control.clone();
    let (receiver, id, ack) = (f.receiver.clone(), f.id.clone(), f.ack.to_string());
    let kept = crate::runtime::blocking(move || c.store().finish(&receiver, &id, &ack)).await;
    if let Err(e) = kept {
        tracing::warn!("control: cannot keep an ack: {e}");
    }
    control.bell(&f.receiver).notify_one();
}

/// A reply as an ack carries it: secrets removed, at most the schema's
/// 20 000 characters (the end kept: it is where an answer concludes).
pub fn reply_text(reply: &str) -> String {
    const MAX: usize = 20_000;
    let clean = redact::secrets(reply.trim());
    let n = clean.chars().count();
    if n <= MAX {
        return clean.into_owned();
    }
    let tail: String = clean.chars().skip(n - (MAX - 2)).collect();
    format!("…\n{tail}")
}

/// A detail as an ack carries it: secrets removed, at most 500 characters.
pub fn detail_text(detail: &str) -> String {
    let clean = redact::secrets(detail.trim());
    clean.chars().take(500).collect()
}

pub fn now_text() -> String {
    protocol::time::rfc3339_ms(protocol::time::now_ms())
}

pub fn ack_refused(id: &str, code: &str, detail: &str) -> Value {
    json!({"id": id, "outcome": "refused", "at": now_text(), "code": code, "detail": detail})
}

pub fn ack_unsupported(id: &str, detail: &str) -> Value {
    json!({"id": id, "outcome": "unsupported", "at": now_text(), "detail": detail})
}

pub fn ack_failed(id: &str, code: Option<&str>, detail: &str) -> Value {
    let mut ack = json!({"id": id, "outcome": "failed", "at": now_text(),
                         "detail": detail_text(detail)});
    if let Some(c) = code {
        ack["code"] = json!(c);
    }
    ack
}

/// The receiver's host, the `<host>` of the frame ("Message via <host> …").
pub fn from_host(origin: &str) -> String {
    reqwest::Url::parse(origin)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
        .unwrap_or_else(|| origin.to_string())
}

/// True when `cwd` (as the session's record keeps it, home as `~`) is inside
/// one of `folders`.
pub fn folder_allowed(cwd: Option<&str>, folders: &[String]) -> bool {
    let Some(cwd) = cwd else {
        return false;
    };
    let cwd = match cwd.strip_prefix('~') {
        Some(rest) => match spool::paths::home_dir() {
            Some(home) => home.join(rest.trim_start_matches('/')),
            None => return false,
        },
        None => std::path::PathBuf::from(cwd),
    };
    let cwd = std::fs::canonicalize(&cwd).unwrap_or(cwd);
    folders.iter().any(|f| {
        let f = std::path::Path::new(f);
        let f = std::fs::canonicalize(f).unwrap_or_else(|_| f.to_path_buf());
        cwd.starts_with(&f)
    })
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

    #[test]
    fn a_reply_loses_its_secrets_and_keeps_its_end() {
        let key = format!("sk-ant-api03-{}", "A1b2C3d4".repeat(12));
        let r = reply_text(&format!("Set it to {key} and run."));
        assert!(!r.contains(&key), "{r}");
        let long = format!("{}THE END", "x".repeat(30_000));
        let r = reply_text(&long);
        assert_eq!(r.chars().count(), 20_000);
        assert!(r.ends_with("THE END"));
    }
}
