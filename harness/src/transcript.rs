//! Turning a harness's transcript into `turn.transcript` events (tier 2).
//!
//! Each harness has its own file format; its adapter turns new lines (or rows)
//! into `Rec`s: the person's words, the agent's words, a tool call, an
//! interruption, a title. `TurnLog` assembles them into turns and decides which
//! turns are whole and may be sent, holding a turn back until its end is in the
//! file (Claude Code flushes its transcript after its Stop hook fires, Copilot
//! CLI often only after its session ended). It keeps only what is not yet sent,
//! plus a cursor, so a long file is never re-read from the start. What it keeps
//! is kept redacted: every word goes through `secrets@1` as it is fed, so a turn
//! held in the outbox's session records holds no secret. It does no I/O and
//! knows no harness.

use serde::{Deserialize, Serialize};

/// Each side of a turn is cut to this many characters.
pub const MAX_SIDE_CHARS: usize = 20_000;

/// A transcript line longer than this holds a pasted image or a file's
/// contents, not words: a reader passes it over unread (`for_each_line`).
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// One thing a transcript says, in file order.
#[derive(Clone, Debug, PartialEq)]
pub enum Rec {
    /// The person's ask: it starts a turn.
    Ask {
        words: String,
        prompt_id: Option<String>,
        at_ms: Option<i64>,
        injected: bool,
    },
    /// More of the person's words inside the running turn (a queued message).
    More { words: String },
    /// The agent's words.
    Reply { words: String, at_ms: Option<i64> },
    /// A tool call or its result: the turn is not over at the words before it.
    Tool,
    /// The person stopped the turn; it ends as it stands.
    Interrupted,
    /// The harness says the running turn is over, naming it when it can (Grok
    /// Build's `turn_completed`, written at the turn's end): a turn whose ask
    /// carried no id takes this one, so prompt ids still match the hooks'.
    Done { prompt_id: Option<String> },
    /// The harness wrote down a Stop hook's call, timed as the call's own
    /// payload (Copilot CLI's `hook.start` record of its `agentStop`): the
    /// running turn is over, and all it said is in the file before this.
    Stopped { at_ms: i64 },
}

/// A turn ready to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Turn {
    /// 1 for the session's first turn.
    pub n: u64,
    pub prompt_id: Option<String>,
    pub user: String,
    pub assistant: String,
    pub at_ms: Option<i64>,
    pub interrupted: bool,
    pub injected: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct OpenTurn {
    n: u64,
    prompt_id: Option<String>,
    user: String,
    assistant: String,
    at_ms: Option<i64>,
    /// The last of the agent's words, to compare with what a Stop names.
    last_words: String,
    /// A tool call or result came after the last words.
    tool_after_words: bool,
    /// A later ask closed this turn.
    closed: bool,
    interrupted: bool,
    injected: bool,
}

/// What the reader knows of one transcript: where it stopped reading, the turns
/// not sent yet, and which turn was sent last.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TurnLog {
    /// Byte offset (or row id) up to which the transcript was read.
    pub cursor: u64,
    turns: Vec<OpenTurn>,
    /// Turns seen so far in the session.
    count: u64,
    /// The last turn sent: its prompt id and a digest of its last words.
    last_sent: Option<(Option<String>, String)>,
    /// A digest of that turn's ask. A message put into a running turn at its
    /// Stop starts a turn with the same prompt id, and its answer may end in
    /// the same words: only its ask tells it from the turn read again. (A
    /// log kept before this was written has none, and compares as before.)
    #[serde(default)]
    last_sent_ask: Option<String>,
    /// The session's first ask by the person (for a `first-ask` title).
    #[serde(default)]
    pub first_ask: Option<String>,
    /// The time of the latest Stop the file wrote down (`Rec::Stopped`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stopped_ms: Option<i64>,
}

/// Which turns a read may send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Want {
    /// Only turns a later ask closed, or that were interrupted (a later hook's
    /// read: the running turn is left to its own end).
    Closed,
    /// `Closed`, for a call that starts the turn with this prompt id: a daemon
    /// catching up can find that turn (even its end) in the file already, and it
    /// is not this call's to send, before its own `turn.started`.
    ClosedBefore(String),
    /// The turn a Stop ended: whole once its last words are these words and no
    /// tool call follows them.
    EndedWith(String),
    /// Everything there is, as it stands (a session's end, a failed turn, a Stop
    /// that names no words).
    All,
    /// Every turn asked before this instant (epoch ms), as it stands. For a
    /// harness that runs one turn at a time and whose hooks name no prompt
    /// (Gemini CLI): a turn asked before a call that starts or ends a turn is
    /// over, and one asked at or after it is not this call's to send.
    AskedBefore(i64),
    /// `Closed`, by an ask made at or before this instant (epoch ms). For a
    /// call that starts a turn and names no prompt (Antigravity's first
    /// invocation): a daemon catching up can find the call's own turn closed in
    /// the file already, by an ask made after the call.
    ClosedBy(i64),
    /// The turn a Stop timed at this instant (epoch ms) ended, in a file that
    /// writes each Stop down (`Rec::Stopped`) and whose Stop names no words
    /// (Copilot CLI): the turns closed so far, the Stop's own among them once
    /// the file has its record (`stopped_since`).
    StoppedAt(i64),
}

impl TurnLog {
    /// Feeds records read from the transcript, in file order.
    pub fn feed(&mut self, recs: impl IntoIterator<Item = Rec>) {
        for rec in recs {
            match clean(rec) {
                Rec::Ask {
                    words,
                    prompt_id,
                    at_ms,
                    injected,
                } => {
                    if !injected && self.first_ask.is_none() && !words.trim().is_empty() {
                        self.first_ask = Some(words.clone());
                    }
                    if let Some(last) = self.turns.last_mut() {
                        last.closed = true;
                    }
                    self.count += 1;
                    self.turns.push(OpenTurn {
                        n: self.count,
                        prompt_id,
                        user: cap(words),
                        at_ms,
                        injected,
                        ..Default::default()
                    });
                }
                Rec::More { words } => {
                    if let Some(t) = self.open_mut() {
                        t.user = cap(join(&t.user, &words));
                    }
                }
                Rec::Reply { words, at_ms } => {
                    if let Some(t) = self.open_mut() {
                        t.assistant = cap(join(&t.assistant, &words));
                        t.last_words = words;
                        t.tool_after_words = false;
                        t.at_ms = t.at_ms.or(at_ms);
                    }
                }
                Rec::Tool => {
                    if let Some(t) = self.open_mut() {
                        t.tool_after_words = true;
                    }
                }
                Rec::Interrupted => {
                    if let Some(t) = self.open_mut() {
                        t.interrupted = true;
                        t.closed = true;
                    }
                }
                Rec::Done { prompt_id } => {
                    if let Some(t) = self.open_mut() {
                        t.prompt_id = t.prompt_id.take().or(prompt_id);
                        t.closed = true;
                    }
                }
                Rec::Stopped { at_ms } => {
                    if let Some(t) = self.open_mut() {
                        t.closed = true;
                    }
                    self.stopped_ms = self.stopped_ms.max(Some(at_ms));
                }
            }
        }
    }

    /// The running turn, if its ask was read and it is not over.
    fn open_mut(&mut self) -> Option<&mut OpenTurn> {
        self.turns.last_mut().filter(|t| !t.closed)
    }

    /// True when the turn with this prompt id was interrupted and is not sent yet.
    pub fn interrupted(&self, prompt_id: &str) -> bool {
        self.turns
            .iter()
            .any(|t| t.interrupted && t.prompt_id.as_deref() == Some(prompt_id))
    }

    /// Takes the turns that may be sent now, oldest first.
    pub fn take(&mut self, want: &Want) -> Vec<Turn> {
        let newest = self.turns.len().saturating_sub(1);
        let mut ready = 0;
        for (i, t) in self.turns.iter().enumerate() {
            if let Want::ClosedBefore(start) = want
                && t.prompt_id.as_deref() == Some(start.as_str())
            {
                break; // the call's own turn, and what follows, are not its to send
            }
            if let Want::AskedBefore(at) = want
                && t.at_ms.is_some_and(|asked| asked >= *at)
            {
                break; // asked after the call: a later turn's
            }
            if let Want::ClosedBy(at) = want
                && self
                    .turns
                    .get(i + 1)
                    .is_some_and(|next| next.at_ms.is_some_and(|asked| asked > *at))
            {
                break; // closed by an ask made after the call: the call's own turn
            }
            let ok = t.closed
                || match want {
                    Want::Closed
                    | Want::ClosedBefore(_)
                    | Want::ClosedBy(_)
                    | Want::StoppedAt(_) => false,
                    Want::All | Want::AskedBefore(_) => true,
                    Want::EndedWith(words) => {
                        i == newest && !t.tool_after_words && same_words(&t.last_words, words)
                    }
                };
            if !ok {
                break; // turns go out in order
            }
            ready = i + 1;
        }
        let sent: Vec<OpenTurn> = self.turns.drain(..ready).collect();
        let mut out = Vec::with_capacity(sent.len());
        for t in sent {
            let digest = digest(&t.last_words);
            let ask = self::digest(&t.user);
            if self.last_sent.as_ref() == Some(&(t.prompt_id.clone(), digest.clone()))
                && t.prompt_id.is_some()
                && self.last_sent_ask.as_ref().is_none_or(|a| *a == ask)
            {
                continue; // sent already (a file read again from its start)
            }
            self.last_sent = Some((t.prompt_id.clone(), digest));
            self.last_sent_ask = Some(ask);
            out.push(Turn {
                n: t.n,
                prompt_id: t.prompt_id,
                user: t.user,
                assistant: t.assistant,
                at_ms: t.at_ms,
                interrupted: t.interrupted,
                injected: t.injected,
            });
        }
        out
    }

    /// True when the newest turn is whole by a Stop's `words` (nothing held).
    pub fn last_turn_whole(&self, words: &str) -> bool {
        self.turns
            .last()
            .is_none_or(|t| t.closed || (!t.tool_after_words && same_words(&t.last_words, words)))
    }

    /// True when the file wrote down a Stop made at or after `at_ms` (epoch
    /// ms): everything of the turn that Stop ended has been read.
    pub fn stopped_since(&self, at_ms: i64) -> bool {
        self.stopped_ms.is_some_and(|at| at >= at_ms)
    }

    /// True when the turn a Stop named (`prompt_id`) was already sent.
    pub fn sent(&self, prompt_id: Option<&str>) -> bool {
        prompt_id.is_some()
            && self
                .last_sent
                .as_ref()
                .is_some_and(|(p, _)| p.as_deref() == prompt_id)
            && !self
                .turns
                .iter()
                .any(|t| t.prompt_id.as_deref() == prompt_id)
    }

    /// Runs `secrets@1` over a log kept before its words were (an outbox written
    /// by an earlier version; its schema step calls this). True when it changed.
    pub fn scrub(&mut self) -> bool {
        let mut changed = false;
        let mut fix = |s: &mut String| {
            if let std::borrow::Cow::Owned(c) = redact::secrets(s) {
                *s = c;
                changed = true;
            }
        };
        for t in &mut self.turns {
            fix(&mut t.user);
            fix(&mut t.assistant);
            fix(&mut t.last_words);
        }
        if let Some(a) = self.first_ask.as_mut() {
            fix(a);
        }
        changed
    }

    /// Starts over after the file shrank (rewritten): what was sent stays sent.
    pub fn restart(&mut self) {
        self.cursor = 0;
        self.turns.clear();
        self.count = 0;
    }
}

/// The transcript's last words (kept redacted) and a Stop's
/// `last_assistant_message` (as the hook gave it) are the same text, up to
/// surrounding whitespace, once both went through `secrets@1`.
fn same_words(kept: &str, given: &str) -> bool {
    kept.trim() == redact::secrets(given).trim()
}

/// A record's words through `secrets@1`, before anything of them is kept.
fn clean(rec: Rec) -> Rec {
    let scrub = |w: String| match redact::secrets(&w) {
        std::borrow::Cow::Owned(c) => c,
        std::borrow::Cow::Borrowed(_) => w,
    };
    match rec {
        Rec::Ask {
            words,
            prompt_id,
            at_ms,
            injected,
        } => Rec::Ask {
            words: scrub(words),
            prompt_id,
            at_ms,
            injected,
        },
        Rec::More { words } => Rec::More {
            words: scrub(words),
        },
        Rec::Reply { words, at_ms } => Rec::Reply {
            words: scrub(words),
            at_ms,
        },
        other => other,
    }
}

fn join(a: &str, b: &str) -> String {
    if a.is_empty() {
        b.to_string()
    } else if b.is_empty() {
        a.to_string()
    } else {
        format!("{a}\n\n{b}")
    }
}

/// Cuts a side to `MAX_SIDE_CHARS` (redacting first: see `common::cut_chars`).
fn cap(s: String) -> String {
    if s.chars().count() <= MAX_SIDE_CHARS {
        s
    } else {
        crate::payload::cut_chars(&s, MAX_SIDE_CHARS)
    }
}

fn digest(s: &str) -> String {
    crate::digest::sha256_prefix(s.trim().as_bytes(), 8)
}

/// What one hook call asks of the session's transcript.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadPlan {
    pub want: Want,
    /// Turns sent by this read go after the call's own events (a turn's end: the
    /// transcript sits next to its `turn.ended`) rather than before them.
    pub after: bool,
    /// Keep re-reading until the turn is whole (a Stop that names its words).
    pub hold: bool,
    /// Look for the running turn's interruption (a prompt, a compaction, a start).
    pub interruption: bool,
}

/// What a read of a transcript found after the cursor.
#[derive(Clone, Debug, Default)]
pub struct ReadOut {
    pub recs: Vec<Rec>,
    /// Facts the file holds (title, model, link), merged into the session.
    pub facts: protocol::SessionBlock,
    /// The newest account limits the file shows (Codex's `token_count`); sent
    /// as `limits.observed` when they differ from the last ones sent.
    pub limits: Option<protocol::LimitsObserved>,
    /// The harness's version, when its own files name it and its hooks do not
    /// (Devin's `_versions/current`); it stamps the session's later events.
    pub version: Option<String>,
    /// The tokens of each model response read, for the daemon's own usage
    /// table (never an event).
    pub usage: Vec<crate::usage::Usage>,
    pub cursor: u64,
}

/// A harness's transcript format. The adapter says which file and when to read
/// (in its `Mapping`); this reads it.
pub trait TranscriptSource: Sync {
    /// Records and facts after `cursor`, and the new cursor.
    fn read(&self, path: &std::path::Path, cursor: u64) -> std::io::Result<ReadOut>;
    /// How many characters of the first ask make a `first-ask` title.
    fn first_ask_chars(&self) -> usize {
        80
    }
    /// The tokens of every model response in the whole file at `path` (a
    /// subagent's transcript, read once when it stops); nothing when it does
    /// not read.
    fn usage(&self, path: &std::path::Path) -> Vec<crate::usage::Usage> {
        self.read(path, 0).map(|out| out.usage).unwrap_or_default()
    }
    /// How far the transcript goes, in the cursor's units: one that ends before
    /// the cursor was rewritten and is read again from the start. The file's
    /// size, unless the cursor counts something else (decompressed bytes).
    fn size(&self, path: &std::path::Path) -> std::io::Result<u64> {
        Ok(std::fs::metadata(path)?.len())
    }
}

/// Reads the complete lines after `cursor` (a byte offset) and returns them with
/// the new cursor. A last line without its newline is left for the next read (the
/// harness is still writing it). A line longer than `max_line` bytes is passed
/// over without being held in memory (a pasted image can put megabytes in one).
pub fn read_lines(
    path: &std::path::Path,
    cursor: u64,
    max_line: usize,
) -> std::io::Result<(Vec<String>, u64)> {
    let mut lines = Vec::new();
    let end = for_each_line(path, cursor, max_line, &mut |l| lines.push(l.to_string()))?;
    Ok((lines, end))
}

/// Calls `f` with each complete line after `cursor` (the rule of `read_lines`,
/// without holding the lines) and returns the new cursor.
pub fn for_each_line(
    path: &std::path::Path,
    cursor: u64,
    max_line: usize,
    f: &mut dyn FnMut(&str),
) -> std::io::Result<u64> {
    use std::io::{Seek, SeekFrom};
    let mut r = std::io::BufReader::new(std::fs::File::open(path)?);
    r.seek(SeekFrom::Start(cursor))?;
    for_each_line_in(&mut r, cursor, max_line, f)
}

/// `for_each_line` on a reader already at `cursor` (a decompressing one, for a
/// harness that compresses its transcripts): the new cursor counts the bytes the
/// reader yields.
pub fn for_each_line_in(
    r: &mut dyn std::io::BufRead,
    cursor: u64,
    max_line: usize,
    f: &mut dyn FnMut(&str),
) -> std::io::Result<u64> {
    let mut pos = cursor;
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let (n, complete) = read_line_capped(r, &mut buf, max_line)?;
        if n == 0 || !complete {
            return Ok(pos);
        }
        pos += n as u64;
        if buf.len() <= max_line
            && let Ok(s) = std::str::from_utf8(&buf)
        {
            f(s);
        }
    }
}

/// Reads one line into `buf`, keeping at most `max + 1` bytes of it. Returns the
/// bytes consumed and whether the line ended with a newline.
fn read_line_capped(
    r: &mut dyn std::io::BufRead,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<(usize, bool)> {
    let mut consumed = 0;
    loop {
        let chunk = r.fill_buf()?;
        if chunk.is_empty() {
            return Ok((consumed, false));
        }
        let (take, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        let room = (max + 1).saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..take.min(room)]);
        r.consume(take);
        consumed += take;
        if done {
            if buf.last() == Some(&b'\n') {
                buf.pop();
            }
            return Ok((consumed, true));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(w: &str, p: &str) -> Rec {
        Rec::Ask {
            words: w.into(),
            prompt_id: Some(p.into()),
            at_ms: Some(1),
            injected: false,
        }
    }
    fn reply(w: &str) -> Rec {
        Rec::Reply {
            words: w.into(),
            at_ms: Some(2),
        }
    }

    #[test]
    fn a_turn_is_held_until_its_stop_words_are_the_last_words() {
        let mut log = TurnLog::default();
        log.feed([ask("list files", "p1"), reply("Let me look."), Rec::Tool]);
        // The Stop names the final words; the file has only the first half.
        assert!(log.take(&Want::EndedWith("Two files.".into())).is_empty());
        // Words before a tool call are never the end, even when they match.
        assert!(log.take(&Want::EndedWith("Let me look.".into())).is_empty());
        log.feed([reply("Two files.")]);
        let turns = log.take(&Want::EndedWith("Two files.\n".into()));
        assert_eq!(turns.len(), 1);
        assert_eq!(turns[0].user, "list files");
        assert_eq!(turns[0].assistant, "Let me look.\n\nTwo files.");
        assert_eq!(turns[0].n, 1);
        assert!(log.sent(Some("p1")));
    }

    #[test]
    fn a_later_hook_sends_only_closed_turns() {
        let mut log = TurnLog::default();
        log.feed([ask("a", "p1"), reply("A")]);
        assert!(log.take(&Want::Closed).is_empty(), "p1 is still running");
        log.feed([ask("b", "p2"), reply("B")]);
        let t = log.take(&Want::Closed);
        assert_eq!(t.iter().map(|t| t.n).collect::<Vec<_>>(), [1]);
        let t = log.take(&Want::All);
        assert_eq!((t[0].n, t[0].user.as_str()), (2, "b"));
    }

    #[test]
    fn a_prompt_read_late_does_not_send_its_own_turn() {
        let mut log = TurnLog::default();
        log.feed([
            ask("a", "p1"),
            reply("A"),
            ask("b", "p2"),
            Rec::Interrupted,
            ask("c", "p3"),
        ]);
        let t = log.take(&Want::ClosedBefore("p2".into()));
        assert_eq!(t.iter().map(|t| t.n).collect::<Vec<_>>(), [1]);
        let t = log.take(&Want::ClosedBefore("p3".into()));
        assert_eq!((t.len(), t[0].interrupted), (1, true));
    }

    #[test]
    fn an_interruption_ends_the_turn_as_it_stands() {
        let mut log = TurnLog::default();
        log.feed([ask("long job", "p1"), Rec::Tool, Rec::Interrupted]);
        assert!(log.interrupted("p1"));
        assert!(!log.interrupted("p2"));
        let t = log.take(&Want::Closed);
        assert_eq!(t.len(), 1);
        assert!(t[0].interrupted);
        assert_eq!(t[0].assistant, "");
        log.feed([ask("next", "p2"), reply("ok")]);
        assert_eq!(log.take(&Want::EndedWith("ok".into()))[0].n, 2);
    }

    #[test]
    fn queued_words_join_the_running_turn_and_sides_are_capped() {
        let mut log = TurnLog::default();
        log.feed([
            ask("first", "p1"),
            Rec::More {
                words: "also this".into(),
            },
        ]);
        log.feed([reply(&"x".repeat(30_000))]);
        let t = log.take(&Want::All);
        assert_eq!(t[0].user, "first\n\nalso this");
        assert_eq!(t[0].assistant.chars().count(), MAX_SIDE_CHARS);
    }

    #[test]
    fn a_message_put_into_the_turn_at_its_stop_is_sent_even_when_its_answer_repeats() {
        // Claude Code gives the turn a Stop hook continues the same prompt id;
        // the model may answer the message in the same words as before.
        let mut log = TurnLog::default();
        log.feed([ask("make the file", "p1"), reply("Done.")]);
        assert_eq!(log.take(&Want::EndedWith("Done.".into())).len(), 1);
        log.feed([ask("Message via phone: and list it", "p1"), reply("Done.")]);
        let t = log.take(&Want::EndedWith("Done.".into()));
        assert_eq!(t.len(), 1, "the continuation is its own turn");
        assert_eq!(t[0].user, "Message via phone: and list it");
        // A log kept before the ask was remembered compares as it did.
        let mut old = TurnLog::default();
        old.feed([ask("a", "p1"), reply("A")]);
        assert_eq!(old.take(&Want::All).len(), 1);
        old.last_sent_ask = None;
        old.restart();
        old.feed([ask("a", "p1"), reply("A")]);
        assert!(old.take(&Want::All).is_empty());
    }

    #[test]
    fn a_turn_read_again_after_a_restart_is_not_sent_twice() {
        let mut log = TurnLog::default();
        log.feed([ask("a", "p1"), reply("A")]);
        assert_eq!(log.take(&Want::All).len(), 1);
        log.restart();
        log.feed([ask("a", "p1"), reply("A")]);
        assert!(log.take(&Want::All).is_empty());
    }

    #[test]
    fn lines_are_read_from_the_cursor_and_a_partial_last_line_waits() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.jsonl");
        std::fs::write(&p, "a\nbb\npart").unwrap();
        let (lines, cur) = read_lines(&p, 0, 100).unwrap();
        assert_eq!((lines, cur), (vec!["a".to_string(), "bb".to_string()], 5));
        std::fs::write(&p, format!("a\nbb\npartial\n{}\nend\n", "x".repeat(50))).unwrap();
        let (lines, cur) = read_lines(&p, 5, 10).unwrap();
        assert_eq!(lines, ["partial", "end"], "the long line is passed over");
        assert_eq!(cur, 5 + 8 + 51 + 4);
    }

    #[test]
    fn a_turn_named_at_its_end_takes_that_name_and_is_over() {
        let mut log = TurnLog::default();
        let unnamed = Rec::Ask {
            words: "a".into(),
            prompt_id: None,
            at_ms: Some(1),
            injected: false,
        };
        log.feed([unnamed.clone(), reply("A")]);
        assert!(log.take(&Want::Closed).is_empty(), "still running");
        log.feed([Rec::Done {
            prompt_id: Some("p1".into()),
        }]);
        log.feed([unnamed, reply("B")]);
        // The next prompt's read stops at its own turn once that one is named.
        log.feed([Rec::Done {
            prompt_id: Some("p2".into()),
        }]);
        let t = log.take(&Want::ClosedBefore("p2".into()));
        assert_eq!((t.len(), t[0].prompt_id.as_deref()), (1, Some("p1")));
        assert!(log.sent(Some("p1")));
    }

    /// Copilot CLI writes its log after its hooks fire: a Stop read before
    /// the file has its record finds the turn half said (or not at all), and
    /// its turn is whole only once that record is read.
    #[test]
    fn a_stop_the_file_writes_down_closes_its_turn_once_read() {
        let unnamed = |w: &str| Rec::Ask {
            words: w.into(),
            prompt_id: None,
            at_ms: Some(1),
            injected: false,
        };
        let mut log = TurnLog::default();
        assert!(!log.stopped_since(1_000), "nothing read yet");
        log.feed([unnamed("a")]);
        assert!(log.take(&Want::StoppedAt(1_000)).is_empty(), "half said");
        log.feed([reply("A"), Rec::Stopped { at_ms: 1_000 }]);
        assert!(log.stopped_since(1_000) && !log.stopped_since(1_001));
        let t = log.take(&Want::StoppedAt(1_000));
        assert_eq!((t[0].user.as_str(), t[0].assistant.as_str()), ("a", "A"));
        // A Stop with no turn open (its ask never read) is still its record.
        log.feed([Rec::Stopped { at_ms: 2_000 }]);
        assert!(log.stopped_since(2_000));
        // A record of an earlier Stop, read late, does not move it back.
        log.feed([Rec::Stopped { at_ms: 1_500 }]);
        assert!(log.stopped_since(2_000));
        let back: TurnLog = serde_json::from_str(&serde_json::to_string(&log).unwrap()).unwrap();
        assert_eq!(back, log);
    }

    #[test]
    fn a_call_takes_the_turns_asked_before_it() {
        let at = |w: &str, ms: i64| Rec::Ask {
            words: w.into(),
            prompt_id: None,
            at_ms: Some(ms),
            injected: false,
        };
        let mut log = TurnLog::default();
        log.feed([at("a", 100), reply("A"), at("b", 200), reply("B")]);
        // A call made at 150 (a late read: the next turn is in the file already).
        let t = log.take(&Want::AskedBefore(150));
        assert_eq!(t.iter().map(|t| t.n).collect::<Vec<_>>(), [1]);
        assert!(
            log.take(&Want::AskedBefore(200)).is_empty(),
            "asked at the call"
        );
        assert_eq!(log.take(&Want::AskedBefore(201))[0].assistant, "B");
    }

    #[test]
    fn a_turn_closed_by_an_ask_after_the_call_is_the_calls_own() {
        let at = |w: &str, ms: i64| Rec::Ask {
            words: w.into(),
            prompt_id: None,
            at_ms: Some(ms),
            injected: false,
        };
        let mut log = TurnLog::default();
        // A call at 150 starts turn 2 (asked at 120); turn 3 was asked at 200.
        log.feed([
            at("a", 100),
            reply("A"),
            at("b", 120),
            reply("B"),
            at("c", 200),
        ]);
        let t = log.take(&Want::ClosedBy(150));
        assert_eq!(t.iter().map(|t| t.n).collect::<Vec<_>>(), [1]);
        assert_eq!(log.take(&Want::ClosedBy(200))[0].n, 2);
        assert!(
            log.take(&Want::ClosedBy(300)).is_empty(),
            "turn 3 is running"
        );
    }

    #[test]
    fn words_are_kept_redacted_and_a_stop_still_names_them() {
        let token = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
        let mut log = TurnLog::default();
        log.feed([
            ask(&format!("use {token}"), "p1"),
            reply(&format!("set {token}")),
        ]);
        let kept = serde_json::to_string(&log).unwrap();
        assert!(!kept.contains("ghp_0123"), "{kept}");
        assert!(
            log.last_turn_whole(&format!("set {token}")),
            "the Stop's raw words"
        );
        let t = log.take(&Want::EndedWith(format!("set {token}\n")));
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].user, "use [redacted]");
        assert!(
            log.first_ask
                .as_deref()
                .is_some_and(|a| !a.contains("ghp_"))
        );
    }

    #[test]
    fn a_log_kept_before_redaction_is_scrubbed() {
        let token = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMN";
        let mut log: TurnLog = serde_json::from_value(serde_json::json!({
            "cursor": 1, "count": 1, "last_sent": null, "first_ask": format!("key {token}"),
            "turns": [{"n": 1, "prompt_id": "p", "user": format!("key {token}"), "assistant": "",
                       "at_ms": null, "last_words": token, "tool_after_words": false,
                       "closed": false, "interrupted": false, "injected": false}]
        }))
        .unwrap();
        assert!(log.scrub());
        assert!(
            !serde_json::to_string(&log)
                .unwrap()
                .contains("sk-ant-api03")
        );
        assert!(!log.scrub(), "once is enough");
    }

    #[test]
    fn the_log_survives_serialisation() {
        let mut log = TurnLog::default();
        log.feed([ask("a", "p1"), reply("A")]);
        log.cursor = 42;
        let back: TurnLog = serde_json::from_str(&serde_json::to_string(&log).unwrap()).unwrap();
        assert_eq!(back, log);
    }
}
