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

/// `main` of an x86-64 PE built by mingw-w64, as its C runtime start states it: the entry
/// (`mainCRTStartup`) calls `__tmainCRTStartup`, which loads `argc` into `ecx`, `argv` into
/// `rdx` and `envp` into `r8` from its globals, calls `main` and stores the result
/// (`mainret`). The first direct call of the entry (or of the procedure it calls first) made
/// so is `main`; `None` when the code is not that pattern.
pub(crate) fn mingw_main(bytes: &[u8], sections: &[SectionInfo], entry: u64) -> Option<u64> {
    let first_call = |address: u64| -> Option<u64> {
        let code = code_at(bytes, sections, address)?;
        let mut decoder = Decoder::with_ip(64, code, address, DecoderOptions::NONE);
        for instruction in decoder.iter().take(MAX_ENTRY_INSTRUCTIONS) {
            if instruction.flow_control() == FlowControl::Call
                && instruction.op0_kind() == OpKind::NearBranch64
            {
                return Some(instruction.near_branch_target());
            }
            if instruction.flow_control() == FlowControl::Return {
                return None;
            }
        }
        None
    };
    let crt = first_call(entry)?;
    let code = code_at(bytes, sections, crt)?;
    let mut decoder = Decoder::with_ip(64, code, crt, DecoderOptions::NONE);
    // Which argument registers were last loaded from a global, by instruction count.
    let mut loaded: [Option<usize>; 3] = [None; 3];
    let mut candidate: Option<(u64, usize)> = None;
    for (n, instruction) in decoder.iter().take(MAX_CRT_INSTRUCTIONS).enumerate() {
        if let Some((target, at)) = candidate {
            // `mov [rip+mainret], eax` within two instructions of the call.
            if n - at <= 2
                && instruction.code() == Code::Mov_rm32_r32
                && instruction.op0_kind() == OpKind::Memory
                && instruction.memory_base() == Register::RIP
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
        let slot = match instruction.op0_register() {
            Register::ECX => Some(0),
            Register::RDX => Some(1),
            Register::R8 => Some(2),
            _ => None,
        };
        if let Some(slot) = slot {
            let from_global = instruction.mnemonic() == iced_x86::Mnemonic::Mov
                && instruction.op_count() == 2
                && instruction.op1_kind() == OpKind::Memory
                && instruction.memory_base() == Register::RIP;
            loaded[slot] = from_global.then_some(n);
        }
        if instruction.flow_control() == FlowControl::Call
            && instruction.op0_kind() == OpKind::NearBranch64
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
}
