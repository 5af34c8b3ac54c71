//! A Devin store for unit tests, built with the schema the integration tests use
//! (`conformance/transcripts/devin/schema.sql`, a minimal copy of the store's
//! tables as the Devin row describes them). Writes through its own connection,
//! as Devin would, while the adapter reads through `store::open`.

use rusqlite::{Connection, params};
use serde_json::{Value, json};
use std::path::PathBuf;

pub const SCHEMA: &str = include_str!("../../../conformance/transcripts/devin/schema.sql");

pub struct Store {
    _dir: tempfile::TempDir,
    pub path: PathBuf,
    conn: Connection,
}

impl Store {
    pub fn new() -> Store {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sessions.db");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(SCHEMA).unwrap();
        Store {
            _dir: dir,
            path,
            conn,
        }
    }

    pub fn session(&self, id: &str, cwd: &str, model: &str) {
        self.conn
            .execute(
                "INSERT INTO sessions (id, working_directory, model, title, created_at, last_activity_at)
                 VALUES (?1, ?2, ?3, '`ls`', 1790157600, 1790157700)",
                params![id, cwd, model],
            )
            .unwrap();
    }

    pub fn node(&self, session: &str, id: i64, parent: Option<i64>, message: &Value) {
        self.conn
            .execute(
                "INSERT INTO message_nodes (session_id, node_id, parent_node_id, chat_message, created_at)
                 VALUES (?1, ?2, ?3, ?4, 1790157700)",
                params![session, id, parent, message.to_string()],
            )
            .unwrap();
    }

    /// A chain of `n` nodes numbered from 1, ending at the tip.
    pub fn chain(&self, session: &str, n: i64, message: impl Fn(i64) -> Value) {
        let tx = self.conn.unchecked_transaction().unwrap();
        for i in 1..=n {
            self.node(session, i, (i > 1).then_some(i - 1), &message(i));
        }
        tx.commit().unwrap();
        self.tip(session, n);
    }

    pub fn tip(&self, session: &str, node: i64) {
        self.conn
            .execute(
                "UPDATE sessions SET main_chain_id = ?2 WHERE id = ?1",
                params![session, node],
            )
            .unwrap();
    }

    pub fn prompt(&self, session: &str, content: &str, at: i64, shell: bool) {
        self.conn
            .execute(
                "INSERT INTO prompt_history (content, timestamp, session_id, is_shell) VALUES (?1, ?2, ?3, ?4)",
                params![content, at, session, shell],
            )
            .unwrap();
    }

    /// Holds the store the way a writer mid-commit does: readers get "busy".
    pub fn lock(&self) -> Connection {
        let c = Connection::open(&self.path).unwrap();
        c.execute_batch("BEGIN EXCLUSIVE").unwrap();
        c
    }
}

pub fn ask(words: &str, at: &str) -> Value {
    json!({"role": "user", "content": words, "metadata": {"is_user_input": true, "created_at": at}})
}

pub fn reply(words: &str) -> Value {
    json!({"role": "assistant", "content": words})
}

pub fn tool_call(words: &str) -> Value {
    json!({"role": "assistant", "content": words, "tool_calls": [{"id": "call_1", "name": "exec", "arguments": "{}"}]})
}

pub fn tool_result(output: &str) -> Value {
    json!({"role": "tool", "tool_call_id": "call_1", "content": output})
}

pub fn system(words: &str) -> Value {
    json!({"role": "system", "content": words})
}
