//! The Evidence ledger: reading one record, listing them, exporting the whole ledger.

use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::args::{Page, PageRequest};
use super::{Investigation, InvestigationError, Result, blocking};
use crate::evidence::{EvidenceRecord, StoredEvidence};
use crate::fsroot::NewFile;
use crate::ids::EvidenceId;
use crate::store::{BadRow, EvidenceFilter, EvidenceSummary, StoreError, each_readable_evidence};

/// Arguments of `get_evidence`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetArgs {
    /// The Evidence id (ev_…) to read.
    pub evidence_id: EvidenceId,
}

/// One record as `get_evidence` reads it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct EvidenceRead {
    /// `ev_` + SHA-256 of the record's canonical JSON.
    pub id: EvidenceId,
    /// Order in which the ledger first stored the record (1-based).
    pub seq: i64,
    /// When the ledger first stored the record (RFC 3339, UTC). Not part of the id.
    pub created_at: String,
    /// The record as stored.
    pub record: EvidenceRecord,
    /// True when the stored record no longer hashes to its id: the row was changed after it
    /// was committed, and the record is not the observation the id names.
    pub damaged: bool,
    /// Why it is damaged, when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub damage: Option<String>,
}

/// Arguments of `list_evidence`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListArgs {
    /// Only Evidence of this operation (a tool name such as open_binary).
    #[serde(default)]
    pub operation: Option<String>,
    /// Rows to skip.
    #[serde(default)]
    pub offset: u64,
    /// Rows to return (default 50, at most 500).
    #[serde(default)]
    pub limit: Option<u64>,
}

/// A page of the ledger.
#[derive(Debug, Serialize, JsonSchema)]
pub struct EvidencePage {
    /// Rows in recording order.
    pub evidence: Vec<EvidenceSummary>,
    /// Rows the filter selects in all.
    pub total: u64,
    /// Offset of the next page, when there is one.
    pub next_offset: Option<u64>,
}

/// Format of an export.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema, Default)]
#[serde(rename_all = "lowercase")]
pub enum ExportFormat {
    /// A consistent copy of the whole session database (VACUUM INTO).
    #[default]
    Sqlite,
    /// One JSON object per line: id, seq, created_at, record.
    Jsonl,
}

/// Arguments of `export_evidence`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExportArgs {
    /// Destination file. Its directory must exist.
    pub path: String,
    /// sqlite (default) or jsonl.
    #[serde(default)]
    pub format: ExportFormat,
    /// Replace the destination if it exists (default false: an existing file is an error).
    #[serde(default)]
    pub overwrite: bool,
}

/// What was exported.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Exported {
    /// Canonical destination path.
    pub path: String,
    /// Format written.
    pub format: ExportFormat,
    /// Evidence rows exported.
    pub evidence: u64,
    /// Bytes written.
    pub bytes: u64,
    /// JSON lines: unreadable rows left out (they do not read, parse or hash to their id).
    pub skipped: u64,
    /// The first of them, as `seq N ev_…: problem`.
    pub skipped_rows: Vec<String>,
}

/// Skipped rows listed one by one in an export's result (all are counted).
const LISTED_SKIPPED: usize = 100;

/// What a JSON-lines export wrote and left out.
#[derive(Debug)]
pub struct JsonlExport {
    /// Records written.
    pub records: u64,
    /// Rows left out, in sequence order.
    pub skipped: Vec<BadRow>,
}

impl JsonlExport {
    /// The skipped rows as the result lists them: `seq N ev_…: problem`, the first
    /// [`LISTED_SKIPPED`].
    pub fn listed(&self) -> Vec<String> {
        self.skipped
            .iter()
            .take(LISTED_SKIPPED)
            .map(|b| {
                format!(
                    "seq {} {}: {}",
                    b.seq,
                    b.id.as_deref().unwrap_or("(id unreadable)"),
                    b.problem
                )
            })
            .collect()
    }
}

/// Writes every readable record of the session database `db` as JSON lines to `dest`, in
/// recording order, reading it through a connection of its own that reads past damage; never
/// replaces an existing file unless `overwrite` is set. A row that cannot be read, does not parse
/// or does not hash to its id is left out and named in the answer, and the export goes on: a
/// damaged ledger keeps what is readable. Blocking.
pub fn export_jsonl(db: &Path, dest: &NewFile, overwrite: bool) -> Result<JsonlExport> {
    use std::io::Write;
    let io = |source| StoreError::Io {
        path: dest.path().to_owned(),
        source,
    };
    if !overwrite && dest.exists() {
        return Err(StoreError::ExportExists {
            path: dest.path().to_owned(),
        }
        .into());
    }
    // Written beside the destination and renamed over it: never through a link, and a failed
    // export leaves nothing behind.
    let mut temp = dest.temp()?;
    let mut out = std::io::BufWriter::new(temp.file());
    let mut n = 0;
    let skipped = each_readable_evidence(db, |e: StoredEvidence| {
        serde_json::to_writer(&mut out, &e).map_err(|source| StoreError::CorruptRecord {
            id: e.id.to_string(),
            source,
        })?;
        out.write_all(b"\n").map_err(io)?;
        n += 1;
        Ok(())
    })?;
    out.flush().map_err(io)?;
    drop(out);
    temp.commit(overwrite)?;
    Ok(JsonlExport {
        records: n,
        skipped,
    })
}

impl Investigation {
    /// `get_evidence`: one record, whole, and whether its row still hashes to its id.
    pub fn get_evidence(&self, args: GetArgs) -> Result<EvidenceRead> {
        let s = self.open_session()?;
        let (stored, damage) = s
            .store()
            .evidence_checked(&args.evidence_id)?
            .ok_or_else(|| {
                InvestigationError::InvalidArgument(format!(
                    "Evidence {} is not in this session's ledger",
                    args.evidence_id
                ))
            })?;
        Ok(EvidenceRead {
            id: stored.id,
            seq: stored.seq,
            created_at: stored.created_at,
            record: stored.record,
            damaged: damage.is_some(),
            damage,
        })
    }

    /// `list_evidence`: the ledger in recording order, a page at a time.
    pub fn list_evidence(&self, args: ListArgs) -> Result<EvidencePage> {
        let s = self.open_session()?;
        let request = PageRequest::new(args.offset, args.limit, PageRequest::LISTING);
        let (evidence, total) = s.store().list_evidence(&EvidenceFilter {
            operation: args.operation,
            offset: request.offset,
            limit: request.limit,
        })?;
        let page = Page::new(evidence, total, &request);
        Ok(EvidencePage {
            evidence: page.items,
            total: page.total,
            next_offset: page.next_offset,
        })
    }

    /// `export_evidence`: the ledger to a file, as a SQLite copy or JSON lines.
    pub async fn export_evidence(&self, args: ExportArgs) -> Result<Exported> {
        let dest = self
            .settings
            .check_new_path(Path::new(&args.path))
            .map_err(InvestigationError::Path)?;
        let s = self.open_session()?;
        let store = s.store().clone();
        let (format, overwrite, path) = (args.format, args.overwrite, dest.clone());
        let done = blocking(move || match format {
            ExportFormat::Sqlite => {
                store.export(&path, overwrite)?;
                Ok(JsonlExport {
                    records: store.list_evidence(&EvidenceFilter::default())?.1,
                    skipped: vec![],
                })
            }
            ExportFormat::Jsonl => export_jsonl(store.path(), &path, overwrite),
        })
        .await?;
        let bytes = std::fs::symlink_metadata(dest.path())
            .map(|m| m.len())
            .unwrap_or(0);
        Ok(Exported {
            path: dest.path().display().to_string(),
            format: args.format,
            evidence: done.records,
            bytes,
            skipped: done.skipped.len() as u64,
            skipped_rows: done.listed(),
        })
    }
}
