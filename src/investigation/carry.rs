//! `carry_annotations`: the annotations of one version's document carried to the matched places
//! of another version, through the function matching of `compare_procedures`.
//!
//! A carried annotation is a new annotation of the other version: its own id, revision 1, the
//! same kind and text, a rationale that says where it came from, and two cited records: the
//! original revision's Evidence and the comparison's. Nothing is carried onto a place that
//! already has an annotation of that kind (an analyst's later word is never replaced), and what
//! does not carry is listed with the reason. The comparison, the carried annotations and the
//! carry's own record are committed in one write: a refused carry keeps nothing.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::annotations::MAX_RATIONALE_BYTES;
use super::compare::{comparison, manifest_target, procedure_diff, side_document};
use super::observe::{self, EvidenceInline, Observed, Qualifiers, in_document, subject_of};
use super::{CompareProceduresArgs, Investigation, Result};
use crate::analyzers::procdiff::{MatchClass, MatchReason, ProcedureEntry, ProcedureStatus};
use crate::evidence::{Authority, Confidence};
use crate::ids::{Address, AnnotationId, EvidenceId, ManifestId};
use crate::store::{
    AnnotationFilter, AnnotationHead, AnnotationKind, AnnotationPlace, AnnotationRecord,
    AnnotationScope, NewAnnotation,
};

/// Entries of each list unless `limit` says otherwise.
const DEFAULT_ENTRIES: usize = 50;

/// Most entries of each list in one answer; the totals are exact.
const MAX_ENTRIES: usize = 1000;

/// How sure the matching is that two procedures are one function, weakest first.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum MatchConfidence {
    /// Similar only (mnemonics, size, blocks, callees, strings, position).
    Weak,
    /// The same name, the same control-flow shape with the same callees and strings, or
    /// identical bytes told apart from duplicates by callees, context or position.
    #[default]
    Strong,
    /// Identical bytes once addresses are masked, a body that occurs once on each side.
    Exact,
}

impl MatchConfidence {
    /// The carry class of a match of the comparison's class.
    pub fn of(class: MatchClass) -> Self {
        match class {
            MatchClass::Exact => Self::Exact,
            MatchClass::Strong => Self::Strong,
            MatchClass::Weak => Self::Weak,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Self::Weak => "weak",
            Self::Strong => "strong",
            Self::Exact => "exact",
        }
    }
}

/// Arguments of `carry_annotations`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CarryAnnotationsArgs {
    /// Manifest id of the annotated version.
    pub from_manifest_id: ManifestId,
    /// Manifest id of the version to annotate.
    pub to_manifest_id: ManifestId,
    /// Document, when several.
    #[serde(default)]
    pub document: Option<String>,
    /// Weakest match that carries (default strong).
    #[serde(default)]
    pub min_confidence: MatchConfidence,
    /// Entries per list (default 50, most 1000).
    #[serde(default)]
    pub limit: Option<usize>,
}

/// One annotation carried.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CarriedAnnotation {
    /// The original annotation.
    pub from: AnnotationId,
    /// The new annotation of the other version.
    pub to: AnnotationId,
    /// Its kind.
    pub kind: AnnotationKind,
    /// Its text.
    pub text: String,
    /// Where it was (absent for the document itself).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub from_address: Option<Address>,
    /// Where it is now.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub to_address: Option<Address>,
    /// How the place was matched (absent for the document itself).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matched_by: Option<MatchReason>,
    /// The match's class (absent for the document itself).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confidence: Option<MatchConfidence>,
    /// The matched procedure's body differs between the versions: check it still holds.
    pub changed: bool,
}

/// Why an annotation was not carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum NotCarriedReason {
    /// Its procedure has no counterpart in the other version (removed).
    NoMatch,
    /// Its procedure's counterpart was matched more weakly than `min_confidence`.
    WeakMatch,
    /// Its address lies in no procedure whose bytes the matching found identical, so its
    /// counterpart address is not known (data locations are not matched).
    NotLocated,
    /// The counterpart already has an annotation of that kind, which is kept.
    AlreadyAnnotated,
    /// Its procedure has several candidates and none is clearly the counterpart.
    Ambiguous,
    /// Its procedure was paired by position only, below the similarity threshold.
    Uncertain,
}

/// One annotation not carried, and why.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct NotCarried {
    /// The annotation.
    pub annotation_id: AnnotationId,
    /// Its kind.
    pub kind: AnnotationKind,
    /// Where it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub address: Option<Address>,
    /// Why it did not carry.
    pub reason: NotCarriedReason,
    /// The reason in words (the match, its class, the annotation kept).
    pub detail: String,
}

/// What `carry_annotations` did.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CarryResult {
    /// The comparison's Evidence (a `compare_procedures` record) every carried annotation cites.
    #[schemars(with = "String")]
    pub comparison_evidence_id: EvidenceId,
    /// The weakest match that carried.
    pub min_confidence: MatchConfidence,
    /// Annotations carried, first `limit`.
    pub carried: Vec<CarriedAnnotation>,
    /// Exact number carried.
    pub carried_total: u64,
    /// Annotations not carried, first `limit`.
    pub not_carried: Vec<NotCarried>,
    /// Exact number not carried.
    pub not_carried_total: u64,
}

/// What the carry's record holds as its parameters for each carried revision: where it came from.
#[derive(Debug, Serialize)]
struct CarriedFrom<'a> {
    carried_from: &'a AnnotationId,
    from_revision: i64,
    comparison: &'a EvidenceId,
}

/// Where one annotation of the left side goes, or why it goes nowhere.
enum Fate<'a> {
    Carried {
        to: Option<Address>,
        entry: Option<&'a ProcedureEntry>,
    },
    Not(NotCarriedReason, String),
}

/// The entry whose left procedure holds `address`.
fn holding(entries: &[ProcedureEntry], address: u64) -> Option<&ProcedureEntry> {
    entries.iter().find(|e| {
        e.left
            .as_ref()
            .is_some_and(|l| l.address <= address && address < l.address.saturating_add(l.size))
    })
}

/// Where `head` lands on the right side under `min`.
fn fate<'a>(
    head: &AnnotationHead,
    entries: &'a [ProcedureEntry],
    min: MatchConfidence,
) -> Fate<'a> {
    let Some(address) = head.place.address else {
        // A document's C types say nothing about addresses.
        return Fate::Carried {
            to: None,
            entry: None,
        };
    };
    let at = address.0;
    let entry = if head.place.scope == AnnotationScope::Procedure {
        entries
            .iter()
            .find(|e| e.left.as_ref().is_some_and(|l| l.address == at))
    } else {
        holding(entries, at)
    };
    let Some(entry) = entry else {
        return Fate::Not(
            NotCarriedReason::NotLocated,
            format!("{address} lies in no procedure the comparison matched"),
        );
    };
    // Neither a guess among candidates nor a pairing by position alone is carried.
    match entry.status {
        ProcedureStatus::Ambiguous => {
            return Fate::Not(
                NotCarriedReason::Ambiguous,
                format!(
                    "the procedure at {address} has {} candidates and none is clearly its counterpart",
                    entry.candidates.len()
                ),
            );
        }
        ProcedureStatus::Uncertain => {
            return Fate::Not(
                NotCarriedReason::Uncertain,
                format!(
                    "the procedure at {address} was paired by position only, score {} below {}",
                    entry.score.unwrap_or_default(),
                    crate::analyzers::procdiff::SIMILARITY_THRESHOLD
                ),
            );
        }
        _ => {}
    }
    let (Some(left), Some(right), Some(reason), Some(class)) = (
        &entry.left,
        &entry.right,
        entry.matched_by,
        entry.confidence,
    ) else {
        return Fate::Not(
            NotCarriedReason::NoMatch,
            format!("the procedure at {address} has no counterpart (removed)"),
        );
    };
    let class = MatchConfidence::of(class);
    if class < min {
        let score = entry
            .score
            .map(|s| format!(", score {s}"))
            .unwrap_or_default();
        return Fate::Not(
            NotCarriedReason::WeakMatch,
            format!(
                "matched to 0x{:x} by {} ({}{score}), below {}",
                right.address,
                reason_text(reason),
                class.as_str(),
                min.as_str()
            ),
        );
    }
    if head.place.scope != AnnotationScope::Procedure {
        // Inside a procedure, an offset means the same instruction only where the bytes are the
        // same.
        if reason != MatchReason::Bytes || entry.status != ProcedureStatus::Unchanged {
            return Fate::Not(
                NotCarriedReason::NotLocated,
                format!(
                    "{address} lies in 0x{:x}, matched to 0x{:x} by {} but not byte for byte, so the same offset need not be the same instruction",
                    left.address,
                    right.address,
                    reason_text(reason)
                ),
            );
        }
        return Fate::Carried {
            to: Some(Address(right.address + (at - left.address))),
            entry: Some(entry),
        };
    }
    Fate::Carried {
        to: Some(Address(right.address)),
        entry: Some(entry),
    }
}

fn reason_text(reason: MatchReason) -> &'static str {
    match reason {
        MatchReason::Name => "name",
        MatchReason::Bytes => "identical bytes",
        MatchReason::Shape => "control-flow shape, callees and strings",
        MatchReason::Similarity => "similarity",
    }
}

/// `text` cut to at most `max` bytes on a character boundary.
fn cut(text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

impl Investigation {
    /// `carry_annotations`: every live annotation of the left document carried to the right
    /// document where the matching places it with at least `min_confidence`.
    pub async fn carry_annotations(
        &self,
        args: CarryAnnotationsArgs,
    ) -> Result<Observed<CarryResult>> {
        let s = self.open_session()?;
        let store = s.store();
        let (_, left) = manifest_target(&s, &args.from_manifest_id)?;
        let (_, right) = manifest_target(&s, &args.to_manifest_id)?;
        let left_doc = side_document(&left, args.document.as_deref())?;
        let right_doc = side_document(&right, args.document.as_deref())?;
        let compare = CompareProceduresArgs {
            left_manifest_id: args.from_manifest_id.clone(),
            right_manifest_id: args.to_manifest_id.clone(),
            document: args.document.clone(),
            status: None,
            offset: 0,
            limit: None,
            detail: None,
        };
        let (compared, _) = comparison(&s, &compare).await?;
        let comparison_id = compared.id()?;
        let diff = procedure_diff(&s, &left_doc, &right_doc).await?;
        let filter = AnnotationFilter {
            document: Some(left_doc.name.clone()),
            ..AnnotationFilter::default()
        };
        let (heads, _) = store.list_annotations(&left.sha256, &filter, 0, u64::MAX)?;
        let existing = store.annotation_heads(&right.sha256, Some(&right_doc.name))?;
        let limit = args.limit.unwrap_or(DEFAULT_ENTRIES).clamp(1, MAX_ENTRIES);

        let mut news: Vec<NewAnnotation> = vec![];
        let mut carried = vec![];
        let mut not_carried = vec![];
        for head in &heads {
            let (to, entry) = match fate(head, diff.entries(), args.min_confidence) {
                Fate::Carried { to, entry } => (to, entry),
                Fate::Not(reason, detail) => {
                    not_carried.push(NotCarried {
                        annotation_id: head.id.clone(),
                        kind: head.kind,
                        address: head.place.address,
                        reason,
                        detail,
                    });
                    continue;
                }
            };
            let place = AnnotationPlace {
                document: right_doc.name.clone(),
                scope: head.place.scope,
                address: to,
            };
            let taken = existing.iter().find(|e| {
                e.kind == head.kind && e.scope == place.scope && e.address == to.map(|a| a.0)
            });
            if let Some(kept) = taken {
                not_carried.push(NotCarried {
                    annotation_id: head.id.clone(),
                    kind: head.kind,
                    address: head.place.address,
                    reason: NotCarriedReason::AlreadyAnnotated,
                    detail: format!(
                        "{} of the other version is annotated already ({}), which is kept",
                        to.map_or_else(|| right_doc.name.clone(), |a| a.to_string()),
                        kept.id
                    ),
                });
                continue;
            }
            let matched_by = entry.as_ref().and_then(|e| e.matched_by);
            let confidence = entry
                .as_ref()
                .and_then(|e| e.confidence)
                .map(MatchConfidence::of);
            let changed = entry
                .as_ref()
                .is_some_and(|e| e.status == ProcedureStatus::Changed);
            let how = match (head.place.address, matched_by, confidence) {
                (Some(from), Some(by), Some(class)) => format!(
                    "carried from {} revision {} at {from} of {}, matched by {} ({}){}",
                    head.id,
                    head.head.revision,
                    left_doc.name,
                    reason_text(by),
                    class.as_str(),
                    if changed { "; the body changed" } else { "" }
                ),
                _ => format!(
                    "carried from {} revision {} of {}",
                    head.id, head.head.revision, left_doc.name
                ),
            };
            let rationale = cut(
                format!("{how}: {}", head.head.rationale),
                MAX_RATIONALE_BYTES,
            );
            // The same annotation carried onto the same place is one id, so carrying twice
            // finds it already there.
            let seed = format!(
                "carry\0{}\0{}\0{}\0{:?}\0{}\0{}",
                right.sha256,
                place.document,
                place.scope.as_str(),
                place.address,
                head.kind.as_str(),
                head.id
            );
            let id = AnnotationId::derive(seed.as_bytes());
            let cites = vec![head.head.evidence_id.clone(), comparison_id.clone()];
            let result = AnnotationRecord {
                annotation_id: id.clone(),
                revision: 1,
                place: place.clone(),
                kind: head.kind,
                text: head.head.text.clone(),
                withdrawn: false,
                rationale: rationale.clone(),
            };
            let mut q = Qualifiers::observed().linked(cites.clone());
            q.confidence = Confidence::Inferred;
            q.authority = Authority::AnalystInference;
            if changed {
                q.limitations.push(
                    "the matched procedure's body differs between the versions: the annotation may no longer hold".to_owned(),
                );
            }
            if confidence == Some(MatchConfidence::Weak) {
                q.limitations
                    .push("the procedures were matched by similarity only".to_owned());
            }
            let q = q.at(in_document(&place.document, to.map(|a| a.to_string())));
            let parameters = CarriedFrom {
                carried_from: &head.id,
                from_revision: head.head.revision,
                comparison: &comparison_id,
            };
            let record = observe::record(
                "annotate",
                Some(subject_of(&right)),
                &parameters,
                &result,
                q,
            )?;
            carried.push(CarriedAnnotation {
                from: head.id.clone(),
                to: id.clone(),
                kind: head.kind,
                text: head.head.text.clone(),
                from_address: head.place.address,
                to_address: to,
                matched_by,
                confidence,
                changed,
            });
            news.push(NewAnnotation {
                id,
                supersedes: None,
                target_sha256: right.sha256.clone(),
                place,
                kind: head.kind,
                text: head.head.text.clone(),
                withdrawn: false,
                rationale,
                cites,
                record,
            });
        }
        let result = CarryResult {
            comparison_evidence_id: comparison_id.clone(),
            min_confidence: args.min_confidence,
            carried_total: carried.len() as u64,
            not_carried_total: not_carried.len() as u64,
            carried: carried.into_iter().take(limit).collect(),
            not_carried: not_carried.into_iter().take(limit).collect(),
        };
        let mut links = vec![comparison_id];
        for new in &news {
            links.push(new.record.id()?);
        }
        let mut q = Qualifiers::derived()
            .linked(links)
            .at(in_document(&right_doc.name, None));
        q.limitations.push(
            "matches are classed by the pass that made them: a pair of identical bodies is exact even where the body occurs more than once".to_owned(),
        );
        let summary = observe::record(
            "carry_annotations",
            Some(subject_of(&right)),
            &args,
            &result,
            q,
        )?;
        let (_, outcome) = store
            .record_annotations(vec![compared], news, summary.clone())
            .await?;
        Ok(Observed {
            result,
            evidence: EvidenceInline::new(outcome, summary),
        })
    }
}
