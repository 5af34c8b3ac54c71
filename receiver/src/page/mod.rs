//! Layer 5, page: the receiver's own phone-first web app (`page/`, built into
//! the binary) and the API it speaks under `/app/api/` (sign-in with a passkey,
//! the board, a session's timeline, pairing approvals, signed commands and
//! their acks, files for a `start`, Web Push and notification URLs). The
//! contract with the page is `receiver/page/API.md`.
//!
//! This module owns the page's settings (`options`), its state and who is
//! signed in (`state`: the `sp_session` cookie, checked on every API call),
//! the guard layered over every state-changing call (`guard`: the page's own
//! header and, when the browser sends one, its origin), and its routes
//! (`routes`); what its API answers with is `shapes`, declared for the page
//! by `typescript`. It must not sign anything: every command is signed on the
//! person's device, and the receiver only checks it early with the
//! machine's own verifier and carries it. One account never reads or
//! commands another's: every query below names the signed-in one.

mod assets;
mod board_routes;
#[cfg(test)]
mod command_tests;
mod control_routes;
#[cfg(test)]
mod flood_tests;
mod guard;
mod options;
mod push_routes;
#[cfg(test)]
mod push_tests;
mod routes;
mod shapes;
mod sign_in;
mod state;
#[cfg(test)]
mod typescript;

pub use options::PageOptions;
pub use routes::router;
pub use state::Page;
