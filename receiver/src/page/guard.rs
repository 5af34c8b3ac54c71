//! The guard on every state-changing call of the page, as a layer over its
//! routes: a request by any method but a safe one (GET, HEAD) must come from
//! the page itself. It carries the page's header (a form elsewhere cannot
//! set one, and a script elsewhere cannot send it without a preflight this
//! receiver never answers) and, when the browser names one, the page's
//! origin; else 403 `not_the_page`, before the handler reads anything.
//!
//! This module owns that check (CSRF). It must not look at who is signed in
//! (the routes do).

use super::state::Page;
use crate::error::ApiError;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// The header the page sends with every call that changes something.
const PAGE_HEADER: &str = "x-sessionpipe-page";

/// The layer: a safe method passes; any other must come from the page.
pub(super) async fn from_the_page(
    State(page): State<Arc<Page>>,
    req: Request,
    next: Next,
) -> Response {
    if req.method().is_safe() || is_from(req.headers(), &page.opts.origin) {
        next.run(req).await
    } else {
        ApiError::new(
            StatusCode::FORBIDDEN,
            "not_the_page",
            "this call is the receiver's page's own",
        )
        .into_response()
    }
}

/// The page's header, and its origin when the browser names one.
fn is_from(headers: &HeaderMap, origin: &str) -> bool {
    let ours = headers
        .get(PAGE_HEADER)
        .is_some_and(|v| v.as_bytes() == b"1");
    let origin_ok = headers
        .get(header::ORIGIN)
        .is_none_or(|o| o.as_bytes() == origin.trim_end_matches('/').as_bytes());
    ours && origin_ok
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_s_header_and_its_origin_are_needed() {
        let origin = "https://phone.example.net/";
        let mut h = HeaderMap::new();
        assert!(!is_from(&h, origin), "no header");
        h.insert(PAGE_HEADER, "1".parse().unwrap());
        assert!(is_from(&h, origin), "the header, no origin named");
        h.insert(header::ORIGIN, "https://phone.example.net".parse().unwrap());
        assert!(is_from(&h, origin));
        h.insert(header::ORIGIN, "https://evil.example".parse().unwrap());
        assert!(!is_from(&h, origin), "another origin");
        h.insert(header::ORIGIN, "https://phone.example.net".parse().unwrap());
        h.insert(PAGE_HEADER, "0".parse().unwrap());
        assert!(!is_from(&h, origin), "the header's value is 1");
    }
}
