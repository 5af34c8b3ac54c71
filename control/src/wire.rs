//! The machine's side of control's HTTP calls (PROTOCOL-NOTES §6, HTTP.md §3):
//! the control part of discovery, pairing (start and status), hello, the
//! long-poll, acks and `off`.
//!
//! It says what each answer means and nothing more: it decides no retry, keeps
//! nothing and verifies nothing (`pair` and `run` do). A token goes only to the
//! origin the person named (an endpoint elsewhere is refused at discovery), no
//! redirect is followed, and no token or URL query reaches an error's text.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sessionpipe_http::{DiscoveryError, is_loopback, shown_url, well_known, without_url};
use std::time::Duration;

/// The client control's calls go through. Make one per runtime and keep it
/// (the daemon's control keeps one for its life): building one reads the
/// system's root certificates, far more than a poll costs, and its pooled
/// connections belong to the runtime they were made on.
pub fn client() -> reqwest::Client {
    sessionpipe_http::client()
}

/// The most messages one poll may hand over that this machine reads.
const MAX_POLL_BYTES: usize = 4 << 20;

#[derive(Debug, thiserror::Error)]
pub enum WireError {
    #[error(transparent)]
    Discovery(#[from] DiscoveryError),
    #[error("{0} does not offer control (no `control` capability or endpoint)")]
    NoControl(String),
    #[error(
        "its control endpoint {0} is on another origin: the machine's token goes only where you paired"
    )]
    OtherOrigin(String),
    #[error("its control endpoint {0} is not HTTPS")]
    NotHttps(String),
    #[error("the receiver refused the token (401)")]
    Unauthorized,
    #[error("the receiver answered {status}{}", if detail.is_empty() { String::new() } else { format!(": {detail}") })]
    Status { status: u16, detail: String },
    #[error("network: {0}")]
    Network(String),
    #[error("the receiver's answer is not what the protocol says: {0}")]
    BadAnswer(String),
}

/// What discovery says of a receiver's control side.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ControlSide {
    /// The origin the person named (`scheme://host[:port]`).
    pub origin: String,
    pub control_url: String,
    pub wait_max_s: u64,
    pub rp_id: String,
    pub open_pairing: bool,
    /// `control.session_tools`: MCP servers a run for this receiver may use
    /// without asking, only `mcp__<server>` names, at most 8 (anything else
    /// is ignored: a receiver never allows a built-in tool).
    pub session_tools: Vec<String>,
}

/// The entries of a well-known `control.session_tools` that are MCP server
/// names, at most 8.
pub fn session_tools(doc: &Value) -> Vec<String> {
    let is_server = |t: &str| {
        t.strip_prefix("mcp__").is_some_and(|name| {
            (1..=64).contains(&name.len())
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        })
    };
    doc.pointer("/control/session_tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|t| is_server(t))
        .take(8)
        .map(str::to_string)
        .collect()
}

pub async fn discover(url: &str) -> Result<ControlSide, WireError> {
    let (base, doc) = well_known(url).await?;
    let listed = doc["capabilities"]
        .as_array()
        .is_some_and(|c| c.iter().any(|v| v.as_str() == Some("control")));
    let endpoint = doc.pointer("/endpoints/control").and_then(Value::as_str);
    let rp_id = doc
        .pointer("/control/signing/rp_id")
        .and_then(Value::as_str);
    let (true, Some(endpoint), Some(rp_id)) = (listed, endpoint, rp_id) else {
        return Err(WireError::NoControl(shown_url(url)));
    };
    let control = base
        .join(endpoint)
        .map_err(|_| WireError::NoControl(shown_url(url)))?;
    if control.origin() != base.origin() {
        return Err(WireError::OtherOrigin(shown_url(control.as_str())));
    }
    if control.scheme() != "https" && !is_loopback(&control) {
        return Err(WireError::NotHttps(shown_url(control.as_str())));
    }
    Ok(ControlSide {
        origin: base.origin().ascii_serialization(),
        control_url: control.as_str().trim_end_matches('/').to_string(),
        wait_max_s: doc
            .pointer("/control/wait_max_s")
            .and_then(Value::as_u64)
            .unwrap_or(25)
            .clamp(1, 120),
        rp_id: rp_id.to_string(),
        open_pairing: doc
            .pointer("/control/open_pairing")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        session_tools: session_tools(&doc),
    })
}

/// The bearer a pairing call carries.
#[derive(Clone, Copy, Debug)]
pub enum PairAuth<'a> {
    /// The sink token the person configured.
    SinkToken(&'a str),
    /// Open pairing: the poll key this machine made (the receiver keeps a hash).
    PollKey(&'a str),
}

impl PairAuth<'_> {
    fn bearer(&self) -> String {
        match self {
            PairAuth::SinkToken(t) | PairAuth::PollKey(t) => format!("Bearer {t}"),
        }
    }
}

/// `201` to `POST {control}/pair`.
#[derive(Clone, Debug, Deserialize)]
pub struct PairStarted {
    pub machine: String,
    pub code: String,
    pub url: String,
    pub check: String,
    #[serde(default)]
    pub expires_at: Option<String>,
}

/// A key as a pairing hands it over.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandedKey {
    pub id: String,
    pub alg: i64,
    pub spki: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// What `GET {control}/pair?code=` says.
#[derive(Clone, Debug)]
pub enum PairStatus {
    Pending,
    Paired(Box<Paired>),
    Expired,
    /// 404: the pairing is gone.
    Gone,
    /// 429: asked too often from this address (others share it, or an
    /// attacker floods it); ask again no sooner than this.
    Busy(Duration),
}

/// The longest `retry-after` a pairing's status poll waits (a pairing lasts
/// ten minutes; a receiver asking for more is read as asking for this).
const BUSY_MAX: Duration = Duration::from_secs(60);

#[derive(Clone, Debug, Deserialize)]
pub struct Paired {
    pub key: HandedKey,
    pub proof: sessionpipe_verifier::Assertion,
    #[serde(default)]
    pub token: Option<String>,
    #[serde(default)]
    pub sink_token: Option<String>,
    #[serde(default)]
    pub account: Option<String>,
}

pub async fn pair_start(
    http: &reqwest::Client,
    control_url: &str,
    auth: Option<PairAuth<'_>>,
    body: &Value,
) -> Result<PairStarted, WireError> {
    let mut req = http
        .post(format!("{control_url}/pair"))
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some(PairAuth::SinkToken(t)) = auth {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    let resp = send(req).await?;
    match resp.status().as_u16() {
        200 | 201 => json(resp).await,
        s => Err(refusal(s, resp).await),
    }
}

pub async fn pair_status(
    http: &reqwest::Client,
    control_url: &str,
    code: &str,
    auth: PairAuth<'_>,
) -> Result<PairStatus, WireError> {
    let url = reqwest::Url::parse_with_params(&format!("{control_url}/pair"), [("code", code)])
        .map_err(|_| WireError::BadAnswer("the control URL does not take a query".into()))?;
    let resp = send(http.get(url).header("authorization", auth.bearer())).await?;
    match resp.status().as_u16() {
        200 => {}
        404 => return Ok(PairStatus::Gone),
        429 => {
            // Seconds (the receiver's form); a date or nothing: a short wait.
            let after = resp
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map_or(Duration::from_secs(5), Duration::from_secs);
            return Ok(PairStatus::Busy(
                after.clamp(Duration::from_secs(1), BUSY_MAX),
            ));
        }
        s => return Err(refusal(s, resp).await),
    }
    let doc: Value = json(resp).await?;
    match doc["status"].as_str() {
        Some("pending") => Ok(PairStatus::Pending),
        Some("expired") => Ok(PairStatus::Expired),
        Some("paired") => serde_json::from_value(doc)
            .map(|p| PairStatus::Paired(Box::new(p)))
            .map_err(|e| WireError::BadAnswer(format!("a paired answer: {e}"))),
        other => Err(WireError::BadAnswer(format!("pairing status {other:?}"))),
    }
}

pub async fn hello(
    http: &reqwest::Client,
    control_url: &str,
    token: &str,
    body: &Value,
) -> Result<(), WireError> {
    let resp = send(
        http.post(format!("{control_url}/hello"))
            .bearer_auth(token)
            .header("content-type", "application/json")
            .body(body.to_string()),
    )
    .await?;
    match resp.status().as_u16() {
        200..=299 => Ok(()),
        s => Err(refusal(s, resp).await),
    }
}

/// One long-poll: the messages it handed over (none when it answered 204).
pub async fn poll(
    http: &reqwest::Client,
    control_url: &str,
    machine: &str,
    wait_s: u64,
    token: &str,
) -> Result<Vec<Value>, WireError> {
    let url = reqwest::Url::parse_with_params(
        control_url,
        [("machine", machine), ("wait", &wait_s.to_string())],
    )
    .map_err(|_| WireError::BadAnswer("the control URL does not take a query".into()))?;
    let resp = send(
        http.get(url)
            .bearer_auth(token)
            .timeout(Duration::from_secs(wait_s) + sessionpipe_http::TIMEOUT),
    )
    .await?;
    match resp.status().as_u16() {
        204 => Ok(Vec::new()),
        200 => {
            let doc: Value = json(resp).await?;
            match doc.get("messages").and_then(Value::as_array) {
                Some(m) => Ok(m.clone()),
                None => Err(WireError::BadAnswer(
                    "a poll answer without messages".into(),
                )),
            }
        }
        s => Err(refusal(s, resp).await),
    }
}

pub async fn ack(
    http: &reqwest::Client,
    control_url: &str,
    token: &str,
    acks: &[Value],
) -> Result<(), WireError> {
    let resp = send(
        http.post(format!("{control_url}/ack"))
            .bearer_auth(token)
            .header("content-type", "application/json")
            .body(serde_json::json!({ "acks": acks }).to_string()),
    )
    .await?;
    match resp.status().as_u16() {
        200..=299 => Ok(()),
        s => Err(refusal(s, resp).await),
    }
}

pub async fn off(http: &reqwest::Client, control_url: &str, token: &str) -> Result<(), WireError> {
    let resp = send(
        http.post(format!("{control_url}/off"))
            .bearer_auth(token)
            .header("content-type", "application/json")
            .body("{}"),
    )
    .await?;
    match resp.status().as_u16() {
        200..=299 | 404 => Ok(()),
        s => Err(refusal(s, resp).await),
    }
}

async fn send(req: reqwest::RequestBuilder) -> Result<reqwest::Response, WireError> {
    req.header("sessionpipe-protocol", "1")
        .send()
        .await
        .map_err(|e| WireError::Network(without_url(&e)))
}

async fn json<T: serde::de::DeserializeOwned>(resp: reqwest::Response) -> Result<T, WireError> {
    if resp
        .content_length()
        .is_some_and(|n| n as usize > MAX_POLL_BYTES)
    {
        return Err(WireError::BadAnswer("an answer over 4 MiB".into()));
    }
    let bytes = resp
        .bytes()
        .await
        .map_err(|e| WireError::Network(without_url(&e)))?;
    if bytes.len() > MAX_POLL_BYTES {
        return Err(WireError::BadAnswer("an answer over 4 MiB".into()));
    }
    serde_json::from_slice(&bytes).map_err(|e| WireError::BadAnswer(e.to_string()))
}

async fn refusal(status: u16, resp: reqwest::Response) -> WireError {
    if status == 401 {
        return WireError::Unauthorized;
    }
    let detail = resp
        .text()
        .await
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .and_then(|v| {
            v.get("error")
                .or_else(|| v.get("reason"))
                .and_then(Value::as_str)
                .map(|s| redact::secrets(s).chars().take(200).collect())
        })
        .unwrap_or_default();
    WireError::Status { status, detail }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_tools_are_mcp_server_names_only_and_at_most_eight() {
        let doc = serde_json::json!({"control": {"session_tools": [
            "mcp__receiver", "Bash", "mcp__", "mcp__a b", "Write", 7, "mcp__pages-2",
            "mcp__1", "mcp__2", "mcp__3", "mcp__4", "mcp__5", "mcp__6", "mcp__7"
        ]}});
        let t = session_tools(&doc);
        assert_eq!(t.len(), 8);
        assert_eq!(&t[..3], ["mcp__receiver", "mcp__pages-2", "mcp__1"]);
        assert!(session_tools(&serde_json::json!({"control": {"session_tools": "*"}})).is_empty());
    }
}
