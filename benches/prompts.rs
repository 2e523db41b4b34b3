//! Rendering the guided prompts (issue 3: under 1 ms for any prompt): `rea::prompts::render` for
//! each of `builtin_prompts()`, with every argument given and every tool the prompt names in the
//! live catalog, against a naive template in the same run (title, objective, arguments as plain
//! pretty JSON, numbered steps: no step filtering, no escaping of the argument block).

#[allow(dead_code)]
mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use rea::completion::Family;
use rea::prompts::{PromptDef, RenderContext, StepCondition, builtin_prompts, render};

use common::{Table, fmt_duration, fmt_ratio, meets};

/// A plausible value for each argument, by completion family.
fn arguments(prompt: &PromptDef) -> BTreeMap<String, String> {
    let id = |prefix: &str| format!("{prefix}{}", "3f".repeat(32));
    prompt
        .arguments
        .iter()
        .map(|a| {
            let value = match a.completion {
                Some(Family::Document) => "sentry-cli (arm64)".to_owned(),
                Some(Family::Procedure) => "0x100004f2c".to_owned(),
                Some(Family::Provider) => "auto".to_owned(),
                Some(Family::Evidence) | Some(Family::ProcessCapture) => id("ev_"),
                Some(Family::ArtifactManifest) => id("agm_"),
                Some(Family::ArtifactOccurrence) => id("occ_"),
                Some(Family::ResidualUnknown) => "unk_01".to_owned(),
                // Paths are free text to the renderer, as they were before they completed.
                Some(Family::TargetPath | Family::ExecutablePath | Family::DirectoryPath)
                | None => format!(
                    "the <{}> value, with \"quotes\" and a `fence`\nand a second line",
                    a.name
                ),
            };
            (a.name.clone(), value)
        })
        .collect()
}

/// The naive baseline: one unconditional template.
fn naive_render(prompt: &PromptDef, arguments: &BTreeMap<String, String>) -> String {
    let mut text = String::new();
    let _ = writeln!(
        text,
        "# {}\n\n## Objective\n{}\n",
        prompt.title.as_deref().unwrap_or(&prompt.name),
        prompt.objective
    );
    let _ = writeln!(
        text,
        "## Arguments\n{}\n",
        serde_json::to_string_pretty(arguments).unwrap_or_default()
    );
    for (n, step) in prompt.steps.iter().enumerate() {
        let _ = writeln!(text, "{}. {}", n + 1, step.text);
    }
    text
}

fn main() {
    common::child_entry();
    let mut criterion = common::criterion();
    let machine = common::machine();
    let started = Instant::now();
    let prompts = builtin_prompts();
    let tools: BTreeSet<String> = prompts
        .iter()
        .flat_map(|p| p.tools().map(str::to_owned))
        .collect();
    let mut rows = Vec::new();
    let mut group = criterion.benchmark_group("prompts/render");
    for prompt in &prompts {
        let args = arguments(prompt);
        let has_javascript_steps = prompt
            .steps
            .iter()
            .any(|s| s.when == StepCondition::JavascriptTarget);
        let variants: &[bool] = if has_javascript_steps {
            &[false, true]
        } else {
            &[false]
        };
        for &javascript_target in variants {
            let ctx = RenderContext {
                tools: &tools,
                javascript_target,
            };
            let target = if javascript_target {
                "JavaScript target"
            } else {
                "binary target"
            };
            let rea = common::latency(&mut group, &format!("{}/{target}", prompt.name), || {
                render(prompt, &args, &ctx)
            });
            let naive = common::latency(
                &mut group,
                &format!("{}/{target}/naive", prompt.name),
                || naive_render(prompt, &args),
            );
            let bytes = render(prompt, &args, &ctx).len();
            rows.push((format!("{} ({target})", prompt.name), bytes, rea, naive));
        }
    }
    group.finish();
    criterion.final_summary();

    let mut text = format!(
        "## Prompt rendering (`cargo bench --bench prompts`)\n\n\
         Machine: {machine}. One run on a shared machine. Baseline: a naive template of the same \
         prompt (no step filtering, no escaping of the argument block).\n\n"
    );
    let mut table = Table::new(&[
        "prompt",
        "bytes",
        "p50",
        "p99",
        "naive p50",
        "vs naive",
        "target < 1 ms (p99)",
        "met",
    ]);
    for (name, bytes, rea, naive) in rows {
        let Some(rea) = rea else { continue };
        table.row(&[
            name,
            bytes.to_string(),
            fmt_duration(rea.p50),
            fmt_duration(rea.p99),
            naive
                .map(|n| fmt_duration(n.p50))
                .unwrap_or_else(|| "–".into()),
            naive
                .map(|n| fmt_ratio(rea.p50, n.p50))
                .unwrap_or_else(|| "–".into()),
            "< 1 ms".into(),
            meets(rea.p99 < Duration::from_millis(1)).into(),
        ]);
    }
    text.push_str(&table.finish());
    text.push_str(&format!(
        "\nMeasured in {:.0} s.\n",
        started.elapsed().as_secs_f64()
    ));
    common::publish("prompts", &text);
}
