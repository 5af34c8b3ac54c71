//! An account's sign-in: its tokens (`Tokens`, each a `Secret`), signing an
//! account in the way Claude Code does (`Login`, for `pool add --login`),
//! refreshing it (`refresh`) and reading whose it is (`profile`).
//!
//! It owns the tokens' type, their one serialised form (for the vault) and
//! the three OAuth calls. It must not print, log or serialise a token, a
//! verifier or a pasted code by any other way, and never puts one in an
//! error. It follows no redirect (`client()`; a client that does is caught
//! by the answer's URL) and reads no answer over `MAX_ANSWER` bytes.
//!
//! What Claude Code 2.1.332 does, read in its bundle
//! (`e2e/node_modules/@anthropic-ai/claude-code/bin/claude.exe`):
//! - Its production config: `CLAUDE_AI_AUTHORIZE_URL:"https://claude.com/cai/oauth/authorize"`,
//!   `TOKEN_URL:"https://platform.claude.com/v1/oauth/token"`,
//!   `MANUAL_REDIRECT_URL:"https://platform.claude.com/oauth/code/callback"`,
//!   `CLIENT_ID:"9d1c250a-e61b-44d9-88ed-5944d1962f5e"`.
//! - The authorize URL (`djs`): `code=true`, `client_id`, `response_type=code`,
//!   `redirect_uri` (the manual one when the code is pasted), `scope` (space
//!   separated), `code_challenge`, `code_challenge_method=S256`, `state`, in
//!   that order. The scopes of a sign-in are `S5s()`: `[...Uer, ...uRn()]`
//!   with `Uer=[org:create_api_key, user:profile]`, `uRn()` = `user:profile`,
//!   `user:inference`, `user:sessions:claude_code`, `user:mcp_servers`,
//!   `user:file_upload` and `user:plugins` (`PLUGINS_SCOPE_REGISTERED:!0`),
//!   deduplicated, then `user:privacy_consents:write`
//!   (`PRIVACY_CONSENTS_SCOPE_REGISTERED:!0`): `LOGIN_SCOPES`.
//! - The paste (`vMe`): trimmed, `let[o,n]=t.split("#")`, both required,
//!   `{authorizationCode:o,state:n}`; a web address is refused.
//! - The exchange (`Sia`): `Cn.post(TOKEN_URL, C, {headers:{"Content-Type":
//!   "application/json"}, ...u1e})`, a JSON body `{grant_type:
//!   "authorization_code", code, redirect_uri, client_id, code_verifier,
//!   state}`, and `u1e={maxRedirects:0, ...}`.
//! - The refresh (`Qfe`): the same endpoint and headers, JSON `{grant_type:
//!   "refresh_token", refresh_token, client_id, scope: D.join(" ")}` with `D`
//!   defaulting to `uRn()` (`REFRESH_SCOPES`); the answer is read as
//!   `{access_token:Y, refresh_token:X=e, expires_in:J}`: the old refresh
//!   token stays when none comes back, `expiresAt = now + J*1000`.
//! - A spent or revoked refresh token (`tY`): status 400 or 401 with
//!   `error` (a string, or an object's `type`) `invalid_grant`.
//! - The profile (`yE`): `GET ${BASE_API_URL}/api/oauth/profile` with the
//!   bearer; its shape (`SL`) is `{account:{uuid, email}, organization:{uuid}}`.
//!
//! Claude Code itself sends `anthropic-beta: oauth-2025-04-20` (`ep`) on its
//! API calls but not on these three; ADAPTERS.md asks for it on every OAuth
//! call, so every call here carries it.

use crate::endpoints;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::time::Duration;

/// A credential. Not `Display`, not `Serialize`, and its `Debug` shows
/// nothing of it, so no format string can leak it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: String) -> Secret {
        Secret(value)
    }

    /// The value, for the one header or form field it goes into.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// An account's sign-in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tokens {
    pub access: Secret,
    pub refresh: Secret,
    /// When the access token expires (ms since the epoch).
    pub expires_at_ms: i64,
}

impl Tokens {
    /// The vault's form: the only way tokens become text.
    pub fn to_vault_json(&self) -> String {
        serde_json::json!({
            "access": self.access.0,
            "refresh": self.refresh.0,
            "expires_at_ms": self.expires_at_ms,
        })
        .to_string()
    }

    pub fn from_vault_json(text: &str) -> Option<Tokens> {
        let v: Value = serde_json::from_str(text).ok()?;
        let s = |k: &str| v.get(k)?.as_str().map(|s| Secret(s.to_string()));
        Some(Tokens {
            access: s("access")?,
            refresh: s("refresh")?,
            expires_at_ms: v.get("expires_at_ms")?.as_i64()?,
        })
    }
}

/// Whose sign-in it is, from the profile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Profile {
    /// `account.uuid`, lower-cased (Claude Code lower-cases it too).
    pub account_id: String,
    /// `account.email`.
    pub email: Option<String>,
}

/// Claude Code's OAuth client id (its production `CLIENT_ID`).
pub const CLIENT_ID: &str = "9d1c250a-e61b-44d9-88ed-5944d1962f5e";

/// The scopes Claude Code asks for when it signs in with claude.ai (`S5s()`).
pub const LOGIN_SCOPES: &[&str] = &[
    "org:create_api_key",
    "user:profile",
    "user:inference",
    "user:sessions:claude_code",
    "user:mcp_servers",
    "user:file_upload",
    "user:plugins",
    "user:privacy_consents:write",
];

/// The scopes Claude Code asks for on a refresh when it names none (`uRn()`).
pub const REFRESH_SCOPES: &[&str] = &[
    "user:profile",
    "user:inference",
    "user:sessions:claude_code",
    "user:mcp_servers",
    "user:file_upload",
    "user:plugins",
];

/// The beta header of every OAuth-bearing call.
pub const BETA: &str = "oauth-2025-04-20";

/// A sign-in this close to its expiry is refreshed (ms).
pub const REFRESH_MARGIN_MS: i64 = 5 * 60 * 1000;

/// An answer larger than this is not read (a token answer is a few KiB).
pub const MAX_ANSWER: usize = 1024 * 1024;

/// Why a sign-in call failed. None carries a token, a verifier or the code
/// pasted; a server's error code is carried only when it is a short word.
#[derive(Debug, thiserror::Error)]
pub enum OAuthError {
    #[error("the sign-in server did not answer: {0}")]
    Network(String),
    /// The server refused the refresh token (spent, revoked) or the code
    /// (expired, used): the account must be signed in again.
    #[error("the account must be signed in again (the server said {code})")]
    SignInAgain { code: String },
    #[error("the sign-in server answered {status}{}", code.as_deref().map(|c| format!(" ({c})")).unwrap_or_default())]
    Status { status: u16, code: Option<String> },
    /// A redirect: never followed (it could lead a bearer elsewhere).
    #[error("the sign-in server answered with a redirect ({status}), which is not followed")]
    Redirect { status: u16 },
    #[error("the sign-in server's answer is not what it sends: {0}")]
    BadAnswer(&'static str),
    /// The pasted code belongs to another sign-in (or was tampered with).
    #[error(
        "the code pasted belongs to another sign-in (its state does not match): start `pool add --login` again and paste the code its page shows"
    )]
    StateMismatch,
    #[error("that is not the code the sign-in page shows: {0}")]
    MalformedPaste(&'static str),
}

/// A client for these calls: no redirect followed, 15 s per call. The
/// caller keeps one and hands it in (its connections are pooled).
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(Duration::from_secs(15))
        .timeout(Duration::from_secs(15))
        .user_agent(concat!("sessionpipe/", env!("CARGO_PKG_VERSION")))
        .build()
        .expect("a reqwest client with a static configuration builds")
}

/// True when `t` expires within `REFRESH_MARGIN_MS` of `now_ms` (or has).
pub fn needs_refresh(t: &Tokens, now_ms: i64) -> bool {
    t.expires_at_ms.saturating_sub(now_ms) <= REFRESH_MARGIN_MS
}

fn network(e: reqwest::Error) -> OAuthError {
    // Without the URL (a test's base could be anything) and without any header.
    OAuthError::Network(e.without_url().to_string())
}

/// Sends `req` and reads its answer: (status, the JSON body or `Null`).
/// A redirect, or an answer from another URL than asked, is an error.
pub(crate) async fn send(
    req: reqwest::RequestBuilder,
    url: &str,
) -> Result<(u16, Value), OAuthError> {
    let mut answer = req
        .header("anthropic-beta", BETA)
        .send()
        .await
        .map_err(network)?;
    let status = answer.status();
    if status.is_redirection() {
        return Err(OAuthError::Redirect {
            status: status.as_u16(),
        });
    }
    // A client handed in that follows redirects would land elsewhere.
    if answer.url().as_str() != url {
        return Err(OAuthError::Redirect {
            status: status.as_u16(),
        });
    }
    if answer
        .content_length()
        .is_some_and(|n| n > MAX_ANSWER as u64)
    {
        return Err(OAuthError::BadAnswer("the answer is too large"));
    }
    let mut body = Vec::new();
    while let Some(chunk) = answer.chunk().await.map_err(network)? {
        if body.len() + chunk.len() > MAX_ANSWER {
            return Err(OAuthError::BadAnswer("the answer is too large"));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((
        status.as_u16(),
        serde_json::from_slice(&body).unwrap_or(Value::Null),
    ))
}

/// The server's `error` code (a string, or an object's `type`), when it is
/// a short word: anything else could be an echo of what was sent.
pub(crate) fn error_code(v: &Value) -> Option<String> {
    let e = v.get("error")?;
    let code = e
        .as_str()
        .or_else(|| e.get("type").and_then(Value::as_str))?;
    let word = !code.is_empty()
        && code.len() <= 64
        && code
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.');
    word.then(|| code.to_string())
}

/// The error a token endpoint's refusal means.
/// A JSON body to the token endpoint (the exchange and every refresh).
async fn post_token(
    client: &reqwest::Client,
    oauth_base: &str,
    body: &Value,
) -> Result<(u16, Value), OAuthError> {
    let url = format!("{oauth_base}/v1/oauth/token");
    let req = client
        .post(&url)
        .header("content-type", "application/json")
        .body(body.to_string());
    send(req, &url).await
}

fn refused(status: u16, v: &Value) -> OAuthError {
    match error_code(v) {
        Some(code) if code == "invalid_grant" => OAuthError::SignInAgain { code },
        code => OAuthError::Status { status, code },
    }
}

/// A token, when it is one (printable ASCII, not empty).
fn token(v: &Value, key: &str) -> Option<Secret> {
    v.get(key)
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_graphic()))
        .map(|t| Secret::new(t.to_string()))
}

/// A token answer: `access_token`, `expires_in` (seconds) and, when it
/// rotated, `refresh_token` (else `old_refresh` stays).
pub fn tokens_of(
    v: &Value,
    old_refresh: Option<&Secret>,
    now_ms: i64,
) -> Result<Tokens, OAuthError> {
    let access = token(v, "access_token").ok_or(OAuthError::BadAnswer("no access_token"))?;
    let refresh = match token(v, "refresh_token") {
        Some(r) => r,
        None => old_refresh
            .cloned()
            .ok_or(OAuthError::BadAnswer("no refresh_token"))?,
    };
    let expires_in = v
        .get("expires_in")
        .and_then(|e| e.as_i64().or_else(|| e.as_f64().map(|f| f as i64)))
        .filter(|e| *e > 0 && *e < 10 * 365 * 86_400)
        .ok_or(OAuthError::BadAnswer("no expires_in"))?;
    Ok(Tokens {
        access,
        refresh,
        expires_at_ms: now_ms + expires_in * 1000,
    })
}

/// The account of a profile answer (`account.uuid`, `account.email`), or
/// of a token answer (`account.uuid`, `account.email_address`).
fn profile_of(v: &Value, email_key: &str) -> Option<Profile> {
    let account = v.get("account")?;
    let id = account.get("uuid")?.as_str()?.to_ascii_lowercase();
    let plausible = !id.is_empty()
        && id.len() <= 64
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    if !plausible {
        return None;
    }
    let email = account
        .get(email_key)
        .and_then(Value::as_str)
        .filter(|e| !e.is_empty())
        .map(str::to_string);
    Some(Profile {
        account_id: id,
        email,
    })
}

/// Refreshes a sign-in at `oauth_base` (`endpoints::oauth_base()`). The
/// answer's refresh token replaces the old one when it carries one.
pub async fn refresh_at(
    client: &reqwest::Client,
    oauth_base: &str,
    refresh: &Secret,
    now_ms: i64,
) -> Result<Tokens, OAuthError> {
    let body = serde_json::json!({
        "grant_type": "refresh_token",
        "refresh_token": refresh.expose(),
        "client_id": CLIENT_ID,
        "scope": REFRESH_SCOPES.join(" "),
    });
    let (status, v) = post_token(client, oauth_base, &body).await?;
    if status != 200 {
        return Err(refused(status, &v));
    }
    tokens_of(&v, Some(refresh), now_ms)
}

/// `refresh_at` against the row's host (or the test setting).
pub async fn refresh(client: &reqwest::Client, refresh: &Secret) -> Result<Tokens, OAuthError> {
    refresh_at(
        client,
        &endpoints::oauth_base(),
        refresh,
        protocol::time::now_ms(),
    )
    .await
}

/// Whose sign-in `access` is, read at `api_base` (`endpoints::api_base()`).
pub async fn profile_at(
    client: &reqwest::Client,
    api_base: &str,
    access: &Secret,
) -> Result<Profile, OAuthError> {
    let url = format!("{api_base}/api/oauth/profile");
    let (status, v) = send(client.get(&url).bearer_auth(access.expose()), &url).await?;
    if status != 200 {
        return Err(OAuthError::Status {
            status,
            code: error_code(&v),
        });
    }
    profile_of(&v, "email").ok_or(OAuthError::BadAnswer("no account.uuid"))
}

/// `profile_at` against the row's host (or the test setting).
pub async fn profile(client: &reqwest::Client, access: &Secret) -> Result<Profile, OAuthError> {
    profile_at(client, &endpoints::api_base(), access).await
}

/// 32 random bytes, base64url without padding.
fn random_b64() -> String {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the system's random source");
    URL_SAFE_NO_PAD.encode(bytes)
}

/// The S256 challenge of a PKCE verifier.
pub fn challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// One `pool add --login` in progress: the person opens `url`, signs in,
/// and pastes back the `code#state` the callback page shows.
#[derive(Debug)]
pub struct Login {
    verifier: Secret,
    state: String,
    /// The authorize URL to open.
    pub url: String,
}

impl Login {
    /// A new sign-in at `endpoints::AUTHORIZE_URL`.
    pub fn start() -> Login {
        Login::start_at(endpoints::AUTHORIZE_URL)
    }

    /// A new sign-in at `authorize_url`, with a fresh verifier and state.
    pub fn start_at(authorize_url: &str) -> Login {
        let verifier = random_b64();
        let state = random_b64();
        let mut url = url::Url::parse(authorize_url).expect("the authorize URL is a URL");
        url.query_pairs_mut()
            .append_pair("code", "true")
            .append_pair("client_id", CLIENT_ID)
            .append_pair("response_type", "code")
            .append_pair("redirect_uri", endpoints::CODE_CALLBACK_URL)
            .append_pair("scope", &LOGIN_SCOPES.join(" "))
            .append_pair("code_challenge", &challenge(&verifier))
            .append_pair("code_challenge_method", "S256")
            .append_pair("state", &state);
        Login {
            verifier: Secret::new(verifier),
            state,
            url: url.into(),
        }
    }

    /// The code of a paste `code#state`, once its state is this sign-in's.
    fn code_of(&self, pasted: &str) -> Result<Secret, OAuthError> {
        let t = pasted.trim();
        let lower = t.to_ascii_lowercase();
        if lower.starts_with("http://") || lower.starts_with("https://") {
            return Err(OAuthError::MalformedPaste(
                "that is a web address; paste the code the page shows (it has a # in the middle)",
            ));
        }
        let (code, state) = t.split_once('#').ok_or(OAuthError::MalformedPaste(
            "copy all of it, including the # in the middle",
        ))?;
        if code.is_empty() || state.is_empty() {
            return Err(OAuthError::MalformedPaste(
                "copy all of it, including the # in the middle",
            ));
        }
        if code.chars().any(char::is_whitespace) {
            return Err(OAuthError::MalformedPaste("the code has spaces in it"));
        }
        use subtle::ConstantTimeEq;
        if !bool::from(state.as_bytes().ct_eq(self.state.as_bytes())) {
            return Err(OAuthError::StateMismatch);
        }
        Ok(Secret::new(code.to_string()))
    }

    /// Exchanges the pasted `code#state` at `oauth_base` and reads the
    /// account's profile at `api_base`.
    pub async fn finish_at(
        &self,
        client: &reqwest::Client,
        oauth_base: &str,
        api_base: &str,
        pasted: &str,
        now_ms: i64,
    ) -> Result<(Tokens, Profile), OAuthError> {
        let code = self.code_of(pasted)?;
        let body = serde_json::json!({
            "grant_type": "authorization_code",
            "code": code.expose(),
            "redirect_uri": endpoints::CODE_CALLBACK_URL,
            "client_id": CLIENT_ID,
            "code_verifier": self.verifier.expose(),
            "state": self.state,
        });
        let (status, v) = post_token(client, oauth_base, &body).await?;
        if status != 200 {
            // Claude Code reads a 401 here as a code that is not (or no
            // longer) good: the person signs in again.
            return Err(match refused(status, &v) {
                OAuthError::Status { status: 401, code } => OAuthError::SignInAgain {
                    code: code.unwrap_or_else(|| "401".into()),
                },
                e => e,
            });
        }
        let tokens = tokens_of(&v, None, now_ms)?;
        // The profile names the account; the token answer's own `account`
        // stands in when the profile cannot be read, so a code spent on a
        // good sign-in is not wasted.
        match profile_at(client, api_base, &tokens.access).await {
            Ok(p) => Ok((tokens, p)),
            Err(e) => match profile_of(&v, "email_address") {
                Some(p) => Ok((tokens, p)),
                None => Err(e),
            },
        }
    }

    /// `finish_at` against the row's hosts (or the test settings).
    pub async fn finish(
        &self,
        client: &reqwest::Client,
        pasted: &str,
    ) -> Result<(Tokens, Profile), OAuthError> {
        self.finish_at(
            client,
            &endpoints::oauth_base(),
            &endpoints::api_base(),
            pasted,
            protocol::time::now_ms(),
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn query(url: &str) -> Vec<(String, String)> {
        url::Url::parse(url)
            .unwrap()
            .query_pairs()
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect()
    }

    #[test]
    fn the_authorize_url_asks_as_claude_code_does() {
        let login = Login::start();
        assert!(
            login
                .url
                .starts_with("https://claude.com/cai/oauth/authorize?")
        );
        let q = query(&login.url);
        let keys: Vec<&str> = q.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "code",
                "client_id",
                "response_type",
                "redirect_uri",
                "scope",
                "code_challenge",
                "code_challenge_method",
                "state"
            ]
        );
        let get = |k: &str| q.iter().find(|(n, _)| n == k).unwrap().1.clone();
        assert_eq!(get("code"), "true");
        assert_eq!(get("client_id"), CLIENT_ID);
        assert_eq!(get("redirect_uri"), endpoints::CODE_CALLBACK_URL);
        assert_eq!(get("scope"), LOGIN_SCOPES.join(" "));
        assert_eq!(get("code_challenge"), challenge(login.verifier.expose()));
        assert_eq!(get("code_challenge_method"), "S256");
        assert_eq!(get("state"), login.state);
        // 32 bytes each, base64url without padding.
        assert_eq!(login.verifier.expose().len(), 43);
        assert_eq!(login.state.len(), 43);
        assert_ne!(Login::start().state, login.state);
        assert!(!format!("{login:?}").contains(login.verifier.expose()));
    }

    #[test]
    fn the_challenge_is_the_verifiers_sha256_in_base64url() {
        // SHA-256("abc") is FIPS 180-2's ba7816bf…f20015ad; `-` and `_`
        // where base64 has `+` and `/`, and no `=`.
        assert_eq!(
            challenge("abc"),
            "ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0"
        );
    }

    #[test]
    fn a_paste_is_read_and_its_state_checked() {
        let login = Login::start();
        let good = format!("  the-code#{}\n", login.state);
        assert_eq!(login.code_of(&good).unwrap().expose(), "the-code");
        for bad in ["", "the-code", "#state", "the-code#", "https://x/?code=a#b"] {
            let e = login.code_of(bad).unwrap_err();
            assert!(matches!(e, OAuthError::MalformedPaste(_)), "{bad:?}: {e}");
        }
        let e = login.code_of("secret-code#not-the-state").unwrap_err();
        assert!(matches!(e, OAuthError::StateMismatch));
        assert!(!e.to_string().contains("secret-code"));
    }

    #[test]
    fn a_token_answer_keeps_the_old_refresh_token_when_none_comes() {
        let old = Secret::new("r-old".into());
        let t = tokens_of(
            &json!({"access_token": "a-1", "expires_in": 3600}),
            Some(&old),
            1000,
        )
        .unwrap();
        assert_eq!(t.refresh, old);
        assert_eq!(t.expires_at_ms, 1000 + 3_600_000);
        let t = tokens_of(
            &json!({"access_token": "a-1", "refresh_token": "r-new", "expires_in": 60}),
            Some(&old),
            0,
        )
        .unwrap();
        assert_eq!(t.refresh.expose(), "r-new");
        assert!(tokens_of(&json!({"access_token": "a", "expires_in": 60}), None, 0).is_err());
        assert!(tokens_of(&json!({"expires_in": 60}), Some(&old), 0).is_err());
        assert!(
            tokens_of(
                &json!({"access_token": "a b", "expires_in": 60}),
                Some(&old),
                0
            )
            .is_err()
        );
        assert!(
            tokens_of(
                &json!({"access_token": "a", "expires_in": -1}),
                Some(&old),
                0
            )
            .is_err()
        );
    }

    #[test]
    fn refusals_name_a_short_code_only() {
        let e = refused(400, &json!({"error": "invalid_grant"}));
        assert!(matches!(e, OAuthError::SignInAgain { .. }), "{e}");
        let e = refused(401, &json!({"error": {"type": "invalid_grant"}}));
        assert!(matches!(e, OAuthError::SignInAgain { .. }), "{e}");
        let e = refused(500, &json!({"error": "server_error"}));
        assert_eq!(
            e.to_string(),
            "the sign-in server answered 500 (server_error)"
        );
        // An echo of what was sent is no code.
        let e = refused(400, &json!({"error": "bad token sk-ant-ort01-xyz"}));
        assert_eq!(e.to_string(), "the sign-in server answered 400");
    }

    #[test]
    fn a_profile_names_its_account() {
        let p = profile_of(
            &json!({"account": {"uuid": "ABC-123", "email": "a@b.c"}, "organization": {"uuid": "o"}}),
            "email",
        )
        .unwrap();
        assert_eq!(p.account_id, "abc-123");
        assert_eq!(p.email.as_deref(), Some("a@b.c"));
        assert!(profile_of(&json!({"account": {"uuid": "a/b"}}), "email").is_none());
        assert!(profile_of(&json!({"account": {}}), "email").is_none());
    }

    #[test]
    fn refresh_is_due_within_five_minutes() {
        let t = Tokens {
            access: Secret::new("a".into()),
            refresh: Secret::new("r".into()),
            expires_at_ms: 1_000_000,
        };
        assert!(!needs_refresh(&t, 1_000_000 - REFRESH_MARGIN_MS - 1));
        assert!(needs_refresh(&t, 1_000_000 - REFRESH_MARGIN_MS));
        assert!(needs_refresh(&t, 2_000_000));
    }

    #[test]
    fn tokens_go_to_the_vault_and_back_and_nowhere_else() {
        let t = Tokens {
            access: Secret::new("at-secret".into()),
            refresh: Secret::new("rt-secret".into()),
            expires_at_ms: 42,
        };
        assert_eq!(Tokens::from_vault_json(&t.to_vault_json()), Some(t.clone()));
        let debug = format!("{t:?}");
        assert!(!debug.contains("at-secret") && !debug.contains("rt-secret"));
    }
}
