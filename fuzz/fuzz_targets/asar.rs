//! Fuzzes the bounds-checked asar reader on arbitrary archive bytes: opening, listing and reading
//! every entry. Entries must be sorted and unique, name no `.`, `..` or empty component, and a
//! packed read must return exactly the declared size.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rea::analyzers::asar::Archive;

fuzz_target!(|data: &[u8]| {
    let path = rea_fuzz::input_file("fuzz.asar", data);
    let Ok(archive) = Archive::open(&path) else {
        return;
    };
    let entries = archive.entries();
    assert!(
        entries.windows(2).all(|w| w[0].path < w[1].path),
        "entries must be sorted by path, each path once"
    );
    assert!(archive.data_start() <= data.len() as u64);
    for entry in entries {
        assert!(
            entry
                .path
                .split('/')
                .all(|c| !c.is_empty() && c != "." && c != ".." && !c.contains(['\\', '\0'])),
            "entry path {:?} is not a plain relative path",
            entry.path
        );
        assert!(archive.entry(&entry.path).is_some());
    }
    for entry in entries.iter().take(64) {
        match archive.read(&entry.path) {
            Ok(bytes) => {
                if entry.link.is_none() && !entry.unpacked {
                    assert_eq!(bytes.len() as u64, entry.size, "packed read of {}", entry.path);
                }
            }
            Err(_) => {
                assert!(
                    entry.link.is_some() || entry.unpacked,
                    "open checked every packed entry, so reading {} cannot fail",
                    entry.path
                );
            }
        }
    }
    let _ = archive.header_sha256();
    let _ = archive.read("/../../etc/passwd");
});
