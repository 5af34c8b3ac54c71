//! Layer 1, board: a session as the board shows it, folded over its events: the
//! session block merged (PROTOCOL-NOTES §2: an absent or empty member never
//! blanks an earlier value; a title never goes from a better source to a worse
//! one), and its state (needs you / working / done), open attention and last
//! words.
//!
//! This module owns those folding rules, as pure functions over one event at
//! a time. It must not read or write storage (`store` keeps what it folds) nor
//! speak HTTP. Events may arrive out of order: the state follows the highest
//! seq seen; the block takes a later seq's members and only fills gaps from
//! an earlier one, so a duplicate seq 0 can still bring a better title, and
//! nothing else. A `session.backfill` that is not a retry of the one held
//! (remote titles turned on sends one again, under a new event id and after
//! the session's live events) is the sender's newer name for the session: its
//! title replaces one of the same source too (`rename`).

use serde_json::{Map, Value, json};

/// The longest last words kept for the board, in characters.
pub const LAST_WORDS_MAX: usize = 600;

/// Where a session stands (the page's API names it `SessionState`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(rename = "SessionState"))]
#[serde(rename_all = "snake_case")]
pub enum State {
    NeedsYou,
    Working,
    Done,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::NeedsYou => "needs_you",
            State::Working => "working",
            State::Done => "done",
        }
    }

    pub fn parse(s: &str) -> State {
        match s {
            "needs_you" => State::NeedsYou,
            "working" => State::Working,
            _ => State::Done,
        }
    }
}

/// Everything the board keeps of one session.
#[derive(Clone, Debug, PartialEq)]
pub struct Folded {
    pub block: Map<String, Value>,
    /// The highest seq folded into the block and the state.
    pub seq: i64,
    pub state: State,
    pub in_turn: bool,
    /// `{id, kind, tool?, message?, at, tier}` while an attention is open.
    pub attention: Option<Value>,
    pub last_words: Option<String>,
}

impl Default for Folded {
    fn default() -> Folded {
        Folded {
            block: Map::new(),
            seq: i64::MIN,
            state: State::Done,
            in_turn: false,
            attention: None,
            last_words: None,
        }
    }
}

/// `custom` > `harness` > `first-ask` > none.
fn title_rank(source: Option<&Value>) -> u8 {
    match source.and_then(Value::as_str) {
        Some("custom") => 3,
        Some("harness") => 2,
        Some("first-ask") => 1,
        _ => 0,
    }
}

fn present(v: &Value) -> bool {
    !(v.is_null() || v.as_str().is_some_and(str::is_empty))
}

/// Merges an event's session block into `into`. `later`: the event's seq is
/// at or above everything folded so far.
pub fn merge_block(into: &mut Map<String, Value>, from: &Value, later: bool) {
    merge_members(into, from, later);
    merge_title(into, from, later);
}

/// A `session.backfill` that is not a retry of the one held at its key: the
/// sender's newer name for the session (remote titles), though its seq 0 sits
/// below the session's live events. Folded after `fold`, it takes the title
/// only: one of the same or a worse source is replaced, a better one never.
pub fn rename(f: &mut Folded, event: &Value) {
    merge_title(&mut f.block, &event["session"], true);
}

/// Every member but the title: a later event's replace, an earlier one's
/// only fill gaps.
fn merge_members(into: &mut Map<String, Value>, from: &Value, later: bool) {
    let Some(from) = from.as_object() else {
        return;
    };
    for (k, v) in from {
        if matches!(k.as_str(), "seq" | "title" | "title_source") || !present(v) {
            continue;
        }
        if later || !into.contains_key(k) {
            into.insert(k.clone(), v.clone());
        }
    }
}

/// The title: a better source replaces, a worse one never does, and the same
/// source replaces when `newer` (a later seq, or a renamed backfill).
fn merge_title(into: &mut Map<String, Value>, from: &Value, newer: bool) {
    let Some(from) = from.as_object() else {
        return;
    };
    if let Some(title) = from.get("title").filter(|t| present(t)) {
        let (new, old) = (
            title_rank(from.get("title_source")),
            title_rank(into.get("title_source")),
        );
        let kept = into.get("title").is_some_and(present);
        if !kept || new > old || (new == old && newer) {
            into.insert("title".into(), title.clone());
            match from.get("title_source").filter(|s| present(s)) {
                Some(s) => into.insert("title_source".into(), s.clone()),
                None => into.remove("title_source"),
            };
        }
    }
}

/// `s` cut to `max` characters, an ellipsis marking a cut.
pub fn cut(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_string(),
    }
}

fn text(v: &Value, max: usize) -> Option<String> {
    let s = v.as_str()?.trim();
    (!s.is_empty()).then(|| cut(s, max))
}

/// Folds one stored event in. `stored`: false for a duplicate, which may only
/// better the block (its state was folded when it first came).
pub fn fold(f: &mut Folded, event: &Value, seq: i64, stored: bool) {
    let later = seq >= f.seq;
    merge_block(&mut f.block, &event["session"], later);
    if !stored || !later {
        return;
    }
    f.seq = seq;
    let data = &event["data"];
    let ty = event["type"].as_str().unwrap_or("");
    match ty {
        "attention.needed" => {
            // The tier it came at: what the page may say the machine hid.
            let mut a = json!({
                "id": data["attention_id"],
                "kind": data["kind"],
                "at": event["time"],
                "tier": event["tier"],
            });
            for k in ["tool", "message"] {
                if present(&data[k]) {
                    a[k] = data[k].clone();
                }
            }
            f.attention = Some(a);
            f.state = State::NeedsYou;
            return;
        }
        "turn.transcript" | "turn.progress" => {
            if let Some(words) = text(&data["assistant"], LAST_WORDS_MAX) {
                f.last_words = Some(words);
            }
            // Neither is a hook event: an open attention stays open.
            return;
        }
        "session.heartbeat" | "limits.observed" => return,
        "turn.started" => f.in_turn = true,
        "turn.ended" | "session.ended" => f.in_turn = false,
        _ => {}
    }
    let cleared = ty != "attention.cleared"
        || f.attention
            .as_ref()
            .is_none_or(|a| a["id"] == data["attention_id"]);
    if cleared {
        // The session's next hook event, or its own clearing, ends it.
        f.attention = None;
    }
    f.state = match (&f.attention, f.in_turn) {
        (Some(_), _) => State::NeedsYou,
        (None, true) => State::Working,
        (None, false) => State::Done,
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(ty: &str, session: Value, data: Value) -> Value {
        json!({"type": ty, "time": "2026-01-01T00:00:00.000Z", "session": session, "data": data})
    }

    #[test]
    fn empty_members_never_blank_and_titles_keep_their_best_source() {
        let mut b = Map::new();
        merge_block(
            &mut b,
            &json!({"id": "s", "seq": 3, "cwd": "~/w", "model": "m1",
            "title": "Fix it", "title_source": "harness"}),
            true,
        );
        merge_block(
            &mut b,
            &json!({"seq": 4, "cwd": "", "model": null,
            "title": "fix the thing", "title_source": "first-ask"}),
            true,
        );
        assert_eq!(b["cwd"], "~/w");
        assert_eq!(b["model"], "m1");
        assert_eq!(
            b["title"], "Fix it",
            "a worse source never replaces a better one"
        );
        // A re-sent backfill (seq 0, earlier) with a custom title betters it;
        // its other members only fill gaps.
        merge_block(
            &mut b,
            &json!({"seq": 0, "cwd": "~/old", "branch": "main",
            "title": "Release prep", "title_source": "custom"}),
            false,
        );
        assert_eq!(
            (b["title"].as_str(), b["title_source"].as_str()),
            (Some("Release prep"), Some("custom"))
        );
        assert_eq!(
            (b["cwd"].as_str(), b["branch"].as_str()),
            (Some("~/w"), Some("main"))
        );
        assert!(!b.contains_key("seq"));
    }

    #[test]
    fn state_follows_the_turn_and_the_attention() {
        let mut f = Folded::default();
        let s = json!({"id": "s"});
        fold(
            &mut f,
            &ev("session.started", s.clone(), json!({})),
            0,
            true,
        );
        assert_eq!(f.state, State::Done);
        fold(&mut f, &ev("turn.started", s.clone(), json!({})), 1, true);
        assert_eq!(f.state, State::Working);
        fold(
            &mut f,
            &ev(
                "attention.needed",
                s.clone(),
                json!({"attention_id": "a1", "kind": "permission", "tool": "Bash", "message": ""}),
            ),
            2,
            true,
        );
        assert_eq!(f.state, State::NeedsYou);
        assert_eq!(f.attention.as_ref().unwrap()["tool"], "Bash");
        assert!(f.attention.as_ref().unwrap().get("message").is_none());
        fold(
            &mut f,
            &ev(
                "turn.progress",
                s.clone(),
                json!({"assistant": "Working on it"}),
            ),
            3,
            true,
        );
        assert_eq!(f.state, State::NeedsYou, "progress is not a hook event");
        fold(
            &mut f,
            &ev("tool.started", s.clone(), json!({"tool": "Bash"})),
            4,
            true,
        );
        assert_eq!((f.state, f.attention.is_none()), (State::Working, true));
        // An older event arriving late changes nothing.
        fold(
            &mut f,
            &ev(
                "attention.needed",
                s.clone(),
                json!({"attention_id": "a0", "kind": "idle"}),
            ),
            1,
            true,
        );
        assert_eq!(f.state, State::Working);
        fold(
            &mut f,
            &ev(
                "turn.transcript",
                s.clone(),
                json!({"assistant": "x".repeat(700)}),
            ),
            5,
            true,
        );
        assert_eq!(
            f.last_words.as_ref().unwrap().chars().count(),
            LAST_WORDS_MAX + 1
        );
        fold(
            &mut f,
            &ev("turn.ended", s, json!({"reason": "stop"})),
            6,
            true,
        );
        assert_eq!(f.state, State::Done);
    }
}
