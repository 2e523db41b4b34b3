//! Issue 27, items 1 and 4: procedures found by following code where no table lists them.
//! `graph.c` built without unwind tables (`-fno-asynchronous-unwind-tables -fno-unwind-tables`),
//! stripped and without `.eh_frame`, for x86-64 and AArch64 ELF and x86-64 PE: every function
//! `main` reaches by direct calls in the unstripped twin (`objdump -d` and its symbols are the
//! truth) is a procedure, none is invented, and each says how it was found. A stripped ELF keeps
//! the procedures its init/fini arrays and `DT_INIT`/`DT_FINI` point at; a stripped PE names
//! `main` from mingw-w64's `__tmainCRTStartup` and lists its import thunks as `Name@thunk`. A
//! stripped Mach-O keeps the constructor only `__mod_init_func` points at. A table of labels
//! (`labels.c`, computed `goto`) is code of its procedure, not starts.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::common::{Harness, fixture, start};
use crate::corpus::{self, Opt, Source, Toolchain, Variant, run};

/// The flags that leave no unwind table in the objects the compiler writes.
const NO_UNWIND: [&str; 3] = [
    "-O2",
    "-fno-asynchronous-unwind-tables",
    "-fno-unwind-tables",
];

/// `source` (a C file of `tests/corpus`) built without unwind tables into `dir`:
/// `(unstripped, stripped)`, the stripped one also without `.eh_frame`/`.eh_frame_hdr` (the C
/// runtime's own objects bring theirs).
pub(crate) fn build_no_unwind(
    toolchain: Toolchain,
    dir: &Path,
    source: &str,
) -> (PathBuf, PathBuf) {
    let stem = source.trim_end_matches(".c");
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus")
        .join(source);
    let (cc, strip, objcopy, ext) = match toolchain {
        Toolchain::ElfX64 => ("gcc", "strip", "objcopy", ""),
        Toolchain::ElfA64 => (
            "aarch64-linux-gnu-gcc",
            "aarch64-linux-gnu-strip",
            "aarch64-linux-gnu-objcopy",
            "",
        ),
        Toolchain::PeX64 => (
            "x86_64-w64-mingw32-gcc",
            "x86_64-w64-mingw32-strip",
            "x86_64-w64-mingw32-objcopy",
            ".exe",
        ),
        Toolchain::PeX86 => (
            "i686-w64-mingw32-gcc",
            "i686-w64-mingw32-strip",
            "i686-w64-mingw32-objcopy",
            ".exe",
        ),
        other => panic!("no build without unwind tables for {other:?}"),
    };
    let unstripped = dir.join(format!("{stem}{ext}"));
    let stripped = dir.join(format!("{stem}-stripped{ext}"));
    let mut args: Vec<&str> = NO_UNWIND.to_vec();
    args.extend(["-o", unstripped.to_str().unwrap(), source.to_str().unwrap()]);
    run(cc, &args);
    if toolchain.is_elf() {
        let bare = dir.join(format!("{stem}-bare{ext}"));
        lua::strip_unwind(strip, objcopy, &unstripped, &bare, &stripped);
    } else {
        run(
            strip,
            &[
                "-o",
                stripped.to_str().unwrap(),
                unstripped.to_str().unwrap(),
            ],
        );
    }
    (unstripped, stripped)
}

fn objdump(toolchain: Toolchain) -> &'static str {
    match toolchain {
        Toolchain::ElfA64 => "aarch64-linux-gnu-objdump",
        _ => "objdump",
    }
}

/// Functions of the unstripped build by address (`objdump -d` headers, without the underscore
/// 32-bit Windows puts before a C name) and the direct call edges between them.
fn call_graph(toolchain: Toolchain, path: &Path) -> (BTreeMap<u64, String>, Vec<(u64, u64)>) {
    let text = run(objdump(toolchain), &["-d", path.to_str().unwrap()]);
    let mut functions = BTreeMap::new();
    let mut edges = Vec::new();
    let mut current = None;
    for line in text.lines() {
        if let Some(head) = line.strip_suffix(">:") {
            let (address, name) = head.split_once(" <").unwrap();
            let address = u64::from_str_radix(address, 16).unwrap();
            let name = match toolchain {
                Toolchain::PeX86 => name.strip_prefix('_').unwrap_or(name),
                _ => name,
            };
            functions.insert(address, name.to_string());
            current = Some(address);
            continue;
        }
        let fields: Vec<&str> = line.split('\t').collect();
        if fields.len() >= 3
            && let Some(current) = current
        {
            // x86: `call   11d0 <leaf_add>`; AArch64: `bl` then `8a0 <leaf_add>`.
            let op = fields[2].trim();
            let rest = match op.split_whitespace().next() {
                Some("call") => op.strip_prefix("call").map(str::trim),
                Some("bl") if fields.len() > 3 => Some(fields[3].trim()),
                _ => None,
            };
            if let Some(rest) = rest
                && let Ok(target) =
                    u64::from_str_radix(rest.split_whitespace().next().unwrap_or(""), 16)
            {
                edges.push((current, target));
            }
        }
    }
    (functions, edges)
}

/// The names of functions `main` reaches by direct calls (`main` itself included), by address,
/// leaving out import stubs and thunks (listed from the import tables, not found by calls).
fn reached_from_main(toolchain: Toolchain, unstripped: &Path) -> BTreeMap<u64, String> {
    let (functions, edges) = call_graph(toolchain, unstripped);
    let main = *functions.iter().find(|(_, n)| *n == "main").unwrap().0;
    let mut reached = BTreeSet::from([main]);
    let mut queue = vec![main];
    while let Some(from) = queue.pop() {
        for &(a, b) in &edges {
            if a == from && functions.contains_key(&b) && reached.insert(b) {
                queue.push(b);
            }
        }
    }
    reached
        .into_iter()
        .map(|a| (a, functions[&a].clone()))
        .filter(|(_, n)| !n.contains("@plt") && !n.starts_with("__imp_"))
        .collect()
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

fn address(row: &Value) -> u64 {
    u64::from_str_radix(
        row["address"].as_str().unwrap().trim_start_matches("0x"),
        16,
    )
    .unwrap()
}

pub(crate) async fn addresses_of(path: &Path) -> BTreeSet<u64> {
    let h = start().await;
    h.call("open_binary", json!({ "path": path })).await;
    all_procedures(&h).await.iter().map(address).collect()
}

/// The stripped build without unwind tables lists every function `main` reaches by direct
/// calls, and only starts its unstripped twin lists too; a leaf says it was found by a call.
async fn check_discovery(toolchain: Toolchain) {
    let dir = tempfile::tempdir().unwrap();
    let (unstripped, stripped) = build_no_unwind(toolchain, dir.path(), "graph.c");
    let reached = reached_from_main(toolchain, &unstripped);
    // main, the seven say_* functions, sink, apply, classify, the chains, fib, the leaves.
    assert!(reached.len() >= 17, "{toolchain:?}: {reached:?}");
    let listed = addresses_of(&stripped).await;
    let missing: Vec<&String> = reached
        .iter()
        .filter(|(a, _)| !listed.contains(a))
        .map(|(_, n)| n)
        .collect();
    assert_eq!(missing, Vec::<&String>::new(), "{toolchain:?}");
    // The twin's listing, and for PE the functions written in assembly it calls, which have
    // a symbol but no function type (`___chkstk_ms`): objdump labels them.
    let (functions, edges) = call_graph(toolchain, &unstripped);
    let mut twin = addresses_of(&unstripped).await;
    twin.extend(
        edges
            .iter()
            .map(|e| e.1)
            .filter(|t| functions.contains_key(t)),
    );
    let invented: Vec<String> = listed
        .difference(&twin)
        .map(|a| format!("{a:#x}"))
        .collect();
    assert_eq!(invented, Vec::<String>::new(), "{toolchain:?}");

    let h = start().await;
    h.call("open_binary", json!({ "path": &stripped })).await;
    let leaf = reached.iter().find(|(_, n)| *n == "chain_b").unwrap().0;
    let info = h
        .call(
            "procedure_info",
            json!({ "procedure": format!("{leaf:#x}") }),
        )
        .await;
    assert_eq!(info["found_by"], "call", "{toolchain:?}: {info}");
}

#[tokio::test]
async fn stripped_x86_64_elf_without_unwind_tables_regression_27() {
    check_discovery(Toolchain::ElfX64).await;
}

#[tokio::test]
async fn stripped_aarch64_elf_without_unwind_tables_regression_27() {
    check_discovery(Toolchain::ElfA64).await;
}

#[tokio::test]
async fn stripped_pe_without_unwind_tables_regression_27() {
    check_discovery(Toolchain::PeX64).await;
}

/// 32-bit PE has no `.pdata` at all: only the walk lists its functions.
#[tokio::test]
async fn stripped_x86_pe_without_unwind_tables_regression_27() {
    check_discovery(Toolchain::PeX86).await;
}

/// A stripped ELF (with its `.eh_frame`) lists what its unstripped twin lists: the C runtime's
/// functions no unwind entry covers are reached from `.init_array`/`.fini_array` and
/// `DT_INIT`/`DT_FINI`, and say so.
#[tokio::test]
async fn stripped_elf_keeps_init_and_fini_procedures_regression_27() {
    for opt in [Opt::O0, Opt::O2] {
        let unstripped = corpus::build(Variant::new(Source::Graph, Toolchain::ElfX64, opt, false));
        let stripped = corpus::build(Variant::new(Source::Graph, Toolchain::ElfX64, opt, true));
        let twin = addresses_of(&unstripped).await;
        let listed = addresses_of(&stripped).await;
        assert_eq!(listed, twin, "{opt:?}");
        let init = run("readelf", &["-d", stripped.to_str().unwrap()]);
        let dt_init = init
            .lines()
            .find(|l| l.contains("(INIT)"))
            .and_then(|l| l.split_whitespace().last())
            .unwrap()
            .to_string();
        let h = start().await;
        h.call("open_binary", json!({ "path": &stripped })).await;
        let info = h
            .call("procedure_info", json!({ "procedure": dt_init }))
            .await;
        assert_eq!(info["found_by"], "DT_INIT", "{info}");
    }
}

/// A Mach-O whose static constructor only `__mod_init_func` points at (no symbol once local
/// ones are stripped, no function starts: linked with `-no_function_starts`).
const CONSTRUCTOR: &str = "extern int puts(const char *);
static int counter;
__attribute__((noinline)) static void bump(int x) { counter += x * 3; }
__attribute__((constructor)) static void setup(void) { bump(7); puts(\"ready\"); }
int get_counter(void) { return counter; }
";

/// A Mach-O linked without function starts and stripped of its local symbols lists what its
/// unstripped twin's symbols list: the constructor, found from `__mod_init_func`, and the
/// function only the constructor calls; the `__stubs` entry of the import it calls is no
/// procedure. x86-64 and arm64, linked by lld (pointers written as addresses).
#[tokio::test]
async fn stripped_macho_keeps_the_constructor_its_initializers_point_at_regression_27() {
    for target in ["x86_64-apple-macos11", "arm64-apple-macos11"] {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("ctor.c");
        std::fs::write(&src, CONSTRUCTOR).unwrap();
        let twin = dir.path().join("ctor.dylib");
        run(
            "clang-14",
            &[
                "-O1",
                "-target",
                target,
                "-fuse-ld=lld",
                "-nostdlib",
                "-dynamiclib",
                "-Wl,-undefined,dynamic_lookup",
                "-Wl,-no_function_starts",
                "-o",
                twin.to_str().unwrap(),
                src.to_str().unwrap(),
            ],
        );
        let stripped = dir.path().join("ctor-stripped.dylib");
        std::fs::copy(&twin, &stripped).unwrap();
        run("llvm-strip-14", &["-x", stripped.to_str().unwrap()]);
        let symbols: BTreeMap<String, u64> =
            run("llvm-nm-14", &["--defined-only", twin.to_str().unwrap()])
                .lines()
                .filter_map(|l| {
                    let f: Vec<&str> = l.split_whitespace().collect();
                    (f.len() == 3 && f[1].eq_ignore_ascii_case("t"))
                        .then(|| (f[2].to_owned(), u64::from_str_radix(f[0], 16).unwrap()))
                })
                .collect();
        let expected: BTreeSet<u64> = ["_setup", "_bump", "_get_counter"]
            .iter()
            .map(|n| symbols[*n])
            .collect();
        assert_eq!(symbols.len(), 3, "{target}: {symbols:?}");
        assert_eq!(addresses_of(&twin).await, expected, "{target}");
        assert_eq!(addresses_of(&stripped).await, expected, "{target}");
        let h = start().await;
        h.call("open_binary", json!({ "path": &stripped })).await;
        for (name, how) in [("_setup", "mod_init_func"), ("_bump", "call")] {
            let info = h
                .call(
                    "procedure_info",
                    json!({ "procedure": format!("{:#x}", symbols[name]) }),
                )
                .await;
            assert_eq!(info["found_by"], how, "{target} {name}: {info}");
        }
    }
}

/// A stripped mingw-w64 PE, x86-64 and x86, names `main` where its unstripped twin has it,
/// from `__tmainCRTStartup`'s call, and lists the thunk of `puts` as `puts@thunk`.
#[tokio::test]
async fn stripped_pe_main_and_thunks_regression_27() {
    for (toolchain, nm_tool, prefix) in [
        (Toolchain::PeX64, "x86_64-w64-mingw32-nm", ""),
        (Toolchain::PeX86, "i686-w64-mingw32-nm", "_"),
    ] {
        let unstripped = corpus::build(Variant::new(Source::Graph, toolchain, Opt::O2, false));
        let stripped = corpus::build(Variant::new(Source::Graph, toolchain, Opt::O2, true));
        let symbols = run(nm_tool, &[unstripped.to_str().unwrap()]);
        let nm = |name: &str| -> String {
            let line = symbols
                .lines()
                .find(|l| l.ends_with(&format!(" T {prefix}{name}")))
                .unwrap_or_else(|| panic!("{name}: {symbols}"));
            format!(
                "{:#x}",
                u64::from_str_radix(line.split_whitespace().next().unwrap(), 16).unwrap()
            )
        };
        let h = start().await;
        h.call("open_binary", json!({ "path": &stripped })).await;
        let info = h
            .call("procedure_info", json!({ "procedure": "main" }))
            .await;
        assert_eq!(
            info["procedure"]["address"],
            nm("main"),
            "{toolchain:?}: {info}"
        );
        assert_eq!(info["name_source"], "entry:__tmainCRTStartup", "{info}");
        let thunk = h
            .call("procedure_info", json!({ "procedure": "puts@thunk" }))
            .await;
        assert_eq!(
            thunk["procedure"]["address"],
            nm("puts"),
            "{toolchain:?}: {thunk}"
        );
        assert_eq!(thunk["size"], 6, "{thunk}");
    }
}

/// 7-Zip's `7za.exe` is built by MSVC against msvcrt.dll, for x86 (no `.pdata`) and x86-64:
/// its entry (`mainCRTStartup`) gets `argc`/`argv` from `__getmainargs`, calls `main` and
/// passes the result to `exit`, which `objdump -d` shows at these addresses. That the
/// procedure is 7-Zip's `main` (`Console/MainAr.cpp`) the source says: it starts by setting
/// `g_ErrStream`/`g_StdStream`, and on x86 `NT_CHECK` prints "Unsupported Windows version".
/// The x86 file also lists the procedures `main` calls, found by following its code, and the
/// import thunks the walk reaches are named.
#[tokio::test]
async fn msvc_pe_main_is_named_from_its_c_runtime_start_regression_27() {
    for (arch, main, size) in [("ia32", "0x442fba", 729), ("x64", "0x46410c", 289)] {
        let path = fixture(&format!("7zip-bin-5.2.0/package/win/{arch}/7za.exe"));
        let h = start().await;
        h.call("open_binary", json!({ "path": &path })).await;
        let info = h
            .call("procedure_info", json!({ "procedure": "main" }))
            .await;
        assert_eq!(info["procedure"]["address"], main, "{arch}: {info}");
        assert_eq!(
            info["name_source"], "entry:mainCRTStartup",
            "{arch}: {info}"
        );
        assert_eq!(info["size"], size, "{arch}: {info}");
    }
    let path = fixture("7zip-bin-5.2.0/package/win/ia32/7za.exe");
    let h = start().await;
    h.call("open_binary", json!({ "path": &path })).await;
    let strings = h
        .call(
            "search_strings",
            json!({ "pattern": "Unsupported Windows version" }),
        )
        .await;
    let users = strings.to_string();
    assert!(users.contains("0x442fba"), "{strings}");
    let rows = all_procedures(&h).await;
    let listed: BTreeSet<u64> = rows.iter().map(address).collect();
    // Every direct call target of `main`, as objdump lists them, is a procedure (before the
    // walk the file listed the entry and four aligned thunks).
    let listing = run(
        "objdump",
        &[
            "-d",
            "--start-address=0x442fba",
            "--stop-address=0x443293",
            path.to_str().unwrap(),
        ],
    );
    let targets: BTreeSet<u64> = listing
        .lines()
        .filter_map(|l| l.split('\t').nth(2))
        .filter_map(|op| op.strip_prefix("call   "))
        .filter_map(|t| u64::from_str_radix(t.trim().trim_start_matches("0x"), 16).ok())
        .collect();
    assert!(targets.len() >= 10, "{listing}");
    let missing: Vec<String> = targets
        .iter()
        .filter(|t| !listed.contains(t))
        .map(|t| format!("{t:#x}"))
        .collect();
    assert_eq!(missing, Vec::<String>::new());
    let exit = rows
        .iter()
        .find(|r| r["address"] == "0x49b9b6")
        .unwrap_or_else(|| panic!("no procedure at the thunk of _XcptFilter"));
    assert_eq!(exit["name"], "_XcptFilter@thunk", "{exit}");
}

/// Issue 27, item 5: a string only a pointer in data refers to (`puts(MSG_PW)` with
/// `const char *MSG_PW = "Enter secret password: "`) has the procedure that loads the pointer
/// among its `search_strings` users, with the pointer as `via`; `xrefs` of the string lists
/// the same instruction with the same `via`.
/// Two GUI programs built by MSVC with its C runtime linked in (no CRT DLL among the imports):
/// SnoreToast (Visual Studio 2017, incremental-link thunks) and Notifu (Visual Studio 2013),
/// each for x86 and x86-64. The start calls `wWinMain(&__ImageBase, NULL, command line, show)`
/// and passes the result on to `exit`, as `objdump -d` shows at the entry's jump target; the
/// command line's getter reads 16-bit characters. That the procedure is the program's
/// `wWinMain` the sources say: SnoreToast's begins with `AttachConsole(ATTACH_PARENT_PROCESS)`,
/// Notifu's logs "Notifu process %d starting" first.
#[tokio::test]
async fn static_msvc_pe_winmain_is_named_from_its_c_runtime_start_regression_27() {
    let programs = [
        (
            "snoreToast/snoretoast-x64.exe",
            "0x140031f10",
            "AttachConsole",
        ),
        ("snoreToast/snoretoast-x86.exe", "0x42f110", "AttachConsole"),
        (
            "notifu/notifu64.exe",
            "0x140010d90",
            "Notifu process %d starting",
        ),
        (
            "notifu/notifu.exe",
            "0x4100d0",
            "Notifu process %d starting",
        ),
    ];
    for (file, address, sign) in programs {
        let path = fixture(&format!("node-notifier/package/vendor/{file}"));
        let h = start().await;
        h.call("open_binary", json!({ "path": &path })).await;
        let info = h
            .call("procedure_info", json!({ "procedure": "wWinMain" }))
            .await;
        assert_eq!(info["procedure"]["address"], address, "{file}: {info}");
        assert_eq!(
            info["name_source"], "entry:msvc-static-crt",
            "{file}: {info}"
        );
        let shown = if sign == "AttachConsole" {
            h.call("procedure_callees", json!({ "procedure": "wWinMain" }))
                .await
        } else {
            h.call("search_strings", json!({ "pattern": sign })).await
        };
        let text = shown.to_string();
        let needle = if sign == "AttachConsole" {
            sign
        } else {
            address
        };
        assert!(text.contains(needle), "{file}: {shown}");
    }
}

/// distlib's script launchers (pip 24.0's `_vendor/distlib`), built by Visual Studio 2010 with
/// its C runtime linked in: `t32`/`t64` are console programs whose start loads `argc`, `argv`
/// and `envp` from globals, calls `main` and passes the result to `exit`, after getting the
/// command line through `GetCommandLineA`; `w32`/`w64` are GUI programs whose start calls
/// `WinMain(&__ImageBase, NULL, command line, show)` with a command line read byte by byte.
/// The launcher's source (`launcher.c`) says what each is: `main` returns `process(argc,
/// argv)`, `WinMain` returns `process(__argc, __argv)`, and `process` is the function whose
/// checks say "Expected to find terminator in shebang line". On x86, `main` is only that tail
/// jump (`jmp process`); on the others, the call.
#[tokio::test]
async fn static_msvc_pe_main_of_distlib_launchers_regression_27() {
    let launchers = [
        ("t32", "main", "0x401d9f"),
        ("t64", "main", "0x140001fd8"),
        ("w32", "WinMain", "0x401e9c"),
        ("w64", "WinMain", "0x14000214c"),
    ];
    for (file, name, address) in launchers {
        let path = fixture(&format!("pip/pip/_vendor/distlib/{file}.exe"));
        let h = start().await;
        h.call("open_binary", json!({ "path": &path })).await;
        let info = h.call("procedure_info", json!({ "procedure": name })).await;
        assert_eq!(info["procedure"]["address"], address, "{file}: {info}");
        assert_eq!(
            info["name_source"], "entry:msvc-static-crt",
            "{file}: {info}"
        );
        let callees = h
            .call("procedure_callees", json!({ "procedure": name }))
            .await;
        let targets: Vec<&str> = callees["callees"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|c| c["target"].as_str())
            .collect();
        let strings = h
            .call(
                "search_strings",
                json!({ "pattern": "Expected to find terminator in shebang line" }),
            )
            .await;
        let process: Vec<&&str> = targets
            .iter()
            .filter(|t| strings.to_string().contains(**t))
            .collect();
        assert_eq!(process.len(), 1, "{file}: {callees} {strings}");
    }
}

#[tokio::test]
async fn strings_reached_through_pointers_have_their_users_regression_27() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("msg.c");
    std::fs::write(
        &source,
        "extern int puts(const char *);\n\
         const char *MSG_PW = \"Enter secret password: \";\n\
         __attribute__((noinline)) void prompt(void) { puts(MSG_PW); }\n\
         int main(void) { prompt(); return 0; }\n",
    )
    .unwrap();
    let program = dir.path().join("msg");
    run(
        "gcc",
        &[
            "-O2",
            "-o",
            program.to_str().unwrap(),
            source.to_str().unwrap(),
        ],
    );
    let symbols = run("nm", &[program.to_str().unwrap()]);
    let nm = |name: &str| -> String {
        let line = symbols
            .lines()
            .find(|l| l.ends_with(&format!(" {name}")))
            .unwrap_or_else(|| panic!("{name}: {symbols}"));
        format!(
            "{:#x}",
            u64::from_str_radix(line.split_whitespace().next().unwrap(), 16).unwrap()
        )
    };
    let h = start().await;
    h.call("open_binary", json!({ "path": &program })).await;
    let found = h
        .call(
            "search_strings",
            json!({ "pattern": "Enter secret password" }),
        )
        .await;
    let m = &found["matches"][0];
    assert_eq!(m["users_total"], 1, "{found}");
    assert_eq!(m["users"][0]["procedure"], nm("prompt"), "{found}");
    assert_eq!(m["users"][0]["via"], nm("MSG_PW"), "{found}");
    let refs = h.call("xrefs", json!({ "address": m["address"] })).await;
    let via: Vec<&Value> = refs["code"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["via"] == nm("MSG_PW"))
        .collect();
    assert_eq!(via.len(), 1, "{refs}");
    assert_eq!(via[0]["procedure"], nm("prompt"), "{refs}");
    assert_eq!(via[0]["kind"], "access", "{refs}");
}

/// A table of labels (`labels.c`, GCC's computed `goto`) is code of the procedure whose labels
/// it holds: built without unwind tables and stripped, `run` is found by its call with the size
/// its symbol states in the unstripped twin (the labels walked as its code), and no start lies
/// inside it. The truth is `objdump -t` (the symbol's extent) and `readelf -r` (the eight
/// relocated words of the table, each pointing into `run`).
async fn check_label_tables(toolchain: Toolchain) {
    let dir = tempfile::tempdir().unwrap();
    let (unstripped, stripped) = build_no_unwind(toolchain, dir.path(), "labels.c");
    let symbols = run(objdump(toolchain), &["-t", unstripped.to_str().unwrap()]);
    let (at, size) = symbols
        .lines()
        .find(|l| l.split_whitespace().last() == Some("run"))
        .map(|l| {
            let fields: Vec<&str> = l.split_whitespace().collect();
            let hex = |f: &str| u64::from_str_radix(f, 16).unwrap();
            (hex(fields[0]), hex(fields[fields.len() - 2]))
        })
        .unwrap_or_else(|| panic!("{toolchain:?}: no `run` in {symbols}"));
    let relocations = run("readelf", &["-rW", unstripped.to_str().unwrap()]);
    let labels = relocations
        .lines()
        .filter(|l| l.contains("_RELATIVE"))
        .filter_map(|l| u64::from_str_radix(l.split_whitespace().last()?, 16).ok())
        .filter(|&a| a > at && a < at + size)
        .count();
    assert_eq!(labels, 8, "{toolchain:?}: {relocations}");

    let h = start().await;
    h.call("open_binary", json!({ "path": &stripped })).await;
    let inside: Vec<String> = all_procedures(&h)
        .await
        .iter()
        .map(address)
        .filter(|&a| a > at && a < at + size)
        .map(|a| format!("{a:#x}"))
        .collect();
    assert_eq!(inside, Vec::<String>::new(), "{toolchain:?}");
    let info = h
        .call("procedure_info", json!({ "procedure": format!("{at:#x}") }))
        .await;
    assert_eq!(info["found_by"], "call", "{toolchain:?}: {info}");
    assert_eq!(info["size"], size, "{toolchain:?}: {info}");
}

#[tokio::test]
async fn a_table_of_labels_is_code_of_its_procedure_regression_30() {
    check_label_tables(Toolchain::ElfX64).await;
}

#[tokio::test]
async fn a_table_of_labels_is_code_of_its_procedure_on_arm64_regression_30() {
    check_label_tables(Toolchain::ElfA64).await;
}

#[allow(dead_code)]
#[path = "../../benches/discovery/lua.rs"]
pub(crate) mod lua;

/// The goals on public code, as the discovery benchmark measures them: Lua 5.4 built
/// at -O2 without unwind tables, stripped and without `.eh_frame`, against its unstripped twin:
/// at least 99% of the functions some direct call targets and 95% of all are found, none
/// invented. On x86-64 a switch the table recogniser cannot prove is still followed for
/// discovery (its cases call `packint`, `getnumlimit`, `luaK_numberK`, …): without that, x86-64
/// fell to 97.96% of the called. On AArch64 a switch whose base the prologue set and whose guard
/// is far from it is read for discovery too: without that, AArch64 fell to 98.89% (`gethexa`,
/// `checkformat`, … are called only from such switches' cases).
#[test]
fn lua_without_unwind_tables_meets_the_discovery_goals_regression_27() {
    let sources = lua::lua_sources()
        .expect("Lua's sources: scripts/test.sh fetches the lua-src crate (cargo fetch)");
    for arch in &lua::ARCHES {
        let work = tempfile::tempdir().unwrap();
        let recall = lua::measure(arch, &sources, work.path());
        let missed: Vec<String> = recall
            .missed_called()
            .iter()
            .map(|a| format!("{a:#x} {}", recall.functions[a]))
            .collect();
        assert!(
            recall.of_called() >= 0.99,
            "{}: {:.4} of the called found; missed {missed:?}",
            arch.label,
            recall.of_called()
        );
        assert!(
            recall.all() >= 0.95,
            "{}: {:.4} of all",
            arch.label,
            recall.all()
        );
        assert_eq!(recall.invented(), Vec::<u64>::new(), "{}", arch.label);
    }
}
