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
mod devin;
mod gemini_cli;
mod grok_build;

use harness::Adapter;

pub use antigravity::Antigravity;
pub use claude_code::ClaudeCode;
pub use codex::Codex;
pub use devin::Devin;
pub use gemini_cli::GeminiCli;
pub use grok_build::GrokBuild;

/// Every harness sessionpipe has an adapter for.
pub static REGISTRY: &[&dyn Adapter] = &[
    &ClaudeCode,
    &Codex,
    &GeminiCli,
    &Antigravity,
    &Devin,
    &GrokBuild,
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
