//! Test-only helpers for sessionpipe.
//!
//! This crate owns the fakes that let the real agent harnesses run offline inside
//! tests: [`http`], a small std-only HTTP/1.1 server that records every request, and
//! scripted model APIs built on it: [`anthropic`] ([`MockAnthropic`]), [`openai`]
//! (Codex's Responses API) and [`gemini`]; and [`sandbox`], which runs the real
//! binaries in a temporary home, and [`codex`], the real Codex set up in one;
//! [`acp_agents`], real ACP agents (OpenCode, Gemini CLI, Qwen Code) set up in
//! one to run offline against a scripted model;
//! [`terminal`], which runs an interactive program in a real terminal and reads
//! its screen; [`layers`], which reads a crate's module structure for the
//! tests that keep it layered; [`inbox`], a stand-in for Claude Code's
//! cross-session inbox and the registry record that names it; [`postgres`], a
//! throwaway PostgreSQL server; [`balancer`], a round-robin load balancer in
//! front of several receivers; [`push`], a loopback Web Push service that
//! decrypts what it is sent; [`reference`], which keeps the book's generated
//! pages current; [`typescript`], the generated TypeScript files of
//! `web-shared/`, compared with the committed ones; [`pebble`], a throwaway
//! ACME server (Let's Encrypt's test CA) and its DNS; and [`passkey`], a
//! phone's software passkey for the receiver's page; [`usage`], the tokens a
//! test makes a scripted API report.
//! [`executable`] writes the little scripts tests run without racing another
//! thread's fork; [`git`] runs the real git in a test's repository. It is a dev-dependency only; nothing here ships.

pub mod acp_agents;
pub mod agy;
pub mod anthropic;
pub mod balancer;
pub mod chat;
pub mod codex;
#[cfg(feature = "control")]
pub mod control;
pub mod executable;
pub mod gemini;
pub mod git;
pub mod harnesses;
pub mod http;
#[cfg(unix)]
pub mod inbox;
pub mod layers;
pub mod openai;
#[cfg(feature = "passkey")]
pub mod passkey;
#[cfg(feature = "acme")]
pub mod pebble;
pub mod postgres;
#[cfg(feature = "push")]
pub mod push;
pub mod reference;
pub mod sandbox;
pub mod terminal;
#[cfg(feature = "ts")]
pub mod typescript;
pub mod usage;

pub use anthropic::{MockAnthropic, Script, Turn};
pub use http::{HttpServer, Request, Response};
pub use sandbox::Sandbox;
pub use terminal::Terminal;
