//! The command line and the server make every observation the same way: for each operation the
//! CLI offers (`inspect`, `analyze`, `compare`, `capture`, `doctor`, `procedures`), the record
//! `--json` (or `--evidence`) prints has the id the server records for the same observation.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::common::{Harness, Mode, fixture, javascript_app, start_in};

/// A server whose settings a CLI run can match exactly: its state and config directories, no
/// allowed roots.
struct Pair {
    h: Harness,
    state: std::path::PathBuf,
    config: std::path::PathBuf,
}

async fn pair() -> Pair {
    pair_with_config("").await
}

async fn pair_with_config(rea_toml: &str) -> Pair {
    let state = tempfile::tempdir().unwrap();
    let config = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(config.path().join("prompts")).unwrap();
    if !rea_toml.is_empty() {
        std::fs::write(config.path().join("rea.toml"), rea_toml).unwrap();
    }
    let (state_path, config_path) = (state.path().to_owned(), config.path().to_owned());
    Pair {
        h: start_in(Mode::Legacy, state, config).await,
        state: state_path,
        config: config_path,
    }
}

impl Pair {
    /// Runs the built `rea` with the server's settings; returns its JSON output.
    fn cli(&self, args: &[&str]) -> Value {
        let out = Command::new(env!("CARGO_BIN_EXE_rea"))
            .arg("--state-dir")
            .arg(&self.state)
            .args(args)
            .env("REA_CONFIG_DIR", &self.config)
            .env_remove("REA_ALLOWED_ROOTS")
            .env_remove("REA_STATE_DIR")
            .output()
            .unwrap();
        assert!(
            out.status.success() || out.status.code() == Some(2),
            "rea {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "rea {args:?}: {e}: {}",
                String::from_utf8_lossy(&out.stdout)
            )
        })
    }

    /// The stored record of an Evidence id.
    async fn record(&self, id: &Value) -> Value {
        self.h
            .call("get_evidence", json!({ "evidence_id": id }))
            .await["record"]
            .clone()
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The printed record is the one the id is the digest of.
fn checked(printed: Value) -> Value {
    let record: rea::evidence::EvidenceRecord =
        serde_json::from_value(printed["record"].clone()).unwrap();
    assert_eq!(printed["id"], record.id().unwrap().to_string());
    printed
}

#[tokio::test]
async fn rea_inspect_prints_the_record_inspect_artifact_keeps_regression_14() {
    let p = pair().await;
    let target = fixture("delocate/delocate/tests/data/liba_both.dylib");
    p.h.call("open_binary", json!({ "path": target })).await;
    let server = p.h.call("inspect_artifact", json!({})).await;
    let cli = checked(p.cli(&["inspect", s(&target), "--json"]));
    assert_eq!(cli["id"], server["evidence"]["id"]);
    assert_eq!(cli["record"], p.record(&server["evidence"]["id"]).await);
    // `rea analyze` of a binary is its inventory.
    let analyzed = checked(p.cli(&["analyze", s(&target), "--json"]));
    assert_eq!(analyzed["id"], server["evidence"]["id"]);
}

#[tokio::test]
async fn rea_analyze_prints_the_record_analyze_javascript_application_keeps_regression_14() {
    let p = pair().await;
    let app = javascript_app();
    let dir = std::fs::canonicalize(app.path()).unwrap();
    let server =
        p.h.call(
            "analyze_javascript_application",
            json!({ "input_path": dir }),
        )
        .await;
    let cli = checked(p.cli(&["analyze", s(&dir), "--json"]));
    assert_eq!(cli["id"], server["evidence"]["id"]);
    // However the path is spelled, it is one observation.
    let spelled = format!("{}/./", dir.display());
    let again = checked(p.cli(&["analyze", &spelled, "--json"]));
    assert_eq!(again["id"], server["evidence"]["id"]);
}

#[tokio::test]
async fn rea_compare_prints_the_record_compare_artifacts_keeps_regression_14() {
    let p = pair().await;
    let left = fixture("delocate/delocate/tests/data/liba.dylib");
    let right = fixture("delocate/delocate/tests/data/liba_12.dylib");
    let mut manifests = vec![];
    let mut graphs = vec![];
    for side in [&left, &right] {
        p.h.call("open_binary", json!({ "path": side })).await;
        let inv = p.h.call("inspect_artifact", json!({})).await;
        manifests.push(inv["manifest"]["id"].clone());
        graphs.push(inv["evidence"]["id"].clone());
    }
    let server =
        p.h.call(
            "compare_artifacts",
            json!({ "left_manifest_id": manifests[0], "right_manifest_id": manifests[1] }),
        )
        .await;
    let cli = checked(p.cli(&["compare", s(&left), s(&right), "--json"]));
    assert_eq!(cli["id"], server["evidence"]["id"]);
    // Its parameters are the two manifests, its links the two inventories' records.
    assert_eq!(
        cli["record"]["parameters"],
        json!({ "left_manifest_id": manifests[0], "right_manifest_id": manifests[1] })
    );
    assert_eq!(cli["record"]["links"], json!(graphs));
}

#[tokio::test]
async fn rea_procedures_evidence_prints_the_record_list_procedures_keeps_regression_14() {
    let p = pair().await;
    let target = fixture("delocate/delocate/tests/data/liba_both.dylib");
    p.h.call("open_binary", json!({ "path": target })).await;
    for (args, flags) in [
        (json!({}), vec![]),
        (
            json!({ "offset": 3, "limit": 7 }),
            vec!["--offset", "3", "--limit", "7"],
        ),
        (
            json!({ "document": "liba_both.dylib (x86_64)", "limit": 2 }),
            vec!["--document", "liba_both.dylib (x86_64)", "--limit", "2"],
        ),
    ] {
        let server = p.h.call("list_procedures", args.clone()).await;
        let mut cli_args = vec!["procedures", s(&target), "--evidence"];
        cli_args.extend(flags);
        let cli = checked(p.cli(&cli_args));
        assert_eq!(cli["id"], server["evidence"]["id"], "{args}");
    }
}

#[tokio::test]
async fn rea_doctor_prints_the_record_doctor_keeps_while_a_session_is_open_regression_14() {
    let p = pair().await;
    let target = fixture("delocate/delocate/tests/data/liba_both.dylib");
    // Without a session, doctor starts none and records nothing.
    let bare = p.h.call("doctor", json!({ "target": target })).await;
    assert!(bare.get("evidence").is_none(), "{bare}");
    assert_eq!(p.h.call("binary_session", json!({})).await["open"], false);
    p.h.call("open_binary", json!({ "path": target })).await;
    for args in [json!({}), json!({ "target": target })] {
        let server = p.h.call("doctor", args.clone()).await;
        let mut cli_args = vec!["doctor", "--json"];
        if let Some(t) = args["target"].as_str() {
            cli_args.insert(1, t);
        }
        let cli = checked(p.cli(&cli_args));
        assert_eq!(cli["id"], server["evidence"]["id"], "{args}");
    }
    // A target that does not open is checked the same way on both sides.
    let js = javascript_app();
    let refused = p.h.call("doctor", json!({ "target": js.path() })).await;
    let cli = checked(p.cli(&["doctor", s(js.path()), "--json"]));
    assert_eq!(cli["id"], refused["evidence"]["id"]);
    assert_eq!(
        cli["record"]["result"]["target"]["available_action"],
        "analyze_javascript_application"
    );
}

/// What a run measures, and what the host decides about isolation: the only fields two runs of
/// one scenario may differ in.
const MEASURED: [&str; 9] = [
    "wall_time_ms",
    "user_cpu_time_ms",
    "system_cpu_time_ms",
    "cpu_time_ms",
    "peak_rss_bytes",
    "leader_memory",
    "leftover_processes",
    "network_isolation",
    "traced",
];

#[tokio::test]
async fn rea_capture_prints_the_record_capture_process_scenario_keeps_regression_14() {
    let root = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(root.path()).unwrap();
    let script = root.join("hello.sh");
    std::fs::write(&script, "#!/bin/sh\necho \"hello $1\"\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let p = pair_with_config(&format!(
        "[capture]\nenabled = true\nexecutable_roots = [{root:?}]\nworking_directory_roots = [{root:?}]\n"
    ))
    .await;
    let scenario = json!({
        "approved": true,
        "executable": script,
        "arguments": ["world"],
        "working_directory": root,
        "wall_time_ms": 5000,
    });
    let server = p.h.call("capture_process_scenario", scenario.clone()).await;
    let file = root.join("scenario.json");
    std::fs::write(&file, scenario.to_string()).unwrap();
    let cli = checked(p.cli(&["capture", s(&file), "--json"]));
    let stored = p.record(&server["evidence"]["id"]).await;
    assert_eq!(cli["record"]["result"]["stdout"]["data"], "hello world\n");
    // Two runs differ only in what they measure: with those fields taken from the server's run,
    // the command line's record is the server's, id and all.
    let mut record = cli["record"].clone();
    for field in MEASURED {
        record["result"][field] = stored["result"][field].clone();
    }
    assert_eq!(record, stored);
    let record: rea::evidence::EvidenceRecord = serde_json::from_value(record).unwrap();
    assert_eq!(
        record.id().unwrap().to_string(),
        server["evidence"]["id"].as_str().unwrap()
    );
}
