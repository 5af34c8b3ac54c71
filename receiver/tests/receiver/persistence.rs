//! Dedup, forgetting and restarts: what the chaos test relies on. The last tests
//! run the `sessionpipe-receiver` binary itself.

use crate::common::*;
use serde_json::{Value, json};
use std::process::Command;

fn with_data(dir: &std::path::Path) -> Options {
    Options {
        data: Some(dir.to_path_buf()),
        ..Options::new(TOKEN)
    }
}

fn counts(r: &Reply) -> (u64, u64, usize) {
    (
        r.body["accepted"].as_u64().unwrap(),
        r.body["duplicates"].as_u64().unwrap(),
        r.body["rejected"].as_array().unwrap().len(),
    )
}

#[test]
fn duplicates_within_a_batch_across_batches_and_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let rx = start(with_data(dir.path()));
    let first: Vec<Value> = (0..3).map(|i| started("s", i)).collect();
    assert_eq!(counts(&rx.send(&first)), (3, 0, 0));
    // Same keys, fresh ids: the key is (harness, session, seq), not the id.
    let mut again: Vec<Value> = (0..5).map(|i| started("s", i)).collect();
    again.push(started("s", 4));
    assert_eq!(counts(&rx.send(&again)), (2, 4, 0));
    let addr = rx.h.addr();
    rx.h.stop();

    let rx = start(Options {
        listen: addr,
        ..with_data(dir.path())
    });
    assert_eq!(
        rx.h.url(),
        format!("http://{addr}"),
        "restarted on the same port"
    );
    assert_eq!(counts(&rx.send(&again)), (0, 6, 0));
    assert_eq!(counts(&rx.send(&[started("s", 5)])), (1, 0, 0));
    let keys = rx.h.stored_keys();
    let want: Vec<_> = (0..6)
        .map(|i| ("test-harness".to_string(), "s".to_string(), i))
        .collect();
    assert_eq!(keys, want);
    let stored = rx.h.events("test-harness", "s").unwrap().unwrap();
    assert_eq!(stored.len(), 6, "one row per stored event");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join("receiver.db"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "the database is the owner's to read");
    }
}

#[test]
fn racing_senders_store_each_key_once() {
    let rx = start_default();
    let batches: Vec<Vec<Value>> = (0..4)
        .map(|_| {
            (0..40)
                .map(|i| started(&format!("s{}", i % 4), i))
                .collect()
        })
        .collect();
    let totals: Vec<(u64, u64, usize)> = std::thread::scope(|s| {
        let rx = &rx;
        let handles: Vec<_> = batches
            .iter()
            .map(|b| s.spawn(move || counts(&rx.send(b))))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let accepted: u64 = totals.iter().map(|t| t.0).sum();
    let duplicates: u64 = totals.iter().map(|t| t.1).sum();
    assert_eq!((accepted, duplicates), (40, 120));
    assert_eq!(rx.h.stored_keys().len(), 40);
    assert_eq!(rx.h.stats().sessions, 4);
}

#[test]
fn forgetting_deletes_the_session_for_good() {
    let dir = tempfile::tempdir().unwrap();
    let rx = start(with_data(dir.path()));
    rx.send(&[started("gone", 0), started("gone", 1), started("kept", 0)]);
    let forget = event("gone", 2, "session.forgotten", 0);
    let r = rx.send(&[started("gone", 3), forget.clone()]);
    assert_eq!(counts(&r), (2, 0, 0), "the forget and the event before it");
    assert_eq!(rx.seqs("gone"), Err(404));
    assert!(rx.h.session("test-harness", "gone").is_none());
    // Nothing of it is left in the file's bytes either (deleted pages are
    // zeroed, the log is folded in and cut).
    for f in ["receiver.db", "receiver.db-wal"] {
        let bytes = std::fs::read(dir.path().join(f)).unwrap_or_default();
        assert!(
            !bytes.windows(4).any(|w| w == b"gone"),
            "{f} still holds the forgotten session"
        );
    }
    assert_eq!(rx.seqs("kept"), Ok(vec![0]), "other sessions stay");

    // A retry of anything at or below the forget is not stored again.
    assert_eq!(counts(&rx.send(&[started("gone", 1), forget])), (0, 2, 0));
    assert_eq!(rx.seqs("gone"), Err(404));
    let addr = rx.h.addr();
    rx.h.stop();
    let rx = start(Options {
        listen: addr,
        ..with_data(dir.path())
    });
    assert_eq!(
        counts(&rx.send(&[started("gone", 0)])),
        (0, 1, 0),
        "after a restart too"
    );
    // Later events of the same session are new and stored.
    assert_eq!(counts(&rx.send(&[started("gone", 4)])), (1, 0, 0));
    assert_eq!(rx.seqs("gone"), Ok(vec![4]));
    let keys: Vec<(String, u64)> = rx.h.stored_keys().into_iter().map(|k| (k.1, k.2)).collect();
    assert_eq!(keys, [("gone".to_string(), 4), ("kept".to_string(), 0)]);
}

#[test]
fn without_a_data_folder_the_files_go_with_the_receiver() {
    let rx = start_default();
    rx.send(&[started("s", 0)]);
    let dir = rx.h.data_dir().to_path_buf();
    assert!(dir.join("receiver.db").is_file());
    rx.h.stop();
    assert!(!dir.exists());
}

fn spawn_bin(args: &[&str]) -> sessionpipe_testkit::sandbox::UrlProcess {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sessionpipe-receiver"));
    cmd.args(args);
    sessionpipe_testkit::sandbox::UrlProcess::spawn(cmd)
}

fn post(url: &str, events: &[Value]) -> (u16, Value) {
    let r = reqwest::blocking::Client::new()
        .post(format!("{url}/v1/events"))
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .body(json!({ "events": events }).to_string())
        .send()
        .unwrap();
    let status = r.status().as_u16();
    (status, serde_json::from_str(&r.text().unwrap()).unwrap())
}

#[test]
fn the_binary_killed_and_restarted_still_deduplicates() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_str().unwrap();
    let args = [
        "--token",
        TOKEN,
        "--data",
        data,
        "--max-tier",
        "1",
        "--quiet",
    ];
    let mut bin = spawn_bin(&args);
    assert!(bin.url.starts_with("http://127.0.0.1:"), "{}", bin.url);
    let wk: Value = reqwest::blocking::get(format!("{}/.well-known/sessionpipe", bin.url))
        .unwrap()
        .json_value();
    assert_eq!(wk["max_tier"], 1);
    let batch: Vec<Value> = (0..10).map(|i| started("s", i)).collect();
    assert_eq!(post(&bin.url, &batch).1["accepted"], 10);
    // SIGKILL: no chance to flush anything that was not written before the 202.
    bin.child.kill().unwrap();
    bin.child.wait().unwrap();

    let mut bin = spawn_bin(&args);
    let (status, body) = post(&bin.url, &batch);
    assert_eq!((status, &body["duplicates"]), (202, &json!(10)));
    // SIGTERM stops it cleanly.
    let pid = bin.child.id().to_string();
    Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(bin.child.wait().unwrap().success());
}

#[test]
fn the_binary_refuses_a_non_loopback_listen() {
    let out = Command::new(env!("CARGO_BIN_EXE_sessionpipe-receiver"))
        .args(["--token", TOKEN, "--listen", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--allow-remote"), "{err}");
    assert!(!err.contains(TOKEN), "the token is never printed");
}

trait JsonValue {
    fn json_value(self) -> Value;
}

impl JsonValue for reqwest::blocking::Response {
    fn json_value(self) -> Value {
        serde_json::from_str(&self.text().unwrap()).unwrap()
    }
}

#[test]
fn on_postgres_events_survive_a_database_restart_and_a_forget_leaves_nothing() {
    let Some(mut pg) = sessionpipe_testkit::postgres::start_or_skip("receiver on postgres") else {
        return;
    };
    let url = pg.create_database("persist").unwrap();
    let on_pg = || Options {
        database: Some(url.clone()),
        ..Options::new(TOKEN)
    };
    let rx = start(on_pg());
    assert_eq!(
        counts(&rx.send(&[started("kept", 0), started("doomed-session", 0)])),
        (2, 0, 0)
    );
    rx.h.stop();
    pg.restart().unwrap();

    let rx = start(on_pg());
    assert_eq!(rx.seqs("kept"), Ok(vec![0]), "stored across both restarts");
    assert_eq!(
        counts(&rx.send(&[started("kept", 0)])),
        (0, 1, 0),
        "dedup too"
    );
    let forget = event("doomed-session", 1, "session.forgotten", 0);
    assert_eq!(counts(&rx.send(&[forget])), (1, 0, 0));
    assert_eq!(rx.seqs("doomed-session"), Err(404));
    // No row of any table names it: every table's rows as text, searched.
    let tables = pg
        .psql(
            "persist",
            "SELECT string_agg(tablename, ' ') FROM pg_tables WHERE schemaname = 'public'",
        )
        .unwrap();
    assert!(
        tables.contains("events") && tables.contains("sessions"),
        "{tables}"
    );
    for table in tables.split_whitespace() {
        let hits = pg
            .psql(
                "persist",
                &format!("SELECT count(*) FROM {table} t WHERE t::text LIKE '%doomed-session%'"),
            )
            .unwrap();
        assert_eq!(hits, "0", "{table} still names the forgotten session");
    }
    assert_eq!(rx.seqs("kept"), Ok(vec![0]));
}
