//! Procedure-level analysis tools on the active target: strings, info, assembly, callers,
//! callees, cross-references and function dossiers, through the built-in provider or a deep one.

use std::sync::Arc;

use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::native::Active;
use super::{Observed, Qualifiers, ToolError, observe, subject_of};
use crate::evidence::{Location, ProviderStamp};
use crate::ids::Address;
use crate::providers::deep;
use crate::providers::native::{
    AssemblyPage, CallGraphEdges, Callers, DocumentSpec, Dossier, Image, StringMatches,
    StringQuery, Xrefs,
};
use crate::server::ReaServer;

/// A procedure named by address or by a name that identifies one procedure.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ResolvedProcedure {
    /// Document holding it.
    pub document: String,
    /// Its start address.
    pub address: Address,
    /// Its name, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// Arguments naming one procedure.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProcedureArgs {
    /// A procedure start address (0x…), an address inside a procedure, or a name that identifies
    /// one procedure (an ambiguous name answers with the candidates).
    pub procedure: String,
    /// The document, when the target has several and the procedure is not unique among them.
    #[serde(default)]
    pub document: Option<String>,
}

/// Arguments of `procedure_assembly`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AssemblyArgs {
    /// A procedure start address (0x…), an address inside one, or a unique name.
    pub procedure: String,
    /// The document, when needed to tell procedures apart.
    #[serde(default)]
    pub document: Option<String>,
    /// First instruction of the window (default 0).
    #[serde(default)]
    pub offset: usize,
    /// Instructions in the window (default 64, at most 2000).
    #[serde(default)]
    pub limit: Option<usize>,
    /// `auto` (default) or a deep provider candidate (objdump, llvm-objdump…) to disassemble with.
    #[serde(default)]
    pub provider_id: Option<String>,
}

/// Arguments of `xrefs`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct XrefsArgs {
    /// The address referred to (0x…): a string, datum or procedure start.
    pub address: Address,
    /// The document, when the target has several.
    #[serde(default)]
    pub document: Option<String>,
}

/// Arguments of `search_strings`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchStringsArgs {
    /// Text to find (case-sensitive substring), or a regular expression when `regex` is true.
    pub pattern: String,
    /// Treat `pattern` as a regular expression (Rust regex syntax).
    #[serde(default)]
    pub regex: bool,
    /// The document, when the target has several (default: the first).
    #[serde(default)]
    pub document: Option<String>,
    /// Matches to skip.
    #[serde(default)]
    pub offset: usize,
    /// Matches to return (default 50, at most 1000).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Also search executable sections (default true).
    #[serde(default)]
    pub include_code: Option<bool>,
}

/// Strings found in one document.
#[derive(Debug, Serialize, JsonSchema)]
pub struct StringsFound {
    /// The document searched.
    pub document: String,
    /// The matches and their total.
    #[serde(flatten)]
    pub matches: StringMatches,
}

/// What `procedure_info` reports.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ProcedureDetails {
    /// The procedure.
    pub procedure: ResolvedProcedure,
    /// The name as stored in the binary, when it differs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw_name: Option<String>,
    /// Size in bytes, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Section holding it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub section: Option<String>,
    /// The address asked about, when it lies inside the procedure rather than at its start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inside: Option<Address>,
}

/// A result about one resolved procedure.
#[derive(Debug, Serialize, JsonSchema)]
pub struct About<T> {
    /// The procedure the result is about.
    pub procedure: ResolvedProcedure,
    /// The result.
    #[serde(flatten)]
    pub result: T,
}

/// Disassembly by a deep provider, paged like the native listing.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DeepAssembly {
    /// The procedure.
    pub procedure: ResolvedProcedure,
    /// Number of instructions the provider printed for the whole procedure.
    pub total_instructions: usize,
    /// Index of the first instruction of this page.
    pub offset: usize,
    /// Instructions `[offset, offset + limit)` as the provider printed them.
    pub instructions: Vec<deep::DeepInstruction>,
    /// Offset of the next page, when there is one.
    pub next_offset: Option<usize>,
}

/// Either provider's disassembly.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum AssemblyResult {
    /// The built-in provider's paged listing.
    Native(About<AssemblyPage>),
    /// A deep provider's listing of the whole procedure.
    Deep(DeepAssembly),
}

/// Images loaded for analysis, most recent first. Parsing a document and building its call
/// index is the expensive part of these tools, so the last few are kept.
#[derive(Default)]
pub(crate) struct ImageCache(std::sync::Mutex<Vec<(DocumentSpec, Arc<Image>)>>);

const CACHED_IMAGES: usize = 3;

impl ReaServer {
    pub(crate) async fn image_for(&self, doc: &DocumentSpec) -> Result<Arc<Image>, ToolError> {
        if let Some(hit) = self
            .images()
            .0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .find(|(d, _)| d == doc)
        {
            return Ok(hit.1.clone());
        }
        let spec = doc.clone();
        let image = Arc::new(tokio::task::spawn_blocking(move || Image::load(&spec)).await??);
        let mut cache = self.images().0.lock().unwrap_or_else(|p| p.into_inner());
        cache.insert(0, (doc.clone(), image.clone()));
        cache.truncate(CACHED_IMAGES);
        Ok(image)
    }

    /// The document a call is about: the named one, or the only one.
    fn document_spec(a: &Active, document: Option<&str>) -> Result<DocumentSpec, ToolError> {
        let docs = &a.target.documents;
        match document {
            Some(name) => docs
                .iter()
                .find(|d| d.name == name)
                .cloned()
                .ok_or_else(|| {
                    let names: Vec<&str> = docs.iter().map(|d| d.name.as_str()).collect();
                    ToolError(format!(
                        "no document {name:?} in the active target; documents: {}",
                        names.join(", ")
                    ))
                }),
            None => match docs.as_slice() {
                [one] => Ok(one.clone()),
                [] => Err(ToolError("the active target has no documents".into())),
                many => {
                    let names: Vec<&str> = many.iter().map(|d| d.name.as_str()).collect();
                    Err(ToolError(format!(
                        "the active target has several documents; name one: {}",
                        names.join(", ")
                    )))
                }
            },
        }
    }

    /// Resolves a procedure reference against the stored inventory (and, for an address inside a
    /// procedure, the document's image).
    pub(crate) async fn resolve_procedure(
        &self,
        a: &Active,
        document: Option<&str>,
        text: &str,
    ) -> Result<(DocumentSpec, ResolvedProcedure, Option<u64>), ToolError> {
        let text = text.trim();
        let explicit_address = text.starts_with("0x") || text.starts_with("0X");
        let by_name = if explicit_address {
            vec![]
        } else {
            a.store
                .find_procedures(a.target_id, document, None, Some(text))?
        };
        let rows = if !by_name.is_empty() {
            by_name
        } else {
            let address = Address::parse(text).map_err(|_| {
                ToolError(format!("no procedure named {text:?} in the active target (search_procedures finds names)"))
            })?;
            let at = a
                .store
                .find_procedures(a.target_id, document, Some(address.0), None)?;
            if at.is_empty() {
                // Not a start: the procedure containing the address, in the named or only document.
                let doc = Self::document_spec(a, document)?;
                let image = self.image_for(&doc).await?;
                let p = image.procedure_at(address.0).ok_or_else(|| {
                    ToolError(format!(
                        "no procedure starts at or contains {address} in {}",
                        doc.name
                    ))
                })?;
                let resolved = ResolvedProcedure {
                    document: doc.name.clone(),
                    address: Address(p.address),
                    name: p.name.clone(),
                };
                return Ok((doc, resolved, Some(address.0)));
            }
            at
        };
        let mut distinct: Vec<(String, u64)> = rows
            .iter()
            .map(|r| (r.document.clone(), r.address.0))
            .collect();
        distinct.dedup();
        if distinct.len() > 1 {
            let candidates: Vec<String> = rows
                .iter()
                .map(|r| {
                    format!(
                        "{} in {}{}",
                        r.address,
                        r.document,
                        r.name
                            .as_deref()
                            .map(|n| format!(" ({n})"))
                            .unwrap_or_default()
                    )
                })
                .collect();
            return Err(ToolError(format!(
                "{text:?} is ambiguous; name the document or use an address. Candidates: {}",
                candidates.join("; ")
            )));
        }
        let row = &rows[0];
        let doc = Self::document_spec(a, Some(&row.document))?;
        Ok((
            doc,
            ResolvedProcedure {
                document: row.document.clone(),
                address: row.address,
                name: row.name.clone(),
            },
            None,
        ))
    }

    async fn observe_about<P: Serialize, T: Serialize>(
        &self,
        a: &Active,
        operation: &str,
        params: &P,
        procedure: &ResolvedProcedure,
        result: T,
    ) -> Result<Observed<T>, ToolError> {
        let mut q = Qualifiers::observed();
        q.locations = vec![Location {
            document: Some(procedure.document.clone()),
            address: Some(procedure.address.to_string()),
            file: None,
            line: None,
        }];
        observe(
            &a.store,
            operation,
            Some(subject_of(&a.target)),
            params,
            result,
            q,
        )
        .await
    }
}

#[tool_router(router = analysis_tools, vis = "pub(crate)")]
impl ReaServer {
    /// Search the strings of a document of the active target (printable ASCII/UTF-8, and UTF-16LE
    /// in PE files) by substring or regular expression; each match has its section and address.
    #[tool(
        name = "search_strings",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn search_strings(
        &self,
        Parameters(args): Parameters<SearchStringsArgs>,
    ) -> Result<Json<Observed<StringsFound>>, ToolError> {
        let a = self.active().await?;
        let doc = match args.document.as_deref() {
            Some(_) => Self::document_spec(&a, args.document.as_deref())?,
            None => a
                .target
                .documents
                .first()
                .cloned()
                .ok_or_else(|| ToolError("the active target has no documents".into()))?,
        };
        let image = self.image_for(&doc).await?;
        let query = StringQuery {
            pattern: args.pattern.clone(),
            regex: args.regex,
            offset: args.offset,
            limit: args.limit.unwrap_or(50).clamp(1, 1000),
            include_code: args.include_code.unwrap_or(true),
        };
        let matches = tokio::task::spawn_blocking(move || image.strings(&query)).await??;
        let mut q = Qualifiers::observed();
        q.locations = vec![Location {
            document: Some(doc.name.clone()),
            address: None,
            file: None,
            line: None,
        }];
        let found = StringsFound {
            document: doc.name.clone(),
            matches,
        };
        Ok(Json(
            observe(
                &a.store,
                "search_strings",
                Some(subject_of(&a.target)),
                &args,
                found,
                q,
            )
            .await?,
        ))
    }

    /// Look up one procedure: start address, name, raw name, size and section. Accepts an address
    /// inside a procedure (for example a faulting address) and reports the procedure containing it.
    #[tool(
        name = "procedure_info",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn procedure_info(
        &self,
        Parameters(args): Parameters<ProcedureArgs>,
    ) -> Result<Json<Observed<ProcedureDetails>>, ToolError> {
        let a = self.active().await?;
        let (doc, procedure, inside) = self
            .resolve_procedure(&a, args.document.as_deref(), &args.procedure)
            .await?;
        let image = self.image_for(&doc).await?;
        let stored = image.procedure_starting_at(procedure.address.0);
        let details = ProcedureDetails {
            raw_name: stored.and_then(|p| p.raw_name.clone()),
            size: stored.and_then(|p| p.size),
            section: image
                .section_at(procedure.address.0)
                .map(|s| s.name.clone()),
            inside: inside.map(Address),
            procedure: procedure.clone(),
        };
        Ok(Json(
            self.observe_about(&a, "procedure_info", &args, &procedure, details)
                .await?,
        ))
    }

    /// Disassemble a procedure in paged instruction windows (iced-x86 for x86/x86-64, yaxpeax-arm
    /// for arm64), or with a deep provider candidate when provider_id names one.
    #[tool(
        name = "procedure_assembly",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn procedure_assembly(
        &self,
        Parameters(args): Parameters<AssemblyArgs>,
    ) -> Result<Json<Observed<AssemblyResult>>, ToolError> {
        let a = self.active().await?;
        let (doc, procedure, _) = self
            .resolve_procedure(&a, args.document.as_deref(), &args.procedure)
            .await?;
        let image = self.image_for(&doc).await?;
        match args.provider_id.as_deref() {
            None | Some("auto") => {
                let (start, offset, limit) = (
                    procedure.address.0,
                    args.offset,
                    args.limit.unwrap_or(64).clamp(1, 2000),
                );
                let img = image.clone();
                let page = tokio::task::spawn_blocking(move || img.assembly(start, offset, limit))
                    .await??;
                let result = AssemblyResult::Native(About {
                    procedure: procedure.clone(),
                    result: page,
                });
                Ok(Json(
                    self.observe_about(&a, "procedure_assembly", &args, &procedure, result)
                        .await?,
                ))
            }
            Some(id) => {
                let candidate = deep::candidates(&a.target.format, None)
                    .into_iter()
                    .find(|c| c.id == id)
                    .ok_or_else(|| ToolError(format!("{id} is not a deep provider candidate on this host for {} targets (complete provider_id to see them)", a.target.format)))?;
                let start = procedure.address.0;
                let end = image
                    .procedure_starting_at(start)
                    .and_then(|p| p.size)
                    .map(|s| start.saturating_add(s))
                    .or_else(|| {
                        image
                            .procedures()
                            .iter()
                            .map(|p| p.address)
                            .find(|&x| x > start)
                    })
                    .unwrap_or(start.saturating_add(0x1000));
                let d = doc.clone();
                let (offset, limit) = (args.offset, args.limit.unwrap_or(64).clamp(1, 2000));
                let output = tokio::task::spawn_blocking(move || {
                    deep::run_assembly_page(&candidate, &d, start, end, offset, limit)
                })
                .await??;
                let mut q = Qualifiers::observed();
                q.provider = ProviderStamp {
                    id: output.provider.clone(),
                    name: output.name.clone(),
                    version: output.version.clone(),
                };
                q.locations = vec![Location {
                    document: Some(doc.name.clone()),
                    address: Some(procedure.address.to_string()),
                    file: None,
                    line: None,
                }];
                let page = output.result;
                let result = AssemblyResult::Deep(DeepAssembly {
                    procedure,
                    total_instructions: page.total_instructions,
                    offset: page.offset,
                    instructions: page.instructions,
                    next_offset: page.next_offset,
                });
                Ok(Json(
                    observe(
                        &a.store,
                        "procedure_assembly",
                        Some(subject_of(&a.target)),
                        &args,
                        result,
                        q,
                    )
                    .await?,
                ))
            }
        }
    }

    /// What a procedure calls: direct calls and tail jumps resolved to procedures or imports;
    /// indirect transfers are listed as unresolved, never guessed.
    #[tool(
        name = "procedure_callees",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn procedure_callees(
        &self,
        Parameters(args): Parameters<ProcedureArgs>,
    ) -> Result<Json<Observed<About<CallGraphEdges>>>, ToolError> {
        let a = self.active().await?;
        let (doc, procedure, _) = self
            .resolve_procedure(&a, args.document.as_deref(), &args.procedure)
            .await?;
        let image = self.image_for(&doc).await?;
        let start = procedure.address.0;
        let edges = tokio::task::spawn_blocking(move || image.callees(start)).await??;
        let result = About {
            procedure: procedure.clone(),
            result: edges,
        };
        Ok(Json(
            self.observe_about(&a, "procedure_callees", &args, &procedure, result)
                .await?,
        ))
    }

    /// Which procedures call this one directly (or tail-jump to it), with the call sites.
    #[tool(
        name = "procedure_callers",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn procedure_callers(
        &self,
        Parameters(args): Parameters<ProcedureArgs>,
    ) -> Result<Json<Observed<About<Callers>>>, ToolError> {
        let a = self.active().await?;
        let (doc, procedure, _) = self
            .resolve_procedure(&a, args.document.as_deref(), &args.procedure)
            .await?;
        let image = self.image_for(&doc).await?;
        let start = procedure.address.0;
        let callers = tokio::task::spawn_blocking(move || image.callers(start)).await??;
        let result = About {
            procedure: procedure.clone(),
            result: callers,
        };
        Ok(Json(
            self.observe_about(&a, "procedure_callers", &args, &procedure, result)
                .await?,
        ))
    }

    /// Code and data references to an address: instructions whose branch target or computed
    /// memory operand is the address (with their procedure), and pointers to it in data sections.
    #[tool(
        name = "xrefs",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn xrefs(
        &self,
        Parameters(args): Parameters<XrefsArgs>,
    ) -> Result<Json<Observed<Xrefs>>, ToolError> {
        let a = self.active().await?;
        let doc = Self::document_spec(&a, args.document.as_deref())?;
        let image = self.image_for(&doc).await?;
        let address = args.address.0;
        let refs = tokio::task::spawn_blocking(move || image.xrefs(address)).await??;
        let mut q = Qualifiers::observed();
        q.locations = vec![Location {
            document: Some(doc.name.clone()),
            address: Some(args.address.to_string()),
            file: None,
            line: None,
        }];
        Ok(Json(
            observe(
                &a.store,
                "xrefs",
                Some(subject_of(&a.target)),
                &args,
                refs,
                q,
            )
            .await?,
        ))
    }

    /// A dossier of one procedure in one call: info, callers, callees, unresolved transfers,
    /// strings and imports it references, and its first instructions.
    #[tool(
        name = "analyze_function",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn analyze_function(
        &self,
        Parameters(args): Parameters<ProcedureArgs>,
    ) -> Result<Json<Observed<About<Dossier>>>, ToolError> {
        let a = self.active().await?;
        let (doc, procedure, _) = self
            .resolve_procedure(&a, args.document.as_deref(), &args.procedure)
            .await?;
        let image = self.image_for(&doc).await?;
        let start = procedure.address.0;
        let dossier = tokio::task::spawn_blocking(move || image.function_dossier(start)).await??;
        let result = About {
            procedure: procedure.clone(),
            result: dossier,
        };
        Ok(Json(
            self.observe_about(&a, "analyze_function", &args, &procedure, result)
                .await?,
        ))
    }
}
