//! A small JSON reader, std only: the daemon reads a job's trailer with it, the
//! hook the few payloads it must (the status line's limits, the previous notify
//! argv `chain` carries); every other payload is spooled as bytes unread.
//!
//! It owns turning one complete JSON document into a [`Value`] tree, and nothing
//! else: no writer, no streaming, no error messages. Every malformed input (bad
//! UTF-8, a truncated document, trailing bytes, nesting deeper than
//! [`MAX_DEPTH`]) is `None`, never a panic, because the hook must never fail in
//! a way a harness could see. A number keeps its literal, so a nanosecond clock
//! reads back exactly (`as_u64`), which an `f64` could not hold.

/// Deeper documents are refused: recursion stays far from the stack's end on
/// any input, and no harness sends anything nested this deep.
pub const MAX_DEPTH: usize = 64;

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    /// The number's literal, as valid JSON grammar.
    Number(String),
    String(String),
    Array(Vec<Value>),
    /// Members in document order (a repeated key keeps both; `get` finds the first).
    Object(Vec<(String, Value)>),
}

impl Value {
    /// The member `key` of an object.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.members()?
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
    }

    pub fn members(&self) -> Option<&[(String, Value)]> {
        match self {
            Value::Object(m) => Some(m),
            _ => None,
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Number(n) => n.parse().ok(),
            _ => None,
        }
    }

    /// A non-negative integer written without fraction or exponent.
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Value::Number(n) => n.parse().ok(),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }
}

/// The document in `bytes` (surrounding whitespace allowed), or `None`.
pub fn parse(bytes: &[u8]) -> Option<Value> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut p = Parser {
        s: text,
        b: text.as_bytes(),
        i: 0,
    };
    p.ws();
    let v = p.value(0)?;
    p.ws();
    (p.i == p.b.len()).then_some(v)
}

struct Parser<'a> {
    s: &'a str,
    b: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let c = self.peek()?;
        self.i += 1;
        Some(c)
    }

    fn eat(&mut self, word: &str) -> Option<()> {
        let end = self.i.checked_add(word.len())?;
        (self.b.get(self.i..end)? == word.as_bytes()).then(|| self.i = end)
    }

    fn value(&mut self, depth: usize) -> Option<Value> {
        if depth >= MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'{' => self.object(depth),
            b'[' => self.array(depth),
            b'"' => self.string().map(Value::String),
            b't' => self.eat("true").map(|_| Value::Bool(true)),
            b'f' => self.eat("false").map(|_| Value::Bool(false)),
            b'n' => self.eat("null").map(|_| Value::Null),
            _ => self.number().map(Value::Number),
        }
    }

    fn object(&mut self, depth: usize) -> Option<Value> {
        self.i += 1; // '{'
        let mut members = Vec::new();
        self.ws();
        if self.peek()? == b'}' {
            self.i += 1;
            return Some(Value::Object(members));
        }
        loop {
            self.ws();
            if self.peek()? != b'"' {
                return None;
            }
            let key = self.string()?;
            self.ws();
            if self.next()? != b':' {
                return None;
            }
            self.ws();
            members.push((key, self.value(depth + 1)?));
            self.ws();
            match self.next()? {
                b',' => continue,
                b'}' => return Some(Value::Object(members)),
                _ => return None,
            }
        }
    }

    fn array(&mut self, depth: usize) -> Option<Value> {
        self.i += 1; // '['
        let mut items = Vec::new();
        self.ws();
        if self.peek()? == b']' {
            self.i += 1;
            return Some(Value::Array(items));
        }
        loop {
            self.ws();
            items.push(self.value(depth + 1)?);
            self.ws();
            match self.next()? {
                b',' => continue,
                b']' => return Some(Value::Array(items)),
                _ => return None,
            }
        }
    }

    /// A number as JSON's grammar has it (no leading `+`, zeros, bare `.`).
    fn number(&mut self) -> Option<String> {
        let start = self.i;
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        match self.next()? {
            b'0' => {}
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            self.one_or_more_digits()?;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.i += 1;
            }
            self.one_or_more_digits()?;
        }
        Some(self.s[start..self.i].to_string())
    }

    fn digits(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
    }

    fn one_or_more_digits(&mut self) -> Option<()> {
        let start = self.i;
        self.digits();
        (self.i > start).then_some(())
    }

    /// A string literal, escapes decoded (`\uXXXX` surrogate pairs included; a
    /// lone surrogate is refused, since it is no character).
    fn string(&mut self) -> Option<String> {
        self.i += 1; // '"'
        let mut out = String::new();
        loop {
            let run = self.i;
            while self
                .peek()
                .is_some_and(|c| c != b'"' && c != b'\\' && c >= 0x20)
            {
                self.i += 1;
            }
            // The run ends at an ASCII byte, so it is whole UTF-8.
            out.push_str(&self.s[run..self.i]);
            match self.next()? {
                b'"' => return Some(out),
                b'\\' => out.push(self.escape()?),
                _ => return None, // a raw control character
            }
        }
    }

    fn escape(&mut self) -> Option<char> {
        Some(match self.next()? {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let high = self.hex4()?;
                let code = if (0xD800..0xDC00).contains(&high) {
                    self.eat("\\u")?;
                    let low = self.hex4()?;
                    if !(0xDC00..0xE000).contains(&low) {
                        return None;
                    }
                    0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)
                } else {
                    high
                };
                char::from_u32(code)?
            }
            _ => return None,
        })
    }

    fn hex4(&mut self) -> Option<u32> {
        (0..4).try_fold(0u32, |acc, _| {
            Some(acc * 16 + char::from(self.next()?).to_digit(16)?)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(members: &[(&str, Value)]) -> Value {
        Value::Object(
            members
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
        )
    }

    #[test]
    fn reads_every_kind_of_value() {
        let v = parse(
            br#" {"a": [1, -2.5e3, 0, 0.25, true, false, null], "s": "x\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00", "o": {}} "#,
        )
        .unwrap();
        assert_eq!(
            v,
            obj(&[
                (
                    "a",
                    Value::Array(vec![
                        Value::Number("1".into()),
                        Value::Number("-2.5e3".into()),
                        Value::Number("0".into()),
                        Value::Number("0.25".into()),
                        Value::Bool(true),
                        Value::Bool(false),
                        Value::Null,
                    ])
                ),
                ("s", Value::String("x\"\\/\u{8}\u{c}\n\r\té😀".into())),
                ("o", obj(&[])),
            ])
        );
        assert_eq!(v.get("o"), Some(&obj(&[])));
        assert_eq!(v.get("missing"), None);
        assert_eq!(v.get("a").and_then(Value::members), None);
        assert_eq!(parse(b"[]"), Some(Value::Array(vec![])));
        assert_eq!(parse("\"é\"".as_bytes()), Some(Value::String("é".into())));
        assert_eq!(parse(b"1E+2").and_then(|v| v.as_f64()), Some(100.0));
        let ns = parse(b"1790561103861123457").unwrap();
        assert_eq!(
            ns.as_u64(),
            Some(1_790_561_103_861_123_457),
            "exact past 2^53"
        );
        assert_eq!(parse(b"-1").unwrap().as_u64(), None);
        assert_eq!(parse(b"1.5").unwrap().as_u64(), None);
    }

    #[test]
    fn refuses_what_is_not_json() {
        for bad in [
            "",
            " ",
            "{",
            "}",
            "[1,]",
            "[,1]",
            "{\"a\":1,}",
            "{\"a\" 1}",
            "{a:1}",
            "{1:1}",
            "01",
            "-",
            "+1",
            "1.",
            ".5",
            "1e",
            "1e+",
            "0x10",
            "NaN",
            "Infinity",
            "tru",
            "nul",
            "\"abc",
            "\"\\x\"",
            "\"\\u12\"",
            "\"\\ud83d\"",
            "\"\\ud83d\\u0041\"",
            "\"\\udc00x\"",
            "\"a\nb\"",
            "[1] [2]",
            "{} x",
            "'a'",
            "[\"\\",
        ] {
            assert_eq!(parse(bad.as_bytes()), None, "{bad:?}");
        }
        assert_eq!(parse(b"\"\xff\""), None, "bad UTF-8");
        assert_eq!(
            parse(b"\xef\xbb\xbf{}"),
            None,
            "a byte-order mark is no JSON"
        );
    }

    #[test]
    fn nesting_past_the_limit_is_refused_without_recursing_deep() {
        let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(parse(ok.as_bytes()).is_some());
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert_eq!(parse(deep.as_bytes()), None);
        // Far past any stack: refused at the limit, not overflowed.
        assert_eq!(parse("[{\"a\":".repeat(200_000).as_bytes()), None);
    }

    /// A tiny deterministic generator (xorshift), so the fuzz run is repeatable.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    const SAMPLE: &str = r#"{"session_id":"3bd5639e","model":{"id":"claude-opus-5-5","display_name":"Opus"},"rate_limits":{"five_hour":{"used_percentage":23.5,"resets_at":1795987162},"seven_day":{"used_percentage":41,"resets_at":1796242762}},"cost":{"total_cost_usd":0.00014},"s":"é\u00e9\n","a":[true,false,null,-1e-3]}"#;

    #[test]
    fn fuzz_mutations_and_truncations_never_panic() {
        let base = SAMPLE.as_bytes();
        assert!(parse(base).is_some());
        // Every strict prefix of a document is incomplete.
        for end in 0..base.len() {
            assert_eq!(parse(&base[..end]), None, "prefix {end}");
        }
        let alphabet = b"{}[]\",:\\0123456789.eE+-tfnulrsa \n\x00\xff\xc3\xa9u";
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for _ in 0..20_000 {
            let mut doc = base.to_vec();
            for _ in 0..1 + rng.next() % 4 {
                let at = (rng.next() as usize) % doc.len();
                let byte = alphabet[(rng.next() as usize) % alphabet.len()];
                match rng.next() % 3 {
                    0 => doc[at] = byte,
                    1 => doc.insert(at, byte),
                    _ => {
                        doc.remove(at);
                    }
                }
            }
            // Whatever it answers, it answers without panicking.
            let _ = parse(&doc);
        }
        // Random bytes, too.
        for _ in 0..5_000 {
            let len = (rng.next() % 64) as usize;
            let doc: Vec<u8> = (0..len)
                .map(|_| alphabet[(rng.next() as usize) % alphabet.len()])
                .collect();
            let _ = parse(&doc);
        }
    }
}
