//! Runtime tools: `capture_process_scenario` (offered only while the operator's policy enables
//! process capture) and `compare_process_captures`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Observed, Qualifiers, ToolError, inline, subject_of};
use crate::analyzers::capture::{self, Capture, CaptureComparison, NormalizationRule, Scenario};
use crate::evidence::{Authority, Confidence, EvidenceRecord, Location, ProviderStamp};
use crate::ids::{Address, EvidenceId};
use crate::server::ReaServer;
use crate::store::Recording;

/// Name of the tool that runs programs; it is in the catalog only while capture is enabled.
pub const CAPTURE_TOOL: &str = "capture_process_scenario";

/// The procedure of the active target that holds a crash's faulting instruction.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct FaultProcedure {
    /// Document of the active target.
    pub document: String,
    /// Start of the procedure.
    pub address: Address,
    /// Its name, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The faulting instruction's static address.
    pub instruction: Address,
}

/// A capture as recorded.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Captured {
    /// What happened.
    #[serde(flatten)]
    pub capture: Capture,
    /// For a crash in the active target: the procedure holding the faulting instruction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault_procedure: Option<FaultProcedure>,
}

/// Arguments of `compare_process_captures`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompareCapturesArgs {
    /// The first capture (Evidence id of a capture_process_scenario result).
    pub left_capture_id: EvidenceId,
    /// The second capture.
    pub right_capture_id: EvidenceId,
    /// Normalization applied to both outputs before comparing: built-in names ("timestamps",
    /// "hex-addresses", "pids") or {pattern, replacement} rules.
    #[serde(default)]
    pub normalize: Vec<NormalizationRule>,
}

impl ReaServer {
    /// Maps a fault to the active target's procedure when the faulting module is one of its
    /// documents' files.
    async fn fault_procedure(&self, capture: &Capture) -> Option<FaultProcedure> {
        let fault = capture.fault.as_ref()?;
        let module = std::fs::canonicalize(fault.module.as_ref()?).ok()?;
        let instruction = Address::parse(fault.static_address.as_deref()?).ok()?;
        let a = self.active().await.ok()?;
        let doc = a
            .target
            .documents
            .iter()
            .find(|d| d.file == module)?
            .clone();
        let image = self.image_for(&doc).await.ok()?;
        let p = image.procedure_at(instruction.0)?;
        Some(FaultProcedure {
            document: doc.name,
            address: Address(p.address),
            name: p.name.clone(),
            instruction,
        })
    }

    async fn load_capture(
        &self,
        store: &crate::store::Store,
        id: &EvidenceId,
    ) -> Result<Captured, ToolError> {
        let e = store
            .evidence(id)?
            .ok_or_else(|| ToolError(format!("{id} is not in this session's ledger")))?;
        if e.record.operation != CAPTURE_TOOL {
            return Err(ToolError(format!(
                "{id} is {} Evidence, not a process capture",
                e.record.operation
            )));
        }
        serde_json::from_value(e.record.result)
            .map_err(|err| ToolError(format!("{id} does not hold a valid capture: {err}")))
    }
}

#[tool_router(router = capture_tools, vis = "pub(crate)")]
impl ReaServer {
    /// Run one bounded, operator-approved scenario of a program and record what happened: exit
    /// code or signal, times, peak memory, capped outputs, the limit that ended it, and for a
    /// crash the faulting address mapped to the active target's procedure. The policy is checked
    /// before anything starts; network is off unless asked and allowed.
    #[tool(
        name = "capture_process_scenario",
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    pub async fn capture_process_scenario(
        &self,
        Parameters(scenario): Parameters<Scenario>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<Observed<Captured>>, ToolError> {
        // The operator's allowed roots bound every path a tool takes, the policy's roots
        // included.
        for path in [&scenario.executable, &scenario.working_directory] {
            self.checked_path(path)
                .map_err(|e| ToolError(format!("refused, nothing was run: {}", e.0)))?;
        }
        let policy = self.shared().policy();
        let approved = capture::check(&policy, &scenario)
            .map_err(|r| ToolError(format!("refused, nothing was run: {r}")))?;
        let cancel = Arc::new(AtomicBool::new(false));
        let flag = cancel.clone();
        let ct = context.ct.clone();
        let watcher = tokio::spawn(async move {
            ct.cancelled().await;
            flag.store(true, Ordering::SeqCst);
        });
        let run_flag = cancel.clone();
        let outcome = tokio::task::spawn_blocking(move || capture::run(&approved, &run_flag)).await;
        watcher.abort();
        let capture = outcome??;
        let fault_procedure = self.fault_procedure(&capture).await;
        let store = self.ensure_session().await?;
        let subject = self.active().await.ok().map(|a| subject_of(&a.target));
        let result = Captured {
            capture,
            fault_procedure,
        };
        let locations = result
            .fault_procedure
            .iter()
            .map(|f| Location {
                document: Some(f.document.clone()),
                address: Some(f.instruction.to_string()),
                file: None,
                line: None,
            })
            .collect();
        let record = EvidenceRecord {
            subject,
            provider: ProviderStamp::builtin(),
            operation: CAPTURE_TOOL.into(),
            parameters: serde_json::to_value(&scenario)?,
            result: serde_json::to_value(&result)?,
            confidence: Confidence::Observed,
            authority: Authority::ControlledReplay,
            limitations: vec![],
            locations,
            links: vec![],
        };
        // The result must read back as a capture before it feeds Process capture completion.
        let valid = serde_json::from_value::<Captured>(record.result.clone()).is_ok();
        let mut recording = Recording::of(record.clone());
        recording.process_capture = valid;
        let outcome = store.commit(recording).await?.primary;
        Ok(Json(Observed {
            result,
            evidence: inline(outcome, record),
        }))
    }

    /// Compare two retained process captures: exit status, outputs after the normalization rules
    /// given, limits hit, faults. A truncated output is never called equal to another.
    #[tool(
        name = "compare_process_captures",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn compare_process_captures(
        &self,
        Parameters(args): Parameters<CompareCapturesArgs>,
    ) -> Result<Json<Observed<CaptureComparison>>, ToolError> {
        capture::validate_rules(&args.normalize).map_err(|e| ToolError(e.to_string()))?;
        let store = self.session_store().await?;
        let left = self.load_capture(&store, &args.left_capture_id).await?;
        let right = self.load_capture(&store, &args.right_capture_id).await?;
        let comparison = capture::compare(&left.capture, &right.capture, &args.normalize);
        let q = Qualifiers::derived().linked(vec![
            args.left_capture_id.clone(),
            args.right_capture_id.clone(),
        ]);
        Ok(Json(
            super::observe(
                &store,
                "compare_process_captures",
                None,
                &args,
                comparison,
                q,
            )
            .await?,
        ))
    }
}
