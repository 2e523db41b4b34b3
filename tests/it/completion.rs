//! Session-aware completion over the live session (mcp-prompts.md, "Session-aware completion"
//! and "Lifecycle and safety").

use crate::common::{Harness, error_code, start, str_values};

async fn open(h: &Harness, path: &str) -> serde_json::Value {
    h.call("open_binary", serde_json::json!({ "path": path }))
        .await
}

fn sorted_by_code_point(values: &[String]) -> bool {
    values.windows(2).all(|w| w[0] < w[1])
}

#[tokio::test]
async fn before_any_target_only_provider_auto_is_offered_and_nothing_starts() {
    let h = start().await;
    let p = h.complete("investigate_feature", "provider_id", "").await;
    assert_eq!(str_values(&p), ["auto"]);
    assert_eq!((p.total, p.has_more), (Some(1), Some(false)));
    for (prompt, arg) in [
        ("investigate_feature", "document"),
        ("investigate_feature", "procedure"),
        ("verify_reconstruction", "comparison_evidence_id"),
        ("trace_crash", "capture_evidence_id"),
        ("compare_application_versions", "left_manifest_id"),
        ("compare_application_versions", "focus_occurrence_id"),
        ("audit_residual_unknowns", "unknown_id"),
    ] {
        let c = h.complete(prompt, arg, "").await;
        assert!(c.values.is_empty(), "{prompt}.{arg}: {:?}", c.values);
        assert_eq!(c.total, Some(0));
    }
    let listed = h.call("binary_session", serde_json::json!({})).await;
    assert_eq!(listed["open"], false, "completion must not start a session");
}

#[tokio::test]
async fn documents_and_procedures_follow_the_active_target_and_switch_with_it() {
    let h = start().await;
    open(&h, "/usr/bin/ls").await;
    assert_eq!(
        str_values(&h.complete("investigate_feature", "document", "").await),
        ["ls"]
    );
    assert_eq!(
        str_values(&h.complete("trace_crash", "document", "L").await),
        ["ls"]
    );

    let listed = h
        .call("list_procedures", serde_json::json!({ "limit": 1 }))
        .await;
    let total = listed["total"].as_u64().unwrap();
    let c = h.complete("investigate_feature", "procedure", "0x").await;
    assert_eq!(
        c.total,
        Some(total as u32),
        "every address matches 0x and names come on top"
    );
    assert!(c.values.len() <= 100);
    assert_eq!(c.has_more, Some(total > 100));
    assert!(sorted_by_code_point(&c.values));

    open(&h, "/bin/cat").await;
    assert_eq!(
        str_values(&h.complete("investigate_feature", "document", "").await),
        ["cat"]
    );
    let cat = h.complete("investigate_feature", "procedure", "0x").await;
    let cat_total = h
        .call("list_procedures", serde_json::json!({ "limit": 1 }))
        .await["total"]
        .as_u64()
        .unwrap();
    assert_eq!(cat.total, Some(cat_total as u32));
    assert_ne!(
        cat.values, c.values,
        "switching targets changes procedure suggestions"
    );
}

#[tokio::test]
async fn procedure_completion_counts_every_address_and_narrows_with_longer_prefixes() {
    let h = start().await;
    open(&h, "/usr/bin/ls").await;
    let all = h.complete("investigate_feature", "procedure", "0x").await;
    let first = all.values[0].clone();
    let mut previous = all.total.unwrap();
    for len in 3..=first.len() {
        let c = h
            .complete("investigate_feature", "procedure", &first[..len])
            .await;
        let t = c.total.unwrap();
        assert!(t <= previous, "prefix {} widened", &first[..len]);
        assert!(c.values.iter().all(|v| v.starts_with(&first[..len])));
        previous = t;
    }
    // Typed in upper case, the same prefix answers the same (normalized, case-insensitive).
    let upper = h
        .complete("investigate_feature", "procedure", &first.to_uppercase())
        .await;
    assert!(upper.values.contains(&first));
}

#[tokio::test]
async fn procedure_names_are_offered_only_when_they_name_one_address() {
    let h = start().await;
    open(&h, "/usr/lib/x86_64-linux-gnu/libc.so.6").await;
    let malloc = h
        .complete("investigate_feature", "procedure", "malloc")
        .await;
    assert!(
        str_values(&malloc).contains(&"malloc"),
        "{:?}",
        malloc.values
    );
    // Every offered name resolves to exactly one procedure in the inventory.
    let named = h.complete("investigate_feature", "procedure", "mem").await;
    assert!(named.total.unwrap() > 0);
    for name in named.values.iter().take(20) {
        let found = h
            .call(
                "search_procedures",
                serde_json::json!({ "query": name, "mode": "prefix", "limit": 500 }),
            )
            .await;
        let exact: std::collections::BTreeSet<&str> = found["procedures"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["name"] == name.as_str())
            .map(|p| p["address"].as_str().unwrap())
            .collect();
        assert_eq!(exact.len(), 1, "{name} names {exact:?}");
    }
}

#[tokio::test]
async fn document_context_is_forwarded_to_procedure_completion() {
    let h = start().await;
    let fsevents = crate::common::fixture("fsevents/package/fsevents.node");
    open(&h, fsevents.to_str().unwrap()).await;
    let docs = h.complete("investigate_feature", "document", "").await;
    assert_eq!(docs.values.len(), 2, "{:?}", docs.values);
    let mut union = std::collections::BTreeSet::new();
    let mut per_document = vec![];
    for d in &docs.values {
        // With a document in the context, the inventory is that document's: its addresses.
        let c = h
            .complete_ctx("investigate_feature", "procedure", "0x", &[("document", d)])
            .await
            .unwrap();
        let listed = h
            .call(
                "list_procedures",
                serde_json::json!({ "document": d, "limit": 1 }),
            )
            .await;
        assert_eq!(
            c.total.unwrap() as u64,
            listed["total"].as_u64().unwrap(),
            "{d}"
        );
        let all = h
            .call(
                "list_procedures",
                serde_json::json!({ "document": d, "limit": 500 }),
            )
            .await;
        let addresses: Vec<String> = all["procedures"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["address"].as_str().unwrap().to_owned())
            .collect();
        assert!(
            c.values.iter().all(|v| addresses.contains(v)),
            "{d} offered an address of another document"
        );
        union.extend(addresses);
        per_document.push(c.values);
    }
    assert_ne!(
        per_document[0], per_document[1],
        "the two slices have different inventories"
    );
    let whole = h.complete("investigate_feature", "procedure", "0x").await;
    assert_eq!(
        whole.total.unwrap() as usize,
        union.len(),
        "without a document: every address of the target, once"
    );
    let none = h
        .complete_ctx(
            "investigate_feature",
            "procedure",
            "",
            &[("document", "no such document")],
        )
        .await
        .unwrap();
    assert_eq!(none.total, Some(0));
}

#[tokio::test]
async fn evidence_ids_complete_from_the_ledger_and_vanish_on_close() {
    let h = start().await;
    let opened = open(&h, "/usr/bin/ls").await;
    let id = opened["evidence"]["id"].as_str().unwrap().to_owned();
    let c = h
        .complete("audit_residual_unknowns", "evidence_id", &id[..8])
        .await;
    assert!(c.values.contains(&id));
    let exact = h
        .complete(
            "verify_reconstruction",
            "comparison_evidence_id",
            &id.to_uppercase(),
        )
        .await;
    assert_eq!(str_values(&exact), [id.as_str()]);
    // Evidence ids are offered only where the argument accepts Evidence references.
    assert!(
        h.complete("investigate_feature", "feature", "ev_")
            .await
            .values
            .is_empty()
    );

    h.call("close_binary", serde_json::json!({})).await;
    for (prompt, arg) in [
        ("audit_residual_unknowns", "evidence_id"),
        ("investigate_feature", "document"),
        ("investigate_feature", "procedure"),
    ] {
        assert_eq!(
            h.complete(prompt, arg, "").await.total,
            Some(0),
            "{prompt}.{arg} after close"
        );
    }
    assert_eq!(
        str_values(&h.complete("investigate_feature", "provider_id", "").await),
        ["auto"]
    );
}

#[tokio::test]
async fn residual_unknowns_complete_until_resolved() {
    let h = start().await;
    let opened = open(&h, "/usr/bin/ls").await;
    let ev = opened["evidence"]["id"].as_str().unwrap();
    let u = h
        .call(
            "record_unknown",
            serde_json::json!({ "question": "Where is sorting done?", "evidence_ids": [ev] }),
        )
        .await;
    let id = u["id"].as_str().unwrap().to_owned();
    assert_eq!(
        str_values(
            &h.complete("audit_residual_unknowns", "unknown_id", "unk_")
                .await
        ),
        [id.as_str()]
    );
    h.call(
        "update_unknown",
        serde_json::json!({ "unknown_id": id, "expected_revision": 1, "status": "investigating" }),
    )
    .await;
    assert_eq!(
        h.complete("audit_residual_unknowns", "unknown_id", "")
            .await
            .total,
        Some(1)
    );
    h.call(
        "update_unknown",
        serde_json::json!({ "unknown_id": id, "expected_revision": 2, "status": "resolved", "resolution": "verified", "supporting_evidence_ids": [ev] }),
    )
    .await;
    assert_eq!(
        h.complete("audit_residual_unknowns", "unknown_id", "")
            .await
            .total,
        Some(0)
    );
}

#[tokio::test]
async fn provider_completion_lists_auto_and_sorted_deep_candidates_for_the_target() {
    let h = start().await;
    open(&h, "/usr/bin/ls").await;
    let c = h.complete("investigate_feature", "provider_id", "").await;
    assert!(sorted_by_code_point(&c.values));
    // Only the candidates a tool taking provider_id runs: procedure_assembly's (objdump,
    // llvm-objdump) and procedure_pseudo_code's (angr, where REA_ANGR_PYTHON names it, as the
    // test script does), never gdb, which no tool runs (issue 17 item 7): the host has objdump,
    // llvm-objdump, llvm-objdump-14 and gdb.
    let found = rea::providers::deep::candidates("elf", None);
    assert!(found.iter().any(|c| c.id == "gdb"));
    let mut expected = vec!["auto", "llvm-objdump", "llvm-objdump-14", "objdump"];
    if found.iter().any(|c| c.id == "angr") {
        expected.insert(0, "angr");
    }
    assert_eq!(str_values(&c), expected);
    let o = h.complete("investigate_feature", "provider_id", "AU").await;
    assert_eq!(str_values(&o), ["auto"]);
}

#[tokio::test]
async fn completion_errors_and_unsupported_arguments() {
    let h = start().await;
    let e = h
        .complete_ctx("no_such_prompt", "x", "", &[])
        .await
        .unwrap_err();
    assert_eq!(error_code(&e), Some(-32602));
    // An argument without a completion family, or one the prompt does not have, answers empty.
    assert!(
        h.complete("investigate_feature", "feature", "")
            .await
            .values
            .is_empty()
    );
    assert!(
        h.complete("investigate_feature", "nonexistent", "")
            .await
            .values
            .is_empty()
    );
    // Absent context is never an error; a prefix longer than 4,096 characters matches nothing.
    open(&h, "/usr/bin/ls").await;
    let long = "0".repeat(5000);
    assert_eq!(
        h.complete("investigate_feature", "procedure", &long)
            .await
            .total,
        Some(0)
    );
}

#[tokio::test]
async fn completion_is_live_with_no_cache_between_requests() {
    let h = start().await;
    open(&h, "/usr/bin/ls").await;
    let before = h
        .complete("audit_residual_unknowns", "evidence_id", "ev_")
        .await
        .total
        .unwrap();
    h.call(
        "list_procedures",
        serde_json::json!({ "offset": 7, "limit": 3 }),
    )
    .await;
    let after = h
        .complete("audit_residual_unknowns", "evidence_id", "ev_")
        .await
        .total
        .unwrap();
    assert_eq!(after, before + 1);
}

#[tokio::test]
async fn a_failing_source_answers_with_an_empty_list_not_an_error() {
    let h = start().await;
    open(&h, "/usr/bin/ls").await;
    h.call("record_unknown", serde_json::json!({ "question": "q" }))
        .await;
    let db = h.call("binary_session", serde_json::json!({})).await["database"]
        .as_str()
        .unwrap()
        .to_owned();
    // Break the sources behind the server's back: the tables completion reads are gone.
    let raw = rusqlite::Connection::open(&db).unwrap();
    raw.execute_batch("pragma foreign_keys = off; drop table procedure_completions; drop table procedure_completion_prefixes; drop table unknown_evidence; drop table unknown_revisions; drop table unknowns;").unwrap();
    for (prompt, arg) in [
        ("investigate_feature", "procedure"),
        ("audit_residual_unknowns", "unknown_id"),
    ] {
        let c = h.complete(prompt, arg, "").await;
        assert!(c.values.is_empty(), "{prompt}.{arg}");
        assert_eq!(c.total, Some(0));
    }
}

#[tokio::test]
async fn closing_clears_the_unknown_registry_from_completion() {
    let h = start().await;
    open(&h, "/usr/bin/ls").await;
    h.call("record_unknown", serde_json::json!({ "question": "q" }))
        .await;
    assert_eq!(
        h.complete("audit_residual_unknowns", "unknown_id", "")
            .await
            .total,
        Some(1)
    );
    h.call("close_binary", serde_json::json!({})).await;
    assert_eq!(
        h.complete("audit_residual_unknowns", "unknown_id", "")
            .await
            .total,
        Some(0)
    );
}
