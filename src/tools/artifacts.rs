//! Artifact tools: `inspect_artifact`, `compare_artifacts`, `verify_reconstruction`.
//!
//! An inventory is recorded as one Evidence record per occurrence page plus one for the graph
//! (manifest, edges, findings) that links to its pages, all in one transaction; the manifest and
//! the occurrences of pages that validate against the inventory schema are registered for
//! completion in that same transaction.

use std::collections::BTreeSet;
use std::sync::Arc;

use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{EvidenceInline, Observed, Qualifiers, ToolError, inline, observe, subject_of};
use crate::analyzers::artifact::{
    self, Comparison, ComparisonEvidence, Edge, EvidenceView, Finding, InspectOptions, Inventory,
    InventoryEvidence, InventorySummary, Manifest, OccurrencePage, OccurrenceSet,
    ProcedureEvidence, ProviderStamp as InventoryStamp, ReconstructionSpec, Verdict,
};
use crate::evidence::{EvidenceRecord, ProviderStamp, Subject};
use crate::fsroot::Deadline;
use crate::ids::{EvidenceId, ManifestId};
use crate::server::ReaServer;
use crate::store::{OccurrenceRow, Store, insert_evidence, insert_manifest, insert_occurrences};

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
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
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

/// Reads an inventory back from its graph Evidence and the page Evidence it links to.
pub fn load_inventory(store: &Store, evidence: &EvidenceId) -> Result<Inventory, ToolError> {
    let graph = store
        .evidence(evidence)?
        .ok_or_else(|| ToolError(format!("{evidence} is not in this ledger")))?;
    let graph: InventoryGraph = serde_json::from_value(graph.record.result)
        .map_err(|e| ToolError(format!("{evidence} is not an inventory: {e}")))?;
    let mut pages = Vec::with_capacity(graph.pages.len());
    for p in &graph.pages {
        let stored = store
            .evidence(&p.evidence_id)?
            .ok_or_else(|| ToolError(format!("page {} is missing", p.evidence_id)))?;
        let page = artifact::validate_page(&stored.record.result)
            .map_err(|e| ToolError(format!("page {} is not valid: {e}", p.evidence_id)))?;
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

fn page_record(subject: &Subject, page: &OccurrencePage) -> Result<EvidenceRecord, ToolError> {
    Ok(EvidenceRecord {
        subject: Some(subject.clone()),
        provider: ProviderStamp::builtin(),
        operation: "inspect_artifact/page".into(),
        parameters: serde_json::json!({ "manifest_id": page.manifest_id, "page": page.page }),
        result: serde_json::to_value(page)?,
        confidence: crate::evidence::Confidence::Observed,
        authority: crate::evidence::Authority::ShippedArtifact,
        limitations: vec![],
        locations: vec![],
        links: vec![],
    })
}

/// Records an inventory: its pages, its graph, and the completion rows, in one transaction.
pub async fn record_inventory(
    store: &Arc<Store>,
    subject: Subject,
    params: serde_json::Value,
    inventory: Inventory,
) -> Result<(InventoryGraph, EvidenceInline), ToolError> {
    let summary = inventory.summary();
    let schema_valid = inventory.check().is_ok();
    let mut page_records = vec![];
    for page in &inventory.pages {
        page_records.push(page_record(&subject, page)?);
    }
    let target_sha256 = subject.sha256.clone();
    let result = store
        .write(move |conn| {
            let mut refs = vec![];
            let mut page_ids = vec![];
            for (page, record) in inventory.pages.iter().zip(&page_records) {
                let outcome = insert_evidence(conn, record)?;
                refs.push(PageRef {
                    page: page.page,
                    occurrences: page.occurrences.len() as u64,
                    evidence_id: outcome.id.clone(),
                });
                page_ids.push(outcome.id);
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
            let record = EvidenceRecord {
                subject: Some(subject),
                provider: ProviderStamp::builtin(),
                operation: "inspect_artifact".into(),
                parameters: params,
                result: serde_json::to_value(&graph).map_err(|e| {
                    crate::store::StoreError::CorruptRecord {
                        id: "inventory".into(),
                        source: e,
                    }
                })?,
                confidence: crate::evidence::Confidence::Observed,
                authority: crate::evidence::Authority::ShippedArtifact,
                limitations: inventory.limitations.clone(),
                locations: vec![],
                links: page_ids.clone(),
            };
            let outcome = insert_evidence(conn, &record)?;
            // Only inventories and pages that validate against the schema feed completion.
            if schema_valid {
                let manifest = &inventory.manifest.id;
                insert_manifest(
                    conn,
                    manifest,
                    &outcome.id,
                    &target_sha256,
                    inventory.pages.len() as u32,
                    inventory.occurrence_set.complete,
                )?;
                for (page, id) in inventory.pages.iter().zip(&page_ids) {
                    let value = serde_json::to_value(page).map_err(|e| {
                        crate::store::StoreError::CorruptRecord {
                            id: id.to_string(),
                            source: e,
                        }
                    })?;
                    if artifact::validate_page(&value).is_ok() {
                        let rows: Vec<OccurrenceRow> = page
                            .occurrences
                            .iter()
                            .map(|o| OccurrenceRow {
                                id: o.id.clone(),
                                part: o.part.clone(),
                                kind: o.kind.as_str().into(),
                                value: o.value.clone(),
                            })
                            .collect();
                        insert_occurrences(conn, manifest, id, &rows)?;
                    }
                }
            }
            Ok((graph, outcome, record))
        })
        .await?;
    let (graph, outcome, record) = result;
    Ok((graph, inline(outcome, record)))
}

impl ReaServer {
    /// Procedure names per document of the target with this digest, when the session opened it.
    fn procedure_names(
        &self,
        store: &Store,
        sha256: &str,
    ) -> Result<Option<artifact::ProcedureNames>, ToolError> {
        let Some(target) = store.targets()?.into_iter().find(|t| t.sha256 == sha256) else {
            return Ok(None);
        };
        let mut names = artifact::ProcedureNames::new();
        for doc in store.documents(target.id)? {
            let set: BTreeSet<String> = store
                .document_procedures(target.id, &doc.name)?
                .into_iter()
                .filter_map(|p| p.name)
                .collect();
            names.insert(doc.name, set);
        }
        Ok(Some(names))
    }
}

#[tool_router(router = artifact_tools, vis = "pub(crate)")]
impl ReaServer {
    /// Inspect the active target (open it first with open_binary): a reproducible manifest of its
    /// parts (agm_ id), edges (libraries, Info.plist, code signature, asar), occurrences
    /// (entitlements, signature facts, plist keys, Electron markers, URLs, exported symbols) in
    /// pages that are each Evidence, and findings — the graph and findings returned together.
    #[tool(
        name = "inspect_artifact",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn inspect_artifact(
        &self,
        Parameters(args): Parameters<InspectArgs>,
    ) -> Result<Json<Observed<InventoryGraph>>, ToolError> {
        let a = self.active().await?;
        let options = InspectOptions {
            page_size: args.page_size.unwrap_or(0),
            provider_version: env!("CARGO_PKG_VERSION").into(),
            ..InspectOptions::default()
        };
        // The target as admitted, by descriptor: a path swapped since open_binary is not read.
        let opened = a.target.opened().cloned().ok_or_else(|| {
            ToolError(
                "the active target was not opened by this server: open_binary it again".into(),
            )
        })?;
        let name = a.target.name.clone();
        let inventory = tokio::task::spawn_blocking(move || {
            artifact::inspect_opened(&opened, &name, &options, &Deadline::analysis())
        })
        .await??;
        let (graph, evidence) = record_inventory(
            &a.store,
            subject_of(&a.target),
            serde_json::to_value(&args)?,
            inventory,
        )
        .await?;
        Ok(Json(Observed {
            result: graph,
            evidence,
        }))
    }

    /// Compare two inventories of this ledger by manifest id: parts added, removed and changed,
    /// edges, occurrences per kind, and procedures of changed executables. Dimensions that cannot
    /// be compared (incomplete page sets, other provider versions) are reported unknown, never
    /// equal. The comparison is Evidence linked to both inventories.
    #[tool(
        name = "compare_artifacts",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn compare_artifacts(
        &self,
        Parameters(args): Parameters<CompareArgs>,
    ) -> Result<Json<Observed<Comparison>>, ToolError> {
        let store = self.session_store().await?;
        let side = |id: &ManifestId| -> Result<(EvidenceId, String), ToolError> {
            store.manifest_evidence(id)?.ok_or_else(|| {
                ToolError(format!("manifest {id} is not in this session's ledger; inspect_artifact the target first"))
            })
        };
        let (left_ev, left_sha) = side(&args.left_manifest_id)?;
        let (right_ev, right_sha) = side(&args.right_manifest_id)?;
        let left = load_inventory(&store, &left_ev)?;
        let right = load_inventory(&store, &right_ev)?;
        let left_procs = self.procedure_names(&store, &left_sha)?;
        let right_procs = self.procedure_names(&store, &right_sha)?;
        let comparison =
            artifact::compare(&left, &right, left_procs.as_ref(), right_procs.as_ref());
        let q = Qualifiers::derived().linked(vec![left_ev, right_ev]);
        Ok(Json(
            observe(&store, "compare_artifacts", None, &args, comparison, q).await?,
        ))
    }

    /// Evaluate a finite, typed reconstruction specification (claims about parts, occurrences,
    /// procedures and comparison dimensions) against inventory and comparison Evidence retained in
    /// this ledger. Each claim is pass, fail or unknown with the Evidence it rests on; a pass never
    /// covers more than its claim. The verdict is Evidence.
    #[tool(
        name = "verify_reconstruction",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn verify_reconstruction(
        &self,
        Parameters(args): Parameters<VerifyArgs>,
    ) -> Result<Json<Observed<Verdict>>, ToolError> {
        let store = self.session_store().await?;
        let mut view = EvidenceView::default();
        for manifest in store.manifests()? {
            if let Some((ev, _)) = store.manifest_evidence(&manifest)?
                && let Ok(inventory) = load_inventory(&store, &ev)
            {
                view.inventories.push(InventoryEvidence {
                    evidence_id: ev.to_string(),
                    inventory,
                });
            }
        }
        for ev in store.evidence_ids_of("compare_artifacts")? {
            if let Some(stored) = store.evidence(&ev)?
                && let Ok(comparison) = serde_json::from_value::<Comparison>(stored.record.result)
            {
                view.comparisons.push(ComparisonEvidence {
                    evidence_id: ev.to_string(),
                    comparison,
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
        let verdict = artifact::verify(&args.spec, &view);
        let links: Vec<EvidenceId> = verdict
            .evidence_ids
            .iter()
            .filter_map(|e| EvidenceId::parse(e).ok())
            .collect();
        let q = Qualifiers::derived().linked(links);
        Ok(Json(
            observe(&store, "verify_reconstruction", None, &args, verdict, q).await?,
        ))
    }
}
