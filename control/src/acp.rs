//! The ACP rung (ADAPTERS.md, "Agents driven through ACP"; CONTROL.md §6):
//! a verified `start` for a harness with no driver of its own runs a new
//! session in an installed ACP agent (`sessionpipe-acp`), a `prompt` to a
//! session the daemon started that way is its next turn (mode `api`), and a
//! `cancel` ends the running turn through `session/cancel`.
//!
//! Owns the sessions it holds: one agent process per session, kept for a
//! next prompt until it has been idle `acp_idle_minutes`, then ended through
//! the protocol (and its process group after it); one turn at a time per
//! session, each taking a slot of the machine's headless runs; the agent's
//! own session id kept under the start's name (`control_sessions`, how
//! `acp`), so a prompt after the process ended reopens it with
//! `session/load`. Permission requests are answered by the machine's mode
//! and never above it (`inherit` is `safe` here: nobody is at a terminal to
//! ask). Acks: `progress` as the reply grows, then one final: `delivered`
//! with the reply (and what the mode refused), or `failed` with the agent's
//! words. Says which agents of the table are installed here and whether it
//! drives them (`here`), for the hello, `doctor` and the UI.

use super::ack::Ack;
use super::held::{Held, lock};
use super::hub::MessageRef;
use super::machine::{Control, Frame, finish, framed, local_folder};
use super::queued::Queued;
use super::store::NamedSession;
use crate::host::Settings;
use harness::headless::{Level, Progress};
use sessionpipe_acp::{AcpError, Agent, AgentSpec, Bounds, Launch, Mode, TurnEnd};
use sessionpipe_verifier::{Body, SessionRef};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How a session this rung started is recorded.
const HOW: &str = "acp";
/// How long a cancel waits for the turn to say it stopped.
pub(super) const CANCEL_WAIT: Duration = Duration::from_secs(30);

/// Whether control drives `harness` with a driver of its own (its headless
/// runs), never over ACP: the one rule `found` and `here` share.
fn own_driver(harness: &str) -> bool {
    adapters::lookup(harness).is_some_and(|a| a.headless().is_some())
}

/// The ACP agent that drives `harness` here: in the table, installed, and
/// not a harness with a driver of its own.
pub(super) fn found(harness: &str) -> Option<(&'static AgentSpec, PathBuf)> {
    if own_driver(harness) {
        return None;
    }
    let spec = sessionpipe_acp::registry::lookup(harness)?;
    let host = harness::install::Host::from_env()?;
    spec.find(&host).map(|p| (spec, p))
}

/// One agent of the table installed here, as `doctor` and the UI show it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Here {
    pub harness: &'static str,
    pub product: &'static str,
    /// The program found: the file `SESSIONPIPE_ACP_<HARNESS>` names, or
    /// its CLI on `PATH`.
    pub program: PathBuf,
    /// It also reports through hooks (an adapter of its own).
    pub hooked: bool,
    /// Control drives it over ACP; false: with its own headless driver.
    pub over_acp: bool,
}

/// Every agent of the table installed here, in the table's order, whether
/// control drives it over ACP or not.
pub fn here() -> Vec<Here> {
    let Some(host) = harness::install::Host::from_env() else {
        return Vec::new();
    };
    sessionpipe_acp::registry::installed(&host)
        .into_iter()
        .map(|(spec, program)| Here {
            harness: spec.harness,
            product: spec.product,
            program,
            hooked: adapters::lookup(spec.harness).is_some(),
            over_acp: !own_driver(spec.harness),
        })
        .collect()
}

/// Every ACP harness control drives here (for the hello).
pub fn installed() -> Vec<&'static str> {
    here()
        .into_iter()
        .filter(|a| a.over_acp)
        .map(|a| a.harness)
        .collect()
}

/// Whether this rung has `session` (held now, or started here before).
pub(super) async fn has(control: &Arc<Control>, session: &SessionRef) -> bool {
    if control.acp.get(session).is_some() {
        return true;
    }
    named(control, session).await.is_some()
}

async fn named(control: &Arc<Control>, session: &SessionRef) -> Option<NamedSession> {
    let c = control.clone();
    let (h, n) = (session.harness.clone(), session.id.clone());
    crate::runtime::blocking(move || c.store().named_session(&h, &n).ok().flatten())
        .await
        .filter(|n| n.how == HOW)
}

/// The mode a turn runs in: the machine's, lowered by the message's level.
fn mode_of(config: &Settings, level: Option<Level>) -> Mode {
    let machine_auto = config.control_mode.as_deref() == Some("auto");
    let asked_less = matches!(level, Some(Level::Read | Level::Safe));
    if machine_auto && !asked_less {
        Mode::Auto
    } else {
        Mode::Safe
    }
}

fn bounds(config: &Settings) -> (Duration, Bounds) {
    let (idle, answer) = config.acp_bounds();
    (
        idle,
        Bounds {
            answer,
            ..Bounds::default()
        },
    )
}

/// A start's run: a new session in `cwd` (the start's folder, or its folder
/// in the session's own worktree), its first turn, and the session kept for
/// what comes next. `text` is framed already.
pub(super) async fn start_run(
    control: &Arc<Control>,
    from: &MessageRef,
    q: &Queued,
    cwd: &Path,
    text: &str,
) -> Ack {
    let Body::Start { model, .. } = &q.body else {
        return Ack::failed("only a start starts a session");
    };
    let (harness, name) = (q.session.harness.as_str(), q.session.id.as_str());
    let Some((spec, program)) = found(harness) else {
        return Ack::unsupported("this machine cannot start a session of this harness");
    };
    if model.is_some() {
        return Ack::unsupported("this agent takes no model from a start");
    }
    let config = control.config();
    begun(control, from).await;
    let agent = match open(spec, &program, cwd, from, &q.session, &config).await {
        Ok(a) => a,
        Err(e) => return Ack::failed(e.to_string()),
    };
    let session = match agent.new_session(cwd).await {
        Ok(s) => s,
        Err(e) => {
            agent.stop().await;
            return Ack::failed(e.to_string());
        }
    };
    let kept = NamedSession {
        id: session.clone(),
        how: HOW.into(),
        cwd: Some(cwd.to_string_lossy().into_owned()),
    };
    super::machine::name_session(control, harness, name, kept).await;
    let held = hold(control, &q.session, agent, session, &config);
    let mut ack = turn(
        control,
        from,
        &q.session,
        &held,
        text,
        mode_of(&config, q.level(from)),
    )
    .await;
    if let Ack::Delivered { session, .. } = &mut ack {
        *session = Some(q.session.clone());
    }
    ack
}

/// A prompt to a session this rung has: on its own task, its final ack kept.
pub(super) fn prompt(control: Arc<Control>, from: MessageRef, q: Queued) {
    tokio::spawn(async move {
        let ack = prompt_run(&control, &from, &q).await;
        finish(&control, &from, ack).await;
    });
}

async fn prompt_run(control: &Arc<Control>, from: &MessageRef, q: &Queued) -> Ack {
    let config = control.config();
    let text = framed(from, Frame::IntoSession, q.text().unwrap_or_default());
    let held = match control.acp.get(&q.session) {
        Some(h) if !h.agent.ended() => h,
        _ => match reopen(control, from, q, &config).await {
            Ok(h) => h,
            Err(ack) => return ack,
        },
    };
    turn(
        control,
        from,
        &q.session,
        &held,
        &text,
        mode_of(&config, q.level(from)),
    )
    .await
}

/// Starts the agent again and reopens the session it ran.
async fn reopen(
    control: &Arc<Control>,
    from: &MessageRef,
    q: &Queued,
    config: &Settings,
) -> Result<Arc<Held>, Ack> {
    let Some(named) = named(control, &q.session).await else {
        return Err(Ack::unsupported("no agent holds this session"));
    };
    let Some(agent) = found(&q.session.harness) else {
        return Err(Ack::failed(
            "the session's agent is no longer installed here",
        ));
    };
    let cwd = PathBuf::from(named.cwd.unwrap_or_default());
    load(control, from, &q.session, agent, &named.id, &cwd, config).await
}

/// Starts `agent` in `cwd`, loads its session `agent_session` and holds it
/// for `session`; the final ack of what went wrong otherwise.
async fn load(
    control: &Arc<Control>,
    from: &MessageRef,
    session: &SessionRef,
    (spec, program): (&AgentSpec, PathBuf),
    agent_session: &str,
    cwd: &Path,
    config: &Settings,
) -> Result<Arc<Held>, Ack> {
    let agent = open(spec, &program, cwd, from, session, config)
        .await
        .map_err(|e| Ack::failed(e.to_string()))?;
    if let Err(e) = agent.load_session(agent_session, cwd).await {
        agent.stop().await;
        return Err(match e {
            AcpError::NoLoad => Ack::unsupported(e.to_string()),
            e => Ack::failed(e.to_string()),
        });
    }
    Ok(hold(
        control,
        session,
        agent,
        agent_session.to_string(),
        config,
    ))
}

/// A prompt for a session of a hooked harness that no server of its own
/// took (OpenCode with no `opencode serve`; ADAPTERS.md, OpenCode's Control
/// row): its ACP agent reopens the session by the harness's own id with
/// `session/load`, runs the prompt as its next turn, and holds it like a
/// start's. `None` when no ACP agent of the harness is installed here (the
/// caller's reason stands). A session whose hooks say a turn is running is
/// left alone: a second process is never opened beside a live one.
pub(super) async fn prompt_loaded(
    control: &Arc<Control>,
    from: &MessageRef,
    q: &Queued,
) -> Option<Ack> {
    let (harness, id) = (q.session.harness.as_str(), q.session.id.as_str());
    let agent = found(harness)?;
    let (c, h, i) = (control.clone(), harness.to_string(), id.to_string());
    let record = crate::runtime::blocking(move || super::machine::session_record(&c, &h, &i)).await;
    let Some(record) = record else {
        return Some(Ack::unsupported("this machine has no such session"));
    };
    if record.running {
        return Some(Ack::unsupported(
            "a turn of the session is running in a process with no server of its own; \
             a second one is not opened beside it",
        ));
    }
    let cwd = record.cwd.as_deref().and_then(local_folder);
    let Some(cwd) = cwd.filter(|c| c.is_dir()) else {
        return Some(Ack::failed("the session's folder is not on this machine"));
    };
    let config = control.config();
    let held = match load(control, from, &q.session, agent, id, &cwd, &config).await {
        Ok(h) => h,
        Err(ack) => return Some(ack),
    };
    let text = framed(from, Frame::IntoSession, q.text().unwrap_or_default());
    let mode = mode_of(&config, q.level(from));
    Some(turn(control, from, &q.session, &held, &text, mode).await)
}

/// Starts an agent process for `session` (whose hooks, where it has them,
/// then name the session by the start's id).
async fn open(
    spec: &AgentSpec,
    program: &Path,
    cwd: &Path,
    from: &MessageRef,
    session: &SessionRef,
    config: &Settings,
) -> Result<Agent, AcpError> {
    let launch = Launch {
        program: program.to_path_buf(),
        args: spec.args.iter().map(|a| a.to_string()).collect(),
        cwd: cwd.to_path_buf(),
        env: vec![
            ("SESSIONPIPE_CONTROL_JOB".into(), from.id.clone()),
            ("SESSIONPIPE_CONTROL_SESSION".into(), session.to_string()),
        ],
    };
    Agent::start(&launch, bounds(config).1).await
}

/// Keeps `agent` for `session`, and ends it once idle.
fn hold(
    control: &Arc<Control>,
    session: &SessionRef,
    agent: Agent,
    agent_session: String,
    config: &Settings,
) -> Arc<Held> {
    let held = Arc::new(Held {
        agent,
        session: agent_session,
        turn: tokio::sync::Mutex::new(()),
        used: Mutex::new(tokio::time::Instant::now()),
    });
    if let Some(old) = lock(&control.acp.held).insert(session.clone(), held.clone()) {
        tokio::spawn(async move { old.agent.stop().await });
    }
    let idle = bounds(config).0;
    let (c, s, h) = (control.clone(), session.clone(), held.clone());
    tokio::spawn(async move {
        loop {
            let since = *lock(&h.used);
            tokio::time::sleep_until(since + idle).await;
            let gone = c.acp.get(&s).is_none_or(|now| !Arc::ptr_eq(&now, &h));
            if gone {
                return;
            }
            if h.agent.ended() || (*lock(&h.used) == since && !h.agent.running(&h.session)) {
                if let Some(ended) = c.acp.forget(&s).filter(|x| Arc::ptr_eq(x, &h)) {
                    ended.agent.stop().await;
                }
                return;
            }
        }
    });
    held
}

/// One turn in a held session; its final ack.
async fn turn(
    control: &Arc<Control>,
    from: &MessageRef,
    session: &SessionRef,
    held: &Arc<Held>,
    text: &str,
    mode: Mode,
) -> Ack {
    let _one = held.turn.lock().await;
    let _slot = control.runs.slot().await;
    let (grew, mut grown) = tokio::sync::watch::channel(0u64);
    let (tx, rx) = tokio::sync::watch::channel(Progress::default());
    let bridge = {
        let held = held.clone();
        tokio::spawn(async move {
            while grown.changed().await.is_ok() {
                if let Some(reply) = held.agent.reply_so_far(&held.session) {
                    tx.send_replace(Progress {
                        reply,
                        ..Default::default()
                    });
                }
            }
        })
    };
    let events = super::progress::Events {
        harness: session.harness.clone(),
        session: session.id.clone(),
        user: harness::frames::unframe(text).0,
    };
    let progress = tokio::spawn(super::progress::send_progress(
        control.clone(),
        from.clone(),
        rx,
        events,
    ));
    let minutes = control.config().run_caps().run_minutes;
    let ran = tokio::time::timeout(
        Duration::from_secs(minutes * 60),
        held.agent.prompt(&held.session, text, mode, grew),
    )
    .await;
    bridge.abort();
    progress.abort();
    *lock(&held.used) = tokio::time::Instant::now();
    match ran {
        Ok(Ok(end)) => delivered(&end),
        Ok(Err(e)) => {
            if held.agent.ended() {
                end_held(control, session, held).await;
            }
            Ack::failed(e.to_string())
        }
        Err(_) => {
            end_held(control, session, held).await;
            Ack::failed(format!(
                "the agent did not finish within {minutes} minutes and was ended"
            ))
        }
    }
}

async fn end_held(control: &Arc<Control>, session: &SessionRef, held: &Arc<Held>) {
    if let Some(h) = control.acp.forget(session).filter(|h| Arc::ptr_eq(h, held)) {
        h.agent.stop().await;
    } else {
        held.agent.stop().await;
    }
}

/// `delivered`, mode `api`, with the reply and what the mode refused.
fn delivered(end: &TurnEnd) -> Ack {
    let mut reply = end.reply.trim().to_string();
    if end.stop == "cancelled" {
        reply.push_str("\n\n");
        reply.push_str(harness::headless::CANCELLED);
    }
    if !end.refused.is_empty() {
        reply.push_str(&format!(
            "\n\n(Not allowed by this machine's control mode: {}.)",
            end.refused.join("; ")
        ));
    }
    Ack::Delivered {
        mode: Some("api"),
        reply: Some(reply),
        session: None,
    }
}

/// A verified `cancel` for a session this rung holds: `Some(ack)` when it
/// was ours to answer.
pub(super) async fn cancel(control: &Arc<Control>, session: &SessionRef) -> Option<Ack> {
    let held = control.acp.get(session)?;
    if !held.agent.running(&held.session) {
        return Some(Ack::expired("no turn of this session is running"));
    }
    if let Err(e) = held.agent.cancel(&held.session).await {
        return Some(Ack::failed(e.to_string()));
    }
    // The turn's own ack says what it had done; this one says it stopped.
    let stopped = async {
        while held.agent.running(&held.session) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let _ = tokio::time::timeout(CANCEL_WAIT, stopped).await;
    Some(Ack::delivered("api"))
}

/// The sessions this rung holds whose turn is running now (a `cancel` can
/// stop them: the hello's `cancels`).
pub(super) fn running(control: &Control) -> Vec<SessionRef> {
    lock(&control.acp.held)
        .iter()
        .filter(|(_, h)| h.agent.running(&h.session))
        .map(|(s, _)| s.clone())
        .collect()
}

/// Ends every agent this daemon holds (the daemon is stopping).
pub async fn stop_all(control: &Arc<Control>) {
    let all: Vec<Arc<Held>> = lock(&control.acp.held).drain().map(|(_, h)| h).collect();
    for h in all {
        h.agent.stop().await;
    }
}

async fn begun(control: &Arc<Control>, from: &MessageRef) {
    let c = control.clone();
    let (origin, id) = (from.receiver.clone(), from.id.clone());
    if let Err(e) = crate::runtime::blocking(move || c.store().set_begun(&origin, &id)).await {
        tracing::warn!("control: cannot mark a run begun: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mode_never_rises_above_the_machines() {
        let auto = Settings {
            control_mode: Some("auto".into()),
            ..Default::default()
        };
        let inherit = Settings {
            control_mode: Some("inherit".into()),
            ..Default::default()
        };
        assert_eq!(mode_of(&auto, None), Mode::Auto);
        assert_eq!(mode_of(&auto, Some(Level::Safe)), Mode::Safe);
        assert_eq!(mode_of(&Settings::default(), Some(Level::Auto)), Mode::Safe);
        assert_eq!(mode_of(&inherit, None), Mode::Safe, "nobody to ask");
    }

    #[test]
    fn a_harness_with_a_driver_of_its_own_is_never_driven_over_acp() {
        for own in ["claude-code", "codex", "antigravity"] {
            assert!(own_driver(own), "{own}");
            assert!(found(own).is_none(), "{own}");
        }
        for acp in ["gemini-cli", "goose", "qwen-code"] {
            assert!(!own_driver(acp), "{acp}");
        }
    }
}
