//! The spool folder: job files the hook wrote and the daemon has not taken yet.
//!
//! Owns listing in arrival order, removing a committed job, quarantining a job
//! that cannot be read (with its reason beside it, bounded in count and bytes,
//! never retried), and sweeping temp files a killed hook left behind. It never
//! reads a payload's meaning: what a quarantined copy may keep is the caller's
//! to say (the daemon runs `secrets@1` over it).

use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The quarantine keeps at most this many jobs and this many bytes of them, the
/// newest; a job is kept cut to its first `QUARANTINE_JOB_BYTES` (enough to see
/// what shape broke; a hook's payload may be 64 MiB). Worst case on disk: 64 MiB.
pub const QUARANTINE_KEEP_JOBS: usize = 200;
pub const QUARANTINE_KEEP_BYTES: u64 = 64 << 20;
pub const QUARANTINE_JOB_BYTES: u64 = 4 << 20;
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

    /// How many jobs wait.
    pub fn waiting(&self) -> usize {
        fs::read_dir(&self.dir)
            .map(|rd| {
                rd.flatten()
                    .filter(|e| {
                        e.file_name()
                            .to_str()
                            .is_some_and(|n| n.ends_with(".job") && !n.starts_with('.'))
                    })
                    .count()
            })
            .unwrap_or(0)
    }

    /// What the quarantine holds.
    pub fn quarantined(&self) -> Quarantined {
        let jobs = quarantined_jobs(&self.quarantine);
        Quarantined {
            jobs: jobs.len(),
            bytes: jobs.iter().map(|(_, len)| len).sum(),
        }
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

    /// Moves a job into the quarantine: its first `QUARANTINE_JOB_BYTES` as
    /// `keep` leaves them, with a `.reason` file beside it, both 0600; then
    /// prunes the oldest past the bounds. A job already gone keeps its reason.
    pub fn quarantine(
        &self,
        name: &str,
        reason: &str,
        keep: &dyn Fn(Vec<u8>) -> Vec<u8>,
    ) -> io::Result<()> {
        crate::files::create_private_dir(&self.quarantine)?;
        let stem = name.trim_end_matches(".job");
        let mut reason = reason.to_string();
        match fs::File::open(self.path(name)) {
            Ok(f) => {
                let whole = f.metadata().map(|m| m.len()).unwrap_or(0);
                let mut head = Vec::new();
                f.take(QUARANTINE_JOB_BYTES).read_to_end(&mut head)?;
                if whole > QUARANTINE_JOB_BYTES {
                    reason.push_str(&format!(
                        " (kept its first {QUARANTINE_JOB_BYTES} of {whole} bytes)"
                    ));
                }
                crate::files::write_private_file(&self.quarantine.join(name), &keep(head))?;
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        crate::files::write_private_file(
            &self.quarantine.join(format!("{stem}.reason")),
            format!("{reason}\n").as_bytes(),
        )?;
        self.remove(name)?;
        self.trim_quarantine();
        Ok(())
    }

    /// Drops the oldest quarantined jobs (names sort by arrival) until both
    /// bounds hold, and reasons whose job is gone.
    fn trim_quarantine(&self) {
        let jobs = quarantined_jobs(&self.quarantine);
        let mut count = jobs.len();
        let mut bytes: u64 = jobs.iter().map(|(_, len)| len).sum();
        for (old, len) in &jobs {
            if count <= QUARANTINE_KEEP_JOBS && bytes <= QUARANTINE_KEEP_BYTES {
                break;
            }
            let _ = fs::remove_file(self.quarantine.join(old));
            let stem = old.trim_end_matches(".job");
            let _ = fs::remove_file(self.quarantine.join(format!("{stem}.reason")));
            count -= 1;
            bytes -= len;
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

/// What the quarantine holds: jobs and their bytes on disk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Quarantined {
    pub jobs: usize,
    pub bytes: u64,
}

/// The quarantined jobs with their sizes, oldest first.
fn quarantined_jobs(dir: &Path) -> Vec<(String, u64)> {
    let Ok(rd) = fs::read_dir(dir) else {
        return vec![];
    };
    let mut jobs: Vec<(String, u64)> = rd
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let len = e.metadata().ok()?.len();
            (name.ends_with(".job") && !name.starts_with('.')).then_some((name, len))
        })
        .collect();
    jobs.sort_unstable();
    jobs
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
        spool.quarantine("001-y.job", "bad", &|b| b).unwrap();
        assert_eq!(spool.waiting(), 1);
        assert_eq!(spool.quarantined(), Quarantined { jobs: 1, bytes: 0 });
        let reason = fs::read_to_string(dir.path().join("quarantine/001-y.reason")).unwrap();
        assert_eq!(reason, "bad\n");
        spool.remove("002-x.job").unwrap();
        spool.remove("002-x.job").unwrap();
        assert_eq!(spool.waiting(), 0);
    }

    #[cfg(unix)]
    #[test]
    fn the_quarantine_is_private_bounded_in_bytes_and_count_and_keeps_the_newest() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::new(dir.path().into(), dir.path().join("quarantine"));
        // Jobs of 5 MiB: each is kept cut to 4 MiB, so 16 fit in 64 MiB.
        let big = vec![b'x'; 5 << 20];
        for i in 0..20 {
            let name = format!("{i:03}-big.job");
            fs::write(dir.path().join(&name), &big).unwrap();
            spool
                .quarantine(&name, "unreadable", &|mut b| {
                    b.truncate(b.len() - 1);
                    b.push(b'!');
                    b
                })
                .unwrap();
        }
        let q = spool.quarantined();
        assert_eq!(q.jobs, 16, "{q:?}");
        assert_eq!(q.bytes, 16 * QUARANTINE_JOB_BYTES);
        let qdir = dir.path().join("quarantine");
        assert!(!qdir.join("003-big.job").exists(), "the oldest went first");
        assert!(!qdir.join("003-big.reason").exists());
        let kept = fs::read(qdir.join("019-big.job")).unwrap();
        assert_eq!(kept.len() as u64, QUARANTINE_JOB_BYTES);
        assert_eq!(kept.last(), Some(&b'!'), "kept as the caller left it");
        let reason = fs::read_to_string(qdir.join("019-big.reason")).unwrap();
        assert!(
            reason.contains("first 4194304 of 5242880 bytes"),
            "{reason}"
        );
        for f in ["019-big.job", "019-big.reason"] {
            let mode = fs::metadata(qdir.join(f)).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "{f}");
        }
        assert_eq!(spool.waiting(), 0);
        // Small jobs: the count bound.
        for i in 100..(101 + QUARANTINE_KEEP_JOBS) {
            let name = format!("{i:03}-small.job");
            fs::write(dir.path().join(&name), b"{}").unwrap();
            spool.quarantine(&name, "bad", &|b| b).unwrap();
        }
        assert_eq!(spool.quarantined().jobs, QUARANTINE_KEEP_JOBS);
    }
}
