//! Layer 3, error: the one answer every refusal and failure of a request
//! becomes: its status, the binding's `reason` word, words for a person
//! (`detail`, when it has any) and the members some answers carry
//! (`supported`, `max_tier`), as JSON; `connection: close` when the body was
//! left unread; `retry-after` when the client may come back later. Each
//! error of the layers below is turned into one here, once; the sides build
//! their own refusals with it.
//!
//! This module owns that mapping to HTTP. It must not put into an answer what
//! may name a table, a host or a secret: a storage failure is logged here, on
//! the server's side, and answered in general words.

use crate::accounts::AccountError;
use crate::db::DbError;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value};
use std::num::NonZeroU16;
use std::time::Duration;

/// A request refused, or failed: what its answer says.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    reason: &'static str,
    detail: Option<String>,
    members: Map<String, Value>,
    close: bool,
    /// Seconds, at most 65 535 (18 hours; a small type keeps the answer
    /// small enough to return by value).
    retry_after: Option<NonZeroU16>,
}

impl ApiError {
    /// `{reason, detail}` with `status`.
    pub fn new(status: StatusCode, reason: &'static str, detail: impl Into<String>) -> ApiError {
        ApiError {
            detail: Some(detail.into()),
            ..ApiError::bare(status, reason)
        }
    }

    /// `{reason}` alone: answers whose reason says it all (`unauthorized`).
    pub fn bare(status: StatusCode, reason: &'static str) -> ApiError {
        ApiError {
            status,
            reason,
            detail: None,
            members: Map::new(),
            close: false,
            retry_after: None,
        }
    }

    /// One more member of the body (`max_tier`, `supported`).
    pub fn with(mut self, member: &str, value: impl Into<Value>) -> ApiError {
        self.members.insert(member.to_string(), value.into());
        self
    }

    /// Ends the connection after the answer: what the client still sends of
    /// a body left unread would otherwise make the kernel reset it.
    pub fn closing(mut self) -> ApiError {
        self.close = true;
        self
    }

    /// `retry-after`: come back in `secs` seconds (a 429's, a 503's).
    pub fn retry_after(mut self, secs: u64) -> ApiError {
        self.retry_after = NonZeroU16::new(u16::try_from(secs.max(1)).unwrap_or(u16::MAX));
        self
    }

    /// 429 `rate_limited`: the client asked too often (`detail` says what),
    /// and may come back in `wait` (`retry-after`, and in the words). The
    /// connection is closed: the body is left unread.
    pub fn rate_limited(detail: &str, wait: Duration) -> ApiError {
        let secs = wait.as_secs_f64().ceil().max(1.0) as u64;
        let when = if secs < 120 {
            format!("{secs} s")
        } else {
            format!("{} min", secs.div_ceil(60))
        };
        ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limited",
            format!("{detail}: try again in {when}"),
        )
        .retry_after(secs)
        .closing()
    }

    /// 400 `malformed`: which member is wrong, and how.
    pub fn malformed(detail: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "malformed", detail)
    }

    /// 401 `unauthorized`: no token, or none of the ones this call takes.
    pub fn unauthorized() -> ApiError {
        ApiError::bare(StatusCode::UNAUTHORIZED, "unauthorized")
    }

    /// 404 `not_found`, "no such `what`".
    pub fn not_found(what: &str) -> ApiError {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no such {what}"),
        )
    }

    /// 413 `too_large`.
    pub fn too_large(detail: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "too_large", detail)
    }

    /// 500 `storage`: the words of `e` are logged, not answered (they may
    /// name a table or a host).
    pub fn storage(e: impl std::fmt::Display) -> ApiError {
        tracing::error!("storage: {e}");
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "storage",
            "the receiver could not read or write its database",
        )
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.status.as_u16(), self.reason)?;
        match &self.detail {
            Some(d) => write!(f, ": {d}"),
            None => Ok(()),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut body = Map::new();
        body.insert("reason".into(), Value::from(self.reason));
        if let Some(d) = self.detail {
            body.insert("detail".into(), Value::String(d));
        }
        body.extend(self.members);
        let mut resp = (self.status, axum::Json(Value::Object(body))).into_response();
        if self.close {
            resp.headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        if let Some(secs) = self.retry_after {
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs.get()));
        }
        resp
    }
}

impl From<DbError> for ApiError {
    fn from(e: DbError) -> Self {
        ApiError::storage(e)
    }
}

impl From<AccountError> for ApiError {
    fn from(e: AccountError) -> Self {
        let code = e.code();
        if code == "storage" {
            return ApiError::storage(e);
        }
        if let AccountError::ClientBusy { wait } = e {
            return ApiError::rate_limited(&e.to_string(), wait);
        }
        let status = StatusCode::from_u16(e.status()).unwrap_or(StatusCode::BAD_REQUEST);
        ApiError::new(status, code, e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn body_of(e: ApiError) -> (u16, Option<String>, Value) {
        let r = e.into_response();
        let status = r.status().as_u16();
        let close = r
            .headers()
            .get(header::CONNECTION)
            .map(|v| v.to_str().unwrap().to_string());
        let bytes = axum::body::to_bytes(r.into_body(), 1 << 16).await.unwrap();
        (status, close, serde_json::from_slice(&bytes).unwrap())
    }

    #[tokio::test]
    async fn each_answer_is_its_reason_its_words_and_its_members() {
        let (s, close, b) = body_of(ApiError::unauthorized()).await;
        assert_eq!((s, close), (401, None));
        assert_eq!(b, serde_json::json!({"reason": "unauthorized"}));
        let (s, close, b) = body_of(ApiError::too_large("body over 10 bytes").closing()).await;
        assert_eq!((s, close.as_deref()), (413, Some("close")));
        assert_eq!(
            b,
            serde_json::json!({"reason": "too_large", "detail": "body over 10 bytes"})
        );
        let (s, _, b) =
            body_of(ApiError::bare(StatusCode::FORBIDDEN, "tier_above_max").with("max_tier", 1))
                .await;
        assert_eq!(s, 403);
        assert_eq!(
            b,
            serde_json::json!({"reason": "tier_above_max", "max_tier": 1})
        );
        let (s, _, b) = body_of(ApiError::from(DbError::Url("postgres://secret@h".into()))).await;
        assert_eq!(s, 500);
        assert_eq!(b["reason"], "storage");
        assert!(
            !b.to_string().contains("secret"),
            "a storage failure's words stay on the server: {b}"
        );
        let (s, _, b) = body_of(ApiError::from(AccountError::Busy)).await;
        assert_eq!((s, b["reason"].as_str()), (503, Some("busy")));
    }

    #[tokio::test]
    async fn a_429_says_when_to_come_back() {
        let words =
            |ms: u64| ApiError::rate_limited("too many", Duration::from_millis(ms)).to_string();
        assert_eq!(words(2100), "429 rate_limited: too many: try again in 3 s");
        assert_eq!(words(10), "429 rate_limited: too many: try again in 1 s");
        assert_eq!(
            words(290_000),
            "429 rate_limited: too many: try again in 5 min"
        );
        let r = ApiError::rate_limited("too many", Duration::from_secs(7)).into_response();
        assert_eq!(r.status(), 429);
        assert_eq!(r.headers()[header::RETRY_AFTER], "7");
        assert_eq!(r.headers()[header::CONNECTION], "close");
    }
}
