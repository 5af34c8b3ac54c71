//! `sessionpipe titles on|off|refresh [--json]`: remote titles (ADAPTERS.md,
//! "the one exception"), the person's own switch. `on` also asks about the
//! last 30 days and re-sends each session sent under another name; what it
//! says is counts, never a title, a session's words or a sign-in.

use crate::cli::out::outln;
use crate::cli::progress::{Show, Shown};
use crate::state::progress::Progress;
use crate::titles::{self, resend::Resent};
use anyhow::Context;
use clap::Subcommand;
use harness::install::Host;
use spool::StatePaths;
use std::process::ExitCode;

#[derive(Subcommand)]
pub enum TitlesAction {
    /// Ask claude.ai for the names it gives Claude Code sessions, bearing
    /// each config dir's own sign-in for that one read; then ask about the
    /// last 30 days and send each session named otherwise again.
    On {
        /// Print JSON instead of lines (its shape: docs/src/reference/json.md).
        #[arg(long)]
        json: bool,
    },
    /// Stop asking (nothing is read or sent from then on).
    Off {
        /// Print JSON instead of lines (its shape: docs/src/reference/json.md).
        #[arg(long)]
        json: bool,
    },
    /// Ask about the last 30 days again, as turning it on does.
    Refresh {
        /// Print JSON instead of lines (its shape: docs/src/reference/json.md).
        #[arg(long)]
        json: bool,
    },
}

pub fn run(paths: &StatePaths, action: TitlesAction) -> anyhow::Result<ExitCode> {
    let host = || Host::from_env().context("HOME is not set");
    let json = match action {
        TitlesAction::On { json } | TitlesAction::Off { json } | TitlesAction::Refresh { json } => {
            json
        }
    };
    // The re-send's progress, on stderr (`progress`); stdout has the report.
    let mut shown = Shown::new(Show::for_stderr(json));
    let mut progress = |p: &Progress| shown.tell(p);
    let resent = match action {
        TitlesAction::On { .. } => titles::set(paths, true, &host()?, &mut progress),
        TitlesAction::Off { .. } => titles::set(paths, false, &host()?, &mut progress),
        TitlesAction::Refresh { .. } => match titles::refresh(paths, &host()?, &mut progress) {
            Ok(r) => Ok(Some(r)),
            Err(e @ titles::TitlesError::Off) => {
                shown.finish();
                eprintln!("sessionpipe: {e}");
                return Ok(ExitCode::from(1));
            }
            Err(e) => Err(e),
        },
    };
    shown.finish();
    let resent = resent?;
    if json {
        let doc = serde_json::json!({
            "remote_titles": resent.is_some(),
            "resent": resent,
        });
        outln!("{doc}");
    } else {
        match resent {
            None => outln!("remote titles: off"),
            Some(r) => say(&r),
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn say(r: &Resent) {
    outln!("remote titles: on");
    outln!(
        "{} of the last {} days with a claude.ai link asked about: {} named, {} sent again under that name",
        crate::cli::out::count(r.asked as u64, "session", "sessions"),
        titles::resend::DAYS,
        r.named,
        r.resent
    );
}
