//! `sessionpipe pool ...`: the account pool, the person's own switch
//! (ADAPTERS.md, Claude Code row, Pool). Nothing of it runs until the person
//! runs `pool add` or `pool on` here. What it prints names accounts (id,
//! email), windows and sessions, never a credential.

use crate::cli::out::outln;
use crate::pool::{self, service::Snapshot, store::PoolFile};
use anyhow::Context;
use clap::Subcommand;
use harness::install::Host;
use spool::StatePaths;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Subcommand)]
pub enum PoolAction {
    /// Add an account: `--import` copies Claude Code's own sign-in (it stays
    /// where it is); `--login` signs one in (open the link, paste the
    /// `code#state` the page shows).
    Add {
        /// Copy Claude Code's own sign-in of each config dir (or `--config-dir`'s).
        #[arg(long, conflicts_with = "login", required_unless_present = "login")]
        import: bool,
        /// Sign an account in: open the link printed, paste the `code#state` shown.
        #[arg(long)]
        login: bool,
        /// Only this config dir (default: every one with a sign-in).
        #[arg(long, value_name = "DIR")]
        config_dir: Option<PathBuf>,
        /// Print JSON instead of lines (its shape: docs/src/reference/json.md).
        #[arg(long)]
        json: bool,
    },
    /// Remove an account (by id or email) and its sign-in.
    Remove {
        /// The account's id or email.
        account: String,
    },
    /// Let an account take requests again.
    Enable {
        /// The account's id or email.
        account: String,
    },
    /// Keep an account out of the pool without removing it.
    Disable {
        /// The account's id or email.
        account: String,
    },
    /// Point every Claude Code config dir at the pool (three `env` keys in
    /// its settings.json; a daemon must be running).
    On {
        /// Print JSON instead of lines (its shape: docs/src/reference/json.md).
        #[arg(long)]
        json: bool,
    },
    /// Take those keys out again.
    Off {
        /// Print JSON instead of lines (its shape: docs/src/reference/json.md).
        #[arg(long)]
        json: bool,
    },
    /// Each account's windows, status, reset times and pinned sessions.
    Status {
        /// Print JSON instead of lines (its shape: docs/src/reference/json.md).
        #[arg(long)]
        json: bool,
    },
}

pub fn run(paths: &StatePaths, action: PoolAction) -> anyhow::Result<ExitCode> {
    let host = || Host::from_env().context("HOME is not set");
    match action {
        PoolAction::Add {
            import: _,
            login,
            config_dir,
            json,
        } => {
            let added = if login {
                vec![pool::add_login(paths, |url| {
                    eprintln!("Open this link, sign in, and paste the code it shows (code#state):");
                    eprintln!("{url}");
                    let mut line = String::new();
                    std::io::stdin().read_line(&mut line)?;
                    Ok(line)
                })?]
            } else {
                pool::add_import(paths, &host()?, config_dir.as_deref())?
            };
            if json {
                outln!("{}", serde_json::json!({ "added": added }));
            } else {
                for a in &added {
                    outln!(
                        "{} {}{} from {}",
                        if a.again { "updated" } else { "added" },
                        a.id,
                        a.email
                            .as_deref()
                            .map(|e| format!(" ({e})"))
                            .unwrap_or_default(),
                        a.from.as_deref().unwrap_or("a sign-in")
                    );
                }
            }
        }
        PoolAction::Remove { account } => {
            let a = pool::remove(paths, &account)?;
            outln!("removed {}", a.id);
        }
        PoolAction::Enable { account } => {
            let a = pool::set_enabled(paths, &account, true)?;
            outln!("enabled {}", a.id);
        }
        PoolAction::Disable { account } => {
            let a = pool::set_enabled(paths, &account, false)?;
            outln!("disabled {}", a.id);
        }
        PoolAction::Status { json } => status(paths, json)?,
        PoolAction::On { json } => switched(pool::switch::on(paths, &host()?)?, "on", json),
        PoolAction::Off { json } => switched(pool::switch::off(paths, &host()?)?, "off", json),
    }
    Ok(ExitCode::SUCCESS)
}

fn switched(files: Vec<pool::switch::Switched>, now: &str, json: bool) {
    if json {
        outln!("{}", serde_json::json!({ "pool": now, "settings": files }));
        return;
    }
    outln!("pool: {now}");
    for f in files {
        outln!("{}: {}", f.file, f.outcome);
    }
}

fn status(paths: &StatePaths, json: bool) -> anyhow::Result<()> {
    let file = PoolFile::load(paths)?;
    // The daemon's view when one runs (what it heard); else what is kept.
    let live = Snapshot::load(paths).filter(|_| crate::state::lock::holder(paths).is_some());
    let views = pool::views(paths, &file, live.as_ref());
    if json {
        let doc = serde_json::json!({
            "on": file.on,
            "listener": file.on.then(|| file.port.map(|p| format!("http://127.0.0.1:{p}"))).flatten(),
            "live": live.is_some(),
            "accounts": views,
        });
        outln!("{doc}");
        return Ok(());
    }
    outln!(
        "pool: {}{}",
        if file.on { "on" } else { "off" },
        file.port
            .filter(|_| file.on)
            .map(|p| format!(", listening on 127.0.0.1:{p}"))
            .unwrap_or_default()
    );
    if views.is_empty() {
        outln!("no accounts: `sessionpipe pool add --import` copies Claude Code's sign-in");
    }
    for v in &views {
        outln!(
            "{}{}  {}{}{}",
            v.id,
            v.email
                .as_deref()
                .map(|e| format!(" ({e})"))
                .unwrap_or_default(),
            if v.enabled { &v.status } else { "disabled" },
            v.until
                .as_deref()
                .map(|u| format!(" until {u}"))
                .unwrap_or_default(),
            v.refresh_error
                .as_deref()
                .map(|e| match (&v.expires_at, v.status.as_str()) {
                    // Still signed in: it is used until then.
                    (Some(until), s) if s != "expired" && s != "sign_in_again" => {
                        format!("; last refresh failed: {e} (its sign-in works until {until})")
                    }
                    _ => format!("; last refresh failed: {e}"),
                })
                .unwrap_or_default(),
        );
        for w in &v.windows {
            outln!(
                "  {:<22} {:>5.1}%{}",
                w.id,
                w.used_percent,
                w.resets_at
                    .as_deref()
                    .map(|r| format!("  resets {r}"))
                    .unwrap_or_default()
            );
        }
        if !v.sessions.is_empty() {
            outln!("  sessions: {}", v.sessions.join(", "));
        }
    }
    if live.is_none() && !views.is_empty() {
        outln!("(no daemon runs: windows and sessions are heard by a running daemon)");
    }
    Ok(())
}
