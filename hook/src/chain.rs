//! Codex's notify chain. `config.toml` holds one `notify` argv, so when the person
//! already had one (Codex Computer Use writes one), sessionpipe's entry carries it
//! as `--previous-notify <that argv as JSON>` and this module runs it too.
//!
//! The call is `<harness> <event> --previous-notify <JSON> <Codex's JSON>`: the
//! previous program runs with Codex's argument appended, as Codex would have run
//! it, detached (its own process group), with null stdio, never waited for. A
//! malformed chain runs nothing and says nothing. Without the flag nothing here
//! runs beyond one comparison, so the common hook path stays as fast as it was.
//! Std only, like the rest of the hook; it must never block, print or fail.

use spool::json::Value;
use std::process::Command;

/// The flag sessionpipe's notify entry puts before the person's previous notify.
pub const PREVIOUS_FLAG: &str = "--previous-notify";

/// Starts the previous notify program when `args` (the hook's arguments after its
/// own name) carry one.
pub fn run_previous(args: &[String]) {
    if args.get(2).map(String::as_str) != Some(PREVIOUS_FLAG) {
        return;
    }
    let Some(argv) = args.get(3).and_then(|json| string_array(json)) else {
        return;
    };
    let Some((program, program_args)) = argv.split_first() else {
        return;
    };
    let mut cmd = Command::new(program);
    cmd.args(program_args).args(&args[4..]);
    crate::wake::spawn_detached(cmd);
}

/// A JSON array of strings (what the installer writes with serde_json), or `None`.
fn string_array(json: &str) -> Option<Vec<String>> {
    let Value::Array(items) = spool::json::parse(json.as_bytes())? else {
        return None;
    };
    items
        .into_iter()
        .map(|v| match v {
            Value::String(s) => Some(s),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_arrays_the_installer_writes() {
        assert_eq!(
            string_array(r#"["/usr/bin/say","done"]"#).unwrap(),
            ["/usr/bin/say", "done"]
        );
        assert_eq!(
            string_array(" [ \"a\\\"b\" , \"c\\\\d\\n\\u00e9\\ud83d\\ude00\" ] ").unwrap(),
            ["a\"b", "c\\d\né😀"]
        );
        assert_eq!(string_array("[]").unwrap(), Vec::<String>::new());
        for bad in [
            "",
            "[",
            "[\"a\"",
            "[\"a\",]",
            "[1]",
            "{\"a\":1}",
            "[\"a\"] x",
            "[\"\\x\"]",
            "[\"\\ud83d\"]",
            "[\"a\nb\"]",
        ] {
            assert_eq!(string_array(bad), None, "{bad:?}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn runs_the_previous_program_with_codexs_argument_appended() {
        let dir = std::env::temp_dir().join(format!("sp-chain-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("out.txt");
        let script = dir.join("previous.sh");
        // Written whole, then renamed: the test sees all of it or nothing.
        let body = format!(
            "printf '%s|' \"$@\" > '{0}.tmp' && mv '{0}.tmp' '{0}'\n",
            out.display()
        );
        std::fs::write(&script, body).unwrap();
        let previous = format!(
            "[\"/bin/sh\",\"{}\",\"--from\",\"codex\"]",
            script.display()
        );
        let args: Vec<String> = [
            "codex",
            "notify",
            PREVIOUS_FLAG,
            &previous,
            "{\"type\":\"x\"}",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        run_previous(&args);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !out.exists() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(
            std::fs::read_to_string(&out).unwrap(),
            "--from|codex|{\"type\":\"x\"}|"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn without_the_flag_or_with_a_broken_chain_nothing_runs() {
        // Nothing to observe but that these return at once without panicking.
        run_previous(&["codex".into(), "notify".into(), "{}".into()]);
        run_previous(&["codex".into(), "notify".into(), PREVIOUS_FLAG.into()]);
        run_previous(&[
            "codex".into(),
            "notify".into(),
            PREVIOUS_FLAG.into(),
            "[]".into(),
        ]);
        run_previous(&[
            "codex".into(),
            "notify".into(),
            PREVIOUS_FLAG.into(),
            "not json".into(),
        ]);
    }
}
