//! Layer 3, conformance: `sessionpipe conformance PATH...` runs conformance files
//! and folders.
//!
//! Each JSON file is recognised by its shape (see `../shared/conformance/README.md`
//! for the formats): a harness fixture (`input.argv` + `expect`), a redaction
//! vector file (`cases`), a control vector (`input.signed` or `input.proof`) or a
//! delivery scenario (`steps`, run against the receiver given with `--receiver`,
//! skipped without one). One line per fixture, case, vector or scenario, then
//! `N passed, M failed` (`, K skipped` when a receiver is given or something was
//! skipped). This module runs checks; it never writes the outbox.

mod check;
pub mod control;
pub mod delivery;
mod delivery_control;
pub mod harness;
pub mod matching;

pub use check::{Check, Failed, Outcome};

use serde_json::Value;
use std::path::{Path, PathBuf};

/// Every JSON file under the given paths, sorted, or why a path cannot be read.
pub fn collect(paths: &[PathBuf]) -> Result<Vec<PathBuf>, Failed> {
    let mut files = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p).map_err(|e| format!("{}: {e}", p.display()))?;
        if meta.is_dir() {
            walk(p, &mut files).map_err(|e| format!("{}: {e}", p.display()))?;
        } else {
            files.push(p.clone());
        }
    }
    files.sort();
    files.dedup();
    Ok(files)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for e in std::fs::read_dir(dir)? {
        let p = e?.path();
        if p.is_dir() {
            walk(&p, out)?;
        } else if p.extension().is_some_and(|x| x == "json") {
            out.push(p);
        }
    }
    Ok(())
}

/// Runs one file: one check per fixture or scenario, or one per case of a vector
/// file. Scenarios need `receiver`.
pub fn run_file(path: &Path, receiver: Option<&mut delivery::Runner>) -> Vec<Check> {
    let name = path.display().to_string();
    let fail = |why: String| {
        vec![Check {
            name: name.clone(),
            result: Outcome::Fail(why),
        }]
    };
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => return fail(format!("cannot read: {e}")),
    };
    let doc: Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => return fail(format!("not JSON: {e}")),
    };
    if doc.pointer("/input/argv").is_some() && doc.get("expect").is_some() {
        return vec![Check {
            name,
            result: harness::run(&doc).into(),
        }];
    }
    if control::is_vector(&doc) {
        return vec![Check {
            name,
            result: control::run(&doc).into(),
        }];
    }
    if delivery::is_scenario(&doc) {
        let result = match receiver {
            Some(r) => r.run(&doc),
            None => Outcome::Skip("a delivery scenario: needs --receiver URL".into()),
        };
        return vec![Check { name, result }];
    }
    if doc.get("cases").is_some() {
        return match redact::vectors::check_file(path) {
            Ok(cases) => cases
                .into_iter()
                .map(|c| Check {
                    name: format!("{name} #{} {}", c.index, c.name),
                    result: if c.passed {
                        Ok(())
                    } else {
                        Err(Failed(c.message))
                    }
                    .into(),
                })
                .collect(),
            Err(e) => fail(e.to_string()),
        };
    }
    fail("not a conformance format this version runs".into())
}

/// Runs every file and prints one line per check and the totals. True when all passed.
pub fn run_and_print(paths: &[PathBuf], out: &mut dyn std::io::Write) -> Result<bool, Failed> {
    run_and_print_with(paths, None, out)
}

/// `run_and_print`, with delivery scenarios run against `receiver`.
pub fn run_and_print_with(
    paths: &[PathBuf],
    receiver: Option<&delivery::Target>,
    out: &mut dyn std::io::Write,
) -> Result<bool, Failed> {
    let files = collect(paths)?;
    if files.is_empty() {
        return Err(Failed::from("no conformance files found"));
    }
    let mut runner = receiver.map(delivery::Runner::new).transpose()?;
    let (mut passed, mut failed, mut skipped) = (0, 0, 0);
    for f in &files {
        for check in run_file(f, runner.as_mut()) {
            let line = match &check.result {
                Outcome::Pass => {
                    passed += 1;
                    format!("pass {}", check.name)
                }
                Outcome::Fail(why) => {
                    failed += 1;
                    format!("FAIL {}: {why}", check.name)
                }
                Outcome::Skip(why) => {
                    skipped += 1;
                    format!("skip {}: {why}", check.name)
                }
            };
            let _ = writeln!(out, "{line}");
        }
    }
    if receiver.is_some() || skipped > 0 {
        let _ = writeln!(out, "{passed} passed, {failed} failed, {skipped} skipped");
    } else {
        let _ = writeln!(out, "{passed} passed, {failed} failed");
    }
    Ok(failed == 0)
}
