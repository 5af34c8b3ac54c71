//! Devin (`devin`): ADAPTERS.md's Devin row. Being written; until then every
//! call is quarantined with the reason below rather than guessed at.

use super::{Adapter, MapError, Mapped};
use crate::job::Job;

pub struct Devin;

impl Adapter for Devin {
    fn name(&self) -> &'static str {
        "devin"
    }

    fn map(&self, _job: &Job) -> Result<Mapped, MapError> {
        Err("the devin adapter is not written yet".into())
    }
}
