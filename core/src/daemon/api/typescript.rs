//! The local API's answers as TypeScript, for the UI: the test here makes
//! `web-shared/src/generated/daemon-api.ts` from the types the handlers
//! serialize (`shapes`, and the library's types they hold) and fails when
//! the committed file is not that text; `SESSIONPIPE_WRITE_REFERENCE=1` writes
//! it. It makes `harness-names.ts` from the protocol's table, and
//! `tier-words.ts` from its sentences about a receiver's tier
//! (`protocol::asked`), the same way.
//!
//! What is not declared from a type, and why:
//! - `GET /api/sessions/{h}/{id}/events` answers the stored envelopes as
//!   they were written (`protocol::Envelope`, declared here), read back as
//!   JSON rather than parsed again.
//! - `GET`/`PUT /api/settings` answer the stored `Config` with
//!   `EffectiveSettings` over it (`Settings` below).
//! - Request bodies are read as JSON and checked field by field (`views`'
//!   `body`): the UI's own types describe what it sends.

use super::shapes::*;
use crate::state::config::Config;
use sessionpipe_testkit::reference::check_or_write;
use sessionpipe_testkit::typescript::Declarations;
use std::fmt::Write as _;
use std::path::PathBuf;

const AGAIN: &str = "cargo test -p sessionpipe-core --lib daemon::api::typescript";

fn generated(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../web-shared/src/generated")
        .join(file)
}

fn daemon_api() -> String {
    let mut d = Declarations::new();
    d.add::<ApiErrorBody>()
        .add::<Overview>()
        .add::<protocol::Envelope>()
        .add::<protocol::changes::Changes>()
        .add::<HarnessView>()
        .add::<Offers>()
        .add::<Declined>()
        .add::<SinkView>()
        .add::<SinkAdded>()
        .add::<Removed>()
        .add::<SinkTest>()
        .add::<Config>()
        .add::<EffectiveSettings>()
        .text(
            "/** `GET` and `PUT /api/settings`: the stored settings with those in effect over them. */\n\
             export type Settings = Omit<Config, keyof EffectiveSettings> & EffectiveSettings;",
        )
        .add::<TitlesState>()
        .add::<TitlesSet>()
        .add::<ProgressView>()
        .add::<UiToken>()
        .add::<PoolState>()
        .add::<PoolSwitched>()
        .add::<PoolImported>()
        .add::<PoolRemoved>()
        .add::<ControlView>()
        .add::<Unpaired>()
        .add::<ApprovalAnswered>()
        .add::<Stopped>()
        .add::<crate::usage::UsageReport>()
        .add::<UsageDays>()
        .add::<UsageSessions>()
        .add::<UsageLimits>();
    d.render(&format!(
        "The daemon's local API (core/src/daemon/api/), as the Rust types that\n\
         serialize its answers declare it: generated, do not edit. After changing\n\
         one of them: SESSIONPIPE_WRITE_REFERENCE=1 {AGAIN}"
    ))
}

fn harness_names() -> String {
    let mut text = format!(
        "// The protocol crate's HARNESS_DISPLAY_NAMES (protocol/src/validate.rs), as\n\
         // the tray and notifications say them: generated, do not edit. After\n\
         // changing it: SESSIONPIPE_WRITE_REFERENCE=1 {AGAIN}\n\n\
         /** A harness's name as people read it, by its protocol name. */\n\
         export const HARNESS_NAMES: Readonly<Record<string, string>> = {{\n"
    );
    for (name, shown) in protocol::HARNESS_DISPLAY_NAMES {
        writeln!(text, "  {name:?}: {shown:?},").expect("a String takes it");
    }
    text.push_str("};\n");
    text
}

fn tier_words() -> String {
    use protocol::asked::{HIDDEN_SENTENCE, PAIRING_TIER, TIER_1_SENTENCE};
    format!(
        "// The protocol crate's sentences about the tier a receiver gets\n\
         // (protocol/src/asked.rs), as the CLI says them: generated, do not edit.\n\
         // After changing them: SESSIONPIPE_WRITE_REFERENCE=1 {AGAIN}\n\n\
         /** The tier pairing proposes for the sink a receiver hands over. */\n\
         export const PAIRING_TIER = {PAIRING_TIER};\n\n\
         /** Why: what the phone sees at tier 1 and up. */\n\
         export const TIER_1_SENTENCE = {TIER_1_SENTENCE:?};\n\n\
         /** Said where a receiver gets tier 0. */\n\
         export const HIDDEN_SENTENCE = {HIDDEN_SENTENCE:?};\n"
    )
}

#[test]
fn the_uis_generated_types_and_harness_names_are_current() {
    check_or_write(&generated("daemon-api.ts"), &daemon_api(), AGAIN);
    check_or_write(&generated("harness-names.ts"), &harness_names(), AGAIN);
    check_or_write(&generated("tier-words.ts"), &tier_words(), AGAIN);
}
