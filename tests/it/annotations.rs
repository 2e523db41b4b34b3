//! Issue 26 items 1–4: analyst annotations as Evidence, shown beside the file's names in every
//! view (never in their place), revised append-only, checked, verified, exported, resumed and
//! completed. On the ground-truth corpus's stripped `graph.c` (x86-64 ELF, -O2), where the
//! addresses of `chain_a`, `chain_b` and `main` come from `nm` on the unstripped twin.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::common::{Harness, StdioServer, start, str_values};
use crate::corpus::{self, Opt, Source, Toolchain, Variant, run};

/// The address `nm` prints for the defined text symbol `raw`.
fn nm_address(path: &Path, raw: &str) -> u64 {
    let text = run("nm", &["--defined-only", path.to_str().unwrap()]);
    let found: Vec<u64> = text
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 3 && matches!(f[1], "T" | "t") && f[2] == raw)
                .then(|| u64::from_str_radix(f[0], 16).unwrap())
        })
        .collect();
    assert_eq!(found.len(), 1, "{raw}: {text}");
    found[0]
}

/// The stripped build and the addresses of `chain_a`, `chain_b` (which `chain_a` calls) and
/// `main`.
fn stripped_graph() -> (PathBuf, String, String, String) {
    let stripped = corpus::build(Variant::new(
        Source::Graph,
        Toolchain::ElfX64,
        Opt::O2,
        true,
    ));
    let twin = corpus::build(Variant::new(
        Source::Graph,
        Toolchain::ElfX64,
        Opt::O2,
        false,
    ));
    let hex = |n: &str| format!("{:#x}", nm_address(&twin, n));
    (stripped, hex("chain_a"), hex("chain_b"), hex("main"))
}

/// Opens the stripped build; returns the harness and the Evidence id of the open.
async fn opened(path: &Path) -> (Harness, String) {
    let h = start().await;
    let v = h.call("open_binary", json!({ "path": path })).await;
    let ev = v["evidence"]["id"].as_str().unwrap().to_owned();
    (h, ev)
}

/// The entry of `list` whose `key` is `value`.
fn entry<'a>(list: &'a Value, key: &str, value: &str) -> &'a Value {
    list.as_array()
        .unwrap()
        .iter()
        .find(|e| e[key] == value)
        .unwrap_or_else(|| panic!("no {key} {value} in {list}"))
}

/// How many `annotate` records the ledger holds.
async fn annotate_records(h: &Harness) -> u64 {
    let v = h
        .call("list_evidence", json!({ "operation": "annotate" }))
        .await;
    v["total"].as_u64().unwrap()
}

#[tokio::test]
async fn an_analyst_name_shows_beside_the_file_name_in_every_view_regression_26() {
    let (path, chain_a, chain_b, main) = stripped_graph();
    let (h, ev) = opened(&path).await;
    // The stripped file names neither procedure.
    let info = h
        .call("procedure_info", json!({ "procedure": chain_b }))
        .await;
    assert!(info["procedure"].get("name").is_none(), "{info}");
    let v = h
        .call(
            "annotate",
            json!({
                "procedure": chain_b, "kind": "name", "text": "scale_twice",
                "rationale": "doubles chain_c's result", "cites": [ev],
            }),
        )
        .await;
    let ann = v["annotation"]["id"].as_str().unwrap().to_owned();
    assert!(ann.starts_with("ann_"), "{v}");
    assert_eq!(v["annotation"]["head"]["revision"], 1);
    assert_eq!(v["annotation"]["address"], chain_b.as_str());
    assert_eq!(v["annotation"]["scope"], "procedure");
    assert_eq!(v["evidence"]["authority"], "analyst-inference");
    assert_eq!(v["evidence"]["confidence"], "inferred");
    assert_eq!(v["evidence"]["links"], json!([ev]));
    assert_eq!(
        v["annotation"]["head"]["evidence_id"], v["evidence"]["id"],
        "{v}"
    );

    // The caller's callees.
    let callees = h
        .call("procedure_callees", json!({ "procedure": chain_a }))
        .await;
    let edge = entry(&callees["callees"], "target", &chain_b);
    assert_eq!(edge["analyst_name"], "scale_twice", "{edge}");
    assert_eq!(edge["annotation_id"], ann.as_str());
    assert!(
        edge["name"].is_null(),
        "the file's name stays absent: {edge}"
    );
    // The view's record links the annotation it showed.
    let links = callees["evidence"]["links"].as_array().unwrap();
    assert_eq!(links, &vec![v["evidence"]["id"].clone()]);
    // The caller's assembly call operand.
    let asm = h
        .call(
            "procedure_assembly",
            json!({ "procedure": chain_a, "limit": 2000 }),
        )
        .await;
    let call = entry(&asm["instructions"], "target", &chain_b);
    assert_eq!(call["analyst_name"], "scale_twice", "{call}");
    // Callers of chain_b, named by its analyst name.
    let callers = h
        .call("procedure_callers", json!({ "procedure": "scale_twice" }))
        .await;
    assert_eq!(callers["procedure"]["address"], chain_b.as_str());
    assert_eq!(callers["procedure"]["analyst_name"], "scale_twice");
    assert_eq!(callers["analyst_name"], "scale_twice");
    entry(&callers["callers"], "procedure", &chain_a);
    // call_paths.
    let paths = h
        .call(
            "call_paths",
            json!({ "from": chain_a, "to": "scale_twice" }),
        )
        .await;
    assert_eq!(paths["to"]["analyst_name"], "scale_twice", "{paths}");
    assert_eq!(
        paths["paths"][0]["steps"][1]["node"]["analyst_name"],
        "scale_twice"
    );
    // xrefs to it.
    let xrefs = h.call("xrefs", json!({ "address": chain_b })).await;
    assert_eq!(xrefs["analyst_name"], "scale_twice", "{xrefs}");
    // analyze_function of the caller.
    let dossier = h
        .call("analyze_function", json!({ "procedure": chain_a }))
        .await;
    assert_eq!(
        entry(&dossier["callees"], "target", &chain_b)["analyst_name"],
        "scale_twice"
    );
    // procedure_info.
    let info = h
        .call("procedure_info", json!({ "procedure": chain_b }))
        .await;
    assert_eq!(info["procedure"]["analyst_name"], "scale_twice");
    assert_eq!(info["procedure"]["annotation_id"], ann.as_str());
    // list_procedures and search_procedures (by the analyst name).
    let all = h.call("list_procedures", json!({ "limit": 500 })).await;
    let row = entry(&all["procedures"], "address", &chain_b);
    assert_eq!(row["analyst_name"], "scale_twice");
    assert!(row.get("name").is_none(), "{row}");
    let found = h
        .call("search_procedures", json!({ "query": "SCALE_tw" }))
        .await;
    assert_eq!(found["total"], 1, "{found}");
    assert_eq!(found["procedures"][0]["address"], chain_b.as_str());
    assert_eq!(found["procedures"][0]["analyst_name"], "scale_twice");
    // Completion offers it, live.
    let c = h
        .complete("investigate_feature", "procedure", "scale")
        .await;
    assert_eq!(str_values(&c), ["scale_twice"]);
    assert_eq!(c.total, Some(1));

    // A named procedure keeps its file name; the analyst's comes beside it.
    h.call(
        "annotate",
        json!({
            "procedure": "main", "kind": "name", "text": "entry_point",
            "rationale": "the program starts here", "cites": [ev],
        }),
    )
    .await;
    let info = h.call("procedure_info", json!({ "procedure": main })).await;
    assert_eq!(info["procedure"]["name"], "main", "{info}");
    assert_eq!(info["procedure"]["analyst_name"], "entry_point", "{info}");
    let row = entry(
        &h.call("list_procedures", json!({ "limit": 500 })).await["procedures"],
        "address",
        &main,
    )
    .clone();
    assert_eq!(
        (&row["name"], &row["analyst_name"]),
        (&json!("main"), &json!("entry_point"))
    );
    // A name the file gives another procedure is refused.
    let e = h
        .call_err(
            "annotate",
            json!({
                "procedure": chain_a, "kind": "name", "text": "main",
                "rationale": "r", "cites": [ev],
            }),
        )
        .await;
    assert_eq!(
        e,
        format!(
            "text \"main\" is the file's name of procedure {main} in {}; choose another name",
            path.file_name().unwrap().to_str().unwrap()
        )
    );
    // A second name annotation of the same procedure is a revision, not a new annotation.
    let e = h
        .call_err(
            "annotate",
            json!({
                "procedure": chain_b, "kind": "name", "text": "other",
                "rationale": "r", "cites": [ev],
            }),
        )
        .await;
    assert!(
        e.ends_with(&format!(
            "already has name annotation {ann}: revise it with supersedes {ann}"
        )),
        "{e}"
    );
}

/// Issue 26 item 3: a data location the analyst names shows that name beside the operand's own
/// (`OPS`, which the stripped build no longer names) in the assembly and the dossier of the
/// procedure that reads it, with the address as the operand's name when the file has none.
#[tokio::test]
async fn an_analyst_data_name_shows_on_the_operands_that_use_it_regression_26() {
    let (path, _, _, _) = stripped_graph();
    let twin = corpus::build(Variant::new(
        Source::Graph,
        Toolchain::ElfX64,
        Opt::O2,
        false,
    ));
    let symbol = |name: &str| {
        let text = run("nm", &["--defined-only", twin.to_str().unwrap()]);
        let line = text
            .lines()
            .find(|l| l.split_whitespace().nth(2) == Some(name))
            .unwrap_or_else(|| panic!("{name}: {text}"));
        format!(
            "{:#x}",
            u64::from_str_radix(line.split_whitespace().next().unwrap(), 16).unwrap()
        )
    };
    let (ops, apply) = (symbol("OPS"), symbol("apply"));
    let (h, ev) = opened(&path).await;
    let before = h
        .call(
            "procedure_assembly",
            json!({ "procedure": apply, "limit": 200 }),
        )
        .await;
    let uses = |asm: &Value| -> Vec<Value> {
        asm["instructions"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| i["data"]["address"] == ops.as_str())
            .map(|i| i["data"].clone())
            .collect()
    };
    assert!(
        uses(&before).is_empty(),
        "stripped: no operand names OPS: {before}"
    );
    let v = h
        .call(
            "annotate",
            json!({
                "address": ops, "kind": "name", "text": "operation_table",
                "rationale": "apply indexes it with i & 3 and calls the entry", "cites": [ev],
            }),
        )
        .await;
    let ann = v["annotation"]["id"].as_str().unwrap().to_owned();
    assert_eq!(v["annotation"]["scope"], "data", "{v}");
    let after = h
        .call(
            "procedure_assembly",
            json!({ "procedure": apply, "limit": 200 }),
        )
        .await;
    assert_eq!(
        uses(&after),
        vec![json!({
            "address": ops, "name": ops, "analyst_name": "operation_table", "annotation_id": ann,
        })],
        "{after}"
    );
    assert_eq!(after["evidence"]["links"], json!([v["evidence"]["id"]]));
    let dossier = h
        .call("analyze_function", json!({ "procedure": apply }))
        .await;
    assert_eq!(uses(&dossier).len(), 1, "{dossier}");
    assert_eq!(uses(&dossier)[0]["analyst_name"], "operation_table");
}

#[tokio::test]
async fn revisions_append_a_stale_head_is_refused_and_withdrawing_is_a_revision_regression_26() {
    let (path, chain_a, chain_b, _) = stripped_graph();
    let (h, ev) = opened(&path).await;
    let v = h
        .call(
            "annotate",
            json!({
                "procedure": chain_b, "kind": "name", "text": "scale_twice",
                "rationale": "first look", "cites": [ev],
            }),
        )
        .await;
    let ann = v["annotation"]["id"].as_str().unwrap().to_owned();
    let v = h
        .call(
            "annotate",
            json!({
                "supersedes": ann, "revision": 1, "kind": "name", "text": "scale_by_two",
                "rationale": "a closer look", "cites": [ev],
            }),
        )
        .await;
    assert_eq!(v["annotation"]["head"]["revision"], 2);
    assert_eq!(v["annotation"]["id"], ann.as_str());
    let callees = h
        .call("procedure_callees", json!({ "procedure": chain_a }))
        .await;
    assert_eq!(
        entry(&callees["callees"], "target", &chain_b)["analyst_name"],
        "scale_by_two"
    );
    // Completion follows the head.
    assert!(
        str_values(
            &h.complete("investigate_feature", "procedure", "scale_t")
                .await
        )
        .is_empty()
    );
    assert_eq!(
        str_values(
            &h.complete("investigate_feature", "procedure", "scale_b")
                .await
        ),
        ["scale_by_two"]
    );
    // A revision made from revision 1 again is refused, and nothing is recorded.
    let before = annotate_records(&h).await;
    let e = h
        .call_err(
            "annotate",
            json!({
                "supersedes": ann, "revision": 1, "kind": "name", "text": "stale",
                "rationale": "late", "cites": [ev],
            }),
        )
        .await;
    assert_eq!(
        e,
        format!(
            "annotation {ann} is at revision 2, not 1: read it again (list_annotations) and retry"
        )
    );
    assert_eq!(annotate_records(&h).await, before);
    // Withdrawing is a revision; the view no longer shows the name.
    let v = h
        .call(
            "annotate",
            json!({
                "supersedes": ann, "revision": 2, "kind": "name", "withdraw": true,
                "rationale": "not sure any more",
            }),
        )
        .await;
    assert_eq!(v["annotation"]["head"]["revision"], 3);
    assert_eq!(v["annotation"]["head"]["withdrawn"], true);
    assert_eq!(v["annotation"]["head"]["text"], "scale_by_two");
    let callees = h
        .call("procedure_callees", json!({ "procedure": chain_a }))
        .await;
    let edge = entry(&callees["callees"], "target", &chain_b);
    assert!(edge.get("analyst_name").is_none(), "{edge}");
    assert!(
        str_values(
            &h.complete("investigate_feature", "procedure", "scale")
                .await
        )
        .is_empty()
    );
    // Listing: the withdrawn head only with history, and then every revision.
    let live = h.call("list_annotations", json!({})).await;
    assert_eq!(live["total"], 0, "{live}");
    let all = h
        .call(
            "list_annotations",
            json!({ "include_history": true, "procedure": chain_b }),
        )
        .await;
    assert_eq!(all["total"], 1, "{all}");
    let texts: Vec<&str> = all["annotations"][0]["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["scale_twice", "scale_by_two"]);
    assert_eq!(annotate_records(&h).await, 3);
}

#[tokio::test]
async fn a_bad_citation_or_declaration_records_nothing_regression_26() {
    let (path, _, chain_b, _) = stripped_graph();
    let (h, ev) = opened(&path).await;
    let missing = format!("ev_{}", "0".repeat(64));
    let e = h
        .call_err(
            "annotate",
            json!({
                "procedure": chain_b, "kind": "name", "text": "scale_twice",
                "rationale": "r", "cites": [ev, missing],
            }),
        )
        .await;
    assert_eq!(
        e,
        format!("cited Evidence {missing} is not in this session's ledger; nothing was recorded")
    );
    let e = h
        .call_err(
            "annotate",
            json!({
                "procedure": chain_b, "kind": "prototype", "text": "int scale(int x",
                "rationale": "r", "cites": [ev],
            }),
        )
        .await;
    assert_eq!(
        e,
        "prototype is not a C declaration rea accepts: '(' is never closed at byte 9"
    );
    let e = h
        .call_err(
            "annotate",
            json!({
                "procedure": chain_b, "kind": "name", "text": "two words",
                "rationale": "r", "cites": [ev],
            }),
        )
        .await;
    assert!(e.contains("character not allowed at byte 3"), "{e}");
    let e = h
        .call_err(
            "annotate",
            json!({
                "procedure": chain_b, "address": chain_b, "kind": "comment", "text": "x",
                "rationale": "r", "cites": [ev],
            }),
        )
        .await;
    assert_eq!(
        e,
        "name procedure or address, not both (neither annotates the document)"
    );
    assert_eq!(annotate_records(&h).await, 0);
    assert_eq!(h.call("list_annotations", json!({})).await["total"], 0);
    // A good prototype, an address comment and a document type are recorded and shown.
    let v = h
        .call(
            "annotate",
            json!({
                "procedure": chain_b, "kind": "prototype", "text": "int scale_twice(int x);",
                "rationale": "one int argument in edi", "cites": [ev],
            }),
        )
        .await;
    // angr's C parser read it (the suite runs with angr): nothing is left unchecked.
    let checked = v["checked"].as_array().unwrap();
    assert_eq!(
        checked.last().unwrap(),
        "parsed by angr's C parser (pycparser), as the decompiler reads it, with the document's types",
        "{v}"
    );
    assert_eq!(v["evidence"].get("limitations"), None);
    h.call(
        "annotate",
        json!({
            "address": chain_b, "kind": "comment", "text": "entry of the doubling",
            "rationale": "r", "cites": [ev],
        }),
    )
    .await;
    h.call(
        "annotate",
        json!({
            "kind": "type", "text": "struct pair { int a; int b; };",
            "rationale": "r", "cites": [ev],
        }),
    )
    .await;
    let info = h
        .call("procedure_info", json!({ "procedure": chain_b }))
        .await;
    assert_eq!(
        info["analyst_prototype"], "int scale_twice(int x);",
        "{info}"
    );
    let asm = h
        .call(
            "procedure_assembly",
            json!({ "procedure": chain_b, "limit": 1 }),
        )
        .await;
    assert_eq!(
        asm["instructions"][0]["analyst_comment"],
        "entry of the doubling"
    );
    assert_eq!(h.call("list_annotations", json!({})).await["total"], 3);
    assert_eq!(
        h.call("list_annotations", json!({ "kind": "type" })).await["annotations"][0]["scope"],
        "document"
    );
}

/// The session directory's database under `state`.
fn session_db(state: &Path) -> (String, PathBuf) {
    let dirs: Vec<_> = std::fs::read_dir(state.join("sessions"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("session.db").exists())
        .collect();
    assert_eq!(dirs.len(), 1);
    (
        dirs[0].file_name().to_str().unwrap().to_owned(),
        dirs[0].path().join("session.db"),
    )
}

fn rea(state: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_rea"))
        .arg("--state-dir")
        .arg(state)
        .args(args)
        .env_remove("REA_CONFIG_DIR")
        .output()
        .unwrap()
}

#[test]
fn annotations_resume_export_complete_and_an_edited_row_is_reported_regression_26() {
    let (path, chain_a, chain_b, _) = stripped_graph();
    let state = tempfile::tempdir().unwrap();
    let mut server = StdioServer::start(state.path());
    let ev = server.tool("open_binary", json!({ "path": path }))["evidence"]["id"].clone();
    let v = server.tool(
        "annotate",
        json!({
            "procedure": chain_b, "kind": "name", "text": "scale_twice",
            "rationale": "doubles", "cites": [ev],
        }),
    );
    let ann = v["annotation"]["id"].as_str().unwrap().to_owned();
    let record = v["evidence"]["id"].as_str().unwrap().to_owned();
    drop(server.stdin);
    assert!(server.child.wait().unwrap().success());

    // Resumed, the annotation is there and shown.
    let (id, db) = session_db(state.path());
    let mut server = StdioServer::start(state.path());
    server.tool("resume_session", json!({ "session_id": id }));
    let listed = server.tool("list_annotations", json!({}));
    assert_eq!(listed["annotations"][0]["id"], ann.as_str(), "{listed}");
    let callees = server.tool("procedure_callees", json!({ "procedure": chain_a }));
    assert_eq!(
        entry(&callees["callees"], "target", &chain_b)["analyst_name"],
        "scale_twice"
    );
    // The JSON-lines export carries its Evidence.
    let out = tempfile::tempdir().unwrap();
    let dest = out.path().join("ledger.jsonl");
    server.tool(
        "export_evidence",
        json!({ "path": dest, "format": "jsonl" }),
    );
    let exported = std::fs::read_to_string(&dest).unwrap();
    let line = exported
        .lines()
        .find(|l| l.contains(&record))
        .unwrap_or_else(|| panic!("{record} not exported"));
    let line: Value = serde_json::from_str(line).unwrap();
    assert_eq!(
        line["record"]["result"]["annotation_id"],
        ann.as_str(),
        "{line}"
    );
    drop(server.stdin);
    assert!(server.child.wait().unwrap().success());

    // `rea complete` offers the analyst name and the annotation id.
    let o = rea(
        state.path(),
        &[
            "complete",
            "investigate_feature",
            "procedure",
            "scale",
            "--session",
            &id,
        ],
    );
    assert_eq!(String::from_utf8_lossy(&o.stdout), "scale_twice\n");
    let o = rea(
        state.path(),
        &[
            "complete",
            "annotate",
            "supersedes",
            "ann_",
            "--session",
            &id,
        ],
    );
    assert_eq!(String::from_utf8_lossy(&o.stdout), format!("{ann}\n"));

    // The SQLite copy holds the rows.
    let copy = out.path().join("copy.db");
    let o = rea(
        state.path(),
        &[
            "evidence",
            "export",
            "--session",
            &id,
            copy.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let conn = rusqlite::Connection::open(&copy).unwrap();
    let text: String = conn
        .query_row(
            "select text from annotation_revisions where annotation_id = ?1",
            [&ann],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(text, "scale_twice");
    drop(conn);

    // A sound ledger verifies clean; a revision edited on disk is reported.
    let o = rea(
        state.path(),
        &["evidence", "verify", "--session", &id, "--json"],
    );
    let report: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(report["problems"], json!([]), "{report}");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute(
        "update annotation_revisions set text = 'forged' where annotation_id = ?1",
        [&ann],
    )
    .unwrap();
    drop(conn);
    let o = rea(
        state.path(),
        &["evidence", "verify", "--session", &id, "--json"],
    );
    let report: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(!o.status.success());
    let problems = report["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 3, "{report}");
    assert_eq!(
        problems[..2],
        [
            json!(format!(
                "annotation {ann} revision 1: the row does not hold what its Evidence {record} records"
            )),
            json!(format!(
                "annotation {ann}: its head does not match its revision 1"
            )),
        ],
        "{report}"
    );
    // The ledger's chain covers annotation revisions too (issue 25): the edit is named there, and
    // resume refuses the session.
    let chained = problems[2].as_str().unwrap();
    assert!(
        chained.starts_with(&format!("annotation {ann} revision 1 hashes to "))
            && chained.ends_with(": the revision was edited"),
        "{chained}"
    );
    let mut server = StdioServer::start(state.path());
    let refused = server.request(
        "tools/call",
        json!({"name": "resume_session", "arguments": { "session_id": id }}),
    );
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    let text = refused["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains(&format!("annotation {ann} revision 1 hashes to")),
        "{text}"
    );
}
