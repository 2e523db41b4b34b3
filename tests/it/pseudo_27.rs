//! Issue 27's pseudo-code items: every direct call rea decodes in a procedure is in angr's
//! pseudo-code or named in its limitations, data angr left as numbers is named, a tail call
//! through a table reads as a call, and PE documents decompile.

use std::path::{Path, PathBuf};

use rea::providers::angr::{self, Angr, Origin};
use rea::providers::decompile::{Decompiler, PseudoCode, ReferenceKind};
use rea::providers::native::{Image, admit, format_address};

fn angr_session() -> Angr {
    let python = std::env::var_os(angr::PYTHON_VARIABLE)
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| panic!("{} is not set: the angr tests need the angr venv", angr::PYTHON_VARIABLE));
    Angr::new(angr::inspect(Path::new(&python), Origin::Environment).unwrap())
}

fn seven_zip() -> PathBuf {
    let fixtures = std::env::var_os("REA_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".fixtures"));
    let path = fixtures.join("7zip-bin-5.2.0/package/mac/x64/7za");
    assert!(path.is_file(), "{} is missing: run `bash .ci/fixtures.sh`", path.display());
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
            matches!(r.kind, ReferenceKind::Call | ReferenceKind::Function) && r.address == edge.target
        }) {
            shown += 1;
            continue;
        }
        let target = format_address(edge.target);
        assert!(
            code.limitations.iter().any(|l| l.contains(&format!("call to {target}"))),
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
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
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
}

#[test]
fn zz_debug_dump() {
    let image = image(&seven_zip());
    let mut angr = angr_session();
    for address in [0x10003b584u64, 0x1001c8f6b, 0x1000330a2, 0x100088cb2] {
        let code = angr.decompile(&image, address).unwrap().code;
        eprintln!("==== {:#x} end {:#x}\n{}\nLIM {:?}\nREFS {:?}", address, code.end, code.text(), code.limitations, code.references.iter().map(|r| (r.kind, format_address(r.address))).collect::<Vec<_>>());
        for e in image.callees(address).unwrap().callees { eprintln!("  callee {} {:?} {} {:?}", format_address(e.target), e.name, e.via, e.sites.iter().map(|s| format_address(*s)).collect::<Vec<_>>()); }
    }
}
