//! `secrets@1`: replaces credentials with `[redacted]` and keeps the sentence around
//! them. Runs on every string of every event above tier 0, so ordinary text must cost
//! little.
//!
//! It owns the order of work: one pre-check (a single regex of every literal a
//! secret's match must contain), then the rule families (`vendor`, `pem`, `context`)
//! report spans on the original text, merged and written once. It must not keep state
//! between calls, read files or clocks, or return an owned string when nothing
//! changed.

mod context;
mod pem;
mod vendor;

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;

use crate::spans::Spans;

/// Matches when `s` may hold a secret: one of the families' hint literals (the
/// context words case-insensitively). No match, no secret.
static MAY_HOLD_A_SECRET: LazyLock<Regex> = LazyLock::new(|| {
    let words: Vec<String> = context::HINTS.iter().map(|h| regex::escape(h)).collect();
    let literals: Vec<String> = vendor::hints()
        .chain([pem::HINT])
        .map(regex::escape)
        .collect();
    Regex::new(&format!(
        "(?i-u:{})|{}",
        words.join("|"),
        literals.join("|")
    ))
    .expect("pre-check regex")
});

/// True when `s` contains a literal some rule of `secrets@1` needs.
pub(crate) fn may_hold_a_secret(s: &str) -> bool {
    MAY_HOLD_A_SECRET.is_match(s)
}

/// `secrets@1` on one string.
pub(crate) fn redact(s: &str) -> Cow<'_, str> {
    if !may_hold_a_secret(s) {
        return Cow::Borrowed(s);
    }
    let mut spans = Spans::new();
    vendor::collect(s, &mut spans);
    pem::collect(s, &mut spans);
    context::collect(s, &mut spans);
    spans.apply(s)
}

#[cfg(test)]
mod scratch_timing {
    use super::*;
    #[test]
    #[ignore]
    fn families() {
        let s = std::fs::read_to_string("/tmp/stdout.txt").unwrap();
        let t = |label: &str, f: &dyn Fn()| {
            let st = std::time::Instant::now();
            for _ in 0..20000 {
                f();
            }
            let secs = st.elapsed().as_secs_f64();
            println!(
                "{label:<12} {:>8.1} MB/s",
                s.len() as f64 * 20000.0 / secs / 1e6
            );
        };
        t("trigger", &|| {
            std::hint::black_box(may_hold_a_secret(&s));
        });
        t("vendor", &|| {
            let mut sp = Spans::new();
            vendor::collect(&s, &mut sp);
            std::hint::black_box(sp);
        });
        t("pem", &|| {
            let mut sp = Spans::new();
            pem::collect(&s, &mut sp);
            std::hint::black_box(sp);
        });
        t("context", &|| {
            let mut sp = Spans::new();
            context::collect(&s, &mut sp);
            std::hint::black_box(sp);
        });
        t("all", &|| {
            std::hint::black_box(redact(&s));
        });
        let clean = s
            .replace("token", "tkn")
            .replace("key", "kye")
            .replace("Key", "kye")
            .replace("pass", "pss");
        let st = std::time::Instant::now();
        for _ in 0..20000 {
            std::hint::black_box(redact(&clean));
        }
        println!(
            "clean all {:>8.1} MB/s",
            clean.len() as f64 * 20000.0 / st.elapsed().as_secs_f64() / 1e6
        );
    }
}
