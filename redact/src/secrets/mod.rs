//! `secrets@1`: replaces credentials with `[redacted]` and keeps the sentence around
//! them. Runs on every string of every event above tier 0, so ordinary text must cost
//! little.
//!
//! It owns the order of work and the fast path: each rule family (`vendor`, `pem`,
//! `context`) starts with a literal scan (the vendor regex's prefilter on the shapes'
//! starts, a substring search for `-----BEGIN `, the context gate), so ordinary text
//! costs a few scans at GB/s; the families report spans on the original text, merged
//! and written once. It must not keep state between calls, read files or clocks, or
//! return an owned string when nothing changed.

mod context;
mod pem;
mod vendor;

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;

use crate::spans::Spans;

/// The context rules' gate: one of these matches wherever a context rule could (a
/// name stem; a scheme word or `://`). Most strings that reach it hold no secret, and
/// the context rules are the slow ones. Two regexes, not one: the case-insensitive
/// stems alone are a small literal set the regex crate scans for with SIMD, and
/// adding the other literals would push it onto a much slower automaton.
static CONTEXT_GATE: LazyLock<[Regex; 2]> = LazyLock::new(|| {
    let literals: Vec<String> = context::hint_literals().map(regex::escape).collect();
    [context::NAME_STEMS.to_string(), literals.join("|")]
        .map(|p| Regex::new(&p).expect("gate regex"))
});

/// The length of the shortest text any rule redacts something in: `token=x` and
/// `x://:p@`. Shorter strings (`Bash`, `""`) skip every scan.
const SHORTEST: usize = 7;

/// `secrets@1` on one string.
pub(crate) fn redact(s: &str) -> Cow<'_, str> {
    if s.len() < SHORTEST {
        return Cow::Borrowed(s);
    }
    let mut spans = Spans::new();
    vendor::collect(s, &mut spans);
    pem::collect(s, &mut spans);
    if CONTEXT_GATE.iter().any(|re| re.is_match(s)) {
        context::collect(s, &mut spans);
    }
    spans.apply(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shortest_secrets_are_found() {
        assert_eq!(redact("token=x"), "token=[redacted]");
        assert_eq!(redact("x://:p@"), "x://:[redacted]@");
        assert!(matches!(redact("token"), Cow::Borrowed("token")));
        assert!(matches!(redact(""), Cow::Borrowed("")));
    }
}
