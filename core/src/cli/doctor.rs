//! `sessionpipe doctor`: what is wrong and what to do about it. Each check says
//! `ok`, `note` or `problem` in one line (`--json`: one document, `{"problems":
//! N, "checks": [{"level", "what"}]}`); the exit code is 1 when any problem is
//! found. It reads and reports; it changes nothing.

use crate::cli::out::{self, outln};

use crate::installers::{Action, Installers};
use crate::pipeline::outbox::Outbox;
use crate::sinks::{SinkList, Target};
use crate::state::secrets::Secrets;
use harness::install::{FileState, HarnessReport};
use spool::Spool;
use spool::StatePaths;
use std::process::ExitCode;

/// What the daemon does while `config.json` does not read.
pub const CONFIG_KEPT: &str = "the daemon keeps the last settings that read (the defaults until one did) and prunes nothing until it reads; fix the file, or remove it for the defaults";

/// The checks said so far: printed as they come, or kept for one JSON
/// document at the end.
struct Report {
    problems: usize,
    json: Option<Vec<serde_json::Value>>,
}

impl Report {
    fn say(&mut self, level: &str, what: &str) {
        match &mut self.json {
            Some(checks) => checks.push(serde_json::json!({"level": level, "what": what})),
            None => outln!("{level:<8} {what}"),
        }
    }
    fn ok(&mut self, what: &str) {
        self.say("ok", what);
    }
    fn note(&mut self, what: &str) {
        self.say("note", what);
    }
    fn problem(&mut self, what: &str) {
        self.problems += 1;
        self.say("problem", what);
    }
}

pub fn run(paths: &StatePaths, json: bool) -> anyhow::Result<ExitCode> {
    let mut r = Report {
        problems: 0,
        json: json.then(Vec::new),
    };
    check_state_dir(paths, &mut r);
    if let Err(e) = crate::state::config::Config::load(paths) {
        r.problem(&format!("{e}: {CONFIG_KEPT}"));
    }
    match crate::state::lock::holder(paths) {
        Some(h) => {
            r.ok(&format!("a {} runs (pid {})", h.mode, h.pid));
            if crate::state::ui_file::current(paths).is_some_and(|a| !a.ui) {
                r.note(crate::state::ui_file::NO_UI_FILES);
            }
        }
        None => r.note("no daemon runs: hooks start a worker that drains the spool and exits; `sessionpipe daemon` (or the app) keeps one running"),
    }
    let spool = Spool::of(paths);
    let (pending, quarantined) = (spool.waiting(), spool.quarantined());
    if pending > 1000 {
        r.problem(&format!(
            "{pending} hook calls wait in the spool: is the daemon stuck? (see {})",
            paths.log_file().display()
        ));
    }
    if let Some(l) = crate::state::losses::current(paths) {
        r.problem(&format!(
            "{}; free some space (told until a week after the last)",
            crate::state::losses::line(&l)
        ));
    }
    if quarantined.jobs > 0 {
        r.note(&format!(
            "{} hook calls were unreadable and are kept ({}, secrets removed; at most {} and {}) with their reasons in {}",
            quarantined.jobs,
            out::bytes(quarantined.bytes),
            spool::folder::QUARANTINE_KEEP_JOBS,
            out::bytes(spool::folder::QUARANTINE_KEEP_BYTES),
            paths.quarantine().display()
        ));
    }
    match Outbox::open_readonly(&paths.outbox()) {
        Ok(Some(_)) => r.ok("the outbox opens"),
        Ok(None) => r.note("no outbox yet: nothing has been recorded"),
        Err(e) => r.problem(&format!("the outbox does not open: {e}")),
    }
    let hooks = check_harnesses(paths, &mut r)?;
    check_acp(&hooks, &mut r);
    check_sinks(paths, &mut r)?;
    check_control(paths, &mut r);
    if crate::state::config::Config::load(paths).is_ok_and(|c| c.remote_titles) {
        r.note(
            "remote titles are on: Claude Code sessions with a claude.ai link are asked for claude.ai's name, bearing their config dir's own sign-in for that one read (`sessionpipe titles off` stops it)",
        );
    }
    for var in [
        sessionpipe_pool::endpoints::API_VAR,
        sessionpipe_pool::endpoints::OAUTH_VAR,
        crate::pool::service::LOOK_VAR,
        crate::retention::NOW_VAR,
        "SESSIONPIPE_JOB_ARCHIVE",
    ] {
        if std::env::var_os(var).is_some_and(|v| !v.is_empty()) {
            r.note(&format!(
                "{var} is set: it is for tests and diagnostics only"
            ));
        }
    }
    match &r.json {
        Some(checks) => outln!(
            "{}",
            serde_json::json!({"problems": r.problems, "checks": checks})
        ),
        None => outln!(
            "{} problem{}",
            r.problems,
            if r.problems == 1 { "" } else { "s" }
        ),
    }
    Ok(if r.problems == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn check_state_dir(paths: &StatePaths, r: &mut Report) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        for (path, want) in [
            (paths.root.clone(), 0o700),
            (paths.wake_socket(), 0o600),
            (paths.outbox(), 0o600),
        ] {
            let Ok(meta) = std::fs::metadata(&path) else {
                continue;
            };
            let mode = meta.permissions().mode() & 0o777;
            if mode & !want != 0 {
                r.problem(&format!(
                    "{} is mode {mode:o}; it should be {want:o} (others could read it)",
                    path.display()
                ));
            }
        }
    }
    r.ok(&format!("state in {}", paths.root.display()));
}

/// Each harness's hooks, file by file; the reports, for the ACP agents' lines.
fn check_harnesses(paths: &StatePaths, r: &mut Report) -> anyhow::Result<Vec<HarnessReport>> {
    let mut reports = Vec::new();
    for acted in Installers::from_env(paths)?.act(Action::Status, &[], true, &[])? {
        let report = acted.report;
        for f in &report.files {
            let line = format!("{}: {} ({})", report.harness, f.path, f.state.word());
            match &f.state {
                FileState::Current => r.ok(&line),
                FileState::Missing => r.note(&format!(
                    "{line}: `sessionpipe install --harness {}` writes them",
                    report.harness
                )),
                FileState::Outdated(why) => {
                    r.problem(&format!("{line}: {why}; `sessionpipe install` renews them"))
                }
                FileState::Skipped(why) | FileState::Inactive(why) => {
                    r.problem(&format!("{line}: {why}"))
                }
                _ => r.note(&line),
            }
        }
        reports.push(report);
    }
    Ok(reports)
}

/// The ACP agents installed here: the program found, whether the agent also
/// reports through hooks (and their state, from `hooks`), and whether control
/// drives it over ACP or with its own headless driver.
fn check_acp(hooks: &[HarnessReport], r: &mut Report) {
    let agents = crate::control::acp::here();
    if agents.is_empty() {
        r.note(&format!(
            "no ACP agent is installed here: one is found by its CLI on PATH or by the file SESSIONPIPE_ACP_<HARNESS> names (e.g. SESSIONPIPE_ACP_GOOSE); none is ever downloaded ({} known)",
            sessionpipe_acp::AGENTS.len()
        ));
    }
    for a in &agents {
        let summary = hooks
            .iter()
            .find(|h| h.harness == a.harness)
            .map(|h| h.summary.as_str());
        let reports = match (a.hooked, summary) {
            (false, _) => "ACP only, no hooks".to_string(),
            (true, Some("current")) => "reports through hooks too (installed)".into(),
            (true, Some("missing")) => format!(
                "reports through hooks too (not installed: `sessionpipe install --harness {}`)",
                a.harness
            ),
            (true, Some("not found")) => {
                "reports through hooks too (its settings were not found, so none are written)"
                    .into()
            }
            (true, Some(other)) => format!("reports through hooks too ({other})"),
            (true, None) => "reports through hooks too".into(),
        };
        let driven = if a.over_acp {
            "control drives it over ACP"
        } else {
            "control drives it with its own headless driver, not over ACP"
        };
        r.ok(&format!(
            "ACP agent {} ({}) at {}: {reports}; {driven}",
            a.harness,
            a.product,
            a.program.display()
        ));
    }
}

fn check_control(paths: &StatePaths, r: &mut Report) {
    let Ok(Some(store)) = crate::control::store::Store::open_readonly(&paths.outbox()) else {
        return;
    };
    let secrets = crate::state::secrets::Secrets::new(&paths.root);
    for rcv in store.receivers().unwrap_or_default() {
        let keys = store.keys(Some(&rcv.origin)).unwrap_or_default().len();
        match (&rcv.stopped, secrets.backend_of(&rcv.token_key())) {
            (Some(why), _) => r.problem(&format!(
                "control with {} stopped: {why} (`sessionpipe control pair {}`)",
                rcv.origin, rcv.origin
            )),
            (None, None) => r.problem(&format!(
                "control with {}: the machine token is not in the secrets store; pair again",
                rcv.origin
            )),
            (None, Some(b)) if keys == 0 => r.problem(&format!(
                "control with {}: no passkey is trusted (token in {b}); pair again",
                rcv.origin
            )),
            (None, Some(b)) => r.ok(&format!(
                "control with {} as {}: {keys} passkey(s), token in {b}",
                rcv.origin, rcv.machine
            )),
        }
    }
}

fn check_sinks(paths: &StatePaths, r: &mut Report) -> anyhow::Result<()> {
    let list = SinkList::load(paths)?;
    if list.sinks.is_empty() {
        r.note("no sinks: events stay on this machine (`sessionpipe sink add`)");
    }
    let secrets = Secrets::new(&paths.root);
    for s in &list.sinks {
        match &s.paused {
            Some(why) => {
                let unpaused = crate::sinks::Sink {
                    paused: None,
                    ..s.clone()
                };
                r.problem(&format!("sink {} is paused: {why}", unpaused.describe()))
            }
            None => r.ok(&format!("sink {}", s.describe())),
        }
        // A pause names its cause; the same words again as its last error
        // would only repeat it.
        if let Some(e) = s
            .last_error
            .as_ref()
            .filter(|e| s.paused.as_ref() != Some(*e))
        {
            r.note(&format!("sink {}: last error: {e}", s.id));
        }
        if let Target::Http { .. } = s.target {
            match secrets.backend_of(&s.token_key()) {
                Some(b) => r.note(&format!("sink {}: its token is kept in {b}", s.id)),
                None => r.note(&format!(
                    "sink {}: no token (the receiver must not need one)",
                    s.id
                )),
            }
        }
    }
    Ok(())
}
