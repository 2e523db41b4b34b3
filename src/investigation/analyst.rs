//! What views show of the analyst's annotations: one [`AnalystView`] per call, read in one
//! indexed query, fills `analyst_name` and `annotation_id` beside the file's names (never in
//! their place), analyst comments and prototypes, and links the view's record to the annotation
//! Evidence it showed.

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;

use super::Result;
use super::observe::Qualifiers;
use crate::completion::key::match_key;
use crate::ids::{AnalystName, AnnotationId, EvidenceId};
use crate::providers::native::{
    AssemblyPage, CallGraphEdges, Callers, DataRef, Dossier, Instruction, Xrefs,
};
use crate::store::{AnnotationKind, AnnotationScope, LiveAnnotation, ProcedureRow, ReadOnlyStore};

/// The analyst names and comments of the active target, read once for a view (one indexed
/// query), and the annotation Evidence the view used, to link its record to.
pub(crate) struct AnalystView {
    names: HashMap<(String, AnnotationScope, u64), (String, AnnotationId, EvidenceId)>,
    comments: HashMap<(String, u64), (String, EvidenceId)>,
    prototypes: HashMap<(String, u64), (String, EvidenceId)>,
    procedure_comments: HashMap<(String, u64), (String, EvidenceId)>,
    used: Mutex<BTreeSet<EvidenceId>>,
}

impl AnalystView {
    /// The live heads of `target_sha256` (one document, or all).
    pub(crate) fn load(
        store: &ReadOnlyStore,
        target_sha256: &str,
        document: Option<&str>,
    ) -> Result<AnalystView> {
        let heads = store.annotation_heads(target_sha256, document)?;
        Ok(Self::of(heads))
    }

    fn of(heads: Vec<LiveAnnotation>) -> AnalystView {
        let mut names = HashMap::new();
        let mut comments = HashMap::new();
        let mut prototypes = HashMap::new();
        let mut procedure_comments = HashMap::new();
        for h in heads {
            let Some(address) = h.address else { continue };
            match (h.kind, h.scope) {
                (AnnotationKind::Name, scope) => {
                    names.insert((h.document, scope, address), (h.text, h.id, h.evidence_id));
                }
                (AnnotationKind::Comment, AnnotationScope::Address) => {
                    comments.insert((h.document, address), (h.text, h.evidence_id));
                }
                (AnnotationKind::Comment, AnnotationScope::Procedure) => {
                    procedure_comments.insert((h.document, address), (h.text, h.evidence_id));
                }
                (AnnotationKind::Prototype, _) => {
                    prototypes.insert((h.document, address), (h.text, h.evidence_id));
                }
                _ => {}
            }
        }
        AnalystView {
            names,
            comments,
            prototypes,
            procedure_comments,
            used: Mutex::new(BTreeSet::new()),
        }
    }

    fn mark(&self, e: &EvidenceId) {
        self.used
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(e.clone());
    }

    /// The analyst name of the procedure starting at `address` of `document`.
    pub(crate) fn procedure(&self, document: &str, address: u64) -> Option<AnalystName> {
        self.named(document, AnnotationScope::Procedure, address)
    }

    fn named(&self, document: &str, scope: AnnotationScope, address: u64) -> Option<AnalystName> {
        let (text, id, e) = self.names.get(&(document.to_owned(), scope, address))?;
        self.mark(e);
        Some(AnalystName {
            analyst_name: text.clone(),
            annotation_id: id.clone(),
        })
    }

    /// Procedures (document, start) whose analyst name is exactly `name`.
    pub(crate) fn named_exactly(&self, name: &str) -> Vec<(String, u64)> {
        self.procedures_named(|text| text == name)
    }

    /// Procedures (document, start) whose analyst name matches `query` as `search_procedures`
    /// compares (match keys; a substring, or a prefix), by document and address.
    pub(crate) fn search(&self, query: &str, prefix: bool) -> Vec<(String, u64)> {
        let key = match_key(query);
        self.procedures_named(|text| key_matches(&match_key(text), &key, prefix))
    }

    /// Procedures (document, start) whose analyst name `matches`, by document and address.
    fn procedures_named(&self, matches: impl Fn(&str) -> bool) -> Vec<(String, u64)> {
        let mut found: Vec<(String, u64)> = self
            .names
            .iter()
            .filter(|((_, scope, _), (text, _, _))| {
                *scope == AnnotationScope::Procedure && matches(text)
            })
            .map(|((doc, _, address), _)| (doc.clone(), *address))
            .collect();
        found.sort();
        found
    }

    /// Whether the file's names of `row` already match `query`, so the store's search finds it.
    pub(crate) fn file_name_matches(&self, row: &ProcedureRow, query: &str, prefix: bool) -> bool {
        let key = match_key(query);
        row.name
            .iter()
            .chain(row.raw_name.iter())
            .chain(row.aliases.iter())
            .any(|n| key_matches(&match_key(n), &key, prefix))
    }

    /// The analyst's prototype of the procedure at `address` of `document`.
    pub(crate) fn prototype(&self, document: &str, address: u64) -> Option<String> {
        let (text, e) = self.prototypes.get(&(document.to_owned(), address))?;
        self.mark(e);
        Some(text.clone())
    }

    /// The analyst's comment on the procedure at `address` of `document`.
    pub(crate) fn procedure_comment(&self, document: &str, address: u64) -> Option<String> {
        let (text, e) = self
            .procedure_comments
            .get(&(document.to_owned(), address))?;
        self.mark(e);
        Some(text.clone())
    }

    /// The analyst's comment at `address` of `document`.
    pub(crate) fn comment(&self, document: &str, address: u64) -> Option<String> {
        let (text, e) = self.comments.get(&(document.to_owned(), address))?;
        self.mark(e);
        Some(text.clone())
    }

    /// One instruction: the analyst's names of its call target and of the data its operand
    /// uses (an operand rea cannot name shows its address, with the analyst's name beside), and
    /// the analyst's comment at it.
    fn show_instruction(&self, document: &str, i: &mut Instruction) {
        i.analyst = i.target.and_then(|t| self.procedure(document, t));
        i.analyst_comment = self.comment(document, i.address);
        let address = i.data.as_ref().map(|d| d.address).or(i.memory);
        if let Some(address) = address
            && let Some(name) = self.named(document, AnnotationScope::Data, address)
        {
            i.data
                .get_or_insert_with(|| DataRef {
                    address,
                    name: format!("{address:#x}"),
                    analyst: None,
                })
                .analyst = Some(name);
        }
    }

    /// How a view's record is qualified once it shows annotations: linked to their Evidence, with
    /// the fields named as the analyst's.
    pub(crate) fn qualify(&self, mut q: Qualifiers) -> Qualifiers {
        let used = self.used.lock().unwrap_or_else(|p| p.into_inner());
        if !used.is_empty() {
            q.links.extend(used.iter().cloned());
            q.links.sort();
            q.links.dedup();
            q.limitations.push(
                "analyst_name, annotation_id and analyst_comment fields are annotations (analyst-inference, linked), not read from the file".into(),
            );
        }
        q
    }
}

fn key_matches(text_key: &str, key: &str, prefix: bool) -> bool {
    if prefix {
        text_key.starts_with(key)
    } else {
        text_key.contains(key)
    }
}

/// A result that shows annotations beside the procedures (and addresses) it names.
pub(crate) trait ShowsAnnotations {
    /// Fills in the analyst fields from `view`; `document` is the document the result is about.
    fn show(&mut self, document: &str, view: &AnalystView);
}

impl ShowsAnnotations for [ProcedureRow] {
    fn show(&mut self, _: &str, view: &AnalystView) {
        for r in self {
            r.analyst = view.procedure(&r.document, r.address.0);
        }
    }
}

impl ShowsAnnotations for CallGraphEdges {
    fn show(&mut self, document: &str, view: &AnalystView) {
        for c in &mut self.callees {
            c.analyst = view.procedure(document, c.target);
        }
    }
}

impl ShowsAnnotations for Callers {
    fn show(&mut self, document: &str, view: &AnalystView) {
        self.analyst = view.procedure(document, self.target);
        for c in &mut self.callers {
            c.analyst = view.procedure(document, c.procedure);
        }
    }
}

impl ShowsAnnotations for Xrefs {
    fn show(&mut self, document: &str, view: &AnalystView) {
        self.analyst = view
            .procedure(document, self.address)
            .or_else(|| view.named(document, AnnotationScope::Data, self.address));
        for c in &mut self.code {
            c.analyst = view.procedure(document, c.procedure);
        }
    }
}

impl ShowsAnnotations for AssemblyPage {
    fn show(&mut self, document: &str, view: &AnalystView) {
        for i in &mut self.instructions {
            view.show_instruction(document, i);
        }
    }
}

impl ShowsAnnotations for Dossier {
    fn show(&mut self, document: &str, view: &AnalystView) {
        self.info.analyst = view.procedure(document, self.info.address);
        for c in &mut self.callers {
            c.analyst = view.procedure(document, c.procedure);
        }
        for c in &mut self.callees {
            c.analyst = view.procedure(document, c.target);
        }
        for i in &mut self.instructions {
            view.show_instruction(document, i);
        }
        for d in &mut self.data {
            d.analyst = view.named(document, AnnotationScope::Data, d.address);
        }
    }
}
