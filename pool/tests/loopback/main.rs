//! The pool over real HTTP on loopback, one test binary: the proxy between a
//! client and a recording upstream (`proxy`), and signing in, refreshing and
//! reading usage against a loopback OAuth and API server (`oauth`); the API's
//! HTTPS edge stands in `https_edge`.

mod https_edge;
mod oauth;
mod proxy;
