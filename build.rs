//! Rebuilds the crate when a migration changes, because refinery embeds them at compile time,
//! and tells the crate the highest migration version (`REA_LATEST_MIGRATION`): a new database is
//! written from `src/store/fresh.sql` only while that script holds every migration.
fn main() {
    println!("cargo:rerun-if-changed=migrations");
    let latest = std::fs::read_dir("migrations")
        .expect("the migrations directory")
        .filter_map(|entry| {
            let name = entry.ok()?.file_name().into_string().ok()?;
            name.strip_prefix('V')?
                .split("__")
                .next()?
                .parse::<u32>()
                .ok()
        })
        .max()
        .expect("at least one migration");
    println!("cargo:rustc-env=REA_LATEST_MIGRATION={latest}");
}
