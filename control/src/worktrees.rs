//! A started session's own git worktree (`control worktrees on`): where it
//! goes, making it (`git worktree add -b sessionpipe/<short id>`), the record
//! of the worktrees made (`worktrees.json` in the state dir, 0600, written
//! whole, changed under `worktrees.lock` beside it), what each one holds now,
//! and removing one that holds nothing of its own.
//!
//! `git` runs as a child process with an argument list (never a shell
//! string), bounded in time. A worktree goes where the control folders
//! still admit the agent's folder in it, and never over a path that exists:
//! first `<repo>.worktrees/<short>` beside the checkout, else
//! `.sessionpipe/worktrees/<short>` in the checkout (hidden from the
//! repository by `.sessionpipe`'s own `.gitignore`), else the same under the
//! start's folder. It must never remove a worktree that is not in the
//! record, nor one with an uncommitted change (untracked files included;
//! ignored ones are not work and go with it, as with `git worktree remove`)
//! or a commit no other branch, tag or remote holds; whether a session ended
//! is the caller's to say.

use crate::files;
use serde::{Deserialize, Serialize};
use spool::StatePaths;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The longest one `git` call may take (a checkout of a large tree included).
const GIT_BOUND: Duration = Duration::from_secs(120);
/// Branches control makes start with this.
pub const BRANCH_PREFIX: &str = "sessionpipe/";
/// How many characters of the session's id name its branch and folder.
const SHORT_LEN: usize = 8;
/// The folder under `.sessionpipe` that worktrees inside a checkout go in.
const INSIDE: &str = "worktrees";

/// One change of the record at a time in this process (two starts at once);
/// between processes (the daemon adding, `prune` taking off) the lock file
/// beside it does the same (`Held`).
static RECORD: Mutex<()> = Mutex::new(());

#[derive(Debug, thiserror::Error)]
pub enum WorktreeError {
    #[error("git could not run: {0}")]
    Spawn(std::io::Error),
    #[error("git {args} did not finish within {secs} s and was ended")]
    TooLong { args: String, secs: u64 },
    #[error("git {args} failed: {why}")]
    Git { args: String, why: String },
    #[error("the session id {0:?} has no letter or digit to name a branch by")]
    BadId(String),
    #[error("no place for the session's worktree: {0}")]
    NoPlace(String),
    #[error("{0} is not in the repository's last commit, so a worktree has no such folder")]
    NotCommitted(String),
    #[error(transparent)]
    Folder(#[from] files::FileError),
    #[error("{0} is gone")]
    Gone(String),
    #[error("the worktree record {path}: {why}")]
    Record { path: String, why: String },
}

/// A worktree control made, as the record keeps it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Worktree {
    /// The session it was made for, `<harness>:<id>` (the start's name).
    pub session: String,
    /// The checkout it was made from (the repository's top folder).
    pub repo: PathBuf,
    /// The worktree's top folder.
    pub path: PathBuf,
    /// Where the session runs: the start's folder, in the worktree.
    pub folder: PathBuf,
    pub branch: String,
    /// The commit it was made at: commits up to it are never the session's.
    pub base: String,
    /// When it was made, epoch ms.
    pub made_ms: i64,
}

#[derive(Default, Serialize, Deserialize)]
struct RecordFile {
    worktrees: Vec<Worktree>,
}

/// Where a new worktree goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Place {
    /// Its top folder (new).
    pub path: PathBuf,
    /// The start's folder in it.
    pub folder: PathBuf,
    /// Under a `.sessionpipe` folder of `base`, which is made first.
    pub inside: Option<PathBuf>,
}

/// What a worktree holds now that is not elsewhere.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Standing {
    /// Lines of `git status --porcelain` (untracked files included).
    pub uncommitted: usize,
    /// Commits of its branch or HEAD that no other branch, tag or remote
    /// (an upstream included) holds, past the commit it was made at.
    pub unpushed: usize,
}

/// Whether the session a worktree was made for still runs, as the outbox
/// says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionState {
    Live,
    Ended,
    /// The outbox holds no record of it (its harness never ran, or the
    /// outbox is elsewhere).
    Unknown,
}

impl SessionState {
    pub fn as_str(self) -> &'static str {
        match self {
            SessionState::Live => "live",
            SessionState::Ended => "ended",
            SessionState::Unknown => "unknown",
        }
    }
}

/// What `prune` does with one recorded worktree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Its session ended and it holds nothing of its own.
    Remove,
    /// Kept, and why.
    Keep(String),
    /// Its folder is gone: only the record's line goes.
    Drop,
}

/// The branch and folder name of a session: the first letters and digits
/// of its id, lower case.
pub fn short_id(id: &str) -> Result<String, WorktreeError> {
    let short: String = id
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(SHORT_LEN)
        .collect::<String>()
        .to_ascii_lowercase();
    if short.is_empty() {
        return Err(WorktreeError::BadId(id.to_string()));
    }
    Ok(short)
}

/// The checkout `cwd` is in (its top folder), when it is in one: looked
/// for as git does (a `.git` folder or file above it), so a folder outside
/// any repository never needs `git` at all.
pub fn repository_of(cwd: &Path) -> Result<Option<PathBuf>, WorktreeError> {
    if !cwd.ancestors().any(|d| d.join(".git").exists()) {
        return Ok(None);
    }
    let top = git(cwd, &["rev-parse", "--show-toplevel"])?;
    Ok(Some(PathBuf::from(top.trim_end_matches(['\n', '\r']))))
}

/// Where the worktree of `short` goes for a start in `cwd`, inside the
/// checkout `top`: the first of beside the checkout, inside it, inside
/// `cwd`, whose folder for the session `allowed` admits and whose path does
/// not exist. `top` and `cwd` are canonical.
pub fn place(
    top: &Path,
    cwd: &Path,
    short: &str,
    allowed: &dyn Fn(&Path) -> bool,
) -> Result<Place, WorktreeError> {
    let within = cwd.strip_prefix(top).map_err(|_| {
        WorktreeError::NoPlace(format!("{} is not in {}", cwd.display(), top.display()))
    })?;
    let mut candidates: Vec<(PathBuf, Option<PathBuf>)> = Vec::new();
    if let (Some(parent), Some(name)) = (top.parent(), top.file_name()) {
        let mut beside = name.to_os_string();
        beside.push(".worktrees");
        candidates.push((parent.join(beside).join(short), None));
    }
    let inside = |base: &Path| base.join(files::DIR).join(INSIDE).join(short);
    candidates.push((inside(top), Some(top.to_path_buf())));
    if cwd != top {
        candidates.push((inside(cwd), Some(cwd.to_path_buf())));
    }
    let mut why = Vec::new();
    for (path, base) in candidates {
        let folder = path.join(within);
        if std::fs::symlink_metadata(&path).is_ok() {
            why.push(format!("{} exists", path.display()));
        } else if through_a_link(&path) {
            // A folder on the way that is a link would put the worktree
            // wherever it points, past what the control folders admit.
            why.push(format!("{} goes through a symbolic link", path.display()));
        } else if !allowed(&folder) {
            why.push(format!(
                "{} is outside the control folders",
                folder.display()
            ));
        } else {
            return Ok(Place {
                path,
                folder,
                inside: base,
            });
        }
    }
    Err(WorktreeError::NoPlace(why.join("; ")))
}

/// Takes a worktree `make` just made away again, with its branch.
fn undo(top: &Path, path: &str, branch: &str) {
    let _ = git(top, &["worktree", "remove", "--force", "--", path]);
    let _ = git(top, &["branch", "-D", "--", branch]);
}

/// True when the deepest folder of `path` that exists is not where `path`
/// names it (a symbolic link on the way).
fn through_a_link(path: &Path) -> bool {
    let Some(existing) = path.ancestors().skip(1).find(|a| a.exists()) else {
        return false;
    };
    std::fs::canonicalize(existing).map_or(true, |real| real != existing)
}

/// Makes the worktree of `session` (`<harness>:<id>`, `id` its short id's
/// source) for a start in `cwd`, on a new branch `sessionpipe/<short>` at
/// the checkout's HEAD, records it, and says where the session runs. `None`
/// when `cwd` is in no repository. Blocking.
pub fn make(
    paths: &StatePaths,
    session: &str,
    id: &str,
    cwd: &Path,
    allowed: &dyn Fn(&Path) -> bool,
) -> Result<Option<Worktree>, WorktreeError> {
    let short = short_id(id)?;
    let cwd = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    let Some(top) = repository_of(&cwd)? else {
        return Ok(None);
    };
    let top = std::fs::canonicalize(&top).unwrap_or(top);
    let place = place(&top, &cwd, &short, allowed)?;
    if let Some(base) = &place.inside {
        files::ignored_folder(base, INSIDE)?;
    }
    let base = git(&top, &["rev-parse", "--verify", "HEAD^{commit}"])?
        .trim()
        .to_string();
    let branch = format!("{BRANCH_PREFIX}{short}");
    let path = place.path.to_string_lossy().into_owned();
    // Just made, nothing of anyone's in it yet: on any failure past here it
    // goes again, branch and all, so no worktree is left without a record.
    if let Err(e) = git(
        &top,
        &["worktree", "add", "-b", &branch, "--", &path, &base],
    ) {
        undo(&top, &path, &branch);
        return Err(e);
    }
    // Where the session would run, as it really is (a folder of the commit
    // may be a link): inside the worktree and admitted, or no start.
    let real = std::fs::canonicalize(&place.folder).ok();
    let inside = std::fs::canonicalize(&place.path)
        .ok()
        .zip(real.as_ref())
        .is_some_and(|(top, real)| real.starts_with(top));
    if !place.folder.is_dir() {
        undo(&top, &path, &branch);
        return Err(WorktreeError::NotCommitted(cwd.display().to_string()));
    }
    if !inside || !real.as_deref().is_some_and(allowed) {
        undo(&top, &path, &branch);
        return Err(WorktreeError::NoPlace(format!(
            "{} is a link out of the worktree or outside the control folders",
            place.folder.display()
        )));
    }
    let made = Worktree {
        session: session.to_string(),
        repo: top,
        path: place.path,
        folder: place.folder,
        branch,
        base,
        made_ms: protocol::time::now_ms(),
    };
    if let Err(e) = keep(paths, &made) {
        undo(&made.repo, &path, &made.branch);
        return Err(e);
    }
    Ok(Some(made))
}

/// The worktrees recorded, in the order they were made (none without a
/// record).
pub fn recorded(paths: &StatePaths) -> Result<Vec<Worktree>, WorktreeError> {
    let path = paths.worktrees();
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(record_error(&path, e)),
    };
    serde_json::from_slice::<RecordFile>(&bytes)
        .map(|r| r.worktrees)
        .map_err(|e| record_error(&path, e))
}

/// Adds `made` to the record.
fn keep(paths: &StatePaths, made: &Worktree) -> Result<(), WorktreeError> {
    let _held = Held::take(paths)?;
    let mut all = recorded(paths)?;
    all.push(made.clone());
    write(paths, all)
}

/// Takes the worktree at `path` off the record (read under the lock, so a
/// worktree another process records meanwhile is kept).
pub fn forget(paths: &StatePaths, path: &Path) -> Result<(), WorktreeError> {
    let _held = Held::take(paths)?;
    let mut all = recorded(paths)?;
    all.retain(|w| w.path != path);
    write(paths, all)
}

/// The record held for one read and write: by this process's threads
/// through `RECORD`, by other processes through an advisory lock on
/// `worktrees.lock` beside it (0600; the OS lets it go if its holder dies).
struct Held {
    _file: std::fs::File,
    _thread: std::sync::MutexGuard<'static, ()>,
}

impl Held {
    fn take(paths: &StatePaths) -> Result<Held, WorktreeError> {
        let thread = RECORD.lock().unwrap_or_else(|p| p.into_inner());
        let path = paths.worktrees().with_extension("lock");
        if let Some(state) = path.parent() {
            spool::files::create_private_dir(state).map_err(|e| record_error(state, e))?;
        }
        let file = spool::files::open_lock_file(&path).map_err(|e| record_error(&path, e))?;
        // Held for one read and one rename: a wait of milliseconds.
        file.lock().map_err(|e| record_error(&path, e))?;
        Ok(Held {
            _file: file,
            _thread: thread,
        })
    }
}

fn write(paths: &StatePaths, worktrees: Vec<Worktree>) -> Result<(), WorktreeError> {
    let path = paths.worktrees();
    let text = serde_json::to_vec_pretty(&RecordFile { worktrees }).expect("the record serialises");
    spool::files::write_private_file(&path, &text).map_err(|e| record_error(&path, e))
}

fn record_error(path: &Path, e: impl std::fmt::Display) -> WorktreeError {
    WorktreeError::Record {
        path: path.display().to_string(),
        why: e.to_string(),
    }
}

/// What the worktree holds now that is not elsewhere. Blocking.
pub fn standing(w: &Worktree) -> Result<Standing, WorktreeError> {
    if !w.path.is_dir() {
        return Err(WorktreeError::Gone(w.path.display().to_string()));
    }
    let status = git(&w.path, &["status", "--porcelain", "--untracked-files=all"])?;
    let uncommitted = status.lines().filter(|l| !l.is_empty()).count();
    let branch_ref = format!("refs/heads/{}", w.branch);
    let mut args = vec!["rev-list".to_string(), "--count".into(), "HEAD".into()];
    // The branch may have been deleted, or moved off HEAD.
    if git(&w.path, &["rev-parse", "--verify", "--quiet", &branch_ref]).is_ok() {
        args.push(branch_ref);
    }
    args.extend([
        "--not".to_string(),
        format!("--exclude={}", w.branch),
        "--branches".into(),
        "--remotes".into(),
        "--tags".into(),
        w.base.clone(),
    ]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let unpushed = git(&w.path, &args)?
        .trim()
        .parse()
        .map_err(|e: std::num::ParseIntError| WorktreeError::Git {
            args: "rev-list --count".into(),
            why: e.to_string(),
        })?;
    Ok(Standing {
        uncommitted,
        unpushed,
    })
}

/// What `prune` does with a worktree whose folder `exists` (or not), whose
/// session is in `state`, holding `standing` (or why git could not say).
pub fn decide(
    exists: bool,
    state: SessionState,
    standing: &Result<Standing, WorktreeError>,
) -> Verdict {
    if !exists {
        return Verdict::Drop;
    }
    match state {
        SessionState::Live => return Verdict::Keep("its session is live".into()),
        SessionState::Unknown => {
            return Verdict::Keep("the outbox has no record of its session".into());
        }
        SessionState::Ended => {}
    }
    match standing {
        Err(e) => Verdict::Keep(format!("git could not say what it holds: {e}")),
        Ok(s) if s.uncommitted > 0 => {
            Verdict::Keep(format!("{} uncommitted change(s)", s.uncommitted))
        }
        Ok(s) if s.unpushed > 0 => Verdict::Keep(format!(
            "{} commit(s) no other branch, tag or remote holds",
            s.unpushed
        )),
        Ok(_) => Verdict::Remove,
    }
}

/// Removes the worktree (`git worktree remove`, which itself refuses one
/// with changes) and then its branch (`git branch -d`, which refuses one
/// not merged); takes it off the record. `Some(why)` when the branch was
/// kept. Blocking.
pub fn remove(paths: &StatePaths, w: &Worktree) -> Result<Option<String>, WorktreeError> {
    let path = w.path.to_string_lossy().into_owned();
    git(&w.repo, &["worktree", "remove", "--", &path])?;
    forget(paths, &w.path)?;
    match git(&w.repo, &["branch", "-d", "--", &w.branch]) {
        Ok(_) => Ok(None),
        Err(e) => Ok(Some(e.to_string())),
    }
}

/// Forgets a worktree whose folder is gone: its record line, git's own
/// entry of it (`worktree prune`), and its branch where git deletes it as
/// merged; `Some(why)` when the branch stays.
pub fn drop_gone(paths: &StatePaths, w: &Worktree) -> Result<Option<String>, WorktreeError> {
    forget(paths, &w.path)?;
    if !w.repo.is_dir() {
        return Ok(Some(format!("its repository {} is gone", w.repo.display())));
    }
    let _ = git(&w.repo, &["worktree", "prune"]);
    match git(&w.repo, &["branch", "-d", "--", &w.branch]) {
        Ok(_) => Ok(None),
        Err(e) => Ok(Some(e.to_string())),
    }
}

/// Runs `git <args>` in `dir`; its stdout when it exits 0, its stderr in
/// the error otherwise. Past `GIT_BOUND` it is ended.
fn git(dir: &Path, args: &[&str]) -> Result<String, WorktreeError> {
    let shown = args.join(" ");
    let mut child = Command::new("git")
        .args(args)
        .current_dir(dir)
        // Never a prompt for credentials or an editor nobody sees.
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_EDITOR", "true")
        // The repository is the folder's, never one a parent process named
        // (a daemon started from a git hook inherits these); and a status
        // takes no lock the person's own git would meet.
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(WorktreeError::Spawn)?;
    let read = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(mut r) = r {
                let _ = r.read_to_string(&mut text);
            }
            text
        })
    };
    let out = read(child.stdout.take().map(|s| Box::new(s) as _));
    let err = read(child.stderr.take().map(|s| Box::new(s) as _));
    let until = Instant::now() + GIT_BOUND;
    let status = loop {
        match child.try_wait().map_err(WorktreeError::Spawn)? {
            Some(status) => break status,
            None if Instant::now() >= until => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(WorktreeError::TooLong {
                    args: shown,
                    secs: GIT_BOUND.as_secs(),
                });
            }
            None => std::thread::sleep(Duration::from_millis(10)),
        }
    };
    let out = out.join().unwrap_or_default();
    let err = err.join().unwrap_or_default();
    if status.success() {
        return Ok(out);
    }
    Err(WorktreeError::Git {
        args: shown,
        why: match err.trim() {
            "" => status.to_string(),
            e => e.to_string(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_place_through_a_link_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let top = repo(dir.path());
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir_all(&elsewhere).unwrap();
        // `project.worktrees` beside the checkout is a link out of the control folders.
        std::os::unix::fs::symlink(&elsewhere, top.with_file_name("project.worktrees")).unwrap();
        let allowed = |p: &Path| p.starts_with(top.parent().unwrap());
        let place = place(&top, &top, "abc", &allowed).unwrap();
        assert_eq!(
            place.path,
            top.join(files::DIR).join(INSIDE).join("abc"),
            "inside, not through the link"
        );
    }

    fn recorded_at(path: &str) -> Worktree {
        Worktree {
            session: "claude-code:s".into(),
            repo: "/r".into(),
            path: path.into(),
            folder: path.into(),
            branch: "sessionpipe/s".into(),
            base: "0".into(),
            made_ms: 0,
        }
    }

    #[test]
    fn a_change_of_the_record_waits_for_another_process_and_keeps_what_it_wrote() {
        let dir = tempfile::tempdir().unwrap();
        let paths = StatePaths::new(dir.path().to_path_buf());
        write(&paths, vec![recorded_at("/w/a"), recorded_at("/w/b")]).unwrap();
        drop(Held::take(&paths).unwrap());
        // Another process holds the lock (a lock on a file of its own opening
        // is one another opening must wait for, in one process as in two).
        let other =
            spool::files::open_lock_file(&paths.worktrees().with_extension("lock")).unwrap();
        other.lock().unwrap();
        let (done, finished) = std::sync::mpsc::channel();
        let waiting = {
            let paths = paths.clone();
            std::thread::spawn(move || {
                let r = forget(&paths, Path::new("/w/a"));
                done.send(()).unwrap();
                r
            })
        };
        assert!(
            finished.recv_timeout(Duration::from_millis(300)).is_err(),
            "forget went on while another process held the record"
        );
        // What the other process writes while it holds it.
        let mut all = recorded(&paths).unwrap();
        all.push(recorded_at("/w/c"));
        write(&paths, all).unwrap();
        other.unlock().unwrap();
        waiting.join().unwrap().unwrap();
        let left: Vec<PathBuf> = recorded(&paths)
            .unwrap()
            .into_iter()
            .map(|w| w.path)
            .collect();
        assert_eq!(left, [PathBuf::from("/w/b"), PathBuf::from("/w/c")]);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let lock = std::fs::metadata(paths.worktrees().with_extension("lock")).unwrap();
            assert_eq!(lock.permissions().mode() & 0o777, 0o600);
        }
    }

    /// A repository with one commit, in a new folder; its canonical top.
    fn repo(dir: &Path) -> PathBuf {
        let top = dir.join("project");
        std::fs::create_dir_all(top.join("sub")).unwrap();
        std::fs::write(top.join("sub/readme.txt"), "hello\n").unwrap();
        git(&top, &["init", "-q", "-b", "main"]).unwrap();
        commit_all(&top);
        std::fs::canonicalize(top).unwrap()
    }

    fn commit_all(dir: &Path) {
        git(dir, &["add", "-A"]).unwrap();
        git(
            dir,
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@example.com",
                "commit",
                "-q",
                "-m",
                "more",
            ],
        )
        .unwrap();
    }

    #[test]
    fn a_short_id_is_the_ids_first_letters_and_digits() {
        assert_eq!(
            short_id("3F2A9C1E-0b1c-4d2e-8f3a-0123456789ab").unwrap(),
            "3f2a9c1e"
        );
        assert_eq!(short_id("ab-c").unwrap(), "abc");
        assert!(matches!(short_id("--/.."), Err(WorktreeError::BadId(_))));
    }

    #[test]
    fn the_place_is_beside_the_checkout_when_allowed_else_inside_never_over_a_path() {
        let dir = tempfile::tempdir().unwrap();
        let top = repo(dir.path());
        let parent = top.parent().unwrap().to_path_buf();
        let sub = top.join("sub");
        let everywhere = |_: &Path| true;
        let p = place(&top, &sub, "abc", &everywhere).unwrap();
        assert_eq!(p.path, parent.join("project.worktrees/abc"));
        assert_eq!(p.folder, parent.join("project.worktrees/abc/sub"));
        assert_eq!(p.inside, None);

        // Only the checkout is allowed: inside it, under `.sessionpipe`.
        let in_top = |f: &Path| f.starts_with(&top);
        let p = place(&top, &sub, "abc", &in_top).unwrap();
        assert_eq!(p.path, top.join(".sessionpipe/worktrees/abc"));
        assert_eq!(p.folder, top.join(".sessionpipe/worktrees/abc/sub"));
        assert_eq!(p.inside.as_deref(), Some(top.as_path()));

        // Only the start's folder: under it.
        let in_sub = |f: &Path| f.starts_with(&sub);
        let p = place(&top, &sub, "abc", &in_sub).unwrap();
        assert_eq!(p.path, sub.join(".sessionpipe/worktrees/abc"));
        assert_eq!(p.folder, sub.join(".sessionpipe/worktrees/abc/sub"));

        // A path that exists is never taken, whatever it is.
        std::fs::create_dir_all(parent.join("project.worktrees")).unwrap();
        std::fs::write(parent.join("project.worktrees/abc"), "a file").unwrap();
        let p = place(&top, &sub, "abc", &everywhere).unwrap();
        assert_eq!(p.path, top.join(".sessionpipe/worktrees/abc"));

        // Nowhere allowed: no place, and it says why for each.
        let nowhere = |_: &Path| false;
        let e = place(&top, &sub, "abc", &nowhere).unwrap_err().to_string();
        assert!(
            e.contains("exists") && e.contains("outside the control folders"),
            "{e}"
        );
    }

    #[test]
    fn a_worktree_is_made_on_its_branch_recorded_privately_and_hidden_from_the_checkout() {
        let dir = tempfile::tempdir().unwrap();
        let top = repo(dir.path());
        let paths = StatePaths::new(dir.path().join("state"));
        let in_top = |f: &Path| f.starts_with(&top);
        let made = make(
            &paths,
            "claude-code:ab12cd34-x",
            "ab12cd34-x",
            &top.join("sub"),
            &in_top,
        )
        .unwrap()
        .expect("a repository");
        assert_eq!(made.branch, "sessionpipe/ab12cd34");
        assert_eq!(made.folder, made.path.join("sub"));
        assert!(made.folder.join("readme.txt").is_file());
        assert_eq!(
            git(&made.path, &["rev-parse", "--abbrev-ref", "HEAD"])
                .unwrap()
                .trim(),
            "sessionpipe/ab12cd34"
        );
        // The checkout does not see it.
        assert_eq!(git(&top, &["status", "--porcelain"]).unwrap(), "");
        assert_eq!(recorded(&paths).unwrap(), vec![made.clone()]);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(paths.worktrees())
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        // The same id again: its path exists now and its branch too.
        assert!(
            make(
                &paths,
                "claude-code:ab12cd34-x",
                "ab12cd34-x",
                &top,
                &in_top
            )
            .is_err()
        );
        // Outside any repository: nothing made.
        let plain = dir.path().join("plain");
        std::fs::create_dir_all(&plain).unwrap();
        assert!(
            make(&paths, "claude-code:ff", "ff", &plain, &|_| true)
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn prune_removes_only_an_ended_sessions_clean_worktree_and_says_why_it_keeps_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let top = repo(dir.path());
        let paths = StatePaths::new(dir.path().join("state"));
        let all = |_: &Path| true;
        let clean = make(&paths, "claude-code:aaaa1111", "aaaa1111", &top, &all)
            .unwrap()
            .unwrap();
        let dirty = make(&paths, "claude-code:bbbb2222", "bbbb2222", &top, &all)
            .unwrap()
            .unwrap();
        let ahead = make(&paths, "claude-code:cccc3333", "cccc3333", &top, &all)
            .unwrap()
            .unwrap();
        std::fs::write(dirty.path.join("new.txt"), "untracked\n").unwrap();
        std::fs::write(ahead.path.join("new.txt"), "committed\n").unwrap();
        commit_all(&ahead.path);

        let verdict = |w: &Worktree, state| decide(w.path.exists(), state, &standing(w));
        assert_eq!(verdict(&clean, SessionState::Ended), Verdict::Remove);
        assert_eq!(
            verdict(&clean, SessionState::Live),
            Verdict::Keep("its session is live".into())
        );
        assert!(matches!(
            verdict(&clean, SessionState::Unknown),
            Verdict::Keep(_)
        ));
        assert_eq!(
            verdict(&dirty, SessionState::Ended),
            Verdict::Keep("1 uncommitted change(s)".into())
        );
        assert_eq!(
            verdict(&ahead, SessionState::Ended),
            Verdict::Keep("1 commit(s) no other branch, tag or remote holds".into())
        );
        // Once another branch holds the commit, nothing is only there.
        git(&top, &["branch", "kept-copy", &ahead.branch]).unwrap();
        assert_eq!(verdict(&ahead, SessionState::Ended), Verdict::Remove);

        assert_eq!(remove(&paths, &clean).unwrap(), None);
        assert!(!clean.path.exists());
        assert!(
            git(
                &top,
                &[
                    "rev-parse",
                    "--verify",
                    "--quiet",
                    "refs/heads/sessionpipe/aaaa1111"
                ]
            )
            .is_err()
        );
        assert_eq!(
            recorded(&paths).unwrap(),
            vec![dirty.clone(), ahead.clone()]
        );

        // A folder that is gone is only dropped from the record.
        std::fs::remove_dir_all(&dirty.path).unwrap();
        assert_eq!(verdict(&dirty, SessionState::Ended), Verdict::Drop);
    }
}
