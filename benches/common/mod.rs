//! Helpers shared by rea's benchmarks: settings from the environment, cached synthetic ledgers,
//! per-call latency samples taken under criterion, peak RSS, and the results summary.
//!
//! Every benchmark reports ratios against a baseline measured in the same run, never asserts an
//! absolute time, and prints its figures as a Markdown table on stderr at the end. With
//! `REA_BENCH_RESULTS=<file>` the table also replaces that benchmark's section of `<file>`.
//!
//! Environment:
//! - `REA_BENCH_ROWS`: ledger sizes, comma separated (`1M,10M`, `250k`, `2000000`). Default
//!   `1M,10M`.
//! - `REA_BENCH_DIR`: where built ledgers are cached (default `<target dir>/rea-bench`). A ledger
//!   is built once, in a child process (its memory never counts against the peak RSS measured
//!   here), and reused by later runs: on a shared 2-core VM the 1M-row ledger (0.9 GB) takes
//!   about 20 s and the 10M-row one (8.8 GB) about 8 minutes.
//! - `REA_BENCH_RESULTS`: a Markdown file whose section for each benchmark is kept up to date.
//! - `REA_FIXTURES`, `REA_BENCH_ELF`, `REA_BENCH_MACHO`: the files of `benches/procedures.rs`.

pub mod stdio;

use std::hint::black_box;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, SamplingMode};
use rea::evidence::{
    Authority, Confidence, EvidenceRecord, Location, ProviderStamp, Subject, canonical_json,
};
use rea::session::Session;

/// Environment variable that turns a bench binary into a ledger builder (see [`child_entry`]).
const BUILD_ROWS: &str = "REA_BENCH_BUILD_ROWS";
const BUILD_DIR: &str = "REA_BENCH_BUILD_DIR";

/// Version of the synthetic ledger layout (v2: with the hash chain of migration V7; v4: ids
/// counted by five-character prefix, migration V10); a cached ledger of another version is
/// rebuilt.
const GENERATOR: &str = "rea-bench-ledger-v4";

/// Rows the ledger builder sorts and inserts together.
const BUILD_CHUNK: u64 = 50_000;

/// The criterion driver every bench binary uses: arguments from `cargo bench`, short default
/// times (the machine is small and shared), no plots.
pub fn criterion() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .without_plots()
        .configure_from_args()
}

/// Ledger sizes from `REA_BENCH_ROWS`.
pub fn ledger_sizes() -> Vec<u64> {
    if std::env::var_os("REA_BENCH_ROWS").is_none() {
        return vec![1_000_000, 10_000_000];
    }
    ledger_sizes_from("REA_BENCH_ROWS")
}

/// Ledger sizes from the variable `name` (`1M,10M`); none when it is unset.
pub fn ledger_sizes_from(name: &str) -> Vec<u64> {
    let text = std::env::var(name).unwrap_or_default();
    text.split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| {
            parse_count(s.trim()).unwrap_or_else(|| panic!("{name}: {s:?} is not a row count"))
        })
        .collect()
}

fn parse_count(text: &str) -> Option<u64> {
    let lower = text.to_ascii_lowercase().replace('_', "");
    let (digits, scale) = match lower.as_bytes().last()? {
        b'k' => (&lower[..lower.len() - 1], 1_000),
        b'm' => (&lower[..lower.len() - 1], 1_000_000),
        _ => (&lower[..], 1),
    };
    digits.parse::<u64>().ok().map(|n| n * scale)
}

/// `1000000` → `1M`, for labels.
pub fn label(rows: u64) -> String {
    if rows >= 1_000_000 && rows.is_multiple_of(1_000_000) {
        format!("{}M", rows / 1_000_000)
    } else if rows >= 1_000 && rows.is_multiple_of(1_000) {
        format!("{}k", rows / 1_000)
    } else {
        rows.to_string()
    }
}

/// Where cached ledgers and scratch sessions live.
pub fn bench_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("REA_BENCH_DIR").filter(|v| !v.is_empty()) {
        return PathBuf::from(dir);
    }
    // The binary runs from `<target>/release/deps/`.
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            std::env::current_exe()
                .ok()
                .and_then(|exe| exe.ancestors().nth(3).map(Path::to_owned))
                .unwrap_or_else(|| PathBuf::from("target"))
        });
    target.join("rea-bench")
}

/// A fresh, empty directory under the bench directory, for sessions a benchmark throws away.
pub fn scratch_dir(name: &str) -> PathBuf {
    let dir = bench_dir().join("scratch").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch directory");
    dir
}

/// Operations the synthetic records cycle through.
const OPERATIONS: [&str; 6] = [
    "procedure_assembly",
    "analyze_function",
    "procedure_callers",
    "xrefs",
    "search_strings",
    "list_procedures",
];

/// The subject digest of every synthetic record.
const SUBJECT_SHA256: &str = "8f9c1d3be1d0c5f2c4a1e62b9d1c0a3b6f7e8d9c0b1a2f3e4d5c6b7a8f9e0d1c";

fn operation(i: u64) -> &'static str {
    OPERATIONS[(i % OPERATIONS.len() as u64) as usize]
}

/// The synthetic Evidence record number `i`: shaped like what `procedure_assembly` and friends
/// record for a 64-bit ELF target (subject, provider, parameters, a small result, one location).
/// Distinct `i` give distinct ids.
pub fn synthetic_record(i: u64) -> EvidenceRecord {
    let address = format!("0x{:x}", 0x40_0000 + i * 16);
    EvidenceRecord {
        subject: Some(Subject {
            name: "gdb".into(),
            sha256: SUBJECT_SHA256.into(),
            format: rea::vocabulary::Format::Elf,
            architecture: rea::vocabulary::Architecture::X86_64,
            path: "/usr/bin/gdb".into(),
        }),
        provider: ProviderStamp::builtin(),
        operation: operation(i).into(),
        parameters: serde_json::json!({ "address": address, "document": "gdb", "limit": 50 }),
        result: serde_json::json!({
            "procedure": format!("sub_{:x}", 0x40_0000 + i * 16),
            "instructions": i % 97,
            "callers": i % 13,
        }),
        confidence: Confidence::Observed,
        authority: Authority::ShippedArtifact,
        limitations: vec![],
        locations: vec![Location {
            document: Some("gdb".into()),
            address: Some(address),
            file: None,
            line: None,
        }],
        links: vec![],
    }
}

/// A built ledger: a real rea session directory holding `rows` synthetic Evidence rows.
#[derive(Debug, Clone)]
pub struct Ledger {
    /// The state directory the session lives under.
    pub state_dir: PathBuf,
    /// The session id.
    pub id: String,
    /// Evidence rows in it.
    pub rows: u64,
}

impl Ledger {
    /// The session database file.
    pub fn database(&self) -> PathBuf {
        self.state_dir
            .join("sessions")
            .join(&self.id)
            .join(rea::session::DATABASE_FILE)
    }

    /// Resumes the session (takes its lock; dropping the session releases it).
    pub fn resume(&self) -> Session {
        Session::resume(&self.state_dir, &self.id).expect("resume ledger session")
    }

    /// A copy of this ledger under a fresh state directory, for benchmarks that write into it.
    pub fn copy_to(&self, name: &str) -> Ledger {
        let state_dir = scratch_dir(name);
        let dir = state_dir.join("sessions").join(&self.id);
        std::fs::create_dir_all(&dir).expect("create session directory");
        let copy = dir.join(rea::session::DATABASE_FILE);
        std::fs::copy(self.database(), &copy).expect("copy ledger");
        // The chain's head goes with it, as it does with every session (`store/chain.rs`).
        std::fs::copy(
            rea::store::chain_head_path(&self.database()),
            rea::store::chain_head_path(&copy),
        )
        .expect("copy chain head");
        // On disk, as a session's database is after its commits (synchronous = FULL).
        std::fs::File::open(&copy)
            .and_then(|f| f.sync_all())
            .expect("sync ledger copy");
        Ledger {
            state_dir,
            id: self.id.clone(),
            rows: self.rows,
        }
    }
}

/// The cached ledger of `rows` rows, built first (in a child process) when it is missing or stale.
pub fn ensure_ledger(rows: u64) -> Ledger {
    let state_dir = bench_dir().join(format!("ledger-{}", label(rows)));
    if let Some(ledger) = find_ledger(&state_dir, rows) {
        return ledger;
    }
    // A bench whose `main` does not call `child_entry` first would start itself again and again.
    assert!(
        std::env::var_os(BUILD_ROWS).is_none(),
        "a ledger builder asked for a ledger: call common::child_entry() first in main"
    );
    let building = state_dir.with_extension("building");
    let _ = std::fs::remove_dir_all(&building);
    let _ = std::fs::remove_dir_all(&state_dir);
    std::fs::create_dir_all(&building).expect("create ledger directory");
    eprintln!(
        "rea-bench: building a {} row ledger in {} (once; cached for later runs)",
        label(rows),
        state_dir.display()
    );
    let started = Instant::now();
    let status = Command::new(std::env::current_exe().expect("current exe"))
        .env(BUILD_ROWS, rows.to_string())
        .env(BUILD_DIR, &building)
        .status()
        .expect("start ledger builder");
    assert!(status.success(), "ledger builder failed: {status}");
    std::fs::rename(&building, &state_dir).expect("move built ledger into place");
    eprintln!(
        "rea-bench: built {} rows in {:.1} s",
        label(rows),
        started.elapsed().as_secs_f64()
    );
    find_ledger(&state_dir, rows).expect("the ledger just built")
}

fn find_ledger(state_dir: &Path, rows: u64) -> Option<Ledger> {
    let sessions = rea::session::list(state_dir).ok()?;
    let info = sessions.into_iter().next()?;
    let conn = rusqlite::Connection::open_with_flags(
        state_dir
            .join("sessions")
            .join(&info.id)
            .join(rea::session::DATABASE_FILE),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .ok()?;
    let meta = |name: &str| -> Option<String> {
        conn.query_row("select value from meta where name = ?1", [name], |r| {
            r.get(0)
        })
        .ok()
    };
    (meta("rea_bench_generator").as_deref() == Some(GENERATOR)
        && meta("rea_bench_rows") == Some(rows.to_string()))
    .then(|| Ledger {
        state_dir: state_dir.to_owned(),
        id: info.id,
        rows,
    })
}

/// When this process was started by [`ensure_ledger`], builds the ledger and exits. Every bench
/// binary calls this first in `main`.
pub fn child_entry() {
    let (Ok(rows), Some(dir)) = (std::env::var(BUILD_ROWS), std::env::var_os(BUILD_DIR)) else {
        return;
    };
    let rows: u64 = rows.parse().expect("row count");
    build_ledger(Path::new(&dir), rows);
    std::process::exit(0);
}

/// One ledger row as `store::insert_prepared` writes it (`created_at` is added when it is
/// inserted); the ledger builder writes these directly.
pub struct Row {
    id: String,
    operation: String,
    subject_sha256: Option<String>,
    provider_id: String,
    provider_version: String,
    confidence: &'static str,
    authority: &'static str,
    record: String,
}

/// Inserts `rows` with the INSERT `store::insert_prepared` runs (no duplicate or link checks: the
/// rows are known to be new and unlinked).
pub fn insert_rows(conn: &rusqlite::Connection, rows: Vec<Row>) -> rusqlite::Result<()> {
    let created_at = rea::store::now_rfc3339();
    let mut insert = conn.prepare_cached(
        "insert into evidence (id, operation, subject_sha256, provider_id, provider_version, confidence, authority, created_at, record)
         values (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?;
    for r in rows {
        insert.execute(rusqlite::params![
            r.id,
            r.operation,
            r.subject_sha256,
            r.provider_id,
            r.provider_version,
            r.confidence,
            r.authority,
            created_at,
            r.record
        ])?;
    }
    Ok(())
}

/// The parts of every synthetic record's canonical JSON that do not depend on its number.
struct Template {
    provider: String,
    provider_id: String,
    subject: String,
    version: String,
}

impl Template {
    fn new() -> Template {
        let record = synthetic_record(0);
        Template {
            provider: canonical_json(&record.provider).expect("canonical provider"),
            subject: canonical_json(&record.subject).expect("canonical subject"),
            provider_id: record.provider.id,
            version: record.provider.version,
        }
    }

    /// The canonical JSON of `synthetic_record(i)`, written directly: RFC 8785 orders keys by
    /// UTF-16 code units, which for these ASCII keys is byte order. [`build_ledger`] checks it
    /// against `EvidenceRecord::canonical_json` on a sample of rows.
    fn canonical(&self, i: u64) -> String {
        let address = format!("0x{:x}", 0x40_0000 + i * 16);
        format!(
            "{{\"authority\":\"shipped-artifact\",\"confidence\":\"observed\",\"limitations\":[],\"links\":[],\
             \"locations\":[{{\"address\":\"{address}\",\"document\":\"gdb\"}}],\"operation\":\"{op}\",\
             \"parameters\":{{\"address\":\"{address}\",\"document\":\"gdb\",\"limit\":50}},\"provider\":{provider},\
             \"result\":{{\"callers\":{callers},\"instructions\":{instructions},\"procedure\":\"sub_{procedure:x}\"}},\
             \"subject\":{subject}}}",
            op = operation(i),
            provider = self.provider,
            callers = i % 13,
            instructions = i % 97,
            procedure = 0x40_0000 + i * 16,
            subject = self.subject,
        )
    }

    fn row(&self, i: u64) -> Row {
        let canonical = self.canonical(i);
        if i.is_multiple_of(100_003) {
            let reference = synthetic_record(i)
                .canonical_json()
                .expect("canonical JSON");
            assert_eq!(
                canonical, reference,
                "the ledger template drifted from EvidenceRecord::canonical_json"
            );
        }
        Row {
            id: rea::ids::EvidenceId::from_digest_of(canonical.as_bytes())
                .as_str()
                .to_owned(),
            operation: operation(i).to_owned(),
            subject_sha256: Some(SUBJECT_SHA256.to_owned()),
            provider_id: self.provider_id.clone(),
            provider_version: self.version.clone(),
            confidence: Confidence::Observed.as_str(),
            authority: Authority::ShippedArtifact.as_str(),
            record: canonical,
        }
    }
}

/// Builds the ledger. The session is real: `Session::create` makes its directory, schema (rea's
/// migrations), pragmas and meta. The rows are then written with rusqlite straight into that
/// schema, not through `Store::record`: a per-record build of 10M rows would take most of an hour
/// here. The INSERT is the one `store::insert_prepared` runs (without its per-row prefix count: the
/// counts are added once at the end), with the same column values for [`synthetic_record`]s; their
/// canonical JSON comes from a template checked against `canonical_json` on sampled rows. For speed
/// the build connection holds an exclusive lock with the journal off and a page cache (2 GiB) that
/// keeps the whole id index of 10M rows, writes every row in one transaction (so index pages are
/// written once, not at every commit), inserts [`BUILD_CHUNK`] rows at a time sorted by id (each
/// chunk's index inserts are local while the index as a whole grows in random order, as a real
/// ledger's does), and puts the database back into WAL mode at the end. A generator thread writes
/// and hashes the next chunk meanwhile.
fn build_ledger(state_dir: &Path, rows: u64) {
    let session = Session::create(state_dir).expect("create ledger session");
    let database = session.dir().join(rea::session::DATABASE_FILE);
    // Dropping (not closing) keeps the session on disk and releases its lock and connections.
    drop(session);
    let mut conn = rusqlite::Connection::open(&database).expect("open ledger database");
    conn.execute_batch(
        "pragma journal_mode = off; pragma synchronous = off; pragma locking_mode = exclusive;
         pragma cache_size = -2097152;",
    )
    .expect("build pragmas");
    let (tx, rx) = mpsc::sync_channel::<Vec<Row>>(2);
    let generator = std::thread::spawn(move || {
        let template = Template::new();
        let mut start = 0;
        while start < rows {
            let end = (start + BUILD_CHUNK).min(rows);
            let mut chunk: Vec<Row> = (start..end).map(|i| template.row(i)).collect();
            chunk.sort_unstable_by(|a, b| a.id.cmp(&b.id));
            if tx.send(chunk).is_err() {
                return;
            }
            start = end;
        }
    });
    let started = Instant::now();
    let mut done = 0u64;
    let tx = conn.transaction().expect("begin");
    for chunk in rx {
        done += chunk.len() as u64;
        insert_rows(&tx, chunk).expect("insert rows");
        if done.is_multiple_of(1_000_000) {
            eprintln!(
                "rea-bench: {} / {} rows ({:.0} rows/s)",
                label(done),
                label(rows),
                done as f64 / started.elapsed().as_secs_f64()
            );
        }
    }
    // The rows went in without rea's insert path, so their prefix counts are added here.
    tx.execute(
        &format!(
            "insert into evidence_id_prefixes (prefix, rows) select substr(id, 1, {}), count(*) from evidence group by 1",
            rea::store::COUNTED_PREFIX_CHARS
        ),
        [],
    )
    .expect("prefix counts");
    let head = chain_rows(&tx).expect("chain rows");
    tx.commit().expect("commit");
    write_chain_head(&database, head);
    generator.join().expect("generator thread");
    conn.execute_batch(&format!(
        "insert into meta (name, value) values ('rea_bench_rows', '{rows}'), ('rea_bench_generator', '{GENERATOR}');
         pragma locking_mode = normal; pragma journal_mode = wal;"
    ))
    .expect("finish ledger");
}

/// Adds the hash chain rows rea's insert path appends (`store/chain.rs`): one per Evidence row in
/// seq order, each sha256(previous hash ‖ "evidence" ‖ the digest of its id). Returns the last
/// seq and hash.
fn chain_rows(tx: &rusqlite::Connection) -> rusqlite::Result<(i64, [u8; 32])> {
    use sha2::{Digest, Sha256};
    let mut prev = [0u8; 32];
    let mut last = 0;
    let mut rows = tx.prepare("select seq, id from evidence order by seq")?;
    let mut insert = tx.prepare(
        "insert into ledger_chain (seq, kind, evidence_seq, digest, hash) values (?1, 'evidence', ?1, ?2, ?3)",
    )?;
    let mut read = rows.query([])?;
    while let Some(r) = read.next()? {
        let (seq, id): (i64, String) = (r.get(0)?, r.get(1)?);
        let mut digest = [0u8; 32];
        hex::decode_to_slice(&id[3..], &mut digest).expect("an Evidence id");
        let mut h = Sha256::new();
        h.update(prev);
        h.update(b"evidence");
        h.update(digest);
        prev = h.finalize().into();
        insert.execute(rusqlite::params![seq, &digest[..], &prev[..]])?;
        last = seq;
    }
    Ok((last, prev))
}

/// Writes the chain head file rea's writer keeps beside the database (`session.chain`), in the
/// store's own format.
fn write_chain_head(database: &Path, (seq, hash): (i64, [u8; 32])) {
    rea::store::write_chain_head(database, seq, hash, seq).expect("chain head file");
}

/// Peak resident set size of this process so far (`VmHWM`), in bytes.
pub fn peak_rss() -> Option<u64> {
    proc_status_kib("VmHWM:").map(|kib| kib * 1024)
}

fn proc_status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line[field.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

/// Resets `VmHWM` to the current RSS (Linux `clear_refs` 5), so the next reading is the peak of
/// what follows. Returns false where the kernel does not allow it. Memory that earlier
/// measurements freed is first handed back to the kernel: glibc keeps freed heap mapped, and the
/// peak would otherwise count it as held by whatever is measured next.
pub fn reset_peak_rss() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory of the allocator; it takes no pointers.
    unsafe {
        libc::malloc_trim(0);
    }
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Latency figures of one benchmark, from the per-call samples taken after warm-up.
#[derive(Debug, Clone, Copy)]
pub struct Latency {
    /// Calls measured.
    pub calls: usize,
    /// Median.
    pub p50: Duration,
    /// 99th percentile (nearest rank).
    pub p99: Duration,
    /// Mean.
    pub mean: Duration,
}

impl Latency {
    /// Figures of `samples` (any order); `None` when there are none (the benchmark was filtered
    /// out on the command line).
    pub fn of(samples: &[Duration]) -> Option<Latency> {
        if samples.is_empty() {
            return None;
        }
        let mut sorted = samples.to_vec();
        sorted.sort_unstable();
        let rank =
            |p: f64| sorted[((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1];
        let total: Duration = sorted.iter().sum();
        Some(Latency {
            calls: sorted.len(),
            p50: rank(0.50),
            p99: rank(0.99),
            mean: total / sorted.len() as u32,
        })
    }
}

/// Settings for a benchmark whose single call takes about `probe`: sub-millisecond calls get a
/// short criterion run (a second yields thousands of calls), calls up to 20 ms the usual one, and
/// slow ones ten flat samples of one call each after a single warm-up call, so a 10M-row naive
/// scan costs seconds rather than minutes. Returns how to recognize the warm-up calls, which
/// [`latency`] leaves out of its percentiles.
fn fit_group(group: &mut BenchmarkGroup<'_, WallTime>, probe: Duration) -> WarmUp {
    if probe > Duration::from_millis(20) {
        group
            .sampling_mode(SamplingMode::Flat)
            .sample_size(10)
            .warm_up_time(Duration::from_millis(1))
            .measurement_time(probe * 5);
        return WarmUp::FirstBatch;
    }
    let (warm_up, measure) = if probe > Duration::from_millis(1) {
        (Duration::from_millis(500), Duration::from_secs(2))
    } else {
        (Duration::from_millis(200), Duration::from_secs(1))
    };
    group
        .sampling_mode(SamplingMode::Auto)
        .sample_size(100)
        .warm_up_time(warm_up)
        .measurement_time(measure);
    WarmUp::For(warm_up)
}

/// Which of criterion's calls are its warm-up.
#[derive(Debug, Clone, Copy)]
pub enum WarmUp {
    /// Every call in this long after the first.
    For(Duration),
    /// The first batch criterion runs (one call, with a 1 ms warm-up time and slow calls).
    FirstBatch,
}

/// Benchmarks `f` under criterion and keeps the duration of every call made after criterion's
/// warm-up, for percentiles. Returns `None` when the benchmark was filtered out.
pub fn latency<R>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    name: &str,
    mut f: impl FnMut() -> R,
) -> Option<Latency> {
    let probe = {
        let start = Instant::now();
        black_box(f());
        start.elapsed()
    };
    if probe > Duration::from_secs(1) {
        // Ten criterion samples of a call this slow would take most of a minute; five timed
        // calls after the probe say enough.
        eprintln!(
            "rea-bench: {name}: {} per call; timing 5 calls without criterion",
            fmt_duration(probe)
        );
        let samples: Vec<Duration> = (0..5)
            .map(|_| {
                let start = Instant::now();
                black_box(f());
                start.elapsed()
            })
            .collect();
        return Latency::of(&samples);
    }
    let warm_up = fit_group(group, probe);
    let mut first: Option<Instant> = None;
    let mut batches = 0usize;
    let mut samples = Vec::new();
    group.bench_function(name, |b| {
        b.iter_custom(|iters| {
            let began = *first.get_or_insert_with(Instant::now);
            batches += 1;
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let start = Instant::now();
                black_box(f());
                let took = start.elapsed();
                total += took;
                let warming = match warm_up {
                    WarmUp::For(d) => start.duration_since(began) < d,
                    WarmUp::FirstBatch => batches == 1,
                };
                if !warming {
                    samples.push(took);
                }
            }
            total
        })
    });
    Latency::of(&samples)
}

/// Benchmarks a batch operation under criterion: `run(n)` does `n` units of work (rows written,
/// say) and returns how long they took. Returns units per second over every batch run after
/// criterion's warm-up, or `None` when the benchmark was filtered out.
pub fn throughput(
    group: &mut BenchmarkGroup<'_, WallTime>,
    name: &str,
    mut run: impl FnMut(u64) -> Duration,
) -> Option<f64> {
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .throughput(criterion::Throughput::Elements(1));
    let mut first: Option<Instant> = None;
    let (mut units, mut time) = (0u64, Duration::ZERO);
    group.bench_function(name, |b| {
        b.iter_custom(|iters| {
            let began = *first.get_or_insert_with(Instant::now);
            let warm = began.elapsed() >= Duration::from_millis(500);
            let took = run(iters);
            if warm {
                units += iters;
                time += took;
            }
            took
        })
    });
    (units > 0).then(|| units as f64 / time.as_secs_f64())
}

/// Hex digits after `ev_` that leave about `target` matches among `rows` uniformly random ids.
pub fn digits_for(rows: u64, target: f64) -> usize {
    (rows as f64 / target).log(16.0).round().max(0.0) as usize
}

/// Ids of `count` rows spread evenly over a ledger of `rows` rows, as sources of prefixes.
pub fn sample_ids(store: &rea::store::Store, rows: u64, count: u64) -> Vec<String> {
    let step = (rows / count).max(1);
    // The store keeps its SQL to itself; a bench may look with a connection of its own.
    let conn = rusqlite::Connection::open_with_flags(
        store.path(),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .expect("open the ledger read-only");
    let mut stmt = conn
        .prepare("select id from evidence where seq = ?1")
        .expect("prepare");
    (0..count.min(rows))
        .map(|k| {
            stmt.query_row([(1 + k * step) as i64], |r| r.get::<_, String>(0))
                .expect("sample ids")
        })
        .collect()
}

/// Selective prefixes (about ten matches each among `rows` rows) cut from sampled ids.
pub fn selective_prefixes(store: &rea::store::Store, rows: u64) -> Vec<String> {
    let digits = digits_for(rows, 10.0);
    sample_ids(store, rows, 64)
        .iter()
        .map(|id| id[..3 + digits.min(64)].to_owned())
        .collect()
}

/// A figure for the tables: microseconds below a millisecond, else milliseconds.
pub fn fmt_duration(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 1000.0 {
        format!("{us:.1} µs")
    } else if us < 1e6 {
        format!("{:.2} ms", us / 1000.0)
    } else {
        format!("{:.2} s", us / 1e6)
    }
}

/// `a / b` as a ratio for the tables.
pub fn fmt_ratio(a: Duration, b: Duration) -> String {
    let r = a.as_secs_f64() / b.as_secs_f64().max(1e-12);
    if r >= 100.0 {
        format!("{r:.0}×")
    } else {
        format!("{r:.1}×")
    }
}

/// `yes`/`NO` against a target, for the tables (informational: nothing is asserted).
pub fn meets(ok: bool) -> &'static str {
    if ok { "yes" } else { "NO" }
}

/// MiB with one decimal.
pub fn fmt_mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// The machine the figures come from: CPU model, cores, load when the run started.
pub fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default();
    format!("{cpu}, {cores} cores, load average {load} at start")
}

/// Prints a benchmark's summary on stderr and, with `REA_BENCH_RESULTS`, replaces its section in
/// that file.
pub fn publish(bench: &str, markdown: &str) {
    eprintln!("\n{markdown}");
    let Some(path) = std::env::var_os("REA_BENCH_RESULTS").filter(|v| !v.is_empty()) else {
        return;
    };
    let path = PathBuf::from(path);
    let begin = format!("<!-- bench:{bench} -->");
    let end = format!("<!-- /bench:{bench} -->");
    let old = std::fs::read_to_string(&path).unwrap_or_default();
    let section = format!("{begin}\n{}\n{end}", markdown.trim_end());
    let new = match (old.find(&begin), old.find(&end)) {
        (Some(b), Some(e)) if e > b => format!("{}{section}{}", &old[..b], &old[e + end.len()..]),
        _ if old.is_empty() => format!("# rea benchmark results\n\n{section}\n"),
        _ => format!("{}\n{section}\n", old.trim_end()),
    };
    match std::fs::File::create(&path).and_then(|mut f| f.write_all(new.as_bytes())) {
        Ok(()) => eprintln!("rea-bench: wrote the {bench} section of {}", path.display()),
        Err(e) => eprintln!("rea-bench: could not write {}: {e}", path.display()),
    }
}

/// A Markdown table under construction.
pub struct Table {
    text: String,
}

impl Table {
    /// A table with these column headers.
    pub fn new(headers: &[&str]) -> Table {
        let mut text = format!("| {} |\n", headers.join(" | "));
        text.push_str(&format!("|{}\n", "---|".repeat(headers.len())));
        Table { text }
    }

    /// Appends a row.
    pub fn row(&mut self, cells: &[String]) {
        self.text.push_str(&format!("| {} |\n", cells.join(" | ")));
    }

    /// The Markdown.
    pub fn finish(self) -> String {
        self.text
    }
}

/// The fixture directory: `REA_FIXTURES`, else `.fixtures` beside the manifest.
pub fn fixtures() -> PathBuf {
    std::env::var_os("REA_FIXTURES")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".fixtures"))
}

/// Whether the file starts like a Mach-O (thin or universal; a Java class shares the universal
/// magic, but its "architecture count" is a class-file version far above any real count).
pub fn is_macho(path: &Path) -> bool {
    let mut head = [0u8; 8];
    let Ok(mut f) = std::fs::File::open(path) else {
        return false;
    };
    if f.read_exact(&mut head).is_err() {
        return false;
    }
    let magic = u32::from_be_bytes([head[0], head[1], head[2], head[3]]);
    let count = u32::from_be_bytes([head[4], head[5], head[6], head[7]]);
    match magic {
        0xfeedface | 0xfeedfacf | 0xcefaedfe | 0xcffaedfe => true,
        0xcafebabe | 0xcafebabf => (1..=16).contains(&count),
        _ => false,
    }
}

/// The largest Mach-O file under `dir`.
pub fn largest_macho(dir: &Path) -> Option<PathBuf> {
    let mut best: Option<(u64, PathBuf)> = None;
    let mut stack = vec![dir.to_owned()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            if kind.is_dir() {
                stack.push(path);
            } else if kind.is_file() {
                let size = entry.metadata().map(|m| m.len()).unwrap_or(0);
                if best.as_ref().is_none_or(|(s, _)| size > *s) && is_macho(&path) {
                    best = Some((size, path));
                }
            }
        }
    }
    best.map(|(_, p)| p)
}
