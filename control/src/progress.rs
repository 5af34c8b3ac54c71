//! A run's growing reply, as it reaches the device and the tier-2 sinks: a
//! `progress` ack for the newest reply at most every few hundred
//! milliseconds (best effort, never retried), and a `turn.progress` event at
//! most every second where a destination takes tier 2 and the harness has an
//! adapter. Shared by the headless runs (`ladder`) and ACP turns (`acp`);
//! decides no final ack.

use super::hub::MessageRef;
use super::machine::{Control, say_progress};
use harness::headless::Progress;
use std::sync::Arc;
use std::time::Duration;

/// The least time between two `progress` acks of one message.
const PROGRESS_EVERY: Duration = Duration::from_millis(300);
/// The least time between two `turn.progress` events of one run (they are
/// kept, acks are not).
const EVENT_EVERY: Duration = Duration::from_secs(1);

/// Which session a run's `turn.progress` events are of, and its ask.
pub(super) struct Events {
    pub(super) harness: String,
    /// The id the run was started with; the harness's own, once it names it.
    pub(super) session: String,
    pub(super) user: String,
}

/// Sends the growing reply as `progress` acks, the newest at most every
/// `PROGRESS_EVERY`, and as `turn.progress` events for tier-2 destinations
/// at most every `EVENT_EVERY`; ends when the run's sender is dropped.
pub(super) async fn send_progress(
    control: Arc<Control>,
    from: MessageRef,
    mut rx: tokio::sync::watch::Receiver<Progress>,
    events: Events,
) {
    let mut seq = 0u64;
    let mut last = String::new();
    let mut evented = tokio::time::Instant::now() - EVENT_EVERY;
    while rx.changed().await.is_ok() {
        let (reply, named) = {
            let p = rx.borrow_and_update();
            (p.reply.clone(), p.session.clone())
        };
        if reply.trim().is_empty() || reply == last {
            continue;
        }
        seq += 1;
        say_progress(&control, &from.receiver, &from.id, seq, &reply).await;
        // A harness with no adapter reports no events (an ACP-only agent).
        if let Some(local) = control.progress_events.clone()
            && adapters::lookup(&events.harness).is_some()
            && evented.elapsed() >= EVENT_EVERY
        {
            evented = tokio::time::Instant::now();
            let harness = events.harness.clone();
            let session = named.unwrap_or_else(|| events.session.clone());
            let event = protocol::EventData::TurnProgress(protocol::TurnProgress {
                turn_id: None,
                user: Some(events.user.clone()).filter(|u| !u.trim().is_empty()),
                assistant: reply.clone(),
            });
            let wrote =
                crate::runtime::blocking(move || local.append(&harness, &session, event)).await;
            if let Err(e) = wrote {
                tracing::info!("control: a turn.progress event: {e}");
            }
        }
        last = reply;
        tokio::time::sleep(PROGRESS_EVERY).await;
    }
}
