//! Fuzzes the completion match key on arbitrary Unicode (lossily decoded input, up to libFuzzer's
//! `-max_len`). The properties `src/completion/key.rs` states and tests with proptest must hold:
//! the key is idempotent, a cut before a starter gives a key that prefixes the whole value's
//! key, the ASCII fast path agrees with the full pipeline, and `successor` bounds every extension
//! of its argument.
#![no_main]

use icu_casemap::CaseMapper;
use icu_normalizer::DecomposingNormalizerBorrowed;
use icu_normalizer::properties::CanonicalCombiningClassMapBorrowed;
use icu_properties::{CodePointSetData, props::DefaultIgnorableCodePoint};
use libfuzzer_sys::fuzz_target;
use rea::completion::key::{match_key, successor};

/// Prefix checks per input: each costs a key of the head, so bound them on huge values.
const MAX_CUTS: usize = 256;

/// The key pipeline without the ASCII shortcut, as the module documents it.
fn full_pipeline(text: &str) -> String {
    let nfkd = DecomposingNormalizerBorrowed::new_nfkd();
    let folded = CaseMapper::new()
        .fold_string(&nfkd.normalize(text))
        .into_owned();
    let ignorable = CodePointSetData::new::<DefaultIgnorableCodePoint>();
    nfkd.normalize(&folded)
        .chars()
        .filter(|c| !ignorable.contains(*c))
        .collect()
}

/// A cut falls before a starter when the key of the rest begins with a character of canonical
/// combining class 0 (the definition of the module's own property test).
fn starts_with_starter(rest: &str) -> bool {
    let ccc = CanonicalCombiningClassMapBorrowed::new();
    match match_key(rest).chars().next() {
        Some(c) => ccc.get_u8(c) == 0,
        None => true,
    }
}

fn check_successor(s: &str) {
    match successor(s) {
        None => assert!(
            s.chars().all(|c| c == '\u{10FFFF}'),
            "successor({s:?}) is None but a bound exists"
        ),
        Some(upper) => {
            assert!(upper.as_str() > s, "successor({s:?}) = {upper:?} is not above it");
            let longest = format!("{s}\u{10FFFF}\u{10FFFF}");
            assert!(
                longest < upper,
                "successor({s:?}) = {upper:?} does not bound the extensions of {s:?}"
            );
            assert!(!upper.starts_with(s) || s.is_empty(), "successor({s:?}) extends it");
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let value = String::from_utf8_lossy(data);
    let key = match_key(&value);
    assert_eq!(match_key(&key), key, "the key of {value:?} is not idempotent");
    if value.bytes().all(|b| b.is_ascii() && !b.is_ascii_control()) {
        assert_eq!(key, full_pipeline(&value), "ASCII fast path disagrees for {value:?}");
    }
    for (cut, _) in value.char_indices().skip(1).take(MAX_CUTS) {
        let (head, rest) = value.split_at(cut);
        if starts_with_starter(rest) {
            let prefix = match_key(head);
            assert!(
                key.starts_with(&prefix),
                "{value:?} cut at byte {cut}: key {key:?} does not start with {prefix:?} (key of {head:?})"
            );
        }
    }
    check_successor(&value);
    check_successor(&key);
});
