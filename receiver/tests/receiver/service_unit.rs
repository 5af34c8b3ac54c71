//! The systemd unit in `installers/receiver/` passes `systemd-analyze verify`
//! with this build's binary in its `ExecStart` (skipped, saying so, where
//! systemd's tools are not installed).

use std::path::Path;
use std::process::Command;

#[test]
fn the_service_unit_verifies() {
    if Command::new("systemd-analyze")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: systemd-analyze is not installed");
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let unit =
        std::fs::read_to_string(root.join("installers/receiver/sessionpipe-receiver.service"))
            .unwrap();
    assert!(unit.contains("ExecStart=/usr/bin/sessionpipe-receiver "));
    let bin = env!("CARGO_BIN_EXE_sessionpipe-receiver");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessionpipe-receiver.service");
    std::fs::write(&path, unit.replace("/usr/bin/sessionpipe-receiver", bin)).unwrap();
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&path)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && said.trim().is_empty(), "{said}");
}
