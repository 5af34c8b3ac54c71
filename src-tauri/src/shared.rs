//! What every part of the shell shares: the state paths, the window's
//! process, the local receiver, the offers of a harness found later, and a
//! way to ask the tray for a refresh. Below `app` (which makes it) and the
//! parts it wires (`tray`, `notices`, `prefs`), so none of them imports `app`.

use crate::local_receiver::LocalReceiver;
use crate::offers::Offers;
use crate::window::Window;
use sessionpipe_core::spool::StatePaths;
use std::sync::mpsc::Sender;

pub struct Shared {
    pub paths: StatePaths,
    /// The window's process.
    pub window: Window,
    /// The receiver with the phone page, when the person turned it on.
    pub local_receiver: LocalReceiver,
    /// The harnesses found here and not watched, as the daemon last said.
    pub offers: Offers,
    /// Asks the tray to refresh now (after a menu change).
    refresh: Sender<()>,
}

impl Shared {
    pub fn new(paths: StatePaths, window: Window, refresh: Sender<()>) -> Shared {
        Shared {
            paths,
            window,
            local_receiver: LocalReceiver::default(),
            offers: Offers::default(),
            refresh,
        }
    }

    pub fn refresh_now(&self) {
        let _ = self.refresh.send(());
    }

    /// Opens the window (or brings it forward), on `session` (`harness:id`).
    pub fn open_window(&self, session: Option<&str>) {
        self.window.open(&self.paths, session);
    }
}
