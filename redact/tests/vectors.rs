//! The shared conformance vectors (`../shared/conformance/redaction/*.json` from the
//! workspace root): every case, session case and adversarial recipe must pass, and
//! every output must be a fixed point of its rule. Skips, with one line, when the
//! shared folder is absent.

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

/// Both rules, run again on every vector output and on every vector input, change
/// nothing more; and an input a rule leaves alone comes back borrowed.
#[test]
fn rules_are_idempotent_over_every_vector() {
    let Some(dir) = vector_dir() else { return };
    let mut strings = Vec::new();
    for file in ["secrets.json", "pii.json"] {
        let text = std::fs::read_to_string(dir.join(file)).expect("read vector file");
        let doc: serde_json::Value = serde_json::from_str(&text).expect("vector JSON");
        let abc = doc["rnd_default_abc"]
            .as_str()
            .unwrap_or(vectors::DEFAULT_ABC);
        for case in doc["cases"].as_array().into_iter().flatten() {
            strings.extend(case["out"].as_str().map(str::to_string));
            strings.extend(case["in"].as_str().map(str::to_string));
            if let (Some(t), Some(parts)) = (case["template"].as_str(), case["t"].as_array()) {
                strings.push(vectors::expand_template(t, parts, abc).unwrap());
            }
        }
    }
    assert!(strings.len() > 50);
    let home = Some("/Users/misha");
    for s in &strings {
        let once = sessionpipe_redact::secrets(s);
        assert_eq!(sessionpipe_redact::secrets(&once), once, "secrets on {s:?}");
        let once = sessionpipe_redact::pii(s, home);
        assert_eq!(sessionpipe_redact::pii(&once, home), once, "pii on {s:?}");
        let both = sessionpipe_redact::pii(&sessionpipe_redact::secrets(s), home).into_owned();
        let again = sessionpipe_redact::pii(&sessionpipe_redact::secrets(&both), home).into_owned();
        assert_eq!(again, both, "secrets then pii on {s:?}");
        for out in [
            sessionpipe_redact::secrets(s),
            sessionpipe_redact::pii(s, home),
        ] {
            if out == s.as_str() {
                assert!(
                    matches!(out, Cow::Borrowed(_)),
                    "unchanged but owned: {s:?}"
                );
            }
        }
    }
}
