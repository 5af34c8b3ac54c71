//! What the fault door arms (`Fault`, test builds only): the answer the next
//! event POSTs get instead of the binding's, and the body a fault answers
//! with when the test gave none.
//!
//! This module owns reading and writing a fault. It must not serve one
//! (`doors` does).

use crate::invalid::Invalid;
use axum::http::StatusCode;
use serde_json::{Value, json};

/// An armed answer of the fault door: the next `count` event POSTs get `status`
/// (with `body`, else the body this receiver would send for that status, and a
/// `retry-after` header when given), after `delay_ms`. Served before any other
/// check, so a fault is answered exactly `count` times whatever the request.
#[derive(Clone, Debug, PartialEq)]
pub struct Fault {
    pub status: u16,
    pub count: u64,
    pub body: Option<Value>,
    pub retry_after: Option<String>,
    pub delay_ms: u64,
}

impl Fault {
    /// A fault answering `status` once.
    pub fn new(status: u16) -> Fault {
        Fault {
            status,
            count: 1,
            body: None,
            retry_after: None,
            delay_ms: 0,
        }
    }

    /// Reads the fault door's body: `{}` (disarm, `None`) or `{"status": 503,
    /// "count"?: 3, "body"?: {...}, "retry_after"?: "2", "delay_ms"?: 0}`.
    pub fn from_json(v: &Value) -> Result<Option<Fault>, Invalid> {
        let o = v.as_object().ok_or("a fault is a JSON object")?;
        if o.is_empty() {
            return Ok(None);
        }
        if let Some(k) = o.keys().find(|k| {
            !matches!(
                k.as_str(),
                "status" | "count" | "body" | "retry_after" | "delay_ms"
            )
        }) {
            return Err(Invalid(format!("unknown member {k}")));
        }
        let status = o
            .get("status")
            .and_then(Value::as_u64)
            .filter(|s| (200..=599).contains(s))
            .ok_or("status: an HTTP status 200-599")? as u16;
        let count = match o.get("count") {
            None => 1,
            Some(c) => c
                .as_u64()
                .filter(|c| *c >= 1)
                .ok_or("count: an integer >= 1")?,
        };
        let retry_after = match o.get("retry_after") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Number(n)) => Some(n.to_string()),
            Some(_) => return Err(Invalid("retry_after: a string or a number".into())),
        };
        let delay_ms = match o.get("delay_ms") {
            None => 0,
            Some(d) => d
                .as_u64()
                .filter(|d| *d <= 60_000)
                .ok_or("delay_ms: an integer 0-60000")?,
        };
        Ok(Some(Fault {
            status,
            count,
            body: o.get("body").cloned(),
            retry_after,
            delay_ms,
        }))
    }

    pub fn to_json(&self) -> Value {
        json!({
            "status": self.status,
            "count": self.count,
            "body": self.body,
            "retry_after": self.retry_after,
            "delay_ms": self.delay_ms,
        })
    }
}

/// The body a fault answers with when the test gave none: the one this receiver
/// would send for that status, so a sender sees a realistic answer.
pub(super) fn default_fault_body(status: StatusCode, max_tier: u8) -> Value {
    match status.as_u16() {
        400 => json!({"reason": "malformed", "detail": "fault door"}),
        401 => json!({"reason": "unauthorized"}),
        403 => json!({"reason": "tier_above_max", "max_tier": max_tier}),
        413 => json!({"reason": "too_large", "detail": "fault door"}),
        429 => json!({"reason": "rate_limited"}),
        s if s >= 500 => json!({"reason": "unavailable", "detail": "fault door"}),
        _ => json!({"reason": "fault"}),
    }
}
