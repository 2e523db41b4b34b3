//! The bounded stack walk of x86-64: call frame information where a module has it, the frame
//! pointer chain where it does not, and every step checked, so that a corrupt stack ends the
//! walk with a stated reason instead of wandering.
//!
//! The walk reads the program only through two traits, `Memory` and `CodeMap`, so the same code
//! runs against a stopped process (`tracee`) and against made-up stacks in the tests below. It
//! is bounded three ways: at most `MAX_FRAMES` frames, at most `MAX_READS` reads of memory, and
//! at most `MAX_EXPRESSION_STEPS` operations per DWARF expression.

use std::path::PathBuf;

use gimli::{EndianSlice, EvaluationResult, LittleEndian};

use super::backtrace::{Backtrace, Frame, FrameKind, FrameSource, MAX_FRAMES, WalkEnd};
use super::outcome::hex;

/// Registers the walk tracks: DWARF numbers 0 to 16 of the x86-64 psABI (`rax`, `rdx`, `rcx`,
/// `rbx`, `rsi`, `rdi`, `rbp`, `rsp`, `r8`–`r15`, and 16, the return address column, which
/// holds `rip`).
pub(crate) const REGISTER_COUNT: usize = 17;
/// DWARF number of `rbp`.
pub(crate) const RBP: u16 = 6;
/// DWARF number of `rsp`.
pub(crate) const RSP: u16 = 7;
/// DWARF number of the return address column, which is `rip`.
pub(crate) const RIP: u16 = 16;

/// The most reads of the program's memory one walk makes: 64 frames need two or three each,
/// so this leaves room for rich rules while keeping a hostile stack cheap.
pub(crate) const MAX_READS: u32 = 4096;

/// The most operations one DWARF expression may execute; real CFI expressions have a handful.
const MAX_EXPRESSION_STEPS: u32 = 1000;

/// Register values of one frame; `None` where the walk does not know the value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Registers([Option<u64>; REGISTER_COUNT]);

impl Registers {
    /// Registers from known values, in DWARF order.
    pub(crate) fn from_values(values: [u64; REGISTER_COUNT]) -> Registers {
        Registers(values.map(Some))
    }

    pub(crate) fn get(&self, register: u16) -> Option<u64> {
        self.0.get(usize::from(register)).copied().flatten()
    }

    fn set(&mut self, register: u16, value: Option<u64>) {
        if let Some(slot) = self.0.get_mut(usize::from(register)) {
            *slot = value;
        }
    }
}

/// Reads the stopped program's memory.
pub(crate) trait Memory {
    /// Fills `buffer` from `address`; false if any byte could not be read.
    fn read(&mut self, address: u64, buffer: &mut [u8]) -> bool;
}

/// Where an address of the program lies.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Location {
    /// The mapped file, if the address is in one.
    pub(crate) module: Option<PathBuf>,
    /// The address as an offset into that file.
    pub(crate) module_offset: Option<u64>,
    /// The offset as a virtual address of the file's ELF image.
    pub(crate) static_address: Option<u64>,
    /// Whether the address is in a mapping with execute permission.
    pub(crate) executable: bool,
}

/// What the walk needs to know about the program's code and stack mappings.
pub(crate) trait CodeMap {
    /// The mapping and module location of `address`.
    fn locate(&mut self, address: u64) -> Location;
    /// The call frame information row that covers the run-time `address`, or why there is
    /// none.
    fn unwind_row(&mut self, address: u64) -> Result<Row, String>;
    /// Whether both addresses lie in the same mapping (one thread's stack).
    fn same_region(&mut self, a: u64, b: u64) -> bool;
}

/// How to find the canonical frame address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CfaRule {
    /// A register's value plus an offset.
    RegisterAndOffset { register: u16, offset: i64 },
    /// The value of a DWARF expression.
    Expression(Vec<u8>),
}

/// How to find a register's value in the caller, as `.eh_frame` states it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Rule {
    /// Not recoverable.
    Undefined,
    /// Unchanged by the callee.
    SameValue,
    /// Saved at `CFA + n`.
    Offset(i64),
    /// Is `CFA + n`.
    ValOffset(i64),
    /// Is in another register.
    Register(u16),
    /// Saved at the address a DWARF expression computes (with the CFA pushed first).
    Expression(Vec<u8>),
    /// Is the value a DWARF expression computes (with the CFA pushed first).
    ValExpression(Vec<u8>),
    /// A constant.
    Constant(u64),
    /// A rule defined by an augmenter, which the walk cannot follow.
    Architectural,
}

/// One row of a module's unwind table, owned so the walk needs no borrow of the module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Row {
    pub(crate) cfa: CfaRule,
    /// Rules of the registers the row names; the others keep their value (`rsp` becomes the
    /// CFA).
    pub(crate) rules: Vec<(u16, Rule)>,
    /// The CIE's return address column (16 on x86-64).
    pub(crate) return_address_register: u16,
    /// Whether the CIE marks a signal trampoline (augmentation `S`): the caller is the
    /// interrupted code, whose instruction pointer is exact.
    pub(crate) signal_frame: bool,
    /// The CIE's encoding, for evaluating expressions.
    pub(crate) encoding: gimli::Encoding,
}

impl Row {
    fn rule(&self, register: u16) -> Option<&Rule> {
        self.rules
            .iter()
            .find(|(number, _)| *number == register)
            .map(|(_, rule)| rule)
    }
}

/// Why one step could not find the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stop {
    end: WalkEnd,
    detail: String,
}

fn stop(end: WalkEnd, detail: impl Into<String>) -> Stop {
    Stop {
        end,
        detail: detail.into(),
    }
}

fn invalid(detail: impl Into<String>) -> Stop {
    stop(WalkEnd::InvalidUnwindInfo, detail)
}

/// Memory behind the read budget.
struct Budget<'a> {
    memory: &'a mut dyn Memory,
    reads: u32,
}

impl Budget<'_> {
    /// Reads `size` (at most 8) bytes at `address` as a little-endian number.
    fn sized(&mut self, address: u64, size: u8) -> Result<u64, Stop> {
        if self.reads >= MAX_READS {
            return Err(stop(
                WalkEnd::ReadLimit,
                format!("the walk used up its {MAX_READS} memory reads"),
            ));
        }
        self.reads += 1;
        let size = usize::from(size.min(8));
        let mut bytes = [0u8; 8];
        if !self.memory.read(address, &mut bytes[..size]) {
            return Err(stop(
                WalkEnd::UnreadableMemory,
                format!("the program's memory at {} could not be read", hex(address)),
            ));
        }
        Ok(u64::from_le_bytes(bytes))
    }

    fn word(&mut self, address: u64) -> Result<u64, Stop> {
        self.sized(address, 8)
    }
}

/// The caller's registers, and how they were found.
struct Step {
    registers: Registers,
    found_by: FrameSource,
    /// Whether the callee was a signal trampoline.
    from_signal_frame: bool,
}

/// Walks the stack from the registers at the fault. Never fails: a step that cannot be taken
/// ends the walk, and the backtrace says why.
pub(crate) fn walk(
    registers: Registers,
    memory: &mut dyn Memory,
    code: &mut dyn CodeMap,
) -> Backtrace {
    let mut budget = Budget { memory, reads: 0 };
    let mut frames = Vec::new();
    let mut current = registers;
    let mut kind = FrameKind::Fault;
    let mut found_by = FrameSource::Registers;
    let Some(mut pc) = current.get(RIP) else {
        return Backtrace {
            frames,
            end: WalkEnd::InvalidUnwindInfo,
            end_detail: "the instruction pointer is unknown".to_owned(),
            truncated: false,
            memory_reads: 0,
        };
    };
    let mut location = code.locate(pc);
    let ended = loop {
        let lookup = lookup_address(pc, kind);
        frames.push(frame(frames.len(), kind, found_by, pc, &current, location));
        if frames.len() >= MAX_FRAMES {
            break stop(
                WalkEnd::FrameLimit,
                format!("the walk stopped at its limit of {MAX_FRAMES} frames"),
            );
        }
        let step = match next_frame(&current, lookup, &mut budget, code) {
            Ok(step) => step,
            Err(stop) => break stop,
        };
        let index = frames.len();
        let Some(return_address) = step.registers.get(RIP) else {
            break invalid(format!("the return address of frame {index} is unknown"));
        };
        if return_address == 0 {
            break stop(
                WalkEnd::Outermost,
                format!("the return address of frame {index} is 0: the stack ends here"),
            );
        }
        let next_kind = if step.from_signal_frame {
            FrameKind::Interrupted
        } else {
            FrameKind::Call
        };
        let next_location = code.locate(lookup_address(return_address, next_kind));
        if !next_location.executable {
            break stop(
                WalkEnd::BadReturnAddress,
                format!(
                    "the return address {} found for frame {index} is not in executable mapped memory",
                    hex(return_address)
                ),
            );
        }
        let (Some(callee_sp), Some(caller_sp)) = (current.get(RSP), step.registers.get(RSP)) else {
            break invalid(format!("the stack pointer of frame {index} is unknown"));
        };
        // A signal handler may run on an alternate stack below or above the interrupted one;
        // everywhere else the stack grows down, so a caller's frame is above its callee's.
        if !step.from_signal_frame && caller_sp <= callee_sp {
            break stop(
                WalkEnd::StackNotAdvancing,
                format!(
                    "frame {index}'s stack pointer {} would not be above frame {}'s {}",
                    hex(caller_sp),
                    index - 1,
                    hex(callee_sp)
                ),
            );
        }
        current = step.registers;
        kind = next_kind;
        found_by = step.found_by;
        pc = return_address;
        location = next_location;
    };
    Backtrace {
        frames,
        end: ended.end,
        end_detail: ended.detail,
        truncated: ended.end == WalkEnd::FrameLimit,
        memory_reads: budget.reads,
    }
}

/// A backtrace of the faulting frame alone, for architectures the walk does not unwind.
#[cfg(any(target_arch = "aarch64", test))]
pub(crate) fn faulting_frame_only(
    pc: u64,
    sp: Option<u64>,
    code: &mut dyn CodeMap,
    end: WalkEnd,
    detail: &str,
) -> Backtrace {
    let mut registers = Registers::default();
    registers.set(RIP, Some(pc));
    registers.set(RSP, sp);
    let location = code.locate(pc);
    Backtrace {
        frames: vec![frame(
            0,
            FrameKind::Fault,
            FrameSource::Registers,
            pc,
            &registers,
            location,
        )],
        end,
        end_detail: detail.to_owned(),
        truncated: false,
        memory_reads: 0,
    }
}

/// The address that says where a frame is: a return address minus one lies in the call
/// instruction, inside the caller even when the call ends the procedure.
fn lookup_address(pc: u64, kind: FrameKind) -> u64 {
    match kind {
        FrameKind::Call => pc.saturating_sub(1),
        FrameKind::Fault | FrameKind::Interrupted => pc,
    }
}

fn frame(
    index: usize,
    kind: FrameKind,
    found_by: FrameSource,
    pc: u64,
    registers: &Registers,
    location: Location,
) -> Frame {
    Frame {
        index: u32::try_from(index).unwrap_or(u32::MAX),
        kind,
        found_by,
        instruction_pointer: hex(pc),
        stack_pointer: registers.get(RSP).map(hex),
        module: location.module,
        module_offset: location.module_offset.map(hex),
        static_address: location.static_address.map(hex),
    }
}

/// One step up: call frame information when the module has a row for the frame, else the
/// frame pointer.
fn next_frame(
    current: &Registers,
    lookup: u64,
    budget: &mut Budget<'_>,
    code: &mut dyn CodeMap,
) -> Result<Step, Stop> {
    match code.unwind_row(lookup) {
        Ok(row) => call_frame_info_step(&row, current, budget),
        Err(why) => frame_pointer_step(current, budget, code).map_err(|stop| Stop {
            end: stop.end,
            detail: format!(
                "{} (no call frame information for {}: {why})",
                stop.detail,
                hex(lookup)
            ),
        }),
    }
}

fn call_frame_info_step(
    row: &Row,
    current: &Registers,
    budget: &mut Budget<'_>,
) -> Result<Step, Stop> {
    let cfa = match &row.cfa {
        CfaRule::RegisterAndOffset { register, offset } => current
            .get(*register)
            .ok_or_else(|| {
                invalid(format!(
                    "the CFA needs register {register}, which is unknown"
                ))
            })?
            .checked_add_signed(*offset)
            .ok_or_else(|| invalid("the CFA overflows"))?,
        CfaRule::Expression(bytes) => evaluate(bytes, row.encoding, current, budget, None)?,
    };
    let return_address = match row.rule(row.return_address_register) {
        None | Some(Rule::Undefined) => {
            return Err(stop(
                WalkEnd::Outermost,
                "the call frame information marks the return address undefined: the outermost frame",
            ));
        }
        Some(rule) => apply(rule, row.return_address_register, cfa, row, current, budget)?
            .ok_or_else(|| invalid("the return address rule gives no value"))?,
    };
    let mut caller = Registers::default();
    for register in 0..REGISTER_COUNT as u16 {
        if register == RIP {
            continue;
        }
        let value = match row.rule(register) {
            Some(rule) => apply(rule, register, cfa, row, current, budget)?,
            // The stack pointer of the caller is the CFA by definition; other registers the
            // row does not name were not changed.
            None if register == RSP => Some(cfa),
            None => current.get(register),
        };
        caller.set(register, value);
    }
    caller.set(RIP, Some(return_address));
    Ok(Step {
        registers: caller,
        found_by: FrameSource::CallFrameInfo,
        from_signal_frame: row.signal_frame,
    })
}

fn apply(
    rule: &Rule,
    register: u16,
    cfa: u64,
    row: &Row,
    current: &Registers,
    budget: &mut Budget<'_>,
) -> Result<Option<u64>, Stop> {
    let at = |offset: i64| {
        cfa.checked_add_signed(offset)
            .ok_or_else(|| invalid(format!("register {register}'s save slot overflows")))
    };
    Ok(match rule {
        Rule::Undefined | Rule::Architectural => None,
        Rule::SameValue => current.get(register),
        Rule::Offset(offset) => Some(budget.word(at(*offset)?)?),
        Rule::ValOffset(offset) => Some(at(*offset)?),
        Rule::Register(other) => current.get(*other),
        Rule::Expression(bytes) => {
            let address = evaluate(bytes, row.encoding, current, budget, Some(cfa))?;
            Some(budget.word(address)?)
        }
        Rule::ValExpression(bytes) => {
            Some(evaluate(bytes, row.encoding, current, budget, Some(cfa))?)
        }
        Rule::Constant(value) => Some(*value),
    })
}

/// Evaluates a CFI expression against the frame's registers and the program's memory.
fn evaluate(
    bytes: &[u8],
    encoding: gimli::Encoding,
    current: &Registers,
    budget: &mut Budget<'_>,
    initial: Option<u64>,
) -> Result<u64, Stop> {
    let failed = |error: gimli::Error| invalid(format!("a DWARF expression failed: {error}"));
    let expression = gimli::Expression(EndianSlice::new(bytes, LittleEndian));
    let mut evaluation = expression.evaluation(encoding);
    evaluation.set_max_iterations(MAX_EXPRESSION_STEPS);
    if let Some(value) = initial {
        evaluation.set_initial_value(value);
    }
    let mut state = evaluation.evaluate().map_err(failed)?;
    loop {
        state = match state {
            EvaluationResult::Complete => break,
            EvaluationResult::RequiresMemory {
                address,
                size,
                space: None,
                ..
            } => {
                let value = budget.sized(address, size)?;
                evaluation
                    .resume_with_memory(gimli::Value::Generic(value))
                    .map_err(failed)?
            }
            EvaluationResult::RequiresRegister { register, .. } => {
                let value = current.get(register.0).ok_or_else(|| {
                    invalid(format!(
                        "a DWARF expression needs register {}, which is unknown",
                        register.0
                    ))
                })?;
                evaluation
                    .resume_with_register(gimli::Value::Generic(value))
                    .map_err(failed)?
            }
            _ => return Err(invalid("a DWARF expression needs what a stack walk lacks")),
        };
    }
    let pieces = evaluation.result();
    match pieces.as_slice() {
        [piece] => match &piece.location {
            gimli::Location::Address { address } => Ok(*address),
            gimli::Location::Value { value } => value.to_u64(u64::MAX).map_err(failed),
            _ => Err(invalid("a DWARF expression gave no address")),
        },
        _ => Err(invalid("a DWARF expression gave no single value")),
    }
}

/// The conventional frame: `push rbp; mov rbp, rsp` leaves the caller's `rbp` at `[rbp]` and
/// the return address at `[rbp + 8]`, and the caller's stack pointer is `rbp + 16`.
fn frame_pointer_step(
    current: &Registers,
    budget: &mut Budget<'_>,
    code: &mut dyn CodeMap,
) -> Result<Step, Stop> {
    let rbp = current
        .get(RBP)
        .ok_or_else(|| stop(WalkEnd::NoUnwindInfo, "the frame pointer is unknown"))?;
    if rbp == 0 {
        return Err(stop(
            WalkEnd::Outermost,
            "the frame pointer is 0, which marks the outermost frame",
        ));
    }
    if !rbp.is_multiple_of(8) {
        return Err(stop(
            WalkEnd::NoUnwindInfo,
            format!(
                "the frame pointer {} is not aligned, so it is not one",
                hex(rbp)
            ),
        ));
    }
    if let Some(sp) = current.get(RSP) {
        if rbp < sp {
            return Err(stop(
                WalkEnd::StackNotAdvancing,
                format!(
                    "the frame pointer {} is below the stack pointer {}",
                    hex(rbp),
                    hex(sp)
                ),
            ));
        }
        if !code.same_region(sp, rbp) {
            return Err(stop(
                WalkEnd::NoUnwindInfo,
                format!(
                    "the frame pointer {} is not on the stack that holds the stack pointer {}",
                    hex(rbp),
                    hex(sp)
                ),
            ));
        }
    }
    let overflow = || invalid(format!("the frame at {} overflows", hex(rbp)));
    let saved_rbp = budget.word(rbp)?;
    let return_address = budget.word(rbp.checked_add(8).ok_or_else(overflow)?)?;
    let mut caller = Registers::default();
    caller.set(RSP, Some(rbp.checked_add(16).ok_or_else(overflow)?));
    caller.set(RBP, Some(saved_rbp));
    caller.set(RIP, Some(return_address));
    Ok(Step {
        registers: caller,
        found_by: FrameSource::FramePointer,
        from_signal_frame: false,
    })
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    const CODE: std::ops::Range<u64> = 0x1000..0x9000;
    const STACK: std::ops::Range<u64> = 0x7000_0000..0x7001_0000;

    /// A stack of words and a code region where `rows` gives call frame information for some
    /// ranges (the rest has none).
    #[derive(Default)]
    struct Fake {
        words: HashMap<u64, u64>,
        rows: Vec<(std::ops::Range<u64>, Row)>,
        reads: u32,
    }

    impl Memory for Fake {
        fn read(&mut self, address: u64, buffer: &mut [u8]) -> bool {
            self.reads += 1;
            if !STACK.contains(&address) || !address.is_multiple_of(8) {
                return false;
            }
            let word = self.words.get(&address).copied().unwrap_or(0);
            let bytes = word.to_le_bytes();
            buffer.copy_from_slice(&bytes[..buffer.len()]);
            true
        }
    }

    impl CodeMap for Fake {
        fn locate(&mut self, address: u64) -> Location {
            let in_code = CODE.contains(&address);
            Location {
                module: in_code.then(|| PathBuf::from("/bin/fake")),
                module_offset: in_code.then(|| address - CODE.start),
                static_address: in_code.then_some(address),
                executable: in_code,
            }
        }
        fn unwind_row(&mut self, address: u64) -> Result<Row, String> {
            self.rows
                .iter()
                .find(|(range, _)| range.contains(&address))
                .map(|(_, row)| row.clone())
                .ok_or_else(|| "none in the fake".to_owned())
        }
        fn same_region(&mut self, a: u64, b: u64) -> bool {
            STACK.contains(&a) && STACK.contains(&b)
        }
    }

    fn encoding() -> gimli::Encoding {
        gimli::Encoding {
            address_size: 8,
            format: gimli::Format::Dwarf32,
            version: 1,
        }
    }

    /// A leaf-like row: CFA = rsp + `size`, return address at CFA - 8.
    fn rsp_row(size: i64) -> Row {
        Row {
            cfa: CfaRule::RegisterAndOffset {
                register: RSP,
                offset: size,
            },
            rules: vec![(RIP, Rule::Offset(-8))],
            return_address_register: RIP,
            signal_frame: false,
            encoding: encoding(),
        }
    }

    fn registers(pc: u64, sp: u64, bp: u64) -> Registers {
        let mut registers = Registers::default();
        registers.set(RIP, Some(pc));
        registers.set(RSP, Some(sp));
        registers.set(RBP, Some(bp));
        registers
    }

    fn statics(backtrace: &Backtrace) -> Vec<&str> {
        backtrace
            .frames
            .iter()
            .map(|f| f.static_address.as_deref().unwrap_or("-"))
            .collect()
    }

    #[test]
    fn call_frame_info_walk_ends_at_an_undefined_return_address() {
        let mut fake = Fake::default();
        // 0x1000..0x1100: frame of 16 bytes; 0x2000..0x2100: 32 bytes; 0x3000..: outermost.
        fake.rows.push((0x1000..0x1100, rsp_row(16)));
        fake.rows.push((0x2000..0x2100, rsp_row(32)));
        let mut outer = rsp_row(8);
        outer.rules = vec![(RIP, Rule::Undefined)];
        fake.rows.push((0x3000..0x3100, outer));
        let sp = STACK.start + 0x100;
        fake.words.insert(sp + 8, 0x2010); // return into 0x2000's function
        fake.words.insert(sp + 16 + 24, 0x3020);
        let backtrace = walk(
            registers(0x1004, sp, 0),
            &mut fake.clone_memory(),
            &mut fake,
        );
        assert_eq!(statics(&backtrace), ["0x1004", "0x200f", "0x301f"]);
        assert_eq!(
            backtrace.end,
            WalkEnd::Outermost,
            "{}",
            backtrace.end_detail
        );
        assert!(!backtrace.truncated);
        assert_eq!(backtrace.memory_reads, 2);
        let kinds: Vec<_> = backtrace.frames.iter().map(|f| f.kind).collect();
        assert_eq!(kinds, [FrameKind::Fault, FrameKind::Call, FrameKind::Call]);
        let sources: Vec<_> = backtrace.frames.iter().map(|f| f.found_by).collect();
        assert_eq!(
            sources,
            [
                FrameSource::Registers,
                FrameSource::CallFrameInfo,
                FrameSource::CallFrameInfo
            ]
        );
        assert_eq!(
            backtrace.frames[2].stack_pointer.as_deref(),
            Some(hex(sp + 16 + 32).as_str())
        );
    }

    impl Fake {
        /// The same memory, as a separate value so the fake can be both memory and code map.
        fn clone_memory(&self) -> Fake {
            Fake {
                words: self.words.clone(),
                rows: Vec::new(),
                reads: 0,
            }
        }
    }

    #[test]
    fn frame_pointer_chain_is_followed_where_no_cfi_exists() {
        let mut fake = Fake::default();
        let sp = STACK.start + 0x100;
        let (bp0, bp1, bp2) = (sp + 0x20, sp + 0x60, sp + 0xa0);
        fake.words.extend([
            (bp0, bp1),
            (bp0 + 8, 0x2222),
            (bp1, bp2),
            (bp1 + 8, 0x3333),
            (bp2, 0),
            (bp2 + 8, 0x4444),
        ]);
        let backtrace = walk(
            registers(0x1111, sp, bp0),
            &mut fake.clone_memory(),
            &mut fake,
        );
        assert_eq!(
            statics(&backtrace),
            ["0x1111", "0x2221", "0x3332", "0x4443"]
        );
        assert_eq!(
            backtrace.end,
            WalkEnd::Outermost,
            "{}",
            backtrace.end_detail
        );
        assert!(backtrace.end_detail.contains("frame pointer is 0"));
        assert!(
            backtrace.frames[1..]
                .iter()
                .all(|f| f.found_by == FrameSource::FramePointer)
        );
    }

    #[test]
    fn a_frame_pointer_loop_stops_without_repeating() {
        let mut fake = Fake::default();
        let sp = STACK.start + 0x100;
        let bp = sp + 0x20;
        // The saved frame pointer points at itself.
        fake.words.extend([(bp, bp), (bp + 8, 0x2222)]);
        let backtrace = walk(
            registers(0x1111, sp, bp),
            &mut fake.clone_memory(),
            &mut fake,
        );
        assert_eq!(statics(&backtrace), ["0x1111", "0x2221"]);
        assert_eq!(backtrace.end, WalkEnd::StackNotAdvancing);
        assert!(
            backtrace
                .end_detail
                .contains(&format!("frame pointer {}", hex(bp))),
            "{}",
            backtrace.end_detail
        );
    }

    #[test]
    fn bad_return_addresses_and_unreadable_stacks_are_named() {
        let mut fake = Fake::default();
        fake.rows.push((0x1000..0x1100, rsp_row(16)));
        let sp = STACK.start + 0x100;
        fake.words.insert(sp + 8, 0x4242_4242_4242_4242);
        let backtrace = walk(
            registers(0x1004, sp, 0),
            &mut fake.clone_memory(),
            &mut fake,
        );
        assert_eq!(statics(&backtrace), ["0x1004"]);
        assert_eq!(backtrace.end, WalkEnd::BadReturnAddress);
        assert!(backtrace.end_detail.contains("0x4242424242424242"));

        // A stack pointer outside readable memory.
        let backtrace = walk(
            registers(0x1004, 0x10, 0),
            &mut fake.clone_memory(),
            &mut fake,
        );
        assert_eq!(backtrace.end, WalkEnd::UnreadableMemory);
        assert!(
            backtrace.end_detail.contains("0x18"),
            "{}",
            backtrace.end_detail
        );

        // A return address of zero ends the stack.
        fake.words.insert(sp + 8, 0);
        let backtrace = walk(
            registers(0x1004, sp, 0),
            &mut fake.clone_memory(),
            &mut fake,
        );
        assert_eq!(backtrace.end, WalkEnd::Outermost);

        // A frame in anonymous memory without CFI or frame pointer.
        let backtrace = walk(
            registers(0xdead_0000, sp, 0x5),
            &mut fake.clone_memory(),
            &mut fake,
        );
        assert_eq!(backtrace.frames.len(), 1);
        assert_eq!(backtrace.frames[0].module, None);
        assert_eq!(backtrace.end, WalkEnd::NoUnwindInfo);
    }

    #[test]
    fn deep_recursion_is_cut_at_the_frame_limit() {
        let mut fake = Fake::default();
        fake.rows.push((0x1000..0x1100, rsp_row(16)));
        let sp = STACK.start + 0x100;
        for frame in 0..200 {
            fake.words.insert(sp + 16 * frame + 8, 0x1050);
        }
        let backtrace = walk(
            registers(0x1004, sp, 0),
            &mut fake.clone_memory(),
            &mut fake,
        );
        assert_eq!(backtrace.frames.len(), MAX_FRAMES);
        assert_eq!(backtrace.end, WalkEnd::FrameLimit);
        assert!(backtrace.truncated);
        assert_eq!(backtrace.memory_reads, MAX_FRAMES as u32 - 1);
    }

    #[test]
    fn expressions_are_evaluated_and_bounded() {
        // The PLT's CFA: rsp + 8 + ((rip & 15) >= 11) * 8, as binutils writes it.
        let plt = vec![
            0x77, 0x08, // DW_OP_breg7 (rsp) 8
            0x80, 0x00, // DW_OP_breg16 (rip) 0
            0x3f, 0x1a, // DW_OP_lit15, DW_OP_and
            0x3b, 0x2a, // DW_OP_lit11, DW_OP_ge
            0x33, 0x24, 0x22, // DW_OP_lit3, DW_OP_shl, DW_OP_plus
        ];
        let mut fake = Fake::default();
        let mut row = rsp_row(0);
        row.cfa = CfaRule::Expression(plt);
        fake.rows.push((0x1000..0x1100, row));
        let sp = STACK.start + 0x100;
        // At 0x100b the CFA is rsp + 16; the return address sits at CFA - 8.
        fake.words.insert(sp + 8, 0x2010);
        let mut outer = rsp_row(8);
        outer.rules = vec![(RIP, Rule::Undefined)];
        fake.rows.push((0x2000..0x2100, outer));
        let backtrace = walk(
            registers(0x100b, sp, 0),
            &mut fake.clone_memory(),
            &mut fake,
        );
        assert_eq!(
            statics(&backtrace),
            ["0x100b", "0x200f"],
            "{}",
            backtrace.end_detail
        );

        // An endless loop (DW_OP_skip -3) is cut by the step bound.
        let mut fake = Fake::default();
        let mut row = rsp_row(0);
        row.cfa = CfaRule::Expression(vec![0x2f, 0xfd, 0xff]);
        fake.rows.push((0x1000..0x1100, row));
        let backtrace = walk(
            registers(0x1004, sp, 0),
            &mut fake.clone_memory(),
            &mut fake,
        );
        assert_eq!(
            backtrace.end,
            WalkEnd::InvalidUnwindInfo,
            "{}",
            backtrace.end_detail
        );
        assert_eq!(backtrace.frames.len(), 1);
    }

    #[test]
    fn signal_frames_allow_a_lower_stack_and_keep_the_exact_address() {
        let mut fake = Fake::default();
        // The trampoline's registers come from a saved context at rsp: rip at +0, rsp at +8.
        let mut trampoline = rsp_row(0);
        trampoline.rules = vec![(RIP, Rule::Offset(0)), (RSP, Rule::Offset(8))];
        trampoline.signal_frame = true;
        fake.rows.push((0x1000..0x1100, trampoline));
        let mut outer = rsp_row(8);
        outer.rules = vec![(RIP, Rule::Undefined)];
        fake.rows.push((0x2000..0x2100, outer));
        let sp = STACK.start + 0x800;
        fake.words.insert(sp, 0x2040);
        fake.words.insert(sp + 8, STACK.start + 0x100);
        let backtrace = walk(
            registers(0x1004, sp, 0),
            &mut fake.clone_memory(),
            &mut fake,
        );
        assert_eq!(
            statics(&backtrace),
            ["0x1004", "0x2040"],
            "{}",
            backtrace.end_detail
        );
        assert_eq!(backtrace.frames[1].kind, FrameKind::Interrupted);
        assert_eq!(backtrace.end, WalkEnd::Outermost);
    }

    #[test]
    fn a_faulting_frame_alone_says_why() {
        let mut fake = Fake::default();
        let backtrace = faulting_frame_only(
            0x1234,
            Some(STACK.start),
            &mut fake,
            WalkEnd::UnsupportedArchitecture,
            "not here",
        );
        assert_eq!(statics(&backtrace), ["0x1234"]);
        assert_eq!(backtrace.end, WalkEnd::UnsupportedArchitecture);
        assert_eq!(backtrace.end_detail, "not here");
    }

    proptest::proptest! {
        /// Random stacks and registers: the walk always ends, within its bounds, without a
        /// panic.
        #[test]
        fn random_stacks_end_within_bounds(
            words in proptest::collection::vec(0u64..0x1_0000_0000, 0..256),
            pointers in proptest::collection::vec(0usize..256, 0..256),
            pc in 0u64..0xa000,
            sp_slot in 0u64..256,
            bp_slot in 0u64..300,
            cfi in proptest::bool::ANY,
        ) {
            let mut fake = Fake::default();
            let base = STACK.start + 0x1000;
            for (index, word) in words.iter().enumerate() {
                fake.words.insert(base + 8 * index as u64, *word);
            }
            // Some slots point back into the stack, as saved frame pointers do.
            for (index, target) in pointers.iter().enumerate() {
                fake.words.insert(base + 8 * index as u64, base + 8 * *target as u64);
            }
            if cfi {
                fake.rows.push((0x1000..0x5000, rsp_row(16)));
                let mut by_rbp = rsp_row(0);
                by_rbp.cfa = CfaRule::RegisterAndOffset { register: RBP, offset: 16 };
                by_rbp.rules = vec![(RIP, Rule::Offset(-8)), (RBP, Rule::Offset(-16))];
                fake.rows.push((0x5000..0x7000, by_rbp));
            }
            let mut memory = fake.clone_memory();
            let backtrace = walk(
                registers(pc, base + 8 * sp_slot, base + 8 * bp_slot),
                &mut memory,
                &mut fake,
            );
            proptest::prop_assert!(!backtrace.frames.is_empty());
            proptest::prop_assert!(backtrace.frames.len() <= MAX_FRAMES);
            proptest::prop_assert!(backtrace.memory_reads <= MAX_READS);
            proptest::prop_assert_eq!(memory.reads, backtrace.memory_reads);
            proptest::prop_assert_eq!(backtrace.truncated, backtrace.end == WalkEnd::FrameLimit);
        }
    }
}
