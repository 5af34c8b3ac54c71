//! What the person at the machine asks of control from its own desktop window
//! (the daemon's local API): which sessions a Stop ends now, and a Stop.
//! The rungs are the ones a verified `cancel` takes (an ACP turn, a headless
//! run's SDK interrupt, the harness's own server), always the harness's own
//! interrupt, never a signal; the hello's `cancels` is the same list.
//!
//! A Stop from the local window is no message: nothing is queued, signed or
//! acked to a receiver. It runs nothing (it ends a turn), and the local API
//! it comes through answers only its own token on loopback, as for the
//! window's answers to approvals.

use super::ack::Ack;
use super::machine::Control;
use super::{acp, api, ladder};
use sessionpipe_verifier::SessionRef;
use std::sync::Arc;

/// The sessions whose running turn a cancel ends now, sorted, each once.
pub async fn cancellable(control: &Arc<Control>) -> Vec<SessionRef> {
    let c = control.clone();
    let running = crate::runtime::blocking(move || c.host.running()).await;
    let through_servers = running
        .into_iter()
        .filter(|(s, memo)| api::can_cancel(s, memo))
        .map(|(s, _)| s);
    let mut out: Vec<SessionRef> = acp::running(control)
        .into_iter()
        .chain(control.runs.interruptible_sessions())
        .chain(through_servers)
        .collect();
    out.sort();
    out.dedup();
    out
}

/// A cancel by the rungs this daemon answers itself (an ACP turn, a headless
/// run); `None` when neither holds the session (the server's rung is next).
pub(super) async fn cancel_here(control: &Arc<Control>, session: &SessionRef) -> Option<Ack> {
    if let Some(ack) = acp::cancel(control, session).await {
        return Some(ack);
    }
    ladder::cancel(control, session).await
}

/// The desktop window's Stop: what a verified `cancel` of `session` would
/// be acked, the harness's server tried last.
pub async fn stop(control: &Arc<Control>, session: &SessionRef) -> Ack {
    match cancel_here(control, session).await {
        Some(ack) => ack,
        None => api::cancel_through(control, session).await,
    }
}
