//! The book's generated pages (`docs/src/reference/`, `docs/src/generated/`),
//! and the web pages' API types (`web-shared/src/generated/`, see
//! `typescript`): a test renders one from the code and hands it here, which compares it with
//! the committed file, or writes it when `SESSIONPIPE_WRITE_REFERENCE=1`.
//!
//! Owns that comparison and its message only; what a page says is the
//! caller's. A stale page fails with the command that regenerates it, so a
//! flag or a setting added without its reference cannot land unnoticed.

use std::path::{Path, PathBuf};

/// The variable that makes the reference tests write instead of compare.
pub const WRITE_VAR: &str = "SESSIONPIPE_WRITE_REFERENCE";

/// `docs/src/<relative>` of the repository, from a crate's manifest dir.
pub fn docs_path(manifest_dir: &str, relative: &str) -> PathBuf {
    Path::new(manifest_dir)
        .join("..")
        .join("docs")
        .join("src")
        .join(relative)
}

/// Compares `generated` with the committed file at `path`, or writes it when
/// `SESSIONPIPE_WRITE_REFERENCE=1`. `regenerate` is the command to name.
///
/// # Panics
///
/// When the file differs from `generated` (or is missing) and the variable
/// is not set; when writing fails.
pub fn check_or_write(path: &Path, generated: &str, regenerate: &str) {
    if std::env::var(WRITE_VAR).as_deref() == Ok("1") {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("the docs folder can be made");
        }
        std::fs::write(path, generated).expect("the reference page can be written");
        return;
    }
    // A checkout with CRLF line ends (Git's default on Windows) holds the
    // same text.
    let committed = std::fs::read_to_string(path)
        .unwrap_or_default()
        .replace("\r\n", "\n");
    if committed == generated {
        return;
    }
    let first = committed
        .lines()
        .zip(generated.lines())
        .position(|(a, b)| a != b)
        .unwrap_or_else(|| committed.lines().count().min(generated.lines().count()));
    let line = |text: &str| {
        text.lines()
            .nth(first)
            .unwrap_or("(end of file)")
            .to_string()
    };
    panic!(
        "{} is not what the code says now (first difference at line {}):\n  committed: {}\n  generated: {}\n\
         Regenerate it and commit the result:\n  {WRITE_VAR}=1 {regenerate}",
        path.display(),
        first + 1,
        line(&committed),
        line(generated),
    );
}
