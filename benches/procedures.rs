//! Procedure inventories of large binaries (issue 4): listing every procedure with the native
//! provider (`admit` + `procedures` for each document) against the symbol listers a person would
//! reach for, spawned on the same file in the same run, and opening a target (admit + procedures +
//! storing into a fresh session with `new_target` + `Store::open_target_blocking`; target 1.5 s).
//!
//! Files: `/usr/bin/gdb` (`REA_BENCH_ELF` overrides) and the largest Mach-O under the fixture
//! directory (`REA_FIXTURES`, else `.fixtures` beside the manifest; `REA_BENCH_MACHO` overrides:
//! issue 19's figure is biome's, `npm pack @biomejs/cli-darwin-arm64@2.6.8`, tarball sha256
//! 05a72143395eb2fc387393b51444c9662513673ab4f8bb415dc17b93ad71c8fb, file `package/biome`).
//! A file that is missing is skipped. External tools that are not installed are skipped. The
//! tools do not list the same thing: `nm` and `objdump --syms` print the symbol tables (a
//! stripped ELF has none; `nm -D` prints its dynamic symbols), `readelf --debug-dump=frames`
//! prints every unwind entry, the source of most starts in a stripped binary; the table shows what
//! each printed.

#[allow(dead_code)]
mod common;

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rea::investigation::new_target;
use rea::providers::native::{Target, admit, procedures};
use rea::session::Session;

use common::{Latency, Table, fmt_duration, fmt_ratio, meets};

/// Admits `path` and lists every procedure of every document.
fn list(path: &Path) -> (Target, Vec<Vec<rea::providers::native::Procedure>>) {
    let target = admit(path).expect("admit");
    let inventories = target
        .documents
        .iter()
        .map(|d| procedures(d).expect("procedures"))
        .collect();
    (target, inventories)
}

/// Runs an external tool to completion, draining its output; returns the number of lines it
/// printed, or `None` when it is not installed.
fn run_tool(program: &str, args: &[&str], path: &Path) -> Option<usize> {
    let mut child = Command::new(program)
        .args(args)
        .arg(path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut out = Vec::new();
    child.stdout.take()?.read_to_end(&mut out).ok()?;
    child.wait().ok()?;
    Some(out.iter().filter(|&&b| b == b'\n').count())
}

/// An external symbol lister: program and arguments (the file comes last).
type Lister = (String, Vec<&'static str>);

struct FileRun {
    path: PathBuf,
    documents: usize,
    procedures: usize,
    list: Option<Latency>,
    open: Option<Latency>,
    tools: Vec<(String, usize, Option<Latency>)>,
}

fn main() {
    common::child_entry();
    let mut criterion = common::criterion();
    let machine = common::machine();
    let started = Instant::now();
    let elf = std::env::var_os("REA_BENCH_ELF")
        .map(PathBuf::from)
        .unwrap_or_else(|| "/usr/bin/gdb".into());
    let macho = std::env::var_os("REA_BENCH_MACHO")
        .map(PathBuf::from)
        .or_else(|| common::largest_macho(&common::fixtures()));
    let llvm_objdump = ["llvm-objdump-14", "llvm-objdump"]
        .into_iter()
        .find(|t| Command::new(t).arg("--version").output().is_ok());
    let llvm_nm = ["llvm-nm-14", "llvm-nm"]
        .into_iter()
        .find(|t| Command::new(t).arg("--version").output().is_ok());

    let mut files: Vec<(PathBuf, Vec<Lister>)> = Vec::new();
    // rea's own command, spawned like the tools, so process start and output count alike.
    let rea_cli: Lister = (
        env!("CARGO_BIN_EXE_rea").into(),
        vec!["procedures", "--json"],
    );
    if elf.is_file() {
        files.push((
            elf,
            vec![
                rea_cli.clone(),
                ("nm".into(), vec![]),
                ("nm".into(), vec!["-D"]),
                ("objdump".into(), vec!["--syms"]),
                ("readelf".into(), vec!["--debug-dump=frames"]),
            ],
        ));
    }
    if let Some(macho) = macho.filter(|p| p.is_file()) {
        let mut tools = vec![rea_cli.clone()];
        if let Some(t) = llvm_objdump {
            tools.push((t.to_owned(), vec!["--syms"]));
            // What a function-start inventory is checked against (issue 19: within 1.5×).
            tools.push((t.to_owned(), vec!["--macho", "--function-starts"]));
        }
        if let Some(t) = llvm_nm {
            tools.push((t.to_owned(), vec![]));
        }
        files.push((macho, tools));
    }

    let state = common::scratch_dir("procedures");
    let mut runs = Vec::new();
    for (path, tools) in files {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let (target, inventories) = list(&path);
        let procedures = inventories.iter().map(Vec::len).sum();
        let mut group = criterion.benchmark_group(format!("procedures/{name}"));
        let listed = common::latency(&mut group, "rea: admit + procedures", || list(&path));
        let mut tool_figures = Vec::new();
        for (program, args) in &tools {
            let Some(lines) = run_tool(program, args, &path) else {
                continue;
            };
            let label = format!("{program} {}", args.join(" ")).trim().to_owned();
            let latency = common::latency(&mut group, &label, || run_tool(program, args, &path));
            tool_figures.push((label, lines, latency));
        }
        // Opening: a fresh session each time, so the target is really inserted, not re-activated.
        group
            .sampling_mode(criterion::SamplingMode::Flat)
            .sample_size(10)
            .warm_up_time(Duration::from_millis(1))
            .measurement_time(Duration::from_secs(5));
        let mut samples = Vec::new();
        group.bench_function("open target (admit + procedures + store)", |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let session = Session::create(&state).expect("session");
                    let start = Instant::now();
                    let (target, inventories) = list(&path);
                    session
                        .store()
                        .open_target_blocking(new_target(&target, inventories))
                        .expect("open target");
                    let took = start.elapsed();
                    samples.push(took);
                    total += took;
                    session.close().expect("close").wait().expect("delete");
                }
                total
            })
        });
        group.finish();
        runs.push(FileRun {
            path,
            documents: target.documents.len(),
            procedures,
            list: listed,
            open: Latency::of(&samples),
            tools: tool_figures,
        });
    }
    criterion.final_summary();

    let mut text = format!(
        "## Procedure inventories (`cargo bench --bench procedures`)\n\n\
         Machine: {machine}. One run on a shared machine. External tools are spawned on the same \
         file in the same run (process start and output included, as a person would run them).\n\n"
    );
    let mut table = Table::new(&[
        "file",
        "what",
        "output",
        "p50",
        "p99",
        "rea listing ÷ this (p50)",
    ]);
    for run in &runs {
        let file = format!("`{}`", run.path.display());
        if let Some(list) = run.list {
            table.row(&[
                file.clone(),
                "rea: admit + procedures (every document)".into(),
                format!(
                    "{} procedures in {} document(s)",
                    run.procedures, run.documents
                ),
                fmt_duration(list.p50),
                fmt_duration(list.p99),
                "1×".into(),
            ]);
        }
        for (tool, lines, latency) in &run.tools {
            let Some(latency) = latency else { continue };
            table.row(&[
                file.clone(),
                format!("`{tool}`"),
                format!("{lines} lines"),
                fmt_duration(latency.p50),
                fmt_duration(latency.p99),
                run.list
                    .map(|l| fmt_ratio(l.p50, latency.p50))
                    .unwrap_or_else(|| "–".into()),
            ]);
        }
    }
    text.push_str(&table.finish());
    text.push_str("\n### Opening a target (admit + procedures + `new_target` + `Store::open_target_blocking`, fresh session)\n\n");
    let mut table = Table::new(&[
        "file",
        "procedures",
        "p50",
        "max",
        "vs listing alone",
        "target ≤ 1.5 s",
        "met",
    ]);
    for run in &runs {
        let Some(open) = run.open else { continue };
        table.row(&[
            format!("`{}`", run.path.display()),
            run.procedures.to_string(),
            fmt_duration(open.p50),
            fmt_duration(open.p99),
            run.list
                .map(|l| fmt_ratio(open.p50, l.p50))
                .unwrap_or_else(|| "–".into()),
            "≤ 1.5 s".into(),
            meets(open.p99 <= Duration::from_millis(1500)).into(),
        ]);
    }
    text.push_str(&table.finish());
    text.push_str(&format!(
        "\nMeasured in {:.0} s.\n",
        started.elapsed().as_secs_f64()
    ));
    common::publish("procedures", &text);
}
