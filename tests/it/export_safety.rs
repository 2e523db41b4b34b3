//! rea never writes onto its own state (issue 25, item 1, and two small items of 7): exports onto
//! a session's database, its WAL, a hard link of it, a path spelled through a link into the state
//! directory or into the configuration directory are refused and the ledger resumes whole;
//! overwrite replaces only an earlier rea export; names with control characters are refused;
//! doctor keeps no row for a refused path; prompts/get does not look outside the roots.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::common::{Mode, StdioServer, javascript_app, start, start_confined};

/// Calls a tool that must fail with a tool error; returns its message.
fn tool_err(server: &mut StdioServer, name: &str, arguments: Value) -> String {
    let v = server.request("tools/call", json!({"name": name, "arguments": arguments}));
    assert_eq!(v["result"]["isError"], true, "{name} should fail: {v}");
    v["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// A target to open: a copy of a system executable (its content is not asserted on).
fn target_in(dir: &Path) -> PathBuf {
    let t = dir.join("t");
    std::fs::copy("/bin/true", &t).unwrap();
    t
}

fn inside_state(path: &Path, state: &Path) -> String {
    format!(
        "{} is inside {}, rea's own state directory; exports are never written there: choose a directory outside it",
        path.display(),
        state.display()
    )
}

#[test]
fn exports_onto_the_sessions_own_files_are_refused_and_the_ledger_resumes_whole_regression_25() {
    let state = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let state_dir = std::fs::canonicalize(state.path()).unwrap();
    let t = target_in(out.path());
    let mut server = StdioServer::start(&state_dir);
    server.tool("open_binary", json!({"path": t}));
    server.tool("doctor", json!({}));
    server.tool("list_documents", json!({}));
    let session = server.tool("binary_session", json!({}));
    let id = session["session_id"].as_str().unwrap().to_owned();
    let db = PathBuf::from(session["database"].as_str().unwrap());
    let wal = PathBuf::from(format!("{}-wal", db.display()));
    assert!(wal.exists(), "the live session has its WAL");
    let rows = server.tool("list_evidence", json!({}))["total"]
        .as_u64()
        .unwrap();
    assert!(rows >= 2, "{rows}");
    let hard = out.path().join("hard.db");
    std::fs::hard_link(&db, &hard).unwrap();
    let link = out.path().join("state-link");
    symlink(&state_dir, &link).unwrap();

    let refused = [
        (db.clone(), inside_state(&db, &state_dir)),
        (wal.clone(), inside_state(&wal, &state_dir)),
        (
            link.join("sessions").join(&id).join("session.db"),
            inside_state(&db, &state_dir),
        ),
        (
            link.join("new.jsonl"),
            inside_state(&state_dir.join("new.jsonl"), &state_dir),
        ),
        (
            hard.clone(),
            format!(
                "{} is the same file as {}, a session database file of rea; exports never replace it",
                hard.display(),
                db.display()
            ),
        ),
    ];
    for (path, message) in &refused {
        for format in ["sqlite", "jsonl"] {
            for overwrite in [true, false] {
                let msg = tool_err(
                    &mut server,
                    "export_evidence",
                    json!({"path": path, "format": format, "overwrite": overwrite}),
                );
                assert_eq!(&msg, message, "{format} {overwrite}");
            }
        }
    }
    // The server goes on writing to the same ledger.
    server.tool("doctor", json!({"target": t}));
    let total = server.tool("list_evidence", json!({}))["total"]
        .as_u64()
        .unwrap();
    assert_eq!(total, rows + 1);
    drop(server.stdin);
    assert!(server.child.wait().unwrap().success());

    // The CLI refuses the same destinations.
    for (path, message) in &refused[..2] {
        let cli = Command::new(env!("CARGO_BIN_EXE_rea"))
            .arg("--state-dir")
            .arg(&state_dir)
            .args(["evidence", "export"])
            .arg(path)
            .args(["--session", &id, "--overwrite"])
            .output()
            .unwrap();
        assert!(!cli.status.success());
        assert!(
            String::from_utf8_lossy(&cli.stderr).contains(message.as_str()),
            "{cli:?}"
        );
    }

    // The ledger is whole: it verifies and resumes with every row.
    let check = rea::store::verify_ledger(&db).unwrap();
    assert_eq!(check.records, total);
    assert_eq!(check.problems, Vec::<String>::new());
    let mut again = StdioServer::start(&state_dir);
    let resumed = again.tool("resume_session", json!({"session_id": id}));
    assert_eq!(resumed["id"], id.as_str(), "{resumed}");
    assert_eq!(resumed["evidence"], total, "{resumed}");
    assert_eq!(again.tool("list_evidence", json!({}))["total"], total);
}

#[tokio::test]
async fn exports_into_the_configuration_directory_are_refused_regression_25() {
    let h = start().await;
    let out = tempfile::tempdir().unwrap();
    h.call("open_binary", json!({ "path": target_in(out.path()) }))
        .await;
    let config = std::fs::canonicalize(h.config.path()).unwrap();
    let toml = config.join("rea.toml");
    std::fs::write(&toml, "[messages]\nmax_result_bytes = 1048576\n").unwrap();
    symlink(config.join("prompts"), out.path().join("prompts-link")).unwrap();
    for (path, shown) in [
        (toml.clone(), toml.clone()),
        (config.join("prompts/x.toml"), config.join("prompts/x.toml")),
        (
            out.path().join("prompts-link/y.toml"),
            config.join("prompts/y.toml"),
        ),
    ] {
        let msg = h
            .call_err(
                "export_evidence",
                json!({ "path": path, "format": "jsonl", "overwrite": true }),
            )
            .await;
        assert_eq!(
            msg,
            format!(
                "{} is inside {}, rea's own configuration directory; exports are never written there: choose a directory outside it",
                shown.display(),
                config.display()
            )
        );
    }
    assert_eq!(
        std::fs::read_to_string(&toml).unwrap(),
        "[messages]\nmax_result_bytes = 1048576\n"
    );
    assert_eq!(
        std::fs::read_dir(config.join("prompts")).unwrap().count(),
        0
    );
}

#[tokio::test]
async fn overwrite_replaces_only_an_earlier_rea_export_regression_25() {
    let h = start().await;
    let out = tempfile::tempdir().unwrap();
    let dir = std::fs::canonicalize(out.path()).unwrap();
    h.call("open_binary", json!({ "path": target_in(&dir) }))
        .await;
    let id = h.call("binary_session", json!({})).await["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let notes = dir.join("notes.txt");
    std::fs::write(&notes, "a user's notes\n").unwrap();
    let foreign_db = dir.join("other.db");
    rusqlite::Connection::open(&foreign_db)
        .unwrap()
        .execute_batch("create table t (x); insert into t values (1);")
        .unwrap();
    let empty = dir.join("empty");
    std::fs::write(&empty, "").unwrap();
    let neither = "neither a SQLite file with rea's application_id nor JSON lines that begin with rea's header line";
    let sub = dir.join("sub");
    std::fs::create_dir(&sub).unwrap();
    for (path, what) in [
        (&notes, neither),
        (&foreign_db, neither),
        (&empty, "an empty file"),
        (&sub, "a directory"),
    ] {
        let before = std::fs::symlink_metadata(path).unwrap().len();
        for format in ["sqlite", "jsonl"] {
            let msg = h
                .call_err(
                    "export_evidence",
                    json!({ "path": path, "format": format, "overwrite": true }),
                )
                .await;
            assert_eq!(
                msg,
                format!(
                    "{} exists and is not an earlier rea export ({what}); overwrite replaces only a file rea exported (a SQLite copy or JSON lines with rea's header), so remove it yourself or choose another name",
                    path.display()
                )
            );
        }
        assert_eq!(std::fs::symlink_metadata(path).unwrap().len(), before);
    }
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "a user's notes\n");

    // An earlier export of either format is replaced by either format.
    let copy = dir.join("ledger.db");
    let lines = dir.join("ledger.jsonl");
    h.call("export_evidence", json!({ "path": copy })).await;
    h.call(
        "export_evidence",
        json!({ "path": lines, "format": "jsonl" }),
    )
    .await;
    let header = json!({"rea_export": "evidence", "format_version": 1, "session_id": id});
    let first_line = |p: &Path| -> Value {
        serde_json::from_str(std::fs::read_to_string(p).unwrap().lines().next().unwrap()).unwrap()
    };
    assert_eq!(first_line(&lines), header);
    assert_eq!(
        std::fs::read_to_string(&lines).unwrap().lines().count(),
        2,
        "a header line, then the one record"
    );
    h.call("doctor", json!({})).await;
    for (path, format) in [
        (&copy, "sqlite"),
        (&lines, "jsonl"),
        (&copy, "jsonl"),
        (&lines, "sqlite"),
    ] {
        let done = h
            .call(
                "export_evidence",
                json!({ "path": path, "format": format, "overwrite": true }),
            )
            .await;
        assert_eq!(done["evidence"], 2, "{done}");
        assert_eq!(done["bytes"], std::fs::metadata(path).unwrap().len());
    }
    assert_eq!(first_line(&copy), header);
    let db = rea::store::ReadOnlyStore::open(&lines).unwrap();
    assert_eq!(db.count_evidence(None).unwrap(), 2);
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| !n.ends_with("-wal") && !n.ends_with("-shm"))
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "empty",
            "ledger.db",
            "ledger.jsonl",
            "notes.txt",
            "other.db",
            "sub",
            "t"
        ]
    );
}

#[tokio::test]
async fn an_export_name_with_a_control_character_is_refused_regression_25() {
    let h = start().await;
    let out = tempfile::tempdir().unwrap();
    h.call("open_binary", json!({ "path": target_in(out.path()) }))
        .await;
    for name in [
        "evil\nname.db",
        "tab\there.jsonl",
        "esc\u{1b}[2J.db",
        "del\u{7f}.db",
    ] {
        let path = out.path().join(name);
        let msg = h.call_err("export_evidence", json!({ "path": path })).await;
        assert_eq!(
            msg,
            format!(
                "{path:?} holds a control character in its file name (newline, tab, another below 0x20, or 0x7f); choose a name without one"
            )
        );
    }
    assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 1);
}

#[tokio::test]
async fn doctor_keeps_no_row_for_a_refused_path_regression_25() {
    let base = tempfile::tempdir().unwrap();
    let (r, o) = (base.path().join("r"), base.path().join("o"));
    std::fs::create_dir_all(&r).unwrap();
    std::fs::create_dir_all(&o).unwrap();
    let inside = target_in(&r);
    let outside = target_in(&o);
    let state = tempfile::tempdir().unwrap();
    let config = tempfile::tempdir().unwrap();
    let h = start_confined(Mode::Legacy, state, config, vec![r.clone()]).await;
    h.call("open_binary", json!({ "path": inside })).await;
    let total = || async { h.call("list_evidence", json!({})).await["total"].clone() };
    assert_eq!(total().await, 1);
    for refused in [
        outside.clone(),
        o.join("missing"),
        PathBuf::from("/etc/passwd"),
    ] {
        let report = h.call("doctor", json!({ "target": refused })).await;
        assert_eq!(report["target"]["admitted"], false, "{report}");
        assert!(report["target"]["refusal"].is_string(), "{report}");
        assert!(report.get("evidence").is_none(), "{report}");
    }
    assert_eq!(total().await, 1);
    // A path inside the roots is checked and kept, as before.
    let report = h.call("doctor", json!({ "target": inside })).await;
    assert_eq!(report["target"]["admitted"], true, "{report}");
    assert!(report["evidence"]["id"].is_string(), "{report}");
    assert_eq!(total().await, 2);
}

#[tokio::test]
async fn prompts_get_renders_the_same_workflow_whatever_exists_outside_the_roots_regression_25() {
    let base = tempfile::tempdir().unwrap();
    let r = base.path().join("r");
    let app = base.path().join("outside-app");
    std::fs::create_dir_all(&r).unwrap();
    std::fs::create_dir_all(&app).unwrap();
    let inside_app = javascript_app();
    let state = tempfile::tempdir().unwrap();
    let config = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(config.path().join("prompts")).unwrap();
    let roots = vec![r.clone(), inside_app.path().to_owned()];
    let h = start_confined(Mode::Legacy, state, config, roots).await;
    let render = |p: PathBuf| {
        let h = &h;
        async move {
            let p = p.display().to_string();
            h.prompt_text(
                "investigate_feature",
                &[("feature", "search"), ("target_path", &p)],
            )
            .await
        }
    };
    let without = render(app.clone()).await;
    std::fs::write(app.join("package.json"), r#"{"name":"x","main":"main.js"}"#).unwrap();
    std::fs::write(app.join("main.js"), "require('electron');\n").unwrap();
    let with = render(app.clone()).await;
    assert_eq!(with, without);
    assert!(
        with.contains("open it with open_binary (path = target_path)"),
        "{with}"
    );
    assert!(!with.contains("analyze_javascript_application"), "{with}");
    // Inside the roots the application is still recognised.
    let inside = render(inside_app.path().to_owned()).await;
    assert!(
        inside.contains("Call analyze_javascript_application with input_path"),
        "{inside}"
    );
}
