//! One agent process and the ACP conversation with it, on the caller's tokio
//! runtime: started in its own process group with its stdin and stdout piped
//! (stderr's tail kept for a failure's words), `initialize`d, then
//! `session/new`, `session/load`, `session/prompt` and `session/cancel` as the
//! caller asks. One task reads the agent's lines: answers go to the call that
//! waits for them, `session/update`s to the turn they belong to, requests are
//! answered at once (`session/request_permission` from the turn's mode, every
//! other method "not found": the client offers no files and no terminal).
//!
//! Every call that waits for an answer is bounded, except a prompt, whose
//! bound is the caller's. A line that is not JSON-RPC ends the agent: its
//! stdout is the protocol's alone. Ending is through the protocol (a running
//! turn cancelled), then stdin closed, then the process group signalled, and
//! with it every process the agent started that left the group (a shell
//! tool in a session of its own; on Linux only, found in `/proc` before
//! anything is signalled: see the `tree` module), so neither the agent nor
//! anything it started is left behind; dropping an `Agent` kills the group
//! and those at once.
//!
//! Knows nothing of control, acks or sessionpipe's sessions.

use crate::tail::StderrTail;
use crate::tree::{Root, Tree};
use crate::turn::{Mode, Turn, TurnEnd};
use crate::wire::{self, AUTH_REQUIRED, Incoming, METHOD_NOT_FOUND, RpcError};
use agent_client_protocol_schema::v1 as acp;
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::process::ChildStdin;
use tokio::sync::{oneshot, watch};

/// After `session/load` answers, how long the replayed history may go on
/// being quiet before a prompt is sent (Gemini CLI answers mid-replay), and
/// the most that wait may take.
const REPLAY_QUIET: Duration = Duration::from_millis(300);
const REPLAY_MAX: Duration = Duration::from_secs(5);
/// While a stop waits for the agent, how often it looks again for what the
/// agent started.
const TREE_POLL: Duration = Duration::from_millis(50);

/// How to run an agent.
#[derive(Clone, Debug)]
pub struct Launch {
    pub program: PathBuf,
    pub args: Vec<String>,
    /// The folder the process starts in (its sessions name their own).
    pub cwd: PathBuf,
    /// Added to the daemon's environment.
    pub env: Vec<(String, String)>,
}

/// The bounds of one agent's conversation.
#[derive(Clone, Copy, Debug)]
pub struct Bounds {
    /// The longest an answer to `initialize`, `session/new` or `session/load`
    /// may take (a write to its stdin too).
    pub answer: Duration,
    /// How long the agent has to exit once its stdin is closed, and again
    /// after the polite signal.
    pub grace: Duration,
}

impl Default for Bounds {
    fn default() -> Bounds {
        Bounds {
            answer: Duration::from_secs(120),
            grace: Duration::from_secs(3),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum AcpError {
    #[error("{program} could not start: {source}")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    /// The agent wants its person signed in; that is done at a terminal.
    #[error("{words} (sign in at this machine's terminal; sessionpipe never signs in for you)")]
    AuthRequired { words: String },
    #[error("the agent refused {method}: {words}")]
    Refused { method: String, words: String },
    #[error("the agent did not answer {method} within {secs} s")]
    NoAnswer { method: String, secs: u64 },
    #[error("the agent broke the protocol: {0}")]
    Broke(String),
    #[error("the agent exited{0}")]
    Exited(String),
    #[error("the agent speaks ACP version {0}; sessionpipe speaks version 1")]
    Version(u64),
    #[error("the agent cannot reopen a session (it offers no session/load)")]
    NoLoad,
    #[error("a turn of this session is running already")]
    Busy,
}

/// A running turn and who is told when its reply grows.
struct Running {
    turn: Turn,
    grew: watch::Sender<u64>,
}

/// What the reading task and the callers share.
struct Shared {
    stdin: tokio::sync::Mutex<Option<ChildStdin>>,
    pending: Mutex<HashMap<u64, oneshot::Sender<Result<Value, RpcError>>>>,
    turns: Mutex<HashMap<String, Running>>,
    /// Why the conversation is over, once it is.
    ended: Mutex<Option<String>>,
    stderr: StderrTail,
    /// Counts every `session/update` (a replay's end is the quiet after it).
    updates: watch::Sender<u64>,
    bounds: Bounds,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    async fn send(&self, bytes: &[u8]) -> Result<(), AcpError> {
        let write = async {
            let mut stdin = self.stdin.lock().await;
            let Some(w) = stdin.as_mut() else {
                return Err(std::io::Error::from(std::io::ErrorKind::BrokenPipe));
            };
            w.write_all(bytes).await?;
            w.flush().await
        };
        match tokio::time::timeout(self.bounds.answer, write).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => Err(self.gone()),
            Err(_) => Err(AcpError::NoAnswer {
                method: "a write to its stdin".into(),
                secs: self.bounds.answer.as_secs(),
            }),
        }
    }

    /// The error a call gets once the conversation is over.
    fn gone(&self) -> AcpError {
        match lock(&self.ended).clone() {
            Some(words) if words.starts_with("broke:") => AcpError::Broke(words[6..].to_string()),
            Some(words) => AcpError::Exited(words),
            None => AcpError::Exited(String::new()),
        }
    }

    /// Ends the conversation: every waiting call gets `why`.
    fn end(&self, why: String) {
        let mut ended = lock(&self.ended);
        if ended.is_none() {
            *ended = Some(why);
        }
        drop(ended);
        lock(&self.pending).clear();
    }
}

/// One agent process.
pub struct Agent {
    shared: Arc<Shared>,
    pid: Option<u32>,
    /// The agent as it was at its start, where its descendants are walked
    /// from.
    root: Option<Root>,
    exited: watch::Receiver<Option<String>>,
    can_load: bool,
    next_id: AtomicU64,
    stopped: AtomicBool,
    reader: tokio::task::JoinHandle<()>,
}

impl Agent {
    /// Starts the agent and says `initialize`.
    pub async fn start(launch: &Launch, bounds: Bounds) -> Result<Agent, AcpError> {
        let name = launch
            .program
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut cmd = tokio::process::Command::new(&launch.program);
        cmd.args(&launch.args)
            .current_dir(&launch.cwd)
            .envs(launch.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        #[cfg(unix)]
        cmd.process_group(0);
        let mut child = cmd.spawn().map_err(|source| AcpError::Spawn {
            program: name.clone(),
            source,
        })?;
        let (updates, _) = watch::channel(0);
        let (stderr, tail) = StderrTail::spawn(child.stderr.take().expect("stderr is piped"));
        let shared = Arc::new(Shared {
            stdin: tokio::sync::Mutex::new(child.stdin.take()),
            pending: Mutex::new(HashMap::new()),
            turns: Mutex::new(HashMap::new()),
            ended: Mutex::new(None),
            stderr,
            updates,
            bounds,
        });
        let pid = child.id();
        let root = Root::of(pid);
        let stdout = child.stdout.take().expect("stdout is piped");
        let (exit_tx, exited) = watch::channel(None);
        // The process is reaped here whatever else happens.
        tokio::spawn(async move {
            let status = child.wait().await;
            let _ = tail.await;
            let said = match status {
                Ok(s) => format!(" ({s})"),
                Err(e) => format!(" ({e})"),
            };
            let _ = exit_tx.send(Some(said));
        });
        let reader = tokio::spawn(read_lines(shared.clone(), stdout, exited.clone()));
        let mut agent = Agent {
            shared,
            pid,
            root,
            exited,
            can_load: false,
            next_id: AtomicU64::new(1),
            stopped: AtomicBool::new(false),
            reader,
        };
        let init = acp::InitializeRequest::new(agent_client_protocol_schema::ProtocolVersion::V1)
            .client_capabilities(
                acp::ClientCapabilities::new()
                    .fs(acp::FileSystemCapabilities::new()
                        .read_text_file(false)
                        .write_text_file(false))
                    .terminal(false),
            )
            .client_info(acp::Implementation::new(
                "sessionpipe",
                env!("CARGO_PKG_VERSION"),
            ));
        let answer = agent.call("initialize", init, Some(bounds.answer)).await?;
        let version = answer["protocolVersion"].as_u64().unwrap_or(0);
        if version != 1 {
            return Err(AcpError::Version(version));
        }
        agent.can_load = answer["agentCapabilities"]["loadSession"] == true;
        Ok(agent)
    }

    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// Whether the agent can reopen a session (`loadSession`).
    pub fn can_load(&self) -> bool {
        self.can_load
    }

    /// Whether the conversation is over (the agent exited or broke it).
    pub fn ended(&self) -> bool {
        lock(&self.shared.ended).is_some()
    }

    /// A new session in `cwd`; its id as the agent names it.
    pub async fn new_session(&self, cwd: &Path) -> Result<String, AcpError> {
        let req = acp::NewSessionRequest::new(cwd);
        let answer = self
            .call("session/new", req, Some(self.shared.bounds.answer))
            .await?;
        answer["sessionId"]
            .as_str()
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .ok_or_else(|| AcpError::Broke("session/new answered without a sessionId".into()))
    }

    /// Reopens a session the agent ran before, and lets its replayed
    /// history pass (it is no reply of a turn of ours).
    pub async fn load_session(&self, id: &str, cwd: &Path) -> Result<(), AcpError> {
        if !self.can_load {
            return Err(AcpError::NoLoad);
        }
        let mut seen = self.shared.updates.subscribe();
        let req = acp::LoadSessionRequest::new(id.to_string(), cwd);
        self.call("session/load", req, Some(self.shared.bounds.answer))
            .await?;
        let settle = async {
            while let Ok(Ok(())) = tokio::time::timeout(REPLAY_QUIET, seen.changed()).await {}
        };
        let _ = tokio::time::timeout(REPLAY_MAX, settle).await;
        Ok(())
    }

    /// Runs one turn: `text` as one text block; returns when the agent's
    /// answer says how it stopped. `grew` counts the reply's growth.
    pub async fn prompt(
        &self,
        session: &str,
        text: &str,
        mode: Mode,
        grew: watch::Sender<u64>,
    ) -> Result<TurnEnd, AcpError> {
        {
            let mut turns = lock(&self.shared.turns);
            if turns.contains_key(session) {
                return Err(AcpError::Busy);
            }
            let turn = Turn::new(mode);
            turns.insert(session.to_string(), Running { turn, grew });
        }
        let req = acp::PromptRequest::new(
            session.to_string(),
            vec![acp::ContentBlock::Text(acp::TextContent::new(text))],
        );
        let answered = self.call("session/prompt", req, None).await;
        let running = lock(&self.shared.turns).remove(session);
        let answer = answered?;
        let turn = running.map(|r| r.turn).unwrap_or_else(|| Turn::new(mode));
        let stop = answer["stopReason"]
            .as_str()
            .unwrap_or("end_turn")
            .to_string();
        Ok(TurnEnd::of(turn, stop))
    }

    /// The reply of the turn running in `session`, so far.
    pub fn reply_so_far(&self, session: &str) -> Option<String> {
        lock(&self.shared.turns)
            .get(session)
            .map(|r| r.turn.reply())
    }

    /// Whether a turn runs in `session` now.
    pub fn running(&self, session: &str) -> bool {
        lock(&self.shared.turns).contains_key(session)
    }

    /// `session/cancel`: the running turn ends, its prompt answering
    /// `cancelled`.
    pub async fn cancel(&self, session: &str) -> Result<(), AcpError> {
        let note = acp::CancelNotification::new(session.to_string());
        self.shared
            .send(&wire::notification("session/cancel", note))
            .await
    }

    /// Ends the agent: running turns cancelled, stdin closed, and after the
    /// grace the process group and every process the agent started outside
    /// it signalled (politely, then not). What the agent started is gathered
    /// first and again while it is waited for, before anything is
    /// signalled: once it exits, its orphans belong to init.
    pub async fn stop(&self) {
        let mut tree = Tree::new(self.root);
        tree.gather();
        let running: Vec<String> = lock(&self.shared.turns).keys().cloned().collect();
        for session in running {
            let _ = self.cancel(&session).await;
        }
        self.shared.stdin.lock().await.take();
        let grace = self.shared.bounds.grace;
        let gone = self.wait_exit(&mut tree, grace, false).await;
        if !gone {
            self.signal(false);
        }
        if !gone || tree.alive() {
            tree.signal(false);
            self.wait_exit(&mut tree, grace, true).await;
        }
        // Whatever it started and left running goes with it.
        self.signal(true);
        tree.signal(true);
        self.stopped.store(true, Ordering::Relaxed);
        let mut exited = self.exited.clone();
        let _ = tokio::time::timeout(grace, exited.wait_for(Option::is_some)).await;
    }

    /// Waits up to `within` for the agent to exit (and with `all`, for what
    /// it started to end too), gathering its tree meanwhile; whether it
    /// did.
    async fn wait_exit(&self, tree: &mut Tree, within: Duration, all: bool) -> bool {
        let until = Instant::now() + within;
        let mut exited = self.exited.clone();
        loop {
            tree.gather();
            let out = exited.borrow().is_some();
            if out && (!all || !tree.alive()) {
                return true;
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return out;
            }
            let nap = left.min(TREE_POLL);
            if out {
                tokio::time::sleep(nap).await;
            } else {
                let _ = tokio::time::timeout(nap, exited.wait_for(Option::is_some)).await;
            }
        }
    }

    /// Signals the agent's process group (`kill`: SIGKILL, else SIGTERM).
    fn signal(&self, kill: bool) {
        #[cfg(unix)]
        if let Some(pid) = self
            .pid
            .and_then(|p| rustix::process::Pid::from_raw(p as i32))
        {
            use rustix::process::{Signal, kill_process_group};
            let _ = kill_process_group(pid, if kill { Signal::KILL } else { Signal::TERM });
        }
        #[cfg(not(unix))]
        let _ = kill;
    }

    async fn call(
        &self,
        method: &str,
        params: impl serde::Serialize,
        bound: Option<Duration>,
    ) -> Result<Value, AcpError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        if self.ended() {
            return Err(self.shared.gone());
        }
        lock(&self.shared.pending).insert(id, tx);
        self.shared.send(&wire::request(id, method, params)).await?;
        let answered = match bound {
            Some(b) => match tokio::time::timeout(b, rx).await {
                Ok(a) => a,
                Err(_) => {
                    lock(&self.shared.pending).remove(&id);
                    return Err(AcpError::NoAnswer {
                        method: method.to_string(),
                        secs: b.as_secs(),
                    });
                }
            },
            None => rx.await,
        };
        match answered {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) if e.code == AUTH_REQUIRED => Err(AcpError::AuthRequired {
                words: words_of(&e),
            }),
            Ok(Err(e)) => Err(AcpError::Refused {
                method: method.to_string(),
                words: words_of(&e),
            }),
            Err(_) => Err(self.shared.gone()),
        }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        if !self.stopped.load(Ordering::Relaxed) {
            // Found before the group is killed: killing reparents them.
            let mut tree = Tree::new(self.root);
            tree.gather();
            self.signal(true);
            tree.signal(true);
        }
        self.reader.abort();
    }
}

/// An error's words as the agent put them (its data's message, when that
/// says more).
fn words_of(e: &RpcError) -> String {
    let detail = e
        .data
        .as_ref()
        .and_then(|d| {
            d.as_str()
                .or_else(|| d["message"].as_str())
                .or_else(|| d["details"].as_str())
        })
        .filter(|d| !d.trim().is_empty() && !e.message.contains(d.trim()));
    match detail {
        Some(d) if e.message.trim().is_empty() => d.trim().to_string(),
        Some(d) => format!("{}: {}", e.message.trim(), d.trim()),
        None => e.message.trim().to_string(),
    }
}

/// Reads the agent's lines until its stdout closes or it breaks the
/// protocol.
async fn read_lines(
    shared: Arc<Shared>,
    stdout: tokio::process::ChildStdout,
    mut exited: watch::Receiver<Option<String>>,
) {
    let mut lines = BufReader::new(stdout);
    let mut line = Vec::new();
    loop {
        let Some(over) = wire::read_line(&mut lines, &mut line).await else {
            break;
        };
        if over {
            let why = format!("broke:a line longer than {} MiB", wire::MAX_LINE >> 20);
            shared.end(why);
            return;
        }
        match wire::classify(&line) {
            Incoming::Blank => {}
            Incoming::Answer { id, outcome } => {
                if let Some(tx) = lock(&shared.pending).remove(&id) {
                    let _ = tx.send(outcome);
                }
            }
            Incoming::Notification { method, params } => {
                if method == "session/update" {
                    update(&shared, &params);
                }
            }
            Incoming::Request { id, method, params } => {
                let bytes = if method == "session/request_permission" {
                    wire::answer(&id, permission(&shared, &params))
                } else {
                    wire::error(&id, METHOD_NOT_FOUND, "Method not found")
                };
                if shared.send(&bytes).await.is_err() {
                    break;
                }
            }
            Incoming::Malformed(head) => {
                shared.end(format!("broke:it wrote {head:?}"));
                return;
            }
        }
    }
    // Its stdout closed: say how it exited, with its last words.
    let _ = tokio::time::timeout(Duration::from_secs(2), exited.wait_for(Option::is_some)).await;
    let status = exited.borrow().clone().unwrap_or_default();
    let words = shared.stderr.words();
    let why = if words.is_empty() {
        status
    } else {
        format!("{status}: {words}")
    };
    shared.end(why);
}

fn update(shared: &Shared, params: &Value) {
    shared.updates.send_modify(|n| *n += 1);
    let Some(session) = params["sessionId"].as_str() else {
        return;
    };
    let mut turns = lock(&shared.turns);
    if let Some(r) = turns.get_mut(session)
        && r.turn.fold(&params["update"])
    {
        r.grew.send_modify(|n| *n += 1);
    }
}

/// The answer to a permission request: the running turn's mode decides; with
/// no turn of ours running, nothing is allowed.
fn permission(shared: &Shared, params: &Value) -> Value {
    let session = params["sessionId"].as_str().unwrap_or_default();
    let mut turns = lock(&shared.turns);
    match turns.get_mut(session) {
        Some(r) => r.turn.answer_permission(params),
        None => Turn::new(Mode::Safe).answer_permission(params),
    }
}
