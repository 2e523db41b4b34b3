//! Function-level comparison of two opened targets (`compare_procedures`) and shortest call
//! paths in the active target (`call_paths`), over the engines of `analyzers::procdiff` and
//! `analyzers::callpaths`.
//!
//! Both sides of a comparison are named by the manifest ids `inspect_artifact` gave them, like
//! `compare_artifacts`, and read through the descriptors this process holds for the targets it
//! opened in the session: a side whose file is not held (opened before a restart) is refused
//! with what to do, rather than reopened by name.

use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::analyst::AnalystView;
use super::args::cap;
use super::observe::{Observed, Qualifiers, in_document, subject_of};
use super::session::Snapshot;
use super::{
    DocumentSelector, Investigation, InvestigationError, ProcedureSelector, Result, blocking,
    observe,
};
use crate::analyzers::callpaths::{self, CallGraph, CallPaths, PathQuery};
use crate::analyzers::procdiff::{
    self, ProcedureDiff, ProcedureDiffPage, ProcedureEntry, ProcedureSide, ProcedureStatus,
};
use crate::evidence::EvidenceRecord;
use crate::ids::{EvidenceId, ManifestId};
use crate::providers::native::{DocumentSpec, Target, format_address};
use crate::store::Recording;

/// Entries of one `compare_procedures` page unless `limit` says otherwise.
const DEFAULT_ENTRIES: usize = 50;

/// Paths of one `call_paths` answer unless `limit` says otherwise.
const DEFAULT_PATHS: usize = 20;

/// Time `call_paths` may search before it answers with what it has.
const PATHS_BUDGET: Duration = Duration::from_secs(10);

/// Arguments of `compare_procedures`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompareProceduresArgs {
    /// Manifest id of the left (older) side, from inspect_artifact in this session.
    pub left_manifest_id: ManifestId,
    /// Manifest id of the right (newer) side.
    pub right_manifest_id: ManifestId,
    /// The document to compare, when a side has several (a side with one is used whatever its
    /// name) (at most 4 KiB).
    #[serde(default)]
    #[serde(deserialize_with = "cap::name_opt")]
    pub document: Option<String>,
    /// Only entries with this status.
    #[serde(default)]
    pub status: Option<ProcedureStatus>,
    /// Entries to skip.
    #[serde(default)]
    pub offset: usize,
    /// Entries to return (default 50, at most 1000).
    #[serde(default)]
    pub limit: Option<usize>,
    /// A left procedure (0x… or a name; at most 4 KiB): the page holds its matched pair
    /// alone, with the pair's instruction-level diff in `detail`.
    // Left out of the recorded parameters when absent, so a page's record keeps its id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "cap::name_opt")]
    pub detail: Option<String>,
}

/// Arguments of `call_paths`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CallPathsArgs {
    /// Where paths start: a procedure start (0x…), an address inside one, or a unique name (at
    /// most 4 KiB).
    #[serde(deserialize_with = "cap::name")]
    pub from: String,
    /// Where paths end: a procedure, or the address of an import or call target (at most 4 KiB).
    #[serde(deserialize_with = "cap::name")]
    pub to: String,
    /// The document, when the target has several (at most 4 KiB).
    #[serde(default)]
    #[serde(deserialize_with = "cap::name_opt")]
    pub document: Option<String>,
    /// Longest path in calls (default 12, at most 32); when none is found within it, the
    /// answer still says whether the target is reachable deeper.
    #[serde(default)]
    pub max_depth: Option<usize>,
    /// Paths to list (default 20, at most 1000); the count is exact regardless.
    #[serde(default)]
    pub limit: Option<usize>,
}

/// The document of `target` a comparison reads: the one named, or the only one.
pub(super) fn side_document(target: &Target, wanted: Option<&str>) -> Result<DocumentSpec> {
    let docs = &target.documents;
    if let Some(name) = wanted
        && let Some(doc) = docs.iter().find(|d| d.name == name)
    {
        return Ok(doc.clone());
    }
    match docs.as_slice() {
        [one] => Ok(one.clone()),
        _ => Err(InvestigationError::InvalidArgument(format!(
            "{} has {} documents; name one of them in document: {}",
            target.name,
            docs.len(),
            docs.iter()
                .map(|d| d.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// The target behind a manifest id, with the Evidence of its inventory.
pub(super) fn manifest_target(s: &Snapshot, id: &ManifestId) -> Result<(EvidenceId, Target)> {
    let (evidence, sha256) = s.store().manifest_evidence(id)?.ok_or_else(|| {
        InvestigationError::InvalidArgument(format!(
            "manifest {id} is not in this session's ledger; inspect_artifact the target first"
        ))
    })?;
    let target = s.session.opened.find(&sha256).ok_or_else(|| {
        InvestigationError::SessionState(format!(
            "the target of manifest {id} is not open in this server process: open_binary it again"
        ))
    })?;
    Ok((evidence, target))
}

/// The function-level comparison of two documents, from the session's cache when it holds it.
pub(super) async fn procedure_diff(
    s: &Snapshot,
    left: &DocumentSpec,
    right: &DocumentSpec,
) -> Result<Arc<ProcedureDiff>> {
    let cache = &s.session.analyses;
    if let Some(diff) = cache.diff(left, right) {
        return Ok(diff);
    }
    let l = s.session.images.get(left).await?;
    let r = s.session.images.get(right).await?;
    let diff = blocking(move || Ok(Arc::new(procdiff::compare_images(&l, &r)))).await?;
    cache.keep_diff(left, right, diff.clone());
    Ok(diff)
}

/// The matched pair `which` names, with its left and right addresses: the entry of the left
/// procedure it names; a procedure without a counterpart is refused with its status, and one
/// only on the right (the two sides' addresses overlap, so the left is read first) as added.
fn pair_entry<'a>(diff: &'a ProcedureDiff, which: &str) -> Result<(&'a ProcedureEntry, u64, u64)> {
    let selector = ProcedureSelector::parse(which);
    let names = |side: Option<&ProcedureSide>| match (&selector, side) {
        (ProcedureSelector::Address(a), Some(p)) => p.address == a.0,
        (ProcedureSelector::Name { name }, Some(p)) => p.name.as_deref() == Some(name.as_str()),
        _ => false,
    };
    let on_left: Vec<&ProcedureEntry> = diff
        .entries()
        .iter()
        .filter(|e| names(e.left.as_ref()))
        .collect();
    let found = if on_left.is_empty() {
        diff.entries()
            .iter()
            .filter(|e| names(e.right.as_ref()))
            .collect()
    } else {
        on_left
    };
    let entry = match found.as_slice() {
        [one] => *one,
        [] => {
            if let ProcedureSelector::Invalid(refusal) = selector {
                return Err(InvestigationError::InvalidArgument(refusal));
            }
            return Err(InvestigationError::InvalidArgument(format!(
                "detail: no procedure {which:?} on the left side of the comparison (a \
                 procedure start, 0x…, or its name)"
            )));
        }
        several => {
            return Err(InvestigationError::InvalidArgument(format!(
                "detail: {} procedures are named {which:?}; name one by address: {}",
                several.len(),
                several
                    .iter()
                    .filter_map(|e| e.left.as_ref().or(e.right.as_ref()))
                    .map(|p| format_address(p.address))
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
    };
    let shown = |p: &ProcedureSide| match &p.name {
        Some(name) => format!("{name} ({})", format_address(p.address)),
        None => format_address(p.address),
    };
    let why = match (entry.status, &entry.left, &entry.right) {
        (_, Some(l), Some(r)) => return Ok((entry, l.address, r.address)),
        (ProcedureStatus::Ambiguous, Some(l), _) => format!(
            "{} is ambiguous: its counterpart could be any of {} and none is clearly better",
            shown(l),
            entry
                .candidates
                .iter()
                .map(|c| format_address(c.address))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        (_, Some(l), None) => format!("{} is removed: only the left side has it", shown(l)),
        (_, None, Some(r)) => format!("{} is added: only the right side has it", shown(r)),
        (_, None, None) => format!("{which:?} names an entry without a procedure"),
    };
    Err(InvestigationError::InvalidArgument(format!(
        "detail: {why}, so there is no pair to diff"
    )))
}

/// The `compare_procedures` record of `args` and the page it holds, not yet committed: the tool
/// commits it alone, `carry_annotations` with the annotations that cite it.
pub(super) async fn comparison(
    s: &Snapshot,
    args: &CompareProceduresArgs,
) -> Result<(EvidenceRecord, ProcedureDiffPage)> {
    let (left_ev, left) = manifest_target(s, &args.left_manifest_id)?;
    let (right_ev, right) = manifest_target(s, &args.right_manifest_id)?;
    let left_doc = side_document(&left, args.document.as_deref())?;
    let right_doc = side_document(&right, args.document.as_deref())?;
    let request = procdiff::PageRequest {
        status: args.status,
        offset: args.offset,
        limit: args
            .limit
            .unwrap_or(DEFAULT_ENTRIES)
            .clamp(1, procdiff::MAX_PAGE),
    };
    let diff = procedure_diff(s, &left_doc, &right_doc).await?;
    let mut at = None;
    let mut page = match args.detail.as_deref() {
        None => diff.page(&request),
        Some(which) => {
            let (entry, l, r) = pair_entry(&diff, which)?;
            let entry = entry.clone();
            at = Some(format_address(r));
            let left_image = s.session.images.get(&left_doc).await?;
            let right_image = s.session.images.get(&right_doc).await?;
            let matching = diff.clone();
            let detail = blocking(move || {
                Ok(procdiff::pair_detail(
                    &matching,
                    &left_image,
                    &right_image,
                    l,
                    r,
                )?)
            })
            .await?;
            diff.pair_page(&entry, detail)
        }
    };
    // Each side shows the annotations of its own target.
    let left_view = AnalystView::load(s.store(), &left.sha256, Some(&left_doc.name))?;
    let right_view = AnalystView::load(s.store(), &right.sha256, Some(&right_doc.name))?;
    for e in &mut page.entries {
        if let Some(l) = &mut e.left {
            l.analyst = left_view.procedure(&left_doc.name, l.address);
        }
        if let Some(r) = &mut e.right {
            r.analyst = right_view.procedure(&right_doc.name, r.address);
        }
    }
    // Matching past names is heuristic (bytes, shape, similarity), so the result is derived.
    let q = right_view.qualify(
        left_view.qualify(
            Qualifiers::derived()
                .linked(vec![left_ev, right_ev])
                .at(in_document(&right_doc.name, at)),
        ),
    );
    let record = observe::record(
        "compare_procedures",
        Some(subject_of(&right)),
        args,
        &page,
        q,
    )?;
    Ok((record, page))
}

impl Investigation {
    /// `compare_procedures`: every procedure of one document of the left target matched with
    /// the right's, one page of the entries with the exact totals.
    pub async fn compare_procedures(
        &self,
        args: CompareProceduresArgs,
    ) -> Result<Observed<ProcedureDiffPage>> {
        let s = self.open_session()?;
        let (record, page) = comparison(&s, &args).await?;
        observe::commit(s.store(), Recording::of(record), page).await
    }

    /// `call_paths`: the shortest direct call paths between two procedures of the active target.
    pub async fn call_paths(&self, args: CallPathsArgs) -> Result<Observed<CallPaths>> {
        let max_depth = args.max_depth.unwrap_or(callpaths::DEFAULT_DEPTH);
        if max_depth == 0 || max_depth > callpaths::MAX_DEPTH {
            return Err(InvestigationError::InvalidArgument(format!(
                "max_depth must be 1 to {}",
                callpaths::MAX_DEPTH
            )));
        }
        let (s, a) = self.active()?;
        let document = DocumentSelector::new(args.document.as_deref());
        let from = self
            .resolve_procedure(&s, &a, &document, &args.from)
            .await?;
        // The destination is looked up in the start's document; an address that starts no
        // procedure may still be an import or a call target of the graph.
        let in_from = DocumentSelector::new(Some(&from.procedure.document));
        let to = match self.resolve_procedure(&s, &a, &in_from, &args.to).await {
            Ok(r) => r.procedure.address.0,
            Err(e) => match ProcedureSelector::parse(&args.to) {
                ProcedureSelector::Address(address) => address.0,
                _ => return Err(e),
            },
        };
        let query = PathQuery {
            from: from.procedure.address.0,
            to,
            max_depth,
            limit: args
                .limit
                .unwrap_or(DEFAULT_PATHS)
                .clamp(1, callpaths::MAX_PATHS),
            budget: PATHS_BUDGET,
        };
        let cache = &s.session.analyses;
        let graph = match cache.graph(&from.doc) {
            Some(graph) => graph,
            None => {
                let image = s.session.images.get(&from.doc).await?;
                let graph = blocking(move || {
                    Ok(Arc::new(CallGraph::build(&image).map_err(callpath_error)?))
                })
                .await?;
                cache.keep_graph(&from.doc, graph.clone());
                graph
            }
        };
        let mut paths = blocking(move || graph.paths(&query).map_err(callpath_error)).await?;
        let doc = &from.procedure.document;
        let view = AnalystView::load(s.store(), &a.target.sha256, Some(doc))?;
        paths.from.analyst = view.procedure(doc, paths.from.address);
        paths.to.analyst = view.procedure(doc, paths.to.address);
        for step in paths.paths.iter_mut().flat_map(|p| p.steps.iter_mut()) {
            step.node.analyst = view.procedure(doc, step.node.address);
        }
        for gap in &mut paths.gaps {
            gap.procedure.analyst = view.procedure(doc, gap.procedure.address);
        }
        let q = view.qualify(Qualifiers::observed().at(in_document(
            &from.procedure.document,
            Some(from.procedure.address.to_string()),
        )));
        observe::observe(
            s.store(),
            "call_paths",
            Some(subject_of(&a.target)),
            &args,
            paths,
            q,
        )
        .await
    }
}

fn callpath_error(e: callpaths::CallPathError) -> InvestigationError {
    match e {
        callpaths::CallPathError::Provider(p) => p.into(),
        other => InvestigationError::InvalidArgument(other.to_string()),
    }
}
