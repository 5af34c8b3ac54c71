//! HTTP sinks through the real daemon against the conformance receiver over real
//! HTTP on loopback: every row of the binding's error table, two sinks at two
//! tiers, discovery lowering a tier, Standard Webhooks signatures.

use serde_json::{Value, json};
use sessionpipe_receiver::{Fault, Handle, Options, Receiver};
use sessionpipe_testkit::Sandbox;
use std::time::{Duration, Instant};

const S: &str = "7f1c2d3e-0000-4000-8000-0000000000bb";
const TOKEN: &str = "receiver-token-for-tests";

fn receiver(max_tier: u8) -> Handle {
    let mut o = Options::new(TOKEN);
    o.max_tier = max_tier;
    Receiver::start(o).unwrap()
}

fn add_sink(sb: &Sandbox, url: &str, tier: &str, extra_stdin: Option<&str>) -> String {
    let mut c = sb.command(sessionpipe_testkit::sandbox::bin("sessionpipe"));
    c.args(["sink", "add", url, "--tier", tier, "--token-stdin"]);
    let mut stdin = format!("{TOKEN}\n");
    if let Some(w) = extra_stdin {
        c.arg("--webhook-secret-stdin");
        stdin.push_str(w);
        stdin.push('\n');
    }
    let out = sessionpipe_testkit::sandbox::run_with_stdin(c, stdin.as_bytes());
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    said.split_whitespace().nth(1).unwrap().to_string()
}

fn hook(sb: &Sandbox, event: &str, extra: Value) {
    let mut p = json!({"session_id": S, "transcript_path": "/nowhere.jsonl", "cwd": "/w", "hook_event_name": event, "prompt_id": "p1"});
    p.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    assert!(
        sb.hook("claude-code", event, p.to_string().as_bytes())
            .status
            .success()
    );
}

fn a_turn(sb: &Sandbox, tools: usize) {
    hook(sb, "UserPromptSubmit", json!({"prompt": "go"}));
    for i in 0..tools {
        let t = json!({"tool_name": "Bash", "tool_use_id": format!("t{i}"), "tool_input": {"command": "ls"}});
        hook(sb, "PreToolUse", t.clone());
        let mut done = t;
        done["tool_response"] = json!({"stdout": "x"});
        hook(sb, "PostToolUse", done);
    }
    hook(sb, "Stop", json!({}));
}

fn stored(r: &Handle) -> Vec<Value> {
    r.events("claude-code", S).unwrap().unwrap_or_default()
}

fn wait_stored(r: &Handle, n: usize, within: Duration) -> Vec<Value> {
    let deadline = Instant::now() + within;
    loop {
        let evs = stored(r);
        if evs.len() >= n || Instant::now() > deadline {
            return evs;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn sink_list(sb: &Sandbox) -> Vec<Value> {
    serde_json::from_slice(&sb.sessionpipe(&["sink", "list", "--json"]).stdout).unwrap()
}

#[test]
fn two_receivers_at_two_tiers_get_two_views() {
    let sb = Sandbox::new();
    let (low, high) = (receiver(3), receiver(3));
    add_sink(&sb, &low.url(), "0", None);
    add_sink(&sb, &high.url(), "3", None);
    let _d = sb.start_daemon();
    a_turn(&sb, 2);
    let all = wait_stored(&high, 7, Duration::from_secs(20));
    let some = wait_stored(&low, 3, Duration::from_secs(20));
    let kinds = |v: &[Value]| {
        v.iter()
            .map(|e| e["type"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        kinds(&some),
        ["session.started", "turn.started", "turn.ended"]
    );
    assert_eq!(all.len(), 7);
    assert!(some.iter().all(|e| e["tier"] == 0));
    assert!(all.iter().any(|e| e["data"]["input"]["command"] == "ls"));
}

#[test]
fn discovery_lowers_the_tier_and_a_403_lowers_it_again() {
    let sb = Sandbox::new();
    let r = receiver(2);
    let id = add_sink(&sb, &r.url(), "3", None);
    assert_eq!(
        sink_list(&sb)[0]["tier"],
        2,
        "discovery: the receiver takes tier 2 at most"
    );
    // The receiver lowers its limit afterwards: it answers 403 tier_above_max.
    r.set_fault(Some(Fault {
        body: Some(json!({"reason": "tier_above_max", "max_tier": 1})),
        count: 1,
        ..Fault::new(403)
    }));
    let _d = sb.start_daemon();
    a_turn(&sb, 1);
    let evs = wait_stored(&r, 5, Duration::from_secs(20));
    assert_eq!(evs.len(), 5, "everything arrives once the tier is lowered");
    assert!(evs.iter().all(|e| e["tier"] == 1));
    assert!(evs.iter().all(|e| e["data"].get("input").is_none()));
    let s = sink_list(&sb);
    assert_eq!(
        (s[0]["id"].as_str(), s[0]["tier"].as_u64()),
        (Some(id.as_str()), Some(1))
    );
}

#[test]
fn a_401_pauses_the_sink_without_a_retry_loop() {
    let sb = Sandbox::new();
    let r = receiver(3);
    add_sink(&sb, &r.url(), "0", None);
    r.set_fault(Some(Fault {
        count: 1000,
        ..Fault::new(401)
    }));
    let _d = sb.start_daemon();
    a_turn(&sb, 0);
    let deadline = Instant::now() + Duration::from_secs(20);
    while sink_list(&sb)[0]["paused"].is_null() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let paused = sink_list(&sb)[0]["paused"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(paused.contains("401"), "{paused}");
    let posts = r.stats().posts;
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(r.stats().posts, posts, "no retry loop after a 401");
    assert!(stored(&r).is_empty());
    // doctor says so, and status shows how far behind the sink is.
    let doctor = sb.sessionpipe(&["doctor"]);
    assert_eq!(doctor.status.code(), Some(1));
    let said = String::from_utf8_lossy(&doctor.stdout);
    assert!(
        said.contains("problem") && said.contains("is paused: 401"),
        "{said}"
    );
    // The reason's words, not "401" alone: the receiver's random port may
    // hold those digits (127.0.0.1:34019).
    assert_eq!(
        said.matches("the token was refused").count(),
        1,
        "the pause said once: {said}"
    );
    let doctor = sb.sessionpipe(&["doctor", "--json"]);
    assert_eq!(doctor.status.code(), Some(1));
    let doc: Value = serde_json::from_slice(&doctor.stdout).unwrap();
    let checks = doc["checks"].as_array().unwrap();
    assert_eq!(
        doc["problems"].as_u64().unwrap() as usize,
        checks.iter().filter(|c| c["level"] == "problem").count()
    );
    assert!(
        checks
            .iter()
            .any(|c| c["level"] == "problem"
                && c["what"].as_str().unwrap().contains("is paused: 401")),
        "{doc}"
    );
    let status = String::from_utf8_lossy(&sb.sessionpipe(&["status"]).stdout).into_owned();
    assert!(status.contains("3 events behind"), "{status}");
}

#[test]
fn a_400_drops_the_batch_and_later_events_still_go() {
    let sb = Sandbox::new();
    let r = receiver(3);
    add_sink(&sb, &r.url(), "0", None);
    // Every post is refused while the turn goes out: its hooks may reach the
    // daemon in one batch or in two, and each refused batch is dropped.
    r.set_fault(Some(Fault {
        count: u64::MAX,
        ..Fault::new(400)
    }));
    let _d = sb.start_daemon();
    a_turn(&sb, 0);
    // The cursor passes the turn's three events once they were refused.
    let deadline = Instant::now() + Duration::from_secs(20);
    let passed = loop {
        let status = String::from_utf8_lossy(&sb.sessionpipe(&["status"]).stdout).into_owned();
        if status.contains("outbox: 3 events") && status.contains(": 0 events behind") {
            break true;
        }
        if Instant::now() > deadline {
            break false;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(passed, "the refused events were dropped, not kept");
    assert!(r.stats().posts >= 1);
    r.set_fault(None);
    hook(&sb, "SessionEnd", json!({"reason": "exit"}));
    let evs = wait_stored(&r, 1, Duration::from_secs(20));
    std::thread::sleep(Duration::from_secs(1));
    let evs_later = stored(&r);
    assert_eq!(
        evs.len(),
        1,
        "the refused batches are not sent again: {evs:?}"
    );
    assert_eq!(evs[0]["type"], "session.ended");
    assert_eq!(evs_later.len(), 1, "{evs_later:?}");
}

#[test]
fn a_413_halves_the_batch_429_waits_and_503_backs_off() {
    let sb = Sandbox::new();
    let r = receiver(3);
    add_sink(&sb, &r.url(), "3", None);
    // Events pile up first, so the first send is one batch of them all.
    a_turn(&sb, 3);
    r.set_fault(Some(Fault {
        count: 1,
        ..Fault::new(413)
    }));
    let _d = sb.start_daemon();
    let evs = wait_stored(&r, 9, Duration::from_secs(20));
    assert_eq!(evs.len(), 9, "halved and sent");
    let seqs: Vec<u64> = evs
        .iter()
        .map(|e| e["session"]["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, (1..=9).collect::<Vec<_>>());

    r.set_fault(Some(Fault {
        count: 1,
        retry_after: Some("1".into()),
        ..Fault::new(429)
    }));
    let t = Instant::now();
    hook(&sb, "SessionEnd", json!({"reason": "exit"}));
    wait_stored(&r, 10, Duration::from_secs(20));
    assert!(
        t.elapsed() >= Duration::from_millis(900),
        "waited for retry-after"
    );

    r.set_fault(Some(Fault {
        count: 1,
        ..Fault::new(503)
    }));
    let t = Instant::now();
    hook(&sb, "SessionStart", json!({"source": "resume"}));
    let evs = wait_stored(&r, 11, Duration::from_secs(20));
    assert_eq!(evs.len(), 11);
    assert!(
        t.elapsed() >= Duration::from_secs(2),
        "backed off 2 s after a 503"
    );
    // The sink writes its list after it has read the 202, a moment after the
    // receiver stored the batch.
    let until = Instant::now() + Duration::from_secs(5);
    let mut last_error = sink_list(&sb)[0]["last_error"].clone();
    while !last_error.is_null() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
        last_error = sink_list(&sb)[0]["last_error"].clone();
    }
    assert!(
        last_error.is_null(),
        "a success clears the error: {last_error}"
    );
}

#[test]
fn batches_are_signed_with_the_webhook_secret() {
    let sb = Sandbox::new();
    let secret = "whsec_TWZLUTlyOEdLWXFyVHdqVVBEOElMUFpJbzJMYUxhU3c=";
    let mut o = Options::new(TOKEN);
    o.webhook_secret = Some(secret.into());
    let r = Receiver::start(o).unwrap();
    add_sink(&sb, &r.url(), "0", Some(secret));
    let _d = sb.start_daemon();
    a_turn(&sb, 0);
    assert_eq!(wait_stored(&r, 3, Duration::from_secs(20)).len(), 3);
    // A wrong secret is refused by the receiver: the sink pauses on its 401.
    let sb2 = Sandbox::new();
    add_sink(&sb2, &r.url(), "0", Some("whsec_d3Jvbmcgc2VjcmV0"));
    let _d2 = sb2.start_daemon();
    a_turn(&sb2, 0);
    let deadline = Instant::now() + Duration::from_secs(20);
    while sink_list(&sb2)[0]["paused"].is_null() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!sink_list(&sb2)[0]["paused"].is_null());
}

#[test]
fn a_retried_batch_says_the_same_webhook_id() {
    use sessionpipe_testkit::http::{HttpServer, Response};
    use std::sync::atomic::{AtomicUsize, Ordering};
    // A receiver that is down for the first post and takes the second.
    let posts = AtomicUsize::new(0);
    let origin = std::sync::Arc::new(std::sync::OnceLock::<String>::new());
    let named = origin.clone();
    let server = HttpServer::start(move |req| {
        if req.path() == "/.well-known/sessionpipe" {
            let events = format!("{}/v1/events", named.get().unwrap());
            return Response::json(
                200,
                &json!({"protocol": [1], "max_tier": 3, "endpoints": {"events": events}}),
            );
        }
        if posts.fetch_add(1, Ordering::SeqCst) == 0 {
            return Response::json(503, &json!({"error": "starting up"}));
        }
        let n = req
            .json()
            .and_then(|b| b["events"].as_array().map(Vec::len));
        Response::json(
            202,
            &json!({"accepted": n.unwrap_or(0), "duplicates": 0, "rejected": []}),
        )
    })
    .unwrap();
    origin.set(server.base_url()).unwrap();
    let sb = Sandbox::new();
    let secret = "whsec_TWZLUTlyOEdLWXFyVHdqVVBEOElMUFpJbzJMYUxhU3c=";
    add_sink(&sb, &server.base_url(), "0", Some(secret));
    let _d = sb.start_daemon();
    hook(&sb, "UserPromptSubmit", json!({"prompt": "go"}));
    let deadline = Instant::now() + Duration::from_secs(20);
    let posted = loop {
        let posted: Vec<_> = server
            .requests()
            .into_iter()
            .filter(|r| r.method == "POST")
            .collect();
        if posted.len() >= 2 || Instant::now() > deadline {
            break posted;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(posted.len() >= 2, "the batch was sent again after the 503");
    let id = |i: usize| posted[i].header("webhook-id").unwrap().to_string();
    assert_eq!(posted[0].body, posted[1].body, "the same batch");
    assert_eq!(id(0), id(1), "its retry reuses the webhook-id");
    assert!(id(0).starts_with("msg_"));
}

#[test]
fn a_refused_token_is_replaced_with_sink_token_and_nothing_is_lost() {
    let sb = Sandbox::new();
    let r = receiver(3);
    let mut c = sb.command(sessionpipe_testkit::sandbox::bin("sessionpipe"));
    c.args(["sink", "add", &r.url(), "--tier", "0", "--token-stdin"]);
    let out = sessionpipe_testkit::sandbox::run_with_stdin(c, b"an-old-token\n");
    assert!(out.status.success());
    let id = sink_list(&sb)[0]["id"].as_str().unwrap().to_string();
    let _d = sb.start_daemon();
    a_turn(&sb, 0);
    let deadline = Instant::now() + Duration::from_secs(20);
    while sink_list(&sb)[0]["paused"].is_null() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let paused = sink_list(&sb)[0]["paused"].as_str().unwrap().to_string();
    assert!(
        paused.contains(&format!("sessionpipe sink token {id} --token-stdin")),
        "the pause says what to do: {paused}"
    );
    // `sink add` on the same URL is refused; `sink token` is the way.
    let mut c = sb.command(sessionpipe_testkit::sandbox::bin("sessionpipe"));
    c.args(["sink", "token", &id, "--token-stdin"]);
    let out = sessionpipe_testkit::sandbox::run_with_stdin(c, format!("{TOKEN}\n").as_bytes());
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.contains("sends again"), "{said}");
    assert!(!said.contains(TOKEN), "the token is never printed: {said}");
    // Every event held back while paused arrives, once.
    let got = wait_stored(&r, 3, Duration::from_secs(20));
    assert_eq!(got.len(), 3, "{got:#?}");
    assert!(sink_list(&sb)[0]["paused"].is_null());
    // A file sink has no token to replace.
    let file = format!("file:{}", sb.home.join("events.jsonl").display());
    assert!(sb.sessionpipe(&["sink", "add", &file]).status.success());
    let file_id = sink_list(&sb)[1]["id"].as_str().unwrap().to_string();
    let mut c = sb.command(sessionpipe_testkit::sandbox::bin("sessionpipe"));
    c.args(["sink", "token", &file_id, "--token-stdin"]);
    let out = sessionpipe_testkit::sandbox::run_with_stdin(c, b"x\n");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not an HTTP sink"));
}

#[test]
fn sink_test_is_a_round_trip_that_leaves_nothing_behind() {
    let sb = Sandbox::new();
    let r = receiver(3);
    let id = add_sink(&sb, &r.url(), "1", None);
    let out = sb.sessionpipe(&["sink", "test", &id]);
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{said}");
    let line = said
        .lines()
        .find(|l| l.starts_with("round trip: the receiver took a heartbeat of sessionpipe-test-"))
        .unwrap_or_else(|| panic!("{said}"));
    let session = line.split_whitespace().nth(6).unwrap();
    assert_eq!(
        r.stats().posts,
        1,
        "one batch: the heartbeat and its forget"
    );
    assert!(
        r.events("sessionpipe", session)
            .unwrap()
            .unwrap_or_default()
            .iter()
            .all(|e| e["type"] == "session.forgotten"),
        "the receiver keeps nothing of the test session"
    );
    assert!(sb.events().is_empty(), "nothing went into the outbox");
    // A refused token: said, with what to do.
    let other = Sandbox::new();
    let mut c = other.command(sessionpipe_testkit::sandbox::bin("sessionpipe"));
    c.args(["sink", "add", &r.url(), "--token-stdin"]);
    assert!(
        sessionpipe_testkit::sandbox::run_with_stdin(c, b"wrong-token\n")
            .status
            .success()
    );
    let wrong = sink_list(&other)[0]["id"].as_str().unwrap().to_string();
    let out = other.sessionpipe(&["sink", "test", &wrong]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains(&format!("sessionpipe sink token {wrong} --token-stdin")),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn replay_sends_the_outbox_again_and_the_receiver_takes_each_event_once() {
    let sb = Sandbox::new();
    let r = receiver(3);
    let id = add_sink(&sb, &r.url(), "0", None);
    // No daemon: the cursor goes back here, and status says what waits.
    a_turn(&sb, 0);
    let d = sb.start_daemon();
    assert_eq!(wait_stored(&r, 3, Duration::from_secs(20)).len(), 3);
    d.terminate();
    let out = sb.sessionpipe(&["replay", "--from-start"]);
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains(&format!(
            "sink {id}: 3 events again; the daemon sends them when it runs"
        )),
        "{said}"
    );
    let status = String::from_utf8_lossy(&sb.sessionpipe(&["status"]).stdout).into_owned();
    assert!(status.contains("3 events behind"), "{status}");
    // With a daemon: its sink starts over, the receiver counts them as known.
    let _d = sb.start_daemon();
    let deadline = Instant::now() + Duration::from_secs(20);
    while r.stats().duplicates < 3 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(r.stats().duplicates, 3);
    let out = sb.sessionpipe(&["replay", "--sink", &id, "--since", "2020-01-01", "--json"]);
    let done: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(done[0]["by_daemon"], true);
    assert_eq!(done[0]["events"], 3);
    let deadline = Instant::now() + Duration::from_secs(20);
    while r.stats().duplicates < 6 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(r.stats().duplicates, 6, "sent once more, not twice");
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(r.stats().duplicates, 6, "and not again at the next look");
    assert!(
        sink_list(&sb)[0].get("replay_from").is_none(),
        "the request is cleared"
    );
    assert_eq!(stored(&r).len(), 3, "each event once");
    // Nothing that new, a wrong time or sink: said.
    let out = sb.sessionpipe(&["replay", "--since", "2999-01-01"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("0 events again"));
    let out = sb.sessionpipe(&["replay", "--since", "yesterday"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a time"));
    let out = sb.sessionpipe(&["replay", "--sink", "s_nope", "--from-start"]);
    assert!(!out.status.success());
    assert!(
        sb.sessionpipe(&["replay"]).status.code() == Some(2),
        "from where is asked"
    );
}

#[test]
fn batches_on_the_wire_together_end_exactly_once_after_a_refusal_among_them() {
    let sb = Sandbox::new();
    let mut o = Options::new(TOKEN);
    // Small batches: the backlog below is eight of them, so several go at once.
    o.max_events = 5;
    let r = Receiver::start(o).unwrap();
    add_sink(&sb, &r.url(), "3", None);
    a_turn(&sb, 9);
    a_turn(&sb, 9);
    // The first batch is refused; the ones sent with it may have been stored
    // already, and go again after it.
    r.set_fault(Some(Fault {
        count: 1,
        ..Fault::new(503)
    }));
    let _d = sb.start_daemon();
    // Two turns of nine tools (20 events each) and the session's start.
    let evs = wait_stored(&r, 41, Duration::from_secs(30));
    let seqs: Vec<u64> = evs
        .iter()
        .map(|e| e["session"]["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, (1..=41).collect::<Vec<_>>(), "every event, once");
    let keys = r.stored_keys();
    let mut unique = keys.clone();
    unique.dedup();
    assert_eq!(keys.len(), unique.len());
    assert_eq!(keys.len(), 41);
}
