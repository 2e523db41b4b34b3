//! inspect_artifact, compare_artifacts and verify_reconstruction through MCP.

use serde_json::json;

use crate::common::{fixture, start};

#[tokio::test]
async fn two_releases_compared_end_to_end_with_completion_of_their_ids() {
    let h = start().await;
    h.call(
        "open_binary",
        json!({ "path": fixture("7zip-bin-5.1.1/package/win/x64/7za.exe") }),
    )
    .await;
    let left = h.call("inspect_artifact", json!({})).await;
    h.call(
        "open_binary",
        json!({ "path": fixture("7zip-bin-5.2.0/package/win/x64/7za.exe") }),
    )
    .await;
    let right = h.call("inspect_artifact", json!({})).await;
    let (l, r) = (
        left["manifest"]["id"].as_str().unwrap(),
        right["manifest"]["id"].as_str().unwrap(),
    );
    assert_ne!(l, r);
    let manifests = h
        .complete("compare_application_versions", "left_manifest_id", "agm_")
        .await;
    assert_eq!(manifests.total, Some(2));
    let occurrences = h
        .complete(
            "compare_application_versions",
            "focus_occurrence_id",
            "occ_",
        )
        .await;
    assert!(occurrences.total.unwrap() > 0);
    let cmp = h
        .call(
            "compare_artifacts",
            json!({ "left_manifest_id": l, "right_manifest_id": r }),
        )
        .await;
    assert_eq!(cmp["evidence"]["links"].as_array().unwrap().len(), 2);
    assert_eq!(cmp["parts"]["status"], "different", "{}", cmp["parts"]);
    let same = h
        .call(
            "compare_artifacts",
            json!({ "left_manifest_id": l, "right_manifest_id": l }),
        )
        .await;
    assert_eq!(same["parts"]["status"], "equal");
    // A claim about what the comparison showed; a pass rests on the comparison Evidence.
    let cmp_id = same["evidence"]["id"].as_str().unwrap();
    let verdict = h
        .call(
            "verify_reconstruction",
            json!({ "spec": { "claims": [
                { "claim": "no_change", "comparison_evidence_id": cmp_id, "dimension": "parts" },
                { "claim": "procedure_exists", "document": "7za.exe", "name": "no_such_procedure" }
            ] } }),
        )
        .await;
    assert_eq!(verdict["claims"][0]["status"], "pass", "{verdict}");
    assert!(
        verdict["claims"][0]["evidence_ids"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e == cmp_id)
    );
    assert_ne!(
        verdict["claims"][1]["status"], "pass",
        "a missing procedure never passes: {verdict}"
    );
    assert_ne!(verdict["status"], "pass");
}

#[tokio::test]
async fn a_real_app_bundle_inventory_names_its_info_plist_and_unsigned_executable() {
    let h = start().await;
    h.call("open_binary", json!({ "path": fixture("node-notifier/package/vendor/mac.noindex/terminal-notifier.app") })).await;
    let inv = h.call("inspect_artifact", json!({})).await;
    let edges = inv["edges"].as_array().unwrap();
    assert!(
        edges.iter().any(|e| e["target"]
            .as_str()
            .is_some_and(|t| t.ends_with("Info.plist"))),
        "{edges:?}"
    );
    assert!(
        inv["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["rule"].as_str().unwrap().contains("unsigned")),
        "{}",
        inv["findings"]
    );
    let page = &inv["pages"][0];
    let stored = h
        .call(
            "get_evidence",
            json!({ "evidence_id": page["evidence_id"] }),
        )
        .await;
    let values: Vec<&str> = stored["record"]["result"]["occurrences"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|o| o["value"].as_str())
        .collect();
    assert!(
        values.contains(&"nl.superalloy.oss.terminal-notifier"),
        "{values:?}"
    );
}

#[tokio::test]
async fn only_schema_valid_inventories_feed_manifest_and_occurrence_completion() {
    let h = start().await;
    h.call("open_binary", json!({ "path": "/usr/bin/ls" }))
        .await;
    let store_path = h.call("binary_session", json!({})).await["database"]
        .as_str()
        .unwrap()
        .to_owned();
    // A malformed inventory recorded as Evidence (as a buggy or hostile writer might) is kept in
    // the ledger but never registered, so it is never offered.
    let store = rea::store::Store::open(std::path::Path::new(&store_path)).unwrap();
    let bogus = rea::evidence::EvidenceRecord {
        subject: None,
        provider: rea::evidence::ProviderStamp::builtin(),
        operation: "inspect_artifact".into(),
        parameters: json!({}),
        result: json!({ "manifest": { "id": format!("agm_{}", "e".repeat(64)) }, "pages": "nope" }),
        confidence: rea::evidence::Confidence::Observed,
        authority: rea::evidence::Authority::ShippedArtifact,
        limitations: vec![],
        locations: vec![],
        links: vec![],
    };
    store.record(bogus).await.unwrap();
    assert_eq!(
        h.complete("compare_application_versions", "left_manifest_id", "")
            .await
            .total,
        Some(0)
    );
    let good = h.call("inspect_artifact", json!({})).await;
    let offered = h
        .complete("compare_application_versions", "right_manifest_id", "")
        .await;
    assert_eq!(offered.values, [good["manifest"]["id"].as_str().unwrap()]);
}
