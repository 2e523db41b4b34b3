//! Issue 20, item 4: operands, `xrefs` and dossiers name the data an instruction lands in. The
//! program is `tests/corpus/datanames.c`; the truth is nm/readelf (symbol addresses and sizes,
//! relocations), GNU objdump's `# 4038 <OPS+0x8>` comments and the file's own bytes.

use std::path::Path;

use serde_json::{Value, json};

use crate::common::{Harness, start};
use crate::corpus::reference::{self, Disassembler};
use crate::corpus::{self, Opt, Source, Toolchain, Variant};

fn hex(text: &str) -> u64 {
    u64::from_str_radix(text.trim().trim_start_matches("0x"), 16)
        .unwrap_or_else(|_| panic!("not hex: {text:?}"))
}

/// `(address, size)` of a defined symbol, as `nm -S` prints it (`nm_tool` for the format).
fn nm_symbol(nm_tool: &str, path: &Path, name: &str) -> (u64, u64) {
    let text = corpus::run(nm_tool, &["-S", path.to_str().unwrap()]);
    text.lines()
        .find_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            match f.as_slice() {
                [a, s, _, n] if *n == name => Some((hex(a), hex(s))),
                [a, _, n] if *n == name => Some((hex(a), 0)),
                _ => None,
            }
        })
        .unwrap_or_else(|| panic!("{name} not in {nm_tool} -S {path:?}"))
}

/// The NUL-terminated string at `address` of an ELF file, read from its bytes through the
/// section table `readelf -SW` prints.
fn elf_c_string(path: &Path, address: u64) -> String {
    let sections = corpus::run("readelf", &["-SW", path.to_str().unwrap()]);
    let bytes = std::fs::read(path).unwrap();
    for line in sections.lines() {
        let Some(rest) = line.split(']').nth(1) else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        if f.len() < 5 || f[1] == "NOBITS" {
            continue;
        }
        let (Ok(addr), Ok(off), Ok(size)) = (
            u64::from_str_radix(f[2], 16),
            u64::from_str_radix(f[3], 16),
            u64::from_str_radix(f[4], 16),
        ) else {
            continue;
        };
        if addr != 0 && address >= addr && address < addr + size {
            let start = (off + address - addr) as usize;
            let len = bytes[start..].iter().position(|&b| b == 0).unwrap();
            return String::from_utf8(bytes[start..start + len].to_vec()).unwrap();
        }
    }
    panic!("{address:#x} is in no section of {path:?}");
}

/// A string as an operand names it: JSON-quoted.
fn quoted(text: &str) -> String {
    serde_json::to_string(text).unwrap()
}

async fn opened(path: &Path) -> Harness {
    let h = start().await;
    h.call("open_binary", json!({ "path": path })).await;
    h
}

/// The procedure's instructions and the end of its extent.
async fn instructions(h: &Harness, procedure: &str) -> Vec<Value> {
    let page = h
        .call("procedure_assembly", json!({ "procedure": procedure }))
        .await;
    assert_eq!(page["next_offset"], Value::Null, "{page}");
    page["instructions"].as_array().unwrap().clone()
}

/// The reference listing's instructions of `function` inside our extent of it (objdump also
/// lists the alignment padding after a sized function).
fn inside<'a>(
    listing: &'a [reference::Insn],
    function: &str,
    ours: &[Value],
) -> Vec<&'a reference::Insn> {
    let last = ours
        .last()
        .map(|i| hex(i["address"].as_str().unwrap()))
        .unwrap();
    let theirs: Vec<_> = listing
        .iter()
        .filter(|i| i.function.as_deref() == Some(function) && i.address <= last)
        .collect();
    assert_eq!(theirs.len(), ours.len(), "{function}");
    theirs
}

fn at(instructions: &[Value], address: u64) -> &Value {
    instructions
        .iter()
        .find(|i| hex(i["address"].as_str().unwrap()) == address)
        .unwrap_or_else(|| panic!("no instruction at {address:#x}"))
}

/// Every RIP-relative operand of four functions of the x86-64 ELF build, exactly as objdump
/// computes it: a sized data symbol under objdump's name (`OPS+0x8`, `CONFIG+0x14`,
/// `stderr@GLIBC_2.2.5`), and a string literal (which objdump calls `_IO_stdin_used+0x8`, the
/// nearest symbol, whose 4 bytes end before it) as the quoted string the file holds there.
#[tokio::test]
async fn x86_64_elf_operands_name_what_objdump_and_the_bytes_say_regression_20() {
    let path = corpus::build(Variant::new(
        Source::DataNames,
        Toolchain::ElfX64,
        Opt::O2,
        false,
    ));
    let h = opened(&path).await;
    let listing = reference::listing(&path, Toolchain::ElfX64, Disassembler::Gnu);
    let mut checked = Vec::new();
    for function in ["read_ops2", "read_flag1", "greet", "complain"] {
        let ours = instructions(&h, function).await;
        for insn in inside(&listing, function, &ours) {
            let mine = at(&ours, insn.address);
            let Some(comment) = insn.comment.as_deref().filter(|c| c.starts_with('#')) else {
                assert!(mine.get("data").is_none(), "{function}: {mine}");
                continue;
            };
            let address = insn.comment_address().unwrap();
            let symbol = comment.split('<').nth(1).unwrap().trim_end_matches('>');
            let base = symbol.split('+').next().unwrap();
            let (start, size) = nm_symbol("nm", &path, base);
            let expected = if address >= start && address < start + size {
                symbol.to_string()
            } else {
                quoted(&elf_c_string(&path, address))
            };
            assert_eq!(mine["data"]["address"], format!("{address:#x}"), "{mine}");
            assert_eq!(mine["data"]["name"], expected, "{function}: {mine}");
            checked.push(expected);
        }
    }
    let (ops, _) = nm_symbol("nm", &path, "OPS");
    assert_eq!(
        checked,
        [
            "OPS+0x8",
            "CONFIG+0x14",
            &quoted("datanames: hello from the string table"),
            "stderr@GLIBC_2.2.5",
            &quoted("datanames: to stderr\n"),
        ],
        "OPS at {ops:#x}"
    );

    // xrefs on the string's address names it and lists the function whose lea loads it.
    let greet = instructions(&h, "greet").await;
    let lea = greet.iter().find(|i| i.get("data").is_some()).unwrap();
    let string = lea["data"]["address"].as_str().unwrap();
    let refs = h.call("xrefs", json!({ "address": string })).await;
    assert_eq!(
        refs["name"],
        quoted("datanames: hello from the string table")
    );
    assert_eq!(refs["code"].as_array().unwrap().len(), 1, "{refs}");
    assert_eq!(refs["code"][0]["procedure_name"], "greet");
    assert_eq!(refs["code"][0]["site"], lea["address"]);
    assert_eq!(refs["code"][0]["kind"], "address");
    // Inside a symbol, xrefs says where: the read of OPS[2] refers to OPS+0x8.
    let refs = h
        .call("xrefs", json!({ "address": format!("{:#x}", ops + 8) }))
        .await;
    assert_eq!(refs["name"], "OPS+0x8");
    assert_eq!(refs["code"][0]["procedure_name"], "read_ops2", "{refs}");

    // The dossier lists the data symbols by their start.
    let dossier = h
        .call("analyze_function", json!({ "procedure": "read_ops2" }))
        .await;
    assert_eq!(
        dossier["data"],
        json!([{ "address": format!("{ops:#x}"), "name": "OPS" }])
    );
    let dossier = h
        .call("analyze_function", json!({ "procedure": "complain" }))
        .await;
    let (stderr, _) = nm_symbol("nm", &path, "stderr@GLIBC_2.2.5");
    assert_eq!(
        dossier["data"],
        json!([{ "address": format!("{stderr:#x}"), "name": "stderr@GLIBC_2.2.5" }])
    );
}

/// AArch64: `adrp` + `ldr` names the symbol at nm's address plus the offset, `adrp` + `add` the
/// string, and the load of `stderr`'s GOT slot (readelf's `R_AARCH64_GLOB_DAT`) its import.
#[tokio::test]
async fn aarch64_elf_adrp_pairs_name_the_symbols_nm_gives_regression_20() {
    let path = corpus::build(Variant::new(
        Source::DataNames,
        Toolchain::ElfA64,
        Opt::O2,
        false,
    ));
    let h = opened(&path).await;
    let listing = reference::listing(&path, Toolchain::ElfA64, Disassembler::Gnu);
    // Addresses the reference listing computes, keyed by the instruction completing them.
    let computed = reference::arm64_addresses(&listing);
    let nm = "aarch64-linux-gnu-nm";
    let (ops, _) = nm_symbol(nm, &path, "OPS");
    let (config, _) = nm_symbol(nm, &path, "CONFIG");
    let relocs = corpus::run("readelf", &["-rW", path.to_str().unwrap()]);
    let slot = relocs
        .lines()
        .find(|l| l.contains("GLOB_DAT") && l.contains("stderr"))
        .map(|l| hex(l.split_whitespace().next().unwrap()))
        .expect("a GLOB_DAT relocation of stderr");
    let mut named = Vec::new();
    for function in ["read_ops2", "read_flag1", "greet", "complain"] {
        let ours = instructions(&h, function).await;
        for insn in inside(&listing, function, &ours) {
            let mine = at(&ours, insn.address);
            match computed.get(&insn.address) {
                Some(&address) => {
                    assert_eq!(mine["data"]["address"], format!("{address:#x}"), "{mine}");
                    named.push((address, mine["data"]["name"].as_str().unwrap().to_owned()));
                }
                None => assert!(mine.get("data").is_none(), "{function}: {mine}"),
            }
        }
    }
    let hello = named[2].0;
    let to_stderr = named[4].0;
    assert_eq!(
        named,
        [
            (ops + 8, "OPS+0x8".to_owned()),
            (config + 0x14, "CONFIG+0x14".to_owned()),
            (hello, quoted("datanames: hello from the string table")),
            (slot, "stderr@GOT".to_owned()),
            (to_stderr, quoted("datanames: to stderr\n")),
        ]
    );
    assert_eq!(
        elf_c_string(&path, hello),
        "datanames: hello from the string table"
    );
    let dossier = h
        .call("analyze_function", json!({ "procedure": "complain" }))
        .await;
    assert_eq!(
        dossier["data"],
        json!([{ "address": format!("{slot:#x}"), "name": "stderr@GOT" }])
    );
}

/// Mach-O arm64 (a dylib, as the corpus builds it): the same reads name `OPS` and `CONFIG`
/// (without Mach-O's underscore) at llvm-nm's addresses, and the load of `_stderr`'s pointer
/// slot (llvm-objdump's bind table) its import, spelled as the import is stored.
#[tokio::test]
async fn macho_arm64_operands_name_symbols_and_slots_regression_20() {
    let path = corpus::build(Variant::new(
        Source::DataNames,
        Toolchain::MachoArm64,
        Opt::O2,
        false,
    ));
    let h = opened(&path).await;
    let listing = reference::listing(&path, Toolchain::MachoArm64, Disassembler::Llvm);
    let computed = reference::arm64_addresses(&listing);
    let (ops, _) = nm_symbol("llvm-nm-14", &path, "_OPS");
    let (config, _) = nm_symbol("llvm-nm-14", &path, "_CONFIG");
    let binds = corpus::run(
        "llvm-objdump-14",
        &["--macho", "--bind", path.to_str().unwrap()],
    );
    let slot = binds
        .lines()
        .find(|l| l.split_whitespace().last() == Some("_stderr"))
        .map(|l| hex(l.split_whitespace().nth(2).unwrap()))
        .expect("a bind of _stderr");
    let mut named = Vec::new();
    for function in ["_read_ops2", "_read_flag1", "_greet", "_complain"] {
        let ours = instructions(&h, &function[1..]).await;
        for insn in inside(&listing, function, &ours) {
            let mine = at(&ours, insn.address);
            if let Some(&address) = computed.get(&insn.address) {
                assert_eq!(mine["data"]["address"], format!("{address:#x}"), "{mine}");
                named.push((address, mine["data"]["name"].as_str().unwrap().to_owned()));
            }
        }
    }
    let hello = named.get(2).map_or(0, |n| n.0);
    let to_stderr = named.get(4).map_or(0, |n| n.0);
    assert_eq!(
        named,
        [
            (ops + 8, "OPS+0x8".to_owned()),
            (config + 0x14, "CONFIG+0x14".to_owned()),
            (hello, quoted("datanames: hello from the string table")),
            (slot, "_stderr@GOT".to_owned()),
            (to_stderr, quoted("datanames: to stderr\n")),
        ]
    );
}

/// A non-PIE x86-64 executable passes the string's address as an immediate
/// (`mov edi, 0x402008`): it is named, the small immediates beside it are not.
#[tokio::test]
async fn non_pie_immediates_name_the_string_regression_20() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("datanames-nopie");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/datanames.c");
    corpus::run(
        "gcc",
        &[
            "-O2",
            "-no-pie",
            "-fno-pie",
            "-o",
            path.to_str().unwrap(),
            source.to_str().unwrap(),
        ],
    );
    let h = opened(&path).await;
    let listing = reference::listing(&path, Toolchain::ElfX64, Disassembler::Gnu);
    let ours = instructions(&h, "complain").await;
    let mut named = Vec::new();
    for insn in listing
        .iter()
        .filter(|i| i.function.as_deref() == Some("complain"))
    {
        let mine = at(&ours, insn.address);
        if insn.mnemonic == "mov" && insn.operands.starts_with("edi,0x") {
            let address = hex(insn.operands.split(',').nth(1).unwrap());
            assert_eq!(mine["data"]["address"], format!("{address:#x}"));
            named.push(mine["data"]["name"].clone());
            assert_eq!(elf_c_string(&path, address), "datanames: to stderr\n");
        } else if insn.mnemonic == "mov" && insn.operands.contains(",0x") {
            assert!(mine.get("data").is_none(), "{mine}");
        }
    }
    assert_eq!(named, [json!(quoted("datanames: to stderr\n"))]);
}

/// In a shared library the reads go through GOT slots bound to the library's own symbols
/// (readelf's `R_X86_64_GLOB_DAT ... OPS`): the slot is named `OPS@GOT`, where objdump prints
/// the nearest symbol below it (`<OPS@@Base-0x98>`).
#[tokio::test]
async fn shared_library_got_slots_name_their_symbol_regression_20() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("libdatanames.so");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/datanames.c");
    corpus::run(
        "gcc",
        &[
            "-O2",
            "-fPIC",
            "-shared",
            "-o",
            path.to_str().unwrap(),
            source.to_str().unwrap(),
        ],
    );
    let relocs = corpus::run("readelf", &["-rW", path.to_str().unwrap()]);
    let slot_of = |symbol: &str| {
        relocs
            .lines()
            .find(|l| l.contains("GLOB_DAT") && l.split_whitespace().nth(4) == Some(symbol))
            .map(|l| hex(l.split_whitespace().next().unwrap()))
            .unwrap_or_else(|| panic!("no GLOB_DAT of {symbol}"))
    };
    let h = opened(&path).await;
    for (function, symbol) in [("read_ops2", "OPS"), ("read_flag1", "CONFIG")] {
        let named: Vec<Value> = instructions(&h, function)
            .await
            .into_iter()
            .filter_map(|i| i.get("data").cloned())
            .collect();
        assert_eq!(
            named,
            [json!({
                "address": format!("{:#x}", slot_of(symbol)),
                "name": format!("{symbol}@GOT"),
            })],
            "{function}"
        );
    }
}

/// `(addr, size, offset)` of a Mach-O section, from `llvm-objdump-14 --macho --private-headers`.
fn macho_section(path: &Path, name: &str) -> (u64, u64, u64) {
    let headers = corpus::run(
        "llvm-objdump-14",
        &["--macho", "--private-headers", path.to_str().unwrap()],
    );
    let mut lines = headers.lines().map(str::trim);
    while let Some(line) = lines.next() {
        if line == format!("sectname {name}") {
            let mut field = |key: &str| {
                let line = lines.find(|l| l.starts_with(key)).unwrap();
                let value = line[key.len()..].trim();
                value.strip_prefix("0x").map_or_else(
                    || value.parse().unwrap(),
                    |h| u64::from_str_radix(h, 16).unwrap(),
                )
            };
            let addr = field("addr");
            let size = field("size");
            let offset = field("offset");
            return (addr, size, offset);
        }
    }
    panic!("no section {name} in {path:?}");
}

/// 7za (mac/x64) calls `getpass("")`: the empty string in `__cstring` is too short for the
/// string inventory, and the nearest earlier symbol (llvm-objdump says `dyld_stub_binder+…`,
/// the lookup said `typeinfo name for IHasher+0x7f1b9`) is no name for it. Inside a section of
/// C strings the operand names the string the bytes hold, here `""`.
#[tokio::test]
async fn an_empty_c_string_is_named_as_itself_not_as_a_far_symbol_regression_20() {
    let path = crate::common::fixture("7zip-bin-5.2.0/package/mac/x64/7za");
    let h = opened(&path).await;
    let page = h
        .call(
            "procedure_assembly",
            json!({ "procedure": "GetPassword(CStdOutStream*, bool)", "limit": 200 }),
        )
        .await;
    assert_eq!(page["total_instructions"], 87, "{page}");
    let ours = page["instructions"].as_array().unwrap();
    let (addr, size, offset) = macho_section(&path, "__cstring");
    let bytes = std::fs::read(&path).unwrap();
    let named: Vec<(u64, String)> = ours
        .iter()
        .filter(|i| !i["data"].is_null())
        .map(|i| {
            (
                hex(i["data"]["address"].as_str().unwrap()),
                i["data"]["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let mut strings = 0;
    for (address, name) in &named {
        if !(addr..addr + size).contains(address) {
            continue;
        }
        let start = (offset + address - addr) as usize;
        let len = bytes[start..].iter().position(|&b| b == 0).unwrap();
        let text = std::str::from_utf8(&bytes[start..start + len]).unwrap();
        assert_eq!(name, &quoted(text), "{address:#x}");
        strings += 1;
    }
    // The two prompts, two `getpass("")` and the thrown message.
    assert_eq!(strings, 5, "{named:?}");
    assert_eq!(
        named.iter().filter(|(_, n)| n == "\"\"").count(),
        2,
        "{named:?}"
    );
}

/// In a PIE nothing relocates an immediate, so `mov edi, 0x2005` is a number even though
/// 0x2005 lies in the image's `.rodata` (readelf, inside the `"%d\n"` at 0x2004): `xrefs` listed it as a reference to that
/// address; it now lists none, like the operand names.
#[tokio::test]
async fn pie_immediates_are_not_references_regression_20() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("constant.c");
    std::fs::write(
        &source,
        "#include <stdio.h>\n\
         __attribute__((noinline)) int take(int x) { return x * 3; }\n\
         __attribute__((noinline)) int constant(void) { return take(0x2005); }\n\
         int main(void) { printf(\"%d\\n\", constant()); return 0; }\n",
    )
    .unwrap();
    let path = dir.path().join("constant");
    corpus::run(
        "gcc",
        &[
            "-O1",
            "-fPIE",
            "-pie",
            "-o",
            path.to_str().unwrap(),
            source.to_str().unwrap(),
        ],
    );
    // The precondition that made the old rule list it: 0x2005 is inside a section with bytes.
    let sections = corpus::run("readelf", &["-SW", path.to_str().unwrap()]);
    let inside = sections.lines().any(|line| {
        let Some(rest) = line.split(']').nth(1) else {
            return false;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        let (Some(addr), Some(size)) = (f.get(2), f.get(4)) else {
            return false;
        };
        let (Ok(addr), Ok(size)) = (u64::from_str_radix(addr, 16), u64::from_str_radix(size, 16))
        else {
            return false;
        };
        addr != 0 && (addr..addr + size).contains(&0x2005)
    });
    assert!(inside, "{sections}");
    let listing = reference::listing(&path, Toolchain::ElfX64, Disassembler::Gnu);
    assert!(
        listing
            .iter()
            .any(|i| i.function.as_deref() == Some("constant") && i.operands == "edi,0x2005"),
        "objdump shows no `mov edi,0x2005` in constant"
    );
    let h = opened(&path).await;
    let refs = h.call("xrefs", json!({ "address": "0x2005" })).await;
    assert_eq!(refs["code"], json!([]), "{refs}");
    let ours = instructions(&h, "constant").await;
    assert!(ours.iter().all(|i| i.get("data").is_none()), "{ours:?}");
}
