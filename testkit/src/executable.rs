//! Owns: putting a small program (a `sh` script) on disk for a test to run at once.
//! Must not: run it, or hold a descriptor that writes it.
//!
//! Why a child writes it: a file this process held open for writing is copied into
//! every child another test thread forks in that moment, and stays open there until
//! that child execs; running the file then fails "Text file busy" (ETXTBSY). CI met
//! exactly that. A `sh` of its own writes the file here, so no descriptor that
//! writes it ever lives in the test process.

use std::path::Path;

/// Writes `text` to `path`, mode 0755 (the parent folder must exist).
#[cfg(unix)]
pub fn write_executable(path: &Path, text: &str) {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut child = Command::new("/bin/sh")
        .args(["-c", r#"cat > "$1" && chmod 755 "$1""#, "sh"])
        .arg(path)
        .stdin(Stdio::piped())
        .spawn()
        .expect("/bin/sh runs");
    child
        .stdin
        .take()
        .expect("a piped stdin")
        .write_all(text.as_bytes())
        .expect("the script reaches sh");
    let status = child.wait().expect("sh exits");
    assert!(status.success(), "{} is written", path.display());
}

/// Writes `text` to `path` (Windows has no mode bits and no fork to race).
#[cfg(not(unix))]
pub fn write_executable(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap_or_else(|e| panic!("{} is written: {e}", path.display()));
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn written_whole_and_runnable() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("it's a script");
        write_executable(&path, "#!/bin/sh\necho \"ran $1\"\n");
        let out = std::process::Command::new(&path).arg("x").output().unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "ran x\n");
    }
}
