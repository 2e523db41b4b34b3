//! Fuzzes a macOS `.app` bundle whose `Contents/Info.plist` is the input (XML or binary plist,
//! read with `plist::Value::from_reader` behind `admit` and the artifact inventory). The bundle
//! also holds a small real Mach-O main executable. Nothing may panic; what the plist names must
//! stay inside the bundle, and every document must be a file of the bundle.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use rea::analyzers::artifact::{InspectOptions, inspect, validate_page};
use rea::providers::native::admit;

/// A small Mach-O executable from the fixtures (delocate's `test-lib`), as the main executable.
const EXECUTABLE: &[u8] = include_bytes!("../corpus/native_image/macho-x86_64-exe");

fn bundle() -> &'static PathBuf {
    static BUNDLE: OnceLock<PathBuf> = OnceLock::new();
    BUNDLE.get_or_init(|| {
        let root = rea_fuzz::fresh_dir("bundle");
        let app = root.join("Fuzz.app");
        rea_fuzz::write_file(&app.join("Contents/MacOS/Fuzz"), EXECUTABLE);
        rea_fuzz::write_file(&app.join("Contents/PkgInfo"), b"APPL????");
        std::fs::canonicalize(app).expect("canonical bundle path")
    })
}

fuzz_target!(|data: &[u8]| {
    let app = bundle();
    rea_fuzz::write_file(&app.join("Contents/Info.plist"), data);

    let target = admit(app).unwrap_or_else(|e| panic!("a .app directory must be admitted: {e}"));
    let info = target.bundle.as_ref().expect("a bundle target carries bundle info");
    if let Some(rel) = &info.main_executable {
        let resolved = std::fs::canonicalize(app.join(rel)).expect("main executable exists");
        assert!(
            resolved.starts_with(app),
            "CFBundleExecutable {:?} names {} outside the bundle",
            info.executable,
            resolved.display()
        );
    }
    for doc in &target.documents {
        assert!(doc.file.starts_with(app), "document {doc:?} outside the bundle");
    }

    let options = InspectOptions {
        page_size: 50,
        max_files: 64,
        ..InspectOptions::default()
    };
    if let Ok(inventory) = inspect(app, &options) {
        for page in &inventory.pages {
            let value = serde_json::to_value(page).expect("a page serializes");
            if let Err(e) = validate_page(&value) {
                panic!("inspect produced a page that fails its own schema: {e}");
            }
        }
    }
});
