//! The reply of a prompt handed over in place (a Stop hook's block, a
//! waiter): the session answers in its own turn, so the message's final ack
//! waits for that turn to end and carries its words, read from the session's
//! own transcript (CONTROL.md §6 `prompt`: `taken`, then `delivered` with the
//! reply; a turn that does not end within 30 minutes is `delivered` without
//! one, and so is one whose transcript holds no words for it).
//!
//! Reads the transcript only; never writes it, never sends the turn anywhere
//! but into the ack (secrets removed there), never holds up a hook.

use super::ack::Ack;
use super::hub::{Follow, TurnEnd};
use super::machine::{Control, finish};
use harness::transcript::{TurnLog, Want};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The longest a reply is waited for.
const REPLY_WAIT: Duration = Duration::from_secs(30 * 60);
/// How long a turn's end is read again for its words (the harness flushes
/// its transcript a moment after its hook fires).
const FLUSH_WAIT: Duration = Duration::from_secs(3);

/// Follows every prompt the hub hands over in place, until `run` stops.
pub(super) async fn follow_all(control: Arc<Control>) {
    loop {
        for f in control.hub.take_follows() {
            tokio::spawn(follow(control.clone(), f));
        }
        control.hub.followed().await;
    }
}

async fn follow(control: Arc<Control>, mut f: Follow) {
    let (harness, id) = (f.session.harness.clone(), f.session.id.clone());
    let mut transcript = place_of(&harness, &id);
    let before = match &transcript {
        Some(p) => Before::of(&turns(&harness, p).await),
        None => Before::default(),
    };
    let deadline = tokio::time::Instant::now() + REPLY_WAIT;
    let mut reply: Option<String> = None;
    loop {
        let end = tokio::time::timeout_at(deadline, f.turn_ends.recv()).await;
        let ended: Option<TurnEnd> = match end {
            Err(_) => break,
            Ok(Ok(e)) => Some(e),
            // Missed some: look anyway.
            Ok(Err(tokio::sync::broadcast::error::RecvError::Lagged(_))) => None,
            Ok(Err(_)) => break,
        };
        if let Some(e) = &ended {
            if e.session != f.session {
                continue;
            }
            if e.transcript.is_some() {
                transcript = e.transcript.clone();
            }
        }
        // The first turn to end after the hand-over is the one that answered
        // it; a session with no transcript to read is delivered without words.
        if let Some(path) = transcript.clone().or_else(|| place_of(&harness, &id)) {
            reply = settled_reply(&harness, &path, before).await;
        }
        break;
    }
    let ack = Ack::Delivered {
        mode: Some(f.mode),
        reply: reply.filter(|r| !r.trim().is_empty()),
        session: None,
    };
    finish(&control, &f.from, ack).await;
}

/// What the transcript held at the hand-over.
#[derive(Default)]
struct Before {
    turns: usize,
    /// The last turn's words then.
    last: String,
}

impl Before {
    fn of(turns: &[harness::transcript::Turn]) -> Before {
        Before {
            turns: turns.len(),
            last: turns
                .last()
                .map(|t| t.assistant.clone())
                .unwrap_or_default(),
        }
    }

    /// The words said since: a new turn's, or, where the harness keeps a
    /// hook's message inside the turn it continued (Codex), what that turn
    /// said after the words it had.
    fn since(&self, now: &[harness::transcript::Turn]) -> Option<String> {
        let last = now.last()?.assistant.trim();
        if last.is_empty() {
            return None;
        }
        if now.len() > self.turns {
            return Some(last.to_string());
        }
        let had = self.last.trim();
        if last == had {
            return None;
        }
        Some(last.strip_prefix(had).unwrap_or(last).trim().to_string())
    }
}

/// The words said since the hand-over once there are some, read again a
/// moment later so a tail still being flushed is in.
async fn settled_reply(harness: &str, path: &Path, before: Before) -> Option<String> {
    let step = Duration::from_millis(150);
    let mut waited = Duration::ZERO;
    while waited <= FLUSH_WAIT {
        if let Some(first) = before.since(&turns(harness, path).await) {
            tokio::time::sleep(Duration::from_millis(300)).await;
            return Some(before.since(&turns(harness, path).await).unwrap_or(first));
        }
        tokio::time::sleep(step).await;
        waited += step;
    }
    None
}

/// Every turn of a transcript, as it stands (read off the blocking pool).
async fn turns(harness: &str, path: &Path) -> Vec<harness::transcript::Turn> {
    let harness = harness.to_string();
    let path = path.to_path_buf();
    crate::runtime::blocking(move || {
        let Some(source) = adapters::lookup(&harness).and_then(|a| a.transcript()) else {
            return Vec::new();
        };
        let Ok(read) = source.read(&path, 0) else {
            return Vec::new();
        };
        let mut log = TurnLog::default();
        log.feed(read.recs);
        log.take(&Want::All)
    })
    .await
}

/// Where the adapter finds the session's transcript.
fn place_of(harness: &str, id: &str) -> Option<PathBuf> {
    let host = harness::install::Host::from_env()?;
    adapters::lookup(harness)?
        .headless()?
        .place(&host, id)
        .transcript
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(n: u64, assistant: &str) -> harness::transcript::Turn {
        harness::transcript::Turn {
            n,
            prompt_id: None,
            user: "ask".into(),
            assistant: assistant.into(),
            at_ms: None,
            interrupted: false,
            injected: false,
        }
    }

    #[test]
    fn the_reply_is_what_was_said_since_the_hand_over() {
        let before = Before::of(&[turn(1, "First answer.")]);
        assert_eq!(
            before.since(&[turn(1, "First answer.")]),
            None,
            "nothing new yet"
        );
        assert_eq!(
            before.since(&[turn(1, "First answer."), turn(2, "The tests pass.")]),
            Some("The tests pass.".into()),
            "a turn of its own"
        );
        assert_eq!(
            before.since(&[turn(1, "First answer.\n\nThe tests pass.")]),
            Some("The tests pass.".into()),
            "the turn it continued"
        );
        assert_eq!(Before::default().since(&[turn(1, "  ")]), None);
    }
}
