//! The agents sessionpipe drives over ACP (ADAPTERS.md, "Agents driven through
//! ACP"): one table, each agent's harness name, its id in the ACP registry, its
//! product and the launch line the registry publishes, and how one is found on
//! this machine (its CLI on `PATH`, or the file `SESSIONPIPE_ACP_<HARNESS>`
//! names). Nothing here downloads, installs or runs anything.
//!
//! Claude Code, Codex and Antigravity have their own drivers, so their ACP
//! wrappers are not in the table.

use harness::install::Host;
use std::path::PathBuf;

/// One agent of the table.
#[derive(Debug, PartialEq, Eq)]
pub struct AgentSpec {
    /// The protocol's `harness.name` (a harness with hooks keeps its own).
    pub harness: &'static str,
    /// Its id in the ACP registry.
    pub registry_id: &'static str,
    pub product: &'static str,
    /// The program of its launch line, looked up on `PATH`.
    pub program: &'static str,
    /// The rest of its launch line.
    pub args: &'static [&'static str],
}

macro_rules! agents {
    ($( $harness:literal, $id:literal, $product:literal, $program:literal $(, $arg:literal)* ;)*) => {
        /// Every agent, in the table's order.
        pub const AGENTS: &[AgentSpec] = &[
            $( AgentSpec { harness: $harness, registry_id: $id, product: $product,
                           program: $program, args: &[$($arg),*] }, )*
        ];
    };
}

agents! {
    "gemini-cli", "gemini", "Gemini CLI (Google)", "gemini", "--acp";
    "devin", "devin", "Devin CLI (Cognition)", "devin", "acp";
    "opencode", "opencode", "OpenCode", "opencode", "acp";
    "cursor", "cursor", "Cursor", "cursor-agent", "acp";
    "copilot-cli", "github-copilot-cli", "GitHub Copilot CLI", "copilot", "--acp";
    "droid", "factory-droid", "Droid (Factory)", "droid", "exec", "--output-format", "acp-daemon";
    "goose", "goose", "goose (Block)", "goose", "acp";
    "kilo", "kilo", "Kilo", "kilo", "acp";
    "qwen-code", "qwen-code", "Qwen Code", "qwen", "--acp", "--experimental-skills";
    "cline", "cline", "Cline", "cline", "--acp";
    "auggie", "auggie", "Auggie (Augment)", "auggie", "--acp";
    "kimi", "kimi", "Kimi CLI (Moonshot)", "kimi", "acp";
    "amp", "amp-acp", "Amp (Sourcegraph)", "amp-acp";
    "mistral-vibe", "mistral-vibe", "Mistral Vibe", "vibe-acp";
    "bob", "bob", "Bob (IBM)", "bob", "acp";
    "grok-build", "grok-build", "Grok Build (xAI)", "grok", "agent", "stdio";
    "qoder", "qoder", "Qoder CLI", "qodercli", "--acp";
    "minimax-code", "minimax-code", "MiniMax Code", "mcode", "acp";
    "codebuddy-code", "codebuddy-code", "Codebuddy Code (Tencent)", "codebuddy", "--acp";
    "nova", "nova", "Nova (Compass)", "nova", "acp";
    "dimcode", "dimcode", "DimCode", "dim", "acp";
    "dirac", "dirac", "Dirac", "dirac", "--acp";
    "harn", "harn", "Harn", "harn", "serve", "acp";
    "vtcode", "vtcode", "VT Code", "vtcode", "acp";
    "stakpak", "stakpak", "Stakpak", "stakpak", "acp";
    "crow-cli", "crow-cli", "crow-cli", "crow-cli", "acp";
    "corust-agent", "corust-agent", "Corust Agent", "corust-agent-acp";
    "cortex-code", "cortex-code", "Cortex Code (Snowflake)", "cortex", "acp", "serve";
    "kimchi", "kimchi", "Kimchi", "kimchi", "--mode", "acp";
}

/// The agent a harness name stands for, if it is in the table.
pub fn lookup(harness: &str) -> Option<&'static AgentSpec> {
    AGENTS.iter().find(|a| a.harness == harness)
}

impl AgentSpec {
    /// The environment variable that names this agent's program instead of
    /// `PATH` (`SESSIONPIPE_ACP_GEMINI_CLI`).
    pub fn override_var(&self) -> String {
        format!(
            "SESSIONPIPE_ACP_{}",
            self.harness.to_ascii_uppercase().replace('-', "_")
        )
    }

    /// Where this agent's program is on this machine, if it is installed: the
    /// file the override names (when it is a file), else its CLI on `PATH`.
    pub fn find(&self, host: &Host) -> Option<PathBuf> {
        if let Some(named) = host.var(&self.override_var()) {
            let path = PathBuf::from(named);
            return std::fs::metadata(&path)
                .is_ok_and(|m| m.is_file())
                .then_some(path);
        }
        host.find_on_path(self.program)
    }
}

/// The agents installed on this machine, in the table's order.
pub fn installed(host: &Host) -> Vec<(&'static AgentSpec, PathBuf)> {
    AGENTS
        .iter()
        .filter_map(|a| a.find(host).map(|p| (a, p)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_has_every_agent_once_and_no_wrapper_of_a_driven_harness() {
        assert_eq!(AGENTS.len(), 29);
        let mut names: Vec<&str> = AGENTS.iter().map(|a| a.harness).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 29, "harness names are unique");
        for driven in ["claude-code", "codex", "antigravity"] {
            assert!(lookup(driven).is_none(), "{driven} has its own driver");
        }
        let droid = lookup("droid").unwrap();
        assert_eq!(droid.program, "droid");
        assert_eq!(droid.args, ["exec", "--output-format", "acp-daemon"]);
        assert_eq!(lookup("amp").unwrap().args, [] as [&str; 0]);
        assert_eq!(
            lookup("gemini-cli").unwrap().override_var(),
            "SESSIONPIPE_ACP_GEMINI_CLI"
        );
    }

    #[test]
    fn an_agent_is_found_by_its_override_or_on_path_and_never_otherwise() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(bin.join("goose"), "#!/bin/sh\n").unwrap();
        let named = dir.path().join("my-gemini");
        std::fs::write(&named, "#!/bin/sh\n").unwrap();
        let vars = [
            ("PATH", bin.to_string_lossy().into_owned()),
            ("SESSIONPIPE_ACP_GEMINI_CLI", named.to_string_lossy().into()),
            ("SESSIONPIPE_ACP_KILO", "/no/such/file".into()),
        ];
        let host = Host {
            home: dir.path().to_path_buf(),
            vars: vars.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
        };
        let found: Vec<&str> = installed(&host).iter().map(|(a, _)| a.harness).collect();
        assert_eq!(found, ["gemini-cli", "goose"]);
        assert_eq!(lookup("gemini-cli").unwrap().find(&host), Some(named));
        assert_eq!(
            lookup("kilo").unwrap().find(&host),
            None,
            "a missing file is not found"
        );
    }
}
