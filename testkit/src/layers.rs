//! Reading a crate's module structure from its source, for the tests that hold
//! the code to its layers: which modules a file names (`crate::…`, `super::…`,
//! and a folder module's own children), and the circles among them.
//!
//! It reads text, not the compiler's view: a path built by a macro is not seen.
//! It stops at a file's `#[cfg(test)] mod tests` (tests sit at the end of a file
//! and may reach across layers to set things up).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One source file: its module path (`["daemon", "api", "views"]`) and text.
#[derive(Clone, Debug)]
pub struct File {
    pub module: Vec<String>,
    pub path: PathBuf,
    /// `mod.rs` (or `lib.rs`): the module's own file, not a child's.
    pub is_mod: bool,
    pub text: String,
}

/// Every `.rs` file under `src`, `lib.rs` as the root module.
pub fn files(src: &Path) -> Vec<File> {
    let mut out = Vec::new();
    walk(src, src, &mut out);
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

fn walk(src: &Path, dir: &Path, out: &mut Vec<File>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(src, &p, out);
            continue;
        }
        if p.extension().is_none_or(|x| x != "rs") {
            continue;
        }
        let rel = p.strip_prefix(src).expect("under src");
        let mut module: Vec<String> = rel
            .parent()
            .map(|d| d.iter().map(|c| c.to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        let stem = p
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let is_mod = matches!(stem.as_str(), "mod" | "lib" | "main");
        if !is_mod {
            module.push(stem);
        }
        let text = std::fs::read_to_string(&p).unwrap_or_default();
        out.push(File {
            module,
            path: p,
            is_mod,
            text,
        });
    }
}

/// The file's code before its test module.
pub fn code(text: &str) -> &str {
    match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    }
}

/// The code without comments and string literals, so a path in a doc or a
/// message is not read as an import.
fn strip(code: &str) -> String {
    let b = code.as_bytes();
    let mut out = String::with_capacity(code.len());
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            i += 2;
            while i + 1 < b.len() && !b[i..].starts_with(b"*/") {
                i += 1;
            }
            i += 2;
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if b[i] == b'\'' && i + 2 < b.len() && (b[i + 2] == b'\'' || b[i + 1] == b'\\') {
            // A char literal ('x' or '\n'); a lifetime has no closing quote.
            i += 1;
            while i < b.len() && b[i] != b'\'' {
                i += 1;
            }
            i += 1;
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    out
}

fn ident_at(s: &str, at: usize) -> Option<&str> {
    let rest = &s[at..];
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    (end > 0).then(|| &rest[..end])
}

/// The paths a use-tree at `at` names: `a::b::c`, or `a::{b, c::d}` (each
/// item with the prefix before the group). Lowercase segments only: a type or a
/// function ends the module path, which is all the layering needs.
fn paths_at(s: &str, at: usize) -> Vec<Vec<String>> {
    let mut prefix = Vec::new();
    let mut i = at;
    loop {
        if s[i..].starts_with('{') {
            let mut out = Vec::new();
            let mut depth = 0;
            let mut start = i + 1;
            for (k, c) in s[i + 1..].char_indices() {
                let pos = i + 1 + k;
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        out.extend(item(s, start, pos, &prefix));
                        return out;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        out.extend(item(s, start, pos, &prefix));
                        start = pos + 1;
                    }
                    _ => {}
                }
            }
            return out;
        }
        let Some(id) = ident_at(s, i) else {
            return if prefix.is_empty() {
                vec![]
            } else {
                vec![prefix]
            };
        };
        i += id.len();
        // A call or a macro (`f(`, `m!`) ends the path: it is no module.
        let called = s[i..].starts_with('(') || s[i..].starts_with('!');
        let module_like = !called && id.starts_with(|c: char| c.is_ascii_lowercase() || c == '_');
        if module_like && id != "self" {
            prefix.push(id.to_string());
        }
        if !module_like || !s[i..].starts_with("::") {
            return if prefix.is_empty() {
                vec![]
            } else {
                vec![prefix]
            };
        }
        i += 2;
    }
}

/// One item of a group, between `start` and `end`, with the group's prefix.
fn item(s: &str, start: usize, end: usize, prefix: &[String]) -> Vec<Vec<String>> {
    let text = &s[start..end];
    let lead = text.len() - text.trim_start().len();
    let at = start + lead;
    if at >= end {
        return vec![];
    }
    let inner = paths_at(&s[..end], at);
    let mut out: Vec<Vec<String>> = inner
        .into_iter()
        .map(|p| prefix.iter().cloned().chain(p).collect())
        .collect();
    if out.is_empty() && !prefix.is_empty() {
        out.push(prefix.to_vec()); // `self`, or a type of the prefix module
    }
    out
}

/// The module paths (absolute, from the crate root) a file names through
/// `crate::` and `super::`, each cut to the first name after the prefix.
pub fn references(file: &File) -> BTreeSet<Vec<String>> {
    let code = strip(code(&file.text));
    let mut out = BTreeSet::new();
    // `super` is the parent of the module the file is.
    let parent: Vec<String> = file.module[..file.module.len().saturating_sub(1)].to_vec();
    for (prefix, base) in [("crate::", Vec::new()), ("super::", parent)] {
        let mut from = 0;
        while let Some(i) = code[from..].find(prefix) {
            let at = from + i;
            from = at + prefix.len();
            let before = code[..at].chars().last();
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
                continue; // `foo::crate::`, or `super::super::` read from its start
            }
            // `super::super::x`: go up once more per extra `super::`.
            let mut base = base.clone();
            let mut at = from;
            while code[at..].starts_with("super::") {
                base.pop();
                at += "super::".len();
            }
            let named = paths_at(&code, at);
            if named.is_empty() {
                out.insert(base.clone()); // `super::Item`: the parent module itself
            }
            for p in named {
                out.insert(base.iter().cloned().chain(p).collect());
            }
        }
    }
    out
}

/// True when the file's code (before its tests, without comments and
/// strings) names the crate `krate`: a path from it (`krate::…`), or the
/// crate itself (`use krate as k;`, `use {krate, …}`); a module of that name
/// under another path (`crate::krate`) is not the crate. How a crate of the
/// workspace above or beside a layer is found in it.
pub fn names_crate(file: &File, krate: &str) -> bool {
    let code = strip(code(&file.text));
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    code.match_indices(krate).any(|(i, _)| {
        let before = code[..i].chars().last();
        let after = code[i + krate.len()..].chars().next();
        !before.is_some_and(|c| ident(c) || c == ':') && !after.is_some_and(ident)
    })
}

/// The children of module `parent` (one name each), from the files.
pub fn children(files: &[File], parent: &[String]) -> BTreeSet<String> {
    files
        .iter()
        .filter(|f| f.module.len() > parent.len() && f.module.starts_with(parent))
        .map(|f| f.module[parent.len()].clone())
        .collect()
}

/// Which of `parent`'s children (and `parent` itself, as `""`) each of them
/// names: the graph a folder module's circles are looked for in. The parent's
/// own file names a child by `child::` or `self::child`.
pub fn child_graph(files: &[File], parent: &[String]) -> BTreeMap<String, BTreeSet<String>> {
    let kids = children(files, parent);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in files.iter().filter(|f| f.module.starts_with(parent)) {
        let from = if f.module.len() == parent.len() {
            String::new()
        } else {
            f.module[parent.len()].clone()
        };
        let entry = graph.entry(from.clone()).or_default();
        for r in references(f) {
            if r.len() >= parent.len() && r.starts_with(parent) {
                let to = r
                    .get(parent.len())
                    .filter(|k| kids.contains(*k))
                    .cloned()
                    .unwrap_or_default();
                if to != from {
                    entry.insert(to);
                }
            }
        }
        if from.is_empty() {
            let code = strip(code(&f.text));
            for k in &kids {
                let named = [format!("{k}::"), format!("self::{k}")];
                let uses = named.iter().any(|n| {
                    code.match_indices(n.as_str()).any(|(i, _)| {
                        !code[..i]
                            .chars()
                            .last()
                            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
                    })
                });
                if uses {
                    entry.insert(k.clone());
                }
            }
        }
    }
    graph
}

/// A circle of the graph, if it has one (its nodes in order).
pub fn circle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(n.to_string(), 1);
        stack.push(n.to_string());
        for m in graph.get(n).into_iter().flatten() {
            match state.get(m.as_str()).copied().unwrap_or(0) {
                1 => {
                    let start = stack.iter().position(|s| s == m).unwrap_or(0);
                    let mut c = stack[start..].to_vec();
                    c.push(m.clone());
                    return Some(c);
                }
                0 => {
                    if let Some(c) = visit(m, graph, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(n.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in graph.keys() {
        if state.get(n.as_str()).copied().unwrap_or(0) == 0
            && let Some(c) = visit(n, graph, &mut state, &mut Vec::new())
        {
            return Some(c);
        }
    }
    None
}

/// The layer a top-level module's opening doc names: `//! Layer N, …`.
pub fn declared_layer(file: &File) -> Option<u32> {
    let first = file.text.lines().find(|l| l.starts_with("//!"))?;
    let rest = first
        .trim_start_matches("//!")
        .trim()
        .strip_prefix("Layer ")?;
    rest.split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(module: &[&str], is_mod: bool, text: &str) -> File {
        File {
            module: module.iter().map(|s| s.to_string()).collect(),
            path: PathBuf::new(),
            is_mod,
            text: text.into(),
        }
    }

    #[test]
    fn paths_groups_supers_and_not_strings_or_comments() {
        let f = file(
            &["daemon", "api", "views"],
            false,
            "use crate::{pipeline::outbox, state};\nuse super::error::ApiError;\n// crate::cli\nlet s = \"crate::sinks\";\nsuper::super::wake::x();\n#[cfg(test)]\nmod tests { use crate::tail; }",
        );
        let got: Vec<String> = references(&f).into_iter().map(|p| p.join("::")).collect();
        assert_eq!(
            got,
            [
                "daemon::api::error",
                "daemon::wake",
                "pipeline::outbox",
                "state"
            ]
        );
    }

    #[test]
    fn a_crate_is_named_by_its_paths_not_its_words() {
        let f = file(
            &["pipeline", "x"],
            false,
            "use my_sessionpipe_control::y;\n// sessionpipe_control::z\nlet s = \"sessionpipe_control::w\";",
        );
        assert!(!names_crate(&f, "sessionpipe_control"));
        let f = file(
            &["pipeline", "x"],
            false,
            "fn f() { sessionpipe_control::run::go() }",
        );
        assert!(names_crate(&f, "sessionpipe_control"));
        for named in [
            "use sessionpipe_control as c;",
            "use {sessionpipe_control, std};",
        ] {
            assert!(
                names_crate(
                    &file(&["pipeline", "x"], false, named),
                    "sessionpipe_control"
                ),
                "{named}"
            );
        }
        for not in [
            "use crate::sessionpipe_control::y;",
            "use sessionpipe_controls::y;",
        ] {
            assert!(
                !names_crate(&file(&["pipeline", "x"], false, not), "sessionpipe_control"),
                "{not}"
            );
        }
    }

    #[test]
    fn a_circle_is_found_and_a_tree_has_none() {
        let g = |edges: &[(&str, &str)]| {
            let mut m: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
            for (a, b) in edges {
                m.entry(a.to_string()).or_default().insert(b.to_string());
                m.entry(b.to_string()).or_default();
            }
            m
        };
        assert_eq!(circle(&g(&[("a", "b"), ("b", "c"), ("a", "c")])), None);
        assert_eq!(
            circle(&g(&[("a", "b"), ("b", "c"), ("c", "a")])),
            Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
        );
    }

    #[test]
    fn a_parent_naming_its_child_and_the_child_its_parent_is_a_circle() {
        let files = [
            file(
                &["api"],
                true,
                "mod views;\npub fn go() { views::run() }\npub struct Ctx;",
            ),
            file(&["api", "views"], false, "use super::Ctx;\npub fn run() {}"),
        ];
        let g = child_graph(&files, &["api".to_string()]);
        assert!(circle(&g).is_some(), "{g:?}");
        let layered = [
            file(
                &["api"],
                true,
                "mod views;\nmod ctx;\npub fn go() { views::run() }",
            ),
            file(
                &["api", "views"],
                false,
                "use super::ctx::Ctx;\npub fn run() {}",
            ),
            file(&["api", "ctx"], false, "pub struct Ctx;"),
        ];
        assert_eq!(circle(&child_graph(&layered, &["api".to_string()])), None);
    }
}
