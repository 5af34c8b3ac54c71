//! The tokens a scripted model API reports for each scripted answer, chosen
//! by a test, so a test can read them back from what a real harness wrote
//! (its transcript) and from what sessionpipe made of it (`sessionpipe
//! usage`). Owns the numbers and each vendor's way of saying them; the mocks
//! put them on their answers.

use serde_json::{Value, json};

/// One answer's tokens, as sessionpipe counts them: `input` without the
/// cache's tokens, which are `cache_read` and `cache_write`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MockUsage {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
}

impl MockUsage {
    /// Anthropic's Messages API `usage` (its `input_tokens` leaves the cache
    /// out), with `output_tokens` as given (a stream's start says 1).
    pub fn anthropic(&self, output_tokens: u64) -> Value {
        json!({
            "input_tokens": self.input,
            "cache_creation_input_tokens": self.cache_write,
            "cache_read_input_tokens": self.cache_read,
            "output_tokens": output_tokens,
        })
    }

    /// OpenAI's Chat Completions `usage`: `prompt_tokens` is the whole
    /// prompt, its cached part in `prompt_tokens_details.cached_tokens`.
    pub fn openai_chat(&self) -> Value {
        let prompt = self.input + self.cache_read;
        json!({
            "prompt_tokens": prompt,
            "prompt_tokens_details": {"cached_tokens": self.cache_read},
            "completion_tokens": self.output,
            "total_tokens": prompt + self.output,
        })
    }

    /// OpenAI's Responses API `usage`: `input_tokens` is the whole prompt,
    /// its cached part in `input_tokens_details.cached_tokens` (OpenAI has no
    /// cache writes: `cache_write` must be 0 here).
    pub fn openai_responses(&self) -> Value {
        let input = self.input + self.cache_read;
        json!({
            "input_tokens": input,
            "input_tokens_details": {"cached_tokens": self.cache_read},
            "output_tokens": self.output,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input + self.output,
        })
    }
}
