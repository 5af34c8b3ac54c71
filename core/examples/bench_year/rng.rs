//! A small seeded generator (splitmix64) and the text the generated data is
//! made of: the benchmark's input is the same on every machine and every run.

use std::sync::OnceLock;

pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// From `lo` up to (not including) `hi`.
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo).max(1) as u64) as i64
    }

    /// Log-normal around `median` (`sigma` in natural-log units).
    pub fn lognormal(&mut self, median: f64, sigma: f64) -> f64 {
        let (u1, u2) = (self.unit().max(1e-12), self.unit());
        let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
        median * (sigma * z).exp()
    }

    /// A log-normal count, at least `min`, at most `max`.
    pub fn count(&mut self, median: f64, sigma: f64, min: u64, max: u64) -> u64 {
        (self.lognormal(median, sigma).round() as u64).clamp(min, max)
    }

    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len() as u64) as usize]
    }

    /// One of `xs` by weight.
    pub fn weighted<'a, T>(&mut self, xs: &'a [(T, u32)]) -> &'a T {
        let total: u32 = xs.iter().map(|(_, w)| w).sum();
        let mut at = self.below(u64::from(total)) as u32;
        for (x, w) in xs {
            if at < *w {
                return x;
            }
            at -= w;
        }
        &xs[xs.len() - 1].0
    }

    pub fn hex(&mut self, n: usize) -> String {
        let mut s = String::with_capacity(n);
        while s.len() < n {
            s.push_str(&format!("{:016x}", self.next()));
        }
        s.truncate(n);
        s
    }

    /// A random (version 4) UUID.
    pub fn uuid4(&mut self) -> String {
        let h = self.hex(32);
        format!(
            "{}-{}-4{}-{}{}-{}",
            &h[0..8],
            &h[8..12],
            &h[13..16],
            ["8", "9", "a", "b"][(self.below(4)) as usize],
            &h[17..20],
            &h[20..32]
        )
    }

    /// A time-ordered (version 7) UUID, as Codex names its threads.
    pub fn uuid7(&mut self, ms: i64) -> String {
        let t = format!("{:012x}", ms as u64 & 0xFFFF_FFFF_FFFF);
        let h = self.hex(20);
        format!(
            "{}-{}-7{}-{}{}-{}",
            &t[0..8],
            &t[8..12],
            &h[0..3],
            ["8", "9", "a", "b"][(self.below(4)) as usize],
            &h[3..6],
            &h[6..18]
        )
    }

    /// About `bytes` of words (code and prose), ASCII, lines of about 80.
    pub fn text(&mut self, bytes: usize) -> String {
        let corpus = corpus();
        let bytes = bytes.min(corpus.len() / 2).max(1);
        let start = self.below((corpus.len() - bytes) as u64) as usize;
        corpus[start..start + bytes].trim().to_string()
    }

    /// A sentence of `words` words.
    pub fn words(&mut self, words: usize) -> String {
        let mut s = String::new();
        for i in 0..words.max(1) {
            if i > 0 {
                s.push(' ');
            }
            s.push_str(self.pick::<&str>(WORDS));
        }
        s
    }
}

const WORDS: &[&str] = &[
    "the",
    "parser",
    "drops",
    "last",
    "line",
    "of",
    "every",
    "file",
    "when",
    "it",
    "ends",
    "without",
    "a",
    "newline",
    "fix",
    "test",
    "build",
    "outbox",
    "session",
    "event",
    "cursor",
    "sink",
    "retry",
    "backoff",
    "window",
    "index",
    "query",
    "schema",
    "migration",
    "column",
    "table",
    "row",
    "read",
    "write",
    "commit",
    "rollback",
    "transaction",
    "lock",
    "thread",
    "async",
    "await",
    "future",
    "tokio",
    "serde",
    "json",
    "value",
    "string",
    "vector",
    "map",
    "option",
    "result",
    "error",
    "panic",
    "unwrap",
    "match",
    "impl",
    "trait",
    "struct",
    "enum",
    "fn",
    "let",
    "mut",
    "pub",
    "crate",
    "module",
    "import",
    "export",
    "function",
    "return",
    "if",
    "else",
    "for",
    "while",
    "loop",
    "break",
    "continue",
    "and",
    "or",
    "not",
    "then",
    "also",
    "so",
    "because",
    "after",
    "before",
    "until",
    "each",
    "all",
    "some",
    "none",
    "one",
    "two",
    "three",
    "first",
    "next",
    "config",
    "settings",
    "token",
    "header",
    "request",
    "response",
    "status",
    "body",
    "route",
    "handler",
    "middleware",
    "client",
    "server",
    "socket",
    "port",
    "loopback",
    "daemon",
    "hook",
    "payload",
    "adapter",
    "harness",
    "transcript",
    "turn",
    "tool",
    "prompt",
    "answer",
    "agent",
    "model",
    "limit",
    "account",
    "pool",
    "usage",
    "percent",
    "reset",
    "clock",
    "time",
    "date",
    "format",
    "print",
    "log",
    "trace",
    "debug",
    "warn",
    "info",
    "check",
    "assert",
    "expect",
    "should",
    "would",
    "could",
    "must",
    "can",
    "will",
    "is",
    "are",
    "was",
    "be",
    "has",
    "have",
    "src/lib.rs",
    "src/main.rs",
    "Cargo.toml",
    "README.md",
    "tests/api.rs",
    "0",
    "1",
    "42",
    "{",
    "}",
    "(",
    ")",
    "=>",
    "->",
    "::",
    "&self",
    "Ok(())",
    "Some(x)",
    "None",
    "Vec<u8>",
    "&str",
];

fn corpus() -> &'static str {
    static CORPUS: OnceLock<String> = OnceLock::new();
    CORPUS.get_or_init(|| {
        let mut rng = Rng::new(7);
        let mut s = String::with_capacity(4 << 20);
        let mut line = 0;
        while s.len() < (4 << 20) {
            let w = rng.pick(WORDS);
            s.push_str(w);
            line += w.len() + 1;
            if line > 72 + rng.below(16) as usize {
                s.push('\n');
                if rng.chance(0.3) {
                    s.push_str("    ");
                }
                line = 0;
            } else {
                s.push(' ');
            }
        }
        s
    })
}
