//! `sessionpipe doctor` on the ACP agents installed here: each one found (by
//! `SESSIONPIPE_ACP_<HARNESS>`, the scripted test agent standing in for it)
//! is listed with its program, whether it also reports through hooks and the
//! state of those hooks, and whether control drives it over ACP; with none
//! found (an empty `PATH`, no override), one line says so and how one is found.

use sessionpipe_testkit::Sandbox;
use sessionpipe_testkit::sandbox::bin;

fn doctor(sb: &Sandbox, env: &[(&str, &std::ffi::OsStr)]) -> String {
    let mut c = sb.command(bin("sessionpipe"));
    c.arg("doctor");
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().expect("doctor runs");
    assert!(
        out.status.code() == Some(0) || out.status.code() == Some(1),
        "{:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The one line doctor says about `harness` as an ACP agent.
fn acp_line<'a>(said: &'a str, harness: &str) -> Option<&'a str> {
    let head = format!("ACP agent {harness} (");
    said.lines().find(|l| l.contains(&head))
}

#[test]
fn doctor_lists_the_installed_acp_agents_with_their_hooks_and_driver() {
    let sb = Sandbox::new();
    // Gemini CLI's settings exist, so its hooks are known (not installed yet).
    std::fs::create_dir_all(sb.home.join(".gemini")).unwrap();
    std::fs::write(sb.home.join(".gemini/settings.json"), "{}\n").unwrap();
    let agent = bin("acp-test-agent");
    let empty = sb.root().join("empty-path");
    std::fs::create_dir_all(&empty).unwrap();
    let env = [
        ("PATH", empty.as_os_str()),
        ("SESSIONPIPE_ACP_GOOSE", agent.as_os_str()),
        ("SESSIONPIPE_ACP_GEMINI_CLI", agent.as_os_str()),
        // Named but not a file: not installed.
        ("SESSIONPIPE_ACP_KILO", "/no/such/agent".as_ref()),
    ];
    let said = doctor(&sb, &env);
    let shown = agent.display().to_string();

    let goose = acp_line(&said, "goose").unwrap_or_else(|| panic!("goose listed: {said}"));
    assert!(goose.starts_with("ok "), "{goose}");
    assert!(goose.contains("goose (Block)"), "{goose}");
    assert!(goose.contains(&shown), "the program found: {goose}");
    assert!(goose.contains("ACP only, no hooks"), "{goose}");
    assert!(goose.contains("control drives it over ACP"), "{goose}");

    let gemini = acp_line(&said, "gemini-cli").unwrap_or_else(|| panic!("gemini listed: {said}"));
    assert!(gemini.contains("Gemini CLI (Google)"), "{gemini}");
    assert!(gemini.contains(&shown), "{gemini}");
    assert!(
        gemini.contains(
            "reports through hooks too (not installed: `sessionpipe install --harness gemini-cli`)"
        ),
        "{gemini}"
    );
    assert!(gemini.contains("control drives it over ACP"), "{gemini}");

    assert!(acp_line(&said, "kilo").is_none(), "a missing file: {said}");
    assert!(!said.contains("no ACP agent is installed"), "{said}");
    // The table's order: Gemini CLI before goose.
    assert!(said.find("ACP agent gemini-cli").unwrap() < said.find("ACP agent goose").unwrap());

    // Once its hooks are installed, doctor says so on the same line.
    let mut install = sb.command(bin("sessionpipe"));
    install.args(["install", "--harness", "gemini-cli"]);
    for (k, v) in &env {
        install.env(k, v);
    }
    let out = install.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = doctor(&sb, &env);
    let gemini = acp_line(&said, "gemini-cli").unwrap_or_else(|| panic!("{said}"));
    assert!(
        gemini.contains("reports through hooks too (installed)"),
        "{gemini}"
    );
}

#[test]
fn doctor_says_how_an_agent_is_found_when_none_is() {
    let sb = Sandbox::new();
    let empty = sb.root().join("empty-path");
    std::fs::create_dir_all(&empty).unwrap();
    let said = doctor(&sb, &[("PATH", empty.as_os_str())]);
    assert!(
        !said
            .lines()
            .any(|l| l.starts_with("ok ") && l.contains("ACP agent ")),
        "{said}"
    );
    let line = said
        .lines()
        .find(|l| l.contains("no ACP agent is installed here"))
        .unwrap_or_else(|| panic!("one line says none is: {said}"));
    assert!(line.starts_with("note "), "{line}");
    assert!(line.contains("on PATH"), "{line}");
    assert!(line.contains("SESSIONPIPE_ACP_<HARNESS>"), "{line}");
}
