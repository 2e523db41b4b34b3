//! Instruction decoding (placeholder).
