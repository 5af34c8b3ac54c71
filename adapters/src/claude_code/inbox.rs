//! Claude Code's cross-session inbox (ADAPTERS.md, Claude Code row, Control in
//! place): the one line the daemon writes to a live session's
//! `messagingSocketPath`, and the one write that carries it.
//!
//! Owns the wire shape of that line (`{"type":"user","message":{"role":"user",
//! "content":…},"priority":"later"}`, the words in a `<cross-session-message>`
//! envelope), the declared-class rule that decides whether the receiving
//! session holds it, and a connect-write-read on a Unix stream. It must never
//! write twice, never read a registry (the caller hands it the socket, behind
//! the `peerProtocol` pin), never send an auth line or a reply address (the
//! daemon is no Claude session and has no inbox of its own), and never frame
//! the words: they arrive framed.
//!
//! Measured on Claude Code 2.1.332 (its own inbox server and envelope code):
//! - the socket takes newline-delimited JSON; a `user` line needs a non-empty
//!   string `message.content`; `priority` is `now`, `next` or `later`;
//! - the server writes nothing back on the connection: it reads to the
//!   sender's end, then ends its own (so an end of stream after our end says
//!   the line was read whole); receipts (`held`, `delivered`, `refused`, …) go
//!   only to a sender's own inbox, named by a `uds:` address we never send;
//! - a connection whose buffered line passes 1 MiB is dropped; an auth line is
//!   required only on Windows, where this module has no inbox;
//! - the envelope is checked by re-wrapping what was parsed: attributes in the
//!   order `from`, `from-session`, `hop-chain`, `from-name`, `from-mode`,
//!   `from-plugin`; `from-mode` is `bypass` or `prompting`; a name is cleaned
//!   of `"`, `<`, `>` and control or format characters and cut at 64
//!   characters; a closing tag inside the words is escaped as `<\/…`. A line
//!   that doesn't re-wrap to itself still arrives, without its name or class;
//! - in a terminal session in `default` mode this line was read in 0.12 s
//!   and became the ask of a turn: an `isMeta` `user` record, `origin: {kind:
//!   "peer", from: "unknown", name, fromMode, body, verifiedPeerPid}` (the
//!   writer's pid, from the socket); in `bypassPermissions` the same line was
//!   read as fast (0.28 s) and held, behind a dialog naming the mismatch.

#[cfg(unix)]
use serde_json::Value;
use serde_json::json;
use std::path::Path;
use std::time::Duration;

/// The only `peerProtocol` a registry record may name for the daemon to
/// write to its inbox (ADAPTERS.md: `PEER_PROTOCOL`).
pub const PEER_PROTOCOL: u64 = 1;

/// The classes a sender may declare in `from-mode`, as Claude Code spells them.
pub const FROM_MODES: [&str; 2] = ["bypass", "prompting"];

/// How long a receiving session keeps a held message unread before it drops it.
pub const HELD_S: u64 = 300;

/// The longest line Claude Code's inbox buffers (counted in UTF-16 units,
/// as its JavaScript string is) before it drops the connection.
pub const MAX_LINE: usize = 1 << 20;

const TAG: &str = "cross-session-message";
/// Claude Code cuts a sender's name at this many characters.
const NAME_MAX: usize = 64;
/// The most we read of a socket's answer (2.1.332 writes none).
#[cfg(unix)]
const ANSWER_MAX: u64 = 64 * 1024;

/// What the inbox did with the line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InboxAnswer {
    /// Read whole: the session queued it (or its own settings gate it).
    Taken,
    /// Read whole and held unread for the person's approval; dropped after
    /// [`HELD_S`]. The socket says so only by a receipt on the connection,
    /// which 2.1.332 never writes there: the caller learns it from
    /// [`holds`].
    Held,
}

#[derive(Debug, thiserror::Error)]
pub enum InboxError {
    #[error("no inbox on this platform")]
    NoInbox,
    #[error("the inbox takes one line ending in a newline")]
    NotOneLine,
    #[error("the line is {len} UTF-16 units; the inbox drops a connection past {MAX_LINE}")]
    TooLong { len: usize },
    #[error("the inbox is not reachable: {0}")]
    Unreachable(#[source] std::io::Error),
    #[error("the inbox took none of the line: {0}")]
    Unsent(#[source] std::io::Error),
    /// The line was written, or partly, and the inbox never ended the
    /// stream: it may have reached the session.
    #[error("the inbox did not confirm the line: {0}")]
    Unconfirmed(#[source] std::io::Error),
    /// A receipt on the connection said the message will not be delivered.
    #[error("the inbox answered {status}")]
    Refused { status: String },
}

impl InboxError {
    /// Whether nothing reached the session, so the next rung may carry the
    /// message without it arriving twice.
    pub fn next_rung(&self) -> bool {
        !matches!(self, InboxError::Unconfirmed(_))
    }
}

/// The one line for an inbox: the framed words in the envelope, naming the
/// sender `from_name` and declaring `from_mode` (`bypass` or `prompting`; any
/// other value is left out, which Claude Code gates as it gates
/// `prompting`). Ends in `\n`.
pub fn line(from_name: &str, from_mode: &str, framed: &str) -> String {
    let mut attrs = String::new();
    let name = clean_name(from_name);
    if !name.is_empty() {
        attrs.push_str(&format!(" from-name=\"{name}\""));
    }
    if FROM_MODES.contains(&from_mode) {
        attrs.push_str(&format!(" from-mode=\"{from_mode}\""));
    }
    let content = format!("<{TAG}{attrs}>\n{}\n</{TAG}>", escape_close(framed));
    let mut out = json!({
        "type": "user",
        "message": {"role": "user", "content": content},
        "priority": "later",
    })
    .to_string();
    out.push('\n');
    out
}

/// Whether a session in `permission_mode` (its hooks' `permission_mode`)
/// holds a message declaring `from_mode`, by the declared-class rule alone:
/// the class must match the session's (`bypass` for `bypassPermissions`,
/// else `prompting`); with none declared only a `bypass` session holds it;
/// a mode Claude Code doesn't know holds everything. `None` where it can't
/// be told from here: `plan` counts as `bypass` in a session that may
/// bypass permissions. The session's own `crossSessionInbound` setting and
/// its "always deliver" choices can still change the answer.
pub fn holds(from_mode: &str, permission_mode: &str) -> Option<bool> {
    let class = match permission_mode {
        "bypassPermissions" => "bypass",
        "plan" => return None,
        "default" | "acceptEdits" | "auto" | "dontAsk" => "prompting",
        _ => return Some(true),
    };
    Some(if FROM_MODES.contains(&from_mode) {
        from_mode != class
    } else {
        class == "bypass"
    })
}

/// Writes `line` once to the inbox at `socket` and reads its answer, all
/// within `timeout`. Connecting is the only step that may be retried by the
/// caller; a socket that isn't there or refuses is [`InboxError::next_rung`].
#[cfg(unix)]
pub fn deliver(socket: &Path, line: &str, timeout: Duration) -> Result<InboxAnswer, InboxError> {
    use std::io::{ErrorKind, Read, Write};
    use std::net::Shutdown;
    use std::time::Instant;

    let Some(body) = line.strip_suffix('\n') else {
        return Err(InboxError::NotOneLine);
    };
    if body.contains('\n') || body.trim().is_empty() {
        return Err(InboxError::NotOneLine);
    }
    let len = line.encode_utf16().count();
    if len > MAX_LINE {
        return Err(InboxError::TooLong { len });
    }
    let deadline = Instant::now() + timeout;
    let left = || {
        deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
            .ok_or_else(|| std::io::Error::from(ErrorKind::TimedOut))
    };

    let mut stream = connect(socket, timeout).map_err(InboxError::Unreachable)?;
    let mut sent = 0;
    while sent < line.len() {
        let wrote = left()
            .and_then(|d| stream.set_write_timeout(Some(d)))
            .and_then(|()| stream.write(&line.as_bytes()[sent..]));
        match wrote {
            Ok(0) => {
                let e = std::io::Error::from(ErrorKind::WriteZero);
                return Err(unsent_or_not(sent, e));
            }
            Ok(n) => sent += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(unsent_or_not(sent, e)),
        }
    }
    // Our end tells the server the line is whole; its end says it read it.
    stream
        .shutdown(Shutdown::Write)
        .map_err(InboxError::Unconfirmed)?;
    let mut answer = Vec::new();
    let mut reader = (&stream).take(ANSWER_MAX);
    let mut buf = [0u8; 4096];
    loop {
        let got = left()
            .and_then(|d| stream.set_read_timeout(Some(d)))
            .and_then(|()| reader.read(&mut buf));
        match got {
            Ok(0) => break,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(InboxError::Unconfirmed(e)),
        }
    }
    receipt(&answer)
}

#[cfg(not(unix))]
pub fn deliver(_: &Path, _: &str, _: Duration) -> Result<InboxAnswer, InboxError> {
    Err(InboxError::NoInbox)
}

/// A write that failed before any byte left is a line the inbox never saw.
#[cfg(unix)]
fn unsent_or_not(sent: usize, e: std::io::Error) -> InboxError {
    if sent == 0 {
        InboxError::Unsent(e)
    } else {
        InboxError::Unconfirmed(e)
    }
}

/// `UnixStream` has no connect timeout, and a listener whose backlog is full
/// blocks a connect: it runs on a thread of its own, left to finish alone
/// (and drop what it got, unwritten) when the time is up.
#[cfg(unix)]
fn connect(socket: &Path, timeout: Duration) -> std::io::Result<std::os::unix::net::UnixStream> {
    use std::os::unix::net::UnixStream;
    let (tx, rx) = std::sync::mpsc::channel();
    let path = socket.to_path_buf();
    std::thread::Builder::new()
        .name("inbox-connect".into())
        .spawn(move || {
            let _ = tx.send(UnixStream::connect(path));
        })?;
    rx.recv_timeout(timeout)
        .unwrap_or_else(|_| Err(std::io::ErrorKind::TimedOut.into()))
}

/// What the bytes before the inbox's end say. 2.1.332 writes none (taken);
/// a receipt, in the shape Claude Code sends a sender's own inbox, is read
/// for a build that answers on the connection; anything else is no answer.
#[cfg(unix)]
fn receipt(answer: &[u8]) -> Result<InboxAnswer, InboxError> {
    let text = String::from_utf8_lossy(answer);
    for l in text.lines() {
        let Ok(v) = serde_json::from_str::<Value>(l) else {
            continue;
        };
        if v.get("type").and_then(Value::as_str) != Some("control")
            || v.get("action").and_then(Value::as_str) != Some("peer_message_status")
        {
            continue;
        }
        return match v.get("status").and_then(Value::as_str) {
            Some("held") => Ok(InboxAnswer::Held),
            Some("delivered") | None => Ok(InboxAnswer::Taken),
            Some(other) => Err(InboxError::Refused {
                status: other.to_string(),
            }),
        };
    }
    Ok(InboxAnswer::Taken)
}

/// The name as Claude Code's check would leave it, so the envelope re-wraps
/// to itself: no `"`, `<`, `>`, no control, format or line-separator
/// characters, trimmed, at most 64 characters (the last an ellipsis when
/// cut). Remote titles clean claude.ai's name for a session with it too
/// (ADAPTERS.md: "cleaned as Claude Code cleans a name").
pub fn clean_name(name: &str) -> String {
    let kept: String = name
        .chars()
        .filter(|c| !matches!(c, '"' | '<' | '>') && !c.is_control() && !is_format(*c))
        .collect();
    let kept = kept.trim();
    if kept.chars().count() <= NAME_MAX {
        return kept.to_string();
    }
    let mut cut: String = kept.chars().take(NAME_MAX - 1).collect();
    cut = cut.trim_end().to_string();
    cut.push('\u{2026}');
    cut
}

/// Unicode's format characters (Cf) and the line and paragraph separators,
/// which Claude Code strips from a name.
fn is_format(c: char) -> bool {
    matches!(c as u32,
        0xAD | 0x600..=0x605 | 0x61C | 0x6DD | 0x70F | 0x890..=0x891 | 0x8E2
        | 0x180E | 0x200B..=0x200F | 0x2028..=0x202E | 0x2060..=0x2064
        | 0x2066..=0x206F | 0xFEFF | 0xFFF9..=0xFFFB | 0x110BD | 0x110CD
        | 0x13430..=0x1343F | 0x1BCA0..=0x1BCA3 | 0x1D173..=0x1D17A
        | 0xE0001 | 0xE0020..=0xE007F)
}

/// Escapes a closing envelope tag inside the words as Claude Code does
/// (`<` becomes `<\`), so the words can't end the envelope early and the
/// envelope re-wraps to itself. Catches the tag in any case, `_` for `-`,
/// and the fullwidth `＜` and `／`; Claude Code also catches look-alike
/// letters, which a person's message doesn't spell a tag in.
fn escape_close(words: &str) -> String {
    let chars: Vec<char> = words.chars().collect();
    let mut out = String::with_capacity(words.len());
    for (i, &c) in chars.iter().enumerate() {
        out.push(c);
        if matches!(c, '<' | '\u{FF1C}')
            && chars.get(i + 1) != Some(&'\\')
            && closes(&chars[i + 1..])
        {
            out.push('\\');
        }
    }
    out
}

/// Whether `rest` (what follows a `<`) reads `/cross-session-message` and
/// then a character that can't continue a name, with filler around the `/`.
fn closes(rest: &[char]) -> bool {
    let filler = |c: &char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '<' | '>'));
    let mut i = rest
        .iter()
        .take_while(|c| filler(c) && !is_slash(**c))
        .count();
    if !rest.get(i).is_some_and(|c| is_slash(*c)) {
        return false;
    }
    i += 1;
    i += rest[i..].iter().take_while(|c| filler(c)).count();
    for want in TAG.chars() {
        let Some(&got) = rest.get(i) else {
            return false;
        };
        let same = if want == '-' {
            matches!(got, '-' | '_')
        } else {
            got.eq_ignore_ascii_case(&want)
        };
        if !same {
            return false;
        }
        i += 1;
    }
    !rest
        .get(i)
        .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
}

fn is_slash(c: char) -> bool {
    matches!(c, '/' | '\u{FF0F}' | '\u{2215}' | '\u{2044}')
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use sessionpipe_testkit::inbox::{Answer, InboxSocket};
    use std::io::{Read, Write};
    use std::os::unix::net::UnixListener;

    const WORDS: &str = "Message via mac (sessionpipe control, signed on the sender's device; message 0123456789AB):\nship it";

    fn content(l: &str) -> String {
        let v: Value = serde_json::from_str(l).unwrap();
        v["message"]["content"].as_str().unwrap().to_string()
    }

    #[test]
    fn the_line_is_one_user_message_for_later_in_the_envelope() {
        let l = line("Ann's phone", "prompting", WORDS);
        assert!(l.ends_with('\n'));
        assert_eq!(l.matches('\n').count(), 1, "one line");
        let v: Value = serde_json::from_str(&l).unwrap();
        assert_eq!(v["type"], "user");
        assert_eq!(v["priority"], "later");
        assert_eq!(v["message"]["role"], "user");
        assert_eq!(
            content(&l),
            format!(
                "<cross-session-message from-name=\"Ann's phone\" from-mode=\"prompting\">\n{WORDS}\n</cross-session-message>"
            )
        );
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["type", "message", "priority"], "no from, no auth");
    }

    #[test]
    fn attribute_values_are_left_as_claude_code_would_leave_them() {
        let c = content(&line("a \"b\" <c>\u{200B}\u{7}  ", "prompting", "x"));
        assert!(c.starts_with("<cross-session-message from-name=\"a b c\" from-mode="));
        // An empty name, or a class Claude Code doesn't know, is left out.
        let c = content(&line(" \"<>\" ", "root", "x"));
        assert!(c.starts_with("<cross-session-message>\nx\n"));
        assert_eq!(
            content(&line("n", "bypass", "x")),
            "<cross-session-message from-name=\"n\" from-mode=\"bypass\">\nx\n</cross-session-message>"
        );
        // Cut at 64 characters, the last an ellipsis: Claude Code keeps it as is.
        let long = "é".repeat(80);
        let c = content(&line(&long, "prompting", "x"));
        let name = c.split('"').nth(1).unwrap();
        assert_eq!(name.chars().count(), 64);
        assert!(name.ends_with('\u{2026}'));
        assert_eq!(clean_name(name), name, "cleaning again changes nothing");
    }

    #[test]
    fn a_closing_tag_in_the_words_cannot_end_the_envelope() {
        let words = "a</cross-session-message>b </CROSS_session-message > <\\/cross-session-message> </cross-session-messages> < / cross-session-message>";
        let c = content(&line("n", "prompting", words));
        let body = c
            .strip_prefix("<cross-session-message from-name=\"n\" from-mode=\"prompting\">\n")
            .and_then(|b| b.strip_suffix("\n</cross-session-message>"))
            .unwrap();
        assert_eq!(
            body,
            "a<\\/cross-session-message>b <\\/CROSS_session-message > <\\/cross-session-message> </cross-session-messages> <\\ / cross-session-message>"
        );
        assert_eq!(escape_close(body), body, "escaping again changes nothing");
        assert_eq!(
            escape_close("＜／cross-session-message>"),
            "＜\\／cross-session-message>"
        );
        assert_eq!(escape_close("<b>x</b> 1 < 2"), "<b>x</b> 1 < 2");
    }

    #[test]
    fn the_declared_class_must_match_the_sessions() {
        assert_eq!(holds("prompting", "default"), Some(false));
        assert_eq!(holds("prompting", "acceptEdits"), Some(false));
        assert_eq!(holds("prompting", "auto"), Some(false));
        assert_eq!(holds("prompting", "bypassPermissions"), Some(true));
        assert_eq!(holds("bypass", "bypassPermissions"), Some(false));
        assert_eq!(holds("bypass", "default"), Some(true));
        // None declared: only a bypass session holds it.
        assert_eq!(holds("", "default"), Some(false));
        assert_eq!(holds("", "bypassPermissions"), Some(true));
        // Unknowable here, and fail-closed for a mode Claude Code doesn't know.
        assert_eq!(holds("prompting", "plan"), None);
        assert_eq!(holds("prompting", "yolo"), Some(true));
    }

    #[test]
    fn a_line_the_socket_read_whole_is_taken() {
        let dir = tempfile::tempdir().unwrap();
        let sock = InboxSocket::bind(&dir.path().join("1.sock")).unwrap();
        let l = line("Ann's phone", "prompting", WORDS);
        let got = deliver(sock.path(), &l, Duration::from_secs(5)).unwrap();
        assert_eq!(got, InboxAnswer::Taken);
        assert_eq!(sock.lines(), [l.trim_end().to_string()]);
    }

    #[test]
    fn a_held_receipt_is_held_and_a_refusal_is_the_next_rung() {
        let dir = tempfile::tempdir().unwrap();
        let sock = InboxSocket::answering(&dir.path().join("1.sock"), Answer::Held).unwrap();
        let l = line("n", "prompting", "x");
        assert_eq!(
            deliver(sock.path(), &l, Duration::from_secs(5)).unwrap(),
            InboxAnswer::Held
        );
        assert_eq!(sock.lines().len(), 1);
        assert_eq!(
            receipt(br#"{"type":"control","action":"peer_message_status","status":"delivered"}"#)
                .unwrap(),
            InboxAnswer::Taken
        );
        let e = receipt(br#"{"type":"control","action":"peer_message_status","status":"refused"}"#)
            .unwrap_err();
        assert!(matches!(&e, InboxError::Refused { status } if status == "refused"));
        assert!(e.next_rung());
        assert_eq!(receipt(b"not json\n").unwrap(), InboxAnswer::Taken);
    }

    #[test]
    fn no_socket_or_a_refusing_one_is_the_next_rung() {
        let dir = tempfile::tempdir().unwrap();
        let l = line("n", "prompting", "x");
        let e = deliver(&dir.path().join("none.sock"), &l, Duration::from_secs(2)).unwrap_err();
        assert!(matches!(e, InboxError::Unreachable(_)), "{e}");
        assert!(e.next_rung());
        // A file left by a dead session: nobody listens.
        let path = dir.path().join("dead.sock");
        drop(UnixListener::bind(&path).unwrap());
        let e = deliver(&path, &l, Duration::from_secs(2)).unwrap_err();
        assert!(matches!(e, InboxError::Unreachable(_)), "{e}");
    }

    #[test]
    fn an_inbox_that_never_ends_is_unconfirmed_and_never_written_twice() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("1.sock");
        let listener = UnixListener::bind(&path).unwrap();
        let keep = std::thread::spawn(move || {
            let mut conns = Vec::new();
            let (mut s, _) = listener.accept().unwrap();
            let mut got = Vec::new();
            s.read_to_end(&mut got).unwrap(); // our end arrives; it never ends its own
            conns.push(s);
            listener.set_nonblocking(true).unwrap();
            std::thread::sleep(Duration::from_millis(600));
            let again = listener.accept().is_ok();
            (got, again)
        });
        let l = line("n", "prompting", "x");
        let e = deliver(&path, &l, Duration::from_millis(300)).unwrap_err();
        assert!(matches!(e, InboxError::Unconfirmed(_)), "{e}");
        assert!(!e.next_rung(), "it may have reached the session");
        let (got, again) = keep.join().unwrap();
        assert_eq!(got, l.as_bytes());
        assert!(!again, "one connection, one write");
    }

    #[test]
    fn what_is_not_one_line_is_never_sent() {
        let dir = tempfile::tempdir().unwrap();
        let sock = InboxSocket::bind(&dir.path().join("1.sock")).unwrap();
        for bad in ["", "\n", "{}", "{}\n{}\n"] {
            let e = deliver(sock.path(), bad, Duration::from_secs(1)).unwrap_err();
            assert!(matches!(e, InboxError::NotOneLine), "{bad:?}: {e}");
        }
        let huge = line("n", "prompting", &"x".repeat(MAX_LINE));
        let e = deliver(sock.path(), &huge, Duration::from_secs(1)).unwrap_err();
        assert!(matches!(e, InboxError::TooLong { .. }), "{e}");
        assert!(e.next_rung());
        assert!(sock.lines().is_empty());
    }

    #[test]
    fn a_socket_that_answers_nothing_but_ends_is_taken() {
        // The real server's whole answer: read to our end, end its own.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("1.sock");
        let listener = UnixListener::bind(&path).unwrap();
        let t = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut got = String::new();
            s.read_to_string(&mut got).unwrap();
            s.flush().unwrap();
            got
        });
        let l = line("n", "prompting", "x");
        assert_eq!(
            deliver(&path, &l, Duration::from_secs(5)).unwrap(),
            InboxAnswer::Taken
        );
        assert_eq!(t.join().unwrap(), l);
    }
}
