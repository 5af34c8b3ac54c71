//! A session as a person names it on the command line: `harness:id`, an id
//! alone, or a unique start of either (the 8 characters `tail` prints), found
//! among the sessions the outbox knows.
//!
//! It owns that lookup and the words for a name that matches nothing or more
//! than one. It must not write anything, and it never guesses: an ambiguous
//! start is refused with the candidates, never taken as the newest.

use crate::pipeline::outbox::{Outbox, OutboxError};
use spool::StatePaths;

/// At most this many candidates are named when a start is ambiguous.
const SHOWN: usize = 5;

#[derive(Debug, thiserror::Error)]
pub enum SessionArgError {
    #[error("{0:?} names no session: give harness:id or an id (or its start)")]
    Empty(String),
    #[error("no session is recorded yet, so {0:?} matches none")]
    NoOutbox(String),
    #[error("no session matches {0:?} (`sessionpipe tail --no-follow` lists them)")]
    NoMatch(String),
    #[error("{given:?} matches {count} sessions: {shown}; give more of the id")]
    Ambiguous {
        given: String,
        count: usize,
        shown: String,
    },
    #[error(transparent)]
    Outbox(#[from] OutboxError),
}

/// The one session `given` names, as `(harness, id)`. An exact id wins over
/// longer ids it starts; `harness:` narrows the search to that harness.
pub fn resolve(paths: &StatePaths, given: &str) -> Result<(String, String), SessionArgError> {
    let (harness, start) = match given.split_once(':') {
        Some((h, rest)) if adapters::lookup(h).is_some() => (Some(h), rest),
        _ => (None, given),
    };
    if start.is_empty() {
        return Err(SessionArgError::Empty(given.to_string()));
    }
    let Some(outbox) = Outbox::open_readonly(&paths.outbox())? else {
        return Err(SessionArgError::NoOutbox(given.to_string()));
    };
    let known: Vec<(String, String)> = outbox
        .sessions_starting(start)?
        .into_iter()
        .filter(|(h, _)| harness.is_none_or(|want| want == h))
        .collect();
    pick(given, start, known)
}

/// `resolve`'s choice among `known` (most recently active first).
fn pick(
    given: &str,
    start: &str,
    known: Vec<(String, String)>,
) -> Result<(String, String), SessionArgError> {
    let exact: Vec<&(String, String)> = known.iter().filter(|(_, id)| id == start).collect();
    if let [one] = exact.as_slice() {
        return Ok((*one).clone());
    }
    let matching: Vec<&(String, String)> = if exact.is_empty() {
        known
            .iter()
            .filter(|(_, id)| id.starts_with(start))
            .collect()
    } else {
        exact
    };
    match matching.as_slice() {
        [] => Err(SessionArgError::NoMatch(given.to_string())),
        [one] => Ok((*one).clone()),
        many => Err(SessionArgError::Ambiguous {
            given: given.to_string(),
            count: many.len(),
            shown: many
                .iter()
                .take(SHOWN)
                .map(|(h, id)| format!("{h}:{id}"))
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}

/// `resolve`, as `harness:id`.
pub fn qualified(paths: &StatePaths, given: &str) -> Result<String, SessionArgError> {
    resolve(paths, given).map(|(h, id)| format!("{h}:{id}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known() -> Vec<(String, String)> {
        [
            ("claude-code", "10027113-aaaa"),
            ("claude-code", "10027113-bbbb"),
            ("codex", "7f1c2d3e-cccc"),
            ("codex", "7f1c"),
        ]
        .into_iter()
        .map(|(h, i)| (h.to_string(), i.to_string()))
        .collect()
    }

    #[test]
    fn a_unique_start_an_exact_id_or_nothing_and_never_a_guess() {
        let got = |s: &str| pick(s, s, known());
        assert_eq!(
            got("7f1c2d").unwrap(),
            ("codex".into(), "7f1c2d3e-cccc".into())
        );
        assert_eq!(
            got("7f1c").unwrap(),
            ("codex".into(), "7f1c".into()),
            "an exact id wins over the longer ids it starts"
        );
        match got("10027113") {
            Err(SessionArgError::Ambiguous { count, shown, .. }) => {
                assert_eq!(count, 2);
                assert!(shown.contains("claude-code:10027113-aaaa"), "{shown}");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(got("ffff"), Err(SessionArgError::NoMatch(_))));
    }
}
