//! A stand-in for Claude Code's cross-session inbox, for tests: a Unix socket
//! that reads newline-delimited JSON as 2.1.332's inbox does and records every
//! line, and the per-process registry record (`<config>/sessions/<pid>.json`)
//! that names such a socket.
//!
//! Owns only the test side of that wire. It must not judge a line the way a
//! session would (queue, hold, drop): a test reads what arrived and decides.
//! Like the real inbox it writes nothing back unless told to, reads until the
//! sender ends its side, then ends its own; it ignores blank and unparsable
//! lines, and drops a connection whose line passes 1 MiB.

use serde_json::{Value, json};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::Shutdown;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// The line length past which the real inbox drops a connection.
const MAX_LINE: usize = 1 << 20;

/// How the socket answers a connection once the sender has ended its side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// As 2.1.332 does: nothing, then the end of the stream.
    Close,
    /// A `peer_message_status` receipt saying `held`, then the end. Claude
    /// Code sends this receipt only to a sender's own inbox, never on the
    /// connection: this exercises a sender's handling of one that does.
    Held,
    /// Nothing, and the connection is kept open until the socket is dropped:
    /// an inbox that never confirms.
    Never,
}

/// A listening inbox at a path; dropping it stops it and removes the file.
pub struct InboxSocket {
    path: PathBuf,
    lines: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl InboxSocket {
    /// An inbox answering as 2.1.332 does ([`Answer::Close`]).
    pub fn bind(path: &Path) -> io::Result<InboxSocket> {
        InboxSocket::answering(path, Answer::Close)
    }

    pub fn answering(path: &Path, answer: Answer) -> io::Result<InboxSocket> {
        let listener = UnixListener::bind(path)?;
        let lines = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (l, s) = (lines.clone(), stop.clone());
        let accept = thread::Builder::new()
            .name("inbox-socket".into())
            .spawn(move || accept_loop(listener, l, s, answer))?;
        Ok(InboxSocket {
            path: path.to_path_buf(),
            lines,
            stop,
            accept: Some(accept),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every non-blank line that parsed as JSON, in arrival order, without
    /// its newline.
    pub fn lines(&self) -> Vec<String> {
        self.lines
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The lines as JSON.
    pub fn messages(&self) -> Vec<Value> {
        self.lines()
            .iter()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// Waits until at least `n` lines came (or `timeout` passed) and returns
    /// them all.
    pub fn wait_for(&self, n: usize, timeout: Duration) -> Vec<String> {
        let end = Instant::now() + timeout;
        loop {
            let got = self.lines();
            if got.len() >= n || Instant::now() >= end {
                return got;
            }
            thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for InboxSocket {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop so it sees the stop.
        let _ = UnixStream::connect(&self.path);
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

fn accept_loop(
    listener: UnixListener,
    lines: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    answer: Answer,
) {
    let mut conns: Vec<JoinHandle<()>> = Vec::new();
    let mut open: Vec<UnixStream> = Vec::new();
    for stream in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let Ok(stream) = stream else { continue };
        if let Ok(keep) = stream.try_clone() {
            open.push(keep);
        }
        let lines = lines.clone();
        let stop = stop.clone();
        if let Ok(t) = thread::Builder::new()
            .name("inbox-conn".into())
            .spawn(move || serve(stream, &lines, &stop, answer))
        {
            conns.push(t);
        }
    }
    // Ends the connections an `Answer::Never` holds open.
    for s in open {
        let _ = s.shutdown(Shutdown::Both);
    }
    for t in conns {
        let _ = t.join();
    }
}

fn serve(stream: UnixStream, lines: &Mutex<Vec<String>>, stop: &AtomicBool, answer: Answer) {
    let Ok(read) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = match (&mut reader)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut buf)
        {
            Ok(n) => n,
            Err(_) => return,
        };
        if n == 0 {
            break;
        }
        if buf.len() > MAX_LINE {
            let _ = stream.shutdown(Shutdown::Both);
            return;
        }
        let text = String::from_utf8_lossy(&buf);
        let text = text.trim_end_matches(['\n', '\r']);
        // The real inbox skips what is blank or isn't JSON, and reads on.
        if !text.trim().is_empty() && serde_json::from_str::<Value>(text).is_ok() {
            lines
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(text.to_string());
        }
    }
    let mut write = &stream;
    match answer {
        Answer::Close => {}
        Answer::Held => {
            let receipt = json!({
                "type": "control",
                "action": "peer_message_status",
                "status": "held",
                "reason": "Your message is held for the recipient user's approval before it reaches their Claude session (permission-mode parity).",
            });
            let _ = write.write_all(format!("{receipt}\n").as_bytes());
        }
        Answer::Never => {
            while !stop.load(Ordering::SeqCst) {
                thread::sleep(Duration::from_millis(20));
            }
        }
    }
    let _ = stream.shutdown(Shutdown::Both);
}

/// Writes `<config_dir>/sessions/<pid>.json` with the keys 2.1.332 writes for
/// an interactive terminal session, naming `socket` as its inbox and
/// `peer_protocol` (left out when `None`). `procStart` is the process's own
/// start time where it can be read (Linux), as Claude Code records it.
pub fn registry_record(
    config_dir: &Path,
    pid: u32,
    session_id: &str,
    socket: &Path,
    peer_protocol: Option<u64>,
) -> io::Result<PathBuf> {
    let sessions = config_dir.join("sessions");
    std::fs::create_dir_all(&sessions)?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let cwd = std::env::current_dir().unwrap_or_default();
    let mut record = json!({
        "pid": pid,
        "sessionId": session_id,
        "cwd": cwd.to_string_lossy(),
        "startedAt": now,
        "version": "2.1.332",
    });
    let o = record.as_object_mut().expect("an object");
    if let Some(start) = proc_start(pid) {
        o.insert("procStart".into(), start.into());
    }
    if let Some(p) = peer_protocol {
        o.insert("peerProtocol".into(), p.into());
    }
    o.insert(
        "peerFeatures".into(),
        json!(["notify_idle", "artifact_yield"]),
    );
    o.insert("kind".into(), "interactive".into());
    o.insert("entrypoint".into(), "cli".into());
    o.insert(
        "messagingSocketPath".into(),
        socket.to_string_lossy().into(),
    );
    o.insert("name".into(), "project-fix-tests".into());
    o.insert("nameSource".into(), "derived".into());
    o.insert("nameSince".into(), now.into());
    o.insert("updatedAt".into(), now.into());
    o.insert("status".into(), "idle".into());
    let path = sessions.join(format!("{pid}.json"));
    std::fs::write(&path, serde_json::to_vec(&record)?)?;
    Ok(path)
}

/// Field 22 of `/proc/<pid>/stat`, the start time Claude Code records.
fn proc_start(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(19)
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_lines_and_ends_after_the_senders_end() {
        let dir = tempfile::tempdir().unwrap();
        let sock = InboxSocket::bind(&dir.path().join("1.sock")).unwrap();
        let mut s = UnixStream::connect(sock.path()).unwrap();
        s.write_all(b"{\"type\":\"user\"}\n\nnot json\n{\"type\":\"control\"}\n")
            .unwrap();
        s.shutdown(Shutdown::Write).unwrap();
        let mut answer = Vec::new();
        s.read_to_end(&mut answer).unwrap();
        assert!(answer.is_empty(), "the real inbox writes nothing back");
        assert_eq!(
            sock.wait_for(2, Duration::from_secs(2)),
            [r#"{"type":"user"}"#, r#"{"type":"control"}"#]
        );
    }

    #[test]
    fn held_answers_a_receipt() {
        let dir = tempfile::tempdir().unwrap();
        let sock = InboxSocket::answering(&dir.path().join("1.sock"), Answer::Held).unwrap();
        let mut s = UnixStream::connect(sock.path()).unwrap();
        s.write_all(b"{}\n").unwrap();
        s.shutdown(Shutdown::Write).unwrap();
        let mut answer = String::new();
        s.read_to_string(&mut answer).unwrap();
        let v: Value = serde_json::from_str(answer.trim()).unwrap();
        assert_eq!(v["status"], "held");
    }

    #[test]
    fn the_record_names_the_socket_and_the_protocol() {
        let dir = tempfile::tempdir().unwrap();
        let sock = dir.path().join("cc-socks/7.sock");
        let path = registry_record(dir.path(), 7, "abc", &sock, Some(1)).unwrap();
        assert_eq!(path, dir.path().join("sessions/7.json"));
        let v: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(v["pid"], 7);
        assert_eq!(v["sessionId"], "abc");
        assert_eq!(v["peerProtocol"], 1);
        assert_eq!(v["messagingSocketPath"], sock.to_string_lossy().as_ref());
        assert_eq!(v["kind"], "interactive");
        registry_record(dir.path(), 7, "abc", &sock, None).unwrap();
        let v: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert!(v.get("peerProtocol").is_none());
    }
}
