//! Layer 1, runtime: the one tokio runtime the daemon runs on, the small one a
//! CLI command makes for an async step, and handing blocking work (SQLite, file
//! writes, the keychain) to the runtime's blocking pool.
//!
//! Owns how the runtimes are built; what runs on them is everyone else's.

use std::future::Future;

/// The daemon's runtime: two workers (the API, sinks, listeners) and a bounded
/// blocking pool (ingest, the hold worker, SQLite reads and writes).
pub fn daemon() -> std::io::Result<tokio::runtime::Runtime> {
    cap_malloc_arenas();
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(16)
        .thread_name("sessionpipe")
        .enable_all()
        .build()
}

/// Caps glibc's malloc at two arenas for the threads made from now on. By
/// default each thread that allocates may get an arena of its own (up to
/// eight per core), and each keeps what it freed: the daemon's memory after
/// 300 board requests on a year's outbox then ranged 23 to 30 MB from run to
/// run; with two arenas, 22.5 to 22.9 MB at the same speed (`bench_year`).
/// Elsewhere (musl, macOS, Windows) the allocator is left as it is. A
/// program that runs the daemon inside itself calls it first thing, before
/// its own threads take arenas of their own.
pub fn cap_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // glibc's <malloc.h>: `int mallopt(int param, int value)`.
        unsafe extern "C" {
            fn mallopt(param: std::ffi::c_int, value: std::ffi::c_int) -> std::ffi::c_int;
        }
        const M_ARENA_MAX: std::ffi::c_int = -8;
        // SAFETY: mallopt sets one of the allocator's tunables and may be
        // called at any time; it takes plain integers and touches no memory
        // of ours. A refusal (0) leaves the default, which only costs memory.
        let _ = unsafe { mallopt(M_ARENA_MAX, 2) };
    }
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
