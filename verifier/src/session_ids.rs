//! Each harness's rule for its own session ids: CONTROL.md §3.1 says a
//! command's `session` id "follows its adapter's rule", and ADAPTERS.md's
//! rows say which id each harness's payloads carry. A command whose id breaks
//! its harness's rule names a session that cannot exist, and is refused
//! `bad_session` before any signature is looked at, by a machine and by a
//! receiver's early word alike (both run this crate).
//!
//! Owns the rules only; the `<harness>:<id>` form (and the reserved
//! `sessionpipe:keys`) is `command`'s. No rule is tighter than the harness's
//! own: every id recorded from a real harness (the shared and the project's
//! conformance fixtures, the ACP recordings) passes, and so does a name a
//! `start` gave a session (a UUID: control keeps it as the name of a session
//! whose harness picks its own id, PROTOCOL-NOTES §6 `start`).

/// Whether `id` (already of the protocol's form, 1–128 of `[A-Za-z0-9._:-]`)
/// follows `harness`'s rule.
pub fn follows_rule(harness: &str, id: &str) -> bool {
    match harness {
        // UUIDs, as their payloads carry them (v4 from Claude Code, Gemini
        // CLI, Copilot CLI and Droid; v7 from Codex and Grok Build; an
        // Antigravity conversation's), and a start's name is one too.
        "claude-code" | "codex" | "gemini-cli" | "antigravity" | "grok-build" | "copilot-cli"
        | "droid" => is_uuid(id),
        // A word-word slug (`frill-vulture`, "not a UUID"), or the UUID a
        // start named a session Devin then named itself.
        "devin" => is_devin_slug(id) || is_uuid(id),
        // `ses_` and OpenCode's own characters, or a start's name.
        "opencode" => is_opencode_id(id) || is_uuid(id),
        // Cursor's and Kiro's rows are "recording pending", not yet
        // normative, so they name no rule to hold an id to. An agent only the
        // ACP table lists has no id of its own in a command: its sessions are
        // named by the start that made them, with any name the protocol's
        // form allows. And a harness this version does not know is not the
        // verifier's to judge: names are additive (PROTOCOL.md: other
        // `[a-z0-9-]` names allowed), and a command for a harness the machine
        // cannot serve is the machine's `unsupported`, not a refusal here
        // (PROTOCOL-NOTES §8) — refusing it would make an older verifier call
        // a newer device's command malformed.
        _ => true,
    }
}

/// A UUID in its 8-4-4-4-12 hex form, either case (RFC 9562 reads both).
pub fn is_uuid(id: &str) -> bool {
    let b = id.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// Two or more words of lowercase letters and digits, each joined by one
/// hyphen (Devin's `frill-vulture`, `fluttering-steam`).
fn is_devin_slug(id: &str) -> bool {
    let mut words = 0;
    for word in id.split('-') {
        if word.is_empty()
            || !word
                .bytes()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        {
            return false;
        }
        words += 1;
    }
    words >= 2
}

/// `ses_` then letters and digits: OpenCode's session ids (`ses_` + 12 hex
/// digits of time + 14 base62 characters in every one recorded; the count is
/// OpenCode's business, so it is not held here).
fn is_opencode_id(id: &str) -> bool {
    id.strip_prefix("ses_")
        .is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|c| c.is_ascii_alphanumeric()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;
    use std::path::{Path, PathBuf};

    #[test]
    fn uuids() {
        for ok in [
            "8c132906-8c3f-4814-870a-afc3d05e1d2e",
            "01a0e5c5-5b2f-7c60-9287-31f9f0aa9f65",
            "8C132906-8C3F-4814-870A-AFC3D05E1D2E",
        ] {
            assert!(is_uuid(ok), "{ok}");
        }
        for bad in [
            "not-a-uuid",
            "8c132906-8c3f-4814-870a-afc3d05e1d2",
            "8c132906-8c3f-4814-870a-afc3d05e1d2e0",
            "8c1329068c3f4814870aafc3d05e1d2e",
            "8c132906_8c3f_4814_870a_afc3d05e1d2e",
            "8c132906-8c3f-4814-870a-afc3d05e1d2g",
            "{8c132906-8c3f-4814-870a-afc3d05e1d2}",
            "834104cf-a9d5",
        ] {
            assert!(!is_uuid(bad), "{bad}");
        }
    }

    #[test]
    fn each_harness_holds_its_own_rule() {
        let uuid = "8c132906-8c3f-4814-870a-afc3d05e1d2e";
        for h in [
            "claude-code",
            "codex",
            "gemini-cli",
            "antigravity",
            "grok-build",
            "copilot-cli",
            "droid",
        ] {
            assert!(follows_rule(h, uuid), "{h}");
            for bad in [
                "not-a-uuid",
                "s1",
                "frill-vulture",
                "ses_dc91f06baffeU4tc00OCOuQ87R",
            ] {
                assert!(!follows_rule(h, bad), "{h}:{bad}");
            }
        }
        for ok in ["frill-vulture", "fluttering-steam", "quiet-otter-2", uuid] {
            assert!(follows_rule("devin", ok), "{ok}");
        }
        for bad in [
            "vulture",
            "frill--vulture",
            "-frill",
            "Frill-Vulture",
            "frill_vulture",
            "a.b",
        ] {
            assert!(!follows_rule("devin", bad), "{bad}");
        }
        for ok in ["ses_dc91f06baffeU4tc00OCOuQ87R", uuid] {
            assert!(follows_rule("opencode", ok), "{ok}");
        }
        for bad in [
            "ses_",
            "ses-dc91f06baffe",
            "dc91f06baffeU4tc00OCOuQ87R",
            "ses_a.b",
            "s-1",
        ] {
            assert!(!follows_rule("opencode", bad), "{bad}");
        }
        // No rule: rows not yet normative, ACP-only agents, names unknown here.
        for h in [
            "cursor",
            "kiro",
            "goose",
            "qwen-code",
            "conformance",
            "a-new-harness",
        ] {
            assert!(follows_rule(h, "conf-1.x:y"), "{h}");
        }
    }

    /// Every JSON file under `dir`, recursively.
    fn files(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                files(&p, ext, out);
            } else if p.extension().is_some_and(|x| x == ext) {
                out.push(p);
            }
        }
    }

    /// Every session id a harness wrote in a recorded fixture: the payload's
    /// own (`session_id`, `sessionId`, `conversationId`, OpenCode's
    /// `properties.sessionID`) and the events' `session.id`.
    fn recorded_ids(doc: &Value) -> Vec<String> {
        let mut ids: Vec<String> = doc["expect"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|e| e.pointer("/session/id").and_then(Value::as_str))
            .map(str::to_string)
            .collect();
        if let Some(payload) = doc
            .pointer("/input/stdin")
            .and_then(Value::as_str)
            .and_then(|s| serde_json::from_str::<Value>(s).ok())
        {
            for at in [
                "/session_id",
                "/sessionId",
                "/conversationId",
                "/conversation_id",
                "/properties/sessionID",
                "/properties/info/sessionID",
            ] {
                if let Some(id) = payload.pointer(at).and_then(Value::as_str) {
                    ids.push(id.to_string());
                }
            }
        }
        ids
    }

    /// A real id recorded from a harness must still pass its rule: the
    /// hook fixtures (the protocol's shared ones when they are beside the
    /// workspace, and the project's) and the agents' own ids in the ACP
    /// recordings.
    #[test]
    fn every_recorded_id_follows_its_harness_rule() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut fixtures = Vec::new();
        for dir in [
            root.join("conformance/harness"),
            root.join("../shared/conformance/harness"),
        ] {
            files(&dir, "json", &mut fixtures);
        }
        let mut checked = 0;
        let mut broken = Vec::new();
        for path in &fixtures {
            let doc: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
            let harness = doc["harness"].as_str().unwrap_or_else(|| {
                path.parent()
                    .unwrap()
                    .file_name()
                    .unwrap()
                    .to_str()
                    .unwrap()
            });
            for id in recorded_ids(&doc) {
                checked += 1;
                if !follows_rule(harness, &id) {
                    broken.push(format!("{}: {harness}:{id}", path.display()));
                }
            }
        }
        let mut recordings = Vec::new();
        files(&root.join("conformance/acp"), "jsonl", &mut recordings);
        for path in &recordings {
            let harness = path
                .parent()
                .unwrap()
                .file_name()
                .unwrap()
                .to_str()
                .unwrap();
            for line in std::fs::read_to_string(path).unwrap().lines() {
                let line: Value = serde_json::from_str(line).unwrap();
                let result = line.pointer("/msg/result/sessionId");
                let params = line.pointer("/msg/params/sessionId");
                for id in [result, params]
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                {
                    checked += 1;
                    if !follows_rule(harness, id) {
                        broken.push(format!("{}: {harness}:{id}", path.display()));
                    }
                }
            }
        }
        assert!(checked > 50, "only {checked} recorded ids found");
        assert!(broken.is_empty(), "{}", broken.join("\n"));
    }
}
