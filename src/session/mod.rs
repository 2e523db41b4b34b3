//! Lifecycle of a binary session: its directory, lock, database, and how it ends.
//!
//! A session lives in `<state dir>/sessions/<id>/` holding `session.db` (with its `-wal`/`-shm`)
//! and a `lock` file locked for the life of the owning process. A directory whose lock can be
//! taken belongs to no live process: it can be listed as resumable and resumed. Closing closes
//! every connection first, then deletes the whole directory; a `-wal` is never deleted or copied
//! on its own.

use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::settings::Principal;
use crate::store::{EvidenceFilter, ReadOnlyStore, Store, StoreError, now_rfc3339};

/// Name of the database file inside a session directory.
pub const DATABASE_FILE: &str = "session.db";
const LOCK_FILE: &str = "lock";

/// Errors of session lifecycle.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A file-system operation failed.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// No session with this id exists under the state directory.
    #[error("no session {id} under {state_dir}")]
    NotFound {
        /// The id asked for.
        id: String,
        /// Where it was looked for.
        state_dir: PathBuf,
    },
    /// Another live process holds the session.
    #[error("session {id} is in use by another live rea process")]
    InUse {
        /// The session id.
        id: String,
    },
    /// The session's database is damaged: it was not resumed and nothing was written to it. It
    /// stays on disk to be verified and exported.
    #[error(
        "session {id} is damaged and was not resumed; nothing was written to it ({reason}). `rea evidence verify --session {id}` names the bad records; `rea evidence export --session {id} --jsonl FILE` keeps the readable ones"
    )]
    Damaged {
        /// The session id.
        id: String,
        /// What the check found.
        reason: String,
    },
    /// The session was closed already.
    #[error("session {id} is closed")]
    Closed {
        /// The session id.
        id: String,
    },
    /// The id is not a session id.
    #[error("{id:?} is not a session id (ses_ followed by digits and hex)")]
    BadId {
        /// The text given.
        id: String,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> SessionError + '_ {
    move |source| SessionError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Why no state directory can be chosen.
#[derive(Debug, thiserror::Error)]
pub enum StateDirError {
    /// None of the variables that name it is set, and there is no home directory to put it in.
    /// The working directory is never used: it is wherever the client happened to start rea.
    #[error(
        "no state directory: set REA_STATE_DIR (or --state-dir) to the directory rea keeps its sessions in; HOME and XDG_STATE_HOME are not set"
    )]
    Unset,
    /// A relative directory would move with the working directory of whoever starts rea.
    #[error(
        "the state directory {path} is relative; {source_name} must name an absolute directory"
    )]
    Relative {
        /// The directory given.
        path: PathBuf,
        /// Where it came from.
        source_name: &'static str,
    },
}

/// The state directory: `--state-dir`, else `$REA_STATE_DIR`, else `$XDG_STATE_HOME/rea`, else
/// `~/.local/state/rea`. With none of them set it is an error, never the working directory.
pub fn state_dir(explicit: Option<&Path>) -> Result<PathBuf, StateDirError> {
    if let Some(p) = explicit {
        return Ok(p.to_owned());
    }
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(p) = var("REA_STATE_DIR") {
        return Ok(p);
    }
    // The XDG base directory specification ignores a relative XDG_STATE_HOME; so does rea.
    if let Some(p) = var("XDG_STATE_HOME").filter(|p| p.is_absolute()) {
        return Ok(p.join("rea"));
    }
    match var("HOME") {
        Some(home) if home.is_absolute() => Ok(home.join(".local/state/rea")),
        Some(home) => Err(StateDirError::Relative {
            path: home,
            source_name: "HOME",
        }),
        None => Err(StateDirError::Unset),
    }
}

fn sessions_dir(state_dir: &Path) -> PathBuf {
    state_dir.join("sessions")
}

fn valid_id(id: &str) -> bool {
    id.strip_prefix("ses_").is_some_and(|rest| {
        !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_hexdigit() || b == b'_')
    })
}

/// A new session id: `ses_`, the creation time in milliseconds (hex, so ids sort by age), and
/// 128 random bits from the operating system (hex). The id names the session to its owner and
/// is no credential (the principal is), but it must not be guessable either.
fn new_id() -> Result<String, SessionError> {
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    let mut random = [0u8; 16];
    getrandom::fill(&mut random).map_err(|e| SessionError::Io {
        path: PathBuf::from("(the operating system's random source)"),
        source: std::io::Error::other(e.to_string()),
    })?;
    Ok(format!("ses_{millis:x}_{}", hex::encode(random)))
}

/// The meta key of a session's owner: the [`Principal`] that opened it. A session made before
/// owners were kept has none and belongs to the local principal.
const OWNER_META: &str = "owner";

/// The owner of the session whose database is `path`, read without writing or locking (the
/// session may be live). A database that cannot be read names the local principal: only the
/// operator's own tools can do anything with it then.
fn owner_of(path: &Path) -> Principal {
    ReadOnlyStore::open(path)
        .ok()
        .and_then(|store| store.meta(OWNER_META).ok().flatten())
        .map_or_else(Principal::local, |o| Principal::stored(&o))
}

/// A binary session owned by this process.
#[derive(Debug)]
pub struct Session {
    id: String,
    dir: PathBuf,
    store: Arc<Store>,
    /// Held (locked) for the life of the session; taken and dropped by [`Session::close`], which
    /// releases the lock.
    lock: Mutex<Option<File>>,
}

/// A session found on disk.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SessionInfo {
    /// Session id.
    pub id: String,
    /// Its directory.
    pub dir: String,
    /// Whether a live process holds it.
    pub live: bool,
    /// When it was created.
    pub created_at: Option<String>,
    /// When it was last exported, if ever.
    pub exported_at: Option<String>,
    /// Number of Evidence rows.
    pub evidence: Option<u64>,
    /// Path of the active target.
    pub active_target: Option<String>,
    /// Size of the database and its WAL in bytes.
    pub bytes: u64,
    /// The principal the session belongs to (`local` for stdio, `http:NAME` for an HTTP token).
    pub owner: String,
}

fn lock(dir: &Path, id: &str) -> Result<File, SessionError> {
    let path = dir.join(LOCK_FILE);
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(io(&path))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(SessionError::InUse { id: id.to_owned() }),
        Err(std::fs::TryLockError::Error(source)) => Err(SessionError::Io { path, source }),
    }
}

impl Session {
    /// Creates a new session under `state_dir`, belonging to the local principal.
    pub fn create(state_dir: &Path) -> Result<Session, SessionError> {
        Session::create_for(state_dir, &Principal::local())
    }

    /// Creates a new session under `state_dir`, belonging to `owner`.
    pub fn create_for(state_dir: &Path, owner: &Principal) -> Result<Session, SessionError> {
        let id = new_id()?;
        let root = sessions_dir(state_dir);
        sweep_closed(&root);
        let dir = root.join(&id);
        fs::create_dir_all(&dir).map_err(io(&dir))?;
        let made = (|| {
            let lock = lock(&dir, &id)?;
            let store = Store::open(&dir.join(DATABASE_FILE))?;
            let meta = store.set_metas_blocking(&[
                ("session_id", &id),
                (OWNER_META, owner.as_str()),
                ("created_at", &now_rfc3339()),
                ("rea_version", env!("CARGO_PKG_VERSION")),
            ]);
            if let Err(e) = meta {
                store.close_discarding();
                return Err(e.into());
            }
            Ok((lock, store))
        })();
        match made {
            Ok((lock, store)) => Ok(Session {
                id,
                dir,
                store,
                lock: Mutex::new(Some(lock)),
            }),
            Err(e) => {
                // A half-made session (a full disk, say) must not stay behind to be listed and
                // resumed: it never held anything. Its lock went with the closure above.
                let _ = remove_closed(&dir);
                Err(e)
            }
        }
    }

    /// Resumes a session that no live process holds. Refuses a damaged database
    /// ([`SessionError::Damaged`]) before writing anything to it.
    /// Whoever owns it: this is the operator's (`rea evidence export --session`).
    pub fn resume(state_dir: &Path, id: &str) -> Result<Session, SessionError> {
        Session::take(state_dir, id, true, None)
    }

    /// Resumes a session of `principal`'s, as [`Session::resume`] does. Another principal's
    /// session is [`SessionError::NotFound`], the very error of an id that names nothing, found
    /// before its lock is tried, so not even whether it is live shows.
    pub fn resume_as(
        state_dir: &Path,
        id: &str,
        principal: &Principal,
    ) -> Result<Session, SessionError> {
        Session::take(state_dir, id, true, Some(principal))
    }

    /// Takes a session no live process holds; with `checked`, only when its database is sound;
    /// with `principal`, only when it is that principal's.
    fn take(
        state_dir: &Path,
        id: &str,
        checked: bool,
        principal: Option<&Principal>,
    ) -> Result<Session, SessionError> {
        if !valid_id(id) {
            return Err(SessionError::BadId { id: id.to_owned() });
        }
        let dir = sessions_dir(state_dir).join(id);
        let not_found = || SessionError::NotFound {
            id: id.to_owned(),
            state_dir: state_dir.to_owned(),
        };
        if !dir.join(DATABASE_FILE).is_file() {
            return Err(not_found());
        }
        if principal.is_some_and(|p| *p != owner_of(&dir.join(DATABASE_FILE))) {
            return Err(not_found());
        }
        let lock = lock(&dir, id)?;
        let path = dir.join(DATABASE_FILE);
        let store = if checked {
            Store::open_checked(&path).map_err(|e| match e {
                StoreError::Damaged { reason, .. } => SessionError::Damaged {
                    id: id.to_owned(),
                    reason,
                },
                other => other.into(),
            })?
        } else {
            Store::open(&path)?
        };
        Ok(Session {
            id: id.to_owned(),
            dir,
            store,
            lock: Mutex::new(Some(lock)),
        })
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The session directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The session's store.
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// Ends the session: closes every connection (without the final checkpoint, since the
    /// database is going away), moves the directory out of the sessions listing in one rename,
    /// and deletes it on a background thread: unlinking a ledger of a million rows takes far
    /// longer than the rest of closing. Wait on the returned [`Deletion`] to know the files are
    /// gone; dropping it lets the deletion finish on its own. A directory left behind by a
    /// process that exited first is deleted in the background by the next [`Session::create`],
    /// or at once by [`sweep_closed_now`].
    pub fn close(&self) -> Result<Deletion, SessionError> {
        // Whoever holds the session's other handles (a call still running) finds its store
        // closed; only the first close deletes anything.
        let Some(lock) = self.lock.lock().unwrap_or_else(|p| p.into_inner()).take() else {
            return Err(SessionError::Closed {
                id: self.id.clone(),
            });
        };
        self.store.close_discarding();
        let doomed = self
            .dir
            .with_file_name(format!("{CLOSED_PREFIX}{}", self.id));
        fs::rename(&self.dir, &doomed).map_err(io(&self.dir))?;
        drop(lock);
        let thread = std::thread::Builder::new()
            .name("rea-session-delete".into())
            .spawn({
                let doomed = doomed.clone();
                move || remove_closed(&doomed)
            });
        match thread {
            Ok(thread) => Ok(Deletion {
                dir: doomed,
                thread: Some(thread),
            }),
            Err(_) => {
                remove_closed(&doomed).map_err(io(&doomed))?;
                Ok(Deletion {
                    dir: doomed,
                    thread: None,
                })
            }
        }
    }
}

/// Prefix of a closed session's directory while it is being deleted. Not a session id, so
/// listings skip it.
const CLOSED_PREFIX: &str = ".closed-";

/// The background deletion of a closed session's files.
#[derive(Debug)]
pub struct Deletion {
    dir: PathBuf,
    thread: Option<std::thread::JoinHandle<std::io::Result<()>>>,
}

impl Deletion {
    /// Waits until the files are deleted.
    pub fn wait(mut self) -> Result<(), SessionError> {
        let Some(thread) = self.thread.take() else {
            return Ok(());
        };
        match thread.join() {
            Ok(result) => result.map_err(io(&self.dir)),
            Err(_) => Err(SessionError::Io {
                path: self.dir.clone(),
                source: std::io::Error::other("the deletion thread panicked"),
            }),
        }
    }
}

/// Deletes a closed session's directory. Another process (or a sweep in this one) may be
/// deleting it at the same time, which can make one pass fail on entries the other removed; it
/// is done when the directory is gone, whoever removed it.
fn remove_closed(dir: &Path) -> std::io::Result<()> {
    let mut attempts = 0;
    loop {
        match fs::remove_dir_all(dir) {
            Ok(()) => return Ok(()),
            Err(_)
                if fs::symlink_metadata(dir)
                    .is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound) =>
            {
                return Ok(());
            }
            Err(e) if attempts >= 3 => return Err(e),
            Err(_) => attempts += 1,
        }
    }
}

/// Directories of closed sessions that a process left behind when it exited before its
/// background deletion finished.
fn closed_leftovers(root: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(root) else {
        return vec![];
    };
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(CLOSED_PREFIX))
        .map(|e| e.path())
        .collect()
}

/// Deletes what [`closed_leftovers`] finds on a background thread, so creating or listing
/// sessions never waits on the deletion of an old ledger. Errors are ignored: another process
/// may be deleting the same directory, and the next sweep tries again.
fn sweep_closed(root: &Path) {
    let leftovers = closed_leftovers(root);
    if leftovers.is_empty() {
        return;
    }
    let _ = std::thread::Builder::new()
        .name("rea-session-sweep".into())
        .spawn(move || {
            for dir in leftovers {
                let _ = remove_closed(&dir);
            }
        });
}

/// Deletes the files of closed sessions left behind by processes that exited before their
/// background deletion finished, and returns once they are gone (`rea sessions prune`).
pub fn sweep_closed_now(state_dir: &Path) -> Result<usize, SessionError> {
    let leftovers = closed_leftovers(&sessions_dir(state_dir));
    for dir in &leftovers {
        remove_closed(dir).map_err(io(dir))?;
    }
    Ok(leftovers.len())
}

/// Every session under `state_dir`, newest id last. Reads only: listing needs no write access.
pub fn list(state_dir: &Path) -> Result<Vec<SessionInfo>, SessionError> {
    let root = sessions_dir(state_dir);
    let entries = match fs::read_dir(&root) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
        Err(e) => {
            return Err(SessionError::Io {
                path: root,
                source: e,
            });
        }
    };
    let mut out = vec![];
    for entry in entries.flatten() {
        let id = entry.file_name().to_string_lossy().into_owned();
        let dir = entry.path();
        if !valid_id(&id) || !dir.join(DATABASE_FILE).is_file() {
            continue;
        }
        out.push(describe(&dir, &id));
    }
    out.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(out)
}

/// Whether a live process holds the session in `dir`. Looks with a shared lock on a read-only
/// handle, so it needs no write access (a read-only mount or a full disk does not make every
/// session look live) and never takes the session from its owner.
fn held(dir: &Path) -> bool {
    match File::open(dir.join(LOCK_FILE)) {
        Ok(file) => matches!(
            file.try_lock_shared(),
            Err(std::fs::TryLockError::WouldBlock)
        ),
        // No lock file: nobody ever held it.
        Err(_) => false,
    }
}

/// Facts about one session directory, read without disturbing a live owner and without write
/// access.
fn describe(dir: &Path, id: &str) -> SessionInfo {
    let bytes = [DATABASE_FILE, "session.db-wal"]
        .iter()
        .filter_map(|f| fs::metadata(dir.join(f)).ok())
        .map(|m| m.len())
        .sum();
    let mut info = SessionInfo {
        id: id.to_owned(),
        dir: dir.display().to_string(),
        live: held(dir),
        created_at: None,
        exported_at: None,
        evidence: None,
        active_target: None,
        bytes,
        owner: Principal::LOCAL.to_owned(),
    };
    if let Ok(store) = ReadOnlyStore::open(&dir.join(DATABASE_FILE)) {
        if let Some(owner) = store.meta(OWNER_META).ok().flatten() {
            info.owner = owner;
        }
        info.created_at = store.meta("created_at").ok().flatten();
        info.exported_at = store.meta("exported_at").ok().flatten();
        info.evidence = store
            .list_evidence(&EvidenceFilter {
                limit: 0,
                ..Default::default()
            })
            .ok()
            .map(|(_, n)| n);
        info.active_target = store.active_target().ok().flatten().map(|t| t.path);
    }
    info
}

/// Describes one session by id.
pub fn show(state_dir: &Path, id: &str) -> Result<SessionInfo, SessionError> {
    if !valid_id(id) {
        return Err(SessionError::BadId { id: id.to_owned() });
    }
    let dir = sessions_dir(state_dir).join(id);
    if !dir.join(DATABASE_FILE).is_file() {
        return Err(SessionError::NotFound {
            id: id.to_owned(),
            state_dir: state_dir.to_owned(),
        });
    }
    Ok(describe(&dir, id))
}

/// Deletes a session that no live process holds. Refuses when a live process holds it. A damaged
/// session can be deleted too.
pub fn delete(state_dir: &Path, id: &str) -> Result<(), SessionError> {
    let session = Session::take(state_dir, id, false, None)?;
    session.close()?.wait()
}

/// The database files (`session.db` and its `-wal` and `-shm`) of every session under
/// `state_dir` that exist now: what an export may never replace, whatever name it is reached by.
pub fn database_files(state_dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(sessions_dir(state_dir)) else {
        return Vec::new();
    };
    let mut files = Vec::new();
    for entry in entries.flatten() {
        let db = entry.path().join(DATABASE_FILE);
        for suffix in ["", "-wal", "-shm"] {
            let mut name = db.clone().into_os_string();
            name.push(suffix);
            let path = PathBuf::from(name);
            if path.exists() {
                files.push(path);
            }
        }
    }
    files
}

/// The path of a session's database, for read-only tools (`rea evidence`, `rea complete`).
pub fn database_path(state_dir: &Path, id: &str) -> Result<PathBuf, SessionError> {
    if !valid_id(id) {
        return Err(SessionError::BadId { id: id.to_owned() });
    }
    let path = sessions_dir(state_dir).join(id).join(DATABASE_FILE);
    if path.is_file() {
        Ok(path)
    } else {
        Err(SessionError::NotFound {
            id: id.to_owned(),
            state_dir: state_dir.to_owned(),
        })
    }
}
