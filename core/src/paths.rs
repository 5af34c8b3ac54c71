//! Where sessionpipe keeps its state, and how paths are written in events.
//!
//! One rule for the state directory, shared with the hook binary (which repeats it
//! in std-only code): `$SESSIONPIPE_STATE_DIR`, else the platform's state dir.

use std::path::{Path, PathBuf};

fn var(key: &str) -> Option<PathBuf> {
    std::env::var_os(key)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// The person's home directory, from `HOME` (`USERPROFILE` on Windows).
pub fn home_dir() -> Option<PathBuf> {
    if cfg!(windows) {
        var("USERPROFILE").or_else(|| var("HOME"))
    } else {
        var("HOME")
    }
}

/// The state directory: outbox, spool, sockets, configuration.
pub fn state_dir() -> Option<PathBuf> {
    if let Some(dir) = var("SESSIONPIPE_STATE_DIR") {
        return Some(dir);
    }
    if cfg!(windows) {
        return var("LOCALAPPDATA").map(|d| d.join("sessionpipe"));
    }
    let home = home_dir();
    if cfg!(target_os = "macos") {
        return home.map(|h| h.join("Library/Application Support/sessionpipe"));
    }
    if let Some(xdg) = var("XDG_STATE_HOME").filter(|p| p.is_absolute()) {
        return Some(xdg.join("sessionpipe"));
    }
    home.map(|h| h.join(".local/state/sessionpipe"))
}

/// The files and folders inside the state directory.
#[derive(Clone, Debug)]
pub struct StatePaths {
    pub root: PathBuf,
}

impl StatePaths {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        StatePaths { root: root.into() }
    }

    /// The state paths of this process's environment, or an error naming why not.
    pub fn from_env() -> Result<Self, String> {
        state_dir()
            .map(StatePaths::new)
            .ok_or_else(|| "no state directory: set HOME or SESSIONPIPE_STATE_DIR".to_string())
    }

    pub fn spool(&self) -> PathBuf {
        self.root.join("spool")
    }
    pub fn quarantine(&self) -> PathBuf {
        self.root.join("spool").join("quarantine")
    }
    pub fn outbox(&self) -> PathBuf {
        self.root.join("outbox.db")
    }
    pub fn wake_socket(&self) -> PathBuf {
        self.root.join("wake.sock")
    }
    pub fn daemon_lock(&self) -> PathBuf {
        self.root.join("daemon.lock")
    }
    pub fn log_file(&self) -> PathBuf {
        self.root.join("daemon.log")
    }
    pub fn install_state(&self) -> PathBuf {
        self.root.join("install.json")
    }
    pub fn backups(&self) -> PathBuf {
        self.root.join("backups")
    }

    /// Creates the state directory (0700) and the spool inside it.
    pub fn ensure(&self) -> std::io::Result<()> {
        create_private_dir(&self.quarantine())
    }
}

/// `mkdir -p` with mode 0700 on the folders it creates.
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// Writes a file only this user may read (0600 on Unix), atomically, creating
/// its private parent dir: where a token or an address lives.
pub fn write_private_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        create_private_dir(dir)?;
    }
    crate::install::write_atomic(path, bytes)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(())
}

/// Writes `path` with the home directory as `~` (`/home/a/x` → `~/x`).
pub fn tilde(path: &str, home: Option<&Path>) -> String {
    let Some(home) = home.and_then(|h| h.to_str()) else {
        return path.to_string();
    };
    let home = home.trim_end_matches(['/', '\\']);
    if home.is_empty() {
        return path.to_string();
    }
    match path.strip_prefix(home) {
        Some("") => "~".to_string(),
        Some(rest) if rest.starts_with('/') || rest.starts_with('\\') => format!("~{rest}"),
        _ => path.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::tilde;
    use std::path::Path;

    #[test]
    fn home_becomes_tilde_only_on_a_boundary() {
        let home = Some(Path::new("/home/ann/"));
        assert_eq!(tilde("/home/ann", home), "~");
        assert_eq!(tilde("/home/ann/src/x", home), "~/src/x");
        assert_eq!(tilde("/home/anna/src", home), "/home/anna/src");
        assert_eq!(tilde("/tmp", home), "/tmp");
        assert_eq!(tilde("/tmp", None), "/tmp");
    }
}
