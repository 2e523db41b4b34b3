//! Issue 20, item 5 (first half): `main` of a stripped executable where the file states it —
//! the ELF entry's first argument to `__libc_start_main` and Mach-O's `LC_MAIN` — named through
//! `list_procedures` and `procedure_info` at exactly the address `nm` / `llvm-nm-14` gives
//! `main` in the unstripped twin, with where the file says so as `procedure_info`'s
//! `name_source` (and no raw name: no symbol stores it).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::common::{Harness, start};
use crate::corpus::{self, Opt, Source, Toolchain, Variant, run};

/// The address `nm` (ELF) or `llvm-nm-14` (Mach-O) prints for the defined text symbol `raw`.
fn nm_address(tool: &str, path: &Path, raw: &str) -> String {
    let text = run(tool, &["--defined-only", path.to_str().unwrap()]);
    let found: Vec<u64> = text
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 3 && matches!(f[1], "T" | "t") && f[2] == raw)
                .then(|| u64::from_str_radix(f[0], 16).unwrap())
        })
        .collect();
    assert_eq!(found.len(), 1, "{raw} in {tool} of {path:?}: {text}");
    format!("{:#x}", found[0])
}

/// Every procedure row of the open target, paged through `list_procedures`.
async fn all_procedures(h: &Harness) -> Vec<Value> {
    let mut out = Vec::new();
    let mut offset = 0;
    loop {
        let page = h
            .call("list_procedures", json!({ "offset": offset, "limit": 500 }))
            .await;
        out.extend(page["procedures"].as_array().unwrap().iter().cloned());
        match page["next_offset"].as_u64() {
            Some(next) => offset = next,
            None => return out,
        }
    }
}

/// Opens `path` and asserts rea names exactly one procedure `main`, at `expected`, in both
/// `list_procedures` and `procedure_info`, with `raw` as its raw name and `source` as its name
/// source.
async fn assert_main(path: &Path, expected: &str, raw: Option<&str>, source: Option<&str>) {
    let h = start().await;
    h.call("open_binary", json!({ "path": path })).await;
    let rows = all_procedures(&h).await;
    let named: Vec<&Value> = rows.iter().filter(|r| r["name"] == "main").collect();
    assert_eq!(named.len(), 1, "{path:?}: {named:?}");
    assert_eq!(named[0]["address"], expected, "{path:?}");
    assert_eq!(named[0]["raw_name"].as_str(), raw, "{path:?}");
    let info = h
        .call("procedure_info", json!({ "procedure": "main" }))
        .await;
    assert_eq!(info["procedure"]["address"], expected, "{info}");
    assert_eq!(info["raw_name"].as_str(), raw, "{info}");
    assert_eq!(info["name_source"].as_str(), source, "{info}");
    let by_address = h
        .call("procedure_info", json!({ "procedure": expected }))
        .await;
    assert_eq!(by_address["procedure"]["name"], "main", "{by_address}");
}

const LIBC: &str = "entry:__libc_start_main";

/// A stripped corpus ELF build names `main` at the unstripped twin's `main`.
async fn check_elf(toolchain: Toolchain, opt: Opt) {
    let stripped = corpus::build(Variant::new(Source::Graph, toolchain, opt, true));
    let unstripped = corpus::build(Variant::new(Source::Graph, toolchain, opt, false));
    let expected = nm_address("nm", &unstripped, "main");
    // The stripped file keeps no symbol for it: the name comes from the entry code.
    let left = run("nm", &["-D", "--defined-only", stripped.to_str().unwrap()]);
    assert!(!left.lines().any(|l| l.ends_with(" main")), "{left}");
    assert_main(&stripped, &expected, None, Some(LIBC)).await;
    // With its symbol the name is the symbol's, and no source is recorded.
    assert_main(&unstripped, &expected, None, None).await;
}

#[tokio::test]
async fn stripped_x86_64_elf_o2_names_main_from_libc_start_main_regression_20() {
    check_elf(Toolchain::ElfX64, Opt::O2).await;
}

#[tokio::test]
async fn stripped_x86_64_elf_o0_names_main_from_libc_start_main() {
    check_elf(Toolchain::ElfX64, Opt::O0).await;
}

#[tokio::test]
async fn stripped_aarch64_elf_names_main_from_its_got_slot() {
    // AArch64 PIE `_start` loads `main` from a GOT slot (`adrp x0` + `ldr x0, [x0, #…]`).
    check_elf(Toolchain::ElfA64, Opt::O2).await;
    check_elf(Toolchain::ElfA64, Opt::O0).await;
}

/// An arm64 Mach-O executable of `graph.c` the way the corpus links its dylibs (clang-14 with
/// ld64.lld-14, no SDK), exporting only the Mach-O header so that stripping leaves `main`
/// without any name; and its stripped copy. Built per process under the test's temp directory.
fn macho_executable() -> (PathBuf, PathBuf) {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("rea-stripped-names")
        .join(std::process::id().to_string());
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("graph-macho-arm64");
    let stripped = dir.join("graph-macho-arm64-stripped");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/graph.c");
    run(
        "clang-14",
        &[
            "-O2",
            "-target",
            "arm64-apple-macos11",
            "-fuse-ld=lld",
            "-nostdlib",
            "-Wl,-undefined,dynamic_lookup",
            "-Wl,-exported_symbol,__mh_execute_header",
            "-o",
            out.to_str().unwrap(),
            source.to_str().unwrap(),
        ],
    );
    run(
        "llvm-strip-14",
        &["-o", stripped.to_str().unwrap(), out.to_str().unwrap()],
    );
    (out, stripped)
}

#[tokio::test]
async fn stripped_macho_executable_names_main_from_lc_main() {
    let (unstripped, stripped) = macho_executable();
    let expected = nm_address("llvm-nm-14", &unstripped, "_main");
    // Nothing in the stripped file names it: no symbol, and the exports trie holds only the
    // header.
    let syms = run("llvm-nm-14", &[stripped.to_str().unwrap()]);
    assert!(!syms.contains("_main"), "{syms}");
    let trie = run(
        "llvm-objdump-14",
        &["--macho", "--exports-trie", stripped.to_str().unwrap()],
    );
    assert!(!trie.contains("_main"), "{trie}");
    // LC_MAIN's entry offset is main's offset in __TEXT (which starts at file offset 0).
    let headers = run(
        "llvm-objdump-14",
        &["--macho", "--private-headers", stripped.to_str().unwrap()],
    );
    let entryoff: u64 = headers
        .lines()
        .find_map(|l| l.trim().strip_prefix("entryoff "))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(format!("{:#x}", 0x1_0000_0000 + entryoff), expected);
    assert_main(&stripped, &expected, None, Some("LC_MAIN")).await;
    // `_main` is a local symbol of the unstripped file; the symbol's name wins, stored form
    // and all.
    assert_main(&unstripped, &expected, Some("_main"), None).await;
}
