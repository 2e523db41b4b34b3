//! Residual unknowns: open questions the investigation has not settled, revised in place. The
//! rules for revising and resolving them live here; the store persists the revisions.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::args::cap;
use super::args::{Page, PageRequest};
use super::{Investigation, Result};
use crate::ids::{EvidenceId, UnknownId};
use crate::store::{NewRevision, NewUnknown, Resolution, UnknownHead, UnknownStatus};

/// Arguments of `record_unknown`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordUnknownArgs {
    /// The open question, stated so that Evidence could settle it (at most 16 KiB).
    #[serde(deserialize_with = "cap::prose")]
    pub question: String,
    /// Evidence ids of this ledger that bear on it (at most 256).
    #[serde(default)]
    #[serde(deserialize_with = "cap::ids")]
    pub evidence_ids: Vec<EvidenceId>,
    /// A note (at most 16 KiB).
    #[serde(default)]
    #[serde(deserialize_with = "cap::prose_opt")]
    pub note: Option<String>,
}

/// Arguments of `update_unknown`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateUnknownArgs {
    /// The unknown (unk_…).
    pub unknown_id: UnknownId,
    /// The head revision you read; the update is refused if another revision came first.
    pub expected_revision: i64,
    /// New status: open, investigating, blocked, contradicted or resolved.
    pub status: UnknownStatus,
    /// With status resolved: verified (needs supporting_evidence_ids), withdrawn or out-of-scope
    /// (need a rationale).
    #[serde(default)]
    pub resolution: Option<Resolution>,
    /// Why; required for withdrawn and out-of-scope (at most 16 KiB).
    #[serde(default)]
    #[serde(deserialize_with = "cap::prose_opt")]
    pub rationale: Option<String>,
    /// The question reworded; omit to keep it (at most 16 KiB).
    #[serde(default)]
    #[serde(deserialize_with = "cap::prose_opt")]
    pub question: Option<String>,
    /// Evidence ids of this ledger supporting the revision; omit to keep the head's (at most 256).
    #[serde(default)]
    #[serde(deserialize_with = "cap::ids")]
    pub supporting_evidence_ids: Vec<EvidenceId>,
    /// Evidence ids of this ledger contradicting it; omit to keep the head's (at most 256).
    #[serde(default)]
    #[serde(deserialize_with = "cap::ids")]
    pub contradicting_evidence_ids: Vec<EvidenceId>,
    /// A note (at most 16 KiB).
    #[serde(default)]
    #[serde(deserialize_with = "cap::prose_opt")]
    pub note: Option<String>,
}

/// Arguments of `list_unknowns`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListUnknownsArgs {
    /// Include resolved unknowns (default: only current non-resolved heads).
    #[serde(default)]
    pub include_resolved: bool,
    /// Rows to skip.
    #[serde(default)]
    pub offset: u64,
    /// Rows to return (default 50, at most 500).
    #[serde(default)]
    pub limit: Option<u64>,
}

/// A page of unknown heads.
#[derive(Debug, Serialize, JsonSchema)]
pub struct UnknownPage {
    /// Heads by id.
    pub unknowns: Vec<UnknownHead>,
    /// Heads selected in all.
    pub total: u64,
    /// Offset of the next page, when there is one.
    pub next_offset: Option<u64>,
}

/// Why a revision of an unknown was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnknownError {
    /// The question is empty.
    #[error("question must not be empty")]
    EmptyQuestion,
    /// No residual unknown has this id.
    #[error("no residual unknown {id} in this session")]
    NotFound {
        /// The id.
        id: UnknownId,
    },
    /// The update was made from a revision that is no longer the head.
    #[error("unknown {id} is at revision {actual}, not {expected}: read it again and retry")]
    RevisionConflict {
        /// The unknown.
        id: UnknownId,
        /// The revision the update was made from.
        expected: i64,
        /// The head revision.
        actual: i64,
    },
    /// Status resolved without a resolution.
    #[error("status resolved needs a resolution: verified, withdrawn or out-of-scope")]
    ResolutionMissing,
    /// Resolved as verified without Evidence.
    #[error("resolving as verified needs at least one supporting Evidence id from this ledger")]
    VerifiedWithoutEvidence,
    /// Withdrawn or out of scope without a rationale.
    #[error("resolving as {} needs a rationale", .0.as_str())]
    RationaleMissing(Resolution),
    /// A resolution with another status than resolved.
    #[error("a resolution is given only with status resolved")]
    ResolutionWithoutResolved,
}

/// The revision `update` makes of `head`, or why the rules refuse it: verified needs supporting
/// Evidence, withdrawn and out-of-scope need a rationale, and a resolution goes with status
/// resolved only. The question, and the supporting and contradicting Evidence, carry over unless
/// given anew: a status change alone must not drop what the unknown cites.
pub(crate) fn revise(
    head: &UnknownHead,
    update: UpdateUnknownArgs,
) -> Result<NewRevision, UnknownError> {
    if head.head.revision != update.expected_revision {
        return Err(UnknownError::RevisionConflict {
            id: update.unknown_id,
            expected: update.expected_revision,
            actual: head.head.revision,
        });
    }
    let rationale = update
        .rationale
        .as_deref()
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .map(str::to_owned);
    let resolution = match (update.status, update.resolution) {
        (UnknownStatus::Resolved, None) => return Err(UnknownError::ResolutionMissing),
        (UnknownStatus::Resolved, Some(Resolution::Verified))
            if update.supporting_evidence_ids.is_empty() =>
        {
            return Err(UnknownError::VerifiedWithoutEvidence);
        }
        (UnknownStatus::Resolved, Some(r @ (Resolution::Withdrawn | Resolution::OutOfScope)))
            if rationale.is_none() =>
        {
            return Err(UnknownError::RationaleMissing(r));
        }
        (UnknownStatus::Resolved, r) => r,
        (_, Some(_)) => return Err(UnknownError::ResolutionWithoutResolved),
        (_, None) => None,
    };
    Ok(NewRevision {
        status: update.status,
        question: update
            .question
            .unwrap_or_else(|| head.head.question.clone()),
        resolution,
        rationale,
        note: update.note,
        supporting: carried(update.supporting_evidence_ids, &head.head.supporting),
        contradicting: carried(update.contradicting_evidence_ids, &head.head.contradicting),
    })
}

/// The Evidence a revision cites: the ids given, or the head's when none are.
fn carried(given: Vec<EvidenceId>, head: &[EvidenceId]) -> Vec<EvidenceId> {
    if given.is_empty() {
        head.to_vec()
    } else {
        given
    }
}

impl Investigation {
    /// `record_unknown`: a new open question at revision 1.
    pub async fn record_unknown(&self, args: RecordUnknownArgs) -> Result<UnknownHead> {
        if args.question.trim().is_empty() {
            return Err(UnknownError::EmptyQuestion.into());
        }
        let s = self.open_session()?;
        Ok(s.store()
            .record_unknown(NewUnknown {
                question: args.question,
                supporting: args.evidence_ids,
                note: args.note,
            })
            .await?)
    }

    /// `update_unknown`: a new head revision, checked against the rules.
    pub async fn update_unknown(&self, args: UpdateUnknownArgs) -> Result<UnknownHead> {
        let s = self.open_session()?;
        let store = s.store();
        let id = args.unknown_id.clone();
        let head = store
            .unknown(&id)?
            .ok_or_else(|| UnknownError::NotFound { id: id.clone() })?;
        let expected = args.expected_revision;
        let revision = revise(&head, args)?;
        // The store appends only onto the head the rules saw; a revision that came in between
        // is a conflict there.
        Ok(store
            .append_unknown_revision(id, expected, revision)
            .await?)
    }

    /// `list_unknowns`: heads, by default only those not resolved.
    pub fn list_unknowns(&self, args: ListUnknownsArgs) -> Result<UnknownPage> {
        let s = self.open_session()?;
        let request = PageRequest::new(args.offset, args.limit, PageRequest::LISTING);
        let (unknowns, total) =
            s.store()
                .list_unknowns(args.include_resolved, request.offset, request.limit)?;
        let mut page = Page::new(unknowns, total, &request);
        // Every head a call recorded can be read back: a page of long questions and notes ends
        // early, within the message bound, and the next page goes on from there.
        super::bound::fit_listing(
            &mut page.items,
            &mut page.next_offset,
            request.offset,
            self.max_result_bytes()?,
        );
        Ok(UnknownPage {
            unknowns: page.items,
            total: page.total,
            next_offset: page.next_offset,
        })
    }
}
