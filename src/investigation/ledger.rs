//! The Evidence ledger: reading one record, listing them, exporting the whole ledger; and for
//! the operator's own commands, verifying a session's ledger and exporting it without a binary
//! session.

use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::args::cap;
use super::args::{Page, PageRequest};
use super::{Investigation, InvestigationError, Result, blocking};
use crate::evidence::EvidenceRecord;
use crate::fsroot::{Claim, NewFile, Roots};
use crate::ids::EvidenceId;
use crate::session::{self, Session, SessionError};
use crate::settings::Settings;
use crate::store::{
    BadRow, EvidenceFilter, EvidenceSummary, LedgerCheck, LedgerStatus, RawEvidence, ReadOnlyStore,
    StoreError, each_readable_evidence, verify_ledger,
};

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
    /// Only Evidence of this operation (a tool name such as open_binary) (at most 4 KiB).
    #[serde(default)]
    #[serde(deserialize_with = "cap::name_opt")]
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
    /// A header line (`rea_export`, `format_version`, `session_id`), then one JSON object per
    /// record: id, seq, created_at, record.
    Jsonl,
}

/// Arguments of `export_evidence`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExportArgs {
    /// Destination file, outside rea's state and config directories. Its directory must exist
    /// (at most 4 KiB).
    #[serde(deserialize_with = "cap::name")]
    pub path: String,
    /// sqlite (default) or jsonl.
    #[serde(default)]
    pub format: ExportFormat,
    /// Replace the destination if it is an earlier rea export (default false: an existing file
    /// is an error; a file rea did not export is never replaced).
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

/// What the first line of a JSON-lines export says: that the file is one, in which version of the
/// format, of which session. Every later line is one record.
#[derive(Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct JsonlHeader {
    /// Always [`JSONL_KIND`].
    pub rea_export: String,
    /// [`JSONL_FORMAT_VERSION`] for files this build writes.
    pub format_version: u32,
    /// The session the records are of.
    pub session_id: String,
}

/// `rea_export` of a JSON-lines export's header line.
pub const JSONL_KIND: &str = "evidence";

/// The version of the JSON-lines format: 1 is a header line, then one record per line.
pub const JSONL_FORMAT_VERSION: u32 = 1;

/// Whether `head`, the first bytes of a file, begins with the header line of a JSON-lines export.
fn is_jsonl_export(head: &[u8]) -> bool {
    let Some(end) = head.iter().position(|&b| b == b'\n') else {
        return false;
    };
    serde_json::from_slice::<JsonlHeader>(&head[..end]).is_ok_and(|h| h.rea_export == JSONL_KIND)
}

/// Decides what an export may do with `dest`'s name: a free name is taken; a taken one only when
/// `overwrite` is set and it holds an earlier rea export (a SQLite copy with rea's
/// `application_id` or JSON lines with rea's header line, whichever format is being written),
/// recognised on the descriptor opened for the check. Never a session's own files.
pub fn claim_export(dest: &NewFile, overwrite: bool) -> Result<Claim> {
    Ok(dest.claim(overwrite, |head| {
        if crate::store::is_session_database_header(head) || is_jsonl_export(head) {
            Ok(())
        } else if head.is_empty() {
            Err("an empty file".into())
        } else {
            Err("neither a SQLite file with rea's application_id nor JSON lines that begin with rea's header line".into())
        }
    })?)
}

/// Writes every readable record of the session database `db` (of session `session_id`) as JSON
/// lines to `dest`, after a header line ([`JsonlHeader`]), in recording order, reading it through
/// a connection of its own that reads past damage; the name is taken as `claim` allows
/// ([`claim_export`]). A row that cannot be read, does not parse or does not hash to its id is
/// left out and named in the answer, and the export goes on: a damaged ledger keeps what is
/// readable. Blocking.
pub fn export_jsonl(
    db: &Path,
    session_id: &str,
    dest: &NewFile,
    claim: Claim,
) -> Result<JsonlExport> {
    use std::io::Write;
    let io = |source| StoreError::Io {
        path: dest.path().to_owned(),
        source,
    };
    // Written beside the destination and renamed over it: never through a link, and a failed
    // export leaves nothing behind.
    let mut temp = dest.temp()?;
    let header = JsonlHeader {
        rea_export: JSONL_KIND.into(),
        format_version: JSONL_FORMAT_VERSION,
        session_id: session_id.into(),
    };
    let mut n = 0;
    let file: &std::fs::File = temp.file();
    let (walked, wrote) = std::thread::scope(|scope| {
        let mut out = Spool::start(scope, file);
        let walked = (|| -> Result<Vec<BadRow>> {
            serde_json::to_writer(&mut out, &header).map_err(|e| io(e.into()))?;
            out.write_all(b"\n").map_err(io)?;
            Ok(each_readable_evidence(db, |e: RawEvidence<'_>| {
                // A line is a `StoredEvidence` in JSON; its record is the stored canonical JSON,
                // written as it is (it was checked to hash to its id and to parse), so a reader
                // can hash it again.
                write_line(&mut out, &e).map_err(io)?;
                n += 1;
                Ok(())
            })?)
        })();
        (walked, out.finish())
    });
    // The writer's own error (a full disk, say) is the cause of any the walk saw.
    wrote.map_err(io)?;
    let skipped = walked?;
    temp.commit(claim)?;
    Ok(JsonlExport {
        records: n,
        skipped,
    })
}

/// Bytes of output a [`Spool`] hands its writer at a time: a million rows are a few hundred
/// megabytes of lines.
const SPOOL_CHUNK: usize = 1 << 20;

/// Buffered output written by a thread of its own, so that copying the lines into the file (a
/// fifth of an export's time when done in line) runs beside reading and hashing the rows. Holds
/// at most three chunks: one being filled, one queued, one being written.
struct Spool<'scope> {
    buf: Vec<u8>,
    full: Option<std::sync::mpsc::SyncSender<Vec<u8>>>,
    empty: std::sync::mpsc::Receiver<Vec<u8>>,
    writer: std::thread::ScopedJoinHandle<'scope, std::io::Result<()>>,
}

impl<'scope> Spool<'scope> {
    fn start<'env>(
        scope: &'scope std::thread::Scope<'scope, 'env>,
        mut file: &'env std::fs::File,
    ) -> Spool<'scope> {
        use std::io::Write;
        let (full, to_write) = std::sync::mpsc::sync_channel::<Vec<u8>>(1);
        let (written, empty) = std::sync::mpsc::channel::<Vec<u8>>();
        let writer = scope.spawn(move || {
            for mut chunk in to_write {
                file.write_all(&chunk)?;
                chunk.clear();
                // The spool may already be gone; the chunk is then freed here.
                let _ = written.send(chunk);
            }
            Ok(())
        });
        Spool {
            buf: Vec::with_capacity(SPOOL_CHUNK),
            full: Some(full),
            empty,
            writer,
        }
    }

    /// Hands the filled chunk to the writer. Fails when the writer has stopped; its own error
    /// is what [`Spool::finish`] returns.
    fn hand_over(&mut self) -> std::io::Result<()> {
        let next = self
            .empty
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(SPOOL_CHUNK));
        let chunk = std::mem::replace(&mut self.buf, next);
        match &self.full {
            Some(full) if full.send(chunk).is_ok() => Ok(()),
            _ => Err(std::io::Error::other("the export's writer stopped")),
        }
    }

    /// Writes what is left and waits for the writer: its error, if it failed.
    fn finish(mut self) -> std::io::Result<()> {
        let handed = if self.buf.is_empty() {
            Ok(())
        } else {
            self.hand_over()
        };
        drop(self.full.take());
        let written = self
            .writer
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("the export's writer panicked")));
        written.and(handed)
    }
}

impl std::io::Write for Spool<'_> {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= SPOOL_CHUNK {
            self.hand_over()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// One line of a JSON lines export: `{"id":…,"seq":…,"created_at":…,"record":…}` and a newline,
/// the fields of [`StoredEvidence`](crate::evidence::StoredEvidence) in its order.
fn write_line(out: &mut impl std::io::Write, e: &RawEvidence<'_>) -> std::io::Result<()> {
    out.write_all(b"{\"id\":\"")?;
    // An id is `ev_` and hex: nothing to escape.
    out.write_all(e.id.as_str().as_bytes())?;
    out.write_all(b"\",\"seq\":")?;
    serde_json::to_writer(&mut *out, &e.seq)?;
    out.write_all(b",\"created_at\":")?;
    serde_json::to_writer(&mut *out, e.created_at)?;
    out.write_all(b",\"record\":")?;
    out.write_all(e.record)?;
    out.write_all(b"}\n")
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
        let session_id = s.session.session.id().to_owned();
        let (format, overwrite, path) = (args.format, args.overwrite, dest.clone());
        let done = blocking(move || {
            let claim = claim_export(&path, overwrite)?;
            match format {
                ExportFormat::Sqlite => {
                    store.export(&path, claim)?;
                    Ok(JsonlExport {
                        records: store.list_evidence(&EvidenceFilter::default())?.1,
                        skipped: vec![],
                    })
                }
                ExportFormat::Jsonl => export_jsonl(store.path(), &session_id, &path, claim),
            }
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

/// Every row of session `id`'s ledger checked on its own (`rea evidence verify`), read through a
/// connection of its own that tolerates damage: every bad row is reported and the walk goes on,
/// where the read-only store would stop at the first. Blocking.
pub fn verify_session(settings: &Settings, id: &str) -> Result<LedgerCheck> {
    let path = session::database_path(&settings.state_dir, id)?;
    Ok(verify_ledger(&path)?)
}

/// Where the operator's own export (`rea evidence export`) writes: any path, not only beneath
/// the allowed roots, but never into rea's state or configuration or over a session's files.
pub fn export_destination(settings: &Settings, dest: &Path) -> Result<NewFile> {
    Ok(Roots::none().open_new(dest, &settings.protected())?)
}

/// A session's ledger as the operator's export reads it: the session itself when no live
/// process holds it, so the export time is noted in it (`rea sessions prune` keeps sessions
/// never exported); else read beside its owner and left as it is.
#[derive(Debug)]
pub struct ExportSource {
    id: String,
    /// The session's database.
    db: PathBuf,
    /// The session, taken for the export.
    held: Option<Session>,
    /// Why a session no live process holds was not taken: it is damaged, and a damaged session
    /// is not written to (what is readable is copied beside it).
    damage: Option<SessionError>,
}

/// What a SQLite copy of the ledger found.
#[derive(Debug)]
pub struct Copied {
    /// Whether the export time was noted in the session (it was taken for the export).
    pub noted: bool,
    /// The copy is of the file as it is: the ledger check's finding, when it found a damaged
    /// record.
    pub damaged: Option<LedgerStatus>,
}

impl ExportSource {
    /// Takes session `id` for an export when no live process holds it and it is sound.
    pub fn take(settings: &Settings, id: &str) -> Result<ExportSource> {
        let (held, damage) = match Session::resume(&settings.state_dir, id) {
            Ok(s) => (Some(s), None),
            Err(SessionError::InUse { .. }) => (None, None),
            Err(e @ SessionError::Damaged { .. }) => (None, Some(e)),
            Err(e) => return Err(e.into()),
        };
        Ok(ExportSource {
            id: id.to_owned(),
            db: session::database_path(&settings.state_dir, id)?,
            held,
            damage,
        })
    }

    /// Why the session was not taken though no live process holds it, if it was not.
    pub fn damage(&self) -> Option<&SessionError> {
        self.damage.as_ref()
    }

    /// Writes every readable record as JSON lines (see [`export_jsonl`]), through a connection
    /// of its own that reads past damage (also a truncated file, which the read-only store does
    /// not open). The session taken for it is let go first: nothing is noted in it, and its
    /// background ledger check would hash every row a second time beside the export's walk,
    /// which hashes each one itself (on two cores, that check doubled the export's time).
    /// Blocking.
    pub fn jsonl(mut self, dest: &NewFile, claim: Claim) -> Result<JsonlExport> {
        drop(self.held.take());
        export_jsonl(&self.db, &self.id, dest, claim)
    }

    /// A consistent copy of the session database: through the session when it was taken, else
    /// through a read-only store beside its owner. Blocking.
    pub fn sqlite(&self, dest: &NewFile, claim: Claim) -> Result<Copied> {
        match &self.held {
            Some(s) => {
                s.store().export(dest, claim)?;
                let check = s.store().wait_ledger_check();
                Ok(Copied {
                    noted: true,
                    damaged: matches!(check, LedgerStatus::Damaged(_)).then_some(check),
                })
            }
            None => {
                ReadOnlyStore::open(&self.db)?.copy_to(dest, claim)?;
                Ok(Copied {
                    noted: false,
                    damaged: None,
                })
            }
        }
    }
}
