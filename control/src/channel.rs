//! `sessionpipe channel`: Claude Code's channel (ADAPTERS.md, Claude Code row,
//! Control in place; a research preview), an MCP server on stdio that hands a
//! session its verified messages as `notifications/claude/channel`.
//!
//! Owns the server's side of MCP (JSON-RPC 2.0, one message a line): it
//! answers `initialize` with the `claude/channel` capability and instructions,
//! `ping` and an empty `tools/list`; every other request is method-not-found
//! (`server/discover` too: answering it would make the connection MCP
//! 2026-07-28, where Claude Code registers no channel); notifications from the
//! client are read and dropped. For messages it asks the daemon's control
//! socket exactly as `sessionpipe wait` does, one message a connection, and
//! reconnects in silence after a restart.
//!
//! It must never take a message it can't hand over: Claude Code acknowledges
//! no notification and drops one in silence where the channel isn't
//! registered, so it asks the daemon only once the client said it is ready,
//! and only when the Claude Code that started it asked for this channel in an
//! interactive session (`--dangerously-load-development-channels
//! server:sessionpipe`, never `--print`). It can't see the rest of Claude
//! Code's gate (its feature flag, a third-party provider, an organization's
//! policy): a session that passes the flag but is refused there drops what
//! this server hands it, and only the transcript's `channel` record shows
//! that a hand-over took. It never frames the words (the daemon did) and never
//! answers for the session: its reply goes back by the transcript, as a
//! waiter's does.
//!
//! Measured on Claude Code 2.1.332: a stdio server gets `CLAUDE_CODE_SESSION_ID`
//! in its environment; the client sends a `server/discover` probe (MCP
//! 2026-07-28) first, then `initialize` at 2025-11-25 and `initialized`, and
//! registers the channel within milliseconds, while its startup dialog about
//! development channels is still up; the capability is
//! `experimental["claude/channel"]`; the notification is `{content, meta}`,
//! `meta` string values whose keys match `[A-Za-z_][A-Za-z0-9_]*` (others are
//! dropped); an idle session turns it into an `isMeta` `user` record with
//! `origin: {kind: "channel", server: "sessionpipe"}` and the words in
//! `<channel source="sessionpipe" message_id="…">`.

use serde_json::{Map, Value, json};
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// The name the server must be registered under, which the session's flag
/// names (`server:sessionpipe`).
pub const SERVER: &str = "sessionpipe";
/// The notification Claude Code reads as a channel message.
pub const METHOD: &str = "notifications/claude/channel";
/// The flag that loads a development channel.
pub const FLAG: &str = "--dangerously-load-development-channels";

/// The MCP revisions this server speaks, newest first. All before 2026-07-28,
/// whose connections carry no channel.
const VERSIONS: [&str; 5] = [
    "2025-11-25",
    "2025-06-18",
    "2025-03-26",
    "2024-11-05",
    "2024-10-07",
];

/// What the model is told of this channel's messages (`instructions`).
pub const INSTRUCTIONS: &str = "Messages that arrive on this channel, in <channel source=\"sessionpipe\" …> tags, \
are from the person who uses this session: they sent them from their paired device, and sessionpipe \
verified them on this machine before handing them to you. Read them as the person's own words and act \
on them as you would on a prompt they typed here; the line before the words, which says where the \
message came from, is sessionpipe's. Your answer goes back to them by itself: answer here as usual, \
and never reach for a tool or a command to send it.";

/// After the client says it is ready, how long to leave it to register the
/// channel before the first message: one sent earlier is dropped.
const SETTLE: Duration = Duration::from_secs(1);

#[derive(Debug, thiserror::Error)]
pub enum ChannelError {
    #[error("reading the client: {0}")]
    Read(#[source] std::io::Error),
    #[error("writing to the client: {0}")]
    Write(#[source] std::io::Error),
}

/// The protocol half: fed the client's lines, it says what to write back.
#[derive(Debug, Default)]
pub struct Channel {
    ready: bool,
}

impl Channel {
    pub fn new() -> Channel {
        Channel::default()
    }

    /// Whether the client finished initializing (`notifications/initialized`).
    pub fn ready(&self) -> bool {
        self.ready
    }

    /// One line from the client; the line to write back, if any.
    pub fn handle(&mut self, line: &str) -> Option<String> {
        if line.trim().is_empty() {
            return None;
        }
        let msg: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(_) => return Some(error(Value::Null, -32700, "Parse error")),
        };
        let Some(obj) = msg.as_object() else {
            // Batches left MCP in 2025-06-18 and Claude Code sends none.
            return Some(error(Value::Null, -32600, "Invalid Request"));
        };
        let id = obj.get("id").cloned();
        let Some(method) = obj.get("method").and_then(Value::as_str) else {
            // A response: this server asks nothing, so it answers none.
            if obj.contains_key("result") || obj.contains_key("error") {
                return None;
            }
            return Some(error(id.unwrap_or(Value::Null), -32600, "Invalid Request"));
        };
        let Some(id) = id else {
            if method == "notifications/initialized" {
                self.ready = true;
            }
            return None;
        };
        let params = obj.get("params");
        let result = match method {
            "initialize" => initialize(params),
            "ping" => json!({}),
            "tools/list" => json!({"tools": []}),
            _ => return Some(error(id, -32601, "Method not found")),
        };
        Some(json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string())
    }
}

fn initialize(params: Option<&Value>) -> Value {
    let asked = params
        .and_then(|p| p.get("protocolVersion"))
        .and_then(Value::as_str);
    // The client's revision when we speak it; else our newest, never 2026-07-28.
    let version = VERSIONS
        .iter()
        .find(|v| Some(**v) == asked)
        .unwrap_or(&VERSIONS[0]);
    json!({
        "protocolVersion": version,
        "capabilities": {"experimental": {"claude/channel": {}}},
        "serverInfo": {"name": SERVER, "version": env!("CARGO_PKG_VERSION")},
        "instructions": INSTRUCTIONS,
    })
}

fn error(id: Value, code: i64, message: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string()
}

/// The notification for one framed message: its words as they came, and the
/// message's mark as `message_id` where the frame names one.
pub fn notification(framed: &str) -> String {
    let mut meta = Map::new();
    if let Some(mark) = mark(framed) {
        meta.insert("message_id".into(), mark.into());
    }
    let mut params = json!({"content": framed});
    if !meta.is_empty() {
        params["meta"] = Value::Object(meta);
    }
    json!({"jsonrpc": "2.0", "method": METHOD, "params": params}).to_string()
}

/// The mark an in-place frame ends its first line with (`…; message
/// <mark>):`, at most 12 characters).
fn mark(framed: &str) -> Option<&str> {
    let first = framed.lines().next()?.trim_end();
    let rest = first.strip_suffix("):")?;
    let (_, mark) = rest.rsplit_once("; message ")?;
    let ok = !mark.is_empty()
        && mark.chars().count() <= 12
        && mark
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'));
    ok.then_some(mark)
}

/// Whether a Claude Code command line asks for this channel where Claude Code
/// registers one: `--dangerously-load-development-channels` with
/// `server:sessionpipe` among its values, in an interactive session (no
/// `-p`/`--print`, no SDK stream input, no `--sdk-url`).
pub fn asks_for_channel(args: &[String]) -> bool {
    let want = format!("server:{SERVER}");
    let mut asked = false;
    let mut in_flag = false;
    for a in args.iter().skip(1) {
        if a == "--" {
            break; // what follows is a prompt
        }
        if matches!(
            a.as_str(),
            "-p" | "--print" | "--input-format" | "--sdk-url"
        ) || a.starts_with("--input-format=")
            || a.starts_with("--sdk-url=")
            || a.starts_with("--print=")
        {
            return false;
        }
        if let Some(values) = a.strip_prefix(&format!("{FLAG}=")) {
            asked |= values.split(',').any(|v| v.trim() == want);
            in_flag = false;
        } else if a == FLAG {
            in_flag = true;
        } else if a.starts_with('-') {
            in_flag = false;
        } else if in_flag {
            asked |= a.split(',').any(|v| v.trim() == want);
        }
    }
    asked
}

/// What the waiter half needs: where the daemon's control socket is, and the
/// session it waits for (`claude-code:<id>`).
#[derive(Clone, Debug)]
pub struct Waiter {
    pub socket: PathBuf,
    pub session: String,
    /// The pause between the client's ready and the first wait.
    pub settle: Duration,
}

impl Waiter {
    pub fn new(socket: PathBuf, session: String) -> Waiter {
        Waiter {
            socket,
            session,
            settle: SETTLE,
        }
    }
}

/// Serves the client on `input`/`output` until it closes its end. With a
/// waiter, waits for the session's messages once the client is ready and
/// writes each as a notification; without one it only answers.
pub fn serve<W: Write + Send + 'static>(
    input: impl BufRead,
    output: W,
    waiter: Option<Waiter>,
) -> Result<(), ChannelError> {
    let output = Arc::new(Mutex::new(output));
    let stop = Arc::new(AtomicBool::new(false));
    let mut channel = Channel::new();
    let mut waiter = waiter;
    let mut got = Ok(());
    for line in input.lines() {
        let line = match line {
            Ok(l) => l,
            Err(e) => {
                got = Err(ChannelError::Read(e));
                break;
            }
        };
        if let Some(reply) = channel.handle(&line)
            && let Err(e) = write_line(&output, &reply)
        {
            got = Err(ChannelError::Write(e));
            break;
        }
        if channel.ready()
            && let Some(w) = waiter.take()
        {
            let (output, stop) = (output.clone(), stop.clone());
            let spawned = std::thread::Builder::new()
                .name("channel-wait".into())
                .spawn(move || wait_loop(&w, &output, &stop));
            if let Err(e) = spawned {
                tracing::warn!("channel: no thread to wait on: {e}");
            }
        }
    }
    stop.store(true, Ordering::SeqCst);
    got
}

fn write_line(output: &Mutex<impl Write>, line: &str) -> std::io::Result<()> {
    let mut out = output.lock().unwrap_or_else(PoisonError::into_inner);
    out.write_all(line.as_bytes())?;
    out.write_all(b"\n")?;
    out.flush()
}

/// Waits for one message at a time, as `sessionpipe wait` does, until the
/// client is gone; a daemon that isn't there is waited for in silence.
fn wait_loop(w: &Waiter, output: &Mutex<impl Write>, stop: &AtomicBool) {
    std::thread::sleep(w.settle);
    let mut pause = Duration::from_millis(200);
    while !stop.load(Ordering::SeqCst) {
        match wait_once(w) {
            Some(framed) => {
                if stop.load(Ordering::SeqCst)
                    || write_line(output, &notification(&framed)).is_err()
                {
                    return;
                }
                pause = Duration::from_millis(200);
                continue;
            }
            None => std::thread::sleep(pause),
        }
        pause = (pause * 2).min(Duration::from_secs(2));
    }
}

/// One wait on the control socket: the framed message, or none (no daemon,
/// or it went away).
#[cfg(unix)]
fn wait_once(w: &Waiter) -> Option<String> {
    use std::io::Read;
    let line = format!("{}\n", json!({"op": "wait", "session": w.session}));
    let mut stream = std::os::unix::net::UnixStream::connect(&w.socket).ok()?;
    stream.write_all(line.as_bytes()).ok()?;
    let mut text = String::new();
    stream.read_to_string(&mut text).ok()?;
    (!text.is_empty()).then_some(text)
}

#[cfg(not(unix))]
fn wait_once(_: &Waiter) -> Option<String> {
    None
}

/// Whether the Claude Code that started this process asked for the channel:
/// the nearest ancestor (of four) that is Claude Code, by its command line.
/// A line that can't be read is a no: the channel then takes no messages.
pub fn started_with_channel() -> bool {
    #[cfg(unix)]
    {
        let mut pid = std::os::unix::process::parent_id();
        for _ in 0..4 {
            if pid <= 1 {
                return false;
            }
            let Some(args) = command_line(pid) else {
                return false;
            };
            if is_claude(&args) || args.iter().any(|a| a.starts_with(FLAG)) {
                return asks_for_channel(&args);
            }
            let Some(up) = parent_of(pid) else {
                return false;
            };
            pid = up;
        }
        false
    }
    #[cfg(not(unix))]
    {
        false
    }
}

/// A command line that runs Claude Code: its binary, or its script under
/// Node (a shell between them, `CLAUDE_CODE_SHELL_PREFIX`, is walked past).
#[cfg_attr(not(unix), allow(dead_code))]
fn is_claude(args: &[String]) -> bool {
    args.iter().take(2).any(|a| {
        let name = a.rsplit(['/', '\\']).next().unwrap_or(a);
        matches!(name, "claude" | "claude.exe") || a.contains("@anthropic-ai/claude-code")
    })
}

#[cfg(target_os = "linux")]
fn command_line(pid: u32) -> Option<Vec<String>> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let args: Vec<String> = raw
        .split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    (!args.is_empty()).then_some(args)
}

#[cfg(target_os = "linux")]
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Elsewhere `ps` says it; its words split on spaces, which the flag and
/// its values never hold.
#[cfg(all(unix, not(target_os = "linux")))]
fn command_line(pid: u32) -> Option<Vec<String>> {
    let out = ps(pid, "args=")?;
    let args: Vec<String> = out.split_whitespace().map(str::to_string).collect();
    (!args.is_empty()).then_some(args)
}

#[cfg(all(unix, not(target_os = "linux")))]
fn parent_of(pid: u32) -> Option<u32> {
    ps(pid, "ppid=")?.trim().parse().ok()
}

#[cfg(all(unix, not(target_os = "linux")))]
fn ps(pid: u32, field: &str) -> Option<String> {
    let out = std::process::Command::new("ps")
        .args(["-ww", "-o", field, "-p", &pid.to_string()])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(c: &mut Channel, line: &str) -> Value {
        serde_json::from_str(&c.handle(line).expect("an answer")).unwrap()
    }

    fn init(version: &str) -> String {
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {},
            "clientInfo": {"name": "claude-code", "version": "2.1.332"}}})
        .to_string()
    }

    #[test]
    fn initialize_declares_the_channel_and_its_instructions() {
        let mut c = Channel::new();
        let r = reply(&mut c, &init("2025-06-18"));
        assert_eq!(r["jsonrpc"], "2.0");
        assert_eq!(r["id"], 0);
        let result = &r["result"];
        assert_eq!(result["protocolVersion"], "2025-06-18");
        assert_eq!(
            result["capabilities"],
            json!({"experimental": {"claude/channel": {}}})
        );
        assert_eq!(result["serverInfo"]["name"], "sessionpipe");
        assert_eq!(result["serverInfo"]["version"], env!("CARGO_PKG_VERSION"));
        let text = result["instructions"].as_str().unwrap();
        for words in [
            "person",
            "paired device",
            "verified",
            "goes back to them by itself",
        ] {
            assert!(text.contains(words), "{words}");
        }
        assert!(!c.ready(), "ready only when the client says so");
        assert_eq!(
            c.handle(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            None
        );
        assert!(c.ready());
    }

    #[test]
    fn the_version_is_the_clients_when_known_and_never_2026_07_28() {
        let mut c = Channel::new();
        for v in VERSIONS {
            assert_eq!(reply(&mut c, &init(v))["result"]["protocolVersion"], v);
        }
        for v in ["2026-07-28", "2027-01-01", "nonsense"] {
            assert_eq!(
                reply(&mut c, &init(v))["result"]["protocolVersion"],
                "2025-11-25",
                "{v}"
            );
        }
        let r = reply(
            &mut c,
            r#"{"jsonrpc":"2.0","id":"a","method":"initialize"}"#,
        );
        assert_eq!(r["id"], "a");
        assert_eq!(r["result"]["protocolVersion"], "2025-11-25");
    }

    #[test]
    fn ping_tools_and_the_rest() {
        let mut c = Channel::new();
        let r = reply(&mut c, r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
        assert_eq!(r, json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
        let r = reply(
            &mut c,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}"#,
        );
        assert_eq!(r["result"], json!({"tools": []}));
        // The modern probe is never answered: the connection stays one with a channel.
        for m in [
            "server/discover",
            "resources/list",
            "tools/call",
            "prompts/list",
        ] {
            let line = json!({"jsonrpc": "2.0", "id": 3, "method": m}).to_string();
            let r = reply(&mut c, &line);
            assert_eq!(r["error"]["code"], -32601, "{m}");
            assert_eq!(r["id"], 3);
        }
        // Notifications and responses are never answered.
        for line in [
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/claude/channel/permission_request"}"#,
            r#"{"jsonrpc":"2.0","id":9,"result":{}}"#,
            "",
        ] {
            assert_eq!(c.handle(line), None, "{line}");
        }
        assert_eq!(reply(&mut c, "{not json")["error"]["code"], -32700);
        assert_eq!(reply(&mut c, "[]")["error"]["code"], -32600);
        assert_eq!(reply(&mut c, r#"{"id":4}"#)["error"]["code"], -32600);
    }

    #[test]
    fn a_message_is_a_channel_notification_with_its_mark() {
        let framed = harness::frames::in_place("mac", "01JXYZ0123456789ABCD", "ship it");
        let n: Value = serde_json::from_str(&notification(&framed)).unwrap();
        assert_eq!(
            n,
            json!({"jsonrpc": "2.0", "method": "notifications/claude/channel",
                "params": {"content": framed, "meta": {"message_id": "23456789ABCD"}}})
        );
        assert!(n.get("id").is_none(), "a notification");
        // No mark: no meta.
        let n: Value = serde_json::from_str(&notification("just words")).unwrap();
        assert_eq!(n["params"], json!({"content": "just words"}));
        assert_eq!(mark("x; message a b):\nwords"), None);
    }

    #[test]
    fn only_an_interactive_session_with_the_flag_asks_for_the_channel() {
        let args = |s: &str| -> Vec<String> { s.split(' ').map(str::to_string).collect() };
        for yes in [
            "claude --dangerously-load-development-channels server:sessionpipe",
            "claude --dangerously-load-development-channels server:other server:sessionpipe --model x",
            "claude --dangerously-load-development-channels=server:sessionpipe",
            "claude --resume abc --dangerously-load-development-channels server:sessionpipe",
        ] {
            assert!(asks_for_channel(&args(yes)), "{yes}");
        }
        for no in [
            "claude",
            "claude --dangerously-load-development-channels server:other",
            "claude --channels server:sessionpipe",
            "claude -p --dangerously-load-development-channels server:sessionpipe",
            "claude --dangerously-load-development-channels server:sessionpipe --print hi",
            "claude --input-format stream-json --dangerously-load-development-channels server:sessionpipe",
            "claude --dangerously-load-development-channels --model server:sessionpipe",
            "claude -- --dangerously-load-development-channels server:sessionpipe",
        ] {
            assert!(!asks_for_channel(&args(no)), "{no}");
        }
        assert!(is_claude(&args("/usr/local/bin/claude --x")));
        assert!(is_claude(&args(
            "node /opt/node_modules/@anthropic-ai/claude-code/cli.js"
        )));
        assert!(!is_claude(&args("/bin/sh -c claude")));
    }

    /// The whole loop against a fake control socket: initialize, the client's
    /// ready, the wait line, and the message as a notification.
    #[cfg(unix)]
    #[test]
    fn the_loop_hands_a_waited_message_over_as_a_notification() {
        use std::io::{BufRead, BufReader, Write};
        use std::os::unix::net::UnixListener;

        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("control.sock");
        let listener = UnixListener::bind(&socket).unwrap();
        let framed = harness::frames::in_place("mac", "01JXYZ0123456789ABCD", "ship it");
        let answer = framed.clone();
        let daemon = std::thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            let mut line = String::new();
            BufReader::new(&stream).read_line(&mut line).unwrap();
            (&stream).write_all(answer.as_bytes()).unwrap();
            line
        });

        // The client's side: a pipe whose writer the test holds.
        let (read, mut write) = std::io::pipe().unwrap();
        let out = Shared::default();
        let waiter = Waiter {
            socket,
            session: "claude-code:abc".into(),
            settle: Duration::from_millis(10),
        };
        let seen = out.clone();
        let server = std::thread::spawn(move || serve(BufReader::new(read), out, Some(waiter)));
        writeln!(write, "{}", init("2025-11-25")).unwrap();
        writeln!(
            write,
            r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
        )
        .unwrap();

        let asked = daemon.join().unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&asked).unwrap(),
            json!({"op": "wait", "session": "claude-code:abc"})
        );
        let lines = seen.wait_lines(2);
        let init: Value = serde_json::from_str(&lines[0]).unwrap();
        assert_eq!(init["id"], 0);
        let n: Value = serde_json::from_str(&lines[1]).unwrap();
        assert_eq!(n["method"], METHOD);
        assert_eq!(n["params"]["content"], framed);
        assert_eq!(n["params"]["meta"]["message_id"], "23456789ABCD");

        drop(write);
        server.join().unwrap().unwrap();
    }

    /// Nothing is waited for before the client is ready, or without a waiter.
    #[cfg(unix)]
    #[test]
    fn no_wait_before_ready() {
        use std::io::BufReader;
        use std::os::unix::net::UnixListener;

        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("control.sock");
        let listener = UnixListener::bind(&socket).unwrap();
        listener.set_nonblocking(true).unwrap();
        let input = format!("{}\n", init("2025-11-25"));
        let waiter = Waiter {
            socket,
            session: "claude-code:abc".into(),
            settle: Duration::ZERO,
        };
        let out = Shared::default();
        serve(BufReader::new(input.as_bytes()), out.clone(), Some(waiter)).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        assert!(listener.accept().is_err(), "no connection to the daemon");
        assert_eq!(out.lines().len(), 1);
    }

    /// An output the test reads while the server writes (the tests that use
    /// it need a Unix socket for the daemon's end).
    #[cfg(unix)]
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    #[cfg(unix)]
    impl Shared {
        fn lines(&self) -> Vec<String> {
            let bytes = self.0.lock().unwrap().clone();
            String::from_utf8(bytes)
                .unwrap()
                .lines()
                .map(str::to_string)
                .collect()
        }

        fn wait_lines(&self, n: usize) -> Vec<String> {
            let end = std::time::Instant::now() + Duration::from_secs(10);
            loop {
                let got = self.lines();
                if got.len() >= n || std::time::Instant::now() > end {
                    return got;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }

    #[cfg(unix)]
    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
}
