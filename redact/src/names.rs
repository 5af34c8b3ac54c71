//! Secret names: decides whether an identifier (`DB_PASSWORD`, `apiKey`, `x-api-key`)
//! names a secret, by splitting it into words.
//!
//! It owns the word lists behind `*_KEY`, `*token*` and the exceptions
//! (`password_hash`, `tokenizer`, `max_tokens`). It must not look at values or at the
//! text around the name.

/// Words that make a name secret wherever they appear (`DB_PASSWORD`, `client_secret`).
const SECRET_WORDS: &[&str] = &[
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "apikey",
    "privatekey",
    "secretkey",
    "accesskey",
    "signingkey",
    "masterkey",
    "authorization",
];

/// Word endings that make a word secret when glued to something (`dbpassword`,
/// `accesstoken`). `tokens` and `tokenizer` do not end with `token`.
const SECRET_SUFFIXES: &[&str] = &["password", "passwd", "passphrase", "secret", "token"];

/// Words that say the name is about a secret, not the secret itself
/// (`password_hash`, `max_tokens`, `token_type`, `SECRET_NAME`, `ssh_key_path`).
const NOT_A_VALUE: &[&str] = &[
    "hash",
    "hashed",
    "digest",
    "hint",
    "policy",
    "length",
    "len",
    "min",
    "max",
    "count",
    "limit",
    "type",
    "kind",
    "field",
    "label",
    "prompt",
    "placeholder",
    "name",
    "id",
    "ids",
    "expiry",
    "expires",
    "expiration",
    "ttl",
    "path",
    "file",
    "dir",
    "url",
    "uri",
    "endpoint",
    "env",
    "var",
    "header",
    "required",
    "enabled",
    "strength",
    "usage",
    "budget",
    "size",
    "format",
    "mode",
    "regex",
    "pattern",
    "error",
    "timeout",
    "version",
    "index",
];

/// Words before a final `key` that make it an ordinary key (`primary_key`,
/// `public_key`, `cache_key`), not a credential.
const ORDINARY_KEYS: &[&str] = &[
    "public",
    "pub",
    "primary",
    "foreign",
    "sort",
    "partition",
    "cache",
    "idempotency",
    "lookup",
    "map",
    "dict",
    "object",
    "unique",
    "composite",
    "translation",
    "i18n",
    "hot",
    "shortcut",
    "row",
    "column",
    "group",
    "routing",
    "shard",
    "dedup",
    "dedupe",
    "host",
    "react",
    "storage",
    "s3",
    "bucket",
];

/// True when `name` names a secret: it has a secret word, or ends in `key` after
/// another word, and none of its words says it is only about a secret.
pub(crate) fn is_secret_name(name: &str) -> bool {
    let words = words(name);
    if words.iter().any(|w| NOT_A_VALUE.contains(&w.as_str())) {
        return false;
    }
    let secret_word = words.iter().any(|w| {
        SECRET_WORDS.contains(&w.as_str()) || SECRET_SUFFIXES.iter().any(|x| w.ends_with(x))
    });
    let credential_key = match words.as_slice() {
        [.., before, last] => last == "key" && !ORDINARY_KEYS.contains(&before.as_str()),
        _ => false,
    };
    secret_word || credential_key
}

/// True when `name` is an HTTP authorization header, whose value may start with a
/// scheme word (`Bearer`, `Basic`) that stays.
pub(crate) fn is_authorization(name: &str) -> bool {
    words(name).iter().any(|w| w == "authorization")
}

/// Lowercase words of an identifier: split at every non-alphanumeric character and at
/// case changes (`apiKey` → api, key; `APIKey` → api, key; `DB_PASSWORD` → db,
/// password).
pub(crate) fn words(name: &str) -> Vec<String> {
    let chars: Vec<char> = name.chars().collect();
    let mut out = Vec::new();
    let mut cur = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            flush(&mut cur, &mut out);
            continue;
        }
        let prev = i.checked_sub(1).map(|j| chars[j]);
        let next = chars.get(i + 1).copied();
        let lower_to_upper = c.is_uppercase() && prev.is_some_and(char::is_lowercase);
        let acronym_end = c.is_uppercase()
            && prev.is_some_and(char::is_uppercase)
            && next.is_some_and(char::is_lowercase);
        if lower_to_upper || acronym_end {
            flush(&mut cur, &mut out);
        }
        cur.extend(c.to_lowercase());
    }
    flush(&mut cur, &mut out);
    out
}

fn flush(cur: &mut String, out: &mut Vec<String>) {
    if !cur.is_empty() {
        out.push(std::mem::take(cur));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_identifiers_into_words() {
        assert_eq!(words("DB_PASSWORD"), ["db", "password"]);
        assert_eq!(words("apiKey"), ["api", "key"]);
        assert_eq!(words("APIKey"), ["api", "key"]);
        assert_eq!(words("x-api-key"), ["x", "api", "key"]);
        assert_eq!(words("--token"), ["token"]);
        assert_eq!(words(""), Vec::<String>::new());
    }

    #[test]
    fn secret_names() {
        for n in [
            "DB_PASSWORD",
            "password",
            "apiKey",
            "api_key",
            "x-api-key",
            "client_secret",
            "GITHUB_TOKEN",
            "refreshToken",
            "STRIPE_KEY",
            "SECRET_KEY_BASE",
            "Authorization",
            "dbpassword",
            "passwd",
        ] {
            assert!(is_secret_name(n), "{n}");
        }
    }

    #[test]
    fn names_about_secrets_are_not_secret() {
        for n in [
            "password_hash",
            "tokenizer",
            "max_tokens",
            "input_tokens",
            "token_type",
            "SECRET_NAME",
            "ssh_key_path",
            "pass",
            "key",
            "primary_key",
            "public_key",
            "monkey",
            "keyboard",
            "tokens",
            "AWS_ACCESS_KEY_ID",
        ] {
            assert!(!is_secret_name(n), "{n}");
        }
    }
}
