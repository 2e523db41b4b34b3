//! Audit commands near `sqlite3` (issue 30, item 2): `rea evidence export --jsonl`,
//! `rea evidence verify` and `resume_session` on one built ledger, each against its anchor
//! measured in the same run.
//!
//! - export: the built `rea` binary writing JSON lines, against `sqlite3 <db> "select record from
//!   evidence order by seq"` written to a file beside it, and against what an export cannot do
//!   without, measured in this process step by step: reading the rows and writing their lines,
//!   then hashing every record, then checking it is JSON;
//! - verify: the built `rea` binary, against its floor in this process: reading every row's
//!   record and hashing it (SHA-256, as the id is), then `PRAGMA integrity_check`; its peak RSS
//!   is the child's `ru_maxrss` from `wait4`;
//! - resume: `Session::resume` of the ledger, with no anchor but the 1 s the issue asks.
//!
//! The ledger has `REA_BENCH_AUDIT_ROWS` rows (default 1M; `10M` is the size for RSS and
//! resume, and takes a while to build once). Each command runs `REA_BENCH_AUDIT_RUNS` times
//! (default 3), interleaved with its anchor; the medians are compared. Reports ratios, never
//! fails on times.

#[allow(dead_code)]
mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use common::{Table, fmt_duration, fmt_mib, label};

/// Runs `cmd` to its end: its wall time and its peak RSS in bytes (`ru_maxrss` from `wait4`).
fn run_child(cmd: &mut Command) -> (Duration, u64) {
    let start = Instant::now();
    let child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start child");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value; wait4 fills it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child, with pointers to locals that outlive the call.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let took = start.elapsed();
    assert_eq!(waited, pid, "wait4");
    // The child was reaped by wait4; `child` must not wait again.
    std::mem::forget(child);
    assert!(libc::WIFEXITED(status), "child ended by a signal: {status}");
    // Linux reports ru_maxrss in KiB.
    (took, usage.ru_maxrss as u64 * 1024)
}

fn read_only(db: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .expect("open")
}

/// The verify floor: every row's record read in order and hashed, then `integrity_check`.
fn read_hash_check(db: &Path) -> Duration {
    let start = Instant::now();
    let conn = read_only(db);
    let mut stmt = conn
        .prepare("select id, record from evidence order by seq")
        .expect("prepare");
    let mut rows = stmt.query([]).expect("query");
    let mut bad = 0u64;
    while let Some(r) = rows.next().expect("row") {
        let id = r.get_ref(0).expect("id").as_bytes().expect("id text");
        let digest = Sha256::digest(r.get_ref(1).expect("record").as_bytes().expect("text"));
        if id.get(3..) != Some(hex::encode(digest).as_bytes()) {
            bad += 1;
        }
    }
    let ok: String = conn
        .query_row("pragma integrity_check", [], |r| r.get(0))
        .expect("integrity_check");
    assert!(bad == 0 && ok == "ok", "the built ledger is sound");
    start.elapsed()
}

/// What an export cannot do without, measured apart in this process: reading every row's id,
/// sequence number, time and record in order and writing each as a line to `out` (`Write`), then
/// the same with every record hashed against its id (`Hash`), then also checked to be JSON
/// (`Parse`): the steps between the plain dump and `rea evidence export --jsonl`.
#[derive(Clone, Copy, PartialEq, PartialOrd)]
enum Floor {
    Write,
    Hash,
    Parse,
}

fn export_floor(db: &Path, out: &Path, floor: Floor) -> Duration {
    use std::io::Write;
    let start = Instant::now();
    let conn = read_only(db);
    let mut stmt = conn
        .prepare("select seq, id, record, created_at from evidence order by seq")
        .expect("prepare");
    let mut rows = stmt.query([]).expect("query");
    let mut file = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(out).unwrap());
    let mut bad = 0u64;
    while let Some(r) = rows.next().expect("row") {
        let seq: i64 = r.get(0).expect("seq");
        let id = r.get_ref(1).expect("id").as_bytes().expect("id text");
        let record = r.get_ref(2).expect("record").as_bytes().expect("text");
        let created_at = r.get_ref(3).expect("created_at").as_bytes().expect("text");
        if floor >= Floor::Hash
            && id.get(3..) != Some(hex::encode(Sha256::digest(record)).as_bytes())
        {
            bad += 1;
        }
        if floor >= Floor::Parse && serde_json::from_slice::<serde::de::IgnoredAny>(record).is_err()
        {
            bad += 1;
        }
        file.write_all(b"{\"id\":\"").unwrap();
        file.write_all(id).unwrap();
        write!(file, "\",\"seq\":{seq},\"created_at\":\"").unwrap();
        file.write_all(created_at).unwrap();
        file.write_all(b"\",\"record\":").unwrap();
        file.write_all(record).unwrap();
        file.write_all(b"}\n").unwrap();
    }
    file.flush().unwrap();
    assert_eq!(bad, 0, "the built ledger is sound");
    start.elapsed()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ratio(a: Duration, b: Duration) -> String {
    format!("{:.2}×", a.as_secs_f64() / b.as_secs_f64())
}

fn main() {
    common::child_entry();
    let machine = common::machine();
    let started = Instant::now();
    let rows = std::env::var("REA_BENCH_AUDIT_ROWS")
        .ok()
        .and_then(|t| parse_rows(&t))
        .unwrap_or(1_000_000);
    let runs: usize = std::env::var("REA_BENCH_AUDIT_RUNS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(3)
        .max(1);
    let ledger = common::ensure_ledger(rows);
    let db = ledger.database();
    let rea = env!("CARGO_BIN_EXE_rea");
    let scratch = common::scratch_dir("audit");
    let out = scratch.join("export.jsonl");
    let dump = scratch.join("dump.txt");

    let (mut export, mut sqlite) = (vec![], vec![]);
    let mut floors: Vec<(Floor, Vec<Duration>)> = [Floor::Write, Floor::Hash, Floor::Parse]
        .into_iter()
        .map(|f| (f, vec![]))
        .collect();
    let (mut verify, mut floor, mut rss) = (vec![], vec![], vec![]);
    let mut resume = vec![];
    for _ in 0..runs {
        let _ = std::fs::remove_file(&out);
        let (t, _) = run_child(
            Command::new(rea)
                .arg("--state-dir")
                .arg(&ledger.state_dir)
                .args(["evidence", "export", "--jsonl", "--session", &ledger.id])
                .arg(&out),
        );
        export.push(t);
        let (t, _) = run_child(
            Command::new("sh")
                .arg("-c")
                .arg("exec sqlite3 \"$1\" 'select record from evidence order by seq' > \"$2\"")
                .arg("sh")
                .arg(&db)
                .arg(&dump),
        );
        sqlite.push(t);
        for (floor, times) in &mut floors {
            times.push(export_floor(&db, &dump, *floor));
        }

        let (t, peak) = run_child(
            Command::new(rea)
                .arg("--state-dir")
                .arg(&ledger.state_dir)
                .args(["evidence", "verify", "--session", &ledger.id]),
        );
        verify.push(t);
        rss.push(peak);
        floor.push(read_hash_check(&db));

        let start = Instant::now();
        let session = ledger.resume();
        resume.push(start.elapsed());
        drop(session);
    }
    let _ = std::fs::remove_dir_all(&scratch);

    let (export, sqlite) = (median(export), median(sqlite));
    let (verify, floor) = (median(verify), median(floor));
    let peak = rss.iter().copied().max().unwrap_or(0);
    let resume = median(resume);
    let mut table = Table::new(&[
        "command",
        "median",
        "anchor",
        "anchor median",
        "ratio",
        "target",
    ]);
    table.row(&[
        "`rea evidence export --jsonl`".into(),
        fmt_duration(export),
        "`sqlite3 db \"select record …\"` to a file".into(),
        fmt_duration(sqlite),
        ratio(export, sqlite),
        "≤ 1.5×".into(),
    ]);
    for (floor, times) in floors {
        let what = match floor {
            Floor::Write => "read every row, write its line (this process)",
            Floor::Hash => "… and SHA-256 every record against its id",
            Floor::Parse => "… and check every record is JSON (`IgnoredAny`)",
        };
        let took = median(times);
        table.row(&[
            "`rea evidence export --jsonl`".into(),
            fmt_duration(export),
            what.into(),
            fmt_duration(took),
            ratio(export, took),
            "the floor".into(),
        ]);
    }
    table.row(&[
        "`rea evidence verify`".into(),
        fmt_duration(verify),
        "read + SHA-256 every row + integrity_check".into(),
        fmt_duration(floor),
        ratio(verify, floor),
        "≤ 1.5×".into(),
    ]);
    table.row(&[
        "`rea evidence verify` peak RSS".into(),
        fmt_mib(peak),
        "–".into(),
        "–".into(),
        "–".into(),
        "≤ 64 MiB at 10M rows".into(),
    ]);
    table.row(&[
        "`Session::resume`".into(),
        fmt_duration(resume),
        "–".into(),
        "–".into(),
        "–".into(),
        "< 1 s at 10M rows".into(),
    ]);
    let text = format!(
        "## Audit commands (`cargo bench --bench audit`)\n\n\
         Machine: {machine}. Ledger of {} rows; medians of {runs} interleaved runs.\n\n{}\n\
         Measured in {:.0} s.\n",
        label(rows),
        table.finish(),
        started.elapsed().as_secs_f64()
    );
    common::publish("audit", &text);
}

/// `1M`, `250k`, `2000000`.
fn parse_rows(text: &str) -> Option<u64> {
    let t = text.trim().to_ascii_lowercase();
    let (digits, scale) = match t.strip_suffix('m') {
        Some(d) => (d, 1_000_000),
        None => match t.strip_suffix('k') {
            Some(d) => (d, 1_000),
            None => (t.as_str(), 1),
        },
    };
    digits.parse::<u64>().ok().map(|n| n * scale)
}
