//! The page's files: `/` and `/pair/<code>` (the app's `index.html`), its
//! `/assets/`, the service worker `/sw.js` and the manifest, from the copy
//! built into the binary (`build.rs` over `page/dist`) or from
//! `PageOptions::page_dir`.
//!
//! This module owns serving them with their types and the headers that keep
//! the page to itself (a content security policy of its own origin only, no
//! framing, no sniffing, no referrer). It must not serve anything outside the
//! built files.

use super::state::Page;
use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use std::sync::Arc;

mod built {
    include!(concat!(env!("OUT_DIR"), "/page_assets.rs"));
}

/// Whether this binary carries a built page.
fn page_built() -> bool {
    !built::ASSETS.is_empty()
}

// Here rather than in state.rs, which this module imports: the layering
// test allows no import circle inside `page`.
impl Page {
    /// Why the page's files cannot be served, when they cannot.
    pub fn files_missing(&self) -> Option<String> {
        missing(self.opts.page_dir.as_deref())
    }
}

/// Why the page cannot be shown, when it cannot: no `index.html` in the
/// folder given (`--page-dir`), or none built into this binary. The start-up
/// log says it, and the page's address is then not advertised.
fn missing(page_dir: Option<&std::path::Path>) -> Option<String> {
    match page_dir {
        Some(dir) if !dir.join("index.html").is_file() => Some(format!(
            "the page folder {} has no index.html: the page's address answers 404",
            dir.display()
        )),
        Some(_) => None,
        None if !built::ASSETS.iter().any(|(n, _)| *n == "index.html") => Some(
            "this receiver was built without its page: run `npm ci && npm run build` at \
             the repo root, then build the receiver again (or pass --page-dir); until \
             then the page's address answers 503"
                .into(),
        ),
        None => None,
    }
}

/// Only the receiver's own origin, for scripts, styles, fetches and the
/// service worker; images may be inline.
const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                   connect-src 'self'; worker-src 'self'; manifest-src 'self'; \
                   frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

pub(super) fn routes() -> Router<Arc<Page>> {
    Router::new()
        .route("/", get(index))
        .route("/pair/{code}", get(index))
        .route("/sw.js", get(service_worker))
        .route("/manifest.webmanifest", get(manifest))
        .route("/assets/{name}", get(asset))
}

fn content_type(name: &str) -> &'static str {
    match name.rsplit_once('.').map(|(_, e)| e) {
        Some("html") => "text/html; charset=utf-8",
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("json" | "webmanifest") => "application/manifest+json",
        Some("woff2") => "font/woff2",
        _ => "application/octet-stream",
    }
}

/// A built file's bytes, from the folder given or the binary's copy.
fn bytes(page: &Page, name: &str) -> Option<Vec<u8>> {
    if name.is_empty() || name.contains("..") || name.starts_with('/') || name.contains('\\') {
        return None;
    }
    if let Some(dir) = &page.opts.page_dir {
        return std::fs::read(dir.join(name)).ok();
    }
    built::ASSETS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, b)| b.to_vec())
}

fn serve(page: &Page, name: &str) -> Response {
    let Some(body) = bytes(page, name) else {
        if page.opts.page_dir.is_none() && !page_built() {
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
                "This receiver was built without its page: run `npm ci && npm run build` at \
                 the repo root, then build the receiver again (or pass --page-dir).\n",
            )
                .into_response();
        }
        return StatusCode::NOT_FOUND.into_response();
    };
    let mut resp = ([(header::CONTENT_TYPE, content_type(name))], body).into_response();
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    // Hashed asset names never change; the rest is looked at every time.
    let cache = if name.starts_with("assets/") {
        "public, max-age=31536000, immutable"
    } else {
        "no-cache"
    };
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    resp
}

async fn index(State(page): State<Arc<Page>>) -> Response {
    serve(&page, "index.html")
}

async fn service_worker(State(page): State<Arc<Page>>) -> Response {
    serve(&page, "sw.js")
}

async fn manifest(State(page): State<Arc<Page>>) -> Response {
    serve(&page, "manifest.webmanifest")
}

async fn asset(State(page): State<Arc<Page>>, Path(name): Path<String>) -> Response {
    serve(&page, &format!("assets/{name}"))
}
