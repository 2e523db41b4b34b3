//! The session database: one SQLite file per binary session, owned by one [`Store`], and read by
//! any number of [`ReadOnlyStore`]s.
//!
//! Sharing: rusqlite's `Connection` is `Send` but not `Sync`, so the store never shares one. A
//! single writer thread owns the read-write connection and commits queued writes together (group
//! commit): a caller's write (a [`Recording`], a record, a target, an unknown's revision) returns
//! only after the COMMIT that holds it. Reads take a read-only connection from a small pool; in WAL
//! mode they never wait for the writer. One more connection, on a thread of its own, only copies
//! WAL pages into the database (`checkpoint.rs`); it never writes a row.
//!
//! A [`ReadOnlyStore`] is that pool of readers alone: no writer thread, no migration, no session
//! lock, nothing written. `rea evidence`, `rea complete` and `rea sessions` read a session through
//! one, also while a live server is writing to it, and also on a read-only file system. A
//! [`Store`] dereferences to its own read-only side, so every query is written once.
//!
//! No SQL and no connection leave this module: callers hand in domain values and get domain
//! values back.
//!
//! `ANALYZE` and `PRAGMA optimize` are never run: with the bundled SQLite's STAT4 they would make
//! every cached statement re-prepare.

mod addresses;
mod annotations;
mod artifacts;
mod chain;
mod checkpoint;
mod completion;
mod evidence;
mod fresh;
mod ledgercheck;
mod prefixes;
mod recording;
mod schema_notes;
mod targets;
mod unknowns;
mod verify;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags, OptionalExtension};

pub use annotations::{
    AnnotationFilter, AnnotationHead, AnnotationKind, AnnotationPlace, AnnotationRecord,
    AnnotationRevision, AnnotationScope, LiveAnnotation, NewAnnotation,
};
pub use artifacts::OccurrenceRow;
pub use chain::{ChainCheck, head_path as chain_head_path, write_head as write_chain_head};
pub use checkpoint::CheckpointStats;
pub use completion::{COUNTED_PREFIX_CHARS, CompletionPage, ProcedureScope};
pub use evidence::{EvidenceFilter, EvidenceSummary, PreparedEvidence, RecordOutcome};
pub use ledgercheck::LedgerStatus;
pub use recording::{
    Committed, LoadError, Loaded, ManifestRegistration, OccurrenceRegistration, Recording,
};
pub use targets::{DocumentRow, NewDocument, NewProcedure, NewTarget, ProcedureRow, TargetRow};
pub use unknowns::{
    NewRevision, NewUnknown, Resolution, UnknownHead, UnknownRevision, UnknownStatus,
};
pub use verify::{BadRow, LedgerCheck, RawEvidence, each_readable_evidence, verify_ledger};

use crate::completion::key::{KEY_ALGORITHM, match_key};
use crate::fsroot::{Claim, FsError, NewFile};
use checkpoint::{CheckpointCounters, CheckpointPolicy, Checkpointer, skip_checkpoint_on_close};

mod embedded {
    refinery::embed_migrations!("migrations");
}

/// `PRAGMA application_id` of every rea session database ("REA1"), so `file` and rea itself can
/// tell a session database from any other SQLite file.
pub const APPLICATION_ID: i32 = 0x5245_4131;

/// Whether `head`, the first bytes of a file, is the header of a rea session database (or of an
/// export of one): a SQLite header whose `application_id` (big-endian at offset 68) is
/// [`APPLICATION_ID`]. Read from bytes, so the caller decides which descriptor they come from.
pub fn is_session_database_header(head: &[u8]) -> bool {
    head.len() >= 72
        && head.starts_with(b"SQLite format 3\0")
        && head[68..72] == APPLICATION_ID.to_be_bytes()
}

/// How long a connection waits on a lock before reporting it busy.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// At most this many writes share one transaction. While writes keep arriving, this is also what
/// bounds how long the first write of a group waits for its COMMIT.
const MAX_GROUP: usize = 1024;

/// Page cache of the writer connection, in KiB. Inserts into the ledger's id index land on random
/// pages; with SQLite's default 2 MiB most of them were read back from the file on every write.
/// Kept well inside the store's memory ceiling (128 MiB at any ledger size).
const WRITER_CACHE_KIB: i64 = 32 * 1024;

/// Idle read-only connections kept for reuse.
const MAX_IDLE_READERS: usize = 4;

/// Errors of the session store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite refused an operation.
    #[error("session database: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// The schema could not be brought up to date.
    #[error("session database migration failed: {0}")]
    Migration(#[from] refinery::Error),
    /// The file is a SQLite database of some other application.
    #[error("{path} is not a rea session database (application_id {found:#x})")]
    NotASessionDatabase {
        /// The file.
        path: PathBuf,
        /// Its application id.
        found: i32,
    },
    /// The file is damaged (its b-trees are unsound, ledger rows are missing, or the background
    /// ledger check found a row that does not hash to its id): nothing more is written to it.
    #[error("{path} is damaged, so nothing more is written to it: {reason}")]
    Damaged {
        /// The file.
        path: PathBuf,
        /// What `quick_check` or the ledger's counts found.
        reason: String,
    },
    /// The process has no file descriptor left (its `ulimit -n`), so the database or one of its
    /// files could not be opened. SQLite itself says only "unable to open database file".
    #[error(
        "too many open files: this process has used up its file descriptors (ulimit -n), so {path} could not be opened; close sessions or raise the limit"
    )]
    TooManyOpenFiles {
        /// The database.
        path: PathBuf,
    },
    /// The writer thread has stopped; the store is closed.
    #[error("the session store is closed")]
    Closed,
    /// The database refused to start the transaction for this write; nothing of it was kept.
    #[error("the write was not performed: the session database could not start a transaction")]
    NotPerformed,
    /// A write's COMMIT failed, so nothing of it was kept.
    #[error("commit failed, nothing was kept: {0}")]
    Commit(String),
    /// A write panicked; its changes were rolled back.
    #[error("a write failed unexpectedly and was rolled back")]
    WritePanicked,
    /// A record could not be put into canonical JSON.
    #[error(transparent)]
    Canonical(#[from] crate::evidence::CanonicalError),
    /// Stored JSON did not parse.
    #[error("stored record {id} does not parse: {source}")]
    CorruptRecord {
        /// The record's id.
        id: String,
        /// Why.
        source: serde_json::Error,
    },
    /// An Evidence id named by a write is not in this ledger.
    #[error("Evidence {id} is not in this session's ledger")]
    EvidenceNotInLedger {
        /// The id.
        id: String,
    },
    /// No residual unknown has this id.
    #[error("no residual unknown {id} in this session")]
    UnknownNotFound {
        /// The id.
        id: String,
    },
    /// An update named a revision that is no longer the head.
    #[error("unknown {id} is at revision {actual}, not {expected}: read it again and retry")]
    RevisionConflict {
        /// The unknown.
        id: String,
        /// The revision the update expected.
        expected: i64,
        /// The head revision.
        actual: i64,
    },
    /// No annotation has this id.
    #[error("no annotation {id} in this session")]
    AnnotationNotFound {
        /// The id.
        id: String,
    },
    /// A revision of an annotation named a revision that is no longer its head.
    #[error(
        "annotation {id} is at revision {actual}, not {expected}: read it again (list_annotations) and retry"
    )]
    AnnotationConflict {
        /// The annotation.
        id: String,
        /// The revision the write superseded.
        expected: i64,
        /// The head revision.
        actual: i64,
    },
    /// An export destination exists already.
    #[error("{path} exists; choose another file or allow overwriting")]
    ExportExists {
        /// The destination.
        path: PathBuf,
    },
    /// An export destination could not be written as the path rules require (the name was
    /// taken by another file after it was checked, a write failed).
    #[error(transparent)]
    Export(FsError),
    /// File-system failure around the database.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

/// A queued write: runs inside the group transaction and returns what to do once the outcome of
/// the COMMIT is known, and whether it failed leaving changes it cannot undo (the group must then
/// be rolled back).
type Job = Box<dyn FnOnce(&Connection) -> (Finisher, bool) + Send>;
/// Delivers a write's answer: `None` when its transaction committed, else the commit error.
type Finisher = Box<dyn FnOnce(Option<&str>) + Send>;

/// Read-only access to a session database: a pool of reader connections and every query. See the
/// module documentation for how it is shared.
pub struct ReadOnlyStore {
    path: PathBuf,
    /// Idle read-only connections. Each is used by one caller at a time.
    readers: Mutex<Vec<Connection>>,
    /// Whether the database is opened as immutable: on read-only media where SQLite cannot make
    /// the shared-memory file a WAL reader needs (nothing can be writing it there).
    immutable: bool,
    /// Re-prepares of cached completion statements observed so far (see
    /// [`ReadOnlyStore::completion_reprepares`]).
    reprepares: AtomicU64,
}

/// The session database, written by its owner. See the module documentation for how it is
/// shared; it dereferences to its [`ReadOnlyStore`] for every query.
pub struct Store {
    /// The readers and every query.
    reads: ReadOnlyStore,
    /// Queue into the writer thread; `None` once the store is closed.
    writer: Mutex<Option<mpsc::Sender<Job>>>,
    /// The writer thread, joined on close so every queued write has finished first.
    writer_thread: Mutex<Option<JoinHandle<()>>>,
    /// Hears from the writer thread once its last write has finished and only releasing its
    /// connection is left; a discarded database does not wait for that.
    writes_done: Mutex<mpsc::Receiver<()>>,
    /// What the writer thread and the store share.
    writer_state: Arc<WriterState>,
    /// Where checkpoints ran.
    checkpoints: CheckpointCounters,
    /// The background ledger check (`ledgercheck.rs`); damage it finds refuses every write.
    ledger: Arc<ledgercheck::LedgerWatch>,
    /// Its thread, joined on close; `None` once joined or when there was nothing to check.
    ledger_thread: Mutex<Option<JoinHandle<()>>>,
}

impl std::ops::Deref for Store {
    type Target = ReadOnlyStore;

    fn deref(&self) -> &ReadOnlyStore {
        &self.reads
    }
}

/// Shared between a [`Store`] and its writer thread.
#[derive(Default)]
struct WriterState {
    /// Set when the database will be deleted after closing: the writer then skips the final
    /// checkpoint.
    discard: AtomicBool,
    /// Transactions committed.
    commits: AtomicU64,
    /// Writes those transactions held.
    writes: AtomicU64,
}

/// How the writer thread has grouped writes so far (see [`Store::write_stats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteStats {
    /// Transactions committed.
    pub commits: u64,
    /// Writes those transactions held; `writes / commits` is the mean group size.
    pub writes: u64,
    /// Checkpoints, in the background and by the writer.
    pub checkpoints: CheckpointStats,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

impl std::fmt::Debug for ReadOnlyStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadOnlyStore")
            .field("path", &self.path)
            .field("immutable", &self.immutable)
            .finish()
    }
}

/// Which side of the store a connection serves; decides its pragmas.
#[derive(Clone, Copy)]
enum Role {
    Writer,
    Reader,
}

/// Every pragma of every connection, in one place.
fn configure(conn: &Connection, role: Role) -> Result<(), StoreError> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    // The cached-statement capacity must hold every hot statement so none is ever re-prepared.
    conn.set_prepared_statement_cache_capacity(64);
    // Plans never depend on the values bound. Without this, a statement whose bound parameter
    // SQLite compares with a partial index's condition (the analyst names of procedure
    // completion, against `annotations_names`) is marked to re-plan at every new binding, and
    // the statement cache clears a statement's bindings when it takes it back: such a statement
    // was parsed and planned again at every call (~0.2 ms of each completion round trip).
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
    match role {
        Role::Writer => {
            conn.pragma_update(None, "journal_mode", "WAL")?;
            conn.pragma_update(None, "synchronous", "FULL")?;
            conn.pragma_update(None, "application_id", APPLICATION_ID)?;
            conn.pragma_update(None, "cache_size", -WRITER_CACHE_KIB)?;
            // Checkpoints: `checkpoint.rs` takes them off the writer once the schema is current.
            // Savepoints journal the pages they change; keep that journal off the disk.
            conn.pragma_update(None, "temp_store", "MEMORY")?;
        }
        Role::Reader => {
            conn.pragma_update(None, "query_only", "ON")?;
        }
    }
    Ok(())
}

impl Store {
    /// Opens (creating if needed) the database at `path`, brings its schema up to date, recomputes
    /// match keys written by another key algorithm, and starts the writer thread.
    pub fn open(path: &Path) -> Result<Arc<Store>, StoreError> {
        Store::open_with(path, CheckpointPolicy::default())
    }

    /// [`Store::open`] of an existing database that refuses it, before writing anything, when
    /// `PRAGMA quick_check` finds it damaged or ledger rows are missing ([`StoreError::Damaged`]):
    /// resuming must not go on writing into a broken file. A file larger than
    /// `verify::FULL_CHECK_AT_RESUME` is checked here in constant time (its chain head against
    /// the head file, its counts) and in full by the background ledger check, which then refuses
    /// later writes on damage.
    pub fn open_checked(path: &Path) -> Result<Arc<Store>, StoreError> {
        Store::open_inner(path, CheckpointPolicy::default(), true)
    }

    /// [`Store::open`] with checkpoints started at other WAL sizes (tests).
    fn open_with(path: &Path, policy: CheckpointPolicy) -> Result<Arc<Store>, StoreError> {
        Store::open_inner(path, policy, false)
    }

    fn open_inner(
        path: &Path,
        policy: CheckpointPolicy,
        checked: bool,
    ) -> Result<Arc<Store>, StoreError> {
        Store::open_unnamed(path, policy, checked).map_err(|e| name_exhaustion(path, e))
    }

    fn open_unnamed(
        path: &Path,
        policy: CheckpointPolicy,
        checked: bool,
    ) -> Result<Arc<Store>, StoreError> {
        let mut conn = Connection::open(path)?;
        // Failures are named while the connection still holds its descriptors: once it is
        // dropped, a process out of them has some again and the cause is no longer visible.
        let prepared = (|| {
            let deferred = if checked {
                conn.busy_timeout(BUSY_TIMEOUT)?;
                verify::refuse_damaged(&conn, path)?
            } else {
                false
            };
            let found: i32 = conn.pragma_query_value(None, "application_id", |r| r.get(0))?;
            if found != 0 && found != APPLICATION_ID {
                return Err(StoreError::NotASessionDatabase {
                    path: path.to_owned(),
                    found,
                });
            }
            // A new database's schema is written without waiting for the disk at each step:
            // nothing is in it to lose, and the first write the store performs (FULL, below)
            // syncs the log with everything before it.
            let fresh: bool =
                conn.query_row("select count(*) = 0 from sqlite_schema", [], |r| r.get(0))?;
            configure(&conn, Role::Writer)?;
            if fresh {
                conn.pragma_update(None, "synchronous", "OFF")?;
            }
            // A new database is written from the migrations' result at once (`fresh.rs`), notes
            // included, and its keys and counts checked as any database's are; one written
            // before takes the migrations it lacks.
            if fresh && fresh::write(&mut conn, &now_rfc3339())? {
                rekey_if_needed(&mut conn)?;
                count_prefixes_if_needed(&mut conn)?;
            } else {
                migrate(&mut conn, path)?;
            }
            if fresh {
                conn.pragma_update(None, "synchronous", "FULL")?;
            }
            // The rows the ledger check hashes: those written before this store opened.
            let highest: i64 =
                conn.query_row("select coalesce(max(seq), 0) from evidence", [], |r| {
                    r.get(0)
                })?;
            let head = chain::HeadPublisher::open(path, &conn)?;
            Ok((
                Checkpointer::start(path, &mut conn, policy)?,
                highest,
                head,
                deferred,
            ))
        })();
        let ((checkpointer, checkpoints), highest, head, deferred) =
            prepared.map_err(|e| name_exhaustion(path, e))?;
        let (ledger, ledger_thread) = ledgercheck::start(path, highest, head.chained(), deferred)
            .map_err(|source| StoreError::Io {
            path: path.to_owned(),
            source,
        })?;

        let (tx, rx) = mpsc::channel::<Job>();
        let (done, writes_done) = mpsc::channel::<()>();
        let writer_state = Arc::new(WriterState::default());
        let thread = std::thread::Builder::new()
            .name("rea-store-writer".into())
            .spawn({
                let writer_state = writer_state.clone();
                move || writer_loop(conn, rx, &writer_state, checkpointer, head, done)
            })
            .map_err(|source| StoreError::Io {
                path: path.to_owned(),
                source,
            })?;
        Ok(Arc::new(Store {
            reads: ReadOnlyStore::with(path, false),
            writer: Mutex::new(Some(tx)),
            writer_thread: Mutex::new(Some(thread)),
            writes_done: Mutex::new(writes_done),
            writer_state,
            checkpoints,
            ledger,
            ledger_thread: Mutex::new(ledger_thread),
        }))
    }

    /// Where the background ledger check is: every row present when the store opened is hashed
    /// and compared with its id (see `ledgercheck.rs`).
    pub fn ledger_check(&self) -> LedgerStatus {
        self.ledger.status()
    }

    /// Waits for the background ledger check to end, and returns how it ended.
    pub fn wait_ledger_check(&self) -> LedgerStatus {
        self.ledger.wait()
    }

    /// Queues `f` for the writer thread. With `savepoint`, `f` runs inside a savepoint of its
    /// own, so an error from it undoes exactly its changes. Without one (cheaper: a savepoint
    /// costs more than a small insert), an error from `f` after it changed rows cannot be undone
    /// alone, so it takes its group down: the whole transaction is rolled back and every write in
    /// it reports that nothing was kept.
    fn enqueue<R, F>(
        &self,
        savepoint: bool,
        f: F,
    ) -> Result<tokio::sync::oneshot::Receiver<Result<R, StoreError>>, StoreError>
    where
        R: Send + 'static,
        F: FnOnce(&Connection) -> Result<R, StoreError> + Send + 'static,
    {
        if let Some(reason) = self.ledger.damage() {
            return Err(StoreError::Damaged {
                path: self.path.clone(),
                reason,
            });
        }
        let (reply, answer) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move |conn| {
            // Savepoint and release go through the statement cache: parsing them anew for every
            // write cost more than many an insert.
            if savepoint && let Err(e) = run_cached(conn, "savepoint job") {
                return (Box::new(move |_| drop(reply.send(Err(e.into())))), false);
            }
            let changes_before = conn.total_changes();
            let outcome = catch_unwind(AssertUnwindSafe(|| f(conn)))
                .unwrap_or_else(|_| Err(StoreError::WritePanicked));
            match outcome {
                Ok(value) => {
                    if savepoint && let Err(e) = run_cached(conn, "release job") {
                        return (Box::new(move |_| drop(reply.send(Err(e.into())))), false);
                    }
                    let finish: Finisher = Box::new(move |commit_error| {
                        let answer = match commit_error {
                            None => Ok(value),
                            Some(msg) => Err(StoreError::Commit(msg.to_owned())),
                        };
                        let _ = reply.send(answer);
                    });
                    (finish, false)
                }
                Err(e) => {
                    let poisoned = if savepoint {
                        let _ = conn.execute_batch("rollback to job; release job");
                        false
                    } else {
                        conn.total_changes() != changes_before
                    };
                    (Box::new(move |_| drop(reply.send(Err(e)))), poisoned)
                }
            }
        });
        let guard = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        let sender = guard.as_ref().ok_or(StoreError::Closed)?;
        sender.send(job).map_err(|_| StoreError::Closed)?;
        Ok(answer)
    }

    /// Queues `f` (see `enqueue`) and waits for the COMMIT that holds it.
    async fn submit<R, F>(&self, savepoint: bool, f: F) -> Result<R, StoreError>
    where
        R: Send + 'static,
        F: FnOnce(&Connection) -> Result<R, StoreError> + Send + 'static,
    {
        self.enqueue(savepoint, f)?
            .await
            .map_err(|_| StoreError::NotPerformed)?
    }

    /// [`Store::submit`] for callers outside an async runtime.
    fn submit_blocking<R, F>(&self, savepoint: bool, f: F) -> Result<R, StoreError>
    where
        R: Send + 'static,
        F: FnOnce(&Connection) -> Result<R, StoreError> + Send + 'static,
    {
        self.enqueue(savepoint, f)?
            .blocking_recv()
            .map_err(|_| StoreError::NotPerformed)?
    }

    /// Runs `f` in the writer's transaction and returns its value once that transaction has
    /// committed. An error from `f` rolls back only `f`'s own changes.
    async fn write<R, F>(&self, f: F) -> Result<R, StoreError>
    where
        R: Send + 'static,
        F: FnOnce(&Connection) -> Result<R, StoreError> + Send + 'static,
    {
        self.submit(true, f).await
    }

    /// [`Store::write`] for callers outside an async runtime.
    fn write_blocking<R, F>(&self, f: F) -> Result<R, StoreError>
    where
        R: Send + 'static,
        F: FnOnce(&Connection) -> Result<R, StoreError> + Send + 'static,
    {
        self.submit_blocking(true, f)
    }

    /// Writes a consistent copy of the database to `dest` with `VACUUM INTO` and notes the time
    /// of the export in `meta` (`rea sessions prune` keeps sessions never exported). The name is
    /// taken as `claim` allows ([`NewFile::claim`]). Blocking: call it off the async runtime.
    pub fn export(&self, dest: &NewFile, claim: Claim) -> Result<(), StoreError> {
        self.reads.copy_to(dest, claim)?;
        match self.set_meta_blocking("exported_at", &now_rfc3339()) {
            // A damaged ledger is written to no more; the copy is made all the same.
            Err(StoreError::Damaged { .. }) => Ok(()),
            other => other,
        }
    }

    /// [`Store::close`] for a database about to be deleted: the writer connection skips the
    /// checkpoint SQLite would otherwise run when it closes last, and returns once every write
    /// has finished, leaving the writer thread to release its connection and page cache (freeing
    /// a full 32 MiB cache took about 10 ms).
    pub fn close_discarding(&self) {
        self.writer_state.discard.store(true, Ordering::Relaxed);
        self.close();
    }

    /// How many transactions the writer has committed and how many writes they held.
    pub fn write_stats(&self) -> WriteStats {
        WriteStats {
            commits: self.writer_state.commits.load(Ordering::Relaxed),
            writes: self.writer_state.writes.load(Ordering::Relaxed),
            checkpoints: self.checkpoints.stats(),
        }
    }

    /// Stops the writer after every queued write has finished and closes every connection.
    /// Idempotent.
    pub fn close(&self) {
        // The ledger check stops at its next chunk; its connection closes before the writer's.
        self.ledger.stop();
        if let Some(thread) = self
            .ledger_thread
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            let _ = thread.join();
        }
        // Idle readers close first: the writer's connection must be the last one open, for SQLite
        // to checkpoint and remove the WAL when it closes.
        self.reads.release();
        drop(self.writer.lock().unwrap_or_else(|p| p.into_inner()).take());
        if let Some(thread) = self
            .writer_thread
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            if self.writer_state.discard.load(Ordering::Relaxed) {
                // Returns when the writer has sent, or has ended without sending.
                let _ = self
                    .writes_done
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .recv();
            } else {
                let _ = thread.join();
            }
        }
        self.reads.release();
    }

    /// Sets a value in the `meta` table.
    pub fn set_meta_blocking(&self, name: &str, value: &str) -> Result<(), StoreError> {
        self.set_metas_blocking(&[(name, value)])
    }

    /// Sets each `(name, value)` of `entries` in the `meta` table, in one write: all or none.
    pub fn set_metas_blocking(&self, entries: &[(&str, &str)]) -> Result<(), StoreError> {
        let entries: Vec<(String, String)> = entries
            .iter()
            .map(|&(name, value)| (name.to_owned(), value.to_owned()))
            .collect();
        self.write_blocking(move |conn| {
            let mut set = conn.prepare_cached("insert into meta (name, value) values (?1, ?2) on conflict (name) do update set value = excluded.value")?;
            for (name, value) in &entries {
                set.execute([name, value])?;
            }
            Ok(())
        })
    }
}

impl ReadOnlyStore {
    /// Opens the database at `path` for reading only: no writer, no migration, no lock, nothing
    /// written, so it works beside a live owner and on read-only media. The file must be a rea
    /// session database.
    pub fn open(path: &Path) -> Result<ReadOnlyStore, StoreError> {
        let store = ReadOnlyStore::with(path, false);
        match store.check() {
            Ok(()) => Ok(store),
            // A WAL reader needs the shared-memory file beside the database; on read-only media
            // without one, SQLite cannot make it, and nothing can be writing there either.
            // So does a full file system, where an attempt leaves an empty shared-memory file
            // behind: with no WAL frames to read, the file alone is the whole database.
            Err(StoreError::Sqlite(e)) if !shm_path(path).exists() || wal_is_empty(path) => {
                let immutable = ReadOnlyStore::with(path, true);
                immutable.check().map_err(|_| StoreError::Sqlite(e))?;
                Ok(immutable)
            }
            Err(e) => Err(e),
        }
    }

    fn with(path: &Path, immutable: bool) -> ReadOnlyStore {
        ReadOnlyStore {
            path: path.to_owned(),
            readers: Mutex::new(Vec::new()),
            immutable,
            reprepares: Default::default(),
        }
    }

    /// Checks that the file is a session database whose schema this build reads.
    fn check(&self) -> Result<(), StoreError> {
        self.read(|conn| {
            let found: i32 = conn.pragma_query_value(None, "application_id", |r| r.get(0))?;
            if found != APPLICATION_ID {
                return Err(StoreError::NotASessionDatabase {
                    path: self.path.clone(),
                    found,
                });
            }
            Ok(())
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f` on a read-only connection. Never waits for the writer (WAL).
    fn read<R>(
        &self,
        f: impl FnOnce(&Connection) -> Result<R, StoreError>,
    ) -> Result<R, StoreError> {
        let conn = self.take_reader()?;
        let result = f(&conn).map_err(|e| name_exhaustion(&self.path, e));
        let mut idle = self.readers.lock().unwrap_or_else(|p| p.into_inner());
        if idle.len() < MAX_IDLE_READERS {
            idle.push(conn);
        }
        result
    }

    fn take_reader(&self) -> Result<Connection, StoreError> {
        self.new_reader()
            .map_err(|e| name_exhaustion(&self.path, e))
    }

    fn new_reader(&self) -> Result<Connection, StoreError> {
        if let Some(conn) = self.readers.lock().unwrap_or_else(|p| p.into_inner()).pop() {
            return Ok(conn);
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = if self.immutable {
            Connection::open_with_flags(
                immutable_uri(&self.path),
                flags | OpenFlags::SQLITE_OPEN_URI,
            )?
        } else {
            Connection::open_with_flags(&self.path, flags)?
        };
        configure(&conn, Role::Reader).map_err(|e| name_exhaustion(&self.path, e))?;
        Ok(conn)
    }

    /// Closes the idle readers.
    fn release(&self) {
        self.readers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }

    /// A value from the `meta` table.
    pub fn meta(&self, name: &str) -> Result<Option<String>, StoreError> {
        self.read(|conn| {
            Ok(conn
                .prepare_cached("select value from meta where name = ?1")?
                .query_row([name], |r| r.get(0))
                .optional()?)
        })
    }

    /// `PRAGMA integrity_check` on a read-only connection: `"ok"` when sound.
    pub fn integrity_check(&self) -> Result<String, StoreError> {
        self.read(|conn| Ok(conn.query_row("pragma integrity_check", [], |r| r.get(0))?))
    }

    /// Writes a consistent copy of the database to `dest` with `VACUUM INTO`, taking the name as
    /// `claim` allows ([`NewFile::claim`]). Blocking: call it off the async runtime.
    ///
    /// SQLite opens its output by name, so the name it is given is the descriptor of a new
    /// temporary file beside the destination (`/proc/self/fd/N`, created `O_EXCL | O_NOFOLLOW`;
    /// on Windows its path: [`TempFile::reopen_name`](crate::fsroot::TempFile::reopen_name);
    /// VACUUM INTO accepts an empty file), which is then renamed over the destination
    /// (`RENAME_NOREPLACE` unless overwriting): never written through a link, and nothing is left
    /// behind when it fails.
    pub fn copy_to(&self, dest: &NewFile, claim: Claim) -> Result<(), StoreError> {
        let fs_error = |e: FsError| match e {
            FsError::Exists { path } => StoreError::ExportExists { path },
            other => StoreError::Export(other),
        };
        let temp = dest.temp().map_err(fs_error)?;
        let output = temp.reopen_name().to_string_lossy().into_owned();
        // A connection of its own: readers are query_only, which VACUUM INTO refuses, and the
        // writer is always inside a transaction, where VACUUM cannot run.
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = if self.immutable {
            Connection::open_with_flags(
                immutable_uri(&self.path),
                flags | OpenFlags::SQLITE_OPEN_URI,
            )?
        } else {
            Connection::open_with_flags(&self.path, flags)?
        };
        conn.busy_timeout(BUSY_TIMEOUT)?;
        // A copy of what SQLite can read would be a silent partial: it is refused, and the
        // temporary file goes with it. JSON lines keep the readable rows of a damaged ledger.
        conn.execute("vacuum into ?1", [output]).map_err(|e| {
            if verify::is_damage(&e) {
                StoreError::Damaged {
                    path: self.path.clone(),
                    reason: format!(
                        "SQLite cannot read it whole ({e}), so no copy was made; export it as JSON lines to keep the readable records"
                    ),
                }
            } else {
                e.into()
            }
        })?;
        drop(conn);
        temp.commit(claim).map_err(fs_error)?;
        Ok(())
    }
}

/// `e`, or [`StoreError::TooManyOpenFiles`] when the process has no descriptor left: SQLite
/// reports that as an unopenable file, and the thread spawn as a bare I/O error.
fn name_exhaustion(path: &Path, e: StoreError) -> StoreError {
    if !matches!(
        e,
        StoreError::Sqlite(_) | StoreError::Io { .. } | StoreError::Migration(_)
    ) {
        return e;
    }
    #[cfg(unix)]
    let exhausted =
        |e: &std::io::Error| matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE));
    // ERROR_TOO_MANY_OPEN_FILES.
    #[cfg(windows)]
    let exhausted = |e: &std::io::Error| e.raw_os_error() == Some(4);
    let probe = if cfg!(windows) { "NUL" } else { "/dev/null" };
    match std::fs::File::open(probe) {
        Err(probe) if exhausted(&probe) => StoreError::TooManyOpenFiles {
            path: path.to_owned(),
        },
        _ => e,
    }
}

/// The shared-memory file SQLite keeps beside a WAL database.
fn shm_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push("-shm");
    PathBuf::from(name)
}

/// Whether the WAL beside `path` holds no frames (absent or empty).
fn wal_is_empty(path: &Path) -> bool {
    let mut name = path.as_os_str().to_owned();
    name.push("-wal");
    std::fs::metadata(PathBuf::from(name)).map_or(true, |m| m.len() == 0)
}

/// A `file:` URI opening `path` as immutable; every byte but plain path characters is
/// percent-encoded, so any file name survives.
fn immutable_uri(path: &Path) -> String {
    let mut uri = String::from("file:");
    for &b in path.as_os_str().as_encoded_bytes() {
        if b.is_ascii_alphanumeric() || b"/._-~".contains(&b) {
            uri.push(char::from(b));
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri.push_str("?immutable=1");
    uri
}

impl Drop for Store {
    fn drop(&mut self) {
        self.close();
    }
}

/// Runs a statement that returns no rows through the statement cache.
fn run_cached(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(drop)
}

fn writer_loop(
    conn: Connection,
    jobs: mpsc::Receiver<Job>,
    state: &WriterState,
    checkpointer: Checkpointer,
    mut head: chain::HeadPublisher,
    writes_done: mpsc::Sender<()>,
) {
    while let Ok(first) = jobs.recv() {
        if let Err(e) = conn.execute_batch("begin immediate") {
            // Dropping the job drops its reply channel: its caller learns that the write was not
            // performed, and nothing of it reached the database.
            tracing::error!(error = %e, "session database refused to begin a transaction");
            drop(first);
            continue;
        }
        // The group takes every write queued by the time the one before it has run, so writes
        // that arrive while the transaction is being written join it: callers answered by the
        // previous commit are back before this one is done, and the group grows to about the
        // number of callers rather than half of them.
        let mut poisoned = false;
        let mut finishers: Vec<Finisher> = Vec::new();
        let mut next = Some(first);
        while let Some(job) = next {
            let (finish, broke) = job(&conn);
            poisoned |= broke;
            finishers.push(finish);
            // A poisoned group is rolled back; later writes wait for the next one.
            next = if finishers.len() < MAX_GROUP && !poisoned {
                jobs.try_recv().ok()
            } else {
                None
            };
        }
        let commit = if poisoned {
            Err("a write failed part-way and its transaction was rolled back; nothing of it was kept, retry".to_owned())
        } else {
            conn.execute_batch("commit").map_err(|e| e.to_string())
        };
        if commit.is_err() {
            let _ = conn.execute_batch("rollback");
        }
        let error = commit.err();
        if error.is_none() {
            // The chain's head goes outside the WAL before any answer of the group: a tail the
            // WAL loses later is then seen against it.
            head.after_commit(&conn);
            state.commits.fetch_add(1, Ordering::Relaxed);
            state
                .writes
                .fetch_add(finishers.len() as u64, Ordering::Relaxed);
        }
        for finish in finishers {
            finish(error.as_deref());
        }
        // After the answers: a checkpoint the writer runs delays the next group, not this one.
        if error.is_none() {
            checkpointer.after_commit(&conn);
        }
    }
    let discard = state.discard.load(Ordering::Relaxed);
    if discard {
        checkpointer.discard();
    }
    // The checkpoint connection closes first (unless discarded), so this one closes last.
    drop(checkpointer);
    if discard {
        skip_checkpoint_on_close(&conn);
    }
    let _ = writes_done.send(());
    drop(conn);
}

/// Brings `conn` (the database at `path`) up to date the long way: the migrations it lacks,
/// then its match keys, prefix counts and schema notes. `fresh.sql` is what this makes of an
/// empty database.
fn migrate(conn: &mut Connection, path: &Path) -> Result<(), StoreError> {
    embedded::migrations::runner().set_grouped(true).run(conn)?;
    rekey_if_needed(conn)?;
    count_prefixes_if_needed(conn)?;
    // The notes only explain the schema: a ledger that cannot take them still opens.
    if let Err(e) = schema_notes::annotate_schema(conn) {
        tracing::warn!(error = %e, path = %path.display(), "the schema notes were not written");
    }
    Ok(())
}

/// Counts the procedure completion prefixes of targets stored before migration V6 added them.
fn count_prefixes_if_needed(conn: &mut Connection) -> Result<(), StoreError> {
    let missing: bool = conn.query_row(
        // Per target, not per completion row: a few index probes for each of the few targets a
        // session opened. A target with procedures has completion values (its addresses).
        "select exists (select 1 from targets t
             where exists (select 1 from documents d join procedures p on p.document_id = d.id
                           where d.target_id = t.id)
               and not exists (select 1 from procedure_completion_prefixes p where p.target_id = t.id))",
        [],
        |r| r.get(0),
    )?;
    if missing {
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        prefixes::rewrite_all_prefixes(&tx)?;
        tx.commit()?;
    }
    Ok(())
}

/// Recomputes every stored match key when the database was written by another key algorithm.
fn rekey_if_needed(conn: &mut Connection) -> Result<(), StoreError> {
    let stored: Option<String> = conn
        .query_row(
            "select value from meta where name = 'key_algorithm'",
            [],
            |r| r.get(0),
        )
        .optional()?;
    if stored.as_deref() == Some(KEY_ALGORITHM) {
        return Ok(());
    }
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    {
        let docs: Vec<(i64, String)> = tx
            .prepare("select id, name from documents")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        let mut update = tx.prepare("update documents set key = ?2 where id = ?1")?;
        for (id, name) in docs {
            update.execute(rusqlite::params![id, match_key(&name)])?;
        }
        let procs: Vec<(i64, i64, String)> = tx
            .prepare("select document_id, address, name from procedures where name is not null")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<Result<_, _>>()?;
        let mut update = tx.prepare(
            "update procedures set name_key = ?3 where document_id = ?1 and address = ?2",
        )?;
        for (doc, address, name) in procs {
            update.execute(rusqlite::params![doc, address, match_key(&name)])?;
        }
        let values: Vec<(i64, i64, String)> = tx
            .prepare("select target_id, document_id, value from procedure_completions")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<Result<_, _>>()?;
        tx.execute("delete from procedure_completions", [])?;
        let mut insert = tx.prepare(
            "insert or ignore into procedure_completions (target_id, document_id, key, value) values (?1, ?2, ?3, ?4)",
        )?;
        for (target, doc, value) in values {
            insert.execute(rusqlite::params![target, doc, match_key(&value), value])?;
        }
        prefixes::rewrite_all_prefixes(&tx)?;
        tx.execute(
            "insert into meta (name, value) values ('key_algorithm', ?1) on conflict (name) do update set value = excluded.value",
            [KEY_ALGORITHM],
        )?;
    }
    tx.commit()?;
    Ok(())
}

/// Rows stored by one run of a many-row `insert`. With one run a row, running the statement
/// (binding, stepping, resetting) cost about as much as storing the row (gdb: 21,089 procedure
/// rows in 11 ms, 7 ms this way).
const ROWS_A_STATEMENT: usize = 64;

/// Runs `insert` (an `insert … values` without its value lists) over `rows`, `width` columns
/// each, [`ROWS_A_STATEMENT`] rows a statement; `bind` binds one row's values from the given
/// parameter index on. Every parameter is null before `bind` runs, so it may leave the null
/// values unbound: binding one costs as much as binding a value, and a stripped file's
/// procedure rows are mostly nulls.
pub(super) fn insert_rows<R>(
    conn: &Connection,
    insert: &str,
    width: usize,
    rows: &[R],
    mut bind: impl FnMut(&mut rusqlite::Statement<'_>, usize, &R) -> rusqlite::Result<()>,
) -> Result<(), StoreError> {
    let values = |n: usize| {
        let row = format!("({})", vec!["?"; width].join(", "));
        format!("{insert} {}", vec![row; n].join(", "))
    };
    let mut chunks = rows.chunks_exact(ROWS_A_STATEMENT);
    if chunks.len() > 0 {
        let mut many = conn.prepare_cached(&values(ROWS_A_STATEMENT))?;
        for chunk in &mut chunks {
            many.clear_bindings();
            for (n, row) in chunk.iter().enumerate() {
                bind(&mut many, 1 + n * width, row)?;
            }
            many.raw_execute()?;
        }
    }
    let mut one = conn.prepare_cached(&values(1))?;
    for row in chunks.remainder() {
        one.clear_bindings();
        bind(&mut one, 1, row)?;
        one.raw_execute()?;
    }
    Ok(())
}

/// The current time as RFC 3339 UTC with millisecond precision.
pub fn now_rfc3339() -> String {
    let now = time::OffsetDateTime::now_utc();
    let fmt = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    now.format(&fmt)
        .unwrap_or_else(|_| now.unix_timestamp().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::{EvidenceRecord, test_record};
    use evidence::insert_evidence;

    fn record(n: u64) -> EvidenceRecord {
        test_record(
            "checkpoint.test",
            serde_json::json!({ "n": n }),
            serde_json::json!({ "padding": "x".repeat(600) }),
        )
    }

    #[test]
    fn checkpoints_run_beside_the_writer_and_the_wal_starts_over() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let policy = CheckpointPolicy {
            start_frames: 32,
            finish_gap: 8,
            writer_limit: 128,
        };
        let store = Store::open_with(&path, policy).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let (batches, per_batch) = (150u64, 100u64);
        rt.block_on(async {
            for b in 0..batches {
                let batch = (0..per_batch).map(|i| record(b * per_batch + i)).collect();
                store.record_many(batch).await.unwrap();
            }
        });
        // Which side copies the frames depends on how the threads are scheduled: the background
        // pass when it keeps up, the writer when the WAL outgrows `writer_limit` first (on a
        // loaded machine either may do all of it), so the test asks only that passes ran.
        let stats = store.write_stats();
        assert!(
            stats.checkpoints.background + stats.checkpoints.writer > 0,
            "{stats:?}"
        );
        // Every row went through the WAL (9 MB of records alone, about twice that with the
        // index pages), yet the file stayed smaller than the records: passes copied the frames
        // and the writer started it over. (How far below depends on scheduling: a pass cannot
        // start the file over while a reader holds an old snapshot.)
        let written = batches * per_batch * 600;
        let wal = std::fs::metadata(dir.path().join("s.db-wal"))
            .unwrap()
            .len();
        assert!(wal < written, "WAL {wal} B after {written} B of records");
        store.close();
        drop(store);

        let store = Store::open(&path).unwrap();
        assert_eq!(store.integrity_check().unwrap(), "ok");
        let (_, rows) = store.list_evidence(&Default::default()).unwrap();
        assert_eq!(rows, batches * per_batch);
    }

    #[test]
    fn writes_queued_while_a_group_runs_join_its_transaction() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("s.db")).unwrap();
        let before = store.write_stats();
        let (started, has_started) = mpsc::channel();
        let (go, wait_for_go) = mpsc::channel::<()>();
        let first = store
            .enqueue(false, move |conn| {
                started.send(()).unwrap();
                wait_for_go.recv().unwrap();
                insert_evidence(conn, &record(1))
            })
            .unwrap();
        // The writer has taken the first write and found nothing else queued.
        has_started.recv().unwrap();
        let later: Vec<_> = (2..5)
            .map(|n| {
                store
                    .enqueue(false, move |conn| insert_evidence(conn, &record(n)))
                    .unwrap()
            })
            .collect();
        go.send(()).unwrap();
        for answer in std::iter::once(first).chain(later) {
            assert!(answer.blocking_recv().unwrap().unwrap().new);
        }
        let after = store.write_stats();
        assert_eq!(
            (after.commits - before.commits, after.writes - before.writes),
            (1, 4),
            "{after:?}"
        );
        assert_eq!(store.list_evidence(&Default::default()).unwrap().1, 4);
    }

    /// A new database's schema is written without syncing each step (issue 30), but every
    /// write the store performs syncs: the writer runs with `synchronous = FULL` (2), on a new
    /// database and on one opened again.
    #[test]
    fn the_writer_syncs_every_commit_on_a_new_database_and_an_old_one_regression_30() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        for _ in 0..2 {
            let store = Store::open(&path).unwrap();
            let synchronous = store
                .write_blocking(|conn| {
                    Ok(conn.pragma_query_value(None, "synchronous", |r| r.get::<_, i64>(0))?)
                })
                .unwrap();
            assert_eq!(synchronous, 2);
            store.set_metas_blocking(&[("a", "1"), ("b", "2")]).unwrap();
            assert_eq!(store.meta("b").unwrap().as_deref(), Some("2"));
            store.close();
        }
    }

    #[test]
    fn a_write_without_savepoint_that_fails_after_changing_rows_keeps_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("s.db")).unwrap();
        let failed = store.submit_blocking(false, |conn| {
            conn.execute("insert into meta (name, value) values ('half', 'done')", [])?;
            Err::<(), _>(StoreError::UnknownNotFound {
                id: "refused".into(),
            })
        });
        // The caller hears its own error; the row it wrote went with the rolled-back group.
        assert!(
            matches!(failed, Err(StoreError::UnknownNotFound { .. })),
            "{failed:?}"
        );
        assert_eq!(store.meta("half").unwrap(), None);
        // A failure before any change costs nothing and the store goes on.
        let refused = store.submit_blocking(false, |_| Err::<(), _>(StoreError::Closed));
        assert!(matches!(refused, Err(StoreError::Closed)));
        store.set_meta_blocking("after", "yes").unwrap();
        assert_eq!(store.meta("after").unwrap().as_deref(), Some("yes"));
        assert_eq!(store.write_stats().commits, 2, "{:?}", store.write_stats());
    }
}
