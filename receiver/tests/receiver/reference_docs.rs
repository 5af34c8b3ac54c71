//! The book's `sessionpipe-receiver` reference (`docs/src/reference/
//! receiver-cli.md`) is the binary's own `--help`, kept current: the test
//! renders it and compares it with the committed page
//! (`SESSIONPIPE_WRITE_REFERENCE=1` writes it instead).

use sessionpipe_testkit::reference::{check_or_write, docs_path};
use std::process::Command;

/// What `--help` adds in a build with the test doors (the tests' build): the
/// page documents the receiver that ships.
const TEST_DOORS_SENTENCE: &str =
    " This build serves the test doors (/test/...): it is for tests only.";

#[test]
fn reference_docs_receiver_cli_is_current() {
    let out = Command::new(env!("CARGO_BIN_EXE_sessionpipe-receiver"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    let help = help.replace(TEST_DOORS_SENTENCE, "");
    assert!(!help.contains("test doors"), "{help}");
    let help: Vec<&str> = help.lines().map(str::trim_end).collect();
    let page = format!(
        "# sessionpipe-receiver command line\n\n\
         <!-- Generated from the code by receiver/tests/receiver/reference_docs.rs: do not edit.\n     \
         SESSIONPIPE_WRITE_REFERENCE=1 cargo test -p sessionpipe-receiver --test receiver reference_docs -->\n\n\
         The receiver's `--help`. How to run it: [Your phone](../phone.md#a-receiver-of-your-own)\n\
         and [Running a receiver for a team](../receiver-team.md).\n\n```text\n{}\n```\n",
        help.join("\n").trim_end()
    );
    check_or_write(
        &docs_path(env!("CARGO_MANIFEST_DIR"), "reference/receiver-cli.md"),
        &page,
        "cargo test -p sessionpipe-receiver --test receiver reference_docs",
    );
}
