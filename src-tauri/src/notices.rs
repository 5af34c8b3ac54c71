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
//! Local approvals (off by default): a permission prompt the core says is
//! answerable (`GET /api/overview`, `approvals[].answerable`) also carries the
//! actions `allow` and `deny`, and says which session and folder; on Linux a
//! notification on screen gains or loses them in place as that changes (its hook
//! began or stopped waiting). An action, or the menu's Allow / Deny
//! (`answer_clicked`), posts the person's answer to `POST /api/approvals`; a
//! refusal (the prompt no longer waits, local approvals are off) is told in a
//! notification of its own, in the API's words.
//!
//! Must not decide what to say or whether to say it: the words, the tier, mutes,
//! "Pause notifications" and turn ends are all the core's `decide`, whether a
//! prompt is answerable the core's overview. Must never answer a prompt but on a
//! person's click.

use crate::approvals::{self, Prompt};
use crate::daemon_api::{self, ApiError, Decision};
use crate::shared::Shared;
use sessionpipe_core::notify::{Notice, Watcher};
use sessionpipe_core::pipeline::outbox::Outbox;
use sessionpipe_core::spool::StatePaths;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often the outbox is looked at (a cheap `PRAGMA data_version`).
const POLL: Duration = Duration::from_millis(300);
/// How often a missing outbox is looked for.
const WAIT_FOR_OUTBOX: Duration = Duration::from_secs(1);
/// How often, while a notification is on screen and local approvals are on,
/// the overview is read again for which prompts are answerable.
const RECHECK: Duration = Duration::from_secs(1);
/// A prompt the overview lists but whose hook does not wait yet is asked about
/// again this often, this many times, before its notification is shown.
const NOT_YET: (Duration, usize) = (Duration::from_millis(150), 6);

/// The answerable prompts by their notice key.
type Answerable = HashMap<String, Prompt>;

/// What a click on a notification opens (Linux; on macOS and Windows only an
/// answerable prompt's notification hears its click).
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
    let mut checked = Instant::now();
    loop {
        std::thread::sleep(POLL);
        let version = outbox.data_version().ok();
        let changed = version.is_none() || version != seen_version;
        seen_version = version;
        let due = shown.follows_prompts() && checked.elapsed() >= RECHECK;
        if !changed && !due {
            continue;
        }
        // Read per batch: a change in the UI's settings (pause, mutes, tier,
        // local approvals) applies to the next event.
        let config = crate::prefs::load(paths);
        let notices = if changed {
            watcher.poll(&outbox, &config)
        } else {
            Vec::new()
        };
        let shows = notices.iter().any(|n| matches!(n, Notice::Show { .. }));
        if due {
            checked = Instant::now();
        }
        // Off: nothing is answerable, and the daemon is not asked.
        let prompts = if !config.local_approvals {
            Some(Answerable::new())
        } else if shows || due {
            answerable_now(paths, &notices)
        } else {
            None
        };
        let none = Answerable::new();
        for notice in notices {
            shown.apply(notice, prompts.as_ref().unwrap_or(&none));
        }
        // An overview that could not be read changes nothing on screen.
        if let Some(prompts) = &prompts {
            shown.offer(prompts);
        }
    }
}

/// The answerable prompts now, by notice key; `None` when the overview cannot be
/// read. A prompt among `notices` that the overview lists but whose hook is a
/// moment from waiting is waited for briefly, so that its notification comes
/// with its actions the first time.
fn answerable_now(paths: &StatePaths, notices: &[Notice]) -> Option<Answerable> {
    let mut tries = 0;
    loop {
        let overview = daemon_api::overview(paths).ok()?;
        let waiting_soon = notices.iter().any(|n| match n {
            Notice::Show { key, .. } => approvals::not_yet_answerable(&overview, key),
            Notice::Withdraw { .. } => false,
        });
        if !waiting_soon || tries >= NOT_YET.1 {
            let prompts = approvals::answerable(&overview);
            return Some(prompts.into_iter().map(|p| (p.notice_key(), p)).collect());
        }
        tries += 1;
        std::thread::sleep(NOT_YET.0);
    }
}

/// A person chose Allow or Deny (a notification's action, the tray menu): posts
/// the answer from a thread of its own, and tells the person when the API
/// refused it. Never called but from a click.
pub fn answer_clicked(shared: Arc<Shared>, session: String, attention: String, decision: Decision) {
    let spawned = std::thread::Builder::new()
        .name("answer".into())
        .spawn(move || {
            match daemon_api::answer(&shared.paths, &session, &attention, decision) {
                Ok(()) => tracing::info!(
                    "the person chose {} for a permission prompt of {session}",
                    decision.as_str()
                ),
                Err(e) => {
                    tracing::warn!("the answer to a prompt of {session} was not taken: {e}");
                    let (summary, body) = refusal(decision, &e);
                    platform::tell(&summary, &body);
                }
            }
            shared.refresh_now();
        });
    if let Err(e) = spawned {
        tracing::warn!("cannot start the answer's thread: {e}");
    }
}

/// The notification that says an answer was not taken: the API's own words.
fn refusal(decision: Decision, e: &ApiError) -> (String, String) {
    let summary = match e.status() {
        Some(404) => "That prompt no longer waits".to_string(),
        Some(409) => "Local approvals are off".to_string(),
        _ => format!("sessionpipe could not {} the prompt", decision.as_str()),
    };
    (summary, e.to_string())
}

#[cfg(all(unix, not(target_os = "macos")))]
mod platform {
    //! Over D-Bus: ids to replace and close, the `default` action for clicks,
    //! `allow` and `deny` on an answerable prompt.

    use super::{Answerable, Target};
    use crate::approvals::{self, Chosen, Prompt};
    use crate::shared::Shared;
    use futures_lite::future::block_on;
    use notify_rust::{Hint, Notification, NotificationHandle, NotificationResponse};
    use sessionpipe_core::notify::Notice;
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};

    /// A notification on screen: its handle (which keeps its D-Bus connection, so
    /// its click still arrives), which showing of its key it is, and what it says
    /// (to show it again with or without the prompt's actions).
    struct OnScreen {
        handle: Arc<NotificationHandle>,
        showing: u64,
        target: Target,
        summary: String,
        body: String,
        /// The answerable prompt whose Allow and Deny it carries.
        prompt: Option<Prompt>,
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

        pub fn apply(&mut self, notice: Notice, prompts: &Answerable) {
            match notice {
                Notice::Show {
                    key,
                    summary,
                    body,
                    url,
                    session,
                } => {
                    let prompt = prompts.get(&key).cloned();
                    self.show(key, summary, body, Target::of(url, session), prompt)
                }
                Notice::Withdraw { key } => self.withdraw(&key),
            }
        }

        /// Whether anything on screen may gain or lose a prompt's actions.
        pub fn follows_prompts(&self) -> bool {
            !self.lock().is_empty()
        }

        /// Shows again, in place, each notification whose prompt became
        /// answerable (its hook waits now) or stopped being so (answered, its
        /// window closed, local approvals turned off).
        pub fn offer(&mut self, prompts: &Answerable) {
            let changed: Vec<(String, String, String, Target, Option<Prompt>)> = self
                .lock()
                .iter()
                .filter(|(key, s)| s.prompt.as_ref() != prompts.get(*key))
                .map(|(key, s)| {
                    let prompt = prompts.get(key).cloned();
                    (
                        key.clone(),
                        s.summary.clone(),
                        s.body.clone(),
                        s.target.clone(),
                        prompt,
                    )
                })
                .collect();
            for (key, summary, body, target, prompt) in changed {
                self.show(key, summary, body, target, prompt);
            }
        }

        fn show(
            &mut self,
            key: String,
            summary: String,
            body: String,
            target: Target,
            prompt: Option<Prompt>,
        ) {
            let markup = *self.markup.get_or_insert_with(|| {
                notify_rust::get_capabilities()
                    .is_ok_and(|caps| caps.iter().any(|c| c == "body-markup"))
            });
            let text = match &prompt {
                Some(p) => p.notification_body(&body),
                None => body.clone(),
            };
            let text = if markup { escape_markup(&text) } else { text };
            let mut n = Notification::new();
            n.appname("sessionpipe")
                .summary(&summary)
                .body(&text)
                // The deb's icon and desktop entry (Tauri names the icon after
                // the binary, the entry after the product).
                .icon("sessionpipe-app")
                .hint(Hint::DesktopEntry("sessionpipe".into()));
            for (id, label) in approvals::actions(prompt.is_some()) {
                n.action(id, label);
            }
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
                    summary,
                    body,
                    prompt,
                },
            );
            // Waits for this showing's click, action or close. A replaced
            // notification keeps its id, so the earlier showing's waiter hears
            // the same signals: only the key's current showing acts.
            let on_screen = self.on_screen.clone();
            let shared = self.shared.clone();
            let _ = std::thread::Builder::new()
                .name("notice".into())
                .spawn(move || {
                    let mut chosen = Chosen::Nothing;
                    block_on(handle.wait_for_action_async(|r| {
                        chosen = match r {
                            NotificationResponse::Default => Chosen::Open,
                            NotificationResponse::Action(a) => approvals::chosen(a),
                            _ => Chosen::Nothing,
                        };
                    }));
                    let mut map = on_screen.lock().unwrap_or_else(|p| p.into_inner());
                    let current = map.get(&key).is_some_and(|s| s.showing == showing);
                    if !current {
                        return;
                    }
                    let Some(entry) = map.remove(&key) else {
                        return;
                    };
                    drop(map);
                    // An action taken is the notification done with, whether or
                    // not the server removes it itself (dunst's context menu
                    // leaves it on screen).
                    if chosen != Chosen::Nothing {
                        block_on(entry.handle.close_async());
                    }
                    match (chosen, entry.prompt) {
                        (Chosen::Open, _) => entry.target.open(&shared),
                        // Only a showing that carried the prompt's actions answers.
                        (Chosen::Answer(decision), Some(p)) => {
                            super::answer_clicked(shared, p.session, p.attention, decision)
                        }
                        _ => {}
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

    /// A notification of its own, not keyed: what became of a person's answer.
    pub fn tell(summary: &str, body: &str) {
        let mut n = Notification::new();
        n.appname("sessionpipe")
            .summary(summary)
            .body(&escape_markup(body))
            .icon("sessionpipe-app")
            .hint(Hint::DesktopEntry("sessionpipe".into()));
        if let Err(e) = n.show() {
            tracing::warn!("cannot show a notification: {e}");
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
    //! ids or closing there); clicking brings the app forward as the OS does. An
    //! answerable prompt's notification carries Allow and Deny (toast buttons on
    //! Windows, the alert's actions on macOS) and its click opens the window on
    //! the session, where the approval can be answered too. Whether it is
    //! answerable is known when it is shown: it is not shown again.

    use super::{Answerable, Target};
    use crate::approvals::{self, Chosen};
    use crate::shared::Shared;
    use notify_rust::NotificationResponse;
    use sessionpipe_core::notify::Notice;
    use std::sync::Arc;

    /// The app's identifier (tauri.conf.json), which the msi registers as its
    /// AppUserModelID.
    #[cfg_attr(not(windows), allow(dead_code))]
    const APP_ID: &str = "org.sessionpipe.desktop";

    pub struct Shown {
        shared: Arc<Shared>,
        /// Windows: the installed app's AppUserModelID; a build tree's binary
        /// has none and uses the default.
        #[cfg_attr(not(windows), allow(dead_code))]
        app_id: Option<String>,
    }

    impl Shown {
        pub fn new(shared: Arc<Shared>) -> Self {
            let in_build_tree = std::env::current_exe().is_ok_and(|exe| {
                exe.parent().is_some_and(|dir| {
                    dir.ends_with("target/debug") || dir.ends_with("target/release")
                })
            });
            Shown {
                shared,
                app_id: (!in_build_tree).then(|| APP_ID.to_string()),
            }
        }

        pub fn follows_prompts(&self) -> bool {
            false
        }

        pub fn offer(&mut self, _prompts: &Answerable) {}

        pub fn apply(&mut self, notice: Notice, prompts: &Answerable) {
            let Notice::Show {
                key,
                summary,
                body,
                session,
                ..
            } = notice
            else {
                return;
            };
            let prompt = prompts.get(&key).cloned();
            let mut n = notify_rust::Notification::new();
            match &prompt {
                Some(p) => {
                    n.summary(&summary).body(&p.notification_body(&body));
                    // The OS's own click needs no action of ours.
                    for (id, label) in &approvals::actions(true)[1..] {
                        n.action(id, label);
                    }
                }
                None => {
                    n.summary(&summary).body(&body);
                }
            }
            #[cfg(windows)]
            if let Some(id) = &self.app_id {
                n.app_id(id);
            }
            let handle = match n.show() {
                Ok(h) => h,
                Err(e) => {
                    tracing::warn!("cannot show a notification: {e}");
                    return;
                }
            };
            let Some(p) = prompt else {
                return;
            };
            let shared = self.shared.clone();
            let _ = std::thread::Builder::new()
                .name("notice".into())
                .spawn(move || {
                    let mut chosen = Chosen::Nothing;
                    let _ = handle.wait_for_response(|r: &NotificationResponse| {
                        chosen = match r {
                            NotificationResponse::Default => Chosen::Open,
                            NotificationResponse::Action(a) => approvals::chosen(a),
                            _ => Chosen::Nothing,
                        };
                    });
                    match chosen {
                        Chosen::Open => Target::Session(session).open(&shared),
                        Chosen::Answer(decision) => {
                            super::answer_clicked(shared, p.session, p.attention, decision)
                        }
                        Chosen::Nothing => {}
                    }
                });
        }
    }

    /// A notification of its own, not keyed: what became of a person's answer.
    pub fn tell(summary: &str, body: &str) {
        let mut n = notify_rust::Notification::new();
        n.summary(summary).body(body);
        if let Err(e) = n.show() {
            tracing::warn!("cannot show a notification: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{ApiError, Decision, Target, refusal};

    #[test]
    fn a_refused_answer_is_told_in_the_apis_words() {
        let gone = ApiError::Refused {
            status: 404,
            message: "that prompt no longer waits (answered elsewhere, or its window closed)"
                .into(),
        };
        assert_eq!(
            refusal(Decision::Allow, &gone),
            (
                "That prompt no longer waits".to_string(),
                "that prompt no longer waits (answered elsewhere, or its window closed)"
                    .to_string()
            )
        );
        let off = ApiError::Refused {
            status: 409,
            message: "local approvals are off".into(),
        };
        assert_eq!(refusal(Decision::Deny, &off).0, "Local approvals are off");
        assert_eq!(
            refusal(Decision::Deny, &ApiError::NoDaemon).0,
            "sessionpipe could not deny the prompt"
        );
    }

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
