//! String search: printable UTF-8 (and, for PE, UTF-16LE) runs in a document's sections,
//! filtered by a literal or a regular expression and returned in pages with an exact total.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::address::hex;
use super::image::Image;
use super::types::{ProviderError, SectionInfo};

/// Shortest run of characters reported as a string.
const MIN_CHARS: usize = 4;

/// Characters of a string shown in a match; longer strings are cut and flagged.
const MAX_SHOWN: usize = 512;

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
    /// Empty matches every string.
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

/// One string found.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct StringMatch {
    /// Virtual address of the string's first byte.
    #[serde(with = "hex")]
    #[schemars(with = "String")]
    pub address: u64,
    /// Section holding the string.
    pub section: String,
    /// The string, cut at 512 characters.
    pub text: String,
    /// Whether `text` was cut.
    pub truncated: bool,
    /// Length of the whole string in characters.
    pub length: usize,
    /// `utf-8` or `utf-16le`.
    pub encoding: String,
    /// Whether the string sits in an executable section (often a coincidence of code bytes).
    pub executable: bool,
}

/// A page of matches.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct StringMatches {
    /// Exact number of matching strings in the document.
    pub total: usize,
    /// Index of the first match in this page.
    pub offset: usize,
    /// The matches `[offset, offset + limit)`, by section then address.
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

    fn matches(&self, text: &str) -> bool {
        match self {
            Matcher::All => true,
            Matcher::Literal(finder) => finder.find(text.as_bytes()).is_some(),
            Matcher::Regex(re) => re.is_match(text),
        }
    }
}

/// Length of the printable character starting `data`, or `None` when it is not printable.
fn printable_char(data: &[u8]) -> Option<usize> {
    let first = *data.first()?;
    if first < 0x80 {
        return (first == b'\t' || (0x20..0x7f).contains(&first)).then_some(1);
    }
    let len = match first {
        0xc2..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf4 => 4,
        _ => return None,
    };
    let text = std::str::from_utf8(data.get(..len)?).ok()?;
    let c = text.chars().next()?;
    (!c.is_control()).then_some(len)
}

/// Calls `found(start, end)` for each printable UTF-8 run of at least [`MIN_CHARS`] characters.
fn utf8_runs(data: &[u8], mut found: impl FnMut(usize, usize, usize)) {
    let mut i = 0;
    while i < data.len() {
        let start = i;
        let mut chars = 0;
        while i < data.len() && i - start < MAX_RUN {
            match printable_char(&data[i..]) {
                Some(len) => {
                    i += len;
                    chars += 1;
                }
                None => break,
            }
        }
        if chars >= MIN_CHARS {
            found(start, i, chars);
        }
        if i == start {
            i += 1;
        }
    }
}

/// Calls `found(start, end)` for each run of printable ASCII encoded as UTF-16LE, at even
/// offsets, of at least [`MIN_CHARS`] characters.
fn utf16_runs(data: &[u8], mut found: impl FnMut(usize, usize, usize)) {
    let mut i = 0;
    while i + 1 < data.len() {
        let start = i;
        while i + 1 < data.len()
            && i - start < MAX_RUN
            && data[i + 1] == 0
            && (data[i] == b'\t' || (0x20..0x7f).contains(&data[i]))
        {
            i += 2;
        }
        let chars = (i - start) / 2;
        if chars >= MIN_CHARS {
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
        let mut total = 0usize;
        let mut matches = Vec::new();
        let wide = self.doc.format == "pe";
        let mut consider = |section: &SectionInfo, start: usize, text: &str, chars, encoding| {
            if !matcher.matches(text) {
                return;
            }
            if total >= query.offset && matches.len() < limit {
                let shown: String = text.chars().take(MAX_SHOWN).collect();
                matches.push(StringMatch {
                    address: section.address.wrapping_add(start as u64),
                    section: section.name.clone(),
                    truncated: chars > MAX_SHOWN,
                    text: shown,
                    length: chars,
                    encoding: encoding_name(encoding),
                    executable: section.executable,
                });
            }
            total += 1;
        };
        for section in &self.sections {
            if section.executable && !query.include_code {
                continue;
            }
            let data = self.section_bytes(section);
            utf8_runs(data, |start, end, chars| {
                // Runs are built from whole printable characters, so this cannot fail.
                if let Ok(text) = std::str::from_utf8(&data[start..end]) {
                    consider(section, start, text, chars, false);
                }
            });
            if wide {
                utf16_runs(data, |start, end, chars| {
                    let text: String = data[start..end]
                        .chunks_exact(2)
                        .map(|c| c[0] as char)
                        .collect();
                    consider(section, start, &text, chars, true);
                });
            }
        }
        let shown_end = query.offset.saturating_add(matches.len());
        Ok(StringMatches {
            total,
            offset: query.offset,
            next_offset: (shown_end < total && limit > 0).then_some(shown_end),
            matches,
        })
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
        utf8_runs(b"abc\0abcd\0h\xc3\xa9llo\xff", |s, e, c| {
            found.push((s, e, c))
        });
        assert_eq!(found, [(4, 8, 4), (9, 15, 5)]);
        let mut wide = Vec::new();
        utf16_runs(b"a\0b\0c\0d\0\0\0", |s, e, c| wide.push((s, e, c)));
        assert_eq!(wide, [(0, 8, 4)]);
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
