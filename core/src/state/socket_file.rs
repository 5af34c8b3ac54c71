//! Binding a Unix socket in the state dir so that it is never seen with any
//! mode but 0600: it is bound at a hidden name beside its own, made 0600, and
//! only then renamed into place (a rename is atomic, and a client finds a
//! socket by its path). A dead daemon's socket at the path is replaced by the
//! rename. Owns only that; what listens on the socket is its caller's. Unix
//! only (state/mod.rs): Windows has no Unix sockets here.

use std::io;
use std::path::Path;

/// Binds `path` through `bind` (which binds the path it is given) as above.
pub fn bind_private<T>(path: &Path, bind: impl FnOnce(&Path) -> io::Result<T>) -> io::Result<T> {
    use std::os::unix::fs::PermissionsExt;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let hidden = path.with_file_name(format!(".{name}.{}", std::process::id()));
    let _ = std::fs::remove_file(&hidden);
    let socket = bind(&hidden)?;
    let placed = std::fs::set_permissions(&hidden, std::fs::Permissions::from_mode(0o600))
        .and_then(|()| std::fs::rename(&hidden, path));
    if let Err(e) = placed {
        let _ = std::fs::remove_file(&hidden);
        return Err(e);
    }
    Ok(socket)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_socket_is_placed_private_over_a_dead_one_and_answers() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wake.sock");
        std::fs::write(&path, b"a dead daemon's").unwrap();
        let sock = bind_private(&path, |p| std::os::unix::net::UnixDatagram::bind(p)).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["wake.sock"], "nothing hidden left");
        let client = std::os::unix::net::UnixDatagram::unbound().unwrap();
        client.send_to(b"x", &path).unwrap();
        let mut buf = [0u8; 1];
        sock.set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        assert_eq!(sock.recv(&mut buf).unwrap(), 1);
    }

    #[test]
    fn a_bind_that_fails_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.sock");
        let e = bind_private(&path, |_| -> io::Result<()> { Err(io::Error::other("no")) });
        assert!(e.is_err());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
