//! Recordings: what one operation leaves in the ledger (its primary Evidence record, the pages that
//! record links to, and the rows it registers), committed in one transaction; and loading a record
//! of a given operation back, typed.

use rusqlite::Connection;
use serde::de::DeserializeOwned;

use super::artifacts::{OccurrenceRow, insert_manifest, insert_occurrences};
use super::evidence::{PreparedEvidence, RecordOutcome, get_evidence, insert_prepared};
use super::targets::{NewTarget, insert_target};
use super::{ReadOnlyStore, Store, StoreError, now_rfc3339};
use crate::evidence::{CanonicalError, EvidenceRecord, StoredEvidence};
use crate::ids::{EvidenceId, ManifestId};

/// One operation's Evidence and the rows it registers. Built without a store, so the same
/// observation yields the same records (and ids) whether it is committed or only printed.
#[derive(Debug, Clone)]
pub struct Recording {
    /// Records the primary record rests on (an inventory's occurrence pages), stored first and in
    /// order.
    pub pages: Vec<EvidenceRecord>,
    /// The operation's own record; its links may name the pages.
    pub primary: EvidenceRecord,
    /// A target the operation opened: stored with its documents and procedure inventory, and made
    /// the active target.
    pub target: Option<NewTarget>,
    /// A manifest the primary record carries, registered for Artifact manifest completion.
    pub manifest: Option<ManifestRegistration>,
    /// Occurrences registered for Artifact occurrence completion, each carried by one record of
    /// this recording.
    pub occurrences: Vec<OccurrenceRegistration>,
    /// Whether the primary record is a validated process capture (Process capture completion).
    pub process_capture: bool,
}

/// A schema-valid manifest to register.
#[derive(Debug, Clone)]
pub struct ManifestRegistration {
    /// The manifest (or JavaScript application graph) id.
    pub id: ManifestId,
    /// Digest of the target it describes.
    pub target_sha256: String,
    /// Occurrence pages in its set.
    pub pages: u32,
    /// Whether its page set is complete.
    pub complete: bool,
}

/// The occurrences of one schema-valid page, carried by one record.
#[derive(Debug, Clone)]
pub struct OccurrenceRegistration {
    /// The manifest they belong to.
    pub manifest: ManifestId,
    /// The record that carries them.
    pub evidence: EvidenceId,
    /// The occurrences.
    pub rows: Vec<OccurrenceRow>,
}

/// What committing a recording stored.
#[derive(Debug, Clone)]
pub struct Committed {
    /// The primary record's row.
    pub primary: RecordOutcome,
    /// The pages' rows, in order.
    pub pages: Vec<RecordOutcome>,
    /// The row id of the target it opened, when it opened one.
    pub target_id: Option<i64>,
}

impl Recording {
    /// A recording of one record that registers nothing.
    pub fn of(primary: EvidenceRecord) -> Recording {
        Recording {
            pages: vec![],
            primary,
            target: None,
            manifest: None,
            occurrences: vec![],
            process_capture: false,
        }
    }

    /// The id the primary record has in any ledger.
    pub fn primary_id(&self) -> Result<EvidenceId, CanonicalError> {
        self.primary.id()
    }
}

/// A recording with every record put into canonical JSON, ready for the writer thread.
struct Prepared {
    pages: Vec<PreparedEvidence>,
    primary: PreparedEvidence,
    target: Option<NewTarget>,
    manifest: Option<ManifestRegistration>,
    occurrences: Vec<OccurrenceRegistration>,
    process_capture: bool,
}

impl Prepared {
    fn new(recording: Recording) -> Result<Prepared, StoreError> {
        Ok(Prepared {
            pages: recording
                .pages
                .iter()
                .map(PreparedEvidence::new)
                .collect::<Result<_, _>>()?,
            primary: PreparedEvidence::new(&recording.primary)?,
            target: recording.target,
            manifest: recording.manifest,
            occurrences: recording.occurrences,
            process_capture: recording.process_capture,
        })
    }

    /// Only a lone record without links can go without a savepoint: nothing can refuse it once
    /// its insert has run (see `PreparedEvidence::needs_savepoint`).
    fn needs_savepoint(&self) -> bool {
        !self.pages.is_empty()
            || self.primary.needs_savepoint()
            || self.target.is_some()
            || self.manifest.is_some()
            || !self.occurrences.is_empty()
            || self.process_capture
    }

    fn write(&self, conn: &Connection) -> Result<Committed, StoreError> {
        let created_at = now_rfc3339();
        let target_id = self
            .target
            .as_ref()
            .map(|t| insert_target(conn, t))
            .transpose()?;
        let pages = self
            .pages
            .iter()
            .map(|p| insert_prepared(conn, p, &created_at))
            .collect::<Result<Vec<_>, _>>()?;
        let primary = insert_prepared(conn, &self.primary, &created_at)?;
        if let Some(m) = &self.manifest {
            insert_manifest(
                conn,
                &m.id,
                &primary.id,
                &m.target_sha256,
                m.pages,
                m.complete,
            )?;
        }
        for o in &self.occurrences {
            insert_occurrences(conn, &o.manifest, &o.evidence, &o.rows)?;
        }
        if self.process_capture {
            conn.prepare_cached(
                "insert or ignore into process_captures (evidence_id) values (?1)",
            )?
            .execute([primary.id.as_str()])?;
        }
        Ok(Committed {
            primary,
            pages,
            target_id,
        })
    }
}

impl Store {
    /// Commits `recording` in one transaction and returns once it is durable: all of it or,
    /// when anything is refused (a link not in the ledger, say), none of it. Canonical JSON and
    /// ids are computed here, before the write is queued.
    pub async fn commit(&self, recording: Recording) -> Result<Committed, StoreError> {
        let prepared = Prepared::new(recording)?;
        self.submit(prepared.needs_savepoint(), move |conn| prepared.write(conn))
            .await
    }

    /// [`Store::commit`] for callers outside an async runtime.
    pub fn commit_blocking(&self, recording: Recording) -> Result<Committed, StoreError> {
        let prepared = Prepared::new(recording)?;
        self.submit_blocking(prepared.needs_savepoint(), move |conn| prepared.write(conn))
    }
}

/// Why a record of a given operation could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The ledger holds no record with this id.
    #[error("Evidence {id} is not in this session's ledger")]
    NotInLedger {
        /// The id asked for.
        id: EvidenceId,
    },
    /// The record is Evidence of another operation.
    #[error("{id} is {found} Evidence, not {expected} Evidence")]
    WrongOperation {
        /// The id asked for.
        id: EvidenceId,
        /// The operation asked for.
        expected: String,
        /// The record's operation.
        found: String,
    },
    /// The record's result is not a valid result of its operation.
    #[error("{id} does not hold a valid {operation} result: {reason}")]
    Corrupt {
        /// The id asked for.
        id: EvidenceId,
        /// The record's operation.
        operation: String,
        /// What did not parse.
        reason: String,
    },
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A record loaded with its result typed.
#[derive(Debug, Clone)]
pub struct Loaded<T> {
    /// The record as stored.
    pub stored: StoredEvidence,
    /// Its result, parsed.
    pub result: T,
}

impl ReadOnlyStore {
    /// The record `id`, which must be Evidence of `operation` whose result parses as `T`.
    pub fn load<T: DeserializeOwned>(
        &self,
        id: &EvidenceId,
        operation: &str,
    ) -> Result<Loaded<T>, LoadError> {
        let stored = self
            .read(|conn| get_evidence(conn, id))?
            .ok_or_else(|| LoadError::NotInLedger { id: id.clone() })?;
        if stored.record.operation != operation {
            return Err(LoadError::WrongOperation {
                id: id.clone(),
                expected: operation.to_owned(),
                found: stored.record.operation,
            });
        }
        let result = T::deserialize(&stored.record.result).map_err(|e| LoadError::Corrupt {
            id: id.clone(),
            operation: operation.to_owned(),
            reason: e.to_string(),
        })?;
        Ok(Loaded { stored, result })
    }
}
