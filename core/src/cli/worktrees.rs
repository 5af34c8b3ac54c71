//! `sessionpipe worktrees list [--json]` and `sessionpipe worktrees prune
//! [--dry-run]`: the git worktrees control made for started sessions
//! (`control worktrees on`), each with its session's state from the outbox
//! and what it holds that is nowhere else; prune removes those whose session
//! ended and which hold nothing of their own, and says why it keeps each
//! other one.
//!
//! Only what the record holds is ever touched (`control::worktrees` decides
//! and removes); a recorded folder that is gone only loses its line.

use crate::cli::out::outln;
use crate::control::worktrees::{self, SessionState, Standing, Verdict, Worktree, WorktreeError};
use crate::pipeline::outbox::Outbox;
use clap::Subcommand;
use spool::StatePaths;
use std::process::ExitCode;

#[derive(Subcommand)]
pub enum WorktreesAction {
    /// Each worktree made for a started session: its session's state, its
    /// branch and folder, and whether it has uncommitted changes or
    /// commits no other branch, tag or remote holds.
    List {
        /// Print JSON instead of lines (its shape: docs/src/reference/json.md).
        #[arg(long)]
        json: bool,
    },
    /// Remove the worktrees (and their branches) whose session ended and
    /// which have no uncommitted change and no commit of their own; say why
    /// each other one is kept.
    Prune {
        /// Say what would be removed and remove nothing.
        #[arg(long)]
        dry_run: bool,
    },
}

/// One recorded worktree as it is now.
struct Seen {
    worktree: Worktree,
    state: SessionState,
    exists: bool,
    standing: Result<Standing, WorktreeError>,
}

impl Seen {
    fn verdict(&self) -> Verdict {
        worktrees::decide(self.exists, self.state, &self.standing)
    }
}

pub fn run(paths: &StatePaths, action: WorktreesAction) -> anyhow::Result<ExitCode> {
    let seen = look(paths)?;
    match action {
        WorktreesAction::List { json } => {
            list(&seen, json);
            Ok(ExitCode::SUCCESS)
        }
        WorktreesAction::Prune { dry_run } => prune(paths, &seen, dry_run),
    }
}

/// Every recorded worktree, its session's state and what it holds.
fn look(paths: &StatePaths) -> anyhow::Result<Vec<Seen>> {
    let outbox = Outbox::open_readonly(&paths.outbox())?;
    Ok(worktrees::recorded(paths)?
        .into_iter()
        .map(|worktree| {
            let state = outbox.as_ref().map_or(SessionState::Unknown, |o| {
                session_state(o, &worktree.session)
            });
            let exists = worktree.path.is_dir();
            let standing = worktrees::standing(&worktree);
            Seen {
                worktree,
                state,
                exists,
                standing,
            }
        })
        .collect())
}

/// Whether the session (`<harness>:<id>`) ended, by its outbox record.
fn session_state(outbox: &Outbox, session: &str) -> SessionState {
    let Some((harness, id)) = session.split_once(':') else {
        return SessionState::Unknown;
    };
    match outbox.session(harness, id) {
        Ok(Some(r)) if r.ended => SessionState::Ended,
        Ok(Some(_)) => SessionState::Live,
        _ => SessionState::Unknown,
    }
}

fn list(seen: &[Seen], json: bool) {
    if json {
        let doc = serde_json::json!({
            "worktrees": seen.iter().map(|s| {
                let w = &s.worktree;
                let (uncommitted, unpushed, error) = match &s.standing {
                    Ok(st) => (Some(st.uncommitted), Some(st.unpushed), None),
                    Err(e) => (None, None, Some(e.to_string())),
                };
                serde_json::json!({
                    "session": w.session,
                    "state": s.state.as_str(),
                    "branch": w.branch,
                    "path": w.path,
                    "folder": w.folder,
                    "repo": w.repo,
                    "made_ms": w.made_ms,
                    "exists": s.exists,
                    "uncommitted": uncommitted,
                    "unpushed": unpushed,
                    "error": error,
                })
            }).collect::<Vec<_>>(),
        });
        outln!(
            "{}",
            serde_json::to_string_pretty(&doc).expect("the list serialises")
        );
        return;
    }
    if seen.is_empty() {
        outln!("no worktrees (`sessionpipe control worktrees on` makes one per started session)");
    }
    for s in seen {
        let w = &s.worktree;
        let holds = if !s.exists {
            "its folder is gone".to_string()
        } else {
            match &s.standing {
                Ok(st) => format!("{} uncommitted, {} unpushed", st.uncommitted, st.unpushed),
                Err(e) => format!("git could not say: {e}"),
            }
        };
        outln!(
            "{}  {}  {}  {}  ({holds})",
            w.session,
            s.state.as_str(),
            w.branch,
            w.path.display()
        );
    }
}

fn prune(paths: &StatePaths, seen: &[Seen], dry_run: bool) -> anyhow::Result<ExitCode> {
    let mut failed = false;
    for s in seen {
        let w = &s.worktree;
        let shown = w.path.display();
        match s.verdict() {
            Verdict::Keep(why) => outln!("kept {shown}: {why}"),
            Verdict::Drop if dry_run => {
                outln!("would drop {shown} from the record: its folder is gone")
            }
            Verdict::Drop => match worktrees::drop_gone(paths, w)? {
                None => outln!(
                    "dropped {shown} from the record, and its branch {}: its folder is gone",
                    w.branch
                ),
                Some(why) => outln!(
                    "dropped {shown} from the record: its folder is gone; its branch {} is kept: {why}",
                    w.branch
                ),
            },
            Verdict::Remove if dry_run => {
                outln!("would remove {shown} and its branch {}", w.branch)
            }
            Verdict::Remove => match worktrees::remove(paths, w) {
                Ok(None) => outln!("removed {shown} and its branch {}", w.branch),
                Ok(Some(why)) => {
                    outln!("removed {shown}; its branch {} is kept: {why}", w.branch)
                }
                Err(e) => {
                    failed = true;
                    outln!("kept {shown}: {e}");
                }
            },
        }
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
