//! `sessionpipe conformance PATH...`: runs conformance files and folders.
//!
//! Each JSON file is recognised by its shape (see `../shared/conformance/README.md`
//! for the formats): a harness fixture (`input.argv` + `expect`) or a redaction
//! vector file (`cases`). One line per fixture or case, then `N passed, M failed`.
//! This module runs checks; it never writes the outbox.

pub mod harness;
pub mod matching;

use serde_json::Value;
use std::path::{Path, PathBuf};

/// One check's result.
#[derive(Clone, Debug)]
pub struct Check {
    pub name: String,
    pub result: Result<(), String>,
}

/// Every JSON file under the given paths, sorted, or why a path cannot be read.
pub fn collect(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
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

/// Runs one file: one check per fixture, or one per case of a vector file.
pub fn run_file(path: &Path) -> Vec<Check> {
    let name = path.display().to_string();
    let fail = |why: String| {
        vec![Check {
            name: name.clone(),
            result: Err(why),
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
            result: harness::run(&doc),
        }];
    }
    if doc.get("cases").is_some() {
        return match sessionpipe_redact::vectors::check_file(path) {
            Ok(cases) => cases
                .into_iter()
                .map(|c| Check {
                    name: format!("{name} #{} {}", c.index, c.name),
                    result: if c.passed { Ok(()) } else { Err(c.message) },
                })
                .collect(),
            Err(e) => fail(e.to_string()),
        };
    }
    fail("not a conformance format this version runs".into())
}

/// Runs every file and prints one line per check and the totals. True when all passed.
pub fn run_and_print(paths: &[PathBuf], out: &mut dyn std::io::Write) -> Result<bool, String> {
    let files = collect(paths)?;
    if files.is_empty() {
        return Err("no conformance files found".into());
    }
    let (mut passed, mut failed) = (0, 0);
    for f in &files {
        for check in run_file(f) {
            let line = match &check.result {
                Ok(()) => {
                    passed += 1;
                    format!("pass {}", check.name)
                }
                Err(why) => {
                    failed += 1;
                    format!("FAIL {}: {why}", check.name)
                }
            };
            let _ = writeln!(out, "{line}");
        }
    }
    let _ = writeln!(out, "{passed} passed, {failed} failed");
    Ok(failed == 0)
}
