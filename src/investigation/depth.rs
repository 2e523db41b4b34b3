//! Reading deeper than the disassembly: a procedure's pseudo-code from a decompiling provider
//! (angr), and the raw bytes of the document at an address or matching a pattern.
//!
//! A decompilation is slow and its result does not change for one document, so the whole
//! pseudo-code is recorded once (its parameters name the document, the procedure and the
//! provider, never the page) and every later page, in this call or another, is cut from that
//! record in the ledger: asking again costs a lookup, not a decompilation.

use std::sync::{Arc, Mutex};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::args::cap;
use super::observe::{self, EvidenceInline, Observed, Qualifiers, in_document, subject_of};
use super::{DocumentSelector, Investigation, InvestigationError, Result, blocking};
use crate::evidence::{Authority, Confidence, ProviderStamp};
use crate::fsroot::Deadline;
use crate::ids::{Address, EvidenceId};
use crate::providers::angr::{self, Angr};
use crate::providers::decompile::{
    AnalystHints, DEFAULT_PAGE_LINES, DataHint, DeclarationCheck, DecompileError, Decompiler,
    MAX_PAGE_LINES, ProcedureHint, PseudoCode, PseudoCodePage,
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
}

/// What a pseudo-code record is about: its parameters in the ledger, whatever page was asked.
/// `annotations` are the Evidence ids of the annotation revisions the decompiler applied, so a
/// new revision that affects the procedure asks anew, and an unchanged set finds the record.
#[derive(Debug, Serialize)]
struct PseudoCodeKey<'a> {
    document: &'a str,
    procedure: Address,
    provider: &'a str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    annotations: Vec<EvidenceId>,
}

/// Where a decompiler thread's answer goes.
type Reply<T> = tokio::sync::oneshot::Sender<std::result::Result<T, DecompileError>>;

/// Work asked of a session's decompiler thread.
enum Job {
    /// A procedure's pseudo-code with the analyst's hints applied.
    Decompile(Arc<Image>, u64, AnalystHints, Reply<Arc<PseudoCode>>),
    /// A C declaration parsed as the decompiler parses it: kind, text, the document's types.
    Check(
        Arc<Image>,
        &'static str,
        String,
        Vec<String>,
        Reply<DeclarationCheck>,
    ),
}

/// The decompiler of one binary session: a thread of its own that owns the angr session and its
/// worker, started on the first call that needs it and stopped when the session closes or
/// switches target. The worker dies with the thread that started it (its parent-death signal
/// is per thread), so it must be a thread that lives as long as the session, never one of the
/// runtime's blocking threads, which end when idle; and with rea, since that thread does.
#[derive(Debug, Default)]
pub(crate) struct Decompilers(Mutex<Option<DecompilerThread>>);

#[derive(Debug)]
struct DecompilerThread {
    jobs: std::sync::mpsc::Sender<Job>,
    thread: std::thread::JoinHandle<()>,
}

impl Decompilers {
    /// The pseudo-code of the procedure starting at `start`, from the session's decompiler
    /// (started now when it is not running).
    async fn decompile(
        &self,
        image: Arc<Image>,
        start: u64,
        hints: AnalystHints,
    ) -> Result<Arc<PseudoCode>> {
        self.ask(|reply| Job::Decompile(image, start, hints, reply))
            .await
    }

    /// A C declaration parsed by the session's decompiler as it would parse it when
    /// decompiling; `None` when no decompiler is installed (nothing is started then).
    pub(crate) async fn check(
        &self,
        image: Arc<Image>,
        kind: &'static str,
        text: String,
        types: Vec<String>,
    ) -> Result<Option<DeclarationCheck>> {
        if !self.running() && angr::locate().is_err() {
            return Ok(None);
        }
        self.ask(|reply| Job::Check(image, kind, text, types, reply))
            .await
            .map(Some)
    }

    fn running(&self) -> bool {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).is_some()
    }

    /// Sends one job to the decompiler thread (started now when it is not running) and waits
    /// for its answer.
    async fn ask<T>(&self, job: impl FnOnce(Reply<T>) -> Job) -> Result<T> {
        let answer = {
            let mut slot = self.0.lock().unwrap_or_else(|p| p.into_inner());
            if slot.is_none() {
                let angr = Angr::from_environment()?;
                *slot = Some(DecompilerThread::start(angr)?);
            }
            let (reply, answer) = tokio::sync::oneshot::channel();
            let running = slot.as_ref().expect("started above");
            if running.jobs.send(job(reply)).is_err() {
                *slot = None;
                return Err(thread_gone());
            }
            answer
        };
        Ok(answer.await.map_err(|_| thread_gone())??)
    }

    /// Stops the session's decompiler and its worker. Blocking: waits for a call in progress.
    pub fn stop(&self) {
        let running = self.0.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(running) = running {
            drop(running.jobs);
            let _ = running.thread.join();
        }
    }
}

impl DecompilerThread {
    fn start(mut angr: Angr) -> Result<DecompilerThread> {
        let (jobs, queue) = std::sync::mpsc::channel::<Job>();
        let thread = std::thread::Builder::new()
            .name("rea-decompiler".into())
            .spawn(move || {
                for job in queue {
                    match job {
                        Job::Decompile(image, start, hints, reply) => {
                            let _ = reply
                                .send(angr.decompile_with(&image, start, &hints).map(|d| d.code));
                        }
                        Job::Check(image, kind, text, types, reply) => {
                            let _ = reply.send(angr.check_declaration(&image, kind, &text, &types));
                        }
                    }
                }
                angr.close();
            })
            .map_err(|source| DecompileError::Io {
                provider: angr::PROVIDER_ID,
                operation: "start the decompiler thread",
                source,
            })?;
        Ok(DecompilerThread { jobs, thread })
    }
}

fn thread_gone() -> InvestigationError {
    DecompileError::Crashed {
        provider: angr::PROVIDER_ID,
        status: "its thread in rea ended".into(),
        stderr: String::new(),
    }
    .into()
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
    pub async fn procedure_pseudo_code(
        &self,
        args: PseudoCodeArgs,
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
            analyst_hints(&heads, start, &callees)
        };
        let key = PseudoCodeKey {
            document: &r.doc.name,
            procedure: r.procedure.address,
            provider: angr::PROVIDER_ID,
            annotations: used.clone(),
        };
        if let Some(stored) = s
            .store()
            .find_observation(PSEUDO_CODE, &a.target.sha256, &key)?
        {
            let code: PseudoCode = serde_json::from_value(stored.record.result.clone())?;
            let outcome = RecordOutcome {
                id: stored.id,
                seq: stored.seq,
                created_at: stored.created_at,
                new: false,
            };
            return Ok(Observed {
                result: code.page(offset, limit),
                evidence: EvidenceInline::new(outcome, stored.record),
            });
        }
        let code = s
            .session
            .decompilers
            .decompile(image, r.procedure.address.0, hints)
            .await?;
        let page = code.page(offset, limit);
        let mut limitations = code.limitations.clone();
        if !used.is_empty() {
            limitations.push(format!(
                "the decompiler applied {} analyst annotation revision(s) (linked): names, prototypes and types they give are analyst-inference, not read from the file",
                used.len()
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
            links: used,
            ..Qualifiers::observed()
        }
        .at(in_document(
            &r.doc.name,
            Some(r.procedure.address.to_string()),
        ));
        let record = observe::record(PSEUDO_CODE, Some(subject_of(&a.target)), &key, &*code, q)?;
        observe::commit(s.store(), crate::store::Recording::of(record), page).await
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
