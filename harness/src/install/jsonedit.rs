//! Byte-preserving edits of a plain JSON document.
//!
//! A harness's config is the person's file: we insert or remove our own members
//! and array elements by splicing text at the spans a small parser records, so
//! every byte outside our entries (indentation, key order, line endings, spacing,
//! a missing final newline) stays as it was. New text copies the style around it.
//! Validity is checked by `serde_json` first; this parser assumes valid JSON and
//! only records where things are. JSON allows a key twice in one object and
//! parsers keep the last; under the keys a format reads and writes, that is
//! refused (`Doc::parse_under`), so `get` finds the member the harness reads.

use super::format::Skip;
use serde_json::Value;

/// A JSON value and where it sits in the text (`start..end`, bytes).
#[derive(Clone, Debug)]
pub struct Node {
    pub start: usize,
    pub end: usize,
    pub kind: Kind,
}

#[derive(Clone, Debug)]
pub enum Kind {
    Object(Vec<Member>),
    Array(Vec<Node>),
    Scalar,
}

#[derive(Clone, Debug)]
pub struct Member {
    pub key: String,
    /// Where the member starts (its key's opening quote).
    pub start: usize,
    pub value: Node,
}

impl Node {
    pub fn members(&self) -> &[Member] {
        match &self.kind {
            Kind::Object(m) => m,
            _ => &[],
        }
    }

    pub fn elements(&self) -> &[Node] {
        match &self.kind {
            Kind::Array(e) => e,
            _ => &[],
        }
    }

    /// The first member named `key` (the only one, in a document read with
    /// `Doc::parse_under`, under its keys).
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.members()
            .iter()
            .find(|m| m.key == key)
            .map(|m| &m.value)
    }

    pub fn is_object(&self) -> bool {
        matches!(self.kind, Kind::Object(_))
    }

    pub fn is_array(&self) -> bool {
        matches!(self.kind, Kind::Array(_))
    }
}

/// The style of a document, read off its text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Style {
    pub newline: &'static str,
    pub indent: String,
    /// What sits between a key and its value: `": "` or `":"`.
    pub colon: String,
}

impl Style {
    pub fn of(text: &str) -> Style {
        let newline = if text.contains("\r\n") { "\r\n" } else { "\n" };
        let mut indent: Option<String> = None;
        for line in text.lines() {
            let ws: String = line
                .chars()
                .take_while(|c| *c == ' ' || *c == '\t')
                .collect();
            if ws.is_empty() || ws.len() == line.trim_end_matches('\r').len() {
                continue;
            }
            if ws.starts_with('\t') {
                indent = Some("\t".into());
                break;
            }
            if indent.as_ref().is_none_or(|i| ws.len() < i.len()) {
                indent = Some(ws);
            }
        }
        let colon = if text.contains("\": ") || !text.contains("\":") {
            ": "
        } else {
            ":"
        };
        Style {
            newline,
            indent: indent.unwrap_or_else(|| "  ".into()),
            colon: colon.into(),
        }
    }
}

/// A document: its text and the tree of spans.
pub struct Doc<'a> {
    pub text: &'a str,
    pub root: Node,
    pub style: Style,
    /// Bytes before the root (a UTF-8 byte-order mark), kept as they are.
    prefix: usize,
}

impl<'a> Doc<'a> {
    /// Parses `text`, which must be plain JSON (no comments, no trailing commas).
    /// An empty or whitespace-only text reads as `{}` with nothing to keep.
    pub fn parse(text: &'a str) -> Result<Doc<'a>, Skip> {
        let prefix = if text.starts_with('\u{feff}') { 3 } else { 0 };
        let body = &text[prefix..];
        if let Err(e) = serde_json::from_str::<Value>(body) {
            return Err(Skip::NotPlainJson {
                line: e.line(),
                column: e.column(),
                what: describe(&e),
            });
        }
        let mut p = Parser {
            b: text.as_bytes(),
            i: prefix,
        };
        p.ws();
        let root = p.value();
        Ok(Doc {
            text,
            root,
            style: Style::of(text),
            prefix,
        })
    }

    /// Parses `text` for a format whose entries live under the root's `keys`
    /// (`"hooks"`): as `parse`, and refused when one of those keys, or any key
    /// anywhere inside their values, is written twice in one object. The harness
    /// reads the last of two (JSON.parse), `get` finds the first: an entry found,
    /// judged or added in one would be absent from the other, and `status` would
    /// call current hooks that never run. A doubled key elsewhere is left to the
    /// person: no edit of ours reads or writes it, so the harness reads the same
    /// there before and after, and refusing would only stand in their way.
    pub fn parse_under(text: &'a str, keys: &[&str]) -> Result<Doc<'a>, Skip> {
        let doc = Doc::parse(text)?;
        let ours: Vec<&Member> = doc
            .root
            .members()
            .iter()
            .filter(|m| keys.contains(&m.key.as_str()))
            .collect();
        let twice = doubled(&ours).or_else(|| ours.iter().find_map(|m| doubled_in(&m.value)));
        match twice {
            Some((first, second)) => Err(Skip::DuplicateKey {
                key: second.key.clone(),
                first_line: doc.line_of(first.start),
                line: doc.line_of(second.start),
            }),
            None => Ok(doc),
        }
    }

    /// The line (from 1) that byte `pos` is on.
    fn line_of(&self, pos: usize) -> usize {
        self.text[..pos].matches('\n').count() + 1
    }

    /// The indentation of the line `pos` is on.
    fn line_indent(&self, pos: usize) -> &str {
        let line_start = self.text[..pos]
            .rfind('\n')
            .map(|i| i + 1)
            .unwrap_or(self.prefix);
        let line = &self.text[line_start..];
        let n = line.len() - line.trim_start_matches([' ', '\t']).len();
        &line[..n]
    }

    fn single_line(&self, node: &Node) -> bool {
        !self.text[node.start..node.end].contains('\n')
    }
}

/// The first member of `members` whose key an earlier one has, with that one.
fn doubled<'m>(members: &[&'m Member]) -> Option<(&'m Member, &'m Member)> {
    let mut seen = std::collections::HashMap::new();
    members
        .iter()
        .find_map(|m| seen.insert(m.key.as_str(), *m).map(|first| (first, *m)))
}

/// A key written twice in one object anywhere in `node`.
fn doubled_in(node: &Node) -> Option<(&Member, &Member)> {
    match &node.kind {
        Kind::Object(members) => {
            let refs: Vec<&Member> = members.iter().collect();
            doubled(&refs).or_else(|| members.iter().find_map(|m| doubled_in(&m.value)))
        }
        Kind::Array(elements) => elements.iter().find_map(doubled_in),
        Kind::Scalar => None,
    }
}

fn describe(e: &serde_json::Error) -> String {
    let s = e.to_string();
    // serde_json appends " at line L column C", already given.
    match s.rfind(" at line ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// Text splices collected against one document and applied together.
#[derive(Default)]
pub struct Edits {
    splices: Vec<(usize, usize, String)>,
}

impl Edits {
    pub fn is_empty(&self) -> bool {
        self.splices.is_empty()
    }

    /// Applies every splice to `text` (they must not overlap).
    pub fn apply(mut self, text: &str) -> String {
        self.splices.sort_by_key(|s| std::cmp::Reverse((s.0, s.1)));
        let mut out = text.to_string();
        for (start, end, with) in self.splices {
            out.replace_range(start..end, &with);
        }
        out
    }

    /// Appends `value` as the last element of `array`.
    pub fn push_element(&mut self, doc: &Doc<'_>, array: &Node, value: &Value) {
        self.add_item(doc, array, &|indent, style| render(value, indent, style));
    }

    /// Adds `"key": value` as the last member of `object`.
    pub fn add_member(&mut self, doc: &Doc<'_>, object: &Node, key: &str, value: &Value) {
        let key = Value::String(key.to_string()).to_string();
        self.add_item(doc, object, &|indent, style| {
            format!("{key}{}{}", style.colon, render(value, indent, style))
        });
    }

    /// Adds an item after the container's last one (or into an empty one). In a
    /// container written on one line the item is written on one line too.
    fn add_item(&mut self, doc: &Doc<'_>, container: &Node, item: &dyn Fn(&str, &Style) -> String) {
        let last_end = match &container.kind {
            Kind::Object(m) => m.last().map(|m| m.value.end),
            Kind::Array(e) => e.last().map(|e| e.end),
            Kind::Scalar => return,
        };
        let style = &doc.style;
        match last_end {
            Some(end) if doc.single_line(container) => {
                let one_line = Style {
                    newline: "",
                    indent: String::new(),
                    colon: style.colon.clone(),
                };
                self.splices
                    .push((end, end, format!(", {}", item("", &one_line))));
            }
            Some(end) => {
                let first_start = match &container.kind {
                    Kind::Object(m) => m[0].start,
                    Kind::Array(e) => e[0].start,
                    Kind::Scalar => unreachable!(),
                };
                let indent = doc.line_indent(first_start).to_string();
                let text = format!(",{}{indent}{}", style.newline, item(&indent, style));
                self.splices.push((end, end, text));
            }
            None => {
                let outer = doc.line_indent(container.start).to_string();
                let inner = format!("{outer}{}", style.indent);
                let text = format!(
                    "{}{inner}{}{}{outer}",
                    style.newline,
                    item(&inner, style),
                    style.newline
                );
                self.splices
                    .push((container.start + 1, container.end - 1, text));
            }
        }
    }

    /// Removes element `index` of `array` with the separator beside it.
    pub fn remove_element(&mut self, array: &Node, index: usize) {
        let spans: Vec<(usize, usize)> =
            array.elements().iter().map(|e| (e.start, e.end)).collect();
        self.remove_item(array, &spans, index);
    }

    /// Removes member `index` of `object` with the separator beside it.
    pub fn remove_member(&mut self, object: &Node, index: usize) {
        let spans: Vec<(usize, usize)> = object
            .members()
            .iter()
            .map(|m| (m.start, m.value.end))
            .collect();
        self.remove_item(object, &spans, index);
    }

    fn remove_item(&mut self, container: &Node, spans: &[(usize, usize)], i: usize) {
        let splice = if spans.len() == 1 {
            (container.start + 1, container.end - 1)
        } else if i + 1 == spans.len() {
            (spans[i - 1].1, spans[i].1)
        } else {
            (spans[i].0, spans[i + 1].0)
        };
        self.splices.push((splice.0, splice.1, String::new()));
    }
}

/// `value` as pretty JSON whose first line continues at `indent` and whose nested
/// lines are indented from there, in the document's style.
pub fn render(value: &Value, indent: &str, style: &Style) -> String {
    let mut out = String::new();
    render_into(&mut out, value, indent, style);
    out
}

fn render_into(out: &mut String, value: &Value, indent: &str, style: &Style) {
    let inner = format!("{indent}{}", style.indent);
    match value {
        Value::Object(m) if !m.is_empty() => {
            out.push('{');
            for (i, (k, v)) in m.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(style.newline);
                out.push_str(&inner);
                out.push_str(&Value::String(k.clone()).to_string());
                out.push_str(&style.colon);
                render_into(out, v, &inner, style);
            }
            out.push_str(style.newline);
            out.push_str(indent);
            out.push('}');
        }
        Value::Array(a) if !a.is_empty() => {
            out.push('[');
            for (i, v) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(style.newline);
                out.push_str(&inner);
                render_into(out, v, &inner, style);
            }
            out.push_str(style.newline);
            out.push_str(indent);
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

struct Parser<'a> {
    b: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.i < self.b.len() && matches!(self.b[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn value(&mut self) -> Node {
        let start = self.i;
        match self.b.get(self.i) {
            Some(b'{') => {
                self.i += 1;
                let mut members = Vec::new();
                loop {
                    self.ws();
                    if self.b[self.i] == b'}' {
                        self.i += 1;
                        break;
                    }
                    let key_start = self.i;
                    let key = self.string();
                    self.ws();
                    self.i += 1; // ':'
                    self.ws();
                    let value = self.value();
                    members.push(Member {
                        key,
                        start: key_start,
                        value,
                    });
                    self.ws();
                    if self.b[self.i] == b',' {
                        self.i += 1;
                    }
                }
                Node {
                    start,
                    end: self.i,
                    kind: Kind::Object(members),
                }
            }
            Some(b'[') => {
                self.i += 1;
                let mut elements = Vec::new();
                loop {
                    self.ws();
                    if self.b[self.i] == b']' {
                        self.i += 1;
                        break;
                    }
                    elements.push(self.value());
                    self.ws();
                    if self.b[self.i] == b',' {
                        self.i += 1;
                    }
                }
                Node {
                    start,
                    end: self.i,
                    kind: Kind::Array(elements),
                }
            }
            Some(b'"') => {
                self.string();
                Node {
                    start,
                    end: self.i,
                    kind: Kind::Scalar,
                }
            }
            _ => {
                while self.i < self.b.len()
                    && !matches!(
                        self.b[self.i],
                        b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'
                    )
                {
                    self.i += 1;
                }
                Node {
                    start,
                    end: self.i,
                    kind: Kind::Scalar,
                }
            }
        }
    }

    /// Reads a string literal and returns its decoded value.
    fn string(&mut self) -> String {
        let start = self.i;
        self.i += 1;
        while self.b[self.i] != b'"' {
            if self.b[self.i] == b'\\' {
                self.i += 1;
            }
            self.i += 1;
        }
        self.i += 1;
        let raw = std::str::from_utf8(&self.b[start..self.i]).unwrap_or("\"\"");
        serde_json::from_str(raw).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn add(text: &str, key: &str, v: Value) -> String {
        let doc = Doc::parse(text).unwrap();
        let mut e = Edits::default();
        e.add_member(&doc, &doc.root, key, &v);
        e.apply(text)
    }

    #[test]
    fn refuses_comments_and_trailing_commas_with_a_position() {
        let err = Doc::parse("{\n  // hi\n  \"a\": 1\n}").err().unwrap();
        assert!(
            err.to_string().starts_with("not plain JSON (line 2"),
            "{err}"
        );
        assert!(Doc::parse("{\"a\": 1,}").is_err());
    }

    #[test]
    fn a_doubled_key_is_refused_under_our_keys_only() {
        let text =
            "{\n  \"hooks\": {},\n  \"model\": 1,\n  \"model\": 2,\n  \"hooks\": {\"Stop\": []}\n}";
        let err = Doc::parse_under(text, &["hooks"]).err().unwrap();
        assert_eq!(
            err,
            Skip::DuplicateKey {
                key: "hooks".into(),
                first_line: 2,
                line: 5
            }
        );
        assert!(
            err.to_string()
                .starts_with("not plain JSON (duplicate key \"hooks\" on lines 2 and 5"),
            "{err}"
        );
        assert!(
            Doc::parse_under(text, &["statusLine"]).is_ok(),
            "\"model\" is not ours"
        );
        assert!(Doc::parse(text).is_ok());
        // At any depth under ours, and one key spelled two ways is one key.
        for deep in [
            "{\"hooks\": {\"Stop\": [], \"Stop\": []}}",
            "{\"hooks\": {\"Stop\": [{\"hooks\": [{\"command\": \"a\", \"command\": \"b\"}]}]}}",
            "{\"hooks\": {\"S\\u0074op\": [], \"Stop\": []}}",
        ] {
            assert!(
                matches!(
                    Doc::parse_under(deep, &["hooks"]),
                    Err(Skip::DuplicateKey { .. })
                ),
                "{deep}"
            );
        }
        assert!(
            Doc::parse_under("{\"a\": {\"x\": 1, \"x\": 2}, \"hooks\": {}}", &["hooks"]).is_ok()
        );
    }

    #[test]
    fn adds_members_in_the_documents_style() {
        assert_eq!(
            add("{\n    \"a\": 1\n}\n", "b", json!({"c": [1]})),
            "{\n    \"a\": 1,\n    \"b\": {\n        \"c\": [\n            1\n        ]\n    }\n}\n"
        );
        assert_eq!(
            add("{\r\n\t\"a\": 1\r\n}", "b", json!(2)),
            "{\r\n\t\"a\": 1,\r\n\t\"b\": 2\r\n}"
        );
        assert_eq!(
            add("{}", "b", json!({"x": 1})),
            "{\n  \"b\": {\n    \"x\": 1\n  }\n}"
        );
        assert_eq!(
            add("{\"a\":1}", "b", json!({"x": 1})),
            "{\"a\":1, \"b\":{\"x\":1}}"
        );
    }

    #[test]
    fn removal_is_the_inverse_of_addition() {
        let originals = [
            "{\n  \"a\": 1\n}\n",
            "{\r\n\t\"a\": [\r\n\t\t1\r\n\t]\r\n}",
            "{}",
            "{\"a\":1}",
            "{\n  \"z\": {\"deep\": [1, 2]},\n  \"a\": []\n}",
        ];
        for original in originals {
            let added = add(original, "ours", json!({"k": ["v"]}));
            let doc = Doc::parse(&added).unwrap();
            let idx = doc
                .root
                .members()
                .iter()
                .position(|m| m.key == "ours")
                .unwrap();
            let mut e = Edits::default();
            e.remove_member(&doc.root, idx);
            assert_eq!(e.apply(&added), original, "from {added:?}");
        }
    }

    #[test]
    fn elements_are_added_and_removed_in_place() {
        let text = "{\"a\": [\n  1,\n  2\n]}";
        let doc = Doc::parse(text).unwrap();
        let arr = doc.root.get("a").unwrap();
        let mut e = Edits::default();
        e.push_element(&doc, arr, &json!(3));
        let grown = e.apply(text);
        assert_eq!(grown, "{\"a\": [\n  1,\n  2,\n  3\n]}");
        let doc = Doc::parse(&grown).unwrap();
        let arr = doc.root.get("a").unwrap();
        for (i, want) in [
            (0, "{\"a\": [\n  2,\n  3\n]}"),
            (1, "{\"a\": [\n  1,\n  3\n]}"),
            (2, text),
        ] {
            let mut e = Edits::default();
            e.remove_element(arr, i);
            assert_eq!(e.apply(&grown), want);
        }
    }

    #[test]
    fn keeps_a_byte_order_mark_and_reads_strings_with_escapes() {
        let text = "\u{feff}{\"k\\\"ey\": \"v\"}";
        let doc = Doc::parse(text).unwrap();
        assert_eq!(doc.root.members()[0].key, "k\"ey");
        let mut e = Edits::default();
        e.add_member(&doc, &doc.root, "n", &json!(1));
        assert!(e.apply(text).starts_with('\u{feff}'));
    }

    #[test]
    fn style_detection() {
        assert_eq!(
            Style::of("{\n    \"a\": {\n        \"b\": 1\n    }\n}").indent,
            "    "
        );
        assert_eq!(Style::of("{\n\t\"a\": 1\n}").indent, "\t");
        assert_eq!(Style::of("{\"a\":1}").colon, ":");
        assert_eq!(Style::of("{}").colon, ": ");
        assert_eq!(Style::of("{\r\n}").newline, "\r\n");
    }
}
