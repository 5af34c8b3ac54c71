//! Each layer's schema steps on real outboxes: one of the first release
//! (written by sessionpipe 0.1.0, commit a1e3398, from the recorded Claude
//! Code, Codex and Gemini CLI payloads of `conformance/harness/`, delivered
//! once to a file sink: `data/outbox-0.1.0.db`, no `user_version`), and one
//! the last version with one list of steps for every layer wrote
//! (`data/outbox-2b4681b.db`, `user_version` 7: its real daemon, the
//! workspace receiver and a software passkey, with control's tables holding
//! a receiver, two keys, nonces, final acks sent, a prompt still queued and
//! an ACP start's name). Opening them to write migrates each layer's own
//! tables (the pipeline's, usage's, control's), whichever opens first, and keeps every
//! event, session, cursor, committed job and control row (a session seen
//! live gains when it was first seen, and the board reads only the sessions
//! it shows); a file or a layer newer than this build is refused and left as
//! it was.

use rusqlite::Connection;
use sessionpipe_core::control::store::Store;
use sessionpipe_core::pipeline::outbox::{Outbox, OutboxError};
use std::path::{Path, PathBuf};

const OLD: &str = "tests/offline/data/outbox-0.1.0.db";
/// Written by the daemon of commit 2b4681b, the last with one list.
const ONE_LIST: &str = "tests/offline/data/outbox-2b4681b.db";

fn copy_of(file: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("outbox.db");
    std::fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join(file), &path).unwrap();
    (dir, path)
}

fn copy_of_old() -> (tempfile::TempDir, PathBuf) {
    copy_of(OLD)
}

/// The pipeline's tables, as rows of text.
const PIPELINE_ROWS: &[&str] = &[
    "SELECT rowid, harness, session, seq, type, time, envelope FROM events ORDER BY rowid",
    "SELECT harness, session, next_seq, record FROM sessions ORDER BY harness, session",
    "SELECT sink, rowid FROM sink_cursors ORDER BY sink",
    "SELECT name, outcome FROM jobs_done ORDER BY name",
];

/// Control's tables, as rows of text.
const CONTROL_ROWS: &[&str] = &[
    "SELECT * FROM control_receivers ORDER BY origin",
    "SELECT * FROM control_keys ORDER BY receiver, id",
    "SELECT * FROM control_nonces ORDER BY nonce",
    "SELECT * FROM control_messages ORDER BY receiver, id",
    "SELECT * FROM control_sessions ORDER BY harness, name",
];

/// Everything the outbox's pipeline tables hold, as rows of text.
fn contents(path: &Path) -> Vec<Vec<String>> {
    rows(path, PIPELINE_ROWS)
}

/// Every row `queries` read, as text.
fn rows(path: &Path, queries: &[&str]) -> Vec<Vec<String>> {
    let c = Connection::open(path).unwrap();
    let mut out = Vec::new();
    for q in queries {
        let mut stmt = c.prepare(q).unwrap();
        let n = stmt.column_count();
        let rows = stmt
            .query_map([], |r| {
                (0..n)
                    .map(|i| {
                        r.get_ref(i).map(|v| match v {
                            rusqlite::types::ValueRef::Integer(i) => i.to_string(),
                            rusqlite::types::ValueRef::Text(t) => {
                                String::from_utf8_lossy(t).into_owned()
                            }
                            other => format!("{other:?}"),
                        })
                    })
                    .collect::<rusqlite::Result<Vec<String>>>()
            })
            .unwrap();
        out.extend(rows.map(Result::unwrap));
    }
    out
}

/// The file's ledger (`layer=version`): each layer's version, and where the
/// one list stood.
fn ledger(path: &Path) -> Vec<String> {
    let c = Connection::open(path).unwrap();
    let mut stmt = c
        .prepare("SELECT layer || '=' || version FROM schema_layers ORDER BY layer")
        .unwrap();
    stmt.query_map([], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

fn user_version(path: &Path) -> i64 {
    Connection::open(path)
        .unwrap()
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap()
}

#[test]
fn an_outbox_of_the_first_release_migrates_and_keeps_everything() {
    let (_dir, path) = copy_of_old();
    assert_eq!(user_version(&path), 0, "the first release set no version");
    let before = contents(&path);
    assert_eq!(before.iter().filter(|r| r.len() == 7).count(), 36);
    // Read-only openers read the old file as it is, without migrating it.
    let ro = Outbox::open_readonly(&path).unwrap().unwrap();
    assert_eq!(ro.counts().unwrap().events, 36);
    drop(ro);
    assert_eq!(user_version(&path), 0);

    let mut ob = Outbox::open(&path).unwrap();
    assert_eq!(ob.schema_version().unwrap(), 7);
    let after = contents(&path);
    assert_eq!(after.len(), before.len());
    let mut first_seen = 0;
    for (was, is) in before.iter().zip(&after) {
        // Step 6: a session seen live keeps when it was first seen, the
        // time of its first event; the record is otherwise as it was.
        let is_record = was.len() == 4 && was[3].starts_with('{');
        if !is_record || was == is {
            assert_eq!(was, is, "every row kept as it was");
            continue;
        }
        assert_eq!(was[..3], is[..3]);
        let mut record: serde_json::Value = serde_json::from_str(&is[3]).unwrap();
        let first_ms = record
            .as_object_mut()
            .unwrap()
            .remove("first_ms")
            .and_then(|v| v.as_i64())
            .unwrap();
        let old: serde_json::Value = serde_json::from_str(&was[3]).unwrap();
        assert_eq!(record, old, "only first_ms added");
        let seq1 = before
            .iter()
            .find(|r| r.len() == 7 && r[1] == was[0] && r[2] == was[1] && r[3] == "1")
            .unwrap();
        assert_eq!(
            Some(first_ms),
            sessionpipe_core::protocol::time::parse_rfc3339_ms(&seq1[5])
        );
        first_seen += 1;
    }
    assert!(first_seen > 0, "the sessions seen live have it");
    let stored = Outbox::open_readonly(&path).unwrap().unwrap();
    for (harness, session, record) in stored.sessions().unwrap() {
        assert!(
            record.first_ms > 0 || !record.started,
            "{harness}:{session}"
        );
    }
    drop(stored);
    let cursor = ob.sink_cursor("s_qh80nb9e").unwrap();
    assert_eq!(cursor, 36);
    assert_eq!(ob.count_after(cursor).unwrap().count, 0);

    // The seq of a known session goes on where it was.
    let stored = ob.events_after(0, 1).unwrap().remove(0);
    let mut env: protocol::Envelope = serde_json::from_str(&stored.envelope).unwrap();
    let session_seqs: Vec<u64> = ob
        .events_after(0, 100)
        .unwrap()
        .iter()
        .map(|r| serde_json::from_str::<protocol::Envelope>(&r.envelope).unwrap())
        .filter(|e| e.session.id == env.session.id && e.harness.name == env.harness.name)
        .map(|e| e.session.seq)
        .collect();
    env.id = "01J00000000000000000000001".into();
    let seq = ob.append(&mut env).unwrap();
    assert_eq!(seq, session_seqs.iter().max().unwrap() + 1);
    drop(ob);
    // A second open has nothing left to do; the file's layers keep their own
    // versions now.
    Outbox::open(&path).unwrap();
    assert_eq!(user_version(&path), sessionpipe_db::LAYERED);
    assert_eq!(ledger(&path), ["(one list)=0", "pipeline=7", "usage=8"]);
    // The pipeline made no table of control's: control's own steps (3 to 5)
    // make them, empty, when control opens the file.
    let conn = Connection::open(&path).unwrap();
    let control_tables = |conn: &Connection| -> i64 {
        conn.query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name LIKE 'control_%'",
            [],
            |r| r.get(0),
        )
        .unwrap()
    };
    assert_eq!(control_tables(&conn), 0);
    let pipeline_rows = contents(&path);
    drop(Store::open(&path).unwrap());
    assert_eq!(control_tables(&conn), 5);
    for table in [
        "control_receivers",
        "control_keys",
        "control_nonces",
        "control_messages",
        "control_sessions",
    ] {
        let n: i64 = conn
            .query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 0, "{table}");
    }
    assert_eq!(
        ledger(&path),
        ["(one list)=0", "control=5", "pipeline=7", "usage=8"]
    );
    assert_eq!(
        contents(&path),
        pipeline_rows,
        "control's steps touch no row of the pipeline's"
    );
    // Step 5: control_sessions is found by the harness's own id through an
    // index, not a scan.
    let plan: String = conn
        .query_row(
            "EXPLAIN QUERY PLAN SELECT name FROM control_sessions WHERE harness = 'h' AND id = 'i'",
            [],
            |r| r.get(3),
        )
        .unwrap();
    assert!(plan.contains("control_sessions_by_id"), "{plan}");
}

#[test]
fn an_outbox_from_a_newer_sessionpipe_is_refused_and_left_alone() {
    let (_dir, path) = copy_of_old();
    Connection::open(&path)
        .unwrap()
        .pragma_update(None, "user_version", 99)
        .unwrap();
    let before = contents(&path);
    for opened in [
        Outbox::open(&path).err(),
        Outbox::open_readonly(&path).err(),
    ] {
        match opened {
            Some(OutboxError::Newer { found: 99, known }) => {
                assert_eq!(known, sessionpipe_db::LAYERED)
            }
            other => panic!("{other:?}"),
        }
    }
    assert!(Store::open(&path).is_err() && Store::open_readonly(&path).is_err());
    assert_eq!(contents(&path), before);
    assert_eq!(user_version(&path), 99);

    // A layer a newer sessionpipe moved on: refused too, the rest as it was.
    let (_dir, path) = copy_of_old();
    Outbox::open(&path).unwrap();
    Connection::open(&path)
        .unwrap()
        .execute(
            "UPDATE schema_layers SET version = 99 WHERE layer = 'pipeline'",
            [],
        )
        .unwrap();
    let before = contents(&path);
    for opened in [
        Outbox::open(&path).err(),
        Outbox::open_readonly(&path).err(),
    ] {
        match opened {
            Some(OutboxError::Newer {
                found: 99,
                known: 7,
            }) => {}
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(contents(&path), before);
    assert_eq!(ledger(&path), ["(one list)=0", "pipeline=99", "usage=8"]);
}

/// An outbox the last version with one list of steps wrote, control's tables
/// in use: each layer goes on from 7, whichever opens first, and every row of
/// every layer is kept; control reads what it kept (the queued prompt, the
/// ACP start's name) as it was.
#[test]
fn an_outbox_of_the_one_list_keeps_every_row_of_every_layer() {
    use sessionpipe_core::control::queued::Queued;
    use sessionpipe_core::control::store::State;
    for control_first in [true, false] {
        let (_dir, path) = copy_of(ONE_LIST);
        assert_eq!(user_version(&path), 7);
        let (pipeline_rows, control_rows) = (contents(&path), rows(&path, CONTROL_ROWS));
        assert_eq!(pipeline_rows.iter().filter(|r| r.len() == 7).count(), 6);
        let messages = control_rows.iter().filter(|r| r.len() == 11).count();
        assert_eq!(messages, 6, "{control_rows:?}");
        // Read as it is, before anything migrates it.
        let ro = Outbox::open_readonly(&path).unwrap().unwrap();
        assert_eq!(ro.schema_version().unwrap(), 7);
        drop(ro);
        let ro = Store::open_readonly(&path).unwrap().unwrap();
        assert_eq!(ro.receivers().unwrap().len(), 1);
        assert_eq!(ro.keys(None).unwrap().len(), 2);
        drop(ro);
        assert_eq!(user_version(&path), 7, "a reader migrates nothing");

        let (ob, store) = if control_first {
            let store = Store::open(&path).unwrap();
            (Outbox::open(&path).unwrap(), store)
        } else {
            let ob = Outbox::open(&path).unwrap();
            (ob, Store::open(&path).unwrap())
        };
        assert_eq!(user_version(&path), sessionpipe_db::LAYERED);
        assert_eq!(
            ledger(&path),
            ["(one list)=7", "control=5", "pipeline=7", "usage=8"]
        );
        assert_eq!(contents(&path), pipeline_rows, "every pipeline row kept");
        assert_eq!(
            rows(&path, CONTROL_ROWS),
            control_rows,
            "every control row kept"
        );
        // What control kept reads as it was kept.
        let queued = store.queued().unwrap();
        assert_eq!(queued.len(), 1);
        assert_eq!(queued[0].state, State::Queued);
        let q = Queued::from_kept(queued[0].command.as_deref().unwrap()).unwrap();
        assert_eq!(
            (q.kind(), q.text()),
            ("prompt", Some("still waiting")),
            "{q:?}"
        );
        let mut ob = ob;
        let tx = ob.begin().unwrap();
        let named = tx
            .given_name(
                &sessionpipe_core::control::host::AcpNames,
                "gemini-cli",
                "0d9b6a52-8c4e-4f3a-9b1d-2e7f6a5c4b3d",
            )
            .unwrap();
        assert_eq!(
            named.as_deref(),
            Some("7c1e2d3f-4a5b-4c6d-8e7f-a0b1c2d3e4f5")
        );
        drop(tx);
        drop((ob, store));
        // Nothing left for either to do.
        drop(Store::open(&path).unwrap());
        drop(Outbox::open(&path).unwrap());
        assert_eq!(contents(&path), pipeline_rows);
        assert_eq!(rows(&path, CONTROL_ROWS), control_rows);
    }
}

#[test]
fn step_7_lets_the_board_read_only_its_window_and_the_live_sessions() {
    use sessionpipe_core::pipeline::session::{Glance, OpenAttention, SessionRecord};
    let (_dir, path) = copy_of_old();
    // A record that is not JSON (none was ever written so) stops nothing.
    Connection::open(&path)
        .unwrap()
        .execute(
            "INSERT INTO sessions (harness, session, next_seq, record) VALUES ('codex', 'bad', 1, 'not json')",
            [],
        )
        .unwrap();
    // Before the daemon migrates it, a reader reads every record.
    let keys = |ob: &Outbox, since: i64| -> Vec<(String, String)> {
        ob.board_sessions(since)
            .unwrap()
            .into_iter()
            .map(|(h, s, _)| (h, s))
            .collect()
    };
    let ro = Outbox::open_readonly(&path).unwrap().unwrap();
    let (board, names) = (keys(&ro, 0), ro.sessions_starting("").unwrap());
    drop(ro);
    assert!(board.len() > 3, "{board:?}");
    let mut ob = Outbox::open(&path).unwrap();
    // (Step 6 adds first_ms to the records; the board's sessions are the same.)
    assert_eq!(keys(&ob, 0), board, "the same board after");
    assert_eq!(ob.sessions_starting("").unwrap(), names);
    // The columns are the records' own last_ms and glance.
    let conn = Connection::open(&path).unwrap();
    let mut stmt = conn
        .prepare("SELECT record, last_ms, live FROM sessions")
        .unwrap();
    let rows: Vec<(String, i64, bool)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert_eq!(rows.len(), names.len());
    for (json, last_ms, live) in &rows {
        let r: SessionRecord = serde_json::from_str(json).unwrap_or_default();
        assert_eq!(
            (r.last_ms, r.glance() != Glance::Done),
            (*last_ms, *live),
            "{json}"
        );
    }
    // A write keeps them: a prompt opened years ago is on the board until it
    // is answered.
    let (harness, session) = &board[0];
    let tx = ob.begin().unwrap();
    let mut r = tx.load_session(harness, session).unwrap();
    r.open = vec![OpenAttention {
        id: "perm-1".into(),
        agent_id: None,
        permission: true,
    }];
    r.running_turn = None;
    tx.save_session(harness, session, &r).unwrap();
    tx.commit().unwrap();
    let on = |ob: &Outbox| {
        ob.board_sessions(i64::MAX)
            .unwrap()
            .iter()
            .any(|(h, s, _)| h == harness && s == session)
    };
    assert!(on(&ob));
    let tx = ob.begin().unwrap();
    r.open.clear();
    tx.save_session(harness, session, &r).unwrap();
    tx.commit().unwrap();
    assert!(!on(&ob));
}
