//! Opening a file as an agent does (issue 30, item 3): the `open_binary` round trip over a bare
//! stdio pipe to `rea serve` (a fresh session each time: hashing the file, its inventory,
//! storing both and the Evidence), against the floor of hashing it and listing its inventory
//! with the reference tool, run on the same file in the same run: `sha256sum FILE` then
//! `llvm-objdump-14 --macho --function-starts FILE` for a Mach-O (`--syms` for an ELF, whose
//! functions the symbol tables list). Goal: ≤ 1.2× the floor. Runs are interleaved; medians are
//! compared. Reports ratios, never fails on times.
//!
//! Files: the largest Mach-O under the fixture directory (`REA_BENCH_MACHO` overrides: the
//! issue's figure is biome's, `npm pack @biomejs/cli-darwin-arm64@2.6.8`, `package/biome`),
//! `/usr/bin/gdb` and the C library (`REA_BENCH_ELF`, `REA_BENCH_LIBC` override); a missing file
//! is skipped. `REA_BENCH_RUNS` sets the runs (default 7). Run: `cargo bench --bench open`.

#[allow(dead_code)]
mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use common::stdio::Server;
use common::{Table, fmt_duration, fmt_ratio, meets};

/// The floor: the file hashed, then its inventory listed by the reference tool.
fn floor(path: &Path, macho: bool) -> Duration {
    let start = Instant::now();
    let inventory: &[&str] = if macho {
        &["--macho", "--function-starts"]
    } else {
        &["--syms"]
    };
    for (program, args) in [("sha256sum", &[][..]), ("llvm-objdump-14", inventory)] {
        let status = Command::new(program)
            .args(args)
            .arg(path)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap_or_else(|e| panic!("{program}: {e}"));
        assert!(status.success(), "{program} {}", path.display());
    }
    start.elapsed()
}

/// One `open_binary` round trip to a fresh server on an empty state directory (its start is
/// not timed).
fn open(path: &Path, state: &Path) -> Duration {
    let _ = std::fs::remove_dir_all(state);
    std::fs::create_dir_all(state).unwrap();
    let mut server = Server::start(state, "open-bench");
    let start = Instant::now();
    let opened = server.call(
        "tools/call",
        json!({"name": "open_binary", "arguments": {"path": path}}),
    );
    let took = start.elapsed();
    assert_ne!(opened["isError"], true, "{opened}");
    took
}

fn main() {
    let runs: usize = std::env::var("REA_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(7)
        .max(1);
    let given = |name: &str, default: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map_or_else(|| PathBuf::from(default), PathBuf::from)
    };
    let macho = std::env::var_os("REA_BENCH_MACHO")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| common::largest_macho(&common::fixtures()));
    let files = [
        macho,
        Some(given("REA_BENCH_ELF", "/usr/bin/gdb")),
        Some(given("REA_BENCH_LIBC", "/lib/x86_64-linux-gnu/libc.so.6")),
    ];
    let mut table = Table::new(&[
        "file",
        "size",
        "open_binary (median)",
        "sha256sum + llvm-objdump (median)",
        "ratio",
        "≤ 1.2×",
    ]);
    let scratch = common::scratch_dir("open");
    for path in files.into_iter().flatten() {
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        let macho = common::is_macho(&path);
        let state = scratch.join("state");
        let (mut own, mut anchor) = (Vec::new(), Vec::new());
        // Interleaved, so both see the same machine and the same page cache.
        for _ in 0..runs {
            own.push(open(&path, &state));
            anchor.push(floor(&path, macho));
        }
        let median = |samples: &[Duration]| common::Latency::of(samples).unwrap().p50;
        let (own, anchor) = (median(&own), median(&anchor));
        table.row(&[
            path.display().to_string(),
            format!("{:.1} MB", meta.len() as f64 / 1e6),
            fmt_duration(own),
            fmt_duration(anchor),
            fmt_ratio(own, anchor),
            meets(own.as_secs_f64() <= 1.2 * anchor.as_secs_f64()).to_string(),
        ]);
    }
    let markdown = format!(
        "open_binary over stdio against hashing plus the reference inventory, {runs} runs, {}\n\n{}",
        common::machine(),
        table.finish()
    );
    common::publish("open", &markdown);
}
