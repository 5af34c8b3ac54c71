//! One client's flood leaves every other client as it was, over real HTTP:
//! 10 100 sign-in starts and 70 open pairings from one address (a client
//! socket bound to 127.0.0.1) while a second client (bound to 127.0.0.2)
//! makes an account with a software passkey, signs in, and starts a
//! pairing as a machine; then the same behind a trusted proxy, where the
//! clients are the ones `X-Forwarded-For` names; and a forged
//! `X-Forwarded-For` from a peer that is not a trusted proxy, which names
//! nobody.

use super::push_tests::Page;
use crate::accounts::tests::Phone;
use crate::{ControlOptions, Handle, Options, PageOptions, Receiver};
use reqwest::blocking::Client;
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{Value, json};
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

const TOKEN: &str = "flood-tests-sink-token";

fn receiver(trusted_proxies: &[&str]) -> Handle {
    Receiver::start(Options {
        control: Some(ControlOptions {
            open_pairing: true,
            ..ControlOptions::new("localhost")
        }),
        page: Some(PageOptions {
            open_registration: true,
            ..PageOptions::new("")
        }),
        trusted_proxies: trusted_proxies.iter().map(|p| p.parse().unwrap()).collect(),
        ..Options::new(TOKEN)
    })
    .unwrap()
}

/// A client whose connections come from `from`, sending `xff` as its
/// `X-Forwarded-For` when given.
fn client(from: &str, xff: Option<&str>) -> Client {
    let mut headers = HeaderMap::new();
    if let Some(x) = xff {
        headers.insert("x-forwarded-for", HeaderValue::from_str(x).unwrap());
    }
    Client::builder()
        .local_address(from.parse::<IpAddr>().unwrap())
        .default_headers(headers)
        .build()
        .unwrap()
}

/// What a flood got back: how many of each status, and whether every 429
/// said when to come back and why.
#[derive(Default)]
struct Tally {
    ok: usize,
    limited: usize,
    other: Vec<u16>,
    without_retry_after: usize,
}

impl Tally {
    fn add(&mut self, r: &reqwest::blocking::Response, ok: u16) {
        match r.status().as_u16() {
            s if s == ok => self.ok += 1,
            429 => {
                self.limited += 1;
                let secs = r
                    .headers()
                    .get("retry-after")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.parse::<u64>().ok());
                if !secs.is_some_and(|s| (1..=600).contains(&s)) {
                    self.without_retry_after += 1;
                }
            }
            s => self.other.push(s),
        }
    }
}

/// `n` sign-in starts from `from` (with `xff`), on four threads; `sent`
/// counts them as they go.
fn signin_flood(
    base: &str,
    from: &'static str,
    xff: impl Fn(usize) -> Option<String> + Send + Sync + 'static,
    n: usize,
    sent: Arc<AtomicUsize>,
) -> std::thread::JoinHandle<Tally> {
    let base = base.to_string();
    let xff = Arc::new(xff);
    std::thread::spawn(move || {
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let (base, sent, xff) = (base.clone(), Arc::clone(&sent), Arc::clone(&xff));
                std::thread::spawn(move || {
                    let c = client(from, None);
                    let mut tally = Tally::default();
                    for i in (t..n).step_by(4) {
                        let mut req = c
                            .post(format!("{base}/app/api/signin/start"))
                            .header("x-sessionpipe-page", "1")
                            .header("content-type", "application/json")
                            .body("{}");
                        if let Some(x) = xff(i) {
                            req = req.header("x-forwarded-for", x);
                        }
                        let r = req.send().unwrap();
                        tally.add(&r, 200);
                        sent.fetch_add(1, Ordering::SeqCst);
                    }
                    tally
                })
            })
            .collect();
        let mut all = Tally::default();
        for t in threads {
            let t = t.join().unwrap();
            all.ok += t.ok;
            all.limited += t.limited;
            all.other.extend(t.other);
            all.without_retry_after += t.without_retry_after;
        }
        all
    })
}

/// `n` open pairings started by `c`.
fn pairing_flood(base: &str, c: &Client, n: usize) -> Tally {
    let mut tally = Tally::default();
    for i in 0..n {
        let r = start_pairing(base, c, &format!("flood-{i}"));
        tally.add(&r, 201);
    }
    tally
}

fn start_pairing(base: &str, c: &Client, name: &str) -> reqwest::blocking::Response {
    c.post(format!("{base}/v1/control/pair"))
        .header("content-type", "application/json")
        .body(
            json!({"name": name, "harnesses": ["claude-code"], "modes": ["resume"],
                   "version": "0.0.0", "poll_key": format!("poll-key-of-{name}-0123456789")})
            .to_string(),
        )
        .send()
        .unwrap()
}

/// Waits until the flood has sent `n`.
fn until_sent(sent: &AtomicUsize, n: usize) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while sent.load(Ordering::SeqCst) < n {
        assert!(std::time::Instant::now() < deadline, "the flood stalled");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// What a person does: makes an account, signs out, signs in again, and
/// starts a pairing from a machine on the same address; every call
/// succeeds.
fn a_person_gets_everything_done(base: &str, c: Client) {
    let mut phone = Phone::new();
    let mut page = Page::new(base.to_string(), c.clone());
    page.sign_up("Bea", &mut phone);
    let (s, _) = page.call("POST", "/app/api/signout", None);
    assert_eq!(s, 204);
    page.cookie = None;
    page.sign_in(&mut phone);
    let (s, me) = page.call("GET", "/app/api/me", None);
    assert_eq!((s, me["account"]["name"].as_str()), (200, Some("Bea")));
    let r = start_pairing(base, &c, "bea-laptop");
    assert_eq!(r.status(), 201);
    let started: Value = r.json().unwrap();
    let status: Value = c
        .get(format!(
            "{base}/v1/control/pair?code={}",
            started["code"].as_str().unwrap()
        ))
        .bearer_auth("poll-key-of-bea-laptop-0123456789")
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(status["status"], "pending");
}

/// The live ceremonies kept for each client.
fn ceremonies_by_client(rx: &Handle) -> Vec<(String, i64)> {
    rx.query("SELECT client, COUNT(*) FROM ceremonies GROUP BY client ORDER BY client")
        .iter()
        .map(|r| (r.text(0).unwrap(), r.int(1).unwrap()))
        .collect()
}

#[test]
fn one_address_s_flood_leaves_another_address_untouched() {
    let rx = receiver(&[]);
    let base = rx.url();
    // The flooder also forges X-Forwarded-For: with no trusted proxy it
    // changes nothing.
    let sent = Arc::new(AtomicUsize::new(0));
    let flood = signin_flood(
        &base,
        "127.0.0.1",
        |i| Some(format!("203.0.113.{}", i % 250)),
        10_100,
        Arc::clone(&sent),
    );
    let pairings = pairing_flood(&base, &client("127.0.0.1", None), 70);
    until_sent(&sent, 1000);
    a_person_gets_everything_done(&base, client("127.0.0.2", None));
    assert!(
        sent.load(Ordering::SeqCst) < 10_100,
        "the person's calls were made while the flood went on"
    );
    let signins = flood.join().unwrap();

    // The flooder had its share of ceremonies, and 429s after it.
    assert_eq!(signins.ok, 16, "the ceremonies one client may hold");
    assert_eq!(signins.limited, 10_100 - 16);
    assert!(signins.other.is_empty(), "{:?}", signins.other);
    assert_eq!(signins.without_retry_after, 0);
    assert_eq!(pairings.ok, 8, "the open pairings one client may hold");
    assert_eq!(pairings.limited, 62);
    assert_eq!(pairings.without_retry_after, 0);
    assert_eq!(
        ceremonies_by_client(&rx),
        [("127.0.0.1".to_string(), 16)],
        "the person's ceremonies ended as they finished; the forged addresses hold none"
    );
    // What the flooder is told, in words the page shows.
    let r = client("127.0.0.1", None)
        .post(format!("{base}/app/api/signin/start"))
        .header("x-sessionpipe-page", "1")
        .send()
        .unwrap();
    assert_eq!(r.status(), 429);
    let body: Value = r.json().unwrap();
    assert_eq!(body["reason"], "rate_limited");
    let words = body["detail"].as_str().unwrap();
    assert!(words.contains("from your address: try again in"), "{words}");
}

#[test]
fn behind_a_trusted_proxy_each_forwarded_client_is_its_own() {
    // The proxy is 127.0.0.1: what it forwards names the client in
    // X-Forwarded-For (the flooder's own forged entry left of it).
    let rx = receiver(&["127.0.0.1"]);
    let base = rx.url();
    let sent = Arc::new(AtomicUsize::new(0));
    let flood = signin_flood(
        &base,
        "127.0.0.1",
        |i| Some(format!("10.0.0.{}, 198.51.100.1", i % 250)),
        2000,
        Arc::clone(&sent),
    );
    until_sent(&sent, 500);
    a_person_gets_everything_done(&base, client("127.0.0.1", Some("198.51.100.2")));
    let signins = flood.join().unwrap();
    assert_eq!((signins.ok, signins.limited), (16, 2000 - 16));
    assert_eq!(
        ceremonies_by_client(&rx),
        [("198.51.100.1".to_string(), 16)]
    );

    // A peer that is not the proxy forges X-Forwarded-For naming a new
    // client each time: it is itself, and its flood takes nobody's share.
    let forged = signin_flood(
        &base,
        "127.0.0.2",
        |i| Some(format!("198.51.100.{}", 3 + i % 200)),
        200,
        Arc::new(AtomicUsize::new(0)),
    )
    .join()
    .unwrap();
    assert_eq!((forged.ok, forged.limited), (16, 200 - 16));
    assert_eq!(
        ceremonies_by_client(&rx),
        [
            ("127.0.0.2".to_string(), 16),
            ("198.51.100.1".to_string(), 16)
        ]
    );
    // The client it named most is untouched.
    a_person_gets_everything_done(&base, client("127.0.0.1", Some("198.51.100.3")));
}

#[test]
fn wrong_tokens_stop_their_client_before_any_token_is_looked_at() {
    let rx = receiver(&[]);
    let base = rx.url();
    let guesser = client("127.0.0.2", None);
    let batch = json!({"events": []}).to_string();
    let mut statuses = Vec::new();
    for i in 0..150 {
        let r = guesser
            .post(format!("{base}/v1/events"))
            .bearer_auth(format!("guess-{i}"))
            .header("content-type", "application/json")
            .body(batch.clone())
            .send()
            .unwrap();
        statuses.push(r.status().as_u16());
    }
    let refused = statuses.iter().filter(|s| **s == 401).count();
    let limited = statuses.iter().filter(|s| **s == 429).count();
    assert!((100..=102).contains(&refused), "{refused} refusals");
    assert_eq!(refused + limited, 150);
    // Stopped everywhere a token or a cookie is read, its own right token too.
    for (path, token) in [("/v1/control?machine=m&wait=0", "x"), ("/app/api/me", "")] {
        let r = guesser
            .get(format!("{base}{path}"))
            .bearer_auth(token)
            .send()
            .unwrap();
        assert_eq!(r.status(), 429, "{path}");
    }
    let r = guesser
        .post(format!("{base}/v1/events"))
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .body(batch.clone())
        .send()
        .unwrap();
    assert_eq!(r.status(), 429);
    // Another client, wrong token and right one, is answered as ever.
    let other = client("127.0.0.3", None);
    let answer = |token: &str| {
        other
            .post(format!("{base}/v1/events"))
            .bearer_auth(token)
            .header("content-type", "application/json")
            .body(batch.clone())
            .send()
            .unwrap()
            .status()
            .as_u16()
    };
    assert_eq!(answer("guess"), 401);
    assert_eq!(
        answer(TOKEN),
        400,
        "past the token: an empty batch is malformed"
    );
}
