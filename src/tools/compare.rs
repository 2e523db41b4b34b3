//! Function-level tools: `compare_procedures` and `call_paths`.

use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::{tool, tool_router};

use super::{ToolError, Tools};
use crate::investigation::{
    CallPaths, CallPathsArgs, CompareProceduresArgs, Observed, ProcedureDiffPage,
};

#[tool_router(router = compare_tools, vis = "pub(crate)")]
impl Tools {
    /// Match every procedure of two inspected targets (by manifest id), stripped or not: by name,
    /// masked bytes, control-flow shape, then similarity; each match has its reason and score.
    /// Lists unchanged, changed (size, blocks, callees, strings, constants), added and removed
    /// procedures with exact totals, one page at a time.
    #[tool(
        name = "compare_procedures",
        title = "Compare procedures",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn compare_procedures(
        &self,
        Parameters(args): Parameters<CompareProceduresArgs>,
    ) -> Result<Json<Observed<ProcedureDiffPage>>, ToolError> {
        Ok(Json(self.investigation.compare_procedures(args).await?))
    }

    /// Shortest direct call paths (calls and tail jumps) between two procedures of the active
    /// target, with their exact count and the indirect calls that could hide a shorter path.
    #[tool(
        name = "call_paths",
        title = "Call paths",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn call_paths(
        &self,
        Parameters(args): Parameters<CallPathsArgs>,
    ) -> Result<Json<Observed<CallPaths>>, ToolError> {
        Ok(Json(self.investigation.call_paths(args).await?))
    }
}
