//! Session open and close (issue 2): `Session::create`, `Session::resume` and `Session::close`,
//! each against opening and closing the same SQLite file with bare rusqlite in the same run.
//!
//! Small sessions are created and closed in a scratch state directory. Resuming is also measured
//! on the cached ledgers (`REA_BENCH_ROWS`), where dropping the resumed session (which closes its
//! store and checkpoints) stands for closing without deleting; `close` deletes the session, so on
//! a large ledger it is measured on copies of the 1M-row ledger, a few samples only.

#[allow(dead_code)]
mod common;

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use rea::session::Session;

use common::{Latency, Table, fmt_duration, fmt_ratio, label, meets};

/// Times `f` alone in each iteration while `setup` and `teardown` run untimed around it.
fn timed<S, T>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    mut setup: impl FnMut() -> S,
    mut f: impl FnMut(S) -> T,
    mut teardown: impl FnMut(T),
) -> Option<Latency> {
    group
        .sample_size(30)
        .warm_up_time(Duration::from_millis(200))
        .measurement_time(Duration::from_secs(2));
    let mut samples = Vec::new();
    group.bench_function(name, |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let input = setup();
                let start = Instant::now();
                let output = black_box(f(input));
                let took = start.elapsed();
                teardown(output);
                total += took;
                samples.push(took);
            }
            total
        })
    });
    Latency::of(&samples)
}

/// The bare-SQLite baseline: open the file, read one row, close.
fn raw_open_close(db: &Path) {
    let conn = rusqlite::Connection::open(db).expect("open");
    let n: i64 = conn
        .query_row("select count(*) from meta", [], |r| r.get(0))
        .expect("query");
    black_box(n);
    drop(conn);
}

/// The second baseline: open a WAL database, commit one row durably (synchronous = FULL, as rea's
/// writer does), close. Session lifecycle costs a few such commits, so on a shared disk its times
/// follow fsync latency; this shows what one costs in the same run.
fn raw_commit(db: &Path) {
    let conn = rusqlite::Connection::open(db).expect("open");
    conn.execute_batch("pragma synchronous = full; insert into t (v) values (1);")
        .expect("commit");
    drop(conn);
}

struct Figure {
    what: String,
    rea: Option<Latency>,
    raw: Option<Latency>,
    /// Whether issue 2's open/close target applies (not to work done in the background).
    targeted: bool,
}

fn main() {
    common::child_entry();
    let mut criterion = common::criterion();
    let machine = common::machine();
    let started = Instant::now();
    let mut figures = Vec::new();

    // Small sessions.
    let state = common::scratch_dir("session");
    let mut group = criterion.benchmark_group("session/empty");
    let create = timed(
        &mut group,
        "create",
        || (),
        |()| Session::create(&state).expect("create"),
        |s| s.close().expect("close").wait().expect("delete"),
    );
    let close = timed(
        &mut group,
        "close",
        || Session::create(&state).expect("create"),
        |s| s.close().expect("close"),
        |deletion| deletion.wait().expect("delete"),
    );
    let kept = Session::create(&state).expect("create");
    let (id, db) = (
        kept.id().to_owned(),
        kept.dir().join(rea::session::DATABASE_FILE),
    );
    drop(kept);
    let resume = timed(
        &mut group,
        "resume",
        || (),
        |()| Session::resume(&state, &id).expect("resume"),
        drop,
    );
    let release = timed(
        &mut group,
        "drop",
        || Session::resume(&state, &id).expect("resume"),
        drop,
        |()| (),
    );
    let raw = timed(
        &mut group,
        "baseline: rusqlite open + query + close",
        || (),
        |()| raw_open_close(&db),
        |()| (),
    );
    let commit_db = state.join("commit.db");
    rusqlite::Connection::open(&commit_db)
        .and_then(|c| c.execute_batch("pragma journal_mode = wal; create table t (v integer);"))
        .expect("commit baseline database");
    let commit = timed(
        &mut group,
        "baseline: rusqlite open + one durable commit + close",
        || (),
        |()| raw_commit(&commit_db),
        |()| (),
    );
    group.finish();
    for (what, rea) in [
        ("create", create),
        ("close (deletes it)", close),
        ("resume", resume),
        ("drop after resume", release),
    ] {
        figures.push(Figure {
            targeted: true,
            what: format!("empty session: {what}"),
            rea,
            raw,
        });
    }

    // Resume on the cached ledgers.
    for rows in common::ledger_sizes() {
        let ledger = common::ensure_ledger(rows);
        let db = ledger.database();
        let mut group = criterion.benchmark_group(format!("session/{}", label(rows)));
        let resume = timed(&mut group, "resume", || (), |()| ledger.resume(), drop);
        let release = timed(&mut group, "drop", || ledger.resume(), drop, |()| ());
        let raw = timed(
            &mut group,
            "baseline: rusqlite open + query + close",
            || (),
            |()| raw_open_close(&db),
            |()| (),
        );
        group.finish();
        figures.push(Figure {
            targeted: true,
            what: format!("{} rows: resume", label(rows)),
            rea: resume,
            raw,
        });
        figures.push(Figure {
            targeted: true,
            what: format!("{} rows: drop after resume", label(rows)),
            rea: release,
            raw,
        });
    }

    // Close a 1M-row session: three copies, timed by hand (each copy is ~0.9 GB). `close`
    // returns once the session is gone from the listing; its files are deleted in the
    // background, which is timed separately.
    let ledger = common::ensure_ledger(1_000_000);
    let (mut closes, mut deletions) = (Vec::new(), Vec::new());
    for k in 0..3 {
        let copy = ledger.copy_to(&format!("session-close-{k}"));
        let session = copy.resume();
        let start = Instant::now();
        let deletion = session.close().expect("close");
        closes.push(start.elapsed());
        deletion.wait().expect("delete");
        deletions.push(start.elapsed());
        let _ = std::fs::remove_dir_all(&copy.state_dir);
    }
    figures.push(Figure {
        targeted: true,
        what: "1M rows: close, 3 samples".into(),
        rea: Latency::of(&closes),
        raw: None,
    });
    figures.push(Figure {
        targeted: false,
        what: "1M rows: close until the files are deleted (background), 3 samples".into(),
        rea: Latency::of(&deletions),
        raw: None,
    });
    criterion.final_summary();

    let mut text = format!(
        "## Session open and close (`cargo bench --bench session`)\n\n\
         Machine: {machine}. One run on a shared machine. Baselines: bare rusqlite on the same file \
         (open, read one row, close), and bare rusqlite opening a WAL file, committing one row with \
         synchronous = FULL and closing (one durable commit: {}).\n\n",
        commit
            .map(|c| format!("p50 {}, p99 {}", fmt_duration(c.p50), fmt_duration(c.p99)))
            .unwrap_or_else(|| "not run".into())
    );
    let mut table = Table::new(&[
        "operation",
        "p50",
        "p99",
        "baseline p50",
        "vs baseline",
        "in durable commits (p50)",
        "target ≤ 20 ms",
        "met",
    ]);
    for f in &figures {
        let Some(rea) = f.rea else { continue };
        table.row(&[
            f.what.clone(),
            fmt_duration(rea.p50),
            fmt_duration(rea.p99),
            f.raw
                .map(|r| fmt_duration(r.p50))
                .unwrap_or_else(|| "–".into()),
            f.raw
                .map(|r| fmt_ratio(rea.p50, r.p50))
                .unwrap_or_else(|| "–".into()),
            commit
                .map(|c| format!("{:.1}", rea.p50.as_secs_f64() / c.p50.as_secs_f64()))
                .unwrap_or_else(|| "–".into()),
            if f.targeted {
                "≤ 20 ms (p99)".into()
            } else {
                "none (background)".into()
            },
            if f.targeted {
                meets(rea.p99 <= Duration::from_millis(20)).into()
            } else {
                "–".into()
            },
        ]);
    }
    text.push_str(&table.finish());
    text.push_str(&format!(
        "\nMeasured in {:.0} s.\n",
        started.elapsed().as_secs_f64()
    ));
    common::publish("session", &text);
}
