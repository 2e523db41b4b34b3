//! Integration tests: the real server driven by an in-process rmcp client over
//! `tokio::io::duplex`, the store through its public API, and the built binary over stdio.

mod analysis;
mod artifacts;
mod capture;
mod common;
mod completion;
mod corpus;
mod crash;
mod differential;
mod disconnect;
mod http;
mod idle;
mod invariants;
mod javascript;
mod prompts;
mod regression_15;
mod store;
mod tools;
