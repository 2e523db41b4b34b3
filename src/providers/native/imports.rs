//! Imports by address: ELF PLT stubs and GOT slots, Mach-O stubs and pointer slots (through the
//! indirect symbol table), and PE import address table slots and the thunks that jump through
//! them.

use std::collections::HashMap;

use object::macho as mh;
use object::read::macho::MachHeader;
use object::read::macho::{MachOFile, Nlist, Section as _};
use object::read::pe::ImageNtHeaders;
use object::read::pe::PeFile;
use object::{LittleEndian as LE, Object, ObjectSymbol, ObjectSymbolTable, RelocationTarget};

use super::types::{ImportEntry, Isa, SectionInfo};
use crate::vocabulary::ImportKind;

/// Upper bound on imports per library descriptor or stub section (a crafted table must not
/// allocate without end).
const MAX_PER_TABLE: usize = 1 << 20;

/// Collects every import reachable at a known address, sorted by address, one per address.
pub(crate) fn collect(
    file: &object::File<'_>,
    bytes: &[u8],
    sections: &[SectionInfo],
    isa: Isa,
) -> Vec<ImportEntry> {
    let mut out = match file {
        object::File::Elf32(_) | object::File::Elf64(_) => elf_imports(file, bytes, sections, isa),
        object::File::MachO32(f) => macho_imports(f),
        object::File::MachO64(f) => macho_imports(f),
        object::File::Pe32(f) => pe_thunks(pe_imports(f), bytes, sections, isa),
        object::File::Pe64(f) => pe_thunks(pe_imports(f), bytes, sections, isa),
        _ => Vec::new(),
    };
    out.sort_by(|a, b| (a.address, a.kind.as_str()).cmp(&(b.address, b.kind.as_str())));
    out.dedup_by_key(|e| e.address);
    // Import and library names are shown as rea shows every name read from a file.
    for entry in &mut out {
        entry.name = super::symbols::escape_controls(&entry.name);
        if let Some(library) = &mut entry.library {
            *library = super::symbols::escape_controls(library);
        }
    }
    out
}

/// GOT slot address → imported symbol name, from the dynamic relocations.
fn elf_slots(file: &object::File<'_>) -> HashMap<u64, String> {
    let mut slots = HashMap::new();
    let (Some(relocations), Some(dynsym)) =
        (file.dynamic_relocations(), file.dynamic_symbol_table())
    else {
        return slots;
    };
    for (offset, relocation) in relocations {
        let RelocationTarget::Symbol(index) = relocation.target() else {
            continue;
        };
        let Ok(symbol) = dynsym.symbol_by_index(index) else {
            continue;
        };
        if let Ok(name) = symbol.name()
            && !name.is_empty()
        {
            slots.insert(offset, name.to_string());
        }
        if slots.len() >= MAX_PER_TABLE {
            break;
        }
    }
    slots
}

fn i32_at(data: &[u8], at: usize) -> Option<i32> {
    Some(i32::from_le_bytes(
        data.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

fn u32_at(data: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        data.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

/// The GOT slot an x86 or x86-64 PLT entry jumps through, from its `jmp *slot` instruction.
fn x86_plt_slot(entry: &[u8], entry_addr: u64, isa: Isa, got_plt: u64) -> Option<u64> {
    for pos in 0..entry.len().saturating_sub(5) {
        match (entry[pos], entry[pos + 1]) {
            (0xff, 0x25) if isa == Isa::X86_64 => {
                let disp = i32_at(entry, pos + 2)?;
                let next = entry_addr.checked_add(pos as u64 + 6)?;
                return Some(next.wrapping_add_signed(i64::from(disp)));
            }
            (0xff, 0x25) => return u32_at(entry, pos + 2).map(u64::from),
            (0xff, 0xa3) if isa == Isa::X86 => {
                let disp = i32_at(entry, pos + 2)?;
                return Some(got_plt.wrapping_add_signed(i64::from(disp)) & 0xffff_ffff);
            }
            _ => {}
        }
    }
    None
}

/// The GOT slot an AArch64 PLT entry loads from: `adrp x16, page` then `ldr x17, [x16, #off]`.
fn arm64_plt_slot(entry: &[u8], entry_addr: u64) -> Option<u64> {
    let words: Vec<u32> = entry
        .chunks_exact(4)
        .filter_map(|w| Some(u32::from_le_bytes(w.try_into().ok()?)))
        .collect();
    for (i, pair) in words.windows(2).enumerate() {
        let (adrp, ldr) = (pair[0], pair[1]);
        if adrp & 0x9f00_001f != 0x9000_0010 || ldr & 0xffc0_03ff != 0xf940_0211 {
            continue;
        }
        let immlo = u64::from((adrp >> 29) & 3);
        let immhi = u64::from((adrp >> 5) & 0x7ffff);
        let imm = ((immhi << 2) | immlo) << 12;
        // Sign-extend the 33-bit page offset.
        let imm = ((imm << 31) as i64) >> 31;
        let pc = entry_addr.checked_add(i as u64 * 4)?;
        let page = (pc & !0xfff).wrapping_add_signed(imm);
        let offset = u64::from((ldr >> 10) & 0xfff) * 8;
        return Some(page.wrapping_add(offset));
    }
    None
}

fn elf_imports(
    file: &object::File<'_>,
    bytes: &[u8],
    sections: &[SectionInfo],
    isa: Isa,
) -> Vec<ImportEntry> {
    let slots = elf_slots(file);
    if slots.is_empty() {
        return Vec::new();
    }
    let mut out: Vec<ImportEntry> = slots
        .iter()
        .map(|(&address, name)| ImportEntry {
            address,
            name: name.clone(),
            library: None,
            kind: ImportKind::Got,
        })
        .collect();
    let got_plt = sections
        .iter()
        .find(|s| s.name == ".got.plt")
        .or_else(|| sections.iter().find(|s| s.name == ".got"))
        .map(|s| s.address)
        .unwrap_or(0);
    for section in sections.iter().filter(|s| s.executable) {
        let name = section.name.as_str();
        if !(name.starts_with(".plt") || name == ".iplt") {
            continue;
        }
        let Some(offset) = section.file_offset else {
            continue;
        };
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        let end = start.saturating_add(usize::try_from(section.file_size).unwrap_or(0));
        let Some(data) = bytes.get(start..end.min(bytes.len())) else {
            continue;
        };
        // `.plt.got` holds 8-byte entries unless built for IBT, whose entries start with
        // `endbr` and take 16 bytes; every other PLT flavor uses 16-byte entries.
        let entry_size = if name == ".plt.got" && !data.starts_with(&[0xf3, 0x0f, 0x1e]) {
            8
        } else {
            16
        };
        for (index, entry) in data.chunks(entry_size).enumerate().take(MAX_PER_TABLE) {
            let entry_addr = section.address.saturating_add((index * entry_size) as u64);
            let slot = match isa {
                Isa::X86 | Isa::X86_64 => x86_plt_slot(entry, entry_addr, isa, got_plt),
                Isa::Arm64 => arm64_plt_slot(entry, entry_addr),
                Isa::Other => None,
            };
            if let Some(symbol) = slot.and_then(|s| slots.get(&s)) {
                out.push(ImportEntry {
                    address: entry_addr,
                    name: symbol.clone(),
                    library: None,
                    kind: ImportKind::Plt,
                });
            }
        }
    }
    out
}

fn macho_imports<Mach: MachHeader<Endian = object::Endianness>>(
    file: &MachOFile<'_, Mach>,
) -> Vec<ImportEntry> {
    let endian = file.endian();
    let data = file.data();
    let mut indirect = None;
    let mut dylibs: Vec<String> = Vec::new();
    if let Ok(mut commands) = file.macho_load_commands() {
        while let Ok(Some(command)) = commands.next() {
            if let Ok(Some(dysymtab)) = command.dysymtab() {
                indirect = dysymtab.indirect_symbols(endian, data).ok();
            } else if let Ok(Some(dylib)) = command.dylib() {
                let name = command
                    .string(endian, dylib.dylib.name)
                    .map(|n| String::from_utf8_lossy(n).into_owned())
                    .unwrap_or_default();
                dylibs.push(name);
            }
        }
    }
    let Some(indirect) = indirect else {
        return Vec::new();
    };
    let symbols = file.macho_symbol_table();
    let pointer = if file.is_64() { 8 } else { 4 };
    let mut out = Vec::new();
    for section in file.sections() {
        let raw = section.macho_section();
        let flags = raw.flags(endian);
        let typ = flags.typ();
        let (stride, kind) = if typ == mh::S_SYMBOL_STUBS {
            (u64::from(raw.reserved2(endian)), ImportKind::Stub)
        } else if typ == mh::S_NON_LAZY_SYMBOL_POINTERS
            || typ == mh::S_LAZY_SYMBOL_POINTERS
            || typ == mh::S_LAZY_DYLIB_SYMBOL_POINTERS
        {
            (pointer, ImportKind::Pointer)
        } else {
            continue;
        };
        if stride == 0 {
            continue;
        }
        let address: u64 = raw.addr(endian).into();
        let size: u64 = raw.size(endian).into();
        let first = raw.reserved1(endian) as usize;
        let count = usize::try_from(size / stride)
            .unwrap_or(0)
            .min(MAX_PER_TABLE);
        for i in 0..count {
            let Some(entry) = first.checked_add(i).and_then(|at| indirect.get(at)) else {
                break;
            };
            let Some(index) = entry.get(endian).index() else {
                continue;
            };
            let Ok(nlist) = symbols.symbol(object::SymbolIndex(index as usize)) else {
                continue;
            };
            let Ok(name) = nlist.name(endian, symbols.strings()) else {
                continue;
            };
            if name.is_empty() {
                continue;
            }
            let ordinal = nlist.n_desc(endian).0 >> 8;
            let library = match ordinal {
                1..=0xfd => dylibs.get(usize::from(ordinal) - 1).cloned(),
                _ => None,
            };
            out.push(ImportEntry {
                address: address.saturating_add(i as u64 * stride),
                name: String::from_utf8_lossy(name).into_owned(),
                library,
                kind,
            });
        }
    }
    out
}

/// Adds the import thunks of a PE file (`jmp [__imp_puts]`, which mingw-w64 links for every
/// import it calls directly) as imports of kind `thunk`, so a call to one names the import.
/// Only a `jmp` through an import address table slot qualifies; a call into the middle of an
/// instruction cannot happen, so a chance match of those bytes elsewhere names nothing.
fn pe_thunks(
    mut imports: Vec<ImportEntry>,
    bytes: &[u8],
    sections: &[SectionInfo],
    isa: Isa,
) -> Vec<ImportEntry> {
    let slots: HashMap<u64, usize> = imports
        .iter()
        .enumerate()
        .map(|(i, entry)| (entry.address, i))
        .collect();
    if slots.is_empty() || !matches!(isa, Isa::X86 | Isa::X86_64) {
        return imports;
    }
    let mut thunks = Vec::new();
    for section in sections.iter().filter(|s| s.executable) {
        let Some(offset) = section.file_offset else {
            continue;
        };
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        let end = start.saturating_add(usize::try_from(section.file_size).unwrap_or(0));
        let Some(data) = bytes.get(start..end.min(bytes.len())) else {
            continue;
        };
        for at in memchr::memmem::find_iter(data, &[0xff, 0x25]) {
            let address = section.address.wrapping_add(at as u64);
            let slot = match isa {
                Isa::X86_64 => i32_at(data, at + 2)
                    .map(|disp| address.wrapping_add(6).wrapping_add_signed(i64::from(disp))),
                _ => u32_at(data, at + 2).map(u64::from),
            };
            if let Some(&i) = slot.and_then(|slot| slots.get(&slot)) {
                thunks.push(ImportEntry {
                    address,
                    name: imports[i].name.clone(),
                    library: imports[i].library.clone(),
                    kind: ImportKind::Thunk,
                });
            }
            if thunks.len() >= MAX_PER_TABLE {
                break;
            }
        }
    }
    imports.extend(thunks);
    imports
}

fn pe_imports<Pe: ImageNtHeaders>(file: &PeFile<'_, Pe>) -> Vec<ImportEntry> {
    let mut out = Vec::new();
    let Ok(Some(table)) = file.import_table() else {
        return out;
    };
    let image_base = file.relative_address_base();
    let pointer = if file.is_64() { 8u64 } else { 4 };
    let Ok(mut descriptors) = table.descriptors() else {
        return out;
    };
    while let Ok(Some(descriptor)) = descriptors.next() {
        let library = table
            .name(descriptor.name.get(LE))
            .ok()
            .map(|n| String::from_utf8_lossy(n).into_owned());
        let first = descriptor.first_thunk.get(LE);
        let original = descriptor.original_first_thunk.get(LE);
        let lookup = if original != 0 { original } else { first };
        let Ok(mut thunks) = table.thunks(lookup) else {
            continue;
        };
        let mut index = 0u64;
        while let Ok(Some(thunk)) = thunks.next::<Pe>() {
            let name = match table.import::<Pe>(thunk) {
                Ok(object::read::pe::Import::Name(_, name)) => {
                    String::from_utf8_lossy(name).into_owned()
                }
                Ok(object::read::pe::Import::Ordinal(ordinal)) => format!("ordinal#{ordinal}"),
                Err(_) => break,
            };
            out.push(ImportEntry {
                address: image_base
                    .wrapping_add(u64::from(first))
                    .wrapping_add(index * pointer),
                name,
                library: library.clone(),
                kind: ImportKind::Iat,
            });
            index += 1;
            if index as usize >= MAX_PER_TABLE {
                break;
            }
        }
    }
    out
}
