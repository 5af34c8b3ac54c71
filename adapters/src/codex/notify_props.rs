//! Property tests of the TOML config editor (`CodexNotify` and the `Installer`
//! on `config.toml`), on generated documents: top-level keys, dotted keys,
//! comments, blank lines, multi-line arrays, inline tables, `[tables]` and
//! `[[arrays of tables]]`, CRLF, a missing final newline; a notify of the
//! person's (at the top, empty, or stranded in a table), ours (current, from an
//! older path, chained), one that is no list of strings; and sometimes a doubled
//! key or table or a broken line.
//!
//! The invariant: install leaves the document's value as it was but for the
//! top-level `notify` (ours, carrying the person's) and a notify of theirs moved
//! up out of a table; every line but the notify lines is kept byte for byte; or
//! the file is refused for a reason the document shows, and left byte-identical.
//! Uninstall after install gives back the input's bytes (less any of ours). 256
//! cases in a normal run; `PROPTEST_CASES=20000` runs more by hand.

use super::notify::{CodexNotify, NOTIFY_EVENT, PREVIOUS_FLAG};
use harness::install::scratch::Scratch;
use harness::install::{ConfigFormat, Ctx, EntryState, FileState, Skip};
use proptest::prelude::*;
use proptest::test_runner::Config;
use serde_json::{Map, Value, json};
use std::path::Path;

const HARNESS: &str = "codex";
static NOTIFY: CodexNotify = CodexNotify;

fn bin() -> &'static Path {
    Path::new("/opt/sp/bin/sessionpipe-hook")
}

fn ctx() -> Ctx<'static> {
    Ctx {
        harness: HARNESS,
        hook_bin: bin(),
    }
}

/// One run's cases: `PROPTEST_CASES`, else 256 (proptest's defaults); no
/// regression files in the source tree.
fn config() -> Config {
    Config {
        failure_persistence: None,
        ..Config::default()
    }
}

// ------------------------------------------------------------ the documents

/// A `notify` as the generator placed it.
#[derive(Clone, Debug, PartialEq)]
enum Notify {
    Theirs(Vec<String>),
    /// Ours, from this install path or an older one, carrying theirs or not.
    Ours {
        old: bool,
        previous: Option<Vec<String>>,
    },
    /// Not a list of strings (`"say"`, `[1, 2]`, `true`).
    Odd(&'static str),
}

impl Notify {
    fn argv(&self) -> Option<Vec<String>> {
        match self {
            Notify::Theirs(a) => Some(a.clone()),
            Notify::Ours { old, previous } => {
                let path = if *old {
                    "/old/sessionpipe-hook"
                } else {
                    "/opt/sp/bin/sessionpipe-hook"
                };
                Some(ours(path, previous.as_deref()))
            }
            Notify::Odd(_) => None,
        }
    }
}

fn ours(path: &str, previous: Option<&[String]>) -> Vec<String> {
    let mut argv = vec![path.to_string(), HARNESS.into(), NOTIFY_EVENT.into()];
    if let Some(p) = previous {
        argv.push(PREVIOUS_FLAG.into());
        argv.push(serde_json::to_string(p).expect("strings serialise"));
    }
    argv
}

/// A line of a table (or of the top level).
#[derive(Clone, Debug)]
enum Line {
    Blank,
    Comment(String),
    /// `key = value # comment`, the value written out already.
    Pair {
        key: String,
        value: String,
        comment: bool,
    },
    Notify(Notify, Spacing),
}

#[derive(Clone, Copy, Debug)]
struct Spacing {
    /// ` = ` or `=`.
    tight: bool,
    /// A `# comment` after the value.
    comment: bool,
    /// Literal strings (`'…'`) where they can be.
    literal: bool,
}

#[derive(Clone, Debug)]
struct Table {
    /// `tui`, `projects."/w"`.
    header: &'static str,
    array: bool,
    comment_above: bool,
    lines: Vec<Line>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Twist {
    None,
    /// A top-level key written twice.
    DoubledKey,
    /// A `[table]` header written twice.
    DoubledTable,
    /// A key written twice in one table.
    DoubledInTable,
    /// `key =` with no value.
    Broken,
}

#[derive(Debug)]
struct Case {
    top: Vec<Line>,
    tables: Vec<Table>,
    twist: Twist,
    text: String,
}

fn an_argv() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(
        prop::sample::select(vec![
            "say",
            "done",
            "/Applications/Codex.app/notify",
            "--from",
            "a \"q\"",
            "ünï",
            "back\\slash",
            "it's",
        ])
        .prop_map(str::to_string),
        0..4,
    )
}

fn notify() -> impl Strategy<Value = Notify> {
    prop_oneof![
        4 => an_argv().prop_map(Notify::Theirs),
        3 => (any::<bool>(), prop::option::of(an_argv().prop_filter("non-empty", |a| !a.is_empty())))
            .prop_map(|(old, previous)| Notify::Ours { old, previous }),
        1 => prop::sample::select(vec!["\"say done\"", "[1, 2]", "true"]).prop_map(Notify::Odd),
    ]
}

fn spacing() -> impl Strategy<Value = Spacing> {
    (
        any::<bool>(),
        prop::bool::weighted(0.3),
        prop::bool::weighted(0.3),
    )
        .prop_map(|(tight, comment, literal)| Spacing {
            tight,
            comment,
            literal,
        })
}

fn a_value() -> impl Strategy<Value = String> {
    let string = "[ -~&&[^\"\\\\]]{0,10}".prop_map(|s| format!("\"{s}\""));
    prop_oneof![
        string.clone(),
        "[a-z ]{0,8}".prop_map(|s| format!("'{s}'")),
        (-999i64..999).prop_map(|n| n.to_string()),
        Just("3.25".to_string()),
        Just("true".to_string()),
        Just("1979-05-27T07:32:00Z".to_string()),
        Just("\"\\u00e9 \\\"q\\\"\"".to_string()),
        prop::collection::vec(string.clone(), 0..3).prop_map(|v| format!("[{}]", v.join(", "))),
        prop::collection::vec(string, 1..3).prop_map(|v| format!("[\n  {},\n]", v.join(",\n  "))),
        Just("{ a = 1, b = \"x\" }".to_string()),
        Just("{ notify = [\"inline\"] }".to_string()),
    ]
}

/// A key of its own table (`pool` keeps each table's keys apart from its
/// sub-tables' names, which TOML would read as a redefinition).
fn pair(pool: &'static [&'static str]) -> impl Strategy<Value = Line> {
    (
        prop::sample::select(pool),
        a_value(),
        prop::bool::weighted(0.2),
    )
        .prop_map(|(key, value, comment)| Line::Pair {
            key: key.to_string(),
            value,
            comment,
        })
}

fn filler() -> impl Strategy<Value = Line> {
    prop_oneof![
        Just(Line::Blank),
        "[ -~]{0,12}".prop_map(|c| Line::Comment(format!("#{c}"))),
    ]
}

const TOP_KEYS: &[&str] = &[
    "model",
    "approval_policy",
    "sandbox_mode",
    "a-b",
    "\"quoted key\"",
    "x_1",
    "ui.theme",
    "ui.size",
];
const TABLE_KEYS: &[&str] = &["name", "trust_level", "base_url", "enabled", "n"];

fn lines(pool: &'static [&'static str], notify_weight: u32) -> impl Strategy<Value = Vec<Line>> {
    let line = prop_oneof![
        4 => pair(pool),
        2 => filler(),
        notify_weight => (notify(), spacing()).prop_map(|(n, s)| Line::Notify(n, s)),
    ];
    prop::collection::vec(line, 0..6).prop_map(|mut v| {
        // One key of a name per table; one notify (the twists double them).
        let mut seen = std::collections::HashSet::new();
        v.retain(|l| match l {
            Line::Pair { key, .. } => seen.insert(key.clone()),
            Line::Notify(..) => seen.insert("notify".to_string()),
            _ => true,
        });
        v
    })
}

fn tables() -> impl Strategy<Value = Vec<Table>> {
    let header = prop::sample::select(vec![
        ("tui", false),
        ("projects.\"/w\"", false),
        ("projects.\"C:\\\\w\"", false),
        ("model_providers.local", false),
        ("features", false),
        ("profiles", true),
    ]);
    let table = (header, prop::bool::weighted(0.3), lines(TABLE_KEYS, 1)).prop_map(
        |((header, array), comment_above, lines)| Table {
            header,
            array,
            comment_above,
            lines,
        },
    );
    prop::collection::vec(table, 0..4).prop_map(|mut v| {
        let mut seen = std::collections::HashSet::new();
        v.retain(|t| t.array || seen.insert(t.header));
        v
    })
}

fn case() -> impl Strategy<Value = Case> {
    let twist = prop_oneof![
        12 => Just(Twist::None),
        1 => Just(Twist::DoubledKey),
        1 => Just(Twist::DoubledTable),
        1 => Just(Twist::DoubledInTable),
        1 => Just(Twist::Broken),
    ];
    (
        lines(TOP_KEYS, 2),
        tables(),
        twist,
        prop::sample::select(vec!["\n", "\r\n"]),
        prop::bool::weighted(0.8),
    )
        .prop_map(|(mut top, mut tables, twist, eol, final_eol)| {
            let twist = apply(&mut top, &mut tables, twist);
            let text = write(&top, &tables, eol, final_eol);
            Case {
                top,
                tables,
                twist,
                text,
            }
        })
}

/// Doubles or breaks something for the twists; `None` when there was nothing.
fn apply(top: &mut Vec<Line>, tables: &mut Vec<Table>, twist: Twist) -> Twist {
    let is_key = |l: &Line| matches!(l, Line::Pair { .. } | Line::Notify(..));
    match twist {
        Twist::DoubledKey => match top.iter().find(|l| is_key(l)).cloned() {
            Some(l) => top.push(l),
            None => {
                let model = Line::Pair {
                    key: "model".into(),
                    value: "\"o3\"".into(),
                    comment: false,
                };
                top.push(model.clone());
                top.push(model);
            }
        },
        Twist::DoubledTable => match tables.iter().find(|t| !t.array).cloned() {
            Some(t) => tables.push(Table {
                lines: Vec::new(),
                ..t
            }),
            None => return Twist::None,
        },
        Twist::DoubledInTable => {
            let Some(t) = tables.iter_mut().find(|t| t.lines.iter().any(is_key)) else {
                return Twist::None;
            };
            let l = t.lines.iter().find(|l| is_key(l)).cloned().expect("a key");
            t.lines.push(l);
        }
        Twist::Broken => top.push(Line::Pair {
            key: "model".into(),
            value: String::new(),
            comment: false,
        }),
        Twist::None => {}
    }
    twist
}

fn toml_string(s: &str, literal: bool) -> String {
    if literal && !s.contains('\'') {
        format!("'{s}'")
    } else {
        serde_json::to_string(s).expect("a string serialises")
    }
}

fn write_line(out: &mut Vec<String>, line: &Line) {
    out.push(match line {
        Line::Blank => String::new(),
        Line::Comment(c) => c.clone(),
        Line::Pair {
            key,
            value,
            comment,
        } => {
            let c = if *comment { " # note" } else { "" };
            format!("{key} = {value}{c}")
        }
        Line::Notify(n, s) => {
            let value = match n.argv() {
                Some(argv) => {
                    let items: Vec<String> =
                        argv.iter().map(|a| toml_string(a, s.literal)).collect();
                    format!("[{}]", items.join(if s.tight { "," } else { ", " }))
                }
                None => match n {
                    Notify::Odd(v) => v.to_string(),
                    _ => unreachable!(),
                },
            };
            let eq = if s.tight { "=" } else { " = " };
            let c = if s.comment { "  # mine" } else { "" };
            format!("notify{eq}{value}{c}")
        }
    });
}

fn write(top: &[Line], tables: &[Table], eol: &str, final_eol: bool) -> String {
    let mut out = Vec::new();
    for l in top {
        write_line(&mut out, l);
    }
    for t in tables {
        if t.comment_above {
            out.push("# a table".into());
        }
        out.push(if t.array {
            format!("[[{}]]", t.header)
        } else {
            format!("[{}]", t.header)
        });
        for l in &t.lines {
            write_line(&mut out, l);
        }
    }
    let mut text = out.join(eol);
    if final_eol && !text.is_empty() {
        text.push_str(eol);
    }
    text
}

// ------------------------------------------------------------ the model

/// Why the editor must refuse the document, from what the generator put there.
fn refusal(case: &Case) -> Option<&'static str> {
    if case.twist != Twist::None {
        return Some("not valid TOML");
    }
    let odd_top = case
        .top
        .iter()
        .any(|l| matches!(l, Line::Notify(Notify::Odd(_), _)));
    odd_top.then_some("not a list of strings")
}

fn top_notify(case: &Case) -> Option<&Notify> {
    case.top.iter().find_map(|l| match l {
        Line::Notify(n, _) => Some(n),
        _ => None,
    })
}

/// The document's value as Codex reads it, through `toml_edit`'s parser.
fn value(text: &str) -> Value {
    let doc = toml_edit::Document::parse(text).expect("valid TOML");
    table(doc.as_table())
}

fn table(t: &toml_edit::Table) -> Value {
    Value::Object(t.iter().map(|(k, v)| (k.to_string(), item(v))).collect())
}

fn item(i: &toml_edit::Item) -> Value {
    match i {
        toml_edit::Item::None => Value::Null,
        toml_edit::Item::Value(v) => plain(v),
        toml_edit::Item::Table(t) => table(t),
        toml_edit::Item::ArrayOfTables(a) => Value::Array(a.iter().map(table).collect()),
    }
}

fn plain(v: &toml_edit::Value) -> Value {
    use toml_edit::Value as V;
    match v {
        V::String(s) => json!(s.value()),
        V::Integer(n) => json!(n.value()),
        V::Float(f) => json!(f.value()),
        V::Boolean(b) => json!(b.value()),
        V::Datetime(d) => json!(d.value().to_string()),
        V::Array(a) => Value::Array(a.iter().map(plain).collect()),
        V::InlineTable(t) => Value::Object(
            t.iter()
                .map(|(k, v)| (k.to_string(), plain(v)))
                .collect::<Map<_, _>>(),
        ),
    }
}

/// The value after uninstall takes ours out: ours at the top goes, or gives
/// back the notify it carried; ours in a table goes.
fn cleaned_value(case: &Case) -> Value {
    let mut v = value(&case.text);
    match top_notify(case) {
        Some(Notify::Ours {
            previous: Some(p), ..
        }) => v["notify"] = json!(p),
        Some(Notify::Ours { previous: None, .. }) => {
            v.as_object_mut().expect("a table").shift_remove("notify");
        }
        _ => {}
    }
    for t in case.tables.iter().filter(|t| !t.array) {
        let ours_here = t
            .lines
            .iter()
            .any(|l| matches!(l, Line::Notify(Notify::Ours { .. }, _)));
        if ours_here {
            table_of(&mut v, t.header)
                .shift_remove("notify")
                .expect("ours was there");
        }
    }
    v
}

/// The value install leaves: ours at the top carrying the person's notify,
/// from the top or (none there) from the first table that strands one (in
/// `tree_order`); and that notify.
fn installed_value(case: &Case) -> (Value, Option<Vec<String>>) {
    let mut v = cleaned_value(case);
    let top = v.get("notify").cloned();
    let carried: Option<Vec<String>> = match top {
        Some(t) => serde_json::from_value(t)
            .ok()
            .filter(|a: &Vec<String>| !a.is_empty()),
        None => tree_order(&case.tables).into_iter().find_map(|t| {
            let theirs = t.lines.iter().find_map(|l| match l {
                Line::Notify(Notify::Theirs(a), _) => Some(a.clone()),
                _ => None,
            })?;
            table_of(&mut v, t.header).shift_remove("notify");
            Some(theirs)
        }),
    };
    let argv = ours(&bin().to_string_lossy(), carried.as_deref());
    v.as_object_mut()
        .expect("a table")
        .insert("notify".into(), json!(argv));
    (v, carried)
}

/// The tables as TOML reads them, a tree: each first name in the order it first
/// appears, its sub-tables with it (`[a.x]`, `[b]`, `[a.y]` is a.x, a.y, b).
/// Arrays of tables are not tables Codex could strand a notify in.
fn tree_order(tables: &[Table]) -> Vec<&Table> {
    let first = |t: &Table| t.header.split('.').next().unwrap_or("");
    let mut names: Vec<&str> = Vec::new();
    for t in tables {
        if !names.contains(&first(t)) {
            names.push(first(t));
        }
    }
    let mut order: Vec<&Table> = tables.iter().filter(|t| !t.array).collect();
    order.sort_by_key(|t| names.iter().position(|n| *n == first(t)));
    order
}

/// The table a header names, in a document's value.
fn table_of<'v>(v: &'v mut Value, header: &str) -> &'v mut Map<String, Value> {
    let doc = toml_edit::Document::parse(format!("[{header}]")).expect("a header");
    let mut at = v;
    let mut t = doc.as_table();
    loop {
        let (k, next) = t.iter().next().expect("a segment");
        at = &mut at[k];
        match next.as_table() {
            Some(n) if !n.is_empty() => t = n,
            _ => return at.as_object_mut().expect("a table"),
        }
    }
}

/// The text's lines but its notify lines: what install and uninstall keep byte
/// for byte. Line ends aside: a line written after a last line without one
/// gives that line one (and a CRLF file stays CRLF, checked apart).
fn without_notify(text: &str) -> String {
    text.split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .filter(|l| {
            let l = l.trim_start();
            !(l.starts_with("notify") && l["notify".len()..].trim_start().starts_with('='))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

// ------------------------------------------------------------ the properties

fn check_editor(case: &Case) -> Result<(), TestCaseError> {
    let x = case.text.as_str();
    let judged = NOTIFY.judge(x, &ctx());
    let cleaned = NOTIFY.remove(x, Some(x), &ctx());
    let installed = cleaned.clone().and_then(|c| NOTIFY.add(&c, &ctx()));
    if let Some(why) = refusal(case) {
        prop_assert!(installed.is_err(), "{why}: must be refused");
        prop_assert!(judged.is_err(), "{why}: status must not judge it");
        let err = installed.unwrap_err();
        match why {
            "not valid TOML" => prop_assert!(matches!(err, Skip::NotValid { .. }), "{}", err),
            _ => prop_assert!(matches!(err, Skip::Shape(_)), "{}", err),
        }
        return Ok(());
    }
    prop_assert!(judged.is_ok(), "{:?}", judged);
    let cleaned = cleaned.expect("removal of ours");
    let installed = installed.expect("install");
    prop_assert_eq!(value(&cleaned), cleaned_value(case), "ours taken out");
    prop_assert_eq!(value(&installed), installed_value(case).0, "ours put in");
    prop_assert_eq!(NOTIFY.judge(&installed, &ctx()), Ok(EntryState::Current));
    prop_assert_eq!(
        without_notify(&cleaned),
        without_notify(x),
        "only notify lines"
    );
    prop_assert_eq!(
        without_notify(&installed),
        without_notify(&cleaned),
        "only notify lines"
    );
    let bare_lf = |t: &str| t.replace("\r\n", "").contains('\n');
    if cleaned.contains("\r\n") && !bare_lf(&cleaned) {
        prop_assert!(!bare_lf(&installed), "a CRLF file stays CRLF");
    }
    let back = NOTIFY
        .remove(&installed, Some(&cleaned), &ctx())
        .expect("remove");
    prop_assert_eq!(
        without_notify(&back),
        without_notify(&cleaned),
        "only notify lines"
    );
    let (installed_v, carried) = installed_value(case);
    if value(&cleaned).get("notify").is_some() || carried.is_some() {
        // The person's notify comes back at the top (from a table too), in our
        // rendering; an empty one carried nothing, and goes.
        let mut want = installed_v;
        match &carried {
            Some(c) => want["notify"] = json!(c),
            None => {
                want.as_object_mut()
                    .expect("a table")
                    .shift_remove("notify");
            }
        }
        prop_assert_eq!(value(&back), want);
    } else {
        prop_assert_eq!(back, cleaned, "removal undoes the insertion");
    }
    Ok(())
}

fn check_installer(case: &Case) -> Result<(), TestCaseError> {
    let scratch = Scratch::new("config.toml", &case.text, &NOTIFY);
    let installer = scratch.installer(bin());
    let hooks = &scratch;
    let read = || scratch.read();
    let x = case.text.as_str();

    let (report, _) = installer.install(HARNESS, hooks).expect("ledger");
    let state_after = report.files[0].state.clone();
    if refusal(case).is_some() {
        prop_assert!(
            matches!(state_after, FileState::Skipped(_)),
            "{:?}",
            state_after
        );
        prop_assert_eq!(read(), x, "a refused file is byte-identical");
        let report = installer.uninstall(HARNESS, hooks).expect("ledger");
        prop_assert!(matches!(report.files[0].state, FileState::Skipped(_)));
        prop_assert_eq!(read(), x);
        return Ok(());
    }
    let was_current = !x.trim().is_empty() && NOTIFY.judge(x, &ctx()) == Ok(EntryState::Current);
    if was_current {
        prop_assert_eq!(state_after, FileState::Current);
        prop_assert_eq!(read(), x);
        return Ok(());
    }
    prop_assert_eq!(state_after, FileState::Installed);
    let cleaned = NOTIFY.remove(x, Some(x), &ctx()).expect("removal");
    prop_assert_eq!(read(), NOTIFY.add(&cleaned, &ctx()).expect("add"));
    let report = installer.uninstall(HARNESS, hooks).expect("ledger");
    prop_assert_eq!(&report.files[0].state, &FileState::Removed);
    // The original's bytes, less any of ours it held.
    prop_assert_eq!(read(), cleaned);
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn install_changes_only_the_notify_or_refuses_and_uninstall_gives_the_input_back(case in case()) {
        // The generator's verdict and the TOML parser's agree on what is TOML.
        prop_assert_eq!(
            toml_edit::Document::parse(case.text.as_str()).is_ok(),
            case.twist == Twist::None,
            "{:?}", case.text
        );
        check_editor(&case)?;
        check_installer(&case)?;
    }
}

#[test]
fn toml_refuses_every_doubled_key_and_the_reason_names_it() {
    for text in [
        "notify = [\"a\"]\nnotify = [\"b\"]\n",
        "model = 1\n[tui]\nx = 1\n[tui]\ny = 2\n",
        "[tui]\nx = 1\nx = 2\n",
        "ui.theme = 1\nui.theme = 2\n",
        "ui = { a = 1 }\nui.b = 2\n",
    ] {
        let err = NOTIFY.judge(text, &ctx()).unwrap_err();
        assert!(matches!(err, Skip::NotValid { .. }), "{text:?}: {err}");
        let why = err.to_string();
        assert!(
            why.contains("duplicate key") || why.contains("extend"),
            "{text:?}: {why}"
        );
    }
    let err = NOTIFY
        .judge("a = 1\nnotify = []\nnotify = []\n", &ctx())
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "not valid TOML (line 3, column 1: duplicate key `notify`)"
    );
}

/// Found by the property test: the line end was read after the moved notify's
/// line (the only CRLF of the file) was taken out.
#[test]
fn a_notify_moved_up_out_of_a_table_keeps_the_files_line_ends() {
    for text in [
        "[tui]\r\nnotify = [\"say\"]",
        "[tui]\r\nnotify = [\"say\"]\r\n",
    ] {
        let added = NOTIFY.add(text, &ctx()).unwrap();
        assert!(!added.replace("\r\n", "").contains('\n'), "{added:?}");
        assert_eq!(NOTIFY.judge(&added, &ctx()), Ok(EntryState::Current));
    }
}
