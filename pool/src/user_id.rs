//! `metadata.user_id` of a Messages request: which session made it, and its
//! account part rewritten to the account the pool chose (ADAPTERS.md, Claude
//! Code row, Pool). Two forms: Claude Code 2.1.x sends a JSON object in the
//! string (`{"device_id":…,"account_uuid":…,"session_id":…}`, measured on
//! 2.1.332), older ones `user_<hash>_account_<uuid>_session_<uuid>`.
//!
//! It owns finding that one string in a request body and splicing its new
//! value in; every other byte of the body stays as it was (the body passes
//! through unchanged but for this). It walks the body without building it
//! (a request carries the whole conversation, megabytes of it), and a body
//! that is not a JSON object with that member is left alone.

/// The `user_id` a body carries, and where its JSON string sits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserId {
    /// The decoded string.
    pub value: String,
    /// Byte span of the string token (quotes included) in the body.
    span: (usize, usize),
    /// `value` read as the JSON form, once: `session` and `rewrite` both
    /// need it.
    json: Option<serde_json::Map<String, serde_json::Value>>,
}

impl UserId {
    /// Finds `metadata.user_id` in `body`: the top-level object's `metadata`
    /// member, an object, and its `user_id` member, a string.
    pub fn find(body: &[u8]) -> Option<UserId> {
        let mut s = Scan { b: body, i: 0 };
        let meta = s.member_of_object("metadata")?;
        let mut inner = Scan { b: body, i: meta };
        let at = inner.member_of_object("user_id")?;
        let mut tok = Scan { b: body, i: at };
        if tok.peek()? != b'"' {
            return None;
        }
        tok.skip_string()?;
        let raw = std::str::from_utf8(&body[at..tok.i]).ok()?;
        let value: String = serde_json::from_str(raw).ok()?;
        Some(UserId {
            json: json_form(&value),
            value,
            span: (at, tok.i),
        })
    }

    /// The session part (the JSON form's `session_id`, or what follows
    /// `_session_` in the older one).
    pub fn session(&self) -> Option<String> {
        match &self.json {
            Some(obj) => obj
                .get("session_id")
                .and_then(serde_json::Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_string),
            None => {
                let (_, session) = self.value.rsplit_once("_session_")?;
                (!session.is_empty()).then(|| session.to_string())
            }
        }
    }

    /// The body with the account part set to `account`. The JSON form keeps
    /// its other members and their order; the older form keeps its user and
    /// session parts. A value of neither form is left as it was.
    pub fn rewrite(&self, body: &[u8], account: &str) -> Option<Vec<u8>> {
        let new_value = match &self.json {
            Some(obj) => {
                let mut obj = obj.clone();
                obj.insert(
                    "account_uuid".into(),
                    serde_json::Value::String(account.into()),
                );
                serde_json::to_string(&obj).ok()?
            }
            None => {
                let (user, rest) = self.value.split_once("_account_")?;
                let (_, session) = rest.rsplit_once("_session_").or_else(|| {
                    // `_account__session_…`: no account part yet.
                    rest.strip_prefix("_session_").map(|s| ("", s))
                })?;
                format!("{user}_account_{account}_session_{session}")
            }
        };
        let token = serde_json::to_string(&new_value).ok()?;
        let (a, b) = self.span;
        let mut out = Vec::with_capacity(body.len() + token.len());
        out.extend_from_slice(&body[..a]);
        out.extend_from_slice(token.as_bytes());
        out.extend_from_slice(&body[b..]);
        Some(out)
    }
}

fn json_form(value: &str) -> Option<serde_json::Map<String, serde_json::Value>> {
    if !value.trim_start().starts_with('{') {
        return None;
    }
    match serde_json::from_str(value).ok()? {
        serde_json::Value::Object(m) => Some(m),
        _ => None,
    }
}

/// Whether a member's name (`token`, its JSON string with the quotes) is
/// `key`, or `None` when it is not a valid string. A plain ASCII name is
/// compared as it stands; one with an escape, a control or a non-ASCII
/// byte is decoded first, as before (the bulk of a body's names are plain).
fn key_is(token: &[u8], key: &str) -> Option<bool> {
    let inner = token.get(1..token.len().saturating_sub(1))?;
    if inner
        .iter()
        .all(|&c| (0x20..0x80).contains(&c) && c != b'\\')
    {
        return Some(inner == key.as_bytes());
    }
    let k: String = serde_json::from_slice(token).ok()?;
    Some(k == key)
}

/// A cursor over JSON text that skips values without building them. It
/// trusts nothing: any byte out of place ends the walk with `None`.
struct Scan<'a> {
    b: &'a [u8],
    i: usize,
}

impl Scan<'_> {
    fn peek(&mut self) -> Option<u8> {
        while let Some(&c) = self.b.get(self.i) {
            if matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
                self.i += 1;
            } else {
                return Some(c);
            }
        }
        None
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.i += 1)
    }

    /// At an object: the offset of `key`'s value (the last one, as parsers
    /// keep the last of a key sent twice).
    fn member_of_object(&mut self, key: &str) -> Option<usize> {
        self.eat(b'{')?;
        let mut found = None;
        if self.peek()? == b'}' {
            return None;
        }
        loop {
            self.peek()?;
            let k0 = self.i;
            self.skip_string()?;
            let is_key = key_is(&self.b[k0..self.i], key)?;
            self.eat(b':')?;
            self.peek()?;
            if is_key {
                found = Some(self.i);
            }
            self.skip_value()?;
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => return found,
                _ => return None,
            }
        }
    }

    fn skip_string(&mut self) -> Option<()> {
        self.eat(b'"')?;
        loop {
            // The bulk of a body is string bytes: jump to the next quote or
            // backslash.
            let rest = self.b.get(self.i..)?;
            let n = memchr::memchr2(b'"', b'\\', rest)?;
            self.i += n;
            if self.b[self.i] == b'"' {
                self.i += 1;
                return Some(());
            }
            self.i += 2;
        }
    }

    /// Skips one value; nested arrays and objects by counting brackets
    /// outside strings.
    fn skip_value(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.skip_string(),
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match self.peek()? {
                        b'"' => self.skip_string()?,
                        b'{' | b'[' => {
                            depth += 1;
                            self.i += 1;
                        }
                        b'}' | b']' => {
                            depth = depth.checked_sub(1)?;
                            self.i += 1;
                            if depth == 0 {
                                return Some(());
                            }
                        }
                        _ => self.i += 1,
                    }
                }
            }
            _ => {
                // A number, true, false or null: up to the next delimiter.
                let start = self.i;
                while let Some(&c) = self.b.get(self.i) {
                    if matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                        break;
                    }
                    self.i += 1;
                }
                (self.i > start).then_some(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const JSON_FORM: &str = r#"{"device_id":"62ae","account_uuid":"","session_id":"fa33ef6d-170e-441a-a797-a456ed75ceff"}"#;

    fn body(user_id: &str) -> Vec<u8> {
        let uid = serde_json::to_string(user_id).unwrap();
        format!(
            "{{\"model\":\"claude\",\"messages\":[{{\"role\":\"user\",\"content\":[{{\"type\":\"text\",\"text\":\"say \\\"metadata\\\": {{ [\"}}]}}],\n  \"metadata\": {{\"user_id\": {uid}}},\"stream\":true,\"max_tokens\":32000}}"
        )
        .into_bytes()
    }

    #[test]
    fn the_json_form_is_found_and_only_its_account_changes() {
        let b = body(JSON_FORM);
        let u = UserId::find(&b).unwrap();
        assert_eq!(u.value, JSON_FORM);
        assert_eq!(
            u.session().as_deref(),
            Some("fa33ef6d-170e-441a-a797-a456ed75ceff")
        );
        let out = u.rewrite(&b, "acct-9").unwrap();
        let again = UserId::find(&out).unwrap();
        assert_eq!(
            again.value,
            r#"{"device_id":"62ae","account_uuid":"acct-9","session_id":"fa33ef6d-170e-441a-a797-a456ed75ceff"}"#
        );
        // Every byte around the string is as it was.
        let (a, z) = u.span;
        assert_eq!(&out[..a], &b[..a]);
        assert_eq!(&out[out.len() - (b.len() - z)..], &b[z..]);
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["stream"], true);
    }

    #[test]
    fn the_older_form_keeps_its_user_and_session_parts() {
        let old = "user_abc123_account_11111111-2222-3333-4444-555555555555_session_s-1";
        let b = body(old);
        let u = UserId::find(&b).unwrap();
        assert_eq!(u.session().as_deref(), Some("s-1"));
        let out = u.rewrite(&b, "acct-2").unwrap();
        assert_eq!(
            UserId::find(&out).unwrap().value,
            "user_abc123_account_acct-2_session_s-1"
        );
        let none = "user_abc_account__session_s-2";
        let u = UserId::find(&body(none)).unwrap();
        assert_eq!(
            UserId::find(&u.rewrite(&body(none), "a").unwrap())
                .unwrap()
                .value,
            "user_abc_account_a_session_s-2"
        );
    }

    #[test]
    fn a_name_spelt_with_an_escape_is_the_same_name() {
        let b = br#"{"meta\u0064ata":{"user_id":"u_account_a_session_s"},"m\u00e9":1}"#;
        assert_eq!(UserId::find(b).unwrap().session().as_deref(), Some("s"));
        assert_eq!(key_is(br#""user_id""#, "user_id"), Some(true));
        assert_eq!(key_is(br#""user_i\u0064""#, "user_id"), Some(true));
        assert_eq!(key_is(b"\"a\tb\"", "a\tb"), None, "a raw tab is not JSON");
    }

    #[test]
    fn a_body_without_the_member_or_not_json_is_left_alone() {
        for b in [
            &b"{\"model\":\"x\",\"messages\":[]}"[..],
            b"{\"metadata\":{}}",
            b"{\"metadata\":{\"user_id\":7}}",
            b"{\"metadata\":\"user_id\"}",
            b"[1,2]",
            b"not json",
            b"{\"metadata\":{\"user_id\":\"unterminated",
            b"",
        ] {
            assert_eq!(UserId::find(b), None, "{}", String::from_utf8_lossy(b));
        }
        // A nested `metadata` deeper in the body is not the request's.
        let nested = br#"{"messages":[{"metadata":{"user_id":"x_session_y"}}]}"#;
        assert_eq!(UserId::find(nested), None);
        let u = UserId::find(br#"{"metadata":{"user_id":"plain"}}"#).unwrap();
        assert_eq!(u.session(), None);
        assert_eq!(u.rewrite(br#"{"metadata":{"user_id":"plain"}}"#, "a"), None);
    }
}
