//! The typed data of every event type (PROTOCOL-NOTES §3, with the fields
//! ADAPTERS.md adds). `EventData` serialises to the envelope's `type` and `data`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One event's type and data. Optional fields are omitted when absent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "data")]
pub enum EventData {
    #[serde(rename = "session.started")]
    SessionStarted(SessionStarted),
    #[serde(rename = "session.heartbeat")]
    SessionHeartbeat(Empty),
    #[serde(rename = "session.ended")]
    SessionEnded(SessionEnded),
    #[serde(rename = "session.backfill")]
    SessionBackfill(SessionBackfill),
    #[serde(rename = "session.forgotten")]
    SessionForgotten(Empty),
    #[serde(rename = "turn.started")]
    TurnStarted(TurnStarted),
    #[serde(rename = "turn.ended")]
    TurnEnded(TurnEnded),
    #[serde(rename = "turn.transcript")]
    TurnTranscript(TurnTranscript),
    #[serde(rename = "turn.progress")]
    TurnProgress(TurnProgress),
    #[serde(rename = "tool.started")]
    ToolStarted(ToolStarted),
    #[serde(rename = "tool.ended")]
    ToolEnded(ToolEnded),
    #[serde(rename = "files.changed")]
    FilesChanged(FilesChanged),
    #[serde(rename = "attention.needed")]
    AttentionNeeded(AttentionNeeded),
    #[serde(rename = "attention.cleared")]
    AttentionCleared(AttentionCleared),
    #[serde(rename = "subagent.started")]
    SubagentStarted(SubagentStarted),
    #[serde(rename = "subagent.ended")]
    SubagentEnded(SubagentEnded),
    #[serde(rename = "context.compacted")]
    ContextCompacted(ContextCompacted),
    #[serde(rename = "limits.observed")]
    LimitsObserved(LimitsObserved),
}

impl EventData {
    /// The envelope's `type` and `data` for this event.
    pub fn into_parts(self) -> (String, Map<String, Value>) {
        let mut v = match serde_json::to_value(self) {
            Ok(Value::Object(m)) => m,
            _ => unreachable!("EventData always serialises to an object"),
        };
        let kind = match v.remove("type") {
            Some(Value::String(s)) => s,
            _ => unreachable!("EventData always has a type"),
        };
        let data = match v.remove("data") {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        (kind, data)
    }

    /// Reads a known type's data back; `None` for a type this version does not know
    /// or data that does not fit it.
    pub fn from_parts(kind: &str, data: &Map<String, Value>) -> Option<EventData> {
        let mut m = Map::new();
        m.insert("type".into(), Value::String(kind.to_string()));
        m.insert("data".into(), Value::Object(data.clone()));
        serde_json::from_value(Value::Object(m)).ok()
    }

    /// The protocol type name, e.g. `tool.started`.
    pub fn kind(&self) -> &'static str {
        match self {
            EventData::SessionStarted(_) => "session.started",
            EventData::SessionHeartbeat(_) => "session.heartbeat",
            EventData::SessionEnded(_) => "session.ended",
            EventData::SessionBackfill(_) => "session.backfill",
            EventData::SessionForgotten(_) => "session.forgotten",
            EventData::TurnStarted(_) => "turn.started",
            EventData::TurnEnded(_) => "turn.ended",
            EventData::TurnTranscript(_) => "turn.transcript",
            EventData::TurnProgress(_) => "turn.progress",
            EventData::ToolStarted(_) => "tool.started",
            EventData::ToolEnded(_) => "tool.ended",
            EventData::FilesChanged(_) => "files.changed",
            EventData::AttentionNeeded(_) => "attention.needed",
            EventData::AttentionCleared(_) => "attention.cleared",
            EventData::SubagentStarted(_) => "subagent.started",
            EventData::SubagentEnded(_) => "subagent.ended",
            EventData::ContextCompacted(_) => "context.compacted",
            EventData::LimitsObserved(_) => "limits.observed",
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Empty {}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StartSource {
    Startup,
    Resume,
    Clear,
    Compact,
    Fork,
    Unknown,
}

impl StartSource {
    /// A harness's own word for how a session started; anything else is `unknown`.
    pub fn from_word(word: &str) -> StartSource {
        match word {
            "startup" => StartSource::Startup,
            "resume" => StartSource::Resume,
            "clear" => StartSource::Clear,
            "compact" => StartSource::Compact,
            "fork" => StartSource::Fork,
            _ => StartSource::Unknown,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionStarted {
    pub source: StartSource,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EndReason {
    Clear,
    Logout,
    Exit,
    Other,
}

impl EndReason {
    /// A Claude-shaped `reason`: `clear`, `logout`, `exit` (and Claude Code's
    /// `prompt_input_exit`) are themselves; anything else is `other`.
    pub fn from_word(word: &str) -> EndReason {
        match word {
            "clear" => EndReason::Clear,
            "logout" => EndReason::Logout,
            "exit" | "prompt_input_exit" => EndReason::Exit,
            _ => EndReason::Other,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionEnded {
    pub reason: EndReason,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionBackfill {
    pub started_at: String,
    pub last_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turns: Option<u64>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TurnStarted {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_chars: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submitted_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub injected: Option<bool>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TurnEndReason {
    Stop,
    Interrupt,
    Error,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TurnEnded {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    pub reason: TurnEndReason,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Background work still in flight when the turn ended (Claude Code lists it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background: Option<Vec<Value>>,
}

impl TurnEnded {
    pub fn new(turn_id: Option<String>, reason: TurnEndReason) -> Self {
        TurnEnded {
            turn_id,
            reason,
            ms: None,
            error: None,
            background: None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TurnTranscript {
    pub turn: u64,
    pub user: String,
    pub assistant: String,
    pub at: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TurnProgress {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    pub assistant: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolStarted {
    pub tool: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolEnded {
    pub tool: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ms: Option<u64>,
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FilesChanged {
    pub paths: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AttentionKind {
    Permission,
    Question,
    Elicitation,
    Idle,
    Error,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AttentionNeeded {
    pub attention_id: String,
    pub kind: AttentionKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClearedHow {
    Answered,
    Cancelled,
    Timeout,
    Unknown,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AttentionCleared {
    pub attention_id: String,
    pub how: ClearedHow,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SubagentStarted {
    pub agent_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_type: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SubagentEnded {
    pub agent_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background: Option<Vec<Value>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CompactTrigger {
    Manual,
    Auto,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ContextCompacted {
    pub trigger: CompactTrigger,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LimitsObserved {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    pub windows: Vec<LimitWindow>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct LimitWindow {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_minutes: Option<u64>,
    pub used_percent: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resets_at: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parts_round_trip_and_omit_absent_fields() {
        let ev = EventData::ToolEnded(ToolEnded {
            tool: "Bash".into(),
            call_id: Some("toolu_1".into()),
            ok: true,
            ..Default::default()
        });
        let (kind, data) = ev.clone().into_parts();
        assert_eq!(kind, "tool.ended");
        assert_eq!(
            serde_json::Value::Object(data.clone()),
            json!({"tool":"Bash","call_id":"toolu_1","ok":true})
        );
        assert_eq!(EventData::from_parts(&kind, &data), Some(ev));
    }

    #[test]
    fn empty_data_is_an_object() {
        let (kind, data) = EventData::SessionHeartbeat(Empty {}).into_parts();
        assert_eq!(kind, "session.heartbeat");
        assert!(data.is_empty());
    }

    #[test]
    fn kind_matches_the_serialised_type_for_every_variant() {
        let samples = [
            EventData::SessionStarted(SessionStarted {
                source: StartSource::from_word("weird"),
            }),
            EventData::SessionEnded(SessionEnded {
                reason: EndReason::Exit,
            }),
            EventData::TurnEnded(TurnEnded::new(None, TurnEndReason::Interrupt)),
            EventData::AttentionCleared(AttentionCleared {
                attention_id: "a".into(),
                how: ClearedHow::Unknown,
            }),
            EventData::ContextCompacted(ContextCompacted {
                trigger: CompactTrigger::Auto,
            }),
            EventData::LimitsObserved(LimitsObserved::default()),
        ];
        for ev in samples {
            let k = ev.kind();
            assert_eq!(ev.into_parts().0, k);
        }
    }

    #[test]
    fn unknown_or_misfit_data_is_not_a_known_event() {
        assert_eq!(EventData::from_parts("custom.thing", &Map::new()), None);
        let bad = json!({"source": "sideways"});
        assert_eq!(
            EventData::from_parts("session.started", bad.as_object().unwrap()),
            None
        );
    }
}
