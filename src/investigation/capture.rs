//! Bounded process capture (`capture_process_scenario`, offered only while the operator's policy
//! enables it) and the comparison of two captures (`compare_process_captures`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::analyst::AnalystView;
use super::observe::{self, Observed, Qualifiers, in_document, subject_of};
use super::session::Snapshot;
use super::{Cancel, Investigation, InvestigationError, Result, blocking};
use crate::analyzers::capture::{
    self, Capture, CaptureComparison, CapturedStream, DataTruncated, NormalizationRule, Scenario,
    StreamEncoding,
};
use crate::evidence::{Authority, Confidence, EvidenceRecord, Subject};
use crate::ids::{Address, EvidenceId};
use crate::store::{ReadOnlyStore, Recording};

/// The operation that runs programs; its tool is in the catalog only while capture is enabled.
pub const CAPTURE_OPERATION: &str = "capture_process_scenario";

/// The operation of the Evidence pages that keep a stream cut for the message bound.
pub const OUTPUT_PAGE_OPERATION: &str = "capture_output_page";

/// One page of a stream's kept bytes, recorded as its own Evidence when the capture's result
/// shows only a prefix of them.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct OutputPage {
    /// `stdout` or `stderr`.
    pub stream: String,
    /// Offset of the page's first byte in the stream's kept bytes.
    pub offset: u64,
    /// How many bytes the page holds.
    pub bytes: u64,
    /// How `data` encodes them: text when the page's bytes are valid UTF-8 on their own, else
    /// base64 (a page may cut a character in two).
    pub encoding: StreamEncoding,
    /// The bytes.
    pub data: String,
    /// The next page, absent on the last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_page: Option<EvidenceId>,
}

/// Parameters recorded with a page: which stream, from where.
#[derive(Serialize)]
struct PageParameters<'a> {
    stream: &'a str,
    offset: u64,
}

/// How many bytes `c` takes inside a JSON string as serde_json writes it.
fn escaped_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
        c if (c as u32) < 0x20 => 6,
        c => c.len_utf8(),
    }
}

/// The prefix of `stream`'s kept bytes whose JSON string takes at most `budget` bytes, as
/// `data` of the same encoding, and how many kept bytes it holds.
fn prefix(stream: &CapturedStream, bytes: &[u8], budget: usize) -> (String, u64) {
    match stream.encoding {
        StreamEncoding::Utf8 => {
            let (mut used, mut end) = (0usize, 0usize);
            for (at, c) in stream.data.char_indices() {
                used += escaped_len(c);
                if used > budget {
                    break;
                }
                end = at + c.len_utf8();
            }
            (stream.data[..end].to_owned(), end as u64)
        }
        StreamEncoding::Base64 => {
            use base64::Engine as _;
            // Whole groups of three bytes, so the prefix decodes alone.
            let n = (budget / 4 * 3).min(bytes.len());
            let shown = &bytes[..n];
            (
                base64::engine::general_purpose::STANDARD.encode(shown),
                n as u64,
            )
        }
    }
}

/// Cuts `stream` so that its `data` takes at most an eighth of `bound` bytes of JSON (a result
/// is sent twice, as text and as structured content, and holds two streams), and returns the
/// pages that keep all its kept bytes, each at most a sixteenth of `bound` raw bytes (at most six
/// bytes of JSON each, twice, stays under `bound` when read back with get_evidence). A stream
/// that fits is left as it is.
fn bound_stream(
    stream: &mut CapturedStream,
    name: &str,
    bound: u64,
    subject: &Option<Subject>,
) -> Result<Vec<EvidenceRecord>> {
    let budget = usize::try_from(bound / 8).unwrap_or(usize::MAX);
    if stream.data.chars().map(escaped_len).sum::<usize>() <= budget {
        return Ok(vec![]);
    }
    let bytes = stream.bytes().ok_or_else(|| {
        InvestigationError::InvalidArgument(format!("the {name} of the capture does not decode"))
    })?;
    let page_size = usize::try_from(bound / 16).unwrap_or(usize::MAX).max(1);
    let mut pages = Vec::new();
    let mut next: Option<EvidenceId> = None;
    // Built from the last page back, since each page names the id of the next.
    let chunks: Vec<&[u8]> = bytes.chunks(page_size).collect();
    for (index, chunk) in chunks.iter().enumerate().rev() {
        let offset = (index * page_size) as u64;
        let (encoding, data) = match std::str::from_utf8(chunk) {
            Ok(text) => (StreamEncoding::Utf8, text.to_owned()),
            Err(_) => {
                use base64::Engine as _;
                (
                    StreamEncoding::Base64,
                    base64::engine::general_purpose::STANDARD.encode(chunk),
                )
            }
        };
        let page = OutputPage {
            stream: name.to_owned(),
            offset,
            bytes: chunk.len() as u64,
            encoding,
            data,
            next_page: next.take(),
        };
        let mut q = Qualifiers::observed();
        q.authority = Authority::ControlledReplay;
        let record = observe::record(
            OUTPUT_PAGE_OPERATION,
            subject.clone(),
            &PageParameters {
                stream: name,
                offset,
            },
            &page,
            q,
        )?;
        next = Some(record.id()?);
        pages.push(record);
    }
    pages.reverse();
    let (data, inline_bytes) = prefix(stream, &bytes, budget);
    stream.data = data;
    stream.data_truncated = next.map(|first_page| DataTruncated {
        inline_bytes,
        pages: pages.len() as u64,
        first_page,
    });
    Ok(pages)
}

/// Cuts both streams of `result` to the message bound; returns the pages that keep them.
fn bound_capture(
    result: &mut Captured,
    bound: u64,
    subject: &Option<Subject>,
) -> Result<Vec<EvidenceRecord>> {
    let mut pages = bound_stream(&mut result.capture.stdout, "stdout", bound, subject)?;
    pages.extend(bound_stream(
        &mut result.capture.stderr,
        "stderr",
        bound,
        subject,
    )?);
    Ok(pages)
}

/// `stream` with every kept byte again, read back from its pages when it was cut.
fn restore_stream(store: &ReadOnlyStore, stream: &CapturedStream) -> Result<CapturedStream> {
    let Some(cut) = &stream.data_truncated else {
        return Ok(stream.clone());
    };
    let mut bytes = Vec::with_capacity(usize::try_from(stream.captured_bytes).unwrap_or(0));
    let mut next = Some(cut.first_page.clone());
    while let Some(id) = next {
        let page = store.load::<OutputPage>(&id, OUTPUT_PAGE_OPERATION)?.result;
        let chunk = CapturedStream {
            encoding: page.encoding,
            data: page.data,
            captured_bytes: page.bytes,
            total_bytes: page.bytes,
            truncated: false,
            data_truncated: None,
        }
        .bytes()
        .ok_or_else(|| {
            InvestigationError::InvalidArgument(format!("output page {id} does not decode"))
        })?;
        bytes.extend_from_slice(&chunk);
        next = page.next_page;
    }
    Ok(CapturedStream::from_bytes(
        &bytes,
        stream.total_bytes,
        stream.truncated,
    ))
}

/// `capture` with both streams whole again.
fn restore(store: &ReadOnlyStore, capture: &Capture) -> Result<Capture> {
    let mut whole = capture.clone();
    whole.stdout = restore_stream(store, &capture.stdout)?;
    whole.stderr = restore_stream(store, &capture.stderr)?;
    Ok(whole)
}

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
    /// The analyst's name of the procedure, beside `name` (an annotation). Left out of the
    /// schema (tools/list budget), as in the other views.
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub analyst: Option<crate::ids::AnalystName>,
}

/// Where one backtrace frame is: its module, and the procedure of the active target holding it
/// when the module is one of the target's documents.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct FrameProcedure {
    /// The frame's `index` in `fault.backtrace.frames`.
    pub index: u32,
    /// File name of the frame's module; absent for anonymous memory, the stack or the vDSO.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module: Option<String>,
    /// The procedure of the active target holding the frame's static address (for a caller, a
    /// byte of its call instruction); absent when the module is not the target or no
    /// procedure holds it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub procedure: Option<FaultProcedure>,
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
    /// For a crash with a backtrace: each frame's module and, in the active target, procedure,
    /// innermost first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub frame_procedures: Vec<FrameProcedure>,
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
        analyst: None,
    })
}

/// Maps every backtrace frame to its module and, when the module is a document of the
/// snapshot's active target, to the procedure holding its static address.
async fn frame_procedures(snapshot: &Snapshot, capture: &Capture) -> Vec<FrameProcedure> {
    let Some(backtrace) = capture.fault.as_ref().and_then(|f| f.backtrace.as_ref()) else {
        return vec![];
    };
    let documents = snapshot
        .active
        .as_ref()
        .map(|a| a.target.documents.clone())
        .unwrap_or_default();
    let mut out = Vec::with_capacity(backtrace.frames.len());
    for frame in &backtrace.frames {
        let module = frame.module.as_ref();
        // Documents keep the canonical path they were opened by; maps name the file the same
        // way unless a link was followed.
        let canonical = module.and_then(|m| std::fs::canonicalize(m).ok());
        let doc = canonical
            .as_ref()
            .and_then(|m| documents.iter().find(|d| &d.file == m));
        let instruction = frame
            .static_address
            .as_deref()
            .and_then(|a| Address::parse(a).ok());
        let procedure = match (doc, instruction) {
            (Some(doc), Some(instruction)) => match snapshot.session.images.get(doc).await {
                Ok(image) => image.procedure_at(instruction.0).map(|p| FaultProcedure {
                    document: doc.name.clone(),
                    address: Address(p.address),
                    name: p.name.clone(),
                    instruction,
                    analyst: None,
                }),
                Err(_) => None,
            },
            _ => None,
        };
        out.push(FrameProcedure {
            index: frame.index,
            module: module
                .and_then(|m| m.file_name())
                .map(|n| n.to_string_lossy().into_owned()),
            procedure,
        });
    }
    out
}

/// The recording of a capture: about the snapshot's active target when there is one.
fn capture_recording(
    snapshot: Option<&Snapshot>,
    scenario: &Scenario,
    result: &mut Captured,
    bound: u64,
    view: Option<&AnalystView>,
) -> Result<Recording> {
    let subject = snapshot
        .and_then(|s| s.active.as_ref())
        .map(|a| subject_of(&a.target));
    let pages = bound_capture(result, bound, &subject)?;
    let mut q = Qualifiers::observed();
    q.confidence = Confidence::Observed;
    q.authority = Authority::ControlledReplay;
    q.locations = result
        .fault_procedure
        .iter()
        .map(|f| in_document(&f.document, Some(f.instruction.to_string())))
        .collect();
    q.links = [&result.capture.stdout, &result.capture.stderr]
        .iter()
        .filter_map(|s| s.data_truncated.as_ref().map(|c| c.first_page.clone()))
        .collect();
    if let Some(view) = view {
        q = view.qualify(q);
    }
    let record = observe::record(CAPTURE_OPERATION, subject, scenario, &*result, q)?;
    let mut recording = Recording::of(record);
    recording.pages = pages;
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
        let frame_procedures = frame_procedures(&snapshot, &capture).await;
        let mut result = Captured {
            capture,
            fault_procedure,
            frame_procedures,
        };
        // The analyst's names of the procedures the crash went through, beside the file's.
        let view = match snapshot.active.as_ref() {
            Some(a) => Some(AnalystView::load(snapshot.store(), &a.target.sha256, None)?),
            None => None,
        };
        if let Some(view) = &view {
            let procedures = result.fault_procedure.iter_mut().chain(
                result
                    .frame_procedures
                    .iter_mut()
                    .filter_map(|f| f.procedure.as_mut()),
            );
            for p in procedures {
                p.analyst = view.procedure(&p.document, p.address.0);
            }
        }
        let bound = self.max_result_bytes()?;
        let recording = capture_recording(
            Some(&snapshot),
            &scenario,
            &mut result,
            bound,
            view.as_ref(),
        )?;
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
        let mut result = Captured {
            capture,
            fault_procedure: None,
            frame_procedures: vec![],
        };
        let bound = self.max_result_bytes()?;
        let recording = capture_recording(None, scenario, &mut result, bound, None)?;
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
        // Streams cut for the message bound are compared whole, read back from their pages.
        let (left, right) = (
            restore(store, &left.result.capture)?,
            restore(store, &right.result.capture)?,
        );
        let comparison = capture::compare(&left, &right, &args.normalize);
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
