//! The tray's view of the sessions: which are live, in what order, the one line
//! each shows in the menu, and the state the icon shows at a glance.
//!
//! Reads the outbox read-only (`Outbox::board_sessions`: the menu's window and
//! the sessions still live, not every record a year of use keeps). A session's
//! state is the core's (`SessionRecord::glance`), a harness's name the core's
//! (`notify::display_name`); this module only picks, orders and words the lines.
//! Must not write the outbox or derive anything from events itself.

use sessionpipe_core::notify::display_name;
use sessionpipe_core::pipeline::outbox::Outbox;
use sessionpipe_core::pipeline::session::{Glance, SessionRecord};
use sessionpipe_core::spool::StatePaths;

/// A session that has not ended and did nothing for this long drops off the menu
/// (unless it needs the person).
const LIVE_MS: i64 = 24 * 3600 * 1000;
/// The menu shows at most this many sessions; the window shows them all.
pub const MAX_ROWS: usize = 12;

/// One session's line in the menu.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// `harness:session-id`, what the UI's `#session=` takes.
    pub key: String,
    pub label: String,
}

/// What the tray shows: the icon's state and the menu's session lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Board {
    /// The most urgent state among the live sessions (`Done`: idle).
    pub state: Glance,
    pub rows: Vec<Row>,
    /// Live sessions beyond `MAX_ROWS`.
    pub more: usize,
    pub needs_you: usize,
    pub working: usize,
}

/// The board from the outbox now; empty when there is no outbox yet.
pub fn read(paths: &StatePaths) -> Board {
    let now = sessionpipe_core::protocol::time::now_ms();
    let records = match Outbox::open_readonly(&paths.outbox()) {
        Ok(Some(outbox)) => outbox.board_sessions(now - LIVE_MS).unwrap_or_default(),
        _ => Vec::new(),
    };
    build(&records, now)
}

/// The board of `records` at `now_ms`: live sessions, those needing the person
/// first, then working ones, then the rest; most recent first within each.
pub fn build(records: &[(String, String, SessionRecord)], now_ms: i64) -> Board {
    let mut live: Vec<(Glance, &str, &str, &SessionRecord)> = records
        .iter()
        .map(|(h, id, r)| (r.glance(), h.as_str(), id.as_str(), r))
        .filter(|(g, _, _, r)| {
            r.last_ms > 0 && !r.ended && (*g == Glance::NeedsYou || now_ms - r.last_ms < LIVE_MS)
        })
        .collect();
    live.sort_by_key(|(g, _, _, r)| (*g, std::cmp::Reverse(r.last_ms)));
    let count = |g: Glance| live.iter().filter(|l| l.0 == g).count();
    Board {
        state: live.first().map(|l| l.0).unwrap_or(Glance::Done),
        needs_you: count(Glance::NeedsYou),
        working: count(Glance::Working),
        more: live.len().saturating_sub(MAX_ROWS),
        rows: live
            .iter()
            .take(MAX_ROWS)
            .map(|(g, h, id, r)| Row {
                key: format!("{h}:{id}"),
                label: label(*g, h, id, r, now_ms),
            })
            .collect(),
    }
}

impl Board {
    /// One line for the tooltip / the menu's header.
    pub fn summary(&self) -> String {
        match (self.needs_you, self.working) {
            (0, 0) if self.rows.is_empty() => "No live sessions".into(),
            (0, 0) => "Nothing needs you".into(),
            (0, w) => format!("{w} working"),
            (n, 0) => format!("{n} need{} you", if n == 1 { "s" } else { "" }),
            (n, w) => format!("{n} need{} you, {w} working", if n == 1 { "s" } else { "" }),
        }
    }
}

/// `Claude Code · project · needs you · 3m`
fn label(glance: Glance, harness: &str, id: &str, r: &SessionRecord, now_ms: i64) -> String {
    let place = r
        .block
        .title
        .clone()
        .filter(|t| !t.trim().is_empty())
        .or_else(|| r.block.cwd.as_deref().map(folder))
        .unwrap_or_else(|| id.chars().take(8).collect());
    let state = match glance {
        Glance::NeedsYou => "needs you",
        Glance::Working => "working",
        Glance::Done => "idle",
    };
    format!(
        "{} · {} · {state} · {}",
        display_name(harness),
        ellipsis(&place, 40),
        age(now_ms - r.last_ms)
    )
}

/// The last part of a folder path (`~/src/app` → `app`; `~` stays `~`).
fn folder(cwd: &str) -> String {
    let trimmed = cwd.trim_end_matches(['/', '\\']);
    match trimmed.rsplit(['/', '\\']).next() {
        Some(last) if !last.is_empty() => last.to_string(),
        _ => cwd.to_string(),
    }
}

fn ellipsis(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max - 1).collect();
    out.push('…');
    out
}

/// `now`, `5m`, `3h`, `2d`: a line changes at most once a minute.
fn age(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    match s {
        0..60 => "now".into(),
        60..3600 => format!("{}m", s / 60),
        3600..86400 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sessionpipe_core::pipeline::session::OpenAttention;

    const NOW: i64 = 1_800_000_000_000;

    fn rec(ago_s: i64, cwd: &str) -> SessionRecord {
        let mut r = SessionRecord {
            last_ms: NOW - ago_s * 1000,
            ..Default::default()
        };
        r.block.cwd = Some(cwd.into());
        r
    }

    fn needing(mut r: SessionRecord) -> SessionRecord {
        r.open.push(OpenAttention {
            id: "perm-1".into(),
            agent_id: None,
            permission: true,
        });
        r
    }

    fn working(mut r: SessionRecord) -> SessionRecord {
        r.running_turn = Some("t1".into());
        r
    }

    #[test]
    fn those_needing_you_come_first_then_working_then_idle() {
        let mut ended = rec(5, "~/gone");
        ended.ended = true;
        let records = vec![
            ("codex".into(), "c1".into(), working(rec(30, "~/src/api"))),
            ("claude-code".into(), "a1".into(), rec(120, "~/src/web/")),
            (
                "claude-code".into(),
                "a2".into(),
                needing(rec(600, "~/src/app")),
            ),
            ("gemini-cli".into(), "g1".into(), rec(2 * 86400, "~/old")),
            ("claude-code".into(), "a3".into(), ended),
        ];
        let board = build(&records, NOW);
        assert_eq!(board.state, Glance::NeedsYou);
        let keys: Vec<&str> = board.rows.iter().map(|r| r.key.as_str()).collect();
        assert_eq!(keys, ["claude-code:a2", "codex:c1", "claude-code:a1"]);
        assert_eq!(board.rows[0].label, "Claude Code · app · needs you · 10m");
        assert_eq!(board.rows[1].label, "Codex · api · working · now");
        assert_eq!(board.rows[2].label, "Claude Code · web · idle · 2m");
        assert_eq!(board.summary(), "1 needs you, 1 working");
    }

    #[test]
    fn an_old_attention_still_shows_and_titles_win_over_folders() {
        let mut r = needing(rec(3 * 86400, "~/src/app"));
        r.block.title = Some("Fix the flaky login test".into());
        let board = build(&[("claude-code".into(), "a".into(), r)], NOW);
        assert_eq!(
            board.rows[0].label,
            "Claude Code · Fix the flaky login test · needs you · 3d"
        );
    }

    #[test]
    fn nothing_live_is_idle_and_the_menu_is_capped() {
        let empty = build(&[], NOW);
        assert_eq!(empty.state, Glance::Done);
        assert_eq!(empty.summary(), "No live sessions");
        let many: Vec<_> = (0..15)
            .map(|i| ("codex".to_string(), format!("s{i}"), rec(i, "~/x")))
            .collect();
        let board = build(&many, NOW);
        assert_eq!(board.state, Glance::Done);
        assert_eq!(board.rows.len(), MAX_ROWS);
        assert_eq!(board.more, 3);
        assert_eq!(board.summary(), "Nothing needs you");
    }

    #[test]
    fn ages_and_long_places() {
        assert_eq!(age(3_000), "now");
        assert_eq!(age(59_000), "now");
        assert_eq!(age(61_000), "1m");
        assert_eq!(age(3 * 3600 * 1000 + 5), "3h");
        assert_eq!(folder("~"), "~");
        assert_eq!(folder("/"), "/");
        assert_eq!(folder("C:\\src\\app"), "app");
        assert_eq!(ellipsis(&"x".repeat(50), 40).chars().count(), 40);
    }
}
