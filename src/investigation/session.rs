//! The binary session as one state machine.
//!
//! A binary session starts at the first `open_binary` (or analysis that needs a ledger), switches
//! its active target at a later `open_binary`, and ends at `close_binary`; `resume_session` takes
//! up one a stopped server left. These transitions run one at a time, start to end, in the order
//! they were asked for: each holds the session's lifecycle lock while it works, commits what it
//! records, and only then puts its new [`Snapshot`] in place, so what the ledger says is active
//! and what the server works on never disagree.
//!
//! Every other operation takes one snapshot when it starts and uses nothing else: the target it
//! reads, the store it queries and the subject its Evidence names all come from that snapshot, so
//! a result and its Evidence cannot describe two different targets, whatever runs beside them.

use std::sync::{Arc, Mutex, RwLock};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::args::cap;
use super::observe::{self, Observed, Qualifiers, subject_of};
use super::{Cancel, Investigation, InvestigationError, Progress, Result, blocking};
use crate::providers::native::{
    self, Admitted, BundleInfo, DocumentSpec, Image, Procedure, Target, Unhashed,
};
use crate::session::{self, Session, SessionInfo};
use crate::store::{
    EvidenceFilter, NewDocument, NewProcedure, NewTarget, Recording, Store, TargetRow,
};
use crate::vocabulary::{Architecture, DocumentRole, Format};

/// Arguments of operations that take none.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

/// The connection's binary session.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SessionState {
    /// Whether a binary session is open.
    pub open: bool,
    /// Session id.
    pub session_id: Option<String>,
    /// Session directory holding the database.
    pub dir: Option<String>,
    /// Database file, for auditing with sqlite3.
    pub database: Option<String>,
    /// Targets opened in this session; one is active.
    pub targets: Vec<TargetRow>,
    /// Evidence rows in the ledger.
    pub evidence: u64,
    /// Unresolved residual unknowns.
    pub unresolved_unknowns: u64,
    /// Hashing of the ledger's rows since the store opened: running, clean, or the damage.
    pub ledger_check: Option<String>,
}

/// Arguments of `open_binary`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenArgs {
    /// A file (ELF, Mach-O, PE, or any file as raw data) or a macOS .app bundle directory (at most
    /// 4 KiB).
    #[serde(deserialize_with = "cap::name")]
    pub path: String,
}

/// A document as opened.
#[derive(Debug, Serialize, JsonSchema)]
pub struct OpenedDocument {
    /// Unique name within the target.
    pub name: String,
    /// Format.
    pub format: Format,
    /// Architecture.
    pub architecture: Architecture,
    /// Role within the target.
    pub role: DocumentRole,
    /// Procedures in its complete inventory.
    pub procedures: u64,
}

/// What `open_binary` opened.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Opened {
    /// Session id (a new session starts at the first open).
    pub session_id: String,
    /// Canonical path.
    pub path: String,
    /// File or bundle name.
    pub name: String,
    /// SHA-256 of the target.
    pub sha256: String,
    /// Format.
    pub format: Format,
    /// Architecture.
    pub architecture: Architecture,
    /// Bundle facts from Info.plist, for a .app.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bundle: Option<BundleInfo>,
    /// Documents with their procedure counts.
    pub documents: Vec<OpenedDocument>,
}

/// What `close_binary` ended.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Closed {
    /// The session that ended.
    pub session_id: String,
    /// Evidence rows dropped with its database.
    pub evidence_dropped: u64,
}

/// Arguments of `resume_session`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResumeArgs {
    /// The session to resume; omit to resume the only one of yours no live process holds (at
    /// most 4 KiB).
    #[serde(default)]
    #[serde(deserialize_with = "cap::name_opt")]
    pub session_id: Option<String>,
}

/// The inventories of `target`'s documents, one after the other.
async fn list_documents(
    target: &Target,
    progress: &dyn Progress,
    cancel: &Cancel,
) -> Result<Vec<Vec<Procedure>>> {
    let total = target.documents.len() as u64;
    // The documents of a universal file or a bundle are read side by side, as many at once as
    // the machine has cores; their inventories are kept in the target's document order.
    let width = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let mut running = std::collections::VecDeque::with_capacity(width);
    let mut inventories = Vec::with_capacity(target.documents.len());
    for (i, doc) in target.documents.iter().enumerate() {
        if cancel.is_cancelled() {
            return Err(InvestigationError::Cancelled {
                operation: "open_binary",
                undone: "opened",
            });
        }
        if running.len() >= width
            && let Some(listing) = running.pop_front()
        {
            inventories.push(listing.await??);
        }
        progress.report(
            i as u64,
            total,
            &format!("reading procedures of {}", doc.name),
        );
        let d = doc.clone();
        running.push_back(tokio::task::spawn_blocking(move || {
            Ok::<_, InvestigationError>(native::procedures(&d)?)
        }));
    }
    for listing in running {
        inventories.push(listing.await??);
    }
    progress.report(total, total, "storing the inventory");
    Ok(inventories)
}

/// The opened target with its inventories: a file admitted unhashed gets the hash taken beside
/// its listing. The listing's error comes first.
fn hashed_target(
    listed: Result<Vec<Vec<Procedure>>>,
    unhashed: std::result::Result<Unhashed, Target>,
    hashed: Option<Result<String>>,
) -> Result<(Vec<Vec<Procedure>>, Target)> {
    let inventories = listed?;
    let target = match (unhashed, hashed) {
        (Ok(unhashed), Some(sha256)) => unhashed.finish(sha256?),
        (Err(target), _) => target,
        (Ok(_), None) => {
            return Err(InvestigationError::SessionState(
                "the file was not hashed".into(),
            ));
        }
    };
    Ok((inventories, target))
}

/// The store rows for `target` with the complete procedure inventory of each of its documents (in
/// the order of `target.documents`).
pub fn new_target(target: &Target, inventories: Vec<Vec<Procedure>>) -> NewTarget {
    NewTarget {
        path: target.path.display().to_string(),
        name: target.name.clone(),
        sha256: target.sha256.clone(),
        format: target.format,
        architecture: target.architecture,
        documents: target
            .documents
            .iter()
            .zip(inventories)
            .map(|(d, procs)| NewDocument {
                name: d.name.clone(),
                format: d.format,
                architecture: d.architecture,
                role: d.role,
                file: d.file.display().to_string(),
                file_offset: d.offset,
                file_size: d.size,
                procedures: procs
                    .into_iter()
                    .map(|p| NewProcedure {
                        address: p.address,
                        name: p.name,
                        raw_name: p.raw_name,
                        size: p.size,
                        aliases: p.aliases,
                    })
                    .collect(),
            })
            .collect(),
    }
}

/// The active target: as the provider admitted it, and its row in the session database. One
/// immutable value, replaced whole when another target becomes active.
#[derive(Debug)]
pub(crate) struct ActiveTarget {
    /// Documents with their byte ranges, and what the Evidence subject names.
    pub target: Target,
    /// Its row: procedure queries read this target's inventory.
    pub target_id: i64,
}

/// An open session: its files and store, and the documents recently loaded for analysis.
#[derive(Debug)]
pub(crate) struct OpenSession {
    pub session: Session,
    pub images: ImageCache,
    /// Every target this process opened in the session, held by descriptor, so comparisons
    /// can read a side that is no longer active.
    pub opened: OpenedTargets,
    /// The last procedure comparison and call graph.
    pub analyses: super::cache::AnalysisCache,
    /// Decompilers started for this session's documents.
    pub decompilers: super::decompilers::Decompilers,
    /// Its share of the server's live-session budget, returned with it.
    _permit: super::budget::Permit,
}

/// Targets opened in a session, by digest, most recent first.
#[derive(Debug, Default)]
pub(crate) struct OpenedTargets(Mutex<Vec<Target>>);

/// Most targets kept open for comparisons; each holds a descriptor.
const OPENED_TARGETS: usize = 16;

impl OpenedTargets {
    fn remember(&self, target: &Target) {
        let mut list = self.0.lock().unwrap_or_else(|p| p.into_inner());
        list.retain(|t| t.sha256 != target.sha256);
        list.insert(0, target.clone());
        list.truncate(OPENED_TARGETS);
    }

    /// The target with this digest, when this process opened it in the session.
    pub fn find(&self, sha256: &str) -> Option<Target> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .find(|t| t.sha256 == sha256)
            .cloned()
    }
}

/// The session and active target one operation works on, as they were when it began.
#[derive(Debug, Clone)]
pub(crate) struct Snapshot {
    pub session: Arc<OpenSession>,
    pub active: Option<Arc<ActiveTarget>>,
}

impl Snapshot {
    pub fn store(&self) -> &Arc<Store> {
        self.session.session.store()
    }
}

/// Images loaded for analysis, most recent first. Parsing a document and building its call
/// index is the expensive part of the analysis operations, so the last few are kept.
#[derive(Debug, Default)]
pub(crate) struct ImageCache(Mutex<Vec<(DocumentSpec, Arc<Image>)>>);

const CACHED_IMAGES: usize = 3;

impl ImageCache {
    /// The loaded image of `doc`, loading it (off the runtime) when it is not cached.
    pub async fn get(&self, doc: &DocumentSpec) -> Result<Arc<Image>> {
        if let Some(hit) = self
            .0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .find(|(d, _)| d == doc)
        {
            return Ok(hit.1.clone());
        }
        let spec = doc.clone();
        let image = Arc::new(blocking(move || Ok(Image::load(&spec)?)).await?);
        let mut cache = self.0.lock().unwrap_or_else(|p| p.into_inner());
        cache.insert(0, (doc.clone(), image.clone()));
        cache.truncate(CACHED_IMAGES);
        Ok(image)
    }
}

/// The binary session slot of one investigation.
#[derive(Debug, Default)]
pub(crate) struct SessionSlot {
    /// Held by a transition (open, switch, close, resume, start) from start to end, so they run
    /// one at a time, in the order asked (tokio's mutex is fair).
    lifecycle: tokio::sync::Mutex<()>,
    /// The current snapshot, replaced whole by a transition once it has committed.
    current: RwLock<Option<Snapshot>>,
}

/// A transition in progress: holds the lifecycle lock.
struct Transition<'a> {
    _lock: tokio::sync::MutexGuard<'a, ()>,
    slot: &'a SessionSlot,
}

impl Transition<'_> {
    fn current(&self) -> Option<Snapshot> {
        self.slot.snapshot()
    }

    fn replace(&self, next: Option<Snapshot>) {
        *self.slot.current.write().unwrap_or_else(|p| p.into_inner()) = next;
    }
}

impl SessionSlot {
    fn snapshot(&self) -> Option<Snapshot> {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    async fn begin(&self) -> Transition<'_> {
        Transition {
            _lock: self.lifecycle.lock().await,
            slot: self,
        }
    }

    /// Gives up this slot's session `id` for another connection of the same principal to take
    /// up: `Err` when a transition of this slot runs now, `Ok(None)` when it holds no such
    /// session. The snapshot returned still holds the session until the last call using it ends.
    fn give_up(&self, id: &str) -> std::result::Result<Option<Snapshot>, ()> {
        let _lock = self.lifecycle.try_lock().map_err(|_| ())?;
        let mut current = self.current.write().unwrap_or_else(|p| p.into_inner());
        if current
            .as_ref()
            .is_none_or(|s| s.session.session.id() != id)
        {
            return Ok(None);
        }
        Ok(current.take())
    }
}

/// A snapshot of a session that has just been created or resumed.
fn started(
    session: Session,
    mut permit: super::budget::Permit,
    active: Option<ActiveTarget>,
    slot: &Arc<SessionSlot>,
) -> Snapshot {
    let held: Arc<super::budget::Slot> = slot.clone();
    permit.hold(session.id(), Arc::downgrade(&held));
    let opened = OpenedTargets::default();
    if let Some(a) = &active {
        opened.remember(&a.target);
    }
    Snapshot {
        session: Arc::new(OpenSession {
            session,
            images: ImageCache::default(),
            opened,
            analyses: Default::default(),
            decompilers: Default::default(),
            _permit: permit,
        }),
        active: active.map(Arc::new),
    }
}

/// What the inventory of `document` says beyond its tables: how many procedures were found by
/// following code or pointers from the starts the file gives, by how, and that code reached
/// only through pointers computed at run time may still be missing. `None` when every
/// procedure comes from a table of the file.
fn discovered(document: &str, procedures: &[Procedure]) -> Option<String> {
    let mut by: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for p in procedures {
        if let Some(how) = p.found_by {
            *by.entry(how.as_str()).or_default() += 1;
        }
    }
    if by.is_empty() {
        return None;
    }
    let total: usize = by.values().sum();
    let how: Vec<String> = by.iter().map(|(k, n)| format!("{k} {n}")).collect();
    Some(format!(
        "{document}: {total} of {} procedures are not listed by a table of the file but found by following code and pointers from the starts it gives ({}; each procedure's found_by says how); code reached only through pointers computed at run time may still be missing",
        procedures.len(),
        how.join(", ")
    ))
}

impl Investigation {
    /// The session as it is now, if one is open.
    pub(crate) fn snapshot(&self) -> Option<Snapshot> {
        self.session.snapshot()
    }

    /// The session's store, for completion: `None` when no session is open.
    pub fn session_store(&self) -> Option<Arc<Store>> {
        self.snapshot().map(|s| s.store().clone())
    }

    /// `error`, or for a stateless request the one that says to name the session.
    fn missing(&self, error: InvestigationError) -> InvestigationError {
        if self.stateless.load(std::sync::atomic::Ordering::Relaxed) {
            InvestigationError::Unaddressed
        } else {
            error
        }
    }

    /// The open session, or the error that says how to get one.
    pub(crate) fn open_session(&self) -> Result<Snapshot> {
        self.snapshot()
            .ok_or_else(|| self.missing(InvestigationError::NoSession))
    }

    /// The open session and its active target, from one snapshot.
    pub(crate) fn active(&self) -> Result<(Snapshot, Arc<ActiveTarget>)> {
        let snapshot = self
            .snapshot()
            .ok_or_else(|| self.missing(InvestigationError::NoTarget))?;
        let active = snapshot
            .active
            .clone()
            .ok_or(InvestigationError::NoActiveTarget)?;
        Ok((snapshot, active))
    }

    /// The open session, starting one when there is none (the first JavaScript analysis or
    /// capture starts it, so its Evidence has a ledger).
    pub(crate) async fn ensure_session(&self) -> Result<Snapshot> {
        if let Some(s) = self.snapshot() {
            return Ok(s);
        }
        let t = self.session.begin().await;
        if let Some(s) = t.current() {
            return Ok(s);
        }
        let principal = self.principal();
        let permit = self.budget.take(&principal)?;
        let state_dir = self.settings.state_dir.clone();
        let session = blocking(move || Ok(Session::create_for(&state_dir, &principal)?)).await?;
        let snapshot = started(session, permit, None, &self.session);
        t.replace(Some(snapshot.clone()));
        Ok(snapshot)
    }

    /// `binary_session`: the session's id, files, targets and ledger counts.
    pub fn binary_session(&self, _: NoArgs) -> Result<SessionState> {
        let Some(s) = self.snapshot() else {
            return Ok(SessionState {
                open: false,
                session_id: None,
                dir: None,
                database: None,
                targets: vec![],
                evidence: 0,
                unresolved_unknowns: 0,
                ledger_check: None,
            });
        };
        let store = s.store();
        let (_, evidence) = store.list_evidence(&EvidenceFilter {
            limit: 0,
            ..Default::default()
        })?;
        let (_, unknowns) = store.list_unknowns(false, 0, 0)?;
        Ok(SessionState {
            open: true,
            session_id: Some(s.session.session.id().to_owned()),
            dir: Some(s.session.session.dir().display().to_string()),
            database: Some(store.path().display().to_string()),
            targets: store.targets()?,
            evidence,
            unresolved_unknowns: unknowns,
            ledger_check: Some(store.ledger_check().to_string()),
        })
    }

    /// `open_binary`: admits a file or `.app` bundle, reads the complete procedure inventory of
    /// each document, and records the target with its inventory and the Evidence of the opening in
    /// one transaction; the target is then the active one. The first open starts the session.
    pub async fn open_binary(
        &self,
        args: OpenArgs,
        progress: &dyn Progress,
        cancel: &Cancel,
    ) -> Result<Observed<Opened>> {
        let opened = self.checked_path(std::path::Path::new(&args.path))?;
        // Parameters name the path the target resolved to, so the same target is one
        // observation however the caller spelled its path.
        let args = OpenArgs {
            path: opened.path().display().to_string(),
        };
        let t = self.session.begin().await;
        // A single file is hashed on one core while its procedures are listed on the other.
        let admitted = blocking(move || super::admit_unhashed(&opened)).await?;
        let (unhashed, hashing) = match admitted {
            Admitted::Hashed(target) => (Err(target), None),
            Admitted::Unhashed(unhashed) => {
                let hasher = unhashed.hasher();
                let hashing = tokio::task::spawn_blocking(move || hasher.digest());
                (Ok(unhashed), Some(hashing))
            }
        };
        let admitted = match &unhashed {
            Ok(unhashed) => unhashed.target(),
            Err(target) => target,
        };
        // The first open starts the session; its database is made while the file is read.
        let creating = match t.current() {
            Some(_) => None,
            None => {
                let principal = self.principal();
                let permit = self.budget.take(&principal)?;
                let state_dir = self.settings.state_dir.clone();
                let (made, making) = tokio::sync::oneshot::channel();
                tokio::task::spawn_blocking(move || {
                    // An open dropped before it took the session (its client went away) leaves
                    // none behind.
                    if let Err(Ok(session)) = made.send(Session::create_for(&state_dir, &principal))
                    {
                        drop(session.close());
                    }
                });
                Some((permit, making))
            }
        };
        let listed = list_documents(admitted, progress, cancel).await;
        let hashed = match hashing {
            Some(hashing) => Some(match hashing.await {
                Ok(digest) => digest.map_err(InvestigationError::from),
                Err(e) => Err(e.into()),
            }),
            None => None,
        };
        let created = match creating {
            Some((permit, creating)) => Some((permit, creating.await)),
            None => None,
        };
        let (inventories, target) = match hashed_target(listed, unhashed, hashed) {
            Ok(done) => done,
            Err(e) => {
                // A session made for an open that failed goes with it.
                if let Some((_, Ok(Ok(session)))) = created {
                    blocking(move || Ok(session.close()?)).await.map(drop)?;
                }
                return Err(e);
            }
        };
        let snapshot = match (t.current(), created) {
            (Some(s), _) => {
                // The session's decompiler worker holds the previous target; it goes now.
                let previous = s.session.clone();
                blocking(move || {
                    previous.decompilers.stop();
                    Ok(())
                })
                .await?;
                s
            }
            (None, Some((permit, session))) => {
                let session = session.map_err(|_| {
                    InvestigationError::SessionState("the session's database was not made".into())
                })??;
                let s = started(session, permit, None, &self.session);
                t.replace(Some(s.clone()));
                s
            }
            (None, None) => {
                return Err(InvestigationError::SessionState(
                    "no session was open and none was made".into(),
                ));
            }
        };
        let counts: Vec<u64> = inventories.iter().map(|p| p.len() as u64).collect();
        let mut qualifiers = Qualifiers::observed();
        qualifiers.limitations = target
            .documents
            .iter()
            .zip(&inventories)
            .filter_map(|(d, procedures)| discovered(&d.name, procedures))
            .collect();
        let opened = Opened {
            session_id: snapshot.session.session.id().to_owned(),
            path: target.path.display().to_string(),
            name: target.name.clone(),
            sha256: target.sha256.clone(),
            format: target.format,
            architecture: target.architecture,
            bundle: target.bundle.clone(),
            documents: target
                .documents
                .iter()
                .zip(counts)
                .map(|(d, n)| OpenedDocument {
                    name: d.name.clone(),
                    format: d.format,
                    architecture: d.architecture,
                    role: d.role,
                    procedures: n,
                })
                .collect(),
        };
        let record = observe::record(
            "open_binary",
            Some(subject_of(&target)),
            &args,
            &opened,
            qualifiers,
        )?;
        let mut recording = Recording::of(record.clone());
        recording.target = Some(new_target(&target, inventories));
        let committed = snapshot.store().commit(recording).await?;
        let target_id = committed
            .target_id
            .ok_or_else(|| InvestigationError::SessionState("the target was not stored".into()))?;
        snapshot.session.opened.remember(&target);
        t.replace(Some(Snapshot {
            session: snapshot.session.clone(),
            active: Some(Arc::new(ActiveTarget { target, target_id })),
        }));
        Ok(Observed {
            result: opened,
            evidence: super::EvidenceInline::new(committed.primary, record),
        })
    }

    /// `close_binary`: ends the session and deletes its database with its ledger and unknowns.
    pub async fn close_binary(&self, _: NoArgs) -> Result<Closed> {
        let t = self.session.begin().await;
        let snapshot = t
            .current()
            .ok_or_else(|| InvestigationError::SessionState("no binary session is open".into()))?;
        let (_, evidence) = snapshot.store().list_evidence(&EvidenceFilter::default())?;
        t.replace(None);
        let session = snapshot.session.clone();
        let stopping = session.clone();
        blocking(move || {
            stopping.decompilers.stop();
            Ok(())
        })
        .await?;
        let id = session.session.id().to_owned();
        // The files are deleted in the background; the session is gone from listings already.
        drop(blocking(move || Ok(session.session.close()?)).await?);
        Ok(Closed {
            session_id: id,
            evidence_dropped: evidence,
        })
    }

    /// `resume_session`: takes up a session no live process holds, or one that another
    /// connection of the same principal to this server holds (that connection gives it up). Its
    /// active target is admitted again from its path; when that fails or the target changed, no
    /// target is active.
    pub async fn resume_session(&self, args: ResumeArgs) -> Result<SessionInfo> {
        let t = self.session.begin().await;
        if let Some(s) = t.current() {
            return Err(InvestigationError::SessionState(format!(
                "session {} is open on this connection; close_binary it first",
                s.session.session.id()
            )));
        }
        let state_dir = self.settings.state_dir.clone();
        let principal = self.principal();
        let id = match args.session_id {
            Some(id) => id,
            None => {
                // Only the caller's own: another principal's sessions are not there for them.
                let free: Vec<SessionInfo> = session::list(&state_dir)?
                    .into_iter()
                    .filter(|s| !s.live && s.owner == principal.as_str())
                    .collect();
                match free.as_slice() {
                    [one] => one.id.clone(),
                    [] => {
                        return Err(InvestigationError::SessionState(
                            "no session is waiting to be resumed".into(),
                        ));
                    }
                    many => {
                        let ids: Vec<&str> = many.iter().map(|s| s.id.as_str()).collect();
                        return Err(InvestigationError::SessionState(format!(
                            "several sessions can be resumed; name one: {}",
                            ids.join(", ")
                        )));
                    }
                }
            }
        };
        // Held by another connection of the caller's to this server (an HTTP client that went
        // away without ending its MCP session): that connection gives it up, so it is resumed
        // now rather than once that connection is released as idle.
        let mut given_up = false;
        if let Some(other) = self
            .budget
            .holder(&id, &principal)
            .and_then(|slot| slot.downcast::<SessionSlot>().ok())
            && !Arc::ptr_eq(&other, &self.session)
        {
            let snapshot = other.give_up(&id).map_err(|()| {
                InvestigationError::SessionState(format!(
                    "session {id} is being opened, switched or closed by another connection of yours; ask again when that ends"
                ))
            })?;
            if let Some(snapshot) = snapshot {
                given_up = true;
                // Its decompiler goes with it; the session closes once no call uses it.
                blocking(move || {
                    snapshot.session.decompilers.stop();
                    drop(snapshot);
                    Ok(())
                })
                .await?;
            }
        }
        let permit = self.budget.take(&principal)?;
        let (dir, resumed_id) = (state_dir.clone(), id.clone());
        let settings = self.settings.clone();
        let slot = self.session.clone();
        let snapshot = blocking(move || {
            let session = match Session::resume_as(&dir, &resumed_id, &principal) {
                Err(crate::session::SessionError::InUse { id }) if given_up => {
                    return Err(InvestigationError::SessionState(format!(
                        "session {id} is still used by a call running on another connection of yours; ask again when it ends"
                    )));
                }
                other => other?,
            };
            // The active target is admitted again through the allowed roots, as an open would
            // be: a session resumed under other roots does not reach outside them.
            let active = session.store().active_target()?.and_then(|row| {
                settings
                    .check_path(std::path::Path::new(&row.path))
                    .ok()
                    .and_then(|opened| super::admit(&opened).ok())
                    .filter(|t| t.sha256 == row.sha256)
                    .map(|target| ActiveTarget {
                        target,
                        target_id: row.id,
                    })
            });
            Ok(started(session, permit, active, &slot))
        })
        .await?;
        t.replace(Some(snapshot));
        drop(t);
        let mut info = session::show(&state_dir, &id)?;
        info.live = true;
        Ok(info)
    }
}
