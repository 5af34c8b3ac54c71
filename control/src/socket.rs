//! The daemon's control socket (`control.sock`, a Unix stream socket, 0600 in
//! the 0700 state dir): the Stop and permission hooks ask it for a verified
//! message for their call, and `sessionpipe wait` blocks on it for its session.
//!
//! The framing is local and ours: one request line of JSON, then the answer's
//! bytes and the end of the stream. A hook prints those bytes as they are (the
//! harness's own answer, made here by its adapter), so the hook parses nothing;
//! an empty answer is silence. A waiter gets the framed message alone.
//! Requests are bounded (one line of 4 KiB, read within 2 s, 256 connections).

// The server is a Unix socket; Windows has no control socket (README: "What
// has never run, per platform"), only the request types.
#[cfg(unix)]
use super::hub::{Ask, ForHook, Hub, MessageRef};
#[cfg(unix)]
use super::machine::Control;
#[cfg(unix)]
use std::sync::Arc;
#[cfg(unix)]
use std::time::Duration;
#[cfg(unix)]
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

/// A request line: a hook's is small, an ask carries a task of up to 20 000
/// characters.
#[cfg(unix)]
const MAX_LINE: usize = 128 * 1024;
#[cfg(unix)]
const READ_REQUEST: Duration = Duration::from_secs(2);
#[cfg(unix)]
const MAX_CONNECTIONS: usize = 256;

/// One request line.
#[derive(Debug, serde::Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum Request {
    /// A hook call, by the job it wrote; `ask` says which of the two it is.
    Hook {
        job: String,
        harness: String,
        ask: AskWire,
    },
    /// `sessionpipe wait --session <harness>:<id>`.
    Wait { session: String },
    /// `sessionpipe ask`: answered with one line, `{"reply"}` or `{"error"}`.
    Ask(super::ask::Ask),
    /// `sessionpipe handoff`: answered at once, `{"ok"}` or `{"error"}`.
    Handoff(super::ask::Ask),
}

#[derive(Clone, Copy, Debug, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AskWire {
    Turn,
    Permission,
}

#[cfg(unix)]
pub struct Server {
    path: std::path::PathBuf,
    task: tokio::task::JoinHandle<()>,
}

#[cfg(unix)]
impl Server {
    /// Serves `listener`, the socket at `path` the daemon bound private
    /// (0600, a dead daemon's file replaced: it holds the lock); the file
    /// goes when this is dropped.
    pub fn serve(
        path: &std::path::Path,
        listener: tokio::net::UnixListener,
        hub: Arc<Hub>,
        control: Option<Arc<Control>>,
    ) -> Server {
        let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                };
                let Ok(permit) = slots.clone().try_acquire_owned() else {
                    continue; // over the cap: closed at once
                };
                let (hub, control) = (hub.clone(), control.clone());
                tokio::spawn(async move {
                    serve(stream, &hub, control.as_ref()).await;
                    drop(permit);
                });
            }
        });
        Server {
            path: path.to_path_buf(),
            task,
        }
    }
}

#[cfg(unix)]
impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(unix)]
async fn serve(stream: tokio::net::UnixStream, hub: &Hub, control: Option<&Arc<Control>>) {
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read).take(MAX_LINE as u64);
    let mut line = String::new();
    let got = tokio::time::timeout(READ_REQUEST, reader.read_line(&mut line)).await;
    let Ok(Ok(n)) = got else {
        return;
    };
    if n == 0 {
        return;
    }
    let Ok(request) = serde_json::from_str::<Request>(&line) else {
        tracing::debug!("control socket: a request that is not one");
        return;
    };
    // What to write, and whose message it carries (acked once written).
    let (answer, handed): (String, Option<(MessageRef, &str)>) = match request {
        Request::Hook { job, harness, ask } => {
            let ask = match ask {
                AskWire::Turn => Ask::Turn,
                AskWire::Permission => Ask::Permission,
            };
            let window = Duration::from_secs(harness::control::PERMISSION_WAIT_S);
            let got = hub.hook(&job, ask, window).await;
            let from = match &got {
                ForHook::Turn(_, f) => Some(f.clone()),
                ForHook::Permission(_, f) => f.clone(),
                ForHook::Nothing => None,
            };
            (hook_bytes(&harness, got), from.map(|f| (f, "turn")))
        }
        Request::Wait { session } => {
            // Not `<harness>:<id>`: nothing will ever come for it.
            let Some(session) = super::hub::session_named(&session) else {
                return;
            };
            // The waiter's end closing (a harness's deadline) frees its place.
            let mut probe = reader.into_inner();
            let mut byte = [0u8; 1];
            let got = tokio::select! {
                got = hub.wait(&session) => got,
                _ = probe.read(&mut byte) => None,
            };
            hub.waiter_gone(&session);
            match got {
                Some((framed, from)) => (framed, Some((from, "waiter"))),
                None => (String::new(), None),
            }
        }
        Request::Ask(ask) => {
            let answer = match control {
                Some(c) => super::ask::ask(c, &ask).await,
                None => Err(super::ask::AskError::Outcome(
                    "control is off on this machine".into(),
                )),
            };
            let line = match answer {
                Ok(reply) => serde_json::json!({ "reply": reply }),
                Err(e) => serde_json::json!({ "error": e.to_string() }),
            };
            (format!("{line}\n"), None)
        }
        Request::Handoff(ask) => {
            let done = match control {
                Some(c) => super::ask::handoff(c, ask),
                None => Err(super::ask::AskError::Outcome(
                    "control is off on this machine".into(),
                )),
            };
            let line = match done {
                Ok(()) => serde_json::json!({ "ok": true }),
                Err(e) => serde_json::json!({ "error": e.to_string() }),
            };
            (format!("{line}\n"), None)
        }
    };
    let written = async {
        write.write_all(answer.as_bytes()).await?;
        write.shutdown().await
    }
    .await
    .is_ok();
    if let Some((from, mode)) = handed {
        hub.handed(&from, mode, written);
    }
}

/// The harness's own answer for what the hub gave a hook.
#[cfg(unix)]
fn hook_bytes(harness: &str, got: ForHook) -> String {
    let Some(control) = adapters::lookup(harness).and_then(|a| a.control()) else {
        return String::new();
    };
    match got {
        ForHook::Nothing => None,
        ForHook::Turn(framed, _) => control.turn_answer(&framed),
        ForHook::Permission(d, _) => control.permission_answer(d.allow, d.note.as_deref()),
    }
    .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_read_as_the_hook_and_the_waiter_write_them() {
        let r: Request = serde_json::from_str(
            r#"{"op":"hook","job":"123-1.job","harness":"claude-code","ask":"turn"}"#,
        )
        .unwrap();
        assert!(matches!(
            r,
            Request::Hook {
                ask: AskWire::Turn,
                ..
            }
        ));
        let w: Request =
            serde_json::from_str(r#"{"op":"wait","session":"claude-code:abc"}"#).unwrap();
        assert!(matches!(w, Request::Wait { .. }));
        assert!(serde_json::from_str::<Request>(r#"{"op":"run","cmd":"rm"}"#).is_err());
    }

    #[cfg(unix)]
    #[test]
    fn only_a_harness_with_an_answer_channel_gets_bytes() {
        let d = super::super::hub::Decision {
            allow: true,
            note: None,
        };
        assert!(hook_bytes("claude-code", ForHook::Permission(d.clone(), None)).contains("allow"));
        assert_eq!(hook_bytes("gemini-cli", ForHook::Permission(d, None)), "");
        assert_eq!(hook_bytes("claude-code", ForHook::Nothing), "");
    }
}
