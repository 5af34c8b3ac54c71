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

use super::ack::Ack;
use super::admit::{self, Admission};
use super::host::{Host, ProgressEvents, Settings};
use super::hub::{AnswerOffer, Decision, Final, Hub, MessageRef, PromptOffer};
use super::machine::{Control, Frame, finish, framed, keep_final, say_taken};
use super::queued::Queued;
use super::runs::Runs;
use super::store::{Receiver, Store};
use super::wire::{self, WireError};
use super::{acp, api, ladder};
use serde_json::{Value, json};
use sessionpipe_verifier::Body;
use spool::StatePaths;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How often the paired receivers and the settings are read again.
const REFRESH: Duration = Duration::from_secs(2);
/// Waits after a failed poll or ack: the binding's first steps, then a minute.
const RETRY: &[u64] = &[2, 10, 60];

/// Opens control's store and offers again what was verified before a restart,
/// before the daemon's control socket takes a hook: a Stop that comes right
/// after a start finds its message queued.
pub async fn open(
    paths: &StatePaths,
    host: Arc<dyn Host>,
    hub: Arc<Hub>,
    progress_events: Option<Arc<dyn ProgressEvents>>,
) -> Option<Arc<Control>> {
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
    let caps = host.settings().run_caps();
    let control = Arc::new(Control::new(
        paths,
        host,
        hub,
        store,
        Runs::new(caps.runs_at_once),
        progress_events,
    ));
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
    let replies = tokio::spawn(super::replies::follow_all(control.clone()));
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
            (receivers, c.config())
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
    replies.abort();
    acp::stop_all(&control).await;
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

/// Messages verified before a restart and still waiting are offered again;
/// one whose kept form this version cannot read is acked `failed` with why,
/// never left waiting.
async fn requeue(control: &Arc<Control>) {
    let c = control.clone();
    let queued = crate::runtime::blocking(move || c.store().queued().unwrap_or_default()).await;
    for m in queued {
        let from = |expires_ms| MessageRef {
            receiver: m.receiver.clone(),
            id: m.id.clone(),
            expires_ms,
        };
        let q = match m.command.as_deref().map(Queued::from_kept) {
            Some(Ok(q)) => q,
            Some(Err(why)) => {
                let why =
                    format!("what was kept of the message does not read ({why}); it was not run");
                finish(control, &from(0), Ack::failed(why)).await;
                continue;
            }
            None => {
                let why = "nothing of the message was kept; it was not run";
                finish(control, &from(0), Ack::failed(why)).await;
                continue;
            }
        };
        let from = from(q.expires_ms);
        // Its process started before the restart: never run it twice.
        if m.begun {
            let why = "the daemon restarted while its run ran; it was not run again";
            finish(control, &from, Ack::failed(why)).await;
            continue;
        }
        // Said `taken` before the restart: the receiver holds it back still.
        if let Some(ack) = offer(control, &from, &q, true).await {
            finish(control, &from, ack).await;
        }
    }
}

/// Offers a verified message to the hub and keeps the final ack the offer
/// decided, if it decided one.
async fn offer_and_keep(control: &Arc<Control>, from: MessageRef, q: &Queued) {
    match offer(control, &from, q, false).await {
        Some(ack) => finish(control, &from, ack).await,
        // Waiting for its hook: `taken`, so the receiver stops handing it
        // over on every poll (each would be a poll answered at once).
        None => say_taken(control, &from.receiver, &from.id).await,
    }
}

/// One receiver: polls until a 401; its hellos and its acks run beside the
/// poll, so a hello never cuts a poll short.
async fn receiver_loop(control: Arc<Control>, receiver: Receiver) {
    let (host, key) = (control.host.clone(), receiver.token_key());
    let Some(token) = crate::runtime::blocking(move || host.token(&key)).await else {
        stop(
            &control,
            &receiver,
            "its machine token is missing from the secrets store",
        )
        .await;
        return;
    };
    control.polling(&receiver, &token);
    // What its runs may use without asking, as it says now.
    if let Ok(side) = wire::discover(&receiver.origin).await {
        control.set_session_tools(&receiver.origin, side.session_tools);
    }
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

/// The most sessions a hello lists as `cancels`.
const CANCELS_MAX: usize = 100;

/// The hello (and pairing) body: every field the schema requires.
pub async fn hello_body(control: &Arc<Control>, receiver: &Receiver) -> Value {
    let c = control.clone();
    let origin = receiver.origin.clone();
    let (keys, config, harnesses, (pool, limits), tier) = crate::runtime::blocking(move || {
        let keys: Vec<String> = c
            .store()
            .keys(Some(&origin))
            .unwrap_or_default()
            .into_iter()
            .map(|k| k.id)
            .collect();
        let tier = c.host.sink_tier(&origin);
        let standing = (c.host.pool(), c.host.limits());
        (keys, c.config(), c.host.harnesses(), standing, tier)
    })
    .await;
    let mut body = machine_facts(&config, harnesses, &control.runs).await;
    body["keys"] = json!(keys);
    let waiting: Vec<String> = control
        .hub
        .waiting()
        .iter()
        .map(ToString::to_string)
        .collect();
    body["waiting"] = json!(waiting);
    // The sessions whose running turn a `cancel` stops now, through the
    // harness's own interrupt (the page offers Stop on these).
    let mut cancels: Vec<String> = super::local::cancellable(control)
        .await
        .iter()
        .map(ToString::to_string)
        .collect();
    cancels.truncate(CANCELS_MAX);
    body["cancels"] = json!(cancels);
    if let Some(pool) = pool {
        body["pool"] = pool;
    }
    if let Some(limits) = limits {
        body["limits"] = limits;
    }
    // The tier its events reach this receiver at: the page says "this
    // machine hides what its agents ask to run" at 0.
    if let Some(tier) = tier {
        body["tier"] = json!(tier);
    }
    body
}

/// What pairing and hello both say of this machine.
pub async fn machine_facts(config: &Settings, harnesses: Vec<String>, runs: &Runs) -> Value {
    let accounts: Vec<harness::control::Account> = harness::install::Host::from_env()
        .map(|host| {
            adapters::REGISTRY
                .iter()
                .filter_map(|a| a.control())
                .flat_map(|c| c.accounts(&host))
                .collect()
        })
        .unwrap_or_default();
    let (headless_modes, mut starts, models) = ladder::offered(runs, config).await;
    let mut modes = vec!["turn", "waiter"];
    modes.extend(headless_modes);
    // The agents this machine drives over ACP: a start at the levels its
    // mode allows (no model: ACP names none), then `api` turns.
    let acp_found = crate::runtime::blocking(acp::installed).await;
    let ceiling = super::admit::ceiling(config);
    for h in &acp_found {
        let levels: Vec<&str> = [
            harness::headless::Level::Safe,
            harness::headless::Level::Auto,
        ]
        .into_iter()
        .filter(|l| *l <= ceiling)
        .map(harness::headless::Level::as_str)
        .collect();
        starts[*h] = json!({"levels": levels, "default": ceiling.as_str(), "any_model": false});
    }
    if !acp_found.is_empty() && !modes.contains(&"api") {
        modes.push("api");
    }
    let mut harnesses = harnesses;
    for h in acp_found {
        if !harnesses.iter().any(|x| x == h) {
            harnesses.push(h.to_string());
        }
    }
    // The schema's bound.
    harnesses.truncate(20);
    let mut body = json!({
        "name": config.machine,
        "harnesses": harnesses,
        "modes": modes,
        "files": true,
        "starts": starts,
        "models": models,
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
    let decided = crate::runtime::blocking(move || admit::admit(&c, &r, &id2, &env)).await;
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

/// Hands a verified message to the hub, or to the ladder past it; `Some(ack)`
/// when that decided it at once. `readmitted`: kept before a restart.
pub(super) async fn offer(
    control: &Arc<Control>,
    from: &MessageRef,
    q: &Queued,
    readmitted: bool,
) -> Option<Ack> {
    // A start runs however late it comes: its caps were checked when it
    // was admitted, and the device asked for a session, not a moment.
    if !matches!(q.body, Body::Start { .. }) && from.expires_ms <= protocol::time::now_ms() {
        return Some(Ack::expired("past its expires_at"));
    }
    let session = &q.session;
    match &q.body {
        Body::Start { .. } => {
            ladder::start(control.clone(), from.clone(), q.clone(), readmitted);
            None
        }
        Body::Prompt { text } => {
            let harness = session.harness.as_str();
            // A session an ACP agent of ours runs (or a start of one, still
            // running) takes it as its next turn.
            if acp::has(control, session).await
                || (control.runs.is_held(session) && acp::found(harness).is_some())
            {
                acp::prompt(control.clone(), from.clone(), q.clone());
                return None;
            }
            // A run of ours holds the session: the message waits for it.
            if control.runs.is_held(session) {
                ladder::prompt(control.clone(), from.clone(), q.clone());
                return None;
            }
            let (c, s) = (control.clone(), session.clone());
            let running = crate::runtime::blocking(move || {
                super::machine::session_record(&c, &s.harness, &s.id).is_some_and(|r| r.running)
            })
            .await;
            let takes_turns = adapters::lookup(harness)
                .and_then(|a| a.control())
                .is_some_and(|c| c.turn_answer("").is_some());
            let framed = framed(from, Frame::InPlace, text);
            match control
                .hub
                .offer_prompt(from.clone(), session, framed, running, takes_turns)
            {
                PromptOffer::ToWaiter | PromptOffer::Queued => None,
                PromptOffer::NoRung if ladder::drives(harness) => {
                    ladder::prompt(control.clone(), from.clone(), q.clone());
                    None
                }
                PromptOffer::NoRung if api::reaches(harness) => {
                    api::prompt(control.clone(), from.clone(), q.clone());
                    None
                }
                PromptOffer::NoRung => Some(Ack::unsupported(
                    "the session has no running turn and no waiter",
                )),
            }
        }
        Body::PermissionAnswer {
            for_attention,
            decision,
        } => {
            let decision = Decision {
                allow: matches!(decision, sessionpipe_verifier::Decision::Allow),
                note: q.note.clone(),
            };
            match control
                .hub
                .offer_answer(from.clone(), session, for_attention, decision)
            {
                AnswerOffer::Delivered | AnswerOffer::Held => None,
                AnswerOffer::Expired => Some(Ack::expired("the prompt was answered first")),
            }
        }
        Body::Cancel => {
            if let Some(ack) = super::local::cancel_here(control, session).await {
                return Some(ack);
            }
            api::cancel(control.clone(), from.clone(), q.clone());
            None
        }
        // Decided when it came (`admit`): it never waits.
        Body::KeyAdd { .. } => Some(Ack::failed("a key.add never waits to be offered")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hello_says_what_the_schema_requires() {
        let config = Settings {
            control_folders: vec!["/w".into()],
            control_mode: Some("inherit".into()),
            ..Default::default()
        };
        let runs = Runs::new(1);
        let body =
            crate::runtime::block_on(machine_facts(&config, vec!["claude-code".into()], &runs));
        for k in ["name", "harnesses", "modes", "version", "folders"] {
            assert!(body.get(k).is_some(), "{k}");
        }
        assert!(body.get("mode").is_none(), "inherit is not a schema mode");
    }
}
