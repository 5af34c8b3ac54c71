//! A scripted ACP agent for the ACP client's tests, never shipped: JSON-RPC
//! 2.0 lines on stdin and stdout (one object a line, stdout flushed after
//! each), a whole turn that echoes the prompt, a reopened session's replay,
//! and the misbehaviours the client must survive.
//!
//! It owns only that script. `SP_TEST_AGENT` chooses the behaviour (a comma
//! list, modes combine): `auth`, `permission`, `slow`, `crash`, `malformed`,
//! `silent`, `flood`, `nonstandard`, `child`, `detached` (a child in a
//! session of its own, as OpenCode and Gemini CLI start their shell tools, so
//! ending the agent's process group does not reach it), `stubborn`,
//! `slowstart` (which waits `SP_TEST_AGENT_DELAY_MS` before answering
//! `initialize`).
//! `SP_TEST_AGENT_LOG` names a file that gets every line the client wrote, as
//! received; `SP_TEST_AGENT_PIDS` one that gets this process's pid (then its
//! children's). Ids are echoed exactly as received; the agent's own requests are
//! numbered from 0, as real agents number theirs.
//!
//! It must not touch the network, any file but those two, or anything of the
//! real agents it stands in for; it must not decide what a test checks, nor
//! be started by anything but a test.

use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::io::{BufRead, Write};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const MODES: &[&str] = &[
    "auth",
    "permission",
    "slow",
    "crash",
    "malformed",
    "silent",
    "flood",
    "nonstandard",
    "child",
    "detached",
    "stubborn",
    "slowstart",
];

/// How long `slow` waits for a cancel before it ends its turn anyway.
const SLOW_TURN: Duration = Duration::from_secs(120);

struct Agent {
    modes: Vec<String>,
    out: std::io::Stdout,
    lines: mpsc::Receiver<String>,
    /// The id of the next request this agent sends.
    next_id: u64,
    sessions: u64,
    calls: u64,
    /// Each session of this process, with its turns (prompt, reply), for a
    /// load's replay.
    history: HashMap<String, Vec<(String, String)>>,
    /// The client's answers to our requests, by id, until they are taken.
    answers: HashMap<String, Value>,
    /// Sessions the client cancelled since their turn began.
    cancelled: HashSet<String>,
}

fn main() {
    let modes: Vec<String> = std::env::var("SP_TEST_AGENT")
        .unwrap_or_default()
        .split(',')
        .map(|m| m.trim().to_string())
        .filter(|m| !m.is_empty())
        .collect();
    for m in modes.iter().filter(|m| !MODES.contains(&m.as_str())) {
        eprintln!("acp-test-agent: unknown mode {m:?} (ignored)");
    }
    let open = |var: &str| {
        std::env::var_os(var).and_then(|p| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .ok()
        })
    };
    let mut pids = open("SP_TEST_AGENT_PIDS");
    let mut note_pid = |pid: u32| {
        if let Some(f) = pids.as_mut() {
            let _ = writeln!(f, "{pid}");
        }
    };
    note_pid(std::process::id());
    let _child = modes.iter().any(|m| m == "child").then(|| {
        let c = std::process::Command::new("sleep")
            .arg("300")
            .spawn()
            .expect("sleep runs");
        note_pid(c.id());
        c
    });
    let _detached = modes.iter().any(|m| m == "detached").then(|| {
        let c = detached("sleep", "60").expect("sleep runs in a session of its own");
        note_pid(c.id());
        c
    });
    let (tx, lines) = mpsc::channel();
    let mut log = open("SP_TEST_AGENT_LOG");
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if let Some(f) = log.as_mut() {
                let _ = writeln!(f, "{line}");
            }
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut agent = Agent {
        modes,
        out: std::io::stdout(),
        lines,
        next_id: 0,
        sessions: 0,
        calls: 0,
        history: HashMap::new(),
        answers: HashMap::new(),
        cancelled: HashSet::new(),
    };
    agent.wait_until(None, |_| false);
    if agent.has("stubborn") {
        loop {
            std::thread::sleep(Duration::from_secs(1));
        }
    }
}

/// Starts `program arg` in a new session (`setsid` between fork and exec),
/// so it is in neither this process's group nor its session.
#[cfg(unix)]
fn detached(program: &str, arg: &str) -> std::io::Result<std::process::Child> {
    use std::os::unix::process::CommandExt;
    unsafe extern "C" {
        fn setsid() -> i32;
    }
    let mut cmd = std::process::Command::new(program);
    cmd.arg(arg);
    // SAFETY: setsid(2) is async-signal-safe and touches no memory of ours.
    unsafe {
        cmd.pre_exec(|| {
            if setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.spawn()
}

#[cfg(not(unix))]
fn detached(program: &str, arg: &str) -> std::io::Result<std::process::Child> {
    std::process::Command::new(program).arg(arg).spawn()
}

impl Agent {
    fn has(&self, mode: &str) -> bool {
        self.modes.iter().any(|m| m == mode)
    }

    /// Handles what the client sends until `done` holds (true), or stdin
    /// ends or `until` passes first (false). Lines that are not JSON are
    /// skipped.
    fn wait_until(&mut self, until: Option<Instant>, done: impl Fn(&Self) -> bool) -> bool {
        while !done(self) {
            let line = match until {
                Some(u) => self
                    .lines
                    .recv_timeout(u.saturating_duration_since(Instant::now())),
                None => self.lines.recv().map_err(Into::into),
            };
            let Ok(line) = line else { return false };
            if let Ok(m) = serde_json::from_str::<Value>(&line) {
                self.handle(m);
            }
        }
        true
    }

    fn write(&mut self, v: Value) {
        self.raw(&v.to_string());
    }

    fn raw(&mut self, line: &str) {
        let mut out = self.out.lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }

    fn answer(&mut self, id: &Value, result: Value) {
        self.write(json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }

    fn fail(&mut self, id: &Value, code: i64, message: &str) {
        self.write(json!({"jsonrpc": "2.0", "id": id,
                          "error": {"code": code, "message": message}}));
    }

    fn update(&mut self, session: &str, update: Value) {
        self.write(json!({"jsonrpc": "2.0", "method": "session/update",
                          "params": {"sessionId": session, "update": update}}));
    }

    fn chunk(&mut self, session: &str, kind: &str, text: &str) {
        self.update(
            session,
            json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}}),
        );
    }

    /// Asks the client something and waits for its answer (the whole
    /// response; `null` if stdin ends first), handling all else meanwhile.
    fn ask(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.write(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let key = id.to_string();
        self.wait_until(None, |a| a.answers.contains_key(&key));
        self.answers.remove(&key).unwrap_or(Value::Null)
    }

    fn handle(&mut self, m: Value) {
        if self.has("silent") {
            return;
        }
        let id = m.get("id").cloned();
        let Some(method) = m["method"].as_str().map(str::to_string) else {
            // A response: kept for the request it answers.
            if let Some(id) = id {
                self.answers.insert(id.to_string(), m);
            }
            return;
        };
        let params = &m["params"];
        let session = params["sessionId"].as_str().unwrap_or_default().to_string();
        let Some(id) = id else {
            if method == "session/cancel" {
                self.cancelled.insert(session);
            }
            return;
        };
        match method.as_str() {
            "initialize" => self.initialize(&id),
            "session/new" if self.has("auth") => self.fail(
                &id,
                -32000,
                "Authentication required: run `acp-test-agent login` at a terminal",
            ),
            "session/new" => {
                self.sessions += 1;
                let session = format!("ta-{}-{}", std::process::id(), self.sessions);
                self.history.insert(session.clone(), Vec::new());
                self.answer(&id, json!({"sessionId": session}));
            }
            "session/load" => self.load(&id, &session),
            "session/prompt" => self.prompt(&id, &session, &params["prompt"]),
            _ => self.fail(&id, -32601, "Method not found"),
        }
    }

    fn initialize(&mut self, id: &Value) {
        if self.has("slowstart") {
            let ms = std::env::var("SP_TEST_AGENT_DELAY_MS")
                .ok()
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            std::thread::sleep(Duration::from_millis(ms));
        }
        let auth = if self.has("auth") {
            json!([{"id": "login", "name": "Log in",
                    "description": "Run `acp-test-agent login` at a terminal"}])
        } else {
            json!([])
        };
        self.answer(
            id,
            json!({"protocolVersion": 1,
                   "agentCapabilities": {"loadSession": true, "promptCapabilities": {}},
                   "authMethods": auth,
                   "agentInfo": {"name": "acp-test-agent", "version": "1"}}),
        );
    }

    /// Replays the session's turns as updates and answers in the middle of
    /// the replay, after its first update, as Gemini CLI does. A session
    /// this process never ran gets a stand-in history of two updates, so the
    /// answer still comes mid-replay.
    fn load(&mut self, id: &Value, session: &str) {
        let replay: Vec<(&str, String)> = match self.history.get(session) {
            Some(turns) => turns
                .iter()
                .flat_map(|(asked, said)| {
                    [
                        ("user_message_chunk", asked.clone()),
                        ("agent_message_chunk", said.clone()),
                    ]
                })
                .collect(),
            None => vec![
                ("agent_message_chunk", "(history)".to_string()),
                ("agent_message_chunk", "(more history)".to_string()),
            ],
        };
        if replay.is_empty() {
            return self.answer(id, json!({}));
        }
        for (i, (kind, text)) in replay.iter().enumerate() {
            self.chunk(session, kind, text);
            if i == 0 {
                self.answer(id, json!({}));
            }
        }
    }

    /// Ends the turn: cancelled if the client cancelled it, else `end_turn`.
    fn end(&mut self, id: &Value, session: &str) {
        let stop = if self.cancelled.remove(session) {
            "cancelled"
        } else {
            "end_turn"
        };
        self.answer(id, json!({"stopReason": stop}));
    }

    fn prompt(&mut self, id: &Value, session: &str, prompt: &Value) {
        let text: String = prompt
            .as_array()
            .into_iter()
            .flatten()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect();
        self.cancelled.remove(session);
        self.calls += 1;
        let call = format!("call-{}", self.calls);
        if self.has("nonstandard") {
            // Any answer will do, an error included.
            self.ask("craft/drainMidTurnQueue", json!({}));
        }
        if self.has("crash") {
            self.chunk(session, "agent_message_chunk", "half a reply");
            eprintln!("fatal: the model went away");
            std::process::exit(3);
        }
        if self.has("malformed") {
            self.raw("this is not json {");
            self.raw(r#"{"jsonrpc":"2.0","id":"#);
            return; // and never answers this prompt
        }
        if self.has("slow") {
            self.chunk(session, "agent_message_chunk", "working");
            let session = session.to_string();
            self.wait_until(Some(Instant::now() + SLOW_TURN), |a| {
                a.cancelled.contains(&session)
            });
            return self.end(id, &session);
        }
        if self.has("flood") {
            let x = "x".repeat(1000);
            for _ in 0..20_000 {
                self.chunk(session, "agent_message_chunk", &x);
            }
            return self.end(id, session);
        }
        self.update(
            session,
            json!({"sessionUpdate": "tool_call", "toolCallId": call,
                   "title": "echo", "kind": "execute", "status": "pending"}),
        );
        let said = if self.has("permission") {
            self.permission(session, &call)
        } else {
            text.clone()
        };
        self.update(
            session,
            json!({"sessionUpdate": "tool_call_update", "toolCallId": call,
                   "status": "completed"}),
        );
        self.chunk(session, "agent_message_chunk", "Echo: ");
        self.chunk(session, "agent_message_chunk", &said);
        self.history
            .entry(session.to_string())
            .or_default()
            .push((text, format!("Echo: {said}")));
        self.end(id, session);
    }

    /// Asks the client's permission for the turn's tool call; the reply's
    /// text names the option chosen, or `cancelled` (an error answer counts
    /// as cancelled).
    fn permission(&mut self, session: &str, call: &str) -> String {
        let answer = self.ask(
            "session/request_permission",
            json!({
                "sessionId": session,
                "toolCall": {"toolCallId": call, "title": "touch marker", "kind": "edit",
                             "status": "pending"},
                "options": [
                    {"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"},
                    {"optionId": "allow-always", "name": "Always allow", "kind": "allow_always"},
                    {"optionId": "reject-once", "name": "Reject", "kind": "reject_once"}]}),
        );
        let outcome = &answer["result"]["outcome"];
        match (outcome["outcome"].as_str(), outcome["optionId"].as_str()) {
            (Some("selected"), Some(o)) => format!("permission: {o}"),
            _ => "permission: cancelled".to_string(),
        }
    }
}
