//! The receiver the app can run on this computer: `sessionpipe-receiver` with
//! its phone page, in this process, on loopback only, when `config.json` says
//! `local_receiver` (the tray's "Phone page on this computer").
//!
//! Owns starting and stopping it as the setting changes (the refresher calls
//! `follow` every few seconds, so a change made in the UI or by hand takes
//! effect too), and the one line the menu shows about it. Its database is
//! `receiver/receiver.db` in the state dir (0700 folder, the receiver keeps the
//! file 0600), so what it stored outlives a restart. The page's origin is
//! `http://localhost:PORT` (WebAuthn allows plain HTTP only there) and open
//! pairing is on: `sessionpipe connect http://localhost:PORT` pairs in one
//! step, and the person still approves on the page, with a passkey, after
//! checking the six digits. The receiver's own bearer token is made fresh at
//! each start and never kept: nothing here uses it (pairing hands the machine a
//! sink token of the person's account).
//!
//! Must not pair, add a sink or deliver anything itself (the daemon and
//! `connect` do), and never listens beyond loopback.

use sessionpipe_core::spool::StatePaths;
use sessionpipe_core::state::config::Config;
use sessionpipe_receiver::{ControlOptions, Handle, Options, PageOptions, Receiver};
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Mutex;

/// What the local receiver is doing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    /// The setting is off.
    Off,
    /// Serving the page at `origin`.
    Serving { origin: String },
    /// The setting is on but it could not start (the port taken, say); tried
    /// again on the next `follow`.
    Failed { port: u16, why: String },
}

impl Status {
    /// The menu's line, when there is one.
    pub fn line(&self) -> Option<String> {
        match self {
            Status::Off => None,
            Status::Serving { origin } => Some(format!("Phone page: {origin}")),
            Status::Failed { port, why } => {
                Some(format!("Phone page: cannot listen on port {port}: {why}"))
            }
        }
    }
}

struct Running {
    port: u16,
    handle: Handle,
}

/// The receiver, when running, behind a lock the refresher and a menu click
/// share.
#[derive(Default)]
pub struct LocalReceiver {
    running: Mutex<Option<Running>>,
    last_failure: Mutex<Option<(u16, String)>>,
}

impl LocalReceiver {
    /// Starts, stops or moves the receiver to what `config` says; returns what
    /// it is doing now.
    pub fn follow(&self, paths: &StatePaths, config: &Config) -> Status {
        let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        let wanted = config.local_receiver.then(|| config.local_receiver_port());
        if let Some(r) = running.as_ref()
            && Some(r.port) != wanted
        {
            let r = running.take().expect("checked above");
            tracing::info!("the local receiver on port {} stops", r.port);
            r.handle.stop();
        }
        let Some(port) = wanted else {
            *self.last_failure.lock().unwrap_or_else(|p| p.into_inner()) = None;
            return Status::Off;
        };
        if running.is_none() {
            match start(paths, port) {
                Ok(handle) => {
                    tracing::info!("the local receiver serves its page on port {port}");
                    *running = Some(Running { port, handle });
                    *self.last_failure.lock().unwrap_or_else(|p| p.into_inner()) = None;
                }
                Err(e) => {
                    let why = e.to_string();
                    let mut last = self.last_failure.lock().unwrap_or_else(|p| p.into_inner());
                    if last.as_ref() != Some(&(port, why.clone())) {
                        tracing::warn!("the local receiver cannot start on port {port}: {why}");
                    }
                    *last = Some((port, why.clone()));
                    return Status::Failed { port, why };
                }
            }
        }
        let origin = running
            .as_ref()
            .and_then(|r| r.handle.page_origin())
            .unwrap_or_else(|| origin(port));
        Status::Serving { origin }
    }

    /// Stops it (at Quit: the port is closed before the process ends).
    pub fn stop(&self) {
        if let Some(r) = self
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            r.handle.stop();
        }
    }
}

/// The page's origin for `port`.
pub fn origin(port: u16) -> String {
    format!("http://localhost:{port}")
}

/// Where its database lives.
pub fn data_dir(paths: &StatePaths) -> PathBuf {
    paths.root.join("receiver")
}

fn start(paths: &StatePaths, port: u16) -> std::io::Result<Handle> {
    let data = data_dir(paths);
    make_private_dir(&data)?;
    let opts = Options {
        listen: SocketAddr::from((Ipv4Addr::LOCALHOST, port)),
        data: Some(data),
        control: Some(ControlOptions {
            open_pairing: true,
            ..ControlOptions::new("localhost")
        }),
        page: Some(PageOptions::new(origin(port))),
        ..Options::new(fresh_token()?)
    };
    Receiver::start(opts)
}

/// 32 random bytes as hex: the receiver's operator token for this run.
fn fresh_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn make_private_dir(dir: &std::path::Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn free_port() -> u16 {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    }

    fn get(port: u16, path: &str) -> std::io::Result<(u16, String)> {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port))?;
        s.set_read_timeout(Some(std::time::Duration::from_secs(10)))?;
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: localhost:{port}\r\nConnection: close\r\n\r\n"
        )?;
        let mut out = String::new();
        s.read_to_string(&mut out)?;
        let status = out
            .split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        Ok((status, out))
    }

    #[test]
    fn the_setting_starts_it_with_the_page_and_open_pairing_and_stops_it_again() {
        let dir = tempfile::tempdir().unwrap();
        let paths = StatePaths::new(dir.path());
        paths.ensure().unwrap();
        let port = free_port();
        let rx = LocalReceiver::default();
        let off = Config::default();
        assert_eq!(rx.follow(&paths, &off), Status::Off);
        assert!(get(port, "/").is_err(), "nothing listens while it is off");

        let on = Config {
            local_receiver: true,
            local_receiver_port: Some(port),
            ..Config::default()
        };
        let status = rx.follow(&paths, &on);
        assert_eq!(
            status,
            Status::Serving {
                origin: format!("http://localhost:{port}")
            }
        );
        assert_eq!(
            status.line().unwrap(),
            format!("Phone page: http://localhost:{port}")
        );
        let (code, doc) = get(port, "/.well-known/sessionpipe").unwrap();
        assert_eq!(code, 200, "{doc}");
        assert!(doc.contains("\"open_pairing\":true"), "{doc}");
        assert!(doc.contains("\"rp_id\":\"localhost\""), "{doc}");
        let (code, page) = get(port, "/").unwrap();
        assert_eq!(code, 200, "the page is served: {page}");
        let db = data_dir(&paths).join("receiver.db");
        assert!(db.exists(), "its database is in the state dir");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(data_dir(&paths))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o700);
        }
        // The same setting again: still the one receiver.
        assert_eq!(rx.follow(&paths, &on), status);

        // Another process on the port: said, not hidden.
        assert_eq!(rx.follow(&paths, &off), Status::Off);
        assert!(get(port, "/").is_err(), "stopped with the setting");
        let squatter = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
        match rx.follow(&paths, &on) {
            Status::Failed { port: p, why } => {
                assert_eq!(p, port);
                assert!(!why.is_empty());
            }
            other => panic!("expected a failure, got {other:?}"),
        }
        drop(squatter);
        assert!(matches!(rx.follow(&paths, &on), Status::Serving { .. }));
        rx.stop();
        assert!(get(port, "/").is_err());
    }
}
