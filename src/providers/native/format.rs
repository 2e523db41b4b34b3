//! Header sniffing: which container a byte range is, and its architecture, from the first bytes.
//! The one sniffer of rea: admission, the artifact inventory, deep providers and process capture
//! all classify files here, with one rule for universal files (a believable slice count whose
//! slices all lie inside the file).
//!
//! Admission must classify any file, including truncated and crafted ones, without parsing it
//! fully; everything here reads a bounded head and checks every offset before using it.

use crate::vocabulary::{Architecture, Format};

/// How many leading bytes admission reads to classify a file; enough for any fat arch table
/// (8 + 64 * 32 bytes) and any realistic PE `e_lfanew`.
pub const HEAD_LEN: usize = 64 * 1024;

/// Upper bound on slices in a universal file; real ones have at most a handful, and the bound
/// also rejects Java class files, which share the `0xcafebabe` magic.
const MAX_FAT_ARCHES: u32 = 64;

/// One slice of a universal Mach-O, as listed in its fat header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FatSlice {
    /// Offset of the slice in the file.
    pub offset: u64,
    /// Length of the slice.
    pub size: u64,
    /// Mach-O CPU type.
    pub cputype: u32,
    /// Mach-O CPU subtype.
    pub cpusubtype: u32,
}

fn be32(data: &[u8], at: usize) -> Option<u32> {
    let bytes = data.get(at..at.checked_add(4)?)?;
    Some(u32::from_be_bytes(bytes.try_into().ok()?))
}

fn le32(data: &[u8], at: usize) -> Option<u32> {
    let bytes = data.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes(bytes.try_into().ok()?))
}

fn be64(data: &[u8], at: usize) -> Option<u64> {
    let bytes = data.get(at..at.checked_add(8)?)?;
    Some(u64::from_be_bytes(bytes.try_into().ok()?))
}

/// Byte order of a thin Mach-O header, or `None` when the magic is not Mach-O.
fn macho_endian(head: &[u8]) -> Option<bool> {
    match head.get(0..4)? {
        [0xce, 0xfa, 0xed, 0xfe] | [0xcf, 0xfa, 0xed, 0xfe] => Some(false),
        [0xfe, 0xed, 0xfa, 0xce] | [0xfe, 0xed, 0xfa, 0xcf] => Some(true),
        _ => None,
    }
}

/// Reads a u32 of a thin Mach-O header in its own byte order.
fn macho_u32(head: &[u8], at: usize) -> Option<u32> {
    if macho_endian(head)? {
        be32(head, at)
    } else {
        le32(head, at)
    }
}

/// The `filetype` of a thin Mach-O header (`MH_EXECUTE` = 2, `MH_DYLIB` = 6, `MH_BUNDLE` = 8, …).
pub fn macho_filetype(head: &[u8]) -> Option<u32> {
    macho_u32(head, 12)
}

/// Parses a fat header; `None` unless every listed slice lies inside a file of `file_len` bytes
/// and no two slices overlap (`lipo` never writes overlapping slices; 64 overlapping 1 GiB slices
/// made one file cost 64 GiB of reading), so the slices of a file never add up to more than it.
pub fn fat_slices(head: &[u8], file_len: u64) -> Option<Vec<FatSlice>> {
    let is64 = match head.get(0..4)? {
        [0xca, 0xfe, 0xba, 0xbe] => false,
        [0xca, 0xfe, 0xba, 0xbf] => true,
        _ => return None,
    };
    let count = be32(head, 4)?;
    if count == 0 || count > MAX_FAT_ARCHES {
        return None;
    }
    let entry = if is64 { 32 } else { 20 };
    let table_end = 8 + u64::from(count) * entry;
    let mut slices = Vec::with_capacity(count as usize);
    for index in 0..count as usize {
        let at = 8 + index * entry as usize;
        let cputype = be32(head, at)?;
        let cpusubtype = be32(head, at + 4)?;
        let (offset, size) = if is64 {
            (be64(head, at + 8)?, be64(head, at + 16)?)
        } else {
            (
                u64::from(be32(head, at + 8)?),
                u64::from(be32(head, at + 12)?),
            )
        };
        let end = offset.checked_add(size)?;
        if size == 0 || offset < table_end || end > file_len {
            return None;
        }
        slices.push(FatSlice {
            offset,
            size,
            cputype,
            cpusubtype,
        });
    }
    let mut ranges: Vec<(u64, u64)> = slices.iter().map(|s| (s.offset, s.size)).collect();
    ranges.sort_unstable();
    if ranges.windows(2).any(|w| w[1].0 < w[0].0 + w[0].1) {
        return None;
    }
    Some(slices)
}

/// Whether the head starts a PE image (`MZ` with a `PE\0\0` signature at `e_lfanew`).
fn pe_header_offset(head: &[u8]) -> Option<usize> {
    if head.get(0..2)? != b"MZ" {
        return None;
    }
    let lfanew = le32(head, 0x3c)? as usize;
    (head.get(lfanew..lfanew.checked_add(4)?)? == b"PE\0\0").then_some(lfanew)
}

/// Classifies a byte range from its head; `len` is the full length of the range. The answer is
/// one of `elf`, `macho`, `macho-universal`, `pe` or `raw`.
pub fn sniff(head: &[u8], len: u64) -> Format {
    if head.starts_with(b"\x7fELF") && head.len() >= 20 {
        Format::Elf
    } else if macho_endian(head).is_some() && head.len() >= 28 {
        Format::MachO
    } else if fat_slices(head, len).is_some() {
        Format::MachOUniversal
    } else if pe_header_offset(head).is_some() {
        Format::Pe
    } else {
        Format::Raw
    }
}

/// Whether a thin Mach-O head is of a 64-bit image.
pub fn macho_is_64(head: &[u8]) -> bool {
    matches!(
        head.get(0..4),
        Some([0xcf, 0xfa, 0xed, 0xfe] | [0xfe, 0xed, 0xfa, 0xcf])
    )
}

/// Architecture of a Mach-O CPU type and subtype.
pub fn macho_cpu_name(cputype: u32, cpusubtype: u32) -> Architecture {
    match cputype {
        7 => Architecture::X86,
        0x0100_0007 => Architecture::X86_64,
        12 => Architecture::Arm,
        0x0100_000c if cpusubtype & 0xff == 2 => Architecture::Arm64e,
        0x0100_000c => Architecture::Arm64,
        0x0200_000c => Architecture::Arm64_32,
        18 => Architecture::Ppc,
        0x0100_0012 => Architecture::Ppc64,
        _ => Architecture::Unknown,
    }
}

fn elf_machine_name(head: &[u8]) -> Architecture {
    let class64 = head.get(4) == Some(&2);
    let big = head.get(5) == Some(&2);
    let Some(bytes) = head.get(18..20) else {
        return Architecture::Unknown;
    };
    let bytes = [bytes[0], bytes[1]];
    let machine = if big {
        u16::from_be_bytes(bytes)
    } else {
        u16::from_le_bytes(bytes)
    };
    match machine {
        3 => Architecture::X86,
        62 => Architecture::X86_64,
        40 => Architecture::Arm,
        183 => Architecture::Arm64,
        20 => Architecture::Ppc,
        21 => Architecture::Ppc64,
        8 if class64 => Architecture::Mips64,
        8 => Architecture::Mips,
        243 if class64 => Architecture::Riscv64,
        243 => Architecture::Riscv32,
        22 => Architecture::S390x,
        2 => Architecture::Sparc,
        43 => Architecture::Sparcv9,
        258 => Architecture::Loongarch64,
        _ => Architecture::Unknown,
    }
}

fn pe_machine_name(head: &[u8]) -> Architecture {
    let Some(at) = pe_header_offset(head) else {
        return Architecture::Unknown;
    };
    let Some(bytes) = head.get(at + 4..at + 6) else {
        return Architecture::Unknown;
    };
    match u16::from_le_bytes([bytes[0], bytes[1]]) {
        0x14c => Architecture::X86,
        0x8664 => Architecture::X86_64,
        0xaa64 => Architecture::Arm64,
        0xa641 => Architecture::Arm64ec,
        0x1c0 | 0x1c2 | 0x1c4 => Architecture::Arm,
        0x5064 => Architecture::Riscv64,
        _ => Architecture::Unknown,
    }
}

/// Architecture of a thin image (ELF, Mach-O or PE) from its head.
pub fn thin_architecture(format: Format, head: &[u8]) -> Architecture {
    match format {
        Format::Elf => elf_machine_name(head),
        Format::MachO => match (macho_u32(head, 4), macho_u32(head, 8)) {
            (Some(cpu), Some(sub)) => macho_cpu_name(cpu, sub),
            _ => Architecture::Unknown,
        },
        Format::Pe => pe_machine_name(head),
        _ => Architecture::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffs_small_headers() {
        assert_eq!(sniff(b"", 0), Format::Raw);
        assert_eq!(sniff(b"\x7fELF", 4), Format::Raw);
        let mut elf = b"\x7fELF\x02\x01\x01".to_vec();
        elf.resize(64, 0);
        elf[18] = 62;
        assert_eq!(sniff(&elf, 64), Format::Elf);
        assert_eq!(thin_architecture(Format::Elf, &elf), "x86_64");
        // A Java class file shares the fat magic but is not a universal binary.
        let class = [
            0xca, 0xfe, 0xba, 0xbe, 0, 0, 0, 52, 0, 0x1d, 0x0a, 0, 0, 0, 0, 0,
        ];
        assert_eq!(sniff(&class, 4096), Format::Raw);
        assert_eq!(sniff(b"MZ\x90\x00", 4), Format::Raw);
    }

    #[test]
    fn fat_slices_must_fit_the_file() {
        let mut fat = vec![0xca, 0xfe, 0xba, 0xbe, 0, 0, 0, 1];
        fat.extend_from_slice(&0x0100_0007u32.to_be_bytes());
        fat.extend_from_slice(&3u32.to_be_bytes());
        fat.extend_from_slice(&4096u32.to_be_bytes());
        fat.extend_from_slice(&100u32.to_be_bytes());
        fat.extend_from_slice(&12u32.to_be_bytes());
        assert_eq!(fat_slices(&fat, 4196).map(|s| s.len()), Some(1));
        assert_eq!(fat_slices(&fat, 4195), None);
        assert_eq!(macho_cpu_name(0x0100_000c, 0x8000_0002), "arm64e");
    }
}
