//! The normalized match key shared by stored completion values and typed prefixes.
//!
//! One function, [`match_key`], turns any text into the form that completion compares: full
//! Unicode case folding (locale-free) and compatibility decomposition, kept decomposed, with
//! Default_Ignorable code points removed. Stored keys and typed prefixes go through the same
//! function, so a prefix of a value's text always yields a prefix of the value's key when the cut
//! falls before a starter. The ICU4X crates supply every table, so one Unicode version drives all.

use icu_casemap::CaseMapper;
use icu_normalizer::DecomposingNormalizerBorrowed;
use icu_properties::{CodePointSetData, props::DefaultIgnorableCodePoint};

/// Version of the key algorithm. Stored in each session database; a database written with another
/// version has its keys recomputed when it is opened.
pub const KEY_ALGORITHM: &str = "nfkd-fold-di-nfkd/icu4x-2.4";

/// Typed prefixes longer than this many characters match nothing: no stored key is that long in
/// practice, and refusing early keeps hostile input cheap.
pub const MAX_PREFIX_CHARS: usize = 4096;

/// Returns the normalized key of `text`.
///
/// ASCII text without control characters takes a fast path (ASCII lowercase is exactly what the
/// full pipeline yields for it); everything else goes through NFKD, full case folding, removal of
/// Default_Ignorable code points, and NFKD again.
pub fn match_key(text: &str) -> String {
    if text.bytes().all(|b| b.is_ascii() && !b.is_ascii_control()) {
        return text.to_ascii_lowercase();
    }
    let nfkd = DecomposingNormalizerBorrowed::new_nfkd();
    let folded = CaseMapper::new()
        .fold_string(&nfkd.normalize(text))
        .into_owned();
    let ignorable = CodePointSetData::new::<DefaultIgnorableCodePoint>();
    // Ignorables go before the last decomposition: removing one that sat between two combining
    // marks afterwards would leave the marks out of canonical order (found by fuzzing).
    let kept: String = folded.chars().filter(|c| !ignorable.contains(*c)).collect();
    nfkd.normalize(&kept).into_owned()
}

/// The smallest string greater than every string that starts with `prefix`, in code-point order,
/// or `None` when no such bound exists (the prefix is empty or only U+10FFFF).
///
/// Used as the exclusive upper bound of the range scan `key >= prefix AND key < successor`.
/// SQLite compares TEXT with BINARY collation, which for UTF-8 is code-point order.
pub fn successor(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        let next = match last as u32 {
            0x10FFFF => continue,
            0xD7FF => Some('\u{E000}'),
            cp => char::from_u32(cp + 1),
        };
        if let Some(next) = next {
            chars.push(next);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use icu_normalizer::properties::CanonicalCombiningClassMapBorrowed;
    use proptest::prelude::*;

    fn check(value: &str, typed: &str) {
        let (v, p) = (match_key(value), match_key(typed));
        assert!(
            v.starts_with(&p),
            "{value:?} → {v:?} should start with {typed:?} → {p:?}"
        );
    }

    #[test]
    fn sharp_s_and_capital_sharp_s_fold_to_ss() {
        for typed in ["ß", "SS", "ẞ", "ss", "sS"] {
            check("straße", &format!("stra{typed}"));
            check("STRASSE", &format!("stra{typed}"));
        }
        assert_eq!(match_key("ẞ"), "ss");
    }

    #[test]
    fn ligatures_long_s_fullwidth_and_kelvin() {
        check("ﬁle", "fi");
        check("file", "ﬁ");
        assert_eq!(match_key("ſ"), "s");
        assert_eq!(match_key("ＡＢＣ"), "abc");
        assert_eq!(match_key("\u{212A}"), "k");
        check("Kelvin", "\u{212A}el");
    }

    #[test]
    fn final_sigma_prefix_finds_longer_word() {
        check("ΟΔΟΣΟΣ", "ΟΔΟΣ");
        check("οδοςος", "ΟΔΟΣ");
        assert_eq!(match_key("ς"), match_key("σ"));
    }

    #[test]
    fn default_ignorables_are_removed() {
        assert_eq!(match_key("soft\u{00AD}ware"), "software");
        assert_eq!(match_key("a\u{200D}b"), "ab");
        check("software", "soft\u{00AD}w");
    }

    #[test]
    fn hangul_typed_one_jamo_at_a_time() {
        // 한국 typed as ㅎ, 하, 한, 한ㄱ (compatibility jamo, as keyboards produce them).
        for typed in ["\u{314E}", "하", "한", "한\u{3131}", "한국"] {
            check("한국어", typed);
        }
    }

    #[test]
    fn turkish_dotted_and_dotless_i_fold_without_locale() {
        check("İstanbul", "İ");
        check("İstanbul", "i");
        assert_eq!(match_key("ı"), "ı");
        assert_ne!(match_key("ı"), match_key("i"));
    }

    #[test]
    fn ascii_fast_path_agrees_with_full_pipeline() {
        let full = |s: &str| {
            let nfkd = DecomposingNormalizerBorrowed::new_nfkd();
            let f = CaseMapper::new()
                .fold_string(&nfkd.normalize(s))
                .into_owned();
            nfkd.normalize(&f).into_owned()
        };
        for s in ["Hello_World", "0x10FF", "ev_ABC", " ~!@#$%^&*()"] {
            assert_eq!(match_key(s), full(s));
        }
    }

    #[test]
    fn an_ignorable_between_combining_marks_keeps_the_key_canonical() {
        // Found by the completion_key fuzz target.
        let key = match_key("a\u{301}\u{AD}\u{323}");
        assert_eq!(key, "a\u{323}\u{301}");
        assert_eq!(match_key(&key), key);
        assert_eq!(
            match_key("a\u{323}\u{301}"),
            key,
            "canonically equal text has the same key"
        );
    }

    #[test]
    fn successor_skips_surrogates_and_max() {
        assert_eq!(successor("ab").as_deref(), Some("ac"));
        assert_eq!(successor("a\u{D7FF}").as_deref(), Some("a\u{E000}"));
        assert_eq!(successor("a\u{10FFFF}").as_deref(), Some("b"));
        assert_eq!(successor("\u{10FFFF}\u{10FFFF}"), None);
        assert_eq!(successor(""), None);
    }

    /// A cut falls "before a starter" when the key of the remainder begins with a character of
    /// canonical combining class 0; otherwise canonical reordering may legitimately move marks.
    fn starts_with_starter(rest: &str) -> bool {
        let ccc = CanonicalCombiningClassMapBorrowed::new();
        match match_key(rest).chars().next() {
            Some(c) => ccc.get_u8(c) == 0,
            None => true,
        }
    }

    proptest! {
        #[test]
        fn prefix_key_is_prefix_of_value_key(value in "\\PC{0,24}") {
            let v = match_key(&value);
            for (cut, _) in value.char_indices() {
                let (head, rest) = value.split_at(cut);
                if starts_with_starter(rest) {
                    let p = match_key(head);
                    prop_assert!(v.starts_with(&p), "{value:?} cut at {cut}: {v:?} vs {p:?}");
                }
            }
        }

        #[test]
        fn key_is_idempotent(value in "\\PC{0,24}") {
            let once = match_key(&value);
            prop_assert_eq!(match_key(&once), once);
        }
    }
}
