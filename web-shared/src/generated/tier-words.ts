// The protocol crate's sentences about the tier a receiver gets
// (protocol/src/asked.rs), as the CLI says them: generated, do not edit.
// After changing them: SESSIONPIPE_WRITE_REFERENCE=1 cargo test -p sessionpipe-core --lib daemon::api::typescript

/** The tier pairing proposes for the sink a receiver hands over. */
export const PAIRING_TIER = 1;

/** Why: what the phone sees at tier 1 and up. */
export const TIER_1_SENTENCE = "The phone sees tool names, commands and the files they change, secrets removed, so it can show what you approve.";

/** Said where a receiver gets tier 0. */
export const HIDDEN_SENTENCE = "This machine hides what its agents ask to run: approve on the machine.";
