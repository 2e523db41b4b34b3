//! Procedure-level tools on real binaries of this machine.

use serde_json::json;

use crate::common::{fixture, start};

#[tokio::test]
async fn a_procedure_resolves_by_name_address_or_inner_address() {
    let h = start().await;
    h.call(
        "open_binary",
        json!({ "path": "/usr/lib/x86_64-linux-gnu/libc.so.6" }),
    )
    .await;
    let by_name = h
        .call("procedure_info", json!({ "procedure": "malloc" }))
        .await;
    let address = by_name["procedure"]["address"].as_str().unwrap().to_owned();
    assert_eq!(by_name["procedure"]["name"], "malloc");
    assert!(by_name["size"].as_u64().unwrap() > 0);
    assert_eq!(by_name["section"], ".text");
    let by_address = h
        .call("procedure_info", json!({ "procedure": address }))
        .await;
    assert_eq!(by_address["procedure"], by_name["procedure"]);
    let inner = format!("{:#x}", u64::from_str_radix(&address[2..], 16).unwrap() + 3);
    let inside = h
        .call("procedure_info", json!({ "procedure": inner }))
        .await;
    assert_eq!(inside["procedure"]["address"], address.as_str());
    assert_eq!(inside["inside"], inner.as_str());
    let msg = h
        .call_err(
            "procedure_info",
            json!({ "procedure": "no_such_function_anywhere" }),
        )
        .await;
    assert!(msg.contains("no procedure named"), "{msg}");
}

#[tokio::test]
async fn an_ambiguous_name_answers_with_the_candidates() {
    let h = start().await;
    h.call(
        "open_binary",
        json!({ "path": fixture("fsevents/package/fsevents.node") }),
    )
    .await;
    let docs = h.call("list_documents", json!({})).await;
    let first = docs["documents"][0]["name"].as_str().unwrap().to_owned();
    let page = h
        .call(
            "list_procedures",
            json!({ "document": first, "limit": 500 }),
        )
        .await;
    let named = page["procedures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"].is_string())
        .unwrap()["name"]
        .as_str()
        .unwrap()
        .to_owned();
    let msg = h
        .call_err("procedure_info", json!({ "procedure": named }))
        .await;
    assert!(
        msg.contains("ambiguous") && msg.contains("Candidates"),
        "{msg}"
    );
    let one = h
        .call(
            "procedure_info",
            json!({ "procedure": named, "document": first }),
        )
        .await;
    assert_eq!(one["procedure"]["document"], first.as_str());
}

#[tokio::test]
async fn callers_and_callees_agree_and_assembly_pages() {
    let h = start().await;
    h.call(
        "open_binary",
        json!({ "path": "/usr/lib/x86_64-linux-gnu/libc.so.6" }),
    )
    .await;
    let callees = h
        .call("procedure_callees", json!({ "procedure": "puts" }))
        .await;
    let called = callees["callees"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["kind"] == "procedure")
        .unwrap()["target"]
        .as_str()
        .unwrap()
        .to_owned();
    let callers = h
        .call("procedure_callers", json!({ "procedure": called }))
        .await;
    let puts = h
        .call("procedure_info", json!({ "procedure": "puts" }))
        .await["procedure"]["address"]
        .clone();
    assert!(
        callers["callers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["procedure"] == puts),
        "{callers}"
    );
    let page = h
        .call(
            "procedure_assembly",
            json!({ "procedure": "puts", "limit": 5 }),
        )
        .await;
    assert_eq!(page["instructions"].as_array().unwrap().len(), 5);
    assert_eq!(page["instructions"][0]["address"], puts);
    assert_eq!(page["next_offset"], 5);
    let dossier = h
        .call("analyze_function", json!({ "procedure": "puts" }))
        .await;
    assert!(!dossier["instructions"].as_array().unwrap().is_empty());
    assert_eq!(dossier["evidence"]["operation"], "analyze_function");
}

#[tokio::test]
async fn strings_and_their_references() {
    let h = start().await;
    h.call("open_binary", json!({ "path": "/usr/bin/ls" }))
        .await;
    let found = h
        .call("search_strings", json!({ "pattern": "--help", "limit": 5 }))
        .await;
    assert!(found["total"].as_u64().unwrap() >= 1, "{found}");
    let m = &found["matches"][0];
    assert!(m["text"].as_str().unwrap().contains("--help"));
    let re = h
        .call(
            "search_strings",
            json!({ "pattern": "^Usage: ", "regex": true }),
        )
        .await;
    assert!(re["total"].as_u64().unwrap() >= 1);
    let bad = h
        .call_err("search_strings", json!({ "pattern": "(", "regex": true }))
        .await;
    assert!(!bad.is_empty());
    let address = re["matches"][0]["address"].as_str().unwrap();
    let refs = h.call("xrefs", json!({ "address": address })).await;
    assert!(refs["total_code"].as_u64().unwrap() >= 1, "{refs}");
}

#[tokio::test]
async fn a_deep_provider_disassembles_when_named_and_is_recorded_as_itself() {
    let h = start().await;
    h.call(
        "open_binary",
        json!({ "path": "/usr/lib/x86_64-linux-gnu/libc.so.6" }),
    )
    .await;
    let deep = rea::providers::deep::candidates("elf", None);
    let Some(objdump) = deep.iter().find(|c| c.id == "objdump") else {
        // objdump comes with binutils, which .ci/run installs.
        panic!("objdump is not installed; run .ci/run's apt step");
    };
    let r = h
        .call(
            "procedure_assembly",
            json!({ "procedure": "puts", "provider_id": objdump.id }),
        )
        .await;
    assert_eq!(r["evidence"]["provider"]["id"], "objdump");
    assert!(
        r["evidence"]["provider"]["version"]
            .as_str()
            .unwrap()
            .contains("objdump")
    );
    assert!(!r["instructions"].as_array().unwrap().is_empty());
    let msg = h
        .call_err(
            "procedure_assembly",
            json!({ "procedure": "puts", "provider_id": "nonexistent" }),
        )
        .await;
    assert!(msg.contains("not a deep provider candidate"), "{msg}");
}
