//! The generated TypeScript files of `web-shared/src/generated/`: the shapes
//! the web pages read, declared from the Rust types that serialize them
//! (ts-rs derives `TS` on them in their crate's tests and reads their serde
//! attributes). A test hands the text to `reference::check_or_write`, which
//! compares it with the committed file (or writes it with
//! `SESSIONPIPE_WRITE_REFERENCE=1`), as for the book's generated pages.
//!
//! Owns the files' layout (a header saying where they come from, then each
//! type once: the ones asked for in their order, each followed by the types
//! it names, by name). The shapes themselves are the types' and ts-rs's.

use std::any::TypeId;
use std::collections::HashSet;
use ts_rs::{TS, TypeVisitor};

/// Declares one type (and what it names) into a file.
type Declare = fn(&mut Declarations);

/// A file of declarations being put together.
pub struct Declarations {
    cfg: ts_rs::Config,
    seen: HashSet<TypeId>,
    /// Each name declared, with its declaration: two types may declare one
    /// name only with the same text (`Map<String, Value>` and `Value` both
    /// declare `JsonValue`).
    names: Vec<(String, String)>,
    out: Vec<String>,
}

impl Default for Declarations {
    fn default() -> Self {
        Declarations::new()
    }
}

impl Declarations {
    /// JSON has one number type: 64-bit integers are `number` (every value
    /// the APIs send fits in 2^53).
    pub fn new() -> Declarations {
        Declarations {
            cfg: ts_rs::Config::new().with_large_int("number"),
            seen: HashSet::new(),
            names: Vec::new(),
            out: Vec::new(),
        }
    }

    /// Declares `T`, then every type it names that is not declared yet.
    pub fn add<T: TS + 'static + ?Sized>(&mut self) -> &mut Self {
        self.declare::<T>();
        self
    }

    /// A declaration written out, for a shape made of declared ones (an
    /// alias, an `Omit`): it must name only types of this file.
    pub fn text(&mut self, declaration: &str) -> &mut Self {
        self.out.push(declaration.trim_end().to_string());
        self
    }

    fn declare<T: TS + 'static + ?Sized>(&mut self) {
        if T::output_path().is_none() || !self.seen.insert(TypeId::of::<T>()) {
            return;
        }
        let (name, decl) = (T::ident(&self.cfg), T::decl(&self.cfg));
        match self.names.iter().find(|(n, _)| *n == name) {
            Some((_, same)) if *same == decl => {}
            Some((_, other)) => panic!("two types declare {name}: {other} and {decl}"),
            None => {
                let docs = T::docs().map(|d| format!("{}\n", d.trim_end()));
                self.out
                    .push(format!("{}export {decl}", docs.unwrap_or_default()));
                self.names.push((name, decl));
            }
        }
        // ts-rs visits a type's dependencies in no fixed order (it changes
        // from one build to the next): they are declared by name instead, so
        // that the file's text depends on the types alone.
        struct Visit<'a> {
            cfg: &'a ts_rs::Config,
            found: Vec<(String, Declare)>,
        }
        impl TypeVisitor for Visit<'_> {
            fn visit<U: TS + 'static + ?Sized>(&mut self) {
                if U::output_path().is_some() {
                    self.found
                        .push((U::ident(self.cfg), Declarations::declare::<U>));
                }
            }
        }
        let mut visit = Visit {
            cfg: &self.cfg,
            found: Vec::new(),
        };
        T::visit_dependencies(&mut visit);
        let mut found = visit.found;
        found.sort_by(|a, b| a.0.cmp(&b.0));
        for (_, declare) in found {
            declare(self);
        }
    }

    /// The file: `header` (a comment, each line as given), then the declarations.
    pub fn render(&self, header: &str) -> String {
        let mut text = String::new();
        for line in header.trim_end().lines() {
            text.push_str(if line.is_empty() { "//" } else { "// " });
            text.push_str(line);
            text.push('\n');
        }
        for d in &self.out {
            text.push('\n');
            text.push_str(d);
            text.push('\n');
        }
        text
    }
}
