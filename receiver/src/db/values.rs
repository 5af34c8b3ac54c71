//! What a statement takes and gives back, the same on both databases:
//! typed arguments (`args!`), rows of cells read by column, and why the
//! database failed.
//!
//! This module owns those types. It must not run a statement.

/// Why the database failed: the words say which part, never a password.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("postgres: {0}")]
    Postgres(#[from] sqlx::Error),
    #[error("the database's schema is at step {found}, newer than this receiver's {known}")]
    Newer { found: i64, known: i64 },
    #[error("column {column}: expected {expected}")]
    Type {
        column: usize,
        expected: &'static str,
    },
    #[error("a stored {what} is not valid")]
    Corrupt { what: &'static str },
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("database URL: {0}")]
    Url(String),
    #[error("the database's threads are gone (the receiver is stopping)")]
    Closed,
    #[error("a transaction waited on something other than its own statements")]
    Stalled,
}

/// One statement argument, typed so that a NULL still tells PostgreSQL its type.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    Int(i64),
    Text(String),
    Bytes(Vec<u8>),
    NullInt,
    NullText,
    NullBytes,
}

impl From<i64> for Arg {
    fn from(v: i64) -> Arg {
        Arg::Int(v)
    }
}
impl From<u64> for Arg {
    fn from(v: u64) -> Arg {
        Arg::Int(i64::try_from(v).unwrap_or(i64::MAX))
    }
}
impl From<usize> for Arg {
    fn from(v: usize) -> Arg {
        Arg::Int(i64::try_from(v).unwrap_or(i64::MAX))
    }
}
impl From<bool> for Arg {
    fn from(v: bool) -> Arg {
        Arg::Int(i64::from(v))
    }
}
impl From<&str> for Arg {
    fn from(v: &str) -> Arg {
        Arg::Text(v.to_string())
    }
}
impl From<String> for Arg {
    fn from(v: String) -> Arg {
        Arg::Text(v)
    }
}
impl From<&String> for Arg {
    fn from(v: &String) -> Arg {
        Arg::Text(v.clone())
    }
}
impl From<Vec<u8>> for Arg {
    fn from(v: Vec<u8>) -> Arg {
        Arg::Bytes(v)
    }
}
impl From<&[u8]> for Arg {
    fn from(v: &[u8]) -> Arg {
        Arg::Bytes(v.to_vec())
    }
}
impl From<Option<i64>> for Arg {
    fn from(v: Option<i64>) -> Arg {
        v.map_or(Arg::NullInt, Arg::Int)
    }
}
impl From<Option<&str>> for Arg {
    fn from(v: Option<&str>) -> Arg {
        v.map_or(Arg::NullText, Arg::from)
    }
}
impl From<Option<String>> for Arg {
    fn from(v: Option<String>) -> Arg {
        v.map_or(Arg::NullText, Arg::Text)
    }
}
impl From<Option<Vec<u8>>> for Arg {
    fn from(v: Option<Vec<u8>>) -> Arg {
        v.map_or(Arg::NullBytes, Arg::Bytes)
    }
}

/// The arguments of one statement: `args![a, b]`.
#[macro_export]
#[doc(hidden)]
macro_rules! args {
    ($($a:expr),* $(,)?) => { vec![$($crate::db::values::Arg::from($a)),*] };
}
pub(crate) use args;

/// One value read back.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    Int(i64),
    Text(String),
    Bytes(Vec<u8>),
    Null,
}

/// One row read back, its cells in the statement's column order.
#[derive(Clone, Debug, PartialEq)]
pub struct Row(pub(crate) Vec<Cell>);

impl Row {
    fn cell(&self, i: usize) -> &Cell {
        self.0.get(i).unwrap_or(&Cell::Null)
    }

    pub fn int(&self, i: usize) -> Result<i64, DbError> {
        self.opt_int(i)?.ok_or(DbError::Type {
            column: i,
            expected: "an integer",
        })
    }

    pub fn opt_int(&self, i: usize) -> Result<Option<i64>, DbError> {
        match self.cell(i) {
            Cell::Int(v) => Ok(Some(*v)),
            Cell::Null => Ok(None),
            _ => Err(DbError::Type {
                column: i,
                expected: "an integer",
            }),
        }
    }

    pub fn flag(&self, i: usize) -> Result<bool, DbError> {
        Ok(self.int(i)? != 0)
    }

    pub fn text(&self, i: usize) -> Result<String, DbError> {
        self.opt_text(i)?.ok_or(DbError::Type {
            column: i,
            expected: "text",
        })
    }

    pub fn opt_text(&self, i: usize) -> Result<Option<String>, DbError> {
        match self.cell(i) {
            Cell::Text(v) => Ok(Some(v.clone())),
            Cell::Null => Ok(None),
            _ => Err(DbError::Type {
                column: i,
                expected: "text",
            }),
        }
    }

    pub fn bytes(&self, i: usize) -> Result<Vec<u8>, DbError> {
        self.opt_bytes(i)?.ok_or(DbError::Type {
            column: i,
            expected: "bytes",
        })
    }

    pub fn opt_bytes(&self, i: usize) -> Result<Option<Vec<u8>>, DbError> {
        match self.cell(i) {
            Cell::Bytes(v) => Ok(Some(v.clone())),
            Cell::Null => Ok(None),
            _ => Err(DbError::Type {
                column: i,
                expected: "bytes",
            }),
        }
    }
}
