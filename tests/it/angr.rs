//! The `angr` decompiler provider on programs built here (x86-64 ELF with gcc, AArch64 ELF with
//! aarch64-linux-gnu-gcc, an arm64 Mach-O dylib with clang-14 and lld) and on 7za (mac/x64):
//! the pseudo-code of known functions has their loop, constants, callees and strings, and every
//! callee and string is resolved to the identity rea (and `nm`/`objdump`) gives it.
//!
//! These tests need the angr venv: `.ci/angr-venv.sh` creates it and `scripts/test.sh` exports
//! `REA_ANGR_PYTHON`. Without it they fail and say so; they never pass by skipping.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use rea::providers::angr::{self, Angr, Installation, Origin};
use rea::providers::decompile::{Decompiler, PseudoCode, ReferenceKind, Referent};
use rea::providers::native::{Image, admit};

/// The program every architecture is built from: a loop with a call in it, constants, a
/// string table and imports.
const SOURCE: &str = r#"
#include <stdio.h>
#include <string.h>
static const char *OPS[] = {"add", "sub", "mul"};
__attribute__((noinline)) int helper(int x) { return x * 7 + 3; }
__attribute__((noinline)) int count_spaces(const char *s) {
    int n = 0;
    size_t len = strlen(s);
    for (size_t i = 0; i < len; i++) {
        if (s[i] == ' ') n += helper(i);
    }
    return n ^ 0x5a5a;
}
int main(int argc, char **argv) {
    if (argc < 2) { puts("usage: t STRING"); return 1; }
    printf("%s: %d\n", OPS[argc % 3], count_spaces(argv[1]));
    return 0;
}
"#;

/// A dylib without an SDK: its imports stay undefined (`-undefined dynamic_lookup`), the case
/// on which angr's own Mach-O loader raises.
const DYLIB_SOURCE: &str = r#"
extern int puts(const char *);
extern unsigned long strlen(const char *);
extern void *lookup_handler(const char *name, int flags);
__attribute__((noinline)) int table_sum(const int *values, int count) {
    int total = 0;
    for (int i = 0; i < count; i++) total += values[i] * 3;
    return total + 0x1234;
}
int greet(const char *who) {
    unsigned long n = strlen(who);
    if (n > 40) { puts("name too long"); return -1; }
    lookup_handler("greeting", 7);
    return (int)n + table_sum((const int *)who, 2);
}
"#;

/// The angr installation the tests run, from `REA_ANGR_PYTHON`.
fn installation() -> Installation {
    let python = std::env::var_os(angr::PYTHON_VARIABLE).filter(|v| !v.is_empty()).unwrap_or_else(|| {
        panic!(
            "{} is not set: the angr tests need the angr venv. Create it with `bash .ci/angr-venv.sh` \
             and export {}=$PWD/.venv-angr/bin/python (in CI, .ci/run creates it and scripts/test.sh exports the variable)",
            angr::PYTHON_VARIABLE,
            angr::PYTHON_VARIABLE
        )
    });
    angr::inspect(Path::new(&python), Origin::Environment).unwrap_or_else(|missing| {
        panic!(
            "{}={}: {missing}. Create the venv with `bash .ci/angr-venv.sh`",
            angr::PYTHON_VARIABLE,
            Path::new(&python).display()
        )
    })
}

/// Compiles `source` with `compiler` and `args` into `dir/name`.
fn build(dir: &Path, name: &str, compiler: &str, args: &[&str], source: &str) -> PathBuf {
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, source).unwrap();
    let out = dir.join(name);
    let status = Command::new(compiler)
        .args(args)
        .arg("-o")
        .arg(&out)
        .arg(&src)
        .status()
        .unwrap_or_else(|e| panic!("{compiler} is needed for this test: {e}"));
    assert!(status.success(), "{compiler} failed on {name}");
    out
}

fn output(program: &str, args: &[&str], path: &Path) -> String {
    let out = Command::new(program)
        .args(args)
        .arg(path)
        .output()
        .unwrap_or_else(|e| panic!("{program} is needed for this test: {e}"));
    assert!(out.status.success(), "{program} {args:?} failed");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Defined symbols as `nm` prints them: name → address.
fn nm(program: &str, path: &Path) -> BTreeMap<String, u64> {
    output(program, &[], path)
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let address = u64::from_str_radix(fields.next()?, 16).ok()?;
            let _kind = fields.next()?;
            Some((fields.next()?.to_string(), address))
        })
        .collect()
}

/// PLT stubs as objdump names them: `strlen@plt` → address.
fn plt_stubs(objdump: &str, path: &Path) -> BTreeMap<String, u64> {
    output(objdump, &["-d", "-j", ".plt", "-j", ".plt.sec"], path)
        .lines()
        .filter_map(|line| {
            let (address, rest) = line.split_once(" <")?;
            let name = rest.strip_suffix(">:")?;
            Some((name.to_string(), u64::from_str_radix(address, 16).ok()?))
        })
        .collect()
}

/// The section holding `address`, from `readelf -SW`.
fn elf_section_of(path: &Path, address: u64) -> Option<String> {
    output("readelf", &["-SW"], path).lines().find_map(|line| {
        let line = line.trim_start();
        let rest = line.strip_prefix('[')?.split_once(']')?.1;
        let mut fields = rest.split_whitespace();
        let name = fields.next()?;
        let _kind = fields.next()?;
        let start = u64::from_str_radix(fields.next()?, 16).ok()?;
        let _offset = fields.next()?;
        let size = u64::from_str_radix(fields.next()?, 16).ok()?;
        (address >= start && address < start + size).then(|| name.to_string())
    })
}

fn image(path: &Path) -> Image {
    let target = admit(path).unwrap();
    Image::load(&target.documents[0]).unwrap()
}

fn decompile(angr: &mut Angr, image: &Image, name: &str) -> Arc<PseudoCode> {
    let procedure = image
        .procedures()
        .iter()
        .find(|p| p.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("rea lists no procedure {name}"));
    angr.decompile(image, procedure.address)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .code
}

/// The referents of the references of `kind`.
fn referents(code: &PseudoCode, kind: ReferenceKind) -> Vec<&Referent> {
    code.references
        .iter()
        .filter(|r| r.kind == kind)
        .map(|r| &r.referent)
        .collect()
}

fn procedure(address: u64, name: &str) -> Referent {
    Referent::Procedure {
        address,
        name: Some(name.to_string()),
    }
}

fn string(text: &str) -> Referent {
    Referent::String {
        text: text.to_string(),
        encoding: "utf-8".to_string(),
    }
}

/// What must hold of `count_spaces` and `main` on either ELF architecture.
fn check_elf(path: &Path, nm_tool: &str, objdump: &str, angr: &mut Angr) {
    let image = image(path);
    let symbols = nm(nm_tool, path);
    let stubs = plt_stubs(objdump, path);

    let code = decompile(angr, &image, "count_spaces");
    let text = code.text();
    assert_eq!(code.procedure, symbols["count_spaces"]);
    assert_eq!(code.name.as_deref(), Some("count_spaces"));
    assert_eq!(code.provider.id, "angr");
    assert_eq!(code.provider.version, "9.2.213");
    // rea's names for the callees, angr's prototype of strlen (its argument is there).
    assert!(text.contains("strlen@plt(a0)"), "{text}");
    assert!(text.contains("helper("), "{text}");
    // ' ' and 0x5a5a, and the loop.
    assert!(text.contains("== 32"), "{text}");
    assert!(text.contains("23130"), "{text}");
    assert!(text.contains("while ("), "{text}");
    let calls = referents(&code, ReferenceKind::Call);
    assert_eq!(
        calls,
        [
            &procedure(stubs["strlen@plt"], "strlen@plt"),
            &procedure(symbols["helper"], "helper")
        ]
    );
    let strlen = code
        .references
        .iter()
        .find(|r| r.shown == "strlen@plt")
        .unwrap();
    assert!(code.lines[strlen.line - 1].contains("strlen@plt("));

    let code = decompile(angr, &image, "main");
    let text = code.text();
    assert!(text.contains("puts@plt(\"usage: t STRING\")"), "{text}");
    assert!(text.contains("count_spaces("), "{text}");
    assert!(text.contains("printf@plt(\"%s: %d\\n\""), "{text}");
    let calls = referents(&code, ReferenceKind::Call);
    assert_eq!(
        calls,
        [
            &procedure(stubs["puts@plt"], "puts@plt"),
            &procedure(symbols["count_spaces"], "count_spaces"),
            &procedure(stubs["printf@plt"], "printf@plt"),
        ]
    );
    assert_eq!(
        referents(&code, ReferenceKind::String),
        [&string("usage: t STRING"), &string("%s: %d\n")]
    );
    for reference in code
        .references
        .iter()
        .filter(|r| r.kind == ReferenceKind::String)
    {
        assert_eq!(
            elf_section_of(path, reference.address).as_deref(),
            Some(".rodata")
        );
    }
    // The string table is the static `OPS`, by its symbol.
    let ops = code
        .references
        .iter()
        .find(|r| r.kind == ReferenceKind::Data)
        .unwrap();
    assert_eq!(ops.address, symbols["OPS"]);
    assert_eq!(ops.referent, Referent::Symbol { name: "OPS".into() });

    // Pages by lines, as procedure_assembly pages instructions.
    let page = code.page(0, 5);
    assert_eq!(page.lines, code.lines[..5]);
    assert_eq!(page.total_lines, code.lines.len());
    assert_eq!(page.next_offset, Some(5));
    let last = code.page(5, 10_000);
    assert_eq!(last.next_offset, None);
    assert_eq!(
        page.references.len() + last.references.len(),
        code.references.len()
    );
}

#[test]
fn x86_64_elf_pseudo_code_has_the_loop_the_constants_and_rea_s_callees() {
    let dir = tempfile::tempdir().unwrap();
    let path = build(dir.path(), "t", "gcc", &["-O1"], SOURCE);
    let mut angr = Angr::new(installation());
    check_elf(&path, "nm", "objdump", &mut angr);
    // Both procedures came from one worker.
    assert!(angr.worker_pid().is_some());
}

#[test]
fn aarch64_elf_pseudo_code_has_the_loop_the_constants_and_rea_s_callees() {
    let dir = tempfile::tempdir().unwrap();
    let path = build(dir.path(), "t", "aarch64-linux-gnu-gcc", &["-O1"], SOURCE);
    let mut angr = Angr::new(installation());
    check_elf(
        &path,
        "aarch64-linux-gnu-nm",
        "aarch64-linux-gnu-objdump",
        &mut angr,
    );
}

#[test]
fn arm64_macho_dylib_decompiles_where_angr_s_own_loader_fails() {
    let dir = tempfile::tempdir().unwrap();
    let path = build(
        dir.path(),
        "libgreet.dylib",
        "clang-14",
        &[
            "-target",
            "arm64-apple-macos11",
            "-fuse-ld=lld",
            "-nostdlib",
            "-dynamiclib",
            "-Wl,-undefined,dynamic_lookup",
            "-O1",
        ],
        DYLIB_SOURCE,
    );
    let image = image(&path);
    assert_eq!(image.document().format, "macho");
    let symbols = nm("llvm-nm-14", &path);
    // The stubs the reference disassembler names at each call site.
    let mut stubs = BTreeMap::new();
    for line in output("llvm-objdump-14", &["--macho", "-d"], &path).lines() {
        if let Some((head, import)) = line.split_once("; symbol stub for: ") {
            let target = head.split_whitespace().last().unwrap();
            let target = u64::from_str_radix(target.trim_start_matches("0x"), 16).unwrap();
            stubs.insert(import.trim().to_string(), target);
        }
    }
    assert_eq!(stubs.len(), 3, "{stubs:?}");
    let mut angr = Angr::new(installation());

    // rea names Mach-O procedures without the C compiler's leading underscore (nm's raw name).
    let code = decompile(&mut angr, &image, "greet");
    let text = code.text();
    assert_eq!(code.procedure, symbols["_greet"]);
    assert!(text.contains("_strlen(a0)"), "{text}");
    assert!(text.contains("_puts(\"name too long\")"), "{text}");
    assert!(text.contains("_lookup_handler(\"greeting\", 7)"), "{text}");
    assert!(text.contains("table_sum(a0, 2)"), "{text}");
    assert!(!text.contains("_table_sum"), "{text}");
    assert!(text.contains("41"), "{text}");
    let import = |name: &str| Referent::Import {
        name: name.to_string(),
        library: None,
        via: "stub".to_string(),
    };
    let mut calls: Vec<(u64, Referent)> = code
        .references
        .iter()
        .filter(|r| r.kind == ReferenceKind::Call)
        .map(|r| (r.address, r.referent.clone()))
        .collect();
    calls.sort_by_key(|(address, _)| *address);
    let mut expected = vec![
        (stubs["_strlen"], import("_strlen")),
        (stubs["_puts"], import("_puts")),
        (stubs["_lookup_handler"], import("_lookup_handler")),
        (
            symbols["_table_sum"],
            procedure(symbols["_table_sum"], "table_sum"),
        ),
    ];
    expected.sort_by_key(|(address, _)| *address);
    assert_eq!(calls, expected);
    let mut strings = referents(&code, ReferenceKind::String);
    strings.sort_by_key(|r| format!("{r:?}"));
    assert_eq!(strings, [&string("greeting"), &string("name too long")]);

    let code = decompile(&mut angr, &image, "table_sum");
    let text = code.text();
    // 0x1234 stays a number: the image is mapped high inside the worker, so small constants
    // do not read as addresses of a dylib linked at 0.
    assert!(text.contains("4660"), "{text}");
    assert!(!text.contains("g_1234"), "{text}");
    assert!(text.contains("* 3"), "{text}");
    assert!(text.contains("while ("), "{text}");
    assert!(code.references.is_empty(), "{:?}", code.references);
}

#[test]
fn seven_zip_get_password_reads_the_prompts_getpass_and_the_verification() {
    let fixtures = std::env::var_os("REA_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".fixtures"));
    let path = fixtures.join("7zip-bin-5.2.0/package/mac/x64/7za");
    assert!(
        path.is_file(),
        "{} is missing: run `bash .ci/fixtures.sh`",
        path.display()
    );
    let image = image(&path);
    let mut angr = Angr::new(installation());
    let code = decompile(&mut angr, &image, "GetPassword(CStdOutStream*, bool)");
    let text = code.text();
    for needle in [
        "Enter password (will not be echoed):",
        "Verify password (will not be echoed) :",
        "password verification failed",
        "_getpass(",
        "_strcmp(",
    ] {
        assert!(text.contains(needle), "{needle} missing from\n{text}");
    }
    // The reference disassembler's annotations give each string's and stub's address: the
    // pseudo-code resolves the same addresses to the same strings and imports.
    let listing = output(
        "llvm-objdump-14",
        &[
            "--macho",
            "-d",
            "--no-show-raw-insn",
            &format!("--start-address={:#x}", code.procedure),
            &format!("--stop-address={:#x}", code.end),
        ],
        &path,
    );
    let instructions: Vec<(u64, &str)> = listing
        .lines()
        .filter_map(|line| {
            let (address, rest) = line.split_once(":\t")?;
            Some((u64::from_str_radix(address.trim(), 16).ok()?, rest))
        })
        .collect();
    let mut literals = BTreeMap::new();
    let mut stubs = BTreeMap::new();
    for (i, (_, text)) in instructions.iter().enumerate() {
        if let Some((operands, literal)) = text.split_once("## literal pool for: \"") {
            // leaq DISP(%rip), ...: relative to the next instruction.
            let displacement: i64 = operands
                .split_whitespace()
                .nth(1)
                .and_then(|o| o.split_once("(%rip)"))
                .and_then(|(d, _)| d.parse().ok())
                .unwrap();
            let next = instructions[i + 1].0;
            let text = literal.trim_end_matches('"').replace("\\n", "\n");
            literals.insert(text, next.wrapping_add_signed(displacement));
        }
        if let Some((operands, import)) = text.split_once("## symbol stub for: ") {
            let target = operands.split_whitespace().nth(1).unwrap();
            let target = u64::from_str_radix(target.trim_start_matches("0x"), 16).unwrap();
            stubs.insert(import.trim().to_string(), target);
        }
    }
    for literal in [
        "\nEnter password (will not be echoed):",
        "Verify password (will not be echoed) :",
        "password verification failed",
    ] {
        let address = literals[literal];
        assert!(
            code.references
                .iter()
                .any(|r| r.kind == ReferenceKind::String
                    && r.address == address
                    && r.referent == string(literal)),
            "{literal:?} at {address:#x} is not among the references: {:#?}",
            code.references
        );
    }
    for import in [
        "_getpass",
        "_strcmp",
        "___cxa_allocate_exception",
        "___cxa_throw",
    ] {
        let address = stubs[import];
        assert!(
            code.references.iter().any(|r| r.kind == ReferenceKind::Call
                && r.address == address
                && matches!(&r.referent, Referent::Import { name, via, .. } if name == import && via == "stub")),
            "{import} at {address:#x} is not among the calls"
        );
    }
    // `__cxa_throw` takes three arguments (angr has no prototype for it; rea's worker gives
    // it one): the message left in the fourth register is no argument (issue 27).
    let throw = text
        .lines()
        .find(|l| l.contains("___cxa_throw("))
        .expect("GetPassword throws");
    let inside = &throw[throw.find("___cxa_throw(").unwrap() + "___cxa_throw(".len()..];
    let mut depth = 0;
    let mut commas = 0;
    for c in inside.chars() {
        match c {
            '(' => depth += 1,
            ')' if depth == 0 => break,
            ')' => depth -= 1,
            ',' if depth == 0 => commas += 1,
            _ => {}
        }
    }
    assert_eq!(commas, 2, "{throw}");
    // Named callees are rea's procedures; follow the nameless one that prints the prompt.
    let print = code
        .references
        .iter()
        .find(|r| {
            r.kind == ReferenceKind::Call
                && matches!(r.referent, Referent::Procedure { name: None, .. })
        })
        .expect("the prompt is printed by a nameless procedure");
    assert_eq!(print.shown, format!("sub_{:x}", print.address));
    let pid = angr.worker_pid().unwrap();
    let callee = angr.decompile(&image, print.address).unwrap();
    assert!(
        callee.timings.start.is_none(),
        "the worker was started again"
    );
    assert_eq!(angr.worker_pid(), Some(pid));
    assert!(!callee.code.lines.is_empty());
    drop(angr);
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists() || zombie(pid),
        "the worker outlived its session"
    );
    // Another session's worker reads the procedure exactly the same: the same observation
    // makes the same Evidence.
    let mut again = Angr::new(installation());
    let second = decompile(&mut again, &image, "GetPassword(CStdOutStream*, bool)");
    assert_eq!(*second, *code);
}

fn zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(true)
}

#[test]
fn the_memory_limit_holds_and_a_fresh_worker_follows_the_failure() {
    let dir = tempfile::tempdir().unwrap();
    let path = build(dir.path(), "t", "gcc", &["-O1"], SOURCE);
    let image = image(&path);
    let start = image
        .procedures()
        .iter()
        .find(|p| p.name.as_deref() == Some("helper"))
        .unwrap()
        .address;
    // 64 MiB of address space is far too little for Python with angr's imports.
    let mut starved = Angr::with_limits(
        installation(),
        angr::Limits {
            memory_bytes: 64 << 20,
            ..angr::Limits::default()
        },
    );
    let err = starved.decompile(&image, start).unwrap_err();
    assert!(
        matches!(
            err,
            rea::providers::decompile::DecompileError::Crashed { .. }
        ),
        "{err}"
    );
    assert!(starved.worker_pid().is_none());
    let mut angr = Angr::new(installation());
    let code = angr.decompile(&image, start).unwrap().code;
    assert!(code.text().contains("helper("), "{}", code.text());
}

#[test]
fn angr_is_a_deep_candidate_for_elf_macho_and_pe_found_without_starting_it() {
    let installation = installation();
    for format in ["elf", "macho", "macho-universal", "app-bundle", "pe"] {
        let found = rea::providers::deep::candidates(format, None);
        let angr = found
            .iter()
            .find(|c| c.id == "angr")
            .unwrap_or_else(|| panic!("angr is not a candidate for {format}"));
        assert_eq!(angr.path, installation.python);
        assert_eq!(angr.name, "angr 9.2.213 decompiler");
    }
    assert!(
        !rea::providers::deep::candidates("raw", None)
            .iter()
            .any(|c| c.id == "angr")
    );
}

/// A tail call (`forward` is `jmp helper`) and a hot/cold split (`checked`'s error path lives in
/// `checked.cold`, outside its region).
const TAILS_SOURCE: &str = r#"
#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) int helper(int x) { return x * 7 + 3; }
__attribute__((noinline)) int forward(int x) { return helper(x + 1); }
__attribute__((noinline, cold)) void fail(const char *why, int x) { fprintf(stderr, why, x); exit(2); }
__attribute__((noinline)) int checked(int x) {
    int y = helper(x);
    if (y < 0) { fail("negative %d\n", y); y = helper(-y) * 5; }
    return y + forward(x);
}
int main(int argc, char **argv) { (void)argv; return checked(argc - 2) + forward(argc); }
"#;

/// A procedure that is only a tail jump reads as a call of its target, and a goto out of the
/// function names its label in rea's numbering (the worker
/// maps a PIE high; the label of `checked.cold` is at nm's address, not 0x400000 above it).
#[test]
fn tail_jumps_and_gotos_out_of_the_region_are_named_regression_20() {
    let dir = tempfile::tempdir().unwrap();
    let path = build(
        dir.path(),
        "tails",
        "gcc",
        &["-O2", "-fPIE", "-pie"],
        TAILS_SOURCE,
    );
    let symbols = nm("nm", &path);
    let image = image(&path);
    let mut angr = Angr::new(installation());

    // The procedure it tail-jumps to is lifted with it (issue 27): the jump reads as the call it
    // is, with its argument, and nothing is left out. Before, angr's body was empty and the
    // limitation named the jump.
    let code = decompile(&mut angr, &image, "forward");
    assert!(
        code.text().contains("return helper(a0 + 1);"),
        "{}",
        code.text()
    );
    assert_eq!(code.limitations, Vec::<String>::new());

    let code = decompile(&mut angr, &image, "checked");
    let cold = symbols["checked.cold"];
    let label = format!("LABEL_{cold:#x}");
    let text = code.text();
    assert!(text.contains(&format!("goto {label};")), "{text}");
    assert!(
        !text.contains(&format!("LABEL_{:#x}", cold + 0x400000)),
        "{text}"
    );
    let line = code
        .lines
        .iter()
        .position(|l| l.contains(&format!("goto {label};")))
        .unwrap()
        + 1;
    assert!(
        code.limitations.contains(&format!(
            "line {line}: `goto {label}` jumps to code that the output does not show"
        )),
        "{:?}",
        code.limitations
    );
}
