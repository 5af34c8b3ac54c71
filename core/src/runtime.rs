//! Layer 1, runtime: the one tokio runtime the daemon runs on, the small one a
//! CLI command makes for an async step, and handing blocking work (SQLite, file
//! writes, the keychain) to the runtime's blocking pool.
//!
//! Owns how the runtimes are built; what runs on them is everyone else's.

use std::future::Future;

/// The daemon's runtime: two workers (the API, sinks, listeners) and a bounded
/// blocking pool (ingest, the hold worker, SQLite reads and writes).
pub fn daemon() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(16)
        .thread_name("sessionpipe")
        .enable_all()
        .build()
}

/// Runs one future to its end on a runtime of this thread (a CLI command's
/// discovery, a test's request).
pub fn block_on<F: Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime builds")
        .block_on(f)
}

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
