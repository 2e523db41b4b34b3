//! The read-only CLI commands (`rea evidence list|show|verify`, `rea complete`, `rea sessions
//! list|show`) read a session through the read-only store: beside a live server writing to it,
//! and on a read-only mount, taking no lock and writing nothing.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{StdioServer, fixture};

/// Runs a command, failing the test if it does not finish within a minute: a CLI read must never
/// wait on the server.
fn bounded(mut command: Command) -> Output {
    let (tx, rx) = std::sync::mpsc::channel();
    let what = format!("{command:?}");
    std::thread::spawn(move || {
        let _ = tx.send(command.output());
    });
    rx.recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|_| panic!("{what} did not finish: it waited on something"))
        .unwrap()
}

fn rea(state: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rea"));
    c.arg("--state-dir")
        .arg(state)
        .args(args)
        .env_remove("REA_CONFIG_DIR")
        .env_remove("REA_ALLOWED_ROOTS");
    c
}

fn json_of(out: &Output, what: &str) -> Value {
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{what}: {e}: {}", String::from_utf8_lossy(&out.stdout)))
}

/// Reads the session `id` the four read-only ways and checks each answer is whole: the listing is
/// one consistent prefix of the ledger (sequence numbers 1 to n without a gap), verification
/// finds no problem, and completion offers the target's procedures.
fn read_all(run: &dyn Fn(&[&str]) -> Output, id: &str) -> (Vec<String>, Value, Value) {
    let list = json_of(
        &run(&["evidence", "list", "--session", id, "--json"]),
        "list",
    );
    let rows = list.as_array().unwrap();
    let seqs: Vec<u64> = rows.iter().map(|r| r["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=rows.len() as u64).collect::<Vec<_>>());
    let ids: Vec<String> = rows
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect();
    let shown = json_of(
        &run(&["evidence", "show", &ids[0], "--session", id]),
        "show",
    );
    assert_eq!(shown["record"]["operation"], "open_binary");
    let verify = json_of(
        &run(&["evidence", "verify", "--session", id, "--json"]),
        "verify",
    );
    assert_eq!(verify["problems"], json!([]), "{verify}");
    assert_eq!(verify["integrity_check"], "ok");
    assert!(verify["records"].as_u64().unwrap() >= ids.len() as u64);
    let complete = json_of(
        &run(&[
            "complete",
            "investigate_feature",
            "procedure",
            "",
            "--session",
            id,
            "--json",
        ]),
        "complete",
    );
    assert!(complete["total"].as_u64().unwrap() > 0, "{complete}");
    let show = json_of(&run(&["sessions", "show", id, "--json"]), "sessions show");
    (ids, complete, show)
}

#[test]
fn the_cli_reads_a_session_a_live_server_writes_and_never_disturbs_it() {
    let state = tempfile::tempdir().unwrap();
    let mut server = StdioServer::start(state.path());
    server.tool(
        "open_binary",
        json!({ "path": fixture("delocate/delocate/tests/data/liba_both.dylib") }),
    );
    let id = server.tool("binary_session", json!({}))["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    // The server records new Evidence without pause while the CLI reads.
    let stop = Arc::new(AtomicBool::new(false));
    let writing = stop.clone();
    let writer = std::thread::spawn(move || {
        let mut acknowledged = BTreeSet::new();
        let mut n = 0u64;
        while !writing.load(Ordering::Relaxed) {
            let page = server.tool(
                "list_procedures",
                json!({ "offset": n % 40, "limit": 1 + n / 40 }),
            );
            acknowledged.insert(page["evidence"]["id"].as_str().unwrap().to_owned());
            n += 1;
        }
        (server, acknowledged)
    });
    let run = |args: &[&str]| bounded(rea(state.path(), args));
    let mut seen: Vec<String> = vec![];
    let mut completions = None;
    for _ in 0..10 {
        let (ids, complete, show) = read_all(&run, &id);
        // A later read holds everything an earlier one did, in the same order.
        assert!(ids.len() >= seen.len() && ids[..seen.len()] == seen[..]);
        seen = ids;
        // The inventory does not change while the ledger grows.
        assert_eq!(*completions.get_or_insert(complete.clone()), complete);
        assert_eq!(show["live"], true, "{show}");
        assert!(show["evidence"].as_u64().unwrap() >= seen.len() as u64);
        let sessions = json_of(&run(&["sessions", "list", "--json"]), "sessions list");
        assert_eq!(sessions[0]["live"], true, "{sessions}");
    }
    stop.store(true, Ordering::Relaxed);
    let (mut server, acknowledged) = writer.join().unwrap();
    assert!(
        acknowledged.len() > 10,
        "the server recorded while the CLI read"
    );
    // The server answered every call and kept every record it acknowledged.
    let total = server.tool("list_evidence", json!({ "limit": 1 }))["total"]
        .as_u64()
        .unwrap();
    assert_eq!(total, 1 + acknowledged.len() as u64);
    for ev in acknowledged.iter().take(20) {
        server.tool("get_evidence", json!({ "evidence_id": ev }));
    }
}

/// A session left by a server that exited (`killed`: by SIGKILL, leaving its WAL behind).
fn left_session(state: &Path, killed: bool) -> String {
    let mut server = StdioServer::start(state);
    server.tool(
        "open_binary",
        json!({ "path": fixture("delocate/delocate/tests/data/liba.dylib") }),
    );
    server.tool("list_procedures", json!({ "limit": 3 }));
    let id = server.tool("binary_session", json!({}))["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    if killed {
        server.child.kill().unwrap();
    } else {
        drop(server.stdin);
    }
    server.child.wait().unwrap();
    id
}

#[test]
fn read_only_commands_work_on_a_read_only_mount_and_call_no_session_live_regression_16() {
    let state = tempfile::tempdir().unwrap();
    let clean = left_session(state.path(), false);
    let killed = left_session(state.path(), true);
    let dir = state.path().join("sessions");
    assert!(!dir.join(&clean).join("session.db-wal").exists());
    assert!(dir.join(&killed).join("session.db-wal").exists());
    // Each command runs with the state directory mounted read-only over itself, in a mount
    // namespace of its own.
    let s = state.path().to_str().unwrap().to_owned();
    let in_read_only = move |args: &[&str]| {
        let mut c = Command::new("unshare");
        c.args(["-Urm", "sh", "-c"])
            .arg(r#"mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@""#)
            .arg(&s)
            .arg(env!("CARGO_BIN_EXE_rea"))
            .arg("--state-dir")
            .arg(&s)
            .args(args)
            .env_remove("REA_CONFIG_DIR")
            .env_remove("REA_ALLOWED_ROOTS");
        bounded(c)
    };
    // The mount really is read-only for those commands.
    let mut touch = Command::new("unshare");
    touch
        .args(["-Urm", "sh", "-c"])
        .arg(r#"mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && touch "$0/x""#)
        .arg(state.path());
    assert!(!bounded(touch).status.success());
    for id in [&clean, &killed] {
        let (ids, _, show) = read_all(&in_read_only, id);
        assert_eq!(ids.len(), 2, "{id}");
        assert_eq!(show["live"], false, "{show}");
    }
    let sessions = json_of(&in_read_only(&["sessions", "list", "--json"]), "list");
    let live: Vec<&Value> = sessions
        .as_array()
        .unwrap()
        .iter()
        .map(|s| &s["live"])
        .collect();
    assert_eq!(live, [false, false], "{sessions}");
    assert!(!state.path().join("x").exists());
}
