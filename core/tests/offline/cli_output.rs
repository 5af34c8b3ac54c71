//! A closed stdout is the end of a command's output (`sessionpipe doctor | head
//! -1`): every command exits with its own code and says nothing on stderr, and
//! the work it was asked to do is done. The reader end of the pipe is closed
//! before the command starts, so every write fails; no timing is involved.

use sessionpipe_testkit::Sandbox;
use sessionpipe_testkit::sandbox::bin;
use std::process::Stdio;

/// Runs `sessionpipe ARGS` with a stdout nobody reads.
fn into_closed_pipe(sb: &Sandbox, args: &[&str]) -> std::process::Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    sb.command(bin("sessionpipe"))
        .args(args)
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

#[test]
fn a_closed_stdout_ends_the_output_not_the_command() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.home.join(".claude")).unwrap();
    for args in [
        &["--help"][..],
        &["doctor"],
        &["status"],
        &["status", "--json"],
        &["sink", "list"],
        &["backfill", "--json"],
        &["tail", "--no-follow"],
        &["install", "--dry-run"],
    ] {
        let out = into_closed_pipe(&sb, args);
        let code = out.status.code();
        assert!(
            code == Some(0) || code == Some(1),
            "{args:?}: {:?} {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
            "{args:?}: {stderr}"
        );
    }
    // The same exit code as with a reader, and the work done: an install still
    // writes its hooks though nobody reads its report.
    let doctor = sb.sessionpipe(&["doctor"]).status.code();
    assert_eq!(into_closed_pipe(&sb, &["doctor"]).status.code(), doctor);
    let out = into_closed_pipe(&sb, &["install", "--harness", "claude-code"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let settings = std::fs::read_to_string(sb.home.join(".claude/settings.json")).unwrap();
    assert!(settings.contains("sessionpipe-hook"), "{settings}");
}
