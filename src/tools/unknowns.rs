//! Residual-unknown tools: `record_unknown`, `update_unknown`, `list_unknowns`.

use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{ToolError, next_offset, page_limit};
use crate::ids::{EvidenceId, UnknownId};
use crate::server::ReaServer;
use crate::store::{NewUnknown, Resolution, UnknownHead, UnknownStatus, UnknownUpdate};

/// Arguments of `record_unknown`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordArgs {
    /// The open question, stated so that Evidence could settle it.
    pub question: String,
    /// Evidence ids of this ledger that bear on it.
    #[serde(default)]
    pub evidence_ids: Vec<EvidenceId>,
    /// A note.
    #[serde(default)]
    pub note: Option<String>,
}

/// Arguments of `update_unknown`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateArgs {
    /// The unknown (unk_…).
    pub unknown_id: UnknownId,
    /// The head revision you read; the update is refused if another revision came first.
    pub expected_revision: i64,
    /// New status: open, investigating, blocked, contradicted or resolved.
    pub status: UnknownStatus,
    /// With status resolved: verified (needs supporting_evidence_ids), withdrawn or out-of-scope
    /// (need a rationale).
    #[serde(default)]
    pub resolution: Option<Resolution>,
    /// Why; required for withdrawn and out-of-scope.
    #[serde(default)]
    pub rationale: Option<String>,
    /// The question reworded; omit to keep it.
    #[serde(default)]
    pub question: Option<String>,
    /// Evidence ids of this ledger supporting the revision.
    #[serde(default)]
    pub supporting_evidence_ids: Vec<EvidenceId>,
    /// Evidence ids of this ledger contradicting it.
    #[serde(default)]
    pub contradicting_evidence_ids: Vec<EvidenceId>,
    /// A note.
    #[serde(default)]
    pub note: Option<String>,
}

/// Arguments of `list_unknowns`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListArgs {
    /// Include resolved unknowns (default: only current non-resolved heads).
    #[serde(default)]
    pub include_resolved: bool,
    /// Rows to skip.
    #[serde(default)]
    pub offset: u64,
    /// Rows to return (default 50, at most 500).
    #[serde(default)]
    pub limit: Option<u64>,
}

/// A page of unknown heads.
#[derive(Debug, Serialize, JsonSchema)]
pub struct UnknownPage {
    /// Heads by id.
    pub unknowns: Vec<UnknownHead>,
    /// Heads selected in all.
    pub total: u64,
    /// Offset of the next page, when there is one.
    pub next_offset: Option<u64>,
}

#[tool_router(router = unknown_tools, vis = "pub(crate)")]
impl ReaServer {
    /// Record a residual unknown: an open question the investigation has not settled. Returns its
    /// id and revision 1.
    #[tool(
        name = "record_unknown",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            open_world_hint = false
        )
    )]
    pub async fn record_unknown(
        &self,
        Parameters(args): Parameters<RecordArgs>,
    ) -> Result<Json<UnknownHead>, ToolError> {
        if args.question.trim().is_empty() {
            return Err(ToolError("question must not be empty".into()));
        }
        let store = self.session_store().await?;
        Ok(Json(
            store
                .record_unknown(NewUnknown {
                    question: args.question,
                    supporting: args.evidence_ids,
                    note: args.note,
                })
                .await?,
        ))
    }

    /// Revise a residual unknown in place (a new revision becomes its head). Resolving as
    /// verified needs at least one supporting Evidence id from this ledger; withdrawn and
    /// out-of-scope need a rationale.
    #[tool(
        name = "update_unknown",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            open_world_hint = false
        )
    )]
    pub async fn update_unknown(
        &self,
        Parameters(args): Parameters<UpdateArgs>,
    ) -> Result<Json<UnknownHead>, ToolError> {
        let store = self.session_store().await?;
        Ok(Json(
            store
                .update_unknown(UnknownUpdate {
                    id: args.unknown_id,
                    expected_revision: args.expected_revision,
                    status: args.status,
                    resolution: args.resolution,
                    rationale: args.rationale,
                    question: args.question,
                    supporting: args.supporting_evidence_ids,
                    contradicting: args.contradicting_evidence_ids,
                    note: args.note,
                })
                .await?,
        ))
    }

    /// List residual unknowns at their head revision: by default only those not resolved.
    #[tool(
        name = "list_unknowns",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn list_unknowns(
        &self,
        Parameters(args): Parameters<ListArgs>,
    ) -> Result<Json<UnknownPage>, ToolError> {
        let store = self.session_store().await?;
        let limit = page_limit(args.limit);
        let (unknowns, total) = store.list_unknowns(args.include_resolved, args.offset, limit)?;
        let next = next_offset(args.offset, unknowns.len(), total);
        Ok(Json(UnknownPage {
            unknowns,
            total,
            next_offset: next,
        }))
    }
}
