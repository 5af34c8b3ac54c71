//! sessionpipe's own words around a message its control delivered (ADAPTERS.md,
//! Claude Code Transcript row): the line before the words that says where the
//! message came from (`Message via <host> (sessionpipe control, signed on the
//! sender's device):`, or its in-place form `…device; message <12 chars>):`), and
//! the line after a new session's first message (`(Sent via <host> with
//! sessionpipe control, signed on the sender's device.)`). They are taken off the
//! person's words, each only from the place sessionpipe puts it; a text that is
//! nothing but such a line is what the person wrote and stays. `(Asked by …)`
//! and a handoff's answer line are not frames: they stay.

const BEFORE_PREFIX: &str = "Message via ";
const BEFORE_SUFFIX: &str = "(sessionpipe control, signed on the sender's device):";
const BEFORE_MARK: &str = "signed on the sender's device; message ";
const AFTER_PREFIX: &str = "(Sent via ";
const AFTER_SUFFIX: &str = " with sessionpipe control, signed on the sender's device.)";
/// What a Stop hook's block reason turns into in the transcript.
pub const STOP_FEEDBACK: &str = "Stop hook feedback:";

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
}
