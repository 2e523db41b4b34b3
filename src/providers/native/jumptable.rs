//! Switch jump tables: the indirect jump a compiler emits for a dense `switch`, recognised from
//! the instructions on the path that reaches it, and the destinations its table holds.
//! Discovery follows the destinations as code of the procedure; the call graph takes the jump
//! as resolved rather than as a gap, and a destination that is another procedure's start as a
//! tail call.
//!
//! The path's values are followed symbolically: a register or stack slot holds a constant
//! address, an unknown value times a scale, an entry loaded from a table at an unknown index,
//! or a base plus such an entry. A table is recognised when the jump's destination is a table
//! entry (plus a base) whose index the path bounds with an unsigned comparison against a
//! constant. That covers what gcc and clang emit:
//! - x86-64 position-independent code: `cmp eax, N; ja default; lea rdx, [rip+table]; movsxd
//!   rax, dword ptr [rdx+rax*4]; add rax, rdx; jmp rax` (gcc -O0 loads the index from its stack
//!   slot and sign-extends with `cdqe`), entries 32-bit offsets from a base;
//! - x86-64 code linked at a fixed address: `jmp qword ptr [rax*8+table]`, entries addresses;
//! - x86-64 gcc -O2 switching on a byte: `cmp al, N; ja default; lea rsi, [rip+table]; movzx
//!   eax, al; movsxd rax, [rsi+rax*4]; ...`, and on a field it compares in memory and then
//!   loads (`cmp byte ptr [rbx+0x65], 8; ja default; movzx eax, byte ptr [rbx+0x65]`);
//! - x86-64 MSVC: `cmp eax, N; ja default; lea rdx, [__ImageBase]; mov ecx, dword ptr
//!   [rdx+rax*4+table_rva]; add rcx, rdx; jmp rcx`, entries 32-bit offsets from the image base;
//! - AArch64: `cmp w0, #N; b.hi default; adrp x1, table; add x1, x1, :lo12:table; ldrb w0, [x1,
//!   w0, uxtw]; adr x1, base; add x0, x1, w0, sxtb #2; br x0` (`ldrh`/`sxth` and `ldr`/`sxtw`
//!   for wider entries, clang's `lsl #2` for unsigned ones), entries offsets from a base in
//!   words.
//!
//! Anything else (no bound, an index the path does not tie to the bound, a table the file has
//! no bytes for) is not recognised: the jump stays an unknown indirect jump, never guessed.

use std::collections::VecDeque;

use iced_x86::{Instruction, InstructionInfoFactory, Mnemonic, OpAccess, OpKind, Register};
use yaxpeax_arch::{Decoder as _, U8Reader};
use yaxpeax_arm::armv8::a64::{InstDecoder, Opcode, Operand, ShiftStyle, SizeCode};

use super::disasm::{self, Decoded, Flow};
use super::types::Isa;

/// Most instructions a path keeps: a table's guard, load and jump lie within a dozen.
const MAX_PATH: usize = 32;

/// Most entries a recognised table may have.
const MAX_ENTRIES: u64 = 4096;

/// Reads the bytes the file holds at a run-time address, `None` where it holds none.
pub(crate) type Read<'m> = dyn Fn(u64, usize) -> Option<&'m [u8]> + 'm;

/// One instruction of a path: where it is and how it passes control on.
#[derive(Debug, Clone, Copy)]
struct Step {
    address: u64,
    len: u8,
    flow: Flow,
    target: Option<u64>,
}

/// The instructions that run, in order, before the current one: the straight-line flow that
/// reaches it, continued back through a conditional branch when the code before it was left by
/// an unconditional jump (`cmp w2, #17; b.ls table; b default; table: ...`). At most the last
/// [`MAX_PATH`].
#[derive(Debug, Default)]
pub(crate) struct Path {
    steps: VecDeque<Step>,
}

impl Path {
    /// Appends the next instruction decoded in address order.
    pub(crate) fn push(&mut self, insn: &Decoded) {
        if let Some(last) = self.steps.back() {
            let falls_through = last.address.wrapping_add(u64::from(last.len)) == insn.address
                && !matches!(last.flow, Flow::Jump | Flow::IndirectJump | Flow::Return);
            if !falls_through {
                // Reached only by a branch: through one on the path, else from elsewhere.
                match self
                    .steps
                    .iter()
                    .rposition(|s| s.flow == Flow::CondJump && s.target == Some(insn.address))
                {
                    Some(i) => self.steps.truncate(i + 1),
                    None => self.steps.clear(),
                }
            }
        }
        if self.steps.len() == MAX_PATH {
            self.steps.pop_front();
        }
        self.steps.push_back(Step {
            address: insn.address,
            len: u8::try_from(insn.len).unwrap_or(u8::MAX),
            flow: insn.flow,
            target: insn.target,
        });
    }

    /// Forgets the path (data among code, or code reached from elsewhere).
    pub(crate) fn clear(&mut self) {
        self.steps.clear();
    }
}

/// A recognised jump table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct JumpTable {
    /// Where the table lies.
    pub(crate) table: u64,
    /// The destination of each entry, in entry order (cases sharing code repeat it).
    pub(crate) targets: Vec<u64>,
}

/// The table of the indirect jump that ends `path`, when it is one of the recognised forms.
pub(crate) fn recognise<'m>(isa: Isa, path: &Path, read: &Read<'m>) -> Option<JumpTable> {
    recognise_from(isa, path, read, &[])
}

/// [`recognise`], with registers that hold known constants where the path begins.
fn recognise_from<'m>(
    isa: Isa,
    path: &Path,
    read: &Read<'m>,
    known: &[(usize, u64)],
) -> Option<JumpTable> {
    let last = path.steps.back()?;
    if last.flow != Flow::IndirectJump {
        return None;
    }
    let mut state = State::default();
    for &(register, value) in known {
        state.registers[register] = Some(Value::constant(value));
    }
    let mut x86 = InstructionInfoFactory::new();
    let arm = InstDecoder::default();
    let mut destination = None;
    for (i, step) in path.steps.iter().enumerate() {
        let bytes = read(step.address, usize::from(step.len))?;
        // Whether a conditional branch on the path is taken to reach the next step.
        let taken = path.steps.get(i + 1).and_then(|next| {
            let fall = step.address.wrapping_add(u64::from(step.len));
            (step.target != Some(fall)).then_some(step.target == Some(next.address))
        });
        let last = i + 1 == path.steps.len();
        destination = match isa {
            Isa::X86_64 | Isa::X86 => {
                state.bits32 = isa == Isa::X86;
                let instr = iced_x86::Decoder::with_ip(
                    if state.bits32 { 32 } else { 64 },
                    bytes,
                    step.address,
                    iced_x86::DecoderOptions::NONE,
                )
                .decode();
                if instr.is_invalid() {
                    return None;
                }
                state.x86(&instr, &mut x86, taken, last)
            }
            Isa::Arm64 => {
                let mut reader = U8Reader::new(bytes);
                let inst = std::panic::catch_unwind(move || arm.decode(&mut reader).ok())
                    .ok()
                    .flatten()?;
                state.arm64(&inst, step.address, taken, last)
            }
            Isa::Other => return None,
        };
    }
    let (table, entries) = destination?;
    let count = state.bound(entries.index)?.checked_add(1)?;
    (count <= MAX_ENTRIES).then_some(())?;
    let width = usize::from(entries.width);
    let targets = (0..count)
        .map(|k| {
            let raw = read(table.checked_add(k * u64::from(entries.width))?, width)?;
            let mut word = [0u8; 8];
            word[..width].copy_from_slice(raw);
            let value = u64::from_le_bytes(word);
            Some(match entries.base {
                None => value,
                Some((base, shift)) => {
                    let value = if entries.signed {
                        let unused = 64 - 8 * width as u32;
                        ((value << unused) as i64 >> unused) as u64
                    } else {
                        value
                    };
                    base.wrapping_add(value << shift)
                }
            })
        })
        .collect::<Option<Vec<u64>>>()?;
    Some(JumpTable { table, targets })
}

/// How a table's entries give destinations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entries {
    /// The unknown value that indexes the table.
    index: u32,
    /// Bytes per entry.
    width: u8,
    /// Whether an entry is sign-extended.
    signed: bool,
    /// `Some((base, shift))`: a destination is `base + (entry << shift)`; `None`: the entry is
    /// the destination.
    base: Option<(u64, u8)>,
}

/// What the path has put in a register or stack slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Value {
    /// `constant + value * scale`, where `value` is an unknown value (by number); a constant
    /// address when there is none.
    Affine {
        constant: u64,
        scaled: Option<(u32, u64)>,
    },
    /// An entry loaded from the table at `table`, or a destination computed from one.
    Entry { table: u64, entries: Entries },
}

impl Value {
    fn constant(value: u64) -> Value {
        Value::Affine {
            constant: value,
            scaled: None,
        }
    }

    /// The unknown value this is, when it is one unchanged.
    fn unknown(self) -> Option<u32> {
        match self {
            Value::Affine {
                constant: 0,
                scaled: Some((v, 1)),
            } => Some(v),
            _ => None,
        }
    }

    fn as_constant(self) -> Option<u64> {
        match self {
            Value::Affine {
                constant,
                scaled: None,
            } => Some(constant),
            _ => None,
        }
    }

    fn plus(self, other: Value) -> Option<Value> {
        let (
            Value::Affine {
                constant: a,
                scaled: sa,
            },
            Value::Affine {
                constant: b,
                scaled: sb,
            },
        ) = (self, other)
        else {
            return None;
        };
        let scaled = match (sa, sb) {
            (Some(_), Some(_)) => return None,
            (s, None) | (None, s) => s,
        };
        Some(Value::Affine {
            constant: a.wrapping_add(b),
            scaled,
        })
    }

    fn times(self, k: u64) -> Option<Value> {
        match self {
            Value::Affine { constant, scaled } => Some(Value::Affine {
                constant: constant.wrapping_mul(k),
                scaled: match scaled {
                    Some((v, s)) => Some((v, s.checked_mul(k)?)),
                    None => None,
                },
            }),
            Value::Entry { .. } => None,
        }
    }

    /// The entry this value was loaded as, when a load of `width` bytes at this address reads
    /// a table at an unknown index.
    fn load(self, width: u8, signed: bool) -> Option<Value> {
        match self {
            Value::Affine {
                constant,
                scaled: Some((index, scale)),
            } if constant != 0 && scale == u64::from(width) => Some(Value::Entry {
                table: constant,
                entries: Entries {
                    index,
                    width,
                    signed,
                    base: None,
                },
            }),
            _ => None,
        }
    }

    /// `base + (entry << shift)`, with the entry read as `signed`.
    fn destination(base: Value, entry: Value, signed: bool, shift: u8) -> Option<Value> {
        let base = base.as_constant()?;
        match entry {
            Value::Entry { table, entries } if entries.base.is_none() => Some(Value::Entry {
                table,
                entries: Entries {
                    signed,
                    base: Some((base, shift)),
                    ..entries
                },
            }),
            _ => None,
        }
    }
}

/// The x86-64 registers (by number, `rax` 0) a callee may change: System V's and Windows'
/// together, the widest.
const CALLER_SAVED: [usize; 9] = [0, 1, 2, 6, 7, 8, 9, 10, 11];

/// Whether an operand access writes what it names.
fn writes(access: OpAccess) -> bool {
    matches!(
        access,
        OpAccess::Write | OpAccess::CondWrite | OpAccess::ReadWrite | OpAccess::ReadCondWrite
    )
}

/// Whether an x86 register (by number, `rax` 0) addresses the stack frame: `rsp` or `rbp`.
fn is_frame(register: usize) -> bool {
    matches!(register, 4 | 5)
}

/// A byte the path compares or zero-extends: a register's low byte (`al`) or a byte in memory
/// (base register, displacement).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Byte {
    Register(usize),
    Memory(usize, i64),
}

/// Registers 0..=31 (x86-64: rax..r15; AArch64: x0..x30 and sp as 31): what the path put
/// there, `None` for a value not seen yet (named when first read).
#[derive(Debug, Default)]
struct State {
    registers: [Option<Value>; 32],
    /// Memory words by base register and displacement: stack slots, and on x86 a field the
    /// path compares and then loads.
    slots: Vec<((usize, i64), Value)>,
    /// The unknown value each byte the path compared or zero-extended holds.
    bytes: Vec<(Byte, Value)>,
    unknowns: u32,
    /// The unknown value the flags hold a comparison of, and the constant it was compared
    /// with: on x86-64 until an instruction changes the flags, on AArch64 for the next
    /// instruction only.
    compared: Option<(u32, u64)>,
    /// The largest index each bounded value may take on this path.
    bounds: Vec<(u32, u64)>,
    /// Whether the x86 code is 32-bit: its registers and pointers are 32 bits wide.
    bits32: bool,
}

impl State {
    fn fresh(&mut self) -> Value {
        self.unknowns += 1;
        Value::Affine {
            constant: 0,
            scaled: Some((self.unknowns, 1)),
        }
    }

    fn get(&mut self, register: usize) -> Value {
        match self.registers[register] {
            Some(v) => v,
            None => {
                let v = self.fresh();
                self.registers[register] = Some(v);
                v
            }
        }
    }

    fn slot(&mut self, key: (usize, i64)) -> Value {
        if let Some(&(_, v)) = self.slots.iter().find(|(k, _)| *k == key) {
            return v;
        }
        let v = self.fresh();
        self.slots.push((key, v));
        v
    }

    fn set_slot(&mut self, key: (usize, i64), value: Value) {
        self.forget_slot(key, 8);
        self.slots.push((key, value));
    }

    /// The unknown value a byte holds, named when first read.
    fn byte(&mut self, at: Byte) -> Value {
        if let Some(&(_, v)) = self.bytes.iter().find(|(b, _)| *b == at) {
            return v;
        }
        let v = self.fresh();
        self.bytes.push((at, v));
        v
    }

    /// Forgets the slots (up to eight bytes each) and bytes a store of `width` bytes at `key`
    /// overlaps.
    fn forget_slot(&mut self, (base, at): (usize, i64), width: i64) {
        let end = at.saturating_add(width);
        self.slots
            .retain(|&((b, d), _)| b != base || d >= end || d.saturating_add(8) <= at);
        self.bytes
            .retain(|&(b, _)| !matches!(b, Byte::Memory(r, d) if r == base && d >= at && d < end));
    }

    /// Forgets what memory addressed through any register but the stack's (x86 `rsp`, `rbp`)
    /// and `except` holds: a store through one pointer may change what another points at.
    fn forget_heap(&mut self, except: Option<usize>) {
        let kept = |base: usize| is_frame(base) || Some(base) == except;
        self.slots.retain(|&((base, _), _)| kept(base));
        self.bytes
            .retain(|&(b, _)| !matches!(b, Byte::Memory(r, _) if !kept(r)));
    }

    /// Forgets a register, and the slots and bytes addressed through it.
    fn kill(&mut self, register: usize) {
        self.registers[register] = None;
        self.slots.retain(|((base, _), _)| *base != register);
        self.bytes.retain(|&(b, _)| match b {
            Byte::Register(r) | Byte::Memory(r, _) => r != register,
        });
    }

    /// The unknown value `value` is, for a comparison to bound: itself when it is one, else
    /// (an unknown value plus a constant, `lea rcx, [rdi-1]`) a new one that every register
    /// and slot holding `value` then holds.
    fn name(&mut self, value: Value) -> Option<u32> {
        if let Some(v) = value.unknown() {
            return Some(v);
        }
        if !matches!(
            value,
            Value::Affine {
                scaled: Some(_),
                ..
            }
        ) {
            return None;
        }
        let named = self.fresh();
        for held in self.registers.iter_mut().flatten() {
            if *held == value {
                *held = named;
            }
        }
        for (_, held) in &mut self.slots {
            if *held == value {
                *held = named;
            }
        }
        named.unknown()
    }

    fn bound(&self, index: u32) -> Option<u64> {
        self.bounds
            .iter()
            .filter(|(v, _)| *v == index)
            .map(|&(_, b)| b)
            .min()
    }

    /// A conditional branch right after a comparison: on this path the compared value is at
    /// most the bound (`ja`/`b.hi` not taken, `jbe`/`b.ls` taken) or below it (`jae`/`b.hs`
    /// not taken, `jb`/`b.lo` taken).
    fn branch(&mut self, compared: Option<(u32, u64)>, above: bool, at_most: bool, taken: bool) {
        let Some((v, n)) = compared else { return };
        let bound = match (above, taken) {
            (true, false) | (false, true) if at_most => Some(n),
            (true, false) | (false, true) => n.checked_sub(1),
            _ => None,
        };
        if let Some(b) = bound {
            self.bounds.push((v, b));
        }
    }

    /// A 32-bit copy keeps an unknown value (an index the comparison bounded fits in 32 bits);
    /// anything else it truncates.
    fn narrow(&mut self, value: Value) -> Value {
        if value.unknown().is_some() {
            value
        } else {
            self.fresh()
        }
    }

    /// Follows one x86-64 (or 32-bit x86) instruction; at the last, the table its jump reads.
    fn x86(
        &mut self,
        instr: &Instruction,
        info: &mut InstructionInfoFactory,
        taken: Option<bool>,
        last: bool,
    ) -> Option<(u64, Entries)> {
        // A comparison bounds through instructions that leave the flags alone (`cmp ecx, 6;
        // mov r13, [rsp+0x28]; ja`).
        let compared = self.compared;
        if instr.rflags_modified() != 0 {
            self.compared = None;
        }
        let info = info.info(instr);
        let written: Vec<Register> = info
            .used_registers()
            .iter()
            .filter(|u| writes(u.access()))
            .map(|u| u.register())
            .collect();
        // A stack slot the instruction writes holds what a store below puts there, or nothing
        // known; a store through another pointer may change any memory but the stack.
        if info.used_memory().iter().any(|m| writes(m.access())) {
            match self.x86_place(instr) {
                Some(k) => {
                    let width = i64::try_from(instr.memory_size().size()).unwrap_or(8);
                    self.forget_slot(k, if width == 0 { 8 } else { width });
                    self.forget_heap(Some(k.0));
                }
                None => self.forget_heap(None),
            }
        }
        let reg = |r: Register| {
            let full = r.full_register() as usize;
            let rax = Register::RAX as usize;
            (r.is_gpr32() || r.is_gpr64())
                .then_some(full.wrapping_sub(rax))
                .filter(|&i| i < 16)
        };
        // A register as wide as an address: 64-bit, or any general register of 32-bit code.
        let bits32 = self.bits32;
        let full = move |r: Register| r.is_gpr64() || (bits32 && r.is_gpr32());
        let pointer: u8 = if bits32 { 4 } else { 8 };
        let op_reg = |i: u32| (instr.op_kind(i) == OpKind::Register).then(|| instr.op_register(i));
        // A register's low byte (`al`, `r8b`; not `ah`).
        let low_byte = |r: Register| {
            (r.is_gpr8() && !matches!(r, Register::AH | Register::CH | Register::DH | Register::BH))
                .then(|| r.full_register() as usize - Register::RAX as usize)
                .filter(|&i| i < 16)
        };
        let result: Option<(usize, Value)> = match instr.mnemonic() {
            Mnemonic::Ja | Mnemonic::Jae | Mnemonic::Jbe | Mnemonic::Jb => {
                if let Some(taken) = taken {
                    let above = matches!(instr.mnemonic(), Mnemonic::Ja | Mnemonic::Jae);
                    let at_most = matches!(instr.mnemonic(), Mnemonic::Ja | Mnemonic::Jbe);
                    self.branch(compared, above, at_most, taken);
                }
                None
            }
            Mnemonic::Cmp if instr.op_count() == 2 => {
                let immediate = matches!(
                    instr.op1_kind(),
                    OpKind::Immediate8
                        | OpKind::Immediate8to32
                        | OpKind::Immediate32
                        | OpKind::Immediate8to64
                        | OpKind::Immediate32to64
                );
                let compared = match instr.op0_kind() {
                    OpKind::Register => match low_byte(instr.op0_register()) {
                        Some(r) => Some(self.byte(Byte::Register(r))),
                        None => reg(instr.op0_register()).map(|r| self.get(r)),
                    },
                    OpKind::Memory if instr.memory_size().size() >= 4 => {
                        self.x86_place(instr).map(|k| self.slot(k))
                    }
                    OpKind::Memory if instr.memory_size().size() == 1 => self
                        .x86_place(instr)
                        .map(|(b, d)| self.byte(Byte::Memory(b, d))),
                    _ => None,
                };
                if immediate && let Some(v) = compared.and_then(|v| self.name(v)) {
                    self.compared = Some((v, instr.immediate(1)));
                }
                None
            }
            Mnemonic::Mov if instr.op_count() == 2 => {
                match (op_reg(0).and_then(reg), instr.op1_kind()) {
                    (Some(d), OpKind::Register) => reg(instr.op1_register()).map(|s| {
                        let v = self.get(s);
                        let v = if full(instr.op0_register()) {
                            v
                        } else {
                            self.narrow(v)
                        };
                        (d, v)
                    }),
                    (Some(d), OpKind::Memory) => {
                        let wide = full(instr.op0_register());
                        let width = if instr.op0_register().is_gpr64() {
                            8
                        } else {
                            4
                        };
                        let v = if let Some(k) = self.x86_slot(instr) {
                            let v = self.slot(k);
                            Some(if wide { v } else { self.narrow(v) })
                        } else if let Some(entry) = self
                            .x86_address(instr, reg)
                            .and_then(|a| a.load(width, false))
                        {
                            Some(entry)
                        } else {
                            // A field the path compared (`cmp dword ptr [rbx], 17; ja; mov
                            // eax, [rbx]`) holds the value it compared.
                            let k = self.x86_place(instr);
                            let held = self.slots.iter().find(|(s, _)| Some(*s) == k);
                            held.map(|&(_, v)| v)
                                .map(|v| if wide { v } else { self.narrow(v) })
                        };
                        v.map(|v| (d, v))
                    }
                    (None, _) if instr.op0_kind() == OpKind::Memory => {
                        // A store into a stack slot.
                        if let (Some(k), Some(s)) = (self.x86_slot(instr), op_reg(1).and_then(reg))
                        {
                            let v = self.get(s);
                            let v = if full(instr.op1_register()) {
                                v
                            } else {
                                self.narrow(v)
                            };
                            self.set_slot(k, v);
                        }
                        None
                    }
                    _ => None,
                }
            }
            Mnemonic::Movsxd if instr.op1_kind() == OpKind::Register => {
                // MSVC's `movsxd rax, ecx` of an index its comparison bounded (below 2^31, so
                // sign and zero extension agree).
                let v = reg(instr.op1_register())
                    .map(|s| self.get(s))
                    .filter(|v| v.unknown().is_some());
                op_reg(0).and_then(reg).zip(v)
            }
            Mnemonic::Movsxd if instr.memory_size().size() == 4 => op_reg(0)
                .and_then(reg)
                .zip(self.x86_address(instr, reg).and_then(|a| a.load(4, true))),
            Mnemonic::Movzx => {
                // The byte a comparison bounded, zero-extended (`movzx eax, al`); any other
                // zero-extension is a new unknown value.
                let v = match instr.op1_kind() {
                    OpKind::Register => {
                        low_byte(instr.op1_register()).map(|r| self.byte(Byte::Register(r)))
                    }
                    OpKind::Memory if instr.memory_size().size() == 1 => self
                        .x86_place(instr)
                        .map(|(b, d)| self.byte(Byte::Memory(b, d))),
                    _ => None,
                };
                op_reg(0).and_then(reg).zip(v)
            }
            Mnemonic::Cdqe => match self.get(0) {
                Value::Entry { table, entries } if entries.width == 4 && entries.base.is_none() => {
                    Some((
                        0,
                        Value::Entry {
                            table,
                            entries: Entries {
                                signed: true,
                                ..entries
                            },
                        },
                    ))
                }
                _ => None,
            },
            Mnemonic::Lea if full(instr.op0_register()) => {
                op_reg(0).and_then(reg).zip(self.x86_address(instr, reg))
            }
            Mnemonic::Shl
                if full(instr.op0_register())
                    && instr.op1_kind() == OpKind::Immediate8
                    && instr.immediate(1) < 8 =>
            {
                // gcc -O0 scales the index itself: `shl eax, 2; add eax, table; mov eax, [eax]`.
                let d = op_reg(0).and_then(reg);
                let scaled = d.and_then(|d| self.get(d).times(1 << instr.immediate(1)));
                d.zip(scaled)
            }
            Mnemonic::Add if full(instr.op0_register()) => {
                let d = op_reg(0).and_then(reg);
                let a = d.map(|d| self.get(d));
                let b = match instr.op1_kind() {
                    OpKind::Register => reg(instr.op1_register()).map(|s| self.get(s)),
                    OpKind::Immediate8to64 | OpKind::Immediate32to64 => {
                        Some(Value::constant(instr.immediate(1)))
                    }
                    OpKind::Immediate8to32 | OpKind::Immediate32 if bits32 => {
                        Some(Value::constant(instr.immediate(1)))
                    }
                    _ => None,
                };
                let sum = a.zip(b).and_then(|(a, b)| {
                    a.plus(b)
                        .or_else(|| entry_signed(a).and_then(|s| Value::destination(b, a, s, 0)))
                        .or_else(|| entry_signed(b).and_then(|s| Value::destination(a, b, s, 0)))
                });
                d.zip(sum)
            }
            _ => None,
        };
        if last {
            // The jump: through a register that holds a destination, or through memory.
            let value = match instr.op0_kind() {
                OpKind::Register => reg(instr.op0_register()).map(|r| self.get(r)),
                OpKind::Memory => self
                    .x86_address(instr, reg)
                    .and_then(|a| a.load(pointer, false)),
                _ => None,
            };
            return match value? {
                Value::Entry { table, entries }
                    if entries.base.is_some() || entries.width == pointer =>
                {
                    Some((table, entries))
                }
                _ => None,
            };
        }
        // Whatever else the instruction writes is no longer known.
        for r in written {
            let full = r.full_register() as usize;
            if let Some(i) = full.checked_sub(Register::RAX as usize).filter(|&i| i < 16) {
                self.kill(i);
            }
        }
        if matches!(
            instr.flow_control(),
            iced_x86::FlowControl::Call | iced_x86::FlowControl::IndirectCall
        ) {
            // The registers a callee may change, and any memory it can reach.
            for r in CALLER_SAVED {
                self.kill(r);
            }
            self.forget_heap(None);
        }
        if let Some((d, v)) = result {
            self.registers[d] = Some(v);
            if instr.mnemonic() == Mnemonic::Movzx && instr.memory_size().size() <= 1 {
                // A zero-extended byte is its register's low byte too: gcc compares `al` after
                // `movzx eax, byte ptr [rbp+8]`.
                self.bytes.push((Byte::Register(d), v));
            }
        }
        None
    }

    /// The stack slot a memory operand names: `[rbp+d]` or `[rsp+d]` (`[ebp+d]`, `[esp+d]`).
    fn x86_slot(&self, instr: &Instruction) -> Option<(usize, i64)> {
        self.x86_place(instr).filter(|&(base, _)| is_frame(base))
    }

    /// The place a memory operand with a base register and no index names: `[rbx+0x65]` (a
    /// stack slot as [`State::x86_slot`] names it, or a field of what a register points at).
    fn x86_place(&self, instr: &Instruction) -> Option<(usize, i64)> {
        let base = instr.memory_base();
        let wide = base.is_gpr64() || (self.bits32 && base.is_gpr32());
        (wide && instr.memory_index() == Register::None && instr.segment_prefix() == Register::None)
            .then(|| {
                let i = base.full_register() as usize - Register::RAX as usize;
                let d = if self.bits32 {
                    i64::from(instr.memory_displacement32() as i32)
                } else {
                    instr.memory_displacement64() as i64
                };
                (i, d)
            })
            .filter(|&(i, _)| i < 16)
    }

    /// The value of a memory operand's address.
    fn x86_address(
        &mut self,
        instr: &Instruction,
        reg: impl Fn(Register) -> Option<usize>,
    ) -> Option<Value> {
        if instr.segment_prefix() != Register::None {
            return None;
        }
        if instr.is_ip_rel_memory_operand() {
            return Some(Value::constant(instr.ip_rel_memory_address()));
        }
        let bits32 = self.bits32;
        let full = move |r: Register| r.is_gpr64() || (bits32 && r.is_gpr32());
        let mut address = Value::constant(if bits32 {
            u64::from(instr.memory_displacement32())
        } else {
            instr.memory_displacement64()
        });
        let base = instr.memory_base();
        if base != Register::None {
            full(base).then_some(())?;
            let b = self.get(reg(base)?);
            address = address.plus(b)?;
        }
        let index = instr.memory_index();
        if index != Register::None {
            full(index).then_some(())?;
            let i = self.get(reg(index)?);
            address = address.plus(i.times(u64::from(instr.memory_index_scale()))?)?;
        }
        Some(address)
    }

    /// Follows one AArch64 instruction; at the last, the table its jump reads.
    fn arm64(
        &mut self,
        inst: &yaxpeax_arm::armv8::a64::Instruction,
        address: u64,
        taken: Option<bool>,
        last: bool,
    ) -> Option<(u64, Entries)> {
        let compared = self.compared.take();
        let ops = &inst.operands;
        let relative = ops.iter().find_map(|op| match op {
            Operand::PCOffset(off) => Some(*off),
            _ => None,
        });
        let result: Option<(usize, Value)> = match inst.opcode {
            Opcode::Bcc(cond) => {
                // hi 8, ls 9, hs 2, lo 3.
                if let Some(taken) = taken
                    && matches!(cond, 2 | 3 | 8 | 9)
                {
                    self.branch(
                        compared,
                        matches!(cond, 2 | 8),
                        matches!(cond, 8 | 9),
                        taken,
                    );
                }
                None
            }
            Opcode::SUBS if matches!(ops[0], Operand::Register(_, 31)) => {
                let bound = match ops[2] {
                    Operand::Immediate(n) => Some(u64::from(n)),
                    Operand::ImmShift(n, s) if s < 64 => Some(u64::from(n) << s),
                    _ => None,
                };
                let v = self.arm_read(&ops[1]).and_then(|v| self.name(v));
                if let (Some(v), Some(n)) = (v, bound) {
                    self.compared = Some((v, n));
                }
                None
            }
            Opcode::ADRP => arm_reg(&ops[0]).zip(
                relative.map(|off| Value::constant((address & !0xfff).wrapping_add_signed(off))),
            ),
            Opcode::ADR => arm_reg(&ops[0])
                .zip(relative.map(|off| Value::constant(address.wrapping_add_signed(off)))),
            Opcode::ORR if matches!(ops[1], Operand::Register(_, 31)) => {
                // `mov wd, ws`.
                let source = match ops[2] {
                    Operand::Register(size, s) | Operand::RegShift(ShiftStyle::LSL, 0, size, s) => {
                        Some((size, s))
                    }
                    _ => None,
                };
                match (arm_reg(&ops[0]), source) {
                    (Some(d), Some((size, s))) => {
                        let v = self.arm_read(&Operand::Register(size, s));
                        v.map(|v| {
                            (
                                d,
                                if size == SizeCode::X {
                                    v
                                } else {
                                    self.narrow(v)
                                },
                            )
                        })
                    }
                    _ => None,
                }
            }
            Opcode::ADD if arm_is_x(&ops[0]) => {
                let d = arm_reg(&ops[0]);
                let a = self.arm_read(&ops[1]);
                let sum = match ops[2] {
                    Operand::Immediate(n) => a.and_then(|a| a.plus(Value::constant(u64::from(n)))),
                    Operand::ImmShift(n, s) if s < 64 => {
                        a.and_then(|a| a.plus(Value::constant(u64::from(n) << s)))
                    }
                    Operand::Register(SizeCode::X, m) => {
                        let b = self.arm_read(&Operand::Register(SizeCode::X, m));
                        a.zip(b).and_then(|(a, b)| {
                            a.plus(b).or_else(|| {
                                entry_signed(b).and_then(|s| Value::destination(a, b, s, 0))
                            })
                        })
                    }
                    Operand::RegShift(style, amount, size, m) if amount <= 4 => {
                        let b = self.arm_read(&Operand::Register(size, m));
                        a.zip(b).and_then(|(a, b)| {
                            let Value::Entry { entries, .. } = b else {
                                return a.plus(b.times(1 << amount)?);
                            };
                            let signed = match (style, entries.width) {
                                (ShiftStyle::SXTB, 1)
                                | (ShiftStyle::SXTH, 2)
                                | (ShiftStyle::SXTW, 4) => true,
                                (ShiftStyle::UXTB, 1)
                                | (ShiftStyle::UXTH, 2)
                                | (ShiftStyle::UXTW, 4) => false,
                                (ShiftStyle::LSL | ShiftStyle::UXTX | ShiftStyle::SXTX, _)
                                    if size == SizeCode::X =>
                                {
                                    entries.signed
                                }
                                _ => return None,
                            };
                            Value::destination(a, b, signed, amount)
                        })
                    }
                    _ => None,
                };
                d.zip(sum)
            }
            Opcode::LDRB
            | Opcode::LDRH
            | Opcode::LDR
            | Opcode::LDRSB
            | Opcode::LDRSH
            | Opcode::LDRSW => {
                let wide = arm_is_x(&ops[0]);
                let (width, signed) = match inst.opcode {
                    Opcode::LDRB => (1, false),
                    Opcode::LDRSB => (1, true),
                    Opcode::LDRH => (2, false),
                    Opcode::LDRSH => (2, true),
                    Opcode::LDRSW => (4, true),
                    _ if wide => (8, false),
                    _ => (4, false),
                };
                let v = match ops[1] {
                    Operand::RegRegOffset(n, m, size, style, amount)
                        if matches!(
                            style,
                            ShiftStyle::LSL
                                | ShiftStyle::UXTW
                                | ShiftStyle::SXTW
                                | ShiftStyle::UXTX
                        ) && amount < 4 =>
                    {
                        let base = self.arm_read(&Operand::RegisterOrSP(SizeCode::X, n));
                        let index = self.arm_read(&Operand::Register(size, m));
                        base.zip(index)
                            .and_then(|(b, i)| b.plus(i.times(1 << amount)?))
                            .and_then(|a| a.load(width, signed))
                    }
                    Operand::RegPreIndex(n, off, false) if matches!(n, 29 | 31) && width >= 4 => {
                        let v = self.slot((usize::from(n), i64::from(off)));
                        Some(if wide { v } else { self.narrow(v) })
                    }
                    _ => None,
                };
                arm_reg(&ops[0]).zip(v)
            }
            Opcode::STR | Opcode::STUR => {
                if let (Operand::Register(size, t), Operand::RegPreIndex(n, off, false)) =
                    (ops[0], ops[1])
                    && matches!(n, 29 | 31)
                {
                    let v = self.arm_read(&Operand::Register(size, t));
                    if let Some(v) = v {
                        let v = if size == SizeCode::X {
                            v
                        } else {
                            self.narrow(v)
                        };
                        self.set_slot((usize::from(n), i64::from(off)), v);
                    }
                }
                None
            }
            _ => None,
        };
        if last {
            let value = match inst.opcode {
                Opcode::BR => self.arm_read(&ops[0]),
                _ => None,
            };
            return match value? {
                Value::Entry { table, entries } if entries.base.is_some() || entries.width == 8 => {
                    Some((table, entries))
                }
                _ => None,
            };
        }
        // Whatever else the instruction writes is no longer known.
        match inst.opcode {
            Opcode::BL
            | Opcode::BLR
            | Opcode::BLRAA
            | Opcode::BLRAAZ
            | Opcode::BLRAB
            | Opcode::BLRABZ => {
                for r in (0..=18).chain([30]) {
                    self.kill(r);
                }
            }
            op if disasm::is_store(op) => {
                // A store into the stack other than the slot store above: the slots addressed
                // through its base are no longer known.
                let modelled = matches!(op, Opcode::STR | Opcode::STUR)
                    && matches!(ops[0], Operand::Register(..))
                    && matches!(ops[1], Operand::RegPreIndex(29 | 31, _, false));
                if !modelled {
                    for op in ops {
                        if let Operand::RegPreIndex(n, _, _) | Operand::RegRegOffset(n, ..) = *op {
                            let n = usize::from(n).min(31);
                            self.slots.retain(|((base, _), _)| *base != n);
                        }
                    }
                }
            }
            Opcode::LDP | Opcode::LDPSW | Opcode::LDNP | Opcode::LDXP | Opcode::LDAXP => {
                for op in &ops[..2] {
                    if let Some(r) = arm_reg(op) {
                        self.kill(r);
                    }
                }
            }
            _ => {
                if let Some(r) = arm_reg(&ops[0]) {
                    self.kill(r);
                }
            }
        }
        for op in ops {
            if let Operand::RegPreIndex(n, _, true)
            | Operand::RegPostIndex(n, _)
            | Operand::RegPostIndexReg(n, _) = op
            {
                self.kill(usize::from(*n).min(31));
            }
        }
        if let Some((d, v)) = result {
            self.registers[d] = Some(v);
        }
        None
    }

    /// The value an AArch64 register operand reads (the zero register reads zero).
    fn arm_read(&mut self, op: &Operand) -> Option<Value> {
        match *op {
            Operand::Register(_, 31) => Some(Value::constant(0)),
            Operand::Register(_, r) | Operand::RegisterOrSP(_, r) => {
                Some(self.get(usize::from(r).min(31)))
            }
            _ => None,
        }
    }
}

/// An AArch64 switch whose table base was computed long before the jump, in a callee-saved
/// register the procedure sets once (`adrp x27, table; add x27, x27, #off` in its prologue),
/// and whose guard is a `cmp; b.ls` far from the table's block: the path [`recognise`] follows
/// holds neither. Read from the procedure decoded in address order from `start`: the jump's
/// block (from `block`) ends `ldrh wI, [xB, wK, uxtw #1]; adr xL, label; add xT, xL, wI, sxth
/// #2; br xT`; the guard is the `cmp wK, #N` just before a `b.ls`/`b.lo` to `block`; the base is
/// what the last `adrp`/`add` pair into xB laid out before the guard left in it (restores from
/// the stack, on the way out, do not count as writes).
/// Discovery and the call graph read it only where [`recognise`] finds nothing, and keep it only
/// when every destination lands in the procedure.
pub(crate) fn loose_arm64(start: u64, block: u64, jump: u64, read: &Read<'_>) -> Option<JumpTable> {
    if jump < start || block < start || jump < block || jump - start > 1 << 20 {
        return None;
    }
    let decoder = InstDecoder::default();
    let decode = |address: u64| {
        let bytes = read(address, 4)?;
        decoder.decode(&mut U8Reader::new(bytes)).ok()
    };
    let br = decode(jump)?;
    if br.opcode != Opcode::BR {
        return None;
    }
    let destination = arm_reg(&br.operands[0])?;
    // The block's last instructions, back from the jump.
    let (mut add, mut label, mut load) = (None, None, None);
    let mut at = jump;
    while at > block && jump - at < 4 * 8 {
        at -= 4;
        let inst = decode(at)?;
        let ops = &inst.operands;
        match inst.opcode {
            Opcode::ADD if add.is_none() && arm_reg(&ops[0]) == Some(destination) => {
                let (Some(l), Operand::RegShift(style, 2, _, i)) = (arm_reg(&ops[1]), ops[2])
                else {
                    return None;
                };
                add = Some((l, usize::from(i), style));
            }
            Opcode::ADR if add.is_some_and(|(l, _, _)| arm_reg(&ops[0]) == Some(l)) => {
                if let Operand::PCOffset(off) = ops[1] {
                    label = Some(at.wrapping_add_signed(off));
                }
            }
            Opcode::LDRB | Opcode::LDRH | Opcode::LDR
                if load.is_none() && add.is_some_and(|(_, i, _)| arm_reg(&ops[0]) == Some(i)) =>
            {
                let width: u64 = match inst.opcode {
                    Opcode::LDRB => 1,
                    Opcode::LDRH => 2,
                    _ => 4,
                };
                let Operand::RegRegOffset(
                    n,
                    m,
                    _,
                    ShiftStyle::UXTW | ShiftStyle::SXTW | ShiftStyle::LSL,
                    amount,
                ) = ops[1]
                else {
                    return None;
                };
                if u32::from(amount) != width.trailing_zeros() && amount != 0 {
                    return None;
                }
                load = Some((usize::from(n), usize::from(m), width));
            }
            _ => {}
        }
    }
    let ((_, _, style), label, (base, index, width)) = (add?, label?, load?);
    let signed = match (style, width) {
        (ShiftStyle::SXTB, 1) | (ShiftStyle::SXTH, 2) | (ShiftStyle::SXTW, 4) => true,
        (ShiftStyle::UXTB, 1) | (ShiftStyle::UXTH, 2) | (ShiftStyle::UXTW, 4) => false,
        _ => return None,
    };
    // The guard and the base, in address order from the procedure's start.
    let (mut page, mut value, mut bound) = (None::<u64>, None::<u64>, None::<u64>);
    let mut guarded = None::<u64>;
    let mut previous: Option<yaxpeax_arm::armv8::a64::Instruction> = None;
    let mut address = start;
    while address < jump {
        let Some(inst) = decode(address) else {
            previous = None;
            address += 4;
            continue;
        };
        let ops = &inst.operands;
        match inst.opcode {
            Opcode::Bcc(cond @ (3 | 9))
                if ops.iter().any(|op| matches!(op, Operand::PCOffset(off) if address.wrapping_add_signed(*off) == block)) =>
            {
                if let Some(cmp) = &previous
                    && cmp.opcode == Opcode::SUBS
                    && matches!(cmp.operands[0], Operand::Register(_, 31))
                    && matches!(cmp.operands[1], Operand::Register(_, r) | Operand::RegisterOrSP(_, r) if usize::from(r) == index)
                    && let Some(n) = match cmp.operands[2] {
                        Operand::Immediate(n) => Some(u64::from(n)),
                        Operand::ImmShift(n, s) if s < 32 => Some(u64::from(n) << s),
                        _ => None,
                    }
                    && bound.is_none()
                {
                    // `b.ls` is taken for 0..=N, `b.lo` for 0..N. The base is what the register
                    // holds where the guard branches to the table's block: the register may be
                    // used otherwise on paths laid out between them.
                    bound = Some(n + u64::from(cond == 9));
                    guarded = value;
                }
            }
            Opcode::ADRP if arm_reg(&ops[0]) == Some(base) => {
                page = match ops[1] {
                    Operand::PCOffset(off) => Some((address & !0xfff).wrapping_add_signed(off)),
                    _ => None,
                };
                value = None;
            }
            Opcode::ADD
                if arm_reg(&ops[0]) == Some(base)
                    && arm_reg(&ops[1]) == Some(base)
                    && page.is_some() =>
            {
                value = match ops[2] {
                    Operand::Immediate(n) => page.map(|p| p + u64::from(n)),
                    Operand::ImmShift(n, s) if s < 64 => page.map(|p| p + (u64::from(n) << s)),
                    _ => None,
                };
                page = None;
            }
            op => {
                let restore = matches!(op, Opcode::LDP | Opcode::LDR)
                    && ops.iter().any(|o| {
                        matches!(
                            o,
                            Operand::RegPreIndex(31, ..) | Operand::RegPostIndex(31, _)
                        )
                    });
                let writes = if disasm::is_store(op) {
                    false
                } else if matches!(op, Opcode::LDP | Opcode::LDPSW) {
                    arm_reg(&ops[0]) == Some(base) || arm_reg(&ops[1]) == Some(base)
                } else {
                    arm_reg(&ops[0]) == Some(base)
                };
                if writes && !restore {
                    page = None;
                    value = None;
                }
            }
        }
        previous = Some(inst);
        address += 4;
    }
    let (table, count) = (guarded?, bound.filter(|&n| n > 0 && n <= MAX_ENTRIES)?);
    let mut targets = Vec::new();
    for k in 0..count {
        let bytes = read(table + k * width, width as usize)?;
        let raw = match width {
            1 => u64::from(bytes[0]),
            2 => u64::from(u16::from_le_bytes(bytes.try_into().ok()?)),
            _ => u64::from(u32::from_le_bytes(bytes.try_into().ok()?)),
        };
        let bits = 8 * width as u32;
        let entry = if signed && raw >> (bits - 1) != 0 {
            raw as i64 - (1i64 << bits)
        } else {
            raw as i64
        };
        targets.push(label.wrapping_add_signed(entry * 4));
    }
    Some(JumpTable { table, targets })
}

/// Most bytes [`hoisted_x86`] reads from a procedure's start to its jump.
const HOISTED_SPAN: u64 = 1 << 20;

/// The constant addresses an x86-64 procedure's code put in registers, read in address order
/// from its start up to the jump [`hoisted_x86`] last asked about: each byte is decoded once
/// while the jumps are asked about in address order, as the callers walk a procedure.
pub(crate) struct HoistedBases {
    start: u64,
    /// Where the scan goes on: the last jump asked about.
    pos: u64,
    /// What each register holds: the address its last write (`lea reg, [rip+X]`) put there.
    held: [Option<u64>; 16],
}

impl HoistedBases {
    pub(crate) fn new(start: u64) -> HoistedBases {
        HoistedBases {
            start,
            pos: start,
            held: [None; 16],
        }
    }

    /// Reads on to `jump`: a register whose last write before it is `lea reg, [rip+X]` holds X.
    /// Saves and restores (`push`, `pop`) are not writes; a call ends what the registers it may
    /// change held.
    fn advance(&mut self, jump: u64, read: &Read<'_>) -> Option<()> {
        if jump < self.pos {
            *self = HoistedBases::new(self.start);
        }
        if jump < self.start || jump - self.start > HOISTED_SPAN {
            return None;
        }
        let code = read(self.pos, usize::try_from(jump - self.pos).ok()?)?;
        let gpr = |r: Register| {
            (r.full_register() as usize)
                .checked_sub(Register::RAX as usize)
                .filter(|&i| i < 16)
        };
        let mut info = InstructionInfoFactory::new();
        let decoder =
            iced_x86::Decoder::with_ip(64, code, self.pos, iced_x86::DecoderOptions::NONE);
        for instr in decoder {
            match instr.mnemonic() {
                Mnemonic::INVALID | Mnemonic::Push | Mnemonic::Pop => continue,
                Mnemonic::Lea
                    if instr.op0_register().is_gpr64() && instr.is_ip_rel_memory_operand() =>
                {
                    if let Some(r) = gpr(instr.op0_register()) {
                        self.held[r] = Some(instr.ip_rel_memory_address());
                    }
                    continue;
                }
                _ => {}
            }
            for used in info.info(&instr).used_registers() {
                if writes(used.access())
                    && let Some(r) = gpr(used.register())
                {
                    self.held[r] = None;
                }
            }
            if matches!(
                instr.flow_control(),
                iced_x86::FlowControl::Call | iced_x86::FlowControl::IndirectCall
            ) {
                for r in CALLER_SAVED {
                    self.held[r] = None;
                }
            }
        }
        // The next scan starts at the jump, an instruction's start.
        self.pos = jump;
        Some(())
    }
}

/// An x86-64 switch whose table base the procedure put in a register before the path that
/// reaches its jump begins: gcc -O2 keeps it in a callee-saved register across a loop (`lea
/// r13, [rip+table]` in the prologue; `cmp al, 0x16; ja default; movsxd rax, dword ptr
/// [r13+rax*4]; add rax, r13; jmp rax` in the loop). The registers' values where the path
/// begins are those `bases` reads from the procedure's start to the jump; the path itself must
/// still bound the index. Callers read it only where [`recognise`] finds nothing, and keep it
/// only when every destination lands in the procedure.
pub(crate) fn hoisted_x86(
    bases: &mut HoistedBases,
    path: &Path,
    read: &Read<'_>,
) -> Option<JumpTable> {
    bases.advance(path.steps.back()?.address, read)?;
    let known: Vec<(usize, u64)> = bases
        .held
        .iter()
        .enumerate()
        .filter_map(|(r, v)| Some((r, (*v)?)))
        .collect();
    if known.is_empty() {
        return None;
    }
    recognise_from(Isa::X86_64, path, read, &known)
}

/// The register an AArch64 operand writes (`None` for the zero register).
fn arm_reg(op: &Operand) -> Option<usize> {
    match *op {
        Operand::Register(_, 31) => None,
        Operand::Register(_, r) | Operand::RegisterOrSP(_, r) => Some(usize::from(r).min(31)),
        _ => None,
    }
}

fn arm_is_x(op: &Operand) -> bool {
    matches!(
        op,
        Operand::Register(SizeCode::X, _) | Operand::RegisterOrSP(SizeCode::X, _)
    )
}

/// How an entry held whole in a 64-bit register reads: as it was loaded.
fn entry_signed(v: Value) -> Option<bool> {
    match v {
        Value::Entry { entries, .. } if entries.base.is_none() => Some(entries.signed),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyzers::testbuild::{ARM64, GCC, Toolchain, build, image, listing, nm_functions};
    use crate::providers::native::Image;
    use crate::providers::native::disasm::Disassembler;

    const SWITCH: &str = include_str!("../../../tests/corpus/switch.c");

    const CLANG: Toolchain = Toolchain {
        cc: "clang-14",
        tools: "",
        suffix: "",
    };

    /// Recognises the table of the indirect jump ending `code` (x86-64 at 0x1000), with the
    /// 32-bit words of `table` at 0x2000.
    fn x86(code: &[&[u8]], table: &[i32]) -> Option<JumpTable> {
        x86_read(code, table, false)
    }

    /// [`x86`], read as [`hoisted_x86`] reads it when `hoisted`.
    fn x86_read(code: &[&[u8]], table: &[i32], hoisted: bool) -> Option<JumpTable> {
        // `LEA_TABLE` and `LEA_R13_TABLE` are encoded where they land, so that they compute
        // 0x2000.
        let mut bytes: Vec<u8> = Vec::new();
        for &piece in code {
            if piece == LEA_TABLE || piece == LEA_R13_TABLE {
                let next = 0x1000 + bytes.len() as i64 + 7;
                bytes.extend(&piece[..3]);
                bytes.extend(i32::try_from(0x2000 - next).unwrap().to_le_bytes());
            } else {
                bytes.extend(piece);
            }
        }
        let code = bytes;
        let data: Vec<u8> = table.iter().flat_map(|e| e.to_le_bytes()).collect();
        let read = |address: u64, len: usize| {
            let (base, bytes) = if address >= 0x2000 {
                (0x2000, &data)
            } else {
                (0x1000, &code)
            };
            let at = usize::try_from(address.checked_sub(base)?).ok()?;
            bytes.get(at..at + len)
        };
        let mut path = Path::default();
        let mut d = Disassembler::new(Isa::X86_64, &code, 0x1000, false);
        while let Some(i) = d.next(None) {
            path.push(&i);
        }
        if hoisted {
            hoisted_x86(&mut HoistedBases::new(0x1000), &path, &read)
        } else {
            recognise(Isa::X86_64, &path, &read)
        }
    }

    const CMP_EDI_2: &[u8] = &[0x83, 0xff, 0x02];
    /// `ja` 0x14 bytes on.
    const JA: &[u8] = &[0x77, 0x14];
    /// `jb` 0x14 bytes on.
    const JB: &[u8] = &[0x72, 0x14];
    /// `lea rdx, [rip+table]` (encoded where it lands).
    const LEA_TABLE: &[u8] = &[0x48, 0x8d, 0x15, 0, 0, 0, 0];
    /// `lea r13, [rip+table]` (encoded where it lands).
    const LEA_R13_TABLE: &[u8] = &[0x4c, 0x8d, 0x2d, 0, 0, 0, 0];
    const MOV_EDI_EDI: &[u8] = &[0x89, 0xff];
    const ADD_EDI_1: &[u8] = &[0x83, 0xc7, 0x01];
    const MOVSXD_RDI: &[u8] = &[0x48, 0x63, 0x04, 0xba];
    const MOVSXD_RSI: &[u8] = &[0x48, 0x63, 0x04, 0xb2];
    const ADD_RAX_RDX: &[u8] = &[0x48, 0x01, 0xd0];
    const JMP_RAX: &[u8] = &[0xff, 0xe0];
    /// Offsets from 0x2000 to 0x1017, 0x1019, 0x1017.
    const TABLE: &[i32] = &[0x1017 - 0x2000, 0x1019 - 0x2000, 0x1017 - 0x2000];

    /// gcc's form: `cmp edi, 2; ja; lea rdx, [rip+table]; mov edi, edi; movsxd rax, dword ptr
    /// [rdx+rdi*4]; add rax, rdx; jmp rax`.
    const GCC_FORM: [&[u8]; 7] = [
        CMP_EDI_2,
        JA,
        LEA_TABLE,
        MOV_EDI_EDI,
        MOVSXD_RDI,
        ADD_RAX_RDX,
        JMP_RAX,
    ];

    /// The gcc form is recognised with exactly the entries its bound allows; without a bound,
    /// with a comparison that does not bound the index, with an index the path does not tie
    /// to the comparison, or with a table the file has no bytes for, nothing is.
    #[test]
    fn a_table_needs_its_bound_and_its_index_regression_27() {
        assert_eq!(
            x86(&GCC_FORM, TABLE),
            Some(JumpTable {
                table: 0x2000,
                targets: vec![0x1017, 0x1019, 0x1017]
            })
        );
        let changed = |changes: &[(usize, &'static [u8])]| {
            let mut code = GCC_FORM;
            for &(i, bytes) in changes {
                code[i] = bytes;
            }
            code
        };
        for (why, code, table) in [
            (
                "no comparison",
                changed(&[(0, &[0x90; 3]), (1, &[0x90; 2])]),
                TABLE,
            ),
            (
                "`jb` not taken bounds from below",
                changed(&[(1, JB)]),
                TABLE,
            ),
            (
                "another register indexes",
                changed(&[(4, MOVSXD_RSI)]),
                TABLE,
            ),
            (
                "the index changes after the comparison",
                changed(&[(3, ADD_EDI_1)]),
                TABLE,
            ),
            ("the file holds two of three entries", GCC_FORM, &TABLE[..2]),
        ] {
            assert_eq!(x86(&code, table), None, "{why}");
        }
    }

    /// MSVC's form: unsigned offsets from a base the table's address is computed from
    /// (`lea rdx, [__ImageBase]; mov ecx, dword ptr [rdx+rax*4]; add rcx, rdx; jmp rcx`),
    /// after `cmp eax, 2; ja; movsxd rax, eax`.
    #[test]
    fn msvc_tables_hold_offsets_from_the_image_base_regression_27() {
        const CMP_EAX_2: &[u8] = &[0x83, 0xf8, 0x02];
        const MOVSXD_RAX_EAX: &[u8] = &[0x48, 0x63, 0xc0];
        const MOV_ECX_ENTRY: &[u8] = &[0x8b, 0x0c, 0x82];
        const ADD_RCX_RDX: &[u8] = &[0x48, 0x01, 0xd1];
        const JMP_RCX: &[u8] = &[0xff, 0xe1];
        let code = [
            CMP_EAX_2,
            JA,
            MOVSXD_RAX_EAX,
            LEA_TABLE,
            MOV_ECX_ENTRY,
            ADD_RCX_RDX,
            JMP_RCX,
        ];
        assert_eq!(
            x86(&code, &[0x10, -0x10, 0x20]).map(|t| t.targets),
            Some(vec![0x2010, 0x2000 + 0xffff_fff0, 0x2020])
        );
    }

    /// An index adjusted before its comparison (`lea rcx, [rdi-1]; cmp rcx, 2`) is the value
    /// bounded, and a comparison bounds across instructions that leave the flags alone (`mov
    /// r13, [rsp+0x28]` between `cmp` and `ja`), not across one that sets them (`test eax,
    /// eax`).
    #[test]
    fn adjusted_indexes_and_comparisons_apart_from_their_branch_regression_27() {
        const LEA_RCX_RDI_LESS_1: &[u8] = &[0x48, 0x8d, 0x4f, 0xff];
        const CMP_RCX_2: &[u8] = &[0x48, 0x83, 0xf9, 0x02];
        const MOVSXD_RCX: &[u8] = &[0x48, 0x63, 0x04, 0x8a];
        const MOV_R13_FROM_STACK: &[u8] = &[0x4c, 0x8b, 0x6c, 0x24, 0x28];
        const TEST_EAX_EAX: &[u8] = &[0x85, 0xc0];
        let targets = Some(vec![0x1017, 0x1019, 0x1017]);
        let adjusted = [
            LEA_RCX_RDI_LESS_1,
            CMP_RCX_2,
            JA,
            LEA_TABLE,
            MOVSXD_RCX,
            ADD_RAX_RDX,
            JMP_RAX,
        ];
        assert_eq!(x86(&adjusted, TABLE).map(|t| t.targets), targets);
        // gcc's form with one instruction between its `cmp` and its `ja`.
        let apart = |between: &'static [u8]| {
            let mut code = GCC_FORM.to_vec();
            code.insert(1, between);
            code
        };
        assert_eq!(
            x86(&apart(MOV_R13_FROM_STACK), TABLE).map(|t| t.targets),
            targets
        );
        assert_eq!(x86(&apart(TEST_EAX_EAX), TABLE), None);
    }

    /// gcc -O2 switches on a byte (`cmp al, 2; ja; movzx eax, al`) and on a field it compares
    /// in memory and loads after (`cmp byte ptr [rbx+0x65], 2; ja; movzx eax, byte ptr
    /// [rbx+0x65]`; `cmp dword ptr [rbx], 2; ja; mov eax, [rbx]`): the comparison bounds the
    /// index, also across a store to another byte of the field's object. It does not once the
    /// compared byte is written, directly or maybe through another pointer, once the register
    /// changes, or through `ah`.
    #[test]
    fn byte_and_field_indexes_regression_27() {
        const CMP_AL_2: &[u8] = &[0x3c, 0x02];
        const CMP_AH_2: &[u8] = &[0x80, 0xfc, 0x02];
        const MOVZX_EAX_AL: &[u8] = &[0x0f, 0xb6, 0xc0];
        const MOVZX_EAX_AH: &[u8] = &[0x0f, 0xb6, 0xc4];
        const ADD_EAX_1: &[u8] = &[0x83, 0xc0, 0x01];
        const CMP_BYTE_FIELD_2: &[u8] = &[0x80, 0x7b, 0x65, 0x02];
        const MOVZX_EAX_BYTE_FIELD: &[u8] = &[0x0f, 0xb6, 0x43, 0x65];
        const STORE_NEXT_BYTE: &[u8] = &[0xc6, 0x43, 0x67, 0x01];
        const STORE_SAME_BYTE: &[u8] = &[0xc6, 0x43, 0x65, 0x01];
        const STORE_THROUGH_RCX: &[u8] = &[0xc6, 0x01, 0x01];
        const CMP_DWORD_FIELD_2: &[u8] = &[0x83, 0x3b, 0x02];
        const MOV_EAX_DWORD_FIELD: &[u8] = &[0x8b, 0x03];
        const MOVSXD_RAX: &[u8] = &[0x48, 0x63, 0x04, 0x82];
        let form = |compare: &'static [u8], between: &[&'static [u8]], load: &'static [u8]| {
            let mut code = vec![compare, JA];
            code.extend(between);
            code.extend([LEA_TABLE, load, MOVSXD_RAX, ADD_RAX_RDX, JMP_RAX]);
            code
        };
        let targets = Some(vec![0x1017, 0x1019, 0x1017]);
        for (why, code) in [
            ("`al`", form(CMP_AL_2, &[], MOVZX_EAX_AL)),
            (
                "a byte field",
                form(CMP_BYTE_FIELD_2, &[], MOVZX_EAX_BYTE_FIELD),
            ),
            (
                "a store to the next byte",
                form(CMP_BYTE_FIELD_2, &[STORE_NEXT_BYTE], MOVZX_EAX_BYTE_FIELD),
            ),
            (
                "a dword field",
                form(CMP_DWORD_FIELD_2, &[], MOV_EAX_DWORD_FIELD),
            ),
        ] {
            assert_eq!(x86(&code, TABLE).map(|t| t.targets), targets, "{why}");
        }
        for (why, code) in [
            (
                "the byte stored to",
                form(CMP_BYTE_FIELD_2, &[STORE_SAME_BYTE], MOVZX_EAX_BYTE_FIELD),
            ),
            (
                "a byte store through another pointer",
                form(CMP_BYTE_FIELD_2, &[STORE_THROUGH_RCX], MOVZX_EAX_BYTE_FIELD),
            ),
            (
                "a dword store through another pointer",
                form(CMP_DWORD_FIELD_2, &[STORE_THROUGH_RCX], MOV_EAX_DWORD_FIELD),
            ),
            ("`eax` changed", form(CMP_AL_2, &[ADD_EAX_1], MOVZX_EAX_AL)),
            ("`ah` compared", form(CMP_AH_2, &[], MOVZX_EAX_AH)),
            (
                "`al` compared, `ah` loaded",
                form(CMP_AL_2, &[], MOVZX_EAX_AH),
            ),
        ] {
            assert_eq!(x86(&code, TABLE), None, "{why}");
        }
    }

    /// gcc -O2 compares a zero-extended byte's low byte (`movzx eax, byte ptr [rbx+8]; cmp al,
    /// 2`), and may set the table's base in a register before the loop that reaches the jump
    /// (`lea r13, [rip+table]` in the prologue, `jmp` into the loop). [`recognise`] proves the
    /// first; [`hoisted_x86`] the second, but only while nothing else wrote the register and
    /// the path still bounds the index.
    #[test]
    fn zero_extended_bytes_and_hoisted_bases_regression_27() {
        const MOVZX_EAX_BYTE_RBX_8: &[u8] = &[0x0f, 0xb6, 0x43, 0x08];
        const CMP_AL_2: &[u8] = &[0x3c, 0x02];
        const ADD_EAX_1: &[u8] = &[0x83, 0xc0, 0x01];
        const MOVSXD_RAX_RDX: &[u8] = &[0x48, 0x63, 0x04, 0x82];
        const MOVSXD_RAX_R13: &[u8] = &[0x49, 0x63, 0x44, 0x85, 0x00];
        const ADD_RAX_R13: &[u8] = &[0x4c, 0x01, 0xe8];
        /// `jmp` to the next instruction: the path starts again after it.
        const JMP_NEXT: &[u8] = &[0xeb, 0x00];
        const MOV_R13_RDI: &[u8] = &[0x49, 0x89, 0xfd];
        const PUSH_R13: &[u8] = &[0x41, 0x55];
        const POP_R13: &[u8] = &[0x41, 0x5d];
        const CALL_NEXT: &[u8] = &[0xe8, 0, 0, 0, 0];
        let targets = Some(vec![0x1017, 0x1019, 0x1017]);

        let byte = |between: &[&'static [u8]]| {
            let mut code = vec![LEA_TABLE, MOVZX_EAX_BYTE_RBX_8, CMP_AL_2, JA];
            code.extend(between);
            code.extend([MOVSXD_RAX_RDX, ADD_RAX_RDX, JMP_RAX]);
            code
        };
        assert_eq!(x86(&byte(&[]), TABLE).map(|t| t.targets), targets);
        assert_eq!(x86(&byte(&[ADD_EAX_1]), TABLE), None, "`eax` changed");

        let hoisted = |base: &'static [u8], before: &[&'static [u8]]| {
            let mut code = vec![PUSH_R13, base];
            code.extend(before);
            code.extend([JMP_NEXT, MOVZX_EAX_BYTE_RBX_8, CMP_AL_2, JA]);
            code
        };
        let through_r13 = |mut code: Vec<&'static [u8]>| {
            code.extend([MOVSXD_RAX_R13, ADD_RAX_R13, JMP_RAX]);
            code
        };
        let through_rdx = |mut code: Vec<&'static [u8]>| {
            code.extend([MOVSXD_RAX_RDX, ADD_RAX_RDX, JMP_RAX]);
            code
        };
        let code = through_r13(hoisted(LEA_R13_TABLE, &[]));
        assert_eq!(
            x86(&code, TABLE),
            None,
            "the path alone does not hold the base"
        );
        assert_eq!(x86_read(&code, TABLE, true).map(|t| t.targets), targets);
        // A callee keeps r13; a restore is no write.
        for (why, before) in [("a call", CALL_NEXT), ("a restore", POP_R13)] {
            let code = through_r13(hoisted(LEA_R13_TABLE, &[before]));
            assert_eq!(
                x86_read(&code, TABLE, true).map(|t| t.targets),
                targets,
                "{why}"
            );
        }
        // A base written after the `lea`, or in a register a call may change, is not known.
        let code = through_r13(hoisted(LEA_R13_TABLE, &[MOV_R13_RDI]));
        assert_eq!(x86_read(&code, TABLE, true), None, "r13 written");
        let code = through_rdx(hoisted(LEA_TABLE, &[CALL_NEXT]));
        assert_eq!(x86_read(&code, TABLE, true), None, "rdx across a call");
        let code = through_rdx(hoisted(LEA_TABLE, &[]));
        assert_eq!(x86_read(&code, TABLE, true).map(|t| t.targets), targets);
        // The path must still bound the index.
        let mut code = vec![PUSH_R13, LEA_R13_TABLE, JMP_NEXT, MOVZX_EAX_BYTE_RBX_8];
        code.extend([MOVSXD_RAX_R13, ADD_RAX_R13, JMP_RAX]);
        assert_eq!(x86_read(&code, TABLE, true), None, "no bound");
    }

    /// The function first called by straight-line code from `at` in the listing.
    fn first_call(listing: &[(u64, String)], at: u64) -> Option<String> {
        let i = listing.iter().position(|(a, _)| *a == at)?;
        for (_, text) in &listing[i..] {
            let mnemonic = text.split_whitespace().next()?;
            match mnemonic {
                "call" | "bl" => {
                    let name = text.split_once('<')?.1.split_once('>')?.0;
                    return Some(name.to_string());
                }
                "ret" | "jmp" | "b" | "br" => return None,
                _ => {}
            }
        }
        None
    }

    /// The tables of the indirect jumps of the procedure at `start`, walked as the call graph
    /// walks it.
    fn tables(img: &Image, start: u64) -> Vec<(u64, Option<JumpTable>)> {
        let index = img.procedure_index(start).unwrap();
        let end = img.procedure_end(index, u64::MAX);
        let bytes = img.bytes_at(start, end - start).unwrap();
        let read = |address: u64, len: usize| img.bytes_at(address, len as u64);
        let mut path = Path::default();
        let mut d = Disassembler::new(img.isa, bytes, start, false);
        let mut found = Vec::new();
        while let Some(i) = d.next(None) {
            path.push(&i);
            if i.flow == Flow::IndirectJump {
                found.push((i.address, recognise(img.isa, &path, &read)));
            }
        }
        found
    }

    /// `dispatch` of `switch.c` as gcc (-O0, -O2, and -O2 linked at a fixed address, whose
    /// table holds addresses) and clang build it for x86-64 and gcc for AArch64: its one
    /// indirect jump (objdump shows it) reads a table of eighteen entries, the k-th leading to
    /// the call of `case_k`, all inside `dispatch`.
    #[test]
    fn switch_tables_lead_to_each_case_regression_27() {
        let fixed: &[&str] = &["-fno-pie", "-no-pie"];
        for (chain, opt, flags) in [
            (GCC, "-O0", &[][..]),
            (GCC, "-O2", &[][..]),
            (GCC, "-O2", fixed),
            (CLANG, "-O2", &[][..]),
            (ARM64, "-O0", &[][..]),
            (ARM64, "-O2", &[][..]),
        ] {
            let case = format!("{} {opt} {flags:?}", chain.cc);
            let dir = tempfile::tempdir().unwrap();
            let built = build(dir.path(), chain, opt, SWITCH, flags, "switch");
            let sym = nm_functions(chain, &built.plain);
            let img = image(&built.plain);
            let dispatch = sym["dispatch"];
            let theirs = listing(chain, &built.plain, "dispatch");
            let jumps: Vec<u64> = theirs
                .iter()
                .filter(|(_, t)| t.starts_with("jmp    *") || t.starts_with("br\t"))
                .map(|&(a, _)| a)
                .collect();
            let ours = tables(&img, dispatch);
            assert_eq!(
                ours.iter().map(|(a, _)| *a).collect::<Vec<_>>(),
                jumps,
                "{case}: the indirect jumps objdump shows"
            );
            let table = ours[0]
                .1
                .clone()
                .unwrap_or_else(|| panic!("{case}: no table"));
            assert_eq!(table.targets.len(), 18, "{case}");
            let end = dispatch + (theirs.last().unwrap().0 - dispatch);
            for (k, &t) in table.targets.iter().enumerate() {
                assert!((dispatch..=end).contains(&t), "{case}: entry {k} at {t:#x}");
                assert_eq!(
                    first_call(&theirs, t).as_deref(),
                    Some(format!("case_{k}").as_str()),
                    "{case}: entry {k} at {t:#x}"
                );
            }
        }
    }
}
