//! The tray icon and its menu.
//!
//! The icon shows the state at a glance (idle, working, needs you: the three PNGs
//! in `icons/tray/`, drawn by `icons/tray/draw.sh`). The menu lists the live
//! sessions, those needing the person first (`board`), each opening the window on
//! it; then "Pause notifications" and "Open at login" (check items over
//! `config.json`, through `prefs`), "Open sessionpipe" and "Quit".
//!
//! Owns the refresher thread, which every few seconds (and at once after a menu
//! change) reads the board and the settings, changes what changed in place
//! (labels, checks, the icon) and rebuilds the menu only when its lines come or
//! go. Must not decide a session's state or a notification: it shows the core's.

use crate::app::Shared;
use crate::backend::{self, Link};
use crate::board::{self, Board};
use crate::{prefs, window};
use sessionpipe_core::session::Glance;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;
use tauri::image::Image;
use tauri::menu::{CheckMenuItem, IsMenuItem, Menu, MenuEvent, MenuItem, PredefinedMenuItem};
use tauri::tray::{TrayIcon, TrayIconBuilder};
use tauri::{AppHandle, Manager, Wry};

const TRAY_ID: &str = "sessionpipe";
/// How often the menu's sessions and ages are read again.
const REFRESH: Duration = Duration::from_secs(3);
const SESSION_PREFIX: &str = "session:";

const IDLE: &[u8] = include_bytes!("../icons/tray/idle.png");
const WORKING: &[u8] = include_bytes!("../icons/tray/working.png");
const NEEDS_YOU: &[u8] = include_bytes!("../icons/tray/needs-you.png");

fn icon(state: Glance) -> tauri::Result<Image<'static>> {
    Image::from_bytes(match state {
        Glance::NeedsYou => NEEDS_YOU,
        Glance::Working => WORKING,
        Glance::Done => IDLE,
    })
}

/// Everything the tray shows.
#[derive(Clone, Debug, PartialEq, Eq)]
struct View {
    board: Board,
    link: Link,
    paused: bool,
    open_at_login: bool,
}

impl View {
    fn read(app: &AppHandle) -> View {
        let paths = &app.state::<Shared>().paths;
        let config = prefs::load(paths);
        View {
            board: board::read(paths),
            link: backend::link(paths),
            paused: config.notifications_paused,
            open_at_login: config.open_at_login,
        }
    }

    /// The menu's shape: which lines exist. Same shape: the items are updated in
    /// place; another shape: the menu is built again.
    fn shape(&self) -> (Vec<&str>, bool, bool) {
        (
            self.board.rows.iter().map(|r| r.key.as_str()).collect(),
            self.link_line().is_some(),
            self.board.more > 0,
        )
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
        format!("sessionpipe: {}{paused}", self.board.summary())
    }
}

/// The menu's items that change in place.
struct Items {
    menu: Menu<Wry>,
    header: MenuItem<Wry>,
    link: Option<MenuItem<Wry>>,
    sessions: Vec<MenuItem<Wry>>,
    more: Option<MenuItem<Wry>>,
    pause: CheckMenuItem<Wry>,
    login: CheckMenuItem<Wry>,
}

impl Items {
    fn build(app: &AppHandle, view: &View) -> tauri::Result<Items> {
        let disabled = |text: &str| MenuItem::new(app, text, false, None::<&str>);
        let header = disabled(&view.board.summary())?;
        let link = view.link_line().map(|l| disabled(&l)).transpose()?;
        let sessions = view
            .board
            .rows
            .iter()
            .map(|r| {
                MenuItem::with_id(
                    app,
                    format!("{SESSION_PREFIX}{}", r.key),
                    &r.label,
                    true,
                    None::<&str>,
                )
            })
            .collect::<tauri::Result<Vec<_>>>()?;
        let more = (view.board.more > 0)
            .then(|| MenuItem::with_id(app, "more", more_text(view), true, None::<&str>))
            .transpose()?;
        let pause = CheckMenuItem::with_id(
            app,
            "pause",
            "Pause notifications",
            true,
            view.paused,
            None::<&str>,
        )?;
        let login = CheckMenuItem::with_id(
            app,
            "login",
            "Open at login",
            true,
            view.open_at_login,
            None::<&str>,
        )?;
        let open = MenuItem::with_id(app, "open", "Open sessionpipe", true, None::<&str>)?;
        let quit = MenuItem::with_id(app, "quit", "Quit", true, None::<&str>)?;
        let sep = || PredefinedMenuItem::separator(app);
        let (sep1, sep2, sep3) = (sep()?, sep()?, sep()?);
        let mut all: Vec<&dyn IsMenuItem<Wry>> = vec![&header];
        if let Some(l) = &link {
            all.push(l);
        }
        all.push(&sep1);
        all.extend(sessions.iter().map(|s| s as &dyn IsMenuItem<Wry>));
        if let Some(m) = &more {
            all.push(m);
        }
        if !sessions.is_empty() {
            all.push(&sep2);
        }
        all.extend([&pause as &dyn IsMenuItem<Wry>, &login, &sep3, &open, &quit]);
        let menu = Menu::with_items(app, &all)?;
        Ok(Items {
            menu,
            header,
            link,
            sessions,
            more,
            pause,
            login,
        })
    }

    /// Updates the items of a menu of the same shape.
    fn update(&self, view: &View) -> tauri::Result<()> {
        self.header.set_text(view.board.summary())?;
        if let (Some(item), Some(text)) = (&self.link, view.link_line()) {
            item.set_text(text)?;
        }
        for (item, row) in self.sessions.iter().zip(&view.board.rows) {
            item.set_text(&row.label)?;
        }
        if let Some(item) = &self.more {
            item.set_text(more_text(view))?;
        }
        self.pause.set_checked(view.paused)?;
        self.login.set_checked(view.open_at_login)?;
        Ok(())
    }
}

fn more_text(view: &View) -> String {
    format!("{} more in the window…", view.board.more)
}

/// Puts the icon in the tray.
pub fn build(app: &AppHandle) -> tauri::Result<()> {
    let view = View::read(app);
    let items = Items::build(app, &view)?;
    TrayIconBuilder::with_id(TRAY_ID)
        .icon(icon(view.board.state)?)
        .tooltip(view.tooltip())
        .menu(&items.menu)
        .show_menu_on_left_click(true)
        .on_menu_event(on_menu)
        .build(app)?;
    let _ = prefs::follow_open_at_login(app, &prefs::load(&app.state::<Shared>().paths));
    app.manage(std::sync::Mutex::new(Some((view, items))));
    Ok(())
}

type Current = std::sync::Mutex<Option<(View, Items)>>;

/// Starts the thread that keeps the tray current: every `REFRESH`, and at once
/// on a message from `Shared::refresh_now`.
pub fn spawn_refresher(app: AppHandle, wake: Receiver<()>) {
    let spawned = std::thread::Builder::new()
        .name("tray".into())
        .spawn(move || {
            // The first look comes soon: the embedded daemon takes the lock a
            // moment after the tray is built.
            let mut wait = Duration::from_millis(500);
            loop {
                let woken = wake.recv_timeout(wait);
                wait = REFRESH;
                match woken {
                    Ok(()) | Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => return,
                }
                if let Err(e) = refresh(&app) {
                    sessionpipe_core::log::warn(&format!("the tray was not refreshed: {e}"));
                }
            }
        });
    if let Err(e) = spawned {
        sessionpipe_core::log::warn(&format!("cannot start the tray's thread: {e}"));
    }
}

fn refresh(app: &AppHandle) -> tauri::Result<()> {
    let paths = &app.state::<Shared>().paths;
    let view = View::read(app);
    app.state::<Shared>()
        .window
        .follow(backend::ui_address(paths).as_ref());
    let Some(tray) = app.tray_by_id(TRAY_ID) else {
        return Ok(());
    };
    let current = app.state::<Current>();
    let mut current = current.lock().unwrap_or_else(|p| p.into_inner());
    let Some((last, items)) = current.as_mut() else {
        return Ok(());
    };
    // On an error `last` stays, so the next refresh tries again.
    apply(app, &tray, last, items, &view)?;
    if view.open_at_login != last.open_at_login
        && let Err(e) = prefs::follow_open_at_login(app, &prefs::load(paths))
    {
        sessionpipe_core::log::warn(&format!("open at login: {e}"));
    }
    *last = view;
    Ok(())
}

fn apply(
    app: &AppHandle,
    tray: &TrayIcon,
    last: &View,
    items: &mut Items,
    view: &View,
) -> tauri::Result<()> {
    if view.board.state != last.board.state {
        tray.set_icon(Some(icon(view.board.state)?))?;
    }
    if view.tooltip() != last.tooltip() {
        tray.set_tooltip(Some(view.tooltip()))?;
    }
    if view == last {
        return Ok(());
    }
    if view.shape() == last.shape() {
        return items.update(view);
    }
    let rebuilt = Items::build(app, view)?;
    tray.set_menu(Some(rebuilt.menu.clone()))?;
    *items = rebuilt;
    Ok(())
}

fn on_menu(app: &AppHandle, event: MenuEvent) {
    let shared = app.state::<Shared>();
    let id = event.id().as_ref();
    if let Some(key) = id.strip_prefix(SESSION_PREFIX) {
        window::open(app, Some(key));
        return;
    }
    match id {
        "open" | "more" => window::open(app, None),
        "pause" => {
            if let Err(e) = prefs::toggle_paused(&shared.paths) {
                sessionpipe_core::log::warn(&format!("pause notifications: {e}"));
            }
        }
        "login" => {
            if let Err(e) = prefs::toggle_open_at_login(app, &shared.paths) {
                sessionpipe_core::log::warn(&format!("open at login: {e}"));
            }
        }
        "quit" => app.exit(0),
        _ => {}
    }
    // The check items flip themselves when clicked; the refresh sets them to
    // what config.json says.
    shared.refresh_now();
}
