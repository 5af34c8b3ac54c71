//! The machine's side of the wire, on the daemon's runtime: one long-poll per
//! paired receiver for the whole machine, a hello at start and whenever what it
//! says changes, every message verified (nonce and message row committed
//! together before anything runs), the machine's own checks, the hand-over to
//! the hub, and acks: batched, each message's final ack exactly once, the same
//! one again when a receiver redelivers, kept on disk until the receiver takes
//! it (so a kill -9 loses none).
//!
//! A 401 stops polling that receiver and says so (`status`, the tray, the UI).
//! Nothing here runs a command on a bearer token's word: the token only opens
//! the transport; the verifier and the person's enrolled keys decide.

use super::hub::{self, AnswerOffer, Decision, Final, From, Hub, PromptOffer};
use super::store::{Admitted, Key, Receiver, State, Store};
use super::wire::{self, WireError};
use crate::state::config::Config;
use crate::state::secrets::Secrets;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sessionpipe_verifier::{Body, Policy, Refusal, Signed};
use spool::StatePaths;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often the paired receivers and the settings are read again.
const REFRESH: Duration = Duration::from_secs(2);
/// Waits after a failed poll or ack: the binding's first steps, then a minute.
const RETRY: &[u64] = &[2, 10, 60];

/// What a queued message needs to be offered again after a restart.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Queued {
    pub session: String,
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attention: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    pub expires_ms: i64,
}

/// Everything the receiver loops share.
pub struct Control {
    paths: StatePaths,
    hub: Arc<Hub>,
    store: Mutex<Store>,
    /// Rung per receiver when acks wait to be sent.
    ack_bells: Mutex<HashMap<String, Arc<tokio::sync::Notify>>>,
    /// Every call to every receiver: one client for the daemon's life.
    http: reqwest::Client,
}

impl Control {
    fn bell(&self, receiver: &str) -> Arc<tokio::sync::Notify> {
        self.ack_bells
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(receiver.to_string())
            .or_default()
            .clone()
    }

    fn store(&self) -> std::sync::MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Opens control's store and offers again what was verified before a restart,
/// before the daemon's control socket takes a hook: a Stop that comes right
/// after a start finds its message queued.
pub async fn open(paths: &StatePaths, hub: Arc<Hub>) -> Option<Arc<Control>> {
    let store = match crate::runtime::blocking({
        let outbox = paths.outbox();
        move || Store::open(&outbox)
    })
    .await
    {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!("control is off: {e}");
            return None;
        }
    };
    let control = Arc::new(Control {
        paths: paths.clone(),
        hub,
        store: Mutex::new(store),
        ack_bells: Mutex::default(),
        http: wire::client(),
    });
    requeue(&control).await;
    Some(control)
}

/// Runs control until `stopping`: the receiver loops, the acks, the expiries.
pub async fn run(
    control: Arc<Control>,
    mut finals: tokio::sync::mpsc::UnboundedReceiver<Final>,
    stopping: Arc<AtomicBool>,
) {
    let paths = control.paths.clone();
    let hub = control.hub.clone();
    let keeper = {
        let control = control.clone();
        tokio::spawn(async move {
            while let Some(f) = finals.recv().await {
                keep_final(&control, f).await;
            }
        })
    };
    let mut loops: HashMap<String, tokio::task::JoinHandle<()>> = HashMap::new();
    while !stopping.load(Ordering::Relaxed) {
        let c = control.clone();
        let (receivers, config) = crate::runtime::blocking(move || {
            let receivers = c.store().receivers().unwrap_or_default();
            let _ = c.store().prune(protocol::time::now_ms());
            (receivers, Config::load(&c.paths).unwrap_or_default())
        })
        .await;
        set_marker(&paths, !receivers.is_empty() || config.local_approvals);
        hub.expire(protocol::time::now_ms());
        loops.retain(|origin, task| {
            let keep = !task.is_finished() && receivers.iter().any(|r| &r.origin == origin);
            if !keep {
                task.abort();
            }
            keep
        });
        for r in receivers.into_iter().filter(|r| r.stopped.is_none()) {
            if !loops.contains_key(&r.origin) {
                let origin = r.origin.clone();
                loops.insert(origin, tokio::spawn(receiver_loop(control.clone(), r)));
            }
        }
        tokio::time::sleep(REFRESH).await;
    }
    for (_, task) in loops {
        task.abort();
    }
    keeper.abort();
}

/// `control.on` says the hooks may ask: present while a receiver is paired or
/// local approvals are on.
pub fn set_marker(paths: &StatePaths, on: bool) {
    let marker = paths.control_marker();
    if on && !marker.exists() {
        let _ = spool::files::write_private_file(&marker, b"");
    } else if !on && marker.exists() {
        let _ = std::fs::remove_file(&marker);
    }
}

/// Messages verified before a restart and still waiting are offered again.
async fn requeue(control: &Arc<Control>) {
    let c = control.clone();
    let queued = crate::runtime::blocking(move || c.store().queued().unwrap_or_default()).await;
    for m in queued {
        let Some(q) = m
            .command
            .as_deref()
            .and_then(|c| serde_json::from_str::<Queued>(c).ok())
        else {
            continue;
        };
        let from = From {
            receiver: m.receiver.clone(),
            id: m.id.clone(),
            expires_ms: q.expires_ms,
        };
        // Said `taken` before the restart: the receiver holds it back still.
        if let Some(ack) = offer(control, &from, &q).await {
            let f = Final {
                receiver: from.receiver,
                id: from.id,
                ack,
            };
            keep_final(control, f).await;
        }
    }
}

/// Offers a verified message to the hub and keeps the final ack the offer
/// decided, if it decided one.
async fn offer_and_keep(control: &Arc<Control>, from: From, q: &Queued) {
    match offer(control, &from, q).await {
        Some(ack) => {
            let f = Final {
                receiver: from.receiver,
                id: from.id,
                ack,
            };
            keep_final(control, f).await;
        }
        // Waiting for its hook: `taken`, so the receiver stops handing it
        // over on every poll (each would be a poll answered at once).
        None => say_taken(control, &from.receiver, &from.id).await,
    }
}

/// A `taken` ack (not final, best effort): the machine holds the message.
async fn say_taken(control: &Arc<Control>, origin: &str, id: &str) {
    let c = control.clone();
    let o = origin.to_string();
    let Some(receiver) =
        crate::runtime::blocking(move || c.store().receiver(&o).ok().flatten()).await
    else {
        return;
    };
    let secrets = Secrets::new(&control.paths.root);
    let key = receiver.token_key();
    let Some(token) = crate::runtime::blocking(move || secrets.get(&key)).await else {
        return;
    };
    let ack = json!({"id": id, "outcome": "taken", "at": now_text()});
    if let Err(e) = wire::ack(&control.http, &receiver.control_url, &token, &[ack]).await {
        tracing::info!("control: a taken ack to {}: {e}", receiver.origin);
    }
}

async fn keep_final(control: &Arc<Control>, f: Final) {
    let c = control.clone();
    let (receiver, id, ack) = (f.receiver.clone(), f.id.clone(), f.ack.to_string());
    let kept = crate::runtime::blocking(move || c.store().finish(&receiver, &id, &ack)).await;
    if let Err(e) = kept {
        tracing::warn!("control: cannot keep an ack: {e}");
    }
    control.bell(&f.receiver).notify_one();
}

/// One receiver: polls until a 401; its hellos and its acks run beside the
/// poll, so a hello never cuts a poll short.
async fn receiver_loop(control: Arc<Control>, receiver: Receiver) {
    let secrets = Secrets::new(&control.paths.root);
    let key = receiver.token_key();
    let Some(token) = crate::runtime::blocking(move || secrets.get(&key)).await else {
        stop(
            &control,
            &receiver,
            "its machine token is missing from the secrets store",
        )
        .await;
        return;
    };
    let acks = tokio::spawn(ack_loop(control.clone(), receiver.clone(), token.clone()));
    let (refused_tx, mut refused) = tokio::sync::watch::channel(false);
    let hellos = tokio::spawn(hello_loop(
        control.clone(),
        receiver.clone(),
        token.clone(),
        refused_tx,
    ));
    let mut failures = 0usize;
    loop {
        let polled = tokio::select! {
            p = wire::poll(&control.http, &receiver.control_url, &receiver.machine, receiver.wait_max_s, &token) => p,
            _ = refused.changed() => Err(WireError::Unauthorized),
        };
        match polled {
            Ok(messages) => {
                failures = 0;
                for m in messages {
                    handle(&control, &receiver, m).await;
                }
            }
            Err(WireError::Unauthorized) => break,
            Err(e) => {
                tracing::info!("control: polling {}: {e}", receiver.origin);
                let wait = RETRY[failures.min(RETRY.len() - 1)];
                failures += 1;
                tokio::time::sleep(Duration::from_secs(wait)).await;
            }
        }
    }
    acks.abort();
    hellos.abort();
    stop(
        &control,
        &receiver,
        "the receiver refused this machine's token (401): pair again",
    )
    .await;
}

/// Says hello at start and whenever what it says changed (a waiter came or
/// went, folders, mode, keys, harnesses: looked at every few seconds).
async fn hello_loop(
    control: Arc<Control>,
    receiver: Receiver,
    token: String,
    refused: tokio::sync::watch::Sender<bool>,
) {
    let mut said: Option<Value> = None;
    let mut failures = 0usize;
    loop {
        let body = hello_body(&control, &receiver).await;
        if said.as_ref() != Some(&body) {
            match wire::hello(&control.http, &receiver.control_url, &token, &body).await {
                Ok(()) => {
                    said = Some(body);
                    failures = 0;
                }
                Err(WireError::Unauthorized) => {
                    let _ = refused.send(true);
                    return;
                }
                Err(e) => {
                    tracing::info!("control: hello to {}: {e}", receiver.origin);
                    let wait = RETRY[failures.min(RETRY.len() - 1)];
                    failures += 1;
                    tokio::time::sleep(Duration::from_secs(wait)).await;
                    continue;
                }
            }
        }
        tokio::select! {
            _ = control.hub.waiting_changed() => {}
            _ = tokio::time::sleep(REFRESH) => {}
        }
    }
}

async fn stop(control: &Arc<Control>, receiver: &Receiver, why: &str) {
    tracing::warn!("control: stopped polling {}: {why}", receiver.origin);
    let c = control.clone();
    let (origin, why) = (receiver.origin.clone(), why.to_string());
    let _ = crate::runtime::blocking(move || c.store().set_stopped(&origin, Some(&why))).await;
}

/// Sends the acks the store holds for `receiver`, whenever it is rung (and
/// every few seconds, for acks a failed send left).
async fn ack_loop(control: Arc<Control>, receiver: Receiver, token: String) {
    let bell = control.bell(&receiver.origin);
    let mut failures = 0usize;
    loop {
        let c = control.clone();
        let origin = receiver.origin.clone();
        let unsent =
            crate::runtime::blocking(move || c.store().unsent_acks(&origin).unwrap_or_default())
                .await;
        if !unsent.is_empty() {
            let acks: Vec<Value> = unsent
                .iter()
                .filter_map(|(_, a)| serde_json::from_str(a).ok())
                .collect();
            match wire::ack(&control.http, &receiver.control_url, &token, &acks).await {
                Ok(()) => {
                    failures = 0;
                    let c = control.clone();
                    let origin = receiver.origin.clone();
                    let ids: Vec<String> = unsent.into_iter().map(|(id, _)| id).collect();
                    let _ =
                        crate::runtime::blocking(move || c.store().mark_acks_sent(&origin, &ids))
                            .await;
                    continue;
                }
                Err(e) => {
                    tracing::info!("control: acks to {}: {e}", receiver.origin);
                    let wait = RETRY[failures.min(RETRY.len() - 1)];
                    failures += 1;
                    tokio::time::sleep(Duration::from_secs(wait)).await;
                    continue;
                }
            }
        }
        let _ = tokio::time::timeout(Duration::from_secs(5), bell.notified()).await;
    }
}

/// The hello (and pairing) body: every field the schema requires.
pub async fn hello_body(control: &Arc<Control>, receiver: &Receiver) -> Value {
    let c = control.clone();
    let origin = receiver.origin.clone();
    let (keys, config, harnesses) = crate::runtime::blocking(move || {
        let keys: Vec<String> = c
            .store()
            .keys(Some(&origin))
            .unwrap_or_default()
            .into_iter()
            .map(|k| k.id)
            .collect();
        let harnesses = crate::pipeline::outbox::Outbox::open_readonly(&c.paths.outbox())
            .ok()
            .flatten()
            .and_then(|o| o.harnesses().ok())
            .unwrap_or_default();
        (keys, Config::load(&c.paths).unwrap_or_default(), harnesses)
    })
    .await;
    let mut body = machine_facts(&config, harnesses);
    body["keys"] = json!(keys);
    body["waiting"] = json!(control.hub.waiting());
    body
}

/// What pairing and hello both say of this machine.
pub fn machine_facts(config: &Config, harnesses: Vec<String>) -> Value {
    let accounts: Vec<harness::control::Account> = harness::install::Host::from_env()
        .map(|host| {
            adapters::REGISTRY
                .iter()
                .filter_map(|a| a.control())
                .flat_map(|c| c.accounts(&host))
                .collect()
        })
        .unwrap_or_default();
    let mut body = json!({
        "name": config.machine(),
        "harnesses": harnesses,
        "modes": ["turn", "waiter"],
        "version": env!("CARGO_PKG_VERSION"),
        "folders": config.control_folders,
        "accounts": accounts,
    });
    // The schema knows safe and auto; inherit leaves the harness's own.
    if let Some(m) = config
        .control_mode
        .as_deref()
        .filter(|m| *m == "safe" || *m == "auto")
    {
        body["mode"] = json!(m);
    }
    body
}

/// One message a poll handed over.
async fn handle(control: &Arc<Control>, receiver: &Receiver, envelope: Value) {
    let Some(id) = envelope["id"].as_str().map(str::to_string) else {
        tracing::info!("control: a message without an id from {}", receiver.origin);
        return;
    };
    let c = control.clone();
    let (r, id2, env) = (receiver.clone(), id.clone(), envelope.clone());
    let decided = crate::runtime::blocking(move || admit(&c, &r, &id2, &env)).await;
    match decided {
        // Its final ack is kept already: send it.
        Ok(Admission::Again | Admission::Decided | Admission::KeyAdded) => {
            control.bell(&receiver.origin).notify_one()
        }
        // Handed over again while it waits here: it is still taken.
        Ok(Admission::Waiting) => say_taken(control, &receiver.origin, &id).await,
        Ok(Admission::Verified(from, q)) => offer_and_keep(control, from, &q).await,
        Err(e) => tracing::warn!("control: cannot keep message {id}: {e}"),
    }
}

enum Admission {
    /// Seen before and final: its ack goes again.
    Again,
    /// Seen before and still queued.
    Waiting,
    /// Decided at once (refused, unsupported...): its final ack is kept.
    Decided,
    KeyAdded,
    Verified(From, Queued),
}

/// Verifies a new message inside the store's write transaction (its nonce and
/// its row committed together) and decides what can be decided without the
/// hub. Blocking.
fn admit(
    control: &Control,
    receiver: &Receiver,
    id: &str,
    envelope: &Value,
) -> Result<Admission, super::store::StoreError> {
    let mut store = control.store();
    if let Some(m) = store.message(&receiver.origin, id)? {
        if m.state == State::Final {
            store.resend_ack(&receiver.origin, id)?;
            return Ok(Admission::Again);
        }
        return Ok(Admission::Waiting);
    }
    let now = protocol::time::now_ms();
    let trusted: Vec<_> = store
        .keys(Some(&receiver.origin))?
        .iter()
        .map(Key::trusted)
        .collect();
    let signed: Option<Signed> = serde_json::from_value(envelope.clone()).ok();
    let expires_ms = envelope["expires_at"]
        .as_str()
        .and_then(protocol::time::parse_rfc3339_ms);
    let verdict = store.admit(
        &receiver.origin,
        id,
        now,
        |nonces| {
            let Some(signed) = &signed else {
                return Err(Refusal::Malformed);
            };
            let mut policy = Policy::new(&receiver.machine, &receiver.rp_id, &trusted, now);
            policy.expires_at_ms = expires_ms;
            sessionpipe_verifier::verify(signed, &policy, nonces)
                .map(|v| machine_checks(control, id, receiver, v, expires_ms.unwrap_or(i64::MAX)))
        },
        |verdict| match verdict {
            Err(refusal) => Admitted {
                nonce: None,
                session: None,
                kind: None,
                command: None,
                state: State::Final,
                // Past the receiver's `expires_at` is `expired` (CONTROL §10),
                // every other refusal `refused` with its code.
                ack: Some(
                    if matches!(refusal, Refusal::Expired) {
                        json!({"id": id, "outcome": "expired", "at": now_text(),
                               "detail": refusal.to_string()})
                    } else {
                        ack_refused(id, refusal.code(), &refusal.to_string())
                    }
                    .to_string(),
                ),
            },
            Ok(Checked::Final {
                ack,
                nonce,
                session,
                ..
            }) => Admitted {
                nonce: Some(nonce.clone()),
                session: Some(session.clone()),
                kind: None,
                command: None,
                state: State::Final,
                ack: Some(ack.to_string()),
            },
            Ok(Checked::Offer { queued, nonce }) => Admitted {
                nonce: Some(nonce.clone()),
                session: Some(queued.session.clone()),
                kind: Some(queued.kind.clone()),
                command: Some(serde_json::to_string(queued).expect("a queued command serialises")),
                state: State::Queued,
                ack: None,
            },
        },
    )?;
    Ok(match verdict {
        Err(_) => Admission::Decided,
        Ok(Checked::Final { key_added, .. }) => {
            if let Some(k) = key_added {
                store.add_key(&k)?;
                return Ok(Admission::KeyAdded);
            }
            Admission::Decided
        }
        Ok(Checked::Offer { queued, .. }) => Admission::Verified(
            From {
                receiver: receiver.origin.clone(),
                id: id.to_string(),
                expires_ms: queued.expires_ms,
            },
            queued,
        ),
    })
}

/// What the machine's own checks (after the verifier's) decided.
enum Checked {
    /// Decided now: this ack is final.
    Final {
        ack: Value,
        nonce: String,
        session: String,
        key_added: Option<Key>,
    },
    /// Passed: offer it to the session.
    Offer { queued: Queued, nonce: String },
}

/// The machine's checks of §6 after the nonce: the session known, its folder
/// on the allowlist, `allow` only for an attention open now; and the kinds
/// this machine has no way in for yet.
fn machine_checks(
    control: &Control,
    id: &str,
    receiver: &Receiver,
    verified: sessionpipe_verifier::Verified,
    expires_ms: i64,
) -> Checked {
    let cmd = verified.command;
    let session = hub::session_ref(&cmd.session.harness, &cmd.session.id);
    let fin = |ack: Value| Checked::Final {
        ack,
        nonce: cmd.nonce.clone(),
        session: session.clone(),
        key_added: None,
    };
    let unsupported = |detail: &str| json!({"id": id, "outcome": "unsupported", "at": now_text(), "detail": detail});
    match &cmd.body {
        Body::KeyAdd { key, name } => {
            return Checked::Final {
                ack: json!({"id": id, "outcome": "delivered", "at": now_text()}),
                nonce: cmd.nonce.clone(),
                session: session.clone(),
                key_added: Some(Key {
                    receiver: receiver.origin.clone(),
                    id: key.id.clone(),
                    alg: key.alg,
                    spki: key.spki.clone(),
                    name: name.clone(),
                    added_ms: protocol::time::now_ms(),
                }),
            };
        }
        Body::Cancel => {
            return fin(unsupported(
                "no cancel API for this session on this machine",
            ));
        }
        Body::Start { .. } => {
            return fin(unsupported("this machine does not start sessions yet"));
        }
        Body::Prompt { .. } | Body::PermissionAnswer { .. } => {}
    }
    let Some(adapter) = adapters::lookup(&cmd.session.harness) else {
        return fin(unsupported("no such harness on this machine"));
    };
    let Some(hooks) = adapter.control() else {
        return fin(unsupported("this harness has no way in for a message"));
    };
    let record = crate::pipeline::outbox::Outbox::open_readonly(&control.paths.outbox())
        .ok()
        .flatten()
        .and_then(|o| {
            o.session(&cmd.session.harness, &cmd.session.id)
                .ok()
                .flatten()
        });
    let Some(record) = record else {
        return fin(ack_refused(
            id,
            "no_session",
            "this machine has no such session",
        ));
    };
    let config = Config::load(&control.paths).unwrap_or_default();
    if !folder_allowed(record.block.cwd.as_deref(), &config.control_folders) {
        return fin(ack_refused(
            id,
            "folder",
            "the session's folder is not on this machine's control folders",
        ));
    }
    let mut queued = Queued {
        session: session.clone(),
        kind: String::new(),
        text: None,
        attention: None,
        allow: None,
        note: cmd.note.clone(),
        expires_ms,
    };
    match &cmd.body {
        Body::Prompt { text } => {
            if hooks.turn_answer("").is_none() && !adapter_has_waiter(&cmd.session.harness) {
                return fin(unsupported(
                    "no way into a live session of this harness yet",
                ));
            }
            queued.kind = "prompt".into();
            queued.text = Some(text.clone());
        }
        Body::PermissionAnswer {
            for_attention,
            decision,
        } => {
            if hooks.permission_answer(true, None).is_none() {
                return fin(unsupported(
                    "this harness's permission prompt takes no answer",
                ));
            }
            let allow = matches!(decision, sessionpipe_verifier::Decision::Allow);
            let open = record.open.iter().any(|a| &a.id == for_attention);
            if !open {
                // A prompt that was open and closed (the terminal answered
                // first) makes any late answer `expired`; an `allow` for one
                // never seen is refused.
                let closed = control.hub.was_closed(&session, for_attention);
                return fin(if allow && !closed {
                    ack_refused(id, "no_attention", "no such attention is open now")
                } else {
                    json!({"id": id, "outcome": "expired", "at": now_text(),
                           "detail": "the attention is no longer open"})
                });
            }
            queued.kind = "permission.answer".into();
            queued.attention = Some(for_attention.clone());
            queued.allow = Some(allow);
        }
        _ => unreachable!("handled above"),
    }
    Checked::Offer {
        queued,
        nonce: cmd.nonce.clone(),
    }
}

/// Harnesses whose sessions can run `sessionpipe wait` (a background command).
fn adapter_has_waiter(harness: &str) -> bool {
    harness == "claude-code"
}

/// Hands a verified message to the hub; `Some(ack)` when that decided it.
async fn offer(control: &Arc<Control>, from: &From, q: &Queued) -> Option<Value> {
    if from.expires_ms <= protocol::time::now_ms() {
        return Some(hub::ack_expired(from, "past its expires_at"));
    }
    match q.kind.as_str() {
        "prompt" => {
            let (harness, id) = q.session.split_once(':')?;
            let c = control.clone();
            let (h, i) = (harness.to_string(), id.to_string());
            let running = crate::runtime::blocking(move || {
                crate::pipeline::outbox::Outbox::open_readonly(&c.paths.outbox())
                    .ok()
                    .flatten()
                    .and_then(|o| o.session(&h, &i).ok().flatten())
                    .is_some_and(|r| r.running_turn.is_some())
            })
            .await;
            let takes_turns = adapters::lookup(harness)
                .and_then(|a| a.control())
                .is_some_and(|c| c.turn_answer("").is_some());
            let host = from_host(&from.receiver);
            let framed = harness::frames::in_place(&host, &from.id, q.text.as_deref()?);
            match control
                .hub
                .offer_prompt(from.clone(), &q.session, framed, running, takes_turns)
            {
                PromptOffer::ToWaiter | PromptOffer::Queued => None,
                PromptOffer::NoRung => Some(json!({
                    "id": from.id, "outcome": "unsupported", "at": now_text(),
                    "detail": "the session has no running turn and no waiter"
                })),
            }
        }
        "permission.answer" => {
            let decision = Decision {
                allow: q.allow?,
                note: q.note.clone(),
            };
            match control.hub.offer_answer(
                from.clone(),
                &q.session,
                q.attention.as_deref()?,
                decision,
            ) {
                AnswerOffer::Delivered | AnswerOffer::Held => None,
                AnswerOffer::Expired => {
                    Some(hub::ack_expired(from, "the prompt was answered first"))
                }
            }
        }
        _ => None,
    }
}

/// The receiver's host, the `<host>` of the frame ("Message via <host> …").
fn from_host(origin: &str) -> String {
    reqwest::Url::parse(origin)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
        .unwrap_or_else(|| origin.to_string())
}

/// True when `cwd` (as the session's record keeps it, home as `~`) is inside
/// one of `folders`.
pub fn folder_allowed(cwd: Option<&str>, folders: &[String]) -> bool {
    let Some(cwd) = cwd else {
        return false;
    };
    let cwd = match cwd.strip_prefix('~') {
        Some(rest) => match spool::paths::home_dir() {
            Some(home) => home.join(rest.trim_start_matches('/')),
            None => return false,
        },
        None => std::path::PathBuf::from(cwd),
    };
    let cwd = std::fs::canonicalize(&cwd).unwrap_or(cwd);
    folders.iter().any(|f| {
        let f = std::path::Path::new(f);
        let f = std::fs::canonicalize(f).unwrap_or_else(|_| f.to_path_buf());
        cwd.starts_with(&f)
    })
}

fn now_text() -> String {
    protocol::time::rfc3339_ms(protocol::time::now_ms())
}

pub fn ack_refused(id: &str, code: &str, detail: &str) -> Value {
    json!({"id": id, "outcome": "refused", "at": now_text(), "code": code, "detail": detail})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_is_allowed_only_inside_an_allowed_one() {
        let dir = tempfile::tempdir().unwrap();
        let inside = dir.path().join("proj");
        std::fs::create_dir_all(&inside).unwrap();
        let allowed = vec![dir.path().to_string_lossy().into_owned()];
        assert!(folder_allowed(inside.to_str(), &allowed));
        assert!(folder_allowed(dir.path().to_str(), &allowed));
        let sibling = format!("{}-other", dir.path().display());
        assert!(
            !folder_allowed(Some(&sibling), &allowed),
            "a prefix of the name is not inside"
        );
        assert!(!folder_allowed(Some("/etc"), &allowed));
        assert!(!folder_allowed(None, &allowed));
        assert!(
            !folder_allowed(inside.to_str(), &[]),
            "no folder: nothing allowed"
        );
    }

    #[test]
    fn the_hello_says_what_the_schema_requires() {
        let config = Config {
            control_folders: vec!["/w".into()],
            control_mode: Some("inherit".into()),
            ..Default::default()
        };
        let body = machine_facts(&config, vec!["claude-code".into()]);
        for k in ["name", "harnesses", "modes", "version", "folders"] {
            assert!(body.get(k).is_some(), "{k}");
        }
        assert!(body.get("mode").is_none(), "inherit is not a schema mode");
    }
}
