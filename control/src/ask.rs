//! One session asks another on this machine (`sessionpipe ask`, and
//! `handoff`, which does not wait): the task goes to the asked session by
//! the same rungs a verified prompt takes (a waiter, its running turn's Stop,
//! its inbox, a resume or a fork), or to a new session of a harness in the
//! asker's folder; the answer is the turn's whole reply. A handoff brings
//! the answer back into the session that handed the task over, as a message
//! of its own (`Answer from …`).
//!
//! Local only: the request comes over the daemon's 0600 socket from the
//! person's own processes, never from a receiver, and carries no signature.
//! So it is held to less than a signed command: the folder must be on the
//! control folders, a run never goes above `safe` whatever the machine's
//! mode, and no permission prompt is ever answered from here.

use super::admit::adapter_has_waiter;
use super::hub::{LOCAL, MessageRef};
use super::ladder;
use super::machine::{Control, folder_allowed};
use super::queued::Queued;
use super::run::offer;
use harness::headless::Level;
use serde_json::Value;
use sessionpipe_verifier::{Body, SessionRef};
use std::sync::Arc;
use std::time::Duration;

/// The longest an ask waits for its answer.
const ASK_WAIT: Duration = Duration::from_secs(30 * 60);

/// What an ask is.
#[derive(Clone, Debug, serde::Deserialize)]
pub struct Ask {
    /// `<harness>:<id>` of a session, or a harness alone (a new session).
    pub to: String,
    /// The asking session, `<harness>:<id>`, when it knows itself.
    #[serde(default)]
    pub from: Option<String>,
    /// Where a new session runs (the asker's folder).
    #[serde(default)]
    pub cwd: Option<String>,
    pub task: String,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AskError {
    #[error("no such harness here: {0}")]
    Harness(String),
    #[error("the task is empty or longer than 20 000 characters")]
    Task,
    #[error("a handoff needs the asking session (--from, or run it inside one)")]
    NoAsker,
    #[error("{0} is not inside this machine's control folders (sessionpipe control folders)")]
    Folder(String),
    #[error("a new session needs a folder (--cwd)")]
    NoFolder,
    #[error("too many started sessions run now, or were started in the last hour")]
    StartLimit,
    #[error("no answer within 30 minutes")]
    TooLong,
    #[error("{0}")]
    Outcome(String),
}

/// Runs `ask` and waits for the asked session's whole answer.
pub async fn ask(control: &Arc<Control>, ask: &Ask) -> Result<String, AskError> {
    answer(control, ask).await.map(|(_, reply)| reply)
}

/// The asked session (`<harness>:<id>`, a new one's too) and its answer.
async fn answer(control: &Arc<Control>, ask: &Ask) -> Result<(String, String), AskError> {
    let (from, queued, start) = {
        let (c, a) = (control.clone(), ask.clone());
        crate::runtime::blocking(move || prepare(&c, &a, true)).await?
    };
    let rx = control.wait_local(&from.id);
    let session = queued.session.to_string();
    if start {
        ladder::start(control.clone(), from.clone(), queued, false);
    } else if let Some(ack) = offer(control, &from, &queued, false).await {
        return outcome(&ack.json(&from.id)).map(|r| (session, r));
    }
    let ack = tokio::time::timeout(ASK_WAIT, rx)
        .await
        .map_err(|_| AskError::TooLong)?
        .map_err(|_| AskError::TooLong)?;
    outcome(&ack).map(|r| (session, r))
}

/// Starts `ask` and returns at once; the answer comes back into the asking
/// session as a message of its own.
pub fn handoff(control: &Arc<Control>, ask: Ask) -> Result<(), AskError> {
    let asker = ask.from.clone().ok_or(AskError::NoAsker)?;
    // Checked now, so a bad handoff is refused where it was asked.
    prepare(control, &ask, false)?;
    let control = control.clone();
    tokio::spawn(async move {
        let (asked, answer) = match answer(&control, &ask).await {
            Ok(done) => done,
            Err(e) => (ask.to.clone(), format!("The task could not be done: {e}")),
        };
        let (harness, id) = asked.split_once(':').unwrap_or((asked.as_str(), ""));
        let back = Ask {
            to: asker,
            from: Some(ask.to.clone()),
            cwd: None,
            task: harness::frames::handoff_answer(harness, id, &answer),
        };
        if let Err(e) = self::ask(&control, &back).await {
            tracing::info!("control: a handoff's answer did not reach its session: {e}");
        }
    });
    Ok(())
}

/// The local message for `ask`, and whether it starts a session (`reserve`:
/// its start slot taken, for the run that follows).
fn prepare(
    control: &Control,
    ask: &Ask,
    reserve: bool,
) -> Result<(MessageRef, Queued, bool), AskError> {
    let task = ask.task.trim();
    if task.is_empty() || task.chars().count() > 20_000 {
        return Err(AskError::Task);
    }
    let (harness, id) = match ask.to.split_once(':') {
        Some((h, i)) => (h, Some(i)),
        None => (ask.to.as_str(), None),
    };
    let adapter = adapters::lookup(harness).ok_or_else(|| AskError::Harness(harness.into()))?;
    let config = control.config();
    let from = MessageRef {
        receiver: LOCAL.to_string(),
        id: ulid::Ulid::generate().to_string(),
        expires_ms: protocol::time::now_ms() + ASK_WAIT.as_millis() as i64,
    };
    let by = ask.from.as_deref().unwrap_or("a session");
    let text = harness::frames::asked(by, None, task);
    let queued = |id: String, body: Body| Queued {
        session: SessionRef {
            harness: harness.to_string(),
            id,
        },
        body,
        note: None,
        expires_ms: from.expires_ms,
    };
    match id {
        Some(id) => {
            if adapter.headless().is_none()
                && !adapter_has_waiter(harness)
                && adapter
                    .control()
                    .is_none_or(|c| c.turn_answer("").is_none())
            {
                return Err(AskError::Harness(format!(
                    "{harness} (it takes no message here)"
                )));
            }
            let cwd = super::machine::session_record(control, harness, id)
                .and_then(|r| r.cwd)
                .or_else(|| {
                    control
                        .store()
                        .named_session(harness, id)
                        .ok()
                        .flatten()
                        .and_then(|n| n.cwd)
                })
                .ok_or_else(|| {
                    AskError::Outcome(format!("this machine has no session {harness}:{id}"))
                })?;
            if !folder_allowed(Some(&cwd), &config.control_folders) {
                return Err(AskError::Folder(cwd));
            }
            // A prompt asked here runs at `safe` at most (`Queued::level`).
            let queued = queued(id.to_string(), Body::Prompt { text });
            Ok((from, queued, false))
        }
        None => {
            adapter
                .headless()
                .ok_or_else(|| AskError::Harness(format!("{harness} (it cannot start here)")))?;
            let cwd = ask.cwd.clone().ok_or(AskError::NoFolder)?;
            if !folder_allowed(Some(&cwd), &config.control_folders) {
                return Err(AskError::Folder(cwd));
            }
            if reserve && !control.runs.reserve_start(config.run_caps().starts_running) {
                return Err(AskError::StartLimit);
            }
            let body = Body::Start {
                text,
                cwd,
                files: Vec::new(),
                // The asked session is an agent: never above `safe` for it.
                level: Some(Level::Safe),
                model: None,
            };
            let queued = queued(new_session_id(), body);
            Ok((from, queued, true))
        }
    }
}

/// A new session's id: a UUID (v4 layout), which every harness takes.
fn new_session_id() -> String {
    let mut b = [0u8; 16];
    getrandom::fill(&mut b).expect("the OS has a random source");
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = hex::encode(b);
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

fn outcome(ack: &Value) -> Result<String, AskError> {
    match ack["outcome"].as_str() {
        Some("delivered") => Ok(ack["reply"].as_str().unwrap_or_default().to_string()),
        _ => Err(AskError::Outcome(
            ack["detail"]
                .as_str()
                .or(ack["code"].as_str())
                .unwrap_or("the asked session took no answer")
                .to_string(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_sessions_id_is_a_uuid() {
        let id = new_session_id();
        assert!(harness::payload::is_uuid(&id), "{id}");
        assert_ne!(id, new_session_id());
    }

    #[test]
    fn an_answer_or_the_reason_there_is_none() {
        let ok = serde_json::json!({"outcome": "delivered", "reply": "It builds."});
        assert_eq!(outcome(&ok), Ok("It builds.".into()));
        let no = serde_json::json!({"outcome": "failed", "detail": "codex is not on this machine's PATH"});
        assert_eq!(
            outcome(&no),
            Err(AskError::Outcome(
                "codex is not on this machine's PATH".into()
            ))
        );
    }
}
