//! `analyze_javascript_application`: static analysis of a JavaScript/Electron application
//! directory, `app.asar`, or `.app` holding one. Needs no open_binary; the first analysis starts
//! the binary session so its Evidence has a ledger.

use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::observe::{self, Observed, Qualifiers};
use super::{Investigation, Progress, Result, blocking};
use crate::analyzers::javascript::{self, JsAnalysis};
use crate::evidence::Subject;
use crate::fsroot::{Deadline, Opened};
use crate::ids::{ManifestId, OccurrenceId};
use crate::store::{ManifestRegistration, OccurrenceRegistration, OccurrenceRow, Recording};
use crate::vocabulary::{Architecture, Format};

/// The operation of a JavaScript analysis record.
const ANALYZE: &str = "analyze_javascript_application";

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

/// Which analysis a path calls for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// A JavaScript/Electron application: a directory that looks like one, an `app.asar`, or a
    /// `.app` bundle with `Contents/Resources/app.asar`.
    JavaScript,
    /// Anything else opens as a binary (a file or a `.app` bundle).
    Binary,
}

/// The analysis `path` calls for (`rea analyze`).
pub fn route(path: &Path) -> Route {
    let app_without_asar = path.is_dir()
        && path.extension().is_some_and(|e| e == "app")
        && !path.join("Contents/Resources/app.asar").is_file();
    if javascript::looks_like_javascript_app(path) && !app_without_asar {
        Route::JavaScript
    } else {
        Route::Binary
    }
}

/// Whether `path` is a JavaScript/Electron application directory (and not a `.app` bundle): the
/// guided prompts start such a target at `analyze_javascript_application`.
pub fn is_javascript_directory(path: &Path) -> bool {
    path.is_dir()
        && !path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("app"))
        && javascript::looks_like_javascript_app(path)
}

/// The canonical form of what makes the graph: relative paths only, so a directory and the asar
/// packed from it share one id; and the digest of the application's files, so two versions of
/// one package whose sources parse alike do not.
#[derive(Serialize)]
struct GraphKey<'a> {
    files_sha256: &'a str,
    modules: &'a [javascript::Module],
    processes: &'a [javascript::ProcessEntry],
    ipc: &'a [javascript::IpcChannel],
    windows: &'a [javascript::Window],
    exposed_apis: &'a [javascript::ExposedApi],
}

fn graph_id(a: &JsAnalysis) -> Result<ManifestId> {
    let key = GraphKey {
        files_sha256: &a.input.files_sha256,
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

/// Runs the analysis of what `checked_path` opened (blocking, under the analysis deadline),
/// reporting every 50 files and the last.
fn analyze(input: &Opened, progress: &dyn Progress) -> Result<JsAnalysis> {
    let given = input.path().display().to_string();
    Ok(javascript::analyze_opened(
        input,
        &given,
        &Deadline::analysis(),
        &mut |p| {
            if p.files_done % 50 == 0 || p.files_done == p.files_total {
                progress.report(p.files_done as u64, p.files_total as u64, &p.current);
            }
        },
    )?)
}

/// The recording of an analysis of the application at `path`: its record, its graph registered
/// as a manifest, and its occurrences.
fn recording(
    path: &Path,
    args: &AnalyzeArgs,
    analysis: JsAnalysis,
) -> Result<(Analyzed, Recording)> {
    let id = graph_id(&analysis)?;
    let subject = Subject {
        name: path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        // What the subject names is the application: its files' digest, not the graph's.
        sha256: analysis.input.files_sha256.clone(),
        format: Format::JavascriptApp,
        architecture: Architecture::Javascript,
        path: path.display().to_string(),
    };
    let rows: Vec<OccurrenceRow> = analysis
        .occurrences
        .iter()
        .map(|o| {
            let kind = kind_name(&o.kind);
            // The place (file:line:column) is the key: one value may occur many times in a file.
            let place = format!("{}:{}:{}", o.file, o.line, o.column);
            OccurrenceRow {
                id: OccurrenceId::of(&id, &o.file, &kind, Some(&place), &o.value),
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
    let mut q = Qualifiers::observed();
    q.limitations = result.analysis.limitations.clone();
    let target_sha256 = subject.sha256.clone();
    let record = observe::record(ANALYZE, Some(subject), args, &result, q)?;
    let mut recording = Recording::of(record);
    let evidence = recording.primary_id()?;
    recording.manifest = Some(ManifestRegistration {
        id: id.clone(),
        target_sha256,
        pages: 1,
        complete: true,
    });
    recording.occurrences.push(OccurrenceRegistration {
        manifest: id,
        evidence,
        rows,
    });
    Ok((result, recording))
}

impl Investigation {
    /// `analyze_javascript_application`: the analysis, recorded with its graph and occurrences.
    pub async fn analyze_javascript_application(
        &self,
        args: AnalyzeArgs,
        progress: std::sync::Arc<dyn Progress>,
    ) -> Result<Observed<Analyzed>> {
        let input = self.checked_path(Path::new(&args.input_path))?;
        // Parameters name the path it resolved to: one observation however it was spelled.
        let args = AnalyzeArgs {
            input_path: input.path().display().to_string(),
        };
        let (result, recording) = blocking(move || {
            let analysis = analyze(&input, progress.as_ref())?;
            recording(input.path(), &args, analysis)
        })
        .await?;
        let s = self.ensure_session().await?;
        observe::commit(s.store(), recording, result).await
    }

    /// What `analyze_javascript_application` of `path` would record, without a session.
    /// Blocking.
    pub fn analyze_detached(
        &self,
        path: &Path,
        progress: &dyn Progress,
    ) -> Result<(Analyzed, Recording)> {
        let input = self.checked_path(path)?;
        let args = AnalyzeArgs {
            input_path: input.path().display().to_string(),
        };
        let analysis = analyze(&input, progress)?;
        recording(input.path(), &args, analysis)
    }
}
