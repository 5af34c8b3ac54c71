//! OpenCode's own server, for control's `api` rung (ADAPTERS.md, OpenCode's
//! row: immediate `prompt` and `cancel` through `/session/:id/...`).
//!
//! Owns where a session's server is and the calls it takes. The plugin hands
//! over the `serverUrl` OpenCode gives it with every event; it is the session's
//! server only when OpenCode listens there: `opencode serve`, `opencode web`, or
//! the TUI started with `--port`. Measured on 1.18.33: `opencode run` and a TUI
//! without `--port` listen nowhere and still give `http://localhost:4096/`, so
//! that address is never taken for a server (a server started on it by hand
//! with `--hostname localhost --port 4096` is missed; one on `127.0.0.1`, the
//! default, is not). The daemon asks the server whether it holds the session
//! before handing it anything. A server with a password (`OPENCODE_SERVER_PASSWORD`)
//! answers 401 to that check: the password is OpenCode's secret, never read.
//!
//! The calls: `GET /session/:id` (the session, by its `id`), `POST
//! /session/:id/prompt_async` with one text part (answered 204; the turn runs
//! after it), `POST /session/:id/abort`; each with the session's folder as
//! `directory`, which picks the OpenCode instance that runs it.

use harness::Memo;
use harness::api::{Call, Method, SessionApi, loopback_origin, query_component};
use serde_json::{Map, Value, json};

/// The memo's server (an origin on loopback) and folder.
pub(super) const SERVER: &str = "server";
pub(super) const DIRECTORY: &str = "directory";

/// What OpenCode gives a plugin where it listens nowhere.
const NOT_LISTENING: &str = "http://localhost:4096";

/// Keeps the payload's server in the memo, or forgets it when the process
/// that sent this event listens nowhere (a later `opencode run` of the same
/// session).
pub(super) fn remember(p: &Map<String, Value>, folder: Option<String>, memo: &mut Memo) {
    if !p.contains_key(SERVER) {
        return;
    }
    match p
        .get(SERVER)
        .and_then(Value::as_str)
        .and_then(loopback_origin)
        .filter(|o| o != NOT_LISTENING)
    {
        Some(origin) => {
            memo.insert(SERVER.into(), Value::String(origin));
        }
        None => {
            memo.remove(SERVER);
        }
    }
    if let Some(f) = folder {
        memo.insert(DIRECTORY.into(), Value::String(f));
    }
}

pub(super) struct Server;

impl Server {
    fn call(
        memo: &Memo,
        method: Method,
        id: &str,
        tail: &str,
        body: Option<Value>,
    ) -> Option<Call> {
        // Kept only as a loopback origin (`remember`); the daemon checks the
        // URL again before any call.
        let origin = memo.get(SERVER)?.as_str()?;
        if !protocol::valid_session_id(id) || !id.starts_with("ses") {
            return None;
        }
        let mut url = format!("{origin}/session/{id}{tail}");
        if let Some(dir) = memo.get(DIRECTORY).and_then(Value::as_str) {
            url.push_str("?directory=");
            url.push_str(&query_component(dir));
        }
        Some(Call { method, url, body })
    }
}

impl SessionApi for Server {
    fn check(&self, memo: &Memo, id: &str) -> Option<Call> {
        Server::call(memo, Method::Get, id, "", None)
    }

    fn holds(&self, status: u16, body: &[u8], id: &str) -> bool {
        status == 200
            && serde_json::from_slice::<Value>(body)
                .ok()
                .is_some_and(|v| v.get("id").and_then(Value::as_str) == Some(id))
    }

    fn prompt(&self, memo: &Memo, id: &str, framed: &str) -> Option<Call> {
        let body = json!({"parts": [{"type": "text", "text": framed}]});
        Server::call(memo, Method::Post, id, "/prompt_async", Some(body))
    }

    fn cancel(&self, memo: &Memo, id: &str) -> Option<Call> {
        Server::call(memo, Method::Post, id, "/abort", None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "ses_dc8752f13ffe8CnTKJ68tpq387";

    fn memo_of(payloads: &[Value]) -> Memo {
        let mut memo = Memo::new();
        for p in payloads {
            let p = p.as_object().unwrap();
            remember(p, super::super::folder(p), &mut memo);
        }
        memo
    }

    #[test]
    fn a_listening_server_is_kept_and_the_placeholder_forgets_it() {
        let listening = json!({"type": "session.created", "directory": "/w/my project",
                               "server": "http://127.0.0.1:4801/"});
        let memo = memo_of(std::slice::from_ref(&listening));
        assert_eq!(memo[SERVER], "http://127.0.0.1:4801");
        let call = Server.prompt(&memo, ID, "hi").unwrap();
        assert_eq!(
            call.url,
            format!(
                "http://127.0.0.1:4801/session/{ID}/prompt_async?directory=%2Fw%2Fmy%20project"
            )
        );
        assert_eq!(call.method, Method::Post);
        assert_eq!(call.body.unwrap()["parts"][0]["text"], "hi");
        assert_eq!(
            Server.cancel(&memo, ID).unwrap().url,
            format!("http://127.0.0.1:4801/session/{ID}/abort?directory=%2Fw%2Fmy%20project")
        );
        assert_eq!(Server.check(&memo, ID).unwrap().method, Method::Get);
        // A later `opencode run` of the session listens nowhere.
        let run = json!({"type": "session.idle", "directory": "/w/my project",
                         "server": "http://localhost:4096/"});
        let memo = memo_of(&[listening.clone(), run]);
        assert!(memo.get(SERVER).is_none());
        assert_eq!(Server.prompt(&memo, ID, "hi"), None);
        // A payload without the field (an older plugin) changes nothing.
        let memo = memo_of(&[listening, json!({"type": "session.idle"})]);
        assert_eq!(memo[SERVER], "http://127.0.0.1:4801");
    }

    #[test]
    fn never_a_server_off_this_machine_or_an_odd_session() {
        for server in [
            "http://10.0.0.2:4096/",
            "https://127.0.0.1:1/",
            "http://a@127.0.0.1:9/",
        ] {
            let memo = memo_of(&[json!({"type": "x", "server": server})]);
            assert_eq!(Server.check(&memo, ID), None, "{server}");
        }
        let memo = memo_of(&[json!({"type": "x", "server": "http://127.0.0.1:9/"})]);
        assert_eq!(Server.check(&memo, "../x"), None);
        assert_eq!(
            Server.check(&memo, "abc"),
            None,
            "OpenCode's ids start with ses"
        );
    }

    #[test]
    fn the_check_needs_the_session_itself() {
        assert!(Server.holds(200, format!(r#"{{"id":"{ID}"}}"#).as_bytes(), ID));
        assert!(!Server.holds(200, br#"{"id":"ses_other"}"#, ID));
        assert!(!Server.holds(401, b"", ID));
        assert!(!Server.holds(200, b"<html>", ID));
    }
}
