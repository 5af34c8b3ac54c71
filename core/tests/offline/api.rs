//! The daemon's local API over real HTTP: the token and the host are checked,
//! the board shows a real hook's attention, a harness toggle writes and removes
//! real hooks, the harnesses list says which are ACP agents installed here,
//! settings and sinks change through it. (`Ui` serves `remote_titles` too.)

use serde_json::{Value, json};
use sessionpipe_testkit::Sandbox;
use std::time::{Duration, Instant};

/// The daemon's API as the UI calls it (also used by `remote_titles`).
pub(crate) struct Ui {
    url: String,
    token: String,
    client: reqwest::blocking::Client,
}

impl Ui {
    pub(crate) fn of(sb: &Sandbox) -> Ui {
        let deadline = Instant::now() + Duration::from_secs(10);
        let doc: Value = loop {
            if let Ok(b) = std::fs::read(sb.state.join("ui.json")) {
                break serde_json::from_slice(&b).unwrap();
            }
            assert!(Instant::now() < deadline, "no ui.json");
            std::thread::sleep(Duration::from_millis(20));
        };
        Ui {
            url: doc["url"].as_str().unwrap().into(),
            token: doc["token"].as_str().unwrap().into(),
            client: reqwest::blocking::Client::new(),
        }
    }

    pub(crate) fn get(&self, path: &str) -> Value {
        let r = self
            .client
            .get(format!("{}{path}", self.url))
            .bearer_auth(&self.token)
            .send()
            .unwrap();
        assert!(r.status().is_success(), "{path}: {}", r.status());
        serde_json::from_str(&r.text().unwrap()).unwrap()
    }

    pub(crate) fn send(&self, method: reqwest::Method, path: &str, body: Value) -> (u16, Value) {
        let r = self
            .client
            .request(method, format!("{}{path}", self.url))
            .bearer_auth(&self.token)
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .unwrap();
        let status = r.status().as_u16();
        (
            status,
            serde_json::from_str(&r.text().unwrap_or_default()).unwrap_or(Value::Null),
        )
    }
}

#[test]
fn the_token_and_the_host_are_checked() {
    let sb = Sandbox::new();
    let _d = sb.start_daemon();
    let ui = Ui::of(&sb);
    let c = reqwest::blocking::Client::new();
    assert_eq!(
        c.get(format!("{}/api/overview", ui.url))
            .send()
            .unwrap()
            .status(),
        401
    );
    let wrong = c
        .get(format!("{}/api/overview", ui.url))
        .bearer_auth("nope")
        .send()
        .unwrap();
    assert_eq!(wrong.status(), 401);
    let rebound = c
        .get(format!("{}/api/overview", ui.url))
        .bearer_auth(&ui.token)
        .header("host", "evil.example:80")
        .send()
        .unwrap();
    assert_eq!(rebound.status(), 421, "another host name is refused");
    let why: serde_json::Value = serde_json::from_str(&rebound.text().unwrap()).unwrap();
    assert!(
        why["error"].as_str().unwrap().contains("127.0.0.1"),
        "{why}"
    );
    assert!(ui.url.starts_with("http://127.0.0.1:"));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(sb.state.join("ui.json"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600);
    }
    let out = sb.sessionpipe(&["ui"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("{}/#token={}", ui.url, ui.token)
    );
}

#[test]
fn the_board_shows_a_sessions_attention_until_it_clears() {
    let sb = Sandbox::new();
    let _d = sb.start_daemon();
    let ui = Ui::of(&sb);
    let payload = |event: &str, extra: Value| {
        let mut p = json!({"session_id": "5b1c2d3e-0000-4000-8000-0000000000cc", "transcript_path": "/x.jsonl", "cwd": "/srv/app", "hook_event_name": event, "prompt_id": "p1"});
        p.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        p.to_string()
    };
    sb.hook(
        "claude-code",
        "UserPromptSubmit",
        payload("UserPromptSubmit", json!({"prompt": "go"})).as_bytes(),
    );
    sb.hook(
        "claude-code",
        "PermissionRequest",
        payload(
            "PermissionRequest",
            json!({"tool_name": "Bash", "tool_input": {"command": "rm -rf build"}}),
        )
        .as_bytes(),
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    let board = loop {
        let b = ui.get("/api/overview");
        if b["approvals"].as_array().is_some_and(|a| !a.is_empty()) || Instant::now() > deadline {
            break b;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let s = &board["sessions"][0];
    assert_eq!(s["state"], "needs_you");
    assert_eq!(s["harness"], "claude-code");
    assert_eq!(s["title"], "/srv/app");
    assert_eq!(board["approvals"][0]["session"], s["key"]);
    assert_eq!(board["approvals"][0]["kind"], "permission");
    assert_eq!(board["approvals"][0]["tool"], "Bash");
    let events = ui.get(&format!(
        "/api/sessions/claude-code/{}/events",
        s["id"].as_str().unwrap()
    ));
    let kinds: Vec<&str> = events
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["session.started", "turn.started", "attention.needed"]
    );
    assert_eq!(events[2]["data"]["tool"], "Bash");

    sb.hook("claude-code", "Stop", payload("Stop", json!({})).as_bytes());
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let b = ui.get("/api/overview");
        if b["sessions"][0]["state"] == "done" {
            assert!(b["approvals"].as_array().unwrap().is_empty());
            break;
        }
        assert!(Instant::now() < deadline, "{b}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_harness_toggle_writes_and_removes_real_hooks() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.home.join(".claude")).unwrap();
    let _d = sb.start_daemon();
    let ui = Ui::of(&sb);
    let harnesses = ui.get("/api/harnesses");
    let claude = harnesses
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["harness"] == "claude-code")
        .unwrap();
    assert_eq!(claude["summary"], "missing");
    let (status, _) = ui.send(
        reqwest::Method::POST,
        "/api/harnesses/claude-code",
        json!({"installed": true}),
    );
    assert_eq!(status, 200);
    let settings = std::fs::read_to_string(sb.home.join(".claude/settings.json")).unwrap();
    assert!(
        settings.contains("sessionpipe-hook\\\" claude-code Stop"),
        "{settings}"
    );
    let (_, after) = ui.send(
        reqwest::Method::POST,
        "/api/harnesses/claude-code",
        json!({"installed": false}),
    );
    assert_eq!(after[0]["summary"], "removed");
    assert!(
        !sb.home.join(".claude/settings.json").exists(),
        "the file we created is gone again"
    );
    let (status, body) = ui.send(
        reqwest::Method::POST,
        "/api/harnesses/nonesuch",
        json!({"installed": true}),
    );
    assert_eq!(status, 404, "no such harness: {body}");
    assert!(body["error"].as_str().unwrap().contains("unknown harness"));
}

#[test]
fn the_harnesses_list_names_the_acp_agents_installed_here() {
    let sb = Sandbox::new();
    let agent = sessionpipe_testkit::sandbox::bin("acp-test-agent");
    let empty = sb.root().join("empty-path");
    std::fs::create_dir_all(&empty).unwrap();
    let _d = sb.start_daemon_with(&[
        ("PATH", empty.as_os_str()),
        ("SESSIONPIPE_ACP_GOOSE", agent.as_os_str()),
        ("SESSIONPIPE_ACP_GEMINI_CLI", agent.as_os_str()),
    ]);
    let ui = Ui::of(&sb);
    let harnesses = ui.get("/api/harnesses");
    let rows = harnesses.as_array().unwrap();
    let row = |name: &str| {
        rows.iter()
            .find(|h| h["harness"] == name)
            .unwrap_or_else(|| panic!("{name} in {harnesses}"))
    };
    let program = agent.to_string_lossy();

    // A harness with hooks and no ACP agent: its fields as before, `acp` null.
    let claude = row("claude-code");
    assert_eq!(claude["hooks"], true);
    assert_eq!(claude["acp"], Value::Null);
    assert!(claude["summary"].is_string() && claude["files"].is_array());

    // Hooks and an ACP agent: both facts.
    let gemini = row("gemini-cli");
    assert_eq!(gemini["hooks"], true);
    assert_eq!(gemini["summary"], "not found", "no settings in this HOME");
    assert_eq!(gemini["acp"]["product"], "Gemini CLI (Google)");
    assert_eq!(gemini["acp"]["program"], program.as_ref());
    assert_eq!(gemini["acp"]["over_acp"], true);

    // An ACP agent with no hooks: a row of its own, after the hooked ones.
    let goose = row("goose");
    assert_eq!(goose["hooks"], false);
    assert_eq!(goose["summary"], "no hooks");
    assert_eq!(goose["files"], json!([]));
    assert_eq!(goose["acp"]["product"], "goose (Block)");
    assert_eq!(goose["acp"]["program"], program.as_ref());
    assert_eq!(goose["acp"]["over_acp"], true);
    assert_eq!(rows.last().unwrap()["harness"], "goose");
    assert!(
        rows.iter().all(|h| h["harness"] != "kilo"),
        "an agent not installed is not listed"
    );

    // A toggle's answer carries the same facts for its harness.
    let (status, after) = ui.send(
        reqwest::Method::POST,
        "/api/harnesses/gemini-cli",
        json!({"installed": false}),
    );
    assert_eq!(status, 200, "{after}");
    assert_eq!(after[0]["acp"]["over_acp"], true);
    assert_eq!(after.as_array().unwrap().len(), 1);
}

#[test]
fn settings_and_sinks_change_through_the_api() {
    let sb = Sandbox::new();
    let _d = sb.start_daemon();
    let ui = Ui::of(&sb);
    assert_eq!(ui.get("/api/settings")["notify_tier"], 1);
    let (status, v) = ui.send(
        reqwest::Method::PUT,
        "/api/settings",
        json!({"machine": "ann-laptop", "notify_tier": 0}),
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(v, ui.get("/api/settings"), "PUT answers what GET says");
    assert_eq!(v["machine"], "ann-laptop");
    let (status, _) = ui.send(
        reqwest::Method::PUT,
        "/api/settings",
        json!({"notify_tier": 9}),
    );
    assert_eq!(status, 400);
    let (status, _) = ui.send(
        reqwest::Method::PUT,
        "/api/settings",
        json!({"nonsense": true}),
    );
    assert_eq!(status, 400);

    let file = sb.root().join("out.jsonl");
    let (status, added) = ui.send(
        reqwest::Method::POST,
        "/api/sinks",
        json!({"target": format!("file:{}", file.display()), "tier": 1}),
    );
    assert_eq!(status, 200, "{added}");
    assert_eq!(added["tier"], 1, "the tier the sink got");
    let list = ui.get("/api/sinks");
    assert_eq!(list[0]["tier"], 1);
    let id = added["id"].as_str().unwrap();
    let (status, tested) = ui.send(
        reqwest::Method::POST,
        &format!("/api/sinks/{id}/test"),
        json!({}),
    );
    assert_eq!((status, tested["ok"].as_bool()), (200, Some(true)));
    let (status, _) = ui.send(
        reqwest::Method::DELETE,
        &format!("/api/sinks/{id}"),
        json!({}),
    );
    assert_eq!(status, 200);
    assert!(ui.get("/api/sinks").as_array().unwrap().is_empty());
    let (status, body) = ui.send(
        reqwest::Method::POST,
        "/api/sinks",
        json!({"target": "http://example.org/x"}),
    );
    assert_eq!(status, 400);
    assert!(body["error"].as_str().unwrap().contains("HTTPS"));
}

/// Each failure says whose it is: the caller's mistake a 4xx, a receiver the
/// caller named a 502, the daemon's own a 500; every one with a JSON body.
#[test]
fn failures_answer_their_status_with_a_json_reason() {
    let sb = Sandbox::new();
    let _d = sb.start_daemon();
    let ui = Ui::of(&sb);
    let raw = |method: reqwest::Method, path: &str, body: &str, token: Option<&str>| {
        let mut req = ui
            .client
            .request(method, format!("{}{path}", ui.url))
            .header("content-type", "application/json")
            .body(body.to_string());
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        let r = req.send().unwrap();
        let status = r.status().as_u16();
        let body: Value = serde_json::from_str(&r.text().unwrap()).unwrap_or(Value::Null);
        assert!(
            body["error"].is_string(),
            "{path}: {status} without a JSON reason"
        );
        (status, body["error"].as_str().unwrap().to_string())
    };
    let token = Some(ui.token.as_str());
    let put = reqwest::Method::PUT;
    let post = reqwest::Method::POST;
    let (s, why) = raw(put.clone(), "/api/settings", "{not json", token);
    assert_eq!(s, 400, "{why}");
    assert!(why.contains("not JSON"), "{why}");
    assert_eq!(raw(put.clone(), "/api/settings", "[1]", token).0, 400);
    assert_eq!(
        raw(put, "/api/settings", r#"{"notify_tier": 9}"#, token).0,
        400
    );
    assert_eq!(raw(reqwest::Method::GET, "/api/nope", "", token).0, 404);
    assert_eq!(raw(reqwest::Method::GET, "/api/nope", "", None).0, 401);
    assert_eq!(
        raw(post.clone(), "/api/sinks", r#"{"tier": 1}"#, token).0,
        400
    );
    assert_eq!(
        raw(
            post.clone(),
            "/api/sinks",
            r#"{"target": "ftp://x", "tier": 1}"#,
            token
        )
        .0,
        400
    );
    assert_eq!(
        raw(
            post.clone(),
            "/api/sinks",
            r#"{"target": "stdout", "tier": 7}"#,
            token
        )
        .0,
        400
    );
    let sink = format!(
        r#"{{"target": "file:{}/s.jsonl", "tier": 1}}"#,
        sb.home.display()
    );
    let (status, _) = ui.send(
        post.clone(),
        "/api/sinks",
        serde_json::from_str(&sink).unwrap(),
    );
    assert_eq!(status, 200);
    assert_eq!(
        raw(post.clone(), "/api/sinks", &sink, token).0,
        409,
        "the same target twice"
    );
    assert_eq!(
        raw(reqwest::Method::DELETE, "/api/sinks/s_none", "", token).0,
        404
    );
    assert_eq!(
        raw(post.clone(), "/api/sinks/s_none/test", "", token).0,
        404
    );
    // Nothing answers there: the receiver the caller named failed, not us.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = dead.local_addr().unwrap().port();
    drop(dead);
    let unanswered = format!(r#"{{"target": "http://127.0.0.1:{port}", "tier": 1}}"#);
    let (s, why) = raw(post, "/api/sinks", &unanswered, token);
    assert_eq!(s, 502, "{why}");
    // An outbox the daemon cannot read is its own failure.
    std::fs::write(sb.state.join("outbox.db"), b"this is not a database").unwrap();
    let _ = std::fs::remove_file(sb.state.join("outbox.db-wal"));
    let (s, why) = raw(reqwest::Method::GET, "/api/overview", "", token);
    assert_eq!(s, 500, "{why}");
}

#[test]
fn local_approvals_answer_only_a_waiting_prompt_and_only_when_turned_on() {
    let sb = Sandbox::new();
    let _d = sb.start_daemon();
    let ui = Ui::of(&sb);
    let answer = json!({"session": "claude-code:s", "attention": "perm-1", "decision": "allow"});
    let (status, body) = ui.send(reqwest::Method::POST, "/api/approvals", answer.clone());
    assert_eq!(status, 409, "off by default: {body}");
    let (status, _) = ui.send(
        reqwest::Method::PUT,
        "/api/settings",
        json!({"local_approvals": true}),
    );
    assert_eq!(status, 200);
    let (status, body) = ui.send(reqwest::Method::POST, "/api/approvals", answer);
    assert_eq!(status, 404, "nothing waits: {body}");
    let (status, body) = ui.send(
        reqwest::Method::POST,
        "/api/approvals",
        json!({"session": "claude-code:s", "attention": "perm-1", "decision": "maybe"}),
    );
    assert_eq!(status, 400, "{body}");

    // A real PermissionRequest waits (local approvals put the marker down),
    // shows as answerable on the board, and a click's answer reaches it.
    let cwd = sb.home.clone();
    let payload = json!({"session_id": "s", "transcript_path": "/nowhere.jsonl", "cwd": cwd,
        "hook_event_name": "PermissionRequest", "prompt_id": "p1",
        "tool_name": "Bash", "tool_input": {"command": "touch x"}});
    let until = Instant::now() + Duration::from_secs(10);
    while !sb.state.join("control.on").exists() {
        assert!(Instant::now() < until, "the marker never came");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::scope(|scope| {
        let hook = scope.spawn(|| {
            sb.hook(
                "claude-code",
                "PermissionRequest",
                payload.to_string().as_bytes(),
            )
        });
        let until = Instant::now() + Duration::from_secs(10);
        let approval = loop {
            let board = ui.get("/api/overview");
            if let Some(a) = board["approvals"]
                .as_array()
                .and_then(|a| a.iter().find(|a| a["answerable"] == true).cloned())
            {
                break a;
            }
            assert!(Instant::now() < until, "never answerable: {board}");
            std::thread::sleep(Duration::from_millis(50));
        };
        let (status, body) = ui.send(
            reqwest::Method::POST,
            "/api/approvals",
            json!({"session": approval["session"], "attention": approval["attention_id"], "decision": "deny"}),
        );
        assert_eq!(status, 200, "{body}");
        let out = hook.join().unwrap();
        let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            printed["hookSpecificOutput"]["decision"]["behavior"],
            "deny"
        );
    });
}

#[test]
fn a_harness_found_after_setup_is_offered_until_watched_or_declined() {
    let sb = Sandbox::new();
    let _d = sb.start_daemon();
    let ui = Ui::of(&sb);
    let offered = |ui: &Ui| -> Vec<String> {
        ui.get("/api/offers")["offers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["harness"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(offered(&ui).is_empty(), "nothing here yet");
    // Codex and Droid appear after setup.
    std::fs::create_dir_all(sb.home.join(".codex")).unwrap();
    std::fs::create_dir_all(sb.home.join(".factory")).unwrap();
    assert_eq!(offered(&ui), ["codex", "droid"]);
    let offer = &ui.get("/api/offers")["offers"][0];
    assert_eq!(offer["files"][0], "~/.codex/hooks.json");
    // Watched from the API (as the banner's button does): no longer offered.
    let (status, _) = ui.send(
        reqwest::Method::POST,
        "/api/harnesses/codex",
        json!({"installed": true}),
    );
    assert_eq!(status, 200);
    assert_eq!(offered(&ui), ["droid"]);
    // Declined: never again; taken out by name: not offered back either.
    let (status, _) = ui.send(
        reqwest::Method::POST,
        "/api/offers/droid/decline",
        json!({}),
    );
    assert_eq!(status, 200);
    assert!(offered(&ui).is_empty());
    assert!(
        sb.sessionpipe(&["uninstall", "--harness", "codex"])
            .status
            .success()
    );
    assert!(
        offered(&ui).is_empty(),
        "what the person took out stays out"
    );
    // Installed again by name: it is theirs again to take out or keep.
    assert!(
        sb.sessionpipe(&["install", "--harness", "droid"])
            .status
            .success()
    );
    let declined: Value =
        serde_json::from_slice(&std::fs::read(sb.state.join("harness-declined.json")).unwrap())
            .unwrap();
    assert_eq!(declined["harnesses"], json!(["codex"]));
    let (status, body) = ui.send(
        reqwest::Method::POST,
        "/api/offers/nonesuch/decline",
        json!({}),
    );
    assert_eq!(status, 404, "{body}");
}
