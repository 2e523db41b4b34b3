//! Evidence records of observations, and results that carry the Evidence they were recorded as.

use schemars::JsonSchema;
use serde::Serialize;

/// A JSON object, as the envelope's schema describes its nested records.
type JsonObject = serde_json::Map<String, serde_json::Value>;

use super::Result;
use crate::evidence::{Authority, Confidence, EvidenceRecord, Location, ProviderStamp, Subject};
use crate::ids::EvidenceId;
use crate::providers::native::Target;
use crate::store::{RecordOutcome, Recording, Store};

/// The Evidence a result was recorded as, inline in the result.
///
/// Every tool's output schema carries this envelope, so its schema names the fields and their
/// JSON types and no more: the subject, provider, confidence and authority are described in
/// full once, by `get_evidence`'s record, instead of in each of the thirty schemas of
/// `tools/list`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct EvidenceInline {
    /// `ev_` + SHA-256 of the record's canonical JSON; cite it for every observation you report.
    #[schemars(with = "String")]
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
    #[schemars(with = "JsonObject")]
    pub subject: Option<Subject>,
    /// Who produced it.
    #[schemars(with = "JsonObject")]
    pub provider: ProviderStamp,
    /// How directly the result was seen.
    #[schemars(with = "String")]
    pub confidence: Confidence,
    /// On whose word it rests.
    #[schemars(with = "String")]
    pub authority: Authority,
    /// What this observation cannot tell. Present only when there is something to say; left
    /// out of the schema (to keep `tools/list` small), which allows it like any other member.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schemars(skip)]
    pub limitations: Vec<String>,
    /// Other Evidence it rests on, ids; present only when there are some, and left out of the
    /// schema like `limitations`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schemars(skip)]
    pub links: Vec<EvidenceId>,
}

impl EvidenceInline {
    /// The inline form of `record`, stored as `outcome` says.
    pub fn new(outcome: RecordOutcome, record: EvidenceRecord) -> EvidenceInline {
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
}

/// A result with its Evidence.
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
pub(crate) struct Qualifiers {
    pub confidence: Confidence,
    pub authority: Authority,
    pub provider: ProviderStamp,
    pub limitations: Vec<String>,
    pub locations: Vec<Location>,
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

    /// Linked to these records.
    pub fn linked(mut self, links: Vec<EvidenceId>) -> Self {
        self.links = links;
        self
    }

    /// At this location.
    pub fn at(mut self, location: Location) -> Self {
        self.locations = vec![location];
        self
    }
}

/// A location in one document, optionally at one address.
pub(crate) fn in_document(document: &str, address: Option<String>) -> Location {
    Location {
        document: Some(document.to_owned()),
        address,
        file: None,
        line: None,
    }
}

/// The subject of observations of `target`.
pub fn subject_of(target: &Target) -> Subject {
    Subject {
        name: target.name.clone(),
        sha256: target.sha256.clone(),
        format: target.format,
        architecture: target.architecture,
        path: target.path.display().to_string(),
    }
}

/// The record of one observation: `operation` with `parameters` gave `result` about `subject`.
pub(crate) fn record<P: Serialize, T: Serialize>(
    operation: &str,
    subject: Option<Subject>,
    parameters: &P,
    result: &T,
    q: Qualifiers,
) -> Result<EvidenceRecord> {
    Ok(EvidenceRecord {
        subject,
        provider: q.provider,
        operation: operation.to_owned(),
        parameters: serde_json::to_value(parameters)?,
        result: serde_json::to_value(result)?,
        confidence: q.confidence,
        authority: q.authority,
        limitations: q.limitations,
        locations: q.locations,
        links: q.links,
    })
}

/// Commits `recording` and returns `result` with its primary record inline, once durable.
pub(crate) async fn commit<T>(
    store: &Store,
    recording: Recording,
    result: T,
) -> Result<Observed<T>> {
    let primary = recording.primary.clone();
    let committed = store.commit(recording).await?;
    Ok(Observed {
        result,
        evidence: EvidenceInline::new(committed.primary, primary),
    })
}

/// Records one observation (a recording of one record) and returns `result` with it inline.
pub(crate) async fn observe<P: Serialize, T: Serialize>(
    store: &Store,
    operation: &str,
    subject: Option<Subject>,
    parameters: &P,
    result: T,
    q: Qualifiers,
) -> Result<Observed<T>> {
    let record = record(operation, subject, parameters, &result, q)?;
    commit(store, Recording::of(record), result).await
}
