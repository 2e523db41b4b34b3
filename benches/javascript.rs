//! JavaScript/Electron analysis on generated applications of growing size (issue 16): a main
//! process of N `ipcMain.handle` calls, in three shapes — literal channels, computed channels
//! (one `<dynamic>` channel with N handlers), and arrow handlers whose channels a preload invokes
//! (every channel matched across processes) — for N from 10k to 300k (`REA_BENCH_JS_SIZES`,
//! comma separated, overrides). For each input: time of `javascript::analyze`, time per input
//! megabyte and its ratio to the smallest input's (1.0 is linear), peak RSS of the analysis
//! (`VmHWM` after a reset), the size of the result as JSON, and the time to make the Evidence
//! record of it as the tool does (`serde_json::to_value`, then canonical JSON): before results
//! were capped, that step, not the analysis, was what grew faster than the input (300,000
//! literal channels: a 186 MB result, 40 s and 3 GiB in the server).

#[allow(dead_code)]
mod common;

use std::path::{Path, PathBuf};
use std::time::Instant;

use common::{Table, fmt_duration, fmt_mib};
use rea::analyzers::javascript;

/// The shapes of generated applications.
const SHAPES: [&str; 3] = ["literal", "computed", "matched"];

fn sizes() -> Vec<usize> {
    std::env::var("REA_BENCH_JS_SIZES")
        .ok()
        .filter(|s| !s.trim().is_empty())
        .map(|s| {
            s.split(',')
                .filter_map(|p| {
                    let p = p.trim().to_ascii_lowercase();
                    match p.strip_suffix('k') {
                        Some(k) => k.parse::<usize>().ok().map(|n| n * 1000),
                        None => p.parse().ok(),
                    }
                })
                .collect()
        })
        .unwrap_or_else(|| vec![10_000, 30_000, 100_000, 300_000])
}

/// Writes an application of `n` handlers of `shape` under `dir`; returns its source bytes.
fn generate(dir: &Path, shape: &str, n: usize) -> u64 {
    use std::fmt::Write as _;
    std::fs::create_dir_all(dir).expect("app dir");
    std::fs::write(
        dir.join("package.json"),
        r#"{"name":"bench","main":"main.js","devDependencies":{"electron":"30.0.0"}}"#,
    )
    .expect("package.json");
    let mut main = String::from(
        "const { app, BrowserWindow, ipcMain } = require('electron');\n\
         const path = require('path');\n\
         function reply(event, value) { return value; }\n\
         app.whenReady().then(() => {\n  const w = new BrowserWindow({ webPreferences: { preload: path.join(__dirname, 'preload.js') } });\n  w.loadFile('index.html');\n});\n",
    );
    let mut preload = String::from("const { contextBridge, ipcRenderer } = require('electron');\n");
    for i in 0..n {
        match shape {
            "literal" => writeln!(main, "ipcMain.handle('channel-{i}', reply);"),
            "computed" => writeln!(main, "ipcMain.handle('channel-' + {i}, reply);"),
            _ => {
                writeln!(preload, "ipcRenderer.invoke('channel-{i}', {i});").expect("write");
                writeln!(main, "ipcMain.handle('channel-{i}', async (e, v) => v);")
            }
        }
        .expect("write");
    }
    std::fs::write(dir.join("main.js"), &main).expect("main.js");
    std::fs::write(dir.join("preload.js"), &preload).expect("preload.js");
    std::fs::write(dir.join("index.html"), "<html><body></body></html>").expect("index.html");
    (main.len() + preload.len()) as u64
}

struct Run {
    shape: &'static str,
    handlers: usize,
    bytes: u64,
    p50: std::time::Duration,
    peak: Option<u64>,
    json: usize,
    record_time: std::time::Duration,
    canonical: usize,
}

fn main() {
    common::child_entry();
    let mut criterion = common::criterion();
    let machine = common::machine();
    let started = Instant::now();
    let scratch: PathBuf = common::scratch_dir("javascript");
    let mut runs = Vec::new();
    for shape in SHAPES {
        let mut group = criterion.benchmark_group(format!("javascript/{shape}"));
        for n in sizes() {
            let dir = scratch.join(format!("{shape}-{n}"));
            let bytes = generate(&dir, shape, n);
            let measured_peak = common::reset_peak_rss();
            let analysis = javascript::analyze(&dir, &mut |_| {}).expect("analysis");
            let peak = measured_peak.then(common::peak_rss).flatten();
            let json = serde_json::to_vec(&analysis).expect("json").len();
            let recording = Instant::now();
            let record = rea::evidence::EvidenceRecord {
                subject: None,
                provider: rea::evidence::ProviderStamp::builtin(),
                operation: "analyze_javascript_application".into(),
                parameters: serde_json::json!({ "input_path": dir }),
                result: serde_json::to_value(&analysis).expect("value"),
                confidence: rea::evidence::Confidence::Observed,
                authority: rea::evidence::Authority::ShippedArtifact,
                limitations: analysis.limitations.clone(),
                locations: vec![],
                links: vec![],
            };
            let canonical = record.canonical_json().expect("canonical").len();
            let record_time = recording.elapsed();
            drop((analysis, record));
            let latency = common::latency(&mut group, &format!("{n} handlers"), || {
                javascript::analyze(&dir, &mut |_| {}).expect("analysis")
            });
            if let Some(latency) = latency {
                runs.push(Run {
                    shape,
                    handlers: n,
                    bytes,
                    p50: latency.p50,
                    peak,
                    json,
                    record_time,
                    canonical,
                });
            }
            let _ = std::fs::remove_dir_all(&dir);
        }
        group.finish();
    }
    criterion.final_summary();

    let mut text = format!(
        "## JavaScript analysis (`cargo bench --bench javascript`)\n\n\
         Machine: {machine}. One run on a shared machine. `javascript::analyze` of a generated \
         application; \"per MB\" is the median time per megabyte of source, and its ratio to the \
         smallest input of the same shape is 1.0 when the analysis is linear.\n\n"
    );
    let mut table = Table::new(&[
        "shape",
        "handlers",
        "source",
        "p50",
        "per MB",
        "vs smallest",
        "peak RSS",
        "result JSON",
        "record it (to_value + canonical)",
    ]);
    for run in &runs {
        let per_mb = run.p50.as_secs_f64() / (run.bytes as f64 / 1e6);
        let smallest = runs
            .iter()
            .find(|r| r.shape == run.shape)
            .map(|r| r.p50.as_secs_f64() / (r.bytes as f64 / 1e6))
            .unwrap_or(per_mb);
        table.row(&[
            run.shape.to_string(),
            run.handlers.to_string(),
            fmt_mib(run.bytes),
            fmt_duration(run.p50),
            format!("{:.0} ms", per_mb * 1e3),
            format!("{:.2}", per_mb / smallest),
            run.peak.map(fmt_mib).unwrap_or_else(|| "–".into()),
            fmt_mib(run.json as u64),
            format!(
                "{} ({})",
                fmt_duration(run.record_time),
                fmt_mib(run.canonical as u64)
            ),
        ]);
    }
    text.push_str(&table.finish());
    text.push_str(&format!(
        "\nMeasured in {:.0} s.\n",
        started.elapsed().as_secs_f64()
    ));
    common::publish("javascript", &text);
}
