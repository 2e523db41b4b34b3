//! String search: runs of printable UTF-8 (and, for PE, UTF-16LE) in a document's sections,
//! searched by a literal or a regular expression; every match is returned at its own address,
//! beside the start of the string holding it, in pages with an exact total.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::address::hex;
use super::image::Image;
use super::types::{ProviderError, SectionInfo};

/// Shortest run of characters reported as a string.
const MIN_CHARS: usize = 4;

/// Characters of a string shown in a match; longer strings are cut and flagged.
const MAX_SHOWN: usize = 512;

/// Characters of a string shown before a match inside it.
const MAX_PREFIX: usize = 64;

/// Procedures listed as users of one match; `users_total` counts them all.
const MAX_USERS: usize = 16;

/// Referring instructions listed per user.
const MAX_SITES: usize = 8;

/// A procedure whose code refers to a match (at its own address or at its string's start).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct StringUser {
    /// Start of the procedure.
    #[serde(with = "hex")]
    #[schemars(with = "String")]
    pub procedure: u64,
    /// Its name, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The analyst's name, beside `name` (an annotation; absent when none). Left out of the
    /// schema (tools/list budget), which allows it like any other member.
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub analyst: Option<crate::ids::AnalystName>,
    /// Its referring instructions, by address (at most 8).
    #[schemars(with = "Vec<String>")]
    #[serde(with = "hex_list")]
    pub sites: Vec<u64>,
    /// The pointer in data through which the procedure reaches the string, when its code
    /// refers to no address of the string itself (`MSG_PW` for `puts(MSG_PW)`).
    #[serde(
        default,
        with = "super::address::hex_opt",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub via: Option<u64>,
}

/// `0x…` strings for a list of addresses.
mod hex_list {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[u64], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(v.iter().map(|a| format!("{a:#x}")))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u64>, D::Error> {
        Vec::<String>::deserialize(d)?
            .iter()
            .map(|t| {
                super::super::address::parse_address(t)
                    .ok_or_else(|| serde::de::Error::custom(format!("not a hex address: {t:?}")))
            })
            .collect()
    }
}

/// Longest run considered one string; longer runs are split (a megabyte of text in a binary is
/// data, not a string, and must not be matched as one).
const MAX_RUN: usize = 64 * 1024;

/// Most matches returned in one page.
const MAX_LIMIT: usize = 1000;

/// Size limit for compiled regular expressions, against patterns built to exhaust memory.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

fn default_limit() -> usize {
    50
}

fn default_true() -> bool {
    true
}

/// What to look for.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct StringQuery {
    /// Text to find: a case-sensitive substring, or a regular expression when `regex` is true.
    /// Empty matches every string of at least 4 characters; a literal shorter than 4
    /// characters searches strings as short as itself.
    #[serde(default)]
    pub pattern: String,
    /// Treat `pattern` as a regular expression (Rust `regex` syntax).
    #[serde(default)]
    pub regex: bool,
    /// Index of the first match to return.
    #[serde(default)]
    pub offset: usize,
    /// Most matches to return (at most 1000).
    #[serde(default = "default_limit")]
    pub limit: usize,
    /// Also search executable sections (their matches are flagged `executable`).
    #[serde(default = "default_true")]
    pub include_code: bool,
}

impl StringQuery {
    /// A literal query for `pattern`, first page of 50.
    pub fn literal(pattern: &str) -> StringQuery {
        StringQuery {
            pattern: pattern.to_string(),
            regex: false,
            offset: 0,
            limit: default_limit(),
            include_code: true,
        }
    }
}

/// One match: where the searched text starts, and the string (printable run) holding it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct StringMatch {
    /// Virtual address of the match's first byte (for an empty pattern, of the string's).
    /// Code that uses a literal packed among others without NULs between them (Rust, Go)
    /// refers to this address: `xrefs` on it finds that code.
    #[serde(with = "hex")]
    #[schemars(with = "String")]
    pub address: u64,
    /// Virtual address of the first byte of the string holding the match: the start of its
    /// run of printable characters. Code that uses a NUL-terminated C string refers to this
    /// address; it equals `address` when the match starts the string.
    #[serde(with = "hex")]
    #[schemars(with = "String")]
    pub string_address: u64,
    /// Virtual address just past the string's last character (its NUL, when it has one).
    #[serde(with = "hex")]
    #[schemars(with = "String")]
    pub string_end: u64,
    /// Procedures whose code refers to `address` or `string_address` (at most 16, by address),
    /// so string → code needs no second call; `xrefs` adds data pointers.
    pub users: Vec<StringUser>,
    /// Exact number of such procedures; `null` when this architecture's code is not decoded.
    pub users_total: Option<usize>,
    /// Section holding the string.
    pub section: String,
    /// The string's characters before the match (the closest 64 at most), so a match inside a
    /// C string shows where that string starts; empty when the match starts the string.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub prefix: String,
    /// The string from `address` to its end, cut at 512 characters. Leading `\n`, `\r` and
    /// `\t` are part of it.
    pub text: String,
    /// Whether `text` was cut.
    pub truncated: bool,
    /// Length in characters from `address` to the string's end.
    pub length: usize,
    /// `utf-8` or `utf-16le`.
    pub encoding: String,
    /// Whether the string sits in an executable section (often a coincidence of code bytes).
    pub executable: bool,
}

/// A page of matches.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct StringMatches {
    /// Exact number of matches in the document (a string holding the pattern twice counts
    /// twice).
    pub total: usize,
    /// Index of the first match in this page.
    pub offset: usize,
    /// Shortest string, in characters, that was searched: 4, or the length of a literal
    /// pattern shorter than that (so `OK` finds two-character strings). Shorter runs of
    /// printable characters are not strings to this search.
    pub min_length: usize,
    /// The matches `[offset, offset + limit)`, by section, then address.
    pub matches: Vec<StringMatch>,
    /// Offset of the next page, when there is one.
    pub next_offset: Option<usize>,
}

enum Matcher {
    All,
    Literal(Box<memchr::memmem::Finder<'static>>),
    Regex(regex::Regex),
}

impl Matcher {
    fn new(query: &StringQuery) -> Result<Matcher, ProviderError> {
        if query.pattern.is_empty() {
            return Ok(Matcher::All);
        }
        if query.regex {
            let re = regex::RegexBuilder::new(&query.pattern)
                .size_limit(REGEX_SIZE_LIMIT)
                .dfa_size_limit(REGEX_SIZE_LIMIT)
                .build()
                .map_err(|e| ProviderError::InvalidPattern {
                    pattern: query.pattern.clone(),
                    reason: e.to_string(),
                })?;
            return Ok(Matcher::Regex(re));
        }
        Ok(Matcher::Literal(Box::new(
            memchr::memmem::Finder::new(query.pattern.as_bytes()).into_owned(),
        )))
    }

    /// Byte offsets in `text` where matches start: every non-overlapping occurrence of a
    /// literal, every non-empty match of a regular expression (or the string's start when it
    /// matches only empty), the string's start for an empty pattern.
    fn starts(&self, text: &str, out: &mut Vec<usize>) {
        out.clear();
        match self {
            Matcher::All => out.push(0),
            Matcher::Literal(finder) => out.extend(finder.find_iter(text.as_bytes())),
            Matcher::Regex(re) => {
                out.extend(
                    re.find_iter(text)
                        .filter(|m| !m.is_empty())
                        .map(|m| m.start()),
                );
                if out.is_empty() && re.is_match(text) {
                    out.push(0);
                }
            }
        }
    }
}

/// Shortest run searched for `query`: [`MIN_CHARS`], or a shorter literal's own length.
fn min_chars(query: &StringQuery) -> usize {
    if query.regex || query.pattern.is_empty() {
        MIN_CHARS
    } else {
        query.pattern.chars().count().clamp(1, MIN_CHARS)
    }
}

/// Whether a character may be part of a string: printable, or the whitespace controls
/// (`\t`, `\n`, `\r`) that strings so often start or end with.
fn text_char(c: char) -> bool {
    !c.is_control() || matches!(c, '\t' | '\n' | '\r')
}

/// Length of the string character starting `data`, or `None` when it is not one.
fn printable_char(data: &[u8]) -> Option<usize> {
    let first = *data.first()?;
    if first < 0x80 {
        return text_char(first as char).then_some(1);
    }
    let len = match first {
        0xc2..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf4 => 4,
        _ => return None,
    };
    let text = std::str::from_utf8(data.get(..len)?).ok()?;
    let c = text.chars().next()?;
    text_char(c).then_some(len)
}

/// Calls `found(start, end, chars)` for each UTF-8 run of at least `min` string characters
/// that holds something besides whitespace.
fn utf8_runs(data: &[u8], min: usize, mut found: impl FnMut(usize, usize, usize)) {
    let mut i = 0;
    while i < data.len() {
        let start = i;
        let mut chars = 0;
        let mut visible = false;
        while i < data.len() && i - start < MAX_RUN {
            match printable_char(&data[i..]) {
                Some(len) => {
                    visible |= !data[i].is_ascii_whitespace();
                    i += len;
                    chars += 1;
                }
                None => break,
            }
        }
        if chars >= min && visible {
            found(start, i, chars);
        }
        if i == start {
            i += 1;
        }
    }
}

/// Calls `found(start, end, chars)` for each run of ASCII string characters encoded as
/// UTF-16LE, at even offsets, of at least `min` characters and not only whitespace.
fn utf16_runs(data: &[u8], min: usize, mut found: impl FnMut(usize, usize, usize)) {
    let mut i = 0;
    while i + 1 < data.len() {
        let start = i;
        let mut visible = false;
        while i + 1 < data.len()
            && i - start < MAX_RUN
            && data[i + 1] == 0
            && data[i] < 0x80
            && text_char(data[i] as char)
        {
            visible |= !data[i].is_ascii_whitespace();
            i += 2;
        }
        let chars = (i - start) / 2;
        if chars >= min && visible {
            found(start, i, chars);
        }
        if i == start {
            i += 2;
        }
    }
}

impl Image {
    /// Searches the document's strings; returns the exact total and the requested page.
    pub fn strings(&self, query: &StringQuery) -> Result<StringMatches, ProviderError> {
        let matcher = Matcher::new(query)?;
        let limit = query.limit.min(MAX_LIMIT);
        let min = min_chars(query);
        let mut total = 0usize;
        let mut matches = Vec::new();
        let mut starts = Vec::new();
        let wide = self.doc.format == "pe";
        // `unit` is the size in bytes of one character of `text` (ASCII for UTF-16 runs).
        let mut consider = |section: &SectionInfo, start: usize, text: &str, unit: usize| {
            matcher.starts(text, &mut starts);
            for &at in &starts {
                if total >= query.offset && matches.len() < limit {
                    let before = &text[..at];
                    let skip = before.chars().count().saturating_sub(MAX_PREFIX);
                    let rest = &text[at..];
                    let length = rest.chars().count();
                    let string_address = section.address.wrapping_add(start as u64);
                    matches.push(StringMatch {
                        address: string_address.wrapping_add((at * unit) as u64),
                        string_address,
                        string_end: string_address.wrapping_add((text.len() * unit) as u64),
                        users: Vec::new(),
                        users_total: None,
                        section: section.name.clone(),
                        prefix: before.chars().skip(skip).collect(),
                        truncated: length > MAX_SHOWN,
                        text: rest.chars().take(MAX_SHOWN).collect(),
                        length,
                        encoding: encoding_name(unit == 2),
                        executable: section.executable,
                    });
                }
                total += 1;
            }
        };
        for section in &self.sections {
            if section.executable && !query.include_code {
                continue;
            }
            let data = self.section_bytes(section);
            utf8_runs(data, min, |start, end, _| {
                // Runs are built from whole characters, so this cannot fail.
                if let Ok(text) = std::str::from_utf8(&data[start..end]) {
                    consider(section, start, text, 1);
                }
            });
            if wide {
                utf16_runs(data, min, |start, end, _| {
                    let text: String = data[start..end]
                        .chunks_exact(2)
                        .map(|c| c[0] as char)
                        .collect();
                    consider(section, start, &text, 2);
                });
            }
        }
        for m in &mut matches {
            if let Some(users) = self.users_of(&[m.address, m.string_address]) {
                m.users_total = Some(users.len());
                m.users = users
                    .into_iter()
                    .take(MAX_USERS)
                    .map(|mut user| {
                        user.sites.truncate(MAX_SITES);
                        user
                    })
                    .collect();
            }
        }
        let shown_end = query.offset.saturating_add(matches.len());
        Ok(StringMatches {
            total,
            offset: query.offset,
            min_length: min,
            next_offset: (shown_end < total && limit > 0).then_some(shown_end),
            matches,
        })
    }
}

/// How far before an address [`Image::string_run_at`] looks into its run: enough bytes for
/// [`MIN_CHARS`] characters of any width, so a run that starts earlier still counts as one.
const RUN_LOOKBACK: usize = 64;

impl Image {
    /// The text from `address` to the end of the string this search would report there: the
    /// run of at least four string characters (UTF-8, or UTF-16LE in a PE image) holding
    /// `address` in a non-executable section, cut at `max` characters (so a caller asking for
    /// one more learns whether it was cut). `wide` tells which encoding matched; `None` when
    /// the address starts no character of such a run.
    pub(super) fn string_run_at(&self, address: u64, max: usize) -> Option<(String, bool)> {
        let section = self.section_at(address)?;
        if section.executable {
            return None;
        }
        let data = self.section_bytes(section);
        let off = usize::try_from(address - section.address).ok()?;
        if off >= data.len() {
            return None;
        }
        let lo = off.saturating_sub(RUN_LOOKBACK);
        // Only `max` characters are kept, of at most four bytes each.
        let hi = data
            .len()
            .min(off.saturating_add(max.saturating_mul(4)).saturating_add(8));
        let mut found = None;
        utf8_runs(&data[lo..hi], MIN_CHARS, |start, end, _| {
            if found.is_none() && lo + start <= off && off < lo + end {
                found = Some(lo + end);
            }
        });
        if let Some(end) = found {
            // An address inside a multi-byte character starts no text.
            let text = std::str::from_utf8(&data[off..end]).ok()?;
            return Some((text.chars().take(max).collect(), false));
        }
        if self.doc.format != "pe" {
            return None;
        }
        // UTF-16 runs sit at even offsets of their section.
        let lo = lo & !1;
        utf16_runs(&data[lo..hi], MIN_CHARS, |start, end, _| {
            if found.is_none() && lo + start <= off && off < lo + end && (off - lo - start) % 2 == 0
            {
                found = Some(lo + end);
            }
        });
        let end = found?;
        let text = data[off..end]
            .chunks_exact(2)
            .take(max)
            .map(|c| c[0] as char)
            .collect();
        Some((text, true))
    }
}

fn encoding_name(wide: bool) -> String {
    if wide { "utf-16le" } else { "utf-8" }.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::native::test_support::document;

    #[test]
    fn runs_require_four_printable_characters() {
        let mut found = Vec::new();
        utf8_runs(b"abc\0abcd\0h\xc3\xa9llo\xff", 4, |s, e, c| {
            found.push((s, e, c))
        });
        assert_eq!(found, [(4, 8, 4), (9, 15, 5)]);
        let mut wide = Vec::new();
        utf16_runs(b"a\0b\0c\0d\0\0\0", 4, |s, e, c| wide.push((s, e, c)));
        assert_eq!(wide, [(0, 8, 4)]);
    }

    #[test]
    fn runs_keep_leading_whitespace_controls_and_shorter_minimums() {
        let mut found = Vec::new();
        let data = b"\0\nEnter\0\r\t\n\n\0OK\0\x1bab";
        utf8_runs(data, 4, |s, e, c| found.push((s, e, c)));
        // `\n` starts the first string; a run of whitespace alone is not a string.
        assert_eq!(found, [(1, 7, 6)]);
        found.clear();
        utf8_runs(data, 2, |s, e, c| found.push((s, e, c)));
        assert_eq!(found, [(1, 7, 6), (13, 15, 2), (17, 19, 2)]);
        let mut wide = Vec::new();
        utf16_runs(b"\n\0a\0b\0", 3, |s, e, c| wide.push((s, e, c)));
        assert_eq!(wide, [(0, 6, 3)]);
        assert_eq!(min_chars(&StringQuery::literal("OK")), 2);
        assert_eq!(min_chars(&StringQuery::literal("longer")), 4);
        assert_eq!(min_chars(&StringQuery::literal("")), 4);
    }

    #[test]
    fn matchers_report_every_match_start() {
        let mut starts = Vec::new();
        Matcher::new(&StringQuery::literal("ab"))
            .unwrap()
            .starts("xxabyyab", &mut starts);
        assert_eq!(starts, [2, 6]);
        let mut q = StringQuery::literal("b+");
        q.regex = true;
        Matcher::new(&q).unwrap().starts("abbcb", &mut starts);
        assert_eq!(starts, [1, 4]);
        q.pattern = "^x*".into();
        Matcher::new(&q).unwrap().starts("abc", &mut starts);
        assert_eq!(starts, [0], "an empty match stands for the string");
        Matcher::new(&StringQuery::literal(""))
            .unwrap()
            .starts("abc", &mut starts);
        assert_eq!(starts, [0]);
    }

    #[test]
    fn finds_strings_in_fsevents_with_exact_totals() {
        let image =
            Image::load(&document("fsevents/package/fsevents.node", Some("arm64"))).unwrap();
        let all = image.strings(&StringQuery::literal("")).unwrap();
        assert!(all.total > 20);
        assert_eq!(all.matches.len(), 50.min(all.total));
        let hit = image.strings(&StringQuery::literal("FSEvent")).unwrap();
        assert!(hit.total > 0);
        for m in &hit.matches {
            assert!(m.text.contains("FSEvent"));
            let bytes = image.bytes_at(m.address, m.text.len() as u64).unwrap();
            assert_eq!(bytes, m.text.as_bytes());
        }
        // Pages tile the whole result.
        let mut q = StringQuery::literal("");
        q.limit = 7;
        let mut seen = 0;
        while let Some(page) = Some(image.strings(&q).unwrap()) {
            seen += page.matches.len();
            match page.next_offset {
                Some(next) => q.offset = next,
                None => break,
            }
        }
        assert_eq!(seen, all.total);
    }

    #[test]
    fn regex_queries_and_bad_patterns() {
        let image = Image::load(&document("/usr/bin/ls", None)).unwrap();
        let mut q = StringQuery::literal("^GLIBC_2\\.[0-9]+$");
        q.regex = true;
        let found = image.strings(&q).unwrap();
        assert!(found.total > 0);
        assert!(found.matches.iter().all(|m| m.text.starts_with("GLIBC_2.")));
        q.pattern = "(".to_string();
        assert!(matches!(
            image.strings(&q),
            Err(ProviderError::InvalidPattern { .. })
        ));
        let mut q = StringQuery::literal("");
        q.include_code = false;
        assert!(
            image
                .strings(&q)
                .unwrap()
                .matches
                .iter()
                .all(|m| !m.executable)
        );
    }

    #[test]
    fn pe_wide_strings_are_found() {
        let image = Image::load(&document(
            "node-notifier/package/vendor/snoreToast/snoretoast-x64.exe",
            None,
        ))
        .unwrap();
        let mut q = StringQuery::literal("");
        q.limit = 1000;
        q.include_code = false;
        let found = image.strings(&q).unwrap();
        let wide: Vec<_> = found
            .matches
            .iter()
            .filter(|m| m.encoding == "utf-16le")
            .collect();
        assert!(!wide.is_empty() || found.total > 1000);
        let toast = image.strings(&StringQuery::literal("SnoreToast")).unwrap();
        assert!(toast.total > 0);
    }
}
