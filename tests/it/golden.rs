//! Golden Evidence ids: a handful of canonical records (open_binary, list_documents,
//! list_procedures, inspect_artifact and its pages, compare_artifacts, analyze_javascript_application
//! and a process capture), recorded over MCP and pinned by id.
//!
//! An Evidence id is the digest of its record's canonical JSON, so these ids pin the exact text of
//! every field: the vocabulary (format, architecture, role), the parameters as serialized, the
//! result shapes, subject, provider stamp, confidence and authority. A refactor that keeps them
//! keeps old ledgers meaningful. If one must change, change it here with the reason, and bump the
//! record version so old ledgers still verify.
//!
//! The ids also depend on what the analyses find (a document's procedures, an inventory's parts)
//! and on the crate version (in the provider stamp): a change there changes them too, and the
//! failure message names every record whose id moved.
//!
//! Subjects carry canonical paths, so the inputs sit at one fixed path, `/tmp/rea-golden-v1`,
//! created once by renaming a fully written staging directory into place (so concurrent test runs
//! never see it half made) and checked byte for byte before use.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::common::{Mode, fixture, start, start_in};

const ROOT: &str = "/tmp/rea-golden-v1";

/// The files of the golden root: path relative to it, and where its bytes come from.
fn inputs() -> Vec<(&'static str, Vec<u8>)> {
    let fixture_bytes = |rel: &str| std::fs::read(fixture(rel)).unwrap();
    let app = "node-notifier/package/vendor/mac.noindex/terminal-notifier.app";
    let mut files = vec![
        (
            "liba_both.dylib",
            fixture_bytes("delocate/delocate/tests/data/liba_both.dylib"),
        ),
        (
            "liba.dylib",
            fixture_bytes("delocate/delocate/tests/data/liba.dylib"),
        ),
        (
            "liba_12.dylib",
            fixture_bytes("delocate/delocate/tests/data/liba_12.dylib"),
        ),
        (
            "js-app/package.json",
            br#"{"name":"golden","version":"1.0.0","main":"main.js"}"#.to_vec(),
        ),
        (
            "js-app/main.js",
            b"const { app, BrowserWindow, ipcMain } = require('electron');\n\
              const path = require('path');\n\
              ipcMain.handle('search', () => 1);\n\
              app.whenReady().then(() => {\n\
              \x20 const w = new BrowserWindow({ webPreferences: { nodeIntegration: true, contextIsolation: false, preload: path.join(__dirname, 'preload.js') } });\n\
              \x20 w.loadURL('https://example.com/');\n\
              });\n"
                .to_vec(),
        ),
        (
            "js-app/preload.js",
            b"const { contextBridge, ipcRenderer } = require('electron');\n\
              contextBridge.exposeInMainWorld('api', { search: (q) => ipcRenderer.invoke('search', q) });\n"
                .to_vec(),
        ),
        ("bin/hello.sh", b"#!/bin/sh\necho golden\n".to_vec()),
    ];
    for rel in [
        "Contents/Info.plist",
        "Contents/MacOS/terminal-notifier",
        "Contents/PkgInfo",
        "Contents/Resources/Terminal.icns",
        "Contents/Resources/en.lproj/Credits.rtf",
        "Contents/Resources/en.lproj/InfoPlist.strings",
        "Contents/Resources/en.lproj/MainMenu.nib",
    ] {
        let bytes = fixture_bytes(&format!("{app}/{rel}"));
        let name: &'static str = Box::leak(format!("terminal-notifier.app/{rel}").into_boxed_str());
        files.push((name, bytes));
    }
    files
}

/// The golden root, made once and checked against [`inputs`].
fn golden_root() -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let root = Path::new(ROOT);
    let files = inputs();
    if !root.exists() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let staging = PathBuf::from(format!("{ROOT}.staging-{}-{nanos}", std::process::id()));
        for (rel, bytes) in &files {
            let path = staging.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, bytes).unwrap();
            let mode = if rel.ends_with(".sh") || rel.contains("/MacOS/") {
                0o755
            } else {
                0o644
            };
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        // Another run may have renamed its own copy into place first; either copy is the same.
        if std::fs::rename(&staging, root).is_err() {
            let _ = std::fs::remove_dir_all(&staging);
        }
    }
    let mut listed = 0;
    for (rel, bytes) in &files {
        let found = std::fs::read(root.join(rel)).unwrap_or_default();
        assert!(
            &found == bytes,
            "{ROOT}/{rel} differs from the golden input: delete {ROOT} and run again"
        );
        listed += 1;
    }
    let on_disk = walk(root);
    assert_eq!(
        on_disk, listed,
        "{ROOT} holds files the golden inputs do not: delete it and run again"
    );
    root.to_owned()
}

fn walk(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                walk(&e.path())
            } else {
                1
            }
        })
        .sum()
}

fn id(v: &Value) -> String {
    v["evidence"]["id"].as_str().unwrap().to_owned()
}

/// The ids every golden record must have, by label.
const GOLDEN: &[(&str, &str)] = &[
    (
        "open_binary liba_both.dylib",
        "ev_008dc32fccbac385a6c40be06a3692bb506469344c6fe2e39e45318757268cf0",
    ),
    (
        "list_documents",
        "ev_453894eba521d4a1acb448f1e1f0e8eb331a659fc9474eba391055782998f5a1",
    ),
    // Moved by issue 15's fixes, not by how records are built: Mach-O procedures lost the C
    // compiler's leading underscore (kept as raw_name) and gained their size. Before:
    // ev_4736d8611832b4fc715f86735e5db988814e4530b8bc5fad78896e0410a0ad00 and
    // ev_7a502ade2ed11016ced3d1b08e27e5e099e1dfa7307c0d080363d744f509348f.
    (
        "list_procedures offset 0 limit 5",
        "ev_98b65f0b6e8231fe55b637e37f732c9bd893a4c0e8ccd4cfaef7448992e8fd21",
    ),
    (
        "list_procedures arm64 limit 3",
        "ev_0eff695efa87da8ba16a872cb05feaef52c244d9f1e0bb5866d8d79f59b8bcb4",
    ),
    // Moved by issue 15's one name per slice: the universal file's slices are the parts
    // `liba_both.dylib (arm64)`, as open_binary names their documents, not `…#arm64`. Before:
    // ev_8c7a9cfbd797a1f897ea7296949171f0e4476404ba9ac2907c3d2d084865f025 and
    // ev_391e5763bd38e7add938f766b5162b59bdf1bdd41b259ac4311fd5a0189be953.
    (
        "inspect_artifact liba_both.dylib",
        "ev_b05742fb7e2bcb89a92233695d6e834696f8e0c512c735af35fda998f8d58a18",
    ),
    (
        "inspect_artifact/page 0",
        "ev_d42e6973f7b82b47f952219255eea6fcb4f78e5eed945620b10623834cdd2d0d",
    ),
    (
        "inspect_artifact liba.dylib",
        "ev_8dc6b2e7ded43bc27bb5c0d6855e230e0b0f31b634c19cb12f5d07310c8818b0",
    ),
    (
        "inspect_artifact liba_12.dylib",
        "ev_bc65c5aab1ca7ec0c7f31e9673a7a1f3734fc3d69462be88c00e034162a23af3",
    ),
    // Moved with issue 18: the procedures section counts procedures compared function by
    // function (added/removed/changed/unchanged totals and matched_by), no longer name sets;
    // was ev_a263fad8562c71ad549f6ea9c47f884bfa5807f32a1a774af4aafdb9fec52aa7. Moved with
    // issue 28: the section also counts ambiguous and uncertain procedures, which are no longer
    // matches.
    (
        "compare_artifacts liba → liba_12",
        "ev_5b1087eefd5b7c071c9546698f2ce19d8a8473c211f835b78a98123bc94d4352",
    ),
    (
        "open_binary terminal-notifier.app",
        "ev_76ad02eca2fafe4c9d07ba59c7792eae1334fff84c819b20d294ec55324ea226",
    ),
    (
        "inspect_artifact terminal-notifier.app",
        "ev_6f0a29a7b7d566672dbf547f63612a1b1ce2179683faf0a8ca73c89fca216d28",
    ),
    // Moved by issue 15's JavaScript identity: the subject digest is input.files_sha256 (every
    // file of the application), which the graph id covers too. Before:
    // ev_378d7a9c3d3de97703f79af2c9a342a24a4714c31e446b5df4df2bc019e81268.
    (
        "analyze_javascript_application js-app",
        "ev_a3b083e11716f1a392063cd30259d8890b1ac3b8357c0ccf3e9799814643cd2a",
    ),
    (
        "capture_process_scenario hello.sh",
        "ev_93a977cd3c10d98535bb1eb6f66a3fde5e791b04866f2aef3e3885e0e6f6ec99",
    ),
];

#[tokio::test]
async fn canonical_records_keep_their_ids() {
    let root = golden_root();
    let path = |rel: &str| root.join(rel).display().to_string();
    let mut got: Vec<(String, String)> = vec![];
    let h = start().await;

    let opened = h
        .call("open_binary", json!({ "path": path("liba_both.dylib") }))
        .await;
    got.push((
        "open_binary liba_both.dylib".into(),
        without_session(&h, &opened).await,
    ));
    let docs = h.call("list_documents", json!({})).await;
    got.push(("list_documents".into(), id(&docs)));
    let procs = h
        .call("list_procedures", json!({ "offset": 0, "limit": 5 }))
        .await;
    got.push(("list_procedures offset 0 limit 5".into(), id(&procs)));
    let one = h
        .call(
            "list_procedures",
            json!({ "document": "liba_both.dylib (arm64)", "limit": 3 }),
        )
        .await;
    got.push(("list_procedures arm64 limit 3".into(), id(&one)));
    let inv = h.call("inspect_artifact", json!({})).await;
    got.push(("inspect_artifact liba_both.dylib".into(), id(&inv)));
    for page in inv["pages"].as_array().unwrap() {
        got.push((
            format!("inspect_artifact/page {}", page["page"]),
            page["evidence_id"].as_str().unwrap().to_owned(),
        ));
    }

    h.call("open_binary", json!({ "path": path("liba.dylib") }))
        .await;
    let left = h.call("inspect_artifact", json!({})).await;
    h.call("open_binary", json!({ "path": path("liba_12.dylib") }))
        .await;
    let right = h.call("inspect_artifact", json!({})).await;
    got.push(("inspect_artifact liba.dylib".into(), id(&left)));
    got.push(("inspect_artifact liba_12.dylib".into(), id(&right)));
    let cmp = h
        .call(
            "compare_artifacts",
            json!({
                "left_manifest_id": left["manifest"]["id"],
                "right_manifest_id": right["manifest"]["id"],
            }),
        )
        .await;
    got.push(("compare_artifacts liba → liba_12".into(), id(&cmp)));

    let bundle = h
        .call(
            "open_binary",
            json!({ "path": path("terminal-notifier.app") }),
        )
        .await;
    got.push((
        "open_binary terminal-notifier.app".into(),
        without_session(&h, &bundle).await,
    ));
    let inv = h.call("inspect_artifact", json!({ "page_size": 4 })).await;
    got.push(("inspect_artifact terminal-notifier.app".into(), id(&inv)));

    let js = h
        .call(
            "analyze_javascript_application",
            json!({ "input_path": path("js-app") }),
        )
        .await;
    got.push(("analyze_javascript_application js-app".into(), id(&js)));

    got.push((
        "capture_process_scenario hello.sh".into(),
        capture_id(&root).await,
    ));

    let expected: Vec<(String, String)> = GOLDEN
        .iter()
        .map(|(l, i)| (l.to_string(), i.to_string()))
        .collect();
    let moved: Vec<String> = got
        .iter()
        .zip(expected.iter().map(Some).chain(std::iter::repeat(None)))
        .filter(|(g, e)| Some(*g) != *e)
        .map(|(g, e)| format!("{}: {} (pinned {:?})", g.0, g.1, e.map(|e| &e.1)))
        .collect();
    assert!(
        moved.is_empty() && got.len() == expected.len(),
        "golden Evidence ids moved:\n{}\nall ids now:\n{}",
        moved.join("\n"),
        got.iter()
            .map(|(l, i)| format!("    ({l:?}, {i:?}),"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// The id of an open_binary record with its session id replaced by a fixed one: the result names
/// the session it was opened in, which is new in every run.
async fn without_session(h: &crate::common::Harness, opened: &Value) -> String {
    let stored = h
        .call("get_evidence", json!({ "evidence_id": id(opened) }))
        .await;
    let mut record = stored["record"].clone();
    assert!(record["result"]["session_id"].is_string(), "{record}");
    record["result"]["session_id"] = json!("ses_golden");
    let record: rea::evidence::EvidenceRecord = serde_json::from_value(record).unwrap();
    record.id().unwrap().to_string()
}

/// The id of a capture's record once what a run measures (times, memory, process ids) and what
/// depends on the host (network isolation, tracing) is replaced by fixed values: everything else
/// of the record is pinned.
async fn capture_id(root: &Path) -> String {
    let state = tempfile::tempdir().unwrap();
    let config = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(config.path().join("prompts")).unwrap();
    std::fs::write(
        config.path().join("rea.toml"),
        format!(
            "[capture]\nenabled = true\nexecutable_roots = [{:?}]\nworking_directory_roots = [{:?}]\n",
            root.join("bin"),
            root
        ),
    )
    .unwrap();
    let h = start_in(Mode::Legacy, state, config).await;
    let c = h
        .call(
            "capture_process_scenario",
            json!({
                "approved": true,
                "executable": root.join("bin/hello.sh"),
                "working_directory": root,
                "wall_time_ms": 5000,
            }),
        )
        .await;
    let stored = h
        .call("get_evidence", json!({ "evidence_id": id(&c) }))
        .await;
    let mut record = stored["record"].clone();
    let result = &mut record["result"];
    assert_eq!(result["stdout"]["data"], "golden\n", "{result}");
    for field in [
        "wall_time_ms",
        "user_cpu_time_ms",
        "system_cpu_time_ms",
        "cpu_time_ms",
        "peak_rss_bytes",
    ] {
        assert!(result[field].is_u64(), "{field}: {result}");
        result[field] = json!(1);
    }
    result["leader_memory"] = Value::Null;
    result["leftover_processes"] = json!([]);
    result["network_isolation"] = json!("golden");
    result["traced"] = json!(false);
    let record: rea::evidence::EvidenceRecord = serde_json::from_value(record).unwrap();
    record.id().unwrap().to_string()
}
