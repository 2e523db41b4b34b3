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

/// Bytes of a section scanned at once. The pages of a window are given back once it is scanned,
/// so a search holds a window of the file in memory, not the whole section.
const WINDOW: usize = 4 << 20;

/// Most work one search may do, in units of about a nanosecond: a position where the pattern's
/// fixed run matches costs [`CANDIDATE_COST`] plus a unit per other byte compared there, and every
/// [`SCAN_BYTES_PER_UNIT`] bytes scanned cost one. A pattern whose run matches nearly everywhere
/// (`00` in a section of zeros) is refused in a few seconds, with a clear error, rather than
/// counted for minutes.
pub const MAX_SEARCH_WORK: u64 = 1 << 29;

/// The work of one position where the pattern's fixed run matches, before its other bytes.
const CANDIDATE_COST: u64 = 4;

/// Bytes scanned for a unit of work (the run is found by a vectorized scan).
const SCAN_BYTES_PER_UNIT: u64 = 8;

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
    /// The search would do more work than one call may.
    #[error(
        "the byte search stopped after checking {candidates} places where the pattern's fixed run \
         {run} matches in {scanned} bytes, and would go past the work one search may do; the run \
         matches almost everywhere here: give a longer run of fixed bytes (fewer ??), or search \
         one section"
    )]
    TooCostly {
        /// The pattern's longest run of fixed bytes, in hex.
        run: String,
        /// Places checked before stopping.
        candidates: u64,
        /// Bytes scanned before stopping.
        scanned: u64,
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

    /// The longest run of fixed bytes (the first of the longest): the search finds it with
    /// `memmem`, in time linear in the bytes scanned, and checks the other bytes only where it is.
    fn run(&self) -> (usize, Vec<u8>) {
        let (mut best, mut at, mut start) = (0, 0, None);
        for (i, b) in self.0.iter().chain([&None]).enumerate() {
            match (b, start) {
                (Some(_), None) => start = Some(i),
                (None, Some(s)) => {
                    if i - s > best {
                        (best, at) = (i - s, s);
                    }
                    start = None;
                }
                _ => {}
            }
        }
        let run = self.0[at..at + best]
            .iter()
            .map(|b| b.expect("a fixed run"))
            .collect();
        (at, run)
    }

    /// Every match in `haystack`, overlapping ones included, in order, as start offsets; work
    /// is charged to `budget`.
    #[cfg(test)]
    fn find_all(
        &self,
        haystack: &[u8],
        budget: &mut Budget<'_>,
        found: impl FnMut(usize),
    ) -> Result<(), BytesError> {
        self.find_in_windows(haystack, budget, |_| {}, found)
    }

    /// [`Self::find_all`] a window at a time; `scanned(end)` is told, after each window, that
    /// the bytes before `end` will not be read again.
    fn find_in_windows(
        &self,
        haystack: &[u8],
        budget: &mut Budget<'_>,
        mut scanned: impl FnMut(usize),
        mut found: impl FnMut(usize),
    ) -> Result<(), BytesError> {
        let n = self.0.len();
        if haystack.len() < n {
            return Ok(());
        }
        let (run_at, run) = self.run();
        let finder = memchr::memmem::Finder::new(&run);
        // The other fixed bytes, checked where the run matches.
        let rest: Vec<(usize, u8)> = self
            .0
            .iter()
            .enumerate()
            .filter(|(i, _)| *i < run_at || *i >= run_at + run.len())
            .filter_map(|(i, b)| b.map(|b| (i, b)))
            .collect();
        let starts = haystack.len() - n + 1;
        let mut from = 0usize;
        while from < starts {
            let to = starts.min(from.saturating_add(WINDOW));
            // The runs of patterns starting in `[from, to)`.
            let window = &haystack[from + run_at..to - 1 + run_at + run.len()];
            budget.scan(window.len(), || run_hex(&run))?;
            // Overlapping matches count each, so the next look starts one byte after a hit.
            let mut at = 0;
            while let Some(hit) = finder.find(&window[at..]) {
                // The run is compared again where it matches: it costs its bytes too.
                budget.candidate(run.len() + rest.len(), || run_hex(&run))?;
                let start = from + at + hit;
                if rest.iter().all(|&(i, b)| haystack[start + i] == b) {
                    found(start);
                }
                at += hit + 1;
            }
            scanned(to);
            from = to;
        }
        Ok(())
    }
}

fn run_hex(run: &[u8]) -> String {
    ::hex::encode(run)
}

/// The work a search has done, against [`MAX_SEARCH_WORK`] and its deadline.
struct Budget<'a> {
    deadline: &'a Deadline,
    limit: u64,
    work: u64,
    candidates: u64,
    scanned: u64,
    since_look: usize,
}

impl<'a> Budget<'a> {
    fn new(deadline: &'a Deadline) -> Budget<'a> {
        Budget::with_limit(deadline, MAX_SEARCH_WORK)
    }

    fn with_limit(deadline: &'a Deadline, limit: u64) -> Budget<'a> {
        Budget {
            deadline,
            limit,
            work: 0,
            candidates: 0,
            scanned: 0,
            since_look: 0,
        }
    }

    fn scan(&mut self, bytes: usize, run: impl Fn() -> String) -> Result<(), BytesError> {
        self.scanned += bytes as u64;
        self.charge(bytes as u64 / SCAN_BYTES_PER_UNIT, bytes, run)
    }

    fn candidate(&mut self, compared: usize, run: impl Fn() -> String) -> Result<(), BytesError> {
        self.candidates += 1;
        self.charge(CANDIDATE_COST + compared as u64, 1 + compared, run)
    }

    fn charge(
        &mut self,
        units: u64,
        bytes: usize,
        run: impl Fn() -> String,
    ) -> Result<(), BytesError> {
        self.work = self.work.saturating_add(units);
        if self.work > self.limit {
            return Err(BytesError::TooCostly {
                run: run(),
                candidates: self.candidates,
                scanned: self.scanned,
            });
        }
        self.since_look += bytes;
        if self.since_look >= DEADLINE_STRIDE {
            self.since_look = 0;
            self.deadline.check(|| "the byte search".to_string())?;
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
        let mut budget = Budget::new(deadline);
        for s in sections {
            let bytes = self.section_bytes(s);
            let base = bytes.as_ptr() as usize - self.bytes.as_ptr() as usize;
            let mut released = 0;
            let release = |end: usize| {
                // Pages before the next window are not read again by this search.
                self.bytes.release(base + released..base + end);
                released = end;
            };
            pattern.find_in_windows(bytes, &mut budget, release, |at| {
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
        let d = Deadline::analysis();
        p.find_all(b"aaaaab", &mut Budget::new(&d), |i| at.push(i))
            .unwrap();
        assert_eq!(at, [0, 1, 2]);
        let p = BytePattern::parse("61 ?? 62").unwrap();
        let mut at = vec![];
        p.find_all(b"a.ba.bab", &mut Budget::new(&d), |i| at.push(i))
            .unwrap();
        assert_eq!(at, [0, 3]);
        let mut none = 0;
        p.find_all(b"ab", &mut Budget::new(&d), |_| none += 1)
            .unwrap();
        assert_eq!(none, 0);
    }

    /// A naive scan, the truth the windowed one is held to.
    fn naive(haystack: &[u8], p: &BytePattern) -> Vec<usize> {
        (0..(haystack.len() + 1).saturating_sub(p.len()))
            .filter(|&i| {
                p.0.iter()
                    .zip(&haystack[i..])
                    .all(|(p, b)| p.is_none_or(|p| p == *b))
            })
            .collect()
    }

    #[test]
    fn windows_find_what_a_naive_scan_finds_across_their_edges_regression_25() {
        // Matches straddle every window edge: the haystack repeats a 7-byte motif past two
        // windows, and the run of the pattern is not its first byte.
        let motif = b"\x01ab\x02abc";
        let haystack: Vec<u8> = motif
            .iter()
            .copied()
            .cycle()
            .take(2 * WINDOW + 11)
            .collect();
        let d = Deadline::analysis();
        for text in [
            "61 62",
            "?? 61 62 ?? 61",
            "02 61 62 63 01",
            "63 ?? 61 62 02",
            "01",
        ] {
            let p = BytePattern::parse(text).unwrap();
            let mut at = vec![];
            let mut ends = vec![];
            p.find_in_windows(
                &haystack,
                &mut Budget::new(&d),
                |e| ends.push(e),
                |i| at.push(i),
            )
            .unwrap();
            assert_eq!(at, naive(&haystack, &p), "{text}");
            assert_eq!(ends.len(), 3, "{text}");
        }
    }

    #[test]
    fn a_run_that_matches_everywhere_is_refused_by_the_work_budget_regression_25() {
        // Zeros with a pattern whose longest fixed run is one zero byte: each place costs its
        // other 127 bytes, far past the budget (a small one, for a test built without
        // optimization), and the search says why.
        let zeros = vec![0u8; 8 << 20];
        let p = BytePattern::parse(&"00 ?? ".repeat(128)).unwrap();
        let d = Deadline::analysis();
        let e = p
            .find_all(&zeros, &mut Budget::with_limit(&d, 1 << 24), |_| {})
            .unwrap_err();
        assert!(matches!(e, BytesError::TooCostly { .. }), "{e}");
        assert!(e.to_string().contains("fixed run 00 matches"), "{e}");
        // Without wildcards the run is the whole pattern: linear, within budget, and exact.
        let p = BytePattern::parse(&format!("{}01", "00 ".repeat(255))).unwrap();
        let mut n = 0;
        p.find_all(&zeros, &mut Budget::with_limit(&d, 1 << 24), |_| n += 1)
            .unwrap();
        assert_eq!(n, 0);
    }
}
