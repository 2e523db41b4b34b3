//! Ledger rows: recording Evidence (idempotently, with links checked) and reading it back.

use std::ops::ControlFlow;

use rusqlite::{Connection, OptionalExtension, params};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::completion::COUNTED_PREFIX_CHARS;
use super::{ReadOnlyStore, Store, StoreError, now_rfc3339};
use crate::evidence::{EvidenceRecord, StoredEvidence};
use crate::ids::EvidenceId;

/// What recording a record did.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RecordOutcome {
    /// The record's id.
    pub id: EvidenceId,
    /// Its sequence number in the ledger.
    pub seq: i64,
    /// When the ledger first stored it.
    pub created_at: String,
    /// False when an identical record was already in the ledger (the row was kept as it was).
    pub new: bool,
}

/// One line of a ledger listing.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct EvidenceSummary {
    /// The record's id.
    pub id: EvidenceId,
    /// Its sequence number.
    pub seq: i64,
    /// The operation that produced it.
    pub operation: String,
    /// Provider id.
    pub provider_id: String,
    /// Confidence.
    pub confidence: String,
    /// Authority.
    pub authority: String,
    /// When it was stored.
    pub created_at: String,
}

/// Which rows a listing includes.
#[derive(Debug, Clone, Default)]
pub struct EvidenceFilter {
    /// Only this operation.
    pub operation: Option<String>,
    /// Rows to skip.
    pub offset: u64,
    /// Rows to return.
    pub limit: u64,
}

/// A record reduced to what its ledger row holds: canonical JSON, id, the copied columns and the
/// links to check. Serializing and hashing happen in the caller's thread
/// ([`PreparedEvidence::new`]), and the writer thread gets only these strings, so it spends its
/// time in SQLite rather than in building or freeing records.
#[derive(Debug, Clone)]
pub struct PreparedEvidence {
    canonical: String,
    id: EvidenceId,
    operation: String,
    subject_sha256: Option<String>,
    provider_id: String,
    provider_version: String,
    confidence: &'static str,
    authority: &'static str,
    links: Vec<EvidenceId>,
}

impl PreparedEvidence {
    /// Computes the canonical JSON and id of `record` and keeps the values of its row.
    pub fn new(record: &EvidenceRecord) -> Result<Self, StoreError> {
        let canonical = record.canonical_json()?;
        let id = EvidenceId::from_digest_of(canonical.as_bytes());
        Ok(PreparedEvidence {
            canonical,
            id,
            operation: record.operation.clone(),
            subject_sha256: record.subject.as_ref().map(|s| s.sha256.clone()),
            provider_id: record.provider.id.clone(),
            provider_version: record.provider.version.clone(),
            confidence: record.confidence.as_str(),
            authority: record.authority.as_str(),
            links: record.links.clone(),
        })
    }

    /// The id the record will have in any ledger.
    pub fn id(&self) -> &EvidenceId {
        &self.id
    }

    /// Whether storing it alone needs a savepoint. Without links, the insert and its prefix
    /// count are its only changes and nothing can refuse the record once the insert has run,
    /// so it goes without (a savepoint costs more than the insert).
    pub(super) fn needs_savepoint(&self) -> bool {
        !self.links.is_empty()
    }
}

/// Inserts `record` unless an identical one is present, with its links. Runs inside the caller's
/// transaction.
#[cfg(test)]
pub(super) fn insert_evidence(
    conn: &Connection,
    record: &EvidenceRecord,
) -> Result<RecordOutcome, StoreError> {
    insert_prepared(conn, &PreparedEvidence::new(record)?, &now_rfc3339())
}

/// Inserts the row of `prepared`, stored at `created_at`, unless an identical record is present.
/// The INSERT runs first and yields to an existing row with the same id, so a new record costs
/// one index probe; only a repeated record reads the row it found.
pub(super) fn insert_prepared(
    conn: &Connection,
    prepared: &PreparedEvidence,
    created_at: &str,
) -> Result<RecordOutcome, StoreError> {
    // Rows are never deleted from a ledger, so links that held for a stored record still hold:
    // checking them before the insert gives the same answer for new and repeated records.
    for link in &prepared.links {
        let present = conn
            .prepare_cached("select 1 from evidence where id = ?1")?
            .query_row([link.as_str()], |_| Ok(()))
            .optional()?;
        if present.is_none() {
            return Err(StoreError::EvidenceNotInLedger {
                id: link.to_string(),
            });
        }
    }
    let id = prepared.id.clone();
    let inserted = conn
        .prepare_cached(
            "insert into evidence (id, operation, subject_sha256, provider_id, provider_version, confidence, authority, created_at, record)
             values (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) on conflict (id) do nothing",
        )?
        .execute(params![
            id.as_str(),
            prepared.operation,
            prepared.subject_sha256,
            prepared.provider_id,
            prepared.provider_version,
            prepared.confidence,
            prepared.authority,
            created_at,
            prepared.canonical,
        ])?;
    if inserted == 0 {
        let (seq, created_at) = conn
            .prepare_cached("select seq, created_at from evidence where id = ?1")?
            .query_row([id.as_str()], |r| Ok((r.get(0)?, r.get(1)?)))?;
        return Ok(RecordOutcome {
            id,
            seq,
            created_at,
            new: false,
        });
    }
    let seq = conn.last_insert_rowid();
    count_prefix(conn, &id)?;
    super::chain::append_evidence(conn, seq, &id)?;
    let mut link_stmt = conn
        .prepare_cached("insert or ignore into evidence_links (from_id, to_id) values (?1, ?2)")?;
    for link in &prepared.links {
        link_stmt.execute([id.as_str(), link.as_str()])?;
    }
    Ok(RecordOutcome {
        id,
        seq,
        created_at: created_at.to_owned(),
        new: true,
    })
}

/// Counts a newly inserted id under its prefix of [`COUNTED_PREFIX_CHARS`] characters
/// (`evidence_id_prefixes`, migrations V2 and V10), in the transaction of the insert. Should it fail in a write without a savepoint, the
/// store rolls back the whole group, so a row is never kept uncounted.
fn count_prefix(conn: &Connection, id: &EvidenceId) -> Result<(), StoreError> {
    let prefix: String = id.as_str().chars().take(COUNTED_PREFIX_CHARS).collect();
    conn.prepare_cached(
        "insert into evidence_id_prefixes (prefix, rows) values (?1, 1)
         on conflict (prefix) do update set rows = rows + 1",
    )?
    .execute([prefix])?;
    Ok(())
}

/// Reads one record by id.
pub(super) fn get_evidence(
    conn: &Connection,
    id: &EvidenceId,
) -> Result<Option<StoredEvidence>, StoreError> {
    let row: Option<(i64, String, String)> = conn
        .prepare_cached("select seq, created_at, record from evidence where id = ?1")?
        .query_row([id.as_str()], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .optional()?;
    row.map(|(seq, created_at, record)| {
        let record = serde_json::from_str(&record).map_err(|source| StoreError::CorruptRecord {
            id: id.to_string(),
            source,
        })?;
        Ok(StoredEvidence {
            id: id.clone(),
            seq,
            created_at,
            record,
        })
    })
    .transpose()
}

impl Store {
    /// Records `record` in the ledger and returns once it is durable (committed). The canonical
    /// JSON and id are computed here, before the write is queued.
    pub async fn record(&self, record: EvidenceRecord) -> Result<RecordOutcome, StoreError> {
        let prepared = PreparedEvidence::new(&record)?;
        drop(record);
        self.submit(prepared.needs_savepoint(), move |conn| {
            insert_prepared(conn, &prepared, &now_rfc3339())
        })
        .await
    }

    /// [`Store::record`] for callers outside an async runtime.
    pub fn record_blocking(&self, record: EvidenceRecord) -> Result<RecordOutcome, StoreError> {
        let prepared = PreparedEvidence::new(&record)?;
        drop(record);
        self.submit_blocking(prepared.needs_savepoint(), move |conn| {
            insert_prepared(conn, &prepared, &now_rfc3339())
        })
    }

    /// Records every record in one write, in order, and returns their outcomes once that write
    /// has committed. All or nothing: when one record is refused (a link not in the ledger, say)
    /// none is kept. A record may link to one earlier in the same batch. The rows share one
    /// `created_at`, the time of the write.
    pub async fn record_many(
        &self,
        records: Vec<EvidenceRecord>,
    ) -> Result<Vec<RecordOutcome>, StoreError> {
        let prepared = records
            .iter()
            .map(PreparedEvidence::new)
            .collect::<Result<Vec<_>, _>>()?;
        drop(records);
        // Only a link can refuse a record after others of the batch were inserted; without links
        // the savepoint would guard nothing that the group rollback does not.
        let savepoint = prepared.iter().any(PreparedEvidence::needs_savepoint);
        self.submit(savepoint, move |conn| {
            let created_at = now_rfc3339();
            prepared
                .iter()
                .map(|p| insert_prepared(conn, p, &created_at))
                .collect()
        })
        .await
    }

    /// Stores already prepared records in one write, one row each with nothing else done (no
    /// savepoint unless one links), all at one `created_at`: the insert path alone, for the ingest
    /// benchmark's SQLite-alone rows. Blocking.
    pub fn record_prepared_blocking(
        &self,
        prepared: Vec<PreparedEvidence>,
    ) -> Result<Vec<RecordOutcome>, StoreError> {
        let savepoint = prepared.iter().any(PreparedEvidence::needs_savepoint);
        self.submit_blocking(savepoint, move |conn| {
            let created_at = now_rfc3339();
            prepared
                .iter()
                .map(|p| insert_prepared(conn, p, &created_at))
                .collect()
        })
    }
}

impl ReadOnlyStore {
    /// The earliest record of `operation` about the subject with digest `subject_sha256` whose
    /// parameters are `parameters`: an observation made before, to reuse rather than redo.
    pub fn find_observation<P: serde::Serialize>(
        &self,
        operation: &str,
        subject_sha256: &str,
        parameters: &P,
    ) -> Result<Option<StoredEvidence>, StoreError> {
        let wanted =
            serde_json::to_value(parameters).map_err(|source| StoreError::CorruptRecord {
                id: format!("parameters of {operation}"),
                source,
            })?;
        // Records are stored as canonical JSON, so a record with these parameters holds them
        // verbatim after their key: SQLite skips every other record of the operation without
        // handing it over to be parsed (a session with hundreds of pseudo-code records would
        // otherwise parse each one on every ask). The parse below still decides.
        // A JSON tree always has a canonical form; were it ever refused, the filter would keep
        // every record with parameters and the parse would still decide.
        let canonical = crate::evidence::canonical_json(&wanted).unwrap_or_default();
        let needle = format!("\"parameters\":{canonical}");
        self.read(|conn| {
            let mut statement = conn.prepare_cached(
                "select id, seq, created_at, record from evidence where operation = ?1 and subject_sha256 = ?2 and instr(record, ?3) > 0 order by seq",
            )?;
            let rows = statement.query_map([operation, subject_sha256, needle.as_str()], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                ))
            })?;
            for row in rows {
                let (id, seq, created_at, record) = row?;
                let record: EvidenceRecord = serde_json::from_str(&record)
                    .map_err(|source| StoreError::CorruptRecord { id: id.clone(), source })?;
                if record.parameters != wanted {
                    continue;
                }
                let Ok(id) = EvidenceId::parse(&id) else {
                    continue;
                };
                return Ok(Some(StoredEvidence {
                    id,
                    seq,
                    created_at,
                    record,
                }));
            }
            Ok(None)
        })
    }
}

impl ReadOnlyStore {
    /// One record by id, or `None` when this ledger does not hold it.
    pub fn evidence(&self, id: &EvidenceId) -> Result<Option<StoredEvidence>, StoreError> {
        self.read(|conn| get_evidence(conn, id))
    }

    /// [`ReadOnlyStore::evidence`], and what is wrong with the row when its stored record no
    /// longer hashes to its id (edited on disk, say): the record is still served, as it reads.
    pub fn evidence_checked(
        &self,
        id: &EvidenceId,
    ) -> Result<Option<(StoredEvidence, Option<String>)>, StoreError> {
        self.read(|conn| {
            let row: Option<(i64, String, String)> = conn
                .prepare_cached("select seq, created_at, record from evidence where id = ?1")?
                .query_row([id.as_str()], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .optional()?;
            let Some((seq, created_at, text)) = row else {
                return Ok(None);
            };
            let damage =
                super::verify::record_of(id, rusqlite::types::ValueRef::Text(text.as_bytes()))
                    .err();
            let record =
                serde_json::from_str(&text).map_err(|source| StoreError::CorruptRecord {
                    id: id.to_string(),
                    source,
                })?;
            Ok(Some((
                StoredEvidence {
                    id: id.clone(),
                    seq,
                    created_at,
                    record,
                },
                damage,
            )))
        })
    }

    /// Whether this ledger holds `id`.
    pub fn has_evidence(&self, id: &EvidenceId) -> Result<bool, StoreError> {
        self.read(|conn| {
            Ok(conn
                .prepare_cached("select 1 from evidence where id = ?1")?
                .query_row([id.as_str()], |_| Ok(()))
                .optional()?
                .is_some())
        })
    }

    /// A page of the ledger in recording order, and the total number of rows the filter selects.
    pub fn list_evidence(
        &self,
        filter: &EvidenceFilter,
    ) -> Result<(Vec<EvidenceSummary>, u64), StoreError> {
        let mut rows = vec![];
        self.each_evidence_summary(filter, |row| {
            rows.push(row);
            ControlFlow::Continue(())
        })?;
        Ok((rows, self.count_evidence(filter.operation.as_deref())?))
    }

    /// The rows `filter` selects in recording order, handed to `each` one at a time (until it
    /// says to stop), so a listing of any length holds one row in memory.
    pub fn each_evidence_summary(
        &self,
        filter: &EvidenceFilter,
        mut each: impl FnMut(EvidenceSummary) -> ControlFlow<()>,
    ) -> Result<(), StoreError> {
        self.read(|conn| {
            let limit = i64::try_from(filter.limit).unwrap_or(i64::MAX);
            let offset = i64::try_from(filter.offset).unwrap_or(i64::MAX);
            // Two statements rather than `?1 is null or operation = ?1`, which would keep
            // SQLite from walking the (operation, seq) index for a filtered listing.
            let mut stmt = conn.prepare_cached(match filter.operation {
                Some(_) => {
                    "select id, seq, operation, provider_id, confidence, authority, created_at
                     from evidence where operation = ?3 order by seq limit ?1 offset ?2"
                }
                None => {
                    "select id, seq, operation, provider_id, confidence, authority, created_at
                     from evidence order by seq limit ?1 offset ?2"
                }
            })?;
            let mut rows = match &filter.operation {
                Some(op) => stmt.query(params![limit, offset, op])?,
                None => stmt.query(params![limit, offset])?,
            };
            while let Some(r) = rows.next()? {
                let id: String = r.get(0)?;
                let id = EvidenceId::parse(&id).map_err(|e| {
                    rusqlite::Error::FromSqlConversionFailure(
                        0,
                        rusqlite::types::Type::Text,
                        Box::new(e),
                    )
                })?;
                let row = EvidenceSummary {
                    id,
                    seq: r.get(1)?,
                    operation: r.get(2)?,
                    provider_id: r.get(3)?,
                    confidence: r.get(4)?,
                    authority: r.get(5)?,
                    created_at: r.get(6)?,
                };
                if each(row).is_break() {
                    break;
                }
            }
            Ok(())
        })
    }

    /// How many rows hold records of `operation`, or of any operation.
    pub fn count_evidence(&self, operation: Option<&str>) -> Result<u64, StoreError> {
        self.read(|conn| {
            // The whole ledger's size is the sum of the id-prefix counts kept beside it (sixteen
            // rows); one operation's is counted on its index.
            let total: i64 = match operation {
                Some(op) => conn
                    .prepare_cached("select count(*) from evidence where operation = ?1")?
                    .query_row([op], |r| r.get(0))?,
                None => conn
                    .prepare_cached("select coalesce(sum(rows), 0) from evidence_id_prefixes")?
                    .query_row([], |r| r.get(0))?,
            };
            Ok(total.max(0) as u64)
        })
    }

    /// Every record in recording order, for export and verification.
    pub fn all_evidence(
        &self,
        mut each: impl FnMut(StoredEvidence) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        self.read(|conn| {
            let mut stmt =
                conn.prepare("select id, seq, created_at, record from evidence order by seq")?;
            let mut rows = stmt.query([])?;
            while let Some(r) = rows.next()? {
                let id: String = r.get(0)?;
                let record: String = r.get(3)?;
                let record =
                    serde_json::from_str(&record).map_err(|source| StoreError::CorruptRecord {
                        id: id.clone(),
                        source,
                    })?;
                let id = EvidenceId::parse(&id).map_err(|e| StoreError::CorruptRecord {
                    id: id.clone(),
                    source: serde::de::Error::custom(e),
                })?;
                each(StoredEvidence {
                    id,
                    seq: r.get(1)?,
                    created_at: r.get(2)?,
                    record,
                })?;
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::{Subject, test_record};
    use crate::vocabulary::{Architecture, Format};
    use serde_json::json;

    fn about(sha256: &str, parameters: serde_json::Value, result: u64) -> EvidenceRecord {
        let mut record = test_record("procedure_pseudo_code", parameters, json!(result));
        record.subject = Some(Subject {
            name: "t".into(),
            sha256: sha256.into(),
            format: Format::Elf,
            architecture: Architecture::parse("x86_64").unwrap(),
            path: "/t".into(),
        });
        record
    }

    #[test]
    fn an_observation_is_found_by_operation_subject_and_exact_parameters() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("s.db")).unwrap();
        let key = json!({"document": "t", "procedure": "0x10", "provider": "angr"});
        store
            .record_blocking(about(
                "aa",
                json!({"document": "t", "procedure": "0x20", "provider": "angr"}),
                1,
            ))
            .unwrap();
        store.record_blocking(about("bb", key.clone(), 2)).unwrap();
        let wanted = store.record_blocking(about("aa", key.clone(), 3)).unwrap();
        store.record_blocking(about("aa", key.clone(), 4)).unwrap();
        let found = store
            .find_observation("procedure_pseudo_code", "aa", &key)
            .unwrap()
            .unwrap();
        // The earliest of the two that match; the other subject and other parameters do not.
        assert_eq!((found.id, found.seq), (wanted.id, wanted.seq));
        assert_eq!(found.record.result, json!(3));
        assert!(
            store
                .find_observation("procedure_assembly", "aa", &key)
                .unwrap()
                .is_none()
        );
        let other = json!({"document": "t", "procedure": "0x30", "provider": "angr"});
        assert!(
            store
                .find_observation("procedure_pseudo_code", "aa", &other)
                .unwrap()
                .is_none()
        );
    }
}
