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
    let import_at = |address: u64| -> Option<&str> {
        imports
            .iter()
            .find(|i| i.address == address && i.kind != ImportKind::Pointer)
            .map(|i| i.name.as_str())
    };
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
        (0..instruction.op_count())
            .find(|&i| instruction.op_kind(i) == OpKind::Memory)
            .and_then(|_| {
                if instruction.is_ip_rel_memory_operand() {
                    Some(instruction.ip_rel_memory_address())
                } else if instruction.memory_base() == Register::None
                    && instruction.memory_index() == Register::None
                {
                    Some(u64::from(instruction.memory_displacement32()))
                } else {
                    None
                }
            })
            .and_then(import_at)
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
    let code = code_at(bytes, sections, entry)?;
    let mut decoder = Decoder::with_ip(bitness, code, entry, DecoderOptions::NONE);
    decoder
        .iter()
        .take(MAX_ENTRY_INSTRUCTIONS)
        .take_while(|i| i.flow_control() != FlowControl::Return)
        .filter(|i| {
            i.flow_control() == FlowControl::UnconditionalBranch
                && matches!(i.op0_kind(), OpKind::NearBranch32 | OpKind::NearBranch64)
        })
        .find_map(|i| read(i.near_branch_target()))
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
}
