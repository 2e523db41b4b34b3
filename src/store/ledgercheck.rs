//! The ledger check a [`Store`](super::Store) runs in the background once it is open: every row
//! that was in the ledger when it opened is hashed, in sequence order, and compared with its id.
//!
//! `PRAGMA quick_check` and the ledger's counts (what resume runs before it writes) see only
//! SQLite's b-trees: a byte flipped inside a record's JSON leaves them sound. An id is the digest
//! of the record's stored canonical JSON, so hashing the stored bytes finds such a row without
//! parsing it; it runs beside the session instead of before it, because reading a ledger of a
//! million rows takes far longer than resume may. Once a row is found that does not hash to its
//! id, the store refuses every later write ([`StoreError::Damaged`](super::StoreError)); rows
//! already written stay, and nothing is deleted.
//!
//! Then the hash chain (`chain.rs`) is walked in one read transaction: every chain hash
//! recomputed, every chained Evidence id and unknown revision compared with its digest, so an
//! unknown edited on disk is found as well.
//!
//! The check reads on a read-only connection of its own, a chunk of rows per statement, so no
//! read transaction of it holds the WAL back for long and closing the store stops it at the next
//! row.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};
use sha2::{Digest, Sha256};

use super::chain;
use super::verify::{BadRow, check_deferred, is_damage, record_of, row_id};
use super::{Role, StoreError, configure};

/// Rows one statement of the check reads.
const CHUNK: i64 = 2048;

/// Where the background ledger check of a store is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LedgerStatus {
    /// Still hashing rows.
    Running,
    /// Every row hashed to its id.
    Clean,
    /// This row does not hold what its id says (or could not be read); writes are refused.
    Damaged(BadRow),
    /// The store closed before the check ended.
    Stopped,
    /// The check could not go on for a reason that is not damage (the file could not be opened,
    /// say); writes go on.
    Unfinished(String),
}

impl std::fmt::Display for LedgerStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LedgerStatus::Running => f.write_str("running"),
            LedgerStatus::Clean => f.write_str("clean"),
            LedgerStatus::Damaged(b) => write!(f, "damaged: {}", describe(b)),
            LedgerStatus::Stopped => f.write_str("stopped"),
            LedgerStatus::Unfinished(reason) => write!(f, "unfinished: {reason}"),
        }
    }
}

/// `seq N ev_…: problem`, as `rea evidence verify` lists a bad row.
fn describe(b: &BadRow) -> String {
    format!(
        "seq {} {}: {}",
        b.seq,
        b.id.as_deref().unwrap_or("(id unreadable)"),
        b.problem
    )
}

/// What a store and its check thread share.
pub(super) struct LedgerWatch {
    status: Mutex<LedgerStatus>,
    ended: Condvar,
    /// Set when the status is [`LedgerStatus::Damaged`]: every write reads it, without the lock.
    damaged: AtomicBool,
    /// Set by closing the store.
    stop: AtomicBool,
}

impl LedgerWatch {
    fn new(status: LedgerStatus) -> LedgerWatch {
        LedgerWatch {
            damaged: AtomicBool::new(matches!(status, LedgerStatus::Damaged(_))),
            status: Mutex::new(status),
            ended: Condvar::new(),
            stop: AtomicBool::new(false),
        }
    }

    fn finish(&self, status: LedgerStatus) {
        let mut current = self.status.lock().unwrap_or_else(|p| p.into_inner());
        if matches!(status, LedgerStatus::Damaged(_)) {
            self.damaged.store(true, Ordering::Release);
        }
        *current = status;
        self.ended.notify_all();
    }

    /// The check's status now.
    pub(super) fn status(&self) -> LedgerStatus {
        self.status
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Blocks until the check has ended; its final status.
    pub(super) fn wait(&self) -> LedgerStatus {
        let mut status = self.status.lock().unwrap_or_else(|p| p.into_inner());
        while *status == LedgerStatus::Running {
            status = self.ended.wait(status).unwrap_or_else(|p| p.into_inner());
        }
        status.clone()
    }

    /// Why writes are refused, when the check found damage.
    pub(super) fn damage(&self) -> Option<String> {
        if !self.damaged.load(Ordering::Acquire) {
            return None;
        }
        match &*self.status.lock().unwrap_or_else(|p| p.into_inner()) {
            LedgerStatus::Damaged(b) => Some(format!(
                "the ledger check found {}; rows written before stay, later writes are refused",
                describe(b)
            )),
            _ => None,
        }
    }

    /// Asks the check to stop at its next row.
    pub(super) fn stop(&self) {
        self.stop.store(true, Ordering::Release);
    }
}

/// Starts the check of rows 1 to `highest` of the database at `path`, then of its hash chain
/// (`chain.rs`: every chain hash, every revision's content digest, every chained Evidence id), on
/// a thread of its own. With no row to check (`highest` 0 and no chain) it is clean at once and
/// no thread starts.
///
/// `deferred` when resume checked the file in constant time only (a large file,
/// `verify::FULL_CHECK_AT_RESUME`): once the rows and the chain are clean, the check then runs
/// what resume left out (`quick_check`, the ledger's counts, each ledger table against its
/// indexes), and damage found there refuses later writes as a bad row does.
pub(super) fn start(
    path: &Path,
    highest: i64,
    chained: bool,
    deferred: bool,
) -> Result<(Arc<LedgerWatch>, Option<JoinHandle<()>>), std::io::Error> {
    if highest <= 0 && !chained && !deferred {
        return Ok((Arc::new(LedgerWatch::new(LedgerStatus::Clean)), None));
    }
    let watch = Arc::new(LedgerWatch::new(LedgerStatus::Running));
    let thread = std::thread::Builder::new()
        .name("rea-ledger-check".into())
        .spawn({
            let (watch, path) = (watch.clone(), path.to_owned());
            move || {
                let status = match run(&path, highest, &watch) {
                    LedgerStatus::Clean if deferred => run_deferred(&path, &watch),
                    status => status,
                };
                watch.finish(status);
            }
        })?;
    Ok((watch, Some(thread)))
}

/// A read-only connection of the check's own, configured as a reader.
fn open_reader(path: &Path) -> Result<Connection, StoreError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags)?;
    configure(&conn, Role::Reader)?;
    Ok(conn)
}

fn run(path: &Path, highest: i64, watch: &LedgerWatch) -> LedgerStatus {
    let conn = match open_reader(path) {
        Ok(conn) => conn,
        Err(e) => return LedgerStatus::Unfinished(e.to_string()),
    };
    let mut after = 0i64;
    loop {
        if watch.stop.load(Ordering::Acquire) {
            return LedgerStatus::Stopped;
        }
        match chunk(&conn, &mut after, highest, &watch.stop) {
            Ok(Some(bad)) => return LedgerStatus::Damaged(bad),
            Ok(None) if after >= highest => return check_chain(&conn, watch),
            Ok(None) => {}
            Err(e) if is_damage(&e) => {
                return LedgerStatus::Damaged(BadRow {
                    seq: after + 1,
                    id: None,
                    problem: format!("row unreadable (the first row after seq {after}): {e}"),
                });
            }
            Err(e) => return LedgerStatus::Unfinished(e.to_string()),
        }
    }
}

/// What a bounded resume left out (`verify::check_deferred`), once rows and chain are clean.
fn run_deferred(path: &Path, watch: &LedgerWatch) -> LedgerStatus {
    if watch.stop.load(Ordering::Acquire) {
        return LedgerStatus::Stopped;
    }
    let conn = match open_reader(path) {
        Ok(conn) => conn,
        Err(e) => return LedgerStatus::Unfinished(e.to_string()),
    };
    match check_deferred(&conn, path) {
        Ok(()) => LedgerStatus::Clean,
        Err(StoreError::Damaged { reason, .. }) => LedgerStatus::Damaged(BadRow {
            seq: 0,
            id: None,
            problem: reason,
        }),
        Err(e) => LedgerStatus::Unfinished(e.to_string()),
    }
}

/// The chain's part of the check, once every Evidence row hashed to its id: the first problem
/// [`chain::check_chain`] finds, named by its chain row and the item it concerns. The head file
/// is resume's and verify's to compare: a live writer moves it on while this reads.
fn check_chain(conn: &Connection, watch: &LedgerWatch) -> LedgerStatus {
    if watch.stop.load(Ordering::Acquire) {
        return LedgerStatus::Stopped;
    }
    match chain::check_chain(conn, None, chain::Ids::Lookup) {
        Ok(check) => match check.found.into_iter().next() {
            Some((seq, id, problem)) => LedgerStatus::Damaged(BadRow { seq, id, problem }),
            None => LedgerStatus::Clean,
        },
        Err(e) if is_damage(&e) => LedgerStatus::Damaged(BadRow {
            seq: 0,
            id: None,
            problem: format!("the chain is unreadable: {e}"),
        }),
        Err(e) => LedgerStatus::Unfinished(e.to_string()),
    }
}

/// Hashes the next chunk of rows after `*after`, advancing it past every row read; the first row
/// that does not hash to its id, if any. A chunk that reads no row moves `*after` to `highest`
/// (the rest of the sequence has no row).
fn chunk(
    conn: &Connection,
    after: &mut i64,
    highest: i64,
    stop: &AtomicBool,
) -> rusqlite::Result<Option<BadRow>> {
    let mut read = 0u64;
    let mut stmt = conn.prepare_cached(
        "select seq, id, record from evidence where seq > ?1 and seq <= ?2 order by seq limit ?3",
    )?;
    let mut rows = stmt.query(rusqlite::params![*after, highest, CHUNK])?;
    while let Some(r) = rows.next()? {
        // Closing the store waits for the check: it stops within a row, not a chunk.
        if stop.load(Ordering::Relaxed) {
            return Ok(None);
        }
        let seq: i64 = r.get(0)?;
        read += 1;
        *after = seq;
        if let Some((id, problem)) = damage_of(r.get_ref(1)?, r.get_ref(2)?) {
            return Ok(Some(BadRow { seq, id, problem }));
        }
    }
    if read == 0 && !stop.load(Ordering::Relaxed) {
        *after = highest;
    }
    Ok(None)
}

/// What is wrong with a row, judged by its bytes alone: its id and the problem, or `None` when
/// its stored record hashes to its id.
fn damage_of(id: ValueRef<'_>, record: ValueRef<'_>) -> Option<(Option<String>, String)> {
    // The common case without allocating: the stored id is `ev_` and the digest in lowercase hex
    // (as every id is written), compared as bytes.
    if let (Ok(id), Ok(bytes)) = (id.as_bytes(), record.as_bytes())
        && let Some(hex_digest) = id.strip_prefix(b"ev_")
        && hex_digest.iter().all(|b| !b.is_ascii_uppercase())
    {
        let mut stored = [0u8; 32];
        if hex::decode_to_slice(hex_digest, &mut stored).is_ok()
            && stored == <[u8; 32]>::from(Sha256::digest(bytes))
        {
            return None;
        }
    }
    let text = id.as_bytes().ok().map(String::from_utf8_lossy);
    let id = match row_id(text.as_deref()) {
        Ok(id) => id,
        Err(problem) => return Some((None, problem)),
    };
    record_of(&id, record)
        .err()
        .map(|problem| (Some(id.to_string()), problem))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::test_record;
    use crate::store::Store;
    use serde_json::json;

    /// A closed store of `n` records; their ids by seq - 1.
    fn ledger(path: &Path, n: u64) -> Vec<String> {
        let store = Store::open(path).unwrap();
        let ids = (1..=n)
            .map(|i| {
                let r = test_record(
                    "ledger.check",
                    json!({ "n": i }),
                    json!({ "mark": format!("row-{i:03}-abcdef") }),
                );
                store.record_blocking(r).unwrap().id.to_string()
            })
            .collect();
        store.close();
        ids
    }

    #[test]
    fn a_flipped_byte_in_a_record_refuses_later_writes_naming_its_row() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let ids = ledger(&path, 30);
        let mut bytes = std::fs::read(&path).unwrap();
        let at = bytes
            .windows(8)
            .position(|w| w == b"row-017-")
            .expect("row 17 in the file");
        // `abcdef` becomes `bbcdef`: still valid JSON, so only the digest tells.
        bytes[at + 8] = b'b';
        std::fs::write(&path, &bytes).unwrap();

        let store = Store::open_checked(&path).expect("quick_check passes");
        let status = store.wait_ledger_check();
        let LedgerStatus::Damaged(bad) = &status else {
            panic!("{status:?}");
        };
        assert_eq!((bad.seq, bad.id.as_deref()), (17, Some(ids[16].as_str())));
        assert!(
            bad.problem.starts_with("the stored record hashes to ev_")
                && bad.problem.ends_with(", not its id"),
            "{}",
            bad.problem
        );
        assert_eq!(
            status.to_string(),
            format!("damaged: seq 17 {}: {}", ids[16], bad.problem)
        );
        let refused = store
            .record_blocking(test_record("ledger.check", json!({"n": 99}), json!(1)))
            .unwrap_err();
        assert_eq!(
            refused.to_string(),
            format!(
                "{} is damaged, so nothing more is written to it: the ledger check found seq 17 {}: {}; rows written before stay, later writes are refused",
                path.display(),
                ids[16],
                bad.problem
            )
        );
        // Nothing was deleted, and reads go on.
        assert_eq!(store.list_evidence(&Default::default()).unwrap().1, 30);
        assert!(store.set_meta_blocking("x", "y").is_err());
    }

    #[test]
    fn a_sound_ledger_checks_clean_and_writes_go_on() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        // More rows than one chunk, so the check reads several.
        ledger(&path, CHUNK as u64 + 5);
        let store = Store::open_checked(&path).unwrap();
        assert_eq!(store.wait_ledger_check(), LedgerStatus::Clean);
        assert_eq!(store.ledger_check().to_string(), "clean");
        store
            .record_blocking(test_record("ledger.check", json!({"n": 0}), json!(1)))
            .unwrap();
        // A new, empty store has nothing to check.
        let fresh = Store::open(&dir.path().join("new.db")).unwrap();
        assert_eq!(fresh.ledger_check(), LedgerStatus::Clean);
    }
    #[test]
    fn a_large_file_is_checked_at_resume_by_its_chain_head_and_in_full_in_the_background_regression_30()
     {
        use crate::store::verify::{check_bounded, check_deferred};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        ledger(&path, 5);
        let conn = Connection::open(&path).unwrap();
        check_bounded(&conn, &path).unwrap();
        check_deferred(&conn, &path).unwrap();

        // A row deleted from the middle: the constant-time check cannot see it, what resume
        // left to the background does, and so does the background check as a whole.
        conn.execute("delete from evidence where seq = 3", [])
            .unwrap();
        check_bounded(&conn, &path).unwrap();
        let Err(StoreError::Damaged { reason, .. }) = check_deferred(&conn, &path) else {
            panic!("the deferred check passed a deleted row");
        };
        assert_eq!(
            reason,
            "the ledger is missing rows: 4 present, sequence numbers run to 5, 5 were stored"
        );
        let (watch, thread) = start(&path, 5, true, true).unwrap();
        thread.unwrap().join().unwrap();
        assert!(
            matches!(watch.status(), LedgerStatus::Damaged(_)),
            "{:?}",
            watch.status()
        );

        // A head file ahead of the database's chain (a lost tail) is refused at once.
        crate::store::chain::write_head(&path, 9, [7; 32], 9).unwrap();
        let Err(StoreError::Damaged { reason, .. }) = check_bounded(&conn, &path) else {
            panic!("a lost tail passed the bounded check");
        };
        assert!(
            reason.starts_with("lost tail: the chain head file records chain row 9"),
            "{reason}"
        );
    }
}
