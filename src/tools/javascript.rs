//! `analyze_javascript_application`: static analysis of a JavaScript/Electron application
//! directory, `app.asar`, or `.app` holding one. Needs no open_binary.

use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, tool, tool_router};

use super::{ToolError, Tools, progress};
use crate::investigation::{AnalyzeArgs, Analyzed, Observed};

#[tool_router(router = javascript_tools, vis = "pub(crate)")]
impl Tools {
    /// Analyze a JavaScript/Electron application without running it: package facts, module graph,
    /// main/preload/renderer processes, IPC channels matched across processes, contextBridge
    /// APIs, navigation, every BrowserWindow/BrowserView/webview configuration and findings for
    /// insecure settings, each with file, line and column. Reads asar archives in place.
    #[tool(
        name = "analyze_javascript_application",
        title = "Analyze JavaScript application",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn analyze_javascript_application(
        &self,
        Parameters(args): Parameters<AnalyzeArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<Observed<Analyzed>>, ToolError> {
        Ok(Json(
            self.investigation
                .analyze_javascript_application(args, progress(&context))
                .await?,
        ))
    }
}
