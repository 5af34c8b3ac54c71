//! Every control vector of the shared conformance data reaches its verdict
//! (`../shared/conformance/control-vectors/`, beside the workspace). When the
//! folder is not there, says so in one line and passes.

use sessionpipe_verifier::vectors;
use std::path::PathBuf;

#[test]
fn every_control_vector_reaches_its_verdict() {
    let dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/conformance/control-vectors");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        println!("no control vectors at {}: skipped", dir.display());
        return;
    };
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.expect("a folder entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{} holds no vectors", dir.display());
    let failures: Vec<String> = files
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
    println!("{} control vectors, {} failed", files.len(), failures.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
