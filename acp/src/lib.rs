//! sessionpipe's Agent Client Protocol client (ADAPTERS.md, "Agents driven
//! through ACP"): the table of agents it may drive ([`registry`]), the wire's
//! framing ([`wire`]), one turn's bookkeeping and the permission rule of the
//! machine's mode ([`turn`]), and one agent process with its conversation
//! ([`agent`]), ended with everything it started (`tree`); and the tail of a
//! child's stderr ([`tail`]), which the daemon's headless runs keep too.
//!
//! Below control: it starts what it is told to, answers only what the mode
//! allows, and knows nothing of signed commands, acks, the outbox or the
//! person's sessions. The messages it sends are the protocol's own types (the
//! `agent-client-protocol-schema` crate); what it reads is read by the
//! protocol's field names and nothing more, so an agent that adds fields, or
//! update kinds this client does not know, is still understood. The SDK
//! crate's connection is not used: the daemon needs a bound on every line and
//! every wait, ids of any type (agents number their requests from 0), and the
//! process group in its own hands.

pub mod agent;
pub mod registry;
pub mod tail;
mod tree;
pub mod turn;
pub mod wire;

pub use agent::{AcpError, Agent, Bounds, Launch};
pub use registry::{AGENTS, AgentSpec};
pub use turn::{Mode, ToolSeen, TurnEnd};
