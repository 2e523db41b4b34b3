//! The `angr` decompiler provider (issue 20): the first pseudo-code of a procedure in a session
//! (worker start with angr's imports + load of the document + the procedure's CFG and
//! decompilation) and each later one (CFG and decompilation only, in the running worker), on
//! `/usr/bin/ls` and on 7za mac/x64. Goal: a later procedure in under 2 s on 7za.
//!
//! Later procedures rotate over 40 procedures spread evenly over the inventory (the session's
//! cache of recent results never answers them); a procedure angr fails on still counts, with its
//! time, and the failures are counted in the table.
//!
//! Environment: `REA_ANGR_PYTHON` (the angr venv's interpreter; without it nothing is measured),
//! `REA_FIXTURES` (else `.fixtures` beside the manifest), `REA_BENCH_RESULTS` (see `common`).

#[allow(dead_code)]
mod common;

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rea::providers::angr::Angr;
use rea::providers::decompile::{Decompiler, Timings};
use rea::providers::native::{Image, admit};

use common::{Latency, Table, fmt_duration, meets};

/// Procedures a "later" run rotates over.
const ROTATION: usize = 40;

fn load(path: &Path) -> Image {
    let target = admit(path).expect("admit");
    Image::load(&target.documents[0]).expect("load")
}

/// The procedure the first call decompiles: 7za's `GetPassword`, else the middle procedure of
/// at least 256 bytes.
fn first_procedure(image: &Image) -> u64 {
    if let Some(p) = image
        .procedures()
        .iter()
        .find(|p| p.name.as_deref() == Some("GetPassword(CStdOutStream*, bool)"))
    {
        return p.address;
    }
    let sized: Vec<u64> = image
        .procedures()
        .iter()
        .filter(|p| p.size.is_some_and(|s| s >= 256))
        .map(|p| p.address)
        .collect();
    sized[sized.len() / 2]
}

/// [`ROTATION`] procedures spread evenly over the inventory.
fn rotation(image: &Image) -> Vec<u64> {
    let all = image.procedures();
    (0..ROTATION)
        .map(|i| all[i * all.len() / ROTATION].address)
        .collect()
}

struct Run {
    path: PathBuf,
    procedures: usize,
    first_address: u64,
    first: Option<Latency>,
    first_parts: Timings,
    later: Option<Latency>,
    later_failures: usize,
    later_calls: usize,
}

fn main() {
    common::child_entry();
    let Ok(angr) = Angr::from_environment() else {
        eprintln!(
            "rea-bench: angr is not configured (REA_ANGR_PYTHON); run `bash .ci/angr-venv.sh` and \
             export REA_ANGR_PYTHON=$PWD/.venv-angr/bin/python. Nothing measured."
        );
        return;
    };
    let installation = angr.installation().clone();
    drop(angr);
    let mut criterion = common::criterion();
    let machine = common::machine();
    let files = [
        PathBuf::from("/usr/bin/ls"),
        common::fixtures().join("7zip-bin-5.2.0/package/mac/x64/7za"),
    ];
    let mut runs = Vec::new();
    for path in files.into_iter().filter(|p| p.is_file()) {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let image = load(&path);
        let first_address = first_procedure(&image);
        let mut group = criterion.benchmark_group(format!("angr/{name}"));
        let parts = Cell::new(Timings::default());
        let first = common::latency(&mut group, "first pseudo-code (worker start + CFG)", || {
            let mut angr = Angr::new(installation.clone());
            let done = angr
                .decompile(&image, first_address)
                .expect("the first procedure decompiles");
            parts.set(done.timings);
            done.code.lines.len()
        });
        let mut angr = Angr::new(installation.clone());
        angr.decompile(&image, first_address)
            .expect("the first procedure decompiles");
        let procedures = rotation(&image);
        let next = Cell::new(0usize);
        let failures = Cell::new(0usize);
        let calls = Cell::new(0usize);
        let later = common::latency(&mut group, "later pseudo-code (CFG + decompile)", || {
            let i = next.get();
            next.set(i + 1);
            calls.set(calls.get() + 1);
            let address = procedures[i % procedures.len()];
            match angr.decompile(&image, address) {
                Ok(done) => done.code.lines.len(),
                Err(_) => {
                    failures.set(failures.get() + 1);
                    0
                }
            }
        });
        group.finish();
        runs.push(Run {
            path,
            procedures: image.procedures().len(),
            first_address,
            first,
            first_parts: parts.get(),
            later,
            later_failures: failures.get(),
            later_calls: calls.get(),
        });
    }
    criterion.final_summary();

    let mut text = format!(
        "## angr pseudo-code (`cargo bench --bench angr`)\n\n\
         Machine: {machine}. One run on a shared machine. angr {}; the worker maps the document \
         as a blob and builds the CFG of the procedure's region only.\n\n",
        installation.version
    );
    let mut table = Table::new(&["file", "what", "p50", "p99", "mean", "later < 2 s (mean)"]);
    for run in &runs {
        let file = format!("`{}` ({} procedures)", run.path.display(), run.procedures);
        if let Some(first) = run.first {
            let p = run.first_parts;
            table.row(&[
                file.clone(),
                format!(
                    "first, {:#x}: start {} + load {} + CFG {} + decompile {}",
                    run.first_address,
                    p.start.map(fmt_duration).unwrap_or_default(),
                    p.load.map(fmt_duration).unwrap_or_default(),
                    fmt_duration(p.cfg),
                    fmt_duration(p.decompile)
                ),
                fmt_duration(first.p50),
                fmt_duration(first.p99),
                fmt_duration(first.mean),
                "–".into(),
            ]);
        }
        if let Some(later) = run.later {
            table.row(&[
                file,
                format!(
                    "later, {ROTATION} procedures in rotation ({} of {} calls failed)",
                    run.later_failures, run.later_calls
                ),
                fmt_duration(later.p50),
                fmt_duration(later.p99),
                fmt_duration(later.mean),
                meets(later.mean < Duration::from_secs(2)).into(),
            ]);
        }
    }
    text.push_str(&table.finish());
    common::publish("angr", &text);
}
