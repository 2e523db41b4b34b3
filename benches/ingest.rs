//! Ingest throughput (issue 2) and completion under a concurrent writer (issue 8).
//!
//! Ingest: Evidence rows per second through `Store::record`, the path every tool takes, with the
//! ledger's completion index (the unique index on `evidence.id`) maintained by every insert.
//! Many writers are tokio tasks awaiting `record` at once, so the store's writer thread commits
//! their rows together (group commit). The baseline is one writer awaiting each row in turn: one
//! transaction, and one fsync, per row, which is what a server without group commit does. Each
//! runs into an empty ledger of its own, and into a copy of the 1M-row ledger that all share.
//!
//! SQLite alone: for the 256-writer and batch figures, the same number of rows again through the
//! store's writer with only `insert_prepared` for each, in transactions of the same size (see
//! [`sqlite_alone`]). The ratio between the two is what rea's record path costs beyond SQLite and
//! the disk.
//!
//! Load: `Store::complete_evidence` p50/p99 for selective prefixes on the 1M-row copy, idle and
//! while 64 tasks insert rows without pause; the baseline is the idle figure of the same run.

#[allow(dead_code)]
mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rea::evidence::EvidenceRecord;
use rea::session::Session;
use rea::store::{PreparedEvidence, Store};

use common::{Latency, Table, fmt_duration, fmt_mib, fmt_ratio, label, meets};

/// Concurrent writers tried; 1 is the commit-per-row baseline.
const WRITERS: [usize; 4] = [1, 16, 64, 256];

/// Writers kept busy during the load benchmark.
const LOAD_WRITERS: usize = 64;

/// Record numbers handed to writers start here, far above any cached ledger's, so every row a
/// benchmark writes is new (no `new: false` shortcut).
const FIRST_RECORD: u64 = 1 << 40;

/// A small record: no subject, no locations (what a lookup that found little records).
fn small_record(i: u64) -> EvidenceRecord {
    let mut record = common::synthetic_record(i);
    record.subject = None;
    record.locations.clear();
    record
}

/// Mean canonical JSON size, in bytes, of the records `make` builds.
fn record_bytes(make: fn(u64) -> EvidenceRecord) -> usize {
    let sizes: Vec<usize> = (0..100u64)
        .map(|i| {
            make(FIRST_RECORD + i)
                .canonical_json()
                .expect("canonical")
                .len()
        })
        .collect();
    sizes.iter().sum::<usize>() / sizes.len()
}

/// Writes `rows` new records made by `make` with `writers` concurrent tasks and returns how
/// long it took.
fn ingest_records(
    rt: &tokio::runtime::Runtime,
    store: &Arc<Store>,
    next: &Arc<AtomicU64>,
    writers: usize,
    rows: u64,
    make: fn(u64) -> EvidenceRecord,
) -> Duration {
    let remaining = Arc::new(AtomicI64::new(rows as i64));
    let started = Instant::now();
    rt.block_on(async {
        let tasks: Vec<_> = (0..writers)
            .map(|_| {
                let (store, next, remaining) = (store.clone(), next.clone(), remaining.clone());
                tokio::spawn(async move {
                    while remaining.fetch_sub(1, Ordering::Relaxed) > 0 {
                        let record = make(next.fetch_add(1, Ordering::Relaxed));
                        let outcome = store.record(record).await.expect("record");
                        debug_assert!(outcome.new);
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.expect("writer task");
        }
    });
    started.elapsed()
}

/// Rows per write in the batch measurement.
const BATCH: u64 = 1000;

/// Writes `rows` new rows in batches of [`BATCH`] through `Store::record_many`, four batches in
/// flight: each task builds its records, `record_many` computes their canonical JSON and ids in
/// that task, and one write inserts them.
fn ingest_batches(
    rt: &tokio::runtime::Runtime,
    store: &Arc<Store>,
    next: &Arc<AtomicU64>,
    rows: u64,
) -> Duration {
    let remaining = Arc::new(AtomicI64::new(rows as i64));
    let started = Instant::now();
    rt.block_on(async {
        let tasks: Vec<_> = (0..4)
            .map(|_| {
                let (store, next, remaining) = (store.clone(), next.clone(), remaining.clone());
                tokio::spawn(async move {
                    loop {
                        let n = remaining
                            .fetch_sub(BATCH as i64, Ordering::Relaxed)
                            .min(BATCH as i64);
                        if n <= 0 {
                            break;
                        }
                        let first = next.fetch_add(n as u64, Ordering::Relaxed);
                        let batch = (first..first + n as u64)
                            .map(common::synthetic_record)
                            .collect();
                        store.record_many(batch).await.expect("record batch");
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.expect("batch task");
        }
    });
    started.elapsed()
}

/// Writes `rows` new rows through the store's writer with nothing of rea's record path but
/// `insert_prepared`: a thread prepares the records (canonical JSON and id) one transaction
/// ahead, as callers prepare records beside the writer, and each transaction is one
/// `Store::record_prepared_blocking` write that runs `insert_prepared` for `per_commit` of them. What is left is
/// SQLite's work and the disk's, on the writer's connection with its pragmas and checkpoints: what
/// the record path would reach at that group size if its own work cost nothing. Returns rows per
/// second.
fn sqlite_alone(store: &Store, next: &AtomicU64, rows: u64, per_commit: u64) -> f64 {
    let first = next.fetch_add(rows, Ordering::Relaxed);
    let started = Instant::now();
    std::thread::scope(|scope| {
        let (batches, ready) = std::sync::mpsc::sync_channel(1);
        scope.spawn(move || {
            for start in (first..first + rows).step_by(per_commit as usize) {
                let end = (start + per_commit).min(first + rows);
                let batch: Vec<PreparedEvidence> = (start..end)
                    .map(|i| PreparedEvidence::new(&common::synthetic_record(i)).expect("prepare"))
                    .collect();
                if batches.send(batch).is_err() {
                    return;
                }
            }
        });
        for batch in ready {
            store.record_prepared_blocking(batch).expect("write rows");
        }
    });
    rows as f64 / started.elapsed().as_secs_f64()
}

/// One ingest figure.
struct Figure {
    how: String,
    /// Rows per second; `None` when filtered out on the command line.
    rate: Option<f64>,
    /// Mean rows per committed transaction.
    per_commit: Option<f64>,
    /// Rows the measurement wrote, warm-up included.
    written: u64,
    /// The ledger's rows afterwards.
    rows_after: u64,
}

/// Runs `measure` and pairs its rate with the mean rows per committed transaction meanwhile.
fn with_group_size(
    store: &Store,
    measure: impl FnOnce() -> Option<f64>,
) -> (Option<f64>, Option<f64>) {
    let before = store.write_stats();
    let rate = measure();
    let after = store.write_stats();
    let commits = after.commits - before.commits;
    let writes = after.writes - before.writes;
    (rate, (commits > 0).then(|| writes as f64 / commits as f64))
}

/// Rows in the ledger of `store`.
fn ledger_rows(store: &Store) -> u64 {
    store.list_evidence(&Default::default()).expect("count").1
}

/// Where each measurement writes: a new empty session every time, or one ledger throughout.
enum Ledgers<'a> {
    Fresh(&'a std::path::Path),
    Shared(&'a Arc<Store>),
}

impl Ledgers<'_> {
    /// Runs `measure` on the next ledger and returns its figure, described as `how`.
    fn measure(
        &self,
        how: String,
        measure: impl FnOnce(&Arc<Store>) -> (Option<f64>, Option<f64>),
    ) -> Figure {
        let figure = |store: &Arc<Store>| {
            let rows_before = ledger_rows(store);
            let (rate, per_commit) = measure(store);
            let rows_after = ledger_rows(store);
            Figure {
                how,
                rate,
                per_commit,
                written: rows_after - rows_before,
                rows_after,
            }
        };
        match self {
            Ledgers::Fresh(state) => {
                let session = Session::create(state).expect("create session");
                let figure = figure(session.store());
                session
                    .close()
                    .expect("close session")
                    .wait()
                    .expect("delete session");
                figure
            }
            Ledgers::Shared(store) => figure(store),
        }
    }
}

/// A record path figure beside what SQLite alone reached at its group size.
struct Share {
    how: String,
    rate: f64,
    per_commit: u64,
    alone: f64,
}

/// For each of `figures`, measures [`sqlite_alone`] into `ledgers` with as many rows as the
/// figure's measurement wrote, at its mean group size.
fn sqlite_shares(ledgers: &Ledgers<'_>, next: &AtomicU64, figures: &[&Figure]) -> Vec<Share> {
    figures
        .iter()
        .filter_map(|figure| {
            let (rate, per_commit) = (figure.rate?, figure.per_commit?.round() as u64);
            let how = format!("SQLite alone, {per_commit} rows per commit");
            let alone = ledgers.measure(how, |store| {
                let rate = sqlite_alone(store, next, figure.written, per_commit);
                (Some(rate), None)
            });
            Some(Share {
                how: figure.how.clone(),
                rate,
                per_commit,
                alone: alone.rate?,
            })
        })
        .collect()
}

/// Rows per second at each writer count, into `ledgers`, and for the 256-writer and batch figures
/// what SQLite alone reaches at the same group size.
fn ingest_group(
    criterion: &mut criterion::Criterion,
    rt: &tokio::runtime::Runtime,
    name: &str,
    ledgers: &Ledgers<'_>,
    next: &Arc<AtomicU64>,
) -> (Vec<Figure>, Vec<Share>) {
    let mut group = criterion.benchmark_group(format!("ingest/{name}"));
    let mut figures: Vec<Figure> = WRITERS
        .iter()
        .map(|&writers| {
            let how = if writers == 1 {
                "`record`, 1 writer: a commit per row (baseline)".to_owned()
            } else {
                format!("`record`, {writers} concurrent writers (group commit)")
            };
            ledgers.measure(how, |store| {
                with_group_size(store, || {
                    common::throughput(&mut group, &format!("writers={writers}"), |rows| {
                        ingest_records(rt, store, next, writers, rows, common::synthetic_record)
                    })
                })
            })
        })
        .collect();
    let how = format!(
        "`record`, 256 concurrent writers, small records ({} B)",
        record_bytes(small_record)
    );
    figures.push(ledgers.measure(how, |store| {
        with_group_size(store, || {
            common::throughput(&mut group, "writers=256/small", |rows| {
                ingest_records(rt, store, next, 256, rows, small_record)
            })
        })
    }));
    // Each `record_many` is one write, so rows per commit is writes per commit times the batch.
    let how = format!("`record_many`, batches of {BATCH}, 4 in flight");
    figures.push(ledgers.measure(how, |store| {
        let (rate, writes_per_commit) = with_group_size(store, || {
            common::throughput(&mut group, "batch-1000", |rows| {
                ingest_batches(rt, store, next, rows)
            })
        });
        (rate, writes_per_commit.map(|w| w * BATCH as f64))
    }));
    group.finish();
    // The largest single-row groups and the batches.
    let compared = [&figures[WRITERS.len() - 1], &figures[figures.len() - 1]];
    let shares = sqlite_shares(ledgers, next, &compared);
    (figures, shares)
}

fn main() {
    common::child_entry();
    let mut criterion = common::criterion();
    let machine = common::machine();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let next = Arc::new(AtomicU64::new(FIRST_RECORD));
    let started = Instant::now();

    // Ingest into fresh ledgers: each measurement starts from an empty session.
    let state = common::scratch_dir("ingest-fresh");
    let (fresh, fresh_shares) =
        ingest_group(&mut criterion, &rt, "fresh", &Ledgers::Fresh(&state), &next);

    // Ingest into, then load on, a copy of the 1M-row ledger.
    let base_rows = 1_000_000;
    let ledger = common::ensure_ledger(base_rows).copy_to("ingest-1M");
    let session = ledger.resume();
    let store = session.store().clone();
    let prefixes = common::selective_prefixes(&store, base_rows);
    let (big, big_shares) = ingest_group(
        &mut criterion,
        &rt,
        &label(base_rows),
        &Ledgers::Shared(&store),
        &next,
    );

    let rss_reset = common::reset_peak_rss();
    let mut group = criterion.benchmark_group(format!("load/{}", label(base_rows)));
    let mut turn = 0usize;
    let idle = common::latency(&mut group, "complete_evidence/idle", || {
        turn += 1;
        store
            .complete_evidence(&prefixes[turn % prefixes.len()], 100)
            .expect("complete")
    });
    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicU64::new(0));
    let writer = {
        let (store, next, stop, written) =
            (store.clone(), next.clone(), stop.clone(), written.clone());
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .build()
                .expect("writer runtime");
            rt.block_on(async {
                let tasks: Vec<_> = (0..LOAD_WRITERS)
                    .map(|_| {
                        let (store, next, stop, written) =
                            (store.clone(), next.clone(), stop.clone(), written.clone());
                        tokio::spawn(async move {
                            while !stop.load(Ordering::Relaxed) {
                                let record =
                                    common::synthetic_record(next.fetch_add(1, Ordering::Relaxed));
                                store.record(record).await.expect("record");
                                written.fetch_add(1, Ordering::Relaxed);
                            }
                        })
                    })
                    .collect();
                for task in tasks {
                    task.await.expect("writer task");
                }
            });
        })
    };
    let load_started = Instant::now();
    let mut turn = 0usize;
    let busy = common::latency(&mut group, "complete_evidence/with-writer", || {
        turn += 1;
        store
            .complete_evidence(&prefixes[turn % prefixes.len()], 100)
            .expect("complete")
    });
    stop.store(true, Ordering::Relaxed);
    writer.join().expect("writer thread");
    let load_rate = written.load(Ordering::Relaxed) as f64 / load_started.elapsed().as_secs_f64();
    group.finish();
    let peak_rss = common::peak_rss();
    let total_rows = ledger_rows(&store);
    drop(store);
    drop(session);
    let _ = std::fs::remove_dir_all(&ledger.state_dir);
    criterion.final_summary();

    let mut text = format!(
        "## Ingest and completion under load (`cargo bench --bench ingest`)\n\n\
         Machine: {machine}. One run on a shared machine; compare ratios, not absolute figures. \
         Rows are written with `Store::record` (canonical JSON, id, duplicate and link checks, \
         insert with the id completion index maintained); synchronous = FULL, so every commit \
         waits for the disk. Records are {} bytes of canonical JSON unless marked small.\
         \n\n### Ingest, Evidence rows/s\n\n",
        record_bytes(common::synthetic_record)
    );
    let mut table = Table::new(&[
        "ledger",
        "how",
        "rows/s",
        "rows per commit (mean)",
        "ledger rows after",
        "vs 1 writer (commit per row)",
        "target ≥ 40k rows/s",
        "met",
    ]);
    for (name, figures) in [("empty", &fresh), ("1M rows", &big)] {
        let baseline = figures.first().and_then(|f| f.rate);
        for figure in figures {
            let Some(rate) = figure.rate else { continue };
            table.row(&[
                name.into(),
                figure.how.clone(),
                format!("{rate:.0}"),
                figure
                    .per_commit
                    .map(|g| format!("{g:.0}"))
                    .unwrap_or_else(|| "–".into()),
                figure.rows_after.to_string(),
                baseline
                    .map(|b| format!("{:.1}×", rate / b))
                    .unwrap_or_else(|| "–".into()),
                "≥ 40,000".into(),
                meets(rate >= 40_000.0).into(),
            ]);
        }
    }
    text.push_str(&table.finish());
    text.push_str(&format!(
        "\nEach `empty` row starts from a new session; the 1M rows are one copy written by every \
         measurement in turn, and held {total_rows} rows after the load run too.\n\n\
         ### What SQLite alone reaches at the same group sizes\n\n\
         As many rows as the record path's measurement wrote, into a ledger like the one it \
         started from (a new session; the 1M copy as it is by then), prepared (canonical JSON and \
         id) by a thread one transaction ahead and written by the store's writer in transactions \
         of the record path's mean group size, each running only `insert_prepared` for its rows \
         (same connection, pragmas and checkpoints). What the record path adds around that (a \
         job, a queue entry and an answer per record) is missing, so the ratio is what it costs \
         beyond SQLite and the disk; it moves by about 0.1 from run to run.\n\n"
    ));
    let mut table = Table::new(&[
        "ledger",
        "record path",
        "rows per commit",
        "record path rows/s",
        "SQLite alone rows/s",
        "record path / SQLite alone",
        "SQLite alone ≥ 40k rows/s",
    ]);
    for (name, shares) in [("empty", &fresh_shares), ("1M rows", &big_shares)] {
        for share in shares {
            table.row(&[
                name.into(),
                share.how.clone(),
                share.per_commit.to_string(),
                format!("{:.0}", share.rate),
                format!("{:.0}", share.alone),
                format!("{:.2}", share.rate / share.alone),
                meets(share.alone >= 40_000.0).into(),
            ]);
        }
    }
    text.push_str(&table.finish());
    text.push_str(
        "\n### Completion under load: `Store::complete_evidence(selective prefix, 100)` on the 1M copy\n\n",
    );
    let mut table = Table::new(&[
        "writer",
        "p50",
        "p99",
        "p99 vs idle",
        "issue 2 target (p50 ≤ 50 µs, p99 ≤ 500 µs)",
        "met",
    ]);
    let row = |table: &mut Table, name: String, l: Latency| {
        table.row(&[
            name,
            fmt_duration(l.p50),
            fmt_duration(l.p99),
            idle.map(|i| fmt_ratio(l.p99, i.p99))
                .unwrap_or_else(|| "–".into()),
            "p50 ≤ 50 µs, p99 ≤ 500 µs".into(),
            meets(l.p50 <= Duration::from_micros(50) && l.p99 <= Duration::from_micros(500)).into(),
        ]);
    };
    if let Some(l) = idle {
        row(&mut table, "none (baseline)".into(), l);
    }
    if let Some(l) = busy {
        row(
            &mut table,
            format!("{LOAD_WRITERS} tasks recording, {load_rate:.0} rows/s"),
            l,
        );
    }
    text.push_str(&table.finish());
    if let Some(rss) = peak_rss {
        text.push_str(&format!(
            "\nPeak RSS during the load run: {}{} (target ≤ 128 MiB: {}).\n",
            fmt_mib(rss),
            if rss_reset {
                ""
            } else {
                " (process peak; VmHWM not resettable)"
            },
            meets(rss <= 128 * 1024 * 1024)
        ));
    }
    text.push_str(&format!(
        "\nMeasured in {:.0} s.\n",
        started.elapsed().as_secs_f64()
    ));
    common::publish("ingest", &text);
}
