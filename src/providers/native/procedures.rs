//! Procedures of a document: the union of every source of function starts the format offers,
//! merged to one entry per address with the best name and a stated size.

use std::collections::{HashMap, HashSet};

use object::elf;
use object::read::elf::{ElfFile, FileHeader, Sym as _};
use object::read::macho::MachHeader;
use object::read::macho::MachOFile;
use object::read::pe::ImageNtHeaders;
use object::read::pe::PeFile;
use object::{
    ExportTarget, LittleEndian as LE, NameOrOrdinal, Object, ObjectSection, ObjectSegment,
    ObjectSymbol, SymbolKind,
};

use super::ehframe::{self, EhFrameBases};
use super::entry_main;
use super::leb128::uleb;
use super::objc;
use super::pclntab;
use super::symbols::{self, NameCandidate, NameSource};
use super::types::{ImportEntry, Isa, Procedure, SectionInfo};
use crate::vocabulary::{FoundBy, ImportKind, NameOrigin};

/// Upper bound on starts read from one source, against crafted tables that claim billions.
const MAX_STARTS: usize = 8_000_000;

/// Which source stated a size; lower wins when several do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum SizeSource {
    Symbol,
    Stub,
    Unwind,
    GoTable,
}

/// One observation of a function start from one source.
struct Start {
    address: u64,
    name: Option<NameCandidate>,
    size: Option<(SizeSource, u64)>,
}

impl Start {
    fn bare(address: u64) -> Start {
        Start {
            address,
            name: None,
            size: None,
        }
    }

    fn named(address: u64, source: NameSource, raw: &str) -> Start {
        Start {
            address,
            name: (!raw.is_empty()).then(|| NameCandidate {
                source,
                raw: super::symbols::escape_controls(raw),
                ifunc: false,
                macho: false,
            }),
            size: None,
        }
    }
}

/// Whether an executable section holds PLT entries (`.plt`, `.plt.sec`, `.plt.got`, `.iplt`).
fn is_plt_section(name: &str) -> bool {
    name.starts_with(".plt") || name == ".iplt"
}

/// Collects procedures and the entry point of a parsed file.
pub(crate) fn collect(
    file: &object::File<'_>,
    bytes: &[u8],
    sections: &[SectionInfo],
    imports: &[ImportEntry],
) -> (Vec<Procedure>, Option<u64>) {
    let thumb = file.architecture() == object::Architecture::Arm;
    let is_macho = matches!(file, object::File::MachO32(_) | object::File::MachO64(_));
    let mut starts: Vec<Start> = Vec::new();

    match file {
        object::File::Elf32(f) => elf_symbol_starts(f, thumb, &mut starts),
        object::File::Elf64(f) => elf_symbol_starts(f, thumb, &mut starts),
        _ => other_symbol_starts(file, thumb, &mut starts),
    }

    // ELF dynamic symbols were read above with their versions; Mach-O exports come from the
    // trie walker in `macho_starts`, which bounds its work. That leaves PE exports.
    let is_elf = matches!(file, object::File::Elf32(_) | object::File::Elf64(_));
    if !is_macho
        && !is_elf
        && let Ok(exports) = file.exports()
    {
        for export in exports.take(MAX_STARTS) {
            let Ok(export) = export else { break };
            let ExportTarget::Address { address } = export.target() else {
                continue;
            };
            let name = match export.name() {
                NameOrOrdinal::Name(name) => String::from_utf8_lossy(name).into_owned(),
                NameOrOrdinal::Ordinal(_) => String::new(),
            };
            starts.push(Start::named(address, NameSource::Global, &name));
        }
    }

    // A PLT entry ends where the next one in its section starts (or at the section's end).
    let plt: Vec<&ImportEntry> = imports.iter().filter(|i| i.kind == "plt").collect();
    for (i, import) in plt.iter().enumerate() {
        let mut start = Start::named(
            import.address,
            NameSource::Stub,
            &format!("{}@plt", import.name),
        );
        let section_end = sections
            .iter()
            .find(|s| import.address >= s.address && import.address - s.address < s.size)
            .map(|s| s.address.saturating_add(s.size));
        let next = plt.get(i + 1).map(|n| n.address);
        if let Some(end) = match (next, section_end) {
            (Some(n), Some(e)) => Some(n.min(e)),
            (None, e) => e,
            (n, None) => n,
        } && end > import.address
        {
            start.size = Some((SizeSource::Stub, end - import.address));
        }
        starts.push(start);
    }

    let mut entry = match file.entry() {
        0 => None,
        e => Some(e),
    };
    let mut complete_starts = false;
    // `main` as the file states it: the procedure at this address is `main` when no symbol
    // names it, with where the file says so as its name source.
    let mut stated_main: Option<(u64, NameOrigin)> = None;
    // What the C runtime calls the function it states: `main`, or on Windows `wmain`,
    // `WinMain` or `wWinMain`.
    let mut main_name = "main";
    // Objective-C methods the class and category lists name, likewise under no symbol.
    let mut objc_methods: Vec<objc::Method> = Vec::new();
    match file {
        object::File::Elf32(_) | object::File::Elf64(_) => {
            elf_unwind_starts(file, sections, &mut starts)
        }
        object::File::MachO32(f) => {
            let lc_main;
            (entry, complete_starts, lc_main) = macho_starts(f, thumb, &mut starts);
            stated_main = lc_main.map(|a| (a, NameOrigin::LcMain));
        }
        object::File::MachO64(f) => {
            let lc_main;
            (entry, complete_starts, lc_main) = macho_starts(f, thumb, &mut starts);
            stated_main = lc_main.map(|a| (a, NameOrigin::LcMain));
            objc_methods = objc::file_methods(f);
        }
        object::File::Pe32(f) => pe_unwind_starts(f, &mut starts),
        object::File::Pe64(f) => pe_unwind_starts(f, &mut starts),
        _ => {}
    }
    // Go's pclntab lists every function of the program, assembly ones included.
    let before_go = starts.len();
    go_starts(file, bytes, sections, &mut starts);
    let go_listed = starts.len() > before_go;
    if is_macho {
        for name in starts.iter_mut().filter_map(|s| s.name.as_mut()) {
            name.macho = matches!(name.source, NameSource::Global | NameSource::Local);
        }
    }

    let code: Vec<(u64, u64)> = sections
        .iter()
        .filter(|s| s.executable)
        .map(|s| (s.address, s.address.saturating_add(s.size)))
        .collect();
    let in_code = |address: u64| code.iter().any(|&(lo, hi)| address >= lo && address < hi);
    entry = entry.filter(|&e| in_code(e));
    // An ELF file's dynamic relocations, read once for the entry's `main`, the init/fini
    // arrays and the code pointers in data.
    let relocated = is_elf.then(|| RelocatedSlots::of(file));
    if let Some(e) = entry {
        starts.push(Start::bare(e));
        if let Some(relocated) = &relocated {
            let slot_value = |slot: u64| elf_slot_value(relocated, bytes, sections, slot);
            stated_main = entry_main::libc_start_main_argument(
                file.architecture(),
                bytes,
                sections,
                imports,
                e,
                &slot_value,
            )
            .map(|a| (a, NameOrigin::LibcStartMain));
        } else if let Some(bitness) = match file.architecture() {
            object::Architecture::X86_64 if matches!(file, object::File::Pe64(_)) => Some(64),
            object::Architecture::I386 if matches!(file, object::File::Pe32(_)) => Some(32),
            _ => None,
        } {
            stated_main = entry_main::mingw_main(bytes, sections, e, bitness)
                .map(|a| (a, NameOrigin::MingwCrtStartup));
            if stated_main.is_none()
                && let Some((address, name)) =
                    entry_main::msvc_main(bytes, sections, imports, e, bitness)
            {
                stated_main = Some((address, NameOrigin::MsvcCrtStartup));
                main_name = name;
            }
            if stated_main.is_none()
                && let Some((address, name)) = entry_main::msvc_static_main(
                    bytes,
                    sections,
                    imports,
                    e,
                    file.relative_address_base(),
                    bitness,
                )
            {
                stated_main = Some((address, NameOrigin::MsvcStaticCrt));
                main_name = name;
            }
        }
    }
    let stated_main = stated_main.filter(|&(a, _)| in_code(a));
    if let Some((address, _)) = stated_main {
        starts.push(Start::bare(address));
    }
    // A method's implementation starts a procedure even where no other source lists it.
    starts.extend(objc_methods.iter().map(|m| Start::bare(m.imp)));
    starts.retain(|s| in_code(s.address));
    // Whether a symbol table lists the functions: then the walk below only adds the roots
    // the file points at; without one, it follows code to find them.
    let listed = complete_starts
        || go_listed
        || starts.iter().any(|s| {
            s.name
                .as_ref()
                .is_some_and(|n| n.source == NameSource::Local)
        });
    let mut procedures = merge(starts);
    add_thunks(&mut procedures, imports);
    let discovered = super::discovery::discover(super::discovery::Inputs {
        // Only the instruction sets the walk decodes; `image` maps the rest.
        isa: match file.architecture() {
            object::Architecture::X86_64 => Isa::X86_64,
            object::Architecture::I386 => Isa::X86,
            object::Architecture::Aarch64 => Isa::Arm64,
            _ => Isa::Other,
        },
        bytes,
        sections,
        known: procedures.iter().map(|p| (p.address, p.size)).collect(),
        roots: roots(file, bytes, sections, relocated.as_ref()),
        pointers: if listed {
            Vec::new()
        } else {
            code_pointers(file, bytes, sections, relocated.as_ref())
        },
        noreturn: noreturn_stubs(imports),
        follow: !listed,
    });
    // A call into a Mach-O's `__stubs` reaches an import, which the file's imports name; no
    // table lists a stub as a function (ELF's PLT entries are, as `name@plt`).
    let stubs: HashSet<u64> = imports
        .iter()
        .filter(|i| i.kind == ImportKind::Stub)
        .map(|i| i.address)
        .collect();
    // A start no table sizes (the entry, a stated `main`) spans the code its walk decoded.
    for (address, size) in discovered.sizes {
        if let Ok(i) = procedures.binary_search_by_key(&address, |p| p.address) {
            procedures[i].size.get_or_insert(size);
        }
    }
    let found: Vec<_> = discovered
        .found
        .into_iter()
        .filter(|(address, _, _)| !stubs.contains(address))
        .collect();
    if !found.is_empty() {
        // A thunk the walk reached (MSVC lays them out unaligned, see `add_thunks`) is named
        // as the aligned ones are.
        let thunks: HashMap<u64, &str> = imports
            .iter()
            .filter(|i| i.kind == ImportKind::Thunk)
            .map(|i| (i.address, i.name.as_str()))
            .collect();
        procedures.extend(found.into_iter().map(|(address, how, size)| Procedure {
            address,
            name: thunks.get(&address).map(|name| thunk_name(name)),
            raw_name: None,
            name_source: None,
            found_by: Some(how),
            size,
            aliases: Vec::new(),
        }));
        procedures.sort_unstable_by_key(|p| p.address);
    }
    let stated = stated_main
        .map(|(address, source)| (address, main_name.to_string(), source))
        .into_iter()
        .chain(objc_methods.into_iter().map(|m| (m.imp, m.name, m.source)));
    for (address, name, source) in stated {
        // Never over a symbol's name: the stated name fills only a nameless procedure.
        if let Ok(i) = procedures.binary_search_by_key(&address, |p| p.address)
            && procedures[i].name.is_none()
        {
            procedures[i].name = Some(name);
            procedures[i].name_source = Some(source);
        }
    }
    if complete_starts {
        extend_to_next_start(&mut procedures, &code);
    }
    (procedures, entry)
}

/// An ELF file's dynamic relocations' values by place (the first one for each place), read
/// once for every slot asked about.
struct RelocatedSlots(Vec<(u64, u64)>);

impl RelocatedSlots {
    fn of(file: &object::File<'_>) -> RelocatedSlots {
        let mut relocated = super::relocations::relocated_pointers(file);
        // Stable: the first relocation of a place stays first.
        relocated.sort_by_key(|&(_, place)| place);
        RelocatedSlots(relocated)
    }

    fn value(&self, slot: u64) -> Option<u64> {
        let at = self.0.partition_point(|&(_, place)| place < slot);
        self.0
            .get(at)
            .filter(|&&(_, place)| place == slot)
            .map(|&(value, _)| value)
    }
}

/// The pointer an ELF slot holds once relocated: a dynamic relocation's value for it, else the
/// slot's bytes in the file (little-endian, 64-bit: the callers are x86-64 and AArch64).
fn elf_slot_value(
    relocated: &RelocatedSlots,
    bytes: &[u8],
    sections: &[SectionInfo],
    slot: u64,
) -> Option<u64> {
    if let Some(value) = relocated.value(slot) {
        return Some(value);
    }
    let s = sections
        .iter()
        .find(|s| slot >= s.address && slot - s.address < s.file_size)?;
    let at = usize::try_from(s.file_offset?.checked_add(slot - s.address)?).ok()?;
    let word: [u8; 8] = bytes.get(at..at.checked_add(8)?)?.try_into().ok()?;
    Some(u64::from_le_bytes(word)).filter(|&v| v != 0)
}

/// The procedure name of the import thunk that jumps to `import`: `puts@thunk`.
fn thunk_name(import: &str) -> String {
    format!("{}@thunk", symbols::escape_controls(import))
}

/// Adds each PE import thunk (`jmp [__imp_puts]`) no symbol names as a procedure
/// `puts@thunk`: code calls it as it calls a function, and a stripped file lists it nowhere.
fn add_thunks(procedures: &mut Vec<Procedure>, imports: &[ImportEntry]) {
    let before = procedures.len();
    // mingw-w64 lays its thunks out 8 bytes apart; `ff 25` met elsewhere inside code is
    // part of another instruction.
    for thunk in imports
        .iter()
        .filter(|i| i.kind == ImportKind::Thunk && i.address.is_multiple_of(8))
    {
        if procedures
            .binary_search_by_key(&thunk.address, |p| p.address)
            .is_ok()
        {
            continue;
        }
        procedures.push(Procedure {
            address: thunk.address,
            name: Some(thunk_name(&thunk.name)),
            raw_name: None,
            name_source: None,
            found_by: None,
            // The thunk is one `jmp [rip+slot]`.
            size: Some(6),
            aliases: Vec::new(),
        });
    }
    if procedures.len() != before {
        procedures.sort_unstable_by_key(|p| p.address);
    }
}

/// Stubs and thunks of imports that never return, and the slots calls to them read, sorted.
fn noreturn_stubs(imports: &[ImportEntry]) -> Vec<u64> {
    let mut out: Vec<u64> = imports
        .iter()
        .filter(|i| {
            matches!(
                i.kind,
                ImportKind::Plt
                    | ImportKind::Thunk
                    | ImportKind::Stub
                    | ImportKind::Iat
                    | ImportKind::Got
                    | ImportKind::Pointer
            )
        })
        .filter(|i| super::discovery::is_noreturn(&i.name))
        .map(|i| i.address)
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// Starts the file points at without listing them as functions: the ELF init/fini arrays and
/// `DT_INIT`/`DT_FINI`, PE TLS callbacks, Mach-O initializers and terminators.
/// `relocated`: an ELF file's dynamic relocations.
fn roots(
    file: &object::File<'_>,
    bytes: &[u8],
    sections: &[SectionInfo],
    relocated: Option<&RelocatedSlots>,
) -> Vec<(u64, FoundBy)> {
    let mut out = Vec::new();
    match file {
        object::File::Elf64(f) => {
            let none = RelocatedSlots(Vec::new());
            let relocated = relocated.unwrap_or(&none);
            let arrays = [
                (".preinit_array", FoundBy::PreinitArray),
                (".init_array", FoundBy::InitArray),
                (".fini_array", FoundBy::FiniArray),
            ];
            for (name, how) in arrays {
                let Some(section) = sections.iter().find(|s| s.name == name) else {
                    continue;
                };
                for slot in (0..section.size / 8).take(MAX_STARTS) {
                    let place = section.address + slot * 8;
                    // A -1 or 0 entry is a terminator some linkers leave.
                    if let Some(value) = elf_slot_value(relocated, bytes, sections, place)
                        && value != u64::MAX
                    {
                        out.push((value, how));
                    }
                }
            }
            let endian = f.endian();
            if let Ok(Some((dynamic, _))) = f.elf_section_table().dynamic(endian, f.data()) {
                use object::read::elf::Dyn as _;
                for d in dynamic.iter().take(MAX_STARTS) {
                    let how = match d.tag(endian) {
                        elf::DT_INIT => FoundBy::DtInit,
                        elf::DT_FINI => FoundBy::DtFini,
                        _ => continue,
                    };
                    out.push((d.val(endian), how));
                }
            }
        }
        object::File::Pe32(f) => pe_tls_callbacks(f, bytes, sections, 4, &mut out),
        object::File::Pe64(f) => pe_tls_callbacks(f, bytes, sections, 8, &mut out),
        object::File::MachO64(_) => macho_initializers(file, bytes, sections, &mut out),
        _ => {}
    }
    out
}

/// A Mach-O's initializers and terminators: the pointers of `__mod_init_func` and
/// `__mod_term_func`, and the 32-bit offsets from the image's base of `__init_offsets`. A
/// static constructor is reached from nowhere else: no call, and no function-starts entry in a
/// file linked without them.
fn macho_initializers(
    file: &object::File<'_>,
    bytes: &[u8],
    sections: &[SectionInfo],
    out: &mut Vec<(u64, FoundBy)>,
) {
    use object::{Object as _, ObjectSegment as _};
    let base = file
        .segments()
        .find(|s| s.name().ok().flatten() == Some("__TEXT"))
        .map_or(0, |s| s.address());
    let in_code = |a: u64| executable_at(sections, a);
    for section in sections {
        let Some((_, name)) = section.name.split_once(',') else {
            continue;
        };
        let (how, word) = match name {
            "__mod_init_func" => (FoundBy::ModInitFunc, 8),
            "__mod_term_func" => (FoundBy::ModTermFunc, 8),
            "__init_offsets" => (FoundBy::ModInitFunc, 4),
            _ => continue,
        };
        for slot in (0..section.size / word).take(MAX_STARTS) {
            let place = section.address + slot * word;
            let Some(value) = word_at(bytes, sections, place, word as usize) else {
                break;
            };
            let target = if word == 4 {
                Some(base + value)
            } else {
                macho_pointer_target(value, base, in_code)
            };
            if let Some(target) = target {
                out.push((target, how));
            }
        }
    }
}

/// Where a pointer slot of a Mach-O points: its value as written, or, in a file whose pointers
/// are chained fixups (`LC_DYLD_CHAINED_FIXUPS`), the 36-bit target of a rebase, an address or
/// an offset from `base` by the format. The first of these that lands in code.
fn macho_pointer_target(value: u64, base: u64, in_code: impl Fn(u64) -> bool) -> Option<u64> {
    // A bind (bit 63) names an import, not a place in this file.
    let target = value & ((1 << 36) - 1);
    [value, target, base.wrapping_add(target)]
        .into_iter()
        .enumerate()
        .find(|&(i, a)| (i == 0 || value >> 63 == 0) && a != 0 && in_code(a))
        .map(|(_, a)| a)
}

/// The callbacks of a PE TLS directory: `AddressOfCallBacks` is the address of a zero-ended
/// array of addresses.
fn pe_tls_callbacks<Pe: ImageNtHeaders>(
    file: &PeFile<'_, Pe>,
    bytes: &[u8],
    sections: &[SectionInfo],
    word: usize,
    out: &mut Vec<(u64, FoundBy)>,
) {
    let Some(directory) = file.data_directory(object::pe::IMAGE_DIRECTORY_ENTRY_TLS) else {
        return;
    };
    let Ok(data) = directory.data(file.data(), &file.section_table()) else {
        return;
    };
    // `AddressOfCallBacks` is the fourth field, after three addresses.
    let read = |data: &[u8], at: usize| -> Option<u64> {
        let b = data.get(at..at.checked_add(word)?)?;
        Some(if word == 8 {
            u64::from_le_bytes(b.try_into().ok()?)
        } else {
            u64::from(u32::from_le_bytes(b.try_into().ok()?))
        })
    };
    let Some(mut array) = read(data, 3 * word) else {
        return;
    };
    for _ in 0..1024 {
        let Some(value) = word_at(bytes, sections, array, word).filter(|&v| v != 0) else {
            break;
        };
        out.push((value, FoundBy::TlsCallback));
        array += word as u64;
    }
}

/// Whether `address` lies in an executable section.
fn executable_at(sections: &[SectionInfo], address: u64) -> bool {
    sections
        .iter()
        .any(|s| s.executable && address >= s.address && address - s.address < s.size)
}

/// The little-endian word of `word` bytes at a virtual address, from the file's bytes.
fn word_at(bytes: &[u8], sections: &[SectionInfo], address: u64, word: usize) -> Option<u64> {
    let s = sections
        .iter()
        .find(|s| address >= s.address && address - s.address < s.file_size)?;
    let at = usize::try_from(s.file_offset?.checked_add(address - s.address)?).ok()?;
    let b = bytes.get(at..at.checked_add(word)?)?;
    Some(if word == 8 {
        u64::from_le_bytes(b.try_into().ok()?)
    } else {
        u64::from(u32::from_le_bytes(b.try_into().ok()?))
    })
}

/// Code pointers in data: ELF dynamic relocations' values, PE base-relocated words, each
/// `(value, place)`, only where the value lands in code and the place does not.
fn code_pointers(
    file: &object::File<'_>,
    bytes: &[u8],
    sections: &[SectionInfo],
    relocated: Option<&RelocatedSlots>,
) -> Vec<(u64, u64)> {
    let in_code = |a: u64| executable_at(sections, a);
    let mut out = match file {
        object::File::Elf32(_) | object::File::Elf64(_) => {
            relocated.map(|r| r.0.clone()).unwrap_or_default()
        }
        object::File::Pe32(f) => pe_base_relocated(f, bytes, sections),
        object::File::Pe64(f) => pe_base_relocated(f, bytes, sections),
        _ => Vec::new(),
    };
    out.retain(|&(value, place)| in_code(value) && !in_code(place));
    out.sort_unstable_by_key(|&(_, place)| place);
    out
}

/// The words PE base relocations name (64-bit `DIR64`, 32-bit `HIGHLOW`), with their values.
fn pe_base_relocated<Pe: ImageNtHeaders>(
    file: &PeFile<'_, Pe>,
    bytes: &[u8],
    sections: &[SectionInfo],
) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let base = file.relative_address_base();
    let Ok(Some(mut blocks)) = file
        .data_directories()
        .relocation_blocks(file.data(), &file.section_table())
    else {
        return out;
    };
    while let Ok(Some(block)) = blocks.next() {
        for relocation in block {
            let width = match relocation.typ {
                object::pe::IMAGE_REL_BASED_DIR64 => 8,
                object::pe::IMAGE_REL_BASED_HIGHLOW => 4,
                _ => continue,
            };
            let place = base.wrapping_add(u64::from(relocation.virtual_address));
            if let Some(value) = word_at(bytes, sections, place, width) {
                out.push((value, place));
            }
            if out.len() >= super::relocations::MAX_RELOCATIONS {
                return out;
            }
        }
    }
    out
}

/// Gives every procedure without a stated size the extent up to the next procedure start or
/// its section's end: for Mach-O, whose `LC_FUNCTION_STARTS` lists every function the linker
/// laid out, that is where the function ends (alignment padding included).
fn extend_to_next_start(procedures: &mut [Procedure], code: &[(u64, u64)]) {
    for i in 0..procedures.len() {
        if procedures[i].size.is_some() {
            continue;
        }
        let start = procedures[i].address;
        let Some(&(_, section_end)) = code.iter().find(|&&(lo, hi)| start >= lo && start < hi)
        else {
            continue;
        };
        let end = procedures
            .get(i + 1)
            .map_or(section_end, |next| next.address.min(section_end));
        procedures[i].size = Some(end - start);
    }
}

/// ELF function symbols of `.symtab` and `.dynsym`: `STT_FUNC` and `STT_GNU_IFUNC` (whose
/// value is its resolver's address) defined in a section, dynamic ones with their version.
fn elf_symbol_starts<Elf: FileHeader<Endian = object::Endianness>>(
    file: &ElfFile<'_, Elf>,
    thumb: bool,
    starts: &mut Vec<Start>,
) {
    let endian = file.endian();
    let versions = file
        .elf_section_table()
        .versions(endian, file.data())
        .ok()
        .flatten();
    let tables = [
        (file.elf_symbol_table(), false),
        (file.elf_dynamic_symbol_table(), true),
    ];
    let mut count = 0;
    for (table, dynamic) in tables {
        let strings = table.strings();
        for (index, symbol) in table.enumerate() {
            count += 1;
            if count > MAX_STARTS {
                return;
            }
            let kind = symbol.st_type();
            let ifunc = kind == elf::STT_GNU_IFUNC;
            if kind != elf::STT_FUNC && !ifunc {
                continue;
            }
            let section = symbol.st_shndx(endian);
            if section.is_special() && section != elf::SHN_XINDEX {
                continue;
            }
            let Ok(name) = symbol.name(endian, strings) else {
                continue;
            };
            let mut raw = String::from_utf8_lossy(name).into_owned();
            if dynamic && let Some(versions) = &versions {
                let versym = versions.version_index(endian, index);
                if let Ok(Some(version)) = versions.version(versym.index()) {
                    let at = if versym.is_hidden() { "@" } else { "@@" };
                    raw = format!("{raw}{at}{}", String::from_utf8_lossy(version.name()));
                }
            }
            let mut address: u64 = symbol.st_value(endian).into();
            if thumb {
                address &= !1;
            }
            let source = if symbol.st_bind() == elf::STB_LOCAL {
                NameSource::Local
            } else {
                NameSource::Global
            };
            let mut start = Start::named(address, source, &raw);
            if let Some(name) = start.name.as_mut() {
                name.ifunc = ifunc;
            }
            let size: u64 = symbol.st_size(endian).into();
            if size > 0 {
                start.size = Some((SizeSource::Symbol, size));
            }
            starts.push(start);
        }
    }
}

/// Function symbols of Mach-O and PE files.
fn other_symbol_starts(file: &object::File<'_>, thumb: bool, starts: &mut Vec<Start>) {
    for symbol in file
        .symbols()
        .chain(file.dynamic_symbols())
        .take(MAX_STARTS)
    {
        if symbol.kind() != SymbolKind::Text || !symbol.is_definition() {
            continue;
        }
        let mut address = symbol.address();
        if thumb {
            address &= !1;
        }
        let source = if symbol.is_global() {
            NameSource::Global
        } else {
            NameSource::Local
        };
        let mut start = Start::named(address, source, symbol.name().unwrap_or(""));
        if symbol.size() > 0 {
            start.size = Some((SizeSource::Symbol, symbol.size()));
        }
        starts.push(start);
    }
}

/// Merges observations to one procedure per address: the best name and its aliases, the most
/// trusted size.
fn merge(mut starts: Vec<Start>) -> Vec<Procedure> {
    // Sorted as (address, index) pairs, less than a third of a start's size; the starts of one
    // address keep the order their sources gave.
    let mut order: Vec<(u64, usize)> = starts
        .iter()
        .enumerate()
        .map(|(i, s)| (s.address, i))
        .collect();
    order.sort_unstable();
    // At most one procedure a start: grown by doubling, a large inventory was copied a dozen
    // times, into memory faulted in page by page.
    let mut out = Vec::with_capacity(order.len());
    let mut i = 0;
    while let Some(&(address, _)) = order.get(i) {
        let mut names = Vec::new();
        let mut size: Option<(SizeSource, u64)> = None;
        while let Some(&(at, k)) = order.get(i)
            && at == address
        {
            let start = &mut starts[k];
            if let Some(name) = start.name.take() {
                names.push(name);
            }
            if let Some(candidate) = start.size
                && size.is_none_or(|current| candidate.0 < current.0)
            {
                size = Some(candidate);
            }
            i += 1;
        }
        let names = symbols::resolve(&names);
        out.push(Procedure {
            address,
            name: names.name,
            raw_name: names.raw_name,
            name_source: None,
            found_by: None,
            size: size.map(|(_, s)| s),
            aliases: names.aliases,
        });
    }
    out
}

/// Adds 32-bit ARM `.ARM.exidx` entries: each starts with a 31-bit offset from the entry
/// itself to the function it covers.
fn arm_exidx_starts(file: &object::File<'_>, starts: &mut Vec<Start>) {
    let Some(section) = file.section_by_name(".ARM.exidx") else {
        return;
    };
    let Ok(data) = section.data() else {
        return;
    };
    let big = !file.is_little_endian();
    for (index, entry) in data.chunks_exact(8).enumerate().take(MAX_STARTS) {
        let word: [u8; 4] = [entry[0], entry[1], entry[2], entry[3]];
        let word = if big {
            u32::from_be_bytes(word)
        } else {
            u32::from_le_bytes(word)
        };
        // Sign-extend the 31-bit place-relative offset.
        let offset = i64::from(((word << 1) as i32) >> 1);
        let place = section.address().wrapping_add(index as u64 * 8);
        starts.push(Start::bare(place.wrapping_add_signed(offset) & !1));
    }
}

/// Adds `.eh_frame` FDE starts, except those in PLT sections: there one FDE covers every
/// stub, which are listed one by one from the import relocations instead.
fn elf_unwind_starts(file: &object::File<'_>, sections: &[SectionInfo], starts: &mut Vec<Start>) {
    arm_exidx_starts(file, starts);
    // Asked of every entry (tens of thousands): the few PLT sections are picked out once.
    let plt: Vec<(u64, u64)> = sections
        .iter()
        .filter(|s| is_plt_section(&s.name))
        .map(|s| (s.address, s.size))
        .collect();
    let in_plt = |address: u64| {
        plt.iter()
            .any(|&(lo, size)| address >= lo && address - lo < size)
    };
    let Some(section) = file.section_by_name(".eh_frame") else {
        return;
    };
    let Ok(data) = section.data() else {
        return;
    };
    let address_of = |name: &str| file.section_by_name(name).map(|s| s.address()).unwrap_or(0);
    let bases = EhFrameBases {
        eh_frame: section.address(),
        text: address_of(".text"),
        got: address_of(".got"),
    };
    let address_size = if file.is_64() { 8 } else { 4 };
    for fde in ehframe::fde_ranges(data, !file.is_little_endian(), address_size, &bases)
        .into_iter()
        .take(MAX_STARTS)
    {
        if in_plt(fde.start) {
            continue;
        }
        let mut start = Start::bare(fde.start);
        if fde.len > 0 {
            start.size = Some((SizeSource::Unwind, fde.len));
        }
        starts.push(start);
    }
}

/// Adds `LC_FUNCTION_STARTS` entries and exports; returns the entry point (`LC_MAIN` is an
/// offset from the `__TEXT` segment, which object reports unadjusted), whether the file
/// has function starts (which then list every function), and the `LC_MAIN` entry when there
/// is one (dyld calls it as `main`; an `LC_UNIXTHREAD` entry is the start routine instead).
fn macho_starts<Mach: MachHeader<Endian = object::Endianness>>(
    file: &MachOFile<'_, Mach>,
    thumb: bool,
    starts: &mut Vec<Start>,
) -> (Option<u64>, bool, Option<u64>) {
    let endian = file.endian();
    let text = file
        .segments()
        .find(|s| s.name().ok().flatten() == Some("__TEXT"))
        .map(|s| s.address())
        .unwrap_or(0);
    let mut entry = None;
    let mut function_starts = false;
    let Ok(mut commands) = file.macho_load_commands() else {
        return (None, false, None);
    };
    while let Ok(Some(command)) = commands.next() {
        if let Ok(Some(main)) = command.entry_point() {
            entry = text.checked_add(main.entryoff.get(endian));
            continue;
        }
        let trie = if let Ok(Some(info)) = command.dyld_info() {
            Some((info.export_off.get(endian), info.export_size.get(endian)))
        } else if let Ok(Some(linkedit)) = command.dyld_exports_trie() {
            Some((linkedit.dataoff.get(endian), linkedit.datasize.get(endian)))
        } else {
            None
        };
        if let Some((offset, size)) = trie {
            let data = file.data();
            let start = offset as usize;
            if let Some(trie) = start
                .checked_add(size as usize)
                .and_then(|end| data.get(start..end))
            {
                for (address, name) in exports_trie(trie, text) {
                    starts.push(Start::named(
                        if thumb { address & !1 } else { address },
                        NameSource::Global,
                        &name,
                    ));
                }
            }
            continue;
        }
        if command.cmd() != object::macho::LC_FUNCTION_STARTS {
            continue;
        }
        let Ok(linkedit) = command.data::<object::macho::LinkeditDataCommand<object::Endianness>>()
        else {
            continue;
        };
        let Ok(mut iter) = linkedit.function_starts(endian, file.data(), text) else {
            continue;
        };
        function_starts = true;
        let mut count = 0;
        while let Ok(Some(address)) = iter.next() {
            starts.push(Start::bare(if thumb { address & !1 } else { address }));
            count += 1;
            if count >= MAX_STARTS {
                break;
            }
        }
    }
    let lc_main = entry.map(|e| if thumb { e & !1 } else { e });
    let entry = entry.or_else(|| match file.entry() {
        0 => None,
        e => Some(e),
    });
    (entry, function_starts, lc_main)
}

/// Walks a Mach-O exports trie and returns `(address, name)` of its regular exports. Each node
/// is visited at most once, so a crafted trie whose edges share or loop back to nodes costs
/// time linear in its size rather than exponential.
fn exports_trie(trie: &[u8], image_base: u64) -> Vec<(u64, String)> {
    const KIND_MASK: u64 = 0x3;
    const KIND_REGULAR: u64 = 0;
    const REEXPORT: u64 = 0x8;
    let mut out = Vec::new();
    let mut visited = std::collections::HashSet::new();
    let mut stack: Vec<(usize, Vec<u8>)> = vec![(0, Vec::new())];
    while let Some((node, name)) = stack.pop() {
        if !visited.insert(node) || out.len() >= MAX_STARTS {
            continue;
        }
        let mut at = node;
        let Some(terminal) = uleb(trie, &mut at) else {
            continue;
        };
        let children_at = usize::try_from(terminal)
            .ok()
            .and_then(|t| at.checked_add(t));
        if terminal > 0 {
            let mut t = at;
            if let Some(flags) = uleb(trie, &mut t)
                && flags & REEXPORT == 0
                && flags & KIND_MASK == KIND_REGULAR
                && let Some(offset) = uleb(trie, &mut t)
            {
                out.push((
                    image_base.wrapping_add(offset),
                    String::from_utf8_lossy(&name).into_owned(),
                ));
            }
        }
        let Some(mut at) = children_at else { continue };
        let Some(&count) = trie.get(at) else { continue };
        at += 1;
        for _ in 0..count {
            let Some(len) = trie.get(at..).and_then(|rest| memchr::memchr(0, rest)) else {
                break;
            };
            let edge = &trie[at..at + len];
            at += len + 1;
            let Some(child) = uleb(trie, &mut at).and_then(|c| usize::try_from(c).ok()) else {
                break;
            };
            if child < trie.len() && !visited.contains(&child) {
                let mut child_name = name.clone();
                child_name.extend_from_slice(edge);
                stack.push((child, child_name));
            }
        }
    }
    out
}

/// Adds `.pdata` function table entries: x64 `RUNTIME_FUNCTION` (begin, end, unwind) and ARM64
/// entries (begin, packed unwind data whose length field gives the size when packed).
fn pe_unwind_starts<Pe: ImageNtHeaders>(file: &PeFile<'_, Pe>, starts: &mut Vec<Start>) {
    let Some(directory) = file.data_directory(object::pe::IMAGE_DIRECTORY_ENTRY_EXCEPTION) else {
        return;
    };
    let Ok(data) = directory.data(file.data(), &file.section_table()) else {
        return;
    };
    let base = file.relative_address_base();
    let machine = file.nt_headers().file_header().machine.get(LE);
    let word = |chunk: &[u8], at: usize| -> u32 {
        chunk
            .get(at..at + 4)
            .and_then(|b| b.try_into().ok())
            .map(u32::from_le_bytes)
            .unwrap_or(0)
    };
    match machine {
        object::pe::IMAGE_FILE_MACHINE_AMD64 => {
            for chunk in data.chunks_exact(12).take(MAX_STARTS) {
                let (begin, end) = (word(chunk, 0), word(chunk, 4));
                if begin == 0 {
                    continue;
                }
                let mut start = Start::bare(base.wrapping_add(u64::from(begin)));
                if end > begin {
                    start.size = Some((SizeSource::Unwind, u64::from(end - begin)));
                }
                starts.push(start);
            }
        }
        object::pe::IMAGE_FILE_MACHINE_ARM64 => {
            for chunk in data.chunks_exact(8).take(MAX_STARTS) {
                let (begin, unwind) = (word(chunk, 0), word(chunk, 4));
                if begin == 0 {
                    continue;
                }
                let mut start = Start::bare(base.wrapping_add(u64::from(begin)));
                if unwind & 3 != 0 {
                    let len = u64::from((unwind >> 2) & 0x7ff) * 4;
                    if len > 0 {
                        start.size = Some((SizeSource::Unwind, len));
                    }
                }
                starts.push(start);
            }
        }
        _ => {}
    }
}

/// Adds Go functions from the pclntab, found by section name or, in binaries that carry Go
/// build information without such a section, by searching data sections for the table magic.
/// Bytes at the start of each data section searched for Go's build-info marker.
const GO_MARKER_WINDOW: usize = 4096;

fn go_starts(
    file: &object::File<'_>,
    bytes: &[u8],
    sections: &[SectionInfo],
    starts: &mut Vec<Start>,
) {
    let text_start = sections
        .iter()
        .find(|s| s.executable && (s.name == ".text" || s.name.ends_with(",__text")))
        .or_else(|| sections.iter().find(|s| s.executable))
        .map(|s| s.address)
        .unwrap_or(0);
    let named = file
        .section_by_name(".gopclntab")
        .or_else(|| file.section_by_name("__gopclntab"));
    let funcs = if let Some(section) = named {
        section
            .data()
            .ok()
            .and_then(|data| pclntab::parse(data, text_start))
    } else {
        // Without those names (a PE's Go build info opens its `.data`), the marker is looked
        // for where the linker puts it, at the start of a data section: scanning the whole file
        // read every page of every binary that is not Go.
        let go_marker = [".go.buildinfo", "__go_buildinfo", ".note.go.buildid"]
            .iter()
            .any(|n| file.section_by_name(n).is_some())
            || sections.iter().filter(|s| !s.executable).any(|s| {
                let Some(offset) = s.file_offset.and_then(|o| usize::try_from(o).ok()) else {
                    return false;
                };
                let len = usize::try_from(s.file_size)
                    .unwrap_or(0)
                    .min(GO_MARKER_WINDOW);
                bytes
                    .get(offset..offset.saturating_add(len))
                    .is_some_and(|head| memchr::memmem::find(head, b"\xff Go buildinf:").is_some())
            });
        if !go_marker {
            return;
        }
        sections.iter().filter(|s| !s.executable).find_map(|s| {
            let offset = usize::try_from(s.file_offset?).ok()?;
            let end = offset.checked_add(usize::try_from(s.file_size).ok()?)?;
            pclntab::search(bytes.get(offset..end)?, text_start)
        })
    };
    for func in funcs.unwrap_or_default().into_iter().take(MAX_STARTS) {
        let mut start = Start::named(func.entry, NameSource::GoPclntab, &func.name);
        if let Some(end) = func.end.filter(|&end| end > func.entry) {
            start.size = Some((SizeSource::GoTable, end - func.entry));
        }
        starts.push(start);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use super::*;
    use crate::providers::native::test_support::{document, target, tool_output};

    /// A Mach-O pointer slot as lld writes it (the address), and as a chained fixup: a 64-bit
    /// rebase (the 36-bit address, with the next fixup's distance above it) and a rebase of
    /// the offset format (an offset from the image's base); a bind points at no code here.
    #[test]
    fn macho_pointer_slots_are_read_as_addresses_or_chained_rebases() {
        let code = |a: u64| (0x1_0000_3f00..0x1_0000_4000).contains(&a);
        let base = 0x1_0000_0000;
        assert_eq!(
            macho_pointer_target(0x1_0000_3f10, base, code),
            Some(0x1_0000_3f10)
        );
        let next = 2u64 << 51;
        assert_eq!(
            macho_pointer_target(next | 0x1_0000_3f20, base, code),
            Some(0x1_0000_3f20)
        );
        assert_eq!(
            macho_pointer_target(next | 0x3f30, base, code),
            Some(0x1_0000_3f30)
        );
        assert_eq!(macho_pointer_target((1 << 63) | 0x3f30, base, code), None);
        assert_eq!(macho_pointer_target(0x2000, base, code), None);
    }
    use crate::providers::native::{Image, procedures};

    fn hex_field(text: &str) -> u64 {
        u64::from_str_radix(text.trim_start_matches("0x"), 16).unwrap()
    }

    fn assert_inside_code(image: &Image) {
        for p in image.procedures() {
            let section = image.section_at(p.address).unwrap();
            assert!(section.executable, "{:#x} in {}", p.address, section.name);
        }
        let addresses: Vec<u64> = image.procedures().iter().map(|p| p.address).collect();
        assert!(
            addresses.windows(2).all(|w| w[0] < w[1]),
            "sorted and unique"
        );
    }

    #[test]
    fn stripped_ls_is_unwind_starts_symbols_entry_and_plt() {
        let doc = document("/usr/bin/ls", None);
        let image = Image::load(&doc).unwrap();
        assert_inside_code(&image);
        let Some(frames) = tool_output("readelf", &["--debug-dump=frames", "/usr/bin/ls"]) else {
            return;
        };
        // The FDE of `.plt` (and of `.plt.got`) covers every stub; the stubs are listed one
        // by one from the relocations instead.
        let plt_sections: Vec<(u64, u64)> = image
            .sections()
            .iter()
            .filter(|s| s.name.starts_with(".plt"))
            .map(|s| (s.address, s.address + s.size))
            .collect();
        let mut expected: BTreeSet<u64> = frames
            .lines()
            .filter(|l| l.contains(" FDE "))
            .filter_map(|l| l.split("pc=").nth(1))
            .map(|range| hex_field(range.split("..").next().unwrap()))
            .filter(|&a| !plt_sections.iter().any(|&(lo, hi)| a >= lo && a < hi))
            .collect();
        let dynsyms = tool_output("readelf", &["--dyn-syms", "-W", "/usr/bin/ls"]).unwrap();
        for line in dynsyms.lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() >= 8 && fields[3] == "FUNC" && fields[6] != "UND" {
                expected.insert(hex_field(fields[1]));
            }
        }
        let header = tool_output("readelf", &["-h", "/usr/bin/ls"]).unwrap();
        let entry = header
            .lines()
            .find_map(|l| l.trim().strip_prefix("Entry point address:"))
            .map(|v| hex_field(v.trim()))
            .unwrap();
        expected.insert(entry);
        let plt = tool_output(
            "objdump",
            &[
                "-d",
                "-j",
                ".plt",
                "-j",
                ".plt.sec",
                "-j",
                ".plt.got",
                "/usr/bin/ls",
            ],
        )
        .unwrap();
        let mut plt_names = BTreeMap::new();
        for line in plt.lines().filter(|l| l.ends_with("@plt>:")) {
            let (address, rest) = line.split_once(' ').unwrap();
            let name = rest.trim_start_matches('<').trim_end_matches(">:");
            plt_names.insert(hex_field(address), name.to_string());
            expected.insert(hex_field(address));
        }
        assert!(plt_names.len() > 50, "ls imports many functions");
        // The procedures the file points at and no table lists: `DT_INIT`/`DT_FINI` as
        // readelf shows them, and the init/fini arrays' pointers as objdump dumps them.
        let mut roots = BTreeMap::new();
        let dynamic = tool_output("readelf", &["-d", "-W", "/usr/bin/ls"]).unwrap();
        for line in dynamic.lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            match fields.get(1..3) {
                Some(["(INIT)", value]) => roots.insert(hex_field(value), FoundBy::DtInit),
                Some(["(FINI)", value]) => roots.insert(hex_field(value), FoundBy::DtFini),
                _ => None,
            };
        }
        for (section, by) in [
            (".init_array", FoundBy::InitArray),
            (".fini_array", FoundBy::FiniArray),
        ] {
            let dump = tool_output("objdump", &["-s", "-j", section, "/usr/bin/ls"]).unwrap();
            let words: Vec<u8> = dump
                .lines()
                .skip_while(|l| !l.starts_with("Contents of section"))
                .skip(1)
                .flat_map(|l| {
                    l.split_whitespace()
                        .skip(1)
                        .take(4)
                        .take_while(|w| w.len() == 8 && w.bytes().all(|b| b.is_ascii_hexdigit()))
                        .collect::<Vec<_>>()
                })
                .flat_map(|w| {
                    (0..w.len())
                        .step_by(2)
                        .map(|i| u8::from_str_radix(&w[i..i + 2], 16).unwrap())
                        .collect::<Vec<_>>()
                })
                .collect();
            for pointer in words.chunks_exact(8) {
                let value = u64::from_le_bytes(pointer.try_into().unwrap());
                if !expected.contains(&value) {
                    roots.insert(value, by);
                }
            }
        }
        assert_eq!(roots.len(), 4, "{roots:x?}");
        for (&address, &by) in &roots {
            let p = image.procedure_starting_at(address).unwrap();
            assert_eq!(p.found_by, Some(by), "{address:#x}");
        }
        expected.extend(roots.keys());
        // The C runtime's routines compiled without unwind entries (`register_tm_clones`,
        // ...) are found by following code from those roots: each is the target of a direct
        // `call` or `jmp` objdump shows.
        let disassembly =
            tool_output("objdump", &["-d", "--no-show-raw-insn", "/usr/bin/ls"]).unwrap();
        let branch_targets: BTreeSet<u64> = disassembly
            .lines()
            .filter_map(|l| {
                let (_, text) = l.split_once(":\t")?;
                let mut words = text.split_whitespace();
                let mnemonic = words.next()?;
                let target = words.next()?;
                (mnemonic == "call" || mnemonic == "jmp")
                    .then(|| u64::from_str_radix(target, 16).ok())
                    .flatten()
            })
            .collect();
        let mut followed = 0;
        for p in image.procedures() {
            if expected.contains(&p.address) {
                assert!(
                    roots.contains_key(&p.address) || p.found_by.is_none(),
                    "{:#x}: {:?}",
                    p.address,
                    p.found_by
                );
                continue;
            }
            assert!(
                matches!(p.found_by, Some(FoundBy::Call | FoundBy::TailJump))
                    && branch_targets.contains(&p.address),
                "{:#x}: {:?}",
                p.address,
                p.found_by
            );
            followed += 1;
        }
        eprintln!("ls: {followed} procedures found by following code");
        assert_eq!(followed, 2);
        assert_eq!(image.entry(), Some(entry));
        for (address, name) in plt_names {
            let p = image.procedure_starting_at(address).unwrap();
            assert_eq!(p.name.as_deref(), Some(name.as_str()));
            assert!(
                p.size.is_some_and(|s| s == 8 || s == 16),
                "{name}: {:?}",
                p.size
            );
        }
    }

    #[test]
    fn exports_trie_walk_is_linear_on_shared_nodes() {
        // Root: no terminal, one child "_a" at node 5; node 5: terminal (flags 0, offset 0x10),
        // then two children that both point back to node 5 under different edges.
        let trie = [
            0x00, 0x01, b'_', b'a', 0x00, 0x05, // root (offsets 0..=5), child at 5? see below
        ];
        assert_eq!(exports_trie(&trie, 0x1000), Vec::<(u64, String)>::new());
        let mut trie = vec![0x00, 0x01, b'_', b'a', 0x00, 0x06];
        trie.extend_from_slice(&[0x02, 0x00, 0x10, 0x02, b'b', 0x00, 0x06, b'c', 0x00, 0x06]);
        assert_eq!(exports_trie(&trie, 0x1000), [(0x1010, "_a".to_string())]);
        // Every cut of it is harmless.
        for cut in 0..trie.len() {
            let _ = exports_trie(&trie[..cut], 0);
        }
    }

    #[test]
    fn arm32_exception_index_gives_function_starts() {
        let path = crate::providers::native::test_support::fixtures()
            .join("7zip-bin-5.2.0/package/linux/arm/7za");
        let doc = document(path.to_str().unwrap(), None);
        let image = Image::load(&doc).unwrap();
        assert_inside_code(&image);
        assert!(
            image.procedures().len() > 1000,
            "{}",
            image.procedures().len()
        );
        let Some(unwind) = tool_output("readelf", &["-u", path.to_str().unwrap()]) else {
            return;
        };
        let listed: BTreeSet<u64> = unwind
            .lines()
            .filter_map(|l| l.strip_prefix("0x")?.split(':').next())
            .map(hex_field)
            .collect();
        assert!(listed.len() > 1000);
        for address in listed {
            assert!(
                image.procedure_starting_at(address).is_some(),
                "{address:#x}"
            );
        }
    }

    #[test]
    fn libc_exports_have_names_and_sizes() {
        let doc = document("/usr/lib/x86_64-linux-gnu/libc.so.6", None);
        let image = Image::load(&doc).unwrap();
        assert_inside_code(&image);
        let by_name = |name: &str| {
            image
                .procedures()
                .iter()
                .find(|p| p.name.as_deref() == Some(name))
                .cloned()
                .unwrap_or_else(|| panic!("{name} missing"))
        };
        for name in ["malloc", "free", "printf", "fopen"] {
            let p = by_name(name);
            assert!(p.size.is_some_and(|s| s > 0), "{name} has a size");
        }
        // Agreement with objdump on every dynamic function symbol both see.
        let Some(dump) = tool_output("objdump", &["-T", "/usr/lib/x86_64-linux-gnu/libc.so.6"])
        else {
            return;
        };
        let mut checked = 0;
        for line in dump.lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() < 6 || !line.contains(" DF ") || fields.contains(&"*UND*") {
                continue;
            }
            let address = hex_field(fields[0]);
            let p = image
                .procedure_starting_at(address)
                .unwrap_or_else(|| panic!("objdump function at {address:#x} missing: {line}"));
            assert!(p.name.is_some());
            checked += 1;
        }
        assert!(checked > 1000);
    }

    #[test]
    fn test_binary_symbols_agree_with_objdump_syms() {
        // The test executable itself is an unstripped ELF full of mangled Rust names.
        let exe = std::env::current_exe().unwrap();
        let target = crate::providers::native::admit(&exe).unwrap();
        let image = Image::load(&target.documents[0]).unwrap();
        assert_inside_code(&image);
        let Some(dump) = tool_output("objdump", &["--syms", exe.to_str().unwrap()]) else {
            return;
        };
        let mut checked = 0;
        for line in dump.lines() {
            // `address flags section size name`, where the flags column holds `F` for functions.
            let Some((address, rest)) = line.split_once(' ') else {
                continue;
            };
            if rest.len() < 8 || &rest[6..7] != "F" {
                continue;
            }
            let fields: Vec<&str> = rest[7..].split_whitespace().collect();
            if fields.len() < 3 || fields[0] == "*UND*" {
                continue;
            }
            let address = hex_field(address);
            let size = hex_field(fields[1]);
            let raw = fields[fields.len() - 1];
            let p = image
                .procedure_starting_at(address)
                .unwrap_or_else(|| panic!("objdump function at {address:#x} missing: {line}"));
            assert!(p.name.is_some());
            if p.raw_name.as_deref() == Some(raw) || p.name.as_deref() == Some(raw) {
                assert!(size == 0 || p.size == Some(size), "size of {raw}");
            }
            checked += 1;
        }
        assert!(checked > 1000, "checked {checked}");
        let demangled = image
            .procedures()
            .iter()
            .filter(|p| p.raw_name.as_deref().is_some_and(|r| r.starts_with("_ZN")))
            .count();
        assert!(demangled > 1000, "Rust names are demangled");
    }

    #[test]
    fn fsevents_slices_have_named_function_starts() {
        let target = target("fsevents/package/fsevents.node");
        assert_eq!(target.documents.len(), 2);
        for doc in &target.documents {
            let image = Image::load(doc).unwrap();
            assert_inside_code(&image);
            let procs = image.procedures();
            assert!(
                (80..=100).contains(&procs.len()),
                "{}: {}",
                doc.name,
                procs.len()
            );
            assert!(procs.iter().all(|p| p.name.is_some()));
            // Mach-O C names drop the leading underscore; the stored name stays beside them.
            let start = procs
                .iter()
                .find(|p| p.name.as_deref() == Some("FSEStart"))
                .unwrap();
            assert_eq!(start.raw_name.as_deref(), Some("_FSEStart"));
            // Function starts list every function, so each ends where the next begins.
            assert!(procs.iter().all(|p| p.size.is_some_and(|s| s > 0)));
            assert!(image.imports().iter().any(|i| i.kind == "stub"));
        }
    }

    #[test]
    fn macho_addresses_agree_with_llvm_objdump() {
        let path = crate::providers::native::test_support::fixtures()
            .join("fsevents/package/fsevents.node");
        for (arch, name) in [("arm64", "arm64"), ("x86_64", "x86_64")] {
            let Some(dump) = tool_output(
                "llvm-objdump-14",
                &["--syms", &format!("--arch={name}"), path.to_str().unwrap()],
            ) else {
                eprintln!("llvm-objdump-14 not installed; Mach-O cross-check skipped");
                return;
            };
            let doc = document("fsevents/package/fsevents.node", Some(arch));
            let image = Image::load(&doc).unwrap();
            let mut checked = 0;
            for line in dump.lines().filter(|l| l.contains(" F __TEXT,__text ")) {
                let (address, _) = line.split_once(' ').unwrap();
                let raw = line.rsplit(' ').next().unwrap();
                let p = image.procedure_starting_at(hex_field(address)).unwrap();
                assert_eq!(p.raw_name.as_deref().or(p.name.as_deref()), Some(raw));
                checked += 1;
            }
            assert!(checked > 50, "{arch}: {checked}");
        }
    }

    #[test]
    fn pe_pdata_gives_thousands_of_starts() {
        let doc = document(
            "node-notifier/package/vendor/snoreToast/snoretoast-x64.exe",
            None,
        );
        let image = Image::load(&doc).unwrap();
        assert_inside_code(&image);
        let procs = image.procedures();
        // `.pdata` lists the functions with unwind entries; leaf functions have none, so
        // the rest are found by following code from them and the other roots.
        let listed = procs.iter().filter(|p| p.found_by.is_none()).count();
        assert!((3500..=4200).contains(&listed), "{listed}");
        assert!(procs.len() > listed + 1000, "{} found in all", procs.len());
        assert!(procs.iter().filter(|p| p.size.is_some()).count() > 3000);
        assert!(
            image
                .entry()
                .is_some_and(|e| image.procedure_starting_at(e).is_some())
        );
        assert!(
            image
                .imports()
                .iter()
                .any(|i| i.kind == "iat" && i.library.is_some())
        );
    }

    #[test]
    fn go_pclntab_names_a_stripped_go_binary() {
        let doc = document("esbuild-darwin-arm64/package/bin/esbuild", None);
        let image = Image::load(&doc).unwrap();
        assert_inside_code(&image);
        let procs = image.procedures();
        assert!(procs.len() > 5000, "{}", procs.len());
        for name in ["main.main", "runtime.main"] {
            assert!(
                procs.iter().any(|p| p.name.as_deref() == Some(name)),
                "{name}"
            );
        }
        assert!(procs.iter().filter(|p| p.name.is_some()).count() > 5000);
    }

    #[test]
    fn four_slice_universal_lists_every_slice_without_panic() {
        let target = target("py2app/py2app/apptemplate/prebuilt/main-universal");
        assert_eq!(target.documents.len(), 4);
        for doc in &target.documents {
            let procs = procedures(doc).unwrap();
            assert!(!procs.is_empty(), "{}", doc.name);
        }
    }

    #[test]
    fn delocate_test_data_never_fails_to_list() {
        let dir =
            crate::providers::native::test_support::fixtures().join("delocate/delocate/tests/data");
        let mut macho_docs = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let target = crate::providers::native::admit(&path).unwrap();
            for doc in &target.documents {
                let result = procedures(doc);
                if doc.format == "macho" {
                    macho_docs += 1;
                    assert!(result.is_ok(), "{}: {result:?}", doc.name);
                }
            }
        }
        assert!(macho_docs > 20);
    }
}
