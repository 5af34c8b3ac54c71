//! What sessionpipe remembers of a session between hook calls, and the protocol
//! rules that need that memory: `session.started` comes first, an attention is
//! open until it is cleared or the session's next hook event, the session block
//! is merged and never blanked.
//!
//! Pure: the outbox loads and saves a `SessionRecord` around `apply_rules`, and
//! `envelope` wraps one event once the outbox has given it its `seq`.

use harness::Memo;
use protocol::*;
use serde::{Deserialize, Serialize};

/// The rulesets every stored event has been through (see `ingest`).
pub const STORED_RULESETS: &[&str] = &["secrets@1"];
/// Events are stored whole; a sink's filter lowers this to its own tier.
pub const STORED_TIER: u8 = 3;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    /// Everything known of the session (id and seq unused here).
    #[serde(default)]
    pub block: SessionBlock,
    #[serde(default)]
    pub version: Option<String>,
    /// The adapter's own scratch.
    #[serde(default)]
    pub memo: Memo,
    #[serde(default)]
    pub open: Vec<OpenAttention>,
    #[serde(default)]
    pub started: bool,
    /// The turn the hooks hold as running (its turn id, `""` when the harness
    /// names none), from `turn.started` until its `turn.ended`.
    #[serde(default)]
    pub running_turn: Option<String>,
    /// Where the session's transcript is read, and how far.
    #[serde(default)]
    pub transcript: Option<TranscriptState>,
    /// A turn whose Stop named words the transcript did not have yet: later
    /// non-tool hooks read for it until `until_ms`.
    #[serde(default)]
    pub hold: Option<Hold>,
    /// The last `limits.observed` sent for the session (to send only changes).
    #[serde(default)]
    pub last_limits: Option<serde_json::Value>,
    /// The latest `limits.observed` the session carried, whichever way it
    /// came (its status line, its transcript, the pool's answers): the board
    /// shows its account and fullest window without reading events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<LimitsObserved>,
    /// When the running turn last showed life to tier-0 destinations (its start
    /// or a heartbeat), epoch ms.
    #[serde(default)]
    pub last_beat_ms: i64,
    /// When the session last did anything (its last event), epoch ms.
    #[serde(default)]
    pub last_ms: i64,
    /// When sessionpipe first saw the session do anything (its first live
    /// event), epoch ms; 0 for one only backfilled. Kept here because
    /// retention prunes the events and never the record.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub first_ms: i64,
    /// The session reported its end (and has not started again since).
    #[serde(default)]
    pub ended: bool,
    /// For a session a control name reached (a start's, or control's own
    /// for a session it reopened): the harness's own id for it, the first its
    /// hooks reported under that name (another id under the same name is
    /// another session; see `names`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native_id: Option<String>,
    /// What the session's harness's service last said of its name, and when
    /// it was asked (remote titles; see `titles`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_title: Option<RemoteTitle>,
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

/// What was last heard of a session's remote name (remote titles), kept in
/// its record; `titles` decides when it is asked again and how it applies.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteTitle {
    /// The name the service gave, once it gave one.
    #[serde(default)]
    pub title: Option<String>,
    /// When it was last asked, epoch ms (the job's clock).
    #[serde(default)]
    pub asked_ms: i64,
}

impl SessionRecord {
    /// Keeps `last_ms`, `ended` and `limits` in step with events appended for
    /// the session.
    pub fn saw(&mut self, events: &[EventData], time_ms: i64) {
        self.last_ms = self.last_ms.max(time_ms);
        if self.first_ms == 0 || time_ms < self.first_ms {
            self.first_ms = time_ms;
        }
        for ev in events {
            match ev {
                EventData::SessionEnded(_) => self.ended = true,
                EventData::SessionStarted(_) | EventData::TurnStarted(_) => self.ended = false,
                EventData::LimitsObserved(l) => self.limits = Some(l.clone()),
                _ => {}
            }
        }
    }

    /// The session at a glance, as the board and the tray show it.
    pub fn glance(&self) -> Glance {
        if !self.open.is_empty() {
            Glance::NeedsYou
        } else if self.running_turn.is_some() && !self.ended {
            Glance::Working
        } else {
            Glance::Done
        }
    }
}

/// A session's state at a glance: it needs the person (an attention is open), an
/// agent is working (a turn runs), or neither. Ordered most urgent first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum Glance {
    NeedsYou,
    Working,
    Done,
}

impl Glance {
    /// The name the API and the UI use.
    pub fn as_str(self) -> &'static str {
        match self {
            Glance::NeedsYou => "needs_you",
            Glance::Working => "working",
            Glance::Done => "done",
        }
    }
}

/// A heartbeat goes out at most this often while a turn runs.
pub const HEARTBEAT_MS: i64 = 60_000;

/// A `session.heartbeat` for destinations below tier 1, which see nothing of a
/// turn between its start and its end: due when a call inside a running turn
/// comes a minute after the turn's start or the last heartbeat.
pub fn heartbeat_due(
    record: &mut SessionRecord,
    events: &[EventData],
    time_ms: i64,
) -> Option<EventData> {
    if events
        .iter()
        .any(|e| matches!(e, EventData::TurnStarted(_)))
    {
        record.last_beat_ms = time_ms;
        return None;
    }
    let inside = events.iter().any(|e| {
        matches!(
            e,
            EventData::ToolStarted(_)
                | EventData::ToolEnded(_)
                | EventData::SubagentStarted(_)
                | EventData::SubagentEnded(_)
                | EventData::FilesChanged(_)
        )
    });
    if !inside || record.running_turn.is_none() || time_ms - record.last_beat_ms < HEARTBEAT_MS {
        return None;
    }
    record.last_beat_ms = time_ms;
    Some(EventData::SessionHeartbeat(Empty {}))
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TranscriptState {
    pub path: String,
    pub log: harness::transcript::TurnLog,
}

/// A Stop's turn the transcript does not have whole yet (`reading`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Hold {
    pub turn_id: Option<String>,
    /// The words the Stop named: the turn is whole once they are its last.
    pub words: String,
    pub until_ms: i64,
    /// Instead of words, the time of the Stop's own record in the file
    /// (`Want::StoppedAt`): the turn is whole once that record is read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_at: Option<i64>,
}

impl Hold {
    /// The read that sends the held turn once it is whole.
    pub fn want(&self) -> harness::transcript::Want {
        use harness::transcript::Want;
        match self.stopped_at {
            Some(at) => Want::StoppedAt(at),
            None => Want::EndedWith(self.words.clone()),
        }
    }

    /// True when nothing is left to wait for: the file has the Stop's own
    /// record (a Stop held by words is whole when its turn is sent).
    pub fn written(&self, log: &harness::transcript::TurnLog) -> bool {
        self.stopped_at.is_some_and(|at| log.stopped_since(at))
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpenAttention {
    pub id: String,
    #[serde(default)]
    pub agent_id: Option<String>,
    /// A permission prompt (records written before this was kept say nothing).
    #[serde(default)]
    pub permission: bool,
}

/// The prefix of an attention id a notification without an id of its own gets
/// (ADAPTERS.md Ids: `notif-<epoch ms>`).
const NOTIFICATION_ID: &str = "notif-";

/// Applies the session rules to one hook call's events and returns what to append.
pub fn apply_rules(record: &mut SessionRecord, events: Vec<EventData>) -> Vec<EventData> {
    let Some(first) = events.first() else {
        return events;
    };
    let mut out = Vec::with_capacity(events.len() + 1);
    let opens_session = matches!(
        first,
        EventData::SessionStarted(_) | EventData::SessionBackfill(_)
    );
    if !record.started && !opens_session {
        // The hooks were installed mid-session, or its start was lost to a full
        // disk: a receiver still needs a start before anything else.
        out.push(EventData::SessionStarted(SessionStarted {
            source: StartSource::Unknown,
        }));
    }
    record.started = true;

    // An attention is open until the session's next hook event. What the daemon
    // read beside the hooks is no such event: a status line's limits (Claude Code
    // runs the line on its own timer, a prompt open or not) or a held turn's
    // transcript (read whenever it turns up).
    let next = events.iter().find(|e| {
        !matches!(
            e,
            EventData::LimitsObserved(_) | EventData::TurnTranscript(_)
        )
    });
    if let Some(next) = next
        && !matches!(
            next,
            EventData::AttentionNeeded(_) | EventData::AttentionCleared(_)
        )
    {
        let agent = agent_of(next);
        let everyone = matches!(next, EventData::SessionEnded(_));
        let how = cleared_how(next);
        record.open.retain(|a| {
            if everyone || a.agent_id.as_deref() == agent {
                out.push(EventData::AttentionCleared(AttentionCleared {
                    attention_id: a.id.clone(),
                    how,
                }));
                false
            } else {
                true
            }
        });
    }

    for ev in events {
        match &ev {
            EventData::AttentionNeeded(a) => {
                if record.open.iter().any(|o| o.id == a.attention_id) {
                    continue; // the same prompt asked again: one attention
                }
                let permission = a.kind == AttentionKind::Permission;
                // Claude Code tells one permission dialog twice: its
                // PermissionRequest, then a Notification `permission_prompt`
                // with no id of its own. One prompt is one attention.
                if permission
                    && a.attention_id.starts_with(NOTIFICATION_ID)
                    && record
                        .open
                        .iter()
                        .any(|o| o.permission && o.agent_id == a.agent_id)
                {
                    continue;
                }
                record.open.push(OpenAttention {
                    id: a.attention_id.clone(),
                    agent_id: a.agent_id.clone(),
                    permission,
                });
            }
            EventData::AttentionCleared(c) => record.open.retain(|o| o.id != c.attention_id),
            _ => {}
        }
        out.push(ev);
    }
    out
}

fn agent_of(ev: &EventData) -> Option<&str> {
    match ev {
        EventData::ToolStarted(t) => t.agent_id.as_deref(),
        EventData::ToolEnded(t) => t.agent_id.as_deref(),
        _ => None,
    }
}

/// How an attention ended, judged by the session's next event.
fn cleared_how(next: &EventData) -> ClearedHow {
    match next {
        EventData::ToolStarted(_) | EventData::ToolEnded(_) => ClearedHow::Answered,
        EventData::TurnEnded(t) if t.reason == TurnEndReason::Interrupt => ClearedHow::Cancelled,
        EventData::SessionEnded(_) => ClearedHow::Cancelled,
        _ => ClearedHow::Unknown,
    }
}

/// What the envelope of one event needs besides its data.
pub struct Stamp<'a> {
    pub harness: &'a str,
    pub harness_event: Option<&'a str>,
    pub version: Option<&'a str>,
    pub session_id: &'a str,
    pub block: &'a SessionBlock,
    pub time_ms: i64,
}

/// Wraps one event in its envelope, with a fresh ULID and the given `seq`.
pub fn envelope(stamp: &Stamp<'_>, seq: u64, event: EventData) -> Envelope {
    let (kind, data) = event.into_parts();
    let mut session = stamp.block.clone();
    session.id = stamp.session_id.to_string();
    session.seq = seq;
    Envelope {
        protocol: PROTOCOL_VERSION,
        id: ulid::Ulid::generate().to_string(),
        kind,
        time: protocol::time::rfc3339_ms(stamp.time_ms),
        tier: STORED_TIER,
        harness: HarnessRef {
            name: stamp.harness.to_string(),
            version: stamp.version.map(str::to_string),
            event: stamp
                .harness_event
                .filter(|e| !e.is_empty())
                .map(str::to_string),
        },
        session,
        privacy: Privacy {
            rulesets: STORED_RULESETS.iter().map(|s| s.to_string()).collect(),
            pii: false,
        },
        data,
    }
}

/// A `turn.ended` of a Claude Code `session` stamped `time_ms`: the
/// outbox's and retention's tests' event.
#[cfg(test)]
pub fn turn_ended_at(session: &str, time_ms: i64) -> Envelope {
    let block = SessionBlock::default();
    let stamp = Stamp {
        harness: "claude-code",
        harness_event: None,
        version: None,
        session_id: session,
        block: &block,
        time_ms,
    };
    envelope(
        &stamp,
        0,
        EventData::TurnEnded(protocol::TurnEnded::new(
            None,
            protocol::TurnEndReason::Stop,
        )),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool_started(agent: Option<&str>) -> EventData {
        EventData::ToolStarted(ToolStarted {
            tool: "Bash".into(),
            agent_id: agent.map(str::to_string),
            ..Default::default()
        })
    }

    fn permission(id: &str, agent: Option<&str>) -> EventData {
        EventData::AttentionNeeded(AttentionNeeded {
            attention_id: id.into(),
            kind: AttentionKind::Permission,
            tool: None,
            message: None,
            agent_id: agent.map(str::to_string),
        })
    }

    fn kinds(evs: &[EventData]) -> Vec<&'static str> {
        evs.iter().map(EventData::kind).collect()
    }

    #[test]
    fn a_session_without_its_start_gets_one_first() {
        let mut r = SessionRecord::default();
        let out = apply_rules(&mut r, vec![tool_started(None)]);
        assert_eq!(kinds(&out), ["session.started", "tool.started"]);
        let out = apply_rules(&mut r, vec![tool_started(None)]);
        assert_eq!(kinds(&out), ["tool.started"]);
        let mut fresh = SessionRecord::default();
        let start = EventData::SessionStarted(SessionStarted {
            source: StartSource::Startup,
        });
        assert_eq!(
            kinds(&apply_rules(&mut fresh, vec![start])),
            ["session.started"]
        );
        assert!(apply_rules(&mut SessionRecord::default(), vec![]).is_empty());
    }

    #[test]
    fn the_next_hook_event_clears_an_open_attention_once() {
        let mut r = SessionRecord {
            started: true,
            ..Default::default()
        };
        assert_eq!(
            kinds(&apply_rules(&mut r, vec![permission("p1", None)])),
            ["attention.needed"]
        );
        // The same request again is the same attention.
        assert!(apply_rules(&mut r, vec![permission("p1", None)]).is_empty());
        let out = apply_rules(&mut r, vec![tool_started(None)]);
        assert_eq!(kinds(&out), ["attention.cleared", "tool.started"]);
        let EventData::AttentionCleared(c) = &out[0] else {
            panic!()
        };
        assert_eq!(
            (c.attention_id.as_str(), c.how),
            ("p1", ClearedHow::Answered)
        );
        assert_eq!(
            kinds(&apply_rules(&mut r, vec![tool_started(None)])),
            ["tool.started"]
        );
    }

    #[test]
    fn one_permission_dialog_is_one_attention_though_claude_code_tells_it_twice() {
        let mut r = SessionRecord {
            started: true,
            ..Default::default()
        };
        let first = apply_rules(&mut r, vec![permission("perm-0123456789abcdef", None)]);
        assert_eq!(kinds(&first), ["attention.needed"]);
        // Its Notification `permission_prompt` seconds later: the same dialog.
        assert!(apply_rules(&mut r, vec![permission("notif-1790800000000", None)]).is_empty());
        assert_eq!(r.open.len(), 1);
        // A subagent's own prompt is another dialog.
        let other = apply_rules(&mut r, vec![permission("notif-1790800000001", Some("a1"))]);
        assert_eq!(kinds(&other), ["attention.needed"]);
        // A notification of another kind is not a permission prompt.
        let idle = EventData::AttentionNeeded(AttentionNeeded {
            attention_id: "notif-1790800000002".into(),
            kind: AttentionKind::Idle,
            tool: None,
            message: None,
            agent_id: None,
        });
        assert_eq!(
            kinds(&apply_rules(&mut r, vec![idle])),
            ["attention.needed"]
        );
    }

    #[test]
    fn a_subagents_events_do_not_clear_the_parents_attention() {
        let mut r = SessionRecord {
            started: true,
            ..Default::default()
        };
        apply_rules(&mut r, vec![permission("main", None)]);
        apply_rules(&mut r, vec![permission("sub", Some("a1"))]);
        let out = apply_rules(&mut r, vec![tool_started(Some("a1"))]);
        assert_eq!(kinds(&out), ["attention.cleared", "tool.started"]);
        assert_eq!(r.open.len(), 1);
        let end = EventData::SessionEnded(SessionEnded {
            reason: EndReason::Exit,
        });
        let out = apply_rules(&mut r, vec![end]);
        assert_eq!(kinds(&out), ["attention.cleared", "session.ended"]);
        let EventData::AttentionCleared(c) = &out[0] else {
            panic!()
        };
        assert_eq!(c.how, ClearedHow::Cancelled);
        assert!(r.open.is_empty());
    }

    #[test]
    fn the_record_keeps_the_latest_limits_whichever_way_they_came() {
        let mut r = SessionRecord::default();
        let limits = |account: Option<&str>, used: f64| {
            EventData::LimitsObserved(LimitsObserved {
                account_id: account.map(str::to_string),
                status: None,
                windows: vec![LimitWindow {
                    id: "five_hour".into(),
                    window_minutes: Some(300),
                    used_percent: used,
                    resets_at: None,
                }],
            })
        };
        r.saw(&[limits(Some("acct-1"), 40.0)], 1);
        r.saw(&[tool_started(None)], 2);
        assert_eq!(
            r.limits.as_ref().and_then(|l| l.account_id.as_deref()),
            Some("acct-1"),
            "another event leaves them"
        );
        r.saw(&[limits(Some("acct-2"), 10.0), limits(None, 93.0)], 3);
        let kept = r.limits.as_ref().unwrap();
        assert_eq!(
            (kept.account_id.as_deref(), kept.windows[0].used_percent),
            (None, 93.0)
        );
    }

    #[test]
    fn limits_and_transcripts_read_beside_the_hooks_clear_no_attention() {
        let mut r = SessionRecord {
            started: true,
            ..Default::default()
        };
        apply_rules(&mut r, vec![permission("p1", None)]);
        let limits = EventData::LimitsObserved(LimitsObserved {
            account_id: None,
            status: None,
            windows: vec![],
        });
        let turn = EventData::TurnTranscript(TurnTranscript {
            turn: 1,
            user: String::new(),
            assistant: String::new(),
            at: "2026-09-28T02:05:03.861Z".into(),
        });
        let out = apply_rules(&mut r, vec![turn.clone(), limits.clone()]);
        assert_eq!(kinds(&out), ["turn.transcript", "limits.observed"]);
        assert_eq!(r.open.len(), 1, "still open");
        // The hook's own event behind a read still clears it, judged by itself.
        let out = apply_rules(&mut r, vec![turn, tool_started(None), limits]);
        assert_eq!(
            kinds(&out),
            [
                "attention.cleared",
                "turn.transcript",
                "tool.started",
                "limits.observed"
            ]
        );
        let EventData::AttentionCleared(c) = &out[0] else {
            panic!()
        };
        assert_eq!(c.how, ClearedHow::Answered);
    }

    #[test]
    fn heartbeats_come_at_most_a_minute_apart_inside_a_turn() {
        let mut r = SessionRecord {
            started: true,
            ..Default::default()
        };
        let start = EventData::TurnStarted(TurnStarted {
            turn_id: Some("p".into()),
            ..Default::default()
        });
        assert!(heartbeat_due(&mut r, &[start], 1_000).is_none());
        r.running_turn = Some("p".into());
        let tool = [tool_started(None)];
        assert!(heartbeat_due(&mut r, &tool, 30_000).is_none());
        assert!(heartbeat_due(&mut r, &tool, 61_000).is_some());
        assert!(heartbeat_due(&mut r, &tool, 90_000).is_none());
        assert!(heartbeat_due(&mut r, &tool, 121_500).is_some());
        r.running_turn = None;
        assert!(
            heartbeat_due(&mut r, &tool, 500_000).is_none(),
            "no turn, no heartbeat"
        );
    }

    #[test]
    fn envelopes_carry_the_block_seq_and_job_time() {
        let block = SessionBlock {
            cwd: Some("~/x".into()),
            machine: Some("m".into()),
            ..Default::default()
        };
        let stamp = Stamp {
            harness: "claude-code",
            harness_event: Some("Stop"),
            version: None,
            session_id: "s-1",
            block: &block,
            time_ms: 1_790_561_103_861,
        };
        let env = envelope(
            &stamp,
            7,
            EventData::TurnEnded(TurnEnded::new(None, TurnEndReason::Stop)),
        );
        assert_eq!(env.session.seq, 7);
        assert_eq!(env.session.id, "s-1");
        assert_eq!(env.time, "2026-09-28T02:05:03.861Z");
        assert_eq!(env.harness.event.as_deref(), Some("Stop"));
        validate_envelope(&env).unwrap();
    }

    #[test]
    fn a_rejected_tool_without_stop_still_closes_its_attention() {
        // Recorded order: PreToolUse, PermissionRequest (same id), SessionEnd, no Stop.
        const CALL: &str = "call_e4ee5fa9d8e744d18ac42d8e#42f1582708a345a09d67f3e7324bcede";
        let devin = adapters::lookup("devin").unwrap();
        let job = |event: &str, extra: serde_json::Value| {
            let mut p = serde_json::json!({
                "hook_event_name": event,
                "session_id": "frill-vulture",
                "prompt_id": "715ae593-e501-4349-b11f-ed487c21047f",
            });
            p.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            harness::Job {
                harness: "devin".into(),
                event: event.into(),
                payload: p.to_string().into_bytes(),
                ..Default::default()
            }
        };
        let mut record = SessionRecord::default();
        let mut memo = harness::Memo::new();
        let mut kinds = Vec::new();
        for (event, extra) in [
            ("SessionStart", serde_json::json!({"source": "startup"})),
            (
                "UserPromptSubmit",
                serde_json::json!({"prompt": "delete it"}),
            ),
            (
                "PreToolUse",
                serde_json::json!({"tool_name": "exec", "tool_use_id": CALL}),
            ),
            (
                "PermissionRequest",
                serde_json::json!({"tool_name": "exec", "tool_use_id": CALL}),
            ),
            ("SessionEnd", serde_json::json!({"reason": "other"})),
        ] {
            let j = job(event, extra);
            let harness::Mapped::Events(m) = devin.map(&j).unwrap() else {
                panic!("{event} ignored")
            };
            let mut evs = m.events;
            devin.remember(&j, &mut evs, &mut memo);
            for e in apply_rules(&mut record, evs) {
                let (kind, data) = e.into_parts();
                kinds.push(format!(
                    "{kind} {}",
                    data.get("how").map_or("", |h| h.as_str().unwrap())
                ));
            }
        }
        assert_eq!(
            kinds,
            [
                "session.started ",
                "turn.started ",
                "tool.started ",
                "attention.needed ",
                "attention.cleared cancelled",
                "session.ended "
            ]
        );
    }
}
