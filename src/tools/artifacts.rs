//! Artifact tools: `inspect_artifact`, `compare_artifacts`, `verify_reconstruction`.

use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::{tool, tool_router};

use super::{ToolError, Tools};
use crate::investigation::{
    CompareArgs, Comparison, InspectArgs, InventoryGraph, Observed, Verdict, VerifyArgs,
};

#[tool_router(router = artifact_tools, vis = "pub(crate)")]
impl Tools {
    /// Inspect the active target (open it first with open_binary): a reproducible manifest of its
    /// parts (agm_ id), edges (libraries, Info.plist, code signature, asar), occurrences
    /// (entitlements, signature facts, plist keys, Electron markers, URLs, exported symbols) in
    /// pages that are each Evidence, and findings — the graph and findings returned together.
    #[tool(
        name = "inspect_artifact",
        title = "Inspect artifact",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn inspect_artifact(
        &self,
        Parameters(args): Parameters<InspectArgs>,
    ) -> Result<Json<Observed<InventoryGraph>>, ToolError> {
        Ok(Json(self.investigation.inspect_artifact(args).await?))
    }

    /// Compare two inventories of this ledger by manifest id: parts added, removed and changed,
    /// edges, occurrences per kind, and procedures of changed executables. Dimensions that cannot
    /// be compared (incomplete page sets, other provider versions) are reported unknown, never
    /// equal. The comparison is Evidence linked to both inventories.
    #[tool(
        name = "compare_artifacts",
        title = "Compare artifacts",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn compare_artifacts(
        &self,
        Parameters(args): Parameters<CompareArgs>,
    ) -> Result<Json<Observed<Comparison>>, ToolError> {
        Ok(Json(self.investigation.compare_artifacts(args).await?))
    }

    /// Evaluate a finite, typed reconstruction specification (claims about parts, occurrences,
    /// procedures and comparison dimensions) against inventory and comparison Evidence retained in
    /// this ledger. Each claim is pass, fail or unknown with the Evidence it rests on; a pass never
    /// covers more than its claim. The verdict is Evidence.
    #[tool(
        name = "verify_reconstruction",
        title = "Verify reconstruction",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn verify_reconstruction(
        &self,
        Parameters(args): Parameters<VerifyArgs>,
    ) -> Result<Json<Observed<Verdict>>, ToolError> {
        Ok(Json(self.investigation.verify_reconstruction(args).await?))
    }
}
