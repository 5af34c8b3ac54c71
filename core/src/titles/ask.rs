//! The one read remote titles make: `GET <api>/v1/code/sessions/<session_…>`
//! with `anthropic-version: 2023-06-01` and the sign-in as a bearer, the way
//! Claude Code reads a session (ADAPTERS.md, Claude Code row, Facts).
//!
//! It owns the request and what an answer means: the whole ask within 3 s, no
//! redirect followed, no proxy (the bearer goes to the API and nowhere else),
//! HTTPS except on loopback, an answer over 1 MiB not read, and a title taken
//! only when the answer's id names the session asked about. It must not keep,
//! log or return the bearer; errors name the status or the reason, never a
//! header.

use sessionpipe_pool::claude_login::Bearer;
use std::time::Duration;

/// The whole ask, connection to last byte (the worker holds the session's
/// lock while it waits).
pub const BOUND: Duration = Duration::from_secs(3);
/// An answer longer than this is not read.
pub const MAX_ANSWER: usize = 1 << 20;
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Why an ask gave no title.
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    #[error("the API address {0:?} is not HTTPS (only loopback may be plain HTTP)")]
    Insecure(String),
    #[error("the API answered with a redirect ({0}), which is never followed")]
    Redirect(u16),
    #[error("the API answered {0}")]
    Status(u16),
    #[error("the answer is over 1 MiB and was not read")]
    TooLarge,
    #[error("the answer is not the session JSON")]
    Shape,
    #[error("the answer names another session")]
    OtherSession,
    #[error("no answer: {0}")]
    Http(#[from] reqwest::Error),
}

/// The client every ask is made with: bounded, no redirect, no proxy.
fn client() -> Result<reqwest::Client, AskError> {
    Ok(reqwest::Client::builder()
        .timeout(BOUND)
        .connect_timeout(BOUND)
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .build()?)
}

/// claude.ai's name for `remote_id` (`session_…`), or why there is none. A
/// session without a name yet answers `Ok(None)`.
pub async fn title(
    api: &str,
    bearer: &Bearer,
    remote_id: &str,
) -> Result<Option<String>, AskError> {
    let url = reqwest::Url::parse(&format!("{api}/v1/code/sessions/{remote_id}"))
        .map_err(|_| AskError::Insecure(api.to_string()))?;
    if url.scheme() != "https" && !(url.scheme() == "http" && crate::sinks::http::is_loopback(&url))
    {
        return Err(AskError::Insecure(api.to_string()));
    }
    let mut answer = client()?
        .get(url)
        .bearer_auth(bearer.expose())
        .header("anthropic-version", ANTHROPIC_VERSION)
        .header("accept", "application/json")
        .send()
        .await?;
    let status = answer.status();
    if status.is_redirection() {
        return Err(AskError::Redirect(status.as_u16()));
    }
    if status != reqwest::StatusCode::OK {
        return Err(AskError::Status(status.as_u16()));
    }
    if answer
        .content_length()
        .is_some_and(|n| n > MAX_ANSWER as u64)
    {
        return Err(AskError::TooLarge);
    }
    // A length the answer does not declare is counted as it comes.
    let mut body = Vec::new();
    while let Some(chunk) = answer.chunk().await? {
        if body.len() + chunk.len() > MAX_ANSWER {
            return Err(AskError::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    title_of(&body, remote_id)
}

/// The title an answer gives the session asked about: `response_shape` (or
/// `session`, which Claude Code also reads) `{id, title}`, where `id` is the
/// id asked (`session_…`) or its `cse_…` twin, which names the same session.
pub fn title_of(body: &[u8], remote_id: &str) -> Result<Option<String>, AskError> {
    let v: serde_json::Value = serde_json::from_slice(body).map_err(|_| AskError::Shape)?;
    let session = v
        .get("response_shape")
        .or_else(|| v.get("session"))
        .filter(|s| s.is_object())
        .ok_or(AskError::Shape)?;
    let id = session
        .get("id")
        .and_then(serde_json::Value::as_str)
        .ok_or(AskError::Shape)?;
    if !same_session(id, remote_id) {
        return Err(AskError::OtherSession);
    }
    let title = session
        .get("title")
        .and_then(serde_json::Value::as_str)
        .map(adapters::claude_code::inbox::clean_name)
        .filter(|t| !t.is_empty());
    Ok(title)
}

/// `session_X` and `cse_X` are one session: claude.ai answers an ask about
/// the one with the other.
fn same_session(answered: &str, asked: &str) -> bool {
    let bare = |id: &str| {
        id.strip_prefix("session_")
            .or_else(|| id.strip_prefix("cse_"))
            .map(str::to_string)
    };
    answered == asked || matches!((bare(answered), bare(asked)), (Some(a), Some(b)) if a == b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_title_is_taken_only_for_the_session_asked_about() {
        let ask = "session_01AbC";
        let named = |id: &str| {
            format!(
                r#"{{"response_shape":{{"id":"{id}","title":"Fix the login  page","status":"idle"}}}}"#
            )
        };
        assert_eq!(
            title_of(named("session_01AbC").as_bytes(), ask)
                .unwrap()
                .as_deref(),
            Some("Fix the login  page")
        );
        assert_eq!(
            title_of(named("cse_01AbC").as_bytes(), ask)
                .unwrap()
                .as_deref(),
            Some("Fix the login  page"),
            "the cse_ twin is the same session"
        );
        assert!(matches!(
            title_of(named("cse_01XyZ").as_bytes(), ask),
            Err(AskError::OtherSession)
        ));
        assert!(matches!(
            title_of(named("session_01AbCd").as_bytes(), ask),
            Err(AskError::OtherSession)
        ));
        assert_eq!(
            title_of(
                br#"{"session":{"id":"cse_01AbC","title":"Other key"}}"#,
                ask
            )
            .unwrap()
            .as_deref(),
            Some("Other key")
        );
        assert!(matches!(title_of(b"[]", ask), Err(AskError::Shape)));
        assert_eq!(
            title_of(
                br#"{"response_shape":{"id":"session_01AbC","title":"  "}}"#,
                ask
            )
            .unwrap(),
            None,
            "not named yet"
        );
    }

    #[test]
    fn a_title_is_cleaned_as_claude_code_cleans_a_name() {
        let body =
            r#"{"response_shape":{"id":"session_1","title":" <b>\"Ship\"</b>\u0007 it\u200b "}}"#;
        assert_eq!(
            title_of(body.as_bytes(), "session_1").unwrap().as_deref(),
            Some("bShip/b it")
        );
    }
}
