//! Layer 3, request: what every side reads off a request the same way: the
//! bearer token, a JSON body read whole under a cap, and the switch of the
//! request log.
//!
//! This module owns those readings. It must not decide who may call what
//! (each side does, with `owners` or its own tokens) and never logs a body, a
//! token or an `authorization` header.

use crate::error::ApiError;
use axum::body::Body;
use axum::http::{HeaderMap, header};
use serde_json::Value;

/// The token of `Authorization: Bearer <token>`, the scheme in any case.
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    let v = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())?;
    let (scheme, token) = v.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// The body as JSON, read whole before any answer (answering while the
/// client is still writing leaves unread bytes that make the kernel reset
/// the connection): 413 past `max` bytes (and the connection closed), 400
/// when it is not JSON.
pub async fn read_json(body: Body, max: usize) -> Result<Value, ApiError> {
    let bytes = axum::body::to_bytes(body, max)
        .await
        .map_err(|_| ApiError::too_large(format!("body over {max} bytes")).closing())?;
    serde_json::from_slice(&bytes).map_err(|_| ApiError::malformed("the body is not JSON"))
}

/// The request log: one line per request answered, when it is on
/// (`Options::log`; off with `--quiet`). A line names what was done, never a
/// body, a token or a header.
#[derive(Clone, Copy, Debug)]
pub struct RequestLog(pub bool);

impl RequestLog {
    pub fn line(self, line: impl FnOnce() -> String) {
        if self.0 {
            tracing::info!("{}", line());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bearer_scheme_is_read_in_any_case() {
        let mut h = HeaderMap::new();
        assert_eq!(bearer(&h), None);
        h.insert(header::AUTHORIZATION, "bEaReR  tok ".parse().unwrap());
        assert_eq!(bearer(&h), Some("tok"));
        h.insert(header::AUTHORIZATION, "Basic dXNlcg==".parse().unwrap());
        assert_eq!(bearer(&h), None);
    }
}
