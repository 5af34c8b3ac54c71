//! The HTTP binding, sender side (PROTOCOL-NOTES §5): discovery, one batch POST
//! with its headers (bearer token, protocol, Standard Webhooks signature), and
//! what each answer means for the sender.
//!
//! It classifies answers; it does not decide retries or move cursors (`deliver`
//! does). Requests time out after 15 s; HTTPS is required except on loopback; a
//! redirect is never followed. Async, on the daemon's runtime.

use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::Sha256;
use std::time::Duration;

// The binding's basics control shares (discovery's document, the client,
// URLs and errors as shown): `sessionpipe_http`.
pub use sessionpipe_http::{
    DiscoveryError, TIMEOUT, client, is_loopback, same_origin, shown_url, well_known, without_url,
};

/// What discovery (`/.well-known/sessionpipe`) said of a receiver.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Discovery {
    pub events: String,
    pub max_tier: u8,
    pub max_events: usize,
    pub max_bytes: usize,
    #[serde(default)]
    pub capabilities: Vec<String>,
    /// When it was read (epoch ms); re-read at most daily.
    pub read_at: i64,
}

const DEFAULT_MAX_EVENTS: usize = 50;
const DEFAULT_MAX_BYTES: usize = 262_144;

/// What a receiver's answer to a batch means.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BatchVerdict {
    /// 202: the cursor moves past the batch. `rejected` are never retried.
    Accepted {
        rejected: Vec<(String, String)>,
        max_tier: Option<u8>,
    },
    /// 400: the batch is dropped and logged.
    Malformed(String),
    /// 400 `unsupported_protocol`: the sink stops.
    Unsupported,
    /// 401: the sink pauses until the person fixes it.
    Unauthorized,
    /// 403 `tier_above_max`: lower the tier, filter again, retry.
    TierAboveMax(u8),
    /// 413: halve the batch; a single event this large is dropped.
    TooLarge,
    /// 429: wait this long.
    RetryAfter(Duration),
    /// 5xx, other codes, network errors, timeouts: back off.
    Transient(String),
}

impl BatchVerdict {
    /// The answer in words, for `sink test`.
    pub fn describe(&self) -> String {
        match self {
            BatchVerdict::Accepted { .. } => "taken".into(),
            BatchVerdict::Malformed(why) => format!("400: refused as malformed ({why})"),
            BatchVerdict::Unsupported => "400: the receiver does not speak protocol 1".into(),
            BatchVerdict::Unauthorized => "401: the token was refused".into(),
            BatchVerdict::TierAboveMax(t) => format!("403: the receiver takes tier {t} at most"),
            BatchVerdict::TooLarge => "413: too large".into(),
            BatchVerdict::RetryAfter(d) => format!("429: asked to wait {}s", d.as_secs()),
            BatchVerdict::Transient(why) => why.clone(),
        }
    }
}

/// Reads `/.well-known/sessionpipe` at the receiver's origin.
pub async fn discover(url: &str) -> Result<Discovery, DiscoveryError> {
    let (base, doc) = well_known(url).await?;
    let events = doc
        .pointer("/endpoints/events")
        .and_then(Value::as_str)
        .ok_or(DiscoveryError::NoEventsEndpoint)?;
    let events = base
        .join(events)
        .map_err(|_| DiscoveryError::NoEventsEndpoint)?;
    if events.scheme() != "https" && !is_loopback(&events) {
        return Err(DiscoveryError::NotHttps(shown_url(events.as_str())));
    }
    if events.origin() != base.origin() {
        return Err(DiscoveryError::OtherOrigin {
            events: shown_url(events.as_str()),
            added: shown_url(url),
        });
    }
    let clamp = |v: Option<u64>, default: usize, max: usize| {
        v.map_or(default, |n| (n as usize).clamp(1, max))
    };
    Ok(Discovery {
        events: events.to_string(),
        max_tier: doc["max_tier"].as_u64().map_or(0, |t| t.min(3) as u8),
        max_events: clamp(
            doc.pointer("/batch/max_events").and_then(Value::as_u64),
            DEFAULT_MAX_EVENTS,
            50,
        ),
        max_bytes: clamp(
            doc.pointer("/batch/max_bytes").and_then(Value::as_u64),
            DEFAULT_MAX_BYTES,
            262_144,
        ),
        capabilities: doc["capabilities"]
            .as_array()
            .map(|c| {
                c.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default(),
        read_at: protocol::time::now_ms(),
    })
}

/// `{"events":[…]}` for a batch of serialised envelopes.
pub fn batch_body(events: &[String]) -> String {
    let mut body = String::with_capacity(events.iter().map(|e| e.len() + 1).sum::<usize>() + 12);
    body.push_str("{\"events\":[");
    for (i, e) in events.iter().enumerate() {
        if i > 0 {
            body.push(',');
        }
        body.push_str(e);
    }
    body.push_str("]}");
    body
}

/// POSTs one batch and says what the answer means.
pub async fn send(
    client: &reqwest::Client,
    events_url: &str,
    token: Option<&str>,
    webhook_secret: Option<&str>,
    body: String,
) -> BatchVerdict {
    let mut req = client
        .post(events_url)
        .header("content-type", "application/json")
        .header("sessionpipe-protocol", "1");
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    if let Some(secret) = webhook_secret {
        // `sink add` checked the secret; one that no longer decodes is never
        // silently dropped (the receiver would refuse the unsigned batch).
        let Some((id, ts, sig)) = webhook_headers(secret, &body) else {
            return BatchVerdict::Unauthorized;
        };
        req = req
            .header("webhook-id", id)
            .header("webhook-timestamp", ts)
            .header("webhook-signature", sig);
    }
    match req.body(body).send().await {
        Ok(resp) => classify(resp).await,
        Err(e) if e.is_timeout() => BatchVerdict::Transient("timed out after 15 s".into()),
        Err(e) => BatchVerdict::Transient(format!("network: {}", without_url(&e))),
    }
}

async fn classify(resp: reqwest::Response) -> BatchVerdict {
    let status = resp.status().as_u16();
    let retry_after = resp
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(parse_retry_after);
    let body: Value = resp
        .text()
        .await
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    let reason = body["reason"].as_str().unwrap_or("").to_string();
    match status {
        // The binding's cursor moves only on 202; another success code is an
        // answer this sender cannot read as "taken".
        202 => BatchVerdict::Accepted {
            rejected: body["rejected"]
                .as_array()
                .map(|r| {
                    r.iter()
                        .map(|x| {
                            (
                                x["id"].as_str().unwrap_or("").to_string(),
                                x["reason"].as_str().unwrap_or("").to_string(),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default(),
            max_tier: body["max_tier"].as_u64().map(|t| t.min(3) as u8),
        },
        400 if reason == "unsupported_protocol" => BatchVerdict::Unsupported,
        400 => BatchVerdict::Malformed(if reason.is_empty() {
            "400".into()
        } else {
            reason
        }),
        401 => BatchVerdict::Unauthorized,
        403 if reason == "tier_above_max" => {
            BatchVerdict::TierAboveMax(body["max_tier"].as_u64().unwrap_or(0).min(3) as u8)
        }
        413 => BatchVerdict::TooLarge,
        429 => BatchVerdict::RetryAfter(retry_after.unwrap_or(Duration::from_secs(60))),
        other => BatchVerdict::Transient(format!(
            "HTTP {other}{}",
            if reason.is_empty() {
                String::new()
            } else {
                format!(" {reason}")
            }
        )),
    }
}

/// `Retry-After`: seconds, or an HTTP date (RFC 9110's three forms).
fn parse_retry_after(v: &str) -> Option<Duration> {
    if let Ok(s) = v.trim().parse::<u64>() {
        return Some(Duration::from_secs(s));
    }
    let when = httpdate::parse_http_date(v.trim()).ok()?;
    Some(
        when.duration_since(std::time::SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

/// Standard Webhooks: `webhook-id`, `webhook-timestamp`, and `v1,<base64 of
/// HMAC-SHA256(key, id.timestamp.body)>`, the key being the `whsec_` secret's
/// base64 part. The id is the batch's own (a digest of its body, whose event
/// ids are unique), so every retry of one batch, after a restart too, says
/// the same id, as the binding asks; a batch cut in half is another message.
pub fn webhook_headers(secret: &str, body: &str) -> Option<(String, String, String)> {
    use sha2::Digest;
    let key = base64::engine::general_purpose::STANDARD
        .decode(secret.strip_prefix("whsec_")?)
        .ok()?;
    let id = format!(
        "msg_{}",
        &hex::encode(Sha256::digest(body.as_bytes()))[..32]
    );
    let ts = (protocol::time::now_ms() / 1000).to_string();
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).ok()?;
    mac.update(format!("{id}.{ts}.{body}").as_bytes());
    let sig = base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes());
    Some((id, ts, format!("v1,{sig}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_in_seconds_or_a_date() {
        assert_eq!(parse_retry_after("7"), Some(Duration::from_secs(7)));
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(Duration::ZERO),
            "a date in the past: now"
        );
        let soon = httpdate::fmt_http_date(std::time::SystemTime::now() + Duration::from_secs(90));
        let wait = parse_retry_after(&soon).unwrap();
        assert!(wait > Duration::from_secs(80) && wait <= Duration::from_secs(90));
        assert_eq!(parse_retry_after("soon"), None);
        assert_eq!(parse_retry_after("Sun, 31 Feb 2027 08:49:37 GMT"), None);
    }

    #[test]
    fn webhook_signature_matches_the_standard_webhooks_example() {
        // The key "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" in base64.
        let secret = "whsec_TWZLUTlyOEdLWXFyVHdqVVBEOElMUFpJbzJMYUxhU3c=";
        let (id, ts, sig) = webhook_headers(secret, "{\"a\":1}").unwrap();
        let mut mac = Hmac::<Sha256>::new_from_slice(b"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        mac.update(format!("{id}.{ts}.{{\"a\":1}}").as_bytes());
        let want = base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes());
        assert_eq!(sig, format!("v1,{want}"));
        assert!(webhook_headers("nope", "x").is_none());
        // One batch, one id, however often it is sent; another batch, another.
        assert_eq!(webhook_headers(secret, "{\"a\":1}").unwrap().0, id);
        assert_ne!(webhook_headers(secret, "{\"a\":2}").unwrap().0, id);
    }

    #[test]
    fn a_batch_body_is_the_events_array() {
        let b = batch_body(&["{\"a\":1}".into(), "{\"b\":2}".into()]);
        assert_eq!(b, "{\"events\":[{\"a\":1},{\"b\":2}]}");
        let v: Value = serde_json::from_str(&b).unwrap();
        assert_eq!(v["events"].as_array().unwrap().len(), 2);
    }
}
