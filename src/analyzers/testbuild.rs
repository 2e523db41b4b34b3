//! Test support: C programs compiled during the tests (gcc, mingw-w64, the AArch64 cross
//! compiler), their stripped twins, and `nm` as the reference for names and addresses.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::providers::native::{Image, admit};

/// A C toolchain: the compiler and the prefix of its binutils.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Toolchain {
    pub(crate) cc: &'static str,
    pub(crate) tools: &'static str,
    pub(crate) suffix: &'static str,
}

pub(crate) const GCC: Toolchain = Toolchain {
    cc: "gcc",
    tools: "",
    suffix: "",
};
pub(crate) const MINGW: Toolchain = Toolchain {
    cc: "x86_64-w64-mingw32-gcc",
    tools: "x86_64-w64-mingw32-",
    suffix: ".exe",
};
pub(crate) const ARM64: Toolchain = Toolchain {
    cc: "aarch64-linux-gnu-gcc",
    tools: "aarch64-linux-gnu-",
    suffix: "",
};

fn run(program: &str, args: &[&str]) -> String {
    let output = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program} is required (.ci/run installs it): {e}"));
    assert!(
        output.status.success(),
        "{program} {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// An executable and its stripped twin (same code at the same addresses, no symbols).
#[derive(Debug, Clone)]
pub(crate) struct Built {
    pub(crate) plain: PathBuf,
    pub(crate) stripped: PathBuf,
}

/// Compiles `source` with `opt` and `defines` into `dir`, then strips a copy with `strip -o`.
pub(crate) fn build(
    dir: &Path,
    chain: Toolchain,
    opt: &str,
    source: &str,
    defines: &[&str],
    name: &str,
) -> Built {
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, source).unwrap();
    let plain = dir.join(format!("{name}{}", chain.suffix));
    let stripped = dir.join(format!("{name}-stripped{}", chain.suffix));
    let mut args = vec![opt, "-o", plain.to_str().unwrap(), src.to_str().unwrap()];
    args.extend_from_slice(defines);
    run(chain.cc, &args);
    run(
        &format!("{}strip", chain.tools),
        &["-o", stripped.to_str().unwrap(), plain.to_str().unwrap()],
    );
    Built { plain, stripped }
}

/// Function symbols of an unstripped file, by `nm` (the reference for names and addresses).
pub(crate) fn nm_functions(chain: Toolchain, path: &Path) -> BTreeMap<String, u64> {
    run(
        &format!("{}nm", chain.tools),
        &["--defined-only", path.to_str().unwrap()],
    )
    .lines()
    .filter_map(|line| {
        let mut fields = line.split_whitespace();
        let address = u64::from_str_radix(fields.next()?, 16).ok()?;
        let kind = fields.next()?;
        let name = fields.next()?;
        matches!(kind, "T" | "t").then(|| (name.to_string(), address))
    })
    .collect()
}

/// The instructions the toolchain's objdump lists under `function`: address and text, mnemonic
/// first.
pub(crate) fn listing(chain: Toolchain, path: &Path, function: &str) -> Vec<(u64, String)> {
    let text = run(
        &format!("{}objdump", chain.tools),
        &["-d", "--no-show-raw-insn", path.to_str().unwrap()],
    );
    let mut inside = false;
    let mut found = Vec::new();
    for line in text.lines() {
        if line.ends_with(':') && line.contains('<') {
            inside = line.contains(&format!("<{function}>:"));
            continue;
        }
        if inside
            && let Some((address, insn)) = line.trim_start().split_once(':')
            && let Ok(address) = u64::from_str_radix(address.trim(), 16)
        {
            found.push((address, insn.trim().to_string()));
        }
    }
    found
}

pub(crate) fn image(path: &Path) -> Image {
    let target = admit(path).unwrap();
    Image::load(&target.documents[0]).unwrap()
}
