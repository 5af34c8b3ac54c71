//! Token usage as a harness's own files record it: one `Usage` per model
//! response (or per the smallest unit the file keeps), with the key the
//! response is counted by, so reading the same file again never counts it
//! twice.
//!
//! Owns the shape every adapter fills and the arithmetic that puts one
//! harness's counting into it (`input` never includes the cache reads and
//! writes: `without_cache`). It reads no file and stores nothing: the
//! adapters parse, the daemon keeps the rows (its outbox's `usage` table).

/// Tokens one model response used, as the harness recorded them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// What the response is counted by within its session: the harness's own
    /// message or response id where it has one. Two reads of the same response
    /// give the same key.
    pub key: String,
    /// When the response was recorded (epoch ms).
    pub at_ms: i64,
    /// The model that answered, as the harness names it.
    pub model: Option<String>,
    /// Input tokens not read from or written to a prompt cache.
    pub input: u64,
    /// Output tokens (reasoning or thinking tokens included: they are billed
    /// as output).
    pub output: u64,
    /// Input tokens read from the prompt cache.
    pub cache_read: u64,
    /// Input tokens written to the prompt cache.
    pub cache_write: u64,
}

impl Usage {
    /// True when the response used no token at all (nothing to count).
    pub fn is_empty(&self) -> bool {
        self.input == 0 && self.output == 0 && self.cache_read == 0 && self.cache_write == 0
    }
}

/// The uncached part of an input count that includes the cache's tokens
/// (OpenAI's and Gemini's way of counting; Anthropic's `input_tokens` already
/// leaves them out). Never below zero, whatever a file says.
pub fn without_cache(input_with_cache: u64, cache_read: u64, cache_write: u64) -> u64 {
    input_with_cache
        .saturating_sub(cache_read)
        .saturating_sub(cache_write)
}

/// A JSON number field as a token count (absent, negative or not a number: 0).
pub fn count(v: &serde_json::Value, key: &str) -> u64 {
    v.get(key).and_then(serde_json::Value::as_u64).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_cached_part_of_an_inclusive_input_is_taken_out_and_never_below_zero() {
        assert_eq!(without_cache(100, 30, 20), 50);
        assert_eq!(without_cache(10, 30, 0), 0);
        let v = json!({"a": 5, "b": -1, "c": "7"});
        assert_eq!((count(&v, "a"), count(&v, "b"), count(&v, "c")), (5, 0, 0));
        assert!(Usage::default().is_empty());
    }
}
