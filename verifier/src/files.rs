//! A `start`'s `files` (PROTOCOL-NOTES §8): 1–10 entries `{name, type, size,
//! sha256}`, each name 1–200 characters after Unicode NFC and safe to write as
//! one file in one folder, no two names equal after NFC ignoring case, sizes
//! within their caps. It only reads the list; fetching and writing the bytes
//! is the daemon's, which writes each file under the NFC name given here.

use crate::keys::{b64, is_b64url};
use serde_json::Value;
use std::collections::HashSet;
use unicode_normalization::UnicodeNormalization;

pub const MAX_FILES: usize = 10;
pub const MAX_NAME_CHARS: usize = 200;
pub const MAX_TYPE_CHARS: usize = 100;
/// One file: 25 MiB.
pub const MAX_FILE_BYTES: u64 = 26_214_400;
/// All of a command's files together: 50 MiB.
pub const MAX_TOTAL_BYTES: u64 = 52_428_800;

/// One attachment of a `start`, as signed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileRef {
    /// NFC: the name the machine writes the file under.
    pub name: String,
    /// The media type as given (`type` on the wire); compare it ignoring case.
    pub media_type: String,
    pub size: u64,
    /// base64url SHA-256 of the bytes, 43 characters.
    pub sha256: String,
}

/// The list, or what is wrong with it (the detail of a `bad_fields`).
pub(crate) fn parse(list: &Value) -> Result<Vec<FileRef>, String> {
    let items = list.as_array().ok_or("files is not a list")?;
    if items.is_empty() || items.len() > MAX_FILES {
        return Err(format!("{} files, not 1 to 10", items.len()));
    }
    let mut files = Vec::with_capacity(items.len());
    let mut seen = HashSet::new();
    let mut total = 0u64;
    for (i, item) in items.iter().enumerate() {
        let file = entry(item).map_err(|why| format!("files[{i}]: {why}"))?;
        if !seen.insert(fold(&file.name)) {
            return Err(format!("files[{i}]: a second file named {:?}", file.name));
        }
        total += file.size;
        if total > MAX_TOTAL_BYTES {
            return Err("files over 52428800 bytes together".into());
        }
        files.push(file);
    }
    Ok(files)
}

fn entry(item: &Value) -> Result<FileRef, String> {
    let map = item.as_object().ok_or("not an object")?;
    if let Some(foreign) = map
        .keys()
        .find(|k| !["name", "type", "size", "sha256"].contains(&k.as_str()))
    {
        return Err(format!("{foreign} is foreign to a file"));
    }
    let name = map
        .get("name")
        .and_then(Value::as_str)
        .ok_or("name missing")?
        .nfc()
        .collect::<String>();
    check_name(&name)?;
    let media_type = map
        .get("type")
        .and_then(Value::as_str)
        .filter(|t| media_type_ok(t))
        .ok_or("type is not a media type/subtype")?;
    let size = map
        .get("size")
        .and_then(Value::as_u64)
        .filter(|s| (1..=MAX_FILE_BYTES).contains(s))
        .ok_or("size is not an integer from 1 to 26214400")?;
    let sha256 = map
        .get("sha256")
        .and_then(Value::as_str)
        .filter(|h| is_b64url(h, 43, 43) && b64(h).is_some_and(|raw| raw.len() == 32))
        .ok_or("sha256 is not 43 base64url characters")?;
    Ok(FileRef {
        name,
        media_type: media_type.to_string(),
        size,
        sha256: sha256.to_string(),
    })
}

/// 1–200 characters, no path separator or control character, not `.`, `..`
/// or a dotfile.
fn check_name(name: &str) -> Result<(), String> {
    let chars = name.chars().count();
    if chars == 0 || chars > MAX_NAME_CHARS {
        return Err(format!("name of {chars} characters, not 1 to 200"));
    }
    if let Some(c) = name
        .chars()
        .find(|c| *c == '/' || *c == '\\' || *c < ' ' || *c == '\u{7f}')
    {
        return Err(format!("name holds {c:?}"));
    }
    if name.starts_with('.') {
        return Err("name starts with a dot".into());
    }
    Ok(())
}

/// `^[a-z0-9][a-z0-9!#$&^_.+-]*/[a-z0-9][a-z0-9!#$&^_.+-]*$` ignoring case,
/// 1–100 characters.
fn media_type_ok(t: &str) -> bool {
    let part = |p: &str| {
        let b = p.as_bytes();
        !b.is_empty()
            && b[0].is_ascii_alphanumeric()
            && b.iter()
                .all(|c| c.is_ascii_alphanumeric() || b"!#$&^_.+-".contains(c))
    };
    t.len() <= MAX_TYPE_CHARS && t.split_once('/').is_some_and(|(a, b)| part(a) && part(b))
}

/// The form two names are compared in: NFC, then case folded. Upper then
/// lower case folds what lower case alone misses (`ß` and `SS`, the Kelvin
/// sign), as a case-insensitive file system would.
fn fold(name: &str) -> String {
    name.to_uppercase().to_lowercase().nfc().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const HASH: &str = "0BNhTcFKN-4g_pIAVzerfTQn5-k1gK1W74pCIF5_ek4";

    fn one(name: &str, ty: &str, size: Value, sha: &str) -> Value {
        json!([{"name": name, "type": ty, "size": size, "sha256": sha}])
    }

    #[test]
    fn a_plain_file() {
        let files = parse(&one("shot.png", "image/png", json!(183402), HASH)).unwrap();
        assert_eq!(files[0].name, "shot.png");
        assert_eq!(files[0].media_type, "image/png");
        assert_eq!(files[0].size, 183402);
    }

    #[test]
    fn names_are_nfc() {
        let files = parse(&one("Cafe\u{301}.txt", "text/plain", json!(1), HASH)).unwrap();
        assert_eq!(files[0].name, "Caf\u{e9}.txt");
        // 200 characters only after composing.
        let long = format!("{}.txt", "e\u{301}".repeat(196));
        assert!(parse(&one(&long, "text/plain", json!(1), HASH)).is_ok());
        let longer = format!("{}.txt", "e\u{301}".repeat(197));
        assert!(parse(&one(&longer, "text/plain", json!(1), HASH)).is_err());
    }

    #[test]
    fn unsafe_names() {
        for name in [
            "", ".", "..", ".env", "a/b", "a\\b", "a\0b", "a\nb", "a\u{7f}b",
        ] {
            assert!(
                parse(&one(name, "text/plain", json!(1), HASH)).is_err(),
                "{name:?}"
            );
        }
        assert!(parse(&one("a.b..c", "text/plain", json!(1), HASH)).is_ok());
    }

    #[test]
    fn types() {
        for ok in [
            "image/png",
            "IMAGE/PNG",
            "application/vnd.a+json",
            "x/y!#$&^_.+-",
        ] {
            assert!(media_type_ok(ok), "{ok}");
        }
        for bad in [
            "image",
            "image/",
            "/png",
            "image/png/x",
            "-x/y",
            "image/p ng",
            "ímage/png",
        ] {
            assert!(!media_type_ok(bad), "{bad}");
        }
        assert!(!media_type_ok(&format!("a/{}", "b".repeat(99))));
        assert!(media_type_ok(&format!("a/{}", "b".repeat(98))));
    }

    #[test]
    fn sizes() {
        for bad in [
            json!(0),
            json!(-1),
            json!(10.5),
            json!(1.0),
            json!("1"),
            json!(26214401),
        ] {
            assert!(parse(&one("a", "a/b", bad.clone(), HASH)).is_err(), "{bad}");
        }
        let big =
            |n: &str| json!({"name": n, "type": "a/b", "size": MAX_FILE_BYTES, "sha256": HASH});
        assert!(parse(&json!([big("a"), big("b")])).is_ok());
        let over =
            json!([big("a"), big("b"), {"name": "c", "type": "a/b", "size": 1, "sha256": HASH}]);
        assert!(parse(&over).is_err());
    }

    #[test]
    fn hashes() {
        assert!(parse(&one("a", "a/b", json!(1), &"ab".repeat(32))).is_err());
        assert!(parse(&one("a", "a/b", json!(1), &HASH[..42])).is_err());
        // 43 characters whose last one carries stray bits.
        let stray = format!("{}5", &HASH[..42]);
        assert!(parse(&one("a", "a/b", json!(1), &stray)).is_err());
    }

    #[test]
    fn list_shape() {
        assert!(parse(&json!([])).is_err());
        assert!(parse(&json!(null)).is_err());
        assert!(parse(&json!({"name": "a"})).is_err());
        let f =
            |i: usize| json!({"name": format!("f{i}"), "type": "a/b", "size": 1, "sha256": HASH});
        assert!(parse(&Value::Array((0..10).map(f).collect())).is_ok());
        assert!(parse(&Value::Array((0..11).map(f).collect())).is_err());
        let extra =
            json!([{"name": "a", "type": "a/b", "size": 1, "sha256": HASH, "path": "/etc"}]);
        assert!(parse(&extra).is_err());
    }

    #[test]
    fn the_same_name_twice() {
        let two = |a: &str, b: &str| {
            json!([
                {"name": a, "type": "a/b", "size": 1, "sha256": HASH},
                {"name": b, "type": "a/b", "size": 1, "sha256": HASH}
            ])
        };
        assert!(parse(&two("Shot.PNG", "shot.png")).is_err());
        assert!(parse(&two("Cafe\u{301}", "CAF\u{c9}")).is_err());
        assert!(parse(&two("stra\u{df}e", "STRASSE")).is_err());
        assert!(parse(&two("a.png", "b.png")).is_ok());
    }
}
