//! Integration tests: the real server driven by an in-process rmcp client over
//! `tokio::io::duplex`, the store through its public API, and the built binary over stdio.

mod analysis;
mod angr;
mod architecture;
mod arm64;
mod artifacts;
mod backtrace;
mod capture;
mod cli_output;
mod common;
mod completion;
mod corpus;
mod corruption;
mod crash;
mod differential;
mod disconnect;
mod fulldisk;
mod golden;
mod hostile;
mod http;
mod http_sessions;
mod idle;
mod invariants;
mod javascript;
mod jsonrpc;
mod parity;
mod prompts;
mod readonly;
mod regression_15;
mod roots;
mod schema;
mod snapshot;
mod store;
mod tools;
