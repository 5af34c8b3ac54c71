//! The blocking steps of control (SQLite, the keychain through `Host`, a
//! transcript read) go to the runtime's blocking pool, as the daemon's own
//! do: the same hand-over as the core's `runtime::blocking`, which this crate
//! sits below and cannot reach.

use std::future::Future;

/// Runs `f` on the runtime's blocking pool and waits for it.
pub async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    match tokio::task::spawn_blocking(f).await {
        Ok(v) => v,
        Err(e) => match e.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            Err(_) => panic!("the runtime shut down under a blocking step"),
        },
    }
}

/// Runs one future to its end on a runtime of this thread (a CLI command's
/// pairing or `off`, a test).
pub fn block_on<F: Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime builds")
        .block_on(f)
}
