//! HTTP sessions that cannot leak (issue 16, item 9): a client that vanishes without DELETE has
//! its binary session released after the configured idle timeout, resumable; a cap on live
//! sessions refuses one more with a clear message; descriptor exhaustion is named as such. The
//! server here accepts two bearer tokens (issue 25): alice's, which every request sends unless it
//! says otherwise, and bob's.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::StdioServer;

/// Alice's bearer token.
pub(crate) const ALICE: &str = "alice-token-0123456789abcdef";
/// Bob's bearer token.
pub(crate) const BOB: &str = "bob-token-0123456789abcdef";
/// The `[http]` table naming both.
pub(crate) const TOKENS: &str = "[http]\ntokens = { alice = \"alice-token-0123456789abcdef\", bob = \"bob-token-0123456789abcdef\" }\n";

/// `rea serve --http` on a free loopback port with `rea.toml` holding `config`.
pub(crate) struct HttpServer {
    pub(crate) child: Child,
    pub(crate) port: u16,
    /// What the server wrote on stderr, its first line (the address) included.
    pub(crate) log: Arc<Mutex<String>>,
    _config: tempfile::TempDir,
}

/// One HTTP exchange: the status, the head and the body (dechunked).
pub(crate) struct Exchange {
    pub(crate) status: u16,
    pub(crate) head: String,
    pub(crate) body: Vec<u8>,
}

impl HttpServer {
    /// With alice's and bob's tokens, then `config`.
    pub(crate) fn start(state: &Path, config: &str) -> HttpServer {
        HttpServer::launch(state, &format!("{TOKENS}{config}"), true)
    }

    /// With `rea.toml` holding exactly `config`. `drain`: keep reading what the server logs;
    /// else close the pipe once the address is read, as a supervisor that stopped reading would.
    pub(crate) fn launch(state: &Path, config: &str, drain: bool) -> HttpServer {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("rea.toml"), config).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_rea"))
            .args(["serve", "--http", "127.0.0.1:0"])
            .env("REA_STATE_DIR", state)
            .env("REA_CONFIG_DIR", dir.path())
            .env_remove("REA_ALLOWED_ROOTS")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        stderr.read_line(&mut line).unwrap();
        let log = Arc::new(Mutex::new(line.clone()));
        if drain {
            let log = log.clone();
            std::thread::spawn(move || {
                let mut line = String::new();
                while stderr.read_line(&mut line).is_ok_and(|n| n > 0) {
                    log.lock().unwrap().push_str(&line);
                    line.clear();
                }
            });
        }
        let port = line
            .trim_end()
            .strip_suffix("/mcp")
            .and_then(|l| l.rsplit(':').next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no address announced: {line}"));
        HttpServer {
            child,
            port,
            log,
            _config: dir,
        }
    }

    /// POSTs one JSON-RPC message with `token`; returns the session id header and the
    /// messages answered.
    pub(crate) fn post_as(
        &self,
        token: &str,
        session: Option<&str>,
        message: &Value,
    ) -> (Option<String>, Vec<Value>) {
        let session_header = session
            .map(|s| format!("Mcp-Session-Id: {s}\r\nMcp-Protocol-Version: 2025-11-25\r\n"))
            .unwrap_or_default();
        self.send_as(token, &session_header, message)
    }

    /// POSTs one message with `token` and `session_header`.
    pub(crate) fn send_as(
        &self,
        token: &str,
        session_header: &str,
        message: &Value,
    ) -> (Option<String>, Vec<Value>) {
        let headers = format!(
            "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nAuthorization: Bearer {token}\r\n{session_header}"
        );
        let Exchange { head, body, .. } = self.exchange("POST", &headers, &message.to_string());
        let id = head.lines().find_map(|l| {
            l.to_ascii_lowercase()
                .starts_with("mcp-session-id:")
                .then(|| l[15..].trim().to_owned())
        });
        let text = String::from_utf8_lossy(&body).into_owned();
        let messages = if head
            .to_ascii_lowercase()
            .contains("content-type: text/event-stream")
        {
            text.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str(d.trim()).ok())
                .collect()
        } else {
            serde_json::from_str(&text).into_iter().collect()
        };
        (id, messages)
    }

    /// One request with `headers` (lines, each ending in CRLF) and `body`; the answer whole.
    pub(crate) fn exchange(&self, method: &str, headers: &str, body: &str) -> Exchange {
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        write!(
            stream,
            "{method} /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.port,
            body.len()
        )
        .unwrap();
        // Up to the end of the body: the close, or the last chunk of a chunked one (a stateless
        // error answer ends with its last chunk while the connection stays open).
        let mut raw = vec![];
        let mut buf = [0u8; 8192];
        loop {
            let n = stream.read(&mut buf).unwrap();
            raw.extend_from_slice(&buf[..n]);
            if n == 0 || raw.ends_with(b"\r\n0\r\n\r\n") {
                break;
            }
        }
        let split = raw
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .expect("an HTTP response");
        let head = String::from_utf8_lossy(&raw[..split]).into_owned();
        let status = head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let mut body = raw[split + 4..].to_vec();
        if head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked")
        {
            body = dechunk(&body);
        }
        Exchange { status, head, body }
    }

    /// A new MCP session of alice's, initialized; its id.
    fn connect(&self) -> String {
        self.connect_as(ALICE)
    }

    /// A new MCP session started with `token`, initialized; its id.
    pub(crate) fn connect_as(&self, token: &str) -> String {
        let (id, _) = self.post_as(
            token,
            None,
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
        );
        let id = id.expect("initialize gives a session id");
        self.post_as(
            token,
            Some(&id),
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        );
        id
    }

    /// A tool call's result as alice (`structuredContent`, or the error text with `Err`).
    fn tool(&self, session: &str, name: &str, arguments: Value) -> Result<Value, String> {
        self.tool_as(ALICE, session, name, arguments)
    }

    /// A tool call's result in MCP session `session`, with `token`.
    pub(crate) fn tool_as(
        &self,
        token: &str,
        session: &str,
        name: &str,
        arguments: Value,
    ) -> Result<Value, String> {
        let (_, messages) = self.post_as(
            token,
            Some(session),
            &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": name, "arguments": arguments}}),
        );
        let answer = messages
            .into_iter()
            .find(|m| m.get("id").is_some())
            .expect("an answer");
        let result = &answer["result"];
        if result["isError"] == true {
            Err(result["content"][0]["text"].as_str().unwrap().to_owned())
        } else {
            Ok(result["structuredContent"].clone())
        }
    }
}

impl HttpServer {
    /// A stateless MCP 2026-07-28 `tools/call` as alice (no MCP session, its version in
    /// `_meta` and the headers): the whole answer.
    fn stateless(&self, name: &str, arguments: Value) -> Value {
        self.stateless_as(ALICE, name, arguments)
    }

    /// A stateless `tools/call` with `token`: the whole answer.
    pub(crate) fn stateless_as(&self, token: &str, name: &str, arguments: Value) -> Value {
        let headers = format!(
            "Mcp-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: {name}\r\n"
        );
        let (session, messages) = self.send_as(
            token,
            &headers,
            &json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
                "name": name,
                "arguments": arguments,
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
                    "io.modelcontextprotocol/clientCapabilities": {},
                },
            }}),
        );
        assert_eq!(session, None, "a stateless request got an MCP session");
        messages
            .into_iter()
            .find(|m| m["id"] == 7)
            .expect("an answer")
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = vec![];
    loop {
        let Some(eol) = data.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size =
            usize::from_str_radix(String::from_utf8_lossy(&data[..eol]).trim(), 16).unwrap_or(0);
        if size == 0 {
            return out;
        }
        let start = eol + 2;
        out.extend_from_slice(&data[start..(start + size).min(data.len())]);
        data = &data[(start + size + 2).min(data.len())..];
    }
}

/// `rea sessions show ID --json`.
pub(crate) fn show(state: &Path, id: &str) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_rea"))
        .arg("--state-dir")
        .arg(state)
        .args(["sessions", "show", id, "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn an_idle_http_session_is_released_after_the_configured_timeout_and_resumes_regression_16() {
    let state = tempfile::tempdir().unwrap();
    let server = HttpServer::start(state.path(), "[sessions]\nidle_timeout_secs = 1\n");
    let mcp = server.connect();
    let opened = server
        .tool(&mcp, "open_binary", json!({"path": "/usr/bin/ls"}))
        .unwrap();
    let id = opened["session_id"].as_str().unwrap().to_owned();
    // The client vanishes without DELETE. Wait (bounded) until its session is released; the
    // default of rmcp would hold it five minutes.
    let deadline = Instant::now() + Duration::from_secs(60);
    while show(state.path(), &id)["live"] == true {
        assert!(
            Instant::now() < deadline,
            "session {id} still held after 60 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let again = server.connect();
    let resumed = server
        .tool(&again, "resume_session", json!({"session_id": id}))
        .unwrap();
    assert_eq!(resumed["id"], id.as_str());
    assert_eq!(resumed["live"], true);
    let state_now = server.tool(&again, "binary_session", json!({})).unwrap();
    assert_eq!(state_now["session_id"], id.as_str());
    assert_eq!(state_now["targets"].as_array().unwrap().len(), 1);
}

#[test]
fn live_sessions_past_the_cap_are_refused_with_the_reason_regression_16() {
    let state = tempfile::tempdir().unwrap();
    let server = HttpServer::start(
        state.path(),
        "[sessions]\nmax_live = 2\nmax_live_per_principal = 2\n",
    );
    let (a, b, c) = (server.connect(), server.connect(), server.connect());
    let open = |s: &str| server.tool(s, "open_binary", json!({"path": "/usr/bin/ls"}));
    open(&a).unwrap();
    open(&b).unwrap();
    assert_eq!(
        open(&c).unwrap_err(),
        "this server already holds 2 live binary sessions, its limit (max_live in the [sessions] table of rea.toml); close_binary one, or wait until idle ones are released"
    );
    let listed = || {
        let out = Command::new(env!("CARGO_BIN_EXE_rea"))
            .arg("--state-dir")
            .arg(state.path())
            .args(["sessions", "list", "--json"])
            .output()
            .unwrap();
        serde_json::from_slice::<Value>(&out.stdout)
            .unwrap()
            .as_array()
            .unwrap()
            .len()
    };
    // The refusal made no session directory.
    assert_eq!(listed(), 2);
    server.tool(&a, "close_binary", json!({})).unwrap();
    open(&c).unwrap();
    assert_eq!(listed(), 2);
}

#[test]
fn descriptor_exhaustion_is_reported_as_too_many_open_files_regression_16() {
    let state = tempfile::tempdir().unwrap();
    // Descriptors an idle server holds.
    let mut idle = StdioServer::start(state.path());
    let base = std::fs::read_dir(format!("/proc/{}/fd", idle.child.id()))
        .unwrap()
        .count();
    idle.child.kill().unwrap();
    idle.child.wait().unwrap();
    // Under limits from just above that, the first open fails somewhere along the way (the
    // target, the lock, the database, its WAL, its readers); wherever it fails, the error names
    // the cause.
    let mut refusals = vec![];
    for limit in base + 2..base + 40 {
        let mut command = Command::new("prlimit");
        command
            .arg(format!("--nofile={limit}:{limit}"))
            .arg(env!("CARGO_BIN_EXE_rea"))
            .arg("serve")
            .env("REA_STATE_DIR", state.path());
        let mut server = StdioServer::start_command(command);
        let v = server.request(
            "tools/call",
            json!({"name": "open_binary", "arguments": {"path": "/usr/bin/ls"}}),
        );
        server.child.kill().unwrap();
        server.child.wait().unwrap();
        if v["result"]["isError"] != true {
            break;
        }
        let text = v["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(
            text.to_lowercase().contains("too many open files")
                && !text.contains("unable to open database file"),
            "under ulimit -n {limit}: {text}"
        );
        refusals.push(text);
    }
    assert!(
        !refusals.is_empty(),
        "no limit from {} on made open_binary fail",
        base + 2
    );
    assert!(
        refusals
            .iter()
            .any(|t| t.starts_with("too many open files: this process has used up")),
        "{refusals:#?}"
    );
}

/// `nm`'s address of `symbol` in `file`, as rea writes addresses (`0x` + lowercase hex).
fn nm_address(file: &Path, symbol: &str) -> String {
    let out = Command::new("nm")
        .arg("--defined-only")
        .arg(file)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let line = text
        .lines()
        .find(|l| l.split_whitespace().nth(2) == Some(symbol))
        .unwrap_or_else(|| panic!("nm lists no {symbol}: {text}"));
    let hex = line.split_whitespace().next().unwrap();
    format!("0x{:x}", u64::from_str_radix(hex, 16).unwrap())
}

#[test]
fn stateless_requests_reach_the_session_they_name_and_a_wrong_id_is_refused_regression_16() {
    let state = tempfile::tempdir().unwrap();
    let src = state.path().join("addressed.c");
    std::fs::write(
        &src,
        "int addressed_marker(int x) { return x * 3 + 1; }\nint main(void) { return addressed_marker(2); }\n",
    )
    .unwrap();
    let program = state.path().join("addressed");
    let cc = Command::new("cc")
        .args(["-O0", "-o"])
        .arg(&program)
        .arg(&src)
        .status()
        .unwrap();
    assert!(cc.success());
    let address = nm_address(&program, "addressed_marker");
    let server = HttpServer::start(state.path(), "");

    let opened = server.stateless("open_binary", json!({"path": program}));
    let opened = &opened["result"]["structuredContent"];
    let id = opened["session_id"].as_str().unwrap().to_owned();
    assert_eq!(opened["name"], "addressed");

    // A later request, on a new connection with no MCP session, names it and reaches its target.
    let state_now = server.stateless("binary_session", json!({"session": id}));
    let state_now = &state_now["result"]["structuredContent"];
    assert_eq!(state_now["session_id"], id.as_str());
    assert_eq!(state_now["targets"][0]["name"], "addressed");
    assert_eq!(state_now["targets"][0]["path"], program.to_str().unwrap());
    let found = server.stateless(
        "search_procedures",
        json!({"session": id, "query": "addressed_marker"}),
    );
    let procedures = found["result"]["structuredContent"]["procedures"]
        .as_array()
        .unwrap_or_else(|| panic!("{found}"))
        .clone();
    assert!(
        procedures
            .iter()
            .any(|p| p["name"] == "addressed_marker" && p["address"] == address.as_str()),
        "{found}"
    );

    // One that names no session is told to; one that names a wrong id is refused with the reason.
    let unnamed = server.stateless("list_procedures", json!({"limit": 1}));
    assert_eq!(unnamed["result"]["isError"], true, "{unnamed}");
    assert_eq!(
        unnamed["result"]["content"][0]["text"],
        "this request is stateless (MCP 2026-07-28 over HTTP) and names no binary session: pass the session id open_binary or resume_session returned as the `session` argument"
    );
    let wrong = "ses_1a232c9f7a0_00000000000000000000000000000000";
    let refused = server.stateless("binary_session", json!({"session": wrong}));
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert_eq!(
        refused["error"]["message"],
        format!(
            "no live binary session {wrong} on this server (closed, or released after sitting idle): resume_session it"
        )
    );
    let mistyped = server.stateless("binary_session", json!({"session": 7}));
    assert_eq!(
        mistyped["error"]["message"],
        "`session` is a session id (a string), not 7"
    );

    // Closed by name, it is gone for the next request that names it.
    let closed = server.stateless("close_binary", json!({"session": id}));
    assert_eq!(
        closed["result"]["structuredContent"]["session_id"],
        id.as_str()
    );
    let gone = server.stateless("binary_session", json!({"session": id}));
    assert_eq!(
        gone["error"]["message"],
        format!(
            "no live binary session {id} on this server (closed, or released after sitting idle): resume_session it"
        )
    );
}

/// A request whose refusal is logged was never answered once the server's stderr pipe had no
/// reader: tracing reported the failed log write with `eprintln!`, which panicked inside the
/// request. Log lines that cannot be written are now dropped.
#[test]
fn a_server_whose_stderr_reader_left_still_answers_regression_16() {
    let state = tempfile::tempdir().unwrap();
    let server = HttpServer::launch(state.path(), TOKENS, false);
    for _ in 0..3 {
        let answer = server.stateless("binary_session", json!({ "session": "nonexistent" }));
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
        assert!(
            answer["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("no live binary session nonexistent on this server"),
            "{answer}"
        );
    }
}

/// A client that goes away without DELETE leaves its MCP session holding the binary session
/// until the idle timeout; the same caller resumes it from a new connection at once, and the
/// connection that held it has none from then on. Another caller cannot take it.
#[test]
fn a_session_held_by_a_vanished_connection_is_resumed_at_once_by_its_caller_regression_29() {
    let state = tempfile::tempdir().unwrap();
    let server = HttpServer::start(state.path(), "[sessions]\nidle_timeout_secs = 3600\n");
    let gone = server.connect();
    let opened = server
        .tool(&gone, "open_binary", json!({"path": "/usr/bin/ls"}))
        .unwrap();
    let id = opened["session_id"].as_str().unwrap().to_owned();
    assert_eq!(show(state.path(), &id)["live"], true);

    // Another caller is told the session does not exist, as for any id not theirs.
    let mallory = server.connect_as(BOB);
    let refused = server
        .tool_as(BOB, &mallory, "resume_session", json!({"session_id": id}))
        .unwrap_err();
    assert!(
        refused.starts_with(&format!("no session {id} under")),
        "{refused}"
    );

    let again = server.connect();
    let resumed = server
        .tool(&again, "resume_session", json!({"session_id": id}))
        .unwrap();
    assert_eq!(resumed["id"], id.as_str());
    assert_eq!(resumed["live"], true);
    let now = server.tool(&again, "binary_session", json!({})).unwrap();
    assert_eq!(now["session_id"], id.as_str());
    assert_eq!(now["targets"].as_array().unwrap().len(), 1);
    let procedures = server
        .tool(&again, "list_procedures", json!({"limit": 1}))
        .unwrap();
    assert!(procedures["total"].as_u64().unwrap() > 100, "{procedures}");
    // The connection that held it gave it up.
    let old = server.tool(&gone, "binary_session", json!({})).unwrap();
    assert_eq!(old["open"], false, "{old}");
    // And taking it back works the same way.
    let back = server
        .tool(&gone, "resume_session", json!({"session_id": id}))
        .unwrap();
    assert_eq!(back["id"], id.as_str());
    let old = server.tool(&again, "binary_session", json!({})).unwrap();
    assert_eq!(old["open"], false, "{old}");
}
