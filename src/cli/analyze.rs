//! `rea analyze`, `rea inspect`, `rea compare`, `rea capture`: one-shot analyses without a
//! server. `--json` prints the Evidence record the server keeps for the same observation, with
//! its id: the investigation layer builds both, so they are the same record by construction.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;

use crate::analyzers::{artifact, capture, javascript};
use crate::investigation::{
    Cancel, CapturePolicy, InspectArgs, Investigation, Progress, Recording, Route, route,
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

/// `rea analyze PATH`: a JavaScript/Electron application, or else an artifact inventory.
pub fn analyze(investigation: &Investigation, path: &Path, json: bool) -> anyhow::Result<ExitCode> {
    if route(path) == Route::Binary {
        return inspect(investigation, path, json);
    }
    let (analyzed, recording) = investigation.analyze_detached(path, &Stderr)?;
    if json {
        print_recording(&recording)?;
    } else {
        print!("{}", javascript::render_report(&analyzed.analysis));
    }
    Ok(ExitCode::SUCCESS)
}

/// `rea inspect TARGET`: the artifact inventory of a file or bundle.
pub fn inspect(investigation: &Investigation, path: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let (inventory, _, recording) = investigation.inspect_detached(path, InspectArgs::default())?;
    if json {
        print_recording(&recording)?;
    } else {
        print!("{}", artifact::render_inventory_report(&inventory));
    }
    Ok(ExitCode::SUCCESS)
}

/// `rea compare LEFT RIGHT`: inventories of both and their comparison.
pub fn compare(
    investigation: &Investigation,
    left: &Path,
    right: &Path,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let (comparison, recording) = investigation.compare_detached(left, right)?;
    if json {
        print_recording(&recording)?;
    } else {
        print!("{}", artifact::render_comparison_report(&comparison));
    }
    Ok(ExitCode::SUCCESS)
}

/// `rea capture SCENARIO.json`: one bounded run under the operator's policy.
pub fn capture(settings: &Settings, scenario: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(scenario).with_context(|| scenario.display().to_string())?;
    let scenario: capture::Scenario = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a scenario", scenario.display()))?;
    // A policy file that does not load is an error here, not the disabled policy a server keeps.
    let policy = match &settings.config_dir {
        Some(dir) => capture::load_policy(dir)?,
        None => capture::Policy::default(),
    };
    let investigation = Investigation::new(
        Arc::new(settings.clone()),
        Arc::new(CapturePolicy::new(policy)),
    );
    let (captured, recording) = investigation.capture_detached(&scenario, &Cancel::new())?;
    if json {
        print_recording(&recording)?;
    } else {
        print!("{}", capture::render_report(&captured.capture));
    }
    Ok(ExitCode::SUCCESS)
}
