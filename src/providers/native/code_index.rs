//! The index of every code reference of an image, by target address: what callers,
//! cross-references and dossiers query. Its data only: `analysis` builds it, and the image keeps
//! it once built.

/// Kinds of code reference kept in the index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RefKind {
    Call,
    TailJump,
    Jump,
    Branch,
    Address,
    Access,
    Immediate,
    Slot,
    SlotTailJump,
    SlotCall,
}

impl RefKind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            RefKind::Call => "call",
            RefKind::TailJump => "tail-jump",
            RefKind::Jump => "jump",
            RefKind::Branch => "branch",
            RefKind::Address => "address",
            RefKind::Access => "access",
            RefKind::Immediate => "immediate",
            RefKind::Slot | RefKind::SlotCall | RefKind::SlotTailJump => "slot",
        }
    }

    /// The call-graph meaning of a reference: `Some("call")`/`Some("tail-jump")` for edges.
    pub(crate) fn via(self) -> Option<&'static str> {
        match self {
            RefKind::Call | RefKind::SlotCall => Some("call"),
            RefKind::TailJump | RefKind::SlotTailJump => Some("tail-jump"),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct CodeRef {
    pub(crate) target: u64,
    pub(crate) site: u64,
    pub(crate) procedure: u32,
    pub(crate) kind: RefKind,
}

/// Every code reference of the image, sorted by target address.
#[derive(Debug, Default)]
pub(crate) struct CodeIndex {
    pub(crate) refs: Vec<CodeRef>,
}

impl CodeIndex {
    pub(crate) fn to(&self, target: u64) -> &[CodeRef] {
        let lo = self.refs.partition_point(|r| r.target < target);
        let hi = self.refs.partition_point(|r| r.target <= target);
        &self.refs[lo..hi]
    }
}
