//! Procedure-level analysis tools on the active target: strings, info, assembly, callers,
//! callees, cross-references and function dossiers, through the built-in provider or a deep one.

use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::{tool, tool_router};

use super::{ToolError, Tools};
use crate::investigation::{
    About, AssemblyArgs, AssemblyResult, CallGraphEdges, Callers, Dossier, Observed, ProcedureArgs,
    ProcedureDetails, SearchStringsArgs, StringsFound, Xrefs, XrefsArgs,
};

#[tool_router(router = analysis_tools, vis = "pub(crate)")]
impl Tools {
    /// Search the strings of a document of the active target (printable ASCII/UTF-8, and UTF-16LE
    /// in PE files) by substring or regular expression; each match has its section and address.
    #[tool(
        name = "search_strings",
        title = "Search strings",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn search_strings(
        &self,
        Parameters(args): Parameters<SearchStringsArgs>,
    ) -> Result<Json<Observed<StringsFound>>, ToolError> {
        Ok(Json(self.investigation.search_strings(args).await?))
    }

    /// Look up one procedure: start address, name, raw name, name source, size and section.
    /// Accepts an address inside a procedure (for example a faulting address) and reports the
    /// procedure containing it.
    #[tool(
        name = "procedure_info",
        title = "Procedure info",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn procedure_info(
        &self,
        Parameters(args): Parameters<ProcedureArgs>,
    ) -> Result<Json<Observed<ProcedureDetails>>, ToolError> {
        Ok(Json(self.investigation.procedure_info(args).await?))
    }

    /// Disassemble a procedure in paged instruction windows (iced-x86 for x86/x86-64, yaxpeax-arm
    /// for arm64), or with a deep provider candidate when provider_id names one.
    #[tool(
        name = "procedure_assembly",
        title = "Procedure assembly",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn procedure_assembly(
        &self,
        Parameters(args): Parameters<AssemblyArgs>,
    ) -> Result<Json<Observed<AssemblyResult>>, ToolError> {
        Ok(Json(self.investigation.procedure_assembly(args).await?))
    }

    /// What a procedure calls: direct calls and tail jumps resolved to procedures or imports;
    /// indirect transfers are listed as unresolved, never guessed (a switch's jump through a
    /// recognised table is resolved to its cases).
    #[tool(
        name = "procedure_callees",
        title = "Procedure callees",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn procedure_callees(
        &self,
        Parameters(args): Parameters<ProcedureArgs>,
    ) -> Result<Json<Observed<About<CallGraphEdges>>>, ToolError> {
        Ok(Json(self.investigation.procedure_callees(args).await?))
    }

    /// Which procedures call this one directly (or tail-jump to it), with the call sites.
    #[tool(
        name = "procedure_callers",
        title = "Procedure callers",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn procedure_callers(
        &self,
        Parameters(args): Parameters<ProcedureArgs>,
    ) -> Result<Json<Observed<About<Callers>>>, ToolError> {
        Ok(Json(self.investigation.procedure_callers(args).await?))
    }

    /// Code and data references to an address: instructions whose branch target or computed
    /// memory operand is the address (with their procedure), and pointers to it in data sections.
    #[tool(
        name = "xrefs",
        title = "Cross-references",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn xrefs(
        &self,
        Parameters(args): Parameters<XrefsArgs>,
    ) -> Result<Json<Observed<Xrefs>>, ToolError> {
        Ok(Json(self.investigation.xrefs(args).await?))
    }

    /// A dossier of one procedure in one call: info, callers, callees, unresolved transfers,
    /// strings and imports it references, and its first instructions.
    #[tool(
        name = "analyze_function",
        title = "Analyze function",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn analyze_function(
        &self,
        Parameters(args): Parameters<ProcedureArgs>,
    ) -> Result<Json<Observed<About<Dossier>>>, ToolError> {
        Ok(Json(self.investigation.analyze_function(args).await?))
    }
}
