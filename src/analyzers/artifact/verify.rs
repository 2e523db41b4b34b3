//! Verification of a reconstruction: a finite list of typed claims, each evaluated against the
//! evidence the caller supplies to `pass`, `fail` or `unknown`, never wider than its own claim.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

use super::compare::{Comparison, DimensionStatus};
use super::{Inventory, OccurrenceKind};
use crate::analyzers::procdiff::{ProcedureDiffPage, ProcedureEntry, ProcedureStatus};

/// Most claims one specification may hold; a longer one is not evaluated.
pub const MAX_CLAIMS: usize = 1_000;

/// Which dimension of a comparison a claim is about. Written as text: `parts`, `edges`,
/// `procedures`, `occurrences` (every kind) or `occurrences/<kind>` (e.g.
/// `occurrences/entitlement`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dimension {
    /// Added, removed and changed parts.
    Parts,
    /// Library and bundle edges.
    Edges,
    /// Procedures of changed executables.
    Procedures,
    /// Occurrences of one kind, or of every kind when `None`.
    Occurrences(Option<OccurrenceKind>),
}

impl fmt::Display for Dimension {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dimension::Parts => f.write_str("parts"),
            Dimension::Edges => f.write_str("edges"),
            Dimension::Procedures => f.write_str("procedures"),
            Dimension::Occurrences(None) => f.write_str("occurrences"),
            Dimension::Occurrences(Some(kind)) => write!(f, "occurrences/{}", kind.as_str()),
        }
    }
}

impl std::str::FromStr for Dimension {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim() {
            "parts" => Ok(Dimension::Parts),
            "edges" => Ok(Dimension::Edges),
            "procedures" => Ok(Dimension::Procedures),
            "occurrences" => Ok(Dimension::Occurrences(None)),
            other => other
                .strip_prefix("occurrences/")
                .and_then(OccurrenceKind::parse)
                .map(|kind| Dimension::Occurrences(Some(kind)))
                .ok_or_else(|| {
                    format!(
                        "unknown dimension {other:?}: use parts, edges, procedures, occurrences or occurrences/<kind>"
                    )
                }),
        }
    }
}

impl Serialize for Dimension {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Dimension {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for Dimension {
    fn schema_name() -> Cow<'static, str> {
        "Dimension".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "pattern": "^(parts|edges|procedures|occurrences(/[a-z-]+)?)$",
            "description": "Comparison dimension: parts, edges, procedures, occurrences (all kinds) or occurrences/<kind>."
        })
    }
}

/// One claim of a reconstruction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "claim", rename_all = "snake_case", deny_unknown_fields)]
pub enum Claim {
    /// A part exists (with this digest, if given) in an inventory.
    PartExists {
        /// Part path.
        part: String,
        /// Expected lowercase hex SHA-256.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sha256: Option<String>,
        /// Only this inventory evidence; otherwise any supplied inventory.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        inventory_evidence_id: Option<String>,
    },
    /// An occurrence with this kind, key (if given) and value exists.
    OccurrenceValue {
        /// Occurrence kind.
        kind: OccurrenceKind,
        /// Expected key; any key when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        key: Option<String>,
        /// Expected value.
        value: String,
        /// Only in this part; any part when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        part: Option<String>,
        /// Only this inventory evidence; otherwise any supplied inventory.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        inventory_evidence_id: Option<String>,
    },
    /// A procedure of this name exists in the document.
    ProcedureExists {
        /// Document (part path of the image).
        document: String,
        /// Procedure name.
        name: String,
    },
    /// The comparison found this dimension equal.
    NoChange {
        /// Evidence id of the comparison.
        comparison_evidence_id: String,
        /// Dimension.
        dimension: Dimension,
    },
    /// The comparison found this dimension different.
    Changed {
        /// Evidence id of the comparison.
        comparison_evidence_id: String,
        /// Dimension.
        dimension: Dimension,
    },
    /// A compare_procedures page recorded this procedure unchanged.
    ProcedureUnchanged {
        /// Evidence id of the compare_procedures result.
        comparison_evidence_id: String,
        /// Name or 0x start address, on either side.
        procedure: String,
    },
    /// A compare_procedures page recorded this procedure changed.
    ProcedureChanged {
        /// Evidence id of the compare_procedures result.
        comparison_evidence_id: String,
        /// Name or 0x start address, on either side.
        procedure: String,
    },
    /// The comparison (compare_artifacts or compare_procedures) counted exactly this many
    /// procedures added.
    ProceduresAdded {
        /// Evidence id of the comparison.
        comparison_evidence_id: String,
        /// Procedures added.
        count: u64,
    },
}

// The number in the sentence below is `MAX_CLAIMS` (a test keeps them equal): the doc becomes
// the schema description clients read, where a link to a Rust constant means nothing.
/// A finite reconstruction specification of at most 1,000 claims.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReconstructionSpec {
    /// The claims, evaluated independently.
    pub claims: Vec<Claim>,
}

/// An inventory recorded as Evidence.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct InventoryEvidence {
    /// Its Evidence id.
    pub evidence_id: String,
    /// The inventory.
    pub inventory: Inventory,
}

/// A comparison recorded as Evidence.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ComparisonEvidence {
    /// Its Evidence id.
    pub evidence_id: String,
    /// The comparison.
    pub comparison: Comparison,
}

/// Procedure names of one document recorded as Evidence.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ProcedureEvidence {
    /// Its Evidence id.
    pub evidence_id: String,
    /// Document (part path of the image).
    pub document: String,
    /// Procedure names.
    pub names: BTreeSet<String>,
    /// Whether `names` is every named procedure of the document (not a page or a search).
    pub complete: bool,
}

/// A function-level comparison page recorded as Evidence.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ProcedureComparisonEvidence {
    /// Its Evidence id.
    pub evidence_id: String,
    /// The page as recorded: its totals are exact, its entries one page.
    pub page: ProcedureDiffPage,
}

/// The evidence a verification may rest on, supplied by the caller.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct EvidenceView {
    /// Inventories.
    pub inventories: Vec<InventoryEvidence>,
    /// Comparisons.
    pub comparisons: Vec<ComparisonEvidence>,
    /// Procedure name lists.
    pub procedures: Vec<ProcedureEvidence>,
    /// Function-level comparisons.
    #[serde(default)]
    pub procedure_comparisons: Vec<ProcedureComparisonEvidence>,
}

/// Outcome of a claim or of a whole verification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ClaimStatus {
    /// The evidence shows the claim holds.
    Pass,
    /// The evidence shows the claim does not hold.
    Fail,
    /// The evidence is missing, incomplete or incompatible.
    Unknown,
}

/// The evaluation of one claim.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ClaimResult {
    /// Position of the claim in the specification.
    pub index: u32,
    /// The claim as evaluated: the specification's own claim at `index`, echoed back. Its
    /// schema is the input's (`verify_reconstruction`'s `spec.claims`), so the output schema
    /// says only that it is an object.
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    pub claim: Claim,
    /// Outcome.
    pub status: ClaimStatus,
    /// Evidence the outcome rests on.
    pub evidence_ids: Vec<String>,
    /// Why, in one sentence that states exactly what was (and was not) established.
    pub reason: String,
}

/// The evaluation of a specification.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Verdict {
    /// Pass only if every claim passes; fail if any fails; otherwise unknown.
    pub status: ClaimStatus,
    /// One result per claim, in order.
    pub claims: Vec<ClaimResult>,
    /// Reasons about the whole verification (no claims, too many, evidence refused).
    pub reasons: Vec<String>,
    /// Every Evidence id any result rests on, sorted.
    pub evidence_ids: Vec<String>,
}

fn result(claim: &Claim, status: ClaimStatus, ids: Vec<String>, reason: String) -> ClaimResult {
    ClaimResult {
        index: 0,
        claim: claim.clone(),
        status,
        evidence_ids: ids,
        reason,
    }
}

/// Evaluates `spec` against `evidence`.
pub fn verify(spec: &ReconstructionSpec, evidence: &EvidenceView) -> Verdict {
    let mut reasons = Vec::new();
    if spec.claims.is_empty() {
        return Verdict {
            status: ClaimStatus::Unknown,
            claims: Vec::new(),
            reasons: vec![String::from(
                "the specification has no claims, so nothing is verified",
            )],
            evidence_ids: Vec::new(),
        };
    }
    if spec.claims.len() > MAX_CLAIMS {
        return Verdict {
            status: ClaimStatus::Unknown,
            claims: Vec::new(),
            reasons: vec![format!(
                "the specification has {} claims, more than the {MAX_CLAIMS} allowed; split it",
                spec.claims.len()
            )],
            evidence_ids: Vec::new(),
        };
    }
    // Only schema-valid inventories count; an altered one is named and set aside.
    let mut inventories = Vec::new();
    let mut refused = Vec::new();
    for item in &evidence.inventories {
        match item.inventory.check() {
            Ok(()) => inventories.push(item),
            Err(e) => {
                reasons.push(format!(
                    "inventory evidence {} is not schema-valid and was not used: {e}",
                    item.evidence_id
                ));
                refused.push(item.evidence_id.as_str());
            }
        }
    }
    let context = Context {
        inventories,
        refused,
        evidence,
    };
    let mut claims = Vec::with_capacity(spec.claims.len());
    for (index, claim) in spec.claims.iter().enumerate() {
        let mut evaluated = context.evaluate(claim);
        evaluated.index = u32::try_from(index).unwrap_or(u32::MAX);
        claims.push(evaluated);
    }
    let status = if claims.iter().all(|c| c.status == ClaimStatus::Pass) {
        ClaimStatus::Pass
    } else if claims.iter().any(|c| c.status == ClaimStatus::Fail) {
        ClaimStatus::Fail
    } else {
        ClaimStatus::Unknown
    };
    let evidence_ids: BTreeSet<String> = claims
        .iter()
        .flat_map(|c| c.evidence_ids.iter().cloned())
        .collect();
    Verdict {
        status,
        claims,
        reasons,
        evidence_ids: evidence_ids.into_iter().collect(),
    }
}

struct Context<'a> {
    inventories: Vec<&'a InventoryEvidence>,
    refused: Vec<&'a str>,
    evidence: &'a EvidenceView,
}

impl Context<'_> {
    fn evaluate(&self, claim: &Claim) -> ClaimResult {
        match claim {
            Claim::PartExists {
                part,
                sha256,
                inventory_evidence_id,
            } => self.part_exists(
                claim,
                part,
                sha256.as_deref(),
                inventory_evidence_id.as_deref(),
            ),
            Claim::OccurrenceValue {
                kind,
                key,
                value,
                part,
                inventory_evidence_id,
            } => self.occurrence_value(
                claim,
                *kind,
                key.as_deref(),
                value,
                part.as_deref(),
                inventory_evidence_id.as_deref(),
            ),
            Claim::ProcedureExists { document, name } => {
                self.procedure_exists(claim, document, name)
            }
            Claim::NoChange {
                comparison_evidence_id,
                dimension,
            } => self.dimension(claim, comparison_evidence_id, *dimension, false),
            Claim::Changed {
                comparison_evidence_id,
                dimension,
            } => self.dimension(claim, comparison_evidence_id, *dimension, true),
            Claim::ProcedureUnchanged {
                comparison_evidence_id,
                procedure,
            } => self.procedure_status(
                claim,
                comparison_evidence_id,
                procedure,
                ProcedureStatus::Unchanged,
            ),
            Claim::ProcedureChanged {
                comparison_evidence_id,
                procedure,
            } => self.procedure_status(
                claim,
                comparison_evidence_id,
                procedure,
                ProcedureStatus::Changed,
            ),
            Claim::ProceduresAdded {
                comparison_evidence_id,
                count,
            } => self.procedures_added(claim, comparison_evidence_id, *count),
        }
    }

    fn procedure_comparison(&self, id: &str) -> Option<&ProcedureComparisonEvidence> {
        self.evidence
            .procedure_comparisons
            .iter()
            .find(|c| c.evidence_id == id)
    }

    fn procedure_status(
        &self,
        claim: &Claim,
        comparison_id: &str,
        procedure: &str,
        expected: ProcedureStatus,
    ) -> ClaimResult {
        let Some(item) = self.procedure_comparison(comparison_id) else {
            return result(
                claim,
                ClaimStatus::Unknown,
                Vec::new(),
                format!(
                    "compare_procedures evidence {comparison_id} was not supplied (a compare_artifacts comparison holds totals only)"
                ),
            );
        };
        let ids = vec![item.evidence_id.clone()];
        let found: Vec<&ProcedureEntry> = item
            .page
            .entries
            .iter()
            .filter(|e| names_procedure(e, procedure))
            .collect();
        let want = status_word(expected);
        match found.as_slice() {
            [] => result(
                claim,
                ClaimStatus::Unknown,
                ids,
                format!(
                    "procedure {procedure} is not on the recorded page; call compare_procedures with the page or status that lists it"
                ),
            ),
            [one] if one.status == expected => result(
                claim,
                ClaimStatus::Pass,
                ids,
                format!("the comparison recorded procedure {procedure} {want}"),
            ),
            [one] => result(
                claim,
                ClaimStatus::Fail,
                ids,
                format!(
                    "the comparison recorded procedure {procedure} {}, not {want}",
                    status_word(one.status)
                ),
            ),
            _ => result(
                claim,
                ClaimStatus::Unknown,
                ids,
                format!("{procedure} names several entries of the page; use a 0x address"),
            ),
        }
    }

    fn procedures_added(&self, claim: &Claim, comparison_id: &str, count: u64) -> ClaimResult {
        let totals = if let Some(item) = self.procedure_comparison(comparison_id) {
            let s = &item.page.summary;
            Some((
                item.evidence_id.clone(),
                s.status,
                s.reasons.clone(),
                s.added_total,
            ))
        } else {
            self.evidence
                .comparisons
                .iter()
                .find(|c| c.evidence_id == comparison_id)
                .map(|c| {
                    let p = &c.comparison.procedures;
                    (
                        c.evidence_id.clone(),
                        p.status,
                        p.reasons.clone(),
                        p.added_total,
                    )
                })
        };
        let Some((id, status, reasons, added)) = totals else {
            return result(
                claim,
                ClaimStatus::Unknown,
                Vec::new(),
                format!("comparison evidence {comparison_id} was not supplied"),
            );
        };
        if status == DimensionStatus::Unknown {
            return result(
                claim,
                ClaimStatus::Unknown,
                vec![id],
                format!(
                    "the comparison could not compare procedures: {}",
                    reasons
                        .first()
                        .cloned()
                        .unwrap_or_else(|| String::from("no reason recorded"))
                ),
            );
        }
        let (status, reason) = if added == count {
            (
                ClaimStatus::Pass,
                format!("the comparison counted {added} procedure(s) added"),
            )
        } else {
            (
                ClaimStatus::Fail,
                format!("the comparison counted {added} procedure(s) added, not {count}"),
            )
        };
        result(claim, status, vec![id], reason)
    }

    /// The inventories a claim may consult, or the reason there are none.
    fn scope(&self, wanted: Option<&str>) -> Result<Vec<&InventoryEvidence>, String> {
        match wanted {
            Some(id) if self.refused.contains(&id) => Err(format!(
                "inventory evidence {id} is not schema-valid, so it cannot support the claim"
            )),
            Some(id) => {
                let found: Vec<&InventoryEvidence> = self
                    .inventories
                    .iter()
                    .copied()
                    .filter(|item| item.evidence_id == id)
                    .collect();
                if found.is_empty() {
                    Err(format!("inventory evidence {id} was not supplied"))
                } else {
                    Ok(found)
                }
            }
            None if self.inventories.is_empty() => Err(String::from(
                "no schema-valid inventory evidence was supplied",
            )),
            None => Ok(self.inventories.clone()),
        }
    }

    fn part_exists(
        &self,
        claim: &Claim,
        part: &str,
        sha256: Option<&str>,
        wanted: Option<&str>,
    ) -> ClaimResult {
        let scope = match self.scope(wanted) {
            Ok(scope) => scope,
            Err(reason) => return result(claim, ClaimStatus::Unknown, Vec::new(), reason),
        };
        let ids = |items: &[&InventoryEvidence]| -> Vec<String> {
            items.iter().map(|i| i.evidence_id.clone()).collect()
        };
        let matching: Vec<&InventoryEvidence> = scope
            .iter()
            .copied()
            .filter(|item| {
                item.inventory.manifest.parts.iter().any(|p| {
                    p.path == part
                        && sha256.is_none_or(|want| {
                            p.sha256
                                .as_deref()
                                .is_some_and(|have| have.eq_ignore_ascii_case(want))
                        })
                })
            })
            .collect();
        let what = match sha256 {
            Some(digest) => format!("part {part} with SHA-256 {digest}"),
            None => format!("part {part}"),
        };
        if !matching.is_empty() {
            return result(
                claim,
                ClaimStatus::Pass,
                ids(&matching),
                format!(
                    "{what} is in the manifest; this says nothing about other parts or about its contents beyond the digest"
                ),
            );
        }
        let incomplete: Vec<&InventoryEvidence> = scope
            .iter()
            .copied()
            .filter(|item| !item.inventory.manifest.complete)
            .collect();
        if !incomplete.is_empty() {
            return result(
                claim,
                ClaimStatus::Unknown,
                ids(&incomplete),
                format!("{what} was not found, but a manifest consulted is incomplete"),
            );
        }
        result(
            claim,
            ClaimStatus::Fail,
            ids(&scope),
            format!("no complete manifest consulted contains {what}"),
        )
    }

    fn occurrence_value(
        &self,
        claim: &Claim,
        kind: OccurrenceKind,
        key: Option<&str>,
        value: &str,
        part: Option<&str>,
        wanted: Option<&str>,
    ) -> ClaimResult {
        let scope = match self.scope(wanted) {
            Ok(scope) => scope,
            Err(reason) => return result(claim, ClaimStatus::Unknown, Vec::new(), reason),
        };
        let mut found = Vec::new();
        let mut gaps = Vec::new();
        for item in &scope {
            let hit = item.inventory.occurrences().any(|o| {
                o.kind == kind
                    && o.value == value
                    && key.is_none_or(|k| o.key.as_deref() == Some(k))
                    && part.is_none_or(|p| o.part == p)
            });
            if hit {
                found.push(item.evidence_id.clone());
            } else if let Some(gap) = item.inventory.occurrence_set.kind_gap(kind) {
                gaps.push((item.evidence_id.clone(), gap));
            }
        }
        let what = format!(
            "a {} occurrence{}{} with value {value:?}",
            kind.as_str(),
            key.map(|k| format!(" with key {k:?}")).unwrap_or_default(),
            part.map(|p| format!(" in part {p}")).unwrap_or_default()
        );
        if !found.is_empty() {
            return result(
                claim,
                ClaimStatus::Pass,
                found,
                format!("{what} is recorded; this says nothing about other occurrences"),
            );
        }
        if let Some((_, gap)) = gaps.first() {
            let reason = format!(
                "{what} was not found, but the occurrences consulted are incomplete: {gap}"
            );
            return result(
                claim,
                ClaimStatus::Unknown,
                gaps.into_iter().map(|(id, _)| id).collect(),
                reason,
            );
        }
        result(
            claim,
            ClaimStatus::Fail,
            scope.iter().map(|i| i.evidence_id.clone()).collect(),
            format!("no complete occurrence set consulted has {what}"),
        )
    }

    fn procedure_exists(&self, claim: &Claim, document: &str, name: &str) -> ClaimResult {
        let lists: Vec<&ProcedureEvidence> = self
            .evidence
            .procedures
            .iter()
            .filter(|p| p.document == document)
            .collect();
        if lists.is_empty() {
            return result(
                claim,
                ClaimStatus::Unknown,
                Vec::new(),
                format!("no procedure evidence for document {document} was supplied"),
            );
        }
        let found: Vec<String> = lists
            .iter()
            .filter(|p| p.names.contains(name))
            .map(|p| p.evidence_id.clone())
            .collect();
        if !found.is_empty() {
            return result(
                claim,
                ClaimStatus::Pass,
                found,
                format!(
                    "procedure {name} is listed in {document}; this says nothing about its body"
                ),
            );
        }
        let partial: Vec<String> = lists
            .iter()
            .filter(|p| !p.complete)
            .map(|p| p.evidence_id.clone())
            .collect();
        if !partial.is_empty() {
            return result(
                claim,
                ClaimStatus::Unknown,
                partial,
                format!(
                    "procedure {name} was not found, but the procedure lists of {document} consulted are partial"
                ),
            );
        }
        result(
            claim,
            ClaimStatus::Fail,
            lists.iter().map(|p| p.evidence_id.clone()).collect(),
            format!("the complete procedure list of {document} has no procedure named {name}"),
        )
    }

    fn dimension(
        &self,
        claim: &Claim,
        comparison_id: &str,
        dimension: Dimension,
        expect_change: bool,
    ) -> ClaimResult {
        let Some(item) = self
            .evidence
            .comparisons
            .iter()
            .find(|c| c.evidence_id == comparison_id)
        else {
            return result(
                claim,
                ClaimStatus::Unknown,
                Vec::new(),
                format!("comparison evidence {comparison_id} was not supplied"),
            );
        };
        let comparison = &item.comparison;
        let (status, reasons): (DimensionStatus, Vec<String>) = match dimension {
            Dimension::Parts => (comparison.parts.status, comparison.parts.reasons.clone()),
            Dimension::Edges => (comparison.edges.status, comparison.edges.reasons.clone()),
            Dimension::Procedures => (
                comparison.procedures.status,
                comparison.procedures.reasons.clone(),
            ),
            Dimension::Occurrences(None) => (
                comparison.occurrences_status(),
                comparison
                    .occurrences
                    .iter()
                    .flat_map(|d| d.reasons.iter().cloned())
                    .collect(),
            ),
            Dimension::Occurrences(Some(kind)) => match comparison.occurrence_kind(kind) {
                Some(diff) => (diff.status, diff.reasons.clone()),
                None => (
                    DimensionStatus::Unknown,
                    vec![format!("the comparison has no entry for {}", kind.as_str())],
                ),
            },
        };
        let ids = vec![item.evidence_id.clone()];
        let scope_note = format!("this concerns the {dimension} dimension only");
        match (status, expect_change) {
            (DimensionStatus::Unknown, _) => result(
                claim,
                ClaimStatus::Unknown,
                ids,
                format!(
                    "the comparison could not establish the {dimension} dimension: {}",
                    reasons
                        .first()
                        .cloned()
                        .unwrap_or_else(|| String::from("no reason recorded"))
                ),
            ),
            (DimensionStatus::Equal, false) => result(
                claim,
                ClaimStatus::Pass,
                ids,
                format!("the comparison found no change in {dimension}; {scope_note}"),
            ),
            (DimensionStatus::Different, true) => result(
                claim,
                ClaimStatus::Pass,
                ids,
                format!("the comparison found changes in {dimension}; {scope_note}"),
            ),
            (DimensionStatus::Different, false) => result(
                claim,
                ClaimStatus::Fail,
                ids,
                format!("the comparison found changes in {dimension}"),
            ),
            (DimensionStatus::Equal, true) => result(
                claim,
                ClaimStatus::Fail,
                ids,
                format!("the comparison found no change in {dimension}"),
            ),
        }
    }
}

/// Whether `procedure` (a name or a 0x start address) names either side of `entry`.
fn names_procedure(entry: &ProcedureEntry, procedure: &str) -> bool {
    let address = procedure
        .strip_prefix("0x")
        .and_then(|hex| u64::from_str_radix(hex, 16).ok());
    [&entry.left, &entry.right]
        .into_iter()
        .flatten()
        .any(|side| side.name.as_deref() == Some(procedure) || Some(side.address) == address)
}

fn status_word(status: ProcedureStatus) -> &'static str {
    match status {
        ProcedureStatus::Unchanged => "unchanged",
        ProcedureStatus::Changed => "changed",
        ProcedureStatus::Added => "added",
        ProcedureStatus::Removed => "removed",
        ProcedureStatus::Ambiguous => "ambiguous",
        ProcedureStatus::Uncertain => "uncertain",
    }
}
