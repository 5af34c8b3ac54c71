//! Everything the core does, end to end, without a real harness: the built
//! `sessionpipe-hook` and `sessionpipe` binaries in a sandboxed HOME and state
//! dir, recorded and hand-made payloads, a real receiver over real HTTP, the
//! installers on real files, crash and chaos runs. One test binary, so a change
//! to the core relinks it once; modules are grouped by what they prove.

mod antigravity_transcripts;
mod api;
mod api_hardening;
mod backfill;
mod chaos;
// Unix only: the commands run beside a daemon reached over its Unix sockets.
#[cfg(unix)]
mod cli_logs;
mod cli_output;
mod cli_sessions;
mod config_live;
mod conformance;
mod control;
mod control_acp;
// Unix only: the inbox stand-in is a Unix socket, the harness stand-ins `sh` scripts.
#[cfg(unix)]
mod control_runs;
// Unix only: a hook's wait on the control socket, a Unix socket.
#[cfg(unix)]
mod control_socket;
// Unix only: the harness stand-in is a bash script, the record's mode a Unix one.
#[cfg(unix)]
mod control_worktrees;
mod crash;
mod daemon_life;
mod delivery_conformance;
mod devin_transcripts;
mod doctor_acp;
mod grok_build_transcripts;
mod hook_path;
mod install_claude_code;
mod install_codex;
mod install_copilot_droid;
mod install_cursor;
mod install_gemini_cli;
mod install_kiro;
mod install_m2_harnesses;
mod install_opencode;
// Unix only: symlinks made with std::os::unix and file modes.
#[cfg(unix)]
mod install_persons_files;
mod keychain;
mod outbox_schema;
mod pace;
mod pool;
mod pool_api;
mod reference_docs;
mod remote_titles;
mod retention;
mod secrets_at_rest;
mod service;
mod sinks_file;
mod sinks_hardening;
mod sinks_http;
mod status_line;
mod transcript_holds;
mod usage;
