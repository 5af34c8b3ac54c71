//! The daemon's local API and the UI's files, on loopback, behind a token.
//!
//! The same UI (`ui/dist`) runs in the app's window and, on a machine without a
//! desktop, in a browser pointed here. Every `/api/` call needs the token (a
//! bearer header; `ui.json` in the state dir, 0600, holds it and the URL); the
//! static files need none (they hold no data). Requests whose `Host` is not this
//! loopback address are refused, so a web page cannot reach the API through DNS
//! rebinding. The listener binds 127.0.0.1 only. Handlers call the library: this
//! module owns routing and checks, not behaviour.

mod views;

use crate::paths::StatePaths;
use axum::Router;
use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

/// A running API.
pub struct Api {
    pub url: String,
    pub token: String,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Api {
    /// The address the UI opens, with the token in the fragment (never sent).
    pub fn ui_url(&self) -> String {
        format!("{}/#token={}", self.url, self.token)
    }

    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        if let Some(s) = self.shutdown.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Api {
    fn drop(&mut self) {
        self.halt();
    }
}

#[derive(Clone)]
struct Ctx {
    paths: StatePaths,
    token: Arc<String>,
    host: Arc<String>,
    ui_dir: Option<Arc<PathBuf>>,
}

/// Starts the API on `127.0.0.1:port` (0: any free port) in its own thread and
/// writes `ui.json` (URL and token, 0600) to the state dir.
pub fn start(paths: &StatePaths, ui_dir: Option<PathBuf>, port: u16) -> std::io::Result<Api> {
    let token = new_token();
    let listener = std::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], port)))?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    let url = format!("http://127.0.0.1:{}", addr.port());
    let ctx = Ctx {
        paths: paths.clone(),
        token: Arc::new(token.clone()),
        host: Arc::new(format!("127.0.0.1:{}", addr.port())),
        ui_dir: ui_dir.map(Arc::new),
    };
    let doc = json!({"url": url, "token": token});
    crate::paths::write_private_file(&paths.root.join("ui.json"), doc.to_string().as_bytes())?;
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::Builder::new()
        .name("api".into())
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("the API's runtime starts");
            rt.block_on(async move {
                let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                    return;
                };
                let app = router(ctx);
                let _ = axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = rx.await;
                    })
                    .await;
            });
        })?;
    Ok(Api {
        url,
        token,
        shutdown: Some(tx),
        thread: Some(thread),
    })
}

/// 128 random bits as hex: two ULIDs' random parts, hashed.
pub fn new_token() -> String {
    use sha2::{Digest, Sha256};
    let seed = format!(
        "{}{}{}",
        ulid::Ulid::generate(),
        ulid::Ulid::generate(),
        std::process::id()
    );
    Sha256::digest(seed.as_bytes())
        .iter()
        .take(16)
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn router(ctx: Ctx) -> Router {
    let api = Router::new()
        .route("/api/overview", get(views::overview))
        .route(
            "/api/sessions/{harness}/{id}/events",
            get(views::session_events),
        )
        .route("/api/harnesses", get(views::harnesses))
        .route("/api/harnesses/{name}", post(views::set_harness))
        .route("/api/sinks", get(views::sinks).post(views::add_sink))
        .route("/api/sinks/{id}", axum::routing::delete(views::remove_sink))
        .route("/api/sinks/{id}/test", post(views::test_sink))
        .route(
            "/api/settings",
            get(views::settings).put(views::put_settings),
        )
        .layer(middleware::from_fn_with_state(ctx.clone(), require_token));
    Router::new()
        .merge(api)
        .fallback(get(static_file))
        .layer(middleware::from_fn_with_state(
            ctx.clone(),
            require_loopback_host,
        ))
        .with_state(ctx)
}

/// Refuses a request addressed to any other host (DNS rebinding).
async fn require_loopback_host(State(ctx): State<Ctx>, req: Request, next: Next) -> Response {
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    let localhost = host.replacen("localhost", "127.0.0.1", 1);
    if localhost != *ctx.host {
        return error(
            StatusCode::MISDIRECTED_REQUEST,
            "this API answers on 127.0.0.1 only (wrong Host)",
        );
    }
    next.run(req).await
}

async fn require_token(
    State(ctx): State<Ctx>,
    headers: HeaderMap,
    req: Request,
    next: Next,
) -> Response {
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    if !constant_time_eq(given.as_bytes(), ctx.token.as_bytes()) {
        return error(StatusCode::UNAUTHORIZED, "the UI token is missing or wrong");
    }
    next.run(req).await
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

pub(crate) fn error(status: StatusCode, why: &str) -> Response {
    (status, axum::Json(json!({"error": why}))).into_response()
}

/// The UI's files; an unknown path is the UI's page (it routes itself).
async fn static_file(State(ctx): State<Ctx>, uri: axum::http::Uri) -> Response {
    let Some(dir) = ctx.ui_dir.as_deref() else {
        return error(
            StatusCode::NOT_FOUND,
            "this daemon serves no UI (build ui/ and start it with --ui)",
        );
    };
    let rel = uri.path().trim_start_matches('/');
    let safe = !rel
        .split('/')
        .any(|part| part == ".." || part.starts_with('.'));
    let mut path = if rel.is_empty() || !safe {
        dir.join("index.html")
    } else {
        dir.join(rel)
    };
    if !path.is_file() {
        path = dir.join("index.html");
    }
    match tokio::fs::read(&path).await {
        Ok(bytes) => {
            let kind = match path.extension().and_then(|e| e.to_str()) {
                Some("html") => "text/html; charset=utf-8",
                Some("js") => "text/javascript; charset=utf-8",
                Some("css") => "text/css; charset=utf-8",
                Some("svg") => "image/svg+xml",
                Some("png") => "image/png",
                Some("json") => "application/json",
                _ => "application/octet-stream",
            };
            (
                [
                    (header::CONTENT_TYPE, kind),
                    (header::CACHE_CONTROL, "no-store"),
                ],
                bytes,
            )
                .into_response()
        }
        Err(_) => error(StatusCode::NOT_FOUND, "no such file"),
    }
}

/// A blocking library call on the runtime's blocking pool, its error as a 400.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, Response> {
    match tokio::task::spawn_blocking(f).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(why)) => Err(error(StatusCode::BAD_REQUEST, &why)),
        Err(_) => Err(error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the request failed",
        )),
    }
}

/// The query of `/api/sessions/.../events`.
#[derive(serde::Deserialize)]
pub(crate) struct Limit {
    pub limit: Option<usize>,
}

pub(crate) type Json = axum::Json<Value>;
pub(crate) type Q = Query<Limit>;
pub(crate) type P2 = Path<(String, String)>;
pub(crate) type P1 = Path<String>;
