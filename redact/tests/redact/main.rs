//! The rulesets on their edges (`edges`) and on the shared vectors (`vectors`).
//! One test binary.

mod edges;
mod vectors;
