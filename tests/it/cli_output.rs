//! The command line's output edge (issue 17, item 7): every command ends quietly when its
//! reader goes away, and an error names each of its causes once.

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};

use crate::common::javascript_app;

/// Compiles a small C program (a target for the report commands).
fn program(dir: &std::path::Path) -> std::path::PathBuf {
    let src = dir.join("prog.c");
    std::fs::write(
        &src,
        "int f(int x) { return x + 1; }\nint main(void) { return f(-1); }\n",
    )
    .unwrap();
    let out = dir.join("prog");
    assert!(
        Command::new("cc")
            .arg("-o")
            .arg(&out)
            .arg(&src)
            .status()
            .unwrap()
            .success()
    );
    out
}

#[test]
fn every_command_ends_quietly_on_a_closed_pipe_regression_17() {
    let dir = tempfile::tempdir().unwrap();
    let prog = program(dir.path());
    let prog = prog.to_str().unwrap();
    let js = javascript_app();
    let js = js.path().to_str().unwrap();
    let commands: &[&[&str]] = &[
        &["--help"],
        &["--version"],
        &["doctor"],
        &["doctor", "--json"],
        &["doctor", prog],
        &["sessions"],
        &["sessions", "--json"],
        &["documents", prog],
        &["documents", prog, "--json"],
        &["procedures", prog],
        &["procedures", prog, "--json"],
        &["inspect", prog],
        &["inspect", prog, "--json"],
        &["compare", prog, prog],
        &["analyze", js],
        &["analyze", js, "--json"],
        &["complete", "investigate_feature", "provider_id", ""],
    ];
    for args in commands {
        // A pipe whose reader is already gone: the first write finds it closed.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let output = Command::new(env!("CARGO_BIN_EXE_rea"))
            .args(*args)
            .env("REA_STATE_DIR", dir.path().join("state"))
            .env_remove("REA_CONFIG_DIR")
            .stdin(Stdio::null())
            .stdout(writer)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        let quiet_end = output.status.success() || output.status.signal() == Some(libc::SIGPIPE);
        assert!(
            quiet_end,
            "rea {args:?} ended with {:?}: {stderr}",
            output.status
        );
        assert!(stderr.is_empty(), "rea {args:?} wrote to stderr: {stderr}");
    }
}

#[test]
fn an_error_names_each_cause_once_regression_17() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("rea.toml"),
        "[capture]\nenabled = \"yes\"\n",
    )
    .unwrap();
    let scenario = dir.path().join("scenario.json");
    std::fs::write(
        &scenario,
        r#"{"executable":"/bin/true","working_directory":"/tmp","approved":true}"#,
    )
    .unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_rea"))
        .arg("capture")
        .arg(&scenario)
        .env("REA_STATE_DIR", dir.path().join("state"))
        .env("REA_CONFIG_DIR", dir.path())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    let path = dir.path().join("rea.toml");
    assert!(
        stderr.starts_with(&format!(
            "rea: {}: the capture policy is not valid TOML for the [capture] table: TOML parse error at line 2, column 11",
            path.display()
        )),
        "{stderr}"
    );
    for cause in [
        "the capture policy is not valid TOML",
        "TOML parse error",
        "expected a boolean",
    ] {
        assert_eq!(stderr.matches(cause).count(), 1, "{cause:?} in {stderr}");
    }
}
