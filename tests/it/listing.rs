//! `rea evidence list` reads the ledger a page at a time (issue 19): `--offset`, `--limit` and
//! `--operation` select rows in recording order, the total goes to stderr, and a reader that goes
//! away ends the listing quietly.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

use crate::common::{StdioServer, fixture};

fn rea(state: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rea"))
        .arg("--state-dir")
        .arg(state)
        .args(args)
        .env_remove("REA_CONFIG_DIR")
        .env_remove("REA_ALLOWED_ROOTS")
        .output()
        .unwrap()
}

/// The `(seq, operation)` of each listed row.
fn listed(state: &Path, args: &[&str]) -> Vec<(u64, String)> {
    let mut all = vec!["evidence", "list", "--json"];
    all.extend_from_slice(args);
    let out = rea(state, &all);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    rows.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["seq"].as_u64().unwrap(),
                r["operation"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn the_listing_pages_filters_and_counts_the_ledger_regression_19() {
    let state = tempfile::tempdir().unwrap();
    let mut server = StdioServer::start(state.path());
    server.tool(
        "open_binary",
        json!({ "path": fixture("delocate/delocate/tests/data/liba_both.dylib") }),
    );
    // Five distinct pages: five list_procedures records after open_binary's.
    for offset in 0..5 {
        server.tool("list_procedures", json!({ "offset": offset, "limit": 1 }));
    }
    drop(server);
    let state = state.path();

    let all = listed(state, &[]);
    assert_eq!(all.len(), 6, "{all:?}");
    assert_eq!(
        all.iter().map(|(seq, _)| *seq).collect::<Vec<_>>(),
        (1..=6).collect::<Vec<_>>()
    );
    assert_eq!(all[0].1, "open_binary");
    assert!(all[1..].iter().all(|(_, op)| op == "list_procedures"));

    assert_eq!(listed(state, &["--offset", "1", "--limit", "2"]), all[1..3]);
    assert_eq!(listed(state, &["--limit", "0"]), []);
    assert_eq!(listed(state, &["--offset", "6"]), []);
    assert_eq!(listed(state, &["--operation", "list_procedures"]), all[1..]);
    assert_eq!(
        listed(state, &["--operation", "list_procedures", "--offset", "4"]),
        all[5..]
    );
    assert_eq!(listed(state, &["--operation", "open_binary"]), all[..1]);
    assert_eq!(listed(state, &["--operation", "xrefs"]), []);

    // Text: one line per row, and the total of what the filter selects on stderr.
    let out = rea(state, &["evidence", "list", "--limit", "2"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 2, "{text}");
    assert!(
        text.lines()
            .next()
            .unwrap()
            .trim_start()
            .starts_with("1 ev_")
    );
    assert_eq!(String::from_utf8_lossy(&out.stderr), "6 records\n");
    let out = rea(
        state,
        &[
            "evidence",
            "list",
            "--operation",
            "list_procedures",
            "--limit",
            "0",
        ],
    );
    assert_eq!(out.stdout, b"");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "5 records\n");

    // A reader already gone: the listing ends at its first write, quietly.
    for json in [false, true] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let mut command = Command::new(env!("CARGO_BIN_EXE_rea"));
        command
            .arg("--state-dir")
            .arg(state)
            .args(["evidence", "list"])
            .env_remove("REA_CONFIG_DIR");
        if json {
            command.arg("--json");
        }
        let out = command
            .stdin(Stdio::null())
            .stdout(writer)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        assert!(
            out.status.success() || out.status.signal() == Some(libc::SIGPIPE),
            "{:?}",
            out.status
        );
        assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    }
}
