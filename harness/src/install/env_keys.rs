//! Our keys in the `env` object of a JSON settings file (`pool on|off`:
//! ADAPTERS.md, Claude Code row, Pool), written by the installer's rules: the
//! person's file, symlinks followed and kept, a read-only file refused, text
//! that is not plain JSON skipped, every byte outside our keys kept.
//!
//! It owns adding and removing those members. "Ours" is a key whose value is
//! one the caller says it wrote (it keeps them: a later `on` with a new port
//! or token replaces its own old values, and never a value the person set).
//! It must not decide which files or which keys: that is the caller's.

use super::disk;
use super::format::Skip;
use super::jsonedit::{Doc, Edits, Kind, Node};
use serde_json::Value;
use std::path::Path;

/// What one file got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EnvChange {
    /// Our keys were written (the file did not exist: `created`).
    Written { created: bool },
    /// They were there already, with these values.
    Current,
    /// Ours were taken out (or the file we created removed).
    Removed,
    /// None of ours was there.
    Absent,
}

/// Sets `keys` in the root's `env` of `path`. A key already there is
/// replaced only when its value is one of `ours` (what we wrote before);
/// a value the person set refuses the whole file, with the key's name.
pub fn set_env(path: &Path, keys: &[(&str, &str)], ours: &[&str]) -> Result<EnvChange, Skip> {
    let on_disk = disk::read(path)?;
    let Some(text) = on_disk.text.as_deref() else {
        let env: serde_json::Map<String, Value> = keys
            .iter()
            .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
            .collect();
        let mut doc = serde_json::Map::new();
        doc.insert("env".into(), Value::Object(env));
        let mut out = serde_json::to_string_pretty(&Value::Object(doc)).expect("plain values");
        out.push('\n');
        on_disk.write(&out)?;
        return Ok(EnvChange::Written { created: true });
    };
    let doc = Doc::parse_under(text, &["env"])?;
    if !doc.root.is_object() {
        return Err(Skip::Shape("the settings are not a JSON object".into()));
    }
    let env = doc.root.get("env");
    if let Some(e) = env
        && !e.is_object()
    {
        return Err(Skip::Shape("\"env\" is not an object".into()));
    }
    let mut edits = Edits::default();
    let mut missing: Vec<(&str, &str)> = Vec::new();
    for (key, value) in keys {
        match env.and_then(|e| member(e, key)) {
            None => missing.push((key, value)),
            Some((_, node)) => {
                let now = scalar(text, node);
                if now.as_deref() == Some(*value) {
                    continue;
                }
                if !now.as_deref().is_some_and(|n| ours.contains(&n)) {
                    return Err(Skip::Shape(format!(
                        "{key} is set already (yours: sessionpipe does not replace it)"
                    )));
                }
                edits.splice(
                    node.start,
                    node.end,
                    Value::String(value.to_string()).to_string(),
                );
            }
        }
    }
    match env {
        Some(_) if !missing.is_empty() => {
            // One member per pass (two additions into an empty object would
            // splice the same span), re-parsed between.
            let mut out = edits.apply(text);
            for (key, value) in &missing {
                let d = Doc::parse_under(&out, &["env"])?;
                let e = d.root.get("env").expect("env is there");
                let mut one = Edits::default();
                one.add_member(&d, e, key, &Value::String(value.to_string()));
                out = one.apply(&out);
            }
            on_disk.write(&out)?;
            return Ok(EnvChange::Written { created: false });
        }
        Some(_) => {}
        None => {
            let obj: serde_json::Map<String, Value> = missing
                .iter()
                .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
                .collect();
            edits.add_member(&doc, &doc.root, "env", &Value::Object(obj));
        }
    }
    if edits.is_empty() {
        return Ok(EnvChange::Current);
    }
    on_disk.write(&edits.apply(text))?;
    Ok(EnvChange::Written { created: false })
}

/// Takes out each of `keys` whose value is one of `ours`; then an `env` left
/// empty goes when `drop_empty_env` (we added it), and a file left `{}` goes
/// when `created` (we made it). Bytes outside what goes stay as they are.
pub fn remove_env(
    path: &Path,
    keys: &[&str],
    ours: &[&str],
    drop_empty_env: bool,
    created: bool,
) -> Result<EnvChange, Skip> {
    let on_disk = disk::read(path)?;
    let Some(text) = on_disk.text.as_deref() else {
        return Ok(EnvChange::Absent);
    };
    let doc = Doc::parse_under(text, &["env"])?;
    let Some(env) = doc.root.get("env").filter(|e| e.is_object()) else {
        return Ok(EnvChange::Absent);
    };
    let members = env.members();
    let gone: Vec<usize> = members
        .iter()
        .enumerate()
        .filter(|(_, m)| keys.contains(&m.key.as_str()))
        .filter(|(_, m)| scalar(text, &m.value).is_some_and(|v| ours.contains(&v.as_str())))
        .map(|(i, _)| i)
        .collect();
    if gone.is_empty() {
        return Ok(EnvChange::Absent);
    }
    let mut edits = Edits::default();
    if gone.len() == members.len() && drop_empty_env {
        let i = doc
            .root
            .members()
            .iter()
            .position(|m| m.key == "env")
            .expect("env is a member");
        edits.remove_member(&doc.root, i);
    } else {
        // One removal per pass keeps the splices apart (each takes the
        // separator beside it): later members first, re-parsed between.
        let mut out = text.to_string();
        for i in gone.iter().rev() {
            let d = Doc::parse_under(&out, &["env"])?;
            let e = d.root.get("env").expect("still there");
            let mut one = Edits::default();
            one.remove_member(e, *i);
            out = one.apply(&out);
        }
        on_disk.write(&out)?;
        return Ok(EnvChange::Removed);
    }
    let out = edits.apply(text);
    let empty = serde_json::from_str::<Value>(&out)
        .ok()
        .and_then(|v| v.as_object().map(|o| o.is_empty()))
        .unwrap_or(false);
    if created && empty {
        on_disk.remove_or_write(&out)?;
    } else {
        on_disk.write(&out)?;
    }
    Ok(EnvChange::Removed)
}

fn member<'n>(object: &'n Node, key: &str) -> Option<(usize, &'n Node)> {
    object
        .members()
        .iter()
        .enumerate()
        .rev()
        .find(|(_, m)| m.key == key)
        .map(|(i, m)| (i, &m.value))
}

/// A string member's value; `None` for anything else.
fn scalar(text: &str, node: &Node) -> Option<String> {
    if !matches!(node.kind, Kind::Scalar) {
        return None;
    }
    serde_json::from_str::<Value>(&text[node.start..node.end])
        .ok()?
        .as_str()
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEYS: [(&str, &str); 3] = [
        ("ANTHROPIC_BASE_URL", "http://127.0.0.1:4711"),
        ("ANTHROPIC_AUTH_TOKEN", "tok-1"),
        ("_CLAUDE_CODE_ASSUME_FIRST_PARTY_BASE_URL", "1"),
    ];
    const NAMES: [&str; 3] = [
        "ANTHROPIC_BASE_URL",
        "ANTHROPIC_AUTH_TOKEN",
        "_CLAUDE_CODE_ASSUME_FIRST_PARTY_BASE_URL",
    ];
    const OURS: [&str; 3] = ["http://127.0.0.1:4711", "tok-1", "1"];

    /// On, then off, restores `text` byte for byte.
    fn round_trip(text: &str) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        std::fs::write(&path, text).unwrap();
        let had_env = serde_json::from_str::<Value>(text)
            .unwrap()
            .get("env")
            .is_some();
        assert_eq!(
            set_env(&path, &KEYS, &[]).unwrap(),
            EnvChange::Written { created: false }
        );
        let v: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(v["env"]["ANTHROPIC_AUTH_TOKEN"], "tok-1");
        assert_eq!(set_env(&path, &KEYS, &OURS).unwrap(), EnvChange::Current);
        assert_eq!(
            remove_env(&path, &NAMES, &OURS, !had_env, false).unwrap(),
            EnvChange::Removed
        );
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            text,
            "bytes restored"
        );
    }

    #[test]
    fn on_then_off_restores_every_style_of_file() {
        round_trip("{\n  \"model\": \"sonnet\"\n}\n");
        round_trip("{\n\t\"model\": \"sonnet\",\n\t\"hooks\": {}\n}");
        round_trip("{\r\n    \"model\": \"sonnet\"\r\n}\r\n");
        round_trip("{\"model\":\"sonnet\"}");
        round_trip("{\n  \"env\": {\n    \"FOO\": \"bar\"\n  },\n  \"x\": 1\n}\n");
        round_trip("{\n  \"env\": {}\n}\n");
        round_trip("{}\n");
    }

    #[test]
    fn a_file_we_made_goes_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/settings.json");
        assert_eq!(
            set_env(&path, &KEYS, &[]).unwrap(),
            EnvChange::Written { created: true }
        );
        assert_eq!(
            remove_env(&path, &NAMES, &OURS, true, true).unwrap(),
            EnvChange::Removed
        );
        assert!(!path.exists());
        assert_eq!(
            remove_env(&path, &NAMES, &OURS, true, true).unwrap(),
            EnvChange::Absent
        );
    }

    #[test]
    fn the_persons_own_values_are_never_replaced_or_removed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        let text = "{\n  \"env\": {\n    \"ANTHROPIC_BASE_URL\": \"https://gw.example\"\n  }\n}\n";
        std::fs::write(&path, text).unwrap();
        let e = set_env(&path, &KEYS, &OURS).unwrap_err();
        assert!(
            e.to_string().contains("ANTHROPIC_BASE_URL is set already"),
            "{e}"
        );
        assert!(
            !e.to_string().contains("gw.example"),
            "the value is not shown"
        );
        assert_eq!(
            remove_env(&path, &NAMES, &OURS, false, false).unwrap(),
            EnvChange::Absent
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    }

    #[test]
    fn a_new_port_replaces_our_old_values_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        std::fs::write(&path, "{\n  \"env\": {\n    \"FOO\": \"1\"\n  }\n}\n").unwrap();
        set_env(&path, &KEYS, &[]).unwrap();
        let newer = [
            ("ANTHROPIC_BASE_URL", "http://127.0.0.1:5000"),
            ("ANTHROPIC_AUTH_TOKEN", "tok-2"),
            ("_CLAUDE_CODE_ASSUME_FIRST_PARTY_BASE_URL", "1"),
        ];
        assert_eq!(
            set_env(&path, &newer, &OURS).unwrap(),
            EnvChange::Written { created: false }
        );
        let v: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(v["env"]["ANTHROPIC_BASE_URL"], "http://127.0.0.1:5000");
        assert_eq!(v["env"]["FOO"], "1");
        let ours2 = ["http://127.0.0.1:5000", "tok-2", "1"];
        remove_env(&path, &NAMES, &ours2, false, false).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\n  \"env\": {\n    \"FOO\": \"1\"\n  }\n}\n"
        );
    }

    #[test]
    fn jsonc_and_read_only_files_are_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        let jsonc = "{\n  // mine\n  \"model\": \"x\",\n}\n";
        std::fs::write(&path, jsonc).unwrap();
        assert!(matches!(
            set_env(&path, &KEYS, &[]),
            Err(Skip::NotPlainJson { .. })
        ));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), jsonc);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::write(&path, "{}").unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
            assert!(matches!(
                set_env(&path, &KEYS, &[]),
                Err(Skip::ReadOnly { .. })
            ));
            assert_eq!(std::fs::read_to_string(&path).unwrap(), "{}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_linked_file_is_edited_through_its_link() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("dots-settings.json");
        let text = "{\n  \"model\": \"x\"\n}\n";
        std::fs::write(&real, text).unwrap();
        let link = dir.path().join("settings.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        set_env(&link, &KEYS, &[]).unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert!(std::fs::read_to_string(&real).unwrap().contains("tok-1"));
        remove_env(&link, &NAMES, &OURS, true, false).unwrap();
        assert_eq!(std::fs::read_to_string(&real).unwrap(), text);
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
    }
}
