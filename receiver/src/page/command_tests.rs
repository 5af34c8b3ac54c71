//! The page's early check of a signed command (`POST /app/api/commands`)
//! over real HTTP: Ann signed in, a machine of hers paired with a software
//! passkey (through the test door, with its enrollment proof), and commands
//! signed by that passkey's day grant and `csig`. The receiver runs the
//! machine's own verifier, so a command a machine would refuse is refused
//! here with the same code: a session id its harness never has is
//! `bad_session`, a command's own member of the wrong JSON type `malformed`.

use super::push_tests::Page;
use crate::accounts::tests::Phone;
use crate::{ControlOptions, Options, PageOptions, Receiver};
use reqwest::blocking::Client;
use serde_json::{Value, json};
use sessionpipe_verifier::softkey::{self, CommandText, DayKey, SoftPasskey};

const TOKEN: &str = "command-tests-sink-token";

#[test]
fn the_early_check_refuses_what_a_machine_would() {
    let rx = Receiver::start(Options {
        control: Some(ControlOptions::new("localhost")),
        page: Some(PageOptions::new("")),
        ..Options::new(TOKEN)
    })
    .unwrap();
    let mut page = Page::signed_up(rx.url(), &mut Phone::new());
    let (_, me) = page.call("GET", "/app/api/me", None);
    let account = me["account"]["id"].as_str().unwrap().to_string();

    // A machine of Ann's, trusting a passkey of this device.
    let client = Client::new();
    let post = |path: &str, body: Value| {
        client
            .post(format!("{}{path}", rx.url()))
            .bearer_auth(TOKEN)
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .unwrap()
    };
    let started = post(
        "/v1/control/pair",
        json!({"name": "laptop", "harnesses": ["claude-code"], "modes": ["turn"],
               "version": "0.1.0"}),
    );
    let started: Value = serde_json::from_str(&started.text().unwrap()).unwrap();
    let machine = started["machine"].as_str().unwrap().to_string();
    let code = started["code"].as_str().unwrap();
    let passkey = SoftPasskey::es256("localhost", "http://localhost:8080");
    let approved = post(
        "/test/pair/approve",
        json!({"code": code, "key": passkey.trusted(), "account": account,
               "proof": softkey::enrollment_proof(&passkey, &machine, code)}),
    );
    assert_eq!(approved.status(), 200);
    // The machine reads `paired` (and is made, with its token).
    let paired = client
        .get(format!("{}/v1/control/pair?code={code}", rx.url()))
        .bearer_auth(TOKEN)
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(paired.contains("\"paired\""), "{paired}");
    let day = DayKey::generate();
    let now = protocol::time::now_ms();
    let grant = softkey::grant(&passkey, &day, now - 60_000, now + 3_600_000, "localhost");

    let mut send = |session: &str, iat: Value| {
        let cmd = CommandText::prompt(
            &machine,
            session,
            "Add the Oct 8 row",
            &softkey::random_nonce(),
            now,
        )
        .set("iat", iat)
        .build();
        let signed = softkey::sign_with_grant(&cmd, &day, &grant);
        let mut body = serde_json::to_value(&signed).unwrap();
        body["machine"] = json!(machine);
        page.call("POST", "/app/api/commands", Some(body))
    };
    let good = "claude-code:8c132906-8c3f-4814-870a-afc3d05e1d2e";
    let (s, queued) = send(good, json!(now));
    assert_eq!(s, 201, "a good command is queued: {queued}");
    let (s, refused) = send("claude-code:not-a-uuid", json!(now));
    assert_eq!(
        (s, refused["reason"].as_str()),
        (400, Some("bad_session")),
        "{refused}"
    );
    let (s, refused) = send(good, json!(now as f64 + 0.5));
    assert_eq!(
        (s, refused["reason"].as_str()),
        (400, Some("malformed")),
        "{refused}"
    );
}
