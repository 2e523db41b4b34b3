//! rea: a reverse-engineering investigation server. An agent drives a long investigation of a
//! shipped application over MCP; every observation is Evidence kept in a per-session SQLite
//! database that a person can audit with the `rea` CLI or `sqlite3`.
//!
//! # Layout
//! - [`fsroot`]: paths resolved once beneath the allowed roots and then used by descriptor;
//!   maps of documents and analysis deadlines (the bottom floor, beside `ids`).
//! - [`ids`]: identifier newtypes (Evidence, manifest, occurrence and unknown ids; addresses).
//! - [`vocabulary`]: the names of formats, architectures, document roles, import and callee kinds.
//! - [`evidence`]: the Evidence record, its canonical JSON and its id.
//! - [`settings`]: the operator's settings and the path policy every path goes through.
//! - [`store`]: the session database: migrations, pragmas, the group-committing writer, recordings
//!   committed whole, queries, and the read-only store.
//! - [`session`]: a binary session's directory, lock, resume, export and close.
//! - [`completion`]: the match key and the eight completion families over the live session.
//! - [`prompts`]: the six guided workflows, operator prompt files, and rendering.
//! - [`analyzers`]: artifact inventories and comparisons, JavaScript/Electron analysis with the
//!   asar reader, and bounded process capture.
//! - [`providers`]: the built-in native reader (`auto`), deep analyzer candidates, and the
//!   decompiler interface with its `angr` provider.
//! - [`investigation`]: every operation, made the same way for the server and the CLI: one
//!   snapshot of the binary session, a pure recording, one commit. The façade: of the floors
//!   below, the edge sees only what it re-exports.
//! - [`tools`]: the MCP tools and their catalog, one file per family (edge: knows rmcp).
//! - [`cli`]: the command line over the same operations, the reading commands included (edge).
//! - [`server`]: the rmcp handler: prompts, completion, tools, list-changed delivery (edge).
//! - [`transport`]: strict JSON-RPC in front of rmcp's stdio and streamable HTTP (edge).
pub mod analyzers;
pub mod cli;
pub mod completion;
pub mod evidence;
pub mod fsroot;
pub mod ids;
pub mod investigation;
pub mod prompts;
pub mod providers;
pub mod server;
pub mod session;
pub mod settings;
pub mod store;
pub mod tools;
pub mod transport;
pub mod vocabulary;
