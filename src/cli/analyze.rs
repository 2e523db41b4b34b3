//! `rea analyze`, `rea inspect`, `rea compare`, `rea capture`: one-shot analyses without a
//! server. `--json` prints the Evidence record the server keeps for the same observation, with
//! its id: the investigation layer builds both, so they are the same record by construction.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;

use crate::investigation::{
    Cancel, CapturePolicy, Investigation, Progress, Recording, Report, Scenario,
};
use crate::settings::Settings;

/// Prints a recording's primary record and its id, as `{"id": …, "record": …}`.
pub(crate) fn print_recording(recording: &Recording) -> anyhow::Result<()> {
    let id = recording.primary_id()?;
    println!(
        "{}",
        serde_json::to_string_pretty(
            &serde_json::json!({ "id": id, "record": recording.primary })
        )?
    );
    Ok(())
}

/// Progress on stderr, when it is a terminal and the work is long enough to watch.
struct Stderr;

impl Progress for Stderr {
    fn report(&self, done: u64, total: u64, _: &str) {
        let stderr = std::io::stderr();
        if stderr.is_terminal() && total >= 20 {
            let mut e = stderr.lock();
            let _ = write!(e, "\ranalyzing {done}/{total} files");
            if done == total {
                let _ = writeln!(e);
            }
            let _ = e.flush();
        }
    }
}

/// Prints `report`: its primary record with `--json`, else its text.
fn print_report(report: &Report, json: bool) -> anyhow::Result<ExitCode> {
    if json {
        print_recording(&report.recording)?;
    } else {
        print!("{}", report.text());
    }
    Ok(ExitCode::SUCCESS)
}

/// `rea analyze PATH`: a JavaScript/Electron application, or else an artifact inventory.
pub fn analyze(investigation: &Investigation, path: &Path, json: bool) -> anyhow::Result<ExitCode> {
    print_report(&investigation.analyze_report(path, &Stderr)?, json)
}

/// `rea inspect TARGET`: the artifact inventory of a file or bundle.
pub fn inspect(investigation: &Investigation, path: &Path, json: bool) -> anyhow::Result<ExitCode> {
    print_report(&investigation.inspect_report(path)?, json)
}

/// `rea compare LEFT RIGHT`: inventories of both and their comparison.
pub fn compare(
    investigation: &Investigation,
    left: &Path,
    right: &Path,
    json: bool,
) -> anyhow::Result<ExitCode> {
    print_report(&investigation.compare_report(left, right)?, json)
}

/// `rea capture SCENARIO.json`: one bounded run under the operator's policy.
pub fn capture(settings: &Settings, scenario: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(scenario).with_context(|| scenario.display().to_string())?;
    let scenario: Scenario = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a scenario", scenario.display()))?;
    // A policy file that does not load is an error here, not the disabled policy a server keeps.
    let policy = CapturePolicy::load(settings.config_dir.as_deref())?;
    let investigation = Investigation::new(Arc::new(settings.clone()), Arc::new(policy));
    print_report(
        &investigation.capture_report(&scenario, &Cancel::new())?,
        json,
    )
}
