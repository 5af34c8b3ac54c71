//! The pool's loopback listener: every request Claude Code sends while the
//! pool is on, forwarded to the API with the account its session is pinned
//! to (ADAPTERS.md, Claude Code row, Pool).
//!
//! It owns one request's way through: the listener's token checked in
//! constant time (a request without it is refused before anything else),
//! `metadata.user_id`'s account part rewritten and its session pinned, the
//! account's bearer and the OAuth beta header put on, the answer's head
//! relayed with its limits read off it, and its body streamed back as it
//! comes (no buffering: hyper asks the upstream stream for the next chunk
//! only when the client took the last, so backpressure holds end to end;
//! chunks that are already there go out together, and with the head,
//! `relay`).
//! It must not keep or log a body, a token or a header's value; what a
//! session's limits become is the caller's (`Observer`), and serving the
//! socket (deadlines, connection cap, loopback only) is the caller's too.

use crate::accounts::{Chosen, NoAccount, Pool};
use crate::limits::{self, Observed};
use crate::relay::{Joined, Watched};
use crate::user_id::UserId;
use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Request, Response, StatusCode};
use futures_util::{StreamExt, TryStreamExt};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;
use subtle::ConstantTimeEq;

/// The beta every OAuth-bearing request carries.
pub use crate::oauth::BETA as OAUTH_BETA;

/// A request body larger than this is refused (a whole conversation with
/// its images fits many times over).
pub const MAX_REQUEST_BYTES: usize = 256 * 1024 * 1024;

/// An answer whose head, or whose body's next chunk, does not come within
/// this is given up (the API pings a stream every few seconds).
pub const READ_TIMEOUT: Duration = Duration::from_secs(300);

/// What the caller does with the limits an answer carried. Called on the
/// request's task: it must not block.
pub trait Observer: Send + Sync + 'static {
    fn observed(&self, session: Option<&str>, account_id: &str, observed: &Observed);
}

/// The proxy's shared parts.
pub struct Proxy {
    token: String,
    /// The API base, read once (`None`: not a URL, and every request is
    /// answered that the API cannot be reached).
    upstream: Option<reqwest::Url>,
    client: reqwest::Client,
    pool: Arc<Pool>,
    observer: Arc<dyn Observer>,
}

impl Proxy {
    /// `token` is what `pool on` wrote as `ANTHROPIC_AUTH_TOKEN`; `upstream`
    /// the API base (`endpoints::api_base()`); `client` the one pooled client
    /// (`client()`).
    pub fn new(
        token: String,
        upstream: String,
        client: reqwest::Client,
        pool: Arc<Pool>,
        observer: Arc<dyn Observer>,
    ) -> Proxy {
        Proxy {
            token,
            upstream: reqwest::Url::parse(upstream.trim_end_matches('/')).ok(),
            client,
            pool,
            observer,
        }
    }

    /// Every path and method goes through `forward`.
    pub fn router(self) -> Router {
        Router::new().fallback(forward).with_state(Arc::new(self))
    }
}

/// The upstream client: HTTPS with connections kept and reused, no redirect
/// followed, no proxy from the environment, and no deadline on a whole
/// answer (a turn streams for minutes). The deadline on each read
/// (`READ_TIMEOUT`) is the proxy's own: reqwest's read the clock twice and
/// moved a timer in the runtime's wheel for every chunk (`relay::Watched`).
/// HTTP/2 when the API offers it in the handshake: then the requests in
/// flight share a connection, where Claude Code's own client picks HTTP/1.1
/// even when offered both and opens one for each (BENCHMARKS.md).
pub fn client() -> reqwest::Client {
    client_builder()
        .build()
        .expect("a client with these settings builds")
}

/// `client()`'s settings, for a caller that adds to them (the benchmark
/// trusts its own loopback API's certificate; nothing else is loosened).
pub fn client_builder() -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .tcp_nodelay(true)
        .connect_timeout(Duration::from_secs(10))
        .pool_idle_timeout(Duration::from_secs(90))
}

/// Headers that are the connection's and not the message's (RFC 9110 §7.6.1),
/// the client's credentials, and what the request's new body decides.
fn dropped_on_the_way_up(name: &HeaderName) -> bool {
    matches!(
        name.as_str(),
        "connection"
            | "keep-alive"
            | "proxy-connection"
            | "proxy-authorization"
            | "te"
            | "trailer"
            | "transfer-encoding"
            | "upgrade"
            | "host"
            | "content-length"
            | "authorization"
            | "x-api-key"
            | "anthropic-beta"
    )
}

fn dropped_on_the_way_down(name: &HeaderName) -> bool {
    matches!(
        name.as_str(),
        "connection"
            | "keep-alive"
            | "proxy-connection"
            | "te"
            | "trailer"
            | "transfer-encoding"
            | "upgrade"
    )
}

async fn forward(State(proxy): State<Arc<Proxy>>, request: Request<Body>) -> Response<Body> {
    let (parts, body) = request.into_parts();
    if !authorized(&parts.headers, &proxy.token) {
        return error(
            StatusCode::UNAUTHORIZED,
            "authentication_error",
            "this is sessionpipe's account pool: the request does not carry its token",
        );
    }
    let body = match axum::body::to_bytes(body, MAX_REQUEST_BYTES).await {
        Ok(b) => b,
        Err(_) => {
            return error(
                StatusCode::PAYLOAD_TOO_LARGE,
                "request_too_large",
                "the request body could not be read whole",
            );
        }
    };
    let user_id = UserId::find(&body);
    let session = user_id.as_ref().and_then(UserId::session);
    let now = protocol::time::now_ms();
    // An answer of 401 means the account's sign-in no longer works (revoked,
    // or expired early): it is set aside for a refresh and the request, not
    // yet answered, goes once more with another account when one is usable.
    let mut refused: Option<(Chosen, reqwest::Response)> = None;
    let (chosen, upstream) = loop {
        let chosen = match proxy.pool.pick(session.as_deref(), now) {
            Ok(c) => c,
            Err(_) if refused.is_some() => break refused.take().expect("checked"),
            Err(NoAccount::NoneSignedIn) => {
                return error(
                    StatusCode::UNAUTHORIZED,
                    "authentication_error",
                    "no account in sessionpipe's pool can be used: see `sessionpipe pool status`",
                );
            }
            Err(NoAccount::AllRejected { until_ms }) => {
                let when = until_ms.map_or_else(|| "later".into(), protocol::time::rfc3339_ms);
                return error(
                    StatusCode::TOO_MANY_REQUESTS,
                    "rate_limit_error",
                    &format!("every account in sessionpipe's pool is at its limit until {when}"),
                );
            }
        };
        let upstream = match send_as(&proxy, &parts, &body, user_id.as_ref(), &chosen).await {
            Ok(r) => r,
            Err(answer) => return answer,
        };
        if upstream.status() != StatusCode::UNAUTHORIZED || refused.is_some() {
            break (chosen, upstream);
        }
        tracing::warn!(
            "pool: the API refused {}'s sign-in; it waits for a refresh",
            chosen.account_id
        );
        proxy.pool.sign_in_refused(&chosen.account_id, now);
        refused = Some((chosen, upstream));
    };

    let observed = limits::read(
        upstream
            .headers()
            .iter()
            .filter_map(|(n, v)| Some((n.as_str(), v.to_str().ok()?))),
    );
    if !observed.is_empty() {
        proxy.pool.observe(&chosen.account_id, &observed, now);
        proxy
            .observer
            .observed(session.as_deref(), &chosen.account_id, &observed);
    }

    let mut answer = Response::builder().status(upstream.status());
    if let Some(h) = answer.headers_mut() {
        for (name, value) in upstream.headers() {
            if !dropped_on_the_way_down(name) {
                h.append(name.clone(), value.clone());
            }
        }
    }
    let mut stream = Joined::new(Watched::new(
        upstream.bytes_stream().map_err(std::io::Error::other),
        READ_TIMEOUT,
    ));
    // An ended or not yet ready stream stays as it is: it ends again, or
    // goes on, where hyper polls it.
    let body = match stream.first().await {
        Poll::Ready(Some(first)) => {
            Body::from_stream(futures_util::stream::once(async { first }).chain(stream))
        }
        Poll::Ready(None) | Poll::Pending => Body::from_stream(stream),
    };
    answer
        .body(body)
        .unwrap_or_else(|_| error(StatusCode::BAD_GATEWAY, "api_error", "a bad answer head"))
}

/// Sends the request up as `chosen`: its bearer, the OAuth beta, and
/// `metadata.user_id` naming it. A request that cannot go is answered here.
async fn send_as(
    proxy: &Proxy,
    parts: &axum::http::request::Parts,
    body: &axum::body::Bytes,
    user_id: Option<&UserId>,
    chosen: &Chosen,
) -> Result<reqwest::Response, Response<Body>> {
    let body = match user_id.and_then(|u| u.rewrite(body, &chosen.account_id)) {
        Some(rewritten) => reqwest::Body::from(rewritten),
        None => reqwest::Body::from(body.clone()),
    };
    let Some(target) = proxy.upstream.as_ref().map(|base| target(base, &parts.uri)) else {
        tracing::warn!("pool: the API's address is not a URL");
        return Err(unreachable());
    };
    let mut headers = HeaderMap::with_capacity(parts.headers.len() + 2);
    for (name, value) in &parts.headers {
        if !dropped_on_the_way_up(name) {
            headers.append(name.clone(), value.clone());
        }
    }
    let Ok(mut bearer) = HeaderValue::try_from(format!("Bearer {}", chosen.bearer)) else {
        return Err(error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "api_error",
            "an account's sign-in cannot be sent as a header",
        ));
    };
    bearer.set_sensitive(true);
    headers.insert(axum::http::header::AUTHORIZATION, bearer);
    headers.insert(
        HeaderName::from_static("anthropic-beta"),
        with_oauth_beta(&parts.headers),
    );
    let sent = proxy
        .client
        .request(parts.method.clone(), target)
        .headers(headers)
        .body(body)
        .send();
    match tokio::time::timeout(READ_TIMEOUT, sent).await {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(e)) => {
            // reqwest's error names the URL, never a header.
            tracing::warn!("pool: the API did not answer: {e}");
            Err(unreachable())
        }
        Err(_) => {
            tracing::warn!("pool: the API sent no answer within {READ_TIMEOUT:?}");
            Err(unreachable())
        }
    }
}

fn unreachable() -> Response<Body> {
    error(
        StatusCode::BAD_GATEWAY,
        "api_error",
        "sessionpipe's pool could not reach the API",
    )
}

/// The request's path and query under the API base: what parsing the two
/// joined as text gives, without parsing the base's scheme and host again
/// for every request.
fn target(base: &reqwest::Url, uri: &axum::http::Uri) -> reqwest::Url {
    let mut target = base.clone();
    let path = uri.path();
    if base.path() == "/" {
        target.set_path(path);
    } else {
        target.set_path(&format!("{}{path}", base.path()));
    }
    target.set_query(uri.query());
    target
}

/// The listener's token, as Claude Code sends `ANTHROPIC_AUTH_TOKEN`
/// (`authorization: Bearer …`), or as an API key (`x-api-key`), compared in
/// constant time.
fn authorized(headers: &HeaderMap, token: &str) -> bool {
    let bearer = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let key = headers.get("x-api-key").and_then(|v| v.to_str().ok());
    let matches = |given: Option<&str>| {
        given.is_some_and(|g| bool::from(g.as_bytes().ct_eq(token.as_bytes())))
    };
    !token.is_empty() && (matches(bearer) | matches(key))
}

/// The client's betas, with the OAuth one added when it is not there.
fn with_oauth_beta(headers: &HeaderMap) -> HeaderValue {
    let given: Vec<&str> = headers
        .get_all("anthropic-beta")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|b| !b.is_empty())
        .collect();
    let mut all = given.join(",");
    if !given.contains(&OAUTH_BETA) {
        if !all.is_empty() {
            all.push(',');
        }
        all.push_str(OAUTH_BETA);
    }
    HeaderValue::from_str(&all).unwrap_or(HeaderValue::from_static(OAUTH_BETA))
}

/// An error in the API's own shape, so Claude Code shows its message.
fn error(status: StatusCode, kind: &str, message: &str) -> Response<Body> {
    let body = serde_json::json!({
        "type": "error",
        "error": {"type": kind, "message": message},
    });
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_is_checked_either_way_and_nothing_else_passes() {
        let mut h = HeaderMap::new();
        assert!(!authorized(&h, "tok"));
        h.insert("authorization", HeaderValue::from_static("Bearer tok"));
        assert!(authorized(&h, "tok"));
        assert!(!authorized(&h, "tok2"));
        assert!(!authorized(&h, ""), "an empty token opens nothing");
        let mut k = HeaderMap::new();
        k.insert("x-api-key", HeaderValue::from_static("tok"));
        assert!(authorized(&k, "tok"));
        k.insert("x-api-key", HeaderValue::from_static("to"));
        assert!(!authorized(&k, "tok"));
    }

    #[test]
    fn a_target_is_what_the_base_and_the_path_joined_as_text_parse_to() {
        for base in [
            "http://127.0.0.1:8080",
            "https://api.anthropic.com",
            "https://h.example/api",
        ] {
            let url = reqwest::Url::parse(base).unwrap();
            for path in [
                "/v1/messages",
                "/v1/messages?beta=true",
                "/v1/messages/count_tokens?beta=true&x=%20y",
                "/",
                "/a%2Fb/c d?q=é",
                "/a/./b/../c?",
            ] {
                let uri: axum::http::Uri = match path.parse() {
                    Ok(u) => u,
                    Err(_) => continue,
                };
                let joined = format!("{base}{}", uri.path_and_query().unwrap().as_str());
                assert_eq!(
                    target(&url, &uri).as_str(),
                    reqwest::Url::parse(&joined).unwrap().as_str(),
                    "{base} {path}"
                );
            }
        }
    }

    #[test]
    fn the_oauth_beta_joins_the_clients_own_once() {
        let mut h = HeaderMap::new();
        assert_eq!(with_oauth_beta(&h), OAUTH_BETA);
        h.insert(
            "anthropic-beta",
            HeaderValue::from_static("claude-code-20250219, effort-2025-11-24"),
        );
        assert_eq!(
            with_oauth_beta(&h),
            "claude-code-20250219,effort-2025-11-24,oauth-2025-04-20"
        );
        h.insert(
            "anthropic-beta",
            HeaderValue::from_static("oauth-2025-04-20,x"),
        );
        assert_eq!(with_oauth_beta(&h), "oauth-2025-04-20,x");
    }
}
