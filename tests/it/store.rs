//! The session store through its public API: ledger rows, completion queries, lifecycle.

use std::sync::Arc;

use rea::completion::{Family, complete};
use rea::evidence::{Authority, Confidence, EvidenceRecord, ProviderStamp};
use rea::ids::EvidenceId;
use rea::session::{self, Session, SessionError};
use rea::store::{
    LoadError, NewDocument, NewProcedure, NewTarget, ProcedureScope, Recording, Store, StoreError,
};
use rea::vocabulary::{Architecture, DocumentRole, Format};
use serde_json::json;

fn record(op: &str, n: u64) -> EvidenceRecord {
    EvidenceRecord {
        subject: None,
        provider: ProviderStamp::builtin(),
        operation: op.into(),
        parameters: json!({ "n": n }),
        result: json!({ "value": n * 7 }),
        confidence: Confidence::Observed,
        authority: Authority::ShippedArtifact,
        limitations: vec![],
        locations: vec![],
        links: vec![],
    }
}

fn store() -> (tempfile::TempDir, Arc<Store>) {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(&dir.path().join("s.db")).unwrap();
    (dir, s)
}

#[test]
fn identical_records_keep_one_row_and_links_must_exist() {
    let (_d, s) = store();
    let a = s.record_blocking(record("x", 1)).unwrap();
    let b = s.record_blocking(record("x", 1)).unwrap();
    assert_eq!(a.id, b.id);
    assert!(a.new && !b.new);
    assert_eq!(a.seq, b.seq);
    let mut linked = record("y", 2);
    linked.links = vec![EvidenceId::parse(&format!("ev_{}", "a".repeat(64))).unwrap()];
    let e = s.record_blocking(linked.clone()).unwrap_err();
    assert!(matches!(e, StoreError::EvidenceNotInLedger { .. }), "{e}");
    linked.links = vec![a.id.clone()];
    let c = s.record_blocking(linked).unwrap();
    assert_eq!(s.evidence(&c.id).unwrap().unwrap().record.links, vec![a.id]);
    assert_eq!(s.list_evidence(&Default::default()).unwrap().1, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writers_are_group_committed_and_all_acknowledged() {
    let (_d, s) = store();
    let mut tasks = vec![];
    for i in 0..2000u64 {
        let s = s.clone();
        tasks.push(tokio::spawn(async move {
            s.record(record("concurrent", i)).await.unwrap().id
        }));
    }
    let mut ids = vec![];
    for t in tasks {
        ids.push(t.await.unwrap());
    }
    for id in &ids {
        assert!(s.has_evidence(id).unwrap());
    }
    assert_eq!(s.list_evidence(&Default::default()).unwrap().1, 2000);
    assert_eq!(s.integrity_check().unwrap(), "ok");
}

#[test]
fn a_refused_recording_keeps_none_of_its_records_or_rows() {
    let (_d, s) = store();
    let ok = s.record_blocking(record("a", 1)).unwrap();
    // Its pages and its registration come before the link that refuses it: none of them stays.
    let page = record("page", 2);
    let mut primary = record("primary", 3);
    primary.links = vec![
        page.id().unwrap(),
        EvidenceId::from_digest_of(b"not in the ledger"),
    ];
    let mut recording = Recording::of(primary.clone());
    recording.pages = vec![page.clone()];
    recording.process_capture = true;
    let refused = s.commit_blocking(recording);
    assert!(
        matches!(refused, Err(StoreError::EvidenceNotInLedger { .. })),
        "{refused:?}"
    );
    assert!(!s.has_evidence(&page.id().unwrap()).unwrap());
    assert!(!s.has_evidence(&primary.id().unwrap()).unwrap());
    assert_eq!(s.complete_process_captures("", 10).unwrap().total, 0);
    assert!(s.has_evidence(&ok.id).unwrap());
    // The same recording with only links that hold is kept whole.
    primary.links = vec![page.id().unwrap(), ok.id.clone()];
    let mut recording = Recording::of(primary.clone());
    recording.pages = vec![page.clone()];
    let committed = s.commit_blocking(recording).unwrap();
    assert_eq!(committed.pages[0].id, page.id().unwrap());
    assert_eq!(committed.primary.id, primary.id().unwrap());
}

#[test]
fn a_record_loads_only_as_its_own_operation_with_a_result_that_parses() {
    let (_d, s) = store();
    let stored = s.record_blocking(record("x", 1)).unwrap();
    #[derive(serde::Deserialize, Debug)]
    struct Value {
        value: u64,
    }
    let loaded = s.load::<Value>(&stored.id, "x").unwrap();
    assert_eq!(loaded.result.value, 7);
    assert!(matches!(
        s.load::<Value>(&stored.id, "y"),
        Err(LoadError::WrongOperation { found, .. }) if found == "x"
    ));
    #[derive(serde::Deserialize, Debug)]
    struct Other {
        #[allow(dead_code)]
        other: String,
    }
    assert!(matches!(
        s.load::<Other>(&stored.id, "x"),
        Err(LoadError::Corrupt { .. })
    ));
    let missing = EvidenceId::from_digest_of(b"missing");
    assert!(matches!(
        s.load::<Value>(&missing, "x"),
        Err(LoadError::NotInLedger { id }) if id == missing
    ));
}

/// A document name and its procedures (address, name).
type Doc<'a> = (&'a str, &'a [(u64, Option<&'a str>)]);

fn target(name: &str, docs: &[Doc<'_>]) -> NewTarget {
    NewTarget {
        path: format!("/t/{name}"),
        name: name.into(),
        sha256: rea::ids::sha256_hex(name.as_bytes()),
        format: Format::Elf,
        architecture: Architecture::X86_64,
        documents: docs
            .iter()
            .map(|(d, procs)| NewDocument {
                name: d.to_string(),
                format: Format::Elf,
                architecture: Architecture::X86_64,
                role: DocumentRole::Slice,
                file: format!("/t/{name}"),
                file_offset: 0,
                file_size: 1,
                procedures: procs
                    .iter()
                    .map(|(a, n)| NewProcedure {
                        address: *a,
                        name: n.map(str::to_owned),
                        raw_name: None,
                        size: None,
                        aliases: vec![],
                    })
                    .collect(),
            })
            .collect(),
    }
}

#[test]
fn procedure_names_must_identify_one_address_in_the_scope() {
    let (_d, s) = store();
    s.open_target_blocking(target(
        "t",
        &[
            (
                "arm64",
                &[
                    (0x10, Some("main")),
                    (0x20, Some("dup")),
                    (0x30, Some("dup")),
                    (0x40, Some("Straße")),
                ],
            ),
            (
                "x86_64",
                &[
                    (0x10, Some("main")),
                    (0x50, Some("main")),
                    (0x60, Some("only_x86")),
                ],
            ),
        ],
    ))
    .unwrap();
    let values = |scope, typed: &str| s.complete_procedures(scope, typed, 100).unwrap().values;
    // arm64 alone: main is unique, dup names two addresses.
    assert_eq!(values(ProcedureScope::Document("arm64"), "m"), ["main"]);
    assert!(values(ProcedureScope::Document("arm64"), "d").is_empty());
    // x86_64: main names 0x10 and 0x50.
    assert!(values(ProcedureScope::Document("x86_64"), "m").is_empty());
    // The whole target: main names 0x10 and 0x50; only_x86 is unique; addresses are deduplicated.
    assert!(values(ProcedureScope::Target, "main").is_empty());
    assert_eq!(values(ProcedureScope::Target, "ONLY"), ["only_x86"]);
    let all = s
        .complete_procedures(ProcedureScope::Target, "0x", 100)
        .unwrap();
    assert_eq!(all.values, ["0x10", "0x20", "0x30", "0x40", "0x50", "0x60"]);
    assert_eq!(all.total, 6);
    // Normalized match: typed SS finds Straße.
    assert_eq!(
        values(ProcedureScope::Document("arm64"), "STRASS"),
        ["Straße"]
    );
}

#[test]
fn totals_are_exact_and_values_are_the_first_in_code_point_order() {
    let (_d, s) = store();
    let mut naive = vec![];
    for i in 0..3000u64 {
        let o = s.record_blocking(record("bulk", i)).unwrap();
        naive.push(o.id.to_string());
    }
    naive.sort();
    for prefix in [
        "", "e", "E", "ev", "ev_", "EV_", "ev_a", "ev_ab", "EV_F0", "ev_0", "ev_zz", "x", "ev_g",
    ] {
        let key = prefix.to_ascii_lowercase();
        let expected: Vec<&String> = naive.iter().filter(|id| id.starts_with(&key)).collect();
        let page = s.complete_evidence(prefix, 100).unwrap();
        assert_eq!(page.total, expected.len() as u64, "total for {prefix:?}");
        assert_eq!(page.values.len(), expected.len().min(100));
        assert!(
            page.values.iter().zip(&expected).all(|(a, b)| a == *b),
            "order for {prefix:?}"
        );
        assert_eq!(page.has_more, expected.len() > 100);
    }
}

#[test]
fn hot_completion_statements_are_never_re_prepared() {
    let (_d, s) = store();
    s.open_target_blocking(target("t", &[("d", &[(0x10, Some("f"))])]))
        .unwrap();
    let before = s.completion_reprepares();
    for i in 0..200u64 {
        s.record_blocking(record("w", i)).unwrap();
        for f in Family::ALL {
            complete(Some(&s), f, "e", None, 100);
        }
        complete(Some(&s), Family::Procedure, "0x", Some("d"), 100);
    }
    assert_eq!(
        s.completion_reprepares(),
        before,
        "a cached completion statement was re-prepared"
    );
}

#[test]
fn process_capture_completion_offers_only_validated_captures() {
    let (_d, s) = store();
    // Evidence that claims the operation but was never validated as a capture is not offered.
    let bogus = s
        .record_blocking(record("capture_process_scenario", 1))
        .unwrap();
    assert_eq!(s.complete_process_captures("", 100).unwrap().total, 0);
    let mut recording = Recording::of(record("capture_process_scenario", 2));
    recording.process_capture = true;
    let good = s.commit_blocking(recording).unwrap().primary;
    let page = s.complete_process_captures("", 100).unwrap();
    assert_eq!(page.values, [good.id.to_string()]);
    assert!(!page.values.contains(&bogus.id.to_string()));
}

#[test]
fn keys_written_by_another_algorithm_are_recomputed_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let s = Store::open(&path).unwrap();
    s.open_target_blocking(target("t", &[("Doc", &[(0x10, Some("Größe"))])]))
        .unwrap();
    s.close();
    drop(s);
    let raw = rusqlite::Connection::open(&path).unwrap();
    raw.execute(
        "update meta set value = 'old' where name = 'key_algorithm'",
        [],
    )
    .unwrap();
    raw.execute("update documents set key = 'garbage'", [])
        .unwrap();
    raw.execute(
        "update procedure_completions set key = 'garbage' where value = 'Größe'",
        [],
    )
    .unwrap();
    drop(raw);
    let s = Store::open(&path).unwrap();
    assert_eq!(s.complete_documents("doc", 10).unwrap().values, ["Doc"]);
    assert_eq!(
        s.complete_procedures(ProcedureScope::Target, "GRÖSS", 10)
            .unwrap()
            .values,
        ["Größe"]
    );
    assert_eq!(
        s.meta("key_algorithm").unwrap().as_deref(),
        Some(rea::completion::key::KEY_ALGORITHM)
    );
}

#[test]
fn a_database_of_another_application_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.db");
    let c = rusqlite::Connection::open(&path).unwrap();
    c.pragma_update(None, "application_id", 1234).unwrap();
    c.execute("create table t (x)", []).unwrap();
    drop(c);
    let e = Store::open(&path).unwrap_err();
    assert!(
        matches!(e, StoreError::NotASessionDatabase { found: 1234, .. }),
        "{e}"
    );
}

#[test]
fn a_live_session_is_locked_and_a_dead_one_resumes() {
    let state = tempfile::tempdir().unwrap();
    let s = Session::create(state.path()).unwrap();
    let id = s.id().to_owned();
    let o = s.store().record_blocking(record("kept", 1)).unwrap();
    let listed = session::list(state.path()).unwrap();
    assert_eq!(listed.len(), 1);
    assert!(listed[0].live);
    assert!(matches!(
        Session::resume(state.path(), &id),
        Err(SessionError::InUse { .. })
    ));
    drop(s); // the owning process "goes away": its lock is released, its files stay
    let listed = session::list(state.path()).unwrap();
    assert!(!listed[0].live);
    let resumed = Session::resume(state.path(), &id).unwrap();
    assert!(resumed.store().has_evidence(&o.id).unwrap());
    let dir = resumed.dir().to_owned();
    let deletion = resumed.close().unwrap();
    // Gone from its place and from the listing at once; the files follow in the background.
    assert!(!dir.exists());
    assert!(session::list(state.path()).unwrap().is_empty());
    deletion.wait().unwrap();
    let left: Vec<_> = std::fs::read_dir(state.path().join("sessions"))
        .unwrap()
        .collect();
    assert!(left.is_empty(), "{left:?}");
    assert!(matches!(
        Session::resume(state.path(), "ses_0000"),
        Err(SessionError::NotFound { .. })
    ));
    assert!(matches!(
        Session::resume(state.path(), "../etc"),
        Err(SessionError::BadId { .. })
    ));
}

#[test]
fn export_writes_a_consistent_copy_and_never_overwrites_unless_told() {
    let (dir, s) = store();
    s.record_blocking(record("x", 1)).unwrap();
    let dest = dir.path().join("export.db");
    let target = rea::fsroot::Roots::none()
        .open_new(&dest, &rea::fsroot::Protected::none())
        .unwrap();
    s.export(
        &target,
        rea::investigation::claim_export(&target, false).unwrap(),
    )
    .unwrap();
    assert!(matches!(
        s.export(&target, rea::fsroot::Claim::Fresh),
        Err(StoreError::ExportExists { .. })
    ));
    s.record_blocking(record("x", 2)).unwrap();
    s.export(
        &target,
        rea::investigation::claim_export(&target, true).unwrap(),
    )
    .unwrap();
    let copy = Store::open(&dest).unwrap();
    assert_eq!(copy.list_evidence(&Default::default()).unwrap().1, 2);
    assert_eq!(copy.integrity_check().unwrap(), "ok");
}

#[test]
fn schema_reads_as_documentation() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(files.len() >= 2, "{files:?}");
    for file in files {
        let sql = std::fs::read_to_string(&file).unwrap();
        assert!(sql.starts_with("--"), "{} has no header", file.display());
        schema_file_is_commented(&sql);
    }
}

fn schema_file_is_commented(sql: &str) {
    let lines: Vec<&str> = sql.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        if line.starts_with("create table")
            || line.starts_with("create index")
            || line.starts_with("create unique index")
            || line.starts_with("create trigger")
        {
            assert!(
                i > 0 && lines[i - 1].starts_with("--"),
                "no comment above: {line}"
            );
        }
        if line.starts_with(") ") || *line == ");" {
            assert!(line.contains("strict"), "table not STRICT near line {i}");
        }
    }
}

/// `sqlite3 session.db .schema` explains every table and index: the notes of the migrations are
/// inside the statements SQLite keeps, the text it prints is SQL that builds the same schema,
/// and opening the ledger again writes nothing more.
#[test]
fn sqlite3_schema_says_why_each_table_and_index_exists_regression_29() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let s = Store::open(&path).unwrap();
    s.record_blocking(record("kept", 1)).unwrap();
    s.close();
    drop(s);
    let out = std::process::Command::new("sqlite3")
        .arg(&path)
        .arg(".schema")
        .output()
        .expect("sqlite3 runs");
    assert!(out.status.success(), "{out:?}");
    let schema = String::from_utf8(out.stdout).unwrap();
    assert!(
        schema.contains(
            "CREATE TABLE evidence (\n    -- The ledger: one row per distinct observation."
        ),
        "{schema}"
    );
    assert!(schema.contains(
        "CREATE INDEX evidence_by_operation on evidence (operation, seq) /* Audits list a \
         session's Evidence by operation in recording order (list_evidence, rea evidence). */;"
    ));
    // What a later schema version changed is said where the table is.
    let procedures = &schema[schema.find("CREATE TABLE procedures").unwrap()..];
    let procedures = &procedures[..procedures.find(";\n").unwrap()];
    assert!(procedures.contains("    -- Schema version 3:\n    -- A procedure's other names"));
    assert!(procedures.contains("    -- Schema version 4:\n"));
    // Every statement but SQLite's and refinery's own carries notes.
    let conn = rusqlite::Connection::open(&path).unwrap();
    let bare: Vec<String> = conn
        .prepare(
            "select name from sqlite_schema where sql is not null
             and name <> 'refinery_schema_history' and sql not like '%--%' and sql not like '%/*%'",
        )
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(bare, Vec::<String>::new());
    // The printed schema is SQL that builds the same tables and indexes.
    let rebuilt = rusqlite::Connection::open_in_memory().unwrap();
    rebuilt.execute_batch(&schema).unwrap();
    let columns = |c: &rusqlite::Connection| -> Vec<(String, String, String)> {
        c.prepare(
            "select m.name, p.name, p.type from sqlite_schema m, pragma_table_xinfo(m.name) p
             where m.type = 'table' order by 1, p.cid",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
    };
    assert_eq!(columns(&rebuilt), columns(&conn));
    let version = |c: &rusqlite::Connection| -> i64 {
        c.query_row("pragma schema_version", [], |r| r.get(0))
            .unwrap()
    };
    let before = version(&conn);
    drop(conn);
    let s = Store::open(&path).unwrap();
    assert_eq!(s.integrity_check().unwrap(), "ok");
    assert_eq!(s.count_evidence(None).unwrap(), 1);
    s.close();
    drop(s);
    let conn = rusqlite::Connection::open(&path).unwrap();
    assert_eq!(version(&conn), before, "a second open rewrote the schema");
}

#[tokio::test]
async fn a_batch_is_recorded_in_one_write_all_or_nothing() {
    let (_d, s) = store();
    let first = record("batch", 1);
    let mut second = record("batch", 2);
    second.links = vec![first.id().unwrap()];
    let outcomes = s
        .record_many(vec![first.clone(), second, first.clone()])
        .await
        .unwrap();
    assert_eq!(outcomes.len(), 3);
    assert!(outcomes[0].new && outcomes[1].new && !outcomes[2].new);
    assert_eq!(outcomes[2].seq, outcomes[0].seq);
    assert_eq!(outcomes[1].seq, outcomes[0].seq + 1);
    assert_eq!(
        s.evidence(&outcomes[1].id).unwrap().unwrap().record.links,
        vec![outcomes[0].id.clone()]
    );

    // A link to a record outside the ledger refuses the whole batch.
    let mut stray = record("batch", 4);
    stray.links = vec![EvidenceId::parse(&format!("ev_{}", "b".repeat(64))).unwrap()];
    let e = s
        .record_many(vec![record("batch", 3), stray])
        .await
        .unwrap_err();
    assert!(matches!(e, StoreError::EvidenceNotInLedger { .. }), "{e}");
    assert!(!s.has_evidence(&record("batch", 3).id().unwrap()).unwrap());
    assert_eq!(s.list_evidence(&Default::default()).unwrap().1, 2);
    assert_eq!(s.complete_evidence("e", 100).unwrap().total, 2);
}

#[test]
fn a_ledger_from_schema_1_gets_its_prefix_counts_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let s = Store::open(&path).unwrap();
    let mut ids = vec![];
    for i in 0..500u64 {
        ids.push(s.record_blocking(record("old", i)).unwrap().id.to_string());
    }
    s.close();
    drop(s);
    // Take the database back to what schema version 1 wrote: no count table (and none of the
    // later versions' changes).
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "drop table evidence_id_prefixes; alter table procedures drop column aliases;
         drop table procedure_completion_prefixes;
         alter table procedures drop column other_keys;
         drop table annotation_evidence; drop table annotation_revisions; drop table annotations;
         drop table ledger_chain; drop table ledger_unchained_revisions;
         delete from meta where name = 'chain_unchained_evidence';
         delete from refinery_schema_history where version >= 2;",
    )
    .unwrap();
    drop(conn);
    std::fs::remove_file(dir.path().join("s.chain")).unwrap();

    let s = Store::open(&path).unwrap();
    for prefix in ["", "e", "ev_", "ev_3", "ev_3a", "ev_c"] {
        let expected = ids.iter().filter(|id| id.starts_with(prefix)).count() as u64;
        assert_eq!(
            s.complete_evidence(prefix, 100).unwrap().total,
            expected,
            "{prefix:?}"
        );
    }
    // New rows keep counting.
    s.record_blocking(record("new", 1)).unwrap();
    assert_eq!(s.complete_evidence("ev_", 100).unwrap().total, 501);
}

#[test]
fn files_of_a_closed_session_left_by_an_exited_process_are_swept() {
    let state = tempfile::tempdir().unwrap();
    let s = Session::create(state.path()).unwrap();
    let id = s.id().to_owned();
    // What a process leaves when it exits between renaming a closed session and deleting it.
    let left = state.path().join("sessions").join(format!(".closed-{id}"));
    drop(s);
    std::fs::rename(state.path().join("sessions").join(&id), &left).unwrap();
    // Listings never show it (and start deleting it in the background); prune deletes it at once.
    assert!(session::list(state.path()).unwrap().is_empty());
    session::sweep_closed_now(state.path()).unwrap();
    assert!(!left.exists());
}

/// The procedure values of a scope that match `typed`, first `limit` in code-point order, and
/// their number, computed from the values alone.
fn naive_page(values: &[String], typed: &str, limit: usize) -> (Vec<String>, u64) {
    use rea::completion::key::match_key;
    let key = match_key(typed);
    let mut matching: Vec<String> = values
        .iter()
        .filter(|v| match_key(v).starts_with(&key))
        .cloned()
        .collect();
    matching.sort();
    let total = matching.len() as u64;
    matching.truncate(limit);
    (matching, total)
}

#[test]
fn short_procedure_prefixes_are_answered_from_their_counts_exactly_regression_19() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let s = Store::open(&path).unwrap();
    // 3,000 procedures with names of mixed case and script, some shared by two addresses.
    let stems = ["get", "Get", "SET", "straße", "Ärger", "_init", "x"];
    let procs: Vec<(u64, Option<String>)> = (0..3000u64)
        .map(|i| {
            let name =
                (i % 5 != 0).then(|| format!("{}{}", stems[(i % 7) as usize], (i / 2) % 700));
            (0x1000 + i * 16, name)
        })
        .collect();
    // Keys of zero and one character, which have fewer prefixes than are counted (an empty name
    // was counted twice under the empty prefix: found by the completion_store fuzzer).
    let mut procs = procs;
    procs.push((0x100000, Some(String::new())));
    procs.push((0x100010, Some("q".into())));
    let borrowed: Vec<(u64, Option<&str>)> =
        procs.iter().map(|(a, n)| (*a, n.as_deref())).collect();
    s.open_target_blocking(target("t", &[("d", &borrowed)]))
        .unwrap();
    // The scope's values: every address, and each name that identifies one address.
    let mut by_name: std::collections::BTreeMap<&str, u32> = Default::default();
    for (_, n) in &borrowed {
        if let Some(n) = n {
            *by_name.entry(n).or_default() += 1;
        }
    }
    let mut values: Vec<String> = borrowed
        .iter()
        .map(|(a, _)| rea::ids::Address(*a).to_string())
        .collect();
    values.extend(
        by_name
            .iter()
            .filter(|(_, c)| **c == 1)
            .map(|(n, _)| n.to_string()),
    );

    let check = |s: &Store, what: &str| {
        for typed in [
            "", "0", "0x", "0X1", "0x1f", "g", "G", "ge", "s", "S", "st", "STR", "ä", "Är", "_",
            "_i", "x", "z", "ß", "ss",
        ] {
            for limit in [100, 7] {
                let (expected, total) = naive_page(&values, typed, limit);
                let page = s
                    .complete_procedures(ProcedureScope::Document("d"), typed, limit)
                    .unwrap();
                assert_eq!(page.total, total, "{what}: total for {typed:?}");
                assert_eq!(page.values, expected, "{what}: values for {typed:?}");
                assert_eq!(page.has_more, total > expected.len() as u64);
                let target = s
                    .complete_procedures(ProcedureScope::Target, typed, limit)
                    .unwrap();
                assert_eq!(target, page, "{what}: one document is the whole target");
            }
        }
    };
    check(&s, "counted");
    s.close();
    drop(s);

    // A ledger whose counts are missing (stored before they existed) gets them on open.
    let raw = rusqlite::Connection::open(&path).unwrap();
    raw.execute("delete from procedure_completion_prefixes", [])
        .unwrap();
    drop(raw);
    let s = Store::open(&path).unwrap();
    let rows: i64 = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row(
            "select count(*) from procedure_completion_prefixes",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(rows > 0);
    check(&s, "recounted on open");
    s.close();
    drop(s);

    // Short prefixes are answered from the counts alone: with the values gone, "g" still has
    // its total, and a three-character prefix (which scans the values) has none.
    let (_, g_total) = naive_page(&values, "g", 100);
    let raw = rusqlite::Connection::open(&path).unwrap();
    raw.execute("delete from procedure_completions", [])
        .unwrap();
    drop(raw);
    let s = Store::open(&path).unwrap();
    let scope = ProcedureScope::Document("d");
    assert_eq!(
        s.complete_procedures(scope, "g", 100).unwrap().total,
        g_total
    );
    assert_eq!(s.complete_procedures(scope, "get", 100).unwrap().total, 0);
}

/// A target of one document keeps its procedure completion values once, in the document's scope
/// (schema version 11); completion over the whole target answers from it. A target of two keeps
/// its own scope. A ledger written before loses the copies when it is opened, and answers the
/// same.
#[test]
fn a_target_of_one_document_keeps_one_completion_scope_regression_30() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let s = Store::open(&path).unwrap();
    let one = [
        (0x1000, Some("main")),
        (0x1010, Some("helper")),
        (0x1020, None),
    ];
    s.open_target_blocking(target("two", &[("a", &one[..2]), ("b", &one[1..])]))
        .unwrap();
    s.open_target_blocking(target("one", &[("d", &one)]))
        .unwrap();
    let rows = |scope: i64| -> (i64, i64) {
        let raw = rusqlite::Connection::open(&path).unwrap();
        let count = |table: &str| {
            raw.query_row(
                &format!(
                    "select count(*) from {table} c join targets t on t.id = c.target_id
                     where t.name = 'one' and c.document_id = ?1"
                ),
                [scope],
                |r| r.get(0),
            )
            .unwrap()
        };
        (
            count("procedure_completions"),
            count("procedure_completion_prefixes"),
        )
    };
    assert_eq!(rows(0), (0, 0), "no target-wide rows for one document");
    assert_eq!(
        rows(3).0,
        2,
        "2 names, in the document's scope (its addresses are read from `procedures`)"
    );
    let answers = |s: &Store| -> Vec<(Vec<String>, u64)> {
        ["", "0x", "0x101", "h", "m", "z"]
            .iter()
            .map(|typed| {
                let page = s
                    .complete_procedures(ProcedureScope::Target, typed, 100)
                    .unwrap();
                (page.values, page.total)
            })
            .collect()
    };
    let before = answers(&s);
    assert_eq!(
        before[0],
        (
            vec![
                "0x1000".to_string(),
                "0x1010".into(),
                "0x1020".into(),
                "helper".into(),
                "main".into()
            ],
            5
        )
    );
    assert_eq!(before[2], (vec!["0x1010".to_string()], 1));
    // The two-document target keeps its own scope (its documents share `helper`).
    let raw = rusqlite::Connection::open(&path).unwrap();
    let two: i64 = raw
        .query_row(
            "select count(*) from procedure_completions c join targets t on t.id = c.target_id
             where t.name = 'two' and c.document_id = 0",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(two, 2, "2 names over both documents");
    s.close();
    drop(s);

    // What schema version 10 wrote: the document's rows again under scope 0.
    raw.execute_batch(
        "insert into procedure_completions (target_id, document_id, key, value)
           select c.target_id, 0, c.key, c.value from procedure_completions c
           join targets t on t.id = c.target_id where t.name = 'one';
         insert into procedure_completion_prefixes (target_id, document_id, prefix, rows, head)
           select p.target_id, 0, p.prefix, p.rows, p.head from procedure_completion_prefixes p
           join targets t on t.id = p.target_id where t.name = 'one';
         delete from refinery_schema_history where version >= 11;",
    )
    .unwrap();
    drop(raw);
    assert_eq!(rows(0), (2, rows(3).1));
    let s = Store::open(&path).unwrap();
    assert_eq!(rows(0), (0, 0), "the copies are dropped on open");
    assert_eq!(answers(&s), before);
}

/// Typing a Mach-O address passes through prefixes (`0x1`, `0x10`, …, `0x1000`) that match the
/// whole inventory: those longer than two characters are answered from their counts too, and a
/// longer one without a count matches few enough values to scan.
#[test]
fn long_procedure_prefixes_with_many_matches_are_counted_regression_30() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let s = Store::open(&path).unwrap();
    // 4,000 procedures from 0x100004000, one in three named with a long shared stem.
    let procs: Vec<(u64, Option<String>)> = (0..4000u64)
        .map(|i| {
            let name = (i % 3 == 0).then(|| format!("__ZN4core3ptr13drop_in_place{}E{i}", i % 4));
            (0x1_0000_4000 + i * 52, name)
        })
        .collect();
    let borrowed: Vec<(u64, Option<&str>)> =
        procs.iter().map(|(a, n)| (*a, n.as_deref())).collect();
    s.open_target_blocking(target("t", &[("d", &borrowed)]))
        .unwrap();
    let mut values: Vec<String> = borrowed
        .iter()
        .map(|(a, _)| rea::ids::Address(*a).to_string())
        .collect();
    values.extend(borrowed.iter().filter_map(|(_, n)| n.map(str::to_owned)));
    let typed = [
        "0x1",
        "0x10",
        "0x100",
        "0x1000",
        "0x10000",
        "0x100004",
        "0x100004f",
        "0x100007",
        "0x10000a",
        "0x10000b",
        "0x10000b0",
        "0x10001",
        "0x100012",
        "0x10000b04",
        "0x10000b048",
        "__",
        "__z",
        "__ZN4core",
        "__zn4core3ptr13drop_in_place",
        "__zn4core3ptr13drop_in_place2",
        "__zn4core3ptr13drop_in_place2e1",
        "__zn4core3ptr13drop_in_place2e10",
        "__zn5",
    ];
    for typed in typed {
        for limit in [100, 5] {
            let (expected, total) = naive_page(&values, typed, limit);
            let page = s
                .complete_procedures(ProcedureScope::Document("d"), typed, limit)
                .unwrap();
            assert_eq!(page.total, total, "total for {typed:?}");
            assert_eq!(page.values, expected, "values for {typed:?}");
            assert_eq!(page.has_more, total > expected.len() as u64);
            let target = s
                .complete_procedures(ProcedureScope::Target, typed, limit)
                .unwrap();
            assert_eq!(target, page, "one document is the whole target");
        }
    }
    s.close();
    drop(s);

    // With the names gone, prefixes matching more than the scan bound still have their totals
    // (from the counts); of those matching fewer, which are scanned, the names have none and
    // the addresses (read from `procedures`) all theirs.
    let totals: Vec<(&str, u64)> = [
        "0x1000",
        "0x10001",
        "__zn4core3ptr",
        "0x10000b",
        "__zn4core3ptr13drop_in_place2e10",
    ]
    .into_iter()
    .map(|t| (t, naive_page(&values, t, 100).1))
    .collect();
    assert_eq!(
        totals,
        [
            ("0x1000", 4000),
            ("0x10001", 1260),
            ("__zn4core3ptr", 1334),
            ("0x10000b", 79),
            ("__zn4core3ptr13drop_in_place2e10", 10)
        ]
    );
    let raw = rusqlite::Connection::open(&path).unwrap();
    raw.execute("delete from procedure_completions", [])
        .unwrap();
    drop(raw);
    let s = Store::open(&path).unwrap();
    let scope = ProcedureScope::Document("d");
    for (typed, total) in totals {
        let want = if total > 256 || typed.starts_with("0x") {
            total
        } else {
            0
        };
        assert_eq!(
            s.complete_procedures(scope, typed, 100).unwrap().total,
            want,
            "{typed}"
        );
    }
}

/// A large inventory has its completion values built on a second thread while its procedures
/// are stored (issue 30): what it stores is what the one-thread path and the recount from the
/// stored values give.
#[test]
fn a_large_inventory_stores_the_completion_counts_a_recount_gives_regression_30() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let s = Store::open(&path).unwrap();
    // 3,000 procedures a document, over the threshold; every fifth unnamed, names shared across
    // the documents and one name given to two addresses of the first.
    let names: Vec<String> = (0..3000).map(|i| format!("f_{i:04}")).collect();
    let procs = |base: u64| -> Vec<(u64, Option<&str>)> {
        (0..3000u64)
            .map(|i| {
                let name = (i % 5 != 0).then(|| names[i as usize].as_str());
                (base + i * 16, name)
            })
            .collect()
    };
    let mut first = procs(0x1000);
    first[1].1 = Some("f_0002");
    let second = procs(0x1800);
    let id = s
        .open_target_blocking(target("big", &[("a", &first), ("b", &second)]))
        .unwrap();
    s.close();
    drop(s);
    let table = |c: &rusqlite::Connection, sql: &str| -> Vec<(i64, String, i64, String)> {
        c.prepare(sql)
            .unwrap()
            .query_map([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    let prefixes = "select document_id, prefix, rows, head from procedure_completion_prefixes where target_id = ?1 order by document_id, prefix";
    let raw = rusqlite::Connection::open(&path).unwrap();
    let stored = table(&raw, prefixes);
    let counts: (i64, i64) = raw
        .query_row(
            "select (select count(*) from procedures), (select count(*) from procedure_completions where target_id = ?1)",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    // `b`'s addresses are `a`'s shifted by 128 slots: 3,128 distinct ones in the whole target.
    // Named: 2,400 a document; in `a`, f_0001 is gone and f_0002 names two addresses (2,398
    // unique); in the whole target every name names an address in each document, apart from
    // f_0001, which only `b` has.
    assert_eq!(counts.0, 6000);
    let complete = |s: &Store, scope, typed: &str| s.complete_procedures(scope, typed, 5).unwrap();
    let s = Store::open(&path).unwrap();
    assert_eq!(
        complete(&s, ProcedureScope::Document("a"), "0x").total,
        3000
    );
    assert_eq!(complete(&s, ProcedureScope::Target, "0x").total, 3128);
    assert_eq!(
        complete(&s, ProcedureScope::Document("a"), "f_").total,
        2398
    );
    assert_eq!(
        complete(&s, ProcedureScope::Document("b"), "f_").total,
        2400
    );
    assert_eq!(
        complete(&s, ProcedureScope::Target, "f_").values,
        ["f_0001"]
    );
    s.close();
    drop(s);
    // The counts stored with the open are the counts recounted from the stored values: with
    // them deleted, opening the database counts them again.
    raw.execute("delete from procedure_completion_prefixes", [])
        .unwrap();
    drop(raw);
    let s = Store::open(&path).unwrap();
    s.close();
    drop(s);
    let raw = rusqlite::Connection::open(&path).unwrap();
    assert_eq!(table(&raw, prefixes), stored);
    let listed: Vec<_> = stored
        .iter()
        .map(|(d, p, n, _)| (*d, p.as_str(), *n))
        .collect();
    // Every prefix of up to two characters, and the longer ones matching over 256 values: the
    // thousands of names, not the addresses (256 values for each further hex digit).
    assert_eq!(
        listed,
        [
            (0, "", 3129),
            (0, "0", 3128),
            (0, "0x", 3128),
            (0, "f", 1),
            (0, "f_", 1),
            (1, "", 5398),
            (1, "0", 3000),
            (1, "0x", 3000),
            (1, "f", 2398),
            (1, "f_", 2398),
            (1, "f_0", 798),
            (1, "f_1", 800),
            (1, "f_2", 800),
            (2, "", 5400),
            (2, "0", 3000),
            (2, "0x", 3000),
            (2, "f", 2400),
            (2, "f_", 2400),
            (2, "f_0", 800),
            (2, "f_1", 800),
            (2, "f_2", 800),
        ]
    );
    let values: i64 = raw
        .query_row("select count(*) from procedure_completions", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(values, counts.1);
}

/// Procedure addresses are completed from `procedures` (schema version 12) and names from
/// `procedure_completions`: every answer is what the values of each scope give, with a name
/// that is the text of an address of its scope offered once, an address-like name of another
/// address kept, addresses above `i64::MAX`, and a target of two documents. A ledger written
/// before keeps the same answers once its address rows are dropped on open, and a reader that
/// still sees them (one that opened it before) offers each value once.
#[test]
fn addresses_are_completed_from_the_procedures_exactly_regression_30() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let s = Store::open(&path).unwrap();
    let a: [(u64, Option<&str>); 7] = [
        (0x0, Some("0x10")),
        (0x10, Some("start")),
        (0x100, Some("dup")),
        (0x200, Some("dup")),
        (0x7fff_ffff_ffff_fff0, Some("0x99")),
        (0x8000_0000_0000_0000, Some("high")),
        (0xffff_ffff_ffff_fff0, None),
    ];
    let b: [(u64, Option<&str>); 3] = [(0x10, Some("start")), (0x99, None), (0x300, None)];
    s.open_target_blocking(target("t", &[("a", &a), ("b", &b)]))
        .unwrap();
    let text = |address: u64| rea::ids::Address(address).to_string();
    let values = |procs: &[(u64, Option<&str>)]| -> Vec<String> {
        let mut out: Vec<String> = procs.iter().map(|&(address, _)| text(address)).collect();
        for &(address, name) in procs {
            if let Some(name) = name
                && procs
                    .iter()
                    .all(|&(other, n)| n != Some(name) || other == address)
            {
                out.push(name.to_owned());
            }
        }
        out.sort();
        out.dedup();
        out
    };
    let both: Vec<(u64, Option<&str>)> = a.iter().chain(&b).copied().collect();
    let scopes = [
        (ProcedureScope::Document("a"), values(&a)),
        (ProcedureScope::Document("b"), values(&b)),
        (ProcedureScope::Target, values(&both)),
    ];
    assert_eq!(scopes[1].1, ["0x10", "0x300", "0x99", "start"]);
    assert_eq!(scopes[2].1.len(), 11, "{:?}", scopes[2].1);
    let mut typed: Vec<String> = ["", "0X1", "0x00", "0x8", "0xF", "S", "zz"]
        .map(String::from)
        .to_vec();
    for (_, values) in &scopes {
        for v in values {
            typed.extend((0..=v.len()).map(|end| v[..end].to_owned()));
        }
    }
    typed.sort();
    typed.dedup();
    let check = |s: &Store, when: &str| {
        for (scope, values) in &scopes {
            for typed in &typed {
                // Over 100 values, the counts are not read: every answer is a scan.
                for limit in [100, 2, 1000] {
                    let (expected, total) = naive_page(values, typed, limit);
                    let page = s.complete_procedures(*scope, typed, limit).unwrap();
                    assert_eq!(
                        (page.values, page.total, page.has_more),
                        (expected.clone(), total, total > expected.len() as u64),
                        "{when}: {scope:?} {typed:?} {limit}"
                    );
                }
            }
        }
    };
    check(&s, "as stored");
    s.close();
    drop(s);
    let raw = rusqlite::Connection::open(&path).unwrap();
    let kept = |raw: &rusqlite::Connection| -> Vec<(i64, String)> {
        raw.prepare("select document_id, value from procedure_completions order by 1, 2")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    // Names alone: `0x10` is the text of an address of `a` (and of the target), `0x99` of one
    // of `b` and the target's, not `a`'s.
    let names: Vec<(i64, String)> = vec![
        (0, "high".into()),
        (0, "start".into()),
        (1, "0x99".into()),
        (1, "high".into()),
        (1, "start".into()),
        (2, "start".into()),
    ];
    assert_eq!(kept(&raw), names);

    // What schema version 11 kept: the addresses beside the names, each scope's own.
    let old = |raw: &rusqlite::Connection| {
        raw.execute_batch(
            "insert or ignore into procedure_completions (target_id, document_id, key, value)
               select d.target_id, d.id, printf('0x%x', p.address), printf('0x%x', p.address)
               from procedures p join documents d on d.id = p.document_id;
             insert or ignore into procedure_completions (target_id, document_id, key, value)
               select d.target_id, 0, printf('0x%x', p.address), printf('0x%x', p.address)
               from procedures p join documents d on d.id = p.document_id;
             insert or ignore into procedure_completions (target_id, document_id, key, value)
               values (1, 0, '0x99', '0x99'), (1, 1, '0x10', '0x10'), (1, 0, '0x10', '0x10');",
        )
        .unwrap();
    };
    old(&raw);
    assert_eq!(kept(&raw).len(), names.len() + 7 + 3 + 9);
    raw.execute(
        "delete from refinery_schema_history where version >= 12",
        [],
    )
    .unwrap();
    let s = Store::open(&path).unwrap();
    assert_eq!(kept(&raw), names, "the addresses are dropped on open");
    check(&s, "migrated");
    // A reader that opened the ledger before it was migrated.
    old(&raw);
    check(&s, "read before the migration");
}

/// Procedure rows are stored a many-row statement at a time, binding only the values a row has
/// (issue 30): 200 rows (three statements of 64 and eight of one) whose names, raw names, sizes
/// and aliases come and go at different periods, so a slot that held a value in one statement
/// holds a null in the next. Every column reads back as that row's own value or null.
#[test]
fn procedure_rows_keep_their_own_nulls_across_statements_regression_30() {
    let (dir, s) = store();
    let procedures: Vec<NewProcedure> = (0..200u64)
        .map(|i| NewProcedure {
            address: 0x1000 + 16 * i,
            name: (i % 3 == 0).then(|| format!("F{i}")),
            raw_name: (i % 3 == 0 && i % 5 == 0).then(|| format!("_Z1F{i}v")),
            size: (i % 2 == 0).then_some(16),
            aliases: if i % 7 == 0 {
                vec![format!("alias_{i}")]
            } else {
                vec![]
            },
        })
        .collect();
    let mut t = target("nulls", &[("d", &[])]);
    t.documents[0].procedures = procedures.clone();
    s.open_target_blocking(t).unwrap();
    let conn = rusqlite::Connection::open(dir.path().join("s.db")).unwrap();
    type Row = (
        i64,
        Option<String>,
        Option<String>,
        Option<String>,
        Option<i64>,
        Option<String>,
        Option<String>,
    );
    let rows: Vec<Row> = conn
        .prepare(
            "select address, name, raw_name, name_key, size, aliases, other_keys
             from procedures order by address",
        )
        .unwrap()
        .query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
            ))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let expected: Vec<Row> = procedures
        .iter()
        .map(|p| {
            let mut other: Vec<String> = p
                .raw_name
                .iter()
                .chain(&p.aliases)
                .map(|n| rea::completion::key::match_key(n))
                .collect();
            other.sort();
            (
                p.address as i64,
                p.name.clone(),
                p.raw_name.clone(),
                p.name.as_deref().map(rea::completion::key::match_key),
                p.size.map(|s| s as i64),
                (!p.aliases.is_empty()).then(|| p.aliases.join("\n")),
                (!other.is_empty()).then(|| other.join("\n")),
            )
        })
        .collect();
    assert_eq!(rows.len(), 200);
    assert_eq!(rows, expected);
    // The values vary as the periods say: nulls and values both land in every slot.
    assert_eq!(rows.iter().filter(|r| r.1.is_some()).count(), 67);
    assert_eq!(rows.iter().filter(|r| r.4.is_some()).count(), 100);
    assert_eq!(rows.iter().filter(|r| r.6.is_some()).count(), 41);
}
