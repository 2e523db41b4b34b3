//! Integration tests: the real server driven by an in-process rmcp client over
//! `tokio::io::duplex`, the store through its public API, and the built binary over stdio.

mod analysis;
mod angr;
mod arm64;
mod artifacts;
mod backtrace;
mod capture;
mod common;
mod completion;
mod crash;
mod disconnect;
mod http;
mod idle;
mod javascript;
mod prompts;
mod store;
mod tools;
