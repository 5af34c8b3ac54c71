//! The `api` rung (CONTROL.md §6; ADAPTERS.md, OpenCode's row): a harness whose
//! live process serves a local API of its own (`harness::api::SessionApi`)
//! takes a verified `prompt` as its session's next turn and a `cancel` as the
//! end of the running one, through that API.
//!
//! Owns the calls and their acks: the server is first asked whether it holds
//! the session (a server that does not, or does not answer, is not used), then
//! handed the message or the cancel. A prompt it took is followed like one
//! handed over in place (`replies`: `delivered` with the reply once the turn
//! ends); a cancel it took is `delivered` at once. A prompt no server took
//! goes to the harness's ACP agent where one is installed
//! (`acp::prompt_loaded`). Only loopback, bounded, never a redirect, never a
//! proxy; nothing of the answer is kept but whether it said yes. Never a
//! signal to a process.

use super::ack::Ack;
use super::hub::MessageRef;
use super::machine::{Control, Frame, finish, framed};
use super::queued::Queued;
use harness::Memo;
use harness::api::{Call, Method, SessionApi};
use sessionpipe_verifier::SessionRef;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// The longest one call to a harness's server may take.
const CALL_BOUND: Duration = Duration::from_secs(10);
/// The most of an answer read (a check's session record is small).
const ANSWER_MAX: usize = 256 * 1024;

/// Whether a harness has a server API control can use.
pub(super) fn reaches(harness: &str) -> bool {
    api_of(harness).is_some()
}

fn api_of(harness: &str) -> Option<&'static dyn SessionApi> {
    adapters::lookup(harness).and_then(|a| a.api())
}

/// What one attempt through the API came to.
enum Through {
    /// The server took it.
    Taken,
    /// No server holds the session, or it would not take it: why, in words.
    Missed(String),
}

/// A prompt no in-place rung took, for a harness with a server API: on its
/// own task, followed to its reply when the server took it, else acked with
/// why not (no rung past this one here).
pub(super) fn prompt(control: Arc<Control>, from: MessageRef, q: Queued) {
    tokio::spawn(async move {
        let ack = match prompt_through(&control, &from, &q).await {
            Through::Taken => {
                control.hub.follow(&from, &q.session, "api");
                return;
            }
            // No server: the harness's ACP agent, where one is installed.
            Through::Missed(why) => match super::acp::prompt_loaded(&control, &from, &q).await {
                Some(ack) => ack,
                None => Ack::unsupported(why),
            },
        };
        finish(&control, &from, ack).await;
    });
}

/// Whether `session`'s harness has a server API and a server is known to hold
/// it (its memo): a `cancel` would be sent there (the hello's `cancels`).
pub(super) fn can_cancel(session: &SessionRef, memo: &Memo) -> bool {
    api_of(&session.harness).is_some_and(|api| api.cancel(memo, &session.id).is_some())
}

/// A verified `cancel`, on its own task: `delivered` once the server took it.
pub(super) fn cancel(control: Arc<Control>, from: MessageRef, q: Queued) {
    tokio::spawn(async move {
        let ack = cancel_through(&control, &q.session).await;
        finish(&control, &from, ack).await;
    });
}

/// A cancel through the session's server: `delivered` once it took it,
/// `unsupported` with why otherwise.
pub(super) async fn cancel_through(control: &Arc<Control>, session: &SessionRef) -> Ack {
    match send(control, session, |api, memo, id| api.cancel(memo, id)).await {
        Through::Taken => Ack::delivered("api"),
        Through::Missed(why) => Ack::unsupported(why),
    }
}

/// Hands a prompt for `q.session` to its server.
async fn prompt_through(control: &Arc<Control>, from: &MessageRef, q: &Queued) -> Through {
    let text = q.text().unwrap_or("");
    let framed = framed(from, Frame::InPlace, text);
    send(control, &q.session, |api, memo, id| {
        api.prompt(memo, id, &framed)
    })
    .await
}

/// Checks that the session's server holds it, then makes `what`'s call.
async fn send(
    control: &Arc<Control>,
    session: &SessionRef,
    what: impl FnOnce(&dyn SessionApi, &Memo, &str) -> Option<Call>,
) -> Through {
    let (harness, id) = (session.harness.as_str(), session.id.as_str());
    let Some(api) = api_of(harness) else {
        return Through::Missed("this harness has no server API".into());
    };
    let memo = memo_of(control, harness, id).await;
    let no_server = || {
        Through::Missed(
            "no server of the harness is known to hold the session (OpenCode listens \
             only as `opencode serve`, `opencode web` or with `--port`)"
                .into(),
        )
    };
    let Some(check) = api.check(&memo, id) else {
        return no_server();
    };
    match call(&check).await {
        Ok((status, body)) if api.holds(status, &body, id) => {}
        Ok((401 | 403, _)) => {
            return Through::Missed(
                "the session's server asks for a password, which sessionpipe does not read".into(),
            );
        }
        Ok((status, _)) => {
            return Through::Missed(format!(
                "the session's server does not hold it (answered {status})"
            ));
        }
        Err(e) => {
            tracing::info!("control: the server of {session}: {e}");
            return no_server();
        }
    }
    let Some(c) = what(api, &memo, id) else {
        return no_server();
    };
    match call(&c).await {
        Ok((status, _)) if (200..300).contains(&status) => Through::Taken,
        Ok((status, _)) => Through::Missed(format!("the session's server answered {status}")),
        Err(e) => Through::Missed(format!("the session's server: {e}")),
    }
}

/// What the adapter remembered of the session (its server, its folder).
async fn memo_of(control: &Arc<Control>, harness: &str, id: &str) -> Memo {
    let (c, h, i) = (control.clone(), harness.to_string(), id.to_string());
    crate::runtime::blocking(move || {
        super::machine::session_record(&c, &h, &i)
            .map(|r| r.memo)
            .unwrap_or_default()
    })
    .await
}

/// Why a call got no answer.
#[derive(Debug, thiserror::Error)]
enum CallError {
    #[error("not a loopback address")]
    NotLoopback,
    #[error("{0}")]
    Http(#[from] reqwest::Error),
    #[error("its answer is over {ANSWER_MAX} bytes")]
    TooLong,
}

/// Makes one call: its status and (bounded) body.
async fn call(c: &Call) -> Result<(u16, Vec<u8>), CallError> {
    if harness::api::loopback_origin(&c.url).is_none() {
        return Err(CallError::NotLoopback);
    }
    let client = client();
    let mut req = match c.method {
        Method::Get => client.get(&c.url),
        Method::Post => client.post(&c.url),
    };
    if let Some(body) = &c.body {
        req = req
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_string());
    }
    let mut resp = req.send().await?;
    let status = resp.status().as_u16();
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await? {
        if body.len() + chunk.len() > ANSWER_MAX {
            return Err(CallError::TooLong);
        }
        body.extend_from_slice(&chunk);
    }
    Ok((status, body))
}

/// One client for every call: bounded, no redirect, no proxy (a proxy from
/// the environment must never see a session's words).
fn client() -> &'static reqwest::Client {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    CLIENT.get_or_init(|| {
        reqwest::Client::builder()
            .timeout(CALL_BOUND)
            .connect_timeout(Duration::from_secs(2))
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .build()
            .unwrap_or_default()
    })
}
