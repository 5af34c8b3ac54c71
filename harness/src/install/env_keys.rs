//! Our keys in the `env` object of a JSON settings file (`pool on|off`:
//! ADAPTERS.md, Claude Code row, Pool), written by the installer's rules: the
//! person's file, symlinks followed and kept, a read-only file refused, text
//! that is not plain JSON skipped, every byte outside our keys kept
//! (`jsonedit`'s splices, so indentation and line endings stay).
//!
//! It owns adding and removing those members and knowing which are ours. It
//! must not decide which files or which keys (the caller's), and never
//! writes over, removes or prints a value the person set: a key of theirs in
//! the way refuses the whole file, naming the key only.
//!
//! `EnvWriter` goes through the installer's ledger: the file's original is
//! kept byte for byte before our first write (DESIGN.md), under its own
//! record (`<path>#env`), apart from the hooks' record of the same file, so
//! either can be undone first without the other's undo taking its entries
//! along. A key is ours when the ledger holds that record and the original
//! had no such key in `env`: a later `on` with a new port or token replaces
//! our old values, and a key the person had before (even with our value)
//! stays theirs. `off` drops an `env` the original did not have once it is
//! empty, removes a file that was not there, and gives back the original's
//! very bytes when nobody but us wrote the file since and what is left reads
//! as the original did.

use super::disk;
use super::format::Skip;
use super::jsonedit::{Doc, Edits, Node};
use super::ledger::{Ledger, LedgerError, sha256_hex};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The root key everything here reads and writes lives under.
const ROOT: &[&str] = &["env"];

/// The harness the ledger's record names.
const HARNESS: &str = "claude-code";

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

/// Says whether a key found in `env`, with its value, is ours.
type Owns<'a> = &'a dyn Fn(&str, &Value) -> bool;

/// The value of `node` in `text`.
fn value_at(text: &str, node: &Node) -> Value {
    serde_json::from_str(&text[node.start..node.end]).unwrap_or(Value::Null)
}

/// The root's `env`, when it is there; refused when it is no object.
fn env_of<'d>(doc: &'d Doc<'_>) -> Result<Option<&'d Node>, Skip> {
    match doc.root.get("env") {
        Some(e) if !e.is_object() => Err(Skip::Shape("\"env\" is not an object".into())),
        e => Ok(e),
    }
}

/// `text` (blank for a new file) with every one of `keys` holding its value;
/// `None` when each does already. A key there with another value is
/// replaced in place when `owns` it, else the file is refused.
fn with_keys(text: &str, keys: &[(&str, &str)], owns: Owns<'_>) -> Result<Option<String>, Skip> {
    let fresh = text.trim().is_empty();
    let base = if fresh { "{}" } else { text };
    let doc = Doc::parse_under(base, ROOT)?;
    if !doc.root.is_object() {
        return Err(Skip::Shape("the settings are not a JSON object".into()));
    }
    let env = env_of(&doc)?;
    let mut replace: Vec<(usize, usize, String)> = Vec::new();
    let mut missing: Vec<(&str, &str)> = Vec::new();
    for &(key, value) in keys {
        let Some(node) = env.and_then(|e| e.get(key)) else {
            missing.push((key, value));
            continue;
        };
        let now = value_at(base, node);
        if now.as_str() == Some(value) {
            continue;
        }
        if !owns(key, &now) {
            // The key only: its value may be a credential of theirs.
            return Err(Skip::Shape(format!(
                "{key} is set already (yours: sessionpipe does not replace it)"
            )));
        }
        replace.push((
            node.start,
            node.end,
            Value::String(value.into()).to_string(),
        ));
    }
    if replace.is_empty() && missing.is_empty() {
        return Ok(None);
    }
    // Values in place, last first so earlier spans stay where they were.
    replace.sort_by_key(|r| std::cmp::Reverse(r.0));
    let mut out = base.to_string();
    for (start, end, with) in replace {
        out.replace_range(start..end, &with);
    }
    if env.is_none() {
        let obj: serde_json::Map<String, Value> = missing
            .iter()
            .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
            .collect();
        let doc = Doc::parse_under(&out, ROOT)?;
        let mut edits = Edits::default();
        edits.add_member(&doc, &doc.root, "env", &Value::Object(obj));
        out = edits.apply(&out);
    } else {
        // One member per pass (two additions into an empty object would
        // splice the same span), re-parsed between.
        for (key, value) in missing {
            let doc = Doc::parse_under(&out, ROOT)?;
            let env = env_of(&doc)?.expect("env was there");
            let mut edits = Edits::default();
            edits.add_member(&doc, env, key, &Value::String(value.into()));
            out = edits.apply(&out);
        }
    }
    if fresh {
        out.push('\n');
    }
    Ok(Some(out))
}

/// `text` without each of `names` that `owns`; then an `env` left empty goes
/// when `drop_empty_env`. `None` when none of ours is there.
fn without_keys(
    text: &str,
    names: &[&str],
    owns: Owns<'_>,
    drop_empty_env: bool,
) -> Result<Option<String>, Skip> {
    if text.trim().is_empty() {
        return Ok(None);
    }
    let doc = Doc::parse_under(text, ROOT)?;
    // No `env` object: nothing of ours can be in it.
    let Some(env) = doc.root.get("env").filter(|e| e.is_object()) else {
        return Ok(None);
    };
    let gone: Vec<String> = env
        .members()
        .iter()
        .filter(|m| names.contains(&m.key.as_str()) && owns(&m.key, &value_at(text, &m.value)))
        .map(|m| m.key.clone())
        .collect();
    if gone.is_empty() {
        return Ok(None);
    }
    // One removal per pass keeps the splices apart (each takes the
    // separator beside it), re-parsed between.
    let mut out = text.to_string();
    for key in &gone {
        let doc = Doc::parse_under(&out, ROOT)?;
        let env = doc.root.get("env").expect("env is still there");
        let i = env
            .members()
            .iter()
            .position(|m| &m.key == key)
            .expect("the key is still there");
        let mut edits = Edits::default();
        edits.remove_member(env, i);
        out = edits.apply(&out);
    }
    if drop_empty_env {
        let doc = Doc::parse_under(&out, ROOT)?;
        let root = doc.root.members();
        if let Some(i) = root
            .iter()
            .position(|m| m.key == "env" && m.value.members().is_empty())
        {
            let mut edits = Edits::default();
            edits.remove_member(&doc.root, i);
            out = edits.apply(&out);
        }
    }
    Ok(Some(out))
}

/// A JSON document's value, a blank text reading as `{}`.
fn json_of(text: &str) -> Option<Value> {
    let body = text.trim_start_matches('\u{feff}');
    if body.trim().is_empty() {
        return Some(Value::Object(Default::default()));
    }
    serde_json::from_str(body).ok()
}

/// True for `{}` (or a blank text): what a file we made holds once ours go.
fn is_empty_object(text: &str) -> bool {
    json_of(text).is_some_and(|v| v.as_object().is_some_and(|o| o.is_empty()))
}

/// The ledger's record of our `env` keys in `path`: its own key, so the
/// hooks' record of the same file (keyed on the path itself) is never
/// touched.
fn record_key(path: &Path) -> PathBuf {
    let mut key = path.as_os_str().to_owned();
    key.push("#env");
    PathBuf::from(key)
}

/// What the ledger knows of a file before our first write.
enum Before {
    /// No record (never written by us, or forgotten): nothing is ours.
    Unknown,
    /// The file was not there.
    Nothing,
    /// It held this.
    Held(Value),
}

impl Before {
    /// A key is ours when we wrote the file and the original had no such key.
    fn lacked(&self, key: &str) -> bool {
        match self {
            Before::Unknown => false,
            Before::Nothing => true,
            Before::Held(v) => v.get("env").and_then(|e| e.get(key)).is_none(),
        }
    }

    fn lacked_env(&self) -> bool {
        match self {
            Before::Unknown => false,
            Before::Nothing => true,
            Before::Held(v) => v.get("env").is_none(),
        }
    }
}

/// Our `env` keys through the installer's ledger (see the module's doc).
/// Load, set or remove in any number of files, then `save`.
pub struct EnvWriter {
    ledger: Ledger,
}

impl EnvWriter {
    pub fn load(state_dir: &Path) -> Result<EnvWriter, LedgerError> {
        Ok(EnvWriter {
            ledger: Ledger::load(state_dir)?,
        })
    }

    /// Writes the ledger when anything in it changed.
    pub fn save(&self) -> Result<(), LedgerError> {
        self.ledger.save()
    }

    fn before(&self, key: &Path) -> Before {
        match self.ledger.original(key) {
            None => Before::Unknown,
            Some(None) => Before::Nothing,
            // A kept copy that no longer reads: nothing is claimed.
            Some(Some(bytes)) => match std::str::from_utf8(&bytes).ok().and_then(json_of) {
                Some(v) => Before::Held(v),
                None => Before::Unknown,
            },
        }
    }

    /// Sets `keys` in the root's `env` of `path`, keeping the file's original
    /// before our first write to it.
    pub fn set(&mut self, path: &Path, keys: &[(&str, &str)]) -> Result<EnvChange, Skip> {
        let on_disk = disk::read(path)?;
        let key = record_key(path);
        let before = self.before(&key);
        let owns = |k: &str, _: &Value| before.lacked(k);
        let current = on_disk.text.as_deref();
        let Some(out) = with_keys(current.unwrap_or(""), keys, &owns)? else {
            return Ok(EnvChange::Current);
        };
        // Refused before anything is kept: a read-only file gets no record.
        on_disk.writable()?;
        self.ledger
            .keep_original(HARNESS, &key, current.map(str::as_bytes))
            .map_err(|e| Skip::Unwritable(e.to_string()))?;
        on_disk.write(&out)?;
        self.ledger.set_written(&key, out.as_bytes());
        Ok(EnvChange::Written {
            created: current.is_none(),
        })
    }

    /// Takes our `names` out of `path`'s `env` (see the module's doc for
    /// what else goes and when the original's bytes come back). Called with
    /// every name `set` wrote: the record is forgotten afterwards.
    pub fn remove(&mut self, path: &Path, names: &[&str]) -> Result<EnvChange, Skip> {
        let on_disk = disk::read(path)?;
        let key = record_key(path);
        let before = self.before(&key);
        let owns = |k: &str, _: &Value| before.lacked(k);
        let text = on_disk.text.as_deref().unwrap_or("");
        let Some(removed) = without_keys(text, names, &owns, before.lacked_env())? else {
            // None of ours is there (taken out by hand, or never written).
            self.ledger.forget(&key);
            return Ok(EnvChange::Absent);
        };
        on_disk.writable()?;
        let untouched = self
            .ledger
            .record(&key)
            .is_some_and(|r| r.written == sha256_hex(text.as_bytes()));
        let original = self
            .ledger
            .original(&key)
            .map(|o| o.and_then(|b| String::from_utf8(b).ok()));
        match (&before, original) {
            // Nobody wrote it since we did and it reads as it did: its bytes.
            (Before::Held(was), Some(Some(bytes)))
                if untouched && json_of(&removed).as_ref() == Some(was) =>
            {
                on_disk.write(&bytes)?
            }
            // We made it; through a link only our keys go (`remove_or_write`).
            (Before::Nothing, _) if is_empty_object(&removed) => {
                on_disk.remove_or_write(&removed)?
            }
            _ => on_disk.write(&removed)?,
        }
        self.ledger.forget(&key);
        Ok(EnvChange::Removed)
    }
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
    const NEWER: [(&str, &str); 3] = [
        ("ANTHROPIC_BASE_URL", "http://127.0.0.1:5000"),
        ("ANTHROPIC_AUTH_TOKEN", "tok-2"),
        ("_CLAUDE_CODE_ASSUME_FIRST_PARTY_BASE_URL", "1"),
    ];

    // ---- through the ledger ----

    /// A config dir and a state dir, in a fresh temporary folder.
    struct Scene {
        _tmp: tempfile::TempDir,
        state: PathBuf,
        file: PathBuf,
    }

    fn scene() -> Scene {
        let tmp = tempfile::tempdir().unwrap();
        Scene {
            state: tmp.path().join("state"),
            file: tmp.path().join("claude/settings.json"),
            _tmp: tmp,
        }
    }

    impl Scene {
        fn writer(&self) -> EnvWriter {
            EnvWriter::load(&self.state).unwrap()
        }
        fn put(&self, text: &str) {
            std::fs::create_dir_all(self.file.parent().unwrap()).unwrap();
            std::fs::write(&self.file, text).unwrap();
        }
        fn read(&self) -> String {
            std::fs::read_to_string(&self.file).unwrap()
        }
        fn env(&self) -> Value {
            json_of(&self.read()).unwrap()["env"].clone()
        }
        /// What is left in the state dir's backups.
        fn backups(&self) -> usize {
            std::fs::read_dir(self.state.join("backups"))
                .map(|d| d.count())
                .unwrap_or(0)
        }
    }

    #[test]
    fn on_then_off_gives_back_every_files_bytes_through_the_ledger() {
        for original in [
            "{\n  \"model\": \"sonnet\"\n}\n",
            "{\n\t\"model\": \"sonnet\",\n\t\"hooks\": {}\n}\n",
            "{\r\n  \"model\": \"sonnet\",\r\n  \"x\": [1]\r\n}\r\n",
            "{\n  \"model\": \"sonnet\"\n}",
            "{\"model\":\"sonnet\"}",
            "{\n  \"env\": {\n    \"FOO\": \"bar\"\n  },\n  \"x\": 1\n}\n",
            "{\n  \"env\": {\"FOO\": \"bar\"}\n}\n",
            "{\n  \"env\": {}\n}\n",
            "{}",
            "\u{feff}{\n  \"a\": 1\n}\n",
        ] {
            let s = scene();
            s.put(original);
            let mut w = s.writer();
            assert_eq!(
                w.set(&s.file, &KEYS).unwrap(),
                EnvChange::Written { created: false },
                "{original:?}"
            );
            let on = s.read();
            assert_eq!(s.env()["ANTHROPIC_BASE_URL"], "http://127.0.0.1:4711");
            assert_eq!(s.env()["ANTHROPIC_AUTH_TOKEN"], "tok-1");
            assert_eq!(s.env()["_CLAUDE_CODE_ASSUME_FIRST_PARTY_BASE_URL"], "1");
            // Written in the file's own style.
            if original.contains("\r\n") {
                assert!(!on.replace("\r\n", "").contains('\n'), "{on:?}");
            }
            if original.contains('\t') {
                assert!(on.contains("\n\t\t\"ANTHROPIC_AUTH_TOKEN\""), "{on:?}");
            }
            assert_eq!(on.ends_with('\n'), original.ends_with('\n'), "{on:?}");
            // Every byte of the original is still there, in order.
            let mut rest = on.as_str();
            for c in original.chars() {
                let at = rest.find(c).unwrap_or_else(|| panic!("{c:?} lost: {on:?}"));
                rest = &rest[at + c.len_utf8()..];
            }

            assert_eq!(w.set(&s.file, &KEYS).unwrap(), EnvChange::Current);
            w.save().unwrap();
            // A later `on` (another run) with a new port and token: ours still.
            let mut w = s.writer();
            assert_eq!(
                w.set(&s.file, &NEWER).unwrap(),
                EnvChange::Written { created: false }
            );
            assert_eq!(s.env()["ANTHROPIC_BASE_URL"], "http://127.0.0.1:5000");
            assert_eq!(s.env()["ANTHROPIC_AUTH_TOKEN"], "tok-2");
            assert_eq!(s.backups(), 1, "the original, kept once");
            w.save().unwrap();

            let mut w = s.writer();
            assert_eq!(w.remove(&s.file, &NAMES).unwrap(), EnvChange::Removed);
            assert_eq!(s.read(), original, "bytes given back");
            assert_eq!(w.remove(&s.file, &NAMES).unwrap(), EnvChange::Absent);
            w.save().unwrap();
            assert_eq!(s.backups(), 0, "the record and its copy forgotten");
            assert!(s.writer().ledger.record(&record_key(&s.file)).is_none());
        }
    }

    #[test]
    fn a_file_that_was_not_there_is_made_and_goes_again() {
        for blank in [None, Some(""), Some("\n")] {
            let s = scene();
            if let Some(b) = blank {
                s.put(b);
            }
            let mut w = s.writer();
            assert_eq!(
                w.set(&s.file, &KEYS).unwrap(),
                EnvChange::Written {
                    created: blank.is_none()
                }
            );
            assert!(
                s.read()
                    .starts_with("{\n  \"env\": {\n    \"ANTHROPIC_BASE_URL\": ")
            );
            assert!(s.read().ends_with("\n  }\n}\n"));
            assert_eq!(w.remove(&s.file, &NAMES).unwrap(), EnvChange::Removed);
            match blank {
                None => assert!(!s.file.exists(), "the file we made is gone"),
                Some(b) => assert_eq!(s.read(), b),
            }
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_symlinked_file_stays_a_link_and_its_target_is_edited() {
        let s = scene();
        let dots = s.state.parent().unwrap().join("dots");
        std::fs::create_dir_all(&dots).unwrap();
        let real = dots.join("settings.json");
        let original = "{\n    \"model\": \"opus\"\n}\n";
        std::fs::write(&real, original).unwrap();
        std::fs::create_dir_all(s.file.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink("../dots/settings.json", &s.file).unwrap();
        let is_link = || {
            std::fs::symlink_metadata(&s.file)
                .unwrap()
                .file_type()
                .is_symlink()
        };
        let mut w = s.writer();
        assert_eq!(
            w.set(&s.file, &KEYS).unwrap(),
            EnvChange::Written { created: false }
        );
        assert!(is_link());
        assert!(std::fs::read_to_string(&real).unwrap().contains("tok-1"));
        assert_eq!(w.remove(&s.file, &NAMES).unwrap(), EnvChange::Removed);
        assert!(is_link());
        assert_eq!(
            std::fs::read_link(&s.file).unwrap(),
            Path::new("../dots/settings.json")
        );
        assert_eq!(std::fs::read_to_string(&real).unwrap(), original);
    }

    #[cfg(unix)]
    #[test]
    fn a_read_only_file_is_refused_and_untouched() {
        use std::os::unix::fs::PermissionsExt;
        let s = scene();
        let original = "{\n  \"model\": \"x\"\n}\n";
        s.put(original);
        let ro =
            || std::fs::set_permissions(&s.file, std::fs::Permissions::from_mode(0o444)).unwrap();
        ro();
        let mut w = s.writer();
        let e = w.set(&s.file, &KEYS).unwrap_err();
        assert_eq!(e, Skip::ReadOnly { mode: 0o444 });
        assert!(e.to_string().starts_with("read-only"), "{e}");
        assert_eq!(s.read(), original);
        assert!(
            w.ledger.record(&record_key(&s.file)).is_none(),
            "nothing kept"
        );

        // Made read-only after `on`: `off` is refused too, and says why.
        std::fs::set_permissions(&s.file, std::fs::Permissions::from_mode(0o644)).unwrap();
        w.set(&s.file, &KEYS).unwrap();
        let on = s.read();
        ro();
        assert!(matches!(
            w.remove(&s.file, &NAMES),
            Err(Skip::ReadOnly { .. })
        ));
        assert_eq!(s.read(), on);
        assert_eq!(w.set(&s.file, &KEYS).unwrap(), EnvChange::Current);
    }

    #[test]
    fn a_jsonc_file_is_skipped_and_untouched() {
        let s = scene();
        let jsonc = "{\n  // mine\n  \"model\": \"x\",\n}\n";
        s.put(jsonc);
        let mut w = s.writer();
        let e = w.set(&s.file, &KEYS).unwrap_err();
        assert!(matches!(e, Skip::NotPlainJson { line: 2, .. }), "{e}");
        assert!(matches!(
            w.remove(&s.file, &NAMES),
            Err(Skip::NotPlainJson { .. })
        ));
        assert_eq!(s.read(), jsonc);
        for odd in ["[1]", "{\"env\": [\"A=1\"]}"] {
            s.put(odd);
            assert!(
                matches!(w.set(&s.file, &KEYS), Err(Skip::Shape(_))),
                "{odd}"
            );
            assert_eq!(s.read(), odd);
        }
    }

    #[test]
    fn the_persons_own_base_url_or_token_is_never_written_over() {
        for (key, theirs) in [
            ("ANTHROPIC_BASE_URL", "https://gw.example.com/v1"),
            ("ANTHROPIC_AUTH_TOKEN", "sk-theirs-123"),
            // Even our own value: it was theirs before we came.
            ("ANTHROPIC_AUTH_TOKEN", "tok-2"),
        ] {
            let s = scene();
            let original = format!("{{\n  \"env\": {{\n    \"{key}\": \"{theirs}\"\n  }}\n}}\n");
            s.put(&original);
            let mut w = s.writer();
            let e = w.set(&s.file, &KEYS).unwrap_err();
            assert!(matches!(e, Skip::Shape(_)), "{e}");
            assert!(
                e.to_string().contains(&format!("{key} is set already")),
                "{e}"
            );
            assert!(
                !e.to_string().contains(theirs),
                "the value is never shown: {e}"
            );
            assert_eq!(s.read(), original);
            assert_eq!(w.remove(&s.file, &NAMES).unwrap(), EnvChange::Absent);
            assert_eq!(s.read(), original);
            if theirs == "tok-2" {
                // Their key happens to hold our value: current, and kept at `off`.
                let same = [KEYS[0], ("ANTHROPIC_AUTH_TOKEN", "tok-2"), KEYS[2]];
                assert_eq!(
                    w.set(&s.file, &same).unwrap(),
                    EnvChange::Written { created: false }
                );
                assert_eq!(w.remove(&s.file, &NAMES).unwrap(), EnvChange::Removed);
                assert_eq!(s.read(), original);
            }
        }
    }

    #[test]
    fn a_key_the_person_had_stays_and_edits_made_since_are_kept() {
        // Theirs before `on`: `off` leaves it.
        let s = scene();
        let original =
            "{\n  \"env\": {\n    \"_CLAUDE_CODE_ASSUME_FIRST_PARTY_BASE_URL\": \"1\"\n  }\n}\n";
        s.put(original);
        let mut w = s.writer();
        assert_eq!(
            w.set(&s.file, &KEYS).unwrap(),
            EnvChange::Written { created: false }
        );
        assert_eq!(w.remove(&s.file, &NAMES).unwrap(), EnvChange::Removed);
        assert_eq!(s.read(), original);

        // Written since by someone else: their edits stay, ours go, and an
        // `env` we made goes once empty.
        let s = scene();
        let original = "{\n  \"model\": \"x\"\n}\n";
        s.put(original);
        let mut w = s.writer();
        w.set(&s.file, &KEYS).unwrap();
        s.put(&s.read().replace("\"model\": \"x\"", "\"model\": \"y\""));
        assert_eq!(w.remove(&s.file, &NAMES).unwrap(), EnvChange::Removed);
        assert_eq!(s.read(), "{\n  \"model\": \"y\"\n}\n");

        // A key they added to our `env` keeps it.
        let s = scene();
        s.put(original);
        let mut w = s.writer();
        w.set(&s.file, &KEYS).unwrap();
        s.put(&s.read().replace(
            "\"_CLAUDE_CODE_ASSUME_FIRST_PARTY_BASE_URL\": \"1\"",
            "\"_CLAUDE_CODE_ASSUME_FIRST_PARTY_BASE_URL\": \"1\",\n    \"FOO\": \"bar\"",
        ));
        assert_eq!(w.remove(&s.file, &NAMES).unwrap(), EnvChange::Removed);
        assert_eq!(
            s.read(),
            "{\n  \"model\": \"x\",\n  \"env\": {\n    \"FOO\": \"bar\"\n  }\n}\n"
        );

        // Our keys taken out by hand: nothing to do, and the record goes.
        let s = scene();
        s.put(original);
        let mut w = s.writer();
        w.set(&s.file, &KEYS).unwrap();
        s.put(original);
        assert_eq!(w.remove(&s.file, &NAMES).unwrap(), EnvChange::Absent);
        assert!(w.ledger.record(&record_key(&s.file)).is_none());
        assert_eq!(s.read(), original);
    }

    #[test]
    fn the_hooks_and_the_pool_in_one_file_each_undo_only_their_own() {
        use crate::install::scratch::Scratch;
        use crate::install::{ClaudeHooks, FileState, HookEvent, HooksLayout};
        use std::borrow::Cow;
        static HOOKS: ClaudeHooks = ClaudeHooks {
            layout: HooksLayout {
                events: Cow::Borrowed(&[HookEvent::plain("Stop")]),
                timeout_s: 5,
                timeout_unit_ms: false,
                handler_name: None,
            },
            accepted_events: None,
        };
        let bin = Path::new("/opt/sp/bin/sessionpipe-hook");
        let original = "{\n  \"model\": \"opus\"\n}\n";
        for pool_first in [true, false] {
            for pool_off_first in [true, false] {
                let s = Scratch::new("settings.json", original, &HOOKS);
                let installer = s.installer(bin);
                let pool_on = || {
                    let mut w = EnvWriter::load(&s.state).unwrap();
                    assert!(matches!(
                        w.set(&s.file, &KEYS),
                        Ok(EnvChange::Written { .. })
                    ));
                    w.save().unwrap();
                };
                let pool_off = || {
                    let mut w = EnvWriter::load(&s.state).unwrap();
                    assert_eq!(w.remove(&s.file, &NAMES).unwrap(), EnvChange::Removed);
                    w.save().unwrap();
                };
                let hooks_on = || {
                    let (r, _) = installer.install("claude-code", &s).unwrap();
                    assert_eq!(r.files[0].state, FileState::Installed);
                };
                let hooks_off = || {
                    let r = installer.uninstall("claude-code", &s).unwrap();
                    assert_eq!(r.files[0].state, FileState::Removed);
                };
                if pool_first {
                    pool_on();
                    hooks_on();
                } else {
                    hooks_on();
                    pool_on();
                }
                let both = s.read();
                assert!(both.contains("tok-1") && both.contains("sessionpipe-hook"));
                let case = format!("pool first {pool_first}, pool off first {pool_off_first}");
                if pool_off_first {
                    pool_off();
                    assert!(!s.read().contains("tok-1"), "{case}");
                    assert!(s.read().contains("sessionpipe-hook"), "{case}");
                    hooks_off();
                } else {
                    hooks_off();
                    assert!(s.read().contains("tok-1"), "{case}: the pool's keys stay");
                    assert!(!s.read().contains("sessionpipe-hook"), "{case}");
                    pool_off();
                }
                assert_eq!(s.read(), original, "{case}");
            }
        }
    }
}
