//! Real `git` for tests of what sessionpipe does in a repository (a start's
//! own worktree, `worktrees prune`): one call, its identity given on the
//! command line so no global config is read or needed. Runs only what a test
//! asks, in the folder it names.

use std::path::Path;
use std::process::Command;

/// `git <args>` in `dir`; its stdout. Panics with git's words when it fails.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("git writes UTF-8 here")
}
