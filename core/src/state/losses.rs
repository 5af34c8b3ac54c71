//! Hook calls lost before the spool (`spool::loss` keeps their times), as
//! `status`, `doctor`, the API and the tray tell them, and how long they are
//! told: a week after the last loss the daemon clears the markers.

use spool::StatePaths;
use spool::loss::{self, Losses};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How long after the last loss it is still told.
pub const TOLD_FOR: Duration = Duration::from_secs(7 * 24 * 3600);

fn ms(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// The losses to tell, if any.
pub fn current(paths: &StatePaths) -> Option<Losses> {
    loss::read(paths)
}

/// `{"first": "...", "last": "..."}` (RFC 3339).
pub fn json(l: &Losses) -> serde_json::Value {
    serde_json::json!({
        "first": protocol::time::rfc3339_ms(ms(l.first)),
        "last": protocol::time::rfc3339_ms(ms(l.last)),
    })
}

/// One line for people.
pub fn line(l: &Losses) -> String {
    let at = |t| protocol::time::rfc3339_ms(ms(t));
    if l.first == l.last {
        format!(
            "a hook call was lost at {} (the disk was full, or the state dir not writable)",
            at(l.last)
        )
    } else {
        format!(
            "hook calls were lost from {} to {} (the disk was full, or the state dir not writable)",
            at(l.first),
            at(l.last)
        )
    }
}

/// The daemon's start: markers made (while there is space), old losses cleared.
pub fn prepare(paths: &StatePaths) {
    loss::clear_older_than(paths, TOLD_FOR, SystemTime::now());
    if let Err(e) = loss::prepare(paths) {
        tracing::warn!("cannot make the lost-call markers: {e}");
    }
}
