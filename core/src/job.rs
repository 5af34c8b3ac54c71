//! Reading one job file written by `sessionpipe-hook`.
//!
//! Format (shared with `hook/src/job.rs`, the writer): the raw payload bytes, `\n`,
//! one line of JSON (the trailer: harness, event, argv, cwd, pid, arrival time,
//! payload length, bytes dropped past the bound, the allowlisted environment), `\n`.
//! The trailer comes last because the hook streams stdin and only knows its length
//! at the end. This module parses; it does not decide what a payload means.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

#[derive(Clone, Debug, Deserialize)]
struct Trailer {
    v: u32,
    harness: String,
    event: String,
    #[serde(default)]
    argv: Vec<String>,
    #[serde(default)]
    cwd: String,
    #[serde(default)]
    pid: u32,
    #[serde(default)]
    ppid: Option<u32>,
    at_ns: u64,
    len: u64,
    #[serde(default)]
    dropped: u64,
    #[serde(default)]
    env: BTreeMap<String, String>,
}

/// One hook call: who called, when, with what payload.
#[derive(Clone, Debug, Default)]
pub struct Job {
    /// The spool file name; unique, and sorts by arrival.
    pub name: String,
    pub harness: String,
    pub event: String,
    pub argv: Vec<String>,
    /// The hook process's working directory.
    pub cwd: String,
    pub pid: u32,
    pub ppid: Option<u32>,
    /// When the hook started, in nanoseconds since the epoch (the hook's clock).
    pub at_ns: u64,
    pub env: BTreeMap<String, String>,
    pub payload: Vec<u8>,
    /// Payload bytes past the hook's bound that were read and thrown away.
    pub dropped: u64,
}

impl Job {
    /// Parses a job file's bytes; the error says what is wrong, for the quarantine.
    pub fn parse(name: &str, bytes: &[u8]) -> Result<Job, String> {
        let body = bytes
            .strip_suffix(b"\n")
            .ok_or("the job has no trailer line (cut short?)")?;
        let nl = body
            .iter()
            .rposition(|&b| b == b'\n')
            .ok_or("the job has no trailer line (cut short?)")?;
        let (payload, trailer) = (&body[..nl], &body[nl + 1..]);
        let t: Trailer = serde_json::from_slice(trailer)
            .map_err(|e| format!("the job's trailer is not valid: {e}"))?;
        if t.v != 1 {
            return Err(format!("job format version {} is not known", t.v));
        }
        if t.len != payload.len() as u64 {
            return Err(format!(
                "the payload is {} bytes but the trailer says {}",
                payload.len(),
                t.len
            ));
        }
        Ok(Job {
            name: name.to_string(),
            harness: t.harness,
            event: t.event,
            argv: t.argv,
            cwd: t.cwd,
            pid: t.pid,
            ppid: t.ppid,
            at_ns: t.at_ns,
            env: t.env,
            payload: payload.to_vec(),
            dropped: t.dropped,
        })
    }

    pub fn read(path: &Path) -> Result<Job, String> {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let bytes = std::fs::read(path).map_err(|e| format!("cannot read the job: {e}"))?;
        Job::parse(&name, &bytes)
    }

    /// Arrival time in epoch milliseconds.
    pub fn at_ms(&self) -> i64 {
        (self.at_ns / 1_000_000) as i64
    }

    /// An environment variable the hook saw, when non-empty.
    pub fn env(&self, key: &str) -> Option<&str> {
        self.env
            .get(key)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// The home of the harness that ran the hook (its `HOME`), else this process's.
    pub fn home(&self) -> Option<std::path::PathBuf> {
        self.env("HOME")
            .map(std::path::PathBuf::from)
            .or_else(crate::paths::home_dir)
    }

    /// Builds the bytes of a job file, as the hook writes them (tests, fixtures).
    pub fn encode(&self) -> Vec<u8> {
        let trailer = serde_json::json!({
            "v": 1, "harness": self.harness, "event": self.event, "argv": self.argv,
            "cwd": self.cwd, "pid": self.pid, "ppid": self.ppid, "at_ns": self.at_ns,
            "len": self.payload.len(), "dropped": self.dropped, "env": self.env,
        });
        let mut out = self.payload.clone();
        out.push(b'\n');
        out.extend_from_slice(trailer.to_string().as_bytes());
        out.push(b'\n');
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(payload: &[u8]) -> Job {
        Job {
            name: "x.job".into(),
            harness: "claude-code".into(),
            event: "Stop".into(),
            argv: vec!["claude-code".into(), "Stop".into()],
            at_ns: 1_790_561_103_861_000_000,
            payload: payload.to_vec(),
            ..Default::default()
        }
    }

    #[test]
    fn round_trips_any_payload_bytes() {
        for p in [&b""[..], b"{}\n", b"a\nb\n\n", &[0xff, 0x00, b'\n', 0x80]] {
            let job = Job::parse("x.job", &sample(p).encode()).unwrap();
            assert_eq!(job.payload, p);
            assert_eq!(job.event, "Stop");
            assert_eq!(job.at_ms(), 1_790_561_103_861);
        }
    }

    #[test]
    fn cut_short_or_mismatched_jobs_are_refused_with_a_reason() {
        let bytes = sample(b"{\"a\":1}").encode();
        assert!(Job::parse("x", &bytes[..bytes.len() - 1]).is_err());
        assert!(Job::parse("x", &bytes[..5]).is_err());
        assert!(Job::parse("x", b"").is_err());
        let mut longer = b"xx".to_vec();
        longer.extend_from_slice(&bytes);
        let err = Job::parse("x", &longer).unwrap_err();
        assert!(err.contains("trailer says"), "{err}");
    }
}
