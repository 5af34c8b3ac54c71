//! A file sink's writes: a batch's lines appended to a JSONL file and synced
//! before the sink's cursor moves; a file it creates is the person's alone
//! (0600), one that exists keeps the mode they gave it.
//!
//! A line is in the file an instant before the cursor is saved, so a kill in
//! that instant, or a write that failed half way, would write it again: no
//! receiver is there to drop an event it already has. So the first write
//! after a start or a failure (`Appender::end_known` false) reads the file's
//! end first and leaves out the lines whose event it already holds (by the
//! envelope's `id`, over its last `TAIL_LINES` lines or `TAIL_BYTES`,
//! whichever is less). A last line cut short is ended first, never removed.
//! It must not read more of the file than that, or rewrite any of it.

use std::collections::HashSet;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

/// How many of the file's last lines are looked at: a batch's most (the
/// lines a kill can repeat are those of the batch written last).
const TAIL_LINES: usize = 500;
/// How much of the file's end is read for them, at most.
const TAIL_BYTES: u64 = 4 * 1024 * 1024;

/// One file sink's appends, for the life of its task.
#[derive(Default)]
pub(super) struct Appender {
    /// The file's end is what this task last wrote (set by a write that
    /// went through; a start or a failed write clears it).
    end_known: bool,
}

impl Appender {
    /// Appends `lines` (each an event's JSON) to `path` and syncs them;
    /// `Ok` with how many were left out as already at the file's end.
    pub(super) fn append(&mut self, path: &Path, lines: &[String]) -> std::io::Result<usize> {
        let result = append(path, lines, !self.end_known);
        self.end_known = result.is_ok();
        result
    }
}

fn append(path: &Path, lines: &[String], check_end: bool) -> std::io::Result<usize> {
    let mut options = std::fs::OpenOptions::new();
    options.create(true).append(true).read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut f = options.open(path)?;
    let end = if check_end {
        read_end(&mut f)?
    } else {
        End::default()
    };
    let mut buf = String::with_capacity(lines.iter().map(|l| l.len() + 1).sum::<usize>() + 1);
    if end.cut_short {
        buf.push('\n');
    }
    let mut left_out = 0;
    for l in lines {
        if !end.ids.is_empty() && event_id(l).is_some_and(|id| end.ids.contains(id)) {
            left_out += 1;
            continue;
        }
        buf.push_str(l);
        buf.push('\n');
    }
    if buf.is_empty() {
        return Ok(left_out);
    }
    f.write_all(buf.as_bytes())?;
    f.sync_data()?;
    Ok(left_out)
}

/// What a file's end holds.
#[derive(Default)]
struct End {
    /// The event ids of its last whole lines.
    ids: HashSet<String>,
    /// Its last line has no newline (a write cut short).
    cut_short: bool,
}

fn read_end(f: &mut std::fs::File) -> std::io::Result<End> {
    let len = f.metadata()?.len();
    if len == 0 {
        return Ok(End::default());
    }
    let from = len.saturating_sub(TAIL_BYTES);
    f.seek(SeekFrom::Start(from))?;
    let mut tail = Vec::with_capacity((len - from) as usize);
    f.take(len - from).read_to_end(&mut tail)?;
    let cut_short = tail.last() != Some(&b'\n');
    let mut whole: &[u8] = &tail;
    if cut_short {
        // The part after the last newline is not a whole line.
        whole = match whole.iter().rposition(|&b| b == b'\n') {
            Some(i) => &whole[..=i],
            None => &[],
        };
    }
    if from > 0 {
        // Read from the middle of a line: that one is not whole either.
        whole = match whole.iter().position(|&b| b == b'\n') {
            Some(i) => &whole[i + 1..],
            None => &[],
        };
    }
    let ids = whole
        .split(|&b| b == b'\n')
        .rev()
        .filter(|l| !l.is_empty())
        .take(TAIL_LINES)
        .filter_map(|l| std::str::from_utf8(l).ok())
        .filter_map(|l| event_id(l).map(str::to_string))
        .collect();
    Ok(End { ids, cut_short })
}

/// An event line's `id` (a line that is not an event has none).
fn event_id(line: &str) -> Option<&str> {
    #[derive(serde::Deserialize)]
    struct Id<'a> {
        #[serde(borrow)]
        id: &'a str,
    }
    serde_json::from_str::<Id>(line).ok().map(|i| i.id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(id: &str) -> String {
        format!(
            r#"{{"protocol":1,"id":"{id}","type":"turn.started","data":{{"text":"a \"quoted\" id"}}}}"#
        )
    }

    fn ids_in(path: &Path) -> Vec<String> {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|l| event_id(l).unwrap_or("?").to_string())
            .collect()
    }

    #[test]
    fn after_a_start_the_lines_the_file_ends_with_are_left_out_and_the_rest_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let mut first = Appender::default();
        let batch: Vec<String> = ["a", "b", "c"].iter().map(|i| line(i)).collect();
        assert_eq!(first.append(&path, &batch).unwrap(), 0);
        // A kill before the cursor moved: a new task gets the same rows again,
        // with more after them.
        let mut again = Appender::default();
        let batch: Vec<String> = ["b", "c", "d", "e"].iter().map(|i| line(i)).collect();
        assert_eq!(again.append(&path, &batch).unwrap(), 2);
        assert_eq!(ids_in(&path), ["a", "b", "c", "d", "e"]);
        // Its end known, nothing is read back: written as given.
        assert_eq!(again.append(&path, &[line("f")]).unwrap(), 0);
        assert_eq!(ids_in(&path), ["a", "b", "c", "d", "e", "f"]);
    }

    #[test]
    fn a_failed_write_makes_the_next_one_look_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let mut a = Appender::default();
        a.append(&path, &[line("a")]).unwrap();
        assert!(a.end_known);
        let gone = dir.path().join("no-such-dir").join("x.jsonl");
        assert!(a.append(&gone, &[line("b")]).is_err());
        assert!(!a.end_known);
        assert_eq!(a.append(&path, &[line("a"), line("b")]).unwrap(), 1);
        assert_eq!(ids_in(&path), ["a", "b"]);
    }

    #[test]
    fn a_last_line_cut_short_is_ended_and_its_event_written_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let torn = &line("b")[..20];
        std::fs::write(&path, format!("{}\n{torn}", line("a"))).unwrap();
        let mut a = Appender::default();
        assert_eq!(a.append(&path, &[line("b"), line("c")]).unwrap(), 0);
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[1], torn, "kept as it was");
        assert_eq!(ids_in(&path), ["a", "?", "b", "c"]);
    }

    #[test]
    fn only_the_files_end_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        // An early event, then more than the tail reads: written again if a
        // replay sends it (it is not at the end), while the last one is not.
        let filler = "x".repeat(1024);
        let mut text = line("early") + "\n";
        for i in 0..(TAIL_BYTES / 1024 + 10) {
            text.push_str(&format!(r#"{{"id":"fill-{i}","pad":"{filler}"}}"#));
            text.push('\n');
        }
        text.push_str(&line("last"));
        text.push('\n');
        std::fs::write(&path, &text).unwrap();
        let mut a = Appender::default();
        assert_eq!(a.append(&path, &[line("early"), line("last")]).unwrap(), 1);
        let ids = ids_in(&path);
        assert_eq!(ids[ids.len() - 2..], ["last", "early"]);
    }

    #[test]
    fn a_new_file_is_the_persons_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        Appender::default().append(&path, &[line("a")]).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
