//! MCP tools and their catalog: one file per family. Each tool takes a typed argument struct (its
//! schema comes from the struct), calls one operation of the [`Investigation`] and returns its
//! typed result with the Evidence inline; failures the caller should read become tool results
//! with `isError`. Tools hold no logic of their own: progress and cancellation are the only
//! things they translate from MCP.

mod analysis;
mod annotations;
mod artifacts;
mod capture;
mod compare;
mod depth;
mod javascript;
mod ledger;
mod native;
pub mod schema;
mod session;
mod unknowns;

use std::collections::BTreeSet;
use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{ContentBlock, IntoContents, ProgressNotificationParam, Tool};
use rmcp::service::RequestContext;

use crate::investigation::{
    CAPTURE_OPERATION, Cancel, Investigation, InvestigationError, NoProgress, Progress,
};

/// Name of the tool that runs programs; it is in the catalog only while capture is enabled.
pub const CAPTURE_TOOL: &str = CAPTURE_OPERATION;

/// A failure the caller should read: becomes a tool result with `isError` and this message.
#[derive(Debug)]
pub struct ToolError(pub String);

impl From<InvestigationError> for ToolError {
    fn from(e: InvestigationError) -> Self {
        ToolError(e.to_string())
    }
}

impl IntoContents for ToolError {
    fn into_contents(self) -> Vec<ContentBlock> {
        vec![ContentBlock::text(self.0)]
    }
}

/// The tools of one connection: its investigation, and how many guided prompts the server
/// offers (doctor reports it; the prompt catalog is the server's).
#[derive(Clone)]
pub struct Tools {
    investigation: Arc<Investigation>,
    prompts: Arc<dyn Fn() -> usize + Send + Sync>,
}

impl Tools {
    /// The tools over `investigation`; `prompts` counts the guided prompts offered.
    pub fn new(
        investigation: Arc<Investigation>,
        prompts: Arc<dyn Fn() -> usize + Send + Sync>,
    ) -> Tools {
        Tools {
            investigation,
            prompts,
        }
    }

    /// Every tool rea has, routed to its function, with its schemas in the portable subset
    /// (see [`schema`]). The portable pass costs more than generating the router, and its result
    /// never changes: made once, cloned for each connection.
    pub fn router() -> ToolRouter<Tools> {
        static ROUTER: std::sync::OnceLock<ToolRouter<Tools>> = std::sync::OnceLock::new();
        ROUTER
            .get_or_init(|| schema::portable_router(Self::router_as_generated()))
            .clone()
    }

    /// The router as the tool macros generate it.
    fn router_as_generated() -> ToolRouter<Tools> {
        Self::session_tools()
            + Self::ledger_tools()
            + Self::unknown_tools()
            + Self::annotation_tools()
            + Self::native_tools()
            + Self::analysis_tools()
            + Self::artifact_tools()
            + Self::javascript_tools()
            + Self::capture_tools()
            + Self::compare_tools()
            + Self::depth_tools()
    }
}

/// The tools offered now: every tool, except that capture_process_scenario is offered only while
/// the operator's policy enables process capture.
pub fn live(router: &ToolRouter<Tools>, capture_enabled: bool) -> Vec<Tool> {
    router
        .list_all()
        .into_iter()
        .filter(|t| capture_enabled || t.name != CAPTURE_TOOL)
        .collect()
}

/// Names of every tool rea has (whether or not currently offered).
pub fn all_tool_names() -> BTreeSet<String> {
    Tools::router()
        .list_all()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect()
}

/// Progress of a call, sent to the client in order as progress notifications when the request
/// carries a progress token.
fn progress(context: &RequestContext<RoleServer>) -> Arc<dyn Progress> {
    let Some(token) = context.meta.get_progress_token() else {
        return Arc::new(NoProgress);
    };
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(u64, u64, String)>();
    let peer = context.peer.clone();
    // Ends once the operation has dropped its reporter and every report is sent.
    tokio::spawn(async move {
        while let Some((done, total, message)) = rx.recv().await {
            let mut p = ProgressNotificationParam::new(token.clone(), done as f64);
            p.total = Some(total as f64);
            p.message = Some(message);
            if peer.notify_progress(p).await.is_err() {
                break;
            }
        }
    });
    Arc::new(Reporter(tx))
}

struct Reporter(tokio::sync::mpsc::UnboundedSender<(u64, u64, String)>);

impl Progress for Reporter {
    fn report(&self, done: u64, total: u64, message: &str) {
        let _ = self.0.send((done, total, message.to_owned()));
    }
}

/// A call's cancellation token, cancelled when the client cancels the request; its watcher ends
/// with the call.
struct Cancellation {
    token: Cancel,
    watcher: tokio::task::JoinHandle<()>,
}

impl Cancellation {
    fn token(&self) -> &Cancel {
        &self.token
    }
}

impl Drop for Cancellation {
    fn drop(&mut self) {
        self.watcher.abort();
    }
}

fn cancellation(context: &RequestContext<RoleServer>) -> Cancellation {
    let token = Cancel::new();
    let (ct, cancel) = (context.ct.clone(), token.clone());
    let watcher = tokio::spawn(async move {
        ct.cancelled().await;
        cancel.cancel();
    });
    Cancellation { token, watcher }
}
