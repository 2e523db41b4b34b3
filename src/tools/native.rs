//! Native analysis tools on the active target: documents, procedures and their search.

use std::sync::Arc;

use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Observed, Qualifiers, ToolError, next_offset, observe, page_limit, subject_of};
use crate::providers::native::Target;
use crate::server::ReaServer;
use crate::store::{DocumentRow, ProcedureRow, Store};

/// The active target, its store and its row id.
pub(crate) struct Active {
    pub store: Arc<Store>,
    pub target: Target,
    pub target_id: i64,
}

impl ReaServer {
    /// The active target, or a tool error saying how to get one.
    pub(crate) async fn active(&self) -> Result<Active, ToolError> {
        let guard = self.session().read().await;
        let session = guard.as_ref().ok_or_else(|| {
            ToolError("no target is open: call open_binary with a file or .app bundle first".into())
        })?;
        let target = session.active().cloned().ok_or_else(|| {
            ToolError("no target is active in this session: call open_binary".into())
        })?;
        let store = session.store().clone();
        let row = store
            .active_target()?
            .ok_or_else(|| ToolError("no target is active in this session".into()))?;
        Ok(Active {
            store,
            target,
            target_id: row.id,
        })
    }
}

/// Arguments of `list_documents`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListDocumentsArgs {}

/// The documents of the active target.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Documents {
    /// Documents by name, with their procedure counts.
    pub documents: Vec<DocumentRow>,
}

/// Arguments of `list_procedures`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListProceduresArgs {
    /// Only this document (see list_documents); omit for every document of the target.
    #[serde(default)]
    pub document: Option<String>,
    /// Procedures to skip.
    #[serde(default)]
    pub offset: u64,
    /// Procedures to return (default 50, at most 500).
    #[serde(default)]
    pub limit: Option<u64>,
}

/// A page of the complete procedure inventory.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ProcedurePage {
    /// Procedures by document and address.
    pub procedures: Vec<ProcedureRow>,
    /// Procedures in the selected inventory.
    pub total: u64,
    /// Offset of the next page, when there is one.
    pub next_offset: Option<u64>,
}

/// How `search_procedures` matches.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SearchMode {
    /// The name contains the query.
    #[default]
    Substring,
    /// The name starts with the query.
    Prefix,
}

/// Arguments of `search_procedures`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchProceduresArgs {
    /// Text to find in procedure names, compared like completion (case folded, normalized).
    pub query: String,
    /// substring (default) or prefix.
    #[serde(default)]
    pub mode: SearchMode,
    /// Only this document; omit for every document of the target.
    #[serde(default)]
    pub document: Option<String>,
    /// Matches to skip.
    #[serde(default)]
    pub offset: u64,
    /// Matches to return (default 50, at most 500).
    #[serde(default)]
    pub limit: Option<u64>,
}

fn check_document(documents: &[DocumentRow], document: Option<&str>) -> Result<(), ToolError> {
    match document {
        Some(d) if !documents.iter().any(|x| x.name == d) => {
            let names: Vec<&str> = documents.iter().map(|x| x.name.as_str()).collect();
            Err(ToolError(format!(
                "no document {d:?} in the active target; documents: {}",
                names.join(", ")
            )))
        }
        _ => Ok(()),
    }
}

#[tool_router(router = native_tools, vis = "pub(crate)")]
impl ReaServer {
    /// List the documents of the active target: each slice of a universal Mach-O, each executable
    /// image of an .app bundle, or the file itself.
    #[tool(
        name = "list_documents",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn list_documents(
        &self,
        Parameters(args): Parameters<ListDocumentsArgs>,
    ) -> Result<Json<Observed<Documents>>, ToolError> {
        let a = self.active().await?;
        let documents = a.store.documents(a.target_id)?;
        Ok(Json(
            observe(
                &a.store,
                "list_documents",
                Some(subject_of(&a.target)),
                &args,
                Documents { documents },
                Qualifiers::observed(),
            )
            .await?,
        ))
    }

    /// List procedures of the active target's complete inventory (all documents or one), by
    /// address, a page at a time. Addresses are canonical lowercase 0x hex.
    #[tool(
        name = "list_procedures",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn list_procedures(
        &self,
        Parameters(args): Parameters<ListProceduresArgs>,
    ) -> Result<Json<Observed<ProcedurePage>>, ToolError> {
        let a = self.active().await?;
        check_document(&a.store.documents(a.target_id)?, args.document.as_deref())?;
        let limit = page_limit(args.limit);
        let (procedures, total) =
            a.store
                .procedures(a.target_id, args.document.as_deref(), args.offset, limit)?;
        let next = next_offset(args.offset, procedures.len(), total);
        let page = ProcedurePage {
            procedures,
            total,
            next_offset: next,
        };
        Ok(Json(
            observe(
                &a.store,
                "list_procedures",
                Some(subject_of(&a.target)),
                &args,
                page,
                Qualifiers::observed(),
            )
            .await?,
        ))
    }

    /// Search procedure names of the active target by substring or prefix. Matching uses the same
    /// normalization as completion (Unicode case folding and compatibility forms).
    #[tool(
        name = "search_procedures",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn search_procedures(
        &self,
        Parameters(args): Parameters<SearchProceduresArgs>,
    ) -> Result<Json<Observed<ProcedurePage>>, ToolError> {
        if args.query.is_empty()
            || args.query.chars().count() > crate::completion::key::MAX_PREFIX_CHARS
        {
            return Err(ToolError("query must be 1 to 4096 characters".into()));
        }
        let a = self.active().await?;
        check_document(&a.store.documents(a.target_id)?, args.document.as_deref())?;
        let limit = page_limit(args.limit);
        let prefix = matches!(args.mode, SearchMode::Prefix);
        let (procedures, total) = a.store.search_procedures(
            a.target_id,
            args.document.as_deref(),
            &args.query,
            prefix,
            args.offset,
            limit,
        )?;
        let next = next_offset(args.offset, procedures.len(), total);
        let page = ProcedurePage {
            procedures,
            total,
            next_offset: next,
        };
        Ok(Json(
            observe(
                &a.store,
                "search_procedures",
                Some(subject_of(&a.target)),
                &args,
                page,
                Qualifiers::observed(),
            )
            .await?,
        ))
    }
}
