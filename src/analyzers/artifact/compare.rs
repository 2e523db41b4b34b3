//! Compares two inventories dimension by dimension — parts, edges, occurrences per kind and
//! procedures of changed executables — and says `unknown` instead of `equal` whenever a side is
//! incomplete or the sides were produced by different provider versions.

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::analyzers::procdiff::{self, MatchedBy, ProceduresSummary};
use crate::providers::native::DocumentSpec;

use super::{
    Edge, EdgeKind, Inventory, KindGap, ManifestId, OccurrenceKind, Part, PartKind, ProviderStamp,
    TargetInfo, TargetKind,
};

/// The analyzable document of each part path of one side (a thin executable, a slice
/// `<file>#<arch>`, …), whose procedures are compared function by function when its digest
/// changed.
pub type PartDocuments = BTreeMap<String, DocumentSpec>;

/// Most entries listed per added/removed/changed list; totals are always exact.
pub const MAX_LISTED: usize = 1_000;

/// The outcome of comparing one dimension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum DimensionStatus {
    /// Both sides are complete and comparable, and nothing differs.
    Equal,
    /// Something differs (the lists say what).
    Different,
    /// Equality cannot be established; `reasons` says why.
    Unknown,
}

/// One side of a comparison, with what decides its comparability.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SideInfo {
    /// Manifest id of the side.
    pub manifest_id: ManifestId,
    /// The side's target.
    pub target: TargetInfo,
    /// Provider that produced the side.
    pub provider: ProviderStamp,
    /// Whether the side's manifest is complete.
    pub manifest_complete: bool,
    /// Whether the side's occurrence page set is complete.
    pub occurrences_complete: bool,
    /// Kinds cut by a cap on this side.
    pub incomplete_kinds: Vec<KindGap>,
    /// Reasons that make every occurrence kind of this side incomplete.
    pub occurrence_reasons: Vec<String>,
}

/// A part present on both sides whose digest, size or kind differs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PartChange {
    /// Part path (right side's spelling).
    pub path: String,
    /// Kind on the left.
    pub left_kind: PartKind,
    /// Kind on the right.
    pub right_kind: PartKind,
    /// Digest on the left.
    pub left_sha256: Option<String>,
    /// Digest on the right.
    pub right_sha256: Option<String>,
    /// Size on the left.
    pub left_size: u64,
    /// Size on the right.
    pub right_size: u64,
}

/// Differences in parts.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct PartsDiff {
    /// Outcome.
    pub status: DimensionStatus,
    /// Why the outcome is unknown, if it is.
    pub reasons: Vec<String>,
    /// Parts only on the right (first [`MAX_LISTED`]).
    pub added: Vec<Part>,
    /// Parts only on the left (first [`MAX_LISTED`]).
    pub removed: Vec<Part>,
    /// Parts on both sides that differ (first [`MAX_LISTED`]).
    pub changed: Vec<PartChange>,
    /// Exact number of added parts.
    pub added_total: u64,
    /// Exact number of removed parts.
    pub removed_total: u64,
    /// Exact number of changed parts.
    pub changed_total: u64,
    /// Number of parts identical on both sides.
    pub unchanged: u64,
}

/// An edge present on both sides (same source, kind and target) whose resolution differs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct EdgeChange {
    /// The edge on the left.
    pub left: Edge,
    /// The edge on the right.
    pub right: Edge,
}

/// Differences in edges.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct EdgesDiff {
    /// Outcome.
    pub status: DimensionStatus,
    /// Why the outcome is unknown, if it is.
    pub reasons: Vec<String>,
    /// Edges only on the right.
    pub added: Vec<Edge>,
    /// Edges only on the left.
    pub removed: Vec<Edge>,
    /// Edges whose resolution changed.
    pub changed: Vec<EdgeChange>,
}

/// An occurrence by content (ids differ between manifests by construction).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
pub struct OccurrenceRef {
    /// Part path (right side's spelling).
    pub part: String,
    /// Key within the kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Value.
    pub value: String,
}

/// Differences in the occurrences of one kind.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct OccurrenceKindDiff {
    /// The kind.
    pub kind: OccurrenceKind,
    /// Outcome.
    pub status: DimensionStatus,
    /// Why the outcome is unknown, if it is.
    pub reasons: Vec<String>,
    /// Occurrences only on the right (first [`MAX_LISTED`]).
    pub added: Vec<OccurrenceRef>,
    /// Occurrences only on the left (first [`MAX_LISTED`]).
    pub removed: Vec<OccurrenceRef>,
    /// Exact number added.
    pub added_total: u64,
    /// Exact number removed.
    pub removed_total: u64,
}

/// Procedure differences of one changed executable part, function by function.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ProcedurePartDiff {
    /// Part path (right side's spelling).
    pub part: String,
    /// Outcome for this part.
    pub status: DimensionStatus,
    /// Why it is unknown, if it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Exact number of procedures only on the right.
    pub added_total: u64,
    /// Exact number of procedures only on the left.
    pub removed_total: u64,
    /// Exact number of matched procedures that differ.
    pub changed_total: u64,
    /// Exact number of matched procedures that do not differ.
    pub unchanged_total: u64,
    /// Exact number of left procedures with several candidates, none clearly the match.
    #[serde(default)]
    pub ambiguous_total: u64,
    /// Exact number of pairs below the similarity threshold, neither changed nor unchanged.
    #[serde(default)]
    pub uncertain_total: u64,
    /// Matched pairs per pass.
    pub matched_by: MatchedBy,
    /// The first procedures of each kind, by name where there is one, else by address.
    #[serde(default)]
    pub listed: ProcedureLists,
}

/// The first [`MAX_LISTED_PROCEDURES`] procedures of each status, as `name (0x…)` or `0x…`
/// (right side's for added, left side's otherwise); the totals beside them are exact.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct ProcedureLists {
    /// Changed.
    pub changed: Vec<String>,
    /// Added.
    pub added: Vec<String>,
    /// Removed.
    pub removed: Vec<String>,
    /// Uncertain.
    pub uncertain: Vec<String>,
}

/// Most procedures [`ProcedureLists`] names per status.
pub const MAX_LISTED_PROCEDURES: usize = 50;

impl ProcedureLists {
    fn of(diff: &procdiff::ProcedureDiff) -> ProcedureLists {
        use procdiff::ProcedureStatus as S;
        let named = |status: S| -> Vec<String> {
            diff.entries()
                .iter()
                .filter(|e| e.status == status)
                .filter_map(|e| {
                    let side = if status == S::Added {
                        &e.right
                    } else {
                        &e.left
                    };
                    side.as_ref().map(|s| match &s.name {
                        Some(name) => format!("{name} (0x{:x})", s.address),
                        None => format!("0x{:x}", s.address),
                    })
                })
                .take(MAX_LISTED_PROCEDURES)
                .collect()
        };
        ProcedureLists {
            changed: named(S::Changed),
            added: named(S::Added),
            removed: named(S::Removed),
            uncertain: named(S::Uncertain),
        }
    }
}

impl ProcedurePartDiff {
    fn of_diff(part: &str, diff: &procdiff::ProcedureDiff) -> ProcedurePartDiff {
        ProcedurePartDiff {
            listed: ProcedureLists::of(diff),
            ..Self::of(part, diff.summary())
        }
    }

    fn of(part: &str, summary: &ProceduresSummary) -> ProcedurePartDiff {
        ProcedurePartDiff {
            part: part.to_owned(),
            status: summary.status,
            reason: (!summary.reasons.is_empty()).then(|| summary.reasons.join("; ")),
            added_total: summary.added_total,
            removed_total: summary.removed_total,
            changed_total: summary.changed_total,
            unchanged_total: summary.unchanged_total,
            ambiguous_total: summary.ambiguous_total,
            uncertain_total: summary.uncertain_total,
            matched_by: summary.matched_by,
            listed: ProcedureLists::default(),
        }
    }

    fn unknown(part: &str, reason: String) -> ProcedurePartDiff {
        ProcedurePartDiff {
            part: part.to_owned(),
            status: DimensionStatus::Unknown,
            reason: Some(reason),
            added_total: 0,
            removed_total: 0,
            changed_total: 0,
            unchanged_total: 0,
            ambiguous_total: 0,
            uncertain_total: 0,
            matched_by: MatchedBy::default(),
            listed: ProcedureLists::default(),
        }
    }
}

/// Procedure differences of changed executables: the totals of every changed part.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ProceduresDiff {
    /// Outcome across all changed executables: `equal` only when every changed executable's
    /// procedures all matched unchanged.
    pub status: DimensionStatus,
    /// Why the outcome is unknown, if it is.
    pub reasons: Vec<String>,
    /// Exact number of procedures only on the right.
    pub added_total: u64,
    /// Exact number of procedures only on the left.
    pub removed_total: u64,
    /// Exact number of matched procedures that differ.
    pub changed_total: u64,
    /// Exact number of matched procedures that do not differ.
    pub unchanged_total: u64,
    /// Matched pairs per pass.
    pub matched_by: MatchedBy,
    /// One entry per changed executable part.
    pub parts: Vec<ProcedurePartDiff>,
}

/// The comparison of two inventories.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Comparison {
    /// The older (or reference) side.
    pub left: SideInfo,
    /// The newer side.
    pub right: SideInfo,
    /// How the sides were aligned (e.g. single files of different names).
    pub notes: Vec<String>,
    /// Parts dimension.
    pub parts: PartsDiff,
    /// Edges dimension.
    pub edges: EdgesDiff,
    /// Occurrences, one entry for every kind in [`OccurrenceKind::ALL`].
    pub occurrences: Vec<OccurrenceKindDiff>,
    /// Procedures of changed executables.
    pub procedures: ProceduresDiff,
}

impl Comparison {
    /// The diff of one occurrence kind.
    pub fn occurrence_kind(&self, kind: OccurrenceKind) -> Option<&OccurrenceKindDiff> {
        self.occurrences.iter().find(|diff| diff.kind == kind)
    }

    /// Status across every occurrence kind: different if any kind differs, else unknown if any
    /// is unknown, else equal.
    pub fn occurrences_status(&self) -> DimensionStatus {
        combine(self.occurrences.iter().map(|diff| diff.status))
    }
}

/// Different beats unknown beats equal.
pub(crate) fn combine(statuses: impl IntoIterator<Item = DimensionStatus>) -> DimensionStatus {
    let mut result = DimensionStatus::Equal;
    for status in statuses {
        match status {
            DimensionStatus::Different => return DimensionStatus::Different,
            DimensionStatus::Unknown => result = DimensionStatus::Unknown,
            DimensionStatus::Equal => {}
        }
    }
    result
}

fn side(inventory: &Inventory) -> SideInfo {
    SideInfo {
        manifest_id: inventory.manifest.id.clone(),
        target: inventory.manifest.target.clone(),
        provider: inventory.provider.clone(),
        manifest_complete: inventory.manifest.complete,
        occurrences_complete: inventory.occurrence_set.complete,
        incomplete_kinds: inventory.occurrence_set.incomplete_kinds.clone(),
        occurrence_reasons: inventory.occurrence_set.reasons.clone(),
    }
}

/// Rewrites left part paths so a single file named differently on each side lines up.
struct Aligner {
    from: Option<(String, String)>,
}

impl Aligner {
    fn path(&self, path: &str) -> String {
        let Some((left, right)) = &self.from else {
            return path.to_string();
        };
        if path == left {
            return right.clone();
        }
        // A slice is `file (arch)`, a region `part/…`.
        for separator in [" (", "/"] {
            if let Some(rest) = path.strip_prefix(&format!("{left}{separator}")) {
                return format!("{right}{separator}{rest}");
            }
        }
        path.to_string()
    }

    fn edge(&self, edge: &Edge) -> Edge {
        Edge {
            from: self.path(&edge.from),
            resolved: edge.resolved.as_deref().map(|p| self.path(p)),
            ..edge.clone()
        }
    }
}

fn status_of(reasons: &[String], differs: bool) -> DimensionStatus {
    if !reasons.is_empty() {
        DimensionStatus::Unknown
    } else if differs {
        DimensionStatus::Different
    } else {
        DimensionStatus::Equal
    }
}

/// Reasons that leave the occurrences of `kind` on one side incomplete. A gap caused by a part
/// that is byte-identical on both sides is discounted: the same provider reads the same bytes
/// the same way, so whatever it cut, it cut identically on both sides.
fn kind_reasons(
    name: &str,
    info: &SideInfo,
    kind: OccurrenceKind,
    generic: bool,
    identical: &dyn Fn(&str) -> bool,
) -> Vec<String> {
    let mut reasons: Vec<String> = info
        .occurrence_reasons
        .iter()
        .map(|reason| format!("{name} side: {reason}"))
        .collect();
    reasons.extend(
        info.incomplete_kinds
            .iter()
            .filter(|gap| gap.kind == kind)
            .filter(|gap| !gap.part.as_deref().is_some_and(identical))
            .map(|gap| format!("{name} side: {}", gap.reason)),
    );
    if generic
        && reasons.is_empty()
        && !info.occurrences_complete
        && info.incomplete_kinds.is_empty()
    {
        reasons.push(format!(
            "{name} side: its occurrence page set is marked incomplete"
        ));
    }
    reasons
}

/// Compares `left` (reference) with `right`. The procedures of executables whose digest changed
/// are compared function by function when both sides' documents are given. Blocking: that
/// comparison decodes every procedure of both documents.
pub fn compare(
    left: &Inventory,
    right: &Inventory,
    left_docs: Option<&PartDocuments>,
    right_docs: Option<&PartDocuments>,
) -> Comparison {
    let left_side = side(left);
    let right_side = side(right);
    let mut notes = Vec::new();
    let aligner = Aligner {
        from: (left_side.target.kind == TargetKind::File
            && right_side.target.kind == TargetKind::File
            && left_side.target.name != right_side.target.name)
            .then(|| {
                (
                    left_side.target.name.clone(),
                    right_side.target.name.clone(),
                )
            }),
    };
    if let Some((l, r)) = &aligner.from {
        notes.push(format!(
            "the left file {l} is compared with the right file {r}; left part paths are shown with the right name"
        ));
    }

    let mut common = Vec::new();
    if left.provider != right.provider {
        common.push(format!(
            "the sides were produced by different providers ({} {} vs {} {}), so equality cannot be established",
            left.provider.id, left.provider.version, right.provider.id, right.provider.version
        ));
    }
    let mut manifest_reasons = common.clone();
    for (name, info) in [("left", &left_side), ("right", &right_side)] {
        if !info.manifest_complete {
            manifest_reasons.push(format!("{name} side: its manifest is incomplete"));
        }
    }

    let parts = compare_parts(left, right, &aligner, manifest_reasons.clone());

    // Parts with the same digest on both sides (right-side spelling).
    let identical_right: BTreeSet<&str> = {
        let left_digests: BTreeMap<String, &Option<String>> = left
            .manifest
            .parts
            .iter()
            .map(|part| (aligner.path(&part.path), &part.sha256))
            .collect();
        right
            .manifest
            .parts
            .iter()
            .filter(|part| {
                part.sha256.is_some() && left_digests.get(&part.path) == Some(&&part.sha256)
            })
            .map(|part| part.path.as_str())
            .collect()
    };
    let identical_left = |path: &str| identical_right.contains(aligner.path(path).as_str());
    let identical_right_fn = |path: &str| identical_right.contains(path);

    let mut edge_reasons = manifest_reasons.clone();
    edge_reasons.extend(kind_reasons(
        "left",
        &left_side,
        OccurrenceKind::Library,
        false,
        &identical_left,
    ));
    edge_reasons.extend(kind_reasons(
        "right",
        &right_side,
        OccurrenceKind::Library,
        false,
        &identical_right_fn,
    ));
    edge_reasons.dedup();
    let edges = compare_edges(left, right, &aligner, edge_reasons);

    let occurrences = OccurrenceKind::ALL
        .into_iter()
        .map(|kind| {
            let mut reasons = common.clone();
            reasons.extend(kind_reasons(
                "left",
                &left_side,
                kind,
                true,
                &identical_left,
            ));
            reasons.extend(kind_reasons(
                "right",
                &right_side,
                kind,
                true,
                &identical_right_fn,
            ));
            compare_kind(left, right, &aligner, kind, reasons)
        })
        .collect();

    let procedures = compare_procedures(right, &parts, &aligner, left_docs, right_docs);

    Comparison {
        left: left_side,
        right: right_side,
        notes,
        parts,
        edges,
        occurrences,
        procedures,
    }
}

fn compare_parts(
    left: &Inventory,
    right: &Inventory,
    aligner: &Aligner,
    reasons: Vec<String>,
) -> PartsDiff {
    let left_parts: BTreeMap<String, &Part> = left
        .manifest
        .parts
        .iter()
        .map(|part| (aligner.path(&part.path), part))
        .collect();
    let right_parts: BTreeMap<&str, &Part> = right
        .manifest
        .parts
        .iter()
        .map(|part| (part.path.as_str(), part))
        .collect();
    let mut diff = PartsDiff {
        status: DimensionStatus::Equal,
        reasons,
        added: Vec::new(),
        removed: Vec::new(),
        changed: Vec::new(),
        added_total: 0,
        removed_total: 0,
        changed_total: 0,
        unchanged: 0,
    };
    for (path, part) in &right_parts {
        if !left_parts.contains_key(*path) {
            diff.added_total += 1;
            if diff.added.len() < MAX_LISTED {
                diff.added.push((*part).clone());
            }
        }
    }
    for (path, part) in &left_parts {
        match right_parts.get(path.as_str()) {
            None => {
                diff.removed_total += 1;
                if diff.removed.len() < MAX_LISTED {
                    diff.removed.push(Part {
                        path: path.clone(),
                        ..(*part).clone()
                    });
                }
            }
            Some(other) => {
                if part.sha256 != other.sha256 || part.size != other.size || part.kind != other.kind
                {
                    diff.changed_total += 1;
                    if diff.changed.len() < MAX_LISTED {
                        diff.changed.push(PartChange {
                            path: path.clone(),
                            left_kind: part.kind,
                            right_kind: other.kind,
                            left_sha256: part.sha256.clone(),
                            right_sha256: other.sha256.clone(),
                            left_size: part.size,
                            right_size: other.size,
                        });
                    }
                } else {
                    diff.unchanged += 1;
                }
            }
        }
    }
    let differs = diff.added_total + diff.removed_total + diff.changed_total > 0;
    diff.status = status_of(&diff.reasons, differs);
    diff
}

type EdgeKey = (String, EdgeKind, String);

fn compare_edges(
    left: &Inventory,
    right: &Inventory,
    aligner: &Aligner,
    reasons: Vec<String>,
) -> EdgesDiff {
    // Several edges may share a key when slices resolve differently; they are compared as sets.
    let mut left_edges: BTreeMap<EdgeKey, Vec<Edge>> = BTreeMap::new();
    for edge in &left.edges {
        let edge = aligner.edge(edge);
        left_edges
            .entry((edge.from.clone(), edge.kind, edge.target.clone()))
            .or_default()
            .push(edge);
    }
    let mut right_edges: BTreeMap<EdgeKey, Vec<Edge>> = BTreeMap::new();
    for edge in &right.edges {
        right_edges
            .entry((edge.from.clone(), edge.kind, edge.target.clone()))
            .or_default()
            .push(edge.clone());
    }
    let mut diff = EdgesDiff {
        status: DimensionStatus::Equal,
        reasons,
        added: Vec::new(),
        removed: Vec::new(),
        changed: Vec::new(),
    };
    for (key, edges) in &right_edges {
        if !left_edges.contains_key(key) {
            diff.added.extend(edges.iter().cloned());
        }
    }
    for (key, edges) in &left_edges {
        match right_edges.get(key) {
            None => diff.removed.extend(edges.iter().cloned()),
            Some(others) if others != edges => {
                for (l, r) in edges.iter().zip(others.iter()) {
                    diff.changed.push(EdgeChange {
                        left: l.clone(),
                        right: r.clone(),
                    });
                }
                // Unpaired extras on either side count as removed or added.
                diff.removed
                    .extend(edges.iter().skip(others.len()).cloned());
                diff.added.extend(others.iter().skip(edges.len()).cloned());
            }
            Some(_) => {}
        }
    }
    diff.added.truncate(MAX_LISTED);
    diff.removed.truncate(MAX_LISTED);
    diff.changed.truncate(MAX_LISTED);
    let differs = !(diff.added.is_empty() && diff.removed.is_empty() && diff.changed.is_empty());
    diff.status = status_of(&diff.reasons, differs);
    diff
}

fn compare_kind(
    left: &Inventory,
    right: &Inventory,
    aligner: &Aligner,
    kind: OccurrenceKind,
    reasons: Vec<String>,
) -> OccurrenceKindDiff {
    let left_set: BTreeSet<OccurrenceRef> = left
        .occurrences()
        .filter(|o| o.kind == kind)
        .map(|o| OccurrenceRef {
            part: aligner.path(&o.part),
            key: o.key.clone(),
            value: o.value.clone(),
        })
        .collect();
    let right_set: BTreeSet<OccurrenceRef> = right
        .occurrences()
        .filter(|o| o.kind == kind)
        .map(|o| OccurrenceRef {
            part: o.part.clone(),
            key: o.key.clone(),
            value: o.value.clone(),
        })
        .collect();
    let added: Vec<&OccurrenceRef> = right_set.difference(&left_set).collect();
    let removed: Vec<&OccurrenceRef> = left_set.difference(&right_set).collect();
    let differs = !(added.is_empty() && removed.is_empty());
    OccurrenceKindDiff {
        kind,
        status: status_of(&reasons, differs),
        reasons,
        added_total: added.len() as u64,
        removed_total: removed.len() as u64,
        added: added.into_iter().take(MAX_LISTED).cloned().collect(),
        removed: removed.into_iter().take(MAX_LISTED).cloned().collect(),
    }
}

fn compare_procedures(
    right: &Inventory,
    parts: &PartsDiff,
    aligner: &Aligner,
    left_docs: Option<&PartDocuments>,
    right_docs: Option<&PartDocuments>,
) -> ProceduresDiff {
    let mut diff = ProceduresDiff {
        status: DimensionStatus::Unknown,
        reasons: Vec::new(),
        added_total: 0,
        removed_total: 0,
        changed_total: 0,
        unchanged_total: 0,
        matched_by: MatchedBy::default(),
        parts: Vec::new(),
    };
    if parts.status == DimensionStatus::Unknown {
        diff.reasons.push(String::from(
            "the parts dimension is unknown, so changed executables are not known",
        ));
        diff.reasons.extend(parts.reasons.iter().cloned());
        return diff;
    }
    if parts.changed.len() as u64 != parts.changed_total {
        diff.reasons.push(format!(
            "more than {MAX_LISTED} parts changed; procedures are compared only when every changed part is listed"
        ));
        return diff;
    }
    // A universal file's procedures live in its slices, which are parts of their own.
    let containers: BTreeSet<&str> = right
        .manifest
        .parts
        .iter()
        .filter(|part| part.kind.is_code())
        .filter_map(|part| part.container.as_deref())
        .collect();
    let changed: Vec<&PartChange> = parts
        .changed
        .iter()
        .filter(|change| {
            (change.left_kind.is_code() || change.right_kind.is_code())
                && !containers.contains(change.path.as_str())
        })
        .collect();
    if changed.is_empty() {
        // Identical digests imply identical procedures; nothing needs decoding.
        diff.status = DimensionStatus::Equal;
        return diff;
    }
    let (Some(left_docs), Some(right_docs)) = (left_docs, right_docs) else {
        diff.reasons.push(format!(
            "{} executable part(s) changed but their documents are not open on both sides, so their procedures were not compared",
            changed.len()
        ));
        return diff;
    };
    let left_docs: BTreeMap<String, &DocumentSpec> = left_docs
        .iter()
        .map(|(part, doc)| (aligner.path(part), doc))
        .collect();
    for change in changed {
        let entry = match (left_docs.get(&change.path), right_docs.get(&change.path)) {
            (Some(l), Some(r)) => {
                ProcedurePartDiff::of_diff(&change.path, &procdiff::compare_documents(l, r))
            }
            (l, r) => {
                let missing = match (l.is_none(), r.is_none()) {
                    (true, true) => "either side",
                    (true, false) => "the left side",
                    _ => "the right side",
                };
                ProcedurePartDiff::unknown(
                    &change.path,
                    format!("no analyzable document for {} on {missing}", change.path),
                )
            }
        };
        if let Some(reason) = &entry.reason {
            diff.reasons.push(format!("{}: {reason}", entry.part));
        }
        diff.added_total += entry.added_total;
        diff.removed_total += entry.removed_total;
        diff.changed_total += entry.changed_total;
        diff.unchanged_total += entry.unchanged_total;
        diff.matched_by.name += entry.matched_by.name;
        diff.matched_by.bytes += entry.matched_by.bytes;
        diff.matched_by.shape += entry.matched_by.shape;
        diff.matched_by.similarity += entry.matched_by.similarity;
        diff.parts.push(entry);
    }
    diff.status = combine(diff.parts.iter().map(|p| p.status));
    diff
}
