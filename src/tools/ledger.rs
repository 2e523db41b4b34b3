//! Ledger tools: `get_evidence`, `list_evidence`, `export_evidence`.

use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{ToolError, next_offset, page_limit};
use crate::evidence::StoredEvidence;
use crate::ids::EvidenceId;
use crate::server::ReaServer;
use crate::store::{EvidenceFilter, EvidenceSummary, Store};

/// Arguments of `get_evidence`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetArgs {
    /// The Evidence id (ev_…) to read.
    pub evidence_id: EvidenceId,
}

/// Arguments of `list_evidence`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListArgs {
    /// Only Evidence of this operation (a tool name such as open_binary).
    #[serde(default)]
    pub operation: Option<String>,
    /// Rows to skip.
    #[serde(default)]
    pub offset: u64,
    /// Rows to return (default 50, at most 500).
    #[serde(default)]
    pub limit: Option<u64>,
}

/// A page of the ledger.
#[derive(Debug, Serialize, JsonSchema)]
pub struct EvidencePage {
    /// Rows in recording order.
    pub evidence: Vec<EvidenceSummary>,
    /// Rows the filter selects in all.
    pub total: u64,
    /// Offset of the next page, when there is one.
    pub next_offset: Option<u64>,
}

/// Format of an export.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema, Default)]
#[serde(rename_all = "lowercase")]
pub enum ExportFormat {
    /// A consistent copy of the whole session database (VACUUM INTO).
    #[default]
    Sqlite,
    /// One JSON object per line: id, seq, created_at, record.
    Jsonl,
}

/// Arguments of `export_evidence`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExportArgs {
    /// Destination file. Its directory must exist.
    pub path: String,
    /// sqlite (default) or jsonl.
    #[serde(default)]
    pub format: ExportFormat,
    /// Replace the destination if it exists (default false: an existing file is an error).
    #[serde(default)]
    pub overwrite: bool,
}

/// What was exported.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Exported {
    /// Canonical destination path.
    pub path: String,
    /// Format written.
    pub format: ExportFormat,
    /// Evidence rows exported.
    pub evidence: u64,
    /// Bytes written.
    pub bytes: u64,
}

/// Writes every record of `store` as JSON lines to `dest`.
pub fn export_jsonl(
    store: &Store,
    dest: &crate::fsroot::NewFile,
    overwrite: bool,
) -> Result<u64, ToolError> {
    use std::io::Write;
    if !overwrite && dest.exists() {
        return Err(ToolError(
            crate::fsroot::FsError::Exists {
                path: dest.path().to_owned(),
            }
            .to_string(),
        ));
    }
    // Written beside the destination and renamed over it: never through a link, and a failed
    // export leaves nothing behind.
    let mut temp = dest.temp().map_err(|e| ToolError(e.to_string()))?;
    let mut out = std::io::BufWriter::new(temp.file());
    let mut n = 0;
    store.all_evidence(|e: StoredEvidence| {
        serde_json::to_writer(&mut out, &e).map_err(|source| {
            crate::store::StoreError::CorruptRecord {
                id: e.id.to_string(),
                source,
            }
        })?;
        out.write_all(b"\n")
            .map_err(|source| crate::store::StoreError::Io {
                path: dest.path().to_owned(),
                source,
            })?;
        n += 1;
        Ok(())
    })?;
    out.flush()?;
    drop(out);
    temp.commit(overwrite)
        .map_err(|e| ToolError(e.to_string()))?;
    Ok(n)
}

#[tool_router(router = ledger_tools, vis = "pub(crate)")]
impl ReaServer {
    /// Read one Evidence record of this session's ledger, whole: subject, provider, operation,
    /// parameters, result, confidence, authority, limitations, locations and links.
    #[tool(
        name = "get_evidence",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn get_evidence(
        &self,
        Parameters(args): Parameters<GetArgs>,
    ) -> Result<Json<StoredEvidence>, ToolError> {
        let store = self.session_store().await?;
        store.evidence(&args.evidence_id)?.map(Json).ok_or_else(|| {
            ToolError(format!(
                "Evidence {} is not in this session's ledger",
                args.evidence_id
            ))
        })
    }

    /// List this session's Evidence in recording order, optionally of one operation, a page at a time.
    #[tool(
        name = "list_evidence",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn list_evidence(
        &self,
        Parameters(args): Parameters<ListArgs>,
    ) -> Result<Json<EvidencePage>, ToolError> {
        let store = self.session_store().await?;
        let limit = page_limit(args.limit);
        let (evidence, total) = store.list_evidence(&EvidenceFilter {
            operation: args.operation,
            offset: args.offset,
            limit,
        })?;
        let next = next_offset(args.offset, evidence.len(), total);
        Ok(Json(EvidencePage {
            evidence,
            total,
            next_offset: next,
        }))
    }

    /// Export this session's ledger to a file: a consistent SQLite copy (default) or JSON lines.
    /// Never overwrites an existing file unless overwrite is true.
    #[tool(
        name = "export_evidence",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            open_world_hint = false
        )
    )]
    pub async fn export_evidence(
        &self,
        Parameters(args): Parameters<ExportArgs>,
    ) -> Result<Json<Exported>, ToolError> {
        let dest = self
            .shared()
            .settings
            .check_new_path(std::path::Path::new(&args.path))
            .map_err(ToolError)?;
        let store = self.session_store().await?;
        let (format, overwrite, path) = (args.format, args.overwrite, dest.clone());
        let evidence = tokio::task::spawn_blocking(move || -> Result<u64, ToolError> {
            match format {
                ExportFormat::Sqlite => {
                    store.export(&path, overwrite)?;
                    Ok(store.list_evidence(&EvidenceFilter::default())?.1)
                }
                ExportFormat::Jsonl => export_jsonl(&store, &path, overwrite),
            }
        })
        .await??;
        let bytes = std::fs::symlink_metadata(dest.path())
            .map(|m| m.len())
            .unwrap_or(0);
        Ok(Json(Exported {
            path: dest.path().display().to_string(),
            format: args.format,
            evidence,
            bytes,
        }))
    }
}
