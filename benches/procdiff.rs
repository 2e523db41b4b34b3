//! Function-level comparison and call paths (issue 18): `compare_images` on the 7-Zip pair
//! (`win/x64/7za.exe` of npm `7zip-bin` 5.1.1 and 5.2.0: 7-Zip 19.00 and 21.07, ≈5k procedures
//! each; goal under 10 s), the precision of the stripped comparison against unstripped twins
//! (a generated C program in two versions, built with gcc and mingw-w64 at -O2: the unstripped
//! pair matched by name is the truth), and `CallGraph::build` plus shortest-path queries on
//! `/usr/bin/gdb` (`REA_BENCH_ELF` overrides).
//!
//! Environment: `REA_FIXTURES` (the fixture root, else `.fixtures` beside the manifest),
//! `REA_BENCH_ELF`, `REA_BENCH_CORPUS` (functions in the generated program, default 1000). A
//! file or compiler that is missing is skipped.

#[allow(dead_code)]
mod common;

#[allow(dead_code)]
#[path = "../src/analyzers/procdiff/testdata/corpus.rs"]
mod corpus;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use rea::analyzers::callpaths::{CallGraph, PathQuery};
use rea::analyzers::procdiff::{ProcedureDiff, compare_images};
use rea::providers::native::{Image, admit};

use common::{Latency, Table, fmt_duration, meets};

fn load(path: &Path) -> Image {
    let target = admit(path).expect("admit");
    Image::load(&target.documents[0]).expect("load")
}

/// Compiles `source` at -O2 and strips a copy; `None` when the compiler is not installed.
/// `suffix` is the executable suffix the compiler adds (`.exe` for mingw-w64).
fn build(
    dir: &Path,
    (cc, tools, suffix): (&str, &str, &str),
    source: &str,
    name: &str,
) -> Option<(PathBuf, PathBuf)> {
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, source).ok()?;
    let plain = dir.join(format!("{name}{suffix}"));
    let stripped = dir.join(format!("{name}-stripped{suffix}"));
    let ok = Command::new(cc)
        .args(["-O2", "-o"])
        .arg(&plain)
        .arg(&src)
        .status()
        .ok()?
        .success();
    let stripped_ok = ok
        && Command::new(format!("{tools}strip"))
            .arg("-o")
            .arg(&stripped)
            .arg(&plain)
            .status()
            .ok()?
            .success();
    stripped_ok.then_some((plain, stripped))
}

fn procedures(image: &Image) -> Vec<(u64, Option<String>)> {
    image
        .procedures()
        .iter()
        .map(|p| (p.address, p.name.clone()))
        .collect()
}

fn pairs(diff: &ProcedureDiff) -> Vec<(Option<u64>, Option<u64>)> {
    diff.entries()
        .iter()
        .map(|e| {
            (
                e.left.as_ref().map(|s| s.address),
                e.right.as_ref().map(|s| s.address),
            )
        })
        .collect()
}

/// A deterministic sequence for picking query endpoints.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) as usize) % n.max(1)
    }
}

fn main() {
    common::child_entry();
    let mut criterion = common::criterion();
    let machine = common::machine();
    let started = Instant::now();
    let mut text = format!(
        "## Function-level comparison and call paths (`cargo bench --bench procdiff`)\n\n\
         Machine: {machine}. One run on a shared machine.\n\n"
    );

    // 1. The 7-Zip pair.
    let left = common::fixtures().join("7zip-bin-5.1.1/package/win/x64/7za.exe");
    let right = common::fixtures().join("7zip-bin-5.2.0/package/win/x64/7za.exe");
    if left.is_file() && right.is_file() {
        let (l, r) = (load(&left), load(&right));
        let mut group = criterion.benchmark_group("procdiff/7za.exe");
        let compare = common::latency(&mut group, "compare_images", || compare_images(&l, &r));
        let end_to_end = common::latency(&mut group, "load both + compare_images", || {
            compare_images(&load(&left), &load(&right))
        });
        group.finish();
        let diff = compare_images(&l, &r);
        let s = diff.summary();
        text.push_str("### `compare_images`: 7za.exe (x64) 19.00 → 21.07\n\n");
        let mut table = Table::new(&["what", "procedures", "p50", "max", "goal < 10 s", "met"]);
        for (what, latency) in [
            ("compare_images (images loaded)", compare),
            ("load both + compare_images", end_to_end),
        ] {
            let Some(latency) = latency else { continue };
            table.row(&[
                what.into(),
                format!("{} → {}", l.procedures().len(), r.procedures().len()),
                fmt_duration(latency.p50),
                fmt_duration(latency.p99),
                "< 10 s".into(),
                meets(latency.p99 < Duration::from_secs(10)).into(),
            ]);
        }
        text.push_str(&table.finish());
        text.push_str(&format!(
            "\nResult: status `{:?}`, {} unchanged, {} changed, {} added, {} removed; matched by \
             name {}, bytes {}, shape {}, similarity {}.\n\n",
            s.status,
            s.unchanged_total,
            s.changed_total,
            s.added_total,
            s.removed_total,
            s.matched_by.name,
            s.matched_by.bytes,
            s.matched_by.shape,
            s.matched_by.similarity
        ));
    }

    // 2. Precision against unstripped twins.
    let functions = std::env::var("REA_BENCH_CORPUS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let pair = corpus::generate(18, functions);
    let dir = common::scratch_dir("procdiff");
    let mut table = Table::new(&[
        "compiler",
        "procedures (v1 → v2)",
        "agree / considered",
        "agreement",
        "≥ 95 %",
        "stripped compare p50",
    ]);
    for chain in [
        ("gcc", "", ""),
        ("x86_64-w64-mingw32-gcc", "x86_64-w64-mingw32-", ".exe"),
        ("aarch64-linux-gnu-gcc", "aarch64-linux-gnu-", ""),
    ] {
        let cc = chain.0;
        let Some((p1, s1)) = build(&dir, chain, &pair.v1, &format!("{cc}-v1")) else {
            continue;
        };
        let Some((p2, s2)) = build(&dir, chain, &pair.v2, &format!("{cc}-v2")) else {
            continue;
        };
        let (l, r) = (load(&s1), load(&s2));
        let mut group = criterion.benchmark_group(format!("procdiff/corpus-{cc}"));
        let latency = common::latency(&mut group, "compare_images (stripped)", || {
            compare_images(&l, &r)
        });
        group.finish();
        let diff = compare_images(&l, &r);
        let (agree, considered) = corpus::agreement(
            &procedures(&load(&p1)),
            &procedures(&load(&p2)),
            &pairs(&diff),
        );
        let share = agree as f64 / considered.max(1) as f64;
        table.row(&[
            format!("`{cc} -O2`"),
            format!("{} → {}", l.procedures().len(), r.procedures().len()),
            format!("{agree} / {considered}"),
            format!("{:.2} %", share * 100.0),
            meets(share >= 0.95).into(),
            latency.map_or("–".into(), |l: Latency| fmt_duration(l.p50)),
        ]);
    }
    let _ = std::fs::remove_dir_all(&dir);
    text.push_str(&format!(
        "### Precision of the stripped comparison against unstripped twins\n\n\
         A generated C program of {functions} functions in two versions (6 % change constants, \
         4 % grow, 3 % are removed, 4 % are added), built at -O2 and stripped with `strip -o`. \
         The unstripped pair matched by name is the truth; a left procedure agrees when the \
         stripped pair gives it the same counterpart (or none), a new right procedure when it is \
         reported added.\n\n"
    ));
    text.push_str(&table.finish());

    // 3. Call paths on gdb.
    let elf = std::env::var_os("REA_BENCH_ELF")
        .map(PathBuf::from)
        .unwrap_or_else(|| "/usr/bin/gdb".into());
    if elf.is_file() {
        let image = load(&elf);
        let mut group = criterion.benchmark_group("procdiff/call_paths");
        let built = common::latency(&mut group, "CallGraph::build", || {
            CallGraph::build(&image).expect("graph")
        });
        let graph = CallGraph::build(&image).expect("graph");
        let starts: Vec<u64> = image.procedures().iter().map(|p| p.address).collect();
        // Queries start at the 20 procedures that call the most others (where a search has the
        // most to explore) and end at procedures picked at random; a pair without a path makes
        // the search cover everything within 12 calls, the worst case.
        let mut hubs: Vec<(usize, u64)> = starts
            .iter()
            .map(|&a| (image.callees(a).map_or(0, |c| c.callees.len()), a))
            .collect();
        hubs.sort_unstable_by(|a, b| b.cmp(a));
        let mut rng = Lcg(18);
        let queries: Vec<PathQuery> = hubs
            .iter()
            .take(20)
            .flat_map(|&(_, from)| {
                (0..10)
                    .map(|_| starts[rng.below(starts.len())])
                    .collect::<Vec<_>>()
                    .into_iter()
                    .map(move |to| PathQuery {
                        from,
                        to,
                        max_depth: 12,
                        limit: 10,
                        budget: Duration::from_secs(1),
                    })
            })
            .collect();
        let mut next = 0;
        let query = common::latency(
            &mut group,
            "paths (hub to random procedure, depth 12)",
            || {
                next = (next + 1) % queries.len();
                graph.paths(&queries[next]).expect("query")
            },
        );
        group.finish();
        let answers: Vec<_> = queries
            .iter()
            .map(|q| graph.paths(q).expect("query"))
            .collect();
        let found = answers.iter().filter(|a| a.shortest.is_some()).count();
        let deadline = answers.iter().filter(|a| a.deadline_hit).count();
        let longest = answers.iter().filter_map(|a| a.shortest).max().unwrap_or(0);
        let most = answers.iter().filter_map(|a| a.total).max().unwrap_or(0);
        text.push_str(&format!(
            "\n### `call_paths`: `{}`\n\n{} procedures; the graph has {} nodes and {} edges. \
             {} queries from the 20 procedures with the most callees to random procedures, depth \
             ≤ 12: {found} have a path (longest shortest path {longest} calls, most shortest \
             paths for one pair {most}), {deadline} hit the 1 s budget.\n\n",
            elf.display(),
            starts.len(),
            graph.node_count(),
            graph.edge_count(),
            queries.len()
        ));
        let mut table = Table::new(&["what", "p50", "p99"]);
        for (what, latency) in [("CallGraph::build", built), ("paths (one query)", query)] {
            let Some(latency) = latency else { continue };
            table.row(&[
                what.into(),
                fmt_duration(latency.p50),
                fmt_duration(latency.p99),
            ]);
        }
        text.push_str(&table.finish());
    }
    criterion.final_summary();
    text.push_str(&format!(
        "\nMeasured in {:.0} s.\n",
        started.elapsed().as_secs_f64()
    ));
    common::publish("procdiff", &text);
}
