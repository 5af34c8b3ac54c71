//! An Antigravity conversation's link (ADAPTERS.md, Antigravity Facts row):
//! `https://antigravity.google.com/r/<installation_uuid>-v2?p=c/<id>?section=<project>`,
//! from the data folder's `antigravity_state.pbtxt` (the installation) and
//! `~/.gemini/config/projects/*.json` (the project that holds the folder). The
//! title is the transcript's first ask, which the turn log already keeps.
//!
//! Reads those two plain files and nothing else: never the sign-in beside them.
//! No link is made up: without the installation or a project whose folder is
//! the conversation's, there is none.

use serde_json::Value;
use std::path::{Path, PathBuf};

/// The conversation's link, when the files name its installation and project.
/// `transcript` (when known) says which data folder the conversation is in.
pub fn url(
    home: &Path,
    transcript: Option<&Path>,
    conversation: &str,
    folder: Option<&Path>,
) -> Option<String> {
    let installation = data_dir_of(transcript)
        .into_iter()
        .chain(super::places::data_dirs(home))
        .find_map(|d| {
            installation_uuid(&std::fs::read_to_string(d.join("antigravity_state.pbtxt")).ok()?)
        })?;
    let project = project_of(&home.join(".gemini/config/projects"), folder?)?;
    Some(format!(
        "https://antigravity.google.com/r/{installation}-v2?p=c/{conversation}?section={project}"
    ))
}

/// The data folder of `<data dir>/brain/<id>/.system_generated/logs/transcript.jsonl`.
fn data_dir_of(transcript: Option<&Path>) -> Option<PathBuf> {
    let brain = transcript?.ancestors().nth(4)?;
    (brain.file_name()? == "brain").then(|| brain.parent().map(Path::to_path_buf))?
}

/// `installation_uuid` of a protobuf text file: the first `installation_uuid:`
/// field, its value quoted or bare, at any nesting.
pub fn installation_uuid(pbtxt: &str) -> Option<String> {
    const KEY: &str = "installation_uuid";
    let mut rest = pbtxt;
    while let Some(i) = rest.find(KEY) {
        let after = &rest[i + KEY.len()..];
        rest = after;
        let Some(value) = after.trim_start().strip_prefix(':') else {
            continue; // a longer name (`installation_uuid_old`) or a message
        };
        let value = value.trim_start();
        let value = value.strip_prefix('"').unwrap_or(value);
        let id: String = value
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        if !id.is_empty() {
            return Some(id);
        }
    }
    None
}

/// The id of the project whose resources include `folder`: its `id`, else its
/// file's name. Projects are `{id, name, projectResources: {resources:
/// [{folderUri}]}}`.
pub fn project_of(projects: &Path, folder: &Path) -> Option<String> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(projects)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files.into_iter().find_map(|file| {
        let v: Value = serde_json::from_slice(&std::fs::read(&file).ok()?).ok()?;
        let holds = v
            .pointer("/projectResources/resources")
            .and_then(Value::as_array)?
            .iter()
            .filter_map(|r| r.get("folderUri").and_then(Value::as_str))
            .any(|uri| same_folder(Path::new(&super::places::folder_of(uri)), folder));
        let id = v
            .get("id")
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(|| Some(file.file_stem()?.to_str()?.to_string()))?;
        // The id goes into a URL as is: one that would need escaping is not used.
        let plain = id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        (holds && plain && !id.is_empty()).then_some(id)
    })
}

/// The same folder, a trailing separator or not.
fn same_folder(a: &Path, b: &Path) -> bool {
    a.components().eq(b.components())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PBTXT: &str = "user_settings {\n  theme: \"dark\"\n}\ninstallation_uuid_old: \"x\"\ninstallation_uuid: \"6c1f7a52-93d4-4b4e-9c41-2a51d7f0e8b3\"\n";

    #[test]
    fn the_installation_is_read_from_the_state_file() {
        assert_eq!(
            installation_uuid(PBTXT).as_deref(),
            Some("6c1f7a52-93d4-4b4e-9c41-2a51d7f0e8b3")
        );
        assert_eq!(
            installation_uuid("installation_uuid: abc-1").as_deref(),
            Some("abc-1")
        );
        assert_eq!(installation_uuid("installation_uuid { }"), None);
        assert_eq!(installation_uuid(""), None);
    }

    #[test]
    fn the_link_names_installation_conversation_and_project() {
        let home = tempfile::tempdir().unwrap();
        let h = home.path();
        let cli = h.join(".gemini/antigravity-cli");
        std::fs::create_dir_all(&cli).unwrap();
        let projects = h.join(".gemini/config/projects");
        std::fs::create_dir_all(&projects).unwrap();
        std::fs::write(
            projects.join("default-cli-project.json"),
            r#"{"id": "default-cli-project", "name": "CLI Project", "projectResources": {}}"#,
        )
        .unwrap();
        std::fs::write(
            projects.join("p-1.json"),
            r#"{"id": "8d0e2c1a", "name": "app", "projectResources": {"resources": [{"folderUri": "file:///srv/my%20app/"}]}}"#,
        )
        .unwrap();
        let transcript = cli.join("brain/c1/.system_generated/logs/transcript.jsonl");
        let folder = Path::new("/srv/my app");
        assert_eq!(
            url(h, Some(&transcript), "c1", Some(folder)),
            None,
            "no state file"
        );
        std::fs::write(cli.join("antigravity_state.pbtxt"), PBTXT).unwrap();
        assert_eq!(
            url(h, Some(&transcript), "c1", Some(folder)).as_deref(),
            Some(
                "https://antigravity.google.com/r/6c1f7a52-93d4-4b4e-9c41-2a51d7f0e8b3-v2?p=c/c1?section=8d0e2c1a"
            )
        );
        assert_eq!(data_dir_of(Some(&transcript)), Some(cli));
        assert_eq!(url(h, None, "c1", Some(Path::new("/elsewhere"))), None);
        assert_eq!(url(h, None, "c1", None), None);
    }
}
