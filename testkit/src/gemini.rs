//! A scripted Gemini API (Gemini CLI). Being written.
