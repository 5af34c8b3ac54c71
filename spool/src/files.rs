//! Writing files whole and private: folders only this user can enter (0700),
//! files only this user can read (0600), and replacing a file through a temp file
//! and a rename, so a reader sees the old bytes or the new, never half.
//!
//! Mechanics only: what goes into a file, and whether a given file may be
//! written at all, is the caller's business.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

/// `mkdir -p` with mode 0700 on the folders it creates.
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// Creates a new file (failing if one exists) that only this user may read.
pub fn create_private_file(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

/// Opens (creating it 0600 if missing, never truncating) a file that is there
/// to be locked: the daemon's lock, a worker's, the worktrees record's.
pub fn open_lock_file(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

/// Writes `bytes` to `path` through a temp file in the same folder and a rename,
/// keeping the existing file's permissions (a new file gets the umask's).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    replace(path, bytes, false)
}

/// Writes a file only this user may read (0600 on Unix), atomically, creating
/// its private parent folder: where a token or an address lives. The bytes are
/// never readable by others, not even for a moment in the temp file.
pub fn write_private_file(path: &Path, bytes: &[u8]) -> io::Result<()> {
    if let Some(dir) = path.parent() {
        create_private_dir(dir)?;
    }
    replace(path, bytes, true)
}

fn replace(path: &Path, bytes: &[u8], private: bool) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.sessionpipe-{}", std::process::id()));
    let result = (|| {
        let mut options = OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            // 0600 from the start; a kept mode is set before any byte is written.
            options.mode(if private { 0o600 } else { 0o666 });
        }
        let mut f = options.open(&tmp)?;
        if private {
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                f.set_permissions(fs::Permissions::from_mode(0o600))?;
            }
        } else if let Ok(meta) = fs::metadata(path) {
            f.set_permissions(meta.permissions())?;
        }
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// The files and folders under `root` (itself included) that others may read,
/// enter or write, with the mode each had; with `fix`, each is made this user's
/// alone (folders 0700, everything else 0600) as it is found. Links are not
/// followed (a link's own mode means nothing) and what cannot be changed is
/// still reported.
/// Windows has no mode bits: nothing is reported there.
pub fn not_private(root: &Path, fix: bool) -> Vec<(std::path::PathBuf, u32)> {
    #[cfg(unix)]
    {
        let mut found = Vec::new();
        use std::os::unix::fs::PermissionsExt;
        let mut stack = vec![root.to_path_buf()];
        while let Some(path) = stack.pop() {
            let Ok(meta) = fs::symlink_metadata(&path) else {
                continue;
            };
            if meta.file_type().is_symlink() {
                continue;
            }
            let want = if meta.is_dir() { 0o700 } else { 0o600 };
            let mode = meta.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                if fix {
                    let _ = fs::set_permissions(&path, fs::Permissions::from_mode(want));
                }
                found.push((path.clone(), mode));
            }
            if meta.is_dir()
                && let Ok(rd) = fs::read_dir(&path)
            {
                stack.extend(rd.flatten().map(|e| e.path()));
            }
        }
        found
    }
    #[cfg(not(unix))]
    {
        let _ = (root, fix);
        Vec::new()
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_tree_others_could_read_is_found_and_made_private() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("state");
        fs::create_dir_all(root.join("spool")).unwrap();
        fs::write(root.join("config.json"), "{}").unwrap();
        fs::write(root.join("spool/1.job"), "x").unwrap();
        for (p, m) in [
            ("", 0o755),
            ("spool", 0o775),
            ("config.json", 0o644),
            ("spool/1.job", 0o600),
        ] {
            fs::set_permissions(root.join(p), fs::Permissions::from_mode(m)).unwrap();
        }
        std::os::unix::fs::symlink("/etc/passwd", root.join("link")).unwrap();
        let mut found = not_private(&root, false);
        found.sort();
        assert_eq!(found.len(), 3, "{found:?}");
        assert_eq!(mode(&root), 0o755, "looking changes nothing");
        assert_eq!(not_private(&root, true).len(), 3);
        assert!(not_private(&root, false).is_empty());
        assert_eq!(mode(&root), 0o700);
        assert_eq!(mode(&root.join("spool")), 0o700);
        assert_eq!(mode(&root.join("config.json")), 0o600);
        assert_eq!(
            mode(Path::new("/etc/passwd")) & 0o004,
            0o004,
            "a link is not followed"
        );
    }

    #[test]
    fn private_files_and_folders_are_this_users_alone() {
        let dir = tempfile::tempdir().unwrap();
        let nested = dir.path().join("a/b");
        create_private_dir(&nested).unwrap();
        assert_eq!(mode(&nested), 0o700);
        let f = nested.join("token.json");
        write_private_file(&f, b"{}").unwrap();
        assert_eq!(mode(&f), 0o600);
        assert!(create_private_file(&f).is_err(), "an existing file is kept");
    }

    #[test]
    fn an_atomic_write_keeps_the_files_mode_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("settings.json");
        fs::write(&f, "old").unwrap();
        fs::set_permissions(&f, fs::Permissions::from_mode(0o640)).unwrap();
        write_atomic(&f, b"new").unwrap();
        assert_eq!(fs::read_to_string(&f).unwrap(), "new");
        assert_eq!(mode(&f), 0o640);
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
