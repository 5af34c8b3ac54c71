//! Signing in, refreshing and reading usage over real HTTP on loopback: a
//! small OAuth and API server (axum, in this test) in the vendor's place,
//! and the pool's own client. Every call names its base explicitly
//! (`..._at`), so nothing here sets a process-wide variable.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};
use sessionpipe_pool::oauth::{self, Login, OAuthError, Secret};
use sessionpipe_pool::usage;
use sha2::{Digest, Sha256};
use std::sync::{Arc, Mutex};

/// What the server heard: (path, headers, body as JSON).
type Heard = Arc<Mutex<Vec<(String, HeaderMap, Value)>>>;

struct Server {
    base: String,
    heard: Heard,
}

fn hear(heard: &Heard, path: &str, headers: &HeaderMap, body: Value) {
    heard
        .lock()
        .unwrap()
        .push((path.to_string(), headers.clone(), body));
}

async fn token(State(heard): State<Heard>, headers: HeaderMap, body: String) -> Response {
    let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    hear(&heard, "/v1/oauth/token", &headers, body.clone());
    let s = |k: &str| body[k].as_str().unwrap_or("").to_string();
    match (s("grant_type").as_str(), s("code").as_str(), s("refresh_token").as_str()) {
        ("authorization_code", "good-code", _) => Json(json!({
            "token_type": "Bearer",
            "access_token": "at-1",
            "refresh_token": "rt-1",
            "expires_in": 28800,
            "scope": "user:inference user:profile",
            "account": {"uuid": "0c4f2b9e-aaaa-4bbb-8ccc-000000000001", "email_address": "one@example.com"},
        }))
        .into_response(),
        // Its profile cannot be read: the token answer names the account.
        ("authorization_code", "no-profile-code", _) => Json(json!({
            "access_token": "at-noprofile",
            "refresh_token": "rt-x",
            "expires_in": 28800,
            "account": {"uuid": "0C4F2B9E-AAAA-4BBB-8CCC-000000000002", "email_address": "two@example.com"},
        }))
        .into_response(),
        ("authorization_code", _, _) => (
            StatusCode::BAD_REQUEST,
            Json(json!({"error": "invalid_grant", "error_description": "Invalid 'code' in request."})),
        )
            .into_response(),
        ("refresh_token", _, "rt-1") => Json(json!({
            "access_token": "at-2",
            "refresh_token": "rt-2",
            "expires_in": 3600,
        }))
        .into_response(),
        ("refresh_token", _, "rt-unrotated") => Json(json!({
            "access_token": "at-3",
            "expires_in": 3600,
        }))
        .into_response(),
        ("refresh_token", _, "rt-busy") => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"error": {"type": "overloaded_error", "message": "rt-busy is busy"}})),
        )
            .into_response(),
        _ => (
            StatusCode::BAD_REQUEST,
            Json(json!({"error": "invalid_grant", "error_description": "Refresh token not found or invalid"})),
        )
            .into_response(),
    }
}

fn bearer(headers: &HeaderMap) -> String {
    headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string()
}

async fn profile(State(heard): State<Heard>, headers: HeaderMap) -> Response {
    hear(&heard, "/api/oauth/profile", &headers, Value::Null);
    match bearer(&headers).as_str() {
        "Bearer at-1" | "Bearer at-2" => Json(json!({
            "account": {"uuid": "0c4f2b9e-aaaa-4bbb-8ccc-000000000001", "email": "one@example.com", "display_name": "One"},
            "organization": {"uuid": "org-1", "organization_type": "claude_max"},
        }))
        .into_response(),
        "Bearer at-noprofile" => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
        _ => (
            StatusCode::UNAUTHORIZED,
            Json(json!({"type": "error", "error": {"type": "authentication_error", "message": "Invalid bearer token"}})),
        )
            .into_response(),
    }
}

async fn usage_answer(State(heard): State<Heard>, headers: HeaderMap) -> Response {
    hear(&heard, "/api/oauth/usage", &headers, Value::Null);
    if bearer(&headers) != "Bearer at-2" {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    Json(json!({
        "five_hour": {"utilization": 23.0, "resets_at": "2026-12-03T18:00:00.123456+00:00"},
        "seven_day": {"utilization": 41.0, "resets_at": "2026-12-08T09:00:00+00:00"},
        "seven_day_oauth_apps": null,
        "seven_day_opus": {"utilization": 0.0, "resets_at": null},
        "seven_day_sonnet": null,
        "extra_usage": {"is_enabled": false, "monthly_limit": null, "used_credits": null, "utilization": null},
    }))
    .into_response()
}

async fn moved(State(heard): State<Heard>, headers: HeaderMap) -> Response {
    hear(&heard, "/moved", &headers, Value::Null);
    let mut r = StatusCode::FOUND.into_response();
    r.headers_mut()
        .insert("location", "/v1/oauth/token".parse().unwrap());
    r
}

async fn server() -> Server {
    let heard: Heard = Arc::default();
    let app = axum::Router::new()
        .route("/v1/oauth/token", post(token))
        .route("/api/oauth/profile", get(profile))
        .route("/api/oauth/usage", get(usage_answer))
        .route("/moved/v1/oauth/token", post(moved))
        .route("/moved/api/oauth/usage", get(moved))
        .with_state(heard.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    Server { base, heard }
}

impl Server {
    fn heard(&self) -> Vec<(String, HeaderMap, Value)> {
        self.heard.lock().unwrap().clone()
    }
}

fn query(url: &str, key: &str) -> String {
    url::Url::parse(url)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.into_owned())
        .unwrap_or_else(|| panic!("no {key} in {url}"))
}

#[tokio::test]
async fn a_full_sign_in_pkce_and_all() {
    let s = server().await;
    let client = oauth::client();
    let login = Login::start();
    for (k, want) in [
        ("code", "true"),
        ("client_id", "9d1c250a-e61b-44d9-88ed-5944d1962f5e"),
        ("response_type", "code"),
        (
            "redirect_uri",
            "https://platform.claude.com/oauth/code/callback",
        ),
        (
            "scope",
            "org:create_api_key user:profile user:inference user:sessions:claude_code user:mcp_servers user:file_upload user:plugins user:privacy_consents:write",
        ),
        ("code_challenge_method", "S256"),
    ] {
        assert_eq!(query(&login.url, k), want, "{k}");
    }
    let state = query(&login.url, "state");
    let challenge = query(&login.url, "code_challenge");

    let (tokens, profile) = login
        .finish_at(
            &client,
            &s.base,
            &s.base,
            &format!("good-code#{state}\n"),
            1_000,
        )
        .await
        .unwrap();
    assert_eq!(tokens.access.expose(), "at-1");
    assert_eq!(tokens.refresh.expose(), "rt-1");
    assert_eq!(tokens.expires_at_ms, 1_000 + 28_800_000);
    assert_eq!(profile.account_id, "0c4f2b9e-aaaa-4bbb-8ccc-000000000001");
    assert_eq!(profile.email.as_deref(), Some("one@example.com"));

    let heard = s.heard();
    assert_eq!(heard.len(), 2, "the exchange, then the profile once");
    let (path, headers, body) = &heard[0];
    assert_eq!(path, "/v1/oauth/token");
    assert_eq!(headers["content-type"], "application/json");
    assert_eq!(body["grant_type"], "authorization_code");
    assert_eq!(body["code"], "good-code");
    assert_eq!(body["state"], state.as_str());
    assert_eq!(body["client_id"], "9d1c250a-e61b-44d9-88ed-5944d1962f5e");
    assert_eq!(
        body["redirect_uri"],
        "https://platform.claude.com/oauth/code/callback"
    );
    // The verifier the server receives is the one the challenge was made of.
    let verifier = body["code_verifier"].as_str().unwrap();
    assert_eq!(verifier.len(), 43);
    assert_eq!(
        URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes())),
        challenge
    );
    assert_eq!(heard[1].0, "/api/oauth/profile");
    assert_eq!(heard[1].1["authorization"], "Bearer at-1");
    for (path, headers, _) in &heard {
        assert_eq!(headers["anthropic-beta"], "oauth-2025-04-20", "{path}");
    }
}

#[tokio::test]
async fn a_paste_from_another_sign_in_never_reaches_the_server() {
    let s = server().await;
    let client = oauth::client();
    let login = Login::start();
    let other = Login::start();
    let other_state = query(&other.url, "state");
    let e = login
        .finish_at(
            &client,
            &s.base,
            &s.base,
            &format!("good-code#{other_state}"),
            0,
        )
        .await
        .unwrap_err();
    assert!(matches!(e, OAuthError::StateMismatch), "{e}");
    assert!(e.to_string().contains("does not match"), "{e}");
    assert!(!e.to_string().contains("good-code"));
    let e = login
        .finish_at(&client, &s.base, &s.base, "good-code", 0)
        .await
        .unwrap_err();
    assert!(matches!(e, OAuthError::MalformedPaste(_)), "{e}");
    assert!(s.heard().is_empty());
}

#[tokio::test]
async fn a_spent_code_says_sign_in_again_and_a_missing_profile_falls_back() {
    let s = server().await;
    let client = oauth::client();
    let login = Login::start();
    let state = query(&login.url, "state");
    let e = login
        .finish_at(&client, &s.base, &s.base, &format!("spent-code#{state}"), 0)
        .await
        .unwrap_err();
    assert!(matches!(e, OAuthError::SignInAgain { .. }), "{e}");
    assert!(!e.to_string().contains("spent-code"), "{e}");

    let (tokens, profile) = login
        .finish_at(
            &client,
            &s.base,
            &s.base,
            &format!("no-profile-code#{state}"),
            0,
        )
        .await
        .unwrap();
    assert_eq!(tokens.access.expose(), "at-noprofile");
    assert_eq!(profile.account_id, "0c4f2b9e-aaaa-4bbb-8ccc-000000000002");
    assert_eq!(profile.email.as_deref(), Some("two@example.com"));
}

#[tokio::test]
async fn a_refresh_rotates_keeps_or_asks_to_sign_in_again() {
    let s = server().await;
    let client = oauth::client();
    let t = oauth::refresh_at(&client, &s.base, &Secret::new("rt-1".into()), 5_000)
        .await
        .unwrap();
    assert_eq!(t.access.expose(), "at-2");
    assert_eq!(t.refresh.expose(), "rt-2", "rotated");
    assert_eq!(t.expires_at_ms, 5_000 + 3_600_000);
    assert!(!oauth::needs_refresh(&t, 5_000));
    assert!(oauth::needs_refresh(&t, t.expires_at_ms - 60_000));

    let t = oauth::refresh_at(&client, &s.base, &Secret::new("rt-unrotated".into()), 0)
        .await
        .unwrap();
    assert_eq!(t.access.expose(), "at-3");
    assert_eq!(
        t.refresh.expose(),
        "rt-unrotated",
        "kept when none comes back"
    );

    let e = oauth::refresh_at(&client, &s.base, &Secret::new("rt-revoked".into()), 0)
        .await
        .unwrap_err();
    assert!(
        matches!(e, OAuthError::SignInAgain { ref code } if code == "invalid_grant"),
        "{e}"
    );
    assert!(e.to_string().contains("signed in again"), "{e}");
    assert!(!e.to_string().contains("rt-revoked"));

    let e = oauth::refresh_at(&client, &s.base, &Secret::new("rt-busy".into()), 0)
        .await
        .unwrap_err();
    assert!(
        matches!(e, OAuthError::Status { status: 503, ref code } if code.as_deref() == Some("overloaded_error")),
        "{e}"
    );
    assert!(!e.to_string().contains("rt-busy"));

    let heard = s.heard();
    assert_eq!(heard.len(), 4);
    for (path, headers, body) in &heard {
        assert_eq!(path, "/v1/oauth/token");
        assert_eq!(headers["anthropic-beta"], "oauth-2025-04-20");
        assert_eq!(headers["content-type"], "application/json");
        assert_eq!(body["grant_type"], "refresh_token");
        assert_eq!(body["client_id"], "9d1c250a-e61b-44d9-88ed-5944d1962f5e");
        assert_eq!(
            body["scope"],
            "user:profile user:inference user:sessions:claude_code user:mcp_servers user:file_upload user:plugins"
        );
    }
    assert_eq!(heard[0].2["refresh_token"], "rt-1");
}

#[tokio::test]
async fn a_redirect_is_never_followed() {
    let s = server().await;
    let moved = format!("{}/moved", s.base);
    let e = oauth::refresh_at(&oauth::client(), &moved, &Secret::new("rt-1".into()), 0)
        .await
        .unwrap_err();
    assert!(matches!(e, OAuthError::Redirect { status: 302 }), "{e}");
    let e = usage::read_at(&oauth::client(), &moved, &Secret::new("at-2".into()))
        .await
        .unwrap_err();
    assert!(matches!(e, OAuthError::Redirect { status: 302 }), "{e}");
    assert_eq!(s.heard().len(), 2, "nothing after the redirects");

    // A client handed in that follows redirects is caught by where it landed
    // (the token went along, which is why `oauth::client()` is the one to use).
    let following = reqwest::Client::new();
    let e = oauth::refresh_at(&following, &moved, &Secret::new("rt-1".into()), 0)
        .await
        .unwrap_err();
    assert!(matches!(e, OAuthError::Redirect { .. }), "{e}");
}

#[tokio::test]
async fn usage_is_read_into_windows() {
    let s = server().await;
    let client = oauth::client();
    let windows = usage::read_at(&client, &s.base, &Secret::new("at-2".into()))
        .await
        .unwrap();
    let got: Vec<(&str, Option<u64>, f64, Option<&str>)> = windows
        .iter()
        .map(|w| {
            (
                w.id.as_str(),
                w.window_minutes,
                w.used_percent,
                w.resets_at.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (
                "five_hour",
                Some(300),
                23.0,
                Some("2026-12-03T18:00:00.123Z")
            ),
            (
                "seven_day",
                Some(10_080),
                41.0,
                Some("2026-12-08T09:00:00.000Z")
            ),
            ("seven_day_opus", None, 0.0, None),
        ]
    );
    let e = usage::read_at(&client, &s.base, &Secret::new("at-stale".into()))
        .await
        .unwrap_err();
    assert!(matches!(e, OAuthError::Status { status: 401, .. }), "{e}");

    // The profile, read on its own, names the same account.
    let p = oauth::profile_at(&client, &s.base, &Secret::new("at-2".into()))
        .await
        .unwrap();
    assert_eq!(p.account_id, "0c4f2b9e-aaaa-4bbb-8ccc-000000000001");
    let e = oauth::profile_at(&client, &s.base, &Secret::new("at-stale".into()))
        .await
        .unwrap_err();
    assert!(
        matches!(e, OAuthError::Status { status: 401, ref code } if code.as_deref() == Some("authentication_error")),
        "{e}"
    );

    for (path, headers, _) in s.heard() {
        assert_eq!(headers["anthropic-beta"], "oauth-2025-04-20", "{path}");
        assert!(headers.contains_key("authorization"), "{path}");
    }
}
