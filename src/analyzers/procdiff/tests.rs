//! Tests of the function-level comparison on programs compiled here (gcc, mingw-w64 and the
//! AArch64 cross compiler; -O0 and -O2; stripped with `strip -o` and not), whose truth comes from
//! the sources in `testdata/` and from `nm` on the unstripped twin, and on the real 7-Zip pair.

use super::*;
use crate::analyzers::testbuild::{
    ARM64, Built, GCC, MINGW, Toolchain, build, image, nm_functions,
};
use crate::providers::native::admit;
use crate::providers::native::test_support::document;

#[path = "testdata/corpus.rs"]
mod corpus;

const STORE: &str = include_str!("testdata/store.c");

fn all(diff: &ProcedureDiff, status: ProcedureStatus) -> Vec<&ProcedureEntry> {
    diff.entries()
        .iter()
        .filter(|e| e.status == status)
        .collect()
}

/// The builds every exact case runs on: gcc at -O0 and -O2, mingw-w64 at -O0 and -O2, and the
/// AArch64 cross compiler at -O2.
const CASES: [(Toolchain, &str); 5] = [
    (GCC, "-O0"),
    (GCC, "-O2"),
    (MINGW, "-O0"),
    (MINGW, "-O2"),
    (ARM64, "-O2"),
];

/// The fixed versions of `store.c` for one toolchain and level.
struct Versions {
    v1: Built,
    changed: Built,
    added: Built,
    renamed: Built,
    _dir: tempfile::TempDir,
}

fn versions(chain: Toolchain, opt: &str) -> Versions {
    let dir = tempfile::tempdir().unwrap();
    let at = dir.path();
    Versions {
        v1: build(at, chain, opt, STORE, &[], "v1"),
        changed: build(at, chain, opt, STORE, &["-DCHANGED"], "v2"),
        added: build(at, chain, opt, STORE, &["-DADDED"], "v3"),
        renamed: build(at, chain, opt, STORE, &["-DRENAMED", "-DCHANGED"], "v4"),
        _dir: dir,
    }
}

#[test]
fn one_added_function_is_the_only_difference_regression_15() {
    for (chain, opt) in CASES {
        let v = versions(chain, opt);
        let added_at = nm_functions(chain, &v.added.plain)["export_csv"];
        for (left, right) in [
            (&v.v1.plain, &v.added.plain),
            (&v.v1.stripped, &v.added.stripped),
        ] {
            let (l, r) = (image(left), image(right));
            let diff = compare_images(&l, &r);
            let s = diff.summary();
            let case = format!("{} {opt} {}", chain.cc, left.display());
            assert_eq!(s.status, DimensionStatus::Different, "{case}: {s:?}");
            assert_eq!(
                (s.added_total, s.removed_total, s.changed_total),
                (1, 0, 0),
                "{case}: {s:?} {:?}",
                all(&diff, ProcedureStatus::Changed)
            );
            // Identical thunks nothing tells apart (mingw-w64 at -O0) are ambiguous, not
            // paired in order.
            assert_eq!(
                s.unchanged_total + s.ambiguous_total,
                l.procedures().len() as u64,
                "{case}"
            );
            assert_eq!(r.procedures().len(), l.procedures().len() + 1, "{case}");
            let added = all(&diff, ProcedureStatus::Added);
            assert_eq!(added[0].right.as_ref().unwrap().address, added_at, "{case}");
        }
    }
}

#[test]
fn one_changed_body_is_the_only_difference() {
    for (chain, opt) in CASES {
        let v = versions(chain, opt);
        let before = nm_functions(chain, &v.v1.plain)["checksum"];
        let after = nm_functions(chain, &v.changed.plain)["checksum"];
        for (left, right, by_name) in [
            (&v.v1.plain, &v.changed.plain, true),
            (&v.v1.stripped, &v.changed.stripped, false),
        ] {
            let (l, r) = (image(left), image(right));
            let diff = compare_images(&l, &r);
            let s = diff.summary();
            let case = format!("{} {opt} {}", chain.cc, left.display());
            assert_eq!(
                (s.status, s.added_total, s.removed_total, s.changed_total),
                (DimensionStatus::Different, 0, 0, 1),
                "{case}: {s:?}"
            );
            assert_eq!(
                s.unchanged_total + s.ambiguous_total,
                l.procedures().len() as u64 - 1,
                "{case}"
            );
            let changed = all(&diff, ProcedureStatus::Changed)[0];
            assert_eq!(changed.left.as_ref().unwrap().address, before, "{case}");
            assert_eq!(changed.right.as_ref().unwrap().address, after, "{case}");
            let changes = changed.changes.as_ref().unwrap();
            assert!(changes.code, "{case}: {changes:?}");
            assert!(changes.constants.is_some(), "{case}: {changes:?}");
            assert!(
                changes.callees.is_none() && changes.strings.is_none(),
                "{case}"
            );
            if by_name {
                assert_eq!(changed.matched_by, Some(MatchReason::Name), "{case}");
            } else {
                // Nothing else carries the changed body: the pair is found by shape or
                // similarity.
                assert!(
                    matches!(
                        changed.matched_by,
                        Some(MatchReason::Shape | MatchReason::Similarity)
                    ),
                    "{case}: {changed:?}"
                );
            }
        }
    }
}

#[test]
fn renamed_identical_function_is_matched_by_bytes() {
    for (chain, opt) in CASES {
        let v = versions(chain, opt);
        let old = nm_functions(chain, &v.v1.plain)["trim_right"];
        let new = nm_functions(chain, &v.renamed.plain)["strip_trailing"];
        for (left, right) in [
            (&v.v1.plain, &v.renamed.plain),
            (&v.v1.stripped, &v.renamed.stripped),
        ] {
            let case = format!("{} {opt} {}", chain.cc, left.display());
            let diff = compare_images(&image(left), &image(right));
            let entry = diff.find_left(old).unwrap_or_else(|| panic!("{case}"));
            assert_eq!(
                entry.status,
                ProcedureStatus::Unchanged,
                "{case}: {entry:?}"
            );
            assert_eq!(entry.matched_by, Some(MatchReason::Bytes), "{case}");
            assert_eq!(entry.right.as_ref().unwrap().address, new, "{case}");
            let s = diff.summary();
            assert_eq!((s.added_total, s.removed_total, s.changed_total), (0, 0, 1));
        }
        let diff = compare_images(&image(&v.v1.plain), &image(&v.renamed.plain));
        let entry = diff.find_left(old).unwrap();
        assert_eq!(
            entry.left.as_ref().unwrap().name.as_deref(),
            Some("trim_right")
        );
        assert_eq!(
            entry.right.as_ref().unwrap().name.as_deref(),
            Some("strip_trailing")
        );
    }
}

#[test]
fn identical_builds_are_equal_and_pages_tile() {
    let dir = tempfile::tempdir().unwrap();
    let a = build(dir.path(), GCC, "-O2", STORE, &[], "a");
    let diff = compare_images(&image(&a.stripped), &image(&a.stripped));
    let s = diff.summary();
    assert_eq!(s.status, DimensionStatus::Equal);
    assert_eq!(
        s.unchanged_total,
        image(&a.stripped).procedures().len() as u64
    );
    let first = diff.page(&PageRequest {
        status: None,
        offset: 0,
        limit: 5,
    });
    assert_eq!((first.entries.len(), first.next_offset), (5, Some(5)));
    assert_eq!(first.total, s.unchanged_total);
    let rest = diff.page(&PageRequest {
        status: Some(ProcedureStatus::Unchanged),
        offset: 5,
        limit: 1000,
    });
    assert_eq!(rest.entries.len() as u64, s.unchanged_total - 5);
    assert_eq!(rest.next_offset, None);
    assert_eq!(
        diff.page(&PageRequest {
            status: None,
            offset: 0,
            limit: 0
        })
        .entries
        .len(),
        0
    );
    let none = diff.page(&PageRequest {
        status: Some(ProcedureStatus::Added),
        offset: 0,
        limit: 10,
    });
    assert_eq!((none.total, none.entries.len()), (0, 0));
    // Addresses are canonical text on the wire.
    let json = serde_json::to_value(&first).unwrap();
    let address = json["entries"][0]["left"]["address"].as_str().unwrap();
    assert!(address.starts_with("0x") && address == address.to_lowercase());
    assert_eq!(json["summary"]["status"], "equal");
}

#[test]
fn sides_that_cannot_be_compared_are_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let x86 = build(dir.path(), GCC, "-O2", STORE, &[], "x86");
    let arm = build(dir.path(), ARM64, "-O2", STORE, &[], "arm");
    let diff = compare_images(&image(&x86.stripped), &image(&arm.stripped));
    assert_eq!(diff.summary().status, DimensionStatus::Unknown);
    assert!(diff.summary().reasons[0].contains("architectures"));
    // A PowerPC slice has no decoder: two different ones cannot be compared, while a slice
    // and its byte-identical self are equal without decoding anything.
    let ppc_slice = |file: &str| {
        let doc = document(&format!("py2app/py2app/apptemplate/prebuilt/{file}"), None);
        admit(&doc.file)
            .unwrap()
            .documents
            .into_iter()
            .find(|d| d.architecture == "ppc")
            .unwrap()
    };
    let ppc = ppc_slice("main-universal");
    assert_eq!(
        compare_documents(&ppc, &ppc).summary().status,
        DimensionStatus::Equal
    );
    let diff = compare_documents(&ppc, &ppc_slice("secondary-universal"));
    assert_eq!(diff.summary().status, DimensionStatus::Unknown);
    assert!(
        diff.summary().reasons[0].contains("cannot be analyzed"),
        "{:?}",
        diff.summary()
    );
    // A document whose bytes lie past the end of its file (the file is read through the
    // descriptor kept since admission, so renaming or deleting it would change nothing).
    let mut gone = ppc.clone();
    gone.offset = u64::MAX / 2;
    let diff = compare_documents(&gone, &ppc);
    assert_eq!(diff.summary().status, DimensionStatus::Unknown);
    assert!(diff.summary().reasons[0].contains("cannot be loaded"));
}

/// [`corpus::agreement`] over loaded images and a comparison.
fn agreement(plain_left: &Image, plain_right: &Image, stripped: &ProcedureDiff) -> (usize, usize) {
    let names = |image: &Image| -> Vec<(u64, Option<String>)> {
        image
            .procedures()
            .iter()
            .map(|p| (p.address, p.name.clone()))
            .collect()
    };
    let pairs: Vec<(Option<u64>, Option<u64>)> = stripped
        .entries()
        .iter()
        .map(|e| {
            (
                e.left.as_ref().map(|s| s.address),
                e.right.as_ref().map(|s| s.address),
            )
        })
        .collect();
    corpus::agreement(&names(plain_left), &names(plain_right), &pairs)
}

#[test]
fn stripped_matching_agrees_with_names_at_o2() {
    let pair = corpus::generate(18, 200);
    for chain in [GCC, MINGW, ARM64] {
        let dir = tempfile::tempdir().unwrap();
        let v1 = build(dir.path(), chain, "-O2", &pair.v1, &[], "g1");
        let v2 = build(dir.path(), chain, "-O2", &pair.v2, &[], "g2");
        let stripped = compare_images(&image(&v1.stripped), &image(&v2.stripped));
        let (agree, considered) = agreement(&image(&v1.plain), &image(&v2.plain), &stripped);
        let share = agree as f64 / considered as f64;
        eprintln!(
            "{} -O2: stripped matching agrees with names for {agree} of {considered} procedures ({:.2}%); {:?}",
            chain.cc,
            share * 100.0,
            stripped.summary()
        );
        assert!(considered > 200, "{considered}");
        assert!(share >= 0.95, "{}: {agree}/{considered}", chain.cc);
        // The unstripped pair, matched by name, reports every change the generator made to a
        // function the compiler kept out of line.
        let (left, right) = (image(&v1.plain), image(&v2.plain));
        let plain = compare_images(&left, &right);
        let fate = |name: &str| {
            plain.entries().iter().find_map(|e| {
                let named = |s: &Option<ProcedureSide>| {
                    s.as_ref().is_some_and(|s| s.name.as_deref() == Some(name))
                };
                (named(&e.left) || named(&e.right)).then_some(e.status)
            })
        };
        let (s1, s2) = (
            nm_functions(chain, &v1.plain),
            nm_functions(chain, &v2.plain),
        );
        for name in pair
            .changed
            .iter()
            .filter(|n| s1.contains_key(*n) && s2.contains_key(*n))
        {
            assert_eq!(
                fate(name),
                Some(ProcedureStatus::Changed),
                "{}: {name}",
                chain.cc
            );
        }
        for name in pair.added.iter().filter(|n| s2.contains_key(*n)) {
            assert_eq!(
                fate(name),
                Some(ProcedureStatus::Added),
                "{}: {name}",
                chain.cc
            );
        }
        for name in pair.removed.iter().filter(|n| s1.contains_key(*n)) {
            assert_eq!(
                fate(name),
                Some(ProcedureStatus::Removed),
                "{}: {name}",
                chain.cc
            );
        }
    }
}

#[test]
fn seven_zip_19_00_to_21_07_is_not_equal_regression_15() {
    let left = document("7zip-bin-5.1.1/package/win/x64/7za.exe", None);
    let right = document("7zip-bin-5.2.0/package/win/x64/7za.exe", None);
    let diff = compare_documents(&left, &right);
    let s = diff.summary();
    let same_body = diff
        .entries()
        .iter()
        .filter(|e| e.status == ProcedureStatus::Ambiguous)
        .filter(|e| {
            let l = e.left.as_ref().unwrap();
            e.candidates
                .iter()
                .all(|c| (c.size, c.instructions) == (l.size, l.instructions))
        })
        .count();
    eprintln!("7za.exe x64 19.00 -> 21.07: {s:?}; {same_body} ambiguous among like bodies");
    assert_eq!(s.status, DimensionStatus::Different);
    // The tables (`.pdata`, exports, entry, import thunks) list 4,858 and 5,087 procedures;
    // the leaf functions `.pdata` omits are found by following code, and every procedure of
    // either inventory takes part.
    let inventory = |doc: &DocumentSpec| {
        let image = Image::load(doc).unwrap();
        let listed = image
            .procedures()
            .iter()
            .filter(|p| p.found_by.is_none())
            .count() as u64;
        (listed, image.procedures().len() as u64)
    };
    let ((left_listed, left_total), (right_listed, right_total)) =
        (inventory(&left), inventory(&right));
    assert_eq!((left_listed, right_listed), (4858, 5087));
    assert!(left_total > left_listed && right_total > right_listed);
    assert_eq!(diff.left().procedures, left_total);
    assert_eq!(diff.right().procedures, right_total);
    let matched = s.changed_total + s.unchanged_total;
    // Ambiguous procedures are on the left; their candidates are neither matched nor added.
    let candidates: std::collections::BTreeSet<u64> = diff
        .entries()
        .iter()
        .flat_map(|e| e.candidates.iter().map(|c| c.address))
        .collect();
    assert_eq!(
        matched + s.uncertain_total + s.removed_total + s.ambiguous_total,
        left_total
    );
    assert_eq!(
        matched + s.uncertain_total + s.added_total + candidates.len() as u64,
        right_total
    );
    let by = s.matched_by;
    assert_eq!(by.name + by.bytes + by.shape + by.similarity, matched);
    // Stripped: only the names the file itself gives (import thunks, `main` found from the
    // entry) match by name, each once; the version moved, so bodies changed.
    let names = |doc: &DocumentSpec| -> std::collections::BTreeSet<String> {
        Image::load(doc)
            .unwrap()
            .procedures()
            .iter()
            .filter_map(|p| p.name.clone())
            .collect()
    };
    let shared = names(&left).intersection(&names(&right)).count() as u64;
    assert!(shared < 20, "{shared}");
    assert_eq!(by.name, shared);
    assert!(
        s.added_total + candidates.len() as u64 >= right_total.saturating_sub(left_total)
            && s.changed_total > 0
    );
    // Most of 7-Zip's ambiguous procedures are bodies a duplicate shares (COM stubs reached only
    // through vtables): nothing tells their copies apart.
    assert!(same_body * 2 > s.ambiguous_total as usize, "{same_body}");
    // Every changed entry says what changed; unchanged ones are matched by an exact pass.
    for e in diff.entries() {
        match e.status {
            ProcedureStatus::Changed => assert!(e.changes.is_some()),
            ProcedureStatus::Unchanged => assert!(e.changes.is_none()),
            ProcedureStatus::Uncertain => {
                assert!(e.score.is_some_and(|s| s < SIMILARITY_THRESHOLD), "{e:?}")
            }
            ProcedureStatus::Ambiguous => assert!(!e.candidates.is_empty()),
            _ => assert!(e.matched_by.is_none()),
        }
    }
    // The instruction-level diff agrees with the status (issue 28; every tenth pair, for
    // time): an unchanged pair lists no line, a changed one at least one, and the largest
    // body is cut at 2000 instructions and 200 lines, and says so.
    let (l, r) = (Image::load(&left).unwrap(), Image::load(&right).unwrap());
    let detail = |e: &ProcedureEntry| {
        let (a, b) = (e.left.as_ref().unwrap(), e.right.as_ref().unwrap());
        pair_detail(&diff, &l, &r, a.address, b.address).unwrap()
    };
    let pairs: Vec<&ProcedureEntry> = diff
        .entries()
        .iter()
        .filter(|e| {
            matches!(
                e.status,
                ProcedureStatus::Changed | ProcedureStatus::Unchanged
            )
        })
        .collect();
    for e in pairs.iter().step_by(10) {
        let d = detail(e);
        let listed = d.lines.iter().any(|x| x.kind != LineKind::Kept);
        assert_eq!(listed, e.status == ProcedureStatus::Changed, "{e:?}: {d:?}");
    }
    let largest = pairs
        .iter()
        .max_by_key(|e| e.left.as_ref().unwrap().instructions)
        .unwrap();
    assert!(largest.left.as_ref().unwrap().instructions > 2000);
    let d = detail(largest);
    assert!(d.truncated && d.lines.len() == MAX_DETAIL_LINES);
    assert!(d.kept + d.removed <= 2000 && d.kept + d.added <= 2000);
}

#[test]
fn summaries_combine_and_schemas_document_fields() {
    let dir = tempfile::tempdir().unwrap();
    let a = build(dir.path(), GCC, "-O0", STORE, &[], "a");
    let b = build(dir.path(), GCC, "-O0", STORE, &["-DADDED"], "b");
    let equal = compare_images(&image(&a.stripped), &image(&a.stripped));
    let different = compare_images(&image(&a.stripped), &image(&b.stripped));
    // The same inputs give the same result, so recorded Evidence has one id.
    assert_eq!(
        different,
        compare_images(&image(&a.stripped), &image(&b.stripped))
    );
    let arm = build(dir.path(), ARM64, "-O0", STORE, &[], "arm");
    let unknown = compare_images(&image(&a.stripped), &image(&arm.stripped));
    let s = ProceduresSummary::combine([equal.summary(), equal.summary()]);
    assert_eq!(s.status, DimensionStatus::Equal);
    assert_eq!(s.unchanged_total, 2 * equal.summary().unchanged_total);
    let s = ProceduresSummary::combine([equal.summary(), unknown.summary()]);
    assert_eq!((s.status, s.reasons.len()), (DimensionStatus::Unknown, 1));
    let s = ProceduresSummary::combine([unknown.summary(), different.summary()]);
    assert_eq!((s.status, s.added_total), (DimensionStatus::Different, 1));
    // Field docs become the schema agents read; addresses are text.
    let page = serde_json::to_value(schemars::schema_for!(ProcedureDiffPage)).unwrap();
    let paths = serde_json::to_value(schemars::schema_for!(
        crate::analyzers::callpaths::CallPaths
    ))
    .unwrap();
    let summary = serde_json::to_value(schemars::schema_for!(ProceduresSummary)).unwrap();
    assert_eq!(
        page["$defs"]["ProcedureSide"]["properties"]["address"]["type"],
        "string"
    );
    assert_eq!(
        paths["$defs"]["NodeRef"]["properties"]["address"]["type"],
        "string"
    );
    assert!(
        summary["properties"]["status"]["description"]
            .as_str()
            .unwrap()
            .contains("unknown")
    );
    let page = different.page(&PageRequest {
        status: Some(ProcedureStatus::Added),
        offset: 0,
        limit: 10,
    });
    let json = serde_json::to_value(&page).unwrap();
    assert_eq!(json["summary"]["status"], "different");
    assert_eq!(json["entries"][0]["status"], "added");
    assert_eq!(json["entries"][0]["left"], serde_json::Value::Null);
    let back: ProcedureDiffPage = serde_json::from_value(json).unwrap();
    assert_eq!(back, page);
}

const OPS: &str = include_str!("testdata/ops.c");

/// `ops.c` and its `-DV2`, at -O2 with `chain`, compared stripped; the diff and both `nm` maps.
fn ops_pair(
    chain: Toolchain,
) -> (
    ProcedureDiff,
    ProcedureDiff,
    std::collections::BTreeMap<String, u64>,
    std::collections::BTreeMap<String, u64>,
) {
    let dir = tempfile::tempdir().unwrap();
    let v1 = build(dir.path(), chain, "-O2", OPS, &[], "ops1");
    let v2 = build(dir.path(), chain, "-O2", OPS, &["-DV2"], "ops2");
    let stripped = compare_images(&image(&v1.stripped), &image(&v2.stripped));
    let plain = compare_images(&image(&v1.plain), &image(&v2.plain));
    (
        stripped,
        plain,
        nm_functions(chain, &v1.plain),
        nm_functions(chain, &v2.plain),
    )
}

#[test]
fn a_new_constant_is_reported_on_x86_64_and_arm64_regression_28() {
    for chain in [GCC, ARM64] {
        let (stripped, _, n1, _) = ops_pair(chain);
        let e = stripped.find_left(n1["op_mul"]).unwrap();
        assert_eq!(e.status, ProcedureStatus::Changed, "{}: {e:?}", chain.cc);
        let changes = e.changes.as_ref().unwrap();
        assert_eq!(
            changes.constants.as_ref().map(|c| c.added.clone()),
            Some(vec!["0x1337".to_string()]),
            "{}: {changes:?}",
            chain.cc
        );
        // Only what differs is listed: the instruction count is the same, so it is absent.
        assert!(changes.code, "{}: {changes:?}", chain.cc);
        assert!(changes.callees.is_none() && changes.strings.is_none());
        for d in [changes.size, changes.blocks, changes.instructions]
            .into_iter()
            .flatten()
        {
            assert_ne!(d.left, d.right, "{}: {changes:?}", chain.cc);
        }
    }
}

#[test]
fn a_replaced_function_is_removed_and_added_not_changed_regression_28() {
    for chain in [GCC, ARM64] {
        let (stripped, plain, n1, n2) = ops_pair(chain);
        for diff in [&stripped, &plain] {
            let gone = diff.find_left(n1["dump_table"]).unwrap();
            let new = diff.find_right(n2["count_big"]).unwrap();
            assert!(
                gone.status == ProcedureStatus::Removed && new.status == ProcedureStatus::Added
                    || gone.status == ProcedureStatus::Uncertain && gone == new,
                "{}: {gone:?} {new:?}",
                chain.cc
            );
            assert_ne!(gone.status, ProcedureStatus::Changed);
        }
    }
}

#[test]
fn duplicated_identical_bodies_are_ambiguous_unless_unique_regression_28() {
    for chain in [GCC, ARM64] {
        let (stripped, _, n1, n2) = ops_pair(chain);
        let s = stripped.summary();
        // twin_a and twin_b share a body and one of them is gone: which one, only names say.
        for twin in ["twin_a", "twin_b"] {
            let e = stripped.find_left(n1[twin]).unwrap();
            assert_eq!(e.status, ProcedureStatus::Ambiguous, "{}: {e:?}", chain.cc);
            assert_eq!(
                e.candidates.iter().map(|c| c.address).collect::<Vec<_>>(),
                vec![n2["twin_b"]],
                "{}",
                chain.cc
            );
            assert!(e.right.is_none() && e.confidence.is_none());
        }
        assert_eq!(s.ambiguous_total, 2, "{}: {s:?}", chain.cc);
        // The remaining twin is a candidate, not an added procedure.
        assert!(stripped.find_right(n2["twin_b"]).is_none(), "{}", chain.cc);
        // A body that occurs once on each side is exact, with what agreed.
        let e = stripped.find_left(n1["op_add"]).unwrap();
        assert_eq!(
            (e.status, e.confidence, e.agreed.clone()),
            (
                ProcedureStatus::Unchanged,
                Some(MatchClass::Exact),
                vec![Feature::Bytes]
            ),
            "{}",
            chain.cc
        );
    }
}

#[test]
fn a_new_callee_is_named_and_matched_callees_are_not_changes_regression_28() {
    for chain in [GCC, ARM64] {
        let (stripped, plain, n1, _) = ops_pair(chain);
        let e = plain.find_left(n1["run_ops"]).unwrap();
        let callees = e.changes.as_ref().and_then(|c| c.callees.clone());
        assert_eq!(
            callees.map(|c| (c.added, c.removed)),
            Some((vec!["op_neg".to_string()], vec![])),
            "{}: {e:?}",
            chain.cc
        );
        // Stripped, the callee is its address; op_add, op_sub and op_mul are the matched
        // counterparts, so they are no change.
        let e = stripped.find_left(n1["run_ops"]).unwrap();
        let callees = e.changes.as_ref().and_then(|c| c.callees.clone()).unwrap();
        assert_eq!(
            (callees.added_total, callees.removed_total),
            (1, 0),
            "{}: {e:?}",
            chain.cc
        );
    }
}

#[test]
fn byte_identical_documents_are_equal_without_matching_regression_28() {
    // 7za for x86-64 macOS is the same file in 7zip-bin 5.1.1 and 5.2.0.
    let left = document("7zip-bin-5.1.1/package/mac/x64/7za", None);
    let right = document("7zip-bin-5.2.0/package/mac/x64/7za", None);
    let started = std::time::Instant::now();
    let (l, r) = (Image::load(&left).unwrap(), Image::load(&right).unwrap());
    let loaded = started.elapsed();
    let diff = compare_images(&l, &r);
    eprintln!(
        "identical 7za mac/x64: {:?}; loaded in {loaded:?}, compared in {:?}",
        diff.summary(),
        started.elapsed() - loaded
    );
    let s = diff.summary();
    assert_eq!(s.status, DimensionStatus::Equal);
    assert_eq!(s.unchanged_total, diff.left().procedures);
    assert_eq!(s.matched_by.bytes, s.unchanged_total);
    assert_eq!(diff.notes(), ["the documents are byte for byte identical"]);
    assert!(
        diff.entries()
            .iter()
            .all(|e| e.left == e.right && e.confidence == Some(MatchClass::Exact))
    );
}

#[test]
fn the_detail_of_op_mul_adds_its_constant_and_keeps_the_rest_on_x86_64_and_arm64_regression_28() {
    for chain in [GCC, ARM64] {
        let dir = tempfile::tempdir().unwrap();
        let v1 = build(dir.path(), chain, "-O2", OPS, &[], "ops1");
        let v2 = build(dir.path(), chain, "-O2", OPS, &["-DV2"], "ops2");
        let (l, r) = (image(&v1.stripped), image(&v2.stripped));
        let diff = compare_images(&l, &r);
        let (n1, n2) = (
            nm_functions(chain, &v1.plain),
            nm_functions(chain, &v2.plain),
        );
        let d = pair_detail(&diff, &l, &r, n1["op_mul"], n2["op_mul"]).unwrap();
        let left = diff.find_left(n1["op_mul"]).unwrap().left.clone().unwrap();
        // Every instruction of v1 is kept; what v2 adds is only added lines, and they hold
        // the new constant (in decimal on arm64, as llvm-objdump writes it).
        assert_eq!(
            (d.kept, d.removed),
            (u64::from(left.instructions), 0),
            "{}: {d:?}",
            chain.cc
        );
        let added: Vec<&str> = d
            .lines
            .iter()
            .filter(|x| x.kind != LineKind::Kept)
            .inspect(|x| assert_eq!(x.kind, LineKind::Added, "{}: {d:?}", chain.cc))
            .map(|x| x.text.as_str())
            .collect();
        assert_eq!(added.len() as u64, d.added);
        let constant = if chain.cc == ARM64.cc {
            "#4919"
        } else {
            "0x1337"
        };
        assert!(
            added.iter().any(|t| t.ends_with(constant)),
            "{}: {added:?}",
            chain.cc
        );
    }
}
