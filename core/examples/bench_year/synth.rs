//! The synthetic year: session plans (who, when, how many turns and tool
//! calls), each played into the events its hooks would have given, written
//! through the outbox's own write path (`OutboxTx::append`, `save_session`),
//! so the file is exactly what the daemon writes: its schema, its seqs, its
//! records.
//!
//! A session: `session.started`; per turn `turn.started`, tool calls
//! (`tool.started`/`tool.ended` with the inputs and outputs the harnesses'
//! hooks carry, capped at 64 KiB as the adapters cap them), a heartbeat a
//! minute into a long turn, a permission prompt on 4 % of the calls
//! (`attention.needed`/`attention.cleared`), a subagent now and then,
//! `turn.ended`, a tier-2 `turn.transcript` for a third of the turns,
//! `limits.observed` for Claude Code and Codex, an idle notification after
//! some turns; `session.ended` for 70 % of them. A few sessions of the year
//! stop mid-turn or at a prompt (a harness killed): the board keeps them.

use crate::rng::Rng;
use serde_json::{Value, json};
use sessionpipe_core::pipeline::outbox::Outbox;
use sessionpipe_core::pipeline::session::{SessionRecord, Stamp, envelope};
use sessionpipe_core::protocol::{self, *};
use std::path::Path;

pub const DAY_MS: i64 = 86_400_000;
pub const MACHINE: &str = "ann-laptop";

/// Harnesses by share of sessions.
pub const HARNESSES: &[(&str, u32)] = &[
    ("claude-code", 55),
    ("codex", 25),
    ("gemini-cli", 8),
    ("opencode", 5),
    ("cursor", 4),
    ("copilot-cli", 3),
];

const PROJECTS: &[&str] = &[
    "sessionpipe",
    "billing-api",
    "web",
    "infra",
    "mobile",
    "docs",
    "ml-pipeline",
    "cli-tools",
    "auth",
    "search",
    "dashboard",
    "payments",
    "notifications",
    "etl",
    "sdk-python",
    "sdk-js",
    "design-system",
    "data-warehouse",
    "scheduler",
    "gateway",
    "chat",
    "reports",
    "admin",
    "dotfiles",
];

const ACCOUNTS: &[&str] = &[
    "7d1e4b2a-90c3-4f6e-a1d2-3c4b5a6f7e80",
    "2b9f0c3d-5e6a-4b7c-8d9e-0f1a2b3c4d5e",
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// `session.ended`.
    Ended,
    /// Its last turn ended and nothing more came.
    Quiet,
    /// Stopped inside a turn (a tool started, never ended): working forever.
    Working,
    /// Stopped at a permission prompt: needs the person forever.
    NeedsYou,
}

#[derive(Clone, Debug)]
pub struct Plan {
    pub harness: &'static str,
    pub id: String,
    pub start_ms: i64,
    pub seed: u64,
    pub project: usize,
    pub model: &'static str,
    pub version: &'static str,
    /// Tool calls of each turn.
    pub tools: Vec<u32>,
    pub end: End,
}

impl Plan {
    pub fn cwd(&self) -> String {
        format!("/home/ann/src/{}", PROJECTS[self.project])
    }

    pub fn repo(&self) -> String {
        format!("https://github.com/ann/{}.git", PROJECTS[self.project])
    }

    pub fn codex(&self) -> bool {
        self.harness == "codex"
    }
}

fn model_of(harness: &str, rng: &mut Rng) -> (&'static str, &'static str) {
    match harness {
        "claude-code" => (
            *rng.pick(&["claude-opus-5-5", "claude-opus-5-5", "claude-sonnet-5"]),
            "2.1.332",
        ),
        "codex" => ("gpt-6-astra", "0.171.0"),
        "gemini-cli" => ("gemini-3-pro", "0.31.0"),
        "opencode" => ("anthropic/claude-sonnet-5", "1.4.2"),
        "cursor" => ("claude-sonnet-5", "2.3.1"),
        _ => ("claude-sonnet-5", "1.0.21"),
    }
}

/// A session start in `[from, to)`: weekdays four times as busy as weekends,
/// working hours most of all.
fn start_time(rng: &mut Rng, from: i64, to: i64) -> i64 {
    let days = ((to - from) / DAY_MS).max(1);
    loop {
        let day = from - from.rem_euclid(DAY_MS) + rng.range(0, days + 1) * DAY_MS;
        let weekday = (day / DAY_MS + 4).rem_euclid(7); // 0 = Sunday
        if (weekday == 0 || weekday == 6) && rng.chance(0.75) {
            continue;
        }
        let hour = *rng.weighted(&[
            (7, 2),
            (8, 5),
            (9, 9),
            (10, 10),
            (11, 10),
            (12, 6),
            (13, 8),
            (14, 10),
            (15, 10),
            (16, 9),
            (17, 7),
            (18, 4),
            (19, 3),
            (20, 3),
            (21, 2),
            (22, 1),
        ]);
        let t = day + hour * 3_600_000 + rng.range(0, 3_600_000);
        if t >= from && t < to {
            return t;
        }
    }
}

/// `n` sessions started in `[from, to)`, oldest first. `scale` stretches the
/// tool calls per turn (the generator tunes it to hit its event count).
pub fn plans(seed: u64, n: usize, from: i64, to: i64, scale: f64) -> Vec<Plan> {
    let mut rng = Rng::new(seed);
    let mut out: Vec<Plan> = (0..n)
        .map(|i| {
            let harness = *rng.weighted(HARNESSES);
            let start_ms = start_time(&mut rng, from, to);
            let (model, version) = model_of(harness, &mut rng);
            let turns = rng.count(5.0, 0.9, 1, 80);
            let tools = (0..turns)
                .map(|_| rng.count(5.0 * scale, 0.9, 0, 60) as u32)
                .collect();
            let project = (rng.lognormal(2.0, 1.0) as usize).min(PROJECTS.len() - 1);
            let id = if harness == "codex" {
                rng.uuid7(start_ms)
            } else {
                rng.uuid4()
            };
            Plan {
                harness,
                id,
                start_ms,
                seed: seed.wrapping_mul(1_000_003).wrapping_add(i as u64),
                project,
                model,
                version,
                tools,
                end: if rng.chance(0.7) {
                    End::Ended
                } else {
                    End::Quiet
                },
            }
        })
        .collect();
    out.sort_by_key(|p| p.start_ms);
    out
}

/// One event as a hook gave it.
pub struct Ev {
    pub ms: i64,
    pub hook: &'static str,
    /// The session had its title by then.
    pub titled: bool,
    pub data: EventData,
}

pub struct Played {
    pub events: Vec<Option<Ev>>,
    pub block: SessionBlock,
    pub titled: SessionBlock,
    pub record: SessionRecord,
}

impl Played {
    pub fn last_ms(&self) -> i64 {
        self.events
            .iter()
            .flatten()
            .map(|e| e.ms)
            .max()
            .unwrap_or(0)
    }
}

/// A tool's name, its input and (when it ran) its output, as the harness's
/// hooks report them. `full`: with their words (else empty, for counting).
fn tool_call(
    plan: &Plan,
    shape: &mut Rng,
    words: &mut Rng,
    full: bool,
) -> (&'static str, Value, Value) {
    let claude = plan.harness == "claude-code";
    // The deref picks `&'static str` out of the table (without it the
    // table's type is inferred as `str`).
    #[allow(clippy::explicit_auto_deref)]
    let tool: &'static str = match plan.harness {
        "claude-code" => *shape.weighted(&[
            ("Bash", 35),
            ("Read", 25),
            ("Edit", 15),
            ("Grep", 8),
            ("Glob", 5),
            ("Write", 5),
            ("TodoWrite", 5),
            ("WebFetch", 2),
        ]),
        "codex" => *shape.weighted(&[("Bash", 75), ("apply_patch", 25)]),
        "gemini-cli" => *shape.weighted(&[
            ("run_shell_command", 40),
            ("read_file", 30),
            ("replace", 15),
            ("write_file", 5),
            ("search_file_content", 10),
        ]),
        "opencode" => *shape.weighted(&[("bash", 40), ("read", 30), ("edit", 20), ("grep", 10)]),
        "cursor" => *shape.weighted(&[("Shell", 50), ("Read", 30), ("Edit", 20)]),
        _ => *shape.weighted(&[("bash", 50), ("view", 30), ("edit", 20)]),
    };
    let size = |shape: &mut Rng, median: f64, sigma: f64| {
        (shape.lognormal(median, sigma) as usize).clamp(1, 60_000)
    };
    let out_size = size(shape, 700.0, 1.4);
    let in_size = size(shape, 300.0, 1.0);
    if !full {
        return (tool, Value::Null, Value::Null);
    }
    let file = format!(
        "{}/src/{}.rs",
        plan.cwd(),
        words.pick(&[
            "lib",
            "main",
            "outbox",
            "api",
            "parser",
            "config",
            "tests/api"
        ])
    );
    let lines = |text: &str| text.lines().count();
    match tool {
        "Bash" | "run_shell_command" | "bash" | "Shell" => {
            let command = format!(
                "{} {}",
                words.pick(&[
                    "cargo test -p sessionpipe-core --lib",
                    "git status --short",
                    "rg -n 'fn open' core/src",
                    "npm run build",
                    "ls -la",
                    "git diff HEAD~1 --stat",
                    "pytest -q tests/",
                    "make check",
                ]),
                words.words(in_size / 40)
            );
            let out = words.text(out_size);
            if claude {
                (
                    tool,
                    json!({"command": command, "description": words.words(5)}),
                    json!({"stdout": out, "stderr": "", "interrupted": false, "isImage": false}),
                )
            } else {
                (tool, json!({"command": command}), Value::String(out))
            }
        }
        "Read" | "read_file" | "read" | "view" => {
            let content = words.text(size(shape, 2500.0, 1.0));
            let n = lines(&content);
            let out = if claude {
                json!({"type": "text", "file": {"filePath": file, "content": content,
                    "numLines": n, "startLine": 1, "totalLines": n}})
            } else {
                Value::String(content)
            };
            (tool, json!({"file_path": file}), out)
        }
        "Edit" | "replace" | "edit" => {
            let old = words.text(in_size);
            let new = words.text(in_size + 80);
            let patch: Vec<String> = old
                .lines()
                .map(|l| format!("-{l}"))
                .chain(new.lines().map(|l| format!("+{l}")))
                .collect();
            let out = json!({"filePath": file, "oldString": old, "newString": new,
                "structuredPatch": [{"oldStart": 40, "oldLines": lines(&old), "newStart": 40,
                    "newLines": lines(&new), "lines": patch}],
                "userModified": false, "replaceAll": false});
            (
                tool,
                json!({"file_path": file, "old_string": old, "new_string": new}),
                if claude {
                    out
                } else {
                    Value::String("ok".into())
                },
            )
        }
        "Write" | "write_file" => {
            let content = words.text(size(shape, 2000.0, 1.0));
            (
                tool,
                json!({"file_path": file, "content": content}),
                json!({"type": "create", "filePath": file, "structuredPatch": []}),
            )
        }
        "Grep" | "search_file_content" => {
            let out = words.text(out_size);
            (
                tool,
                json!({"pattern": words.words(2), "path": "src", "output_mode": "content", "-n": true}),
                json!({"mode": "content", "numFiles": 3, "filenames": [], "content": out, "numLines": lines(&out)}),
            )
        }
        "Glob" => {
            let files: Vec<String> = (0..(out_size / 60).max(1))
                .map(|i| format!("{}/src/m{i}.rs", plan.cwd()))
                .collect();
            (
                tool,
                json!({"pattern": "**/*.rs"}),
                json!({"filenames": files, "durationMs": 12, "numFiles": files.len(), "truncated": false}),
            )
        }
        "TodoWrite" => {
            let todos: Vec<Value> = (0..4)
                .map(|_| {
                    json!({"content": words.words(8), "status": "pending", "activeForm": words.words(6)})
                })
                .collect();
            (
                tool,
                json!({"todos": todos}),
                json!({"oldTodos": [], "newTodos": todos}),
            )
        }
        "WebFetch" => {
            let url = format!(
                "https://docs.rs/rusqlite/latest/rusqlite/{}",
                words.words(1)
            );
            (
                tool,
                json!({"url": url, "prompt": words.words(10)}),
                json!({"bytes": 48211, "code": 200, "codeText": "OK", "result": words.text(out_size),
                    "durationMs": 812, "url": url}),
            )
        }
        _ => {
            // Codex's apply_patch: the patch in, a line out.
            let patch = format!(
                "*** Begin Patch\n*** Update File: src/lib.rs\n@@\n{}\n*** End Patch",
                words.text(in_size)
            );
            (
                tool,
                Value::String(patch),
                Value::String("Success. Updated the following files:\nM src/lib.rs\n".into()),
            )
        }
    }
}

/// A permission prompt for `tool`, as Claude Code's PermissionRequest maps.
fn permission_asked(id: &str, tool: &str) -> EventData {
    EventData::AttentionNeeded(AttentionNeeded {
        attention_id: id.to_string(),
        kind: AttentionKind::Permission,
        tool: Some(tool.into()),
        message: Some(format!("{tool} wants to run")),
        agent_id: None,
    })
}

fn push(events: &mut Vec<Option<Ev>>, ms: i64, hook: &'static str, titled: bool, data: EventData) {
    events.push(Some(Ev {
        ms,
        hook,
        titled,
        data,
    }))
}

/// The session as its hooks would have told it, and its record at the end.
pub fn play(plan: &Plan, full: bool) -> Played {
    let mut s = Rng::new(plan.seed);
    let mut w = Rng::new(plan.seed ^ 0x005E_ED0F_0DD5);
    let limits_harness = matches!(plan.harness, "claude-code" | "codex");
    let account = limits_harness.then(|| ACCOUNTS[(plan.seed % 2) as usize].to_string());
    let mut events: Vec<Option<Ev>> = Vec::new();
    let mut t = plan.start_ms;
    let mut titled = false;
    push(
        &mut events,
        t,
        "SessionStart",
        false,
        EventData::SessionStarted(SessionStarted {
            source: if s.chance(0.85) {
                StartSource::Startup
            } else {
                StartSource::Resume
            },
        }),
    );
    let mut open: Vec<Value> = Vec::new();
    let mut running: Option<String> = None;
    let mut last_beat = 0i64;
    let mut idle: Option<String> = None;
    let mut limits: Option<LimitsObserved> = None;
    let mut first_ask: Option<String> = None;
    let mut last_turn_id = String::new();
    let turns = plan.tools.len();
    'turns: for (n, &tools) in plan.tools.iter().enumerate() {
        t += if n == 0 {
            s.range(2_000, 30_000)
        } else {
            (s.lognormal(90_000.0, 1.2) as i64).min(2 * 3_600_000)
        };
        let turn_id = if plan.codex() { s.uuid7(t) } else { s.uuid4() };
        last_turn_id = turn_id.clone();
        let ask_chars = s.count(180.0, 1.1, 8, 20_000);
        if let Some(id) = idle.take() {
            push(
                &mut events,
                t,
                "UserPromptSubmit",
                titled,
                EventData::AttentionCleared(AttentionCleared {
                    attention_id: id,
                    how: ClearedHow::Answered,
                }),
            );
        }
        let ask = if full {
            w.text(ask_chars as usize)
        } else {
            String::new()
        };
        if n == 0 {
            first_ask = Some(ask.chars().take(200).collect());
        }
        push(
            &mut events,
            t,
            "UserPromptSubmit",
            titled,
            EventData::TurnStarted(TurnStarted {
                turn_id: Some(turn_id.clone()),
                prompt_chars: Some(ask_chars),
                ..Default::default()
            }),
        );
        titled = true;
        let turn_start = t;
        last_beat = t;
        running = Some(turn_id.clone());
        let stuck = n + 1 == turns && matches!(plan.end, End::Working | End::NeedsYou);
        for k in 0..tools {
            t += (s.lognormal(6_000.0, 0.9) as i64).min(120_000);
            let (tool, input, output) = tool_call(plan, &mut s, &mut w, full);
            let call_id = if plan.codex() {
                format!("call_{}", s.hex(24))
            } else {
                format!("toolu_01{}", s.hex(22))
            };
            if t - last_beat >= 60_000 {
                last_beat = t;
                push(
                    &mut events,
                    t,
                    "PreToolUse",
                    titled,
                    EventData::SessionHeartbeat(Empty {}),
                );
            }
            push(
                &mut events,
                t,
                "PreToolUse",
                titled,
                EventData::ToolStarted(ToolStarted {
                    tool: tool.into(),
                    call_id: Some(call_id.clone()),
                    turn_id: Some(turn_id.clone()),
                    agent_id: None,
                    input: Some(input.clone()),
                }),
            );
            let asks = s.chance(0.04);
            if stuck && k + 1 == tools {
                if plan.end == End::NeedsYou {
                    let id = format!("perm-{}", s.hex(16));
                    push(
                        &mut events,
                        t + 200,
                        "PermissionRequest",
                        titled,
                        permission_asked(&id, tool),
                    );
                    open.push(json!({"id": id, "agent_id": null, "permission": true}));
                }
                break 'turns;
            }
            if asks {
                let id = format!("perm-{}", s.hex(16));
                t += 200;
                push(
                    &mut events,
                    t,
                    "PermissionRequest",
                    titled,
                    permission_asked(&id, tool),
                );
                t += (s.lognormal(8_000.0, 1.0) as i64).min(600_000);
                push(
                    &mut events,
                    t,
                    "PostToolUse",
                    titled,
                    EventData::AttentionCleared(AttentionCleared {
                        attention_id: id,
                        how: ClearedHow::Answered,
                    }),
                );
            }
            let ms = (s.lognormal(900.0, 1.3) as u64).min(600_000);
            t += ms as i64;
            let ok = s.chance(0.95);
            push(
                &mut events,
                t,
                "PostToolUse",
                titled,
                EventData::ToolEnded(ToolEnded {
                    tool: tool.into(),
                    call_id: Some(call_id),
                    turn_id: Some(turn_id.clone()),
                    agent_id: None,
                    ms: Some(ms),
                    ok,
                    error: (!ok).then(|| "Exit code 1".to_string()),
                    input: Some(input),
                    output: Some(output),
                }),
            );
            if plan.harness == "claude-code" && s.chance(0.03) {
                let agent = format!("a{}", s.hex(16));
                push(
                    &mut events,
                    t,
                    "SubagentStart",
                    titled,
                    EventData::SubagentStarted(SubagentStarted {
                        agent_id: agent.clone(),
                        agent_type: Some("Explore".into()),
                    }),
                );
                t += (s.lognormal(30_000.0, 0.8) as i64).min(900_000);
                push(
                    &mut events,
                    t,
                    "SubagentStop",
                    titled,
                    EventData::SubagentEnded(SubagentEnded {
                        agent_id: agent,
                        agent_type: Some("Explore".into()),
                        background: None,
                    }),
                );
            }
        }
        if stuck {
            break;
        }
        t += (s.lognormal(5_000.0, 0.8) as i64).min(300_000);
        let roll = s.unit();
        let (reason, error) = if roll < 0.05 {
            (TurnEndReason::Interrupt, None)
        } else if roll < 0.065 {
            (
                TurnEndReason::Error,
                Some("API Error: 529 {\"type\":\"overloaded_error\"}".to_string()),
            )
        } else {
            (TurnEndReason::Stop, None)
        };
        push(
            &mut events,
            t,
            "Stop",
            titled,
            EventData::TurnEnded(TurnEnded {
                turn_id: Some(turn_id.clone()),
                reason,
                ms: Some((t - turn_start) as u64),
                error,
                background: None,
            }),
        );
        running = None;
        if s.chance(1.0 / 3.0) {
            let reply = s.count(900.0, 1.0, 20, 20_000) as usize;
            push(
                &mut events,
                t,
                "Stop",
                titled,
                EventData::TurnTranscript(TurnTranscript {
                    turn: n as u64 + 1,
                    user: ask.clone(),
                    assistant: if full { w.text(reply) } else { String::new() },
                    at: protocol::time::rfc3339_ms(turn_start),
                }),
            );
        }
        if limits_harness && s.chance(0.35) {
            let l = LimitsObserved {
                account_id: account.clone(),
                status: Some("allowed".into()),
                windows: vec![
                    LimitWindow {
                        id: "five_hour".into(),
                        window_minutes: Some(300),
                        used_percent: s.range(5, 96) as f64,
                        resets_at: Some(protocol::time::rfc3339_ms(t + s.range(0, 5 * 3_600_000))),
                    },
                    LimitWindow {
                        id: "seven_day".into(),
                        window_minutes: Some(10_080),
                        used_percent: s.range(10, 81) as f64,
                        resets_at: Some(protocol::time::rfc3339_ms(t + s.range(0, 7 * DAY_MS))),
                    },
                ],
            };
            push(
                &mut events,
                t,
                "Stop",
                titled,
                EventData::LimitsObserved(l.clone()),
            );
            limits = Some(l);
        }
        if n + 1 < turns && s.chance(0.08) {
            let id = format!("idle-{}", s.hex(16));
            push(
                &mut events,
                t + 60_000,
                "Notification",
                titled,
                EventData::AttentionNeeded(AttentionNeeded {
                    attention_id: id.clone(),
                    kind: AttentionKind::Idle,
                    tool: None,
                    message: Some("Claude is waiting for your input".into()),
                    agent_id: None,
                }),
            );
            idle = Some(id);
        }
    }
    let mut ended = false;
    if plan.end == End::Ended {
        t += s.range(5_000, 600_000);
        push(
            &mut events,
            t,
            "SessionEnd",
            titled,
            EventData::SessionEnded(SessionEnded {
                reason: if s.chance(0.7) {
                    EndReason::Exit
                } else {
                    EndReason::Other
                },
            }),
        );
        ended = true;
    }
    let block = SessionBlock {
        machine: Some(MACHINE.into()),
        cwd: Some(plan.cwd()),
        repo: Some(plan.repo()),
        branch: Some(
            s.pick(&["main", "main", "feature/retention", "fix/parser"])
                .to_string(),
        ),
        model: Some(plan.model.into()),
        account_id: account.clone(),
        ..Default::default()
    };
    let mut titled_block = block.clone();
    let ask = first_ask.clone().unwrap_or_default();
    if plan.harness == "claude-code" && s.chance(0.4) {
        titled_block.title = Some(w.words(4));
        titled_block.title_source = Some(TitleSource::Harness);
    } else {
        titled_block.title = Some(ask.chars().take(50).collect());
        titled_block.title_source = Some(TitleSource::FirstAsk);
    }
    let last_ms = events.iter().flatten().map(|e| e.ms).max().unwrap_or(t);
    let transcript = match plan.harness {
        "claude-code" => Some(format!(
            "/home/ann/.claude/projects/-home-ann-src-{}/{}.jsonl",
            PROJECTS[plan.project], plan.id
        )),
        "codex" => Some(format!(
            "/home/ann/.codex/sessions/{}/rollout-{}.jsonl",
            &protocol::time::rfc3339_ms(plan.start_ms)[..10].replace('-', "/"),
            plan.id
        )),
        "gemini-cli" => Some(format!(
            "/home/ann/.gemini/tmp/{}/chats/session-{}.json",
            s.hex(64),
            &plan.id[..8]
        )),
        _ => None,
    };
    let record = json!({
        "block": titled_block,
        "version": plan.version,
        "memo": {},
        "open": open,
        "started": true,
        "running_turn": running,
        "transcript": transcript.map(|path| json!({"path": path, "log": {
            "cursor": 30_000 * turns, "turns": [], "count": turns,
            "last_sent": [last_turn_id, s.hex(16)], "last_sent_ask": s.hex(16),
            "first_ask": ask}})),
        "hold": null,
        "last_limits": limits.as_ref().map(|l| serde_json::to_value(l).unwrap()),
        "limits": limits,
        "last_beat_ms": last_beat,
        "last_ms": last_ms,
        "first_ms": plan.start_ms,
        "ended": ended,
    });
    let record: SessionRecord =
        serde_json::from_value(record).expect("the generated record is a SessionRecord");
    Played {
        events,
        block,
        titled: titled_block,
        record,
    }
}

/// Events the plans give, without their words.
pub fn count(plans: &[Plan]) -> usize {
    plans.iter().map(|p| play(p, false).events.len()).sum()
}

/// Appends the plans' sessions, a day at a time (a day's events in the
/// order of their times, one transaction), played on another thread while
/// this one writes. Returns the events written.
pub fn write(ob: &mut Outbox, plans: Vec<Plan>) -> usize {
    let mut days: Vec<Vec<Plan>> = Vec::new();
    for p in plans {
        match days.last_mut() {
            Some(d) if d[0].start_ms / DAY_MS == p.start_ms / DAY_MS => d.push(p),
            _ => days.push(vec![p]),
        }
    }
    let (tx, rx) = std::sync::mpsc::sync_channel::<(Vec<Plan>, Vec<Played>)>(2);
    let player = std::thread::spawn(move || {
        for day in days {
            let played = day.iter().map(|p| play(p, true)).collect();
            if tx.send((day, played)).is_err() {
                return;
            }
        }
    });
    let mut written = 0;
    let mut ids = Rng::new(99);
    for (day, mut played) in rx {
        let mut order: Vec<(i64, usize, usize)> = Vec::new();
        for (si, p) in played.iter().enumerate() {
            for (ei, e) in p.events.iter().enumerate() {
                order.push((e.as_ref().unwrap().ms, si, ei));
            }
        }
        order.sort();
        let txn = ob.begin().unwrap();
        for (ms, si, ei) in order {
            let plan = &day[si];
            let ev = played[si].events[ei].take().unwrap();
            let block = if ev.titled {
                &played[si].titled
            } else {
                &played[si].block
            };
            let stamp = Stamp {
                harness: plan.harness,
                harness_event: Some(ev.hook),
                version: Some(plan.version),
                session_id: &plan.id,
                block,
                time_ms: ms,
            };
            let mut env = envelope(&stamp, 0, ev.data);
            env.id = ulid::Ulid::from_parts(ms as u64, u128::from(ids.next()) << 16).to_string();
            txn.append(&mut env).unwrap();
            written += 1;
        }
        for (plan, p) in day.iter().zip(&played) {
            txn.save_session(plan.harness, &plan.id, &p.record).unwrap();
        }
        txn.commit().unwrap();
    }
    player.join().unwrap();
    written
}

/// Plans whose sessions, played, all end before `until` (a plan's times
/// move together with its start).
pub fn ending_before(mut plans: Vec<Plan>, until: i64) -> Vec<Plan> {
    for p in &mut plans {
        let played = play(p, false);
        let over = played.last_ms() - until;
        if over > 0 {
            p.start_ms -= over;
        }
    }
    plans.sort_by_key(|p| p.start_ms);
    plans
}

/// The sinks a person with a year of use has: a file archive that has taken
/// everything, and a team receiver paused six weeks ago on a refused token
/// (its cursor holds back retention; `status` shows it behind).
pub fn sinks(state: &Path, ob: &mut Outbox, now: i64) {
    let added = now - 360 * DAY_MS;
    std::fs::write(
        state.join("sinks.json"),
        serde_json::to_string_pretty(&json!({"sinks": [
            {"id": "s_archive", "kind": "file", "path": state.join("archive.jsonl"), "tier": 3,
             "added_at": added},
            {"id": "s_team", "kind": "http", "url": "https://sessions.example.com/v1/events",
             "tier": 1, "added_at": added,
             "paused": "the receiver refused the token (401): sessionpipe sink token s_team --token-stdin gives it a new one"},
        ]}))
        .unwrap(),
    )
    .unwrap();
    let last = ob.counts().unwrap().last_rowid;
    ob.set_sink_cursor("s_archive", last).unwrap();
    // The last event stored before six weeks ago (rowids follow time here,
    // near enough): a binary search over rowids.
    let cut = protocol::time::rfc3339_ms(now - 42 * DAY_MS);
    let (mut lo, mut hi) = (0i64, last);
    while lo < hi {
        let mid = (lo + hi + 1) / 2;
        let at = ob.events_after(mid - 1, 1).unwrap();
        let time = at
            .first()
            .and_then(|e| serde_json::from_str::<Value>(&e.envelope).ok())
            .and_then(|v| v["time"].as_str().map(str::to_string))
            .unwrap_or_default();
        if time < cut {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    // Only ever forward: set afresh.
    ob.forget_cursor("s_team").unwrap();
    ob.set_sink_cursor("s_team", lo).unwrap();
}
