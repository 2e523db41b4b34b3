//! What a session keeps of its last analyses (the procedure comparison and call graph), so
//! paging through them does not decode both documents again. Held by the open session; filled
//! and read by the comparison operations.

use std::sync::{Arc, Mutex};

use crate::analyzers::callpaths::CallGraph;
use crate::analyzers::procdiff::ProcedureDiff;
use crate::providers::native::DocumentSpec;

/// The last comparison and call graph of a session, so paging through them (or asking for
/// another pair of procedures) does not decode both documents again. Keyed like the image cache.
#[derive(Debug, Default)]
pub(crate) struct AnalysisCache {
    diff: Mutex<Option<(DocumentSpec, DocumentSpec, Arc<ProcedureDiff>)>>,
    graph: Mutex<Option<(DocumentSpec, Arc<CallGraph>)>>,
}

impl AnalysisCache {
    pub(super) fn diff(
        &self,
        left: &DocumentSpec,
        right: &DocumentSpec,
    ) -> Option<Arc<ProcedureDiff>> {
        let slot = self.diff.lock().unwrap_or_else(|p| p.into_inner());
        slot.as_ref()
            .filter(|(l, r, _)| l == left && r == right)
            .map(|(_, _, d)| d.clone())
    }

    pub(super) fn keep_diff(
        &self,
        left: &DocumentSpec,
        right: &DocumentSpec,
        diff: Arc<ProcedureDiff>,
    ) {
        *self.diff.lock().unwrap_or_else(|p| p.into_inner()) =
            Some((left.clone(), right.clone(), diff));
    }

    pub(super) fn graph(&self, doc: &DocumentSpec) -> Option<Arc<CallGraph>> {
        let slot = self.graph.lock().unwrap_or_else(|p| p.into_inner());
        slot.as_ref()
            .filter(|(d, _)| d == doc)
            .map(|(_, g)| g.clone())
    }

    pub(super) fn keep_graph(&self, doc: &DocumentSpec, graph: Arc<CallGraph>) {
        *self.graph.lock().unwrap_or_else(|p| p.into_inner()) = Some((doc.clone(), graph));
    }
}
