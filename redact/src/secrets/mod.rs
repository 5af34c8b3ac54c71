//! `secrets@1`: replaces credentials with `[redacted]` and keeps the sentence around
//! them. Runs on every string of every event above tier 0, so ordinary text must cost
//! little.
//!
//! It owns the order of work: each rule family (`vendor`, `pem`, `context`) runs only
//! when its gate, a literal scan for what every match of the family contains, finds
//! something; the families report spans on the original text, merged and written
//! once. It must not keep state between calls, read files or clocks, or return an
//! owned string when nothing changed.

mod context;
mod pem;
mod vendor;

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;

use crate::spans::Spans;

/// Literals per gate regex. The regex crate scans for a small set of literals with a
/// SIMD searcher (Teddy) at several GB/s and falls back to a much slower automaton
/// for large sets, so a gate's literals are split into small sets.
const LITERALS_PER_REGEX: usize = 16;

/// The context rules' gate: regexes one of which matches wherever a context rule
/// could (a name stem, a scheme word, `://`). Most strings that reach it are not
/// secrets, and the context rules are the slow ones.
static CONTEXT_GATE: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    let literals: Vec<String> = context::hint_literals().map(regex::escape).collect();
    std::iter::once(context::NAME_STEMS.to_string())
        .chain(literals.chunks(LITERALS_PER_REGEX).map(|c| c.join("|")))
        .map(|p| Regex::new(&p).expect("gate regex"))
        .collect()
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
    // Each a literal scan of its own: the vendor regex has a prefilter on the shapes'
    // starts, the key block scanner looks for `-----BEGIN `.
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
