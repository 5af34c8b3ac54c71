//! A scripted OpenAI Responses API (Codex). Being written.
