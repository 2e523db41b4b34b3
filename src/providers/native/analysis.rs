//! Analysis operations on a loaded [`Image`]: assembly pages, callees, callers, cross-references
//! and function dossiers. Callers and cross-references share one index of every code reference,
//! built on first use by decoding each procedure once.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::address::{hex, hex_opt};
use super::code_index::{CodeIndex, CodeRef, RefKind};
use super::datarefs::{DataName, DataNames, DataRef};
use super::disasm::{self, Decoded, Disassembler, Flow, MemoryUse};
use super::image::Image;
use super::jumptable::{self, Path};
use super::relocations::{MAX_RELOCATIONS, relocated_pointers};
use super::types::ProviderError;
use crate::vocabulary::CalleeKind;

/// Assembly listings stop this far past the procedure start.
const LISTING_CAP: u64 = 64 * 1024;

/// Call-graph and cross-reference scans follow one procedure at most this far; larger extents
/// come from missing starts, not from real functions.
const SCAN_CAP: u64 = 1 << 20;

/// Most instructions returned in one assembly page.
const MAX_PAGE: usize = 2000;

/// Most entries of each list in a cross-reference answer; totals are always exact.
const MAX_XREFS: usize = 1000;

/// Instructions shown in a dossier.
const DOSSIER_INSTRUCTIONS: usize = 16;

/// Longest string a dossier quotes.
const DOSSIER_STRING_MAX: usize = 512;

/// Most data symbols and slots a dossier lists.
const DOSSIER_DATA: usize = 64;

/// One decoded instruction.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Instruction {
    /// Address of the instruction.
    #[serde(with = "hex")]
    #[schemars(with = "String")]
    pub address: u64,
    /// The instruction's bytes, lowercase hex.
    pub bytes: String,
    /// Rendering: Intel syntax for x86, standard assembly for arm64; `(bad)` or `.word` for
    /// bytes that do not decode.
    pub text: String,
    /// Destination of a direct branch or call.
    #[serde(with = "hex_opt")]
    #[schemars(with = "Option<String>")]
    pub target: Option<u64>,
    /// Name of the procedure or import at `target`, or of the import behind an indirect
    /// call through a known pointer slot.
    pub target_name: Option<String>,
    /// The analyst's name of the procedure at `target`, beside `target_name` (an annotation).
    /// Left out of the schema (tools/list budget), like `analyst_comment`.
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub analyst: Option<crate::ids::AnalystName>,
    /// The analyst's comment at this address (an annotation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub analyst_comment: Option<String>,
    /// The data a memory operand, address computation or (in an image linked at a fixed
    /// address) immediate lands in, named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    // Absent rather than null, so the schema needs no null branch (tools/list budget).
    #[schemars(with = "DataRef")]
    pub data: Option<DataRef>,
    /// The address a memory operand reads, writes or computes, named or not: where a view
    /// looks for the analyst's name of the data. Not part of the output.
    #[serde(skip)]
    #[schemars(skip)]
    pub memory: Option<u64>,
}

/// A window of a procedure's disassembly.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct AssemblyPage {
    /// End (exclusive) of the decoded range: the stated size, else the next procedure start,
    /// capped at 64 KiB.
    #[serde(with = "hex")]
    #[schemars(with = "String")]
    pub end: u64,
    /// Whether the 64 KiB cap cut the listing short.
    pub capped: bool,
    /// Number of instructions in the whole decoded range.
    pub total_instructions: usize,
    /// Index of the first instruction of this page.
    pub offset: usize,
    /// The instructions `[offset, offset + limit)`.
    pub instructions: Vec<Instruction>,
    /// Offset of the next page, when there is one.
    pub next_offset: Option<usize>,
}

/// A procedure or import called (or tail-jumped to) by a procedure.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CalleeEdge {
    /// Address called: a procedure start, an import stub, or an import's pointer slot.
    #[serde(with = "hex")]
    #[schemars(with = "String")]
    pub target: u64,
    /// Name of the procedure or import.
    pub name: Option<String>,
    /// The analyst's name, beside `name` (an annotation; absent when none). Left out of the
    /// schema (tools/list budget), which allows it like any other member.
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub analyst: Option<crate::ids::AnalystName>,
    /// `procedure`, `import`, or `address` (a direct call to an address that starts no known
    /// procedure).
    pub kind: CalleeKind,
    /// `call`, or `tail-jump` for a jump to another procedure's start (directly or through a
    /// switch's jump table).
    pub via: String,
    /// Addresses of the instructions that make the call, ascending.
    #[serde(with = "hex_list")]
    #[schemars(with = "Vec<String>")]
    pub sites: Vec<u64>,
}

/// An indirect call or jump whose destination is not statically known.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct UnresolvedCall {
    /// Address of the instruction.
    #[serde(with = "hex")]
    #[schemars(with = "String")]
    pub site: u64,
    /// `call` or `jump`.
    pub kind: String,
    /// The operand as disassembled (for example `qword ptr [rax+0x10]` or `x8`).
    pub operand: String,
}

/// The direct callees of one procedure, and its unresolved indirect transfers.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CallGraphEdges {
    /// Resolved callees, by target address.
    pub callees: Vec<CalleeEdge>,
    /// Indirect calls and jumps left unresolved (never guessed).
    pub unresolved: Vec<UnresolvedCall>,
}

/// A procedure that calls (or tail-jumps to) the target.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CallerEdge {
    /// Start of the calling procedure.
    #[serde(with = "hex")]
    #[schemars(with = "String")]
    pub procedure: u64,
    /// Name of the calling procedure, when known.
    pub name: Option<String>,
    /// The analyst's name, beside `name` (an annotation; absent when none). Left out of the
    /// schema (tools/list budget), which allows it like any other member.
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub analyst: Option<crate::ids::AnalystName>,
    /// `call` or `tail-jump`.
    pub via: String,
    /// Addresses of the calling instructions, ascending.
    #[serde(with = "hex_list")]
    #[schemars(with = "Vec<String>")]
    pub sites: Vec<u64>,
}

/// Every procedure with a direct call or tail jump to a target.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Callers {
    /// The address asked about.
    #[serde(with = "hex")]
    #[schemars(with = "String")]
    pub target: u64,
    /// Name of the procedure or import at the target.
    pub name: Option<String>,
    /// The analyst's name, beside `name` (an annotation; absent when none). Left out of the
    /// schema (tools/list budget), which allows it like any other member.
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub analyst: Option<crate::ids::AnalystName>,
    /// Calling procedures, by address.
    pub callers: Vec<CallerEdge>,
}

/// An instruction that refers to the address.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CodeXref {
    /// Address of the referring instruction.
    #[serde(with = "hex")]
    #[schemars(with = "String")]
    pub site: u64,
    /// Start of the procedure containing the instruction.
    #[serde(with = "hex")]
    #[schemars(with = "String")]
    pub procedure: u64,
    /// Name of that procedure, when known.
    pub procedure_name: Option<String>,
    /// The analyst's name, beside `name` (an annotation; absent when none). Left out of the
    /// schema (tools/list budget), which allows it like any other member.
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub analyst: Option<crate::ids::AnalystName>,
    /// `call`, `tail-jump`, `jump`, `branch` (conditional), `address` (lea/adr/adrp+add),
    /// `access` (a load or store), `immediate`, or `slot` (an indirect call or jump through a
    /// pointer slot at the address).
    pub kind: String,
    /// The pointer in data the instruction refers to, when it reaches the address through
    /// one (`mov rdi, [rip+MSG_PW]` for the string `MSG_PW` points at).
    #[serde(default, with = "hex_opt", skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub via: Option<u64>,
}

/// A pointer-sized value in data equal to the address.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct DataXref {
    /// Address of the pointer.
    #[serde(with = "hex")]
    #[schemars(with = "String")]
    pub at: u64,
    /// Section holding the pointer.
    pub section: String,
    /// The data symbol whose extent holds the pointer (`OPS` for `&OPS[1]`), when one does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symbol: Option<String>,
    /// Offset of the pointer from the start of `symbol`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symbol_offset: Option<u64>,
}

/// References to an address from code and data.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Xrefs {
    /// The address asked about.
    #[serde(with = "hex")]
    #[schemars(with = "String")]
    pub address: u64,
    /// Procedure, import or symbol name at the address.
    pub name: Option<String>,
    /// The analyst's name, beside `name` (an annotation; absent when none). Left out of the
    /// schema (tools/list budget), which allows it like any other member.
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub analyst: Option<crate::ids::AnalystName>,
    /// Referring instructions (at most 1000), by site.
    pub code: Vec<CodeXref>,
    /// Exact number of referring instructions.
    pub total_code: usize,
    /// Pointers to the address in non-executable sections (at most 1000), by address.
    pub data: Vec<DataXref>,
    /// Exact number of such pointers.
    pub total_data: usize,
}

/// What is known about one procedure.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ProcedureInfo {
    /// Start address.
    #[serde(with = "hex")]
    #[schemars(with = "String")]
    pub address: u64,
    /// Name, demangled where possible.
    pub name: Option<String>,
    /// The analyst's name, beside `name` (an annotation; absent when none). Left out of the
    /// schema (tools/list budget), which allows it like any other member.
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub analyst: Option<crate::ids::AnalystName>,
    /// Stored symbol, when it differs from `name`.
    pub raw_name: Option<String>,
    /// Size stated by a symbol, unwind entry or Go table.
    pub size: Option<u64>,
    /// End (exclusive) of the extent the analysis decodes.
    #[serde(with = "hex")]
    #[schemars(with = "String")]
    pub end: u64,
    /// Section holding the procedure.
    pub section: Option<String>,
}

/// A string a procedure refers to.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct DossierString {
    /// Address of the referring instruction.
    #[serde(with = "hex")]
    #[schemars(with = "String")]
    pub site: u64,
    /// Address of the string.
    #[serde(with = "hex")]
    #[schemars(with = "String")]
    pub address: u64,
    /// The string (at most 512 characters).
    pub text: String,
    /// `utf-8`, `utf-16le`, or `cfstring` (a Mach-O constant CFString whose bytes are quoted).
    pub encoding: String,
}

/// A one-call summary of a procedure.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Dossier {
    /// Address, name, size and section.
    pub info: ProcedureInfo,
    /// Procedures that call it.
    pub callers: Vec<CallerEdge>,
    /// What it calls.
    pub callees: Vec<CalleeEdge>,
    /// Indirect transfers left unresolved.
    pub unresolved: Vec<UnresolvedCall>,
    /// Strings it refers to through address computations or loads.
    pub strings: Vec<DossierString>,
    /// Data symbols (by start) and import slots it refers to, first 64 by first use; absent
    /// when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub data: Vec<DataRef>,
    /// Names of the imports it calls, sorted and deduplicated.
    pub imports: Vec<String>,
    /// Its first 16 instructions.
    pub instructions: Vec<Instruction>,
    /// Number of instructions in its extent.
    pub total_instructions: usize,
}

/// Serde adapter for lists of addresses in canonical text.
mod hex_list {
    use serde::{Deserialize, Deserializer, Serializer, ser::SerializeSeq};

    pub fn serialize<S: Serializer>(values: &[u64], serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(values.len()))?;
        for v in values {
            seq.serialize_element(&super::super::address::format_address(*v))?;
        }
        seq.end()
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<u64>, D::Error> {
        let texts = Vec::<String>::deserialize(deserializer)?;
        texts
            .iter()
            .map(|t| {
                super::super::address::parse_address(t)
                    .ok_or_else(|| serde::de::Error::custom(format!("not a hex address: {t:?}")))
            })
            .collect()
    }
}

/// Classifies the references one instruction makes, the same way for callees and the index,
/// so that `A` calls `B` exactly when `A` is among `B`'s callers. `own` is the index of the
/// procedure holding the instruction.
fn classify(image: &Image, own: usize, insn: &Decoded, out: &mut Vec<(u64, RefKind)>) {
    if insn.invalid {
        return;
    }
    let own_start = image.procedures[own].address;
    // A PLT stub's jump through its slot, and its lazy-binding jump to the PLT header, are how
    // the stub reaches the import: the stub itself, not a call of anything.
    let is_stub = image.import_at(own_start).is_some();
    if let Some(target) = insn.target {
        let kind = match insn.flow {
            Flow::Call => RefKind::Call,
            Flow::Jump => {
                let other = (target != own_start)
                    .then(|| image.procedure_index(target))
                    .flatten();
                let to_own_part = other.is_some_and(|i| is_split_part(image, own, i));
                if is_stub || to_own_part {
                    RefKind::Jump
                } else if other.is_some() || image.import_at(target).is_some() {
                    RefKind::TailJump
                } else {
                    RefKind::Jump
                }
            }
            _ => RefKind::Branch,
        };
        out.push((target, kind));
    }
    if let Some(slot) = insn.slot {
        let kind = match (insn.flow, image.import_at(slot).is_some()) {
            (Flow::IndirectCall, true) => RefKind::SlotCall,
            (Flow::IndirectJump, true) if !is_stub => RefKind::SlotTailJump,
            _ => RefKind::Slot,
        };
        out.push((slot, kind));
    } else if let Some((address, usage)) = insn.memory {
        let kind = match usage {
            MemoryUse::Address => RefKind::Address,
            MemoryUse::Access => RefKind::Access,
            MemoryUse::Immediate => RefKind::Immediate,
        };
        // An immediate is an address only in an image linked at a fixed address (in a PIE or a
        // dylib nothing would relocate it), and only where the image has bytes; small ones are
        // constants. The same rule as the data names of `datarefs`.
        let plausible = image.section_at(address).is_some()
            && (usage != MemoryUse::Immediate || (image.fixed_address && address >= 0x1000));
        if plausible {
            out.push((address, kind));
        }
    }
}

/// Whether procedure `other` is a part the compiler split off procedure `own` (GCC's
/// `own.cold`): a jump there continues `own`, it is not a tail call.
fn is_split_part(image: &Image, own: usize, other: usize) -> bool {
    let (Some(own), Some(other)) = (
        image.procedures[own].name.as_deref(),
        image.procedures[other].name.as_deref(),
    ) else {
        return false;
    };
    other
        .strip_prefix(own)
        .is_some_and(|rest| rest == ".cold" || rest.starts_with(".cold."))
}

/// The operand part of a rendered instruction (everything after the mnemonic and prefixes).
fn operand_text(text: &str) -> String {
    let mut rest = text.trim();
    // Skip prefixes such as `notrack` or `bnd` that precede the mnemonic.
    for prefix in ["notrack ", "bnd ", "rep ", "lock "] {
        rest = rest.strip_prefix(prefix).unwrap_or(rest);
    }
    rest.split_once(' ')
        .map(|(_, ops)| ops.trim().to_string())
        .unwrap_or_default()
}

impl Image {
    fn require_decoder(&self, operation: &'static str) -> Result<(), ProviderError> {
        if disasm::supported(self.isa) {
            Ok(())
        } else {
            Err(ProviderError::UnsupportedArchitecture {
                architecture: self.doc.architecture.to_string(),
                operation,
            })
        }
    }

    fn require_procedure(&self, start: u64) -> Result<usize, ProviderError> {
        self.procedure_index(start)
            .ok_or(ProviderError::NoProcedure { address: start })
    }

    /// The bytes of a procedure's extent (possibly fewer, when the file ends early).
    fn procedure_bytes(&self, index: usize, cap: u64) -> (u64, u64, &[u8]) {
        let start = self.procedures[index].address;
        let end = self.procedure_end(index, cap);
        let bytes = self.bytes_from(start, end - start).unwrap_or(&[]);
        (start, end, bytes)
    }

    /// Name of what lives at an address: a procedure, an import, or a symbol.
    fn name_at(&self, address: u64) -> Option<String> {
        if let Some(p) = self.procedure_starting_at(address)
            && let Some(name) = &p.name
        {
            return Some(name.clone());
        }
        if let Some(import) = self.import_at(address) {
            return Some(import.name.clone());
        }
        self.symbol_name_at(address)
            .map(|s| super::symbols::display_name(s, self.doc.format == "macho"))
    }

    fn render(&self, insn: &Decoded, text: &str, names: &DataNames<'_>) -> Instruction {
        let bytes = self
            .bytes_at(insn.address, insn.len as u64)
            .map(::hex::encode)
            .unwrap_or_default();
        let target_name = insn.target.and_then(|t| self.name_at(t)).or_else(|| {
            insn.slot
                .and_then(|s| self.import_at(s))
                .map(|i| i.name.clone())
        });
        Instruction {
            analyst: None,
            analyst_comment: None,
            address: insn.address,
            bytes,
            text: text.to_string(),
            target: insn.target,
            target_name,
            data: names.operand(insn),
            memory: insn.memory.and_then(|(address, using)| {
                matches!(using, MemoryUse::Access | MemoryUse::Address).then_some(address)
            }),
        }
    }

    /// Disassembles the procedure starting at `start` and returns the instructions
    /// `[offset, offset + limit)` (at most 2000) of its extent.
    pub fn assembly(
        &self,
        start: u64,
        offset: usize,
        limit: usize,
    ) -> Result<AssemblyPage, ProviderError> {
        self.require_decoder("procedure_assembly")?;
        let index = self.require_procedure(start)?;
        let (start, end, bytes) = self.procedure_bytes(index, LISTING_CAP);
        let full_end = self.procedure_end(index, u64::MAX);
        let limit = limit.min(MAX_PAGE);
        let data = self.data_in_code();
        let names = DataNames::new(self);
        let mut d = CodeWalk::new(self.isa, bytes, start, &data, true);
        let mut text = String::new();
        let mut instructions = Vec::new();
        let mut total = 0usize;
        while let Some(piece) = {
            let want = total >= offset && total - offset < limit;
            d.next(want.then_some(&mut text))
        } {
            if total >= offset && total - offset < limit {
                instructions.push(match piece {
                    Piece::Insn(insn) => self.render(&insn, &text, &names),
                    Piece::Data { address, bytes } => render_data(address, bytes),
                });
            }
            total += 1;
        }
        let shown_end = offset.saturating_add(instructions.len());
        Ok(AssemblyPage {
            end,
            capped: full_end > end,
            total_instructions: total,
            offset,
            instructions,
            next_offset: (shown_end < total && limit > 0).then_some(shown_end),
        })
    }

    /// Direct calls and tail jumps of the procedure at `start`, resolved to procedures or
    /// imports; indirect transfers through unknown destinations are listed as unresolved. A
    /// switch's jump through a table `jumptable` recognises is not: its destinations are the
    /// procedure's own code, or tail calls where they start other procedures.
    pub fn callees(&self, start: u64) -> Result<CallGraphEdges, ProviderError> {
        self.require_decoder("procedure_callees")?;
        let index = self.require_procedure(start)?;
        let data = self.data_in_code();
        let mut edges: BTreeMap<(u64, &'static str), Vec<u64>> = BTreeMap::new();
        let mut unresolved = Vec::new();
        self.references(index, &data, |insn, refs, switch| {
            // A stub's jump through its import's slot is how the stub reaches the import (see
            // `classify`): not a call of anything, and not unknown either.
            let through_import = refs
                .iter()
                .any(|&(slot, kind)| kind == RefKind::Slot && self.import_at(slot).is_some());
            let mut resolved = switch || through_import;
            for &(target, kind) in refs {
                if let Some(via) = kind.via() {
                    edges.entry((target, via)).or_default().push(insn.address);
                    resolved = true;
                }
            }
            // Text is rendered only for the few instructions reported as unresolved.
            if !resolved && matches!(insn.flow, Flow::IndirectCall | Flow::IndirectJump) {
                unresolved.push(UnresolvedCall {
                    site: insn.address,
                    kind: if insn.flow == Flow::IndirectCall {
                        "call"
                    } else {
                        "jump"
                    }
                    .to_string(),
                    operand: operand_text(&self.text_at(insn.address)),
                });
            }
        });
        let callees = edges
            .into_iter()
            .map(|((target, via), sites)| self.callee_edge(target, via, sites))
            .collect();
        Ok(CallGraphEdges {
            callees,
            unresolved,
        })
    }

    /// Decodes the procedure at `index` across its extent and hands each instruction to
    /// `visit` with the references it makes ([`classify`]) and whether it is a switch's jump
    /// through a recognised table, whose destinations are then among the references. The
    /// callees and the code index both walk procedures through here, so that they agree.
    fn references(
        &self,
        index: usize,
        data: &[(u64, u64)],
        mut visit: impl FnMut(&Decoded, &[(u64, RefKind)], bool),
    ) {
        let (start, end, bytes) = self.procedure_bytes(index, SCAN_CAP);
        let mut d = CodeWalk::new(self.isa, bytes, start, data, false);
        let mut path = Path::default();
        let mut hoisted = jumptable::HoistedBases::new(start);
        let mut refs = Vec::new();
        while let Some(piece) = d.next(None) {
            let Piece::Insn(insn) = piece else {
                path.clear();
                continue;
            };
            path.push(&insn);
            refs.clear();
            classify(self, index, &insn, &mut refs);
            let switch = insn.flow == Flow::IndirectJump
                && insn.slot.is_none()
                && self.switch_refs(index, end, &path, insn.address, &mut hoisted, &mut refs);
            visit(&insn, &refs, switch);
        }
    }

    /// The destinations of a switch's jump at `jump` through its table (`path` ends there), added
    /// to `refs`: each inside the procedure (before `end`) or in a part split off it is a jump
    /// within it, each start of another procedure or of an import stub a tail call (a table
    /// only [`jumptable::loose_arm64`] or [`jumptable::hoisted_x86`] reads must stay inside the
    /// procedure). Whether the table was recognised and every destination is one of these;
    /// otherwise nothing is added and the jump stays unresolved.
    fn switch_refs(
        &self,
        own: usize,
        end: u64,
        path: &Path,
        jump: u64,
        hoisted: &mut jumptable::HoistedBases,
        refs: &mut Vec<(u64, RefKind)>,
    ) -> bool {
        let read = |address: u64, len: usize| self.bytes_at(address, len as u64);
        let start = self.procedures[own].address;
        // An AArch64 switch whose base the prologue set and whose guard lies far from its
        // block is read as discovery reads it, and kept only when every destination lies in
        // the procedure: the guard branches to the jump's block, one of the few addresses
        // before the jump where the block's table load can start.
        let (table, loose) = match jumptable::recognise(self.isa, path, &read) {
            Some(table) => (table, false),
            // An x86-64 switch whose base a register got before the path began, kept likewise.
            None if self.isa == super::types::Isa::X86_64 => {
                let Some(table) = jumptable::hoisted_x86(hoisted, path, &read) else {
                    return false;
                };
                (table, true)
            }
            None if self.isa == super::types::Isa::Arm64 => {
                let Some(table) = (3..=8)
                    .filter_map(|k| jump.checked_sub(4 * k).filter(|&b| b >= start))
                    .find_map(|block| jumptable::loose_arm64(start, block, jump, &read))
                else {
                    return false;
                };
                (table, true)
            }
            None => return false,
        };
        let mut targets = table.targets;
        targets.sort_unstable();
        targets.dedup();
        if loose && targets.iter().any(|t| !(start..end).contains(t)) {
            return false;
        }
        let mut found = Vec::with_capacity(targets.len());
        for t in targets {
            let kind = if (start..end).contains(&t) {
                RefKind::Jump
            } else if let Some(other) = self.procedure_index(t) {
                if is_split_part(self, own, other) {
                    RefKind::Jump
                } else {
                    RefKind::TailJump
                }
            } else if self.import_at(t).is_some() {
                RefKind::TailJump
            } else {
                return false;
            };
            found.push((t, kind));
        }
        refs.extend(found);
        true
    }

    /// Renders the single instruction at `address`.
    fn text_at(&self, address: u64) -> String {
        let bytes = self.bytes_from(address, 16).unwrap_or(&[]);
        let mut d = Disassembler::new(self.isa, bytes, address, true);
        let mut text = String::new();
        d.next(Some(&mut text));
        text
    }

    fn callee_edge(&self, target: u64, via: &str, sites: Vec<u64>) -> CalleeEdge {
        let (kind, name) = if let Some(import) = self.import_at(target) {
            (CalleeKind::Import, Some(import.name.clone()))
        } else if let Some(p) = self.procedure_starting_at(target) {
            (CalleeKind::Procedure, p.name.clone())
        } else {
            (CalleeKind::Address, self.name_at(target))
        };
        CalleeEdge {
            analyst: None,
            target,
            name,
            kind,
            via: via.to_string(),
            sites,
        }
    }

    /// The index of every code reference, built on first use.
    fn code_index(&self) -> &CodeIndex {
        self.code_index.get_or_init(|| {
            let mut refs = Vec::new();
            if !disasm::supported(self.isa) {
                return CodeIndex { refs };
            }
            let data = self.data_in_code();
            for index in 0..self.procedures.len() {
                self.references(index, &data, |insn, found, _| {
                    for &(target, kind) in found {
                        refs.push(CodeRef {
                            target,
                            site: insn.address,
                            procedure: index as u32,
                            kind,
                        });
                    }
                });
            }
            refs.sort_unstable_by_key(|r| (r.target, r.site));
            CodeIndex { refs }
        })
    }

    /// Every procedure with a direct call or tail jump to `target` (a procedure start, an
    /// import stub or an import slot; for an import, every stub and slot of the same name).
    pub fn callers(&self, target: u64) -> Result<Callers, ProviderError> {
        self.require_decoder("procedure_callers")?;
        let index = self.code_index();
        let mut targets = vec![target];
        if let Some(import) = self.import_at(target) {
            targets.extend(
                self.imports
                    .iter()
                    .filter(|i| i.name == import.name && i.address != target)
                    .map(|i| i.address),
            );
        }
        let mut grouped: BTreeMap<(u64, &'static str), Vec<u64>> = BTreeMap::new();
        for t in targets {
            for r in index.to(t) {
                if let Some(via) = r.kind.via() {
                    let caller = self.procedures[r.procedure as usize].address;
                    grouped.entry((caller, via)).or_default().push(r.site);
                }
            }
        }
        let callers = grouped
            .into_iter()
            .map(|((procedure, via), mut sites)| {
                sites.sort_unstable();
                sites.dedup();
                CallerEdge {
                    analyst: None,
                    procedure,
                    name: self
                        .procedure_starting_at(procedure)
                        .and_then(|p| p.name.clone()),
                    via: via.to_string(),
                    sites,
                }
            })
            .collect();
        Ok(Callers {
            analyst: None,
            target,
            name: self.name_at(target),
            callers,
        })
    }

    /// Code and data references to `address`.
    pub fn xrefs(&self, address: u64) -> Result<Xrefs, ProviderError> {
        self.require_decoder("xrefs")?;
        // One parse of the file serves the data symbols and the ELF relocations.
        let file = object::File::parse(&self.bytes[..]).ok();
        let names = DataNames::of_file(self, file.as_ref());
        let (data, total_data) = self.data_pointers_to(address, file.as_ref(), &names);
        // Code that refers to the address, then code that reaches it through a pointer in
        // data (a string only a `const char *` variable points at).
        let mut refs: Vec<(&CodeRef, Option<u64>)> = self
            .code_index()
            .to(address)
            .iter()
            .map(|r| (r, None))
            .collect();
        let relocated = file.as_ref().map(relocated_pointers).unwrap_or_default();
        for place in self.pointer_places(address, &relocated) {
            refs.extend(self.code_index().to(place).iter().map(|r| (r, Some(place))));
        }
        let code = refs
            .iter()
            .take(MAX_XREFS)
            .map(|&(r, via)| {
                let p = &self.procedures[r.procedure as usize];
                CodeXref {
                    analyst: None,
                    site: r.site,
                    procedure: p.address,
                    procedure_name: p.name.clone(),
                    kind: r.kind.name().to_string(),
                    via,
                }
            })
            .collect();
        // What code names exactly (a procedure, import or symbol start) first; else what an
        // operand landing here would be called (a string, `OPS+0x8`).
        let name = self
            .name_at(address)
            .or_else(|| names.resolve(address).map(|n| n.display()));
        Ok(Xrefs {
            analyst: None,
            address,
            name,
            code,
            total_code: refs.len(),
            data,
            total_data,
        })
    }

    /// The procedures whose code refers to any of `targets`, by start, each with its name and
    /// referring sites (sorted, distinct); `None` when this architecture is not decoded.
    pub(super) fn users_of(&self, targets: &[u64]) -> Option<Vec<super::strings::StringUser>> {
        if !disasm::supported(self.isa) {
            return None;
        }
        let mut targets = targets.to_vec();
        targets.sort_unstable();
        targets.dedup();
        type User = (Option<String>, Vec<u64>, Option<u64>);
        let mut by_procedure: BTreeMap<u64, User> = BTreeMap::new();
        for &target in &targets {
            for r in self.code_index().to(target) {
                let p = &self.procedures[r.procedure as usize];
                let entry = by_procedure
                    .entry(p.address)
                    .or_insert_with(|| (p.name.clone(), Vec::new(), None));
                entry.1.push(r.site);
            }
        }
        // Procedures that reach a target only through a pointer in data, with the pointer.
        let file = object::File::parse(&self.bytes[..]).ok();
        let relocated = file.as_ref().map(relocated_pointers).unwrap_or_default();
        for &target in &targets {
            for place in self.pointer_places(target, &relocated) {
                for r in self.code_index().to(place) {
                    let p = &self.procedures[r.procedure as usize];
                    if by_procedure.get(&p.address).is_some_and(|u| u.2.is_none()) {
                        continue;
                    }
                    let entry = by_procedure
                        .entry(p.address)
                        .or_insert_with(|| (p.name.clone(), Vec::new(), Some(place)));
                    entry.1.push(r.site);
                }
            }
        }
        Some(
            by_procedure
                .into_iter()
                .map(|(procedure, (name, mut sites, via))| {
                    sites.sort_unstable();
                    sites.dedup();
                    super::strings::StringUser {
                        analyst: None,
                        procedure,
                        name,
                        sites,
                        via,
                    }
                })
                .collect(),
        )
    }

    /// Pointers to `address` in data: pointer-sized, pointer-aligned values equal to it in
    /// sections that hold program data, and the places ELF dynamic relocations set to it
    /// (`R_*_RELATIVE` addends, absolute relocations of a defined symbol), each named by the
    /// data symbol whose extent holds it.
    fn data_pointers_to(
        &self,
        address: u64,
        file: Option<&object::File<'_>>,
        names: &DataNames<'_>,
    ) -> (Vec<DataXref>, usize) {
        let relocated = file.map(relocated_pointers).unwrap_or_default();
        let places = self.pointer_places(address, &relocated);
        let total = places.len();
        let out = places
            .into_iter()
            .take(MAX_XREFS)
            .map(|at| {
                let (symbol, symbol_offset) = names.symbol_holding(at).unzip();
                DataXref {
                    at,
                    section: self
                        .section_at(at)
                        .map(|s| s.name.clone())
                        .unwrap_or_default(),
                    symbol,
                    symbol_offset,
                }
            })
            .collect();
        (out, total)
    }

    /// Places in data that hold a pointer to `address`: pointer-sized, pointer-aligned values
    /// equal to it in sections that hold program data, and the places ELF dynamic relocations
    /// set to it; sorted, distinct.
    fn pointer_places(&self, address: u64, relocated: &[(u64, u64)]) -> Vec<u64> {
        let size = usize::from(self.pointer_size);
        if size == 4 && address > u64::from(u32::MAX) {
            return Vec::new();
        }
        let needle: Vec<u8> = match (size, self.big_endian) {
            (4, false) => (address as u32).to_le_bytes().to_vec(),
            (4, true) => (address as u32).to_be_bytes().to_vec(),
            (_, false) => address.to_le_bytes().to_vec(),
            (_, true) => address.to_be_bytes().to_vec(),
        };
        let mut places: Vec<u64> = Vec::new();
        for section in self.sections.iter().filter(|s| self.holds_data(s)) {
            let data = self.section_bytes(section);
            for at in memchr::memmem::find_iter(data, &needle) {
                let va = section.address.wrapping_add(at as u64);
                if va % size as u64 == 0 {
                    places.push(va);
                }
            }
        }
        if self.doc.format == "elf" {
            places.extend(
                relocated
                    .iter()
                    .copied()
                    .filter(|&(value, at)| {
                        value == address && self.section_at(at).is_some_and(|s| self.holds_data(s))
                    })
                    .map(|(_, at)| at),
            );
        }
        places.sort_unstable();
        places.dedup();
        places
    }

    /// Whether a non-executable section holds program data that may contain pointers, rather
    /// than the linker's and loader's metadata: symbol and string tables, relocations, hash
    /// tables, versions, notes, unwind tables, the dynamic section, PE's base relocations,
    /// imports, exports and unwind data (whose values are addresses, not pointers of the
    /// program).
    fn holds_data(&self, section: &super::SectionInfo) -> bool {
        if section.executable {
            return false;
        }
        let name = section.name.as_str();
        const METADATA: [&str; 20] = [
            ".dynsym",
            ".dynstr",
            ".symtab",
            ".strtab",
            ".shstrtab",
            ".hash",
            ".gnu.hash",
            ".gnu.version",
            ".gnu.version_r",
            ".gnu.version_d",
            ".dynamic",
            ".interp",
            ".eh_frame",
            ".eh_frame_hdr",
            ".gcc_except_table",
            ".relr.dyn",
            ".reloc",
            ".pdata",
            ".xdata",
            ".edata",
        ];
        !(METADATA.contains(&name)
            || name.starts_with(".rela")
            || name.starts_with(".rel.")
            || name.starts_with(".note")
            || name == ".idata"
            || name.ends_with(",__unwind_info")
            || name.ends_with(",__eh_frame"))
    }

    /// Reads a string that an instruction refers to, when the address holds one.
    pub(crate) fn string_at(&self, address: u64) -> Option<(String, &'static str)> {
        let section = self.section_at(address)?;
        if section.executable {
            return None;
        }
        if section.name.ends_with("__cfstring") {
            // struct { isa; flags; const char *str; long length } with pointer-sized fields.
            let size = u64::from(self.pointer_size);
            let raw = self.bytes_at(address.checked_add(2 * size)?, size)?;
            let pointer = match (size, self.big_endian) {
                (4, false) => u64::from(u32::from_le_bytes(raw.try_into().ok()?)),
                (4, true) => u64::from(u32::from_be_bytes(raw.try_into().ok()?)),
                (_, false) => u64::from_le_bytes(raw.try_into().ok()?),
                (_, true) => u64::from_be_bytes(raw.try_into().ok()?),
            };
            // Chained-fixup binaries store rebases in the pointer's low bits.
            let pointer = pointer & 0x0000_000f_ffff_ffff;
            let candidates = [pointer, pointer.wrapping_add(self.image_base())];
            return candidates
                .iter()
                .find_map(|&p| self.c_string_at(p))
                .map(|s| (s, "cfstring"));
        }
        if let Some(s) = self.c_string_at(address) {
            return Some((s, "utf-8"));
        }
        self.utf16_string_at(address).map(|s| (s, "utf-16le"))
    }

    /// Ranges of data a Mach-O linker placed among code (`LC_DATA_IN_CODE`: jump tables, literal
    /// pools), as sorted `(start, end)` virtual addresses; empty for other formats.
    fn data_in_code(&self) -> Vec<(u64, u64)> {
        if self.doc.format != "macho" {
            return Vec::new();
        }
        let Ok(file) = object::File::parse(&self.bytes[..]) else {
            return Vec::new();
        };
        let entries = match &file {
            object::File::MachO32(f) => data_in_code_entries(f),
            object::File::MachO64(f) => data_in_code_entries(f),
            _ => Vec::new(),
        };
        // Entry offsets are file offsets of the image; map them through the sections.
        let mut out: Vec<(u64, u64)> = entries
            .into_iter()
            .filter_map(|(offset, len)| {
                let section = self.sections.iter().find(|s| {
                    s.file_offset
                        .is_some_and(|o| offset >= o && offset - o < s.file_size)
                })?;
                let start = section.address + (offset - section.file_offset?);
                Some((start, start.saturating_add(len)))
            })
            .collect();
        out.sort_unstable();
        out
    }

    /// The base address of the image (the lowest section address), for rebased pointers.
    fn image_base(&self) -> u64 {
        self.sections.iter().map(|s| s.address).min().unwrap_or(0) & !0xfff
    }

    fn c_string_at(&self, address: u64) -> Option<String> {
        let section = self.section_at(address)?;
        if section.executable {
            return None;
        }
        let data = self.bytes_from(address, 4096)?;
        let len = memchr::memchr(0, data)?;
        let text = std::str::from_utf8(&data[..len]).ok()?;
        let printable = text
            .chars()
            .all(|c| !c.is_control() || matches!(c, '\n' | '\r' | '\t'));
        (text.chars().count() >= 2 && printable)
            .then(|| text.chars().take(DOSSIER_STRING_MAX).collect())
    }

    fn utf16_string_at(&self, address: u64) -> Option<String> {
        let data = self.bytes_from(address, 2048)?;
        let units: Vec<u16> = data
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .take_while(|&u| u != 0)
            .collect();
        let text = String::from_utf16(&units).ok()?;
        let ascii_like = text.chars().all(|c| c.is_ascii_graphic() || c == ' ');
        (units.len() >= 3 && ascii_like).then(|| text.chars().take(DOSSIER_STRING_MAX).collect())
    }

    /// Every address the procedure at `start` names in an operand, through the walk the call
    /// graph and the cross references share (targets of calls, jumps and recognised switch
    /// tables, addresses it computes, reads or writes, immediates that can be addresses): what
    /// the procedure can be said to point at.
    /// `None` when its instructions cannot be decoded here. (The angr worker's, so Linux only.)
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub(crate) fn operand_addresses(&self, start: u64) -> Option<Vec<u64>> {
        self.require_decoder("procedure_pseudo_code").ok()?;
        let index = self.require_procedure(start).ok()?;
        let data = self.data_in_code();
        let mut out = Vec::new();
        self.references(index, &data, |_, refs, _| {
            out.extend(refs.iter().map(|&(address, _)| address));
        });
        out.sort_unstable();
        out.dedup();
        Some(out)
    }

    /// Everything about one procedure in one answer: info, callers, callees, referenced
    /// strings, called imports and its first instructions.
    pub fn function_dossier(&self, start: u64) -> Result<Dossier, ProviderError> {
        self.require_decoder("analyze_function")?;
        let index = self.require_procedure(start)?;
        let proc = self.procedures[index].clone();
        let (start, end, bytes) = self.procedure_bytes(index, SCAN_CAP);
        let data = self.data_in_code();
        let mut d = CodeWalk::new(self.isa, bytes, start, &data, true);
        let mut text = String::new();
        let mut instructions = Vec::new();
        let mut strings = Vec::new();
        let names = DataNames::new(self);
        let mut data_refs: Vec<DataRef> = Vec::new();
        let mut total = 0;
        while let Some(piece) = d.next((total < DOSSIER_INSTRUCTIONS).then_some(&mut text)) {
            let insn = match piece {
                Piece::Insn(insn) => insn,
                Piece::Data { address, bytes } => {
                    if total < DOSSIER_INSTRUCTIONS {
                        instructions.push(render_data(address, bytes));
                    }
                    total += 1;
                    continue;
                }
            };
            if total < DOSSIER_INSTRUCTIONS {
                instructions.push(self.render(&insn, &text, &names));
            }
            total += 1;
            if data_refs.len() < DOSSIER_DATA {
                let named = match names.of(&insn) {
                    Some((_, DataName::Symbol { start, name, .. })) => Some((start, name)),
                    Some((at, DataName::Slot(name))) => Some((at, name)),
                    _ => None,
                };
                if let Some((address, name)) = named
                    && !data_refs.iter().any(|r| r.address == address)
                {
                    data_refs.push(DataRef {
                        address,
                        name,
                        analyst: None,
                    });
                }
            }
            if let Some((address, MemoryUse::Address | MemoryUse::Access | MemoryUse::Immediate)) =
                insn.memory
                && insn.slot.is_none()
                && let Some((text, encoding)) = self.string_at(address)
            {
                strings.push(DossierString {
                    site: insn.address,
                    address,
                    text,
                    encoding: encoding.to_string(),
                });
            }
        }
        let edges = self.callees(start)?;
        let callers = self.callers(start)?.callers;
        let mut imports: Vec<String> = edges
            .callees
            .iter()
            .filter(|e| e.kind == "import")
            .filter_map(|e| e.name.clone())
            .collect();
        imports.sort();
        imports.dedup();
        Ok(Dossier {
            info: ProcedureInfo {
                analyst: None,
                address: start,
                name: proc.name,
                raw_name: proc.raw_name,
                size: proc.size,
                end,
                section: self.section_at(start).map(|s| s.name.clone()),
            },
            callers,
            callees: edges.callees,
            unresolved: edges.unresolved,
            strings,
            data: data_refs,
            imports,
            instructions,
            total_instructions: total,
        })
    }
}

/// `(file offset, length)` of each `LC_DATA_IN_CODE` entry of a Mach-O image.
fn data_in_code_entries<Mach: object::read::macho::MachHeader<Endian = object::Endianness>>(
    file: &object::read::macho::MachOFile<'_, Mach>,
) -> Vec<(u64, u64)> {
    use object::Object;
    let endian = file.endian();
    let data = file.data();
    let little = file.is_little_endian();
    let mut out = Vec::new();
    let Ok(mut commands) = file.macho_load_commands() else {
        return out;
    };
    while let Ok(Some(command)) = commands.next() {
        if command.cmd() != object::macho::LC_DATA_IN_CODE {
            continue;
        }
        let Ok(linkedit) = command.data::<object::macho::LinkeditDataCommand<object::Endianness>>()
        else {
            continue;
        };
        let start = linkedit.dataoff.get(endian) as usize;
        let size = linkedit.datasize.get(endian) as usize;
        let Some(table) = start.checked_add(size).and_then(|end| data.get(start..end)) else {
            continue;
        };
        // struct data_in_code_entry { uint32_t offset; uint16_t length; uint16_t kind; }
        for entry in table.chunks_exact(8).take(MAX_RELOCATIONS) {
            let word = |b: &[u8]| -> u64 {
                let v = [b[0], b[1], b[2], b[3]];
                u64::from(if little {
                    u32::from_le_bytes(v)
                } else {
                    u32::from_be_bytes(v)
                })
            };
            let half = |b: &[u8]| -> u64 {
                let v = [b[0], b[1]];
                u64::from(if little {
                    u16::from_le_bytes(v)
                } else {
                    u16::from_be_bytes(v)
                })
            };
            let len = half(&entry[4..6]);
            if len > 0 {
                out.push((word(&entry[..4]), len));
            }
        }
    }
    out
}

/// What a walk over a procedure's bytes yields: an instruction, or a piece of data the
/// linker placed among the code.
enum Piece<'a> {
    Insn(Decoded),
    Data { address: u64, bytes: &'a [u8] },
}

/// Decodes a procedure's bytes like [`Disassembler`], stepping over data-in-code ranges (in
/// pieces of up to four bytes, as a jump table's entries are) instead of decoding them.
struct CodeWalk<'a> {
    isa: super::types::Isa,
    bytes: &'a [u8],
    base: u64,
    data: &'a [(u64, u64)],
    with_text: bool,
    pos: usize,
    current: Option<(Disassembler<'a>, usize)>,
}

impl<'a> CodeWalk<'a> {
    fn new(
        isa: super::types::Isa,
        bytes: &'a [u8],
        base: u64,
        data: &'a [(u64, u64)],
        with_text: bool,
    ) -> CodeWalk<'a> {
        CodeWalk {
            isa,
            bytes,
            base,
            data,
            with_text,
            pos: 0,
            current: None,
        }
    }

    fn next(&mut self, mut text: Option<&mut String>) -> Option<Piece<'a>> {
        loop {
            if let Some((d, end)) = &mut self.current {
                if let Some(insn) = d.next(text.as_deref_mut()) {
                    return Some(Piece::Insn(insn));
                }
                self.pos = *end;
                self.current = None;
            }
            if self.pos >= self.bytes.len() {
                return None;
            }
            let address = self.base.wrapping_add(self.pos as u64);
            // The first range that ends after `address`.
            let i = self.data.partition_point(|&(_, hi)| hi <= address);
            match self.data.get(i) {
                Some(&(lo, hi)) if lo <= address => {
                    let len = usize::try_from(hi - address)
                        .unwrap_or(usize::MAX)
                        .min(4)
                        .min(self.bytes.len() - self.pos);
                    let bytes = &self.bytes[self.pos..self.pos + len];
                    self.pos += len;
                    return Some(Piece::Data { address, bytes });
                }
                next => {
                    let end = next
                        .and_then(|&(lo, _)| usize::try_from(lo - self.base).ok())
                        .map_or(self.bytes.len(), |e| e.min(self.bytes.len()));
                    let d = Disassembler::new(
                        self.isa,
                        &self.bytes[self.pos..end],
                        address,
                        self.with_text,
                    );
                    self.current = Some((d, end));
                }
            }
        }
    }
}

/// A piece of data among code, shown as the assembler directive that would emit it.
fn render_data(address: u64, bytes: &[u8]) -> Instruction {
    let value = bytes
        .iter()
        .rev()
        .fold(0u64, |v, &b| (v << 8) | u64::from(b));
    let directive = match bytes.len() {
        1 => ".byte",
        2 => ".short",
        _ => ".long",
    };
    Instruction {
        analyst: None,
        analyst_comment: None,
        address,
        bytes: ::hex::encode(bytes),
        text: format!("{directive} {value:#x}"),
        target: None,
        target_name: None,
        data: None,
        memory: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::native::StringQuery;
    use crate::providers::native::test_support::{document, fixtures, tool_output};

    fn by_name<'a>(image: &'a Image, name: &str) -> &'a crate::providers::native::Procedure {
        image
            .procedures()
            .iter()
            .find(|p| p.name.as_deref() == Some(name))
            .unwrap_or_else(|| panic!("{name} missing"))
    }

    /// `(address, mnemonic)` pairs from an objdump-style listing.
    fn listing(text: &str) -> Vec<(u64, String)> {
        text.lines()
            .filter_map(|line| {
                let (address, rest) = line.trim_start().split_once(':')?;
                let address = u64::from_str_radix(address.trim(), 16).ok()?;
                let mnemonic = rest.split('\t').nth(1)?;
                let mnemonic = mnemonic.split_whitespace().next()?.to_string();
                Some((address, mnemonic))
            })
            .collect()
    }

    fn check_listing(ours: &AssemblyPage, theirs: &[(u64, String)]) {
        let our_addresses: Vec<u64> = ours.instructions.iter().map(|i| i.address).collect();
        let their_addresses: Vec<u64> = theirs.iter().map(|(a, _)| *a).collect();
        assert_eq!(our_addresses, their_addresses);
        let same = ours
            .instructions
            .iter()
            .zip(theirs)
            .filter(|(i, (_, m))| i.text.split_whitespace().next() == Some(m.as_str()))
            .count();
        assert!(
            same * 10 >= theirs.len() * 8,
            "{same} of {} mnemonics agree",
            theirs.len()
        );
    }

    #[test]
    fn x86_64_listing_agrees_with_objdump() {
        let doc = document("/usr/lib/x86_64-linux-gnu/libc.so.6", None);
        let image = Image::load(&doc).unwrap();
        let malloc = by_name(&image, "malloc").clone();
        let page = image.assembly(malloc.address, 0, 2000).unwrap();
        assert_eq!(page.end, malloc.address + malloc.size.unwrap());
        assert_eq!(page.total_instructions, page.instructions.len());
        assert!(
            page.instructions
                .iter()
                .all(|i| !i.text.is_empty() && !i.bytes.is_empty())
        );
        let Some(dump) = tool_output(
            "objdump",
            &[
                "-d",
                "-M",
                "intel",
                "--no-show-raw-insn",
                &format!("--start-address={:#x}", malloc.address),
                &format!("--stop-address={:#x}", page.end),
                "/usr/lib/x86_64-linux-gnu/libc.so.6",
            ],
        ) else {
            return;
        };
        check_listing(&page, &listing(&dump));
        // Paging windows tile the listing.
        let first = image.assembly(malloc.address, 0, 5).unwrap();
        assert_eq!(first.instructions.len(), 5);
        assert_eq!(first.next_offset, Some(5));
        let second = image.assembly(malloc.address, 5, 5).unwrap();
        assert_eq!(second.instructions[0].address, page.instructions[5].address);
    }

    #[test]
    fn arm64_listing_agrees_with_llvm_objdump() {
        let doc = document("fsevents/package/fsevents.node", Some("arm64"));
        let image = Image::load(&doc).unwrap();
        let start = by_name(&image, "FSEStart").address;
        let page = image.assembly(start, 0, 2000).unwrap();
        assert!(page.total_instructions > 10);
        assert!(
            page.instructions
                .iter()
                .any(|i| i.text.starts_with("bl ") && i.target.is_some())
        );
        let path = fixtures().join("fsevents/package/fsevents.node");
        let Some(dump) = tool_output(
            "llvm-objdump-14",
            &[
                "-d",
                "--arch=arm64",
                "--no-show-raw-insn",
                &format!("--start-address={start:#x}"),
                &format!("--stop-address={:#x}", page.end),
                path.to_str().unwrap(),
            ],
        ) else {
            eprintln!("llvm-objdump-14 not installed; arm64 cross-check skipped");
            return;
        };
        // llvm-objdump lists the whole section for a universal file; keep the procedure's range.
        let theirs: Vec<_> = listing(&dump)
            .into_iter()
            .filter(|(a, _)| *a >= start && *a < page.end)
            .collect();
        check_listing(&page, &theirs);
    }

    fn assert_call_graph_consistent(image: &Image, limit: usize) {
        let mut edges = 0;
        for p in image.procedures().iter().take(limit) {
            let callees = image.callees(p.address).unwrap();
            for edge in callees.callees.iter().filter(|e| e.kind == "procedure") {
                let callers = image.callers(edge.target).unwrap();
                assert!(
                    callers
                        .callers
                        .iter()
                        .any(|c| c.procedure == p.address && c.via == edge.via),
                    "{:#x} calls {:#x} but is not among its callers",
                    p.address,
                    edge.target
                );
                edges += 1;
            }
        }
        assert!(edges > 10, "only {edges} edges checked");
        // And the other way round: every caller lists the callee.
        for p in image.procedures().iter().take(limit) {
            // Callers of an import stub include calls through the import's other stubs and
            // slots of the same name, so those are matched by name.
            let import = image.import_at(p.address).map(|i| i.name.clone());
            for caller in image.callers(p.address).unwrap().callers {
                let callees = image.callees(caller.procedure).unwrap();
                assert!(callees.callees.iter().any(|e| e.target == p.address
                    || (e.kind == "import" && import.is_some() && e.name == import)));
            }
        }
    }

    #[test]
    fn callers_and_callees_agree_on_every_binary_kind() {
        for doc in [
            document("fsevents/package/fsevents.node", Some("arm64")),
            document("fsevents/package/fsevents.node", Some("x86_64")),
            document("/usr/bin/ls", None),
            document(
                "node-notifier/package/vendor/snoreToast/snoretoast-x64.exe",
                None,
            ),
        ] {
            let image = Image::load(&doc).unwrap();
            assert_call_graph_consistent(&image, 300);
        }
    }

    #[test]
    fn imports_are_resolved_through_stubs_plt_and_iat() {
        let fse = Image::load(&document("fsevents/package/fsevents.node", Some("arm64"))).unwrap();
        let start = by_name(&fse, "FSEStart").address;
        let edges = fse.callees(start).unwrap();
        assert!(edges.callees.iter().any(|e| {
            e.kind == "import"
                && e.name.as_deref() == Some("_malloc")
                && e.target
                    == fse
                        .imports()
                        .iter()
                        .find(|i| i.name == "_malloc" && i.kind == "stub")
                        .unwrap()
                        .address
        }));
        let stream_users = fse.procedures().iter().filter(|p| {
            fse.callees(p.address).unwrap().callees.iter().any(|e| {
                e.kind == "import"
                    && e.name
                        .as_deref()
                        .is_some_and(|n| n.starts_with("_FSEventStream"))
            })
        });
        assert!(stream_users.count() > 0);

        let ls = Image::load(&document("/usr/bin/ls", None)).unwrap();
        let any_malloc = ls.procedures().iter().any(|p| {
            ls.callees(p.address)
                .unwrap()
                .callees
                .iter()
                .any(|e| e.kind == "import" && e.name.as_deref() == Some("malloc"))
        });
        assert!(any_malloc);
        let malloc_stub = ls
            .imports()
            .iter()
            .find(|i| i.name == "malloc" && i.kind == "plt")
            .unwrap();
        assert!(!ls.callers(malloc_stub.address).unwrap().callers.is_empty());

        let pe = Image::load(&document(
            "node-notifier/package/vendor/snoreToast/snoretoast-x64.exe",
            None,
        ))
        .unwrap();
        let called = pe
            .imports()
            .iter()
            .find_map(|i| {
                let callers = pe.callers(i.address).unwrap().callers;
                (!callers.is_empty()).then(|| (i.clone(), callers))
            })
            .expect("some import slot is called");
        let (import, callers) = called;
        let edges = pe.callees(callers[0].procedure).unwrap();
        assert!(
            edges
                .callees
                .iter()
                .any(|e| e.kind == "import" && e.name.as_deref() == Some(import.name.as_str()))
        );
    }

    #[test]
    fn xrefs_find_string_users_on_x86_64_and_arm64() {
        for (doc, needle) in [
            (document("/usr/bin/ls", None), "--help"),
            (
                document("fsevents/package/fsevents.node", Some("arm64")),
                "FSEvent",
            ),
            (
                document("fsevents/package/fsevents.node", Some("x86_64")),
                "FSEvent",
            ),
        ] {
            let image = Image::load(&doc).unwrap();
            let found = image.strings(&StringQuery::literal(needle)).unwrap();
            // These are NUL-terminated C strings: code refers to the string holding the match.
            let referenced = found.matches.iter().any(|m| {
                let x = image.xrefs(m.string_address).unwrap();
                x.total_code > 0
                    && x.code
                        .iter()
                        .all(|c| image.procedure_starting_at(c.procedure).is_some())
            });
            assert!(
                referenced,
                "{}: no code refers to a {needle:?} string",
                doc.name
            );
        }
    }

    #[test]
    fn pe_data_pointers_are_found() {
        let image = Image::load(&document(
            "node-notifier/package/vendor/snoreToast/snoretoast-x64.exe",
            None,
        ))
        .unwrap();
        let with_data = image
            .procedures()
            .iter()
            .take(2000)
            .find(|p| image.xrefs(p.address).unwrap().total_data > 0);
        let p = with_data.expect("some procedure is referenced from a table");
        let x = image.xrefs(p.address).unwrap();
        assert!(
            x.data
                .iter()
                .all(|d| image.section_at(d.at).is_some_and(|s| !s.executable))
        );
    }

    #[test]
    fn dossier_summarizes_a_procedure() {
        let image =
            Image::load(&document("fsevents/package/fsevents.node", Some("x86_64"))).unwrap();
        let best = image
            .procedures()
            .iter()
            .map(|p| image.function_dossier(p.address).unwrap())
            .max_by_key(|d| d.strings.len())
            .unwrap();
        assert!(!best.strings.is_empty());
        assert!(best.instructions.len() <= 16);
        assert!(best.total_instructions >= best.instructions.len());
        let with_imports = image.procedures().iter().any(|p| {
            !image
                .function_dossier(p.address)
                .unwrap()
                .imports
                .is_empty()
        });
        assert!(with_imports);
        let json = serde_json::to_value(&best).unwrap();
        assert!(json["info"]["address"].as_str().unwrap().starts_with("0x"));
    }

    #[test]
    fn bad_addresses_and_unsupported_architectures_are_errors() {
        let image = Image::load(&document("/usr/bin/ls", None)).unwrap();
        let first = image.procedures()[0].address;
        assert!(matches!(
            image.assembly(first + 1, 0, 10),
            Err(ProviderError::NoProcedure { .. })
        ));
        assert!(matches!(
            image.callees(0),
            Err(ProviderError::NoProcedure { .. })
        ));
        assert!(image.callers(0).unwrap().callers.is_empty());
        let ppc = Image::load(&document(
            "py2app/py2app/apptemplate/prebuilt/main-universal",
            Some("ppc"),
        ))
        .unwrap();
        let start = ppc.procedures()[0].address;
        assert!(matches!(
            ppc.assembly(start, 0, 10),
            Err(ProviderError::UnsupportedArchitecture { .. })
        ));
        assert!(ppc.strings(&StringQuery::literal("")).unwrap().total > 0);
    }
}
