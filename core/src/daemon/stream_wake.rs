//! The daemon's stream wake socket (`<state>/wake-stream.sock`, a Unix stream
//! socket, 0600): the wake for a client that cannot send the hook's datagram.
//! OpenCode's plugin runs inside Bun, which has no Unix datagram sockets.
//!
//! Owns binding the socket, accepting on it, and passing each connection on as
//! one datagram wake (`spool::wake::poke` on the socket the ingest loop waits
//! on), so the loop has one way of being woken. It must not read what a client
//! sends, answer it, or carry events: the client writes its job into the spool
//! first, exactly as the hook does, and the connection only says "look now". A
//! connection that is never read loses nothing: the job is on disk.
//!
//! The order of exit is the hook's guarantee kept for these clients too: the
//! socket's path goes (`Drop`) before the daemon's last drain, so a client that
//! connected wrote its job before that drain, and one that finds no socket
//! starts a drain worker, which waits for this daemon's lock.

use std::path::{Path, PathBuf};

#[cfg(unix)]
pub struct StreamWake {
    path: PathBuf,
    task: tokio::task::JoinHandle<()>,
}

#[cfg(unix)]
impl StreamWake {
    /// Binds `path` and accepts on it until dropped; every connection pokes
    /// `wake`. Must run inside the daemon's runtime.
    pub fn bind(path: &Path, wake: PathBuf) -> std::io::Result<StreamWake> {
        // We hold the daemon lock, so a socket file here is a dead daemon's.
        let listener =
            crate::state::socket_file::bind_private(path, |p| tokio::net::UnixListener::bind(p))?;
        let task = tokio::spawn(async move {
            loop {
                match listener.accept().await {
                    // The connection closes as it is dropped: nothing is read.
                    Ok((stream, _)) => {
                        spool::wake::poke(&wake);
                        drop(stream);
                    }
                    Err(e) => {
                        tracing::debug!("stream wake: {e}");
                        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                    }
                }
            }
        });
        Ok(StreamWake {
            path: path.to_path_buf(),
            task,
        })
    }
}

#[cfg(unix)]
impl Drop for StreamWake {
    /// The path goes first (no client can connect from then on), then the task.
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        self.task.abort();
    }
}

/// Without Unix sockets the daemon lists the spool on a short timer.
#[cfg(not(unix))]
pub struct StreamWake;

#[cfg(not(unix))]
impl StreamWake {
    pub fn bind(_path: &Path, _wake: PathBuf) -> std::io::Result<StreamWake> {
        Ok(StreamWake)
    }
}

#[cfg(test)]
mod tests {
    #[cfg(unix)]
    #[test]
    fn a_connection_is_a_wake_and_the_path_goes_with_it() {
        use super::*;
        use std::os::unix::fs::PermissionsExt;
        use std::time::Duration;
        let dir = tempfile::tempdir().unwrap();
        let wake_path = dir.path().join("wake.sock");
        let stream_path = dir.path().join("wake-stream.sock");
        let wake = std::os::unix::net::UnixDatagram::bind(&wake_path).unwrap();
        wake.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let _guard = rt.enter();
        let server = StreamWake::bind(&stream_path, wake_path.clone()).unwrap();
        let mode = std::fs::metadata(&stream_path)
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);

        let client = std::thread::spawn({
            let p = stream_path.clone();
            move || std::os::unix::net::UnixStream::connect(p).map(|_| ())
        });
        let mut buf = [0u8; 4];
        let got = rt.block_on(async {
            tokio::task::spawn_blocking(move || wake.recv(&mut buf).map(|n| buf[..n].to_vec()))
                .await
                .unwrap()
        });
        assert_eq!(got.unwrap(), b"j");
        client.join().unwrap().unwrap();

        drop(server);
        assert!(!stream_path.exists());
        assert!(std::os::unix::net::UnixStream::connect(&stream_path).is_err());
    }
}
