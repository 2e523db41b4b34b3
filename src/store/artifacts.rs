//! Artifact manifests and occurrences: the rows that feed Artifact manifest and Artifact
//! occurrence completion, written in the transaction that records their Evidence.

use rusqlite::{Connection, OptionalExtension, params};

use super::{ReadOnlyStore, StoreError};
use crate::ids::{EvidenceId, ManifestId, OccurrenceId};

/// One occurrence row.
#[derive(Debug, Clone)]
pub struct OccurrenceRow {
    /// `occ_…`.
    pub id: OccurrenceId,
    /// Part (file, slice, module) the item was found in.
    pub part: String,
    /// Kind of item.
    pub kind: String,
    /// The item.
    pub value: String,
}

/// Registers a schema-valid manifest carried by `evidence`. Idempotent.
pub(super) fn insert_manifest(
    conn: &Connection,
    manifest: &ManifestId,
    evidence: &EvidenceId,
    target_sha256: &str,
    pages: u32,
    complete: bool,
) -> Result<(), StoreError> {
    conn.prepare_cached(
        "insert or ignore into artifact_manifests (id, evidence_id, target_sha256, pages, complete) values (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![manifest.as_str(), evidence.as_str(), target_sha256, pages, complete])?;
    Ok(())
}

/// Registers the occurrences of one schema-valid page carried by `evidence`. Idempotent.
pub(super) fn insert_occurrences(
    conn: &Connection,
    manifest: &ManifestId,
    evidence: &EvidenceId,
    rows: &[OccurrenceRow],
) -> Result<(), StoreError> {
    let mut stmt = conn.prepare_cached(
        "insert or ignore into artifact_occurrences (id, manifest_id, evidence_id, part, kind, value) values (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    for r in rows {
        stmt.execute(params![
            r.id.as_str(),
            manifest.as_str(),
            evidence.as_str(),
            r.part,
            r.kind,
            r.value
        ])?;
    }
    Ok(())
}

impl ReadOnlyStore {
    /// The Evidence that carries a manifest, and the target digest it describes.
    pub fn manifest_evidence(
        &self,
        manifest: &ManifestId,
    ) -> Result<Option<(EvidenceId, String)>, StoreError> {
        self.read(|conn| {
            let row: Option<(String, String)> = conn
                .prepare_cached(
                    "select evidence_id, target_sha256 from artifact_manifests where id = ?1",
                )?
                .query_row([manifest.as_str()], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()?;
            Ok(row.and_then(|(e, sha)| EvidenceId::parse(&e).ok().map(|e| (e, sha))))
        })
    }

    /// Every registered manifest, in id order.
    pub fn manifests(&self) -> Result<Vec<ManifestId>, StoreError> {
        self.read(|conn| {
            let ids: Vec<String> = conn
                .prepare_cached("select id from artifact_manifests order by id")?
                .query_map([], |r| r.get(0))?
                .collect::<Result<_, _>>()?;
            Ok(ids
                .iter()
                .filter_map(|i| ManifestId::parse(i).ok())
                .collect())
        })
    }

    /// Ids of Evidence of one operation, in recording order.
    pub fn evidence_ids_of(&self, operation: &str) -> Result<Vec<EvidenceId>, StoreError> {
        self.read(|conn| {
            let ids: Vec<String> = conn
                .prepare_cached("select id from evidence where operation = ?1 order by seq")?
                .query_map([operation], |r| r.get(0))?
                .collect::<Result<_, _>>()?;
            Ok(ids
                .iter()
                .filter_map(|i| EvidenceId::parse(i).ok())
                .collect())
        })
    }

    /// The first Evidence of `operation` about the subject with this digest.
    pub fn evidence_about(
        &self,
        operation: &str,
        subject_sha256: &str,
    ) -> Result<Option<EvidenceId>, StoreError> {
        self.read(|conn| {
            let id: Option<String> = conn
                .prepare_cached("select id from evidence where operation = ?1 and subject_sha256 = ?2 order by seq limit 1")?
                .query_row([operation, subject_sha256], |r| r.get(0))
                .optional()?;
            Ok(id.and_then(|i| EvidenceId::parse(&i).ok()))
        })
    }
}
