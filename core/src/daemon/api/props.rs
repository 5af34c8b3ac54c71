//! Property tests of the API's request bodies, through the router as the
//! listener serves it (token and `Host` checks included): any bytes, any JSON,
//! and objects shaped like settings and sinks with values of any type, to
//! `PUT /api/settings` and `POST /api/sinks`. Bounded in the test run; longer by
//! hand with `PROPTEST_CASES=20000 cargo test -p sessionpipe-core api::props`.
//!
//! The invariants: every answer is the caller's fault or a success (never a
//! 5xx, never a panic), a refusal says why in JSON, and what is stored stays
//! what it must be (`config.json` passes `Config::check`, `sinks.json` reads).
//! No body names a network target: discovery is the sinks' tests' business.

use super::views::Ctx;
use crate::state::config::Config;
use axum::body::Body;
use axum::http::{Method, Request};
use proptest::prelude::*;
use serde_json::{Value, json};
use std::sync::Arc;
use tower::ServiceExt;

fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1e9f64..1e9).prop_map(Value::from),
        ".{0,30}".prop_map(Value::String),
        Just(Value::String("../../etc".into())),
        Just(Value::String("nul\u{0}".into())),
        Just(Value::String("claude-code".into())),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(".{0,10}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn settings_body() -> impl Strategy<Value = Value> {
    let key = prop_oneof![
        Just("transcripts".to_string()),
        Just("machine".to_string()),
        Just("notify_tier".to_string()),
        Just("notify_turn_end".to_string()),
        Just("muted".to_string()),
        Just("notifications_paused".to_string()),
        Just("open_at_login".to_string()),
        ".{0,12}",
    ];
    prop::collection::btree_map(key, any_json(), 0..4)
        .prop_map(|m| Value::Object(m.into_iter().collect()))
}

/// A target that never reaches the network: junk, `stdout`, `file:` paths.
fn target() -> impl Strategy<Value = Value> {
    prop_oneof![
        ".{0,40}"
            .prop_filter("no network", |s| !s
                .to_ascii_lowercase()
                .starts_with("http"))
            .prop_map(Value::String),
        Just(json!("stdout")),
        "[a-z/.]{0,20}".prop_map(|p| json!(format!("file:{p}"))),
        any_json(),
    ]
}

fn sink_body() -> impl Strategy<Value = Value> {
    (target(), any_json(), any_json(), any::<bool>()).prop_map(|(t, tier, pii, with_target)| {
        let mut m = serde_json::Map::new();
        if with_target {
            m.insert("target".into(), t);
        }
        m.insert("tier".into(), tier);
        m.insert("pii".into(), pii);
        Value::Object(m)
    })
}

struct Api {
    _dir: tempfile::TempDir,
    ctx: Ctx,
    rt: tokio::runtime::Runtime,
}

impl Api {
    fn new() -> Api {
        let dir = tempfile::tempdir().unwrap();
        let paths = spool::StatePaths::new(dir.path().join("state"));
        paths.ensure().unwrap();
        Api {
            ctx: Ctx {
                config: crate::state::live_config::LiveConfig::follow(&paths),
                paths,
                token: Arc::new(std::sync::RwLock::new("t0ken".into())),
                host: Arc::new("127.0.0.1:1".into()),
                pairing: Arc::default(),
                hub: None,
                control: None,
                serves_ui: false,
            },
            _dir: dir,
            rt: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap(),
        }
    }

    fn send(&self, method: Method, path: &str, body: Vec<u8>) -> (u16, Value) {
        let app = super::router(self.ctx.clone(), None);
        let req = Request::builder()
            .method(method)
            .uri(path)
            .header("host", "127.0.0.1:1")
            .header("authorization", "Bearer t0ken")
            .header("content-type", "application/json")
            .body(Body::from(body))
            .unwrap();
        self.rt.block_on(async {
            let resp = app.oneshot(req).await.unwrap();
            let status = resp.status().as_u16();
            let bytes = axum::body::to_bytes(resp.into_body(), 1 << 20)
                .await
                .unwrap();
            (
                status,
                serde_json::from_slice(&bytes).unwrap_or(Value::Null),
            )
        })
    }

    /// The invariants after one request.
    fn check(&self, what: &str, (status, answer): (u16, Value)) -> Result<(), TestCaseError> {
        prop_assert!(status < 500, "{what}: {status} {answer}");
        if status >= 400 {
            prop_assert!(
                answer["error"].is_string(),
                "{what}: {status} without a reason"
            );
        }
        let config = Config::load(&self.ctx.paths);
        prop_assert!(config.is_ok(), "{what}: config.json unreadable");
        prop_assert!(
            config.unwrap().check().is_ok(),
            "{what}: an invalid setting was stored"
        );
        prop_assert!(
            crate::sinks::SinkList::load(&self.ctx.paths).is_ok(),
            "{what}: sinks.json"
        );
        Ok(())
    }
}

thread_local! {
    static API: Api = Api::new();
}

proptest! {
    #[test]
    fn settings_bodies_are_taken_or_refused_with_a_reason(body in settings_body()) {
        API.with(|api| {
            let bytes = serde_json::to_vec(&body).unwrap();
            api.check(&body.to_string(), api.send(Method::PUT, "/api/settings", bytes))
        })?;
    }

    #[test]
    fn sink_bodies_are_taken_or_refused_with_a_reason(body in sink_body()) {
        API.with(|api| {
            let bytes = serde_json::to_vec(&body).unwrap();
            api.check(&body.to_string(), api.send(Method::POST, "/api/sinks", bytes))
        })?;
    }

    #[test]
    fn any_bytes_are_refused_with_a_reason(body in prop::collection::vec(any::<u8>(), 0..200)) {
        API.with(|api| {
            for (method, path) in [(Method::PUT, "/api/settings"), (Method::POST, "/api/sinks")] {
                let answer = api.send(method, path, body.clone());
                api.check(path, answer)?;
            }
            Ok::<(), TestCaseError>(())
        })?;
    }
}
