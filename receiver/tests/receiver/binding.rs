//! Each answer of the binding (PROTOCOL-NOTES §5), the fault door and the
//! signatures, against an in-process receiver.

use crate::common::*;
use serde_json::{Value, json};
use sessionpipe_receiver::signature;

#[test]
fn the_discovery_document() {
    let rx = start(Options {
        max_tier: 2,
        max_events: 10,
        max_bytes: 4096,
        ..Options::new(TOKEN)
    });
    let r = rx.get("/.well-known/sessionpipe", None);
    assert_eq!(r.status, 200);
    assert_eq!(
        r.body,
        json!({
            "protocol": [1], "max_tier": 2,
            "capabilities": ["events", "backfill", "forget"], "auth": ["bearer"],
            "endpoints": {"events": "/v1/events"},
            "batch": {"max_events": 10, "max_bytes": 4096}
        })
    );
}

#[test]
fn a_batch_is_stored_and_read_back_in_seq_order() {
    let rx = start_default();
    let batch = [started("s1", 2), started("s1", 0), started("s1", 1)];
    let r = rx.send(&batch);
    assert_eq!(r.status, 202);
    assert_eq!(
        r.body,
        json!({"accepted": 3, "duplicates": 0, "rejected": [], "max_tier": 3})
    );
    assert_eq!(rx.seqs("s1"), Ok(vec![0, 1, 2]));
    let read = rx.get("/v1/sessions/test-harness:s1", Some(TOKEN));
    assert_eq!(read.body[0]["id"], batch[1]["id"], "stored as sent");

    assert_eq!(rx.seqs("nobody"), Err(404));
    let no_token = rx.get("/v1/sessions/test-harness:s1", None);
    assert_eq!(no_token.status, 401);
    assert_eq!(rx.get("/v1/sessions/no-colon", Some(TOKEN)).status, 400);
    assert_eq!(rx.get("/nowhere", None).status, 404);
    let stats = rx.h.stats();
    assert_eq!((stats.posts, stats.accepted, stats.events), (1, 3, 3));
}

#[test]
fn a_wrong_or_missing_token_is_401_and_stores_nothing() {
    let rx = start_default();
    let body = json!({"events": [started("s", 0)]}).to_string();
    for auth in [
        None,
        Some("Bearer nope"),
        Some("Basic test-token-7f3a"),
        Some("Bearer"),
    ] {
        let headers: Vec<(&str, &str)> = auth.map(|a| ("authorization", a)).into_iter().collect();
        let r = rx.post_raw("/v1/events", body.clone().into_bytes(), &headers);
        assert_eq!(r.status, 401, "{auth:?}");
        assert_eq!(r.body["reason"], "unauthorized");
    }
    let lower = rx.post_raw(
        "/v1/events",
        body.into_bytes(),
        &[("authorization", &format!("bearer {TOKEN}"))],
    );
    assert_eq!(lower.status, 202, "the scheme is case-insensitive");
    assert_eq!(rx.h.stored_keys().len(), 1);
}

#[test]
fn a_higher_protocol_is_400_unsupported_protocol() {
    let rx = start_default();
    let want = json!({"reason": "unsupported_protocol", "supported": [1]});
    let body = json!({"events": [started("s", 0)]})
        .to_string()
        .into_bytes();
    let auth = format!("Bearer {TOKEN}");
    let by_header = rx.post_raw(
        "/v1/events",
        body,
        &[("authorization", &auth), ("sessionpipe-protocol", "2")],
    );
    assert_eq!((by_header.status, by_header.body), (400, want.clone()));

    let mut e = started("s", 0);
    e["protocol"] = json!(99);
    let by_event = rx.send(&[started("s", 1), e]);
    assert_eq!((by_event.status, by_event.body), (400, want));
    assert!(rx.h.stored_keys().is_empty(), "the whole batch is refused");
}

#[test]
fn malformed_bodies_are_400() {
    let rx = start_default();
    let auth = format!("Bearer {TOKEN}");
    let mut no_id = started("s", 0);
    no_id.as_object_mut().unwrap().remove("id");
    let bodies: Vec<Vec<u8>> = vec![
        b"not json".to_vec(),
        b"{}".to_vec(),
        br#"{"events": []}"#.to_vec(),
        br#"{"events": "x"}"#.to_vec(),
        json!({"events": [no_id]}).to_string().into_bytes(),
        json!({"events": [1]}).to_string().into_bytes(),
    ];
    for b in bodies {
        let shown = String::from_utf8_lossy(&b).into_owned();
        let r = rx.post_raw("/v1/events", b, &[("authorization", &auth)]);
        assert_eq!(r.status, 400, "{shown}");
        assert_eq!(r.body["reason"], "malformed", "{shown}");
    }
    let bad_header = rx.post_raw(
        "/v1/events",
        json!({"events": [started("s", 0)]})
            .to_string()
            .into_bytes(),
        &[("authorization", &auth), ("sessionpipe-protocol", "one")],
    );
    assert_eq!(bad_header.status, 400);
}

#[test]
fn over_max_events_or_max_bytes_is_413() {
    let rx = start(Options {
        max_events: 5,
        max_bytes: 2048,
        ..Options::new(TOKEN)
    });
    let five: Vec<Value> = (0..5).map(|i| started("s", i)).collect();
    let six: Vec<Value> = (0..6).map(|i| started("t", i)).collect();
    assert_eq!(rx.send(&six).status, 413);
    assert_eq!(rx.send(&five).status, 202, "exactly max_events is fine");

    let mut big = started("u", 0);
    big["data"]["padding"] = json!("x".repeat(2048));
    let r = rx.send(&[big]);
    assert_eq!(
        (r.status, r.body["reason"].as_str()),
        (413, Some("too_large"))
    );
    let mut fits = started("u", 0);
    let room = 2048 - json!({"events": [fits]}).to_string().len() - r#","padding":"""#.len();
    fits["data"]["padding"] = json!("x".repeat(room));
    assert_eq!(json!({"events": [fits]}).to_string().len(), 2048);
    assert_eq!(rx.send(&[fits]).status, 202, "exactly max_bytes is fine");
    assert_eq!(rx.h.stored_keys().len(), 6);
}

#[test]
fn an_event_above_max_tier_is_403_and_stores_nothing() {
    let rx = start(Options {
        max_tier: 1,
        ..Options::new(TOKEN)
    });
    let mut tool = event("s", 1, "tool.ended", 1);
    tool["data"] = json!({"tool": "Bash", "ok": true});
    let transcript = event("s", 2, "turn.transcript", 2);
    let r = rx.send(&[started("s", 0), tool.clone(), transcript]);
    assert_eq!(r.status, 403);
    assert_eq!(r.body, json!({"reason": "tier_above_max", "max_tier": 1}));
    assert!(rx.h.stored_keys().is_empty());
    let ok = rx.send(&[started("s", 0), tool]);
    assert_eq!((ok.status, ok.body["max_tier"].as_u64()), (202, Some(1)));
}

#[test]
fn invalid_events_are_rejected_one_by_one_with_a_reason() {
    let rx = start_default();
    let good = started("s", 0);
    let mut bad_type = started("s", 1);
    bad_type["type"] = json!("Session.Started");
    let below_tier = event("s", 2, "tool.ended", 0);
    let mut no_session = started("s", 3);
    no_session.as_object_mut().unwrap().remove("session");
    let mut bad_id = started("s", 4);
    bad_id["id"] = json!("not-a-ulid");
    let sent = [
        good,
        bad_type.clone(),
        below_tier.clone(),
        no_session.clone(),
        bad_id,
    ];
    let r = rx.send(&sent);
    assert_eq!(r.status, 202);
    assert_eq!(
        (r.body["accepted"].as_u64(), r.body["duplicates"].as_u64()),
        (Some(1), Some(0))
    );
    let rejected = r.body["rejected"].as_array().unwrap();
    let ids: Vec<&Value> = rejected.iter().map(|x| &x["id"]).collect();
    assert_eq!(
        ids,
        [
            &bad_type["id"],
            &below_tier["id"],
            &no_session["id"],
            &json!("not-a-ulid")
        ]
    );
    let reasons: Vec<&str> = rejected
        .iter()
        .map(|x| x["reason"].as_str().unwrap())
        .collect();
    assert!(reasons[0].starts_with("type"), "{reasons:?}");
    assert!(reasons[1].contains("below tier 1"), "{reasons:?}");
    assert!(reasons[2].starts_with("session"), "{reasons:?}");
    assert!(reasons[3].starts_with("id"), "{reasons:?}");
    assert_eq!(rx.seqs("s"), Ok(vec![0]));
    // A rejected key was not stored, so a corrected event is accepted later.
    assert_eq!(rx.send(&[started("s", 1)]).body["accepted"], 1);
}

#[test]
fn unknown_types_are_accepted_and_stored_whole() {
    let rx = start_default();
    let mut e = event("s", 0, "x.y", 0);
    e["data"] = json!({"anything": true, "nested": {"k": [1, 2]}});
    e["session"]["future_field"] = json!("kept");
    let r = rx.send(std::slice::from_ref(&e));
    assert_eq!(
        (r.status, &r.body["accepted"], &r.body["rejected"]),
        (202, &json!(1), &json!([]))
    );
    let stored = rx.h.events("test-harness", "s").unwrap().unwrap();
    assert_eq!(stored, vec![e]);
}

#[test]
fn signatures_are_checked_when_a_secret_is_given() {
    let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    let rx = start(Options {
        webhook_secret: Some(secret.into()),
        ..Options::new(TOKEN)
    });
    let key = signature::decode_secret(secret).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        .to_string();
    let auth = format!("Bearer {TOKEN}");
    let post = |seq: u64, ts: &str, sig: Option<String>| {
        let body = json!({"events": [started("s", seq)]})
            .to_string()
            .into_bytes();
        let sig = sig.unwrap_or_else(|| signature::sign(&key, "msg_1", ts, &body));
        rx.post_raw(
            "/v1/events",
            body,
            &[
                ("authorization", &auth),
                ("webhook-id", "msg_1"),
                ("webhook-timestamp", ts),
                ("webhook-signature", &sig),
            ],
        )
    };
    assert_eq!(post(0, &now, None).status, 202);
    let forged = post(
        1,
        &now,
        Some("v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=".into()),
    );
    assert_eq!(
        (forged.status, forged.body["reason"].as_str()),
        (401, Some("bad_signature"))
    );
    let stale = (now.parse::<i64>().unwrap() - 3600).to_string();
    assert_eq!(post(2, &stale, None).status, 401, "an old timestamp");
    assert_eq!(
        rx.send(&[started("s", 3)]).status,
        401,
        "no signature at all"
    );
    assert_eq!(rx.seqs("s"), Ok(vec![0]));
}

#[test]
fn the_fault_door_answers_each_error_row_then_recovers() {
    let rx = start(Options {
        max_tier: 2,
        ..Options::new(TOKEN)
    });
    for (seq, status) in [400u16, 401, 403, 413, 429, 500, 503]
        .into_iter()
        .enumerate()
    {
        let seq = seq as u64;
        let mut fault = json!({"status": status, "count": 2});
        if status == 429 || status == 503 {
            fault["retry_after"] = json!("2");
        }
        assert_eq!(rx.arm(fault).status, 200);
        for _ in 0..2 {
            let r = rx.send(&[started("s", seq)]);
            assert_eq!(r.status, status);
            assert!(r.body["reason"].is_string(), "{status}: {}", r.body);
            let retry = r
                .headers
                .get("retry-after")
                .map(|v| v.to_str().unwrap().to_string());
            let want = (status == 429 || status == 503).then(|| "2".to_string());
            assert_eq!(retry, want, "{status}");
        }
        if status == 403 {
            // A sender reads max_tier off this answer to lower its tier.
            let again = rx.arm(json!({"status": 403}));
            assert_eq!(again.status, 200);
            assert_eq!(rx.send(&[started("s", seq)]).body["max_tier"], 2);
        }
        let r = rx.send(&[started("s", seq)]);
        assert_eq!(r.status, 202, "{status}: the fault is used up");
    }
    assert_eq!(rx.seqs("s"), Ok((0..7).collect()));

    let custom = json!({"reason": "down for maintenance"});
    rx.arm(json!({"status": 503, "count": 5, "body": custom}));
    assert_eq!(rx.send(&[started("s", 7)]).body, custom);
    assert_eq!(rx.arm(json!({})).body, json!({"armed": null}));
    assert_eq!(rx.send(&[started("s", 7)]).status, 202, "cleared");

    assert_eq!(rx.arm(json!({"status": 99})).status, 400);
    assert_eq!(rx.arm(json!({"status": 500, "nope": 1})).status, 400);
    let no_token = rx.post_raw("/test/faults", br#"{"status":500}"#.to_vec(), &[]);
    assert_eq!(no_token.status, 401);
    assert_eq!(rx.send(&[started("s", 8)]).status, 202, "nothing was armed");

    rx.h.set_fault(Some(Fault::new(500)));
    assert_eq!(rx.send(&[started("s", 9)]).status, 500);
    // 3 per row, one more for 403's max_tier, then four single posts.
    assert_eq!(rx.h.stats().posts, 7 * 3 + 1 + 4);
}

#[test]
fn options_out_of_bounds_do_not_start() {
    let bad = [
        Options {
            max_events: 51,
            ..Options::new(TOKEN)
        },
        Options {
            max_bytes: 1000,
            ..Options::new(TOKEN)
        },
        Options {
            max_tier: 4,
            ..Options::new(TOKEN)
        },
        Options {
            webhook_secret: Some("secret".into()),
            ..Options::new(TOKEN)
        },
        Options {
            listen: "0.0.0.0:0".parse().unwrap(),
            ..Options::new(TOKEN)
        },
        Options::new(""),
    ];
    for o in bad {
        let e = Receiver::start(o.clone())
            .err()
            .unwrap_or_else(|| panic!("{o:?} started"));
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    }
}

#[test]
fn a_body_declared_past_the_cap_is_refused_before_it_is_sent() {
    use std::io::{Read, Write};
    let rx = start_default();
    let mut s = std::net::TcpStream::connect(rx.h.addr()).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    // 100 MB announced, none of it sent: the answer comes without waiting for it.
    write!(
        s,
        "POST /v1/events HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {TOKEN}\r\n\
         content-type: application/json\r\ncontent-length: 100000000\r\n\r\n"
    )
    .unwrap();
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
    assert!(
        text.to_ascii_lowercase().contains("connection: close"),
        "{text}"
    );
    assert!(rx.h.stored_keys().is_empty());
}

#[test]
fn with_a_certificate_it_serves_https_and_the_page_s_origin_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let (cert_file, key_file) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert_file, cert.cert.pem()).unwrap();
    std::fs::write(&key_file, cert.signing_key.serialize_pem()).unwrap();
    let h = Receiver::start(Options {
        tls: Some(sessionpipe_receiver::TlsFiles {
            cert: cert_file.clone(),
            key: key_file.clone(),
        }),
        control: Some(localhost()),
        page: Some(sessionpipe_receiver::PageOptions::new("")),
        ..Options::new(TOKEN)
    })
    .unwrap();
    assert!(h.url().starts_with("https://127.0.0.1:"), "{}", h.url());
    let port = h.addr().port();
    assert_eq!(h.page_origin(), Some(format!("https://localhost:{port}")));
    let client = reqwest::blocking::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(cert.cert.pem().as_bytes()).unwrap())
        .build()
        .unwrap();
    let text = client
        .get(format!("https://localhost:{port}/.well-known/sessionpipe"))
        .send()
        .unwrap()
        .text()
        .unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["control"]["signing"]["rp_id"], "localhost");
    // Plain HTTP to the same port gets no answer a client could take.
    let plain = reqwest::blocking::get(format!("http://127.0.0.1:{port}/.well-known/sessionpipe"));
    assert!(plain.is_err() || !plain.unwrap().status().is_success());
    // A key that is not the certificate's is refused at start, saying which.
    let other = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    std::fs::write(&key_file, other.signing_key.serialize_pem()).unwrap();
    let err = Receiver::start(Options {
        tls: Some(sessionpipe_receiver::TlsFiles {
            cert: cert_file,
            key: key_file,
        }),
        ..Options::new(TOKEN)
    })
    .err()
    .unwrap();
    assert!(err.to_string().contains("does not fit"), "{err}");
}
