//! Control into the real Codex, offline: the machine paired with the workspace
//! receiver (`sessionpipe control pair`, approved with a software passkey),
//! `permission.answer` commands signed for real and queued at the receiver,
//! Codex's real `PermissionRequest` hook asking the real daemon. An allow lets
//! the command run; a deny stops it and the model's next request carries the
//! note; each is acked `delivered`.
//!
//! How a real prompt comes about in `codex exec` (0.171, measured): `exec` runs
//! with approval policy `never` whatever the config says, and then never asks
//! (an escalation request is refused outright: "you cannot ask for escalated
//! permissions if the approval policy is Never"). `--approve-for-me` makes it
//! ask, through the workspace-write sandbox and an automatic reviewer, and the
//! `PermissionRequest` hook is asked first: its decision stands and the
//! reviewer never runs. What needs asking here is the person's own execpolicy
//! rule (`prefix_rule(pattern = ["touch"], decision = "prompt")`), so the
//! scripted model just runs `touch FILE`; an allowed one runs inside Codex's
//! bubblewrap sandbox (so the machine needs user namespaces). A model's
//! escalation request (`sandbox_permissions: "require_escalated"` in
//! `exec_command`'s arguments) fires the same hook and, allowed, runs outside
//! the sandbox, but the scripted Responses API does not send one.

use serde_json::{Value, json};
use sessionpipe_receiver::Handle;
use sessionpipe_testkit::codex::Codex;
use sessionpipe_testkit::control::{self, Device};
use sessionpipe_testkit::openai::{MockOpenAI, Step};
use sessionpipe_testkit::{Sandbox, sandbox::Daemon};
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::Duration;

/// A sandbox with Codex installed (asking before any `touch`), paired with a
/// receiver that queues control, and its daemon polling.
struct Setup {
    sb: Sandbox,
    codex: Codex,
    project: PathBuf,
    device: Device,
    _rx: Handle,
    _daemon: Daemon,
}

fn setup(binary: PathBuf) -> Setup {
    let sb = Sandbox::new();
    let project = sb.home.join("work/project");
    std::fs::create_dir_all(&project).unwrap();
    let codex = Codex::install(&sb, binary);
    codex.ask_before(&["touch"]);
    let control::PairedMachine { rx, device } = control::paired_machine(&sb, &project);
    let daemon = sb.start_daemon();
    // The daemon polls once it said hello.
    device.wait_hello(Duration::from_secs(15), |h| h.is_object());
    Setup {
        sb,
        codex,
        project,
        device,
        _rx: rx,
        _daemon: daemon,
    }
}

/// `codex exec` asking for approvals, its hooks run, started.
fn start(s: &Setup, api: &MockOpenAI) -> Child {
    s.codex
        .exec(
            &s.sb,
            api,
            &s.project,
            &["--approve-for-me", "--dangerously-bypass-hook-trust"],
            "Make the file.",
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("codex runs")
}

/// Waits for `child` to end well; its JSONL events.
fn finish(child: Child) -> Vec<Value> {
    let out = child.wait_with_output().expect("codex ends");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "codex failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// What the model's requests gave it back for its calls (`function_call_output`).
fn call_outputs(api: &MockOpenAI) -> Vec<String> {
    api.requests()
        .iter()
        .filter_map(|r| r.json())
        .flat_map(|b| b["input"].as_array().cloned().unwrap_or_default())
        .filter(|i| i["type"] == "function_call_output")
        .filter_map(|i| i["output"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn a_signed_allow_lets_a_real_codex_command_run_and_a_deny_stops_it_with_its_note() {
    let Some(binary) = sessionpipe_testkit::codex::binary() else {
        return;
    };
    let s = setup(binary);
    for (decision, note) in [("allow", None), ("deny", Some("Not on main, please."))] {
        let file = format!("made-by-{decision}.txt");
        let command = format!("touch {file}");
        let api = MockOpenAI::start(Step::command_then_text(&command, "Done."));
        let before = s.sb.events().len();
        let mut child = start(&s, &api);
        // The real PermissionRequest is in the outbox, and its hook waits.
        let needed =
            s.sb.wait_event_after(before, "attention.needed", Duration::from_secs(60));
        assert_eq!(needed["harness"]["event"], "PermissionRequest", "{needed}");
        assert_eq!(
            needed["data"]["message"],
            format!("Bash {command}"),
            "{needed}"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "Codex waits on the hook"
        );
        assert!(
            !s.project.join(&file).exists(),
            "nothing ran before the answer"
        );
        let session = format!("codex:{}", needed["session"]["id"].as_str().unwrap());
        let mut fields = json!({"for": needed["data"]["attention_id"], "decision": decision});
        if let Some(n) = note {
            fields["note"] = json!(n);
        }
        let id = s
            .device
            .enqueue(&s.device.sign("permission.answer", &session, fields), 120);
        let run = finish(child);
        let ack = s.device.final_ack(&id, Duration::from_secs(30));
        assert_eq!(ack["outcome"], "delivered", "{ack}");
        // Codex's own account: the command ran, or it never started.
        let ran: Vec<&Value> = run
            .iter()
            .filter(|e| e["type"] == "item.completed" && e["item"]["type"] == "command_execution")
            .map(|e| &e["item"]["status"])
            .collect();
        let made = s.project.join(&file).exists();
        match decision {
            "allow" => {
                assert!(made, "the allowed command ran");
                assert_eq!(ran, [&json!("completed")], "{run:?}");
            }
            _ => {
                assert!(!made, "the denied command did not run");
                assert!(ran.is_empty(), "{run:?}");
                let outputs = call_outputs(&api);
                assert!(
                    outputs.iter().any(|o| o.contains(note.unwrap())),
                    "the model read the note: {outputs:?}"
                );
            }
        }
    }
}
