//! Helpers for the receiver's tests: start one, build events, post batches.

#![allow(dead_code)]

use reqwest::blocking::Client;
use serde_json::{Value, json};
pub use sessionpipe_receiver::{Fault, Handle, Options, Receiver};

pub const TOKEN: &str = "test-token-7f3a";

pub struct Rx {
    pub h: Handle,
    pub c: Client,
}

/// A reply: status, JSON body (`Null` when none or not JSON), headers.
pub struct Reply {
    pub status: u16,
    pub body: Value,
    pub headers: reqwest::header::HeaderMap,
}

pub fn start(opts: Options) -> Rx {
    Rx {
        h: Receiver::start(opts).expect("the receiver starts"),
        c: Client::new(),
    }
}

pub fn start_default() -> Rx {
    start(Options::new(TOKEN))
}

/// A valid envelope of `kind` at `tier` for `harness`/`session`, seq `seq`.
pub fn event(session: &str, seq: u64, kind: &str, tier: u8) -> Value {
    json!({
        "protocol": 1,
        "id": ulid::Ulid::generate().to_string(),
        "type": kind,
        "time": "2026-01-02T03:04:05.678Z",
        "tier": tier,
        "harness": {"name": "test-harness", "event": "test"},
        "session": {"id": session, "seq": seq},
        "privacy": {"rulesets": ["secrets@1"], "pii": false},
        "data": {}
    })
}

pub fn started(session: &str, seq: u64) -> Value {
    let mut e = event(session, seq, "session.started", 0);
    e["data"] = json!({"source": "startup"});
    e
}

impl Rx {
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.h.url())
    }

    /// Posts `{"events": events}` with the right token and protocol header.
    pub fn send(&self, events: &[Value]) -> Reply {
        let body = json!({ "events": events }).to_string();
        self.post_raw(
            "/v1/events",
            body.into_bytes(),
            &[
                ("authorization", &format!("Bearer {TOKEN}")),
                ("sessionpipe-protocol", "1"),
            ],
        )
    }

    pub fn post_raw(&self, path: &str, body: Vec<u8>, headers: &[(&str, &str)]) -> Reply {
        let mut req = self
            .c
            .post(self.url(path))
            .header("content-type", "application/json")
            .body(body);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        reply(req.send().expect("the receiver answers"))
    }

    pub fn get(&self, path: &str, token: Option<&str>) -> Reply {
        let mut req = self.c.get(self.url(path));
        if let Some(t) = token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        reply(req.send().expect("the receiver answers"))
    }

    /// The read door's seqs for a session of `test-harness`, or the status.
    pub fn seqs(&self, session: &str) -> Result<Vec<u64>, u16> {
        let r = self.get(&format!("/v1/sessions/test-harness:{session}"), Some(TOKEN));
        if r.status != 200 {
            return Err(r.status);
        }
        Ok(r.body
            .as_array()
            .expect("a list")
            .iter()
            .map(|e| e["session"]["seq"].as_u64().unwrap())
            .collect())
    }

    pub fn arm(&self, fault: Value) -> Reply {
        self.post_raw(
            "/test/faults",
            fault.to_string().into_bytes(),
            &[("authorization", &format!("Bearer {TOKEN}"))],
        )
    }
}

fn reply(r: reqwest::blocking::Response) -> Reply {
    let status = r.status().as_u16();
    let headers = r.headers().clone();
    let text = r.text().unwrap_or_default();
    Reply {
        status,
        body: serde_json::from_str(&text).unwrap_or(Value::Null),
        headers,
    }
}
