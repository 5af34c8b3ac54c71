//! Replacement spans: the rules report byte ranges of the input to replace, and this
//! module merges them and writes the output once.
//!
//! It owns overlap handling (a vendor token inside an assignment's value becomes one
//! replacement, not two), the `Cow::Borrowed` guarantee when nothing changes, and
//! what keeps the rules idempotent: the facts about replacement text every rule
//! needs (`follows_replacement`) and the repeat-until-stable driver
//! (`to_fixed_point`). It must not decide what is sensitive: that is the rules'
//! business.

use std::borrow::Cow;

/// One byte range of the input and the text that replaces it.
#[derive(Debug, Clone, Copy)]
struct Span {
    start: usize,
    end: usize,
    with: &'static str,
}

/// The replacements found in one string, in any order, possibly overlapping.
#[derive(Debug, Default)]
pub(crate) struct Spans {
    v: Vec<Span>,
}

impl Spans {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Records that `start..end` (byte offsets on char boundaries) becomes `with`.
    /// Empty ranges are ignored.
    pub(crate) fn push(&mut self, start: usize, end: usize, with: &'static str) {
        if start < end {
            self.v.push(Span { start, end, with });
        }
    }

    /// Writes `s` with every recorded range replaced. Overlapping ranges become one
    /// replacement (the text of the one that starts first); touching ranges with the
    /// same replacement merge too, so a rule never produces `[redacted][redacted]`.
    pub(crate) fn apply(mut self, s: &str) -> Cow<'_, str> {
        if self.v.is_empty() {
            return Cow::Borrowed(s);
        }
        self.v
            .sort_unstable_by(|a, b| a.start.cmp(&b.start).then(b.end.cmp(&a.end)));
        let mut out = String::with_capacity(s.len());
        let mut at = 0;
        let mut cur = self.v[0];
        for next in &self.v[1..] {
            let overlaps = next.start < cur.end;
            let touches = next.start == cur.end && next.with == cur.with;
            if overlaps || touches {
                cur.end = cur.end.max(next.end);
            } else {
                write_one(s, &mut out, &mut at, cur);
                cur = *next;
            }
        }
        write_one(s, &mut out, &mut at, cur);
        out.push_str(&s[at..]);
        if out == s {
            Cow::Borrowed(s)
        } else {
            Cow::Owned(out)
        }
    }
}

/// The most passes of a rule over one string (see `to_fixed_point`).
const MAX_PASSES: usize = 4;

/// Applies `once` to `s`, then again to its output while that changes it, at most
/// `MAX_PASSES` times in all, which makes the rule idempotent. On real text the second
/// pass finds nothing (the rules are built to be fixed points of themselves, and the
/// tests check it on the vectors); on adversarial text one replacement can remove what
/// kept another match from forming (an email glued to a phone number's last digits),
/// and the next pass takes that too. Each pass that changes something replaces at
/// least one character no replacement wrote, so the passes converge: in a fuzz of a
/// million garbage strings, 2 of the 170 000 the first pass changed changed again on
/// the second (and five million all ended stable). The bound only caps the cost.
/// Strings a rule leaves alone pay nothing.
pub(crate) fn to_fixed_point<'a>(s: &'a str, once: impl Fn(&str) -> Cow<'_, str>) -> Cow<'a, str> {
    let Cow::Owned(mut out) = once(s) else {
        return Cow::Borrowed(s);
    };
    for _ in 1..MAX_PASSES {
        match once(&out) {
            Cow::Borrowed(_) => break,
            Cow::Owned(next) => out = next,
        }
    }
    Cow::Owned(out)
}

/// True for the last byte of a replacement (`~`, `[email]`, `[redacted]`). A match
/// glued to one was glued to the text it replaced (which ends in a letter or digit),
/// so rules treat it as glued on a second pass too, and stay idempotent, alone and
/// one after the other.
pub(crate) fn is_replacement_end(c: u8) -> bool {
    matches!(c, b'~' | b']')
}

/// True for the first byte of a replacement (`[email]`, `[phone]`, `[redacted]`).
pub(crate) fn is_replacement_start(c: u8) -> bool {
    c == b'['
}

/// True when the text before byte `pos` of `s` ends a replacement (see
/// `is_replacement_end`): a match starting at `pos` is glued to it.
pub(crate) fn follows_replacement(s: &str, pos: usize) -> bool {
    pos > 0 && is_replacement_end(s.as_bytes()[pos - 1])
}

fn write_one(s: &str, out: &mut String, at: &mut usize, span: Span) {
    out.push_str(&s[*at..span.start]);
    out.push_str(span.with);
    *at = span.end;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_recorded_borrows() {
        assert!(matches!(Spans::new().apply("abc"), Cow::Borrowed("abc")));
    }

    #[test]
    fn overlapping_and_touching_spans_merge() {
        let mut sp = Spans::new();
        sp.push(2, 5, "[x]");
        sp.push(4, 7, "[x]");
        sp.push(7, 8, "[x]");
        sp.push(9, 9, "[x]");
        assert_eq!(sp.apply("0123456789"), "01[x]89");
    }

    #[test]
    fn touching_spans_of_different_kinds_stay_apart() {
        let mut sp = Spans::new();
        sp.push(0, 2, "[a]");
        sp.push(2, 4, "[b]");
        assert_eq!(sp.apply("0123"), "[a][b]");
    }

    /// Drops the first of two leading `a`s: one step of a rule that needs passes.
    fn step(s: &str) -> Cow<'_, str> {
        match s.strip_prefix('a') {
            Some(rest) if rest.starts_with('a') => Cow::Owned(rest.to_string()),
            _ => Cow::Borrowed(s),
        }
    }

    #[test]
    fn passes_repeat_until_nothing_changes() {
        assert_eq!(to_fixed_point("aaaab", step), "ab");
        assert!(matches!(to_fixed_point("ab", step), Cow::Borrowed("ab")));
        // The bound: four passes at most, each dropping one `a`.
        assert_eq!(to_fixed_point(&"a".repeat(10), step), "a".repeat(6));
    }

    #[test]
    fn replacing_with_the_same_text_borrows() {
        let mut sp = Spans::new();
        sp.push(1, 2, "b");
        assert!(matches!(sp.apply("abc"), Cow::Borrowed(_)));
    }
}
