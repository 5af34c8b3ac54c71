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
    /// Another format's own parser refused it (TOML).
    #[error("not valid {format} ({what})")]
    NotValid { format: &'static str, what: String },
    /// Valid, but where our entries go holds something else (`"hooks" is not an
    /// object`).
    #[error("{0}")]
    Shape(String),
    #[error("not UTF-8 text")]
    NotUtf8,
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
