//! The API's control handlers, for the UI's Pairing page: what is paired (the
//! receivers, their keys, whether each is polled, the tier each one's sink
//! sends at), starting a pairing (the
//! same `control::pair` the CLI runs; the page shows its link and digits and
//! asks `GET /api/control` until it ends), removing a key, unpairing; and
//! the Sessions view's Stop (control's `local::stop`: the rungs a verified
//! `cancel` takes; it ends a turn and runs nothing).
//!
//! No token or key material beyond a key's id is ever in an answer.

use super::error::ApiError;
use super::shapes::{
    ApprovalAnswered, ControlKey, ControlReceiver, ControlView, PairingState, Removed, Stopped,
    Unpaired, reply,
};
use super::views::{ApiResult, Ctx, body};
use crate::control::pair::{self, PairError, PairRequest};
use crate::control::store::Store;
use crate::runtime::blocking;
use crate::state::config::Config;
use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use serde_json::Value;

impl From<PairError> for ApiError {
    fn from(e: PairError) -> Self {
        let text = e.to_string();
        match e {
            PairError::Wire(crate::control::wire::WireError::Discovery(_))
            | PairError::Wire(_)
            | PairError::Proof(_)
            | PairError::NoToken => ApiError::BadGateway(text),
            PairError::NoSinkToken(_)
            | PairError::Settings(_)
            | PairError::NoFolder(_)
            | PairError::NoFolders
            | PairError::Expired
            | PairError::Gone => ApiError::BadRequest(text),
            PairError::Store(_) | PairError::File(_) => ApiError::Internal(text),
        }
    }
}

impl From<crate::control::store::StoreError> for ApiError {
    fn from(e: crate::control::store::StoreError) -> Self {
        ApiError::Internal(e.to_string())
    }
}

/// `GET /api/control`.
pub async fn view(State(ctx): State<Ctx>) -> ApiResult {
    let paths = ctx.paths.clone();
    let mut view = blocking(move || -> Result<ControlView, ApiError> {
        let config = Config::load(&paths)?;
        let (receivers, keys) = match Store::open_readonly(&paths.outbox())? {
            Some(s) => (s.receivers()?, s.keys(None)?),
            None => (Vec::new(), Vec::new()),
        };
        let receivers = receivers
            .into_iter()
            .map(|r| ControlReceiver {
                keys: keys
                    .iter()
                    .filter(|k| k.receiver == r.origin)
                    .map(|k| ControlKey {
                        id: k.id.clone(),
                        alg: if k.alg == -7 { "ES256" } else { "RS256" },
                        name: k.name.clone(),
                    })
                    .collect(),
                polling: r.stopped.is_none(),
                tier: crate::sinks::SinkList::tier_for(&paths, &r.origin),
                receiver: r.origin,
                machine: r.machine,
                account: r.account,
                stopped: r.stopped,
            })
            .collect();
        Ok(ControlView {
            receivers,
            folders: config.control_folders,
            mode: config.control_mode,
            local_approvals: config.local_approvals,
            worktrees: config.control_worktrees,
            pairing: None,
        })
    })
    .await?;
    view.pairing = ctx
        .pairing
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    Ok(reply(&view))
}

/// `POST /api/control/pair {receiver, folders?, mode?, name?, tier?}`: answers with
/// the link and digits once the receiver gave them; the pairing goes on.
pub async fn pair(State(ctx): State<Ctx>, given: Result<Json<Value>, JsonRejection>) -> ApiResult {
    let b = body(given)?;
    let receiver = b["receiver"]
        .as_str()
        .filter(|r| !r.trim().is_empty())
        .ok_or_else(|| ApiError::BadRequest("receiver: the receiver's URL".into()))?
        .trim()
        .to_string();
    let strings = |key: &str| -> Result<Vec<String>, ApiError> {
        match &b[key] {
            Value::Null => Ok(Vec::new()),
            Value::Array(a) => a
                .iter()
                .map(|v| {
                    v.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| ApiError::BadRequest(format!("{key}: a list of text")))
                })
                .collect(),
            _ => Err(ApiError::BadRequest(format!("{key}: a list of text"))),
        }
    };
    // The tier the page proposes, as the CLI does; 0 when the person chose it.
    let sink_tier = match &b["tier"] {
        Value::Null => protocol::asked::PAIRING_TIER,
        t => t
            .as_u64()
            .filter(|t| *t <= 3)
            .map(|t| t as u8)
            .ok_or_else(|| ApiError::BadRequest("tier: 0 to 3".into()))?,
    };
    let request = PairRequest {
        receiver,
        folders: strings("folders")?,
        mode: b["mode"].as_str().map(str::to_string),
        name: b["name"].as_str().map(str::to_string),
        folder_here: false,
        sink_tier,
    };
    let (tx, rx) = tokio::sync::oneshot::channel::<PairingState>();
    let tx = std::sync::Mutex::new(Some(tx));
    let state = ctx.pairing.clone();
    let paths = ctx.paths.clone();
    let task = tokio::spawn(async move {
        let result = pair::pair(&paths, &request, |started| {
            let shown = PairingState::Waiting {
                url: started.url.clone(),
                check: started.check.clone(),
            };
            *state.lock().unwrap_or_else(|p| p.into_inner()) = Some(shown.clone());
            if let Some(tx) = tx.lock().unwrap_or_else(|p| p.into_inner()).take() {
                let _ = tx.send(shown);
            }
        })
        .await;
        let end = match &result {
            Ok(p) => PairingState::Paired {
                receiver: p.receiver.origin.clone(),
                account: p.receiver.account.clone(),
                sink_added: p.sink_added,
                tier: p.sink_tier,
            },
            Err(e) => PairingState::Failed {
                error: e.to_string(),
            },
        };
        *state.lock().unwrap_or_else(|p| p.into_inner()) = Some(end);
        result
    });
    match rx.await {
        Ok(shown) => Ok(reply(&shown)),
        // It ended before the receiver gave a link: say why.
        Err(_) => match task.await {
            Ok(Err(e)) => Err(e.into()),
            Ok(Ok(_)) => Err(ApiError::Internal(
                "the pairing ended without a link".into(),
            )),
            Err(e) => Err(ApiError::Internal(format!("the pairing stopped: {e}"))),
        },
    }
}

/// `POST /api/control/off {receiver}`.
pub async fn off(State(ctx): State<Ctx>, given: Result<Json<Value>, JsonRejection>) -> ApiResult {
    let b = body(given)?;
    let receiver = b["receiver"]
        .as_str()
        .ok_or_else(|| ApiError::BadRequest("receiver: a paired receiver's origin".into()))?;
    if pair::off(&ctx.paths, receiver).await? {
        Ok(reply(&Unpaired {
            unpaired: receiver.to_string(),
        }))
    } else {
        Err(ApiError::NotFound(format!("not paired with {receiver}")))
    }
}

/// `POST /api/approvals {session, attention, decision: "allow"|"deny"}`: the
/// person at this machine answers a prompt whose hook waits (local approvals,
/// off by default). Only while the setting is on and the hook still waits.
pub async fn answer(
    State(ctx): State<Ctx>,
    given: Result<Json<Value>, JsonRejection>,
) -> ApiResult {
    let b = body(given)?;
    let field = |k: &str| {
        b[k].as_str()
            .map(str::to_string)
            .ok_or_else(|| ApiError::BadRequest(format!("{k}: missing")))
    };
    let (session, attention, decision) =
        (field("session")?, field("attention")?, field("decision")?);
    let allow = match decision.as_str() {
        "allow" => true,
        "deny" => false,
        other => {
            return Err(ApiError::BadRequest(format!(
                "decision is allow or deny, not {other:?}"
            )));
        }
    };
    let config = ctx.config.clone();
    let on = blocking(move || config.now().local_approvals).await;
    if !on {
        return Err(ApiError::Conflict(
            "local approvals are off (Settings, or `sessionpipe control approvals on`)".into(),
        ));
    }
    let Some(hub) = &ctx.hub else {
        return Err(ApiError::Conflict("this daemon takes no approvals".into()));
    };
    let waits = crate::control::hub::session_named(&session)
        .is_some_and(|s| hub.answer_locally(&s, &attention, allow));
    if !waits {
        return Err(ApiError::NotFound(
            "that prompt no longer waits (answered elsewhere, or its window closed)".into(),
        ));
    }
    tracing::info!("a permission prompt of {session} was answered at this machine");
    Ok(reply(&ApprovalAnswered {
        answered: attention,
        decision,
    }))
}

/// `DELETE /api/control/keys/{id}`.
pub async fn remove_key(State(ctx): State<Ctx>, Path(id): Path<String>) -> ApiResult {
    let paths = ctx.paths.clone();
    let id2 = id.clone();
    let n = blocking(move || Store::open(&paths.outbox())?.remove_key(&id2)).await?;
    if n == 0 {
        return Err(ApiError::NotFound(format!("no key {id}")));
    }
    Ok(reply(&Removed { removed: id }))
}

/// `POST /api/sessions/{harness}/{id}/stop`: ends the session's running turn
/// through its harness's own interrupt, never a signal.
pub async fn stop(
    State(ctx): State<Ctx>,
    Path((harness, id)): Path<(String, String)>,
) -> Result<Json<Stopped>, ApiError> {
    if !protocol::valid_harness_name(&harness) || !protocol::valid_session_id(&id) {
        return Err(ApiError::BadRequest(format!(
            "no such session: {harness}:{id}"
        )));
    }
    let Some(control) = ctx.control.clone() else {
        return Err(ApiError::Conflict(
            "control does not run in this daemon, so it stops no turn".into(),
        ));
    };
    let session = sessionpipe_verifier::SessionRef { harness, id };
    let ack = crate::control::local::stop(&control, &session)
        .await
        .json("");
    let text = |k: &str| ack[k].as_str().map(str::to_string);
    Ok(Json(Stopped {
        outcome: text("outcome").unwrap_or_default(),
        mode: text("mode"),
        detail: text("detail"),
    }))
}
