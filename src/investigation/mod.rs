//! The investigation layer: every operation rea offers, made the same way for the MCP server and
//! the command line. It knows nothing of MCP or of command-line parsing.
//!
//! An [`Investigation`] owns the operator's settings, a handle on the capture policy, and one
//! binary session with its image cache. Its methods are the operations, with typed arguments and
//! typed results. Each operation first builds a pure [`Recording`] (its primary Evidence record,
//! the pages it links to, and the rows it registers) from one snapshot of the session, then
//! commits it in one transaction through the store. The command line builds the very same
//! recordings without a session (the `*_detached` methods), so a report printed by `rea inspect
//! --json` carries the id the server would record.
//!
//! # Layout
//! - `args`: validated arguments shared by operations: [`DocumentSelector`],
//!   [`ProcedureSelector`], [`ProviderChoice`], [`PageRequest`] and [`Page`].
//! - `observe`: Evidence records of observations, and results that carry their Evidence inline.
//! - `session`: the binary session as one state machine: open, switch, close and resume run one
//!   at a time, and every operation reads one immutable snapshot of it.
//! - `native`: documents, procedures, strings, assembly, call graph, cross-references, dossiers.
//! - `artifacts`: inventories, their comparison and reconstruction verification.
//! - `bound`: pages ended early to fit the message bound.
//! - `javascript`: JavaScript/Electron application analysis.
//! - `depth`: pseudo-code from a decompiler, and raw bytes at an address or matching a pattern.
//! - `capture`: bounded process capture and the comparison of two captures.
//! - `ledger`: reading and exporting the Evidence ledger, and verifying a session's.
//! - `sessions`: sessions on disk for the operator's commands: listed, shown, pruned, read
//!   without a lock.
//! - `report`: the command line's one-shot analyses, as text for a person and as a recording.
//! - `unknowns`: residual unknowns and the rules for revising and resolving them.
//! - `doctor`: the server's own check.

mod analyst;
mod annotations;
mod args;
mod artifacts;
mod bound;
mod budget;
mod cache;
mod capture;
mod carry;
mod compare;
mod decompilers;
mod depth;
mod doctor;
mod javascript;
mod ledger;
mod native;
mod observe;
mod report;
mod session;
mod sessions;
mod unknowns;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

pub use annotations::{
    AnnotateArgs, Annotated, AnnotationError, AnnotationPage, ListAnnotationsArgs, MAX_NAME_BYTES,
    MAX_RATIONALE_BYTES, MAX_TEXT_BYTES,
};
pub(crate) use args::cap::ARGUMENTS as MAX_ARGUMENT_BYTES;
pub use args::{DocumentSelector, Page, PageRequest, ProcedureSelector, ProviderChoice};
pub use artifacts::{
    CompareArgs, InspectArgs, InventoryGraph, PageRef, VerifyArgs, inventory_recording,
};
pub use budget::SessionBudget;
pub use capture::{
    CAPTURE_OPERATION, Captured, CompareCapturesArgs, FaultProcedure, FrameProcedure,
    OUTPUT_PAGE_OPERATION, OutputPage,
};
pub use carry::{
    CarriedAnnotation, CarryAnnotationsArgs, CarryResult, MatchConfidence, NotCarried,
    NotCarriedReason,
};
pub use compare::{CallPathsArgs, CompareProceduresArgs};
pub use depth::{BytesFound, BytesRead, PseudoCodeArgs, ReadBytesArgs, SearchBytesArgs};
pub use doctor::{DoctorArgs, DoctorReport, DoctorResult, TargetCheck};
pub use javascript::{AnalyzeArgs, Analyzed, is_javascript_directory};
pub use ledger::{
    Copied, EvidencePage, EvidenceRead, ExportArgs, ExportFormat, ExportSource, Exported, GetArgs,
    JSONL_FORMAT_VERSION, JSONL_KIND, JsonlExport, JsonlHeader, ListArgs, claim_export,
    export_destination, export_jsonl, verify_session,
};
pub use native::{
    About, AssemblyArgs, AssemblyResult, DeepAssembly, Documents, ListDocumentsArgs,
    ListProceduresArgs, ProcedureArgs, ProcedureDetails, ProcedurePage, ResolvedProcedure,
    SearchMode, SearchProceduresArgs, SearchStringsArgs, StringsFound, XrefsArgs, documents_at,
    procedures_of, read_target,
};
pub use observe::{EvidenceInline, Observed};
pub use report::Report;
pub use session::{
    Closed, NoArgs, OpenArgs, Opened, OpenedDocument, ResumeArgs, SessionState, new_target,
};
pub use sessions::{Pruned, ReadOnlySession, list_sessions, prune_sessions, show_session};
pub use unknowns::{
    ListUnknownsArgs, RecordUnknownArgs, UnknownError, UnknownPage, UpdateUnknownArgs,
};

pub use crate::store::Recording;

// The results of the floors below that operations return as they are: the edge names them (in
// its output schemas and reports) only through this layer.
pub use crate::analyzers::artifact::{Comparison, Verdict};
pub use crate::analyzers::callpaths::CallPaths;
pub use crate::analyzers::capture::{CaptureComparison, Scenario};
pub use crate::analyzers::procdiff::ProcedureDiffPage;
pub use crate::providers::decompile::PseudoCodePage;
pub use crate::providers::native::{CallGraphEdges, Callers, Dossier, Xrefs};
pub use crate::session::SessionInfo;
pub use crate::store::{EvidenceFilter, UnknownHead};

// The identifiers the edge parses and prints.
pub use crate::ids::{Address, EvidenceId};

use crate::analyzers::capture::Policy;
use crate::settings::Settings;

/// Why an operation did not happen. Each message is written for the caller to read and act on.
#[derive(Debug, thiserror::Error)]
pub enum InvestigationError {
    /// The operation needs a binary session and there is none.
    #[error("no binary session is open: open_binary a target or resume_session first")]
    NoSession,
    /// A stateless request (MCP 2026-07-28 over HTTP, no MCP session) named no binary session,
    /// and the operation needs one.
    #[error(
        "this request is stateless (MCP 2026-07-28 over HTTP) and names no binary session: pass the session id open_binary or resume_session returned as the `session` argument"
    )]
    Unaddressed,
    /// The operation needs an open target and no session exists.
    #[error("no target is open: call open_binary with a file or .app bundle first")]
    NoTarget,
    /// The session has no active target.
    #[error("no target is active in this session: call open_binary")]
    NoActiveTarget,
    /// A path lies outside the operator's roots or cannot be resolved.
    #[error("{0}")]
    Path(String),
    /// A file could not be read or written as the path rules require (an export destination
    /// taken, a file changed while read).
    #[error(transparent)]
    File(#[from] crate::fsroot::FsError),
    /// An argument is not acceptable; the message says why and what would be.
    #[error("{0}")]
    InvalidArgument(String),
    /// The session is not in a state the operation can start from.
    #[error("{0}")]
    SessionState(String),
    /// The caller cancelled the operation before it changed anything.
    #[error("{operation} was cancelled; nothing was {undone}")]
    Cancelled {
        /// The operation.
        operation: &'static str,
        /// What was not done: "opened", "run", …
        undone: &'static str,
    },
    /// A process capture was refused before anything ran.
    #[error("refused, nothing was run: {0}")]
    CaptureRefused(String),
    /// The target could not be admitted.
    #[error(transparent)]
    Admit(#[from] crate::providers::native::AdmitError),
    /// The native provider failed on a document.
    #[error(transparent)]
    Provider(#[from] crate::providers::native::ProviderError),
    /// A deep provider failed.
    #[error(transparent)]
    Deep(#[from] crate::providers::deep::DeepError),
    /// A decompiler failed or is not installed.
    #[error(transparent)]
    Decompile(#[from] crate::providers::decompile::DecompileError),
    /// A read or search of a document's bytes was refused.
    #[error(transparent)]
    Bytes(#[from] crate::providers::native::BytesError),
    /// The artifact inventory failed.
    #[error(transparent)]
    Artifact(#[from] crate::analyzers::artifact::ArtifactError),
    /// The JavaScript analysis failed.
    #[error(transparent)]
    JavaScript(#[from] crate::analyzers::javascript::JsError),
    /// A process capture failed while running.
    #[error(transparent)]
    Capture(#[from] crate::analyzers::capture::CaptureError),
    /// A comparison's normalization rules are not valid.
    #[error(transparent)]
    CaptureRule(#[from] crate::analyzers::capture::CompareError),
    /// The capture policy could not be read.
    #[error(transparent)]
    Policy(#[from] crate::analyzers::capture::PolicyError),
    /// A residual unknown's revision was refused.
    #[error(transparent)]
    Unknown(#[from] UnknownError),
    /// An annotation was refused; nothing was recorded.
    #[error(transparent)]
    Annotation(#[from] AnnotationError),
    /// A record of the ledger could not be loaded as asked.
    #[error(transparent)]
    Load(#[from] crate::store::LoadError),
    /// The session database failed.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// The session's files failed.
    #[error(transparent)]
    Session(#[from] crate::session::SessionError),
    /// A record could not be put into canonical JSON.
    #[error(transparent)]
    Canonical(#[from] crate::evidence::CanonicalError),
    /// A result could not be serialized into its record.
    #[error("a result could not be serialized: {0}")]
    Serialize(#[from] serde_json::Error),
    /// The operator's message bound in `rea.toml` cannot be used.
    #[error(transparent)]
    Messages(#[from] crate::settings::MessagesError),
    /// A worker thread of the operation failed.
    #[error("the operation's worker failed: {0}")]
    Worker(#[from] tokio::task::JoinError),
    /// The operation goes on after this call's deadline; the message says what is done, what
    /// runs now, and how to get the result.
    #[error("{0}")]
    Pending(String),
    /// A failure of work another call started and this one waited for, as that work reported it.
    #[error("{0}")]
    Shared(std::sync::Arc<str>),
}

/// Result of an operation.
pub type Result<T, E = InvestigationError> = std::result::Result<T, E>;

/// Hears how far a long operation has come. Called from worker threads; keep it quick.
pub trait Progress: Send + Sync {
    /// `done` of `total` steps are finished; `message` says what is being done.
    fn report(&self, done: u64, total: u64, message: &str);
}

/// A [`Progress`] that hears nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProgress;

impl Progress for NoProgress {
    fn report(&self, _: u64, _: u64, _: &str) {}
}

/// Asks a running operation to stop. Cheap to clone; every clone sees the same request.
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// A token nobody has cancelled yet.
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// Asks the operation to stop.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether the operation was asked to stop.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    /// The flag itself, for workers that poll it.
    pub fn flag(&self) -> &AtomicBool {
        &self.0
    }
}

/// The capture policy in force, shared by every investigation of a process and replaced when the
/// operator's `rea.toml` changes.
#[derive(Debug, Default)]
pub struct CapturePolicy(RwLock<Policy>);

impl CapturePolicy {
    /// A handle holding `policy`.
    pub fn new(policy: Policy) -> CapturePolicy {
        CapturePolicy(RwLock::new(policy))
    }

    /// The policy in force now.
    pub fn current(&self) -> Policy {
        self.0.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Whether the policy in force enables process capture.
    pub fn enabled(&self) -> bool {
        self.0.read().unwrap_or_else(|p| p.into_inner()).enabled
    }

    /// Puts `policy` in force; returns whether that switched capture on or off.
    fn replace(&self, policy: Policy) -> bool {
        let mut current = self.0.write().unwrap_or_else(|p| p.into_inner());
        let toggled = current.enabled != policy.enabled;
        *current = policy;
        toggled
    }

    /// The policy of `rea.toml` in the operator's configuration directory `config_dir`, or the
    /// disabled policy when there is no directory. A file that does not load is an error.
    pub fn load(config_dir: Option<&Path>) -> Result<CapturePolicy> {
        Ok(CapturePolicy::new(match config_dir {
            Some(dir) => crate::analyzers::capture::load_policy(dir)?,
            None => Policy::default(),
        }))
    }

    /// Reads `rea.toml` in `config_dir` again and puts its policy in force; returns whether that
    /// switched capture on or off. A file that does not load leaves the policy in force as it is.
    pub fn reload(&self, config_dir: &Path) -> Result<bool> {
        Ok(self.replace(crate::analyzers::capture::load_policy(config_dir)?))
    }
}

/// One investigation: the operator's settings, the capture policy, and one binary session (for
/// MCP: one per connection). Every method takes `&self`; concurrent calls are safe, and the
/// session's own transitions run one at a time.
#[derive(Debug)]
pub struct Investigation {
    settings: Arc<Settings>,
    policy: Arc<CapturePolicy>,
    /// Shared with the server's session budget, which names the slot holding each live session
    /// so that its principal can resume it from another connection at once.
    session: Arc<session::SessionSlot>,
    /// Live sessions of the whole server, when it caps them.
    budget: Arc<SessionBudget>,
    /// Set for a stateless HTTP request: with no session, an operation that needs one says the
    /// request must name it.
    stateless: std::sync::atomic::AtomicBool,
    /// Who calls: set once by the edge at the first call (over HTTP, the principal of the
    /// request's bearer token); unset, the local principal. The session it opens is theirs, and
    /// it resumes and lists only theirs.
    principal: std::sync::OnceLock<crate::settings::Principal>,
}

impl Investigation {
    /// An investigation with no binary session yet.
    pub fn new(settings: Arc<Settings>, policy: Arc<CapturePolicy>) -> Investigation {
        Investigation {
            settings,
            policy,
            session: Arc::default(),
            budget: Arc::default(),
            stateless: Default::default(),
            principal: Default::default(),
        }
    }

    /// Binds this investigation to `principal`, unless it is bound already; whether it is
    /// `principal`'s. The edge refuses a call when it is not.
    pub fn act_as(&self, principal: crate::settings::Principal) -> bool {
        *self.principal.get_or_init(|| principal.clone()) == principal
    }

    /// The principal this investigation works for.
    pub fn principal(&self) -> crate::settings::Principal {
        self.principal
            .get()
            .cloned()
            .unwrap_or_else(crate::settings::Principal::local)
    }

    /// The largest result an operation may return, in bytes of JSON (see
    /// [`Settings::max_result_bytes`]); operations with long output page or cut to fit it.
    pub fn max_result_bytes(&self) -> Result<u64> {
        Ok(self.settings.max_result_bytes()?)
    }

    /// Marks this investigation as serving one stateless request (see
    /// [`InvestigationError::Unaddressed`]).
    pub fn mark_stateless(&self) {
        self.stateless
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// The id of the open binary session, if any.
    pub fn session_id(&self) -> Option<String> {
        self.snapshot().map(|s| s.session.session.id().to_owned())
    }

    /// This investigation's sessions count against `budget`, shared by the server's connections.
    pub fn with_budget(mut self, budget: Arc<SessionBudget>) -> Investigation {
        self.budget = budget;
        self
    }

    /// Resolves `path` beneath the operator's allowed roots and opens it: what the operation
    /// reads from then on, by descriptor, never by path again.
    fn checked_path(&self, path: &Path) -> Result<crate::fsroot::Opened> {
        self.settings
            .check_path(path)
            .map_err(InvestigationError::Path)
    }
}

/// Admits what [`Investigation::checked_path`] opened as a target; a directory that is not
/// admitted names the analysis that applies to it instead, when there is one. Blocking.
fn admit(opened: &crate::fsroot::Opened) -> Result<crate::providers::native::Target> {
    use crate::fsroot::Opened;
    use crate::providers::native::AdmitError;
    crate::providers::native::admit_opened(opened).map_err(|e| match (e, opened) {
        (AdmitError::UnsupportedDirectory { path, .. }, Opened::Dir(dir)) => {
            let suggestion = crate::analyzers::javascript::looks_like_javascript_dir(dir)
                .then_some("analyze_javascript_application");
            AdmitError::UnsupportedDirectory { path, suggestion }.into()
        }
        (other, _) => other.into(),
    })
}

/// [`admit`], except that a single file is hashed later, by the caller (`open_binary` hashes it
/// while it lists its procedures).
fn admit_unhashed(opened: &crate::fsroot::Opened) -> Result<crate::providers::native::Admitted> {
    use crate::providers::native::{Admitted, admit_unhashed};
    match opened {
        crate::fsroot::Opened::Dir(_) => admit(opened).map(Admitted::Hashed),
        crate::fsroot::Opened::File(_) => Ok(admit_unhashed(opened)?),
    }
}

/// Runs blocking work of an operation on a worker thread.
async fn blocking<T, F>(f: F) -> Result<T>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T> + Send + 'static,
{
    tokio::task::spawn_blocking(f).await?
}
