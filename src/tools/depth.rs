//! Tools that read deeper than the disassembly: a procedure's pseudo-code, and a document's raw
//! bytes at an address or matching a pattern.

use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, tool, tool_router};

use super::{ToolError, Tools, cancellation, progress};
use crate::investigation::{
    BytesFound, BytesRead, Observed, PseudoCodeArgs, PseudoCodePage, ReadBytesArgs, SearchBytesArgs,
};

#[tool_router(router = depth_tools, vis = "pub(crate)")]
impl Tools {
    /// Pseudo-C of one procedure from the angr decompiler, paged by lines; calls, strings and
    /// data it shows are resolved to rea's procedures, imports and strings. Decompiled once,
    /// with progress; cancellable; past wait_seconds it says what is done and finishes in the
    /// background. Direct callees are decompiled ahead.
    #[tool(
        name = "procedure_pseudo_code",
        title = "Procedure pseudo-code",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn procedure_pseudo_code(
        &self,
        Parameters(args): Parameters<PseudoCodeArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<Observed<PseudoCodePage>>, ToolError> {
        let (progress, cancel) = (progress(&context), cancellation(&context));
        Ok(Json(
            self.investigation
                .procedure_pseudo_code(args, progress, cancel.token())
                .await?,
        ))
    }

    /// Up to 4096 bytes at an address: hex, printable text, section, symbol, procedure, and the
    /// first bytes as u8..u64 (both byte orders) and as a pointer.
    #[tool(
        name = "read_bytes",
        title = "Read bytes",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn read_bytes(
        &self,
        Parameters(args): Parameters<ReadBytesArgs>,
    ) -> Result<Json<Observed<BytesRead>>, ToolError> {
        Ok(Json(self.investigation.read_bytes(args).await?))
    }

    /// Find a hex byte pattern (`??` = any byte) in a document's sections: exact total, and each
    /// hit's address, section and procedure.
    #[tool(
        name = "search_bytes",
        title = "Search bytes",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn search_bytes(
        &self,
        Parameters(args): Parameters<SearchBytesArgs>,
    ) -> Result<Json<Observed<BytesFound>>, ToolError> {
        Ok(Json(self.investigation.search_bytes(args).await?))
    }
}
