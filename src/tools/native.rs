//! Native analysis tools on the active target: documents, procedures and their search.

use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::{tool, tool_router};

use super::{ToolError, Tools};
use crate::investigation::{
    Documents, ListDocumentsArgs, ListProceduresArgs, Observed, ProcedurePage, SearchProceduresArgs,
};

#[tool_router(router = native_tools, vis = "pub(crate)")]
impl Tools {
    /// List the documents of the active target: each slice of a universal Mach-O, each executable
    /// image of an .app bundle, or the file itself.
    #[tool(
        name = "list_documents",
        title = "List documents",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn list_documents(
        &self,
        Parameters(args): Parameters<ListDocumentsArgs>,
    ) -> Result<Json<Observed<Documents>>, ToolError> {
        Ok(Json(self.investigation.list_documents(args).await?))
    }

    /// List procedures of the active target's complete inventory (all documents or one), by
    /// address, a page at a time. Addresses are canonical lowercase 0x hex.
    #[tool(
        name = "list_procedures",
        title = "List procedures",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn list_procedures(
        &self,
        Parameters(args): Parameters<ListProceduresArgs>,
    ) -> Result<Json<Observed<ProcedurePage>>, ToolError> {
        Ok(Json(self.investigation.list_procedures(args).await?))
    }

    /// Search procedure names of the active target by substring or prefix. Matching uses the same
    /// normalization as completion (Unicode case folding and compatibility forms).
    #[tool(
        name = "search_procedures",
        title = "Search procedures",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn search_procedures(
        &self,
        Parameters(args): Parameters<SearchProceduresArgs>,
    ) -> Result<Json<Observed<ProcedurePage>>, ToolError> {
        Ok(Json(self.investigation.search_procedures(args).await?))
    }
}
