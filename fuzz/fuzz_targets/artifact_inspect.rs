//! Fuzzes the artifact inventory (`inspect_artifact`) on one file: native images with their load
//! commands, code signatures and entitlements, plists and asar archives. The first input byte
//! chooses the file name (which decides how some kinds are classified), the rest is the content.
//! Every occurrence page must pass the page schema the ledger checks before completion uses it,
//! and inspecting the same bytes twice must give the same inventory.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rea::analyzers::artifact::{InspectOptions, inspect, validate_page};

const NAMES: [&str; 4] = ["target", "app.asar", "Info.plist", "addon.node"];

fuzz_target!(|data: &[u8]| {
    let Some((&selector, content)) = data.split_first() else {
        return;
    };
    let dir = rea_fuzz::fresh_dir("inspect");
    let path = dir.join(NAMES[usize::from(selector) % NAMES.len()]);
    rea_fuzz::write_file(&path, content);
    let options = InspectOptions {
        page_size: 50,
        max_files: 64,
        ..InspectOptions::default()
    };
    let Ok(inventory) = inspect(&path, &options) else {
        return;
    };
    for page in &inventory.pages {
        let value = serde_json::to_value(page).expect("a page serializes");
        if let Err(e) = validate_page(&value) {
            panic!("inspect produced a page that fails its own schema: {e}");
        }
    }
    let again = inspect(&path, &options).expect("the same file inspects again");
    assert_eq!(
        serde_json::to_value(&inventory).unwrap(),
        serde_json::to_value(&again).unwrap(),
        "inspecting the same bytes twice gave different inventories"
    );
});
