//! The binary's start-up log when `--page` has no page to show: a warning
//! saying why and what to do, and no "the page is at" line advertising an
//! address that would answer 404 or 503. The same check covers a binary built
//! without its page (no `index.html` among the built files); here a
//! `--page-dir` without one stands in for it, since the test build has a page.

use std::io::Read;
use std::process::{Command, Stdio};

const TOKEN: &str = "page-missing-test-token";

/// Starts the binary with `args`, reads the URL it prints once its start-up
/// log is written, kills it, and returns that log.
fn start_up_log(args: &[&str]) -> String {
    let data = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_sessionpipe-receiver"))
        .args(["--token", TOKEN, "--data", data.path().to_str().unwrap()])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut url = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut url,
    )
    .unwrap();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    // Everything of the start-up is logged before the URL is printed; the
    // kill may come before the signal handlers are set, so how it ends is
    // not the question here.
    child.kill().unwrap();
    let mut log = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut log)
        .unwrap();
    child.wait().unwrap();
    log
}

#[test]
fn a_page_that_cannot_be_shown_is_warned_of_and_not_advertised() {
    let empty = tempfile::tempdir().unwrap();
    let log = start_up_log(&["--page", "--page-dir", empty.path().to_str().unwrap()]);
    assert!(
        log.contains("WARN")
            && log.contains("no page to show")
            && log.contains("has no index.html"),
        "{log}"
    );
    assert!(!log.contains("the page is at"), "{log}");
    assert!(log.contains("listening on"), "{log}");
}

#[test]
fn a_page_that_can_be_shown_is_advertised_without_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("index.html"), "<!doctype html>").unwrap();
    let log = start_up_log(&["--page", "--page-dir", dir.path().to_str().unwrap()]);
    assert!(log.contains("the page is at http://localhost:"), "{log}");
    assert!(!log.contains("no page to show"), "{log}");
}
