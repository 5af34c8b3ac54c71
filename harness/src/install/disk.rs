//! A config path on disk, as the installer reads and writes it: the person's file,
//! symlinks and read-only files included.
//!
//! A symlink (a dotfiles manager's) is followed to the file at the end of its
//! chain, and that file is what gets written: a temp file in its folder renamed
//! over it, its permissions kept (`write_atomic`), so the link stays a link naming
//! what it named and the person's repository stays the source. A link that names
//! nothing, and a file without its owner's write bit, are refused with the reason.
//! Which bytes to write, and when a file goes, is `mod.rs`'s business; this file
//! owns only where they go. The ledger keys on the path the person has (the
//! link), never on where it leads: that is the path the installer is handed.

use super::format::Skip;
use spool::files::write_atomic;
use std::io;
use std::path::{Path, PathBuf};

/// Links followed before giving up (Linux's own limit).
const MAX_LINKS: usize = 40;

/// What is at a config path.
#[derive(Debug)]
pub struct OnDisk {
    /// Where the bytes live: the path itself, or the end of its chain of links.
    real: PathBuf,
    /// The path is a symlink: never replaced, never removed.
    linked: bool,
    /// The file's text; `None` when nothing is there (no file and no link).
    pub text: Option<String>,
    /// The permission bits of a file its owner may not write.
    read_only: Option<u32>,
}

/// Reads what is at `path`, following links. A dangling link, a loop of links,
/// a file that is not UTF-8 or cannot be read is refused.
pub fn read(path: &Path) -> Result<OnDisk, Skip> {
    let (real, linked) = match resolve(path)? {
        Some(real) => (real, true),
        None => (path.to_path_buf(), false),
    };
    let bytes = match std::fs::read(&real) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound && !linked => {
            return Ok(OnDisk {
                real,
                linked,
                text: None,
                read_only: None,
            });
        }
        Err(e) => return Err(Skip::Unreadable(e.to_string())),
    };
    let text = String::from_utf8(bytes).map_err(|_| Skip::NotUtf8)?;
    let meta = std::fs::metadata(&real).map_err(|e| Skip::Unreadable(e.to_string()))?;
    Ok(OnDisk {
        real,
        linked,
        text: Some(text),
        read_only: read_only(&meta),
    })
}

/// The file at the end of `path`'s chain of links; `None` when `path` is no link.
fn resolve(path: &Path) -> Result<Option<PathBuf>, Skip> {
    let mut at = path.to_path_buf();
    for hop in 0..=MAX_LINKS {
        let meta = match std::fs::symlink_metadata(&at) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound && hop > 0 => {
                return Err(Skip::DanglingLink(at.display().to_string()));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Skip::Unreadable(e.to_string())),
        };
        if !meta.file_type().is_symlink() {
            return Ok((hop > 0).then_some(at));
        }
        let to = std::fs::read_link(&at).map_err(|e| Skip::Unreadable(e.to_string()))?;
        // A relative target is relative to the folder the link is in.
        at = match at.parent() {
            Some(dir) if to.is_relative() => dir.join(to),
            _ => to,
        };
    }
    Err(Skip::Unreadable(format!(
        "more than {MAX_LINKS} symlinks in a row (a loop?)"
    )))
}

/// The permission bits when the owner may not write the file. The bits, not a
/// try at opening it: root opens any file for writing, and the person who made
/// it read-only meant it all the same.
#[cfg(unix)]
fn read_only(meta: &std::fs::Metadata) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt;
    let mode = meta.permissions().mode() & 0o7777;
    (mode & 0o200 == 0).then_some(mode)
}

/// Windows has one read-only attribute: reported as the mode it amounts to.
#[cfg(not(unix))]
fn read_only(meta: &std::fs::Metadata) -> Option<u32> {
    meta.permissions().readonly().then_some(0o444)
}

impl OnDisk {
    /// `Err` when the person made the file read-only: it is theirs to unlock.
    pub fn writable(&self) -> Result<(), Skip> {
        match self.read_only {
            Some(mode) => Err(Skip::ReadOnly { mode }),
            None => Ok(()),
        }
    }

    /// Writes `text` where the bytes live (through the link), creating the
    /// folder of a new file.
    pub fn write(&self, text: &str) -> Result<(), Skip> {
        self.writable()?;
        if self.text.is_none()
            && let Some(dir) = self.real.parent()
        {
            std::fs::create_dir_all(dir)
                .map_err(|e| Skip::NoFolder(format!("{}: {e}", dir.display())))?;
        }
        write_atomic(&self.real, text.as_bytes()).map_err(|e| Skip::Unwritable(e.to_string()))
    }

    /// Removes a file sessionpipe created, now that nothing of the person's is in
    /// it. Through a link nothing is removed: the link is the person's (they
    /// linked our file into their dotfiles, or linked it there themselves), and
    /// so is the file it names, which a dotfiles repository would lose or a
    /// dangling link would break on. That file gets `instead` (the text without
    /// our entries), so the harness reads nothing of ours and the link still works.
    pub fn remove_or_write(&self, instead: &str) -> Result<(), Skip> {
        if self.linked {
            return self.write(instead);
        }
        self.writable()?;
        std::fs::remove_file(&self.real).map_err(|e| Skip::Unwritable(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    #[cfg(unix)]
    use {super::*, std::os::unix::fs::PermissionsExt, std::os::unix::fs::symlink};

    #[cfg(unix)]
    #[test]
    fn a_chain_of_links_is_followed_and_written_at_its_end() {
        let tmp = tempfile::tempdir().unwrap();
        let dots = tmp.path().join("dots");
        std::fs::create_dir_all(&dots).unwrap();
        std::fs::write(dots.join("real.json"), "{}").unwrap();
        std::fs::set_permissions(
            dots.join("real.json"),
            std::fs::Permissions::from_mode(0o640),
        )
        .unwrap();
        // settings.json -> mid.json (absolute) -> dots/real.json (relative).
        symlink("dots/real.json", tmp.path().join("mid.json")).unwrap();
        let link = tmp.path().join("settings.json");
        symlink(tmp.path().join("mid.json"), &link).unwrap();

        let disk = read(&link).unwrap();
        assert_eq!(disk.text.as_deref(), Some("{}"));
        disk.write("{\"a\": 1}").unwrap();
        assert!(link.symlink_metadata().unwrap().file_type().is_symlink());
        assert_eq!(
            std::fs::read_link(&link).unwrap(),
            tmp.path().join("mid.json")
        );
        let real = dots.join("real.json");
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "{\"a\": 1}");
        assert_eq!(real.metadata().unwrap().permissions().mode() & 0o777, 0o640);
        let left: Vec<_> = std::fs::read_dir(&dots).unwrap().flatten().collect();
        assert_eq!(left.len(), 1, "no temp file left behind");

        read(&link).unwrap().remove_or_write("{}").unwrap();
        assert!(link.symlink_metadata().unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "{}");
    }

    #[cfg(unix)]
    #[test]
    fn dangling_links_loops_and_read_only_files_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let link = tmp.path().join("settings.json");
        symlink(tmp.path().join("gone/settings.json"), &link).unwrap();
        let err = read(&link).unwrap_err();
        assert!(matches!(err, Skip::DanglingLink(_)), "{err}");
        assert!(err.to_string().contains("gone/settings.json"), "{err}");

        let a = tmp.path().join("a");
        let b = tmp.path().join("b");
        symlink(&b, &a).unwrap();
        symlink(&a, &b).unwrap();
        assert!(matches!(read(&a), Err(Skip::Unreadable(_))));

        let file = tmp.path().join("ro.json");
        std::fs::write(&file, "{}").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o444)).unwrap();
        let disk = read(&file).unwrap();
        let err = disk.writable().unwrap_err();
        assert_eq!(err, Skip::ReadOnly { mode: 0o444 });
        assert!(
            err.to_string().starts_with("read-only (mode 0444)"),
            "{err}"
        );
        assert!(disk.write("{\"a\": 1}").is_err());
        assert!(disk.remove_or_write("").is_err());
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "{}");

        let absent = read(&tmp.path().join("new/x.json")).unwrap();
        assert_eq!(absent.text, None);
        absent.write("{}").unwrap();
        assert!(tmp.path().join("new/x.json").is_file());
    }
}
