//! The command line's standard output. A closed stdout (`sessionpipe doctor |
//! head -1`) is the end of the output, not an error: later lines are dropped,
//! the command finishes its work and exits with its own code, with no message.
//!
//! Every command writes through `outln!` or `Stdout`; nothing in `cli` uses
//! `println!`, which panics on a closed pipe. Formatting helpers shared by the
//! commands' lines live here too. It never decides what a command says.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

static CLOSED: AtomicBool = AtomicBool::new(false);

/// Standard output, ending quietly when the reader went away.
pub struct Stdout;

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if !CLOSED.load(Ordering::Relaxed)
            && let Err(e) = io::stdout().lock().write_all(buf)
        {
            ended(&e);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if !CLOSED.load(Ordering::Relaxed)
            && let Err(e) = io::stdout().lock().flush()
        {
            ended(&e);
        }
        Ok(())
    }
}

/// Any write error ends the output (a closed pipe, a full disk under `>`): the
/// command's work is not undone because its report cannot be printed.
fn ended(e: &io::Error) {
    CLOSED.store(true, Ordering::Relaxed);
    if e.kind() != io::ErrorKind::BrokenPipe {
        tracing::debug!("stdout: {e}");
    }
}

/// True once stdout is closed: a command that streams stops.
pub fn closed() -> bool {
    CLOSED.load(Ordering::Relaxed)
}

/// One line to stdout.
pub fn line(args: std::fmt::Arguments<'_>) {
    let _ = writeln!(Stdout, "{args}");
}

/// `println!` for the command line: see the module.
macro_rules! outln {
    ($($t:tt)*) => { $crate::cli::out::line(format_args!($($t)*)) };
}
pub(crate) use outln;

/// `n` things for people: `1 session`, `2 sessions`, `0 events`.
pub fn count(n: impl Into<u64>, one: &str, many: &str) -> String {
    let n = n.into();
    format!("{n} {}", if n == 1 { one } else { many })
}

/// A byte count for people: `0 B`, `12.3 KiB`, `64.0 MiB`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    #[test]
    fn one_is_singular() {
        assert_eq!(super::count(1u64, "session", "sessions"), "1 session");
        assert_eq!(super::count(0u64, "event", "events"), "0 events");
        assert_eq!(super::count(2u64, "day", "days"), "2 days");
    }

    #[test]
    fn byte_counts_read_as_people_say_them() {
        assert_eq!(super::bytes(0), "0 B");
        assert_eq!(super::bytes(1023), "1023 B");
        assert_eq!(super::bytes(1536), "1.5 KiB");
        assert_eq!(super::bytes(64 << 20), "64.0 MiB");
    }
}
