//! What fails in the outbox: SQLite, or a file written by a newer sessionpipe.

/// Why the outbox could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum OutboxError {
    #[error("the outbox: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// A newer sessionpipe wrote it: this one would misread it, so it stops.
    #[error("the outbox has schema {found}, newer than the {known} this sessionpipe knows")]
    Newer { found: i64, known: i64 },
}

pub type Result<T> = std::result::Result<T, OutboxError>;
