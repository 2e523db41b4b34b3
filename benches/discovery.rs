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

use std::path::Path;
use std::process::Command;

#[path = "discovery/lua.rs"]
mod lua;

use lua::{ARCHES, list, lua_sources, measure};

fn main() {
    let Some(lua) = lua_sources() else {
        eprintln!("no lua-src crate in the cargo registry (cargo fetch) and no REA_BENCH_LUA");
        return;
    };
    let work = tempfile::tempdir().unwrap();
    println!("Lua sources: {}", lua.display());
    println!(
        "| arch | functions | directly called | found | recall (all) | recall (called) | invented | open |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for arch in &ARCHES {
        if Command::new(arch.cc).arg("--version").output().is_err() {
            continue;
        }
        let r = measure(arch, &lua, work.path());
        let invented = r.invented();
        println!(
            "| {} | {} | {} | {} | {:.2}% | {:.2}% | {} | {:.0} ms |",
            arch.label,
            r.functions.len(),
            r.called.len(),
            r.found.len(),
            100.0 * r.all(),
            100.0 * r.of_called(),
            invented.len(),
            r.seconds * 1000.0
        );
        for a in r.missed_called().iter().take(20) {
            println!("  missed (called): {a:#x} {}", r.functions[a]);
        }
        for a in &invented {
            let symbol = r.text_symbols.range(..=*a).next_back();
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
