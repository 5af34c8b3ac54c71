//! The paths a `files.changed` carries: repo- or `~`-relative (PROTOCOL-NOTES
//! §3), made from the absolute paths a harness's file hooks and edit tools
//! name (the adapters', the pipeline's and the changes view's one rule).
//!
//! A path inside one of the session's folders (the workspace roots the payload
//! names) is written relative to it; one elsewhere under the home as `~/…`; a
//! relative path is taken as relative to the folder already. Anything else (a
//! path outside both, one that climbs out with `..`) is left out: the event's
//! paths say where in the session's tree a file is, and never name the rest of
//! the machine. Pure string work, no I/O.

use std::path::{Component, Path};

/// `paths` as a `files.changed` names them, in order, each once.
pub fn relative_paths<'a>(
    paths: impl IntoIterator<Item = &'a str>,
    roots: &[String],
    home: Option<&str>,
) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in paths {
        if let Some(r) = relative_path(p, roots, home)
            && !out.contains(&r)
        {
            out.push(r);
        }
    }
    out
}

/// `path` relative to the innermost of `roots` it is inside, else `~/…` under
/// `home`; `None` outside both.
pub fn relative_path(path: &str, roots: &[String], home: Option<&str>) -> Option<String> {
    let p = Path::new(path);
    if path.is_empty() {
        return None;
    }
    if !p.is_absolute() {
        return clean(p);
    }
    // The innermost root first: a multi-root workspace may nest one in another.
    let mut roots: Vec<&str> = roots.iter().map(String::as_str).collect();
    roots.sort_by_key(|r| std::cmp::Reverse(r.len()));
    for root in roots.iter().filter(|r| !r.is_empty()) {
        if let Ok(rest) = p.strip_prefix(root) {
            return clean(rest);
        }
    }
    let rest = p.strip_prefix(home.filter(|h| !h.is_empty())?).ok()?;
    clean(rest).map(|r| format!("~/{r}"))
}

/// `p` (relative) with `/` between its parts, `.` dropped; `None` when it is
/// empty or climbs above its start.
fn clean(p: &Path) -> Option<String> {
    let mut parts: Vec<String> = Vec::new();
    for c in p.components() {
        match c {
            Component::Normal(s) => parts.push(s.to_string_lossy().into_owned()),
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(paths: &[&str], roots: &[&str]) -> Vec<String> {
        let roots: Vec<String> = roots.iter().map(|r| r.to_string()).collect();
        relative_paths(paths.iter().copied(), &roots, Some("/home/ann"))
    }

    #[test]
    fn inside_a_root_inside_the_home_or_left_out() {
        assert_eq!(
            rel(
                &[
                    "/home/ann/src/app/src/main.ts",
                    "/home/ann/notes.md",
                    "/etc/hosts",
                    "lib/x.rs",
                    "./lib/y.rs",
                ],
                &["/home/ann/src/app"]
            ),
            ["src/main.ts", "~/notes.md", "lib/x.rs", "lib/y.rs"]
        );
    }

    #[test]
    fn the_innermost_root_wins_and_duplicates_go() {
        assert_eq!(
            rel(
                &["/w/inner/a.rs", "/w/b.rs", "/w/inner/a.rs"],
                &["/w", "/w/inner"]
            ),
            ["a.rs", "b.rs"]
        );
    }

    #[test]
    fn nothing_climbs_out_or_names_a_folder_itself() {
        assert!(rel(&["../../etc/passwd", "/w", "", "a/../.."], &["/w"]).is_empty());
        assert_eq!(
            rel(&["a/../b.rs", "/w/x/../y.rs"], &["/w"]),
            ["b.rs", "y.rs"]
        );
        // A root that only shares a prefix of its name is no root of the file.
        assert_eq!(rel(&["/w2/a.rs"], &["/w"]), Vec::<String>::new());
    }
}
