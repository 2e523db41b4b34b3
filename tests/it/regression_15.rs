//! Regression tests for the wrong results of issue 15 that the differential suite found in the
//! native and deep providers, each on a corpus program whose truth is its source.

use rea::providers::native::{Image, StringQuery};

use crate::corpus::{self, Opt, Source, Toolchain, Variant};
use crate::differential::{by_name, image};

fn graph(toolchain: Toolchain, opt: Opt, stripped: bool) -> Image {
    image(&corpus::build(Variant::new(
        Source::Graph,
        toolchain,
        opt,
        stripped,
    )))
}

/// The one match of `query` that starts with `text`, by address.
fn match_of(image: &Image, query: &str) -> u64 {
    let found = image.strings(&StringQuery::literal(query)).unwrap();
    let hits: Vec<u64> = found.matches.iter().map(|m| m.address).collect();
    assert_eq!(hits.len(), 1, "{query:?}: {hits:x?}");
    hits[0]
}

/// Names of the procedures whose code refers to `address`.
fn referrers(image: &Image, address: u64) -> Vec<String> {
    let mut names: Vec<String> = image
        .xrefs(address)
        .unwrap()
        .code
        .iter()
        .filter_map(|c| c.procedure_name.clone())
        .collect();
    names.sort();
    names.dedup();
    names
}

#[test]
fn packed_literal_match_address_is_exact_regression_15() {
    // `PACKED` holds four literals back to back without NULs; each function uses one slice.
    for toolchain in [Toolchain::ElfX64, Toolchain::MachoArm64, Toolchain::PeX64] {
        let image = graph(toolchain, Opt::O2, false);
        for (query, user) in [("beryllium", "say_beryllium"), ("cobalt", "say_cobalt")] {
            let at = match_of(&image, query);
            assert_eq!(
                image.bytes_at(at, query.len() as u64),
                Some(query.as_bytes()),
                "{toolchain:?} {query}"
            );
            let users = referrers(&image, at);
            assert!(
                users.iter().any(|n| n.trim_start_matches('_') == user),
                "{toolchain:?}: xrefs of {query:?} at {at:#x}: {users:?}"
            );
        }
    }
}

#[test]
fn leading_control_characters_are_part_of_the_string_regression_15() {
    for toolchain in [Toolchain::ElfX64, Toolchain::ElfA64, Toolchain::PeX64] {
        let image = graph(toolchain, Opt::O0, false);
        for (query, user) in [
            ("\nEnter password", "say_prompt"),
            ("\rProgress 100%", "say_carriage"),
            ("\tindented detail", "say_tabbed"),
        ] {
            let at = match_of(&image, query);
            assert_eq!(
                image.bytes_at(at, 1),
                Some(&query.as_bytes()[..1]),
                "{toolchain:?}: {query:?} at {at:#x}"
            );
            assert_eq!(referrers(&image, at), [user], "{toolchain:?} {query:?}");
        }
    }
}

#[test]
fn strings_shorter_than_four_characters_are_found_when_asked_regression_15() {
    let image = graph(Toolchain::ElfX64, Opt::O2, false);
    let say_short = by_name(&image, "say_short").address;
    for query in ["OK", "ab"] {
        let found = image.strings(&StringQuery::literal(query)).unwrap();
        // The two-character literal itself, referred to by say_short; longer strings that
        // merely contain the letters are matches too, at their own addresses.
        let exact = found
            .matches
            .iter()
            .find(|m| m.text == query)
            .unwrap_or_else(|| panic!("{query:?} not found: {:?}", found.matches));
        let x = image.xrefs(exact.address).unwrap();
        assert!(
            x.code.iter().any(|c| c.procedure == say_short),
            "{query:?} at {:#x}: {:?}",
            exact.address,
            x.code
        );
    }
}
