//! String search (placeholder).
