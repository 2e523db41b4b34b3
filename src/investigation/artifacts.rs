//! Artifact inventories (`inspect_artifact`), their comparison (`compare_artifacts`) and the
//! verification of reconstruction claims against them (`verify_reconstruction`).
//!
//! An inventory is recorded as one Evidence record per occurrence page plus one for the graph
//! (manifest, edges, findings) that links to its pages, all in one transaction; the manifest and
//! the occurrences of pages that validate against the inventory schema are registered for
//! completion in that same transaction. Page ids are digests of the page records, so the whole
//! recording is built before anything is stored, and without a session for the command line.

use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::observe::{self, Observed, Qualifiers, subject_of};
use super::{Investigation, InvestigationError, Result, blocking};
use crate::analyzers::artifact::{
    self, Comparison, ComparisonEvidence, Edge, EvidenceView, Finding, InspectOptions, Inventory,
    InventoryEvidence, InventorySummary, Manifest, OccurrencePage, OccurrenceSet,
    ProcedureEvidence, ProviderStamp as InventoryStamp, ReconstructionSpec, Verdict,
};
use crate::analyzers::procdiff::ProcedureDiffPage;
use crate::evidence::{Authority, Confidence, EvidenceRecord, ProviderStamp, Subject};
use crate::fsroot::Deadline;
use crate::ids::{EvidenceId, ManifestId};
use crate::providers::native::Target;
use crate::store::{
    LoadError, ManifestRegistration, OccurrenceRegistration, OccurrenceRow, ReadOnlyStore,
    Recording,
};

/// The operation of an inventory's graph record.
const INSPECT: &str = "inspect_artifact";
/// The operation of an inventory's page records.
const INSPECT_PAGE: &str = "inspect_artifact/page";
/// The operation of a JavaScript analysis, whose graph id completes like a manifest id.
const JAVASCRIPT: &str = "analyze_javascript_application";
/// The operation of a comparison's record.
const COMPARE: &str = "compare_artifacts";

/// A page of occurrences as the inventory Evidence refers to it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct PageRef {
    /// Page number, from 0.
    pub page: u32,
    /// Occurrences on the page.
    pub occurrences: u64,
    /// The Evidence holding the page (read it with get_evidence).
    pub evidence_id: EvidenceId,
}

/// The graph and findings of an inventory, as recorded and returned inline.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct InventoryGraph {
    /// Counts per kind.
    pub summary: InventorySummary,
    /// Who produced it.
    pub provider: InventoryStamp,
    /// Every part of the target, with sizes, digests and kinds.
    pub manifest: Manifest,
    /// Links to libraries, plist, code signature, asar unpacked folder.
    pub edges: Vec<Edge>,
    /// What a reviewer would flag, each citing occurrence ids.
    pub findings: Vec<Finding>,
    /// Whether the occurrence page set is complete.
    pub occurrence_set: OccurrenceSet,
    /// What was not read or not done.
    pub limitations: Vec<String>,
    /// The occurrence pages, each its own Evidence.
    pub pages: Vec<PageRef>,
}

/// Arguments of `inspect_artifact`.
#[derive(Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InspectArgs {
    /// Occurrences per page (default 500).
    #[serde(default)]
    pub page_size: Option<usize>,
}

/// Arguments of `compare_artifacts`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompareArgs {
    /// Manifest id of the left (older) side, from inspect_artifact in this session.
    pub left_manifest_id: ManifestId,
    /// Manifest id of the right (newer) side.
    pub right_manifest_id: ManifestId,
}

/// Arguments of `verify_reconstruction`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VerifyArgs {
    /// The claims to evaluate against Evidence retained in this ledger.
    pub spec: ReconstructionSpec,
}

fn page_record(subject: &Subject, page: &OccurrencePage) -> Result<EvidenceRecord> {
    Ok(EvidenceRecord {
        subject: Some(subject.clone()),
        provider: ProviderStamp::builtin(),
        operation: INSPECT_PAGE.into(),
        parameters: serde_json::json!({ "manifest_id": page.manifest_id, "page": page.page }),
        result: serde_json::to_value(page)?,
        confidence: Confidence::Observed,
        authority: Authority::ShippedArtifact,
        limitations: vec![],
        locations: vec![],
        links: vec![],
    })
}

/// The recording of an inventory: one record per occurrence page, the graph record linking to
/// them, and (for a schema-valid inventory) its manifest and the occurrences of its valid pages.
pub fn inventory_recording<P: Serialize>(
    subject: Subject,
    params: &P,
    inventory: &Inventory,
) -> Result<(InventoryGraph, Recording)> {
    let summary = inventory.summary();
    let schema_valid = inventory.check().is_ok();
    let mut pages = vec![];
    let mut refs = vec![];
    let mut page_ids = vec![];
    for page in &inventory.pages {
        let record = page_record(&subject, page)?;
        let id = record.id()?;
        refs.push(PageRef {
            page: page.page,
            occurrences: page.occurrences.len() as u64,
            evidence_id: id.clone(),
        });
        page_ids.push(id);
        pages.push(record);
    }
    let graph = InventoryGraph {
        summary,
        provider: inventory.provider.clone(),
        manifest: inventory.manifest.clone(),
        edges: inventory.edges.clone(),
        findings: inventory.findings.clone(),
        occurrence_set: inventory.occurrence_set.clone(),
        limitations: inventory.limitations.clone(),
        pages: refs,
    };
    let target_sha256 = subject.sha256.clone();
    let mut q = Qualifiers::observed().linked(page_ids.clone());
    q.limitations = inventory.limitations.clone();
    let primary = observe::record(INSPECT, Some(subject), params, &graph, q)?;
    let mut recording = Recording::of(primary);
    recording.pages = pages;
    // Only inventories and pages that validate against the schema feed completion.
    if schema_valid {
        let manifest = inventory.manifest.id.clone();
        recording.manifest = Some(ManifestRegistration {
            id: manifest.clone(),
            target_sha256,
            pages: inventory.pages.len() as u32,
            complete: inventory.occurrence_set.complete,
        });
        for (page, id) in inventory.pages.iter().zip(&page_ids) {
            if artifact::validate_page(&serde_json::to_value(page)?).is_ok() {
                recording.occurrences.push(OccurrenceRegistration {
                    manifest: manifest.clone(),
                    evidence: id.clone(),
                    rows: page
                        .occurrences
                        .iter()
                        .map(|o| OccurrenceRow {
                            id: o.id.clone(),
                            part: o.part.clone(),
                            kind: o.kind.as_str().into(),
                            value: o.value.clone(),
                        })
                        .collect(),
                });
            }
        }
    }
    Ok((graph, recording))
}

/// The inventory of `target` and its recording, as `inspect_artifact` with `args` makes them.
/// Blocking.
fn inspect_target(
    target: &Target,
    args: &InspectArgs,
) -> Result<(Inventory, InventoryGraph, Recording)> {
    let options = InspectOptions {
        page_size: args.page_size.unwrap_or(0),
        provider_version: env!("CARGO_PKG_VERSION").into(),
        ..InspectOptions::default()
    };
    // The target as admitted, by descriptor: a path swapped since open_binary is not read.
    let opened = target.opened().ok_or_else(|| {
        InvestigationError::SessionState(
            "the active target was not opened by this server: open_binary it again".into(),
        )
    })?;
    let inventory =
        artifact::inspect_opened(opened, &target.name, &options, &Deadline::analysis())?;
    let (graph, recording) = inventory_recording(subject_of(target), args, &inventory)?;
    Ok((inventory, graph, recording))
}

/// Reads an inventory back from its graph Evidence and the page Evidence it links to.
fn load_inventory(store: &ReadOnlyStore, evidence: &EvidenceId) -> Result<Inventory> {
    let graph = store.load::<InventoryGraph>(evidence, INSPECT)?.result;
    let mut pages = Vec::with_capacity(graph.pages.len());
    for p in &graph.pages {
        let stored = store.load::<serde_json::Value>(&p.evidence_id, INSPECT_PAGE)?;
        let page = artifact::validate_page(&stored.result).map_err(|e| LoadError::Corrupt {
            id: p.evidence_id.clone(),
            operation: INSPECT_PAGE.into(),
            reason: e.to_string(),
        })?;
        pages.push(page);
    }
    Ok(Inventory {
        provider: graph.provider,
        manifest: graph.manifest,
        edges: graph.edges,
        findings: graph.findings,
        occurrence_set: graph.occurrence_set,
        pages,
        limitations: graph.limitations,
    })
}

/// The documents of `target` by part path: what `compare_artifacts` compares function by
/// function when a part changed.
fn part_documents(target: &Target) -> artifact::PartDocuments {
    target
        .documents
        .iter()
        .map(|doc| (doc.name.clone(), doc.clone()))
        .collect()
}

/// The inventory a manifest id of `compare_artifacts` names. A JavaScript application graph
/// completes like a manifest but is no inventory: it is refused with what to do instead, not
/// read as one.
fn load_side(store: &ReadOnlyStore, id: &ManifestId, evidence: &EvidenceId) -> Result<Inventory> {
    match load_inventory(store, evidence) {
        Err(InvestigationError::Load(LoadError::WrongOperation { found, .. }))
            if found == JAVASCRIPT =>
        {
            Err(InvestigationError::InvalidArgument(format!(
                "{id} is a JavaScript application graph (analyze_javascript_application), not an inventory: compare_artifacts compares the manifests of inspect_artifact. Two analyses are of the same application files exactly when their graph ids and input.files_sha256 agree"
            )))
        }
        other => other,
    }
}

/// The record of a comparison of the inventories carried by `left` and `right`.
fn comparison_recording(
    args: &CompareArgs,
    comparison: &Comparison,
    left: EvidenceId,
    right: EvidenceId,
) -> Result<Recording> {
    let q = Qualifiers::derived().linked(vec![left, right]);
    Ok(Recording::of(observe::record(
        COMPARE, None, args, comparison, q,
    )?))
}

impl Investigation {
    /// `inspect_artifact`: the active target's inventory, recorded with its pages.
    pub async fn inspect_artifact(&self, args: InspectArgs) -> Result<Observed<InventoryGraph>> {
        let (s, a) = self.active()?;
        let active = a.clone();
        let (_, graph, recording) = blocking(move || inspect_target(&active.target, &args)).await?;
        observe::commit(s.store(), recording, graph).await
    }

    /// What `open_binary` of `path` then `inspect_artifact` would record, without a session:
    /// the inventory (for a report) and the recording. Blocking.
    pub fn inspect_detached(
        &self,
        path: &Path,
        args: InspectArgs,
    ) -> Result<(Inventory, InventoryGraph, Recording)> {
        let path = self.checked_path(path)?;
        let target = super::admit(&path)?;
        inspect_target(&target, &args)
    }

    /// `compare_artifacts`: two inventories of this ledger compared, by manifest id.
    pub async fn compare_artifacts(&self, args: CompareArgs) -> Result<Observed<Comparison>> {
        let s = self.open_session()?;
        let store = s.store().clone();
        let side = |id: &ManifestId| -> Result<(EvidenceId, String)> {
            store.manifest_evidence(id)?.ok_or_else(|| {
                InvestigationError::InvalidArgument(format!(
                    "manifest {id} is not in this session's ledger; inspect_artifact the target first"
                ))
            })
        };
        let (left_ev, left_sha) = side(&args.left_manifest_id)?;
        let (right_ev, right_sha) = side(&args.right_manifest_id)?;
        let left = load_side(&store, &args.left_manifest_id, &left_ev)?;
        let right = load_side(&store, &args.right_manifest_id, &right_ev)?;
        // Only targets this process opened are held by descriptor; a side opened before a
        // restart leaves the procedures unknown until it is opened again.
        let left_docs = s.session.opened.find(&left_sha).map(|t| part_documents(&t));
        let right_docs = s
            .session
            .opened
            .find(&right_sha)
            .map(|t| part_documents(&t));
        let comparison = blocking(move || {
            Ok(artifact::compare(
                &left,
                &right,
                left_docs.as_ref(),
                right_docs.as_ref(),
            ))
        })
        .await?;
        let recording = comparison_recording(&args, &comparison, left_ev, right_ev)?;
        observe::commit(&store, recording, comparison).await
    }

    /// What opening and inspecting `left` and `right` and then `compare_artifacts` of their
    /// manifests would record, without a session. Blocking.
    pub fn compare_detached(&self, left: &Path, right: &Path) -> Result<(Comparison, Recording)> {
        let sides = [left, right].map(|path| -> Result<_> {
            let target = super::admit(&self.checked_path(path)?)?;
            let (inventory, _, recording) = inspect_target(&target, &InspectArgs::default())?;
            Ok((inventory, recording.primary_id()?, part_documents(&target)))
        });
        let [left, right] = sides;
        let (left, right) = (left?, right?);
        let comparison = artifact::compare(&left.0, &right.0, Some(&left.2), Some(&right.2));
        let args = CompareArgs {
            left_manifest_id: left.0.manifest.id.clone(),
            right_manifest_id: right.0.manifest.id.clone(),
        };
        let recording = comparison_recording(&args, &comparison, left.1, right.1)?;
        Ok((comparison, recording))
    }

    /// `verify_reconstruction`: claims evaluated against inventories, comparisons and procedure
    /// inventories retained in this ledger.
    pub async fn verify_reconstruction(&self, args: VerifyArgs) -> Result<Observed<Verdict>> {
        let s = self.open_session()?;
        let store = s.store();
        let mut view = EvidenceView::default();
        for manifest in store.manifests()? {
            if let Some((ev, _)) = store.manifest_evidence(&manifest)?
                && let Ok(inventory) = load_inventory(store, &ev)
            {
                view.inventories.push(InventoryEvidence {
                    evidence_id: ev.to_string(),
                    inventory,
                });
            }
        }
        for ev in store.evidence_ids_of(COMPARE)? {
            if let Ok(loaded) = store.load::<Comparison>(&ev, COMPARE) {
                view.comparisons.push(ComparisonEvidence {
                    evidence_id: ev.to_string(),
                    comparison: loaded.result,
                });
            }
        }
        for target in store.targets()? {
            let Some(ev) = store.evidence_about("open_binary", &target.sha256)? else {
                continue;
            };
            for doc in store.documents(target.id)? {
                let names = store
                    .document_procedures(target.id, &doc.name)?
                    .into_iter()
                    .filter_map(|p| p.name)
                    .collect();
                view.procedures.push(ProcedureEvidence {
                    evidence_id: ev.to_string(),
                    document: doc.name,
                    names,
                    complete: true,
                });
            }
        }
        for ev in store.evidence_ids_of("compare_procedures")? {
            if let Ok(loaded) = store.load::<ProcedureDiffPage>(&ev, "compare_procedures") {
                view.procedure_comparisons
                    .push(artifact::ProcedureComparisonEvidence {
                        evidence_id: ev.to_string(),
                        page: loaded.result,
                    });
            }
        }
        let verdict = artifact::verify(&args.spec, &view);
        let links: Vec<EvidenceId> = verdict
            .evidence_ids
            .iter()
            .filter_map(|e| EvidenceId::parse(e).ok())
            .collect();
        let q = Qualifiers::derived().linked(links);
        observe::observe(store, "verify_reconstruction", None, &args, verdict, q).await
    }
}
