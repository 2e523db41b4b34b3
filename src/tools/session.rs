//! Session tools: `doctor`, `binary_session`, `open_binary`, `close_binary`, `resume_session`.

use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, tool, tool_router};

use super::{ToolError, Tools, cancellation, progress};
use crate::investigation::{
    Closed, DoctorArgs, DoctorResult, NoArgs, Observed, OpenArgs, Opened, ResumeArgs, SessionInfo,
    SessionState,
};

#[tool_router(router = session_tools, vis = "pub(crate)")]
impl Tools {
    /// Check this server: version, state and config directories, deep provider candidates, and
    /// optionally whether a path would open as a target. Starts nothing and opens nothing.
    #[tool(
        name = "doctor",
        title = "Doctor",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn doctor(
        &self,
        Parameters(args): Parameters<DoctorArgs>,
    ) -> Result<Json<DoctorResult>, ToolError> {
        Ok(Json(
            self.investigation.doctor(args, (self.prompts)()).await?,
        ))
    }

    /// Describe this connection's binary session: id, database, targets (one active), and
    /// ledger counts.
    #[tool(
        name = "binary_session",
        title = "Binary session",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn binary_session(
        &self,
        Parameters(args): Parameters<NoArgs>,
    ) -> Result<Json<SessionState>, ToolError> {
        Ok(Json(self.investigation.binary_session(args)?))
    }

    /// Open a file or macOS .app bundle as the active target: lists its documents and stores the
    /// complete procedure inventory of each. The first open starts the binary session; opening
    /// another target switches to it and keeps the ledger. A JavaScript/Electron directory is not
    /// opened here: use analyze_javascript_application.
    #[tool(
        name = "open_binary",
        title = "Open binary",
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
        let (progress, cancel) = (progress(&context), cancellation(&context));
        Ok(Json(
            self.investigation
                .open_binary(args, progress.as_ref(), cancel.token())
                .await?,
        ))
    }

    /// End the binary session: closes its database and deletes it with its Evidence ledger and
    /// residual unknowns. Export first (export_evidence) to keep a copy.
    #[tool(
        name = "close_binary",
        title = "Close binary",
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    pub async fn close_binary(
        &self,
        Parameters(args): Parameters<NoArgs>,
    ) -> Result<Json<Closed>, ToolError> {
        Ok(Json(self.investigation.close_binary(args).await?))
    }

    /// Resume a session left by a server that stopped or was killed, or held by another of your
    /// connections to this server (which gives it up). Its ledger, targets and unknowns are as
    /// they were at the last commit.
    #[tool(
        name = "resume_session",
        title = "Resume session",
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
        Ok(Json(self.investigation.resume_session(args).await?))
    }
}
