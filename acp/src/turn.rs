//! One prompt turn as the client keeps it: the reply the agent's text chunks
//! make, the tools it named, what the machine's mode refused, and the answer
//! to a `session/request_permission` (ADAPTERS.md: `safe` refuses what needs
//! approval, `auto` takes the agent's allow-once option; never an
//! allow-always, which would change the person's rules).
//!
//! Pure: no I/O, no clock. The reply is bounded (its newest part is kept) so
//! an agent that floods updates costs a fixed amount of memory.

use serde_json::{Value, json};

/// The most of a reply kept, its newest part (an ack carries far less).
pub const MAX_REPLY: usize = 256 << 10;

/// What the machine's mode lets a turn's agent do without a person.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Refuse whatever the agent asks approval for.
    Safe,
    /// Allow once what the agent asks approval for.
    Auto,
}

/// A tool the agent said it ran or wanted to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolSeen {
    pub id: String,
    pub title: String,
    pub status: String,
}

/// The turn running in one session.
#[derive(Debug)]
pub struct Turn {
    pub mode: Mode,
    reply: String,
    /// The reply had to be cut (its oldest part dropped).
    cut: bool,
    pub tools: Vec<ToolSeen>,
    /// Titles of the tools the mode refused.
    pub refused: Vec<String>,
    /// Text chunks seen (for progress, even when the reply is cut).
    pub chunks: u64,
}

impl Turn {
    pub fn new(mode: Mode) -> Turn {
        Turn {
            mode,
            reply: String::new(),
            cut: false,
            tools: Vec::new(),
            refused: Vec::new(),
            chunks: 0,
        }
    }

    pub fn reply(&self) -> String {
        if self.cut {
            format!("…{}", self.reply)
        } else {
            self.reply.clone()
        }
    }

    /// Folds one `session/update`'s `update`; true when the reply grew.
    pub fn fold(&mut self, update: &Value) -> bool {
        match update["sessionUpdate"].as_str() {
            Some("agent_message_chunk") => {
                let content = &update["content"];
                let Some(text) = content["text"]
                    .as_str()
                    .filter(|_| content["type"] == "text")
                else {
                    return false;
                };
                self.push(text);
                self.chunks += 1;
                true
            }
            Some("tool_call") => {
                let id = update["toolCallId"].as_str().unwrap_or_default();
                self.tool(id).title = update["title"].as_str().unwrap_or_default().to_string();
                self.tool(id).status = update["status"].as_str().unwrap_or("pending").to_string();
                false
            }
            Some("tool_call_update") => {
                let id = update["toolCallId"].as_str().unwrap_or_default();
                let tool = self.tool(id);
                if let Some(t) = update["title"].as_str() {
                    tool.title = t.to_string();
                }
                if let Some(s) = update["status"].as_str() {
                    tool.status = s.to_string();
                }
                false
            }
            _ => false,
        }
    }

    fn tool(&mut self, id: &str) -> &mut ToolSeen {
        let at = match self.tools.iter().position(|t| t.id == id) {
            Some(i) => i,
            None => {
                self.tools.push(ToolSeen {
                    id: id.to_string(),
                    ..Default::default()
                });
                self.tools.len() - 1
            }
        };
        &mut self.tools[at]
    }

    fn push(&mut self, text: &str) {
        self.reply.push_str(text);
        if self.reply.len() > MAX_REPLY {
            let mut from = self.reply.len() - MAX_REPLY;
            while !self.reply.is_char_boundary(from) {
                from += 1;
            }
            self.reply.drain(..from);
            self.cut = true;
        }
    }

    /// The answer to a `session/request_permission` with these `params`, by
    /// the turn's mode; a refusal is remembered for the reply.
    pub fn answer_permission(&mut self, params: &Value) -> Value {
        let options = params["options"].as_array().cloned().unwrap_or_default();
        let kind_of = |kind: &str| {
            options
                .iter()
                .find(|o| o["kind"] == kind)
                .and_then(|o| o["optionId"].as_str())
                .map(str::to_string)
        };
        let chosen = match self.mode {
            Mode::Auto => kind_of("allow_once").or_else(|| kind_of("reject_once")),
            Mode::Safe => kind_of("reject_once"),
        };
        let allowed =
            self.mode == Mode::Auto && kind_of("allow_once") == chosen && chosen.is_some();
        if !allowed {
            let call = &params["toolCall"];
            let title = call["title"]
                .as_str()
                .or_else(|| call["toolCallId"].as_str())
                .unwrap_or("a tool")
                .to_string();
            self.refused.push(title);
        }
        match chosen {
            Some(id) => json!({"outcome": {"outcome": "selected", "optionId": id}}),
            // No one-time choice offered: neither allowing nor refusing for
            // good is ours to choose, so the request is withdrawn.
            None => json!({"outcome": {"outcome": "cancelled"}}),
        }
    }
}

/// How a turn ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TurnEnd {
    /// The agent's `stopReason` (`end_turn`, `cancelled`, `refusal`, ...).
    pub stop: String,
    pub reply: String,
    pub tools: Vec<ToolSeen>,
    pub refused: Vec<String>,
}

impl TurnEnd {
    pub fn of(turn: Turn, stop: String) -> TurnEnd {
        TurnEnd {
            stop,
            reply: turn.reply(),
            tools: turn.tools,
            refused: turn.refused,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> Value {
        json!({"toolCall": {"toolCallId": "c1", "title": "touch marker"},
               "options": [
                   {"optionId": "once", "kind": "allow_once", "name": "Allow"},
                   {"optionId": "always", "kind": "allow_always", "name": "Always"},
                   {"optionId": "reject", "kind": "reject_once", "name": "Reject"}]})
    }

    #[test]
    fn safe_refuses_auto_allows_once_and_neither_ever_allows_always() {
        let mut safe = Turn::new(Mode::Safe);
        assert_eq!(
            safe.answer_permission(&options()),
            json!({"outcome": {"outcome": "selected", "optionId": "reject"}})
        );
        assert_eq!(safe.refused, ["touch marker"]);
        let mut auto = Turn::new(Mode::Auto);
        assert_eq!(
            auto.answer_permission(&options()),
            json!({"outcome": {"outcome": "selected", "optionId": "once"}})
        );
        assert!(auto.refused.is_empty());
        // Only "always" offered: withdrawn, and counted as refused.
        let only_always = json!({"toolCall": {"toolCallId": "c2"},
            "options": [{"optionId": "always", "kind": "allow_always"}]});
        let mut auto = Turn::new(Mode::Auto);
        assert_eq!(
            auto.answer_permission(&only_always),
            json!({"outcome": {"outcome": "cancelled"}})
        );
        assert_eq!(auto.refused, ["c2"]);
    }

    #[test]
    fn text_chunks_make_the_reply_tools_are_named_and_other_kinds_ignored() {
        let mut t = Turn::new(Mode::Safe);
        assert!(!t.fold(&json!({"sessionUpdate": "tool_call", "toolCallId": "a", "title": "echo", "status": "pending"})));
        assert!(!t.fold(
            &json!({"sessionUpdate": "tool_call_update", "toolCallId": "a", "status": "completed"})
        ));
        assert!(t.fold(&json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "It "}})));
        assert!(t.fold(&json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "printed."}})));
        assert!(!t.fold(&json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "image", "data": "…"}})));
        assert!(!t.fold(&json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hmm"}})));
        assert!(!t.fold(&json!({"sessionUpdate": "plan", "entries": []})));
        let end = TurnEnd::of(t, "end_turn".into());
        assert_eq!(end.reply, "It printed.");
        assert_eq!(
            end.tools,
            [ToolSeen {
                id: "a".into(),
                title: "echo".into(),
                status: "completed".into()
            }]
        );
    }

    #[test]
    fn a_flood_keeps_only_the_newest_part_of_the_reply() {
        let mut t = Turn::new(Mode::Safe);
        let chunk = json!({"sessionUpdate": "agent_message_chunk",
                           "content": {"type": "text", "text": "é".repeat(1000)}});
        for _ in 0..1000 {
            t.fold(&chunk);
        }
        assert_eq!(t.chunks, 1000);
        let reply = t.reply();
        assert!(reply.starts_with('…'));
        assert!(reply.len() <= MAX_REPLY + '…'.len_utf8());
    }
}
