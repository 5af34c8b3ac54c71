//! The pool over real HTTP on loopback, one test binary: the proxy between a
//! client and a recording upstream (`proxy`), and signing in, refreshing and
//! reading usage against a loopback OAuth and API server (`oauth`).

mod oauth;
mod proxy;
