//! A full file system (issue 16, item 11): a session that cannot be created leaves nothing to
//! list or resume, `doctor` says the state directory is not writable, a failed export leaves no
//! file that blocks its retry, and the read-only commands still read. Each test mounts a small
//! tmpfs in a user and mount namespace of its own (`unshare -Urm`, as `readonly.rs` does), fills
//! it with one file until the kernel refuses a byte more, and runs rea there.

use std::path::Path;
use std::process::Command;

use rea::evidence::{Authority, Confidence, EvidenceRecord, ProviderStamp};
use rea::session::Session;
use serde_json::{Value, json};

use crate::common::StdioServer;

/// `sh -c` in a namespace of its own with a full 1 MiB tmpfs mounted on `mnt` (`$0`), holding
/// the empty directories `state` and `out`; `script` runs after, with `$1` the rea binary and any
/// further arguments as `$2`...
fn on_full_tmpfs(mnt: &Path, script: &str) -> Command {
    let mut c = Command::new("unshare");
    c.args(["-Urm", "sh", "-c"])
        .arg(format!(
            r#"mount -t tmpfs -o size=1m tmpfs "$0" && mkdir "$0/state" "$0/out" && {{ dd if=/dev/zero of="$0/fill" bs=4096 2>/dev/null; true; }} && {script}"#
        ))
        .arg(mnt)
        .arg(env!("CARGO_BIN_EXE_rea"))
        .env_remove("REA_CONFIG_DIR")
        .env_remove("REA_ALLOWED_ROOTS");
    c
}

fn record(n: u64) -> EvidenceRecord {
    EvidenceRecord {
        subject: None,
        provider: ProviderStamp::builtin(),
        operation: "fulldisk.test".into(),
        parameters: json!({ "n": n }),
        result: json!({ "padding": "y".repeat(500) }),
        confidence: Confidence::Observed,
        authority: Authority::ShippedArtifact,
        limitations: vec![],
        locations: vec![],
        links: vec![],
    }
}

/// A stopped session of `n` records under `state`; its id.
fn left_session(state: &Path, n: u64) -> String {
    let s = Session::create(state).unwrap();
    for i in 0..n {
        s.store().record_blocking(record(i)).unwrap();
    }
    s.id().to_owned()
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name))
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .trim_end()
        .to_owned()
}

fn error_text(v: &Value) -> &str {
    assert_eq!(v["result"]["isError"], true, "{v}");
    v["result"]["content"][0]["text"].as_str().unwrap()
}

#[test]
fn a_session_that_cannot_be_created_leaves_no_ghost_and_doctor_says_not_writable_regression_16() {
    let mnt = tempfile::tempdir().unwrap();
    let mut command = on_full_tmpfs(mnt.path(), r#"exec "$1" serve"#);
    command.env("REA_STATE_DIR", mnt.path().join("state"));
    let mut server = StdioServer::start_command(command);

    let doctor = server.tool("doctor", json!({}));
    assert_eq!(doctor["state_dir_writable"], false, "{doctor}");

    let v = server.request(
        "tools/call",
        json!({"name": "open_binary", "arguments": {"path": "/usr/bin/ls"}}),
    );
    let text = error_text(&v);
    assert!(text.contains("full"), "{text}");
    // Nothing was left to resume, and the session directory is gone.
    let v = server.request(
        "tools/call",
        json!({"name": "resume_session", "arguments": {}}),
    );
    assert!(
        error_text(&v).contains("no session is waiting to be resumed"),
        "{v}"
    );
    let state = server.tool("binary_session", json!({}));
    assert_eq!(state["open"], false, "{state}");
    let sessions = Path::new(&format!("/proc/{}/root", server.child.id()))
        .join(mnt.path().strip_prefix("/").unwrap())
        .join("state/sessions");
    let left: Vec<String> = std::fs::read_dir(&sessions)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with(".closed-"))
        .collect();
    assert_eq!(left, Vec::<String>::new());
    server.child.kill().unwrap();
    server.child.wait().unwrap();
}

#[test]
fn a_failed_export_leaves_no_file_and_its_retry_succeeds_regression_16() {
    let state = tempfile::tempdir().unwrap();
    let id = left_session(state.path(), 20);
    let (mnt, results) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let script = r#"
        for f in ledger.jsonl ledger.db; do
            fmt=""; [ "$f" = ledger.jsonl ] && fmt="--jsonl"
            "$1" --state-dir "$3" evidence export "$0/out/$f" $fmt > "$2/$f.first" 2>&1; echo $? >> "$2/$f.first"
        done
        ls -A "$0/out" > "$2/after-failure"
        "$1" --state-dir "$0/state" doctor --json > "$2/doctor" 2>&1
        rm "$0/fill"
        for f in ledger.jsonl ledger.db; do
            fmt=""; [ "$f" = ledger.jsonl ] && fmt="--jsonl"
            "$1" --state-dir "$3" evidence export "$0/out/$f" $fmt > "$2/$f.retry" 2>&1; echo $? >> "$2/$f.retry"
        done
        wc -l < "$0/out/ledger.jsonl" > "$2/lines"
        ls -A "$0/out" > "$2/after-retry"
    "#;
    let out = on_full_tmpfs(mnt.path(), script)
        .arg(results.path())
        .arg(state.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let r = results.path();
    for f in ["ledger.jsonl", "ledger.db"] {
        let first = read(r, &format!("{f}.first"));
        assert!(
            first.ends_with("\n1")
                && (first.contains("No space left on device") || first.contains("disk is full")),
            "{f}: {first}"
        );
    }
    assert_eq!(read(r, "after-failure"), "", "a failed export left a file");
    let doctor: Value = serde_json::from_str(&read(r, "doctor")).unwrap();
    assert_eq!(
        doctor["record"]["result"]["state_dir_writable"], false,
        "{doctor}"
    );
    assert_eq!(
        read(r, "ledger.jsonl.retry"),
        format!(
            "exported 20 records to {}/out/ledger.jsonl\n0",
            mnt.path().display()
        )
    );
    assert!(read(r, "ledger.db.retry").ends_with("\n0"));
    // A header line, then one line per record.
    assert_eq!(read(r, "lines"), "21");
    assert_eq!(read(r, "after-retry"), "ledger.db\nledger.jsonl");
    // The session exported is whole and stays.
    assert_eq!(
        rea::session::show(state.path(), &id).unwrap().evidence,
        Some(20)
    );
}

#[test]
fn read_only_commands_read_a_session_on_a_full_disk_regression_16() {
    let state = tempfile::tempdir().unwrap();
    let id = left_session(state.path(), 7);
    let (mnt, results) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    // The session is copied in before the file system fills up.
    let script = r#"
        rm "$0/fill" && cp -r "$3/sessions" "$0/state/" && { dd if=/dev/zero of="$0/fill" bs=4096 2>/dev/null; true; }
        "$1" --state-dir "$0/state" sessions list --json > "$2/list"
        "$1" --state-dir "$0/state" evidence list --json > "$2/evidence"
        "$1" --state-dir "$0/state" evidence verify --json > "$2/verify"
        "$1" --state-dir "$0/state" sessions show "$4" --json > "$2/show"
    "#;
    let out = on_full_tmpfs(mnt.path(), script)
        .arg(results.path())
        .arg(state.path())
        .arg(&id)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let r = results.path();
    let list: Value = serde_json::from_str(&read(r, "list")).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
    assert_eq!(list[0]["id"], id.as_str());
    assert_eq!(list[0]["live"], false);
    assert_eq!(list[0]["evidence"], 7);
    let evidence: Value = serde_json::from_str(&read(r, "evidence")).unwrap();
    let seqs: Vec<u64> = evidence
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, (1..=7).collect::<Vec<_>>());
    let verify: Value = serde_json::from_str(&read(r, "verify")).unwrap();
    assert_eq!(verify["problems"], json!([]), "{verify}");
    assert_eq!(verify["records"], 7);
    let show: Value = serde_json::from_str(&read(r, "show")).unwrap();
    assert_eq!(show["live"], false, "{show}");
}
