//! Values next to a secret name: where a value starts and ends (quoted, unquoted, in a
//! URL query, in prose), and whether it is a real value or a placeholder, a type, a
//! code reference or an ordinary word.
//!
//! It owns the shared judgement every context rule uses (assignments, flags, URL
//! passwords, `Bearer` credentials, prose), so the rules agree on what stays. It must
//! not find names or decide which names are secret (`names` does), and it reads bytes
//! only at ASCII positions, so every offset it returns is a char boundary.

use crate::names::{is_secret_name, words};

/// What replaces a secret value.
pub(crate) const REDACTED: &str = "[redacted]";

/// What both rulesets write. A value holding one is a placeholder, and a marker is
/// read whole (its `]` does not end a value), so that `secrets@1` gives the same
/// answer on text `pii@1` already went through.
const MARKERS: &[&str] = &[REDACTED, crate::pii::EMAIL, crate::pii::PHONE];

/// The longest quoted value looked at; a longer one counts as unterminated.
const MAX_QUOTED: usize = 4096;

/// Where an unquoted value stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// `NAME=value`, `name: value`, `--flag value`: stops at whitespace, quotes and
    /// closing punctuation.
    Assign,
    /// `?token=value&next=1`: also stops at `&` and `#`.
    Query,
    /// `the password is value`: stops only at whitespace and quotes.
    Prose,
}

/// A value's byte range (without its quotes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Found {
    pub start: usize,
    pub end: usize,
    pub quoted: bool,
}

/// Finds values in one string. Remembers the last unquoted run it measured, so that
/// many names inside one long run (`token=token=token=…`) cost one walk of it, not
/// one each: every rule that looks for values stays linear.
pub(crate) struct Values<'s> {
    s: &'s str,
    run: Option<Run>,
}

/// A measured unquoted run: no stop byte of `stop` in `from..raw_end`; `end` is
/// `raw_end` without the trailing punctuation.
#[derive(Clone, Copy)]
struct Run {
    from: usize,
    raw_end: usize,
    end: usize,
    stop: Stop,
}

impl<'s> Values<'s> {
    pub(crate) fn new(s: &'s str) -> Self {
        Self { s, run: None }
    }

    /// Finds the value that starts at byte `pos`. With `scheme`, a leading scheme
    /// word (`Bearer `, `Basic `, `Token `) is skipped and stays in the text.
    pub(crate) fn at(&mut self, pos: usize, stop: Stop, scheme: bool) -> Option<Found> {
        let b = self.s.as_bytes();
        let (open, quote) = match (b.get(pos), b.get(pos + 1)) {
            (Some(b'\\'), Some(&q @ (b'"' | b'\''))) => (2, Some((q, true))),
            (Some(&q @ (b'"' | b'\'' | b'`')), _) => (1, Some((q, false))),
            _ => (0, None),
        };
        let mut start = pos + open;
        if scheme {
            start = skip_scheme(b, start);
        }
        if let Some((q, escaped)) = quote
            && let Some(end) = closing_quote(b, start, q, escaped)
        {
            return Some(Found {
                start,
                end,
                quoted: true,
            });
        }
        let end = self.unquoted_end(start, stop);
        (end > start).then_some(Found {
            start,
            end,
            quoted: false,
        })
    }

    /// The end of an unquoted value: a placeholder `<...>` is taken whole, anything
    /// else runs to the first stop byte (reading markers whole), without trailing
    /// `.`/`:` (and, in prose, other sentence punctuation).
    fn unquoted_end(&mut self, start: usize, stop: Stop) -> usize {
        let rest = &self.s[start..];
        if rest.starts_with('<')
            && let Some(close) = rest.bytes().take(128).position(|c| c == b'>')
        {
            return start + close + 1;
        }
        if let Some(run) = self.run
            && run.stop == stop
            && (run.from..run.raw_end).contains(&start)
        {
            return run.end.max(start);
        }
        let len = run_len(rest, stop);
        let trailing: &[char] = match stop {
            Stop::Prose => &['.', ',', ';', ':', ')', ']', '}', '?'],
            Stop::Assign | Stop::Query => &['.', ':'],
        };
        let end = start + rest[..len].trim_end_matches(trailing).len();
        self.run = Some(Run {
            from: start,
            raw_end: start + len,
            end,
            stop,
        });
        end
    }
}

/// The length of the run at the start of `rest` without a stop byte; a marker
/// counts as part of the run.
fn run_len(rest: &str, stop: Stop) -> usize {
    let b = rest.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'['
            && let Some(m) = MARKERS.iter().find(|m| rest[i..].starts_with(**m))
        {
            i += m.len();
        } else if is_stop(b[i], stop) {
            break;
        } else {
            i += 1;
        }
    }
    i
}

fn is_stop(c: u8, stop: Stop) -> bool {
    let common = c.is_ascii_whitespace() || matches!(c, b'"' | b'\'' | b'`');
    match stop {
        Stop::Prose => common,
        Stop::Assign => common || matches!(c, b',' | b';' | b')' | b'}' | b']' | b'>'),
        Stop::Query => {
            common
                || matches!(
                    c,
                    b'&' | b'#' | b',' | b';' | b')' | b'}' | b']' | b'<' | b'>'
                )
        }
    }
}

/// The position of the quote closing a value opened at `start`: the same quote byte
/// (after a backslash-escaped one, `\"`, when the opener was escaped too), on the same
/// line, within `MAX_QUOTED` bytes.
fn closing_quote(b: &[u8], start: usize, q: u8, escaped: bool) -> Option<usize> {
    let mut i = start;
    let limit = b.len().min(start + MAX_QUOTED);
    while i < limit {
        match b[i] {
            b'\n' | b'\r' => return None,
            b'\\' if escaped => {
                if b.get(i + 1) == Some(&q) {
                    return Some(i);
                }
                i += 2;
            }
            b'\\' => i += 2,
            c if c == q && !escaped => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// Skips an authorization scheme word and the blanks after it.
fn skip_scheme(b: &[u8], pos: usize) -> usize {
    const SCHEMES: &[&[u8]] = &[b"bearer", b"basic", b"token", b"digest", b"bot", b"apikey"];
    let Some(rest) = b.get(pos..) else {
        return pos;
    };
    let word = rest.iter().take_while(|c| c.is_ascii_alphabetic()).count();
    let is_scheme = SCHEMES.iter().any(|s| rest[..word].eq_ignore_ascii_case(s));
    let blanks = rest[word..]
        .iter()
        .take_while(|&&c| c == b' ' || c == b'\t')
        .count();
    if is_scheme && blanks > 0 {
        pos + word + blanks
    } else {
        pos
    }
}

/// True for what stands in for a secret rather than being one: empty, already
/// `[redacted]`, `$VAR`, `${VAR}`, `{{ var }}`, `%VAR%`, `<your-key>`, `process.env.X`,
/// `your_api_key`, masks like `****`.
pub(crate) fn is_placeholder(v: &str) -> bool {
    const ENV_READS: &[&str] = &[
        "process.env",
        "import.meta.env",
        "os.environ",
        "os.getenv",
        "env.",
        "env(",
        "env[",
        "secrets.",
        "system.getenv",
    ];
    const STAND_INS: &[&str] = &["redacted", "hidden", "masked", "removed", "omitted"];
    let lower = v.to_ascii_lowercase();
    v.is_empty()
        || MARKERS.iter().any(|m| v.contains(m))
        || v.starts_with('$')
        || v.starts_with("{{")
        || (v.len() > 2 && v.starts_with('%') && v.ends_with('%'))
        || (v.starts_with('<') && v.ends_with('>'))
        || ENV_READS.iter().any(|p| lower.starts_with(p))
        || STAND_INS.contains(&lower.as_str())
        || ["your_", "your-", "your "]
            .iter()
            .any(|p| lower.starts_with(p))
        || is_mask(v)
}

/// `***`, `xxxx`, `....`, `•••`, `…`: a masking character, repeated at least three
/// times (`…` alone counts; a lone `x` is a value).
fn is_mask(v: &str) -> bool {
    let mut chars = v.chars();
    let first = chars.next();
    let masking = matches!(
        first,
        Some('*' | 'x' | 'X' | '.' | '#' | '-' | '_' | '?' | '•' | '…')
    );
    masking && (v == "…" || v.chars().count() >= 3) && chars.all(|c| Some(c) == first)
}

/// True for an unquoted value that is code or a word, not a secret: a type or literal
/// keyword (`string;`, `null`, `Option<String>`), a common word (`see the docs`), a
/// call (`getpass()`), a member path (`form.password`, `self.token`) or a variable
/// named after a secret (`password=api_key`).
pub(crate) fn is_code_or_word(v: &str) -> bool {
    const KEYWORDS: &[&str] = &[
        "null",
        "nil",
        "none",
        "undefined",
        "true",
        "false",
        "string",
        "str",
        "number",
        "int",
        "integer",
        "bool",
        "boolean",
        "any",
        "unknown",
        "bytes",
        "object",
        "text",
        "varchar",
        "char",
        "option",
        "optional",
        "secretstr",
        "secretstring",
        "void",
        "never",
        "required",
        // ordinary words after `Token:` or `API key:` in prose
        "the",
        "a",
        "an",
        "your",
        "my",
        "our",
        "their",
        "see",
        "not",
        "in",
        "from",
        "this",
        "that",
        "here",
        "below",
        "above",
        "same",
        "missing",
        "invalid",
        "expired",
        "empty",
        "unset",
        "set",
    ];
    let ident_len = v
        .bytes()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == b'_')
        .count();
    let (ident, rest) = v.split_at(ident_len);
    let typed = rest.is_empty() || rest.starts_with(['[', '<', '|', '?', '(']);
    if typed && KEYWORDS.contains(&ident.to_ascii_lowercase().as_str()) {
        return true;
    }
    if v.contains('(') {
        return true;
    }
    if is_member_path(v) {
        return true;
    }
    let plain_ident = rest.is_empty() && !ident.is_empty();
    plain_ident && (words(ident).len() > 1 || ident_is_secret_word(ident)) && is_secret_name(ident)
}

fn ident_is_secret_word(ident: &str) -> bool {
    ["password", "passwd", "passphrase", "secret", "token"]
        .iter()
        .any(|w| ident.eq_ignore_ascii_case(w))
}

/// `form.password`, `self.token`, `std::env::var`, `config?.apiKey`: two or more
/// identifiers joined by `.`, `?.`, `::` or `->`, with no digit anywhere (a digit makes
/// `Pa55.word` look like a password rather than code).
fn is_member_path(v: &str) -> bool {
    if v.bytes().any(|c| c.is_ascii_digit()) {
        return false;
    }
    let normalized = v.replace("?.", ".").replace("::", ".").replace("->", ".");
    let mut parts = 0;
    for part in normalized.split('.') {
        let mut bytes = part.bytes();
        let head_ok = bytes
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_' || c == b'$');
        if !head_ok || !bytes.all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'$') {
            return false;
        }
        parts += 1;
    }
    parts >= 2
}

/// True when a value found in prose looks generated rather than like a word: 6 to 256
/// characters, a letter, and a digit (or upper, lower and a symbol together), and not
/// a placeholder or code. `Hunter2!` and `Summer2026` do; `yesterday`,
/// `refreshToken` and `200000` do not.
pub(crate) fn looks_generated(v: &str) -> bool {
    let n = v.chars().count();
    if !(6..=256).contains(&n) || v.chars().any(char::is_whitespace) {
        return false;
    }
    let letter = v.chars().any(char::is_alphabetic);
    let digit = v.chars().any(char::is_numeric);
    let upper = v.chars().any(char::is_uppercase);
    let lower = v.chars().any(char::is_lowercase);
    let symbol = v.bytes().any(|c| c.is_ascii_punctuation());
    letter && (digit || (upper && lower && symbol)) && !is_placeholder(v) && !is_code_or_word(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn val(s: &str, stop: Stop) -> Option<&str> {
        Values::new(s)
            .at(0, stop, false)
            .map(|f| &s[f.start..f.end])
    }

    #[test]
    fn value_extents() {
        assert_eq!(val("hunter2 rest", Stop::Assign), Some("hunter2"));
        assert_eq!(
            val("\"correct horse\", x", Stop::Assign),
            Some("correct horse")
        );
        assert_eq!(val("'a\\'b' c", Stop::Assign), Some("a\\'b"));
        assert_eq!(val("\\\"abc\\\"}", Stop::Assign), Some("abc"));
        assert_eq!(val("abc&b=2", Stop::Query), Some("abc"));
        assert_eq!(val("abc&b=2", Stop::Assign), Some("abc&b=2"));
        assert_eq!(val("Hunter2! then", Stop::Prose), Some("Hunter2!"));
        assert_eq!(val("Tr0ub4dor&3.", Stop::Prose), Some("Tr0ub4dor&3"));
        assert_eq!(val("<your-secret> x", Stop::Assign), Some("<your-secret>"));
        assert_eq!(val("[redacted], x", Stop::Assign), Some("[redacted]"));
        assert_eq!(val("a[phone]b] x", Stop::Assign), Some("a[phone]b"));
        assert_eq!(
            val("\"unterminated rest", Stop::Assign),
            Some("unterminated")
        );
        assert_eq!(val(" x", Stop::Assign), None);
        assert_eq!(val("", Stop::Assign), None);
    }

    #[test]
    fn scheme_words_are_skipped() {
        let s = "Bearer abc123";
        let f = Values::new(s).at(0, Stop::Assign, true).unwrap();
        assert_eq!(&s[f.start..f.end], "abc123");
        let s = "Bearerabc";
        let f = Values::new(s).at(0, Stop::Assign, true).unwrap();
        assert_eq!(&s[f.start..f.end], "Bearerabc");
    }

    #[test]
    fn a_measured_run_answers_for_later_starts_inside_it() {
        let s = "ab:cd..:: x";
        let mut v = Values::new(s);
        let one = v.at(0, Stop::Assign, false).unwrap();
        assert_eq!(&s[one.start..one.end], "ab:cd");
        let two = v.at(3, Stop::Assign, false).unwrap();
        assert_eq!(&s[two.start..two.end], "cd");
        assert_eq!(v.at(6, Stop::Assign, false), None);
        let other = v.at(3, Stop::Prose, false).unwrap();
        assert_eq!(&s[other.start..other.end], "cd");
    }

    #[test]
    fn placeholders() {
        for v in [
            "",
            "${token}",
            "$OPENAI_API_KEY",
            "<your-secret>",
            "{{ secrets.X }}",
            "%API_KEY%",
            "process.env.KEY",
            "[redacted]",
            "x[email]",
            "****",
            "your_api_key",
        ] {
            assert!(is_placeholder(v), "{v}");
        }
        assert!(!is_placeholder("hunter2"));
    }

    #[test]
    fn code_and_words() {
        for v in [
            "string",
            "Option<String",
            "null",
            "form.password",
            "getpass()",
            "api_key",
            "password",
            "the",
        ] {
            assert!(is_code_or_word(v), "{v}");
        }
        for v in ["hunter2", "Pa55.word", "9f8e7d6c5b4a", "mysecretpassword"] {
            assert!(!is_code_or_word(v), "{v}");
        }
    }

    #[test]
    fn generated_looking() {
        for v in [
            "Hunter2!",
            "Tr0ub4dor&3",
            "Summer2026",
            "P@ss-Word",
            "Пароль2024",
        ] {
            assert!(looks_generated(v), "{v}");
        }
        for v in ["yesterday", "refreshToken", "200000", "abc1", "[redacted]"] {
            assert!(!looks_generated(v), "{v}");
        }
    }
}
