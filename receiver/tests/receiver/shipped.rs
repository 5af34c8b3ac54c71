//! The receiver as it ships has no test doors. Built the way a release is
//! (`installers/build-receiver.sh`: the package alone, without `test-doors`;
//! the dev profile here, for time) and started the way the book says (the
//! page, open pairing, a data folder), it answers 404 at every test door,
//! from loopback with its own token, while the events side works; the test
//! build, with the feature, opens them. The tray app, which runs a receiver
//! in its own process, is resolved without the feature too.

use crate::common::{TOKEN, started};
use reqwest::blocking::Client;
use serde_json::{Value, json};
use sessionpipe_testkit::sandbox::UrlProcess;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Every test door, and a path under `/test/` that never was one.
const DOORS: &[(&str, &str)] = &[
    ("POST", "/test/faults"),
    ("POST", "/test/pair/approve"),
    ("POST", "/test/control/enqueue"),
    (
        "GET",
        "/test/control/messages?machine=m_AAAAAAAAAAAAAAAAAAAAAA",
    ),
    ("POST", "/test/control/files"),
    ("GET", "/v1/sessions/test-harness:shipped"),
    ("GET", "/test/anything"),
    ("POST", "/test/anything"),
];

/// The binary `installers/build-receiver.sh --debug` makes, in a target folder
/// of its own beside this build's (sharing its compiled dependencies).
fn shipped_build() -> PathBuf {
    let this = Path::new(env!("CARGO_BIN_EXE_sessionpipe-receiver"));
    let target = this
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>/<bin>");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = Command::new("bash")
        .arg(root.join("installers/build-receiver.sh"))
        .arg("--debug")
        .env("CARGO_TARGET_DIR", target.join("shipped"))
        .env("CARGO_BUILD_BUILD_DIR", target)
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "build-receiver.sh: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout);
    PathBuf::from(said.lines().last().expect("the binary's path").trim())
}

fn start(bin: &Path, data: &Path) -> UrlProcess {
    let mut cmd = Command::new(bin);
    cmd.args([
        "--token",
        TOKEN,
        "--quiet",
        "--page",
        "--open-pairing",
        "--data",
    ])
    .arg(data);
    UrlProcess::spawn(cmd)
}

/// The status and body of `method path` with the receiver's own token.
fn knock(c: &Client, url: &str, method: &str, path: &str) -> (u16, Value) {
    let r = c
        .request(method.parse().unwrap(), format!("{url}{path}"))
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .unwrap();
    let status = r.status().as_u16();
    (
        status,
        serde_json::from_str(&r.text().unwrap()).unwrap_or(Value::Null),
    )
}

fn help(bin: &Path) -> String {
    let out = Command::new(bin).arg("--help").output().unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_shipped_build_answers_404_at_every_test_door() {
    let bin = shipped_build();
    let data = tempfile::tempdir().unwrap();
    let rx = start(&bin, data.path());
    let c = Client::new();
    assert_eq!(knock(&c, &rx.url, "GET", "/.well-known/sessionpipe").0, 200);
    let batch = c
        .post(format!("{}/v1/events", rx.url))
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .body(json!({"events": [started("shipped", 0)]}).to_string())
        .send()
        .unwrap();
    assert_eq!(batch.status(), 202, "the events side works");
    for (method, path) in DOORS {
        assert_eq!(
            knock(&c, &rx.url, method, path),
            (404, json!({"reason": "not_found"})),
            "{method} {path}"
        );
    }
    let said = help(&bin);
    assert!(said.contains("self-hostable"), "{said}");
    assert!(!said.contains("test doors"), "{said}");

    // The same doors are there in the test build, which the test kit makes.
    let test_build = Path::new(env!("CARGO_BIN_EXE_sessionpipe-receiver"));
    let data = tempfile::tempdir().unwrap();
    let rx = start(test_build, data.path());
    assert_eq!(
        knock(&c, &rx.url, "POST", "/test/faults"),
        (200, json!({"armed": null}))
    );
    assert!(help(test_build).contains("test doors"));
}

#[test]
fn the_tray_app_s_receiver_has_no_test_doors() {
    // What `tauri build` compiles: the app's package alone, its normal
    // dependencies.
    let out = Command::new(env!("CARGO"))
        .args(["tree", "--quiet", "--offline", "-p", "sessionpipe-app"])
        .args(["-e", "features,normal", "-i", "sessionpipe-receiver"])
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .output()
        .expect("cargo runs");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.contains("sessionpipe-app"), "{said}");
    assert!(!said.contains("test-doors"), "{said}");
}
