//! `sessionpipe install | uninstall | status` for OpenCode, whose entry is a
//! whole file of ours: `~/.config/opencode/plugins/sessionpipe.js`. The person's
//! other plugins and `opencode.json` are never touched, a file of that name that
//! is not ours is kept and reported, an older plugin of ours is replaced, and
//! uninstall removes exactly our file (through a symlink, only our text). No
//! OpenCode runs here (`harnesses/real_opencode.rs` runs it); the installed
//! plugin itself runs under `node`, as OpenCode would call it, where the
//! environment it keeps is what is checked.

use serde_json::{Value, json};
use sessionpipe_testkit::{Sandbox, sandbox::bin};
use std::path::PathBuf;
use std::time::Duration;

const CONFIG: &str =
    "{\n  \"model\": \"anthropic/claude\",\n  \"plugin\": [\"opencode-wakatime\"]\n}\n";
const THEIRS: &str = "export const Mine = async () => ({});\n";

fn dir(sb: &Sandbox) -> PathBuf {
    sb.home.join(".config/opencode")
}

fn plugin(sb: &Sandbox) -> PathBuf {
    dir(sb).join("plugins/sessionpipe.js")
}

/// `sessionpipe ARGS`' output with nothing on `PATH`: OpenCode is found by
/// its folder (a skip exits 1, with the same line).
fn run(sb: &Sandbox, args: &[&str]) -> String {
    let out = sb
        .command(bin("sessionpipe"))
        .env("PATH", "/nonexistent")
        .args(args)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn person(sb: &Sandbox) {
    std::fs::create_dir_all(dir(sb).join("plugins")).unwrap();
    std::fs::write(dir(sb).join("opencode.json"), CONFIG).unwrap();
    std::fs::write(dir(sb).join("plugins/mine.js"), THEIRS).unwrap();
}

#[test]
fn install_writes_our_plugin_and_uninstall_takes_exactly_it_away() {
    let sb = Sandbox::new();
    assert_eq!(
        run(&sb, &["install", "--harness", "opencode"]),
        "opencode: not found (looked for ~/.config/opencode and `opencode` on PATH)\n"
    );
    person(&sb);
    let said = run(&sb, &["install", "--harness", "opencode"]);
    assert_eq!(
        said,
        "opencode: installed (~/.config/opencode/plugins/sessionpipe.js)\n"
    );
    let text = std::fs::read_to_string(plugin(&sb)).unwrap();
    assert!(text.starts_with("// sessionpipe's plugin for OpenCode."));
    let program = bin("sessionpipe").canonicalize().unwrap();
    let literal = serde_json::to_string(&program.to_string_lossy()).unwrap();
    assert!(
        text.contains(&format!("const SESSIONPIPE = {literal};")),
        "the drain worker's program is written in"
    );
    assert_eq!(
        run(&sb, &["status"])
            .lines()
            .find(|l| l.starts_with("opencode:"))
            .unwrap(),
        "opencode: current (~/.config/opencode/plugins/sessionpipe.js)"
    );
    assert_eq!(
        run(&sb, &["install", "--harness", "opencode"]),
        "opencode: current (~/.config/opencode/plugins/sessionpipe.js)\n"
    );

    // An older plugin of ours is outdated, and replaced.
    std::fs::write(plugin(&sb), text.replace("wake-stream", "wake-older")).unwrap();
    let status = run(&sb, &["status"]);
    assert!(
        status.contains("opencode: outdated (~/.config/opencode/plugins/sessionpipe.js"),
        "{status}"
    );
    run(&sb, &["install", "--harness", "opencode"]);
    assert_eq!(std::fs::read_to_string(plugin(&sb)).unwrap(), text);

    assert_eq!(
        run(&sb, &["uninstall", "--harness", "opencode"]),
        "opencode: removed (~/.config/opencode/plugins/sessionpipe.js)\n"
    );
    assert!(!plugin(&sb).exists());
    assert_eq!(
        std::fs::read_to_string(dir(&sb).join("opencode.json")).unwrap(),
        CONFIG
    );
    assert_eq!(
        std::fs::read_to_string(dir(&sb).join("plugins/mine.js")).unwrap(),
        THEIRS
    );
    assert_eq!(
        run(&sb, &["uninstall", "--harness", "opencode"]),
        "opencode: not installed (~/.config/opencode/plugins/sessionpipe.js)\n"
    );
}

#[test]
fn a_plugin_of_that_name_that_is_not_ours_is_kept() {
    let sb = Sandbox::new();
    person(&sb);
    std::fs::write(plugin(&sb), THEIRS).unwrap();
    let said = run(&sb, &["install", "--harness", "opencode"]);
    assert!(
        said.starts_with("opencode: skipped (~/.config/opencode/plugins/sessionpipe.js: a plugin of that name that sessionpipe did not write"),
        "{said}"
    );
    assert_eq!(std::fs::read_to_string(plugin(&sb)).unwrap(), THEIRS);
    let said = run(&sb, &["uninstall", "--harness", "opencode"]);
    assert!(said.starts_with("opencode: skipped"), "{said}");
    assert_eq!(std::fs::read_to_string(plugin(&sb)).unwrap(), THEIRS);
}

#[cfg(unix)]
#[test]
fn through_a_symlink_the_link_stays_and_only_our_text_goes() {
    let sb = Sandbox::new();
    person(&sb);
    let dots = sb.home.join("dots/sessionpipe.js");
    std::fs::create_dir_all(dots.parent().unwrap()).unwrap();
    std::fs::write(&dots, "").unwrap();
    std::os::unix::fs::symlink(&dots, plugin(&sb)).unwrap();
    let said = run(&sb, &["install", "--harness", "opencode"]);
    assert!(said.starts_with("opencode: installed"), "{said}");
    assert!(
        plugin(&sb)
            .symlink_metadata()
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(
        std::fs::read_to_string(&dots)
            .unwrap()
            .starts_with("// sessionpipe's plugin")
    );
    run(&sb, &["uninstall", "--harness", "opencode"]);
    assert!(
        plugin(&sb)
            .symlink_metadata()
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read_to_string(&dots).unwrap(), "");
}

/// The plugin keeps `SESSIONPIPE_CONTROL_SESSION` in its jobs (the daemon sets
/// it on an `opencode acp` it started for a control `start`), so the events of
/// that session go under the start's name, not OpenCode's own id; the rest of
/// OpenCode's environment stays behind.
#[test]
fn the_installed_plugin_keeps_the_name_a_control_start_gave_its_session() {
    const NAME: &str = "7c1e2d3f-4a5b-4c6d-8e7f-a0b1c2d3e4f5";
    let Some(node) = sessionpipe_testkit::harnesses::node() else {
        return;
    };
    let sb = Sandbox::new();
    person(&sb);
    run(&sb, &["install", "--harness", "opencode"]);
    // The installed text as a module `node` loads without OpenCode's loader.
    let module = sb.root().join("sessionpipe.mjs");
    std::fs::copy(plugin(&sb), &module).unwrap();
    let recorded = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/harness/opencode/session-created.json");
    let doc: Value = serde_json::from_slice(&std::fs::read(recorded).unwrap()).unwrap();
    let payload: Value = serde_json::from_str(doc["input"]["stdin"].as_str().unwrap()).unwrap();
    let event = json!({"type": "session.created", "properties": payload["properties"]});
    let project = sb.home.join("work/project");
    std::fs::create_dir_all(&project).unwrap();

    let archive = sb.root().join("jobs");
    let _daemon = sb.start_daemon_with(&[("SESSIONPIPE_JOB_ARCHIVE", archive.as_os_str())]);
    let script = r#"
        const { SessionpipePlugin } = await import(process.env.SP_PLUGIN);
        const hooks = await SessionpipePlugin({ directory: process.env.SP_DIR });
        await hooks.event({ event: JSON.parse(process.env.SP_EVENT) });
        // The wake is a connection on its way: let it be made.
        await new Promise((r) => setTimeout(r, 300));
    "#;
    let out = sb
        .command(&node)
        .args(["--input-type=module", "-e", script])
        .env("SP_PLUGIN", format!("file://{}", module.display()))
        .env("SP_DIR", &project)
        .env("SP_EVENT", event.to_string())
        .env("SESSIONPIPE_CONTROL_SESSION", format!("opencode:{NAME}"))
        .env("OPENCODE_SERVER_PASSWORD", "not-for-the-spool")
        .output()
        .unwrap();
    assert!(
        out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(),
        "{out:?}"
    );
    let events = sb.wait_for_events(1, Duration::from_secs(20));
    assert_eq!(events.len(), 1, "{events:#?}");
    assert_eq!(
        (
            events[0]["type"].as_str(),
            events[0]["harness"]["name"].as_str(),
            events[0]["session"]["id"].as_str(),
            events[0]["session"]["seq"].as_u64()
        ),
        (
            Some("session.started"),
            Some("opencode"),
            Some(NAME),
            Some(1)
        ),
        "{events:#?}"
    );
    let jobs = sessionpipe_core::conformance::harness::jobs_in(&archive).unwrap();
    assert_eq!(jobs.len(), 1);
    let kept: Vec<&str> = jobs[0].env.keys().map(String::as_str).collect();
    assert_eq!(kept, ["HOME", "SESSIONPIPE_CONTROL_SESSION"], "{kept:?}");
}
