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
/// `cwd` as the session block keeps it (`~/…` under the home). Reading the
/// inputs never costs the call its own events: should it fail (a panic on
/// an input no test foresaw), the call goes on without these.
pub fn add_files_changed(events: &mut Vec<EventData>, cwd: Option<&str>, home: Option<&str>) {
    let read = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        files_changed(events, cwd, home)
    }));
    let Ok(found) = read else {
        tracing::warn!("the files an edit changed were not read (its input did not read)");
        return;
    };
    // From the last, so each place is still where it was found.
    for (after, paths) in found.into_iter().rev() {
        events.insert(after + 1, EventData::FilesChanged(FilesChanged { paths }));
    }
}

/// Each successful edit's place in `events` and the paths it changed.
fn files_changed(
    events: &[EventData],
    cwd: Option<&str>,
    home: Option<&str>,
) -> Vec<(usize, Vec<String>)> {
    let home_path = home.map(std::path::Path::new);
    let roots: Vec<String> = cwd
        .map(|c| spool::paths::untilde(c, home_path))
        .into_iter()
        .collect();
    events
        .iter()
        .enumerate()
        .filter_map(|(at, e)| match e {
            EventData::ToolEnded(t) if t.ok => {
                let named = changes::edited_paths(&t.tool, t.input.as_ref()?);
                let paths = changes::relative_paths(named.iter().map(String::as_str), &roots, home);
                (!paths.is_empty()).then_some((at, paths))
            }
            _ => None,
        })
        .collect()
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
