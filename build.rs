//! Rebuilds the crate when a migration changes, because refinery embeds them at compile time.
fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
