//! What ends a running daemon. `sessionpipe daemon` owns its process, so the
//! process's signals end it (SIGTERM and SIGINT; Ctrl-C where there are no
//! signals). A program that runs the daemon inside itself (the desktop app)
//! owns the process instead: the daemon then leaves the signals alone and
//! stops when that program's `Stop` is pulled, the same way a signal stops it.
//!
//! Owns the handle and the wait for the signals; what a stop does is the
//! daemon's (`super`).

use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long the daemon takes to stop once asked (a signal, a `Stop`): ingest
/// ends between two batches, the sinks at their next step, the API closes.
/// An embedder that waits for it need not wait longer.
pub const STOP_BOUND: Duration = Duration::from_millis(500);

/// The embedder's way to stop the daemon it runs: once pulled, a running
/// daemon stops and one not yet started returns at once. Clones share it.
#[derive(Clone, Debug, Default)]
pub struct Stop(Arc<Inner>);

#[derive(Debug, Default)]
struct Inner {
    asked: Mutex<bool>,
    /// For threads that wait (`wait_timeout`).
    changed: Condvar,
    /// For the daemon's runtime (`asked_async`).
    notify: tokio::sync::Notify,
}

impl Stop {
    pub fn new() -> Stop {
        Stop::default()
    }

    /// Asks the daemon to stop, for good.
    pub fn stop(&self) {
        *self.0.asked.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.0.changed.notify_all();
        self.0.notify.notify_waiters();
    }

    pub fn asked(&self) -> bool {
        *self.0.asked.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits up to `timeout` for the stop; `true` once it is asked.
    pub fn wait_timeout(&self, timeout: Duration) -> bool {
        let until = Instant::now() + timeout;
        let mut asked = self.0.asked.lock().unwrap_or_else(PoisonError::into_inner);
        while !*asked {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            asked = self
                .0
                .changed
                .wait_timeout(asked, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        true
    }

    /// Resolves once the stop is asked.
    pub(crate) async fn asked_async(&self) {
        loop {
            // Registered before the look, so a stop between the two is seen.
            let notified = self.0.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.asked() {
                return;
            }
            notified.await;
        }
    }
}

/// The signal that asks a program to end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    Terminate,
    Interrupt,
}

impl Signal {
    pub fn name(self) -> &'static str {
        match self {
            Signal::Terminate if cfg!(unix) => "SIGTERM",
            Signal::Interrupt if cfg!(unix) => "SIGINT",
            Signal::Terminate => "the console's close",
            Signal::Interrupt => "Ctrl-C",
        }
    }
}

/// Resolves at the first SIGTERM or SIGINT (Ctrl-C where there are no
/// signals). From the first call on, these no longer end the process by
/// themselves: whoever awaits this ends it. An error: they cannot be
/// listened for, and still end the process at once.
pub async fn ended_by_signal() -> std::io::Result<Signal> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate())?;
        let mut int = signal(SignalKind::interrupt())?;
        tokio::select! {
            _ = term.recv() => Ok(Signal::Terminate),
            _ = int.recv() => Ok(Signal::Interrupt),
        }
    }
    #[cfg(not(unix))]
    {
        tokio::signal::ctrl_c().await?;
        Ok(Signal::Interrupt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_wakes_a_waiting_thread_and_stays_asked() {
        let stop = Stop::new();
        assert!(!stop.asked());
        assert!(!stop.wait_timeout(Duration::from_millis(10)));
        let waiter = {
            let stop = stop.clone();
            std::thread::spawn(move || stop.wait_timeout(Duration::from_secs(60)))
        };
        stop.stop();
        assert!(waiter.join().unwrap(), "the waiter saw the stop");
        assert!(stop.asked());
        assert!(stop.wait_timeout(Duration::ZERO), "asked for good");
    }

    #[test]
    fn a_stop_asked_before_or_during_the_wait_ends_the_async_wait() {
        let before = Stop::new();
        before.stop();
        crate::runtime::block_on(before.asked_async());

        let during = Stop::new();
        let puller = during.clone();
        crate::runtime::block_on(async move {
            let waiting = tokio::spawn(async move { during.asked_async().await });
            tokio::task::yield_now().await;
            puller.stop();
            waiting.await.unwrap();
        });
    }
}
