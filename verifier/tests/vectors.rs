//! Every control vector reaches its verdict: the protocol's shared ones
//! (`../shared/conformance/control-vectors/`, beside the workspace; when the
//! folder is not there, says so in one line) and the project's own
//! (`conformance/control-vectors/`, always there).

use sessionpipe_verifier::vectors;
use std::path::{Path, PathBuf};

/// The failures among the vectors of `dir`, and how many there were.
fn judge_folder(dir: &Path) -> (usize, Vec<String>) {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a folder entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{} holds no vectors", dir.display());
    let failures = files
        .iter()
        .filter_map(|path| {
            let text = std::fs::read_to_string(path).expect("a vector reads");
            let doc: serde_json::Value = serde_json::from_str(&text).expect("a vector is JSON");
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if !vectors::is_vector(&doc) {
                return Some(format!("{name}: not a control vector"));
            }
            vectors::judge(&doc).err().map(|e| format!("{name}: {e}"))
        })
        .collect();
    (files.len(), failures)
}

#[test]
fn every_control_vector_reaches_its_verdict() {
    let dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/conformance/control-vectors");
    if !dir.is_dir() {
        println!("no control vectors at {}: skipped", dir.display());
        return;
    }
    let (count, failures) = judge_folder(&dir);
    println!("{count} control vectors, {} failed", failures.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_vector_of_the_project_reaches_its_verdict() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../conformance/control-vectors");
    let (count, failures) = judge_folder(&dir);
    println!(
        "{count} of the project's control vectors, {} failed",
        failures.len()
    );
    assert!(count >= 30, "only {count} vectors");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
