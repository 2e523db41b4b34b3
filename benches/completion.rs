//! Completion latency over large ledgers (issues 2 and 3): `Store::complete_evidence(prefix, 100)`
//! and the server-side `rea::completion::complete` at each ledger size, against the naive
//! baseline most servers use, plus the peak RSS of the process at each size.
//!
//! The baseline keeps every Evidence id in memory and answers by re-normalizing each one with
//! `match_key`, keeping the matches, sorting them and cutting the first 100 (the semantics of
//! `complete_in_memory`, by reference so no id is copied). Both answer the same prefixes in the
//! same run; the tables report p50/p99 and the speed-up. Three cases per size: a selective
//! prefix (about 10 matches; 64 different prefixes in turn), a prefix with about 100k matches
//! (the hex digit count closest to that; the exact total is shown), and `ev_`, which every row
//! matches.
//!
//! Peak RSS is `VmHWM`, reset before each size's rea phase and read after it; the baseline runs
//! after every rea phase, so its memory (about 100 bytes per id) never counts against rea's.

#[allow(dead_code)]
mod common;

use std::time::Duration;

use rea::completion::{Family, complete, key::match_key};
use rea::store::{CompletionPage, Store};

use common::{Latency, Table, fmt_duration, fmt_mib, fmt_ratio, label, meets};

/// Values per answer, as the protocol allows.
const LIMIT: usize = 100;

/// One kind of prefix at one size.
#[derive(Clone)]
struct Case {
    name: &'static str,
    /// Prefixes answered in turn.
    prefixes: Vec<String>,
    /// rea's answer to the first prefix (for the correctness check against the baseline).
    answer: Option<CompletionPage>,
    rea: Option<Latency>,
    naive: Option<Latency>,
}

/// Figures of one ledger size.
struct SizeRun {
    rows: u64,
    cases: Vec<Case>,
    server_side: Option<Latency>,
    peak_rss: Option<u64>,
    rss_reset: bool,
}

fn cases(store: &Store, rows: u64) -> Vec<Case> {
    let ids = common::sample_ids(store, rows, 64);
    let prefixes = |digits: usize, n: usize| -> Vec<String> {
        ids.iter()
            .take(n)
            .map(|id| id[..3 + digits.min(64)].to_owned())
            .collect()
    };
    let case = |name, prefixes| Case {
        name,
        prefixes,
        answer: None,
        rea: None,
        naive: None,
    };
    let hundred_k = common::digits_for(rows, 100_000.0).max(1);
    let mut cases = vec![
        case(
            "selective (~10)",
            prefixes(common::digits_for(rows, 10.0), 64),
        ),
        case("~100k matches", prefixes(hundred_k, 8)),
    ];
    // When the nearest hex digit count leaves fewer than 100k matches, also time the next coarser
    // prefix (16 times as many), so the figures bracket 100k from both sides.
    if (rows as f64 / 16f64.powi(hundred_k as i32)) < 100_000.0 && hundred_k > 1 {
        cases.push(case(
            "~100k, next coarser prefix",
            prefixes(hundred_k - 1, 8),
        ));
    }
    cases.push(case("every row (`ev_`)", vec!["ev_".to_owned()]));
    // Issue 2's stretch target: typing one character over the whole ledger.
    cases.push(case("every row, one character (`e`)", vec!["e".to_owned()]));
    cases
}

/// Every id of the ledger, as a server that kept them in memory would hold them: in recording
/// order, which is random with respect to the ids, each string allocated in that order. Read from
/// the id index, not the table (the 10M-row table is 9 GB, its index under 1 GB), then put in a
/// fixed pseudo-random order and copied, so iteration walks the heap in allocation order.
fn load_ids(store: &Store) -> Vec<String> {
    // The store keeps its SQL to itself; the baseline reads with a connection of its own.
    let conn = rusqlite::Connection::open_with_flags(
        store.path(),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .expect("open the ledger read-only");
    let mut stmt = conn
        .prepare("select id from evidence order by id")
        .expect("prepare");
    let mut ids = stmt
        .query_map([], |r| r.get(0))
        .and_then(|rows| rows.collect::<Result<Vec<String>, _>>())
        .expect("load every id");
    // Fisher-Yates with xorshift64: deterministic, no dependency.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for i in (1..ids.len()).rev() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        ids.swap(i, (state % (i as u64 + 1)) as usize);
    }
    let copied = ids.iter().map(|id| id.as_str().to_owned()).collect();
    drop(ids);
    copied
}

/// The naive baseline: every id in memory, each re-normalized per request.
fn naive_complete<'a>(ids: &'a [String], typed: &str, limit: usize) -> (Vec<&'a str>, u64) {
    let prefix = match_key(typed);
    let mut matches: Vec<&str> = ids
        .iter()
        .filter(|id| match_key(id).starts_with(&prefix))
        .map(String::as_str)
        .collect();
    matches.sort_unstable();
    matches.dedup();
    let total = matches.len() as u64;
    matches.truncate(limit);
    (matches, total)
}

fn main() {
    common::child_entry();
    let mut criterion = common::criterion();
    let machine = common::machine();
    let sizes = common::ledger_sizes();
    let ledgers: Vec<common::Ledger> = sizes
        .iter()
        .map(|&rows| common::ensure_ledger(rows))
        .collect();
    let started = std::time::Instant::now();

    // Phase A: rea alone, size by size, with the peak RSS of each.
    let mut runs = Vec::new();
    for ledger in &ledgers {
        let rss_reset = common::reset_peak_rss();
        let session = ledger.resume();
        let store = session.store();
        let mut cases = cases(store, ledger.rows);
        let mut group =
            criterion.benchmark_group(format!("evidence-completion/{}", label(ledger.rows)));
        for case in &mut cases {
            case.answer = Some(
                store
                    .complete_evidence(&case.prefixes[0], LIMIT)
                    .expect("complete"),
            );
            let mut turn = 0usize;
            let prefixes = case.prefixes.clone();
            case.rea = common::latency(&mut group, &format!("rea/{}", case.name), || {
                turn += 1;
                store
                    .complete_evidence(&prefixes[turn % prefixes.len()], LIMIT)
                    .expect("complete")
            });
        }
        let selective = cases[0].prefixes.clone();
        let mut turn = 0usize;
        let server_side = common::latency(&mut group, "server-side complete()/selective", || {
            turn += 1;
            complete(
                Some(store),
                Family::Evidence,
                &selective[turn % selective.len()],
                None,
                LIMIT,
            )
        });
        group.finish();
        let peak_rss = common::peak_rss();
        assert_eq!(
            store.completion_reprepares(),
            0,
            "a cached completion statement was re-prepared"
        );
        drop(session);
        runs.push(SizeRun {
            rows: ledger.rows,
            cases,
            server_side,
            peak_rss,
            rss_reset,
        });
    }

    // Phase B: the naive baseline on the same ledgers and prefixes.
    for (ledger, run) in ledgers.iter().zip(&mut runs) {
        let session = ledger.resume();
        let ids = load_ids(session.store());
        drop(session);
        let mut group =
            criterion.benchmark_group(format!("evidence-completion/{}", label(ledger.rows)));
        for case in &mut run.cases {
            if let Some(answer) = &case.answer {
                let (values, total) = naive_complete(&ids, &case.prefixes[0], LIMIT);
                assert_eq!(
                    (values, total),
                    (
                        answer.values.iter().map(String::as_str).collect(),
                        answer.total
                    ),
                    "rea and the baseline disagree on {:?}",
                    case.prefixes[0]
                );
            }
            let mut turn = 0usize;
            let prefixes = case.prefixes.clone();
            case.naive = common::latency(&mut group, &format!("naive/{}", case.name), || {
                turn += 1;
                naive_complete(&ids, &prefixes[turn % prefixes.len()], LIMIT).1
            });
        }
        group.finish();
    }
    criterion.final_summary();

    let mut text = format!(
        "## Completion over large ledgers (`cargo bench --bench completion`)\n\n\
         Machine: {machine}. Figures are from one run on a shared machine; compare the ratios, not \
         the absolute times. Baseline: every id in memory, re-normalized with `match_key` per request.\n\n\
         ### `Store::complete_evidence(prefix, 100)` vs the naive scan\n\n"
    );
    let mut table = Table::new(&[
        "rows",
        "case",
        "prefix",
        "matches",
        "rea p50",
        "rea p99",
        "naive p50",
        "naive p99",
        "speed-up (p50)",
        "issue 2 target",
        "met",
    ]);
    for run in &runs {
        for case in &run.cases {
            let (Some(rea), Some(answer)) = (case.rea, &case.answer) else {
                continue;
            };
            let naive = case.naive;
            let ratio = naive.map(|n| n.p50.as_secs_f64() / rea.p50.as_secs_f64());
            let (target, ok) = match case.name {
                n if n.starts_with("selective") => {
                    let need = if run.rows >= 10_000_000 {
                        1000.0
                    } else {
                        100.0
                    };
                    (
                        format!("p50 ≤ 50 µs, p99 ≤ 500 µs, ≥ {need:.0}×"),
                        rea.p50 <= Duration::from_micros(50)
                            && rea.p99 <= Duration::from_micros(500)
                            && ratio.is_some_and(|r| r >= need),
                    )
                }
                "~100k matches" => (
                    "first 100 + total ≤ 50 ms (p99)".into(),
                    rea.p99 <= Duration::from_millis(50),
                ),
                n if n.ends_with("(`e`)") => {
                    ("stretch: < 5 ms".into(), rea.p99 < Duration::from_millis(5))
                }
                _ => ("none".into(), true),
            };
            table.row(&[
                label(run.rows),
                case.name.into(),
                format!("`{}`", case.prefixes[0]),
                answer.total.to_string(),
                fmt_duration(rea.p50),
                fmt_duration(rea.p99),
                naive
                    .map(|n| fmt_duration(n.p50))
                    .unwrap_or_else(|| "–".into()),
                naive
                    .map(|n| fmt_duration(n.p99))
                    .unwrap_or_else(|| "–".into()),
                naive
                    .map(|n| fmt_ratio(n.p50, rea.p50))
                    .unwrap_or_else(|| "–".into()),
                target,
                if target_is_none(case.name) {
                    "–".into()
                } else {
                    meets(ok).into()
                },
            ]);
        }
    }
    text.push_str(&table.finish());
    text.push_str(
        "\nSelective p50/p99 are over 64 different prefixes answered in turn. Calls slower than 20 ms \
         take ten flat samples, calls slower than 1 s five timed calls, so their p99 is their maximum.\n\n### Server side: `rea::completion::complete(Some(&store), Family::Evidence, prefix, None, 100)` (issue 3)\n\n",
    );
    let mut table = Table::new(&[
        "rows",
        "p50",
        "p99",
        "naive p50",
        "speed-up (p50)",
        "target p99 < 2 ms (1M)",
        "met",
    ]);
    for run in &runs {
        let Some(server) = run.server_side else {
            continue;
        };
        let naive = run.cases[0].naive;
        table.row(&[
            label(run.rows),
            fmt_duration(server.p50),
            fmt_duration(server.p99),
            naive
                .map(|n| fmt_duration(n.p50))
                .unwrap_or_else(|| "–".into()),
            naive
                .map(|n| fmt_ratio(n.p50, server.p50))
                .unwrap_or_else(|| "–".into()),
            "< 2 ms".into(),
            meets(server.p99 < Duration::from_millis(2)).into(),
        ]);
    }
    text.push_str(&table.finish());
    text.push_str("\n### Peak RSS while answering (VmHWM, reset before each size)\n\n");
    let mut table = Table::new(&["rows", "peak RSS", "target ≤ 128 MiB", "met"]);
    for run in &runs {
        let Some(rss) = run.peak_rss else { continue };
        table.row(&[
            format!(
                "{}{}",
                label(run.rows),
                if run.rss_reset {
                    ""
                } else {
                    " (VmHWM not resettable: process peak)"
                }
            ),
            fmt_mib(rss),
            "≤ 128 MiB".into(),
            meets(rss <= 128 * 1024 * 1024).into(),
        ]);
    }
    text.push_str(&table.finish());
    text.push_str(&format!(
        "\nMeasured in {:.0} s (ledgers already built).\n",
        started.elapsed().as_secs_f64()
    ));
    common::publish("completion", &text);
}

fn target_is_none(case: &str) -> bool {
    !(case.starts_with("selective") || case == "~100k matches" || case.ends_with("(`e`)"))
}
