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
use crate::spans::{Spans, follows_replacement};
use crate::values::{
    Found, REDACTED, Stop, Values, is_code_or_word, is_placeholder, looks_generated,
};

/// Stems every secret name contains, matched case-insensitively (`names` has the
/// final say). Unicode case folding (`(?i:`) rather than ASCII (`(?i-u:`): the regex
/// crate turns the former into a literal prefilter and runs about four times faster.
pub(super) const NAME_STEMS: &str = "(?i:pass|secret|token|key|auth)";

/// Characters of a name (`DB_PASSWORD`, `x-api-key`, `config.token`).
const NAME_CHARS: &str = "[A-Za-z0-9_.-]";

/// How far left of its stem a name is read.
const MAX_NAME_HEAD: usize = 256;

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("context regex")
}

/// `scheme://user:password@`: group 1 is the password. The user part cannot hold
/// `[`, `]` (RFC 3986 delimiters) or `~`: `[email]` or `~` there means `pii@1` took an
/// `@` or a `/` out, which must not make a new match.
static URL_PASSWORD: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?-u:\b)[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@?#\[\]~]*:([^\s/@?#]+)@"));

/// From a secret stem to the end of a separator: the rest of the name, the closing
/// quote of a quoted key, and `=`, `:`, `:=` or `=>`. The value starts where the match
/// ends; the name's head, left of the stem, is read by hand (`name_start`), which
/// keeps the regex's literal prefilter.
static ASSIGNMENT: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        r#"{NAME_STEMS}{NAME_CHARS}*(?:\\?["'`])?\??[ \t]{{0,32}}(?::=|=>|=|:)[ \t]{{0,32}}"#
    ))
});

/// `--secret-name value` (the `--name=value` form is an assignment).
static FLAG: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        r"(?-u:\B)--{NAME_CHARS}*{NAME_STEMS}{NAME_CHARS}*[ \t]+"
    ))
});

/// The scheme words a free-standing credential follows, in their usual cases.
const SCHEME_WORDS: &[&str] = &["Bearer", "bearer", "BEARER", "Basic", "basic", "BASIC"];

/// A `Bearer` or `Basic` credential outside an `Authorization` header.
static SCHEME: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        r"(?-u:\b)(?:{})[ \t]{{1,4}}",
        SCHEME_WORDS.join("|")
    ))
});

/// A secret noun in prose, then up to two linking words (`is`, `to`, `is now`).
static PROSE: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"(?-u:\b)(?i:password|passwd|passphrase|secret|token)(?-u:\b)[ \t]{1,4}",
        r"(?:(?i:is|was|to|be|now|are|:|=)[ \t]{1,4}){0,2}",
    ))
});

/// Literals one of which every match here contains that has no stem of `NAME_STEMS`
/// (for the gate in `secrets`).
pub(super) fn hint_literals() -> impl Iterator<Item = &'static str> {
    SCHEME_WORDS.iter().copied().chain(["://"])
}

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
        let (Some(all), Some(pass)) = (c.get(0), c.get(1)) else {
            continue;
        };
        if !follows_replacement(s, all.start()) && !is_placeholder(pass.as_str()) {
            spans.push(pass.start(), pass.end(), REDACTED);
        }
    }
}

fn assignments(s: &str, spans: &mut Spans) {
    let mut values = Values::new(s);
    let mut done = 0;
    for m in ASSIGNMENT.find_iter(s) {
        let start = name_start(s, m.start(), done);
        done = m.end();
        let name = s[start..m.end()]
            .trim_end_matches([' ', '\t', ':', '=', '>', '?', '"', '\'', '`', '\\']);
        let before = &s[..start];
        if before.ends_with("://") || follows_replacement(s, start) || !is_secret_name(name) {
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
        let found = values.at(m.end(), stop, is_authorization(name));
        push(s, spans, found, Judge::Assigned);
    }
}

/// Where the name around a stem at `stem` starts: name characters are read leftwards,
/// at most `MAX_NAME_HEAD` of them and never before `floor` (the end of the previous
/// match), so every byte is read a bounded number of times.
fn name_start(s: &str, stem: usize, floor: usize) -> usize {
    let floor = floor.max(stem.saturating_sub(MAX_NAME_HEAD));
    let head = s.as_bytes()[floor..stem]
        .iter()
        .rev()
        .take_while(|&&c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-'))
        .count();
    stem - head
}

fn flags(s: &str, spans: &mut Spans) {
    let secret_flag = |m: &str, rest: &str| {
        is_secret_name(m.trim_end_matches([' ', '\t'])) && !rest.starts_with('-')
    };
    values_after(s, spans, &FLAG, secret_flag, Stop::Assign, Judge::Assigned);
}

fn schemes(s: &str, spans: &mut Spans) {
    values_after(
        s,
        spans,
        &SCHEME,
        |_, _| true,
        Stop::Assign,
        Judge::Credential,
    );
}

fn prose(s: &str, spans: &mut Spans) {
    values_after(s, spans, &PROSE, |_, _| true, Stop::Prose, Judge::Generated);
}

/// Judges the value after every match of `re` that `accept` takes (given the match
/// and the text after it) and that is not glued to a replacement.
fn values_after(
    s: &str,
    spans: &mut Spans,
    re: &Regex,
    accept: impl Fn(&str, &str) -> bool,
    stop: Stop,
    judge: Judge,
) {
    let mut values = Values::new(s);
    for m in re.find_iter(s) {
        if !follows_replacement(s, m.start()) && accept(m.as_str(), &s[m.end()..]) {
            push(s, spans, values.at(m.end(), stop, false), judge);
        }
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

/// Values longer than this (in bytes) are judged by their length alone: a secret
/// after a name or a scheme word, never a generated-looking word in prose. Placeholders,
/// types and code are short, and a bound here keeps many names inside one long value
/// (`token=token=…`) linear.
const MAX_JUDGED: usize = 256;

/// Records the value `found` when `judge` says it is a secret.
fn push(s: &str, spans: &mut Spans, found: Option<Found>, judge: Judge) {
    let Some(v) = found else { return };
    let text = &s[v.start..v.end];
    let secret = if text.len() > MAX_JUDGED {
        judge != Judge::Generated
    } else {
        !is_placeholder(text)
            && match judge {
                Judge::Assigned => v.quoted || !is_code_or_word(text),
                Judge::Credential => {
                    let n = text.chars().count();
                    n >= 20 || (n >= 8 && looks_generated(text))
                }
                Judge::Generated => looks_generated(text),
            }
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
