//! Claude Code's facts from its own files (ADAPTERS.md, Facts row): the account
//! (`oauthAccount.accountUuid` in the config dir's `.claude.json`, or an `api-…`
//! id for a config dir that runs on another API), and the per-process session
//! registry (`<config>/sessions/<pid>.json`: the session's name and its
//! Remote Control link); and which config dirs there are, for every reader of
//! them (hooks, backfill, control, headless runs).
//!
//! Reads only those keys: never a token, never the email (no credential is read
//! unless the person turned on remote titles or the pool, which live elsewhere).

use harness::Job;
use harness::SessionFiles;
use protocol::{SessionBlock, TitleSource};
use serde_json::Value;
use std::path::{Path, PathBuf};

pub fn facts(job: &Job, files: &SessionFiles) -> SessionBlock {
    let Some(config) = config_dir(job, files) else {
        return SessionBlock::default();
    };
    let mut block = SessionBlock {
        account_id: account_id(job.home().as_deref(), &config),
        ..Default::default()
    };
    if let Some(entry) = registry_entry(job, &config) {
        let name = entry
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.trim().is_empty());
        let source = match entry.get("nameSource").and_then(Value::as_str) {
            Some("user") => Some(TitleSource::Custom),
            Some("auto" | "hook" | "peer") => Some(TitleSource::Harness),
            _ => None, // `derived` is never a title
        };
        if let (Some(name), Some(source)) = (name, source) {
            block.title = Some(name.trim().to_string());
            block.title_source = Some(source);
        }
        if let Some(bridge) = entry.get("bridgeSessionId").and_then(Value::as_str) {
            block.url = Some(format!("https://claude.ai/code/{bridge}"));
        }
    }
    block
}

/// The config dir the session belongs to: the transcript's
/// (`<config>/projects/<slug>/<id>.jsonl`), else `$CLAUDE_CONFIG_DIR`, else `~/.claude`.
pub(super) fn config_dir(job: &Job, files: &SessionFiles) -> Option<PathBuf> {
    if let Some(t) = &files.transcript
        && let Some(projects) = t.parent().and_then(Path::parent)
        && projects.file_name().is_some_and(|n| n == "projects")
    {
        return projects.parent().map(Path::to_path_buf);
    }
    job.env("CLAUDE_CONFIG_DIR")
        .map(PathBuf::from)
        .or_else(|| job.home().map(|h| h.join(".claude")))
}

/// The config dir a hook call's session belongs to, and `$CLAUDE_CONFIG_DIR`
/// as the call's Claude Code had it set when it names that dir: where the
/// session's sign-in is (the keychain item's name takes the variable's own
/// spelling, so it is kept as set, not as a path).
pub fn config_dir_of(job: &Job, files: &SessionFiles) -> Option<(PathBuf, Option<String>)> {
    let dir = config_dir(job, files)?;
    let named = job
        .env("CLAUDE_CONFIG_DIR")
        .filter(|v| Path::new(v) == dir)
        .map(str::to_string);
    Some((dir, named))
}

/// The claude.ai session a link opens (`https://claude.ai/code/session_…`),
/// the id claude.ai is asked about; `None` for any other link.
pub fn claude_ai_session(url: &str) -> Option<&str> {
    let id = url.strip_prefix("https://claude.ai/code/")?;
    let rest = id.strip_prefix("session_")?;
    (!rest.is_empty() && rest.len() <= 100 && rest.chars().all(|c| c.is_ascii_alphanumeric()))
        .then_some(id)
}

/// The config dir's account as control names it: `{id: accountUuid, email:
/// emailAddress}`, or for another API `{id: api-…, name: host}` (the harness
/// is the caller's to fill in).
pub fn account(home: Option<&Path>, config: &Path) -> Option<harness::control::Account> {
    let id = account_id(home, config)?;
    let claude_json = claude_json_of(home, config)?;
    let email = read_json(&claude_json)
        .and_then(|v| {
            v.pointer("/oauthAccount/emailAddress")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .filter(|_| !id.starts_with("api-"));
    let name = id.starts_with("api-").then(|| {
        read_json(&config.join("settings.json"))
            .and_then(|s| {
                s.pointer("/env/ANTHROPIC_BASE_URL")?
                    .as_str()
                    .map(str::to_string)
            })
            .and_then(|u| origin_of(&u))
            .and_then(|o| {
                o.split("://")
                    .nth(1)
                    .map(|h| h.split(':').next().unwrap_or(h).to_string())
            })
            .unwrap_or_default()
    });
    Some(harness::control::Account {
        harness: String::new(),
        id,
        email,
        name,
    })
}

/// The `.claude.json` of a config dir (`~/.claude`'s is beside it, in home).
fn claude_json_of(home: Option<&Path>, config: &Path) -> Option<PathBuf> {
    let home_default = home.map(|h| h.join(".claude")).is_some_and(|d| d == config);
    Some(if home_default {
        config.parent()?.join(".claude.json")
    } else {
        config.join(".claude.json")
    })
}

/// The `env` key that tells Claude Code its base URL is Anthropic's own
/// behind a proxy (the pool writes it beside its loopback listener's URL).
pub const FIRST_PARTY_KEY: &str = "_CLAUDE_CODE_ASSUME_FIRST_PARTY_BASE_URL";

/// `oauthAccount.accountUuid`, else `api-<16 hex>` of a non-Anthropic
/// `env.ANTHROPIC_BASE_URL` origin in the config dir's settings. A base URL
/// declared first-party (`FIRST_PARTY_KEY` = `1`, as the pool's listener
/// is) is Anthropic's behind a proxy, not another API: its account is the
/// one each request names, not the URL's.
pub fn account_id(home: Option<&Path>, config: &Path) -> Option<String> {
    let claude_json = claude_json_of(home, config)?;
    if let Some(v) = read_json(&claude_json)
        && let Some(id) = v
            .pointer("/oauthAccount/accountUuid")
            .and_then(Value::as_str)
    {
        return Some(id.to_string());
    }
    let settings = read_json(&config.join("settings.json"))?;
    if settings
        .pointer(&format!("/env/{FIRST_PARTY_KEY}"))
        .and_then(Value::as_str)
        == Some("1")
    {
        return None;
    }
    let url = settings.pointer("/env/ANTHROPIC_BASE_URL")?.as_str()?;
    let origin = origin_of(url)?;
    let host = origin.split("://").nth(1)?.split(':').next()?;
    if host == "anthropic.com" || host.ends_with(".anthropic.com") {
        return None;
    }
    Some(format!(
        "api-{}",
        harness::digest::sha256_prefix(origin.as_bytes(), 8)
    ))
}

/// `scheme://host[:port]` of an http(s) URL, without user info or path.
fn origin_of(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    if !matches!(scheme, "http" | "https") {
        return None;
    }
    let authority = rest.split(['/', '?', '#']).next()?;
    let host_port = authority.rsplit('@').next()?;
    (!host_port.is_empty()).then(|| format!("{scheme}://{}", host_port.to_ascii_lowercase()))
}

/// The registry entry of the Claude Code process that ran the hook:
/// `CLAUDE_PID`, else the hook's parent and its ancestors.
fn registry_entry(job: &Job, config: &Path) -> Option<Value> {
    let sessions = config.join("sessions");
    let mut pids: Vec<u32> = job
        .env("CLAUDE_PID")
        .and_then(|p| p.parse().ok())
        .into_iter()
        .collect();
    let mut pid = job.ppid;
    for _ in 0..4 {
        let Some(p) = pid else { break };
        pids.push(p);
        pid = parent_of(p);
    }
    pids.into_iter()
        .find_map(|p| read_json(&sessions.join(format!("{p}.json"))))
}

#[cfg(target_os = "linux")]
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid …`; comm may hold spaces and parentheses.
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

#[cfg(not(target_os = "linux"))]
fn parent_of(_pid: u32) -> Option<u32> {
    None
}

/// Where the session's last known permission mode is remembered (its memo).
pub(super) const MEMO_PERMISSION_MODE: &str = "permission_mode";

/// The payload's top-level `permission_mode`, found without parsing it (the
/// payload was parsed once for its events; a prompt can be megabytes).
pub(super) fn permission_mode(payload: &[u8]) -> Option<String> {
    const KEY: &[u8] = b"\"permission_mode\":\"";
    let at = payload.windows(KEY.len()).position(|w| w == KEY)? + KEY.len();
    let rest = &payload[at..];
    let end = rest.iter().position(|b| *b == b'"')?;
    let mode = std::str::from_utf8(&rest[..end]).ok()?;
    (!mode.is_empty() && mode.len() <= 40 && mode.chars().all(|c| c.is_ascii_alphanumeric()))
        .then(|| mode.to_string())
}

/// A JSON file, when it exists and parses. `.claude.json` holds the person's
/// project history and can run to megabytes; it is read on turn boundaries only.
pub(super) fn read_json(path: &Path) -> Option<Value> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

/// Every config dir: `~/.claude`, `$CLAUDE_CONFIG_DIR`, and each `~/.claude-*`
/// holding `projects/` or `settings.json` (one per account). None found and
/// `claude` on `PATH`: `~/.claude`, which Claude Code will create.
pub fn config_dirs(host: &harness::install::Host) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    let default = host.home.join(".claude");
    if default.is_dir() {
        dirs.push(default.clone());
    }
    if let Some(dir) = host.var("CLAUDE_CONFIG_DIR") {
        dirs.push(PathBuf::from(dir));
    }
    if let Ok(entries) = std::fs::read_dir(&host.home) {
        let mut extra: Vec<PathBuf> = entries
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(".claude-"))
            .map(|e| e.path())
            .filter(|d| d.join("projects").is_dir() || d.join("settings.json").is_file())
            .collect();
        extra.sort();
        dirs.extend(extra);
    }
    if dirs.is_empty() && host.on_path("claude") {
        dirs.push(default);
    }
    dirs.dedup();
    dirs
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_a_claude_ai_session_link_names_a_remote_session() {
        use super::claude_ai_session;
        assert_eq!(
            claude_ai_session("https://claude.ai/code/session_01AbC"),
            Some("session_01AbC")
        );
        for other in [
            "https://claude.ai/code/cse_01AbC",
            "https://claude.ai/code/session_",
            "https://claude.ai/code/session_01/../x",
            "http://claude.ai/code/session_01AbC",
            "https://evil.example/code/session_01AbC",
        ] {
            assert_eq!(claude_ai_session(other), None, "{other}");
        }
    }

    #[test]
    fn the_permission_mode_is_read_off_the_payload() {
        let p = br#"{"session_id":"x","permission_mode":"bypassPermissions","prompt":"hi"}"#;
        assert_eq!(
            super::permission_mode(p).as_deref(),
            Some("bypassPermissions")
        );
        assert_eq!(super::permission_mode(br#"{"session_id":"x"}"#), None);
        assert_eq!(
            super::permission_mode(br#"{"permission_mode":"a\"b"}"#),
            None
        );
    }

    #[test]
    fn control_names_each_config_dirs_account_with_its_email_or_its_api_host() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path();
        let config = home.join(".claude");
        std::fs::create_dir_all(&config).unwrap();
        std::fs::write(
            home.join(".claude.json"),
            r#"{"oauthAccount":{"accountUuid":"acct-9","emailAddress":"ann@example.com"}}"#,
        )
        .unwrap();
        let a = super::account(Some(home), &config).unwrap();
        assert_eq!(
            (a.id.as_str(), a.email.as_deref(), a.name.as_deref()),
            ("acct-9", Some("ann@example.com"), None)
        );
        let other = home.join(".claude-kimi");
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(
            other.join("settings.json"),
            r#"{"env":{"ANTHROPIC_BASE_URL":"https://user:pw@api.kimi.example:8443/v1"}}"#,
        )
        .unwrap();
        let b = super::account(Some(home), &other).unwrap();
        assert!(b.id.starts_with("api-"), "{b:?}");
        assert_eq!(
            (b.email, b.name.as_deref()),
            (None, Some("api.kimi.example"))
        );
    }

    use super::*;

    fn job(home: &Path, env: &[(&str, &str)]) -> Job {
        let mut j = Job {
            harness: "claude-code".into(),
            event: "Stop".into(),
            ..Default::default()
        };
        j.env.insert("HOME".into(), home.display().to_string());
        for (k, v) in env {
            j.env.insert(k.to_string(), v.to_string());
        }
        j
    }

    fn files(transcript: PathBuf) -> SessionFiles {
        SessionFiles {
            transcript: Some(transcript),
            ..Default::default()
        }
    }

    #[test]
    fn account_from_the_default_config_dirs_claude_json() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path();
        std::fs::create_dir_all(home.join(".claude/projects/-w")).unwrap();
        std::fs::write(
            home.join(".claude.json"),
            r#"{"oauthAccount":{"accountUuid":"acct-123","emailAddress":"ann@example.com"}}"#,
        )
        .unwrap();
        let f = facts(
            &job(home, &[]),
            &files(home.join(".claude/projects/-w/s.jsonl")),
        );
        assert_eq!(f.account_id.as_deref(), Some("acct-123"));
        assert!(serde_json::to_string(&f).unwrap().find("ann@").is_none());
    }

    #[test]
    fn a_config_dir_on_another_api_gets_an_api_id_from_its_origin() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join(".claude-kimi");
        std::fs::create_dir_all(config.join("projects/-w")).unwrap();
        std::fs::write(
            config.join("settings.json"),
            r#"{"env":{"ANTHROPIC_BASE_URL":"https://user:pw@Api.Example.com:8443/anthropic/v1"}}"#,
        )
        .unwrap();
        let f = facts(
            &job(dir.path(), &[]),
            &files(config.join("projects/-w/s.jsonl")),
        );
        let want = harness::digest::sha256_prefix(b"https://api.example.com:8443", 8);
        assert_eq!(f.account_id, Some(format!("api-{want}")));
        // Anthropic's own host, and the pool's loopback listener (declared
        // first-party), are not another API.
        for settings in [
            r#"{"env":{"ANTHROPIC_BASE_URL":"https://api.anthropic.com"}}"#,
            r#"{"env":{"ANTHROPIC_BASE_URL":"http://127.0.0.1:41234","ANTHROPIC_AUTH_TOKEN":"t","_CLAUDE_CODE_ASSUME_FIRST_PARTY_BASE_URL":"1"}}"#,
        ] {
            std::fs::write(config.join("settings.json"), settings).unwrap();
            assert_eq!(
                facts(
                    &job(dir.path(), &[]),
                    &files(config.join("projects/-w/s.jsonl"))
                )
                .account_id,
                None,
                "{settings}"
            );
        }
    }

    #[test]
    fn the_registry_names_the_session_and_its_link() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path();
        std::fs::create_dir_all(home.join(".claude/sessions")).unwrap();
        std::fs::write(
            home.join(".claude/sessions/4242.json"),
            r#"{"pid":4242,"name":"Fix login","nameSource":"user","bridgeSessionId":"session_01AbC"}"#,
        )
        .unwrap();
        let f = facts(
            &job(home, &[("CLAUDE_PID", "4242")]),
            &SessionFiles::default(),
        );
        assert_eq!(
            (f.title.as_deref(), f.title_source),
            (Some("Fix login"), Some(TitleSource::Custom))
        );
        assert_eq!(
            f.url.as_deref(),
            Some("https://claude.ai/code/session_01AbC")
        );
        std::fs::write(
            home.join(".claude/sessions/4242.json"),
            r#"{"name":"x","nameSource":"derived"}"#,
        )
        .unwrap();
        assert_eq!(
            facts(
                &job(home, &[("CLAUDE_PID", "4242")]),
                &SessionFiles::default()
            )
            .title,
            None
        );
    }

    #[test]
    fn origins() {
        assert_eq!(
            origin_of("http://localhost:8080/x").as_deref(),
            Some("http://localhost:8080")
        );
        assert_eq!(origin_of("ftp://x"), None);
        assert_eq!(origin_of("https://"), None);
    }
}
