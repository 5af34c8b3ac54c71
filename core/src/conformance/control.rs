//! Control vectors: a signed command with the machine, rp id, enrolled keys,
//! clock and used nonces to judge it by, or a pairing proof, and the verdict
//! the verifier must reach. Judged by `sessionpipe-verifier`, the code the
//! daemon runs on every command; this file only turns its word into a check.

use super::check::Failed;
use serde_json::Value;
use sessionpipe_verifier::vectors;

/// Whether `doc` is a control vector (`input.signed` or `input.proof`, and
/// `expect.ok`).
pub fn is_vector(doc: &Value) -> bool {
    vectors::is_vector(doc)
}

/// Passes when the verifier reaches the vector's verdict.
pub fn run(doc: &Value) -> Result<(), Failed> {
    vectors::judge(doc).map_err(|e| Failed(e.to_string()))
}
