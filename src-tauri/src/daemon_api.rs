//! The daemon's local API, from the tray's side: `GET /api/overview` (the
//! board with its approvals), `POST /api/approvals` (a person's answer to a
//! waiting permission prompt), and the offers of a harness found later (`GET
//! /api/offers`, watching one or declining it), over loopback HTTP/1.1 to the
//! address and token in `ui.json` (`backend::ui_address`), the same API the
//! window's page calls.
//!
//! Owns the calls only, through reqwest on a small runtime of the calling
//! thread (the core's `runtime::block_on`): a bounded wait, the API's
//! `{"error": ...}` as the error's words. Must not decide anything from what it
//! reads, and must never answer a prompt or install hooks on its own: `answer`
//! is called only from a person's click (the menu's Allow / Deny, a
//! notification's action, through `notices::answer_clicked`), and
//! `watch_harness` and `decline_offer` only from a click on an offer
//! (`offers`).

use crate::backend;
use serde_json::{Value, json};
use sessionpipe_core::spool::StatePaths;
use std::time::Duration;

/// How long a connection to the daemon may take to open.
const CONNECT: Duration = Duration::from_secs(2);
/// How long the daemon may take to answer.
const ANSWER: Duration = Duration::from_secs(10);

/// Why a call did not get its answer.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("no sessionpipe daemon serves the API right now")]
    NoDaemon,
    #[error("the daemon's address {0:?} is not http://127.0.0.1:PORT")]
    Address(String),
    #[error("cannot reach the sessionpipe daemon: {0}")]
    Io(String),
    /// The API said no: its status and its own words.
    #[error("{message}")]
    Refused { status: u16, message: String },
    #[error("the daemon's answer could not be read: {0}")]
    Garbled(&'static str),
}

impl ApiError {
    /// The HTTP status the API answered with, when it answered.
    pub fn status(&self) -> Option<u16> {
        match self {
            ApiError::Refused { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// A person's answer to a permission prompt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    Allow,
    Deny,
}

impl Decision {
    /// The API's word (`POST /api/approvals`'s `decision`).
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Deny => "deny",
        }
    }

    pub fn parse(word: &str) -> Option<Decision> {
        match word {
            "allow" => Some(Decision::Allow),
            "deny" => Some(Decision::Deny),
            _ => None,
        }
    }
}

/// `GET /api/overview`.
pub fn overview(paths: &StatePaths) -> Result<Value, ApiError> {
    call(paths, "GET", "/api/overview", None)
}

/// `POST /api/approvals {session, attention, decision}`: only ever a person's
/// click. 409: local approvals are off; 404: the prompt no longer waits.
pub fn answer(
    paths: &StatePaths,
    session: &str,
    attention: &str,
    decision: Decision,
) -> Result<(), ApiError> {
    let body = json!({"session": session, "attention": attention, "decision": decision.as_str()});
    call(paths, "POST", "/api/approvals", Some(&body)).map(|_| ())
}

/// `GET /api/offers`: the harnesses found here and not watched, by name.
pub fn offers(paths: &StatePaths) -> Result<Vec<String>, ApiError> {
    let answer = call(paths, "GET", "/api/offers", None)?;
    let offers = answer["offers"]
        .as_array()
        .ok_or(ApiError::Garbled("no offers"))?;
    Ok(offers
        .iter()
        .filter_map(|o| o["harness"].as_str().map(str::to_string))
        .collect())
}

/// `POST /api/harnesses/{name} {"installed": true}`: installs the harness's
/// hooks; only ever a person's click (the tray's offer).
pub fn watch_harness(paths: &StatePaths, harness: &str) -> Result<(), ApiError> {
    let path = format!("/api/harnesses/{}", named(harness)?);
    call(paths, "POST", &path, Some(&json!({"installed": true}))).map(|_| ())
}

/// `POST /api/offers/{name}/decline`: not offered again.
pub fn decline_offer(paths: &StatePaths, harness: &str) -> Result<(), ApiError> {
    let path = format!("/api/offers/{}/decline", named(harness)?);
    call(paths, "POST", &path, Some(&json!({}))).map(|_| ())
}

/// A harness name as a path segment: the registry's form only.
fn named(harness: &str) -> Result<&str, ApiError> {
    if sessionpipe_core::protocol::valid_harness_name(harness) {
        Ok(harness)
    } else {
        Err(ApiError::Garbled("a harness name"))
    }
}

fn call(
    paths: &StatePaths,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> Result<Value, ApiError> {
    let address = backend::ui_address(paths).ok_or(ApiError::NoDaemon)?;
    let base = address.url.trim_end_matches('/').to_string();
    if !base.starts_with("http://127.0.0.1:") {
        return Err(ApiError::Address(address.url.clone()));
    }
    let method = reqwest::Method::from_bytes(method.as_bytes())
        .map_err(|_| ApiError::Garbled("the method"))?;
    let url = format!("{base}{path}");
    let body = body.map(Value::to_string);
    sessionpipe_core::runtime::block_on(async move {
        let client = reqwest::Client::builder()
            .connect_timeout(CONNECT)
            .timeout(ANSWER)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| ApiError::Io(e.to_string()))?;
        let mut req = client
            .request(method, url)
            .bearer_auth(&address.token)
            .header("accept", "application/json");
        if let Some(b) = body {
            req = req.header("content-type", "application/json").body(b);
        }
        let resp = req.send().await.map_err(|e| ApiError::Io(e.to_string()))?;
        let status = resp.status().as_u16();
        let text = resp.text().await.map_err(|e| ApiError::Io(e.to_string()))?;
        let value: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        if !(200..300).contains(&status) {
            let message = value["error"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| format!("the daemon answered HTTP {status}"));
            return Err(ApiError::Refused { status, message });
        }
        if value.is_null() {
            return Err(ApiError::Garbled("not JSON"));
        }
        Ok(value)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions_are_the_apis_words() {
        assert_eq!(Decision::parse("deny"), Some(Decision::Deny));
        assert_eq!(Decision::Allow.as_str(), "allow");
        assert_eq!(Decision::parse("Allow"), None);
    }

    #[test]
    fn no_daemon_no_call() {
        let dir = std::env::temp_dir().join(format!("sp-app-api-{}", std::process::id()));
        let paths = StatePaths::new(&dir);
        paths.ensure().unwrap();
        assert!(matches!(overview(&paths), Err(ApiError::NoDaemon)));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
