//! Native analysis of the active target: documents, procedures and their search, strings,
//! procedure details, assembly, callers, callees, cross-references and dossiers, through the
//! built-in provider or a deep one.

use std::path::Path;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::analyst::{AnalystView, ShowsAnnotations};
use super::args::cap;
use super::args::{
    DocumentSelector, Page, PageRequest, ProcedureSelector, ProviderChoice, names_by_short_form,
};
use super::observe::{self, Observed, Qualifiers, in_document, subject_of};
use super::session::{ActiveTarget, Snapshot};
use super::{Investigation, InvestigationError, Result, blocking};
use crate::evidence::{Confidence, ProviderStamp};
use crate::ids::Address;
use crate::providers::deep;
use crate::providers::native::{
    self, AssemblyPage, CallGraphEdges, Callers, DocumentSpec, Dossier, Image, StringMatches,
    StringQuery, Target, Xrefs,
};
use crate::store::{DocumentRow, ProcedureRow, Recording};
use crate::vocabulary::{Architecture, FoundBy, NameOrigin};

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
    /// Only this document (see list_documents); omit for every document of the target (at most 4
    /// KiB).
    #[serde(default)]
    #[serde(deserialize_with = "cap::name_opt")]
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

impl From<Page<ProcedureRow>> for ProcedurePage {
    fn from(page: Page<ProcedureRow>) -> Self {
        ProcedurePage {
            procedures: page.items,
            total: page.total,
            next_offset: page.next_offset,
        }
    }
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
    /// Text to find in procedure names, compared like completion (case folded, normalized) (at
    /// most 1 KiB).
    #[serde(deserialize_with = "cap::pattern")]
    pub query: String,
    /// substring (default) or prefix.
    #[serde(default)]
    pub mode: SearchMode,
    /// Only this document; omit for every document of the target (at most 4 KiB).
    #[serde(default)]
    #[serde(deserialize_with = "cap::name_opt")]
    pub document: Option<String>,
    /// Matches to skip.
    #[serde(default)]
    pub offset: u64,
    /// Matches to return (default 50, at most 500).
    #[serde(default)]
    pub limit: Option<u64>,
}

/// A procedure named by address or by a name that identifies one procedure.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ResolvedProcedure {
    /// Document holding it.
    pub document: String,
    /// Its start address.
    pub address: Address,
    /// Its name, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    // Absent rather than null, so the schema needs no null branch (tools/list budget).
    #[schemars(with = "String")]
    pub name: Option<String>,
    /// The analyst's name, beside `name` (an annotation; absent when none). Left out of the
    /// schema (tools/list budget), which allows it like any other member.
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub analyst: Option<crate::ids::AnalystName>,
}

impl ShowsAnnotations for ResolvedProcedure {
    fn show(&mut self, _: &str, view: &AnalystView) {
        self.analyst = view.procedure(&self.document, self.address.0);
    }
}

/// Arguments naming one procedure.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProcedureArgs {
    /// A procedure start address (0x…), an address inside a procedure, or a name that identifies
    /// one procedure (an ambiguous name answers with the candidates) (at most 4 KiB).
    #[serde(deserialize_with = "cap::name")]
    pub procedure: String,
    /// The document, when the target has several and the procedure is not unique among them (at
    /// most 4 KiB).
    #[serde(default)]
    #[serde(deserialize_with = "cap::name_opt")]
    pub document: Option<String>,
}

/// Arguments of `procedure_assembly`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AssemblyArgs {
    /// A procedure start address (0x…), an address inside one, or a unique name (at most 4 KiB).
    #[serde(deserialize_with = "cap::name")]
    pub procedure: String,
    /// The document, when needed to tell procedures apart (at most 4 KiB).
    #[serde(default)]
    #[serde(deserialize_with = "cap::name_opt")]
    pub document: Option<String>,
    /// First instruction of the window (default 0).
    #[serde(default)]
    pub offset: usize,
    /// Instructions in the window (default 64, at most 2000).
    #[serde(default)]
    pub limit: Option<usize>,
    /// `auto` (default) or a deep provider candidate (objdump, llvm-objdump…) to disassemble with
    /// (at most 4 KiB).
    #[serde(default)]
    #[serde(deserialize_with = "cap::name_opt")]
    pub provider_id: Option<String>,
}

/// Arguments of `xrefs`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct XrefsArgs {
    /// The address referred to (0x…): a string, datum or procedure start.
    pub address: Address,
    /// The document, when the target has several (at most 4 KiB).
    #[serde(default)]
    #[serde(deserialize_with = "cap::name_opt")]
    pub document: Option<String>,
}

/// Arguments of `search_strings`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchStringsArgs {
    /// Text to find (case-sensitive substring), or a regular expression when `regex` is true (at
    /// most 1 KiB).
    #[serde(deserialize_with = "cap::pattern")]
    pub pattern: String,
    /// Treat `pattern` as a regular expression (Rust regex syntax).
    #[serde(default)]
    pub regex: bool,
    /// The document, when the target has several (at most 4 KiB).
    #[serde(default)]
    #[serde(deserialize_with = "cap::name_opt")]
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub raw_name: Option<String>,
    /// Where a name no symbol gives comes from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name_source: Option<NameOrigin>,
    /// How a procedure no table lists was found (`call`, `tail-jump`, `pointer`, `init_array`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub found_by: Option<FoundBy>,
    /// Size in bytes, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub size: Option<u64>,
    /// Section holding it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub section: Option<String>,
    /// The address asked about, when it lies inside the procedure rather than at its start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inside: Option<Address>,
    /// The analyst's comment on the procedure (an annotation). Left out of the schema (tools/list
    /// budget), like `analyst_prototype`, which allows them like any other member.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub analyst_comment: Option<String>,
    /// The analyst's C prototype of the procedure (an annotation).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub analyst_prototype: Option<String>,
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

/// Disassembly by a deep provider.
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

/// A procedure resolved in one snapshot: its document, the procedure, and the address asked
/// about when it lies inside the procedure rather than at its start.
pub(super) struct Resolved {
    pub(super) doc: DocumentSpec,
    pub(super) procedure: ResolvedProcedure,
    inside: Option<u64>,
}

/// The longest query `search_procedures` takes, as completion prefixes.
const MAX_QUERY_CHARS: usize = crate::completion::key::MAX_PREFIX_CHARS;

/// The page of `list_procedures` out of every procedure of `documents` (each with its complete
/// inventory), ordered as the store orders them: by document name, then address.
fn inventory_page(
    documents: Vec<(&DocumentSpec, Vec<native::Procedure>)>,
    selector: &DocumentSelector,
    request: &PageRequest,
) -> Page<ProcedureRow> {
    let mut documents: Vec<_> = documents
        .into_iter()
        .filter(|(d, _)| selector.name().is_none_or(|n| n == d.name))
        .collect();
    documents.sort_by(|a, b| a.0.name.cmp(&b.0.name));
    let mut rows = vec![];
    for (doc, mut procedures) in documents {
        procedures.sort_by_key(|p| p.address);
        // One row per address, as the inventory table keeps them.
        procedures.dedup_by_key(|p| p.address);
        rows.extend(procedures.into_iter().map(|p| ProcedureRow {
            analyst: None,
            document: doc.name.clone(),
            address: Address(p.address),
            name: p.name,
            raw_name: p.raw_name,
            size: p.size,
            aliases: p.aliases,
        }));
    }
    Page::of_all(rows, request)
}

/// The target at `path` as the operator's `rea documents` reads it: admitted from the path as
/// given, not only beneath the allowed roots, without a session. Blocking.
pub fn read_target(path: &Path) -> Result<Target> {
    Ok(native::admit(path)?)
}

/// The documents at `path` for the operator's `rea procedures` listing, which names no subject:
/// a single file is sniffed from its head and not hashed (see [`native::documents_of`]).
/// Blocking.
pub fn documents_at(path: &Path) -> Result<Vec<DocumentSpec>> {
    Ok(native::documents_of(path)?)
}

/// Every procedure the native reader finds in `doc`, as it finds them (not the inventory's
/// order or rows). Blocking.
pub fn procedures_of(doc: &DocumentSpec) -> Result<Vec<native::Procedure>> {
    Ok(native::procedures(doc)?)
}

/// Architectures whose decoded code (listings, call edges and tail jumps, code references) the
/// differential suite (`tests/it/differential.rs`) holds against a reference disassembler.
fn code_checked(architecture: Architecture) -> bool {
    matches!(architecture, Architecture::X86_64 | Architecture::Arm64)
}

/// How a result read from `doc`'s decoded code is qualified: `observed` where the suite checks
/// that kind against a reference, else `derived` with the reason.
fn code_qualifiers(doc: &DocumentSpec) -> Qualifiers {
    let mut q = Qualifiers::observed();
    if !code_checked(doc.architecture) {
        q.confidence = Confidence::Derived;
        q.limitations.push(format!(
            "{} code is decoded by the built-in provider, but rea's suite holds no {} listing against a reference disassembler",
            doc.architecture, doc.architecture
        ));
    }
    q
}

/// How a result about a resolved procedure is qualified: as its code (when `decoded`), and
/// `derived` when the procedure was found by containment, which rests on its computed extent.
fn about_qualifiers(r: &Resolved, decoded: bool) -> Qualifiers {
    let mut q = if decoded {
        code_qualifiers(&r.doc)
    } else {
        Qualifiers::observed()
    };
    if let Some(inside) = r.inside {
        q.confidence = Confidence::Derived;
        q.limitations.push(format!(
            "{} was taken as the procedure holding {:#x}: its extent is its stated size, else up to the next procedure start",
            r.procedure.address, inside
        ));
    }
    q
}

impl Investigation {
    /// `list_documents`: the active target's documents with their procedure counts.
    pub async fn list_documents(&self, args: ListDocumentsArgs) -> Result<Observed<Documents>> {
        let (s, a) = self.active()?;
        let documents = s.store().documents(a.target_id)?;
        observe::observe(
            s.store(),
            "list_documents",
            Some(subject_of(&a.target)),
            &args,
            Documents { documents },
            Qualifiers::observed(),
        )
        .await
    }

    /// A page of procedure rows as listed, ended early where the message bound needs it
    /// (`next_offset` then resumes at the first row left out).
    fn bounded_procedures(
        &self,
        page: Page<ProcedureRow>,
        request: &PageRequest,
    ) -> Result<ProcedurePage> {
        let mut page = ProcedurePage::from(page);
        super::bound::fit_listing(
            &mut page.procedures,
            &mut page.next_offset,
            request.offset,
            self.max_result_bytes()?,
        );
        Ok(page)
    }

    /// `list_procedures`: a page of the active target's complete inventory.
    pub async fn list_procedures(
        &self,
        args: ListProceduresArgs,
    ) -> Result<Observed<ProcedurePage>> {
        let (s, a) = self.active()?;
        let document = DocumentSelector::new(args.document.as_deref());
        document.resolve_any(&a.target.documents)?;
        let request = PageRequest::new(args.offset, args.limit, PageRequest::LISTING);
        let (mut rows, total) =
            s.store()
                .procedures(a.target_id, document.name(), request.offset, request.limit)?;
        let view = AnalystView::load(s.store(), &a.target.sha256, document.name())?;
        rows.show("", &view);
        let page = self.bounded_procedures(Page::new(rows, total, &request), &request)?;
        observe::observe(
            s.store(),
            "list_procedures",
            Some(subject_of(&a.target)),
            &args,
            page,
            view.qualify(Qualifiers::observed()),
        )
        .await
    }

    /// What `open_binary` of `path` and then `list_procedures` with `args` would record, without
    /// a session (`rea procedures --evidence`). Blocking.
    pub fn list_procedures_detached(
        &self,
        path: &std::path::Path,
        args: ListProceduresArgs,
    ) -> Result<(ProcedurePage, Recording)> {
        let path = self.checked_path(path)?;
        let target = super::admit(&path)?;
        let document = DocumentSelector::new(args.document.as_deref());
        document.resolve_any(&target.documents)?;
        let request = PageRequest::new(args.offset, args.limit, PageRequest::LISTING);
        let inventories = target
            .documents
            .iter()
            .map(|d| Ok((d, native::procedures(d)?)))
            .collect::<Result<Vec<_>>>()?;
        let page =
            self.bounded_procedures(inventory_page(inventories, &document, &request), &request)?;
        let record = observe::record(
            "list_procedures",
            Some(subject_of(&target)),
            &args,
            &page,
            Qualifiers::observed(),
        )?;
        Ok((page, Recording::of(record)))
    }

    /// `search_procedures`: procedure names matching a substring or prefix, compared like
    /// completion.
    pub async fn search_procedures(
        &self,
        args: SearchProceduresArgs,
    ) -> Result<Observed<ProcedurePage>> {
        if args.query.is_empty() || args.query.chars().count() > MAX_QUERY_CHARS {
            return Err(InvestigationError::InvalidArgument(
                "query must be 1 to 4096 characters".into(),
            ));
        }
        let (s, a) = self.active()?;
        let document = DocumentSelector::new(args.document.as_deref());
        document.resolve_any(&a.target.documents)?;
        let request = PageRequest::new(args.offset, args.limit, PageRequest::LISTING);
        let prefix = matches!(args.mode, SearchMode::Prefix);
        let view = AnalystView::load(s.store(), &a.target.sha256, document.name())?;
        // Procedures found by their analyst name come first, then those the file's names match;
        // one offset pages through both.
        let by_analyst: Vec<ProcedureRow> = view
            .search(&args.query, prefix)
            .into_iter()
            .map(|(doc, address)| {
                s.store()
                    .find_procedures(a.target_id, Some(&doc), Some(address), None)
                    .map(|rows| rows.into_iter().next())
            })
            .collect::<std::result::Result<Vec<_>, _>>()?
            .into_iter()
            .flatten()
            .filter(|r| !view.file_name_matches(r, &args.query, prefix))
            .collect();
        let ahead = by_analyst.len() as u64;
        let mut rows: Vec<ProcedureRow> = by_analyst
            .into_iter()
            .skip(usize::try_from(request.offset).unwrap_or(usize::MAX))
            .take(usize::try_from(request.limit).unwrap_or(usize::MAX))
            .collect();
        let left = request.limit.saturating_sub(rows.len() as u64);
        let (file_rows, file_total) = s.store().search_procedures(
            a.target_id,
            document.name(),
            &args.query,
            prefix,
            request.offset.saturating_sub(ahead),
            left,
        )?;
        if left > 0 {
            rows.extend(file_rows);
        }
        rows.show("", &view);
        let total = file_total + ahead;
        let page = self.bounded_procedures(Page::new(rows, total, &request), &request)?;
        observe::observe(
            s.store(),
            "search_procedures",
            Some(subject_of(&a.target)),
            &args,
            page,
            view.qualify(Qualifiers::observed()),
        )
        .await
    }

    /// Resolves a procedure selector against the snapshot's inventory (and, for an address
    /// inside a procedure, the document's image).
    pub(super) async fn resolve_procedure(
        &self,
        s: &Snapshot,
        a: &ActiveTarget,
        document: &DocumentSelector,
        text: &str,
    ) -> Result<Resolved> {
        let selector = ProcedureSelector::parse(text);
        document.resolve_any(&a.target.documents)?;
        let store = s.store();
        let by_name = match &selector {
            ProcedureSelector::Name { name, .. } => {
                store.find_procedures(a.target_id, document.name(), None, Some(name))?
            }
            _ => vec![],
        };
        // No file name: an analyst name (a live name annotation) of the named or every document.
        let by_name = match &selector {
            ProcedureSelector::Name { name, .. } if by_name.is_empty() => {
                let view = AnalystView::load(store, &a.target.sha256, document.name())?;
                let mut rows = vec![];
                for (doc, address) in view.named_exactly(name) {
                    rows.extend(store.find_procedures(
                        a.target_id,
                        Some(&doc),
                        Some(address),
                        None,
                    )?);
                }
                rows
            }
            _ => by_name,
        };
        // No exact name: a C++ or Rust name by its short form (`GetPassword` for
        // `vault::Store::GetPassword(int) const`), among the named or every document.
        let by_name = match &selector {
            ProcedureSelector::Name { name, .. } if by_name.is_empty() => {
                let (all, _) = store.procedures(a.target_id, document.name(), 0, u64::MAX >> 1)?;
                all.into_iter()
                    .filter(|r| {
                        r.name
                            .as_deref()
                            .is_some_and(|n| names_by_short_form(n, name))
                    })
                    .collect()
            }
            _ => by_name,
        };
        let rows = if !by_name.is_empty() {
            by_name
        } else {
            let address = match &selector {
                ProcedureSelector::Address(a) => *a,
                _ => return Err(selector.not_found()),
            };
            let at = store.find_procedures(a.target_id, document.name(), Some(address.0), None)?;
            if at.is_empty() {
                // Not a start: the procedure containing the address, in the named or only document.
                let doc = document.resolve_one(&a.target.documents)?.clone();
                let image = s.session.images.get(&doc).await?;
                let p = image.procedure_at(address.0).ok_or_else(|| {
                    InvestigationError::InvalidArgument(format!(
                        "no procedure starts at or contains {address} in {}",
                        doc.name
                    ))
                })?;
                let procedure = ResolvedProcedure {
                    analyst: None,
                    document: doc.name.clone(),
                    address: Address(p.address),
                    name: p.name.clone(),
                };
                return Ok(Resolved {
                    doc,
                    procedure,
                    inside: Some(address.0),
                });
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
            return Err(InvestigationError::InvalidArgument(format!(
                "{:?} is ambiguous; name the document or use an address. Candidates: {}",
                text.trim(),
                candidates.join("; ")
            )));
        }
        let row = &rows[0];
        let doc = DocumentSelector::new(Some(&row.document))
            .resolve_one(&a.target.documents)?
            .clone();
        Ok(Resolved {
            doc,
            procedure: ResolvedProcedure {
                analyst: None,
                document: row.document.clone(),
                address: row.address,
                name: row.name.clone(),
            },
            inside: None,
        })
    }

    /// Records a result about one procedure, located at its start, qualified by `q`.
    async fn observe_about<P: Serialize, T: Serialize>(
        s: &Snapshot,
        target: &Target,
        operation: &str,
        params: &P,
        procedure: &ResolvedProcedure,
        result: T,
        q: Qualifiers,
    ) -> Result<Observed<T>> {
        let q = q.at(in_document(
            &procedure.document,
            Some(procedure.address.to_string()),
        ));
        observe::observe(
            s.store(),
            operation,
            Some(subject_of(target)),
            params,
            result,
            q,
        )
        .await
    }

    /// The image of the procedure a call names, with the resolution.
    pub(super) async fn procedure_image(
        &self,
        procedure: &str,
        document: Option<&str>,
    ) -> Result<(Snapshot, Arc<ActiveTarget>, Resolved, Arc<Image>)> {
        let (s, a) = self.active()?;
        let resolved = self
            .resolve_procedure(&s, &a, &DocumentSelector::new(document), procedure)
            .await?;
        let image = s.session.images.get(&resolved.doc).await?;
        Ok((s, a, resolved, image))
    }

    /// The analyst view of the active target's `document` for one call, with the resolved
    /// procedure's own analyst name filled in.
    pub(super) fn view_of(s: &Snapshot, a: &ActiveTarget, r: &mut Resolved) -> Result<AnalystView> {
        let view = AnalystView::load(s.store(), &a.target.sha256, Some(&r.doc.name))?;
        r.procedure.show("", &view);
        Ok(view)
    }

    /// `search_strings`: strings of one document by substring or regular expression.
    pub async fn search_strings(&self, args: SearchStringsArgs) -> Result<Observed<StringsFound>> {
        let (s, a) = self.active()?;
        let doc = DocumentSelector::new(args.document.as_deref())
            .resolve_one(&a.target.documents)?
            .clone();
        let image = s.session.images.get(&doc).await?;
        let query = StringQuery {
            pattern: args.pattern.clone(),
            regex: args.regex,
            offset: args.offset,
            limit: args.limit.unwrap_or(50).clamp(1, 1000),
            include_code: args.include_code.unwrap_or(true),
        };
        let mut matches = blocking(move || Ok(image.strings(&query)?)).await?;
        // Long strings are cut at 512 characters each; a page of many ends early to fit the
        // message bound, and its next_offset resumes after the last match shown.
        let budget = super::bound::items_budget(self.max_result_bytes()?);
        if super::bound::fit(&mut matches.matches, budget) > 0 {
            matches.next_offset = Some(matches.offset + matches.matches.len());
        }
        let view = AnalystView::load(s.store(), &a.target.sha256, Some(&doc.name))?;
        for m in &mut matches.matches {
            for u in &mut m.users {
                u.analyst = view.procedure(&doc.name, u.procedure);
            }
        }
        let found = StringsFound {
            document: doc.name.clone(),
            matches,
        };
        // A match's address and bounds are read; its users come from decoded code, where the
        // architecture is decoded at all.
        let decoded = found
            .matches
            .matches
            .iter()
            .any(|m| m.users_total.is_some());
        let q = if decoded {
            code_qualifiers(&doc)
        } else {
            Qualifiers::observed()
        }
        .at(in_document(&doc.name, None));
        observe::observe(
            s.store(),
            "search_strings",
            Some(subject_of(&a.target)),
            &args,
            found,
            view.qualify(q),
        )
        .await
    }

    /// `procedure_info`: start, name, raw name, name source, size and section of one procedure.
    pub async fn procedure_info(&self, args: ProcedureArgs) -> Result<Observed<ProcedureDetails>> {
        let (s, a, mut r, image) = self
            .procedure_image(&args.procedure, args.document.as_deref())
            .await?;
        let view = Self::view_of(&s, &a, &mut r)?;
        let stored = image.procedure_starting_at(r.procedure.address.0);
        let details = ProcedureDetails {
            analyst_comment: view.procedure_comment(&r.doc.name, r.procedure.address.0),
            analyst_prototype: view.prototype(&r.doc.name, r.procedure.address.0),
            raw_name: stored.and_then(|p| p.raw_name.clone()),
            name_source: stored.and_then(|p| p.name_source),
            found_by: stored.and_then(|p| p.found_by),
            size: stored.and_then(|p| p.size),
            section: image
                .section_at(r.procedure.address.0)
                .map(|s| s.name.clone()),
            inside: r.inside.map(Address),
            procedure: r.procedure.clone(),
        };
        Self::observe_about(
            &s,
            &a.target,
            "procedure_info",
            &args,
            &r.procedure,
            details,
            view.qualify(about_qualifiers(&r, false)),
        )
        .await
    }

    /// `procedure_assembly`: a window of a procedure's instructions, or a deep provider's
    /// listing of it.
    pub async fn procedure_assembly(&self, args: AssemblyArgs) -> Result<Observed<AssemblyResult>> {
        let (s, a, mut r, image) = self
            .procedure_image(&args.procedure, args.document.as_deref())
            .await?;
        let view = Self::view_of(&s, &a, &mut r)?;
        match ProviderChoice::resolve(args.provider_id.as_deref(), a.target.format)? {
            ProviderChoice::Auto => {
                let (start, offset, limit) = (
                    r.procedure.address.0,
                    args.offset,
                    args.limit.unwrap_or(64).clamp(1, 2000),
                );
                let mut page = blocking(move || Ok(image.assembly(start, offset, limit)?)).await?;
                // Paged by count; a page of long instructions ends early to fit the bound.
                let budget = super::bound::items_budget(self.max_result_bytes()?);
                if super::bound::fit(&mut page.instructions, budget) > 0 {
                    page.next_offset = Some(page.offset + page.instructions.len());
                }
                page.show(&r.doc.name, &view);
                let result = AssemblyResult::Native(About {
                    procedure: r.procedure.clone(),
                    result: page,
                });
                Self::observe_about(
                    &s,
                    &a.target,
                    "procedure_assembly",
                    &args,
                    &r.procedure,
                    result,
                    view.qualify(about_qualifiers(&r, true)),
                )
                .await
            }
            ProviderChoice::Deep(candidate) => {
                let start = r.procedure.address.0;
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
                let d = r.doc.clone();
                let (offset, limit) = (args.offset, args.limit.unwrap_or(64).clamp(1, 2000));
                // The result is sent twice (text and structured content) beside its envelope:
                // a quarter of the bound for the instructions keeps the whole under it.
                let max_bytes = usize::try_from(self.max_result_bytes()? / 4).unwrap_or(usize::MAX);
                let output = blocking(move || {
                    Ok(deep::run_assembly_page_within(
                        &candidate, &d, start, end, offset, limit, max_bytes,
                    )?)
                })
                .await?;
                let mut q = Qualifiers::observed().at(in_document(
                    &r.doc.name,
                    Some(r.procedure.address.to_string()),
                ));
                q.provider = ProviderStamp {
                    id: output.provider.clone(),
                    name: output.name.clone(),
                    version: output.version.clone(),
                };
                let page = output.result;
                let q = view.qualify(q);
                let result = AssemblyResult::Deep(DeepAssembly {
                    procedure: r.procedure,
                    total_instructions: page.total_instructions,
                    offset: page.offset,
                    instructions: page.instructions,
                    next_offset: page.next_offset,
                });
                observe::observe(
                    s.store(),
                    "procedure_assembly",
                    Some(subject_of(&a.target)),
                    &args,
                    result,
                    q,
                )
                .await
            }
        }
    }

    /// `procedure_callees`: what a procedure calls.
    pub async fn procedure_callees(
        &self,
        args: ProcedureArgs,
    ) -> Result<Observed<About<CallGraphEdges>>> {
        let (s, a, mut r, image) = self
            .procedure_image(&args.procedure, args.document.as_deref())
            .await?;
        let view = Self::view_of(&s, &a, &mut r)?;
        let start = r.procedure.address.0;
        let edges = blocking(move || Ok(image.callees(start)?)).await?;
        let mut edges = edges;
        edges.show(&r.doc.name, &view);
        let result = About {
            procedure: r.procedure.clone(),
            result: edges,
        };
        Self::observe_about(
            &s,
            &a.target,
            "procedure_callees",
            &args,
            &r.procedure,
            result,
            view.qualify(about_qualifiers(&r, true)),
        )
        .await
    }

    /// `procedure_callers`: which procedures call this one.
    pub async fn procedure_callers(&self, args: ProcedureArgs) -> Result<Observed<About<Callers>>> {
        let (s, a, mut r, image) = self
            .procedure_image(&args.procedure, args.document.as_deref())
            .await?;
        let view = Self::view_of(&s, &a, &mut r)?;
        let start = r.procedure.address.0;
        let callers = blocking(move || Ok(image.callers(start)?)).await?;
        let mut callers = callers;
        callers.show(&r.doc.name, &view);
        let result = About {
            procedure: r.procedure.clone(),
            result: callers,
        };
        Self::observe_about(
            &s,
            &a.target,
            "procedure_callers",
            &args,
            &r.procedure,
            result,
            view.qualify(about_qualifiers(&r, true)),
        )
        .await
    }

    /// `xrefs`: code and data references to an address.
    pub async fn xrefs(&self, args: XrefsArgs) -> Result<Observed<Xrefs>> {
        let (s, a) = self.active()?;
        let doc = DocumentSelector::new(args.document.as_deref())
            .resolve_one(&a.target.documents)?
            .clone();
        let image = s.session.images.get(&doc).await?;
        let address = args.address.0;
        let mut refs = blocking(move || Ok(image.xrefs(address)?)).await?;
        let view = AnalystView::load(s.store(), &a.target.sha256, Some(&doc.name))?;
        refs.show(&doc.name, &view);
        let q = view.qualify(
            code_qualifiers(&doc).at(in_document(&doc.name, Some(args.address.to_string()))),
        );
        observe::observe(
            s.store(),
            "xrefs",
            Some(subject_of(&a.target)),
            &args,
            refs,
            q,
        )
        .await
    }

    /// `analyze_function`: a dossier of one procedure.
    pub async fn analyze_function(&self, args: ProcedureArgs) -> Result<Observed<About<Dossier>>> {
        let (s, a, mut r, image) = self
            .procedure_image(&args.procedure, args.document.as_deref())
            .await?;
        let view = Self::view_of(&s, &a, &mut r)?;
        let start = r.procedure.address.0;
        let dossier = blocking(move || Ok(image.function_dossier(start)?)).await?;
        let mut dossier = dossier;
        dossier.show(&r.doc.name, &view);
        let result = About {
            procedure: r.procedure.clone(),
            result: dossier,
        };
        Self::observe_about(
            &s,
            &a.target,
            "analyze_function",
            &args,
            &r.procedure,
            result,
            view.qualify(about_qualifiers(&r, true)),
        )
        .await
    }
}
