//! Hook calls lost before they reached the spool (a full disk, an unwritable
//! state dir), kept visible without needing space: two marker files whose
//! modification times say when the first and the last loss happened. Setting a
//! file's time writes no new blocks, so it works on the disk that just refused
//! the job.
//!
//! The daemon makes the markers (while there is space) with the epoch's time,
//! which means "none"; the hook sets them when a job cannot be written; status,
//! doctor and the tray read them. Owns the markers' names and meaning only:
//! never says anything to the person itself.

use crate::StatePaths;
use std::fs::{File, FileTimes, OpenOptions};
use std::io;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// When hook calls were lost: the first loss not cleared, and the last.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Losses {
    pub first: SystemTime,
    pub last: SystemTime,
}

fn marked(file: &File) -> Option<SystemTime> {
    file.metadata()
        .and_then(|m| m.modified())
        .ok()
        .filter(|t| *t > UNIX_EPOCH)
}

fn open(path: &std::path::Path, create: bool) -> io::Result<File> {
    let mut o = OpenOptions::new();
    o.write(true).create(create);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    o.open(path)
}

fn set(file: &File, t: SystemTime) -> io::Result<()> {
    file.set_times(FileTimes::new().set_modified(t).set_accessed(t))
}

/// Makes the markers, as "none", where they are missing (the daemon's start).
pub fn prepare(paths: &StatePaths) -> io::Result<()> {
    for path in [paths.lost_first(), paths.lost_last()] {
        if !path.exists() {
            set(&open(&path, true)?, UNIX_EPOCH)?;
        }
    }
    Ok(())
}

/// Says a hook call was lost at `now` (the hook, on a failed write). Best
/// effort and quiet: markers the daemon never made are tried once, as new files.
pub fn record(paths: &StatePaths, now: SystemTime) {
    let made = !paths.lost_first().exists();
    let (Ok(first), Ok(last)) = (
        open(&paths.lost_first(), true),
        open(&paths.lost_last(), true),
    ) else {
        return;
    };
    // A marker made just now has the time of its making: set it all the same.
    if made || marked(&first).is_none() {
        let _ = set(&first, now);
    }
    let _ = set(&last, now);
}

/// The losses the markers hold, if any.
pub fn read(paths: &StatePaths) -> Option<Losses> {
    let time = |p: std::path::PathBuf| File::open(p).ok().as_ref().and_then(marked);
    let last = time(paths.lost_last())?;
    let first = time(paths.lost_first()).unwrap_or(last);
    Some(Losses { first, last })
}

/// Clears losses whose last is older than `keep` (the daemon, at its start): a
/// loss is told for a while, then forgotten.
pub fn clear_older_than(paths: &StatePaths, keep: Duration, now: SystemTime) {
    let Some(l) = read(paths) else { return };
    if now.duration_since(l.last).is_ok_and(|age| age > keep) {
        for path in [paths.lost_first(), paths.lost_last()] {
            if let Ok(f) = open(&path, false) {
                let _ = set(&f, UNIX_EPOCH);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn losses_are_kept_in_file_times_first_and_last() {
        let dir = tempfile::tempdir().unwrap();
        let paths = StatePaths::new(dir.path());
        assert_eq!(read(&paths), None);
        // Without the daemon's markers, the hook makes them.
        let t0 = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        record(&paths, t0);
        assert_eq!(
            read(&paths),
            Some(Losses {
                first: t0,
                last: t0
            })
        );
        clear_older_than(&paths, Duration::from_secs(1), SystemTime::now());
        assert_eq!(read(&paths), None);
        prepare(&paths).unwrap();
        assert_eq!(read(&paths), None, "made as none");
        let len = std::fs::metadata(paths.lost_last()).unwrap().len();
        let t1 = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let t2 = t1 + Duration::from_secs(60);
        record(&paths, t1);
        record(&paths, t2);
        assert_eq!(
            read(&paths),
            Some(Losses {
                first: t1,
                last: t2
            })
        );
        assert_eq!(
            std::fs::metadata(paths.lost_last()).unwrap().len(),
            len,
            "no byte written"
        );
        clear_older_than(
            &paths,
            Duration::from_secs(3600),
            t2 + Duration::from_secs(60),
        );
        assert!(read(&paths).is_some(), "recent: kept");
        clear_older_than(
            &paths,
            Duration::from_secs(3600),
            t2 + Duration::from_secs(7200),
        );
        assert_eq!(read(&paths), None);
    }
}
