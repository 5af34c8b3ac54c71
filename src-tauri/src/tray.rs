//! The tray icon and its menu.
//!
//! The icon shows the state at a glance (idle, working, needs you: the three PNGs
//! in `icons/tray/`, drawn by `icons/tray/draw.sh`). The menu has its summary
//! line, a line while a long work runs (a backfill, remote titles' re-send:
//! "Backfilling 1 200 / 3 400 sessions", the core's `state::progress` words,
//! in the tooltip too), a line when hook calls were lost to a full disk
//! (the core's words) and today's usage with the fullest limit window
//! ("Today: 1.2 M tokens, $3.40 · 5-hour window 63%", the core's words, in
//! the tooltip too);
//! then each harness found on this machine after setup and not watched
//! (`offers`: "Watch Droid (found on this machine)", "Don't offer Droid
//! again", and the daemon's words when a click did not go through);
//! then, when local approvals are on, the permission prompts this machine may
//! answer now across every session and harness (`approvals`, from the daemon's
//! overview): who asks (harness, title, folder; it opens the window on the
//! session), what will run (at the notification tier), Allow and Deny, which post
//! the person's answer (`notices::answer_clicked`); then the live sessions, those
//! needing the person first (`board`), each opening the window on it; then
//! "Pause notifications", "Open at login" and "Phone page on this computer"
//! (check items over `config.json`, through `prefs`), with the local receiver's
//! line under the last (open its page, or why it cannot listen), "Open
//! sessionpipe" and "Quit", under the app's own update when one is out
//! (`update`: "Update to 0.2.0 and restart", "Skip 0.2.0").
//!
//! The menu is data (`menu`): one ordered list of lines with typed ids, made
//! from the `View`, from which it is built and updated; a click's id reads
//! back as a `LineId`, which `on_menu` acts on.
//!
//! Lives on the main thread (`app`'s event loop), which hands it each new `View`
//! read by the refresher thread; it changes what changed in place (labels,
//! checks, the icon) and rebuilds the menu only when its lines come or go. Must
//! not decide a session's state, a notification or whether a prompt may be
//! answered: it shows the core's; and it answers a prompt only on a click.

use crate::approvals::{self, Item, Prompt};
use crate::backend::{self, Link};
use crate::board::{self, Board};
use crate::local_receiver::{self, Status};
use crate::offers::Offer;
use crate::shared::Shared;
use crate::{daemon_api, notices, prefs};
use anyhow::Context;
use sessionpipe_core::pipeline::session::Glance;
use sessionpipe_core::spool::StatePaths;
use std::sync::Arc;
use tray_icon::{Icon, TrayIcon, TrayIconBuilder};

mod menu;
use menu::Built;
pub use menu::LineId;

const TRAY_ID: &str = "sessionpipe";

const IDLE: &[u8] = include_bytes!("../icons/tray/idle.png");
const WORKING: &[u8] = include_bytes!("../icons/tray/working.png");
const NEEDS_YOU: &[u8] = include_bytes!("../icons/tray/needs-you.png");

fn icon(state: Glance) -> anyhow::Result<Icon> {
    let png = match state {
        Glance::NeedsYou => NEEDS_YOU,
        Glance::Working => WORKING,
        Glance::Done => IDLE,
    };
    let (rgba, width, height) = decode_rgba(png)?;
    Icon::from_rgba(rgba, width, height).map_err(anyhow::Error::from)
}

/// The icon PNGs as 8-bit RGBA, what the tray takes.
fn decode_rgba(png_bytes: &[u8]) -> anyhow::Result<(Vec<u8>, u32, u32)> {
    let mut decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info()?;
    let size = reader
        .output_buffer_size()
        .context("the icon is too large")?;
    let mut buf = vec![0; size];
    let info = reader.next_frame(&mut buf)?;
    buf.truncate(info.buffer_size());
    let rgba = match info.color_type {
        png::ColorType::Rgba => buf,
        png::ColorType::Rgb => buf
            .chunks_exact(3)
            .flat_map(|p| [p[0], p[1], p[2], 255])
            .collect(),
        other => anyhow::bail!("the icon is {other:?}, not RGB(A)"),
    };
    Ok((rgba, info.width, info.height))
}

/// One answerable prompt's lines, and the prompt they name.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Asking {
    /// `harness:session-id`
    session: String,
    attention: String,
    who: String,
    what: String,
}

impl Asking {
    fn of(prompt: &Prompt, notify_tier: u8) -> Asking {
        let (who, what) = prompt.menu_lines(notify_tier);
        Asking {
            session: prompt.session.clone(),
            attention: prompt.attention.clone(),
            who: approvals::menu_text(&who),
            what: approvals::menu_text(&what),
        }
    }
}

/// Everything the tray shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct View {
    board: Board,
    /// The app's own update's lines (`update`), mostly none.
    update: Vec<crate::update::Line>,
    /// The prompts this machine may answer now (local approvals on), at most
    /// `MAX_PROMPTS`, and how many more there are.
    asking: Vec<Asking>,
    more_asking: usize,
    link: Link,
    /// The long work running now (a backfill...), as the core words it.
    progress: Option<String>,
    /// Hook calls lost before the spool, as the core tells it.
    lost: Option<String>,
    /// Today's tokens and cost and the fullest limit window, as the core
    /// words it ("Today: 1.2 M tokens, $3.40 · 5-hour window 63%").
    usage: Option<String>,
    /// A paired receiver no longer polled (a 401), as the core tells it.
    control_stopped: Option<String>,
    paused: bool,
    open_at_login: bool,
    /// The "Phone page on this computer" setting, and what its receiver does
    /// (the refresher's word: `with_phone`).
    local_receiver: bool,
    phone: Status,
    /// Harnesses found here and not watched (the refresher's: `with_offers`).
    offers: Vec<Offer>,
}

impl View {
    /// The view now, read off the main thread (the refresher's).
    pub fn read(paths: &StatePaths) -> View {
        View::read_with(paths, true)
    }

    /// The view now; the prompts only when `ask_daemon` (the first view, on the
    /// main thread, waits on no connection: the refresher's comes 0.5 s later).
    fn read_with(paths: &StatePaths, ask_daemon: bool) -> View {
        let config = prefs::load(paths);
        // Only while local approvals are on: otherwise nothing is answerable and
        // the tray does not ask the daemon.
        let prompts = if config.local_approvals && ask_daemon {
            daemon_api::overview(paths)
                .map(|ov| approvals::answerable(&ov))
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        View {
            board: board::read(paths),
            update: crate::update::lines(),
            asking: prompts
                .iter()
                .take(approvals::MAX_PROMPTS)
                .map(|p| Asking::of(p, config.notify_tier()))
                .collect(),
            more_asking: prompts.len().saturating_sub(approvals::MAX_PROMPTS),
            link: backend::link(paths),
            progress: sessionpipe_core::state::progress::current(paths)
                .map(|f| sessionpipe_core::state::progress::line(&f.progress)),
            lost: sessionpipe_core::state::losses::current(paths)
                .map(|l| sessionpipe_core::state::losses::line(&l)),
            usage: sessionpipe_core::usage::glance::today_line(
                paths,
                sessionpipe_core::protocol::time::now_ms(),
            ),
            control_stopped: sessionpipe_core::control::store::Store::stopped_line(&paths.outbox()),
            paused: config.notifications_paused,
            open_at_login: config.open_at_login,
            local_receiver: config.local_receiver,
            phone: Status::Off,
            offers: Vec::new(),
        }
    }

    /// True while a long work runs: the refresher looks again sooner.
    pub fn busy(&self) -> bool {
        self.progress.is_some()
    }

    /// This view with the local receiver's status.
    pub fn with_phone(mut self, phone: Status) -> View {
        self.phone = phone;
        self
    }

    /// This view with the harnesses to offer.
    pub fn with_offers(mut self, offers: Vec<Offer>) -> View {
        self.offers = offers;
        self
    }

    /// The menu's shape (`menu::Shape`): same shape, the items are updated
    /// in place; another, the menu is built again.
    #[cfg(test)]
    fn shape(&self) -> Vec<menu::Shape> {
        menu::shape(&menu::lines(self))
    }

    /// Whether the menu has the line `id`.
    #[cfg(test)]
    fn has_line(&self, id: &menu::LineId) -> bool {
        menu::lines(self).iter().any(|l| l.id() == Some(id))
    }

    fn asking_header(&self) -> String {
        format!("Approvals ({})", self.asking.len() + self.more_asking)
    }

    fn link_line(&self) -> Option<String> {
        match self.link {
            Link::Embedded => None,
            Link::Attached { pid } => Some(format!("Attached to sessionpipe daemon (pid {pid})")),
            Link::Starting => Some("Starting the daemon…".into()),
        }
    }

    fn tooltip(&self) -> String {
        let paused = if self.paused {
            " (notifications paused)"
        } else {
            ""
        };
        let lost = if self.lost.is_some() {
            "; hook calls were lost (see the menu)"
        } else {
            ""
        };
        let progress = self
            .progress
            .as_deref()
            .map(|p| format!("; {p}"))
            .unwrap_or_default();
        let usage = self
            .usage
            .as_deref()
            .map(|u| format!("\n{u}"))
            .unwrap_or_default();
        format!(
            "sessionpipe: {}{paused}{progress}{lost}{usage}",
            self.board.summary()
        )
    }
}

/// The icon and its menu, on the main thread.
pub struct Tray {
    icon: TrayIcon,
    last: View,
    menu: Built,
}

impl Tray {
    /// Puts the icon in the tray.
    pub fn build(shared: &Shared) -> anyhow::Result<Tray> {
        let view = View::read_with(&shared.paths, false);
        let menu = Built::build(menu::lines(&view))?;
        let icon = TrayIconBuilder::new()
            .with_id(TRAY_ID)
            .with_icon(icon(view.board.state)?)
            .with_tooltip(view.tooltip())
            .with_menu(Box::new(menu.menu.clone()))
            .with_menu_on_left_click(true)
            .build()?;
        if let Err(e) = prefs::follow_open_at_login(view.open_at_login) {
            tracing::warn!("open at login: {e}");
        }
        Ok(Tray {
            icon,
            last: view,
            menu,
        })
    }

    /// Shows `view`; on an error the last view stays, so the next one tries again.
    pub fn show(&mut self, view: View) {
        if let Err(e) = self.apply(&view) {
            tracing::warn!("the tray was not refreshed: {e}");
            return;
        }
        if view.open_at_login != self.last.open_at_login
            && let Err(e) = prefs::follow_open_at_login(view.open_at_login)
        {
            tracing::warn!("open at login: {e}");
        }
        self.last = view;
    }

    fn apply(&mut self, view: &View) -> anyhow::Result<()> {
        let last = &self.last;
        if view.board.state != last.board.state {
            self.icon.set_icon(Some(icon(view.board.state)?))?;
        }
        if view.tooltip() != last.tooltip() {
            self.icon.set_tooltip(Some(view.tooltip()))?;
        }
        if view == last {
            return Ok(());
        }
        let Err(lines) = self.menu.update(menu::lines(view)) else {
            return Ok(());
        };
        let rebuilt = Built::build(lines)?;
        self.icon.set_menu(Some(Box::new(rebuilt.menu.clone())));
        self.menu = rebuilt;
        Ok(())
    }
}

/// Acts on a menu item; `true` when it was "Quit".
pub fn on_menu(shared: &Arc<Shared>, id: &str) -> bool {
    let Some(line) = LineId::parse(id) else {
        shared.refresh_now();
        return false;
    };
    match line {
        LineId::Update(act) => {
            crate::update::on_menu(act);
            return false;
        }
        LineId::Prompt {
            item,
            session,
            attention,
        } => {
            match item {
                Item::Open => shared.open_window(Some(&session)),
                // The person's click: the only way an answer is ever posted.
                Item::Answer(decision) => {
                    notices::answer_clicked(shared.clone(), session, attention, decision)
                }
            }
            return false;
        }
        LineId::Session(key) => {
            shared.open_window(Some(&key));
            return false;
        }
        LineId::Offer(act, harness) => {
            // The daemon installs the hooks (or notes the no), off the main
            // thread; the menu then shows what it says.
            let shared = shared.clone();
            let spawned = std::thread::Builder::new()
                .name("tray-offer".into())
                .spawn(move || {
                    shared.offers.act(&shared.paths, act, &harness);
                    shared.refresh_now();
                });
            if let Err(e) = spawned {
                tracing::warn!("the offer's click: {e}");
            }
            return false;
        }
        LineId::Open | LineId::MoreSessions | LineId::MoreApprovals => shared.open_window(None),
        LineId::Pause => {
            if let Err(e) = prefs::toggle_paused(&shared.paths) {
                tracing::warn!("pause notifications: {e}");
            }
        }
        LineId::OpenAtLogin => {
            if let Err(e) = prefs::toggle_open_at_login(&shared.paths) {
                tracing::warn!("open at login: {e}");
            }
        }
        // Started or stopped off the main thread (a stop lets requests in
        // flight finish); turned on, its page is opened.
        LineId::PhonePage => match prefs::toggle_local_receiver(&shared.paths) {
            Ok(on) => follow_local_receiver(shared.clone(), on),
            Err(e) => tracing::warn!("phone page: {e}"),
        },
        LineId::OpenPhonePage => {
            let port = prefs::load(&shared.paths).local_receiver_port();
            open_page(&local_receiver::origin(port));
        }
        LineId::Quit => {
            tracing::info!("Quit chosen in the menu: the app ends");
            return true;
        }
        // Lines of words: nothing to do.
        LineId::Summary
        | LineId::Link
        | LineId::Progress
        | LineId::Lost
        | LineId::Usage
        | LineId::ControlStopped
        | LineId::OfferFailed(_)
        | LineId::Approvals
        | LineId::PromptWhat { .. } => {}
    }
    // The check items flip themselves when clicked; the refresh sets them to
    // what config.json says.
    shared.refresh_now();
    false
}

/// Brings the local receiver in step with the setting now; `open`: and opens
/// its page once it serves.
fn follow_local_receiver(shared: Arc<Shared>, open: bool) {
    let spawned = std::thread::Builder::new()
        .name("phone-page".into())
        .spawn(move || {
            let config = prefs::load(&shared.paths);
            // A failure to listen is logged by `follow` and shown in the menu.
            if let Status::Serving { origin } = shared.local_receiver.follow(&shared.paths, &config)
                && open
            {
                open_page(&origin);
            }
            shared.refresh_now();
        });
    if let Err(e) = spawned {
        tracing::warn!("cannot start the phone page's thread: {e}");
    }
}

fn open_page(origin: &str) {
    if let Err(e) = open::that_detached(origin) {
        tracing::warn!("cannot open {origin}: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::daemon_api::Decision;
    use crate::offers;

    #[test]
    fn each_prompt_gets_its_lines_and_items_that_name_it() {
        let overview = serde_json::json!({"approvals": [
            {"session": "codex:c1", "attention_id": "p9", "kind": "permission", "tool": "Bash",
             "message": "make && make install", "title": "Ship it", "cwd": "~/src/api",
             "harness": "codex", "answerable": true}
        ]});
        let prompt = &approvals::answerable(&overview)[0];
        let a = Asking::of(prompt, 1);
        assert_eq!(a.who, "Codex · Ship it · ~/src/api");
        assert_eq!(a.what, "Bash: make &&&& make install", "muda shows && as &");
        let item = |item| LineId::Prompt {
            item,
            session: a.session.clone(),
            attention: a.attention.clone(),
        };
        assert_eq!(
            approvals::from_item_id(&item(Item::Answer(Decision::Allow)).menu_id()),
            Some((Item::Answer(Decision::Allow), "codex:c1", "p9"))
        );
        assert_eq!(
            approvals::from_item_id(&item(Item::Answer(Decision::Deny)).menu_id()),
            Some((Item::Answer(Decision::Deny), "codex:c1", "p9"))
        );
        assert_eq!(
            approvals::from_item_id(&item(Item::Open).menu_id()),
            Some((Item::Open, "codex:c1", "p9"))
        );
        assert_eq!(Asking::of(prompt, 0).what, "wants your permission");
    }

    #[test]
    fn the_phone_page_gets_a_line_that_opens_it_or_says_why_it_cannot() {
        let dir = tempfile::tempdir().unwrap();
        let paths = StatePaths::new(dir.path());
        paths.ensure().unwrap();
        let off = View::read(&paths);
        assert_eq!(menu::phone_line_text(&off), None);
        let serving = off.clone().with_phone(Status::Serving {
            origin: "http://localhost:47474".into(),
        });
        assert_eq!(
            menu::phone_line_text(&serving),
            Some(("Open the phone page (http://localhost:47474)".into(), true))
        );
        let failed = off.clone().with_phone(Status::Failed {
            port: 47474,
            why: "Address already in use".into(),
        });
        assert_eq!(
            menu::phone_line_text(&failed),
            Some((
                "Phone page: cannot listen on port 47474: Address already in use".into(),
                false
            ))
        );
        assert_ne!(
            serving.shape(),
            off.shape(),
            "the line comes: the menu is rebuilt"
        );
        assert_ne!(
            serving.shape(),
            failed.shape(),
            "an opening line is not a disabled one"
        );
    }

    #[test]
    fn hook_calls_lost_to_a_full_disk_get_a_line_and_the_tooltip_says_so() {
        let dir = std::env::temp_dir().join(format!("sp-app-tray-{}", std::process::id()));
        let paths = StatePaths::new(&dir);
        paths.ensure().unwrap();
        assert_eq!(View::read(&paths).lost, None);
        let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_800_000_000);
        sessionpipe_core::spool::loss::record(&paths, at);
        let view = View::read(&paths);
        let line = view.lost.clone().expect("a loss is told");
        assert!(line.contains("at 2027-01-15T08:00:00.000Z"), "{line}");
        assert!(
            menu::capitalised(&line).starts_with("A hook call was lost"),
            "{line}"
        );
        assert!(view.tooltip().contains("lost"));
        assert!(view.has_line(&LineId::Lost), "the menu has the line");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_limit_window_heard_gets_the_usage_line_and_the_tooltip_says_it() {
        let dir = tempfile::tempdir().unwrap();
        let paths = StatePaths::new(dir.path());
        paths.ensure().unwrap();
        let none = View::read(&paths);
        assert_eq!(none.usage, None);
        assert!(!none.has_line(&LineId::Usage));
        let now = sessionpipe_core::protocol::time::now_ms();
        let mut pace = sessionpipe_core::pace::Pace::default();
        let seen = sessionpipe_core::protocol::LimitsObserved {
            account_id: None,
            status: None,
            windows: vec![sessionpipe_core::protocol::LimitWindow {
                id: "five_hour".into(),
                window_minutes: Some(300),
                used_percent: 63.0,
                resets_at: Some(sessionpipe_core::protocol::time::rfc3339_ms(
                    now + 3_600_000,
                )),
            }],
        };
        pace.observe("claude-code", now, &seen, false);
        pace.save(&paths).unwrap();
        let view = View::read(&paths);
        assert_eq!(
            view.usage.as_deref(),
            Some("Today: no tokens · 5-hour window 63%")
        );
        assert!(view.has_line(&LineId::Usage), "the menu has the line");
        assert!(
            view.tooltip()
                .ends_with("\nToday: no tokens · 5-hour window 63%"),
            "{}",
            view.tooltip()
        );
        assert_ne!(view.shape(), none.shape(), "the line comes");
    }

    #[test]
    fn a_harness_offered_gets_its_lines_and_a_failed_click_rebuilds_them() {
        let dir = tempfile::tempdir().unwrap();
        let paths = StatePaths::new(dir.path());
        paths.ensure().unwrap();
        let none = View::read(&paths);
        let droid = |failed: Option<&str>| Offer {
            harness: "droid".into(),
            failed: failed.map(str::to_string),
        };
        let offered = none.clone().with_offers(vec![droid(None)]);
        assert_ne!(offered.shape(), none.shape(), "the lines come");
        let failed = none.clone().with_offers(vec![droid(Some("HTTP 500"))]);
        assert_ne!(failed.shape(), offered.shape(), "its failure line comes");
        assert_eq!(
            offers::from_item_id(&offers::item_id(
                offers::Act::Watch,
                &offered.offers[0].harness
            )),
            Some((offers::Act::Watch, "droid"))
        );
        assert_eq!(
            failed.offers[0].failed_label().as_deref(),
            Some("Not done: HTTP 500")
        );
    }

    #[test]
    fn a_backfill_running_gets_a_line_and_the_tooltip_says_so_until_it_ends() {
        use sessionpipe_core::state::progress::{Progress, Publisher, Stage, Work};
        let dir = tempfile::tempdir().unwrap();
        let paths = StatePaths::new(dir.path());
        paths.ensure().unwrap();
        let idle = View::read(&paths);
        assert_eq!((idle.progress.clone(), idle.busy()), (None, false));
        // What `sessionpipe backfill` (another process, or the daemon) files.
        let mut filed = Publisher::start(&paths);
        filed.tell(&Progress::new(
            Work::Backfill,
            Stage::Sending,
            1200,
            3400,
            "claude-code",
        ));
        let view = View::read(&paths);
        let line = "Backfilling 1\u{a0}200 / 3\u{a0}400 sessions";
        assert_eq!(view.progress.as_deref(), Some(line));
        assert!(view.busy());
        assert_eq!(
            view.tooltip(),
            format!("sessionpipe: No live sessions; {line}")
        );
        assert!(view.has_line(&LineId::Progress), "the menu has the line");
        assert_ne!(
            view.shape(),
            idle.shape(),
            "the line comes: the menu is rebuilt"
        );
        drop(filed);
        let after = View::read(&paths);
        assert_eq!(after.progress, None, "gone when the backfill ends");
        assert_eq!(after.tooltip(), "sessionpipe: No live sessions");
    }

    #[test]
    fn a_receiver_that_refused_the_machine_gets_a_line() {
        use sessionpipe_core::control::store::{Key, Receiver, Store};
        let dir = std::env::temp_dir().join(format!("sp-app-tray-c-{}", std::process::id()));
        let paths = StatePaths::new(&dir);
        paths.ensure().unwrap();
        let mut store = Store::open(&paths.outbox()).unwrap();
        let r = Receiver {
            origin: "https://rx.example".into(),
            machine: "m_0123456789abcdefgh".into(),
            control_url: "https://rx.example/v1/control".into(),
            rp_id: "rx.example".into(),
            wait_max_s: 25,
            account: None,
            paired_ms: 1,
            stopped: None,
        };
        let k = Key {
            receiver: r.origin.clone(),
            id: "k1".into(),
            alg: -7,
            spki: "AA".into(),
            name: None,
            added_ms: 1,
        };
        store.pair(&r, &k).unwrap();
        assert_eq!(View::read(&paths).control_stopped, None, "polling: no line");
        store
            .set_stopped(
                &r.origin,
                Some("the receiver refused this machine's token (401): pair again"),
            )
            .unwrap();
        let view = View::read(&paths);
        let line = view.control_stopped.clone().expect("a line");
        assert!(
            menu::capitalised(&line)
                .starts_with("Control with https://rx.example stopped: the receiver refused"),
            "{line}"
        );
        assert!(view.has_line(&LineId::ControlStopped));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
