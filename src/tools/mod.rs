//! MCP tools: one file per family. Each tool takes a typed argument struct (its schema comes from
//! the struct), returns a typed result with its Evidence inline, and reports failures the caller
//! should read as tool results with `isError`.

pub(crate) mod analysis;
pub(crate) mod artifacts;
pub(crate) mod capture;
pub(crate) mod javascript;
pub(crate) mod ledger;
pub(crate) mod native;
pub mod schema;
pub(crate) mod session;
pub(crate) mod unknowns;

use std::path::Path;
use std::sync::Arc;

use rmcp::model::{ContentBlock, IntoContents};
use schemars::JsonSchema;
use serde::Serialize;

use crate::evidence::{Authority, Confidence, EvidenceRecord, Location, ProviderStamp, Subject};
use crate::ids::EvidenceId;
use crate::providers::native::Target;
use crate::server::ReaServer;
use crate::store::{RecordOutcome, Store};

/// A failure the caller should read: becomes a tool result with `isError` and this message.
#[derive(Debug)]
pub struct ToolError(pub String);

impl<E: std::fmt::Display> From<E> for ToolError {
    fn from(e: E) -> Self {
        ToolError(e.to_string())
    }
}

impl IntoContents for ToolError {
    fn into_contents(self) -> Vec<ContentBlock> {
        vec![ContentBlock::text(self.0)]
    }
}

/// The Evidence a result was recorded as, inline in the result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct EvidenceInline {
    /// `ev_` + SHA-256 of the record's canonical JSON; cite it for every observation you report.
    pub id: EvidenceId,
    /// Order of the record in the session ledger.
    pub seq: i64,
    /// When the ledger first stored the record.
    pub created_at: String,
    /// False when the ledger already held an identical observation.
    pub new: bool,
    /// The operation that produced it.
    pub operation: String,
    /// The target observed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<Subject>,
    /// Who produced it.
    pub provider: ProviderStamp,
    /// How directly the result was seen.
    pub confidence: Confidence,
    /// On whose word it rests.
    pub authority: Authority,
    /// What this observation cannot tell.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub limitations: Vec<String>,
    /// Other Evidence it rests on.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<EvidenceId>,
}

/// A tool result with its Evidence.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Observed<T> {
    /// The result.
    #[serde(flatten)]
    pub result: T,
    /// The Evidence this result is recorded as.
    pub evidence: EvidenceInline,
}

/// How an observation is qualified.
#[derive(Debug, Clone)]
pub struct Qualifiers {
    /// Confidence.
    pub confidence: Confidence,
    /// Authority.
    pub authority: Authority,
    /// Provider.
    pub provider: ProviderStamp,
    /// Limitations.
    pub limitations: Vec<String>,
    /// Locations.
    pub locations: Vec<Location>,
    /// Links.
    pub links: Vec<EvidenceId>,
}

impl Qualifiers {
    /// Read directly from the shipped artifact by the built-in provider.
    pub fn observed() -> Self {
        Self {
            confidence: Confidence::Observed,
            authority: Authority::ShippedArtifact,
            provider: ProviderStamp::builtin(),
            limitations: vec![],
            locations: vec![],
            links: vec![],
        }
    }

    /// Computed from Evidence in the ledger.
    pub fn derived() -> Self {
        Self {
            confidence: Confidence::Derived,
            authority: Authority::LedgerEvaluation,
            ..Self::observed()
        }
    }

    /// With these limitations.
    pub fn limited(mut self, limitations: Vec<String>) -> Self {
        self.limitations = limitations;
        self
    }

    /// Linked to these records.
    pub fn linked(mut self, links: Vec<EvidenceId>) -> Self {
        self.links = links;
        self
    }
}

/// The subject of observations of `target`.
pub fn subject_of(target: &Target) -> Subject {
    Subject {
        name: target.name.clone(),
        sha256: target.sha256.clone(),
        format: target.format.clone(),
        architecture: target.architecture.clone(),
        path: target.path.display().to_string(),
    }
}

/// Records `result` as Evidence of `operation` and returns it with the Evidence inline, once the
/// row is durable.
pub async fn observe<P: Serialize, T: Serialize>(
    store: &Arc<Store>,
    operation: &str,
    subject: Option<Subject>,
    parameters: &P,
    result: T,
    q: Qualifiers,
) -> Result<Observed<T>, ToolError> {
    let record = EvidenceRecord {
        subject,
        provider: q.provider,
        operation: operation.to_owned(),
        parameters: serde_json::to_value(parameters)?,
        result: serde_json::to_value(&result)?,
        confidence: q.confidence,
        authority: q.authority,
        limitations: q.limitations,
        locations: q.locations,
        links: q.links,
    };
    let outcome: RecordOutcome = store.record(record.clone()).await?;
    Ok(Observed {
        result,
        evidence: inline(outcome, record),
    })
}

/// The inline form of a stored record.
pub fn inline(outcome: RecordOutcome, record: EvidenceRecord) -> EvidenceInline {
    EvidenceInline {
        id: outcome.id,
        seq: outcome.seq,
        created_at: outcome.created_at,
        new: outcome.new,
        operation: record.operation,
        subject: record.subject,
        provider: record.provider,
        confidence: record.confidence,
        authority: record.authority,
        limitations: record.limitations,
        links: record.links,
    }
}

/// Default and largest page sizes of listings.
pub const DEFAULT_PAGE: u64 = 50;
/// Largest page a caller may ask for.
pub const MAX_PAGE: u64 = 500;

/// A page size within bounds.
pub fn page_limit(limit: Option<u64>) -> u64 {
    limit.unwrap_or(DEFAULT_PAGE).clamp(1, MAX_PAGE)
}

/// The offset of the next page, when there is one.
pub fn next_offset(offset: u64, returned: usize, total: u64) -> Option<u64> {
    let next = offset.saturating_add(returned as u64);
    (returned > 0 && next < total).then_some(next)
}

impl ReaServer {
    /// The store of the connection's binary session.
    pub(crate) async fn session_store(&self) -> Result<Arc<Store>, ToolError> {
        self.session()
            .read()
            .await
            .as_ref()
            .map(|s| s.store().clone())
            .ok_or_else(|| {
                ToolError(
                    "no binary session is open: open_binary a target or resume_session first"
                        .into(),
                )
            })
    }

    /// The store of the connection's binary session, starting the session when there is none
    /// (the first open_binary, JavaScript analysis or capture starts it).
    pub(crate) async fn ensure_session(&self) -> Result<Arc<Store>, ToolError> {
        let mut guard = self.session().write().await;
        if guard.is_none() {
            let state_dir = self.shared().settings.state_dir.clone();
            *guard = Some(
                tokio::task::spawn_blocking(move || {
                    crate::session::BinarySession::create(&state_dir)
                })
                .await??,
            );
        }
        guard
            .as_ref()
            .map(|s| s.store().clone())
            .ok_or_else(|| ToolError("no binary session could be started".into()))
    }

    /// Resolves `path` beneath the operator's allowed roots and opens it (read it through the
    /// returned descriptor, never by path again).
    pub(crate) fn checked_path(&self, path: &Path) -> Result<crate::fsroot::Opened, ToolError> {
        self.shared().settings.check_path(path).map_err(ToolError)
    }
}
