//! The ledger's hash chain (migration V7): every ledger row, in commit order, chained by hash,
//! and the chain's head kept in a file beside the database, outside the WAL.
//!
//! Each chain row covers one ledger row: its kind and its content digest (for Evidence the
//! digest its id already carries, so the same observation keeps one id; for a revision, the
//! digest of its fields in canonical JSON). Its hash is sha256(previous hash ‖ kind ‖ digest),
//! from 32 zero bytes. The row is appended in the transaction of the row it covers, so the chain
//! and the ledger commit together; after each group commit the writer writes the head (the last
//! chain `seq`, its hash and the highest Evidence seq) into the head file `session.chain` and
//! syncs it, and only then answers the group. The file has two fixed slots, each a head with the
//! sha256 of its text; a head goes into the slot of its seq's parity, in place, with one data
//! sync, so a crash while one slot is written leaves the other whole, and the newer whole slot
//! is the head. A WAL that loses committed frames (a flipped byte ends SQLite's
//! replay at that frame) then leaves a database whose chain ends before the file's head: the lost
//! tail is named instead of going unseen, as is a chain rewritten to match an edited row.
//!
//! Rows written before the ledger had a chain are its unchained prefix: reported, not damage.

use std::collections::{BTreeMap, HashSet};
use std::fs::File;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;
use sha2::{Digest, Sha256};

use super::StoreError;
use crate::ids::EvidenceId;

/// The hash before the first chain row.
const GENESIS: [u8; 32] = [0; 32];

/// First line of a head file; the format's version.
const HEAD_MAGIC: &str = "rea ledger chain head 2";

/// Bytes of one of the head file's two slots; the file is two slots long.
const SLOT: usize = 256;

/// Problems listed one by one by a chain check (all are counted).
const LISTED: usize = 100;

/// What kind of ledger row a chain row covers. A new kind of ledger row is one variant here and
/// one `append_revision` call in its insert.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum ChainKind {
    /// An Evidence row; its digest is its id's.
    Evidence,
    /// A revision of a residual unknown.
    UnknownRevision,
    /// A revision of an annotation.
    AnnotationRevision,
}

impl ChainKind {
    /// The text hashed into the chain and kept in `ledger_chain.kind`.
    pub(super) fn as_str(self) -> &'static str {
        match self {
            ChainKind::Evidence => "evidence",
            ChainKind::UnknownRevision => "unknown_revision",
            ChainKind::AnnotationRevision => "annotation_revision",
        }
    }

    fn parse(text: &str) -> Option<ChainKind> {
        match text {
            "evidence" => Some(ChainKind::Evidence),
            "unknown_revision" => Some(ChainKind::UnknownRevision),
            "annotation_revision" => Some(ChainKind::AnnotationRevision),
            _ => None,
        }
    }
}

/// The chain hash of a row of `kind` with content `digest` after a row hashed `prev`.
pub(super) fn link(prev: &[u8; 32], kind: ChainKind, digest: &[u8; 32]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(prev);
    h.update(kind.as_str().as_bytes());
    h.update(digest);
    h.finalize().into()
}

/// The 32 bytes an Evidence id is the hex of.
fn evidence_digest(id: &EvidenceId) -> [u8; 32] {
    let mut out = [0u8; 32];
    // Every EvidenceId is `ev_` and 64 lowercase hex digits.
    let _ = hex::decode_to_slice(&id.as_str()[3..], &mut out);
    out
}

/// The last chain row: its seq and hash.
fn last_row(conn: &Connection) -> rusqlite::Result<Option<(i64, [u8; 32])>> {
    conn.prepare_cached("select seq, hash from ledger_chain order by seq desc limit 1")?
        .query_row([], |r| Ok((r.get(0)?, blob32(r.get_ref(1)?))))
        .optional()
}

fn blob32(v: rusqlite::types::ValueRef<'_>) -> [u8; 32] {
    let mut out = [0u8; 32];
    if let Ok(b) = v.as_blob()
        && b.len() == 32
    {
        out.copy_from_slice(b);
    }
    out
}

fn append(
    conn: &Connection,
    kind: ChainKind,
    evidence_seq: Option<i64>,
    item: Option<&str>,
    revision: Option<i64>,
    digest: &[u8; 32],
) -> Result<(), StoreError> {
    let (seq, prev) = last_row(conn)?.unwrap_or((0, GENESIS));
    let hash = link(&prev, kind, digest);
    conn.prepare_cached(
        "insert into ledger_chain (seq, kind, evidence_seq, item, revision, digest, hash) values (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        seq + 1,
        kind.as_str(),
        evidence_seq,
        item,
        revision,
        &digest[..],
        &hash[..]
    ])?;
    Ok(())
}

/// Appends the chain row of the Evidence row `seq` holding `id`, in the insert's transaction.
pub(super) fn append_evidence(
    conn: &Connection,
    seq: i64,
    id: &EvidenceId,
) -> Result<(), StoreError> {
    append(
        conn,
        ChainKind::Evidence,
        Some(seq),
        None,
        None,
        &evidence_digest(id),
    )
}

/// Appends the chain row of revision `revision` of `item` (an unknown's or annotation's id) with
/// content digest `digest`, in the insert's transaction.
pub(super) fn append_revision(
    conn: &Connection,
    kind: ChainKind,
    item: &str,
    revision: i64,
    digest: &[u8; 32],
) -> Result<(), StoreError> {
    append(conn, kind, None, Some(item), Some(revision), digest)
}

/// The fields of an unknown's revision that its chain digest covers.
pub(super) struct RevisionContent<'a> {
    pub item: &'a str,
    pub revision: i64,
    pub status: &'a str,
    pub question: &'a str,
    pub resolution: Option<&'a str>,
    pub rationale: Option<&'a str>,
    pub note: Option<&'a str>,
    pub recorded_at: &'a str,
    /// Cited Evidence ids of each role; sorted and deduplicated here, as the table keeps them.
    pub supporting: Vec<String>,
    pub contradicting: Vec<String>,
}

impl RevisionContent<'_> {
    /// sha256 of the revision's fields as canonical JSON.
    pub(super) fn digest(mut self) -> [u8; 32] {
        for ids in [&mut self.supporting, &mut self.contradicting] {
            ids.sort();
            ids.dedup();
        }
        let value = serde_json::json!({
            "unknown": self.item,
            "revision": self.revision,
            "status": self.status,
            "question": self.question,
            "resolution": self.resolution,
            "rationale": self.rationale,
            "note": self.note,
            "recorded_at": self.recorded_at,
            "supporting": self.supporting,
            "contradicting": self.contradicting,
        });
        // A tree of strings, numbers and nulls always has a canonical form.
        let text = crate::evidence::canonical_json(&value).unwrap_or_default();
        Sha256::digest(text.as_bytes()).into()
    }
}

/// The fields of an annotation's revision that its chain digest covers.
pub(super) struct AnnotationContent<'a> {
    pub item: &'a str,
    pub revision: i64,
    pub withdrawn: bool,
    pub text: &'a str,
    pub rationale: &'a str,
    pub evidence_id: &'a str,
    pub recorded_at: &'a str,
    /// Cited Evidence ids; sorted and deduplicated here, as the table keeps them.
    pub cites: Vec<String>,
}

impl AnnotationContent<'_> {
    /// sha256 of the revision's fields as canonical JSON.
    pub(super) fn digest(mut self) -> [u8; 32] {
        self.cites.sort();
        self.cites.dedup();
        let value = serde_json::json!({
            "annotation": self.item,
            "revision": self.revision,
            "withdrawn": self.withdrawn,
            "text": self.text,
            "rationale": self.rationale,
            "evidence_id": self.evidence_id,
            "recorded_at": self.recorded_at,
            "cites": self.cites,
        });
        // A tree of strings, numbers, booleans and nulls always has a canonical form.
        let text = crate::evidence::canonical_json(&value).unwrap_or_default();
        Sha256::digest(text.as_bytes()).into()
    }
}

/// The content digest of revision `revision` of annotation `item` as the tables hold it now, or
/// `None` when there is no such revision.
fn stored_annotation_digest(
    conn: &Connection,
    item: &str,
    revision: i64,
) -> rusqlite::Result<Option<[u8; 32]>> {
    let row: Option<(bool, String, String, String, String)> = conn
        .prepare_cached(
            "select withdrawn, text, rationale, evidence_id, recorded_at from annotation_revisions where annotation_id = ?1 and revision = ?2",
        )?
        .query_row(params![item, revision], |r| {
            Ok((r.get::<_, i64>(0)? != 0, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .optional()?;
    let Some((withdrawn, text, rationale, evidence_id, recorded_at)) = row else {
        return Ok(None);
    };
    let cites = conn
        .prepare_cached(
            "select evidence_id from annotation_evidence where annotation_id = ?1 and revision = ?2",
        )?
        .query_map(params![item, revision], |r| r.get(0))?
        .collect::<rusqlite::Result<Vec<String>>>()?;
    Ok(Some(
        AnnotationContent {
            item,
            revision,
            withdrawn,
            text: &text,
            rationale: &rationale,
            evidence_id: &evidence_id,
            recorded_at: &recorded_at,
            cites,
        }
        .digest(),
    ))
}

/// The content digest of revision `revision` of unknown `item` as the tables hold it now, or
/// `None` when there is no such revision.
fn stored_revision_digest(
    conn: &Connection,
    item: &str,
    revision: i64,
) -> rusqlite::Result<Option<[u8; 32]>> {
    type Row = (
        String,
        String,
        Option<String>,
        Option<String>,
        Option<String>,
        String,
    );
    let row: Option<Row> = conn
        .prepare_cached(
            "select status, question, resolution, rationale, note, recorded_at from unknown_revisions where unknown_id = ?1 and revision = ?2",
        )?
        .query_row(params![item, revision], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?))
        })
        .optional()?;
    let Some((status, question, resolution, rationale, note, recorded_at)) = row else {
        return Ok(None);
    };
    let (mut supporting, mut contradicting) = (vec![], vec![]);
    let mut cited = conn.prepare_cached(
        "select evidence_id, role from unknown_evidence where unknown_id = ?1 and revision = ?2",
    )?;
    let mut rows = cited.query(params![item, revision])?;
    while let Some(r) = rows.next()? {
        let (id, role): (String, String) = (r.get(0)?, r.get(1)?);
        if role == "supporting" {
            supporting.push(id);
        } else {
            contradicting.push(id);
        }
    }
    Ok(Some(
        RevisionContent {
            item,
            revision,
            status: &status,
            question: &question,
            resolution: resolution.as_deref(),
            rationale: rationale.as_deref(),
            note: note.as_deref(),
            recorded_at: &recorded_at,
            supporting,
            contradicting,
        }
        .digest(),
    ))
}

/// The head of a chain: its last row's seq and hash, and the highest Evidence seq then.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Head {
    seq: i64,
    hash: [u8; 32],
    evidence: i64,
}

/// The chain head file beside the database at `db`: `session.chain` beside `session.db`.
pub fn head_path(db: &Path) -> PathBuf {
    db.with_extension("chain")
}

fn db_head(conn: &Connection) -> rusqlite::Result<Head> {
    let (seq, hash) = last_row(conn)?.unwrap_or((0, GENESIS));
    let evidence = conn
        .prepare_cached("select coalesce(max(seq), 0) from evidence")?
        .query_row([], |r| r.get(0))?;
    Ok(Head {
        seq,
        hash,
        evidence,
    })
}

impl Head {
    fn text(&self) -> String {
        format!(
            "{HEAD_MAGIC}\nseq {}\nhash {}\nevidence {}\n",
            self.seq,
            hex::encode(self.hash),
            self.evidence
        )
    }

    /// The slot holding this head: its text, a line with the text's sha256, and newlines to
    /// fill the slot, so a slot cut short by a crash is told from a whole one.
    fn slot(&self) -> [u8; SLOT] {
        let text = self.text();
        let whole = format!(
            "{text}check {}\n",
            hex::encode(Sha256::digest(text.as_bytes()))
        );
        let mut slot = [b'\n'; SLOT];
        slot[..whole.len()].copy_from_slice(whole.as_bytes());
        slot
    }

    /// The head a slot holds, when it is whole.
    fn from_slot(slot: &[u8]) -> Option<Head> {
        let text = std::str::from_utf8(slot).ok()?.trim_end_matches('\n');
        let (text, check) = text.rsplit_once("check ")?;
        if hex::encode(Sha256::digest(text.as_bytes())) != check {
            return None;
        }
        Head::parse(text)
    }

    fn parse(text: &str) -> Option<Head> {
        let mut lines = text.lines();
        if lines.next()? != HEAD_MAGIC {
            return None;
        }
        let mut field = |name: &str| lines.next()?.strip_prefix(name)?.strip_prefix(' ');
        let seq = field("seq")?.parse().ok()?;
        let mut hash = [0u8; 32];
        hex::decode_to_slice(field("hash")?, &mut hash).ok()?;
        let evidence = field("evidence")?.parse().ok()?;
        Some(Head {
            seq,
            hash,
            evidence,
        })
    }
}

/// Reads the head file at `path`: `Ok(None)` when there is none, `Err` with what is wrong when
/// it does not read as one.
fn read_head_file(path: &Path) -> Result<Option<Head>, String> {
    match std::fs::read(path) {
        // The newer of the two whole slots: a crash while one was written leaves the other.
        Ok(bytes) => bytes
            .chunks(SLOT)
            .take(2)
            .filter_map(Head::from_slot)
            .max_by_key(|h| h.seq)
            .map(Some)
            .ok_or_else(|| format!("the chain head file {} does not read", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!(
            "the chain head file {} cannot be read: {e}",
            path.display()
        )),
    }
}

/// Creates the head file at `path` holding `head` in both slots: written to a temporary file,
/// synced, renamed over any file there and the directory synced. Later heads are written in place
/// ([`write_slot`]), one slot at a time.
fn create_head_file(path: &Path, head: &Head) -> std::io::Result<()> {
    let mut temp = path.as_os_str().to_owned();
    temp.push(".tmp");
    let temp = PathBuf::from(temp);
    let file = File::create(&temp)?;
    let slot = head.slot();
    write_all_at(&file, &slot, 0)?;
    write_all_at(&file, &slot, SLOT as u64)?;
    file.sync_all()?;
    drop(file);
    std::fs::rename(&temp, path)?;
    // Windows opens no directory as a file to sync; NTFS journals the rename itself.
    #[cfg(unix)]
    if let Some(dir) = path.parent() {
        File::open(dir)?.sync_all()?;
    }
    Ok(())
}

/// All of `bytes` at `offset` of `file`.
fn write_all_at(file: &File, bytes: &[u8], offset: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::write_all_at(file, bytes, offset)
    }
    #[cfg(windows)]
    {
        let mut done = 0;
        while done < bytes.len() {
            match std::os::windows::fs::FileExt::seek_write(
                file,
                &bytes[done..],
                offset + done as u64,
            ) {
                Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// Writes a head file for the database at `db` whose chain ends at row `seq` with `hash`, after
/// Evidence seq `evidence`: for tools that build ledgers outside rea's writer (the benches).
pub fn write_head(db: &Path, seq: i64, hash: [u8; 32], evidence: i64) -> std::io::Result<()> {
    let head = Head {
        seq,
        hash,
        evidence,
    };
    create_head_file(&head_path(db), &head)
}

/// Writes `head` into its slot of the head file at `path` (the slot of its seq's parity, so the
/// other slot keeps the previous head whole while this one is written) and syncs its data: one
/// sync a commit, and no metadata, since the file's size never changes. The file is opened for
/// the write only, so a store holds no descriptor for it between commits.
fn write_slot(path: &Path, head: &Head) -> std::io::Result<()> {
    let file = File::options().write(true).open(path)?;
    let at = (head.seq.rem_euclid(2) as u64) * SLOT as u64;
    write_all_at(&file, &head.slot(), at)?;
    file.sync_data()
}

/// The writer's side of the head file: rewrites it after each commit that moved the chain.
pub(super) struct HeadPublisher {
    path: PathBuf,
    published: Head,
}

impl HeadPublisher {
    /// The publisher of the database at `db` (chain table migrated). A head file missing or
    /// behind the database's chain is brought up to it now: the database holds rows committed
    /// after the file was last written (a crash between the two), or no file was ever written.
    pub(super) fn open(db: &Path, conn: &Connection) -> Result<HeadPublisher, StoreError> {
        let path = head_path(db);
        let head = db_head(conn)?;
        let on_disk = read_head_file(&path).ok().flatten();
        let mut publisher = HeadPublisher {
            path,
            published: on_disk.unwrap_or(Head {
                seq: -1,
                hash: GENESIS,
                evidence: 0,
            }),
        };
        // A file at or ahead of the database is kept as it is (ahead, it names a lost tail), and
        // written in place from now on.
        if on_disk.is_none_or(|h| h.seq < head.seq) {
            create_head_file(&publisher.path, &head).map_err(|source| StoreError::Io {
                path: publisher.path.clone(),
                source,
            })?;
            publisher.published = head;
        }
        Ok(publisher)
    }

    /// Whether the chain has a row.
    pub(super) fn chained(&self) -> bool {
        self.published.seq > 0
    }

    /// After a COMMIT and before its answers: writes the chain's head when it moved.
    pub(super) fn after_commit(&mut self, conn: &Connection) {
        match db_head(conn) {
            Ok(head) if head != self.published => {
                if let Err(e) = self.publish(head) {
                    // The rows are committed: their callers are answered, and the file, behind
                    // the database, is brought up by the next commit or the next open.
                    tracing::error!(error = %e, path = %self.path.display(), "the chain head file could not be written");
                }
            }
            Ok(_) => {}
            Err(e) => tracing::error!(error = %e, "the chain head could not be read"),
        }
    }

    fn publish(&mut self, head: Head) -> std::io::Result<()> {
        match write_slot(&self.path, &head) {
            // Removed since (by hand): made whole again.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                create_head_file(&self.path, &head)?
            }
            other => other?,
        }
        self.published = head;
        Ok(())
    }
}

/// Where the Evidence ids a chain check compares its Evidence digests with come from.
pub(super) enum Ids<'a> {
    /// Not compared (resume: the background ledger check does it).
    Skip,
    /// One lookup per row.
    Lookup,
    /// Ids already read, by Evidence seq (verify's walk of the id index).
    Map(&'a BTreeMap<i64, String>),
    /// Read with each chain row, the Evidence row joined by its seq (what [`Ids::Lookup`]
    /// answers, in one statement and no memory per row: verify of a sound file).
    Join,
}

/// What a chain check found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ChainCheck {
    /// Rows of the chain.
    pub rows: u64,
    /// The chain's last seq and hash (hex), as the database holds them.
    pub head: Option<(i64, String)>,
    /// The head file's seq and hash, when there is one.
    pub head_file: Option<(i64, String)>,
    /// Evidence rows written before the ledger had a chain (seq 1 to this).
    pub unchained_evidence: i64,
    /// Revisions written before the ledger had a chain.
    pub unchained_revisions: u64,
    /// What is wrong, each with the chain seq it concerns (0 when none), the first [`LISTED`].
    #[serde(skip)]
    pub found: Vec<(i64, Option<String>, String)>,
    /// Everything wrong, one line each.
    pub problems: Vec<String>,
}

impl ChainCheck {
    fn problem(&mut self, seq: i64, item: Option<String>, text: String) {
        if self.found.len() < LISTED {
            self.problems.push(text.clone());
            self.found.push((seq, item, text));
        }
    }
}

/// Checks the chain of the database on `conn` (at `db`) against its tables and its head file:
/// every chain hash recomputed, gaps, Evidence rows and revisions without a chain row, revisions
/// whose content no longer hashes to their chain digest, unknowns whose head disagrees with their
/// revisions, and the head file ahead of (a lost tail) or different from the database's chain.
/// `Ok` with an empty check when the ledger has no chain yet (before migration V7). Reads only.
///
/// `db` is `None` to leave the head file out (the background check of a live store). The head
/// file is read before the database: it is written after each commit, so it can then only be
/// behind the snapshot read, never ahead of it, unless committed rows were lost. The database is
/// read in one transaction, so rows committed meanwhile by a live writer are all seen or none.
pub(super) fn check_chain(
    conn: &Connection,
    db: Option<&Path>,
    ids: Ids<'_>,
) -> rusqlite::Result<ChainCheck> {
    let file = db.map(|db| (head_path(db), read_head_file(&head_path(db))));
    let own = conn.is_autocommit();
    if own {
        conn.execute_batch("begin")?;
    }
    let checked = check_snapshot(conn, file, ids);
    if own {
        let _ = conn.execute_batch("commit");
    }
    checked
}

type HeadRead = (PathBuf, Result<Option<Head>, String>);

fn check_snapshot(
    conn: &Connection,
    file: Option<HeadRead>,
    ids: Ids<'_>,
) -> rusqlite::Result<ChainCheck> {
    let mut check = ChainCheck::default();
    let has_chain: bool = conn.query_row(
        "select count(*) from sqlite_schema where type = 'table' and name = 'ledger_chain'",
        [],
        |r| r.get::<_, i64>(0).map(|n| n > 0),
    )?;
    if !has_chain {
        // Written before the chain existed: all of it is the unchained prefix.
        check.unchained_evidence =
            conn.query_row("select coalesce(max(seq), 0) from evidence", [], |r| {
                r.get(0)
            })?;
        check.unchained_revisions =
            conn.query_row("select count(*) from unknown_revisions", [], |r| {
                r.get::<_, i64>(0).map(|n| n.max(0) as u64)
            })?;
        return Ok(check);
    }
    check.unchained_evidence = conn
        .query_row(
            "select value from meta where name = 'chain_unchained_evidence'",
            [],
            |r| r.get::<_, String>(0),
        )
        .optional()?
        .and_then(|t| t.parse().ok())
        .unwrap_or(0);
    let unchained: HashSet<(String, i64)> = conn
        .prepare("select item, revision from ledger_unchained_revisions")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    check.unchained_revisions = unchained.len() as u64;

    // The walk: every row's hash recomputed from its predecessor.
    let mut prev = GENESIS;
    let mut expected_seq = 1i64;
    let mut next_evidence = check.unchained_evidence + 1;
    let mut chained: HashSet<(String, i64)> = HashSet::new();
    let mut annotated: HashSet<(String, i64)> = HashSet::new();
    let mut last = None;
    let walked = (|| -> rusqlite::Result<()> {
        let mut stmt = conn.prepare(if matches!(ids, Ids::Join) {
            "select c.seq, c.kind, c.evidence_seq, c.item, c.revision, c.digest, c.hash, e.id from ledger_chain c left join evidence e on e.seq = c.evidence_seq order by c.seq"
        } else {
            "select seq, kind, evidence_seq, item, revision, digest, hash from ledger_chain order by seq"
        })?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let seq: i64 = r.get(0)?;
            check.rows += 1;
            if seq != expected_seq {
                check.problem(
                    seq,
                    None,
                    format!(
                        "chain rows {expected_seq} to {} are missing (a gap before chain row {seq})",
                        seq - 1
                    ),
                );
            }
            expected_seq = seq + 1;
            // Read as text without a copy: only an unknown kind is kept, to be named.
            let kind_ref = r.get_ref(1)?;
            let kind_text = kind_ref.as_str()?;
            let digest = blob32(r.get_ref(5)?);
            let hash = blob32(r.get_ref(6)?);
            let Some(kind) = ChainKind::parse(kind_text) else {
                check.problem(
                    seq,
                    None,
                    format!("chain row {seq} has an unknown kind {kind_text:?}"),
                );
                prev = hash;
                continue;
            };
            let recomputed = link(&prev, kind, &digest);
            if recomputed != hash {
                check.problem(
                    seq,
                    None,
                    format!(
                        "chain row {seq} holds hash {}, its predecessor and content give {}: the chain was edited",
                        hex::encode(hash),
                        hex::encode(recomputed)
                    ),
                );
            }
            prev = hash;
            last = Some((seq, hash));
            match kind {
                ChainKind::Evidence => {
                    let evidence_seq: i64 = r.get::<_, Option<i64>>(2)?.unwrap_or(0);
                    if evidence_seq != next_evidence {
                        check.problem(
                            seq,
                            None,
                            format!(
                                "chain row {seq} covers Evidence seq {evidence_seq}, the chain's next Evidence row is seq {next_evidence}"
                            ),
                        );
                    }
                    next_evidence = evidence_seq + 1;
                    let mut chained_hex = [0u8; 64];
                    // 32 bytes always fit 64 hex digits.
                    let _ = hex::encode_to_slice(digest, &mut chained_hex);
                    let stored = match &ids {
                        Ids::Skip => continue,
                        // Read as the id index walk reads it: bytes of any type, as text; the
                        // id the chain recorded is compared as bytes, and text is made only to
                        // name a row that differs.
                        Ids::Join => match r.get_ref(7)? {
                            rusqlite::types::ValueRef::Null => None,
                            v => {
                                let bytes = v.as_bytes()?;
                                if bytes.strip_prefix(b"ev_") == Some(&chained_hex[..]) {
                                    continue;
                                }
                                Some(String::from_utf8_lossy(bytes).into_owned())
                            }
                        },
                        // A row the id index walk did not see (committed after it) is read.
                        Ids::Map(map) if map.contains_key(&evidence_seq) => {
                            map.get(&evidence_seq).cloned()
                        }
                        Ids::Map(_) | Ids::Lookup => conn
                            .prepare_cached("select id from evidence where seq = ?1")?
                            .query_row([evidence_seq], |r| r.get::<_, String>(0))
                            .optional()?,
                    };
                    let chained_id = format!("ev_{}", hex::encode(digest));
                    match stored {
                        Some(id) if id == chained_id => {}
                        Some(id) => check.problem(
                            seq,
                            Some(id.clone()),
                            format!(
                                "Evidence seq {evidence_seq} is {id}, the chain (row {seq}) recorded {chained_id}: the row was replaced"
                            ),
                        ),
                        None => check.problem(
                            seq,
                            Some(chained_id.clone()),
                            format!(
                                "Evidence seq {evidence_seq} ({chained_id}) is chained (row {seq}) but not in the ledger"
                            ),
                        ),
                    }
                }
                ChainKind::UnknownRevision | ChainKind::AnnotationRevision => {
                    let item: String = r.get::<_, Option<String>>(3)?.unwrap_or_default();
                    let revision: i64 = r.get::<_, Option<i64>>(4)?.unwrap_or(0);
                    let (what, stored, seen) = if kind == ChainKind::UnknownRevision {
                        let stored = stored_revision_digest(conn, &item, revision)?;
                        ("unknown", stored, &mut chained)
                    } else {
                        let stored = stored_annotation_digest(conn, &item, revision)?;
                        ("annotation", stored, &mut annotated)
                    };
                    let name = format!("{item} revision {revision}");
                    match stored {
                        Some(d) if d == digest => {}
                        Some(d) => check.problem(
                            seq,
                            Some(name.clone()),
                            format!(
                                "{what} {name} hashes to {}, the chain (row {seq}) recorded {}: the revision was edited",
                                hex::encode(d),
                                hex::encode(digest)
                            ),
                        ),
                        None => check.problem(
                            seq,
                            Some(name.clone()),
                            format!("{what} {name} is chained (row {seq}) but not in the ledger"),
                        ),
                    }
                    seen.insert((item, revision));
                }
            }
        }
        Ok(())
    })();
    if let Err(e) = walked {
        if !super::verify::is_damage(&e) {
            return Err(e);
        }
        check.problem(
            expected_seq,
            None,
            format!("the chain is unreadable from row {expected_seq}: {e}"),
        );
    }
    check.head = last.map(|(seq, hash)| (seq, hex::encode(hash)));

    // Rows of the ledger the chain does not cover.
    let highest: i64 = conn.query_row("select coalesce(max(seq), 0) from evidence", [], |r| {
        r.get(0)
    })?;
    if highest >= next_evidence {
        check.problem(
            0,
            None,
            format!(
                "Evidence seq {next_evidence} to {highest} have no chain row: they were added outside rea"
            ),
        );
    }
    let revisions: Vec<(String, i64)> = conn
        .prepare(
            "select unknown_id, revision from unknown_revisions order by unknown_id, revision",
        )?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    for key in revisions {
        if !chained.contains(&key) && !unchained.contains(&key) {
            check.problem(
                0,
                Some(format!("{} revision {}", key.0, key.1)),
                format!(
                    "unknown {} revision {} has no chain row: it was added outside rea",
                    key.0, key.1
                ),
            );
        }
    }
    // Annotations came after the chain (V8 after V7): every revision is chained.
    let has_annotations: bool = conn.query_row(
        "select count(*) from sqlite_schema where type = 'table' and name = 'annotation_revisions'",
        [],
        |r| r.get::<_, i64>(0).map(|n| n > 0),
    )?;
    if has_annotations {
        let revisions: Vec<(String, i64)> = conn
            .prepare(
                "select annotation_id, revision from annotation_revisions order by annotation_id, revision",
            )?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        for key in revisions {
            if !annotated.contains(&key) {
                check.problem(
                    0,
                    Some(format!("{} revision {}", key.0, key.1)),
                    format!(
                        "annotation {} revision {} has no chain row: it was added outside rea",
                        key.0, key.1
                    ),
                );
            }
        }
    }
    // The `unknowns` row repeats its head revision's status and question for listings.
    type HeadRow = (String, i64, String, String, Option<i64>);
    let heads: Vec<HeadRow> = conn
        .prepare(
            "select u.id, u.head_revision, u.status, u.question,
                    (select max(revision) from unknown_revisions r where r.unknown_id = u.id)
             from unknowns u order by u.id",
        )?
        .query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })?
        .collect::<Result<_, _>>()?;
    for (id, head, status, question, top_revision) in heads {
        let at_head: Option<(String, String)> = conn
            .prepare_cached(
                "select status, question from unknown_revisions where unknown_id = ?1 and revision = ?2",
            )?
            .query_row(params![id, head], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        let agrees = top_revision == Some(head)
            && at_head
                .as_ref()
                .is_some_and(|(s, q)| *s == status && *q == question);
        if !agrees {
            check.problem(
                0,
                Some(id.clone()),
                format!(
                    "unknown {id}'s head (revision {head}, {status}) is not its last revision as recorded: the unknown was edited"
                ),
            );
        }
    }

    // The head file: the database's chain must reach it and hold it.
    let Some((path, file)) = file else {
        return Ok(check);
    };
    let chained = check.rows > 0;
    check_head_file(conn, &mut check, &path, file, (chained, last), highest)?;
    Ok(check)
}

/// The head file against the database's chain, whose last row is `last` and whose highest
/// Evidence seq is `highest`: the chain must reach the file's head and hold its hash there.
fn check_head_file(
    conn: &Connection,
    check: &mut ChainCheck,
    path: &Path,
    file: Result<Option<Head>, String>,
    (chained, last): (bool, Option<(i64, [u8; 32])>),
    highest: i64,
) -> rusqlite::Result<()> {
    match file {
        Err(problem) => check.problem(0, None, problem),
        Ok(None) => {
            if chained {
                check.problem(
                    0,
                    None,
                    format!(
                        "the chain head file {} is missing, so a lost tail cannot be ruled out",
                        path.display()
                    ),
                );
            }
        }
        Ok(Some(file)) => {
            check.head_file = Some((file.seq, hex::encode(file.hash)));
            let db_seq = last.map_or(0, |l| l.0);
            if file.seq > db_seq {
                let lost_evidence = if file.evidence > highest {
                    format!(
                        ", Evidence seq {} to {} among them",
                        highest + 1,
                        file.evidence
                    )
                } else {
                    String::new()
                };
                check.problem(
                    db_seq + 1,
                    None,
                    format!(
                        "lost tail: the chain head file records chain row {} but the database's chain ends at row {db_seq}: {} committed rows are missing{lost_evidence}",
                        file.seq,
                        file.seq - db_seq
                    ),
                );
            } else if file.seq > 0 {
                let at: Option<[u8; 32]> = conn
                    .prepare_cached("select hash from ledger_chain where seq = ?1")?
                    .query_row([file.seq], |r| Ok(blob32(r.get_ref(0)?)))
                    .optional()?;
                if at != Some(file.hash) {
                    check.problem(
                        file.seq,
                        None,
                        format!(
                            "chain row {} does not hold the hash the chain head file records ({}): the chain was rewritten",
                            file.seq,
                            hex::encode(file.hash)
                        ),
                    );
                }
            }
        }
    }
    Ok(())
}

/// The constant-time part of [`check_chain`] that resume runs on a large ledger: the head file
/// (read first) against the database's last chain row and highest Evidence seq, and no walk.
/// It names a lost tail and a rewritten chain head; what the walk finds (an edited row or
/// revision, a gap) is left to the background ledger check. The problems, empty when sound.
pub(super) fn check_head(conn: &Connection, db: &Path) -> rusqlite::Result<Vec<String>> {
    let path = head_path(db);
    let file = read_head_file(&path);
    let has_chain: bool = conn.query_row(
        "select count(*) from sqlite_schema where type = 'table' and name = 'ledger_chain'",
        [],
        |r| r.get::<_, i64>(0).map(|n| n > 0),
    )?;
    if !has_chain {
        return Ok(vec![]);
    }
    let own = conn.is_autocommit();
    if own {
        conn.execute_batch("begin")?;
    }
    let checked = (|| {
        let last = last_row(conn)?;
        let highest: i64 =
            conn.query_row("select coalesce(max(seq), 0) from evidence", [], |r| {
                r.get(0)
            })?;
        let mut check = ChainCheck::default();
        check_head_file(
            conn,
            &mut check,
            &path,
            file,
            (last.is_some(), last),
            highest,
        )?;
        Ok(check.problems)
    })();
    if own {
        let _ = conn.execute_batch("commit");
    }
    checked
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_two_row_chain_has_these_hashes() {
        let first = [0x11u8; 32];
        let second = [0x22u8; 32];
        let h1 = link(&GENESIS, ChainKind::Evidence, &first);
        let h2 = link(&h1, ChainKind::UnknownRevision, &second);
        // sha256(32 zero bytes ‖ "evidence" ‖ 32 × 0x11), then sha256(h1 ‖ "unknown_revision" ‖
        // 32 × 0x22), as Python's hashlib computes them.
        assert_eq!(hex::encode(h1), H1);
        assert_eq!(hex::encode(h2), H2);
        // Another kind, or the rows swapped, give other hashes.
        assert_ne!(link(&GENESIS, ChainKind::UnknownRevision, &first), h1);
        assert_ne!(
            link(
                &link(&GENESIS, ChainKind::Evidence, &second),
                ChainKind::Evidence,
                &first
            ),
            h2
        );
    }

    const H1: &str = "af613ac8b97c4c277dbd07105394b9db0512b8a3c4ba7915307e4bc6662f9c15";
    const H2: &str = "3b0b1fcc8ca6e33a8d35e1a8d45ec482052666edd3d6d2a321a051df98fa932e";

    #[test]
    fn a_head_file_reads_back_and_a_damaged_one_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.chain");
        let head = Head {
            seq: 7,
            hash: [0xab; 32],
            evidence: 5,
        };
        create_head_file(&path, &head).unwrap();
        let text = format!(
            "rea ledger chain head 2\nseq 7\nhash {}\nevidence 5\n",
            "ab".repeat(32)
        );
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes.len(), 2 * SLOT);
        assert!(bytes.starts_with(text.as_bytes()));
        assert_eq!(read_head_file(&path).unwrap(), Some(head));
        // The next head goes into the other slot; the newer whole slot is the head.
        let next = Head {
            seq: 8,
            hash: [0xcd; 32],
            evidence: 6,
        };
        write_slot(&path, &next).unwrap();
        assert_eq!(read_head_file(&path).unwrap(), Some(next));
        // A slot cut short by a crash (seq 8's, slot 0) is not read: the other, whole one is.
        let mut cut = std::fs::read(&path).unwrap();
        cut[40..SLOT].fill(0);
        std::fs::write(&path, &cut).unwrap();
        assert_eq!(read_head_file(&path).unwrap(), Some(head));
        std::fs::write(&path, "rea ledger chain head 2\nseq x\n").unwrap();
        assert_eq!(
            read_head_file(&path).unwrap_err(),
            format!("the chain head file {} does not read", path.display())
        );
        assert_eq!(read_head_file(&dir.path().join("none")).unwrap(), None);
    }
}
