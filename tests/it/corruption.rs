//! A damaged session database (issue 16, item 10): flipped bytes in one record, a zeroed page, a
//! truncated file, deleted rows. `rea evidence verify` names every bad row with its sequence
//! number and Evidence id and goes on, counts the sequence numbers without a row, and runs
//! `integrity_check`; resuming refuses a damaged file with the reason and writes nothing to it.
//! Issue 25, item 3: the hash chain over the ledger and its head file outside the WAL name a lost
//! tail, an edited unknown, an edited record (also to `get_evidence`) and a damaged index.

use std::path::{Path, PathBuf};
use std::process::Command;

use rea::evidence::{Authority, Confidence, EvidenceRecord, ProviderStamp};
use rea::session::Session;
use serde_json::{Value, json};

use crate::common::StdioServer;

/// Records in each test session.
const N: u64 = 120;
/// SQLite's page size for a session database (asserted in `session_of`).
const PAGE: usize = 4096;

/// The marker of record `n` inside its stored JSON, unique in the file.
fn marker(n: u64) -> String {
    format!("rec-{n:04}-")
}

fn record(n: u64) -> EvidenceRecord {
    EvidenceRecord {
        subject: None,
        provider: ProviderStamp::builtin(),
        operation: "corruption.test".into(),
        parameters: json!({ "n": n }),
        result: json!({ "marker": format!("{}{}", marker(n), "x".repeat(200)) }),
        confidence: Confidence::Observed,
        authority: Authority::ShippedArtifact,
        limitations: vec![],
        locations: vec![],
        links: vec![],
    }
}

/// A closed session of `N` records: (state dir, session id, database path, ids by seq - 1).
fn session_of() -> (tempfile::TempDir, String, PathBuf, Vec<String>) {
    let state = tempfile::tempdir().unwrap();
    let s = Session::create(state.path()).unwrap();
    let mut ids = vec![];
    for n in 1..=N {
        let o = s.store().record_blocking(record(n)).unwrap();
        assert_eq!(o.seq, n as i64);
        ids.push(o.id.to_string());
    }
    let id = s.id().to_owned();
    let db = s.store().path().to_owned();
    // The owner goes away: its WAL is checkpointed into the file and removed.
    drop(s);
    assert!(!db.with_extension("db-wal").exists());
    let bytes = std::fs::read(&db).unwrap();
    assert_eq!(u16::from_be_bytes([bytes[16], bytes[17]]) as usize, PAGE);
    (state, id, db, ids)
}

/// Where `marker(n)` is in the file.
fn offset_of(bytes: &[u8], n: u64) -> usize {
    let m = marker(n);
    bytes
        .windows(m.len())
        .position(|w| w == m.as_bytes())
        .unwrap_or_else(|| panic!("{m} is not in the file"))
}

/// `rea evidence verify --json`: (exit success, report).
fn verify(state: &Path, id: &str) -> (bool, Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_rea"))
        .arg("--state-dir")
        .arg(state)
        .args(["evidence", "verify", "--session", id, "--json"])
        .env_remove("REA_CONFIG_DIR")
        .output()
        .unwrap();
    let report = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "verify printed no report ({e}): {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.success(), report)
}

/// The (seq, id) of every bad row the report names.
fn bad_rows(report: &Value) -> Vec<(u64, Option<String>)> {
    report["bad_rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["seq"].as_u64().unwrap(),
                b["id"].as_str().map(str::to_owned),
            )
        })
        .collect()
}

/// Resuming refuses the session with the reason, and the file is as it was.
fn resume_refused(state: &Path, id: &str, db: &Path, reason: &str) {
    let before = std::fs::read(db).unwrap();
    match Session::resume(state, id) {
        Err(e) => {
            let text = e.to_string();
            assert!(
                text.starts_with(&format!("session {id} is damaged and was not resumed"))
                    && text.contains(reason),
                "{text}"
            );
        }
        Ok(_) => panic!("resumed a damaged session"),
    }
    // The server's resume_session says the same.
    let mut server = StdioServer::start(state);
    let v = server.request(
        "tools/call",
        json!({"name": "resume_session", "arguments": {"session_id": id}}),
    );
    assert_eq!(v["result"]["isError"], true, "{v}");
    let text = v["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains(&format!("session {id} is damaged and was not resumed"))
            && text.contains(reason)
            && text.contains("rea evidence verify"),
        "{text}"
    );
    drop(server);
    assert!(
        std::fs::read(db).unwrap() == before,
        "the refused resume wrote to the file"
    );
    // It stays on disk, listed, for verify and export.
    assert!(db.is_file());
}

#[test]
fn flipped_bytes_in_one_record_are_named_by_seq_and_id_regression_16() {
    let (state, id, db, ids) = session_of();
    let mut bytes = std::fs::read(&db).unwrap();
    // Invalid UTF-8 inside record 42's text; the b-tree around it is untouched.
    let at = offset_of(&bytes, 42) + 12;
    for b in &mut bytes[at..at + 3] {
        *b ^= 0xC0;
    }
    std::fs::write(&db, &bytes).unwrap();
    let (ok, report) = verify(state.path(), &id);
    assert!(!ok);
    assert_eq!(
        bad_rows(&report),
        vec![(42, Some(ids[41].clone()))],
        "{report}"
    );
    let problem = report["bad_rows"][0]["problem"].as_str().unwrap();
    assert!(
        problem.starts_with("the stored record hashes to ev_") && problem.ends_with("not its id"),
        "{problem}"
    );
    assert_eq!(report["records"], N);
    assert_eq!(report["gaps"], 0);
    assert_eq!(report["counted"], N);
    assert_eq!(report["integrity_check"], "ok");
    assert_eq!(
        report["problems"],
        json!([format!("seq 42 {}: {problem}", ids[41])])
    );
}

#[test]
fn a_zeroed_page_names_every_row_it_held_and_resume_refuses_regression_16() {
    let (state, id, db, ids) = session_of();
    let mut bytes = std::fs::read(&db).unwrap();
    let page = offset_of(&bytes, 60) / PAGE;
    let range = page * PAGE..(page + 1) * PAGE;
    // The rows whose records lie in that page: what verify must name.
    let lost: Vec<u64> = (1..=N)
        .filter(|&n| range.contains(&offset_of(&bytes, n)))
        .collect();
    assert!(lost.len() >= 5 && lost.contains(&60), "{lost:?}");
    bytes[range].fill(0);
    std::fs::write(&db, &bytes).unwrap();

    let (ok, report) = verify(state.path(), &id);
    assert!(!ok);
    let expected: Vec<(u64, Option<String>)> = lost
        .iter()
        .map(|&n| (n, Some(ids[n as usize - 1].clone())))
        .collect();
    assert_eq!(bad_rows(&report), expected, "{report}");
    for b in report["bad_rows"].as_array().unwrap() {
        assert!(
            b["problem"]
                .as_str()
                .unwrap()
                .starts_with("row unreadable: database disk image is malformed"),
            "{b}"
        );
    }
    // Every other row was read and checked.
    assert_eq!(report["records"], N - lost.len() as u64);
    assert_eq!(report["gaps"], 0);
    // SQLite's check stops at the zeroed page with an error rather than a finding.
    assert_eq!(
        report["integrity_check"],
        "unreadable: database disk image is malformed"
    );
    resume_refused(state.path(), &id, &db, "quick_check: ");
}

#[test]
fn a_truncated_file_reports_the_rows_past_its_end_and_resume_refuses_regression_16() {
    let (state, id, db, ids) = session_of();
    let bytes = std::fs::read(&db).unwrap();
    // Cut at the page holding record 100: it and everything after are gone.
    let cut = offset_of(&bytes, 100) / PAGE * PAGE;
    let lost: Vec<u64> = (1..=N).filter(|&n| offset_of(&bytes, n) >= cut).collect();
    assert!(lost.contains(&N) && lost.contains(&100), "{lost:?}");
    std::fs::OpenOptions::new()
        .write(true)
        .open(&db)
        .unwrap()
        .set_len(cut as u64)
        .unwrap();

    let (ok, report) = verify(state.path(), &id);
    assert!(!ok);
    let named = bad_rows(&report);
    assert_eq!(
        named.iter().map(|(s, _)| *s).collect::<Vec<_>>(),
        lost,
        "{report}"
    );
    // An id is given wherever one is named, and it is the true one.
    for (seq, named_id) in &named {
        if let Some(named_id) = named_id {
            assert_eq!(named_id, &ids[*seq as usize - 1]);
        }
    }
    assert_eq!(report["records"], N - lost.len() as u64);
    assert_ne!(report["integrity_check"], "ok");
    resume_refused(state.path(), &id, &db, "quick_check: ");
}

#[test]
fn deleted_rows_are_counted_as_gaps_and_resume_refuses_regression_16() {
    let (state, id, db, ids) = session_of();
    {
        let conn = rusqlite::Connection::open(&db).unwrap();
        // One from the middle (a gap in the sequence) and the last one (no gap: only the id
        // counts notice it).
        conn.execute("delete from evidence where seq in (50, ?1)", [N as i64])
            .unwrap();
    }
    let (ok, report) = verify(state.path(), &id);
    assert!(!ok);
    assert_eq!(report["bad_rows"], json!([]), "{report}");
    assert_eq!(report["records"], N - 2);
    assert_eq!(report["gaps"], 1);
    assert_eq!(report["missing_seqs"], json!([50]));
    assert_eq!(report["counted"], N);
    assert_eq!(report["integrity_check"], "ok");
    // The chain still covers both rows, so it names each deleted one by its id.
    assert_eq!(
        report["problems"],
        json!([
            "1 sequence numbers have no row (deleted rows): 50",
            format!("{N} rows were stored, {} are present: 2 missing", N - 2),
            format!(
                "Evidence seq 50 ({}) is chained (row 50) but not in the ledger",
                ids[49]
            ),
            format!(
                "Evidence seq {N} ({}) is chained (row {N}) but not in the ledger",
                ids[N as usize - 1]
            ),
        ])
    );
    // A JSON-lines export keeps the other rows and says that rows are missing.
    let out = tempfile::tempdir().unwrap();
    let dest = out.path().join("ledger.jsonl");
    let (ok, stdout, stderr) = export_cli(state.path(), &id, &dest, &["--jsonl"]);
    assert!(ok, "{stdout}{stderr}");
    let kept: Vec<(u64, String)> = (1..N)
        .filter(|&n| n != 50)
        .map(|n| (n, ids[n as usize - 1].clone()))
        .collect();
    assert_eq!(exported_rows(&dest), kept);
    assert!(
        stderr.ends_with(&format!(
            "rea: 1 unreadable records were left out:\n  seq {N} (id unreadable): row unreadable: 2 more rows were stored than the table and the id index hold\n"
        )),
        "{stderr}"
    );
    resume_refused(
        state.path(),
        &id,
        &db,
        &format!(
            "the ledger is missing rows: {} present, sequence numbers run to {}, {N} were stored",
            N - 2,
            N - 1
        ),
    );
}

#[test]
fn a_sound_session_verifies_clean_and_resumes() {
    let (state, id, _db, _ids) = session_of();
    let (ok, report) = verify(state.path(), &id);
    assert!(ok, "{report}");
    assert_eq!(report["records"], N);
    assert_eq!(report["problems"], json!([]));
    assert_eq!(report["integrity_check"], "ok");
    let s = Session::resume(state.path(), &id).unwrap();
    assert_eq!(s.id(), id);
}

/// Flips one byte inside record `n`'s stored JSON so that it stays valid UTF-8 and valid JSON:
/// SQLite's b-trees and the ledger's counts are untouched; only the record's digest changes.
fn flip_inside_json(db: &Path, n: u64) {
    let mut bytes = std::fs::read(db).unwrap();
    let at = offset_of(&bytes, n) + 12;
    assert_eq!(bytes[at], b'x');
    bytes[at] = b'y';
    std::fs::write(db, &bytes).unwrap();
}

#[test]
fn resume_accepts_a_sound_b_tree_then_its_ledger_check_refuses_writes_naming_the_row_regression_16()
{
    let (state, id, db, ids) = session_of();
    flip_inside_json(&db, 42);
    let s = Session::resume(state.path(), &id).expect("quick_check and the counts pass");
    let status = s.store().wait_ledger_check();
    let problem = match &status {
        rea::store::LedgerStatus::Damaged(bad) => {
            assert_eq!((bad.seq, bad.id.as_deref()), (42, Some(ids[41].as_str())));
            bad.problem.clone()
        }
        other => panic!("the check ended {other:?}"),
    };
    assert!(
        problem.starts_with("the stored record hashes to ev_") && problem.ends_with("not its id"),
        "{problem}"
    );
    let refused = s.store().record_blocking(record(N + 1)).unwrap_err();
    assert_eq!(
        refused.to_string(),
        format!(
            "{} is damaged, so nothing more is written to it: the ledger check found seq 42 {}: {problem}; rows written before stay, later writes are refused",
            db.display(),
            ids[41]
        )
    );
    // What was acknowledged stays; nothing was added.
    let (_, rows) = s.store().list_evidence(&Default::default()).unwrap();
    assert_eq!(rows, N);
    drop(s);

    // The same through the server: binary_session reports the damage once the check has ended
    // (a bounded wait on the check of 120 rows), and a recording tool is refused with it.
    let mut server = StdioServer::start(state.path());
    assert_eq!(
        server.tool("resume_session", json!({"session_id": id}))["id"],
        json!(id)
    );
    let expected = format!("damaged: seq 42 {}: {problem}", ids[41]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let reported = loop {
        let v = server.tool("binary_session", json!({}));
        let check = v["ledger_check"].clone();
        if check != "running" {
            break check;
        }
        assert!(std::time::Instant::now() < deadline, "still running: {v}");
    };
    assert_eq!(reported, json!(expected));
    let v = server.request(
        "tools/call",
        json!({"name": "record_unknown", "arguments": {"question": "q?"}}),
    );
    assert_eq!(v["result"]["isError"], true, "{v}");
    let text = v["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains(&format!("the ledger check found seq 42 {}: ", ids[41])),
        "{text}"
    );
    drop(server);
    let (ok, report) = verify(state.path(), &id);
    assert!(!ok);
    assert_eq!(bad_rows(&report), vec![(42, Some(ids[41].clone()))]);
    assert_eq!(report["records"], N);
}

#[test]
fn a_sound_ledger_checks_clean_after_resume_and_writes_go_on() {
    let (state, id, _db, _ids) = session_of();
    let s = Session::resume(state.path(), &id).unwrap();
    assert_eq!(
        s.store().wait_ledger_check(),
        rea::store::LedgerStatus::Clean
    );
    let o = s.store().record_blocking(record(N + 1)).unwrap();
    assert_eq!(o.seq, N as i64 + 1);
    drop(s);
    let mut server = StdioServer::start(state.path());
    server.tool("resume_session", json!({"session_id": id}));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let v = server.tool("binary_session", json!({}));
        let check = &v["ledger_check"];
        if check != "running" {
            assert_eq!(check, "clean", "{v}");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "still running: {v}");
    }
    let v = server.tool("record_unknown", json!({"question": "q?"}));
    assert_eq!(v["head"]["revision"], 1, "{v}");
}

/// `rea evidence export --session ID DEST [extra]`: (exit success, stdout, stderr).
fn export_cli(state: &Path, id: &str, dest: &Path, extra: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_rea"))
        .arg("--state-dir")
        .arg(state)
        .args(["evidence", "export", "--session", id])
        .arg(dest)
        .args(extra)
        .env_remove("REA_CONFIG_DIR")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The (seq, id) of every line of a JSON-lines export.
fn exported_rows(file: &Path) -> Vec<(u64, String)> {
    let text = std::fs::read_to_string(file).unwrap();
    let mut lines = text.lines();
    // The header line says what the file is; the records follow it.
    let header: Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    assert_eq!(header["rea_export"], "evidence", "{header}");
    assert_eq!(header["format_version"], 1, "{header}");
    lines
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (
                v["seq"].as_u64().unwrap(),
                v["id"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// Zeroes the page holding record `n`; the records it held, in order.
fn zero_page_of(db: &Path, n: u64) -> Vec<u64> {
    let mut bytes = std::fs::read(db).unwrap();
    let page = offset_of(&bytes, n) / PAGE;
    let range = page * PAGE..(page + 1) * PAGE;
    let lost: Vec<u64> = (1..=N)
        .filter(|&k| range.contains(&offset_of(&bytes, k)))
        .collect();
    assert!(lost.len() >= 5 && lost.contains(&n), "{lost:?}");
    bytes[range].fill(0);
    std::fs::write(db, &bytes).unwrap();
    lost
}

#[test]
fn jsonl_export_of_a_zeroed_page_keeps_every_other_row_and_names_the_lost_regression_16() {
    let (state, id, db, ids) = session_of();
    let lost = zero_page_of(&db, 60);
    let out = tempfile::tempdir().unwrap();
    let dest = out.path().join("ledger.jsonl");
    let (ok, stdout, stderr) = export_cli(state.path(), &id, &dest, &["--jsonl"]);
    assert!(ok, "{stdout}{stderr}");
    let kept = N - lost.len() as u64;
    assert_eq!(
        stdout,
        format!("exported {kept} records to {}\n", dest.display())
    );
    let expected: Vec<(u64, String)> = (1..=N)
        .filter(|n| !lost.contains(n))
        .map(|n| (n, ids[n as usize - 1].clone()))
        .collect();
    assert_eq!(exported_rows(&dest), expected);
    // Every skipped row is named with its seq and id, after the count.
    let lines: Vec<&str> = stderr.lines().collect();
    let at = lines
        .iter()
        .position(|l| *l == format!("rea: {} unreadable records were left out:", lost.len()))
        .unwrap_or_else(|| panic!("{stderr}"));
    let named: Vec<&str> = lines[at + 1..].to_vec();
    assert_eq!(named.len(), lost.len(), "{stderr}");
    for (line, n) in named.iter().zip(&lost) {
        assert!(
            line.starts_with(&format!(
                "  seq {n} {}: row unreadable: database disk image is malformed",
                ids[*n as usize - 1]
            )),
            "{line}"
        );
    }
}

/// The export reads rows on one thread and checks them on another, a batch (64 rows) behind: rows
/// the reader cannot read and rows the checker finds wrong, in different batches, are left out
/// and named together in sequence order, and every other row is written in order.
#[test]
fn jsonl_export_names_unreadable_and_wrong_rows_in_order_across_batches_regression_30() {
    let (state, id, db, ids) = session_of();
    let lost = zero_page_of(&db, 60);
    let wrong = [10, 110];
    for n in wrong {
        assert!(!lost.contains(&n), "{lost:?}");
        flip_inside_json(&db, n);
    }
    let out = tempfile::tempdir().unwrap();
    let dest = out.path().join("ledger.jsonl");
    let (ok, stdout, stderr) = export_cli(state.path(), &id, &dest, &["--jsonl"]);
    assert!(ok, "{stdout}{stderr}");
    let mut left_out: Vec<u64> = lost.iter().copied().chain(wrong).collect();
    left_out.sort_unstable();
    let expected: Vec<(u64, String)> = (1..=N)
        .filter(|n| !left_out.contains(n))
        .map(|n| (n, ids[n as usize - 1].clone()))
        .collect();
    assert_eq!(exported_rows(&dest), expected);
    let named: Vec<(u64, &str)> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("  seq "))
        .map(|l| {
            let (seq, rest) = l.split_once(' ').unwrap();
            (seq.parse().unwrap(), rest)
        })
        .collect();
    assert_eq!(
        named.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        left_out,
        "{stderr}"
    );
    for (n, rest) in named {
        let id = &ids[n as usize - 1];
        let problem = if wrong.contains(&n) {
            "the stored record hashes to ev_"
        } else {
            "row unreadable: database disk image is malformed"
        };
        assert!(rest.starts_with(&format!("{id}: {problem}")), "{n}: {rest}");
    }
}

#[test]
fn sqlite_copy_of_a_damaged_file_is_refused_with_the_reason_and_leaves_no_file_regression_16() {
    let (state, id, db, _ids) = session_of();
    zero_page_of(&db, 60);
    let out = tempfile::tempdir().unwrap();
    let dest = out.path().join("copy.db");
    let (ok, stdout, stderr) = export_cli(state.path(), &id, &dest, &[]);
    assert!(!ok, "{stdout}");
    assert!(
        stderr.contains(&format!(
            "{} is damaged, so nothing more is written to it: SQLite cannot read it whole (database disk image is malformed), so no copy was made; export it as JSON lines to keep the readable records",
            db.display()
        )),
        "{stderr}"
    );
    // No partial copy, no 0-byte file, no temporary file: the directory is as it was.
    assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0);
    // A retry as JSON lines goes through.
    let (ok, _, stderr) = export_cli(state.path(), &id, &out.path().join("l.jsonl"), &["--jsonl"]);
    assert!(ok, "{stderr}");
}

#[test]
fn export_evidence_as_jsonl_skips_a_row_that_does_not_hash_to_its_id_and_names_it_regression_16() {
    let (state, id, db, ids) = session_of();
    flip_inside_json(&db, 42);
    let out = tempfile::tempdir().unwrap();
    let dest = out.path().join("ledger.jsonl");
    let mut server = StdioServer::start(state.path());
    server.tool("resume_session", json!({"session_id": id}));
    let v = server.tool("export_evidence", json!({"path": dest, "format": "jsonl"}));
    assert_eq!(v["evidence"], N - 1, "{v}");
    assert_eq!(v["skipped"], 1, "{v}");
    let listed = v["skipped_rows"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{v}");
    let row = listed[0].as_str().unwrap();
    assert!(
        row.starts_with(&format!(
            "seq 42 {}: the stored record hashes to ev_",
            ids[41]
        )) && row.ends_with(", not its id"),
        "{row}"
    );
    let expected: Vec<(u64, String)> = (1..=N)
        .filter(|&n| n != 42)
        .map(|n| (n, ids[n as usize - 1].clone()))
        .collect();
    assert_eq!(exported_rows(&dest), expected);
    assert_eq!(v["bytes"], std::fs::metadata(&dest).unwrap().len());
    // The server ends (end of its input) and lets the session go.
    drop(server.stdin);
    assert!(server.child.wait().unwrap().success());

    // The CLI's SQLite copy is of the file as it is, and says that a record in it is damaged.
    let copy = out.path().join("copy.db");
    let (ok, stdout, stderr) = export_cli(state.path(), &id, &copy, &[]);
    assert!(ok, "{stderr}");
    assert_eq!(
        stdout,
        format!("exported the session database to {}\n", copy.display())
    );
    assert!(
        stderr.contains(&format!(
            "rea: the copy holds a damaged record: ledger check damaged: {}",
            listed[0].as_str().unwrap()
        )),
        "{stderr}"
    );
    let check = rea::store::verify_ledger(&copy).unwrap();
    let named: Vec<(i64, Option<String>)> = check
        .bad_rows
        .iter()
        .map(|b| (b.seq, b.id.clone()))
        .collect();
    assert_eq!(named, vec![(42, Some(ids[41].clone()))]);
    assert_eq!(check.records, N);
}

#[test]
fn jsonl_export_of_a_truncated_file_names_every_row_past_its_end_regression_16() {
    let (state, id, db, ids) = session_of();
    let bytes = std::fs::read(&db).unwrap();
    let cut = offset_of(&bytes, 100) / PAGE * PAGE;
    let lost: Vec<u64> = (1..=N).filter(|&n| offset_of(&bytes, n) >= cut).collect();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&db)
        .unwrap()
        .set_len(cut as u64)
        .unwrap();
    let out = tempfile::tempdir().unwrap();
    let dest = out.path().join("ledger.jsonl");
    let (ok, stdout, stderr) = export_cli(state.path(), &id, &dest, &["--jsonl"]);
    assert!(ok, "{stdout}{stderr}");
    let expected: Vec<(u64, String)> = (1..=N)
        .filter(|n| !lost.contains(n))
        .map(|n| (n, ids[n as usize - 1].clone()))
        .collect();
    assert_eq!(exported_rows(&dest), expected);
    assert!(
        stderr.contains(&format!(
            "rea: {} unreadable records were left out:",
            lost.len()
        )),
        "{stderr}"
    );
    for n in &lost {
        assert!(stderr.contains(&format!("  seq {n} ")), "{n}: {stderr}");
    }
}

/// The files a killed owner leaves of session `id` (database, WAL, chain head; not the
/// shared-memory index, which the next opener rebuilds from the WAL), copied while it is still
/// open and idle into a new state directory: with `synchronous = FULL` every committed frame is
/// on disk, so this is what a SIGKILL at that moment leaves.
fn crash_image(state: &Path, id: &str) -> tempfile::TempDir {
    let from = state.join("sessions").join(id);
    let copy = tempfile::tempdir().unwrap();
    let to = copy.path().join("sessions").join(id);
    std::fs::create_dir_all(&to).unwrap();
    for name in ["session.db", "session.db-wal", "session.chain"] {
        std::fs::copy(from.join(name), to.join(name)).unwrap();
    }
    copy
}

#[test]
fn a_flipped_byte_in_the_wal_is_named_as_a_lost_tail_and_resume_refuses_regression_25() {
    let state = tempfile::tempdir().unwrap();
    let s = Session::create(state.path()).unwrap();
    let mut ids = vec![];
    for n in 1..=N {
        ids.push(s.store().record_blocking(record(n)).unwrap().id.to_string());
    }
    let image = crash_image(state.path(), s.id());
    let id = s.id().to_owned();
    drop(s);
    let db = image.path().join("sessions").join(&id).join("session.db");
    let wal = db.with_extension("db-wal");
    let mut bytes = std::fs::read(&wal).unwrap();
    // One byte inside the page of a frame halfway through: SQLite's replay of the WAL ends at the
    // frame whose checksum fails, and every commit from there on is gone.
    let frames = (bytes.len() - 32) / (24 + PAGE);
    assert!(frames > 200, "{frames} frames");
    let at = 32 + frames / 2 * (24 + PAGE) + 24 + 100;
    bytes[at] ^= 0x01;
    std::fs::write(&wal, &bytes).unwrap();

    let (ok, report) = verify(image.path(), &id);
    assert!(!ok, "{report}");
    let kept = report["records"].as_u64().unwrap();
    assert!(kept > 10 && kept < N - 10, "{report}");
    // What SQLite still reads is sound: only the chain's head file tells that rows are gone.
    assert_eq!(report["integrity_check"], "ok");
    assert_eq!(report["bad_rows"], json!([]));
    assert_eq!(report["chain"]["rows"], kept);
    assert_eq!(report["chain"]["head_file"][0], N);
    assert_eq!(
        report["problems"],
        json!([format!(
            "lost tail: the chain head file records chain row {N} but the database's chain ends at row {kept}: {} committed rows are missing, Evidence seq {} to {N} among them",
            N - kept,
            kept + 1
        )])
    );
    resume_refused(
        image.path(),
        &id,
        &db,
        &format!("lost tail: the chain head file records chain row {N}"),
    );
}

/// A closed session of `N` records and one unknown revised once: (state dir, session id,
/// database path, the unknown's id).
fn session_with_unknown() -> (tempfile::TempDir, String, PathBuf, String) {
    use rea::store::{NewRevision, NewUnknown, UnknownStatus};
    let (state, id, db, ids) = session_of();
    let s = Session::resume(state.path(), &id).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let unknown = rt.block_on(async {
        let head = s
            .store()
            .record_unknown(NewUnknown {
                question: "what does sub_401000 check?".into(),
                supporting: vec![rea::ids::EvidenceId::parse(&ids[0]).unwrap()],
                note: None,
            })
            .await
            .unwrap();
        s.store()
            .append_unknown_revision(
                head.id.clone(),
                1,
                NewRevision {
                    status: UnknownStatus::Investigating,
                    question: head.head.question.clone(),
                    resolution: None,
                    rationale: None,
                    note: Some("reading its callers".into()),
                    supporting: vec![],
                    contradicting: vec![],
                },
            )
            .await
            .unwrap();
        head.id.to_string()
    });
    drop(s);
    (state, id, db, unknown)
}

#[test]
fn an_unknown_revision_edited_on_disk_is_named_and_resume_refuses_regression_25() {
    let (state, id, db, unknown) = session_with_unknown();
    let (ok, report) = verify(state.path(), &id);
    assert!(ok, "{report}");
    // N Evidence rows, then the unknown's two revisions.
    assert_eq!(report["chain"]["rows"], N + 2);
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute(
            "update unknown_revisions set question = 'what does sub_402000 check?' where revision = 1",
            [],
        )
        .unwrap();
    let (ok, report) = verify(state.path(), &id);
    assert!(!ok);
    let problems = report["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1, "{report}");
    let problem = problems[0].as_str().unwrap();
    // The digest the chain recorded for revision 1, read from its row.
    let chained: String = rusqlite::Connection::open(&db)
        .unwrap()
        .query_row(
            "select lower(hex(digest)) from ledger_chain where seq = ?1",
            [N as i64 + 1],
            |r| r.get(0),
        )
        .unwrap();
    let named = format!("unknown {unknown} revision 1 hashes to ");
    let now = problem
        .strip_prefix(&named)
        .and_then(|rest| {
            rest.strip_suffix(&format!(
                ", the chain (row {}) recorded {chained}: the revision was edited",
                N + 1
            ))
        })
        .unwrap_or_else(|| panic!("{problem}"));
    assert!(now.len() == 64 && now != chained, "{problem}");
    resume_refused(state.path(), &id, &db, &named);
}

#[test]
fn an_unknown_whose_head_row_was_edited_is_named_regression_25() {
    let (state, id, db, unknown) = session_with_unknown();
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute("update unknowns set status = 'resolved'", [])
        .unwrap();
    let (ok, report) = verify(state.path(), &id);
    assert!(!ok);
    let expected = format!(
        "unknown {unknown}'s head (revision 2, resolved) is not its last revision as recorded: the unknown was edited"
    );
    assert_eq!(report["problems"], json!([expected]), "{report}");
    resume_refused(state.path(), &id, &db, &expected);
}

#[test]
fn get_evidence_of_a_row_that_no_longer_hashes_to_its_id_says_damaged_regression_25() {
    let (state, id, db, ids) = session_of();
    flip_inside_json(&db, 42);
    let mut server = StdioServer::start(state.path());
    server.tool("resume_session", json!({"session_id": id}));
    let v = server.tool("get_evidence", json!({"evidence_id": ids[41]}));
    assert_eq!(v["id"], json!(ids[41]), "{v}");
    assert_eq!(v["seq"], 42);
    assert_eq!(v["damaged"], true, "{v}");
    let reason = v["damage"].as_str().unwrap();
    // The digest of what the row holds now, computed here from the file's bytes.
    let stored: String = rusqlite::Connection::open(&db)
        .unwrap()
        .query_row("select record from evidence where seq = 42", [], |r| {
            r.get(0)
        })
        .unwrap();
    let digest = rea::ids::EvidenceId::from_digest_of(stored.as_bytes());
    assert_eq!(
        reason,
        format!("the stored record hashes to {digest}, not its id")
    );
    // The record is served as it reads, the edit visible.
    assert_eq!(
        v["record"]["result"]["marker"],
        json!(format!("{}xxxy{}", marker(42), "x".repeat(196))),
        "{v}"
    );
    let sound = server.tool("get_evidence", json!({"evidence_id": ids[40]}));
    assert_eq!(sound["damaged"], false, "{sound}");
    assert!(sound.get("damage").is_none(), "{sound}");
}

#[test]
fn a_damaged_index_entry_refuses_resume_naming_the_index_regression_25() {
    let (state, id, db, ids) = session_of();
    let mut bytes = std::fs::read(&db).unwrap();
    // The id of record 60 is in its table row and in the entry of the id index; the index
    // entry is on a page whose header says "index leaf" (0x0a).
    let needle = ids[59].as_bytes();
    let places: Vec<usize> = bytes
        .windows(needle.len())
        .enumerate()
        .filter(|(_, w)| *w == needle)
        .map(|(at, _)| at)
        .collect();
    let in_index: Vec<usize> = places
        .iter()
        .copied()
        .filter(|at| bytes[at / PAGE * PAGE] == 0x0a)
        .collect();
    assert_eq!((places.len(), in_index.len()), (2, 1), "{places:?}");
    // The entry's last hex digit changed: the page stays well formed and in order.
    let last = in_index[0] + needle.len() - 1;
    bytes[last] = if bytes[last] == b'0' { b'1' } else { b'0' };
    std::fs::write(&db, &bytes).unwrap();
    resume_refused(
        state.path(),
        &id,
        &db,
        "integrity_check of evidence and its indexes: ",
    );
    let refused = Session::resume(state.path(), &id).unwrap_err().to_string();
    assert!(refused.contains("sqlite_autoindex_evidence_1"), "{refused}");
    let (ok, report) = verify(state.path(), &id);
    assert!(!ok);
    assert!(
        report["integrity_check"]
            .as_str()
            .unwrap()
            .contains("sqlite_autoindex_evidence_1"),
        "{report}"
    );
}

#[test]
fn a_ledger_written_before_the_chain_verifies_clean_with_its_rows_unchained_regression_25() {
    let (state, id, db, _ids) = session_of();
    // Back to schema version 6: no chain, no annotations, no head file, the migrations not applied.
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute_batch(
            "drop table ledger_chain; drop table ledger_unchained_revisions;
             delete from meta where name = 'chain_unchained_evidence';
             drop table annotation_evidence; drop table annotation_revisions; drop table annotations;
             delete from refinery_schema_history where version >= 7;",
        )
        .unwrap();
    std::fs::remove_file(db.with_extension("chain")).unwrap();
    let (ok, report) = verify(state.path(), &id);
    assert!(ok, "{report}");
    assert_eq!(report["problems"], json!([]));
    assert_eq!(report["chain"]["rows"], 0);
    assert_eq!(report["chain"]["unchained_evidence"], N);
    assert_eq!(report["chain"]["head_file"], Value::Null);

    // Resuming adds the chain: the old rows stay its unchained prefix, new ones are chained.
    let s = Session::resume(state.path(), &id).unwrap();
    assert_eq!(
        s.store().wait_ledger_check(),
        rea::store::LedgerStatus::Clean
    );
    s.store().record_blocking(record(N + 1)).unwrap();
    drop(s);
    let (ok, report) = verify(state.path(), &id);
    assert!(ok, "{report}");
    assert_eq!(report["records"], N + 1);
    assert_eq!(report["chain"]["rows"], 1);
    assert_eq!(report["chain"]["unchained_evidence"], N);
    assert_eq!(report["chain"]["head_file"][0], 1);
    assert_eq!(report["chain"]["head"], report["chain"]["head_file"]);
    let s = Session::resume(state.path(), &id).unwrap();
    assert_eq!(s.id(), id);
}
