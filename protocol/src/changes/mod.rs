//! A session's changes as a person reviews them: per turn, the files it
//! changed and, where the tier carried the edit tools' inputs (3), each edit
//! as the text before and after it. One reading for both places that show
//! it (the receiver's page API and the daemon's local API for the desktop
//! window), so the phone and the desktop never disagree on what changed.
//!
//! Owns: reading edit tools' inputs (`edits`), the paths `files.changed`
//! names (`paths`, also the adapters'), and folding a session's events, fed
//! in order, into `Changes`. Pure: it reads only the events it is fed and
//! never shows more than they carry (a tier-1 event has no input, so its
//! file is listed with no content and the page says the tier hides it).

mod edits;
mod paths;

pub use edits::{Edit, EditKind, FileEdit, edited_paths, is_edit_tool, read_edits};
pub use paths::{relative_path, relative_paths};

use serde::Serialize;
use serde_json::Value;

/// The most edit text (before and after, in bytes) one answer carries, the
/// newest edits first; older ones are listed as `cut`. A phone reads a
/// review, not a whole history.
pub const TEXT_BUDGET: usize = 2 * 1024 * 1024;

/// The events a store reads for a session's changes at most, newest first,
/// and the most bytes of them it keeps: a bound on one answer's work and
/// memory whatever the session holds. Past either, `Changes::older`.
pub const READ_EVENTS_MAX: usize = 5_000;
pub const READ_BYTES_MAX: usize = 16 * 1024 * 1024;

/// The event types a `Collector` reads (what a store may filter on).
pub const READ_TYPES: [&str; 3] = ["turn.started", "tool.ended", "files.changed"];

/// What a session changed, turn by turn (oldest first).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Changes {
    pub turns: Vec<TurnChanges>,
    /// Some edits' text was left out (`TEXT_BUDGET`).
    pub cut: bool,
    /// Older events were not read (`READ_EVENTS_MAX`, `READ_BYTES_MAX`):
    /// the turns are numbered from the first one read.
    pub older: bool,
}

/// A store's reading of a session's changes: fed its events newest first
/// (pages of `READ_PAGE`), it keeps those worth keeping and says when to stop
/// (`READ_EVENTS_MAX` read, `READ_BYTES_MAX` kept); then folds what it kept.
#[derive(Debug, Default)]
pub struct Reading {
    kept: Vec<(String, String, Value)>,
    bytes: usize,
    read: usize,
    older: bool,
}

/// Events a store reads in one page.
pub const READ_PAGE: usize = 200;

impl Reading {
    /// One event, newer ones first: its type, time, `data`, and how many
    /// bytes it took stored. False once the bounds are reached: stop there.
    pub fn feed(&mut self, kind: String, time: String, data: Value, stored: usize) -> bool {
        self.read += 1;
        if worth_keeping(&kind, &data) {
            self.bytes += stored;
            self.kept.push((kind, time, data));
        }
        if self.read >= READ_EVENTS_MAX || self.bytes >= READ_BYTES_MAX {
            self.older = true;
            return false;
        }
        true
    }

    /// The changes of what was kept, the session's folder `cwd`.
    pub fn changes(self, cwd: Option<&str>) -> Changes {
        let mut c = Collector::new(cwd);
        for (kind, time, data) in self.kept.iter().rev() {
            c.add(kind, time, data);
        }
        c.changes.older = self.older;
        c.finish()
    }
}

/// Whether a store keeps an event it read for the changes: a `tool.ended`
/// only of an edit tool (a shell's or a read's output is most of a session's
/// bytes and none of its changes).
pub fn worth_keeping(kind: &str, data: &Value) -> bool {
    kind != "tool.ended"
        || data
            .get("tool")
            .and_then(Value::as_str)
            .is_some_and(is_edit_tool)
}

/// The files one turn changed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct TurnChanges {
    /// 1 for the first turn read, 0 for changes before any turn started.
    pub turn: u32,
    /// When the turn started.
    pub at: Option<String>,
    pub files: Vec<FileChanges>,
    /// Edit tool calls whose input did not reach this side (the tier hides
    /// it) or could not be read: their file may not be listed.
    pub unseen: u32,
}

/// One file and its edits in a turn, oldest first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct FileChanges {
    /// Relative to the session's folder where it is inside it.
    pub path: String,
    /// Empty: the file changed, and how is not here (`files.changed` alone).
    pub edits: Vec<Edit>,
}

/// Folds a session's events, in order, into its `Changes`.
#[derive(Debug)]
pub struct Collector {
    roots: Vec<String>,
    changes: Changes,
}

impl Collector {
    /// `cwd`: the session's folder, which edit paths are written relative to.
    pub fn new(cwd: Option<&str>) -> Collector {
        Collector {
            roots: cwd.map(str::to_string).into_iter().collect(),
            changes: Changes::default(),
        }
    }

    /// One event: its type, its time and its `data`.
    pub fn add(&mut self, kind: &str, time: &str, data: &Value) {
        match kind {
            "turn.started" => {
                let turn = self.changes.turns.last().map_or(0, |t| t.turn) + 1;
                self.changes.turns.push(TurnChanges {
                    turn,
                    at: Some(time.to_string()),
                    files: Vec::new(),
                    unseen: 0,
                });
            }
            "files.changed" => {
                let paths = data.get("paths").and_then(Value::as_array);
                for p in paths.into_iter().flatten().filter_map(Value::as_str) {
                    self.name_by(p);
                    self.file(p);
                }
            }
            "tool.ended" => self.tool_ended(data),
            _ => {}
        }
    }

    fn tool_ended(&mut self, data: &Value) {
        let tool = data.get("tool").and_then(Value::as_str).unwrap_or("");
        if !is_edit_tool(tool) || data.get("ok") == Some(&Value::Bool(false)) {
            return;
        }
        let read = data.get("input").map(|i| read_edits(tool, i));
        let Some(edits) = read.filter(|e| !e.is_empty()) else {
            self.turn().unseen += 1;
            return;
        };
        for FileEdit { path, mut edit } in edits {
            let path = self.shown(&path);
            edit.moved_to = edit.moved_to.map(|m| self.shown(&m));
            self.file(&path).edits.push(edit);
        }
    }

    /// A path as the view shows it: relative inside the session's folder,
    /// as given elsewhere (the input said so at this tier already).
    fn shown(&self, path: &str) -> String {
        relative_path(path, &self.roots, None).unwrap_or_else(|| path.to_string())
    }

    /// Gives the edits of this turn kept under an absolute path the name a
    /// `files.changed` uses for it (`rel`: `src/a.rs`, `~/notes.md`). The
    /// machine writes one after each edit; the folder it is relative to may
    /// be `~/…`, which this side cannot expand.
    fn name_by(&mut self, rel: &str) {
        let tail = format!("/{}", rel.strip_prefix("~/").unwrap_or(rel));
        let turn = self.turn();
        let named = |f: &FileChanges| f.path.starts_with('/') && f.path.ends_with(&tail);
        // The newest such entry: the edit this `files.changed` follows.
        let Some(at) = turn.files.iter().rposition(named) else {
            return;
        };
        let mut moved = turn.files.remove(at);
        match turn.files.iter_mut().find(|f| f.path == rel) {
            Some(f) => f.edits.append(&mut moved.edits),
            None => {
                moved.path = rel.to_string();
                turn.files.insert(at, moved);
            }
        }
    }

    fn turn(&mut self) -> &mut TurnChanges {
        if self.changes.turns.is_empty() {
            self.changes.turns.push(TurnChanges {
                turn: 0,
                at: None,
                files: Vec::new(),
                unseen: 0,
            });
        }
        let last = self.changes.turns.len() - 1;
        &mut self.changes.turns[last]
    }

    fn file(&mut self, path: &str) -> &mut FileChanges {
        let turn = self.turn();
        let at = match turn.files.iter().position(|f| f.path == path) {
            Some(at) => at,
            None => {
                turn.files.push(FileChanges {
                    path: path.to_string(),
                    edits: Vec::new(),
                });
                turn.files.len() - 1
            }
        };
        &mut turn.files[at]
    }

    /// The changes, turns that changed nothing left out, the text budget
    /// spent from the newest edit back (the turn a person came to review).
    pub fn finish(mut self) -> Changes {
        self.changes
            .turns
            .retain(|t| !t.files.is_empty() || t.unseen > 0);
        let mut budget = TEXT_BUDGET;
        let edits = self.changes.turns.iter_mut().rev().flat_map(|t| {
            t.files
                .iter_mut()
                .rev()
                .flat_map(|f| f.edits.iter_mut().rev())
        });
        let mut cut = false;
        for edit in edits {
            let size = edit.old.len() + edit.new.len();
            if size > budget {
                (edit.old, edit.new, edit.cut) = (String::new(), String::new(), true);
                cut = true;
            } else {
                budget -= size;
            }
        }
        self.changes.cut = cut;
        self.changes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fold(cwd: &str, events: &[(&str, Value)]) -> Changes {
        let mut c = Collector::new(Some(cwd));
        for (i, (kind, data)) in events.iter().enumerate() {
            c.add(kind, &format!("2026-12-06T10:00:0{i}.000Z"), data);
        }
        c.finish()
    }

    #[test]
    fn turns_list_their_files_with_the_edits_the_tier_carried() {
        let edit = json!({"tool": "Edit", "ok": true, "input":
            {"file_path": "/w/src/a.rs", "old_string": "1", "new_string": "2"}});
        let changes = fold(
            "/w",
            &[
                ("turn.started", json!({})),
                (
                    "tool.ended",
                    json!({"tool": "Bash", "ok": true, "input": {"command": "ls"}}),
                ),
                ("tool.ended", edit),
                ("files.changed", json!({"paths": ["src/a.rs"]})),
                ("turn.started", json!({})),
                ("turn.started", json!({})),
                // Tier 1: the tool's name and its file, not its input.
                ("tool.ended", json!({"tool": "Write", "ok": true})),
                ("files.changed", json!({"paths": ["notes.md"]})),
                // A refused edit changed nothing.
                (
                    "tool.ended",
                    json!({"tool": "Edit", "ok": false, "input":
                    {"file_path": "/w/b.rs", "old_string": "x", "new_string": "y"}}),
                ),
            ],
        );
        assert!(!changes.cut);
        let t: Vec<(u32, Vec<&str>, u32)> = changes
            .turns
            .iter()
            .map(|t| {
                (
                    t.turn,
                    t.files.iter().map(|f| f.path.as_str()).collect(),
                    t.unseen,
                )
            })
            .collect();
        assert_eq!(t, [(1, vec!["src/a.rs"], 0), (3, vec!["notes.md"], 1)]);
        assert_eq!(changes.turns[0].files[0].edits[0].new, "2");
        assert!(changes.turns[1].files[0].edits.is_empty());
        assert_eq!(
            changes.turns[0].at.as_deref(),
            Some("2026-12-06T10:00:00.000Z")
        );
    }

    #[test]
    fn an_edit_under_a_home_folder_takes_the_name_files_changed_gives_it() {
        let edit = |p: &str| json!({"tool": "Edit", "ok": true, "input": {"file_path": p, "old_string": "1", "new_string": "2"}});
        let changes = fold(
            "~/proj",
            &[
                ("turn.started", json!({})),
                ("tool.ended", edit("/home/ann/proj/src/a.rs")),
                ("files.changed", json!({"paths": ["src/a.rs"]})),
                ("tool.ended", edit("/home/ann/proj/src/a.rs")),
                ("files.changed", json!({"paths": ["src/a.rs"]})),
                ("tool.ended", edit("/home/ann/notes.md")),
                ("files.changed", json!({"paths": ["~/notes.md"]})),
            ],
        );
        let files = &changes.turns[0].files;
        let got: Vec<(&str, usize)> = files
            .iter()
            .map(|f| (f.path.as_str(), f.edits.len()))
            .collect();
        assert_eq!(got, [("src/a.rs", 2), ("~/notes.md", 1)]);
    }

    #[test]
    fn edits_past_the_budget_are_listed_without_their_text() {
        let big = "x".repeat(TEXT_BUDGET / 2 + 1);
        let write = |p: &str| json!({"tool": "Write", "ok": true, "input": {"file_path": p, "content": big}});
        let changes = fold(
            "/w",
            &[
                ("tool.ended", write("/w/a")),
                ("tool.ended", write("/elsewhere/b")),
            ],
        );
        assert!(changes.cut);
        let files = &changes.turns[0].files;
        assert_eq!(changes.turns[0].turn, 0);
        // The newest edit keeps its text; the older one is listed without.
        assert_eq!(files[0].path, "a");
        assert!(files[0].edits[0].cut && files[0].edits[0].new.is_empty());
        // Outside the folder the path is as the input said.
        assert_eq!(
            (files[1].path.as_str(), files[1].edits[0].cut),
            ("/elsewhere/b", false)
        );
        assert!(worth_keeping("tool.ended", &json!({"tool": "Edit"})));
        assert!(!worth_keeping(
            "tool.ended",
            &json!({"tool": "Bash", "output": "lots"})
        ));
        assert!(worth_keeping("files.changed", &json!({})));
    }
}
