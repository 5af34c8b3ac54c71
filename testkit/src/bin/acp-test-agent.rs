//! A scripted ACP agent for the ACP client's tests (never shipped): JSON-RPC
//! lines on stdin and stdout, a whole turn that echoes the prompt, and the
//! misbehaviours the client must survive, chosen by `SP_TEST_AGENT` (a comma
//! list): `auth`, `permission`, `slow`, `crash`, `malformed`, `silent`,
//! `flood`, `nonstandard`, `child`, `stubborn`. `SP_TEST_AGENT_LOG` names a
//! file that gets every line the client wrote; `SP_TEST_AGENT_PIDS` one that
//! gets this process's pid (and its child's).
//!
//! It never touches the network or any file but those two, and its own
//! requests are numbered from 0, as real agents number theirs.

use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::sync::mpsc;
use std::time::Duration;

struct Agent {
    modes: Vec<String>,
    out: std::io::Stdout,
    log: Option<std::fs::File>,
    lines: mpsc::Receiver<String>,
    next_id: u64,
    sessions: u64,
    /// Prompts of each session this process ran, for a load's replay.
    history: HashMap<String, Vec<String>>,
    calls: u64,
}

fn main() {
    let modes: Vec<String> = std::env::var("SP_TEST_AGENT")
        .unwrap_or_default()
        .split(',')
        .map(|m| m.trim().to_string())
        .filter(|m| !m.is_empty())
        .collect();
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
    let _child = modes.iter().any(|m| m == "child").then(|| {
        let c = std::process::Command::new("sleep")
            .arg("300")
            .spawn()
            .expect("sleep runs");
        if let Some(f) = pids.as_mut() {
            let _ = writeln!(f, "{}", c.id());
        }
        c
    });
    if let Some(f) = pids.as_mut() {
        let _ = writeln!(f, "{}", std::process::id());
    }
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut agent = Agent {
        modes,
        out: std::io::stdout(),
        log: open("SP_TEST_AGENT_LOG"),
        lines,
        next_id: 0,
        sessions: 0,
        history: HashMap::new(),
        calls: 0,
    };
    while let Some(msg) = agent.next(None) {
        agent.handle(msg);
    }
    if agent.has("stubborn") {
        loop {
            std::thread::sleep(Duration::from_secs(1));
        }
    }
}

impl Agent {
    fn has(&self, mode: &str) -> bool {
        self.modes.iter().any(|m| m == mode)
    }

    /// The next message from the client (logged), or `None` at its end or
    /// past `wait`.
    fn next(&mut self, wait: Option<Duration>) -> Option<Value> {
        loop {
            let line = match wait {
                Some(w) => self.lines.recv_timeout(w).ok()?,
                None => self.lines.recv().ok()?,
            };
            if let Some(f) = self.log.as_mut() {
                let _ = writeln!(f, "{line}");
            }
            if let Ok(v) = serde_json::from_str::<Value>(&line) {
                return Some(v);
            }
        }
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

    /// Asks the client something and waits for its answer, handling what
    /// else comes meanwhile (a cancel is noted).
    fn ask(&mut self, method: &str, params: Value) -> (Value, bool) {
        let id = self.next_id;
        self.next_id += 1;
        self.write(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let mut cancelled = false;
        while let Some(m) = self.next(None) {
            if m.get("method").is_none() && m["id"] == id {
                return (m, cancelled);
            }
            cancelled |= m["method"] == "session/cancel";
        }
        (Value::Null, cancelled)
    }

    fn handle(&mut self, m: Value) {
        let Some(method) = m["method"].as_str().map(str::to_string) else {
            return;
        };
        let Some(id) = m.get("id").cloned() else {
            return;
        };
        let params = m["params"].clone();
        if self.has("silent") {
            return;
        }
        match method.as_str() {
            "initialize" => {
                let auth = if self.has("auth") {
                    json!([{"id": "login", "name": "Log in",
                            "description": "Run `acp-test-agent login` at a terminal"}])
                } else {
                    json!([])
                };
                self.answer(&id, json!({"protocolVersion": 1,
                    "agentCapabilities": {"loadSession": true, "promptCapabilities": {}},
                    "authMethods": auth,
                    "agentInfo": {"name": "acp-test-agent", "version": "1"}}));
            }
            "session/new" if self.has("auth") => self.write(json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32000,
                          "message": "Authentication required: run `acp-test-agent login` at a terminal"}})),
            "session/new" => {
                self.sessions += 1;
                let session = format!("ta-{}-{}", std::process::id(), self.sessions);
                self.history.insert(session.clone(), Vec::new());
                self.answer(&id, json!({"sessionId": session}));
            }
            "session/load" => {
                let session = params["sessionId"].as_str().unwrap_or_default().to_string();
                let asked = self.history.get(&session).cloned().unwrap_or_default();
                if asked.is_empty() {
                    self.chunk(&session, "agent_message_chunk", "(history)");
                    self.answer(&id, json!({}));
                    self.chunk(&session, "agent_message_chunk", "(more history)");
                }
                for (i, a) in asked.iter().enumerate() {
                    self.chunk(&session, "user_message_chunk", a);
                    if i == 0 {
                        self.answer(&id, json!({}));
                    }
                    self.chunk(&session, "agent_message_chunk", &format!("Echo: {a}"));
                }
            }
            "session/prompt" => self.prompt(&id, &params),
            _ => self.write(json!({"jsonrpc": "2.0", "id": id,
                                   "error": {"code": -32601, "message": "Method not found"}})),
        }
    }

    fn prompt(&mut self, id: &Value, params: &Value) {
        let session = params["sessionId"].as_str().unwrap_or_default().to_string();
        let text: String = params["prompt"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect();
        self.history
            .entry(session.clone())
            .or_default()
            .push(text.clone());
        self.calls += 1;
        let call = format!("call-{}", self.calls);
        if self.has("nonstandard") {
            self.ask("craft/drainMidTurnQueue", json!({}));
        }
        if self.has("crash") {
            self.chunk(&session, "agent_message_chunk", "half a reply");
            eprintln!("fatal: the model went away");
            std::process::exit(3);
        }
        if self.has("malformed") {
            self.raw("this is not json {");
            self.raw(r#"{"jsonrpc":"2.0","id":"#);
            while self.next(None).is_some() {}
            std::process::exit(0);
        }
        if self.has("slow") {
            self.chunk(&session, "agent_message_chunk", "working");
            let until = std::time::Instant::now() + Duration::from_secs(120);
            while let Some(left) = until.checked_duration_since(std::time::Instant::now()) {
                match self.next(Some(left)) {
                    Some(m) if m["method"] == "session/cancel" => {
                        return self.answer(id, json!({"stopReason": "cancelled"}));
                    }
                    Some(_) => {}
                    None => break,
                }
            }
            return self.answer(id, json!({"stopReason": "end_turn"}));
        }
        if self.has("flood") {
            let x = "x".repeat(1000);
            for _ in 0..20_000 {
                self.chunk(&session, "agent_message_chunk", &x);
            }
            return self.answer(id, json!({"stopReason": "end_turn"}));
        }
        self.update(
            &session,
            json!({"sessionUpdate": "tool_call", "toolCallId": call,
            "title": "echo", "kind": "execute", "status": "pending"}),
        );
        let said = if self.has("permission") {
            let (answer, _) = self.ask(
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
            match outcome["optionId"].as_str() {
                Some(o) => format!("permission: {o}"),
                None => "permission: cancelled".to_string(),
            }
        } else {
            text
        };
        self.update(
            &session,
            json!({"sessionUpdate": "tool_call_update", "toolCallId": call,
                                     "status": "completed"}),
        );
        self.chunk(&session, "agent_message_chunk", "Echo: ");
        self.chunk(&session, "agent_message_chunk", &said);
        self.answer(id, json!({"stopReason": "end_turn"}));
    }
}
