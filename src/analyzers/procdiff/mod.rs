//! Function-level comparison of two documents (issue 18): every procedure of the left is
//! matched with the right in passes — same name, identical masked bytes, same control-flow shape
//! with the same callees and strings, then similarity with a score — and each pair is reported
//! unchanged or changed (with what changed), the rest added or removed, with exact totals and
//! pages. Names are never required, so stripped builds compare too.
//!
//! The comparison is pure: two loaded [`Image`]s in, a [`ProcedureDiff`] out, whose
//! [`ProcedureDiff::page`] answers one paged request and whose [`ProcedureDiff::summary`] is the
//! shape of `compare_artifacts`' `procedures` section. A side that cannot be analyzed (it does
//! not load, has no decoder, no procedure starts, or another architecture than the other side)
//! gives status `unknown` with a reason, never `equal`.
//!
//! What "unchanged" means: the bytes of the two bodies are identical once every address-dependent
//! field is masked (see `providers::native::BodyFacts`), they call corresponding procedures and
//! the same imports, and refer to the same strings. Data references other than strings are
//! masked and not compared: two bodies that differ only in which global variable they touch
//! count as unchanged.

mod detail;
mod matcher;
mod profile;

#[cfg(test)]
mod public_code;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::analyzers::artifact::DimensionStatus;
use crate::providers::native::{DocumentSpec, Image, hex};

use matcher::{CalleeKey, Matching, Which, callee_key};
use profile::{Callee, Profile};

pub use detail::{
    DiffLine, LineKind, MAX_DETAIL_INSTRUCTIONS, MAX_DETAIL_LINES, PairDetail, pair_detail,
};
pub use matcher::{SIMILARITY_THRESHOLD, STRUCTURAL_THRESHOLD, TIE_MARGIN};

/// Most entries one page returns.
pub const MAX_PAGE: usize = 1_000;

/// Most elements listed per side of a set change; the totals are exact.
pub const MAX_LISTED_CHANGES: usize = 20;

/// The pass that matched a pair.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum MatchReason {
    /// The same name on both sides.
    Name,
    /// Identical bytes once addresses, relocated and PC-relative operands are masked.
    Bytes,
    /// The same control-flow graph shape, the same callees and the same strings.
    Shape,
    /// Similar mnemonics, size, blocks, callees, strings and position; see `score`.
    Similarity,
}

/// How sure a match is, weakest first.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum MatchClass {
    /// Similarity only; see `score` and `agreed`.
    Weak,
    /// A name, or the same control-flow shape with matched callees and strings, or identical
    /// bytes told apart from their duplicates by callees, context or position.
    Strong,
    /// Identical masked bytes, a body that occurs once on each side.
    Exact,
}

/// A feature of two procedures that agreed when they were matched.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Feature {
    /// The same name.
    Name,
    /// Identical masked bytes.
    Bytes,
    /// The same control-flow graph.
    Shape,
    /// Matched callees (at least half, for similarity).
    Callees,
    /// The same strings (at least half, for similarity).
    Strings,
    /// Most mnemonics.
    Mnemonics,
    /// Instruction count within 20%.
    Size,
    /// Blocks and edges within 20%.
    Blocks,
    /// At least half of the constants.
    Constants,
    /// Callers and callees matched to each other's.
    Context,
    /// Between the same matched neighbours.
    Position,
}

const FEATURES: [Feature; 11] = [
    Feature::Name,
    Feature::Bytes,
    Feature::Shape,
    Feature::Callees,
    Feature::Strings,
    Feature::Mnemonics,
    Feature::Size,
    Feature::Blocks,
    Feature::Constants,
    Feature::Context,
    Feature::Position,
];

/// What became of a procedure.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum ProcedureStatus {
    /// Matched, and nothing compared differs.
    Unchanged,
    /// Matched, and `changes` says what differs.
    Changed,
    /// Only on the right.
    Added,
    /// Only on the left.
    Removed,
    /// Several candidates, none clearly better (identical bodies, close scores): listed in
    /// `candidates`, not counted as matched.
    Ambiguous,
    /// Paired by position alone with a score below 0.6: likely one removed and one added,
    /// so not counted as changed.
    Uncertain,
}

/// How many pairs each pass matched.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MatchedBy {
    /// Pairs matched by name.
    pub name: u64,
    /// Pairs matched by identical masked bytes.
    pub bytes: u64,
    /// Pairs matched by control-flow shape, callees and strings.
    pub shape: u64,
    /// Pairs matched by similarity.
    pub similarity: u64,
}

/// The comparison in one line: the shape of `compare_artifacts`' `procedures` section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ProceduresSummary {
    /// `equal` only when both sides were analyzed and every procedure matched unchanged;
    /// `different` when anything was added, removed or changed; `unknown` when a side could not
    /// be analyzed (`reasons` says why).
    pub status: DimensionStatus,
    /// Why the status is unknown, when it is.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
    /// Exact number of procedures only on the right.
    pub added_total: u64,
    /// Exact number of procedures only on the left.
    pub removed_total: u64,
    /// Exact number of matched procedures that differ.
    pub changed_total: u64,
    /// Exact number of matched procedures that do not differ.
    pub unchanged_total: u64,
    /// Exact number of left procedures with several candidates and no match.
    #[serde(default)]
    pub ambiguous_total: u64,
    /// Exact number of pairs below the similarity threshold (neither changed nor unchanged).
    #[serde(default)]
    pub uncertain_total: u64,
    /// Matched (changed or unchanged) pairs per pass.
    pub matched_by: MatchedBy,
}

impl ProceduresSummary {
    /// The summary of several documents compared one by one (the changed executables of an
    /// artifact): totals add up; the status is `different` when any document differs, else
    /// `unknown` when any is unknown (with every reason), else `equal`; an empty list is
    /// `equal` (nothing to compare differs).
    pub fn combine<'a>(
        parts: impl IntoIterator<Item = &'a ProceduresSummary>,
    ) -> ProceduresSummary {
        let mut out = ProceduresSummary {
            status: DimensionStatus::Equal,
            reasons: Vec::new(),
            added_total: 0,
            removed_total: 0,
            changed_total: 0,
            unchanged_total: 0,
            ambiguous_total: 0,
            uncertain_total: 0,
            matched_by: MatchedBy::default(),
        };
        let mut unknown = false;
        for part in parts {
            match part.status {
                DimensionStatus::Different => out.status = DimensionStatus::Different,
                DimensionStatus::Unknown => unknown = true,
                DimensionStatus::Equal => {}
            }
            out.reasons.extend(part.reasons.iter().cloned());
            out.added_total += part.added_total;
            out.removed_total += part.removed_total;
            out.changed_total += part.changed_total;
            out.unchanged_total += part.unchanged_total;
            out.ambiguous_total += part.ambiguous_total;
            out.uncertain_total += part.uncertain_total;
            out.matched_by.name += part.matched_by.name;
            out.matched_by.bytes += part.matched_by.bytes;
            out.matched_by.shape += part.matched_by.shape;
            out.matched_by.similarity += part.matched_by.similarity;
        }
        if unknown && out.status == DimensionStatus::Equal {
            out.status = DimensionStatus::Unknown;
        }
        out
    }
}

/// One side of a matched, added or removed procedure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ProcedureSide {
    /// Entry address (canonical lowercase `0x` hex).
    #[serde(with = "hex")]
    #[schemars(with = "String")]
    pub address: u64,
    /// Name, when the document names it.
    pub name: Option<String>,
    /// The analyst's name, beside `name` (an annotation; absent when none). Left out of the
    /// schema (tools/list budget), which allows it like any other member.
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub analyst: Option<crate::ids::AnalystName>,
    /// Bytes of code, trailing padding excluded (the extent, padding included, when the
    /// documents are byte-identical and nothing was decoded).
    pub size: u64,
    /// Instructions, trailing padding excluded; absent when nothing was decoded.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub instructions: u32,
    /// Basic blocks; absent when nothing was decoded.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub blocks: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// A number that differs between the sides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Delta {
    /// On the left.
    pub left: u64,
    /// On the right.
    pub right: u64,
}

/// Elements of a set (or multiset) that differ between the sides.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SetChange {
    /// Only on the right (first 20).
    pub added: Vec<String>,
    /// Only on the left (first 20).
    pub removed: Vec<String>,
    /// Exact number only on the right.
    pub added_total: u64,
    /// Exact number only on the left.
    pub removed_total: u64,
}

/// What differs in a changed procedure; absent fields are equal.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Changes {
    /// Bytes of code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<Delta>,
    /// Basic blocks, present when their number differs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocks: Option<Delta>,
    /// Instructions, present when their number differs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<Delta>,
    /// The masked bytes (or the control-flow graph) differ, whatever the counts say.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub code: bool,
    /// Callees: imports by name, procedures by name or address on their side. A callee
    /// without a counterpart on the other side counts as changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub callees: Option<SetChange>,
    /// Strings referred to, by text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strings: Option<SetChange>,
    /// Immediate constants that are not addresses, as hex (a multiset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constants: Option<SetChange>,
}

impl Changes {
    fn any(&self) -> bool {
        self.size.is_some()
            || self.blocks.is_some()
            || self.instructions.is_some()
            || self.code
            || self.callees.is_some()
            || self.strings.is_some()
            || self.constants.is_some()
    }
}

/// One procedure's fate: a matched pair, or a procedure on one side only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProcedureEntry {
    /// Unchanged, changed, added, removed, ambiguous or uncertain.
    pub status: ProcedureStatus,
    /// The left procedure (absent when added).
    pub left: Option<ProcedureSide>,
    /// The right procedure (absent when removed or ambiguous).
    pub right: Option<ProcedureSide>,
    /// The pass that matched the pair (absent when unpaired).
    pub matched_by: Option<MatchReason>,
    /// How sure the match is (absent when unpaired).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<MatchClass>,
    /// The features that agreed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agreed: Vec<Feature>,
    /// For an ambiguous procedure, the right procedures it could be.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub candidates: Vec<ProcedureSide>,
    /// Similarity score in `[0, 1]` (four decimals) for pairs matched by similarity.
    pub score: Option<f64>,
    /// What differs, for changed pairs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes: Option<Changes>,
}

/// A document as the comparison saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DocumentRef {
    /// Document name.
    pub name: String,
    /// Architecture.
    pub architecture: String,
    /// Procedures compared (every procedure of the document, when it could be analyzed).
    pub procedures: u64,
}

/// Which entries a page lists, and where it starts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PageRequest {
    /// Only entries with this status; all when absent.
    pub status: Option<ProcedureStatus>,
    /// Index of the first entry.
    pub offset: usize,
    /// Most entries returned (at most 1000).
    pub limit: usize,
}

/// One page of a comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProcedureDiffPage {
    /// The older (or reference) document.
    pub left: DocumentRef,
    /// The newer document.
    pub right: DocumentRef,
    /// Totals and status of the whole comparison.
    pub summary: ProceduresSummary,
    /// Passes that stopped short, and what that leaves open.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The status filter of this page, when one was asked for.
    pub status: Option<ProcedureStatus>,
    /// Index of the first entry of this page.
    pub offset: usize,
    /// Exact number of entries the filter selects.
    pub total: u64,
    /// Entries `[offset, offset + limit)`: changed first, then added, removed, uncertain,
    /// ambiguous and unchanged, each by address.
    pub entries: Vec<ProcedureEntry>,
    /// Offset of the next page, when there is one.
    pub next_offset: Option<usize>,
    /// The instruction-level diff of the one pair asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<PairDetail>,
}

/// The complete comparison of two documents, held in memory so pages can be cut from it.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcedureDiff {
    left: DocumentRef,
    right: DocumentRef,
    summary: ProceduresSummary,
    notes: Vec<String>,
    entries: Vec<ProcedureEntry>,
}

impl ProcedureDiff {
    /// The left (older, or reference) document.
    pub fn left(&self) -> &DocumentRef {
        &self.left
    }

    /// The right (newer) document.
    pub fn right(&self) -> &DocumentRef {
        &self.right
    }

    /// Passes that stopped short, and what that leaves open.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Totals and status, for `compare_artifacts`.
    pub fn summary(&self) -> &ProceduresSummary {
        &self.summary
    }

    /// Every entry, in page order.
    pub fn entries(&self) -> &[ProcedureEntry] {
        &self.entries
    }

    /// The entry of the left procedure starting at `address`.
    pub fn find_left(&self, address: u64) -> Option<&ProcedureEntry> {
        self.entries
            .iter()
            .find(|e| e.left.as_ref().is_some_and(|s| s.address == address))
    }

    /// The entry of the right procedure starting at `address`.
    pub fn find_right(&self, address: u64) -> Option<&ProcedureEntry> {
        self.entries
            .iter()
            .find(|e| e.right.as_ref().is_some_and(|s| s.address == address))
    }

    /// One page of entries.
    pub fn page(&self, request: &PageRequest) -> ProcedureDiffPage {
        let selected: Vec<&ProcedureEntry> = self
            .entries
            .iter()
            .filter(|e| request.status.is_none_or(|s| e.status == s))
            .collect();
        let limit = request.limit.min(MAX_PAGE);
        let entries: Vec<ProcedureEntry> = selected
            .iter()
            .skip(request.offset)
            .take(limit)
            .map(|e| (*e).clone())
            .collect();
        let shown_end = request.offset.saturating_add(entries.len());
        ProcedureDiffPage {
            left: self.left.clone(),
            right: self.right.clone(),
            summary: self.summary.clone(),
            notes: self.notes.clone(),
            status: request.status,
            offset: request.offset,
            total: selected.len() as u64,
            entries,
            next_offset: (limit > 0 && shown_end < selected.len()).then_some(shown_end),
            detail: None,
        }
    }

    /// The page of one pair: its entry alone, with its instruction-level diff.
    pub fn pair_page(&self, entry: &ProcedureEntry, detail: PairDetail) -> ProcedureDiffPage {
        ProcedureDiffPage {
            left: self.left.clone(),
            right: self.right.clone(),
            summary: self.summary.clone(),
            notes: self.notes.clone(),
            status: None,
            offset: 0,
            total: 1,
            entries: vec![entry.clone()],
            next_offset: None,
            detail: Some(detail),
        }
    }

    fn unknown(left: DocumentRef, right: DocumentRef, reason: String) -> ProcedureDiff {
        ProcedureDiff {
            left,
            right,
            summary: ProceduresSummary {
                status: DimensionStatus::Unknown,
                reasons: vec![reason],
                added_total: 0,
                removed_total: 0,
                changed_total: 0,
                unchanged_total: 0,
                ambiguous_total: 0,
                uncertain_total: 0,
                matched_by: MatchedBy::default(),
            },
            notes: Vec::new(),
            entries: Vec::new(),
        }
    }
}

fn document_ref(doc: &DocumentSpec, procedures: u64) -> DocumentRef {
    DocumentRef {
        name: doc.name.clone(),
        architecture: doc.architecture.to_string(),
        procedures,
    }
}

/// Loads two documents and compares them; a document that does not load makes the result
/// `unknown` with the reason.
pub fn compare_documents(left: &DocumentSpec, right: &DocumentSpec) -> ProcedureDiff {
    match (Image::load(left), Image::load(right)) {
        (Ok(l), Ok(r)) => compare_images(&l, &r),
        (l, r) => {
            let reason = [(left, l.err()), (right, r.err())]
                .into_iter()
                .filter_map(|(doc, e)| e.map(|e| format!("{} cannot be loaded: {e}", doc.name)))
                .collect::<Vec<_>>()
                .join("; ");
            ProcedureDiff::unknown(document_ref(left, 0), document_ref(right, 0), reason)
        }
    }
}

/// Compares the procedures of two loaded documents.
pub fn compare_images(left: &Image, right: &Image) -> ProcedureDiff {
    let lref = document_ref(left.document(), left.procedures().len() as u64);
    let rref = document_ref(right.document(), right.procedures().len() as u64);
    if left.architecture() != right.architecture() {
        let reason = format!(
            "the documents have different architectures ({} and {}), so their procedure bodies cannot be compared",
            left.architecture(),
            right.architecture()
        );
        return ProcedureDiff::unknown(lref, rref, reason);
    }
    for image in [left, right] {
        let has_code = image.sections().iter().any(|s| s.executable);
        if image.procedures().is_empty() {
            let reason = if has_code {
                format!(
                    "{} has code but no procedure starts were found, so its procedures cannot be compared",
                    image.document().name
                )
            } else {
                format!("{} has no code to compare", image.document().name)
            };
            return ProcedureDiff::unknown(lref, rref, reason);
        }
    }
    if left.contents() == right.contents() {
        return identical(lref, rref, left);
    }
    let (lp, rp) = match (profile::profiles(left), profile::profiles(right)) {
        (Ok(l), Ok(r)) => (l, r),
        (l, r) => {
            let reason = [(left, l.err()), (right, r.err())]
                .into_iter()
                .filter_map(|(image, e)| {
                    e.map(|e| format!("{} cannot be analyzed: {e}", image.document().name))
                })
                .collect::<Vec<_>>()
                .join("; ");
            return ProcedureDiff::unknown(lref, rref, reason);
        }
    };
    let m = matcher::match_procedures(&lp, &rp);
    assemble(lref, rref, &lp, &rp, &m)
}

/// Two byte-identical documents: every procedure is its own counterpart, unchanged, without
/// matching or decoding anything.
fn identical(lref: DocumentRef, rref: DocumentRef, image: &Image) -> ProcedureDiff {
    let entries: Vec<ProcedureEntry> = image
        .procedures()
        .iter()
        .enumerate()
        .map(|(i, p)| {
            // The extent, not the decoded body: nothing is decoded, so counts are absent.
            let side = ProcedureSide {
                analyst: None,
                address: p.address,
                name: p.name.clone(),
                size: image.procedure_end(i, u64::MAX) - p.address,
                instructions: 0,
                blocks: 0,
            };
            ProcedureEntry {
                status: ProcedureStatus::Unchanged,
                left: Some(side.clone()),
                right: Some(side),
                matched_by: Some(MatchReason::Bytes),
                confidence: Some(MatchClass::Exact),
                agreed: vec![Feature::Bytes],
                candidates: Vec::new(),
                score: None,
                changes: None,
            }
        })
        .collect();
    let n = entries.len() as u64;
    ProcedureDiff {
        left: lref,
        right: rref,
        summary: ProceduresSummary {
            status: DimensionStatus::Equal,
            reasons: Vec::new(),
            added_total: 0,
            removed_total: 0,
            changed_total: 0,
            unchanged_total: n,
            ambiguous_total: 0,
            uncertain_total: 0,
            matched_by: MatchedBy {
                bytes: n,
                ..MatchedBy::default()
            },
        },
        notes: vec!["the documents are byte for byte identical".to_string()],
        entries,
    }
}

fn side(p: &Profile) -> ProcedureSide {
    ProcedureSide {
        analyst: None,
        address: p.address,
        name: p.name.clone(),
        size: p.facts.code_bytes,
        instructions: p.facts.instructions,
        blocks: p.facts.blocks,
    }
}

fn features(agreed: u16) -> Vec<Feature> {
    FEATURES
        .into_iter()
        .filter(|&f| agreed & matcher::bit(f) != 0)
        .collect()
}

fn unpaired(
    status: ProcedureStatus,
    left: Option<ProcedureSide>,
    right: Option<ProcedureSide>,
) -> ProcedureEntry {
    ProcedureEntry {
        status,
        left,
        right,
        matched_by: None,
        confidence: None,
        agreed: Vec::new(),
        candidates: Vec::new(),
        score: None,
        changes: None,
    }
}

/// Builds the entries and totals from a matching.
fn assemble(
    lref: DocumentRef,
    rref: DocumentRef,
    left: &[Profile],
    right: &[Profile],
    m: &Matching,
) -> ProcedureDiff {
    let mut entries = Vec::with_capacity(left.len().max(right.len()));
    let mut matched_by = MatchedBy::default();
    let ambiguous = m.ambiguities();
    let mut candidate_of = vec![false; right.len()];
    for (l, pair) in m.left.iter().enumerate() {
        let lp = &left[l];
        let Some(pair) = pair else {
            let mut entry = unpaired(ProcedureStatus::Removed, Some(side(lp)), None);
            if let Some(rs) = ambiguous.get(&(l as u32)) {
                entry.status = ProcedureStatus::Ambiguous;
                entry.candidates = rs.iter().map(|&r| side(&right[r as usize])).collect();
                rs.iter().for_each(|&r| candidate_of[r as usize] = true);
            }
            entries.push(entry);
            continue;
        };
        let r = pair.right as usize;
        let changes = changes(left, right, l, r, m, &ambiguous);
        let uncertain = pair.score.is_some_and(|s| s < SIMILARITY_THRESHOLD);
        let status = if uncertain {
            ProcedureStatus::Uncertain
        } else if changes.any() {
            ProcedureStatus::Changed
        } else {
            ProcedureStatus::Unchanged
        };
        if !uncertain {
            match pair.reason {
                MatchReason::Name => matched_by.name += 1,
                MatchReason::Bytes => matched_by.bytes += 1,
                MatchReason::Shape => matched_by.shape += 1,
                MatchReason::Similarity => matched_by.similarity += 1,
            }
        }
        entries.push(ProcedureEntry {
            status,
            left: Some(side(lp)),
            right: Some(side(&right[r])),
            matched_by: Some(pair.reason),
            confidence: Some(pair.class),
            agreed: features(pair.agreed),
            candidates: Vec::new(),
            score: pair.score,
            changes: changes.any().then_some(changes),
        });
    }
    for (r, pair) in m.right.iter().enumerate() {
        if pair.is_none() && !candidate_of[r] {
            entries.push(unpaired(
                ProcedureStatus::Added,
                None,
                Some(side(&right[r])),
            ));
        }
    }
    let rank = |s: ProcedureStatus| match s {
        ProcedureStatus::Changed => 0,
        ProcedureStatus::Added => 1,
        ProcedureStatus::Removed => 2,
        ProcedureStatus::Uncertain => 3,
        ProcedureStatus::Ambiguous => 4,
        ProcedureStatus::Unchanged => 5,
    };
    entries.sort_by_key(|e| {
        let address = e
            .left
            .as_ref()
            .or(e.right.as_ref())
            .map_or(0, |s| s.address);
        (rank(e.status), address)
    });
    let count = |s: ProcedureStatus| entries.iter().filter(|e| e.status == s).count() as u64;
    let (added, removed, changed, unchanged, ambiguous, uncertain) = (
        count(ProcedureStatus::Added),
        count(ProcedureStatus::Removed),
        count(ProcedureStatus::Changed),
        count(ProcedureStatus::Unchanged),
        count(ProcedureStatus::Ambiguous),
        count(ProcedureStatus::Uncertain),
    );
    let status = if added + removed + changed + ambiguous + uncertain == 0 {
        DimensionStatus::Equal
    } else {
        DimensionStatus::Different
    };
    ProcedureDiff {
        left: lref,
        right: rref,
        summary: ProceduresSummary {
            status,
            reasons: Vec::new(),
            added_total: added,
            removed_total: removed,
            changed_total: changed,
            unchanged_total: unchanged,
            ambiguous_total: ambiguous,
            uncertain_total: uncertain,
            matched_by,
        },
        notes: m.notes.clone(),
        entries,
    }
}

/// A callee's display text on its own side: the import's name, else the procedure's name, else
/// its address.
fn callee_text(profiles: &[Profile], callee: &Callee) -> String {
    match callee {
        Callee::Import(name) => name.clone(),
        Callee::Address(at) => format!("{at:#x}"),
        Callee::Procedure(j) => {
            let p = &profiles[*j as usize];
            p.name
                .clone()
                .unwrap_or_else(|| format!("{:#x}", p.address))
        }
    }
}

fn set_change(added: Vec<String>, removed: Vec<String>) -> Option<SetChange> {
    (!added.is_empty() || !removed.is_empty()).then(|| SetChange {
        added_total: added.len() as u64,
        removed_total: removed.len() as u64,
        added: added.into_iter().take(MAX_LISTED_CHANGES).collect(),
        removed: removed.into_iter().take(MAX_LISTED_CHANGES).collect(),
    })
}

/// Elements of `a` not matched by an element of `b` and the other way round, as multisets.
fn multiset_difference<T: Ord + Clone>(a: &[T], b: &[T]) -> (Vec<T>, Vec<T>) {
    let (mut only_a, mut only_b) = (Vec::new(), Vec::new());
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        match (a.get(i), b.get(j)) {
            (Some(x), Some(y)) if x == y => {
                i += 1;
                j += 1;
            }
            (Some(x), Some(y)) if x < y => {
                only_a.push(x.clone());
                i += 1;
            }
            (Some(_), Some(y)) => {
                only_b.push(y.clone());
                j += 1;
            }
            (Some(x), None) => {
                only_a.push(x.clone());
                i += 1;
            }
            (None, Some(y)) => {
                only_b.push(y.clone());
                j += 1;
            }
            (None, None) => break,
        }
    }
    (only_a, only_b)
}

/// Callees of a pair that have no counterpart among the other's: `(removed, added)` texts.
fn callee_difference(
    left: &[Profile],
    right: &[Profile],
    l: usize,
    r: usize,
    m: &Matching,
    ambiguous: &BTreeMap<u32, Vec<u32>>,
) -> (Vec<String>, Vec<String>) {
    fn keyed<'a>(
        which: Which,
        profiles: &'a [Profile],
        i: usize,
        m: &Matching,
    ) -> Vec<(CalleeKey<'a>, &'a Callee)> {
        profiles[i]
            .callees
            .iter()
            .map(|c| (callee_key(which, profiles, c, m), c))
            .collect()
    }
    // An unmatched callee equals nothing: the procedure it stands for has no counterpart.
    fn shared<'a>(keys: &[(CalleeKey<'a>, &Callee)]) -> BTreeSet<CalleeKey<'a>> {
        keys.iter()
            .map(|(k, _)| k.clone())
            .filter(|k| *k != CalleeKey::Unmatched)
            .collect()
    }
    let (lk, rk) = (
        keyed(Which::Left, left, l, m),
        keyed(Which::Right, right, r, m),
    );
    let (lset, rset) = (shared(&lk), shared(&rk));
    let mut gone: Vec<&Callee> = lk
        .iter()
        .filter(|(k, _)| !rset.contains(k))
        .map(|(_, c)| *c)
        .collect();
    let mut new: Vec<&Callee> = rk
        .iter()
        .filter(|(k, _)| !lset.contains(k))
        .map(|(_, c)| *c)
        .collect();
    // An ambiguous callee whose candidate the other side calls is the same call, as far as
    // anything can tell: no change.
    gone.retain(|c| {
        let Callee::Procedure(j) = c else { return true };
        let Some(candidates) = ambiguous.get(j) else {
            return true;
        };
        match new
            .iter()
            .position(|n| matches!(n, Callee::Procedure(k) if candidates.contains(k)))
        {
            Some(at) => {
                new.remove(at);
                false
            }
            None => true,
        }
    });
    let mut removed: Vec<String> = gone.iter().map(|c| callee_text(left, c)).collect();
    let mut added: Vec<String> = new.iter().map(|c| callee_text(right, c)).collect();
    removed.sort();
    added.sort();
    (removed, added)
}

/// What differs between a matched pair.
fn changes(
    left: &[Profile],
    right: &[Profile],
    l: usize,
    r: usize,
    m: &Matching,
    ambiguous: &BTreeMap<u32, Vec<u32>>,
) -> Changes {
    let (lp, rp) = (&left[l], &right[r]);
    let (lf, rf) = (&lp.facts, &rp.facts);
    let delta = |a: u64, b: u64| Delta { left: a, right: b };
    let (removed_callees, added_callees) = callee_difference(left, right, l, r, m, ambiguous);
    let (removed_strings, added_strings) = multiset_difference(&lp.strings, &rp.strings);
    let (removed_constants, added_constants) = multiset_difference(&lf.constants, &rf.constants);
    let hex = |v: Vec<u64>| v.into_iter().map(|c| format!("{c:#x}")).collect::<Vec<_>>();
    Changes {
        size: (lf.code_bytes != rf.code_bytes).then(|| delta(lf.code_bytes, rf.code_bytes)),
        blocks: (lf.blocks != rf.blocks).then(|| delta(u64::from(lf.blocks), u64::from(rf.blocks))),
        instructions: (lf.instructions != rf.instructions)
            .then(|| delta(u64::from(lf.instructions), u64::from(rf.instructions))),
        code: lf.masked_digest != rf.masked_digest || lf.shape_digest != rf.shape_digest,
        callees: set_change(added_callees, removed_callees),
        strings: set_change(added_strings, removed_strings),
        constants: set_change(hex(added_constants), hex(removed_constants)),
    }
}
