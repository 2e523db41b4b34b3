//! Session, ledger, unknown and native tools through the MCP surface.

use serde_json::json;

use crate::common::{error_code, javascript_app, start};

#[tokio::test]
async fn open_binary_refuses_a_javascript_directory_naming_the_analysis_that_applies() {
    let h = start().await;
    let js = javascript_app();
    let msg = h
        .call_err("open_binary", json!({ "path": js.path() }))
        .await;
    assert!(msg.contains("analyze_javascript_application"), "{msg}");
    let plain = tempfile::tempdir().unwrap();
    let msg = h
        .call_err("open_binary", json!({ "path": plain.path() }))
        .await;
    assert!(
        msg.contains("directory") && !msg.contains("analyze_javascript_application"),
        "{msg}"
    );
}

#[tokio::test]
async fn doctor_checks_admission_without_opening() {
    let h = start().await;
    let js = javascript_app();
    let r = h.call("doctor", json!({ "target": js.path() })).await;
    assert_eq!(r["target"]["admitted"], false);
    assert_eq!(
        r["target"]["available_action"],
        "analyze_javascript_application"
    );
    let r = h.call("doctor", json!({ "target": "/usr/bin/ls" })).await;
    assert_eq!(r["target"]["admitted"], true);
    assert_eq!(r["target"]["format"], "elf");
    assert_eq!(h.call("binary_session", json!({})).await["open"], false);
}

#[tokio::test]
async fn bad_arguments_are_readable_tool_errors_and_unknown_tools_are_protocol_errors() {
    let h = start().await;
    let msg = h
        .call_err("list_procedures", json!({ "offset": "x" }))
        .await;
    assert!(
        msg.contains("failed to deserialize parameters") && msg.contains("expected u64"),
        "{msg}"
    );
    let msg = h.call_err("open_binary", json!({})).await;
    assert!(msg.contains("path"), "{msg}");
    let msg = h
        .call_err("open_binary", json!({ "path": "/no/such/file" }))
        .await;
    assert!(msg.contains("/no/such/file"), "{msg}");
    let msg = h
        .call_err("get_evidence", json!({ "evidence_id": "ev_nothex" }))
        .await;
    assert!(msg.contains("Evidence id"), "{msg}");
    let params = rmcp::model::CallToolRequestParams::new("format_disk");
    let e = h.client.call_tool(params).await.unwrap_err();
    assert_eq!(error_code(&e), Some(-32602));
}

#[tokio::test]
async fn every_tool_has_a_schema_description_and_annotations() {
    let h = start().await;
    let tools = h.client.list_all_tools().await.unwrap();
    for t in &tools {
        assert!(
            t.description.as_deref().is_some_and(|d| d.len() > 20),
            "{} lacks a description",
            t.name
        );
        assert!(
            t.annotations
                .as_ref()
                .is_some_and(|a| a.read_only_hint.is_some()),
            "{} lacks annotations",
            t.name
        );
        assert_eq!(
            t.input_schema.get("type").and_then(|v| v.as_str()),
            Some("object"),
            "{}",
            t.name
        );
    }
    let close = tools.iter().find(|t| t.name == "close_binary").unwrap();
    assert_eq!(
        close.annotations.as_ref().unwrap().destructive_hint,
        Some(true)
    );
}

#[tokio::test]
async fn results_carry_evidence_inline_and_recording_twice_keeps_one_row() {
    let h = start().await;
    h.call("open_binary", json!({ "path": "/usr/bin/ls" }))
        .await;
    let a = h
        .call("list_procedures", json!({ "offset": 0, "limit": 5 }))
        .await;
    let b = h
        .call("list_procedures", json!({ "offset": 0, "limit": 5 }))
        .await;
    assert_eq!(a["evidence"]["id"], b["evidence"]["id"]);
    assert_eq!(a["evidence"]["new"], true);
    assert_eq!(b["evidence"]["new"], false);
    assert_eq!(a["procedures"].as_array().unwrap().len(), 5);
    assert_eq!(a["next_offset"], 5);
    let id = a["evidence"]["id"].as_str().unwrap();
    let stored = h.call("get_evidence", json!({ "evidence_id": id })).await;
    assert_eq!(stored["record"]["operation"], "list_procedures");
    assert_eq!(stored["record"]["provider"]["id"], "auto");
    assert_eq!(stored["record"]["subject"]["name"], "ls");
    assert_eq!(stored["record"]["result"]["procedures"], a["procedures"]);
    let ledger = h.call("list_evidence", json!({})).await;
    assert_eq!(ledger["total"], 2, "open_binary + one list_procedures");
}

#[tokio::test]
async fn list_procedures_pages_through_the_complete_inventory() {
    let h = start().await;
    let opened = h
        .call("open_binary", json!({ "path": "/usr/bin/ls" }))
        .await;
    let total = opened["documents"][0]["procedures"].as_u64().unwrap();
    let mut seen = std::collections::BTreeSet::new();
    let mut offset = Some(0u64);
    while let Some(o) = offset {
        let page = h
            .call("list_procedures", json!({ "offset": o, "limit": 500 }))
            .await;
        assert_eq!(page["total"].as_u64(), Some(total));
        for p in page["procedures"].as_array().unwrap() {
            assert!(seen.insert(p["address"].as_str().unwrap().to_owned()));
        }
        offset = page["next_offset"].as_u64();
    }
    assert_eq!(seen.len() as u64, total);
    let msg = h
        .call_err("list_procedures", json!({ "document": "nope" }))
        .await;
    assert!(msg.contains("documents: ls"), "{msg}");
}

#[tokio::test]
async fn unknown_resolution_rules_are_enforced() {
    let h = start().await;
    let opened = h
        .call("open_binary", json!({ "path": "/usr/bin/ls" }))
        .await;
    let ev = opened["evidence"]["id"].as_str().unwrap();
    let u = h.call("record_unknown", json!({ "question": "q?" })).await;
    let id = u["id"].as_str().unwrap();
    let msg = h.call_err("update_unknown", json!({ "unknown_id": id, "expected_revision": 1, "status": "resolved", "resolution": "verified" })).await;
    assert!(msg.contains("at least one supporting Evidence"), "{msg}");
    let missing = format!("ev_{}", "0".repeat(64));
    let msg = h.call_err("update_unknown", json!({ "unknown_id": id, "expected_revision": 1, "status": "resolved", "resolution": "verified", "supporting_evidence_ids": [missing] })).await;
    assert!(msg.contains("not in this session's ledger"), "{msg}");
    let msg = h.call_err("update_unknown", json!({ "unknown_id": id, "expected_revision": 1, "status": "resolved", "resolution": "withdrawn" })).await;
    assert!(msg.contains("rationale"), "{msg}");
    let msg = h
        .call_err(
            "update_unknown",
            json!({ "unknown_id": id, "expected_revision": 7, "status": "blocked" }),
        )
        .await;
    assert!(msg.contains("revision 1, not 7"), "{msg}");
    let done = h.call("update_unknown", json!({ "unknown_id": id, "expected_revision": 1, "status": "resolved", "resolution": "verified", "supporting_evidence_ids": [ev] })).await;
    assert_eq!(done["head"]["revision"], 2);
    assert_eq!(done["head"]["supporting"][0], ev);
    assert_eq!(h.call("list_unknowns", json!({})).await["total"], 0);
    assert_eq!(
        h.call("list_unknowns", json!({ "include_resolved": true }))
            .await["total"],
        1
    );
}

#[tokio::test]
async fn export_never_overwrites_unless_told_and_close_deletes_the_database() {
    let h = start().await;
    let opened = h
        .call("open_binary", json!({ "path": "/usr/bin/ls" }))
        .await;
    let session = h.call("binary_session", json!({})).await;
    let db = std::path::PathBuf::from(session["database"].as_str().unwrap());
    assert!(db.exists());
    let out = tempfile::tempdir().unwrap();
    let dest = out.path().join("copy.db");
    let r = h.call("export_evidence", json!({ "path": dest })).await;
    assert_eq!(r["evidence"], 1);
    let msg = h.call_err("export_evidence", json!({ "path": dest })).await;
    assert!(msg.contains("exists"), "{msg}");
    h.call(
        "export_evidence",
        json!({ "path": dest, "overwrite": true }),
    )
    .await;
    let lines = out.path().join("ledger.jsonl");
    h.call(
        "export_evidence",
        json!({ "path": lines, "format": "jsonl" }),
    )
    .await;
    let text = std::fs::read_to_string(&lines).unwrap();
    assert!(text.contains(opened["evidence"]["id"].as_str().unwrap()));
    // The exported copy is a readable database holding the same ledger.
    let copy = rusqlite::Connection::open(&dest).unwrap();
    let n: i64 = copy
        .query_row("select count(*) from evidence", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 1);

    let closed = h.call("close_binary", json!({})).await;
    assert_eq!(closed["evidence_dropped"], 1);
    let dir = db.parent().unwrap();
    assert!(
        !dir.exists(),
        "close deletes the session directory with -wal and -shm"
    );
    let msg = h.call_err("close_binary", json!({})).await;
    assert!(msg.contains("no binary session"), "{msg}");
}

#[tokio::test]
async fn allowed_roots_confine_every_path_a_tool_takes() {
    let state = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    std::fs::copy("/bin/true", root.path().join("true")).unwrap();
    std::os::unix::fs::symlink("/usr/bin/ls", root.path().join("escape")).unwrap();
    let settings = rea::settings::Settings {
        state_dir: state.path().to_owned(),
        config_dir: None,
        allowed_roots: rea::fsroot::Roots::new([root.path()]),
    };
    let s = settings.check_path(&root.path().join("true"));
    assert!(s.is_ok());
    let e = settings
        .check_path(&root.path().join("escape"))
        .unwrap_err();
    assert!(e.contains("outside the allowed roots"), "{e}");
    let e = settings
        .check_path(&root.path().join("../../usr/bin/ls"))
        .unwrap_err();
    assert!(e.contains("outside") || e.contains("No such file"), "{e}");
    assert!(
        settings
            .check_new_path(std::path::Path::new("/tmp/elsewhere.db"))
            .is_err()
    );
}

#[tokio::test]
async fn a_misspelled_argument_is_refused_and_records_nothing() {
    let h = start().await;
    h.call("open_binary", json!({ "path": "/usr/bin/ls" }))
        .await;
    let msg = h
        .call_err("list_procedures", json!({ "offest": 400, "limit": 1 }))
        .await;
    assert!(msg.contains("offest"), "{msg}");
    assert_eq!(
        h.call("list_evidence", json!({})).await["total"],
        1,
        "the refused call recorded nothing"
    );
}

#[tokio::test]
async fn open_binary_reports_progress_when_the_request_carries_a_token() {
    let mut h = start().await;
    let mut params = rmcp::model::CallToolRequestParams::new("open_binary").with_arguments(
        json!({ "path": crate::common::fixture("fsevents/package/fsevents.node") })
            .as_object()
            .cloned()
            .unwrap(),
    );
    params.meta = Some(rmcp::model::RequestMetaObject::with_progress_token(
        rmcp::model::ProgressToken(rmcp::model::NumberOrString::Number(7)),
    ));
    let r = h.client.call_tool(params).await.unwrap();
    assert_ne!(r.is_error, Some(true));
    let mut progress = 0;
    while let Ok(Some(kind)) =
        tokio::time::timeout(std::time::Duration::from_secs(2), h.changes.recv()).await
    {
        if kind == "progress" {
            progress += 1;
        }
    }
    assert!(
        progress >= 3,
        "one notification per document and one for storing; got {progress}"
    );
}

/// Every `required` list in every input and output schema, anywhere in the schema tree.
fn required_lists<'a>(schema: &'a serde_json::Value, out: &mut Vec<&'a Vec<serde_json::Value>>) {
    match schema {
        serde_json::Value::Object(map) => {
            if let Some(serde_json::Value::Array(list)) = map.get("required") {
                out.push(list);
            }
            map.values().for_each(|v| required_lists(v, out));
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| required_lists(v, out)),
        _ => {}
    }
}

#[tokio::test]
async fn no_schema_requires_a_property_twice_regression_15() {
    let h = start().await;
    for tool in h.client.list_all_tools().await.unwrap() {
        let mut lists = vec![];
        let input = serde_json::Value::Object((*tool.input_schema).clone());
        required_lists(&input, &mut lists);
        let output = tool
            .output_schema
            .as_ref()
            .map(|s| serde_json::Value::Object((**s).clone()));
        if let Some(o) = &output {
            required_lists(o, &mut lists);
        }
        for list in lists {
            let mut names: Vec<&str> = list.iter().filter_map(|v| v.as_str()).collect();
            names.sort_unstable();
            let before = names.len();
            names.dedup();
            assert_eq!(before, names.len(), "{}: required {list:?}", tool.name);
        }
    }
}
