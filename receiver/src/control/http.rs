//! The control side's routes: `POST {control}/pair` and `GET {control}/pair`,
//! the machine calls (`hello`, the long-poll, `ack`, `off`, `GET
//! {control}/files/{sha256}`), and the pairing's plain page when the page is
//! off.
//!
//! This module owns who may call what (the sink token for pairing, a poll
//! key for an open pairing's status, a machine's own token for its calls and
//! nothing else) and each call's answer. It must not touch the database
//! itself (the store does) and never logs a token, a poll key or an
//! `authorization` header.

use super::error::Refused;
use super::options::CONTROL_PATH;
use super::shapes::{self, Malformed};
use super::state::{Control, random_b64, sha256, six_digits};
use super::store::Look;
use crate::error::ApiError;
use crate::limits::{Door, Quota};
use crate::request::{bearer, read_json};
use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use subtle::ConstantTimeEq;
use tokio::time::Instant;

/// The most body bytes a control request may have: an ack of `ACKS_MAX`
/// replies of 20 000 characters, JSON-escaped, fits; past it the answer is 413
/// and the connection is closed.
pub(super) const BODY_MAX: usize = 4 * 1024 * 1024;

/// The most messages one poll hands out; the rest come with the next poll.
const POLL_MAX: usize = 50;

pub(super) type Params = Query<HashMap<String, String>>;

/// The control side's routes (`/pair/{code}` too when the page is off: the
/// page serves its own there).
pub fn router(control: Arc<Control>) -> Router {
    let r = Router::new()
        .route(CONTROL_PATH, get(poll))
        .route(
            &format!("{CONTROL_PATH}/pair"),
            post(pair_start).get(pair_status),
        )
        .route(&format!("{CONTROL_PATH}/hello"), post(hello))
        .route(&format!("{CONTROL_PATH}/ack"), post(ack))
        .route(&format!("{CONTROL_PATH}/off"), post(off))
        .route(&format!("{CONTROL_PATH}/files/{{sha256}}"), get(file));
    let r = if control.page_origin.is_none() {
        r.route("/pair/{code}", get(pair_page))
    } else {
        r
    };
    r.with_state(control)
}

pub(super) fn now() -> i64 {
    protocol::time::now_ms()
}

impl Control {
    /// Whether the request's bearer is the receiver's own token.
    pub(super) fn is_sink(&self, headers: &HeaderMap) -> bool {
        bearer(headers).is_some_and(|t| self.owners.is_operator_token(t))
    }
}

/// The machine a bearer token belongs to. A token is `<machine id>.<secret>`:
/// the id finds the row, and the SHA-256 of the whole token is compared with the
/// stored one in constant time.
async fn machine_of(ctl: &Control, headers: &HeaderMap) -> Result<String, Refused> {
    Ok(machine_and_account(ctl, headers).await?.0)
}

/// As `machine_of`, with the account the machine belongs to (`None` for one
/// paired through the test door).
async fn machine_and_account(
    ctl: &Control,
    headers: &HeaderMap,
) -> Result<(String, Option<String>), Refused> {
    let token = bearer(headers).ok_or(Refused::Unauthorized)?.to_string();
    let machine = token
        .split_once('.')
        .map(|(m, _)| m.to_string())
        .filter(|m| shapes::valid_machine_id(m))
        .ok_or(Refused::Unauthorized)?;
    let stored = ctl.store.token_hash(&machine).await?;
    let given = sha256(&token);
    match stored {
        Some((h, account)) if bool::from(h.as_slice().ct_eq(&given)) => Ok((machine, account)),
        _ => Err(Refused::Unauthorized),
    }
}

/// `POST {control}/pair`: with the sink token; or, with open pairing on, with
/// no `authorization` at all and a `poll_key` (then charged to the client,
/// and held to its share of pending pairings). 201
/// `control-pair-started.json`.
async fn pair_start(
    State(ctl): State<Arc<Control>>,
    quota: Quota,
    headers: HeaderMap,
    body: Body,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let open = !ctl.is_sink(&headers);
    if open && !headers.contains_key(header::AUTHORIZATION) && ctl.opts.open_pairing {
        quota.take(Door::PairStart)?;
    }
    let doc = read_json(body, BODY_MAX).await?;
    if open && (headers.contains_key(header::AUTHORIZATION) || !ctl.opts.open_pairing) {
        return Err(ApiError::unauthorized());
    }
    let req = shapes::pair_request(&doc)?;
    if open && req.poll_key.is_none() {
        return Err(Malformed::from("poll_key: needed without the sink token").into());
    }
    let created = now();
    let expires = created + ctl.opts.pair_ttl.as_millis() as i64;
    let machine = req
        .machine
        .clone()
        .unwrap_or_else(|| format!("m_{}", random_b64(16)));
    let code = random_b64(12);
    let check = six_digits();
    let pairing = super::store::NewPairing {
        code: code.clone(),
        machine: machine.clone(),
        first: req.machine.is_none(),
        open,
        check: check.clone(),
        name: req.name.clone(),
        request: req.kept.clone(),
        poll_key_hash: req.poll_key.as_deref().map(sha256),
        created_ms: created,
        expires_ms: expires,
        client: open.then(|| quota.client()),
    };
    ctl.store
        .start_pairing(
            &pairing,
            ctl.opts.max_pairings,
            ctl.opts.pairings_per_client,
        )
        .await?;
    ctl.log.line(|| "201 pairing started".into());
    // With the page on, the link is the page's own origin: passkeys work
    // only there (a machine reaching the receiver as 127.0.0.1 would hand
    // the person a link no passkey can sign on).
    let url = match &ctl.page_origin {
        Some(origin) => format!("{}/pair/{code}", origin.trim_end_matches('/')),
        None => format!("http://{}/pair/{code}", host(&headers)),
    };
    Ok((
        StatusCode::CREATED,
        Json(json!({
            "machine": machine, "code": code, "url": url, "check": check,
            "expires_at": protocol::time::rfc3339_ms(expires),
        })),
    ))
}

/// The `Host` the caller used, so the pairing's url works from where it asked;
/// anything but a plain host and port is replaced by `localhost`.
fn host(headers: &HeaderMap) -> String {
    headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .filter(|h| {
            !h.is_empty()
                && h.len() <= 260
                && h.bytes()
                    .all(|c| c.is_ascii_alphanumeric() || b".-:[]".contains(&c))
        })
        .unwrap_or("localhost")
        .to_string()
}

/// `GET {control}/pair?code=`: the sink token, or the pairing's poll key as the
/// bearer (charged to the client). `pending`, `expired`, or `paired` once:
/// reading it makes the machine's token (first pairing) and ends the
/// pairing, so a second read is 404.
async fn pair_status(
    State(ctl): State<Arc<Control>>,
    quota: Quota,
    headers: HeaderMap,
    q: Params,
) -> Result<Json<Value>, ApiError> {
    if !ctl.is_sink(&headers) {
        quota.take(Door::PairStatus)?;
    }
    let code = q
        .get("code")
        .cloned()
        .ok_or_else(|| Malformed::from("code: missing"))?;
    let p = ctl
        .store
        .pairing(&code, now())
        .await?
        .ok_or(Refused::NotFound("no such pairing"))?;
    let by_key = || {
        let (Some(given), Some(kept)) = (bearer(&headers), &p.poll_key_hash) else {
            return false;
        };
        bool::from(kept.as_slice().ct_eq(&sha256(given)))
    };
    if !ctl.is_sink(&headers) && !by_key() {
        return Err(ApiError::unauthorized());
    }
    let Some((key, proof, account)) = p.approved.clone() else {
        let status = if now() >= p.expires_ms {
            "expired"
        } else {
            "pending"
        };
        return Ok(Json(json!({"status": status})));
    };
    let token = p.first.then(|| format!("{}.{}", p.machine, random_b64(32)));
    let hash = token.as_deref().map(sha256);
    let finished = ctl
        .store
        .finish_pairing(&code, hash.as_ref(), now())
        .await?;
    if !finished {
        return Err(Refused::NotFound("no such pairing").into());
    }
    let mut body = json!({"status": "paired", "machine": p.machine, "key": key, "proof": proof});
    if let Some(t) = token {
        body["token"] = Value::String(t);
    }
    // A machine approved from an account's page sends its events to that
    // account, with a token of its own; an open pairing had no sink token, so
    // it is handed the receiver's (CONTROL §2).
    let own_account = match &account {
        Some(a) => ctl.owners.is_account(a).await?,
        None => false,
    };
    let sink = match (&account, p.open) {
        (Some(a), _) if own_account => Some(ctl.owners.mint(a, &p.machine, now()).await?),
        (_, true) => Some(ctl.owners.operator_token().to_string()),
        (_, false) => None,
    };
    if let Some(t) = sink {
        body["sink_token"] = Value::String(t);
    }
    if let Some(a) = account {
        body["account"] = Value::String(a);
    }
    ctl.log.line(|| "200 paired".into());
    Ok(Json(body))
}

/// `GET /pair/<code>`: what the person opening the pairing's url sees, the same
/// six digits as the terminal. Without the page there is no sign-in here:
/// approval is the test door's.
async fn pair_page(
    State(ctl): State<Arc<Control>>,
    quota: Quota,
    Path(code): Path<String>,
) -> Result<Response, ApiError> {
    quota.take(Door::PairStatus)?;
    match ctl.store.pairing(&code, now()).await? {
        Some(p) if p.approved.is_none() && now() < p.expires_ms => Ok((
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            format!(
                "sessionpipe-receiver: {:?} asks to pair. Check: {}.\n\
                 This receiver approves through its test door (POST /test/pair/approve).\n",
                p.name, p.check
            ),
        )
            .into_response()),
        _ => Err(Refused::NotFound("no such pairing").into()),
    }
}

/// `POST {control}/hello`, the machine's token: `control-hello.json`, kept (the
/// last one) for the read door. 204.
async fn hello(
    State(ctl): State<Arc<Control>>,
    headers: HeaderMap,
    body: Body,
) -> Result<StatusCode, ApiError> {
    let doc = read_json(body, BODY_MAX).await?;
    let machine = machine_of(&ctl, &headers).await?;
    shapes::hello(&doc)?;
    ctl.store.set_hello(&machine, &doc, now()).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `GET {control}?machine=<id>&wait=<s>`, the machine's token: every message due
/// at once (200), else held until one is queued or `wait` (at most `wait_max_s`)
/// runs out (204).
///
/// One poll per machine at a time: a second poll for the same machine ends the
/// first with 204, so a daemon that restarted (or lost its connection without
/// our noticing) is never answered on a poll it no longer reads.
async fn poll(
    State(ctl): State<Arc<Control>>,
    headers: HeaderMap,
    q: Params,
) -> Result<Response, ApiError> {
    let machine = machine_of(&ctl, &headers).await?;
    // Not kept for the wait: its values share the buffer the request was
    // read into, which would stay allocated beside the next one hyper reads
    // into while the poll is held (8 kB a held poll).
    drop(headers);
    let named = q
        .get("machine")
        .ok_or_else(|| Malformed::from("machine: missing"))?;
    if *named != machine {
        return Err(ApiError::unauthorized());
    }
    let wait = match q.get("wait") {
        None => 0,
        Some(w) => w
            .parse::<u64>()
            .map_err(|_| Malformed::from("wait: whole seconds"))?,
    }
    .min(ctl.opts.wait_max_s);
    // Its strings are not needed for the wait either.
    drop(q);
    let deadline = Instant::now() + Duration::from_secs(wait);
    let slot = ctl.slot(&machine);
    let me = ctl
        .store
        .begin_poll(&machine)
        .await?
        .ok_or_else(ApiError::unauthorized)?;
    // An older poll of this machine, here or in another process, ends.
    ctl.wake(&machine).await;
    let mut stop = ctl.stop.clone();
    loop {
        // Armed before looking, so a message queued between the look and the
        // wait still wakes this poll.
        let woken = slot.wake.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        if *stop.borrow() {
            return Ok(StatusCode::NO_CONTENT.into_response());
        }
        let due = match ctl.store.due(&machine, me, now(), POLL_MAX).await? {
            Look::Due(d) => d,
            Look::Superseded => return Ok(StatusCode::NO_CONTENT.into_response()),
            Look::Gone => return Err(ApiError::unauthorized()),
        };
        if !due.messages.is_empty() {
            ctl.log
                .line(|| format!("200 poll: {} message(s)", due.messages.len()));
            return Ok(Json(json!({"messages": due.messages})).into_response());
        }
        let mut until = deadline;
        if let Some(next) = due.next_ms {
            let left = Duration::from_millis(next.saturating_sub(now()).max(0) as u64);
            until = until.min(Instant::now() + left);
        }
        if Instant::now() >= deadline {
            return Ok(StatusCode::NO_CONTENT.into_response());
        }
        let by_wake = tokio::select! {
            _ = &mut woken => true,
            _ = tokio::time::sleep_until(until) => false,
            _ = stop.changed() => false,
        };
        // The wait ran out with nothing queued (a message queued meanwhile
        // wakes the poll): answered without another look, so a poll ends on
        // time even while the database is held up.
        if !by_wake && Instant::now() >= deadline {
            return Ok(StatusCode::NO_CONTENT.into_response());
        }
    }
}

/// `POST {control}/ack`, the machine's token: `control-ack.json`. 202 with what
/// the acks came to; a duplicate is tolerated and changes nothing.
async fn ack(
    State(ctl): State<Arc<Control>>,
    headers: HeaderMap,
    body: Body,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let doc = read_json(body, BODY_MAX).await?;
    let machine = machine_of(&ctl, &headers).await?;
    let acks = shapes::acks(&doc)?;
    let pause = ctl.opts.taken_pause.as_millis() as i64;
    let report = ctl.store.ack(&machine, &acks, now(), pause).await?;
    ctl.log.line(|| {
        format!(
            "202 acks: {} recorded, {} duplicate",
            report.recorded, report.duplicates
        )
    });
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({
            "recorded": report.recorded,
            "duplicates": report.duplicates,
            "unknown": report.unknown,
        })),
    ))
}

/// `POST {control}/off`, the machine's token: the machine, its token, keys and
/// queue are gone; its calls are 401 from now on. 204.
async fn off(
    State(ctl): State<Arc<Control>>,
    headers: HeaderMap,
    body: Body,
) -> Result<StatusCode, ApiError> {
    // Read (and drop) whatever body came, for the connection's sake.
    let _ = axum::body::to_bytes(body, BODY_MAX).await;
    let machine = machine_of(&ctl, &headers).await?;
    ctl.store.remove_machine(&machine).await?;
    ctl.forget_slot(&machine).await;
    ctl.log.line(|| "204 machine off".into());
    Ok(StatusCode::NO_CONTENT)
}

/// A `files` entry's `sha256`: 43 base64url characters.
fn is_file_hash(s: &str) -> bool {
    s.len() == 43 && shapes::is_b64url(s)
}

impl Control {
    /// Keeps `bytes` to be served at `{control}/files/{sha256}` (the page's
    /// uploads', the test doors' and `Handle::put_file`'s way in; how bytes
    /// reach a receiver is its own business, HTTP.md §3).
    pub async fn put_file(
        &self,
        sha256: &str,
        bytes: &[u8],
        content_type: &str,
        account: Option<&str>,
    ) -> Result<(), Refused> {
        if !is_file_hash(sha256) {
            return Err(Malformed::from("sha256: 43 base64url characters").into());
        }
        Ok(self
            .store
            .put_file(sha256, bytes, content_type, account, now())
            .await?)
    }
}

/// `GET {control}/files/{sha256}`, the machine's token: the file's bytes with
/// its content type, 404 when no file of that hash was put (or it is gone).
async fn file(
    State(ctl): State<Arc<Control>>,
    headers: HeaderMap,
    Path(sha256): Path<String>,
) -> Result<Response, ApiError> {
    let (_, account) = machine_and_account(&ctl, &headers).await?;
    if !is_file_hash(&sha256) {
        return Err(Refused::NotFound("no such file").into());
    }
    let (bytes, content_type) = ctl
        .store
        .file(&sha256, account.as_deref(), now())
        .await?
        .ok_or(Refused::NotFound("no such file"))?;
    ctl.log.line(|| format!("200 file: {} bytes", bytes.len()));
    // A `Vec` body is sent with its `content-length`, as HTTP.md asks.
    Ok((
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "no-store".to_string()),
        ],
        bytes,
    )
        .into_response())
}

#[cfg(test)]
mod tests {
    use crate::{ControlOptions, Handle, Options, Receiver};
    use reqwest::blocking::Client;
    use serde_json::{Value, json};
    use sessionpipe_verifier::softkey::{self, SoftPasskey};

    const SINK: &str = "sink-token-files";

    fn receiver() -> Handle {
        Receiver::start(Options {
            control: Some(ControlOptions::new("localhost")),
            ..Options::new(SINK)
        })
        .expect("the receiver starts")
    }

    /// Pairs a machine the way a device approves one: its id and token.
    fn pair(rx: &Handle, c: &Client) -> (String, String) {
        let url = rx.url();
        let started: Value = c
            .post(format!("{url}/v1/control/pair"))
            .bearer_auth(SINK)
            .body(
                json!({"name": "m", "harnesses": ["claude-code"], "modes": ["resume"],
                       "version": "0.0.0"})
                .to_string(),
            )
            .send()
            .map(json_of)
            .unwrap();
        let machine = started["machine"].as_str().unwrap().to_string();
        let code = started["code"].as_str().unwrap();
        let passkey = SoftPasskey::es256("localhost", "http://localhost");
        let proof = softkey::enrollment_proof(&passkey, &machine, code);
        let ok = c
            .post(format!("{url}/test/pair/approve"))
            .bearer_auth(SINK)
            .body(json!({"code": code, "key": passkey.trusted(), "proof": proof}).to_string())
            .send()
            .unwrap();
        assert_eq!(ok.status(), 200);
        let paired: Value = c
            .get(format!("{url}/v1/control/pair?code={code}"))
            .bearer_auth(SINK)
            .send()
            .map(json_of)
            .unwrap();
        (machine, paired["token"].as_str().unwrap().to_string())
    }

    fn json_of(r: reqwest::blocking::Response) -> Value {
        serde_json::from_slice(&r.bytes().unwrap()).unwrap()
    }

    fn get(c: &Client, url: &str, token: Option<&str>) -> (u16, Option<String>, Vec<u8>) {
        let mut req = c.get(url);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        let r = req.send().unwrap();
        let status = r.status().as_u16();
        let ty = r
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        (status, ty, r.bytes().unwrap().to_vec())
    }

    #[test]
    fn a_held_poll_s_future_is_small() {
        // A held poll keeps its future for its whole wait, one per machine
        // (10 000 in BENCHMARKS.md's issue-29 run): what it awaits before
        // the wait (the store's calls, PostgreSQL's boxed) must not make
        // it large. Sizes are the compiler's, the same every run: 816 bytes
        // in a test build, 4 752 with PostgreSQL's calls inline.
        fn future_size<A, B, C, F>(_: fn(A, B, C) -> F) -> usize {
            std::mem::size_of::<F>()
        }
        let held = future_size(super::poll as fn(_, _, _) -> _);
        assert!(held <= 2048, "a held poll's future is {held} bytes");
    }

    #[test]
    fn files_are_served_to_a_machine_s_token_only() {
        let rx = receiver();
        let c = Client::new();
        let (_machine, token) = pair(&rx, &c);
        let bytes = b"\x89PNG not really".to_vec();
        let sha = rx.put_file(&bytes);
        assert_eq!(sha, crate::control::file_sha256(&bytes));
        assert_eq!(sha.len(), 43);
        let at = format!("{}/v1/control/files/{sha}", rx.url());

        let (status, ty, body) = get(&c, &at, Some(&token));
        assert_eq!(status, 200);
        assert_eq!(ty.as_deref(), Some("application/octet-stream"));
        assert_eq!(body, bytes);
        // No token, the sink token, a made-up one: 401, and no bytes.
        for t in [None, Some(SINK), Some("m_AAAAAAAAAAAAAAAAAAAA.nope")] {
            let (status, _, body) = get(&c, &at, t);
            assert_eq!(status, 401, "{t:?}");
            assert!(!body.windows(bytes.len()).any(|w| w == bytes));
        }
        // Unknown, and not a hash at all: 404.
        let unknown = crate::control::file_sha256(b"never put");
        for h in [unknown.as_str(), "short", &"A".repeat(44)] {
            let (status, _, _) = get(
                &c,
                &format!("{}/v1/control/files/{h}", rx.url()),
                Some(&token),
            );
            assert_eq!(status, 404, "{h}");
        }
        // Bytes under a hash that is not theirs are served as put: the
        // machine's check is what catches a swap.
        rx.put_file_as(&unknown, b"swapped");
        let (status, _, body) = get(
            &c,
            &format!("{}/v1/control/files/{unknown}", rx.url()),
            Some(&token),
        );
        assert_eq!((status, body.as_slice()), (200, b"swapped".as_slice()));
    }

    #[test]
    fn the_files_door_takes_bytes_with_their_type() {
        let rx = receiver();
        let c = Client::new();
        let (_machine, token) = pair(&rx, &c);
        let door = format!("{}/test/control/files", rx.url());
        let put: Value = c
            .post(&door)
            .bearer_auth(SINK)
            .header("content-type", "application/pdf")
            .body(b"%PDF-1.7".to_vec())
            .send()
            .map(json_of)
            .unwrap();
        let sha = put["sha256"].as_str().unwrap();
        assert_eq!(sha, crate::control::file_sha256(b"%PDF-1.7"));
        let (status, ty, body) = get(
            &c,
            &format!("{}/v1/control/files/{sha}", rx.url()),
            Some(&token),
        );
        assert_eq!(status, 200);
        assert_eq!(ty.as_deref(), Some("application/pdf"));
        assert_eq!(body, b"%PDF-1.7");
        // Under a chosen hash; a bad one is malformed; no sink token, no door.
        let chosen = crate::control::file_sha256(b"other");
        let r = c
            .post(format!("{door}?sha256={chosen}"))
            .bearer_auth(SINK)
            .body("x")
            .send()
            .unwrap();
        assert_eq!(r.status(), 201);
        let r = c
            .post(format!("{door}?sha256=nope"))
            .bearer_auth(SINK)
            .body("x")
            .send()
            .unwrap();
        assert_eq!(r.status(), 400);
        let r = c.post(&door).bearer_auth(&token).body("x").send().unwrap();
        assert_eq!(r.status(), 401);
    }
}
