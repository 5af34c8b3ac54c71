//! Harness fixtures: one recorded hook call (`input`: argv, stdin, env, cwd) and
//! the events its adapter must produce from that call alone (`expect`).
//!
//! The call runs through the adapter and the envelope stamping exactly as the
//! daemon runs it, minus the session's memory (no earlier calls, no synthetic
//! start, no facts from files), and every produced envelope is validated.

use super::matching::matches;
use crate::adapters::{self, Mapped, Memo};
use crate::job::Job;
use crate::protocol::validate_envelope;
use crate::session::{Stamp, envelope};
use serde_json::Value;

pub fn run(fixture: &Value) -> Result<(), String> {
    let job = job_of(fixture)?;
    let adapter = adapters::lookup(&job.harness)
        .ok_or_else(|| format!("no adapter for harness {:?}", job.harness))?;
    let produced = match adapter
        .map(&job)
        .map_err(|e| format!("adapter error: {e}"))?
    {
        Mapped::Ignored(_) => vec![],
        Mapped::Events(m) => {
            let mut events = m.events;
            adapter.remember(&job, &mut events, &mut Memo::new());
            let mut block = m.block;
            block.machine = Some(crate::ingest::machine_name());
            let stamp = Stamp {
                harness: adapter.name(),
                harness_event: Some(&job.event),
                version: m.harness_version.as_deref(),
                session_id: &m.session_id,
                block: &block,
                time_ms: job.at_ms(),
            };
            events
                .into_iter()
                .enumerate()
                .map(|(i, ev)| {
                    let mut env = envelope(&stamp, i as u64 + 1, ev);
                    crate::ingest::redact_secrets(&mut env);
                    env
                })
                .collect()
        }
    };
    for env in &produced {
        validate_envelope(env).map_err(|e| format!("invalid envelope: {e}"))?;
    }
    let expect = fixture["expect"].as_array().ok_or("expect is not a list")?;
    if expect.len() != produced.len() {
        let kinds: Vec<&str> = produced.iter().map(|e| e.kind.as_str()).collect();
        return Err(format!(
            "{} events {kinds:?}, expected {}",
            produced.len(),
            expect.len()
        ));
    }
    for (i, (want, got)) in expect.iter().zip(&produced).enumerate() {
        let got = serde_json::to_value(got).expect("an envelope serialises");
        matches(want, &got).map_err(|e| format!("event {i} ({}): {e}", got["type"]))?;
    }
    Ok(())
}

/// The job the hook would have written for the fixture's call.
fn job_of(fixture: &Value) -> Result<Job, String> {
    let input = &fixture["input"];
    let argv: Vec<String> = input["argv"]
        .as_array()
        .ok_or("input.argv is not a list")?
        .iter()
        .map(|a| a.as_str().unwrap_or_default().to_string())
        .collect();
    let env = input["env"]
        .as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default();
    let at_ms = fixture
        .pointer("/recorded/at")
        .and_then(Value::as_str)
        .and_then(crate::time::parse_rfc3339_ms)
        .unwrap_or_else(crate::time::now_ms);
    Ok(Job {
        name: "fixture.job".into(),
        harness: argv.first().cloned().unwrap_or_default(),
        event: argv.get(1).cloned().unwrap_or_default(),
        cwd: input["cwd"].as_str().unwrap_or_default().to_string(),
        argv,
        env,
        at_ns: (at_ms as u64).saturating_mul(1_000_000),
        payload: input["stdin"]
            .as_str()
            .unwrap_or_default()
            .as_bytes()
            .to_vec(),
        ..Default::default()
    })
}
