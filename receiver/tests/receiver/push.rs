//! Web Push end to end: the receiver's `push::send` against the test kit's
//! loopback push service, which checks the VAPID header and decrypts the body
//! on its own (RFC 8291, 8292), as a browser and its push service would. A
//! loopback service is reached only with the operator's opt-in to private
//! addresses (`--allow-private-notify`); without it, nothing goes out, and a
//! redirect is never followed.

use serde_json::json;
use sessionpipe_receiver::egress::Egress;
use sessionpipe_receiver::push::{
    MAX_PAYLOAD, PushError, PushOptions, Subscription, Urgency, Vapid, send,
};
use sessionpipe_testkit::push::PushService;
use std::time::Duration;

/// Where the receiver sends from, with the operator's opt-in to private
/// addresses: the push service here is on loopback.
fn client() -> Egress {
    Egress::new(true, Duration::from_secs(10)).expect("a client")
}

#[tokio::test]
async fn an_attention_push_arrives_decrypted_and_signed() {
    let service = PushService::start().expect("the push service starts");
    let browser = service.subscribe();
    let sub = Subscription::from_json(&browser).expect("the browser's subscription");
    // What the receiver keeps is what it reads back.
    let vapid = Vapid::from_pkcs8_der(
        &Vapid::generate("mailto:ops@example.org")
            .unwrap()
            .to_pkcs8_der()
            .unwrap(),
        "mailto:ops@example.org",
    )
    .unwrap();
    let payload = json!({
        "type": "attention.needed",
        "title": "Claude Code needs you",
        "body": "Allow Bash: ls?",
        "actions": ["allow", "deny"],
    })
    .to_string()
    .into_bytes();
    let opts = PushOptions {
        ttl_s: 120,
        urgency: Urgency::High,
        topic: Some("session-7f3a".into()),
    };

    let delivered = send(&client(), &vapid, &sub, &payload, &opts)
        .await
        .expect("delivered");
    assert_eq!(delivered.status, 201);
    assert_eq!(delivered.location.as_deref(), Some("/message/1"));

    let got = service.wait_for(1, Duration::from_secs(5));
    assert_eq!(got.len(), 1);
    let m = &got[0];
    assert_eq!(m.endpoint, browser["endpoint"].as_str().unwrap());
    assert_eq!(m.payload.as_deref(), Ok(payload.as_slice()));
    let claims = m.vapid.as_ref().expect("VAPID verifies");
    assert_eq!(claims.key, vapid.public_key_b64url());
    assert_eq!(claims.aud, service.origin());
    assert_eq!(claims.sub, "mailto:ops@example.org");
    assert_eq!(m.ttl.as_deref(), Some("120"));
    assert_eq!(m.urgency.as_deref(), Some("high"));
    assert_eq!(m.topic.as_deref(), Some("session-7f3a"));
    assert_eq!(m.content_encoding.as_deref(), Some("aes128gcm"));

    // No topic, default options: no Topic header.
    send(&client(), &vapid, &sub, b"{}", &PushOptions::default())
        .await
        .expect("delivered");
    let got = service.wait_for(2, Duration::from_secs(5));
    assert_eq!(got[1].topic, None);
    assert_eq!(got[1].urgency.as_deref(), Some("normal"));
    assert_eq!(got[1].payload.as_deref(), Ok(&b"{}"[..]));
}

#[tokio::test]
async fn an_expired_subscription_is_gone_and_busy_is_retry() {
    let service = PushService::start().expect("the push service starts");
    let browser = service.subscribe();
    let sub = Subscription::from_json(&browser).unwrap();
    let vapid = Vapid::generate("https://example.org/contact").unwrap();
    let c = client();

    service.fail_next(429, Some("7"));
    let e = send(&c, &vapid, &sub, b"{}", &PushOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(e, PushError::Retry { status: 429, retry_after: Some(d) } if d == Duration::from_secs(7)),
        "{e:?}"
    );

    service.expire(&sub.endpoint);
    let e = send(&c, &vapid, &sub, b"{}", &PushOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(e, PushError::Gone { status: 410 }), "{e:?}");
    // Both were received (and still decrypted): the answers were the service's.
    let got = service.received();
    assert_eq!(got.iter().map(|m| m.status).collect::<Vec<_>>(), [429, 410]);
    assert!(got.iter().all(|m| m.payload.is_ok() && m.vapid_verified()));
}

#[tokio::test]
async fn an_oversize_payload_is_refused_before_sending() {
    let service = PushService::start().expect("the push service starts");
    let sub = Subscription::from_json(&service.subscribe()).unwrap();
    let vapid = Vapid::generate("mailto:ops@example.org").unwrap();
    let c = client();

    let e = send(
        &c,
        &vapid,
        &sub,
        &vec![b'x'; MAX_PAYLOAD + 1],
        &PushOptions::default(),
    )
    .await
    .unwrap_err();
    assert!(matches!(e, PushError::TooLarge { .. }), "{e:?}");
    assert!(service.received().is_empty(), "nothing went out");

    // The largest one fits the 4096 bytes a push service must take.
    send(
        &c,
        &vapid,
        &sub,
        &vec![b'x'; MAX_PAYLOAD],
        &PushOptions::default(),
    )
    .await
    .expect("the largest payload is delivered");
    let got = service.wait_for(1, Duration::from_secs(5));
    assert_eq!(got[0].payload.as_ref().map(Vec::len), Ok(MAX_PAYLOAD));
}

#[tokio::test]
async fn a_loopback_endpoint_needs_the_operator_s_opt_in() {
    let service = PushService::start().expect("the push service starts");
    let sub = Subscription::from_json(&service.subscribe()).unwrap();
    let vapid = Vapid::generate("mailto:ops@example.org").unwrap();
    let public_only = Egress::new(false, Duration::from_secs(10)).unwrap();
    let e = send(&public_only, &vapid, &sub, b"{}", &PushOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(e, PushError::Address(_)), "{e:?}");
    assert!(e.to_string().contains("only https://"), "{e}");
    assert!(service.received().is_empty(), "nothing went out");
    send(&client(), &vapid, &sub, b"{}", &PushOptions::default())
        .await
        .expect("with the opt-in");
}

/// A one-answer HTTP server on loopback: every request is answered with a
/// redirect to `to`.
fn redirecting(to: String) -> std::net::SocketAddr {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0u8; length];
            let _ = reader.read_exact(&mut body);
            let _ = write!(
                conn,
                "HTTP/1.1 307 Temporary Redirect\r\nlocation: {to}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            );
        }
    });
    addr
}

#[tokio::test]
async fn a_redirect_is_refused_not_followed() {
    // Where the redirect points: a listener that must never see a connection.
    let target = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    target.set_nonblocking(true).unwrap();
    let to = format!("http://{}/stolen", target.local_addr().unwrap());
    let at = redirecting(to);
    let service = PushService::start().expect("the push service starts");
    let mut browser = service.subscribe();
    browser["endpoint"] = json!(format!("http://{at}/push/x"));
    let sub = Subscription::from_json(&browser).unwrap();
    let vapid = Vapid::generate("mailto:ops@example.org").unwrap();
    let e = send(&client(), &vapid, &sub, b"{}", &PushOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(e, PushError::Refused(307)), "{e:?}");
    assert_eq!(
        target.accept().map(|_| ()).unwrap_err().kind(),
        std::io::ErrorKind::WouldBlock,
        "the redirect's target was never connected to"
    );
}
