//! The hook's build script: links GCC's unwinder statically (`libgcc_eh.a`) on
//! Linux with glibc, so the hook no longer loads `libgcc_s.so.1` at every start.
//!
//! Owns that one link choice and nothing else. It must not add a dependency (the
//! hook stays std only), and must never fail a build: where the static unwinder
//! is not found (another C toolchain, a cross build, macOS, Windows) it says
//! nothing and the hook links as before.
//!
//! Why: Rust's std on `*-linux-gnu` takes its unwinder from `libgcc_s.so.1`, a
//! second shared library the dynamic loader opens, maps, relocates and runs the
//! constructor of before the hook's first line, on every hook call. Linked
//! statically, the same unwinder (the one Rust itself uses for `crt-static`
//! builds) costs the hook about 24 KB of binary and saves that work: the hook's
//! CPU per call fell by about a tenth (BENCHMARKS.md, issue 35). Being a local
//! native library, `-lgcc_eh` comes on the link line before std's own
//! `-lgcc_s`, which `--as-needed` then leaves out once nothing needs it.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=CC");
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    if var("CARGO_CFG_TARGET_OS") != "linux"
        || var("CARGO_CFG_TARGET_ENV") != "gnu"
        || var("TARGET") != var("HOST")
    {
        return;
    }
    if let Some(dir) = static_unwinder_dir() {
        println!("cargo::rustc-link-search=native={}", dir.display());
        println!("cargo::rustc-link-lib=static=gcc_eh");
    }
}

/// The folder holding `libgcc_eh.a`, as the C compiler the linker runs names it.
fn static_unwinder_dir() -> Option<PathBuf> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let out = Command::new(cc)
        .arg("-print-file-name=libgcc_eh.a")
        .output()
        .ok()?;
    let path = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
    // Without the file, the compiler prints the bare name back.
    (out.status.success() && path.is_absolute() && path.is_file())
        .then(|| path.parent().map(PathBuf::from))
        .flatten()
}
