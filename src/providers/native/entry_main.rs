//! `main` of a stripped executable where the file itself states it: the first argument the ELF
//! entry code (`_start`) passes to `__libc_start_main`, read by decoding the entry's first
//! instructions. (Mach-O's `LC_MAIN` is read with the other load commands in `procedures`.)

use iced_x86::{Code, Decoder, DecoderOptions, FlowControl, OpKind, Register};
use yaxpeax_arch::{Decoder as _, U8Reader};
use yaxpeax_arm::armv8::a64::{InstDecoder, Opcode, Operand, SizeCode};

use super::types::{ImportEntry, SectionInfo};
use crate::vocabulary::ImportKind;

/// Instructions of `_start` read before the call: glibc's is a dozen; a longer prologue is not
/// the pattern this reads, and is left unnamed rather than guessed at.
const MAX_ENTRY_INSTRUCTIONS: usize = 32;

/// Whether an import names glibc's start routine (with or without its symbol version).
fn is_libc_start_main(import: &ImportEntry) -> bool {
    import.name == "__libc_start_main" || import.name.starts_with("__libc_start_main@")
}

/// Whether `address` is a PLT stub (`plt`) or pointer slot (`got`) of `__libc_start_main`.
fn reaches_libc_start_main(imports: &[ImportEntry], address: u64, kind: ImportKind) -> bool {
    imports
        .iter()
        .any(|i| i.address == address && i.kind == kind && is_libc_start_main(i))
}

/// The bytes of the section holding `address`, from `address` to the section's end.
fn code_at<'a>(bytes: &'a [u8], sections: &[SectionInfo], address: u64) -> Option<&'a [u8]> {
    let s = sections
        .iter()
        .find(|s| s.executable && address >= s.address && address - s.address < s.size)?;
    let offset = usize::try_from(s.file_offset?.checked_add(address - s.address)?).ok()?;
    let end = usize::try_from(s.file_offset?.checked_add(s.file_size)?).ok()?;
    bytes.get(offset..end.min(bytes.len()))
}

/// The address `_start` at `entry` passes as `main` to `__libc_start_main`, for x86-64 and
/// AArch64 ELF; `None` when the entry code is not that call. `slot_value` gives the pointer a
/// GOT slot holds once relocated (AArch64 PIE loads `main` from one).
pub(crate) fn libc_start_main_argument(
    machine: object::Architecture,
    bytes: &[u8],
    sections: &[SectionInfo],
    imports: &[ImportEntry],
    entry: u64,
    slot_value: &dyn Fn(u64) -> Option<u64>,
) -> Option<u64> {
    let code = code_at(bytes, sections, entry)?;
    match machine {
        object::Architecture::X86_64 => x86_64_argument(code, entry, imports),
        object::Architecture::Aarch64 => aarch64_argument(code, entry, imports, slot_value),
        _ => None,
    }
}

fn x86_64_argument(code: &[u8], entry: u64, imports: &[ImportEntry]) -> Option<u64> {
    let mut decoder = Decoder::with_ip(64, code, entry, DecoderOptions::NONE);
    let mut rdi: Option<u64> = None;
    for _ in 0..MAX_ENTRY_INSTRUCTIONS {
        if !decoder.can_decode() {
            return None;
        }
        let instr = decoder.decode();
        if instr.is_invalid() {
            return None;
        }
        match instr.flow_control() {
            FlowControl::Call => {
                return reaches_libc_start_main(
                    imports,
                    instr.near_branch_target(),
                    ImportKind::Plt,
                )
                .then_some(rdi)
                .flatten();
            }
            FlowControl::IndirectCall => {
                let through_slot = instr.op0_kind() == OpKind::Memory
                    && instr.is_ip_rel_memory_operand()
                    && reaches_libc_start_main(
                        imports,
                        instr.ip_rel_memory_address(),
                        ImportKind::Got,
                    );
                return through_slot.then_some(rdi).flatten();
            }
            FlowControl::Next => {}
            _ => return None,
        }
        if instr.op_count() == 0
            || instr.op0_kind() != OpKind::Register
            || !matches!(instr.op0_register(), Register::RDI | Register::EDI)
        {
            continue;
        }
        // Only the forms that put an address in rdi count; any other write makes it unknown.
        rdi = match instr.code() {
            Code::Lea_r64_m if instr.is_ip_rel_memory_operand() => {
                Some(instr.ip_rel_memory_address())
            }
            Code::Mov_rm64_imm32 | Code::Mov_r64_imm64 | Code::Mov_r32_imm32 => {
                Some(instr.immediate(1))
            }
            _ => None,
        };
    }
    None
}

/// What the AArch64 reader knows `x0` holds.
#[derive(Clone, Copy)]
enum X0 {
    Unknown,
    /// A page from `adrp`.
    Page(u64),
    /// An address (`adrp` + `add`, or a pointer loaded from a known slot).
    Address(u64),
}

fn aarch64_argument(
    code: &[u8],
    entry: u64,
    imports: &[ImportEntry],
    slot_value: &dyn Fn(u64) -> Option<u64>,
) -> Option<u64> {
    let decoder = InstDecoder::default();
    let mut x0 = X0::Unknown;
    let is_x0 = |op: &Operand| {
        matches!(
            op,
            Operand::Register(SizeCode::X, 0) | Operand::RegisterOrSP(SizeCode::X, 0)
        )
    };
    for (index, word) in code
        .chunks_exact(4)
        .take(MAX_ENTRY_INSTRUCTIONS)
        .enumerate()
    {
        let address = entry + 4 * index as u64;
        let mut reader = U8Reader::new(word);
        let inst = std::panic::catch_unwind(move || decoder.decode(&mut reader).ok())
            .ok()
            .flatten()?;
        let pc_offset = inst.operands.iter().find_map(|op| match op {
            Operand::PCOffset(off) => Some(*off),
            _ => None,
        });
        match inst.opcode {
            Opcode::BL => {
                let target = address.wrapping_add_signed(pc_offset?);
                return match (
                    reaches_libc_start_main(imports, target, ImportKind::Plt),
                    x0,
                ) {
                    (true, X0::Address(main)) => Some(main),
                    _ => None,
                };
            }
            Opcode::B
            | Opcode::BR
            | Opcode::BLR
            | Opcode::RET
            | Opcode::Bcc(_)
            | Opcode::CBZ
            | Opcode::CBNZ => return None,
            _ => {}
        }
        if !is_x0(&inst.operands[0]) {
            continue;
        }
        x0 = match (inst.opcode, x0, &inst.operands[1], &inst.operands[2]) {
            (Opcode::ADRP, _, _, _) => X0::Page((address & !0xfff).wrapping_add_signed(pc_offset?)),
            (Opcode::ADR, _, _, _) => X0::Address(address.wrapping_add_signed(pc_offset?)),
            (Opcode::ADD, X0::Page(page), base, Operand::Immediate(imm)) if is_x0(base) => {
                X0::Address(page.wrapping_add(u64::from(*imm)))
            }
            (Opcode::LDR, X0::Page(page), Operand::RegPreIndex(0, off, false), _) => {
                slot_value(page.wrapping_add_signed(i64::from(*off)))
                    .map_or(X0::Unknown, X0::Address)
            }
            (Opcode::LDR, _, Operand::PCOffset(off), _) => {
                slot_value(address.wrapping_add_signed(*off)).map_or(X0::Unknown, X0::Address)
            }
            _ => X0::Unknown,
        };
    }
    None
}

/// Instructions of mingw-w64's `__tmainCRTStartup` read while looking for its call of `main`
/// (about 200 in the builds of the corpus).
const MAX_CRT_INSTRUCTIONS: usize = 1024;

/// `main` of an x86 or x86-64 PE built by mingw-w64, as its C runtime start states it: the
/// entry (`mainCRTStartup`) calls (x86-64) or jumps to (x86) `__tmainCRTStartup`, which loads
/// `argc`, `argv` and `envp` from its globals (x86-64: into `ecx`, `rdx`, `r8`; x86: onto the
/// stack at `[esp]`, `[esp+4]`, `[esp+8]`), calls `main` and stores the result (`mainret`). The
/// first direct call made so is `main`; `None` when the code is not that pattern.
pub(crate) fn mingw_main(
    bytes: &[u8],
    sections: &[SectionInfo],
    entry: u64,
    bitness: u32,
) -> Option<u64> {
    let first_transfer = |address: u64| -> Option<u64> {
        let code = code_at(bytes, sections, address)?;
        let mut decoder = Decoder::with_ip(bitness, code, address, DecoderOptions::NONE);
        for instruction in decoder.iter().take(MAX_ENTRY_INSTRUCTIONS) {
            let direct = matches!(
                instruction.op0_kind(),
                OpKind::NearBranch32 | OpKind::NearBranch64
            );
            if direct
                && matches!(
                    instruction.flow_control(),
                    FlowControl::Call | FlowControl::UnconditionalBranch
                )
            {
                return Some(instruction.near_branch_target());
            }
            if instruction.flow_control() == FlowControl::Return {
                return None;
            }
        }
        None
    };
    let crt = first_transfer(entry)?;
    let code = code_at(bytes, sections, crt)?;
    let mut decoder = Decoder::with_ip(bitness, code, crt, DecoderOptions::NONE);
    // Where each argument was last put from a global, by instruction count: x86-64's argument
    // registers, x86's stack slots (loaded into a register first).
    let mut loaded: [Option<usize>; 3] = [None; 3];
    let mut candidate: Option<(u64, usize)> = None;
    for (n, instruction) in decoder.iter().take(MAX_CRT_INSTRUCTIONS).enumerate() {
        if let Some((target, at)) = candidate {
            // `mov [mainret], eax` within two instructions of the call.
            let to_global = if bitness == 64 {
                instruction.memory_base() == Register::RIP
            } else {
                instruction.memory_base() == Register::None
                    && instruction.memory_index() == Register::None
            };
            if n - at <= 2
                && matches!(
                    instruction.code(),
                    Code::Mov_rm32_r32 | Code::Mov_moffs32_EAX
                )
                && instruction.op0_kind() == OpKind::Memory
                && to_global
                && instruction.op1_register() == Register::EAX
            {
                return Some(target);
            }
            if n - at > 2 {
                candidate = None;
            }
        }
        if instruction.flow_control() == FlowControl::Return {
            return None;
        }
        let slot = if bitness == 64 {
            match instruction.op0_register() {
                Register::ECX => Some(0),
                Register::RDX => Some(1),
                Register::R8 => Some(2),
                _ => None,
            }
        } else if instruction.code() == Code::Mov_rm32_r32
            && instruction.op0_kind() == OpKind::Memory
            && instruction.memory_base() == Register::ESP
            && instruction.memory_index() == Register::None
        {
            match instruction.memory_displacement32() {
                0 => Some(0),
                4 => Some(1),
                8 => Some(2),
                _ => None,
            }
        } else {
            None
        };
        if let Some(slot) = slot {
            let from_global = if bitness == 64 {
                instruction.mnemonic() == iced_x86::Mnemonic::Mov
                    && instruction.op_count() == 2
                    && instruction.op1_kind() == OpKind::Memory
                    && instruction.memory_base() == Register::RIP
            } else {
                // The store itself; the register it stores was loaded from a global just
                // before (`mov eax, [argc]; mov [esp], eax`).
                true
            };
            loaded[slot] = from_global.then_some(n);
        }
        if instruction.flow_control() == FlowControl::Call
            && matches!(
                instruction.op0_kind(),
                OpKind::NearBranch32 | OpKind::NearBranch64
            )
        {
            let recent = loaded.iter().all(|l| l.is_some_and(|l| n - l <= 8));
            if recent {
                candidate = Some((instruction.near_branch_target(), n));
            }
            loaded = [None; 3];
        }
    }
    None
}

/// Where the entry's first instructions jump to (before any return): the C runtime's start
/// proper (`mainCRTStartup` calls `__security_init_cookie`, then jumps to
/// `__scrt_common_main_seh`).
fn entry_jumps(bytes: &[u8], sections: &[SectionInfo], entry: u64, bitness: u32) -> Vec<u64> {
    let Some(code) = code_at(bytes, sections, entry) else {
        return Vec::new();
    };
    let mut decoder = Decoder::with_ip(bitness, code, entry, DecoderOptions::NONE);
    decoder
        .iter()
        .take(MAX_ENTRY_INSTRUCTIONS)
        .take_while(|i| i.flow_control() != FlowControl::Return)
        .filter(|i| {
            i.flow_control() == FlowControl::UnconditionalBranch
                && matches!(i.op0_kind(), OpKind::NearBranch32 | OpKind::NearBranch64)
        })
        .map(|i| i.near_branch_target())
        .collect()
}

/// Imports through which the C runtime start of an MSVC program gets what it passes to the
/// program's entry function, and the name that function has: `main` (`__getmainargs` of
/// msvcrt.dll, the UCRT's `__p___argv` and `_get_initial_narrow_environment`), `wmain`, and
/// `WinMain`/`wWinMain` (the UCRT's command-line getters, msvcrt.dll's `_acmdln`).
const MSVC_ARGUMENTS: &[(&str, &str)] = &[
    ("__getmainargs", "main"),
    ("__p___argc", "main"),
    ("__p___argv", "main"),
    ("__p___initenv", "main"),
    ("_get_initial_narrow_environment", "main"),
    ("__wgetmainargs", "wmain"),
    ("__p___wargv", "wmain"),
    ("__p___winitenv", "wmain"),
    ("_get_initial_wide_environment", "wmain"),
    ("_get_narrow_winmain_command_line", "WinMain"),
    ("_acmdln", "WinMain"),
    ("__p__acmdln", "WinMain"),
    ("_get_wide_winmain_command_line", "wWinMain"),
    ("_wcmdln", "wWinMain"),
    ("__p__wcmdln", "wWinMain"),
];

/// Imports the C runtime start passes the entry function's result to.
const MSVC_EXITS: &[&str] = &["exit", "_exit", "_cexit", "_c_exit"];

/// Instructions read after the candidate call for the call of `exit` its result goes to (the
/// UCRT checks whether the program is managed in between).
const MAX_EXIT_DISTANCE: usize = 24;

/// `main` (or `wmain`, `WinMain`, `wWinMain`) of an x86 or x86-64 PE whose MSVC C runtime start
/// calls it, as that start states it: after a call (or load) through the import that gives the
/// arguments (`__getmainargs`, `__p___argv`, `_get_narrow_winmain_command_line`, ...), the
/// first direct call that is not an import's thunk is the program's, when its result is passed
/// on to `exit` (or `_cexit`) within a few instructions. The start is the entry, or the code
/// the entry jumps to (the UCRT's `mainCRTStartup` jumps to `__scrt_common_main_seh`). A C
/// runtime linked statically calls its own unnamed functions instead, and is not read.
pub(crate) fn msvc_main(
    bytes: &[u8],
    sections: &[SectionInfo],
    imports: &[ImportEntry],
    entry: u64,
    bitness: u32,
) -> Option<(u64, &'static str)> {
    let import_at = |address: u64| import_at(imports, address);
    let thunk = |address: u64| {
        imports
            .iter()
            .any(|i| i.address == address && i.kind == ImportKind::Thunk)
    };
    // The import a call or load of this instruction goes through: `call [slot]`, `mov eax,
    // [slot]`, or `call thunk`.
    let through = |instruction: &iced_x86::Instruction| -> Option<&str> {
        if instruction.op_kind(0) == OpKind::NearBranch32
            || instruction.op_kind(0) == OpKind::NearBranch64
        {
            let target = instruction.near_branch_target();
            return thunk(target).then(|| import_at(target)).flatten();
        }
        absolute_memory(instruction).and_then(import_at)
    };
    let read = |start: u64| -> Option<(u64, &'static str)> {
        let code = code_at(bytes, sections, start)?;
        let decoder = Decoder::with_ip(bitness, code, start, DecoderOptions::NONE);
        let instructions: Vec<iced_x86::Instruction> =
            decoder.into_iter().take(MAX_CRT_INSTRUCTIONS).collect();
        let mut name: Option<&'static str> = None;
        for (n, instruction) in instructions.iter().enumerate() {
            if instruction.is_invalid() {
                return None;
            }
            if let Some(import) = through(instruction)
                && let Some(&(_, called)) = MSVC_ARGUMENTS.iter().find(|(i, _)| *i == import)
            {
                name = Some(called);
                continue;
            }
            let Some(called) = name else { continue };
            if instruction.flow_control() != FlowControl::Call
                || !matches!(
                    instruction.op0_kind(),
                    OpKind::NearBranch32 | OpKind::NearBranch64
                )
                || thunk(instruction.near_branch_target())
            {
                continue;
            }
            // The first such call; its result must reach `exit`.
            let exits = instructions[n + 1..]
                .iter()
                .take(MAX_EXIT_DISTANCE)
                .take_while(|i| i.flow_control() != FlowControl::Return)
                .any(|i| {
                    i.flow_control() == FlowControl::Call
                        || i.flow_control() == FlowControl::IndirectCall
                } && through(i).is_some_and(|import| MSVC_EXITS.contains(&import)));
            return exits.then(|| (instruction.near_branch_target(), called));
        }
        None
    };
    if let Some(found) = read(entry) {
        return Some(found);
    }
    // The entry's own jumps to the start proper.
    entry_jumps(bytes, sections, entry, bitness)
        .into_iter()
        .find_map(read)
}

/// What a register (or an x86 stack slot pushed as an argument) is known to hold while the C
/// runtime start is read: the image base (`&__ImageBase`), zero, what a direct call returned,
/// or a value loaded from a global (`mov ecx, [rip+__argc]`, `push [__argv]`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Held {
    ImageBase,
    Zero,
    Returned(u64),
    Global,
}

/// Hops through incremental-link thunks (MSVC's `/INCREMENTAL` table of `jmp rel32`) followed
/// to the code a call or the entry reaches.
const MAX_THUNK_HOPS: usize = 4;

/// Instructions followed from the call of `WinMain` for the call its result is passed to, on
/// every path (the UCRT asks whether the program is managed, then branches to `exit`).
const MAX_RESULT_PATH: usize = 48;

/// The code `address` reaches: through incremental-link thunks to the first instruction that
/// is not one. A thunk is a `jmp rel32` in a table of them (the instruction before or after it
/// is one too); a lone `jmp` is a function's tail call (`main` that returns `process(argc,
/// argv)`), and is where the code is.
fn through_thunks(bytes: &[u8], sections: &[SectionInfo], address: u64, bitness: u32) -> u64 {
    let jump_at = |at: u64| -> Option<u64> {
        let code = code_at(bytes, sections, at)?;
        let first = Decoder::with_ip(bitness, code, at, DecoderOptions::NONE).decode();
        (first.code() == Code::Jmp_rel32_32 || first.code() == Code::Jmp_rel32_64)
            .then(|| first.near_branch_target())
    };
    let mut at = address;
    for _ in 0..MAX_THUNK_HOPS {
        let Some(target) = jump_at(at) else { break };
        let in_table = jump_at(at + 5).is_some() || jump_at(at.wrapping_sub(5)).is_some();
        if !in_table {
            break;
        }
        at = target;
    }
    at
}

/// The address of an instruction's memory operand when it names one without a register:
/// RIP-relative on x86-64, an absolute displacement on x86.
fn absolute_memory(instruction: &iced_x86::Instruction) -> Option<u64> {
    if !(0..instruction.op_count()).any(|k| instruction.op_kind(k) == OpKind::Memory) {
        None
    } else if instruction.is_ip_rel_memory_operand() {
        Some(instruction.ip_rel_memory_address())
    } else if instruction.memory_base() == Register::None
        && instruction.memory_index() == Register::None
    {
        Some(u64::from(instruction.memory_displacement32()))
    } else {
        None
    }
}

/// The import (not a pointer in data) whose stub, thunk or slot is at `address`.
fn import_at(imports: &[ImportEntry], address: u64) -> Option<&str> {
    imports
        .iter()
        .find(|i| i.address == address && i.kind != ImportKind::Pointer)
        .map(|i| i.name.as_str())
}

/// The whole registers `instruction` writes, conditionally (`cmov`) too.
fn written_registers(
    factory: &mut iced_x86::InstructionInfoFactory,
    instruction: &iced_x86::Instruction,
) -> Vec<Register> {
    factory
        .info(instruction)
        .used_registers()
        .iter()
        .filter(|u| {
            matches!(
                u.access(),
                iced_x86::OpAccess::Write
                    | iced_x86::OpAccess::ReadWrite
                    | iced_x86::OpAccess::CondWrite
                    | iced_x86::OpAccess::ReadCondWrite
            )
        })
        .map(|u| u.register().full_register())
        .collect()
}

/// Registers a call may change under the x86-64 Windows and x86 calling conventions.
fn volatile(register: Register, bitness: u32) -> bool {
    let x86 = [Register::RAX, Register::RCX, Register::RDX];
    let x64 = [Register::R8, Register::R9, Register::R10, Register::R11];
    x86.contains(&register) || (bitness == 64 && x64.contains(&register))
}

/// Whether the command line a start passes to `WinMain` is wide: the getter whose result it is
/// (`_get_wide_winmain_command_line`, `_wwincmdln`), which skips the program's name, reads
/// memory 16 bits at a time (`movzx eax, word ptr [rcx]`, `cmp word ptr [rcx], 0x20`);
/// `Some(false)` when it reads bytes only, `None` when it reads both or neither.
fn command_line_is_wide(
    bytes: &[u8],
    sections: &[SectionInfo],
    getter: u64,
    bitness: u32,
) -> Option<bool> {
    let start = through_thunks(bytes, sections, getter, bitness);
    let code = code_at(bytes, sections, start)?;
    let mut decoder = Decoder::with_ip(bitness, code, start, DecoderOptions::NONE);
    let mut widths = [false; 2];
    for instruction in decoder
        .iter()
        .take(MAX_ENTRY_INSTRUCTIONS * 2)
        .take_while(|i| i.flow_control() != FlowControl::Return && !i.is_invalid())
    {
        let reads_memory = (0..instruction.op_count())
            .any(|k| instruction.op_kind(k) == OpKind::Memory)
            && instruction.mnemonic() != iced_x86::Mnemonic::Lea;
        match instruction.memory_size().size() {
            1 if reads_memory => widths[0] = true,
            2 if reads_memory => widths[1] = true,
            _ => {}
        }
    }
    match widths {
        [false, true] => Some(true),
        [true, false] => Some(false),
        _ => None,
    }
}

/// Whether some path from just after the call at `call` passes the call's result as the first
/// argument of a direct call (`mov ecx, ebx; call exit` on x86-64, `push esi; call exit` on
/// x86) within `MAX_RESULT_PATH` instructions, following both ways of each branch.
fn result_passed_on(bytes: &[u8], sections: &[SectionInfo], call: u64, bitness: u32) -> bool {
    let mut seen = std::collections::HashSet::new();
    let mut paths = vec![(call, vec![Register::RAX], 0usize)];
    let mut factory = iced_x86::InstructionInfoFactory::new();
    while let Some((from, mut holding, mut length)) = paths.pop() {
        let Some(code) = code_at(bytes, sections, from) else {
            continue;
        };
        let mut decoder = Decoder::with_ip(bitness, code, from, DecoderOptions::NONE);
        // The call itself is decoded again first; it is skipped.
        let skip = from == call;
        let mut pushed_result = false;
        for (n, instruction) in decoder.iter().enumerate() {
            if n == 0 && skip {
                continue;
            }
            if instruction.is_invalid()
                || length >= MAX_RESULT_PATH
                || !seen.insert(instruction.ip())
            {
                break;
            }
            length += 1;
            let direct = matches!(
                instruction.op0_kind(),
                OpKind::NearBranch32 | OpKind::NearBranch64
            );
            match instruction.flow_control() {
                FlowControl::Call if direct => {
                    if (bitness == 64 && holding.contains(&Register::RCX)) || pushed_result {
                        return true;
                    }
                    holding.retain(|&r| !volatile(r, bitness));
                    pushed_result = false;
                    continue;
                }
                FlowControl::Call | FlowControl::IndirectCall => {
                    holding.retain(|&r| !volatile(r, bitness));
                    pushed_result = false;
                    continue;
                }
                FlowControl::ConditionalBranch if direct => {
                    paths.push((instruction.near_branch_target(), holding.clone(), length));
                    continue;
                }
                FlowControl::UnconditionalBranch if direct => {
                    paths.push((instruction.near_branch_target(), holding.clone(), length));
                    break;
                }
                FlowControl::Next => {}
                _ => break,
            }
            if instruction.mnemonic() == iced_x86::Mnemonic::Push {
                pushed_result = instruction.op0_kind() == OpKind::Register
                    && holding.contains(&instruction.op0_register().full_register());
                continue;
            }
            let copied = instruction.mnemonic() == iced_x86::Mnemonic::Mov
                && instruction.op_count() == 2
                && instruction.op0_kind() == OpKind::Register
                && instruction.op1_kind() == OpKind::Register
                && holding.contains(&instruction.op1_register().full_register());
            let written = written_registers(&mut factory, &instruction);
            holding.retain(|r| !written.contains(r));
            if copied {
                holding.push(instruction.op0_register().full_register());
            }
        }
    }
    false
}

/// The entry function of an x86 or x86-64 PE whose MSVC C runtime is linked in (no CRT DLL to
/// name what the start calls), as its start calls it:
/// - `WinMain`/`wWinMain`: the first direct call whose first two arguments are the image base
///   (`hInstance`) and zero (`hPrevInstance`) and whose third is what a call just returned (the
///   command line); `wWinMain` when that getter reads 16-bit characters, `WinMain` when it reads
///   bytes, nothing named when it does neither;
/// - `main`/`wmain` (the start of Visual Studio 2013 and before, `__tmainCRTStartup`): the first
///   direct call whose three arguments are each loaded from a global (`argc`, `argv`, `envp`);
///   `main` when the start itself gets the command line through `GetCommandLineA`, `wmain`
///   through `GetCommandLineW`, nothing named when it calls neither or both;
///
/// and in both, only when some path passes the call's result on to another call (`exit`). The
/// start is the entry or what the entry jumps to, through incremental-link thunks.
pub(crate) fn msvc_static_main(
    bytes: &[u8],
    sections: &[SectionInfo],
    imports: &[ImportEntry],
    entry: u64,
    image_base: u64,
    bitness: u32,
) -> Option<(u64, &'static str)> {
    let mut factory = iced_x86::InstructionInfoFactory::new();
    let mut read = |start: u64| -> Option<(u64, &'static str)> {
        let code = code_at(bytes, sections, start)?;
        let mut decoder = Decoder::with_ip(bitness, code, start, DecoderOptions::NONE);
        let mut held: std::collections::HashMap<Register, Held> = Default::default();
        // x86: what each argument pushed holds, the last pushed last.
        let mut pushed: Vec<Option<Held>> = Vec::new();
        let value = |immediate: u64| match immediate {
            0 => Some(Held::Zero),
            i if i == image_base => Some(Held::ImageBase),
            _ => None,
        };
        // Which of `GetCommandLineA` (false) and `GetCommandLineW` (true) the start calls.
        let mut command_line: Option<Option<bool>> = None;
        for instruction in decoder.iter().take(MAX_CRT_INSTRUCTIONS) {
            if instruction.is_invalid() || instruction.flow_control() == FlowControl::Return {
                return None;
            }
            let direct = matches!(
                instruction.op0_kind(),
                OpKind::NearBranch32 | OpKind::NearBranch64
            );
            if matches!(
                instruction.flow_control(),
                FlowControl::Call | FlowControl::IndirectCall
            ) {
                let import = absolute_memory(&instruction).and_then(|a| import_at(imports, a));
                let wide = match import {
                    Some("GetCommandLineA") => Some(false),
                    Some("GetCommandLineW") => Some(true),
                    _ => None,
                };
                if let Some(wide) = wide {
                    command_line = match command_line {
                        None => Some(Some(wide)),
                        Some(seen) => Some(seen.filter(|&w| w == wide)),
                    };
                }
                let arguments: [Option<Held>; 3] = if bitness == 64 {
                    [Register::RCX, Register::RDX, Register::R8].map(|r| held.get(&r).copied())
                } else {
                    let top = |k: usize| pushed.iter().rev().nth(k).copied().flatten();
                    [top(0), top(1), top(2)]
                };
                if direct
                    && let [
                        Some(Held::ImageBase),
                        Some(Held::Zero),
                        Some(Held::Returned(getter)),
                    ] = arguments
                    && result_passed_on(bytes, sections, instruction.ip(), bitness)
                {
                    let target =
                        through_thunks(bytes, sections, instruction.near_branch_target(), bitness);
                    let name = match command_line_is_wide(bytes, sections, getter, bitness)? {
                        true => "wWinMain",
                        false => "WinMain",
                    };
                    return Some((target, name));
                }
                if direct
                    && arguments == [Some(Held::Global); 3]
                    && result_passed_on(bytes, sections, instruction.ip(), bitness)
                {
                    let target =
                        through_thunks(bytes, sections, instruction.near_branch_target(), bitness);
                    let name = match command_line?? {
                        true => "wmain",
                        false => "main",
                    };
                    return Some((target, name));
                }
                held.retain(|&r, _| !volatile(r, bitness));
                if direct {
                    held.insert(
                        Register::RAX,
                        Held::Returned(instruction.near_branch_target()),
                    );
                }
                continue;
            }
            let op0 = instruction.op0_register().full_register();
            // A write of a 32- or 64-bit register sets all of it (a byte's keeps the rest).
            let whole = instruction.op0_register().size() >= 4;
            let (known, write_through) = match instruction.mnemonic() {
                iced_x86::Mnemonic::Push if bitness == 32 => {
                    pushed.push(match instruction.op0_kind() {
                        OpKind::Register => held.get(&op0).copied(),
                        OpKind::Immediate8to32 | OpKind::Immediate32 => {
                            value(u64::from(instruction.immediate32()))
                        }
                        OpKind::Memory => absolute_memory(&instruction).map(|_| Held::Global),
                        _ => None,
                    });
                    if pushed.len() > 64 {
                        pushed.remove(0);
                    }
                    continue;
                }
                iced_x86::Mnemonic::Pop if bitness == 32 => {
                    pushed.pop();
                    (None, true)
                }
                iced_x86::Mnemonic::Add
                    if bitness == 32
                        && instruction.op0_register() == Register::ESP
                        && instruction.op1_kind() != OpKind::Register =>
                {
                    let slots = instruction.immediate(1) / 4;
                    for _ in 0..slots.min(pushed.len() as u64) {
                        pushed.pop();
                    }
                    continue;
                }
                iced_x86::Mnemonic::Xor
                    if instruction.op0_kind() == OpKind::Register
                        && instruction.op1_kind() == OpKind::Register
                        && instruction.op0_register() == instruction.op1_register()
                        && whole =>
                {
                    (Some(Held::Zero), false)
                }
                iced_x86::Mnemonic::Mov if instruction.op0_kind() == OpKind::Register && whole => {
                    match instruction.op1_kind() {
                        OpKind::Register => (
                            held.get(&instruction.op1_register().full_register())
                                .copied(),
                            false,
                        ),
                        OpKind::Immediate32 | OpKind::Immediate64 | OpKind::Immediate32to64 => {
                            (value(instruction.immediate(1)), false)
                        }
                        OpKind::Memory => {
                            (absolute_memory(&instruction).map(|_| Held::Global), false)
                        }
                        _ => (None, false),
                    }
                }
                iced_x86::Mnemonic::Lea if instruction.op0_kind() == OpKind::Register => {
                    let address = absolute_memory(&instruction);
                    (
                        address.and_then(value).filter(|&h| h == Held::ImageBase),
                        false,
                    )
                }
                _ => (None, true),
            };
            // Every register the instruction writes loses what it held; the destination of a
            // move, `xor r, r` or `lea` then holds what was read.
            if write_through || known.is_none() || instruction.op0_kind() != OpKind::Register {
                for register in written_registers(&mut factory, &instruction) {
                    held.remove(&register);
                }
            }
            if let Some(known) = known
                && instruction.op0_kind() == OpKind::Register
            {
                held.insert(op0, known);
            }
        }
        None
    };
    let entry = through_thunks(bytes, sections, entry, bitness);
    if let Some(found) = read(entry) {
        return Some(found);
    }
    entry_jumps(bytes, sections, entry, bitness)
        .into_iter()
        .find_map(|j| read(through_thunks(bytes, sections, j, bitness)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: u64 = 0x401000;

    fn text(code: &[u8]) -> Vec<SectionInfo> {
        vec![SectionInfo {
            name: ".text".into(),
            address: TEXT,
            size: code.len() as u64,
            executable: true,
            file_offset: Some(0),
            file_size: code.len() as u64,
        }]
    }

    fn import(address: u64, name: &str, kind: ImportKind) -> ImportEntry {
        ImportEntry {
            address,
            name: name.into(),
            library: None,
            kind,
        }
    }

    fn x86(code: &[u8], imports: &[ImportEntry]) -> Option<u64> {
        let sections = text(code);
        libc_start_main_argument(
            object::Architecture::X86_64,
            code,
            &sections,
            imports,
            TEXT,
            &|_| None,
        )
    }

    #[test]
    fn non_pie_x86_64_start_moves_main_as_an_immediate_and_calls_the_plt() {
        // xor ebp, ebp; mov rdi, 0x401136; call rel32 → 0x401000 + 2 + 7 + 5 + 0x100
        let mut code = vec![0x31, 0xed, 0x48, 0xc7, 0xc7, 0x36, 0x11, 0x40, 0x00];
        code.extend([0xe8, 0x00, 0x01, 0x00, 0x00, 0xf4]);
        let plt = TEXT + 14 + 0x100;
        let start = import(plt, "__libc_start_main", ImportKind::Plt);
        assert_eq!(x86(&code, &[start]), Some(0x401136));
        // The same call to any other import states nothing.
        assert_eq!(x86(&code, &[import(plt, "exit", ImportKind::Plt)]), None);
        // A later write to rdi makes the argument unknown: `xor edi, edi` before the call.
        let mut clobbered = code[..9].to_vec();
        clobbered.extend([0x31, 0xff, 0xe8, 0xfe, 0x00, 0x00, 0x00]);
        let start = import(plt, "__libc_start_main@GLIBC_2.34", ImportKind::Plt);
        assert_eq!(x86(&clobbered, &[start]), None);
    }

    #[test]
    fn aarch64_literal_load_of_main_is_read_through_the_slot() {
        // ldr x0, #8 (the literal two words on); bl #8 (to the PLT stub); then the literal.
        let words: [u32; 2] = [0x5800_0040, 0x9400_0002];
        let code: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let sections = text(&code);
        let plt = [import(TEXT + 12, "__libc_start_main", ImportKind::Plt)];
        let slot = |at: u64| (at == TEXT + 8).then_some(0x400700);
        let found = libc_start_main_argument(
            object::Architecture::Aarch64,
            &code,
            &sections,
            &plt,
            TEXT,
            &slot,
        );
        assert_eq!(found, Some(0x400700));
    }

    /// The UCRT's shape, x86-64: the entry calls `__security_init_cookie` and jumps to
    /// `__scrt_common_main_seh`, which gets the environment and `argv` through imports, calls
    /// `main` and passes its result on to `exit`.
    fn ucrt(environment: &str, argv: &str, exit: &str) -> Option<(u64, &'static str)> {
        let mut code = vec![0xcc; 0x300];
        let mut put = |at: u64, bytes: &[u8]| {
            let at = (at - TEXT) as usize;
            code[at..at + bytes.len()].copy_from_slice(bytes);
        };
        // sub rsp, 0x28; call 0x401100; add rsp, 0x28; jmp 0x401020
        put(0x401000, &[0x48, 0x83, 0xec, 0x28, 0xe8, 0xf7, 0, 0, 0]);
        put(0x401009, &[0x48, 0x83, 0xc4, 0x28, 0xe9, 0x0e, 0, 0, 0]);
        // call [rip+slot 0x402000]; call [rip+slot 0x402008]; call 0x401200
        put(0x401020, &[0xff, 0x15, 0xda, 0x0f, 0, 0]);
        put(0x401026, &[0xff, 0x15, 0xdc, 0x0f, 0, 0]);
        put(0x40102c, &[0xe8, 0xcf, 0x01, 0, 0]);
        // mov ebx, eax; mov ecx, ebx; call [rip+slot 0x402010]; ret
        put(
            0x401031,
            &[0x8b, 0xd8, 0x8b, 0xcb, 0xff, 0x15, 0xd5, 0x0f, 0, 0, 0xc3],
        );
        put(0x401100, &[0xc3]);
        put(0x401200, &[0xc3]);
        let imports = [
            import(0x402000, environment, ImportKind::Iat),
            import(0x402008, argv, ImportKind::Iat),
            import(0x402010, exit, ImportKind::Iat),
        ];
        msvc_main(&code, &text(&code), &imports, TEXT, 64)
    }

    #[test]
    fn msvc_start_states_main_through_its_argument_imports_regression_27() {
        let main = ucrt("_get_initial_narrow_environment", "__p___argv", "exit");
        assert_eq!(main, Some((0x401200, "main")));
        let wide = ucrt("_get_initial_wide_environment", "__p___wargv", "exit");
        assert_eq!(wide, Some((0x401200, "wmain")));
        // A result that does not reach `exit` states nothing, nor do other imports.
        assert_eq!(
            ucrt("_get_initial_narrow_environment", "__p___argv", "puts"),
            None
        );
        assert_eq!(ucrt("GetVersion", "GetCommandLineA", "exit"), None);
    }

    /// A statically linked MSVC C runtime's start, x86-64: the command line from a call, then
    /// `WinMain(&__ImageBase, 0, line, show)`, its result kept in `ebx` and passed to `exit`.
    /// `getter` is the command-line getter's body, `second` sets `edx`, `passed` sets `ecx`
    /// before the last call.
    fn static_start(getter: &[u8], second: &[u8], passed: &[u8]) -> Option<(u64, &'static str)> {
        const IMAGE_BASE: u64 = 0x400000;
        let mut code = vec![0xcc; 0x400];
        let mut put = |at: u64, pieces: &[&[u8]]| -> u64 {
            let mut at = at;
            for bytes in pieces {
                let offset = (at - TEXT) as usize;
                code[offset..offset + bytes.len()].copy_from_slice(bytes);
                at += bytes.len() as u64;
            }
            at
        };
        let rel = |end: u64, to: u64| ((to as i64 - end as i64) as i32).to_le_bytes();
        // call getter; mov r8, rax; <second>; lea rcx, [rip → image base]; call WinMain
        let at = put(
            TEXT,
            &[
                &[0xe8],
                &rel(TEXT + 5, 0x401100),
                &[0x4c, 0x8b, 0xc0],
                second,
            ],
        );
        let at = put(at, &[&[0x48, 0x8d, 0x0d], &rel(at + 7, IMAGE_BASE)]);
        let at = put(at, &[&[0xe8], &rel(at + 5, 0x401200)]);
        // mov ebx, eax; call 0x401180 (the managed-app check); <passed>; call exit; ret
        let at = put(at, &[&[0x8b, 0xd8, 0xe8], &rel(at + 7, 0x401180), passed]);
        put(at, &[&[0xe8], &rel(at + 5, 0x401300), &[0xc3]]);
        put(0x401100, &[getter, &[0xc3]]);
        for body in [0x401180, 0x401200, 0x401300] {
            put(body, &[&[0xc3]]);
        }
        msvc_static_main(&code, &text(&code), &[], TEXT, IMAGE_BASE, 64)
    }

    #[test]
    fn static_msvc_start_states_winmain_by_its_arguments_regression_27() {
        let xor_edx = [0x33, 0xd2];
        let mov_ecx_ebx = [0x8b, 0xcb];
        // movzx eax, word ptr [rcx] / movzx eax, byte ptr [rcx]
        let wide = static_start(&[0x0f, 0xb7, 0x01], &xor_edx, &mov_ecx_ebx);
        assert_eq!(wide, Some((0x401200, "wWinMain")));
        let narrow = static_start(&[0x0f, 0xb6, 0x01], &xor_edx, &mov_ecx_ebx);
        assert_eq!(narrow, Some((0x401200, "WinMain")));
        // A getter that reads no characters names nothing.
        assert_eq!(static_start(&[], &xor_edx, &mov_ecx_ebx), None);
        // Nor a second argument that is not zero (`mov edx, 1`), nor a result that reaches no
        // call (`mov ecx, 7`).
        let one = [0xba, 0x01, 0x00, 0x00, 0x00];
        assert_eq!(static_start(&[0x0f, 0xb7, 0x01], &one, &mov_ecx_ebx), None);
        let seven = [0xb9, 0x07, 0x00, 0x00, 0x00];
        assert_eq!(static_start(&[0x0f, 0xb7, 0x01], &xor_edx, &seven), None);
    }

    /// Visual Studio 2010's start with its C runtime linked in, x86-64: the command line
    /// through the imports `commands` name (slots 0x402000 on), then `main(argc, argv, envp)`
    /// loaded from globals, its result passed to `exit`.
    fn static_console_start(commands: &[&str]) -> Option<(u64, &'static str)> {
        let mut code = vec![0xcc; 0x300];
        let mut at = 0usize;
        let mut emit = |bytes: &[u8]| {
            code[at..at + bytes.len()].copy_from_slice(bytes);
            at += bytes.len();
        };
        let rip = |end: usize, to: u64| (to as i64 - (TEXT + end as u64) as i64) as i32;
        let mut imports = Vec::new();
        for (k, name) in commands.iter().enumerate() {
            let slot = 0x402000 + 8 * k as u64;
            imports.push(import(slot, name, ImportKind::Iat));
            // call [rip+slot]
            let end = 6 * (k + 1);
            emit(&[0xff, 0x15]);
            emit(&rip(end, slot).to_le_bytes());
        }
        let base = 6 * commands.len();
        // mov ecx, [rip+argc]; mov rdx, [rip+argv]; mov r8, [rip+envp]
        emit(&[0x8b, 0x0d]);
        emit(&rip(base + 6, 0x403000).to_le_bytes());
        emit(&[0x48, 0x8b, 0x15]);
        emit(&rip(base + 13, 0x403008).to_le_bytes());
        emit(&[0x4c, 0x8b, 0x05]);
        emit(&rip(base + 20, 0x403010).to_le_bytes());
        // call main; mov ecx, eax; call exit; ret
        emit(&[0xe8]);
        emit(&rip(base + 25, 0x401200).to_le_bytes());
        emit(&[0x8b, 0xc8, 0xe8]);
        emit(&rip(base + 32, 0x401280).to_le_bytes());
        emit(&[0xc3]);
        for body in [0x200, 0x280] {
            code[body] = 0xc3;
        }
        msvc_static_main(&code, &text(&code), &imports, TEXT, 0x400000, 64)
    }

    #[test]
    fn static_msvc_console_start_states_main_by_its_command_line_import_regression_27() {
        assert_eq!(
            static_console_start(&["GetCommandLineA"]),
            Some((0x401200, "main"))
        );
        assert_eq!(
            static_console_start(&["GetCommandLineW"]),
            Some((0x401200, "wmain"))
        );
        // Both, or neither: nothing says which, and nothing is named.
        assert_eq!(
            static_console_start(&["GetCommandLineA", "GetCommandLineW"]),
            None
        );
        assert_eq!(static_console_start(&["GetVersion"]), None);
    }
}
