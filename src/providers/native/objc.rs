//! Objective-C method names of a stripped Mach-O where the file states them: the classes of
//! `__objc_classlist` and the categories of `__objc_catlist`, each with its instance methods (the
//! class's `class_ro_t` method list) and class methods (its metaclass's), named
//! `-[Class selector]` / `+[Class(Category) selector]` at their implementation's address, as the
//! compiler names the local symbols `strip -x` removes.
//!
//! Pointers are read as the linked file holds them: plain values (images with rebase opcodes) or
//! chained fixups (`LC_DYLD_CHAINED_FIXUPS`, formats `DYLD_CHAINED_PTR_64` and
//! `DYLD_CHAINED_PTR_64_OFFSET`, decoded slot by slot), where a bind is not a pointer into the
//! image but names the symbol a category's class is. Every walk is a fixed number of steps from
//! a list entry (no superclass chains), every count is bounded by the bytes that hold it, so a
//! hostile file costs time linear in its size and memory for the names only.

use std::collections::HashMap;
use std::rc::Rc;

use object::read::macho::{MachHeader, MachOFile};
use object::{Object, ObjectSection, ObjectSegment};

use super::leb128::uleb;
use crate::vocabulary::NameOrigin;

/// Upper bound on methods named from one file, against lists that claim billions.
const MAX_METHODS: usize = 1_000_000;

/// Longest class, category or selector name read; longer is not a name the compiler wrote.
const MAX_NAME: usize = 4096;

/// `method_list_t.entsizeAndFlags`: the entries are relative offsets (12 bytes each).
const RELATIVE_METHODS: u32 = 0x8000_0000;
/// With relative entries: the name offset reaches the selector string itself, not a reference.
const DIRECT_SELECTORS: u32 = 0x4000_0000;
/// The entry size bits of `entsizeAndFlags` (the low two bits and the high half are flags).
const ENTSIZE_MASK: u32 = 0x0000_fffc;

/// The low bits of `class_t.data` are Swift flags, not address bits.
const CLASS_DATA_FLAGS: u64 = 0x7;

/// `DYLD_CHAINED_PTR_64`: a rebase's target is a virtual address.
const DYLD_CHAINED_PTR_64: u16 = 2;
/// `DYLD_CHAINED_PTR_64_OFFSET`: a rebase's target is an offset from the image's start.
const DYLD_CHAINED_PTR_64_OFFSET: u16 = 6;

/// A method implementation and the name the metadata gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Method {
    /// Address of the implementation.
    pub(crate) imp: u64,
    /// `-[Class selector]`, `+[Class selector]` or `-[Class(Category) selector]`.
    pub(crate) name: String,
    /// The list that named it.
    pub(crate) source: NameOrigin,
}

/// What one 64-bit chained fixup of the image says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fixup {
    /// A pointer into the image, at this (unslid) address.
    Rebase(u64),
    /// A pointer to another image's symbol (its index in the fixups' import table): no
    /// address of this one.
    Bind(u32),
}

/// A segment whose pointers are chained fixups of one format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ChainedSegment {
    /// First address of the segment.
    pub(crate) start: u64,
    /// End (exclusive) of its pages.
    pub(crate) end: u64,
    /// `DYLD_CHAINED_PTR_64` or `DYLD_CHAINED_PTR_64_OFFSET`.
    pub(crate) format: u16,
}

/// How the image's pointer slots hold their values.
#[derive(Debug, Default)]
pub(crate) enum Pointers {
    /// Plain addresses (rebase opcodes, or no fixups at all).
    #[default]
    Plain,
    /// Chained fixups, each slot decoded when read: the walk reads only pointer fields, which
    /// are fixups or null, so no chain is followed and nothing is kept per fixup.
    Chained {
        /// The segments of a format this reads.
        segments: Vec<ChainedSegment>,
        /// Address of the Mach-O header (what `_64_OFFSET` targets count from).
        image_base: u64,
        /// Symbol names of the import table, by a bind's ordinal.
        imports: Vec<String>,
    },
}

/// The image as loaded: file-backed ranges by address, and how its pointers are stored.
#[derive(Debug, Default)]
pub(crate) struct Memory<'a> {
    /// `(address, bytes)` of each segment's file-backed part.
    pub(crate) regions: Vec<(u64, &'a [u8])>,
    /// How a pointer slot is read.
    pub(crate) pointers: Pointers,
    /// In an image with bind opcodes, the symbols the slots the walk asks about bind to (a
    /// category's class that another image defines is one).
    pub(crate) bound: HashMap<u64, Rc<str>>,
}

impl Memory<'_> {
    fn bytes(&self, address: u64, len: usize) -> Option<&[u8]> {
        self.regions.iter().find_map(|&(start, data)| {
            let at = usize::try_from(address.checked_sub(start)?).ok()?;
            data.get(at..at.checked_add(len)?)
        })
    }

    fn u32(&self, address: u64) -> Option<u32> {
        Some(u32::from_le_bytes(self.bytes(address, 4)?.try_into().ok()?))
    }

    fn u64(&self, address: u64) -> Option<u64> {
        Some(u64::from_le_bytes(self.bytes(address, 8)?.try_into().ok()?))
    }

    /// The address a pointer slot holds once loaded; `None` for null, a bind or an unreadable
    /// slot.
    fn pointer(&self, slot: u64) -> Option<u64> {
        match &self.pointers {
            Pointers::Plain => self.u64(slot).filter(|&v| v != 0),
            Pointers::Chained { .. } => match self.fixup(slot)? {
                Fixup::Rebase(target) => Some(target),
                Fixup::Bind(_) => None,
            },
        }
    }

    /// The chained fixup a non-null slot holds, in a segment of a format this reads.
    fn fixup(&self, slot: u64) -> Option<Fixup> {
        let Pointers::Chained {
            segments,
            image_base,
            ..
        } = &self.pointers
        else {
            return None;
        };
        let raw = self.u64(slot).filter(|&v| v != 0)?;
        let segment = segments.iter().find(|s| slot >= s.start && slot < s.end)?;
        decode_chained_64(segment.format, raw, *image_base)
    }

    /// The symbol another image's pointer at `slot` binds to.
    fn bound_symbol(&self, slot: u64) -> Option<&str> {
        match &self.pointers {
            Pointers::Plain => self.bound.get(&slot).map(AsRef::as_ref),
            Pointers::Chained { imports, .. } => match self.fixup(slot)? {
                Fixup::Bind(ordinal) => imports.get(ordinal as usize).map(String::as_str),
                Fixup::Rebase(_) => None,
            },
        }
    }

    /// The NUL-terminated name at `address`: non-empty, within `MAX_NAME` bytes.
    fn name(&self, address: u64) -> Option<String> {
        let (start, data) = self
            .regions
            .iter()
            .find(|&&(start, data)| address >= start && address - start < data.len() as u64)?;
        let rest = &data[usize::try_from(address - start).ok()?..];
        let rest = &rest[..rest.len().min(MAX_NAME + 1)];
        let end = memchr::memchr(0, rest).filter(|&n| n > 0)?;
        Some(String::from_utf8_lossy(&rest[..end]).into_owned())
    }
}

/// Decodes one 64-bit chained fixup of `format` (`DYLD_CHAINED_PTR_64` or `_64_OFFSET`);
/// `None` for another format. (Its `next` field, bits 51..63, only links the chain.)
pub(crate) fn decode_chained_64(format: u16, raw: u64, image_base: u64) -> Option<Fixup> {
    if !matches!(format, DYLD_CHAINED_PTR_64 | DYLD_CHAINED_PTR_64_OFFSET) {
        return None;
    }
    if raw >> 63 == 1 {
        return Some(Fixup::Bind((raw & 0xff_ffff) as u32));
    }
    // Rebase: target in bits 0..36, the top byte of the pointer in bits 36..44.
    let target = raw & 0xf_ffff_ffff;
    let high8 = ((raw >> 36) & 0xff) << 56;
    let address = if format == DYLD_CHAINED_PTR_64 {
        target
    } else {
        image_base.wrapping_add(target)
    };
    Some(Fixup::Rebase(address | high8))
}

fn le_u16(data: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(
        data.get(at..at.checked_add(2)?)?.try_into().ok()?,
    ))
}

fn le_u32(data: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        data.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

fn le_u64(data: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(
        data.get(at..at.checked_add(8)?)?.try_into().ok()?,
    ))
}

/// The segments an `LC_DYLD_CHAINED_FIXUPS` payload describes in a format this reads
/// (`dyld_chained_starts_in_image`, then one `dyld_chained_starts_in_segment` each); the number
/// of segments is bounded by the bytes that list them.
pub(crate) fn chained_segments(payload: &[u8], image_base: u64) -> Vec<ChainedSegment> {
    let mut out = Vec::new();
    let Some(starts) = le_u32(payload, 4).map(|o| o as usize) else {
        return out;
    };
    let Some(count) = le_u32(payload, starts) else {
        return out;
    };
    for index in 0..(count as usize).min(payload.len() / 4) {
        let Some(info) = starts
            .checked_add(4 + 4 * index)
            .and_then(|at| le_u32(payload, at))
        else {
            break;
        };
        let Some(at) = starts.checked_add(info as usize).filter(|_| info != 0) else {
            continue;
        };
        let (Some(page_size), Some(format), Some(offset), Some(pages)) = (
            le_u16(payload, at + 4),
            le_u16(payload, at + 6),
            le_u64(payload, at + 8),
            le_u16(payload, at + 20),
        ) else {
            continue;
        };
        if !matches!(format, DYLD_CHAINED_PTR_64 | DYLD_CHAINED_PTR_64_OFFSET) {
            continue;
        }
        let start = image_base.wrapping_add(offset);
        let end = start.saturating_add(u64::from(page_size) * u64::from(pages));
        out.push(ChainedSegment { start, end, format });
    }
    out
}

/// The symbol names of a chained-fixups import table, by import index (the ordinal a bind
/// carries): formats `DYLD_CHAINED_IMPORT` (1), `_ADDEND` (2) and `_ADDEND64` (3), with
/// uncompressed names.
pub(crate) fn chained_imports(payload: &[u8]) -> Vec<String> {
    let field = |at: usize| le_u32(payload, at).map(|v| v as usize);
    let (Some(imports), Some(symbols), Some(count), Some(format), Some(0)) =
        (field(8), field(12), field(16), field(20), field(24))
    else {
        return Vec::new();
    };
    let size = match format {
        1 => 4,
        2 => 8,
        3 => 16,
        _ => return Vec::new(),
    };
    // A count cannot outrun the bytes that hold the table.
    let count = count.min(payload.len().saturating_sub(imports) / size);
    (0..count)
        .map(|i| {
            let at = imports + i * size;
            let offset = if format == 3 {
                le_u64(payload, at).map(|v| (v >> 32) as usize)
            } else {
                le_u32(payload, at).map(|v| (v >> 9) as usize)
            };
            offset
                .and_then(|o| symbols.checked_add(o))
                .and_then(|start| {
                    let rest = payload.get(start..)?;
                    let end = memchr::memchr(0, &rest[..rest.len().min(MAX_NAME + 1)])?;
                    Some(String::from_utf8_lossy(&rest[..end]).into_owned())
                })
                .unwrap_or_default()
        })
        .collect()
}

/// The `wanted` slots that `LC_DYLD_INFO` bind opcodes bind, with the symbol each binds to;
/// `segments` are the segments' addresses in load-command order (the opcodes name segments by
/// index). Each opcode advances through the data and repeats count toward a cap, so the walk
/// ends.
pub(crate) fn bind_opcodes(
    opcodes: &[u8],
    segments: &[u64],
    wanted: &dyn Fn(u64) -> bool,
) -> HashMap<u64, Rc<str>> {
    const MAX_BINDS: usize = 1_000_000;
    let mut out = HashMap::new();
    // A name is shared by every slot bound to it: a repeated bind costs no copy of it.
    let (mut at, mut symbol, mut place) = (0usize, Rc::<str>::from(""), None::<u64>);
    let mut bind = |place: &mut Option<u64>, symbol: &Rc<str>, step: u64| {
        if let Some(address) = *place {
            if wanted(address) {
                out.insert(address, Rc::clone(symbol));
            }
            *place = Some(address.wrapping_add(step));
        }
    };
    let mut steps = 0usize;
    while let Some(&byte) = opcodes.get(at) {
        at += 1;
        steps += 1;
        if steps > MAX_BINDS {
            break;
        }
        let immediate = byte & 0x0f;
        match byte & 0xf0 {
            0x00 => break,
            0x10 | 0x30 | 0x50 => {}
            // The dylib ordinal, and the addend (a signed LEB128, its bytes read as unsigned).
            0x20 | 0x60 => {
                let Some(_) = uleb(opcodes, &mut at) else {
                    break;
                };
            }
            0x40 => {
                let Some(len) = opcodes.get(at..).and_then(|r| memchr::memchr(0, r)) else {
                    break;
                };
                symbol = Rc::from(String::from_utf8_lossy(&opcodes[at..at + len]));
                at += len + 1;
            }
            0x70 => {
                let Some(offset) = uleb(opcodes, &mut at) else {
                    break;
                };
                place = segments
                    .get(usize::from(immediate))
                    .map(|s| s.wrapping_add(offset));
            }
            0x80 => {
                let Some(add) = uleb(opcodes, &mut at) else {
                    break;
                };
                place = place.map(|p| p.wrapping_add(add));
            }
            0x90 => bind(&mut place, &symbol, 8),
            0xa0 => {
                let Some(add) = uleb(opcodes, &mut at) else {
                    break;
                };
                bind(&mut place, &symbol, add.wrapping_add(8));
            }
            0xb0 => bind(&mut place, &symbol, 8 + u64::from(immediate) * 8),
            0xc0 => {
                let (Some(count), Some(skip)) = (uleb(opcodes, &mut at), uleb(opcodes, &mut at))
                else {
                    break;
                };
                let count = count.min(MAX_BINDS as u64);
                for _ in 0..count {
                    bind(&mut place, &symbol, skip.wrapping_add(8));
                }
                steps = steps.saturating_add(count as usize);
            }
            // Threaded binds (arm64e) and unknown opcodes: not read.
            _ => break,
        }
    }
    out
}

/// Names the methods of the classes and categories listed at `classlist` and `catlist` (each a
/// section's address and size).
pub(crate) fn methods(
    memory: &Memory,
    classlist: Option<(u64, u64)>,
    catlist: Option<(u64, u64)>,
) -> Vec<Method> {
    let mut out = Vec::new();
    for slot in slots(memory, classlist) {
        if out.len() >= MAX_METHODS {
            break;
        }
        let Some(class) = memory.pointer(slot) else {
            continue;
        };
        let Some((name, instance)) = class_ro(memory, class) else {
            continue;
        };
        let source = NameOrigin::ObjcClasslist;
        method_list(memory, instance, '-', &name, source, &mut out);
        if let Some(meta) = memory.pointer(class)
            && let Some((_, class_methods)) = class_ro(memory, meta)
        {
            method_list(memory, class_methods, '+', &name, source, &mut out);
        }
    }
    for slot in slots(memory, catlist) {
        if out.len() >= MAX_METHODS {
            break;
        }
        let Some(category) = memory.pointer(slot) else {
            continue;
        };
        let Some(category_name) = memory.pointer(category).and_then(|a| memory.name(a)) else {
            continue;
        };
        // A category of another image's class reaches it through a bind to the class's symbol.
        let cls = category.wrapping_add(8);
        let Some(class_name) = memory
            .pointer(cls)
            .and_then(|c| class_ro(memory, c))
            .map(|(name, _)| name)
            .or_else(|| {
                let symbol = memory.bound_symbol(cls)?.strip_prefix("_OBJC_CLASS_$_")?;
                (!symbol.is_empty()).then(|| symbol.to_string())
            })
        else {
            continue;
        };
        let owner = format!("{class_name}({category_name})");
        let source = NameOrigin::ObjcCatlist;
        method_list(
            memory,
            memory.pointer(category.wrapping_add(16)),
            '-',
            &owner,
            source,
            &mut out,
        );
        method_list(
            memory,
            memory.pointer(category.wrapping_add(24)),
            '+',
            &owner,
            source,
            &mut out,
        );
    }
    // One name per implementation (selectors may share one): the first listed, so the answer
    // does not depend on the order of anything but the file's lists.
    let mut seen = std::collections::HashSet::new();
    out.retain(|m| seen.insert(m.imp));
    out.sort_by_key(|m| m.imp);
    out
}

/// The pointer slots of a list section, up to the first the file does not hold: a header may
/// state any size, but the walk ends with the list's bytes.
fn slots<'m>(memory: &'m Memory, section: Option<(u64, u64)>) -> impl Iterator<Item = u64> + 'm {
    let (address, size) = section.unwrap_or((0, 0));
    (0..size / 8)
        .map(move |i| address.wrapping_add(i * 8))
        .take_while(|&slot| memory.bytes(slot, 8).is_some())
}

/// A class's name and method list, from its `class_ro_t` (`data` at offset 32 of `class_t`).
fn class_ro(memory: &Memory, class: u64) -> Option<(String, Option<u64>)> {
    let ro = memory.pointer(class.checked_add(32)?)? & !CLASS_DATA_FLAGS;
    let name = memory.name(memory.pointer(ro.checked_add(24)?)?)?;
    Some((name, memory.pointer(ro.checked_add(32)?)))
}

/// Adds the methods of the `method_list_t` at `list`, named `{kind}[{owner} selector]`.
fn method_list(
    memory: &Memory,
    list: Option<u64>,
    kind: char,
    owner: &str,
    source: NameOrigin,
    out: &mut Vec<Method>,
) {
    let Some(list) = list else { return };
    let (Some(flags), Some(count)) = (
        memory.u32(list),
        list.checked_add(4).and_then(|a| memory.u32(a)),
    ) else {
        return;
    };
    let relative = flags & RELATIVE_METHODS != 0;
    let entsize = u64::from(flags & ENTSIZE_MASK);
    if entsize < if relative { 12 } else { 24 } {
        return;
    }
    for index in 0..u64::from(count) {
        if out.len() >= MAX_METHODS {
            return;
        }
        let Some(entry) = list.checked_add(8 + index * entsize) else {
            return;
        };
        // Entries past the bytes that hold them end the list (a count cannot outrun its file).
        if memory.bytes(entry, entsize as usize).is_none() {
            return;
        }
        let (selector, imp) = if relative {
            let offset = |at: u64| memory.u32(at).map(|v| i64::from(v as i32));
            let (Some(name_offset), Some(imp_offset)) = (offset(entry), offset(entry + 8)) else {
                return;
            };
            if imp_offset == 0 {
                continue;
            }
            let reference = entry.wrapping_add_signed(name_offset);
            let selector = if flags & DIRECT_SELECTORS != 0 {
                memory.name(reference)
            } else {
                memory.pointer(reference).and_then(|a| memory.name(a))
            };
            (selector, Some((entry + 8).wrapping_add_signed(imp_offset)))
        } else {
            (
                memory.pointer(entry).and_then(|a| memory.name(a)),
                memory.pointer(entry + 16),
            )
        };
        if let (Some(selector), Some(imp)) = (selector, imp) {
            out.push(Method {
                imp,
                name: super::symbols::escape_controls(&format!("{kind}[{owner} {selector}]")),
                source,
            });
        }
    }
}

/// The Objective-C methods of a 64-bit Mach-O, little-endian (x86-64, arm64).
pub(crate) fn file_methods<Mach: MachHeader<Endian = object::Endianness>>(
    file: &MachOFile<'_, Mach>,
) -> Vec<Method> {
    if !file.is_64() || !file.is_little_endian() {
        return Vec::new();
    }
    let list = |name: &str| {
        file.sections()
            .find(|s| {
                s.name().ok() == Some(name)
                    && s.segment_name()
                        .ok()
                        .flatten()
                        .is_some_and(|g| g.starts_with("__DATA"))
            })
            .map(|s| (s.address(), s.size()))
    };
    let (classlist, catlist) = (list("__objc_classlist"), list("__objc_catlist"));
    if classlist.is_none() && catlist.is_none() {
        return Vec::new();
    }
    let memory = loaded(file, catlist);
    methods(&memory, classlist, catlist)
}

/// The file's segments as loaded, with its pointers' encoding: chained fixups with their import
/// table, or plain values with the binds of the categories' class slots (of `catlist`) that the
/// bind opcodes state.
fn loaded<'a, Mach: MachHeader<Endian = object::Endianness>>(
    file: &MachOFile<'a, Mach>,
    catlist: Option<(u64, u64)>,
) -> Memory<'a> {
    let mut memory = Memory {
        regions: file
            .segments()
            .filter_map(|s| Some((s.address(), s.data().ok()?)))
            .filter(|(_, data)| !data.is_empty())
            .collect(),
        ..Memory::default()
    };
    let segments: Vec<u64> = file.segments().map(|s| s.address()).collect();
    let image_base = file
        .segments()
        .find(|s| s.name().ok().flatten() == Some("__TEXT"))
        .map_or(0, |s| s.address());
    let endian = file.endian();
    let linkedit = |offset: u32, size: u32| {
        let start = offset as usize;
        start
            .checked_add(size as usize)
            .and_then(|end| file.data().get(start..end))
            .unwrap_or_default()
    };
    let mut opcodes: &[u8] = &[];
    if let Ok(mut commands) = file.macho_load_commands() {
        while let Ok(Some(command)) = commands.next() {
            if let Ok(Some(info)) = command.dyld_info() {
                opcodes = linkedit(info.bind_off.get(endian), info.bind_size.get(endian));
                continue;
            }
            if command.cmd() != object::macho::LC_DYLD_CHAINED_FIXUPS {
                continue;
            }
            let Ok(data) = command.data::<object::macho::LinkeditDataCommand<object::Endianness>>()
            else {
                continue;
            };
            let payload = linkedit(data.dataoff.get(endian), data.datasize.get(endian));
            memory.pointers = Pointers::Chained {
                segments: chained_segments(payload, image_base),
                image_base,
                imports: chained_imports(payload),
            };
        }
    }
    if !opcodes.is_empty() {
        // Only a category's class slot is asked about: the binds of every other slot are
        // passed over, not kept.
        let wanted: std::collections::HashSet<u64> = slots(&memory, catlist)
            .filter_map(|slot| memory.pointer(slot))
            .map(|category| category.wrapping_add(8))
            .collect();
        memory.bound = bind_opcodes(opcodes, &segments, &|slot| wanted.contains(&slot));
    }
    memory
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A little-endian image under construction: one region at `BASE`.
    struct Builder {
        bytes: Vec<u8>,
    }

    const BASE: u64 = 0x1000;

    impl Builder {
        fn new(len: usize) -> Builder {
            Builder {
                bytes: vec![0; len],
            }
        }
        fn at(&mut self, address: u64) -> &mut [u8] {
            &mut self.bytes[(address - BASE) as usize..]
        }
        fn u32(&mut self, address: u64, v: u32) {
            self.at(address)[..4].copy_from_slice(&v.to_le_bytes());
        }
        fn u64(&mut self, address: u64, v: u64) {
            self.at(address)[..8].copy_from_slice(&v.to_le_bytes());
        }
        fn text(&mut self, address: u64, s: &str) {
            self.at(address)[..s.len()].copy_from_slice(s.as_bytes());
        }
        fn memory(&self) -> Memory<'_> {
            Memory {
                regions: vec![(BASE, &self.bytes)],
                ..Memory::default()
            }
        }
    }

    /// One class `Counter` with `-increment` (classic list) and `+make` (relative list, through
    /// a selector reference), listed at 0x1000.
    fn counter() -> Builder {
        let mut b = Builder::new(0x400);
        b.u64(0x1000, 0x1100); // classlist[0] → class
        b.u64(0x1100, 0x1180); // class.isa → metaclass
        b.u64(0x1100 + 32, 0x1200 | 1); // class.data → ro (with a Swift flag bit)
        b.u64(0x1180 + 32, 0x1240); // metaclass.data → its ro
        b.u64(0x1200 + 24, 0x1300); // ro.name
        b.u64(0x1200 + 32, 0x1280); // ro.baseMethods
        b.u64(0x1240 + 24, 0x1300);
        b.u64(0x1240 + 32, 0x12c0);
        b.text(0x1300, "Counter");
        b.text(0x1310, "increment");
        b.text(0x1320, "make");
        // Classic list: entsize 24 (flag bits 0b11 set), one entry {name, types, imp}.
        b.u32(0x1280, 24 | 3);
        b.u32(0x1284, 1);
        b.u64(0x1288, 0x1310);
        b.u64(0x1288 + 16, 0x4560);
        // Relative list: entsize 12, one entry whose name reaches a selref at 0x1330.
        b.u64(0x1330, 0x1320);
        b.u32(0x12c0, RELATIVE_METHODS | 12);
        b.u32(0x12c4, 1);
        let entry = 0x12c8u64;
        b.u32(entry, (0x1330 - entry) as u32);
        b.u32(entry + 8, (0x458c - (entry + 8)) as u32);
        b
    }

    #[test]
    fn classic_and_relative_lists_name_instance_and_class_methods() {
        let b = counter();
        let found = methods(&b.memory(), Some((0x1000, 8)), None);
        let names: Vec<(u64, &str)> = found.iter().map(|m| (m.imp, m.name.as_str())).collect();
        assert_eq!(
            names,
            [
                (0x4560, "-[Counter increment]"),
                (0x458c, "+[Counter make]")
            ]
        );
        assert!(found.iter().all(|m| m.source == NameOrigin::ObjcClasslist));
    }

    #[test]
    fn truncated_looping_and_huge_lists_answer_cleanly() {
        let mut b = counter();
        // A class whose isa and data point back at the classlist and itself, a method list
        // claiming four billion entries, and a name without its terminating NUL.
        b.u64(0x1008, 0x1000);
        b.u64(0x1000 + 32, 0x1000);
        b.u32(0x1284, u32::MAX);
        let mut m = b.memory();
        let found = methods(&m, Some((0x1000, 0x10)), Some((0x1000, 0x10)));
        // The real class still names its two methods; the garbage entries that follow the
        // huge list's first one end at the image's end (24 bytes each), never past it.
        assert_eq!(
            found
                .iter()
                .filter(|m| m.name == "-[Counter increment]")
                .count(),
            1
        );
        assert!(found.iter().any(|m| m.name == "+[Counter make]"));
        assert!(found.len() <= 2 + (0x1400 - 0x1288) / 24, "{found:?}");
        // Every cut of the image is harmless, with the lists' sizes as claimed.
        for cut in (0..b.bytes.len()).step_by(7) {
            m.regions = vec![(BASE, &b.bytes[..cut])];
            let _ = methods(&m, Some((0x1000, 0x1000)), Some((0x1000, 0x1000)));
        }
        let mut unterminated = Builder::new(0x20);
        unterminated.bytes.fill(b'A');
        assert_eq!(unterminated.memory().name(0x1000), None);
    }

    /// A section header may state any size: a classlist claiming 2^60 bytes is read for the
    /// 0x400 bytes the file holds from its start, so the walk costs what the file is. (The fuzz
    /// input that found this spent minutes on 2^57 unreadable slots.)
    #[test]
    fn a_list_is_read_only_as_far_as_the_file_holds_it_regression_16() {
        let b = counter();
        let memory = b.memory();
        let claimed = Some((0x1000, 1 << 60));
        assert_eq!(slots(&memory, claimed).take(1000).count(), 0x400 / 8);
        assert_eq!(slots(&memory, Some((0x1200, 1 << 60))).count(), 0x200 / 8);
        assert_eq!(slots(&memory, Some((0x1400, 1 << 60))).count(), 0);
        assert_eq!(slots(&memory, Some((0x10, 1 << 60))).count(), 0);
        assert_eq!(slots(&memory, Some((0x1000, 16))).count(), 2);
        let names: Vec<String> = methods(&memory, claimed, claimed)
            .into_iter()
            .map(|m| m.name)
            .collect();
        assert_eq!(names, ["-[Counter increment]", "+[Counter make]"]);
    }

    #[test]
    fn chained_64_pointers_decode_rebases_and_binds() {
        // Rebase to 0x4560, next slot 2 strides on (8 bytes), top byte 0x80.
        let raw = 0x4560 | (0x80 << 36) | (2 << 51);
        assert_eq!(
            decode_chained_64(DYLD_CHAINED_PTR_64, raw, 0x1_0000_0000),
            Some(Fixup::Rebase(0x8000_0000_0000_4560))
        );
        // The offset format adds the image's start.
        assert_eq!(
            decode_chained_64(
                DYLD_CHAINED_PTR_64_OFFSET,
                0x4560 | (1 << 51),
                0x1_0000_0000
            ),
            Some(Fixup::Rebase(0x1_0000_4560))
        );
        // A bind (ordinal 3, addend 5) is no local pointer.
        let bind = (1 << 63) | (1 << 51) | (5 << 24) | 3;
        assert_eq!(
            decode_chained_64(DYLD_CHAINED_PTR_64_OFFSET, bind, 0),
            Some(Fixup::Bind(3))
        );
        // arm64e formats are not read.
        assert_eq!(decode_chained_64(1, raw, 0), None);
    }

    /// An `LC_DYLD_CHAINED_FIXUPS` payload for one segment at `segment_offset` of one page.
    fn payload(format: u16, segment_offset: u64) -> Vec<u8> {
        let mut p = vec![0u8; 28];
        p[4..8].copy_from_slice(&28u32.to_le_bytes()); // starts_offset
        p.extend(1u32.to_le_bytes()); // seg_count
        p.extend(8u32.to_le_bytes()); // seg_info_offset[0], from starts_in_image
        p.extend(24u32.to_le_bytes()); // size
        p.extend(0x1000u16.to_le_bytes()); // page_size
        p.extend(format.to_le_bytes());
        p.extend(segment_offset.to_le_bytes());
        p.extend(0u32.to_le_bytes()); // max_valid_pointer
        p.extend(1u16.to_le_bytes()); // page_count
        p.extend(0u16.to_le_bytes()); // page_start[0]
        p
    }

    /// `memory` read as a chained image whose fixups `payload` describes.
    fn chained<'a>(memory: Memory<'a>, payload: &[u8], imports: &[&str]) -> Memory<'a> {
        Memory {
            pointers: Pointers::Chained {
                segments: chained_segments(payload, 0),
                image_base: 0,
                imports: imports.iter().map(|s| s.to_string()).collect(),
            },
            ..memory
        }
    }

    #[test]
    fn chained_image_names_methods_through_its_rebases() {
        // The Counter image with every pointer slot rewritten as a DYLD_CHAINED_PTR_64_OFFSET
        // rebase (image base 0), chained in address order. The relative list's imp offset
        // (0x12d0) reads as an in-range value but is no pointer.
        let plain = counter();
        let slots: Vec<u64> = (0..0x400u64)
            .step_by(8)
            .map(|o| BASE + o)
            .filter(|&a| (BASE..0x5000).contains(&plain.memory().u64(a).unwrap()) && a != 0x12d0)
            .collect();
        let mut image = Builder {
            bytes: plain.bytes.clone(),
        };
        for (i, &slot) in slots.iter().enumerate() {
            let target = plain.memory().u64(slot).unwrap();
            let next = slots.get(i + 1).map_or(0, |n| (n - slot) / 4);
            image.u64(slot, target | (next << 51));
        }
        let fixups = payload(DYLD_CHAINED_PTR_64_OFFSET, BASE);
        assert_eq!(
            chained_segments(&fixups, 0),
            [ChainedSegment {
                start: BASE,
                end: BASE + 0x1000,
                format: DYLD_CHAINED_PTR_64_OFFSET
            }]
        );
        let memory = chained(image.memory(), &fixups, &[]);
        assert_eq!(memory.pointer(0x1000), Some(0x1100));
        assert_eq!(memory.pointer(0x1120), Some(0x1201));
        let found = methods(&memory, Some((0x1000, 8)), None);
        let names: Vec<&str> = found.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["-[Counter increment]", "+[Counter make]"]);
        // Read as plain values the next bits make every pointer miss; an arm64e format, or a
        // segment that does not cover the slots, reads no pointer at all.
        assert!(methods(&image.memory(), Some((0x1000, 8)), None).is_empty());
        let arm64e = chained(image.memory(), &payload(1, BASE), &[]);
        assert_eq!(arm64e.pointer(0x1000), None);
        let elsewhere = chained(image.memory(), &payload(2, 0x8000), &[]);
        assert_eq!(elsewhere.pointer(0x1000), None);
        for cut in 0..fixups.len() {
            let _ = chained_segments(&fixups[..cut], 0);
        }
        // A segment count of four billion reads only the entries the payload holds.
        let mut huge = fixups.clone();
        huge[28..32].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(chained_segments(&huge, 0).len() <= huge.len() / 4);
    }

    #[test]
    fn categories_name_their_class_or_the_class_symbol_they_bind() {
        let mut b = counter();
        b.u64(0x1380, 0x13c0); // catlist[0] → category
        b.u64(0x13c0, 0x13f0); // name
        b.u64(0x13c8, 0x1100); // cls (Counter)
        b.u64(0x13d0, 0x1280); // instanceMethods: reuses -increment's list
        b.text(0x13f0, "Extra");
        b.u64(0x1388, 0x13a0); // catlist[1] → a category whose cls is a bind (null here)
        b.u64(0x13a0, 0x13f0);
        b.u64(0x13b8, 0x12c0); // its classMethods: +make's list
        let mut m = b.memory();
        let found = methods(&m, None, Some((0x1380, 16)));
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].name, "-[Counter(Extra) increment]");
        assert_eq!(found[0].source, NameOrigin::ObjcCatlist);
        // Bound to another image's class symbol, the second category is that class's.
        m.bound.insert(0x13a8, "_OBJC_CLASS_$_NSObject".into());
        let names = |m: &Memory| -> Vec<String> {
            let found = methods(m, None, Some((0x1380, 16)));
            found.into_iter().map(|m| m.name).collect()
        };
        let expected = ["-[Counter(Extra) increment]", "+[NSObject(Extra) make]"];
        assert_eq!(names(&m), expected);
        // In a chained image the bind's ordinal picks the symbol from the import table (the
        // plain values below 2^36 are DYLD_CHAINED_PTR_64 rebases as they stand).
        b.u64(0x13a8, (1 << 63) | 1);
        let imports = ["_x", "_OBJC_CLASS_$_NSObject"];
        let m = chained(b.memory(), &payload(DYLD_CHAINED_PTR_64, BASE), &imports);
        assert_eq!(m.bound_symbol(0x13a8), Some("_OBJC_CLASS_$_NSObject"));
        assert_eq!(names(&m), expected);
    }

    #[test]
    fn bind_opcodes_give_the_symbol_of_each_wanted_slot() {
        let segments = [0, 0x1000, 0x3000];
        let mut ops = vec![0x11, 0x40];
        ops.extend(b"_OBJC_CLASS_$_NSObject\0");
        // type pointer; segment 2 + 0x48; bind; bind twice skipping 8; done.
        ops.extend([0x51, 0x72, 0x48, 0x90, 0xc0, 0x02, 0x08, 0x00]);
        let all = bind_opcodes(&ops, &segments, &|_| true);
        let mut slots: Vec<u64> = all.keys().copied().collect();
        slots.sort();
        assert_eq!(slots, [0x3048, 0x3050, 0x3060]);
        assert_eq!(&*all[&0x3050], "_OBJC_CLASS_$_NSObject");
        assert_eq!(bind_opcodes(&ops, &segments, &|s| s == 0x3060).len(), 1);
        // A repeat claiming 2^56 binds, a segment index past the table, and every cut: bounded.
        let huge = [
            0x72, 0x00, 0xc0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0x00,
        ];
        assert_eq!(bind_opcodes(&huge, &segments, &|_| false).len(), 0);
        assert!(bind_opcodes(&[0x7f, 0x00, 0x90], &segments, &|_| true).is_empty());
        for cut in 0..ops.len() {
            let _ = bind_opcodes(&ops[..cut], &segments, &|_| true);
        }
    }

    #[test]
    fn a_chained_dylib_binds_each_got_slot_to_its_indirect_symbol() {
        // ld64's output for macOS 12 (chained fixups, DYLD_CHAINED_PTR_64_OFFSET): every
        // `__got` slot is a bind whose import is the symbol llvm-objdump-14 lists for it.
        use crate::providers::native::test_support::{fixtures, tool_output};
        let path = fixtures().join("delocate/delocate/tests/data/liba_12.dylib");
        let data = std::fs::read(&path).unwrap();
        let file = object::read::macho::MachOFile64::<object::Endianness>::parse(&*data).unwrap();
        let memory = loaded(&file, None);
        let Pointers::Chained { segments, .. } = &memory.pointers else {
            panic!("liba_12.dylib has chained fixups");
        };
        // One segment of fixups, __DATA_CONST at 0x4000 (one page).
        assert_eq!(
            segments,
            &[ChainedSegment {
                start: 0x4000,
                end: 0x8000,
                format: DYLD_CHAINED_PTR_64_OFFSET
            }]
        );
        let listing = tool_output(
            "llvm-objdump-14",
            &["--macho", "--indirect-symbols", path.to_str().unwrap()],
        )
        .expect("llvm-objdump-14 is installed by .ci/run");
        let got: Vec<(u64, String)> = listing
            .split("Indirect symbols for (__DATA_CONST,__got)")
            .nth(1)
            .unwrap()
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                let address = u64::from_str_radix(f.first()?.strip_prefix("0x")?, 16).ok()?;
                Some((address, f.get(2)?.to_string()))
            })
            .collect();
        assert_eq!(got.len(), 23);
        for (slot, symbol) in &got {
            assert!(
                matches!(memory.fixup(*slot), Some(Fixup::Bind(_))),
                "{slot:#x}"
            );
            assert_eq!(
                memory.bound_symbol(*slot),
                Some(symbol.as_str()),
                "{slot:#x}"
            );
        }
    }

    #[test]
    fn a_real_program_with_corrupted_metadata_answers_cleanly() {
        // terminal-notifier (ld64, bind opcodes): its 17 methods, then the same file with words
        // of its __DATA segment overwritten by pointers back into the lists, huge counts and
        // all-ones, a few hundred times; each walk ends and names at most what fits.
        use object::read::macho::MachOFile64;
        let path = crate::providers::native::test_support::fixtures().join(
            "node-notifier/package/vendor/mac.noindex/terminal-notifier.app/Contents/MacOS/terminal-notifier",
        );
        let data = std::fs::read(&path).unwrap();
        let file = MachOFile64::<object::Endianness>::parse(&*data).unwrap();
        assert_eq!(file_methods(&file).len(), 17);
        let (start, len) = file
            .segments()
            .find(|s| s.name().ok().flatten() == Some("__DATA"))
            .map(|s| s.file_range())
            .unwrap();
        let words = [0u64, u64::MAX, 0x1_0000_8000, 0xffff_ffff, 0x1_0000_0000];
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for round in 0..300 {
            let mut bytes = data.clone();
            for _ in 0..16 {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let at = ((start + state % len) & !7) as usize;
                let word = words[(state >> 32) as usize % words.len()];
                bytes[at..at + 8].copy_from_slice(&word.to_le_bytes());
            }
            if let Ok(file) = MachOFile64::<object::Endianness>::parse(&*bytes) {
                let found = file_methods(&file);
                assert!(found.len() <= bytes.len() / 12, "round {round}");
            }
        }
    }

    #[test]
    fn chained_import_table_names_each_ordinal() {
        // Header (28 bytes), then DYLD_CHAINED_IMPORT entries at 28, symbols at 36.
        let mut p = vec![0u8; 28];
        p[8..12].copy_from_slice(&28u32.to_le_bytes());
        p[12..16].copy_from_slice(&36u32.to_le_bytes());
        p[16..20].copy_from_slice(&2u32.to_le_bytes());
        p[20..24].copy_from_slice(&1u32.to_le_bytes());
        p.extend((1u32 | (1 << 9)).to_le_bytes()); // ordinal 1, name at 1
        p.extend((1u32 | (7 << 9)).to_le_bytes()); // name at 7
        p.extend(b"\0_objc\0_OBJC_CLASS_$_NSString\0");
        assert_eq!(chained_imports(&p), ["_objc", "_OBJC_CLASS_$_NSString"]);
        // A count past the table's bytes reads only what is there; a cut is harmless.
        p[16..20].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(chained_imports(&p).len() <= (p.len() - 28) / 4);
        for cut in 0..p.len() {
            let _ = chained_imports(&p[..cut]);
        }
    }
}
