//! sessionpipe's own words around a message its control delivers (ADAPTERS.md,
//! Claude Code Transcript row; PROTOCOL-NOTES §6 Framing), written and taken off
//! in this one place: the line before the words that says where the message came
//! from (`Message via <host> (sessionpipe control, signed on the sender's
//! device):`, or its in-place form `…device; message <12 chars>):`), and the line
//! after a new session's first message (`(Sent via <host> with sessionpipe
//! control, signed on the sender's device.)`).
//!
//! Control writes them (`in_place`, `into_session`, `new_session`); a transcript
//! reader takes them off the person's words (`unframe`), each only from the
//! place sessionpipe puts it; a text that is nothing but such a line is what the
//! person wrote and stays. `(Asked by …)` and a handoff's answer line are not
//! frames: they stay. Nothing here reads a file or knows a harness.

const BEFORE_PREFIX: &str = "Message via ";
const BEFORE_SUFFIX: &str = "(sessionpipe control, signed on the sender's device):";
const BEFORE_MARK: &str = "signed on the sender's device; message ";
const AFTER_PREFIX: &str = "(Sent via ";
const AFTER_SUFFIX: &str = " with sessionpipe control, signed on the sender's device.)";
/// What a Stop hook's block reason turns into in the transcript.
pub const STOP_FEEDBACK: &str = "Stop hook feedback:";

/// A message handed to a live session in place (a Stop hook's block, a waiter),
/// marked with the last 12 characters of the receiver's message id so the
/// person can tell two messages apart.
pub fn in_place(host: &str, mark: &str, text: &str) -> String {
    let mark: String = {
        let chars: Vec<char> = mark.chars().collect();
        chars[chars.len().saturating_sub(12)..].iter().collect()
    };
    format!("{BEFORE_PREFIX}{host} (sessionpipe control, {BEFORE_MARK}{mark}):\n{text}")
}

/// A message into a session that exists, delivered other than in place.
pub fn into_session(host: &str, text: &str) -> String {
    format!("{BEFORE_PREFIX}{host} {BEFORE_SUFFIX}\n{text}")
}

/// The first message of a session control started.
pub fn new_session(host: &str, text: &str) -> String {
    format!("{text}\n\n{AFTER_PREFIX}{host}{AFTER_SUFFIX}")
}

/// The close of an ask's paragraph: what the asked session is told of its
/// answer.
const ASK_CLOSE: &str = "Answer here in full: this reply is all the asking session will read.)";

/// A task one session asks of another on this machine (`sessionpipe ask`):
/// the task, then the paragraph that says whose it is (`(Asked by
/// <harness>:<id> on this machine with sessionpipe ask. Answer here in full:
/// …)`, or with `mark` when it is handed over in place: `…sessionpipe ask,
/// message <12 characters>. …`). It is not a frame: it stays in the words,
/// since it alone says they are an agent's and not the person's.
pub fn asked(by: &str, mark: Option<&str>, task: &str) -> String {
    let how = match mark {
        Some(m) => {
            let chars: Vec<char> = m.chars().collect();
            let m: String = chars[chars.len().saturating_sub(12)..].iter().collect();
            format!("sessionpipe ask, message {m}")
        }
        None => "sessionpipe ask".to_string(),
    };
    format!(
        "{}\n\n(Asked by {by} on this machine with {how}. {ASK_CLOSE}",
        task.trim_end()
    )
}

/// The answer a handoff brings back to the session that handed the task
/// over: its first line names who answered (`Answer from <harness>:<short
/// id> (sessionpipe handoff, …):`), then the answer's words.
pub fn handoff_answer(from_harness: &str, from_id: &str, answer: &str) -> String {
    let short: String = from_id.chars().take(8).collect();
    format!(
        "Answer from {from_harness}:{short} (sessionpipe handoff, the task this session handed over):\n{}",
        answer.trim()
    )
}

/// The words without sessionpipe's frame, and whether there was one.
pub fn unframe(text: &str) -> (String, bool) {
    let trimmed = text.trim();
    let mut lines: Vec<&str> = trimmed.lines().collect();
    let mut framed = false;
    if lines.len() > 1 && is_before(lines[0]) {
        lines.remove(0);
        framed = true;
    }
    if lines.len() > 1 && is_after(lines[lines.len() - 1]) {
        lines.pop();
        framed = true;
    }
    if !framed {
        return (text.to_string(), false);
    }
    (lines.join("\n").trim().to_string(), true)
}

fn is_before(line: &str) -> bool {
    let l = line.trim();
    if !l.starts_with(BEFORE_PREFIX) {
        return false;
    }
    if l.ends_with(BEFORE_SUFFIX) {
        return true;
    }
    // In place: `…signed on the sender's device; message <12 characters>):`.
    l.rfind(BEFORE_MARK).is_some_and(|i| {
        let rest = &l[i + BEFORE_MARK.len()..];
        rest.ends_with("):") && rest.chars().count() == 14 && l.contains("(sessionpipe control, ")
    })
}

fn is_after(line: &str) -> bool {
    let l = line.trim();
    l.starts_with(AFTER_PREFIX) && l.ends_with(AFTER_SUFFIX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_frame_lines_come_off() {
        let into_session = "Message via ann-phone (sessionpipe control, signed on the sender's device):\nplease run the tests";
        assert_eq!(unframe(into_session), ("please run the tests".into(), true));
        let in_place = "Message via ann-phone (sessionpipe control, signed on the sender's device; message 01JABCDEFGHJ):\nship it";
        assert_eq!(unframe(in_place), ("ship it".into(), true));
        let new_session = "fix the flaky test\n\n(Sent via ann-phone with sessionpipe control, signed on the sender's device.)";
        assert_eq!(unframe(new_session), ("fix the flaky test".into(), true));
    }

    #[test]
    fn what_control_writes_is_what_the_reader_takes_off() {
        let words = "run the tests\nthen push";
        let written = [
            in_place("ann-phone", "01K6ZTABCDEFGHJKMNPQRSTVWX", words),
            into_session("ann-phone", words),
            new_session("ann-phone", words),
        ];
        for w in &written {
            assert_eq!(unframe(w), (words.to_string(), true), "{w}");
        }
        assert!(
            written[0].starts_with(
                "Message via ann-phone (sessionpipe control, signed on the sender's device; message JKMNPQRSTVWX):\n"
            ),
            "{}",
            written[0]
        );
    }

    #[test]
    fn only_from_their_places_and_never_the_whole_text() {
        let alone = "Message via ann-phone (sessionpipe control, signed on the sender's device):";
        assert_eq!(
            unframe(alone),
            (alone.into(), false),
            "a prompt that is only the line is the person's"
        );
        let middle = "a\nMessage via x (sessionpipe control, signed on the sender's device):\nb";
        assert!(!unframe(middle).1);
        let asked = "do x\n\n(Asked by codex:019a on this machine with sessionpipe ask. Answer here in full: …)";
        assert_eq!(
            unframe(asked),
            (asked.into(), false),
            "an ask's paragraph stays"
        );
        assert_eq!(unframe("plain words").0, "plain words");
    }

    #[test]
    fn an_ask_and_a_handoffs_answer_keep_their_lines() {
        let a = asked("claude-code:8c13", None, "check the build\n");
        assert_eq!(
            a,
            "check the build\n\n(Asked by claude-code:8c13 on this machine with sessionpipe ask. Answer here in full: this reply is all the asking session will read.)"
        );
        assert_eq!(unframe(&a), (a.clone(), false), "not a frame: it stays");
        let in_place = asked("codex:019a", Some("01K6ZTABCDEFGHJKMNPQRSTVWX"), "x");
        assert!(
            in_place.contains("with sessionpipe ask, message JKMNPQRSTVWX. Answer here in full:")
        );
        let h = handoff_answer("codex", "019a2b3c4d5e", "It builds.");
        assert!(h.starts_with("Answer from codex:019a2b3c (sessionpipe handoff, "));
        assert!(h.ends_with("):\nIt builds."));
        assert!(!unframe(&h).1);
    }
}
