//! Regression tests for the wrong results of issue 15 that the differential suite found in the
//! native and deep providers, each on a corpus program whose truth is its source.

use rea::providers::native::{Image, StringQuery};

use crate::corpus::{self, Opt, Source, Toolchain, Variant};
use crate::differential::{by_name, image};

fn graph(toolchain: Toolchain, opt: Opt, stripped: bool) -> Image {
    image(&corpus::build(Variant::new(
        Source::Graph,
        toolchain,
        opt,
        stripped,
    )))
}

/// The one match of `query` that starts with `text`, by address.
fn match_of(image: &Image, query: &str) -> u64 {
    let found = image.strings(&StringQuery::literal(query)).unwrap();
    let hits: Vec<u64> = found.matches.iter().map(|m| m.address).collect();
    assert_eq!(hits.len(), 1, "{query:?}: {hits:x?}");
    hits[0]
}

/// Names of the procedures whose code refers to `address`.
fn referrers(image: &Image, address: u64) -> Vec<String> {
    let mut names: Vec<String> = image
        .xrefs(address)
        .unwrap()
        .code
        .iter()
        .filter_map(|c| c.procedure_name.clone())
        .collect();
    names.sort();
    names.dedup();
    names
}

#[test]
fn packed_literal_match_address_is_exact_regression_15() {
    // `PACKED` holds four literals back to back without NULs; each function uses one slice.
    for toolchain in [Toolchain::ElfX64, Toolchain::MachoArm64, Toolchain::PeX64] {
        let image = graph(toolchain, Opt::O2, false);
        for (query, user) in [("beryllium", "say_beryllium"), ("cobalt", "say_cobalt")] {
            let at = match_of(&image, query);
            assert_eq!(
                image.bytes_at(at, query.len() as u64),
                Some(query.as_bytes()),
                "{toolchain:?} {query}"
            );
            let users = referrers(&image, at);
            assert!(
                users.iter().any(|n| n.trim_start_matches('_') == user),
                "{toolchain:?}: xrefs of {query:?} at {at:#x}: {users:?}"
            );
        }
    }
}

#[test]
fn leading_control_characters_are_part_of_the_string_regression_15() {
    for toolchain in [Toolchain::ElfX64, Toolchain::ElfA64, Toolchain::PeX64] {
        let image = graph(toolchain, Opt::O0, false);
        for (query, user) in [
            ("\nEnter password", "say_prompt"),
            ("\rProgress 100%", "say_carriage"),
            ("\tindented detail", "say_tabbed"),
        ] {
            let at = match_of(&image, query);
            assert_eq!(
                image.bytes_at(at, 1),
                Some(&query.as_bytes()[..1]),
                "{toolchain:?}: {query:?} at {at:#x}"
            );
            assert_eq!(referrers(&image, at), [user], "{toolchain:?} {query:?}");
        }
    }
}

#[test]
fn strings_shorter_than_four_characters_are_found_when_asked_regression_15() {
    let image = graph(Toolchain::ElfX64, Opt::O2, false);
    let say_short = by_name(&image, "say_short").address;
    for query in ["OK", "ab"] {
        let found = image.strings(&StringQuery::literal(query)).unwrap();
        // The two-character literal itself, referred to by say_short; longer strings that
        // merely contain the letters are matches too, at their own addresses.
        let exact = found
            .matches
            .iter()
            .find(|m| m.text == query)
            .unwrap_or_else(|| panic!("{query:?} not found: {:?}", found.matches));
        let x = image.xrefs(exact.address).unwrap();
        assert!(
            x.code.iter().any(|c| c.procedure == say_short),
            "{query:?} at {:#x}: {:?}",
            exact.address,
            x.code
        );
    }
}

fn ifunc_library(toolchain: Toolchain, stripped: bool) -> Image {
    image(&corpus::build(Variant::new(
        Source::Ifunc,
        toolchain,
        Opt::O2,
        stripped,
    )))
}

/// `readelf --dyn-syms -W` rows of defined functions: (address, type, name with version).
fn dynamic_functions(path: &str) -> Vec<(u64, String, String)> {
    corpus::run("readelf", &["--dyn-syms", "-W", path])
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 8 && matches!(f[3], "FUNC" | "IFUNC") && f[6] != "UND").then(|| {
                (
                    u64::from_str_radix(f[1], 16).unwrap(),
                    f[3].to_string(),
                    f[7].to_string(),
                )
            })
        })
        .collect()
}

#[test]
fn ifunc_alias_and_version_names_regression_15() {
    for toolchain in [Toolchain::ElfX64, Toolchain::ElfA64] {
        for stripped in [false, true] {
            let image = ifunc_library(toolchain, stripped);
            let path = corpus::build(Variant::new(Source::Ifunc, toolchain, Opt::O2, stripped));
            let rows = dynamic_functions(path.to_str().unwrap());
            let at = |name: &str| rows.iter().find(|r| r.2 == name).unwrap().0;
            // The IFUNC symbol names its resolver's address.
            let compute = image
                .procedure_starting_at(at("compute@@VERS_1.0"))
                .unwrap();
            assert_eq!(compute.name.as_deref(), Some("compute"), "{toolchain:?}");
            assert_eq!(compute.raw_name.as_deref(), Some("compute@@VERS_1.0"));
            // The default version is the plain name, the compat version is named with it.
            let default = image
                .procedure_starting_at(at("measure@@VERS_2.0"))
                .unwrap();
            assert_eq!(default.name.as_deref(), Some("measure"));
            let compat = image.procedure_starting_at(at("measure@VERS_1.0")).unwrap();
            assert_eq!(compat.name.as_deref(), Some("measure@VERS_1.0"));
            assert_eq!(by_name(&image, "measure").address, default.address);
            // Three global names of one function: one primary name, two aliases.
            let area = image
                .procedure_starting_at(at("area_total@@VERS_1.0"))
                .unwrap();
            let mut names = crate::differential::names_of(area);
            names.sort();
            assert_eq!(names, ["__area_internal", "area_alias", "area_total"]);
        }
    }
}

#[test]
fn libc_ifuncs_aliases_and_default_versions_regression_15() {
    let libc = "/usr/lib/x86_64-linux-gnu/libc.so.6";
    let image = image(std::path::Path::new(libc));
    let rows = dynamic_functions(libc);
    let ifuncs: Vec<&(u64, String, String)> = rows.iter().filter(|r| r.1 == "IFUNC").collect();
    assert!(ifuncs.len() > 40, "{}", ifuncs.len());
    // Every function of the dynamic symbol table answers to its name at its address: the
    // IFUNCs (strlen, strcpy, …), the aliases (__libc_malloc, _IO_printf) and the versions.
    for (address, _, raw) in &rows {
        let shown = match raw.split_once("@@") {
            Some((base, _)) => base.to_string(),
            None => raw.clone(),
        };
        let p = image
            .procedure_starting_at(*address)
            .unwrap_or_else(|| panic!("{raw} at {address:#x}: no procedure"));
        assert!(
            crate::differential::names_of(p).contains(&shown),
            "{raw} at {address:#x}: {p:?}"
        );
    }
    for name in ["strlen", "strcpy"] {
        assert!(by_name(&image, name).address > 0);
    }
    let malloc = by_name(&image, "malloc");
    assert!(malloc.aliases.iter().any(|a| a == "__libc_malloc"));
    let printf = by_name(&image, "printf");
    assert!(printf.aliases.iter().any(|a| a == "_IO_printf"));
    // `memcpy` is the default version, memcpy@@GLIBC_2.14; the compat one keeps its version.
    let default = rows.iter().find(|r| r.2 == "memcpy@@GLIBC_2.14").unwrap().0;
    let compat = rows.iter().find(|r| r.2 == "memcpy@GLIBC_2.2.5").unwrap().0;
    assert_eq!(by_name(&image, "memcpy").address, default);
    assert_eq!(by_name(&image, "memcpy@GLIBC_2.2.5").address, compat);
    assert_eq!(
        by_name(&image, "memcpy").raw_name.as_deref(),
        Some("memcpy@@GLIBC_2.14")
    );
}

#[test]
fn plt_stubs_are_stubs_not_callers_or_one_pseudo_procedure_regression_15() {
    for stripped in [false, true] {
        let image = graph(Toolchain::ElfX64, Opt::O2, stripped);
        let plt = image.sections().iter().find(|s| s.name == ".plt").unwrap();
        // No procedure spans the PLT: every procedure in it is one named stub of one entry.
        for p in image.procedures() {
            if p.address >= plt.address && p.address < plt.address + plt.size {
                assert!(
                    p.name.as_deref().is_some_and(|n| n.ends_with("@plt")),
                    "{p:?}"
                );
                assert_eq!(p.size, Some(16), "{p:?}");
            }
        }
        let puts = image
            .procedures()
            .iter()
            .find(|p| p.name.as_deref() == Some("puts@plt"))
            .unwrap();
        let callers = image.callers(puts.address).unwrap().callers;
        // Only main calls puts; the stub's own jump through its GOT slot is not a caller.
        assert_eq!(callers.len(), 1, "{callers:?}");
        assert_eq!(callers[0].via, "call");
        assert!(
            image
                .procedure_starting_at(callers[0].procedure)
                .unwrap()
                .address
                != puts.address
        );
    }
}

#[test]
fn data_xrefs_are_program_pointers_named_by_their_symbol_regression_15() {
    for toolchain in [Toolchain::ElfX64, Toolchain::ElfA64] {
        let image = graph(toolchain, Opt::O2, false);
        let ops = corpus::run(
            "llvm-nm-14",
            &[
                "--defined-only",
                corpus::build(Variant::new(Source::Graph, toolchain, Opt::O2, false))
                    .to_str()
                    .unwrap(),
            ],
        )
        .lines()
        .find_map(|l| {
            l.strip_suffix(" R OPS")
                .or_else(|| l.strip_suffix(" r OPS"))
                .or_else(|| l.strip_suffix(" D OPS"))
        })
        .map(|a| u64::from_str_radix(a, 16).unwrap())
        .expect("OPS in llvm-nm");
        for (i, leaf) in ["leaf_add", "leaf_sub", "leaf_mul", "leaf_xor"]
            .iter()
            .enumerate()
        {
            let x = image.xrefs(by_name(&image, leaf).address).unwrap();
            let at: Vec<u64> = x.data.iter().map(|d| d.at).collect();
            // One pointer, in OPS: not the .rela.dyn addend that relocates it.
            assert_eq!(
                at,
                [ops + 8 * i as u64],
                "{toolchain:?} {leaf}: {:?}",
                x.data
            );
            assert_eq!(x.data[0].symbol.as_deref(), Some("OPS"));
            assert_eq!(x.data[0].symbol_offset, Some(8 * i as u64));
        }
    }
}

#[test]
fn macho_procedures_have_sizes_and_c_names_regression_15() {
    for toolchain in [Toolchain::MachoArm64, Toolchain::MachoX64] {
        let image = graph(toolchain, Opt::O2, false);
        let path = corpus::build(Variant::new(Source::Graph, toolchain, Opt::O2, false));
        let starts: Vec<(u64, String)> = corpus::run(
            "llvm-nm-14",
            &["-n", "--defined-only", path.to_str().unwrap()],
        )
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 3 && matches!(f[1], "T" | "t"))
                .then(|| (u64::from_str_radix(f[0], 16).unwrap(), f[2].to_string()))
        })
        .collect();
        for pair in starts.windows(2) {
            let ((start, raw), (next, _)) = (&pair[0], &pair[1]);
            let p = image.procedure_starting_at(*start).unwrap();
            assert_eq!(p.name.as_deref(), raw.strip_prefix('_'), "{toolchain:?}");
            assert_eq!(p.raw_name.as_deref(), Some(raw.as_str()));
            assert_eq!(p.size, Some(next - start), "{toolchain:?} {raw}");
        }
        let leaf = by_name(&image, "leaf_add");
        assert_eq!(leaf.raw_name.as_deref(), Some("_leaf_add"));
    }
}

#[test]
fn llvm_objdump_listings_parse_on_elf_pe_and_thin_macho_regression_15() {
    use rea::providers::deep;
    for toolchain in [
        Toolchain::ElfX64,
        Toolchain::PeX64,
        Toolchain::MachoArm64,
        Toolchain::MachoX64,
    ] {
        let path = corpus::build(Variant::new(Source::Graph, toolchain, Opt::O2, false));
        let target = rea::providers::native::admit(&path).unwrap();
        let doc = &target.documents[0];
        let llvm = deep::candidates(target.format.as_str(), None)
            .into_iter()
            .find(|c| c.id == "llvm-objdump-14")
            .expect("llvm-objdump-14 (installed by .ci/run)");
        let image = image(&path);
        let classify = by_name(&image, "classify");
        let end = classify.address + classify.size.unwrap();
        let native = image.assembly(classify.address, 0, 2000).unwrap();
        let theirs = deep::run_assembly(&llvm, doc, classify.address, end)
            .unwrap()
            .result;
        let ours: Vec<(u64, String)> = native
            .instructions
            .iter()
            .map(|i| (i.address, i.bytes.clone()))
            .collect();
        let listed: Vec<(u64, String)> = theirs
            .iter()
            .map(|i| (i.address, i.bytes.clone()))
            .collect();
        assert_eq!(listed, ours, "{toolchain:?}");
        // Every text is a mnemonic and its operands (or llvm's `<unknown>` for the jump table
        // clang leaves inside x86-64 Mach-O code), never a stray field.
        for i in theirs.iter().filter(|i| i.text != "<unknown>") {
            let mnemonic = i.text.split(' ').next().unwrap();
            assert!(
                mnemonic
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.'),
                "{toolchain:?}: {i:?}"
            );
        }
    }
}

/// The corpus program opened through the MCP surface, with the native image beside it.
async fn opened(toolchain: Toolchain) -> (crate::common::Harness, Image) {
    let path = corpus::build(Variant::new(Source::Graph, toolchain, Opt::O2, false));
    let h = crate::common::start().await;
    h.call("open_binary", serde_json::json!({ "path": path }))
        .await;
    (h, image(&path))
}

#[tokio::test]
async fn deep_assembly_is_paged_through_mcp_regression_15() {
    for toolchain in [Toolchain::ElfX64, Toolchain::MachoArm64] {
        let (h, image) = opened(toolchain).await;
        let classify = by_name(&image, "classify");
        let native = image.assembly(classify.address, 0, 2000).unwrap();
        let total = native.total_instructions;
        let mut addresses = Vec::new();
        let mut offset = 0;
        loop {
            let page = h
                .call(
                    "procedure_assembly",
                    serde_json::json!({
                        "procedure": "classify",
                        "provider_id": "llvm-objdump-14",
                        "offset": offset,
                        "limit": 7,
                    }),
                )
                .await;
            assert_eq!(page["total_instructions"], total, "{toolchain:?}");
            assert_eq!(page["offset"], offset);
            let shown = page["instructions"].as_array().unwrap();
            assert!(shown.len() <= 7);
            addresses.extend(
                shown
                    .iter()
                    .map(|i| i["address"].as_str().unwrap().to_string()),
            );
            match page["next_offset"].as_u64() {
                Some(next) => {
                    assert_eq!(next as usize, offset + 7);
                    offset = next as usize;
                }
                None => break,
            }
        }
        let ours: Vec<String> = native
            .instructions
            .iter()
            .map(|i| format!("{:#x}", i.address))
            .collect();
        assert_eq!(addresses, ours, "{toolchain:?}: pages tile the listing");
    }
}

#[tokio::test]
async fn search_strings_then_xrefs_finds_the_user_through_mcp_regression_15() {
    let (h, image) = opened(Toolchain::ElfX64).await;
    for (query, user) in [
        ("beryllium", "say_beryllium"),
        ("\nEnter password", "say_prompt"),
    ] {
        let found = h
            .call("search_strings", serde_json::json!({ "pattern": query }))
            .await;
        let matches = found["matches"].as_array().unwrap();
        assert_eq!(matches.len(), 1, "{query:?}: {matches:?}");
        let address = matches[0]["address"].as_str().unwrap();
        let x = h
            .call("xrefs", serde_json::json!({ "address": address }))
            .await;
        let users: Vec<&str> = x["code"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|c| c["procedure_name"].as_str())
            .collect();
        assert_eq!(users, [user], "{query:?} at {address}");
        assert_eq!(
            image.bytes_at(
                u64::from_str_radix(address.trim_start_matches("0x"), 16).unwrap(),
                query.len() as u64
            ),
            Some(query.as_bytes())
        );
    }
    // A short literal: found when asked for, and the result says how short strings may be.
    let found = h
        .call("search_strings", serde_json::json!({ "pattern": "OK" }))
        .await;
    assert_eq!(found["min_length"], 2);
    let all = h
        .call("search_strings", serde_json::json!({ "pattern": "" }))
        .await;
    assert_eq!(all["min_length"], 4);
}

#[test]
fn macho_jump_tables_are_data_not_instructions_regression_15() {
    // clang leaves x86-64 jump tables inside __text and says so in LC_DATA_IN_CODE.
    let path = corpus::build(Variant::new(
        Source::Graph,
        Toolchain::MachoX64,
        Opt::O0,
        false,
    ));
    let table = corpus::run(
        "llvm-objdump-14",
        &["--macho", "--data-in-code", path.to_str().unwrap()],
    );
    let (offset, length) = table
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 3 && f[2] == "JUMP_TABLE32").then(|| {
                (
                    u64::from_str_radix(f[0].trim_start_matches("0x"), 16).unwrap(),
                    f[1].parse::<u64>().unwrap(),
                )
            })
        })
        .expect("a jump table in LC_DATA_IN_CODE");
    let image = image(&path);
    // The dylib's __TEXT starts at file offset 0 and address 0.
    let (start, end) = (offset, offset + length);
    let classify = by_name(&image, "classify");
    let listing = image.assembly(classify.address, 0, 2000).unwrap();
    let data: Vec<(u64, &str)> = listing
        .instructions
        .iter()
        .filter(|i| i.address + (i.bytes.len() / 2) as u64 > start && i.address < end)
        .map(|i| (i.address, i.text.as_str()))
        .collect();
    assert_eq!(data.len() as u64, length / 4, "{data:?}");
    for (i, (address, text)) in data.iter().enumerate() {
        assert_eq!(*address, start + 4 * i as u64);
        assert!(text.starts_with(".long 0x"), "{text}");
    }
    // The code after the table decodes from its real start.
    let after = listing
        .instructions
        .iter()
        .find(|i| i.address >= end)
        .unwrap();
    assert_eq!(after.address, end);
}

#[test]
fn deep_procedures_read_pe_symbol_tables_regression_15() {
    use rea::providers::deep;
    let path = corpus::build(Variant::new(
        Source::Graph,
        Toolchain::PeX64,
        Opt::O2,
        false,
    ));
    let target = rea::providers::native::admit(&path).unwrap();
    let nm = corpus::run(
        "x86_64-w64-mingw32-nm",
        &["--defined-only", path.to_str().unwrap()],
    );
    let leaf_add = nm
        .lines()
        .find_map(|l| l.strip_suffix(" T leaf_add"))
        .map(|a| u64::from_str_radix(a, 16).unwrap())
        .unwrap();
    for id in ["objdump", "llvm-objdump-14"] {
        let c = deep::candidates("pe", None)
            .into_iter()
            .find(|c| c.id == id)
            .unwrap();
        let procs = deep::run_procedures(
            &c,
            &target.documents[0],
            std::time::Duration::from_secs(60),
            64 << 20,
        )
        .unwrap()
        .result;
        let found = procs.iter().find(|p| p.name.as_deref() == Some("leaf_add"));
        assert_eq!(
            found.map(|p| p.address),
            Some(leaf_add),
            "{id}: {} procedures",
            procs.len()
        );
    }
}

#[test]
fn pe_import_thunks_name_the_import_in_a_stripped_file_regression_15() {
    // mingw-w64 calls `puts` through a thunk, `puts: jmp [__imp_puts]`; stripped, nothing but
    // the thunk's slot says what it calls.
    let image = graph(Toolchain::PeX64, Opt::O2, true);
    let unstripped = graph(Toolchain::PeX64, Opt::O2, false);
    let main = by_name(&unstripped, "main").address;
    let edges = image.callees(main).unwrap().callees;
    let puts = edges
        .iter()
        .find(|e| e.name.as_deref() == Some("puts"))
        .unwrap_or_else(|| panic!("{edges:?}"));
    assert_eq!(puts.kind, "import");
    assert_eq!(puts.via, "call");
    let callers = image.callers(puts.target).unwrap().callers;
    assert!(callers.iter().any(|c| c.procedure == main), "{callers:?}");
}
