//! What the hook prints, per harness. Nothing, except where a harness parses stdout.
//!
//! Kept as a table so that adding a harness that parses stdout is one line here.

/// The exact bytes to print for `harness` / `event`, or `None` for silence.
pub fn answer(harness: &str, event: &str) -> Option<&'static str> {
    match (harness, event) {
        // Antigravity reads non-JSON as a deny and every registered hook must answer.
        // A PreToolUse answer must carry a decision (`{}` is a deny); sessionpipe no
        // longer registers it, so a stale entry still loaded asks the person.
        ("antigravity", "PreToolUse") => Some(
            "{\"decision\":\"ask\",\"reason\":\"sessionpipe no longer registers PreToolUse; run `sessionpipe install` to remove this stale hook\"}\n",
        ),
        ("antigravity", _) => Some("{}\n"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::answer;

    #[test]
    fn silent_for_harnesses_that_do_not_parse_stdout() {
        for h in [
            "claude-code",
            "codex",
            "gemini-cli",
            "devin",
            "grok-build",
            "",
        ] {
            assert_eq!(answer(h, "Stop"), None, "{h}");
        }
    }

    #[test]
    fn antigravity_gets_json() {
        assert_eq!(answer("antigravity", "Stop"), Some("{}\n"));
        assert!(
            answer("antigravity", "PreToolUse")
                .unwrap()
                .contains("\"decision\":\"ask\"")
        );
    }
}
