//! Bounded process capture (`capture_process_scenario`, offered only while the operator's policy
//! enables it) and the comparison of two captures (`compare_process_captures`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::observe::{self, Observed, Qualifiers, in_document, subject_of};
use super::session::Snapshot;
use super::{Cancel, Investigation, InvestigationError, Result, blocking};
use crate::analyzers::capture::{self, Capture, CaptureComparison, NormalizationRule, Scenario};
use crate::evidence::{Authority, Confidence};
use crate::ids::{Address, EvidenceId};
use crate::store::Recording;

/// The operation that runs programs; its tool is in the catalog only while capture is enabled.
pub const CAPTURE_OPERATION: &str = "capture_process_scenario";

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

/// Maps a fault to the snapshot's active target's procedure when the faulting module is one of
/// its documents' files.
async fn fault_procedure(snapshot: &Snapshot, capture: &Capture) -> Option<FaultProcedure> {
    let fault = capture.fault.as_ref()?;
    let module = std::fs::canonicalize(fault.module.as_ref()?).ok()?;
    let instruction = Address::parse(fault.static_address.as_deref()?).ok()?;
    let active = snapshot.active.as_ref()?;
    let doc = active
        .target
        .documents
        .iter()
        .find(|d| d.file == module)?
        .clone();
    let image = snapshot.session.images.get(&doc).await.ok()?;
    let p = image.procedure_at(instruction.0)?;
    Some(FaultProcedure {
        document: doc.name,
        address: Address(p.address),
        name: p.name.clone(),
        instruction,
    })
}

/// The recording of a capture: about the snapshot's active target when there is one.
fn capture_recording(
    snapshot: Option<&Snapshot>,
    scenario: &Scenario,
    result: &Captured,
) -> Result<Recording> {
    let subject = snapshot
        .and_then(|s| s.active.as_ref())
        .map(|a| subject_of(&a.target));
    let mut q = Qualifiers::observed();
    q.confidence = Confidence::Observed;
    q.authority = Authority::ControlledReplay;
    q.locations = result
        .fault_procedure
        .iter()
        .map(|f| in_document(&f.document, Some(f.instruction.to_string())))
        .collect();
    let record = observe::record(CAPTURE_OPERATION, subject, scenario, result, q)?;
    let mut recording = Recording::of(record);
    // The result must read back as a capture before it feeds Process capture completion.
    recording.process_capture =
        serde_json::from_value::<Captured>(recording.primary.result.clone()).is_ok();
    Ok(recording)
}

impl Investigation {
    /// Checks `scenario` against the allowed roots and the capture policy, without running it.
    fn approve(&self, scenario: &Scenario) -> Result<capture::ApprovedScenario> {
        // The operator's allowed roots bound every path an operation takes, the policy's roots
        // included.
        for path in [&scenario.executable, &scenario.working_directory] {
            self.checked_path(path)
                .map_err(|e| InvestigationError::CaptureRefused(e.to_string()))?;
        }
        capture::check(&self.policy.current(), scenario)
            .map_err(|r| InvestigationError::CaptureRefused(r.to_string()))
    }

    /// `capture_process_scenario`: one bounded, policy-approved run, recorded.
    pub async fn capture_process_scenario(
        &self,
        scenario: Scenario,
        cancel: &Cancel,
    ) -> Result<Observed<Captured>> {
        let approved = self.approve(&scenario)?;
        let flag = cancel.clone();
        let capture = blocking(move || Ok(capture::run(&approved, flag.flag())?)).await?;
        // One snapshot for both the fault's procedure and the record's subject.
        let snapshot = self.ensure_session().await?;
        let fault_procedure = fault_procedure(&snapshot, &capture).await;
        let result = Captured {
            capture,
            fault_procedure,
        };
        let recording = capture_recording(Some(&snapshot), &scenario, &result)?;
        observe::commit(snapshot.store(), recording, result).await
    }

    /// What `capture_process_scenario` with no target open records for `scenario`, without a
    /// session: the run happens, nothing is stored. Blocking.
    pub fn capture_detached(
        &self,
        scenario: &Scenario,
        cancel: &Cancel,
    ) -> Result<(Captured, Recording)> {
        let approved = self.approve(scenario)?;
        let capture = capture::run(&approved, cancel.flag())?;
        let result = Captured {
            capture,
            fault_procedure: None,
        };
        let recording = capture_recording(None, scenario, &result)?;
        Ok((result, recording))
    }

    /// `compare_process_captures`: two retained captures compared after normalization.
    pub async fn compare_process_captures(
        &self,
        args: CompareCapturesArgs,
    ) -> Result<Observed<CaptureComparison>> {
        capture::validate_rules(&args.normalize)?;
        let s = self.open_session()?;
        let store = s.store();
        let left = store.load::<Captured>(&args.left_capture_id, CAPTURE_OPERATION)?;
        let right = store.load::<Captured>(&args.right_capture_id, CAPTURE_OPERATION)?;
        let comparison =
            capture::compare(&left.result.capture, &right.result.capture, &args.normalize);
        let q = Qualifiers::derived().linked(vec![
            args.left_capture_id.clone(),
            args.right_capture_id.clone(),
        ]);
        observe::observe(
            store,
            "compare_process_captures",
            None,
            &args,
            comparison,
            q,
        )
        .await
    }
}
