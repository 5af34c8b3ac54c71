//! Delivery scenarios (`../shared/conformance/delivery/*.json`): steps run in order
//! against a receiver URL, `sessionpipe conformance --receiver URL --token T`.
//!
//! This module owns reading a scenario, filling its placeholders, sending the
//! events side's steps and checking each step's `expect {status, body?}` (with
//! `matching::matches`). The control side's steps (CONTROL, PROTOCOL-NOTES §6:
//! `enqueue`, `poll`, `ack`, `pair_start`, `pair_status`, `approve`) are
//! `delivery_control`'s, as a paired machine; their `expect` is checked here the
//! same way. A scenario whose `capability` the receiver does not list, whose
//! `skip_when` holds, or that needs what the receiver does not declare is skipped
//! with one line. It never writes the outbox, never logs a token, and sends one
//! only over HTTPS or to a loopback receiver (PROTOCOL-NOTES §5).
//!
//! Placeholders: `{run}` and `{run12}` (12 hex digits, fresh per scenario, so that a
//! persistent receiver's dedup never sees an earlier run), `{max_tier}` and
//! `{max_tier+1}` (numbers when they are the whole string), `{machine}` (the
//! runner's paired machine), `{uuid}` and `{poll_key}` (fresh per scenario), and
//! as a step's whole `events`: `{max_events+1 events}` and `{one batch over
//! max_bytes}`. In sent events, `"id": "*"` becomes a fresh ULID and `"time": "*"`
//! now.
//!
//! `read` is our choice of a read door, as the scenario format names none:
//! `GET /v1/sessions/<harness>:<id>` with the bearer token, 200 with the stored
//! events or 404 (what `sessionpipe-receiver` serves in a build with its
//! `test-doors` feature, as its other test doors). A `well_known` answer's
//! `control.session_tools`, when present, must be MCP server names only.

use super::check::{Failed, Outcome};
use super::delivery_control::{self as control, Machine, Scenario, Side};
use super::matching::matches;
use reqwest::{Client, RequestBuilder, Url};
use serde_json::{Value, json};
use std::time::Duration;

/// The binding's request timeout (§5).
const TIMEOUT: Duration = Duration::from_secs(15);

/// The receiver to run against.
#[derive(Clone)]
pub struct Target {
    pub url: String,
    pub token: String,
}

/// What the receiver's well-known document says, as the steps need it.
#[derive(Clone, Debug)]
struct Discovery {
    max_tier: u64,
    max_events: u64,
    max_bytes: u64,
    capabilities: Vec<String>,
    events: Url,
    /// The control side, when `capabilities` lists `control`.
    control: Option<Result<Side, Failed>>,
}

/// A delivery scenario: `{name, spec, steps[]}` (the README's format).
pub fn is_scenario(doc: &Value) -> bool {
    doc.get("steps").is_some_and(Value::is_array)
}

/// Runs scenarios against one receiver; the well-known document is read once.
pub struct Runner {
    base: Url,
    token: String,
    client: Client,
    /// The runner's own runtime: the CLI that runs scenarios has none.
    rt: tokio::runtime::Runtime,
    discovery: Option<Result<Discovery, Failed>>,
    /// The machine paired as before the first scenario that needs one.
    machine: Option<Result<Machine, Failed>>,
}

impl Runner {
    pub fn new(target: &Target) -> Result<Runner, Failed> {
        let base =
            Url::parse(&target.url).map_err(|e| format!("--receiver {}: {e}", target.url))?;
        if !matches!(base.scheme(), "http" | "https") {
            return Err(Failed(format!(
                "--receiver {}: not an http(s) URL",
                target.url
            )));
        }
        if base.scheme() == "http" && !crate::sinks::http::is_loopback(&base) {
            return Err(Failed(format!(
                "--receiver {}: plain http only to localhost, 127.0.0.1 or [::1]; use https",
                target.url
            )));
        }
        if target.token.is_empty() {
            return Err(Failed::from("--token is empty"));
        }
        let client = Client::builder()
            .timeout(TIMEOUT)
            // A receiver answers itself; a redirect is a finding, not a hop to take
            // with the token.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("HTTP client: {e}"))?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("runtime: {e}"))?;
        Ok(Runner {
            base,
            token: target.token.clone(),
            client,
            rt,
            discovery: None,
            machine: None,
        })
    }

    fn machine(&mut self, side: &Side) -> Result<&Machine, Failed> {
        if self.machine.is_none() {
            let paired = control::pair(self, side);
            self.machine = Some(paired);
        }
        match self.machine.as_ref().expect("just filled") {
            Ok(m) => Ok(m),
            Err(e) => Err(Failed(format!("pairing as a machine: {e}"))),
        }
    }

    fn discovery(&mut self) -> Result<Discovery, Failed> {
        if self.discovery.is_none() {
            self.discovery = Some(self.discover());
        }
        self.discovery.clone().expect("just filled")
    }

    fn discover(&self) -> Result<Discovery, Failed> {
        let url = self
            .base
            .join("/.well-known/sessionpipe")
            .map_err(|e| e.to_string())?;
        let (status, body) = self.exchange(self.client.get(url))?;
        if status != 200 {
            return Err(Failed(format!("well-known answered {status}")));
        }
        let doc = body.ok_or("the well-known document is not JSON")?;
        let num = |p: &str, default: Option<u64>| {
            doc.pointer(p)
                .and_then(Value::as_u64)
                .or(default)
                .ok_or_else(|| format!("well-known {p} is missing"))
        };
        let capabilities: Vec<String> = doc["capabilities"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|c| c.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        let control = capabilities
            .iter()
            .any(|c| c == "control")
            .then(|| control::side(&doc, &self.base));
        let events = doc
            .pointer("/endpoints/events")
            .and_then(Value::as_str)
            .ok_or("well-known endpoints.events is missing")?;
        Ok(Discovery {
            max_tier: num("/max_tier", None)?,
            max_events: num("/batch/max_events", Some(50))?,
            max_bytes: num("/batch/max_bytes", Some(262_144))?,
            capabilities,
            control,
            events: self
                .base
                .join(events)
                .map_err(|e| format!("endpoints.events {events:?}: {e}"))?,
        })
    }

    /// Runs one scenario document.
    pub fn run(&mut self, doc: &Value) -> Outcome {
        let steps = doc["steps"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        let d = match self.discovery() {
            Ok(d) => d,
            Err(e) => return Outcome::Fail(e.0),
        };
        if let Some(cap) = doc["capability"].as_str()
            && !d.capabilities.iter().any(|c| c == cap)
        {
            return Outcome::Skip(format!("the receiver does not list capability {cap}"));
        }
        if let Some(expr) = doc["skip_when"].as_str() {
            match skip_when(expr, &d) {
                Ok(true) => return Outcome::Skip(format!("skip_when {expr}")),
                Ok(false) => {}
                Err(e) => return Outcome::Fail(e.0),
            }
        }
        let uses_control = doc["capability"] == "control"
            || steps
                .iter()
                .any(|s| step_kind(s).is_some_and(|k| control::STEPS.contains(&k)));
        let mut sc = Scenario::new();
        let mut ctx = Context::new(&d);
        let side = match (uses_control, &d.control) {
            (false, _) => None,
            (true, None) => {
                return Outcome::Skip("the receiver does not list capability control".into());
            }
            (true, Some(Err(e))) => return Outcome::Fail(e.0.clone()),
            (true, Some(Ok(side))) => Some(side.clone()),
        };
        if let Some(side) = &side {
            if let Some(why) = control::unmet(steps, side) {
                return Outcome::Skip(why);
            }
            if control::needs_machine(steps) {
                match self.machine(side) {
                    Ok(m) => ctx.extra.push(("{machine}", m.id.clone())),
                    Err(e) => return Outcome::Fail(e.0),
                }
            }
            ctx.extra.push(("{uuid}", sc.uuid.clone()));
            ctx.extra.push(("{poll_key}", sc.poll_key.clone()));
        }
        let mut outcome = Outcome::Pass;
        for (i, step) in steps.iter().enumerate() {
            if let Err(why) = self.step(step, &ctx, &d, side.as_ref(), &mut sc) {
                let kind = step_kind(step).unwrap_or("?");
                outcome = Outcome::Fail(format!("step {} ({kind}): {why}", i + 1));
                break;
            }
        }
        if let Some(side) = &side {
            let machine = self.machine.as_ref().and_then(|m| m.as_ref().ok());
            sc.finish(self, side, machine, outcome != Outcome::Pass);
        }
        outcome
    }

    fn step(
        &self,
        step: &Value,
        ctx: &Context,
        d: &Discovery,
        side: Option<&Side>,
        sc: &mut Scenario,
    ) -> Result<(), Failed> {
        let kind = step_kind(step).ok_or("a step names exactly one action")?;
        let args = ctx.fill(&step[kind]);
        let (status, body) = match kind {
            k if control::STEPS.contains(&k) => {
                let side = side.ok_or("a control step against no control side")?;
                let machine = self.machine.as_ref().and_then(|m| m.as_ref().ok());
                control::step(k, &args, self, side, machine, sc)?
            }
            "send" => self.send(&args, ctx, d)?,
            "read" => {
                let session = args["session"].as_str().ok_or("read.session is missing")?;
                let url = self
                    .base
                    .join(&format!("/v1/sessions/{session}"))
                    .map_err(|e| e.to_string())?;
                self.exchange(self.client.get(url).bearer_auth(&self.token))?
            }
            "well_known" => {
                let url = self
                    .base
                    .join("/.well-known/sessionpipe")
                    .map_err(|e| e.to_string())?;
                let answer = self.exchange(self.client.get(url))?;
                if let Some(doc) = &answer.1 {
                    control::check_session_tools(doc)?;
                }
                answer
            }
            "wait_s" => {
                let s = args.as_f64().filter(|s| (0.0..=60.0).contains(s));
                std::thread::sleep(Duration::from_secs_f64(s.ok_or("wait_s is 0-60")?));
                return Ok(());
            }
            other => return Err(Failed(format!("unknown step {other}"))),
        };
        let Some(expect) = step.get("expect") else {
            return Ok(());
        };
        let want = expect["status"]
            .as_u64()
            .ok_or("expect.status is missing")?;
        if u64::from(status) != want {
            let shown = body.map(|b| format!(" {b}")).unwrap_or_default();
            return Err(Failed(format!(
                "status {status}, expected {want}{}",
                clip(&shown)
            )));
        }
        if let Some(want_body) = expect.get("body") {
            let got = body.ok_or("the body is not JSON")?;
            matches(&ctx.fill(want_body), &got).map_err(|e| format!("body {e}"))?;
        }
        Ok(())
    }

    fn send(
        &self,
        args: &Value,
        ctx: &Context,
        d: &Discovery,
    ) -> Result<(u16, Option<Value>), Failed> {
        let events = match &args["events"] {
            Value::Array(list) => list.iter().map(|e| stamp(e.clone())).collect(),
            Value::String(s) if s == "{max_events+1 events}" => {
                (0..=d.max_events).map(|seq| ctx.event(seq, None)).collect()
            }
            Value::String(s) if s == "{one batch over max_bytes}" => {
                vec![ctx.event(0, Some(d.max_bytes as usize))]
            }
            other => {
                return Err(Failed(format!(
                    "send.events {other} is not a list or a known placeholder"
                )));
            }
        };
        let body = json!({ "events": events }).to_string();
        let mut req = self
            .client
            .post(d.events.clone())
            .header("content-type", "application/json")
            .header("sessionpipe-protocol", "1");
        req = match args["auth"].as_str() {
            None => req.bearer_auth(&self.token),
            Some("wrong") => req.bearer_auth(format!("{}-wrong", self.token)),
            Some("none") => req,
            Some(other) => return Err(Failed(format!("send.auth {other:?} is not wrong or none"))),
        };
        if let Some(headers) = args["headers"].as_object() {
            for (k, v) in headers {
                let v = v
                    .as_str()
                    .ok_or_else(|| format!("header {k} is not a string"))?;
                req = req.header(k.as_str(), v);
            }
        }
        self.exchange(req.body(body))
    }

    /// Sends a request: the status and the body when it is JSON.
    fn exchange(&self, req: RequestBuilder) -> Result<(u16, Option<Value>), Failed> {
        // The error's text names the URL, never a header, so the token stays out.
        self.rt.block_on(async {
            let resp = req
                .send()
                .await
                .map_err(|e| format!("no answer: {}", chain(&e)))?;
            let status = resp.status().as_u16();
            let text = resp
                .text()
                .await
                .map_err(|e| format!("reading the answer: {e}"))?;
            Ok((status, serde_json::from_str(&text).ok()))
        })
    }
}

impl control::Wire for Runner {
    fn client(&self) -> &Client {
        &self.client
    }

    fn token(&self) -> &str {
        &self.token
    }

    fn exchange(&self, req: RequestBuilder) -> Result<(u16, Option<Value>), Failed> {
        Runner::exchange(self, req)
    }
}

/// An error and its causes, `a: b: c` (reqwest's own text stops at the first).
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(&format!(": {c}"));
        cause = c.source();
    }
    text
}

/// The one key of a step that is not `expect`.
fn step_kind(step: &Value) -> Option<&str> {
    let mut keys = step.as_object()?.keys().filter(|k| *k != "expect");
    let k = keys.next()?;
    keys.next().is_none().then_some(k.as_str())
}

fn clip(s: &str) -> String {
    if s.chars().count() <= 300 {
        return s.to_string();
    }
    let cut: String = s.chars().take(300).collect();
    format!("{cut}…")
}

/// `"id": "*"` and `"time": "*"` of a sent event made real.
fn stamp(mut e: Value) -> Value {
    if e["id"] == "*" {
        e["id"] = Value::String(ulid::Ulid::generate().to_string());
    }
    if e["time"] == "*" {
        e["time"] = Value::String(protocol::time::rfc3339_ms(protocol::time::now_ms()));
    }
    e
}

/// `skip_when`: `<max_tier|max_events|max_bytes> <op> <integer>`, op one of
/// `== != < <= > >=`. Anything else fails the scenario rather than guessing.
fn skip_when(expr: &str, d: &Discovery) -> Result<bool, Failed> {
    let words: Vec<&str> = expr.split_whitespace().collect();
    let [name, op, n] = words[..] else {
        return Err(Failed(format!(
            "skip_when {expr:?} is not `name op number`"
        )));
    };
    let left = match name {
        "max_tier" => d.max_tier,
        "max_events" => d.max_events,
        "max_bytes" => d.max_bytes,
        _ => {
            return Err(Failed(format!(
                "skip_when names {name}, which this runner does not know"
            )));
        }
    };
    let right: u64 = n
        .parse()
        .map_err(|_| format!("skip_when {expr:?}: {n} is not a number"))?;
    Ok(match op {
        "==" => left == right,
        "!=" => left != right,
        "<" => left < right,
        "<=" => left <= right,
        ">" => left > right,
        ">=" => left >= right,
        _ => return Err(Failed(format!("skip_when {expr:?}: unknown operator {op}"))),
    })
}

/// One scenario's placeholder values.
struct Context {
    run: String,
    max_tier: u64,
    /// The control side's (`{machine}`, `{uuid}`, `{poll_key}`), as text.
    extra: Vec<(&'static str, String)>,
}

impl Context {
    fn new(d: &Discovery) -> Context {
        // The low 48 bits of a fresh ULID are random: 12 hex digits.
        let bits = ulid::Ulid::generate().0 as u64 & 0xffff_ffff_ffff;
        Context {
            run: format!("{bits:012x}"),
            max_tier: d.max_tier,
            extra: Vec::new(),
        }
    }

    fn fill(&self, v: &Value) -> Value {
        match v {
            Value::String(s) => match s.as_str() {
                "{max_tier}" => json!(self.max_tier),
                "{max_tier+1}" => json!(self.max_tier + 1),
                _ => {
                    let mut t = s
                        .replace("{run12}", &self.run)
                        .replace("{run}", &self.run)
                        .replace("{max_tier+1}", &(self.max_tier + 1).to_string())
                        .replace("{max_tier}", &self.max_tier.to_string());
                    for (name, value) in &self.extra {
                        t = t.replace(name, value);
                    }
                    Value::String(t)
                }
            },
            Value::Array(a) => Value::Array(a.iter().map(|x| self.fill(x)).collect()),
            Value::Object(o) => {
                Value::Object(o.iter().map(|(k, x)| (k.clone(), self.fill(x))).collect())
            }
            other => other.clone(),
        }
    }

    /// A valid tier-0 event of session `conf-{run}` at `seq`, with `padding`
    /// characters of filler in its data when given (extra data keys are allowed, so
    /// only the size can make a receiver refuse it).
    fn event(&self, seq: u64, padding: Option<usize>) -> Value {
        let (kind, mut data) = if seq == 0 {
            ("session.started", json!({"source": "startup"}))
        } else {
            ("session.heartbeat", json!({}))
        };
        if let Some(n) = padding {
            data["padding"] = Value::String("x".repeat(n));
        }
        stamp(json!({
            "protocol": 1, "id": "*", "type": kind, "time": "*", "tier": 0,
            "harness": {"name": "conformance", "event": "test"},
            "session": {"id": format!("conf-{}", self.run), "seq": seq},
            "privacy": {"rulesets": ["secrets@1"], "pii": false},
            "data": data,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn discovery(max_tier: u64) -> Discovery {
        Discovery {
            max_tier,
            max_events: 50,
            max_bytes: 262_144,
            capabilities: vec!["events".into()],
            events: Url::parse("http://127.0.0.1:1/v1/events").unwrap(),
            control: None,
        }
    }

    #[test]
    fn placeholders_fill_as_numbers_or_text() {
        let ctx = Context::new(&discovery(1));
        assert_eq!(ctx.run.len(), 12);
        let filled = ctx.fill(&json!({
            "tier": "{max_tier+1}", "max_tier": "{max_tier}",
            "id": "conf-{run}", "uuid": "0000-{run12}", "other": "{machine}"
        }));
        assert_eq!(filled["tier"], 2);
        assert_eq!(filled["max_tier"], 1);
        assert_eq!(filled["id"], format!("conf-{}", ctx.run));
        assert_eq!(filled["uuid"], format!("0000-{}", ctx.run));
        assert_eq!(filled["other"], "{machine}");
        let e = stamp(json!({"id": "*", "time": "*"}));
        assert_eq!(e["id"].as_str().unwrap().len(), 26);
        assert!(e["time"].as_str().unwrap().ends_with('Z'));
    }

    #[test]
    fn generated_events_are_valid_envelopes() {
        let ctx = Context::new(&discovery(3));
        for e in [
            ctx.event(0, None),
            ctx.event(7, None),
            ctx.event(0, Some(10)),
        ] {
            let env: protocol::Envelope = serde_json::from_value(e).unwrap();
            protocol::validate_envelope(&env).unwrap();
        }
    }

    #[test]
    fn skip_when_reads_simple_comparisons_only() {
        let d = discovery(3);
        assert_eq!(skip_when("max_tier == 3", &d), Ok(true));
        assert_eq!(skip_when("max_tier < 3", &d), Ok(false));
        assert_eq!(skip_when("max_events >= 50", &d), Ok(true));
        assert!(skip_when("max_tier == 3 && x", &d).is_err());
        assert!(skip_when("tier == 3", &d).is_err());
    }

    #[test]
    fn control_scenarios_are_skipped_by_a_receiver_without_control() {
        let mut r = Runner::new(&Target {
            url: "http://127.0.0.1:9".into(),
            token: "t".into(),
        })
        .unwrap();
        // The well-known document as read: no control, so no pairing is tried.
        r.discovery = Some(Ok(discovery(3)));
        let doc = json!({"name": "c", "steps": [{"poll": {}, "expect": {"status": 204}}]});
        let skipped = Outcome::Skip("the receiver does not list capability control".into());
        assert_eq!(r.run(&doc), skipped);
        let doc = json!({"name": "c", "capability": "control", "steps": [{"well_known": {}}]});
        assert_eq!(r.run(&doc), skipped);
        assert!(r.machine.is_none());
    }

    #[test]
    fn control_placeholders_fill_as_text() {
        let mut ctx = Context::new(&discovery(3));
        ctx.extra.push(("{machine}", "m_x".into()));
        ctx.extra.push(("{uuid}", "u-1".into()));
        let filled = ctx.fill(&json!({"machine": "{machine}", "session": "claude-code:{uuid}"}));
        assert_eq!(
            filled,
            json!({"machine": "m_x", "session": "claude-code:u-1"})
        );
    }

    #[test]
    fn the_token_goes_only_over_https_or_to_loopback() {
        let t = |url: &str| {
            Runner::new(&Target {
                url: url.into(),
                token: "t".into(),
            })
            .map(|_| ())
        };
        assert!(t("http://localhost:8080").is_ok());
        assert!(t("http://[::1]:8080/").is_ok());
        assert!(t("https://receiver.example").is_ok());
        assert!(t("http://receiver.example").is_err());
        assert!(t("ftp://127.0.0.1").is_err());
    }
}
