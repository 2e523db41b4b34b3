//! Reads native images — Mach-O (thin and universal), ELF and PE — for what an inventory needs:
//! regions, linked libraries, run-path entries, code signature, exports, URLs in strings and the
//! Electron fuse wire.
//!
//! Parsing goes through the `object` crate; everything it hands back is treated as untrusted and
//! each failure is recorded on the image instead of aborting the inventory.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use object::macho;
use object::read::macho::{FatArch, LoadCommandVariant, MachHeader, MachOFile};
use object::{Endianness, FileKind, Object, ObjectSection, ObjectSegment};

use crate::vocabulary::{Architecture, Format};

use super::ids::sha256_hex;
use super::macho_sig::{self, SignatureInfo};
use super::{EdgeKind, PartKind};

/// The marker that precedes Electron's fuse wire.
pub(crate) const FUSE_SENTINEL: &[u8] = b"dL7pKGdnNz796PbbjQWNKmHXBZaB9tsX";

/// Longest URL kept; longer matches are almost always binary noise.
const MAX_URL_LEN: usize = 2048;

/// A segment or section of an image.
#[derive(Debug, Clone)]
pub(crate) struct Region {
    /// `Segment` or `Section`.
    pub kind: PartKind,
    /// `segment:<name>` or `section:<name>`.
    pub name: String,
    pub address: u64,
    pub size: u64,
    /// Offset from the start of the file (slice offset included).
    pub file_offset: Option<u64>,
    pub sha256: Option<String>,
}

/// The code-signature state of an image.
#[derive(Debug, Clone)]
pub(crate) enum Signature {
    /// The format has no embedded Mach-O signature (ELF, PE).
    NotApplicable,
    /// A Mach-O image without `LC_CODE_SIGNATURE`.
    Absent,
    /// A parsed signature.
    Present(SignatureInfo),
    /// `LC_CODE_SIGNATURE` exists but its data is malformed.
    Malformed(String),
}

/// The Electron fuse wire found in an image.
#[derive(Debug, Clone)]
pub(crate) struct FuseWire {
    pub version: u8,
    /// One byte per fuse, as stored (`'0'`, `'1'`, `'r'`, …).
    pub fuses: Vec<u8>,
}

/// One image: a thin file, or one slice of a universal file.
#[derive(Debug, Clone)]
pub(crate) struct Image {
    pub arch: Architecture,
    pub kind: PartKind,
    /// `(offset, size)` of the slice inside a universal file.
    pub slice: Option<(u64, u64)>,
    /// Mach-O `MH_EXECUTE` (its directory is `@executable_path`).
    pub is_main_executable_type: bool,
    pub is_macho: bool,
    pub libraries: Vec<(EdgeKind, String)>,
    pub rpaths: Vec<String>,
    pub signature: Signature,
    /// Exported names, sorted and unique.
    pub exports: Vec<String>,
    /// URLs found in the image bytes, sorted and unique.
    pub urls: Vec<String>,
    pub fuse_wire: Option<FuseWire>,
    pub regions: Vec<Region>,
    /// Problems met while reading; the image is still reported.
    pub errors: Vec<String>,
}

/// The images of one file.
#[derive(Debug, Clone)]
pub(crate) struct FileImages {
    pub universal: bool,
    pub images: Vec<Image>,
    pub errors: Vec<String>,
}

/// The native format of a file whose first bytes are `head` and whose length is `len`, by the
/// one sniffer rea has (`providers::native`): a universal file is one whose slices all lie inside
/// it, so a forged or cut header reads as data.
pub(crate) fn sniff(head: &[u8], len: u64) -> Format {
    crate::providers::native::sniff(head, len)
}

/// Reads every image of a file. Returns `None` when the file is not a native image.
pub(crate) fn analyze(data: &[u8], with_regions: bool) -> Option<FileImages> {
    match sniff(data, data.len() as u64) {
        Format::MachOUniversal => Some(analyze_fat(data, with_regions)),
        Format::MachO | Format::Elf | Format::Pe => Some(FileImages {
            universal: false,
            images: vec![analyze_thin(data, None, with_regions)],
            errors: Vec::new(),
        }),
        _ => None,
    }
}

fn analyze_fat(data: &[u8], with_regions: bool) -> FileImages {
    let mut out = FileImages {
        universal: true,
        images: Vec::new(),
        errors: Vec::new(),
    };
    let arches: Vec<(u64, u64)> = match FileKind::parse(data) {
        Ok(FileKind::MachOFat64) => match object::read::macho::MachOFatFile64::parse(data) {
            Ok(fat) => fat.arches().iter().map(|a| a.file_range()).collect(),
            Err(e) => {
                out.errors.push(format!("universal header: {e}"));
                return out;
            }
        },
        _ => match object::read::macho::MachOFatFile32::parse(data) {
            Ok(fat) => fat.arches().iter().map(|a| a.file_range()).collect(),
            Err(e) => {
                out.errors.push(format!("universal header: {e}"));
                return out;
            }
        },
    };
    // Slices that overlap an earlier one are not read: lipo never writes them, and 64
    // overlapping 1 GiB slices made one file cost 64 GiB of hashing and scanning.
    let mut by_offset: Vec<(u64, u64, usize)> = arches
        .iter()
        .enumerate()
        .map(|(i, &(o, s))| (o, s, i))
        .collect();
    by_offset.sort_unstable();
    let mut overlapping = vec![false; arches.len()];
    let mut reach: Option<(u64, usize)> = None;
    for &(offset, size, index) in &by_offset {
        if let Some((end, other)) = reach
            && offset < end
        {
            overlapping[index] = true;
            out.errors.push(format!(
                "slice {index} (offset {offset}, size {size}) overlaps slice {other}; it was not read"
            ));
            continue;
        }
        reach = Some((offset.saturating_add(size), index));
    }
    for (index, (offset, size)) in arches.into_iter().enumerate() {
        if overlapping[index] {
            continue;
        }
        let slice = usize::try_from(offset)
            .ok()
            .zip(usize::try_from(size).ok())
            .and_then(|(start, len)| start.checked_add(len).map(|end| (start, end)))
            .and_then(|(start, end)| data.get(start..end));
        match slice {
            Some(bytes) => out
                .images
                .push(analyze_thin(bytes, Some((offset, size)), with_regions)),
            None => out.errors.push(format!(
                "slice {index} (offset {offset}, size {size}) lies outside the {}-byte file",
                data.len()
            )),
        }
    }
    out
}

fn empty_image(kind: PartKind, slice: Option<(u64, u64)>) -> Image {
    Image {
        arch: Architecture::Unknown,
        kind,
        slice,
        is_main_executable_type: false,
        is_macho: false,
        libraries: Vec::new(),
        rpaths: Vec::new(),
        signature: Signature::NotApplicable,
        exports: Vec::new(),
        urls: Vec::new(),
        fuse_wire: None,
        regions: Vec::new(),
        errors: Vec::new(),
    }
}

/// Reads one thin image. `slice` is where it sits in a universal file.
fn analyze_thin(data: &[u8], slice: Option<(u64, u64)>, with_regions: bool) -> Image {
    let base = slice.map_or(0, |(offset, _)| offset);
    let sniffed = sniff(data, data.len() as u64);
    let fallback_kind = match sniffed {
        Format::Elf => PartKind::Elf,
        Format::Pe => PartKind::Pe,
        _ => PartKind::MachoOther,
    };
    let mut image = empty_image(fallback_kind, slice);
    image.urls = find_urls(data);
    image.fuse_wire = find_fuse_wire(data);
    let file = match object::File::parse(data) {
        Ok(file) => file,
        Err(e) => {
            image.errors.push(format!("cannot parse image: {e}"));
            if sniffed == Format::MachO {
                image.is_macho = true;
                image.signature = Signature::Malformed(format!("image unreadable: {e}"));
            }
            return image;
        }
    };
    match &file {
        object::File::MachO32(macho_file) => read_macho(macho_file, data, &mut image),
        object::File::MachO64(macho_file) => read_macho(macho_file, data, &mut image),
        other => {
            image.arch = arch_name(other.architecture());
            read_import_libraries(other, &mut image);
        }
    }
    image.exports = read_exports(&file, &mut image.errors);
    if with_regions {
        image.regions = read_regions(&file, data, base, image.is_macho);
    }
    image
}

/// Architecture of an ELF or PE image, in the vocabulary every part of rea uses.
fn arch_name(arch: object::Architecture) -> Architecture {
    use object::Architecture as A;
    match arch {
        A::X86_64 => Architecture::X86_64,
        A::I386 => Architecture::X86,
        A::Aarch64 => Architecture::Arm64,
        A::Arm => Architecture::Arm,
        A::PowerPc => Architecture::Ppc,
        A::PowerPc64 => Architecture::Ppc64,
        A::Mips => Architecture::Mips,
        A::Mips64 => Architecture::Mips64,
        A::Riscv32 => Architecture::Riscv32,
        A::Riscv64 => Architecture::Riscv64,
        A::S390x => Architecture::S390x,
        A::Sparc => Architecture::Sparc,
        A::Sparc64 => Architecture::Sparcv9,
        A::LoongArch64 => Architecture::Loongarch64,
        _ => Architecture::Unknown,
    }
}

/// Architecture of a Mach-O image, as the native reader names it.
fn macho_arch(cputype: u32, cpusubtype: u32) -> Architecture {
    crate::providers::native::macho_cpu_name(cputype, cpusubtype)
}

fn read_macho<'data, Mach: MachHeader<Endian = Endianness>>(
    file: &MachOFile<'data, Mach, &'data [u8]>,
    data: &[u8],
    image: &mut Image,
) {
    image.is_macho = true;
    let endian = file.endian();
    let header = file.macho_header();
    image.arch = macho_arch(header.cputype(endian).0, header.cpusubtype(endian).0);
    let filetype = header.filetype(endian);
    image.is_main_executable_type = filetype == macho::MH_EXECUTE;
    image.kind = if filetype == macho::MH_EXECUTE {
        PartKind::MachoExecutable
    } else if filetype == macho::MH_DYLIB {
        PartKind::MachoDylib
    } else if filetype == macho::MH_BUNDLE {
        PartKind::MachoBundle
    } else {
        PartKind::MachoOther
    };
    image.signature = Signature::Absent;
    let mut commands = match file.macho_load_commands() {
        Ok(commands) => commands,
        Err(e) => {
            image.errors.push(format!("load commands: {e}"));
            return;
        }
    };
    loop {
        let command = match commands.next() {
            Ok(Some(command)) => command,
            Ok(None) => break,
            Err(e) => {
                image.errors.push(format!("load commands: {e}"));
                break;
            }
        };
        let variant = match command.variant() {
            Ok(variant) => variant,
            Err(e) => {
                image
                    .errors
                    .push(format!("load command 0x{:x}: {e}", command.cmd().0));
                continue;
            }
        };
        match variant {
            LoadCommandVariant::Dylib(dylib) => {
                let kind = match command.cmd() {
                    macho::LC_LOAD_WEAK_DYLIB => EdgeKind::LoadWeakDylib,
                    macho::LC_REEXPORT_DYLIB => EdgeKind::ReexportDylib,
                    macho::LC_LAZY_LOAD_DYLIB => EdgeKind::LazyLoadDylib,
                    macho::LC_LOAD_UPWARD_DYLIB => EdgeKind::LoadUpwardDylib,
                    _ => EdgeKind::LoadDylib,
                };
                match command.string(endian, dylib.dylib.name) {
                    Ok(name) => image
                        .libraries
                        .push((kind, String::from_utf8_lossy(name).into_owned())),
                    Err(e) => image.errors.push(format!("dylib name: {e}")),
                }
            }
            LoadCommandVariant::Rpath(rpath) => match command.string(endian, rpath.path) {
                Ok(path) => image
                    .rpaths
                    .push(String::from_utf8_lossy(path).into_owned()),
                Err(e) => image.errors.push(format!("rpath: {e}")),
            },
            LoadCommandVariant::LinkeditData(linkedit)
                if command.cmd() == macho::LC_CODE_SIGNATURE =>
            {
                let offset = linkedit.dataoff.get(endian) as usize;
                let size = linkedit.datasize.get(endian) as usize;
                let bytes = offset
                    .checked_add(size)
                    .and_then(|end| data.get(offset..end));
                image.signature = match bytes {
                    None => Signature::Malformed(format!(
                        "LC_CODE_SIGNATURE range {offset}+{size} lies outside the {}-byte image",
                        data.len()
                    )),
                    Some(bytes) => match macho_sig::parse(bytes) {
                        Ok(info) => Signature::Present(info),
                        Err(e) => Signature::Malformed(e.0),
                    },
                };
            }
            _ => {}
        }
    }
}

fn read_import_libraries(file: &object::File<'_>, image: &mut Image) {
    let libraries = match file.import_libraries() {
        Ok(libraries) => libraries,
        Err(e) => {
            image.errors.push(format!("import libraries: {e}"));
            return;
        }
    };
    let mut seen = BTreeSet::new();
    for library in libraries {
        match library {
            Ok(library) => {
                let kind = match (image.kind, library.flags()) {
                    (PartKind::Pe, object::ImportLibraryFlags::Pe { delay: true }) => {
                        EdgeKind::DelayImport
                    }
                    (PartKind::Pe, _) => EdgeKind::Import,
                    _ => EdgeKind::Needed,
                };
                let name = String::from_utf8_lossy(library.name()).into_owned();
                if seen.insert((kind, name.clone())) {
                    image.libraries.push((kind, name));
                }
            }
            Err(e) => {
                image.errors.push(format!("import libraries: {e}"));
                break;
            }
        }
    }
}

fn read_exports(file: &object::File<'_>, errors: &mut Vec<String>) -> Vec<String> {
    let mut names = BTreeSet::new();
    match file.exports() {
        Ok(exports) => {
            for export in exports {
                match export {
                    Ok(export) => {
                        let name = match export.name() {
                            object::NameOrOrdinal::Name(name) => {
                                String::from_utf8_lossy(name).into_owned()
                            }
                            object::NameOrOrdinal::Ordinal(ordinal) => format!("#{ordinal}"),
                        };
                        if !name.is_empty() {
                            names.insert(name);
                        }
                    }
                    Err(e) => {
                        errors.push(format!("exports: {e}"));
                        break;
                    }
                }
            }
        }
        Err(e) => errors.push(format!("exports: {e}")),
    }
    names.into_iter().collect()
}

fn region_digest(data: &[u8], range: Option<(u64, u64)>) -> Option<String> {
    let (offset, size) = range?;
    let start = usize::try_from(offset).ok()?;
    let end = start.checked_add(usize::try_from(size).ok()?)?;
    data.get(start..end).map(sha256_hex)
}

fn read_regions(file: &object::File<'_>, data: &[u8], base: u64, is_macho: bool) -> Vec<Region> {
    let mut regions = Vec::new();
    // PE segments are its sections again; only Mach-O and ELF segments add information.
    if is_macho || matches!(file, object::File::Elf32(_) | object::File::Elf64(_)) {
        for (index, segment) in file.segments().enumerate() {
            let name = match segment.name() {
                Ok(Some(name)) if !name.is_empty() => name.to_string(),
                _ => format!("LOAD[{index}]"),
            };
            let (offset, size) = segment.file_range();
            let in_file = size > 0;
            regions.push(Region {
                kind: PartKind::Segment,
                name: format!("segment:{name}"),
                address: segment.address(),
                size: segment.size(),
                file_offset: in_file.then(|| base.saturating_add(offset)),
                sha256: if in_file {
                    region_digest(data, Some((offset, size)))
                } else {
                    None
                },
            });
        }
    }
    for section in file.sections() {
        let name = match section.name() {
            Ok(name) => name.to_string(),
            Err(_) => continue,
        };
        if name.is_empty() && section.size() == 0 {
            continue;
        }
        let full_name = match section.segment_name() {
            Ok(Some(segment)) if is_macho => format!("section:{segment},{name}"),
            _ => format!("section:{name}"),
        };
        let range = section.file_range();
        regions.push(Region {
            kind: PartKind::Section,
            name: full_name,
            address: section.address(),
            size: section.size(),
            file_offset: range.map(|(offset, _)| base.saturating_add(offset)),
            sha256: region_digest(data, range),
        });
    }
    regions
}

static URL_PATTERN: LazyLock<regex::bytes::Regex> = LazyLock::new(|| {
    // The character class is RFC 3986's unreserved, reserved and percent characters.
    regex::bytes::Regex::new(r"(?-u)(?:https?|wss?)://[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]+")
        .unwrap_or_else(|e| panic!("URL pattern is a valid constant regex: {e}"))
});

/// Extracts the host of an `scheme://host...` URL, or `None` when it is not a plausible host.
pub(crate) fn url_host(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if let Some(bracketed) = host_port.strip_prefix('[') {
        bracketed.split(']').next()?
    } else {
        host_port.split(':').next()?
    };
    let host = host.to_ascii_lowercase();
    let plausible = !host.is_empty()
        && host.len() <= 253
        && (host.contains('.') || host == "localhost" || host_port.starts_with('['))
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-' || b == b':')
        && !host.starts_with('.')
        && !host.ends_with('.');
    plausible.then_some(host)
}

/// Finds http/https/ws/wss URLs in raw bytes, trimmed of trailing punctuation, sorted and unique.
pub(crate) fn find_urls(data: &[u8]) -> Vec<String> {
    let mut urls = BTreeSet::new();
    for found in URL_PATTERN.find_iter(data) {
        let bytes = found.as_bytes();
        if bytes.len() > MAX_URL_LEN {
            continue;
        }
        let Ok(text) = std::str::from_utf8(bytes) else {
            continue;
        };
        let trimmed = text.trim_end_matches(['.', ',', ';', ':', '\'', ')', ']', '!', '?']);
        if url_host(trimmed).is_some() {
            urls.insert(trimmed.to_string());
        }
    }
    urls.into_iter().collect()
}

/// Reads the first Electron fuse wire: sentinel, version byte, length byte, one byte per fuse.
pub(crate) fn find_fuse_wire(data: &[u8]) -> Option<FuseWire> {
    let at = memchr::memmem::find(data, FUSE_SENTINEL)?;
    let header = at.checked_add(FUSE_SENTINEL.len())?;
    let version = *data.get(header)?;
    let length = *data.get(header.checked_add(1)?)? as usize;
    let start = header.checked_add(2)?;
    let end = start.checked_add(length)?.min(data.len());
    Some(FuseWire {
        version,
        fuses: data.get(start..end)?.to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_trimmed_and_filtered() {
        let data = b"\0https://api.example.com/v1/x).\0http://%s/bad\0wss://LOCALHOST:8080/s\0ftp://no\0http://a\0";
        assert_eq!(
            find_urls(data),
            vec![
                "https://api.example.com/v1/x".to_string(),
                "wss://LOCALHOST:8080/s".to_string()
            ]
        );
        assert_eq!(
            url_host("https://user@Sub.Example.org:443/p").as_deref(),
            Some("sub.example.org")
        );
        assert_eq!(url_host("http://[::1]:80/").as_deref(), Some("::1"));
    }

    #[test]
    fn fuse_wire_is_bounded() {
        let mut data = FUSE_SENTINEL.to_vec();
        data.extend_from_slice(&[1, 9, b'0', b'1', b'r']);
        let wire = find_fuse_wire(&data).expect("wire found");
        assert_eq!(wire.version, 1);
        // The length says 9 but only 3 bytes remain: the wire is cut at the end of the data.
        assert_eq!(wire.fuses, b"01r".to_vec());
        assert!(find_fuse_wire(FUSE_SENTINEL).is_none());
    }

    #[test]
    fn java_class_magic_is_not_universal() {
        let class = [0xca, 0xfe, 0xba, 0xbe, 0x00, 0x00, 0x00, 0x34, 0, 0, 0, 0];
        assert_eq!(sniff(&class, class.len() as u64), Format::Raw);
        assert!(analyze(&class, true).is_none());
    }

    #[test]
    fn truncated_images_do_not_panic() {
        let path = std::env::var("REA_FIXTURES")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|_| {
                std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".fixtures")
            })
            .join("fsevents/package/fsevents.node");
        let data = std::fs::read(path).expect("fixture present");
        for end in (0..data.len()).step_by(997).chain([4, 8, 20, 28, 4096]) {
            let _ = analyze(&data[..end.min(data.len())], true);
        }
        // A header whose slice points past the end is not followed: by the one sniffer's rule
        // the file is not universal, and it is read as data.
        let mut forged = data[..4096].to_vec();
        forged[8..12].copy_from_slice(&[0, 0, 0, 7]);
        forged[16..20].copy_from_slice(&[0x7f, 0xff, 0xff, 0xff]);
        assert!(analyze(&forged, true).is_none());
    }
}
