//! The page's API over real HTTP with a software passkey (the phone of
//! `accounts::tests`): an account made and signed in, a device subscribed to
//! Web Push at the test kit's loopback push service (with the operator's
//! opt-in to private addresses), and an `attention.needed` sent with the
//! operator's sink token reaching that device, encrypted, with words that
//! say what the attention is; and without the opt-in, every address the
//! receiver will not send to refused when it is given, saying why.

use crate::accounts::tests::Phone;
use crate::{ControlOptions, Options, PageOptions, Receiver};
use reqwest::blocking::Client;
use serde_json::{Value, json};
use sessionpipe_testkit::push::PushService;
use std::time::Duration;

const TOKEN: &str = "page-tests-sink-token";

/// The page's side of the API: one browser, its cookie kept.
pub(super) struct Page {
    client: Client,
    base: String,
    pub(super) cookie: Option<String>,
}

impl Page {
    /// A browser at `base`, signed out, its calls made with `client`.
    pub(super) fn new(base: String, client: Client) -> Page {
        Page {
            client,
            base,
            cookie: None,
        }
    }

    /// A browser at `base` where Ann made her account with `phone` and is
    /// signed in.
    pub(super) fn signed_up(base: String, phone: &mut Phone) -> Page {
        let mut page = Page::new(base, Client::new());
        page.sign_up("Ann", phone);
        page
    }

    /// Makes `name`'s account with `phone`'s passkey, and is signed in.
    pub(super) fn sign_up(&mut self, name: &str, phone: &mut Phone) {
        let (s, started) = self.call(
            "POST",
            "/app/api/register/start",
            Some(json!({ "name": name })),
        );
        assert_eq!(s, 200, "{started}");
        let credential = phone.create(&started["publicKey"]);
        let (s, made) = self.call(
            "POST",
            "/app/api/register/finish",
            Some(json!({"ceremony": started["ceremony"], "device": "phone", "credential": credential})),
        );
        assert_eq!(s, 201, "{made}");
        assert!(self.cookie.is_some(), "signed in");
    }

    /// Signs in with `phone`'s passkey.
    pub(super) fn sign_in(&mut self, phone: &mut Phone) {
        let (s, started) = self.call("POST", "/app/api/signin/start", None);
        assert_eq!(s, 200, "{started}");
        let credential = phone.get(&started["publicKey"]);
        let (s, signed) = self.call(
            "POST",
            "/app/api/signin/finish",
            Some(json!({"ceremony": started["ceremony"], "credential": credential})),
        );
        assert_eq!(s, 200, "{signed}");
        assert!(self.cookie.is_some(), "signed in");
    }

    pub(super) fn call(&mut self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut req = self
            .client
            .request(method.parse().unwrap(), format!("{}{path}", self.base))
            .header("x-sessionpipe-page", "1")
            .header("content-type", "application/json");
        if let Some(c) = &self.cookie {
            req = req.header("cookie", c.clone());
        }
        if let Some(b) = body {
            req = req.body(b.to_string());
        }
        let r = req.send().unwrap();
        if let Some(set) = r.headers().get("set-cookie") {
            let v = set.to_str().unwrap();
            self.cookie = Some(v.split(';').next().unwrap().to_string());
        }
        let status = r.status().as_u16();
        let text = r.text().unwrap();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }
}

fn attention(session: &str, seq: u64, tool: &str) -> Value {
    json!({
        "protocol": 1, "id": ulid::Ulid::generate().to_string(), "type": "attention.needed",
        "time": protocol::time::rfc3339_ms(protocol::time::now_ms()), "tier": 1,
        "harness": {"name": "claude-code"},
        "session": {"id": session, "seq": seq, "cwd": "~/work/alpha", "machine": "laptop"},
        "privacy": {"rulesets": ["secrets@1"], "pii": false},
        "data": {"attention_id": "perm-0123456789abcdef", "kind": "permission", "tool": tool,
                 "message": format!("{tool} make release")},
    })
}

#[test]
fn an_attention_reaches_a_subscribed_device_by_web_push_in_words_at_its_tier() {
    let rx = Receiver::start(Options {
        control: Some(ControlOptions::new("localhost")),
        page: Some(PageOptions {
            allow_private_notify: true,
            ..PageOptions::new("")
        }),
        ..Options::new(TOKEN)
    })
    .unwrap();
    let mut page = Page::signed_up(rx.url(), &mut Phone::new());

    let service = PushService::start().unwrap();
    let sub = service.subscribe();
    let (s, said) = page.call(
        "POST",
        "/app/api/push",
        Some(json!({"subscription": sub, "tier": 1})),
    );
    assert_eq!(s, 201, "{said}");
    let (s, _) = page.call(
        "POST",
        "/app/api/push",
        Some(json!({"subscription": sub, "tier": 7})),
    );
    assert_eq!(s, 400, "a tier outside 0-2");
    // The browser rotates the subscription (the worker's
    // pushsubscriptionchange): the new one keeps the old one's tier, the old
    // one is gone, and a plain subscribe still needs its tier.
    let rotated = service.subscribe();
    let (s, said) = page.call(
        "POST",
        "/app/api/push",
        Some(json!({"subscription": rotated, "replaces": sub["endpoint"]})),
    );
    assert_eq!(s, 201, "{said}");
    let (s, _) = page.call("POST", "/app/api/push", Some(json!({"subscription": sub})));
    assert_eq!(s, 400, "no tier and nothing replaced");
    let (s, said) = page.call(
        "POST",
        "/app/api/push",
        Some(json!({"subscription": sub, "replaces": rotated["endpoint"]})),
    );
    assert_eq!(s, 201, "and back: {said}");

    // The operator's token sends for the first account: its attention is Ann's.
    let r = Client::new()
        .post(format!("{}/v1/events", rx.url()))
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .body(json!({"events": [attention("s-push", 0, "Bash")]}).to_string())
        .send()
        .unwrap();
    assert_eq!(r.status(), 202);
    let got = service.wait_for(1, Duration::from_secs(10));
    assert_eq!(got.len(), 1, "one push for one attention");
    assert!(got[0].vapid_verified(), "{:?}", got[0].vapid);
    assert_eq!(got[0].urgency.as_deref(), Some("high"));
    let payload: Value = serde_json::from_slice(got[0].payload.as_ref().unwrap()).unwrap();
    assert_eq!(payload["title"], "Claude Code wants to run Bash");
    // The protocol's words, as the desktop notification says them.
    assert_eq!(payload["body"], "Bash make release\n~/work/alpha");
    assert_eq!(payload["session"], "claude-code:s-push");
    assert_eq!(payload["attention"], "perm-0123456789abcdef");
    assert_eq!(payload["actions"], json!(["allow", "deny"]));

    // The board shows it as needing Ann, with the attention open.
    let (s, board) = page.call("GET", "/app/api/board", None);
    assert_eq!(s, 200);
    assert_eq!(board["sessions"][0]["state"], "needs_you");
    assert_eq!(board["sessions"][0]["attention"]["tool"], "Bash");
    // The page's card says what the push said, in the same words.
    let said = &board["sessions"][0]["attention_words"];
    assert_eq!(said["headline"], payload["title"]);
    assert_eq!(said["what"], "Bash make release");
    assert_eq!(said["place"], "~/work/alpha");
    assert_eq!(said["hidden"], Value::Null);

    // A device the push service says is gone is dropped: nothing more is sent to it.
    service.expire(sub["endpoint"].as_str().unwrap());
    Client::new()
        .post(format!("{}/v1/events", rx.url()))
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .body(json!({"events": [attention("s-push", 1, "Edit")]}).to_string())
        .send()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let rows = rx.query("SELECT endpoint FROM push_subscriptions");
    assert!(rows.is_empty(), "the gone subscription was dropped");

    // Signed out, nothing is read.
    let (s, _) = page.call("POST", "/app/api/signout", None);
    assert_eq!(s, 204);
    page.cookie = None;
    let (s, body) = page.call("GET", "/app/api/board", None);
    assert_eq!((s, body["reason"].as_str()), (401, Some("signed_out")));
}

#[test]
fn addresses_the_receiver_will_not_send_to_are_refused_saying_why() {
    let rx = Receiver::start(Options {
        control: Some(ControlOptions::new("localhost")),
        page: Some(PageOptions::new("")),
        ..Options::new(TOKEN)
    })
    .unwrap();
    let mut page = Page::signed_up(rx.url(), &mut Phone::new());
    let service = PushService::start().unwrap();
    let browser = service.subscribe();
    for (url, reason, words) in [
        (
            "https://127.0.0.1/hook",
            "address_refused",
            "127.0.0.1 is a loopback address",
        ),
        (
            "https://10.0.0.1/hook",
            "address_refused",
            "10.0.0.1 is a private address",
        ),
        (
            "https://169.254.169.254/latest/meta-data/",
            "address_refused",
            "169.254.169.254 is a link-local address",
        ),
        (
            "https://[::1]:8443/hook",
            "address_refused",
            "::1 is a loopback address",
        ),
        (
            "https://[fd00::1]/hook",
            "address_refused",
            "fd00::1 is a unique-local address",
        ),
        (
            "https://localhost:8443/hook",
            "address_refused",
            "is a loopback address",
        ),
        (
            "http://ntfy.example.net/topic",
            "malformed",
            "only https:// addresses are taken",
        ),
        (
            "https://me:secret@ntfy.example.net/topic",
            "malformed",
            "user name or password",
        ),
    ] {
        let (s, said) = page.call(
            "POST",
            "/app/api/notify-url",
            Some(json!({"url": url, "tier": 0})),
        );
        assert_eq!(
            (s, said["reason"].as_str()),
            (400, Some(reason)),
            "{url}: {said}"
        );
        let detail = said["detail"].as_str().unwrap();
        assert!(detail.starts_with("url: "), "{detail}");
        assert!(detail.contains(words), "{url}: {detail}");
        let mut sub = browser.clone();
        sub["endpoint"] = json!(url);
        let (s, said) = page.call(
            "POST",
            "/app/api/push",
            Some(json!({"subscription": sub, "tier": 0})),
        );
        assert_eq!(
            (s, said["reason"].as_str()),
            (400, Some(reason)),
            "{url}: {said}"
        );
        let detail = said["detail"].as_str().unwrap();
        assert!(
            detail.starts_with("subscription: its endpoint: "),
            "{detail}"
        );
        assert!(detail.contains(words), "{url}: {detail}");
    }
    // The words a person reads say what to do about it.
    let (_, said) = page.call(
        "POST",
        "/app/api/notify-url",
        Some(json!({"url": "https://10.0.0.1/hook", "tier": 0})),
    );
    assert_eq!(
        said["detail"],
        "url: 10.0.0.1 is a private address: this receiver sends notifications only to \
         public addresses (its operator can allow private ones with --allow-private-notify)"
    );
    // The test kit's loopback push service is refused too, and nothing is kept.
    let (s, _) = page.call(
        "POST",
        "/app/api/push",
        Some(json!({"subscription": browser, "tier": 0})),
    );
    assert_eq!(s, 400);
    assert!(rx.query("SELECT url FROM notify_urls").is_empty());
    assert!(
        rx.query("SELECT endpoint FROM push_subscriptions")
            .is_empty()
    );
}
