//! Native notifications: shows what `sessionpipe_core::notify` decides.
//!
//! Owns a thread that follows the outbox with `notify::Watcher` (from now: what
//! happened before the app started is not news) and turns each `Notice` into a
//! desktop notification: one per key (a second `Show` with the same key replaces
//! the first in place), `Withdraw` closes it, and a click opens the session's own
//! link when it has one (http or https), else the window on that session.
//! On Linux (D-Bus, `org.freedesktop.Notifications`) all of that works through
//! notify-rust: replacing by id, `CloseNotification`, and the `default` action
//! that servers such as dunst invoke on a click. On macOS and Windows a notice is
//! shown and neither replaced nor withdrawn (notify-rust cannot there).
//!
//! Must not decide what to say or whether to say it: the words, the tier, mutes,
//! "Pause notifications" and turn ends are all the core's `decide`.

use crate::shared::Shared;
use sessionpipe_core::notify::Watcher;
use sessionpipe_core::pipeline::outbox::Outbox;
use sessionpipe_core::state::config::Config;
use std::sync::Arc;
use std::time::Duration;

/// How often the outbox is looked at (a cheap `PRAGMA data_version`).
const POLL: Duration = Duration::from_millis(300);
/// How often a missing outbox is looked for.
const WAIT_FOR_OUTBOX: Duration = Duration::from_secs(1);

/// What a click on a notification opens (Linux: macOS and Windows get no click).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(not(all(unix, not(target_os = "macos"))), allow(dead_code))]
enum Target {
    /// The session's own page (a web session, a pull request...).
    Link(String),
    /// The window on `harness:id`.
    Session(String),
}

#[cfg_attr(not(all(unix, not(target_os = "macos"))), allow(dead_code))]
impl Target {
    fn of(url: Option<String>, session: String) -> Target {
        match url {
            Some(u) if u.starts_with("https://") || u.starts_with("http://") => Target::Link(u),
            _ => Target::Session(session),
        }
    }

    fn open(&self, shared: &Shared) {
        match self {
            Target::Link(url) => {
                if let Err(e) = open::that_detached(url) {
                    tracing::warn!("cannot open the session's link: {e}");
                }
            }
            Target::Session(key) => shared.open_window(Some(key)),
        }
    }
}

/// Starts the notification thread.
pub fn spawn(shared: Arc<Shared>) {
    let spawned = std::thread::Builder::new()
        .name("notices".into())
        .spawn(move || follow(shared));
    if let Err(e) = spawned {
        tracing::warn!("cannot start the notifications' thread: {e}");
    }
}

fn follow(shared: Arc<Shared>) {
    let paths = &shared.paths;
    let outbox = loop {
        if let Ok(Some(outbox)) = Outbox::open_readonly(&paths.outbox()) {
            break outbox;
        }
        std::thread::sleep(WAIT_FOR_OUTBOX);
    };
    let mut watcher = Watcher::from_now(&outbox);
    let mut shown = platform::Shown::new(shared.clone());
    let mut seen_version = None;
    loop {
        std::thread::sleep(POLL);
        let version = outbox.data_version().ok();
        if version.is_some() && version == seen_version {
            continue;
        }
        seen_version = version;
        // Read per batch: a change in the UI's settings (pause, mutes, tier)
        // applies to the next event.
        let config = Config::load(paths).unwrap_or_default();
        for notice in watcher.poll(&outbox, &config) {
            shown.apply(notice);
        }
    }
}

#[cfg(all(unix, not(target_os = "macos")))]
mod platform {
    //! Over D-Bus: ids to replace and close, the `default` action for clicks.

    use super::Target;
    use crate::shared::Shared;
    use futures_lite::future::block_on;
    use notify_rust::{Hint, Notification, NotificationHandle, NotificationResponse};
    use sessionpipe_core::notify::Notice;
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};

    /// A notification on screen: its handle (which keeps its D-Bus connection, so
    /// its click still arrives) and which showing of its key it is.
    struct OnScreen {
        handle: Arc<NotificationHandle>,
        showing: u64,
        target: Target,
    }

    pub struct Shown {
        shared: Arc<Shared>,
        /// By notice key. An entry leaves when its notification is closed (by the
        /// person, by the server's timeout, by a click, or withdrawn).
        on_screen: Arc<Mutex<HashMap<String, OnScreen>>>,
        showings: u64,
        failed_before: bool,
        /// Whether the server reads the body as markup (asked once).
        markup: Option<bool>,
    }

    impl Shown {
        pub fn new(shared: Arc<Shared>) -> Self {
            Shown {
                shared,
                on_screen: Arc::default(),
                showings: 0,
                failed_before: false,
                markup: None,
            }
        }

        pub fn apply(&mut self, notice: Notice) {
            match notice {
                Notice::Show {
                    key,
                    summary,
                    body,
                    url,
                    session,
                } => self.show(key, &summary, &body, Target::of(url, session)),
                Notice::Withdraw { key } => self.withdraw(&key),
            }
        }

        fn show(&mut self, key: String, summary: &str, body: &str, target: Target) {
            let markup = *self.markup.get_or_insert_with(|| {
                notify_rust::get_capabilities()
                    .is_ok_and(|caps| caps.iter().any(|c| c == "body-markup"))
            });
            let body = if markup {
                escape_markup(body)
            } else {
                body.to_string()
            };
            let mut n = Notification::new();
            n.appname("sessionpipe")
                .summary(summary)
                .body(&body)
                // The deb's icon and desktop entry (Tauri names the icon after
                // the binary, the entry after the product).
                .icon("sessionpipe-app")
                .hint(Hint::DesktopEntry("sessionpipe".into()))
                .action("default", "Open");
            let replaces = self.lock().get(&key).map(|s| s.handle.id());
            if let Some(id) = replaces {
                n.id(id);
            }
            let handle = match n.show() {
                Ok(h) => Arc::new(h),
                Err(e) => {
                    // Said once: no notification server is a state, not an event.
                    if !self.failed_before {
                        tracing::warn!("cannot show a notification: {e}");
                        self.failed_before = true;
                    }
                    return;
                }
            };
            self.failed_before = false;
            self.showings += 1;
            let showing = self.showings;
            self.lock().insert(
                key.clone(),
                OnScreen {
                    handle: handle.clone(),
                    showing,
                    target,
                },
            );
            // Waits for this showing's click or close. A replaced notification
            // keeps its id, so the earlier showing's waiter hears the same
            // signals: only the key's current showing acts.
            let on_screen = self.on_screen.clone();
            let shared = self.shared.clone();
            let _ = std::thread::Builder::new()
                .name("notice".into())
                .spawn(move || {
                    let mut clicked = false;
                    block_on(handle.wait_for_action_async(|r| {
                        clicked = matches!(r, NotificationResponse::Default)
                            || matches!(r, NotificationResponse::Action(a) if a == "default");
                    }));
                    let mut map = on_screen.lock().unwrap_or_else(|p| p.into_inner());
                    let current = map.get(&key).is_some_and(|s| s.showing == showing);
                    if !current {
                        return;
                    }
                    if let Some(entry) = map.remove(&key) {
                        drop(map);
                        if clicked {
                            entry.target.open(&shared);
                        }
                    }
                });
        }

        fn withdraw(&mut self, key: &str) {
            let entry = self.lock().remove(key);
            if let Some(entry) = entry {
                block_on(entry.handle.close_async());
            }
        }

        fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, OnScreen>> {
            self.on_screen.lock().unwrap_or_else(|p| p.into_inner())
        }
    }

    /// The body is markup for servers that say `body-markup` (dunst does): a
    /// command's `<`, `>` and `&` must show as written, not as markup.
    fn escape_markup(s: &str) -> String {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    }

    #[cfg(test)]
    mod tests {
        #[test]
        fn markup_is_escaped() {
            assert_eq!(
                super::escape_markup("cat <a >b && echo"),
                "cat &lt;a &gt;b &amp;&amp; echo"
            );
        }
    }
}

#[cfg(not(all(unix, not(target_os = "macos"))))]
mod platform {
    //! macOS and Windows: shown, never replaced or withdrawn (notify-rust has no
    //! ids or closing there); clicking brings the app forward as the OS does.

    use crate::shared::Shared;
    use sessionpipe_core::notify::Notice;
    use std::sync::Arc;

    /// The app's identifier (tauri.conf.json), which the msi registers as its
    /// AppUserModelID.
    #[cfg_attr(not(windows), allow(dead_code))]
    const APP_ID: &str = "org.sessionpipe.desktop";

    pub struct Shown {
        /// Windows: the installed app's AppUserModelID; a build tree's binary
        /// has none and uses the default.
        #[cfg_attr(not(windows), allow(dead_code))]
        app_id: Option<String>,
    }

    impl Shown {
        pub fn new(_shared: Arc<Shared>) -> Self {
            let in_build_tree = std::env::current_exe().is_ok_and(|exe| {
                exe.parent().is_some_and(|dir| {
                    dir.ends_with("target/debug") || dir.ends_with("target/release")
                })
            });
            Shown {
                app_id: (!in_build_tree).then(|| APP_ID.to_string()),
            }
        }

        pub fn apply(&mut self, notice: Notice) {
            if let Notice::Show { summary, body, .. } = notice {
                let mut n = notify_rust::Notification::new();
                n.summary(&summary).body(&body);
                #[cfg(windows)]
                if let Some(id) = &self.app_id {
                    n.app_id(id);
                }
                if let Err(e) = n.show() {
                    tracing::warn!("cannot show a notification: {e}");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Target;

    #[test]
    fn a_click_opens_web_links_only() {
        assert_eq!(
            Target::of(
                Some("https://claude.ai/code/s1".into()),
                "claude-code:s1".into()
            ),
            Target::Link("https://claude.ai/code/s1".into())
        );
        assert_eq!(
            Target::of(Some("file:///etc/passwd".into()), "codex:s2".into()),
            Target::Session("codex:s2".into())
        );
        assert_eq!(
            Target::of(None, "codex:s2".into()),
            Target::Session("codex:s2".into())
        );
    }
}
