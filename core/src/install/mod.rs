//! `sessionpipe install | uninstall | status`: our hook entries in harness configs.
//!
//! A harness's config is the person's file. Only our own entries are written or
//! removed; every other byte is kept (see `jsonedit`); a file that is not plain
//! JSON is skipped with the reason and left byte-identical; the original is kept
//! before our first write; uninstall of a file nobody touched since restores its
//! original bytes. Which files and which entries is each adapter's business
//! (`HookInstall`); the mechanics are here.

mod files;
pub mod hooks_json;
pub mod jsonedit;

use crate::adapters::{self, Adapter};
use hooks_json::EntryState;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use files::write_atomic;

/// The machine as an installer sees it: the home, the environment, `PATH`.
/// Tests build one by hand; the CLI reads the process's.
#[derive(Clone, Debug)]
pub struct Host {
    pub home: PathBuf,
    pub vars: BTreeMap<String, String>,
}

impl Host {
    pub fn from_env() -> Result<Host, String> {
        let home = crate::paths::home_dir().ok_or("HOME is not set")?;
        Ok(Host {
            home,
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
        let Some(path) = self.var("PATH") else {
            return false;
        };
        std::env::split_paths(path).any(|dir| {
            let p = dir.join(format!("{bin}{}", std::env::consts::EXE_SUFFIX));
            std::fs::metadata(&p).is_ok_and(|m| m.is_file())
        })
    }

    /// `p` with the home written `~`, for messages.
    pub fn show(&self, p: &Path) -> String {
        crate::paths::tilde(&p.to_string_lossy(), Some(&self.home))
    }
}

/// One event we register, and its matcher when the harness wants one there.
#[derive(Clone, Copy, Debug)]
pub struct HookEvent {
    pub name: &'static str,
    pub matcher: Option<&'static str>,
    /// Overrides the layout's timeout (seconds) for this event.
    pub timeout_s: Option<u64>,
}

impl HookEvent {
    pub const fn plain(name: &'static str) -> HookEvent {
        HookEvent {
            name,
            matcher: None,
            timeout_s: None,
        }
    }
    /// An event with the match-everything matcher `""`.
    pub const fn matched(name: &'static str) -> HookEvent {
        HookEvent {
            name,
            matcher: Some(""),
            timeout_s: None,
        }
    }
    pub const fn with_matcher(name: &'static str, matcher: &'static str) -> HookEvent {
        HookEvent {
            name,
            matcher: Some(matcher),
            timeout_s: None,
        }
    }
    pub const fn timeout(mut self, seconds: u64) -> HookEvent {
        self.timeout_s = Some(seconds);
        self
    }
}

/// How a harness wants its Claude-shaped hook entries written.
#[derive(Debug)]
pub struct HooksLayout {
    pub events: &'static [HookEvent],
    /// Timeout in seconds.
    pub timeout_s: u64,
    /// The harness reads timeouts in milliseconds.
    pub timeout_unit_ms: bool,
    /// A `name` the harness wants on each handler.
    pub handler_name: Option<&'static str>,
}

impl HooksLayout {
    pub fn timeout_for(&self, e: &HookEvent) -> u64 {
        let s = e.timeout_s.unwrap_or(self.timeout_s);
        if self.timeout_unit_ms { s * 1000 } else { s }
    }
}

/// What an adapter says about installing its harness's hooks.
pub trait HookInstall: Sync {
    fn layout(&self) -> &'static HooksLayout;
    /// The config files the hooks go into on this machine. Empty: the harness is
    /// not found, and nothing is written for it.
    fn config_files(&self, host: &Host) -> Vec<PathBuf>;
}

/// The state of one file, for `status`, or what `install`/`uninstall` did to it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "state", content = "reason", rename_all = "snake_case")]
pub enum FileState {
    Current,
    Outdated(String),
    Missing,
    Skipped(String),
    Inactive(String),
    Installed,
    WouldInstall,
    Removed,
    NotInstalled,
}

impl FileState {
    fn word(&self) -> &'static str {
        match self {
            FileState::Current => "current",
            FileState::Outdated(_) => "outdated",
            FileState::Missing => "missing",
            FileState::Skipped(_) => "skipped",
            FileState::Inactive(_) => "inactive",
            FileState::Installed => "installed",
            FileState::WouldInstall => "would install",
            FileState::Removed => "removed",
            FileState::NotInstalled => "not installed",
        }
    }

    fn reason(&self) -> Option<&str> {
        match self {
            FileState::Outdated(r) | FileState::Skipped(r) | FileState::Inactive(r) => Some(r),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct FileReport {
    pub path: String,
    #[serde(flatten)]
    pub state: FileState,
}

/// One harness's result: `files` empty means the harness was not found.
#[derive(Clone, Debug, Serialize)]
pub struct HarnessReport {
    pub harness: String,
    pub summary: String,
    pub files: Vec<FileReport>,
}

impl HarnessReport {
    fn new(harness: &str, files: Vec<FileReport>) -> HarnessReport {
        let summary = summarise(&files);
        HarnessReport {
            harness: harness.to_string(),
            summary,
            files,
        }
    }

    /// One line: `claude-code: installed (~/.claude/settings.json)`.
    pub fn line(&self) -> String {
        if self.files.is_empty() {
            return format!("{}: not found", self.harness);
        }
        let mut groups: Vec<(&str, Vec<String>)> = Vec::new();
        for f in &self.files {
            let shown = match f.state.reason() {
                Some(r) => format!("{}: {r}", f.path),
                None => f.path.clone(),
            };
            match groups.iter_mut().find(|(w, _)| *w == f.state.word()) {
                Some((_, v)) => v.push(shown),
                None => groups.push((f.state.word(), vec![shown])),
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
        "removed",
        "not installed",
        "current",
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
}

/// The adapters to act on: those named, or every one with an installer.
pub fn select(names: &[String]) -> Result<Vec<&'static dyn Adapter>, String> {
    if names.is_empty() {
        return Ok(adapters::REGISTRY
            .iter()
            .copied()
            .filter(|a| a.hooks().is_some())
            .collect());
    }
    names
        .iter()
        .map(|n| match adapters::lookup(n) {
            Some(a) if a.hooks().is_some() => Ok(a),
            Some(_) => Err(format!("{n} has no hook installer yet")),
            None => Err(format!(
                "unknown harness {n:?} (known: {})",
                adapters::REGISTRY
                    .iter()
                    .map(|a| a.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        })
        .collect()
}

enum Read {
    Absent,
    Text(String),
    Unreadable(String),
}

fn read(path: &Path) -> Read {
    match std::fs::read(path) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(t) => Read::Text(t),
            Err(_) => Read::Unreadable("not UTF-8 text".into()),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Read::Absent,
        Err(e) => Read::Unreadable(format!("cannot read it: {e}")),
    }
}

impl Installer<'_> {
    pub fn status(&self, adapter: &dyn Adapter) -> HarnessReport {
        self.each_file(adapter, |path, hooks| {
            self.file_status(adapter.name(), path, hooks)
        })
    }

    pub fn install(&self, adapter: &dyn Adapter) -> Result<HarnessReport, String> {
        let mut ledger = files::Ledger::load(self.state_dir)?;
        let report = self.each_file(adapter, |path, hooks| {
            self.install_file(&mut ledger, adapter.name(), path, hooks)
        });
        if !self.dry_run {
            ledger.save()?;
        }
        Ok(report)
    }

    pub fn uninstall(&self, adapter: &dyn Adapter) -> Result<HarnessReport, String> {
        let mut ledger = files::Ledger::load(self.state_dir)?;
        let report = self.each_file(adapter, |path, _| {
            self.uninstall_file(&mut ledger, adapter.name(), path)
        });
        if !self.dry_run {
            ledger.save()?;
        }
        Ok(report)
    }

    fn each_file(
        &self,
        adapter: &dyn Adapter,
        mut act: impl FnMut(&Path, &dyn HookInstall) -> FileState,
    ) -> HarnessReport {
        let hooks = adapter
            .hooks()
            .expect("select() keeps adapters with installers");
        let files = hooks
            .config_files(self.host)
            .iter()
            .map(|p| FileReport {
                path: self.host.show(p),
                state: act(p, hooks),
            })
            .collect();
        HarnessReport::new(adapter.name(), files)
    }

    fn file_status(&self, harness: &str, path: &Path, hooks: &dyn HookInstall) -> FileState {
        let text = match read(path) {
            Read::Absent => return FileState::Missing,
            Read::Text(t) if t.trim().is_empty() => return FileState::Missing,
            Read::Text(t) => t,
            Read::Unreadable(why) => return FileState::Skipped(why),
        };
        let doc = match jsonedit::Doc::parse(&text) {
            Ok(d) => d,
            Err(why) => return FileState::Skipped(why),
        };
        let found = hooks_json::find(&doc, hooks.layout(), harness, self.hook_bin);
        match hooks_json::judge(&found, hooks.layout()) {
            EntryState::Current => FileState::Current,
            EntryState::Missing => FileState::Missing,
            EntryState::Outdated(why) => FileState::Outdated(why),
        }
    }

    fn install_file(
        &self,
        ledger: &mut files::Ledger,
        harness: &str,
        path: &Path,
        hooks: &dyn HookInstall,
    ) -> FileState {
        let before = match self.file_status(harness, path, hooks) {
            FileState::Current => return FileState::Current,
            s @ FileState::Skipped(_) => return s,
            s => s,
        };
        let current = match read(path) {
            Read::Text(t) => Some(t),
            Read::Absent => None,
            Read::Unreadable(why) => return FileState::Skipped(why),
        };
        let text = current.clone().unwrap_or_default();
        let original = ledger
            .original(path)
            .flatten()
            .and_then(|b| String::from_utf8(b).ok());
        let cleaned = if before == FileState::Missing {
            Ok(text.clone())
        } else {
            hooks_json::remove_ours(&text, harness, original.as_deref().or(current.as_deref()))
        };
        let new_text = match cleaned
            .and_then(|t| hooks_json::add_ours(&t, hooks.layout(), harness, self.hook_bin))
        {
            Ok(t) => t,
            Err(why) => return FileState::Skipped(why),
        };
        if self.dry_run {
            return FileState::WouldInstall;
        }
        if let Err(why) = ledger.keep_original(harness, path, current.as_deref().map(str::as_bytes))
        {
            return FileState::Skipped(why);
        }
        if let Some(dir) = path.parent()
            && let Err(e) = std::fs::create_dir_all(dir)
        {
            return FileState::Skipped(format!("cannot create {}: {e}", dir.display()));
        }
        if let Err(e) = write_atomic(path, new_text.as_bytes()) {
            return FileState::Skipped(format!("cannot write it: {e}"));
        }
        ledger.set_written(path, new_text.as_bytes());
        FileState::Installed
    }

    fn uninstall_file(&self, ledger: &mut files::Ledger, harness: &str, path: &Path) -> FileState {
        let text = match read(path) {
            Read::Absent => return FileState::NotInstalled,
            Read::Text(t) => t,
            Read::Unreadable(why) => return FileState::Skipped(why),
        };
        if text.trim().is_empty() {
            return FileState::NotInstalled;
        }
        if let Err(why) = jsonedit::Doc::parse(&text) {
            return FileState::Skipped(why);
        }
        let original = ledger.original(path);
        let original_text = original
            .clone()
            .flatten()
            .and_then(|b| String::from_utf8(b).ok());
        let removed = match hooks_json::remove_ours(&text, harness, original_text.as_deref()) {
            Ok(t) => t,
            Err(why) => return FileState::Skipped(why),
        };
        if removed == text {
            return FileState::NotInstalled;
        }
        if self.dry_run {
            return FileState::Removed;
        }
        let untouched = ledger
            .record(path)
            .is_some_and(|r| r.written == files::sha256_hex(text.as_bytes()));
        let result = match (untouched, original) {
            // Nobody wrote the file since we did: give back the original bytes.
            (true, Some(Some(bytes))) => write_atomic(path, &bytes),
            (true, Some(None)) => std::fs::remove_file(path),
            _ => write_atomic(path, removed.as_bytes()),
        };
        if let Err(e) = result {
            return FileState::Skipped(format!("cannot write it: {e}"));
        }
        ledger.forget(path);
        FileState::Removed
    }
}

/// The hook binary our entries should run: `$SESSIONPIPE_HOOK_BIN`, else the
/// `sessionpipe-hook` beside this executable.
pub fn hook_binary() -> Result<PathBuf, String> {
    let path = match std::env::var_os("SESSIONPIPE_HOOK_BIN").filter(|v| !v.is_empty()) {
        Some(p) => PathBuf::from(p),
        None => std::env::current_exe()
            .map_err(|e| format!("cannot find this executable: {e}"))?
            .with_file_name(format!("sessionpipe-hook{}", std::env::consts::EXE_SUFFIX)),
    };
    if !path.is_file() {
        return Err(format!("the hook binary {} does not exist", path.display()));
    }
    std::fs::canonicalize(&path).map_err(|e| format!("{}: {e}", path.display()))
}
