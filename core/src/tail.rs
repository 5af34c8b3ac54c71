//! Layer 3, tail: `sessionpipe tail`, the outbox as a tier-N destination would
//! see it.
//!
//! Reads the outbox directly (read-only; SQLite's WAL lets it read while the daemon
//! writes), so it works with or without a daemon. Follows by polling SQLite's
//! change counter, which costs nothing while nothing changes.

use crate::pipeline::outbox::{Only, Outbox, OutboxError};
use crate::pipeline::privacy::filter;
use protocol::Envelope;
use serde_json::Value;
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::time::Duration;

pub struct TailOptions {
    pub tier: u8,
    pub pii: bool,
    pub json: bool,
    pub follow: bool,
    /// Only this session: its id, or `harness:id`.
    pub session: Option<String>,
    /// Only this harness's sessions.
    pub harness: Option<String>,
    /// How many earlier events to print first (`None`: all), the newest
    /// ones; read from the end of the outbox back, so a long outbox costs
    /// no more than a short one.
    pub last: Option<usize>,
}

const POLL: Duration = Duration::from_millis(150);
/// Events per read when reading back from the end.
const BACK_BATCH: usize = 500;

/// Prints events until done (or forever when following). A closed stdout ends it.
pub fn run(outbox_path: &Path, opts: &TailOptions) -> Result<(), OutboxError> {
    let color =
        !opts.json && std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let home = spool::paths::home_dir().map(|h| h.to_string_lossy().into_owned());
    let outbox = loop {
        match Outbox::open_readonly(outbox_path) {
            Ok(Some(o)) => break o,
            Err(e) => return Err(e),
            Ok(None) if opts.follow => std::thread::sleep(POLL),
            Ok(None) => return Ok(()),
        }
    };
    let mut out = std::io::stdout().lock();
    let mut print = |env: &Envelope| -> bool {
        let line = if opts.json {
            serde_json::to_string(env).expect("an envelope serialises")
        } else {
            human_line(env, color)
        };
        writeln!(out, "{line}").and_then(|_| out.flush()).is_ok()
    };
    // Read before the first read: whatever commits after it is read next.
    let mut version = outbox.data_version()?;
    let (mut cursor, events) = match opts.last {
        Some(n) => newest_visible(&outbox, n, opts, home.as_deref())?,
        None => visible_after(&outbox, 0, opts, home.as_deref())?,
    };
    for env in &events {
        if !print(env) {
            return Ok(()); // the reader went away (`| head`)
        }
    }
    if !opts.follow {
        return Ok(());
    }
    loop {
        std::thread::sleep(POLL);
        let v = outbox.data_version()?;
        if v != version {
            version = v;
            let (last, events) = visible_after(&outbox, cursor, opts, home.as_deref())?;
            cursor = last;
            for env in &events {
                if !print(env) {
                    return Ok(());
                }
            }
        }
    }
}

/// What a backward read can leave to SQLite: one session (`harness:id`),
/// or one harness.
fn only(opts: &TailOptions) -> Only<'_> {
    let session = opts.session.as_deref().and_then(|s| {
        s.split_once(':')
            .filter(|(h, _)| adapters::lookup(h).is_some())
    });
    match (session, opts.harness.as_deref()) {
        (Some((h, id)), want) if want.is_none_or(|w| w == h) => Only::Session(h, id),
        (_, Some(h)) => Only::Harness(h),
        _ => Only::All,
    }
}

/// The newest `n` events this tail shows, oldest first, and the newest rowid
/// there was (what follows is read after it). Reads back from the end in
/// batches until it has them or reaches the start.
fn newest_visible(
    outbox: &Outbox,
    n: usize,
    opts: &TailOptions,
    home: Option<&str>,
) -> Result<(i64, Vec<Envelope>), OutboxError> {
    let newest = outbox.newest_rowid()?;
    let mut before = newest + 1;
    let mut out = Vec::new();
    while out.len() < n {
        let batch = outbox.events_before(before, BACK_BATCH, only(opts))?;
        let Some(oldest) = batch.last() else {
            break;
        };
        before = oldest.rowid;
        for r in &batch {
            if let Some(env) = visible(&r.envelope, opts, home) {
                out.push(env);
                if out.len() == n {
                    break;
                }
            }
        }
    }
    out.reverse();
    Ok((newest, out))
}

/// The events after `from` that this tail shows, and the last rowid read.
fn visible_after(
    outbox: &Outbox,
    from: i64,
    opts: &TailOptions,
    home: Option<&str>,
) -> Result<(i64, Vec<Envelope>), OutboxError> {
    let mut out = Vec::new();
    let mut cursor = from;
    loop {
        let batch = outbox.events_after(cursor, 1000)?;
        let Some(last) = batch.last() else {
            return Ok((cursor, out));
        };
        cursor = last.rowid;
        out.extend(
            batch
                .iter()
                .filter_map(|r| visible(&r.envelope, opts, home)),
        );
    }
}

fn visible(json: &str, opts: &TailOptions, home: Option<&str>) -> Option<Envelope> {
    let env: Envelope = serde_json::from_str(json).ok()?;
    if opts
        .harness
        .as_ref()
        .is_some_and(|h| *h != env.harness.name)
    {
        return None;
    }
    if let Some(want) = &opts.session {
        let qualified = format!("{}:{}", env.harness.name, env.session.id);
        if *want != env.session.id && *want != qualified {
            return None;
        }
    }
    filter(&env, opts.tier, opts.pii, home)
}

/// `19:12:03.541 claude-code 10027113 #3 tool.ended Bash ok 466ms`
pub fn human_line(env: &Envelope, color: bool) -> String {
    let (dim, bold, reset) = if color {
        ("\x1b[2m", "\x1b[1m", "\x1b[0m")
    } else {
        ("", "", "")
    };
    let clock = env.time.get(11..23).unwrap_or(&env.time);
    let short: String = env.session.id.chars().take(8).collect();
    format!(
        "{dim}{clock}{reset} {} {short} #{} {bold}{}{reset} {}",
        env.harness.name,
        env.session.seq,
        env.kind,
        summary(env)
    )
    .trim_end()
    .to_string()
}

/// What a tool was given, when the tier carries it (3): the command, file,
/// pattern or address a person knows the call by, else the input itself.
fn tool_input(env: &Envelope) -> String {
    match env.data.get("input") {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Object(input)) => ["command", "file_path", "path", "pattern", "url", "query"]
            .iter()
            .find_map(|k| input.get(*k).and_then(Value::as_str))
            .map_or_else(|| Value::Object(input.clone()).to_string(), str::to_string),
        Some(other) => other.to_string(),
        None => String::new(),
    }
}

fn summary(env: &Envelope) -> String {
    let s = |k: &str| {
        env.data
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let cut = |t: String| harness::payload::one_line(&t, 80);
    let parts: Vec<String> = match env.kind.as_str() {
        "session.started" => vec![s("source"), env.session.cwd.clone().unwrap_or_default()],
        "session.ended" => vec![s("reason")],
        "turn.started" => vec![
            env.data
                .get("prompt_chars")
                .map(|n| format!("{n} chars"))
                .unwrap_or_default(),
        ],
        "turn.ended" => vec![s("reason"), s("error")],
        "tool.started" => vec![s("tool"), cut(tool_input(env))],
        "tool.ended" => vec![
            s("tool"),
            cut(tool_input(env)),
            match env.data.get("ok").and_then(Value::as_bool) {
                Some(true) => "ok".into(),
                Some(false) => format!("failed {}", cut(s("error"))),
                None => String::new(),
            },
            env.data
                .get("ms")
                .map(|m| format!("{m}ms"))
                .unwrap_or_default(),
        ],
        "attention.needed" => vec![s("kind"), cut(s("message"))],
        "attention.cleared" => vec![s("how")],
        "subagent.started" | "subagent.ended" => vec![s("agent_type"), s("agent_id")],
        "context.compacted" => vec![s("trigger")],
        "turn.transcript" => vec![format!(
            "user: {} | assistant: {}",
            cut(s("user")),
            cut(s("assistant"))
        )],
        _ => vec![cut(Value::Object(env.data.clone()).to_string())],
    };
    parts
        .into_iter()
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}
