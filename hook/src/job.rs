//! Writing one job file: the payload streamed from stdin, then the trailer line.
//!
//! The trailer is written last because only then are the payload's length and the
//! count of bytes dropped past the bound known. Names sort by arrival time, so the
//! daemon takes jobs in the order the hooks ran.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

/// The most payload bytes kept in one job. Claude Code can put a pasted image's
/// megabytes into a prompt; past this bound the rest of stdin is read and thrown
/// away (so the harness never sees a broken pipe) and the trailer says how much.
pub const MAX_PAYLOAD: u64 = 64 << 20;
/// Past this much stdin in total the hook stops reading: a harness never sends it.
const MAX_STDIN: u64 = 512 << 20;

/// Environment variables the adapters read. An allowlist: the rest of a harness's
/// environment (tokens, keys) never reaches the spool.
const ENV_KEPT: &[&str] = &[
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
    "CODEX_HOME",
    "GEMINI_PROJECT_DIR",
    "GEMINI_CWD",
    "GEMINI_SESSION_ID",
    "DEVIN_PROJECT_DIR",
    "GROK_HOME",
    "GROK_WORKSPACE_ROOT",
];

/// Reads stdin into a new job in `<state>/spool` and returns the job's file name.
pub fn spool_stdin(state_dir: &Path, args: &[String]) -> io::Result<String> {
    spool(state_dir, args, &mut io::stdin().lock())
}

/// Writes what `source` holds as a new job (the status line hands over the
/// payload it already read) and returns the job's file name.
pub fn spool(state_dir: &Path, args: &[String], source: &mut dyn Read) -> io::Result<String> {
    let at_ns = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let pid = std::process::id();
    let name = format!("{at_ns:020}-{pid:010}.job");
    let spool = state_dir.join("spool");
    let tmp_path = spool.join(format!(".tmp-{name}"));

    let mut file = match create_private(&tmp_path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            create_private_dirs(&spool)?;
            create_private(&tmp_path)?
        }
        Err(e) => return Err(e),
    };
    let written = copy(source, &mut file);
    let (len, dropped) = match written {
        Ok(v) => v,
        Err(e) => {
            let _ = fs::remove_file(&tmp_path);
            return Err(e);
        }
    };
    let trailer = trailer(args, at_ns, pid, len, dropped);
    let finish = file
        .write_all(trailer.as_bytes())
        .and_then(|_| fs::rename(&tmp_path, spool.join(&name)));
    if let Err(e) = finish {
        let _ = fs::remove_file(&tmp_path);
        return Err(e);
    }
    Ok(name)
}

/// Reads and discards stdin, for when there is nowhere to spool it.
pub fn drain_stdin() {
    let _ = io::copy(&mut io::stdin().lock().take(MAX_STDIN), &mut io::sink());
}

pub fn create_private(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

pub fn create_private_dirs(dir: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// Streams `source` into `file`: at most `MAX_PAYLOAD` bytes kept, the rest counted.
fn copy(source: &mut dyn Read, file: &mut File) -> io::Result<(u64, u64)> {
    let mut buf = vec![0u8; 64 * 1024];
    let (mut kept, mut dropped) = (0u64, 0u64);
    while kept + dropped < MAX_STDIN {
        let n = match source.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            // A stdin that cannot be read ends the payload where it is.
            Err(_) => break,
        };
        let room = (MAX_PAYLOAD - kept).min(n as u64) as usize;
        if room > 0 {
            file.write_all(&buf[..room])?;
        }
        kept += room as u64;
        dropped += (n - room) as u64;
    }
    Ok((kept, dropped))
}

fn trailer(args: &[String], at_ns: u128, pid: u32, len: u64, dropped: u64) -> String {
    let mut t = String::with_capacity(512);
    t.push_str("\n{\"v\":1,\"harness\":");
    push_json_str(&mut t, args.first().map(String::as_str).unwrap_or(""));
    t.push_str(",\"event\":");
    push_json_str(&mut t, args.get(1).map(String::as_str).unwrap_or(""));
    t.push_str(",\"argv\":[");
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            t.push(',');
        }
        push_json_str(&mut t, a);
    }
    t.push_str("],\"cwd\":");
    let cwd = std::env::current_dir()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    push_json_str(&mut t, &cwd);
    t.push_str(&format!(",\"pid\":{pid}"));
    #[cfg(unix)]
    t.push_str(&format!(
        ",\"ppid\":{}",
        std::os::unix::process::parent_id()
    ));
    t.push_str(&format!(
        ",\"at_ns\":{at_ns},\"len\":{len},\"dropped\":{dropped},\"env\":{{"
    ));
    let mut first = true;
    for key in ENV_KEPT {
        if let Some(value) = std::env::var_os(key) {
            if !first {
                t.push(',');
            }
            first = false;
            push_json_str(&mut t, key);
            t.push(':');
            push_json_str(&mut t, &value.to_string_lossy());
        }
    }
    t.push_str("}}\n");
    t
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

    #[test]
    fn json_strings_are_escaped() {
        let mut s = String::new();
        push_json_str(&mut s, "a\"b\\c\nd\u{1}é");
        assert_eq!(s, r#""a\"b\\c\nd\u0001é""#);
    }

    #[test]
    fn trailer_is_one_line_of_json() {
        let args = vec!["claude-code".to_string(), "Stop\n".to_string()];
        let t = trailer(&args, 7, 1, 2, 3);
        assert!(t.ends_with("}\n"));
        assert_eq!(t.matches('\n').count(), 2, "the separator and the end");
        assert!(t.starts_with("\n{\"v\":1,\"harness\":\"claude-code\",\"event\":\"Stop\\n\""));
        assert!(t.contains("\"at_ns\":7,\"len\":2,\"dropped\":3"));
    }
}
