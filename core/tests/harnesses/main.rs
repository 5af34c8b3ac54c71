//! The real harnesses from npm (`e2e/`), driven offline by scripted model APIs on
//! loopback (`sessionpipe-testkit`): Claude Code, Codex and Gemini CLI run whole
//! turns, their real hooks call the real `sessionpipe-hook`, and the daemon's
//! events are checked. One test binary: a change to the core relinks it once.
//! Without the harnesses installed each test says so in one line and passes,
//! unless `SESSIONPIPE_REQUIRE_HARNESSES=1` (the test command sets it).

mod real_acp;
mod real_ask;
mod real_claude_code;
mod real_claude_code_control;
mod real_claude_code_pool;
mod real_claude_code_runs;
mod real_claude_code_terminal;
mod real_claude_code_transcripts;
mod real_claude_code_worktrees;
mod real_codex;
mod real_codex_control;
mod real_codex_runs;
mod real_copilot_cli;
mod real_copilot_droid_transcripts;
mod real_droid;
mod real_gemini_cli;
mod real_gemini_cli_transcripts;
mod real_opencode;
mod real_usage;
