//! The Evidence record: what one successful observation was, who made it, and how sure it is.
//!
//! A record's id is `ev_` + SHA-256 of its canonical JSON (RFC 8785, JCS). The time a record was
//! stored is row metadata in the ledger, never part of the hash, so observing the same thing twice
//! yields the same id and the ledger keeps one row.

mod canonical;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::EvidenceId;
use crate::vocabulary::{Architecture, Format};

/// What an observation is about: the target as it was when observed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Subject {
    /// File or bundle name of the target.
    pub name: String,
    /// Lowercase hex SHA-256 of the target's bytes (for a bundle: of its file list and digests).
    pub sha256: String,
    /// Container format: elf, macho, macho-universal, pe, app-bundle, raw or javascript-app.
    pub format: Format,
    /// Architecture, `multi` for several slices, or `unknown`.
    pub architecture: Architecture,
    /// Canonical path of the target when it was observed.
    pub path: String,
}

/// Who produced an observation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ProviderStamp {
    /// Provider id: `auto` for the built-in provider, or a deep candidate's id.
    pub id: String,
    /// Human name of the provider.
    pub name: String,
    /// Version of the provider that produced the observation.
    pub version: String,
}

impl ProviderStamp {
    /// The built-in native provider of this build of rea.
    pub fn builtin() -> Self {
        Self {
            id: "auto".into(),
            name: "rea built-in provider".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        }
    }
}

/// How directly the result was seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Confidence {
    /// Read directly from the subject.
    Observed,
    /// Computed from observed facts by a fixed procedure.
    Derived,
    /// A judgement that goes beyond what was read.
    Inferred,
}

/// On whose word the result rests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Authority {
    /// The bytes of the shipped artifact.
    ShippedArtifact,
    /// A controlled, bounded run of the program.
    ControlledReplay,
    /// An evaluation of Evidence already in the ledger.
    LedgerEvaluation,
    /// The analyst's own statement.
    AnalystInference,
    /// The host rea runs on: its settings, directories and the tools found on its PATH.
    HostEnvironment,
}

impl Confidence {
    /// Wire text of the value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Observed => "observed",
            Self::Derived => "derived",
            Self::Inferred => "inferred",
        }
    }
}

impl Authority {
    /// Wire text of the value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ShippedArtifact => "shipped-artifact",
            Self::ControlledReplay => "controlled-replay",
            Self::LedgerEvaluation => "ledger-evaluation",
            Self::AnalystInference => "analyst-inference",
            Self::HostEnvironment => "host-environment",
        }
    }
}

/// Where in the subject an observation was made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Location {
    /// Document (slice, image or file) the location is in, when the subject has several.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub document: Option<String>,
    /// Canonical address, when the location is an address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    /// Relative file path and line, when the location is in a source file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// 1-based line in `file`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
}

/// The immutable record of one successful observation.
///
/// `parameters` and `result` hold the typed request and result of the operation, serialized; the
/// ledger keeps heterogeneous operations in one table, so these two fields are JSON by design.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EvidenceRecord {
    /// The target observed, when the operation had one.
    pub subject: Option<Subject>,
    /// Who produced the observation.
    pub provider: ProviderStamp,
    /// The operation (tool name) that produced it.
    pub operation: String,
    /// The operation's parameters as given.
    pub parameters: serde_json::Value,
    /// The normalized result.
    pub result: serde_json::Value,
    /// How directly the result was seen.
    pub confidence: Confidence,
    /// On whose word it rests.
    pub authority: Authority,
    /// What this observation cannot tell.
    #[serde(default)]
    pub limitations: Vec<String>,
    /// Where in the subject it was made.
    #[serde(default)]
    pub locations: Vec<Location>,
    /// Other Evidence this record rests on; each must already be in the ledger.
    #[serde(default)]
    pub links: Vec<EvidenceId>,
}

/// Why a record could not be put into canonical form.
#[derive(Debug, thiserror::Error)]
#[error("evidence record cannot be serialized canonically: {0}")]
pub struct CanonicalError(#[from] serde_json::Error);

impl EvidenceRecord {
    /// The record's canonical JSON (RFC 8785): the bytes its id is the digest of. The same
    /// bytes as [`canonical_json`] of the record, written from its JSON tree in one pass.
    pub fn canonical_json(&self) -> Result<String, CanonicalError> {
        let value = serde_json::to_value(self)?;
        let mut out = String::with_capacity(512);
        canonical::write_value(&value, &mut out);
        Ok(out)
    }

    /// The record's id: `ev_` + SHA-256 of its canonical JSON.
    pub fn id(&self) -> Result<EvidenceId, CanonicalError> {
        Ok(EvidenceId::from_digest_of(
            self.canonical_json()?.as_bytes(),
        ))
    }
}

/// RFC 8785 canonical JSON of any serializable value.
pub fn canonical_json<T: Serialize + ?Sized>(value: &T) -> Result<String, CanonicalError> {
    Ok(serde_jcs::to_string(value)?)
}

/// A record as the ledger keeps it: the record, its id, sequence number and time of storing.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct StoredEvidence {
    /// `ev_` + SHA-256 of the record's canonical JSON.
    pub id: EvidenceId,
    /// Order in which the ledger first stored the record (1-based).
    pub seq: i64,
    /// When the ledger first stored the record (RFC 3339, UTC). Not part of the id.
    pub created_at: String,
    /// The record.
    pub record: EvidenceRecord,
}

/// An observed record of the shipped artifact with no subject, limitations, locations or links,
/// for tests that need a record and care only about its operation and JSON.
#[cfg(test)]
pub(crate) fn test_record(
    operation: &str,
    parameters: serde_json::Value,
    result: serde_json::Value,
) -> EvidenceRecord {
    EvidenceRecord {
        subject: None,
        provider: ProviderStamp::builtin(),
        operation: operation.into(),
        parameters,
        result,
        confidence: Confidence::Observed,
        authority: Authority::ShippedArtifact,
        limitations: vec![],
        locations: vec![],
        links: vec![],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record(result: serde_json::Value) -> EvidenceRecord {
        test_record(
            "list_documents",
            json!({"b": 1, "a": [1.0, 2.5, 1e21]}),
            result,
        )
    }

    #[test]
    fn canonical_json_sorts_keys_and_formats_numbers_per_rfc8785() {
        let text = canonical_json(&json!({"b": 1, "a": [1.0, 2.5, 1e21, "\u{e9}"]})).unwrap();
        assert_eq!(text, r#"{"a":[1,2.5,1e+21,"é"],"b":1}"#);
    }

    #[test]
    fn same_observation_same_id_and_different_observation_different_id() {
        let a = record(json!({"documents": ["ls"]}));
        let b = record(json!({"documents": ["ls"]}));
        let c = record(json!({"documents": ["cat"]}));
        assert_eq!(a.id().unwrap(), b.id().unwrap());
        assert_ne!(a.id().unwrap(), c.id().unwrap());
        assert!(a.id().unwrap().as_str().starts_with("ev_"));
        assert_eq!(a.id().unwrap().as_str().len(), 3 + 64);
    }
}
