//! `sessionpipe_harness`: the kit every adapter is written against.
//!
//! An adapter (crate `sessionpipe-adapters`, one folder per harness) implements
//! `adapter::Adapter` with what this crate gives it: reading a hook payload
//! (`payload`), the declarative table of the Claude-shaped harnesses
//! (`claude_shaped`), turning a transcript into turns (`transcript`), the shape of
//! a past session (`backfill`), a harness's own local server for control
//! (`api`), the facts every harness shares (`facts`), the tokens a transcript says a model response used (`usage`), what a subagent's own
//! calls report in the session it works for (`subagent`), and the
//! installer's mechanics that write hook entries into a config file byte for byte
//! (`install`). The job an adapter maps is `spool::Job`, re-exported here.
//!
//! It holds no registry of harnesses and never reaches the pipeline (outbox,
//! sessions, sinks): the crate boundary keeps adapters pure mappings.

pub mod adapter;
pub mod api;
pub mod backfill;
pub mod claude_shaped;
pub mod control;
pub mod digest;
pub mod facts;
pub mod frames;
pub mod headless;
pub mod install;
pub mod payload;
pub mod subagent;
pub mod transcript;
pub mod usage;

pub use adapter::{Adapter, MapError, Mapped, Mapping, Memo, SessionFiles};
pub use spool::Job;

/// The kit's modules import each other in one direction only.
#[cfg(test)]
mod layering {
    use sessionpipe_testkit::layers;
    use std::path::Path;

    #[test]
    fn no_module_of_the_kit_imports_one_that_imports_it_back() {
        let files = layers::files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
        let mut circles = Vec::new();
        for folder in [vec![], vec!["install".to_string()]] {
            if let Some(c) = layers::circle(&layers::child_graph(&files, &folder)) {
                circles.push(format!("{}: {}", folder.join("::"), c.join(" -> ")));
            }
        }
        assert!(circles.is_empty(), "import circles: {}", circles.join("; "));
    }
}
