//! Analysis operations over a loaded image (placeholder while procedures are validated).

/// Lazily built index of every code reference in the image.
#[derive(Debug, Default)]
pub(crate) struct CodeIndex;
