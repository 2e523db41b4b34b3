//! Call frame information of the ELF modules a crashed program had mapped, read from their
//! files: `.eh_frame`, searched through `.eh_frame_hdr`'s binary-search table when there is one
//! (else through an index built once), each row turned into an owned `unwind::Row`.
//!
//! Modules are untrusted files: every size is checked before bytes are read, sections are
//! capped, and a malformed section gives "no call frame information", never a panic. The
//! `ModuleCache` keeps what one run has read, so a program that faults many times (a handler
//! that recovers) parses each module once.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use gimli::{
    BaseAddresses, CieOrFde, EhFrame, EhFrameHdr, EhFrameOffset, LittleEndian, UnwindContext,
    UnwindSection as _,
};
use object::read::elf::{FileHeader as _, ProgramHeader as _, SectionHeader as _};
use object::{Endianness, ReadCache};

use super::unwind::{CfaRule, Row, Rule};

/// The largest `.eh_frame` or `.eh_frame_hdr` read from one module (big browsers have tens of
/// megabytes).
const MAX_SECTION_BYTES: u64 = 64 << 20;
/// The most FDEs indexed for a module without a usable `.eh_frame_hdr`.
const MAX_INDEXED_FDES: usize = 1 << 20;
/// The cache is emptied when the bytes it holds would pass this.
const MAX_CACHED_BYTES: usize = 256 << 20;
/// The cache is emptied when it would hold more modules than this.
const MAX_CACHED_MODULES: usize = 256;

/// One `PT_LOAD` segment: where a file range is placed in the module's address space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Load {
    offset: u64,
    size: u64,
    address: u64,
}

/// What a module offers the walk: its segments and, when it has them, its unwind tables.
#[derive(Debug)]
pub(crate) struct ModuleInfo {
    loads: Vec<Load>,
    cfi: Result<Cfi, String>,
}

/// A module's `.eh_frame`, with what its pointers are relative to.
#[derive(Debug)]
struct Cfi {
    eh_frame: Vec<u8>,
    bases: BaseAddresses,
    search: Search,
}

/// How an address is looked up in `.eh_frame`.
#[derive(Debug)]
enum Search {
    /// `.eh_frame_hdr`'s sorted table.
    Header(Vec<u8>),
    /// `(start, end, offset)` of every FDE, sorted by start.
    Index(Vec<(u64, u64, usize)>),
}

impl ModuleInfo {
    /// Reads the module at `path`. `None` if it is not a little-endian 64-bit ELF file.
    pub(crate) fn load(path: &Path) -> Option<ModuleInfo> {
        let file = std::fs::File::open(path).ok()?;
        if !file.metadata().ok()?.is_file() {
            return None;
        }
        let data = ReadCache::new(file);
        let header = object::elf::FileHeader64::<Endianness>::parse(&data).ok()?;
        let endian = header.endian().ok()?;
        if endian != Endianness::Little {
            return None;
        }
        let loads = header
            .program_headers(endian, &data)
            .ok()?
            .iter()
            .filter(|segment| segment.p_type(endian) == object::elf::PT_LOAD)
            .map(|segment| Load {
                offset: segment.p_offset(endian),
                size: segment.p_filesz(endian),
                address: segment.p_vaddr(endian),
            })
            .collect();
        let cfi = read_cfi(header, endian, &data);
        Some(ModuleInfo { loads, cfi })
    }

    /// The virtual address of a file offset: `offset - p_offset + p_vaddr` of the `PT_LOAD`
    /// that holds it.
    pub(crate) fn static_address(&self, file_offset: u64) -> Option<u64> {
        self.loads.iter().find_map(|load| {
            let end = load.offset.checked_add(load.size)?;
            (load.offset <= file_offset && file_offset < end)
                .then(|| (file_offset - load.offset).checked_add(load.address))
                .flatten()
        })
    }

    /// The unwind row that covers the static `address`, or why there is none.
    pub(crate) fn row(&self, address: u64) -> Result<Row, String> {
        let cfi = self.cfi.as_ref().map_err(Clone::clone)?;
        cfi.row(address)
    }

    /// Bytes this module keeps in the cache.
    fn size(&self) -> usize {
        match &self.cfi {
            Ok(cfi) => {
                cfi.eh_frame.len()
                    + match &cfi.search {
                        Search::Header(bytes) => bytes.len(),
                        Search::Index(index) => index.len() * 24,
                    }
            }
            Err(_) => 0,
        }
    }
}

type Data<'a> = &'a ReadCache<std::fs::File>;

/// The header of the section called `name`, if the module has one.
fn find<'a>(
    header: &object::elf::FileHeader64<Endianness>,
    endian: Endianness,
    data: Data<'a>,
    name: &[u8],
) -> Result<Option<&'a object::elf::SectionHeader64<Endianness>>, String> {
    let sections = header
        .sections(endian, data)
        .map_err(|error| format!("the section headers do not parse: {error}"))?;
    Ok(sections
        .section_by_name(endian, name)
        .map(|(_, section)| section)
        .filter(|section| section.sh_type(endian) != object::elf::SHT_NOBITS))
}

/// A section's address and bytes, if the module has it, with a size within the cap.
fn section(
    header: &object::elf::FileHeader64<Endianness>,
    endian: Endianness,
    data: Data<'_>,
    name: &[u8],
) -> Result<Option<(u64, Vec<u8>)>, String> {
    let Some(section) = find(header, endian, data, name)? else {
        return Ok(None);
    };
    let size = section.sh_size(endian);
    if size > MAX_SECTION_BYTES {
        return Err(format!(
            "{} is {size} bytes, more than the {MAX_SECTION_BYTES} read",
            String::from_utf8_lossy(name)
        ));
    }
    let bytes = section
        .data(endian, data)
        .map_err(|error| format!("{} cannot be read: {error}", String::from_utf8_lossy(name)))?;
    Ok(Some((section.sh_addr(endian), bytes.to_vec())))
}

fn read_cfi(
    header: &object::elf::FileHeader64<Endianness>,
    endian: Endianness,
    data: Data<'_>,
) -> Result<Cfi, String> {
    let Some((eh_frame_address, eh_frame)) = section(header, endian, data, b".eh_frame")? else {
        return Err("the module has no .eh_frame".to_owned());
    };
    let address = |name: &[u8]| {
        find(header, endian, data, name)
            .ok()
            .flatten()
            .map(|section| section.sh_addr(endian))
    };
    // Text- and data-relative pointer encodings are rare on x86-64, but cost nothing to allow.
    let mut bases = BaseAddresses::default().set_eh_frame(eh_frame_address);
    if let Some(text) = address(b".text") {
        bases = bases.set_text(text);
    }
    if let Some(got) = address(b".got") {
        bases = bases.set_got(got);
    }
    let header_table = section(header, endian, data, b".eh_frame_hdr")
        .ok()
        .flatten()
        .filter(|(address, bytes)| {
            let hdr_bases = bases.clone().set_eh_frame_hdr(*address);
            usable_header(bytes, &hdr_bases, eh_frame_address)
        });
    let search = match header_table {
        Some((address, bytes)) => {
            bases = bases.set_eh_frame_hdr(address);
            Search::Header(bytes)
        }
        None => Search::Index(index(&eh_frame, &bases)),
    };
    Ok(Cfi {
        eh_frame,
        bases,
        search,
    })
}

/// Whether `.eh_frame_hdr` parses, has a search table and points at this `.eh_frame`.
fn usable_header(bytes: &[u8], bases: &BaseAddresses, eh_frame_address: u64) -> bool {
    let Ok(parsed) = EhFrameHdr::new(bytes, LittleEndian).parse(bases, 8) else {
        return false;
    };
    parsed.table().is_some() && parsed.eh_frame_ptr().direct().ok() == Some(eh_frame_address)
}

/// Every FDE's range and offset, sorted; a malformed entry ends the list.
fn index(eh_frame: &[u8], bases: &BaseAddresses) -> Vec<(u64, u64, usize)> {
    let section = eh_frame_section(eh_frame);
    let mut cies = HashMap::new();
    let mut out = Vec::new();
    let mut entries = section.entries(bases);
    while let Ok(Some(entry)) = entries.next() {
        if out.len() >= MAX_INDEXED_FDES {
            break;
        }
        let CieOrFde::Fde(partial) = entry else {
            continue;
        };
        let parsed = partial.parse(|section, bases, offset: EhFrameOffset<usize>| {
            if let Some(cie) = cies.get(&offset.0) {
                return Ok(Clone::clone(cie));
            }
            let cie = section.cie_from_offset(bases, offset)?;
            cies.insert(offset.0, cie.clone());
            Ok(cie)
        });
        if let Ok(fde) = parsed {
            let start = fde.initial_address();
            if let Some(end) = start.checked_add(fde.len()) {
                out.push((start, end, fde.offset()));
            }
        }
    }
    out.sort_unstable();
    out
}

fn eh_frame_section(bytes: &[u8]) -> EhFrame<gimli::EndianSlice<'_, LittleEndian>> {
    let mut section = EhFrame::new(bytes, LittleEndian);
    section.set_address_size(8);
    section
}

impl Cfi {
    fn row(&self, address: u64) -> Result<Row, String> {
        let section = eh_frame_section(&self.eh_frame);
        let offset = self.fde_offset(address)?;
        let fde = section
            .fde_from_offset(&self.bases, EhFrameOffset(offset), EhFrame::cie_from_offset)
            .map_err(|error| format!("the FDE does not parse: {error}"))?;
        if !fde.contains(address) {
            return Err("no FDE covers the address".to_owned());
        }
        let mut context = Box::new(UnwindContext::new());
        let row = fde
            .unwind_info_for_address(&section, &self.bases, &mut context, address)
            .map_err(|error| format!("the FDE's instructions do not evaluate: {error}"))?;
        let expression = |expression: &gimli::UnwindExpression<usize>| {
            expression
                .get(&section)
                .map(|e| e.0.slice().to_vec())
                .map_err(|error| format!("a CFI expression is out of bounds: {error}"))
        };
        let cfa = match row.cfa() {
            gimli::CfaRule::RegisterAndOffset { register, offset } => CfaRule::RegisterAndOffset {
                register: register.0,
                offset: *offset,
            },
            gimli::CfaRule::Expression(e) => CfaRule::Expression(expression(e)?),
        };
        let mut rules = Vec::new();
        for (register, rule) in row.registers() {
            let rule = match rule {
                gimli::RegisterRule::Undefined => Rule::Undefined,
                gimli::RegisterRule::SameValue => Rule::SameValue,
                gimli::RegisterRule::Offset(n) => Rule::Offset(*n),
                gimli::RegisterRule::ValOffset(n) => Rule::ValOffset(*n),
                gimli::RegisterRule::Register(other) => Rule::Register(other.0),
                gimli::RegisterRule::Expression(e) => Rule::Expression(expression(e)?),
                gimli::RegisterRule::ValExpression(e) => Rule::ValExpression(expression(e)?),
                gimli::RegisterRule::Constant(value) => Rule::Constant(*value),
                _ => Rule::Architectural,
            };
            rules.push((register.0, rule));
        }
        Ok(Row {
            cfa,
            rules,
            return_address_register: fde.cie().return_address_register().0,
            signal_frame: fde.is_signal_trampoline(),
            encoding: fde.cie().encoding(),
        })
    }

    /// The `.eh_frame` offset of the FDE that should cover `address` (the caller checks that
    /// it does).
    fn fde_offset(&self, address: u64) -> Result<usize, String> {
        match &self.search {
            Search::Header(bytes) => {
                let parsed = EhFrameHdr::new(bytes, LittleEndian)
                    .parse(&self.bases, 8)
                    .map_err(|error| format!(".eh_frame_hdr does not parse: {error}"))?;
                let table = parsed
                    .table()
                    .ok_or_else(|| ".eh_frame_hdr has no table".to_owned())?;
                let pointer = table
                    .lookup(address, &self.bases)
                    .and_then(|pointer| pointer.direct())
                    .map_err(|error| format!(".eh_frame_hdr's table does not parse: {error}"))?;
                // Checked here rather than by gimli, whose subtraction assumes a valid table.
                let start = self.bases.eh_frame.section.unwrap_or(0);
                pointer
                    .checked_sub(start)
                    .and_then(|offset| usize::try_from(offset).ok())
                    .filter(|offset| *offset < self.eh_frame.len())
                    .ok_or_else(|| ".eh_frame_hdr points outside .eh_frame".to_owned())
            }
            Search::Index(index) => {
                let at = index.partition_point(|(start, _, _)| *start <= address);
                match at.checked_sub(1).map(|i| index[i]) {
                    Some((start, end, offset)) if start <= address && address < end => Ok(offset),
                    _ => Err("no FDE covers the address".to_owned()),
                }
            }
        }
    }
}

/// The modules one run has read, by path and inode.
#[derive(Debug, Default)]
pub(crate) struct ModuleCache {
    modules: HashMap<(String, u64), Option<Arc<ModuleInfo>>>,
    bytes: usize,
}

impl ModuleCache {
    /// The module under `key`, loaded with `load` the first time.
    pub(crate) fn get(
        &mut self,
        key: (String, u64),
        load: impl FnOnce() -> Option<ModuleInfo>,
    ) -> Option<Arc<ModuleInfo>> {
        if let Some(module) = self.modules.get(&key) {
            return module.clone();
        }
        let module = load().map(Arc::new);
        let size = module.as_ref().map_or(0, |m| m.size());
        if self.modules.len() >= MAX_CACHED_MODULES || self.bytes + size > MAX_CACHED_BYTES {
            self.modules.clear();
            self.bytes = 0;
        }
        self.bytes += size;
        self.modules.insert(key, module.clone());
        module
    }
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::*;

    /// `nm`'s address of `name` in `path`.
    fn symbol(path: &Path, name: &str) -> u64 {
        let out = Command::new("nm").arg(path).output().unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        let line = text
            .lines()
            .find(|line| line.split_whitespace().nth(2) == Some(name))
            .unwrap_or_else(|| panic!("{name} not in nm output"));
        u64::from_str_radix(line.split_whitespace().next().unwrap(), 16).unwrap()
    }

    #[test]
    fn rows_of_a_compiled_program_match_its_prologues() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("rows.c");
        std::fs::write(
            &source,
            "__attribute__((noinline)) int leaf(int x) { return x * 3; }\n\
             int main(int argc, char **argv) { (void)argv; return leaf(argc); }\n",
        )
        .unwrap();
        let program = dir.path().join("rows");
        let status = Command::new("gcc")
            .args(["-O0", "-o"])
            .arg(&program)
            .arg(&source)
            .status()
            .unwrap();
        assert!(status.success());
        let module = ModuleInfo::load(&program).unwrap();
        let leaf = symbol(&program, "leaf");
        // At -O0: `push rbp` (1 byte), `mov rbp, rsp` (3 bytes), then the body.
        let entry = module.row(leaf).unwrap();
        assert_eq!(
            entry.cfa,
            CfaRule::RegisterAndOffset {
                register: 7,
                offset: 8
            }
        );
        assert_eq!(entry.return_address_register, 16);
        assert!(entry.rules.contains(&(16, Rule::Offset(-8))));
        let body = module.row(leaf + 4).unwrap();
        assert_eq!(
            body.cfa,
            CfaRule::RegisterAndOffset {
                register: 6,
                offset: 16
            }
        );
        assert!(body.rules.contains(&(6, Rule::Offset(-16))));
        assert!(module.row(0).is_err());

        // The same answers without `.eh_frame_hdr`, through the index.
        let bare = dir.path().join("bare");
        let status = Command::new("objcopy")
            .args(["--remove-section=.eh_frame_hdr"])
            .arg(&program)
            .arg(&bare)
            .status()
            .unwrap();
        assert!(status.success());
        let module = ModuleInfo::load(&bare).unwrap();
        assert!(matches!(
            module.cfi.as_ref().unwrap().search,
            Search::Index(_)
        ));
        assert_eq!(module.row(leaf + 4).unwrap(), body);
    }

    #[test]
    fn libc_has_rows_and_static_addresses_match_the_program_headers() {
        let path = Path::new("/usr/lib/x86_64-linux-gnu/libc.so.6");
        let module = ModuleInfo::load(path).unwrap();
        assert!(matches!(
            module.cfi.as_ref().unwrap().search,
            Search::Header(_)
        ));
        for offset in [0x1000u64, 0x30000, 0x100000] {
            assert_eq!(
                module.static_address(offset),
                super::super::fault::static_address_in_file(path, offset),
                "{offset:#x}"
            );
        }
        let data = std::fs::read(path).unwrap();
        use object::{Object as _, ObjectSymbol as _};
        let file = object::File::parse(&*data).unwrap();
        let abort = file
            .dynamic_symbols()
            .find(|s| s.name() == Ok("abort"))
            .unwrap()
            .address();
        assert!(module.row(abort).is_ok());
    }

    #[test]
    fn hostile_files_give_no_rows_and_no_panic() {
        let dir = tempfile::tempdir().unwrap();
        let real = std::fs::read("/usr/bin/ls").unwrap();
        let path = dir.path().join("mangled");
        // Flip bytes across the whole file in a fixed pattern, keeping the ELF header.
        let mut seed = 0x9e37_79b9_u64;
        for round in 0..40 {
            let mut bytes = real.clone();
            for _ in 0..(64 * (round + 1)) {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                let at = 64 + (seed >> 33) as usize % (bytes.len() - 64);
                bytes[at] = (seed >> 13) as u8;
            }
            std::fs::write(&path, &bytes).unwrap();
            if let Some(module) = ModuleInfo::load(&path) {
                for address in (0..0x30000).step_by(0x301) {
                    let _ = module.row(address);
                }
            }
        }
        assert!(ModuleInfo::load(Path::new("/nonexistent")).is_none());
        assert!(ModuleInfo::load(Path::new("/tmp")).is_none());
        std::fs::write(&path, b"\x7fELF\x02\x01\x01").unwrap();
        assert!(ModuleInfo::load(&path).is_none());
    }

    #[test]
    fn the_cache_loads_each_module_once() {
        let mut cache = ModuleCache::default();
        let mut loads = 0;
        for _ in 0..3 {
            let module = cache.get(("/usr/bin/ls".to_owned(), 1), || {
                loads += 1;
                ModuleInfo::load(Path::new("/usr/bin/ls"))
            });
            assert!(module.is_some());
        }
        assert_eq!(loads, 1);
        assert!(cache.get(("/x".to_owned(), 2), || None).is_none());
    }
}
