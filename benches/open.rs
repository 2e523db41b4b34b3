//! Opening a file as an agent does (issue 30, item 3): the `open_binary` round trip over a bare
//! stdio pipe to `rea serve` (a fresh session each time: hashing the file, its inventory,
//! storing both and the Evidence), against the floor of hashing it and listing its inventory
//! with the reference tool, run on the same file in the same run: `sha256sum FILE` then
//! `llvm-objdump-14 --macho --function-starts FILE` for a Mach-O (`--syms` for an ELF, whose
//! functions the symbol tables list). Goal: ≤ 1.2× the floor. Runs are interleaved; medians are
//! compared. Reports ratios, never fails on times.
//!
//! A stripped file lists almost no functions, so the reference tool's inventory costs nothing
//! there while rea finds the functions by following the code. For x86-64 files a second floor is
//! measured in the same runs: hashing the file, then decoding every instruction of its code
//! sections once with `iced-x86`, in a linear pass that follows nothing and stores nothing (a
//! naive scan, the least any discovery does).
//!
//! Neither reference stores anything, and rea keeps every procedure and its completion values in
//! the session's database. A third floor, measured in the same runs, is that storing alone:
//! `sqlite3` copying the rows the open stored (procedures, completion values and their prefix
//! counts) into a new database with the same tables and keys, in one transaction, with nothing
//! parsed, formatted or checked. The least rea can take is an inventory floor plus it. The table
//! also gives the reference plus that storing as a multiple of the reference alone: where it is
//! above 1.2×, storing what the open must keep is enough to miss the goal, whatever the rest
//! costs.
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
use common::{Table, fmt_duration, meets};

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

/// The floor of finding functions where no table lists them: one linear pass decoding every
/// instruction of the file's code sections with `iced-x86` (what rea's discovery must at least
/// do, with nothing followed, stored or hashed), after `sha256sum` of the file. Only for
/// x86-64 files; `None` for others.
fn decode_floor(path: &Path) -> Option<Duration> {
    use object::{Object as _, ObjectSection as _, SectionKind};
    let start = Instant::now();
    let status = Command::new("sha256sum")
        .arg(path)
        .stdout(Stdio::null())
        .status()
        .ok()?;
    assert!(status.success(), "sha256sum {}", path.display());
    let data = std::fs::read(path).ok()?;
    let file = object::File::parse(&*data).ok()?;
    if file.architecture() != object::Architecture::X86_64 {
        return None;
    }
    let mut decoded = 0u64;
    for section in file.sections() {
        if section.kind() != SectionKind::Text {
            continue;
        }
        let Ok(bytes) = section.data() else { continue };
        let mut decoder = iced_x86::Decoder::with_ip(
            64,
            bytes,
            section.address(),
            iced_x86::DecoderOptions::NONE,
        );
        let mut instruction = iced_x86::Instruction::default();
        while decoder.can_decode() {
            decoder.decode_out(&mut instruction);
            decoded += 1;
        }
    }
    std::hint::black_box(decoded);
    Some(start.elapsed())
}

/// The tables an open fills with its inventory, in the order they are copied.
const INVENTORY_TABLES: [&str; 3] = [
    "procedures",
    "procedure_completions",
    "procedure_completion_prefixes",
];

/// The floor of storing an inventory: `sqlite3` copying the inventory rows of the session
/// database `database` into a new database at `copy`, whose tables have the session's own
/// definitions (keys included), in one transaction. Returns the time and the rows copied.
fn store_floor(database: &Path, copy: &Path) -> (Duration, u64) {
    let session =
        rusqlite::Connection::open_with_flags(database, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("open the session database");
    let mut script = format!(
        "pragma journal_mode = wal;\nattach '{}' as s;\nbegin;\n",
        database.display()
    );
    let mut rows = 0u64;
    for table in INVENTORY_TABLES {
        let (sql, count): (String, i64) = session
            .query_row(
                &format!(
                    "select (select sql from sqlite_master where type = 'table' and name = ?1), (select count(*) from {table})"
                ),
                [table],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .expect("the inventory table");
        rows += count.unsigned_abs();
        script.push_str(&format!(
            "{sql};\ninsert into main.{table} select * from s.{table};\n"
        ));
    }
    script.push_str("commit;\n");
    drop(session);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", copy.display()));
    }
    let start = Instant::now();
    let mut sqlite = Command::new("sqlite3")
        .arg(copy)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("sqlite3");
    use std::io::Write as _;
    sqlite
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    assert!(sqlite.wait().unwrap().success(), "sqlite3 {script}");
    (start.elapsed(), rows)
}

/// `a / b` with two decimals: the goal's 1.2× is too near for one.
fn ratio2(a: Duration, b: Duration) -> String {
    format!("{:.2}×", a.as_secs_f64() / b.as_secs_f64().max(1e-12))
}

/// One `open_binary` round trip to a fresh server on an empty state directory (its start is
/// not timed), then the store floor of what it stored.
fn open(path: &Path, state: &Path, copy: &Path) -> (Duration, Duration, u64) {
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
    let session = server.call(
        "tools/call",
        json!({"name": "binary_session", "arguments": {}}),
    );
    let database = session["structuredContent"]["database"]
        .as_str()
        .unwrap_or_else(|| panic!("binary_session: {session}"));
    let (stored, rows) = store_floor(Path::new(database), copy);
    (took, stored, rows)
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
        "reference + storing, × the reference",
        "sha256sum + linear decode of the code, iced-x86 (median)",
        "ratio to it",
        "sqlite3 storing the same rows (median)",
        "ratio to the least inventory floor + storing",
    ]);
    let scratch = common::scratch_dir("open");
    for path in files.into_iter().flatten() {
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        let macho = common::is_macho(&path);
        let state = scratch.join("state");
        let copy = scratch.join("copy.db");
        let (mut own, mut anchor, mut decoding, mut storing) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut rows = 0;
        // Interleaved, so all see the same machine and the same page cache.
        for _ in 0..runs {
            let (took, stored, copied) = open(&path, &state, &copy);
            own.push(took);
            storing.push(stored);
            rows = copied;
            anchor.push(floor(&path, macho));
            if let Some(took) = decode_floor(&path) {
                decoding.push(took);
            }
        }
        let median = |samples: &[Duration]| common::Latency::of(samples).unwrap().p50;
        let (own, anchor) = (median(&own), median(&anchor));
        let decoded = (!decoding.is_empty()).then(|| median(&decoding));
        let stored = median(&storing);
        let least = decoded.map_or(anchor, |d| d.min(anchor)) + stored;
        table.row(&[
            path.display().to_string(),
            format!("{:.1} MB", meta.len() as f64 / 1e6),
            fmt_duration(own),
            fmt_duration(anchor),
            ratio2(own, anchor),
            meets(own.as_secs_f64() <= 1.2 * anchor.as_secs_f64()).to_string(),
            ratio2(anchor + stored, anchor),
            decoded.map_or_else(|| "–".into(), fmt_duration),
            decoded.map_or_else(|| "–".into(), |d| ratio2(own, d)),
            format!("{} ({rows} rows)", fmt_duration(stored)),
            ratio2(own, least),
        ]);
    }
    let markdown = format!(
        "open_binary over stdio against hashing plus the reference inventory, {runs} runs, {}\n\n{}",
        common::machine(),
        table.finish()
    );
    common::publish("open", &markdown);
}
