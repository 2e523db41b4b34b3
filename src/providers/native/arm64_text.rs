//! Corrections to yaxpeax-arm's AArch64 text where it disagrees with LLVM's printer, the
//! reference rea's disassembly is held to (`tests/it/arm64.rs` compares every instruction of
//! compiled programs and real binaries with llvm-objdump-14).
//!
//! yaxpeax decodes every class compilers emit correctly; what it gets wrong is how some of them
//! are written. Each function here recognises one encoding class from the instruction word and
//! writes it as LLVM does, so a correction can never apply to a different instruction:
//! - add/sub (extended register) and their `cmp`/`cmn` aliases: yaxpeax writes `uxtw` as `lsl`
//!   (and drops it when the amount is 0) even when neither register is the stack pointer;
//! - `movz`/`movn` and `orr` with the zero register: LLVM uses the `mov` alias only when the
//!   ARM rules prefer it, and writes its value as a signed number;
//! - `dup` (element, vector), which yaxpeax calls `mov` (only the scalar form has that alias);
//! - loads and stores with a register offset: the amount is written only when the S bit is set;
//! - hints (`bti`), `sys` aliases (`dc`, `ic`, `at`, `tlbi`) and system register names;
//! - `prfm` with an unnamed prefetch operation (`#29`, not `0x1d`), shifts by `#0` other than
//!   `lsl`, `sys` with the zero register, and the `fmlal`/`fmlsl` (by element) family.
//!
//! [`unallocated`] names the words yaxpeax decodes although no instruction has that encoding;
//! [`extension_instruction`] decodes the Armv8.6 matrix and brain-float instructions, the fp16
//! multiply-long vector forms and the Armv8.5 `frint32`/`frint64` family, which yaxpeax does
//! not know.

use std::fmt::Write as _;

use yaxpeax_arm::armv8::a64::Opcode;

/// Whether `word`, which yaxpeax decoded as `opcode`, is an unallocated encoding that LLVM (and
/// the hardware) does not decode: yaxpeax names some of them `invalid`, reads any word with
/// bits 31 and 28..25 clear as `udf`, and accepts shift amounts that only 64-bit forms have.
pub(crate) fn unallocated(word: u32, opcode: Opcode) -> bool {
    match opcode {
        Opcode::Invalid => true,
        // `UDF #imm16` is the one allocated encoding of that space: bits 31..16 all clear.
        Opcode::UDF => word & 0xffff_0000 != 0,
        _ => reserved_shifted_register(word) || reserved_field(word),
    }
}

/// Encodings whose fields hold a value the architecture reserves, which yaxpeax does not check
/// (each found by decoding random words of the classes compilers use against llvm-objdump-14).
fn reserved_field(word: u32) -> bool {
    // Data processing (register) with op1 = 1 and op2 = 0xx1: no instruction.
    if word & 0x1f20_0000 == 0x1a20_0000 {
        return true;
    }
    // Move wide: `opc` 01, or a 32-bit form shifted by 32 or 48.
    if word & 0x1f80_0000 == 0x1280_0000 {
        return bits(word, 29, 2) == 0b01 || (bits(word, 31, 1) == 0 && bits(word, 22, 1) == 1);
    }
    // Logical (immediate): a 32-bit form with N set, or a mask DecodeBitMasks rejects.
    if word & 0x1f80_0000 == 0x1200_0000 {
        let sf = bits(word, 31, 1) == 1;
        let n = bits(word, 22, 1);
        let width = if sf { 64 } else { 32 };
        return (!sf && n == 1)
            || logical_immediate(n, bits(word, 16, 6), bits(word, 10, 6), width).is_none();
    }
    // Add/sub (extended register): a shift of more than 4.
    if word & 0x1fe0_0000 == 0x0b20_0000 {
        return bits(word, 10, 3) > 4;
    }
    // Advanced SIMD load/store multiple or single structures: bit 31 is 0 in every one.
    if word & 0x3e00_0000 == 0x0c00_0000 && bits(word, 31, 1) == 1 {
        return bits(word, 26, 1) == 1;
    }
    // Load/store multiple structures: bit 21 clear, a known opcode, no offset register in the
    // plain form, and `.1d` only for `ld1`/`st1`.
    if matches!(word & 0xbf80_0000, 0x0c00_0000 | 0x0c80_0000) {
        let opcode = bits(word, 12, 4);
        let one_d = bits(word, 10, 2) == 0b11 && bits(word, 30, 1) == 0;
        let ld1 = matches!(opcode, 0b0010 | 0b0110 | 0b0111 | 0b1010);
        return bits(word, 21, 1) == 1
            || (bits(word, 23, 1) == 0 && bits(word, 16, 5) != 0)
            || !matches!(
                opcode,
                0b0000 | 0b0010 | 0b0100 | 0b0110 | 0b0111 | 0b1000 | 0b1010
            )
            || (one_d && !ld1);
    }
    // Load/store (register offset): the extend must be uxtw, lsl, sxtw or sxtx.
    if word & 0x3b20_0c00 == 0x3820_0800 {
        return bits(word, 14, 1) == 0;
    }
    // LDAPR, LDAPRH, LDAPRB: the Rs field is all ones.
    if word & 0x3fe0_fc00 == 0x38a0_c000 {
        return bits(word, 16, 5) != 31;
    }
    // Conversion between floating point and fixed point: only scvtf, ucvtf, fcvtzs and
    // fcvtzu, no `ptype` 10, and a 32-bit form scales by 1 to 32.
    if word & 0x7f20_0000 == 0x1e00_0000 {
        let known = matches!(bits(word, 16, 5), 0b00010 | 0b00011 | 0b11000 | 0b11001);
        return !known
            || bits(word, 22, 2) == 0b10
            || (bits(word, 31, 1) == 0 && bits(word, 15, 1) == 0);
    }
    // Advanced SIMD copy (vector and scalar) has bits 23..21 clear; 100 is no instruction.
    if word & 0x9fe0_8400 == 0x0e80_0400 || word & 0xdfe0_8400 == 0x5e80_0400 {
        return true;
    }
    // Advanced SIMD modified immediate: o2 is set only by `fmov` (half precision).
    if word & 0x9ff8_0400 == 0x0f00_0400 && bits(word, 11, 1) == 1 {
        return !(bits(word, 12, 4) == 0b1111 && bits(word, 29, 1) == 0);
    }
    // Advanced SIMD three same (vector): no `.1d` form, except the logical operations.
    if word & 0x9f20_0400 == 0x0e20_0400 && bits(word, 30, 1) == 0 {
        let opcode = bits(word, 11, 5);
        if opcode >= 0b11000 {
            return bits(word, 22, 1) == 1;
        }
        return opcode != 0b00011 && bits(word, 22, 2) == 0b11;
    }
    // Advanced SIMD scalar three same: compares, shifts, add and sub exist only on `d`.
    if word & 0xdf20_0400 == 0x5e20_0400 {
        let opcode = bits(word, 11, 5);
        let d_only = matches!(
            opcode,
            0b00110 | 0b00111 | 0b01000 | 0b01010 | 0b10000 | 0b10001
        );
        return d_only && bits(word, 22, 2) != 0b11;
    }
    // Advanced SIMD scalar two-register miscellaneous: compares with zero, abs, neg on `d`.
    if word & 0xdf3e_0c00 == 0x5e20_0800 {
        let opcode = bits(word, 12, 5);
        return matches!(opcode, 0b01000..=0b01011) && bits(word, 22, 2) != 0b11;
    }
    false
}

/// Logical and add/sub (shifted register): a 32-bit form with a shift of 32 or more, and an
/// add/sub with the reserved `ror` shift.
fn reserved_shifted_register(word: u32) -> bool {
    let narrow_big_shift = bits(word, 31, 1) == 0 && bits(word, 15, 1) == 1;
    if word & 0x1f00_0000 == 0x0a00_0000 {
        return narrow_big_shift;
    }
    if word & 0x1f20_0000 == 0x0b00_0000 {
        return narrow_big_shift || bits(word, 22, 2) == 0b11;
    }
    false
}

/// LLVM's text for `word` where it differs from yaxpeax's `text`, which is replaced in place.
pub(crate) fn correct(word: u32, text: &mut String) {
    if let Some(llvm) = add_sub_extended(word)
        .or_else(|| move_wide(word))
        .or_else(|| orr_zero_register(word))
        .or_else(|| hint(word))
        .or_else(|| sys_alias(word))
        .or_else(|| system_register_move(word))
        .or_else(|| fp16_multiply_long_by_element(word))
    {
        *text = llvm;
        return;
    }
    if is_dup_element_vector(word) && text.starts_with("mov ") {
        text.replace_range(..3, "dup");
        return;
    }
    prefetch_operation_number(text);
    shift_by_zero(word, text);
    sys_without_register(word, text);
    register_offset(word, text);
}

fn bits(word: u32, low: u32, count: u32) -> u32 {
    (word >> low) & ((1 << count) - 1)
}

/// A general register: number 31 is the stack pointer where `sp` says so, else the zero register.
fn gpr(n: u32, wide: bool, sp: bool) -> String {
    match (n, wide, sp) {
        (31, true, true) => "sp".to_string(),
        (31, false, true) => "wsp".to_string(),
        (31, true, false) => "xzr".to_string(),
        (31, false, false) => "wzr".to_string(),
        (n, true, _) => format!("x{n}"),
        (n, false, _) => format!("w{n}"),
    }
}

/// `ADD/ADDS/SUB/SUBS (extended register)`: `sf op S 01011 00 1 Rm option imm3 Rn Rd`.
fn add_sub_extended(word: u32) -> Option<String> {
    if word & 0x1fe0_0000 != 0x0b20_0000 {
        return None;
    }
    let sf = bits(word, 31, 1) == 1;
    let sub = bits(word, 30, 1) == 1;
    let sets_flags = bits(word, 29, 1) == 1;
    let (rm, option, amount) = (bits(word, 16, 5), bits(word, 13, 3), bits(word, 10, 3));
    let (rn, rd) = (bits(word, 5, 5), bits(word, 0, 5));
    if amount > 4 {
        // Reserved; leave it to the decoder.
        return None;
    }
    // The destination is the stack pointer only without flags; the first source always may be.
    let dest_is_sp = !sets_flags && rd == 31;
    let mut out = String::new();
    let mnemonic = match (sub, sets_flags) {
        (false, false) => "add",
        (false, true) => "adds",
        (true, false) => "sub",
        (true, true) => "subs",
    };
    if sets_flags && rd == 31 {
        out.push_str(if sub { "cmp " } else { "cmn " });
    } else {
        let _ = write!(out, "{mnemonic} {}, ", gpr(rd, sf, true));
    }
    // The second source is an X register only for the 64-bit extends (uxtx, sxtx).
    let rm_wide = sf && option & 0b011 == 0b011;
    let _ = write!(out, "{}, {}", gpr(rn, sf, true), gpr(rm, rm_wide, false));
    // With the stack pointer involved, the extend that changes nothing is written as `lsl`.
    let identity = if sf { 0b011 } else { 0b010 };
    if (dest_is_sp || rn == 31) && option == identity {
        if amount != 0 {
            let _ = write!(out, ", lsl #{amount}");
        }
    } else {
        const EXTENDS: [&str; 8] = [
            "uxtb", "uxth", "uxtw", "uxtx", "sxtb", "sxth", "sxtw", "sxtx",
        ];
        let _ = write!(out, ", {}", EXTENDS[option as usize]);
        if amount != 0 {
            let _ = write!(out, " #{amount}");
        }
    }
    Some(out)
}

/// Whether `value` is one 16-bit chunk at a chunk boundary of a `width`-bit register.
fn is_movz_value(value: u64, width: u32) -> bool {
    (0..width)
        .step_by(16)
        .any(|shift| value & !(0xffff_u64 << shift) == 0)
}

/// Whether `value` could be written by `movz` or `movn`.
fn is_move_wide_value(value: u64, width: u32) -> bool {
    let inverted = if width == 32 {
        !value & 0xffff_ffff
    } else {
        !value
    };
    is_movz_value(value, width) || is_movz_value(inverted, width)
}

fn signed(value: u64, width: u32) -> i64 {
    if width == 32 {
        i64::from(value as u32 as i32)
    } else {
        value as i64
    }
}

/// `MOVZ`/`MOVN`: `sf opc 100101 hw imm16 Rd` with opc 10 (movz) or 00 (movn).
fn move_wide(word: u32) -> Option<String> {
    let op = word & 0x7f80_0000;
    let movz = op == 0x5280_0000;
    if !movz && op != 0x1280_0000 {
        return None;
    }
    let sf = bits(word, 31, 1) == 1;
    let width = if sf { 64 } else { 32 };
    let hw = bits(word, 21, 2);
    if !sf && hw > 1 {
        return None;
    }
    let shift = hw * 16;
    let imm16 = u64::from(bits(word, 5, 16));
    let rd = gpr(bits(word, 0, 5), sf, false);
    let mask = if sf { u64::MAX } else { 0xffff_ffff };
    let shifted = imm16 << shift;
    // `#0, lsl #16` stays `movz`; `movn` becomes `mov` unless `movz` could write the value.
    let alias = if movz {
        !(shifted == 0 && shift != 0)
    } else {
        let value = !shifted & mask;
        !(is_movz_value(value, width) || imm16 == 0 && shift != 0)
    };
    let value = if movz { shifted } else { !shifted & mask };
    Some(if alias {
        format!("mov {rd}, #{}", signed(value, width))
    } else {
        let name = if movz { "movz" } else { "movn" };
        if shift == 0 {
            format!("{name} {rd}, #{imm16}")
        } else {
            format!("{name} {rd}, #{imm16}, lsl #{shift}")
        }
    })
}

/// The value of a logical immediate (`N:immr:imms`), as the ARM pseudocode `DecodeBitMasks`.
fn logical_immediate(n: u32, immr: u32, imms: u32, width: u32) -> Option<u64> {
    let combined = (n << 6) | (!imms & 0x3f);
    if combined == 0 {
        return None;
    }
    let len = 31 - combined.leading_zeros();
    let size = 1u32 << len;
    if size > width {
        return None;
    }
    let levels = size - 1;
    let s = imms & levels;
    if s == levels {
        return None;
    }
    let r = immr & levels;
    let ones: u64 = (1u64 << (s + 1)) - 1;
    let element_mask = if size == 64 {
        u64::MAX
    } else {
        (1u64 << size) - 1
    };
    let element = if r == 0 {
        ones
    } else {
        ((ones >> r) | (ones << (size - r))) & element_mask
    };
    let mut value = 0u64;
    let mut at = 0;
    while at < width {
        value |= element << at;
        at += size;
    }
    Some(value)
}

/// `ORR (immediate)` from the zero register: `mov` only when no `movz`/`movn` could write it.
fn orr_zero_register(word: u32) -> Option<String> {
    if word & 0x7f80_03e0 != 0x3200_03e0 {
        return None;
    }
    let sf = bits(word, 31, 1) == 1;
    let n = bits(word, 22, 1);
    if !sf && n == 1 {
        return None;
    }
    let width = if sf { 64 } else { 32 };
    let value = logical_immediate(n, bits(word, 16, 6), bits(word, 10, 6), width)?;
    let rd = gpr(bits(word, 0, 5), sf, true);
    Some(if is_move_wide_value(value, width) {
        format!("orr {rd}, {}, #{value:#x}", gpr(31, sf, false))
    } else {
        format!("mov {rd}, #{}", signed(value, width))
    })
}

/// `HINT #imm`: the names LLVM gives with the v8.5 extensions (PAC, BTI, RAS, trace).
fn hint(word: u32) -> Option<String> {
    if word & 0xffff_f01f != 0xd503_201f {
        return None;
    }
    let imm = bits(word, 5, 7);
    let name = match imm {
        0 => "nop",
        1 => "yield",
        2 => "wfe",
        3 => "wfi",
        4 => "sev",
        5 => "sevl",
        6 => "dgh",
        7 => "xpaclri",
        8 => "pacia1716",
        10 => "pacib1716",
        12 => "autia1716",
        14 => "autib1716",
        16 => "esb",
        18 => "tsb csync",
        20 => "csdb",
        24 => "paciaz",
        25 => "paciasp",
        26 => "pacibz",
        27 => "pacibsp",
        28 => "autiaz",
        29 => "autiasp",
        30 => "autibz",
        31 => "autibsp",
        32 => "bti",
        34 => "bti c",
        36 => "bti j",
        38 => "bti jc",
        _ => return Some(format!("hint #{imm}")),
    };
    Some(name.to_string())
}

/// The `(op1, CRn, CRm, op2)` fields of a `SYS` operation.
type SysOperation = (u32, u32, u32, u32);

/// `SYS #op1, Cn, Cm, #op2, Xt` written as the cache, address-translation and TLB operation
/// it is: the fields, the name, and whether the operation takes a register.
const SYS_ALIASES: &[(SysOperation, &str, bool)] = &[
    ((0, 7, 1, 0), "ic ialluis", false),
    ((0, 7, 5, 0), "ic iallu", false),
    ((3, 7, 5, 1), "ic ivau", true),
    ((0, 7, 6, 1), "dc ivac", true),
    ((0, 7, 6, 2), "dc isw", true),
    ((0, 7, 10, 2), "dc csw", true),
    ((0, 7, 14, 2), "dc cisw", true),
    ((3, 7, 4, 1), "dc zva", true),
    ((3, 7, 10, 1), "dc cvac", true),
    ((3, 7, 11, 1), "dc cvau", true),
    ((3, 7, 12, 1), "dc cvap", true),
    ((3, 7, 13, 1), "dc cvadp", true),
    ((3, 7, 14, 1), "dc civac", true),
    ((0, 7, 8, 0), "at s1e1r", true),
    ((0, 7, 8, 1), "at s1e1w", true),
    ((0, 7, 8, 2), "at s1e0r", true),
    ((0, 7, 8, 3), "at s1e0w", true),
    ((0, 7, 9, 0), "at s1e1rp", true),
    ((0, 7, 9, 1), "at s1e1wp", true),
    ((4, 7, 8, 0), "at s1e2r", true),
    ((4, 7, 8, 1), "at s1e2w", true),
    ((4, 7, 8, 4), "at s12e1r", true),
    ((4, 7, 8, 5), "at s12e1w", true),
    ((4, 7, 8, 6), "at s12e0r", true),
    ((4, 7, 8, 7), "at s12e0w", true),
    ((6, 7, 8, 0), "at s1e3r", true),
    ((6, 7, 8, 1), "at s1e3w", true),
    ((0, 8, 3, 0), "tlbi vmalle1is", false),
    ((0, 8, 3, 1), "tlbi vae1is", true),
    ((0, 8, 3, 2), "tlbi aside1is", true),
    ((0, 8, 3, 3), "tlbi vaae1is", true),
    ((0, 8, 3, 5), "tlbi vale1is", true),
    ((0, 8, 3, 7), "tlbi vaale1is", true),
    ((0, 8, 7, 0), "tlbi vmalle1", false),
    ((0, 8, 7, 1), "tlbi vae1", true),
    ((0, 8, 7, 2), "tlbi aside1", true),
    ((0, 8, 7, 3), "tlbi vaae1", true),
    ((0, 8, 7, 5), "tlbi vale1", true),
    ((0, 8, 7, 7), "tlbi vaale1", true),
];

fn sys_alias(word: u32) -> Option<String> {
    if word & 0xfff8_0000 != 0xd508_0000 {
        return None;
    }
    let key = (
        bits(word, 16, 3),
        bits(word, 12, 4),
        bits(word, 8, 4),
        bits(word, 5, 3),
    );
    let (_, name, takes_register) = SYS_ALIASES.iter().find(|(k, _, _)| *k == key)?;
    Some(if *takes_register {
        format!("{name}, {}", gpr(bits(word, 0, 5), true, false))
    } else {
        name.to_string()
    })
}

/// The `(op0, op1, CRn, CRm, op2)` fields naming a system register.
type SystemRegister = (u32, u32, u32, u32, u32);

/// System registers by `(op0, op1, CRn, CRm, op2)`, spelled as LLVM prints them: what user
/// code reads (counters, thread pointers, floating-point control, cache geometry) and the
/// common EL1 registers of kernels and hypervisors.
const SYSTEM_REGISTERS: &[(SystemRegister, &str)] = &[
    ((3, 3, 4, 2, 0), "NZCV"),
    ((3, 3, 4, 2, 1), "DAIF"),
    ((3, 3, 4, 2, 5), "DIT"),
    ((3, 3, 4, 2, 6), "SSBS"),
    ((3, 3, 4, 4, 0), "FPCR"),
    ((3, 3, 4, 4, 1), "FPSR"),
    ((3, 3, 13, 0, 2), "TPIDR_EL0"),
    ((3, 3, 13, 0, 3), "TPIDRRO_EL0"),
    ((3, 0, 13, 0, 4), "TPIDR_EL1"),
    ((3, 0, 13, 0, 1), "CONTEXTIDR_EL1"),
    ((3, 3, 14, 0, 0), "CNTFRQ_EL0"),
    ((3, 3, 14, 0, 1), "CNTPCT_EL0"),
    ((3, 3, 14, 0, 2), "CNTVCT_EL0"),
    ((3, 3, 14, 2, 0), "CNTP_TVAL_EL0"),
    ((3, 3, 14, 2, 1), "CNTP_CTL_EL0"),
    ((3, 3, 14, 2, 2), "CNTP_CVAL_EL0"),
    ((3, 3, 14, 3, 0), "CNTV_TVAL_EL0"),
    ((3, 3, 14, 3, 1), "CNTV_CTL_EL0"),
    ((3, 3, 14, 3, 2), "CNTV_CVAL_EL0"),
    ((3, 0, 14, 1, 0), "CNTKCTL_EL1"),
    ((3, 3, 0, 0, 1), "CTR_EL0"),
    ((3, 3, 0, 0, 7), "DCZID_EL0"),
    ((3, 1, 0, 0, 0), "CCSIDR_EL1"),
    ((3, 1, 0, 0, 1), "CLIDR_EL1"),
    ((3, 2, 0, 0, 0), "CSSELR_EL1"),
    ((3, 0, 0, 0, 0), "MIDR_EL1"),
    ((3, 0, 0, 0, 5), "MPIDR_EL1"),
    ((3, 0, 0, 0, 6), "REVIDR_EL1"),
    ((3, 0, 0, 4, 0), "ID_AA64PFR0_EL1"),
    ((3, 0, 0, 4, 1), "ID_AA64PFR1_EL1"),
    ((3, 0, 0, 5, 0), "ID_AA64DFR0_EL1"),
    ((3, 0, 0, 6, 0), "ID_AA64ISAR0_EL1"),
    ((3, 0, 0, 6, 1), "ID_AA64ISAR1_EL1"),
    ((3, 0, 0, 7, 0), "ID_AA64MMFR0_EL1"),
    ((3, 0, 0, 7, 1), "ID_AA64MMFR1_EL1"),
    ((3, 0, 0, 7, 2), "ID_AA64MMFR2_EL1"),
    ((3, 0, 1, 0, 0), "SCTLR_EL1"),
    ((3, 0, 1, 0, 2), "CPACR_EL1"),
    ((3, 0, 2, 0, 0), "TTBR0_EL1"),
    ((3, 0, 2, 0, 1), "TTBR1_EL1"),
    ((3, 0, 2, 0, 2), "TCR_EL1"),
    ((3, 0, 4, 0, 0), "SPSR_EL1"),
    ((3, 0, 4, 0, 1), "ELR_EL1"),
    ((3, 0, 4, 1, 0), "SP_EL0"),
    ((3, 0, 4, 2, 0), "SPSel"),
    ((3, 0, 4, 2, 2), "CurrentEL"),
    ((3, 0, 4, 2, 3), "PAN"),
    ((3, 0, 4, 2, 4), "UAO"),
    ((3, 0, 5, 1, 0), "AFSR0_EL1"),
    ((3, 0, 5, 2, 0), "ESR_EL1"),
    ((3, 0, 6, 0, 0), "FAR_EL1"),
    ((3, 0, 7, 4, 0), "PAR_EL1"),
    ((3, 0, 10, 2, 0), "MAIR_EL1"),
    ((3, 0, 12, 0, 0), "VBAR_EL1"),
    ((3, 3, 9, 12, 0), "PMCR_EL0"),
    ((3, 3, 9, 13, 0), "PMCCNTR_EL0"),
    ((3, 3, 9, 14, 0), "PMUSERENR_EL0"),
    ((2, 0, 0, 2, 2), "MDSCR_EL1"),
];

/// `MRS Xt, <reg>` and `MSR <reg>, Xt`: `1101010100 L 1 o0 op1 CRn CRm op2 Rt`.
fn system_register_move(word: u32) -> Option<String> {
    let read = match word & 0xfff0_0000 {
        0xd530_0000 => true,
        0xd510_0000 => false,
        _ => return None,
    };
    let key = (
        2 + bits(word, 19, 1),
        bits(word, 16, 3),
        bits(word, 12, 4),
        bits(word, 8, 4),
        bits(word, 5, 3),
    );
    let name = SYSTEM_REGISTERS
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, n)| (*n).to_string())
        .unwrap_or_else(|| {
            let (op0, op1, crn, crm, op2) = key;
            format!("S{op0}_{op1}_C{crn}_C{crm}_{op2}")
        });
    let rt = gpr(bits(word, 0, 5), true, false);
    Some(if read {
        format!("mrs {rt}, {name}")
    } else {
        format!("msr {name}, {rt}")
    })
}

/// Logical and add/sub (shifted register) shifted by 0 with `lsr`, `asr` or `ror`: LLVM writes
/// `asr #0`, yaxpeax drops the amount.
fn shift_by_zero(word: u32, text: &mut String) {
    let shifted = word & 0x1f00_0000 == 0x0a00_0000 || word & 0x1f20_0000 == 0x0b00_0000;
    if !shifted || bits(word, 10, 6) != 0 || bits(word, 22, 2) == 0 {
        return;
    }
    for shift in [", lsr", ", asr", ", ror"] {
        if text.ends_with(shift) {
            text.push_str(" #0");
            return;
        }
    }
}

/// `SYS` without an alias and with the zero register: LLVM leaves the register out.
fn sys_without_register(word: u32, text: &mut String) {
    if word & 0xfff8_0000 == 0xd508_0000
        && bits(word, 0, 5) == 31
        && text.starts_with("sys ")
        && let Some(stripped) = text.strip_suffix(", xzr")
    {
        *text = stripped.to_string();
    }
}

/// `prfm`/`prfum` with a prefetch operation that has no name: LLVM writes `#29`, yaxpeax `0x1d`.
fn prefetch_operation_number(text: &mut String) {
    let Some(rest) = text
        .strip_prefix("prfm 0x")
        .or_else(|| text.strip_prefix("prfum 0x"))
    else {
        return;
    };
    let digits: String = rest.chars().take_while(char::is_ascii_hexdigit).collect();
    let Ok(value) = u32::from_str_radix(&digits, 16) else {
        return;
    };
    let mnemonic = if text.starts_with("prfm") {
        "prfm"
    } else {
        "prfum"
    };
    let tail = &rest[digits.len()..];
    *text = format!("{mnemonic} #{value}{tail}");
}

/// `FMLAL`, `FMLAL2`, `FMLSL`, `FMLSL2` (by element): `0 Q U 01111 1 0 L M Rm opc H 0 Rn Rd`.
/// yaxpeax writes the `2` forms without their suffix and the sources with twice the lanes.
fn fp16_multiply_long_by_element(word: u32) -> Option<String> {
    if word & 0x9fc0_0400 != 0x0f80_0000 {
        return None;
    }
    let name = match (bits(word, 29, 1), bits(word, 12, 4)) {
        (0, 0b0000) => "fmlal",
        (1, 0b1000) => "fmlal2",
        (0, 0b0100) => "fmlsl",
        (1, 0b1100) => "fmlsl2",
        _ => return None,
    };
    let (wide, narrow) = if bits(word, 30, 1) == 1 {
        ("4s", "4h")
    } else {
        ("2s", "2h")
    };
    let index = (bits(word, 11, 1) << 2) | (bits(word, 21, 1) << 1) | bits(word, 20, 1);
    Some(format!(
        "{name} v{}.{wide}, v{}.{narrow}, v{}.h[{index}]",
        bits(word, 0, 5),
        bits(word, 5, 5),
        bits(word, 16, 4)
    ))
}

/// Instructions of the Armv8.6 matrix (i8mm) and brain-float (bf16) extensions, the fp16
/// multiply-long vector forms and `frint32`/`frint64`, which yaxpeax does not decode: their
/// text, in LLVM's spelling.
/// Each writes only vector registers, so the instruction model needs nothing else.
pub(crate) fn extension_instruction(word: u32) -> Option<String> {
    let (rd, rn, rm) = (bits(word, 0, 5), bits(word, 5, 5), bits(word, 16, 5));
    let q = bits(word, 30, 1) == 1;
    let three = |name: &str, d: &str, s: &str| format!("{name} v{rd}.{d}, v{rn}.{s}, v{rm}.{s}");
    // The index of a 32-bit group (H:L, register M:Rm) or of a half (H:L:M, register Rm).
    let group = (bits(word, 11, 1) << 1) | bits(word, 21, 1);
    let half = (group << 1) | bits(word, 20, 1);
    let rm4 = bits(word, 16, 4);
    Some(match word & 0xbfe0_fc00 {
        // SMMLA, UMMLA, USMMLA: 128-bit only.
        0x0e80_a400 if q => three("smmla", "4s", "16b"),
        0x2e80_a400 if q => three("ummla", "4s", "16b"),
        0x0e80_ac00 if q => three("usmmla", "4s", "16b"),
        0x0e80_9c00 => three(
            "usdot",
            if q { "4s" } else { "2s" },
            if q { "16b" } else { "8b" },
        ),
        0x2e40_fc00 => three(
            "bfdot",
            if q { "4s" } else { "2s" },
            if q { "8h" } else { "4h" },
        ),
        0x2e40_ec00 if q => three("bfmmla", "4s", "8h"),
        0x2ec0_fc00 => three(if q { "bfmlalt" } else { "bfmlalb" }, "4s", "8h"),
        0x0e20_ec00 => three(
            "fmlal",
            if q { "4s" } else { "2s" },
            if q { "4h" } else { "2h" },
        ),
        0x2e20_cc00 => three(
            "fmlal2",
            if q { "4s" } else { "2s" },
            if q { "4h" } else { "2h" },
        ),
        0x0ea0_ec00 => three(
            "fmlsl",
            if q { "4s" } else { "2s" },
            if q { "4h" } else { "2h" },
        ),
        0x2ea0_cc00 => three(
            "fmlsl2",
            if q { "4s" } else { "2s" },
            if q { "4h" } else { "2h" },
        ),
        _ => match word & 0xbfc0_f400 {
            0x0f00_f000 | 0x0f80_f000 => {
                let name = if bits(word, 23, 1) == 1 {
                    "usdot"
                } else {
                    "sudot"
                };
                let (d, s) = if q { ("4s", "16b") } else { ("2s", "8b") };
                format!("{name} v{rd}.{d}, v{rn}.{s}, v{rm}.4b[{group}]")
            }
            0x0f40_f000 => {
                let (d, s) = if q { ("4s", "8h") } else { ("2s", "4h") };
                format!("bfdot v{rd}.{d}, v{rn}.{s}, v{rm}.2h[{group}]")
            }
            0x0fc0_f000 => {
                let name = if q { "bfmlalt" } else { "bfmlalb" };
                format!("{name} v{rd}.4s, v{rn}.8h, v{rm4}.h[{half}]")
            }
            _ => match word & 0xbfff_fc00 {
                0x0ea1_6800 if q => format!("bfcvtn2 v{rd}.8h, v{rn}.4s"),
                0x0ea1_6800 => format!("bfcvtn v{rd}.4h, v{rn}.4s"),
                _ if word & 0xffff_fc00 == 0x1e63_4000 => format!("bfcvt h{rd}, s{rn}"),
                _ => return frint_to_integer(word),
            },
        },
    })
}

/// `FRINT32Z`, `FRINT32X`, `FRINT64Z`, `FRINT64X` (Armv8.5), scalar and vector.
fn frint_to_integer(word: u32) -> Option<String> {
    const NAMES: [&str; 4] = ["frint32z", "frint32x", "frint64z", "frint64x"];
    let (rd, rn) = (bits(word, 0, 5), bits(word, 5, 5));
    let double = bits(word, 22, 1) == 1;
    if word & 0xffbe_7c00 == 0x1e28_4000 {
        let name = NAMES[bits(word, 15, 2) as usize];
        let r = if double { 'd' } else { 's' };
        return Some(format!("{name} {r}{rd}, {r}{rn}"));
    }
    let base = word & 0xbfbf_fc00;
    let index = match base {
        0x0e21_e800 => 0,
        0x2e21_e800 => 1,
        0x0e21_f800 => 2,
        0x2e21_f800 => 3,
        _ => return None,
    };
    let arrangement = match (double, bits(word, 30, 1) == 1) {
        (false, false) => "2s",
        (false, true) => "4s",
        (true, true) => "2d",
        (true, false) => return None,
    };
    Some(format!(
        "{} v{rd}.{arrangement}, v{rn}.{arrangement}",
        NAMES[index]
    ))
}

/// `DUP (element)`, vector form: `0 Q 0 01110000 imm5 0 0000 1 Rn Rd`.
fn is_dup_element_vector(word: u32) -> bool {
    word & 0xbfe0_fc00 == 0x0e00_0400
}

/// Loads and stores with a register offset (`size 111 V 00 opc 1 Rm option S 10 Rn Rt`,
/// `prfm` included): LLVM writes the shift amount only when the S bit is set (`#0` for a byte
/// access), where yaxpeax writes `#0` for every unshifted extended index.
fn register_offset(word: u32, text: &mut String) {
    if word & 0x3b20_0c00 != 0x3820_0800 {
        return;
    }
    let vector = bits(word, 26, 1) == 1;
    let amount = if vector && bits(word, 23, 1) == 1 {
        4
    } else {
        bits(word, 30, 2)
    };
    let s = bits(word, 12, 1) == 1;
    let option = bits(word, 13, 3);
    let (Some(open), Some(close)) = (text.rfind('['), text.rfind(']')) else {
        return;
    };
    if close < open {
        return;
    }
    let extend = match option {
        0b010 => "uxtw",
        0b011 => "lsl",
        0b110 => "sxtw",
        0b111 => "sxtx",
        _ => return,
    };
    let tail = match (s, option) {
        (false, 0b011) => String::new(),
        (false, _) => format!(", {extend}"),
        (true, _) => format!(", {extend} #{amount}"),
    };
    // Keep the base and index registers and rewrite what follows the index.
    let mut parts = text[open + 1..close].split(',').map(str::trim);
    let (Some(base), Some(index)) = (parts.next(), parts.next()) else {
        return;
    };
    let rewritten = format!("{}{base}, {index}{tail}{}", &text[..=open], &text[close..]);
    *text = rewritten;
}

#[cfg(test)]
mod tests {
    use super::super::disasm::Disassembler;
    use super::super::types::Isa;

    /// Each word decoded by rea (yaxpeax plus these corrections) against llvm-objdump-14's text
    /// for the same word (`--mattr=+v8.5a,+crypto,...`, runs of blanks made one space).
    fn check(cases: &[(u32, &str)]) {
        let mut failures = Vec::new();
        for &(word, want) in cases {
            let bytes = word.to_le_bytes();
            let mut text = String::new();
            Disassembler::new(Isa::Arm64, &bytes, 0, true).next(Some(&mut text));
            if text != want {
                failures.push(format!("{word:#010x}: rea `{text}`, llvm `{want}`"));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn extended_register_operands_follow_the_stack_pointer_rule() {
        check(&[
            (0x8b2143ff, "add sp, sp, w1, uxtw"),
            (0x8b216be0, "add x0, sp, x1, lsl #2"),
            (0x8b226020, "add x0, x1, x2, uxtx"),
            (0x8b2163e0, "add x0, sp, x1"),
            (0x8b21601f, "add sp, x0, x1"),
            (0x0b2143e0, "add w0, wsp, w1"),
            (0x0b214c40, "add w0, w2, w1, uxtw #3"),
            (0xab2143e0, "adds x0, sp, w1, uxtw"),
            (0xeb2163ff, "cmp sp, x1"),
            (0xeb214bff, "cmp sp, w1, uxtw #2"),
            (0xeb22d03f, "cmp x1, w2, sxtw #4"),
            (0x2b22003f, "cmn w1, w2, uxtb"),
            (0xcb22a420, "sub x0, x1, w2, sxth #1"),
            (0x8b22e020, "add x0, x1, x2, sxtx"),
        ]);
    }

    #[test]
    fn move_wide_and_logical_immediates_choose_the_alias_as_llvm() {
        check(&[
            (0x52a00000, "movz w0, #0, lsl #16"),
            (0xd2c00000, "movz x0, #0, lsl #32"),
            (0xd2c24680, "mov x0, #20014547599360"),
            (0x52bfffe0, "mov w0, #-65536"),
            (0x129fffe0, "movn w0, #65535"),
            (0x12bfffe0, "movn w0, #65535, lsl #16"),
            (0x92ffffe0, "mov x0, #281474976710655"),
            (0x92800000, "mov x0, #-1"),
            (0x12a000a0, "mov w0, #-327681"),
            (0x92a00000, "movn x0, #0, lsl #16"),
            (0x32001fe0, "orr w0, wzr, #0xff"),
            (0x32009fe0, "mov w0, #16711935"),
            (0xb2103fe0, "mov x0, #-281470681808896"),
            (0xb27cefe0, "orr x0, xzr, #0xfffffffffffffff0"),
            (0x321c6fe0, "orr w0, wzr, #0xfffffff0"),
            (0x32009fff, "mov wsp, #16711935"),
            (0x32009c20, "orr w0, w1, #0xff00ff"),
            (0x72000420, "ands w0, w1, #0x3"),
            (0xf2781c3f, "tst x1, #0xff00"),
        ]);
    }

    #[test]
    fn hints_sys_aliases_and_system_registers_are_named() {
        check(&[
            (0xd503245f, "bti c"),
            (0xd503233f, "paciasp"),
            (0xd503229f, "csdb"),
            (0xd503201f | (0x41 << 5), "hint #65"),
            (0xd508751f, "ic iallu"),
            (0xd508711f, "ic ialluis"),
            (0xd5087621, "dc ivac, x1"),
            (0xd50b7c21, "dc cvap, x1"),
            (0xd50b7d21, "dc cvadp, x1"),
            (0xd5087501, "ic iallu"),
            (0xd508831f, "tlbi vmalle1is"),
            (0xd5088720, "tlbi vae1, x0"),
            (0xd5087800, "at s1e1r, x0"),
            (0xd53bd040, "mrs x0, TPIDR_EL0"),
            (0xd53b0020, "mrs x0, CTR_EL0"),
            (0xd53b00e0, "mrs x0, DCZID_EL0"),
            (0xd5380000, "mrs x0, MIDR_EL1"),
            (0xd5384240, "mrs x0, CurrentEL"),
            (0xd53ff200, "mrs x0, S3_7_C15_C2_0"),
            (0xd51b4400, "msr FPCR, x0"),
        ]);
    }

    #[test]
    fn dup_element_and_byte_register_offsets() {
        check(&[
            (0x4e070420, "dup v0.16b, v1.b[3]"),
            (0x5e070420, "mov b0, v1.b[3]"),
            (0x0e070420, "dup v0.8b, v1.b[3]"),
            (0x38627820, "ldrb w0, [x1, x2, lsl #0]"),
            (0x38626820, "ldrb w0, [x1, x2]"),
            (0x38625820, "ldrb w0, [x1, w2, uxtw #0]"),
            (0x38624820, "ldrb w0, [x1, w2, uxtw]"),
            (0x38a2f820, "ldrsb x0, [x1, x2, sxtx #0]"),
            (0x3822e820, "strb w0, [x1, x2, sxtx]"),
            (0x3c627820, "ldr b0, [x1, x2, lsl #0]"),
            (0x3c626820, "ldr b0, [x1, x2]"),
            (0x3ce27820, "ldr q0, [x1, x2, lsl #4]"),
            (0xf8626820, "ldr x0, [x1, x2]"),
            (0xb862c820, "ldr w0, [x1, w2, sxtw]"),
            (0xf8a26820, "prfm pldl1keep, [x1, x2]"),
        ]);
    }

    /// Words from data in 7za.exe (arm64 PE) and from random words of the classes compilers
    /// use, which yaxpeax decoded or wrote differently from llvm-objdump-14.
    #[test]
    fn unallocated_words_and_rare_forms() {
        check(&[
            (0x20000010, ".word 0x20000010"),
            (0x00000010, "udf #0x10"),
            (0xededede3, ".word 0xededede3"),
            (0x0aaaaaaa, ".word 0x0aaaaaaa"),
            (0x8aaaaaaa, "bic x10, x21, x10, asr #42"),
            (0x0b4a82aa, ".word 0x0b4a82aa"),
            (0x8b4a82aa, "add x10, x21, x10, lsr #32"),
            (0x8bca02aa, ".word 0x8bca02aa"),
            (0x0faf09a9, "fmlal v9.2s, v13.2h, v15.h[6]"),
            (0x2fa58a08, "fmlal2 v8.2s, v16.2h, v5.h[6]"),
            (0x0f974a10, "fmlsl v16.2s, v16.2h, v7.h[5]"),
            (0x6fbcc91e, "fmlsl2 v30.4s, v8.4h, v12.h[7]"),
            (0xeb87006b, "subs x11, x3, x7, asr #0"),
            // llvm: `sys #2, c10, c3, #3` (rea keeps yaxpeax's hex immediates).
            (0xd50aa37f, "sys #0x2, c10, c3, #0x3"),
            (0x72e15d3b, ".word 0x72e15d3b"),
            (0x3279e16f, ".word 0x3279e16f"),
            (0x1afc4261, ".word 0x1afc4261"),
            (0x8dad23ff, ".word 0x8dad23ff"),
            (0xeb3e7e16, ".word 0xeb3e7e16"),
            (0x4e82a424, "smmla v4.4s, v1.16b, v2.16b"),
            (0x4e81ac60, "usmmla v0.4s, v3.16b, v1.16b"),
            (0x6e83a462, "ummla v2.4s, v3.16b, v3.16b"),
            (0x4f03f040, "sudot v0.4s, v2.16b, v3.4b[0]"),
            (0x4e829c24, "usdot v4.4s, v1.16b, v2.16b"),
            (0x4fa2f025, "usdot v5.4s, v1.16b, v2.4b[1]"),
            (0x6e42fc24, "bfdot v4.4s, v1.8h, v2.8h"),
            (0x4f42f823, "bfdot v3.4s, v1.8h, v2.2h[2]"),
            (0x6e42ec25, "bfmmla v5.4s, v1.8h, v2.8h"),
            (0x4fd2f820, "bfmlalt v0.4s, v1.8h, v2.h[5]"),
            (0x2ec2fc24, "bfmlalb v4.4s, v1.8h, v2.8h"),
            (0x0ea16800, "bfcvtn v0.4h, v0.4s"),
            (0x4ea16820, "bfcvtn2 v0.8h, v1.4s"),
            (0x0ea1ece4, "fmlsl v4.2s, v7.2h, v1.2h"),
            (0x0e35ee19, "fmlal v25.2s, v16.2h, v21.2h"),
            (0x2e3dcc1e, "fmlal2 v30.2s, v0.2h, v29.2h"),
            (0x6ea3cc38, "fmlsl2 v24.4s, v1.4h, v3.4h"),
            (0x1e284020, "frint32z s0, s1"),
            (0x1e68c062, "frint32x d2, d3"),
            (0x1e2940a4, "frint64z s4, s5"),
            (0x1e69c0e6, "frint64x d6, d7"),
            (0x4e21e820, "frint32z v0.4s, v1.4s"),
            (0x6e61e862, "frint32x v2.2d, v3.2d"),
            (0x0e21f8a4, "frint64z v4.2s, v5.2s"),
            (0x6e21f8e6, "frint64x v6.4s, v7.4s"),
            (0x4cf7ad6b, ".word 0x4cf7ad6b"),
            (0x0c606d5d, ".word 0x0c606d5d"),
            (0xbc363b50, ".word 0xbc363b50"),
            (0xf8a2c0ef, ".word 0xf8a2c0ef"),
            (0x6e876e14, ".word 0x6e876e14"),
            (0x2ef5844a, ".word 0x2ef5844a"),
            (0x5ea6854e, ".word 0x5ea6854e"),
            (0x5e6099dc, ".word 0x5e6099dc"),
            (0x0f07ed0f, ".word 0x0f07ed0f"),
            (0x1e0a895b, ".word 0x1e0a895b"),
            (0x1e102588, ".word 0x1e102588"),
            // llvm: `prfm #29, #-320744`, a literal 320,744 bytes before the instruction.
            (0xd8d8d8dd, "prfm #29, 0xfffffffffffb1b18"),
        ]);
    }
}
