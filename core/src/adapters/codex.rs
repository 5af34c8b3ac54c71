//! Codex (`codex`): ADAPTERS.md's Codex row. Being written; until then every
//! call is quarantined with the reason below rather than guessed at.

use super::{Adapter, MapError, Mapped};
use crate::job::Job;

pub struct Codex;

impl Adapter for Codex {
    fn name(&self) -> &'static str {
        "codex"
    }

    fn map(&self, _job: &Job) -> Result<Mapped, MapError> {
        Err("the codex adapter is not written yet".into())
    }
}
