//! compare_procedures, call_paths, and compare_artifacts/verify_reconstruction at function level
//! through MCP (issue 18), on programs built here: the versions of procdiff's `store.c`
//! (`-DCHANGED` changes the body of `checksum`, `-DADDED` adds `export_csv`), whose truth is the
//! source and `readelf` on the unstripped twin, the corpus' `graph.c` for call paths, and the
//! real 7-Zip pair.

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

/// Builds `store.c` with `defines` by gcc at `opt` into `dir`, and strips a copy.
pub(crate) fn build(dir: &Path, opt: &str, defines: &[&str], stem: &str) -> Built {
    let plain = dir.join(format!("{stem}{opt}"));
    let stripped = dir.join(format!("{stem}{opt}-stripped"));
    let mut args = vec![opt, "-o", plain.to_str().unwrap(), STORE];
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
    assert_eq!(page["left"]["procedures"], 5716);
    assert_eq!(page["right"]["procedures"], 6010);
    assert_eq!(
        totals(&page["summary"]),
        ("different", 283, 155, 1011, 3301),
        "{}",
        page["summary"]
    );
    // Identical bodies nothing tells apart (COM stubs reached only through vtables) are
    // ambiguous rather than paired in order; pairs by position alone are uncertain.
    assert_eq!(page["summary"]["ambiguous_total"], 1199);
    assert_eq!(page["summary"]["uncertain_total"], 50);
    assert_eq!(page["total"], 155);
    assert_eq!(page["next_offset"], 3);
    let cmp = h
        .call(
            "compare_artifacts",
            json!({ "left_manifest_id": left, "right_manifest_id": right }),
        )
        .await;
    let p = &cmp["procedures"];
    assert_eq!(totals(p), ("different", 283, 155, 1011, 3301), "{p}");
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
