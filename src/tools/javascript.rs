//! `analyze_javascript_application`: static analysis of a JavaScript/Electron application
//! directory, `app.asar`, or `.app` holding one. Needs no open_binary; the first analysis starts
//! the binary session so its Evidence has a ledger.

use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::model::ProgressNotificationParam;
use rmcp::service::RequestContext;
use rmcp::{RoleServer, tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Observed, ToolError, inline};
use crate::analyzers::javascript::{self, JsAnalysis};
use crate::evidence::{Authority, Confidence, EvidenceRecord, ProviderStamp, Subject};
use crate::ids::{ManifestId, OccurrenceId};
use crate::server::ReaServer;
use crate::store::{OccurrenceRow, insert_evidence, insert_manifest, insert_occurrences};

/// Arguments of `analyze_javascript_application`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnalyzeArgs {
    /// A JavaScript/Electron application directory (with package.json), an app.asar file, or a
    /// .app bundle whose Contents/Resources/app.asar exists.
    pub input_path: String,
}

/// The analysis, with the id under which its graph completes like an artifact manifest.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Analyzed {
    /// `agm_` id of the application graph (modules, processes, channels, windows, exposed
    /// APIs); the same for a directory and the asar packed from it.
    pub graph_id: ManifestId,
    /// The analysis: package, module graph, processes, IPC map, windows, findings, occurrences.
    #[serde(flatten)]
    pub analysis: JsAnalysis,
}

/// The canonical form of what makes the graph: relative paths only, so a directory and the asar
/// packed from it share one id.
#[derive(Serialize)]
struct GraphKey<'a> {
    modules: &'a [javascript::Module],
    processes: &'a [javascript::ProcessEntry],
    ipc: &'a [javascript::IpcChannel],
    windows: &'a [javascript::Window],
    exposed_apis: &'a [javascript::ExposedApi],
}

fn graph_id(a: &JsAnalysis) -> Result<ManifestId, ToolError> {
    let key = GraphKey {
        modules: &a.modules,
        processes: &a.processes,
        ipc: &a.ipc,
        windows: &a.windows,
        exposed_apis: &a.exposed_apis,
    };
    Ok(ManifestId::from_digest_of(
        crate::evidence::canonical_json(&key)?.as_bytes(),
    ))
}

fn kind_name(kind: &javascript::OccurrenceKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

#[tool_router(router = javascript_tools, vis = "pub(crate)")]
impl ReaServer {
    /// Analyze a JavaScript/Electron application without running it: package facts, module graph,
    /// main/preload/renderer processes, IPC channels matched across processes, contextBridge
    /// APIs, navigation, every BrowserWindow/BrowserView/webview configuration and findings for
    /// insecure settings, each with file, line and column. Reads asar archives in place.
    #[tool(
        name = "analyze_javascript_application",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn analyze_javascript_application(
        &self,
        Parameters(args): Parameters<AnalyzeArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<Observed<Analyzed>>, ToolError> {
        let path = self.checked_path(std::path::Path::new(&args.input_path))?;
        let token = context.meta.get_progress_token();
        let peer = context.peer.clone();
        let input = path.clone();
        let handle = tokio::runtime::Handle::current();
        let analysis = tokio::task::spawn_blocking(move || {
            let given = input.path().display().to_string();
            let deadline = crate::fsroot::Deadline::analysis();
            javascript::analyze_opened(&input, &given, &deadline, &mut |p| {
                if let Some(t) = &token
                    && (p.files_done % 50 == 0 || p.files_done == p.files_total)
                {
                    let mut n = ProgressNotificationParam::new(t.clone(), p.files_done as f64);
                    n.total = Some(p.files_total as f64);
                    n.message = Some(p.current.clone());
                    let peer = peer.clone();
                    handle.spawn(async move { peer.notify_progress(n).await });
                }
            })
        })
        .await??;
        let id = graph_id(&analysis)?;
        let store = self.ensure_session().await?;
        let subject = Subject {
            name: path
                .path()
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            sha256: id.as_str().trim_start_matches("agm_").to_owned(),
            format: "javascript-app".into(),
            architecture: "javascript".into(),
            path: path.path().display().to_string(),
        };
        let rows: Vec<OccurrenceRow> = analysis
            .occurrences
            .iter()
            .map(|o| {
                let kind = kind_name(&o.kind);
                let place = format!("{}:{}:{}", o.file, o.line, o.column);
                let item = [id.as_str(), &o.file, &kind, &place, &o.value].join("\0");
                OccurrenceRow {
                    id: OccurrenceId::from_digest_of(item.as_bytes()),
                    part: o.file.clone(),
                    kind,
                    value: o.value.clone(),
                }
            })
            .collect();
        let result = Analyzed {
            graph_id: id.clone(),
            analysis,
        };
        let record = EvidenceRecord {
            subject: Some(subject.clone()),
            provider: ProviderStamp::builtin(),
            operation: "analyze_javascript_application".into(),
            parameters: serde_json::to_value(&args)?,
            result: serde_json::to_value(&result)?,
            confidence: Confidence::Observed,
            authority: Authority::ShippedArtifact,
            limitations: result.analysis.limitations.clone(),
            locations: vec![],
            links: vec![],
        };
        let stored = record.clone();
        let outcome = store
            .write(move |conn| {
                let outcome = insert_evidence(conn, &stored)?;
                insert_manifest(conn, &id, &outcome.id, &subject.sha256, 1, true)?;
                insert_occurrences(conn, &id, &outcome.id, &rows)?;
                Ok(outcome)
            })
            .await?;
        Ok(Json(Observed {
            result,
            evidence: inline(outcome, record),
        }))
    }
}
