//! What a config format is to the installer: the trait each format implements
//! (Claude-shaped hooks, Codex's TOML notify, Antigravity's hooks file...), what
//! it is handed, what it finds, and why it leaves a file alone.

use std::path::Path;

/// Why a config file is left exactly as it is: the reason `status`, `install` and
/// the UI show beside `skipped`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Skip {
    /// Comments, trailing commas or anything else a JSON parser refuses.
    #[error("not plain JSON (line {line}, column {column}: {what})")]
    NotPlainJson {
        line: usize,
        column: usize,
        what: String,
    },
    /// A key written twice in one object where our entries are read or written:
    /// the harness reads one of the two (JSON.parse, the last), our edit could
    /// land in the other.
    #[error("not plain JSON (duplicate key {key:?} on lines {first_line} and {line})")]
    DuplicateKey {
        key: String,
        first_line: usize,
        line: usize,
    },
    /// Another format's own parser refused it (TOML).
    #[error("not valid {format} ({what})")]
    NotValid { format: &'static str, what: String },
    /// Valid, but where our entries go holds something else (`"hooks" is not an
    /// object`).
    #[error("{0}")]
    Shape(String),
    #[error("not UTF-8 text")]
    NotUtf8,
    /// A symlink whose chain ends at nothing: no file is created at its end,
    /// which may be a dotfiles repository not checked out yet.
    #[error("a symlink to {0}, which does not exist: sessionpipe creates nothing there")]
    DanglingLink(String),
    /// The person took the owner's write bit away: theirs to give back.
    #[error("read-only (mode {mode:04o}): make it writable to let sessionpipe edit it")]
    ReadOnly { mode: u32 },
    #[error("cannot read it: {0}")]
    Unreadable(String),
    #[error("cannot write it: {0}")]
    Unwritable(String),
    #[error("cannot create {0}")]
    NoFolder(String),
}

/// What a format needs to know to find and write our entries.
pub struct Ctx<'a> {
    pub harness: &'a str,
    /// The hook binary our entries run (absolute).
    pub hook_bin: &'a Path,
}

/// What our entries look like in a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EntryState {
    Current,
    Missing,
    Outdated(String),
}

/// How our entries live in one kind of config file. Implementations edit text
/// (never re-serialise the person's file) and say why when they cannot.
pub trait ConfigFormat: Sync {
    /// Our entries in `text` (a file that exists and is not blank). `Err`: the
    /// file cannot be read as this format, and is skipped with that reason.
    fn judge(&self, text: &str, ctx: &Ctx<'_>) -> Result<EntryState, Skip>;
    /// `text` (empty for a new file) with our entries added; it holds none now.
    fn add(&self, text: &str, ctx: &Ctx<'_>) -> Result<String, Skip>;
    /// `text` without our entries. `original` is the file before our first
    /// write, so a container it had is kept even when our removal empties it.
    fn remove(&self, text: &str, original: Option<&str>, ctx: &Ctx<'_>) -> Result<String, Skip>;
    /// Why the harness would not run our entries even though they are current.
    fn inactive(&self, _text: &str) -> Option<String> {
        None
    }
    /// Why our entry must not be written into `text` though it is missing: the
    /// place it goes holds the person's own, which is kept (a `statusLine`).
    fn occupied(&self, _text: &str) -> Option<String> {
        None
    }
}
