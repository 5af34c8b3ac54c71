//! One check's verdict, as every conformance runner reports it: passed, failed
//! with the words of its `FAIL` line, or skipped with why.

/// Why a check (or the run) failed, in words for its `FAIL` line.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Failed(pub String);

impl From<String> for Failed {
    fn from(s: String) -> Self {
        Failed(s)
    }
}

impl From<&str> for Failed {
    fn from(s: &str) -> Self {
        Failed(s.to_string())
    }
}

/// One check's result.
#[derive(Clone, Debug)]
pub struct Check {
    pub name: String,
    pub result: Outcome,
}

/// Passed, failed (why) or skipped (why).
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Pass,
    Fail(String),
    Skip(String),
}

impl From<Result<(), Failed>> for Outcome {
    fn from(r: Result<(), Failed>) -> Outcome {
        r.map_or_else(|f| Outcome::Fail(f.0), |()| Outcome::Pass)
    }
}
