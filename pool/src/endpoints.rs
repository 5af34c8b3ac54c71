//! Where the vendor's endpoints are: the row's hosts, unless a test points
//! them elsewhere (DESIGN.md's CLI contract: `SESSIONPIPE_ANTHROPIC_API`,
//! `SESSIONPIPE_CLAUDE_OAUTH`), and the warning logged whenever one is.
//!
//! It owns the two bases and nothing else; every caller (the proxy, sign-in,
//! refresh, usage, remote titles) asks here, so no host is spelled twice.

/// The API: the proxy's upstream, the usage and profile reads, remote titles.
pub const ANTHROPIC_API: &str = "https://api.anthropic.com";
pub const API_VAR: &str = "SESSIONPIPE_ANTHROPIC_API";

/// The token exchange and refreshes.
pub const CLAUDE_OAUTH: &str = "https://platform.claude.com";
pub const OAUTH_VAR: &str = "SESSIONPIPE_CLAUDE_OAUTH";

/// Where the person signs in (`pool add --login`), and where the code is shown.
pub const AUTHORIZE_URL: &str = "https://claude.com/cai/oauth/authorize";
pub const CODE_CALLBACK_URL: &str = "https://platform.claude.com/oauth/code/callback";

/// The API base, without a trailing `/`.
pub fn api_base() -> String {
    base(API_VAR, ANTHROPIC_API)
}

/// The OAuth base, without a trailing `/`.
pub fn oauth_base() -> String {
    base(OAUTH_VAR, CLAUDE_OAUTH)
}

fn base(var: &str, default: &str) -> String {
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => v.trim_end_matches('/').to_string(),
        _ => default.to_string(),
    }
}

/// The variables set, each with where it points: what the warning names.
fn pointed_elsewhere() -> Vec<(&'static str, String)> {
    [(API_VAR, api_base()), (OAUTH_VAR, oauth_base())]
        .into_iter()
        .filter(|(var, _)| std::env::var_os(var).is_some_and(|v| !v.is_empty()))
        .collect()
}

/// The warning DESIGN.md asks for whenever a vendor endpoint is pointed
/// elsewhere; `who` says what uses it (the daemon, `titles refresh`, ...).
pub fn warn_if_pointed_elsewhere(who: &str) {
    for (var, to) in pointed_elsewhere() {
        tracing::warn!("{var} is set: {who} talks to {to} (for tests only)");
    }
}
