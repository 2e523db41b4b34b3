//! Procedures of a document: the union of every source of function starts the format offers,
//! merged to one entry per address with the best name and a stated size.

use object::read::macho::MachHeader;
use object::read::pe::ImageNtHeaders;
use object::read::macho::MachOFile;
use object::read::pe::PeFile;
use object::{
    ExportTarget, LittleEndian as LE, NameOrOrdinal, Object, ObjectSection, ObjectSegment,
    ObjectSymbol, SymbolKind,
};

use super::ehframe::{self, EhFrameBases};
use super::image::{ImportEntry, Isa, SectionInfo};
use super::symbols::{self, NameCandidate, NameSource};
use super::{DocumentSpec, Image, Procedure, ProviderError, pclntab};

/// Upper bound on starts read from one source, against crafted tables that claim billions.
const MAX_STARTS: usize = 8_000_000;

/// Lists a document's procedures, sorted by address, one per address.
pub fn procedures(doc: &DocumentSpec) -> Result<Vec<Procedure>, ProviderError> {
    Ok(Image::load(doc)?.into_procedures())
}

/// Which source stated a size; lower wins when several do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum SizeSource {
    Symbol,
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
                raw: raw.to_string(),
            }),
            size: None,
        }
    }
}

/// Collects procedures and the entry point of a parsed file.
pub(crate) fn collect(
    file: &object::File<'_>,
    bytes: &[u8],
    sections: &[SectionInfo],
    imports: &[ImportEntry],
    isa: Isa,
) -> (Vec<Procedure>, Option<u64>) {
    let thumb = file.architecture() == object::Architecture::Arm;
    let mut starts: Vec<Start> = Vec::new();

    for symbol in file.symbols().chain(file.dynamic_symbols()).take(MAX_STARTS) {
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

    if let Ok(exports) = file.exports() {
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

    for import in imports.iter().filter(|i| i.kind == "plt") {
        starts.push(Start::named(
            import.address,
            NameSource::Stub,
            &format!("{}@plt", import.name),
        ));
    }

    let mut entry = match file.entry() {
        0 => None,
        e => Some(e),
    };
    match file {
        object::File::Elf32(_) | object::File::Elf64(_) => elf_unwind_starts(file, &mut starts),
        object::File::MachO32(f) => entry = macho_starts(f, thumb, &mut starts),
        object::File::MachO64(f) => entry = macho_starts(f, thumb, &mut starts),
        object::File::Pe32(f) => pe_unwind_starts(f, &mut starts),
        object::File::Pe64(f) => pe_unwind_starts(f, &mut starts),
        _ => {}
    }
    go_starts(file, bytes, sections, &mut starts);

    let code: Vec<(u64, u64)> = sections
        .iter()
        .filter(|s| s.executable)
        .map(|s| (s.address, s.address.saturating_add(s.size)))
        .collect();
    let in_code = |address: u64| code.iter().any(|&(lo, hi)| address >= lo && address < hi);
    entry = entry.filter(|&e| in_code(e));
    if let Some(e) = entry {
        starts.push(Start::bare(e));
    }
    let _ = isa;
    starts.retain(|s| in_code(s.address));
    (merge(starts), entry)
}

/// Merges observations to one procedure per address: the best name, the most trusted size.
fn merge(mut starts: Vec<Start>) -> Vec<Procedure> {
    starts.sort_unstable_by_key(|s| s.address);
    let mut out = Vec::new();
    let mut i = 0;
    while i < starts.len() {
        let address = starts[i].address;
        let mut j = i;
        let mut names = Vec::new();
        let mut size: Option<(SizeSource, u64)> = None;
        while j < starts.len() && starts[j].address == address {
            if let Some(name) = starts[j].name.take() {
                names.push(name);
            }
            if let Some(candidate) = starts[j].size
                && size.is_none_or(|current| candidate.0 < current.0)
            {
                size = Some(candidate);
            }
            j += 1;
        }
        let (name, raw_name) = match symbols::best_name(&names) {
            Some(best) => {
                let (name, raw) = symbols::display_names(&best.raw);
                (Some(name), raw)
            }
            None => (None, None),
        };
        out.push(Procedure {
            address,
            name,
            raw_name,
            size: size.map(|(_, s)| s),
        });
        i = j;
    }
    out
}

fn elf_unwind_starts(file: &object::File<'_>, starts: &mut Vec<Start>) {
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
        let mut start = Start::bare(fde.start);
        if fde.len > 0 {
            start.size = Some((SizeSource::Unwind, fde.len));
        }
        starts.push(start);
    }
}

/// Adds `LC_FUNCTION_STARTS` entries and returns the entry point (`LC_MAIN` is an offset from
/// the `__TEXT` segment, which object reports unadjusted).
fn macho_starts<Mach: MachHeader<Endian = object::Endianness>>(
    file: &MachOFile<'_, Mach>,
    thumb: bool,
    starts: &mut Vec<Start>,
) -> Option<u64> {
    let endian = file.endian();
    let text = file
        .segments()
        .find(|s| s.name().ok().flatten() == Some("__TEXT"))
        .map(|s| s.address())
        .unwrap_or(0);
    let mut entry = None;
    let Ok(mut commands) = file.macho_load_commands() else {
        return None;
    };
    while let Ok(Some(command)) = commands.next() {
        if let Ok(Some(main)) = command.entry_point() {
            entry = text.checked_add(main.entryoff.get(endian));
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
        let mut count = 0;
        while let Ok(Some(address)) = iter.next() {
            starts.push(Start::bare(if thumb { address & !1 } else { address }));
            count += 1;
            if count >= MAX_STARTS {
                break;
            }
        }
    }
    entry.or_else(|| match file.entry() {
        0 => None,
        e => Some(e),
    })
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
        let go_marker = [".go.buildinfo", "__go_buildinfo", ".note.go.buildid"]
            .iter()
            .any(|n| file.section_by_name(n).is_some())
            || memchr::memmem::find(bytes, b"\xff Go buildinf:").is_some();
        if !go_marker {
            return;
        }
        sections
            .iter()
            .filter(|s| !s.executable)
            .find_map(|s| {
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
