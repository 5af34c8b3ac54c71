//! The files an edit tool changed, as `files.changed` (tier 1): a call's
//! `tool.ended` of an edit tool that succeeded is followed by the paths its
//! input names, relative to the session's folder (or `~/…`), so a tier-1
//! destination knows which files each turn changed without seeing how.
//!
//! For harnesses with no file hook of their own (`Adapter::reports_file_changes`
//! says which have one). Which tools edit and how their inputs name files is
//! `protocol::changes`'; this only places the event. A path outside both
//! the folder and the home is left out, as the adapters' own events do.

use protocol::{EventData, FilesChanged, changes};

/// Puts a `files.changed` after each successful edit in `events`.
/// `cwd` as the session block keeps it (`~/…` under the home).
pub fn add_files_changed(events: &mut Vec<EventData>, cwd: Option<&str>, home: Option<&str>) {
    let root = match (cwd, home) {
        (Some(c), Some(h)) if c == "~" || c.starts_with("~/") => Some(format!("{h}{}", &c[1..])),
        (c, _) => c.map(str::to_string),
    };
    let roots: Vec<String> = root.into_iter().collect();
    let mut at = 0;
    while at < events.len() {
        let paths = match &events[at] {
            EventData::ToolEnded(t) if t.ok => t.input.as_ref().map(|input| {
                let named = changes::edited_paths(&t.tool, input);
                changes::relative_paths(named.iter().map(String::as_str), &roots, home)
            }),
            _ => None,
        };
        at += 1;
        if let Some(paths) = paths.filter(|p| !p.is_empty()) {
            events.insert(at, EventData::FilesChanged(FilesChanged { paths }));
            at += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::{ToolEnded, ToolStarted};
    use serde_json::json;

    fn ended(tool: &str, ok: bool, input: serde_json::Value) -> EventData {
        EventData::ToolEnded(ToolEnded {
            tool: tool.into(),
            call_id: None,
            turn_id: None,
            agent_id: None,
            ms: None,
            ok,
            error: None,
            input: Some(input),
            output: None,
        })
    }

    #[test]
    fn a_successful_edit_is_followed_by_its_files_and_nothing_else_is() {
        let edit = json!({"file_path": "/w/src/a.rs", "old_string": "1", "new_string": "2"});
        let mut events = vec![
            EventData::ToolStarted(ToolStarted {
                tool: "Edit".into(),
                call_id: None,
                turn_id: None,
                agent_id: None,
                input: Some(edit.clone()),
            }),
            ended("Edit", true, edit.clone()),
            ended("Edit", false, edit),
            ended("Bash", true, json!({"command": "touch x"})),
            ended(
                "Write",
                true,
                json!({"file_path": "/etc/hosts", "content": "x"}),
            ),
            ended(
                "Write",
                true,
                json!({"file_path": "/home/ann/n.md", "content": "x"}),
            ),
        ];
        add_files_changed(&mut events, Some("/w"), Some("/home/ann"));
        let mut under_home = vec![ended(
            "Edit",
            true,
            json!({"file_path": "/home/ann/p/a.rs",
            "old_string": "1", "new_string": "2"}),
        )];
        add_files_changed(&mut under_home, Some("~/p"), Some("/home/ann"));
        assert!(matches!(&under_home[1], EventData::FilesChanged(f) if f.paths == ["a.rs"]));
        let kinds: Vec<String> = events
            .iter()
            .map(|e| match e {
                EventData::FilesChanged(f) => format!("files {}", f.paths.join(",")),
                EventData::ToolEnded(t) => format!("ended {} {}", t.tool, t.ok),
                _ => "started".into(),
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "started",
                "ended Edit true",
                "files src/a.rs",
                "ended Edit false",
                "ended Bash true",
                // Outside the folder and the home: not named.
                "ended Write true",
                "ended Write true",
                "files ~/n.md",
            ]
        );
    }
}
