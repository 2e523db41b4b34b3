//! analyze_javascript_application and the JavaScript route of investigate_feature.

use serde_json::json;

use crate::common::{fixture, javascript_app, start};
use rea::prompts::mentioned_tools;

#[tokio::test]
async fn investigate_feature_on_a_javascript_directory_starts_at_the_javascript_analysis() {
    let h = start().await;
    let js = javascript_app();
    let text = h
        .prompt_text(
            "investigate_feature",
            &[
                ("feature", "search"),
                ("target_path", js.path().to_str().unwrap()),
            ],
        )
        .await;
    let steps: Vec<&str> = text.lines().filter(|l| l.contains(". `")).collect();
    assert!(
        steps[0].starts_with("1. `analyze_javascript_application`"),
        "{steps:?}"
    );
    assert!(steps[0].contains("input_path"));
    assert!(
        !mentioned_tools(&text).contains("open_binary"),
        "open_binary is not required for a JavaScript directory"
    );
    // A .app bundle is not routed there even if it holds JavaScript.
    let bin = h
        .prompt_text(
            "investigate_feature",
            &[("feature", "f"), ("target_path", "/usr/bin/ls")],
        )
        .await;
    assert!(!mentioned_tools(&bin).contains("analyze_javascript_application"));
}

#[tokio::test]
async fn nativefier_analysis_finds_its_channels_and_insecure_windows_and_completes_them() {
    let h = start().await;
    let dir = tempfile::tempdir().unwrap();
    let app = fixture("nativefier/package/app");
    std::fs::create_dir_all(dir.path().join("lib")).unwrap();
    std::fs::copy(app.join("package.json"), dir.path().join("package.json")).unwrap();
    std::fs::copy(app.join("lib/main.js"), dir.path().join("lib/main.js")).unwrap();
    std::fs::copy(
        app.join("lib/preload.js"),
        dir.path().join("lib/preload.js"),
    )
    .unwrap();
    let r = h
        .call(
            "analyze_javascript_application",
            json!({ "input_path": dir.path() }),
        )
        .await;
    let channels: Vec<&str> = r["ipc"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["channel"].as_str().unwrap())
        .collect();
    for expected in [
        "desktop-capturer-get-sources",
        "notification",
        "session-interaction",
    ] {
        assert!(channels.contains(&expected), "{channels:?}");
    }
    let rules: Vec<&str> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap())
        .collect();
    assert!(
        rules.contains(&"node-integration-without-context-isolation"),
        "{rules:?}"
    );
    let graph = r["graph_id"].as_str().unwrap();
    assert_eq!(
        h.complete("compare_application_versions", "left_manifest_id", "")
            .await
            .values,
        [graph]
    );
    assert!(
        h.complete(
            "compare_application_versions",
            "focus_occurrence_id",
            "occ_"
        )
        .await
        .total
        .unwrap()
            > 0
    );
    // No open_binary was needed; the analysis started a session for its Evidence.
    assert_eq!(h.call("binary_session", json!({})).await["open"], true);
}

#[test]
fn rea_analyze_is_the_cli_equivalent_for_a_javascript_directory() {
    let js = javascript_app();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rea"))
        .arg("analyze")
        .arg(js.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("JavaScript/Electron analysis"), "{text}");
    assert!(
        text.contains("search"),
        "the IPC map lists the channel: {text}"
    );
    let json = std::process::Command::new(env!("CARGO_BIN_EXE_rea"))
        .args(["analyze", "--json"])
        .arg(js.path())
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert!(v["id"].as_str().unwrap().starts_with("ev_"));
    assert_eq!(v["record"]["operation"], "analyze_javascript_application");
}
