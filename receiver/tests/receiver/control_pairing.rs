//! The control side's pairing and doors (PROTOCOL-NOTES §6, CONTROL §2): the
//! well-known `control` member, pairing with the sink token and open pairing
//! with a poll key, a key added to a known machine, the hello, and which token
//! opens which door.

use crate::common::*;
use serde_json::{Value, json};
use sessionpipe_verifier::softkey;
use sessionpipe_verifier::{Assertion, TrustedKey};

#[test]
fn the_discovery_document_names_the_control_side() {
    let rx = start_control(ControlOptions {
        open_pairing: true,
        session_tools: vec!["mcp__sessionpipe".into()],
        ..localhost()
    });
    let r = rx.get("/.well-known/sessionpipe", None);
    assert_eq!(r.status, 200);
    assert_eq!(
        r.body["capabilities"],
        json!(["events", "backfill", "forget", "control"])
    );
    assert_eq!(
        r.body["endpoints"],
        json!({"events": "/v1/events", "control": "/v1/control"})
    );
    assert_eq!(
        r.body["control"],
        json!({"wait_max_s": 25, "signing": {"rp_id": "localhost", "algs": [-7, -257]},
               "open_pairing": true, "session_tools": ["mcp__sessionpipe"]})
    );
    // Without control, none of it, and its paths are not served.
    let plain = start_default();
    let wk = plain.get("/.well-known/sessionpipe", None).body;
    assert!(wk.get("control").is_none() && wk["endpoints"].get("control").is_none());
    assert_eq!(
        plain
            .post_as("/v1/control/pair", Some(TOKEN), &pair_body())
            .status,
        404
    );
}

fn is_b64url(s: &str) -> bool {
    s.bytes()
        .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
}

#[test]
fn pairing_with_the_sink_token_hands_the_key_the_proof_and_a_token_once() {
    let rx = start_control(localhost());
    let started = rx.post_as("/v1/control/pair", Some(TOKEN), &pair_body());
    assert_eq!(started.status, 201, "{}", started.body);
    let b = &started.body;
    let machine = b["machine"].as_str().unwrap();
    let code = b["code"].as_str().unwrap();
    let check = b["check"].as_str().unwrap();
    assert!(machine.starts_with("m_") && (16..=40).contains(&(machine.len() - 2)));
    assert!(is_b64url(&machine[2..]) && (6..=32).contains(&code.len()) && is_b64url(code));
    assert!(check.len() == 6 && check.bytes().all(|c| c.is_ascii_digit()));
    assert!(protocol_time(b["expires_at"].as_str().unwrap()));
    let url = b["url"].as_str().unwrap();
    assert!(url.starts_with(&rx.h.url()), "{url}");

    // The page the url opens shows the same digits.
    let page = rx.c.get(url).send().unwrap().text().unwrap();
    assert!(
        page.contains(check) && page.contains("test-machine"),
        "{page}"
    );

    let status = |token: Option<&str>| rx.get(&format!("/v1/control/pair?code={code}"), token);
    assert_eq!(status(None).status, 401);
    assert_eq!(status(Some("wrong")).status, 401);
    assert_eq!(status(Some(TOKEN)).body, json!({"status": "pending"}));

    let pk = passkey();
    let proof = softkey::enrollment_proof(&pk, machine, code);
    let door = |body: &Value| rx.post_as("/test/pair/approve", Some(TOKEN), body);
    assert_eq!(door(&json!({"code": code})).status, 400, "no key");
    let no_token = rx.post_as(
        "/test/pair/approve",
        None,
        &approval(code, &pk.trusted(), &proof),
    );
    assert_eq!(no_token.status, 401);
    assert_eq!(
        door(&approval("nosuchcode", &pk.trusted(), &proof)).status,
        404
    );
    assert_eq!(door(&approval(code, &pk.trusted(), &proof)).status, 200);
    assert_eq!(
        door(&approval(code, &pk.trusted(), &proof)).status,
        409,
        "once"
    );

    let paired = status(Some(TOKEN));
    assert_eq!(paired.status, 200);
    assert_eq!(paired.body["status"], "paired");
    assert!(
        paired.body.get("sink_token").is_none(),
        "it had the sink token"
    );
    // What a machine does before it trusts the key: the proof verifies.
    let key: TrustedKey = serde_json::from_value(paired.body["key"].clone()).unwrap();
    let handed: Assertion = serde_json::from_value(paired.body["proof"].clone()).unwrap();
    assert_eq!(key, pk.trusted());
    sessionpipe_verifier::verify_enrollment(machine, code, &key, &handed, "localhost").unwrap();
    let token = paired.body["token"].as_str().unwrap();
    assert!((16..=256).contains(&token.len()));
    assert_eq!(status(Some(TOKEN)).status, 404, "read once, then gone");

    assert_eq!(
        rx.post_as("/v1/control/hello", Some(token), &hello_body())
            .status,
        204
    );
    let view = rx.view(machine);
    assert_eq!(view.body["keys"][0]["id"], json!(pk.id()));
}

fn protocol_time(t: &str) -> bool {
    t.len() == 24 && t.ends_with('Z') && t.as_bytes()[19] == b'.'
}

#[test]
fn open_pairing_takes_a_poll_key_and_keeps_only_its_hash() {
    let closed = start_control(localhost());
    let mut body = pair_body();
    body["poll_key"] = json!("poll-key-that-is-long-enough-0123456789");
    assert_eq!(
        closed.post_as("/v1/control/pair", None, &body).status,
        401,
        "open pairing off"
    );

    let dir = tempfile::tempdir().unwrap();
    let rx = start(Options {
        data: Some(dir.path().to_path_buf()),
        control: Some(ControlOptions {
            open_pairing: true,
            ..localhost()
        }),
        ..Options::new(TOKEN)
    });
    assert_eq!(
        rx.post_as("/v1/control/pair", None, &pair_body()).status,
        400,
        "no token and no poll key"
    );
    assert_eq!(
        rx.post_as("/v1/control/pair", Some("wrong"), &body).status,
        401,
        "a wrong token is not no token"
    );
    let poll_key = "Xq3-poll-key-open-pairing-8d1c44a7f0b2e9";
    body["poll_key"] = json!(poll_key);
    let started = rx.post_as("/v1/control/pair", None, &body);
    assert_eq!(started.status, 201, "{}", started.body);
    let machine = started.body["machine"].as_str().unwrap().to_string();
    let code = started.body["code"].as_str().unwrap().to_string();
    let status = |token: Option<&str>| rx.get(&format!("/v1/control/pair?code={code}"), token);
    assert_eq!(status(None).status, 401);
    assert_eq!(
        status(Some("Xq3-poll-key-open-pairing-8d1c44a7f0b2e8")).status,
        401
    );
    assert_eq!(status(Some(poll_key)).body, json!({"status": "pending"}));
    assert_eq!(status(Some(TOKEN)).body, json!({"status": "pending"}));

    let pk = passkey();
    let proof = softkey::enrollment_proof(&pk, &machine, &code);
    let mut approve = approval(&code, &pk.trusted(), &proof);
    approve["account"] = json!("test-person");
    assert_eq!(
        rx.post_as("/test/pair/approve", Some(TOKEN), &approve)
            .status,
        200
    );
    let paired = status(Some(poll_key));
    assert_eq!(paired.body["status"], "paired", "{}", paired.body);
    assert_eq!(paired.body["account"], "test-person");
    assert_eq!(paired.body["sink_token"], TOKEN, "the events lane's key");
    let token = paired.body["token"].as_str().unwrap().to_string();
    assert_eq!(status(Some(poll_key)).status, 404);

    let hello = rx.post_as("/v1/control/hello", Some(&token), &hello_body());
    assert_eq!(hello.status, 204);
    rx.h.stop();
    for secret in [poll_key, token.as_str(), token.split_once('.').unwrap().1] {
        assert_absent(dir.path(), secret);
    }
}

#[test]
fn one_client_holds_its_share_of_open_pairings_and_the_sink_token_is_not_held() {
    let rx = start_control(ControlOptions {
        open_pairing: true,
        pairings_per_client: 2,
        ..localhost()
    });
    let open = |i: usize| {
        let mut body = pair_body();
        body["poll_key"] = json!(format!("poll-key-of-pairing-number-{i}-0123456789"));
        rx.post_as("/v1/control/pair", None, &body)
    };
    let first = open(0);
    assert_eq!(first.status, 201);
    assert_eq!(open(1).status, 201);
    let third = open(2);
    assert_eq!(third.status, 429, "{}", third.body);
    assert_eq!(third.body["reason"], "rate_limited");
    let detail = third.body["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("too many pairings are pending from your address: try again in"),
        "{detail}"
    );
    // The first of them ends in ten minutes: that is when to come back.
    let wait: u64 = third.headers["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((590..=600).contains(&wait), "{wait}");
    // The operator's own token is not held to a client's share.
    for _ in 0..3 {
        assert_eq!(
            rx.post_as("/v1/control/pair", Some(TOKEN), &pair_body())
                .status,
            201
        );
    }
    // An approved pairing is no longer pending: the share is back.
    let code = first.body["code"].as_str().unwrap();
    let machine = first.body["machine"].as_str().unwrap();
    let pk = passkey();
    let proof = softkey::enrollment_proof(&pk, machine, code);
    assert_eq!(
        rx.post_as(
            "/test/pair/approve",
            Some(TOKEN),
            &approval(code, &pk.trusted(), &proof)
        )
        .status,
        200
    );
    assert_eq!(open(3).status, 201);
    assert_eq!(open(4).status, 429);
}

/// No file of the data folder holds `secret`.
pub fn assert_absent(dir: &std::path::Path, secret: &str) {
    let mut seen = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        if !path.is_file() {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        seen += bytes.len();
        assert!(
            !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
            "{} holds a secret",
            path.display()
        );
    }
    assert!(seen > 0, "the store wrote something");
}

#[test]
fn a_pairing_with_a_machine_adds_a_key_and_hands_no_token() {
    let rx = start_control(localhost());
    let p = rx.pair();
    let mut body = pair_body();
    body["machine"] = json!(p.machine);
    let started = rx.post_as("/v1/control/pair", Some(TOKEN), &body);
    assert_eq!(started.status, 201, "{}", started.body);
    assert_eq!(started.body["machine"], json!(p.machine));
    let code = started.body["code"].as_str().unwrap();
    let phone = passkey();
    let proof = softkey::enrollment_proof(&phone, &p.machine, code);
    let ok = rx.post_as(
        "/test/pair/approve",
        Some(TOKEN),
        &approval(code, &phone.trusted(), &proof),
    );
    assert_eq!(ok.status, 200);
    let paired = rx.get(&format!("/v1/control/pair?code={code}"), Some(TOKEN));
    assert_eq!(paired.body["status"], "paired");
    assert!(paired.body.get("token").is_none(), "{}", paired.body);
    let ids: Vec<Value> = rx.view(&p.machine).body["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["id"].clone())
        .collect();
    assert_eq!(ids, [json!(p.passkey.id()), json!(phone.id())]);
    // The machine's token is unchanged.
    assert_eq!(rx.poll_ids(&p, 0), Err(204));

    body["machine"] = json!("m_AAAAAAAAAAAAAAAAAAAAAA");
    assert_eq!(
        rx.post_as("/v1/control/pair", Some(TOKEN), &body).status,
        404,
        "no such machine"
    );
}

#[test]
fn an_unapproved_pairing_expires() {
    let rx = start_control(ControlOptions {
        pair_ttl: std::time::Duration::from_millis(300),
        max_pairings: 1,
        ..localhost()
    });
    let started = rx.post_as("/v1/control/pair", Some(TOKEN), &pair_body());
    let code = started.body["code"].as_str().unwrap().to_string();
    assert_eq!(
        rx.post_as("/v1/control/pair", Some(TOKEN), &pair_body())
            .status,
        429,
        "one pending at most"
    );
    std::thread::sleep(std::time::Duration::from_millis(400));
    let status = rx.get(&format!("/v1/control/pair?code={code}"), Some(TOKEN));
    assert_eq!(status.body, json!({"status": "expired"}));
    let pk = passkey();
    let machine = started.body["machine"].as_str().unwrap();
    let proof = softkey::enrollment_proof(&pk, machine, &code);
    let late = rx.post_as(
        "/test/pair/approve",
        Some(TOKEN),
        &approval(&code, &pk.trusted(), &proof),
    );
    assert_eq!(late.status, 410);
    assert_eq!(
        rx.post_as("/v1/control/pair", Some(TOKEN), &pair_body())
            .status,
        201,
        "an expired pairing is not pending"
    );
}

#[test]
fn a_hello_is_checked_and_the_last_one_kept() {
    let rx = start_control(localhost());
    let p = rx.pair();
    let hello = |body: &Value| rx.post_as("/v1/control/hello", Some(&p.token), body);
    for k in ["name", "harnesses", "modes", "keys", "version"] {
        let mut h = hello_body();
        h.as_object_mut().unwrap().remove(k);
        let r = hello(&h);
        assert_eq!(r.status, 400, "{k}");
        assert_eq!(r.body["detail"], format!("{k}: missing"));
    }
    let mut bad = hello_body();
    bad["modes"] = json!(["telepathy"]);
    assert_eq!(hello(&bad).status, 400);
    let not_json = rx.post_raw(
        "/v1/control/hello",
        b"{".to_vec(),
        &[("authorization", &format!("Bearer {}", p.token))],
    );
    assert_eq!(not_json.status, 400);
    assert!(rx.view(&p.machine).body["hello"].is_null(), "nothing kept");

    let mut first = hello_body();
    first["folders"] = json!(["~/src"]);
    assert_eq!(hello(&first).status, 204);
    let mut second = hello_body();
    second["waiting"] = json!(["claude-code:abc"]);
    second["pool"] = json!({"kept": "as sent"});
    assert_eq!(hello(&second).status, 204);
    assert_eq!(rx.view(&p.machine).body["hello"], second);
}

#[test]
fn each_token_opens_its_own_doors_only() {
    let rx = start_control(localhost());
    let p = rx.pair();
    let other = rx.pair();
    // The machine's token on the events side and the doors: refused.
    let events = rx.post_raw(
        "/v1/events",
        json!({"events": [started("s", 0)]})
            .to_string()
            .into_bytes(),
        &[("authorization", &format!("Bearer {}", p.token))],
    );
    assert_eq!(events.status, 401);
    assert_eq!(
        rx.get("/v1/sessions/test-harness:s", Some(&p.token)).status,
        401
    );
    assert_eq!(
        rx.post_as("/test/faults", Some(&p.token), &json!({}))
            .status,
        401
    );
    assert_eq!(
        rx.get(
            &format!("/test/control/messages?machine={}", p.machine),
            Some(&p.token)
        )
        .status,
        401
    );
    assert_eq!(
        rx.post_as("/v1/control/pair", Some(&p.token), &pair_body())
            .status,
        401
    );
    // The sink token on the machine calls: refused.
    let sink = Paired {
        token: TOKEN.into(),
        ..rx.pair()
    };
    assert_eq!(rx.poll(&sink, 0).status, 401);
    assert_eq!(
        rx.post_as("/v1/control/hello", Some(TOKEN), &hello_body())
            .status,
        401
    );
    let ack = ack_of("01K6ZT0000000000000000000A", "delivered", json!({}));
    assert_eq!(rx.ack(&sink, &[ack]).status, 401);
    assert_eq!(
        rx.post_as("/v1/control/off", Some(TOKEN), &json!({}))
            .status,
        401
    );
    // A machine's token for another machine's queue: refused.
    let borrowed = rx.get(
        &format!("/v1/control?machine={}&wait=0", other.machine),
        Some(&p.token),
    );
    assert_eq!(borrowed.status, 401);
    // A token with a known machine's id and another secret: refused.
    let forged = format!("{}.{}", p.machine, "A".repeat(43));
    assert_eq!(
        rx.post_as("/v1/control/hello", Some(&forged), &hello_body())
            .status,
        401
    );
    assert_eq!(rx.poll(&p, 0).status, 204, "its own token still works");
}

#[test]
fn the_binary_serves_control_when_told() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let bin = env!("CARGO_BIN_EXE_sessionpipe-receiver");
    // Its own folder: the kill below leaves no temporary one behind.
    let data = tempfile::tempdir().unwrap();
    let mut child = Command::new(bin)
        .args(["--token", TOKEN, "--quiet", "--control", "--open-pairing"])
        .args(["--session-tool", "mcp__sessionpipe", "--wait-max-s", "5"])
        .arg("--data")
        .arg(data.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut url = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut url)
        .unwrap();
    let text = reqwest::blocking::get(format!("{}/.well-known/sessionpipe", url.trim()))
        .unwrap()
        .text()
        .unwrap();
    let wk: Value = serde_json::from_str(&text).unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(wk["control"]["wait_max_s"], 5);
    assert_eq!(wk["control"]["open_pairing"], true);
    assert_eq!(wk["control"]["session_tools"], json!(["mcp__sessionpipe"]));

    let out = Command::new(bin)
        .args(["--token", TOKEN, "--control", "--session-tool", "Bash"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "a built-in tool is never declared"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("session_tools"), "{err}");
    let out = Command::new(bin)
        .args(["--token", TOKEN, "--open-pairing"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "--open-pairing needs --control");
}

#[test]
fn the_binary_takes_its_trusted_proxy_and_each_client_s_share() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let bin = env!("CARGO_BIN_EXE_sessionpipe-receiver");
    // Its own folder: the kill below leaves no temporary one behind.
    let data = tempfile::tempdir().unwrap();
    let mut child = Command::new(bin)
        .args(["--token", TOKEN, "--quiet", "--control", "--open-pairing"])
        .args(["--trusted-proxy", "127.0.0.1", "--pairings-per-client", "1"])
        .arg("--data")
        .arg(data.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut url = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut url)
        .unwrap();
    let start = |client: &str, i: usize| {
        let mut body = pair_body();
        body["poll_key"] = json!(format!("poll-key-of-pairing-number-{i}-0123456789"));
        reqwest::blocking::Client::new()
            .post(format!("{}/v1/control/pair", url.trim()))
            .header("x-forwarded-for", client)
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .unwrap()
            .status()
            .as_u16()
    };
    let answers = [
        start("198.51.100.1", 0),
        start("198.51.100.1", 1),
        start("198.51.100.2", 2),
    ];
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(
        answers,
        [201, 429, 201],
        "one pending each, told apart by the proxy"
    );

    for (args, why) in [
        (
            &["--trusted-proxy", "proxy.example.net"][..],
            "not an address",
        ),
        (&["--trusted-proxy", "10.0.0.0/33"][..], "no such network"),
        (
            &["--proxy-header", "forwarded"][..],
            "a header without a proxy",
        ),
        (
            &["--trusted-proxy", "::1", "--proxy-header", "x-real-ip"][..],
            "a header not read",
        ),
        (&["--pairings-per-client", "2"][..], "needs --control"),
        (
            &["--ceremonies-per-client", "2", "--control"][..],
            "needs --page",
        ),
        (
            &["--control", "--pairings-per-client", "0"][..],
            "at least one",
        ),
    ] {
        let out = Command::new(bin)
            .args(["--token", TOKEN])
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{why}: {args:?}");
    }
}
