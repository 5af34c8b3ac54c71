//! The daemon's end of the wake socket: a datagram socket the hook (and a drain
//! worker) sends one byte to; `spool::wake::poke` is the other end.

use std::path::Path;
#[cfg(unix)]
use std::path::PathBuf;
use std::time::Duration;

#[cfg(unix)]
pub struct Socket {
    sock: std::os::unix::net::UnixDatagram,
    path: PathBuf,
}

#[cfg(unix)]
impl Socket {
    pub fn bind(path: &Path) -> std::io::Result<Socket> {
        // We hold the lock, so a socket file here is a dead daemon's.
        let sock = crate::state::socket_file::bind_private(path, |p| {
            std::os::unix::net::UnixDatagram::bind(p)
        })?;
        Ok(Socket {
            sock,
            path: path.to_path_buf(),
        })
    }

    /// Waits up to `timeout` for a wake, then swallows any others queued.
    pub fn wait(&self, timeout: Duration) {
        let mut buf = [0u8; 16];
        let _ = self.sock.set_read_timeout(Some(timeout));
        if self.sock.recv(&mut buf).is_ok() && self.sock.set_nonblocking(true).is_ok() {
            while self.sock.recv(&mut buf).is_ok() {}
            let _ = self.sock.set_nonblocking(false);
        }
    }
}

#[cfg(unix)]
impl Drop for Socket {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Without datagram sockets the daemon lists the spool on a short timer.
#[cfg(not(unix))]
pub struct Socket;

#[cfg(not(unix))]
impl Socket {
    pub fn bind(_path: &Path) -> std::io::Result<Socket> {
        Ok(Socket)
    }
    pub fn wait(&self, timeout: Duration) {
        std::thread::sleep(timeout.min(Duration::from_millis(100)));
    }
}
