//! Providers: the built-in native reader (`auto`) and detection of heavier deep analyzers.

pub mod deep;
pub mod native;
