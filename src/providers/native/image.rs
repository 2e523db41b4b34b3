//! A loaded document: its bytes, sections, symbols, imports and procedures, shared by every
//! analysis operation on it.

use std::collections::HashMap;
use std::path::Path;
use std::sync::OnceLock;

use object::{Object, ObjectSection, ObjectSegment, SectionFlags, SegmentFlags};

use super::code_index::CodeIndex;
use super::format;
use super::types::{DocumentSpec, ImportEntry, Isa, Procedure, ProviderError, SectionInfo};
use crate::fsroot::Bytes;
use crate::vocabulary::Format;

/// Documents larger than this are not loaded: the native reader holds a document in memory,
/// and nothing shipped as one image comes near it.
const MAX_DOCUMENT_SIZE: u64 = 4 << 30;

/// Lists a document's procedures, sorted by address, one per address.
pub fn procedures(doc: &DocumentSpec) -> Result<Vec<Procedure>, ProviderError> {
    Ok(Image::load(doc)?.into_procedures())
}

/// A document loaded for analysis. Building it parses headers once; the cross-reference index
/// over all code is built on first use and then shared by callers, xrefs and dossiers.
pub struct Image {
    pub(crate) doc: DocumentSpec,
    /// The document's bytes, mapped from the file admitted.
    pub(crate) bytes: Bytes,
    pub(crate) isa: Isa,
    pub(crate) pointer_size: u8,
    pub(crate) big_endian: bool,
    pub(crate) sections: Vec<SectionInfo>,
    /// Every named defined symbol (code and data), sorted by address, for naming references.
    pub(crate) symbols: Vec<(u64, String)>,
    pub(crate) imports: Vec<ImportEntry>,
    pub(crate) import_index: HashMap<u64, usize>,
    pub(crate) procedures: Vec<Procedure>,
    pub(crate) entry: Option<u64>,
    /// Whether the image is linked at a fixed address (a non-PIE ELF or Mach-O executable, or a
    /// PE image, whose base relocations keep absolute operands pointing at their data): only
    /// then is an immediate operand an address.
    pub(crate) fixed_address: bool,
    pub(crate) code_index: OnceLock<CodeIndex>,
}

impl std::fmt::Debug for Image {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Image")
            .field("document", &self.doc.name)
            .field("bytes", &self.bytes.len())
            .field("sections", &self.sections.len())
            .field("procedures", &self.procedures.len())
            .finish()
    }
}

/// Maps a document's byte range from the file admitted (through its kept descriptor), checking
/// the range against the file as it is now first: a file cut since admission is an error, and
/// a file cut while mapped reads as zeros (see [`crate::fsroot::Mapped`]).
pub(crate) fn map_document(doc: &DocumentSpec) -> Result<Bytes, ProviderError> {
    let file = doc.open_file()?;
    let io = |source| ProviderError::Io {
        path: doc.file.clone(),
        source,
    };
    let file_size = file.current_len().map_err(io)?;
    let end = doc.offset.checked_add(doc.size);
    if end.is_none_or(|end| end > file_size) {
        return Err(ProviderError::OutOfFile {
            path: doc.file.clone(),
            offset: doc.offset,
            size: doc.size,
            file_size,
        });
    }
    if doc.size > MAX_DOCUMENT_SIZE {
        return Err(ProviderError::TooLarge {
            path: doc.file.clone(),
            size: doc.size,
            limit: MAX_DOCUMENT_SIZE,
        });
    }
    Ok(file.bytes(doc.offset, doc.size)?)
}

/// A document's bytes in memory (tests cut and flip copies of them).
#[cfg(test)]
pub(crate) fn read_document(doc: &DocumentSpec) -> Result<Vec<u8>, ProviderError> {
    Ok(map_document(doc)?.to_vec())
}

fn isa_of(arch: object::Architecture) -> Isa {
    match arch {
        object::Architecture::I386 => Isa::X86,
        object::Architecture::X86_64 | object::Architecture::X86_64_X32 => Isa::X86_64,
        object::Architecture::Aarch64 | object::Architecture::Aarch64_Ilp32 => Isa::Arm64,
        _ => Isa::Other,
    }
}

/// Whether a section holds code, from the format's own flags (not only object's coarse kind).
fn section_is_executable(section: &object::Section<'_, '_>) -> bool {
    let by_flags = match section.flags() {
        SectionFlags::Elf { sh_flags, .. } => sh_flags.intersects(object::elf::SHF_EXECINSTR),
        SectionFlags::MachO { flags, .. } => flags.intersects(
            object::macho::S_ATTR_PURE_INSTRUCTIONS | object::macho::S_ATTR_SOME_INSTRUCTIONS,
        ),
        SectionFlags::Coff { characteristics } => characteristics
            .intersects(object::pe::IMAGE_SCN_MEM_EXECUTE | object::pe::IMAGE_SCN_CNT_CODE),
        _ => false,
    };
    by_flags || section.kind() == object::SectionKind::Text
}

/// Whether a section is part of the loaded image (ELF non-`SHF_ALLOC` sections such as
/// `.symtab` or `.comment` have no run-time address).
fn section_is_mapped(section: &object::Section<'_, '_>) -> bool {
    match section.flags() {
        SectionFlags::Elf { sh_flags, .. } => sh_flags.intersects(object::elf::SHF_ALLOC),
        _ => true,
    }
}

pub(crate) fn collect_sections(file: &object::File<'_>, len: u64) -> Vec<SectionInfo> {
    let mut out = Vec::new();
    for section in file.sections() {
        if !section_is_mapped(&section) || section.size() == 0 {
            continue;
        }
        let base = section.name().unwrap_or("").to_string();
        let name = match section.segment_name() {
            Ok(Some(segment))
                if matches!(file, object::File::MachO32(_) | object::File::MachO64(_)) =>
            {
                format!("{segment},{base}")
            }
            _ => base,
        };
        let (file_offset, file_size) = match section.file_range() {
            Some((offset, size)) if offset.checked_add(size).is_some_and(|end| end <= len) => {
                (Some(offset), size)
            }
            Some((offset, _)) if offset < len => (Some(offset), len - offset),
            _ => (None, 0),
        };
        out.push(SectionInfo {
            name,
            address: section.address(),
            size: section.size(),
            executable: section_is_executable(&section),
            file_offset,
            file_size,
        });
    }
    // An image without section headers (stripped of them on purpose) still has segments.
    if !out.iter().any(|s| s.executable) {
        for (index, segment) in file.segments().enumerate() {
            let executable = match segment.flags() {
                SegmentFlags::Elf { p_flags, .. } => p_flags.intersects(object::elf::PF_X),
                SegmentFlags::MachO { initprot, .. } => {
                    initprot.intersects(object::macho::VM_PROT_EXECUTE)
                }
                _ => false,
            };
            if !executable || segment.size() == 0 {
                continue;
            }
            let (offset, size) = segment.file_range();
            let usable = offset < len;
            out.push(SectionInfo {
                name: format!("segment{index}"),
                address: segment.address(),
                size: segment.size(),
                executable: true,
                file_offset: usable.then_some(offset),
                file_size: if usable { size.min(len - offset) } else { 0 },
            });
        }
    }
    out.sort_by(|a, b| (a.address, &a.name).cmp(&(b.address, &b.name)));
    out
}

impl Image {
    /// Loads a document: reads its byte range and parses its headers, symbols, imports and
    /// procedures. Raw documents load with one non-executable section covering the bytes.
    pub fn load(doc: &DocumentSpec) -> Result<Image, ProviderError> {
        let bytes = map_document(doc)?;
        let image = Self::from_mapped(doc, bytes)?;
        if image.bytes.changed() {
            return Err(ProviderError::File(crate::fsroot::FsError::Changed {
                path: doc.file.clone(),
                what: "it was cut while its headers were read".into(),
            }));
        }
        Ok(image)
    }

    /// Builds an image from bytes already read (tests use it on cut and crafted copies).
    #[cfg(test)]
    pub(crate) fn from_bytes(doc: &DocumentSpec, bytes: Vec<u8>) -> Result<Image, ProviderError> {
        Self::from_mapped(doc, Bytes::Owned(bytes))
    }

    fn from_mapped(doc: &DocumentSpec, bytes: Bytes) -> Result<Image, ProviderError> {
        let kind = format::sniff(&bytes, bytes.len() as u64);
        if matches!(kind, Format::Raw | Format::MachOUniversal) {
            let len = bytes.len() as u64;
            return Ok(Image {
                doc: doc.clone(),
                bytes,
                isa: Isa::Other,
                pointer_size: 8,
                big_endian: false,
                sections: vec![SectionInfo {
                    name: "raw".to_string(),
                    address: 0,
                    size: len,
                    executable: false,
                    file_offset: Some(0),
                    file_size: len,
                }],
                symbols: Vec::new(),
                imports: Vec::new(),
                import_index: HashMap::new(),
                procedures: Vec::new(),
                entry: None,
                fixed_address: false,
                code_index: OnceLock::new(),
            });
        }
        let Parsed {
            sections,
            isa,
            big_endian,
            pointer_size,
            imports,
            symbols,
            procedures,
            entry,
            fixed_address,
        } = parse(doc, kind, &bytes)?;
        let import_index = imports
            .iter()
            .enumerate()
            .map(|(i, imp)| (imp.address, i))
            .collect();
        Ok(Image {
            doc: doc.clone(),
            bytes,
            isa,
            pointer_size,
            big_endian,
            sections,
            symbols,
            imports,
            import_index,
            procedures,
            entry,
            fixed_address,
            code_index: OnceLock::new(),
        })
    }

    /// Every byte of the document, for telling two identical documents apart from equal ones.
    pub(crate) fn contents(&self) -> &[u8] {
        &self.bytes
    }

    /// The document this image was loaded from.
    pub fn document(&self) -> &DocumentSpec {
        &self.doc
    }

    /// The document's architecture name (as in [`DocumentSpec::architecture`]).
    pub fn architecture(&self) -> &str {
        self.doc.architecture.as_str()
    }

    /// Mapped sections, sorted by address.
    pub fn sections(&self) -> &[SectionInfo] {
        &self.sections
    }

    /// Procedures, sorted by address, one per address.
    pub fn procedures(&self) -> &[Procedure] {
        &self.procedures
    }

    /// Consumes the image, keeping only its procedures.
    pub fn into_procedures(self) -> Vec<Procedure> {
        self.procedures
    }

    /// Imports reachable through stubs and pointer slots, sorted by address.
    pub fn imports(&self) -> &[ImportEntry] {
        &self.imports
    }

    /// Named defined symbols (code and data) as `(address, stored name)`, sorted by address.
    pub fn symbols(&self) -> &[(u64, String)] {
        &self.symbols
    }

    /// The entry point, when the headers name one inside the code.
    pub fn entry(&self) -> Option<u64> {
        self.entry
    }

    /// The import reached through a stub or slot at `address`.
    pub fn import_at(&self, address: u64) -> Option<&ImportEntry> {
        self.import_index.get(&address).map(|&i| &self.imports[i])
    }

    /// Index of the procedure starting exactly at `address`.
    pub(crate) fn procedure_index(&self, address: u64) -> Option<usize> {
        self.procedures
            .binary_search_by_key(&address, |p| p.address)
            .ok()
    }

    /// The procedure starting exactly at `address`.
    pub fn procedure_starting_at(&self, address: u64) -> Option<&Procedure> {
        self.procedure_index(address).map(|i| &self.procedures[i])
    }

    /// The section containing `address`.
    pub fn section_at(&self, address: u64) -> Option<&SectionInfo> {
        // Sections are few; a linear scan keeps overlapping (crafted) layouts well defined.
        self.sections
            .iter()
            .find(|s| address >= s.address && address - s.address < s.size)
    }

    /// End (exclusive) of the procedure at `index`: its stated size, else the next procedure's
    /// start, never past its section's end nor beyond `cap` bytes.
    pub(crate) fn procedure_end(&self, index: usize, cap: u64) -> u64 {
        let proc = &self.procedures[index];
        let start = proc.address;
        let mut end = match proc.size {
            Some(size) if size > 0 => start.saturating_add(size),
            _ => self
                .procedures
                .get(index + 1)
                .map(|p| p.address)
                .unwrap_or(u64::MAX),
        };
        if let Some(section) = self.section_at(start) {
            end = end.min(section.address.saturating_add(section.size));
        }
        end.min(start.saturating_add(cap)).max(start)
    }

    /// The procedure containing `address` (for mapping crash addresses): the closest start at
    /// or below it whose extent (stated size, else up to the next start within the same
    /// section) covers it.
    pub fn procedure_at(&self, address: u64) -> Option<&Procedure> {
        let index = match self
            .procedures
            .binary_search_by_key(&address, |p| p.address)
        {
            Ok(i) => return Some(&self.procedures[i]),
            Err(0) => return None,
            Err(i) => i - 1,
        };
        (address < self.procedure_end(index, u64::MAX)).then(|| &self.procedures[index])
    }

    /// The bytes mapped at `[address, address + len)`, when all of them are in the file.
    pub fn bytes_at(&self, address: u64, len: u64) -> Option<&[u8]> {
        let section = self.section_at(address)?;
        let offset_in = address - section.address;
        let available = section.file_size.checked_sub(offset_in)?;
        if len > available {
            return None;
        }
        let start = section.file_offset?.checked_add(offset_in)?;
        let start = usize::try_from(start).ok()?;
        let end = start.checked_add(usize::try_from(len).ok()?)?;
        self.bytes.get(start..end)
    }

    /// The bytes mapped from `address` to the end of its section's file data.
    pub(crate) fn bytes_from(&self, address: u64, max: u64) -> Option<&[u8]> {
        let section = self.section_at(address)?;
        let offset_in = address - section.address;
        let available = section.file_size.checked_sub(offset_in)?;
        self.bytes_at(address, available.min(max))
    }

    /// The stored name of a symbol exactly at `address`.
    pub(crate) fn symbol_name_at(&self, address: u64) -> Option<&str> {
        let i = self.symbols.partition_point(|(a, _)| *a < address);
        self.symbols
            .get(i)
            .filter(|(a, _)| *a == address)
            .map(|(_, n)| n.as_str())
    }

    /// The section's bytes as present in the file (empty for zero-fill sections).
    pub(crate) fn section_bytes(&self, section: &SectionInfo) -> &[u8] {
        let Some(offset) = section.file_offset else {
            return &[];
        };
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        let end = start.saturating_add(usize::try_from(section.file_size).unwrap_or(0));
        self.bytes
            .get(start..end.min(self.bytes.len()))
            .unwrap_or(&[])
    }

    /// Path of the file behind the document (for messages).
    pub fn file(&self) -> &Path {
        &self.doc.file
    }
}

/// What parsing a document's headers yields; the image keeps it beside the bytes it came from.
struct Parsed {
    sections: Vec<SectionInfo>,
    isa: Isa,
    big_endian: bool,
    pointer_size: u8,
    imports: Vec<ImportEntry>,
    symbols: Vec<(u64, String)>,
    procedures: Vec<Procedure>,
    entry: Option<u64>,
    fixed_address: bool,
}

fn parse(doc: &DocumentSpec, kind: Format, bytes: &[u8]) -> Result<Parsed, ProviderError> {
    let file = object::File::parse(bytes).map_err(|e| ProviderError::Malformed {
        document: doc.name.clone(),
        format: kind.to_string(),
        reason: e.to_string(),
    })?;
    let sections = collect_sections(&file, bytes.len() as u64);
    let isa = isa_of(file.architecture());
    let imports = super::imports::collect(&file, bytes, &sections, isa);
    let symbols = collect_symbols(&file);
    let (procedures, entry) = super::procedures::collect(&file, bytes, &sections, &imports);
    Ok(Parsed {
        isa,
        big_endian: !file.is_little_endian(),
        pointer_size: if file.is_64() { 8 } else { 4 },
        sections,
        imports,
        symbols,
        procedures,
        entry,
        fixed_address: fixed_address(&file),
    })
}

/// Every named, defined symbol with an address (code and data), sorted and deduplicated.
fn collect_symbols(file: &object::File<'_>) -> Vec<(u64, String)> {
    use object::ObjectSymbol;
    let mut out: Vec<(u64, String)> = file
        .symbols()
        .chain(file.dynamic_symbols())
        .filter(|s| s.is_definition() && s.address() != 0)
        .filter_map(|s| {
            let name = s.name().ok()?;
            (!name.is_empty()).then(|| (s.address(), super::symbols::escape_controls(name)))
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Whether the image runs at the addresses it was linked at, so immediates can be addresses.
fn fixed_address(file: &object::File<'_>) -> bool {
    use object::Object;
    match file {
        object::File::Elf32(_) | object::File::Elf64(_) => {
            file.kind() == object::ObjectKind::Executable
        }
        object::File::MachO32(_) | object::File::MachO64(_) => {
            file.kind() == object::ObjectKind::Executable && !macho_pie(file)
        }
        object::File::Pe32(_) | object::File::Pe64(_) => true,
        _ => false,
    }
}

/// Whether a Mach-O executable is position independent (`MH_PIE` in its header's flags).
fn macho_pie(file: &object::File<'_>) -> bool {
    use object::read::macho::MachHeader;
    let flags = match file {
        object::File::MachO32(f) => f.macho_header().flags(f.endian()),
        object::File::MachO64(f) => f.macho_header().flags(f.endian()),
        _ => return false,
    };
    flags.intersects(object::macho::MH_PIE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::native::test_support::{document, fixtures};

    /// Cut points: every length up to 64 bytes, then a sparse walk to the end, then the tail.
    fn cut_points(len: usize) -> Vec<usize> {
        let mut points: Vec<usize> = (0..64.min(len)).collect();
        points.extend((64..4096.min(len)).step_by(61));
        let mut at = 4096;
        while at < len {
            points.push(at);
            at = at * 5 / 4 + 13;
        }
        points.extend(len.saturating_sub(8)..len);
        points
    }

    fn hostile_documents() -> Vec<DocumentSpec> {
        vec![
            document("/usr/bin/ls", None),
            document("fsevents/package/fsevents.node", Some("arm64")),
            document("fsevents/package/fsevents.node", Some("x86_64")),
            document(
                "py2app/py2app/apptemplate/prebuilt/main-universal",
                Some("ppc"),
            ),
            document(
                "py2app/py2app/apptemplate/prebuilt/main-universal",
                Some("x86"),
            ),
            document("delocate/delocate/tests/data/libam1.dylib", None),
            document(
                "node-notifier/package/vendor/snoreToast/snoretoast-x64.exe",
                None,
            ),
            document("7zip-bin-5.2.0/package/linux/arm64/7za", None),
        ]
    }

    /// Runs what a tool call would run on an image, so hostile input reaches every parser.
    fn exercise(image: &Image, deep: bool) {
        let first = image.procedures().first().map_or(0, |p| p.address);
        let _ = image.procedure_at(first);
        let _ = image.assembly(first, 0, 20);
        let _ = image.callees(first);
        if deep {
            let _ = image.strings(&crate::providers::native::StringQuery::literal("a"));
            let _ = image.xrefs(first);
            let _ = image.function_dossier(first);
        }
    }

    #[test]
    fn truncated_documents_never_panic() {
        for doc in hostile_documents() {
            let bytes = read_document(&doc).unwrap();
            for cut in cut_points(bytes.len()) {
                if let Ok(image) = Image::from_bytes(&doc, bytes[..cut].to_vec()) {
                    // The whole-image operations are slow in debug builds; run them on the
                    // small documents, which reach the same parsers.
                    exercise(&image, bytes.len() < 300_000);
                }
            }
        }
    }

    #[test]
    fn flipped_header_bytes_never_panic() {
        for doc in hostile_documents() {
            let bytes = read_document(&doc).unwrap();
            // Large documents take long to parse in debug builds; their headers get a
            // sparser walk.
            let (span, step) = if bytes.len() < 300_000 {
                (1024, 4)
            } else {
                (512, 16)
            };
            let span = bytes.len().min(span);
            for at in (0..span).step_by(step) {
                let mut crafted = bytes.clone();
                crafted[at] ^= 0xff;
                if let Ok(image) = Image::from_bytes(&doc, crafted) {
                    exercise(&image, false);
                }
            }
            // Huge counts and offsets in aligned header words.
            for at in (0..span.saturating_sub(4)).step_by(24) {
                let mut crafted = bytes.clone();
                crafted[at..at + 4].copy_from_slice(&[0xff, 0xff, 0xff, 0x7f]);
                if let Ok(image) = Image::from_bytes(&doc, crafted) {
                    exercise(&image, false);
                }
            }
        }
    }

    #[test]
    fn truncated_files_admit_and_list_without_panic() {
        let source = fixtures().join("py2app/py2app/apptemplate/prebuilt/main-universal");
        let bytes = std::fs::read(&source).unwrap();
        let dir = std::env::temp_dir().join(format!("rea-native-cut-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("cut");
        for cut in cut_points(bytes.len()).into_iter().step_by(3) {
            std::fs::write(&path, &bytes[..cut]).unwrap();
            let target = crate::providers::native::admit(&path).unwrap();
            for doc in &target.documents {
                let _ = crate::providers::native::procedures(doc);
            }
        }
        // Crafted fat headers: every byte of the header and arch table flipped in turn.
        for at in 0..(8 + 4 * 20) {
            let mut crafted = bytes.clone();
            crafted[at] ^= 0xff;
            std::fs::write(&path, &crafted).unwrap();
            let target = crate::providers::native::admit(&path).unwrap();
            for doc in &target.documents {
                let _ = crate::providers::native::procedures(doc);
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn document_ranges_are_checked_against_the_file() {
        let mut doc = document("/usr/bin/ls", None);
        doc.size += 1;
        assert!(matches!(
            Image::load(&doc),
            Err(ProviderError::OutOfFile { .. })
        ));
        doc.offset = u64::MAX;
        assert!(matches!(
            Image::load(&doc),
            Err(ProviderError::OutOfFile { .. })
        ));
    }

    #[test]
    fn procedure_at_maps_inner_addresses() {
        let image = Image::load(&document("/usr/lib/x86_64-linux-gnu/libc.so.6", None)).unwrap();
        let malloc = image
            .procedures()
            .iter()
            .find(|p| p.name.as_deref() == Some("malloc"))
            .unwrap();
        let inner = malloc.address + malloc.size.unwrap() / 2;
        assert_eq!(image.procedure_at(inner).unwrap().address, malloc.address);
        assert_eq!(
            image.procedure_at(malloc.address).unwrap().address,
            malloc.address
        );
        assert!(image.procedure_at(0).is_none());
    }
}
