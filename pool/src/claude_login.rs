//! Claude Code's own sign-in on this machine (ADAPTERS.md, Claude Code row):
//! the macOS keychain item `Claude Code-credentials` (with `-` and the first
//! 8 hex of the SHA-256 of `$CLAUDE_CONFIG_DIR` as it was set, for a config
//! dir it names), else `<config>/.credentials.json`; its `claudeAiOauth`
//! (`accessToken`, `refreshToken`, `expiresAt`).
//!
//! Two readers use it: remote titles bear the access token for one read
//! (`read`), and the pool copies the whole sign-in (`read_tokens`): once at
//! `pool add --import`, and again, by the daemon, before it refreshes an
//! imported account (Claude Code may have refreshed its own since, which
//! spent the pool's copy's refresh token; the pool then takes Claude Code's
//! newer one instead). It owns finding and checking the sign-in, nothing
//! else. It must not keep it (no file, no cache, no field outliving the
//! call), print it, log it or put it in an error, must never write it, and
//! must never refresh it: a refresh would rotate Claude Code's own login. A
//! token within a minute of its `expiresAt` is not used at all.

use std::path::{Path, PathBuf};

/// A token this close to its expiry is not used (ms).
pub const EXPIRY_MARGIN_MS: i64 = 60_000;

/// The keychain item's service name, before any config dir's suffix.
pub const KEYCHAIN_SERVICE: &str = "Claude Code-credentials";

/// Whose sign-in: a config dir, and `$CLAUDE_CONFIG_DIR` as it was set when
/// that variable names it (the keychain item is named from its spelling).
/// Kept in `pool.json` for an imported account (a path, no credential).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Place {
    pub config_dir: PathBuf,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub named_by_env: Option<String>,
}

impl Place {
    /// The place of a config dir found on disk (not named by a hook call):
    /// `$CLAUDE_CONFIG_DIR` as `set` has it when it names the dir, else the
    /// dir's own path for any dir but `<home>/.claude` (the only one Claude
    /// Code finds without the variable).
    pub fn found(config_dir: &Path, set: Option<&str>, home: Option<&Path>) -> Place {
        let named_by_env = match set {
            Some(set) if Path::new(set) == config_dir => Some(set.to_string()),
            _ => (home.map(|h| h.join(".claude")).as_deref() != Some(config_dir))
                .then(|| config_dir.display().to_string()),
        };
        Place {
            config_dir: config_dir.to_path_buf(),
            named_by_env,
        }
    }
}

/// A bearer token on its way to one request. Not `Display`, not `Serialize`,
/// and its `Debug` shows nothing of it, so no format string can leak it.
pub struct Bearer(String);

impl Bearer {
    /// The token, for the one `authorization` header it goes into.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Bearer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Bearer(..)")
    }
}

/// Why there is no token to use. Never carries any of the token.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SignInError {
    #[error("no Claude Code sign-in for {0}")]
    Missing(PathBuf),
    #[error("Claude Code's sign-in for {0} is not the JSON it writes")]
    Unreadable(PathBuf),
    #[error("Claude Code's sign-in for {0} expires within a minute (it is never refreshed here)")]
    Expiring(PathBuf),
}

/// The keychain item holding the sign-in of `place`.
pub fn keychain_service(place: &Place) -> String {
    match &place.named_by_env {
        Some(dir) => format!(
            "{KEYCHAIN_SERVICE}-{}",
            harness::digest::sha256_prefix(dir.as_bytes(), 4)
        ),
        None => KEYCHAIN_SERVICE.to_string(),
    }
}

/// The access token of `place`'s sign-in, when it is there and good for more
/// than a minute after `now_ms`.
pub fn read(place: &Place, now_ms: i64) -> Result<Bearer, SignInError> {
    token_of(&raw(place)?, now_ms, &place.config_dir)
}

/// `claudeAiOauth.accessToken` of the credentials JSON, checked.
fn token_of(raw: &[u8], now_ms: i64, dir: &Path) -> Result<Bearer, SignInError> {
    let unreadable = || SignInError::Unreadable(dir.to_path_buf());
    let v: serde_json::Value = serde_json::from_slice(raw).map_err(|_| unreadable())?;
    let oauth = v.get("claudeAiOauth").ok_or_else(unreadable)?;
    let token = oauth
        .get("accessToken")
        .and_then(serde_json::Value::as_str)
        .filter(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_graphic()))
        .ok_or_else(unreadable)?;
    // Milliseconds since the epoch, as Claude Code writes it; a sign-in
    // without one says nothing of its end.
    if let Some(expires) = oauth.get("expiresAt").and_then(serde_json::Value::as_i64)
        && expires - now_ms < EXPIRY_MARGIN_MS
    {
        return Err(SignInError::Expiring(dir.to_path_buf()));
    }
    Ok(Bearer(token.to_string()))
}

/// The whole sign-in of `place` (`pool add --import`, and the daemon before
/// it refreshes an imported account): its access and refresh tokens and when
/// the access token expires. Claude Code's own stays where it is and is
/// never written or refreshed from here.
pub fn read_tokens(place: &Place) -> Result<crate::oauth::Tokens, SignInError> {
    let raw = raw(place)?;
    let unreadable = || SignInError::Unreadable(place.config_dir.clone());
    let v: serde_json::Value = serde_json::from_slice(&raw).map_err(|_| unreadable())?;
    let oauth = v.get("claudeAiOauth").ok_or_else(unreadable)?;
    let text = |key: &str| {
        oauth
            .get(key)
            .and_then(serde_json::Value::as_str)
            .filter(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_graphic()))
            .map(str::to_string)
    };
    let access = text("accessToken").ok_or_else(unreadable)?;
    let refresh = text("refreshToken").ok_or_else(unreadable)?;
    let expires_at_ms = oauth
        .get("expiresAt")
        .and_then(serde_json::Value::as_i64)
        .ok_or_else(unreadable)?;
    Ok(crate::oauth::Tokens {
        access: crate::oauth::Secret::new(access),
        refresh: crate::oauth::Secret::new(refresh),
        expires_at_ms,
    })
}

fn raw(place: &Place) -> Result<Vec<u8>, SignInError> {
    keychain(place)
        .or_else(|| std::fs::read(place.config_dir.join(".credentials.json")).ok())
        .ok_or_else(|| SignInError::Missing(place.config_dir.clone()))
}

/// The keychain item's secret, read the way Claude Code reads it (the
/// `security` tool), its output taken from a pipe and never echoed.
#[cfg(target_os = "macos")]
fn keychain(place: &Place) -> Option<Vec<u8>> {
    let out = std::process::Command::new("/usr/bin/security")
        .args([
            "find-generic-password",
            "-s",
            &keychain_service(place),
            "-w",
        ])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    out.status.success().then_some(out.stdout)
}

/// Elsewhere Claude Code keeps no keychain item: the file is the sign-in.
#[cfg(not(target_os = "macos"))]
fn keychain(_place: &Place) -> Option<Vec<u8>> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_800_000_000_000;

    fn creds(expires: Option<i64>) -> Vec<u8> {
        let mut oauth =
            serde_json::json!({"accessToken": "sk-ant-oat01-fake", "refreshToken": "r"});
        if let Some(e) = expires {
            oauth["expiresAt"] = e.into();
        }
        serde_json::json!({ "claudeAiOauth": oauth })
            .to_string()
            .into_bytes()
    }

    #[test]
    fn a_token_within_a_minute_of_its_expiry_is_not_used() {
        let dir = Path::new("/c");
        let ok = token_of(&creds(Some(NOW + EXPIRY_MARGIN_MS)), NOW, dir).unwrap();
        assert_eq!(ok.expose(), "sk-ant-oat01-fake");
        assert_eq!(
            token_of(&creds(Some(NOW + EXPIRY_MARGIN_MS - 1)), NOW, dir).unwrap_err(),
            SignInError::Expiring(dir.into())
        );
        assert_eq!(
            token_of(&creds(Some(NOW - 5)), NOW, dir).unwrap_err(),
            SignInError::Expiring(dir.into())
        );
        assert!(token_of(&creds(None), NOW, dir).is_ok());
        assert_eq!(
            token_of(br#"{"claudeAiOauth":{"accessToken":"a\nb"}}"#, NOW, dir).unwrap_err(),
            SignInError::Unreadable(dir.into()),
            "a token that cannot be a header is not one"
        );
    }

    #[test]
    fn neither_the_bearer_nor_an_error_shows_the_token() {
        let b = token_of(&creds(None), NOW, Path::new("/c")).unwrap();
        assert!(!format!("{b:?}").contains("fake"));
        let e = token_of(&creds(Some(NOW)), NOW, Path::new("/c")).unwrap_err();
        assert!(!e.to_string().contains("fake"));
    }

    #[test]
    fn the_keychain_item_of_a_named_config_dir_carries_its_digest() {
        let default = Place {
            config_dir: "/h/.claude".into(),
            named_by_env: None,
        };
        assert_eq!(keychain_service(&default), "Claude Code-credentials");
        let named = Place {
            config_dir: "/h/.claude-work".into(),
            named_by_env: Some("/h/.claude-work".into()),
        };
        let digest = harness::digest::sha256_hex(b"/h/.claude-work");
        assert_eq!(
            keychain_service(&named),
            format!("Claude Code-credentials-{}", &digest[..8])
        );
    }

    #[test]
    fn the_file_is_read_where_there_is_no_keychain_item() {
        let dir = tempfile::tempdir().unwrap();
        // Named, so the keychain item asked for (on a Mac) is this dir's own
        // and never the person's real one.
        let place = Place {
            config_dir: dir.path().into(),
            named_by_env: Some(dir.path().display().to_string()),
        };
        assert_eq!(
            read(&place, NOW).unwrap_err(),
            SignInError::Missing(dir.path().into())
        );
        std::fs::write(dir.path().join(".credentials.json"), creds(None)).unwrap();
        assert_eq!(read(&place, NOW).unwrap().expose(), "sk-ant-oat01-fake");
    }

    #[test]
    fn the_whole_sign_in_is_read_for_an_import() {
        let dir = tempfile::tempdir().unwrap();
        let place = Place {
            config_dir: dir.path().into(),
            named_by_env: Some(dir.path().display().to_string()),
        };
        std::fs::write(dir.path().join(".credentials.json"), creds(Some(NOW))).unwrap();
        let t = read_tokens(&place).unwrap();
        assert_eq!(t.access.expose(), "sk-ant-oat01-fake");
        assert_eq!(t.refresh.expose(), "r");
        assert_eq!(t.expires_at_ms, NOW);
        std::fs::write(dir.path().join(".credentials.json"), creds(None)).unwrap();
        assert_eq!(
            read_tokens(&place).unwrap_err(),
            SignInError::Unreadable(dir.path().into()),
            "a sign-in that says nothing of its end is not copied"
        );
    }

    #[test]
    fn a_found_dir_is_named_as_the_variable_spells_it_or_by_its_path() {
        let home = Path::new("/h");
        let default = Place::found(Path::new("/h/.claude"), None, Some(home));
        assert_eq!(default.named_by_env, None);
        let other = Place::found(Path::new("/h/.claude-b"), None, Some(home));
        assert_eq!(other.named_by_env.as_deref(), Some("/h/.claude-b"));
        let set = Place::found(
            Path::new("/h/.claude-b/"),
            Some("/h/.claude-b/"),
            Some(home),
        );
        assert_eq!(set.named_by_env.as_deref(), Some("/h/.claude-b/"));
    }
}
