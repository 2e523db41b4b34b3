//! Turning a run-time instruction pointer into a module, a file offset and a static ELF address,
//! from `/proc/<pid>/maps` text and the module's program headers.
//!
//! Everything here reads untrusted bytes (a module can be any file) and bounds-checks every
//! offset; a malformed module gives `None`, never a panic.

use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::Path;

/// One line of `/proc/<pid>/maps`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Mapping {
    /// First address of the mapping.
    pub(crate) start: u64,
    /// One past the last address.
    pub(crate) end: u64,
    /// Offset in the mapped file of `start`.
    pub(crate) offset: u64,
    /// Whether the mapping may be executed (`x` in its permissions).
    pub(crate) executable: bool,
    /// The mapped file's inode (0 for anonymous memory), which tells a replaced file from the
    /// one that was mapped.
    pub(crate) inode: u64,
    /// The mapped file's path, or a pseudo-name such as `[stack]`; `None` for anonymous memory.
    pub(crate) path: Option<String>,
}

impl Mapping {
    /// The file behind the mapping, when it is one (pseudo-names are in brackets).
    pub(crate) fn file(&self) -> Option<&str> {
        self.path
            .as_deref()
            .filter(|path| path.starts_with('/'))
            .map(|path| path.strip_suffix(" (deleted)").unwrap_or(path))
    }
}

/// Parses the text of `/proc/<pid>/maps`; lines that do not parse are skipped.
pub(crate) fn parse_maps(text: &str) -> Vec<Mapping> {
    text.lines().filter_map(parse_maps_line).collect()
}

fn parse_maps_line(line: &str) -> Option<Mapping> {
    // "start-end perms offset dev inode [path]"; the path may contain spaces, so split the
    // first five fields off and keep the rest whole.
    let mut rest = line;
    let mut fields = [""; 5];
    for field in &mut fields {
        rest = rest.trim_start();
        let end = rest.find(' ').unwrap_or(rest.len());
        *field = &rest[..end];
        rest = &rest[end..];
    }
    let (start, end) = fields[0].split_once('-')?;
    let path = rest.trim_start();
    Some(Mapping {
        start: u64::from_str_radix(start, 16).ok()?,
        end: u64::from_str_radix(end, 16).ok()?,
        offset: u64::from_str_radix(fields[2], 16).ok()?,
        executable: fields[1].as_bytes().get(2) == Some(&b'x'),
        inode: fields[4].parse().ok()?,
        path: (!path.is_empty()).then(|| path.to_owned()),
    })
}

/// The mapping holding `address`, if any.
pub(crate) fn mapping_for(mappings: &[Mapping], address: u64) -> Option<&Mapping> {
    mappings
        .iter()
        .find(|mapping| mapping.start <= address && address < mapping.end)
}

/// `address` as an offset into the mapping's file.
pub(crate) fn file_offset(mapping: &Mapping, address: u64) -> Option<u64> {
    address
        .checked_sub(mapping.start)?
        .checked_add(mapping.offset)
}

/// Largest program-header table we read; real ones are a few kilobytes.
const MAX_PROGRAM_HEADERS_BYTES: u64 = 1 << 20;

/// Converts a file offset of an ELF file to the virtual address its `PT_LOAD` segment gives it.
pub(crate) fn static_address_in_file(path: &Path, file_offset: u64) -> Option<u64> {
    let mut file = std::fs::File::open(path).ok()?;
    let mut header = [0u8; 64];
    let read = read_up_to(&mut file, &mut header).ok()?;
    let header = &header[..read];
    let elf = ElfHeader::parse(header)?;
    let table_size = u64::from(elf.phentsize).checked_mul(u64::from(elf.phnum))?;
    if table_size == 0 || table_size > MAX_PROGRAM_HEADERS_BYTES {
        return None;
    }
    let mut table = vec![0u8; usize::try_from(table_size).ok()?];
    file.seek(SeekFrom::Start(elf.phoff)).ok()?;
    file.read_exact(&mut table).ok()?;
    static_address_from_program_headers(&elf, &table, file_offset)
}

fn read_up_to(file: &mut std::fs::File, buffer: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        match file.read(&mut buffer[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

/// The parts of an ELF header that locate the program headers.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ElfHeader {
    is64: bool,
    big_endian: bool,
    phoff: u64,
    phentsize: u16,
    phnum: u16,
}

impl ElfHeader {
    pub(crate) fn parse(bytes: &[u8]) -> Option<ElfHeader> {
        if !bytes.starts_with(b"\x7fELF") || bytes.len() < 6 {
            return None;
        }
        let is64 = match bytes[4] {
            1 => false,
            2 => true,
            _ => return None,
        };
        let big_endian = match bytes[5] {
            1 => false,
            2 => true,
            _ => return None,
        };
        let reader = Reader { bytes, big_endian };
        let (phoff, phentsize, phnum) = if is64 {
            (reader.u64(32)?, reader.u16(54)?, reader.u16(56)?)
        } else {
            (u64::from(reader.u32(28)?), reader.u16(42)?, reader.u16(44)?)
        };
        Some(ElfHeader {
            is64,
            big_endian,
            phoff,
            phentsize,
            phnum,
        })
    }
}

/// Bounds-checked reads of fixed-width integers.
struct Reader<'a> {
    bytes: &'a [u8],
    big_endian: bool,
}

impl Reader<'_> {
    fn array<const N: usize>(&self, at: usize) -> Option<[u8; N]> {
        let end = at.checked_add(N)?;
        self.bytes.get(at..end)?.try_into().ok()
    }
    fn u16(&self, at: usize) -> Option<u16> {
        let bytes = self.array::<2>(at)?;
        Some(if self.big_endian {
            u16::from_be_bytes(bytes)
        } else {
            u16::from_le_bytes(bytes)
        })
    }
    fn u32(&self, at: usize) -> Option<u32> {
        let bytes = self.array::<4>(at)?;
        Some(if self.big_endian {
            u32::from_be_bytes(bytes)
        } else {
            u32::from_le_bytes(bytes)
        })
    }
    fn u64(&self, at: usize) -> Option<u64> {
        let bytes = self.array::<8>(at)?;
        Some(if self.big_endian {
            u64::from_be_bytes(bytes)
        } else {
            u64::from_le_bytes(bytes)
        })
    }
}

const PT_LOAD: u32 = 1;

/// Finds the `PT_LOAD` whose file range holds `file_offset` and returns
/// `file_offset - p_offset + p_vaddr`.
pub(crate) fn static_address_from_program_headers(
    elf: &ElfHeader,
    table: &[u8],
    file_offset: u64,
) -> Option<u64> {
    let entry_size = usize::from(elf.phentsize);
    let minimum = if elf.is64 { 56 } else { 32 };
    if entry_size < minimum {
        return None;
    }
    let reader = Reader {
        bytes: table,
        big_endian: elf.big_endian,
    };
    for index in 0..usize::from(elf.phnum) {
        let base = index.checked_mul(entry_size)?;
        let (kind, offset, vaddr, filesz) = if elf.is64 {
            (
                reader.u32(base)?,
                reader.u64(base + 8)?,
                reader.u64(base + 16)?,
                reader.u64(base + 32)?,
            )
        } else {
            (
                reader.u32(base)?,
                u64::from(reader.u32(base + 4)?),
                u64::from(reader.u32(base + 8)?),
                u64::from(reader.u32(base + 16)?),
            )
        };
        if kind != PT_LOAD {
            continue;
        }
        let Some(end) = offset.checked_add(filesz) else {
            continue;
        };
        if offset <= file_offset && file_offset < end {
            return (file_offset - offset).checked_add(vaddr);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAPS: &str = "\
55d0c0a00000-55d0c0a01000 r--p 00000000 fd:01 1234   /tmp/dir with space/prog
55d0c0a01000-55d0c0a02000 r-xp 00001000 fd:01 1234   /tmp/dir with space/prog
7f0000000000-7f0000021000 rw-p 00000000 00:00 0
7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0      [stack]
7f1000000000-7f1000001000 r-xp 00002000 fd:01 99     /tmp/gone.so (deleted)
garbage line
";

    #[test]
    fn maps_lines_parse_with_spaces_and_pseudo_names() {
        let maps = parse_maps(MAPS);
        assert_eq!(maps.len(), 5);
        let code = mapping_for(&maps, 0x55d0c0a01139).unwrap();
        assert_eq!(code.file(), Some("/tmp/dir with space/prog"));
        assert_eq!(file_offset(code, 0x55d0c0a01139), Some(0x1139));
        assert!(code.executable);
        assert_eq!(code.inode, 1234);
        assert!(!mapping_for(&maps, 0x55d0c0a00010).unwrap().executable);
        assert_eq!(mapping_for(&maps, 0x7f0000000010).unwrap().file(), None);
        assert_eq!(mapping_for(&maps, 0x7ffc00000010).unwrap().file(), None);
        assert_eq!(
            mapping_for(&maps, 0x7f1000000000).unwrap().file(),
            Some("/tmp/gone.so")
        );
        assert!(mapping_for(&maps, 0x10).is_none());
    }

    #[test]
    fn static_address_of_real_elfs_matches_object() {
        use object::{Object as _, ObjectSegment as _};
        for path in ["/usr/bin/ls", "/usr/lib/x86_64-linux-gnu/libc.so.6"] {
            let data = std::fs::read(path).unwrap();
            let file = object::File::parse(&*data).unwrap();
            let mut checked = 0;
            for segment in file.segments() {
                let (offset, size) = segment.file_range();
                if size <= 0x10 {
                    continue;
                }
                let expected = segment.address() + 0x10;
                assert_eq!(
                    static_address_in_file(Path::new(path), offset + 0x10),
                    Some(expected),
                    "{path}: segment at file offset {offset:#x}"
                );
                checked += 1;
            }
            assert!(checked >= 2, "{path}: {checked} segments");
        }
        assert_eq!(
            static_address_in_file(Path::new("/usr/bin/ls"), u64::MAX),
            None
        );
        assert_eq!(static_address_in_file(Path::new("/nonexistent"), 0), None);
    }

    #[test]
    fn hostile_headers_give_none() {
        assert!(ElfHeader::parse(b"\x7fELF").is_none());
        assert!(ElfHeader::parse(b"\x7fELF\x02\x01").is_none());
        let mut header = vec![0u8; 64];
        header[..6].copy_from_slice(b"\x7fELF\x02\x01");
        header[54] = 56;
        header[56] = 3;
        let elf = ElfHeader::parse(&header).unwrap();
        // A table shorter than phnum entries.
        assert_eq!(
            static_address_from_program_headers(&elf, &[0u8; 60], 0),
            None
        );
        // A PT_LOAD with an overflowing range is skipped.
        let mut table = vec![0u8; 56 * 3];
        table[0] = 1;
        table[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        table[32..40].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(static_address_from_program_headers(&elf, &table, 5), None);
    }
}
