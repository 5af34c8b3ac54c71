//! Subagents whose own hooks fire under an id of their own: the session each
//! works for, and its calls folded into that session (`harness::subagent`).
//!
//! A call that starts such a subagent names it (`Mapping::subagent`): Droid's
//! subagent session's `SessionStart` (its `calling_session_id` is the caller),
//! Copilot CLI's `subagentStart` (its transcript is the session's). From then
//! on a call mapped under the subagent's id goes under the session it works
//! for, its events as a subagent's (tools and asks with its `agent_id`, its
//! start and end as `subagent.*`, nothing of its own turns), and so does a
//! call under the id of a subagent that subagent started: no subagent becomes
//! a session of its own.
//!
//! Learned when the starting call is mapped, before its session is taken (a
//! deferred start still routes the calls after it to the session it waits on,
//! so they keep their order). Kept in memory, bounded: a subagent still running
//! when the daemon restarts reports its later calls under its own id, as every
//! call did before this existed. Never writes the outbox.

use harness::Mapping;
use std::collections::HashMap;

/// At most this many subagents are remembered (a daemon that runs for a year
/// must not grow without end; a forgotten one is long finished).
const KNOWN_MAX: usize = 4096;

/// How many subagents deep a chain is followed (a subagent of a subagent...).
const MAX_DEPTH: usize = 8;

/// Each subagent's (harness, its own id) and the id of the session it works for.
#[derive(Default)]
pub struct Subagents {
    parents: HashMap<(String, String), String>,
}

impl Subagents {
    /// Learns the subagent `mapping` starts, then puts a call of a known
    /// subagent under the session it works for, its events folded. Returns the
    /// subagent's own id when the call was one of its.
    pub fn route(&mut self, harness: &str, mapping: &mut Mapping) -> Option<String> {
        if let Some(subagent) = mapping.subagent.take()
            && subagent != mapping.session_id
        {
            if self.parents.len() >= KNOWN_MAX {
                self.parents.clear();
            }
            self.parents
                .insert((harness.to_string(), subagent), mapping.session_id.clone());
        }
        let parent = self.session_of(harness, &mapping.session_id)?;
        let own = std::mem::replace(&mut mapping.session_id, parent);
        mapping.events = harness::subagent::fold(std::mem::take(&mut mapping.events), &own);
        Some(own)
    }

    /// The session a subagent works for, through the subagents between them;
    /// `None` for an id that is no known subagent's.
    fn session_of(&self, harness: &str, id: &str) -> Option<String> {
        let mut at = self.parents.get(&(harness.to_string(), id.to_string()))?;
        for _ in 0..MAX_DEPTH {
            match self.parents.get(&(harness.to_string(), at.clone())) {
                Some(up) if up != id => at = up,
                _ => break,
            }
        }
        Some(at.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::*;

    fn mapping(session: &str, subagent: Option<&str>, events: Vec<EventData>) -> Mapping {
        Mapping {
            session_id: session.into(),
            subagent: subagent.map(str::to_string),
            events,
            ..Default::default()
        }
    }

    fn tool() -> EventData {
        EventData::ToolStarted(ToolStarted {
            tool: "Execute".into(),
            ..Default::default()
        })
    }

    fn prompt() -> EventData {
        EventData::TurnStarted(TurnStarted::default())
    }

    #[test]
    fn a_subagents_calls_go_under_the_session_it_works_for_at_any_depth() {
        let mut s = Subagents::default();
        let started = EventData::SubagentStarted(SubagentStarted {
            agent_id: "child".into(),
            agent_type: None,
        });
        let mut start = mapping("root", Some("child"), vec![started.clone()]);
        assert_eq!(
            s.route("droid", &mut start),
            None,
            "the start is the root's"
        );
        assert_eq!(start.session_id, "root");
        assert_eq!(start.events, [started]);

        let mut call = mapping("child", None, vec![prompt(), tool()]);
        assert_eq!(s.route("droid", &mut call).as_deref(), Some("child"));
        assert_eq!(call.session_id, "root");
        let (kind, data) = call.events[0].clone().into_parts();
        assert_eq!(
            (kind.as_str(), data["agent_id"].as_str()),
            ("tool.started", Some("child"))
        );
        assert_eq!(call.events.len(), 1, "its prompt is not the root's");

        // A subagent the child started, named by the child's id.
        let mut nested = mapping("child", Some("grandchild"), vec![]);
        s.route("droid", &mut nested);
        assert_eq!(nested.session_id, "root");
        let mut deep = mapping("grandchild", None, vec![tool()]);
        assert_eq!(s.route("droid", &mut deep).as_deref(), Some("grandchild"));
        assert_eq!(deep.session_id, "root");

        // Another harness, another id space; an unknown id is its own session.
        let mut other = mapping("child", None, vec![prompt()]);
        assert_eq!(s.route("copilot-cli", &mut other), None);
        assert_eq!(
            (other.session_id.as_str(), other.events.len()),
            ("child", 1)
        );
    }

    #[test]
    fn a_loop_of_ids_ends() {
        let mut s = Subagents::default();
        s.route("h", &mut mapping("a", Some("b"), vec![]));
        let mut back = mapping("b", Some("a"), vec![]);
        s.route("h", &mut back);
        let mut call = mapping("a", None, vec![tool()]);
        assert!(s.route("h", &mut call).is_some());
        assert_eq!(s.route("h", &mut mapping("x", Some("x"), vec![])), None);
    }
}
