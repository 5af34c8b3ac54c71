//! Micro benchmark: `secrets@1` and `pii@1` over the strings of a typical 2 KB hook
//! payload (a Claude Code PostToolUse for a Bash call), in MB/s of string bytes.
//!
//! Run with `cargo run --release -p sessionpipe-redact --example throughput`.
//! Criterion-free on purpose: it only prints numbers, it asserts nothing.

use std::borrow::Cow;
use std::hint::black_box;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// A tool output of ordinary build log and code: no secret, but the near-misses every
/// real output has (`token_count`, `primary_key`, `max_tokens`, a URL), so the context
/// rules run.
const STDOUT: &str = "\
   Compiling sessionpipe-core v0.1.0 (/Users/alice/code/sessionpipe/core)
warning: unused variable: `token_count`
  --> core/src/adapters/claude_code.rs:212:13
   |
212 |         let token_count = usage.input_tokens + usage.output_tokens;
   |             ^^^^^^^^^^^ help: if this is intentional, prefix it with an underscore
    Finished `dev` profile [unoptimized + debuginfo] target(s) in 14.21s
     Running unittests src/lib.rs (target/debug/deps/sessionpipe_core-5f1c2a9e)
running 48 tests
test adapters::claude_code::tests::maps_pre_tool_use ... ok
test adapters::claude_code::tests::maps_post_tool_use ... ok
test protocol::envelope::tests::rejects_unknown_version ... ok
test protocol::tiers::tests::drops_fields_above_the_tier ... ok
test outbox::tests::keys_are_unique_per_session ... ok
test outbox::tests::retries_back_off ... ok
test result: ok. 48 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out
fn primary_key(&self) -> String { format!(\"{}:{}\", self.session_id, self.seq) }
See https://docs.rs/regex/latest/regex/ for the syntax; cache at ~/.cargo/registry.
The max_tokens setting is 4096 and the model is claude-sonnet-4-5 (200000 context).
";

/// The same amount of output with nothing any rule looks for (a directory listing).
const CLEAN_STDOUT: &str = "\
total 96
drwxr-xr-x  14 alice  staff   448 Jan 15 10:02 .
drwxr-xr-x   9 alice  staff   288 Jan 12 18:40 ..
-rw-r--r--   1 alice  staff  1187 Jan 15 09:58 Cargo.toml
-rw-r--r--   1 alice  staff 10921 Jan 15 09:58 Cargo.lock
-rw-r--r--   1 alice  staff  2210 Jan 14 16:31 README.md
drwxr-xr-x   6 alice  staff   192 Jan 15 10:01 core
drwxr-xr-x   5 alice  staff   160 Jan 14 11:20 hook
drwxr-xr-x   6 alice  staff   192 Jan 15 10:02 redact
drwxr-xr-x   4 alice  staff   128 Jan 13 09:12 scripts
drwxr-xr-x   7 alice  staff   224 Jan 14 17:45 ui
drwxr-xr-x   5 alice  staff   160 Jan 15 08:30 e2e
drwxr-xr-x   3 alice  staff    96 Jan 12 18:40 conformance
drwxr-xr-x   5 alice  staff   160 Jan 13 15:05 testkit
drwxr-xr-x   8 alice  staff   256 Jan 15 09:47 target
-rw-r--r--   1 alice  staff   412 Jan 12 18:40 rustfmt.toml
-rw-r--r--   1 alice  staff  1067 Jan 12 18:40 LICENSE
-rw-r--r--   1 alice  staff    38 Jan 12 18:40 .gitignore
-rw-r--r--   1 alice  staff   112 Jan 13 10:10 .editorconfig
";

/// A PostToolUse payload shaped like the recorded Claude Code ones (about 2 KB).
fn payload() -> Value {
    json!({
        "session_id": "ed6c7665-589f-40c7-b7b4-e38ee662b7bc",
        "transcript_path": "/Users/alice/.claude/projects/-Users-alice-code-sessionpipe/ed6c7665-589f-40c7-b7b4-e38ee662b7bc.jsonl",
        "cwd": "/Users/alice/code/sessionpipe",
        "prompt_id": "5e6e20e7-82a4-4865-8967-b2c9adae76c4",
        "permission_mode": "default",
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {
            "command": "cargo test -p sessionpipe-core 2>&1 | tail -40",
            "description": "Run the core crate's tests and show the summary"
        },
        "tool_response": {
            "stdout": STDOUT,
            "stderr": "",
            "interrupted": false,
            "isImage": false
        },
        "tool_use_id": "toolu_013DRPrVtDMVkX2NHpLV2vSf",
        "duration_ms": 14466
    })
}

/// Every string value of `v` (what `map_strings` hands the rule).
fn strings(v: &Value) -> Vec<String> {
    let mut copy = v.clone();
    let out = std::cell::RefCell::new(Vec::new());
    sessionpipe_redact::map_strings(&mut copy, &|s| {
        out.borrow_mut().push(s.to_string());
        Cow::Borrowed(s)
    });
    out.into_inner()
}

/// Runs `f` over every string of `v`, in rounds of about 50 ms for about a second,
/// and prints the best round's MB/s (the machine may be busy; the best round is the
/// least disturbed one).
fn measure(label: &str, v: &Value, f: &dyn Fn(&str) -> Cow<'_, str>) {
    let strings = strings(v);
    let bytes: usize = strings.iter().map(String::len).sum();
    let mut best = f64::INFINITY;
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(1) {
        let round = Instant::now();
        let mut runs = 0u32;
        while round.elapsed() < Duration::from_millis(50) {
            for s in &strings {
                black_box(f(black_box(s)));
            }
            runs += 1;
        }
        best = best.min(round.elapsed().as_secs_f64() / f64::from(runs));
    }
    println!(
        "{label:<26} {:>8.1} MB/s  ({:.2} µs per payload: {} strings, {bytes} bytes)",
        bytes as f64 / best / 1e6,
        best * 1e6,
        strings.len(),
    );
}

fn main() {
    let v = payload();
    let json_len = serde_json::to_string(&v).map_or(0, |s| s.len());
    println!("payload: {json_len} bytes of JSON");
    measure("secrets@1", &v, &sessionpipe_redact::secrets);
    measure("pii@1", &v, &|s| {
        sessionpipe_redact::pii(s, Some("/Users/alice"))
    });
    let with_secret = {
        let mut v = v.clone();
        v["tool_input"]["command"] = json!(
            "curl -H 'Authorization: Bearer abcDEF123456ghiJKL' https://api.x/v1 && export DB_PASSWORD=hunter2"
        );
        v
    };
    measure(
        "secrets@1 (with secrets)",
        &with_secret,
        &sessionpipe_redact::secrets,
    );
    let clean = {
        let mut v = v.clone();
        v["tool_response"]["stdout"] = json!(CLEAN_STDOUT);
        v
    };
    measure(
        "secrets@1 (no near-miss)",
        &clean,
        &sessionpipe_redact::secrets,
    );
}
