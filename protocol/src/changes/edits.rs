//! What an edit tool's input says it did to which file: the harnesses' own
//! tool shapes read into one `Edit` (the text a span was, the text it became).
//!
//! Read: Claude Code's `Edit` / `MultiEdit` / `Write`, Droid's `Edit` /
//! `Create`, Copilot CLI's `edit` / `create`, OpenCode's `edit` / `write` /
//! `apply_patch`, Gemini CLI's `replace` / `write_file`, and Codex's
//! `apply_patch` (its `*** Begin Patch` text, also OpenCode's). A tool is
//! known by its name alone (they do not collide across harnesses) and its
//! fields by the names any of them uses. Pure: the input is what reached
//! this side (redacted on the machine); nothing here reads a file.

use serde::Serialize;
use serde_json::Value;

/// What one edit did to its file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "lowercase")]
pub enum EditKind {
    /// A span of the file, `old`, became `new`.
    Replace,
    /// The whole file was written: `new` is its content (`old` is unknown).
    Write,
    /// The file was removed.
    Delete,
}

/// One edit of one file, as its tool's input says.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Edit {
    /// The tool's name, as the harness gave it.
    pub tool: String,
    pub kind: EditKind,
    pub old: String,
    pub new: String,
    /// Where a patch moved the file to.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub moved_to: Option<String>,
    /// Left out to keep one answer small: the edit happened, its text is
    /// not in this answer.
    pub cut: bool,
}

/// An edit and the file it is of (the path as the input names it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileEdit {
    pub path: String,
    pub edit: Edit,
}

const PATH_KEYS: &[&str] = &["file_path", "filePath", "path", "absolute_path"];
const OLD_KEYS: &[&str] = &["old_string", "oldString", "old_str"];
const NEW_KEYS: &[&str] = &["new_string", "newString", "new_str"];
const CONTENT_KEYS: &[&str] = &["content", "file_text", "text"];
const PATCH_KEYS: &[&str] = &["patchText", "patch", "command", "input"];

#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    Replace,
    Many,
    Write,
    Patch,
}

fn shape_of(tool: &str) -> Option<Shape> {
    Some(match tool.to_ascii_lowercase().as_str() {
        "edit" | "replace" | "str_replace" => Shape::Replace,
        "multiedit" => Shape::Many,
        "write" | "create" | "write_file" => Shape::Write,
        "apply_patch" | "applypatch" | "patch" => Shape::Patch,
        _ => return None,
    })
}

/// True for a tool whose calls change files (its input, when it reached
/// this side, says how).
pub fn is_edit_tool(tool: &str) -> bool {
    shape_of(tool).is_some()
}

/// The edits a call of `tool` with `input` made, in the order it made them;
/// empty for a tool that edits nothing or an input of no known shape.
pub fn read_edits(tool: &str, input: &Value) -> Vec<FileEdit> {
    let Some(shape) = shape_of(tool) else {
        return Vec::new();
    };
    let edit = |kind, old: &str, new: &str| Edit {
        tool: tool.to_string(),
        kind,
        old: old.to_string(),
        new: new.to_string(),
        moved_to: None,
        cut: false,
    };
    let path = first_str(input, PATH_KEYS);
    match (shape, path) {
        (Shape::Replace, Some(path)) => {
            let (Some(old), Some(new)) = (first_str(input, OLD_KEYS), first_str(input, NEW_KEYS))
            else {
                return Vec::new();
            };
            vec![FileEdit {
                path: path.to_string(),
                edit: edit(EditKind::Replace, old, new),
            }]
        }
        (Shape::Many, Some(path)) => input
            .get("edits")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|e| Some((first_str(e, OLD_KEYS)?, first_str(e, NEW_KEYS)?)))
            .map(|(old, new)| FileEdit {
                path: path.to_string(),
                edit: edit(EditKind::Replace, old, new),
            })
            .collect(),
        (Shape::Write, Some(path)) => match first_str(input, CONTENT_KEYS) {
            Some(content) => vec![FileEdit {
                path: path.to_string(),
                edit: edit(EditKind::Write, "", content),
            }],
            None => Vec::new(),
        },
        (Shape::Patch, _) => {
            let text = input.as_str().or_else(|| first_str(input, PATCH_KEYS));
            text.map(|t| read_patch(tool, t)).unwrap_or_default()
        }
        _ => Vec::new(),
    }
}

/// Only the paths `read_edits` would name (a moved file under both names).
pub fn edited_paths(tool: &str, input: &Value) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for e in read_edits(tool, input) {
        for p in std::iter::once(e.path).chain(e.edit.moved_to) {
            if !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out
}

fn first_str<'a>(v: &'a Value, keys: &[&str]) -> Option<&'a str> {
    keys.iter().find_map(|k| v.get(*k).and_then(Value::as_str))
}

/// Codex's patch language: `*** Add File: p` (its lines `+`), `*** Delete
/// File: p`, `*** Update File: p` with an optional `*** Move to: q` and hunks
/// opened by `@@` whose lines are ` ` (kept), `-` (gone) or `+` (new). Each
/// hunk is one `Replace` of its kept and gone lines by its kept and new ones.
fn read_patch(tool: &str, text: &str) -> Vec<FileEdit> {
    let mut out: Vec<FileEdit> = Vec::new();
    // The file being read and, for an update, its hunk so far.
    let mut file: Option<(String, EditKind)> = None;
    let mut moved: Option<String> = None;
    let mut old: Vec<&str> = Vec::new();
    let mut new: Vec<&str> = Vec::new();
    let mut any_line = false;

    let flush = |file: &Option<(String, EditKind)>,
                 moved: &Option<String>,
                 old: &mut Vec<&str>,
                 new: &mut Vec<&str>,
                 any_line: &mut bool,
                 out: &mut Vec<FileEdit>| {
        let Some((path, kind)) = file else { return };
        if !*any_line && *kind == EditKind::Replace && moved.is_none() {
            return;
        }
        let joined = |lines: &Vec<&str>| {
            let mut s = lines.join("\n");
            if !lines.is_empty() {
                s.push('\n');
            }
            s
        };
        out.push(FileEdit {
            path: path.clone(),
            edit: Edit {
                tool: tool.to_string(),
                kind: *kind,
                old: joined(old),
                new: joined(new),
                moved_to: moved.clone(),
                cut: false,
            },
        });
        old.clear();
        new.clear();
        *any_line = false;
    };

    for line in text.lines() {
        let header = |prefix: &str| line.strip_prefix(prefix).map(str::trim);
        if let Some(p) = header("*** Add File:") {
            flush(&file, &moved, &mut old, &mut new, &mut any_line, &mut out);
            (file, moved) = (Some((p.to_string(), EditKind::Write)), None);
            any_line = true;
        } else if let Some(p) = header("*** Delete File:") {
            flush(&file, &moved, &mut old, &mut new, &mut any_line, &mut out);
            (file, moved) = (Some((p.to_string(), EditKind::Delete)), None);
            any_line = true;
        } else if let Some(p) = header("*** Update File:") {
            flush(&file, &moved, &mut old, &mut new, &mut any_line, &mut out);
            (file, moved) = (Some((p.to_string(), EditKind::Replace)), None);
        } else if let Some(p) = header("*** Move to:") {
            moved = Some(p.to_string());
        } else if line.starts_with("*** ") {
            // `*** End of File`, `*** End Patch`, `*** Begin Patch`.
            if line.starts_with("*** End Patch") {
                flush(&file, &moved, &mut old, &mut new, &mut any_line, &mut out);
                file = None;
            }
        } else if line.starts_with("@@") {
            if matches!(file, Some((_, EditKind::Replace))) && any_line {
                // A new hunk of the same file: the last one is an edit of its own.
                flush(&file, &moved, &mut old, &mut new, &mut any_line, &mut out);
            }
        } else if let Some((_, kind)) = &file {
            // The mark is one ASCII byte; a line that starts otherwise (a
            // context line that lost its space, any character) is context.
            let (mark, rest) = match line.as_bytes().first() {
                Some(b @ (b' ' | b'-' | b'+')) => (*b, &line[1..]),
                _ => (b' ', line),
            };
            match (kind, mark) {
                (EditKind::Write, b'+') => new.push(rest),
                (EditKind::Replace, b' ') => {
                    old.push(rest);
                    new.push(rest);
                    any_line = true;
                }
                (EditKind::Replace, b'-') => {
                    old.push(rest);
                    any_line = true;
                }
                (EditKind::Replace, b'+') => {
                    new.push(rest);
                    any_line = true;
                }
                _ => {}
            }
        }
    }
    flush(&file, &moved, &mut old, &mut new, &mut any_line, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn one(tool: &str, input: Value) -> (String, EditKind, String, String) {
        let mut v = read_edits(tool, &input);
        assert_eq!(v.len(), 1, "{tool}: {v:?}");
        let e = v.remove(0);
        (e.path, e.edit.kind, e.edit.old, e.edit.new)
    }

    #[test]
    fn each_harnesss_replace_and_write_read_alike() {
        let replace = |p: &str| (p.to_string(), EditKind::Replace, "a".into(), "b".into());
        let write = |p: &str| (p.to_string(), EditKind::Write, String::new(), "x\n".into());
        // Claude Code, Droid, Copilot CLI, OpenCode, Gemini CLI.
        let claude = json!({"file_path": "/w/a.rs", "old_string": "a", "new_string": "b"});
        assert_eq!(one("Edit", claude), replace("/w/a.rs"));
        let droid = json!({"file_path": "/w/a.rs", "old_str": "a", "new_str": "b"});
        assert_eq!(one("Edit", droid), replace("/w/a.rs"));
        let copilot = json!({"path": "/w/a.rs", "old_str": "a", "new_str": "b"});
        assert_eq!(one("edit", copilot), replace("/w/a.rs"));
        let opencode = json!({"filePath": "/w/a.rs", "oldString": "a", "newString": "b"});
        assert_eq!(one("edit", opencode), replace("/w/a.rs"));
        let gemini = json!({"file_path": "/w/a.rs", "old_string": "a", "new_string": "b"});
        assert_eq!(one("replace", gemini), replace("/w/a.rs"));
        for (tool, input) in [
            ("Write", json!({"file_path": "/w/n.md", "content": "x\n"})),
            ("Create", json!({"file_path": "/w/n.md", "content": "x\n"})),
            ("create", json!({"path": "/w/n.md", "file_text": "x\n"})),
            ("write", json!({"filePath": "/w/n.md", "content": "x\n"})),
            (
                "write_file",
                json!({"file_path": "/w/n.md", "content": "x\n"}),
            ),
        ] {
            assert_eq!(one(tool, input), write("/w/n.md"), "{tool}");
        }
    }

    #[test]
    fn a_multiedit_is_one_edit_per_change_and_other_tools_none() {
        let input = json!({"file_path": "/w/a.rs", "edits": [
            {"old_string": "1", "new_string": "2"}, {"old_string": "3", "new_string": "4"}]});
        let v = read_edits("MultiEdit", &input);
        assert_eq!(v.len(), 2);
        assert_eq!((v[1].edit.old.as_str(), v[1].edit.new.as_str()), ("3", "4"));
        assert!(read_edits("Bash", &json!({"command": "ls"})).is_empty());
        assert!(read_edits("Read", &json!({"file_path": "/w/a.rs"})).is_empty());
        // A known tool with an input of no known shape (cut on the machine).
        assert!(read_edits("Edit", &json!({"file_path": "/w/a.rs"})).is_empty());
        assert!(is_edit_tool("MultiEdit") && is_edit_tool("apply_patch") && !is_edit_tool("Bash"));
    }

    #[test]
    fn a_codex_patch_is_an_edit_per_hunk_and_per_file() {
        let patch = "*** Begin Patch\n\
                     *** Add File: docs/new.md\n\
                     +# New\n\
                     +text\n\
                     *** Update File: src/lib.rs\n\
                     *** Move to: src/core.rs\n\
                     @@ fn main\n\
                     \x20keep\n\
                     -gone\n\
                     +came\n\
                     @@\n\
                     -x\n\
                     +y\n\
                     *** Delete File: old.txt\n\
                     *** End Patch\n";
        let v = read_edits("apply_patch", &json!({"command": patch}));
        let got: Vec<(&str, EditKind, &str, &str, Option<&str>)> = v
            .iter()
            .map(|e| {
                let m = e.edit.moved_to.as_deref();
                (
                    e.path.as_str(),
                    e.edit.kind,
                    e.edit.old.as_str(),
                    e.edit.new.as_str(),
                    m,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("docs/new.md", EditKind::Write, "", "# New\ntext\n", None),
                (
                    "src/lib.rs",
                    EditKind::Replace,
                    "keep\ngone\n",
                    "keep\ncame\n",
                    Some("src/core.rs")
                ),
                (
                    "src/lib.rs",
                    EditKind::Replace,
                    "x\n",
                    "y\n",
                    Some("src/core.rs")
                ),
                ("old.txt", EditKind::Delete, "", "", None),
            ]
        );
        // A line that starts with any other character, a multi-byte one
        // included, is context (never a panic: this runs on every edit).
        let odd = "*** Begin Patch\n*** Update File: a.md\n@@\n\u{e9}t\u{e9}\n-\u{2014}old\n+\u{2014}new\n*** End Patch";
        let v = read_edits("apply_patch", &json!({"input": odd}));
        assert_eq!(
            (v[0].edit.old.as_str(), v[0].edit.new.as_str()),
            (
                "\u{e9}t\u{e9}\n\u{2014}old\n",
                "\u{e9}t\u{e9}\n\u{2014}new\n"
            )
        );
        // OpenCode's key, and the text given bare.
        assert_eq!(
            read_edits("apply_patch", &json!({"patchText": patch})).len(),
            4
        );
        assert_eq!(read_edits("apply_patch", &json!(patch)).len(), 4);
        assert_eq!(
            edited_paths("apply_patch", &json!(patch)),
            ["docs/new.md", "src/lib.rs", "src/core.rs", "old.txt"]
        );
    }
}
