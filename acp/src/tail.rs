//! The last bytes of a child process's stderr, kept while it is read, so a
//! failure can quote the child in its own words: the one reader for the ACP
//! agents here and for the daemon's headless harness runs.
//!
//! Keeps at most [`STDERR_TAIL`] bytes, the newest, whatever the child
//! writes; reads until the pipe ends or fails. It only reads: it never
//! writes to the child, parses what it keeps, or decides what a failure
//! says.

use std::sync::{Arc, Mutex};
use tokio::io::{AsyncRead, AsyncReadExt};

/// How much of stderr is kept for a failure's words.
pub const STDERR_TAIL: usize = 4096;

/// What has been kept of one child's stderr so far.
#[derive(Clone, Debug, Default)]
pub struct StderrTail {
    kept: Arc<Mutex<Vec<u8>>>,
}

impl StderrTail {
    /// Reads `from` to its end on the caller's tokio runtime; the tail, and
    /// the task that ends with the pipe.
    pub fn spawn<R>(mut from: R) -> (StderrTail, tokio::task::JoinHandle<()>)
    where
        R: AsyncRead + Unpin + Send + 'static,
    {
        let tail = StderrTail::default();
        let kept = tail.clone();
        let reading = tokio::spawn(async move {
            let mut buf = [0u8; 4096];
            while let Ok(n) = from.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                kept.push(&buf[..n]);
            }
        });
        (tail, reading)
    }

    fn push(&self, bytes: &[u8]) {
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        kept.extend_from_slice(bytes);
        if kept.len() > STDERR_TAIL {
            let cut = kept.len() - STDERR_TAIL;
            kept.drain(..cut);
        }
    }

    /// What was kept, as text (invalid UTF-8 replaced), trimmed.
    pub fn words(&self) -> String {
        let kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        String::from_utf8_lossy(&kept).trim().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn only_the_newest_bytes_are_kept_and_read_as_trimmed_text() {
        let mut said = vec![b'a'; 10_000];
        said.extend_from_slice(b"\nfatal: the model went away\n");
        let (tail, reading) = StderrTail::spawn(std::io::Cursor::new(said.clone()));
        reading.await.unwrap();
        let words = tail.words();
        assert!(words.ends_with("fatal: the model went away"), "{words}");
        assert_eq!(words.len(), STDERR_TAIL - 1, "the last 4 KiB, trimmed");
        let (quiet, reading) = StderrTail::spawn(std::io::Cursor::new(b"  \n".to_vec()));
        reading.await.unwrap();
        assert_eq!(quiet.words(), "");
    }
}
