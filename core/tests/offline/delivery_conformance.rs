//! `sessionpipe conformance --receiver URL` over the shared delivery scenarios
//! (`../shared/conformance/delivery/`, skipped with one line when that folder is not
//! beside the repository), against our own receiver: started in-process on its
//! SQLite file, on a real PostgreSQL, and as two `sessionpipe-receiver` processes
//! sharing one PostgreSQL behind a round-robin balancer (every request to the
//! other process than the last); the events side and, with its control side on,
//! 09-18 (the runner pairs as a machine).

use serde_json::{Value, json};
use sessionpipe_receiver::{ControlOptions, Fault, Options, Receiver};
use sessionpipe_testkit::Sandbox;
use std::path::{Path, PathBuf};
use std::process::Command;

const TOKEN: &str = "delivery-conformance-token";

fn shared_delivery() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/conformance/delivery");
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!("skipped: {} is absent (a clone elsewhere)", dir.display());
        None
    }
}

/// `sessionpipe conformance [--receiver URL --token T] PATHS`: exit success, stdout.
fn conformance(receiver: Option<&str>, paths: &[&Path]) -> (bool, String) {
    let sb = Sandbox::new();
    let mut args: Vec<String> = vec!["conformance".into()];
    if let Some(url) = receiver {
        args.extend([
            "--receiver".into(),
            url.into(),
            "--token".into(),
            TOKEN.into(),
        ]);
    }
    args.extend(paths.iter().map(|p| p.display().to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = sb.sessionpipe(&args);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    (out.status.success(), text)
}

/// The scenario files, each with whether it belongs to the control side.
fn scenarios(dir: &Path) -> Vec<(String, bool)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let doc: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
            (p.display().to_string(), doc["capability"] == "control")
        })
        .collect()
}

fn line_for<'a>(text: &'a str, file: &str) -> &'a str {
    text.lines()
        .find(|l| {
            l.split_whitespace()
                .nth(1)
                .is_some_and(|n| n.trim_end_matches(':') == file)
        })
        .unwrap_or_else(|| panic!("no line for {file} in:\n{text}"))
}

#[test]
fn every_scenario_passes_against_our_receiver() {
    let Some(dir) = shared_delivery() else {
        return;
    };
    let data = tempfile::tempdir().unwrap();
    let rx = Receiver::start(Options {
        data: Some(data.path().to_path_buf()),
        ..scenario_options()
    })
    .unwrap();
    all_pass(&rx.url(), &dir);
    // What the scenarios stored: 01 (3 events), 02 (1), 04 (none: refused), 07 (1);
    // 08 forgot its session. Per run.
    let per_session: Vec<usize> = {
        let mut by = std::collections::BTreeMap::<String, usize>::new();
        for (_, session, _) in rx.stored_keys() {
            *by.entry(session).or_default() += 1;
        }
        by.into_values().collect()
    };
    let mut sorted = per_session.clone();
    sorted.sort();
    assert_eq!(sorted, [1, 1, 1, 1, 3, 3], "{per_session:?}");
}

/// Runs every scenario against `url`, twice, and says each passed: each
/// run's `{run}` is fresh, so the second is not answered with the first one's
/// duplicates (and pairs a new machine).
fn all_pass(url: &str, dir: &Path) {
    let files = scenarios(dir);
    for _ in 0..2 {
        let (ok, text) = conformance(Some(url), &[dir]);
        assert!(ok, "{text}");
        for (file, _) in &files {
            let line = line_for(&text, file);
            assert!(line.starts_with("pass "), "{line}");
        }
        let last = text.lines().last().unwrap();
        assert_eq!(last, format!("{} passed, 0 failed, 0 skipped", files.len()));
        println!("{last}");
    }
}

/// max_tier 1, so that the tier scenario (skipped at 3) runs; control with
/// open pairing and a session tool, so that 16 and 17 run too.
fn scenario_options() -> Options {
    Options {
        max_tier: 1,
        control: Some(ControlOptions {
            open_pairing: true,
            session_tools: vec!["mcp__sessionpipe".into()],
            ..ControlOptions::new("localhost")
        }),
        ..Options::new(TOKEN)
    }
}

fn on_postgres(url: String) -> Options {
    Options {
        database: Some(url),
        ..scenario_options()
    }
}

#[test]
fn every_scenario_passes_against_our_receiver_on_postgres() {
    let Some(dir) = shared_delivery() else {
        return;
    };
    let Some(pg) = sessionpipe_testkit::postgres::start_or_skip("delivery on postgres") else {
        return;
    };
    let url = pg.create_database("delivery").unwrap();
    let rx = Receiver::start(on_postgres(url.clone())).unwrap();
    all_pass(&rx.url(), &dir);
    let stored = rx.stored_keys().len();
    assert_eq!(
        stored,
        2 * 5,
        "01, 02 and 07 store 5 events a run; 08 forgets its own"
    );
    rx.stop();
    // A second receiver on the same database sees what the first stored.
    let again = Receiver::start(on_postgres(url)).unwrap();
    assert_eq!(again.stored_keys().len(), stored);
}

/// A `sessionpipe-receiver` process on `database`, as the scenarios want it.
fn process_on(database: &str) -> sessionpipe_testkit::sandbox::UrlProcess {
    let mut cmd = Command::new(sessionpipe_testkit::sandbox::bin("sessionpipe-receiver"));
    cmd.args(["--max-tier", "1", "--quiet", "--control", "--open-pairing"])
        .args(["--session-tool", "mcp__sessionpipe"])
        .env("SESSIONPIPE_RECEIVER_TOKEN", TOKEN)
        .env("SESSIONPIPE_RECEIVER_DATABASE", database);
    let p = sessionpipe_testkit::sandbox::UrlProcess::spawn(cmd);
    assert!(
        p.url.starts_with("http://"),
        "the receiver printed {:?}",
        p.url
    );
    p
}

#[test]
fn every_scenario_passes_against_two_receiver_processes_on_one_postgres() {
    let Some(dir) = shared_delivery() else {
        return;
    };
    let Some(pg) = sessionpipe_testkit::postgres::start_or_skip("two receivers on postgres") else {
        return;
    };
    let url = pg.create_database("shared").unwrap();
    let (a, b) = (process_on(&url), process_on(&url));
    let lb =
        sessionpipe_testkit::balancer::Balancer::start(&[a.url.clone(), b.url.clone()]).unwrap();
    all_pass(&lb.url(), &dir);
    let served = lb.served();
    // Every request went to the other process than the last one: pairing, the
    // long-poll, acks and redelivery all crossed between the two.
    assert!(served[0] > 20 && served[1] > 20, "{served:?}");
    assert!(served[0].abs_diff(served[1]) <= 1, "{served:?}");
}

#[test]
fn without_control_its_scenarios_are_skipped_with_one_line() {
    let Some(dir) = shared_delivery() else {
        return;
    };
    let rx = Receiver::start(Options::new(TOKEN)).unwrap();
    let (ok, text) = conformance(Some(&rx.url()), &[&dir]);
    assert!(ok, "{text}");
    for (file, control) in scenarios(&dir) {
        let line = line_for(&text, &file);
        if control {
            assert!(
                line.ends_with(": the receiver does not list capability control"),
                "{line}"
            );
        }
    }
}

#[test]
fn at_max_tier_3_the_tier_scenario_is_skipped() {
    let Some(dir) = shared_delivery() else {
        return;
    };
    let tier = dir.join("04-tier.json");
    if !tier.is_file() {
        eprintln!("skipped: {} is absent", tier.display());
        return;
    }
    let rx = Receiver::start(Options::new(TOKEN)).unwrap();
    let (ok, text) = conformance(Some(&rx.url()), &[&tier]);
    assert!(ok, "{text}");
    let line = line_for(&text, &tier.display().to_string());
    assert!(line.ends_with(": skip_when max_tier == 3"), "{line}");
    assert_eq!(text.lines().last(), Some("0 passed, 0 failed, 1 skipped"));
}

/// A scenario of our own, so that this runs without the shared folder too.
fn accept_scenario(dir: &Path) -> PathBuf {
    let event = json!({
        "protocol": 1, "id": "*", "type": "session.started", "time": "*", "tier": 0,
        "harness": {"name": "conformance", "event": "test"},
        "session": {"id": "conf-{run}", "seq": 0},
        "privacy": {"rulesets": ["secrets@1"], "pii": false},
        "data": {"source": "startup"}
    });
    let doc = json!({
        "name": "accept-and-read", "spec": "ours",
        "steps": [
            {"send": {"events": [event]}, "expect": {"status": 202, "body": {"accepted": 1}}},
            {"read": {"session": "conformance:conf-{run}"},
             "expect": {"status": 200, "body": [{"type": "session.started", "tier": 0}]}},
            {"well_known": {}, "expect": {"status": 200, "body": {"max_tier": "{max_tier}"}}}
        ]
    });
    let path = dir.join("accept-and-read.json");
    std::fs::write(&path, doc.to_string()).unwrap();
    path
}

#[test]
fn a_receiver_that_answers_wrongly_fails_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    let scenario = accept_scenario(tmp.path());
    let rx = Receiver::start(Options::new(TOKEN)).unwrap();
    let (ok, text) = conformance(Some(&rx.url()), &[&scenario]);
    assert!(ok, "{text}");
    assert_eq!(text.lines().last(), Some("1 passed, 0 failed, 0 skipped"));

    rx.set_fault(Some(Fault {
        count: 100,
        ..Fault::new(503)
    }));
    let (ok, text) = conformance(Some(&rx.url()), &[&scenario]);
    assert!(!ok, "{text}");
    let line = line_for(&text, &scenario.display().to_string());
    assert!(
        line.starts_with("FAIL ") && line.contains("step 1 (send): status 503, expected 202"),
        "{line}"
    );
    assert_eq!(text.lines().last(), Some("0 passed, 1 failed, 0 skipped"));
}

#[test]
fn a_wrong_token_or_no_receiver_is_reported_not_passed() {
    let tmp = tempfile::tempdir().unwrap();
    let scenario = accept_scenario(tmp.path());
    let rx = Receiver::start(Options::new("another-token")).unwrap();
    let (ok, text) = conformance(Some(&rx.url()), &[&scenario]);
    assert!(!ok && text.contains("status 401, expected 202"), "{text}");
    assert!(!text.contains(TOKEN), "the token is never printed");

    let (ok, text) = conformance(None, &[&scenario]);
    assert!(ok, "{text}");
    assert!(
        text.contains(": a delivery scenario: needs --receiver URL"),
        "{text}"
    );
    assert_eq!(text.lines().last(), Some("0 passed, 0 failed, 1 skipped"));

    // Nothing listening: the scenario fails with the reason, the run does not hang.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let (ok, text) = conformance(Some(&format!("http://{port}")), &[&scenario]);
    assert!(!ok && text.contains("no answer"), "{text}");
}
