//! Reading deeper than the disassembly: a procedure's pseudo-code from a decompiling provider
//! (angr), and the raw bytes of the document at an address or matching a pattern.
//!
//! A decompilation is slow and its result does not change for one document, so the whole
//! pseudo-code is recorded once (its parameters name the document, the procedure and the
//! provider, never the page) and every later page, in this call or another, is cut from that
//! record in the ledger: asking again costs a lookup, not a decompilation.

use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::args::cap;
use super::decompilers::InFlight;
use super::observe::{self, EvidenceInline, Observed, Qualifiers, in_document, subject_of};
use super::session::{ActiveTarget, Snapshot};
use super::{
    Cancel, DocumentSelector, Investigation, InvestigationError, Progress, Result, blocking,
};
use crate::evidence::{Authority, Confidence, ProviderStamp};
use crate::fsroot::Deadline;
use crate::ids::{Address, EvidenceId};
use crate::providers::angr;
use crate::providers::decompile::{
    AnalystHints, DEFAULT_PAGE_LINES, DataHint, MAX_PAGE_LINES, ProcedureHint, PseudoCode,
    PseudoCodePage,
};
use crate::providers::native::{ByteHit, BytePattern, ByteRead, Image, MAX_HITS_PAGE};
use crate::store::{AnnotationKind, AnnotationScope, LiveAnnotation, RecordOutcome};

/// The operation that records pseudo-code.
const PSEUDO_CODE: &str = "procedure_pseudo_code";

/// Arguments of `procedure_pseudo_code`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PseudoCodeArgs {
    /// A procedure start address (0x…), an address inside one, or a unique name (at most 4 KiB).
    #[serde(deserialize_with = "cap::name")]
    pub procedure: String,
    /// The document, when needed to tell procedures apart (at most 4 KiB).
    #[serde(default)]
    #[serde(deserialize_with = "cap::name_opt")]
    pub document: Option<String>,
    /// `auto` (default: angr when installed) or `angr` (at most 4 KiB).
    #[serde(default)]
    #[serde(deserialize_with = "cap::name_opt")]
    pub provider_id: Option<String>,
    /// First line of the page (default 0).
    #[serde(default)]
    pub offset: usize,
    /// Lines in the page (default 200, at most 2000).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Seconds to wait for a decompilation not yet recorded (default 45, 1 to 600). Past
    /// them the answer says what is done; angr goes on and records the result, which the next
    /// ask returns.
    #[serde(default)]
    pub wait_seconds: Option<u64>,
}

/// What a pseudo-code record is about: its parameters in the ledger, whatever page was asked.
/// `annotations` are the Evidence ids of the annotation revisions the decompiler applied, so a
/// new revision that affects the procedure asks anew, and an unchanged set finds the record.
#[derive(Debug, Clone, Serialize)]
struct PseudoCodeKey {
    document: String,
    procedure: Address,
    provider: &'static str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    annotations: Vec<EvidenceId>,
}

/// How long a call waits for a decompilation by default before it answers that it goes on:
/// below the 60 s request timeout of the MCP SDKs.
const DEFAULT_WAIT_SECONDS: u64 = 45;

/// The longest wait a call may ask for.
const MAX_WAIT_SECONDS: u64 = 600;

/// At most this many direct callees of a procedure just decompiled are decompiled ahead.
const AHEAD: usize = 8;

/// One procedure's decompilation as the ledger knows it: its key, and the hints it applies.
struct Ask {
    key: PseudoCodeKey,
    hints: AnalystHints,
}

impl Ask {
    /// The decompilation of the procedure at `start` of `document`, with the annotations of
    /// `heads` that apply to it.
    async fn of(
        image: &Arc<Image>,
        document: &str,
        start: u64,
        heads: &[LiveAnnotation],
    ) -> Result<Ask> {
        let (hints, used) = if heads.is_empty() {
            (AnalystHints::default(), Vec::new())
        } else {
            let callees = {
                let image = image.clone();
                blocking(move || {
                    Ok(image
                        .callees(start)
                        .map(|e| e.callees.iter().map(|c| c.target).collect::<Vec<_>>())
                        .unwrap_or_default())
                })
                .await?
            };
            analyst_hints(heads, start, &callees)
        };
        Ok(Ask {
            key: PseudoCodeKey {
                document: document.to_owned(),
                procedure: Address(start),
                provider: angr::PROVIDER_ID,
                annotations: used,
            },
            hints,
        })
    }

    /// The key of the decompilation in flight: the target and the record's parameters.
    fn flight(&self, sha256: &str) -> Result<String> {
        flight_of(sha256, &self.key)
    }
}

fn flight_of(sha256: &str, key: &PseudoCodeKey) -> Result<String> {
    Ok(format!("{sha256} {}", serde_json::to_string(key)?))
}

/// The page of the recorded pseudo-code `key` names, when the ledger has it; `fresh` when this
/// call waited for it to be recorded.
fn stored(
    s: &Snapshot,
    a: &ActiveTarget,
    key: &PseudoCodeKey,
    offset: usize,
    limit: usize,
    fresh: bool,
) -> Result<Option<Observed<PseudoCodePage>>> {
    let Some(stored) = s
        .store()
        .find_observation(PSEUDO_CODE, &a.target.sha256, key)?
    else {
        return Ok(None);
    };
    let code: PseudoCode = serde_json::from_value(stored.record.result.clone())?;
    let outcome = RecordOutcome {
        id: stored.id,
        seq: stored.seq,
        created_at: stored.created_at,
        new: fresh,
    };
    Ok(Some(Observed {
        result: code.page(offset, limit),
        evidence: EvidenceInline::new(outcome, stored.record),
    }))
}

/// Whether the callee at `address` is worth decompiling ahead: a procedure of the inventory,
/// not a stub that jumps to an import (its pseudo-code is one call).
fn decompiled_ahead(image: &Image, address: u64) -> bool {
    let Some(procedure) = image.procedure_starting_at(address) else {
        return false;
    };
    let stub_name = procedure
        .name
        .as_deref()
        .is_some_and(|n| n.ends_with("@plt") || n.ends_with("@thunk"));
    let stub_section = image.section_at(address).is_some_and(|s| {
        let name = s.name.as_str();
        name.contains("plt") || name.contains("stubs") || name == ".idata"
    });
    !stub_name && !stub_section
}

/// Records `code`, the decompilation `key` names, as Evidence of `subject`.
async fn record_pseudo_code(
    store: Arc<crate::store::Store>,
    subject: crate::evidence::Subject,
    key: PseudoCodeKey,
    code: Arc<PseudoCode>,
) -> Result<()> {
    let mut limitations = code.limitations.clone();
    if !key.annotations.is_empty() {
        limitations.push(format!(
            "the decompiler applied {} analyst annotation revision(s) (linked): names, prototypes and types they give are analyst-inference, not read from the file",
            key.annotations.len()
        ));
    }
    let q = Qualifiers {
        confidence: Confidence::Derived,
        authority: Authority::ShippedArtifact,
        provider: ProviderStamp {
            id: code.provider.id.clone(),
            name: code.provider.name.clone(),
            version: code.provider.version.clone(),
        },
        limitations,
        links: key.annotations.clone(),
        ..Qualifiers::observed()
    }
    .at(in_document(&key.document, Some(key.procedure.to_string())));
    let record = observe::record(PSEUDO_CODE, Some(subject), &key, &*code, q)?;
    store.commit(crate::store::Recording::of(record)).await?;
    Ok(())
}

/// The analyst's annotations a decompilation of the procedure at `start` applies, and the
/// Evidence ids of their revisions (sorted): names and prototypes of the procedure and of its
/// direct callees (`callees`), every data name and type of the document (which data angr's code
/// shows is known only after decompiling), and the document's C types when a prototype or data
/// type may name them.
fn analyst_hints(
    heads: &[LiveAnnotation],
    start: u64,
    callees: &[u64],
) -> (AnalystHints, Vec<EvidenceId>) {
    let mut hints = AnalystHints::default();
    let mut used = Vec::new();
    let mut procedures: std::collections::BTreeMap<u64, ProcedureHint> = Default::default();
    let mut data: std::collections::BTreeMap<u64, DataHint> = Default::default();
    let mut declarations = false;
    let mut sorted: Vec<&LiveAnnotation> = heads.iter().collect();
    sorted.sort_by(|a, b| (a.address, &a.id).cmp(&(b.address, &b.id)));
    for head in &sorted {
        let Some(address) = head.address else {
            continue;
        };
        match (head.scope, head.kind) {
            (AnnotationScope::Procedure, AnnotationKind::Name | AnnotationKind::Prototype)
                if address == start || callees.contains(&address) =>
            {
                let entry = procedures.entry(address).or_insert(ProcedureHint {
                    address,
                    name: None,
                    prototype: None,
                });
                if head.kind == AnnotationKind::Name {
                    entry.name = Some(head.text.clone());
                } else {
                    entry.prototype = Some(head.text.clone());
                    declarations = true;
                }
                used.push(head.evidence_id.clone());
            }
            (AnnotationScope::Data, AnnotationKind::Name | AnnotationKind::Type) => {
                let entry = data.entry(address).or_insert(DataHint {
                    address,
                    name: None,
                    ty: None,
                });
                if head.kind == AnnotationKind::Name {
                    entry.name = Some(head.text.clone());
                } else {
                    entry.ty = Some(head.text.clone());
                    declarations = true;
                }
                used.push(head.evidence_id.clone());
            }
            _ => {}
        }
    }
    if declarations {
        for head in &sorted {
            if head.scope == AnnotationScope::Document && head.kind == AnnotationKind::Type {
                hints.types.push(head.text.clone());
                used.push(head.evidence_id.clone());
            }
        }
    }
    hints.procedures = procedures.into_values().collect();
    hints.data = data.into_values().collect();
    used.sort();
    used.dedup();
    (hints, used)
}

/// Arguments of `read_bytes`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadBytesArgs {
    /// The first address to read (0x…).
    pub address: Address,
    /// Bytes to read, 1 to 4096.
    pub length: u64,
    /// The document, when the target has several (at most 4 KiB).
    #[serde(default)]
    #[serde(deserialize_with = "cap::name_opt")]
    pub document: Option<String>,
}

/// Arguments of `search_bytes`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchBytesArgs {
    /// Hex bytes, `??` for any byte: `48 8d 3d ?? ?? ?? ??` (at most 1 KiB).
    #[serde(deserialize_with = "cap::pattern")]
    pub pattern: String,
    /// Only this section (as named in results, `.rodata`, `__TEXT,__cstring`) (at most 4 KiB).
    #[serde(default)]
    #[serde(deserialize_with = "cap::name_opt")]
    pub section: Option<String>,
    /// The document, when the target has several (at most 4 KiB).
    #[serde(default)]
    #[serde(deserialize_with = "cap::name_opt")]
    pub document: Option<String>,
    /// Hits to skip.
    #[serde(default)]
    pub offset: u64,
    /// Hits to return (default 50, at most 1000).
    #[serde(default)]
    pub limit: Option<u64>,
}

/// Hits of `search_bytes`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct BytesFound {
    /// The document searched.
    pub document: String,
    /// Hits of this page, by address.
    pub hits: Vec<ByteHit>,
    /// Every hit in the sections searched.
    pub total: u64,
    /// Offset of the next page, when there is one.
    pub next_offset: Option<u64>,
}

/// Bytes read by `read_bytes`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct BytesRead {
    /// The document read.
    pub document: String,
    /// The bytes and what they are.
    #[serde(flatten)]
    pub read: ByteRead,
}

impl Investigation {
    /// `procedure_pseudo_code`: a page of the pseudo-C of one procedure, decompiled once per
    /// document and procedure, its references resolved to rea's procedures, imports and strings.
    /// `progress` hears angr's stages; `cancel` stops it (the worker keeps the document). Past
    /// the wait, the answer says what is done while angr goes on and records the result. Once
    /// a procedure is decompiled, its direct callees are decompiled ahead in the background.
    pub async fn procedure_pseudo_code(
        &self,
        args: PseudoCodeArgs,
        progress: Arc<dyn Progress>,
        cancel: &Cancel,
    ) -> Result<Observed<PseudoCodePage>> {
        match args.provider_id.as_deref() {
            None | Some("auto") | Some(angr::PROVIDER_ID) => {}
            Some(other) => {
                return Err(InvestigationError::InvalidArgument(format!(
                    "{other} does not decompile in rea; provider_id is auto or {}",
                    angr::PROVIDER_ID
                )));
            }
        }
        let wait = args.wait_seconds.unwrap_or(DEFAULT_WAIT_SECONDS);
        if !(1..=MAX_WAIT_SECONDS).contains(&wait) {
            return Err(InvestigationError::InvalidArgument(format!(
                "wait_seconds is {wait}; it is 1 to {MAX_WAIT_SECONDS}"
            )));
        }
        let (s, a, r, image) = self
            .procedure_image(&args.procedure, args.document.as_deref())
            .await?;
        let (offset, limit) = (
            args.offset,
            args.limit
                .unwrap_or(DEFAULT_PAGE_LINES)
                .clamp(1, MAX_PAGE_LINES),
        );
        let heads = s
            .store()
            .annotation_heads(&a.target.sha256, Some(&r.doc.name))?;
        let start = r.procedure.address.0;
        let ask = Ask::of(&image, &r.doc.name, start, &heads).await?;
        if let Some(found) = stored(&s, &a, &ask.key, offset, limit, false)? {
            return Ok(found);
        }
        let mut flight = self.launch(&s, &a, &image, ask.key.clone(), ask.hints.clone(), true)?;
        let mut outcome = flight
            .wait(Duration::from_secs(wait), progress.clone(), cancel)
            .await;
        // Joined a decompilation another caller cancelled: this call did not, so it asks anew.
        if matches!(outcome, Some(Err(_))) && flight.running.cancelled() && !cancel.is_cancelled() {
            flight = self.launch(&s, &a, &image, ask.key.clone(), ask.hints, true)?;
            outcome = flight
                .wait(Duration::from_secs(wait), progress, cancel)
                .await;
        }
        match outcome {
            Some(Ok(())) => {}
            Some(Err(failure)) => return Err(InvestigationError::Shared(failure)),
            None => {
                let name = r
                    .procedure
                    .name
                    .as_deref()
                    .map(|n| format!("{n} at "))
                    .unwrap_or_default();
                return Err(InvestigationError::Pending(format!(
                    "angr has not finished decompiling {name}{} within {wait} s: {}. It goes on in the background and records the pseudo-code in the ledger; ask again (a longer wait_seconds waits for it) to get it",
                    r.procedure.address,
                    flight.running.summary()
                )));
            }
        }
        let found = stored(&s, &a, &ask.key, offset, limit, true)?.ok_or_else(|| {
            InvestigationError::SessionState(
                "the pseudo-code was recorded but is not in the ledger any more".into(),
            )
        })?;
        self.decompile_ahead(&s, &a, &image, &r.doc.name, start, &heads)
            .await;
        Ok(found)
    }

    /// Starts (or joins) the decompilation `key` names; its result is recorded in the ledger.
    fn launch(
        &self,
        s: &Snapshot,
        a: &Arc<ActiveTarget>,
        image: &Arc<Image>,
        key: PseudoCodeKey,
        hints: AnalystHints,
        wanted: bool,
    ) -> Result<InFlight> {
        let flight = flight_of(&a.target.sha256, &key)?;
        let (store, subject) = (s.store().clone(), subject_of(&a.target));
        let start = key.procedure.0;
        s.session
            .decompilers
            .launch(flight, image.clone(), start, hints, wanted, move |code| {
                record_pseudo_code(store, subject, key, code)
            })
    }

    /// Queues, in the background, the decompilation of up to [`AHEAD`] direct callees of the
    /// procedure at `start` that are neither recorded nor in flight (import stubs left out), so
    /// that the agent's next ask of one answers from the ledger. Best effort: a failure here is
    /// only logged.
    async fn decompile_ahead(
        &self,
        s: &Snapshot,
        a: &Arc<ActiveTarget>,
        image: &Arc<Image>,
        document: &str,
        start: u64,
        heads: &[LiveAnnotation],
    ) {
        let callees = {
            let image = image.clone();
            blocking(move || {
                let edges = image.callees(start).map(|e| e.callees).unwrap_or_default();
                Ok(edges
                    .iter()
                    .map(|c| c.target)
                    .filter(|&c| c != start && decompiled_ahead(&image, c))
                    .collect::<Vec<_>>())
            })
            .await
            .unwrap_or_default()
        };
        let mut queued = 0;
        for callee in callees {
            if queued == AHEAD {
                break;
            }
            let outcome = async {
                let ask = Ask::of(image, document, callee, heads).await?;
                let flight = ask.flight(&a.target.sha256)?;
                if s.session.decompilers.in_flight(&flight, false).is_some()
                    || stored(s, a, &ask.key, 0, 1, false)?.is_some()
                {
                    return Ok(false);
                }
                self.launch(s, a, image, ask.key, ask.hints, false)?;
                Ok::<_, InvestigationError>(true)
            }
            .await;
            match outcome {
                Ok(true) => queued += 1,
                Ok(false) => {}
                Err(e) => {
                    tracing::debug!(callee, error = %e, "not decompiled ahead");
                    break;
                }
            }
        }
    }

    /// `read_bytes`: up to 4096 bytes at an address with their section, symbol, procedure and
    /// typed values.
    pub async fn read_bytes(&self, args: ReadBytesArgs) -> Result<Observed<BytesRead>> {
        let (s, a) = self.active()?;
        let doc = DocumentSelector::new(args.document.as_deref())
            .resolve_one(&a.target.documents)?
            .clone();
        let image = s.session.images.get(&doc).await?;
        let (address, length) = (args.address.0, args.length);
        let read = blocking(move || Ok(image.read_bytes(address, length)?)).await?;
        let q = Qualifiers::observed().at(in_document(&doc.name, Some(args.address.to_string())));
        let result = BytesRead {
            document: doc.name.clone(),
            read,
        };
        observe::observe(
            s.store(),
            "read_bytes",
            Some(subject_of(&a.target)),
            &args,
            result,
            q,
        )
        .await
    }

    /// `search_bytes`: every match of a byte pattern with wildcards, counted, one page listed.
    pub async fn search_bytes(&self, args: SearchBytesArgs) -> Result<Observed<BytesFound>> {
        let pattern = BytePattern::parse(&args.pattern)?;
        let (s, a) = self.active()?;
        let doc = DocumentSelector::new(args.document.as_deref())
            .resolve_one(&a.target.documents)?
            .clone();
        let image = s.session.images.get(&doc).await?;
        let request = super::PageRequest::new(args.offset, args.limit, (50, MAX_HITS_PAGE as u64));
        let section = args.section.clone();
        let found = blocking(move || {
            Ok(image.search_bytes(
                &pattern,
                section.as_deref(),
                usize::try_from(request.offset).unwrap_or(usize::MAX),
                request.limit as usize,
                &Deadline::analysis(),
            )?)
        })
        .await?;
        let page = super::Page::new(found.hits, found.total, &request);
        let result = BytesFound {
            document: doc.name.clone(),
            hits: page.items,
            total: page.total,
            next_offset: page.next_offset,
        };
        let q = Qualifiers::observed().at(in_document(&doc.name, None));
        observe::observe(
            s.store(),
            "search_bytes",
            Some(subject_of(&a.target)),
            &args,
            result,
            q,
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::AnnotationId;

    fn head(
        scope: AnnotationScope,
        address: Option<u64>,
        kind: AnnotationKind,
        text: &str,
        n: u8,
    ) -> LiveAnnotation {
        LiveAnnotation {
            document: "d".into(),
            scope,
            address,
            kind,
            text: text.into(),
            id: AnnotationId::derive(&[n]),
            evidence_id: EvidenceId::parse(&format!("ev_{}", format!("{n:02x}").repeat(32)))
                .unwrap(),
        }
    }

    #[test]
    fn a_decompilation_applies_its_own_and_its_callees_annotations_and_cites_them_regression_26() {
        use AnnotationKind as K;
        use AnnotationScope as S;
        let heads = vec![
            head(S::Procedure, Some(0x10), K::Name, "check", 1),
            head(S::Procedure, Some(0x10), K::Comment, "not applied", 2),
            head(
                S::Procedure,
                Some(0x20),
                K::Prototype,
                "int f(secret_t x)",
                3,
            ),
            head(S::Procedure, Some(0x30), K::Name, "unrelated", 4),
            head(S::Data, Some(0x40), K::Name, "TABLE", 5),
            head(S::Document, None, K::Type, "typedef int secret_t;", 6),
            head(S::Address, Some(0x11), K::Comment, "not applied", 7),
        ];
        let (hints, used) = analyst_hints(&heads, 0x10, &[0x20]);
        assert_eq!(
            hints,
            AnalystHints {
                procedures: vec![
                    ProcedureHint {
                        address: 0x10,
                        name: Some("check".into()),
                        prototype: None
                    },
                    ProcedureHint {
                        address: 0x20,
                        name: None,
                        prototype: Some("int f(secret_t x)".into())
                    },
                ],
                data: vec![DataHint {
                    address: 0x40,
                    name: Some("TABLE".into()),
                    ty: None
                }],
                types: vec!["typedef int secret_t;".into()],
            }
        );
        let ids: Vec<EvidenceId> = [1u8, 3, 5, 6]
            .iter()
            .map(|n| EvidenceId::parse(&format!("ev_{}", format!("{n:02x}").repeat(32))).unwrap())
            .collect();
        assert_eq!(used, ids);
        // Without a prototype or data type, the document's types change nothing and are left out.
        let (hints, used) = analyst_hints(&heads, 0x30, &[]);
        assert!(hints.types.is_empty());
        assert_eq!(hints.procedures.len(), 1);
        assert_eq!(used.len(), 2);
    }
}
