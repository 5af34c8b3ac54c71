//! One job file: one hook call, written by `sessionpipe-hook`, read by the daemon.
//!
//! Format: the raw payload bytes, `\n`, one line of JSON (the trailer: format
//! version, harness, event, argv, cwd, pid, parent pid, arrival time, payload
//! length, bytes dropped past the bound, the allowlisted environment), `\n`. The
//! trailer comes last because the hook streams stdin and only knows its length at
//! the end. File names sort by arrival (`<at_ns>-<pid>.job`), so the daemon takes
//! jobs in the order the hooks ran; a job is written as a hidden temp file and
//! renamed into place, so the daemon never sees half of one.
//!
//! Both halves live here, the writer and the reader, so that one format exists.
//! This module does not decide what a payload means.

use crate::json::{self, Value};
use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// The trailer's format version.
pub const FORMAT_VERSION: u64 = 1;

/// The most payload bytes kept in one job. Claude Code can put a pasted image's
/// megabytes into a prompt; past this bound the rest of stdin is read and thrown
/// away (so the harness never sees a broken pipe) and the trailer says how much.
pub const MAX_PAYLOAD: u64 = 64 << 20;
/// Past this much stdin in total the hook stops reading: a harness never sends it.
pub const MAX_STDIN: u64 = 512 << 20;

/// Environment variables the adapters read. An allowlist: the rest of a harness's
/// environment (tokens, keys) never reaches the spool.
pub const ENV_KEPT: &[&str] = &[
    "HOME",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "CLAUDE_CONFIG_DIR",
    "CLAUDE_PROJECT_DIR",
    "CLAUDE_CODE_HOST_SESSION_ID",
    "CLAUDE_CODE_SESSION_ATTENDED",
    "CLAUDE_CODE_ENTRYPOINT",
    "CLAUDE_CODE_ENVIRONMENT_KIND",
    "CLAUDE_PID",
    "AI_AGENT",
    "SESSIONPIPE_CONTROL_JOB",
    // The session a control start named, set on an ACP agent's process: its
    // hooks' events go under that name, not the agent's own id.
    "SESSIONPIPE_CONTROL_SESSION",
    "CODEX_HOME",
    "GEMINI_PROJECT_DIR",
    "GEMINI_CWD",
    "GEMINI_SESSION_ID",
    "DEVIN_PROJECT_DIR",
    "GROK_HOME",
    "GROK_WORKSPACE_ROOT",
    "COPILOT_HOME",
    "COPILOT_CLI_BINARY_VERSION",
];

/// One hook call: who called, when, with what payload.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
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

/// Why a job file cannot be read (the reason it is quarantined with).
#[derive(Debug)]
pub enum JobError {
    Read(io::Error),
    /// No trailer line at the end: the file was cut short.
    NoTrailer,
    /// The trailer line is not the JSON this format writes.
    BadTrailer(&'static str),
    UnknownVersion(u64),
    /// The payload's length is not the one the trailer says.
    Length {
        payload: u64,
        trailer: u64,
    },
}

impl std::fmt::Display for JobError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JobError::Read(e) => write!(f, "cannot read the job: {e}"),
            JobError::NoTrailer => f.write_str("the job has no trailer line (cut short?)"),
            JobError::BadTrailer(why) => write!(f, "the job's trailer is not valid: {why}"),
            JobError::UnknownVersion(v) => write!(f, "job format version {v} is not known"),
            JobError::Length { payload, trailer } => write!(
                f,
                "the payload is {payload} bytes but the trailer says {trailer}"
            ),
        }
    }
}

impl std::error::Error for JobError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            JobError::Read(e) => Some(e),
            _ => None,
        }
    }
}

impl Job {
    /// Parses a job file's bytes.
    pub fn parse(name: &str, bytes: &[u8]) -> Result<Job, JobError> {
        let body = bytes.strip_suffix(b"\n").ok_or(JobError::NoTrailer)?;
        let nl = body
            .iter()
            .rposition(|&b| b == b'\n')
            .ok_or(JobError::NoTrailer)?;
        let (payload, trailer) = (&body[..nl], &body[nl + 1..]);
        let t = json::parse(trailer).ok_or(JobError::BadTrailer("not JSON"))?;
        let v = t
            .get("v")
            .and_then(Value::as_u64)
            .ok_or(JobError::BadTrailer("no version"))?;
        if v != FORMAT_VERSION {
            return Err(JobError::UnknownVersion(v));
        }
        let text = |k: &str| t.get(k).and_then(Value::as_str).map(str::to_string);
        let number = |k: &str| t.get(k).and_then(Value::as_u64);
        let len = number("len").ok_or(JobError::BadTrailer("no len"))?;
        if len != payload.len() as u64 {
            return Err(JobError::Length {
                payload: payload.len() as u64,
                trailer: len,
            });
        }
        let argv = match t.get("argv") {
            None => Vec::new(),
            Some(a) => a
                .as_array()
                .and_then(|a| a.iter().map(|x| x.as_str().map(str::to_string)).collect())
                .ok_or(JobError::BadTrailer("argv is not a list of strings"))?,
        };
        let env = match t.get("env") {
            None => BTreeMap::new(),
            Some(e) => e
                .members()
                .and_then(|m| {
                    m.iter()
                        .map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                        .collect()
                })
                .ok_or(JobError::BadTrailer("env is not an object of strings"))?,
        };
        Ok(Job {
            name: name.to_string(),
            harness: text("harness").ok_or(JobError::BadTrailer("no harness"))?,
            event: text("event").ok_or(JobError::BadTrailer("no event"))?,
            argv,
            cwd: text("cwd").unwrap_or_default(),
            pid: number("pid")
                .and_then(|p| u32::try_from(p).ok())
                .unwrap_or(0),
            ppid: number("ppid").and_then(|p| u32::try_from(p).ok()),
            at_ns: number("at_ns").ok_or(JobError::BadTrailer("no at_ns"))?,
            env,
            payload: payload.to_vec(),
            dropped: number("dropped").unwrap_or(0),
        })
    }

    pub fn read(path: &Path) -> Result<Job, JobError> {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let bytes = fs::read(path).map_err(JobError::Read)?;
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
    pub fn home(&self) -> Option<PathBuf> {
        self.env("HOME")
            .map(PathBuf::from)
            .or_else(crate::paths::home_dir)
    }

    /// This process's call, as the hook sees it: `args` (harness, event, ...),
    /// its folder, pid and parent, and the allowlisted environment. No payload yet.
    pub fn of_this_process(args: &[String], at_ns: u64) -> Job {
        let env = ENV_KEPT
            .iter()
            .filter_map(|k| {
                let v = std::env::var_os(k)?;
                Some((k.to_string(), v.to_string_lossy().into_owned()))
            })
            .collect();
        let pid = std::process::id();
        Job {
            name: format!("{at_ns:020}-{pid:010}.job"),
            harness: args.first().cloned().unwrap_or_default(),
            event: args.get(1).cloned().unwrap_or_default(),
            argv: args.to_vec(),
            cwd: std::env::current_dir()
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default(),
            pid,
            ppid: parent_pid(),
            at_ns,
            env,
            payload: Vec::new(),
            dropped: 0,
        }
    }

    /// The trailer line for a payload of `len` bytes (`dropped` more thrown
    /// away), with its leading and trailing newline.
    pub fn trailer(&self, len: u64, dropped: u64) -> String {
        let mut t = String::with_capacity(512);
        t.push_str(&format!("\n{{\"v\":{FORMAT_VERSION},\"harness\":"));
        push_json_str(&mut t, &self.harness);
        t.push_str(",\"event\":");
        push_json_str(&mut t, &self.event);
        t.push_str(",\"argv\":[");
        for (i, a) in self.argv.iter().enumerate() {
            if i > 0 {
                t.push(',');
            }
            push_json_str(&mut t, a);
        }
        t.push_str("],\"cwd\":");
        push_json_str(&mut t, &self.cwd);
        t.push_str(&format!(",\"pid\":{}", self.pid));
        if let Some(ppid) = self.ppid {
            t.push_str(&format!(",\"ppid\":{ppid}"));
        }
        t.push_str(&format!(
            ",\"at_ns\":{},\"len\":{len},\"dropped\":{dropped},\"env\":{{",
            self.at_ns
        ));
        for (i, (key, value)) in self.env.iter().enumerate() {
            if i > 0 {
                t.push(',');
            }
            push_json_str(&mut t, key);
            t.push(':');
            push_json_str(&mut t, value);
        }
        t.push_str("}}\n");
        t
    }

    /// The bytes of this job's file (tests, fixtures).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = self.payload.clone();
        out.extend_from_slice(
            self.trailer(self.payload.len() as u64, self.dropped)
                .as_bytes(),
        );
        out
    }
}

#[cfg(unix)]
fn parent_pid() -> Option<u32> {
    Some(std::os::unix::process::parent_id())
}

#[cfg(not(unix))]
fn parent_pid() -> Option<u32> {
    None
}

/// Streams `source` into a new job of `call` in `spool_dir` and returns the job's
/// file name. At most `MAX_PAYLOAD` bytes are kept; the rest is read and counted.
pub fn write(spool_dir: &Path, call: &Job, source: &mut dyn Read) -> io::Result<String> {
    let tmp_path = spool_dir.join(format!(".tmp-{}", call.name));
    let mut file = match crate::files::create_private_file(&tmp_path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            crate::files::create_private_dir(spool_dir)?;
            crate::files::create_private_file(&tmp_path)?
        }
        Err(e) => return Err(e),
    };
    // A payload that fits the buffer (almost every one) goes to the file in
    // the same write as the trailer: one `write` for the whole job.
    let mut buf = [0u8; COPY_BUF];
    let finish = copy(source, &mut file, &mut buf).and_then(|(len, dropped, held)| {
        let trailer = call.trailer(len, dropped);
        write_both(&mut file, &buf[..held], trailer.as_bytes())?;
        fs::rename(&tmp_path, spool_dir.join(&call.name))
    });
    if let Err(e) = finish {
        let _ = fs::remove_file(&tmp_path);
        return Err(e);
    }
    Ok(call.name.clone())
}

/// The copy buffer: on the stack, so a hook call neither allocates nor zeroes
/// more than it reads (a 64 KiB heap buffer was a `calloc` that cleared, and
/// faulted in, 16 pages on every call). Claude Code's payloads are a few KB.
const COPY_BUF: usize = 16 * 1024;

/// Now, in nanoseconds since the epoch (a job's `at_ns`).
pub fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// Reads and discards stdin, for when there is nowhere to spool it.
pub fn drain_stdin() {
    let _ = io::copy(&mut io::stdin().lock().take(MAX_STDIN), &mut io::sink());
}

/// Streams `source` into `file` through `buf`: at most `MAX_PAYLOAD` bytes
/// kept, the rest counted. The last bytes kept are left in `buf` (their count is
/// the third value), for the caller to write with the trailer.
fn copy(
    source: &mut dyn Read,
    file: &mut fs::File,
    buf: &mut [u8],
) -> io::Result<(u64, u64, usize)> {
    let (mut kept, mut dropped, mut held) = (0u64, 0u64, 0usize);
    while kept + dropped < MAX_STDIN {
        if held == buf.len() {
            file.write_all(buf)?;
            held = 0;
        }
        let n = match source.read(&mut buf[held..]) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            // A stdin that cannot be read ends the payload where it is.
            Err(_) => break,
        };
        let room = (MAX_PAYLOAD - kept).min(n as u64) as usize;
        held += room;
        kept += room as u64;
        dropped += (n - room) as u64;
    }
    Ok((kept, dropped, held))
}

/// Writes `a` then `b` with as few `write`s as the file takes (one, for a
/// regular file that has the space).
fn write_both(file: &mut fs::File, a: &[u8], b: &[u8]) -> io::Result<()> {
    let mut done = 0usize;
    let total = a.len() + b.len();
    while done < total {
        let n = if done < a.len() {
            file.write_vectored(&[io::IoSlice::new(&a[done..]), io::IoSlice::new(b)])
        } else {
            file.write(&b[done - a.len()..])
        };
        match n {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Appends `s` as a JSON string literal.
fn push_json_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{2028}' || c == '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(payload: &[u8]) -> Job {
        Job {
            name: "x.job".into(),
            harness: "claude-code".into(),
            event: "Stop".into(),
            argv: vec!["claude-code".into(), "Stop\n\"q\"".into()],
            cwd: "/home/ann/é".into(),
            pid: 7,
            ppid: Some(1),
            at_ns: 1_790_561_103_861_123_457,
            env: [("HOME".to_string(), "/home/ann".to_string())].into(),
            payload: payload.to_vec(),
            dropped: 0,
        }
    }

    #[test]
    fn round_trips_any_payload_bytes_and_every_trailer_field() {
        for p in [&b""[..], b"{}\n", b"a\nb\n\n", &[0xff, 0x00, b'\n', 0x80]] {
            let job = Job::parse("x.job", &sample(p).encode()).unwrap();
            assert_eq!(job, sample(p));
            assert_eq!(job.at_ms(), 1_790_561_103_861);
        }
    }

    #[test]
    fn cut_short_or_mismatched_jobs_are_refused_with_a_reason() {
        let bytes = sample(b"{\"a\":1}").encode();
        assert!(Job::parse("x", &bytes[..bytes.len() - 1]).is_err());
        assert!(Job::parse("x", &bytes[..5]).is_err());
        assert!(matches!(Job::parse("x", b""), Err(JobError::NoTrailer)));
        let mut longer = b"xx".to_vec();
        longer.extend_from_slice(&bytes);
        let err = Job::parse("x", &longer).unwrap_err();
        assert!(err.to_string().contains("trailer says"), "{err}");
        let v2 = String::from_utf8(bytes.clone())
            .unwrap()
            .replace("\"v\":1", "\"v\":2");
        assert!(matches!(
            Job::parse("x", v2.as_bytes()),
            Err(JobError::UnknownVersion(2))
        ));
    }

    #[test]
    fn json_strings_are_escaped() {
        let mut s = String::new();
        push_json_str(&mut s, "a\"b\\c\nd\u{1}é");
        assert_eq!(s, r#""a\"b\\c\nd\u0001é""#);
    }

    #[test]
    fn the_trailer_is_one_line_of_json() {
        let t = sample(b"").trailer(2, 3);
        assert!(t.ends_with("}\n"));
        assert_eq!(t.matches('\n').count(), 2, "the separator and the end");
        assert!(t.starts_with("\n{\"v\":1,\"harness\":\"claude-code\",\"event\":\"Stop\""));
        assert!(t.contains("\"len\":2,\"dropped\":3"));
    }

    /// Hands out at most `step` bytes a read, as a pipe may.
    struct Trickle<'a> {
        data: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.step.min(buf.len()).min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    #[test]
    fn payloads_around_the_copy_buffer_are_written_whole() {
        let dir = tempfile::tempdir().unwrap();
        let spool = dir.path().join("spool");
        for len in [
            0,
            1,
            COPY_BUF - 1,
            COPY_BUF,
            COPY_BUF + 1,
            3 * COPY_BUF + 7,
            200_000,
        ] {
            let payload: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            for step in [1000, COPY_BUF, usize::MAX] {
                let mut call = sample(b"");
                call.name = format!("{len}-{step}.job");
                let mut source = Trickle {
                    data: &payload,
                    step,
                };
                let name = write(&spool, &call, &mut source).unwrap();
                let job = Job::read(&spool.join(&name)).unwrap();
                assert_eq!(job.payload, payload, "{len} bytes, {step} a read");
                assert_eq!(job.dropped, 0);
            }
        }
    }

    #[test]
    fn a_written_job_is_whole_private_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let spool = dir.path().join("spool");
        let call = sample(b"");
        let name = write(&spool, &call, &mut &b"{\"x\":1}"[..]).unwrap();
        let job = Job::read(&spool.join(&name)).unwrap();
        assert_eq!(job.payload, b"{\"x\":1}");
        assert_eq!(job.argv, call.argv);
        let names: Vec<_> = fs::read_dir(&spool).unwrap().flatten().collect();
        assert_eq!(names.len(), 1, "no temp file left");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(spool.join(&name))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
