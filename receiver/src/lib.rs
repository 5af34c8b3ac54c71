//! `sessionpipe-receiver`: the self-hostable receiver of sessionpipe. It is
//! where a person's machines send their agents' sessions (the events side of
//! the HTTP binding, PROTOCOL-NOTES §5), where their phone reaches them (the
//! control side, §6: pairing, and commands signed on the person's device and
//! relayed to the machine that verifies them), and the page they use for it
//! (passkey sign-in, the board, Web Push). One process, one port; everything
//! is kept in one database (`db`): a SQLite file by default, or PostgreSQL,
//! where several receiver processes behind one load balancer share the queue.
//! The project's own tests deliver to it too; the doors they use to arm
//! faults and stand in for a person exist only in a build with the
//! `test-doors` feature (the test kit turns it on), never in a release.
//!
//! The modules, in layers (each imports only its own layer or below, no two
//! import each other, and a folder's own file only gathers its children; the
//! `layering` test holds the code to it):
//!
//! 1. `db`, `check`, `signature`, `board`, `egress`, `push`, `invalid`, `buckets`:
//!    the database, the rules of an event, Standard Webhooks, the board's
//!    folding, where the receiver's own requests may go, Web Push, token
//!    buckets.
//! 2. `store`, `owners`, `accounts`, `notify`: what is kept and its rules
//!    (events, sink tokens, accounts and passkeys, who is told of what).
//! 3. `error`, `request`, `client`, `limits`: HTTP shared by the sides (the
//!    one error type and its answer, reading a request, who is asking, and
//!    each client's share of the doors anyone may reach).
//! 4. `events`, `control`: the machine-facing sides, each with its own state
//!    and router.
//! 5. `page`: the page and its API, over the control side.
//! 6. `routes`, `options`, `tls`, `acme`, `server`: putting it together and
//!    running it (HTTPS from files, or a certificate got over ACME).
//!
//! This crate owns the receiving side only. It must not depend on the sender's code
//! (`sessionpipe-core`): it reads the rules from the spec on its own, so that a
//! sender and this receiver agreeing means something. It carries control messages
//! and never signs one (the machine verifies them), listens on loopback unless
//! told otherwise, and never logs a body, a token, a secret or an
//! `authorization` header.
//!
//! ```no_run
//! use sessionpipe_receiver::{Options, Receiver};
//! let rx = Receiver::start(Options::new("test-token")).unwrap();
//! println!("{}", rx.url()); // http://127.0.0.1:PORT
//! // ... deliver to it ...
//! assert!(rx.stored_keys().is_empty());
//! rx.stop();
//! ```

mod accounts;
mod acme;
mod board;
mod buckets;
pub mod check;
mod client;
mod control;
mod db;
pub mod egress;
mod error;
mod events;
mod invalid;
mod limits;
mod notify;
mod options;
mod owners;
mod page;
pub mod push;
mod request;
mod routes;
mod server;
pub mod signature;
mod store;
mod tls;

pub use acme::{Acme, LETS_ENCRYPT};
pub use check::Key;
pub use client::{Cidr, ProxyHeader};
pub use control::{CONTROL_PATH, ControlOptions, file_sha256};
#[cfg(feature = "test-doors")]
pub use events::Fault;
pub use events::{EVENTS_PATH, Stats};
pub use invalid::Invalid;
pub use options::Options;
pub use page::PageOptions;
pub use server::{Handle, Receiver};
pub use tls::TlsFiles;

/// The layers above, held to: every top-level module names its layer in its
/// opening doc (`Layer N, name: ...`), imports only from its own layer or below,
/// and no two modules import each other, at the top or inside any folder (a
/// child never imports its folder's own file back: the folder is the façade).
/// Test-only modules (declared under `#[cfg(test)]`) may reach anywhere.
#[cfg(test)]
mod layering {
    use sessionpipe_testkit::layers::{self, File};
    use std::collections::{BTreeMap, BTreeSet};
    use std::path::Path;

    /// The library's files, without the binary's `main.rs` and without the
    /// modules only tests compile.
    fn src() -> Vec<File> {
        let all = layers::files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
        let test_only = |f: &File| {
            let Some((name, parent)) = f.module.split_last() else {
                return false;
            };
            all.iter()
                .filter(|p| p.is_mod && p.module == parent)
                .any(|p| {
                    p.text.contains(&format!("#[cfg(test)]\nmod {name};"))
                        || p.text
                            .contains(&format!("#[cfg(test)]\npub(crate) mod {name};"))
                })
        };
        all.iter()
            .filter(|f| !f.path.ends_with("main.rs") && !test_only(f))
            .cloned()
            .collect()
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

    #[test]
    fn the_layers_are_the_ones_the_crate_doc_lists() {
        let layer = top_layers(&src());
        let lib = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs"))
            .unwrap();
        for (module, n) in &layer {
            let line = lib
                .lines()
                .find(|l| l.starts_with(&format!("//! {n}. ")))
                .unwrap_or_else(|| panic!("the crate doc lists no layer {n}"));
            assert!(
                line.contains(&format!("`{module}`")),
                "{module} is layer {n} in its own doc, not in lib.rs's list: {line}"
            );
        }
    }
}
