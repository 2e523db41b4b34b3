//! The walk's hint for the x86-64 instructions compiled code is mostly made of, read from the
//! bytes without iced: their length, and whether the walk steps over them, returns, branches
//! directly, or uses a `rip`-relative address. Where this decoder is not sure (a prefix or
//! opcode outside its tables, an address the walk keeps that is not `rip`-relative or whose
//! displacement an immediate follows, bytes that may not decode), it gives nothing and iced
//! decodes the instruction. So a hint from here is always the one [`super::hint_of`]
//! takes from iced's decoding; a test holds it to that at every byte offset of real code.

use super::hint::{ACCESS, ADDRESS, CALL, COND_JUMP, JUMP, RETURN, STEP, WIDE};

/// The longest instruction iced decodes; a longer one is invalid.
const MAX_LEN: usize = 15;

/// What [`hint`] knows of an opcode, in one word looked up by the opcode: its immediate's
/// size (the low two bits: none, a byte, `Z` two bytes with an operand-size prefix and else
/// four, `V` eight with REX.W, two with an operand-size prefix and else four) and these flags;
/// bits 8 to 15 are the values of the ModRM `reg` field it is valid with, bits 16 to 19 the
/// mandatory prefixes (`0f` map), bits 24 to 31 the hint of a branch or return.
type Desc = u32;

const IMM_B: Desc = 1;
const IMM_Z: Desc = 2;
const IMM_V: Desc = 3;
/// A ModRM byte follows the opcode.
const MODRM: Desc = 1 << 2;
/// ... whose register form is invalid (`lea`).
const MEMORY_ONLY: Desc = 1 << 3;
/// `rep` prefixes are allowed (string instructions).
const REPEATABLE: Desc = 1 << 4;
/// An instruction the walk steps over.
const KNOWN: Desc = 1 << 5;
/// A branch or return without prefixes, whose hint is in the top byte.
const BRANCH: Desc = 1 << 6;
/// `0f`: the opcode is in the next byte.
const ESCAPE: Desc = 1 << 7;
/// `test r/m, imm` (`f6 /0`, `f7 /0`): only `reg` 0 takes the immediate.
const TEST: Desc = 1 << 20;

const fn step(imm: Desc) -> Desc {
    KNOWN | imm
}

/// With a ModRM byte whose `reg` field may take the values set in `regs` (bit n for n).
const fn modrm(imm: Desc, regs: u8) -> Desc {
    KNOWN | MODRM | imm | (regs as Desc) << 8
}

const fn branch(hint: u8) -> Desc {
    BRANCH | (hint as Desc) << 24
}

const ALL: u8 = 0xff;

/// One-byte opcodes, in 64-bit mode.
const fn one_byte(opcode: u8) -> Desc {
    match opcode {
        0x0f => ESCAPE,
        // Prefixes, and segment pushes and pops and BCD adjustments (invalid): unknown.
        0x26 | 0x2e | 0x36 | 0x3e => 0,
        // add, or, adc, sbb, and, sub, xor, cmp: `Eb,Gb` `Ev,Gv` `Gb,Eb` `Gv,Ev`, then
        // `al,Ib` and `eax,Iz`.
        0x00..=0x3f => match opcode & 7 {
            0..=3 => modrm(0, ALL),
            4 => step(IMM_B),
            5 => step(IMM_Z),
            _ => 0,
        },
        0x50..=0x5f => step(0),
        0x63 => modrm(0, ALL),
        0x68 => step(IMM_Z),
        0x69 => modrm(IMM_Z, ALL),
        0x6a => step(IMM_B),
        0x6b => modrm(IMM_B, ALL),
        0x70..=0x7f => branch(COND_JUMP | 2),
        0x80 | 0x83 => modrm(IMM_B, ALL),
        0x81 => modrm(IMM_Z, ALL),
        0x84..=0x8b => modrm(0, ALL),
        0x8d => modrm(0, ALL) | MEMORY_ONLY,
        0x8f => modrm(0, 1),
        0x90..=0x99 | 0x9c | 0x9d => step(0),
        0xa4..=0xa7 | 0xaa..=0xaf => step(0) | REPEATABLE,
        0xa8 => step(IMM_B),
        0xa9 => step(IMM_Z),
        0xb0..=0xb7 => step(IMM_B),
        0xb8..=0xbf => step(IMM_V),
        // Shifts and rotates, without the `sal` alias (/6).
        0xc0 | 0xc1 => modrm(IMM_B, !(1 << 6)),
        0xd0..=0xd3 => modrm(0, !(1 << 6)),
        // ret, `ret imm16`, int3.
        0xc2 => branch(RETURN | 3),
        0xc3 | 0xcc => branch(RETURN | 1),
        0xc6 => modrm(IMM_B, 1),
        0xc7 => modrm(IMM_Z, 1),
        0xc9 | 0xf5 | 0xf8 | 0xf9 | 0xfc | 0xfd => step(0),
        0xe8 => branch(CALL | WIDE | 5),
        0xe9 => branch(JUMP | WIDE | 5),
        0xeb => branch(JUMP | 2),
        // test (/0, not the /1 alias), not, neg, mul, imul, div, idiv.
        0xf6 => modrm(IMM_B, !0b10) | TEST,
        0xf7 => modrm(IMM_Z, !0b10) | TEST,
        // inc, dec; and push (/6) for `ff`.
        0xfe => modrm(0, 0b11),
        0xff => modrm(0, 0b100_0011),
        _ => 0,
    }
}

/// Mandatory prefixes an opcode of the `0f` map is valid with: none, `66`, `f3`, `f2`; the
/// same bits mark which of those an instruction has.
const NP: u8 = 1;
const P66: u8 = 2;
const PF3: u8 = 4;
const PF2: u8 = 8;
const ANY: u8 = NP | P66 | PF3 | PF2;
/// A segment prefix (in [`PREFIXES`] only).
const SEGMENT: u8 = 16;

const fn with(desc: Desc, prefixes: u8) -> Desc {
    desc | (prefixes as Desc) << 16
}

/// Two-byte (`0f xx`) opcodes, with the mandatory prefixes each is valid with.
const fn two_byte(opcode: u8) -> Desc {
    match opcode {
        // nop Ev (`0f 1f /0`).
        0x1f => with(modrm(0, 1), NP | P66),
        0x10 | 0x11 => with(modrm(0, ALL), ANY),
        0x14 | 0x15 | 0x28 | 0x29 | 0x2e | 0x2f => with(modrm(0, ALL), NP | P66),
        0x2a | 0x2c | 0x2d => with(modrm(0, ALL), ANY),
        // cmovcc.
        0x40..=0x4f => with(modrm(0, ALL), NP | P66),
        0x51 | 0x58 | 0x59 | 0x5a | 0x5c..=0x5f => with(modrm(0, ALL), ANY),
        0x54..=0x57 => with(modrm(0, ALL), NP | P66),
        0x5b => with(modrm(0, ALL), NP | P66 | PF3),
        0x60..=0x6b => with(modrm(0, ALL), NP | P66),
        0x6c | 0x6d => with(modrm(0, ALL), P66),
        0x6e => with(modrm(0, ALL), NP | P66),
        0x6f => with(modrm(0, ALL), NP | P66 | PF3),
        0x70 => with(modrm(IMM_B, ALL), ANY),
        0x74..=0x76 => with(modrm(0, ALL), NP | P66),
        0x7e | 0x7f => with(modrm(0, ALL), NP | P66 | PF3),
        // jcc rel32.
        0x80..=0x8f => branch(COND_JUMP | WIDE | 6),
        // setcc, with the `reg` field compilers write.
        0x90..=0x9f => with(modrm(0, 1), NP),
        // bt, bts, btr, btc; shld, shrd; imul; cmpxchg; movzx, movsx; xadd.
        0xa3 | 0xab | 0xb3 | 0xbb => with(modrm(0, ALL), NP | P66),
        0xa4 | 0xac => with(modrm(IMM_B, ALL), NP | P66),
        0xa5 | 0xad | 0xaf => with(modrm(0, ALL), NP | P66),
        0xb0 | 0xb1 | 0xb6 | 0xb7 | 0xbe | 0xbf | 0xc0 | 0xc1 => with(modrm(0, ALL), NP | P66),
        0xba => with(modrm(IMM_B, 0xf0), NP | P66),
        // popcnt; bsf, bsr (tzcnt, lzcnt with `f3`).
        0xb8 => with(modrm(0, ALL), PF3),
        0xbc | 0xbd => with(modrm(0, ALL), NP | P66 | PF3),
        0xc2 => with(modrm(IMM_B, ALL), ANY),
        0xc6 => with(modrm(IMM_B, ALL), NP | P66),
        // bswap.
        0xc8..=0xcf => with(step(0), NP),
        0xd1..=0xd5 | 0xd8..=0xdf | 0xe0..=0xe5 | 0xe8..=0xef | 0xf1..=0xf5 | 0xf8..=0xfe => {
            with(modrm(0, ALL), NP | P66)
        }
        0xd6 => with(modrm(0, ALL), P66),
        0xe6 => with(modrm(0, ALL), P66 | PF3 | PF2),
        _ => 0,
    }
}

/// What a ModRM byte adds in 64-bit mode: its displacement's size (the low three bits), and
/// these flags.
const SIB: u8 = 1 << 3;
/// `[rip+disp32]`: an address the walk keeps ([`ACCESS`], [`ADDRESS`]).
const RIP: u8 = 1 << 4;
/// A register, not memory.
const REGISTER: u8 = 1 << 5;

const fn modrm_info(modrm: u8) -> u8 {
    let (mode, rm) = (modrm >> 6, modrm & 7);
    let sib = if mode != 3 && rm == 4 { SIB } else { 0 };
    sib | match mode {
        0 if rm == 5 => RIP,
        0 => 0,
        1 => 1,
        2 => 4,
        _ => REGISTER,
    }
}

const fn prefix(byte: u8) -> u8 {
    match byte {
        0x66 => P66,
        0xf3 => PF3,
        0xf2 => PF2,
        0x2e | 0x3e | 0x26 | 0x36 | 0x64 | 0x65 => SEGMENT,
        _ => 0,
    }
}

/// The table of `f` over every byte value, built at compile time.
macro_rules! table {
    ($f:ident, $t:ty) => {{
        let mut out: [$t; 256] = [0; 256];
        let mut i = 0;
        while i < 256 {
            out[i] = $f(i as u8);
            i += 1;
        }
        out
    }};
}

static ONE_BYTE: [Desc; 256] = table!(one_byte, Desc);
static TWO_BYTE: [Desc; 256] = table!(two_byte, Desc);
static MODRM_INFO: [u8; 256] = table!(modrm_info, u8);
static PREFIXES: [u8; 256] = table!(prefix, u8);

/// The hint for the x86-64 instruction at the start of `code` (which ends where its code range
/// does), when this decoder is sure of it.
pub(super) fn hint(code: &[u8]) -> Option<u8> {
    // endbr64, endbr32: `f3 0f 1e fa`, `f3 0f 1e fb`.
    if let Some(&[0xf3, 0x0f, 0x1e, 0xfa | 0xfb]) = code.get(..4) {
        return Some(STEP | 4);
    }
    let mut at = 0;
    let mut byte = *code.first()?;
    let mut prefixes = 0;
    while PREFIXES[usize::from(byte)] != 0 {
        let p = PREFIXES[usize::from(byte)];
        // Both `f2` and `f3`, or one twice: which one counts is not this decoder's business.
        if p & (PF3 | PF2) != 0 && prefixes & (PF3 | PF2) != 0 {
            return None;
        }
        prefixes |= p;
        at += 1;
        byte = *code.get(at)?;
    }
    let mut rex = 0;
    if byte & 0xf0 == 0x40 {
        rex = byte;
        at += 1;
        byte = *code.get(at)?;
    }
    at += 1;
    let mut desc = ONE_BYTE[usize::from(byte)];
    if desc & ESCAPE != 0 {
        desc = TWO_BYTE[usize::from(*code.get(at)?)];
        at += 1;
        let mandatory = match prefixes & (P66 | PF3 | PF2) {
            0 => NP,
            // `66` with `f2` or `f3`: iced decides.
            p if p.count_ones() == 1 => p,
            _ => return None,
        };
        if desc & BRANCH == 0 && (desc >> 16) as u8 & mandatory == 0 {
            return None;
        }
    } else if prefixes & (PF3 | PF2) != 0 && desc & REPEATABLE == 0 {
        return None;
    }
    if desc & BRANCH != 0 {
        let hint = (desc >> 24) as u8;
        return (prefixes == 0 && rex == 0 && usize::from(hint & 0xf) <= code.len())
            .then_some(hint);
    }
    if desc & KNOWN == 0 {
        return None;
    }
    let mut imm = desc & 3;
    let mut kind = STEP;
    if desc & MODRM != 0 {
        let modrm = *code.get(at)?;
        at += 1;
        let reg = (modrm >> 3) & 7;
        if (desc >> 8) & (1 << reg) == 0 {
            return None;
        }
        // `test r/m, imm` is the one form of its group with an immediate.
        if desc & TEST != 0 && reg != 0 {
            imm = 0;
        }
        let info = MODRM_INFO[usize::from(modrm)];
        if info & REGISTER != 0 {
            if desc & MEMORY_ONLY != 0 {
                return None;
            }
        } else {
            if info & RIP != 0 {
                // The walk finds the address from the instruction's end and its last four
                // bytes: the displacement, when no immediate follows it.
                kind = if byte == 0x8d {
                    ADDRESS | WIDE
                } else {
                    ACCESS | WIDE
                };
                at += 4;
            }
            if info & SIB != 0 {
                let sib = *code.get(at)?;
                at += 1;
                if modrm < 0x40 && sib & 7 == 5 {
                    // No base: a displacement, and an address the walk keeps unless an index
                    // is added to it.
                    if sib & 0x38 == 0x20 && rex & 2 == 0 {
                        return None;
                    }
                    at += 4;
                }
            }
            at += usize::from(info & 7);
        }
    } else if prefixes & SEGMENT != 0 {
        // A segment prefix on an instruction without a memory operand: iced decides.
        return None;
    }
    let (operand16, wide64) = (prefixes & P66 != 0, rex & 8 != 0);
    at += match imm {
        0 => 0,
        IMM_B => 1,
        IMM_Z if operand16 && !wide64 => 2,
        IMM_Z => 4,
        _ if wide64 => 8,
        _ if operand16 => 2,
        _ => 4,
    };
    if kind != STEP && imm != 0 {
        return None;
    }
    (at <= MAX_LEN && at <= code.len()).then_some(kind | at as u8)
}

#[cfg(test)]
mod tests {
    use super::super::hint_of;
    use super::hint;
    use crate::providers::native::disasm::Disassembler;
    use crate::providers::native::types::Isa;

    /// The hint iced's decoding gives the instruction at offset `at` of `code`.
    fn iced(code: &[u8], at: usize) -> Option<u8> {
        let mut d = Disassembler::new(Isa::X86_64, &code[at..], 0x1000 + at as u64, false);
        hint_of(Isa::X86_64, code, at, &d.next(None)?)
    }

    /// At every byte offset of `code`, what this decoder reads is what iced gives; returns how
    /// many offsets it read, and of the instructions a linear decode finds, how many iced hints
    /// and how many of those this decoder reads.
    fn agree(code: &[u8], what: &str) -> (usize, usize, usize) {
        let mut read = 0;
        for at in 0..code.len() {
            if let Some(h) = hint(&code[at..]) {
                let end = (at + 15).min(code.len());
                assert_eq!(
                    Some(h),
                    iced(code, at),
                    "{what} at {at:#x}: {:02x?}",
                    &code[at..end]
                );
                read += 1;
            }
        }
        let (mut hinted, mut quick) = (0, 0);
        let mut d = Disassembler::new(Isa::X86_64, code, 0x1000, false);
        while let Some(i) = d.next(None) {
            let at = (i.address - 0x1000) as usize;
            if hint_of(Isa::X86_64, code, at, &i).is_some() {
                hinted += 1;
                quick += usize::from(hint(&code[at..]).is_some());
            }
        }
        (read, hinted, quick)
    }

    /// Bytes that look like instructions more often than random ones do: prefixes, REX, the
    /// `0f` escape, ModRM and SIB bytes of every form, then anything.
    fn made_up(seed: u64, count: usize) -> Vec<u8> {
        let mut state = seed;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        const PREFIXES: [u8; 12] = [
            0x66, 0xf2, 0xf3, 0x2e, 0x3e, 0x26, 0x36, 0x64, 0x65, 0xf0, 0x67, 0x48,
        ];
        let mut out = Vec::with_capacity(count * 16);
        for _ in 0..count {
            let r = next();
            for k in 0..(r % 4) {
                out.push(PREFIXES[((r >> (8 + 4 * k)) % 12) as usize]);
            }
            if r & (1 << 30) != 0 {
                out.push(0x40 | (r >> 32) as u8 & 0xf);
            }
            if r & (1 << 31) != 0 {
                out.push(0x0f);
            }
            out.extend_from_slice(&next().to_le_bytes());
            out.extend_from_slice(&next().to_le_bytes()[..(r >> 40) as usize % 8]);
        }
        out
    }

    /// The quick decoder answers only where iced gives the same hint (every byte offset of this
    /// test program's code, of libc and gdb where present, and of made-up instructions), and it
    /// answers for almost every instruction iced hints in compiler output.
    #[test]
    fn quick_hints_are_what_iced_gives_regression_30() {
        use object::{Object as _, ObjectSection as _};
        let mut sources = vec![std::env::current_exe().unwrap()];
        sources.extend(
            ["/lib/x86_64-linux-gnu/libc.so.6", "/usr/bin/gdb"]
                .map(std::path::PathBuf::from)
                .into_iter()
                .filter(|p| p.exists()),
        );
        for path in sources {
            let bytes = std::fs::read(&path).unwrap();
            let file = object::File::parse(&*bytes).unwrap();
            let text = file.section_by_name(".text").unwrap().data().unwrap();
            let text = &text[..text.len().min(2 << 20)];
            let what = path.display().to_string();
            let (read, hinted, quick) = agree(text, &what);
            // Inside instructions too, most offsets decode to something it reads.
            assert!(read > text.len() / 2, "{what}: {read} of {}", text.len());
            // libc: 95%; gdb and this program: over 99%.
            assert!(quick * 10 > hinted * 9, "{what}: {quick} of {hinted}");
        }
        let made_up = made_up(0x9e37_79b9_7f4a_7c15, 200_000);
        let (read, _, _) = agree(&made_up, "made-up instructions");
        assert!(read > made_up.len() / 4, "{read} of {}", made_up.len());
    }
}
