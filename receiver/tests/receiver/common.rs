//! Helpers for the receiver's tests: start one, build events, post batches; with
//! control on, pair a machine (a software passkey approves through the test
//! door), queue signed messages, poll, ack, read the queue back.

#![allow(dead_code)]

use reqwest::blocking::Client;
use serde_json::{Value, json};
pub use sessionpipe_receiver::{ControlOptions, Fault, Handle, Options, Receiver};
use sessionpipe_verifier::softkey::{self, DayKey, SoftPasskey};
use sessionpipe_verifier::{Assertion, Grant, Signed, TrustedKey};

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

/// A receiver with the control side on, rp id `localhost`.
pub fn start_control(control: ControlOptions) -> Rx {
    start(Options {
        control: Some(control),
        ..Options::new(TOKEN)
    })
}

pub fn localhost() -> ControlOptions {
    ControlOptions::new("localhost")
}

pub fn passkey() -> SoftPasskey {
    SoftPasskey::es256("localhost", "http://localhost")
}

/// A paired machine: its id and token, and the device that approved it (its
/// passkey, a day key and the grant between them).
pub struct Paired {
    pub machine: String,
    pub token: String,
    pub passkey: SoftPasskey,
    pub day: DayKey,
    pub grant: Grant,
}

impl Paired {
    /// A prompt for `session`, signed with the day grant.
    pub fn prompt(&self, session: &str, text: &str) -> Signed {
        let now = now_ms();
        let cmd = softkey::CommandText::prompt(
            &self.machine,
            session,
            text,
            &softkey::random_nonce(),
            now,
        )
        .build();
        softkey::sign_with_grant(&cmd, &self.day, &self.grant)
    }

    pub fn trusted(&self) -> Vec<TrustedKey> {
        vec![self.passkey.trusted()]
    }
}

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// A pairing request's body.
pub fn pair_body() -> Value {
    json!({"name": "test-machine", "harnesses": ["claude-code"], "modes": ["turn", "resume"],
           "version": "0.0.0"})
}

/// A hello's body.
pub fn hello_body() -> Value {
    json!({"name": "test-machine", "harnesses": ["claude-code"], "modes": ["turn"],
           "keys": ["AAAAAAAAAAAAAAAAAAAAAA"], "version": "0.0.0", "waiting": []})
}

/// An ack of `id` with `outcome`, now, and `extra` members.
pub fn ack_of(id: &str, outcome: &str, extra: Value) -> Value {
    let mut a = json!({"id": id, "outcome": outcome,
                       "at": "2026-10-08T09:14:02.110Z"});
    for (k, v) in extra.as_object().cloned().unwrap_or_default() {
        a[k] = v;
    }
    a
}

pub fn approval(code: &str, key: &TrustedKey, proof: &Assertion) -> Value {
    json!({"code": code, "key": key, "proof": proof})
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

    /// A POST of `body` with `bearer` as the token (none when `None`).
    pub fn post_as(&self, path: &str, bearer: Option<&str>, body: &Value) -> Reply {
        let auth = bearer.map(|t| format!("Bearer {t}"));
        let mut headers = vec![];
        if let Some(a) = &auth {
            headers.push(("authorization", a.as_str()));
        }
        self.post_raw(path, body.to_string().into_bytes(), &headers)
    }

    /// `POST /v1/control/pair` with the sink token, then the approval of a new
    /// passkey through the test door, then the `paired` read: a paired machine.
    pub fn pair(&self) -> Paired {
        let started = self.post_as("/v1/control/pair", Some(TOKEN), &pair_body());
        assert_eq!(started.status, 201, "{}", started.body);
        let machine = started.body["machine"].as_str().unwrap().to_string();
        let code = started.body["code"].as_str().unwrap();
        let passkey = passkey();
        let proof = softkey::enrollment_proof(&passkey, &machine, code);
        let ok = self.post_as(
            "/test/pair/approve",
            Some(TOKEN),
            &approval(code, &passkey.trusted(), &proof),
        );
        assert_eq!(ok.status, 200, "{}", ok.body);
        let paired = self.get(&format!("/v1/control/pair?code={code}"), Some(TOKEN));
        assert_eq!(paired.body["status"], "paired", "{}", paired.body);
        let day = DayKey::generate();
        let now = now_ms();
        let grant = softkey::grant(&passkey, &day, now - 1000, now + 3_600_000, "localhost");
        Paired {
            machine,
            token: paired.body["token"].as_str().unwrap().to_string(),
            passkey,
            day,
            grant,
        }
    }

    /// Queues `signed` for `machine` through the test door: its id.
    pub fn enqueue(&self, machine: &str, signed: &Signed, expires_in_s: u64) -> String {
        let mut body = serde_json::to_value(signed).unwrap();
        body["machine"] = json!(machine);
        body["expires_in_s"] = json!(expires_in_s);
        let r = self.post_as("/test/control/enqueue", Some(TOKEN), &body);
        assert_eq!(r.status, 201, "{}", r.body);
        r.body["id"].as_str().unwrap().to_string()
    }

    /// The long-poll, as the machine.
    pub fn poll(&self, p: &Paired, wait: u64) -> Reply {
        self.get(
            &format!("/v1/control?machine={}&wait={wait}", p.machine),
            Some(&p.token),
        )
    }

    /// The ids a poll brought, or its status when it was not 200.
    pub fn poll_ids(&self, p: &Paired, wait: u64) -> Result<Vec<String>, u16> {
        let r = self.poll(p, wait);
        if r.status != 200 {
            return Err(r.status);
        }
        Ok(r.body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap().to_string())
            .collect())
    }

    pub fn ack(&self, p: &Paired, acks: &[Value]) -> Reply {
        self.post_as("/v1/control/ack", Some(&p.token), &json!({ "acks": acks }))
    }

    /// The read door's view of a machine.
    pub fn view(&self, machine: &str) -> Reply {
        self.get(
            &format!("/test/control/messages?machine={machine}"),
            Some(TOKEN),
        )
    }

    /// The read door's entry for one message.
    pub fn message(&self, machine: &str, id: &str) -> Value {
        let v = self.view(machine);
        assert_eq!(v.status, 200, "{}", v.body);
        v.body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("no message {id} in {}", v.body))
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
