//! The real Codex (0.171, from `e2e/`) in a [`Sandbox`], offline: where its
//! binary is, the home `sessionpipe install` and a person's own config give it
//! (a model provider named `mock` speaking the Responses API, background
//! look-ups off), its execpolicy rules, and the `codex exec` command line run
//! against a [`MockOpenAI`].
//!
//! The provider's address is given per run (`-c model_providers.mock.base_url`),
//! so one home can talk to a fresh script on every run. Each run gets a temp dir
//! of its own (`TMPDIR`, inside the sandbox): Codex refuses to make its helper
//! aliases (`codex-linux-sandbox`, which its bubblewrap sandbox runs) in a home
//! under the temp dir, and the sandbox's home is under `/tmp`; without them every
//! command its workspace-write sandbox runs fails ("bwrap: execvp
//! codex-linux-sandbox"). So the home is outside the temp dir, as `~/.codex` is
//! outside `/tmp` on a person's machine. Hook trust is never
//! written here: a run that needs the hooks passes Codex's own per-invocation
//! `--dangerously-bypass-hook-trust` in its flags, on this throwaway home only.
//! This module asserts only that the setup itself worked; what a run proves is
//! the test's to check.

use crate::Sandbox;
use crate::openai::MockOpenAI;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Codex's native binary, under `e2e/node_modules` (see [`crate::harnesses`]).
pub fn binary() -> Option<PathBuf> {
    crate::harnesses::installed(
        "Codex",
        "@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex",
    )
}

/// What a person adds to `config.toml` to run Codex on their own provider,
/// minus its address: the mock model, no retries, and no analytics, plugins,
/// apps or update checks (each otherwise reaches for the network).
pub const PROVIDER: &str = r#"model = "mock-model"
model_provider = "mock"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[model_providers.mock]
name = "mock"
env_key = "MOCK_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[features]
plugins = false
apps = false
remote_plugin = false
"#;

/// `PROVIDER` with the provider's address in it (a config for one mock).
pub fn provider_at(base_url: &str) -> String {
    PROVIDER.replacen(
        "name = \"mock\"\n",
        &format!("name = \"mock\"\nbase_url = \"{base_url}\"\n"),
        1,
    )
}

/// Codex installed in a sandbox's home.
pub struct Codex {
    pub binary: PathBuf,
    /// `CODEX_HOME`: the sandbox's `~/.codex`.
    pub home: PathBuf,
    /// `PATH` with Codex's folder first, as the installer found it.
    pub path: String,
}

impl Codex {
    /// `sessionpipe install --harness codex` into the sandbox's `~/.codex`
    /// (found through `codex` on `PATH`), then the provider appended to the
    /// `config.toml` it wrote.
    pub fn install(sb: &Sandbox, binary: PathBuf) -> Codex {
        let home = sb.home.join(".codex");
        let path = Sandbox::path_with(binary.parent().expect("codex is in a folder"));
        let out = sb
            .command(crate::sandbox::bin("sessionpipe"))
            .env("PATH", &path)
            .env("CODEX_HOME", &home)
            .args(["install", "--harness", "codex"])
            .output()
            .expect("sessionpipe install runs");
        assert!(out.status.success(), "install: {out:?}");
        let config = home.join("config.toml");
        let mut text = std::fs::read_to_string(&config).expect("install wrote config.toml");
        text.push_str(PROVIDER);
        std::fs::write(&config, text).expect("config.toml is writable");
        Codex { binary, home, path }
    }

    /// A user rule (`rules/default.rules`) that makes Codex ask before running
    /// any command starting with the words `prefix`: `decision = "prompt"`.
    pub fn ask_before(&self, prefix: &[&str]) {
        let rules = self.home.join("rules");
        std::fs::create_dir_all(&rules).expect("a rules folder");
        let pattern: Vec<String> = prefix.iter().map(|w| format!("{w:?}")).collect();
        std::fs::write(
            rules.join("default.rules"),
            format!(
                "prefix_rule(pattern = [{}], decision = \"prompt\")\n",
                pattern.join(", ")
            ),
        )
        .expect("the rules file is writable");
    }

    /// `codex exec --json --skip-git-repo-check FLAGS PROMPT` in `cwd`, talking
    /// to `api`, with the sandbox's own temp dir, stdin closed; not started.
    pub fn exec(
        &self,
        sb: &Sandbox,
        api: &MockOpenAI,
        cwd: &Path,
        flags: &[&str],
        prompt: &str,
    ) -> Command {
        let tmp = sb.root().join("tmp");
        std::fs::create_dir_all(&tmp).expect("a temp dir");
        let mut c = sb.command(&self.binary);
        c.current_dir(cwd)
            .env("TMPDIR", &tmp)
            .env("PATH", &self.path)
            .env("CODEX_HOME", &self.home)
            .env("MOCK_API_KEY", "not-a-key")
            .env("SHELL", "/bin/bash")
            .args(["exec", "--json", "--skip-git-repo-check", "-c"])
            .arg(format!(
                "model_providers.mock.base_url={:?}",
                api.base_url()
            ))
            .args(flags)
            .arg(prompt)
            .stdin(Stdio::null());
        c
    }
}
