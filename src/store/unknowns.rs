//! Residual unknowns: open questions revised in place. The store persists revisions and keeps
//! them in order (a revision is appended only onto the head it was made from); the rules for
//! revising and resolving them are the investigation layer's.

use rusqlite::{Connection, OptionalExtension, params};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::chain::{ChainKind, RevisionContent, append_revision};
use super::{ReadOnlyStore, Store, StoreError, now_rfc3339};
use crate::ids::{EvidenceId, UnknownId};

/// Where an unknown stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum UnknownStatus {
    /// Recorded, not yet worked on.
    Open,
    /// Being worked on.
    Investigating,
    /// Cannot progress without something outside the investigation.
    Blocked,
    /// Evidence contradicts an answer that was assumed.
    Contradicted,
    /// Settled; see the resolution.
    Resolved,
}

impl UnknownStatus {
    /// Wire text.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Investigating => "investigating",
            Self::Blocked => "blocked",
            Self::Contradicted => "contradicted",
            Self::Resolved => "resolved",
        }
    }

    fn parse(text: &str) -> Self {
        match text {
            "investigating" => Self::Investigating,
            "blocked" => Self::Blocked,
            "contradicted" => Self::Contradicted,
            "resolved" => Self::Resolved,
            _ => Self::Open,
        }
    }
}

/// How a resolved unknown was settled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Resolution {
    /// Answered by Evidence in this ledger (at least one supporting id required).
    Verified,
    /// No longer a question (a rationale is required).
    Withdrawn,
    /// Outside what this investigation covers (a rationale is required).
    OutOfScope,
}

impl Resolution {
    /// Wire text.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Verified => "verified",
            Self::Withdrawn => "withdrawn",
            Self::OutOfScope => "out-of-scope",
        }
    }
}

/// A new unknown.
#[derive(Debug, Clone)]
pub struct NewUnknown {
    /// The open question.
    pub question: String,
    /// Evidence that bears on it.
    pub supporting: Vec<EvidenceId>,
    /// A note.
    pub note: Option<String>,
}

/// A revision to append to an unknown, already checked against the rules.
#[derive(Debug, Clone)]
pub struct NewRevision {
    /// The status at this revision.
    pub status: UnknownStatus,
    /// The question at this revision.
    pub question: String,
    /// How it was resolved, when `status` is resolved.
    pub resolution: Option<Resolution>,
    /// Why.
    pub rationale: Option<String>,
    /// A note.
    pub note: Option<String>,
    /// Evidence supporting the revision; each must be in the ledger.
    pub supporting: Vec<EvidenceId>,
    /// Evidence contradicting it; each must be in the ledger.
    pub contradicting: Vec<EvidenceId>,
}

/// One revision as stored.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct UnknownRevision {
    /// Revision number, from 1.
    pub revision: i64,
    /// Status at this revision.
    pub status: UnknownStatus,
    /// The question at this revision.
    pub question: String,
    /// Resolution, when resolved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution: Option<Resolution>,
    /// Rationale given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rationale: Option<String>,
    /// Note given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Supporting Evidence ids.
    pub supporting: Vec<EvidenceId>,
    /// Contradicting Evidence ids.
    pub contradicting: Vec<EvidenceId>,
    /// When recorded.
    pub recorded_at: String,
}

/// An unknown at its head revision.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct UnknownHead {
    /// Stable id.
    pub id: UnknownId,
    /// The head revision.
    pub head: UnknownRevision,
}

fn check_evidence(conn: &Connection, ids: &[EvidenceId]) -> Result<(), StoreError> {
    for id in ids {
        let present = conn
            .prepare_cached("select 1 from evidence where id = ?1")?
            .query_row([id.as_str()], |_| Ok(()))
            .optional()?;
        if present.is_none() {
            return Err(StoreError::EvidenceNotInLedger { id: id.to_string() });
        }
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn insert_revision(
    conn: &Connection,
    id: &UnknownId,
    revision: i64,
    status: UnknownStatus,
    question: &str,
    resolution: Option<Resolution>,
    rationale: Option<&str>,
    note: Option<&str>,
    supporting: &[EvidenceId],
    contradicting: &[EvidenceId],
) -> Result<(), StoreError> {
    check_evidence(conn, supporting)?;
    check_evidence(conn, contradicting)?;
    let now = now_rfc3339();
    conn.prepare_cached(
        "insert into unknown_revisions (unknown_id, revision, status, question, resolution, rationale, note, recorded_at)
         values (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![
        id.as_str(),
        revision,
        status.as_str(),
        question,
        resolution.map(Resolution::as_str),
        rationale,
        note,
        now
    ])?;
    let mut cite = conn.prepare_cached(
        "insert or ignore into unknown_evidence (unknown_id, revision, evidence_id, role) values (?1, ?2, ?3, ?4)",
    )?;
    for e in supporting {
        cite.execute(params![id.as_str(), revision, e.as_str(), "supporting"])?;
    }
    for e in contradicting {
        cite.execute(params![id.as_str(), revision, e.as_str(), "contradicting"])?;
    }
    let digest = RevisionContent {
        item: id.as_str(),
        revision,
        status: status.as_str(),
        question,
        resolution: resolution.map(Resolution::as_str),
        rationale,
        note,
        recorded_at: &now,
        supporting: supporting.iter().map(|e| e.as_str().to_owned()).collect(),
        contradicting: contradicting
            .iter()
            .map(|e| e.as_str().to_owned())
            .collect(),
    }
    .digest();
    append_revision(
        conn,
        ChainKind::UnknownRevision,
        id.as_str(),
        revision,
        &digest,
    )
}

fn read_head(conn: &Connection, id: &UnknownId) -> Result<Option<UnknownHead>, StoreError> {
    let head: Option<i64> = conn
        .prepare_cached("select head_revision from unknowns where id = ?1")?
        .query_row([id.as_str()], |r| r.get(0))
        .optional()?;
    let Some(revision) = head else {
        return Ok(None);
    };
    let mut rev = conn
        .prepare_cached(
            "select status, question, resolution, rationale, note, recorded_at from unknown_revisions
             where unknown_id = ?1 and revision = ?2",
        )?
        .query_row(params![id.as_str(), revision], |r| {
            Ok(UnknownRevision {
                revision,
                status: UnknownStatus::parse(&r.get::<_, String>(0)?),
                question: r.get(1)?,
                resolution: r.get::<_, Option<String>>(2)?.map(|t| match t.as_str() {
                    "verified" => Resolution::Verified,
                    "withdrawn" => Resolution::Withdrawn,
                    _ => Resolution::OutOfScope,
                }),
                rationale: r.get(3)?,
                note: r.get(4)?,
                supporting: vec![],
                contradicting: vec![],
                recorded_at: r.get(5)?,
            })
        })?;
    let cited: Vec<(String, String)> = conn
        .prepare_cached(
            "select evidence_id, role from unknown_evidence where unknown_id = ?1 and revision = ?2 order by evidence_id",
        )?
        .query_map(params![id.as_str(), revision], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    for (e, role) in cited {
        if let Ok(e) = EvidenceId::parse(&e) {
            if role == "supporting" {
                rev.supporting.push(e);
            } else {
                rev.contradicting.push(e);
            }
        }
    }
    Ok(Some(UnknownHead {
        id: id.clone(),
        head: rev,
    }))
}

impl Store {
    /// Records a new unknown at revision 1, status open.
    pub async fn record_unknown(&self, new: NewUnknown) -> Result<UnknownHead, StoreError> {
        self.write(move |conn| {
            let seed = format!("{}\0{}\0{}", new.question, now_rfc3339(), std::process::id());
            let id = UnknownId::derive(seed.as_bytes());
            conn.prepare_cached(
                "insert into unknowns (id, head_revision, status, question, updated_at) values (?1, 1, 'open', ?2, ?3)",
            )?
            .execute(params![id.as_str(), new.question, now_rfc3339()])?;
            insert_revision(
                conn,
                &id,
                1,
                UnknownStatus::Open,
                &new.question,
                None,
                None,
                new.note.as_deref(),
                &new.supporting,
                &[],
            )?;
            read_head(conn, &id)?.ok_or(StoreError::UnknownNotFound { id: id.to_string() })
        })
        .await
    }

    /// Appends `revision` to unknown `id` as the revision after `expected_revision`, which must
    /// still be the head when the write runs (else [`StoreError::RevisionConflict`]).
    pub async fn append_unknown_revision(
        &self,
        id: UnknownId,
        expected_revision: i64,
        revision: NewRevision,
    ) -> Result<UnknownHead, StoreError> {
        self.write(move |conn| {
            let head: Option<i64> = conn
                .prepare_cached("select head_revision from unknowns where id = ?1")?
                .query_row([id.as_str()], |r| r.get(0))
                .optional()?;
            let head = head.ok_or_else(|| StoreError::UnknownNotFound { id: id.to_string() })?;
            if head != expected_revision {
                return Err(StoreError::RevisionConflict {
                    id: id.to_string(),
                    expected: expected_revision,
                    actual: head,
                });
            }
            let next = head + 1;
            insert_revision(
                conn,
                &id,
                next,
                revision.status,
                &revision.question,
                revision.resolution,
                revision.rationale.as_deref(),
                revision.note.as_deref(),
                &revision.supporting,
                &revision.contradicting,
            )?;
            conn.prepare_cached(
                "update unknowns set head_revision = ?2, status = ?3, question = ?4, updated_at = ?5 where id = ?1",
            )?
            .execute(params![id.as_str(), next, revision.status.as_str(), revision.question, now_rfc3339()])?;
            read_head(conn, &id)?.ok_or(StoreError::UnknownNotFound { id: id.to_string() })
        })
        .await
    }
}

impl ReadOnlyStore {
    /// Heads of unknowns, optionally only the unresolved ones, by id, with the total.
    pub fn list_unknowns(
        &self,
        include_resolved: bool,
        offset: u64,
        limit: u64,
    ) -> Result<(Vec<UnknownHead>, u64), StoreError> {
        self.read(|conn| {
            let ids: Vec<String> = conn
                .prepare_cached(
                    "select id from unknowns where ?1 or status <> 'resolved' order by id limit ?2 offset ?3",
                )?
                .query_map(
                    params![
                        include_resolved,
                        i64::try_from(limit).unwrap_or(i64::MAX),
                        i64::try_from(offset).unwrap_or(i64::MAX)
                    ],
                    |r| r.get(0),
                )?
                .collect::<Result<_, _>>()?;
            let total: i64 = conn
                .prepare_cached("select count(*) from unknowns where ?1 or status <> 'resolved'")?
                .query_row([include_resolved], |r| r.get(0))?;
            let mut heads = Vec::with_capacity(ids.len());
            for id in ids {
                if let Ok(id) = UnknownId::parse(&id)
                    && let Some(head) = read_head(conn, &id)?
                {
                    heads.push(head);
                }
            }
            Ok((heads, total.max(0) as u64))
        })
    }

    /// One unknown at its head.
    pub fn unknown(&self, id: &UnknownId) -> Result<Option<UnknownHead>, StoreError> {
        self.read(|conn| read_head(conn, id))
    }
}
