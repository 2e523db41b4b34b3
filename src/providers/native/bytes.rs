//! Raw bytes of a document at an address: a bounded read with its section, symbol, procedure and
//! typed values, and a search for a byte pattern with wildcards, counted exactly.
//!
//! Both read the mapped document through its section table, so an address means what it means at
//! run time and a zero-fill section (`.bss`, `__DATA,__bss`) is refused rather than read as
//! whatever file bytes happen to follow.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::address::{format_address, hex, hex_opt};
use super::datarefs::DataNames;
use super::image::Image;
use super::types::SectionInfo;
use crate::fsroot::{Deadline, DeadlineExceeded};

/// Most bytes one `read_bytes` returns.
pub const MAX_READ_BYTES: u64 = 4096;

/// Most bytes a search pattern may have.
pub const MAX_PATTERN_BYTES: usize = 256;

/// Most hits one page of a search holds.
pub const MAX_HITS_PAGE: usize = 1000;

/// How many bytes are scanned between two looks at the deadline.
const DEADLINE_STRIDE: usize = 1 << 20;

/// Why a read or search of bytes was refused.
#[derive(Debug, thiserror::Error)]
pub enum BytesError {
    /// The address is in no section of the document.
    #[error("{} is not inside any section of {document}; list the sections with procedure_info or read an address from xrefs/search_strings", format_address(*address))]
    Unmapped {
        /// The document.
        document: String,
        /// The address asked for.
        address: u64,
    },
    /// The address is in a section that has no bytes in the file.
    #[error(
        "{} lies in {section}, which has no bytes in the file (zero-fill data such as .bss: it holds zeros until the program writes it)",
        format_address(*address)
    )]
    ZeroFill {
        /// The section.
        section: String,
        /// The address asked for.
        address: u64,
    },
    /// The length is out of bounds.
    #[error("length must be 1 to {MAX_READ_BYTES} bytes, not {0}")]
    Length(u64),
    /// The search pattern is not valid.
    #[error("invalid byte pattern {pattern:?}: {reason}")]
    Pattern {
        /// The pattern as given.
        pattern: String,
        /// Why it was rejected.
        reason: String,
    },
    /// No section of that name holds file bytes.
    #[error("no section named {name:?} with bytes in the file; sections: {known}")]
    NoSection {
        /// The name asked for.
        name: String,
        /// The sections that could be searched.
        known: String,
    },
    /// The search ran past its deadline.
    #[error(transparent)]
    Deadline(#[from] DeadlineExceeded),
}

/// Values of the first bytes read as integers; absent where too few bytes were read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TypedValues {
    /// The first byte.
    pub u8: u8,
    /// Two bytes, little endian.
    pub u16_le: Option<u16>,
    /// Two bytes, big endian.
    pub u16_be: Option<u16>,
    /// Four bytes, little endian.
    pub u32_le: Option<u32>,
    /// Four bytes, big endian.
    pub u32_be: Option<u32>,
    /// Eight bytes, little endian (hex: JSON numbers lose precision past 2^53).
    #[serde(with = "hex_opt")]
    #[schemars(with = "Option<String>")]
    pub u64_le: Option<u64>,
    /// Eight bytes, big endian (hex).
    #[serde(with = "hex_opt")]
    #[schemars(with = "Option<String>")]
    pub u64_be: Option<u64>,
    /// A pointer of the architecture's width and byte order (hex).
    #[serde(with = "hex_opt")]
    #[schemars(with = "Option<String>")]
    pub pointer: Option<u64>,
}

/// Bytes of a document at an address.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ByteRead {
    /// The first address read.
    #[serde(with = "hex")]
    #[schemars(with = "String")]
    pub address: u64,
    /// Bytes read: the length asked for, or fewer when the section's file bytes end first.
    pub length: u64,
    /// The section holding the address.
    pub section: String,
    /// Offset of the first byte in the document.
    pub file_offset: u64,
    /// The data symbol whose extent holds the address, when one does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symbol: Option<String>,
    /// Offset of the address from the start of `symbol`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symbol_offset: Option<u64>,
    /// Start of the procedure containing the address, when one does.
    #[serde(default, with = "hex_opt", skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub procedure: Option<u64>,
    /// That procedure's name, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub procedure_name: Option<String>,
    /// The bytes, lowercase hex without spaces.
    pub hex: String,
    /// One character per byte: printable ASCII as itself, every other byte as `.`.
    pub printable: String,
    /// The first bytes as integers and as a pointer.
    pub values: TypedValues,
}

/// One place a byte pattern matches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ByteHit {
    /// Address of the first matching byte.
    #[serde(with = "hex")]
    #[schemars(with = "String")]
    pub address: u64,
    /// The section holding it.
    pub section: String,
    /// Start of the procedure containing it, when one does.
    #[serde(default, with = "hex_opt", skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub procedure: Option<u64>,
    /// That procedure's name, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub procedure_name: Option<String>,
}

/// Every match of a pattern, counted, with one page of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ByteSearch {
    /// The page's hits, by address.
    pub hits: Vec<ByteHit>,
    /// Matches in every section searched (overlapping matches count each).
    pub total: u64,
}

/// A byte pattern: each byte either a value or a wildcard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BytePattern(Vec<Option<u8>>);

impl BytePattern {
    /// Reads hex byte pairs (`48 8b ?? 05`, spaces optional) with `??` for any byte.
    pub fn parse(text: &str) -> Result<BytePattern, BytesError> {
        let bad = |reason: &str| BytesError::Pattern {
            pattern: text.to_owned(),
            reason: reason.to_owned(),
        };
        let digits: Vec<u8> = text.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
        if !digits.len().is_multiple_of(2) {
            return Err(bad("an odd number of hex digits; write each byte as two"));
        }
        let mut bytes = Vec::with_capacity(digits.len() / 2);
        for pair in digits.chunks(2) {
            if pair == b"??" {
                bytes.push(None);
                continue;
            }
            let pair = std::str::from_utf8(pair).map_err(|_| bad("not hex"))?;
            let value =
                u8::from_str_radix(pair, 16).map_err(|_| bad("bytes are two hex digits or ??"))?;
            bytes.push(Some(value));
        }
        if bytes.is_empty() {
            return Err(bad("empty"));
        }
        if bytes.len() > MAX_PATTERN_BYTES {
            return Err(bad(&format!("longer than {MAX_PATTERN_BYTES} bytes")));
        }
        if bytes.iter().all(Option::is_none) {
            return Err(bad("only wildcards; give at least one byte"));
        }
        Ok(BytePattern(bytes))
    }

    /// Pattern bytes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the pattern is empty (never, once parsed).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn matches(&self, window: &[u8]) -> bool {
        self.0
            .iter()
            .zip(window)
            .all(|(p, b)| p.is_none_or(|p| p == *b))
    }

    /// Start offsets of every match in `haystack`, overlapping ones included, in order.
    fn find_all(
        &self,
        haystack: &[u8],
        deadline: &Deadline,
        mut found: impl FnMut(usize),
    ) -> Result<(), DeadlineExceeded> {
        let n = self.0.len();
        if haystack.len() < n {
            return Ok(());
        }
        // The first concrete byte anchors a memchr scan; the rest is checked at each candidate.
        let (anchor_at, anchor) = self
            .0
            .iter()
            .enumerate()
            .find_map(|(i, b)| b.map(|b| (i, b)))
            .expect("a parsed pattern has a concrete byte");
        let last_start = haystack.len() - n;
        let scan = &haystack[anchor_at..=last_start + anchor_at];
        let mut checked = 0usize;
        for hit in memchr::memchr_iter(anchor, scan) {
            if hit - checked >= DEADLINE_STRIDE {
                deadline.check(|| "the byte search".to_string())?;
                checked = hit;
            }
            if self.matches(&haystack[hit..hit + n]) {
                found(hit);
            }
        }
        Ok(())
    }
}

impl Image {
    /// Up to `length` bytes (at most [`MAX_READ_BYTES`]) at `address`, cut at the end of its
    /// section's file bytes, with where they are and what they read as.
    pub fn read_bytes(&self, address: u64, length: u64) -> Result<ByteRead, BytesError> {
        if length == 0 || length > MAX_READ_BYTES {
            return Err(BytesError::Length(length));
        }
        let section = self
            .section_at(address)
            .ok_or_else(|| BytesError::Unmapped {
                document: self.doc.name.clone(),
                address,
            })?;
        let offset_in = address - section.address;
        let (Some(file_offset), true) = (section.file_offset, offset_in < section.file_size) else {
            return Err(BytesError::ZeroFill {
                section: section.name.clone(),
                address,
            });
        };
        let length = length.min(section.file_size - offset_in);
        let bytes = self
            .bytes_at(address, length)
            .ok_or_else(|| BytesError::ZeroFill {
                section: section.name.clone(),
                address,
            })?;
        let (symbol, symbol_offset) = DataNames::new(self).symbol_holding(address).unzip();
        let procedure = self.procedure_at(address);
        Ok(ByteRead {
            address,
            length,
            section: section.name.clone(),
            file_offset: file_offset + offset_in,
            symbol,
            symbol_offset,
            procedure: procedure.map(|p| p.address),
            procedure_name: procedure.and_then(|p| p.name.clone()),
            hex: ::hex::encode(bytes),
            printable: bytes
                .iter()
                .map(|&b| {
                    if b.is_ascii_graphic() || b == b' ' {
                        b as char
                    } else {
                        '.'
                    }
                })
                .collect(),
            values: self.typed_values(bytes),
        })
    }

    fn typed_values(&self, bytes: &[u8]) -> TypedValues {
        fn take<const N: usize>(bytes: &[u8]) -> Option<[u8; N]> {
            bytes.get(..N)?.try_into().ok()
        }
        let u64_le = take::<8>(bytes).map(u64::from_le_bytes);
        let u64_be = take::<8>(bytes).map(u64::from_be_bytes);
        let u32_le = take::<4>(bytes).map(u32::from_le_bytes);
        let u32_be = take::<4>(bytes).map(u32::from_be_bytes);
        let pointer = match (self.pointer_size, self.big_endian) {
            (8, false) => u64_le,
            (8, true) => u64_be,
            (_, false) => u32_le.map(u64::from),
            (_, true) => u32_be.map(u64::from),
        };
        TypedValues {
            u8: bytes[0],
            u16_le: take::<2>(bytes).map(u16::from_le_bytes),
            u16_be: take::<2>(bytes).map(u16::from_be_bytes),
            u32_le,
            u32_be,
            u64_le,
            u64_be,
            pointer,
        }
    }

    /// Every match of `pattern` in the file bytes of the sections (or of the one named
    /// `section`), counted exactly, and the hits `[offset, offset + limit)` by address.
    pub fn search_bytes(
        &self,
        pattern: &BytePattern,
        section: Option<&str>,
        offset: usize,
        limit: usize,
        deadline: &Deadline,
    ) -> Result<ByteSearch, BytesError> {
        let limit = limit.min(MAX_HITS_PAGE);
        let mut sections: Vec<&SectionInfo> = self
            .sections
            .iter()
            .filter(|s| s.file_offset.is_some() && s.file_size > 0)
            .collect();
        if let Some(name) = section {
            sections.retain(|s| s.name == name);
            if sections.is_empty() {
                let known: Vec<&str> = self
                    .sections
                    .iter()
                    .filter(|s| s.file_offset.is_some() && s.file_size > 0)
                    .map(|s| s.name.as_str())
                    .collect();
                return Err(BytesError::NoSection {
                    name: name.to_owned(),
                    known: known.join(", "),
                });
            }
        }
        sections.sort_by_key(|s| s.address);
        let mut total = 0u64;
        let mut hits = Vec::new();
        for s in sections {
            let bytes = self.section_bytes(s);
            pattern.find_all(bytes, deadline, |at| {
                if total >= offset as u64 && hits.len() < limit {
                    let address = s.address + at as u64;
                    let procedure = self.procedure_at(address);
                    hits.push(ByteHit {
                        address,
                        section: s.name.clone(),
                        procedure: procedure.map(|p| p.address),
                        procedure_name: procedure.and_then(|p| p.name.clone()),
                    });
                }
                total += 1;
            })?;
        }
        Ok(ByteSearch { hits, total })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_read_hex_pairs_and_wildcards() {
        let p = BytePattern::parse("48 8b ?? 05").unwrap();
        assert_eq!(p.0, [Some(0x48), Some(0x8b), None, Some(0x05)]);
        assert_eq!(BytePattern::parse("488B??05").unwrap(), p);
        for bad in ["", "4", "zz", "?? ??", "4?"] {
            assert!(BytePattern::parse(bad).is_err(), "{bad}");
        }
        assert!(BytePattern::parse(&"00".repeat(257)).is_err());
    }

    #[test]
    fn every_overlapping_match_is_found() {
        let p = BytePattern::parse("?? 61 61").unwrap();
        let mut at = vec![];
        p.find_all(b"aaaaab", &Deadline::analysis(), |i| at.push(i))
            .unwrap();
        assert_eq!(at, [0, 1, 2]);
        let p = BytePattern::parse("61 ?? 62").unwrap();
        let mut at = vec![];
        p.find_all(b"a.ba.bab", &Deadline::analysis(), |i| at.push(i))
            .unwrap();
        assert_eq!(at, [0, 3]);
        let mut none = 0;
        p.find_all(b"ab", &Deadline::analysis(), |_| none += 1)
            .unwrap();
        assert_eq!(none, 0);
    }
}
