//! Completion: the normalized match key and the families of prompt arguments it serves.
pub mod key;
