//! `sessionpipe ask` between two real harnesses, offline: a real Claude Code
//! session runs `sessionpipe ask codex …` with its Bash tool; the daemon starts
//! a real `codex exec` in the allowed folder with the task and the ask's
//! paragraph; Codex's whole answer comes back on the command's stdout, which
//! is what Claude Code's model reads next.

use sessionpipe_testkit::codex::Codex;
use sessionpipe_testkit::control;
use sessionpipe_testkit::openai::{MockOpenAI, Step};
use sessionpipe_testkit::{MockAnthropic, Sandbox, Script, Turn};
use std::time::Duration;

#[test]
fn a_real_claude_session_asks_a_real_codex_and_reads_its_whole_answer() {
    let (Some(claude), Some(codex_bin)) = (
        sessionpipe_testkit::harnesses::claude(),
        sessionpipe_testkit::codex::binary(),
    ) else {
        return;
    };
    let sb = Sandbox::new();
    let project = sb.home.join("work/project");
    std::fs::create_dir_all(&project).unwrap();
    let codex = Codex::install(&sb, codex_bin);
    let openai = MockOpenAI::start(vec![Step::text(
        "Codex here: the answer is 42, checked twice.",
    )]);
    let config = codex.home.join("config.toml");
    let text = std::fs::read_to_string(&config).unwrap().replacen(
        "name = \"mock\"\n",
        &format!("name = \"mock\"\nbase_url = \"{}\"\n", openai.base_url()),
        1,
    );
    std::fs::write(&config, text).unwrap();
    let control::PairedMachine {
        rx: _rx,
        device: _device,
    } = control::paired_machine(&sb, &project);
    let tmp = sb.root().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let _daemon = sb.start_daemon_with(&[
        ("PATH", codex.path.as_ref()),
        ("CODEX_HOME", codex.home.as_os_str()),
        ("MOCK_API_KEY", "not-a-key".as_ref()),
        ("TMPDIR", tmp.as_os_str()),
    ]);
    std::thread::sleep(Duration::from_millis(500));
    let sessionpipe = sessionpipe_testkit::sandbox::bin("sessionpipe");
    let path = format!(
        "{}:{}",
        sessionpipe.parent().unwrap().display(),
        Sandbox::path_with(claude.parent().unwrap())
    );
    let anthropic = MockAnthropic::start(Script::new([
        Turn::bash("sessionpipe ask codex What is the answer?"),
        Turn::text("Codex answered."),
    ]));
    let out = sb
        .command(&claude)
        .current_dir(&project)
        .env("PATH", &path)
        .env("ANTHROPIC_BASE_URL", anthropic.base_url())
        .env("ANTHROPIC_API_KEY", "sk-test-not-a-key")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("SHELL", "/bin/bash")
        .args([
            "-p",
            "Ask Codex.",
            "--allowedTools",
            "Bash",
            "--output-format",
            "json",
        ])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let session = result["session_id"].as_str().unwrap().to_string();
    // Claude Code's model read Codex's whole answer as the command's output.
    let read = anthropic.requests().iter().any(|r| {
        String::from_utf8_lossy(&r.body).contains("Codex here: the answer is 42, checked twice.")
    });
    assert!(read, "the tool result carries Codex's answer");
    // Codex was asked the task, with the paragraph that says who asked.
    let asked = openai
        .requests()
        .iter()
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(asked.contains("What is the answer?"), "codex got the task");
    assert!(
        asked.contains(&format!(
            "(Asked by claude-code:{session} on this machine with sessionpipe ask."
        )),
        "the asker is the Claude Code session: {}",
        asked.chars().take(2000).collect::<String>()
    );
}
