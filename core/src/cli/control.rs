//! `sessionpipe control …`, `sessionpipe wait` and `sessionpipe connect`: the
//! person's side of control at this machine's terminal. Pairing prints the
//! link and the six digits, waits for the approval, then says the tier the
//! receiver gets and what that lets the phone see; nothing here prints a
//! token.

use crate::cli::out::outln;
use crate::control::pair::{self, PairRequest};
use crate::control::store::Store;
use crate::state::config::{CONTROL_MODES, Config};
use anyhow::{Context, bail};
use clap::Subcommand;
use spool::StatePaths;
use std::process::ExitCode;

#[derive(Subcommand)]
pub enum ControlAction {
    /// Pair this machine with a receiver: open the link it prints, check the
    /// six digits and approve with your passkey.
    Pair {
        /// The receiver's URL.
        receiver: String,
        /// A folder commands may act in (repeatable; default: this folder).
        #[arg(long = "folder", value_name = "DIR")]
        folders: Vec<String>,
        /// What the machine says of itself: safe, auto or inherit.
        #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(CONTROL_MODES))]
        mode: Option<String>,
        /// The machine's name at the receiver (default: its name in events).
        #[arg(long)]
        name: Option<String>,
        /// The tier 0–3 of the sink an open pairing hands over: 1 (the phone
        /// sees tool names, commands and the files they change, secrets
        /// removed, so it can show what you approve) unless you choose; 0
        /// hides what agents ask to run.
        #[arg(long, default_value_t = protocol::asked::PAIRING_TIER, value_parser = clap::value_parser!(u8).range(0..=3))]
        tier: u8,
    },
    /// The paired receivers, their keys and whether they are polled.
    Status {
        /// Print JSON instead of lines (its shape: docs/src/reference/json.md).
        #[arg(long)]
        json: bool,
    },
    /// The passkeys this machine trusts; `keys remove <id>` removes one.
    Keys {
        #[command(subcommand)]
        action: Option<KeysAction>,
    },
    /// Unpair: tell the receiver and forget its keys and token (every
    /// receiver when none is named).
    Off {
        /// The receiver's URL (default: every paired receiver).
        receiver: Option<String>,
    },
    /// The folders commands may act in.
    Folders {
        #[command(subcommand)]
        action: FoldersAction,
    },
    /// Set what the machine says of itself: safe, auto or inherit.
    Mode {
        /// `safe` (no edits without asking), `auto`, or `inherit` (the harness's own).
        #[arg(value_parser = clap::builder::PossibleValuesParser::new(CONTROL_MODES))]
        mode: String,
    },
    /// Answer permission prompts from the tray and its notifications.
    Approvals {
        /// `on` or `off`.
        #[arg(value_parser = ["on", "off"])]
        state: String,
    },
    /// Run each started session whose folder is in a git repository in a
    /// new worktree of its own, on a branch `sessionpipe/<short id>`
    /// (`sessionpipe worktrees list|prune`).
    Worktrees {
        /// `on` or `off`.
        #[arg(value_parser = ["on", "off"])]
        state: String,
    },
}

#[derive(Subcommand)]
pub enum KeysAction {
    /// Stop trusting one passkey.
    Remove {
        /// The key's id (`control keys` lists them).
        id: String,
    },
}

#[derive(Subcommand)]
pub enum FoldersAction {
    /// Let commands act in this folder and the folders under it.
    Add {
        /// An absolute path (or `~/…`).
        folder: String,
    },
    /// Take a folder off the list.
    Remove {
        /// The folder as listed.
        folder: String,
    },
    /// The folders commands may act in.
    List,
}

pub fn run(paths: &StatePaths, action: ControlAction) -> anyhow::Result<ExitCode> {
    match action {
        ControlAction::Pair {
            receiver,
            folders,
            mode,
            name,
            tier,
        } => {
            let request = PairRequest {
                receiver,
                folders,
                mode,
                name,
                folder_here: true,
                sink_tier: tier,
            };
            pair_and_say(paths, &request)
        }
        ControlAction::Status { json } => status(paths, json),
        ControlAction::Keys { action: None } => {
            for k in open(paths)?.keys(None)? {
                outln!(
                    "{}  {}  {}  {}",
                    k.id,
                    if k.alg == -7 { "ES256" } else { "RS256" },
                    k.receiver,
                    k.name.as_deref().unwrap_or("")
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        ControlAction::Keys {
            action: Some(KeysAction::Remove { id }),
        } => {
            let n = open(paths)?.remove_key(&id)?;
            if n == 0 {
                bail!("no key {id} (see `sessionpipe control keys`)");
            }
            outln!("removed key {id}");
            Ok(ExitCode::SUCCESS)
        }
        ControlAction::Off { receiver } => {
            let origins: Vec<String> = match receiver {
                Some(r) => vec![origin_of(&r)?],
                None => open(paths)?
                    .receivers()?
                    .into_iter()
                    .map(|r| r.origin)
                    .collect(),
            };
            for o in origins {
                if crate::runtime::block_on(pair::off(paths, &o))? {
                    outln!("unpaired {o}");
                } else {
                    bail!("not paired with {o}");
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        ControlAction::Folders { action } => folders(paths, action),
        ControlAction::Mode { mode } => {
            let mut config = Config::load(paths)?;
            config.control_mode = Some(mode.clone());
            config.save(paths)?;
            outln!("control mode: {mode}");
            Ok(ExitCode::SUCCESS)
        }
        ControlAction::Approvals { state } => {
            let mut config = Config::load(paths)?;
            config.local_approvals = state == "on";
            config.save(paths)?;
            let paired = Store::open_readonly(&paths.outbox())?
                .map(|s| s.receivers().map(|r| !r.is_empty()).unwrap_or(false))
                .unwrap_or(false);
            crate::control::run::set_marker(paths, paired || config.local_approvals);
            outln!("local approvals: {state}");
            Ok(ExitCode::SUCCESS)
        }
        ControlAction::Worktrees { state } => {
            let mut config = Config::load(paths)?;
            config.control_worktrees = state == "on";
            config.save(paths)?;
            outln!("worktrees: {state}");
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Pairs and tells the person how it went.
pub fn pair_and_say(paths: &StatePaths, request: &PairRequest) -> anyhow::Result<ExitCode> {
    let paired = crate::runtime::block_on(pair::pair(paths, request, |started| {
        outln!("Pairing this machine as {}.", started.machine);
        outln!(
            "Open {} and check that it shows {}",
            started.url,
            started.check
        );
        outln!("Waiting for the approval…");
    }))?;
    outln!(
        "paired with {} as {}",
        paired.receiver.origin,
        paired.receiver.machine
    );
    if let Some(a) = &paired.receiver.account {
        outln!("approved by {a}: this passkey's commands now reach this machine");
    }
    for line in tier_lines(&paired.receiver.origin, paired.sink_added, paired.sink_tier) {
        outln!("{line}");
    }
    let config = Config::load(paths)?;
    outln!("control folders: {}", config.control_folders.join(", "));
    Ok(ExitCode::SUCCESS)
}

/// What pairing says of the receiver's sink: its tier, and in one line what
/// that lets the phone see (`protocol::asked`'s sentences, as the UI and the
/// page say them). Nothing without a sink.
fn tier_lines(origin: &str, added: bool, tier: Option<u8>) -> Vec<String> {
    let Some(tier) = tier else {
        return Vec::new();
    };
    let first = if added {
        format!("added a sink for {origin} (tier {tier})")
    } else {
        format!("the sink for {origin} is at tier {tier}")
    };
    vec![first, protocol::asked::tier_sentence(tier).to_string()]
}

fn status(paths: &StatePaths, json: bool) -> anyhow::Result<ExitCode> {
    let config = Config::load(paths)?;
    let (receivers, keys) = match Store::open_readonly(&paths.outbox())? {
        Some(s) => (s.receivers()?, s.keys(None)?),
        None => (Vec::new(), Vec::new()),
    };
    if json {
        let doc = serde_json::json!({
            "receivers": receivers.iter().map(|r| serde_json::json!({
                "receiver": r.origin,
                "machine": r.machine,
                "account": r.account,
                "polling": r.stopped.is_none(),
                "stopped": r.stopped,
                "keys": keys.iter().filter(|k| k.receiver == r.origin).map(|k| &k.id).collect::<Vec<_>>(),
                // What its sink lets the phone see (null: no sink sends there).
                "tier": crate::sinks::SinkList::tier_for(paths, &r.origin),
            })).collect::<Vec<_>>(),
            "folders": config.control_folders,
            "mode": config.control_mode,
            "local_approvals": config.local_approvals,
            "worktrees": config.control_worktrees,
        });
        outln!(
            "{}",
            serde_json::to_string_pretty(&doc).expect("status serialises")
        );
        return Ok(ExitCode::SUCCESS);
    }
    if receivers.is_empty() {
        outln!("control: not paired (`sessionpipe control pair <receiver>`)");
    }
    for r in &receivers {
        let n = keys.iter().filter(|k| k.receiver == r.origin).count();
        let state = match &r.stopped {
            None => "polling".to_string(),
            Some(why) => format!("stopped: {why}"),
        };
        outln!(
            "control: {} as {}, {n} key(s), {state}",
            r.origin,
            r.machine
        );
        if let Some(tier) = crate::sinks::SinkList::tier_for(paths, &r.origin) {
            outln!(
                "  its sink: tier {tier}. {}",
                protocol::asked::tier_sentence(tier)
            );
        }
    }
    outln!(
        "control folders: {}",
        if config.control_folders.is_empty() {
            "none".to_string()
        } else {
            config.control_folders.join(", ")
        }
    );
    outln!(
        "local approvals: {}",
        if config.local_approvals { "on" } else { "off" }
    );
    outln!(
        "worktrees: {}",
        if config.control_worktrees {
            "on"
        } else {
            "off"
        }
    );
    Ok(ExitCode::SUCCESS)
}

fn folders(paths: &StatePaths, action: FoldersAction) -> anyhow::Result<ExitCode> {
    let mut config = Config::load(paths)?;
    match action {
        FoldersAction::List => {
            for f in &config.control_folders {
                outln!("{f}");
            }
            return Ok(ExitCode::SUCCESS);
        }
        FoldersAction::Add { folder } => {
            let abs = pair::absolute_folder(&folder)?;
            if !config.control_folders.contains(&abs) {
                config.control_folders.push(abs.clone());
            }
            outln!("added {abs}");
        }
        FoldersAction::Remove { folder } => {
            let abs = pair::absolute_folder(&folder).unwrap_or(folder.clone());
            let before = config.control_folders.len();
            config.control_folders.retain(|f| f != &abs && f != &folder);
            if config.control_folders.len() == before {
                bail!("{folder} is not a control folder");
            }
            outln!("removed {abs}");
        }
    }
    config.check()?;
    config.save(paths)?;
    Ok(ExitCode::SUCCESS)
}

fn open(paths: &StatePaths) -> anyhow::Result<Store> {
    Store::open(&paths.outbox()).context("the control tables")
}

fn origin_of(url: &str) -> anyhow::Result<String> {
    let u = reqwest::Url::parse(url).with_context(|| format!("{url} is not a URL"))?;
    Ok(u.origin().ascii_serialization())
}

/// `sessionpipe wait --session <harness>:<id>`: blocks on the daemon's
/// control socket until a verified message for the session comes, prints it
/// and exits 0. A daemon that goes away (a restart) is waited for in silence.
#[cfg(unix)]
pub fn wait(paths: &StatePaths, session: &str) -> anyhow::Result<ExitCode> {
    use std::io::{Read, Write};
    if !session.contains(':') {
        bail!("--session is <harness>:<id>, not {session:?}");
    }
    let line = format!(
        "{}\n",
        serde_json::json!({"op": "wait", "session": session})
    );
    let mut pause = std::time::Duration::from_millis(200);
    loop {
        if let Ok(mut stream) = std::os::unix::net::UnixStream::connect(paths.control_socket())
            && stream.write_all(line.as_bytes()).is_ok()
        {
            let mut text = String::new();
            if stream.read_to_string(&mut text).is_ok() && !text.is_empty() {
                outln!("{text}");
                return Ok(ExitCode::SUCCESS);
            }
            pause = std::time::Duration::from_millis(200);
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(std::time::Duration::from_secs(2));
    }
}

#[cfg(not(unix))]
pub fn wait(_: &StatePaths, _: &str) -> anyhow::Result<ExitCode> {
    bail!("sessionpipe wait needs a Unix socket on this version")
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::asked::{HIDDEN_SENTENCE, TIER_1_SENTENCE};

    #[test]
    fn pairing_says_the_tier_and_what_the_phone_sees() {
        assert_eq!(
            tier_lines("https://rx.example", true, Some(1)),
            [
                "added a sink for https://rx.example (tier 1)",
                TIER_1_SENTENCE
            ]
        );
        assert_eq!(
            tier_lines("https://rx.example", true, Some(0)),
            [
                "added a sink for https://rx.example (tier 0)",
                HIDDEN_SENTENCE
            ]
        );
        // A sink it had keeps its tier, and is said so.
        assert_eq!(
            tier_lines("https://rx.example", false, Some(0)),
            [
                "the sink for https://rx.example is at tier 0",
                HIDDEN_SENTENCE
            ]
        );
        assert!(tier_lines("https://rx.example", false, None).is_empty());
    }
}
