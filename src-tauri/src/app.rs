//! Builds and runs the tray process: one instance per user (`instance`), the
//! daemon (`backend`), the tray (`tray`), notifications (`notices`), the local
//! receiver when it is turned on (`local_receiver`, kept in step by the
//! refresher), the app's own updates (`update`) and, unless
//! started hidden, the window (`window`), around tao's event loop on the main
//! thread (where the tray icon and its menu must live).
//!
//! Owns the wiring and the app's life: a second launch opens the first one's
//! window and exits; the window's closing leaves the tray running; "Quit" ends
//! the process: the icon goes, the embedded daemon stops between two batches
//! (as SIGTERM stops `sessionpipe daemon`), then the process exits 0 (the
//! window follows, its stdin closed). SIGTERM and SIGINT (a logout, `kill`, a
//! package upgrade, a service manager, Ctrl-C) end it the same way: the app
//! owns the process's signals, not the daemon inside it. Must not hold
//! behaviour of its own.

use crate::backend;
use crate::instance::{self, Ask};
use crate::shared::Shared;
use crate::tray::{Tray, View};
use crate::window::Window;
use sessionpipe_core::daemon::{STOP_BOUND, Signal};
use sessionpipe_core::spool::StatePaths;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tao::event::{Event, StartCause};
use tao::event_loop::{ControlFlow, EventLoopBuilder, EventLoopProxy};
use tray_icon::menu::MenuEvent;

/// How long the first window waits for the embedded daemon's address before it
/// shows the waiting page instead.
const FIRST_WINDOW_WAIT: Duration = Duration::from_secs(3);

/// What the main thread is asked to do by the others.
pub enum UserEvent {
    /// The tray's new view, read off the main thread.
    View(Box<View>),
    /// A menu item was chosen.
    Menu(MenuEvent),
    /// SIGTERM or SIGINT: the app ends as "Quit" does.
    Signal(Signal),
    /// The embedded daemon's thread is over (after `Backend::stop`).
    DaemonEnded,
    /// A time the quitting app waits for has come (`Quitting`).
    QuitTimer,
}

pub fn run(hidden: bool) -> anyhow::Result<()> {
    let paths = StatePaths::from_env()?;
    let ask = if hidden { Ask::Hidden } else { Ask::Open };
    let Some(first) = instance::claim(&paths, ask)? else {
        return Ok(());
    };
    let mut event_loop = EventLoopBuilder::<UserEvent>::with_user_event().build();
    // A menu-bar app: no Dock icon, no app menu.
    #[cfg(target_os = "macos")]
    {
        use tao::platform::macos::{ActivationPolicy, EventLoopExtMacOS};
        event_loop.set_activation_policy(ActivationPolicy::Accessory);
    }
    #[cfg(not(target_os = "macos"))]
    let _ = &mut event_loop;
    let proxy = event_loop.create_proxy();
    let (refresh, refresh_rx) = std::sync::mpsc::channel::<()>();
    let shared = Arc::new(Shared::new(paths.clone(), Window::default(), refresh));

    quit_on_signals(proxy.clone());
    let ended_proxy = proxy.clone();
    let backend = backend::start(paths.clone(), backend::ui_dir(), move || {
        let _ = ended_proxy.send_event(UserEvent::DaemonEnded);
    });
    let on_ask = shared.clone();
    first.serve(move |ask| {
        if ask == Ask::Open {
            on_ask.open_window(None);
        }
    });
    let menu_proxy = proxy.clone();
    MenuEvent::set_event_handler(Some(move |e| {
        let _ = menu_proxy.send_event(UserEvent::Menu(e));
    }));
    crate::notices::spawn(shared.clone());
    // An update, once in, ends the app as "Quit" does; the new one starts then.
    let quit_proxy = proxy.clone();
    crate::update::start(shared.clone(), move || {
        let quit = MenuEvent {
            id: crate::tray::LineId::Quit.menu_id().into(),
        };
        let _ = quit_proxy.send_event(UserEvent::Menu(quit));
    });
    if !hidden {
        open_first_window(shared.clone());
    }

    let mut tray: Option<Tray> = None;
    let timer_proxy = proxy.clone();
    let mut refresher = Some((proxy, refresh_rx));
    // Set by "Quit" (or a signal): the icon is gone at once, the process once
    // the daemon has stopped.
    let mut quitting: Option<Quitting> = None;
    let mut daemon_ended = false;
    event_loop.run(move |event, _, control_flow| {
        let mut begin_quit = false;
        match event {
            // The tray is made once the loop runs (GTK is up on Linux, the
            // application is launched on macOS).
            Event::NewEvents(StartCause::Init) => match Tray::build(&shared) {
                Ok(t) => {
                    tray = Some(t);
                    if let Some((proxy, rx)) = refresher.take() {
                        spawn_refresher(shared.clone(), proxy, rx);
                    }
                }
                Err(e) => {
                    eprintln!("sessionpipe-app: cannot put the icon in the tray: {e}");
                    *control_flow = ControlFlow::ExitWithCode(1);
                    return;
                }
            },
            Event::UserEvent(UserEvent::View(view)) => {
                if let Some(t) = tray.as_mut() {
                    t.show(*view);
                }
            }
            Event::UserEvent(UserEvent::Menu(e)) if quitting.is_none() => {
                begin_quit = crate::tray::on_menu(&shared, e.id().as_ref());
            }
            Event::UserEvent(UserEvent::Signal(signal)) if quitting.is_none() => {
                tracing::info!("{}: the app ends as Quit does", signal.name());
                begin_quit = true;
            }
            Event::UserEvent(UserEvent::DaemonEnded) => {
                daemon_ended = true;
                if quitting.is_none() {
                    tracing::warn!("the embedded daemon's thread ended");
                }
            }
            Event::LoopDestroyed => tracing::info!("the app's event loop ended"),
            _ => {}
        }
        if begin_quit {
            tray = None;
            shared.local_receiver.stop();
            backend.stop();
            quitting = Some(Quitting::begin(timer_proxy.clone()));
        }
        *control_flow = match &quitting {
            Some(q) => q.flow(daemon_ended),
            None => ControlFlow::Wait,
        };
    })
}

/// The app on its way out: its icon gone, its daemon stopping.
struct Quitting {
    /// The least the process outlives its icon, so the panel's call that
    /// carried the click on "Quit" gets its answer first.
    grace_until: Instant,
    /// The most it waits for the daemon (`DAEMON_WAIT`).
    daemon_until: Instant,
}

/// How long the process outlives its icon at least.
const QUIT_GRACE: Duration = Duration::from_millis(200);

/// The most the app waits for its daemon to stop. A release build's stops
/// within its bound (`STOP_BOUND`, half a second; 60-110 ms measured in a
/// backlog); a batch under way commits the jobs it has done and leaves the
/// rest, so even a debug build on a loaded machine stops well within this.
/// Past it the process ends anyway: the core loses nothing to a stop at any
/// instant, and a batch cut off goes again at the next start.
const DAEMON_WAIT: Duration = STOP_BOUND.saturating_mul(4);

impl Quitting {
    /// From now; the loop is woken at both times (tao's `WaitUntil` is no
    /// timer on Linux: it waits for the next event of any kind).
    fn begin(proxy: EventLoopProxy<UserEvent>) -> Quitting {
        let now = Instant::now();
        let q = Quitting {
            grace_until: now + QUIT_GRACE,
            daemon_until: now + DAEMON_WAIT,
        };
        let times = [q.grace_until, q.daemon_until];
        let spawned = std::thread::Builder::new()
            .name("quit-timer".into())
            .spawn(move || {
                for at in times {
                    std::thread::sleep(at.saturating_duration_since(Instant::now()));
                    let _ = proxy.send_event(UserEvent::QuitTimer);
                }
            });
        if let Err(e) = spawned {
            tracing::warn!("cannot start the quit's timer: {e}");
        }
        q
    }

    /// Exit 0 once the grace is over and the daemon has stopped (or had its
    /// time); until then, wait for whichever comes next.
    fn flow(&self, daemon_ended: bool) -> ControlFlow {
        let until = if daemon_ended {
            self.grace_until
        } else {
            self.grace_until.max(self.daemon_until)
        };
        if Instant::now() >= until {
            ControlFlow::ExitWithCode(0)
        } else {
            ControlFlow::WaitUntil(until)
        }
    }
}

/// Starts the thread that turns SIGTERM and SIGINT (Ctrl-C elsewhere) into
/// "Quit". A second one, while the first is being carried out, ends the
/// process at once, as the signal would have (the daemon loses nothing to it).
fn quit_on_signals(proxy: EventLoopProxy<UserEvent>) {
    use sessionpipe_core::daemon::ended_by_signal;
    let spawned = std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            let listened = sessionpipe_core::runtime::block_on(async {
                let first = ended_by_signal().await?;
                let _ = proxy.send_event(UserEvent::Signal(first));
                ended_by_signal().await
            });
            match listened {
                Ok(again) => {
                    tracing::warn!("{} again: the app ends now", again.name());
                    std::process::exit(match again {
                        Signal::Terminate => 143,
                        Signal::Interrupt => 130,
                    });
                }
                Err(e) => tracing::warn!(
                    "cannot listen for SIGTERM and SIGINT ({e}): they end the app at once"
                ),
            }
        });
    if let Err(e) = spawned {
        tracing::warn!("cannot start the signals' thread: {e}");
    }
}

/// How often the menu's sessions and ages are read again.
const REFRESH: Duration = Duration::from_secs(3);
/// How often while a long work (a backfill) runs.
const REFRESH_BUSY: Duration = Duration::from_secs(1);

/// Starts the thread that keeps the tray current: every `REFRESH`, and at once
/// on a message from `Shared::refresh_now`. It reads off the main thread and
/// hands the view over; it also points an open window at a new daemon address.
fn spawn_refresher(
    shared: Arc<Shared>,
    proxy: EventLoopProxy<UserEvent>,
    wake: std::sync::mpsc::Receiver<()>,
) {
    use std::sync::mpsc::RecvTimeoutError;
    let spawned = std::thread::Builder::new()
        .name("tray".into())
        .spawn(move || {
            // The first look comes soon: the embedded daemon takes the lock a
            // moment after the tray is built.
            let mut wait = Duration::from_millis(500);
            loop {
                match wake.recv_timeout(wait) {
                    Ok(()) | Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => return,
                }
                shared
                    .window
                    .follow(backend::ui_address(&shared.paths).as_ref());
                let config = crate::prefs::load(&shared.paths);
                let phone = shared.local_receiver.follow(&shared.paths, &config);
                let view = View::read(&shared.paths)
                    .with_phone(phone)
                    .with_offers(shared.offers.current(&shared.paths));
                // A long work's line moves: looked at more often while it runs.
                wait = if view.busy() { REFRESH_BUSY } else { REFRESH };
                if proxy.send_event(UserEvent::View(Box::new(view))).is_err() {
                    return;
                }
            }
        });
    if let Err(e) = spawned {
        tracing::warn!("cannot start the tray's thread: {e}");
    }
}

/// Opens the window once the embedded daemon serves the UI (it takes a few
/// milliseconds), or after `FIRST_WINDOW_WAIT` on the waiting page.
fn open_first_window(shared: Arc<Shared>) {
    let _ = std::thread::Builder::new()
        .name("first-window".into())
        .spawn(move || {
            let until = Instant::now() + FIRST_WINDOW_WAIT;
            while backend::ui_address(&shared.paths).is_none() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(50));
            }
            shared.open_window(None);
        });
}
