//! Issue 27's pseudo-code items: every direct call rea decodes in a procedure is in angr's
//! pseudo-code or named in its limitations, data angr left as numbers is named, a tail call
//! through a table reads as a call, and PE documents decompile.

use std::path::{Path, PathBuf};

use rea::providers::angr::{self, Angr, Origin};
use rea::providers::decompile::{Decompiler, PseudoCode, ReferenceKind, Referent};
use rea::providers::native::{Image, admit, format_address};

fn angr_session() -> Angr {
    let python = std::env::var_os(angr::PYTHON_VARIABLE)
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| {
            panic!(
                "{} is not set: the angr tests need the angr venv",
                angr::PYTHON_VARIABLE
            )
        });
    Angr::new(angr::inspect(Path::new(&python), Origin::Environment).unwrap())
}

fn seven_zip() -> PathBuf {
    let fixtures = std::env::var_os("REA_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".fixtures"));
    let path = fixtures.join("7zip-bin-5.2.0/package/mac/x64/7za");
    assert!(
        path.is_file(),
        "{} is missing: run `bash .ci/fixtures.sh`",
        path.display()
    );
    path
}

fn image(path: &Path) -> Image {
    Image::load(&admit(path).unwrap().documents[0]).unwrap()
}

/// Direct call targets rea decodes in the procedure, and how many of them the pseudo-code
/// shows as a call or function reference; panics naming a target that is neither shown nor in
/// the limitations.
fn coverage(image: &Image, code: &PseudoCode) -> (usize, usize) {
    let edges = image.callees(code.procedure).unwrap();
    let mut total = 0;
    let mut shown = 0;
    for edge in edges.callees.iter().filter(|e| e.via == "call") {
        total += 1;
        if code.references.iter().any(|r| {
            matches!(r.kind, ReferenceKind::Call | ReferenceKind::Function)
                && r.address == edge.target
        }) {
            shown += 1;
            continue;
        }
        let target = format_address(edge.target);
        assert!(
            code.limitations
                .iter()
                .any(|l| l.contains(&format!("call to {target}"))),
            "{}: the call to {target} ({:?}) is neither shown nor in limitations {:?}\n{}",
            format_address(code.procedure),
            edge.name,
            code.limitations,
            code.text()
        );
    }
    (shown, total)
}

/// Thirty procedures of 7za (mac/x64) drawn by a fixed generator among those with a direct call,
/// and 0x100088cb2, whose exception-cleanup calls after `ret` angr does not lift.
#[test]
fn seven_zip_calls_are_shown_or_named_in_limitations_regression_27() {
    let path = seven_zip();
    let image = image(&path);
    let mut candidates: Vec<u64> = image
        .procedures()
        .iter()
        .filter(|p| p.size.is_some_and(|s| s < 0x800))
        .map(|p| p.address)
        .filter(|&a| {
            image
                .callees(a)
                .is_ok_and(|e| e.callees.iter().any(|c| c.via == "call"))
        })
        .collect();
    let mut chosen = vec![0x100088cb2];
    let mut state: u64 = 27;
    while chosen.len() < 31 {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let pick = candidates.remove((state >> 33) as usize % candidates.len());
        chosen.push(pick);
    }
    let mut angr = angr_session();
    let (mut shown, mut total) = (0, 0);
    for address in chosen {
        let code = angr.decompile(&image, address).unwrap().code;
        let (s, t) = coverage(&image, &code);
        eprintln!("{}: {s}/{t}", format_address(address));
        shown += s;
        total += t;
    }
    eprintln!("7za mac/x64: {shown} of {total} direct call targets shown");
    // Before issue 27: 57 of 84, the other 27 in no limitation.
    assert_eq!(total, 84);
    assert!(shown * 100 >= total * 98, "{shown} of {total} shown");
}

/// The functions `graph.c` and `datanames.c` define, as the corpus's symbols name them.
const CORPUS_FUNCTIONS: &[&str] = &[
    "sink",
    "leaf_add",
    "leaf_sub",
    "leaf_mul",
    "leaf_xor",
    "apply",
    "classify",
    "say_prompt",
    "say_carriage",
    "say_tabbed",
    "say_short",
    "say_url",
    "say_beryllium",
    "say_cobalt",
    "chain_c",
    "chain_b",
    "chain_a",
    "fib",
    "tail_caller",
    "main",
    "read_ops2",
    "read_flag1",
    "greet",
    "complain",
];

/// Every function of the corpus's C programs on x86-64 and AArch64 ELF and PE, at -O0 and -O2:
/// each direct call rea decodes is shown or named in the limitations.
#[test]
fn corpus_calls_are_shown_or_named_in_limitations_regression_27() {
    use crate::corpus::{Opt, Source, Toolchain, Variant, build};
    let mut angr = angr_session();
    let (mut shown, mut total) = (0, 0);
    for source in [Source::Graph, Source::DataNames] {
        for toolchain in [Toolchain::ElfX64, Toolchain::ElfA64, Toolchain::PeX64] {
            if source == Source::DataNames && toolchain == Toolchain::PeX64 {
                continue;
            }
            for opt in [Opt::O0, Opt::O2] {
                let image = image(&build(Variant::new(source, toolchain, opt, false)));
                for procedure in image.procedures() {
                    let Some(name) = procedure.name.as_deref() else {
                        continue;
                    };
                    if !CORPUS_FUNCTIONS.contains(&name) {
                        continue;
                    }
                    let code = angr
                        .decompile(&image, procedure.address)
                        .unwrap_or_else(|e| panic!("{toolchain:?} {opt:?} {name}: {e}"))
                        .code;
                    let (s, t) = coverage(&image, &code);
                    if s < t {
                        eprintln!(
                            "{toolchain:?} {opt:?} {name}: {s}/{t} {:?}",
                            code.limitations
                        );
                    }
                    shown += s;
                    total += t;
                }
            }
        }
    }
    eprintln!("corpus: {shown} of {total} direct call targets shown");
    assert_eq!(total, 193);
    assert!(shown * 100 >= total * 98, "{shown} of {total} shown");
}

/// A prompt reached through a pointer, `stderr` (a copy-relocated object on x86-64, a GOT slot
/// on AArch64) and a global counter.
const NAMED_SOURCE: &str = r#"
#include <stdio.h>
#include <string.h>
static const char *MSG_PW = "Enter secret password: ";
int counter = 5;
__attribute__((noinline)) int ask(const char *given) {
    printf("%s", MSG_PW);
    fprintf(stderr, "checking %d\n", counter);
    if (strcmp(given, "hunter2") != 0) return -1;
    counter++;
    return 0;
}
int main(int argc, char **argv) { return ask(argc > 1 ? argv[1] : ""); }
"#;

fn compile(dir: &Path, compiler: &str, source: &str) -> PathBuf {
    let src = dir.join("named.c");
    std::fs::write(&src, source).unwrap();
    let out = dir.join(compiler);
    let status = std::process::Command::new(compiler)
        .args(["-O1", "-o"])
        .arg(&out)
        .arg(&src)
        .status()
        .unwrap_or_else(|e| panic!("{compiler} is needed for this test: {e}"));
    assert!(status.success(), "{compiler} failed");
    out
}

fn tool(program: &str, args: &[&str], path: &Path) -> String {
    let out = std::process::Command::new(program)
        .args(args)
        .arg(path)
        .output()
        .unwrap_or_else(|e| panic!("{program} is needed for this test: {e}"));
    assert!(out.status.success(), "{program} {args:?} failed");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The address of the first line of `listing` that ends with `suffix`, its first field in hex.
fn address_of(listing: &str, suffix: &str) -> u64 {
    listing
        .lines()
        .find(|l| l.trim_end().ends_with(suffix))
        .and_then(|l| u64::from_str_radix(l.split_whitespace().next()?, 16).ok())
        .unwrap_or_else(|| panic!("no line ends with {suffix} in\n{listing}"))
}

/// Whether the code, outside its `//` comments (angr's stack offsets), has no hex number left.
fn no_raw_address(code: &PseudoCode) -> bool {
    code.lines
        .iter()
        .all(|l| !l.split("//").next().unwrap().contains("0x"))
}

/// `stderr` is named as assembly names it, in the text and in the references, on x86-64 (the
/// object copied into `.bss`, which angr printed as `*((long long *)0x4080)`) and AArch64 (its
/// GOT slot, which angr printed as the load of a worker-made cell).
#[test]
fn data_angr_left_as_numbers_is_named_regression_27() {
    let dir = tempfile::tempdir().unwrap();
    let mut angr = angr_session();

    let path = compile(dir.path(), "gcc", NAMED_SOURCE);
    let x86 = image(&path);
    let code = angr
        .decompile(&x86, address_of(&tool("nm", &[], &path), " T ask"))
        .unwrap()
        .code;
    let text = code.text();
    assert!(
        text.contains(r#"printf@plt("%s", "Enter secret password: ");"#),
        "{text}"
    );
    assert!(
        text.contains(r#"fprintf@plt(stderr, "checking %d\n", "#),
        "{text}"
    );
    assert!(no_raw_address(&code), "{text}");
    let copy = address_of(&tool("nm", &[], &path), "stderr@GLIBC_2.2.5");
    let line = code
        .lines
        .iter()
        .position(|l| l.contains("fprintf@plt(stderr"))
        .unwrap()
        + 1;
    let stderr = code.references.iter().find(|r| r.address == copy).unwrap();
    assert_eq!(
        (stderr.line, stderr.kind, stderr.shown.as_str()),
        (line, ReferenceKind::Data, "stderr")
    );
    assert_eq!(
        stderr.referent,
        Referent::Symbol {
            name: "stderr@GLIBC_2.2.5".into()
        }
    );

    let path = compile(dir.path(), "aarch64-linux-gnu-gcc", NAMED_SOURCE);
    let a64 = image(&path);
    let code = angr
        .decompile(
            &a64,
            address_of(&tool("aarch64-linux-gnu-nm", &[], &path), " T ask"),
        )
        .unwrap()
        .code;
    let text = code.text();
    assert!(
        text.contains(r#"fprintf@plt(stderr, "checking %d\n", counter);"#),
        "{text}"
    );
    assert!(no_raw_address(&code), "{text}");
    let slot = address_of(
        &tool("aarch64-linux-gnu-readelf", &["-rW"], &path),
        "stderr@GLIBC_2.17 + 0",
    );
    let line = code
        .lines
        .iter()
        .position(|l| l.contains("fprintf@plt(stderr"))
        .unwrap()
        + 1;
    let stderr = code.references.iter().find(|r| r.address == slot).unwrap();
    assert_eq!(
        (stderr.line, stderr.kind, stderr.shown.as_str()),
        (line, ReferenceKind::Data, "stderr")
    );
    assert!(
        matches!(&stderr.referent, Referent::Import { name, via, .. } if name == "stderr" && via == "got"),
        "{:?}",
        stderr.referent
    );
}

/// `apply` is `return OPS[i & 3](a, b);`, which every compiler here turns into a jump through
/// the table; angr wrote it as `goto OPS[a0 & 3];`.
#[test]
fn a_tail_call_through_a_table_is_a_call_regression_27() {
    use crate::corpus::{Opt, Source, Toolchain, Variant, build};
    let mut angr = angr_session();
    for toolchain in [Toolchain::ElfX64, Toolchain::ElfA64, Toolchain::PeX64] {
        let image = image(&build(Variant::new(
            Source::Graph,
            toolchain,
            Opt::O2,
            false,
        )));
        let apply = image
            .procedures()
            .iter()
            .find(|p| p.name.as_deref() == Some("apply"))
            .unwrap();
        let code = angr.decompile(&image, apply.address).unwrap().code;
        let line = code
            .lines
            .iter()
            .position(|l| l.trim_start().starts_with("return ((long long (*)())(OPS["))
            .unwrap_or_else(|| panic!("{toolchain:?}: {}", code.text()))
            + 1;
        assert!(
            !code.text().contains("goto"),
            "{toolchain:?}: {}",
            code.text()
        );
        assert!(
            code.limitations.iter().any(|l| l
                .starts_with(&format!("line {line}: angr's `goto OPS["))
                && l.contains("is a tail call of the table entry it loads")),
            "{toolchain:?}: {:?}",
            code.limitations
        );
    }
}

/// The PE build (x86_64-w64-mingw32-gcc -O2) decompiles, in the Microsoft convention: `main`'s
/// calls are objdump's, with the arguments the source passes.
#[test]
fn pe_pseudo_code_regression_27() {
    use crate::corpus::{Opt, Source, Toolchain, Variant, build};
    let path = build(Variant::new(
        Source::Graph,
        Toolchain::PeX64,
        Opt::O2,
        false,
    ));
    let image = image(&path);
    let main = image
        .procedures()
        .iter()
        .find(|p| p.name.as_deref() == Some("main"))
        .unwrap();
    let mut angr = angr_session();
    let code = angr.decompile(&image, main.address).unwrap().code;
    let text = code.text();
    assert!(text.contains(r#"    puts("graph done");"#), "{text}");
    let apply = code.lines.iter().find(|l| l.contains("apply(")).unwrap();
    assert!(apply.ends_with(", 1, 2);"), "{text}");
    for callee in ["classify(", "chain_a(", "fib(", "tail_caller("] {
        let line = code.lines.iter().find(|l| l.contains(callee)).unwrap();
        assert!(!line.contains(", "), "one argument for {callee}: {text}");
    }
    // objdump's direct calls of main, in order of first appearance.
    let listing = tool(
        "x86_64-w64-mingw32-objdump",
        &[
            "-d",
            &format!("--start-address={:#x}", code.procedure),
            &format!("--stop-address={:#x}", code.end),
        ],
        &path,
    );
    let mut expected: Vec<u64> = Vec::new();
    for line in listing.lines().filter(|l| l.contains("\tcall ")) {
        let target = line
            .split("call")
            .nth(1)
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap();
        let target = u64::from_str_radix(target.trim_start_matches("0x"), 16).unwrap();
        if !expected.contains(&target) {
            expected.push(target);
        }
    }
    let calls: Vec<u64> = code
        .references
        .iter()
        .filter(|r| r.kind == ReferenceKind::Call)
        .map(|r| r.address)
        .collect();
    assert_eq!(calls, expected, "{text}");
    assert_eq!(coverage(&image, &code), (expected.len(), expected.len()));
}
