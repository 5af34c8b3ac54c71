//! The redaction conformance vectors (`conformance/redaction/*.json`): loads them,
//! materialises their templates and recipes, and checks this crate against them, one
//! result per case. Used by the CLI's `conformance` command and by the tests.
//!
//! It owns the vector format (README of the conformance suite): `cases` `{name, in,
//! out, home?}` or `{name, template, t: [{prefix, len, abc?}], out}`, `session` cases,
//! and `adversarial` recipes timed against `max_ms`. Every case also checks
//! idempotence (the rules must give their own output back unchanged). This is the only
//! module that reads files; it must not print, exit, or special-case a vector.

use std::borrow::Cow;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The alphabet of generated tokens when a part gives none (the files repeat it as
/// `rnd_default_abc`).
pub const DEFAULT_ABC: &str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

/// Which list of its file a case came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `cases`: one string in, one string out.
    Case,
    /// `session`: a session block in, the block `pii@1` leaves out.
    Session,
    /// `adversarial`: an input built from a recipe, which must return within `max_ms`.
    Adversarial,
}

/// The verdict on one vector.
#[derive(Debug, Clone)]
pub struct CaseResult {
    /// The vector file's name (`secrets.json`).
    pub file: String,
    pub kind: Kind,
    /// Position in its list (names repeat, e.g. `context`).
    pub index: usize,
    pub name: String,
    pub passed: bool,
    /// Empty when passed, except for adversarial cases (their timing); diff-style
    /// when failed.
    pub message: String,
    /// For adversarial cases: how long the rule took, and the budget.
    pub elapsed: Option<Duration>,
    pub max_ms: Option<u64>,
}

impl fmt::Display for CaseResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verdict = if self.passed { "ok  " } else { "FAIL" };
        let kind = match self.kind {
            Kind::Case => "case",
            Kind::Session => "session",
            Kind::Adversarial => "adversarial",
        };
        write!(
            f,
            "{verdict} {}#{kind}[{}] {}",
            self.file, self.index, self.name
        )?;
        if !self.message.is_empty() {
            for line in self.message.lines() {
                write!(f, "\n       {line}")?;
            }
        }
        Ok(())
    }
}

/// Why a vector file could not be checked at all.
#[derive(Debug)]
pub enum VectorError {
    Io(PathBuf, std::io::Error),
    Json(PathBuf, serde_json::Error),
    /// The file parsed but does not have the vector format.
    Format(String),
}

/// What is wrong with one case or recipe as written (not with the rule).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadCase(pub &'static str);

impl fmt::Display for BadCase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for BadCase {}

impl fmt::Display for VectorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io(p, e) => write!(f, "{}: {e}", p.display()),
            Self::Json(p, e) => write!(f, "{}: not JSON: {e}", p.display()),
            Self::Format(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for VectorError {}

/// Checks every `*.json` file of `dir`, in name order.
pub fn check_dir(dir: &Path) -> Result<Vec<CaseResult>, VectorError> {
    let entries = std::fs::read_dir(dir).map_err(|e| VectorError::Io(dir.into(), e))?;
    let mut files = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| VectorError::Io(dir.into(), e))?.path();
        if path.extension().is_some_and(|x| x == "json") {
            files.push(path);
        }
    }
    files.sort();
    let mut out = Vec::new();
    for path in files {
        out.extend(check_file(&path)?);
    }
    Ok(out)
}

/// Checks one vector file.
pub fn check_file(path: &Path) -> Result<Vec<CaseResult>, VectorError> {
    let text = std::fs::read_to_string(path).map_err(|e| VectorError::Io(path.into(), e))?;
    let doc: Value = serde_json::from_str(&text).map_err(|e| VectorError::Json(path.into(), e))?;
    let file = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into(),
    );
    check_document(&file, &doc)
}

/// Checks one parsed vector file; `file` names it in the results. The rule is chosen
/// by the file's `ruleset` (`secrets@1`, `pii@1`).
pub fn check_document(file: &str, doc: &Value) -> Result<Vec<CaseResult>, VectorError> {
    let bad = |what: &str| VectorError::Format(format!("{file}: {what}"));
    let ruleset = doc["ruleset"].as_str().ok_or_else(|| bad("no `ruleset`"))?;
    if ruleset != "secrets@1" && ruleset != "pii@1" {
        return Err(bad(&format!("unknown ruleset {ruleset:?}")));
    }
    let abc = doc["rnd_default_abc"].as_str().unwrap_or(DEFAULT_ABC);
    let mut out = Vec::new();
    let mut result = |kind, index, case: &Value, verdict: Verdict| {
        out.push(CaseResult {
            file: file.to_string(),
            kind,
            index,
            name: case["name"].as_str().unwrap_or("(unnamed)").to_string(),
            passed: verdict.message.is_none(),
            message: verdict.message.or(verdict.note).unwrap_or_default(),
            elapsed: verdict.elapsed,
            max_ms: case["max_ms"].as_u64(),
        });
    };
    for (i, case) in list(doc, "cases").iter().enumerate() {
        let rule = Rule {
            ruleset,
            home: case["home"].as_str(),
        };
        let verdict = check_case(case, abc, rule).map_err(|e| bad(&format!("cases[{i}]: {e}")))?;
        result(Kind::Case, i, case, verdict);
    }
    for (i, case) in list(doc, "session").iter().enumerate() {
        result(Kind::Session, i, case, check_session(case));
    }
    for (i, case) in list(doc, "adversarial").iter().enumerate() {
        let rule = Rule {
            ruleset,
            home: None,
        };
        let verdict =
            check_adversarial(case, rule).map_err(|e| bad(&format!("adversarial[{i}]: {e}")))?;
        result(Kind::Adversarial, i, case, verdict);
    }
    Ok(out)
}

/// One line per file: `secrets.json: 41 passed, 0 failed`.
pub fn summary(results: &[CaseResult]) -> String {
    let mut files: Vec<(&str, usize, usize)> = Vec::new();
    for r in results {
        let at = match files.iter().position(|f| f.0 == r.file) {
            Some(at) => at,
            None => {
                files.push((&r.file, 0, 0));
                files.len() - 1
            }
        };
        if r.passed {
            files[at].1 += 1;
        } else {
            files[at].2 += 1;
        }
    }
    files
        .iter()
        .map(|(f, p, x)| format!("{f}: {p} passed, {x} failed"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every string a vector document's `cases` hold: each `in`, `out` and materialised
/// `template`.
pub fn texts(doc: &Value) -> Result<Vec<String>, BadCase> {
    let abc = doc["rnd_default_abc"].as_str().unwrap_or(DEFAULT_ABC);
    let mut out = Vec::new();
    for case in list(doc, "cases") {
        out.extend(case["in"].as_str().map(str::to_string));
        out.extend(case["out"].as_str().map(str::to_string));
        if let Some(t) = case["template"].as_str() {
            out.push(expand_template(t, list(case, "t"), abc)?);
        }
    }
    Ok(out)
}

/// A case's input and the secrets its rule removes from it.
#[derive(Debug, Clone)]
pub struct Removal {
    pub input: String,
    /// The spans of `input` its `out` shows as the marker.
    pub spans: Vec<String>,
}

/// The secrets a vector document's cases remove: for each case whose `out`
/// differs from its input, the spans of the input that its `out` replaces with
/// `marker`. What at-rest tests say (the whole input: some secrets are secrets
/// by their context) and then look for in files the daemon wrote.
pub fn removals(doc: &Value, marker: &str) -> Result<Vec<Removal>, BadCase> {
    let abc = doc["rnd_default_abc"].as_str().unwrap_or(DEFAULT_ABC);
    let mut out = Vec::new();
    for case in list(doc, "cases") {
        let input = match (case["in"].as_str(), case["template"].as_str()) {
            (Some(i), _) => i.to_string(),
            (None, Some(t)) => expand_template(t, list(case, "t"), abc)?,
            (None, None) => continue,
        };
        let Some(want) = case["out"].as_str() else {
            continue;
        };
        let spans = spans_replaced(&input, want, marker);
        if !spans.is_empty() {
            out.push(Removal { input, spans });
        }
    }
    Ok(out)
}

/// The pieces of `input` that `output` shows as `marker`: the text between the
/// literal pieces of `output`, found in order.
fn spans_replaced(input: &str, output: &str, marker: &str) -> Vec<String> {
    let pieces: Vec<&str> = output.split(marker).collect();
    let mut spans = Vec::new();
    let Some(first) = pieces.first() else {
        return spans;
    };
    let Some(mut at) = input.starts_with(first).then_some(first.len()) else {
        return spans;
    };
    for (i, piece) in pieces.iter().enumerate().skip(1) {
        let found = if i == pieces.len() - 1 {
            input
                .len()
                .checked_sub(piece.len())
                .filter(|&f| f >= at && input[f..] == **piece)
        } else if piece.is_empty() {
            None
        } else {
            input[at..].find(piece).map(|f| f + at)
        };
        let Some(found) = found else {
            return spans;
        };
        spans.push(input[at..found].to_string());
        at = found + piece.len();
    }
    spans
}

/// The vectors' token generator: `n` characters, the i-th being
/// `abc[(i*7+3) % abc.len()]` (counted in characters).
pub fn rnd(n: usize, abc: &str) -> String {
    let abc: Vec<char> = abc.chars().collect();
    if abc.is_empty() {
        return String::new();
    }
    (0..n).map(|i| abc[(i * 7 + 3) % abc.len()]).collect()
}

/// Materialises a template: every `{t}` becomes the concatenation of the parts, each
/// its `prefix` followed by `rnd(len, abc)`.
pub fn expand_template(
    template: &str,
    parts: &[Value],
    default_abc: &str,
) -> Result<String, BadCase> {
    let mut token = String::new();
    for part in parts {
        let len = part["len"]
            .as_u64()
            .ok_or(BadCase("a `t` part without `len`"))?;
        let len = usize::try_from(len).map_err(|_| BadCase("`len` too large"))?;
        token.push_str(part["prefix"].as_str().unwrap_or(""));
        token.push_str(&rnd(len, part["abc"].as_str().unwrap_or(default_abc)));
    }
    Ok(template.replace("{t}", &token))
}

/// Builds an adversarial input: `prefix`, `repeat` × `times`, `then`, `then_repeat` ×
/// `then_times`, `suffix` (all but `repeat` and `times` optional).
pub fn build_recipe(recipe: &Value) -> Result<String, BadCase> {
    let text = |k: &str| recipe[k].as_str().unwrap_or("");
    let count = |k: &str| {
        usize::try_from(recipe[k].as_u64().unwrap_or(0)).map_err(|_| BadCase("a count too large"))
    };
    let repeat = recipe["repeat"]
        .as_str()
        .ok_or(BadCase("a recipe without `repeat`"))?;
    let mut s = String::from(text("prefix"));
    s.push_str(&repeat.repeat(count("times")?));
    s.push_str(text("then"));
    s.push_str(&text("then_repeat").repeat(count("then_times")?));
    s.push_str(text("suffix"));
    Ok(s)
}

/// A diff-style account of a wrong output.
pub fn diff(input: &str, want: &str, got: &str) -> String {
    let at = want
        .chars()
        .zip(got.chars())
        .take_while(|(a, b)| a == b)
        .count();
    format!(
        "  in:   {}\n- want: {}\n+ got:  {}\n  first difference at char {at}",
        excerpt(input, 0),
        excerpt(want, at),
        excerpt(got, at),
    )
}

/// `s` quoted, cut to about 160 characters around char `at`.
fn excerpt(s: &str, at: usize) -> String {
    const WIDTH: usize = 160;
    let n = s.chars().count();
    if n <= WIDTH {
        return format!("{s:?}");
    }
    let from = at.saturating_sub(WIDTH / 2).min(n - WIDTH);
    let cut: String = s.chars().skip(from).take(WIDTH).collect();
    let head = if from > 0 { "…" } else { "" };
    let tail = if from + WIDTH < n { "…" } else { "" };
    format!("{head}{cut:?}{tail} ({n} chars)")
}

struct Verdict {
    /// Why it failed; `None` when it passed.
    message: Option<String>,
    /// Shown even when it passed.
    note: Option<String>,
    elapsed: Option<Duration>,
}

fn list<'a>(doc: &'a Value, key: &str) -> &'a [Value] {
    doc[key].as_array().map_or(&[], Vec::as_slice)
}

/// The string rule a file's cases run.
#[derive(Clone, Copy)]
struct Rule<'r> {
    ruleset: &'r str,
    home: Option<&'r str>,
}

impl Rule<'_> {
    fn apply<'a>(&self, s: &'a str) -> Cow<'a, str> {
        if self.ruleset == "pii@1" {
            crate::pii(s, self.home)
        } else {
            crate::secrets(s)
        }
    }
}

fn check_case(case: &Value, abc: &str, rule: Rule<'_>) -> Result<Verdict, BadCase> {
    let input = match (case["in"].as_str(), case["template"].as_str()) {
        (Some(s), _) => s.to_string(),
        (None, Some(t)) => expand_template(t, list(case, "t"), abc)?,
        (None, None) => return Err(BadCase("neither `in` nor `template`")),
    };
    let want = case["out"].as_str().ok_or(BadCase("no string `out`"))?;
    let got = rule.apply(&input);
    let message = if got != want {
        Some(diff(&input, want, &got))
    } else {
        let again = rule.apply(&got);
        (again != got).then(|| format!("not idempotent:\n{}", diff(&got, &got, &again)))
    };
    Ok(Verdict {
        message,
        note: None,
        elapsed: None,
    })
}

fn check_session(case: &Value) -> Verdict {
    let message = match case["in"].as_object() {
        None => Some("`in` is not an object".to_string()),
        Some(block) => {
            let mut got = block.clone();
            crate::pii_session(&mut got);
            let got = Value::Object(got);
            (got != case["out"]).then(|| {
                diff(
                    &case["in"].to_string(),
                    &case["out"].to_string(),
                    &got.to_string(),
                )
            })
        }
    };
    Verdict {
        message,
        note: None,
        elapsed: None,
    }
}

fn check_adversarial(case: &Value, rule: Rule<'_>) -> Result<Verdict, BadCase> {
    let input = build_recipe(&case["recipe"])?;
    let max_ms = case["max_ms"].as_u64().ok_or(BadCase("no `max_ms`"))?;
    let started = Instant::now();
    let out = rule.apply(&input);
    let elapsed = started.elapsed();
    let note = format!(
        "{:.2} ms of {max_ms} ms on {} bytes",
        elapsed.as_secs_f64() * 1000.0,
        input.len()
    );
    let message = (elapsed > Duration::from_millis(max_ms)).then(|| format!("too slow: {note}"));
    drop(out);
    Ok(Verdict {
        message,
        note: Some(note),
        elapsed: Some(elapsed),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removed_spans_are_what_the_marker_stands_for() {
        assert_eq!(
            spans_replaced("a KEY b KEY2 c", "a [r] b [r] c", "[r]"),
            vec!["KEY", "KEY2"]
        );
        assert_eq!(spans_replaced("KEY tail", "[r] tail", "[r]"), vec!["KEY"]);
        assert_eq!(spans_replaced("head KEY", "head [r]", "[r]"), vec!["KEY"]);
        assert!(spans_replaced("same", "same", "[r]").is_empty());
    }
    use serde_json::json;

    /// The public rules repeat a pass while it changes something (`to_fixed_point`);
    /// on the vectors' realistic text one pass must already be a fixed point, for
    /// each rule and for `secrets@1` then `pii@1`.
    #[test]
    fn one_pass_is_a_fixed_point_on_vector_text() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/conformance/redaction");
        if !dir.is_dir() {
            println!("skipped: no conformance vectors at {}", dir.display());
            return;
        }
        let home = Some("/Users/misha");
        let mut checked = 0;
        for file in ["secrets.json", "pii.json"] {
            let text = std::fs::read_to_string(dir.join(file)).expect("vector file");
            let doc: Value = serde_json::from_str(&text).expect("vector JSON");
            for s in texts(&doc).expect("vector texts") {
                let once = crate::secrets::redact(&s);
                assert_eq!(crate::secrets::redact(&once), once, "secrets on {s:?}");
                let once = crate::pii::redact(&s, home);
                assert_eq!(crate::pii::redact(&once, home), once, "pii on {s:?}");
                let both = crate::pii::redact(&crate::secrets::redact(&s), home).into_owned();
                let again = crate::pii::redact(&crate::secrets::redact(&both), home).into_owned();
                assert_eq!(again, both, "secrets then pii on {s:?}");
                checked += 1;
            }
        }
        assert!(checked > 50);
    }

    #[test]
    fn rnd_follows_the_files_formula() {
        assert_eq!(rnd(5, DEFAULT_ABC), "dkryF");
        assert_eq!(rnd(3, "01"), "101");
        assert_eq!(rnd(3, ""), "");
    }

    #[test]
    fn templates_join_parts_and_fill_every_slot() {
        let parts = json!([{"prefix": "a_", "len": 2}, {"prefix": ".", "len": 1, "abc": "z"}]);
        let got = expand_template("{t} {t}", parts.as_array().unwrap(), DEFAULT_ABC).unwrap();
        assert_eq!(got, "a_dk.z a_dk.z");
    }

    #[test]
    fn recipes() {
        let r = json!({"prefix": "p", "repeat": "ab", "times": 2, "then": "=", "then_repeat": "c", "then_times": 3, "suffix": "!"});
        assert_eq!(build_recipe(&r).unwrap(), "pabab=ccc!");
        assert!(build_recipe(&json!({})).is_err());
    }

    #[test]
    fn a_wrong_output_fails_with_a_diff() {
        let doc = json!({"ruleset": "secrets@1", "cases": [{"name": "n", "in": "a", "out": "b"}]});
        let r = check_document("x.json", &doc).unwrap();
        assert!(!r[0].passed);
        assert!(
            r[0].message.contains("- want: \"b\"\n+ got:  \"a\""),
            "{}",
            r[0].message
        );
        assert_eq!(summary(&r), "x.json: 0 passed, 1 failed");
    }

    #[test]
    fn unknown_rulesets_are_refused() {
        assert!(check_document("x.json", &json!({"ruleset": "nope@9"})).is_err());
    }

    #[test]
    fn long_excerpts_are_cut_around_the_difference() {
        let long = "a".repeat(1000);
        let e = excerpt(&long, 500);
        assert!(e.starts_with('…') && e.ends_with("(1000 chars)"), "{e}");
    }
}
