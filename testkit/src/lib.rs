//! Test-only helpers for sessionpipe.
//!
//! This crate owns the fakes that let the real agent harnesses run offline inside
//! tests: [`http`], a small std-only HTTP/1.1 server that records every request, and
//! [`anthropic`], a scripted Anthropic Messages API built on it ([`MockAnthropic`]).
//! It is a dev-dependency only; nothing here ships.

pub mod anthropic;
pub mod gemini;
pub mod http;
pub mod openai;
pub mod sandbox;

pub use anthropic::{MockAnthropic, Script, Turn};
pub use http::{HttpServer, Request, Response};
pub use sandbox::Sandbox;
