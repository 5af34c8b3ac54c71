//! Where sessionpipe keeps its state, what each file in it is called, and how a
//! path is written for a person (`~` for the home).
//!
//! One rule for the state directory, read by the hook and the daemon alike:
//! `$SESSIONPIPE_STATE_DIR`, else the platform's state dir. Must not create
//! anything: `StatePaths::ensure` and `files` do, when asked.

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

/// Neither `SESSIONPIPE_STATE_DIR` nor a home says where the state dir is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoStateDir;

impl std::fmt::Display for NoStateDir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("no state directory: set HOME or SESSIONPIPE_STATE_DIR")
    }
}

impl std::error::Error for NoStateDir {}

/// The files and folders inside the state directory, each named once here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatePaths {
    pub root: PathBuf,
}

impl StatePaths {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        StatePaths { root: root.into() }
    }

    /// The state paths of this process's environment.
    pub fn from_env() -> Result<Self, NoStateDir> {
        state_dir().map(StatePaths::new).ok_or(NoStateDir)
    }

    /// Job files the hook wrote and the daemon has not taken yet.
    pub fn spool(&self) -> PathBuf {
        self.root.join("spool")
    }
    /// Jobs that could not be read, each with its reason.
    pub fn quarantine(&self) -> PathBuf {
        self.spool().join("quarantine")
    }
    pub fn outbox(&self) -> PathBuf {
        self.root.join("outbox.db")
    }
    /// The datagram socket the hook pokes.
    pub fn wake_socket(&self) -> PathBuf {
        self.root.join("wake.sock")
    }
    /// The stream socket a client that cannot send a datagram connects to
    /// instead (OpenCode's plugin): an accepted connection is a wake.
    pub fn wake_stream_socket(&self) -> PathBuf {
        self.root.join("wake-stream.sock")
    }
    /// Held exclusively by the one daemon (or drain worker) of this user.
    pub fn daemon_lock(&self) -> PathBuf {
        self.root.join("daemon.lock")
    }
    pub fn log_file(&self) -> PathBuf {
        self.root.join("daemon.log")
    }
    /// The installer's ledger of harness files it wrote.
    pub fn install_state(&self) -> PathBuf {
        self.root.join("install.json")
    }
    /// Originals of harness files, kept before our first write.
    pub fn backups(&self) -> PathBuf {
        self.root.join("backups")
    }
    /// The person's settings.
    pub fn config(&self) -> PathBuf {
        self.root.join("config.json")
    }
    pub fn sinks(&self) -> PathBuf {
        self.root.join("sinks.json")
    }
    /// Secrets, where no keychain takes them.
    pub fn secrets(&self) -> PathBuf {
        self.root.join("secrets.json")
    }
    /// The account pool: whether it is on, its listener's port, and the
    /// accounts added (no credential: those are in the secrets store).
    pub fn pool(&self) -> PathBuf {
        self.root.join("pool.json")
    }
    /// The pace of the accounts' limit windows (the daemon's `pace`).
    pub fn pace(&self) -> PathBuf {
        self.root.join("pace.json")
    }
    /// The running daemon's UI address and token.
    pub fn ui_file(&self) -> PathBuf {
        self.root.join("ui.json")
    }
    /// Says that `install` ran its one backfill.
    pub fn backfilled_marker(&self) -> PathBuf {
        self.root.join("backfilled")
    }
    /// When the first and the last hook call were lost (their modification
    /// times: `loss`).
    pub fn lost_first(&self) -> PathBuf {
        self.root.join("lost-first")
    }
    pub fn lost_last(&self) -> PathBuf {
        self.root.join("lost-last")
    }
    /// The daemon's control socket (a Unix stream socket, 0600): the Stop and
    /// permission hooks and `sessionpipe wait` ask it for verified messages.
    pub fn control_socket(&self) -> PathBuf {
        self.root.join("control.sock")
    }
    /// Present while control is paired or local approvals are on: the only
    /// thing the hook looks at before it asks the control socket, so a machine
    /// without either pays one failed `openat` on a Stop or a permission prompt.
    pub fn control_marker(&self) -> PathBuf {
        self.root.join("control.on")
    }
    /// The git worktrees control made for started sessions (`control
    /// worktrees on`), 0600: what `sessionpipe worktrees prune` may remove.
    pub fn worktrees(&self) -> PathBuf {
        self.root.join("worktrees.json")
    }
    /// The status line's memory, one file per config dir.
    pub fn status_line(&self) -> PathBuf {
        self.root.join("status-line")
    }

    /// Creates the state directory (0700) and the spool inside it.
    pub fn ensure(&self) -> std::io::Result<()> {
        crate::files::create_private_dir(&self.quarantine())
    }
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

/// `path` with a leading `~` (as `tilde` writes the home) made `home` again
/// (`~/x` → `/home/a/x`); as given otherwise, or with no home known.
pub fn untilde(path: &str, home: Option<&Path>) -> String {
    let rest = match path.strip_prefix('~') {
        Some(rest) if rest.is_empty() || rest.starts_with('/') || rest.starts_with('\\') => rest,
        _ => return path.to_string(),
    };
    match home.and_then(|h| h.to_str()) {
        Some(home) => format!("{}{rest}", home.trim_end_matches(['/', '\\'])),
        None => path.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::{tilde, untilde};
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

    #[test]
    fn tilde_is_made_home_again_only_as_tilde_writes_it() {
        let home = Some(Path::new("/home/ann/"));
        assert_eq!(untilde("~", home), "/home/ann");
        assert_eq!(untilde("~/src/x", home), "/home/ann/src/x");
        assert_eq!(untilde("~bob/x", home), "~bob/x");
        assert_eq!(untilde("/tmp", home), "/tmp");
        assert_eq!(untilde("~/x", None), "~/x");
        assert_eq!(
            untilde(&tilde("/home/ann/src", home), home),
            "/home/ann/src"
        );
    }
}
