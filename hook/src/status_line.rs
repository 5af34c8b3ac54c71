//! `sessionpipe-hook claude-code StatusLine`: Claude Code's status line command.
//!
//! Only a status line is handed the account's limits (ADAPTERS.md, Claude Code
//! row, Limits): stdin's `rate_limits.<window>.used_percentage` and `resets_at`
//! (epoch seconds). This module owns that one call: it prints the limits as the
//! line (`5h 23% · week 41%`, nothing when there are none) and spools the payload
//! as a job only when the limits changed since the last job of the config dir,
//! and at most once a minute per config dir (Claude Code runs the line on every
//! assistant message and, with `refreshInterval: 60`, every minute besides, so a
//! change held back now is sent at the first run past the minute).
//!
//! The memory of the last job is one tiny file per config dir,
//! `<state>/status-line/<16 hex>`: `<epoch seconds> <16 hex digest of the limits>`.
//! It is written only after the job was spooled, so a failed spool is tried again.
//!
//! It must not print anything but the line (the status line shows stdout as is),
//! write to stderr, wait, or fail: every error ends in the line already printed,
//! or none, and exit 0. It parses the payload (the one hook that must), with the
//! hook's own small reader, and stays std only.

use crate::wake;
use spool::files::create_private_file;
use spool::job::{self, Job};
use spool::json::{self, Value};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// The most of a status line payload read (Claude Code sends a few KB); a larger
/// one is drained unread and shows no limits.
const MAX_PAYLOAD: u64 = 1 << 20;
/// At most one job per config dir in this many seconds.
pub const MIN_INTERVAL_S: u64 = 60;

/// One limit window as Claude Code hands it over, under its own key.
#[derive(Clone, Debug, PartialEq)]
pub struct Window {
    pub key: String,
    pub used: f64,
    /// Epoch seconds.
    pub resets_at: Option<i64>,
}

/// The last job of a config dir: when, and a digest of the limits it carried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sent {
    pub at_s: u64,
    pub digest: u64,
}

/// The whole call (see the module comment).
pub fn run(state_dir: Option<&Path>, args: &[String]) {
    let payload = read_stdin();
    let doc = json::parse(&payload);
    let windows = doc.as_ref().map(windows).unwrap_or_default();
    let text = line(&windows);
    if !text.is_empty() {
        let mut out = io::stdout().lock();
        let _ = writeln!(out, "{text}").and_then(|_| out.flush());
    }
    let Some(state_dir) = state_dir.filter(|_| !windows.is_empty()) else {
        return;
    };
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    let config = config_dir(
        doc.as_ref(),
        var("CLAUDE_CONFIG_DIR").map(PathBuf::from),
        var("HOME").map(PathBuf::from),
    );
    let state = spool::StatePaths::new(state_dir);
    let memory = state.status_line().join(format!(
        "{:016x}",
        fnv1a(config.to_string_lossy().as_bytes())
    ));
    let now = now_s();
    let digest = digest(&windows);
    if !due(read_sent(&memory), digest, now) {
        return;
    }
    let call = Job::of_this_process(args, job::now_ns());
    if job::write(&state.spool(), &call, &mut payload.as_slice()).is_ok() {
        // Remembered only once spooled, so a failed spool is tried again.
        let _ = write_sent(&memory, Sent { at_s: now, digest });
        wake::wake_or_start_worker(state_dir);
    }
}

/// Stdin, up to `MAX_PAYLOAD`; past that the rest is drained and the read is
/// empty (so the line shows nothing rather than half a document's worth).
fn read_stdin() -> Vec<u8> {
    let mut buf = Vec::with_capacity(8 * 1024);
    let read = io::stdin()
        .lock()
        .take(MAX_PAYLOAD + 1)
        .read_to_end(&mut buf);
    if read.is_err() || buf.len() as u64 > MAX_PAYLOAD {
        job::drain_stdin();
        buf.clear();
    }
    buf
}

/// Every window of `rate_limits` that has a finite percentage, in payload order.
/// `used_percentage` is Claude Code's name; `used_percent` is read too.
pub fn windows(doc: &Value) -> Vec<Window> {
    let Some(members) = doc.get("rate_limits").and_then(Value::members) else {
        return Vec::new();
    };
    members
        .iter()
        .filter_map(|(key, w)| {
            let number = |k: &str| w.get(k).and_then(Value::as_f64).filter(|n| n.is_finite());
            Some(Window {
                key: key.clone(),
                used: number("used_percentage").or_else(|| number("used_percent"))?,
                // Saturating: an absurd epoch is still a number, never a panic.
                resets_at: number("resets_at").map(|r| r.round() as i64),
            })
        })
        .collect()
}

/// The status line: `5h 23% · week 41%`; empty when there is nothing to show.
pub fn line(windows: &[Window]) -> String {
    windows
        .iter()
        .filter_map(|w| Some(format!("{} {}%", label(&w.key)?, w.used.round() as i64)))
        .collect::<Vec<_>>()
        .join(" · ")
}

/// A window's name on the line. A key Claude Code adds later shows as itself,
/// but only when it is a plain identifier: the line never shows control
/// characters or an escape sequence from a payload.
fn label(key: &str) -> Option<&str> {
    match key {
        "five_hour" => Some("5h"),
        "seven_day" => Some("week"),
        "spend_limit" => Some("spend"),
        k if (1..=32).contains(&k.len())
            && k.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_') =>
        {
            Some(k)
        }
        _ => None,
    }
}

/// True when a job is due: the limits differ from the last job's, and that job
/// is a minute old (or stamped in the future: a clock set back never holds a
/// change back for longer than it takes to run again).
pub fn due(last: Option<Sent>, digest: u64, now_s: u64) -> bool {
    match last {
        None => true,
        Some(s) if s.digest == digest => false,
        Some(s) => now_s < s.at_s || now_s - s.at_s >= MIN_INTERVAL_S,
    }
}

/// The config dir the session belongs to: the transcript's
/// (`<config>/projects/<slug>/<id>.jsonl`), else `$CLAUDE_CONFIG_DIR`, else
/// `~/.claude`; the same rule as the daemon's (`claude_code::facts`).
pub fn config_dir(
    doc: Option<&Value>,
    claude_config_dir: Option<PathBuf>,
    home: Option<PathBuf>,
) -> PathBuf {
    let transcript = doc
        .and_then(|d| d.get("transcript_path"))
        .and_then(Value::as_str)
        .map(Path::new);
    if let Some(projects) = transcript.and_then(Path::parent).and_then(Path::parent)
        && projects.file_name().is_some_and(|n| n == "projects")
        && let Some(config) = projects.parent()
    {
        return config.to_path_buf();
    }
    claude_config_dir
        .or_else(|| home.map(|h| h.join(".claude")))
        .unwrap_or_default()
}

/// A digest of the limits: keys, percentages and resets, in order.
pub fn digest(windows: &[Window]) -> u64 {
    let mut bytes = Vec::with_capacity(windows.len() * 40);
    for w in windows {
        bytes.extend_from_slice(w.key.as_bytes());
        bytes.push(0);
        bytes.extend_from_slice(&w.used.to_bits().to_le_bytes());
        bytes.extend_from_slice(&w.resets_at.unwrap_or(i64::MIN).to_le_bytes());
    }
    fnv1a(&bytes)
}

/// FNV-1a, 64 bits: a stable name and digest without a hashing dependency
/// (std's own hasher is seeded per process).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn now_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The last job of a config dir; `None` when there is none or the file is not
/// ours to read (then a job is due, and the file is written anew).
pub fn read_sent(path: &Path) -> Option<Sent> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut parts = text.split_whitespace();
    let at_s = parts.next()?.parse().ok()?;
    let digest = u64::from_str_radix(parts.next()?, 16).ok()?;
    Some(Sent { at_s, digest })
}

/// Writes the memory whole (a temp file renamed over it), so a concurrent
/// status line of the same config dir reads the old line or the new, never half.
pub fn write_sent(path: &Path, sent: Sent) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = dir.join(format!(".{name}.{}", std::process::id()));
    let mut file = match create_private_file(&tmp) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            spool::files::create_private_dir(dir)?;
            create_private_file(&tmp)?
        }
        // A temp file left by a killed run of the same pid: start it over.
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            std::fs::remove_file(&tmp)?;
            create_private_file(&tmp)?
        }
        Err(e) => return Err(e),
    };
    let written = writeln!(file, "{} {:016x}", sent.at_s, sent.digest)
        .and_then(|_| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(text: &str) -> Value {
        json::parse(text.as_bytes()).expect("test JSON")
    }

    fn w(key: &str, used: f64, resets_at: Option<i64>) -> Window {
        Window {
            key: key.into(),
            used,
            resets_at,
        }
    }

    /// The shape Claude Code 2.1.332 sends (recorded through a real status line).
    const RECORDED: &str = r#"{"session_id":"5501b74a-b3e0-40e8-8500-c07f70215827","transcript_path":"/home/ann/.claude/projects/-tmp-proj/5501b74a.jsonl","cwd":"/tmp/proj","model":{"id":"claude-opus-5-5","display_name":"Opus 5.5"},"rate_limits":{"five_hour":{"used_percentage":23,"resets_at":1795987162},"seven_day":{"used_percentage":41,"resets_at":1796242762}}}"#;

    #[test]
    fn reads_the_windows_claude_code_sends() {
        let got = windows(&doc(RECORDED));
        assert_eq!(
            got,
            [
                w("five_hour", 23.0, Some(1795987162)),
                w("seven_day", 41.0, Some(1796242762))
            ]
        );
        assert_eq!(line(&got), "5h 23% · week 41%");
    }

    #[test]
    fn spend_later_keys_and_the_other_spelling() {
        let got = windows(&doc(
            r#"{"rate_limits":{"spend_limit":{"used_percentage":120.4,"resets_at":1.7e9,"used_usd":12,"limit_usd":10},"seven_day_opus":{"used_percent":7.5},"five_hour":null,"bad":{"used_percentage":"9"},"e\u001b[31m":{"used_percentage":1}}}"#,
        ));
        assert_eq!(
            got,
            [
                w("spend_limit", 120.4, Some(1_700_000_000)),
                w("seven_day_opus", 7.5, None),
                w("e\u{1b}[31m", 1.0, None),
            ]
        );
        // Rounded half away from zero; the escape-sequence key is left off the line.
        assert_eq!(line(&got), "spend 120% · seven_day_opus 8%");
    }

    #[test]
    fn no_limits_is_an_empty_line() {
        for text in [
            "{}",
            r#"{"rate_limits":null}"#,
            r#"{"rate_limits":{}}"#,
            r#"{"rate_limits":[1]}"#,
            r#"{"rate_limits":{"five_hour":{"resets_at":1}}}"#,
            r#"{"rate_limits":{"five_hour":{"used_percentage":1e999}}}"#,
        ] {
            assert_eq!(windows(&doc(text)), [], "{text}");
        }
        assert_eq!(line(&[]), "");
        let long = "k".repeat(33);
        assert_eq!(line(&[w(&long, 5.0, None)]), "");
        assert_eq!(line(&[w("", 5.0, None)]), "");
    }

    #[test]
    fn a_job_when_the_limits_change_and_at_most_once_a_minute() {
        let (a, b, c) = (1, 2, 3);
        let t0 = 1_800_000_000;
        assert!(due(None, a, t0), "the first limits seen");
        let mut last = Sent {
            at_s: t0,
            digest: a,
        };
        assert!(!due(Some(last), a, t0 + 5), "unchanged");
        assert!(!due(Some(last), a, t0 + 3600), "unchanged, even much later");
        assert!(
            !due(Some(last), b, t0 + 59),
            "changed within the minute: held back"
        );
        assert!(due(Some(last), b, t0 + 60), "changed, a minute on");
        last = Sent {
            at_s: t0 + 60,
            digest: b,
        };
        assert!(!due(Some(last), a, t0 + 61));
        assert!(
            !due(Some(last), b, t0 + 200),
            "held back, then back as sent: nothing"
        );
        assert!(due(Some(last), c, t0 + 121));
        assert!(due(Some(last), c, t0), "a clock set back does not hold it");
    }

    #[test]
    fn the_digest_sees_every_part() {
        let base = [w("five_hour", 23.0, Some(1)), w("seven_day", 41.0, Some(2))];
        let d = digest(&base);
        assert_eq!(d, digest(&base.clone()));
        for changed in [
            [w("five_hour", 24.0, Some(1)), base[1].clone()],
            [w("five_hour", 23.0, Some(9)), base[1].clone()],
            [w("five_hour", 23.0, None), base[1].clone()],
            [w("five_hours", 23.0, Some(1)), base[1].clone()],
            [base[1].clone(), base[0].clone()],
        ] {
            assert_ne!(d, digest(&changed), "{changed:?}");
        }
    }

    #[test]
    fn the_config_dir_is_the_transcripts_else_the_variable_else_home() {
        let home = Some(PathBuf::from("/home/ann"));
        let var = Some(PathBuf::from("/cfg/work"));
        assert_eq!(
            config_dir(Some(&doc(RECORDED)), var.clone(), home.clone()),
            Path::new("/home/ann/.claude")
        );
        let odd = doc(r#"{"transcript_path":"/x/sessions/a/b.jsonl"}"#);
        assert_eq!(
            config_dir(Some(&odd), var.clone(), home.clone()),
            Path::new("/cfg/work")
        );
        assert_eq!(config_dir(None, None, home), Path::new("/home/ann/.claude"));
        assert_eq!(config_dir(None, None, None), Path::new(""));
    }

    #[test]
    fn the_memory_round_trips_and_bad_memory_reads_as_none() {
        let dir = std::env::temp_dir().join(format!("sp-status-line-{}", std::process::id()));
        let path = spool::StatePaths::new(&dir)
            .status_line()
            .join("0123456789abcdef");
        let sent = Sent {
            at_s: 1_800_000_000,
            digest: u64::MAX - 1,
        };
        write_sent(&path, sent).unwrap();
        assert_eq!(read_sent(&path), Some(sent));
        let newer = Sent { at_s: 7, digest: 0 };
        write_sent(&path, newer).unwrap();
        assert_eq!(read_sent(&path), Some(newer));
        for bad in ["", "x y", "12", "12 zz", "-1 00"] {
            std::fs::write(&path, bad).unwrap();
            assert_eq!(read_sent(&path), None, "{bad:?}");
        }
        assert_eq!(read_sent(&dir.join("missing")), None);
        let leftovers: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
            .collect();
        assert!(leftovers.is_empty(), "no temp file is left behind");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
