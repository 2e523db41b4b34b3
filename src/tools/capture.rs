//! Runtime tools: `capture_process_scenario` (offered only while the operator's policy enables
//! process capture) and `compare_process_captures`.

use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, tool, tool_router};

use super::{ToolError, Tools, cancellation};
use crate::investigation::{CaptureComparison, Captured, CompareCapturesArgs, Observed, Scenario};

#[tool_router(router = capture_tools, vis = "pub(crate)")]
impl Tools {
    /// Run one bounded, operator-approved scenario of a program and record what happened: exit
    /// code or signal, times, peak memory, capped outputs, the limit that ended it, and for a
    /// crash the faulting address mapped to the active target's procedure. The policy is checked
    /// before anything starts; network is off unless asked and allowed.
    #[tool(
        name = "capture_process_scenario",
        title = "Capture process scenario",
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    pub async fn capture_process_scenario(
        &self,
        Parameters(args): Parameters<Scenario>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<Observed<Captured>>, ToolError> {
        let cancel = cancellation(&context);
        Ok(Json(
            self.investigation
                .capture_process_scenario(args, cancel.token())
                .await?,
        ))
    }

    /// Compare two retained process captures: exit status, outputs after the normalization rules
    /// given, limits hit, faults. A truncated output is never called equal to another.
    #[tool(
        name = "compare_process_captures",
        title = "Compare process captures",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn compare_process_captures(
        &self,
        Parameters(args): Parameters<CompareCapturesArgs>,
    ) -> Result<Json<Observed<CaptureComparison>>, ToolError> {
        Ok(Json(
            self.investigation.compare_process_captures(args).await?,
        ))
    }
}
