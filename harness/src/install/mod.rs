//! `sessionpipe install | uninstall | status`: our hook entries in harness configs.
//!
//! A harness's config is the person's file. Only our own entries are written or
//! removed; every other byte is kept (see `jsonedit`); a file that is not plain
//! JSON is skipped with the reason and left byte-identical; the original is kept
//! before our first write; uninstall of a file nobody touched since restores its
//! original bytes. A symlinked file is written through its link, a read-only one
//! is skipped (`disk`). Which files and which entries is each adapter's business
//! (`HookInstall`); the mechanics are here.

mod disk;
pub mod env_keys;
pub mod event_lists;
pub mod format;
pub mod hooks_json;
pub mod jsonedit;
mod ledger;
#[cfg(test)]
mod props;
#[cfg(any(test, feature = "test-util"))]
pub mod scratch;

use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use format::{ConfigFormat, Ctx, EntryState, Skip};
pub use hooks_json::{ClaudeHooks, HookEvent, HooksLayout};
pub use ledger::LedgerError;
pub use spool::files::write_atomic;

/// The machine as an installer sees it: the home, the environment, `PATH`.
/// Tests build one by hand; the CLI reads the process's.
#[derive(Clone, Debug)]
pub struct Host {
    pub home: PathBuf,
    pub vars: BTreeMap<String, String>,
}

impl Host {
    /// This process's machine; `None` without a home.
    pub fn from_env() -> Option<Host> {
        Some(Host {
            home: spool::paths::home_dir()?,
            vars: std::env::vars().collect(),
        })
    }

    pub fn var(&self, key: &str) -> Option<&str> {
        self.vars
            .get(key)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// True when an executable named `bin` is on `PATH`.
    pub fn on_path(&self, bin: &str) -> bool {
        self.find_on_path(bin).is_some()
    }

    /// The first file named `bin` on `PATH`.
    pub fn find_on_path(&self, bin: &str) -> Option<PathBuf> {
        let path = self.var("PATH")?;
        std::env::split_paths(path)
            .map(|dir| dir.join(format!("{bin}{}", std::env::consts::EXE_SUFFIX)))
            .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file()))
    }

    /// `p` with the home written `~`, for messages.
    pub fn show(&self, p: &Path) -> String {
        spool::paths::tilde(&p.to_string_lossy(), Some(&self.home))
    }
}

/// One config file and its format.
pub struct Target {
    pub path: PathBuf,
    pub format: &'static dyn ConfigFormat,
    /// The whole file is sessionpipe's (Grok Build reads every file in its hooks
    /// folder): uninstall removes it once nothing but our entries was in it.
    pub owned: bool,
}

impl Target {
    /// A file of the person's (or the harness's) that holds our entries.
    pub fn shared(path: PathBuf, format: &'static dyn ConfigFormat) -> Target {
        Target {
            path,
            format,
            owned: false,
        }
    }
}

/// True for a JSON document that holds nothing (`{}`, or `{"hooks": {}}`), or for
/// no text at all (a whole file of ours, such as OpenCode's plugin, removed).
fn is_empty_shell(text: &str) -> bool {
    if text.trim().is_empty() {
        return true;
    }
    match serde_json::from_str::<serde_json::Value>(text.trim_start_matches('\u{feff}')) {
        Ok(serde_json::Value::Object(m)) => m
            .values()
            .all(|v| v.as_object().is_some_and(|o| o.is_empty())),
        _ => false,
    }
}

/// An entry beyond the hooks that the person opts into by name (`install
/// --status-line`), in the file it goes into.
pub struct OptionalTarget {
    /// The name `Installer::opt_in` asks for it by, and reports call it.
    pub name: &'static str,
    pub target: Target,
}

/// What an adapter says about installing its harness's hooks.
pub trait HookInstall: Sync {
    /// The files our entries go into on this machine. Empty: the harness is not
    /// found, and nothing is written for it.
    fn targets(&self, host: &Host) -> Vec<Target>;
    /// Entries written only when asked for by name; wherever ours is present, a
    /// later install keeps it current, status reports it and uninstall removes it.
    fn optional(&self, _host: &Host) -> Vec<OptionalTarget> {
        Vec::new()
    }
    /// Said once, when the hooks are first installed (what the person should know).
    fn note(&self) -> Option<&'static str> {
        None
    }
    /// Where `targets` looks for the harness, as a person reads it (folders
    /// with `host.show`, commands as `` `name` on PATH ``): what a "not found"
    /// says it looked for.
    fn looked_for(&self, _host: &Host) -> Vec<String> {
        Vec::new()
    }
}

/// The state of one file, for `status`, or what `install`/`uninstall` did to it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(tag = "state", content = "reason", rename_all = "snake_case")]
pub enum FileState {
    Current,
    Outdated(String),
    Missing,
    Skipped(String),
    Inactive(String),
    /// Not written: the person's own entry holds its place and is kept.
    Kept(String),
    Installed,
    WouldInstall,
    Removed,
    /// `uninstall --dry-run`: ours are there and would be taken out.
    WouldRemove,
    NotInstalled,
}

impl FileState {
    pub fn word(&self) -> &'static str {
        match self {
            FileState::Current => "current",
            FileState::Outdated(_) => "outdated",
            FileState::Missing => "missing",
            FileState::Skipped(_) => "skipped",
            FileState::Inactive(_) => "inactive",
            FileState::Kept(_) => "kept",
            FileState::Installed => "installed",
            FileState::WouldInstall => "would install",
            FileState::Removed => "removed",
            FileState::WouldRemove => "would remove",
            FileState::NotInstalled => "not installed",
        }
    }

    /// The word as a person reads it on a line: "missing" would read as
    /// "the file is missing", so it is said as what it means.
    fn phrase(&self) -> &'static str {
        match self {
            FileState::Missing => "hooks not installed",
            other => other.word(),
        }
    }

    fn reason(&self) -> Option<&str> {
        match self {
            FileState::Outdated(r)
            | FileState::Skipped(r)
            | FileState::Inactive(r)
            | FileState::Kept(r) => Some(r),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct FileReport {
    pub path: String,
    /// The optional entry this line is about (`status-line`); none for the hooks.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub entry: Option<&'static str>,
    #[serde(flatten)]
    pub state: FileState,
}

/// One harness's result: `files` empty means the harness was not found.
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct HarnessReport {
    pub harness: String,
    pub summary: String,
    pub files: Vec<FileReport>,
    /// Not found: where it was looked for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub looked_for: Vec<String>,
}

impl HarnessReport {
    fn new(harness: &str, files: Vec<FileReport>) -> HarnessReport {
        let summary = summarise(&files);
        HarnessReport {
            harness: harness.to_string(),
            summary,
            files,
            looked_for: Vec::new(),
        }
    }

    /// One line: `claude-code: installed (~/.claude/settings.json)`.
    pub fn line(&self) -> String {
        if self.files.is_empty() {
            return match self.looked_for.as_slice() {
                [] => format!("{}: not found", self.harness),
                [one] => format!("{}: not found (looked for {one})", self.harness),
                [rest @ .., last] => format!(
                    "{}: not found (looked for {} and {last})",
                    self.harness,
                    rest.join(", ")
                ),
            };
        }
        let mut groups: Vec<(&str, Vec<String>)> = Vec::new();
        for f in &self.files {
            let place = match f.entry {
                Some(entry) => format!("{entry} in {}", f.path),
                None => f.path.clone(),
            };
            let shown = match f.state.reason() {
                Some(r) => format!("{place}: {r}"),
                None => place,
            };
            match groups.iter_mut().find(|(w, _)| *w == f.state.phrase()) {
                Some((_, v)) => v.push(shown),
                None => groups.push((f.state.phrase(), vec![shown])),
            }
        }
        let parts: Vec<String> = groups
            .into_iter()
            .map(|(w, v)| format!("{w} ({})", v.join(", ")))
            .collect();
        format!("{}: {}", self.harness, parts.join("; "))
    }
}

/// The harness's state in a word: the worst of its files'.
fn summarise(files: &[FileReport]) -> String {
    if files.is_empty() {
        return "not found".into();
    }
    let order = [
        "skipped",
        "inactive",
        "outdated",
        "missing",
        "would install",
        "installed",
        "would remove",
        "removed",
        "not installed",
        "current",
        "kept",
    ];
    let words: Vec<&str> = files.iter().map(|f| f.state.word()).collect();
    let all = |w: &str| words.iter().all(|x| *x == w);
    if all("missing") || all("current") {
        return words[0].to_string();
    }
    if words.contains(&"missing") && words.iter().all(|w| matches!(*w, "missing" | "current")) {
        return "outdated".into();
    }
    order
        .iter()
        .find(|w| words.contains(w))
        .unwrap_or(&"current")
        .to_string()
}

/// Options shared by the three commands.
pub struct Installer<'a> {
    pub host: &'a Host,
    pub state_dir: &'a Path,
    /// The hook binary our entries run (absolute).
    pub hook_bin: &'a Path,
    pub dry_run: bool,
    /// Optional entries `install` writes (`HookInstall::optional` names).
    pub opt_in: &'a [&'a str],
}

impl Installer<'_> {
    /// The state of `harness`'s entries (its hooks as `hooks` writes them).
    pub fn status(&self, harness: &str, hooks: &dyn HookInstall) -> HarnessReport {
        self.each_target(harness, hooks, false, |t, _, ctx| self.file_status(t, ctx))
    }

    pub fn install(
        &self,
        harness: &str,
        hooks: &dyn HookInstall,
    ) -> Result<(HarnessReport, Option<&'static str>), LedgerError> {
        let mut ledger = ledger::Ledger::load(self.state_dir)?;
        let report = self.each_target(harness, hooks, true, |t, _, ctx| {
            self.install_file(&mut ledger, t, ctx)
        });
        if !self.dry_run {
            ledger.save()?;
        }
        // Said when this install wrote a file (installed, or written but switched
        // off in the harness: the person needs the note either way).
        let first_install = ledger.first_write();
        let note = hooks.note().filter(|_| first_install);
        Ok((report, note))
    }

    pub fn uninstall(
        &self,
        harness: &str,
        hooks: &dyn HookInstall,
    ) -> Result<HarnessReport, LedgerError> {
        let mut ledger = ledger::Ledger::load(self.state_dir)?;
        let report = self.each_target(harness, hooks, false, |t, others, ctx| {
            self.uninstall_file(&mut ledger, t, others, ctx)
        });
        if !self.dry_run {
            ledger.save()?;
        }
        Ok(report)
    }

    /// Acts on every target: the hooks', then each optional entry that is ours
    /// in its file already, or (for `install`) that `opt_in` asks for. `act` is
    /// also handed the formats of the other targets in the same file.
    fn each_target(
        &self,
        harness: &str,
        hooks: &dyn HookInstall,
        installing: bool,
        mut act: impl FnMut(&Target, &[&'static dyn ConfigFormat], &Ctx<'_>) -> FileState,
    ) -> HarnessReport {
        let ctx = Ctx {
            harness,
            hook_bin: self.hook_bin,
        };
        let mut targets: Vec<(Target, Option<&'static str>)> = hooks
            .targets(self.host)
            .into_iter()
            .map(|t| (t, None))
            .collect();
        for o in hooks.optional(self.host) {
            let asked = installing && self.opt_in.contains(&o.name);
            if asked || self.ours_in(&o.target, &ctx) {
                targets.push((o.target, Some(o.name)));
            }
        }
        let files = targets
            .iter()
            .enumerate()
            .map(|(i, (t, entry))| {
                let others: Vec<&'static dyn ConfigFormat> = targets
                    .iter()
                    .enumerate()
                    .filter(|(j, (o, _))| *j != i && o.path == t.path)
                    .map(|(_, (o, _))| o.format)
                    .collect();
                FileReport {
                    path: self.host.show(&t.path),
                    entry: *entry,
                    state: act(t, &others, &ctx),
                }
            })
            .collect();
        let mut report = HarnessReport::new(harness, files);
        if report.files.is_empty() {
            report.looked_for = hooks.looked_for(self.host);
        }
        report
    }

    /// True when `target`'s file holds an entry of ours, current or not (a
    /// read-only file's included: status and uninstall report it there).
    fn ours_in(&self, target: &Target, ctx: &Ctx<'_>) -> bool {
        let Ok(disk) = disk::read(&target.path) else {
            return false;
        };
        matches!(
            entries(target, ctx, &disk),
            FileState::Current | FileState::Outdated(_) | FileState::Inactive(_)
        )
    }

    fn file_status(&self, target: &Target, ctx: &Ctx<'_>) -> FileState {
        match disk::read(&target.path) {
            Ok(disk) => status_of(target, ctx, &disk),
            Err(why) => FileState::Skipped(why.to_string()),
        }
    }

    fn install_file(
        &self,
        ledger: &mut ledger::Ledger,
        target: &Target,
        ctx: &Ctx<'_>,
    ) -> FileState {
        let path = &target.path;
        let disk = match disk::read(path) {
            Ok(d) => d,
            Err(why) => return FileState::Skipped(why.to_string()),
        };
        let before = match status_of(target, ctx, &disk) {
            s @ (FileState::Current | FileState::Skipped(_) | FileState::Inactive(_)) => return s,
            s => s,
        };
        let current = disk.text.as_deref();
        if before == FileState::Missing
            && let Some(why) = current.and_then(|t| target.format.occupied(t))
        {
            return FileState::Kept(why);
        }
        let text = current.unwrap_or_default();
        // Keyed on the path the person has (a link's own path, not its target's).
        let original = ledger
            .original(path)
            .flatten()
            .and_then(|b| String::from_utf8(b).ok());
        let cleaned = if before == FileState::Missing {
            Ok(text.to_string())
        } else {
            target
                .format
                .remove(text, original.as_deref().or(current), ctx)
        };
        let new_text = match cleaned.and_then(|t| target.format.add(&t, ctx)) {
            Ok(t) => t,
            Err(why) => return FileState::Skipped(why.to_string()),
        };
        if self.dry_run {
            return FileState::WouldInstall;
        }
        if let Err(why) = ledger.keep_original(ctx.harness, path, current.map(str::as_bytes)) {
            return FileState::Skipped(why.to_string());
        }
        if let Err(why) = disk.write(&new_text) {
            return FileState::Skipped(why.to_string());
        }
        ledger.set_written(path, new_text.as_bytes());
        match target.format.inactive(&new_text) {
            Some(why) => FileState::Inactive(why),
            None => FileState::Installed,
        }
    }

    /// Removes our entries of `target`'s format. `others` are the formats of the
    /// other targets in the same file: while one of them still has entries of
    /// ours there, the file keeps the rest and the original waits for the last.
    fn uninstall_file(
        &self,
        ledger: &mut ledger::Ledger,
        target: &Target,
        others: &[&'static dyn ConfigFormat],
        ctx: &Ctx<'_>,
    ) -> FileState {
        let path = &target.path;
        let disk = match disk::read(path) {
            Ok(d) => d,
            Err(why) => return FileState::Skipped(why.to_string()),
        };
        let Some(text) = disk.text.as_deref() else {
            return FileState::NotInstalled;
        };
        if text.trim().is_empty() {
            return FileState::NotInstalled;
        }
        if let Err(why) = target.format.judge(text, ctx) {
            return FileState::Skipped(why.to_string());
        }
        let original = ledger.original(path);
        let original_text = original
            .clone()
            .flatten()
            .and_then(|b| String::from_utf8(b).ok());
        let removed = match target.format.remove(text, original_text.as_deref(), ctx) {
            Ok(t) => t,
            Err(why) => return FileState::Skipped(why.to_string()),
        };
        if removed == text {
            return FileState::NotInstalled;
        }
        // Ours are in a file the person made read-only since: theirs to unlock.
        if let Err(why) = disk.writable() {
            return FileState::Skipped(why.to_string());
        }
        if self.dry_run {
            return FileState::WouldRemove;
        }
        let untouched = ledger
            .record(path)
            .is_some_and(|r| r.written == ledger::sha256_hex(text.as_bytes()));
        let ours_remain = others.iter().any(|f| {
            matches!(
                f.judge(&removed, ctx),
                Ok(EntryState::Current | EntryState::Outdated(_))
            )
        });
        if ours_remain {
            if let Err(why) = disk.write(&removed) {
                return FileState::Skipped(why.to_string());
            }
            // Nobody else wrote it: the last removal may still give back the original.
            if untouched {
                ledger.set_written(path, removed.as_bytes());
            }
            return FileState::Removed;
        }
        // The original can hold entries of ours too (the state dir was reset, or an
        // older version installed before this ledger existed): those never come back.
        let original_clean = original_text.as_deref().map(|o| {
            std::iter::once(target.format)
                .chain(others.iter().copied())
                .fold(o.to_string(), |text, f| {
                    f.remove(&text, Some(o), ctx).unwrap_or(text)
                })
        });
        // A file we created goes again; through a symlink, only our entries do
        // (`OnDisk::remove_or_write`).
        let result = match (untouched, &original, original_clean) {
            (_, _, _) if target.owned && is_empty_shell(&removed) => disk.remove_or_write(&removed),
            // Nobody wrote the file since we did: give back the original bytes.
            (true, Some(Some(_)), Some(clean)) => disk.write(&clean),
            (true, Some(None), _) => disk.remove_or_write(&removed),
            _ => disk.write(&removed),
        };
        if let Err(why) = result {
            return FileState::Skipped(why.to_string());
        }
        ledger.forget(path);
        FileState::Removed
    }
}

/// Our entries in the file as it is on disk, whether or not it can be written.
fn entries(target: &Target, ctx: &Ctx<'_>, disk: &disk::OnDisk) -> FileState {
    let text = match disk.text.as_deref() {
        None => return FileState::Missing,
        Some(t) if t.trim().is_empty() => return FileState::Missing,
        Some(t) => t,
    };
    match target.format.judge(text, ctx) {
        Err(why) => FileState::Skipped(why.to_string()),
        Ok(EntryState::Current) => match target.format.inactive(text) {
            Some(why) => FileState::Inactive(why),
            None => FileState::Current,
        },
        Ok(EntryState::Missing) => FileState::Missing,
        Ok(EntryState::Outdated(why)) => FileState::Outdated(why),
    }
}

/// What `install` would find: our entries, or why it cannot write where they
/// are missing or outdated (a read-only file whose entries are current is
/// current: nothing needs writing).
fn status_of(target: &Target, ctx: &Ctx<'_>, disk: &disk::OnDisk) -> FileState {
    match entries(target, ctx, disk) {
        s @ (FileState::Missing | FileState::Outdated(_)) => match disk.writable() {
            Ok(()) => s,
            Err(why) => FileState::Skipped(why.to_string()),
        },
        s => s,
    }
}

/// Why the hook binary our entries would run cannot be named.
#[derive(Debug, thiserror::Error)]
pub enum HookBinaryError {
    #[error("cannot find this executable: {0}")]
    NoExe(std::io::Error),
    #[error("the hook binary {0} does not exist")]
    Missing(PathBuf),
    #[error("{0}: {1}")]
    Unresolved(PathBuf, std::io::Error),
}

/// The hook binary our entries should run: `$SESSIONPIPE_HOOK_BIN`, else the
/// `sessionpipe-hook` beside this executable.
pub fn hook_binary() -> Result<PathBuf, HookBinaryError> {
    let path = match std::env::var_os("SESSIONPIPE_HOOK_BIN").filter(|v| !v.is_empty()) {
        Some(p) => PathBuf::from(p),
        None => std::env::current_exe()
            .map_err(HookBinaryError::NoExe)?
            .with_file_name(format!("sessionpipe-hook{}", std::env::consts::EXE_SUFFIX)),
    };
    if !path.is_file() {
        return Err(HookBinaryError::Missing(path));
    }
    std::fs::canonicalize(&path).map_err(|e| HookBinaryError::Unresolved(path, e))
}
