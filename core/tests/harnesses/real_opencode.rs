//! The real OpenCode, offline, end to end: `sessionpipe install` writes its
//! plugin into a temporary HOME's `~/.config/opencode/plugins/`, `opencode run`
//! runs whole turns against a scripted chat-completions API on loopback (one
//! `bash` call, then text), the plugin inside OpenCode hands its bus events and
//! tool hooks to the spool and wakes the daemon, and the daemon's events are
//! checked: the turn's events in order, a permission asked under an ask rule,
//! nothing lost while the daemon is stopped in the middle of a run (the plugin
//! starts a drain worker), and the turn's words at tier 2 from OpenCode's store.
//! Control reaches it through its server or `opencode acp`, and a session a
//! signed `start` ran in `opencode acp` is reported under the start's name.
//!
//! OpenCode comes from the npm registry (`e2e/package.json`). Without it the test
//! says so and passes, unless `SESSIONPIPE_REQUIRE_HARNESSES=1`, where it fails.
//! With `SESSIONPIPE_RECORD_FIXTURES=DIR` it also writes the payloads it saw as
//! conformance fixtures into DIR (`conformance/harness/opencode/`).

use serde_json::{Value, json};
use sessionpipe_core::conformance::harness::{fixture_from_job, jobs_in};
use sessionpipe_core::spool::Job;
use sessionpipe_testkit::chat::{MockChat, Step};
use sessionpipe_testkit::control;
use sessionpipe_testkit::http::any_body_has;
use sessionpipe_testkit::{Sandbox, sandbox::Daemon};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

const VERSION: &str = "1.18.33";
const ASK: &str = "run echo hello";
pub(crate) const ANSWER: &str = "It printed hello.";

pub(crate) struct Setup {
    pub(crate) sb: Sandbox,
    bin: PathBuf,
    archive: PathBuf,
    project: PathBuf,
}

/// A sandbox with OpenCode set up offline against `api` (every permission
/// `bash` rule given), transcripts on, and our plugin installed.
pub(crate) fn setup(bin: PathBuf, api: &MockChat, bash: &str) -> Setup {
    let sb = Sandbox::new();
    std::fs::create_dir_all(&sb.state).unwrap();
    std::fs::write(sb.state.join("config.json"), r#"{"transcripts": true}"#).unwrap();
    let config = sb.home.join(".config/opencode");
    std::fs::create_dir_all(&config).unwrap();
    let doc = json!({
        "$schema": "https://opencode.ai/config.json",
        "provider": {"mock": {"npm": "@ai-sdk/openai-compatible", "name": "Mock",
            "options": {"baseURL": api.base_url(), "apiKey": "test-not-a-key"},
            "models": {"mock-model": {"name": "Mock", "tool_call": true}}}},
        "model": "mock/mock-model",
        "small_model": "mock/mock-model",
        "enabled_providers": ["mock"],
        "autoupdate": false,
        "share": "disabled",
        "permission": {"bash": bash},
    });
    let person = serde_json::to_string_pretty(&doc).unwrap();
    std::fs::write(config.join("opencode.json"), &person).unwrap();

    let install = sb.sessionpipe(&["install", "--harness", "opencode"]);
    let said = String::from_utf8_lossy(&install.stdout);
    assert!(
        install.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&install.stderr)
    );
    assert_eq!(
        said,
        "opencode: installed (~/.config/opencode/plugins/sessionpipe.js)\n"
    );
    assert_eq!(
        std::fs::read_to_string(config.join("opencode.json")).unwrap(),
        person,
        "the person's config is never touched"
    );
    let project = sb.home.join("work/project");
    std::fs::create_dir_all(&project).unwrap();
    Setup {
        archive: sb.root().join("jobs"),
        sb,
        bin,
        project,
    }
}

impl Setup {
    pub(crate) fn daemon(&self) -> Daemon {
        self.sb
            .start_daemon_with(&[("SESSIONPIPE_JOB_ARCHIVE", self.archive.as_os_str())])
    }

    /// OpenCode in the project, offline.
    fn opencode(&self) -> std::process::Command {
        let mut c = self.sb.command(&self.bin);
        c.current_dir(&self.project)
            .env("SHELL", "/bin/bash")
            .env("SESSIONPIPE_JOB_ARCHIVE", &self.archive)
            .env("OPENCODE_DISABLE_MODELS_FETCH", "true")
            .env("OPENCODE_DISABLE_AUTOUPDATE", "true")
            .env("OPENCODE_DISABLE_DEFAULT_PLUGINS", "true")
            .env("OPENCODE_DISABLE_LSP_DOWNLOAD", "true")
            .env("OPENCODE_DISABLE_SHARE", "true");
        c
    }

    /// `opencode run` in the project, offline; `auto` approves what a rule asks.
    pub(crate) fn start(&self, auto: bool) -> Child {
        let mut c = self.opencode();
        c.args(["run", "--format", "json", "-m", "mock/mock-model"]);
        if auto {
            c.arg("--auto");
        }
        c.args(ASK.split(' '))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("opencode runs")
    }

    pub(crate) fn finish(&self, child: Child) {
        let out = wait_bounded(child, Duration::from_secs(180));
        assert!(
            out.status.success(),
            "opencode failed: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn jobs(&self) -> Vec<Job> {
        jobs_in(&self.archive).unwrap_or_default()
    }

    /// Writes the first job of `event` (that `pick` takes) as the fixture
    /// `DIR/<name>.json` when recording.
    fn record(&self, event: &str, name: &str, how: &str, pick: impl Fn(&Value) -> bool) {
        let Ok(dir) = std::env::var("SESSIONPIPE_RECORD_FIXTURES") else {
            return;
        };
        let job = self
            .jobs()
            .into_iter()
            .find(|j| {
                j.event == event
                    && serde_json::from_slice::<Value>(&j.payload).is_ok_and(|p| pick(&p))
            })
            .unwrap_or_else(|| panic!("no {event} job to record"));
        let how = format!(
            "{how}, against a scripted chat-completions API on loopback, plugin written by `sessionpipe install`"
        );
        let fixture = fixture_from_job(&job, VERSION, &how).unwrap();
        let text = serde_json::to_string_pretty(&fixture).unwrap() + "\n";
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(Path::new(&dir).join(format!("{name}.json")), text).unwrap();
    }
}

/// Waits for `child` for at most `bound`, killing it past that.
fn wait_bounded(mut child: Child, bound: Duration) -> std::process::Output {
    let until = Instant::now() + bound;
    while child.try_wait().unwrap().is_none() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    child.wait_with_output().unwrap()
}

fn kinds(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

pub(crate) fn opencode() -> Option<PathBuf> {
    sessionpipe_testkit::harnesses::opencode()
}

fn mock() -> MockChat {
    MockChat::start(vec![Step::bash("echo hello"), Step::text(ANSWER)])
}

pub(crate) fn turn_done(evs: &[Value]) -> bool {
    evs.iter().any(|e| e["type"] == "turn.transcript")
        && evs.iter().any(|e| e["type"] == "turn.ended")
}

#[test]
fn a_real_opencode_turn_becomes_protocol_events_through_the_plugin() {
    let Some(bin) = opencode() else {
        return;
    };
    let api = mock();
    let s = setup(bin, &api, "allow");
    let _daemon = s.daemon();
    s.finish(s.start(false));
    let events = s.sb.wait_until(Duration::from_secs(30), turn_done);
    let lifecycle: Vec<Value> = events
        .iter()
        .filter(|e| e["type"] != "turn.transcript")
        .cloned()
        .collect();
    assert_eq!(
        kinds(&lifecycle),
        [
            "session.started",
            "turn.started",
            "tool.started",
            "tool.ended",
            "turn.ended"
        ],
        "{events:#?}"
    );
    let session = events[0]["session"]["id"].as_str().unwrap();
    assert!(session.starts_with("ses_"), "{session}");
    for e in &events {
        assert_eq!(e["session"]["id"], session);
        assert_eq!(e["harness"]["name"], "opencode");
        assert_eq!(e["harness"]["version"], VERSION);
        assert_eq!(e["session"]["cwd"], "~/work/project");
    }
    let turn = lifecycle[1]["data"]["turn_id"].as_str().unwrap();
    assert!(turn.starts_with("msg_"), "{turn}");
    let call = &api.call_ids()[0];
    assert_eq!(
        lifecycle[2]["data"],
        json!({"tool": "bash", "call_id": call, "turn_id": turn,
               "input": {"command": "echo hello", "description": "Run echo hello"}})
    );
    assert_eq!(lifecycle[3]["data"]["ok"], true);
    assert_eq!(lifecycle[3]["data"]["call_id"], call.as_str());
    assert_eq!(lifecycle[3]["data"]["output"], "hello\n");
    assert_eq!(
        lifecycle[4]["data"],
        json!({"turn_id": turn, "reason": "stop"})
    );

    // Tier 2: the turn's words, from OpenCode's store.
    let words = events
        .iter()
        .find(|e| e["type"] == "turn.transcript")
        .unwrap();
    assert_eq!(words["data"]["user"], ASK);
    assert_eq!(words["data"]["assistant"], ANSWER);
    assert_eq!(words["data"]["turn"], 1);
    // Facts: OpenCode's model; its title is the side request's answer.
    let last = events.last().unwrap();
    assert_eq!(last["session"]["model"], "mock/mock-model");
    assert_eq!(
        last["session"]["title"],
        sessionpipe_testkit::chat::SIDE_TEXT
    );

    // Backfill finds the session in the store (known: it was sent already).
    let backfill = s.sb.sessionpipe(&["backfill", "--json"]);
    let said = String::from_utf8_lossy(&backfill.stdout);
    assert!(backfill.status.success(), "{said}");
    let found: Value = serde_json::from_slice(&backfill.stdout).unwrap();
    let ours = found
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["harness"] == "opencode")
        .unwrap();
    assert_eq!(ours["found"], 1, "{said}");

    // Status says current after OpenCode ran.
    let status = s.sb.sessionpipe(&["status"]);
    let said = String::from_utf8_lossy(&status.stdout);
    assert!(
        said.contains("opencode: current (~/.config/opencode/plugins/sessionpipe.js)"),
        "{said}"
    );

    let how = "opencode run, one bash call";
    s.record("session.created", "session-created", how, |_| true);
    s.record("message.updated", "message-updated-user", how, |_| true);
    s.record("tool.execute.before", "tool-execute-before", how, |_| true);
    s.record("tool.execute.after", "tool-execute-after", how, |_| true);
    s.record("session.idle", "session-idle", how, |_| true);
}

#[test]
fn an_ask_rule_is_an_attention_and_a_stopped_daemon_loses_nothing() {
    let Some(bin) = opencode() else {
        return;
    };
    let api = mock();
    let s = setup(bin, &api, "ask");
    let daemon = s.daemon();
    // The daemon goes as soon as the turn has started: the rest of the run
    // finds no daemon.
    let run = s.start(true);
    s.sb.wait_until(Duration::from_secs(60), |evs| {
        evs.iter().any(|e| e["type"] == "turn.started")
    });
    let (status, _) = daemon.terminate();
    assert!(status.success());
    s.finish(run);
    // The plugin found no daemon and started a drain worker: every event
    // arrives all the same, once.
    let events = s.sb.wait_until(Duration::from_secs(30), turn_done);
    let lifecycle: Vec<Value> = events
        .iter()
        .filter(|e| e["type"] != "turn.transcript")
        .cloned()
        .collect();
    assert_eq!(
        kinds(&lifecycle),
        [
            "session.started",
            "turn.started",
            "tool.started",
            "attention.needed",
            "attention.cleared",
            "tool.ended",
            "turn.ended"
        ],
        "{events:#?}"
    );
    let seqs: Vec<u64> = events
        .iter()
        .map(|e| e["session"]["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, (1..=events.len() as u64).collect::<Vec<_>>());
    let attention = &lifecycle[3]["data"];
    assert_eq!(attention["kind"], "permission");
    assert_eq!(attention["attention_id"], api.call_ids()[0].as_str());
    assert_eq!(attention["tool"], "bash");
    assert_eq!(attention["message"], "bash echo hello");
    assert_eq!(s.sb.spooled(), 0, "the worker took every job");

    s.record(
        "permission.asked",
        "permission-asked",
        "opencode run --auto under a `bash: ask` rule",
        |_| true,
    );
}

/// `opencode serve` in the project on a free loopback port, offline, and its
/// address once it answers.
fn serve(s: &Setup) -> (Child, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut c = s.opencode();
    c.args([
        "serve",
        "--hostname",
        "127.0.0.1",
        "--port",
        &port.to_string(),
    ])
    .stdin(Stdio::null())
    .stdout(std::fs::File::create(s.sb.root().join("serve.log")).unwrap())
    .stderr(std::fs::File::create(s.sb.root().join("serve.err")).unwrap());
    let mut child = c.spawn().expect("opencode serves");
    let url = format!("http://127.0.0.1:{port}");
    // Its first answer waits for its set-up of the fresh config folder (about
    // 30 s here), so the bound is generous.
    let until = Instant::now() + Duration::from_secs(180);
    let client = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(150))
        .build()
        .unwrap();
    while let Err(e) = client.get(format!("{url}/session")).send() {
        let said = || {
            let read = |f: &str| std::fs::read_to_string(s.sb.root().join(f)).unwrap_or_default();
            format!("{}{}", read("serve.log"), read("serve.err"))
        };
        assert!(
            child.try_wait().unwrap().is_none(),
            "opencode serve ended: {}",
            said()
        );
        assert!(
            Instant::now() < until,
            "opencode serve never answered ({e}): {}",
            said()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    (child, url)
}

/// A client of the server (what `opencode attach` or its web page would do).
fn post(url: &str, path: &str, project: &Path, body: Value) -> Value {
    let client = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(120))
        .build()
        .unwrap();
    let resp = client
        .post(format!(
            "{url}{path}?directory={}",
            harness::api::query_component(project.to_str().unwrap())
        ))
        .json(&body)
        .send()
        .unwrap();
    assert!(resp.status().is_success(), "{path}: {}", resp.status());
    resp.json().unwrap_or(Value::Null)
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_signed_prompt_and_a_cancel_reach_a_live_opencode_through_its_server() {
    let Some(bin) = opencode() else {
        return;
    };
    // Turn 1 answers; the signed prompt's turn answers; the third turn runs a
    // long command that the signed cancel stops.
    let api = MockChat::start(vec![
        Step::text("First answer."),
        Step::text("The tests pass."),
        Step::bash("sleep 30"),
        Step::text("Never said."),
    ]);
    let s = setup(bin, &api, "allow");
    let paired = control::paired_machine(&s.sb, &s.project);
    let device = &paired.device;
    let _daemon = s.daemon();
    device.wait_hello(Duration::from_secs(15), |h| h.is_object());
    let (server, url) = serve(&s);
    let _server = Killed(server);

    // The person's first turn, through the server as a client sends it.
    let created = post(&url, "/session", &s.project, json!({}));
    let id = created["id"].as_str().unwrap().to_string();
    post(
        &url,
        &format!("/session/{id}/message"),
        &s.project,
        json!({"parts": [{"type": "text", "text": "Say something."}]}),
    );
    let ended = |n: usize| {
        move |evs: &[Value]| evs.iter().filter(|e| e["type"] == "turn.ended").count() >= n
    };
    s.sb.wait_until(Duration::from_secs(60), ended(1));
    let session = format!("opencode:{id}");

    // A signed prompt: the server takes it as the session's next turn, and
    // the ack carries that turn's reply, from OpenCode's store.
    let words = "Also run the tests, please.";
    let sent = device.enqueue(
        &device.sign("prompt", &session, json!({"text": words})),
        120,
    );
    device.assert_delivered(&sent, Duration::from_secs(90), "api", "The tests pass.");
    let asked = |words| any_body_has(&api.requests(), words);
    assert!(asked(words), "no model request carried the message");
    assert!(asked(control::FRAMED), "the message was not framed");

    // A third turn runs `sleep 30`; a signed cancel stops it through the
    // server's abort, long before the command would end.
    let long = device.enqueue(
        &device.sign("prompt", &session, json!({"text": "Now wait."})),
        120,
    );
    s.sb.wait_until(Duration::from_secs(60), |evs| {
        evs.iter().filter(|e| e["type"] == "tool.started").count() >= 1
    });
    // The machine says a cancel can stop it: its server holds the session.
    device.wait_hello(Duration::from_secs(20), |h| {
        h["cancels"]
            .as_array()
            .is_some_and(|c| c.iter().any(|x| x == session.as_str()))
    });
    let asked_at = Instant::now();
    let cancel = device.enqueue(&device.sign("cancel", &session, json!({})), 120);
    let ack = device.final_ack(&cancel, Duration::from_secs(30));
    assert_eq!(
        (ack["outcome"].as_str(), ack["mode"].as_str()),
        (Some("delivered"), Some("api")),
        "{ack}"
    );
    let events = s.sb.wait_until(Duration::from_secs(30), ended(3));
    assert!(
        asked_at.elapsed() < Duration::from_secs(25),
        "the turn ran to its end"
    );
    let long_ack = device.final_ack(&long, Duration::from_secs(30));
    assert_eq!(long_ack["outcome"], "delivered", "{long_ack}");
    let lifecycle: Vec<&str> = kinds(&events)
        .into_iter()
        .filter(|k| *k != "turn.transcript")
        .collect();
    assert_eq!(
        lifecycle,
        [
            "session.started",
            "turn.started",
            "turn.ended",
            "turn.started",
            "turn.ended",
            "turn.started",
            "tool.started",
            "tool.ended",
            "turn.ended"
        ],
        "{events:#?}"
    );
    // The aborted tool ends inside its turn, not ok, and the turn was
    // interrupted (OpenCode itself went idle before the tool's end).
    let tool_ended = events.iter().rfind(|e| e["type"] == "tool.ended").unwrap();
    assert_eq!(tool_ended["data"]["ok"], false, "{tool_ended}");
    let turn_ended = events.iter().rfind(|e| e["type"] == "turn.ended").unwrap();
    assert_eq!(turn_ended["data"]["reason"], "interrupt", "{turn_ended}");
    let how = "opencode serve, a turn aborted through its server's API";
    s.record("session.error", "session-error-aborted", how, |_| true);
    // The loop stopped: the model never got the aborted command's result.
    let sleep_call = &api.call_ids()[0];
    assert!(
        api.tool_results().iter().all(|(id, _)| id != sleep_call),
        "the model was asked again after the cancel"
    );
}

#[test]
fn a_session_no_server_holds_is_told_so() {
    let Some(bin) = opencode() else {
        return;
    };
    let api = mock();
    let s = setup(bin, &api, "allow");
    let paired = control::paired_machine(&s.sb, &s.project);
    let device = &paired.device;
    let _daemon = s.daemon();
    device.wait_hello(Duration::from_secs(15), |h| h.is_object());
    // `opencode run` listens nowhere (and says `http://localhost:4096/`).
    s.finish(s.start(false));
    let events = s.sb.wait_until(Duration::from_secs(30), turn_done);
    let session = format!("opencode:{}", events[0]["session"]["id"].as_str().unwrap());
    for kind in ["prompt", "cancel"] {
        let fields = if kind == "prompt" {
            json!({"text": "Hello?"})
        } else {
            json!({})
        };
        let sent = device.enqueue(&device.sign(kind, &session, fields), 120);
        let ack = device.final_ack(&sent, Duration::from_secs(30));
        assert_eq!(ack["outcome"], "unsupported", "{kind}: {ack}");
        assert!(
            ack["detail"].as_str().unwrap().contains("no server"),
            "{kind}: {ack}"
        );
    }
}

/// The daemon, finding `opencode acp` by the file its variable names; the
/// agent it starts inherits OpenCode's offline environment.
fn acp_daemon(s: &Setup, bin: &Path) -> Daemon {
    let offline = [
        "OPENCODE_DISABLE_MODELS_FETCH",
        "OPENCODE_DISABLE_AUTOUPDATE",
        "OPENCODE_DISABLE_DEFAULT_PLUGINS",
        "OPENCODE_DISABLE_LSP_DOWNLOAD",
        "OPENCODE_DISABLE_SHARE",
    ];
    let mut env: Vec<(&str, &std::ffi::OsStr)> = offline
        .iter()
        .map(|k| (*k, std::ffi::OsStr::new("true")))
        .collect();
    env.extend([
        ("SHELL", std::ffi::OsStr::new("/bin/bash")),
        ("SESSIONPIPE_ACP_OPENCODE", bin.as_os_str()),
        ("SESSIONPIPE_JOB_ARCHIVE", s.archive.as_os_str()),
    ]);
    s.sb.start_daemon_with(&env)
}

#[test]
fn a_session_no_server_holds_is_reopened_by_opencode_acp() {
    let Some(bin) = opencode() else {
        return;
    };
    const LOADED: &str = "Back in the same session.";
    let api = MockChat::start(vec![
        Step::bash("echo hello"),
        Step::text(ANSWER),
        Step::text(LOADED),
    ]);
    let s = setup(bin.clone(), &api, "allow");
    let paired = control::paired_machine(&s.sb, &s.project);
    let device = &paired.device;
    let _daemon = acp_daemon(&s, &bin);
    device.wait_hello(Duration::from_secs(15), |h| {
        h["starts"]["opencode"].is_object()
    });
    s.finish(s.start(false));
    let events = s.sb.wait_until(Duration::from_secs(30), turn_done);
    let id = events[0]["session"]["id"].as_str().unwrap().to_string();
    let session = format!("opencode:{id}");

    // No server holds it: `opencode acp` loads it and runs the prompt as its
    // next turn. The model's answer is the third step only when the request
    // carries the first turn's history.
    let sent = device.enqueue(
        &device.sign("prompt", &session, json!({"text": "Hello again?"})),
        300,
    );
    let ack = device.final_ack(&sent, Duration::from_secs(150));
    assert_eq!(
        (ack["outcome"].as_str(), ack["mode"].as_str()),
        (Some("delivered"), Some("api")),
        "{ack}"
    );
    assert!(ack["reply"].as_str().unwrap().contains(LOADED), "{ack}");
    let last = api.completions().last().cloned().unwrap_or_default();
    assert!(
        last.to_string().contains("echo hello"),
        "the loaded session's history reached the model: {last}"
    );

    // The plugin inside `opencode acp` reports that turn under the same
    // session: one session, two turns.
    let events = s.sb.wait_until(Duration::from_secs(30), |evs| {
        evs.iter().filter(|e| e["type"] == "turn.ended").count() >= 2
    });
    for e in &events {
        assert_eq!(e["session"]["id"], id.as_str(), "{e}");
    }
    let started = events
        .iter()
        .filter(|e| e["type"] == "turn.started")
        .count();
    assert_eq!(started, 2, "{events:#?}");
}

/// A session a signed `start` ran in `opencode acp`: OpenCode names it itself
/// (`ses_…`), and the plugin inside the agent reports it under the start's
/// name, the session the ack names (ADAPTERS.md, "Agents driven through
/// ACP": a harness with hooks of its own keeps the start's id as the name).
#[test]
fn a_session_started_in_opencode_acp_reports_under_the_starts_name() {
    let Some(bin) = opencode() else {
        return;
    };
    const NAME: &str = "7c1e2d3f-4a5b-4c6d-8e7f-a0b1c2d3e4f5";
    let api = MockChat::start(vec![Step::bash("echo hello"), Step::text(ANSWER)]);
    let s = setup(bin.clone(), &api, "allow");
    let paired = control::paired_machine(&s.sb, &s.project);
    let device = &paired.device;
    let _daemon = acp_daemon(&s, &bin);
    device.wait_hello(Duration::from_secs(15), |h| {
        h["starts"]["opencode"].is_object()
    });
    let session = format!("opencode:{NAME}");
    let sent = device.enqueue(&device.sign_start(&session, ASK, &s.project, &[]), 300);
    let ack = device.final_ack(&sent, Duration::from_secs(150));
    assert_eq!(
        (
            ack["outcome"].as_str(),
            ack["mode"].as_str(),
            ack["session"].as_str()
        ),
        (Some("delivered"), Some("api"), Some(session.as_str())),
        "{ack}"
    );
    let events = s.sb.wait_until(Duration::from_secs(30), |evs| {
        evs.iter().any(|e| e["type"] == "turn.ended")
    });
    assert_eq!(events[0]["type"], "session.started", "{events:#?}");
    for e in &events {
        assert_eq!(e["harness"]["name"], "opencode");
        assert_eq!(e["session"]["id"], NAME, "{e}");
    }
    assert!(
        events.iter().any(|e| e["type"] == "tool.started"),
        "{events:#?}"
    );
    // OpenCode's own id stays where OpenCode keeps it: the jobs the plugin
    // wrote carry it, and the variable beside it.
    let created = s
        .jobs()
        .into_iter()
        .find(|j| j.event == "session.created")
        .expect("the plugin handed over the session's creation");
    let payload: Value = serde_json::from_slice(&created.payload).unwrap();
    let own = payload["properties"]["info"]["id"].as_str().unwrap();
    assert!(own.starts_with("ses_"), "{own}");
    assert_eq!(
        created.env.get("SESSIONPIPE_CONTROL_SESSION"),
        Some(&session)
    );
}
