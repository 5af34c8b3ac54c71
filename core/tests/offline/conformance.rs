//! `sessionpipe conformance` over the project's own recorded fixtures and
//! control vectors and the protocol's shared conformance data (`../shared/conformance/`, skipped with one
//! line when that folder is not beside the repository).

use sessionpipe_testkit::Sandbox;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Runs the CLI on `paths` and returns its last line, asserting nothing failed.
fn all_pass(paths: &[PathBuf]) -> String {
    let sb = Sandbox::new();
    let args: Vec<String> = std::iter::once("conformance".to_string())
        .chain(paths.iter().map(|p| p.display().to_string()))
        .collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = sb.sessionpipe(&args);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let failures: Vec<&str> = text.lines().filter(|l| l.starts_with("FAIL")).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(out.status.success(), "{text}");
    text.lines().last().unwrap().to_string()
}

#[test]
fn our_recorded_fixtures_pass() {
    let last = all_pass(&[repo().join("conformance/harness")]);
    assert!(
        last.ends_with(" passed, 0 failed") && !last.starts_with("0 "),
        "{last}"
    );
}

#[test]
fn our_control_vectors_pass() {
    let last = all_pass(&[repo().join("conformance/control-vectors")]);
    assert!(
        last.ends_with(" passed, 0 failed") && !last.starts_with("0 "),
        "{last}"
    );
}

#[test]
fn the_shared_harness_fixtures_and_redaction_vectors_pass() {
    let shared = repo().join("../shared/conformance");
    if !shared.is_dir() {
        eprintln!(
            "skipped: {} is absent (a clone elsewhere)",
            shared.display()
        );
        return;
    }
    let last = all_pass(&[shared.join("harness"), shared.join("redaction")]);
    println!("{last}");
}

#[test]
fn a_failing_fixture_fails_the_run() {
    let sb = Sandbox::new();
    let fixture = repo().join("conformance/harness/claude-code/stop.json");
    let mut doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixture).unwrap()).unwrap();
    doc["expect"][0]["data"]["reason"] = "interrupt".into();
    let bad = sb.root().join("bad.json");
    std::fs::write(&bad, doc.to_string()).unwrap();
    let out = sb.sessionpipe(&["conformance", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("FAIL") && text.contains("/data/reason"),
        "{text}"
    );
    assert!(text.ends_with("0 passed, 1 failed\n"), "{text}");
}
