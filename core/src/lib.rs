//! `sessionpipe_core`: the daemon and the `sessionpipe` command, over the crates
//! below it (`spool`, `protocol`, `redact`, `harness`, `adapters`).
//!
//! The modules form layers, and a module imports only from its own layer's
//! lower neighbours or below (each module's opening doc names its layer; the
//! `layering` test holds the code to those lines):
//!
//! 1. `state`, `logging`, `runtime`: the machine's own files (settings, secrets,
//!    the daemon lock), the log, and the async runtime.
//! 2. `pipeline`: spool → adapter → session rules → secrets@1 → outbox; the
//!    privacy filter readers apply.
//! 3. services over the pipeline: `installers`, `backfill`, `sinks`, `notify`,
//!    `tail`, `conformance`, `titles`, `service` (the daemon as a user service).
//!    Control, the ACP driver and the account pool join this layer, each in a
//!    folder of its own, run by the daemon.
//! 4. `daemon`: the daemon's life (lock, wake socket, runtime) and its local API.
//! 5. `cli`: the `sessionpipe` command.
//!
//! This crate knows nothing of windows, trays or native notifications: the app
//! is a shell over it.

// The crates below, for the app and the tests, which depend on this one alone.
pub use {adapters, harness, protocol, spool};

pub mod backfill;
pub mod cli;
pub mod conformance;
pub mod control;
pub mod daemon;
pub mod installers;
pub mod logging;
pub mod notify;
pub mod pipeline;
pub mod pool;
pub mod retention;
pub mod runtime;
pub mod service;
pub mod sinks;
pub mod state;
pub mod tail;
pub mod titles;

/// The layers above, held to: every top-level module names its layer in its
/// opening doc (`Layer N, name: ...`), imports only from its own layer or below,
/// and no two modules import each other, at the top or inside any folder (a
/// child never imports its folder's own file back: the folder is the façade).
#[cfg(test)]
mod layering {
    use sessionpipe_testkit::layers::{self, File};
    use std::collections::{BTreeMap, BTreeSet};
    use std::path::Path;

    fn src() -> Vec<File> {
        layers::files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
    }

    fn top_layers(files: &[File]) -> BTreeMap<String, u32> {
        let mut out = BTreeMap::new();
        // A top-level module's own file: `src/x.rs` or `src/x/mod.rs`.
        for f in files.iter().filter(|f| f.module.len() == 1) {
            let layer = layers::declared_layer(f).unwrap_or_else(|| {
                panic!("{} names no layer in its opening doc", f.path.display())
            });
            out.insert(f.module[0].clone(), layer);
        }
        out
    }

    #[test]
    fn each_module_imports_only_its_layer_or_below() {
        let files = src();
        let layer = top_layers(&files);
        let mut wrong = Vec::new();
        for f in files.iter().filter(|f| !f.module.is_empty()) {
            let own = layer[&f.module[0]];
            for r in layers::references(f) {
                if let Some(theirs) = r.first().and_then(|t| layer.get(t))
                    && *theirs > own
                {
                    wrong.push(format!(
                        "{} (layer {own}) imports {} (layer {theirs})",
                        f.path.display(),
                        r.join("::")
                    ));
                }
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    #[test]
    fn no_module_imports_one_that_imports_it_back() {
        let files = src();
        let mut folders: BTreeSet<Vec<String>> = BTreeSet::new();
        for f in &files {
            for n in 0..f.module.len() {
                folders.insert(f.module[..n].to_vec());
            }
        }
        let mut circles = Vec::new();
        for folder in folders {
            let graph = layers::child_graph(&files, &folder);
            if let Some(c) = layers::circle(&graph) {
                circles.push(format!(
                    "an import circle in crate::{}: {}",
                    folder.join("::"),
                    c.iter()
                        .map(|n| if n.is_empty() { "(its own file)" } else { n })
                        .collect::<Vec<_>>()
                        .join(" -> ")
                ));
            }
        }
        assert!(circles.is_empty(), "{}", circles.join("\n"));
    }
}
