//! Which turn OpenCode's events belong to, kept in the session's memo.
//!
//! Owns the order the protocol needs that OpenCode's bus does not give: a
//! turn starts once per user message (OpenCode updates a message several
//! times); a tool call and the end of a turn carry the running turn's id
//! (OpenCode names none); an end with no turn running (OpenCode goes idle
//! after an error or an abort too) reports nothing. And a turn that ends
//! while a tool runs (an abort: measured on 1.18.33, `session.idle` comes
//! before the aborted tool's `tool.execute.after`) ends that tool first, not
//! ok, and is an interruption; the tool's own late end is then dropped, so
//! every tool ends once, inside its turn. Does no I/O.

use harness::Memo;
use protocol::{EventData, ToolEnded, TurnEndReason};
use serde_json::{Map, Value};

/// The running turn (the user message that started it).
const RUNNING: &str = "turn";
/// The last turn started, so an update of its message starts none.
const LAST: &str = "last";
/// Tool calls started and not ended: call id → tool.
const OPEN: &str = "open";
/// Tool calls a turn's end ended, whose own end is still to come.
const CLOSED: &str = "closed";
/// The most call ids kept as closed (an end that never comes is forgotten).
const CLOSED_MAX: usize = 64;

/// Why a tool ended with its turn.
const ENDED_WITH_TURN: &str = "the turn ended before the tool did";

pub(super) fn remember(events: &mut Vec<EventData>, memo: &mut Memo) {
    let running = memo
        .get(RUNNING)
        .and_then(Value::as_str)
        .map(str::to_string);
    let mut keep = Vec::with_capacity(events.len());
    for mut e in events.drain(..) {
        match &mut e {
            EventData::TurnStarted(t) => {
                let id = t.turn_id.clone().unwrap_or_default();
                if memo.get(LAST).and_then(Value::as_str) == Some(id.as_str()) {
                    continue;
                }
                memo.insert(LAST.into(), Value::String(id.clone()));
                memo.insert(RUNNING.into(), Value::String(id));
            }
            EventData::TurnEnded(t) => {
                let Some(id) = memo.remove(RUNNING) else {
                    continue;
                };
                t.turn_id = id.as_str().map(str::to_string);
                let open = take_object(memo, OPEN);
                if !open.is_empty() && t.reason == TurnEndReason::Stop {
                    t.reason = TurnEndReason::Interrupt;
                }
                let mut closed = take_list(memo, CLOSED);
                for (call, tool) in open {
                    keep.push(EventData::ToolEnded(ToolEnded {
                        tool: tool.as_str().unwrap_or_default().to_string(),
                        call_id: Some(call.clone()),
                        turn_id: t.turn_id.clone(),
                        ok: false,
                        error: Some(ENDED_WITH_TURN.into()),
                        ..Default::default()
                    }));
                    closed.push(Value::String(call));
                }
                let skip = closed.len().saturating_sub(CLOSED_MAX);
                closed.drain(..skip);
                put(memo, CLOSED, Value::Array(closed));
            }
            EventData::ToolStarted(t) => {
                t.turn_id = running.clone();
                if let Some(call) = &t.call_id {
                    let mut open = take_object(memo, OPEN);
                    open.insert(call.clone(), Value::String(t.tool.clone()));
                    put(memo, OPEN, Value::Object(open));
                }
            }
            EventData::ToolEnded(t) => {
                if let Some(call) = &t.call_id {
                    let mut closed = take_list(memo, CLOSED);
                    let before = closed.len();
                    closed.retain(|c| c.as_str() != Some(call));
                    let ended_with_its_turn = closed.len() < before;
                    put(memo, CLOSED, Value::Array(closed));
                    if ended_with_its_turn {
                        continue;
                    }
                    let mut open = take_object(memo, OPEN);
                    open.remove(call);
                    put(memo, OPEN, Value::Object(open));
                }
                t.turn_id = running.clone();
            }
            EventData::SessionEnded(_) => {
                memo.remove(RUNNING);
                memo.remove(OPEN);
            }
            _ => {}
        }
        keep.push(e);
    }
    *events = keep;
}

fn take_object(memo: &mut Memo, key: &str) -> Map<String, Value> {
    match memo.remove(key) {
        Some(Value::Object(o)) => o,
        _ => Map::new(),
    }
}

/// Keeps `value` under `key` unless it is an empty list or object.
fn put(memo: &mut Memo, key: &str, value: Value) {
    let empty = match &value {
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    };
    if !empty {
        memo.insert(key.into(), value);
    }
}

fn take_list(memo: &mut Memo, key: &str) -> Vec<Value> {
    match memo.remove(key) {
        Some(Value::Array(a)) => a,
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::{ToolStarted, TurnEnded, TurnStarted};

    fn started(turn: &str) -> EventData {
        EventData::TurnStarted(TurnStarted {
            turn_id: Some(turn.into()),
            ..Default::default()
        })
    }

    fn tool(call: &str) -> EventData {
        EventData::ToolStarted(ToolStarted {
            tool: "bash".into(),
            call_id: Some(call.into()),
            turn_id: None,
            agent_id: None,
            input: None,
        })
    }

    fn tool_end(call: &str) -> EventData {
        EventData::ToolEnded(ToolEnded {
            tool: "bash".into(),
            call_id: Some(call.into()),
            ok: true,
            ..Default::default()
        })
    }

    fn end(reason: TurnEndReason) -> EventData {
        EventData::TurnEnded(TurnEnded::new(None, reason))
    }

    fn feed(calls: Vec<EventData>) -> Vec<EventData> {
        let mut memo = Memo::new();
        let mut out = Vec::new();
        for e in calls {
            let mut events = vec![e];
            remember(&mut events, &mut memo);
            out.extend(events);
        }
        out
    }

    fn shape(events: &[EventData]) -> Vec<String> {
        events
            .iter()
            .map(|e| match e {
                EventData::TurnStarted(t) => format!("turn.started {:?}", t.turn_id),
                EventData::TurnEnded(t) => format!("turn.ended {:?} {:?}", t.turn_id, t.reason),
                EventData::ToolStarted(t) => format!("tool.started {:?}", t.turn_id),
                EventData::ToolEnded(t) => {
                    format!("tool.ended {:?} ok={} {:?}", t.turn_id, t.ok, t.error)
                }
                _ => "other".into(),
            })
            .collect()
    }

    #[test]
    fn a_plain_turn_keeps_its_order_and_ids() {
        let events = feed(vec![
            started("m1"),
            started("m1"),
            tool("c1"),
            tool_end("c1"),
            end(TurnEndReason::Stop),
            end(TurnEndReason::Stop),
        ]);
        let t = Some("m1");
        assert_eq!(
            shape(&events),
            [
                format!("turn.started {t:?}"),
                format!("tool.started {t:?}"),
                format!("tool.ended {t:?} ok=true None"),
                format!("turn.ended {t:?} Stop"),
            ]
        );
    }

    #[test]
    fn a_turn_aborted_mid_tool_ends_the_tool_first_and_drops_its_late_end() {
        let events = feed(vec![
            started("m1"),
            tool("c1"),
            end(TurnEndReason::Stop),
            tool_end("c1"),
            started("m2"),
            tool("c2"),
            tool_end("c2"),
            end(TurnEndReason::Stop),
        ]);
        let (t1, t2) = (Some("m1"), Some("m2"));
        assert_eq!(
            shape(&events),
            [
                format!("turn.started {t1:?}"),
                format!("tool.started {t1:?}"),
                format!("tool.ended {t1:?} ok=false {:?}", Some(ENDED_WITH_TURN)),
                format!("turn.ended {t1:?} Interrupt"),
                format!("turn.started {t2:?}"),
                format!("tool.started {t2:?}"),
                format!("tool.ended {t2:?} ok=true None"),
                format!("turn.ended {t2:?} Stop"),
            ]
        );
    }

    #[test]
    fn an_abort_before_the_idle_ends_the_turn_once() {
        let events = feed(vec![
            started("m1"),
            end(TurnEndReason::Interrupt),
            end(TurnEndReason::Stop),
        ]);
        assert_eq!(
            shape(&events),
            [
                format!("turn.started {:?}", Some("m1")),
                format!("turn.ended {:?} Interrupt", Some("m1")),
            ]
        );
    }
}
