//! Web Push end to end: the receiver's `push::send` against the test kit's
//! loopback push service, which checks the VAPID header and decrypts the body
//! on its own (RFC 8291, 8292), as a browser and its push service would.

use serde_json::json;
use sessionpipe_receiver::push::{
    MAX_PAYLOAD, PushError, PushOptions, Subscription, Urgency, Vapid, send,
};
use sessionpipe_testkit::push::PushService;
use std::time::Duration;

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .expect("a client")
}

#[tokio::test]
async fn an_attention_push_arrives_decrypted_and_signed() {
    let service = PushService::start().expect("the push service starts");
    let browser = service.subscribe();
    let sub = Subscription::from_json(&browser, true).expect("the browser's subscription");
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
    let sub = Subscription::from_json(&browser, true).unwrap();
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
    let sub = Subscription::from_json(&service.subscribe(), true).unwrap();
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

#[test]
fn a_loopback_http_endpoint_needs_the_flag() {
    let service = PushService::start().expect("the push service starts");
    let browser = service.subscribe();
    assert!(Subscription::from_json(&browser, false).is_err());
    assert!(Subscription::from_json(&browser, true).is_ok());
}
