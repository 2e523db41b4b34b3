//! Issue 20, item 5 (second half): Objective-C method names of a stripped Mach-O from its
//! `__objc_classlist` and `__objc_catlist`. `tests/corpus/counter.m` (two root classes and a
//! category) is built as an x86-64 and an arm64 dylib the way the corpus links them (clang-14,
//! ld64.lld-14, no SDK) and stripped of local symbols; rea must name every method's
//! implementation `-[Class selector]` / `+[Class(Category) selector]` at the address `llvm-nm-14`
//! gives the symbol in the unstripped build, agreeing with `llvm-objdump-14 --objc-meta-data` on
//! the stripped file, with the list as its `name_source`; the unstripped build keeps its symbols'
//! names and no source.
//!
//! ld64.lld-14 writes no chained fixups (`-fixup_chains` is not one of its options), so those
//! images are covered by the unit tests of `providers/native/objc.rs` on constructed bytes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::common::{Harness, start};
use crate::corpus::run;

/// The unstripped and stripped (`llvm-strip-14 -x`) dylib of `counter.m` for `target`, built
/// per process under the test's temp directory.
fn dylibs(target: &str) -> (PathBuf, PathBuf) {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("rea-objc-names")
        .join(std::process::id().to_string());
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join(format!("counter-{target}.dylib"));
    let stripped = dir.join(format!("counter-{target}-stripped.dylib"));
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/counter.m");
    run(
        "clang-14",
        &[
            "-O1",
            "-target",
            &format!("{target}-apple-macos11"),
            "-fobjc-runtime=macosx-11",
            "-fuse-ld=lld",
            "-nostdlib",
            "-dynamiclib",
            "-Wl,-undefined,dynamic_lookup",
            "-o",
            out.to_str().unwrap(),
            source.to_str().unwrap(),
        ],
    );
    run(
        "llvm-strip-14",
        &[
            "-x",
            "-o",
            stripped.to_str().unwrap(),
            out.to_str().unwrap(),
        ],
    );
    (out, stripped)
}

/// The Objective-C method symbols `llvm-nm-14` lists: name → address.
fn nm_methods(path: &Path) -> BTreeMap<String, u64> {
    run("llvm-nm-14", &["--defined-only", path.to_str().unwrap()])
        .lines()
        .filter_map(|l| {
            let (address, rest) = l.split_once(' ')?;
            let name = rest.get(2..)?;
            (name.starts_with("-[") || name.starts_with("+["))
                .then(|| (name.to_string(), u64::from_str_radix(address, 16).unwrap()))
        })
        .collect()
}

/// The pointer slots `llvm-objdump-14 --macho --bind` lists: address → symbol.
fn objdump_binds(path: &Path) -> BTreeMap<u64, String> {
    let text = run(
        "llvm-objdump-14",
        &["--macho", "--bind", path.to_str().unwrap()],
    );
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let address = u64::from_str_radix(f.get(2)?.strip_prefix("0x")?, 16).ok()?;
            Some((address, f.last()?.to_string()))
        })
        .collect()
}

/// The methods `llvm-objdump-14 --macho --objc-meta-data` prints: `±[Class(Category) selector]`
/// → implementation address. A category's listing repeats its class's; only the methods after
/// its `instanceMethods` / `classMethods` lines are the category's own. A category of another
/// image's class prints `cls 0x0`: its class is the symbol `--bind` gives the category's `cls`
/// slot (8 bytes in).
fn objdump_methods(path: &Path) -> BTreeMap<String, u64> {
    let text = run(
        "llvm-objdump-14",
        &["--macho", "--objc-meta-data", path.to_str().unwrap()],
    );
    let binds = objdump_binds(path);
    let mut entry = 0u64;
    let mut out = BTreeMap::new();
    let (mut in_catlist, mut recording) = (false, false);
    let (mut kind, mut class, mut category) = ('-', String::new(), None::<String>);
    let (mut previous, mut selector) = (String::new(), String::new());
    let last = |l: &str| l.split_whitespace().last().unwrap_or_default().to_string();
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with("Contents of (") {
            in_catlist = t.contains("__objc_catlist");
            recording = t.contains("__objc_classlist");
            category = None;
        } else if line.len() > 17
            && line.as_bytes()[16] == b' '
            && line[..16].bytes().all(|b| b.is_ascii_hexdigit())
        {
            // A list entry: a new class (or category) begins, at the address it points to.
            entry = u64::from_str_radix(
                line[17..]
                    .split_whitespace()
                    .next()
                    .unwrap()
                    .trim_start_matches("0x"),
                16,
            )
            .unwrap();
            kind = '-';
            category = None;
            recording = !in_catlist;
        } else if t == "cls 0x0" {
            let symbol = &binds[&(entry + 8)];
            class = symbol.strip_prefix("_OBJC_CLASS_$_").unwrap().to_string();
        } else if t == "Meta Class" {
            kind = '+';
        } else if t.starts_with("instanceMethods ") {
            (kind, recording) = ('-', true);
        } else if t.starts_with("classMethods ") {
            (kind, recording) = ('+', true);
        } else if t.starts_with("name 0x") {
            if previous.starts_with("ivarLayout") {
                class = last(t);
            } else if in_catlist && category.is_none() {
                category = Some(last(t));
            } else {
                selector = last(t);
            }
        } else if t.starts_with("imp 0x") && recording {
            let address = t
                .split_whitespace()
                .nth(1)
                .unwrap()
                .trim_start_matches("0x");
            let owner = match &category {
                Some(c) => format!("{class}({c})"),
                None => class.clone(),
            };
            out.insert(
                format!("{kind}[{owner} {selector}]"),
                u64::from_str_radix(address, 16).unwrap(),
            );
        }
        previous = t.to_string();
    }
    out
}

/// Every procedure row of the open target, by address.
async fn rows(h: &Harness) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    let mut offset = 0;
    loop {
        let page = h
            .call("list_procedures", json!({ "offset": offset, "limit": 500 }))
            .await;
        for row in page["procedures"].as_array().unwrap() {
            out.insert(row["address"].as_str().unwrap().to_string(), row.clone());
        }
        match page["next_offset"].as_u64() {
            Some(next) => offset = next,
            None => return out,
        }
    }
}

/// The nine methods of `counter.m`, with the list that names each once stripped.
const METHODS: [(&str, &str); 9] = [
    ("-[Counter increment]", "objc_classlist"),
    ("-[Counter value]", "objc_classlist"),
    ("+[Counter make]", "objc_classlist"),
    ("-[Counter(Extra) twice]", "objc_catlist"),
    ("+[Counter(Extra) limit]", "objc_catlist"),
    ("-[Pair sum:]", "objc_classlist"),
    ("+[Pair arity]", "objc_classlist"),
    ("-[NSObject(Probe) probe]", "objc_catlist"),
    ("+[NSObject(Probe) kind]", "objc_catlist"),
];

async fn check(target: &str) {
    let (unstripped, stripped) = dylibs(target);
    let expected = nm_methods(&unstripped);
    let names: Vec<&str> = expected.keys().map(String::as_str).collect();
    let mut listed: Vec<&str> = METHODS.iter().map(|m| m.0).collect();
    listed.sort();
    assert_eq!(
        names, listed,
        "{target}: the symbols of the unstripped build"
    );
    // Stripping removed every method symbol; the metadata still says them all, at the same
    // addresses.
    assert!(nm_methods(&stripped).is_empty(), "{target}");
    assert_eq!(objdump_methods(&stripped), expected, "{target}");

    let h = start().await;
    h.call("open_binary", json!({ "path": stripped })).await;
    let all = rows(&h).await;
    for (name, source) in METHODS {
        let address = format!("{:#x}", expected[name]);
        let row = &all[&address];
        assert_eq!(row["name"], name, "{target}: {row}");
        assert!(row.get("raw_name").is_none(), "{target}: {row}");
        let info = h
            .call("procedure_info", json!({ "procedure": address }))
            .await;
        assert_eq!(info["procedure"]["name"], name, "{target}: {info}");
        assert_eq!(info["name_source"], source, "{target}: {info}");
        // The Evidence the call recorded holds the source too.
        let evidence = h
            .call(
                "get_evidence",
                json!({ "evidence_id": info["evidence"]["id"] }),
            )
            .await;
        assert_eq!(
            evidence["record"]["result"]["name_source"], source,
            "{evidence}"
        );
        let by_name = h.call("procedure_info", json!({ "procedure": name })).await;
        assert_eq!(
            by_name["procedure"]["address"],
            address.as_str(),
            "{by_name}"
        );
    }
    // Nothing else is named from the lists: one procedure per method.
    let objc = all
        .values()
        .filter(|r| r["name"].as_str().is_some_and(|n| n.contains('[')))
        .count();
    assert_eq!(objc, METHODS.len(), "{target}");

    // Unstripped: the symbols' names, no source, and no second name beside them.
    let h = start().await;
    h.call("open_binary", json!({ "path": unstripped })).await;
    let all = rows(&h).await;
    for (name, _) in METHODS {
        let address = format!("{:#x}", expected[name]);
        let row = &all[&address];
        assert_eq!(row["name"], name, "{target}: {row}");
        assert!(row.get("aliases").is_none(), "{target}: {row}");
        let info = h
            .call("procedure_info", json!({ "procedure": address }))
            .await;
        assert!(info.get("name_source").is_none(), "{target}: {info}");
    }
}

#[tokio::test]
async fn stripped_x86_64_dylib_names_objc_methods_from_classlist_regression_20() {
    check("x86_64").await;
}

#[tokio::test]
async fn stripped_arm64_dylib_names_objc_methods_from_classlist_regression_20() {
    check("arm64").await;
}

/// A program ld64 linked (terminal-notifier, x86-64, rebase and bind opcodes): stripped of its
/// local symbols, rea names all seventeen methods at `llvm-nm-14`'s addresses in the shipped
/// file, the two categories of Foundation classes (`NSBundle`, `NSUserDefaults`) by the class
/// symbols their class pointers bind to.
#[tokio::test]
async fn stripped_ld64_program_names_its_methods_and_foundation_categories_regression_20() {
    let shipped = crate::common::fixture(
        "node-notifier/package/vendor/mac.noindex/terminal-notifier.app/Contents/MacOS/terminal-notifier",
    );
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("rea-objc-names")
        .join(std::process::id().to_string());
    std::fs::create_dir_all(&dir).unwrap();
    let stripped = dir.join("terminal-notifier-stripped");
    run(
        "llvm-strip-14",
        &[
            "-x",
            "-o",
            stripped.to_str().unwrap(),
            shipped.to_str().unwrap(),
        ],
    );
    let expected = nm_methods(&shipped);
    assert_eq!(expected.len(), 17, "{expected:?}");
    assert!(nm_methods(&stripped).is_empty());
    let h = start().await;
    h.call("open_binary", json!({ "path": stripped })).await;
    let all = rows(&h).await;
    for (name, &address) in &expected {
        let address = format!("{address:#x}");
        assert_eq!(all[&address]["name"], name.as_str(), "{}", all[&address]);
        let info = h
            .call("procedure_info", json!({ "procedure": address }))
            .await;
        let source = if name.contains('(') {
            "objc_catlist"
        } else {
            "objc_classlist"
        };
        assert_eq!(info["name_source"], source, "{info}");
    }
    for name in [
        "-[NSBundle(FakeBundleIdentifier) __bundleIdentifier]",
        "-[NSUserDefaults(SubscriptAndUnescape) objectForKeyedSubscript:]",
    ] {
        assert!(expected.contains_key(name), "{name}");
    }
}

/// `size` of the `section_64` header whose `sectname` is `name` (16 bytes, no NUL when the
/// name fills them) in a `__DATA*` segment: the header's offset in `bytes` plus 40.
fn section_size_field(bytes: &[u8], name: &[u8; 16]) -> usize {
    let at = bytes
        .windows(22)
        .position(|w| &w[..16] == name && &w[16..] == b"__DATA")
        .unwrap_or_else(|| panic!("no {} header", String::from_utf8_lossy(name)));
    at + 40
}

/// Issue 16: a list section's header may claim any size. The stripped x86-64 dylib with its
/// `__objc_classlist` and `__objc_catlist` claiming 2^62 bytes each opens as the file is: the
/// same nine methods at the same addresses, the lists read only as far as the file holds them
/// (the walk used to visit 2^59 unreadable slots, minutes of a fuzz run).
#[tokio::test]
async fn lists_claiming_more_than_the_file_holds_are_read_as_held_regression_16() {
    let (unstripped, stripped) = dylibs("x86_64");
    let expected = nm_methods(&unstripped);
    let mut bytes = std::fs::read(&stripped).unwrap();
    for name in [b"__objc_classlist", b"__objc_catlist\0\0"] {
        let at = section_size_field(&bytes, name);
        bytes[at..at + 8].copy_from_slice(&(1u64 << 62).to_le_bytes());
    }
    let claimed = stripped.with_file_name("counter-x86_64-claimed.dylib");
    std::fs::write(&claimed, &bytes).unwrap();
    let h = start().await;
    h.call("open_binary", json!({ "path": claimed })).await;
    let all = rows(&h).await;
    let named: BTreeMap<String, u64> = all
        .values()
        .filter_map(|r| {
            let name = r["name"].as_str()?;
            name.contains('[').then(|| {
                let address = r["address"].as_str().unwrap().trim_start_matches("0x");
                (name.to_string(), u64::from_str_radix(address, 16).unwrap())
            })
        })
        .collect();
    assert_eq!(named, expected);
}

/// The `data` names of the operands of `procedure` (`procedure_assembly`, first page).
async fn operand_names(h: &Harness, procedure: &str) -> Vec<String> {
    let page = h
        .call("procedure_assembly", json!({ "procedure": procedure }))
        .await;
    page["instructions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| Some(i["data"]["name"].as_str()?.to_string()))
        .collect()
}

/// Issue 16: a section whose header puts its end past 2^64. `-[Counter increment]` loads the
/// ivar offset `OBJC_IVAR_$_Counter.n` (a Mach-O symbol without a size, so its extent is
/// clipped to its section's end); with `__objc_ivar` claiming to reach past the top of the
/// address space the operand is named as in the file as linked, instead of the end overflowing
/// (a fuzz input found the panic).
#[tokio::test]
async fn a_section_reaching_past_the_address_space_names_its_symbols_regression_16() {
    let (_, stripped) = dylibs("x86_64");
    let h = start().await;
    h.call("open_binary", json!({ "path": stripped })).await;
    let linked = operand_names(&h, "-[Counter increment]").await;
    assert!(
        linked.iter().any(|n| n == "OBJC_IVAR_$_Counter.n"),
        "{linked:?}"
    );

    let mut bytes = std::fs::read(&stripped).unwrap();
    let at = section_size_field(&bytes, b"__objc_ivar\0\0\0\0\0");
    let address = u64::from_le_bytes(bytes[at - 8..at].try_into().unwrap());
    let past_the_top = u64::MAX - address + 0x100;
    bytes[at..at + 8].copy_from_slice(&past_the_top.to_le_bytes());
    let claimed = stripped.with_file_name("counter-x86_64-ivar-past-the-top.dylib");
    std::fs::write(&claimed, &bytes).unwrap();
    let h = start().await;
    h.call("open_binary", json!({ "path": claimed })).await;
    assert_eq!(operand_names(&h, "-[Counter increment]").await, linked);
}
