//! Fuzzes the native reader (`auto` provider) on arbitrary file contents: admission (ELF, Mach-O
//! thin and universal, PE, raw), procedure discovery (symbols, exports, unwind tables, PLT, Go
//! pclntab, Objective-C class and category lists with their chained fixups) and the analysis
//! operations of a loaded image. Nothing may panic, and what the
//! provider documents must hold: procedures sorted with one per address, sections sorted, every
//! document's byte range inside its file.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rea::providers::native::{Image, StringQuery, admit, procedures};

fuzz_target!(|data: &[u8]| {
    let path = rea_fuzz::input_file("input", data);
    let target = match admit(&path) {
        Ok(target) => target,
        Err(error) => panic!("a regular file must always be admitted: {error}"),
    };
    assert!(!target.documents.is_empty(), "a file has at least one document");
    assert!(
        target.documents.windows(2).all(|w| w[0].name < w[1].name),
        "document names must be unique and sorted: {:?}",
        target.documents.iter().map(|d| &d.name).collect::<Vec<_>>()
    );
    for doc in &target.documents {
        assert!(
            doc.offset.checked_add(doc.size).is_some_and(|end| end <= data.len() as u64),
            "document {doc:?} lies outside the {}-byte file",
            data.len()
        );
    }
    // Slices beyond a few repeat the same code paths; bound the work per input.
    for (i, doc) in target.documents.iter().take(3).enumerate() {
        if i == 0 {
            let _ = procedures(doc);
        }
        let Ok(image) = Image::load(doc) else { continue };
        let procs = image.procedures();
        assert!(
            procs.windows(2).all(|w| w[0].address < w[1].address),
            "procedures must be sorted, one per address"
        );
        assert!(
            image.sections().windows(2).all(|w| w[0].address <= w[1].address),
            "sections must be sorted by address"
        );
        for section in image.sections().iter().take(16) {
            let _ = image.section_at(section.address);
            let _ = image.bytes_at(section.address, section.size.min(64));
            let _ = image.procedure_at(section.address);
        }
        let _ = image.entry();
        let _ = image.imports();
        let query = StringQuery {
            limit: 10,
            ..StringQuery::literal("")
        };
        if let Ok(found) = image.strings(&query) {
            assert!(found.matches.len() <= 10);
        }
        let _ = image.strings(&StringQuery {
            regex: true,
            limit: 5,
            ..StringQuery::literal("[a-z]{4,}")
        });
        for p in procs.iter().take(6) {
            assert!(image.procedure_starting_at(p.address).is_some());
            if let Ok(page) = image.assembly(p.address, 0, 32) {
                assert!(page.instructions.len() <= 32);
            }
            let _ = image.callees(p.address);
            let _ = image.function_dossier(p.address);
        }
        if let Some(p) = procs.first() {
            let _ = image.callers(p.address);
            let _ = image.xrefs(p.address);
        }
        if let Some(import) = image.imports().first() {
            let _ = image.callers(import.address);
        }
    }
});
