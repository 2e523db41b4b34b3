//! Instruction-level facts about one procedure for comparing builds: a digest of its bytes with
//! every address-dependent field masked, its basic blocks and control-flow shape, its mnemonic
//! histogram and the constants it uses.
//!
//! Masked are the fields that change when code or data moves and nothing else does: direct
//! branch and call displacements, RIP-relative displacements, absolute addresses (immediates and
//! displacements that land in a mapped section, which is what base relocations patch), and on
//! arm64 the PC-relative immediates (`b`, `bl`, `b.cond`, `cbz`, `tbz`, `adr`, `adrp`, literal
//! loads) plus the low-12-bit offset that completes an `adrp` page.

use std::collections::BTreeMap;

use iced_x86::{
    Decoder, DecoderOptions, FlowControl, Instruction as X86Instruction, Mnemonic, OpKind, Register,
};
use yaxpeax_arch::{Decoder as _, U8Reader};
use yaxpeax_arm::armv8::a64::{InstDecoder, Opcode, Operand};

use super::ProviderError;
use super::disasm::{self, Disassembler, Flow};
use super::image::Image;
use super::types::Isa;

/// Bodies are read at most this far past their start, as the call-graph scans are.
const BODY_CAP: u64 = 1 << 20;

/// What one procedure's instructions are, independent of where the build placed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BodyFacts {
    /// Entry address.
    pub address: u64,
    /// End (exclusive) of the decoded extent.
    pub end: u64,
    /// Instructions in the extent, trailing padding (`nop`, `int3`, zero bytes) excluded.
    pub instructions: u32,
    /// Instructions that did not decode.
    pub invalid: u32,
    /// Bytes covered by those instructions.
    pub code_bytes: u64,
    /// FNV-1a digest of the instruction bytes with address-dependent fields zeroed.
    pub masked_digest: u64,
    /// `(mnemonic id, count)` sorted by id; ids are stable within one instruction set.
    pub mnemonics: Vec<(u32, u32)>,
    /// Basic blocks: the entry, every in-extent branch target, and every instruction after a
    /// branch or return.
    pub blocks: u32,
    /// Control-flow edges between those blocks (fall-through and in-extent branches).
    pub edges: u32,
    /// Digest of the block graph: block count and edges as block-index pairs in address order.
    pub shape_digest: u64,
    /// Immediate operands that are not addresses, sorted (a multiset).
    pub constants: Vec<u64>,
}

/// One instruction as the splitter sees it.
struct Step {
    address: u64,
    len: u32,
    flow: Flow,
    target: Option<u64>,
    padding: bool,
    invalid: bool,
}

/// A 64-bit FNV-1a digest: deterministic across runs and platforms, so facts can be compared
/// and recorded.
#[derive(Clone, Copy)]
struct Fnv(u64);

impl Fnv {
    fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    fn bytes(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    fn u64(&mut self, value: u64) {
        self.bytes(&value.to_le_bytes());
    }

    fn finish(self) -> u64 {
        self.0
    }
}

/// One instruction of a body with its address-dependent fields zeroed, as the digest of
/// [`BodyFacts`] sees it: two builds' instructions with equal masked bytes differ at most in
/// where they and what they refer to were placed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MaskedInstruction {
    /// Address of the instruction.
    pub address: u64,
    /// Its bytes, address-dependent fields zeroed.
    pub masked: Vec<u8>,
}

/// A decoded body: its extent, masked bytes, instructions and constants, trailing padding
/// dropped.
struct Body {
    end: u64,
    masked: Vec<u8>,
    steps: Vec<Step>,
    /// Per instruction: where its masked bytes end, and its mnemonic id.
    marks: Vec<(usize, u32)>,
    constants: Vec<u64>,
    /// Instructions that did not decode, trailing ones included.
    invalid: u32,
}

impl Image {
    /// Facts about the body of the procedure starting at `start`.
    pub fn body_facts(&self, start: u64) -> Result<BodyFacts, ProviderError> {
        let Body {
            end,
            masked,
            steps,
            marks,
            mut constants,
            invalid,
        } = self.body(start)?;
        let masked_len = marks.last().map_or(0, |m| m.0);
        let mut digest = Fnv::new();
        digest.bytes(&masked[..masked_len]);
        let mut mnemonics: BTreeMap<u32, u32> = BTreeMap::new();
        for &(_, mnemonic) in &marks {
            *mnemonics.entry(mnemonic).or_default() += 1;
        }
        let (blocks, edges, shape_digest) = shape(start, &steps);
        constants.sort_unstable();
        Ok(BodyFacts {
            address: start,
            end,
            instructions: steps.len() as u32,
            invalid,
            code_bytes: masked_len as u64,
            masked_digest: digest.finish(),
            mnemonics: mnemonics.into_iter().collect(),
            blocks,
            edges,
            shape_digest,
            constants,
        })
    }

    /// The instructions of the body starting at `start` (trailing padding excluded), each with
    /// its masked bytes: what an instruction-level comparison of two builds aligns.
    pub fn masked_instructions(&self, start: u64) -> Result<Vec<MaskedInstruction>, ProviderError> {
        let body = self.body(start)?;
        let mut from = 0;
        Ok(body
            .steps
            .iter()
            .zip(&body.marks)
            .map(|(step, &(to, _))| {
                let masked = body.masked[from..to].to_vec();
                from = to;
                MaskedInstruction {
                    address: step.address,
                    masked,
                }
            })
            .collect())
    }

    /// Decodes and masks the body of the procedure starting at `start`.
    fn body(&self, start: u64) -> Result<Body, ProviderError> {
        if !disasm::supported(self.isa) {
            return Err(ProviderError::UnsupportedArchitecture {
                architecture: self.doc.architecture.to_string(),
                operation: "compare_procedures",
            });
        }
        let index = self
            .procedure_index(start)
            .ok_or(ProviderError::NoProcedure { address: start })?;
        let end = self.procedure_end(index, BODY_CAP);
        let bytes = self.bytes_from(start, end - start).unwrap_or(&[]);
        let mut masked = Vec::with_capacity(bytes.len());
        let mut steps = Vec::new();
        let mut constants = Vec::new();
        // Per instruction: where its masked bytes end and its mnemonic, so trailing padding can
        // be dropped from the digest and histogram afterwards.
        let mut marks: Vec<(usize, u32)> = Vec::new();
        match self.isa {
            Isa::X86 | Isa::X86_64 => self.x86_steps(
                start,
                bytes,
                &mut masked,
                &mut steps,
                &mut marks,
                &mut constants,
            ),
            Isa::Arm64 => self.arm64_steps(
                start,
                bytes,
                &mut masked,
                &mut steps,
                &mut marks,
                &mut constants,
            ),
            Isa::Other => {}
        }
        let invalid = steps.iter().filter(|s| s.invalid).count() as u32;
        let kept = steps.len() - steps.iter().rev().take_while(|s| s.padding).count();
        let kept = kept.max(steps.len().min(1));
        steps.truncate(kept);
        marks.truncate(kept);
        Ok(Body {
            end,
            masked,
            steps,
            marks,
            constants,
            invalid,
        })
    }

    /// Whether a value used as an operand is an address in this image rather than a constant:
    /// it lands in a mapped section (small values never do in practice; below 0x1000 they are
    /// taken as constants, as the cross-reference index takes them).
    fn is_address(&self, value: u64) -> bool {
        value >= 0x1000 && self.section_at(value).is_some()
    }

    fn x86_steps(
        &self,
        start: u64,
        bytes: &[u8],
        masked: &mut Vec<u8>,
        steps: &mut Vec<Step>,
        marks: &mut Vec<(usize, u32)>,
        constants: &mut Vec<u64>,
    ) {
        let bitness = if self.isa == Isa::X86 { 32 } else { 64 };
        let mut decoder = Decoder::with_ip(bitness, bytes, start, DecoderOptions::NONE);
        let mut instr = X86Instruction::default();
        while decoder.can_decode() {
            decoder.decode_out(&mut instr);
            let pos = (instr.ip() - start) as usize;
            let len = instr.len().max(1);
            let raw = &bytes[pos..(pos + len).min(bytes.len())];
            let at = masked.len();
            masked.extend_from_slice(raw);
            if instr.is_invalid() {
                marks.push((masked.len(), u32::MAX));
                steps.push(Step {
                    address: instr.ip(),
                    len: len as u32,
                    flow: Flow::Next,
                    target: None,
                    padding: true,
                    invalid: true,
                });
                continue;
            }
            let offsets = decoder.get_constant_offsets(&instr);
            let mut zero = |offset: usize, size: usize| {
                let from = (at + offset).min(masked.len());
                let to = (at + offset + size).min(masked.len());
                masked[from..to].fill(0);
            };
            let branch = matches!(
                instr.op0_kind(),
                OpKind::NearBranch16 | OpKind::NearBranch32 | OpKind::NearBranch64
            );
            if offsets.has_displacement() {
                let address = if instr.is_ip_rel_memory_operand() {
                    Some(instr.ip_rel_memory_address())
                } else {
                    let d = instr.memory_displacement64();
                    // A small displacement added to a register by `lea` is arithmetic
                    // (`x * b + 0x1337`), even where it falls in the first mapped page.
                    let arithmetic = instr.mnemonic() == Mnemonic::Lea
                        && instr.memory_base() != Register::None
                        && d < 0x1_0000;
                    (!arithmetic && self.is_address(d)).then_some(d)
                };
                if address.is_some() {
                    zero(offsets.displacement_offset(), offsets.displacement_size());
                } else if instr.mnemonic() == Mnemonic::Lea
                    && !instr.is_ip_rel_memory_operand()
                    && instr.memory_displacement64() != 0
                {
                    // `lea` computes with its displacement (`x * 3 + 0x1337`), so it is a
                    // constant of the body like an immediate; other displacements are offsets.
                    constants.push(instr.memory_displacement64());
                }
            }
            if offsets.has_immediate() {
                if branch {
                    zero(offsets.immediate_offset(), offsets.immediate_size());
                } else if let Some(i) = (0..instr.op_count()).find(|&i| {
                    matches!(
                        instr.op_kind(i),
                        OpKind::Immediate8
                            | OpKind::Immediate8to16
                            | OpKind::Immediate8to32
                            | OpKind::Immediate8to64
                            | OpKind::Immediate16
                            | OpKind::Immediate32
                            | OpKind::Immediate32to64
                            | OpKind::Immediate64
                    )
                }) {
                    let value = instr.immediate(i);
                    if self.is_address(value) {
                        zero(offsets.immediate_offset(), offsets.immediate_size());
                    } else {
                        constants.push(value);
                    }
                }
            }
            let target = branch.then(|| instr.near_branch_target());
            let flow = match instr.flow_control() {
                FlowControl::Call => Flow::Call,
                FlowControl::UnconditionalBranch => Flow::Jump,
                FlowControl::ConditionalBranch => Flow::CondJump,
                FlowControl::IndirectCall => Flow::IndirectCall,
                FlowControl::IndirectBranch => Flow::IndirectJump,
                // `ud2` and friends end a block like a return: nothing falls through them.
                FlowControl::Return | FlowControl::Exception => Flow::Return,
                // Nor `int3`: MSVC puts one after a call that does not return, and pads with
                // them; the code after it is another function's.
                FlowControl::Interrupt if instr.mnemonic() == Mnemonic::Int3 => Flow::Return,
                _ => Flow::Next,
            };
            let padding = matches!(instr.mnemonic(), Mnemonic::Nop | Mnemonic::Int3)
                || raw.iter().all(|&b| b == 0);
            marks.push((masked.len(), instr.mnemonic() as u32));
            steps.push(Step {
                address: instr.ip(),
                len: len as u32,
                flow,
                target,
                padding,
                invalid: false,
            });
        }
    }

    fn arm64_steps(
        &self,
        start: u64,
        bytes: &[u8],
        masked: &mut Vec<u8>,
        steps: &mut Vec<Step>,
        marks: &mut Vec<(usize, u32)>,
        constants: &mut Vec<u64>,
    ) {
        // The shared disassembler tracks `adrp` pages, so it says which loads and adds complete
        // an address; the opcode and operands come from decoding the same word here.
        let mut d = Disassembler::new(Isa::Arm64, bytes, start, false);
        let decoder = InstDecoder::default();
        while let Some(insn) = d.next(None) {
            let pos = (insn.address - start) as usize;
            let Some(word) = bytes.get(pos..pos + 4) else {
                masked.extend_from_slice(&bytes[pos..]);
                marks.push((masked.len(), u32::MAX));
                steps.push(Step {
                    address: insn.address,
                    len: insn.len as u32,
                    flow: Flow::Next,
                    target: None,
                    padding: true,
                    invalid: true,
                });
                continue;
            };
            let value = u32::from_le_bytes([word[0], word[1], word[2], word[3]]);
            let decoded = if insn.invalid {
                None
            } else {
                let mut reader = U8Reader::new(word);
                // The decoder is table-driven; a defect there must cost one instruction.
                std::panic::catch_unwind(move || decoder.decode(&mut reader).ok())
                    .ok()
                    .flatten()
            };
            let Some(inst) = decoded else {
                masked.extend_from_slice(word);
                marks.push((masked.len(), u32::MAX));
                steps.push(Step {
                    address: insn.address,
                    len: 4,
                    flow: Flow::Next,
                    target: None,
                    padding: value == 0,
                    invalid: true,
                });
                continue;
            };
            let pc_relative = inst
                .operands
                .iter()
                .any(|op| matches!(op, Operand::PCOffset(_)));
            let mask: u32 = if pc_relative {
                match inst.opcode {
                    Opcode::B | Opcode::BL => 0x03ff_ffff,
                    Opcode::TBZ | Opcode::TBNZ => 0x0007_ffe0,
                    Opcode::ADR | Opcode::ADRP => 0x60ff_ffe0,
                    // b.cond, cbz, cbnz and literal loads keep imm19 in bits 5..=23.
                    _ => 0x00ff_ffe0,
                }
            } else if insn.memory.is_some() {
                // An `add` or load/store completing an `adrp` page: its imm12 is part of the
                // address.
                0x003f_fc00
            } else {
                0
            };
            masked.extend_from_slice(&(value & !mask).to_le_bytes());
            if mask == 0 {
                for op in &inst.operands {
                    let constant = match *op {
                        Operand::Immediate(v) => Some(u64::from(v)),
                        Operand::Imm64(v) => Some(v),
                        Operand::Imm16(v) => Some(u64::from(v)),
                        Operand::ImmShift(v, s) | Operand::ImmShiftMSL(v, s) if s < 64 => {
                            Some(u64::from(v) << s)
                        }
                        _ => None,
                    };
                    constants.extend(constant);
                }
            }
            let mut id = Fnv::new();
            id.bytes(format!("{:?}", std::mem::discriminant(&inst.opcode)).as_bytes());
            // `nop` (hint #0) pads between functions; zero words pad sections.
            let padding = value == 0xd503_201f || value == 0;
            marks.push((masked.len(), id.finish() as u32));
            steps.push(Step {
                address: insn.address,
                len: 4,
                flow: insn.flow,
                target: insn.target,
                padding,
                invalid: false,
            });
        }
    }
}

/// Splits instructions into basic blocks and digests the block graph.
fn shape(start: u64, steps: &[Step]) -> (u32, u32, u64) {
    let Some(last) = steps.last() else {
        return (0, 0, Fnv::new().finish());
    };
    let end = last.address + u64::from(last.len);
    let inside = |t: u64| t >= start && t < end;
    let mut leaders = vec![start];
    for (i, step) in steps.iter().enumerate() {
        if matches!(step.flow, Flow::Jump | Flow::CondJump)
            && let Some(t) = step.target
            && inside(t)
        {
            leaders.push(t);
        }
        let ends_block = matches!(
            step.flow,
            Flow::Jump | Flow::CondJump | Flow::IndirectJump | Flow::Return
        );
        if ends_block && let Some(next) = steps.get(i + 1) {
            leaders.push(next.address);
        }
    }
    leaders.sort_unstable();
    leaders.dedup();
    // A target in the middle of an instruction (overlapping code) is not a block start.
    let starts: std::collections::HashSet<u64> = steps.iter().map(|s| s.address).collect();
    leaders.retain(|l| starts.contains(l));
    let block_of = |address: u64| leaders.binary_search(&address).ok();
    let mut edges = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        let next = steps.get(i + 1).map(|s| s.address);
        let closes = next.is_none_or(|n| block_of(n).is_some());
        if !closes {
            continue;
        }
        let Some(from) = leaders
            .partition_point(|&l| l <= step.address)
            .checked_sub(1)
        else {
            continue;
        };
        let fall = next.and_then(block_of);
        let taken = step.target.filter(|&t| inside(t)).and_then(block_of);
        match step.flow {
            Flow::CondJump => {
                edges.extend(taken.map(|t| (from, t)));
                edges.extend(fall.map(|f| (from, f)));
            }
            Flow::Jump => edges.extend(taken.map(|t| (from, t))),
            Flow::IndirectJump | Flow::Return => {}
            _ => edges.extend(fall.map(|f| (from, f))),
        }
    }
    edges.sort_unstable();
    edges.dedup();
    let mut digest = Fnv::new();
    digest.u64(leaders.len() as u64);
    for &(a, b) in &edges {
        digest.u64(a as u64);
        digest.u64(b as u64);
    }
    (leaders.len() as u32, edges.len() as u32, digest.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps(spec: &[(u64, Flow, Option<u64>)]) -> Vec<Step> {
        spec.iter()
            .map(|&(address, flow, target)| Step {
                address,
                len: 4,
                flow,
                target,
                padding: false,
                invalid: false,
            })
            .collect()
    }

    #[test]
    fn blocks_split_at_targets_and_after_branches() {
        // 0: cmp; 4: b.eq 12; 8: add; 12: ret  -> blocks {0,4}, {8}, {12}; edges 0->8, 0->12, 8->12
        let s = steps(&[
            (0, Flow::Next, None),
            (4, Flow::CondJump, Some(12)),
            (8, Flow::Next, None),
            (12, Flow::Return, None),
        ]);
        let (blocks, edges, _) = shape(0, &s);
        assert_eq!((blocks, edges), (3, 3));
        // A loop back to the entry adds one edge and no block.
        let s = steps(&[
            (0, Flow::Next, None),
            (4, Flow::CondJump, Some(0)),
            (8, Flow::Return, None),
        ]);
        let (blocks, edges, _) = shape(0, &s);
        assert_eq!((blocks, edges), (2, 2));
        // A tail jump out of the extent ends the block without an edge.
        let s = steps(&[(0, Flow::Jump, Some(0x100))]);
        let (blocks, edges, _) = shape(0, &s);
        assert_eq!((blocks, edges), (1, 0));
    }
}
