//! Analyzers beyond the native provider: artifact inventories, JavaScript/Electron applications
//! (with the asar reader they share), bounded process capture, function-level comparison of two
//! documents (`procdiff`) and shortest call paths (`callpaths`).

pub mod artifact;
pub mod asar;
pub mod callpaths;
pub mod capture;
pub mod javascript;
pub mod procdiff;
#[cfg(test)]
pub(crate) mod testbuild;
