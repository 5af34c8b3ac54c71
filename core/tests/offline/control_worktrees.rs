//! A started session's own worktree (`control worktrees on`) through the
//! real daemon, the workspace receiver and real git, with Antigravity's
//! scripted stand-in (`testkit::agy`, not the real binary: it records the
//! folder it runs in) as the harness: off by default and said by `control
//! status`; on, a start in a repository's subfolder runs in that subfolder of
//! a new worktree on `sessionpipe/<short id>`, placed where the control
//! folders admit it, hidden from the checkout, and recorded 0600; a prompt
//! behind it runs in the same worktree; a start whose worktree cannot be made
//! fails with git's words and runs nowhere; one that fails after its
//! worktree was made leaves none behind; with the setting off again a
//! start runs in the checkout. `worktrees list` shows the worktree, `prune`
//! keeps it while its session is not known to have ended, and drops a record
//! whose folder is gone.

use serde_json::{Value, json};
use sessionpipe_testkit::Sandbox;
use sessionpipe_testkit::control::{self, Device};
use sessionpipe_testkit::git::git;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A repository at `dir` with one commit holding `app/main.txt`.
fn repository(dir: &Path) {
    std::fs::create_dir_all(dir.join("app")).unwrap();
    std::fs::write(dir.join("app/main.txt"), "main\n").unwrap();
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["add", "."]);
    git(dir, &["commit", "-q", "-m", "first"]);
}

/// The folders the stand-in's runs (not its `--help` calls) ran in, in order.
fn runs_in(bin: &Path) -> Vec<PathBuf> {
    (1..=30)
        .filter_map(|n| {
            let argv = std::fs::read_to_string(bin.join(format!("agy-argv-{n}.txt"))).ok()?;
            if argv.lines().next() == Some("--help") {
                return None;
            }
            let cwd = std::fs::read_to_string(bin.join(format!("agy-cwd-{n}.txt"))).ok()?;
            Some(PathBuf::from(cwd.trim_end()))
        })
        .collect()
}

fn json_of(sb: &Sandbox, args: &[&str]) -> Value {
    serde_json::from_str(&sb.sessionpipe_ok(args)).unwrap()
}

fn start(device: &Device, session: &str, cwd: &Path) -> Value {
    let id = device.enqueue(
        &device.sign_start(session, "Tidy the folder.", cwd, &[]),
        60,
    );
    device.final_ack(&id, Duration::from_secs(30))
}

#[test]
fn a_start_in_a_repository_runs_in_its_own_worktree_and_a_prompt_follows_it_there() {
    let sb = Sandbox::new();
    let project = sb.home.join("work/project");
    repository(&project);
    let project = std::fs::canonicalize(&project).unwrap();
    let app = project.join("app");
    let bin = sb.root().join("agy-bin");
    std::fs::create_dir_all(&bin).unwrap();
    sessionpipe_testkit::agy::stand_in(&bin, "Stand-in answer: all done.");
    // Only the project is a control folder: the worktree goes inside it.
    let control::PairedMachine { rx: _rx, device } = control::paired_machine(&sb, &project);
    let path = Sandbox::path_with(&bin);
    let _daemon = sb.start_daemon_with(&[("PATH", path.as_ref())]);
    device.wait_hello(Duration::from_secs(20), |h| {
        h["starts"]["antigravity"].is_object()
    });

    // Off by default, and said so.
    assert_eq!(
        json_of(&sb, &["control", "status", "--json"])["worktrees"],
        false
    );
    assert!(
        sb.sessionpipe_ok(&["control", "status"])
            .contains("worktrees: off")
    );
    assert_eq!(
        sb.sessionpipe_ok(&["control", "worktrees", "on"]),
        "worktrees: on\n"
    );
    assert_eq!(
        json_of(&sb, &["control", "status", "--json"])["worktrees"],
        true
    );
    let bad = sb.sessionpipe(&["control", "worktrees", "maybe"]);
    assert_eq!(bad.status.code(), Some(2), "bad input is a usage error");

    // On (read live by the running daemon): the start runs in `app` of its
    // own worktree, and a prompt right behind it runs there too.
    let name = "7c1e5a3b-2d4f-4a6b-8c9d-0e1f2a3b4c5d";
    let session = format!("antigravity:{name}");
    let id = device.enqueue(
        &device.sign_start(&session, "Tidy the folder.", &app, &[]),
        60,
    );
    let behind = device.enqueue(
        &device.sign("prompt", &session, json!({"text": "Then the docs."})),
        60,
    );
    let ack = device.final_ack(&id, Duration::from_secs(30));
    assert_eq!(ack["outcome"], "delivered", "{ack}");
    let ack = device.final_ack(&behind, Duration::from_secs(30));
    assert_eq!(ack["outcome"], "delivered", "{ack}");
    let worktree = project.join(".sessionpipe/worktrees/7c1e5a3b");
    assert_eq!(
        runs_in(&bin),
        vec![worktree.join("app"), worktree.join("app")],
        "the start and the prompt behind it, both in the worktree"
    );
    assert_eq!(
        git(&worktree, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
        "sessionpipe/7c1e5a3b"
    );
    assert!(worktree.join("app/main.txt").is_file());
    // The checkout is as it was: on its branch, nothing new in its status.
    assert_eq!(
        git(&project, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
        "main"
    );
    assert_eq!(git(&project, &["status", "--porcelain"]), "");
    let record = sb.state.join("worktrees.json");
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&record).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    // A second start whose branch exists already: failed with why, run
    // nowhere (never in the checkout instead).
    let clash = "7c1e5a3b-0000-4000-8000-000000000000";
    let ack = start(&device, &format!("antigravity:{clash}"), &app);
    assert_eq!(ack["outcome"], "failed", "{ack}");
    let detail = ack["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("worktree could not be made") && detail.contains("already exists"),
        "{ack}"
    );
    assert_eq!(runs_in(&bin).len(), 2, "nothing ran");

    // A start that fails after its worktree was made (a file the receiver
    // does not have) leaves none behind: nothing was written in it.
    let lost = control::file_entry("notes.txt", "text/plain", b"never uploaded");
    let failed = "5d4c3b2a-1f0e-4d9c-8b7a-6f5e4d3c2b1a";
    let msg = device.enqueue(
        &device.sign_start(&format!("antigravity:{failed}"), "Read it.", &app, &[lost]),
        60,
    );
    let ack = device.final_ack(&msg, Duration::from_secs(30));
    assert_eq!(
        (ack["outcome"].as_str(), ack["code"].as_str()),
        (Some("failed"), Some("file")),
        "{ack}"
    );
    assert!(!project.join(".sessionpipe/worktrees/5d4c3b2a").exists());
    assert_eq!(
        git(&project, &["branch", "--list", "sessionpipe/5d4c3b2a"]),
        "",
        "its branch went too"
    );
    assert_eq!(runs_in(&bin).len(), 2, "nothing ran");

    // Listed with its branch, folder and state; the stand-in's session has
    // no record in the outbox, so prune keeps it and says why.
    let listed = json_of(&sb, &["worktrees", "list", "--json"]);
    let all = listed["worktrees"].as_array().unwrap();
    assert_eq!(all.len(), 1, "{listed}");
    let w = &all[0];
    assert_eq!(
        (
            w["session"].as_str(),
            w["branch"].as_str(),
            w["path"].as_str(),
            w["state"].as_str(),
            w["uncommitted"].as_u64(),
            w["unpushed"].as_u64()
        ),
        (
            Some(session.as_str()),
            Some("sessionpipe/7c1e5a3b"),
            worktree.to_str(),
            Some("unknown"),
            Some(0),
            Some(0)
        ),
        "{listed}"
    );
    let pruned = sb.sessionpipe_ok(&["worktrees", "prune"]);
    assert_eq!(
        pruned,
        format!(
            "kept {}: the outbox has no record of its session\n",
            worktree.display()
        )
    );
    assert!(worktree.is_dir());

    // Off again: a start runs in the checkout's folder itself.
    assert_eq!(
        sb.sessionpipe_ok(&["control", "worktrees", "off"]),
        "worktrees: off\n"
    );
    let ack = start(
        &device,
        "antigravity:9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b",
        &app,
    );
    assert_eq!(ack["outcome"], "delivered", "{ack}");
    assert_eq!(runs_in(&bin).last(), Some(&app));

    // A recorded worktree whose folder is gone loses its line, git's entry
    // of it and its branch (nothing on it), and nothing else.
    std::fs::remove_dir_all(&worktree).unwrap();
    let pruned = sb.sessionpipe_ok(&["worktrees", "prune", "--dry-run"]);
    assert_eq!(
        pruned,
        format!(
            "would drop {} from the record: its folder is gone\n",
            worktree.display()
        )
    );
    let pruned = sb.sessionpipe_ok(&["worktrees", "prune"]);
    let said = format!(
        "dropped {} from the record, and its branch sessionpipe/",
        worktree.display()
    );
    assert!(
        pruned.starts_with(&said) && pruned.ends_with(": its folder is gone\n"),
        "{pruned}"
    );
    assert_eq!(
        git(&project, &["branch", "--list", "sessionpipe/*"]),
        "",
        "its branch went too"
    );
    assert!(
        !git(&project, &["worktree", "list"]).contains(&*worktree.to_string_lossy()),
        "and git's entry of it"
    );
    assert_eq!(
        json_of(&sb, &["worktrees", "list", "--json"])["worktrees"],
        json!([])
    );
    assert!(
        project.join("app/main.txt").is_file(),
        "the checkout is untouched"
    );
}
