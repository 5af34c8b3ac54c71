//! Control's headless rungs on the real Codex, offline: a signed `start` runs
//! `codex exec --json` in the allowed folder with the sandbox flag of the level
//! it asked for (seen in the real process's own arguments), Codex picks the
//! thread id and the start's id stays the session's name; a `prompt` to that
//! name resumes the thread with `codex exec resume` and the safe mode's config
//! override; each reply comes back in its ack.

use serde_json::{Value, json};
use sessionpipe_testkit::Sandbox;
use sessionpipe_testkit::codex::Codex;
use sessionpipe_testkit::control;
use sessionpipe_testkit::openai::{MockOpenAI, Step};
use std::time::{Duration, Instant};

/// Every running process's arguments that start with `codex`'s binary.
fn codex_processes(binary: &std::path::Path) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(raw) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<String> = raw
            .split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        if args
            .first()
            .is_some_and(|a| a.ends_with("/codex") || std::path::Path::new(a) == binary)
        {
            out.push(args);
        }
    }
    out
}

/// The final ack of `id`, and the arguments of the Codex processes seen
/// running meanwhile.
fn final_and_processes(
    device: &control::Device,
    binary: &std::path::Path,
    id: &str,
    cwd: &std::path::Path,
) -> (Value, Vec<Vec<String>>) {
    let until = Instant::now() + Duration::from_secs(120);
    let mut seen = Vec::new();
    let cwd = cwd.to_string_lossy().into_owned();
    loop {
        // This test's runs only (another test's Codex may run beside it).
        for p in codex_processes(binary) {
            if !seen.contains(&p) && (p.contains(&cwd) || p.iter().any(|a| a == "resume")) {
                seen.push(p);
            }
        }
        let view = device.view();
        let m = view["messages"]
            .as_array()
            .and_then(|ms| ms.iter().find(|m| m["id"] == id).cloned())
            .unwrap_or(Value::Null);
        if !m["acks"]["final"].is_null() {
            return (m["acks"]["final"].clone(), seen);
        }
        assert!(Instant::now() < until, "no final ack: {view}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_signed_start_and_a_resume_run_real_codex_exec_with_the_levels_flags() {
    let Some(binary) = sessionpipe_testkit::codex::binary() else {
        return;
    };
    let sb = Sandbox::new();
    let project = sb.home.join("work/project");
    std::fs::create_dir_all(&project).unwrap();
    let codex = Codex::install(&sb, binary.clone());
    let api = MockOpenAI::start(vec![
        Step::text("Started: I looked around."),
        Step::text("Resumed: still here."),
    ]);
    // The person's config names the provider's address (the daemon's runs
    // read it as a terminal's would).
    let config = codex.home.join("config.toml");
    let text = std::fs::read_to_string(&config).unwrap().replacen(
        "name = \"mock\"\n",
        &format!("name = \"mock\"\nbase_url = \"{}\"\n", api.base_url()),
        1,
    );
    std::fs::write(&config, text).unwrap();
    let control::PairedMachine { rx, device } = control::paired_machine(&sb, &project);
    let tmp = sb.root().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let _daemon = sb.start_daemon_with(&[
        ("PATH", codex.path.as_ref()),
        ("CODEX_HOME", codex.home.as_os_str()),
        ("MOCK_API_KEY", "not-a-key".as_ref()),
        ("TMPDIR", tmp.as_os_str()),
        ("SHELL", "/bin/bash".as_ref()),
    ]);
    let hello = device.wait_hello(Duration::from_secs(20), |h| {
        h["starts"]["codex"].is_object()
    });
    assert_eq!(
        hello["starts"]["codex"]["levels"],
        json!(["read", "safe"]),
        "a safe machine offers Codex's read and safe: {hello}"
    );

    let name = "7f1c3e52-95a4-4f0e-9b1a-3d2c1b0a9e8f";
    let session = format!("codex:{name}");
    let start = json!({"text": "Look around.", "cwd": project.to_string_lossy(), "level": "read"});
    let id = device.enqueue(&device.sign("start", &session, start), 600);
    let (ack, processes) = final_and_processes(&device, &binary, &id, &project);
    assert_eq!(
        (
            ack["outcome"].as_str(),
            ack["mode"].as_str(),
            ack["session"].as_str()
        ),
        (Some("delivered"), Some("resume"), Some(session.as_str())),
        "{ack}"
    );
    assert_eq!(ack["reply"], "Started: I looked around.", "{ack}");
    let ran = processes
        .iter()
        .find(|a| a.iter().any(|x| x == "exec"))
        .unwrap_or_else(|| panic!("no codex exec seen: {processes:?}"));
    let joined = ran.join(" ");
    assert!(
        joined.contains("exec --json --skip-git-repo-check -C"),
        "{joined}"
    );
    assert!(
        joined.contains("-s read-only"),
        "the read level's flag: {joined}"
    );
    assert!(
        !joined.contains("dangerously") && !joined.contains("danger-full-access"),
        "{joined}"
    );

    // A prompt to the start's name resumes Codex's own thread.
    let id = device.enqueue(
        &device.sign("prompt", &session, json!({"text": "And now?"})),
        600,
    );
    let (ack, processes) = final_and_processes(&device, &binary, &id, &project);
    assert_eq!(
        (
            ack["outcome"].as_str(),
            ack["mode"].as_str(),
            ack["reply"].as_str()
        ),
        (
            Some("delivered"),
            Some("resume"),
            Some("Resumed: still here.")
        ),
        "{ack}"
    );
    let resumed = processes
        .iter()
        .find(|a| a.iter().any(|x| x == "resume"))
        .unwrap_or_else(|| panic!("no codex exec resume seen: {processes:?}"));
    let joined = resumed.join(" ");
    assert!(
        joined.contains("sandbox_mode=\"workspace-write\""),
        "safe on resume: {joined}"
    );
    // The thread Codex picked is the one resumed, with its history.
    let thread = resumed[resumed.len() - 2].clone();
    assert_ne!(thread, name, "Codex picked its own id");
    let last = api
        .requests()
        .last()
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .unwrap();
    assert!(
        last.contains("Look around.") && last.contains("And now?"),
        "resumed with its history"
    );
    drop(rx);
}

#[test]
fn a_signed_prompt_reaches_a_running_codex_turn_at_its_stop_and_the_reply_comes_back() {
    let Some(binary) = sessionpipe_testkit::codex::binary() else {
        return;
    };
    let sb = Sandbox::new();
    let project = sb.home.join("work/project");
    std::fs::create_dir_all(&project).unwrap();
    let codex = Codex::install(&sb, binary);
    let control::PairedMachine { rx, device } = control::paired_machine(&sb, &project);
    let _daemon = sb.start_daemon();
    device.wait_hello(Duration::from_secs(15), |h| h.is_object());
    let api = MockOpenAI::start(vec![
        Step::command("sleep 4"),
        Step::text("First answer."),
        Step::text("The tests pass."),
    ]);
    let child = codex
        .exec(
            &sb,
            &api,
            &project,
            &["--dangerously-bypass-hook-trust"],
            "Do the thing.",
        )
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let evs = sb.wait_until(Duration::from_secs(60), |evs| {
        evs.iter().any(|e| e["type"] == "tool.started")
    });
    let started = evs.iter().find(|e| e["type"] == "tool.started").unwrap();
    let session = format!("codex:{}", started["session"]["id"].as_str().unwrap());
    let words = "Also run the tests, please.";
    let id = device.enqueue(
        &device.sign("prompt", &session, json!({"text": words})),
        120,
    );
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ack = device.final_ack(&id, Duration::from_secs(30));
    assert_eq!(
        (
            ack["outcome"].as_str(),
            ack["mode"].as_str(),
            ack["reply"].as_str()
        ),
        (Some("delivered"), Some("turn"), Some("The tests pass.")),
        "{ack}"
    );
    let asked = api
        .requests()
        .iter()
        .any(|r| String::from_utf8_lossy(&r.body).contains(words));
    assert!(asked, "Codex's next request carries the message");
    drop(rx);
}
