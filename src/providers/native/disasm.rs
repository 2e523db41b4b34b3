//! Instruction decoding for x86, x86-64 (iced-x86) and arm64 (yaxpeax-arm) behind one model:
//! control flow, direct targets and statically resolvable memory operands.

use iced_x86::{Decoder, DecoderOptions, FlowControl, Formatter, IntelFormatter, OpKind, Register};
use yaxpeax_arch::{Decoder as _, U8Reader};
use yaxpeax_arm::armv8::a64::{InstDecoder, Opcode, Operand, SizeCode};

use super::address::format_address;
use super::types::Isa;

/// How an instruction passes control on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    Next,
    Call,
    Jump,
    CondJump,
    IndirectCall,
    IndirectJump,
    Return,
}

/// How an instruction uses the address in [`Decoded::memory`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MemoryUse {
    /// The address is read or written (`mov rax, [rip+x]`, `ldr x0, [x8, #x]`).
    Access,
    /// The address itself is computed (`lea`, `adr`, `adrp` + `add`).
    Address,
    /// An immediate operand whose value may be an address (32-bit code, `mov edi, imm32`).
    Immediate,
}

/// One decoded instruction, without text.
#[derive(Debug, Clone)]
pub(crate) struct Decoded {
    pub(crate) address: u64,
    pub(crate) len: usize,
    pub(crate) flow: Flow,
    /// Destination of a direct branch or call.
    pub(crate) target: Option<u64>,
    /// A statically known address the instruction references.
    pub(crate) memory: Option<(u64, MemoryUse)>,
    /// For indirect calls and jumps: the pointer slot the destination is loaded from, when it
    /// is statically known (`call [rip+slot]`, `ldr x16, [x16, #slot]` then `br x16`).
    pub(crate) slot: Option<u64>,
    /// Whether the bytes did not decode.
    pub(crate) invalid: bool,
}

/// Decodes a run of bytes, optionally producing text, one instruction at a time.
pub(crate) struct Disassembler<'a> {
    isa: Isa,
    bytes: &'a [u8],
    base: u64,
    pos: usize,
    x86: Option<Decoder<'a>>,
    x86_formatter: Option<IntelFormatter>,
    arm: InstDecoder,
    /// arm64 register tracking: what each general register is known to hold.
    regs: [RegValue; 32],
}

/// What the arm64 register tracker knows about a register.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RegValue {
    Unknown,
    /// An address computed by `adrp` (a page) or `adrp` + `add`.
    Address(u64),
    /// A value loaded from a known pointer slot.
    LoadedFrom(u64),
}

/// Whether the native decoders handle this instruction set.
pub(crate) fn supported(isa: Isa) -> bool {
    matches!(isa, Isa::X86 | Isa::X86_64 | Isa::Arm64)
}

impl<'a> Disassembler<'a> {
    /// Starts decoding `bytes`, which are mapped at `base`. `with_text` prepares a formatter.
    pub(crate) fn new(isa: Isa, bytes: &'a [u8], base: u64, with_text: bool) -> Disassembler<'a> {
        let x86 = match isa {
            Isa::X86 => Some(Decoder::with_ip(32, bytes, base, DecoderOptions::NONE)),
            Isa::X86_64 => Some(Decoder::with_ip(64, bytes, base, DecoderOptions::NONE)),
            _ => None,
        };
        let x86_formatter = (with_text && x86.is_some()).then(|| {
            let mut f = IntelFormatter::new();
            let o = f.options_mut();
            o.set_hex_prefix("0x");
            o.set_hex_suffix("");
            o.set_uppercase_hex(false);
            o.set_space_after_operand_separator(true);
            o.set_branch_leading_zeros(false);
            o.set_leading_zeros(false);
            o.set_rip_relative_addresses(false);
            // Operand sizes and branch forms as GNU and LLVM objdump print them: every memory
            // operand states its size (`nop dword ptr [rax]`, `movsxd rax, dword ptr [...]`),
            // and a branch shows its target without a `short`/`near` hint.
            o.set_memory_size_options(iced_x86::MemorySizeOptions::Always);
            o.set_show_branch_size(false);
            f
        });
        Disassembler {
            isa,
            bytes,
            base,
            pos: 0,
            x86,
            x86_formatter,
            arm: InstDecoder::default(),
            regs: [RegValue::Unknown; 32],
        }
    }

    /// Goes on decoding at `address`, inside the bytes given to [`Disassembler::new`], as a
    /// disassembler started there would (the arm64 register tracking starts over). Reusing one
    /// is cheaper than starting another: discovery decodes a run of code at a time, millions in
    /// a large file. Whether `address` lies in those bytes.
    pub(crate) fn seek(&mut self, address: u64) -> bool {
        let Some(offset) = address
            .checked_sub(self.base)
            .and_then(|o| usize::try_from(o).ok())
            .filter(|&o| o <= self.bytes.len())
        else {
            return false;
        };
        if let Some(decoder) = self.x86.as_mut() {
            if decoder.set_position(offset).is_err() {
                return false;
            }
            decoder.set_ip(address);
        }
        self.pos = offset;
        if self.isa == Isa::Arm64 {
            self.regs = [RegValue::Unknown; 32];
        }
        true
    }

    /// Decodes the next instruction; `text` receives its rendering when requested.
    pub(crate) fn next(&mut self, text: Option<&mut String>) -> Option<Decoded> {
        if self.pos >= self.bytes.len() {
            return None;
        }
        match self.isa {
            Isa::X86 | Isa::X86_64 => self.next_x86(text),
            Isa::Arm64 => self.next_arm64(text),
            Isa::Other => None,
        }
    }

    fn next_x86(&mut self, text: Option<&mut String>) -> Option<Decoded> {
        let decoder = self.x86.as_mut()?;
        if !decoder.can_decode() {
            return None;
        }
        let instr = decoder.decode();
        let address = instr.ip();
        let len = instr.len().max(1);
        self.pos = self.pos.saturating_add(len);
        let invalid = instr.is_invalid();
        let direct = || match instr.op0_kind() {
            OpKind::NearBranch16 | OpKind::NearBranch32 | OpKind::NearBranch64 => {
                Some(instr.near_branch_target())
            }
            _ => None,
        };
        let mut memory = None;
        let mut slot = None;
        for i in 0..instr.op_count() {
            match instr.op_kind(i) {
                OpKind::Memory => {
                    let resolved = if instr.is_ip_rel_memory_operand() {
                        Some(instr.ip_rel_memory_address())
                    } else if instr.memory_base() == Register::None
                        && instr.memory_index() == Register::None
                        && instr.segment_prefix() == Register::None
                    {
                        Some(instr.memory_displacement64())
                    } else {
                        None
                    };
                    if let Some(at) = resolved {
                        let usage = if instr.mnemonic() == iced_x86::Mnemonic::Lea {
                            MemoryUse::Address
                        } else {
                            MemoryUse::Access
                        };
                        memory = Some((at, usage));
                    }
                }
                OpKind::Immediate32 | OpKind::Immediate32to64 | OpKind::Immediate64
                    if memory.is_none() =>
                {
                    memory = Some((instr.immediate(i), MemoryUse::Immediate));
                }
                _ => {}
            }
        }
        let (flow, target) = match instr.flow_control() {
            FlowControl::Call => (Flow::Call, direct()),
            FlowControl::UnconditionalBranch => (Flow::Jump, direct()),
            FlowControl::ConditionalBranch => (Flow::CondJump, direct()),
            FlowControl::IndirectCall | FlowControl::IndirectBranch => {
                if let Some((at, MemoryUse::Access)) = memory {
                    slot = Some(at);
                }
                let flow = if instr.flow_control() == FlowControl::IndirectCall {
                    Flow::IndirectCall
                } else {
                    Flow::IndirectJump
                };
                (flow, None)
            }
            FlowControl::Return => (Flow::Return, None),
            // Nothing falls through `int3`: MSVC puts one after a call that does not return.
            FlowControl::Interrupt if instr.mnemonic() == iced_x86::Mnemonic::Int3 => {
                (Flow::Return, None)
            }
            _ => (Flow::Next, None),
        };
        if let (Some(out), Some(formatter)) = (text, self.x86_formatter.as_mut()) {
            out.clear();
            if invalid {
                out.push_str("(bad)");
            } else {
                formatter.format(&instr, out);
            }
        }
        Some(Decoded {
            address,
            len,
            flow,
            target,
            memory,
            slot,
            invalid,
        })
    }

    fn next_arm64(&mut self, text: Option<&mut String>) -> Option<Decoded> {
        let address = self.base.checked_add(self.pos as u64)?;
        let word = self.bytes.get(self.pos..self.pos.checked_add(4)?);
        let Some(word) = word else {
            // A trailing fragment shorter than an instruction.
            let len = self.bytes.len() - self.pos;
            self.pos = self.bytes.len();
            if let Some(out) = text {
                out.clear();
                out.push_str("(bad)");
            }
            return Some(invalid_decoded(address, len));
        };
        self.pos += 4;
        let word_value = u32::from_le_bytes([word[0], word[1], word[2], word[3]]);
        if let Some(extension) = super::arm64_text::extension_instruction(word_value) {
            // Vector-only instructions yaxpeax does not decode: no flow, no general register.
            if let Some(out) = text {
                out.clear();
                out.push_str(&extension);
            }
            return Some(Decoded {
                address,
                len: 4,
                flow: Flow::Next,
                target: None,
                memory: None,
                slot: None,
                invalid: false,
            });
        }
        let mut reader = U8Reader::new(word);
        let decoder = self.arm;
        // The decoder is a large table-driven parser; a defect there must cost one instruction.
        let decoded = std::panic::catch_unwind(move || decoder.decode(&mut reader).ok())
            .ok()
            .flatten();
        let decoded =
            decoded.filter(|inst| !super::arm64_text::unallocated(word_value, inst.opcode));
        let Some(inst) = decoded else {
            if let Some(out) = text {
                out.clear();
                out.push_str(&format!(".word {word_value:#010x}"));
            }
            return Some(invalid_decoded(address, 4));
        };
        let pc_offset = inst.operands.iter().find_map(|op| match op {
            Operand::PCOffset(off) => Some(*off),
            _ => None,
        });
        let relative = pc_offset.map(|off| {
            if inst.opcode == Opcode::ADRP {
                (address & !0xfff).wrapping_add_signed(off)
            } else {
                address.wrapping_add_signed(off)
            }
        });
        let mut flow = Flow::Next;
        let mut target = None;
        let mut memory = None;
        let mut slot = None;
        let reg_of = |op: &Operand| match op {
            Operand::Register(SizeCode::X, r) | Operand::RegisterOrSP(SizeCode::X, r) => {
                Some(usize::from(*r).min(31))
            }
            _ => None,
        };
        let mut writes_dest = true;
        match inst.opcode {
            Opcode::BL => {
                flow = Flow::Call;
                target = relative;
                writes_dest = false;
            }
            Opcode::B => {
                flow = Flow::Jump;
                target = relative;
                writes_dest = false;
            }
            Opcode::Bcc(_) | Opcode::CBZ | Opcode::CBNZ | Opcode::TBZ | Opcode::TBNZ => {
                flow = Flow::CondJump;
                target = relative;
                writes_dest = false;
            }
            Opcode::BR | Opcode::BRAA | Opcode::BRAAZ | Opcode::BRAB | Opcode::BRABZ => {
                flow = Flow::IndirectJump;
                slot = self.loaded_slot(reg_of(&inst.operands[0]));
                writes_dest = false;
            }
            Opcode::BLR | Opcode::BLRAA | Opcode::BLRAAZ | Opcode::BLRAB | Opcode::BLRABZ => {
                flow = Flow::IndirectCall;
                slot = self.loaded_slot(reg_of(&inst.operands[0]));
                writes_dest = false;
            }
            Opcode::RET | Opcode::RETAA | Opcode::RETAB => {
                flow = Flow::Return;
                writes_dest = false;
            }
            Opcode::ADRP => {
                if let (Some(r), Some(page)) = (reg_of(&inst.operands[0]), relative) {
                    self.regs[r] = RegValue::Address(page);
                }
                writes_dest = false;
            }
            Opcode::ADR => {
                if let Some(at) = relative {
                    memory = Some((at, MemoryUse::Address));
                }
            }
            Opcode::ADD => {
                let base = reg_of(&inst.operands[1]).map(|r| self.regs[r]);
                let imm = match inst.operands[2] {
                    Operand::Immediate(v) => Some(u64::from(v)),
                    Operand::ImmShift(v, s) if s < 64 => Some(u64::from(v) << s),
                    _ => None,
                };
                if let (Some(RegValue::Address(page)), Some(imm)) = (base, imm) {
                    let at = page.wrapping_add(imm);
                    memory = Some((at, MemoryUse::Address));
                    if let Some(d) = reg_of(&inst.operands[0]) {
                        self.regs[d] = RegValue::Address(at);
                        writes_dest = false;
                    }
                }
            }
            _ => {
                // Loads and stores: `[xN, #imm]` from a known page, or a literal.
                for op in &inst.operands {
                    if let Operand::RegPreIndex(n, off, false) = op {
                        let n = usize::from(*n).min(31);
                        if let RegValue::Address(page) = self.regs[n] {
                            memory = Some((
                                page.wrapping_add_signed(i64::from(*off)),
                                MemoryUse::Access,
                            ));
                        }
                    }
                }
                if memory.is_none()
                    && matches!(inst.opcode, Opcode::LDR | Opcode::LDRSW)
                    && let Some(at) = relative
                {
                    memory = Some((at, MemoryUse::Access));
                }
                if inst.opcode == Opcode::LDR
                    && let (Some(d), Some((at, _))) = (reg_of(&inst.operands[0]), memory)
                {
                    self.regs[d] = RegValue::LoadedFrom(at);
                    writes_dest = false;
                }
                if is_store(inst.opcode) || is_compare_only(&inst) {
                    writes_dest = false;
                }
            }
        }
        if writes_dest {
            // A 32-bit write (`ldr w0, [x0, #8]`) clobbers the whole register too, and a load
            // pair writes two.
            let pair = matches!(
                inst.opcode,
                Opcode::LDP | Opcode::LDPSW | Opcode::LDNP | Opcode::LDXP | Opcode::LDAXP
            );
            for op in inst.operands.iter().take(if pair { 2 } else { 1 }) {
                if let Operand::Register(_, r) | Operand::RegisterOrSP(_, r) = op {
                    self.regs[usize::from(*r).min(31)] = RegValue::Unknown;
                }
            }
        }
        for op in &inst.operands {
            // Writeback moves the base register off the address it held.
            if let Operand::RegPreIndex(n, _, true)
            | Operand::RegPostIndex(n, _)
            | Operand::RegPostIndexReg(n, _) = op
            {
                self.regs[usize::from(*n).min(31)] = RegValue::Unknown;
            }
        }
        // Values are tracked along straight-line flow only: a call clobbers the registers the
        // callee may (x0-x18, x30), and after an unconditional transfer the next instruction is
        // reached from elsewhere.
        match flow {
            Flow::Call | Flow::IndirectCall => {
                self.regs[..=18].fill(RegValue::Unknown);
                self.regs[30] = RegValue::Unknown;
            }
            Flow::Jump | Flow::IndirectJump | Flow::Return => {
                self.regs = [RegValue::Unknown; 32];
            }
            _ => {}
        }
        if let Some(out) = text {
            out.clear();
            let mut rendered = inst.to_string();
            super::arm64_text::correct(word_value, &mut rendered);
            if let (Some(off), Some(abs)) = (pc_offset, relative) {
                let shown = if off < 0 {
                    format!("$-{:#x}", off.wrapping_neg())
                } else {
                    format!("$+{off:#x}")
                };
                rendered = rendered.replacen(&shown, &format_address(abs), 1);
            }
            out.push_str(&rendered);
        }
        Some(Decoded {
            address,
            len: 4,
            flow,
            target,
            memory,
            slot,
            invalid: false,
        })
    }

    fn loaded_slot(&self, reg: Option<usize>) -> Option<u64> {
        match self.regs[reg?] {
            RegValue::LoadedFrom(at) => Some(at),
            _ => None,
        }
    }
}

fn invalid_decoded(address: u64, len: usize) -> Decoded {
    Decoded {
        address,
        len,
        flow: Flow::Next,
        target: None,
        memory: None,
        slot: None,
        invalid: true,
    }
}

pub(crate) fn is_store(opcode: Opcode) -> bool {
    matches!(
        opcode,
        Opcode::STR
            | Opcode::STRB
            | Opcode::STRH
            | Opcode::STUR
            | Opcode::STURB
            | Opcode::STURH
            | Opcode::STP
            | Opcode::STNP
            | Opcode::STLR
            | Opcode::STLRB
            | Opcode::STLRH
    )
}

/// Comparisons write only flags (their first operand is the zero register or a source).
fn is_compare_only(inst: &yaxpeax_arm::armv8::a64::Instruction) -> bool {
    matches!(inst.opcode, Opcode::SUBS | Opcode::ADDS | Opcode::ANDS)
        && matches!(inst.operands[0], Operand::Register(_, 31))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(isa: Isa, bytes: &[u8], base: u64) -> Vec<(Decoded, String)> {
        let mut d = Disassembler::new(isa, bytes, base, true);
        let mut out = Vec::new();
        let mut text = String::new();
        while let Some(insn) = d.next(Some(&mut text)) {
            out.push((insn, text.clone()));
        }
        out
    }

    #[test]
    fn x86_64_calls_and_rip_relative_operands() {
        // call +5; lea rdi, [rip+0x10]; jmp qword ptr [rip+0x20]; ret
        let bytes = [
            0xe8, 0x05, 0, 0, 0, 0x48, 0x8d, 0x3d, 0x10, 0, 0, 0, 0xff, 0x25, 0x20, 0, 0, 0, 0xc3,
        ];
        let out = render(Isa::X86_64, &bytes, 0x1000);
        assert_eq!(out[0].0.flow, Flow::Call);
        assert_eq!(out[0].0.target, Some(0x100a));
        assert_eq!(out[0].1, "call 0x100a");
        assert_eq!(out[1].0.memory, Some((0x101c, MemoryUse::Address)));
        assert_eq!(out[1].1, "lea rdi, [0x101c]");
        assert_eq!(out[2].0.flow, Flow::IndirectJump);
        assert_eq!(out[2].0.slot, Some(0x1032));
        assert_eq!(out[3].0.flow, Flow::Return);
    }

    #[test]
    fn arm64_adrp_add_and_branches() {
        // adrp x0, #0x1000 page; add x0, x0, #0x10; bl +8; ret; b.eq -4 ; then garbage
        let words: [u32; 6] = [
            0x9000_0000 | (1 << 29),
            0x9100_4000,
            0x9400_0002,
            0xd65f_03c0,
            0x5400_0000 | ((0x7ffff) << 5),
            0xffff_ffff,
        ];
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let out = render(Isa::Arm64, &bytes, 0x4000);
        assert_eq!(out[1].0.memory, Some((0x5010, MemoryUse::Address)));
        assert_eq!(out[2].0.flow, Flow::Call);
        assert_eq!(out[2].0.target, Some(0x4010));
        assert!(out[2].1.starts_with("bl 0x4010"), "{}", out[2].1);
        assert_eq!(out[3].0.flow, Flow::Return);
        assert_eq!(out[4].0.flow, Flow::CondJump);
        assert_eq!(out[4].0.target, Some(0x400c));
        assert!(out[5].0.invalid || !out[5].1.is_empty());
        // A fragment shorter than one instruction decodes as invalid, not as a panic.
        let out = render(Isa::Arm64, &[1, 2], 0);
        assert!(out[0].0.invalid);
    }

    /// Issue 20, item 4: a page computed by `adrp` is forgotten when the register is written
    /// (also as `w0`), across a call for the registers the callee may clobber, and after an
    /// unconditional transfer; callee-saved registers keep it across a call.
    #[test]
    fn arm64_pages_follow_straight_line_flow_regression_20() {
        let words: [u32; 12] = [
            0x9000_0000 | (1 << 29), // adrp x0, +0x1000 page
            0xb940_0801,             // ldr w1, [x0, #8]
            0xb940_0800,             // ldr w0, [x0, #8]  (writes w0)
            0xb940_0801,             // ldr w1, [x0, #8]  (x0 unknown now)
            0x9000_0013 | (1 << 29), // adrp x19, +0x1000 page
            0x9000_0000 | (1 << 29), // adrp x0, +0x1000 page
            0x9400_0002,             // bl +8
            0xb940_0801,             // ldr w1, [x0, #8]  (x0 clobbered by the call)
            0xb940_0a61,             // ldr w1, [x19, #8] (x19 survives it)
            0x1400_0001,             // b +4
            0xb940_0a61,             // ldr w1, [x19, #8] (reached from elsewhere)
            0xd65f_03c0,             // ret
        ];
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let out = render(Isa::Arm64, &bytes, 0x4000);
        let memory: Vec<_> = out.iter().map(|(d, _)| d.memory).collect();
        let access = Some((0x5008, MemoryUse::Access));
        assert_eq!(memory[1], access, "{}", out[1].1);
        assert_eq!(memory[2], access);
        assert_eq!(memory[3], None, "{}", out[3].1);
        assert_eq!(memory[7], None, "{}", out[7].1);
        assert_eq!(memory[8], access, "{}", out[8].1);
        assert_eq!(memory[10], None, "{}", out[10].1);
    }

    /// Issue 15, item 8: extended-register operands were written with `lsl` for `uxtw`, or
    /// lost their extend. Words from 7za (arm64); texts from llvm-objdump-14.
    #[test]
    fn arm64_extended_register_operands_regression_15() {
        for (word, llvm) in [
            (0x8b2e45adu32, "add x13, x13, w14, uxtw #1"),
            (0xeb2c411f, "cmp x8, w12, uxtw"),
            (0xcb2842c8, "sub x8, x22, w8, uxtw"),
            (0xab344101, "adds x1, x8, w20, uxtw"),
            (0xab29411f, "cmn x8, w9, uxtw"),
        ] {
            let out = render(Isa::Arm64, &word.to_le_bytes(), 0x1000);
            assert_eq!(out[0].1, llvm, "{word:#010x}");
        }
    }
}
