//! Vendor token shapes of `secrets@1`: credentials recognisable by their own form
//! (`ghp_…`, `sk-…`, `AKIA…`, JWTs, webhook URLs), wherever they appear.
//!
//! It owns the table of shapes, the regexes built from it (linear time: one combined
//! regex whose literal prefilter skips ordinary text, plus one per shape without a
//! literal start) and the check that keeps placeholders such as
//! `sk-xxxxxxxxxxxxxxxxxxxx` out. It must not look at names or sentences around a
//! token (`context` does) nor at private key blocks (`pem` does).

use std::sync::LazyLock;

use regex::Regex;

use crate::spans::{Spans, follows_replacement};
use crate::values::REDACTED;

/// What a matched token must also contain to count (placeholders like `sk-your-key`
/// have the shape but no randomness).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    /// The shape is specific enough.
    Shape,
    /// A letter and a digit after the lead.
    Alnum,
    /// Upper case, lower case and a digit after the lead.
    Mixed,
}

/// One vendor token shape.
struct Shape {
    /// Regex of the whole token; non-capturing groups only. The combined regex puts
    /// an ASCII word boundary in front of every shape.
    pattern: &'static str,
    /// Literal starts of a match, used to tell which shape matched.
    leads: &'static [&'static str],
    check: Check,
    /// For URLs: the text up to and including the first of these stays
    /// (`https://hooks.slack.com/services/[redacted]`).
    keep: &'static [&'static str],
    /// Searched by a regex of its own. Set for a shape without a literal start, which
    /// would deny the combined regex its literal prefilter.
    alone: bool,
}

/// A shape; `_vendor` names its issuer.
const fn shape(
    _vendor: &'static str,
    pattern: &'static str,
    leads: &'static [&'static str],
    check: Check,
) -> Shape {
    Shape {
        pattern,
        leads,
        check,
        keep: &[],
        alone: false,
    }
}

impl Shape {
    const fn keep(mut self, keep: &'static [&'static str]) -> Self {
        self.keep = keep;
        self
    }

    const fn alone(mut self) -> Self {
        self.alone = true;
        self
    }
}

const WEBHOOK_PATHS: &[&str] = &["/services/", "/workflows/", "/triggers/", "/webhooks/"];

static SHAPES: &[Shape] = &[
    shape(
        "GitHub",
        r"gh[pousr]_[A-Za-z0-9]{30,}",
        &["ghp_", "gho_", "ghu_", "ghs_", "ghr_"],
        Check::Alnum,
    ),
    shape(
        "GitHub fine-grained",
        r"github_pat_[A-Za-z0-9_]{22,}",
        &["github_pat_"],
        Check::Alnum,
    ),
    shape(
        "GitLab",
        r"gl(?:pat|dt|rt|ptt|cbt|oas|soat|ft|imt)-[A-Za-z0-9_-]{20,}",
        &[
            "glpat-", "gldt-", "glrt-", "glptt-", "glcbt-", "gloas-", "glsoat-", "glft-", "glimt-",
        ],
        Check::Alnum,
    ),
    shape(
        "Slack",
        r"xox[abposre]-[A-Za-z0-9-]{10,}",
        &[
            "xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxs-", "xoxr-", "xoxe-",
        ],
        Check::Alnum,
    ),
    shape(
        "Slack app",
        r"xapp-[0-9]-[A-Za-z0-9-]{10,}",
        &["xapp-"],
        Check::Alnum,
    ),
    // From the host on: `https://` starts every URL, a poor prefilter.
    shape(
        "Slack webhook",
        r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/-]{8,}",
        &["hooks.slack.com/"],
        Check::Shape,
    )
    .keep(WEBHOOK_PATHS),
    shape(
        "Discord webhook",
        r"(?:(?:canary|ptb)\.)?discord(?:app)?\.com/api/webhooks/[0-9]{5,}/[A-Za-z0-9_-]{20,}",
        &["discord", "canary.discord", "ptb.discord"],
        Check::Shape,
    )
    .keep(WEBHOOK_PATHS),
    // OpenAI, Anthropic and others: `sk-`, `sk-proj-`, `sk-ant-api03-`.
    shape("sk- keys", r"sk-[A-Za-z0-9_-]{20,}", &["sk-"], Check::Mixed),
    shape(
        "Stripe",
        r"[sr]k_(?:live|test)_[A-Za-z0-9]{10,}",
        &["sk_live_", "sk_test_", "rk_live_", "rk_test_"],
        Check::Alnum,
    ),
    shape(
        "webhook signing secret",
        r"whsec_[A-Za-z0-9+/=]{20,}",
        &["whsec_"],
        Check::Alnum,
    ),
    shape(
        "Google API key",
        r"AIza[A-Za-z0-9_-]{35,}",
        &["AIza"],
        Check::Shape,
    ),
    shape(
        "Google OAuth token",
        r"ya29\.[A-Za-z0-9_-]{20,}",
        &["ya29."],
        Check::Shape,
    ),
    // Refresh tokens, in `.json` credential files and env files: `1//0` and about a
    // hundred base64url characters. The lead is a literal, so this stays in the
    // combined regex, and it must come before the Telegram shape, whose digit leads
    // would claim a match that starts with `1`. The word boundary in front keeps
    // `v1//0…` paths out; the length and the check keep `1//0` (floor division by
    // zero) and slugs such as `1//0-intro-to-oauth-scopes` out.
    shape(
        "Google OAuth refresh token",
        r"1//0[A-Za-z0-9_-]{30,}",
        &["1//0"],
        Check::Mixed,
    ),
    shape(
        "Google OAuth client secret",
        r"GOCSPX-[A-Za-z0-9_-]{20,}",
        &["GOCSPX-"],
        Check::Shape,
    ),
    // Access key ids (long-term, temporary, and the two service-specific kinds);
    // user, role and group ids (`AIDA`, `AROA`, `AGPA`) are not credentials.
    shape(
        "AWS access key id",
        r"(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?-u:\b)",
        &["AKIA", "ASIA", "ABIA", "ACCA"],
        Check::Shape,
    ),
    shape("xAI", r"xai-[A-Za-z0-9]{20,}", &["xai-"], Check::Alnum),
    shape("Groq", r"gsk_[A-Za-z0-9]{20,}", &["gsk_"], Check::Alnum),
    shape(
        "Perplexity",
        r"pplx-[A-Za-z0-9]{20,}",
        &["pplx-"],
        Check::Alnum,
    ),
    shape(
        "Hugging Face",
        r"hf_[A-Za-z0-9]{30,}",
        &["hf_"],
        Check::Alnum,
    ),
    shape(
        "Pinecone",
        r"pcsk_[A-Za-z0-9_]{20,}",
        &["pcsk_"],
        Check::Alnum,
    ),
    shape("npm", r"npm_[A-Za-z0-9]{36,}", &["npm_"], Check::Alnum),
    shape("PyPI", r"pypi-[A-Za-z0-9_-]{40,}", &["pypi-"], Check::Alnum),
    shape(
        "SendGrid",
        r"SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}",
        &["SG."],
        Check::Shape,
    ),
    shape(
        "Shopify",
        r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32,}",
        &["shpat_", "shpca_", "shppa_", "shpss_"],
        Check::Shape,
    ),
    shape(
        "DigitalOcean",
        r"do[opr]_v1_[a-f0-9]{64}",
        &["doo_v1_", "dop_v1_", "dor_v1_"],
        Check::Shape,
    ),
    shape(
        "Linear",
        r"lin_(?:api|oauth)_[A-Za-z0-9]{32,}",
        &["lin_api_", "lin_oauth_"],
        Check::Alnum,
    ),
    shape(
        "Notion",
        r"(?:secret_[A-Za-z0-9]{43}|ntn_[A-Za-z0-9]{40,})",
        &["secret_", "ntn_"],
        Check::Alnum,
    ),
    shape(
        "Supabase",
        r"(?:sbp_[a-f0-9]{40,}|sb_secret_[A-Za-z0-9_-]{20,})",
        &["sbp_", "sb_secret_"],
        Check::Alnum,
    ),
    shape(
        "Figma",
        r"figd_[A-Za-z0-9_-]{30,}",
        &["figd_"],
        Check::Alnum,
    ),
    shape(
        "Doppler",
        r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{30,}",
        &["dp."],
        Check::Alnum,
    ),
    // Granola's API keys (`Authorization: Bearer grn_…`); their length is not
    // published, so any run of 20 or more; a placeholder without a digit
    // (`grn_your_granola_api_key_here`) stays.
    shape(
        "Granola",
        r"grn_[A-Za-z0-9_-]{20,}",
        &["grn_"],
        Check::Alnum,
    ),
    // `ss_` and at least 32 lower-case hex digits (the vectors use 48), ending at a
    // word's end: `ss_id`, `class_ss_x` and a hex run that goes on as a word stay.
    shape(
        "spacesheep",
        r"ss_[0-9a-f]{32,}(?-u:\b)",
        &["ss_"],
        Check::Alnum,
    ),
    shape(
        "Telegram bot",
        r"[0-9]{8,10}:AA[A-Za-z0-9_-]{30,}",
        &["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"],
        Check::Shape,
    )
    .alone(),
    shape(
        "JWT",
        r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*",
        &["eyJ"],
        Check::Shape,
    ),
];

/// The shapes with a literal start in one regex, `\b(?:shape1|shape2|…)`
/// (leftmost-first), then one regex per `alone` shape.
static TOKENS: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    let compile = |group: Vec<&Shape>| {
        let alternation: Vec<String> = group.iter().map(|s| format!("(?:{})", s.pattern)).collect();
        Regex::new(&format!(r"(?-u:\b)(?:{})", alternation.join("|"))).expect("vendor regex")
    };
    let (alone, together): (Vec<&Shape>, Vec<&Shape>) = SHAPES.iter().partition(|s| s.alone);
    std::iter::once(together)
        .chain(alone.into_iter().map(|s| vec![s]))
        .map(compile)
        .collect()
});

/// Records every vendor token in `s`.
pub(super) fn collect(s: &str, spans: &mut Spans) {
    for m in TOKENS.iter().flat_map(|re| re.find_iter(s)) {
        if follows_replacement(s, m.start()) {
            continue;
        }
        let text = m.as_str();
        let Some(shape) = SHAPES
            .iter()
            .find(|sh| sh.leads.iter().any(|l| text.starts_with(l)))
        else {
            continue;
        };
        let lead = shape
            .leads
            .iter()
            .filter(|l| text.starts_with(*l))
            .map(|l| l.len())
            .max()
            .unwrap_or(0);
        if !passes(shape.check, &text[lead..]) {
            continue;
        }
        let kept = shape
            .keep
            .iter()
            .filter_map(|k| text.find(k).map(|i| i + k.len()))
            .min()
            .unwrap_or(0);
        spans.push(m.start() + kept, m.end(), REDACTED);
    }
}

fn passes(check: Check, body: &str) -> bool {
    let has = |f: fn(&u8) -> bool| body.as_bytes().iter().any(f);
    match check {
        Check::Shape => true,
        Check::Alnum => has(u8::is_ascii_digit) && has(u8::is_ascii_alphabetic),
        Check::Mixed => {
            has(u8::is_ascii_digit) && has(u8::is_ascii_uppercase) && has(u8::is_ascii_lowercase)
        }
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

    /// A token body like the vectors' generator makes: every character class.
    fn body(n: usize) -> String {
        let abc = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        (0..n)
            .map(|i| abc[(i * 7 + 3) % abc.len()] as char)
            .collect()
    }

    #[test]
    fn every_shape_has_a_lead() {
        for s in SHAPES {
            assert!(!s.leads.is_empty(), "{}", s.pattern);
        }
    }

    #[test]
    fn tokens_go_and_the_sentence_stays() {
        let cases = [
            format!("ghp_{}", body(36)),
            format!("sk-ant-api03-{}", body(60)),
            format!("xai-{}", body(40)),
            format!("hf_{}", body(34)),
            format!("AIza{}", body(35)),
            format!("GOCSPX-{}", body(28)),
            format!("glpat-{}", body(20)),
            format!("lin_api_{}", body(40)),
            format!("dp.pt.{}", body(43)),
            format!("SG.{}.{}", body(22), body(43)),
            format!("dop_v1_{}", "0a".repeat(32)),
        ];
        for tok in cases {
            assert_eq!(run(&format!("use {tok}.")), "use [redacted].", "{tok}");
        }
    }

    #[test]
    fn webhook_urls_keep_their_host_and_path_start() {
        let s = "post to https://hooks.slack.com/services/T000/B000/XXXXabcd1234 now";
        assert_eq!(
            run(s),
            "post to https://hooks.slack.com/services/[redacted] now"
        );
        let s = format!("https://discord.com/api/webhooks/123456789/{}", body(60));
        assert_eq!(run(&s), "https://discord.com/api/webhooks/[redacted]");
    }

    #[test]
    fn placeholders_with_a_vendor_prefix_stay() {
        for s in [
            "sk-xxxxxxxxxxxxxxxxxxxxxxxx",
            "sk-your-openai-key-goes-here",
            "ghp_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
            "task-manager-component-library-v2",
            "ghp_short",
        ] {
            assert_eq!(run(s), s);
        }
    }

    /// `n` characters of `abc` by the vectors' formula.
    fn body_of(n: usize, abc: &[u8]) -> String {
        (0..n)
            .map(|i| abc[(i * 7 + 3) % abc.len()] as char)
            .collect()
    }

    fn hex(n: usize) -> String {
        body_of(n, b"0123456789abcdef")
    }

    /// Base64url, as Google's tokens are.
    fn b64url(n: usize) -> String {
        body_of(
            n,
            b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_",
        )
    }

    fn all_stay(cases: &[String]) {
        for s in cases {
            assert_eq!(run(s), *s);
        }
    }

    #[test]
    fn granola_keys_go() {
        let key = format!("grn_{}", body(40));
        assert_eq!(run(&format!("use {key}.")), "use [redacted].");
        assert_eq!(
            run(&format!("curl -H 'Authorization: Bearer {key}' https://x")),
            "curl -H 'Authorization: Bearer [redacted]' https://x"
        );
        assert_eq!(
            run(&format!("GRANOLA_API_KEY={key}\n")),
            "GRANOLA_API_KEY=[redacted]\n"
        );
        let key = format!("grn_{}-{}_{}", body(12), body(8), body(9));
        assert_eq!(run(&format!("key {key} ok")), "key [redacted] ok");
    }

    #[test]
    fn granola_near_misses_stay() {
        all_stay(&[
            "grn_YOUR_API_KEY".into(),
            "grn_your_granola_api_key_goes_here".into(),
            format!("grn_{}", body(19)),
            format!("xgrn_{}", body(40)),
            format!("grn{}", body(40)),
            "Authorization: Bearer <grn_your-key>".into(),
            "GRANOLA_API_KEY=${GRANOLA_API_KEY}".into(),
        ]);
    }

    #[test]
    fn google_refresh_tokens_go() {
        let tok = format!("1//0{}", b64url(99));
        assert_eq!(
            run(&format!(
                r#"{{"access_token": "x", "refresh_token": "{tok}"}}"#
            )),
            r#"{"access_token": "x", "refresh_token": "[redacted]"}"#
        );
        assert_eq!(
            run(&format!("GOOGLE_REFRESH_TOKEN={tok}\nNEXT=1")),
            "GOOGLE_REFRESH_TOKEN=[redacted]\nNEXT=1"
        );
        assert_eq!(run(&format!("use {tok}.")), "use [redacted].");
        let short = format!("1//0{}", b64url(30));
        assert_eq!(run(&format!("({short})")), "([redacted])");
        // Beside a Telegram bot token, whose shape also starts with a digit.
        let bot = format!("123456789:AA{}", body(33));
        assert_eq!(run(&format!("{tok} {bot}")), "[redacted] [redacted]");
    }

    #[test]
    fn google_refresh_near_misses_stay() {
        all_stay(&[
            "python3 -c 'print(1//0)'".into(),
            "1//0 raises ZeroDivisionError; 7//2 is 3".into(),
            "a fraction 1//2 or 10//0".into(),
            "https://example.com/v1//0/items?page=2".into(),
            format!("https://example.com/v1//0{}", b64url(60)),
            format!("x1//0{}", b64url(60)),
            format!("1//0{}", b64url(29)),
            format!("1/0{}", b64url(60)),
            format!("1//1{}", b64url(60)),
            "1//0-introduction-to-oauth-refresh-tokens-and-scopes".into(),
            format!("1//0{}", "x".repeat(60)),
            "refresh_token: <your-refresh-token>".into(),
        ]);
    }

    #[test]
    fn spacesheep_keys_of_any_length_from_32_go() {
        for n in [32, 40, 48, 64, 96] {
            let key = format!("ss_{}", hex(n));
            assert_eq!(run(&format!("use {key}.")), "use [redacted].", "{n}");
            assert_eq!(
                run(&format!("SPACESHEEP_KEY=\"{key}\"")),
                "SPACESHEEP_KEY=\"[redacted]\"",
                "{n}"
            );
        }
    }

    #[test]
    fn spacesheep_near_misses_stay() {
        all_stay(&[
            "ss_id".into(),
            "class_ss_x".into(),
            "let ss_total = ss_a + ss_b;".into(),
            format!("ss_{}", hex(31)),
            format!("xss_{}", hex(48)),
            format!("class_ss_{}", hex(48)),
            format!("ss_{}xyz", hex(40)),
            format!("ss_{}", hex(48).to_uppercase()),
            format!("ss_{}", "0".repeat(48)),
            format!("ss_{}", "abcdef".repeat(8)),
            "api key: <your-ss_-key>, or ${SS_KEY}".into(),
        ]);
    }

    #[test]
    fn new_shapes_are_idempotent() {
        for tok in [
            format!("grn_{}", body(40)),
            format!("1//0{}", b64url(99)),
            format!("ss_{}", hex(48)),
        ] {
            let once = run(&format!("a {tok} b {tok}"));
            assert_eq!(once, "a [redacted] b [redacted]");
            assert_eq!(run(&once), once);
        }
    }

    #[test]
    fn a_prefix_inside_a_word_is_not_a_token() {
        let s = format!("xghp_{}", body(36));
        assert_eq!(run(&s), s);
    }
}
