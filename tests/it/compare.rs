//! compare_procedures, call_paths, and compare_artifacts/verify_reconstruction at function level
//! through MCP (issue 18), on programs built here: the versions of procdiff's `store.c`
//! (`-DCHANGED` changes the body of `checksum`, `-DADDED` adds `export_csv`), whose truth is the
//! source and `readelf` on the unstripped twin, procdiff's `ops.c` (`-DV2`: `op_mul` gains a
//! constant, `run_ops` a call) for the instruction-level diff of one pair, whose truth is
//! objdump's listing, the corpus' `graph.c` for call paths, and the real 7-Zip pair.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::common::{Harness, fixture, start};
use crate::corpus::reference::{self, Disassembler};
use crate::corpus::{self, Opt, Source, Toolchain, Variant, run};

const STORE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/src/analyzers/procdiff/testdata/store.c"
);

/// One version of `store.c` at one level, with and without symbols.
pub(crate) struct Built {
    pub(crate) plain: PathBuf,
    pub(crate) stripped: PathBuf,
}

const OPS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/src/analyzers/procdiff/testdata/ops.c"
);

/// Builds `store.c` with `defines` by gcc at `opt` into `dir`, and strips a copy.
pub(crate) fn build(dir: &Path, opt: &str, defines: &[&str], stem: &str) -> Built {
    build_source(dir, STORE, opt, defines, stem)
}

/// Builds `source` with `defines` by gcc at `opt` into `dir`, and strips a copy.
fn build_source(dir: &Path, source: &str, opt: &str, defines: &[&str], stem: &str) -> Built {
    let plain = dir.join(format!("{stem}{opt}"));
    let stripped = dir.join(format!("{stem}{opt}-stripped"));
    let mut args = vec![opt, "-o", plain.to_str().unwrap(), source];
    args.extend(defines);
    run("gcc", &args);
    run(
        "strip",
        &["-o", stripped.to_str().unwrap(), plain.to_str().unwrap()],
    );
    Built { plain, stripped }
}

/// The address `readelf` gives the function `name` in `path`.
pub(crate) fn function_at(path: &Path, name: &str) -> u64 {
    let found: Vec<u64> = reference::functions(path, Toolchain::ElfX64)
        .into_iter()
        .filter(|s| s.name == name)
        .map(|s| s.address)
        .collect();
    assert_eq!(found.len(), 1, "{name} in {}: {found:x?}", path.display());
    found[0]
}

pub(crate) fn hex(address: u64) -> String {
    format!("0x{address:x}")
}

/// Opens and inspects `path`; its manifest id.
pub(crate) async fn inspected(h: &Harness, path: &Path) -> String {
    inspected_counted(h, path).await.0
}

/// Opens and inspects `path`; its manifest id and how many procedures open_binary found.
async fn inspected_counted(h: &Harness, path: &Path) -> (String, u64) {
    let opened = h.call("open_binary", json!({ "path": path })).await;
    let inv = h.call("inspect_artifact", json!({})).await;
    (
        inv["manifest"]["id"].as_str().unwrap().to_owned(),
        opened["documents"][0]["procedures"].as_u64().unwrap(),
    )
}

/// The totals of a summary or `procedures` section, in one tuple.
fn totals(v: &Value) -> (&str, u64, u64, u64, u64) {
    (
        v["status"].as_str().unwrap(),
        v["added_total"].as_u64().unwrap(),
        v["removed_total"].as_u64().unwrap(),
        v["changed_total"].as_u64().unwrap(),
        v["unchanged_total"].as_u64().unwrap(),
    )
}

#[tokio::test]
async fn stripped_builds_compare_function_by_function_through_the_tool() {
    let dir = tempfile::tempdir().unwrap();
    for opt in ["-O0", "-O2"] {
        let v1 = build(dir.path(), opt, &[], "v1");
        let v2 = build(dir.path(), opt, &["-DCHANGED"], "v2");
        let v3 = build(dir.path(), opt, &["-DADDED"], "v3");
        let h = start().await;
        let m1 = inspected(&h, &v1.stripped).await;
        let m2 = inspected(&h, &v2.stripped).await;
        let m3 = inspected(&h, &v3.stripped).await;

        // v1 → v3: exactly one procedure added, export_csv where readelf puts it.
        let added = h
            .call(
                "compare_procedures",
                json!({ "left_manifest_id": m1, "right_manifest_id": m3, "status": "added" }),
            )
            .await;
        let procs = added["left"]["procedures"].as_u64().unwrap();
        assert_eq!(
            added["right"]["procedures"].as_u64().unwrap(),
            procs + 1,
            "{opt}"
        );
        assert_eq!(
            totals(&added["summary"]),
            ("different", 1, 0, 0, procs),
            "{opt}: {}",
            added["summary"]
        );
        let by = &added["summary"]["matched_by"];
        let matched: u64 = ["name", "bytes", "shape", "similarity"]
            .iter()
            .map(|k| by[k].as_u64().unwrap())
            .sum();
        assert_eq!(matched, procs, "{opt}: {by}");
        assert_eq!(added["total"], 1);
        assert_eq!(added["entries"].as_array().unwrap().len(), 1);
        assert_eq!(
            added["entries"][0]["right"]["address"],
            hex(function_at(&v3.plain, "export_csv")),
            "{opt}: {}",
            added["entries"][0]
        );
        assert_eq!(added["evidence"]["links"].as_array().unwrap().len(), 2);

        // v1 → v2: exactly one body changed (checksum), every other procedure unchanged.
        let changed = h
            .call(
                "compare_procedures",
                json!({ "left_manifest_id": m1, "right_manifest_id": m2, "status": "changed" }),
            )
            .await;
        assert_eq!(
            totals(&changed["summary"]),
            ("different", 0, 0, 1, procs - 1),
            "{opt}: {}",
            changed["summary"]
        );
        let entry = &changed["entries"][0];
        assert_eq!(
            entry["left"]["address"],
            hex(function_at(&v1.plain, "checksum")),
            "{opt}"
        );
        assert_eq!(
            entry["right"]["address"],
            hex(function_at(&v2.plain, "checksum")),
            "{opt}"
        );
        assert!(
            matches!(entry["matched_by"].as_str(), Some("shape" | "similarity")),
            "{opt}: nothing else carries a changed body: {entry}"
        );
        // A score says how similar a pair matched by similarity is; exact passes have none.
        assert_eq!(
            entry["score"].is_f64(),
            entry["matched_by"] == "similarity",
            "{entry}"
        );
        // One constant and one operation changed; calls and strings did not.
        assert!(entry["changes"]["constants"].is_object(), "{entry}");
        assert!(entry["changes"]["callees"].is_null(), "{entry}");
        assert!(entry["changes"]["strings"].is_null(), "{entry}");

        // Every entry, paged: the pages tile the whole comparison.
        let mut seen = 0;
        let mut offset = Some(0u64);
        while let Some(at) = offset {
            let page = h
                .call(
                    "compare_procedures",
                    json!({ "left_manifest_id": m1, "right_manifest_id": m2, "offset": at, "limit": 7 }),
                )
                .await;
            assert_eq!(page["total"].as_u64(), Some(procs), "{opt}");
            seen += page["entries"].as_array().unwrap().len() as u64;
            offset = page["next_offset"].as_u64();
        }
        assert_eq!(seen, procs, "{opt}");
    }
}

#[tokio::test]
async fn compare_artifacts_counts_procedures_not_names_regression_15() {
    let dir = tempfile::tempdir().unwrap();
    let v1 = build(dir.path(), "-O2", &[], "v1");
    let v2 = build(dir.path(), "-O2", &["-DCHANGED"], "v2");
    let v3 = build(dir.path(), "-O2", &["-DADDED"], "v3");
    let h = start().await;
    let (s1, stripped_procs) = inspected_counted(&h, &v1.stripped).await;
    let s3 = inspected(&h, &v3.stripped).await;
    let (p1, procs) = inspected_counted(&h, &v1.plain).await;
    let p2 = inspected(&h, &v2.plain).await;

    // Stripped, one function added: the names are the same, the procedures are not.
    let added = h
        .call(
            "compare_artifacts",
            json!({ "left_manifest_id": s1, "right_manifest_id": s3 }),
        )
        .await;
    let p = &added["procedures"];
    assert_eq!(p["status"], "different", "{p}");
    assert_eq!(totals(p), ("different", 1, 0, 0, stripped_procs), "{p}");
    assert_eq!(p["parts"].as_array().unwrap().len(), 1, "{p}");
    assert_eq!(p["parts"][0]["added_total"], 1);

    // Same names, one changed body.
    let changed = h
        .call(
            "compare_artifacts",
            json!({ "left_manifest_id": p1, "right_manifest_id": p2 }),
        )
        .await;
    let p = &changed["procedures"];
    assert_eq!(p["status"], "different", "{p}");
    assert_eq!(totals(p), ("different", 0, 0, 1, procs - 1), "{p}");
    assert_eq!(
        p["matched_by"]["name"], procs,
        "{p}: unstripped, all by name"
    );

    // A false no_change fails; the function-level claims hold.
    let cmp_id = changed["evidence"]["id"].as_str().unwrap();
    let page = h
        .call(
            "compare_procedures",
            json!({ "left_manifest_id": p1, "right_manifest_id": p2, "limit": 1000 }),
        )
        .await;
    let page_id = page["evidence"]["id"].as_str().unwrap();
    let checksum = hex(function_at(&v2.plain, "checksum"));
    let verdict = h
        .call(
            "verify_reconstruction",
            json!({ "spec": { "claims": [
                { "claim": "no_change", "comparison_evidence_id": cmp_id, "dimension": "procedures" },
                { "claim": "changed", "comparison_evidence_id": cmp_id, "dimension": "procedures" },
                { "claim": "procedure_changed", "comparison_evidence_id": page_id, "procedure": "checksum" },
                { "claim": "procedure_changed", "comparison_evidence_id": page_id, "procedure": checksum },
                { "claim": "procedure_unchanged", "comparison_evidence_id": page_id, "procedure": "hash_key" },
                { "claim": "procedure_unchanged", "comparison_evidence_id": page_id, "procedure": "checksum" },
                { "claim": "procedures_added", "comparison_evidence_id": added["evidence"]["id"], "count": 1 },
                { "claim": "procedures_added", "comparison_evidence_id": cmp_id, "count": 1 },
                { "claim": "procedure_unchanged", "comparison_evidence_id": cmp_id, "procedure": "hash_key" }
            ] } }),
        )
        .await;
    let statuses: Vec<&str> = verdict["claims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["status"].as_str().unwrap())
        .collect();
    assert_eq!(
        statuses,
        [
            "fail", "pass", "pass", "pass", "pass", "fail", "pass", "fail", "unknown"
        ],
        "{verdict}"
    );
    assert_eq!(verdict["status"], "fail");
    assert_eq!(
        verdict["claims"][5]["reason"],
        "the comparison recorded procedure checksum changed, not unchanged"
    );
}

#[tokio::test]
async fn seven_zip_totals_are_the_engines_through_both_tools() {
    let h = start().await;
    let left = inspected(&h, &fixture("7zip-bin-5.1.1/package/win/x64/7za.exe")).await;
    let right = inspected(&h, &fixture("7zip-bin-5.2.0/package/win/x64/7za.exe")).await;
    let page = h
        .call(
            "compare_procedures",
            json!({ "left_manifest_id": left, "right_manifest_id": right, "status": "removed", "limit": 3 }),
        )
        .await;
    // `.pdata` and the other tables list 4,858 and 5,087; following code finds the leaf
    // functions `.pdata` omits.
    assert_eq!(page["left"]["procedures"], 5717);
    assert_eq!(page["right"]["procedures"], 6011);
    assert_eq!(
        totals(&page["summary"]),
        ("different", 283, 155, 1010, 3302),
        "{}",
        page["summary"]
    );
    // Identical bodies nothing tells apart (COM stubs reached only through vtables) are
    // ambiguous rather than paired in order; pairs by position alone are uncertain.
    assert_eq!(page["summary"]["ambiguous_total"], 1199);
    assert_eq!(page["summary"]["uncertain_total"], 51);
    assert_eq!(page["total"], 155);
    assert_eq!(page["next_offset"], 3);
    let cmp = h
        .call(
            "compare_artifacts",
            json!({ "left_manifest_id": left, "right_manifest_id": right }),
        )
        .await;
    let p = &cmp["procedures"];
    assert_eq!(totals(p), ("different", 283, 155, 1010, 3302), "{p}");
    assert_eq!(p["matched_by"], page["summary"]["matched_by"]);
}

#[tokio::test]
async fn a_side_that_cannot_be_compared_is_unknown_not_equal() {
    // x86-64 against AArch64: both load, their bodies cannot be compared.
    let h = start().await;
    let [x64, a64] = [Toolchain::ElfX64, Toolchain::ElfA64]
        .map(|t| corpus::build(Variant::new(Source::Graph, t, Opt::O2, true)));
    let left = inspected(&h, &x64).await;
    let right = inspected(&h, &a64).await;
    let page = h
        .call(
            "compare_procedures",
            json!({ "left_manifest_id": left, "right_manifest_id": right }),
        )
        .await;
    assert_eq!(page["summary"]["status"], "unknown", "{}", page["summary"]);
    assert_eq!(
        page["summary"]["reasons"][0],
        "the documents have different architectures (x86_64 and arm64), so their procedure bodies cannot be compared"
    );
    assert_eq!(page["total"], 0);
    let cmp = h
        .call(
            "compare_artifacts",
            json!({ "left_manifest_id": left, "right_manifest_id": right }),
        )
        .await;
    assert_eq!(
        cmp["procedures"]["status"], "unknown",
        "{}",
        cmp["procedures"]
    );
}

/// objdump's instructions of `function` in `path`, trailing padding left out as rea leaves it.
fn body_listing(path: &Path, function: &str) -> Vec<reference::Insn> {
    let mut body: Vec<reference::Insn> =
        reference::listing(path, Toolchain::ElfX64, Disassembler::Gnu)
            .into_iter()
            .filter(|i| i.function.as_deref() == Some(function))
            .collect();
    // `nop`, `cs nop …`, `int3`.
    while body.last().is_some_and(|i| {
        i.mnemonic == "int3" || format!("{} {}", i.mnemonic, i.operands).contains("nop")
    }) {
        body.pop();
    }
    body
}

/// The `(kind, left, right, text, right_text)` of each line of a detail.
fn detail_lines(detail: &Value) -> Vec<(String, Value, Value, String, Value)> {
    detail["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["kind"].as_str().unwrap().to_owned(),
                l["left"].clone(),
                l["right"].clone(),
                l["text"].as_str().unwrap().to_owned(),
                l["right_text"].clone(),
            )
        })
        .collect()
}

#[tokio::test]
async fn detail_of_one_pair_shows_the_new_constant_and_nothing_else_regression_28() {
    let dir = tempfile::tempdir().unwrap();
    let v1 = build_source(dir.path(), OPS, "-O2", &[], "ops1");
    let v2 = build_source(dir.path(), OPS, "-O2", &["-DV2"], "ops2");
    // objdump's op_mul: v2 is v1 with one instruction, `add rax,0x1337`, put in.
    let (old, new) = (
        body_listing(&v1.plain, "op_mul"),
        body_listing(&v2.plain, "op_mul"),
    );
    assert_eq!(new.len(), old.len() + 1);
    let k = new
        .iter()
        .position(|i| i.mnemonic == "add" && i.operands.ends_with(",0x1337"))
        .expect("v2's op_mul adds 0x1337");
    // The new one, with the kept instructions within three of it, in order.
    let first = k.saturating_sub(3);
    let mut expected: Vec<_> = old
        .iter()
        .enumerate()
        .take(k + 3)
        .skip(first)
        .map(|(i, kept)| {
            let j = if i < k { i } else { i + 1 };
            let text = format!("{} {}", kept.mnemonic, kept.operands.replace(',', ", "));
            (
                "kept".to_owned(),
                json!(hex(kept.address)),
                json!(hex(new[j].address)),
                text.trim_end().to_owned(),
                Value::Null,
            )
        })
        .collect();
    expected.insert(
        k - first,
        (
            "added".to_owned(),
            Value::Null,
            json!(hex(new[k].address)),
            "add rax, 0x1337".to_owned(),
            Value::Null,
        ),
    );

    let h = start().await;
    for stripped in [false, true] {
        let side = |b: &Built| {
            if stripped {
                b.stripped.clone()
            } else {
                b.plain.clone()
            }
        };
        let m1 = inspected(&h, &side(&v1)).await;
        let m2 = inspected(&h, &side(&v2)).await;
        // Stripped, the pair is named by its left address; with symbols, by name.
        let which = if stripped {
            hex(function_at(&v1.plain, "op_mul"))
        } else {
            "op_mul".to_owned()
        };
        let page = h
            .call(
                "compare_procedures",
                json!({ "left_manifest_id": m1, "right_manifest_id": m2, "detail": which }),
            )
            .await;
        let case = format!("stripped {stripped}, {which}: {page}");
        assert_eq!(page["total"], 1, "{case}");
        assert_eq!(page["next_offset"], Value::Null, "{case}");
        let entry = &page["entries"][0];
        assert_eq!(entry["status"], "changed", "{case}");
        assert_eq!(entry["left"]["address"], hex(old[0].address), "{case}");
        assert_eq!(entry["right"]["address"], hex(new[0].address), "{case}");
        let detail = &page["detail"];
        assert_eq!(
            (&detail["kept"], &detail["removed"], &detail["added"]),
            (&json!(old.len()), &json!(0), &json!(1)),
            "{case}"
        );
        assert_eq!(detail_lines(detail), expected, "{case}");
        assert_eq!(detail["lines_total"], expected.len(), "{case}");
        assert_eq!(detail["truncated"], false, "{case}");
        // The diff is Evidence like any page, located at the right procedure.
        let stored = h
            .call(
                "get_evidence",
                json!({ "evidence_id": page["evidence"]["id"] }),
            )
            .await;
        assert_eq!(stored["record"]["result"]["detail"], *detail, "{case}");
        assert_eq!(stored["record"]["parameters"]["detail"], which, "{case}");
        assert_eq!(
            stored["record"]["locations"][0]["address"],
            hex(new[0].address),
            "{case}"
        );
    }
    // A pair that only moved (op_add, exact) shows no line: its instructions are all kept.
    let page = h
        .call(
            "compare_procedures",
            json!({ "left_manifest_id": inspected(&h, &v1.stripped).await,
                    "right_manifest_id": inspected(&h, &v2.stripped).await,
                    "detail": hex(function_at(&v1.plain, "op_add")) }),
        )
        .await;
    let add = body_listing(&v1.plain, "op_add");
    assert_ne!(
        function_at(&v1.plain, "op_add"),
        function_at(&v2.plain, "op_add")
    );
    assert_eq!(page["entries"][0]["status"], "unchanged", "{page}");
    assert_eq!(
        page["detail"],
        json!({ "kept": add.len(), "removed": 0, "added": 0, "lines": [], "lines_total": 0,
                "truncated": false }),
        "{page}"
    );
}

#[tokio::test]
async fn detail_reads_callees_through_the_matching_and_refuses_what_is_no_pair_regression_28() {
    let dir = tempfile::tempdir().unwrap();
    let v1 = build_source(dir.path(), OPS, "-O2", &[], "ops1");
    let v2 = build_source(dir.path(), OPS, "-O2", &["-DV2"], "ops2");
    let at = |b: &Built, name: &str| function_at(&b.plain, name);
    let h = start().await;
    for stripped in [false, true] {
        let side = |b: &Built| {
            if stripped {
                b.stripped.clone()
            } else {
                b.plain.clone()
            }
        };
        let m1 = inspected(&h, &side(&v1)).await;
        let m2 = inspected(&h, &side(&v2)).await;
        let run_ops = hex(at(&v1, "run_ops"));
        let page = h
            .call(
                "compare_procedures",
                json!({ "left_manifest_id": m1, "right_manifest_id": m2, "detail": run_ops }),
            )
            .await;
        let detail = &page["detail"];
        let lines = detail_lines(detail);
        // Every instruction of v1 is kept, the calls to the matched op_add, op_sub and op_mul
        // among them; v2's others are added.
        let (old, new) = (
            body_listing(&v1.plain, "run_ops"),
            body_listing(&v2.plain, "run_ops"),
        );
        assert_eq!(
            (&detail["kept"], &detail["removed"], &detail["added"]),
            (&json!(old.len()), &json!(0), &json!(new.len() - old.len())),
            "stripped {stripped}: {detail}"
        );
        // The call next to the change shows its callee by name with symbols, by each side's
        // address stripped.
        let (l, r) = (hex(at(&v1, "op_mul")), hex(at(&v2, "op_mul")));
        let call = if stripped {
            (format!("call {l}"), json!(format!("call {r}")))
        } else {
            ("call op_mul".to_owned(), Value::Null)
        };
        assert!(
            lines
                .iter()
                .any(|x| x.0 == "kept" && (x.3.clone(), x.4.clone()) == call),
            "stripped {stripped}: {detail}"
        );
        // The one new call is added.
        let op_neg = if stripped {
            format!("call {}", hex(at(&v2, "op_neg")))
        } else {
            "call op_neg".to_owned()
        };
        let added: Vec<&str> = lines
            .iter()
            .filter(|x| x.0 == "added" && x.3.starts_with("call"))
            .map(|x| x.3.as_str())
            .collect();
        assert_eq!(added, [op_neg.as_str()], "stripped {stripped}: {detail}");
    }

    // What has no pair is refused with why, in a result that is an error.
    let m1 = inspected(&h, &v1.plain).await;
    let m2 = inspected(&h, &v2.plain).await;
    let refused = |which: String| {
        let h = &h;
        let (m1, m2) = (m1.clone(), m2.clone());
        async move {
            h.call_err(
                "compare_procedures",
                json!({ "left_manifest_id": m1, "right_manifest_id": m2, "detail": which }),
            )
            .await
        }
    };
    assert_eq!(
        refused("op_neg".into()).await,
        format!(
            "detail: op_neg ({}) is added: only the right side has it, so \
             there is no pair to diff",
            hex(at(&v2, "op_neg"))
        )
    );
    assert_eq!(
        refused("no_such".into()).await,
        "detail: no procedure \"no_such\" on the left side of the comparison \
         (a procedure start, 0x…, or its name)"
    );
    // Stripped, twin_a and twin_b share a body and one is gone: neither is a pair.
    let m1 = inspected(&h, &v1.stripped).await;
    let m2 = inspected(&h, &v2.stripped).await;
    let err = h
        .call_err(
            "compare_procedures",
            json!({ "left_manifest_id": m1, "right_manifest_id": m2, "detail": hex(at(&v1, "twin_a")) }),
        )
        .await;
    assert_eq!(
        err,
        format!(
            "detail: {} is ambiguous: its counterpart could be any of {} \
             and none is clearly better, so there is no pair to diff",
            hex(at(&v1, "twin_a")),
            hex(at(&v2, "twin_b"))
        )
    );
}

/// The first call (or jump) instruction in `caller` that objdump shows going to `callee`: the
/// site a path step names (classify calls leaf_mul twice).
fn call_site(listing: &[reference::Insn], caller: &str, callee: u64, jump: bool) -> u64 {
    let sites: Vec<u64> = listing
        .iter()
        .filter(|i| i.function.as_deref() == Some(caller))
        .filter(|i| if jump { i.is_jump() } else { i.is_call() })
        .filter(|i| i.direct_target() == Some(callee))
        .map(|i| i.address)
        .collect();
    assert!(
        !sites.is_empty(),
        "objdump shows no {caller} -> {callee:#x}"
    );
    sites[0]
}

#[tokio::test]
async fn call_paths_follow_the_sources_call_graph() {
    for (opt, from, to, route, vias, gaps) in [
        // main calls classify, which calls leaf_mul: the only shortest path (chain_a reaches it
        // in four calls).
        (
            Opt::O0,
            "main",
            "leaf_mul",
            vec!["main", "classify", "leaf_mul"],
            vec!["call", "call"],
            // apply calls through OPS: it could hide a path as short. classify's jump through
            // its switch table is not a gap: every destination is classify's own code (issue
            // 27).
            vec![("apply", "call")],
        ),
        (
            Opt::O0,
            "chain_a",
            "leaf_mul",
            vec!["chain_a", "chain_b", "chain_c", "leaf_mul"],
            vec!["call", "call", "call"],
            vec![],
        ),
        // At -O2 tail_caller jumps to chain_c instead of calling it.
        (
            Opt::O2,
            "main",
            "chain_c",
            vec!["main", "tail_caller", "chain_c"],
            vec!["call", "tail-jump"],
            // At -O2 apply tail-jumps through OPS.
            vec![("apply", "jump")],
        ),
    ] {
        let path = corpus::build(Variant::new(Source::Graph, Toolchain::ElfX64, opt, false));
        let listing = reference::listing(&path, Toolchain::ElfX64, Disassembler::Gnu);
        let h = start().await;
        h.call("open_binary", json!({ "path": path })).await;
        let found = h
            .call(
                "call_paths",
                json!({ "from": from, "to": to, "max_depth": 6 }),
            )
            .await;
        let case = format!("{opt:?} {from} -> {to}: {found}");
        assert_eq!(
            found["shortest"].as_u64(),
            Some(vias.len() as u64),
            "{case}"
        );
        assert_eq!(found["total"], 1, "{case}");
        assert_eq!(found["truncated"], false, "{case}");
        assert_eq!(found["deadline_hit"], false, "{case}");
        let steps = found["paths"][0]["steps"].as_array().unwrap();
        let names: Vec<&str> = steps
            .iter()
            .map(|s| s["node"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, route, "{case}");
        let holes: Vec<(&str, &str)> = found["gaps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| {
                (
                    g["procedure"]["name"].as_str().unwrap(),
                    g["kind"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(holes, gaps, "{case}");
        assert_eq!(found["gaps_total"], gaps.len(), "{case}");
        for (i, pair) in route.windows(2).enumerate() {
            let callee = function_at(&path, pair[1]);
            assert_eq!(steps[i + 1]["node"]["address"], hex(callee), "{case}");
            assert_eq!(steps[i + 1]["via"], vias[i], "{case}");
            let site = call_site(&listing, pair[0], callee, vias[i] == "tail-jump");
            assert_eq!(steps[i + 1]["site"], hex(site), "{case}");
        }
    }
    // The bound is enforced, and a path longer than it is not found.
    let path = corpus::build(Variant::new(
        Source::Graph,
        Toolchain::ElfX64,
        Opt::O0,
        false,
    ));
    let h = start().await;
    h.call("open_binary", json!({ "path": path })).await;
    let err = h
        .call_err(
            "call_paths",
            json!({ "from": "main", "to": "leaf_mul", "max_depth": 33 }),
        )
        .await;
    assert!(err.contains("max_depth"), "{err}");
    let short = h
        .call(
            "call_paths",
            json!({ "from": "chain_a", "to": "leaf_mul", "max_depth": 2 }),
        )
        .await;
    assert_eq!(short["shortest"], Value::Null, "{short}");
    assert_eq!(short["total"], 0, "{short}");
    assert_eq!(short["paths"].as_array().unwrap().len(), 0);
    // chain_a -> chain_b -> chain_c -> leaf_mul (graph.c): three calls, past the bound of two,
    // so the answer says the target lies deeper and how deep.
    assert_eq!(short["reachable"], true, "{short}");
    assert_eq!(short["shortest_beyond"], 3, "{short}");
    let deep = h
        .call(
            "call_paths",
            json!({ "from": "chain_a", "to": "leaf_mul", "max_depth": 32 }),
        )
        .await;
    assert_eq!(deep["shortest"], 3, "{deep}");
    assert_eq!(deep["shortest_beyond"], Value::Null, "{deep}");
    // Nothing calls main: unreachable at any depth, said as such.
    let back = h
        .call(
            "call_paths",
            json!({ "from": "leaf_mul", "to": "main", "max_depth": 1 }),
        )
        .await;
    assert_eq!(
        (&back["reachable"], &back["shortest_beyond"]),
        (&json!(false), &Value::Null),
        "{back}"
    );
}

/// `rea compare LEFT RIGHT` with `extra` arguments, in a fresh state directory; its stdout.
fn rea_compare(left: &Path, right: &Path, extra: &[&str]) -> String {
    let state = tempfile::tempdir().unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_rea"))
        .arg("compare")
        .arg(left)
        .arg(right)
        .args(extra)
        .env("REA_STATE_DIR", state.path())
        .env_remove("REA_CONFIG_DIR")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn rea_compare_names_the_added_function_in_markdown_and_json_regression_28() {
    let dir = tempfile::tempdir().unwrap();
    let v1 = build(dir.path(), "-O2", &[], "v1");
    let v3 = build(dir.path(), "-O2", &["-DADDED"], "v3");
    let at = hex(function_at(&v3.plain, "export_csv"));
    // With symbols the name, stripped the address: which procedure, not only how many.
    for (left, right, named) in [
        (&v1.plain, &v3.plain, format!("export_csv ({at})")),
        (&v1.stripped, &v3.stripped, at.clone()),
    ] {
        let markdown = rea_compare(left, right, &[]);
        assert!(
            markdown.contains(&format!("  - added (1): {named}\n")),
            "{markdown}"
        );
        let json: Value = serde_json::from_str(&rea_compare(left, right, &["--json"])).unwrap();
        let part = &json["record"]["result"]["procedures"]["parts"][0];
        assert_eq!(part["added_total"], 1, "{part}");
        assert_eq!(part["listed"]["added"], json!([named]), "{part}");
        assert_eq!(part["listed"]["changed"], json!([]), "{part}");
    }
}
