//! Session tools: `doctor`, `binary_session`, `open_binary`, `close_binary`, `resume_session`.

use std::path::PathBuf;

use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Observed, Qualifiers, ToolError, observe, subject_of};
use crate::providers::{deep, native};
use crate::server::ReaServer;
use crate::session::{self, BinarySession, SessionInfo, new_target};
use crate::store::TargetRow;

/// Arguments of `doctor`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DoctorArgs {
    /// A file or .app bundle to check for admission, without opening it.
    #[serde(default)]
    pub target: Option<String>,
}

/// What `doctor` found.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DoctorReport {
    /// rea's version.
    pub version: String,
    /// The state directory and whether it is writable.
    pub state_dir: String,
    /// Whether a session can be created there.
    pub state_dir_writable: bool,
    /// The config directory, when set.
    pub config_dir: Option<String>,
    /// Roots every path must lie under; empty means unrestricted.
    pub allowed_roots: Vec<String>,
    /// Number of guided prompts offered.
    pub prompts: usize,
    /// Deep provider candidates found on PATH (never started).
    pub deep_candidates: Vec<deep::Candidate>,
    /// Whether process capture is available on this server.
    pub process_capture: String,
    /// The admission check of `target`, when one was given.
    pub target: Option<TargetCheck>,
}

/// Whether a path would open as a target.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TargetCheck {
    /// The path checked.
    pub path: String,
    /// Whether open_binary would admit it.
    pub admitted: bool,
    /// Format, when admitted.
    pub format: Option<String>,
    /// Architecture, when admitted.
    pub architecture: Option<String>,
    /// Documents it would list, when admitted.
    pub documents: Vec<String>,
    /// Why not, when refused.
    pub refusal: Option<String>,
    /// The analysis that applies instead, when refused and one is known.
    pub available_action: Option<String>,
}

/// Checks whether `path` opens as a target (shared by the tool and the CLI).
pub fn check_target(path: &std::path::Path) -> TargetCheck {
    match crate::fsroot::Roots::none().open(path) {
        Ok(opened) => check_opened(&opened),
        Err(e) => refused(path, native::AdmitError::from(e)),
    }
}

/// [`check_target`] of a path opened beneath the allowed roots.
pub fn check_opened(opened: &crate::fsroot::Opened) -> TargetCheck {
    let path = opened.path();
    match native::admit_opened(opened) {
        Ok(t) => TargetCheck {
            path: t.path.display().to_string(),
            admitted: true,
            format: Some(t.format),
            architecture: Some(t.architecture),
            documents: t.documents.into_iter().map(|d| d.name).collect(),
            refusal: None,
            available_action: None,
        },
        Err(e) => refused(path, e),
    }
}

fn refused(path: &std::path::Path, e: native::AdmitError) -> TargetCheck {
    TargetCheck {
        path: path.display().to_string(),
        admitted: false,
        format: None,
        architecture: None,
        documents: vec![],
        available_action: match &e {
            native::AdmitError::UnsupportedDirectory { suggestion, .. } => {
                suggestion.map(str::to_owned)
            }
            _ => None,
        },
        refusal: Some(e.to_string()),
    }
}

/// Arguments of `binary_session`.
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
}

/// Arguments of `open_binary`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenArgs {
    /// A file (ELF, Mach-O, PE, or any file as raw data) or a macOS .app bundle directory.
    pub path: String,
}

/// A document as opened.
#[derive(Debug, Serialize, JsonSchema)]
pub struct OpenedDocument {
    /// Unique name within the target.
    pub name: String,
    /// Format.
    pub format: String,
    /// Architecture.
    pub architecture: String,
    /// Role within the target.
    pub role: String,
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
    pub format: String,
    /// Architecture.
    pub architecture: String,
    /// Bundle facts from Info.plist, for a .app.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bundle: Option<native::BundleInfo>,
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
    /// The session to resume; omit to resume the only session no live process holds.
    #[serde(default)]
    pub session_id: Option<String>,
}

async fn progress(
    context: &RequestContext<RoleServer>,
    token: &Option<ProgressToken>,
    done: usize,
    total: usize,
    message: String,
) {
    if let Some(token) = token {
        let mut p = ProgressNotificationParam::new(token.clone(), done as f64);
        p.total = Some(total as f64);
        p.message = Some(message);
        let _ = context.peer.notify_progress(p).await;
    }
}

#[tool_router(router = session_tools, vis = "pub(crate)")]
impl ReaServer {
    /// Check this server: version, state and config directories, deep provider candidates, and
    /// optionally whether a path would open as a target. Starts nothing and opens nothing.
    #[tool(
        name = "doctor",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn doctor(
        &self,
        Parameters(args): Parameters<DoctorArgs>,
    ) -> Result<Json<DoctorReport>, ToolError> {
        let settings = &self.shared().settings;
        let target = match args.target {
            Some(t) => Some(match settings.check_path(std::path::Path::new(&t)) {
                Ok(p) => tokio::task::spawn_blocking(move || check_opened(&p)).await?,
                Err(refusal) => TargetCheck {
                    path: t,
                    admitted: false,
                    format: None,
                    architecture: None,
                    documents: vec![],
                    refusal: Some(refusal),
                    available_action: None,
                },
            }),
            None => None,
        };
        let writable = std::fs::create_dir_all(&settings.state_dir).is_ok()
            && tempfile_in(&settings.state_dir);
        Ok(Json(DoctorReport {
            version: env!("CARGO_PKG_VERSION").into(),
            state_dir: settings.state_dir.display().to_string(),
            state_dir_writable: writable,
            config_dir: settings
                .config_dir
                .as_ref()
                .map(|d| d.display().to_string()),
            allowed_roots: settings
                .allowed_roots
                .paths()
                .map(|r| r.display().to_string())
                .collect(),
            prompts: self
                .shared()
                .catalog
                .read()
                .map(|c| c.prompts().len())
                .unwrap_or(0),
            deep_candidates: deep::candidates(deep::ANY_FORMAT, None),
            process_capture: {
                let policy = self.shared().policy();
                if policy.enabled {
                    format!(
                        "enabled: executables under {:?}, working directories under {:?}",
                        policy.executable_roots, policy.working_directory_roots
                    )
                } else {
                    "disabled: an operator enables it in $REA_CONFIG_DIR/rea.toml ([capture] enabled = true with roots)".into()
                }
            },
            target,
        }))
    }

    /// Describe this connection's binary session: id, database, targets (one active), and
    /// ledger counts.
    #[tool(
        name = "binary_session",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn binary_session(
        &self,
        Parameters(_): Parameters<NoArgs>,
    ) -> Result<Json<SessionState>, ToolError> {
        let guard = self.session().read().await;
        let Some(s) = guard.as_ref() else {
            return Ok(Json(SessionState {
                open: false,
                session_id: None,
                dir: None,
                database: None,
                targets: vec![],
                evidence: 0,
                unresolved_unknowns: 0,
            }));
        };
        let store = s.store();
        let (_, evidence) = store.list_evidence(&crate::store::EvidenceFilter {
            limit: 0,
            ..Default::default()
        })?;
        let (_, unknowns) = store.list_unknowns(false, 0, 0)?;
        Ok(Json(SessionState {
            open: true,
            session_id: Some(s.id().to_owned()),
            dir: Some(s.dir().display().to_string()),
            database: Some(store.path().display().to_string()),
            targets: store.targets()?,
            evidence,
            unresolved_unknowns: unknowns,
        }))
    }

    /// Open a file or macOS .app bundle as the active target: lists its documents and stores the
    /// complete procedure inventory of each. The first open starts the binary session; opening
    /// another target switches to it and keeps the ledger. A JavaScript/Electron directory is not
    /// opened here: use analyze_javascript_application.
    #[tool(
        name = "open_binary",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    pub async fn open_binary(
        &self,
        Parameters(args): Parameters<OpenArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<Observed<Opened>>, ToolError> {
        let path = self.checked_path(std::path::Path::new(&args.path))?;
        let token = context.meta.get_progress_token();
        let admit_path = path.clone();
        let target =
            tokio::task::spawn_blocking(move || native::admit_opened(&admit_path)).await??;
        let total = target.documents.len();
        let mut inventories = Vec::with_capacity(total);
        for (i, doc) in target.documents.iter().enumerate() {
            if context.ct.is_cancelled() {
                return Err(ToolError(
                    "open_binary was cancelled; nothing was opened".into(),
                ));
            }
            progress(
                &context,
                &token,
                i,
                total,
                format!("reading procedures of {}", doc.name),
            )
            .await;
            let d = doc.clone();
            inventories.push(tokio::task::spawn_blocking(move || native::procedures(&d)).await??);
        }
        progress(
            &context,
            &token,
            total,
            total,
            "storing the inventory".into(),
        )
        .await;
        let counts: Vec<u64> = inventories.iter().map(|p| p.len() as u64).collect();
        let store = self.ensure_session().await?;
        store.open_target(new_target(&target, inventories)).await?;
        let session_id = {
            let mut guard = self.session().write().await;
            let s = guard
                .as_mut()
                .ok_or_else(|| ToolError("the session was closed while opening".into()))?;
            s.set_active(target.clone());
            s.id().to_owned()
        };
        let opened = Opened {
            session_id,
            path: target.path.display().to_string(),
            name: target.name.clone(),
            sha256: target.sha256.clone(),
            format: target.format.clone(),
            architecture: target.architecture.clone(),
            bundle: target.bundle.clone(),
            documents: target
                .documents
                .iter()
                .zip(counts)
                .map(|(d, n)| OpenedDocument {
                    name: d.name.clone(),
                    format: d.format.clone(),
                    architecture: d.architecture.clone(),
                    role: d.role.clone(),
                    procedures: n,
                })
                .collect(),
        };
        Ok(Json(
            observe(
                &store,
                "open_binary",
                Some(subject_of(&target)),
                &args,
                opened,
                Qualifiers::observed(),
            )
            .await?,
        ))
    }

    /// End the binary session: closes its database and deletes it with its Evidence ledger and
    /// residual unknowns. Export first (export_evidence) to keep a copy.
    #[tool(
        name = "close_binary",
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    pub async fn close_binary(
        &self,
        Parameters(_): Parameters<NoArgs>,
    ) -> Result<Json<Closed>, ToolError> {
        let session = self
            .session()
            .write()
            .await
            .take()
            .ok_or_else(|| ToolError("no binary session is open".into()))?;
        let (_, evidence) = session
            .store()
            .list_evidence(&crate::store::EvidenceFilter::default())?;
        let id = session.id().to_owned();
        // The files are deleted in the background; the session is gone from listings already.
        drop(tokio::task::spawn_blocking(move || session.close()).await??);
        Ok(Json(Closed {
            session_id: id,
            evidence_dropped: evidence,
        }))
    }

    /// Resume a session left by a server that stopped or was killed (a session no live process
    /// holds). Its ledger, targets and unknowns are as they were at the last commit.
    #[tool(
        name = "resume_session",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            open_world_hint = false
        )
    )]
    pub async fn resume_session(
        &self,
        Parameters(args): Parameters<ResumeArgs>,
    ) -> Result<Json<SessionInfo>, ToolError> {
        let mut guard = self.session().write().await;
        if let Some(s) = guard.as_ref() {
            return Err(ToolError(format!(
                "session {} is open on this connection; close_binary it first",
                s.id()
            )));
        }
        let state_dir = self.shared().settings.state_dir.clone();
        let id = match args.session_id {
            Some(id) => id,
            None => {
                let free: Vec<SessionInfo> = session::list(&state_dir)?
                    .into_iter()
                    .filter(|s| !s.live)
                    .collect();
                match free.as_slice() {
                    [one] => one.id.clone(),
                    [] => return Err(ToolError("no session is waiting to be resumed".into())),
                    many => {
                        let ids: Vec<&str> = many.iter().map(|s| s.id.as_str()).collect();
                        return Err(ToolError(format!(
                            "several sessions can be resumed; name one: {}",
                            ids.join(", ")
                        )));
                    }
                }
            }
        };
        let dir = state_dir.clone();
        let resumed_id = id.clone();
        let resumed =
            tokio::task::spawn_blocking(move || BinarySession::resume(&dir, &resumed_id)).await??;
        *guard = Some(resumed);
        drop(guard);
        let mut info = session::show(&state_dir, &id)?;
        info.live = true;
        Ok(Json(info))
    }
}

fn tempfile_in(dir: &std::path::Path) -> bool {
    let probe: PathBuf = dir.join(format!(".rea-doctor-{}", std::process::id()));
    let ok = std::fs::write(&probe, b"").is_ok();
    let _ = std::fs::remove_file(&probe);
    ok
}
