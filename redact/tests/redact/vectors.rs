//! The redaction conformance vectors: the shared ones
//! (`../shared/conformance/redaction/*.json` from the workspace root) and the
//! project's own (`conformance/redaction/*.json`). Every case, session case and
//! adversarial recipe must pass, and every output must be a fixed point of its rule.
//! The shared checks skip, with one line, when the shared folder is absent; the
//! project's folder is part of the repository and must be there.

use std::borrow::Cow;
use std::path::PathBuf;

use sessionpipe_redact::vectors::{self, CaseResult, Kind};

fn vector_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/conformance/redaction");
    if dir.is_dir() {
        Some(dir)
    } else {
        println!("skipped: no conformance vectors at {}", dir.display());
        None
    }
}

/// The project's own vector files, beside the crates.
fn project_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../conformance/redaction")
}

fn results() -> Option<Vec<CaseResult>> {
    let dir = vector_dir()?;
    Some(vectors::check_dir(&dir).unwrap_or_else(|e| panic!("{e}")))
}

fn assert_all_pass(results: &[CaseResult], file: &str) {
    let mine: Vec<&CaseResult> = results.iter().filter(|r| r.file == file).collect();
    assert!(!mine.is_empty(), "no results for {file}");
    for r in &mine {
        println!("{r}");
    }
    let failed: Vec<String> = mine
        .iter()
        .filter(|r| !r.passed)
        .map(|r| r.to_string())
        .collect();
    println!("{}", vectors::summary(results));
    assert!(
        failed.is_empty(),
        "{} failed:\n{}",
        failed.len(),
        failed.join("\n")
    );
}

#[test]
fn secrets_vectors_pass() {
    let Some(results) = results() else { return };
    assert_all_pass(&results, "secrets.json");
}

#[test]
fn pii_vectors_pass() {
    let Some(results) = results() else { return };
    assert_all_pass(&results, "pii.json");
}

#[test]
fn project_vectors_pass() {
    let dir = project_dir();
    let results = vectors::check_dir(&dir).unwrap_or_else(|e| panic!("{e}"));
    assert_all_pass(&results, "secrets-families.json");
    let failed: Vec<String> = results
        .iter()
        .filter(|r| !r.passed)
        .map(|r| r.to_string())
        .collect();
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

#[test]
fn adversarial_recipes_are_timed() {
    let Some(results) = results() else { return };
    let adversarial: Vec<&CaseResult> = results
        .iter()
        .filter(|r| r.kind == Kind::Adversarial)
        .collect();
    assert!(adversarial.len() >= 5);
    for r in adversarial {
        assert!(r.elapsed.is_some() && r.max_ms.is_some(), "{r}");
    }
}

/// Vector text a rule leaves alone comes back borrowed, not copied. (Idempotence is
/// checked with every case, by `vectors::check_document`.)
#[test]
fn unchanged_vector_text_is_borrowed() {
    let Some(dir) = vector_dir() else { return };
    let home = Some("/Users/misha");
    let mut unchanged = 0;
    for file in ["secrets.json", "pii.json"] {
        let text = std::fs::read_to_string(dir.join(file)).expect("read vector file");
        let doc: serde_json::Value = serde_json::from_str(&text).expect("vector JSON");
        for s in vectors::texts(&doc).expect("vector texts") {
            for out in [
                sessionpipe_redact::secrets(&s),
                sessionpipe_redact::pii(&s, home),
            ] {
                if out == s.as_str() {
                    assert!(
                        matches!(out, Cow::Borrowed(_)),
                        "unchanged but owned: {s:?}"
                    );
                    unchanged += 1;
                }
            }
        }
    }
    assert!(unchanged > 50);
}

/// The same for the project's vectors.
#[test]
fn unchanged_project_vector_text_is_borrowed() {
    let text = std::fs::read_to_string(project_dir().join("secrets-families.json"))
        .expect("read vector file");
    let doc: serde_json::Value = serde_json::from_str(&text).expect("vector JSON");
    let mut unchanged = 0;
    for s in vectors::texts(&doc).expect("vector texts") {
        let out = sessionpipe_redact::secrets(&s);
        if out == s.as_str() {
            assert!(
                matches!(out, Cow::Borrowed(_)),
                "unchanged but owned: {s:?}"
            );
            unchanged += 1;
        }
    }
    assert!(unchanged > 10, "{unchanged}");
}
