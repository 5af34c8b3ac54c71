//! Where Antigravity keeps its files: its data folders under `~/.gemini`, a
//! conversation's transcript in one, and the folder a workspace path (a path,
//! or a `file://` URI) names.

use std::path::{Path, PathBuf};

/// Antigravity's data folders under `~/.gemini`: the app's, the CLI's (`agy`)
/// and the IDE's. Each keeps its own `brain/` and `antigravity_state.pbtxt`.
pub const DATA_DIRS: &[&str] = &["antigravity", "antigravity-cli", "antigravity-ide"];

/// The data folders, in `DATA_DIRS` order (whether they exist or not).
pub fn data_dirs(home: &Path) -> impl Iterator<Item = PathBuf> + '_ {
    DATA_DIRS.iter().map(move |d| home.join(".gemini").join(d))
}

/// Where a data folder keeps a conversation's transcript.
pub fn transcript_in(data_dir: &Path, conversation: &str) -> PathBuf {
    data_dir
        .join("brain")
        .join(conversation)
        .join(".system_generated/logs/transcript.jsonl")
}

/// A workspace path as a folder: a plain path as is, a `file://` URI decoded
/// (`file:///home/a%20b` → `/home/a b`, `file:///C:/x` → `C:/x`, a host other
/// than `localhost` → `//host/share`).
pub fn folder_of(path: &str) -> String {
    // `get`: byte 7 of a path that is not a URI may fall inside a character.
    let Some(rest) = path
        .get(..7)
        .filter(|scheme| scheme.eq_ignore_ascii_case("file://"))
        .map(|_| &path[7..])
    else {
        return path.to_string();
    };
    let (host, local) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let decoded = percent_decode(local);
    if !host.is_empty() && !host.eq_ignore_ascii_case("localhost") {
        return format!("//{}{decoded}", percent_decode(host));
    }
    let b = decoded.as_bytes();
    if b.len() >= 3 && b[0] == b'/' && b[1].is_ascii_alphabetic() && b[2] == b':' {
        return decoded[1..].to_string();
    }
    decoded
}

/// `%XX` escapes as bytes; the result read as UTF-8 (invalid bytes replaced).
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%'
            && let (Some(hi), Some(lo)) = (
                b.get(i + 1).and_then(|c| hex(*c)),
                b.get(i + 2).and_then(|c| hex(*c)),
            )
        {
            out.push((hi * 16 + lo) as u8);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
