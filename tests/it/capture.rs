//! Process capture under policy, and the trace_crash workflow end to end.

use std::process::Command;

use serde_json::json;

use crate::common::{Harness, Mode, start, start_confined};

fn compile(dir: &std::path::Path, name: &str, source: &str) -> std::path::PathBuf {
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, source).unwrap();
    let out = dir.join(name);
    let status = Command::new("cc")
        .args(["-O0", "-g", "-o"])
        .arg(&out)
        .arg(&src)
        .status()
        .unwrap();
    assert!(status.success());
    out
}

async fn with_policy(root: &std::path::Path) -> Harness {
    with_confined_policy(&[root], root, vec![]).await
}

/// A server whose capture policy allows `executable_roots` and `working_root`, confined by the
/// operator to `allowed_roots` (none: not confined).
async fn with_confined_policy(
    executable_roots: &[&std::path::Path],
    working_root: &std::path::Path,
    allowed_roots: Vec<std::path::PathBuf>,
) -> Harness {
    let state = tempfile::tempdir().unwrap();
    let config = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(config.path().join("prompts")).unwrap();
    std::fs::write(
        config.path().join("rea.toml"),
        format!("[capture]\nenabled = true\nexecutable_roots = {executable_roots:?}\nworking_directory_roots = [{working_root:?}]\n"),
    )
    .unwrap();
    start_confined(Mode::Legacy, state, config, allowed_roots).await
}

#[tokio::test]
async fn capture_is_off_until_the_operator_enables_it() {
    let h = start().await;
    assert!(
        !h.tool_names()
            .await
            .contains(&"capture_process_scenario".to_owned())
    );
    let text = h
        .prompt_text("trace_crash", &[("crash_signal", "SIGSEGV")])
        .await;
    assert!(!text.contains("capture_process_scenario"));
}

#[tokio::test]
async fn enabling_capture_by_editing_the_policy_announces_tool_and_prompt_changes() {
    let mut h = start().await;
    let root = tempfile::tempdir().unwrap();
    std::fs::write(
        h.config.path().join("rea.toml"),
        format!("[capture]\nenabled = true\nexecutable_roots = [{:?}]\nworking_directory_roots = [{:?}]\n", root.path(), root.path()),
    )
    .unwrap();
    let mut seen = vec![];
    while seen.len() < 2 {
        seen.push(h.next_change().await.expect("a list change"));
    }
    seen.sort();
    assert_eq!(seen, ["prompts", "tools"]);
    assert!(
        h.tool_names()
            .await
            .contains(&"capture_process_scenario".to_owned())
    );
}

#[tokio::test]
async fn trace_crash_end_to_end_on_a_null_dereference() {
    let root = tempfile::tempdir().unwrap();
    let root_path = std::fs::canonicalize(root.path()).unwrap();
    let exe = compile(
        &root_path,
        "crasher",
        "#include <stddef.h>\n__attribute__((noinline)) int crash_here(int *p) { return *p; }\nint main(void) { return crash_here(NULL); }\n",
    );
    let h = with_policy(&root_path).await;
    let text = h
        .prompt_text(
            "trace_crash",
            &[
                ("crash_signal", "SIGSEGV"),
                ("target_path", exe.to_str().unwrap()),
            ],
        )
        .await;
    assert!(text.contains("`capture_process_scenario`"));
    h.call("open_binary", json!({ "path": exe })).await;
    let refused = h
        .call_err(
            "capture_process_scenario",
            json!({ "executable": exe, "working_directory": root_path }),
        )
        .await;
    assert!(refused.contains("nothing was run"), "{refused}");
    let c = h
        .call("capture_process_scenario", json!({ "approved": true, "executable": exe, "working_directory": root_path, "wall_time_ms": 5000 }))
        .await;
    assert_eq!(c["fault"]["signal"]["number"], 11, "{c}");
    assert_eq!(c["fault_procedure"]["name"], "crash_here", "{c}");
    let id = c["evidence"]["id"].as_str().unwrap();
    let offered = h.complete("trace_crash", "capture_evidence_id", "").await;
    assert_eq!(offered.values, [id]);
    let with_capture = h
        .prompt_text(
            "trace_crash",
            &[("crash_signal", "SIGSEGV"), ("capture_evidence_id", id)],
        )
        .await;
    assert!(with_capture.contains("`get_evidence`"));
    let info = h
        .call(
            "procedure_info",
            json!({ "procedure": c["fault"]["static_address"] }),
        )
        .await;
    assert_eq!(info["procedure"]["name"], "crash_here");
    let again = h
        .call("capture_process_scenario", json!({ "approved": true, "executable": exe, "working_directory": root_path, "wall_time_ms": 5000 }))
        .await;
    let cmp = h
        .call(
            "compare_process_captures",
            json!({ "left_capture_id": id, "right_capture_id": again["evidence"]["id"] }),
        )
        .await;
    assert_eq!(cmp["exit_status"]["verdict"], "equal", "{cmp}");
    assert_eq!(cmp["verdict"], "equal");
    // A capture outside the roots is refused and runs nothing.
    let msg = h
        .call_err(
            "capture_process_scenario",
            json!({ "approved": true, "executable": "/bin/true", "working_directory": root_path }),
        )
        .await;
    assert!(msg.contains("nothing was run"), "{msg}");
}

#[tokio::test]
async fn a_capture_outside_the_allowed_roots_is_refused_though_the_policy_allows_it() {
    let policy_root = tempfile::tempdir().unwrap();
    let policy_root = std::fs::canonicalize(policy_root.path()).unwrap();
    let exe = compile(&policy_root, "quiet", "int main(void) { return 0; }\n");
    let marker = policy_root.join("ran");
    // The operator confines rea to another directory: the policy's roots do not widen that.
    let elsewhere = tempfile::tempdir().unwrap();
    let h = with_confined_policy(
        &[
            &policy_root,
            std::path::Path::new("/bin"),
            std::path::Path::new("/usr/bin"),
        ],
        &policy_root,
        vec![std::fs::canonicalize(elsewhere.path()).unwrap()],
    )
    .await;
    let refused = h
        .call_err(
            "capture_process_scenario",
            json!({ "approved": true, "executable": exe, "working_directory": policy_root }),
        )
        .await;
    assert!(refused.contains("nothing was run"), "{refused}");
    assert!(refused.contains("allowed roots"), "{refused}");
    // A symlink inside the allowed root that leads out of it is resolved before the check.
    let link = elsewhere.path().join("touch");
    std::os::unix::fs::symlink("/usr/bin/touch", &link).unwrap();
    let refused = h
        .call_err(
            "capture_process_scenario",
            json!({ "approved": true, "executable": link, "arguments": [marker], "working_directory": policy_root }),
        )
        .await;
    assert!(refused.contains("allowed roots"), "{refused}");
    assert!(!marker.exists(), "the refused scenario ran");
}
