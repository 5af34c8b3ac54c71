//! PEM private key blocks of `secrets@1`: `-----BEGIN … PRIVATE KEY-----` through its
//! `-----END … PRIVATE KEY-----`, or, when the text was cut off, through the last
//! line of key material.
//!
//! It owns a hand-written, single-pass scanner (a regex only finds the header, so an
//! unterminated 200 000-character body costs one walk). It must not touch public keys or
//! certificates, and it leaves a bare header with no key material after it (a
//! mention such as `grep '-----BEGIN RSA PRIVATE KEY-----'`) alone.

use std::sync::LazyLock;

use regex::Regex;

use crate::spans::Spans;
use crate::values::REDACTED;

const BEGIN: &str = "-----BEGIN ";
const DASHES: &str = "-----";
/// The longest label between `BEGIN ` and `-----` looked at.
const MAX_LABEL: usize = 64;
/// How much key material an unterminated block needs before it counts.
const MIN_BODY: usize = 16;

/// `BEGIN` as a regex: a prebuilt substring searcher, cheaper per call than
/// `str::find`, which builds one for every search.
static BEGIN_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(&regex::escape(BEGIN)).expect("pem regex"));

/// Records every private key block in `s`.
pub(super) fn collect(s: &str, spans: &mut Spans) {
    let mut from = 0;
    while let Some(m) = BEGIN_RE.find_at(s, from) {
        let start = m.start();
        match block_end(s, start) {
            Some(end) => {
                spans.push(start, end, REDACTED);
                from = end;
            }
            None => from = start + BEGIN.len(),
        }
    }
}

/// The end of the private key block whose header starts at `start`, or `None` when
/// the header is not a private key's or no key material follows it.
fn block_end(s: &str, start: usize) -> Option<usize> {
    let after_begin = start + BEGIN.len();
    let label_len = dashes_within(s, after_begin)?;
    let label = &s[after_begin..after_begin + label_len];
    if !is_private_label(label) {
        return None;
    }
    let body_start = after_begin + label_len + DASHES.len();
    let b = s.as_bytes();
    let mut i = body_start;
    let mut last_material = body_start;
    let mut material = 0;
    let mut line_start = true;
    while i < b.len() {
        let rest = &s[i..];
        if rest.starts_with("-----END ") {
            return Some(end_of_footer(s, i).unwrap_or(last_material));
        }
        let c = b[i];
        if c == b'\n' || c == b'\r' {
            line_start = true;
            i += 1;
            continue;
        }
        if c == b'\\' && matches!(b.get(i + 1), Some(b'n' | b'r' | b't')) {
            // An escaped newline, as in a JSON or .env string holding the key.
            line_start = true;
            i += 2;
            continue;
        }
        if line_start && is_header_line(rest) {
            i += rest.find(['\n', '\\']).unwrap_or(rest.len());
            continue;
        }
        if c == b' ' || c == b'\t' {
            i += 1;
            continue;
        }
        if !(c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'=')) {
            break;
        }
        line_start = false;
        material += 1;
        i += 1;
        last_material = i;
    }
    (material >= MIN_BODY).then_some(last_material)
}

/// `RSA PRIVATE KEY`, `OPENSSH PRIVATE KEY`, `ENCRYPTED PRIVATE KEY`,
/// `PGP PRIVATE KEY BLOCK`, `PRIVATE KEY`.
fn is_private_label(label: &str) -> bool {
    label.contains("PRIVATE KEY") && label.bytes().all(|c| c.is_ascii_uppercase() || c == b' ')
}

/// RFC 1421 headers inside an encrypted block (`Proc-Type: 4,ENCRYPTED`).
fn is_header_line(rest: &str) -> bool {
    ["Proc-Type:", "DEK-Info:", "Version:", "Comment:"]
        .iter()
        .any(|h| rest.starts_with(h))
}

/// The end of a `-----END …-----` footer starting at `i`.
fn end_of_footer(s: &str, i: usize) -> Option<usize> {
    let label_start = i + "-----END ".len();
    let n = dashes_within(s, label_start)?;
    Some(label_start + n + DASHES.len())
}

/// How far after `from` the next `-----` starts, looking at most `MAX_LABEL` bytes
/// ahead (so a run of headers without dashes costs no rescans).
fn dashes_within(s: &str, from: usize) -> Option<usize> {
    let end = s.len().min(from + MAX_LABEL + DASHES.len());
    s.as_bytes()[from..end]
        .windows(DASHES.len())
        .position(|w| w == DASHES.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(s: &str) -> String {
        let mut sp = Spans::new();
        collect(s, &mut sp);
        sp.apply(s).into_owned()
    }

    const BODY: &str = "MIIEpAIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun";

    #[test]
    fn a_whole_block_goes() {
        let s = format!(
            "key:\n-----BEGIN RSA PRIVATE KEY-----\n{BODY}\n{BODY}\n-----END RSA PRIVATE KEY-----\ndone"
        );
        assert_eq!(run(&s), "key:\n[redacted]\ndone");
    }

    #[test]
    fn a_cut_off_block_goes_up_to_its_last_material() {
        let s = format!("-----BEGIN PRIVATE KEY-----\n{BODY}\n{BODY}\n");
        assert_eq!(run(&s), "[redacted]\n");
        let s = format!("-----BEGIN PRIVATE KEY-----\n{BODY} … [truncated]");
        assert_eq!(run(&s), "[redacted] … [truncated]");
    }

    #[test]
    fn escaped_newlines_and_encryption_headers() {
        let s = format!(
            "{{\"k\":\"-----BEGIN EC PRIVATE KEY-----\\nProc-Type: 4,ENCRYPTED\\n{BODY}\\n-----END EC PRIVATE KEY-----\\n\"}}"
        );
        assert_eq!(run(&s), "{\"k\":\"[redacted]\\n\"}");
    }

    #[test]
    fn public_material_and_bare_mentions_stay() {
        for s in [
            format!("-----BEGIN PUBLIC KEY-----\n{BODY}\n-----END PUBLIC KEY-----"),
            format!("-----BEGIN CERTIFICATE-----\n{BODY}"),
            "grep '-----BEGIN RSA PRIVATE KEY-----' -r .".to_string(),
            "-----BEGIN ".to_string(),
        ] {
            assert_eq!(run(&s), s);
        }
    }
}
