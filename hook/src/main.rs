//! `sessionpipe-hook <harness> <event>`: the only program a coding agent waits on.
//!
//! It owns the hook path and nothing else: read the payload from stdin, write it as
//! one job file into the spool (atomically: a hidden temp file renamed into place),
//! wake the daemon over its local socket, start a detached drain worker when no
//! daemon answers, print what the harness parses (almost always nothing) and exit 0.
//! One more duty, only when its arguments carry `--previous-notify`: Codex's notify
//! entry stands in for the person's own notify, which `chain` starts, detached.
//!
//! It must not parse the payload, talk to the network, take a lock, wait for the
//! daemon, or fail in any way a harness could see: every error ends in exit 0 and
//! silence. The two control exceptions (`control`) are the only waits: where
//! control is on, a Stop and a permission prompt ask the daemon's socket for a
//! verified message and print the daemon's answer. It depends on std alone so that it starts in about a millisecond.
//! One call is the exception to parsing and silence: Claude Code's status line
//! (`claude-code StatusLine`), whose limits `status_line` reads, prints as the
//! line and spools only when they changed.
//!
//! The job file format, the state dir's rule and the wake datagram are the
//! `sessionpipe-spool` crate's, which the daemon reads with: one copy of each.
//!
//! `no_main`: Rust's own start-up (stack-guard discovery through
//! `/proc/self/maps`, an alternate signal stack) costs a measurable share of a
//! process this short (BENCHMARKS.md). The C `main` below does what of it the hook
//! needs: ignore SIGPIPE, so a harness that closed our stdout never sees a signal
//! death instead of exit 0. std works as usual (glibc hands it argv and environ).
//! On Linux with glibc, `build.rs` links the unwinder statically, so the loader
//! opens one shared library (libc), not two.

// Tests run under libtest's own main.
#![cfg_attr(not(test), no_main)]

mod chain;
mod control;
mod status_line;
mod stdout_rule;
mod wake;

use spool::job::{self, Job};
use spool::paths::state_dir;
use std::io::Write;

#[cfg(all(unix, not(test)))]
unsafe extern "C" {
    fn signal(signum: i32, handler: usize) -> usize;
}

/// The C entry point (see the module comment).
#[cfg(not(test))]
#[unsafe(no_mangle)]
extern "C" fn main(_argc: i32, _argv: *const *const u8) -> i32 {
    #[cfg(unix)]
    {
        const SIGPIPE: i32 = 13;
        const SIG_IGN: usize = 1;
        // SAFETY: setting a signal's disposition to "ignore" has no preconditions.
        unsafe { signal(SIGPIPE, SIG_IGN) };
    }
    run();
    0
}

// Unit tests cover the parts; the whole binary is tested in core/tests/hook_path.rs.
#[cfg_attr(test, allow(dead_code))]
fn run() {
    let args: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let harness = args.first().map(String::as_str).unwrap_or("");
    let event = args.get(1).map(String::as_str).unwrap_or("");
    if (harness, event) == ("claude-code", "StatusLine") {
        status_line::run(state_dir().as_deref(), &args);
        return;
    }

    let mut control_answer = None;
    match state_dir() {
        Some(dir) => match spool_stdin(&dir, &args) {
            Ok(job) => {
                wake::wake_or_start_worker(&dir);
                // The two control exceptions: a Stop's block, a permission
                // decision, each only from a message the daemon verified.
                if let Some(ask) = control::asks(harness, event) {
                    control_answer =
                        control::ask_daemon(&spool::StatePaths::new(&dir), harness, &job, ask);
                }
            }
            // A full disk or an unwritable state dir loses this payload: the
            // harness must not notice, but the person will (the loss markers'
            // times need no space). Read what is left so it never blocks.
            Err(_) => {
                spool::loss::record(&spool::StatePaths::new(&dir), std::time::SystemTime::now());
                job::drain_stdin()
            }
        },
        None => job::drain_stdin(),
    }
    // Codex's notify entry may stand in for the person's own notify: run it too.
    chain::run_previous(&args);

    if let Some(answer) = control_answer {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(&answer);
        let _ = out.flush();
    } else if let Some(answer) = stdout_rule::answer(harness, event) {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(answer.as_bytes());
        let _ = out.flush();
    }
    // Exit 0 whatever happened above: the hook path is invisible.
}

/// Reads stdin into a new job in the state dir's spool.
#[cfg_attr(test, allow(dead_code))]
fn spool_stdin(state_dir: &std::path::Path, args: &[String]) -> std::io::Result<String> {
    let call = Job::of_this_process(args, job::now_ns());
    let spool = spool::StatePaths::new(state_dir).spool();
    job::write(&spool, &call, &mut std::io::stdin().lock())
}
