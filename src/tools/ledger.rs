//! Ledger tools: `get_evidence`, `list_evidence`, `export_evidence`.

use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::{tool, tool_router};

use super::{ToolError, Tools};
use crate::investigation::{EvidencePage, EvidenceRead, ExportArgs, Exported, GetArgs, ListArgs};

#[tool_router(router = ledger_tools, vis = "pub(crate)")]
impl Tools {
    /// Read one Evidence record of this session's ledger, whole: subject, provider, operation,
    /// parameters, result, confidence, authority, limitations, locations and links. `damaged`
    /// says when the stored record no longer hashes to its id.
    #[tool(
        name = "get_evidence",
        title = "Get Evidence",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn get_evidence(
        &self,
        Parameters(args): Parameters<GetArgs>,
    ) -> Result<Json<EvidenceRead>, ToolError> {
        Ok(Json(self.investigation.get_evidence(args)?))
    }

    /// List this session's Evidence in recording order, optionally of one operation, a page at a time.
    #[tool(
        name = "list_evidence",
        title = "List Evidence",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn list_evidence(
        &self,
        Parameters(args): Parameters<ListArgs>,
    ) -> Result<Json<EvidencePage>, ToolError> {
        Ok(Json(self.investigation.list_evidence(args)?))
    }

    /// Export this session's ledger to a file: a consistent SQLite copy (default) or JSON lines.
    /// Never overwrites an existing file unless overwrite is true.
    #[tool(
        name = "export_evidence",
        title = "Export Evidence",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            open_world_hint = false
        )
    )]
    pub async fn export_evidence(
        &self,
        Parameters(args): Parameters<ExportArgs>,
    ) -> Result<Json<Exported>, ToolError> {
        Ok(Json(self.investigation.export_evidence(args).await?))
    }
}
