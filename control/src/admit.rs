//! A message a poll handed over, admitted: verified inside the store's write
//! transaction (its nonce and its row committed together, so a kill between
//! verification and delivery can never let it run twice), then the machine's
//! own checks of CONTROL.md §5 after the verifier's: the session known, its
//! folder on the allowlist, `allow` only for an attention open now, a start's
//! folder, level and caps. What can be decided here is decided here (its
//! final ack kept in the same commit); the rest is queued for `run` to offer.
//!
//! Blocking (it runs on the blocking pool); it sends nothing and runs nothing.

use super::ack::Ack;
use super::hub::MessageRef;
use super::machine::{Control, folder_allowed};
use super::queued::Queued;
use super::store::{Admitted, Key, Receiver, State};
use crate::host::Settings;
use harness::headless::Level;
use serde_json::Value;
use sessionpipe_verifier::{Body, Policy, Refusal};

/// How far back the hourly start cap counts.
const HOUR_MS: i64 = 3600 * 1000;

pub(super) enum Admission {
    /// Seen before and final: its ack goes again.
    Again,
    /// Seen before and still queued.
    Waiting,
    /// Decided at once (refused, unsupported...): its final ack is kept.
    Decided,
    KeyAdded,
    Verified(MessageRef, Box<Queued>),
}

/// Verifies a new message inside the store's write transaction (its nonce and
/// its row committed together) and decides what can be decided without the
/// hub. Blocking.
pub(super) fn admit(
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
    let counts = Counts {
        starts_hour: store.starts_since(now - HOUR_MS)?,
        named: named_in(envelope).and_then(|(h, n)| store.named_session(&h, &n).ok().flatten()),
    };
    let trusted: Vec<_> = store
        .keys(Some(&receiver.origin))?
        .iter()
        .map(Key::trusted)
        .collect();
    // The envelope's own members (its `expires_at` too) of the wrong type
    // are `malformed`, as the command's are.
    let carried = sessionpipe_verifier::carried(envelope);
    let verdict = store.admit(
        &receiver.origin,
        id,
        now,
        |nonces| {
            let carried = carried.as_ref().map_err(Refusal::clone)?;
            let mut policy = Policy::new(&receiver.machine, &receiver.rp_id, &trusted, now);
            policy.expires_at_ms = carried.expires_at_ms;
            sessionpipe_verifier::verify(&carried.signed, &policy, nonces).map(|v| {
                machine_checks(
                    control,
                    receiver,
                    v,
                    carried.expires_at_ms.unwrap_or(i64::MAX),
                    &counts,
                )
            })
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
                        Ack::expired(refusal.to_string())
                    } else {
                        Ack::refused(refusal.code(), refusal.to_string())
                    }
                    .json(id)
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
                ack: Some(ack.json(id).to_string()),
            },
            Ok(Checked::Offer { queued, nonce }) => Admitted {
                nonce: Some(nonce.clone()),
                session: Some(queued.session.to_string()),
                kind: Some(queued.kind().to_string()),
                command: Some(queued.to_kept()),
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
            MessageRef {
                receiver: receiver.origin.clone(),
                id: id.to_string(),
                expires_ms: queued.expires_ms,
            },
            Box::new(queued),
        ),
    })
}

/// What the checks read from the store before its write transaction (its
/// lock is held all along, so they stay true through it).
struct Counts {
    /// Starts admitted in the last hour.
    starts_hour: usize,
    /// The session behind the command's name, when control gave it out.
    named: Option<super::store::NamedSession>,
}

/// The session a command names, read without trusting it (for a lookup
/// only: nothing is decided on it before the verifier passed the command).
fn named_in(envelope: &Value) -> Option<(String, String)> {
    let cmd: Value = serde_json::from_str(envelope["cmd"].as_str()?).ok()?;
    let (h, n) = cmd["session"].as_str()?.split_once(':')?;
    Some((h.to_string(), n.to_string()))
}

/// What the machine's own checks (after the verifier's) decided.
enum Checked {
    /// Decided now: this ack is final.
    Final {
        ack: Ack,
        nonce: String,
        session: String,
        key_added: Option<Key>,
    },
    /// Passed: offer it to the session.
    Offer { queued: Queued, nonce: String },
}

/// The machine's checks of §5 after the nonce: the session known, its folder
/// on the allowlist, `allow` only for an attention open now; a start's
/// harness, folder, level and caps; and the kinds this machine has no way in
/// for.
fn machine_checks(
    control: &Control,
    receiver: &Receiver,
    verified: sessionpipe_verifier::Verified,
    expires_ms: i64,
    counts: &Counts,
) -> Checked {
    let cmd = verified.command;
    let session = cmd.session.clone();
    let fin = |ack: Ack| Checked::Final {
        ack,
        nonce: cmd.nonce.clone(),
        session: session.to_string(),
        key_added: None,
    };
    // Passed: the command waits as the verifier read it.
    let offer = || Checked::Offer {
        queued: Queued {
            session: session.clone(),
            body: cmd.body.clone(),
            note: cmd.note.clone(),
            expires_ms,
        },
        nonce: cmd.nonce.clone(),
    };
    let config = control.config();
    // Held in an ACP agent of ours, started as one, or a start of one still
    // running (its name is not kept until the agent names the session).
    let acp_session = counts.named.as_ref().is_some_and(|n| n.how == "acp")
        || (control.runs.starting_in(&session).is_some()
            && super::acp::found(&session.harness).is_some());
    match &cmd.body {
        Body::KeyAdd { key, name } => {
            return Checked::Final {
                ack: Ack::Delivered {
                    mode: None,
                    reply: None,
                    session: None,
                },
                nonce: cmd.nonce.clone(),
                session: session.to_string(),
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
        // Only through a harness's own API (never a signal to a process).
        Body::Cancel => {
            if adapters::lookup(&session.harness)
                .and_then(|a| a.api())
                .is_none()
                && !acp_session
                && !control.runs.interruptible(&session)
            {
                return fin(Ack::unsupported(
                    "no cancel API for this session on this machine",
                ));
            }
        }
        Body::Start { cwd, level, .. } => {
            let headless = adapters::lookup(&session.harness).and_then(|a| a.headless());
            if headless.is_none() && super::acp::found(&session.harness).is_none() {
                return fin(Ack::unsupported(
                    "this machine cannot start a session of this harness",
                ));
            }
            if !folder_allowed(Some(cwd), &config.control_folders) {
                return fin(Ack::refused(
                    "folder",
                    "the folder is not on this machine's control folders",
                ));
            }
            if !std::path::Path::new(cwd).is_dir() {
                return fin(Ack::refused("folder", "no such folder on this machine"));
            }
            if let Some(l) = *level
                && l > ceiling(&config)
            {
                return fin(Ack::refused(
                    "mode",
                    format!(
                        "this machine's control mode allows no start at `{}`",
                        l.as_str()
                    ),
                ));
            }
            let caps = config.run_caps();
            if counts.starts_hour >= caps.starts_hourly {
                return fin(Ack::refused(
                    "start_limit",
                    format!(
                        "{} sessions were started in the last hour",
                        counts.starts_hour
                    ),
                ));
            }
            if !control.runs.reserve_start(caps.starts_running) {
                return fin(Ack::refused(
                    "start_limit",
                    format!("{} started sessions are running", caps.starts_running),
                ));
            }
            return offer();
        }
        Body::Prompt { .. } | Body::PermissionAnswer { .. } => {}
    }
    // A session an ACP agent of ours runs: its folder is where it started.
    if acp_session && matches!(cmd.body, Body::Prompt { .. } | Body::Cancel) {
        let cwd = counts
            .named
            .as_ref()
            .and_then(|n| n.cwd.clone())
            .or_else(|| control.runs.starting_in(&session));
        if !folder_allowed(cwd.as_deref(), &config.control_folders) {
            return fin(outside_folders());
        }
        return offer();
    }
    let Some(adapter) = adapters::lookup(&session.harness) else {
        return fin(Ack::unsupported("no such harness on this machine"));
    };
    let hooks = adapter.control();
    let record = super::machine::session_record(control, &session.harness, &session.id);
    // A session control named (a start whose harness picked its own id)
    // has its folder where the start ran.
    let cwd = match (&record, &counts.named) {
        (Some(r), _) => r.cwd.clone(),
        (None, Some(n)) => n.cwd.clone(),
        // A start of ours holds it: the prompt waits for it.
        (None, None) => match control.runs.starting_in(&session) {
            Some(cwd) => Some(cwd),
            None => {
                return fin(Ack::refused(
                    "no_session",
                    "this machine has no such session",
                ));
            }
        },
    };
    if !folder_allowed(cwd.as_deref(), &config.control_folders) {
        return fin(outside_folders());
    }
    match &cmd.body {
        Body::Prompt { .. } => {
            let in_place = hooks.is_some_and(|h| h.turn_answer("").is_some())
                || adapter_has_waiter(&session.harness);
            if !in_place && adapter.headless().is_none() && adapter.api().is_none() {
                return fin(Ack::unsupported(
                    "this machine has no way into a session of this harness",
                ));
            }
        }
        Body::PermissionAnswer {
            for_attention,
            decision,
        } => {
            if hooks
                .and_then(|h| h.permission_answer(true, None))
                .is_none()
            {
                return fin(Ack::unsupported(
                    "this harness's permission prompt takes no answer",
                ));
            }
            let allow = matches!(decision, sessionpipe_verifier::Decision::Allow);
            let open = record
                .as_ref()
                .is_some_and(|r| r.open.iter().any(|a| a == for_attention));
            if !open {
                // A prompt that was open and closed (the terminal answered
                // first) makes any late answer `expired`; an `allow` for one
                // never seen is refused.
                let closed = control.hub.was_closed(&session, for_attention);
                return fin(if allow && !closed {
                    Ack::refused("no_attention", "no such attention is open now")
                } else {
                    Ack::expired("the attention is no longer open")
                });
            }
        }
        Body::Cancel => {}
        Body::Start { .. } | Body::KeyAdd { .. } => unreachable!("handled above"),
    }
    offer()
}

/// The refusal of a message for a session outside the control folders.
fn outside_folders() -> Ack {
    Ack::refused(
        "folder",
        "the session's folder is not on this machine's control folders",
    )
}

/// The highest level a start may ask for on this machine: its mode's. An
/// `auto` machine allows every level; `safe` and `inherit` allow `read`
/// and `safe`.
pub fn ceiling(config: &Settings) -> Level {
    match config.control_mode.as_deref() {
        Some("auto") => Level::Auto,
        _ => Level::Safe,
    }
}

/// Harnesses whose sessions can run `sessionpipe wait` (a background command).
pub(super) fn adapter_has_waiter(harness: &str) -> bool {
    harness == "claude-code"
}
