//! Checking a session database that may be damaged: the quick check `resume` runs before it
//! writes anything, and the full ledger verification of `rea evidence verify`, which reads every
//! row on its own so one bad row or page does not hide the rest. Both also check the ledger's
//! hash chain against its head file (`chain.rs`), which names what SQLite cannot see: a tail of
//! committed rows the WAL lost, a revision edited in place, a row added outside rea.
//!
//! A damaged file is read with `writable_schema` set on a read-only connection: SQLite then opens
//! a file shorter than its header says (truncated) instead of refusing it whole, and pages past
//! its end read as empty. Nothing is ever written.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::Path;

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags, OptionalExtension, ffi::ErrorCode};
use serde::Serialize;
use sha2::{Digest, Sha256};

use super::chain::{self, ChainCheck};
use super::{APPLICATION_ID, BUSY_TIMEOUT, StoreError, immutable_uri, shm_path, wal_is_empty};
use crate::evidence::EvidenceRecord;
use crate::ids::EvidenceId;

/// Lines of `integrity_check`/`quick_check` output kept in a report.
const CHECK_LINES: usize = 100;

/// Missing sequence numbers listed one by one in a report (all are counted).
const LISTED_MISSING: usize = 1000;

/// The Evidence id a ledger row's `id` column holds, else what is wrong with it (the first of
/// the row problems `verify` and the background ledger check both report, in their words).
pub(super) fn row_id(id: Option<&str>) -> Result<EvidenceId, String> {
    id.and_then(|t| EvidenceId::parse(t).ok())
        .ok_or_else(|| format!("the row's id is not an Evidence id: {id:?}"))
}

/// The stored bytes of a row's record when they hash to `id`, else what is wrong with them.
pub(super) fn record_of<'a>(id: &EvidenceId, record: ValueRef<'a>) -> Result<&'a [u8], String> {
    let Ok(bytes) = record.as_bytes() else {
        return Err("the record is not text".into());
    };
    if !id.is_digest_of(bytes) {
        let digest = EvidenceId::from_digest_of(bytes);
        return Err(format!("the stored record hashes to {digest}, not its id"));
    }
    Ok(bytes)
}

/// One ledger row that could not be read or does not hold what its id says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BadRow {
    /// Its sequence number.
    pub seq: i64,
    /// Its Evidence id as the row or, when the row is unreadable, the id index holds it; `None`
    /// when neither can be read.
    pub id: Option<String>,
    /// What is wrong.
    pub problem: String,
}

/// What [`verify_ledger`] found.
#[derive(Debug, Clone, Serialize)]
pub struct LedgerCheck {
    /// Rows read from the ledger (sound or not).
    pub records: u64,
    /// Rows that are unreadable or do not hash to their id, in sequence order.
    pub bad_rows: Vec<BadRow>,
    /// Sequence numbers between 1 and the highest one that no row holds (deleted rows).
    pub gaps: u64,
    /// The first of those sequence numbers.
    pub missing_seqs: Vec<i64>,
    /// Rows the ledger's per-prefix id counts say were stored (`None` when unreadable): more
    /// than are present means rows were deleted, also past the highest sequence number.
    pub counted: Option<u64>,
    /// `PRAGMA integrity_check`: `ok`, or its findings joined by `; `.
    pub integrity_check: String,
    /// The hash chain over the ledger's rows, checked against its head file.
    pub chain: ChainCheck,
    /// Everything above that is wrong, one line each.
    pub problems: Vec<String>,
}

/// Whether an SQLite error says the file itself is damaged (rather than busy or unopenable).
pub(super) fn is_damage(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase)
    )
}

/// Runs `pragma <check>` and returns its findings (`["ok"]` when sound). A check that cannot
/// read the file at all answers with the reason.
fn run_check(conn: &Connection, check: &str) -> Result<Vec<String>, rusqlite::Error> {
    let mut stmt = conn.prepare(&format!("pragma {check}({CHECK_LINES})"))?;
    let lines: Vec<String> = stmt
        .query_map([], |r| r.get::<_, String>(0))?
        .collect::<Result<_, _>>()?;
    Ok(lines)
}

/// Database files (with their WAL) up to this size are checked whole at resume; a larger one
/// is checked there in constant time and whole by the background ledger check. `quick_check`
/// and the table checks read every page: about 7 s for a ledger of ten million rows, where
/// resume must answer within a second.
pub(super) const FULL_CHECK_AT_RESUME: u64 = 64 << 20;

/// How much of the soundness check runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Depth {
    /// Everything, before anything writes (resume of a file up to [`FULL_CHECK_AT_RESUME`]).
    Full,
    /// Resume of a larger file: the chain's head against its head file and the ledger's
    /// counts that need no scan; [`Depth::Deferred`] follows in the background.
    Bounded,
    /// The background ledger check's share of a bounded resume: everything but the chain,
    /// which that check walks itself.
    Deferred,
}

/// `PRAGMA quick_check` plus the ledger's own counts on `conn`, before anything writes: `Err`
/// with [`StoreError::Damaged`] when the b-trees are unsound or rows are missing from the
/// ledger (a sequence number without a row, or fewer rows than were counted in). On a file
/// larger than [`FULL_CHECK_AT_RESUME`] only the constant-time checks run (a lost tail, a
/// rewritten chain head, rows missing at the end) and `Ok(true)` says the rest is left to the
/// background ledger check ([`check_deferred`]), which refuses later writes on damage.
pub(super) fn refuse_damaged(conn: &Connection, path: &Path) -> Result<bool, StoreError> {
    let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let bounded = size(path) + size(Path::new(&wal)) > FULL_CHECK_AT_RESUME;
    let depth = if bounded { Depth::Bounded } else { Depth::Full };
    let refused = check_sound(conn, path, depth);
    if refused.is_err() {
        // Closing the last connection would checkpoint the WAL into the file: a refused
        // database stays as it was found, its WAL too, for verify and export.
        super::checkpoint::skip_checkpoint_on_close(conn);
    }
    refused.map(|()| bounded)
}

/// What a bounded resume left out, on the background check's connection, in one snapshot.
pub(super) fn check_deferred(conn: &Connection, path: &Path) -> Result<(), StoreError> {
    conn.execute_batch("begin")?;
    let checked = check_sound(conn, path, Depth::Deferred);
    let _ = conn.execute_batch("commit");
    checked
}

fn check_sound(conn: &Connection, path: &Path, depth: Depth) -> Result<(), StoreError> {
    let damaged = |reason: String| StoreError::Damaged {
        path: path.to_owned(),
        reason,
    };
    if depth == Depth::Bounded {
        return check_bounded(conn, path);
    }
    let lines = match run_check(conn, "quick_check") {
        Ok(lines) => lines,
        Err(e) if is_damage(&e) => return Err(damaged(format!("quick_check: {e}"))),
        Err(e) => return Err(e.into()),
    };
    if lines != ["ok"] {
        return Err(damaged(format!("quick_check: {}", lines.join("; "))));
    }
    // A new database has no ledger yet; the migrations make it.
    let has_ledger: bool = conn.query_row(
        "select count(*) from sqlite_schema where type = 'table' and name = 'evidence_id_prefixes'",
        [],
        |r| r.get::<_, i64>(0).map(|n| n > 0),
    )?;
    if !has_ledger {
        return Ok(());
    }
    let (rows, highest): (i64, i64) = conn.query_row(
        "select count(*), coalesce(max(seq), 0) from evidence",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let counted: i64 = conn.query_row(
        "select coalesce(sum(rows), 0) from evidence_id_prefixes",
        [],
        |r| r.get(0),
    )?;
    if rows != highest || rows != counted {
        return Err(damaged(format!(
            "the ledger is missing rows: {rows} present, sequence numbers run to {highest}, {counted} were stored"
        )));
    }
    // quick_check reads every page but does not compare an index with its table: an index
    // entry changed in place passes it, and a lookup through that index then answers wrong.
    // The ledger's tables are checked with their indexes.
    for table in LEDGER_TABLES {
        let exists: bool = conn.query_row(
            "select count(*) from sqlite_schema where type = 'table' and name = ?1",
            [table],
            |r| r.get::<_, i64>(0).map(|n| n > 0),
        )?;
        if !exists {
            continue;
        }
        let lines = match check_table(conn, table) {
            Ok(lines) => lines,
            Err(e) if is_damage(&e) => {
                return Err(damaged(format!("integrity_check of {table}: {e}")));
            }
            Err(e) => return Err(e.into()),
        };
        if lines != ["ok"] {
            return Err(damaged(format!(
                "integrity_check of {table} and its indexes: {}",
                lines.join("; ")
            )));
        }
    }
    if depth == Depth::Deferred {
        return Ok(());
    }
    let chain = match chain::check_chain(conn, Some(path), chain::Ids::Skip) {
        Ok(chain) => chain,
        Err(e) if is_damage(&e) => return Err(damaged(format!("the chain: {e}"))),
        Err(e) => return Err(e.into()),
    };
    if !chain.problems.is_empty() {
        return Err(damaged(summary(&chain.problems)));
    }
    Ok(())
}

/// The constant-time checks of a bounded resume: the highest sequence number against the rows
/// counted in (rows lost at the end), and the chain's head against its head file (a lost tail,
/// a rewritten chain). Reads a few pages whatever the ledger's size.
pub(super) fn check_bounded(conn: &Connection, path: &Path) -> Result<(), StoreError> {
    let damaged = |reason: String| StoreError::Damaged {
        path: path.to_owned(),
        reason,
    };
    let read = (|| -> rusqlite::Result<Option<String>> {
        let has_ledger: bool = conn.query_row(
            "select count(*) from sqlite_schema where type = 'table' and name = 'evidence_id_prefixes'",
            [],
            |r| r.get::<_, i64>(0).map(|n| n > 0),
        )?;
        if !has_ledger {
            return Ok(None);
        }
        let highest: i64 =
            conn.query_row("select coalesce(max(seq), 0) from evidence", [], |r| {
                r.get(0)
            })?;
        let counted: i64 = conn.query_row(
            "select coalesce(sum(rows), 0) from evidence_id_prefixes",
            [],
            |r| r.get(0),
        )?;
        if highest != counted {
            return Ok(Some(format!(
                "the ledger is missing rows: sequence numbers run to {highest}, {counted} were stored"
            )));
        }
        let problems = chain::check_head(conn, path)?;
        Ok((!problems.is_empty()).then(|| summary(&problems)))
    })();
    match read {
        Ok(None) => Ok(()),
        Ok(Some(reason)) => Err(damaged(reason)),
        Err(e) if is_damage(&e) => Err(damaged(format!("the ledger's head: {e}"))),
        Err(e) => Err(e.into()),
    }
}

/// `PRAGMA integrity_check(table)`: that table's b-tree and every index of it compared with it
/// (`["ok"]` when sound).
fn check_table(conn: &Connection, table: &str) -> Result<Vec<String>, rusqlite::Error> {
    let mut stmt = conn.prepare(&format!("pragma integrity_check({table})"))?;
    let lines: Vec<String> = stmt
        .query_map([], |r| r.get::<_, String>(0))?
        .take(CHECK_LINES)
        .collect::<Result<_, _>>()?;
    Ok(lines)
}

/// The ledger's tables, whose indexes resume checks against them.
const LEDGER_TABLES: [&str; 6] = [
    "evidence",
    "evidence_links",
    "unknowns",
    "unknown_revisions",
    "unknown_evidence",
    "ledger_chain",
];

/// The first few of `problems` in one line, and how many more there are.
fn summary(problems: &[String]) -> String {
    const SHOWN: usize = 3;
    let mut text = problems
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join("; ");
    if problems.len() > SHOWN {
        text.push_str(&format!("; and {} more", problems.len() - SHOWN));
    }
    text
}

/// `PRAGMA integrity_check` on `conn`: `ok`, or its findings joined by `; `.
fn integrity_of(conn: &Connection) -> String {
    match run_check(conn, "integrity_check") {
        Ok(lines) => lines.join("; "),
        Err(e) => format!("unreadable: {e}"),
    }
}

/// A read-only connection that reads what it can of a damaged file (see the module
/// documentation).
fn damaged_reader(path: &Path) -> Result<Connection, StoreError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let prepare = |conn: Connection| -> Result<Connection, rusqlite::Error> {
        conn.busy_timeout(BUSY_TIMEOUT)?;
        conn.pragma_update(None, "writable_schema", "ON")?;
        conn.pragma_update(None, "query_only", "ON")?;
        // Touches the file: a WAL reader that cannot make its shared-memory file fails here.
        conn.query_row("select count(*) from sqlite_schema", [], |r| {
            r.get::<_, i64>(0)
        })?;
        Ok(conn)
    };
    match Connection::open_with_flags(path, flags).and_then(prepare) {
        Ok(conn) => Ok(conn),
        Err(e) if !is_damage(&e) && (!shm_path(path).exists() || wal_is_empty(path)) => {
            Ok(prepare(Connection::open_with_flags(
                immutable_uri(path),
                flags | OpenFlags::SQLITE_OPEN_URI,
            )?)?)
        }
        Err(e) => Err(e.into()),
    }
}

/// Reads every ledger row of the database at `path` on its own and checks it: its id is the
/// digest of its stored record, the record parses, its links are in the ledger. A row that cannot
/// be read is reported with its sequence number and the id the id index holds for it, and the walk
/// goes on past it; sequence numbers without a row are counted; `integrity_check` and the hash
/// chain's check run beside the walk. Reads only, so it works on a live session, a read-only mount and a damaged file. Blocking.
pub fn verify_ledger(path: &Path) -> Result<LedgerCheck, StoreError> {
    let conn = damaged_reader(path)?;
    let mut problems = vec![];
    match conn.pragma_query_value(None, "application_id", |r| r.get::<_, i32>(0)) {
        Ok(APPLICATION_ID) => {}
        Ok(found) => {
            return Err(StoreError::NotASessionDatabase {
                path: path.to_owned(),
                found,
            });
        }
        Err(e) => problems.push(format!("application_id unreadable: {e}")),
    }

    let counted: Option<u64> = conn
        .query_row(
            "select coalesce(sum(rows), 0) from evidence_id_prefixes",
            [],
            |r| r.get::<_, i64>(0),
        )
        .ok()
        .map(|n| n.max(0) as u64);

    // integrity_check decides how the rows are walked: on a sound file the id index holds
    // exactly the table's ids (integrity_check compares every index with its table), so
    // comparing each row with the index, and naming lost rows by it, can find nothing. The walk
    // then keeps nothing per row, and a ledger of ten million rows is verified in constant
    // memory. Only a file integrity_check faults has its id index read whole.
    //
    // integrity_check, the walk and the chain (each chained id read beside its chain row) each
    // read the whole file, and none needs another's answer on a sound file: they run at once,
    // each on a connection of its own, and a sound ledger is verified in the time of the
    // longest. When integrity_check faults, the walk is run again with the id index read
    // first; when a walk read the id index, the chain is checked again with the ids it read.
    let (integrity, walk, chain_beside) = std::thread::scope(|scope| {
        let integrity = scope.spawn(|| {
            let conn = damaged_reader(path).ok()?;
            Some(integrity_of(&conn))
        });
        let chain = scope.spawn(|| {
            let conn = damaged_reader(path).ok()?;
            Some(chain::check_chain(&conn, Some(path), chain::Ids::Join))
        });
        let mut walk = Walk::new(&conn, None);
        walk.run();
        let integrity = integrity.join().ok().flatten();
        (integrity, walk, chain.join().ok().flatten())
    });
    // Without a connection of its own, on this one, after the walk.
    let integrity = integrity.unwrap_or_else(|| integrity_of(&conn));
    let sound = integrity == "ok";
    let walk = if sound {
        walk
    } else {
        let mut walk = Walk::new(&conn, None);
        walk.load_index();
        if let Some(p) = walk.index_problem.take() {
            problems.push(p);
        }
        walk.run();
        walk
    };
    let Walk {
        records,
        bad: bad_rows,
        missing: missing_seqs,
        gaps,
        indexed,
        ..
    } = walk;
    // Annotation rows repeat their Evidence records; an edited one no longer does.
    problems.extend(super::annotations::check_annotation_rows(&conn));

    for b in &bad_rows {
        problems.push(format!(
            "seq {} {}: {}",
            b.seq,
            b.id.as_deref().unwrap_or("(id unreadable)"),
            b.problem
        ));
    }
    if gaps > 0 {
        let listed: Vec<String> = missing_seqs.iter().map(i64::to_string).collect();
        problems.push(format!(
            "{gaps} sequence numbers have no row (deleted rows): {}",
            listed.join(", ")
        ));
    }
    let present = records + bad_rows.iter().filter(|b| b.unreadable()).count() as u64;
    if let Some(c) = counted
        && c > present
    {
        problems.push(format!(
            "{c} rows were stored, {present} are present: {} missing",
            c - present
        ));
    }
    if !sound {
        problems.push(format!("integrity_check: {integrity}"));
    }
    let checked = match (&indexed, chain_beside) {
        // A sound table: each chain row's Evidence id was read beside it, in the chain's order.
        (None, Some(checked)) => checked,
        (None, None) => chain::check_chain(&conn, Some(path), chain::Ids::Join),
        (Some(map), _) => chain::check_chain(&conn, Some(path), chain::Ids::Map(map)),
    };
    let chain = match checked {
        Ok(chain) => chain,
        Err(e) => ChainCheck {
            problems: vec![format!("the chain could not be checked: {e}")],
            ..ChainCheck::default()
        },
    };
    problems.extend(chain.problems.iter().cloned());
    Ok(LedgerCheck {
        records,
        bad_rows,
        gaps,
        missing_seqs,
        counted,
        integrity_check: integrity,
        chain,
        problems,
    })
}

impl BadRow {
    /// Whether the row itself could not be read (as opposed to read and found wrong).
    fn unreadable(&self) -> bool {
        self.problem.starts_with(UNREADABLE)
    }
}

const UNREADABLE: &str = "row unreadable";

/// A sound ledger row as [`each_readable_evidence`] hands it: the stored record's bytes as they
/// are (the canonical JSON its id is the digest of, checked to hash to it and to parse as JSON),
/// borrowed from the row for the one call.
#[derive(Debug, Clone, Copy)]
pub struct RawEvidence<'r> {
    pub id: &'r EvidenceId,
    pub seq: i64,
    pub created_at: &'r str,
    /// Canonical JSON of the record, as stored.
    pub record: &'r [u8],
}

/// Where the walk hands each row it read when exporting, before any check: `false` when it
/// takes no more.
type Sink<'a> = Box<dyn FnMut(ReadRow<'_>) -> bool + 'a>;

/// A row as the walk read it, unchecked.
#[derive(Clone, Copy)]
struct ReadRow<'r> {
    seq: i64,
    id: ValueRef<'r>,
    record: ValueRef<'r>,
    created_at: ValueRef<'r>,
}

/// Rows read and not yet checked: their bytes in one buffer, and where each column lies in it
/// (`None`: not text).
#[derive(Default)]
struct Batch {
    bytes: Vec<u8>,
    rows: Vec<BatchRow>,
}

type Span = Option<std::ops::Range<usize>>;

struct BatchRow {
    seq: i64,
    id: Span,
    record: Span,
    created_at: Span,
    /// The record's SHA-256, computed as it was read: hashing costs as much as reading and as
    /// parsing, and the reader and the checker then share the work.
    digest: Option<[u8; 32]>,
}

/// Bytes, and rows, a [`Batch`] holds before the walk hands it over.
const BATCH_BYTES: usize = 1 << 20;
const BATCH_ROWS: usize = 64;

/// Hands batches of rows to the checker, reusing the ones it has emptied; hands over what it
/// holds when dropped, which closes the channel.
struct Feeder {
    batch: Batch,
    full: std::sync::mpsc::SyncSender<Batch>,
    empty: std::sync::mpsc::Receiver<Batch>,
}

impl Feeder {
    /// Adds a row; `false` once the checker has stopped.
    fn push(&mut self, row: ReadRow<'_>) -> bool {
        self.batch.push(row);
        (self.batch.bytes.len() < BATCH_BYTES && self.batch.rows.len() < BATCH_ROWS)
            || self.hand_over()
    }

    fn hand_over(&mut self) -> bool {
        let next = self.empty.try_recv().unwrap_or_default();
        self.full
            .send(std::mem::replace(&mut self.batch, next))
            .is_ok()
    }
}

impl Drop for Feeder {
    fn drop(&mut self) {
        if !self.batch.rows.is_empty() {
            self.hand_over();
        }
    }
}

impl Batch {
    fn push(&mut self, row: ReadRow<'_>) {
        let mut span = |v: ValueRef<'_>| {
            let text = v.as_bytes().ok()?;
            let at = self.bytes.len();
            self.bytes.extend_from_slice(text);
            Some(at..self.bytes.len())
        };
        let (id, record, created_at) = (span(row.id), span(row.record), span(row.created_at));
        let digest = row.record.as_bytes().ok().map(|r| Sha256::digest(r).into());
        self.rows.push(BatchRow {
            seq: row.seq,
            id,
            record,
            created_at,
            digest,
        });
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.rows.clear();
    }
}

/// Every ledger row of the database at `path` that reads, parses and hashes to its id, in
/// sequence order, handed to `each` as its stored bytes; the rows that do not are skipped and
/// returned with their sequence numbers and ids, in order. Reads past damage as
/// [`verify_ledger`] does, so a bad row or page costs only the rows it held. An error from `each`
/// ends the walk and is returned. Blocking.
///
/// Reading runs on this thread; checking the rows (hashing each record against its id, parsing
/// it) and `each` run on another, a batch behind: on a sound ledger hashing costs as much as
/// reading, and the two then overlap.
pub fn each_readable_evidence(
    path: &Path,
    mut each: impl FnMut(RawEvidence<'_>) -> Result<(), StoreError> + Send,
) -> Result<Vec<BadRow>, StoreError> {
    let conn = damaged_reader(path)?;
    let (full, to_check) = std::sync::mpsc::sync_channel::<Batch>(2);
    let (checked, empty) = std::sync::mpsc::channel::<Batch>();
    std::thread::scope(|scope| {
        let checker = scope.spawn(move || {
            // Rows found wrong: sequence number, id text as the row holds it, problem.
            let mut wrong: Vec<(i64, Option<String>, String)> = Vec::new();
            for mut batch in to_check {
                for row in &batch.rows {
                    let text = |s: &Span| s.clone().map(|r| &batch.bytes[r]);
                    let id_text = text(&row.id).map(String::from_utf8_lossy);
                    let record = match text(&row.record) {
                        Some(bytes) => ValueRef::Text(bytes),
                        None => ValueRef::Null,
                    };
                    let (id, bytes) = match export_sound(id_text.as_deref(), record, row.digest) {
                        Ok(sound) => sound,
                        Err(problem) => {
                            wrong.push((row.seq, id_text.map(Cow::into_owned), problem));
                            continue;
                        }
                    };
                    let Some(created_at) =
                        text(&row.created_at).and_then(|b| std::str::from_utf8(b).ok())
                    else {
                        let problem = "the row's created_at is not text".to_owned();
                        wrong.push((row.seq, Some(id.to_string()), problem));
                        continue;
                    };
                    each(RawEvidence {
                        id: &id,
                        seq: row.seq,
                        created_at,
                        record: bytes,
                    })?;
                }
                batch.clear();
                // The walk may already be done; the batch is then freed here.
                let _ = checked.send(batch);
            }
            Ok::<_, StoreError>(wrong)
        });
        let mut feeder = Feeder {
            batch: Batch::default(),
            full,
            empty,
        };
        let mut walk = Walk::new(&conn, Some(Box::new(move |row| feeder.push(row))));
        if walk.highest_unread {
            // Where the table ends is unknown (the page holding its last rows is lost, say): the
            // id index tells.
            walk.load_index();
        }
        walk.run();
        // Rows past the last one the table holds (a truncated file) are missing from it without
        // an error: the ledger's own counts tell, and the id index names them.
        let counted: Option<i64> = conn
            .query_row(
                "select coalesce(sum(rows), 0) from evidence_id_prefixes",
                [],
                |r| r.get(0),
            )
            .ok();
        let seen = walk.present();
        if !walk.stopped && walk.indexed.is_none() && counted.is_none_or(|c| c > seen) {
            let before = walk.highest;
            walk.load_index();
            walk.run_from(before + 1);
        }
        let seen = walk.present();
        if !walk.stopped
            && let Some(c) = counted
            && c > seen
        {
            // Neither the table nor the index names them; still, none goes unsaid.
            walk.bad.push(BadRow {
                seq: walk.highest + 1,
                id: None,
                problem: format!(
                    "{UNREADABLE}: {} more rows were stored than the table and the id index hold",
                    c - seen
                ),
            });
        }
        // The last rows go to the checker, and the channel closes.
        walk.sink = None;
        let wrong = checker
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))?;
        for (seq, id_text, problem) in wrong {
            walk.bad_row(seq, id_text, problem);
        }
        // The walk's own findings and the checker's, in sequence order.
        walk.bad.sort_by_key(|b| b.seq);
        Ok(walk.bad)
    })
}

/// The walk over sequence numbers 1 to the highest: a sequential scan while pages read, one row at
/// a time past a page that does not.
///
/// Verifying checks every row's links too and reads the id index first; exporting hands every
/// row it reads to its sink, which checks it elsewhere, and reads the id index only once damage is
/// found (to name the rows it lost), since on a sound ledger of a million rows that index alone is
/// tens of megabytes.
struct Walk<'a> {
    conn: &'a Connection,
    /// Every id the id index holds, by sequence number; `None` until read.
    indexed: Option<BTreeMap<i64, String>>,
    /// Why the id index could not be read whole.
    index_problem: Option<String>,
    /// The highest sequence number the table (or, once read, the id index) holds.
    highest: i64,
    /// Whether the table's highest sequence number could not be read.
    highest_unread: bool,
    records: u64,
    bad: Vec<BadRow>,
    missing: Vec<i64>,
    gaps: u64,
    /// Exporting: where the rows read go (links are then not checked).
    sink: Option<Sink<'a>>,
    /// Whether the sink took no more rows, which ends the walk.
    stopped: bool,
}

impl<'a> Walk<'a> {
    fn new(conn: &'a Connection, sink: Option<Sink<'a>>) -> Walk<'a> {
        let highest = conn.query_row("select max(seq) from evidence", [], |r| {
            r.get::<_, Option<i64>>(0)
        });
        Walk {
            conn,
            indexed: None,
            index_problem: None,
            highest_unread: highest.is_err(),
            highest: highest.ok().flatten().unwrap_or(0),
            records: 0,
            bad: vec![],
            missing: vec![],
            gaps: 0,
            sink,
            stopped: false,
        }
    }

    /// Reads the id index, which holds every row's id and sequence number apart from the table:
    /// it names rows whose table page is lost. Once.
    fn load_index(&mut self) {
        if self.indexed.is_some() {
            return;
        }
        let mut indexed: BTreeMap<i64, String> = BTreeMap::new();
        let index_scan = (|| -> rusqlite::Result<()> {
            let mut stmt = self
                .conn
                .prepare("select seq, id from evidence indexed by sqlite_autoindex_evidence_1")?;
            let mut rows = stmt.query([])?;
            while let Some(r) = rows.next()? {
                let id = String::from_utf8_lossy(r.get_ref(1)?.as_bytes()?).into_owned();
                indexed.insert(r.get(0)?, id);
            }
            Ok(())
        })();
        if let Err(e) = index_scan {
            self.index_problem = Some(format!(
                "the id index is unreadable after {} entries: {e}",
                indexed.len()
            ));
        }
        if let Some(&top) = indexed.keys().next_back() {
            self.highest = self.highest.max(top);
        }
        self.indexed = Some(indexed);
    }

    /// Rows present in the ledger so far: read (sound or not), or known only to the id index.
    fn present(&self) -> i64 {
        (self.records + self.bad.iter().filter(|b| b.unreadable()).count() as u64) as i64
    }

    /// The id the index holds for `seq`, reading the index first if need be.
    fn indexed_id(&mut self, seq: i64) -> Option<String> {
        self.load_index();
        self.indexed.as_ref().and_then(|m| m.get(&seq).cloned())
    }

    fn run(&mut self) {
        self.run_from(1);
    }

    /// Walks sequence numbers `next` to the highest.
    fn run_from(&mut self, mut next: i64) {
        while next <= self.highest && !self.stopped {
            // Sequential from `next` until the scan ends or fails.
            match self.scan_from(&mut next) {
                Ok(()) => {
                    if self.stopped {
                        return;
                    }
                    // The table has no row from `next` on; the index may still name some.
                    if next <= self.highest {
                        self.load_index();
                    }
                    while next <= self.highest {
                        self.absent(next);
                        next += 1;
                    }
                }
                Err(_) => {
                    // Row by row until one reads again, then back to scanning.
                    self.load_index();
                    while next <= self.highest && !self.stopped {
                        let seq = next;
                        next += 1;
                        match self.point(seq) {
                            Ok(true) => break,
                            Ok(false) => self.absent(seq),
                            Err(e) => {
                                let id = self.indexed_id(seq);
                                self.bad.push(BadRow {
                                    seq,
                                    id,
                                    problem: format!("{UNREADABLE}: {e}"),
                                });
                            }
                        }
                    }
                }
            }
        }
    }

    /// Scans rows from `*next` in order, checking each; advances `*next` past every row read and
    /// counts the sequence numbers skipped as absent.
    fn scan_from(&mut self, next: &mut i64) -> rusqlite::Result<()> {
        let mut stmt = self.conn.prepare_cached(
            "select seq, id, record, created_at from evidence where seq >= ?1 order by seq",
        )?;
        let mut rows = stmt.query([*next])?;
        while let Some(r) = rows.next()? {
            let seq: i64 = r.get(0)?;
            for skipped in *next..seq {
                self.absent(skipped);
            }
            self.check(seq, r.get_ref(1)?, r.get_ref(2)?, r.get_ref(3)?);
            *next = seq + 1;
            if self.stopped {
                break;
            }
        }
        Ok(())
    }

    /// Reads the row `seq` alone: `Ok(false)` when there is none.
    fn point(&mut self, seq: i64) -> rusqlite::Result<bool> {
        let mut stmt = self
            .conn
            .prepare_cached("select id, record, created_at from evidence where seq = ?1")?;
        let mut rows = stmt.query([seq])?;
        match rows.next()? {
            Some(r) => {
                self.check(seq, r.get_ref(0)?, r.get_ref(1)?, r.get_ref(2)?);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// No row holds `seq`: a gap, unless the id index still names it (its row is lost).
    fn absent(&mut self, seq: i64) {
        match self.indexed_id(seq) {
            Some(id) => self.bad.push(BadRow {
                seq,
                id: Some(id),
                problem: format!("{UNREADABLE}: in the id index but not in the ledger table"),
            }),
            None => {
                self.gaps += 1;
                if self.missing.len() < LISTED_MISSING {
                    self.missing.push(seq);
                }
            }
        }
    }

    fn check(
        &mut self,
        seq: i64,
        id: ValueRef<'_>,
        record: ValueRef<'_>,
        created_at: ValueRef<'_>,
    ) {
        self.records += 1;
        if let Some(sink) = self.sink.as_mut() {
            let row = ReadRow {
                seq,
                id,
                record,
                created_at,
            };
            if !sink(row) {
                self.stopped = true;
            }
            return;
        }
        // Borrowed from the row unless it is not UTF-8: nothing is allocated for a sound row.
        let id_text = id.as_bytes().ok().map(String::from_utf8_lossy);
        if let Err(problem) = self.sound(seq, id_text.as_deref(), record) {
            self.bad_row(seq, id_text.map(Cow::into_owned), problem);
        }
    }

    fn bad_row(&mut self, seq: i64, id_text: Option<String>, problem: String) {
        // An id the row no longer holds readably is named as the index holds it.
        let id = match id_text.filter(|t| EvidenceId::parse(t).is_ok()) {
            Some(id) => Some(id),
            None => self.indexed_id(seq),
        };
        self.bad.push(BadRow { seq, id, problem });
    }

    /// The row's id and record when it is sound, else what is wrong with it.
    fn sound(&mut self, seq: i64, id: Option<&str>, record: ValueRef<'_>) -> Result<(), String> {
        let id = row_id(id)?;
        if let Some(indexed) = self.indexed.as_ref().and_then(|m| m.get(&seq))
            && indexed != id.as_str()
        {
            return Err(format!("the id index names {indexed} for this row"));
        }
        let bytes = record_of(&id, record)?;
        let text = match std::str::from_utf8(bytes) {
            Ok(t) => t,
            Err(e) => return Err(format!("the record is not UTF-8: {e}")),
        };
        let parsed: EvidenceRecord = match serde_json::from_str(text) {
            Ok(r) => r,
            Err(e) => return Err(format!("the record does not parse: {e}")),
        };
        let mut missing_links = vec![];
        for link in &parsed.links {
            let present = self
                .conn
                .prepare_cached("select 1 from evidence where id = ?1")
                .and_then(|mut s| s.query_row([link.as_str()], |_| Ok(())).optional());
            match present {
                Ok(Some(())) => {}
                Ok(None) => missing_links.push(link.to_string()),
                Err(e) => missing_links.push(format!("{link} (unreadable: {e})")),
            }
        }
        if !missing_links.is_empty() {
            return Err(format!(
                "links not in the ledger: {}",
                missing_links.join(", ")
            ));
        }
        Ok(())
    }
}

/// An exported row's id and stored record when it is sound, else what is wrong with it: the
/// record hashes to the id and parses as JSON. Exporting needs only what the row holds (the index
/// is read to name lost rows), and writes the stored bytes as they are, so they are checked
/// without building the record.
fn export_sound<'r>(
    id: Option<&str>,
    record: ValueRef<'r>,
    digest: Option<[u8; 32]>,
) -> Result<(EvidenceId, &'r [u8]), String> {
    let id = row_id(id)?;
    let bytes = match (record, digest) {
        (ValueRef::Text(bytes), Some(digest)) if id.is_digest(&digest) => bytes,
        _ => record_of(&id, record)?,
    };
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => return Err(format!("the record is not UTF-8: {e}")),
    };
    // Well-formed JSON, one value, without allocating its tree.
    if let Err(e) = serde_json::from_str::<serde::de::IgnoredAny>(text) {
        return Err(format!("the record does not parse: {e}"));
    }
    Ok((id, bytes))
}
