//! Invariants on real third-party binaries (7zip-bin, sentry-cli, fsevents), beside the
//! differential suite: what must hold whatever their exact contents, for the wrong results of
//! issue 15 that were first seen on them.

use rea::providers::native::{Image, StringQuery, admit};

use crate::common::fixture;
use crate::differential::names_of;

fn document(path: &str, arch: Option<&str>) -> Image {
    let target = admit(&fixture(path)).unwrap();
    let doc = match arch {
        Some(arch) => target
            .documents
            .iter()
            .find(|d| d.architecture == arch)
            .unwrap_or_else(|| panic!("{path}: no {arch} slice")),
        None => &target.documents[0],
    };
    Image::load(doc).unwrap()
}

#[test]
fn seven_zip_prompt_keeps_its_newline_and_its_reference_regression_15() {
    for (path, arch) in [
        ("7zip-bin-5.2.0/package/linux/x64/7za", None),
        ("7zip-bin-5.2.0/package/linux/arm64/7za", None),
        ("7zip-bin-5.2.0/package/mac/arm64/7za", Some("arm64")),
        ("7zip-bin-5.2.0/package/win/x64/7za.exe", None),
    ] {
        let image = document(path, arch);
        let found = image
            .strings(&StringQuery::literal(
                "\nEnter password (will not be echoed):",
            ))
            .unwrap();
        assert_eq!(found.total, 1, "{path}: {:?}", found.matches);
        let m = &found.matches[0];
        assert_eq!(image.bytes_at(m.address, 1), Some(&b"\n"[..]), "{path}");
        assert_eq!(
            m.string_address, m.address,
            "{path}: the newline starts the string"
        );
        let x = image.xrefs(m.address).unwrap();
        assert!(
            x.code
                .iter()
                .all(|c| image.procedure_starting_at(c.procedure).is_some())
                && x.total_code > 0,
            "{path}: no code refers to the prompt at {:#x}",
            m.address
        );
        // Without the newline the match is one byte in, inside the same string.
        let inner = image
            .strings(&StringQuery::literal(
                "Enter password (will not be echoed):",
            ))
            .unwrap();
        let hit = inner
            .matches
            .iter()
            .find(|i| i.string_address == m.address)
            .unwrap();
        assert_eq!(hit.address, m.address + 1);
        assert_eq!(hit.prefix, "\n");
    }
}

#[test]
fn seven_zip_macho_names_are_c_names_with_sizes_regression_15() {
    // The x86-64 build keeps its C symbols (`_CrcUpdate`); the arm64 one only C++ names.
    let image = document("7zip-bin-5.2.0/package/mac/x64/7za", None);
    let crc = image
        .procedures()
        .iter()
        .find(|p| p.name.as_deref() == Some("CrcUpdate"))
        .expect("CrcUpdate");
    assert_eq!(crc.raw_name.as_deref(), Some("_CrcUpdate"));
    for arch in ["arm64", "x64"] {
        let image = document(&format!("7zip-bin-5.2.0/package/mac/{arch}/7za"), None);
        let procs = image.procedures();
        assert!(
            procs.iter().all(|p| p.size.is_some_and(|s| s > 0)),
            "{arch}: every Mach-O procedure has an extent"
        );
        for pair in procs.windows(2) {
            assert!(pair[0].address + pair[0].size.unwrap() <= pair[1].address);
        }
        // No C name keeps its Mach-O underscore.
        assert!(!procs.iter().any(|p| {
            p.name.as_deref().is_some_and(|n| {
                n.starts_with('_') && !p.raw_name.as_deref().is_some_and(|r| r.starts_with("__"))
            })
        }));
    }
}

#[test]
fn sentry_cli_release_url_is_attributed_to_its_user_regression_15() {
    // Rust packs its literals back to back; the URL starts in the middle of a long run.
    for arch in ["arm64", "x86_64"] {
        let image = document("sentry-cli-darwin/package/bin/sentry-cli", Some(arch));
        let found = image
            .strings(&StringQuery::literal(
                "https://release-registry.services.sentry.io/apps/sentry-cli/latest",
            ))
            .unwrap();
        assert_eq!(found.total, 1, "{arch}");
        let m = &found.matches[0];
        let users: Vec<String> = image
            .xrefs(m.address)
            .unwrap()
            .code
            .iter()
            .filter_map(|c| c.procedure_name.clone())
            .collect();
        assert!(
            !users.is_empty()
                && users
                    .iter()
                    .all(|u| u.contains("update::get_latest_sentrycli_release")),
            "{arch}: {users:?}"
        );
    }
}

#[test]
fn fsevents_names_sizes_and_deep_names_agree() {
    use rea::providers::deep;
    let path = fixture("fsevents/package/fsevents.node");
    let target = admit(&path).unwrap();
    let llvm = deep::candidates(target.format.as_str(), None)
        .into_iter()
        .find(|c| c.id == "llvm-objdump-14")
        .expect("llvm-objdump-14 (installed by .ci/run)");
    for doc in &target.documents {
        let image = Image::load(doc).unwrap();
        let procs = image.procedures();
        for pair in procs.windows(2) {
            let end = pair[0].address + pair[0].size.unwrap();
            assert!(end <= pair[1].address, "{}: {:?}", doc.name, pair[0]);
        }
        let theirs = deep::run_procedures(&llvm, doc, std::time::Duration::from_secs(60), 64 << 20)
            .unwrap()
            .result;
        assert!(theirs.len() > 50);
        for p in &theirs {
            let ours = image.procedure_starting_at(p.address).unwrap();
            assert!(
                names_of(ours).contains(p.name.as_ref().unwrap()),
                "{p:?} / {ours:?}"
            );
        }
    }
}

#[test]
fn ls_plt_stubs_have_no_stub_callers_and_data_pointers_live_in_data_regression_15() {
    let target = admit(std::path::Path::new("/usr/bin/ls")).unwrap();
    let image = Image::load(&target.documents[0]).unwrap();
    let stubs: Vec<u64> = image
        .procedures()
        .iter()
        .filter(|p| p.name.as_deref().is_some_and(|n| n.ends_with("@plt")))
        .map(|p| p.address)
        .collect();
    assert!(stubs.len() > 50);
    for &stub in &stubs {
        for caller in image.callers(stub).unwrap().callers {
            assert!(
                !stubs.contains(&caller.procedure),
                "{stub:#x} is called by the stub {:#x}",
                caller.procedure
            );
        }
    }
    // No procedure spans the PLT sections.
    for section in image
        .sections()
        .iter()
        .filter(|s| s.name.starts_with(".plt"))
    {
        for p in image.procedures() {
            if p.address >= section.address && p.address < section.address + section.size {
                assert!(p.size.is_some_and(|s| s <= 16), "{p:?} in {}", section.name);
            }
        }
    }
    // Pointers to procedures are program data, never relocation addends or symbol values.
    let mut pointers = 0;
    for p in image.procedures() {
        for d in image.xrefs(p.address).unwrap().data {
            pointers += 1;
            assert!(
                !d.section.starts_with(".rela") && !d.section.starts_with(".dyn"),
                "{:#x} at {:#x} in {}",
                p.address,
                d.at,
                d.section
            );
        }
    }
    assert!(pointers > 10, "{pointers}");
}
