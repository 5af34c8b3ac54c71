//! `sessionpipe_spool`: what the hook and the daemon must agree on, written once.
//!
//! The hook (`sessionpipe-hook`) writes a job file into the spool and wakes the
//! daemon; the daemon reads and removes it. Both sides link this crate, so the
//! state dir's rule (`paths`), the job file format (`job`), the spool folder's
//! layout (`folder`), private and atomic files (`files`) and the wake datagram
//! (`wake`) and the markers of lost hook calls (`loss`) exist once. `json` is the small reader both need: the daemon for a
//! job's trailer, the hook for the one payload it must read.
//!
//! std only: the hook sits on every harness's hook path and links this crate.
//! Nothing here knows a harness, an event or the protocol.

pub mod files;
pub mod folder;
pub mod job;
pub mod json;
pub mod loss;
pub mod paths;
pub mod wake;

#[cfg(test)]
mod props;

pub use folder::Spool;
pub use job::{Job, JobError};
pub use paths::StatePaths;

/// The hook path stays std only: this crate depends on nothing, and the hook on
/// this crate alone.
#[cfg(test)]
mod std_only {
    fn dependencies(manifest: &str) -> Vec<String> {
        let text = std::fs::read_to_string(manifest).expect("the manifest reads");
        let mut deps = Vec::new();
        let mut inside = false;
        for line in text.lines().map(str::trim) {
            if line.starts_with('[') {
                inside = line == "[dependencies]";
            } else if inside && !line.is_empty() && !line.starts_with('#') {
                deps.push(line.split(['=', ' ']).next().unwrap_or("").to_string());
            }
        }
        deps
    }

    #[test]
    fn the_hook_path_depends_on_std_alone() {
        let dir = env!("CARGO_MANIFEST_DIR");
        assert_eq!(
            dependencies(&format!("{dir}/Cargo.toml")),
            Vec::<String>::new()
        );
        assert_eq!(
            dependencies(&format!("{dir}/../hook/Cargo.toml")),
            ["spool"]
        );
    }
}
