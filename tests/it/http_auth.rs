//! HTTP is authenticated, and a binary session belongs to its credential (issue 25, item 2):
//! every request carries a bearer token (401 otherwise); a session opened with alice's token is,
//! for bob's, exactly a session that does not exist, whatever tool names it and however
//! (stateless `session`, `resume_session`, an MCP session id); listing and resuming show only
//! the caller's own; one principal holds at most its share of the live sessions; with no token
//! configured one is generated into a 0600 file; `auth = "none"` warns at start.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::http_sessions::{ALICE, BOB, HttpServer, TOKENS, show};

/// A program of our own to open, in `dir`.
fn program(dir: &Path) -> std::path::PathBuf {
    let src = dir.join("owned.c");
    std::fs::write(
        &src,
        "int owned_marker(int x) { return x * 7 + 3; }\nint main(void) { return owned_marker(2); }\n",
    )
    .unwrap();
    let out = dir.join("owned");
    let cc = Command::new("cc")
        .args(["-O0", "-o"])
        .arg(&out)
        .arg(&src)
        .status()
        .unwrap();
    assert!(cc.success());
    out
}

/// A well-formed session id that no session has, as long as `like`.
fn unissued(like: &str) -> String {
    let (head, tail) = like.rsplit_once('_').unwrap();
    format!("{head}_{}", "0".repeat(tail.len()))
}

/// `answer` with `id` written as `ID`, to compare two answers that differ only in the id named.
fn masked(answer: &Value, id: &str) -> String {
    answer.to_string().replace(id, "ID")
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
const JSON: &str =
    "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n";

/// The value of header `name` in an HTTP head.
fn header(head: &str, name: &str) -> Option<String> {
    head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim()
            .eq_ignore_ascii_case(name)
            .then(|| v.trim().to_owned())
    })
}

/// Waits (bounded) until the server's log holds `needle`; the log.
fn log_with(server: &HttpServer, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let log = server.log.lock().unwrap().clone();
        if log.contains(needle) || Instant::now() > deadline {
            return log;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn requests_without_a_good_bearer_token_get_401_regression_25() {
    let state = tempfile::tempdir().unwrap();
    let server = HttpServer::start(state.path(), "");
    let no_token = "Unauthorized: send the header `Authorization: Bearer <token>` (a token of [http] tokens in rea.toml, or the one in the token file rea named when it started)";
    let cases: [(&str, &str, &str); 6] = [
        ("", r#"Bearer realm="rea""#, no_token),
        (
            "Authorization: Bearer not-a-token-of-this-server\r\n",
            r#"Bearer realm="rea", error="invalid_token""#,
            "Unauthorized: this bearer token is not one this server accepts",
        ),
        // A prefix of a good token is no token.
        (
            "Authorization: Bearer alice-token-0123456789abcde\r\n",
            r#"Bearer realm="rea", error="invalid_token""#,
            "Unauthorized: this bearer token is not one this server accepts",
        ),
        (
            "Authorization: Basic YWxpY2U6YWxpY2U=\r\n",
            r#"Bearer realm="rea", error="invalid_request""#,
            "Unauthorized: the Authorization header is not `Bearer <token>`",
        ),
        (
            "Authorization: Bearer\r\n",
            r#"Bearer realm="rea", error="invalid_request""#,
            "Unauthorized: the Authorization header is not `Bearer <token>`",
        ),
        (
            "Authorization: Bearer alice-token-0123456789abcdef\r\nAuthorization: Bearer bob-token-0123456789abcdef\r\n",
            r#"Bearer realm="rea", error="invalid_request""#,
            "Unauthorized: send one Authorization header, not several",
        ),
    ];
    for (auth, challenge, message) in cases {
        for method in ["POST", "GET", "DELETE"] {
            let headers = format!("{JSON}{auth}Mcp-Session-Id: whatever\r\n");
            let body = if method == "POST" { INITIALIZE } else { "" };
            let answer = server.exchange(method, &headers, body);
            assert_eq!(answer.status, 401, "{method} {auth:?}: {}", answer.head);
            assert_eq!(
                header(&answer.head, "www-authenticate").as_deref(),
                Some(challenge)
            );
            assert_eq!(
                serde_json::from_slice::<Value>(&answer.body).unwrap(),
                json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": message}}),
                "{method} {auth:?}"
            );
        }
    }
    // Each configured token is let in; the scheme's case does not matter (RFC 7235).
    for token in [ALICE, BOB] {
        for scheme in ["Bearer", "bearer"] {
            let headers = format!("{JSON}Authorization: {scheme} {token}\r\n");
            let answer = server.exchange("POST", &headers, INITIALIZE);
            assert_eq!(answer.status, 200, "{}", answer.head);
            assert!(header(&answer.head, "mcp-session-id").is_some());
        }
    }
}

/// Every way bob can name alice's session, each answered as a session that does not exist
/// (compared byte for byte with the answer for an id never issued), her ledger untouched.
#[test]
fn another_principal_naming_a_session_gets_the_answer_of_one_that_does_not_exist_regression_25() {
    let state = tempfile::tempdir().unwrap();
    let target = program(state.path());
    let server = HttpServer::start(state.path(), "");

    let opened = server.stateless_as(ALICE, "open_binary", json!({"path": target}));
    let alice = opened["result"]["structuredContent"]["session_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{opened}"))
        .to_owned();
    // At least 128 random bits, hex, after the time.
    let random = alice.rsplit_once('_').unwrap().1;
    assert!(
        random.len() >= 32 && random.bytes().all(|b| b.is_ascii_hexdigit()),
        "{alice}"
    );
    let unknown = server.stateless_as(
        ALICE,
        "record_unknown",
        json!({"session": alice, "question": "what does owned_marker compute?"}),
    );
    assert_ne!(unknown["result"]["isError"], true, "{unknown}");
    let ledger = |server: &HttpServer| {
        let s = server.stateless_as(ALICE, "binary_session", json!({"session": alice}));
        let s = &s["result"]["structuredContent"];
        (
            s["evidence"].clone(),
            s["unresolved_unknowns"].clone(),
            s["targets"].clone(),
        )
    };
    let before = ledger(&server);
    assert_eq!(before.1, 1);
    let never = unissued(&alice);

    let (mut attempts, mut won) = (0, 0);
    let mut judge = |what: &str, theirs: &Value, none: &Value, masked_id: (&str, &str)| {
        attempts += 1;
        if masked(theirs, masked_id.0) != masked(none, masked_id.1) {
            won += 1;
            eprintln!("{what}: {theirs} differs from {none}");
        }
    };

    // Stateless, by the `session` argument: every tool.
    let bob_mcp = server.connect_as(BOB);
    let (_, listed) = server.post_as(
        BOB,
        Some(&bob_mcp),
        &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}),
    );
    let tools: Vec<String> = listed[0]["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(tools.len() > 20, "{tools:?}");
    for tool in &tools {
        let arguments = |id: &str| json!({"session": id, "path": state.path().join("x.jsonl"), "format": "jsonl", "overwrite": true});
        let theirs = server.stateless_as(BOB, tool, arguments(&alice));
        let none = server.stateless_as(BOB, tool, arguments(&never));
        assert_eq!(
            none["error"]["message"],
            format!(
                "no live binary session {never} on this server (closed, or released after sitting idle): resume_session it"
            ),
            "{tool}"
        );
        judge(tool, &theirs, &none, (&alice, &never));
    }
    // resume_session by id, stateless and in an MCP session of bob's.
    let theirs = server.stateless_as(BOB, "resume_session", json!({"session_id": alice}));
    let none = server.stateless_as(BOB, "resume_session", json!({"session_id": never}));
    assert_eq!(
        none["result"]["content"][0]["text"],
        format!("no session {never} under {}", state.path().display())
    );
    judge("stateless resume_session", &theirs, &none, (&alice, &never));
    for tool in [
        "resume_session",
        "binary_session",
        "close_binary",
        "export_evidence",
    ] {
        let arguments = |id: &str| match tool {
            "resume_session" => json!({"session_id": id}),
            "export_evidence" => {
                json!({"session": id, "path": state.path().join("y.jsonl"), "format": "jsonl"})
            }
            _ => json!({"session": id}),
        };
        let (_, theirs) = server.post_as(
            BOB,
            Some(&bob_mcp),
            &json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": tool, "arguments": arguments(&alice)}}),
        );
        let (_, none) = server.post_as(
            BOB,
            Some(&bob_mcp),
            &json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": tool, "arguments": arguments(&never)}}),
        );
        judge(tool, &theirs[0], &none[0], (&alice, &never));
    }

    // Alice's MCP session, named by bob: a POST, the GET stream, a DELETE.
    let alice_mcp = server.connect_as(ALICE);
    let never_mcp = unissued(&format!("x_{alice_mcp}"))[2..].to_owned();
    for (method, body) in [
        (
            "POST",
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"binary_session","arguments":{}}}"#,
        ),
        ("POST", INITIALIZE),
        ("GET", ""),
        ("DELETE", ""),
    ] {
        let ask = |id: &str| {
            let headers = format!(
                "{JSON}Authorization: Bearer {BOB}\r\nMcp-Session-Id: {id}\r\nMcp-Protocol-Version: 2025-11-25\r\n"
            );
            let answer = server.exchange(method, &headers, body);
            json!({"status": answer.status, "body": String::from_utf8_lossy(&answer.body)})
        };
        let (theirs, none) = (ask(&alice_mcp), ask(&never_mcp));
        assert_eq!(
            none,
            json!({"status": 404, "body": format!(r#"{{"jsonrpc":"2.0","id":null,"error":{{"code":-32600,"message":"Not Found: no session {never_mcp}"}}}}"#)})
        );
        judge(
            &format!("{method} of the MCP session"),
            &theirs,
            &none,
            (&alice_mcp, &never_mcp),
        );
    }
    // Alice's MCP session still works for her, and her ledger is as it was.
    assert_eq!(
        server
            .tool_as(ALICE, &alice_mcp, "binary_session", json!({}))
            .unwrap()["open"],
        false
    );
    assert_eq!(ledger(&server), before);
    assert_eq!(show(state.path(), &alice)["live"], true);
    assert_eq!(show(state.path(), &alice)["owner"], "http:alice");
    assert!(!state.path().join("x.jsonl").exists() && !state.path().join("y.jsonl").exists());
    eprintln!("hijack attempts across principals: {attempts}, won: {won}");
    assert_eq!(
        won, 0,
        "{won} of {attempts} attempts reached alice's session"
    );
}

#[test]
fn resuming_and_listing_show_only_the_callers_own_sessions_regression_25() {
    let state = tempfile::tempdir().unwrap();
    let target = program(state.path());
    let server = HttpServer::start(state.path(), "[sessions]\nidle_timeout_secs = 1\n");
    let open = |token: &str| {
        let opened = server.stateless_as(token, "open_binary", json!({"path": target}));
        opened["result"]["structuredContent"]["session_id"]
            .as_str()
            .unwrap_or_else(|| panic!("{opened}"))
            .to_owned()
    };
    let mut mine = [open(ALICE), open(ALICE)];
    mine.sort();
    let bobs = open(BOB);
    // Nobody names them: all three are released after the idle timeout (bounded wait).
    let deadline = Instant::now() + Duration::from_secs(60);
    for id in mine.iter().chain([&bobs]) {
        while show(state.path(), id)["live"] == true {
            assert!(Instant::now() < deadline, "{id} still held after 60 s");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    // Bob has one session to resume: it is the one `resume_session {}` takes.
    let resumed = server.stateless_as(BOB, "resume_session", json!({}));
    assert_eq!(
        resumed["result"]["structuredContent"]["id"],
        bobs.as_str(),
        "{resumed}"
    );
    assert_eq!(resumed["result"]["structuredContent"]["owner"], "http:bob");
    // Alice has two: she is told to name one of hers, and only hers are named.
    let several = server.stateless_as(ALICE, "resume_session", json!({}));
    assert_eq!(
        several["result"]["content"][0]["text"],
        format!(
            "several sessions can be resumed; name one: {}",
            mine.join(", ")
        )
    );
    // Bob cannot take one of hers by id.
    let theirs = server.stateless_as(BOB, "resume_session", json!({"session_id": mine[0]}));
    assert_eq!(
        theirs["result"]["content"][0]["text"],
        format!("no session {} under {}", mine[0], state.path().display())
    );
    let taken = server.stateless_as(ALICE, "resume_session", json!({"session_id": mine[0]}));
    assert_eq!(taken["result"]["structuredContent"]["id"], mine[0].as_str());
    // With nothing of his left to resume, bob is told so, not shown hers.
    let closed = server.stateless_as(BOB, "close_binary", json!({"session": bobs}));
    assert_eq!(
        closed["result"]["structuredContent"]["session_id"],
        bobs.as_str()
    );
    let nothing = server.stateless_as(BOB, "resume_session", json!({}));
    assert_eq!(
        nothing["result"]["content"][0]["text"],
        "no session is waiting to be resumed"
    );
}

#[test]
fn one_principal_holds_at_most_its_share_of_live_sessions_regression_25() {
    let state = tempfile::tempdir().unwrap();
    let target = program(state.path());
    let open = |server: &HttpServer, token: &str| {
        let answer = server.stateless_as(token, "open_binary", json!({"path": target}));
        match answer["result"]["isError"] == true {
            true => Err(answer["result"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .to_owned()),
            false => Ok(()),
        }
    };
    let own_cap = |n: usize| {
        format!(
            "you already hold {n} live binary sessions, the limit of one caller (max_live_per_principal in the [sessions] table of rea.toml); close_binary one, or wait until idle ones are released"
        )
    };
    // The default share: a quarter of max_live.
    let server = HttpServer::start(state.path(), "[sessions]\nmax_live = 8\n");
    open(&server, ALICE).unwrap();
    open(&server, ALICE).unwrap();
    assert_eq!(open(&server, ALICE), Err(own_cap(2)));
    open(&server, BOB).unwrap();
    drop(server);

    let server = HttpServer::start(
        state.path(),
        "[sessions]\nmax_live = 3\nmax_live_per_principal = 2\n",
    );
    open(&server, ALICE).unwrap();
    open(&server, ALICE).unwrap();
    assert_eq!(open(&server, ALICE), Err(own_cap(2)));
    open(&server, BOB).unwrap();
    assert_eq!(
        open(&server, BOB),
        Err("this server already holds 3 live binary sessions, its limit (max_live in the [sessions] table of rea.toml); close_binary one, or wait until idle ones are released".to_owned())
    );
}

#[test]
fn with_no_token_configured_one_is_generated_into_a_0600_file_regression_25() {
    let state = tempfile::tempdir().unwrap();
    let file = state.path().join("http-token");
    // A file already there, readable by all, is replaced, not reused.
    std::fs::write(&file, "old-token-readable-by-everyone\n").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let mut tokens = vec![];
    for _ in 0..2 {
        let server = HttpServer::launch(state.path(), "", true);
        let log = log_with(&server, "http-token");
        assert!(
            log.contains(&format!(
                "rea: clients send `Authorization: Bearer <token>` with the token in {} (made at this start; [http] tokens in rea.toml names tokens of your own)\n",
                file.display()
            )),
            "{log}"
        );
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let token = std::fs::read_to_string(&file)
            .unwrap()
            .trim_end()
            .to_owned();
        assert!(
            token.len() == 64 && token.bytes().all(|b| b.is_ascii_hexdigit()),
            "{token}"
        );
        for (sent, status) in [
            (token.as_str(), 200),
            ("old-token-readable-by-everyone", 401),
            (ALICE, 401),
        ] {
            let headers = format!("{JSON}Authorization: Bearer {sent}\r\n");
            assert_eq!(
                server.exchange("POST", &headers, INITIALIZE).status,
                status,
                "{sent}"
            );
        }
        tokens.push(token);
    }
    // Each start makes a new one: a token read once does not open every later server.
    assert_ne!(tokens[0], tokens[1]);
}

#[test]
fn auth_none_serves_everyone_and_warns_at_start_regression_25() {
    let state = tempfile::tempdir().unwrap();
    let server = HttpServer::launch(state.path(), "[http]\nauth = \"none\"\n", true);
    let log = log_with(&server, "WARNING");
    assert!(
        log.lines().any(|l| l == "rea: WARNING: [http] auth = \"none\" in rea.toml: every local program can call this server, read and change every session; use it only for throwaway work"),
        "{log}"
    );
    assert_eq!(server.exchange("POST", JSON, INITIALIZE).status, 200);
    assert!(!state.path().join("http-token").exists());
}

#[test]
fn an_http_table_that_does_not_do_stops_the_start_regression_25() {
    let config = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let path = config.path().join("rea.toml");
    for (table, error) in [
        (
            "[http]\ntokens = { alice = \"\" }\n".to_owned(),
            "[http] tokens: the token of alice is empty".to_owned(),
        ),
        (
            TOKENS.replace(BOB, ALICE),
            "[http] tokens: the token of bob is also another name's; each principal needs a token of its own".to_owned(),
        ),
        (
            "[http]\ntokenz = {}\n".to_owned(),
            "the [http] table is not valid".to_owned(),
        ),
    ] {
        std::fs::write(&path, &table).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_rea"))
            .args(["serve", "--http", "127.0.0.1:0"])
            .env("REA_STATE_DIR", state.path())
            .env("REA_CONFIG_DIR", config.path())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{table}");
        assert!(
            stderr.contains(&format!("{}: {error}", path.display())),
            "{table}: {stderr}"
        );
        assert!(!stderr.contains("serving MCP"), "{stderr}");
    }
}
