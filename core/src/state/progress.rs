//! How far a long piece of work is (a backfill, the re-send of remote titles),
//! and `progress.json`, which tells it to the daemon's API (so the UI) and the
//! tray while it runs, whichever process runs it (`sessionpipe backfill`,
//! `install`'s one backfill, the daemon turning remote titles on).
//!
//! `Progress` is what the work tells its observer; the work itself writes
//! nothing (the CLI draws it, `Publisher` files it). The file is 0600 and
//! replaced whole (a reader sees one state or the next), at most `EVERY` apart
//! but always on a change of stage, and removed when the work ends. Its writer
//! holds `progress.lock` exclusively the whole time, so a file left behind by a
//! writer that died (killed, crashed) is known as stale by the lock being free
//! (the OS releases it with the process; no pid can be reused into a lie), and
//! `current` says nothing runs. One writer at a time: a second long work while
//! one is filed is not filed (it still shows on its own terminal).
//!
//! Owns the shape and the words; must not decide when work runs or what it does.

use serde::{Deserialize, Serialize};
use spool::StatePaths;
use std::fs::{File, TryLockError};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The file is written at most this often (a stage change is written at once).
pub const EVERY: Duration = Duration::from_millis(250);

/// Which long work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "lowercase")]
pub enum Work {
    /// `sessionpipe backfill`, and `install`'s one backfill.
    Backfill,
    /// Remote titles turned on, or `titles refresh`: the last 30 days asked about.
    Titles,
}

/// How far into it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "lowercase")]
pub enum Stage {
    /// The harnesses' files are read: `done` of `total` harnesses (how many
    /// sessions there are is not known yet).
    Reading,
    /// The sessions found are sent (appended to the outbox; for titles, asked
    /// about): `done` of `total` sessions.
    Sending,
}

/// One step of a long work, as it tells its observer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Progress {
    pub what: Work,
    pub stage: Stage,
    pub done: u64,
    pub total: u64,
    /// The harness being read, or whose session was just sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harness: Option<String>,
}

impl Progress {
    /// A step; `harness` empty when it names none.
    pub fn new(what: Work, stage: Stage, done: usize, total: usize, harness: &str) -> Progress {
        Progress {
            what,
            stage,
            done: done as u64,
            total: total as u64,
            harness: (!harness.is_empty()).then(|| harness.to_string()),
        }
    }

    /// The whole percent done, in the sending stage (reading has none).
    pub fn percent(&self) -> Option<u64> {
        match self.stage {
            Stage::Reading => None,
            Stage::Sending if self.total == 0 => Some(100),
            Stage::Sending => Some(self.done.min(self.total) * 100 / self.total),
        }
    }

    /// True on the last step of the work (every session sent).
    pub fn is_last(&self) -> bool {
        self.stage == Stage::Sending && self.done >= self.total
    }
}

/// What `progress.json` holds: the step, who writes it and since when.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Filed {
    #[serde(flatten)]
    pub progress: Progress,
    /// The writer's process id (for people: staleness is the lock's).
    pub pid: u32,
    /// When the work started and when the file was last written (RFC 3339).
    pub started_at: String,
    pub updated_at: String,
}

fn file(paths: &StatePaths) -> PathBuf {
    paths.root.join("progress.json")
}

fn lock_file(paths: &StatePaths) -> PathBuf {
    paths.root.join("progress.lock")
}

/// The long work running now, when one is filed and its writer still runs.
pub fn current(paths: &StatePaths) -> Option<Filed> {
    let lock = File::open(lock_file(paths)).ok()?;
    match lock.try_lock_shared() {
        // Nobody holds it: whatever the file says, its writer is gone.
        Ok(()) => {
            let _ = lock.unlock();
            None
        }
        Err(TryLockError::WouldBlock) => super::file::load::<Filed>(&file(paths)).ok().flatten(),
        Err(TryLockError::Error(_)) => None,
    }
}

/// One line for people (the tray's menu and tooltip): `Backfilling 1 200 / 3 400
/// sessions`.
pub fn line(p: &Progress) -> String {
    let (done, total) = (grouped(p.done), grouped(p.total));
    match (p.what, p.stage) {
        (Work::Backfill, Stage::Reading) => {
            format!("Backfilling: reading the harnesses' files ({done} / {total})")
        }
        (Work::Backfill, Stage::Sending) => format!("Backfilling {done} / {total} sessions"),
        (Work::Titles, Stage::Reading) => "Remote titles: reading Claude Code's files".into(),
        (Work::Titles, Stage::Sending) => {
            format!("Remote titles: asking about {done} / {total} sessions")
        }
    }
}

/// `3400` → `3 400` (a no-break space between groups of three).
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push('\u{a0}');
        }
        out.push(c);
    }
    out
}

/// Files a long work's progress while it lives: takes the lock, writes
/// `progress.json` as told (at most every `EVERY`), removes it when dropped.
pub struct Publisher {
    paths: StatePaths,
    /// `None`: another long work is filed (or the state dir is not writable):
    /// this one is not.
    lock: Option<File>,
    started_ms: i64,
    last: Option<(Instant, Stage)>,
}

impl Publisher {
    /// Starts filing; a publisher that cannot take the lock files nothing.
    pub fn start(paths: &StatePaths) -> Publisher {
        let lock = take_lock(paths);
        if lock.is_none() {
            tracing::debug!("progress: another long work is filed; this one is not");
        }
        Publisher {
            paths: paths.clone(),
            lock,
            started_ms: protocol::time::now_ms(),
            last: None,
        }
    }

    /// True when this publisher files its work.
    pub fn filing(&self) -> bool {
        self.lock.is_some()
    }

    /// Files `p` unless the last write was under `EVERY` ago in the same stage.
    pub fn tell(&mut self, p: &Progress) {
        self.tell_at(p, Instant::now());
    }

    fn tell_at(&mut self, p: &Progress, now: Instant) {
        if self.lock.is_none() {
            return;
        }
        if let Some((at, stage)) = self.last
            && stage == p.stage
            && now.duration_since(at) < EVERY
        {
            return;
        }
        self.last = Some((now, p.stage));
        let filed = Filed {
            progress: p.clone(),
            pid: std::process::id(),
            started_at: protocol::time::rfc3339_ms(self.started_ms),
            updated_at: protocol::time::rfc3339_ms(protocol::time::now_ms()),
        };
        if let Err(e) = super::file::save(&file(&self.paths), &filed) {
            tracing::debug!("progress: {e}");
        }
    }
}

impl Drop for Publisher {
    fn drop(&mut self) {
        // The file goes before the lock: a reader never sees a held lock's
        // file from a work that ended.
        if let Some(lock) = self.lock.take() {
            let _ = std::fs::remove_file(file(&self.paths));
            let _ = lock.unlock();
        }
    }
}

fn take_lock(paths: &StatePaths) -> Option<File> {
    let lock = spool::files::open_lock_file(&lock_file(paths)).ok()?;
    lock.try_lock().ok()?;
    Some(lock)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sending(done: usize, total: usize) -> Progress {
        Progress::new(Work::Backfill, Stage::Sending, done, total, "claude-code")
    }

    #[test]
    fn a_filed_work_is_current_until_it_ends_and_private() {
        let dir = tempfile::tempdir().unwrap();
        let paths = StatePaths::new(dir.path());
        paths.ensure().unwrap();
        assert_eq!(current(&paths), None);
        let mut p = Publisher::start(&paths);
        assert!(p.filing());
        assert_eq!(current(&paths), None, "nothing told yet");
        p.tell(&sending(12, 3400));
        let filed = current(&paths).expect("filed");
        assert_eq!(filed.progress, sending(12, 3400));
        assert_eq!(filed.pid, std::process::id());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(file(&paths))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let second = Publisher::start(&paths);
        assert!(!second.filing(), "one writer at a time");
        drop(second);
        assert!(current(&paths).is_some(), "the second one removed nothing");
        drop(p);
        assert_eq!(current(&paths), None);
        assert!(!file(&paths).exists(), "removed at the end");
    }

    #[test]
    fn a_file_whose_writer_is_gone_is_stale() {
        let dir = tempfile::tempdir().unwrap();
        let paths = StatePaths::new(dir.path());
        paths.ensure().unwrap();
        let filed = Filed {
            progress: sending(1, 2),
            pid: std::process::id(),
            started_at: "2026-12-01T00:00:00.000Z".into(),
            updated_at: "2026-12-01T00:00:00.000Z".into(),
        };
        crate::state::file::save(&file(&paths), &filed).unwrap();
        assert_eq!(current(&paths), None, "no lock file: no writer");
        std::fs::write(lock_file(&paths), "").unwrap();
        assert_eq!(current(&paths), None, "nobody holds the lock");
        let held = take_lock(&paths).unwrap();
        assert_eq!(current(&paths), Some(filed));
        drop(held);
        assert_eq!(current(&paths), None);
    }

    #[test]
    fn writes_are_spaced_but_a_new_stage_is_written_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let paths = StatePaths::new(dir.path());
        paths.ensure().unwrap();
        let mut p = Publisher::start(&paths);
        let t0 = Instant::now();
        let reading = Progress::new(Work::Backfill, Stage::Reading, 0, 11, "claude-code");
        p.tell_at(&reading, t0);
        p.tell_at(&sending(0, 10), t0 + Duration::from_millis(1));
        assert_eq!(current(&paths).unwrap().progress.stage, Stage::Sending);
        p.tell_at(&sending(1, 10), t0 + Duration::from_millis(100));
        assert_eq!(current(&paths).unwrap().progress.done, 0, "too soon");
        p.tell_at(&sending(2, 10), t0 + Duration::from_millis(300));
        assert_eq!(current(&paths).unwrap().progress.done, 2);
    }

    #[test]
    fn lines_say_how_far_in_peoples_numbers() {
        assert_eq!(
            line(&sending(1200, 3400)),
            "Backfilling 1\u{a0}200 / 3\u{a0}400 sessions"
        );
        assert_eq!(
            line(&Progress::new(
                Work::Backfill,
                Stage::Reading,
                3,
                11,
                "codex"
            )),
            "Backfilling: reading the harnesses' files (3 / 11)"
        );
        let titles = Progress::new(Work::Titles, Stage::Sending, 40, 120, "claude-code");
        assert_eq!(
            line(&titles),
            "Remote titles: asking about 40 / 120 sessions"
        );
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1_000_000), "1\u{a0}000\u{a0}000");
        assert_eq!(sending(1, 3).percent(), Some(33));
        assert_eq!(sending(0, 0).percent(), Some(100));
        assert!(sending(3, 3).is_last() && !sending(2, 3).is_last());
    }

    #[test]
    fn the_file_is_the_progress_with_its_writer() {
        let filed = Filed {
            progress: sending(5, 9),
            pid: 42,
            started_at: "a".into(),
            updated_at: "b".into(),
        };
        assert_eq!(
            serde_json::to_value(&filed).unwrap(),
            serde_json::json!({"what": "backfill", "stage": "sending", "done": 5, "total": 9,
                "harness": "claude-code", "pid": 42, "started_at": "a", "updated_at": "b"})
        );
    }
}
