// The protocol crate's HARNESS_DISPLAY_NAMES (protocol/src/validate.rs), as
// the tray and notifications say them: generated, do not edit. After
// changing it: SESSIONPIPE_WRITE_REFERENCE=1 cargo test -p sessionpipe-core --lib daemon::api::typescript

/** A harness's name as people read it, by its protocol name. */
export const HARNESS_NAMES: Readonly<Record<string, string>> = {
  "claude-code": "Claude Code",
  "codex": "Codex",
  "gemini-cli": "Gemini CLI",
  "antigravity": "Antigravity",
  "devin": "Devin",
  "grok-build": "Grok Build",
  "cursor": "Cursor",
  "copilot-cli": "Copilot CLI",
  "droid": "Droid",
  "kiro": "Kiro",
  "opencode": "OpenCode",
};
