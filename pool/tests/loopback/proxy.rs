//! The pool's proxy over real HTTP on loopback: a recording upstream (axum,
//! in this test; over HTTPS with HTTP/2 offered, as the API serves, in one),
//! the proxy served by the same listener the daemon uses, and a reqwest
//! client in Claude Code's place.

use crate::https_edge;
use axum::body::Body;
use axum::http::{HeaderMap, Response};
use sessionpipe_pool::accounts::{Account, Pool};
use sessionpipe_pool::limits::Observed;
use sessionpipe_pool::oauth::{Secret, Tokens};
use sessionpipe_pool::proxy::{self, Observer, Proxy};
use std::sync::{Arc, Mutex};
use tokio::net::TcpListener;
use tokio::sync::Notify;

const TOKEN: &str = "listener-token-7f3a";
/// A request whose content says this gets its answer's head alone, its
/// body's parts each after a `release`.
const HOLD_ALL: &str = "hold every part";
const SESSION: &str = "fa33ef6d-170e-441a-a797-a456ed75ceff";

/// What the upstream received: (path, headers, body).
type Seen = Arc<Mutex<Vec<(String, HeaderMap, Vec<u8>)>>>;

#[derive(Default)]
struct Heard(Mutex<Vec<(Option<String>, String, Observed)>>);

impl Observer for Heard {
    fn observed(&self, session: Option<&str>, account_id: &str, observed: &Observed) {
        self.0.lock().unwrap().push((
            session.map(str::to_string),
            account_id.to_string(),
            observed.clone(),
        ));
    }
}

struct Upstream {
    base: String,
    seen: Seen,
    /// The HTTP version each request came in.
    versions: Arc<Mutex<Vec<axum::http::Version>>>,
    /// Opens the held-back part of the streamed answer.
    release: Arc<Notify>,
}

/// An upstream that records each request and answers a stream in two parts:
/// the first at once (or, for a request saying `HOLD_ALL`, after a
/// `release` too), the second only after `release`; account `b`'s
/// answers say it is rejected until a reset, and `c`'s sign-in is refused.
async fn upstream() -> Upstream {
    let (app, up) = recording("");
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", l.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(l, app).await.unwrap() });
    Upstream { base, ..up }
}

/// `upstream()`'s answers over HTTPS, HTTP/2 and HTTP/1.1 offered.
async fn https_upstream() -> (Upstream, https_edge::Edge) {
    let (app, up) = recording("");
    let edge = https_edge::serve(app).await;
    (
        Upstream {
            base: edge.base.clone(),
            ..up
        },
        edge,
    )
}

/// The recording upstream's routes, and its records (at `base`).
fn recording(base: &str) -> (axum::Router, Upstream) {
    let seen: Seen = Arc::default();
    let versions: Arc<Mutex<Vec<axum::http::Version>>> = Arc::default();
    let release = Arc::new(Notify::new());
    let (s, v, r) = (seen.clone(), versions.clone(), release.clone());
    let app = axum::Router::new().fallback(move |req: axum::extract::Request| {
        let (seen, versions, release) = (s.clone(), v.clone(), r.clone());
        async move {
            let (parts, body) = req.into_parts();
            versions.lock().unwrap().push(parts.version);
            let body = axum::body::to_bytes(body, usize::MAX)
                .await
                .unwrap()
                .to_vec();
            let auth = parts
                .headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string();
            let hold_all = body.windows(HOLD_ALL.len()).any(|w| w == HOLD_ALL.as_bytes());
            seen.lock()
                .unwrap()
                .push((parts.uri.to_string(), parts.headers.clone(), body));
            if auth == "Bearer at-c" {
                return Response::builder()
                    .status(401)
                    .header("content-type", "application/json")
                    .body(Body::from(
                        r#"{"type":"error","error":{"type":"authentication_error","message":"OAuth token has been revoked"}}"#,
                    ))
                    .unwrap();
            }
            let status = if auth == "Bearer at-b" {
                "rejected"
            } else {
                "allowed"
            };
            let (tx, rx) = tokio::sync::mpsc::channel::<Result<Vec<u8>, std::io::Error>>(2);
            tokio::spawn(async move {
                if hold_all {
                    release.notified().await;
                }
                let _ = tx
                    .send(Ok(b"event: message_start\ndata: {}\n\n".to_vec()))
                    .await;
                release.notified().await;
                let _ = tx
                    .send(Ok(b"event: message_stop\ndata: {}\n\n".to_vec()))
                    .await;
            });
            let stream = tokio_stream(rx);
            Response::builder()
                .header("content-type", "text/event-stream")
                .header("anthropic-ratelimit-unified-status", status)
                .header("anthropic-ratelimit-unified-reset", "4102444800")
                .header("anthropic-ratelimit-unified-5h-utilization", "0.42")
                .header("anthropic-ratelimit-unified-5h-reset", "4102444800")
                .header("anthropic-ratelimit-unified-7d-utilization", "0.1")
                .body(Body::from_stream(stream))
                .unwrap()
        }
    });
    let up = Upstream {
        base: base.to_string(),
        seen,
        versions,
        release,
    };
    (app, up)
}

fn tokio_stream(
    mut rx: tokio::sync::mpsc::Receiver<Result<Vec<u8>, std::io::Error>>,
) -> impl futures_util::Stream<Item = Result<Vec<u8>, std::io::Error>> {
    futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

fn tokens(access: &str) -> Tokens {
    Tokens {
        access: Secret::new(access.into()),
        refresh: Secret::new("refresh".into()),
        expires_at_ms: i64::MAX,
    }
}

/// The proxy over `upstream` with `pool`'s accounts; its base URL.
async fn proxy_over(upstream: &str, heard: Arc<Heard>, pool: Arc<Pool>) -> String {
    proxy_with(proxy::client(), upstream, heard, pool).await
}

/// As `proxy_over`, its upstream reached with `client`.
async fn proxy_with(
    client: reqwest::Client,
    upstream: &str,
    heard: Arc<Heard>,
    pool: Arc<Pool>,
) -> String {
    let proxy = Proxy::new(TOKEN.into(), upstream.into(), client, pool, heard);
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", l.local_addr().unwrap());
    tokio::spawn(sessionpipe_listener::serve(
        l,
        proxy.router(),
        sessionpipe_listener::Limits::POOL,
        std::future::pending(),
    ));
    base
}

fn pool_of(ids: &[&str]) -> Arc<Pool> {
    let pool = Arc::new(Pool::new());
    for id in ids {
        pool.put(
            Account {
                id: (*id).into(),
                email: None,
                enabled: true,
                imported_from: None,
            },
            Some(tokens(&format!("at-{id}"))),
        );
    }
    pool
}

fn body(session: &str) -> String {
    body_saying(session, "hi")
}

fn body_saying(session: &str, content: &str) -> String {
    let uid = format!(r#"{{"device_id":"d1","account_uuid":"","session_id":"{session}"}}"#);
    serde_json::json!({
        "model": "claude-x",
        "stream": true,
        "messages": [{"role": "user", "content": content}],
        "metadata": {"user_id": uid},
    })
    .to_string()
}

async fn post(
    client: &reqwest::Client,
    base: &str,
    token: Option<&str>,
    body: String,
) -> reqwest::Response {
    let mut req = client
        .post(format!("{base}/v1/messages?beta=true"))
        .header("anthropic-beta", "claude-code-20250219")
        .header("content-type", "application/json")
        .body(body);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    req.send().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_without_the_token_is_refused_before_the_upstream_hears_of_it() {
    let up = upstream().await;
    let base = proxy_over(&up.base, Arc::default(), pool_of(&["a"])).await;
    let c = reqwest::Client::new();
    for token in [None, Some("wrong"), Some("")] {
        let r = post(&c, &base, token, body(SESSION)).await;
        assert_eq!(r.status(), 401);
        let v: serde_json::Value = r.json().await.unwrap();
        assert_eq!(v["error"]["type"], "authentication_error");
    }
    let r = c
        .post(format!("{base}/v1/messages"))
        .header("x-api-key", "nope")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    assert!(up.seen.lock().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_goes_up_with_the_accounts_bearer_and_streams_back_as_it_comes() {
    let up = upstream().await;
    let heard = Arc::new(Heard::default());
    let pool = pool_of(&["a"]);
    let base = proxy_over(&up.base, heard.clone(), pool.clone()).await;
    let c = reqwest::Client::new();
    let mut r = post(&c, &base, Some(TOKEN), body(SESSION)).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "text/event-stream");
    // The first part arrives while the upstream still holds the second.
    the_first_part_then_the_rest_once_released(&up, &mut r).await;

    let seen = up.seen.lock().unwrap();
    let (path, headers, sent) = &seen[0];
    assert_eq!(path, "/v1/messages?beta=true");
    assert_eq!(headers["authorization"], "Bearer at-a");
    assert_eq!(
        headers["anthropic-beta"],
        "claude-code-20250219,oauth-2025-04-20"
    );
    for (name, value) in headers {
        assert!(
            !value
                .as_bytes()
                .windows(TOKEN.len())
                .any(|w| w == TOKEN.as_bytes()),
            "the listener's token went up in {name}"
        );
    }
    let sent: serde_json::Value = serde_json::from_slice(sent).unwrap();
    let uid: serde_json::Value =
        serde_json::from_str(sent["metadata"]["user_id"].as_str().unwrap()).unwrap();
    assert_eq!(uid["account_uuid"], "a");
    assert_eq!(uid["session_id"], SESSION);
    assert_eq!(uid["device_id"], "d1");
    assert_eq!(sent["messages"][0]["content"], "hi", "the rest as sent");

    let heard = heard.0.lock().unwrap();
    let (session, account, observed) = &heard[0];
    assert_eq!(session.as_deref(), Some(SESSION));
    assert_eq!(account, "a");
    assert_eq!(observed.windows[0].id, "five_hour");
    assert_eq!(observed.windows[0].used_percent, 42.0);
    assert_eq!(pool.pinned(SESSION).as_deref(), Some("a"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_answers_head_comes_without_waiting_for_a_body_that_has_not_come() {
    let up = upstream().await;
    let base = proxy_over(&up.base, Arc::default(), pool_of(&["a"])).await;
    let c = reqwest::Client::new();
    // The proxy sends a head together with a first chunk that is already
    // there; one that is not must not hold the head back.
    let held = post(&c, &base, Some(TOKEN), body_saying(SESSION, HOLD_ALL));
    let mut r = tokio::time::timeout(std::time::Duration::from_secs(10), held)
        .await
        .expect("the head came while the upstream held its whole body");
    assert_eq!(r.status(), 200);
    up.release.notify_one();
    the_first_part_then_the_rest_once_released(&up, &mut r).await;
}

/// `r`'s body: the upstream's first part, then (after a `release`) the rest.
async fn the_first_part_then_the_rest_once_released(up: &Upstream, r: &mut reqwest::Response) {
    let first = r.chunk().await.unwrap().unwrap();
    assert_eq!(&first[..], b"event: message_start\ndata: {}\n\n");
    up.release.notify_one();
    let mut rest = Vec::new();
    while let Some(c) = r.chunk().await.unwrap() {
        rest.extend_from_slice(&c);
    }
    assert_eq!(rest, b"event: message_stop\ndata: {}\n\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_sessions_keep_their_accounts_and_a_rejected_one_is_left_out() {
    let up = upstream().await;
    let pool = pool_of(&["a", "b"]);
    let base = proxy_over(&up.base, Arc::default(), pool.clone()).await;
    let c = reqwest::Client::new();
    let release = up.release.clone();
    let drain = |r: reqwest::Response| {
        let release = release.clone();
        async move {
            release.notify_one();
            r.bytes().await.unwrap();
        }
    };
    // Two sessions: spread over both accounts.
    drain(post(&c, &base, Some(TOKEN), body("s-one")).await).await;
    drain(post(&c, &base, Some(TOKEN), body("s-two")).await).await;
    let one = pool.pinned("s-one").unwrap();
    let two = pool.pinned("s-two").unwrap();
    assert_ne!(one, two);
    // `b` answered `rejected`: its session moves to `a`, and so does any new one.
    drain(post(&c, &base, Some(TOKEN), body("s-two")).await).await;
    drain(post(&c, &base, Some(TOKEN), body("s-one")).await).await;
    drain(post(&c, &base, Some(TOKEN), body("s-three")).await).await;
    let bearers: Vec<String> = up
        .seen
        .lock()
        .unwrap()
        .iter()
        .map(|(_, h, _)| h["authorization"].to_str().unwrap().to_string())
        .collect();
    assert_eq!(bearers.len(), 5);
    assert_eq!(&bearers[2..], ["Bearer at-a", "Bearer at-a", "Bearer at-a"]);
    assert_eq!(pool.pinned("s-two").as_deref(), Some("a"));
    let b = pool.views(0).into_iter().find(|v| v.id == "b").unwrap();
    assert_eq!(b.status, "rejected");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_sign_in_is_set_aside_and_the_request_goes_again_with_another_account() {
    let up = upstream().await;
    let pool = pool_of(&["c"]);
    let base = proxy_over(&up.base, Arc::default(), pool.clone()).await;
    let c = reqwest::Client::new();
    // No other account: Claude Code gets the API's own 401.
    let alone = post(&c, &base, Some(TOKEN), body("s-one")).await;
    assert_eq!(alone.status(), 401);
    assert!(alone.text().await.unwrap().contains("revoked"));
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let view = pool.views(now_ms).into_iter().next().unwrap();
    assert_eq!(view.status, "expired", "set aside until a refresh");
    assert!(view.refresh_error.unwrap().contains("refused"));
    assert!(
        pool.tokens().iter().any(|(id, _)| id == "c"),
        "and handed to the refresher"
    );
    // Signed in again (here the same refused token) beside another account:
    // the session's request is refused on `c` and answered on `a`.
    pool.set_tokens("c", tokens("at-c"));
    pool.put(
        Account {
            id: "a".into(),
            email: None,
            enabled: true,
            imported_from: None,
        },
        Some(tokens("at-a")),
    );
    assert_eq!(pool.pinned("s-one").as_deref(), Some("c"));
    up.release.notify_one();
    let answered = post(&c, &base, Some(TOKEN), body("s-one")).await;
    assert_eq!(answered.status(), 200);
    answered.bytes().await.unwrap();
    let seen = up.seen.lock().unwrap();
    let bearers: Vec<&str> = seen
        .iter()
        .map(|(_, h, _)| h["authorization"].to_str().unwrap())
        .collect();
    assert_eq!(bearers, ["Bearer at-c", "Bearer at-c", "Bearer at-a"]);
    let uid = serde_json::from_slice::<serde_json::Value>(&seen[2].2).unwrap();
    assert!(
        uid["metadata"]["user_id"]
            .as_str()
            .unwrap()
            .contains(r#""account_uuid":"a""#),
        "the retry names its own account"
    );
    drop(seen);
    assert_eq!(pool.pinned("s-one").as_deref(), Some("a"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_that_does_not_answer_is_a_502_in_the_apis_shape() {
    let dead = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let gone = format!("http://{}", dead.local_addr().unwrap());
    drop(dead);
    let base = proxy_over(&gone, Arc::default(), pool_of(&["a"])).await;
    let r = post(&reqwest::Client::new(), &base, Some(TOKEN), body(SESSION)).await;
    assert_eq!(r.status(), 502);
    let v: serde_json::Value = r.json().await.unwrap();
    assert_eq!(v["type"], "error");
    // And with no usable account, a clear refusal.
    let none = proxy_over(&gone, Arc::default(), Arc::new(Pool::new())).await;
    let r = post(&reqwest::Client::new(), &none, Some(TOKEN), body(SESSION)).await;
    assert_eq!(r.status(), 401);
    let v: serde_json::Value = r.json().await.unwrap();
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("pool status")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_https_the_proxy_speaks_http2_when_offered_and_streams_in_flight_share_one_connection()
{
    let (up, edge) = https_upstream().await;
    // The proxy's own client settings; only the loopback edge's certificate
    // is added to what it trusts.
    let client = proxy::client_builder()
        .add_root_certificate(edge.cert.clone())
        .build()
        .unwrap();
    let heard = Arc::new(Heard::default());
    let base = proxy_with(client, &up.base, heard.clone(), pool_of(&["a"])).await;
    let c = reqwest::Client::new();
    let mut r = post(&c, &base, Some(TOKEN), body(SESSION)).await;
    assert_eq!(r.status(), 200);
    the_first_part_then_the_rest_once_released(&up, &mut r).await;
    // Five streams at once, each held open by the upstream after its first
    // part: over HTTP/1.1 that is five connections; over HTTP/2, the one.
    let mut open = Vec::new();
    for i in 0..5 {
        let session = format!("s-{i}");
        open.push(tokio::spawn({
            let (c, base) = (c.clone(), base.clone());
            async move { post(&c, &base, Some(TOKEN), body(&session)).await }
        }));
    }
    let mut streams = Vec::new();
    for o in open {
        let mut r = o.await.unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()["content-type"], "text/event-stream");
        let first = r.chunk().await.unwrap().unwrap();
        assert_eq!(&first[..], b"event: message_start\ndata: {}\n\n");
        streams.push(r);
    }
    assert_eq!(edge.accepted(), 1, "all six on the first connection");
    // Release them all (a wake-up may reach a stream before it waits, so
    // until every one has ended), and each gets its end.
    let releasing = tokio::spawn({
        let release = up.release.clone();
        async move {
            loop {
                release.notify_one();
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
        }
    });
    for r in streams {
        assert_eq!(
            &r.bytes().await.unwrap()[..],
            b"event: message_stop\ndata: {}\n\n"
        );
    }
    releasing.abort();
    let versions = up.versions.lock().unwrap().clone();
    assert_eq!(versions, vec![axum::http::Version::HTTP_2; 6]);
    assert_eq!(up.seen.lock().unwrap()[0].1["authorization"], "Bearer at-a");
    assert_eq!(
        heard.0.lock().unwrap().len(),
        6,
        "each answer's limits read"
    );
}
