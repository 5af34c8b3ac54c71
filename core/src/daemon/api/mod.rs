//! The daemon's local API and the UI's files, on loopback, behind a token.
//!
//! The same UI (`ui/dist`) runs in the app's window and, on a machine without a
//! desktop, in a browser pointed here. Every `/api/` call needs the token (a
//! bearer header; `ui.json` in the state dir, 0600, holds it and the URL); the
//! static files need none (they hold no data). Requests whose `Host` is not this
//! loopback address are refused, so a web page cannot reach the API through DNS
//! rebinding, and so is any request with more than one `Host`. The listener
//! binds 127.0.0.1 only and serves on the daemon's runtime through
//! `sessionpipe-listener` (a connection cap, header and request deadlines). This module owns routing and checks; `views` the handlers, which call
//! the library (`pool` the Pool page's, `usage` the Usage page's); `error` what a failure answers;
//! `shapes` what they answer with, declared for the UI by `typescript`.

mod control;
mod error;
mod pool;
#[cfg(test)]
mod props;
mod shapes;
#[cfg(test)]
mod typescript;
mod usage;
mod views;

pub use error::ApiError;
use views::Ctx;

use crate::state::ui_file::{SavedAddress, UiAddress};
use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use spool::StatePaths;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use subtle::ConstantTimeEq;
use tower_http::services::{ServeDir, ServeFile};

/// A running API.
pub struct Api {
    pub url: String,
    /// The token, which `POST /api/ui-token` replaces while it runs.
    token: Arc<std::sync::RwLock<String>>,
    serves_ui: bool,
    paths: StatePaths,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl Api {
    /// Stops taking connections and lets the ones open finish (briefly).
    pub async fn stop(mut self) {
        if let Some(s) = self.shutdown.take() {
            let _ = s.send(());
        }
        let _ = (&mut self.task).await;
        let address = UiAddress {
            url: self.url.clone(),
            token: read_token(&self.token),
            ui: self.serves_ui,
        };
        address.remove_if_current(&self.paths);
    }
}

/// Starts the API on `127.0.0.1:port` on the current runtime and writes
/// `ui.json` (URL and token, 0600) to the state dir. With `port` 0 it takes
/// the port and token it had last time (`ui-saved.json`), so a bookmarked
/// link keeps working; any free port when that one is taken. `config` is the
/// daemon's settings in force.
pub fn start(
    paths: &StatePaths,
    ui_dir: Option<PathBuf>,
    port: u16,
    config: crate::state::live_config::LiveConfig,
    hub: Option<Arc<crate::control::hub::Hub>>,
    control: Option<Arc<crate::control::machine::Control>>,
) -> std::io::Result<Api> {
    let saved = SavedAddress::load(paths);
    let token = saved
        .as_ref()
        .map(|s| s.token.clone())
        .filter(|t| t.len() >= 32 && t.bytes().all(|b| b.is_ascii_hexdigit()))
        .unwrap_or_else(new_token);
    let listener = bind(port, saved.map(|s| s.port))?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    let listener = tokio::net::TcpListener::from_std(listener)?;
    let url = format!("http://127.0.0.1:{}", addr.port());
    let kept = SavedAddress {
        port: addr.port(),
        token: token.clone(),
    };
    if let Err(e) = kept.save(paths) {
        tracing::warn!("the UI's address is not kept for the next start: {e}");
    }
    let token = Arc::new(std::sync::RwLock::new(token));
    let ctx = Ctx {
        paths: paths.clone(),
        token: token.clone(),
        host: Arc::new(format!("127.0.0.1:{}", addr.port())),
        pairing: Arc::default(),
        hub,
        control,
        serves_ui: ui_dir.is_some(),
        config,
    };
    let address = UiAddress {
        url: url.clone(),
        token: read_token(&token),
        ui: ui_dir.is_some(),
    };
    address.save(paths).map_err(std::io::Error::other)?;
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let serves_ui = ui_dir.is_some();
    let app = router(ctx, ui_dir);
    let limits = sessionpipe_listener::Limits::LOCAL_API;
    let task = tokio::spawn(sessionpipe_listener::serve(listener, app, limits, async {
        let _ = rx.await;
    }));
    Ok(Api {
        url,
        token,
        serves_ui,
        paths: paths.clone(),
        shutdown: Some(tx),
        task,
    })
}

/// `port` when one is asked for; else the port of last time when it is
/// free, else any free one. Loopback only.
fn bind(port: u16, last: Option<u16>) -> std::io::Result<std::net::TcpListener> {
    let on = |p: u16| std::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], p)));
    match (port, last) {
        (0, Some(last)) if last != 0 => on(last).or_else(|_| on(0)),
        (port, _) => on(port),
    }
}

fn read_token(token: &std::sync::RwLock<String>) -> String {
    token.read().unwrap_or_else(|p| p.into_inner()).clone()
}

/// 128 bits from the OS's random source, as hex.
pub fn new_token() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the OS has a random source");
    hex::encode(bytes)
}

fn router(ctx: Ctx, ui_dir: Option<PathBuf>) -> Router {
    let api = Router::new()
        .route("/overview", get(views::overview))
        .route(
            "/sessions/{harness}/{id}/events",
            get(views::session_events),
        )
        .route(
            "/sessions/{harness}/{id}/changes",
            get(views::session_changes),
        )
        .route("/sessions/{harness}/{id}/stop", post(control::stop))
        .route("/harnesses", get(views::harnesses))
        .route("/harnesses/{name}", post(views::set_harness))
        .route("/offers", get(views::offers))
        .route("/offers/{name}/decline", post(views::decline_offer))
        .route("/sinks", get(views::sinks).post(views::add_sink))
        .route("/sinks/{id}", axum::routing::delete(views::remove_sink))
        .route("/sinks/{id}/test", post(views::test_sink))
        .route("/settings", get(views::settings).put(views::put_settings))
        .route("/titles", get(views::titles).put(views::put_titles))
        .route("/progress", get(views::progress))
        .route("/usage", get(usage::report))
        .route("/usage/days", get(usage::days))
        .route("/usage/sessions", get(usage::sessions))
        .route("/usage/limits", get(usage::limits))
        .route("/ui-token", post(new_ui_token))
        .route("/pool", get(pool::view))
        .route("/pool/on", post(pool::on))
        .route("/pool/off", post(pool::off))
        .route("/pool/import", post(pool::import))
        .route("/pool/accounts/{id}", axum::routing::delete(pool::remove))
        .route("/pool/accounts/{id}/enable", post(pool::enable))
        .route("/pool/accounts/{id}/disable", post(pool::disable))
        .route("/control", get(control::view))
        .route("/control/pair", post(control::pair))
        .route("/control/off", post(control::off))
        .route("/approvals", post(control::answer))
        .route(
            "/control/keys/{id}",
            axum::routing::delete(control::remove_key),
        )
        .fallback(|| async { ApiError::NotFound("no such API call".into()) })
        .layer(middleware::from_fn_with_state(ctx.clone(), require_token));
    let app = Router::new().nest("/api", api);
    let app = match ui_dir {
        // An unknown path is the UI's page: it routes itself.
        Some(dir) => app.fallback_service(
            ServeDir::new(&dir)
                .append_index_html_on_directories(true)
                .fallback(ServeFile::new(dir.join("index.html"))),
        ),
        None => app.fallback(|| async {
            ApiError::NotFound("this daemon serves no UI (build ui/ and start it with --ui)".into())
        }),
    };
    app.layer(middleware::map_response(no_store))
        .layer(middleware::from_fn_with_state(
            ctx.clone(),
            require_loopback_host,
        ))
        .with_state(ctx)
}

/// `POST /api/ui-token` (`sessionpipe ui --new-token`): a new token, at
/// once; the old one opens nothing from the next request on. Answers the
/// new page's address (the caller held the old token, so may see the new).
async fn new_ui_token(State(ctx): State<Ctx>) -> Result<axum::Json<serde_json::Value>, ApiError> {
    let token = new_token();
    let port = ctx
        .host
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    let (paths, t) = (ctx.paths.clone(), token.clone());
    let serves_ui = ctx.serves_ui;
    let address = crate::runtime::blocking(move || {
        SavedAddress {
            port,
            token: t.clone(),
        }
        .save(&paths)?;
        let address = UiAddress {
            url: format!("http://127.0.0.1:{port}"),
            token: t,
            ui: serves_ui,
        };
        address.save(&paths).map(|()| address)
    })
    .await
    .map_err(|e| ApiError::Internal(e.to_string()))?;
    *ctx.token.write().unwrap_or_else(|p| p.into_inner()) = token;
    Ok(shapes::reply(&shapes::UiToken {
        page: address.page(None),
        url: address.url,
    }))
}

/// Nothing the daemon serves is cached: the board changes, the UI is rebuilt.
async fn no_store(mut resp: Response) -> Response {
    resp.headers_mut().insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-store"),
    );
    resp
}

/// Refuses a request addressed to any other host (DNS rebinding), and one that
/// names two (which of them a proxy or a check would read is anyone's guess).
async fn require_loopback_host(State(ctx): State<Ctx>, req: Request, next: Next) -> Response {
    let mut hosts = req.headers().get_all(header::HOST).iter();
    let (Some(host), None) = (hosts.next(), hosts.next()) else {
        return ApiError::WrongHost.into_response();
    };
    let host = host.to_str().unwrap_or("");
    let localhost = host.replacen("localhost", "127.0.0.1", 1);
    if localhost != *ctx.host {
        return ApiError::WrongHost.into_response();
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
    if !bool::from(given.as_bytes().ct_eq(read_token(&ctx.token).as_bytes())) {
        return ApiError::Unauthorized.into_response();
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_128_random_bits() {
        let (a, b) = (new_token(), new_token());
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }
}
