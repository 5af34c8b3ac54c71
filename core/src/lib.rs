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
//!    `tail`, `conformance`, `titles`, `service` (the daemon as a user service),
//!    `pool` (the account pool), `usage` (tokens and their cost), `pace` (limit
//!    windows' pace), and `control`: the daemon's side of the
//!    `sessionpipe-control` crate, which is of this layer too. The compiler
//!    keeps that crate below the daemon (it cannot name this crate); the
//!    `layering` test keeps it above the pipeline (no module below layer 3
//!    names it) and holds its own modules to no circle.
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
pub mod pace;
pub mod pipeline;
pub mod pool;
pub mod retention;
pub mod runtime;
pub mod service;
pub mod sinks;
pub mod state;
pub mod tail;
pub mod titles;
pub mod usage;

/// The layers above, held to: every top-level module names its layer in its
/// opening doc (`Layer N, name: ...`), imports only from its own layer or below
/// (the workspace's crates of a layer, `CRATES`, included), and no two modules
/// import each other, at the top or inside any folder (a child never imports
/// its folder's own file back: the folder is the façade), here or in those
/// crates.
#[cfg(test)]
mod layering {
    use sessionpipe_testkit::layers::{self, File};
    use std::collections::{BTreeMap, BTreeSet};
    use std::path::Path;

    /// The workspace's crates that are a layer of this one, and its number:
    /// a module below it must not name them.
    const CRATES: &[(&str, &str, u32)] = &[("sessionpipe_control", "../control/src", 3)];

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
            for (krate, _, theirs) in CRATES {
                if *theirs > own && layers::names_crate(f, krate) {
                    wrong.push(format!(
                        "{} (layer {own}) names {krate} (layer {theirs})",
                        f.path.display()
                    ));
                }
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    /// A crate of a layer names no crate of the workspace above it: what the
    /// compiler holds it to (`sessionpipe_core` is not among its
    /// dependencies), read here as the rest is.
    #[test]
    fn a_layer_crate_names_nothing_above_it() {
        for (krate, dir, _) in CRATES {
            let files = layers::files(&Path::new(env!("CARGO_MANIFEST_DIR")).join(dir));
            assert!(
                files.len() > 10,
                "{krate}: its files are not where {dir} says"
            );
            let above: Vec<_> = files
                .iter()
                .filter(|f| layers::names_crate(f, "sessionpipe_core"))
                .map(|f| f.path.display().to_string())
                .collect();
            assert!(above.is_empty(), "{krate}: {above:?}");
        }
    }

    #[test]
    fn no_module_imports_one_that_imports_it_back() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut trees = vec![("sessionpipe_core", src())];
        for (krate, dir, _) in CRATES {
            trees.push((krate, layers::files(&root.join(dir))));
        }
        let circles: Vec<String> = trees
            .iter()
            .flat_map(|(krate, files)| circles_in(krate, files))
            .collect();
        assert!(circles.is_empty(), "{}", circles.join("\n"));
    }

    /// The import circles among the modules of one crate, folder by folder.
    fn circles_in(krate: &str, files: &[File]) -> Vec<String> {
        let mut folders: BTreeSet<Vec<String>> = BTreeSet::new();
        for f in files {
            for n in 0..f.module.len() {
                folders.insert(f.module[..n].to_vec());
            }
        }
        let mut circles = Vec::new();
        for folder in folders {
            let graph = layers::child_graph(files, &folder);
            if let Some(c) = layers::circle(&graph) {
                circles.push(format!(
                    "an import circle in {krate}::{}: {}",
                    folder.join("::"),
                    c.iter()
                        .map(|n| if n.is_empty() { "(its own file)" } else { n })
                        .collect::<Vec<_>>()
                        .join(" -> ")
                ));
            }
        }
        circles
    }
}
