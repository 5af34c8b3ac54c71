//! The rungs past the hub's in-place ones (CONTROL.md §6; ADAPTERS.md, each
//! row's Control and Start options lines): a prompt no waiter or running turn
//! took goes to the session's inbox when a live process publishes one it can
//! speak, is resumed headless when no live process holds the session, or
//! forks it when one does; a `start` fetches its files and runs a new
//! session (in a git worktree of its own with `control worktrees on`; a
//! resume or fork runs in the folder the session's record names, which is
//! then that worktree's). Never two writers on one transcript: a session a
//! live process holds is never resumed, and a run holds its session until
//! it ends, so a message behind it waits for it.
//!
//! Every run is acked `taken` (before it came here), then `progress` as its
//! reply grows (best effort, at most one every few hundred milliseconds), then
//! once finally: `delivered` with its mode, its session and its reply, or
//! `failed` with the harness's own words. It never passes a flag that skips
//! the harness's permissions: a level maps only to the adapter's flags.

use super::ack::Ack;
use super::files::{self, Attached};
use super::hub::MessageRef;
use super::machine::{
    Control, Frame, finish, folder_allowed, framed, from_host, name_session, receiver_and_token,
};
use super::progress::{Events, send_progress};
use super::queued::Queued;
use super::store::NamedSession;
use super::worktrees::{self, SessionState, Verdict, Worktree};
use crate::host::Settings;
use harness::headless::{Headless, InboxOutcome, Level, Options, Progress, Run};
use serde_json::{Value, json};
use sessionpipe_verifier::{Body, FileRef, SessionRef};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// What became of one run, as its final ack says.
struct Outcome {
    ack: Ack,
    /// The harness's own session id, when the run named one.
    ran_as: Option<String>,
}

/// Whether a harness can take a message headless here.
pub(super) fn drives(harness: &str) -> bool {
    adapters::lookup(harness).is_some_and(|a| a.headless().is_some())
}

/// A prompt for a session no in-place rung took: runs on its own task and
/// keeps its final ack.
pub(super) fn prompt(control: Arc<Control>, from: MessageRef, q: Queued) {
    tokio::spawn(async move {
        // `None`: handed to a live session, whose reply is followed.
        if let Some(ack) = prompt_run(&control, &from, &q).await {
            finish(&control, &from, ack).await;
        }
    });
}

/// A verified `start`: runs on its own task and keeps its final ack.
/// `readmitted`: admitted before a restart (its start slot is taken here).
pub(super) fn start(control: Arc<Control>, from: MessageRef, q: Queued, readmitted: bool) {
    let cwd = match &q.body {
        Body::Start { cwd, .. } => cwd.as_str(),
        _ => "",
    };
    // Held before the task runs: a prompt admitted right after this start
    // finds its session held and waits for it.
    let hold = control.runs.hold_start(&q.session, cwd);
    tokio::spawn(async move {
        let _slot = control.runs.started(readmitted);
        let ack = match hold {
            Some(hold) => {
                let mut made = None;
                let ack = start_run(&control, &from, &q, &mut made).await;
                if let Some(worktree) = made
                    && !matches!(ack, Ack::Delivered { .. })
                {
                    unmake_worktree(&control, &q.session, worktree).await;
                }
                control.runs.start_ended(hold);
                ack
            }
            None => Ack::failed("a run of this session is under way already"),
        };
        finish(&control, &from, ack).await;
    });
}

async fn prompt_run(control: &Arc<Control>, from: &MessageRef, q: &Queued) -> Option<Ack> {
    let (harness, name) = (q.session.harness.as_str(), q.session.id.as_str());
    let Some(headless) = adapters::lookup(harness).and_then(|a| a.headless()) else {
        return Some(Ack::unsupported(
            "the session has no running turn and no waiter",
        ));
    };
    // Behind a run of this session (a start still running): wait for it.
    let lock = control.runs.hold(&q.session);
    let _held = lock.lock().await;
    let named = named(control, harness, name).await;
    let target = named.as_ref().map_or(name.to_string(), |n| n.id.clone());
    let Some(host) = harness::install::Host::from_env() else {
        return Some(Ack::failed("this machine has no home folder"));
    };
    let Some(cwd) = session_cwd(control, harness, name, named.as_ref()).await else {
        return Some(Ack::failed("the session's folder is not known here"));
    };
    let host_name = from_host(&from.receiver);
    let text = q.text().unwrap_or("");
    let live = headless.live(&host, &target);
    // A live session whose inbox this daemon speaks takes it in place.
    if let Some(socket) = live.as_ref().and_then(|l| l.inbox.clone()) {
        let framed = framed(from, Frame::InPlace, text);
        let sender = if from.is_local() {
            "sessionpipe ask".to_string()
        } else {
            format!("sessionpipe via {host_name}")
        };
        let (h, s, f) = (headless_of(harness), socket.clone(), framed.clone());
        let (c, hn, id) = (control.clone(), harness.to_string(), target.clone());
        let outcome = crate::runtime::blocking(move || {
            let memo = super::machine::session_record(&c, &hn, &id)
                .map(|r| r.memo)
                .unwrap_or_default();
            h.map(|h| h.inbox(&s, &sender, &f, &memo))
                .unwrap_or(InboxOutcome::Missed(String::new()))
        })
        .await;
        match outcome {
            InboxOutcome::Taken => {
                let live = SessionRef {
                    harness: harness.to_string(),
                    id: target.clone(),
                };
                control.hub.follow(from, &live, "api");
                return None;
            }
            InboxOutcome::Unsure(why) => {
                return Some(Ack::failed(format!(
                    "the session's inbox may not have taken it: {why}"
                )));
            }
            InboxOutcome::Held | InboxOutcome::Missed(_) => {}
        }
    }
    let framed = framed(from, Frame::IntoSession, text);
    let (run, mode) = match live {
        None => (Run::Resume { id: &target }, "resume"),
        Some(_) if headless.forks() => (Run::Fork { id: &target }, "fork"),
        Some(_) => {
            return Some(Ack::unsupported(
                "a live process holds the session and it takes no message from here",
            ));
        }
    };
    let config = control.config();
    // A level the message names (a local ask's `safe`) never rises above
    // the machine's.
    let level = match (q.level(from), default_level(&config, headless)) {
        (Some(asked), Some(machine)) => Some(asked.min(machine)),
        (asked, machine) => asked.or(machine),
    };
    let options = Options {
        level,
        model: None,
        allowed_tools: control.session_tools(&from.receiver),
    };
    let out = run_one(
        control, from, harness, headless, &host, &run, &cwd, &framed, options, mode, None,
    )
    .await;
    if mode == "fork"
        && let Some(fork) = &out.ran_as
    {
        // Later messages to this session go to the same fork.
        let kept = NamedSession {
            id: fork.clone(),
            how: "fork".into(),
            cwd: Some(cwd.to_string_lossy().into_owned()),
        };
        name_session(control, harness, name, kept).await;
    }
    Some(out.ack)
}

fn headless_of(harness: &str) -> Option<&'static dyn Headless> {
    adapters::lookup(harness).and_then(|a| a.headless())
}

/// Runs a start; `made` is the worktree made for it, if one was.
async fn start_run(
    control: &Arc<Control>,
    from: &MessageRef,
    q: &Queued,
    made: &mut Option<Worktree>,
) -> Ack {
    let Body::Start {
        text,
        cwd,
        files,
        level,
        model,
    } = &q.body
    else {
        return Ack::failed("only a start starts a session");
    };
    let (harness, id) = (q.session.harness.as_str(), q.session.id.as_str());
    let Some(headless) = adapters::lookup(harness).and_then(|a| a.headless()) else {
        if super::acp::found(harness).is_none() {
            return Ack::unsupported("this machine cannot start a session of this harness");
        }
        let cwd = match start_folder(control, &q.session, Path::new(cwd), made).await {
            Ok(c) => c,
            Err(ack) => return ack,
        };
        return match first_words(control, from, text, files, &cwd, id).await {
            Ok(framed) => super::acp::start_run(control, from, q, &cwd, &framed).await,
            Err(ack) => ack,
        };
    };
    let Some(host) = harness::install::Host::from_env() else {
        return Ack::failed("this machine has no home folder");
    };
    let config = control.config();
    let level = match level {
        Some(l) => Some(*l),
        None => default_level(&config, headless),
    };
    if model.is_some() && !headless.takes_model() {
        return Ack::unsupported("this harness takes no model from a start");
    }
    let cwd = match start_folder(control, &q.session, Path::new(cwd), made).await {
        Ok(c) => c,
        Err(ack) => return ack,
    };
    let framed = match first_words(control, from, text, files, &cwd, id).await {
        Ok(f) => f,
        Err(ack) => return ack,
    };
    let options = Options {
        level,
        model: model.clone(),
        allowed_tools: control.session_tools(&from.receiver),
    };
    let run = Run::Start { id };
    let out = run_one(
        control,
        from,
        harness,
        headless,
        &host,
        &run,
        &cwd,
        &framed,
        options,
        "resume",
        Some(&q.session),
    )
    .await;
    if headless.picks_ids()
        && let Some(real) = &out.ran_as
    {
        // The harness named the session itself: the start's id stays its name.
        let kept = NamedSession {
            id: real.clone(),
            how: "start".into(),
            cwd: Some(cwd.to_string_lossy().into_owned()),
        };
        name_session(control, harness, id, kept).await;
    }
    out.ack
}

/// The folder a start runs in: its own; or, with `control worktrees on` and
/// the folder inside a git repository, the same folder in a new worktree of
/// the session's own (`worktrees`). A worktree that cannot be made is the
/// final ack, `failed` with why: the session never runs in the checkout
/// instead. The worktree made goes in `made`.
async fn start_folder(
    control: &Arc<Control>,
    session: &SessionRef,
    cwd: &Path,
    made: &mut Option<Worktree>,
) -> Result<PathBuf, Ack> {
    let config = control.config();
    if !config.control_worktrees {
        return Ok(cwd.to_path_buf());
    }
    let paths = control.paths.clone();
    let (name, id, given) = (session.to_string(), session.id.clone(), cwd.to_path_buf());
    let folders = config.control_folders;
    let outcome = crate::runtime::blocking(move || {
        let allowed = |f: &Path| folder_allowed(f.to_str(), &folders);
        worktrees::make(&paths, &name, &id, &given, &allowed)
    })
    .await;
    match outcome {
        Ok(Some(w)) => {
            tracing::info!(
                "control: {session} runs in its own worktree {} on {}",
                w.path.display(),
                w.branch
            );
            let folder = w.folder.clone();
            *made = Some(w);
            Ok(folder)
        }
        Ok(None) => Ok(cwd.to_path_buf()),
        Err(e) => Err(Ack::failed(format!(
            "the session's own worktree could not be made: {e}"
        ))),
    }
}

/// A start that failed before its session was heard of leaves no worktree
/// behind: `w`, made for it, goes again when nothing was written in it
/// (`prune`'s own rule, the session counted as ended). One the outbox knows
/// a session of is left to `prune`.
async fn unmake_worktree(control: &Arc<Control>, session: &SessionRef, w: Worktree) {
    let c = control.clone();
    let session = session.clone();
    crate::runtime::blocking(move || {
        if super::machine::session_record(&c, &session.harness, &session.id).is_some() {
            return;
        }
        let standing = worktrees::standing(&w);
        if worktrees::decide(w.path.is_dir(), SessionState::Ended, &standing) != Verdict::Remove {
            return;
        }
        match worktrees::remove(&c.paths, &w) {
            Ok(_) => tracing::info!(
                "control: the start of {session} failed; its unused worktree {} is removed",
                w.path.display()
            ),
            Err(e) => tracing::warn!("control: cannot remove {}: {e}", w.path.display()),
        }
    })
    .await;
}

/// A start's first words, framed: its text and the list of its files,
/// fetched and written into `cwd` (a failure to is the final ack).
async fn first_words(
    control: &Arc<Control>,
    from: &MessageRef,
    text: &str,
    files: &[FileRef],
    cwd: &Path,
    session_id: &str,
) -> Result<String, Ack> {
    let mut text = text.to_string();
    if !files.is_empty() {
        text.push_str(
            &fetch_files(control, from, cwd, session_id, files)
                .await?
                .list,
        );
    }
    Ok(framed(from, Frame::NewSession, &text))
}

/// Fetches and writes a start's files; a failure is the final ack (`failed`,
/// code `file`), with nothing kept.
async fn fetch_files(
    control: &Arc<Control>,
    from: &MessageRef,
    cwd: &Path,
    session_id: &str,
    wanted: &[FileRef],
) -> Result<Attached, Ack> {
    let Some((receiver, token)) = receiver_and_token(control, &from.receiver).await else {
        return Err(Ack::failed_with(
            "file",
            "this machine is no longer paired with the receiver",
        ));
    };
    files::fetch_and_write(
        &control.http,
        &receiver.control_url,
        &token,
        cwd,
        session_id,
        wanted,
    )
    .await
    .map_err(|e| Ack::failed_with("file", e.to_string()))
}

/// Runs one headless process to its end and says what became of it.
#[allow(clippy::too_many_arguments)]
async fn run_one(
    control: &Arc<Control>,
    from: &MessageRef,
    harness: &str,
    headless: &dyn Headless,
    host: &harness::install::Host,
    run: &Run<'_>,
    cwd: &Path,
    text: &str,
    options: Options,
    mode: &'static str,
    started: Option<&SessionRef>,
) -> Outcome {
    let failed = |detail: &str| Outcome {
        ack: Ack::failed(detail),
        ran_as: None,
    };
    let Some(program) = host.find_on_path(headless.program()) else {
        return failed(&format!(
            "{} is not on this machine's PATH",
            headless.program()
        ));
    };
    let help = control.runs.help(&program).await;
    if let Some(level) = options.level
        && !headless.levels(&help).contains(&level)
    {
        return Outcome {
            ack: Ack::unsupported(format!(
                "the installed {} offers no `{}` level",
                headless.program(),
                level.as_str()
            )),
            ran_as: None,
        };
    }
    let place = match run {
        Run::Start { .. } => Default::default(),
        Run::Resume { id } | Run::Fork { id } => headless.place(host, id),
    };
    let mut launch = match headless.launch(run, cwd, text, &options, &place, &help) {
        Ok(l) => l,
        Err(e) => {
            return Outcome {
                ack: Ack::unsupported(e.to_string()),
                ran_as: None,
            };
        }
    };
    // The run's hooks say the session is attended by control, not a person.
    launch
        .env
        .push(("SESSIONPIPE_CONTROL_JOB".into(), from.id.clone()));
    let c = control.clone();
    let (origin, id) = (from.receiver.clone(), from.id.clone());
    if let Err(e) = crate::runtime::blocking(move || c.store().set_begun(&origin, &id)).await {
        tracing::warn!("control: cannot mark a run begun: {e}");
    }
    let (tx, rx) = tokio::sync::watch::channel(Progress::default());
    let run_id = match run {
        Run::Start { id } | Run::Resume { id } | Run::Fork { id } => id.to_string(),
    };
    // A cancel names the session the page shows: the one run, or the start's.
    let mut sessions = vec![SessionRef {
        harness: harness.to_string(),
        id: run_id.clone(),
    }];
    sessions.extend(started.filter(|s| !sessions.contains(s)).cloned());
    let asked = harness::frames::unframe(text).0;
    let events = Events {
        harness: harness.to_string(),
        session: run_id,
        user: asked,
    };
    let progress = tokio::spawn(send_progress(control.clone(), from.clone(), rx, events));
    let bound = Duration::from_secs(control.config().run_caps().run_minutes * 60);
    let result = control
        .runs
        .run(&program, &launch, headless.reader(), bound, &tx, &sessions)
        .await;
    drop(tx);
    progress.abort();
    match result {
        Ok(ran) => {
            let session = match (started, mode, &ran.session) {
                (Some(name), _, _) => Some(name.clone()),
                (None, "fork", Some(fork)) => Some(SessionRef {
                    harness: harness.to_string(),
                    id: fork.clone(),
                }),
                _ => None,
            };
            Outcome {
                ack: Ack::Delivered {
                    mode: Some(mode),
                    reply: Some(ran.reply),
                    session,
                },
                ran_as: ran.session,
            }
        }
        Err(e) => failed(&e.to_string()),
    }
}

/// A verified `cancel` for a session a headless run of this daemon runs,
/// through the interrupt its harness reads on stdin: `Some(ack)` when it was
/// ours to answer, `delivered` once the run ended (its own ack says what it
/// had done), `failed` when it still runs after the wait; `None` when no run
/// of it here takes an interrupt (the next rung answers).
pub(super) async fn cancel(control: &Arc<Control>, session: &SessionRef) -> Option<Ack> {
    if !control.runs.interrupt(session) {
        return None;
    }
    let ended = async {
        while control.runs.interruptible(session) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    match tokio::time::timeout(super::acp::CANCEL_WAIT, ended).await {
        Ok(()) => Some(Ack::delivered("sdk")),
        Err(_) => Some(Ack::failed(
            "the run was asked to stop and is still running",
        )),
    }
}

/// The level a run gets when its message names none: the machine's mode
/// (`safe` → safe; `auto` → the harness's widest default; `inherit` → no
/// flag, the person's own config decides).
pub(super) fn default_level(config: &Settings, headless: &dyn Headless) -> Option<Level> {
    match config.control_mode.as_deref() {
        Some("auto") => Some(headless.auto_default()),
        Some("inherit") => None,
        _ => Some(Level::Safe),
    }
}

async fn named(control: &Arc<Control>, harness: &str, name: &str) -> Option<NamedSession> {
    let c = control.clone();
    let (h, n) = (harness.to_string(), name.to_string());
    crate::runtime::blocking(move || c.store().named_session(&h, &n).ok().flatten()).await
}

/// The folder a session runs in: its record's (home written `~` there), or
/// where control started or forked it.
async fn session_cwd(
    control: &Arc<Control>,
    harness: &str,
    name: &str,
    named: Option<&NamedSession>,
) -> Option<PathBuf> {
    let c = control.clone();
    let (h, n) = (harness.to_string(), name.to_string());
    let recorded = crate::runtime::blocking(move || {
        super::machine::session_record(&c, &h, &n).and_then(|r| r.cwd)
    })
    .await;
    let cwd = recorded.or_else(|| named.and_then(|n| n.cwd.clone()))?;
    Some(match cwd.strip_prefix('~') {
        Some(rest) => spool::paths::home_dir()?.join(rest.trim_start_matches('/')),
        None => PathBuf::from(cwd),
    })
}

/// What this machine's hello says of the sessions it can run: per harness
/// whose CLI is on `PATH`, the levels a start may name here (the build's,
/// under the machine's mode), the level a start that names none gets
/// (`null`: the person's own config decides), whether a model may be named,
/// and the models the harness lists; plus the delivery modes that adds.
pub(super) async fn offered(
    runs: &super::runs::Runs,
    config: &Settings,
) -> (Vec<&'static str>, Value, Value) {
    let Some(host) = harness::install::Host::from_env() else {
        return (Vec::new(), json!({}), json!({}));
    };
    let ceiling = super::admit::ceiling(config);
    let mut starts = serde_json::Map::new();
    let mut models = serde_json::Map::new();
    let mut forks = false;
    for adapter in adapters::REGISTRY.iter() {
        let Some(h) = adapter.headless() else {
            continue;
        };
        let Some(program) = host.find_on_path(h.program()) else {
            continue;
        };
        let help = runs.help(&program).await;
        let levels: Vec<&str> = h
            .levels(&help)
            .into_iter()
            .filter(|l| *l <= ceiling)
            .map(Level::as_str)
            .collect();
        forks |= h.forks();
        let listed = h.models(&host);
        starts.insert(
            adapter.name().to_string(),
            json!({
                "levels": levels,
                "default": default_level(config, h).map(Level::as_str),
                "any_model": h.takes_model(),
            }),
        );
        if !listed.is_empty() {
            models.insert(adapter.name().to_string(), json!(listed));
        }
    }
    let mut modes = Vec::new();
    if !starts.is_empty() {
        modes.push("resume");
    }
    if forks {
        modes.push("fork");
    }
    (modes, Value::Object(starts), Value::Object(models))
}
