//! The page API's answers as TypeScript, for the phone page: the test here
//! makes `web-shared/src/generated/page-api.ts` from the types the handlers
//! serialize (`shapes`) and fails when the committed file is not that text;
//! `SESSIONPIPE_WRITE_REFERENCE=1` writes it.
//!
//! What is not declared from a type, and why:
//! - `GET /app/api/commands/{id}` answers control's record of the message
//!   (`control::owned::message_of`, JSON with its acks as the machine sent
//!   them): the page's `CommandStatus` describes it.
//! - A machine's `hello` is what the machine sent (`control-hello.json`):
//!   the page's `Hello` reads it.
//! - Request bodies (the signed command, the pairing's key and proof) are
//!   the protocol's, read by `sessionpipe-verifier`: the page's own types
//!   describe what it sends.
//! - A refusal is `crate::error::ApiError`'s `{reason, detail?}`, read in
//!   one place (`api.ts`).

use super::shapes::*;
use sessionpipe_testkit::reference::check_or_write;
use sessionpipe_testkit::typescript::Declarations;
use std::path::PathBuf;

const AGAIN: &str = "cargo test -p sessionpipe-receiver --lib page::typescript";

fn page_api() -> String {
    let mut d = Declarations::new();
    d.add::<Config>()
        .add::<Ceremony>()
        .add::<SignedIn>()
        .add::<Me>()
        .add::<Invite>()
        .add::<Board>()
        .add::<SessionPage>()
        .add::<protocol::changes::Changes>()
        .add::<Pairing>()
        .add::<Approved>()
        .add::<Queued>()
        .add::<Uploaded>();
    d.render(&format!(
        "The receiver's page API (receiver/src/page/, `/app/api/`), as the Rust\n\
         types that serialize its answers declare it: generated, do not edit.\n\
         After changing one of them: SESSIONPIPE_WRITE_REFERENCE=1 {AGAIN}"
    ))
}

#[test]
fn the_pages_generated_types_are_current() {
    let file =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../web-shared/src/generated/page-api.ts");
    check_or_write(&file, &page_api(), AGAIN);
}
