//! carry_annotations through MCP (issue 26): annotations of stripped v1 of procdiff's `store.c`
//! carried to stripped v2 (`-DCHANGED` changes `checksum`'s body), with the unstripped twins'
//! `readelf` names as the truth of where each one must land.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::common::{Harness, start};
use crate::compare::{build, hex, inspected};
use crate::corpus::Toolchain;
use crate::corpus::reference;

/// Every function `readelf` lists in `path`, by name, with its address.
fn functions(path: &std::path::Path) -> BTreeMap<String, u64> {
    reference::functions(path, Toolchain::ElfX64)
        .into_iter()
        .map(|s| (s.name, s.address))
        .collect()
}

/// The addresses of the active target's procedures.
async fn procedure_addresses(h: &Harness) -> Vec<String> {
    let listed = h.call("list_procedures", json!({ "limit": 1000 })).await;
    listed["procedures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["address"].as_str().unwrap().to_owned())
        .collect()
}

/// Annotation heads of the active target, by address.
async fn names_by_address(h: &Harness) -> BTreeMap<String, Value> {
    let listed = h
        .call("list_annotations", json!({ "kind": "name", "limit": 500 }))
        .await;
    listed["annotations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["address"].as_str().unwrap().to_owned(), a.clone()))
        .collect()
}

async fn ledger_rows(h: &Harness) -> u64 {
    h.call("list_evidence", json!({ "limit": 1 })).await["total"]
        .as_u64()
        .unwrap()
}

#[tokio::test]
async fn annotations_of_stripped_v1_land_on_the_twins_procedures_of_v2_regression_26() {
    let dir = tempfile::tempdir().unwrap();
    let v1 = build(dir.path(), "-O2", &[], "v1");
    let v2 = build(dir.path(), "-O2", &["-DCHANGED"], "v2");
    let (truth1, truth2) = (functions(&v1.plain), functions(&v2.plain));
    let h = start().await;
    let m2 = inspected(&h, &v2.stripped).await;
    let m1 = inspected(&h, &v1.stripped).await;
    let opened = h.call("open_binary", json!({ "path": v1.stripped })).await;
    let cite = opened["evidence"]["id"].as_str().unwrap().to_owned();

    // Name every procedure of stripped v1 that the unstripped twin names, after its true name.
    let listed = procedure_addresses(&h).await;
    let mut annotated = BTreeMap::new();
    for (name, address) in &truth1 {
        let at = hex(*address);
        if !listed.contains(&at) || !truth2.contains_key(name) {
            continue;
        }
        let text = format!("an_{}", name.replace('.', "_"));
        h.call(
            "annotate",
            json!({ "procedure": at, "kind": "name", "text": text,
                    "rationale": "read its body", "cites": [cite] }),
        )
        .await;
        annotated.insert(text, name.clone());
    }
    assert!(annotated.len() >= 8, "{annotated:?}");
    assert!(annotated.contains_key("an_checksum"), "{annotated:?}");
    let document_type = h
        .call(
            "annotate",
            json!({ "kind": "type",
                    "text": "struct record { int id; long total; };",
                    "rationale": "the layout checksum reads", "cites": [cite] }),
        )
        .await;
    assert_eq!(document_type["annotation"]["kind"], "type");

    // A refused carry keeps nothing.
    let before = ledger_rows(&h).await;
    let refused = h
        .call_err(
            "carry_annotations",
            json!({ "from_manifest_id": m1, "to_manifest_id": format!("agm_{}", "0".repeat(64)) }),
        )
        .await;
    assert!(
        refused.contains("not in this session's ledger"),
        "{refused}"
    );
    assert_eq!(ledger_rows(&h).await, before);

    // Strong matches carry; the comparison's own classes say which those are.
    let compared = h
        .call(
            "compare_procedures",
            json!({ "left_manifest_id": m1, "right_manifest_id": m2, "limit": 1000 }),
        )
        .await;
    let weak: Vec<String> = compared["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["matched_by"] == "similarity")
        .map(|e| e["left"]["address"].as_str().unwrap().to_owned())
        .collect();
    // The record a plain compare_procedures call keeps, before anything is carried (the right
    // side's analyst names are part of it).
    let plain_comparison = h
        .call(
            "compare_procedures",
            json!({ "left_manifest_id": m1, "right_manifest_id": m2 }),
        )
        .await;
    let carried = h
        .call(
            "carry_annotations",
            json!({ "from_manifest_id": m1, "to_manifest_id": m2, "limit": 1000 }),
        )
        .await;
    let weak_named = annotated
        .iter()
        .filter(|(_, name)| weak.contains(&hex(truth1[*name])))
        .count() as u64;
    assert_eq!(
        carried["carried_total"].as_u64().unwrap(),
        annotated.len() as u64 - weak_named + 1,
        "every name on a strong or exact match, and the document's type: {carried}"
    );
    assert_eq!(
        carried["not_carried_total"].as_u64().unwrap(),
        weak_named,
        "{carried}"
    );
    for n in carried["not_carried"].as_array().unwrap() {
        assert_eq!(n["reason"], "weak-match", "{n}");
    }
    let comparison = carried["comparison_evidence_id"].as_str().unwrap();
    assert_eq!(
        comparison,
        plain_comparison["evidence"]["id"].as_str().unwrap(),
        "the carry cites the record compare_procedures keeps for the same two versions"
    );
    for c in carried["carried"].as_array().unwrap() {
        if c["kind"] == "type" {
            assert!(c["to_address"].is_null(), "{c}");
            continue;
        }
        let name = &annotated[c["text"].as_str().unwrap()];
        assert_eq!(c["from_address"], hex(truth1[name]), "{c}");
        assert_eq!(
            c["to_address"],
            hex(truth2[name]),
            "{name} lands on the twin's {name}: {c}"
        );
        assert_eq!(c["changed"], name == "checksum", "{c}");
    }

    // The carried names are annotations of v2, citing the original and the comparison.
    h.call("open_binary", json!({ "path": v2.stripped })).await;
    let heads = names_by_address(&h).await;
    let carried_names = annotated.len() as u64 - weak_named;
    assert_eq!(heads.len() as u64, carried_names);
    for (at, head) in &heads {
        let name = &annotated[head["head"]["text"].as_str().unwrap()];
        assert_eq!(*at, hex(truth2[name]));
        let cites: Vec<&str> = head["head"]["cites"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap())
            .collect();
        assert!(cites.contains(&comparison), "{head}");
        assert!(
            head["head"]["rationale"]
                .as_str()
                .unwrap()
                .starts_with("carried from ann_"),
            "{head}"
        );
    }

    // Carrying again adds nothing; weak matches carry only when asked for.
    let again = h
        .call(
            "carry_annotations",
            json!({ "from_manifest_id": m1, "to_manifest_id": m2, "min_confidence": "weak", "limit": 1000 }),
        )
        .await;
    assert_eq!(
        again["carried_total"].as_u64().unwrap(),
        weak_named,
        "{again}"
    );
    for n in again["not_carried"].as_array().unwrap() {
        assert_eq!(n["reason"], "already-annotated", "{n}");
    }
}
