//! Analyzers beyond the native provider: artifact inventories, JavaScript/Electron applications
//! (with the asar reader they share), and bounded process capture.

pub mod artifact;
pub mod asar;
pub mod capture;
pub mod javascript;
