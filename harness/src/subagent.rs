//! What a subagent's own hook call reports in the session it works for, when its
//! hooks fire under an id of its own (a Droid subagent is a session of its own;
//! a Copilot CLI subagent's hooks carry its own id as `sessionId`). The call
//! that started it said so (`Mapping::subagent`), and the daemon folds the
//! subagent's later calls into that session with `fold`.
//!
//! The rule is Claude Code's and Codex's, whose subagents' hooks already name
//! the parent: the subagent's tool calls and asks belong to the session, each
//! with its `agent_id`; its start and end are `subagent.*`; its prompts, turns
//! and compactions are not the session's and report nothing. No I/O, no
//! harness named here.

use protocol::{EventData, SubagentEnded, SubagentStarted};

/// `events`, as a subagent's whose own id is `agent_id`, in its parent's
/// session: tool events and attentions keep the agent they name, else get
/// `agent_id`; the subagent's own session start and end become `subagent.*`;
/// `subagent.*` of a subagent it started stay as they are; nothing else stays.
pub fn fold(events: Vec<EventData>, agent_id: &str) -> Vec<EventData> {
    let agent = || Some(agent_id.to_string());
    events
        .into_iter()
        .filter_map(|event| match event {
            EventData::ToolStarted(mut t) => {
                t.agent_id = t.agent_id.or_else(agent);
                Some(EventData::ToolStarted(t))
            }
            EventData::ToolEnded(mut t) => {
                t.agent_id = t.agent_id.or_else(agent);
                Some(EventData::ToolEnded(t))
            }
            EventData::AttentionNeeded(mut a) => {
                a.agent_id = a.agent_id.or_else(agent);
                Some(EventData::AttentionNeeded(a))
            }
            EventData::SessionStarted(_) => Some(EventData::SubagentStarted(SubagentStarted {
                agent_id: agent_id.to_string(),
                agent_type: None,
            })),
            EventData::SessionEnded(_) => Some(EventData::SubagentEnded(SubagentEnded {
                agent_id: agent_id.to_string(),
                agent_type: None,
                background: None,
            })),
            e @ (EventData::SubagentStarted(_) | EventData::SubagentEnded(_)) => Some(e),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::*;

    #[test]
    fn a_subagents_tools_asks_start_and_end_stay_its_turns_do_not() {
        let tool = |agent: Option<&str>| {
            EventData::ToolStarted(ToolStarted {
                tool: "Execute".into(),
                agent_id: agent.map(str::to_string),
                ..Default::default()
            })
        };
        let folded = fold(
            vec![
                EventData::SessionStarted(SessionStarted {
                    source: StartSource::Startup,
                }),
                EventData::TurnStarted(TurnStarted::default()),
                tool(None),
                tool(Some("grandchild")),
                EventData::ToolEnded(ToolEnded {
                    tool: "Execute".into(),
                    ok: true,
                    ..Default::default()
                }),
                EventData::AttentionNeeded(AttentionNeeded {
                    attention_id: "notif-1".into(),
                    kind: AttentionKind::Permission,
                    tool: None,
                    message: None,
                    agent_id: None,
                }),
                EventData::ContextCompacted(ContextCompacted {
                    trigger: CompactTrigger::Auto,
                }),
                EventData::TurnEnded(TurnEnded::new(None, TurnEndReason::Stop)),
                EventData::SubagentEnded(SubagentEnded {
                    agent_id: "grandchild".into(),
                    agent_type: None,
                    background: None,
                }),
                EventData::SessionEnded(SessionEnded {
                    reason: EndReason::Other,
                }),
            ],
            "child",
        );
        let parts: Vec<(String, serde_json::Map<String, serde_json::Value>)> =
            folded.into_iter().map(EventData::into_parts).collect();
        let kinds: Vec<&str> = parts.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            kinds,
            [
                "subagent.started",
                "tool.started",
                "tool.started",
                "tool.ended",
                "attention.needed",
                "subagent.ended",
                "subagent.ended"
            ]
        );
        let agents: Vec<&str> = parts
            .iter()
            .map(|(_, d)| d["agent_id"].as_str().unwrap())
            .collect();
        assert_eq!(
            agents,
            [
                "child",
                "child",
                "grandchild",
                "child",
                "child",
                "grandchild",
                "child"
            ]
        );
    }
}
