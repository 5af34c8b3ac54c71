//! Secrets known by their context in `secrets@1`: URL passwords
//! (`scheme://user:pass@host`), assignments to a secret name (`DB_PASSWORD=…`,
//! `"apiKey": "…"`, `?token=…`), `--password …` flags, `Bearer`/`Basic` credentials
//! and prose (`the password is Hunter2!`, only when the value looks generated).
//!
//! It owns the regexes that find names and their separators; what counts as a value
//! and what stays (placeholders, types, code) is `values`', and which names are secret
//! is `names`'. It must not match vendor token shapes (`vendor` does).

use std::sync::LazyLock;

use regex::Regex;

use crate::names::{is_authorization, is_secret_name};
use crate::spans::Spans;
use crate::values::{REDACTED, Stop, is_code_or_word, is_placeholder, looks_generated, value_at};

/// Case-insensitive stems every secret name contains (`names` has the final say).
const NAME_STEMS: &str = "pass|secret|token|key|auth";

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("context regex")
}

/// `scheme://user:password@`: group 1 is the password.
static URL_PASSWORD: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?-u:\b)[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@?#]*:([^\s/@?#]+)@"));

/// A secret-looking name, the closing quote of a quoted key, and a separator
/// (`=`, `:`, `:=`, `=>`). The value starts where the match ends.
static ASSIGNMENT: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        r#"[A-Za-z0-9_.-]*(?i-u:{NAME_STEMS})[A-Za-z0-9_.-]*(?:\\?["'`])?\??[ \t]{{0,32}}(?::=|=>|=|:)[ \t]{{0,32}}"#
    ))
});

/// `--secret-name value` (the `--name=value` form is an assignment).
static FLAG: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        r"(?-u:\B)--[A-Za-z0-9_.-]*(?i-u:{NAME_STEMS})[A-Za-z0-9_.-]*[ \t]+"
    ))
});

/// A `Bearer` or `Basic` credential outside an `Authorization` header.
static SCHEME: LazyLock<Regex> = LazyLock::new(|| re(r"(?-u:\b)(?i-u:bearer|basic)[ \t]{1,4}"));

/// A secret noun in prose, then up to two linking words (`is`, `to`, `is now`).
static PROSE: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"(?-u:\b)(?i-u:password|passwd|passphrase|secret|token)(?-u:\b)[ \t]{1,4}",
        r"(?:(?i-u:is|was|to|be|now|are|:|=)[ \t]{1,4}){0,2}",
    ))
});

/// Literals whose absence rules out every rule here (for the pre-check).
pub(super) const HINTS: &[&str] = &[
    "://", "bearer", "basic", "pass", "secret", "token", "key", "auth",
];

/// Records every context secret in `s`.
pub(super) fn collect(s: &str, spans: &mut Spans) {
    url_passwords(s, spans);
    assignments(s, spans);
    flags(s, spans);
    schemes(s, spans);
    prose(s, spans);
}

fn url_passwords(s: &str, spans: &mut Spans) {
    for c in URL_PASSWORD.captures_iter(s) {
        let Some(pass) = c.get(1) else { continue };
        if !is_placeholder(pass.as_str()) {
            spans.push(pass.start(), pass.end(), REDACTED);
        }
    }
}

fn assignments(s: &str, spans: &mut Spans) {
    for m in ASSIGNMENT.find_iter(s) {
        let name = m
            .as_str()
            .trim_end_matches([' ', '\t', ':', '=', '>', '?', '"', '\'', '`', '\\']);
        let before = &s[..m.start()];
        if before.ends_with("://") || !is_secret_name(name) {
            continue; // `https://token:x@host` is a URL's user, not an assignment
        }
        if s[m.end()..].starts_with(['=', '>']) {
            continue; // a comparison, `token == x`
        }
        let stop = if before.ends_with(['?', '&']) {
            Stop::Query
        } else {
            Stop::Assign
        };
        push_value(
            s,
            spans,
            m.end(),
            stop,
            is_authorization(name),
            Judge::Assigned,
        );
    }
}

fn flags(s: &str, spans: &mut Spans) {
    for m in FLAG.find_iter(s) {
        let name = m.as_str().trim_end_matches([' ', '\t']);
        if is_secret_name(name) && !s[m.end()..].starts_with('-') {
            push_value(s, spans, m.end(), Stop::Assign, false, Judge::Assigned);
        }
    }
}

fn schemes(s: &str, spans: &mut Spans) {
    for m in SCHEME.find_iter(s) {
        push_value(s, spans, m.end(), Stop::Assign, false, Judge::Credential);
    }
}

fn prose(s: &str, spans: &mut Spans) {
    for m in PROSE.find_iter(s) {
        push_value(s, spans, m.end(), Stop::Prose, false, Judge::Generated);
    }
}

/// How sure a rule must be that the text after it is a secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Judge {
    /// Assigned to a secret name: anything but a placeholder, or, unquoted, code or
    /// a word.
    Assigned,
    /// After `Bearer`/`Basic` in free text: 8 characters or more that look generated,
    /// or 20 or more.
    Credential,
    /// In prose: only what looks generated.
    Generated,
}

/// Finds the value at `pos` and records it when `judge` says it is a secret.
fn push_value(s: &str, spans: &mut Spans, pos: usize, stop: Stop, scheme: bool, judge: Judge) {
    let Some(v) = value_at(s, pos, stop, scheme) else {
        return;
    };
    let text = &s[v.start..v.end];
    let secret = !is_placeholder(text)
        && match judge {
            Judge::Assigned => v.quoted || !is_code_or_word(text),
            Judge::Credential => {
                let n = text.chars().count();
                n >= 20 || (n >= 8 && looks_generated(text))
            }
            Judge::Generated => looks_generated(text),
        };
    if secret {
        spans.push(v.start, v.end, REDACTED);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(s: &str) -> String {
        let mut sp = Spans::new();
        collect(s, &mut sp);
        sp.apply(s).into_owned()
    }

    #[test]
    fn assignments_in_many_syntaxes() {
        let cases = [
            ("DB_PASSWORD=hunter2", "DB_PASSWORD=[redacted]"),
            ("password: 'p4ss word'", "password: '[redacted]'"),
            ("const apiKey = \"abc\";", "const apiKey = \"[redacted]\";"),
            ("token := \"abc\"", "token := \"[redacted]\""),
            ("'secret' => 'abc',", "'secret' => '[redacted]',"),
            ("password?: \"abc\"", "password?: \"[redacted]\""),
            (
                "{\\\"api_key\\\": \\\"abc123\\\"}",
                "{\\\"api_key\\\": \\\"[redacted]\\\"}",
            ),
            (
                "\"Authorization\": \"Bearer abc\"",
                "\"Authorization\": \"Bearer [redacted]\"",
            ),
            (
                "Authorization: Basic dXNlcjpw",
                "Authorization: Basic [redacted]",
            ),
        ];
        for (i, o) in cases {
            assert_eq!(run(i), o, "{i}");
        }
    }

    #[test]
    fn comparisons_urls_users_and_code_stay() {
        for s in [
            "if token == expected {",
            "https://token:@host",
            "password = getpass()",
            "token: null",
            "password: Option<String>,",
            "api_key=api_key,",
            "Token: the one from step 2",
            "password:",
            "password_hash = \"$2b$12$abc\"",
        ] {
            assert_eq!(run(s), s, "{s}");
        }
    }

    #[test]
    fn url_passwords_keep_user_and_host() {
        assert_eq!(
            run("redis://:s3cret@cache:6379/0"),
            "redis://:[redacted]@cache:6379/0"
        );
        assert_eq!(
            run("git clone https://oauth2:${TOKEN}@gitlab.com/x.git"),
            "git clone https://oauth2:${TOKEN}@gitlab.com/x.git"
        );
    }

    #[test]
    fn flags() {
        assert_eq!(
            run("mysql --password hunter2 -u root"),
            "mysql --password [redacted] -u root"
        );
        assert_eq!(run("tool --token-limit 5"), "tool --token-limit 5");
        assert_eq!(run("tool --no-password --x"), "tool --no-password --x");
    }

    #[test]
    fn bearer_outside_a_header() {
        assert_eq!(
            run("send Bearer abc.def-123456 along"),
            "send Bearer [redacted] along"
        );
        assert_eq!(
            run("use Bearer authentication"),
            "use Bearer authentication"
        );
        assert_eq!(run("a Basic plan"), "a Basic plan");
    }

    #[test]
    fn prose_only_takes_generated_values() {
        assert_eq!(
            run("the secret is now X9-ab-77q"),
            "the secret is now [redacted]"
        );
        assert_eq!(run("the password was changed"), "the password was changed");
        assert_eq!(run("token 200000"), "token 200000");
    }
}
