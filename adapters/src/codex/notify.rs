//! Codex's `notify`: the fallback that reports a turn's end when Codex's hooks are
//! off (ADAPTERS.md, Codex row: Config, Mapping, Threads and Quirks). Two halves:
//! the call (`map_call`) and its entry in `config.toml` (`CodexNotify`).
//!
//! The call names a thread and nothing else of it, so this is the one place the
//! adapter looks at Codex's files: whether `$CODEX_HOME/sessions` holds the thread's
//! rollout (none: an ephemeral thread, Codex Desktop's background work or `exec
//! --ephemeral`) and whether that rollout's first line names a subagent (part of its
//! parent's session, whose hooks report it). Nothing else of the rollout is read.
//!
//! The entry is one key, the top-level `notify`: an argv to which Codex appends one
//! JSON argument after every turn. Ours runs `sessionpipe-hook codex notify`. A notify
//! the person already had (Codex Computer Use writes one) is never replaced: ours
//! carries its argv as `--previous-notify <JSON>`, the hook runs it as well
//! (`hook/src/chain.rs`), and uninstall writes it back. Codex reads `notify` only
//! at the top level, before the first `[table]`; a line appended at the end of the
//! file lands inside the last table (usually a `[projects."…"]`) and never runs. So
//! ours is always written above the first table, one of ours found inside a table
//! is taken out, and the person's own misplaced one is moved up into our chain.
//!
//! Every edit is a splice of the person's text at a place `toml_edit`'s spans point
//! to: the bytes outside the lines we write (comments, key order, CRLF, a missing
//! final newline) are kept, and a file that is not TOML is skipped. Nothing else in
//! the file is ever touched; in particular hook trust (`[hooks.state]`) is the
//! person's to grant.

use harness::Job;
use harness::install::{ConfigFormat, Ctx, EntryState, Skip};
use harness::payload::{cwd_for, is_uuid, session_id, str_of};
use harness::{MapError, Mapped, Mapping};
use protocol::{EventData, SessionBlock, TurnEndReason, TurnEnded};
use std::io::{BufRead, Read};
use std::ops::Range;
use std::path::{Path, PathBuf};
use toml_edit::{Array, Document, Item, Table, Value};

/// The flag that carries the person's own notify argv (as JSON) in ours.
pub const PREVIOUS_FLAG: &str = "--previous-notify";
/// The event word our notify entry runs the hook with.
pub const NOTIFY_EVENT: &str = "notify";

/// The top-level `notify` of `config.toml`, in Codex's format.
pub struct CodexNotify;

/// The most of a rollout's first line (`session_meta`, which carries Codex's base
/// instructions: about 20 KB) read to tell a subagent's thread.
const MAX_META_LINE: u64 = 1 << 20;

/// `notify` `agent-turn-complete` → `turn.ended` stop, for the person's threads.
/// The payload is the last argument (after our `--previous-notify` when chained).
/// Whether the hooks are on is the adapter's `remember`, not this.
pub fn map_call(job: &Job) -> Result<Mapped, MapError> {
    let arg = job.argv.last().map(String::as_str).unwrap_or_default();
    let p = match serde_json::from_str::<serde_json::Value>(arg) {
        Ok(serde_json::Value::Object(m)) => m,
        _ => return Err("a notify call without its JSON argument".into()),
    };
    let kind = str_of(&p, "type").unwrap_or_default();
    if kind != "agent-turn-complete" {
        return Ok(Mapped::Ignored(format!("notify {kind:?} is not mapped")));
    }
    let thread = session_id(&p, "thread-id")?;
    match rollout_kind(&codex_home(job), &thread) {
        Rollout::Missing => {
            return Ok(Mapped::Ignored(
                "notify of an ephemeral thread (no rollout)".into(),
            ));
        }
        Rollout::Subagent => {
            return Ok(Mapped::Ignored(
                "notify of a subagent's thread (its parent's session has its hooks)".into(),
            ));
        }
        Rollout::Person | Rollout::Unknown => {}
    }
    Ok(Mapped::Events(Box::new(Mapping {
        session_id: thread,
        block: SessionBlock {
            cwd: str_of(&p, "cwd").map(|c| cwd_for(job, &c)),
            ..Default::default()
        },
        harness_version: None,
        events: vec![EventData::TurnEnded(TurnEnded::new(
            str_of(&p, "turn-id"),
            TurnEndReason::Stop,
        ))],
        subagent: None,
    })))
}

/// The Codex home of the process that ran the hook.
fn codex_home(job: &Job) -> Option<PathBuf> {
    job.env("CODEX_HOME")
        .map(PathBuf::from)
        .or_else(|| job.home().map(|h| h.join(".codex")))
}

/// What a thread's rollout says of it.
#[derive(Debug, PartialEq, Eq)]
enum Rollout {
    /// The person's own thread (a fork they made included).
    Person,
    /// `session_meta.source.subagent`: part of its parent's session.
    Subagent,
    /// No rollout where Codex writes it: an ephemeral thread.
    Missing,
    /// Cannot tell (no sessions folder, an id that names no date, a compressed
    /// rollout): the notify reports, since it may be the only word of the turn.
    Unknown,
}

/// Looks for `<home>/sessions/YYYY/MM/DD/rollout-*-<thread>.jsonl`. The thread id
/// is a UUIDv7 whose first 48 bits are its creation time in epoch ms, and Codex
/// names the day folder for that time in local time, so the day before and after
/// (in UTC) are looked at too, and nothing else.
fn rollout_kind(home: &Option<PathBuf>, thread: &str) -> Rollout {
    let Some(sessions) = home.as_ref().map(|h| h.join("sessions")) else {
        return Rollout::Unknown;
    };
    let Some(created_ms) = uuid7_ms(thread) else {
        return Rollout::Unknown;
    };
    if !sessions.is_dir() {
        return Rollout::Unknown;
    }
    const DAY_MS: i64 = 86_400_000;
    let suffix = format!("-{}.jsonl", thread.to_ascii_lowercase());
    let compressed = format!("{suffix}.zst");
    for day in [created_ms, created_ms - DAY_MS, created_ms + DAY_MS] {
        let date = protocol::time::rfc3339_ms(day);
        let dir = sessions
            .join(&date[0..4])
            .join(&date[5..7])
            .join(&date[8..10]);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().to_ascii_lowercase();
            if !name.starts_with("rollout-") {
                continue;
            }
            if name.ends_with(&suffix) {
                return if is_subagent_rollout(&entry.path()) {
                    Rollout::Subagent
                } else {
                    Rollout::Person
                };
            }
            if name.ends_with(&compressed) {
                return Rollout::Unknown;
            }
        }
    }
    Rollout::Missing
}

/// The creation time (epoch ms) of a version-7 UUID.
fn uuid7_ms(id: &str) -> Option<i64> {
    if !is_uuid(id) || id.as_bytes()[14] != b'7' {
        return None;
    }
    let hex: String = id.chars().filter(|c| *c != '-').take(12).collect();
    i64::from_str_radix(&hex, 16).ok()
}

/// True when the rollout's first record is a `session_meta` whose `source` names
/// a subagent.
fn is_subagent_rollout(path: &Path) -> bool {
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    let mut line = Vec::new();
    if std::io::BufReader::new(file.take(MAX_META_LINE))
        .read_until(b'\n', &mut line)
        .is_err()
    {
        return false;
    }
    serde_json::from_slice::<serde_json::Value>(&line)
        .ok()
        .and_then(|rec| rec.get("payload").map(super::transcript::is_subagent))
        .unwrap_or(false)
}

/// One `notify` key found in the file.
struct Found {
    /// The value's bytes.
    value: Range<usize>,
    /// Whole lines holding the key and its value, with the line end.
    lines: Range<usize>,
    argv: Vec<String>,
    /// The table it sits in, `None` at the top level.
    table: Option<String>,
}

/// What the file says about `notify`, and where a new top-level key goes.
struct Scan {
    top: Option<Found>,
    in_tables: Vec<Found>,
    insert_at: usize,
}

/// True when `argv` runs sessionpipe's hook for `harness`'s notify (at any install
/// path, so an entry an older version wrote is still recognised).
fn is_ours(argv: &[String], harness: &str) -> bool {
    let file = argv
        .first()
        .and_then(|p| {
            Path::new(&p.replace('\\', "/"))
                .file_name()
                .map(|f| f.to_owned())
        })
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let is_hook = file == "sessionpipe-hook" || file.eq_ignore_ascii_case("sessionpipe-hook.exe");
    is_hook
        && argv.get(1).map(String::as_str) == Some(harness)
        && argv.get(2).map(String::as_str) == Some(NOTIFY_EVENT)
}

/// The argv we write: the hook, and the person's previous notify when there was one.
fn wanted(ctx: &Ctx<'_>, previous: Option<&[String]>) -> Vec<String> {
    let mut argv = vec![
        ctx.hook_bin.to_string_lossy().into_owned(),
        ctx.harness.to_string(),
        NOTIFY_EVENT.to_string(),
    ];
    if let Some(prev) = previous {
        argv.push(PREVIOUS_FLAG.to_string());
        argv.push(serde_json::to_string(prev).expect("a list of strings serialises"));
    }
    argv
}

/// The person's notify that one of ours carries, when it carries one.
fn previous_of(argv: &[String]) -> Option<Vec<String>> {
    match argv.get(3..5) {
        Some([flag, json]) if flag == PREVIOUS_FLAG => serde_json::from_str(json).ok(),
        _ => None,
    }
}

/// An argv as a TOML array on one line, strings escaped by `toml_edit`.
fn render(argv: &[String]) -> String {
    let array: Array = argv.iter().map(String::as_str).collect();
    Value::Array(array).to_string()
}

/// The file's line ending: CRLF when it has any, else LF.
fn eol_of(text: &str) -> &'static str {
    if text.contains("\r\n") { "\r\n" } else { "\n" }
}

fn line_start(text: &str, at: usize) -> usize {
    text[..at].rfind('\n').map_or(0, |i| i + 1)
}

/// The position after the line end that follows `at` (the text's end when none).
fn after_line(text: &str, at: usize) -> usize {
    text[at..].find('\n').map_or(text.len(), |i| at + i + 1)
}

fn scan(text: &str) -> Result<Scan, Skip> {
    // A doubled key is refused (TOML forbids one): the key found is the one read.
    let doc = Document::parse(text).map_err(|e| Skip::NotValid {
        format: "TOML",
        what: reason(text, &e),
    })?;
    let root = doc.as_table();
    let top = match root.get_key_value("notify") {
        Some((key, item)) => Some(found(text, key.span(), item, None)?),
        None => None,
    };
    let mut in_tables = Vec::new();
    let mut headers = Vec::new();
    walk_tables(text, root, "", &mut in_tables, &mut headers);
    let first_header = headers.into_iter().min();
    let root_end = root_values_end(root);
    let insert_at = match (root_end, first_header) {
        (Some(end), _) => after_line(text, end),
        (None, Some(header)) => comments_above(text, line_start(text, header)),
        (None, None) => text.len(),
    };
    Ok(Scan {
        top,
        in_tables,
        insert_at,
    })
}

/// A TOML error on one line: where, what, and the name of a doubled key (which
/// `toml_edit` only points at).
fn reason(text: &str, e: &toml_edit::TomlError) -> String {
    let message = e.to_string();
    let at = message.lines().next().unwrap_or("");
    let at = at.trim().trim_start_matches("TOML parse error at ");
    let what = e.message().trim().replace('\n', "; ");
    match e.span().and_then(|s| text.get(s)) {
        Some(key) if what == "duplicate key" => format!("{at}: {what} `{key}`"),
        _ => format!("{at}: {what}"),
    }
}

/// A `notify` key at `key`, checked to be a list of strings on lines of its own.
fn found(
    text: &str,
    key: Option<Range<usize>>,
    item: &Item,
    table: Option<String>,
) -> Result<Found, Skip> {
    let place = table
        .as_deref()
        .map_or("top-level".to_string(), |t| format!("[{t}]"));
    let argv: Option<Vec<String>> = item
        .as_array()
        .and_then(|a| a.iter().map(|v| v.as_str().map(str::to_string)).collect());
    let argv =
        argv.ok_or_else(|| Skip::Shape(format!("the {place} notify is not a list of strings")))?;
    let (Some(key), Some(value)) = (key, item.span()) else {
        return Err(Skip::Shape(format!(
            "cannot place the {place} notify in the text"
        )));
    };
    let start = line_start(text, key.start);
    if !text[start..key.start].trim().is_empty() {
        return Err(Skip::Shape(format!(
            "the {place} notify does not start its own line"
        )));
    }
    Ok(Found {
        lines: start..after_line(text, value.end),
        value,
        argv,
        table,
    })
}

/// Every `notify` inside a table (where Codex never reads one), and where every
/// table header starts.
fn walk_tables(
    text: &str,
    table: &Table,
    path: &str,
    out: &mut Vec<Found>,
    headers: &mut Vec<usize>,
) {
    for (name, item) in table.iter() {
        let sub = match item {
            Item::Table(t) => t,
            Item::ArrayOfTables(a) => {
                headers.extend(a.iter().filter_map(|t| t.span().map(|s| s.start)));
                continue;
            }
            _ => continue,
        };
        // As the header is written: `projects."/w"`.
        let key = toml_edit::Key::new(name).to_string();
        let here = if path.is_empty() {
            key
        } else {
            format!("{path}.{key}")
        };
        if !sub.is_implicit() && !sub.is_dotted() {
            headers.extend(sub.span().map(|s| s.start));
        }
        // A dotted key at the top level is still the top level's: not a table's.
        // Only a list of strings on its own lines is a notify we can move; any
        // other `notify` in a table is some other setting's, and never runs.
        if !sub.is_dotted()
            && let Some((key, value)) = sub.get_key_value("notify")
            && let Ok(f) = found(text, key.span(), value, Some(here.clone()))
        {
            out.push(f);
        }
        walk_tables(text, sub, &here, out, headers);
    }
}

/// The end of the last value written above the first table (top-level keys and
/// top-level dotted keys), when there is one.
fn root_values_end(table: &Table) -> Option<usize> {
    table
        .iter()
        .filter_map(|(_, item)| match item {
            Item::Value(v) => v.span().map(|s| s.end),
            Item::Table(t) if t.is_dotted() => root_values_end(t),
            _ => None,
        })
        .max()
}

/// The start of the comment lines directly above the line at `at` (a header's
/// comments stay with it; a blank line ends the block).
fn comments_above(text: &str, mut at: usize) -> usize {
    while at > 0 {
        let prev = line_start(text, at - 1);
        if !text[prev..at].trim_start().starts_with('#') {
            break;
        }
        at = prev;
    }
    at
}

/// `text` with the lines of `f` taken out. A last line without a line end takes
/// the line end before it, so removing what `insert_line` added is exact.
fn delete_lines(text: &str, f: &Found) -> String {
    let mut start = f.lines.start;
    if f.lines.end == text.len() && !text.ends_with('\n') && start > 0 {
        start -= if text[..start].ends_with("\r\n") {
            2
        } else {
            1
        };
    }
    format!("{}{}", &text[..start], &text[f.lines.end..])
}

/// `text` with `line` and the file's `eol` inserted at `at` (a line start, or the end).
fn insert_line(text: &str, at: usize, line: &str, eol: &str) -> String {
    let (before, after) = text.split_at(at);
    if at == text.len() && !text.is_empty() && !text.ends_with('\n') {
        format!("{before}{eol}{line}")
    } else {
        format!("{before}{line}{eol}{after}")
    }
}

fn replace(text: &str, range: &Range<usize>, with: &str) -> String {
    format!("{}{with}{}", &text[..range.start], &text[range.end..])
}

/// The table of a `Found`, for messages.
fn place(f: &Found) -> String {
    f.table
        .as_deref()
        .map_or("the top level".into(), |t| format!("[{t}]"))
}

impl ConfigFormat for CodexNotify {
    fn judge(&self, text: &str, ctx: &Ctx<'_>) -> Result<EntryState, Skip> {
        let scan = scan(text)?;
        let misplaced: Vec<String> = scan
            .in_tables
            .iter()
            .filter(|f| is_ours(&f.argv, ctx.harness))
            .map(place)
            .collect();
        let misplaced_note = || {
            format!(
                "our notify sits inside {}, where Codex never reads it",
                misplaced.join(", ")
            )
        };
        Ok(match &scan.top {
            Some(f) if is_ours(&f.argv, ctx.harness) => {
                if f.argv[..3] != wanted(ctx, None)[..] {
                    EntryState::Outdated(
                        "the notify entry is from another version or edited".into(),
                    )
                } else if !misplaced.is_empty() {
                    EntryState::Outdated(misplaced_note())
                } else {
                    EntryState::Current
                }
            }
            _ if !misplaced.is_empty() => EntryState::Outdated(misplaced_note()),
            _ => EntryState::Missing,
        })
    }

    fn add(&self, text: &str, ctx: &Ctx<'_>) -> Result<String, Skip> {
        let found = scan(text)?;
        let new_text = match &found.top {
            // An empty list runs nothing: there is nothing to chain.
            Some(f) => {
                let previous = (!f.argv.is_empty()).then_some(f.argv.as_slice());
                replace(text, &f.value, &render(&wanted(ctx, previous)))
            }
            None => {
                // The person's own notify inside a table never ran: it moves up, chained.
                let moved = found
                    .in_tables
                    .iter()
                    .find(|f| !is_ours(&f.argv, ctx.harness));
                let eol = eol_of(text);
                let (text, previous) = match moved {
                    Some(f) => (delete_lines(text, f), Some(f.argv.as_slice())),
                    None => (text.to_string(), None),
                };
                let at = scan(&text)?.insert_at;
                let line = format!("notify = {}", render(&wanted(ctx, previous)));
                insert_line(&text, at, &line, eol)
            }
        };
        match scan(&new_text)?.top {
            Some(f) if is_ours(&f.argv, ctx.harness) => Ok(new_text),
            _ => Err(Skip::Shape(
                "could not write notify at the top level".into(),
            )),
        }
    }

    fn remove(&self, text: &str, _original: Option<&str>, ctx: &Ctx<'_>) -> Result<String, Skip> {
        let mut text = text.to_string();
        // One edit per pass: every splice moves the spans after it.
        loop {
            let found = scan(&text)?;
            if let Some(f) = found.top.filter(|f| is_ours(&f.argv, ctx.harness)) {
                text = match previous_of(&f.argv) {
                    Some(prev) => replace(&text, &f.value, &render(&prev)),
                    None => delete_lines(&text, &f),
                };
                continue;
            }
            match found
                .in_tables
                .iter()
                .find(|f| is_ours(&f.argv, ctx.harness))
            {
                Some(f) => text = delete_lines(&text, f),
                None => return Ok(text),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SID: &str = "01a228da-29ef-7781-ba5c-ad8687516197";
    const SUB: &str = "01a228da-fe3f-75f3-9ab9-1a3e5cff805a";

    fn write_rollout(home: &Path, thread: &str, source: serde_json::Value) {
        let dir = home.join("sessions/2026/11/29");
        std::fs::create_dir_all(&dir).unwrap();
        let meta = json!({"type": "session_meta", "payload": {"id": thread, "source": source,
            "base_instructions": {"text": "x".repeat(30_000)}}});
        let name = format!("rollout-2026-11-29T19-48-35-{thread}.jsonl");
        std::fs::write(dir.join(name), format!("{meta}\n{{}}\n")).unwrap();
    }

    fn notify_job(thread: &str, home: &Path) -> Job {
        let arg = json!({"type": "agent-turn-complete", "thread-id": thread, "turn-id": "t1",
            "cwd": "/home/ann/src/app", "input-messages": ["Run"], "last-assistant-message": "ok"});
        Job {
            harness: "codex".into(),
            event: NOTIFY_EVENT.into(),
            argv: vec!["codex".into(), NOTIFY_EVENT.into(), arg.to_string()],
            env: [(
                "CODEX_HOME".to_string(),
                home.to_string_lossy().into_owned(),
            )]
            .into(),
            ..Default::default()
        }
    }

    #[test]
    fn uuid7_times() {
        assert_eq!(uuid7_ms(SID), Some(0x01a2_28da_29ef));
        assert_eq!(
            protocol::time::rfc3339_ms(uuid7_ms(SID).unwrap())[..10],
            *"2026-11-29"
        );
        assert_eq!(uuid7_ms("3bd5639e-04f7-44e6-a4c2-2f9bb68adad6"), None);
    }

    #[test]
    fn notify_of_an_ephemeral_or_a_subagent_thread_reports_nothing() {
        let home = tempfile::tempdir().unwrap();
        write_rollout(
            home.path(),
            SUB,
            json!({"subagent": {"thread_spawn": {"parent_thread_id": SID, "depth": 1}}}),
        );
        assert_eq!(
            rollout_kind(&Some(home.path().into()), SUB),
            Rollout::Subagent
        );
        assert!(matches!(
            map_call(&notify_job(SUB, home.path())).unwrap(),
            Mapped::Ignored(_)
        ));
        // The sessions folder exists and holds no rollout for the thread: ephemeral.
        assert_eq!(
            rollout_kind(&Some(home.path().into()), SID),
            Rollout::Missing
        );
        assert!(matches!(
            map_call(&notify_job(SID, home.path())).unwrap(),
            Mapped::Ignored(_)
        ));
        // A fork the person made is theirs.
        let fork = "01a228db-0000-7000-8000-000000000001";
        write_rollout(home.path(), fork, json!("cli"));
        assert_eq!(
            rollout_kind(&Some(home.path().into()), fork),
            Rollout::Person
        );
        // No sessions folder (a replayed fixture), or an id that names no day: reported.
        let empty = tempfile::tempdir().unwrap();
        assert_eq!(
            rollout_kind(&Some(empty.path().into()), SID),
            Rollout::Unknown
        );
        assert_eq!(
            rollout_kind(
                &Some(home.path().into()),
                "3bd5639e-04f7-44e6-a4c2-2f9bb68adad6"
            ),
            Rollout::Unknown
        );
        assert_eq!(rollout_kind(&None, SID), Rollout::Unknown);
    }

    fn ctx() -> Ctx<'static> {
        Ctx {
            harness: "codex",
            hook_bin: Path::new("/opt/sp/bin/sessionpipe-hook"),
        }
    }

    const OURS: &str = r#"notify = ["/opt/sp/bin/sessionpipe-hook", "codex", "notify"]"#;

    fn top_argv(text: &str) -> Option<Vec<String>> {
        scan(text).unwrap().top.map(|f| f.argv)
    }

    fn round_trip(original: &str) -> String {
        let added = CodexNotify.add(original, &ctx()).unwrap();
        assert_eq!(
            CodexNotify.judge(&added, &ctx()).unwrap(),
            EntryState::Current,
            "{added}"
        );
        let removed = CodexNotify.remove(&added, Some(original), &ctx()).unwrap();
        assert_eq!(removed, original, "remove(add(x)) == x");
        added
    }

    #[test]
    fn a_new_key_goes_after_the_last_top_level_value_before_any_table() {
        let original = "# Codex\nmodel = \"o3\" # fast\n\n# trusted\n[projects.\"/w\"]\ntrust_level = \"trusted\"\n";
        let added = round_trip(original);
        assert_eq!(
            added,
            format!(
                "# Codex\nmodel = \"o3\" # fast\n{OURS}\n\n# trusted\n[projects.\"/w\"]\ntrust_level = \"trusted\"\n"
            )
        );
    }

    #[test]
    fn without_top_level_keys_it_goes_above_the_first_tables_comments() {
        let original = "# my config\n\n# providers\n[model_providers.x]\nname = \"x\"\n";
        let added = round_trip(original);
        assert_eq!(
            added,
            format!("# my config\n\n{OURS}\n# providers\n[model_providers.x]\nname = \"x\"\n")
        );
        assert_eq!(round_trip(""), format!("{OURS}\n"));
        assert_eq!(
            round_trip("# only a comment"),
            format!("# only a comment\n{OURS}")
        );
        assert_eq!(
            round_trip("model = \"o3\""),
            format!("model = \"o3\"\n{OURS}")
        );
    }

    #[test]
    fn crlf_files_stay_crlf() {
        let original =
            "model = \"o3\"\r\n\r\n[projects.\"C:\\\\w\"]\r\ntrust_level = \"trusted\"\r\n";
        let added = round_trip(original);
        assert!(!added.replace("\r\n", "").contains('\n'), "{added:?}");
    }

    #[test]
    fn an_existing_notify_is_chained_in_place_and_given_back() {
        let original = "model = \"o3\"\n# Computer Use\nnotify = [\"/Applications/Codex.app/notify\", \"--from\", \"codex\"] # keep\n\n[tui]\nnotifications = true\n";
        let added = round_trip(original);
        let argv = top_argv(&added).unwrap();
        assert_eq!(
            argv[..4],
            [
                "/opt/sp/bin/sessionpipe-hook",
                "codex",
                "notify",
                PREVIOUS_FLAG
            ]
        );
        assert_eq!(
            serde_json::from_str::<Vec<String>>(&argv[4]).unwrap(),
            ["/Applications/Codex.app/notify", "--from", "codex"]
        );
        assert!(added.contains("# Computer Use\nnotify = [") && added.contains("] # keep\n"));
    }

    #[test]
    fn a_misplaced_notify_of_theirs_moves_up_and_one_of_ours_is_taken_out() {
        let theirs = "model = \"o3\"\n\n[projects.\"/w\"]\ntrust_level = \"trusted\"\nnotify = [\"say\", \"done\"]\n";
        let added = CodexNotify.add(theirs, &ctx()).unwrap();
        assert_eq!(
            previous_of(&top_argv(&added).unwrap()).unwrap(),
            ["say", "done"]
        );
        assert!(scan(&added).unwrap().in_tables.is_empty(), "{added}");
        assert!(added.ends_with("trust_level = \"trusted\"\n"));
        // Uninstall gives the person's notify back at the top, where it now runs.
        let removed = CodexNotify.remove(&added, Some(theirs), &ctx()).unwrap();
        assert_eq!(
            removed,
            "model = \"o3\"\nnotify = [\"say\", \"done\"]\n\n[projects.\"/w\"]\ntrust_level = \"trusted\"\n"
        );

        let ours =
            format!("model = \"o3\"\n\n[projects.\"/w\"]\ntrust_level = \"trusted\"\n{OURS}\n");
        let EntryState::Outdated(why) = CodexNotify.judge(&ours, &ctx()).unwrap() else {
            panic!()
        };
        assert!(why.contains(r#"[projects."/w"]"#), "{why}");
        let cleaned = CodexNotify.remove(&ours, None, &ctx()).unwrap();
        assert_eq!(
            cleaned,
            "model = \"o3\"\n\n[projects.\"/w\"]\ntrust_level = \"trusted\"\n"
        );
    }

    #[test]
    fn judge_tells_missing_current_and_outdated() {
        assert_eq!(
            CodexNotify.judge("model = \"o3\"\n", &ctx()).unwrap(),
            EntryState::Missing
        );
        assert_eq!(
            CodexNotify.judge("notify = [\"say\"]\n", &ctx()).unwrap(),
            EntryState::Missing
        );
        let old = "notify = [\"/old/sessionpipe-hook\", \"codex\", \"notify\"]\n";
        assert!(matches!(
            CodexNotify.judge(old, &ctx()).unwrap(),
            EntryState::Outdated(_)
        ));
        // Reinstalling over an old entry keeps the previous notify it carried.
        let old_chained = format!(
            "notify = [\"/old/sessionpipe-hook\", \"codex\", \"notify\", \"{PREVIOUS_FLAG}\", '[\"say\"]']\n"
        );
        let empty = CodexNotify.add("notify = []\n", &ctx()).unwrap();
        assert_eq!(top_argv(&empty).unwrap().len(), 3, "nothing to chain");
        let cleaned = CodexNotify.remove(&old_chained, None, &ctx()).unwrap();
        assert_eq!(cleaned, "notify = [\"say\"]\n");
        let again = CodexNotify.add(&cleaned, &ctx()).unwrap();
        assert_eq!(previous_of(&top_argv(&again).unwrap()).unwrap(), ["say"]);
    }

    #[test]
    fn files_it_cannot_edit_are_refused_with_a_reason() {
        for (text, why) in [
            ("model = \n", "not valid TOML"),
            ("notify = \"say done\"\n", "not a list of strings"),
            ("notify = [1, 2]\n", "not a list of strings"),
        ] {
            let err = CodexNotify.judge(text, &ctx()).unwrap_err();
            assert!(err.to_string().contains(why), "{text:?}: {err}");
        }
        // A notify-shaped key of another type in a table is not ours to move.
        let tui = "[tui]\nnotify = true\n";
        assert_eq!(CodexNotify.judge(tui, &ctx()).unwrap(), EntryState::Missing);
    }

    #[test]
    fn our_argv_is_recognised_at_any_path_and_only_for_codex() {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert!(is_ours(
            &v(&["/x/sessionpipe-hook", "codex", "notify"]),
            "codex"
        ));
        assert!(is_ours(
            &v(&[
                "C:\\sp\\sessionpipe-hook.exe",
                "codex",
                "notify",
                PREVIOUS_FLAG,
                "[]"
            ]),
            "codex"
        ));
        assert!(!is_ours(
            &v(&["/x/sessionpipe-hook", "codex", "Stop"]),
            "codex"
        ));
        assert!(!is_ours(&v(&["/x/other", "codex", "notify"]), "codex"));
        assert!(!is_ours(&v(&["/x/sessionpipe-hook"]), "codex"));
    }
}
