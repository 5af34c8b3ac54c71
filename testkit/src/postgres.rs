//! A throwaway PostgreSQL server for tests: the real one, from the system's package.
//!
//! [`Postgres::start`] makes a fresh temporary folder, runs `initdb` in it (user
//! `sessionpipe`, trust authentication, UTF-8, no locale) and starts `postgres` on a
//! free port of 127.0.0.1 with durability off (`fsync`, `synchronous_commit` and
//! `full_page_writes`: tests only), its log in the folder for error messages. It
//! creates databases, restarts the server on the same port and data, and on drop
//! stops it (fast shutdown, then a kill after 5 s) and removes the folder.
//!
//! The binaries come from `$SESSIONPIPE_PG_BIN`, else the newest
//! `/usr/lib/postgresql/*/bin` (Debian's layout), else `pg_config --bindir`. As
//! root (CI), where `initdb` refuses to run, the server's own commands run as the
//! `postgres` system user the package creates (`setpriv`), the folder given to it;
//! the client commands (`createdb`, `pg_isready`, `psql`) run as the caller.
//! When PostgreSQL is not installed a test says so in one line and passes (see
//! [`start_or_skip`]), unless `SESSIONPIPE_REQUIRE_HARNESSES=1` (set by
//! `scripts/test.sh`), where that is a failure, as for the real harnesses.
//!
//! It never installs anything, never touches a system cluster or its port (5432
//! is only used if the system hands it out as free), and listens on 127.0.0.1
//! only. A server kept in a `static` is never dropped: keep one per test.

use std::fmt;
use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The database user `initdb` creates (the superuser) and every client uses.
pub const USER: &str = "sessionpipe";

/// The variable naming the folder of the server binaries, over the search.
pub const BIN_ENV: &str = "SESSIONPIPE_PG_BIN";

/// The system user the server runs as when the tests run as root.
const SERVER_USER: &str = "postgres";

/// What a folder must hold to be used.
const TOOLS: [&str; 5] = ["initdb", "postgres", "pg_ctl", "pg_isready", "createdb"];

/// How long the server may take to accept connections.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// How long a shutdown may take before the server is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(5);

/// Why there is no server.
#[derive(Debug)]
pub enum PgError {
    /// PostgreSQL is not installed (or cannot run here): what was looked for.
    Missing(String),
    /// A database name outside `[a-z0-9_]{1,63}`.
    BadName(String),
    /// A step failed: which, and what it said (the server log's tail when the
    /// server was involved).
    Failed { step: String, detail: String },
}

impl fmt::Display for PgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PgError::Missing(what) => write!(f, "PostgreSQL is not available: {what}"),
            PgError::BadName(name) => {
                write!(f, "bad database name {name:?}: use 1 to 63 of [a-z0-9_]")
            }
            PgError::Failed { step, detail } => write!(f, "{step} failed:\n{detail}"),
        }
    }
}

impl std::error::Error for PgError {}

/// The system user the server's commands run as (when the caller is root).
#[derive(Debug, Clone)]
struct RunAs {
    uid: u32,
    gid: u32,
}

/// Where the binaries are, and whom the server runs as.
#[derive(Debug, Clone)]
struct Install {
    bin: PathBuf,
    run_as: Option<RunAs>,
}

impl Install {
    /// A server command (`initdb`, `postgres`, `pg_ctl`): as the server's user
    /// when there is one, in `dir`, with no `PG*` variable of the caller's.
    fn server(&self, tool: &str, dir: &Path) -> Command {
        let mut cmd = match &self.run_as {
            Some(who) => {
                let mut c = Command::new("setpriv");
                c.arg(format!("--reuid={}", who.uid))
                    .arg(format!("--regid={}", who.gid))
                    .arg("--init-groups")
                    .arg("--")
                    .arg(self.bin.join(tool));
                c
            }
            None => Command::new(self.bin.join(tool)),
        };
        cmd.current_dir(dir).stdin(Stdio::null());
        clean_env(&mut cmd);
        cmd
    }

    /// A client command (`createdb`, `pg_isready`, `psql`), as the caller.
    fn client(&self, tool: &str) -> Command {
        let mut cmd = Command::new(self.bin.join(tool));
        cmd.stdin(Stdio::null());
        clean_env(&mut cmd);
        cmd
    }
}

/// Drops the caller's `PG*` variables (`PGSSLMODE`, `PGOPTIONS`, ...): every
/// command here says what it means on its command line.
fn clean_env(cmd: &mut Command) {
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("PG") {
            cmd.env_remove(key);
        }
    }
}

/// Whether `dir` holds every tool this module runs.
fn has_tools(dir: &Path) -> bool {
    TOOLS.iter().all(|t| dir.join(t).is_file())
}

/// A version folder's name as numbers for sorting (`15`, `9.6`), if it is one.
fn version_key(name: &str) -> Option<Vec<u32>> {
    name.split('.').map(|p| p.parse().ok()).collect()
}

/// The folder of the server binaries (see the module doc for the order).
fn find_bin() -> Result<PathBuf, PgError> {
    if let Some(dir) = std::env::var_os(BIN_ENV).filter(|v| !v.is_empty()) {
        let dir = PathBuf::from(dir);
        return if has_tools(&dir) {
            Ok(dir)
        } else {
            Err(PgError::Missing(format!(
                "${BIN_ENV}={} does not hold {}",
                dir.display(),
                TOOLS.join(", ")
            )))
        };
    }
    let mut versions: Vec<(Vec<u32>, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let key = version_key(&e.file_name().to_string_lossy())?;
            Some((key, e.path().join("bin")))
        })
        .collect();
    versions.sort_by(|a, b| b.0.cmp(&a.0));
    if let Some((_, dir)) = versions.into_iter().find(|(_, d)| has_tools(d)) {
        return Ok(dir);
    }
    if let Ok(out) = Command::new("pg_config")
        .arg("--bindir")
        .stderr(Stdio::null())
        .output()
    {
        let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if out.status.success() && has_tools(&dir) {
            return Ok(dir);
        }
    }
    Err(PgError::Missing(format!(
        "no {} in ${BIN_ENV}, /usr/lib/postgresql/*/bin or `pg_config --bindir`",
        TOOLS.join(", ")
    )))
}

/// `id <args>` as a number, if it answers.
fn id(args: &[&str]) -> Option<u32> {
    let out = Command::new("id")
        .args(args)
        .stderr(Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

/// The binaries, and the server's user when the caller is root.
fn install() -> Result<Install, PgError> {
    let bin = find_bin()?;
    let run_as = if id(&["-u"]) == Some(0) {
        match (id(&["-u", SERVER_USER]), id(&["-g", SERVER_USER])) {
            (Some(uid), Some(gid)) => Some(RunAs { uid, gid }),
            _ => {
                return Err(PgError::Missing(format!(
                    "running as root, initdb needs another user: no `{SERVER_USER}` system user"
                )));
            }
        }
    } else {
        None
    };
    Ok(Install { bin, run_as })
}

/// Whether a server can be started here (the binaries are installed, and the
/// `postgres` user exists when running as root).
pub fn available() -> bool {
    install().is_ok()
}

/// A started server for `test`; when PostgreSQL is not installed, one line says
/// so and the test passes (`None`), unless `SESSIONPIPE_REQUIRE_HARNESSES=1`,
/// where it panics. Installed but failing to start is always a panic.
pub fn start_or_skip(test: &str) -> Option<Postgres> {
    match Postgres::start() {
        Ok(pg) => Some(pg),
        Err(PgError::Missing(what)) => {
            if std::env::var("SESSIONPIPE_REQUIRE_HARNESSES").as_deref() == Ok("1") {
                panic!("{test}: PostgreSQL is required: {what}: run scripts/test.sh");
            }
            eprintln!(
                "skipped: {test}: PostgreSQL is not available: {what} (apt-get install postgresql)"
            );
            None
        }
        Err(e) => panic!("{test}: {e}"),
    }
}

/// A port of 127.0.0.1 that was free a moment ago.
fn free_port() -> Result<u16, PgError> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| failed("finding a free port", e))
}

fn failed(step: &str, e: impl fmt::Display) -> PgError {
    PgError::Failed {
        step: step.to_string(),
        detail: e.to_string(),
    }
}

/// The last `lines` lines of `text`.
fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Waits up to `limit` for `child` to exit; whether it did.
fn wait_for(child: &mut Child, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(_)) | Err(_) => return true,
            Ok(None) if Instant::now() >= deadline => return false,
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// A private PostgreSQL server in a temporary folder (see the module doc).
pub struct Postgres {
    install: Install,
    port: u16,
    data: PathBuf,
    log: PathBuf,
    child: Option<Child>,
    // Last: removed after `Drop::drop` has stopped the server.
    dir: tempfile::TempDir,
}

impl Postgres {
    /// A fresh cluster, started and accepting connections on 127.0.0.1.
    pub fn start() -> Result<Postgres, PgError> {
        let install = install()?;
        let dir = tempfile::Builder::new()
            .prefix("sessionpipe-pg-")
            .tempdir()
            .map_err(|e| failed("making a temp folder", e))?;
        #[cfg(unix)]
        if let Some(who) = &install.run_as {
            std::os::unix::fs::chown(dir.path(), Some(who.uid), Some(who.gid))
                .map_err(|e| failed("giving the temp folder to the postgres user", e))?;
        }
        let data = dir.path().join("data");
        let out = install
            .server("initdb", dir.path())
            .arg("-D")
            .arg(&data)
            .args(["-U", USER, "--auth=trust", "-E", "UTF8", "--no-locale"])
            .arg("--no-sync")
            .output()
            .map_err(|e| failed("running initdb", e))?;
        if !out.status.success() {
            return Err(PgError::Failed {
                step: format!("initdb ({})", out.status),
                detail: tail(
                    &format!(
                        "{}{}",
                        String::from_utf8_lossy(&out.stdout),
                        String::from_utf8_lossy(&out.stderr)
                    ),
                    30,
                ),
            });
        }
        let log = dir.path().join("server.log");
        let mut pg = Postgres {
            install,
            port: 0,
            data,
            log,
            child: None,
            dir,
        };
        // The free port can be taken between the probe and the bind: try again.
        for attempt in 1.. {
            pg.port = free_port()?;
            match pg.launch() {
                Ok(()) => break,
                Err(_) if attempt < 3 && pg.log_text().contains("could not bind") => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(pg)
    }

    /// The server's port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The temporary folder (the data folder, the socket and the log are in it).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The server's process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// The server's log so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// `postgres://sessionpipe@127.0.0.1:PORT/DB`.
    pub fn url(&self, db: &str) -> String {
        format!("postgres://{USER}@127.0.0.1:{}/{db}", self.port)
    }

    /// Creates database `name` (`[a-z0-9_]{1,63}`) and gives its URL.
    pub fn create_database(&self, name: &str) -> Result<String, PgError> {
        check_name(name)?;
        let out = self
            .install
            .client("createdb")
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                USER,
                "-w",
            ])
            .arg(name)
            .output()
            .map_err(|e| failed("running createdb", e))?;
        if !out.status.success() {
            return Err(PgError::Failed {
                step: format!("createdb {name} ({})", out.status),
                detail: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            });
        }
        Ok(self.url(name))
    }

    /// Runs `sql` in database `db` with the package's `psql` and gives its
    /// unaligned, tuples-only output, trimmed (`select 1` gives `1`).
    pub fn psql(&self, db: &str, sql: &str) -> Result<String, PgError> {
        check_name(db)?;
        if !self.install.bin.join("psql").is_file() {
            return Err(PgError::Missing(format!(
                "no psql in {}",
                self.install.bin.display()
            )));
        }
        let out = self
            .install
            .client("psql")
            .args(["-X", "-w", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1"])
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "-U", USER])
            .args(["-d", db, "-c", sql])
            .output()
            .map_err(|e| failed("running psql", e))?;
        if !out.status.success() {
            return Err(PgError::Failed {
                step: format!("psql -d {db} -c {sql:?} ({})", out.status),
                detail: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            });
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    /// Stops the server (fast shutdown) and starts it again on the same port and
    /// data folder, waiting until it accepts connections.
    pub fn restart(&mut self) -> Result<(), PgError> {
        self.stop();
        self.launch()
    }

    /// Whether the server accepts connections now.
    fn ready(&self) -> bool {
        self.install
            .client("pg_isready")
            .args(["-q", "-h", "127.0.0.1", "-p", &self.port.to_string()])
            .args(["-U", USER, "-d", "postgres", "-t", "2"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    /// Starts the server on `self.port` and waits until it accepts connections.
    fn launch(&mut self) -> Result<(), PgError> {
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .map_err(|e| failed("opening the server log", e))?;
        let log_err = log
            .try_clone()
            .map_err(|e| failed("opening the server log", e))?;
        let dir = self.dir.path().to_path_buf();
        let child = self
            .install
            .server("postgres", &dir)
            .arg("-D")
            .arg(&self.data)
            .arg("-k")
            .arg(&dir)
            .args(["-c", "listen_addresses=127.0.0.1"])
            .args(["-p", &self.port.to_string()])
            .args(["-c", "fsync=off", "-c", "synchronous_commit=off"])
            .args(["-c", "full_page_writes=off", "-c", "max_connections=200"])
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(log_err))
            .spawn()
            .map_err(|e| failed("starting postgres", e))?;
        self.child = Some(child);
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            let exited = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten());
            if let Some(status) = exited {
                self.child = None;
                return Err(PgError::Failed {
                    step: format!("postgres on port {} (exited: {status})", self.port),
                    detail: tail(&self.log_text(), 30),
                });
            }
            if self.ready() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                self.stop();
                return Err(PgError::Failed {
                    step: format!(
                        "postgres on port {} (no connections within {} s)",
                        self.port,
                        START_TIMEOUT.as_secs()
                    ),
                    detail: tail(&self.log_text(), 30),
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Stops the server: a fast shutdown (SIGINT, by `pg_ctl kill` as the
    /// server's user), then SIGKILL if it still runs after 5 s; always reaped.
    fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let asked = self
            .install
            .server("pg_ctl", self.dir.path())
            .args(["kill", "INT", &child.id().to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !asked || !wait_for(&mut child, STOP_TIMEOUT) {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.stop();
        // `dir` (a TempDir) is removed when the fields drop, after this.
    }
}

impl fmt::Debug for Postgres {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Postgres")
            .field("port", &self.port)
            .field("dir", &self.dir.path())
            .field("pid", &self.pid())
            .finish()
    }
}

/// A database name this module accepts: 1 to 63 of `[a-z0-9_]`.
fn check_name(name: &str) -> Result<(), PgError> {
    let ok = (1..=63).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(PgError::BadName(name.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serves_two_databases_survives_a_restart_and_leaves_nothing() {
        let Some(mut pg) = start_or_skip("postgres: serves, restarts, cleans up") else {
            return;
        };
        let a = pg.create_database("sp_a").expect("database sp_a");
        assert_eq!(
            a,
            format!("postgres://sessionpipe@127.0.0.1:{}/sp_a", pg.port())
        );
        assert_eq!(pg.create_database("sp_b").unwrap(), pg.url("sp_b"));
        assert!(matches!(
            pg.create_database("sp_a"),
            Err(PgError::Failed { .. })
        ));
        assert_eq!(pg.psql("sp_a", "select 1").unwrap(), "1");
        pg.psql(
            "sp_b",
            "create table t (v text); insert into t values ('kept')",
        )
        .unwrap();

        let (port, first) = (pg.port(), pg.pid().expect("running"));
        pg.restart().expect("restarted");
        assert_eq!(pg.port(), port, "same port after a restart");
        assert_ne!(pg.pid().expect("running again"), first);
        assert_eq!(pg.psql("sp_a", "select 1").unwrap(), "1");
        assert_eq!(pg.psql("sp_b", "select v from t").unwrap(), "kept");

        let pid = pg.pid().expect("running");
        let dir = pg.dir().to_path_buf();
        let install = pg.install.clone();
        drop(pg);
        assert!(!dir.exists(), "{} is removed", dir.display());
        if Path::new("/proc/self").exists() {
            assert!(
                !Path::new(&format!("/proc/{pid}")).exists(),
                "postgres {pid} is gone"
            );
        }
        let answered = install
            .client("pg_isready")
            .args(["-q", "-h", "127.0.0.1", "-p", &port.to_string(), "-t", "1"])
            .status()
            .unwrap();
        assert_eq!(answered.code(), Some(2), "nothing answers on port {port}");
    }

    #[test]
    fn database_names_are_checked() {
        for good in ["a", "sp_1", &"x".repeat(63)] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in ["", "A", "a-b", "a b", "é", "x;drop", &"x".repeat(64)] {
            assert!(matches!(check_name(bad), Err(PgError::BadName(_))), "{bad}");
        }
    }

    #[test]
    fn versions_sort_newest_first() {
        let mut v: Vec<Vec<u32>> = ["9.6", "15", "10", "16"]
            .iter()
            .filter_map(|n| version_key(n))
            .collect();
        v.sort_by(|a, b| b.cmp(a));
        assert_eq!(v, vec![vec![16], vec![15], vec![10], vec![9, 6]]);
        assert_eq!(version_key("bin"), None);
    }
}
