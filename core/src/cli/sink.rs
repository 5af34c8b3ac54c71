//! `sessionpipe sink add|list|remove|test` and `sessionpipe forget`.

use crate::cli::out::outln;

use crate::sinks::{self, NewSink, SinkList, Target};
use anyhow::{Context, bail};
use clap::Subcommand;
use spool::StatePaths;
use std::io::Read;
use std::process::ExitCode;

#[derive(Subcommand)]
pub enum SinkAction {
    /// Add a sink: an https URL (http on localhost), `file:/abs/path.jsonl`, or `stdout`.
    Add {
        /// Where events go: `https://…` (http on localhost), `file:/abs/path.jsonl` or `stdout`.
        target: String,
        /// Privacy tier 0–3 (lowered to what the receiver takes).
        #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=3))]
        tier: u8,
        /// Also run pii@1 for this sink.
        #[arg(long)]
        pii: bool,
        /// Read the bearer token from stdin (never from the command line).
        #[arg(long)]
        token_stdin: bool,
        /// A Standard Webhooks secret (`whsec_…`) to sign batches with, from stdin
        /// after the token when both are given (one per line).
        #[arg(long)]
        webhook_secret_stdin: bool,
    },
    /// List the sinks.
    List {
        /// Print JSON instead of lines (its shape: docs/src/reference/json.md).
        #[arg(long)]
        json: bool,
    },
    /// Give an HTTP sink a new bearer token (from stdin), keeping its place;
    /// a sink paused by a refused token sends again.
    Token {
        /// The sink's id (`sink list` shows it).
        id: String,
        /// Read the new token from stdin (never from the command line).
        #[arg(long, required = true)]
        token_stdin: bool,
        /// Also a new Standard Webhooks secret, from stdin after the token.
        #[arg(long)]
        webhook_secret_stdin: bool,
    },
    /// Remove a sink and its token.
    Remove {
        /// The sink's id (`sink list` shows it).
        id: String,
    },
    /// Check a sink without sending anything: its discovery, and what the last
    /// events would look like at its tier.
    Test {
        /// The sink's id (`sink list` shows it).
        id: String,
    },
}

pub fn run(paths: &StatePaths, action: SinkAction) -> anyhow::Result<ExitCode> {
    match action {
        SinkAction::Add {
            target,
            tier,
            pii,
            token_stdin,
            webhook_secret_stdin,
        } => {
            if target == "stdout"
                && let Some(h) = crate::state::lock::holder(paths)
                && h.mode == crate::state::lock::Mode::Daemon
                && !h.stdout_sinks
            {
                bail!(
                    "the running daemon (pid {}) writes its stdout nowhere anyone reads (it runs detached, in the app or as a service), so a stdout sink would get nothing: run `sessionpipe daemon` in a terminal or a pipe for one, or add `file:/abs/path.jsonl` to keep events in a file",
                    h.pid
                );
            }
            let (token, webhook_secret) = read_secrets(token_stdin, webhook_secret_stdin)?;
            let new = NewSink {
                target,
                tier,
                pii,
                token,
                webhook_secret,
            };
            let added = crate::runtime::block_on(sinks::add(paths, new))?;
            if let (Some(asked), Target::Http { url }) = (added.lowered_from, &added.sink.target) {
                eprintln!(
                    "note: {} takes tier {} at most; the sink is tier {} (not {asked})",
                    sinks::http::shown_url(url),
                    added.sink.tier,
                    added.sink.tier
                );
            }
            outln!("added {}", added.sink.describe());
            if added.sink.target == Target::Stdout && crate::state::lock::holder(paths).is_none() {
                eprintln!(
                    "note: a stdout sink is written by `sessionpipe daemon` started in a terminal or a pipe; a daemon started detached, by the app or as a service leaves it waiting"
                );
            }
            if let Some(b) = added.kept_in {
                outln!("secret kept in {b}");
            }
        }
        SinkAction::List { json } => {
            let list = SinkList::load(paths)?;
            if json {
                outln!(
                    "{}",
                    serde_json::to_string_pretty(
                        &list
                            .sinks
                            .iter()
                            .map(sinks::Sink::shown)
                            .collect::<Vec<_>>()
                    )
                    .expect("sinks serialise")
                );
            } else if list.sinks.is_empty() {
                outln!("no sinks (sink add adds one)");
            } else {
                for s in &list.sinks {
                    outln!("{}", s.describe());
                }
            }
        }
        SinkAction::Token {
            id,
            token_stdin,
            webhook_secret_stdin,
        } => {
            let (token, webhook) = read_secrets(token_stdin, webhook_secret_stdin)?;
            let token = token.context("--token-stdin: no token on stdin")?;
            let renewed = sinks::set_secrets(paths, &id, &token, webhook.as_deref())?;
            outln!(
                "sink {}: new token kept in {}",
                renewed.sink.id,
                renewed.kept_in
            );
            match renewed.unpaused {
                Some(why) => outln!("it was paused ({why}) and sends again"),
                None => outln!("its next batch bears it"),
            }
        }
        SinkAction::Remove { id } => {
            let s = sinks::remove(paths, &id)?;
            outln!("removed {}", s.describe());
        }
        SinkAction::Test { id } => return test(paths, &id),
    }
    Ok(ExitCode::SUCCESS)
}

/// The token, then the webhook secret, one line each from stdin.
fn read_secrets(token: bool, webhook: bool) -> anyhow::Result<(Option<String>, Option<String>)> {
    if !token && !webhook {
        return Ok((None, None));
    }
    let mut input = String::new();
    std::io::stdin()
        .read_to_string(&mut input)
        .context("stdin")?;
    let mut lines = input.lines().map(str::trim).filter(|l| !l.is_empty());
    let t = token.then(|| lines.next().map(str::to_string)).flatten();
    if token && t.is_none() {
        bail!("--token-stdin: no token on stdin");
    }
    let w = webhook.then(|| lines.next().map(str::to_string)).flatten();
    if webhook && w.is_none() {
        bail!("--webhook-secret-stdin: no secret on stdin");
    }
    Ok((t, w))
}

fn test(paths: &StatePaths, id: &str) -> anyhow::Result<ExitCode> {
    let (ok, lines) = crate::runtime::block_on(sinks::test_report(paths, id))?;
    for l in lines {
        outln!("{l}");
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `sessionpipe forget harness:id`: a `session.forgotten` for the sinks that take
/// it, and the session's events and record removed here (the forgotten event
/// itself stays until every sink has had it).
pub fn forget(paths: &StatePaths, which: &str) -> anyhow::Result<ExitCode> {
    let (harness, id) = super::session_arg::resolve(paths, which)?;
    let removed = sinks::forget_session(paths, &harness, &id)?;
    if removed == 0 {
        bail!("no session {harness}:{id} in the outbox");
    }
    outln!("forgot {harness}:{id}: {removed} events removed here; sinks that take forget are told");
    Ok(ExitCode::SUCCESS)
}

/// `sessionpipe replay`: the outbox again to the sinks named (all when none),
/// from the start or from `since`.
pub fn replay(
    paths: &StatePaths,
    ids: &[String],
    since: Option<&str>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let from = match since {
        None => sinks::ReplayFrom::Start,
        Some(t) => {
            let whole = if t.len() == 10 {
                format!("{t}T00:00:00Z")
            } else {
                t.to_string()
            };
            let ms = protocol::time::parse_rfc3339_ms(&whole).with_context(|| {
                format!(
                    "--since {t:?} is not a time (2026-11-01, or RFC 3339: 2026-11-01T09:30:00Z)"
                )
            })?;
            sinks::ReplayFrom::Since(protocol::time::rfc3339_ms(ms))
        }
    };
    let done = sinks::replay(paths, ids, &from)?;
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&done).expect("replays serialise")
        );
    } else if done.is_empty() {
        outln!("no sinks: nothing to send again (`sink add` adds one)");
    }
    for d in done.iter().filter(|_| !json) {
        let when = if d.by_daemon {
            "the daemon sends them now"
        } else {
            "the daemon sends them when it runs"
        };
        outln!(
            "sink {}: {} again; {when}",
            d.sink,
            crate::cli::out::count(d.events as u64, "event", "events")
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `connect --token-stdin` and `install --sink`: a sink for the receiver
/// (with the token from stdin when asked), unless one for it exists already.
pub fn add_once(
    paths: &StatePaths,
    url: &str,
    tier: u8,
    token_from_stdin: bool,
) -> anyhow::Result<()> {
    let (token, _) = read_secrets(token_from_stdin, false)?;
    let origin = reqwest::Url::parse(url)
        .map(|u| u.origin().ascii_serialization())
        .with_context(|| format!("{} is not a URL", sinks::http::shown_url(url)))?;
    let have = SinkList::load(paths)?.sinks.iter().any(|s| {
        matches!(&s.target, Target::Http { url } if reqwest::Url::parse(url)
            .is_ok_and(|u| u.origin().ascii_serialization() == origin))
    });
    if have {
        eprintln!(
            "note: a sink for {} is there already; kept as it is",
            sinks::http::shown_url(url)
        );
        return Ok(());
    }
    let new = NewSink {
        target: url.to_string(),
        tier,
        pii: false,
        token,
        webhook_secret: None,
    };
    let added = crate::runtime::block_on(sinks::add(paths, new))?;
    outln!("added {}", added.sink.describe());
    Ok(())
}
