//! The page's guard is a layer over every state-changing call: without the
//! page's header, or with another site's origin, each one is 403
//! `not_the_page` before it looks at anything; with them, it goes on to its
//! own answer (here, signed out or a body it refuses).

use crate::common::{TOKEN, localhost};
use reqwest::blocking::Client;
use serde_json::Value;
use sessionpipe_receiver::{Options, PageOptions, Receiver};

/// Every state-changing call of the page's API (`receiver/page/API.md`).
const CHANGES: &[(&str, &str)] = &[
    ("POST", "/app/api/register/start"),
    ("POST", "/app/api/register/finish"),
    ("POST", "/app/api/signin/start"),
    ("POST", "/app/api/signin/finish"),
    ("POST", "/app/api/signout"),
    ("POST", "/app/api/invites"),
    ("POST", "/app/api/pair/AAAAAAAAAAAAAAAA/approve"),
    ("POST", "/app/api/commands"),
    ("POST", "/app/api/files"),
    ("POST", "/app/api/push"),
    ("DELETE", "/app/api/push"),
    ("POST", "/app/api/notify-url"),
    ("DELETE", "/app/api/notify-url"),
];

#[test]
fn every_state_changing_call_of_the_page_is_guarded() {
    let rx = Receiver::start(Options {
        control: Some(localhost()),
        page: Some(PageOptions::new("")),
        ..Options::new(TOKEN)
    })
    .unwrap();
    let origin = rx.page_origin().unwrap();
    let c = Client::new();
    let call = |method: &str, path: &str, headers: &[(&str, &str)]| {
        let mut req = c
            .request(method.parse().unwrap(), format!("{}{path}", rx.url()))
            .header("content-type", "application/json")
            .body("{}");
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let r = req.send().unwrap();
        let status = r.status().as_u16();
        let body: Value = serde_json::from_str(&r.text().unwrap()).unwrap_or(Value::Null);
        (status, body["reason"].as_str().unwrap_or("").to_string())
    };
    for (method, path) in CHANGES {
        let refused = (403, "not_the_page".to_string());
        assert_eq!(
            call(method, path, &[]),
            refused,
            "{method} {path}, no header"
        );
        assert_eq!(
            call(
                method,
                path,
                &[
                    ("x-sessionpipe-page", "1"),
                    ("origin", "http://evil.example")
                ]
            ),
            refused,
            "{method} {path}, another site"
        );
        let (status, reason) = call(
            method,
            path,
            &[("x-sessionpipe-page", "1"), ("origin", origin.as_str())],
        );
        assert!(
            reason != "not_the_page" && status != 404 && status != 405,
            "{method} {path} from the page: {status} {reason}"
        );
    }
    // Reads need no header; they answer for themselves (signed out here).
    let (status, reason) = call("GET", "/app/api/board", &[]);
    assert_eq!((status, reason.as_str()), (401, "signed_out"));
    assert_eq!(call("GET", "/app/api/config", &[]).0, 200);
}
