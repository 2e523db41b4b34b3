//! `rea analyze`, `rea inspect`, `rea compare`, `rea capture`: one-shot analyses without a
//! server. `--json` prints the Evidence record the server would keep (with its id).

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;

use crate::analyzers::{artifact, capture, javascript};
use crate::evidence::{Authority, Confidence, EvidenceRecord, ProviderStamp, Subject};
use crate::settings::Settings;

fn evidence_json<P: serde::Serialize, R: serde::Serialize>(
    operation: &str,
    subject: Option<Subject>,
    parameters: &P,
    result: &R,
    authority: Authority,
) -> anyhow::Result<String> {
    let record = EvidenceRecord {
        subject,
        provider: ProviderStamp::builtin(),
        operation: operation.into(),
        parameters: serde_json::to_value(parameters)?,
        result: serde_json::to_value(result)?,
        confidence: Confidence::Observed,
        authority,
        limitations: vec![],
        locations: vec![],
        links: vec![],
    };
    let id = record.id()?;
    Ok(serde_json::to_string_pretty(
        &serde_json::json!({ "id": id, "record": record }),
    )?)
}

fn subject_of_path(path: &Path, format: &str) -> anyhow::Result<Subject> {
    let canonical = std::fs::canonicalize(path).with_context(|| path.display().to_string())?;
    let sha256 = if canonical.is_file() {
        crate::ids::sha256_hex(&std::fs::read(&canonical)?)
    } else {
        crate::providers::native::admit(&canonical)
            .map(|t| t.sha256)
            .unwrap_or_default()
    };
    Ok(Subject {
        name: canonical
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        sha256,
        format: format.into(),
        architecture: "unknown".into(),
        path: canonical.display().to_string(),
    })
}

/// `rea analyze PATH`: a JavaScript/Electron application, or else an artifact inventory.
pub fn analyze(settings: &Settings, path: &Path, json: bool) -> anyhow::Result<ExitCode> {
    settings.check_path(path).map_err(anyhow::Error::msg)?;
    let is_js = javascript::looks_like_javascript_app(path)
        && !(path.is_dir()
            && path.extension().is_some_and(|e| e == "app")
            && !path.join("Contents/Resources/app.asar").is_file());
    if !is_js {
        return inspect(settings, path, json);
    }
    let stderr = std::io::stderr();
    let show = stderr.is_terminal();
    let analysis = javascript::analyze(path, &mut |p| {
        if show && p.files_total >= 20 {
            let mut e = stderr.lock();
            let _ = write!(e, "\ranalyzing {}/{} files", p.files_done, p.files_total);
            let _ = e.flush();
        }
    })?;
    if show {
        eprintln!();
    }
    if json {
        let subject = subject_of_path(path, "javascript-app")?;
        println!(
            "{}",
            evidence_json(
                "analyze_javascript_application",
                Some(subject),
                &serde_json::json!({ "input_path": path }),
                &analysis,
                Authority::ShippedArtifact
            )?
        );
    } else {
        print!("{}", javascript::render_report(&analysis));
    }
    Ok(ExitCode::SUCCESS)
}

/// `rea inspect TARGET`: the artifact inventory of a file or bundle.
pub fn inspect(settings: &Settings, path: &Path, json: bool) -> anyhow::Result<ExitCode> {
    settings.check_path(path).map_err(anyhow::Error::msg)?;
    let options = artifact::InspectOptions {
        provider_version: env!("CARGO_PKG_VERSION").into(),
        ..Default::default()
    };
    let inventory = artifact::inspect(path, &options)?;
    if json {
        let subject = subject_of_path(path, "artifact")?;
        println!(
            "{}",
            evidence_json(
                "inspect_artifact",
                Some(subject),
                &serde_json::json!({ "path": path }),
                &inventory,
                Authority::ShippedArtifact
            )?
        );
    } else {
        print!("{}", artifact::render_inventory_report(&inventory));
    }
    Ok(ExitCode::SUCCESS)
}

/// `rea compare LEFT RIGHT`: inventories of both and their comparison.
pub fn compare(
    settings: &Settings,
    left: &Path,
    right: &Path,
    json: bool,
) -> anyhow::Result<ExitCode> {
    settings.check_path(left).map_err(anyhow::Error::msg)?;
    settings.check_path(right).map_err(anyhow::Error::msg)?;
    let options = artifact::InspectOptions {
        provider_version: env!("CARGO_PKG_VERSION").into(),
        ..Default::default()
    };
    let l = artifact::inspect(left, &options)?;
    let r = artifact::inspect(right, &options)?;
    let procedures = |path: &Path| -> Option<artifact::ProcedureNames> {
        let target = crate::providers::native::admit(path).ok()?;
        let mut names = artifact::ProcedureNames::new();
        for doc in &target.documents {
            let set = crate::providers::native::procedures(doc)
                .ok()?
                .into_iter()
                .filter_map(|p| p.name)
                .collect();
            names.insert(doc.name.clone(), set);
        }
        Some(names)
    };
    let comparison = artifact::compare(
        &l,
        &r,
        procedures(left).as_ref(),
        procedures(right).as_ref(),
    );
    if json {
        println!(
            "{}",
            evidence_json(
                "compare_artifacts",
                None,
                &serde_json::json!({ "left": left, "right": right }),
                &comparison,
                Authority::ShippedArtifact
            )?
        );
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
    for path in [&scenario.executable, &scenario.working_directory] {
        settings
            .check_path(path)
            .map_err(|e| anyhow::anyhow!("refused, nothing was run: {e}"))?;
    }
    let policy = match &settings.config_dir {
        Some(dir) => capture::load_policy(dir)?,
        None => capture::Policy::default(),
    };
    let approved = capture::check(&policy, &scenario)
        .map_err(|r| anyhow::anyhow!("refused, nothing was run: {r}"))?;
    let result = capture::run(&approved, &std::sync::atomic::AtomicBool::new(false))?;
    if json {
        println!(
            "{}",
            evidence_json(
                "capture_process_scenario",
                None,
                &scenario,
                &result,
                Authority::ControlledReplay
            )?
        );
    } else {
        print!("{}", capture::render_report(&result));
    }
    Ok(ExitCode::SUCCESS)
}
