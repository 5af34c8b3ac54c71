//! Harness fixtures: one recorded hook call (`input`: argv, stdin, env, cwd) and
//! the events its adapter must produce from that call alone (`expect`).
//!
//! The call runs through the adapter and the envelope stamping exactly as the
//! daemon runs it, minus the session's memory (no earlier calls, no synthetic
//! start, no facts from files), and every produced envelope is validated.

use super::check::Failed;
use super::matching::matches;
use crate::pipeline::session::Stamp;
use harness::{Mapped, Memo};
use protocol::validate_envelope;
use serde_json::Value;
use spool::Job;

pub fn run(fixture: &Value) -> Result<(), Failed> {
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
            block.machine = Some(crate::state::config::hostname());
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
                .map(|(i, ev)| crate::pipeline::append::stored_envelope(&stamp, i as u64 + 1, ev))
                .collect()
        }
    };
    for env in &produced {
        validate_envelope(env).map_err(|e| format!("invalid envelope: {e}"))?;
    }
    let expect = fixture["expect"].as_array().ok_or("expect is not a list")?;
    if expect.len() != produced.len() {
        let kinds: Vec<&str> = produced.iter().map(|e| e.kind.as_str()).collect();
        return Err(Failed(format!(
            "{} events {kinds:?}, expected {}",
            produced.len(),
            expect.len()
        )));
    }
    for (i, (want, got)) in expect.iter().zip(&produced).enumerate() {
        let got = serde_json::to_value(got).expect("an envelope serialises");
        matches(want, &got).map_err(|e| format!("event {i} ({}): {e}", got["type"]))?;
    }
    Ok(())
}

/// The job the hook would have written for the fixture's call.
fn job_of(fixture: &Value) -> Result<Job, Failed> {
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
        .and_then(protocol::time::parse_rfc3339_ms)
        .unwrap_or_else(protocol::time::now_ms);
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

/// Environment variables a recorded fixture keeps: what the adapters read, less
/// the recording machine's home and data dirs (the fixture's home is not the
/// test's, so `cwd` stays absolute when it runs).
const FIXTURE_ENV_DROPPED: &[&str] = &["HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME"];

/// A fixture, in the conformance format, for one real hook call: its input as the
/// hook received it and, as `expect`, the events the adapter makes of it today
/// (ids, times, tiers and seq wildcarded). Review the expectation before keeping
/// it: recording proves the payload is real, not that the mapping is right.
pub fn fixture_from_job(job: &Job, harness_version: &str, how: &str) -> Result<Value, Failed> {
    let mut replay = job.clone();
    let env: serde_json::Map<String, Value> = job
        .env
        .iter()
        .filter(|(k, _)| !FIXTURE_ENV_DROPPED.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    replay.env = env
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
        .collect();
    let stdin = String::from_utf8(job.payload.clone()).map_err(|_| "the payload is not UTF-8")?;
    let adapter = adapters::lookup(&job.harness).ok_or("no adapter")?;
    let expect: Vec<Value> = match adapter.map(&replay).map_err(|e| e.0)? {
        Mapped::Ignored(_) => vec![],
        Mapped::Events(m) => {
            let mut events = m.events;
            adapter.remember(&replay, &mut events, &mut Memo::new());
            events
                .into_iter()
                .map(|ev| {
                    let (kind, data) = ev.into_parts();
                    let mut session = serde_json::to_value(&m.block).expect("a block serialises");
                    let s = session.as_object_mut().expect("a block is an object");
                    s.insert("id".into(), Value::String(m.session_id.clone()));
                    s.insert("seq".into(), Value::String("*".into()));
                    s.remove("machine");
                    let mut harness = serde_json::json!({"name": job.harness, "event": job.event});
                    if let Some(v) = &m.harness_version {
                        harness["version"] = Value::String(v.clone());
                    }
                    serde_json::json!({
                        "id": "*", "time": "*", "tier": "*", "type": kind,
                        "harness": harness, "session": session, "data": data,
                    })
                })
                .collect()
        }
    };
    Ok(serde_json::json!({
        "harness": job.harness,
        "event": job.event,
        "recorded": {
            "at": protocol::time::rfc3339_ms(job.at_ms()),
            "harness_version": harness_version,
            "how": how,
        },
        "input": {"argv": job.argv, "stdin": stdin, "env": env, "cwd": job.cwd},
        "expect": expect,
    }))
}

/// Every job file in `dir` (a `SESSIONPIPE_JOB_ARCHIVE`), in arrival order.
pub fn jobs_in(dir: &std::path::Path) -> Result<Vec<Job>, Failed> {
    let mut paths: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "job"))
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| Job::read(p).map_err(|e| Failed(format!("{}: {e}", p.display()))))
        .collect()
}

/// Writes one fixture per job into `dir`, named after the hook event in kebab case
/// (`PreToolUse` → `pre-tool-use.json`); a later job of the same event replaces
/// an earlier one.
pub fn record_fixtures(
    jobs: &[Job],
    dir: &std::path::Path,
    version: &str,
    how: &str,
) -> Result<(), Failed> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for job in jobs {
        let fixture = fixture_from_job(job, version, how)?;
        let mut name = String::new();
        for (i, c) in job.event.chars().enumerate() {
            if c.is_uppercase() && i > 0 && !name.ends_with('-') {
                name.push('-');
            }
            name.push(if c == '_' {
                '-'
            } else {
                c.to_ascii_lowercase()
            });
        }
        let text = serde_json::to_string_pretty(&fixture).expect("a fixture serialises") + "\n";
        std::fs::write(dir.join(format!("{name}.json")), text).map_err(|e| e.to_string())?;
    }
    Ok(())
}
