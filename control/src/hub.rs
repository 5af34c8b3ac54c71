//! Where verified messages meet the sessions they are for, in memory: prompts
//! queued for a session's next Stop, waiters (`sessionpipe wait`) blocked on a
//! session, permission hooks waiting on an attention, answers that came before
//! their hook asked, and the hook calls ingest has committed (a hook asks by
//! its job's name, and may ask before or after ingest took the job; a job
//! ingest took that reports nothing gets nothing at once).
//!
//! First answer wins: the terminal answering first is learnt from the session's
//! next hook (ingest reports the attention cleared), which releases a waiting
//! hook with no answer and makes a later answer `expired`. Nothing here ever
//! makes a decision up: a hook gets `allow` only from a verified answer.
//!
//! It holds no I/O and no store: every final outcome of a message it was handed
//! goes out on `finals`, which `run` writes to the store and acks.

use super::ack::Ack;
use sessionpipe_verifier::SessionRef;
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};

/// How long a committed hook call is remembered for its hook to ask about it.
const SEEN_KEEP: Duration = Duration::from_secs(30);
/// How long a closed attention is remembered, so a late answer is `expired`
/// rather than refused `no_attention`.
const CLOSED_KEEP: Duration = Duration::from_secs(25 * 3600);
/// At most this many closed attentions are remembered (oldest forgotten first).
const CLOSED_MAX: usize = 10_000;

/// A hook call the daemon's ingest committed, as control reads it: the job
/// its hook asks by, its session, the attentions it opened and cleared, and
/// whether it ended the turn (and the transcript it names).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HookCall {
    /// The spool job's name (the hook that wrote it asks by this name).
    pub job: String,
    pub harness: String,
    pub session: String,
    /// The harness's own hook name.
    pub event: String,
    pub opened: Vec<String>,
    pub cleared: Vec<String>,
    /// The call ended its session's turn (or the session).
    pub turn_ended: bool,
    /// The session's transcript, as the call names it (a reply is read there).
    pub transcript: Option<std::path::PathBuf>,
    /// The subagent whose own call this was, put under the session it works
    /// for: its Stop is not the session's, and it is handed nothing of it.
    pub subagent: Option<String>,
}

/// A message's final outcome, for `run` to keep and ack.
#[derive(Clone, Debug, PartialEq)]
pub struct Final {
    pub receiver: String,
    pub id: String,
    /// The ack as it is kept and sent (`Ack::json`).
    pub ack: serde_json::Value,
}

impl Final {
    /// `ack`, the final one of the message `from` names.
    pub fn of(from: &MessageRef, ack: &Ack) -> Final {
        Final {
            receiver: from.receiver.clone(),
            id: from.id.clone(),
            ack: ack.json(&from.id),
        }
    }
}

/// The `receiver` of a message asked on this machine (`sessionpipe ask`):
/// its acks go to the one who asked, never to a receiver.
pub const LOCAL: &str = "local:";

/// Which message an outcome is of, so it finds its way back: the receiver
/// that sent it (its origin, or `LOCAL`) and its id there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MessageRef {
    pub receiver: String,
    pub id: String,
    /// `expires_at` of the receiver's envelope (epoch ms).
    pub expires_ms: i64,
}

impl MessageRef {
    /// Asked at this machine, not sent by a receiver.
    pub fn is_local(&self) -> bool {
        self.receiver == LOCAL
    }
}

/// A verified permission decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub allow: bool,
    pub note: Option<String>,
}

/// What became of a prompt offered to its session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PromptOffer {
    /// A waiter took it at once.
    ToWaiter,
    /// Queued for the session's next Stop (the turn is running).
    Queued,
    /// No rung fits: nothing listens and no turn runs.
    NoRung,
}

/// What became of a permission answer offered to its attention.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnswerOffer {
    /// The waiting hook took it.
    Delivered,
    /// Held until the prompt's hook asks (it has not yet).
    Held,
    /// The attention closed before it (the terminal answered first).
    Expired,
}

/// What a hook call asks of control (by its job).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ask {
    Turn,
    Permission,
}

struct QueuedPrompt {
    from: MessageRef,
    framed: String,
}

enum Slot {
    /// The permission hook waits for an answer (and where it came from: a
    /// receiver's message, or the person at this machine).
    Waiting(oneshot::Sender<Option<(Decision, Option<MessageRef>)>>),
    /// An answer came before the hook asked.
    Answered(Decision, MessageRef),
}

/// A session's attention: the session and the attention's id.
type AttentionKey = (SessionRef, String);

#[derive(Default)]
struct Inner {
    /// Jobs ingest committed, by name: the call, or none for a job that
    /// reports nothing (`passed`).
    seen: HashMap<String, (Option<HookCall>, Instant)>,
    seen_waiters: HashMap<String, Vec<oneshot::Sender<Option<HookCall>>>>,
    prompts: HashMap<SessionRef, VecDeque<QueuedPrompt>>,
    waiters: HashMap<SessionRef, Vec<oneshot::Sender<(String, MessageRef)>>>,
    slots: HashMap<AttentionKey, Slot>,
    closed: HashMap<AttentionKey, Instant>,
    /// Sessions whose turn is running, as ingest last saw them.
    running: HashMap<SessionRef, bool>,
    /// Prompts given to a hook or waiter whose socket write is under way:
    /// message id → session.
    handing: HashMap<String, SessionRef>,
    /// Prompts handed over in place, whose reply `replies` now follows.
    follows: Vec<Follow>,
}

/// A prompt handed over in place: its session answers it in its own turn,
/// and the turn's reply is the final ack's.
pub struct Follow {
    pub from: MessageRef,
    pub session: SessionRef,
    pub mode: &'static str,
    /// Told of every turn that ends from the hand-over on.
    pub turn_ends: tokio::sync::broadcast::Receiver<TurnEnd>,
}

/// A turn of `session` ended (its transcript, as the call named it).
#[derive(Clone, Debug)]
pub struct TurnEnd {
    pub session: SessionRef,
    pub transcript: Option<std::path::PathBuf>,
}

pub struct Hub {
    inner: Mutex<Inner>,
    finals: mpsc::UnboundedSender<Final>,
    turn_ends: tokio::sync::broadcast::Sender<TurnEnd>,
    /// Rung when a prompt handed over in place waits to be followed.
    followed: tokio::sync::Notify,
    /// Rung when the set of sessions with a waiter changes (the hello says it).
    waiting_changed: tokio::sync::Notify,
}

impl Hub {
    pub fn new() -> (Hub, mpsc::UnboundedReceiver<Final>) {
        let (finals, rx) = mpsc::unbounded_channel();
        (
            Hub {
                inner: Mutex::new(Inner::default()),
                finals,
                turn_ends: tokio::sync::broadcast::channel(256).0,
                followed: tokio::sync::Notify::new(),
                waiting_changed: tokio::sync::Notify::new(),
            },
            rx,
        )
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn finish(&self, from: &MessageRef, ack: Ack) {
        let _ = self.finals.send(Final::of(from, &ack));
    }

    /// Ingest committed these hook calls (called from its thread).
    pub fn seen(&self, calls: Vec<HookCall>) {
        let mut expired = Vec::new();
        {
            let mut inner = self.lock();
            let now = Instant::now();
            forget_old_seen(&mut inner, now);
            for call in calls {
                let session = of_call(&call);
                for id in &call.cleared {
                    let key = (session.clone(), id.clone());
                    match inner.slots.remove(&key) {
                        // The terminal answered first: the hook goes, silent.
                        Some(Slot::Waiting(tx)) => {
                            let _ = tx.send(None);
                        }
                        Some(Slot::Answered(_, from)) => expired.push(from),
                        None => {}
                    }
                    remember_closed(&mut inner.closed, key, now);
                }
                if call.turn_ended {
                    let _ = self.turn_ends.send(TurnEnd {
                        session: session.clone(),
                        transcript: call.transcript.clone(),
                    });
                }
                let job = call.job.clone();
                remember_seen(&mut inner, job, Some(call), now);
            }
        }
        for from in expired {
            self.finish(&from, Ack::expired("the terminal answered first"));
        }
    }

    /// Ingest committed these jobs, and none reports anything (a call not a
    /// session's, or not its session's to report, as a Codex subagent's Stop;
    /// one it could not read): a hook that asks about one gets nothing now,
    /// instead of waiting out its patience for a call that never comes.
    pub fn passed(&self, jobs: Vec<String>) {
        if jobs.is_empty() {
            return;
        }
        let mut inner = self.lock();
        let now = Instant::now();
        forget_old_seen(&mut inner, now);
        for job in jobs {
            remember_seen(&mut inner, job, None, now);
        }
    }

    /// Says whether `session`'s turn is running (ingest's view, from `run`).
    pub fn set_running(&self, session: &SessionRef, running: bool) {
        self.lock().running.insert(session.clone(), running);
    }

    /// Offers a verified prompt to its session: a waiter first, then the
    /// running turn's Stop.
    pub fn offer_prompt(
        &self,
        from: MessageRef,
        session: &SessionRef,
        framed: String,
        turn_running: bool,
        takes_turns: bool,
    ) -> PromptOffer {
        let mut inner = self.lock();
        if let Some(waiters) = inner.waiters.get_mut(session) {
            while let Some(tx) = waiters.pop() {
                // Acked once the waiter's socket took it (`handed`).
                if tx.send((framed.clone(), from.clone())).is_ok() {
                    // The socket's `handed` waits for this lock: it finds it.
                    let empty = waiters.is_empty();
                    inner.handing.insert(from.id.clone(), session.clone());
                    if empty {
                        inner.waiters.remove(session);
                        self.waiting_changed.notify_waiters();
                    }
                    return PromptOffer::ToWaiter;
                }
            }
            inner.waiters.remove(session);
        }
        let running = turn_running || inner.running.get(session).copied().unwrap_or(false);
        if takes_turns && running {
            inner
                .prompts
                .entry(session.clone())
                .or_default()
                .push_back(QueuedPrompt { from, framed });
            return PromptOffer::Queued;
        }
        PromptOffer::NoRung
    }

    /// Offers a verified permission answer to its attention.
    pub fn offer_answer(
        &self,
        from: MessageRef,
        session: &SessionRef,
        attention: &str,
        decision: Decision,
    ) -> AnswerOffer {
        let key = (session.clone(), attention.to_string());
        let mut inner = self.lock();
        if inner.closed.contains_key(&key) {
            return AnswerOffer::Expired;
        }
        match inner.slots.remove(&key) {
            Some(Slot::Waiting(tx)) => {
                // Acked once the hook's socket took it (`handed`).
                if tx.send(Some((decision, Some(from)))).is_ok() {
                    return AnswerOffer::Delivered;
                }
                // The hook went away (the harness's own timeout): closed.
                remember_closed(&mut inner.closed, key, Instant::now());
                AnswerOffer::Expired
            }
            Some(Slot::Answered(first, first_from)) => {
                // First answer wins; this one is too late.
                inner.slots.insert(key, Slot::Answered(first, first_from));
                AnswerOffer::Expired
            }
            None => {
                inner.slots.insert(key, Slot::Answered(decision, from));
                AnswerOffer::Held
            }
        }
    }

    /// A hook call asks for what control holds for it: waits (a few seconds)
    /// for ingest to have committed its job, then takes a queued prompt (a
    /// Stop) or waits up to `window` for an answer (a permission prompt).
    /// `Some(decision)` / `Some(framed)` only from a verified message.
    pub async fn hook(&self, job: &str, ask: Ask, window: Duration) -> ForHook {
        let Some(call) = self.seen_job(job, Duration::from_secs(5)).await else {
            return ForHook::Nothing;
        };
        let session = of_call(&call);
        match ask {
            // A subagent's own Stop, its call put under the session it works
            // for: the session's turn runs on, and its messages wait for its
            // own Stop.
            Ask::Turn if call.subagent.is_some() => ForHook::Nothing,
            Ask::Turn => {
                let next = {
                    let mut inner = self.lock();
                    inner.running.insert(session.clone(), false);
                    let queue = inner.prompts.get_mut(&session);
                    let next = queue.and_then(VecDeque::pop_front);
                    if inner.prompts.get(&session).is_some_and(VecDeque::is_empty) {
                        inner.prompts.remove(&session);
                    }
                    next
                };
                if let Some(p) = &next {
                    self.lock()
                        .handing
                        .insert(p.from.id.clone(), session.clone());
                }
                match next {
                    Some(p) => ForHook::Turn(p.framed, p.from),
                    None => ForHook::Nothing,
                }
            }
            Ask::Permission => {
                let Some(attention) = call.opened.first().cloned() else {
                    return ForHook::Nothing;
                };
                let key = (session, attention);
                let rx = {
                    let mut inner = self.lock();
                    match inner.slots.remove(&key) {
                        Some(Slot::Answered(d, from)) => {
                            return ForHook::Permission(d, Some(from));
                        }
                        _ => {
                            let (tx, rx) = oneshot::channel();
                            inner.slots.insert(key.clone(), Slot::Waiting(tx));
                            rx
                        }
                    }
                };
                match tokio::time::timeout(window, rx).await {
                    Ok(Ok(Some((d, from)))) => ForHook::Permission(d, from),
                    Ok(_) => ForHook::Nothing,
                    Err(_) => {
                        // The window closed: the prompt stays the terminal's.
                        let mut inner = self.lock();
                        inner.slots.remove(&key);
                        remember_closed(&mut inner.closed, key, Instant::now());
                        ForHook::Nothing
                    }
                }
            }
        }
    }

    /// True when this attention was open and closed (answered in the
    /// terminal, its window gone, answered here): a late answer is `expired`.
    pub fn was_closed(&self, session: &SessionRef, attention: &str) -> bool {
        self.lock()
            .closed
            .contains_key(&(session.clone(), attention.to_string()))
    }

    /// The permission prompts whose hook waits now, `(session, attention)`:
    /// what the person at this machine may answer (local approvals).
    pub fn waiting_permissions(&self) -> Vec<(SessionRef, String)> {
        let inner = self.lock();
        let mut out: Vec<(SessionRef, String)> = inner
            .slots
            .iter()
            .filter(|(_, s)| matches!(s, Slot::Waiting(tx) if !tx.is_closed()))
            .map(|(k, _)| k.clone())
            .collect();
        out.sort();
        out
    }

    /// The person at this machine answered a waiting prompt from the tray,
    /// its notification or the window (local approvals, beyond the protocol;
    /// only ever their click). False when no hook waits on it (answered in the
    /// terminal, or its window closed): nothing is answered then.
    pub fn answer_locally(&self, session: &SessionRef, attention: &str, allow: bool) -> bool {
        let key = (session.clone(), attention.to_string());
        let mut inner = self.lock();
        let Some(Slot::Waiting(tx)) = inner.slots.remove(&key) else {
            return false;
        };
        let decision = Decision {
            allow,
            note: (!allow).then(|| "Denied at this machine (sessionpipe).".to_string()),
        };
        let sent = tx.send(Some((decision, None))).is_ok();
        remember_closed(&mut inner.closed, key, Instant::now());
        sent
    }

    /// What a hook or waiter was handed reached its socket (`written`) or did
    /// not (it was gone): the message's final ack, `delivered` by `mode` or
    /// `failed`. A message is acked delivered only once it left this daemon.
    /// A prompt is not final then: its session answers it in the turn that
    /// follows, and `replies` acks it with that turn's reply.
    pub fn handed(&self, from: &MessageRef, mode: &'static str, written: bool) {
        let prompt_of = self.lock().handing.remove(&from.id);
        if let (Some(session), true) = (prompt_of, written) {
            let follow = Follow {
                from: from.clone(),
                session,
                mode,
                turn_ends: self.turn_ends.subscribe(),
            };
            self.lock().follows.push(follow);
            self.followed.notify_one();
            return;
        }
        let ack = if written {
            Ack::delivered(mode)
        } else {
            Ack::Failed {
                code: None,
                mode: Some(mode),
                detail: "the hook or waiter was gone before it took the message".into(),
            }
        };
        self.finish(from, ack);
    }

    /// A prompt handed to a live session other than through a hook or a
    /// waiter (its inbox): its reply is followed the same way.
    pub fn follow(&self, from: &MessageRef, session: &SessionRef, mode: &'static str) {
        let follow = Follow {
            from: from.clone(),
            session: session.clone(),
            mode,
            turn_ends: self.turn_ends.subscribe(),
        };
        self.lock().follows.push(follow);
        self.followed.notify_one();
    }

    /// The prompts handed over in place since the last call, to follow.
    pub fn take_follows(&self) -> Vec<Follow> {
        std::mem::take(&mut self.lock().follows)
    }

    /// Waits until a prompt handed over in place waits to be followed.
    pub async fn followed(&self) {
        self.followed.notified().await
    }

    /// `sessionpipe wait`: blocks until a verified prompt for `session` comes.
    pub async fn wait(&self, session: &SessionRef) -> Option<(String, MessageRef)> {
        let rx = {
            let mut inner = self.lock();
            let (tx, rx) = oneshot::channel();
            let list = inner.waiters.entry(session.clone()).or_default();
            list.push(tx);
            if list.len() == 1 {
                self.waiting_changed.notify_waiters();
            }
            rx
        };
        rx.await.ok()
    }

    /// A waiter's connection closed: forget its sender.
    pub fn waiter_gone(&self, session: &SessionRef) {
        let mut inner = self.lock();
        if let Some(list) = inner.waiters.get_mut(session) {
            list.retain(|tx| !tx.is_closed());
            if list.is_empty() {
                inner.waiters.remove(session);
                self.waiting_changed.notify_waiters();
            }
        }
    }

    /// Sessions a waiter listens on (the hello's `waiting`).
    pub fn waiting(&self) -> Vec<SessionRef> {
        let inner = self.lock();
        let mut out: Vec<SessionRef> = inner
            .waiters
            .iter()
            .filter(|(_, l)| l.iter().any(|tx| !tx.is_closed()))
            .map(|(s, _)| s.clone())
            .collect();
        out.sort();
        out
    }

    pub async fn waiting_changed(&self) {
        self.waiting_changed.notified().await
    }

    /// Ends what waited past its `expires_at`: queued prompts and held answers.
    pub fn expire(&self, now_ms: i64) {
        let mut gone = Vec::new();
        {
            let mut inner = self.lock();
            for queue in inner.prompts.values_mut() {
                queue.retain(|p| {
                    let keep = p.from.expires_ms > now_ms;
                    if !keep {
                        gone.push(p.from.clone());
                    }
                    keep
                });
            }
            inner.prompts.retain(|_, q| !q.is_empty());
            let late: Vec<AttentionKey> = inner
                .slots
                .iter()
                .filter(|(_, s)| matches!(s, Slot::Answered(_, f) if f.expires_ms <= now_ms))
                .map(|(k, _)| k.clone())
                .collect();
            for k in late {
                if let Some(Slot::Answered(_, f)) = inner.slots.remove(&k) {
                    gone.push(f);
                }
            }
        }
        for from in gone {
            self.finish(&from, Ack::expired("past its expires_at"));
        }
    }

    /// The call ingest committed for `job`, waited for up to `patience`;
    /// `None` for a job that reports nothing, or that did not come in time.
    async fn seen_job(&self, job: &str, patience: Duration) -> Option<HookCall> {
        let rx = {
            let mut inner = self.lock();
            if let Some((call, _)) = inner.seen.get(job) {
                return call.clone();
            }
            let (tx, rx) = oneshot::channel();
            inner
                .seen_waiters
                .entry(job.to_string())
                .or_default()
                .push(tx);
            rx
        };
        let got = tokio::time::timeout(patience, rx)
            .await
            .ok()
            .and_then(Result::ok);
        if got.is_none() {
            let mut inner = self.lock();
            if let Some(list) = inner.seen_waiters.get_mut(job) {
                list.retain(|tx| !tx.is_closed());
                if list.is_empty() {
                    inner.seen_waiters.remove(job);
                }
            }
        }
        got.flatten()
    }
}

/// What a hook call gets back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ForHook {
    Nothing,
    /// A Stop hands this framed message to the model.
    Turn(String, MessageRef),
    /// A decision for the waiting prompt; from a receiver's message, or (no
    /// message) the person at this machine.
    Permission(Decision, Option<MessageRef>),
}

/// The session `<harness>:<id>` names, as this machine's own callers write
/// it (a waiter, the person's approval); no harness's rule is checked: a
/// session nothing verified can name is only never found.
pub fn session_named(text: &str) -> Option<SessionRef> {
    let (harness, id) = text.split_once(':')?;
    Some(SessionRef {
        harness: harness.to_string(),
        id: id.to_string(),
    })
}

/// The session a committed hook call is of.
fn of_call(call: &HookCall) -> SessionRef {
    SessionRef {
        harness: call.harness.clone(),
        id: call.session.clone(),
    }
}

fn forget_old_seen(inner: &mut Inner, now: Instant) {
    inner
        .seen
        .retain(|_, (_, at)| now.duration_since(*at) < SEEN_KEEP);
}

/// Keeps what ingest committed for `job` (for `SEEN_KEEP`) and hands it to
/// the hooks already waiting on it.
fn remember_seen(inner: &mut Inner, job: String, call: Option<HookCall>, now: Instant) {
    if let Some(waiters) = inner.seen_waiters.remove(&job) {
        for tx in waiters {
            let _ = tx.send(call.clone());
        }
    }
    inner.seen.insert(job, (call, now));
}

fn remember_closed(closed: &mut HashMap<AttentionKey, Instant>, key: AttentionKey, now: Instant) {
    if closed.len() >= CLOSED_MAX {
        closed.retain(|_, at| now.duration_since(*at) < CLOSED_KEEP);
        if closed.len() >= CLOSED_MAX
            && let Some(oldest) = closed
                .iter()
                .min_by_key(|(_, at)| **at)
                .map(|(k, _)| k.clone())
        {
            closed.remove(&oldest);
        }
    }
    closed.insert(key, now);
}

#[cfg(test)]
#[path = "hub_tests.rs"]
mod tests;
