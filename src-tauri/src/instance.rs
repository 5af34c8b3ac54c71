//! One app per user: the first `sessionpipe-app` holds `app.lock` in the state
//! dir (an OS file lock, let go by the OS when the process ends, however it
//! ends) and listens on 127.0.0.1 for later launches; a later launch finds the
//! lock taken, tells the first one what it was asked (`open`, or `hidden` for a
//! login start, which asks nothing) and exits.
//!
//! The listener's port and a fresh token are in `app.json` (0600, in the 0700
//! state dir); a message without the token is dropped, so no other local user
//! can drive the app. Owns that handshake only: what an `open` does is the
//! caller's (`app`).

use anyhow::Context;
use sessionpipe_core::spool::StatePaths;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// How long a second launch waits for the first one to say where it listens
/// (the first writes `app.json` a moment after it takes the lock).
const FIND_FIRST: Duration = Duration::from_secs(5);
const IO_TIMEOUT: Duration = Duration::from_secs(2);

/// What a launch asks of the app that runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ask {
    /// Open the window (a launch from the menu or a terminal).
    Open,
    /// Nothing (a login start when the app already runs).
    Hidden,
}

impl Ask {
    fn word(self) -> &'static str {
        match self {
            Ask::Open => "open",
            Ask::Hidden => "hidden",
        }
    }
}

/// This process is the app: it holds the lock for as long as it lives.
pub struct First {
    _lock: File,
    listener: TcpListener,
    token: String,
}

/// Takes the app's place, or hands `ask` to the app that has it (`Ok(None)`:
/// this launch is done).
pub fn claim(paths: &StatePaths, ask: Ask) -> anyhow::Result<Option<First>> {
    sessionpipe_core::spool::files::create_private_dir(&paths.root)
        .with_context(|| format!("cannot create {}", paths.root.display()))?;
    let lock_path = paths.root.join("app.lock");
    let mut options = File::options();
    options.create(true).truncate(false).write(true);
    // Private from its first byte, as every file of the state dir is.
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let lock = options
        .open(&lock_path)
        .with_context(|| format!("cannot open {}", lock_path.display()))?;
    match lock.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            tell_first(paths, ask)?;
            return Ok(None);
        }
        Err(std::fs::TryLockError::Error(e)) => {
            anyhow::bail!("cannot lock {}: {e}", lock_path.display());
        }
    }
    let listener =
        TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).context("cannot listen on 127.0.0.1")?;
    let port = listener.local_addr()?.port();
    let token = sessionpipe_core::daemon::api::new_token();
    let doc = serde_json::json!({"port": port, "token": token, "pid": std::process::id()});
    sessionpipe_core::spool::files::write_private_file(
        &address_file(paths),
        doc.to_string().as_bytes(),
    )
    .with_context(|| format!("cannot write {}", address_file(paths).display()))?;
    Ok(Some(First {
        _lock: lock,
        listener,
        token,
    }))
}

impl First {
    /// Answers later launches on a thread of its own, for the app's life;
    /// `on_ask` runs for each one that carries the token.
    pub fn serve(self, on_ask: impl Fn(Ask) + Send + 'static) {
        let spawned = std::thread::Builder::new()
            .name("instance".into())
            .spawn(move || {
                let _lock = self._lock;
                for stream in self.listener.incoming().flatten() {
                    if let Some(ask) = read_ask(stream, &self.token) {
                        on_ask(ask);
                    }
                }
            });
        if let Err(e) = spawned {
            tracing::warn!("cannot answer later launches: {e}");
        }
    }
}

fn address_file(paths: &StatePaths) -> std::path::PathBuf {
    paths.root.join("app.json")
}

/// One line, `TOKEN WORD`; answered `ok`.
fn read_ask(mut stream: TcpStream, token: &str) -> Option<Ask> {
    stream.set_read_timeout(Some(IO_TIMEOUT)).ok()?;
    let mut line = String::new();
    // At most a line of 256 bytes: a stranger cannot make it buffer more.
    BufReader::new(stream.try_clone().ok()?.take(256))
        .read_line(&mut line)
        .ok()?;
    let (given, word) = line.trim_end().split_once(' ')?;
    if given != token {
        return None;
    }
    let ask = match word {
        "open" => Ask::Open,
        "hidden" => Ask::Hidden,
        _ => return None,
    };
    let _ = stream.write_all(b"ok\n");
    Some(ask)
}

/// Hands `ask` to the app that holds the lock.
fn tell_first(paths: &StatePaths, ask: Ask) -> anyhow::Result<()> {
    let until = Instant::now() + FIND_FIRST;
    let mut last_error;
    loop {
        match try_tell(paths, ask) {
            Ok(()) => return Ok(()),
            Err(e) => last_error = e,
        }
        if Instant::now() > until {
            anyhow::bail!("sessionpipe-app already runs, but did not answer: {last_error}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn try_tell(paths: &StatePaths, ask: Ask) -> anyhow::Result<()> {
    let file = address_file(paths);
    let doc: serde_json::Value = std::fs::read(&file)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .with_context(|| format!("no address in {}", file.display()))?;
    let port = doc["port"].as_u64().and_then(|p| u16::try_from(p).ok());
    let (Some(port), Some(token)) = (port, doc["token"].as_str()) else {
        anyhow::bail!("{} is not an address", file.display());
    };
    let mut stream = TcpStream::connect_timeout(&(Ipv4Addr::LOCALHOST, port).into(), IO_TIMEOUT)
        .with_context(|| format!("127.0.0.1:{port}"))?;
    stream.set_read_timeout(Some(IO_TIMEOUT)).ok();
    stream.write_all(format!("{token} {}\n", ask.word()).as_bytes())?;
    let mut answer = String::new();
    BufReader::new(stream.take(16)).read_line(&mut answer)?;
    if answer.trim_end() == "ok" {
        Ok(())
    } else {
        anyhow::bail!("no answer")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn a_second_launch_hands_its_ask_to_the_first() {
        let dir = std::env::temp_dir().join(format!("sp-app-instance-{}", std::process::id()));
        let paths = StatePaths::new(&dir);
        let first = claim(&paths, Ask::Open)
            .unwrap()
            .expect("the first launch is the app");
        let (tx, rx) = mpsc::channel();
        first.serve(move |ask| {
            let _ = tx.send(ask);
        });
        // The lock is per open file: a second claim in this process is refused
        // as another process's would be.
        assert!(claim(&paths, Ask::Open).unwrap().is_none());
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)), Ok(Ask::Open));
        assert!(claim(&paths, Ask::Hidden).unwrap().is_none());
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)), Ok(Ask::Hidden));

        // A message without the token does nothing.
        let port = serde_json::from_slice::<serde_json::Value>(
            &std::fs::read(dir.join("app.json")).unwrap(),
        )
        .unwrap()["port"]
            .as_u64()
            .unwrap() as u16;
        let mut stranger = TcpStream::connect((Ipv4Addr::LOCALHOST, port)).unwrap();
        stranger.write_all(b"guess open\n").unwrap();
        drop(stranger);
        assert!(rx.recv_timeout(Duration::from_millis(500)).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
