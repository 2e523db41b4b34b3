//! The Lua build and the recall figures of the discovery benchmark (`benches/discovery.rs`),
//! shared with the test that holds the issue's goals (`tests/it/discovery_27.rs`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use rea::providers::native::{Procedure, admit, procedures};

/// The driver linked with Lua's library: `main` opens every standard library and runs a chunk.
const DRIVER: &str = r#"#include "lua.h"
#include "lauxlib.h"
#include "lualib.h"
int main(int argc, char **argv) {
    lua_State *L = luaL_newstate();
    luaL_openlibs(L);
    int r = luaL_dostring(L, argc > 1 ? argv[1] : "print('lua')");
    lua_close(L);
    return r;
}
"#;

/// Runs `program`, which must succeed; its standard output.
pub fn run(program: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .env("LC_ALL", "C")
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The newest `lua-5.4*` directory of a `lua-src` crate in the cargo registry.
pub fn lua_sources() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("REA_BENCH_LUA") {
        return Some(PathBuf::from(dir));
    }
    let home = PathBuf::from(std::env::var_os("CARGO_HOME").unwrap_or_else(|| {
        PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
            .join(".cargo")
            .into_os_string()
    }));
    let mut found = Vec::new();
    for index in std::fs::read_dir(home.join("registry/src")).ok()?.flatten() {
        for krate in std::fs::read_dir(index.path()).ok()?.flatten() {
            let name = krate.file_name().to_string_lossy().into_owned();
            if !name.starts_with("lua-src-") {
                continue;
            }
            for dir in std::fs::read_dir(krate.path()).ok()?.flatten() {
                if dir.file_name().to_string_lossy().starts_with("lua-5.4") {
                    found.push(dir.path());
                }
            }
        }
    }
    found.sort();
    found.pop()
}

/// A toolchain Lua is built with.
pub struct Arch {
    pub label: &'static str,
    pub cc: &'static str,
    strip: &'static str,
    objcopy: &'static str,
    objdump: &'static str,
    nm: &'static str,
}

/// The architectures measured.
pub const ARCHES: [Arch; 2] = [
    Arch {
        label: "x86-64",
        cc: "gcc",
        strip: "strip",
        objcopy: "objcopy",
        objdump: "objdump",
        nm: "nm",
    },
    Arch {
        label: "AArch64",
        cc: "aarch64-linux-gnu-gcc",
        strip: "aarch64-linux-gnu-strip",
        objcopy: "aarch64-linux-gnu-objcopy",
        objdump: "aarch64-linux-gnu-objdump",
        nm: "aarch64-linux-gnu-nm",
    },
];

/// Every procedure rea lists for the file, and the seconds that took.
pub fn list(path: &Path) -> (Vec<Procedure>, f64) {
    let started = Instant::now();
    let target = admit(path).expect("admit");
    let out = procedures(&target.documents[0]).expect("procedures");
    (out, started.elapsed().as_secs_f64())
}

/// What rea found in a stripped Lua built without unwind tables, against its unstripped twin.
pub struct Recall {
    /// The twin's functions, by address.
    pub functions: BTreeMap<u64, String>,
    /// The functions some direct call of the twin targets.
    pub called: BTreeSet<u64>,
    /// The starts rea lists for the stripped build.
    pub found: BTreeSet<u64>,
    /// The twin's text symbols, to place an invented start.
    pub text_symbols: BTreeSet<u64>,
    /// Seconds rea took to list the stripped build.
    pub seconds: f64,
}

impl Recall {
    /// The share of the twin's functions found.
    pub fn all(&self) -> f64 {
        let all: BTreeSet<u64> = self.functions.keys().copied().collect();
        all.intersection(&self.found).count() as f64 / all.len() as f64
    }

    /// The share of directly called functions found.
    pub fn of_called(&self) -> f64 {
        self.called.intersection(&self.found).count() as f64 / self.called.len() as f64
    }

    /// Starts found that are none of the twin's functions.
    pub fn invented(&self) -> Vec<u64> {
        self.found
            .iter()
            .copied()
            .filter(|a| !self.functions.contains_key(a))
            .collect()
    }

    /// Directly called functions not found.
    pub fn missed_called(&self) -> Vec<u64> {
        self.called.difference(&self.found).copied().collect()
    }
}

/// Builds Lua from `lua` for `arch` in `work` (the driver beside it) and measures discovery.
/// `unstripped` stripped by `strip` into `bare`, then without `.eh_frame`/`.eh_frame_hdr` (by
/// `objcopy`) into `stripped`: a file no table of which lists its functions.
pub fn strip_unwind(strip: &str, objcopy: &str, unstripped: &Path, bare: &Path, stripped: &Path) {
    run(
        strip,
        &["-o", bare.to_str().unwrap(), unstripped.to_str().unwrap()],
    );
    run(
        objcopy,
        &[
            "--remove-section",
            ".eh_frame",
            "--remove-section",
            ".eh_frame_hdr",
            bare.to_str().unwrap(),
            stripped.to_str().unwrap(),
        ],
    );
}

/// Lua built for `arch` in `work` at -O2 without unwind tables: the unstripped build, and its
/// twin stripped and without `.eh_frame`.
pub fn build(arch: &Arch, lua: &Path, work: &Path) -> (PathBuf, PathBuf) {
    let driver = work.join("driver.c");
    std::fs::write(&driver, DRIVER).unwrap();
    let mut sources: Vec<String> = std::fs::read_dir(lua)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "c")
                && !matches!(
                    p.file_name().and_then(|n| n.to_str()),
                    Some("lua.c" | "luac.c" | "onelua.c")
                )
        })
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    sources.sort();
    let unstripped = work.join(format!("lua-{}", arch.label));
    let bare = work.join(format!("lua-{}-bare", arch.label));
    let stripped = work.join(format!("lua-{}-stripped", arch.label));
    let include = format!("-I{}", lua.display());
    let mut args = vec![
        "-O2",
        "-fno-asynchronous-unwind-tables",
        "-fno-unwind-tables",
        "-DLUA_USE_LINUX",
        include.as_str(),
        "-o",
        unstripped.to_str().unwrap(),
        driver.to_str().unwrap(),
    ];
    args.extend(sources.iter().map(String::as_str));
    args.push("-lm");
    run(arch.cc, &args);
    strip_unwind(arch.strip, arch.objcopy, &unstripped, &bare, &stripped);
    (unstripped, stripped)
}

pub fn measure(arch: &Arch, lua: &Path, work: &Path) -> Recall {
    let (unstripped, stripped) = build(arch, lua, work);
    // Truth: the twin's function symbols (as rea lists them with the symbols, which adds
    // the PLT stubs) and the targets of its direct calls.
    let (twin, _) = list(&unstripped);
    let functions: BTreeMap<u64, String> = twin
        .iter()
        .map(|p| (p.address, p.name.clone().unwrap_or_default()))
        .collect();
    let text_symbols: BTreeSet<u64> = run(arch.nm, &[unstripped.to_str().unwrap()])
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 3 && matches!(f[1], "t" | "T"))
                .then(|| u64::from_str_radix(f[0], 16).ok())
                .flatten()
        })
        .collect();
    let mut called = BTreeSet::new();
    for line in run(arch.objdump, &["-d", unstripped.to_str().unwrap()]).lines() {
        let fields: Vec<&str> = line.split('\t').collect();
        if fields.len() < 3 {
            continue;
        }
        let op = fields[2].trim();
        let target = match op.split_whitespace().next() {
            Some("call") => op.strip_prefix("call").map(str::trim),
            Some("bl") if fields.len() > 3 => Some(fields[3].trim()),
            _ => None,
        };
        if let Some(t) = target.and_then(|t| t.split_whitespace().next())
            && let Ok(t) = u64::from_str_radix(t, 16)
            && functions.contains_key(&t)
        {
            called.insert(t);
        }
    }
    let (found, seconds) = list(&stripped);
    let found: BTreeSet<u64> = found.iter().map(|p| p.address).collect();
    Recall {
        functions,
        called,
        found,
        text_symbols,
        seconds,
    }
}
