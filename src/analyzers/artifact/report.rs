//! Human-readable reports of an inventory and of a comparison: a summary table first, then the
//! findings and the details a person reads next, each list bounded.

use std::fmt::Write;

use super::compare::{Comparison, DimensionStatus};
use super::{Inventory, OccurrenceKind, Severity, TargetKind};

/// Rows shown per detail list before "… and N more".
const MAX_ROWS: usize = 50;

fn severity_name(severity: Severity) -> &'static str {
    match severity {
        Severity::Info => "info",
        Severity::Low => "low",
        Severity::Medium => "medium",
        Severity::High => "high",
    }
}

fn status_name(status: DimensionStatus) -> &'static str {
    match status {
        DimensionStatus::Equal => "equal",
        DimensionStatus::Different => "different",
        DimensionStatus::Unknown => "unknown",
    }
}

fn yes_no(flag: bool) -> &'static str {
    if flag { "yes" } else { "no" }
}

/// Escapes a table cell so a value cannot break the table.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

fn more(out: &mut String, shown: usize, total: usize) {
    if total > shown {
        let _ = writeln!(out, "… and {} more", total - shown);
    }
}

/// Renders an inventory for a person.
pub fn render_inventory_report(inventory: &Inventory) -> String {
    let mut out = String::new();
    let summary = inventory.summary();
    let target = &inventory.manifest.target;
    let kind = match target.kind {
        TargetKind::File => "file",
        TargetKind::Bundle => "bundle",
        TargetKind::Directory => "directory",
    };
    let _ = writeln!(out, "# Artifact inventory: {} ({kind})\n", target.name);
    let _ = writeln!(out, "Manifest: {}", inventory.manifest.id);
    let _ = writeln!(
        out,
        "Provider: {} {}",
        inventory.provider.id, inventory.provider.version
    );
    if let Some(sha) = &target.sha256 {
        let _ = writeln!(out, "SHA-256: {sha}");
    }
    let _ = writeln!(out, "Complete: {}\n", yes_no(summary.complete));

    let _ = writeln!(out, "## Summary\n");
    let _ = writeln!(out, "| item | count |\n|---|---|");
    let _ = writeln!(out, "| parts | {} |", summary.parts);
    let _ = writeln!(out, "| bytes | {} |", summary.bytes);
    let _ = writeln!(out, "| edges | {} |", summary.edges);
    let _ = writeln!(
        out,
        "| occurrences | {} in {} page(s) |",
        summary.occurrences, summary.pages
    );
    let _ = writeln!(out, "| findings | {} |", summary.findings);
    for (kind, count) in &summary.parts_by_kind {
        let _ = writeln!(out, "| parts: {kind} | {count} |");
    }
    for (kind, count) in &summary.occurrences_by_kind {
        let _ = writeln!(out, "| occurrences: {kind} | {count} |");
    }
    for (resolution, count) in &summary.edges_by_resolution {
        let _ = writeln!(out, "| edges: {resolution} | {count} |");
    }

    let _ = writeln!(out, "\n## Findings\n");
    if inventory.findings.is_empty() {
        let _ = writeln!(out, "None.");
    }
    let mut findings: Vec<_> = inventory.findings.iter().collect();
    findings.sort_by(|a, b| b.severity.cmp(&a.severity).then(a.rule.cmp(&b.rule)));
    for finding in findings.iter().take(MAX_ROWS) {
        let _ = writeln!(
            out,
            "- [{}] {}: {} (cites {} occurrence(s))",
            severity_name(finding.severity),
            finding.rule.as_str(),
            finding.message,
            finding.occurrence_ids.len()
        );
    }
    more(&mut out, MAX_ROWS, findings.len());

    let _ = writeln!(out, "\n## Edges\n");
    let _ = writeln!(
        out,
        "| from | kind | target | resolution | resolved |\n|---|---|---|---|---|"
    );
    for edge in inventory.edges.iter().take(MAX_ROWS) {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            cell(&edge.from),
            edge.kind.as_str(),
            cell(&edge.target),
            edge.resolution.as_str(),
            cell(edge.resolved.as_deref().unwrap_or("-"))
        );
    }
    more(&mut out, MAX_ROWS, inventory.edges.len());

    let _ = writeln!(
        out,
        "\n## Signature, entitlements, Info.plist and Electron\n"
    );
    let notable: Vec<_> = inventory
        .occurrences()
        .filter(|o| {
            matches!(
                o.kind,
                OccurrenceKind::CodeSignature
                    | OccurrenceKind::Entitlement
                    | OccurrenceKind::InfoPlist
                    | OccurrenceKind::Electron
                    | OccurrenceKind::ElectronFuse
            )
        })
        .collect();
    if notable.is_empty() {
        let _ = writeln!(out, "None.");
    } else {
        let _ = writeln!(out, "| part | kind | key | value |\n|---|---|---|---|");
    }
    for occurrence in notable.iter().take(MAX_ROWS * 4) {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            cell(&occurrence.part),
            occurrence.kind.as_str(),
            cell(occurrence.key.as_deref().unwrap_or("-")),
            cell(&occurrence.value)
        );
    }
    more(&mut out, MAX_ROWS * 4, notable.len());

    if !inventory.limitations.is_empty() {
        let _ = writeln!(out, "\n## Limitations\n");
        for limitation in inventory.limitations.iter().take(MAX_ROWS) {
            let _ = writeln!(out, "- {limitation}");
        }
        more(&mut out, MAX_ROWS, inventory.limitations.len());
    }
    out
}

/// Renders a comparison for a person.
pub fn render_comparison_report(comparison: &Comparison) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Artifact comparison: {} → {}\n",
        comparison.left.target.name, comparison.right.target.name
    );
    let _ = writeln!(
        out,
        "Left: {} ({} {})",
        comparison.left.manifest_id, comparison.left.provider.id, comparison.left.provider.version
    );
    let _ = writeln!(
        out,
        "Right: {} ({} {})\n",
        comparison.right.manifest_id,
        comparison.right.provider.id,
        comparison.right.provider.version
    );
    for note in &comparison.notes {
        let _ = writeln!(out, "Note: {note}");
    }

    let _ = writeln!(out, "## Summary\n");
    let _ = writeln!(
        out,
        "| dimension | status | added | removed | changed |\n|---|---|---|---|---|"
    );
    let parts = &comparison.parts;
    let _ = writeln!(
        out,
        "| parts | {} | {} | {} | {} |",
        status_name(parts.status),
        parts.added_total,
        parts.removed_total,
        parts.changed_total
    );
    let edges = &comparison.edges;
    let _ = writeln!(
        out,
        "| edges | {} | {} | {} | {} |",
        status_name(edges.status),
        edges.added.len(),
        edges.removed.len(),
        edges.changed.len()
    );
    for diff in &comparison.occurrences {
        let _ = writeln!(
            out,
            "| occurrences/{} | {} | {} | {} | - |",
            diff.kind.as_str(),
            status_name(diff.status),
            diff.added_total,
            diff.removed_total
        );
    }
    let procedures = &comparison.procedures;
    let _ = writeln!(
        out,
        "| procedures | {} | {} | {} | {} |",
        status_name(procedures.status),
        procedures.added_total,
        procedures.removed_total,
        procedures.changed_total
    );

    let mut unknown = Vec::new();
    unknown.extend(parts.reasons.iter().map(|r| format!("parts: {r}")));
    unknown.extend(edges.reasons.iter().map(|r| format!("edges: {r}")));
    for diff in &comparison.occurrences {
        unknown.extend(
            diff.reasons
                .iter()
                .map(|r| format!("occurrences/{}: {r}", diff.kind.as_str())),
        );
    }
    unknown.extend(
        procedures
            .reasons
            .iter()
            .map(|r| format!("procedures: {r}")),
    );
    if !unknown.is_empty() {
        let _ = writeln!(out, "\n## Why some dimensions are unknown\n");
        for reason in unknown.iter().take(MAX_ROWS) {
            let _ = writeln!(out, "- {reason}");
        }
        more(&mut out, MAX_ROWS, unknown.len());
    }

    if parts.changed_total + parts.added_total + parts.removed_total > 0 {
        let _ = writeln!(out, "\n## Parts\n");
        for change in parts.changed.iter().take(MAX_ROWS) {
            let _ = writeln!(
                out,
                "- changed {} ({} → {} bytes)",
                change.path, change.left_size, change.right_size
            );
        }
        more(
            &mut out,
            MAX_ROWS.min(parts.changed.len()),
            parts.changed_total as usize,
        );
        for part in parts.added.iter().take(MAX_ROWS) {
            let _ = writeln!(out, "- added {} ({})", part.path, part.kind.as_str());
        }
        more(
            &mut out,
            MAX_ROWS.min(parts.added.len()),
            parts.added_total as usize,
        );
        for part in parts.removed.iter().take(MAX_ROWS) {
            let _ = writeln!(out, "- removed {} ({})", part.path, part.kind.as_str());
        }
        more(
            &mut out,
            MAX_ROWS.min(parts.removed.len()),
            parts.removed_total as usize,
        );
    }

    let changed_kinds: Vec<_> = comparison
        .occurrences
        .iter()
        .filter(|d| d.added_total + d.removed_total > 0)
        .collect();
    if !changed_kinds.is_empty() {
        let _ = writeln!(out, "\n## Occurrences\n");
        for diff in changed_kinds {
            let _ = writeln!(out, "### {}\n", diff.kind.as_str());
            for (sign, list) in [("+", &diff.added), ("-", &diff.removed)] {
                for item in list.iter().take(MAX_ROWS) {
                    let key = item
                        .key
                        .as_deref()
                        .map(|k| format!("{k} = "))
                        .unwrap_or_default();
                    let _ = writeln!(out, "{sign} {}: {key}{}", item.part, item.value);
                }
                more(&mut out, MAX_ROWS, list.len());
            }
        }
    }

    if !procedures.parts.is_empty() {
        let _ = writeln!(out, "\n## Procedures of changed executables\n");
        for part in &procedures.parts {
            let _ = writeln!(
                out,
                "- {}: {} (+{} / -{} / ~{} changed / {} unchanged)",
                part.part,
                status_name(part.status),
                part.added_total,
                part.removed_total,
                part.changed_total,
                part.unchanged_total
            );
            let totals = [
                ("changed", &part.listed.changed, part.changed_total),
                ("added", &part.listed.added, part.added_total),
                ("removed", &part.listed.removed, part.removed_total),
                ("uncertain", &part.listed.uncertain, part.uncertain_total),
            ];
            for (label, list, total) in totals {
                if total == 0 {
                    continue;
                }
                let _ = writeln!(out, "  - {label} ({total}): {}", list.join(", "));
                if (list.len() as u64) < total {
                    let _ = writeln!(out, "    … and {} more", total - list.len() as u64);
                }
            }
            if part.ambiguous_total > 0 {
                let _ = writeln!(
                    out,
                    "  - ambiguous ({}): several candidates, none clearly the match",
                    part.ambiguous_total
                );
            }
        }
    }
    out
}
