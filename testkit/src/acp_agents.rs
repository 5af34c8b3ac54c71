//! Real ACP agents (Agent Client Protocol, JSON-RPC over stdio) set up in a
//! [`Sandbox`] to run offline against a scripted model API on loopback:
//! OpenCode 1.18.33 (`opencode acp`) and Qwen Code 0.24.4 (`qwen --acp
//! --experimental-skills`) against a [`MockChat`], Gemini CLI 0.61.0 (`gemini
//! --acp`) against a [`MockGemini`]. Each comes from `e2e/` (see
//! [`crate::harnesses`]); without it the setup says so in one line and gives
//! `None` (a failure under `SESSIONPIPE_REQUIRE_HARNESSES=1`).
//!
//! This module owns what each agent needs to start that way: the config files
//! it writes into the sandbox's home, the environment it is given, and, where
//! the registry's launch line alone cannot carry a choice (Gemini CLI's model;
//! Gemini CLI's and Qwen Code's approval mode), an executable wrapper in the
//! sandbox named like the agent's CLI that runs the real one with the launch
//! line's arguments and those flags. The result, [`AcpAgent`], is what the
//! daemon is told: a program (by `SESSIONPIPE_ACP_<HARNESS>` or on `PATH`), the
//! registry's own arguments, and the environment the daemon passes on.
//!
//! It must not speak ACP, start an agent, or decide anything a test checks:
//! the client under test does the talking. It never touches the real home, and
//! nothing it sets up reaches beyond loopback.

use crate::Sandbox;
use crate::chat::MockChat;
use crate::executable::write_executable;
use crate::gemini::MockGemini;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The model Gemini CLI is told to use (the mock answers any).
pub const GEMINI_MODEL: &str = "gemini-2.5-flash";

/// The model name OpenCode and Qwen Code send ([`crate::chat::MODEL`]).
pub const CHAT_MODEL: &str = crate::chat::MODEL;

/// One agent, ready to be launched the way the daemon launches it.
#[derive(Clone, Debug)]
pub struct AcpAgent {
    /// Its harness name in sessionpipe's registry (`opencode`, `gemini-cli`,
    /// `qwen-code`).
    pub harness: &'static str,
    /// What to run: the real binary, or a wrapper in the sandbox (named like the
    /// agent's CLI) that runs it with `"$@"` and the extra flags it needs.
    pub program: PathBuf,
    /// What the agent's environment needs on top of a [`Sandbox::command`]'s
    /// (whose `HOME` holds its config): give it to the daemon, whose child
    /// inherits it.
    pub env: Vec<(String, String)>,
    /// The registry's launch arguments, which the daemon adds itself.
    pub args: Vec<&'static str>,
}

impl AcpAgent {
    /// `SESSIONPIPE_ACP_<HARNESS>` naming [`AcpAgent::program`]: how the daemon
    /// is pointed at this agent without `PATH`.
    pub fn override_var(&self) -> (String, String) {
        (
            format!(
                "SESSIONPIPE_ACP_{}",
                self.harness.to_ascii_uppercase().replace('-', "_")
            ),
            self.program.to_string_lossy().into_owned(),
        )
    }

    /// `PATH` with the program's folder first (the program is named like the
    /// registry's CLI): the other way the daemon finds it.
    pub fn path_var(&self) -> (String, String) {
        let dir = self.program.parent().unwrap_or(Path::new("/"));
        ("PATH".into(), Sandbox::path_with(dir))
    }

    /// `program args...` in `cwd` with the sandbox's and the agent's
    /// environment, as the daemon would start it (stdio left to the caller).
    pub fn command(&self, sb: &Sandbox, cwd: &Path) -> Command {
        let mut c = sb.command(&self.program);
        c.args(&self.args)
            .current_dir(cwd)
            .envs(self.env.iter().map(|(k, v)| (k, v)));
        c
    }
}

/// OpenCode 1.18.33 as `opencode acp` against `api`: a provider `mock`
/// (`@ai-sdk/openai-compatible`) with one model in `~/.config/opencode/
/// opencode.json`, and `permission.bash` = `bash_rule` (`"allow"`, or `"ask"`
/// for a `session/request_permission` on every shell call). Rewrites the config
/// each call, so one sandbox can meet a fresh mock.
pub fn opencode(sb: &Sandbox, api: &MockChat, bash_rule: &str) -> Option<AcpAgent> {
    let program = crate::harnesses::opencode()?;
    let config = sb.home.join(".config/opencode");
    std::fs::create_dir_all(&config).expect("~/.config/opencode is made");
    let doc = json!({
        "$schema": "https://opencode.ai/config.json",
        "provider": {"mock": {"npm": "@ai-sdk/openai-compatible", "name": "Mock",
            "options": {"baseURL": api.base_url(), "apiKey": "test-not-a-key"},
            "models": {CHAT_MODEL: {"name": "Mock", "tool_call": true}}}},
        "model": format!("mock/{CHAT_MODEL}"),
        "small_model": format!("mock/{CHAT_MODEL}"),
        "enabled_providers": ["mock"],
        "autoupdate": false,
        "share": "disabled",
        "permission": {"bash": bash_rule},
    });
    write_json(&config.join("opencode.json"), &doc);
    let mut env = vars(&[
        ("OPENCODE_DISABLE_MODELS_FETCH", "true"),
        ("OPENCODE_DISABLE_AUTOUPDATE", "true"),
        ("OPENCODE_DISABLE_DEFAULT_PLUGINS", "true"),
        ("OPENCODE_DISABLE_LSP_DOWNLOAD", "true"),
        ("OPENCODE_DISABLE_SHARE", "true"),
    ]);
    env.push(("SHELL".into(), "/bin/bash".into()));
    Some(AcpAgent {
        harness: "opencode",
        program,
        env,
        args: vec!["acp"],
    })
}

/// Gemini CLI 0.61.0 as `gemini --acp` against `api`: API-key auth, telemetry,
/// usage statistics and updates off in `~/.gemini/settings.json` (entries
/// already there are kept), and a wrapper `gemini` adding `--approval-mode
/// <approval>` (`yolo`, or `default` to be asked about a command such as
/// `touch`) and `-m` [`GEMINI_MODEL`].
pub fn gemini(sb: &Sandbox, api: &MockGemini, approval: &str) -> Option<AcpAgent> {
    let bundle = crate::harnesses::gemini_cli()?;
    let node = crate::harnesses::node()?;
    let dir = sb.home.join(".gemini");
    std::fs::create_dir_all(&dir).expect("~/.gemini is made");
    let path = dir.join("settings.json");
    let mut settings: serde_json::Value = std::fs::read(&path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .filter(serde_json::Value::is_object)
        .unwrap_or_else(|| json!({}));
    for (key, entries) in [
        (
            "security",
            json!({"auth": {"selectedType": "gemini-api-key"}}),
        ),
        ("telemetry", json!({"enabled": false, "logPrompts": false})),
        ("privacy", json!({"usageStatisticsEnabled": false})),
        (
            "general",
            json!({"enableAutoUpdate": false, "enableAutoUpdateNotification": false}),
        ),
        ("model", json!({"name": GEMINI_MODEL})),
    ] {
        let slot = &mut settings[key];
        if !slot.is_object() {
            *slot = json!({});
        }
        for (k, v) in entries.as_object().expect("an object") {
            slot[k] = v.clone();
        }
    }
    write_json(&path, &settings);
    let program = wrapper(
        sb,
        "gemini",
        "Gemini CLI 0.61.0",
        &[&node, &bundle],
        &["--approval-mode", approval, "-m", GEMINI_MODEL],
    );
    let env = vars(&[
        ("GEMINI_API_KEY", "test-not-a-key"),
        ("GOOGLE_GEMINI_BASE_URL", &api.base_url()),
        ("GEMINI_CLI_TRUST_WORKSPACE", "true"),
        ("GEMINI_CLI_NO_RELAUNCH", "true"),
        ("SHELL", "/bin/bash"),
    ]);
    Some(AcpAgent {
        harness: "gemini-cli",
        program,
        env,
        args: vec!["--acp"],
    })
}

/// Qwen Code 0.24.4 as `qwen --acp --experimental-skills` against `api`:
/// OpenAI-compatible auth and the model in `~/.qwen/settings.json`, with the
/// two background model requests after every turn (managed auto-memory,
/// follow-up suggestions), telemetry, usage statistics and updates off; and a
/// wrapper `qwen` adding `--approval-mode <approval>` (`yolo`, or `default` to
/// be asked about shell commands). 0.24.4 accepts `--experimental-skills` and
/// ignores it (skills are on by default).
pub fn qwen(sb: &Sandbox, api: &MockChat, approval: &str) -> Option<AcpAgent> {
    let entry = crate::harnesses::qwen()?;
    let node = crate::harnesses::node()?;
    let dir = sb.home.join(".qwen");
    std::fs::create_dir_all(&dir).expect("~/.qwen is made");
    let settings = json!({
        "security": {"auth": {"selectedType": "openai"}},
        "model": {"name": CHAT_MODEL},
        "memory": {"enableManagedAutoMemory": false},
        "ui": {"enableFollowupSuggestions": false},
        "telemetry": {"enabled": false},
        "privacy": {"usageStatisticsEnabled": false},
        "general": {"enableAutoUpdate": false},
    });
    write_json(&dir.join("settings.json"), &settings);
    let program = wrapper(
        sb,
        "qwen",
        "Qwen Code 0.24.4",
        &[&node, &entry],
        &["--approval-mode", approval],
    );
    let env = vars(&[
        ("OPENAI_API_KEY", "test-not-a-key"),
        ("OPENAI_BASE_URL", &api.base_url()),
        ("OPENAI_MODEL", CHAT_MODEL),
        ("SHELL", "/bin/bash"),
    ]);
    Some(AcpAgent {
        harness: "qwen-code",
        program,
        env,
        args: vec!["--acp", "--experimental-skills"],
    })
}

/// Writes `<sandbox>/acp-bin/<name>`, an executable `sh` script that execs
/// `run... "$@" extra...`, and returns its path.
fn wrapper(sb: &Sandbox, name: &str, what: &str, run: &[&Path], extra: &[&str]) -> PathBuf {
    let dir = sb.root().join("acp-bin");
    std::fs::create_dir_all(&dir).expect("the wrappers' folder is made");
    let mut line = String::from("exec");
    for part in run {
        line.push(' ');
        line.push_str(&quote(&part.to_string_lossy()));
    }
    line.push_str(" \"$@\"");
    for part in extra {
        line.push(' ');
        line.push_str(&quote(part));
    }
    let script = format!(
        "#!/bin/sh\n# {what} for sessionpipe's tests: the real one, offline, with the flags \
         its launch line cannot carry.\n{line}\n"
    );
    let path = dir.join(name);
    write_executable(&path, &script);
    path
}

/// `s` in single quotes for `sh`.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn write_json(path: &Path, doc: &serde_json::Value) {
    let text = serde_json::to_string_pretty(doc).expect("JSON prints");
    std::fs::write(path, text).unwrap_or_else(|e| panic!("{} is written: {e}", path.display()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_override_var_and_a_wrapper_that_quotes() {
        let sb = Sandbox::new();
        let agent = AcpAgent {
            harness: "gemini-cli",
            program: sb.root().join("acp-bin/gemini"),
            env: vec![],
            args: vec!["--acp"],
        };
        let (name, value) = agent.override_var();
        assert_eq!(name, "SESSIONPIPE_ACP_GEMINI_CLI");
        assert!(value.ends_with("acp-bin/gemini"));
        let odd = sb.root().join("it's here");
        let path = wrapper(
            &sb,
            "echoer",
            "A test",
            &[Path::new("/bin/echo")],
            &[&odd.to_string_lossy()],
        );
        let out = std::process::Command::new(&path)
            .args(["a b", "c"])
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            format!("a b c {}\n", odd.display())
        );
    }
}
