//! The files of a control `start` (CONTROL §6 "Files", HTTP.md §3): each one
//! fetched by its signed hash with the machine's token, checked for its signed
//! length and SHA-256, and written under `<cwd>/.sessionpipe/files/<session>/`;
//! and the list of them the session's first message ends with.
//!
//! This module owns the download's bounds, the folder's rules (real folders
//! only, a session folder that is new, exclusive `0600` files, a `.gitignore`
//! that ignores the folder itself) and undoing a start's files when any one of
//! them fails. It must not verify the command (the verifier did: its
//! `FileRef` names are NFC and safe, checked again here only as paths), start
//! a session, ack, follow a symlink, or put the token in an error's text.
//!
//! Each file is downloaded into memory, capped at its signed size (at most
//! 25 MiB), and written only once it checked out; one file is held at a time,
//! so a start costs at most 25 MiB however many files it has, and nothing
//! half-downloaded ever has a name in the project. What a racing process could
//! do between the folder checks and a write is not guarded against: it runs as
//! the person already, and every check is made again before each file.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sessionpipe_http::without_url;
use sessionpipe_verifier::{FileRef, MAX_FILE_BYTES, MAX_FILES, MAX_TOTAL_BYTES};
use sha2::{Digest, Sha256};
use std::fmt::Write as _;
use std::io::{self, Write as _};
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

/// The folder, inside a session's `cwd`, the machine writes its files under.
pub const DIR: &str = ".sessionpipe";

/// The `code` of the `failed` ack for a start whose files failed.
pub const ACK_CODE: &str = "file";

/// The longest `detail` an ack carries (`FileError::detail`).
pub const DETAIL_MAX: usize = 500;

/// The files of one start, written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attached {
    /// `<cwd>/.sessionpipe/files/<session>`.
    pub dir: PathBuf,
    /// What follows the command's text in the session's first message
    /// (`attached_list`).
    pub list: String,
}

/// Why a start's files were not written; nothing of them is left. The text
/// names the file (or the folder) and the reason: it is the `detail` of the
/// `failed` ack with code `file`, and never holds the token.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("{name}: not on the receiver (404: gone or expired)")]
    Gone { name: String },
    #[error("{name}: the receiver refused the machine's token (401)")]
    Unauthorized { name: String },
    #[error("{name}: the receiver answered {status}")]
    Status { name: String, status: u16 },
    #[error("{name}: more than its signed {size} bytes")]
    TooLong { name: String, size: u64 },
    #[error("{name}: {got} bytes, not its signed {size}")]
    TooShort { name: String, got: u64, size: u64 },
    #[error("{name}: its SHA-256 is not the signed one")]
    WrongHash { name: String },
    #[error("{name}: the download failed: {why}")]
    Network { name: String, why: String },
    #[error("{name}: cannot be written: {why}")]
    Write { name: String, why: String },
    #[error("{name}: not a plain file name")]
    BadName { name: String },
    #[error("{what} is a symlink: files are never written through one")]
    Symlink { what: String },
    #[error("{what} is not a folder")]
    NotAFolder { what: String },
    #[error("{what} exists already: a new session's folder must be new")]
    Exists { what: String },
    #[error("{what} cannot be made: {why}")]
    Folder { what: String, why: String },
    #[error("{what}: cannot be read: {why}")]
    Unreadable { what: String, why: String },
    #[error("the session id cannot name a folder")]
    BadSession,
    #[error("{0}")]
    Bounds(&'static str),
    #[error("the file writer stopped")]
    Worker,
}

impl FileError {
    /// The text for the ack's `detail`, at most `DETAIL_MAX` characters.
    pub fn detail(&self) -> String {
        let text = self.to_string();
        match text.char_indices().nth(DETAIL_MAX) {
            Some((cut, _)) => text[..cut].to_string(),
            None => text,
        }
    }
}

/// Downloads each of `files` from `GET {control_url}/files/{sha256}` with
/// `token` as the bearer, one after another, and writes them to
/// `<cwd>/.sessionpipe/files/<session_id>/<name>`. `session_id` is the id
/// the folder is named by (the harness's id, without `<harness>:`).
///
/// On any failure everything written for this call is removed (the session's
/// folder, and `files` and `.sessionpipe` when this call made them), and the
/// error says which file and why. Dropping the future part way removes it
/// too.
pub async fn fetch_and_write(
    http: &reqwest::Client,
    control_url: &str,
    token: &str,
    cwd: &Path,
    session_id: &str,
    files: &[FileRef],
) -> Result<Attached, FileError> {
    check_list(session_id, files)?;
    let layout = {
        let (cwd, session) = (cwd.to_path_buf(), session_id.to_string());
        blocking(move || Layout::make(&cwd, &session)).await?
    };
    // From here, leaving early (an error, or the future dropped) undoes it.
    let undo = Undo(Some(layout));
    let base = control_url.trim_end_matches('/');
    for f in files {
        let bytes = match download(http, base, token, f).await {
            Ok(b) => b,
            Err(e) => return Err(undone(undo, e).await),
        };
        let (layout, name) = (undo.layout().clone(), f.name.clone());
        if let Err(e) = blocking(move || layout.write(&name, &bytes)).await {
            return Err(undone(undo, e).await);
        }
    }
    let dir = undo.keep().session;
    Ok(Attached {
        dir,
        list: attached_list(session_id, files),
    })
}

/// The text that follows a start's text in its first message: a blank line,
/// `Attached files (saved in this folder):`, then one line per file with its
/// path relative to `cwd`, its type and its size (`size_text`). Empty for no
/// files.
pub fn attached_list(session_id: &str, files: &[FileRef]) -> String {
    if files.is_empty() {
        return String::new();
    }
    let mut list = String::from("\n\nAttached files (saved in this folder):");
    for f in files {
        let _ = write!(
            list,
            "\n- {DIR}/files/{session_id}/{} ({}, {})",
            f.name,
            f.media_type,
            size_text(f.size)
        );
    }
    list
}

/// A size in units of 1 024 bytes, rounded to the nearest (halves up): below
/// 1 KB as bytes (`512 B`), below 1 MB as whole KB (`179 KB`), else MB with
/// one decimal (`1.2 MB`). A size that rounds to 1 024 KB reads `1.0 MB`.
pub fn size_text(bytes: u64) -> String {
    const K: u64 = 1024;
    if bytes < K {
        return format!("{bytes} B");
    }
    let kb = (bytes + K / 2) / K;
    if kb < K {
        return format!("{kb} KB");
    }
    let tenths = (bytes * 10 + K * K / 2) / (K * K);
    format!("{}.{} MB", tenths / 10, tenths % 10)
}

/// The signed bounds again, so a caller that built its own `FileRef`s cannot
/// walk out of the folder or past the caps.
fn check_list(session_id: &str, files: &[FileRef]) -> Result<(), FileError> {
    if !plain_session(session_id) {
        return Err(FileError::BadSession);
    }
    if files.is_empty() || files.len() > MAX_FILES {
        return Err(FileError::Bounds("a start has 1 to 10 files"));
    }
    let mut total = 0u64;
    for f in files {
        if !plain_name(&f.name) {
            return Err(FileError::BadName {
                name: shown(&f.name),
            });
        }
        if !(1..=MAX_FILE_BYTES).contains(&f.size) {
            return Err(FileError::Bounds("a file is 1 byte to 25 MiB"));
        }
        let hash_ok = f.sha256.len() == 43
            && f.sha256
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_');
        if !hash_ok {
            return Err(FileError::Bounds(
                "a file's sha256 is 43 base64url characters",
            ));
        }
        total += f.size;
    }
    if total > MAX_TOTAL_BYTES {
        return Err(FileError::Bounds("a start's files are 50 MiB at most"));
    }
    Ok(())
}

/// One path component that names a file in the folder itself: no separator,
/// no control character, not `.`, `..` or a dotfile (the verifier's rule).
fn plain_name(name: &str) -> bool {
    let n = name.chars().count();
    // Windows reads `:` as a stream of another file, and refuses the rest.
    let foreign = |c: char| cfg!(windows) && ":<>\"|?*".contains(c);
    (1..=200).contains(&n)
        && !name.starts_with('.')
        && !name
            .chars()
            .any(|c| c == '/' || c == '\\' || c < ' ' || c == '\u{7f}' || foreign(c))
        && matches!(
            Path::new(name).components().collect::<Vec<_>>()[..],
            [Component::Normal(c)] if c == name
        )
}

/// A session id as the protocol has them (1-128 of `[A-Za-z0-9._:-]`), not
/// starting with a dot; no `:` on Windows.
fn plain_session(id: &str) -> bool {
    (1..=128).contains(&id.len())
        && !id.starts_with('.')
        && id.bytes().all(|c| {
            c.is_ascii_alphanumeric() || b"._-".contains(&c) || (c == b':' && !cfg!(windows))
        })
}

/// A name for an error's text when the name itself was refused.
fn shown(name: &str) -> String {
    name.chars()
        .take(200)
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

/// How long one file may take, whole: a minute-ish floor for the round trip,
/// and 64 KiB/s for its bytes (25 MiB: about 7 minutes), so a slow link
/// still gets its files and a stalled one does not hold the start for ever.
fn budget(size: u64) -> Duration {
    Duration::from_secs(30 + size / (64 * 1024))
}

/// One file's bytes, read until they pass its signed size, checked.
async fn download(
    http: &reqwest::Client,
    base: &str,
    token: &str,
    f: &FileRef,
) -> Result<Vec<u8>, FileError> {
    let name = || f.name.clone();
    let network = |e: reqwest::Error| FileError::Network {
        name: name(),
        why: without_url(&e),
    };
    let mut resp = http
        .get(format!("{base}/files/{}", f.sha256))
        .bearer_auth(token)
        .header("sessionpipe-protocol", "1")
        .timeout(budget(f.size))
        .send()
        .await
        .map_err(network)?;
    match resp.status().as_u16() {
        200 => {}
        404 => return Err(FileError::Gone { name: name() }),
        401 => return Err(FileError::Unauthorized { name: name() }),
        status => {
            return Err(FileError::Status {
                name: name(),
                status,
            });
        }
    }
    let too_long = || FileError::TooLong {
        name: name(),
        size: f.size,
    };
    if resp.content_length().is_some_and(|n| n > f.size) {
        return Err(too_long());
    }
    let mut bytes = Vec::with_capacity(f.size as usize);
    while let Some(chunk) = resp.chunk().await.map_err(network)? {
        // Dropping the response here closes the connection: nothing past the
        // signed size is read.
        if (bytes.len() + chunk.len()) as u64 > f.size {
            return Err(too_long());
        }
        bytes.extend_from_slice(&chunk);
    }
    if bytes.len() as u64 != f.size {
        return Err(FileError::TooShort {
            name: name(),
            got: bytes.len() as u64,
            size: f.size,
        });
    }
    if URL_SAFE_NO_PAD.encode(Sha256::digest(&bytes)) != f.sha256 {
        return Err(FileError::WrongHash { name: name() });
    }
    Ok(bytes)
}

/// Runs file system work off the async threads (a write is up to 25 MiB).
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, FileError> + Send + 'static,
) -> Result<T, FileError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|_| FileError::Worker)?
}

/// Undoes the layout when dropped, unless kept.
struct Undo(Option<Layout>);

impl Undo {
    fn layout(&self) -> &Layout {
        self.0.as_ref().expect("kept only at the end")
    }

    fn keep(mut self) -> Layout {
        self.0.take().expect("kept once")
    }
}

impl Drop for Undo {
    fn drop(&mut self) {
        if let Some(l) = self.0.take() {
            l.undo();
        }
    }
}

/// Undoes off the async threads, then hands back the error.
async fn undone(undo: Undo, e: FileError) -> FileError {
    let _ = blocking(move || {
        drop(undo);
        Ok(())
    })
    .await;
    e
}

/// The folders of one start, and which of them it made.
#[derive(Clone, Debug)]
struct Layout {
    root: PathBuf,
    files: PathBuf,
    session: PathBuf,
    /// The session's folder as the errors name it, relative to `cwd`.
    shown: String,
    made_root: bool,
    made_gitignore: bool,
    made_files: bool,
    made_session: bool,
}

impl Layout {
    /// `.sessionpipe` (with its `.gitignore`) and `files`, made when absent and
    /// refused when a symlink or not a folder, then the session's folder,
    /// which must not exist. Undoes its own part on failure.
    fn make(cwd: &Path, session: &str) -> Result<Layout, FileError> {
        let root = cwd.join(DIR);
        let files = root.join("files");
        let mut l = Layout {
            session: files.join(session),
            shown: format!("{DIR}/files/{session}"),
            root,
            files,
            made_root: false,
            made_gitignore: false,
            made_files: false,
            made_session: false,
        };
        let r = l.make_steps();
        if r.is_err() {
            l.clone().undo();
        }
        r.map(|()| l)
    }

    fn make_steps(&mut self) -> Result<(), FileError> {
        let what = self.shown.clone();
        // Looked at before anything is written, so a refusal leaves the
        // folder as it was; `mkdir` below is what makes "new" certain.
        real_folder_now(&self.root, DIR)?;
        real_folder_now(&self.files, &format!("{DIR}/files"))?;
        if std::fs::symlink_metadata(&self.session).is_ok() {
            return Err(FileError::Exists { what });
        }
        self.made_root = real_folder(&self.root, DIR)?;
        self.made_gitignore = ignore_itself(&self.root)?;
        self.made_files = real_folder(&self.files, &format!("{DIR}/files"))?;
        match new_folder(&self.session) {
            Ok(()) => {
                self.made_session = true;
                Ok(())
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(FileError::Exists { what }),
            Err(e) => Err(FileError::Folder {
                what,
                why: e.to_string(),
            }),
        }
    }

    /// Checks the folders again (nothing became a symlink since), then writes
    /// `bytes` to a new file of `name`, mode `0600`.
    fn write(&self, name: &str, bytes: &[u8]) -> Result<(), FileError> {
        for (path, what) in [
            (&self.root, DIR.to_string()),
            (&self.files, format!("{DIR}/files")),
            (&self.session, self.shown.clone()),
        ] {
            if !real_folder_now(path, &what)? {
                return Err(FileError::NotAFolder { what });
            }
        }
        write_new(&self.session.join(name), bytes).map_err(|e| FileError::Write {
            name: name.to_string(),
            why: e.to_string(),
        })
    }

    /// Removes what this start made: the session's folder, then `files`, the
    /// `.gitignore` and `.sessionpipe`, each only while nothing else is in it.
    /// Two starts may share a `cwd`, and a folder of files another one (or an
    /// earlier one) left keeps the `.gitignore` that hides it.
    fn undo(self) {
        if self.made_session {
            let _ = std::fs::remove_dir_all(&self.session);
        }
        if self.made_files {
            let _ = std::fs::remove_dir(&self.files);
        }
        let others = std::fs::read_dir(&self.files).is_ok_and(|mut d| d.next().is_some());
        if self.made_gitignore && !others {
            let _ = std::fs::remove_file(self.root.join(".gitignore"));
        }
        if self.made_root {
            // Fails, as it should, when anything else is in it.
            let _ = std::fs::remove_dir(&self.root);
        }
    }
}

/// True when `path` is a real folder now, false when it is absent; a symlink
/// or anything else is refused.
fn real_folder_now(path: &Path, what: &str) -> Result<bool, FileError> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(FileError::Symlink {
            what: what.to_string(),
        }),
        Ok(m) if m.is_dir() => Ok(true),
        Ok(_) => Err(FileError::NotAFolder {
            what: what.to_string(),
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(FileError::Unreadable {
            what: what.to_string(),
            why: e.to_string(),
        }),
    }
}

/// Makes `path` a real folder unless it is one; true when this call made it.
fn real_folder(path: &Path, what: &str) -> Result<bool, FileError> {
    if real_folder_now(path, what)? {
        return Ok(false);
    }
    match new_folder(path) {
        Ok(()) => Ok(true),
        // Another start made it meanwhile: it must still be a real folder.
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            if real_folder_now(path, what)? {
                Ok(false)
            } else {
                Err(FileError::NotAFolder {
                    what: what.to_string(),
                })
            }
        }
        Err(e) => Err(FileError::Folder {
            what: what.to_string(),
            why: e.to_string(),
        }),
    }
}

/// `<base>/.sessionpipe/<name>`, made a real folder (0700) with the
/// `.gitignore` that hides `.sessionpipe` from a repository, unless it is one
/// already: where a start's worktree goes inside a checkout (`worktrees`).
/// A symlink or a file on the way is refused, as for a start's files.
pub(crate) fn ignored_folder(base: &Path, name: &str) -> Result<PathBuf, FileError> {
    let root = base.join(DIR);
    real_folder(&root, DIR)?;
    ignore_itself(&root)?;
    let dir = root.join(name);
    real_folder(&dir, &format!("{DIR}/{name}"))?;
    Ok(dir)
}

/// `.sessionpipe/.gitignore` with the single line `*` when there is none, so
/// a repository never picks the folder up; true when this call made it. One
/// that is there (even a symlink) is left as it is.
fn ignore_itself(root: &Path) -> Result<bool, FileError> {
    let path = root.join(".gitignore");
    if std::fs::symlink_metadata(&path).is_ok() {
        return Ok(false);
    }
    match write_new(&path, b"*\n") {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(FileError::Folder {
            what: format!("{DIR}/.gitignore"),
            why: e.to_string(),
        }),
    }
}

fn write_new(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut f = new_file(path)?;
    f.write_all(bytes)?;
    f.flush()
}

/// A new folder, `0700`; never one that exists (nor through a symlink: mkdir
/// of an existing link fails).
fn new_folder(path: &Path) -> io::Result<()> {
    let b = &mut std::fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(b, 0o700);
    b.create(path)
}

/// A new file, `0600`, created exclusively: an existing path, a symlink
/// included, refuses it.
fn new_file(path: &Path) -> io::Result<std::fs::File> {
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
    o.open(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::io::{Read, Write};
    use std::net::TcpListener;
    use std::sync::{Arc, Mutex};

    const SESSION: &str = "8c132906-8c3f-4814-870a-afc3d05e1d2e";
    const TOKEN: &str = "m_AAAAAAAAAAAAAAAAAAAA.the-machine-secret";

    fn entry(name: &str, ty: &str, bytes: &[u8]) -> FileRef {
        FileRef {
            name: name.into(),
            media_type: ty.into(),
            size: bytes.len() as u64,
            sha256: URL_SAFE_NO_PAD.encode(Sha256::digest(bytes)),
        }
    }

    /// What the little server answers on a path.
    #[derive(Clone)]
    enum Serves {
        /// 200 with these bytes and their `content-length`.
        Bytes(Vec<u8>),
        /// 200 with no length, then bytes until the client goes.
        Endless,
        /// 200 with a length, then nothing for a few seconds.
        Stall,
        Status(u16),
    }

    /// A request's path and its `authorization`, if any.
    type Seen = (String, Option<String>);

    /// A tiny HTTP/1.1 server on 127.0.0.1 (one connection at a time, each
    /// closed after its answer): the `authorization` of every request, in
    /// order, and its control URL.
    struct Server {
        url: String,
        seen: Arc<Mutex<Vec<Seen>>>,
    }

    fn server(answers: HashMap<String, Serves>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1/control", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { return };
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match conn.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&head).to_string();
                let path = head.split_whitespace().nth(1).unwrap_or("").to_string();
                let auth = head.lines().find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("authorization")
                        .then(|| v.trim().to_string())
                });
                log.lock().unwrap().push((path.clone(), auth));
                let path = path.trim_start_matches("/v1/control");
                let answer = answers.get(path).cloned().unwrap_or(Serves::Status(404));
                let _ = match answer {
                    Serves::Bytes(b) => conn
                        .write_all(
                            format!(
                                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                                b.len()
                            )
                            .as_bytes(),
                        )
                        .and_then(|()| conn.write_all(&b)),
                    Serves::Endless => conn
                        .write_all(b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n")
                        .and_then(|()| loop {
                            conn.write_all(&[b'x'; 16 * 1024])?;
                        }),
                    Serves::Stall => conn
                        .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n")
                        .map(|()| std::thread::sleep(Duration::from_secs(3))),
                    Serves::Status(s) => conn.write_all(
                        format!(
                            "HTTP/1.1 {s} No\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{{}}"
                        )
                        .as_bytes(),
                    ),
                };
            }
        });
        Server { url, seen }
    }

    fn at(f: &FileRef) -> String {
        format!("/files/{}", f.sha256)
    }

    fn client() -> reqwest::Client {
        crate::wire::client()
    }

    async fn fetch(s: &Server, cwd: &Path, files: &[FileRef]) -> Result<Attached, FileError> {
        fetch_and_write(&client(), &s.url, TOKEN, cwd, SESSION, files).await
    }

    /// Every path under `dir`, relative, sorted.
    fn tree(dir: &Path) -> Vec<String> {
        let mut out = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                out.push(p.strip_prefix(dir).unwrap().to_string_lossy().to_string());
                if std::fs::symlink_metadata(&p).unwrap().is_dir() {
                    stack.push(p);
                }
            }
        }
        out.sort();
        out
    }

    #[cfg(unix)]
    fn mode(p: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn sizes_read_in_units_of_1024() {
        assert_eq!(size_text(1), "1 B");
        assert_eq!(size_text(1023), "1023 B");
        assert_eq!(size_text(1024), "1 KB");
        assert_eq!(size_text(1535), "1 KB");
        assert_eq!(size_text(1536), "2 KB");
        // The spec's two examples.
        assert_eq!(size_text(183_402), "179 KB");
        assert_eq!(size_text(1_258_291), "1.2 MB");
        assert_eq!(size_text(1_200_000), "1.1 MB");
        // Rounding to 1 024 KB reads as MB.
        assert_eq!(size_text(1024 * 1024 - 513), "1023 KB");
        assert_eq!(size_text(1024 * 1024 - 512), "1.0 MB");
        assert_eq!(size_text(MAX_FILE_BYTES), "25.0 MB");
    }

    #[test]
    fn the_list_is_the_spec_s_text() {
        let files = [
            FileRef {
                size: 183_402,
                ..entry("screenshot.png", "image/png", b"")
            },
            FileRef {
                size: 1_258_291,
                ..entry("notes.pdf", "application/pdf", b"")
            },
        ];
        assert_eq!(
            format!("Look at these{}", attached_list(SESSION, &files)),
            format!(
                "Look at these\n\nAttached files (saved in this folder):\n\
                 - .sessionpipe/files/{SESSION}/screenshot.png (image/png, 179 KB)\n\
                 - .sessionpipe/files/{SESSION}/notes.pdf (application/pdf, 1.2 MB)"
            )
        );
        assert_eq!(attached_list(SESSION, &[]), "");
    }

    #[test]
    fn names_and_session_ids_stay_in_the_folder() {
        for bad in ["", ".", "..", ".env", "a/b", "a\\b", "a\nb", "a\0b"] {
            assert!(!plain_name(bad), "{bad:?}");
        }
        assert!(plain_name("Caf\u{e9} notes (1).pdf"));
        for bad in ["", ".", "..", "../x", "a/b", ".hidden", &"a".repeat(129)] {
            assert!(!plain_session(bad), "{bad:?}");
        }
        assert!(plain_session(SESSION));
        let f = entry("a/b", "text/plain", b"x");
        assert!(matches!(
            check_list(SESSION, std::slice::from_ref(&f)),
            Err(FileError::BadName { .. })
        ));
        assert!(matches!(
            check_list("../up", &[entry("a", "text/plain", b"x")]),
            Err(FileError::BadSession)
        ));
        assert!(matches!(
            check_list(SESSION, &[]),
            Err(FileError::Bounds(_))
        ));
        let long = FileError::Write {
            name: "n".repeat(200),
            why: "w".repeat(400),
        };
        assert_eq!(long.detail().chars().count(), DETAIL_MAX);
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn two_files_are_written_0600_beside_a_gitignore() {
        let png = b"\x89PNG\r\n\x1a\n not really an image".to_vec();
        let pdf = vec![b'%'; 300_000];
        let files = [
            entry("screenshot.png", "image/png", &png),
            entry("notes.pdf", "application/pdf", &pdf),
        ];
        let s = server(HashMap::from([
            (at(&files[0]), Serves::Bytes(png.clone())),
            (at(&files[1]), Serves::Bytes(pdf.clone())),
        ]));
        let cwd = tempfile::tempdir().unwrap();
        let got = fetch(&s, cwd.path(), &files).await.unwrap();
        let dir = cwd.path().join(".sessionpipe/files").join(SESSION);
        assert_eq!(got.dir, dir);
        assert_eq!(got.list, attached_list(SESSION, &files));
        assert!(got.list.contains("notes.pdf (application/pdf, 293 KB)"));
        assert_eq!(std::fs::read(dir.join("screenshot.png")).unwrap(), png);
        assert_eq!(std::fs::read(dir.join("notes.pdf")).unwrap(), pdf);
        let root = cwd.path().join(".sessionpipe");
        assert_eq!(
            std::fs::read_to_string(root.join(".gitignore")).unwrap(),
            "*\n"
        );
        assert_eq!(mode(&dir.join("screenshot.png")), 0o600);
        assert_eq!(mode(&dir.join("notes.pdf")), 0o600);
        for d in [&root, &root.join("files"), &dir] {
            assert_eq!(mode(d), 0o700, "{d:?}");
        }
        // One after another, each with the machine's token.
        let seen = s.seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 2);
        for (_, auth) in &seen {
            assert_eq!(auth.as_deref(), Some(format!("Bearer {TOKEN}").as_str()));
        }
        // A second start in the same folder: `.sessionpipe` and its own
        // `.gitignore` are reused, as they are.
        std::fs::write(root.join(".gitignore"), "kept\n").unwrap();
        let again = fetch_and_write(&client(), &s.url, TOKEN, cwd.path(), "another", &files[..1])
            .await
            .unwrap();
        assert!(again.dir.join("screenshot.png").is_file());
        assert_eq!(
            std::fs::read_to_string(root.join(".gitignore")).unwrap(),
            "kept\n"
        );
    }

    #[tokio::test]
    async fn a_wrong_hash_leaves_nothing_on_disk() {
        let f = entry("a.txt", "text/plain", b"the signed bytes");
        let s = server(HashMap::from([(
            at(&f),
            Serves::Bytes(b"not signed bytes".to_vec()),
        )]));
        let cwd = tempfile::tempdir().unwrap();
        let e = fetch(&s, cwd.path(), &[f]).await.unwrap_err();
        assert!(matches!(e, FileError::WrongHash { .. }), "{e}");
        assert_eq!(e.to_string(), "a.txt: its SHA-256 is not the signed one");
        assert_eq!(tree(cwd.path()), Vec::<String>::new());
    }

    #[tokio::test]
    async fn a_body_past_its_size_is_cut_off() {
        let f = entry("big.bin", "application/octet-stream", &[b'x'; 1000]);
        // With a `content-length` that says so: refused before the body.
        let long = entry("long.bin", "application/octet-stream", &[b'x'; 10]);
        let s = server(HashMap::from([
            (at(&f), Serves::Endless),
            (at(&long), Serves::Bytes(vec![b'x'; 11])),
        ]));
        let cwd = tempfile::tempdir().unwrap();
        let begun = std::time::Instant::now();
        let e = fetch(&s, cwd.path(), std::slice::from_ref(&f))
            .await
            .unwrap_err();
        assert!(matches!(e, FileError::TooLong { size: 1000, .. }), "{e}");
        // An endless body, stopped at once (not at the download's budget).
        assert!(begun.elapsed() < Duration::from_secs(10));
        let e = fetch(&s, cwd.path(), &[long]).await.unwrap_err();
        assert_eq!(e.to_string(), "long.bin: more than its signed 10 bytes");
        assert_eq!(tree(cwd.path()), Vec::<String>::new());
    }

    #[tokio::test]
    async fn a_short_body_fails() {
        let f = entry("a.txt", "text/plain", b"twelve bytes");
        let s = server(HashMap::from([(at(&f), Serves::Bytes(b"twelve".to_vec()))]));
        let cwd = tempfile::tempdir().unwrap();
        let e = fetch(&s, cwd.path(), std::slice::from_ref(&f))
            .await
            .unwrap_err();
        assert_eq!(e.to_string(), "a.txt: 6 bytes, not its signed 12");
        assert_eq!(tree(cwd.path()), Vec::<String>::new());
        // A `.sessionpipe` that was there, empty: the `.gitignore` this call
        // made goes too.
        std::fs::create_dir(cwd.path().join(".sessionpipe")).unwrap();
        fetch(&s, cwd.path(), &[f]).await.unwrap_err();
        assert_eq!(tree(cwd.path()), [".sessionpipe"]);
    }

    #[tokio::test]
    async fn a_start_dropped_part_way_leaves_nothing() {
        let first = entry("first.txt", "text/plain", b"first");
        let stalls = entry("second.txt", "text/plain", b"12345");
        let s = server(HashMap::from([
            (at(&first), Serves::Bytes(b"first".to_vec())),
            (at(&stalls), Serves::Stall),
        ]));
        let cwd = tempfile::tempdir().unwrap();
        let files = [first, stalls];
        let mut run = Box::pin(fetch(&s, cwd.path(), &files));
        // Driven until the first file is written and the second is on its way.
        let written = cwd
            .path()
            .join(".sessionpipe/files")
            .join(SESSION)
            .join("first.txt");
        let until = std::time::Instant::now() + Duration::from_secs(5);
        while !written.exists() {
            tokio::select! {
                r = &mut run => panic!("it ended: {r:?}"),
                () = tokio::time::sleep(Duration::from_millis(10)) => {}
            }
            assert!(std::time::Instant::now() < until, "first.txt never came");
        }
        drop(run);
        assert_eq!(tree(cwd.path()), Vec::<String>::new());
    }

    #[tokio::test]
    async fn a_404_after_a_written_file_removes_it_and_keeps_what_was_there() {
        let ok = entry("first.txt", "text/plain", b"first");
        let gone = entry("second.txt", "text/plain", b"second");
        let s = server(HashMap::from([(at(&ok), Serves::Bytes(b"first".to_vec()))]));
        let cwd = tempfile::tempdir().unwrap();
        // A `.sessionpipe/files` of an earlier start stays as it was.
        let earlier = cwd.path().join(".sessionpipe/files/earlier");
        std::fs::create_dir_all(&earlier).unwrap();
        std::fs::write(earlier.join("old.txt"), "old").unwrap();
        std::fs::write(cwd.path().join(".sessionpipe/.gitignore"), "*\n").unwrap();
        let before = tree(cwd.path());
        let e = fetch(&s, cwd.path(), &[ok, gone]).await.unwrap_err();
        assert_eq!(
            e.to_string(),
            "second.txt: not on the receiver (404: gone or expired)"
        );
        assert_eq!(tree(cwd.path()), before);
        // And another status is named as such.
        let f = entry("x.txt", "text/plain", b"x");
        let s = server(HashMap::from([(at(&f), Serves::Status(503))]));
        let e = fetch(&s, cwd.path(), &[f]).await.unwrap_err();
        assert_eq!(e.to_string(), "x.txt: the receiver answered 503");
        assert_eq!(tree(cwd.path()), before);
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_symlink_on_the_way_is_refused_and_its_target_untouched() {
        let f = entry("a.txt", "text/plain", b"bytes");
        let s = server(HashMap::from([(at(&f), Serves::Bytes(b"bytes".to_vec()))]));
        // `.sessionpipe` itself a link to a folder elsewhere.
        let cwd = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), cwd.path().join(".sessionpipe")).unwrap();
        let e = fetch(&s, cwd.path(), std::slice::from_ref(&f))
            .await
            .unwrap_err();
        assert!(matches!(e, FileError::Symlink { .. }), "{e}");
        assert_eq!(
            e.to_string(),
            ".sessionpipe is a symlink: files are never written through one"
        );
        assert_eq!(tree(elsewhere.path()), Vec::<String>::new());
        assert!(
            std::fs::symlink_metadata(cwd.path().join(".sessionpipe"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
        // `files` a link, inside a real `.sessionpipe` this call made.
        let cwd = tempfile::tempdir().unwrap();
        std::fs::create_dir(cwd.path().join(".sessionpipe")).unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), cwd.path().join(".sessionpipe/files"))
            .unwrap();
        let e = fetch(&s, cwd.path(), std::slice::from_ref(&f))
            .await
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            ".sessionpipe/files is a symlink: files are never written through one"
        );
        assert_eq!(tree(elsewhere.path()), Vec::<String>::new());
        assert_eq!(tree(cwd.path()), [".sessionpipe", ".sessionpipe/files"]);
        // The session's folder a (dangling) link.
        std::fs::remove_file(cwd.path().join(".sessionpipe/files")).unwrap();
        std::fs::create_dir(cwd.path().join(".sessionpipe/files")).unwrap();
        let link = cwd.path().join(".sessionpipe/files").join(SESSION);
        std::os::unix::fs::symlink(elsewhere.path().join("new"), &link).unwrap();
        let e = fetch(&s, cwd.path(), &[f]).await.unwrap_err();
        assert!(matches!(e, FileError::Exists { .. }), "{e}");
        assert_eq!(tree(elsewhere.path()), Vec::<String>::new());
        // Nothing downloaded for any of them.
        assert!(s.seen.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn an_existing_session_folder_is_refused_as_it_is() {
        let f = entry("a.txt", "text/plain", b"bytes");
        let s = server(HashMap::from([(at(&f), Serves::Bytes(b"bytes".to_vec()))]));
        let cwd = tempfile::tempdir().unwrap();
        let dir = cwd.path().join(".sessionpipe/files").join(SESSION);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("mine.txt"), "mine").unwrap();
        let before = tree(cwd.path());
        let e = fetch(&s, cwd.path(), &[f]).await.unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                ".sessionpipe/files/{SESSION} exists already: a new session's folder must be new"
            )
        );
        assert_eq!(tree(cwd.path()), before);
        assert_eq!(
            std::fs::read_to_string(dir.join("mine.txt")).unwrap(),
            "mine"
        );
    }

    #[tokio::test]
    async fn the_token_is_the_bearer_and_never_in_an_error() {
        let f = entry("a.txt", "text/plain", b"bytes");
        let s = server(HashMap::from([(at(&f), Serves::Status(401))]));
        let cwd = tempfile::tempdir().unwrap();
        let e = fetch(&s, cwd.path(), std::slice::from_ref(&f))
            .await
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "a.txt: the receiver refused the machine's token (401)"
        );
        let seen = s.seen.lock().unwrap().clone();
        assert_eq!(
            seen,
            vec![(
                format!("/v1/control/files/{}", f.sha256),
                Some(format!("Bearer {TOKEN}"))
            )]
        );
        // Nor when the network fails (a closed port).
        let closed = {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            format!("http://{}/v1/control", l.local_addr().unwrap())
        };
        let e = fetch_and_write(&client(), &closed, TOKEN, cwd.path(), SESSION, &[f])
            .await
            .unwrap_err();
        assert!(matches!(e, FileError::Network { .. }), "{e}");
        for text in [e.to_string(), e.detail(), format!("{e:?}")] {
            assert!(!text.contains("the-machine-secret"), "{text}");
        }
        assert_eq!(tree(cwd.path()), Vec::<String>::new());
    }

    /// Pairs a machine with the workspace receiver the way a device approves
    /// one; its token.
    async fn paired_token(rx: &sessionpipe_receiver::Handle, sink: &str) -> String {
        use sessionpipe_verifier::softkey::{self, SoftPasskey};
        let c = client();
        let url = rx.url();
        let post = |path: &str, body: serde_json::Value| {
            c.post(format!("{url}{path}"))
                .bearer_auth(sink)
                .header("content-type", "application/json")
                .body(body.to_string())
                .send()
        };
        let json = |r: reqwest::Response| async {
            serde_json::from_slice::<serde_json::Value>(&r.bytes().await.unwrap()).unwrap()
        };
        let started = json(
            post(
                "/v1/control/pair",
                serde_json::json!({"name": "m", "harnesses": ["claude-code"],
                                   "modes": ["resume"], "version": "0.0.0"}),
            )
            .await
            .unwrap(),
        )
        .await;
        let machine = started["machine"].as_str().unwrap();
        let code = started["code"].as_str().unwrap();
        let passkey = SoftPasskey::es256("localhost", "http://localhost");
        let proof = softkey::enrollment_proof(&passkey, machine, code);
        let approve = serde_json::json!({"code": code, "key": passkey.trusted(), "proof": proof});
        let ok = post("/test/pair/approve", approve).await.unwrap();
        assert_eq!(ok.status(), 200);
        let paired = json(
            c.get(format!("{url}/v1/control/pair?code={code}"))
                .bearer_auth(sink)
                .send()
                .await
                .unwrap(),
        )
        .await;
        paired["token"].as_str().unwrap().to_string()
    }

    #[tokio::test]
    async fn from_the_workspace_receiver() {
        let sink = "sink-token-for-files";
        let rx = sessionpipe_receiver::Receiver::start(sessionpipe_receiver::Options {
            control: Some(sessionpipe_receiver::ControlOptions::new("localhost")),
            ..sessionpipe_receiver::Options::new(sink)
        })
        .unwrap();
        let token = paired_token(&rx, sink).await;
        let control = format!("{}{}", rx.url(), sessionpipe_receiver::CONTROL_PATH);
        let shot = vec![7u8; 183_402];
        assert_eq!(rx.put_file(&shot), entry("", "", &shot).sha256);
        let files = [entry("screenshot.png", "image/png", &shot)];
        let cwd = tempfile::tempdir().unwrap();
        let got = fetch_and_write(&client(), &control, &token, cwd.path(), SESSION, &files)
            .await
            .unwrap();
        assert_eq!(std::fs::read(got.dir.join("screenshot.png")).unwrap(), shot);
        assert!(got.list.ends_with("screenshot.png (image/png, 179 KB)"));
        // A receiver that swapped the bytes under the signed hash.
        let signed = entry("b.txt", "text/plain", b"signed");
        rx.put_file_as(&signed.sha256, b"swap!!");
        let e = fetch_and_write(&client(), &control, &token, cwd.path(), "s2", &[signed])
            .await
            .unwrap_err();
        assert!(matches!(e, FileError::WrongHash { .. }), "{e}");
        // Not put at all, and not with the sink token.
        let never = entry("c.txt", "text/plain", b"never put");
        let e = fetch_and_write(&client(), &control, &token, cwd.path(), "s3", &[never])
            .await
            .unwrap_err();
        assert!(matches!(e, FileError::Gone { .. }), "{e}");
        let e = fetch_and_write(&client(), &control, sink, cwd.path(), "s4", &files)
            .await
            .unwrap_err();
        assert!(matches!(e, FileError::Unauthorized { .. }), "{e}");
        assert_eq!(
            tree(&cwd.path().join(".sessionpipe/files")),
            vec![SESSION.to_string(), format!("{SESSION}/screenshot.png")]
        );
    }
}
