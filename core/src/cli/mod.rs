//! Layer 5, cli: the `sessionpipe` command line, argument parsing and output over
//! the library. The library's typed errors meet `anyhow` here, at the edge.
//!
//! Exit codes: 0 ok, 1 failure, 2 usage. `--json` prints one JSON document (or one
//! per line for streams). Human output honours `NO_COLOR`.

mod ask;
mod backfill;
mod browser;
mod channel;
mod config;
mod control;
mod doctor;
mod generate;
pub mod out;
mod pool;
mod progress;
mod service;
mod session_arg;
mod sink;
mod status;
mod titles;
mod usage;
mod worktrees;

use crate::installers::{Action, Installers};
use anyhow::Context;
use clap::{Parser, Subcommand};
use out::outln;
use spool::StatePaths;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "sessionpipe",
    version,
    about = "Watches your coding agents through their hooks and turns them into sessionpipe events."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Write sessionpipe's hooks into the config of every harness found.
    Install {
        /// Only this harness (repeatable).
        #[arg(long = "harness", value_name = "NAME", value_parser = harness_names())]
        harnesses: Vec<String>,
        /// Say what would change and write nothing.
        #[arg(long)]
        dry_run: bool,
        /// Also set Claude Code's status line to the account's limits, which is
        /// how they reach sessionpipe (never over a status line you set; it
        /// hides most of Claude Code's footer hints). Later installs keep it.
        #[arg(long)]
        status_line: bool,
        /// Also add this sink first (a receiver's URL, `file:/abs/path.jsonl`
        /// or `stdout`), unless there is one for it: one step for a new machine.
        #[arg(long, value_name = "URL", conflicts_with = "dry_run")]
        sink: Option<String>,
        /// The sink's bearer token, from stdin.
        #[arg(long, requires = "sink")]
        token_stdin: bool,
        /// The sink's privacy tier 0–3.
        #[arg(long, requires = "sink", default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=3))]
        tier: u8,
        /// Backfill this many days (default: 30, the first time only).
        #[arg(long, value_name = "DAYS", conflicts_with = "dry_run")]
        backfill: Option<u32>,
        /// The name events carry for this machine (`config set machine`).
        #[arg(long, value_name = "NAME", conflicts_with = "dry_run")]
        machine: Option<String>,
        /// Print JSON instead of lines (its shape: docs/src/reference/json.md).
        #[arg(long)]
        json: bool,
    },
    /// Remove exactly sessionpipe's hook entries.
    Uninstall {
        /// Only this harness (repeatable).
        #[arg(long = "harness", value_name = "NAME", value_parser = harness_names())]
        harnesses: Vec<String>,
        /// Say what would be removed and write nothing.
        #[arg(long)]
        dry_run: bool,
        /// Print JSON instead of lines (its shape: docs/src/reference/json.md).
        #[arg(long)]
        json: bool,
    },
    /// Hooks per harness, the daemon, the outbox.
    Status {
        /// Print JSON instead of lines (its shape: docs/src/reference/json.md).
        #[arg(long)]
        json: bool,
    },
    /// Print the outbox as a destination at a tier would see it.
    Tail {
        /// Privacy tier 0–3 (default 3: everything, secrets removed).
        #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u8).range(0..=3))]
        tier: u8,
        /// Also run pii@1 (emails, phone numbers, home paths, machine name).
        #[arg(long)]
        pii: bool,
        /// One envelope per line.
        #[arg(long)]
        json: bool,
        /// Print what is there and exit.
        #[arg(long)]
        no_follow: bool,
        /// Only this session: `harness:ID`, `ID`, or a unique start of it
        /// (the 8 characters tail prints).
        #[arg(long, value_name = "ID")]
        session: Option<String>,
        /// Only this harness's sessions.
        #[arg(long, value_name = "NAME", value_parser = harness_names())]
        harness: Option<String>,
        /// How many earlier events to show first, the newest (following: 20
        /// unless given; with --no-follow: all unless given).
        #[arg(short = 'n', long = "lines", conflicts_with = "all")]
        lines: Option<usize>,
        /// When following, show every earlier event first (not only the last `-n`).
        #[arg(long)]
        all: bool,
    },
    /// Run the daemon in the foreground.
    Daemon {
        /// Take the spool and exit once idle (what a hook starts when no daemon runs).
        #[arg(long)]
        drain: bool,
        /// Do not serve the local API and UI on loopback.
        #[arg(long)]
        no_api: bool,
        /// The port of the local API (0: any free one; `sessionpipe ui` says which).
        #[arg(long, default_value_t = 0)]
        port: u16,
        /// The UI's built files (default: `$SESSIONPIPE_UI_DIR`, else beside the
        /// binary in `../share/sessionpipe/ui`).
        #[arg(long, value_name = "DIR")]
        ui: Option<PathBuf>,
    },
    /// The daemon as a user service where no tray runs it: `install
    /// [--dry-run]`, `uninstall`, `status [--json]` (systemd --user on Linux,
    /// launchd on macOS, a logon task on Windows).
    Service {
        #[command(subcommand)]
        action: service::ServiceAction,
    },
    /// Print the address of the running daemon's UI (with its token).
    Ui {
        /// Open it in the browser instead (`$BROWSER`, else the desktop's own).
        #[arg(long)]
        open: bool,
        /// Replace the token (the daemon keeps its port and token across
        /// restarts, so a bookmarked link keeps working until you do).
        #[arg(long, conflicts_with = "open")]
        new_token: bool,
    },
    /// Print a shell's completion script (`sessionpipe completions bash >
    /// ~/.local/share/bash-completion/completions/sessionpipe`).
    Completions {
        /// The shell to complete for.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Write the man pages (sessionpipe.1 and one per command) into DIR.
    Man {
        /// Where the pages go (made when missing).
        #[arg(long, value_name = "DIR")]
        dir: PathBuf,
    },
    /// Read and change the settings (config.json, what the UI's Settings
    /// page changes): `get [KEY] [--json]`, `set KEY VALUE`.
    Config {
        #[command(subcommand)]
        action: config::ConfigAction,
    },
    /// What is wrong, and what to do about it.
    Doctor {
        /// One JSON document: `{"problems": N, "checks": [{"level", "what"}]}`.
        #[arg(long)]
        json: bool,
    },
    /// Where events go: add, list, remove and test sinks.
    Sink {
        #[command(subcommand)]
        action: sink::SinkAction,
    },
    /// Send the outbox again to a sink (a new receiver), from the start of
    /// what it holds or from a time; receivers take each event once.
    Replay {
        /// Only this sink (repeatable; default: every sink).
        #[arg(long = "sink", value_name = "ID")]
        sinks: Vec<String>,
        /// Everything the outbox still holds.
        #[arg(long, conflicts_with = "since", required_unless_present = "since")]
        from_start: bool,
        /// From the first event at or after this time (RFC 3339, or a date:
        /// `2026-11-01`, midnight UTC).
        #[arg(long, value_name = "TIME")]
        since: Option<String>,
        /// Print JSON instead of lines (its shape: docs/src/reference/json.md).
        #[arg(long)]
        json: bool,
    },
    /// Tell every sink that takes it to forget a session, and forget it here.
    Forget {
        /// `harness:session-id` (or a unique start of the id)
        #[arg(value_name = "HARNESS:ID")]
        session: String,
    },
    /// Send one `session.backfill` per past session the harnesses' files hold
    /// (how far it is goes to stderr: a bar on a terminal, lines otherwise).
    Backfill {
        /// How far back, in days.
        #[arg(long, default_value_t = 30)]
        days: u32,
        /// Only this harness's past sessions (repeatable).
        #[arg(long = "harness", value_name = "NAME", value_parser = harness_names())]
        harnesses: Vec<String>,
        /// Print JSON instead of lines, and the progress as one JSON record
        /// per line on stderr (the shapes: docs/src/reference/json.md).
        #[arg(long)]
        json: bool,
    },
    /// The tokens your agents used, per day, session, harness, account or
    /// model, and what they would cost at API list prices (a subscription's
    /// too, marked as such); read from their own transcripts, kept here only.
    Usage {
        /// From this far back: a number of days (`7d`), a date (`2026-11-01`,
        /// its midnight on this machine's clock) or an RFC 3339 time. Days are
        /// this machine's.
        #[arg(long, value_name = "7d|DATE", default_value = "30d")]
        since: String,
        /// What a row is.
        #[arg(long, value_enum, default_value_t = crate::usage::By::Day)]
        by: crate::usage::By,
        /// Print one JSON document (the shape of `GET /api/usage`:
        /// docs/src/reference/json.md).
        #[arg(long)]
        json: bool,
    },
    /// The channel back: pair with a receiver, its keys, folders and mode.
    Control {
        #[command(subcommand)]
        action: control::ControlAction,
    },
    /// The git worktrees started sessions run in (`control worktrees on`):
    /// `list`, and `prune` those whose session ended with nothing of their own.
    Worktrees {
        #[command(subcommand)]
        action: worktrees::WorktreesAction,
    },
    /// Block until a verified message for a session comes; print it (run by
    /// a session in the background, to be reachable in place).
    Wait {
        /// `harness:session-id`
        #[arg(long, value_name = "HARNESS:ID")]
        session: String,
    },
    /// Claude Code's channel: an MCP server on stdio that hands the session
    /// that started it its verified messages (research preview).
    ///
    /// Register it as an MCP server named `sessionpipe` (for example `claude
    /// mcp add sessionpipe -- sessionpipe channel`) and start the session with
    /// `claude --dangerously-load-development-channels server:sessionpipe`.
    /// Claude Code registers the channel only in an interactive session that
    /// was started so, never under `--print`; elsewhere the server only
    /// answers, and takes no message.
    Channel {
        /// `harness:session-id` (default: the session Claude Code names in
        /// `CLAUDE_CODE_SESSION_ID`).
        #[arg(long, value_name = "HARNESS:ID")]
        session: Option<String>,
    },
    /// Ask another session on this machine and print its whole answer.
    ///
    /// TO is `harness:session-id` (that session answers: in place when it is
    /// live and listening, else resumed or forked), or a harness alone (a new
    /// session in --cwd). Its folder must be one of the control folders, and
    /// it runs at `safe` at most. Run from inside a Claude Code session, the
    /// asker is that session; elsewhere name it with --from.
    Ask {
        /// `harness:session-id` (or a unique start of the id), or a harness alone.
        #[arg(value_name = "TO")]
        to: String,
        /// The task, in words.
        #[arg(required = true, num_args = 1.., value_name = "TASK")]
        task: Vec<String>,
        /// The asking session, `harness:session-id`.
        #[arg(long, value_name = "HARNESS:ID")]
        from: Option<String>,
        /// The folder a new session runs in (default: this one).
        #[arg(long)]
        cwd: Option<String>,
    },
    /// Hand a task to another session and return at once; its answer comes
    /// back into the asking session as a message (`Answer from …`).
    Handoff {
        /// `harness:session-id` (or a unique start of the id), or a harness alone.
        #[arg(value_name = "TO")]
        to: String,
        /// The task, in words.
        #[arg(required = true, num_args = 1.., value_name = "TASK")]
        task: Vec<String>,
        /// The asking session, `harness:session-id`.
        #[arg(long, value_name = "HARNESS:ID")]
        from: Option<String>,
        /// The folder a new session runs in (default: this one).
        #[arg(long)]
        cwd: Option<String>,
    },
    /// Set this machine up with a receiver in one go: a sink, pairing, hooks.
    Connect {
        /// The receiver's base URL.
        receiver: String,
        /// Read the sink's bearer token from stdin (not needed where the
        /// receiver offers open pairing).
        #[arg(long)]
        token_stdin: bool,
        /// The sink's privacy tier 0–3: 1 (the phone sees tool names,
        /// commands and the files they change, secrets removed, so it can show
        /// what you approve) unless you choose; 0 hides what agents ask to run
        /// (approve on the machine).
        #[arg(long, default_value_t = protocol::asked::PAIRING_TIER, value_parser = clap::value_parser!(u8).range(0..=3))]
        tier: u8,
        /// A folder commands may act in (repeatable; default: this folder).
        #[arg(long = "folder", value_name = "DIR")]
        folders: Vec<String>,
        /// What the machine says of itself: safe, auto or inherit.
        #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(crate::state::config::CONTROL_MODES))]
        mode: Option<String>,
    },
    /// The account pool for Claude Code (opt-in): `add --import`, `remove`,
    /// `enable`, `disable`, `status`.
    Pool {
        #[command(subcommand)]
        action: pool::PoolAction,
    },
    /// Remote titles: ask claude.ai for the names it gives Claude Code
    /// sessions (off by default; `on`, `off`, `refresh`).
    Titles {
        #[command(subcommand)]
        action: titles::TitlesAction,
    },
    /// Run conformance fixtures, vectors and delivery scenarios (files or folders).
    Conformance {
        /// Fixture files or folders (harness payloads, vectors, scenarios).
        #[arg(required = true, value_name = "PATH")]
        paths: Vec<PathBuf>,
        /// Run the delivery scenarios against this receiver (its base URL).
        #[arg(long, value_name = "URL", requires = "token")]
        receiver: Option<String>,
        /// The receiver's bearer token.
        #[arg(long, value_name = "TOKEN", requires = "receiver")]
        token: Option<String>,
    },
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    // A command says what it did in its own words; the daemon logs.
    crate::logging::init_at(match cli.command {
        Command::Daemon { .. } => crate::logging::DAEMON_LEVEL,
        _ => crate::logging::COMMAND_LEVEL,
    });
    match run(cli.command) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("sessionpipe: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn run(command: Command) -> anyhow::Result<ExitCode> {
    let paths = StatePaths::from_env()?;
    match command {
        Command::Install {
            harnesses,
            dry_run,
            status_line,
            json,
            sink,
            token_stdin,
            tier,
            backfill: backfill_days,
            machine,
        } => {
            // The machine's name and the sink first: a wrong one is said
            // before any harness's file is written.
            if let Some(name) = machine {
                let mut change = serde_json::Map::new();
                change.insert("machine".into(), name.into());
                let config = crate::state::config::Config::load(&paths)?.with_changes(change)?;
                config.save(&paths)?;
                eprintln!("machine: {}", config.machine());
            }
            if let Some(url) = sink {
                sink::add_once(&paths, &url, tier, token_stdin)?;
            }
            let opt_in: &[&str] = if status_line {
                &[adapters::claude_code::STATUS_LINE_ENTRY]
            } else {
                &[]
            };
            let options = HooksOptions {
                dry_run,
                json,
                opt_in,
            };
            let code = hooks_command(&paths, &harnesses, &options, Action::Install)?;
            if !dry_run {
                backfill::once_after_install(&paths, backfill_days, json);
            }
            Ok(code)
        }
        Command::Uninstall {
            harnesses,
            dry_run,
            json,
        } => {
            let options = HooksOptions {
                dry_run,
                json,
                opt_in: &[],
            };
            hooks_command(&paths, &harnesses, &options, Action::Uninstall)
        }
        Command::Status { json } => status::run(&paths, json),
        Command::Tail {
            tier,
            pii,
            json,
            no_follow,
            session,
            harness,
            lines,
            all,
        } => {
            let session = match session {
                Some(given) => Some(session_arg::qualified(&paths, &given)?),
                None => None,
            };
            let opts = crate::tail::TailOptions {
                tier,
                pii,
                json,
                follow: !no_follow,
                session,
                harness,
                last: match (all, no_follow) {
                    (true, _) => None,
                    (false, true) => lines,
                    (false, false) => Some(lines.unwrap_or(20)),
                },
            };
            crate::tail::run(&paths.outbox(), &opts)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Daemon {
            drain,
            no_api,
            port,
            ui,
        } => {
            let opts = crate::daemon::Options {
                drain,
                api: !no_api,
                api_port: port,
                ui_dir: ui.or_else(default_ui_dir),
                ..Default::default()
            };
            crate::daemon::run(&paths, &opts)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Service { action } => service::run(&paths, action),
        Command::Ui {
            new_token: true, ..
        } => ui_new_token(&paths),
        Command::Ui { open, .. } => {
            let address = crate::state::ui_file::current(&paths)
                .context("no daemon serves the UI: start `sessionpipe daemon` (or the app)")?;
            if !address.ui {
                eprintln!("note: {}", crate::state::ui_file::NO_UI_FILES);
            }
            if open {
                let file = crate::state::ui_file::open_page_file(&paths, &address.page(None))
                    .context("writing the page to open")?;
                browser::open(&file)?;
                outln!("opened {} in the browser", address.url);
            } else {
                outln!("{}", address.page(None));
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Backfill {
            days,
            harnesses,
            json,
        } => backfill::run(&paths, days, &harnesses, json),
        Command::Sink { action } => sink::run(&paths, action),
        Command::Doctor { json } => doctor::run(&paths, json),
        Command::Config { action } => config::run(&paths, action),
        Command::Completions { shell } => {
            generate::completions(definition(), shell);
            Ok(ExitCode::SUCCESS)
        }
        Command::Man { dir } => {
            let pages = generate::man_pages(definition(), &dir)?;
            outln!("{pages} man pages in {}", dir.display());
            Ok(ExitCode::SUCCESS)
        }
        Command::Forget { session } => sink::forget(&paths, &session),
        Command::Replay {
            sinks,
            from_start: _,
            since,
            json,
        } => sink::replay(&paths, &sinks, since.as_deref(), json),
        Command::Usage { since, by, json } => usage::run(&paths, &since, by, json),
        Command::Control { action } => control::run(&paths, action),
        Command::Titles { action } => titles::run(&paths, action),
        Command::Worktrees { action } => worktrees::run(&paths, action),
        Command::Pool { action } => pool::run(&paths, action),
        Command::Wait { session } => control::wait(&paths, &session),
        Command::Channel { session } => channel::run(&paths, session.as_deref()),
        Command::Ask {
            to,
            task,
            from,
            cwd,
        } => ask::ask(&paths, &to, &task.join(" "), from, cwd),
        Command::Handoff {
            to,
            task,
            from,
            cwd,
        } => ask::handoff(&paths, &to, &task.join(" "), from, cwd),
        Command::Connect {
            receiver,
            token_stdin,
            tier,
            folders,
            mode,
        } => {
            if token_stdin {
                sink::add_once(&paths, &receiver, tier, true)?;
            }
            let request = crate::control::pair::PairRequest {
                receiver,
                folders,
                mode,
                folder_here: true,
                // The sink an open pairing hands over gets the tier asked for.
                sink_tier: tier,
                ..Default::default()
            };
            control::pair_and_say(&paths, &request)?;
            let options = HooksOptions {
                dry_run: false,
                json: false,
                opt_in: &[],
            };
            let code = hooks_command(&paths, &[], &options, Action::Install)?;
            // Commands from the receiver reach a running daemon: start one
            // as a service where no tray runs it.
            service::after_connect(&paths);
            Ok(code)
        }
        Command::Conformance {
            paths: files,
            receiver,
            token,
        } => {
            let target = receiver.map(|url| crate::conformance::delivery::Target {
                url,
                token: token.unwrap_or_default(),
            });
            let ok =
                crate::conformance::run_and_print_with(&files, target.as_ref(), &mut out::Stdout)?;
            Ok(if ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
    }
}

/// What `install` and `uninstall` were told besides the harnesses.
struct HooksOptions<'a> {
    dry_run: bool,
    json: bool,
    /// Optional entries to write (`install --status-line`).
    opt_in: &'a [&'a str],
}

fn hooks_command(
    paths: &StatePaths,
    names: &[String],
    options: &HooksOptions<'_>,
    action: Action,
) -> anyhow::Result<ExitCode> {
    let installers = Installers::from_env(paths)?;
    let acted = match installers.act(action, names, options.dry_run, options.opt_in) {
        Ok(a) => a,
        Err(crate::installers::InstallersError::Harness(e)) => {
            eprintln!("sessionpipe: {e}");
            return Ok(ExitCode::from(2));
        }
        Err(e) => return Err(e.into()),
    };
    if options.json {
        let reports: Vec<_> = acted.iter().map(|a| &a.report).collect();
        outln!(
            "{}",
            serde_json::to_string_pretty(&reports).expect("reports serialise")
        );
    } else {
        for a in &acted {
            outln!("{}", a.report.line());
        }
    }
    // Notes go to stderr so that stdout stays one line per harness.
    for a in &acted {
        if let Some(n) = a.first_install_note {
            eprintln!("note: {}: {n}", a.report.harness);
        }
    }
    let skipped = acted.iter().any(|a| a.report.summary == "skipped");
    Ok(if skipped {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// `ui --new-token`: the running daemon takes a new token at once; with no
/// daemon, the next one starts with it.
fn ui_new_token(paths: &StatePaths) -> anyhow::Result<ExitCode> {
    use crate::state::ui_file::{self, SavedAddress};
    if let Some(address) = ui_file::current(paths) {
        let url = format!("{}/api/ui-token", address.url);
        let answer = crate::runtime::block_on(async {
            reqwest::Client::builder()
                .no_proxy()
                .timeout(std::time::Duration::from_secs(5))
                .build()?
                .post(&url)
                .bearer_auth(&address.token)
                .send()
                .await?
                .error_for_status()?
                .text()
                .await
        })
        .context("asking the daemon for a new token")?;
        let answer: serde_json::Value =
            serde_json::from_str(&answer).context("the daemon's answer")?;
        outln!("new token; the old link no longer opens the UI. The new one:");
        outln!("{}", answer["page"].as_str().unwrap_or_default());
    } else {
        let port = SavedAddress::load(paths).map_or(0, |s| s.port);
        SavedAddress {
            port,
            token: crate::daemon::api::new_token(),
        }
        .save(paths)?;
        outln!(
            "new token: the daemon's next start uses it (`sessionpipe ui` then prints the link)"
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The command line's definition, every command and flag: what the man pages
/// and completions are made from, and what tests walk to run every command.
pub fn definition() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

/// `--harness`'s values: every harness sessionpipe has an adapter for (so
/// `--help` lists them, and a misspelt one is refused with the list).
fn harness_names() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(adapters::REGISTRY.iter().map(|a| a.name()))
}

/// Where the UI's built files are when no `--ui` is given (the app's embedded
/// daemon uses the same rule).
pub fn default_ui_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("SESSIONPIPE_UI_DIR").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?.join("../share/sessionpipe/ui");
    dir.join("index.html").is_file().then_some(dir)
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// Every flag and argument of every command, as `path: --name`, that
    /// `--help` (and the man pages made from it) would show without a word.
    fn unexplained(cmd: &clap::Command, path: &str, out: &mut Vec<String>) {
        for arg in cmd.get_arguments() {
            let builtin = matches!(arg.get_id().as_str(), "help" | "version");
            if !builtin && arg.get_help().is_none() && arg.get_long_help().is_none() {
                out.push(format!("{path}: {}", arg.get_id()));
            }
        }
        for sub in cmd.get_subcommands() {
            unexplained(sub, &format!("{path} {}", sub.get_name()), out);
        }
    }

    #[test]
    fn every_flag_says_what_it_does() {
        let mut missing = Vec::new();
        unexplained(&super::Cli::command(), "sessionpipe", &mut missing);
        assert!(missing.is_empty(), "no help text:\n{}", missing.join("\n"));
    }
}
