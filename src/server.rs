//! The MCP edge: rea's rmcp handler. Each connection gets its own [`Investigation`] (one binary
//! session per connection); the handler serves the guided prompts and completion by hand, hands
//! tool calls to the tool router of `tools/`, and forwards catalog changes to clients
//! (`notifications/prompts/list_changed` for initialize-handshake clients, `subscriptions/listen`
//! streams for 2026-07-28 clients).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{Arc, RwLock};

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestParams,
    CompleteResult, CompletionInfo, ContentBlock, GetPromptRequestParams, GetPromptResponse,
    GetPromptResult, Implementation, InitializeRequestParams, InitializeResult, ListPromptsResult,
    ListToolsResult, PaginatedRequestParams, Prompt, PromptArgument, PromptMessage,
    ProtocolVersion, Reference, ResultType, Role, ServerCapabilities, ServerConfig,
    SubscriptionFilter, Tool,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use tokio::sync::broadcast;

use crate::completion;
use crate::investigation::{
    CapturePolicy, Investigation, MAX_ARGUMENT_BYTES, is_javascript_directory,
};
use crate::prompts::{Catalog, PromptDef, RenderContext, render};
use crate::settings::{Principal, Settings};
use crate::tools::Tools;

/// A change clients should hear about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// The prompt catalog changed.
    Prompts,
    /// The tool catalog changed.
    Tools,
}

/// State shared by every connection of one `rea serve` process.
#[derive(Debug)]
pub struct Shared {
    /// Operator settings.
    pub settings: Arc<Settings>,
    /// The prompt catalog; replaced in place when prompt files change.
    pub catalog: RwLock<Catalog>,
    /// Catalog changes, fanned out to every connection.
    pub changes: broadcast::Sender<Change>,
    /// The process-capture policy from `$REA_CONFIG_DIR/rea.toml`; disabled when absent. Every
    /// connection's investigation holds this handle.
    policy: Arc<CapturePolicy>,
    /// Why `rea.toml` was last refused, so the same refusal is logged once, not at every reload.
    policy_refusal: std::sync::Mutex<Option<String>>,
    /// Connection handlers and the tasks serving them that are alive: a handler lives while its
    /// client is connected or a call of its is still running.
    connections: tokio::sync::watch::Sender<usize>,
    /// The `[sessions]` table of `rea.toml`, read at start.
    limits: crate::settings::SessionLimits,
    /// Live binary sessions of every connection, held to `limits.max_live`.
    budget: Arc<crate::investigation::SessionBudget>,
    /// Binary sessions opened by stateless HTTP requests, by session id: no MCP session holds
    /// them, so the server does, until they sit idle for `limits.idle_timeout`.
    stateless: std::sync::Mutex<std::collections::HashMap<String, Parked>>,
}

/// A binary session held for stateless requests, whose it is, and when a request last used it.
struct Parked {
    investigation: Arc<Investigation>,
    owner: Principal,
    last_used: std::time::Instant,
}

impl std::fmt::Debug for Parked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Parked")
            .field("last_used", &self.last_used)
            .finish()
    }
}

impl Shared {
    /// Completes a path argument beneath the allowed roots, or the working directory when none
    /// are set (see [`completion::paths`]).
    pub fn complete_path(
        &self,
        family: completion::Family,
        typed: &str,
    ) -> completion::CompletionPage {
        let roots: Vec<std::path::PathBuf> = self
            .settings
            .allowed_roots
            .paths()
            .map(std::path::Path::to_path_buf)
            .collect();
        let cwd = std::env::current_dir().unwrap_or_else(|_| std::path::PathBuf::from("/"));
        completion::paths::complete(family, &roots, &cwd, typed, completion::MAX_VALUES)
    }

    /// Shared state with the built-in prompts and the operator's prompt files loaded.
    pub fn new(settings: Settings) -> Arc<Shared> {
        let limits = crate::settings::SessionLimits::load(settings.config_dir.as_deref())
            .unwrap_or_else(|error| {
                tracing::warn!(%error, "session limits refused; using the defaults");
                crate::settings::SessionLimits::default()
            });
        let shared = Arc::new(Shared {
            limits,
            budget: crate::investigation::SessionBudget::new(
                limits.max_live,
                limits.max_live_per_principal,
            ),
            stateless: Default::default(),
            settings: Arc::new(settings),
            catalog: RwLock::new(Catalog::default()),
            changes: broadcast::channel(64).0,
            policy: Arc::default(),
            policy_refusal: Default::default(),
            connections: tokio::sync::watch::channel(0).0,
        });
        shared.reload_config();
        shared
    }

    /// Connection handlers and their tasks alive now: connected clients, plus disconnected ones
    /// whose last call or notification task is still finishing.
    pub fn connections(&self) -> usize {
        *self.connections.borrow()
    }

    /// Waits until no connection handler or task is alive: every client has gone and every call
    /// it made has finished.
    pub async fn all_connections_gone(&self) {
        let mut live = self.connections.subscribe();
        let _ = live.wait_for(|n| *n == 0).await;
    }

    /// Re-reads the capture policy and the prompt files. When capture is switched on or off, the
    /// tool catalog and the prompts that draw on it change, and clients are told.
    pub fn reload_config(&self) {
        if let Some(dir) = &self.settings.config_dir {
            let reloaded = self.policy.reload(dir);
            let refusal = reloaded.as_ref().err().map(ToString::to_string);
            let repeated = {
                let mut last = self
                    .policy_refusal
                    .lock()
                    .unwrap_or_else(|p| p.into_inner());
                let repeated = refusal.is_some() && *last == refusal;
                *last = refusal;
                repeated
            };
            match reloaded {
                Ok(toggled) => {
                    if toggled {
                        tracing::info!("process capture policy changed");
                        let _ = self.changes.send(Change::Tools);
                        let _ = self.changes.send(Change::Prompts);
                    }
                }
                Err(_) if repeated => {}
                Err(error) => {
                    tracing::warn!(%error, "capture policy refused; keeping the previous one")
                }
            }
        }
        self.reload_prompts();
    }

    /// Whether the capture policy in force enables process capture.
    pub fn capture_enabled(&self) -> bool {
        self.policy.enabled()
    }

    /// An investigation under these settings and this capture policy, with no session yet.
    pub fn investigation(&self) -> Investigation {
        Investigation::new(self.settings.clone(), self.policy.clone())
            .with_budget(self.budget.clone())
    }

    /// The investigation holding binary session `id` for stateless requests of `principal`,
    /// marked used now. Another principal's session is not there for them: `None`, as for an id
    /// that names nothing, and its idle clock is not reset.
    fn parked(&self, id: &str, principal: &Principal) -> Option<Arc<Investigation>> {
        let mut parked = self.stateless.lock().unwrap_or_else(|p| p.into_inner());
        let entry = parked.get_mut(id).filter(|p| p.owner == *principal)?;
        entry.last_used = std::time::Instant::now();
        Some(entry.investigation.clone())
    }

    /// Holds `investigation`'s binary session for later stateless requests of its principal
    /// that name it.
    fn park(&self, id: String, investigation: Arc<Investigation>) {
        let owner = investigation.principal();
        self.stateless
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(
                id,
                Parked {
                    investigation,
                    owner,
                    last_used: std::time::Instant::now(),
                },
            );
    }

    /// Stops holding binary session `id` for stateless requests.
    fn release(&self, id: &str) {
        self.stateless
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(id);
    }

    /// Releases the stateless binary sessions idle for longer than the idle timeout (they stay
    /// on disk, resumable); returns how many.
    pub fn release_idle(&self) -> usize {
        let idle = self.limits.idle_timeout;
        let mut parked = self.stateless.lock().unwrap_or_else(|p| p.into_inner());
        let before = parked.len();
        parked.retain(|_, p| p.last_used.elapsed() < idle);
        before - parked.len()
    }

    /// The `[sessions]` limits this server runs with.
    pub fn session_limits(&self) -> crate::settings::SessionLimits {
        self.limits
    }

    /// Guided prompts offered now.
    pub fn prompt_count(&self) -> usize {
        self.prompts().len()
    }

    /// Re-reads the operator's prompt files; announces a change when the offered prompts differ.
    pub fn reload_prompts(&self) -> bool {
        let Some(dir) = self.settings.prompts_dir() else {
            return false;
        };
        let known = crate::tools::all_tool_names();
        let changed = self
            .catalog
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .reload(&dir, &known);
        if changed {
            tracing::info!(dir = %dir.display(), "prompt catalog changed");
            let _ = self.changes.send(Change::Prompts);
        }
        changed
    }

    fn prompt(&self, name: &str) -> Option<PromptDef> {
        self.catalog
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(name)
    }

    fn prompts(&self) -> Vec<PromptDef> {
        self.catalog
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .prompts()
    }
}

/// rea's MCP handler: one per connection.
#[derive(Clone)]
pub struct ReaServer {
    shared: Arc<Shared>,
    /// The connection's investigation: its binary session, and every operation.
    investigation: Arc<Investigation>,
    /// The tools over that investigation, and their router.
    tools: Tools,
    router: Arc<ToolRouter<Tools>>,
    /// Catalog changes since `initialize`, held until `notifications/initialized` starts their
    /// delivery: subscribing before the handshake answers means no change made after it is missed.
    pending_changes: Arc<std::sync::Mutex<Option<broadcast::Receiver<Change>>>>,
    /// The same for `subscriptions/listen`: rmcp acknowledges a subscription before `listen`
    /// runs, so the receiver is taken when the filter is accepted, ahead of the acknowledgment.
    pending_listens: Arc<std::sync::Mutex<std::collections::VecDeque<broadcast::Receiver<Change>>>>,
    /// Dropped with the last clone of this handler, which happens once the client is gone and
    /// no call of its is running; tasks serving the connection watch it to end with it.
    connection: Arc<ConnectionGuard>,
    /// Made by the HTTP transport: a 2026-07-28 request is stateless.
    http: bool,
}

/// Counts one handler or task in [`Shared::connections`] while it lives.
struct Live(Arc<Shared>);

impl Live {
    fn new(shared: Arc<Shared>) -> Self {
        shared.connections.send_modify(|n| *n += 1);
        Live(shared)
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.0.connections.send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// Counts a connection for as long as its handler lives, and tells the tasks that serve it when
/// it is gone.
struct ConnectionGuard {
    _live: Live,
    gone: tokio::sync::watch::Sender<()>,
}

impl ConnectionGuard {
    fn new(shared: Arc<Shared>) -> Self {
        ConnectionGuard {
            _live: Live::new(shared),
            gone: tokio::sync::watch::channel(()).0,
        }
    }
}

impl ReaServer {
    /// A handler for a new connection.
    pub fn new(shared: Arc<Shared>) -> Self {
        ReaServer::with_investigation(shared.clone(), Arc::new(shared.investigation()), false)
    }

    /// A handler for a connection or request of the HTTP transport, where requests of MCP
    /// 2026-07-28 come statelessly, each to a handler of its own, and name their binary session.
    pub fn for_http(shared: Arc<Shared>) -> Self {
        ReaServer::with_investigation(shared.clone(), Arc::new(shared.investigation()), true)
    }

    fn with_investigation(
        shared: Arc<Shared>,
        investigation: Arc<Investigation>,
        http: bool,
    ) -> Self {
        let counted = shared.clone();
        let tools = Tools::new(
            investigation.clone(),
            Arc::new(move || counted.prompt_count()),
        );
        Self {
            investigation,
            tools,
            router: Arc::new(Tools::router()),
            pending_changes: Arc::default(),
            pending_listens: Arc::default(),
            connection: Arc::new(ConnectionGuard::new(shared.clone())),
            shared,
            http,
        }
    }

    /// The tools currently offered: every tool, except that capture_process_scenario is offered
    /// only while the operator's policy enables process capture.
    pub fn live_tools(&self) -> Vec<Tool> {
        let mut tools = crate::tools::live(&self.router, self.shared.capture_enabled());
        // Every tool takes the one optional property that addresses a binary session (needed by
        // stateless requests; a connection's own session is implied).
        for tool in &mut tools {
            let mut schema = (*tool.input_schema).clone();
            if let Some(serde_json::Value::Object(properties)) = schema.get_mut("properties") {
                properties.insert(
                    SESSION_ARGUMENT.into(),
                    serde_json::json!({ "type": "string", "description": SESSION_DESCRIPTION }),
                );
            }
            tool.input_schema = Arc::new(schema);
        }
        tools
    }

    fn live_tool_names(&self) -> BTreeSet<String> {
        self.live_tools()
            .into_iter()
            .map(|t| t.name.to_string())
            .collect()
    }

    /// Renders a prompt, or explains why it cannot be rendered.
    pub fn render_prompt(
        &self,
        name: &str,
        arguments: BTreeMap<String, String>,
    ) -> Result<GetPromptResult, ErrorData> {
        let prompt = self.shared.prompt(name).ok_or_else(|| {
            ErrorData::invalid_params(
                format!("unknown prompt {name:?}; prompts/list names the prompts"),
                None,
            )
        })?;
        if let Some(missing) = prompt
            .arguments
            .iter()
            .find(|a| a.required && arguments.get(&a.name).is_none_or(|v| v.trim().is_empty()))
        {
            return Err(ErrorData::invalid_params(
                format!(
                    "prompt {name:?} needs the argument {:?}: {}",
                    missing.name, missing.description
                ),
                None,
            ));
        }
        // An undeclared argument is not rendered, and does not steer the workflow either.
        let javascript_target = prompt.argument("target_path").is_some()
            && arguments
                .get("target_path")
                .is_some_and(|p| is_javascript_directory(&self.shared.settings, Path::new(p)));
        let tools = self.live_tool_names();
        let text = render(
            &prompt,
            &arguments,
            &RenderContext {
                tools: &tools,
                javascript_target,
            },
        );
        Ok(
            GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
                .with_description(prompt.description),
        )
    }
}

fn wire_prompt(def: &PromptDef) -> Prompt {
    let arguments = def
        .arguments
        .iter()
        .map(|a| {
            PromptArgument::new(&a.name)
                .with_description(&a.description)
                .with_required(a.required)
        })
        .collect();
    let mut p = Prompt::new(&def.name, Some(&def.description), Some(arguments));
    if let Some(t) = &def.title {
        p = p.with_title(t);
    }
    p
}

/// The last guard of the message bound: operations with long output page or cut it themselves,
/// and a result that is still larger than `bound` bytes of JSON is replaced by an error result
/// saying so, rather than sent to a client that may close the connection over it.
fn bounded(
    tool: &str,
    response: CallToolResponse,
    bound: Result<u64, crate::investigation::InvestigationError>,
) -> CallToolResponse {
    let CallToolResponse::Complete(result) = &response else {
        return response;
    };
    let bound = match bound {
        Ok(bound) => bound,
        Err(e) => {
            return CallToolResult::error(vec![ContentBlock::text(format!(
                "{tool}: the result was not sent: {e}"
            ))])
            .into();
        }
    };
    // Measured as it goes on the wire (the JSON-RPC envelope adds a few dozen bytes).
    let size = serde_json::to_vec(result).map_or(u64::MAX, |v| v.len() as u64);
    if size <= bound {
        return response;
    }
    // The bounded form still names what the call recorded, so the row is never out of reach.
    let recorded = result
        .structured_content
        .as_ref()
        .and_then(|c| c.get("evidence"))
        .and_then(|e| e.get("id"))
        .and_then(|id| id.as_str())
        .map_or_else(
            || "What was recorded stays in the ledger.".to_owned(),
            |id| format!("It was recorded as {id}, which stays in the ledger."),
        );
    CallToolResult::error(vec![ContentBlock::text(format!(
        "{tool}: the result takes {size} bytes, more than the message bound of {bound} bytes \
         ([messages] max_result_bytes in rea.toml), so it was not sent; ask for a smaller page \
         (a lower limit or a narrower range). {recorded}"
    ))])
    .into()
}

/// The tool argument naming the binary session a call works on.
const SESSION_ARGUMENT: &str = "session";
/// Its description in every tool's input schema.
const SESSION_DESCRIPTION: &str = "Binary session id (stateless HTTP)";

impl ReaServer {
    /// Who makes this request: over HTTP the principal the transport authenticated (it puts
    /// one on every request it lets through), else the local process.
    fn principal(&self, context: &RequestContext<RoleServer>) -> Result<Principal, ErrorData> {
        let authenticated = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Principal>())
            .cloned();
        match (authenticated, self.http) {
            (Some(principal), _) => Ok(principal),
            (None, false) => Ok(Principal::local()),
            // Not through the authenticating layer: nobody's, so nothing of anyone's.
            (None, true) => Err(ErrorData::invalid_request(
                "this request was not authenticated",
                None,
            )),
        }
    }
}

fn is_modern(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28)
}

impl ServerHandler for ReaServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_completions()
                .enable_prompts()
                .enable_prompts_list_changed()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new("rea", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "rea investigates shipped software. Start with the guided prompts (prompts/list) or call tools directly; \
             every tool result carries its Evidence inline.",
        )
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        crate::transport::refuse_cursor(request.as_ref())?;
        let modern = is_modern(&context);
        Ok(ListPromptsResult {
            result_type: Some(ResultType::COMPLETE),
            meta: None,
            next_cursor: None,
            ttl_ms: modern.then_some(0),
            cache_scope: modern.then_some(CacheScope::Public),
            prompts: self.shared.prompts().iter().map(wire_prompt).collect(),
        })
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        // Prompt arguments are strings; a client that sends another JSON type gets its JSON text.
        let arguments: BTreeMap<String, String> = request
            .arguments
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| match v {
                serde_json::Value::String(s) => (k, s),
                other => (k, other.to_string()),
            })
            .collect();
        Ok(self.render_prompt(&request.name, arguments)?.into())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let Reference::Prompt(prompt_ref) = &request.r#ref else {
            return Err(ErrorData::invalid_params(
                "rea completes guided-prompt arguments only (ref/prompt)",
                None,
            ));
        };
        let prompt = self.shared.prompt(&prompt_ref.name).ok_or_else(|| {
            ErrorData::invalid_params(format!("unknown prompt {:?}", prompt_ref.name), None)
        })?;
        let family = prompt
            .argument(&request.argument.name)
            .and_then(|a| a.completion);
        let page = match family {
            None => Default::default(),
            Some(family) if family.is_path() => {
                self.shared.complete_path(family, &request.argument.value)
            }
            Some(family) => {
                let document = request
                    .context
                    .as_ref()
                    .and_then(|c| c.get_argument("document"))
                    .map(String::as_str);
                let store = self.investigation.session_store();
                completion::complete(
                    store.as_deref().map(std::ops::Deref::deref),
                    family,
                    &request.argument.value,
                    document,
                    CompletionInfo::MAX_VALUES,
                )
            }
        };
        let total = u32::try_from(page.total).unwrap_or(u32::MAX);
        let info = CompletionInfo::with_pagination(page.values, Some(total), page.has_more)
            .map_err(|e| ErrorData::internal_error(e, None))?;
        Ok(CompleteResult::new(info))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        if self.router.get(&name).is_none() || !self.live_tool_names().contains(&name) {
            return Err(ErrorData::invalid_params(
                format!("unknown tool {name:?}; tools/list names the tools"),
                None,
            ));
        }
        let principal = self.principal(&context)?;
        // The transport keeps an MCP session to the principal that started it, so a connection
        // has one principal; should a call come as another, it reaches nothing of the first's.
        if !self.investigation.act_as(principal.clone()) {
            return Err(ErrorData::invalid_request(
                "this connection belongs to another caller",
                None,
            ));
        }
        // Arguments over the cap of a whole call are refused before anything reads them: what
        // no field's own cap bounds (a scenario, a spec) is bounded here, and nothing is kept.
        let size = request
            .arguments
            .as_ref()
            .map_or(0, |a| serde_json::to_vec(a).map_or(usize::MAX, |v| v.len()));
        if size > MAX_ARGUMENT_BYTES {
            return Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                "{name}: the arguments take {size} bytes of JSON, over the cap of \
                 {MAX_ARGUMENT_BYTES} bytes for one call; nothing was done or recorded"
            ))])
            .into());
        }
        // Every path below ends in one answer, which then meets the message bound.
        let answer: Result<CallToolResponse, ErrorData> = async {
            let mut request = request;
            // `session` addresses a binary session; no tool's own arguments have it.
            let named = match request
                .arguments
                .as_mut()
                .and_then(|a| a.remove(SESSION_ARGUMENT))
            {
                None => None,
                Some(serde_json::Value::String(id)) => Some(id),
                Some(other) => {
                    return Err(ErrorData::invalid_params(
                        format!("`{SESSION_ARGUMENT}` is a session id (a string), not {other}"),
                        None,
                    ));
                }
            };
            let stateless = self.http && is_modern(&context);
            if !stateless {
                // A connection has one binary session; naming another is a mistake worth saying,
                // and so is naming one when none is open: the call would act on a session the
                // caller did not mean (a new one, or none).
                match (&named, self.investigation.session_id()) {
                    (Some(id), Some(own)) if *id != own => {
                        return Err(ErrorData::invalid_params(
                            format!("this connection's binary session is {own}, not {id}"),
                            None,
                        ));
                    }
                    (Some(id), None) => {
                        return Err(ErrorData::invalid_params(
                            format!(
                                "this connection has no binary session open, so none is {id}: a call acts on its connection's own session (resume_session with session_id {id} makes that one this connection's)"
                            ),
                            None,
                        ));
                    }
                    _ => {}
                }
                // Arguments that do not fit a tool's struct come back from rmcp as in-band tool
                // errors (isError) naming the mismatch, so the caller can correct them.
                return self
                    .router
                    .call(ToolCallContext::new(&self.tools, request, context))
                    .await;
            }
            let Some(id) = named else {
                // This request's own investigation: a session it starts is held for the requests
                // that name it, never left behind unreachable.
                self.investigation.mark_stateless();
                let answer = self
                    .router
                    .call(ToolCallContext::new(&self.tools, request, context))
                    .await;
                if let Some(id) = self.investigation.session_id() {
                    self.shared.park(id, self.investigation.clone());
                }
                return answer;
            };
            let Some(investigation) = self.shared.parked(&id, &principal) else {
                return Err(ErrorData::invalid_params(
                    format!(
                        "no live binary session {id} on this server (closed, or released after sitting idle): resume_session it"
                    ),
                    None,
                ));
            };
            let tools = Tools::new(investigation.clone(), {
                let shared = self.shared.clone();
                Arc::new(move || shared.prompt_count())
            });
            let answer = self
                .router
                .call(ToolCallContext::new(&tools, request, context))
                .await;
            if investigation.session_id().is_none() {
                // close_binary ended it.
                self.shared.release(&id);
            }
            answer
        }
        .await;
        Ok(bounded(
            &name,
            answer?,
            self.investigation.max_result_bytes(),
        ))
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        crate::transport::refuse_cursor(request.as_ref())?;
        let modern = is_modern(&context);
        Ok(ListToolsResult {
            result_type: Some(ResultType::COMPLETE),
            tools: self.live_tools(),
            meta: None,
            next_cursor: None,
            ttl_ms: modern.then_some(0),
            cache_scope: modern.then_some(CacheScope::Public),
        })
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.router.get(name).cloned()
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        *self
            .pending_changes
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some(self.shared.changes.subscribe());
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        // An initialize-handshake client hears catalog changes as list_changed notifications.
        let pending = self
            .pending_changes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        let changes = pending.unwrap_or_else(|| self.shared.changes.subscribe());
        let peer = context.peer.clone();
        // Ends with the connection, not at the next catalog change after it.
        let mut gone = self.connection.gone.subscribe();
        let live = Live::new(self.shared.clone());
        tokio::spawn(async move {
            // Declared after `_live`, so it is dropped first: once the count says this task is
            // gone, it no longer listens.
            let _live = live;
            let mut changes = changes;
            loop {
                let change = tokio::select! {
                    change = changes.recv() => change,
                    _ = gone.changed() => break,
                };
                let sent = match change {
                    Ok(Change::Prompts) => peer.notify_prompt_list_changed().await,
                    Ok(Change::Tools) => peer.notify_tool_list_changed().await,
                    Err(broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(broadcast::error::RecvError::Closed) => break,
                };
                if sent.is_err() {
                    break;
                }
            }
        });
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        self.pending_listens
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push_back(self.shared.changes.subscribe());
        Some(requested.supported_by(&self.get_info().capabilities))
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let pending = self
            .pending_listens
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop_front();
        let mut changes = pending.unwrap_or_else(|| self.shared.changes.subscribe());
        let prompts = context.accepted().prompts_list_changed == Some(true);
        let tools = context.accepted().tools_list_changed == Some(true);
        loop {
            tokio::select! {
                _ = context.cancelled() => return Ok(()),
                change = changes.recv() => {
                    let sent = match change {
                        Ok(Change::Prompts) if prompts => context.sink().notify_prompt_list_changed().await,
                        Ok(Change::Tools) if tools => context.sink().notify_tool_list_changed().await,
                        Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => Ok(()),
                        Err(broadcast::error::RecvError::Closed) => return Ok(()),
                    };
                    if sent.is_err() {
                        return Ok(());
                    }
                }
            }
        }
    }
}

/// How long the config directory must be quiet after a change before it is reloaded: an editor's
/// save is several events (write, rename, attribute change), and they make one reload.
const CONFIG_SETTLE: std::time::Duration = std::time::Duration::from_millis(50);

/// Longest a burst of changes delays its reload.
const CONFIG_SETTLE_MAX: std::time::Duration = std::time::Duration::from_secs(1);

/// Whether `event` changes a file the config watcher owns: `rea.toml`, the `prompts/` folder, or
/// a `*.toml` file in it. Reads are not changes: reloading opens and reads these very files, and
/// reacting to that would reload forever.
fn changes_owned_file(dir: &Path, event: &notify::Event) -> bool {
    use notify::EventKind;
    use notify::event::ModifyKind;
    let changes = match event.kind {
        EventKind::Create(_) | EventKind::Remove(_) | EventKind::Any => true,
        EventKind::Modify(ModifyKind::Metadata(_)) => false,
        EventKind::Modify(_) => true,
        EventKind::Access(_) | EventKind::Other => false,
    };
    let prompts = dir.join("prompts");
    changes
        && event.paths.iter().any(|p| {
            p == &dir.join(crate::settings::CONFIG_FILE_NAME)
                || p == &prompts
                || (p.parent() == Some(prompts.as_path())
                    && p.extension().is_some_and(|e| e == "toml"))
        })
}

/// Watches `$REA_CONFIG_DIR` and reloads the capture policy and the prompt catalog when a file
/// it owns changes (see [`changes_owned_file`]), once per burst of changes. The watcher lives as
/// long as the returned handle.
pub fn watch_config(shared: Arc<Shared>) -> Option<notify::RecommendedWatcher> {
    use notify::{RecursiveMode, Watcher};
    let dir = shared.settings.config_dir.clone()?;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let owned = dir.clone();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if event.is_ok_and(|e| changes_owned_file(&owned, &e)) {
            let _ = tx.send(());
        }
    })
    .map_err(|e| tracing::warn!(error = %e, "cannot watch the config directory"))
    .ok()?;
    if let Err(e) = watcher.watch(&dir, RecursiveMode::Recursive) {
        tracing::warn!(error = %e, dir = %dir.display(), "cannot watch the config directory; prompt files load at start only");
        return None;
    }
    tokio::spawn(async move {
        while rx.recv().await.is_some() {
            let deadline = tokio::time::Instant::now() + CONFIG_SETTLE_MAX;
            loop {
                let settle = (tokio::time::Instant::now() + CONFIG_SETTLE).min(deadline);
                match tokio::time::timeout_at(settle, rx.recv()).await {
                    Ok(Some(())) if tokio::time::Instant::now() < deadline => continue,
                    Ok(None) => return,
                    _ => break,
                }
            }
            shared.reload_config();
        }
    });
    Some(watcher)
}

#[cfg(test)]
mod bound_tests {
    use super::*;

    fn text(response: &CallToolResponse) -> (Option<bool>, String) {
        let CallToolResponse::Complete(r) = response else {
            panic!("not a complete result");
        };
        let text = r
            .content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect();
        (r.is_error, text)
    }

    /// A result refused for its size names the Evidence id it was recorded as (issue 25), so the
    /// row the call committed is never out of reach.
    #[test]
    fn a_refused_result_names_the_evidence_it_recorded_regression_25() {
        let id = format!("ev_{}", "ab".repeat(32));
        let big = CallToolResult::structured(
            serde_json::json!({ "data": "x".repeat(70_000), "evidence": { "id": id } }),
        );
        let (error, message) = text(&bounded("record_unknown", big.into(), Ok(65_536)));
        assert_eq!(error, Some(true));
        assert!(
            message.ends_with(&format!(
                "It was recorded as {id}, which stays in the ledger."
            )),
            "{message}"
        );
    }

    /// The last guard: a result over the bound is replaced by an error naming its size and the
    /// bound; one within it goes out unchanged.
    #[test]
    fn results_over_the_bound_are_refused_not_sent() {
        let big = CallToolResult::structured(serde_json::json!({ "data": "x".repeat(70_000) }));
        let size = serde_json::to_vec(&big).unwrap().len();
        let (error, message) = text(&bounded("some_tool", big.clone().into(), Ok(65_536)));
        assert_eq!(error, Some(true));
        assert!(
            message.starts_with(&format!(
                "some_tool: the result takes {size} bytes, more than the message bound of 65536 bytes"
            )),
            "{message}"
        );
        let CallToolResponse::Complete(kept) =
            bounded("some_tool", big.clone().into(), Ok(1 << 20))
        else {
            panic!("not a complete result");
        };
        assert_eq!(kept, big);
        let refused = bounded(
            "some_tool",
            big.into(),
            Err(crate::settings::MessagesError::TooSmall {
                path: "/c/rea.toml".into(),
                value: 5,
            }
            .into()),
        );
        let (error, message) = text(&refused);
        assert_eq!(error, Some(true));
        assert!(
            message.contains("max_result_bytes = 5 is below"),
            "{message}"
        );
    }
}
