//! Providers: the built-in native reader (`auto`), detection of heavier deep analyzers, and
//! the decompiler interface with its `angr` implementation.

pub mod angr;
pub mod decompile;
pub mod deep;
pub mod native;
