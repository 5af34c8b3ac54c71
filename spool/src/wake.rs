//! The wake datagram: one byte to `<state>/wake.sock` says "a job is in the
//! spool". No connection, no reply, never a wait. The daemon binds the socket;
//! the hook and a drain worker poke it.

use std::path::Path;

/// Sends the wake; true when a daemon answers at `socket` (a full socket buffer
/// means a daemon is alive and busy, which is enough).
#[cfg(unix)]
pub fn poke(socket: &Path) -> bool {
    use std::os::unix::net::UnixDatagram;
    let Ok(sock) = UnixDatagram::unbound() else {
        return false;
    };
    let _ = sock.set_nonblocking(true);
    match sock.send_to(b"j", socket) {
        Ok(_) => true,
        Err(e) => e.kind() == std::io::ErrorKind::WouldBlock,
    }
}

/// No datagram socket in std here: the daemon lists the spool on a short timer.
#[cfg(not(unix))]
pub fn poke(_socket: &Path) -> bool {
    false
}
