//! Names for the data an instruction refers to: the import behind a pointer slot, the string
//! rea's string search reports at the address, or the data symbol whose extent holds it
//! (`OPS`, `OPS+0x8`). One resolver for assembly operands, `xrefs` and dossiers; the address
//! itself comes from the decoder ([`Decoded::memory`]), which the cross-reference index also
//! reads, so both agree on what an instruction references.
//!
//! Spellings: a string is quoted as JSON (`"Enter password:"`, `L"…"` for UTF-16, `@"…"` for a
//! Mach-O CFString), cut at 80 characters with `…` after the closing quote; a slot is
//! `name@GOT` (ELF GOT, Mach-O pointer slot) or `name@IAT` (PE import address table).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::address::hex;
use super::disasm::{Decoded, MemoryUse};
use super::image::Image;
use crate::vocabulary::ImportKind;

/// Characters of a string quoted in a name.
const QUOTED_CHARS: usize = 80;

/// The data an instruction's operand computes or accesses, named.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DataRef {
    /// The address.
    #[serde(with = "hex")]
    #[schemars(with = "String")]
    pub address: u64,
    /// A quoted string, `symbol` or `symbol+0x8`, or `import@GOT`; the address itself when
    /// only the analyst names it.
    pub name: String,
    /// The analyst's name of the data at `address`, beside `name` (an annotation). Left out of
    /// the schema (tools/list budget), as in the other views.
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub analyst: Option<crate::ids::AnalystName>,
}

/// What the resolver found at an address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DataName {
    /// A pointer slot bound to an import: the slot's spelling (`stderr@GOT`).
    Slot(String),
    /// A string, already quoted.
    Text(String),
    /// A data symbol whose extent holds the address.
    Symbol {
        /// Start of the symbol.
        start: u64,
        /// Its displayed name.
        name: String,
        /// Offset of the address into it.
        offset: u64,
    },
}

impl DataName {
    fn is_start(&self) -> bool {
        matches!(self, DataName::Symbol { offset: 0, .. })
    }

    /// The name as operands show it.
    pub(crate) fn display(&self) -> String {
        match self {
            DataName::Slot(s) | DataName::Text(s) => s.clone(),
            DataName::Symbol {
                name, offset: 0, ..
            } => name.clone(),
            DataName::Symbol { name, offset, .. } => format!("{name}+{offset:#x}"),
        }
    }
}

/// The resolver for one image, built once per operation (it reads the symbol table).
pub(crate) struct DataNames<'a> {
    image: &'a Image,
    /// Data symbols as `(address, size, displayed name)`, sorted by address, one per address.
    symbols: Vec<(u64, u64, String)>,
    /// Whether sizes are stated (ELF): an unsized symbol then names only its own address,
    /// since its extent is unknown. Mach-O and PE state no sizes, so a symbol reaches to the
    /// next one.
    sized: bool,
    /// Whether immediates are addresses: the image is linked at a fixed address (a non-PIE
    /// ELF or Mach-O executable, or a PE image, whose base relocations keep absolute operands
    /// pointing at their data).
    immediates: bool,
}

impl<'a> DataNames<'a> {
    pub(crate) fn new(image: &'a Image) -> DataNames<'a> {
        let file = object::File::parse(&image.bytes[..]).ok();
        DataNames::of_file(image, file.as_ref())
    }

    /// The resolver for `image` from its file as the caller already parsed it (`None` when it
    /// does not parse: no data symbols).
    pub(crate) fn of_file(image: &'a Image, file: Option<&object::File<'_>>) -> DataNames<'a> {
        let symbols = file.map(|f| data_symbols(f, image)).unwrap_or_default();
        DataNames {
            image,
            symbols,
            sized: image.doc.format == "elf",
            immediates: image.fixed_address,
        }
    }

    /// The address an instruction refers to as data and what is there, when it refers to
    /// data this resolver can name.
    pub(crate) fn of(&self, insn: &Decoded) -> Option<(u64, DataName)> {
        if insn.invalid {
            return None;
        }
        let (at, usage) = insn.memory?;
        if usage == MemoryUse::Immediate {
            // A small immediate is a constant; a large one is an address only in an image
            // linked at a fixed address, and only where data lives.
            let in_data = self.image.section_at(at).is_some_and(|s| !s.executable);
            if !(self.immediates && at >= 0x1000 && in_data) {
                return None;
            }
        }
        self.resolve(at).map(|name| (at, name))
    }

    /// The operand's reference as an [`Instruction`](super::Instruction) shows it.
    pub(crate) fn operand(&self, insn: &Decoded) -> Option<DataRef> {
        self.of(insn).map(|(address, name)| DataRef {
            address,
            name: name.display(),
            analyst: None,
        })
    }

    /// What is at `address`: an import's pointer slot, else a string, else a data symbol;
    /// nothing in code or outside the image.
    pub(crate) fn resolve(&self, address: u64) -> Option<DataName> {
        let image = self.image;
        // A slot's bytes are a pointer, whatever characters they happen to spell. A data
        // symbol defined right there is the object itself, copied into the executable by an
        // `R_*_COPY` relocation (`stderr` of a non-PIC executable), not a pointer to it.
        let own = self.symbol(address).filter(|s| s.is_start());
        if let Some(import) = image.import_at(address)
            && own.is_none()
        {
            let table = match import.kind {
                ImportKind::Got | ImportKind::Pointer => "GOT",
                ImportKind::Iat => "IAT",
                ImportKind::Plt | ImportKind::Stub | ImportKind::Thunk => return None,
            };
            return Some(DataName::Slot(format!("{}@{table}", import.name)));
        }
        let section = image.section_at(address)?;
        if section.executable {
            return None;
        }
        if section.name.ends_with("__cfstring")
            && let Some((text, "cfstring")) = image.string_at(address)
        {
            return Some(DataName::Text(format!("@{}", quote(&text))));
        }
        if let Some((text, wide)) = image.string_run_at(address, QUOTED_CHARS + 1) {
            let quoted = quote(&text);
            return Some(DataName::Text(if wide {
                format!("L{quoted}")
            } else {
                quoted
            }));
        }
        if holds_only_c_strings(&section.name) {
            // Every byte of such a section belongs to a NUL-terminated string, so what is there
            // is the (short, even empty) string at the address: `getpass("")` reads `""`, not
            // the nearest earlier symbol plus half a megabyte.
            let bytes = image.bytes_from(address, 4096)?;
            let end = memchr::memchr(0, bytes)?;
            let text = std::str::from_utf8(&bytes[..end]).ok()?;
            return Some(DataName::Text(quote(text)));
        }
        self.symbol(address)
    }

    /// The data symbol whose extent holds `at` and the offset into it (`read_bytes`, data
    /// xrefs): the same extent rule as the names operands get.
    pub(crate) fn symbol_holding(&self, at: u64) -> Option<(String, u64)> {
        match self.symbol(at)? {
            DataName::Symbol { name, offset, .. } => Some((name, offset)),
            _ => None,
        }
    }

    /// The data symbol whose extent holds `at`.
    fn symbol(&self, at: u64) -> Option<DataName> {
        let symbols = &self.symbols;
        let i = symbols.partition_point(|s| s.0 <= at);
        let (address, size, name) = symbols.get(i.checked_sub(1)?)?;
        let end = if *size > 0 {
            address.saturating_add(*size)
        } else if self.sized {
            address.saturating_add(1)
        } else {
            // Reaching to the next symbol, but never out of the symbol's own section: what
            // lies past it is not part of the symbol, whatever the next symbol is.
            let section_end = self
                .image
                .section_at(*address)
                .map_or(address.saturating_add(1), |s| {
                    s.address.saturating_add(s.size)
                });
            symbols
                .get(i)
                .map_or(address.saturating_add(4096), |next| next.0)
                .min(section_end)
        };
        (at < end).then(|| DataName::Symbol {
            start: *address,
            name: name.clone(),
            offset: at - address,
        })
    }
}

/// Named symbols of data sections as `(address, size, displayed name)`, sorted by address, one
/// per address; a size of zero means the format states none.
fn data_symbols(file: &object::File<'_>, image: &Image) -> Vec<(u64, u64, String)> {
    use object::{Object, ObjectSymbol, SymbolKind};
    let macho = image.doc.format == "macho";
    let out: Vec<(u64, u64, String)> = file
        .symbols()
        .chain(file.dynamic_symbols())
        .take(super::relocations::MAX_RELOCATIONS)
        .filter(|s| matches!(s.kind(), SymbolKind::Data | SymbolKind::Unknown) && s.address() != 0)
        .filter(|s| {
            image
                .section_at(s.address())
                .is_some_and(|section| !section.executable)
        })
        .filter_map(|s| {
            let name = s
                .name()
                .ok()
                .filter(|n| !n.is_empty() && !n.starts_with('$'))?;
            Some((
                s.address(),
                s.size(),
                super::symbols::display_name(name, macho),
            ))
        })
        .collect();
    one_per_address(out)
}

/// Of several symbols at one start (aliases), the first sorted names it, unless one states a
/// size: then the last sized one (the largest) does. Chosen once, so a lookup is one binary
/// search however many aliases a file gives one address.
fn one_per_address(mut symbols: Vec<(u64, u64, String)>) -> Vec<(u64, u64, String)> {
    symbols.sort();
    let mut chosen: Vec<(u64, u64, String)> = Vec::with_capacity(symbols.len());
    for symbol in symbols {
        match chosen.last_mut() {
            Some(last) if last.0 == symbol.0 => {
                if symbol.1 > 0 {
                    *last = symbol;
                }
            }
            _ => chosen.push(symbol),
        }
    }
    chosen
}

/// Mach-O sections that hold nothing but NUL-terminated strings (`S_CSTRING_LITERALS` and the
/// Objective-C name sections).
fn holds_only_c_strings(section: &str) -> bool {
    matches!(
        section.rsplit(',').next(),
        Some(
            "__cstring"
                | "__objc_methname"
                | "__objc_classname"
                | "__objc_methtype"
                | "__oslogstring"
        )
    )
}

/// JSON-quotes a string, marking with `…` after the quote that it goes on past 80 characters.
fn quote(text: &str) -> String {
    let cut = text.chars().count() > QUOTED_CHARS;
    let shown: String = text.chars().take(QUOTED_CHARS).collect();
    let quoted = serde_json::to_string(&shown).unwrap_or_default();
    if cut { format!("{quoted}…") } else { quoted }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::native::StringQuery;
    use crate::providers::native::test_support::document;

    /// Every string match of `ls` names itself, from its first character to the end of its
    /// run, exactly as the string search reports it; the NUL after a string names no string.
    #[test]
    fn strings_name_what_the_string_search_reports() {
        let image = Image::load(&document("/usr/bin/ls", None)).unwrap();
        let names = DataNames::new(&image);
        let mut query = StringQuery::literal("");
        query.limit = 1000;
        query.include_code = false;
        let found = image.strings(&query).unwrap();
        assert!(found.matches.len() > 500);
        for m in &found.matches {
            let expected = quote(&m.text);
            if m.length <= QUOTED_CHARS {
                assert_eq!(names.resolve(m.address), Some(DataName::Text(expected)));
            }
            // Inside the run: its tail.
            let tail: String = m.text.chars().skip(1).collect();
            if m.text.is_ascii() && m.length <= QUOTED_CHARS {
                assert_eq!(
                    names.resolve(m.address + 1),
                    Some(DataName::Text(quote(&tail)))
                );
            }
            if image.bytes_at(m.string_end, 1) == Some(&[0]) {
                assert!(
                    !matches!(names.resolve(m.string_end), Some(DataName::Text(_))),
                    "{:#x}",
                    m.string_end
                );
            }
        }
    }

    #[test]
    fn aliases_leave_one_name_per_address() {
        let s = |address: u64, size: u64, name: &str| (address, size, name.to_string());
        let symbols = vec![
            s(0x30, 0, "zeta"),
            s(0x10, 0, "b"),
            s(0x10, 0, "a"),
            s(0x20, 8, "y"),
            s(0x20, 0, "x"),
            s(0x20, 16, "w"),
            s(0x20, 16, "v"),
        ];
        assert_eq!(
            one_per_address(symbols),
            [s(0x10, 0, "a"), s(0x20, 16, "w"), s(0x30, 0, "zeta")]
        );
        // Thousands of aliases of one address are one entry.
        let many = (0..5000)
            .map(|i| s(0x40, 0, &format!("alias{i:04}")))
            .collect();
        assert_eq!(one_per_address(many), [s(0x40, 0, "alias0000")]);
    }

    #[test]
    fn names_are_spelled_as_documented() {
        let symbol = |offset| DataName::Symbol {
            start: 0x4000,
            name: "OPS".into(),
            offset,
        };
        assert_eq!(symbol(0).display(), "OPS");
        assert_eq!(symbol(8).display(), "OPS+0x8");
        assert_eq!(quote("a\"b\n"), r#""a\"b\n""#);
        let long = "x".repeat(81);
        assert_eq!(quote(&long), format!("\"{}\"…", "x".repeat(80)));
        assert_eq!(quote(&long[..80]), format!("\"{}\"", "x".repeat(80)));
    }
}
