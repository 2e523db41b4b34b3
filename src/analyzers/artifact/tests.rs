//! Tests of the artifact inventory on real inputs: the fixtures' bundles and binaries, and
//! bundles assembled here from fixture parts.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::json;
use sha2::{Digest, Sha256};

use super::*;

fn fixtures() -> PathBuf {
    std::env::var("REA_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".fixtures"))
}

fn options() -> InspectOptions {
    InspectOptions {
        provider_version: String::from("test-1"),
        ..InspectOptions::default()
    }
}

fn inspect_ok(path: &Path) -> Inventory {
    inspect(path, &options()).unwrap_or_else(|e| panic!("inspect {}: {e}", path.display()))
}

fn values<'a>(inv: &'a Inventory, part: &str, kind: OccurrenceKind, key: &str) -> Vec<&'a str> {
    inv.occurrences()
        .filter(|o| o.part == part && o.kind == kind && o.key.as_deref() == Some(key))
        .map(|o| o.value.as_str())
        .collect()
}

fn part<'a>(inv: &'a Inventory, path: &str) -> &'a Part {
    inv.manifest
        .parts
        .iter()
        .find(|p| p.path == path)
        .unwrap_or_else(|| panic!("part {path} missing"))
}

fn findings(inv: &Inventory, rule: FindingRule) -> Vec<&Finding> {
    inv.findings.iter().filter(|f| f.rule == rule).collect()
}

fn sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Every finding cites occurrences that exist in the inventory.
fn assert_citations_resolve(inv: &Inventory) {
    let ids: BTreeSet<&OccurrenceId> = inv.occurrences().map(|o| &o.id).collect();
    for finding in &inv.findings {
        assert!(
            !finding.occurrence_ids.is_empty(),
            "{finding:?} cites nothing"
        );
        for id in &finding.occurrence_ids {
            assert!(ids.contains(id), "{finding:?} cites unknown {id}");
        }
    }
    inv.check().expect("inventory is self-consistent");
}

#[test]
fn terminal_notifier_app() {
    let app = fixtures().join("node-notifier/package/vendor/mac.noindex/terminal-notifier.app");
    let inv = inspect_ok(&app);
    assert_eq!(inv.manifest.target.name, "terminal-notifier.app");
    assert_eq!(inv.manifest.target.kind, TargetKind::Bundle);
    assert!(inv.manifest.complete);
    let kinds: Vec<(&str, PartKind)> = inv
        .manifest
        .parts
        .iter()
        .map(|p| (p.path.as_str(), p.kind))
        .collect();
    assert_eq!(
        kinds,
        vec![
            ("Contents/Info.plist", PartKind::Plist),
            (
                "Contents/MacOS/terminal-notifier",
                PartKind::MachoExecutable
            ),
            ("Contents/PkgInfo", PartKind::Other),
            ("Contents/Resources/Terminal.icns", PartKind::Resource),
            (
                "Contents/Resources/en.lproj/Credits.rtf",
                PartKind::Resource
            ),
            (
                "Contents/Resources/en.lproj/InfoPlist.strings",
                PartKind::StringsTable
            ),
            ("Contents/Resources/en.lproj/MainMenu.nib", PartKind::Nib),
        ]
    );
    let exe = part(&inv, "Contents/MacOS/terminal-notifier");
    assert_eq!(exe.size, 87_688);
    assert_eq!(
        exe.sha256.as_deref(),
        Some("2588f4ae2118396419767c388cf2b0a9a5e0cb53ce5d05a07c00f68a97a50215")
    );
    assert_eq!(exe.architecture.map(|a| a.as_str()), Some("x86_64"));
    assert_eq!(inv.manifest.target.size, 485_210);

    let plist = "Contents/Info.plist";
    let info = OccurrenceKind::InfoPlist;
    assert_eq!(
        values(&inv, plist, info, "CFBundleIdentifier"),
        ["nl.superalloy.oss.terminal-notifier"]
    );
    assert_eq!(
        values(&inv, plist, info, "CFBundleShortVersionString"),
        ["1.7.2"]
    );
    assert_eq!(values(&inv, plist, info, "CFBundleVersion"), ["17"]);
    assert_eq!(
        values(&inv, plist, info, "CFBundleExecutable"),
        ["terminal-notifier"]
    );
    assert_eq!(
        values(&inv, plist, info, "LSMinimumSystemVersion"),
        ["10.8"]
    );
    assert_eq!(
        values(
            &inv,
            plist,
            info,
            "NSAppTransportSecurity.NSAllowsArbitraryLoads"
        ),
        ["false"]
    );
    // ATS is explicitly off, so no arbitrary-loads finding; the executable is unsigned.
    assert!(findings(&inv, FindingRule::AtsArbitraryLoads).is_empty());
    let exe_path = "Contents/MacOS/terminal-notifier";
    assert_eq!(
        values(&inv, exe_path, OccurrenceKind::CodeSignature, "signed"),
        ["false"]
    );
    let unsigned = findings(&inv, FindingRule::UnsignedCode);
    assert_eq!(unsigned.len(), 1);
    assert_eq!(unsigned[0].part, exe_path);
    assert_eq!(inv.findings.len(), 1);

    let url_values: Vec<&str> = inv
        .occurrences()
        .filter(|o| o.kind == OccurrenceKind::Url)
        .map(|o| o.value.as_str())
        .collect();
    assert_eq!(
        url_values,
        ["https://github.com/julienXX/terminal-notifier"]
    );

    let libraries: Vec<(&str, Resolution)> = inv
        .edges
        .iter()
        .filter(|e| e.kind == EdgeKind::LoadDylib)
        .map(|e| (e.target.as_str(), e.resolution))
        .collect();
    assert_eq!(libraries.len(), 7);
    assert!(libraries.iter().all(|(_, r)| *r == Resolution::System));
    assert!(libraries.contains(&("/usr/lib/libobjc.A.dylib", Resolution::System)));
    let bundle_edges: Vec<(&str, EdgeKind, &str, Option<&str>)> = inv
        .edges
        .iter()
        .filter(|e| e.from == ".")
        .map(|e| {
            (
                e.from.as_str(),
                e.kind,
                e.target.as_str(),
                e.resolved.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        bundle_edges,
        vec![
            (".", EdgeKind::InfoPlist, plist, Some(plist)),
            (".", EdgeKind::MainExecutable, exe_path, Some(exe_path)),
        ]
    );
    assert!(inv.occurrence_set.complete);
    assert_citations_resolve(&inv);

    let report = render_inventory_report(&inv);
    assert!(report.contains("| parts | 7 |"), "{report}");
    assert!(report.contains("unsigned-code"));
}

#[test]
fn fsevents_universal_slices_and_adhoc_signature() {
    let file = fixtures().join("fsevents/package/fsevents.node");
    let inv = inspect_ok(&file);
    assert_eq!(inv.manifest.target.kind, TargetKind::File);
    assert_eq!(
        inv.manifest.target.sha256.as_deref(),
        Some("40f2f51199e4f5fc46fa6b985fb3461bb63e6cd86c62bfa9bcee45ed4438d5fb")
    );
    assert_eq!(part(&inv, "fsevents.node").kind, PartKind::MachoUniversal);
    let slices: Vec<&Part> = inv
        .manifest
        .parts
        .iter()
        .filter(|p| p.container.as_deref() == Some("fsevents.node"))
        .collect();
    assert_eq!(slices.len(), 2);
    let x86 = part(&inv, "fsevents.node (x86_64)");
    assert_eq!(
        (x86.kind, x86.file_offset, x86.size),
        (PartKind::MachoBundle, Some(16_384), 81_088)
    );
    assert_eq!(
        x86.sha256.as_deref(),
        Some("f73573a76542d52d5066b3dbff7b907c16416f22ae5db9a1585ebe568a0def93")
    );
    let arm = part(&inv, "fsevents.node (arm64)");
    assert_eq!(
        (arm.kind, arm.file_offset, arm.size),
        (PartKind::MachoBundle, Some(98_304), 65_322)
    );
    assert_eq!(
        arm.sha256.as_deref(),
        Some("60ecfd7939025ecf4228a83ffa27d9fc671469a8749075cf0fad10f276ffb651")
    );
    // Regions of each slice are parts too, contained by the slice.
    let text = part(&inv, "fsevents.node (arm64)/section:__TEXT,__text");
    assert_eq!(text.kind, PartKind::Section);
    assert_eq!(text.container.as_deref(), Some("fsevents.node (arm64)"));
    assert!(text.address.as_deref().is_some_and(|a| a.starts_with("0x")));
    assert!(text.file_offset.is_some_and(|o| o >= 98_304));
    assert!(
        part(&inv, "fsevents.node (x86_64)/segment:__TEXT")
            .sha256
            .is_some()
    );

    let cs = OccurrenceKind::CodeSignature;
    let arm_part = "fsevents.node (arm64)";
    assert_eq!(values(&inv, arm_part, cs, "signed"), ["true"]);
    assert_eq!(values(&inv, arm_part, cs, "adhoc"), ["true"]);
    assert_eq!(values(&inv, arm_part, cs, "linker-signed"), ["true"]);
    assert_eq!(values(&inv, arm_part, cs, "flags"), ["0x00020002"]);
    assert_eq!(values(&inv, arm_part, cs, "identifier"), ["fsevents.node"]);
    assert_eq!(values(&inv, arm_part, cs, "hardened-runtime"), ["false"]);
    assert_eq!(values(&inv, arm_part, cs, "cms-signature"), ["false"]);
    assert!(values(&inv, arm_part, cs, "team-id").is_empty());
    assert_eq!(
        values(&inv, "fsevents.node (x86_64)", cs, "signed"),
        ["false"]
    );

    let adhoc = findings(&inv, FindingRule::AdhocSignature);
    assert_eq!(adhoc.len(), 1);
    assert_eq!(adhoc[0].part, arm_part);
    let adhoc_occurrence = inv
        .occurrences()
        .find(|o| o.id == adhoc[0].occurrence_ids[0])
        .expect("cited occurrence exists");
    assert_eq!(
        (
            adhoc_occurrence.key.as_deref(),
            adhoc_occurrence.value.as_str()
        ),
        (Some("adhoc"), "true")
    );
    let unsigned = findings(&inv, FindingRule::UnsignedCode);
    assert_eq!(unsigned.len(), 1);
    assert_eq!(unsigned[0].part, "fsevents.node (x86_64)");

    let signature_edge = inv
        .edges
        .iter()
        .find(|e| e.kind == EdgeKind::CodeSignature)
        .expect("embedded signature edge");
    assert_eq!(signature_edge.resolution, Resolution::Embedded);
    assert_eq!(signature_edge.architectures, ["arm64"]);
    let libc = inv
        .edges
        .iter()
        .find(|e| e.target == "/usr/lib/libc++.1.dylib")
        .expect("libc++ edge");
    assert_eq!(libc.architectures, ["arm64", "x86_64"]);
    assert_citations_resolve(&inv);
}

#[test]
fn sentry_cli_developer_id_signature() {
    let file = fixtures().join("sentry-cli-darwin/package/bin/sentry-cli");
    let inv = inspect_ok(&file);
    let cs = OccurrenceKind::CodeSignature;
    for (slice, identifier) in [
        ("sentry-cli (x86_64)", "sentry-cli-Darwin-universal"),
        ("sentry-cli (arm64)", "sentry_cli-ed605fe0983d3ac0"),
    ] {
        assert_eq!(
            values(&inv, slice, cs, "team-id"),
            ["97JCY7859U"],
            "{slice}"
        );
        assert_eq!(values(&inv, slice, cs, "identifier"), [identifier]);
        assert_eq!(values(&inv, slice, cs, "hardened-runtime"), ["true"]);
        assert_eq!(values(&inv, slice, cs, "adhoc"), ["false"]);
        assert_eq!(values(&inv, slice, cs, "flags"), ["0x00010000"]);
        assert_eq!(values(&inv, slice, cs, "cms-signature"), ["true"]);
        assert_eq!(values(&inv, slice, cs, "hash-type"), ["sha256"]);
        // The XML entitlements blob is present and empty.
        assert_eq!(values(&inv, slice, cs, "entitlements"), ["0"]);
    }
    assert!(inv.findings.is_empty(), "{:?}", inv.findings);
    // Each slice exports more symbols than the cap: the set says so, kind by kind.
    assert!(!inv.occurrence_set.complete);
    assert!(inv.occurrence_set.reasons.is_empty());
    let gaps: BTreeSet<OccurrenceKind> = inv
        .occurrence_set
        .incomplete_kinds
        .iter()
        .map(|g| g.kind)
        .collect();
    assert_eq!(gaps, BTreeSet::from([OccurrenceKind::ExportedSymbol]));
    assert!(inv.pages.iter().all(|p| !p.complete));
    let symbols = inv
        .occurrences()
        .filter(|o| o.kind == OccurrenceKind::ExportedSymbol && o.part == "sentry-cli (arm64)")
        .count();
    assert_eq!(symbols, 2_000);
    assert!(
        inv.limitations
            .iter()
            .any(|l| l.contains("only the first 2000"))
    );
    assert_citations_resolve(&inv);
}

#[test]
fn pages_split_and_validate() {
    let file = fixtures().join("sentry-cli-darwin/package/bin/sentry-cli");
    let small = InspectOptions {
        page_size: 100,
        ..options()
    };
    let inv = inspect(&file, &small).expect("inspect");
    let total = inv.occurrence_set.total;
    assert_eq!(inv.pages.len() as u64, total.div_ceil(100));
    for (index, page) in inv.pages.iter().enumerate() {
        assert_eq!(page.page as usize, index);
        assert_eq!(page.pages as usize, inv.pages.len());
        let stored = serde_json::to_value(page).expect("serializes");
        let valid = validate_page(&stored).expect("stored page validates");
        assert_eq!(valid.occurrences, page.occurrences);
    }
    inv.check().expect("page set is consistent");

    // A tampered occurrence id is rejected, naming the occurrence.
    let mut tampered = serde_json::to_value(&inv.pages[0]).expect("serializes");
    tampered["occurrences"][3]["id"] = json!(format!("occ_{}", "ab".repeat(32)));
    assert!(matches!(
        validate_page(&tampered),
        Err(SchemaError::OccurrenceIdMismatch { index: 3, .. })
    ));
    // So is an altered value under an untouched id.
    let mut altered = serde_json::to_value(&inv.pages[0]).expect("serializes");
    altered["occurrences"][0]["value"] = json!("something else");
    assert!(matches!(
        validate_page(&altered),
        Err(SchemaError::OccurrenceIdMismatch { index: 0, .. })
    ));
    let mut bad_id = serde_json::to_value(&inv.pages[0]).expect("serializes");
    bad_id["occurrences"][1]["id"] = json!("occ_123");
    assert!(matches!(
        validate_page(&bad_id),
        Err(SchemaError::BadOccurrenceId { index: 1, .. })
    ));
    let mut bad_manifest = serde_json::to_value(&inv.pages[0]).expect("serializes");
    bad_manifest["manifest_id"] = json!("agm_nothex");
    assert!(matches!(
        validate_page(&bad_manifest),
        Err(SchemaError::BadManifestId { .. })
    ));
    let mut out_of_range = serde_json::to_value(&inv.pages[0]).expect("serializes");
    out_of_range["page"] = json!(inv.pages.len());
    assert!(matches!(
        validate_page(&out_of_range),
        Err(SchemaError::PageOutOfRange { .. })
    ));
    assert!(matches!(
        validate_page(&json!({"page": 0})),
        Err(SchemaError::Malformed { .. })
    ));

    // An inventory whose page was altered fails its self-check.
    let mut broken = inv.clone();
    broken.pages[1].occurrences[0].value.push('!');
    assert!(broken.check().is_err());
    let mut dropped = inv.clone();
    dropped.pages.pop();
    assert!(matches!(
        dropped.check(),
        Err(SchemaError::InconsistentPageSet { .. })
    ));
}

#[test]
fn reproducible_manifest_ids() {
    let app = fixtures().join("node-notifier/package/vendor/mac.noindex/terminal-notifier.app");
    let first = inspect_ok(&app);
    let second = inspect_ok(&app);
    assert_eq!(first.manifest.id, second.manifest.id);
    assert_eq!(
        serde_json::to_string(&first).expect("json"),
        serde_json::to_string(&second).expect("json")
    );
    // A copy elsewhere, with new modification times, has the same manifest.
    let temp = tempfile::tempdir().expect("tempdir");
    let copy = temp.path().join("terminal-notifier.app");
    copy_tree(&app, &copy);
    assert_eq!(inspect_ok(&copy).manifest.id, first.manifest.id);
    // Changing one byte changes it.
    let plist = copy.join("Contents/PkgInfo");
    std::fs::write(&plist, b"APPL???!").expect("write");
    assert_ne!(inspect_ok(&copy).manifest.id, first.manifest.id);

    let file = fixtures().join("fsevents/package/fsevents.node");
    assert_eq!(inspect_ok(&file).manifest.id, inspect_ok(&file).manifest.id);
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// Writes an asar archive: 16-byte pickle prefix, JSON header, then file data.
fn asar_bytes(files: &[(&str, &[u8])]) -> (Vec<u8>, String) {
    let mut entries = serde_json::Map::new();
    let mut offset = 0usize;
    for (name, data) in files {
        entries.insert(
            (*name).to_string(),
            json!({"size": data.len(), "offset": offset.to_string()}),
        );
        offset += data.len();
    }
    let header = serde_json::to_string(&json!({"files": entries})).expect("json");
    let padded = (header.len() + 3) & !3;
    let payload = 4 + padded;
    let pickle = 4 + payload;
    let mut out = Vec::new();
    for word in [4u32, pickle as u32, payload as u32, header.len() as u32] {
        out.extend_from_slice(&word.to_le_bytes());
    }
    out.extend_from_slice(header.as_bytes());
    out.resize(8 + pickle, 0);
    for (_, data) in files {
        out.extend_from_slice(data);
    }
    (out, header)
}

fn info_plist(executable: &str, integrity_hash: &str) -> String {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
	<key>CFBundleExecutable</key><string>{executable}</string>
	<key>CFBundleIdentifier</key><string>com.example.electronish</string>
	<key>CFBundleURLTypes</key><array><dict><key>CFBundleURLSchemes</key><array><string>electronish</string></array></dict></array>
	<key>NSAppTransportSecurity</key><dict><key>NSAllowsArbitraryLoads</key><true/></dict>
	<key>ElectronAsarIntegrity</key>
	<dict>
		<key>Resources/app.asar</key>
		<dict><key>algorithm</key><string>SHA256</string><key>hash</key><string>{integrity_hash}</string></dict>
	</dict>
</dict>
</plist>
"#
    )
}

/// Assembles `<dir>/Electronish.app` from fixture parts and returns its path and the asar
/// header's SHA-256.
fn electron_bundle(dir: &Path, integrity_hash: Option<&str>) -> (PathBuf, String) {
    let app = dir.join("Electronish.app");
    let contents = app.join("Contents");
    let data = fixtures().join("delocate/delocate/tests/data");
    std::fs::create_dir_all(contents.join("MacOS")).expect("mkdir");
    std::fs::create_dir_all(contents.join("Resources/app.asar.unpacked")).expect("mkdir");
    std::fs::create_dir_all(contents.join("Frameworks")).expect("mkdir");
    std::fs::copy(data.join("test-lib"), contents.join("MacOS/Electronish")).expect("copy");
    for lib in ["libextfunc_rpath.dylib", "libextfunc2_rpath.dylib"] {
        std::fs::copy(data.join(lib), contents.join("Frameworks").join(lib)).expect("copy");
    }
    let (asar, header) = asar_bytes(&[
        ("main.js", b"require('electron').app.whenReady()\n"),
        ("package.json", b"{\"main\":\"main.js\"}"),
    ]);
    std::fs::write(contents.join("Resources/app.asar"), &asar).expect("write asar");
    std::fs::write(
        contents.join("Resources/app.asar.unpacked/addon.node"),
        b"\0",
    )
    .expect("write");
    let header_sha = sha256(header.as_bytes());
    let hash = integrity_hash.map_or_else(|| header_sha.clone(), str::to_string);
    std::fs::write(
        contents.join("Info.plist"),
        info_plist("Electronish", &hash),
    )
    .expect("plist");
    std::fs::create_dir_all(contents.join("_CodeSignature")).expect("mkdir");
    std::fs::write(
        contents.join("_CodeSignature/CodeResources"),
        "<?xml version=\"1.0\"?><plist version=\"1.0\"><dict/></plist>",
    )
    .expect("seal");

    // An Electron framework with a fuse wire appended to a real Mach-O: RunAsNode on,
    // cookie encryption on, NODE_OPTIONS on, --inspect off, asar integrity off,
    // only-load-from-asar off, V8 snapshot removed, file protocol on.
    let framework = contents.join("Frameworks/Electron Framework.framework");
    let version = framework.join("Versions/A");
    std::fs::create_dir_all(&version).expect("mkdir");
    let mut binary = std::fs::read(data.join("liba.dylib")).expect("read");
    binary.extend_from_slice(image::FUSE_SENTINEL);
    binary.extend_from_slice(&[1, 8]);
    binary.extend_from_slice(b"111000r1");
    std::fs::write(version.join("Electron Framework"), binary).expect("write");
    std::os::unix::fs::symlink("A", framework.join("Versions/Current")).expect("symlink");
    std::os::unix::fs::symlink(
        "Versions/Current/Electron Framework",
        framework.join("Electron Framework"),
    )
    .expect("symlink");
    (app, header_sha)
}

#[test]
fn electron_bundle_integrity_mismatch_fuses_and_rpaths() {
    let temp = tempfile::tempdir().expect("tempdir");
    let wrong = "0".repeat(64);
    let (app, header_sha) = electron_bundle(temp.path(), Some(&wrong));
    let inv = inspect_ok(&app);
    assert_eq!(inv.manifest.target.kind, TargetKind::Bundle);
    let asar_path = "Contents/Resources/app.asar";
    assert_eq!(part(&inv, asar_path).kind, PartKind::Asar);
    let electron = OccurrenceKind::Electron;
    assert_eq!(values(&inv, asar_path, electron, "app-asar"), ["present"]);
    assert_eq!(
        values(&inv, asar_path, electron, "asar-header-sha256"),
        [header_sha.as_str()]
    );
    assert_eq!(values(&inv, asar_path, electron, "asar-entries"), ["2"]);
    assert_eq!(
        values(&inv, asar_path, electron, "asar-integrity"),
        ["mismatch"]
    );

    let mismatch = findings(&inv, FindingRule::AsarIntegrityMismatch);
    assert_eq!(mismatch.len(), 1);
    assert_eq!(mismatch[0].severity, Severity::High);
    let cited: Vec<&Occurrence> = mismatch[0]
        .occurrence_ids
        .iter()
        .map(|id| {
            inv.occurrences()
                .find(|o| &o.id == id)
                .expect("cited occurrence exists")
        })
        .collect();
    let cited: Vec<(&str, &str, &str)> = cited
        .iter()
        .map(|o| {
            (
                o.part.as_str(),
                o.key.as_deref().unwrap_or(""),
                o.value.as_str(),
            )
        })
        .collect();
    assert_eq!(
        cited,
        vec![
            (
                "Contents/Info.plist",
                "ElectronAsarIntegrity.Resources/app.asar.hash",
                wrong.as_str()
            ),
            (asar_path, "asar-header-sha256", header_sha.as_str()),
            (asar_path, "asar-integrity", "mismatch"),
        ]
    );

    // The asar's unpacked folder, the plist and the executable are linked.
    let unpacked = inv
        .edges
        .iter()
        .find(|e| e.kind == EdgeKind::AsarUnpacked)
        .expect("unpacked edge");
    assert_eq!(unpacked.from, asar_path);
    assert_eq!(
        unpacked.resolved.as_deref(),
        Some("Contents/Resources/app.asar.unpacked")
    );
    // @rpath resolved through the loading library's own LC_RPATH (@loader_path/).
    let rpath_edge = inv
        .edges
        .iter()
        .find(|e| {
            e.from == "Contents/Frameworks/libextfunc_rpath.dylib"
                && e.target == "@rpath/libextfunc2_rpath.dylib"
        })
        .expect("rpath edge");
    assert_eq!(rpath_edge.resolution, Resolution::Internal);
    assert_eq!(
        rpath_edge.resolved.as_deref(),
        Some("Contents/Frameworks/libextfunc2_rpath.dylib")
    );
    // LC_RPATH lists @executable_path/ first (Contents/MacOS has no such file), then
    // @loader_path/, which finds it.
    assert_eq!(rpath_edge.via.as_deref(), Some("@loader_path/"));
    // The test executable names a bare "libc.dylib" that is nowhere in the bundle.
    let bare = inv
        .edges
        .iter()
        .find(|e| e.from == "Contents/MacOS/Electronish" && e.target == "libc.dylib")
        .expect("bare dylib edge");
    assert_eq!(bare.resolution, Resolution::Unresolved);

    let seal = inv
        .edges
        .iter()
        .find(|e| e.kind == EdgeKind::CodeResources)
        .expect("seal edge");
    assert_eq!(
        (seal.from.as_str(), seal.target.as_str()),
        (
            "Contents/MacOS/Electronish",
            "Contents/_CodeSignature/CodeResources"
        )
    );
    assert_eq!(
        part(&inv, "Contents/_CodeSignature/CodeResources").kind,
        PartKind::CodeSignature
    );

    // The framework binary behind its symbolic links carries the fuse wire.
    let fw = "Contents/Frameworks/Electron Framework.framework/Versions/A/Electron Framework";
    assert_eq!(part(&inv, fw).kind, PartKind::FrameworkBinary);
    assert_eq!(
        part(
            &inv,
            "Contents/Frameworks/Electron Framework.framework/Versions/Current"
        )
        .kind,
        PartKind::Symlink
    );
    let fuse = OccurrenceKind::ElectronFuse;
    assert_eq!(values(&inv, fw, fuse, "wire-version"), ["1"]);
    assert_eq!(values(&inv, fw, fuse, "RunAsNode"), ["on"]);
    assert_eq!(values(&inv, fw, fuse, "EnableCookieEncryption"), ["on"]);
    assert_eq!(
        values(&inv, fw, fuse, "EnableNodeCliInspectArguments"),
        ["off"]
    );
    assert_eq!(
        values(&inv, fw, fuse, "LoadBrowserProcessSpecificV8Snapshot"),
        ["removed"]
    );
    assert_eq!(
        values(&inv, fw, fuse, "GrantFileProtocolExtraPrivileges"),
        ["on"]
    );
    let insecure: BTreeSet<String> = findings(&inv, FindingRule::InsecureElectronFuse)
        .iter()
        .map(|f| {
            f.message
                .split_whitespace()
                .nth(2)
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert_eq!(
        insecure,
        BTreeSet::from([
            "RunAsNode".to_string(),
            "EnableNodeOptionsEnvironmentVariable".to_string(),
            "EnableEmbeddedAsarIntegrityValidation".to_string(),
            "OnlyLoadAppFromAsar".to_string(),
        ])
    );
    assert_eq!(
        values(&inv, fw, electron, "framework"),
        ["Electron Framework"]
    );

    let plist = "Contents/Info.plist";
    assert_eq!(
        values(
            &inv,
            plist,
            OccurrenceKind::InfoPlist,
            "CFBundleURLTypes.CFBundleURLSchemes"
        ),
        ["electronish"]
    );
    assert_eq!(findings(&inv, FindingRule::AtsArbitraryLoads).len(), 1);
    assert_citations_resolve(&inv);
}

#[test]
fn electron_bundle_with_correct_hash_has_no_mismatch() {
    let temp = tempfile::tempdir().expect("tempdir");
    let (app, _) = electron_bundle(temp.path(), None);
    let inv = inspect_ok(&app);
    assert!(findings(&inv, FindingRule::AsarIntegrityMismatch).is_empty());
    assert_eq!(
        values(
            &inv,
            "Contents/Resources/app.asar",
            OccurrenceKind::Electron,
            "asar-integrity"
        ),
        ["match"]
    );
}

#[test]
fn entitlements_that_disable_protections_are_findings() {
    let xml = br#"<?xml version="1.0" encoding="UTF-8"?>
<plist version="1.0"><dict>
<key>com.apple.security.cs.allow-jit</key><true/>
<key>com.apple.security.cs.disable-library-validation</key><true/>
<key>com.apple.security.get-task-allow</key><false/>
<key>com.apple.application-identifier</key><string>ABC.com.example</string>
<key>keychain-access-groups</key><array><string>ABC.one</string></array>
</dict></plist>"#;
    let inv = inventory::entitlement_inventory_for_tests(xml, &options());
    let part = "image";
    let ent = OccurrenceKind::Entitlement;
    assert_eq!(
        values(&inv, part, ent, "com.apple.security.cs.allow-jit"),
        ["true"]
    );
    assert_eq!(
        values(&inv, part, ent, "com.apple.security.get-task-allow"),
        ["false"]
    );
    assert_eq!(
        values(&inv, part, ent, "com.apple.application-identifier"),
        ["ABC.com.example"]
    );
    assert_eq!(
        values(&inv, part, ent, "keychain-access-groups"),
        ["[\"ABC.one\"]"]
    );
    assert_eq!(
        values(&inv, part, OccurrenceKind::CodeSignature, "entitlements"),
        ["5"]
    );
    let rules: Vec<(Severity, bool)> = findings(&inv, FindingRule::ProtectionDisablingEntitlement)
        .iter()
        .map(|f| (f.severity, f.message.contains("allow-jit")))
        .collect();
    // get-task-allow is false, so only two entitlements count.
    assert_eq!(
        rules,
        vec![(Severity::Low, true), (Severity::Medium, false)]
    );
    assert_citations_resolve(&inv);
    let garbage = inventory::entitlement_inventory_for_tests(b"<plist><dict>", &options());
    assert!(!garbage.occurrence_set.complete);
}

#[test]
fn seven_zip_releases_compare() {
    let old = fixtures().join("7zip-bin-5.1.1/package");
    let new = fixtures().join("7zip-bin-5.2.0/package");
    // mac/x64/7za is byte-identical across the two releases: everything is equal.
    let left = inspect_ok(&old.join("mac/x64/7za"));
    let right = inspect_ok(&new.join("mac/x64/7za"));
    assert_eq!(left.manifest.id, right.manifest.id);
    let same = compare(&left, &right, None, None);
    assert_eq!(same.parts.status, DimensionStatus::Equal);
    assert_eq!(same.edges.status, DimensionStatus::Equal);
    assert!(
        same.occurrences
            .iter()
            .all(|d| d.status == DimensionStatus::Equal)
    );
    assert_eq!(same.procedures.status, DimensionStatus::Equal);
    assert_eq!(
        part(&left, "7za").sha256.as_deref(),
        Some("434075f6ff5ea9250571033ca06b95d464efcad87a528dd0b224816c86b1a444")
    );

    // The Windows build did change.
    let left = inspect_ok(&old.join("win/x64/7za.exe"));
    let right = inspect_ok(&new.join("win/x64/7za.exe"));
    let changed = compare(&left, &right, None, None);
    assert_eq!(changed.parts.status, DimensionStatus::Different);
    let file_change = changed
        .parts
        .changed
        .iter()
        .find(|c| c.path == "7za.exe")
        .expect("file changed");
    assert_eq!(
        file_change.left_sha256.as_deref(),
        Some("8117e40ee7f824f63373a4f5625bb62749f69159d0c449b3ce2f35aad3b83549")
    );
    assert_eq!(
        file_change.right_sha256.as_deref(),
        Some("b0cfdeaf429f5cc53f85123dd8f5a5feb92c19d31aa34df257edf9a26be05f95")
    );
    // Without the documents the procedure dimension is unknown, not equal.
    assert_eq!(changed.procedures.status, DimensionStatus::Unknown);
    // Whole packages as directories: added, removed and changed parts.
    let left = inspect_ok(&old);
    let right = inspect_ok(&new);
    let packages = compare(&left, &right, None, None);
    assert_eq!(packages.parts.status, DimensionStatus::Different);
    let added: Vec<&str> = packages
        .parts
        .added
        .iter()
        .map(|p| p.path.as_str())
        .collect();
    assert_eq!(added, ["win/arm64/7za.exe"]);
    let removed: Vec<&str> = packages
        .parts
        .removed
        .iter()
        .map(|p| p.path.as_str())
        .collect();
    assert_eq!(removed, ["linux/.DS_Store", "mac/.DS_Store"]);
    let changed: Vec<&str> = packages
        .parts
        .changed
        .iter()
        .map(|p| p.path.as_str())
        .collect();
    assert_eq!(
        changed,
        ["package.json", "win/ia32/7za.exe", "win/x64/7za.exe"]
    );
    assert_eq!(packages.parts.unchanged, 13);
    let report = render_comparison_report(&packages);
    assert!(
        report.contains("| parts | different | 1 | 2 | 3 |"),
        "{report}"
    );
}

#[test]
fn incomplete_or_incompatible_sides_are_unknown() {
    let file = fixtures().join("fsevents/package/fsevents.node");
    let left = inspect_ok(&file);
    let right = inspect_ok(&file);
    assert!(
        compare(&left, &right, None, None)
            .occurrences
            .iter()
            .all(|d| d.status == DimensionStatus::Equal)
    );

    let mut incomplete = right.clone();
    incomplete.occurrence_set.complete = false;
    let comparison = compare(&left, &incomplete, None, None);
    for diff in &comparison.occurrences {
        assert_eq!(diff.status, DimensionStatus::Unknown, "{:?}", diff.kind);
        assert!(diff.reasons[0].contains("right side"));
    }
    // Parts were fully listed on both sides, so they are still known to be equal.
    assert_eq!(comparison.parts.status, DimensionStatus::Equal);

    let mut capped = right.clone();
    capped.occurrence_set.complete = false;
    capped.occurrence_set.incomplete_kinds.push(KindGap {
        kind: OccurrenceKind::Url,
        part: None,
        reason: "cap".into(),
    });
    let comparison = compare(&left, &capped, None, None);
    let url = comparison
        .occurrence_kind(OccurrenceKind::Url)
        .expect("url diff");
    assert_eq!(url.status, DimensionStatus::Unknown);
    let cs = comparison
        .occurrence_kind(OccurrenceKind::CodeSignature)
        .expect("code-signature diff");
    assert_eq!(cs.status, DimensionStatus::Equal);

    let other_version = inspect(
        &file,
        &InspectOptions {
            provider_version: "test-2".into(),
            ..options()
        },
    )
    .expect("inspect");
    let comparison = compare(&left, &other_version, None, None);
    assert_eq!(comparison.parts.status, DimensionStatus::Unknown);
    assert_eq!(comparison.edges.status, DimensionStatus::Unknown);
    assert_eq!(comparison.procedures.status, DimensionStatus::Unknown);
    assert!(
        comparison
            .occurrences
            .iter()
            .all(|d| d.status == DimensionStatus::Unknown)
    );
    assert!(comparison.parts.reasons[0].contains("different providers"));
}

#[test]
fn single_files_with_different_names_line_up() {
    let temp = tempfile::tempdir().expect("tempdir");
    let source = fixtures().join("fsevents/package/fsevents.node");
    let renamed = temp.path().join("fsevents-copy.node");
    std::fs::copy(&source, &renamed).expect("copy");
    let comparison = compare(&inspect_ok(&source), &inspect_ok(&renamed), None, None);
    assert_eq!(comparison.parts.status, DimensionStatus::Equal);
    assert_eq!(comparison.edges.status, DimensionStatus::Equal);
    assert!(
        comparison
            .occurrences
            .iter()
            .all(|d| d.status == DimensionStatus::Equal)
    );
    assert_eq!(comparison.notes.len(), 1);
}

fn view_for_verify() -> (EvidenceView, Inventory) {
    let file = fixtures().join("fsevents/package/fsevents.node");
    let inv = inspect_ok(&file);
    let mut changed_target = inv.clone();
    // A right side whose edges differ but whose parts are identical.
    changed_target.edges.pop();
    let comparison = compare(&inv, &changed_target, None, None);
    assert_eq!(comparison.parts.status, DimensionStatus::Equal);
    assert_eq!(comparison.edges.status, DimensionStatus::Different);
    let view = EvidenceView {
        inventories: vec![InventoryEvidence {
            evidence_id: "ev_inventory".into(),
            inventory: inv.clone(),
        }],
        comparisons: vec![ComparisonEvidence {
            evidence_id: "ev_comparison".into(),
            comparison,
        }],
        procedures: vec![
            ProcedureEvidence {
                evidence_id: "ev_procs_full".into(),
                document: "fsevents.node (arm64)".into(),
                names: BTreeSet::from(["_fse_dispatch".to_string()]),
                complete: true,
            },
            ProcedureEvidence {
                evidence_id: "ev_procs_page".into(),
                document: "fsevents.node (x86_64)".into(),
                names: BTreeSet::from(["_fse_watch".to_string()]),
                complete: false,
            },
        ],
        procedure_comparisons: vec![],
    };
    (view, inv)
}

fn claims(text: serde_json::Value) -> ReconstructionSpec {
    serde_json::from_value(text).expect("spec parses")
}

#[test]
fn verify_pass_fail_unknown() {
    let (view, inv) = view_for_verify();
    let arm_sha = part(&inv, "fsevents.node (arm64)")
        .sha256
        .clone()
        .expect("digest");
    let spec = claims(json!({"claims": [
        {"claim": "part_exists", "part": "fsevents.node (arm64)", "sha256": arm_sha},
        {"claim": "occurrence_value", "kind": "code-signature", "key": "adhoc", "value": "true",
         "part": "fsevents.node (arm64)"},
        {"claim": "procedure_exists", "document": "fsevents.node (arm64)", "name": "_fse_dispatch"},
        {"claim": "no_change", "comparison_evidence_id": "ev_comparison", "dimension": "parts"},
        {"claim": "changed", "comparison_evidence_id": "ev_comparison", "dimension": "edges"},
    ]}));
    let verdict = verify(&spec, &view);
    assert_eq!(verdict.status, ClaimStatus::Pass, "{verdict:#?}");
    assert_eq!(verdict.claims[0].evidence_ids, ["ev_inventory"]);
    assert_eq!(
        verdict.evidence_ids,
        ["ev_comparison", "ev_inventory", "ev_procs_full"]
    );

    let spec = claims(json!({"claims": [
        {"claim": "part_exists", "part": "fsevents.node (arm64)", "sha256": "00".repeat(32)},
        {"claim": "occurrence_value", "kind": "code-signature", "key": "team-id", "value": "97JCY7859U"},
        {"claim": "procedure_exists", "document": "fsevents.node (arm64)", "name": "_missing"},
        {"claim": "no_change", "comparison_evidence_id": "ev_comparison", "dimension": "edges"},
        {"claim": "changed", "comparison_evidence_id": "ev_comparison", "dimension": "parts"},
    ]}));
    let verdict = verify(&spec, &view);
    assert_eq!(verdict.status, ClaimStatus::Fail);
    assert!(
        verdict.claims.iter().all(|c| c.status == ClaimStatus::Fail),
        "{verdict:#?}"
    );

    let spec = claims(json!({"claims": [
        {"claim": "procedure_exists", "document": "fsevents.node (x86_64)", "name": "_missing"},
        {"claim": "procedure_exists", "document": "other", "name": "x"},
        {"claim": "no_change", "comparison_evidence_id": "ev_absent", "dimension": "parts"},
        {"claim": "part_exists", "part": "x", "inventory_evidence_id": "ev_absent"},
        {"claim": "no_change", "comparison_evidence_id": "ev_comparison", "dimension": "procedures"},
    ]}));
    let verdict = verify(&spec, &view);
    let statuses: Vec<ClaimStatus> = verdict.claims.iter().map(|c| c.status).collect();
    // Procedures of the comparison are equal: no executable changed.
    assert_eq!(
        statuses,
        [
            ClaimStatus::Unknown,
            ClaimStatus::Unknown,
            ClaimStatus::Unknown,
            ClaimStatus::Unknown,
            ClaimStatus::Pass
        ]
    );
    assert_eq!(verdict.status, ClaimStatus::Unknown);

    // A page set that is not complete turns a missing occurrence into unknown, not fail.
    let mut incomplete = view.clone();
    incomplete.inventories[0].inventory.occurrence_set.complete = false;
    for page in &mut incomplete.inventories[0].inventory.pages {
        page.complete = false;
    }
    let spec = claims(json!({"claims": [
        {"claim": "occurrence_value", "kind": "url", "value": "https://example.com/"},
    ]}));
    assert_eq!(verify(&spec, &view).status, ClaimStatus::Fail);
    assert_eq!(verify(&spec, &incomplete).status, ClaimStatus::Unknown);

    // An inventory altered after the fact is refused, so claims on it are unknown.
    let mut altered = view.clone();
    altered.inventories[0].inventory.manifest.parts[0].size += 1;
    let spec = claims(json!({"claims": [
        {"claim": "part_exists", "part": "fsevents.node"},
    ]}));
    let verdict = verify(&spec, &altered);
    assert_eq!(verdict.status, ClaimStatus::Unknown);
    assert!(verdict.reasons[0].contains("not schema-valid"));

    // Empty and oversized specifications are not evaluated.
    assert_eq!(
        verify(&ReconstructionSpec { claims: vec![] }, &view).status,
        ClaimStatus::Unknown
    );
    let many = ReconstructionSpec {
        claims: vec![
            Claim::PartExists {
                part: "fsevents.node".into(),
                sha256: None,
                inventory_evidence_id: None,
            };
            MAX_CLAIMS + 1
        ],
    };
    let verdict = verify(&many, &view);
    assert_eq!(verdict.status, ClaimStatus::Unknown);
    assert!(verdict.claims.is_empty());
}

#[test]
fn verify_never_widens_a_pass() {
    let (view, _) = view_for_verify();
    // "No change in parts" passes, but the same comparison shows the edges changed: the pass on
    // parts must not make "no change in edges" or "no change at all" pass.
    let spec = claims(json!({"claims": [
        {"claim": "no_change", "comparison_evidence_id": "ev_comparison", "dimension": "parts"},
    ]}));
    let verdict = verify(&spec, &view);
    assert_eq!(verdict.status, ClaimStatus::Pass);
    assert!(verdict.claims[0].reason.contains("parts dimension only"));
    let spec = claims(json!({"claims": [
        {"claim": "no_change", "comparison_evidence_id": "ev_comparison", "dimension": "parts"},
        {"claim": "no_change", "comparison_evidence_id": "ev_comparison", "dimension": "edges"},
    ]}));
    let verdict = verify(&spec, &view);
    assert_eq!(verdict.claims[0].status, ClaimStatus::Pass);
    assert_eq!(verdict.claims[1].status, ClaimStatus::Fail);
    assert_eq!(verdict.status, ClaimStatus::Fail);
    // Occurrence dimensions are judged kind by kind.
    let spec = claims(json!({"claims": [
        {"claim": "no_change", "comparison_evidence_id": "ev_comparison", "dimension": "occurrences/code-signature"},
        {"claim": "no_change", "comparison_evidence_id": "ev_comparison", "dimension": "occurrences"},
    ]}));
    let verdict = verify(&spec, &view);
    assert_eq!(verdict.status, ClaimStatus::Pass);
    assert!(
        serde_json::from_value::<ReconstructionSpec>(json!({"claims": [
            {"claim": "no_change", "comparison_evidence_id": "x", "dimension": "everything"}
        ]}))
        .is_err()
    );
}

#[test]
fn ten_thousand_file_bundle() {
    let temp = tempfile::tempdir().expect("tempdir");
    let app = temp.path().join("Many.app");
    let resources = app.join("Contents/Resources");
    for dir in 0..100 {
        let folder = resources.join(format!("d{dir:02}"));
        std::fs::create_dir_all(&folder).expect("mkdir");
        for file in 0..100 {
            std::fs::write(
                folder.join(format!("f{file:02}.txt")),
                format!("{dir}/{file}"),
            )
            .expect("write");
        }
    }
    let started = std::time::Instant::now();
    let inv = inspect_ok(&app);
    let elapsed = started.elapsed();
    eprintln!("inspect of a 10,000-file bundle took {elapsed:?}");
    assert_eq!(inv.manifest.parts.len(), 10_000);
    assert!(inv.manifest.complete);
    assert!(inv.manifest.parts.windows(2).all(|w| w[0].path < w[1].path));
    assert!(
        inv.manifest
            .parts
            .iter()
            .all(|p| p.kind == PartKind::Resource)
    );
    // The walk cap cuts the manifest and says so.
    let capped = inspect(
        &app,
        &InspectOptions {
            max_files: 500,
            ..options()
        },
    )
    .expect("inspect");
    assert_eq!(capped.manifest.parts.len(), 500);
    assert!(!capped.manifest.complete);
    assert!(!capped.occurrence_set.complete);
    assert!(
        capped
            .occurrence_set
            .reasons
            .iter()
            .any(|r| r.contains("max_files"))
    );
}

#[test]
fn hostile_and_odd_targets() {
    let temp = tempfile::tempdir().expect("tempdir");
    // A truncated universal header, an empty file and garbage are parts, not errors.
    let fsevents = std::fs::read(fixtures().join("fsevents/package/fsevents.node")).expect("read");
    let dir = temp.path().join("odd");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join("truncated.node"), &fsevents[..5_000]).expect("write");
    std::fs::write(dir.join("empty"), b"").expect("write");
    std::fs::write(dir.join("Info.plist"), b"<?xml not really").expect("write");
    std::fs::write(dir.join("broken.asar"), b"\x04\0\0\0\xff\xff\xff\x7f").expect("write");
    let inv = inspect_ok(&dir);
    assert_eq!(inv.manifest.target.kind, TargetKind::Directory);
    assert!(
        inv.manifest
            .parts
            .iter()
            .any(|p| p.path == "truncated.node")
    );
    assert!(!inv.limitations.is_empty());
    assert!(
        values(
            &inv,
            "broken.asar",
            OccurrenceKind::Electron,
            "asar-unreadable"
        )
        .len()
            == 1
    );
    inv.check().expect("consistent");
    assert!(matches!(
        inspect(&temp.path().join("missing"), &options()),
        Err(ArtifactError::Unreadable { .. })
    ));
    // A file too large to parse is hashed and reported as such.
    let small_cap = InspectOptions {
        max_parse_bytes: 1_000,
        ..options()
    };
    let big = inspect(
        &fixtures().join("fsevents/package/fsevents.node"),
        &small_cap,
    )
    .expect("inspect");
    assert_eq!(big.manifest.parts.len(), 1);
    assert_eq!(big.manifest.parts[0].kind, PartKind::MachoUniversal);
    assert!(!big.occurrence_set.complete);
}

#[test]
fn elf_and_pe_libraries() {
    let ls = inspect_ok(Path::new("/usr/bin/ls"));
    assert_eq!(part(&ls, "ls").kind, PartKind::Elf);
    assert!(ls.edges.iter().any(|e| e.kind == EdgeKind::Needed
        && e.target == "libc.so.6"
        && e.resolution == Resolution::SearchPath));
    assert!(
        ls.manifest
            .parts
            .iter()
            .any(|p| p.path == "ls/section:.text")
    );
    let exe =
        inspect_ok(&fixtures().join("node-notifier/package/vendor/snoreToast/snoretoast-x64.exe"));
    assert_eq!(part(&exe, "snoretoast-x64.exe").kind, PartKind::Pe);
    assert!(
        exe.edges
            .iter()
            .any(|e| e.kind == EdgeKind::Import && e.target.eq_ignore_ascii_case("kernel32.dll"))
    );
    assert!(exe.limitations.iter().any(|l| l.contains("Authenticode")));
}

#[test]
fn schemas_generate() {
    let schema = schemars::schema_for!(Inventory);
    let text = serde_json::to_string(&schema).expect("schema json");
    assert!(text.contains("agm_"));
    let spec = schemars::schema_for!(ReconstructionSpec);
    assert!(
        serde_json::to_string(&spec)
            .expect("json")
            .contains("no_change")
    );
    let _ = schemars::schema_for!(Comparison);
    let _ = schemars::schema_for!(Verdict);
    let _ = schemars::schema_for!(OccurrencePage);
}

#[test]
fn real_asar_from_electron_asar_tool() {
    // An archive packed by @electron/asar 3.4.1 (with an unpacked file), kept by the JavaScript
    // analyzer's tests; its integrity hash is computed here from the raw header bytes.
    let testdata =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/analyzers/javascript/testdata");
    let archive = std::fs::read(testdata.join("app.asar")).expect("testdata app.asar");
    let json_len =
        u32::from_le_bytes([archive[12], archive[13], archive[14], archive[15]]) as usize;
    let header_sha = sha256(&archive[16..16 + json_len]);
    let temp = tempfile::tempdir().expect("tempdir");
    let resources = temp.path().join("Real.app/Contents/Resources");
    std::fs::create_dir_all(&resources).expect("mkdir");
    std::fs::write(resources.join("app.asar"), &archive).expect("write");
    copy_tree(
        &testdata.join("app.asar.unpacked"),
        &resources.join("app.asar.unpacked"),
    );
    std::fs::write(
        temp.path().join("Real.app/Contents/Info.plist"),
        info_plist("Real", &header_sha.to_uppercase()),
    )
    .expect("plist");
    let inv = inspect_ok(&temp.path().join("Real.app"));
    let asar_part = "Contents/Resources/app.asar";
    assert_eq!(
        values(
            &inv,
            asar_part,
            OccurrenceKind::Electron,
            "asar-header-sha256"
        ),
        [header_sha.as_str()]
    );
    // The hash comparison ignores hex case.
    assert_eq!(
        values(&inv, asar_part, OccurrenceKind::Electron, "asar-integrity"),
        ["match"]
    );
    assert_ne!(
        values(
            &inv,
            asar_part,
            OccurrenceKind::Electron,
            "asar-unpacked-entries"
        ),
        ["0"]
    );
    let unpacked = inv
        .edges
        .iter()
        .find(|e| e.kind == EdgeKind::AsarUnpacked)
        .expect("edge");
    assert_eq!(unpacked.resolution, Resolution::Internal);
    // The missing executable named by the plist is an unresolved edge, not an error.
    let main = inv
        .edges
        .iter()
        .find(|e| e.kind == EdgeKind::MainExecutable)
        .expect("edge");
    assert_eq!(
        (main.target.as_str(), main.resolution),
        ("Contents/MacOS/Real", Resolution::Unresolved)
    );
}

#[test]
fn library_outside_the_target_is_a_finding() {
    // The same executable with one install name moved from /usr/lib to /opt/lib (same length).
    let data = fixtures().join("delocate/delocate/tests/data/test-lib");
    let mut bytes = std::fs::read(data).expect("read");
    let from = b"/usr/lib/libc++.1.dylib";
    let at = memchr::memmem::find(&bytes, from).expect("install name present");
    bytes[at..at + from.len()].copy_from_slice(b"/opt/lib/libc++.1.dylib");
    let temp = tempfile::tempdir().expect("tempdir");
    let file = temp.path().join("moved");
    std::fs::write(&file, bytes).expect("write");
    let inv = inspect_ok(&file);
    let edge = inv
        .edges
        .iter()
        .find(|e| e.target == "/opt/lib/libc++.1.dylib")
        .expect("edge");
    assert_eq!(edge.resolution, Resolution::Outside);
    let outside = findings(&inv, FindingRule::LibraryOutsideBundle);
    assert_eq!(outside.len(), 1);
    assert_eq!(
        values(&inv, "moved", OccurrenceKind::Library, "outside"),
        ["/opt/lib/libc++.1.dylib"]
    );
    assert_citations_resolve(&inv);

    // Unreadable asar errors do not leak where the target is stored.
    let dir = temp.path().join("odd");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join("broken.asar"), b"\x04\0\0\0\xff\xff\xff\x7f").expect("write");
    let inv = inspect_ok(&dir);
    let temp_text = temp.path().to_string_lossy().to_string();
    assert!(inv.occurrences().all(|o| !o.value.contains(&temp_text)));
    assert!(inv.limitations.iter().all(|l| !l.contains(&temp_text)));
}

#[test]
fn the_specification_schema_states_the_claim_limit_in_words() {
    // Clients read this description; it must give the number, not name a Rust constant.
    let schema = schemars::schema_for!(ReconstructionSpec);
    let description = schema.get("description").and_then(|d| d.as_str()).unwrap();
    let limit = format!(
        "at most {},{:03} claims",
        MAX_CLAIMS / 1000,
        MAX_CLAIMS % 1000
    );
    assert!(description.contains(&limit), "{description}");
    assert!(!description.contains("MAX_CLAIMS"), "{description}");
}

/// A recorded compare_procedures page: `a` unchanged, two stripped entries changed at 0x20 and
/// added at 0x40, with one more added procedure beyond the page.
fn procedure_page() -> crate::analyzers::procdiff::ProcedureDiffPage {
    serde_json::from_value(json!({
        "left": {"name": "l", "architecture": "x86_64", "procedures": 2},
        "right": {"name": "r", "architecture": "x86_64", "procedures": 4},
        "summary": {"status": "different", "added_total": 2, "removed_total": 0,
                    "changed_total": 1, "unchanged_total": 1,
                    "matched_by": {"name": 1, "bytes": 0, "shape": 1, "similarity": 0}},
        "notes": [], "status": null, "offset": 0, "total": 4, "next_offset": 3,
        "entries": [
            {"status": "unchanged", "matched_by": "name", "score": null,
             "left": {"address": "0x10", "name": "a", "size": 4, "instructions": 2, "blocks": 1},
             "right": {"address": "0x10", "name": "a", "size": 4, "instructions": 2, "blocks": 1}},
            {"status": "changed", "matched_by": "shape", "score": null,
             "left": {"address": "0x20", "name": null, "size": 8, "instructions": 3, "blocks": 1},
             "right": {"address": "0x30", "name": null, "size": 9, "instructions": 4, "blocks": 1},
             "changes": {"size": {"left": 8, "right": 9}}},
            {"status": "added", "matched_by": null, "score": null, "left": null,
             "right": {"address": "0x40", "name": null, "size": 1, "instructions": 1, "blocks": 1}}
        ]
    }))
    .expect("a page")
}

#[test]
fn function_level_claims_rest_on_the_recorded_page() {
    let (mut view, _) = view_for_verify();
    view.procedure_comparisons
        .push(ProcedureComparisonEvidence {
            evidence_id: "ev_procedures".into(),
            page: procedure_page(),
        });
    let spec = claims(json!({"claims": [
        {"claim": "procedure_unchanged", "comparison_evidence_id": "ev_procedures", "procedure": "a"},
        {"claim": "procedure_changed", "comparison_evidence_id": "ev_procedures", "procedure": "0x30"},
        {"claim": "procedure_changed", "comparison_evidence_id": "ev_procedures", "procedure": "0x20"},
        {"claim": "procedure_unchanged", "comparison_evidence_id": "ev_procedures", "procedure": "0x40"},
        {"claim": "procedure_changed", "comparison_evidence_id": "ev_procedures", "procedure": "b"},
        {"claim": "procedures_added", "comparison_evidence_id": "ev_procedures", "count": 2},
        {"claim": "procedures_added", "comparison_evidence_id": "ev_procedures", "count": 1},
        {"claim": "procedure_changed", "comparison_evidence_id": "ev_comparison", "procedure": "a"},
        {"claim": "procedures_added", "comparison_evidence_id": "ev_missing", "count": 0},
    ]}));
    let verdict = verify(&spec, &view);
    let statuses: Vec<ClaimStatus> = verdict.claims.iter().map(|c| c.status).collect();
    use ClaimStatus::{Fail, Pass, Unknown};
    assert_eq!(
        statuses,
        [
            Pass, Pass, Pass, Fail, Unknown, Pass, Fail, Unknown, Unknown
        ],
        "{verdict:#?}"
    );
    assert_eq!(
        verdict.claims[3].reason,
        "the comparison recorded procedure 0x40 added, not unchanged"
    );
    assert_eq!(
        verdict.claims[4].reason,
        "procedure b is not on the recorded page; call compare_procedures with the page or status that lists it"
    );
    assert_eq!(verdict.claims[0].evidence_ids, ["ev_procedures"]);
    assert_eq!(verdict.status, Fail);
}
