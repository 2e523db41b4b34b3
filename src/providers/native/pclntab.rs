//! Go's pclntab: function entry addresses and names of Go binaries, which keep this table even
//! when every symbol is stripped (Go 1.2 through 1.20+ layouts).

/// Upper bound on functions read from one table; real binaries have well under a million.
const MAX_FUNCS: usize = 4_000_000;

/// Longest function name read; longer ones are cut (a crafted table must not cost memory).
const MAX_NAME: usize = 4096;

/// One Go function from the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GoFunc {
    pub(crate) entry: u64,
    pub(crate) name: String,
    /// Entry of the next function (or the table's end PC): the function's extent.
    pub(crate) end: Option<u64>,
}

/// The magic numbers that open a pclntab, by Go version.
const MAGICS: [u32; 4] = [
    0xffff_fffb, // Go 1.2 – 1.15
    0xffff_fffa, // Go 1.16 – 1.17
    0xffff_fff0, // Go 1.18 – 1.19
    0xffff_fff1, // Go 1.20 and later
];

/// Little reader over the table with the target's byte order and pointer size.
struct Reader<'a> {
    data: &'a [u8],
    big: bool,
    ptr: usize,
}

impl Reader<'_> {
    fn u32(&self, at: usize) -> Option<u32> {
        let bytes: [u8; 4] = self.data.get(at..at.checked_add(4)?)?.try_into().ok()?;
        Some(if self.big {
            u32::from_be_bytes(bytes)
        } else {
            u32::from_le_bytes(bytes)
        })
    }

    fn word(&self, at: usize) -> Option<u64> {
        if self.ptr == 4 {
            return self.u32(at).map(u64::from);
        }
        let bytes: [u8; 8] = self.data.get(at..at.checked_add(8)?)?.try_into().ok()?;
        Some(if self.big {
            u64::from_be_bytes(bytes)
        } else {
            u64::from_le_bytes(bytes)
        })
    }

    fn offset(&self, at: usize) -> Option<usize> {
        usize::try_from(self.word(at)?).ok()
    }

    fn cstr(&self, at: usize) -> Option<String> {
        let rest = self.data.get(at..)?;
        let len = memchr::memchr(0, rest).unwrap_or(rest.len()).min(MAX_NAME);
        let text = String::from_utf8_lossy(&rest[..len]).into_owned();
        (!text.is_empty()).then_some(text)
    }
}

/// Parses a pclntab that starts at `table[0]`. `text_start` is the address of the text section,
/// used when the table's own `textStart` field is zero (position-independent binaries).
pub(crate) fn parse(table: &[u8], text_start: u64) -> Option<Vec<GoFunc>> {
    let header = table.get(0..8)?;
    if header[4] != 0 || header[5] != 0 || !matches!(header[6], 1 | 2 | 4) {
        return None;
    }
    let ptr = match header[7] {
        4 => 4,
        8 => 8,
        _ => return None,
    };
    let le = u32::from_le_bytes(header[0..4].try_into().ok()?);
    let be = u32::from_be_bytes(header[0..4].try_into().ok()?);
    let (magic, big) = if MAGICS.contains(&le) {
        (le, false)
    } else if MAGICS.contains(&be) {
        (be, true)
    } else {
        return None;
    };
    let r = Reader {
        data: table,
        big,
        ptr,
    };
    let nfunc = r.offset(8)?;
    if nfunc == 0 || nfunc > MAX_FUNCS || nfunc > table.len() / 8 {
        return None;
    }
    let mut funcs = Vec::with_capacity(nfunc);
    match magic {
        0xffff_fffb => {
            // Entries are absolute PCs; _func offsets and name offsets are from the table start.
            let functab = 8 + ptr;
            let mut entries = Vec::with_capacity(nfunc + 1);
            for i in 0..=nfunc {
                let at = functab.checked_add(i.checked_mul(2 * ptr)?)?;
                entries.push((r.word(at)?, r.offset(at + ptr).unwrap_or(0)));
            }
            for i in 0..nfunc {
                let (entry, funcoff) = entries[i];
                let nameoff = r.u32(funcoff.checked_add(ptr)?)? as usize;
                let name = r.cstr(nameoff)?;
                funcs.push(GoFunc {
                    entry,
                    name,
                    end: Some(entries[i + 1].0),
                });
            }
        }
        0xffff_fffa => {
            let funcnames = r.offset(8 + 2 * ptr)?;
            let functab = r.offset(8 + 6 * ptr)?;
            let mut entries = Vec::with_capacity(nfunc + 1);
            for i in 0..=nfunc {
                let at = functab.checked_add(i.checked_mul(2 * ptr)?)?;
                entries.push((r.word(at)?, r.offset(at + ptr).unwrap_or(0)));
            }
            for i in 0..nfunc {
                let (entry, funcoff) = entries[i];
                let func = functab.checked_add(funcoff)?;
                let nameoff = r.u32(func.checked_add(ptr)?)? as usize;
                let name = r.cstr(funcnames.checked_add(nameoff)?)?;
                funcs.push(GoFunc {
                    entry,
                    name,
                    end: Some(entries[i + 1].0),
                });
            }
        }
        _ => {
            // Go 1.18+: entries are 32-bit offsets from textStart.
            let text = match r.word(8 + 2 * ptr)? {
                0 => text_start,
                t => t,
            };
            let funcnames = r.offset(8 + 3 * ptr)?;
            let functab = r.offset(8 + 7 * ptr)?;
            let mut entries = Vec::with_capacity(nfunc + 1);
            for i in 0..=nfunc {
                let at = functab.checked_add(i.checked_mul(8)?)?;
                let entryoff = r.u32(at)?;
                let funcoff = r.u32(at + 4).unwrap_or(0) as usize;
                entries.push((text.checked_add(u64::from(entryoff))?, funcoff));
            }
            for i in 0..nfunc {
                let (entry, funcoff) = entries[i];
                let func = functab.checked_add(funcoff)?;
                let nameoff = r.u32(func.checked_add(4)?)? as usize;
                let name = r.cstr(funcnames.checked_add(nameoff)?)?;
                funcs.push(GoFunc {
                    entry,
                    name,
                    end: Some(entries[i + 1].0),
                });
            }
        }
    }
    Some(funcs)
}

/// Looks for a pclntab anywhere in `data` by its magic, returning the first that parses.
pub(crate) fn search(data: &[u8], text_start: u64) -> Option<Vec<GoFunc>> {
    // Bound the work on hostile input: a real table is among the first few hits.
    const MAX_CANDIDATES: usize = 64;
    let mut tried = 0;
    for magic in MAGICS.iter().rev() {
        for bytes in [magic.to_le_bytes(), magic.to_be_bytes()] {
            let mut needle = bytes.to_vec();
            needle.extend_from_slice(&[0, 0]);
            for at in memchr::memmem::find_iter(data, &needle) {
                tried += 1;
                if tried > MAX_CANDIDATES {
                    return None;
                }
                if let Some(funcs) = parse(&data[at..], text_start) {
                    return Some(funcs);
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Builds a minimal Go 1.20 table with two functions.
    fn table_1_20() -> Vec<u8> {
        let ptr = 8usize;
        let header_len = 8 + 8 * ptr;
        let names = b"main.main\0runtime.main\0";
        let funcnames = header_len;
        let functab = funcnames + names.len();
        let mut t = vec![0xf1, 0xff, 0xff, 0xff, 0, 0, 4, 8];
        for v in [2u64, 0, 0x1000, funcnames as u64, 0, 0, 0, functab as u64] {
            t.extend_from_slice(&v.to_le_bytes());
        }
        t.extend_from_slice(names);
        // functab: (entryoff, funcoff) x3, then two _func records (entryoff, nameoff).
        let funcs_at = 3 * 8;
        for (entry, func) in [(0u32, funcs_at), (0x40, funcs_at + 8), (0x80, 0)] {
            t.extend_from_slice(&entry.to_le_bytes());
            t.extend_from_slice(&(func as u32).to_le_bytes());
        }
        for (entry, name) in [(0u32, 0u32), (0x40, 10)] {
            t.extend_from_slice(&entry.to_le_bytes());
            t.extend_from_slice(&name.to_le_bytes());
        }
        t
    }

    #[test]
    fn parses_a_go_1_20_table() {
        let funcs = parse(&table_1_20(), 0).unwrap();
        assert_eq!(
            funcs,
            [
                GoFunc {
                    entry: 0x1000,
                    name: "main.main".into(),
                    end: Some(0x1040)
                },
                GoFunc {
                    entry: 0x1040,
                    name: "runtime.main".into(),
                    end: Some(0x1080)
                },
            ]
        );
        let mut padded = vec![0u8; 13];
        padded.extend(table_1_20());
        assert_eq!(search(&padded, 0).map(|f| f.len()), Some(2));
    }

    #[test]
    fn truncated_tables_never_panic() {
        let t = table_1_20();
        for cut in 0..t.len() {
            let _ = parse(&t[..cut], 0);
            let _ = search(&t[..cut], 0);
        }
        let mut flipped = t.clone();
        for i in 0..flipped.len() {
            flipped[i] ^= 0xff;
            let _ = parse(&flipped, 0);
            flipped[i] ^= 0xff;
        }
    }
}
