//! A scripted stand-in for Antigravity's CLI, `agy`: NOT the real binary,
//! which no test machine has. It lets control's tests run a headless
//! Antigravity turn end to end: [`stand_in`] writes an executable `agy` bash
//! script that records how it was called, names a conversation and streams a
//! fixed reply in agy's stream-json shape (the one the Antigravity adapter's
//! reader describes: lines keyed by `event`, `init` → `step_update` text
//! deltas → `result`).
//!
//! It must never pass for agy: the script says it is a stand-in in its first
//! lines and in its `--help`. It decides nothing and checks no flag: a test
//! reads the recorded argv and asserts on it. Std-only Rust and bash.

use crate::executable::write_executable;
use std::path::{Path, PathBuf};

/// How many `step_update` deltas the reply is streamed in (at most).
const CHUNKS: usize = 3;

/// Writes `<dir>/agy`, an executable stand-in for agy, and returns its path.
///
/// Each call of it writes its argv, one argument a line, to
/// `<dir>/agy-argv-<n>.txt` (`n` = 1, 2, … in call order; a `--help` call
/// counts too) and the folder it runs in to `<dir>/agy-cwd-<n>.txt`, then
/// prints:
/// `{"event":"init","init":{"conversation_id":…}}` (the `--conversation` id
/// when one is given, else a new UUID-shaped id), `reply` as a few
/// `{"event":"step_update","step_update":{"step_type":"agent_response",…,
/// "text_delta":…}}` lines with small sleeps between, and
/// `{"event":"result","result":{"conversation_id":…,"status":"SUCCESS",
/// "response":reply,"denied_actions":[]}}`; and exits 0. `--help` prints a
/// short usage instead.
pub fn stand_in(dir: &Path, reply: &str) -> PathBuf {
    let deltas: String = chunks(reply, CHUNKS)
        .iter()
        .map(|c| {
            let line = format!(
                r#"{{"event":"step_update","step_update":{{"step_type":"agent_response","state":"ACTIVE","text_delta":{}}}}}"#,
                json_string(c)
            );
            format!("sleep 0.05\nprintf '%s\\n' {}\n", shell_quote(&line))
        })
        .collect();
    let result_tail = format!(
        r#"","status":"SUCCESS","response":{},"denied_actions":[]}}}}"#,
        json_string(reply)
    );
    let script = format!(
        r#"#!/usr/bin/env bash
# A scripted STAND-IN for Antigravity's CLI (agy), written by sessionpipe's
# tests (testkit::agy). It is not agy: it records its argv and streams a fixed
# reply in agy's stream-json shape.
dir={dir}
n=1
while ! (set -C; : > "$dir/agy-argv-$n.txt") 2>/dev/null; do n=$((n + 1)); done
printf '%s\n' "$@" > "$dir/agy-argv-$n.txt"
pwd -P > "$dir/agy-cwd-$n.txt"

conv=
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help)
      echo "agy stand-in (sessionpipe tests), not Antigravity's CLI"
      echo "usage: agy [--output-format stream-json] [--mode accept-edits] [--conversation <id>] -p <prompt>"
      exit 0 ;;
    --conversation) shift; conv=$1 ;;
    --conversation=*) conv=${{1#--conversation=}} ;;
  esac
  shift
done
if [ -z "$conv" ]; then
  if [ -r /proc/sys/kernel/random/uuid ]; then
    conv=$(cat /proc/sys/kernel/random/uuid)
  else
    conv=$(printf '%04x%04x-%04x-4%03x-8%03x-%04x%04x%04x' $RANDOM $RANDOM $RANDOM \
      $((RANDOM % 4096)) $((RANDOM % 4096)) $RANDOM $RANDOM $RANDOM)
  fi
fi
id=${{conv//\\/\\\\}}
id=${{id//\"/\\\"}}

printf '%s%s%s\n' '{{"event":"init","init":{{"conversation_id":"' "$id" '"}}}}'
{deltas}sleep 0.05
printf '%s%s%s\n' '{{"event":"result","result":{{"conversation_id":"' "$id" {result_tail}
exit 0
"#,
        dir = shell_quote(&dir.to_string_lossy()),
        deltas = deltas,
        result_tail = shell_quote(&result_tail),
    );
    let path = dir.join("agy");
    write_executable(&path, &script);
    path
}

/// `text` in at most `n` pieces of about equal length, on char boundaries;
/// none for an empty text.
fn chunks(text: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return Vec::new();
    }
    let size = chars.len().div_ceil(n.max(1));
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

/// `s` as a JSON string literal.
fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `s` as one bash word, single-quoted.
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::process::Command;

    fn lines(out: &[u8]) -> Vec<serde_json::Value> {
        String::from_utf8_lossy(out)
            .lines()
            .map(|l| serde_json::from_str(l).expect("every line is JSON"))
            .collect()
    }

    #[test]
    fn a_start_gets_a_new_conversation_and_the_reply_in_pieces() {
        let dir = tempfile::tempdir().unwrap();
        let reply = "It's \"done\" — 100% \\ $HOME\nnext";
        let agy = stand_in(dir.path(), reply);
        let out = Command::new(&agy)
            .args(["--output-format", "stream-json", "-p", "-rm 'x'"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let got = lines(&out.stdout);
        let conv = got[0]["init"]["conversation_id"]
            .as_str()
            .unwrap()
            .to_string();
        assert_eq!(got[0]["event"], "init");
        assert_eq!(conv.len(), 36, "{conv}");
        let deltas: String = got[1..got.len() - 1]
            .iter()
            .map(|l| l["step_update"]["text_delta"].as_str().unwrap())
            .collect();
        assert_eq!(deltas, reply);
        assert_eq!(got.len() - 2, CHUNKS);
        let result = &got[got.len() - 1]["result"];
        assert_eq!(result["conversation_id"], conv.as_str());
        assert_eq!(result["status"], "SUCCESS");
        assert_eq!(result["response"], reply);
        assert_eq!(
            std::fs::read_to_string(dir.path().join("agy-argv-1.txt")).unwrap(),
            "--output-format\nstream-json\n-p\n-rm 'x'\n"
        );
    }

    #[test]
    fn a_resume_keeps_its_conversation_and_each_call_is_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let agy = stand_in(dir.path(), "ok");
        for args in [
            &["--conversation", "c-\"1\"", "-p", "hi"][..],
            &["--conversation=c-2", "-p", "hi"][..],
            &["--help"][..],
        ] {
            let out = Command::new(&agy).args(args).output().unwrap();
            assert!(out.status.success());
            if args[0] == "--help" {
                assert!(String::from_utf8_lossy(&out.stdout).contains("stand-in"));
                continue;
            }
            let got = lines(&out.stdout);
            let want = if args[0] == "--conversation" {
                "c-\"1\""
            } else {
                "c-2"
            };
            assert_eq!(got[0]["init"]["conversation_id"], want);
            assert_eq!(got.last().unwrap()["result"]["conversation_id"], want);
        }
        for n in 1..=3 {
            assert!(dir.path().join(format!("agy-argv-{n}.txt")).is_file());
        }
        assert_eq!(
            std::fs::read_to_string(dir.path().join("agy-argv-3.txt")).unwrap(),
            "--help\n"
        );
    }
}
