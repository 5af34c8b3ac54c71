//! The real harnesses the tests run, from the npm registry (`e2e/package.json`).
//!
//! A test asks for one by its path under `e2e/node_modules`. When it is not
//! installed the test says so in one line and passes, unless
//! `SESSIONPIPE_REQUIRE_HARNESSES=1` (set by `scripts/test.sh`), where that is a
//! failure: CI must never pass by skipping the real thing. It also writes the
//! person's state that lets an interactive Claude Code skip its first-run
//! screens; it never installs, downloads or starts a harness.

use std::path::{Path, PathBuf};

/// The repository's root (the parent of this crate's folder).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("testkit sits in the repository")
        .to_path_buf()
}

/// `e2e/node_modules/<rel>` when it exists; otherwise skip or fail (see above).
pub fn installed(what: &str, rel: &str) -> Option<PathBuf> {
    let path = repo_root().join("e2e/node_modules").join(rel);
    if path.exists() {
        return Some(path);
    }
    missing(&format!("{what} is not installed at {}", path.display()))
}

/// Says why a real harness cannot run: a skip line, or a panic when required.
pub fn missing<T>(why: &str) -> Option<T> {
    if std::env::var("SESSIONPIPE_REQUIRE_HARNESSES").as_deref() == Ok("1") {
        panic!("{why}: run scripts/test.sh");
    }
    eprintln!("skipped: {why} (npm ci in e2e/ installs it)");
    None
}

/// Claude Code's native binary.
pub fn claude() -> Option<PathBuf> {
    installed("Claude Code", "@anthropic-ai/claude-code-linux-x64/claude")
}

/// Claude Code's first-run screens done for the person of `home`: onboarding
/// (a theme chosen) and the trust of `project`, in `~/.claude.json`, so an
/// interactive Claude Code opens on its prompt.
pub fn claude_first_run_done(home: &Path, project: &Path) {
    let doc = serde_json::json!({
        "hasCompletedOnboarding": true,
        "theme": "dark",
        "projects": {project.to_string_lossy(): {"hasTrustDialogAccepted": true,
                                                 "hasCompletedProjectOnboarding": true}},
    });
    std::fs::write(home.join(".claude.json"), doc.to_string()).expect("~/.claude.json is written");
}

/// GitHub Copilot CLI's native binary.
pub fn copilot() -> Option<PathBuf> {
    installed("GitHub Copilot CLI", "@github/copilot-linux-x64/copilot")
}

/// Factory Droid's native binary.
pub fn droid() -> Option<PathBuf> {
    installed("Factory Droid", "@factory/cli-linux-x64/bin/droid")
}

/// OpenCode's native binary.
pub fn opencode() -> Option<PathBuf> {
    installed("OpenCode", "opencode-linux-x64/bin/opencode")
}

/// Gemini CLI's bundle, `node <it>` (npm's `.bin/gemini` links to it).
pub fn gemini_cli() -> Option<PathBuf> {
    installed("Gemini CLI", "@google/gemini-cli/bundle/gemini.js")
}

/// Qwen Code's entry script, `node <it>` (npm's `.bin/qwen` links to it). It
/// has a folder of its own, `e2e/qwen/` (its `package.json` says why).
pub fn qwen() -> Option<PathBuf> {
    installed(
        "Qwen Code",
        "../qwen/node_modules/@qwen-code/qwen-code/cli-entry.js",
    )
}

/// `node` on `PATH`, which runs the harnesses written in JavaScript.
pub fn node() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join("node"))
            .find(|p| p.is_file())
    });
    found.or_else(|| missing("node is not on PATH"))
}
