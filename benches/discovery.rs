//! Discovery by following code (issue 27): recall of the procedures rea finds in Lua 5.4 built
//! without unwind tables (`-O2 -fno-asynchronous-unwind-tables -fno-unwind-tables`), stripped
//! and without `.eh_frame`, against the unstripped twin's function symbols, for x86-64 (gcc)
//! and AArch64 (aarch64-linux-gnu-gcc). "Directly called" are the functions some `call`/`bl` of
//! the twin's `objdump -d` targets; "invented" are starts the twin has no symbol for. Goals:
//! ≥ 99% of directly called, ≥ 95% of all, none invented.
//!
//! Lua's sources come from the `lua-src` crate in the cargo registry (`cargo fetch` puts it
//! there; `REA_BENCH_LUA` names a `lua-5.4*` directory instead). `REA_BENCH_BUN` names a large
//! ELF without `.eh_frame` (bun 1.4.5's `package/bin/bun` from `npm pack
//! @oven/bun-linux-x64@1.4.5`) to time once: open time and procedures found.
//! Run: `cargo bench --bench discovery`.

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

fn run(program: &str, args: &[&str]) -> String {
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
fn lua_sources() -> Option<PathBuf> {
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

struct Arch {
    label: &'static str,
    cc: &'static str,
    strip: &'static str,
    objcopy: &'static str,
    objdump: &'static str,
    nm: &'static str,
}

const ARCHES: [Arch; 2] = [
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

fn list(path: &Path) -> (Vec<Procedure>, f64) {
    let started = Instant::now();
    let target = admit(path).expect("admit");
    let out = procedures(&target.documents[0]).expect("procedures");
    (out, started.elapsed().as_secs_f64())
}

fn main() {
    let Some(lua) = lua_sources() else {
        eprintln!("no lua-src crate in the cargo registry (cargo fetch) and no REA_BENCH_LUA");
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let driver = work.path().join("driver.c");
    std::fs::write(&driver, DRIVER).unwrap();
    let mut sources: Vec<String> = std::fs::read_dir(&lua)
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
    println!("Lua sources: {}", lua.display());
    println!(
        "| arch | functions | directly called | found | recall (all) | recall (called) | invented | open |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for arch in &ARCHES {
        if Command::new(arch.cc).arg("--version").output().is_err() {
            continue;
        }
        let unstripped = work.path().join(format!("lua-{}", arch.label));
        let bare = work.path().join(format!("lua-{}-bare", arch.label));
        let stripped = work.path().join(format!("lua-{}-stripped", arch.label));
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
        run(
            arch.strip,
            &["-o", bare.to_str().unwrap(), unstripped.to_str().unwrap()],
        );
        run(
            arch.objcopy,
            &[
                "--remove-section",
                ".eh_frame",
                "--remove-section",
                ".eh_frame_hdr",
                bare.to_str().unwrap(),
                stripped.to_str().unwrap(),
            ],
        );
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
        let all: BTreeSet<u64> = functions.keys().copied().collect();
        let hit = all.intersection(&found).count();
        let hit_called = called.intersection(&found).count();
        let invented: Vec<u64> = found.difference(&all).copied().collect();
        println!(
            "| {} | {} | {} | {} | {:.2}% | {:.2}% | {} | {:.0} ms |",
            arch.label,
            all.len(),
            called.len(),
            found.len(),
            100.0 * hit as f64 / all.len() as f64,
            100.0 * hit_called as f64 / called.len() as f64,
            invented.len(),
            seconds * 1000.0
        );
        for a in called.difference(&found).take(20) {
            println!("  missed (called): {a:#x} {}", functions[a]);
        }
        for a in &invented {
            let symbol = text_symbols.range(..=*a).next_back();
            println!("  invented: {a:#x} (after the symbol at {symbol:#x?})");
        }
    }
    if let Some(bun) = std::env::var_os("REA_BENCH_BUN") {
        let (found, seconds) = list(Path::new(&bun));
        let by_walk = found.iter().filter(|p| p.found_by.is_some()).count();
        println!(
            "bun: {} procedures ({} found by following code) in {:.2} s",
            found.len(),
            by_walk,
            seconds
        );
    }
}
