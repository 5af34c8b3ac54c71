//! Micro benchmark: `secrets@1` and `pii@1` over the strings of a typical 2 KB hook
//! payload (a Claude Code PostToolUse for a Bash call), in MB/s of string bytes.
//!
//! Run with `cargo run --release -p sessionpipe-redact --example throughput`.
//! Criterion-free on purpose: it only prints numbers, it asserts nothing.

use std::borrow::Cow;
use std::hint::black_box;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// A PostToolUse payload shaped like the recorded ones, with a 1.3 KB tool output of
/// ordinary build log and code: no secret, a few near-misses (`key`, `token`, URLs).
fn payload() -> Value {
    let stdout = "\
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
test protocol::envelope::tests::rejects_unknown_version ... ok
test outbox::tests::keys_are_unique_per_session ... ok
test result: ok. 48 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out
fn primary_key(&self) -> String { format!(\"{}:{}\", self.session_id, self.seq) }
See https://docs.rs/regex/latest/regex/ for the syntax; cache at ~/.cargo/registry.
The max_tokens setting is 4096 and the model is claude-sonnet-4-5 (200000 context).
";
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
            "stdout": stdout,
            "stderr": "",
            "interrupted": false,
            "isImage": false
        },
        "tool_use_id": "toolu_013DRPrVtDMVkX2NHpLV2vSf",
        "duration_ms": 14466
    })
}

fn string_bytes(v: &Value) -> usize {
    match v {
        Value::String(s) => s.len(),
        Value::Array(a) => a.iter().map(string_bytes).sum(),
        Value::Object(o) => o.values().map(string_bytes).sum(),
        _ => 0,
    }
}

/// Runs `f` over every string of `v` for about a second and prints MB/s.
fn measure(label: &str, v: &Value, f: &dyn Fn(&str) -> Cow<'_, str>) {
    let bytes = string_bytes(v);
    let mut runs = 0u64;
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(1) {
        for _ in 0..100 {
            let mut copy = v.clone();
            sessionpipe_redact::map_strings(&mut copy, f);
            black_box(copy);
        }
        runs += 100;
    }
    let secs = started.elapsed().as_secs_f64();
    let mb = (bytes as f64 * runs as f64) / 1e6;
    println!(
        "{label:<28} {:>8.1} MB/s  ({:.2} µs per payload, {bytes} string bytes)",
        mb / secs,
        secs * 1e6 / runs as f64
    );
}

fn main() {
    let v = payload();
    let json_len = serde_json::to_string(&v).map_or(0, |s| s.len());
    println!("payload: {json_len} bytes of JSON");
    measure("clone only (baseline)", &v, &|s| Cow::Borrowed(s));
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
}
