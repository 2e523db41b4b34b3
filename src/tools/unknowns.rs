//! Residual-unknown tools: `record_unknown`, `update_unknown`, `list_unknowns`.

use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::{tool, tool_router};

use super::{ToolError, Tools};
use crate::investigation::{
    ListUnknownsArgs, RecordUnknownArgs, UnknownHead, UnknownPage, UpdateUnknownArgs,
};

#[tool_router(router = unknown_tools, vis = "pub(crate)")]
impl Tools {
    /// Record a residual unknown: an open question the investigation has not settled. Returns its
    /// id and revision 1.
    #[tool(
        name = "record_unknown",
        title = "Record unknown",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            open_world_hint = false
        )
    )]
    pub async fn record_unknown(
        &self,
        Parameters(args): Parameters<RecordUnknownArgs>,
    ) -> Result<Json<UnknownHead>, ToolError> {
        Ok(Json(self.investigation.record_unknown(args).await?))
    }

    /// Revise a residual unknown in place (a new revision becomes its head). Resolving as
    /// verified needs at least one supporting Evidence id from this ledger; withdrawn and
    /// out-of-scope need a rationale.
    #[tool(
        name = "update_unknown",
        title = "Update unknown",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            open_world_hint = false
        )
    )]
    pub async fn update_unknown(
        &self,
        Parameters(args): Parameters<UpdateUnknownArgs>,
    ) -> Result<Json<UnknownHead>, ToolError> {
        Ok(Json(self.investigation.update_unknown(args).await?))
    }

    /// List residual unknowns at their head revision: by default only those not resolved.
    #[tool(
        name = "list_unknowns",
        title = "List unknowns",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn list_unknowns(
        &self,
        Parameters(args): Parameters<ListUnknownsArgs>,
    ) -> Result<Json<UnknownPage>, ToolError> {
        Ok(Json(self.investigation.list_unknowns(args)?))
    }
}
