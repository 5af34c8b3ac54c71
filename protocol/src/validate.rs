//! The protocol's syntactic rules: type names, session ids, tool names, ULIDs,
//! times, and a whole-envelope check used by tests and the conformance runner.

use super::envelope::Envelope;
use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidationError(pub String);

impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ValidationError {}

/// `^[a-z][a-z0-9]*(\.[a-z][a-z0-9_]*)+$` or `native`.
pub fn valid_type(t: &str) -> bool {
    if t == "native" {
        return true;
    }
    let mut parts = t.split('.');
    let Some(first) = parts.next() else {
        return false;
    };
    let word = |s: &str, extra: &[u8]| {
        let b = s.as_bytes();
        !b.is_empty()
            && b[0].is_ascii_lowercase()
            && b[1..]
                .iter()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || extra.contains(c))
    };
    let mut rest = 0;
    for p in parts {
        if !word(p, b"_") {
            return false;
        }
        rest += 1;
    }
    word(first, b"") && rest > 0
}

/// ≤ 128 characters of `[A-Za-z0-9._:-]`, at least one.
pub fn valid_session_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"._:-".contains(&c))
}

/// A machine's name (`session.machine`): 1 to 80 characters (the schema's
/// bound, counted in bytes as it is stored), no control characters, no path
/// separators, not `.` or `..`, no space at either end. A name a person reads,
/// never a path: `misha-air` and `Misha's MacBook Pro` are names.
pub fn valid_machine_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 80
        && name.trim() == name
        && name != "."
        && name != ".."
        && !name
            .chars()
            .any(|c| c.is_control() || c == '/' || c == '\\')
}

/// A harness's tool name as the protocol takes it: as given when it fits
/// `^[A-Za-z0-9_.:-]{1,120}$`, else every other character as `_` and cut to
/// 120 (a name from an MCP server may hold anything); empty is `unknown`.
pub fn fit_tool_name(name: &str) -> String {
    if valid_tool_name(name) {
        return name.to_string();
    }
    let fitted: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "_.:-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .take(120)
        .collect();
    if fitted.is_empty() {
        "unknown".into()
    } else {
        fitted
    }
}

/// `^[A-Za-z0-9_.:-]{1,120}$`.
pub fn valid_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 120
        && name
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"_.:-".contains(&c))
}

/// How a harness of the registry is named to a person (`claude-code` →
/// `Claude Code`); a name the registry does not know is shown as it is.
pub fn harness_display_name(harness: &str) -> String {
    HARNESS_DISPLAY_NAMES
        .iter()
        .find(|(name, _)| *name == harness)
        .map_or(harness, |(_, shown)| shown)
        .to_string()
}

/// Each harness's name as people read it, by its protocol name: the tray,
/// notifications and both web pages say these (the pages' table,
/// `web-shared/src/generated/harness-names.ts`, is generated from this one).
/// A harness not here is named as it is (`goose`).
pub const HARNESS_DISPLAY_NAMES: &[(&str, &str)] = &[
    ("claude-code", "Claude Code"),
    ("codex", "Codex"),
    ("gemini-cli", "Gemini CLI"),
    ("antigravity", "Antigravity"),
    ("devin", "Devin"),
    ("grok-build", "Grok Build"),
    ("cursor", "Cursor"),
    ("copilot-cli", "Copilot CLI"),
    ("droid", "Droid"),
    ("kiro", "Kiro"),
    ("opencode", "OpenCode"),
];

/// `^[a-z][a-z0-9-]{0,39}$`.
pub fn valid_harness_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= 40
        && b[0].is_ascii_lowercase()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
}

/// 26 characters of Crockford base32 (`0-9A-HJKMNP-TV-Z`), first one ≤ 7.
pub fn valid_ulid(id: &str) -> bool {
    const ALPHABET: &[u8] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    id.len() == 26 && id.bytes().all(|c| ALPHABET.contains(&c)) && id.as_bytes()[0] <= b'7'
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` and a real instant.
pub fn valid_time(t: &str) -> bool {
    t.len() == 24
        && t.ends_with('Z')
        && t.as_bytes()[19] == b'.'
        && crate::time::parse_rfc3339_ms(t).is_some_and(|ms| crate::time::rfc3339_ms(ms) == t)
}

/// Checks an envelope against §1–§3: every member's syntax, the type's data when the
/// type is known (unknown types are allowed, as receivers store them).
pub fn validate_envelope(e: &Envelope) -> Result<(), ValidationError> {
    let fail = |m: String| Err(ValidationError(m));
    if e.protocol != super::PROTOCOL_VERSION {
        return fail(format!("protocol {} is not 1", e.protocol));
    }
    if !valid_ulid(&e.id) {
        return fail(format!("id {:?} is not a ULID", e.id));
    }
    if !valid_type(&e.kind) {
        return fail(format!("type {:?} does not match the type pattern", e.kind));
    }
    if !valid_time(&e.time) {
        return fail(format!(
            "time {:?} is not RFC 3339 UTC with milliseconds",
            e.time
        ));
    }
    if e.tier > 3 {
        return fail(format!("tier {} is above 3", e.tier));
    }
    if !valid_harness_name(&e.harness.name) {
        return fail(format!("harness name {:?} is not valid", e.harness.name));
    }
    if !valid_session_id(&e.session.id) {
        return fail(format!("session id {:?} is not valid", e.session.id));
    }
    if let Some(why) = e.session.problem() {
        return fail(why);
    }
    if e.tier > 0 && !e.privacy.rulesets.iter().any(|r| r == "secrets@1") {
        return fail(format!("tier {} without secrets@1", e.tier));
    }
    if let Some(min) = super::type_tier(&e.kind) {
        if min > e.tier {
            return fail(format!(
                "{} emitted at tier {} below its tier {min}",
                e.kind, e.tier
            ));
        }
        if e.kind != "native" && super::EventData::from_parts(&e.kind, &e.data).is_none() {
            return fail(format!("data does not fit {}", e.kind));
        }
        if let Some(tool) = e.data.get("tool").and_then(|v| v.as_str())
            && !valid_tool_name(tool)
        {
            return fail(format!("tool name {tool:?} is not valid"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_fit_the_protocol() {
        assert_eq!(
            fit_tool_name("mcp__github__create_issue"),
            "mcp__github__create_issue"
        );
        assert_eq!(fit_tool_name("Web Search"), "Web_Search");
        assert_eq!(fit_tool_name(""), "unknown");
        assert_eq!(fit_tool_name("é"), "_");
        let long = fit_tool_name(&"x".repeat(500));
        assert_eq!(long.len(), 120);
        for s in ["a b", "ࠀ𐀀", "\0", &"é".repeat(300)] {
            assert!(valid_tool_name(&fit_tool_name(s)), "{s:?}");
        }
    }

    #[test]
    fn machine_names_are_names_not_paths() {
        for ok in [
            "misha-air",
            "Misha's MacBook Pro",
            "build.local",
            "m",
            &"a".repeat(80),
        ] {
            assert!(valid_machine_name(ok), "{ok:?}");
        }
        for bad in [
            "",
            "../../etc",
            "a/b",
            "a\\b",
            ".",
            "..",
            " padded",
            "nul\0",
            "tab\t",
            &"a".repeat(81),
        ] {
            assert!(!valid_machine_name(bad), "{bad:?}");
        }
    }

    #[test]
    fn type_pattern() {
        for ok in ["session.started", "a.b_c", "x1.y2.z_3", "native"] {
            assert!(valid_type(ok), "{ok}");
        }
        for bad in [
            "session",
            "Session.started",
            "a..b",
            "a.B",
            "1a.b",
            "a.b-c",
            "",
            "a._b",
            "a_b.c",
        ] {
            assert!(!valid_type(bad), "{bad}");
        }
    }

    #[test]
    fn session_ids() {
        assert!(valid_session_id("frill-vulture"));
        assert!(valid_session_id("3bd5639e-04f7-44e6-a4c2-2f9bb68adad6"));
        assert!(valid_session_id(&"a".repeat(128)));
        assert!(!valid_session_id(&"a".repeat(129)));
        assert!(!valid_session_id(""));
        assert!(!valid_session_id("a b"));
        assert!(!valid_session_id("a/b"));
    }

    #[test]
    fn tool_and_harness_names() {
        assert!(valid_tool_name("mcp__server__tool"));
        assert!(valid_tool_name("run_shell_command"));
        assert!(!valid_tool_name("two words"));
        assert!(!valid_tool_name(&"t".repeat(121)));
        assert!(valid_harness_name("claude-code"));
        assert!(!valid_harness_name("Claude"));
        assert!(!valid_harness_name("-x"));
    }

    #[test]
    fn ulids() {
        let id = ulid::Ulid::generate().to_string();
        assert!(valid_ulid(&id), "{id}");
        assert!(!valid_ulid("01J0000000000000000000000I"));
        assert!(!valid_ulid("81J00000000000000000000000"));
    }

    #[test]
    fn times() {
        assert!(valid_time("2026-09-28T02:05:03.861Z"));
        assert!(!valid_time("2026-09-28T02:05:03Z"));
        assert!(!valid_time("2026-02-30T02:05:03.861Z"));
        assert!(!valid_time("2026-09-28T02:05:03.861+00:00"));
    }
}
