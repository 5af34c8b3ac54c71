//! Antigravity's tier 2, facts and backfill through the daemon. Antigravity is
//! not installed here, so its files are the ones in
//! `conformance/transcripts/antigravity/` (built from ADAPTERS.md), written into
//! the sandbox step by step as Antigravity would, and the hook calls are
//! hand-made in the shapes of `conformance/harness/antigravity/`.

use serde_json::{Value, json};
use sessionpipe_testkit::Sandbox;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

const CONV: &str = "ec33ebf9-0cba-4100-8142-c61503f6c587";
/// The recorded fixtures' workspace; the project file names the same folder.
const WORKSPACE: &str = "file:///tmp/rec/agy%20proj";
const URL: &str = "https://antigravity.google.com/r/6c1f7a52-93d4-4b4e-9c41-2a51d7f0e8b3-v2?p=c/ec33ebf9-0cba-4100-8142-c61503f6c587?section=8d0e2c1a-5b7f-4c3e-a1d2-9f6b0c4e7a15";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../conformance/transcripts/antigravity")
}

/// The fixture's steps, one JSON value each.
fn steps() -> Vec<Value> {
    std::fs::read_to_string(fixtures().join("two-turns.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

struct Agy {
    sb: Sandbox,
    data: PathBuf,
    transcript: PathBuf,
    /// Hooks leave their jobs in the spool until the daemon starts.
    stalled: bool,
}

impl Agy {
    /// A sandbox with tier 2 on and the CLI's data folder holding the state
    /// file, the project file and an empty transcript.
    fn new() -> Agy {
        let sb = Sandbox::new();
        std::fs::create_dir_all(&sb.state).unwrap();
        std::fs::write(sb.state.join("config.json"), r#"{"transcripts": true}"#).unwrap();
        let data = sb.home.join(".gemini/antigravity-cli");
        std::fs::create_dir_all(&data).unwrap();
        std::fs::copy(
            fixtures().join("antigravity_state.pbtxt"),
            data.join("antigravity_state.pbtxt"),
        )
        .unwrap();
        let projects = sb.home.join(".gemini/config/projects");
        std::fs::create_dir_all(&projects).unwrap();
        std::fs::copy(
            fixtures().join("project.json"),
            projects.join("agy-proj.json"),
        )
        .unwrap();
        let transcript = data
            .join("brain")
            .join(CONV)
            .join(".system_generated/logs/transcript.jsonl");
        std::fs::create_dir_all(transcript.parent().unwrap()).unwrap();
        std::fs::write(&transcript, "").unwrap();
        Agy {
            sb,
            data,
            transcript,
            stalled: false,
        }
    }

    /// Appends steps, each made now (`created_at` the time it is written, as
    /// Antigravity stamps a step when it makes it).
    fn write(&self, steps: &[Value]) {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.transcript)
            .unwrap();
        for step in steps {
            let mut step = step.clone();
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_millis();
            step["created_at"] = json!(rfc3339(now as i64));
            writeln!(f, "{step}").unwrap();
        }
        // The next hook comes later than the step, as it does in a real run.
        std::thread::sleep(Duration::from_millis(5));
    }

    fn hook(&self, event: &str, extra: Value, with_path: bool) {
        let mut p = json!({
            "conversationId": CONV,
            "workspacePaths": [WORKSPACE],
            "artifactDirectoryPath": self.data.join("brain").join(CONV),
            "modelName": "gemini-3.1-pro",
        });
        if with_path {
            p["transcriptPath"] = json!(self.transcript);
        }
        p.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let no_worker: &[(&str, &str)] = if self.stalled {
            &[("SESSIONPIPE_BIN", "/nonexistent")]
        } else {
            &[]
        };
        let out = self
            .sb
            .hook_with("antigravity", event, p.to_string().as_bytes(), no_worker);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::thread::sleep(Duration::from_millis(5));
    }

    /// One turn as Antigravity runs it: the ask, the first invocation, the
    /// planner's steps and a named tool, the Stop.
    fn turn(&self, steps: &[Value], with_path: bool) {
        let (ask, rest) = steps.split_first().unwrap();
        self.write(std::slice::from_ref(ask));
        self.hook(
            "PreInvocation",
            json!({"invocationNum": 0, "initialNumSteps": 0}),
            with_path,
        );
        self.write(rest);
        self.hook(
            "Stop",
            json!({"executionNum": 0, "terminationReason": "model_stop", "fullyIdle": true}),
            with_path,
        );
    }

    fn wait(&self, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        self.sb.wait_until(Duration::from_secs(20), done)
    }
}

fn rfc3339(ms: i64) -> String {
    sessionpipe_core::protocol::time::rfc3339_ms(ms)
}

/// Kinds of the events, heartbeats left out (their timing is the adapter's).
fn kinds(evs: &[Value]) -> Vec<&str> {
    evs.iter()
        .map(|e| e["type"].as_str().unwrap())
        .filter(|k| *k != "session.heartbeat")
        .collect()
}

fn transcripts(evs: &[Value]) -> Vec<&Value> {
    evs.iter()
        .filter(|e| e["type"] == "turn.transcript")
        .collect()
}

const TWO_TURNS: [&str; 7] = [
    "session.started",
    "turn.started",
    "turn.ended",
    "turn.transcript",
    "turn.started",
    "turn.ended",
    "turn.transcript",
];

fn check_two_turns(evs: &[Value]) {
    assert_eq!(kinds(evs), TWO_TURNS, "{evs:#?}");
    let sent = transcripts(evs);
    assert_eq!(sent[0]["data"]["turn"], 1);
    assert_eq!(
        sent[0]["data"]["user"],
        "Read sample.txt and reply with its first line"
    );
    assert_eq!(
        sent[0]["data"]["assistant"],
        "I will read the file.\n\nalpha-token-marker-42"
    );
    assert_eq!(sent[1]["data"]["turn"], 2);
    assert_eq!(sent[1]["data"]["user"], "Now count its lines");
    assert_eq!(sent[1]["data"]["assistant"], "It has 3 lines.");
    let s = &sent[1]["session"];
    assert_eq!(s["title"], "Read sample.txt and reply with its first line");
    assert_eq!(s["title_source"], "first-ask");
    assert_eq!(s["url"], URL);
    assert_eq!(s["cwd"], "/tmp/rec/agy proj");
    assert_eq!(s["model"], "gemini-3.1-pro");
    let all = serde_json::to_string(evs).unwrap();
    assert!(!all.contains("ADDITIONAL_METADATA") && !all.contains("USER_SETTINGS_CHANGE"));
}

#[test]
fn each_stop_sends_its_turn_with_the_conversations_title_and_link() {
    let a = Agy::new();
    let _daemon = a.sb.start_daemon();
    let steps = steps();
    a.turn(&steps[..4], true);
    let evs = a.wait(|evs| !transcripts(evs).is_empty());
    assert_eq!(
        kinds(&evs),
        [
            "session.started",
            "turn.started",
            "turn.ended",
            "turn.transcript"
        ]
    );
    // The second turn's hooks name no transcript: it is found in its data folder.
    a.turn(&steps[4..], false);
    let evs = a.wait(|evs| transcripts(evs).len() >= 2);
    check_two_turns(&evs);
}

#[test]
fn a_daemon_catching_up_sends_each_turn_after_its_own_end() {
    let mut a = Agy::new();
    a.stalled = true;
    let steps = steps();
    // The whole conversation is in the file before the daemon reads a hook.
    a.turn(&steps[..4], true);
    a.turn(&steps[4..], true);
    a.stalled = false;
    let _daemon = a.sb.start_daemon();
    let evs = a.wait(|evs| transcripts(evs).len() >= 2);
    check_two_turns(&evs);
}

#[test]
fn past_conversations_are_backfilled_once() {
    let a = Agy::new();
    std::fs::copy(fixtures().join("two-turns.jsonl"), &a.transcript).unwrap();
    let count = |out: std::process::Output| -> Value {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let counts: Value = serde_json::from_slice(&out.stdout).unwrap();
        counts
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["harness"] == "antigravity")
            .unwrap()
            .clone()
    };
    let first = count(a.sb.sessionpipe(&["backfill", "--json"]));
    assert_eq!(
        (first["found"].as_u64(), first["added"].as_u64()),
        (Some(1), Some(1))
    );
    let evs = a.sb.events();
    assert_eq!(kinds(&evs), ["session.backfill"]);
    let e = &evs[0];
    assert_eq!(e["session"]["id"], CONV);
    assert_eq!(e["session"]["seq"], 0);
    assert_eq!(
        e["session"]["title"],
        "Read sample.txt and reply with its first line"
    );
    assert_eq!(e["data"]["started_at"], "2026-11-20T09:00:00.000Z");
    assert_eq!(e["data"]["last_at"], "2026-11-20T09:01:04.000Z");
    assert_eq!(e["data"]["turns"], 2);
    let again = count(a.sb.sessionpipe(&["backfill", "--json"]));
    assert_eq!(
        (again["added"].as_u64(), again["known"].as_u64()),
        (Some(0), Some(1))
    );
    assert_eq!(a.sb.events().len(), 1);
}
