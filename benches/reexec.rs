//! Re-execution of rea's pseudo-code (issue 27, item 7), as HumanEval-Decompile measures a
//! decompiler: the functions of `benches/reexec/functions.c` are compiled at -O0 and -O2 for
//! x86-64 (gcc) and AArch64 (aarch64-linux-gnu-gcc, run under qemu-aarch64); rea's pseudo-code of
//! each (through `rea serve`, as an agent gets it) is compiled again with gcc, with the few struct
//! definitions the sources use, and called on the same random inputs as the original. A function
//! re-executes correctly when every result and every buffer it writes agree on 1,000 inputs.
//!
//! The table gives the share per architecture and level, and why the rest failed: no pseudo-code,
//! pseudo-code that does not compile, a different result (the first input that differs is listed),
//! a crash or a timeout. Goal (the issue): ≥ 90% at -O0 and ≥ 75% at -O2 on x86-64.
//!
//! Environment: `REA_ANGR_PYTHON` (the angr venv's interpreter; without it nothing is measured),
//! `REA_REEXEC_ONLY` (comma-separated function names, to look at a few), `REA_REEXEC_CONFIGS`
//! (`x86_64-O0,aarch64-O2`, …; default all four), `REA_REEXEC_KEEP` (a directory to keep the
//! programs built in), `REA_BENCH_RESULTS` (see `common`).

#[allow(dead_code)]
mod common;
#[allow(dead_code)]
#[path = "reexec/harness.rs"]
mod harness;

use std::fmt::Write as _;
use std::path::PathBuf;

use common::Table;
use harness::{CONFIGS, Function, Outcome, functions, measure};

fn main() {
    let Some(python) = std::env::var_os("REA_ANGR_PYTHON").filter(|v| !v.is_empty()) else {
        eprintln!("reexec: REA_ANGR_PYTHON is not set; nothing measured");
        return;
    };
    let python = python.to_string_lossy().into_owned();
    let only: Vec<String> = std::env::var("REA_REEXEC_ONLY")
        .unwrap_or_default()
        .split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    let wanted: Vec<String> = std::env::var("REA_REEXEC_CONFIGS")
        .unwrap_or_default()
        .split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    let functions: Vec<Function> = functions()
        .into_iter()
        .filter(|f| only.is_empty() || only.contains(&f.name))
        .collect();
    // `REA_REEXEC_KEEP` names a directory that keeps each function's pseudo-code and driver.
    let scratch = tempfile::tempdir().unwrap();
    let root: PathBuf = std::env::var_os("REA_REEXEC_KEEP")
        .map(PathBuf::from)
        .unwrap_or_else(|| scratch.path().to_owned());
    let mut table = Table::new(&[
        "build",
        "functions",
        "re-execute correctly",
        "no pseudo-code",
        "do not compile",
        "differ",
        "crash/timeout",
        "wrong with no limitation",
        "right with a limitation",
    ]);
    let mut failures = String::new();
    let mut cautious_lines = String::new();
    for config in CONFIGS {
        if !wanted.is_empty() && !wanted.contains(&config.label()) {
            continue;
        }
        let dir: PathBuf = root.join(config.label());
        std::fs::create_dir_all(&dir).unwrap();
        let outcomes = measure(config, &functions, &python, &dir);
        let mut counts = [0usize; 5];
        let mut silent = 0usize;
        let mut cautious = Vec::new();
        for (name, (outcome, limitations)) in &outcomes {
            counts[outcome.column()] += 1;
            if matches!(outcome, Outcome::Correct) && !limitations.is_empty() {
                cautious.push(format!("{name} ({})", limitations.join("; ")));
            }
            if !matches!(outcome, Outcome::Correct) {
                if limitations.is_empty() {
                    silent += 1;
                }
                let said = if limitations.is_empty() {
                    "no limitation".to_owned()
                } else {
                    format!("{} limitations", limitations.len())
                };
                let _ = writeln!(
                    failures,
                    "- {} `{name}` ({said}): {:?}: {}",
                    config.label(),
                    outcome.column(),
                    outcome.detail()
                );
            }
        }
        let total = outcomes.len();
        table.row(&[
            config.label(),
            total.to_string(),
            format!(
                "{} ({:.1}%)",
                counts[0],
                100.0 * counts[0] as f64 / total.max(1) as f64
            ),
            counts[1].to_string(),
            counts[2].to_string(),
            counts[3].to_string(),
            counts[4].to_string(),
            silent.to_string(),
            cautious.len().to_string(),
        ]);
        for said in &cautious {
            let _ = writeln!(cautious_lines, "- {} {said}", config.label());
        }
        eprintln!("reexec: {} done", config.label());
    }
    let markdown = format!(
        "{}\nGoal: ≥ 90% at -O0 and ≥ 75% at -O2 on x86-64. Wrong with no limitation: failed with empty `limitations`, the case an agent cannot see. Right with a limitation: re-executes correctly although `limitations` names a doubt (a false alarm, or a doubt about a path the inputs never took). Failures (column: 1 no pseudo-code, 2 does not compile, 3 differs, 4 crash/timeout):\n\n{failures}\nRight with a limitation:\n\n{cautious_lines}",
        table.finish()
    );
    eprintln!("{markdown}");
    common::publish("reexec", &markdown);
}
