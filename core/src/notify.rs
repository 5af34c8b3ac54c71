//! Layer 3, notify: what a desktop notification says, decided from the outbox's
//! events: one per attention id, withdrawn when the attention clears, the
//! protocol's words for each kind (`protocol::asked`, which the phone's push
//! and page say too), never more than the notification tier lets through,
//! muted harnesses silent, and a turn's end only when the person asked for
//! that.
//!
//! Pure: the app shows what this decides (and the daemon can too); nothing here
//! touches D-Bus or a window. `Watcher` follows the outbox with a cursor.

use crate::pipeline::outbox::Outbox;
use crate::pipeline::privacy::filter;
use crate::state::config::Config;
use protocol::Envelope;
use protocol::asked;
use serde::Serialize;

/// What to show or take back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "do", rename_all = "snake_case")]
pub enum Notice {
    Show {
        /// Stable per attention (or per turn end): a second notice with the same
        /// key replaces the first.
        key: String,
        summary: String,
        body: String,
        /// What a click opens: the session's own link when it has one.
        url: Option<String>,
        /// `harness:session-id`, for opening the UI on the session.
        session: String,
    },
    Withdraw {
        key: String,
    },
}

/// The notice an event calls for, if any, at the person's settings.
pub fn decide(env: &Envelope, config: &Config) -> Option<Notice> {
    let harness = &env.harness.name;
    let session = format!("{harness}:{}", env.session.id);
    let key_of = |id: &str| format!("{session}:{id}");
    match env.kind.as_str() {
        "attention.cleared" => {
            let id = env.data.get("attention_id")?.as_str()?;
            return Some(Notice::Withdraw { key: key_of(id) });
        }
        "attention.needed" | "turn.ended" => {}
        _ => return None,
    }
    if config.notifications_paused || config.muted.iter().any(|m| m == harness) {
        return None;
    }
    if env.kind == "turn.ended" && !config.notify_turn_end {
        return None;
    }
    // The notification's text never shows more than its tier allows.
    let seen = filter(env, config.notify_tier(), false, None)?;
    let who = display_name(harness);
    let text = |k: &str| {
        seen.data
            .get(k)
            .and_then(|v| v.as_str())
            .map(str::to_string)
    };
    let (key, summary, body) = if env.kind == "turn.ended" {
        let id = text("turn_id").unwrap_or_else(|| env.id.clone());
        let why = match text("reason").as_deref() {
            Some("error") => "stopped on an error",
            Some("interrupt") => "was interrupted",
            _ => "finished",
        };
        (
            key_of(&format!("turn-{id}")),
            format!("{who} {why}"),
            place_of(env),
        )
    } else {
        let id = text("attention_id")?;
        // The protocol's words, as the phone's push and page say them.
        let words = asked::words(&asked::Asked::of_envelope(&seen), 3);
        let summary = if id.starts_with(crate::pool::service::LIMIT_ATTENTION) {
            // The pool's own: a session's account nearing a limit.
            format!("{who} is near a usage limit")
        } else {
            words.headline
        };
        let place = Some(words.place)
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| short(&env.session.id));
        let body = match words.what {
            Some(what) => format!("{what}\n{place}"),
            None => place,
        };
        (key_of(&id), summary, body)
    };
    Some(Notice::Show {
        key,
        summary,
        body,
        url: env.session.url.clone(),
        session,
    })
}

/// How a harness is named to the person (the protocol crate's one table).
pub use protocol::harness_display_name as display_name;

/// Where a session is, for a turn's end: its title and folder, else its id's start.
fn place_of(env: &Envelope) -> String {
    Some(asked::place(
        env.session.title.as_deref(),
        env.session.cwd.as_deref(),
    ))
    .filter(|p| !p.is_empty())
    .unwrap_or_else(|| short(&env.session.id))
}

fn short(id: &str) -> String {
    id.chars().take(8).collect()
}

/// Follows the outbox from where it is now and turns new events into notices.
pub struct Watcher {
    cursor: i64,
}

impl Watcher {
    /// Starts after the last stored event: what happened before is not news.
    pub fn from_now(outbox: &Outbox) -> Watcher {
        Watcher {
            cursor: outbox.newest_rowid().unwrap_or(0),
        }
    }

    pub fn poll(&mut self, outbox: &Outbox, config: &Config) -> Vec<Notice> {
        let Ok(rows) = outbox.events_after(self.cursor, 500) else {
            return vec![];
        };
        let mut out = Vec::new();
        for row in rows {
            self.cursor = row.rowid;
            if let Ok(env) = serde_json::from_str::<Envelope>(&row.envelope)
                && let Some(n) = decide(&env, config)
            {
                out.push(n);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::test_envelope;
    use serde_json::{Value, json};

    fn env(kind: &str, data: Value) -> Envelope {
        let mut e = test_envelope(kind, data);
        e.session.id = "abc12345-x".into();
        e.session.seq = 3;
        e.session.cwd = Some("~/src/app".into());
        e
    }

    fn perm() -> Envelope {
        env(
            "attention.needed",
            json!({"attention_id": "perm-1", "kind": "permission", "tool": "Bash", "message": "Bash rm -rf build"}),
        )
    }

    #[test]
    fn a_permission_prompt_says_the_tool_and_its_message() {
        let n = decide(&perm(), &Config::default()).unwrap();
        let Notice::Show {
            key,
            summary,
            body,
            session,
            ..
        } = n
        else {
            panic!()
        };
        assert_eq!(summary, "Claude Code wants to run Bash");
        assert_eq!(body, "Bash rm -rf build\n~/src/app");
        assert_eq!(key, "claude-code:abc12345-x:perm-1");
        assert_eq!(session, "claude-code:abc12345-x");
    }

    #[test]
    fn the_body_says_the_title_and_folder_and_cuts_a_long_command() {
        let mut e = env(
            "attention.needed",
            json!({"attention_id": "perm-2", "kind": "permission", "tool": "Bash",
                   "message": format!("Bash echo {}", "ünïcode wörds ".repeat(40))}),
        );
        e.session.title = Some("Say hello".into());
        let Notice::Show { summary, body, .. } = decide(&e, &Config::default()).unwrap() else {
            panic!()
        };
        assert_eq!(summary, "Claude Code wants to run Bash");
        let (what, place) = body.split_once('\n').unwrap();
        assert!(
            what.starts_with("Bash echo ünïcode") && what.ends_with('…'),
            "{what}"
        );
        assert!(what.chars().count() <= protocol::asked::WHAT_MAX);
        assert_eq!(place, "Say hello · ~/src/app");
    }

    #[test]
    fn an_account_near_its_limit_is_said_as_such() {
        let e = env(
            "attention.needed",
            json!({"attention_id": "pool-limit:acct-1:five_hour:", "kind": "question", "message": "the five hour limit of account acct-1 is 91% used"}),
        );
        let Notice::Show { summary, body, .. } = decide(&e, &Config::default()).unwrap() else {
            panic!()
        };
        assert_eq!(summary, "Claude Code is near a usage limit");
        assert_eq!(
            body,
            "the five hour limit of account acct-1 is 91% used\n~/src/app"
        );
        let q = env(
            "attention.needed",
            json!({"attention_id": "q-1", "kind": "question"}),
        );
        let Notice::Show { summary, .. } = decide(&q, &Config::default()).unwrap() else {
            panic!()
        };
        assert_eq!(summary, "Claude Code has a question");
    }

    #[test]
    fn at_tier_zero_only_the_kind_shows() {
        let config = Config {
            notify_tier: Some(0),
            ..Default::default()
        };
        let Notice::Show { summary, body, .. } = decide(&perm(), &config).unwrap() else {
            panic!()
        };
        assert_eq!(summary, "Claude Code needs your permission");
        assert_eq!(body, "~/src/app");
    }

    #[test]
    fn kinds_clearing_muting_pausing_and_turn_ends() {
        let idle = env(
            "attention.needed",
            json!({"attention_id": "n1", "kind": "idle"}),
        );
        assert!(
            matches!(decide(&idle, &Config::default()), Some(Notice::Show { summary, .. }) if summary == "Claude Code is waiting for you")
        );
        let cleared = env(
            "attention.cleared",
            json!({"attention_id": "perm-1", "how": "answered"}),
        );
        assert_eq!(
            decide(&cleared, &Config::default()),
            Some(Notice::Withdraw {
                key: "claude-code:abc12345-x:perm-1".into()
            })
        );
        let muted = Config {
            muted: vec!["claude-code".into()],
            ..Default::default()
        };
        assert_eq!(decide(&perm(), &muted), None);
        let paused = Config {
            notifications_paused: true,
            ..Default::default()
        };
        assert_eq!(decide(&perm(), &paused), None);
        let done = env("turn.ended", json!({"turn_id": "p1", "reason": "stop"}));
        assert_eq!(decide(&done, &Config::default()), None, "off by default");
        let on = Config {
            notify_turn_end: true,
            ..Default::default()
        };
        assert!(
            matches!(decide(&done, &on), Some(Notice::Show { summary, .. }) if summary == "Claude Code finished")
        );
        assert_eq!(
            decide(&env("tool.started", json!({"tool": "Bash"})), &on),
            None
        );
    }
}
