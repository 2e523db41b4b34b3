//! Nothing: this crate only names the Lua sources `cargo fetch` brings (see Cargo.toml).
