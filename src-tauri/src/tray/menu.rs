//! The tray's menu as data: one ordered list of lines (`lines`, a function of
//! the tray's `View`), each with a typed id (`LineId`), and the menu built from
//! that list and updated from the next one (`Built`).
//!
//! Owns the lines' order, their words, and each id's text in the menu (what a
//! click hands back: `LineId::parse`). The menu is updated in place while the
//! lines' shape (which ids, which kinds, which are enabled) stays, and built
//! again when it changes. Must not act on a click (`tray::on_menu` does) nor
//! read anything itself: what it shows is the view's.

use super::View;
use crate::approvals::{self, Item};
use crate::daemon_api::Decision;
use crate::local_receiver::Status;
use crate::offers::{self, Act};
use crate::update;
use tray_icon::menu::{CheckMenuItem, IsMenuItem, Menu, MenuId, MenuItem, PredefinedMenuItem};

/// Which line: what a click on it does, or which line of words it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LineId {
    /// The board's summary ("2 need you, 1 working").
    Summary,
    /// Attached to a daemon of its own, or starting one.
    Link,
    /// A long work running (a backfill...).
    Progress,
    /// Hook calls lost to a full disk.
    Lost,
    /// Today's usage and the fullest limit window.
    Usage,
    /// A paired receiver no longer polled.
    ControlStopped,
    /// "Watch Droid" or "Don't offer Droid again".
    Offer(Act, String),
    /// Why the last click on a harness's offer did not go through.
    OfferFailed(String),
    /// "Approvals (3)".
    Approvals,
    /// A prompt's Allow, Deny or who-asks line (it opens the window).
    Prompt {
        item: Item,
        session: String,
        attention: String,
    },
    /// What a prompt will run.
    PromptWhat {
        session: String,
        attention: String,
    },
    MoreApprovals,
    /// A live session (`harness:id`): opens the window on it.
    Session(String),
    MoreSessions,
    Pause,
    OpenAtLogin,
    PhonePage,
    /// Opens the local receiver's page, or says why it cannot listen.
    OpenPhonePage,
    Update(update::Act),
    Open,
    Quit,
}

const SESSION_PREFIX: &str = "session:";
const OFFER_FAILED_PREFIX: &str = "offer-failed:";
const PROMPT_WHAT_PREFIX: &str = "approval-what:";
/// As `approvals`' ids: in no session key or attention id.
const SEP: char = '\u{1f}';

/// The ids with no part of their own, and their text in the menu.
const FIXED: &[(LineId, &str)] = &[
    (LineId::Summary, "summary"),
    (LineId::Link, "link"),
    (LineId::Progress, "progress"),
    (LineId::Lost, "lost"),
    (LineId::Usage, "usage"),
    (LineId::ControlStopped, "control-stopped"),
    (LineId::Approvals, "approvals"),
    (LineId::MoreApprovals, "more-approvals"),
    (LineId::MoreSessions, "more"),
    (LineId::Pause, "pause"),
    (LineId::OpenAtLogin, "login"),
    (LineId::PhonePage, "phone"),
    (LineId::OpenPhonePage, "phone-open"),
    (LineId::Update(update::Act::Install), "update:install"),
    (LineId::Update(update::Act::Skip), "update:skip"),
    (LineId::Update(update::Act::Busy), "update:busy"),
    (LineId::Open, "open"),
    (LineId::Quit, "quit"),
];

impl LineId {
    /// The item's id in the menu: what a click hands back.
    pub fn menu_id(&self) -> String {
        if let Some((_, text)) = FIXED.iter().find(|(id, _)| id == self) {
            return (*text).to_string();
        }
        match self {
            LineId::Offer(act, harness) => offers::item_id(*act, harness),
            LineId::OfferFailed(harness) => format!("{OFFER_FAILED_PREFIX}{harness}"),
            LineId::Prompt {
                item,
                session,
                attention,
            } => approvals::item_id(*item, session, attention),
            LineId::PromptWhat { session, attention } => {
                format!("{PROMPT_WHAT_PREFIX}{session}{SEP}{attention}")
            }
            LineId::Session(key) => format!("{SESSION_PREFIX}{key}"),
            fixed => unreachable!("{fixed:?} is in FIXED"),
        }
    }

    /// The line a menu id names; `None` for one this menu never made.
    pub fn parse(id: &str) -> Option<LineId> {
        if let Some((line, _)) = FIXED.iter().find(|(_, text)| *text == id) {
            return Some(line.clone());
        }
        if let Some((item, session, attention)) = approvals::from_item_id(id) {
            return Some(LineId::Prompt {
                item,
                session: session.into(),
                attention: attention.into(),
            });
        }
        if let Some((act, harness)) = offers::from_item_id(id) {
            return Some(LineId::Offer(act, harness.into()));
        }
        if let Some(rest) = id.strip_prefix(PROMPT_WHAT_PREFIX) {
            let (session, attention) = rest.split_once(SEP)?;
            return (!session.is_empty() && !attention.is_empty() && !attention.contains(SEP))
                .then(|| LineId::PromptWhat {
                    session: session.into(),
                    attention: attention.into(),
                });
        }
        if let Some(harness) = id.strip_prefix(OFFER_FAILED_PREFIX) {
            return Some(LineId::OfferFailed(harness.into()));
        }
        let key = id.strip_prefix(SESSION_PREFIX)?;
        (!key.is_empty()).then(|| LineId::Session(key.into()))
    }
}

/// One line of the menu.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Line {
    /// Words, or an action when `enabled`.
    Item {
        id: LineId,
        text: String,
        enabled: bool,
    },
    /// A setting over `config.json` (it flips itself on a click; the next
    /// view sets it to what the file says).
    Check {
        id: LineId,
        text: String,
        checked: bool,
    },
    Separator,
}

/// What decides whether a menu can be updated in place: the lines' kinds,
/// ids and whether each is enabled; not their words or checks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Shape {
    Item(LineId, bool),
    Check(LineId),
    Separator,
}

impl Line {
    fn shape(&self) -> Shape {
        match self {
            Line::Item { id, enabled, .. } => Shape::Item(id.clone(), *enabled),
            Line::Check { id, .. } => Shape::Check(id.clone()),
            Line::Separator => Shape::Separator,
        }
    }

    #[cfg(test)]
    pub fn id(&self) -> Option<&LineId> {
        match self {
            Line::Item { id, .. } | Line::Check { id, .. } => Some(id),
            Line::Separator => None,
        }
    }
}

/// A line of words (disabled).
fn words(id: LineId, text: impl Into<String>) -> Line {
    Line::Item {
        id,
        text: text.into(),
        enabled: false,
    }
}

/// A line a click acts on.
fn action(id: LineId, text: impl Into<String>) -> Line {
    Line::Item {
        id,
        text: text.into(),
        enabled: true,
    }
}

fn check(id: LineId, text: &str, checked: bool) -> Line {
    Line::Check {
        id,
        text: text.into(),
        checked,
    }
}

/// The menu's lines, top to bottom: the summary and the lines about the
/// machine; the harnesses offered; the prompts to answer; the live sessions;
/// the settings; the app's update, "Open sessionpipe" and "Quit".
pub fn lines(view: &View) -> Vec<Line> {
    let mut out = vec![words(LineId::Summary, view.board.summary())];
    if let Some(line) = view.link_line() {
        out.push(words(LineId::Link, line));
    }
    if let Some(line) = &view.progress {
        out.push(words(LineId::Progress, line));
    }
    if let Some(line) = &view.lost {
        out.push(words(LineId::Lost, capitalised(line)));
    }
    if let Some(line) = &view.control_stopped {
        out.push(words(LineId::ControlStopped, capitalised(line)));
    }
    if let Some(line) = &view.usage {
        out.push(words(LineId::Usage, line));
    }
    out.push(Line::Separator);
    for o in &view.offers {
        out.push(action(
            LineId::Offer(Act::Watch, o.harness.clone()),
            o.watch_label(),
        ));
        out.push(action(
            LineId::Offer(Act::Decline, o.harness.clone()),
            o.decline_label(),
        ));
        if let Some(failed) = o.failed_label() {
            out.push(words(LineId::OfferFailed(o.harness.clone()), failed));
        }
    }
    if !view.offers.is_empty() {
        out.push(Line::Separator);
    }
    if !view.asking.is_empty() {
        out.push(words(LineId::Approvals, view.asking_header()));
        for a in &view.asking {
            let prompt = |item| LineId::Prompt {
                item,
                session: a.session.clone(),
                attention: a.attention.clone(),
            };
            out.push(action(prompt(Item::Open), &a.who));
            out.push(words(
                LineId::PromptWhat {
                    session: a.session.clone(),
                    attention: a.attention.clone(),
                },
                &a.what,
            ));
            out.push(action(prompt(Item::Answer(Decision::Allow)), "Allow"));
            out.push(action(prompt(Item::Answer(Decision::Deny)), "Deny"));
        }
        if view.more_asking > 0 {
            out.push(action(
                LineId::MoreApprovals,
                format!("{} more approvals in the window…", view.more_asking),
            ));
        }
        out.push(Line::Separator);
    }
    for row in &view.board.rows {
        out.push(action(LineId::Session(row.key.clone()), &row.label));
    }
    if view.board.more > 0 {
        out.push(action(
            LineId::MoreSessions,
            format!("{} more in the window…", view.board.more),
        ));
    }
    if !view.board.rows.is_empty() {
        out.push(Line::Separator);
    }
    out.push(check(LineId::Pause, "Pause notifications", view.paused));
    out.push(check(
        LineId::OpenAtLogin,
        "Open at login",
        view.open_at_login,
    ));
    out.push(check(
        LineId::PhonePage,
        "Phone page on this computer",
        view.local_receiver,
    ));
    if let Some((text, serving)) = phone_line_text(view) {
        out.push(Line::Item {
            id: LineId::OpenPhonePage,
            text,
            enabled: serving,
        });
    }
    out.push(Line::Separator);
    for l in &view.update {
        out.push(Line::Item {
            id: LineId::Update(l.act),
            text: l.text.clone(),
            enabled: l.enabled,
        });
    }
    out.push(action(LineId::Open, "Open sessionpipe"));
    out.push(action(LineId::Quit, "Quit"));
    out
}

/// The lines' shape: same shape, the menu is updated in place.
pub fn shape(lines: &[Line]) -> Vec<Shape> {
    lines.iter().map(Line::shape).collect()
}

/// The core's line as a menu item starts it.
pub fn capitalised(line: &str) -> String {
    let mut chars = line.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// The local receiver's menu line and whether it opens the page.
pub fn phone_line_text(view: &View) -> Option<(String, bool)> {
    let line = view.phone.line()?;
    Some(match &view.phone {
        Status::Serving { origin } => (format!("Open the phone page ({origin})"), true),
        _ => (line, false),
    })
}

/// One line's item in the menu.
enum Entry {
    Item(MenuItem),
    Check(CheckMenuItem),
    Separator(PredefinedMenuItem),
}

impl Entry {
    fn of(line: &Line) -> Entry {
        match line {
            Line::Item { id, text, enabled } => Entry::Item(MenuItem::with_id(
                MenuId(id.menu_id()),
                text,
                *enabled,
                None,
            )),
            Line::Check { id, text, checked } => Entry::Check(CheckMenuItem::with_id(
                MenuId(id.menu_id()),
                text,
                true,
                *checked,
                None,
            )),
            Line::Separator => Entry::Separator(PredefinedMenuItem::separator()),
        }
    }

    fn as_item(&self) -> &dyn IsMenuItem {
        match self {
            Entry::Item(i) => i,
            Entry::Check(c) => c,
            Entry::Separator(s) => s,
        }
    }
}

/// The menu built from a list of lines, and those lines.
pub struct Built {
    pub menu: Menu,
    entries: Vec<Entry>,
    lines: Vec<Line>,
}

impl Built {
    pub fn build(lines: Vec<Line>) -> anyhow::Result<Built> {
        let entries: Vec<Entry> = lines.iter().map(Entry::of).collect();
        let items: Vec<&dyn IsMenuItem> = entries.iter().map(Entry::as_item).collect();
        let menu = Menu::with_items(&items)?;
        Ok(Built {
            menu,
            entries,
            lines,
        })
    }

    /// Shows `lines` in place when their shape is this menu's: the words that
    /// changed, and every check (a click flipped it; `config.json` decides).
    /// `Err` gives the lines back when the menu must be built again.
    pub fn update(&mut self, lines: Vec<Line>) -> Result<(), Vec<Line>> {
        if shape(&lines) != shape(&self.lines) {
            return Err(lines);
        }
        for ((entry, was), now) in self.entries.iter().zip(&self.lines).zip(&lines) {
            match (entry, was, now) {
                (Entry::Item(item), Line::Item { text: was, .. }, Line::Item { text, .. })
                    if was != text =>
                {
                    item.set_text(text);
                }
                (
                    Entry::Check(item),
                    Line::Check { text: was, .. },
                    Line::Check { text, checked, .. },
                ) => {
                    if was != text {
                        item.set_text(text);
                    }
                    item.set_checked(*checked);
                }
                _ => {}
            }
        }
        self.lines = lines;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_line_id_reads_back_from_its_menu_id() {
        let mut ids: Vec<LineId> = FIXED.iter().map(|(id, _)| id.clone()).collect();
        ids.extend([
            LineId::Offer(Act::Watch, "droid".into()),
            LineId::Offer(Act::Decline, "copilot-cli".into()),
            LineId::OfferFailed("droid".into()),
            LineId::Session("claude-code:0b6a-4f".into()),
            // A key with the separators of other ids in it stays one key.
            LineId::Session("codex:session:approval:x".into()),
        ]);
        for item in [
            Item::Open,
            Item::Answer(Decision::Allow),
            Item::Answer(Decision::Deny),
        ] {
            ids.push(LineId::Prompt {
                item,
                session: "codex:c1".into(),
                attention: "p9".into(),
            });
        }
        ids.push(LineId::PromptWhat {
            session: "codex:c1".into(),
            attention: "p9".into(),
        });
        let mut seen = std::collections::HashSet::new();
        for id in &ids {
            let text = id.menu_id();
            assert!(seen.insert(text.clone()), "{text:?} names two lines");
            assert_eq!(LineId::parse(&text).as_ref(), Some(id), "{text:?}");
        }
        for stranger in [
            "",
            "session:",
            "Quit",
            "offer-watch:../x",
            "approval-what:s",
            "approval-what:s\u{1f}a\u{1f}b",
        ] {
            assert_eq!(LineId::parse(stranger), None, "{stranger:?}");
        }
    }

    fn ids(lines: &[Line]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.id().map_or("---".into(), LineId::menu_id))
            .collect()
    }

    #[test]
    fn an_idle_menu_is_the_summary_the_settings_open_and_quit() {
        let dir = tempfile::tempdir().unwrap();
        let paths = sessionpipe_core::spool::StatePaths::new(dir.path());
        paths.ensure().unwrap();
        let view = View::read(&paths);
        let lines = lines(&view);
        assert_eq!(
            ids(&lines),
            [
                "summary", "link", "---", "pause", "login", "phone", "---", "open", "quit"
            ]
        );
        assert_eq!(
            lines[0],
            words(LineId::Summary, "No live sessions"),
            "the summary is words, not an action"
        );
        assert_eq!(lines[3], check(LineId::Pause, "Pause notifications", false));
    }

    #[test]
    fn a_full_menu_keeps_its_order_and_a_changed_word_keeps_its_shape() {
        use crate::board::Row;
        let dir = tempfile::tempdir().unwrap();
        let paths = sessionpipe_core::spool::StatePaths::new(dir.path());
        paths.ensure().unwrap();
        let mut view = View::read(&paths).with_offers(vec![crate::offers::Offer {
            harness: "droid".into(),
            failed: Some("HTTP 500".into()),
        }]);
        view.progress = Some("Backfilling 1 / 3 sessions".into());
        view.asking = vec![super::super::Asking {
            session: "codex:c1".into(),
            attention: "p9".into(),
            who: "Codex · Ship it".into(),
            what: "Bash: make".into(),
        }];
        view.more_asking = 2;
        view.board.rows = vec![Row {
            key: "claude-code:a1".into(),
            label: "Needs you · Fix the test".into(),
        }];
        view.board.more = 4;
        view.phone = Status::Serving {
            origin: "http://localhost:47474".into(),
        };
        let lines = lines(&view);
        assert_eq!(
            ids(&lines),
            [
                "summary",
                "link",
                "progress",
                "---",
                "offer-watch:droid",
                "offer-decline:droid",
                "offer-failed:droid",
                "---",
                "approvals",
                "approval:open\u{1f}codex:c1\u{1f}p9",
                "approval-what:codex:c1\u{1f}p9",
                "approval:allow\u{1f}codex:c1\u{1f}p9",
                "approval:deny\u{1f}codex:c1\u{1f}p9",
                "more-approvals",
                "---",
                "session:claude-code:a1",
                "more",
                "---",
                "pause",
                "login",
                "phone",
                "phone-open",
                "---",
                "open",
                "quit",
            ]
        );
        assert_eq!(
            lines[8],
            words(LineId::Approvals, "Approvals (3)"),
            "the prompts shown and those only in the window"
        );
        let mut later = view.clone();
        later.board.rows[0].label = "Working · Fix the test".into();
        later.paused = true;
        assert_eq!(
            shape(&super::lines(&later)),
            shape(&lines),
            "updated in place"
        );
        later.phone = Status::Failed {
            port: 47474,
            why: "Address already in use".into(),
        };
        assert_ne!(
            shape(&super::lines(&later)),
            shape(&lines),
            "an opening line that cannot open: built again"
        );
    }
}
