//! SIGKILL of a writing server: every acknowledged Evidence row survives, and the session resumes.

use std::process::Command;

use serde_json::{Value, json};

use crate::common::StdioServer as Server;

/// A small deterministic generator, so a failing cycle can be replayed.
fn lcg(seed: &mut u64) -> u64 {
    *seed = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *seed >> 33
}

#[test]
fn sigkill_during_writes_loses_no_acknowledged_row_and_the_session_resumes() {
    let cycles: u64 = std::env::var("REA_CRASH_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(12);
    let state = tempfile::tempdir().unwrap();
    let mut acked: Vec<String> = vec![];
    let mut seed = 0x5eed;
    let mut server = Server::start(state.path());
    server.tool("open_binary", json!({"path": "/usr/bin/ls"}));
    let mut offset = 0u64;
    for cycle in 0..cycles {
        // Pipeline a burst of Evidence-producing calls, read some of the answers, then kill.
        let burst = 20 + lcg(&mut seed) % 40;
        let read = lcg(&mut seed) % burst;
        for _ in 0..burst {
            offset += 1;
            server.submit(
                "tools/call",
                json!({"name": "list_procedures", "arguments": {"offset": offset, "limit": 1}}),
            );
        }
        for _ in 0..read {
            let v = server.read();
            if let Some(id) = v["result"]["structuredContent"]["evidence"]["id"].as_str() {
                acked.push(id.to_owned());
            }
        }
        server.child.kill().unwrap(); // SIGKILL
        server.child.wait().unwrap();

        server = Server::start(state.path());
        let resumed = server.tool("resume_session", json!({}));
        assert!(
            resumed["id"].as_str().unwrap().starts_with("ses_"),
            "cycle {cycle}"
        );
        for id in &acked {
            let v = server.request(
                "tools/call",
                json!({"name": "get_evidence", "arguments": {"evidence_id": id}}),
            );
            assert_ne!(
                v["result"]["isError"], true,
                "cycle {cycle}: acknowledged {id} lost: {v}"
            );
        }
    }
    // Every row is whole: ids recompute from the stored records and SQLite finds no damage.
    drop(server.stdin);
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_rea"))
        .args(["evidence", "verify", "--json"])
        .env("REA_STATE_DIR", state.path())
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["integrity_check"], "ok");
    assert_eq!(report["problems"], json!([]));
    assert!(report["records"].as_u64().unwrap() >= acked.len() as u64);
    assert!(out.status.success());
}
