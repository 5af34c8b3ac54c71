//! Usage from the real harnesses (issue 33): a real turn against a scripted
//! model API whose answers report tokens the test chose, then `sessionpipe
//! usage --json` for that session: exactly those tokens, and the cost the
//! price table gives for them. The daemon here sends no transcript anywhere
//! (no tier-2 sink, `transcripts` off): usage is read all the same. Then the
//! same harness files backfilled into a new state dir give the same totals.
//!
//! Claude Code is priced by the shipped table (`core/prices.json`, the model
//! asked for is one it prices); Codex's mock model by config.json's `prices`.
//! OpenCode's store carries usage too: its run is checked the same way.

use crate::real_claude_code::{run_claude_with, setup as claude_setup, wait_for};
use crate::real_codex::{codex_binary, setup as codex_setup, took};
use crate::real_opencode::{ANSWER, opencode, setup as opencode_setup, turn_done};
use serde_json::Value;
use sessionpipe_testkit::chat::{MockChat, Step as ChatStep};
use sessionpipe_testkit::openai::{MockOpenAI, Step};
use sessionpipe_testkit::usage::MockUsage;
use sessionpipe_testkit::{MockAnthropic, Sandbox, Script, Turn, sandbox::bin};
use std::path::Path;
use std::time::Duration;

/// `sessionpipe usage --json --by session` in `state`: the row of `key`.
fn usage_row(sb: &Sandbox, state: &Path, key: &str) -> Value {
    let out = sb
        .command(bin("sessionpipe"))
        .env("SESSIONPIPE_STATE_DIR", state)
        .args(["usage", "--json", "--by", "session", "--since", "1d"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    report["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["key"] == key)
        .cloned()
        .unwrap_or_else(|| panic!("no row {key} in {report:#}"))
}

/// The tokens of a row as (responses, input, output, cache read, cache write).
fn tokens(row: &Value) -> (u64, u64, u64, u64, u64) {
    let t = &row["tokens"];
    let n = |k: &str| t[k].as_u64().unwrap();
    (
        n("responses"),
        n("input"),
        n("output"),
        n("cache_read"),
        n("cache_write"),
    )
}

/// What `n` answers of `u` cost at `price` (USD per million tokens).
fn cost_of(n: u64, u: &MockUsage, price: &Value) -> f64 {
    let p = |k: &str| price[k].as_f64().unwrap_or(0.0);
    n as f64
        * (u.input as f64 * p("input")
            + u.output as f64 * p("output")
            + u.cache_read as f64 * p("cache_read")
            + u.cache_write as f64 * p("cache_write"))
        / 1_000_000.0
}

/// The same harness files, backfilled into a new state dir: the same row.
fn backfilled_row(sb: &Sandbox, env: &[(&str, &std::ffi::OsStr)], key: &str) -> Value {
    let state = sb.root().join("state-backfilled");
    let mut c = sb.command(bin("sessionpipe"));
    c.env("SESSIONPIPE_STATE_DIR", &state)
        .args(["backfill", "--days", "1", "--json"]);
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    usage_row(sb, &state, key)
}

#[test]
fn a_real_claude_code_turns_tokens_and_cost_live_and_backfilled() {
    let Some(claude) = sessionpipe_testkit::harnesses::claude() else {
        return;
    };
    let s = claude_setup(claude);
    let chosen = MockUsage {
        input: 1_234,
        output: 567,
        cache_read: 89_012,
        cache_write: 3_456,
    };
    let api = MockAnthropic::start(
        Script::bash_then_text("echo hello", "The command printed: hello").with_usage(chosen),
    );
    let model = "claude-opus-4-5";
    let args = [
        "-p",
        "Run the shell command, then tell me what it printed.",
        "--allowedTools",
        "Bash",
        "--model",
        model,
    ];
    let result = run_claude_with(&s.sb, &s.claude, &api, &s.project, &args);
    let session = result["session_id"].as_str().expect("a session id");
    wait_for(&s.sb, |evs| {
        evs.iter().any(|e| e["type"] == "session.ended")
    });
    s.sb.wait_idle(Duration::from_secs(10));

    // Two scripted answers (the Bash call, then the text), each once.
    let key = format!("claude-code:{session}");
    let row = usage_row(&s.sb, &s.sb.state, &key);
    let want = (
        2,
        2 * chosen.input,
        2 * chosen.output,
        2 * chosen.cache_read,
        2 * chosen.cache_write,
    );
    assert_eq!(tokens(&row), want, "{row:#}");
    assert_eq!(row["models"][0]["model"], model);
    let table: Value = serde_json::from_str(include_str!("../../prices.json")).unwrap();
    let expected = cost_of(2, &chosen, &table["models"][model]);
    let usd = row["api_equivalent_usd"].as_f64().expect("priced");
    assert!((usd - expected).abs() < 1e-9, "{usd} != {expected}");
    assert_eq!(row["unpriced"], serde_json::json!([]));

    let again = backfilled_row(&s.sb, &[], &key);
    assert_eq!(tokens(&again), want, "backfill reads what live ingest read");
    assert_eq!(again["api_equivalent_usd"], row["api_equivalent_usd"]);
}

/// A subagent's answers are written to its own transcript
/// (`<session>/subagents/agent-<id>.jsonl`), which its SubagentStop names:
/// they count for the session, live and backfilled.
#[test]
fn a_real_claude_code_subagents_tokens_count_for_its_session() {
    let Some(claude) = sessionpipe_testkit::harnesses::claude() else {
        return;
    };
    let s = claude_setup(claude);
    let chosen = MockUsage {
        input: 1_111,
        output: 222,
        cache_read: 33_333,
        cache_write: 444,
    };
    let sub = MockUsage {
        input: 5_555,
        output: 66,
        cache_read: 0,
        cache_write: 777,
    };
    let agent = serde_json::json!({"description": "Say hi", "prompt": "Say hi.",
        "subagent_type": "general-purpose"});
    let api = MockAnthropic::start(
        Script::new([
            Turn::tool_use("Agent", agent),
            Turn::text("The subagent said hi."),
        ])
        .with_usage(chosen)
        .with_subagent_usage(sub),
    );
    let model = "claude-opus-4-5";
    let args = [
        "-p",
        "Ask a subagent to say hi.",
        "--allowedTools",
        "Agent",
        "--model",
        model,
    ];
    let result = run_claude_with(&s.sb, &s.claude, &api, &s.project, &args);
    let session = result["session_id"].as_str().expect("a session id");
    wait_for(&s.sb, |evs| {
        evs.iter().any(|e| e["type"] == "session.ended")
    });
    s.sb.wait_idle(Duration::from_secs(10));
    let events = s.sb.events();
    assert!(
        events.iter().any(|e| e["type"] == "subagent.ended"),
        "the subagent ran and stopped: {result:#}"
    );
    // Every answer of the main conversation (those offered tools: the Agent
    // call, the text, and one more after the subagent's background task
    // reported back) is in the session's transcript, every answer the
    // subagent was given in its own.
    let asked = |subagent: bool| {
        api.requests()
            .iter()
            .filter(|r| r.path() == "/v1/messages")
            .filter(|r| r.header("x-claude-code-agent-id").is_some() == subagent)
            .filter(|r| {
                subagent
                    || r.json()
                        .is_some_and(|b| b["tools"].as_array().is_some_and(|t| !t.is_empty()))
            })
            .count() as u64
    };
    let (main, answers) = (asked(false), asked(true));
    assert!(answers >= 1, "the subagent asked the model");
    let key = format!("claude-code:{session}");
    let row = usage_row(&s.sb, &s.sb.state, &key);
    let want = (
        main + answers,
        main * chosen.input + answers * sub.input,
        main * chosen.output + answers * sub.output,
        main * chosen.cache_read + answers * sub.cache_read,
        main * chosen.cache_write + answers * sub.cache_write,
    );
    assert_eq!(tokens(&row), want, "{row:#}");
    let again = backfilled_row(&s.sb, &[], &key);
    assert_eq!(
        tokens(&again),
        want,
        "backfill reads the subagent's file too"
    );
}

#[test]
fn a_real_codex_turns_tokens_and_cost_live_and_backfilled() {
    let Some(codex) = codex_binary() else {
        return;
    };
    let chosen = MockUsage {
        input: 2_000,
        output: 300,
        cache_read: 40_000,
        cache_write: 0,
    };
    let api = MockOpenAI::start_with_usage(
        Step::command_then_text("echo hello", "The command printed: hello"),
        chosen,
    );
    let s = codex_setup(codex, api, false);
    // The mock model is priced nowhere but here.
    let price = serde_json::json!({"input": 1.5, "output": 6.0, "cache_read": 0.15});
    std::fs::create_dir_all(&s.sb.state).unwrap();
    std::fs::write(
        s.sb.state.join("config.json"),
        serde_json::json!({"prices": {"mock-model": price}}).to_string(),
    )
    .unwrap();
    let thread = s.exec(
        &["--dangerously-bypass-hook-trust"],
        "Run the shell command, then tell me what it printed.",
    );
    s.settle(&thread, |jobs| took(jobs, "SessionEnd", &thread));
    s.sb.wait_idle(Duration::from_secs(10));

    let key = format!("codex:{thread}");
    let row = usage_row(&s.sb, &s.sb.state, &key);
    let want = (
        2,
        2 * chosen.input,
        2 * chosen.output,
        2 * chosen.cache_read,
        0,
    );
    assert_eq!(tokens(&row), want, "{row:#}");
    assert_eq!(row["models"][0]["model"], "mock-model");
    let usd = row["api_equivalent_usd"]
        .as_f64()
        .expect("priced by config.json");
    let expected = cost_of(2, &chosen, &price);
    assert!((usd - expected).abs() < 1e-9, "{usd} != {expected}");

    let codex_home = s.sb.home.join(".codex");
    let again = backfilled_row(&s.sb, &[("CODEX_HOME", codex_home.as_os_str())], &key);
    assert_eq!(tokens(&again), want, "backfill reads what live ingest read");
}

#[test]
fn a_real_opencode_turns_tokens_live_and_backfilled() {
    let Some(bin) = opencode() else {
        return;
    };
    let chosen = MockUsage {
        input: 3_000,
        output: 200,
        cache_read: 700,
        cache_write: 0,
    };
    let api = MockChat::start_with_usage(
        vec![ChatStep::bash("echo hello"), ChatStep::text(ANSWER)],
        chosen,
    );
    let s = opencode_setup(bin, &api, "allow");
    let _daemon = s.daemon();
    s.finish(s.start(false));
    let events = s.sb.wait_until(Duration::from_secs(30), turn_done);
    s.sb.wait_idle(Duration::from_secs(10));
    let session = events[0]["session"]["id"].as_str().unwrap().to_string();

    let key = format!("opencode:{session}");
    let row = usage_row(&s.sb, &s.sb.state, &key);
    let want = (
        2,
        2 * chosen.input,
        2 * chosen.output,
        2 * chosen.cache_read,
        0,
    );
    assert_eq!(tokens(&row), want, "{row:#}");
    assert_eq!(row["models"][0]["model"], "mock/mock-model");
    assert_eq!(row["unpriced"], serde_json::json!(["mock/mock-model"]));

    let again = backfilled_row(&s.sb, &[], &key);
    assert_eq!(tokens(&again), want, "backfill reads what live ingest read");
}
