//! The tray's offer of a harness found on this machine after setup (its CLI
//! on PATH or its config folder made, its hooks not installed, the person
//! not having said no): the daemon's `GET /api/offers`, the same offers the
//! board's banner shows, looked at every `LOOK` (and at once after a click);
//! the menu's two items per offer, "Watch Droid (found on this machine)" and
//! "Don't offer Droid again", and what a click on them does: `POST
//! /api/harnesses/{name}` (installs its hooks, as the Harnesses page does)
//! or `POST /api/offers/{name}/decline`. A click that fails leaves the offer
//! with the daemon's words under it until the next try.
//!
//! Must not decide what is found or install anything itself (the daemon
//! does, through the core's installers), and acts only on a click.

use crate::daemon_api;
use sessionpipe_core::protocol::{harness_display_name, valid_harness_name};
use sessionpipe_core::spool::StatePaths;
use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How often the daemon is asked what it finds: a harness installed later
/// need not show within seconds, and each look reads every harness's files.
const LOOK: Duration = Duration::from_secs(30);

const WATCH_PREFIX: &str = "offer-watch:";
const DECLINE_PREFIX: &str = "offer-decline:";

/// What a click on an offer asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Act {
    /// Install the harness's hooks.
    Watch,
    /// Never offer it again.
    Decline,
}

/// One harness offered, as the menu shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Offer {
    pub harness: String,
    /// The daemon's words when the last click on it did not go through.
    pub failed: Option<String>,
}

impl Offer {
    pub fn watch_label(&self) -> String {
        format!(
            "Watch {} (found on this machine)",
            harness_display_name(&self.harness)
        )
    }

    pub fn decline_label(&self) -> String {
        format!("Don't offer {} again", harness_display_name(&self.harness))
    }

    pub fn failed_label(&self) -> Option<String> {
        self.failed.as_ref().map(|why| format!("Not done: {why}"))
    }
}

/// The id of an offer's menu item: what it asks for, and for which harness.
pub fn item_id(act: Act, harness: &str) -> String {
    match act {
        Act::Watch => format!("{WATCH_PREFIX}{harness}"),
        Act::Decline => format!("{DECLINE_PREFIX}{harness}"),
    }
}

/// The menu item `id`'s act and harness, when it is an offer's.
pub fn from_item_id(id: &str) -> Option<(Act, &str)> {
    let (act, harness) = if let Some(h) = id.strip_prefix(WATCH_PREFIX) {
        (Act::Watch, h)
    } else {
        (Act::Decline, id.strip_prefix(DECLINE_PREFIX)?)
    };
    valid_harness_name(harness).then_some((act, harness))
}

#[derive(Default)]
struct Looked {
    at: Option<Instant>,
    found: Vec<String>,
    failed: HashMap<String, String>,
}

/// The offers last read from the daemon, shared by the refresher (which
/// reads them) and a click's thread (which acts and asks for a new look).
#[derive(Default)]
pub struct Offers {
    looked: Mutex<Looked>,
}

impl Offers {
    /// The offers now: the last look's, or a new one when it is `LOOK` old.
    /// No daemon, or one that cannot say: no offer (the board says why).
    pub fn current(&self, paths: &StatePaths) -> Vec<Offer> {
        let due = {
            let looked = self.looked.lock().unwrap_or_else(PoisonError::into_inner);
            looked.at.is_none_or(|t| t.elapsed() >= LOOK)
        };
        if due {
            let found = daemon_api::offers(paths).unwrap_or_default();
            let mut looked = self.looked.lock().unwrap_or_else(PoisonError::into_inner);
            looked.failed.retain(|h, _| found.contains(h));
            looked.found = found;
            looked.at = Some(Instant::now());
        }
        let looked = self.looked.lock().unwrap_or_else(PoisonError::into_inner);
        looked
            .found
            .iter()
            .map(|h| Offer {
                harness: h.clone(),
                failed: looked.failed.get(h).cloned(),
            })
            .collect()
    }

    /// A person's click on an offer: asks the daemon (off the main thread:
    /// it waits on the answer), then the next `current` looks again.
    pub fn act(&self, paths: &StatePaths, act: Act, harness: &str) {
        let done = match act {
            Act::Watch => daemon_api::watch_harness(paths, harness),
            Act::Decline => daemon_api::decline_offer(paths, harness),
        };
        let mut looked = self.looked.lock().unwrap_or_else(PoisonError::into_inner);
        match done {
            Ok(()) => {
                looked.failed.remove(harness);
                tracing::info!("{act:?} {harness}: done (the tray's offer)");
            }
            Err(e) => {
                tracing::warn!("{act:?} {harness} (the tray's offer): {e}");
                looked.failed.insert(harness.to_string(), e.to_string());
            }
        }
        looked.at = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_offers_items_name_it_and_read_back() {
        let o = Offer {
            harness: "droid".into(),
            failed: None,
        };
        assert_eq!(o.watch_label(), "Watch Droid (found on this machine)");
        assert_eq!(o.decline_label(), "Don't offer Droid again");
        assert_eq!(o.failed_label(), None);
        assert_eq!(
            from_item_id(&item_id(Act::Watch, &o.harness)),
            Some((Act::Watch, "droid"))
        );
        assert_eq!(
            from_item_id(&item_id(Act::Decline, &o.harness)),
            Some((Act::Decline, "droid"))
        );
        assert_eq!(
            from_item_id("offer-watch:../x"),
            None,
            "only a harness name"
        );
        assert_eq!(from_item_id("session:droid:1"), None);
    }

    #[test]
    fn no_daemon_no_offer_and_a_failed_click_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let paths = StatePaths::new(dir.path());
        paths.ensure().unwrap();
        let offers = Offers::default();
        assert!(offers.current(&paths).is_empty());
        // The daemon's answer is what a click failing shows; with the
        // harness offered, it shows under the offer.
        offers.act(&paths, Act::Watch, "droid");
        offers
            .looked
            .lock()
            .unwrap()
            .found
            .push("droid".to_string());
        let shown = offers.looked.lock().unwrap().failed.get("droid").cloned();
        assert_eq!(
            shown.as_deref(),
            Some("no sessionpipe daemon serves the API right now")
        );
    }
}
