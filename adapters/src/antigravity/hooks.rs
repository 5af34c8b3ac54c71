//! Antigravity's hooks file, `~/.gemini/config/hooks.json`, whose top-level keys
//! are hook *names*: ours is one named entry, `sessionpipe`, written and removed
//! by `jsonedit` so that every other byte of the file stays as it was.
//!
//! Must never register `PreToolUse`: Antigravity reads a PreToolUse answer
//! without a `decision` as a deny, so our `{}` would block every tool. An entry
//! left by an older version is reported `outdated` and removed by `install`; the
//! hook answers one still loaded with an `ask` (`hook/src/stdout_rule.rs`).

use super::Antigravity;
use harness::install::hooks_json::{command, group};
use harness::install::jsonedit::{Doc, Edits};
use harness::install::{
    ConfigFormat, Ctx, EntryState, HookEvent, HookInstall, HooksLayout, Host, Skip, Target,
};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::path::Path;

/// The hook name our entry is filed under in `hooks.json`.
const ENTRY: &str = "sessionpipe";

/// The events of our entry, in Antigravity's own shapes: the tool event takes a
/// matcher group (`"*"`, every tool), the invocation and stop events a handler
/// list. Timeouts in seconds.
static LAYOUT: HooksLayout = HooksLayout {
    events: Cow::Borrowed(&[
        HookEvent::plain("PreInvocation"),
        HookEvent::plain("PostInvocation"),
        HookEvent::with_matcher("PostToolUse", "*"),
        HookEvent::plain("Stop"),
    ]),
    timeout_s: 5,
    timeout_unit_ms: false,
    handler_name: None,
};

/// Our entry as it should be now.
fn entry(hook_bin: &Path, harness: &str) -> Value {
    let mut m = Map::new();
    m.insert("enabled".into(), Value::Bool(true));
    for e in LAYOUT.events.iter() {
        let g = group(&LAYOUT, e, command(hook_bin, harness, e.name));
        let item = if e.matcher.is_some() {
            g
        } else {
            g["hooks"][0].clone()
        };
        m.insert(e.name.into(), Value::Array(vec![item]));
    }
    Value::Object(m)
}

/// Why the entry in the file is not the one we would write.
fn differences(have: &Value, want: &Value) -> String {
    let mut why = Vec::new();
    let mut rest = have.clone();
    if let Some(obj) = rest.as_object_mut() {
        if obj.remove("PreToolUse").is_some() {
            why.push(
                "a stale PreToolUse hook, which Antigravity reads as a deny (sessionpipe no longer registers it)",
            );
        }
        if obj.get("enabled") == Some(&Value::Bool(false)) {
            why.push("disabled (\"enabled\": false)");
            obj.insert("enabled".into(), Value::Bool(true));
        }
    }
    if rest != *want {
        why.push("from another version or edited");
    }
    why.join(", ")
}

/// `hooks.json`: our named entry among the person's others.
struct AntigravityHooks;

static HOOKS: AntigravityHooks = AntigravityHooks;

/// Read with plain `Doc::parse`, where other formats refuse a doubled key under
/// theirs (`Doc::parse_under`): no span inside our member is ever followed. Every
/// member named `sessionpipe` is ours and is judged and removed whole, its value
/// read by `serde_json`, which keeps the last of a doubled key as the harness
/// does; so two of ours are `outdated` and install leaves one, and a doubled key
/// among the person's hooks is never read nor written.
fn object_doc(text: &str) -> Result<Doc<'_>, Skip> {
    let doc = Doc::parse(text)?;
    if !doc.root.is_object() {
        return Err(Skip::Shape(
            "the file's top level is not a JSON object".into(),
        ));
    }
    Ok(doc)
}

impl ConfigFormat for AntigravityHooks {
    fn judge(&self, text: &str, ctx: &Ctx<'_>) -> Result<EntryState, Skip> {
        let doc = object_doc(text)?;
        let ours: Vec<_> = doc
            .root
            .members()
            .iter()
            .filter(|m| m.key == ENTRY)
            .collect();
        let [one] = ours.as_slice() else {
            return Ok(match ours.len() {
                0 => EntryState::Missing,
                n => EntryState::Outdated(format!("{n} entries named {ENTRY}")),
            });
        };
        let have: Value = serde_json::from_str(&doc.text[one.value.start..one.value.end])
            .map_err(|e| Skip::Shape(e.to_string()))?;
        let want = entry(ctx.hook_bin, ctx.harness);
        Ok(if have == want {
            EntryState::Current
        } else {
            EntryState::Outdated(differences(&have, &want))
        })
    }

    fn add(&self, text: &str, ctx: &Ctx<'_>) -> Result<String, Skip> {
        let fresh_file = text.trim().is_empty();
        let base = if fresh_file { "{}" } else { text };
        let doc = object_doc(base)?;
        let mut edits = Edits::default();
        edits.add_member(&doc, &doc.root, ENTRY, &entry(ctx.hook_bin, ctx.harness));
        let added = edits.apply(base);
        Ok(if fresh_file {
            format!("{added}\n")
        } else {
            added
        })
    }

    /// Removes every member named `sessionpipe` (one per pass: two removals in
    /// one object would splice overlapping separators). Nothing else is ours.
    fn remove(&self, text: &str, _original: Option<&str>, _ctx: &Ctx<'_>) -> Result<String, Skip> {
        let mut text = text.to_string();
        loop {
            let doc = Doc::parse(&text)?;
            let Some(i) = doc.root.members().iter().position(|m| m.key == ENTRY) else {
                return Ok(text);
            };
            let mut edits = Edits::default();
            edits.remove_member(&doc.root, i);
            text = edits.apply(&text);
        }
    }
}

impl HookInstall for Antigravity {
    /// `~/.gemini/config/hooks.json`. Found when Antigravity has left a trace in
    /// `~/.gemini` (its `config` folder, or a data dir `antigravity`,
    /// `antigravity-cli`, `antigravity-ide`, …) or its CLI (`agy`) or app launcher
    /// (`antigravity`) is on `PATH`. `~/.gemini` alone is Gemini CLI's too, and
    /// is no sign of Antigravity.
    fn looked_for(&self, host: &Host) -> Vec<String> {
        vec![
            host.show(&host.home.join(".gemini/config")),
            host.show(&host.home.join(".gemini/antigravity*")),
            "`agy` or `antigravity` on PATH".into(),
        ]
    }

    fn targets(&self, host: &Host) -> Vec<Target> {
        let gemini = host.home.join(".gemini");
        let config = gemini.join("config");
        let data_dir = std::fs::read_dir(&gemini).is_ok_and(|entries| {
            entries.flatten().any(|e| {
                e.file_name().to_string_lossy().starts_with("antigravity") && e.path().is_dir()
            })
        });
        let found =
            config.is_dir() || data_dir || host.on_path("agy") || host.on_path("antigravity");
        if !found {
            return Vec::new();
        }
        vec![Target::shared(config.join("hooks.json"), &HOOKS)]
    }

    fn note(&self) -> Option<&'static str> {
        Some(
            "Antigravity reads its hooks when a conversation starts: conversations already open report nothing until a new one",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const NAME: &str = "antigravity";

    fn ctx() -> Ctx<'static> {
        Ctx {
            harness: NAME,
            hook_bin: Path::new("/opt/sp/bin/sessionpipe-hook"),
        }
    }

    const THEIRS: &str = "{\r\n\t\"my-linter\": {\r\n\t\t\"PostToolUse\": [\r\n\t\t\t{\"matcher\": \"run_command\", \"hooks\": [{\"type\": \"command\", \"command\": \"./lint.sh\"}]}\r\n\t\t]\r\n\t},\r\n\t\"reminder\": {\"PreInvocation\": [{\"type\": \"command\", \"command\": \"./r.sh\"}]}\r\n}";

    #[test]
    fn our_entry_is_added_judged_and_removed_without_touching_theirs() {
        assert_eq!(HOOKS.judge(THEIRS, &ctx()), Ok(EntryState::Missing));
        let added = HOOKS.add(THEIRS, &ctx()).unwrap();
        assert!(added.starts_with(&THEIRS[..THEIRS.len() - 3]));
        assert!(!added.replace("\r\n", "").contains('\n'), "CRLF kept");
        let v: Value = serde_json::from_str(&added).unwrap();
        let ours = &v[ENTRY];
        assert_eq!(ours, &entry(ctx().hook_bin, NAME));
        assert_eq!(ours["enabled"], true);
        assert_eq!(ours["PostToolUse"][0]["matcher"], "*");
        assert_eq!(
            ours["Stop"][0],
            json!({"type": "command", "command": "\"/opt/sp/bin/sessionpipe-hook\" antigravity Stop", "timeout": 5})
        );
        assert!(ours.get("PreToolUse").is_none());
        assert_eq!(HOOKS.judge(&added, &ctx()), Ok(EntryState::Current));
        assert_eq!(HOOKS.remove(&added, None, &ctx()).unwrap(), THEIRS);

        let fresh = HOOKS.add("", &ctx()).unwrap();
        assert!(fresh.starts_with("{\n  \"sessionpipe\": {\n    \"enabled\": true,"));
        assert_eq!(HOOKS.remove(&fresh, None, &ctx()).unwrap(), "{}\n");
    }

    #[test]
    fn a_stale_pre_tool_use_or_an_edit_is_outdated_and_named() {
        let mut stale = entry(ctx().hook_bin, NAME);
        stale["PreToolUse"] =
            json!([{"matcher": "*", "hooks": [{"type": "command", "command": "x"}]}]);
        let text = json!({ "other": {}, ENTRY: stale }).to_string();
        let Ok(EntryState::Outdated(why)) = HOOKS.judge(&text, &ctx()) else {
            panic!()
        };
        assert!(why.starts_with("a stale PreToolUse hook"), "{why}");
        assert!(!why.contains("edited"), "{why}");
        let cleaned = HOOKS.remove(&text, None, &ctx()).unwrap();
        assert_eq!(cleaned, "{\"other\":{}}");
        assert!(!HOOKS.add(&cleaned, &ctx()).unwrap().contains("PreToolUse"));

        let mut off = entry(Path::new("/old/sessionpipe-hook"), NAME);
        off["enabled"] = json!(false);
        let Ok(EntryState::Outdated(why)) = HOOKS.judge(&json!({ ENTRY: off }).to_string(), &ctx())
        else {
            panic!()
        };
        assert_eq!(
            why,
            "disabled (\"enabled\": false), from another version or edited"
        );
        let twice = format!("{{\"{ENTRY}\": {{}}, \"{ENTRY}\": {{}}}}");
        assert_eq!(
            HOOKS.judge(&twice, &ctx()),
            Ok(EntryState::Outdated("2 entries named sessionpipe".into()))
        );
        assert_eq!(HOOKS.remove(&twice, None, &ctx()).unwrap(), "{}");
    }

    #[test]
    fn files_it_cannot_edit_are_refused() {
        assert!(HOOKS.judge("{\n  // mine\n}", &ctx()).is_err());
        assert!(HOOKS.judge("[]", &ctx()).is_err());
        assert!(HOOKS.add("[]", &ctx()).is_err());
    }

    #[test]
    fn found_by_its_traces_not_by_gemini_cli_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().to_path_buf();
        let host = |path: &str| Host {
            home: home.clone(),
            vars: [("PATH".to_string(), path.to_string())].into(),
        };
        std::fs::create_dir_all(home.join(".gemini")).unwrap();
        std::fs::write(home.join(".gemini/settings.json"), "{}").unwrap();
        assert!(Antigravity.targets(&host("")).is_empty());
        std::fs::create_dir_all(home.join(".gemini/antigravity-cli")).unwrap();
        assert_eq!(
            Antigravity.targets(&host(""))[0].path,
            home.join(".gemini/config/hooks.json")
        );
        std::fs::remove_dir(home.join(".gemini/antigravity-cli")).unwrap();
        let bin = home.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(bin.join("agy"), "").unwrap();
        assert_eq!(Antigravity.targets(&host(bin.to_str().unwrap())).len(), 1);
    }
}
