//! `sessionpipe_adapters`: one adapter per harness, the only vendor-specific code
//! in sessionpipe, and the registry of them.
//!
//! Each folder is one harness's row of ADAPTERS.md, written against the kit
//! (`sessionpipe-harness`): how its hook payloads map to protocol events, where its
//! hooks are installed, its facts, transcript reader and backfill. Adding a
//! harness is one folder here, its fixtures under `conformance/harness/<name>/`,
//! and one line in `REGISTRY`.
//!
//! A harness's folder uses the kit, the protocol and its own files; never another
//! harness's folder (what two share belongs in the kit), and never the pipeline,
//! which this crate cannot see.

mod antigravity;
pub mod claude_code;
mod codex;
mod copilot_cli;
mod cursor;
mod devin;
mod droid;
mod gemini_cli;
mod grok_build;
mod kiro;
mod opencode;

use harness::Adapter;

pub use antigravity::Antigravity;
pub use claude_code::ClaudeCode;
pub use codex::Codex;
pub use copilot_cli::CopilotCli;
pub use cursor::Cursor;
pub use devin::Devin;
pub use droid::Droid;
pub use gemini_cli::GeminiCli;
pub use grok_build::GrokBuild;
pub use kiro::Kiro;
pub use opencode::OpenCode;

/// Every harness sessionpipe has an adapter for.
pub static REGISTRY: &[&dyn Adapter] = &[
    &ClaudeCode,
    &Codex,
    &GeminiCli,
    &Antigravity,
    &Devin,
    &GrokBuild,
    &Cursor,
    &Kiro,
    &CopilotCli,
    &Droid,
    &OpenCode,
];

/// The adapter registered under `name`.
pub fn lookup(name: &str) -> Option<&'static dyn Adapter> {
    REGISTRY.iter().copied().find(|a| a.name() == name)
}

/// A harness name that `install` cannot act on.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum UnknownHarness {
    #[error("unknown harness {name:?} (known: {known})")]
    Unknown { name: String, known: String },
    #[error("{0} has no hook installer yet")]
    NoInstaller(String),
}

/// The adapters to install for: those named, or every one with an installer.
pub fn installable(names: &[String]) -> Result<Vec<&'static dyn Adapter>, UnknownHarness> {
    if names.is_empty() {
        return Ok(REGISTRY
            .iter()
            .copied()
            .filter(|a| a.hooks().is_some())
            .collect());
    }
    names
        .iter()
        .map(|n| match lookup(n) {
            Some(a) if a.hooks().is_some() => Ok(a),
            Some(_) => Err(UnknownHarness::NoInstaller(n.clone())),
            None => Err(UnknownHarness::Unknown {
                name: n.clone(),
                known: REGISTRY
                    .iter()
                    .map(|a| a.name())
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
        })
        .collect()
}

/// Each harness's folder stands alone: it names no other harness's folder, and
/// nothing inside it imports a module that imports it back.
#[cfg(test)]
mod layering {
    use sessionpipe_testkit::layers;
    use std::path::Path;

    #[test]
    fn a_harness_uses_the_kit_never_another_harness() {
        let files = layers::files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
        let harnesses = layers::children(&files, &[]);
        let mut wrong = Vec::new();
        for f in files.iter().filter(|f| !f.module.is_empty()) {
            for r in layers::references(f) {
                if let Some(other) = r.first()
                    && harnesses.contains(other)
                    && *other != f.module[0]
                {
                    wrong.push(format!(
                        "{} names crate::{}",
                        f.path.display(),
                        r.join("::")
                    ));
                }
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
        let mut circles = Vec::new();
        for h in &harnesses {
            if let Some(c) = layers::circle(&layers::child_graph(&files, std::slice::from_ref(h))) {
                circles.push(format!("{h}: {}", c.join(" -> ")));
            }
        }
        assert!(circles.is_empty(), "import circles: {}", circles.join("; "));
    }
}

#[cfg(test)]
mod map_props;
