//! Claude Code and Codex transcripts for `sessionpipe backfill`, in their real
//! formats, for the sessions of the plans: Claude Code's
//! `~/.claude/projects/<slug>/<id>.jsonl` (a record per line: the person's
//! asks, the assistant's messages with their usage, each tool call and its
//! result, which Claude Code writes twice, as the message's `tool_result` and
//! as `toolUseResult`; the turn's duration; an `ai-title` for some), and
//! Codex's `~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`, built
//! from the rollout recorded from the real Codex in
//! `conformance/transcripts/codex/two-turns.jsonl` (each record of it a
//! template: its ids, times and words replaced).
//!
//! Each file gets a share of the byte budget by its tool calls and turns, so
//! the whole is the size asked for; the tool outputs take it up.

use crate::rng::Rng;
use crate::synth::Plan;
use serde_json::{Value, json};
use sessionpipe_core::protocol;
use std::io::Write;
use std::path::{Path, PathBuf};

const CODEX_TEMPLATE: &str = include_str!("../../../conformance/transcripts/codex/two-turns.jsonl");
const T_SESSION: &str = "01a22900-3e2c-7763-90fd-d0504f2cc628";
const T_TURNS: [&str; 2] = [
    "01a22900-3e52-7d10-bdf2-751ee7f7f324",
    "01a22900-406e-7300-9708-84caa656cd62",
];
const T_CALL: &str = "call_000000000000000000000006";

/// A plan's weight in the byte budget.
pub fn weight(plan: &Plan) -> u64 {
    plan.tools.iter().map(|&t| u64::from(t) + 2).sum()
}

/// Where the plan's transcript goes under `home`.
pub fn path(home: &Path, plan: &Plan) -> PathBuf {
    let time = protocol::time::rfc3339_ms(plan.start_ms);
    if plan.codex() {
        home.join(".codex/sessions")
            .join(time[..10].replace('-', "/"))
            .join(format!(
                "rollout-{}-{}.jsonl",
                time[..19].replace(':', "-"),
                plan.id
            ))
    } else {
        home.join(".claude/projects")
            .join(plan.cwd().replace('/', "-"))
            .join(format!("{}.jsonl", plan.id))
    }
}

/// Writes the plan's transcript of about `budget` bytes; returns its size
/// and its last instant.
pub fn write(home: &Path, plan: &Plan, budget: u64) -> (u64, i64) {
    let path = path(home, plan);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut out = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&path).unwrap());
    let mut w = Rng::new(plan.seed ^ 0x7A11_5C21);
    let tools: u64 = plan.tools.iter().map(|&t| u64::from(t)).sum();
    let turns = plan.tools.len() as u64;
    let fixed = if plan.codex() { 20_000 } else { 1_000 } + turns * 4_000 + tools * 1_800;
    let per_output = (budget.saturating_sub(fixed) / (2 * tools.max(1))).max(40) as f64;
    let mut size = |w: &mut Rng| (w.lognormal(per_output * 0.8, 0.7) as usize).clamp(20, 400_000);
    let (bytes, last) = if plan.codex() {
        codex(plan, &mut w, &mut size, &mut out)
    } else {
        claude(plan, &mut w, &mut size, &mut out)
    };
    out.flush().unwrap();
    (bytes, last)
}

fn line(out: &mut impl Write, v: &Value) -> u64 {
    let s = serde_json::to_string(v).unwrap();
    out.write_all(s.as_bytes()).unwrap();
    out.write_all(b"\n").unwrap();
    s.len() as u64 + 1
}

fn claude(
    plan: &Plan,
    w: &mut Rng,
    size: &mut dyn FnMut(&mut Rng) -> usize,
    out: &mut impl Write,
) -> (u64, i64) {
    let mut bytes = 0;
    let mut t = plan.start_ms;
    let mut parent: Option<String> = None;
    let cwd = plan.cwd();
    let base = |kind: &str, parent: &Option<String>, uuid: &str, t: i64| {
        json!({"parentUuid": parent, "isSidechain": false, "userType": "external",
            "entrypoint": "cli", "cwd": cwd, "sessionId": plan.id, "version": plan.version,
            "gitBranch": "main", "type": kind, "uuid": uuid,
            "timestamp": protocol::time::rfc3339_ms(t)})
    };
    let usage = |w: &mut Rng| {
        json!({"input_tokens": w.range(1, 40), "cache_creation_input_tokens": w.range(0, 4000),
            "cache_read_input_tokens": w.range(10_000, 150_000), "output_tokens": w.range(20, 2000),
            "service_tier": "standard", "cache_creation": {"ephemeral_1h_input_tokens": 0,
            "ephemeral_5m_input_tokens": w.range(0, 4000)}})
    };
    bytes += line(
        out,
        &json!({"type": "permission-mode", "permissionMode": "default", "sessionId": plan.id}),
    );
    let mut last_ask = String::new();
    for (n, &tools) in plan.tools.iter().enumerate() {
        t += if n == 0 {
            w.range(2_000, 30_000)
        } else {
            w.range(20_000, 600_000)
        };
        let turn_start = t;
        let prompt = w.uuid4();
        let n_ask = w.count(180.0, 1.1, 8, 20_000) as usize;
        let ask = w.text(n_ask);
        last_ask = ask.chars().take(100).collect();
        let uuid = w.uuid4();
        let mut v = base("user", &parent, &uuid, t);
        v["message"] = json!({"role": "user", "content": ask});
        v["promptId"] = json!(prompt);
        v["permissionMode"] = json!("default");
        bytes += line(out, &v);
        parent = Some(uuid);
        let mut messages = 1;
        for _ in 0..tools {
            t += w.range(1_000, 20_000);
            let call = format!("toolu_01{}", w.hex(22));
            let command = format!("cargo test -p app {}", w.words(4));
            let uuid = w.uuid4();
            let mut v = base("assistant", &parent, &uuid, t);
            v["message"] = json!({"id": format!("msg_01{}", w.hex(22)), "type": "message",
                "role": "assistant", "model": plan.model,
                "content": [{"type": "tool_use", "id": call, "name": "Bash",
                    "input": {"command": command, "description": w.words(5)}}],
                "stop_reason": "tool_use", "stop_sequence": null, "usage": usage(w)});
            v["requestId"] = json!(format!("req_011C{}", w.hex(20)));
            bytes += line(out, &v);
            let tool_uuid = uuid.clone();
            parent = Some(uuid);
            t += w.range(100, 30_000);
            let n_out = size(w);
            let output = w.text(n_out);
            let uuid = w.uuid4();
            let mut v = base("user", &parent, &uuid, t);
            v["message"] = json!({"role": "user", "content": [{"tool_use_id": call,
                "type": "tool_result", "content": output, "is_error": false}]});
            v["toolUseResult"] = json!({"stdout": output, "stderr": "", "interrupted": false,
                "isImage": false});
            v["sourceToolAssistantUUID"] = json!(tool_uuid);
            v["promptId"] = json!(prompt);
            bytes += line(out, &v);
            parent = Some(uuid);
            messages += 2;
        }
        t += w.range(1_000, 20_000);
        let n_reply = w.count(900.0, 1.0, 20, 20_000) as usize;
        let reply = w.text(n_reply);
        let uuid = w.uuid4();
        let mut v = base("assistant", &parent, &uuid, t);
        v["message"] = json!({"id": format!("msg_01{}", w.hex(22)), "type": "message",
            "role": "assistant", "model": plan.model,
            "content": [{"type": "text", "text": reply}],
            "stop_reason": "end_turn", "stop_sequence": null, "usage": usage(w)});
        v["requestId"] = json!(format!("req_011C{}", w.hex(20)));
        bytes += line(out, &v);
        parent = Some(uuid);
        let uuid = w.uuid4();
        let mut v = base("system", &parent, &uuid, t + 10);
        v["subtype"] = json!("turn_duration");
        v["durationMs"] = json!(t - turn_start);
        v["messageCount"] = json!(messages + 1);
        v["isMeta"] = json!(false);
        bytes += line(out, &v);
        parent = Some(uuid);
        if n == 0 && w.chance(0.4) {
            bytes += line(
                out,
                &json!({"type": "ai-title", "aiTitle": w.words(4), "sessionId": plan.id}),
            );
        }
    }
    bytes += line(
        out,
        &json!({"type": "last-prompt", "lastPrompt": last_ask, "leafUuid": parent, "sessionId": plan.id}),
    );
    (bytes, t)
}

fn template() -> &'static [String] {
    static T: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    T.get_or_init(|| CODEX_TEMPLATE.lines().map(str::to_string).collect())
}

fn codex(
    plan: &Plan,
    w: &mut Rng,
    size: &mut dyn FnMut(&mut Rng) -> usize,
    out: &mut impl Write,
) -> (u64, i64) {
    let tpl = template();
    let mut bytes = 0;
    let mut ordinal = 0;
    let mut t = plan.start_ms;
    let cwd = plan.cwd();
    let mut emit = |i: usize, t: i64, turn: &str, call: &str, edit: &mut dyn FnMut(&mut Value)| {
        let raw = tpl[i]
            .replace(T_SESSION, &plan.id)
            .replace(T_TURNS[0], turn)
            .replace(T_TURNS[1], turn)
            .replace(T_CALL, call)
            .replace("/work/cxrec/home/work/repo", &cwd)
            .replace("mock-model", plan.model);
        let mut v: Value = serde_json::from_str(&raw).unwrap();
        v["timestamp"] = json!(protocol::time::rfc3339_ms(t));
        v["ordinal"] = json!(ordinal);
        ordinal += 1;
        edit(&mut v);
        let b = line(out, &v);
        bytes += b;
    };
    let instructions = w.text(12_000);
    let branch = "main";
    let repo = plan.repo();
    let first_turn = w.uuid7(t);
    emit(0, t, &first_turn, "", &mut |v| {
        let p = &mut v["payload"];
        p["timestamp"] = json!(protocol::time::rfc3339_ms(t - 40));
        p["cli_version"] = json!(plan.version);
        p["originator"] = json!("codex_cli_rs");
        p["source"] = json!("cli");
        p["model_provider"] = json!("openai");
        p["base_instructions"]["text"] = json!(instructions);
        p["git"]["branch"] = json!(branch);
        p["git"]["repository_url"] = json!(repo);
    });
    for (n, &tools) in plan.tools.iter().enumerate() {
        let turn = if n == 0 {
            first_turn.clone()
        } else {
            t += w.range(20_000, 600_000);
            w.uuid7(t)
        };
        let opening: &[usize] = if n == 0 {
            &[1, 2, 3, 4, 5, 6]
        } else {
            &[19, 20, 21]
        };
        for &i in opening {
            emit(i, t, &turn, "", &mut |_| {});
        }
        let n_ask = w.count(180.0, 1.1, 8, 20_000) as usize;
        let ask = w.text(n_ask);
        t += 10;
        emit(7, t, &turn, "", &mut |v| {
            v["payload"]["content"][0]["text"] = json!(ask);
        });
        emit(8, t, &turn, "", &mut |v| {
            v["payload"]["item"]["content"][0]["text"] = json!(ask);
        });
        for _ in 0..tools {
            t += w.range(1_000, 20_000);
            let call = format!("call_{}", w.hex(24));
            let command = format!("cargo test -p app {}", w.words(4));
            let n_out = size(w);
            let output = w.text(n_out);
            emit(9, t, &turn, &call, &mut |v| {
                v["payload"]["arguments"] = json!(json!({"cmd": command}).to_string());
            });
            emit(10, t, &turn, &call, &mut |_| {});
            t += w.range(100, 30_000);
            emit(11, t, &turn, &call, &mut |v| {
                let item = &mut v["payload"]["item"];
                item["command"][2] = json!(command);
                item["parsed_cmd"][0]["cmd"] = json!(command);
                item["aggregated_output"] = json!(output);
            });
            emit(12, t, &turn, &call, &mut |v| {
                v["payload"]["output"] = json!(format!(
                    "Chunk ID: {}\nWall time: 0.4100 seconds\nProcess exited with code 0\nOriginal token count: {}\nOutput:\n{output}",
                    &call[5..11],
                    output.len() / 4
                ));
            });
            emit(13, t, &turn, &call, &mut |_| {});
        }
        t += w.range(1_000, 20_000);
        let n_reply = w.count(900.0, 1.0, 20, 20_000) as usize;
        let reply = w.text(n_reply);
        emit(14, t, &turn, "", &mut |v| {
            v["payload"]["item"]["content"][0]["text"] = json!(reply);
        });
        emit(15, t, &turn, "", &mut |v| {
            v["payload"]["content"][0]["text"] = json!(reply);
        });
        emit(16, t, &turn, "", &mut |_| {});
        emit(17, t, &turn, "", &mut |_| {});
        emit(18, t + 5, &turn, "", &mut |v| {
            v["payload"]["last_agent_message"] = json!(reply);
        });
    }
    (bytes, t)
}

/// Sets each file's modification time `age_ms` before `now` (the backfill
/// takes a file by when it last changed), at most `max_age_ms`.
pub fn touch(files: &[(PathBuf, i64)], now: i64, max_age_ms: i64) {
    for (path, age) in files {
        let at = std::time::UNIX_EPOCH
            + std::time::Duration::from_millis((now - (*age).clamp(0, max_age_ms)) as u64);
        std::fs::File::options()
            .write(true)
            .open(path)
            .and_then(|f| f.set_modified(at))
            .unwrap();
    }
}
