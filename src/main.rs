//! The `rea` binary: parses arguments, sets up tracing on stderr, runs the CLI.
fn main() {}
