//! Headless harness processes for control (a start, a resume, a fork): found
//! on `PATH`, started with exactly the adapter's argument list, stdin closed
//! (or, for a harness that reads its turn there, fed the turn, kept open for
//! its interrupt until the run says how the turn ended, then closed), their
//! stdout read line by line through the adapter's reader, bounded in
//! number (the rest wait their turn), in time (past the bound the process is
//! ended and the run fails) and in what is kept of them (a line of at most
//! 8 MiB, the last 4 KiB of stderr, kept by the ACP client's `StderrTail`).
//!
//! Also who holds a session: a run holds its session until it ends, so a
//! message behind it waits instead of becoming a second writer; and which
//! runs a verified `cancel` can stop (`interrupt`: the harness's own
//! interrupt line, never a signal). It never decides a rung or sends an ack;
//! `ladder` and `run` do.

use super::held::lock;
use harness::headless::{Input, Launch, Progress, StreamReader};
use sessionpipe_acp::tail::StderrTail;
use sessionpipe_verifier::SessionRef;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};

/// The longest stdout line kept (a reply with a pasted file can be long).
const MAX_LINE: usize = 8 << 20;
/// How long `<program> --help` may take.
const HELP_BOUND: Duration = Duration::from_secs(20);

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("{0} is not on this machine's PATH")]
    NotFound(String),
    #[error("{program} could not start: {source}")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    #[error("{program} did not finish within {minutes} minutes and was ended")]
    TooLong { program: String, minutes: u64 },
    /// The harness said it failed, in its own words.
    #[error("{0}")]
    Harness(String),
    #[error("{program} exited ({status}) without an answer{stderr}")]
    Exited {
        program: String,
        status: String,
        stderr: String,
    },
}

/// What a run ended with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ran {
    /// The session id the harness named.
    pub session: Option<String>,
    pub reply: String,
}

/// A start's hold on its session (given back with `Runs::start_ended`, or
/// dropped).
pub struct StartHold {
    _guard: tokio::sync::OwnedMutexGuard<()>,
    session: SessionRef,
}

/// The headless runs of one daemon.
pub struct Runs {
    slots: tokio::sync::Semaphore,
    starts: Arc<AtomicUsize>,
    held: Mutex<HashMap<SessionRef, Arc<tokio::sync::Mutex<()>>>>,
    /// The folder of each start held now (a prompt to its session may come
    /// before the harness named it anywhere).
    starting: Mutex<HashMap<SessionRef, String>>,
    helps: Mutex<HashMap<PathBuf, String>>,
    /// The runs running now that take an interrupt, by the sessions they run.
    interrupts: Arc<Mutex<HashMap<SessionRef, Arc<tokio::sync::Notify>>>>,
}

/// Takes a run's sessions out of `Runs::interrupts` when the run ends.
struct Interruptible {
    map: Arc<Mutex<HashMap<SessionRef, Arc<tokio::sync::Notify>>>>,
    sessions: Vec<SessionRef>,
}

impl Drop for Interruptible {
    fn drop(&mut self) {
        let mut map = lock(&self.map);
        for s in &self.sessions {
            map.remove(s);
        }
    }
}

/// A start reserved at admission, counted against the running cap until
/// this is dropped (its run ended, or it never began).
pub struct StartSlot {
    starts: Arc<AtomicUsize>,
}

impl Drop for StartSlot {
    fn drop(&mut self) {
        self.starts.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Runs {
    pub fn new(at_once: usize) -> Runs {
        Runs {
            slots: tokio::sync::Semaphore::new(at_once.max(1)),
            starts: Arc::default(),
            held: Mutex::default(),
            starting: Mutex::default(),
            helps: Mutex::default(),
            interrupts: Arc::default(),
        }
    }

    /// Asks the run of `session` to stop its turn, through the interrupt its
    /// harness reads on stdin; false when no run of it here takes one.
    pub fn interrupt(&self, session: &SessionRef) -> bool {
        match lock(&self.interrupts).get(session) {
            Some(stop) => {
                stop.notify_one();
                true
            }
            None => false,
        }
    }

    /// Whether a run of `session` that takes an interrupt is running.
    pub fn interruptible(&self, session: &SessionRef) -> bool {
        lock(&self.interrupts).contains_key(session)
    }

    /// Every session a run that takes an interrupt is running now.
    pub fn interruptible_sessions(&self) -> Vec<SessionRef> {
        lock(&self.interrupts).keys().cloned().collect()
    }

    /// Reserves a start against `cap` running at once (admission does, so
    /// two starts in one poll count both); false past the cap. The run that
    /// follows takes it over with `started`.
    pub fn reserve_start(&self, cap: usize) -> bool {
        self.starts
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < cap).then_some(n + 1)
            })
            .is_ok()
    }

    /// Takes over a start reserved at admission; `readmitted`: one admitted
    /// before a restart, whose cap was checked then and which reserved
    /// nothing in this process.
    pub fn started(&self, readmitted: bool) -> StartSlot {
        if readmitted {
            self.starts.fetch_add(1, Ordering::SeqCst);
        }
        StartSlot {
            starts: self.starts.clone(),
        }
    }

    pub fn starts_running(&self) -> usize {
        self.starts.load(Ordering::SeqCst)
    }

    /// The lock a run of `session` holds while it runs.
    pub fn hold(&self, session: &SessionRef) -> Arc<tokio::sync::Mutex<()>> {
        let mut held = lock(&self.held);
        // Forget the locks nobody holds or waits on, so the map stays small.
        held.retain(|_, l| Arc::strong_count(l) > 1);
        held.entry(session.clone()).or_default().clone()
    }

    /// Holds `session` for a start at once (before its task runs), so a
    /// message admitted right after it waits for it; `None` when something
    /// holds it already.
    pub fn hold_start(&self, session: &SessionRef, cwd: &str) -> Option<StartHold> {
        let guard = self.hold(session).try_lock_owned().ok()?;
        lock(&self.starting).insert(session.clone(), cwd.to_string());
        Some(StartHold {
            _guard: guard,
            session: session.clone(),
        })
    }

    /// The folder of a start that holds `session` now.
    pub fn starting_in(&self, session: &SessionRef) -> Option<String> {
        lock(&self.starting).get(session).cloned()
    }

    /// A start's hold ended.
    pub fn start_ended(&self, hold: StartHold) {
        lock(&self.starting).remove(&hold.session);
    }

    /// True while a run of `session` runs (or waits its turn).
    pub fn is_held(&self, session: &SessionRef) -> bool {
        let held = lock(&self.held);
        held.get(session).is_some_and(|l| l.try_lock().is_err())
    }

    /// `program --help` of the installed build, read once per daemon.
    pub async fn help(&self, program: &Path) -> String {
        if let Some(h) = lock(&self.helps).get(program) {
            return h.clone();
        }
        let out = tokio::time::timeout(
            HELP_BOUND,
            tokio::process::Command::new(program)
                .arg("--help")
                .stdin(Stdio::null())
                .kill_on_drop(true)
                .output(),
        )
        .await;
        let text = match out {
            Ok(Ok(o)) => {
                let mut t = String::from_utf8_lossy(&o.stdout).into_owned();
                t.push_str(&String::from_utf8_lossy(&o.stderr));
                t
            }
            _ => String::new(),
        };
        if !text.is_empty() {
            lock(&self.helps).insert(program.to_path_buf(), text.clone());
        }
        text
    }

    /// One of the machine's headless slots, held until dropped (an ACP turn
    /// takes one as a headless run does).
    pub async fn slot(&self) -> tokio::sync::SemaphorePermit<'_> {
        self.slots
            .acquire()
            .await
            .expect("the runs' semaphore is never closed")
    }

    /// Runs `program` with `launch` once a slot is free, feeding `progress`
    /// every line that changed the reply; ends it past `bound`. A launch with
    /// `input` can be interrupted while it runs, under each of `sessions`.
    pub async fn run(
        &self,
        program: &Path,
        launch: &Launch,
        mut reader: Box<dyn StreamReader>,
        bound: Duration,
        progress: &tokio::sync::watch::Sender<Progress>,
        sessions: &[SessionRef],
    ) -> Result<Ran, RunError> {
        let _slot = self
            .slots
            .acquire()
            .await
            .expect("the runs' semaphore is never closed");
        let name = program
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(&launch.args)
            .current_dir(&launch.cwd)
            .envs(launch.env.iter().map(|(k, v)| (k, v)))
            .stdin(if launch.input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd.spawn().map_err(|source| RunError::Spawn {
            program: name.clone(),
            source,
        })?;
        // Fed on a task of its own; told to close stdin once the turn ended.
        let (close, closed) = tokio::sync::oneshot::channel::<()>();
        let mut close = Some(close);
        let _interruptible = launch.input.clone().map(|input| {
            let stop = Arc::new(tokio::sync::Notify::new());
            let stdin = child.stdin.take().expect("stdin is piped");
            tokio::spawn(feed(stdin, input, stop.clone(), closed));
            let mut map = lock(&self.interrupts);
            for s in sessions {
                map.insert(s.clone(), stop.clone());
            }
            Interruptible {
                map: self.interrupts.clone(),
                sessions: sessions.to_vec(),
            }
        });
        let stdout = child.stdout.take().expect("stdout is piped");
        let (tail, reading) = StderrTail::spawn(child.stderr.take().expect("stderr is piped"));
        let mut state = Progress::default();
        let read = async {
            let mut lines = BufReader::new(stdout);
            let mut line = Vec::new();
            loop {
                line.clear();
                let n = read_line_bounded(&mut lines, &mut line).await;
                if n == 0 {
                    break;
                }
                let text = String::from_utf8_lossy(&line);
                let before = (state.reply.len(), state.session.is_some());
                reader.line(text.trim_end(), &mut state);
                if (state.reply.len(), state.session.is_some()) != before {
                    progress.send_replace(state.clone());
                }
                if state.end.is_some()
                    && let Some(close) = close.take()
                {
                    let _ = close.send(());
                }
            }
        };
        if tokio::time::timeout(bound, read).await.is_err() {
            let _ = child.kill().await;
            return Err(RunError::TooLong {
                program: name,
                minutes: bound.as_secs().div_ceil(60),
            });
        }
        let status = child.wait().await;
        let _ = reading.await;
        let stderr = tail.words();
        match state.end {
            Some(Ok(reply)) => Ok(Ran {
                session: state.session,
                reply,
            }),
            Some(Err(words)) => Err(RunError::Harness(if words.trim().is_empty() {
                stderr
            } else {
                words
            })),
            None => Err(RunError::Exited {
                program: name,
                status: status
                    .map(|s| s.to_string())
                    .unwrap_or_else(|e| e.to_string()),
                stderr: if stderr.is_empty() {
                    String::new()
                } else {
                    format!(": {stderr}")
                },
            }),
        }
    }
}

/// Writes a run's turn to its stdin, then waits: for an interrupt (written,
/// once), or for the turn's end (or the run's, when `closed`'s sender goes),
/// and closes stdin, so the harness exits on its own. A write to a run that
/// has gone fails quietly: its exit says what happened.
async fn feed(
    mut stdin: tokio::process::ChildStdin,
    input: Input,
    stop: Arc<tokio::sync::Notify>,
    mut closed: tokio::sync::oneshot::Receiver<()>,
) {
    use tokio::io::AsyncWriteExt;
    if stdin.write_all(input.turn.as_bytes()).await.is_err() || stdin.flush().await.is_err() {
        return;
    }
    tokio::select! {
        _ = stop.notified() => {
            let _ = stdin.write_all(input.interrupt.as_bytes()).await;
            let _ = stdin.flush().await;
            let _ = (&mut closed).await;
        }
        _ = &mut closed => {}
    }
}

/// Reads one line into `line`, keeping at most `MAX_LINE` bytes of it (the
/// rest is read and dropped); the bytes read, 0 at the end.
async fn read_line_bounded<R: tokio::io::AsyncBufRead + Unpin>(
    r: &mut R,
    line: &mut Vec<u8>,
) -> usize {
    let mut total = 0;
    loop {
        let buf = match r.fill_buf().await {
            Ok(b) => b,
            Err(_) => return total,
        };
        if buf.is_empty() {
            return total;
        }
        let (chunk, done) = match buf.iter().position(|b| *b == b'\n') {
            Some(i) => (&buf[..=i], true),
            None => (buf, false),
        };
        let n = chunk.len();
        if line.len() < MAX_LINE {
            let room = MAX_LINE - line.len();
            line.extend_from_slice(&chunk[..n.min(room)]);
        }
        r.consume(n);
        total += n;
        if done {
            return total;
        }
    }
}

// The harness these tests run is a `sh` script.
#[cfg(all(test, unix))]
mod tests {
    use super::*;

    struct Lines;
    impl StreamReader for Lines {
        fn line(&mut self, line: &str, p: &mut Progress) {
            if let Some(rest) = line.strip_prefix("say ") {
                p.reply.push_str(rest);
            } else if line == "done" {
                p.end = Some(Ok(p.reply.clone()));
            } else if let Some(why) = line.strip_prefix("fail ") {
                p.end = Some(Err(why.to_string()));
            }
        }
    }

    fn script(dir: &Path, body: &str) -> PathBuf {
        let p = dir.join("harness");
        sessionpipe_testkit::executable::write_executable(&p, &format!("#!/bin/sh\n{body}\n"));
        p
    }

    fn launch(dir: &Path) -> Launch {
        Launch {
            args: vec!["a b".into(), "--".into(), "-x".into()],
            env: vec![("SP_TEST".into(), "1".into())],
            cwd: dir.to_path_buf(),
            input: None,
        }
    }

    #[tokio::test]
    async fn a_run_streams_its_reply_and_ends_with_the_harness_words() {
        let dir = tempfile::tempdir().unwrap();
        let p = script(
            dir.path(),
            "printf '%s\\n' \"$@\" > args; echo \"say $SP_TEST\"; sleep 0.2; echo 'say two'; echo done",
        );
        let runs = Runs::new(1);
        let (tx, mut rx) = tokio::sync::watch::channel(Progress::default());
        let seen = tokio::spawn(async move {
            let mut replies = Vec::new();
            while rx.changed().await.is_ok() {
                replies.push(rx.borrow().reply.clone());
            }
            replies
        });
        let ran = runs
            .run(
                &p,
                &launch(dir.path()),
                Box::new(Lines),
                Duration::from_secs(10),
                &tx,
                &[],
            )
            .await
            .unwrap();
        drop(tx);
        assert_eq!(ran.reply, "1two");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("args")).unwrap(),
            "a b\n--\n-x\n",
            "the arguments exactly, in the run's folder"
        );
        assert!(seen.await.unwrap().contains(&"1".to_string()));

        let p = script(dir.path(), "echo 'fail the model is unknown'");
        let err = runs
            .run(
                &p,
                &launch(dir.path()),
                Box::new(Lines),
                Duration::from_secs(10),
                &tx_of(),
                &[],
            )
            .await
            .unwrap_err();
        assert_eq!(err.to_string(), "the model is unknown");

        let p = script(dir.path(), "echo 'not signed in' >&2; exit 3");
        let err = runs
            .run(
                &p,
                &launch(dir.path()),
                Box::new(Lines),
                Duration::from_secs(10),
                &tx_of(),
                &[],
            )
            .await
            .unwrap_err();
        assert!(err.to_string().contains("not signed in"), "{err}");
    }

    fn tx_of() -> tokio::sync::watch::Sender<Progress> {
        tokio::sync::watch::channel(Progress::default()).0
    }

    #[tokio::test]
    async fn a_run_past_its_bound_is_ended_and_fails() {
        let dir = tempfile::tempdir().unwrap();
        let p = script(dir.path(), "echo 'say hi'; exec sleep 30");
        let t = std::time::Instant::now();
        let err = Runs::new(1)
            .run(
                &p,
                &launch(dir.path()),
                Box::new(Lines),
                Duration::from_millis(500),
                &tx_of(),
                &[],
            )
            .await
            .unwrap_err();
        assert!(matches!(err, RunError::TooLong { .. }), "{err}");
        assert!(t.elapsed() < Duration::from_secs(10));
    }

    #[tokio::test]
    async fn runs_beyond_the_slots_wait_and_starts_beyond_the_cap_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = script(dir.path(), "sleep 0.5; echo 'say x'; echo done");
        let runs = Arc::new(Runs::new(1));
        let t = std::time::Instant::now();
        let (l, tx1, tx2) = (launch(dir.path()), tx_of(), tx_of());
        let both = tokio::join!(
            runs.run(&p, &l, Box::new(Lines), Duration::from_secs(10), &tx1, &[]),
            runs.run(&p, &l, Box::new(Lines), Duration::from_secs(10), &tx2, &[]),
        );
        assert!(both.0.is_ok() && both.1.is_ok());
        assert!(
            t.elapsed() >= Duration::from_millis(1000),
            "one after the other"
        );

        assert!(runs.reserve_start(2) && runs.reserve_start(2));
        assert!(!runs.reserve_start(2), "two run already");
        let a = runs.started(false);
        drop(a);
        assert_eq!(runs.starts_running(), 1);
        assert!(runs.reserve_start(2));
    }

    /// A harness that reads its turn on stdin: fed the turn, interrupted
    /// through the same stdin while it runs, and its stdin closed once it
    /// said the turn ended (it exits only then).
    #[tokio::test]
    async fn a_run_fed_on_stdin_takes_an_interrupt_and_its_stdin_closes_at_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let p = script(
            dir.path(),
            "read turn; echo \"say $turn\"; read next; echo \"say +$next\"; echo done; \
             cat > /dev/null; echo closed > closed",
        );
        let runs = Arc::new(Runs::new(1));
        let a = sessionpipe_verifier::parse_session("claude-code:a").unwrap();
        let mut l = launch(dir.path());
        l.input = Some(Input {
            turn: "go\n".into(),
            interrupt: "stop\n".into(),
        });
        let (tx, mut rx) = tokio::sync::watch::channel(Progress::default());
        let run = tokio::spawn({
            let (runs, p, a) = (runs.clone(), p.clone(), a.clone());
            async move {
                runs.run(&p, &l, Box::new(Lines), Duration::from_secs(10), &tx, &[a])
                    .await
            }
        });
        // The turn went in: the reply says it, and the run can be stopped.
        while rx.borrow_and_update().reply != "go" {
            rx.changed().await.unwrap();
        }
        assert!(runs.interruptible(&a));
        assert_eq!(runs.interruptible_sessions(), std::slice::from_ref(&a));
        assert!(runs.interrupt(&a));
        let ran = run.await.unwrap().unwrap();
        assert_eq!(ran.reply, "go+stop");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("closed")).unwrap(),
            "closed\n",
            "stdin closed after the end, so the harness exited on its own"
        );
        assert!(!runs.interruptible(&a) && !runs.interrupt(&a));
        let b = sessionpipe_verifier::parse_session("claude-code:b").unwrap();
        assert!(!runs.interrupt(&b), "no run of it");
    }

    #[tokio::test]
    async fn a_session_is_held_while_its_run_runs() {
        let runs = Runs::new(1);
        let a = sessionpipe_verifier::parse_session("claude-code:a").unwrap();
        let lock = runs.hold(&a);
        assert!(!runs.is_held(&a));
        let guard = lock.lock().await;
        assert!(runs.is_held(&a));
        drop(guard);
        assert!(!runs.is_held(&a));
    }
}
