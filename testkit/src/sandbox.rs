//! A temporary home and state dir, and the project's real binaries run inside it.
//!
//! Tests drive sessionpipe the way a harness and a person do: the hook binary with
//! a payload on stdin, the `sessionpipe` CLI, a daemon process. Nothing here
//! touches the real home or state dir: every command gets a cleared environment
//! with `HOME` and `SESSIONPIPE_STATE_DIR` inside the sandbox.

use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The folder cargo put the workspace's binaries in (`target/debug`), found from
/// the running test executable (`target/debug/deps/<test>`).
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable has a path");
    let deps = exe.parent().expect("the test executable is in a folder");
    if deps.ends_with("deps") {
        deps.parent().expect("deps has a parent").to_path_buf()
    } else {
        deps.to_path_buf()
    }
}

/// A `sessionpipe-receiver` process (or any program whose first line on
/// stdout is its base URL), killed when dropped.
pub struct UrlProcess {
    pub child: Child,
    /// The first line it printed, trimmed.
    pub url: String,
}

impl UrlProcess {
    /// Starts `cmd` with stdout piped (stderr dropped) and reads its first line.
    pub fn spawn(mut cmd: Command) -> UrlProcess {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{cmd:?} does not start: {e}"));
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().expect("piped")),
            &mut line,
        )
        .expect("its first line");
        UrlProcess {
            child,
            url: line.trim().to_string(),
        }
    }
}

impl Drop for UrlProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A binary of this workspace, which must have been built.
pub fn bin(name: &str) -> PathBuf {
    let p = target_dir().join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(
        p.is_file(),
        "{} is missing: run `cargo build --workspace --bins` before the tests",
        p.display()
    );
    p
}

pub struct Sandbox {
    dir: tempfile::TempDir,
    pub home: PathBuf,
    pub state: PathBuf,
    /// The umask every process started here runs under (`with_umask`).
    umask: Option<u32>,
}

impl Default for Sandbox {
    fn default() -> Self {
        Sandbox::new()
    }
}

impl Sandbox {
    pub fn new() -> Sandbox {
        let dir = tempfile::Builder::new()
            .prefix("sp-test-")
            .tempdir()
            .expect("a temp dir");
        let home = dir.path().join("home");
        let state = dir.path().join("state");
        std::fs::create_dir_all(&home).expect("a home");
        Sandbox {
            dir,
            home,
            state,
            umask: None,
        }
    }

    /// Every process this sandbox starts (commands, hooks, daemons) runs
    /// under `mask`, set by `/bin/sh` before it `exec`s the program (the pid
    /// stays the program's). A mask that lets others read what a process
    /// makes shows a file it did not make private itself. Unix only.
    pub fn with_umask(mut self, mask: u32) -> Sandbox {
        self.umask = Some(mask);
        self
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// A command with a cleared environment pointing into the sandbox.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = match self.umask {
            Some(mask) => {
                let mut sh = Command::new("/bin/sh");
                sh.arg("-c")
                    .arg(format!("umask {mask:03o} && exec \"$0\" \"$@\""))
                    .arg(program);
                sh
            }
            None => Command::new(program),
        };
        c.env_clear()
            .env("HOME", &self.home)
            .env("SESSIONPIPE_STATE_DIR", &self.state)
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("LANG", "C.UTF-8")
            .env("NO_COLOR", "1")
            .current_dir(&self.home);
        c
    }

    /// `PATH` with `dir` first: how an installer finds a harness's binary.
    pub fn path_with(dir: &Path) -> String {
        format!(
            "{}:{}",
            dir.display(),
            std::env::var("PATH").unwrap_or_default()
        )
    }

    /// `sessionpipe ARGS...`, waited for.
    pub fn sessionpipe(&self, args: &[&str]) -> Output {
        self.command(bin("sessionpipe"))
            .args(args)
            .output()
            .expect("sessionpipe runs")
    }

    /// `sessionpipe ARGS` that must succeed: its stdout (a failure panics
    /// with its stderr).
    pub fn sessionpipe_ok(&self, args: &[&str]) -> String {
        let out = self.sessionpipe(args);
        assert!(
            out.status.success(),
            "sessionpipe {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("sessionpipe writes UTF-8")
    }

    /// `sessionpipe-hook HARNESS EVENT` with `stdin`, waited for, as a harness runs it.
    pub fn hook(&self, harness: &str, event: &str, stdin: &[u8]) -> Output {
        self.hook_with(harness, event, stdin, &[])
    }

    pub fn hook_with(
        &self,
        harness: &str,
        event: &str,
        stdin: &[u8],
        env: &[(&str, &str)],
    ) -> Output {
        let mut c = self.command(bin("sessionpipe-hook"));
        c.args([harness, event]).envs(env.iter().copied());
        run_with_stdin(c, stdin)
    }

    /// Starts `sessionpipe daemon` and waits until it answers wakes.
    pub fn start_daemon(&self) -> Daemon {
        self.start_daemon_with(&[])
    }

    /// `start_daemon` with extra environment (e.g. `SESSIONPIPE_JOB_ARCHIVE`).
    pub fn start_daemon_with(&self, env: &[(&str, &std::ffi::OsStr)]) -> Daemon {
        let child = self
            .command(bin("sessionpipe"))
            .arg("daemon")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the daemon starts");
        let sock = self.state.join("wake.sock");
        let deadline = Instant::now() + Duration::from_secs(10);
        // A killed daemon leaves its socket file: wait for one that answers.
        while !answers(&sock) {
            assert!(
                Instant::now() < deadline,
                "the daemon did not bind {}",
                sock.display()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        Daemon { child }
    }

    /// The first event of `kind` after the first `before` events of the
    /// outbox, waited for.
    pub fn wait_event_after(&self, before: usize, kind: &str, timeout: Duration) -> Value {
        let later = |evs: &[Value]| -> Option<Value> {
            evs.get(before..)?
                .iter()
                .find(|e| e["type"] == kind)
                .cloned()
        };
        let evs = self.wait_until(timeout, |evs| later(evs).is_some());
        later(&evs).unwrap_or_else(|| panic!("no {kind} after the first {before} events"))
    }

    /// Every event in the outbox at tier 3, in append order.
    pub fn events(&self) -> Vec<Value> {
        self.events_at(&["--tier", "3"])
    }

    /// Every event as `sessionpipe tail --json --no-follow EXTRA...` prints it.
    pub fn events_at(&self, extra: &[&str]) -> Vec<Value> {
        let mut args = vec!["tail", "--json", "--no-follow"];
        args.extend_from_slice(extra);
        let out = self.sessionpipe(&args);
        assert!(
            out.status.success(),
            "tail failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .expect("tail prints UTF-8")
            .lines()
            .map(|l| serde_json::from_str(l).expect("tail prints JSON lines"))
            .collect()
    }

    /// Waits until the outbox holds at least `n` events (or `timeout` passes).
    pub fn wait_for_events(&self, n: usize, timeout: Duration) -> Vec<Value> {
        self.wait_until(timeout, |evs| evs.len() >= n)
    }

    /// Waits until `done` holds for the outbox's events (or `timeout` passes) and
    /// returns them.
    pub fn wait_until(&self, timeout: Duration, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let deadline = Instant::now() + timeout;
        loop {
            let evs = self.events();
            if done(&evs) || Instant::now() > deadline {
                return evs;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Job files still waiting in the spool.
    pub fn spooled(&self) -> usize {
        std::fs::read_dir(self.state.join("spool"))
            .map(|rd| {
                rd.flatten()
                    .filter(|e| e.file_name().to_string_lossy().ends_with(".job"))
                    .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
                    .count()
            })
            .unwrap_or(0)
    }

    /// Waits until no drain worker or daemon holds the state dir's lock.
    pub fn wait_idle(&self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            let status = self.sessionpipe(&["status", "--json"]);
            let doc: Value = serde_json::from_slice(&status.stdout).unwrap_or(Value::Null);
            if doc["daemon"].is_null() && self.spooled() == 0 {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Runs `c` with `stdin` written to it (ignoring a closed pipe) and waits.
pub fn run_with_stdin(mut c: Command, stdin: &[u8]) -> Output {
    let mut child = c
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the command starts");
    let mut pipe = child.stdin.take().expect("stdin is piped");
    let bytes = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = pipe.write_all(&bytes);
    });
    let out = child.wait_with_output().expect("the command ends");
    let _ = writer.join();
    out
}

/// A running daemon; killed (SIGKILL) when dropped.
pub struct Daemon {
    pub child: Child,
}

impl Daemon {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Sends SIGTERM and waits for the exit: its status and how long it took.
    pub fn terminate(mut self) -> (std::process::ExitStatus, Duration) {
        let sent = Instant::now();
        let killed = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(killed.success(), "kill -TERM failed");
        let status = self.child.wait().expect("the daemon is waited for");
        (status, sent.elapsed())
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// True when a daemon is bound at the wake socket `sock` (a datagram goes in).
#[cfg(unix)]
fn answers(sock: &Path) -> bool {
    let Ok(s) = std::os::unix::net::UnixDatagram::unbound() else {
        return false;
    };
    let _ = s.set_nonblocking(true);
    match s.send_to(b"j", sock) {
        Ok(_) => true,
        Err(e) => e.kind() == std::io::ErrorKind::WouldBlock,
    }
}

#[cfg(not(unix))]
fn answers(sock: &Path) -> bool {
    sock.exists()
}
