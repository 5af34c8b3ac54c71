//! The spool folder: job files the hook wrote and the daemon has not taken yet.
//!
//! Owns listing in arrival order, removing a committed job, quarantining a job
//! that cannot be read (with its reason beside it, kept for a while, never
//! retried), and sweeping temp files a killed hook left behind. It never reads a
//! payload's meaning.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// At most this many quarantined jobs are kept; older ones go first.
const QUARANTINE_KEEP: usize = 500;
/// A hook's temp file older than this belongs to a hook that was killed.
const STALE_TMP: Duration = Duration::from_secs(600);

pub struct Spool {
    dir: PathBuf,
    quarantine: PathBuf,
}

impl Spool {
    pub fn new(dir: PathBuf, quarantine: PathBuf) -> Spool {
        Spool { dir, quarantine }
    }

    /// The spool of a state dir.
    pub fn of(paths: &crate::StatePaths) -> Spool {
        Spool::new(paths.spool(), paths.quarantine())
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Up to `limit` job file names, oldest first (names sort by arrival time).
    pub fn pending(&self, limit: usize) -> io::Result<Vec<String>> {
        let mut names: Vec<String> = match fs::read_dir(&self.dir) {
            Ok(rd) => rd
                .flatten()
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|n| n.ends_with(".job") && !n.starts_with('.'))
                .collect(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(vec![]),
            Err(e) => return Err(e),
        };
        names.sort_unstable();
        names.truncate(limit);
        Ok(names)
    }

    /// How many jobs wait, and how many are quarantined.
    pub fn counts(&self) -> (usize, usize) {
        let count = |d: &Path, pred: &dyn Fn(&str) -> bool| {
            fs::read_dir(d)
                .map(|rd| {
                    rd.flatten()
                        .filter(|e| e.file_name().to_str().is_some_and(pred))
                        .count()
                })
                .unwrap_or(0)
        };
        (
            count(&self.dir, &|n| n.ends_with(".job") && !n.starts_with('.')),
            count(&self.quarantine, &|n| n.ends_with(".job")),
        )
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Removes a committed job. A job already gone is fine.
    pub fn remove(&self, name: &str) -> io::Result<()> {
        match fs::remove_file(self.path(name)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    /// Moves a committed job into `dir` instead of removing it (the job archive).
    pub fn archive(&self, name: &str, dir: &Path) -> io::Result<()> {
        crate::files::create_private_dir(dir)?;
        match fs::rename(self.path(name), dir.join(name)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    /// Moves a job into the quarantine with a `.reason` file beside it.
    pub fn quarantine(&self, name: &str, reason: &str) -> io::Result<()> {
        crate::files::create_private_dir(&self.quarantine)?;
        let stem = name.trim_end_matches(".job");
        fs::write(
            self.quarantine.join(format!("{stem}.reason")),
            format!("{reason}\n"),
        )?;
        match fs::rename(self.path(name), self.quarantine.join(name)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        self.trim_quarantine();
        Ok(())
    }

    fn trim_quarantine(&self) {
        let Ok(rd) = fs::read_dir(&self.quarantine) else {
            return;
        };
        let mut jobs: Vec<String> = rd
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| n.ends_with(".job"))
            .collect();
        if jobs.len() <= QUARANTINE_KEEP {
            return;
        }
        jobs.sort_unstable();
        for old in &jobs[..jobs.len() - QUARANTINE_KEEP] {
            let _ = fs::remove_file(self.quarantine.join(old));
            let stem = old.trim_end_matches(".job");
            let _ = fs::remove_file(self.quarantine.join(format!("{stem}.reason")));
        }
    }

    /// Removes temp files of hooks that were killed mid-write.
    pub fn sweep_stale_temps(&self) {
        let Ok(rd) = fs::read_dir(&self.dir) else {
            return;
        };
        let now = SystemTime::now();
        for e in rd.flatten() {
            let is_tmp = e
                .file_name()
                .to_str()
                .is_some_and(|n| n.starts_with(".tmp-"));
            let old = e
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| now.duration_since(t).ok())
                .is_some_and(|age| age > STALE_TMP);
            if is_tmp && old {
                let _ = fs::remove_file(e.path());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_in_name_order_and_skips_temps_and_others() {
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::new(dir.path().into(), dir.path().join("quarantine"));
        for n in ["002-x.job", "001-y.job", ".tmp-000-z.job", "notes.txt"] {
            fs::write(dir.path().join(n), b"").unwrap();
        }
        assert_eq!(spool.pending(10).unwrap(), ["001-y.job", "002-x.job"]);
        assert_eq!(spool.pending(1).unwrap(), ["001-y.job"]);
        spool.quarantine("001-y.job", "bad").unwrap();
        assert_eq!(spool.counts(), (1, 1));
        let reason = fs::read_to_string(dir.path().join("quarantine/001-y.reason")).unwrap();
        assert_eq!(reason, "bad\n");
        spool.remove("002-x.job").unwrap();
        spool.remove("002-x.job").unwrap();
        assert_eq!(spool.counts(), (0, 1));
    }
}
