//! `sessionpipe status`: hooks per harness, the daemon and the service that
//! runs it where no tray does, the spool, the outbox, and each sink: how far
//! behind it is and its last error.

use crate::cli::out::{self, outln};

use crate::installers::{Action, Installers};
use crate::pipeline::outbox::Outbox;
use crate::pipeline::outbox::tally::Tally;
use serde_json::json;
use spool::{Spool, StatePaths};
use std::process::ExitCode;

/// Why a stdout sink sends nothing under the running daemon.
pub const STDOUT_WAITS: &str = "not sent: the running daemon's stdout goes nowhere anyone reads (it runs detached, in the app or as a service); stdout sinks run in `sessionpipe daemon` started in a terminal or a pipe";

pub fn run(paths: &StatePaths, as_json: bool) -> anyhow::Result<ExitCode> {
    let harnesses: Vec<_> = Installers::from_env(paths)?
        .act(Action::Status, &[], true, &[])?
        .into_iter()
        .map(|a| a.report)
        .collect();
    let daemon = crate::state::lock::holder(paths);
    let spool = Spool::of(paths);
    let (pending, quarantined) = (spool.waiting(), spool.quarantined());
    let lost = crate::state::losses::current(paths);
    let reader = Outbox::open_readonly(&paths.outbox())?;
    // The events bounded as the sinks' tallies are (a year's 3 million took
    // 170 ms to count), the sessions counted (a row each).
    let outbox = match &reader {
        Some(o) => Some((o.count_after(0)?, o.session_count()?)),
        None => None,
    };
    let on_disk = crate::pipeline::outbox::size_on_disk(&paths.outbox());
    // An unreadable config.json is said, with what the daemon does meanwhile;
    // the window shown is then the default, which retention does not act on
    // until the file reads.
    let (retention_days, config_problem) = match crate::state::config::Config::load(paths) {
        Ok(c) => (c.retention_days(), None),
        Err(e) => (
            crate::state::config::RETENTION_DAYS,
            Some(format!("{e}: {}", crate::cli::doctor::CONFIG_KEPT)),
        ),
    };
    let now = crate::retention::now_ms();
    let holder = crate::state::lock::holder(paths);
    let sinks: Vec<serde_json::Value> = crate::sinks::SinkList::load(paths)?
        .sinks
        .iter()
        .map(|s| {
            // Events stored after the cursor: an upper bound of what it still
            // has to get (some are filtered out for its tier); exact up to
            // `tally::EXACT_UP_TO`, then an estimate the line says "about" of.
            let unknown = Tally {
                count: 0,
                exact: true,
            };
            let behind = reader
                .as_ref()
                .and_then(|o| o.sink_cursor(&s.id).and_then(|c| o.count_after(c)).ok())
                .unwrap_or(unknown);
            // Of those, the ones past the window: kept only for this sink.
            let held = reader
                .as_ref()
                .and_then(|o| crate::retention::held_back(o, &s.id, retention_days, now).ok())
                .unwrap_or(unknown);
            let mut v = json!({"sink": s.shown(), "behind": behind.count, "holds_back": held.count,
                               "exact": {"behind": behind.exact, "holds_back": held.exact},
                               "line": s.describe()});
            // A stdout sink waits for a daemon whose stdout is read.
            if s.target == crate::sinks::Target::Stdout
                && holder
                    .is_some_and(|h| h.mode == crate::state::lock::Mode::Daemon && !h.stdout_sinks)
            {
                v["waiting"] = json!(STDOUT_WAITS);
            }
            v
        })
        .collect();

    let control: Vec<serde_json::Value> =
        crate::control::store::Store::open_readonly(&paths.outbox())?
            .map(|s| s.receivers())
            .transpose()?
            .unwrap_or_default()
            .iter()
            .map(|r| {
                json!({"receiver": r.origin, "machine": r.machine,
                       "polling": r.stopped.is_none(), "stopped": r.stopped})
            })
            .collect();

    // What the service manager says (systemctl, launchctl or schtasks);
    // shown when the service is installed, a manager that cannot be asked
    // said as such.
    let service = crate::service::status(paths).ok();
    let service_json = service.as_ref().map(|s| {
        json!({"installed": s.installed, "manager": s.manager, "unit": s.unit,
               "active": s.active, "enabled": s.enabled, "unreachable": s.unreachable})
    });

    if as_json {
        let doc = json!({
            "service": service_json,
            "control": control,
            "harnesses": harnesses,
            "daemon": daemon.as_ref().map(|h| json!({"pid": h.pid, "mode": h.mode.as_str()})),
            "spool": {
                "pending": pending,
                "quarantined": quarantined.jobs,
                "quarantined_bytes": quarantined.bytes,
                "lost": lost.as_ref().map(crate::state::losses::json),
            },
            "outbox": outbox.as_ref().map(|(events, sessions)| json!({
                "events": events.count,
                "events_exact": events.exact,
                "sessions": sessions,
                "bytes": on_disk,
                "retention_days": retention_days,
            })),
            "sinks": sinks,
            "state_dir": paths.root,
            "config_problem": config_problem,
        });
        outln!(
            "{}",
            serde_json::to_string_pretty(&doc).expect("status serialises")
        );
        return Ok(ExitCode::SUCCESS);
    }
    for h in &harnesses {
        outln!("{}", h.line());
    }
    match daemon {
        Some(h) => outln!("daemon: running (pid {}, {})", h.pid, h.mode),
        None => outln!("daemon: not running (hooks start a worker when they fire)"),
    }
    if let Some(problem) = &config_problem {
        outln!("settings: {problem}");
    }
    if let Some(s) = service.as_ref().filter(|s| s.installed) {
        let state = match (&s.unreachable, &s.active) {
            (Some(why), _) => format!("{} not reachable: {why}", s.manager),
            (None, active) => {
                let mut words = vec![s.manager, active.as_deref().unwrap_or("state unknown")];
                words.extend(s.enabled.as_deref());
                words.join(", ")
            }
        };
        outln!("service: installed ({state})");
    }
    outln!(
        "spool: {pending} waiting, {} quarantined ({})",
        quarantined.jobs,
        out::bytes(quarantined.bytes)
    );
    if let Some(l) = &lost {
        outln!("spool: {}", crate::state::losses::line(l));
    }
    match outbox {
        Some((events, sessions)) => outln!(
            "outbox: {}{} from {}, {} on disk; events older than {} go once every sink has them",
            if events.exact { "" } else { "about " },
            out::count(events.count as u64, "event", "events"),
            out::count(sessions as u64, "session", "sessions"),
            out::bytes(on_disk),
            out::count(u64::from(retention_days), "day", "days")
        ),
        None => outln!("outbox: empty"),
    }
    if sinks.is_empty() {
        outln!("sinks: none (events stay on this machine)");
    }
    for s in &sinks {
        let error = s["sink"]["last_error"]
            .as_str()
            .map(|e| format!("; last error: {e}"))
            .unwrap_or_default();
        let about = |field: &str| match s["exact"][field].as_bool() {
            Some(false) => "about ",
            _ => "",
        };
        let held = match s["holds_back"].as_u64().unwrap_or(0) {
            0 => String::new(),
            n => format!(
                "; holds back {}{} older than {}",
                about("holds_back"),
                out::count(n, "event", "events"),
                out::count(u64::from(retention_days), "day", "days")
            ),
        };
        let waiting = s["waiting"]
            .as_str()
            .map(|w| format!("; {w}"))
            .unwrap_or_default();
        outln!(
            "sink {}: {}{} behind{held}{waiting}{error}",
            s["line"].as_str().unwrap_or(""),
            about("behind"),
            out::count(s["behind"].as_u64().unwrap_or(0), "event", "events")
        );
    }
    for c in &control {
        match c["stopped"].as_str() {
            None => outln!(
                "control: {} (polling)",
                c["receiver"].as_str().unwrap_or("")
            ),
            Some(why) => outln!(
                "control: {} stopped: {why}",
                c["receiver"].as_str().unwrap_or("")
            ),
        }
    }
    Ok(ExitCode::SUCCESS)
}
