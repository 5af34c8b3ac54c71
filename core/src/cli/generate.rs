//! `sessionpipe completions SHELL` and `sessionpipe man --dir DIR`: the shell
//! completion scripts and the man pages, generated from the command line's
//! own definition so they never drift from it (the deb ships both).
//!
//! It owns rendering them from a `clap::Command` it is handed; it must not
//! know the commands themselves (the caller's definition is the one source).

use crate::cli::out::outln;
use anyhow::Context;
use std::path::Path;

/// Prints `shell`'s completion script for `cmd`.
pub fn completions(mut cmd: clap::Command, shell: clap_complete::Shell) {
    let name = cmd.get_name().to_string();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, name, &mut script);
    outln!("{}", String::from_utf8_lossy(&script).trim_end());
}

/// Writes `<name>.1` for `cmd` and `<name>-<sub>.1` for each of its commands
/// (theirs too) into `dir`; returns how many pages.
pub fn man_pages(cmd: clap::Command, dir: &Path) -> anyhow::Result<usize> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut cmd = cmd;
    cmd.build();
    let name = cmd.get_name().to_string();
    write_page(&cmd, &name, dir)
}

fn write_page(cmd: &clap::Command, name: &str, dir: &Path) -> anyhow::Result<usize> {
    let page = cmd.clone().name(name.to_string());
    let mut text = Vec::new();
    clap_mangen::Man::new(page)
        .render(&mut text)
        .context("rendering a man page")?;
    let path = dir.join(format!("{name}.1"));
    std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    let mut pages = 1;
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        pages += write_page(sub, &format!("{name}-{}", sub.get_name()), dir)?;
    }
    Ok(pages)
}
