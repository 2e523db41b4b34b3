//! HTTP sessions that cannot leak (issue 16, item 9): a client that vanishes without DELETE has
//! its binary session released after the configured idle timeout, resumable; a cap on live
//! sessions refuses one more with a clear message; descriptor exhaustion is named as such.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::StdioServer;

/// `rea serve --http` on a free loopback port with `rea.toml` holding `config`.
struct HttpServer {
    child: Child,
    port: u16,
    _config: tempfile::TempDir,
}

impl HttpServer {
    fn start(state: &Path, config: &str) -> HttpServer {
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
        BufReader::new(child.stderr.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim_end()
            .strip_suffix("/mcp")
            .and_then(|l| l.rsplit(':').next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no address announced: {line}"));
        HttpServer {
            child,
            port,
            _config: dir,
        }
    }

    /// POSTs one JSON-RPC message; returns the session id header and the messages answered.
    fn post(&self, session: Option<&str>, message: &Value) -> (Option<String>, Vec<Value>) {
        let body = message.to_string();
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let session_header = session
            .map(|s| format!("Mcp-Session-Id: {s}\r\nMcp-Protocol-Version: 2025-11-25\r\n"))
            .unwrap_or_default();
        write!(
            stream,
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{session_header}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.port,
            body.len()
        )
        .unwrap();
        let mut raw = vec![];
        stream.read_to_end(&mut raw).unwrap();
        let split = raw
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .expect("an HTTP response");
        let head = String::from_utf8_lossy(&raw[..split]).to_ascii_lowercase();
        let mut payload = raw[split + 4..].to_vec();
        if head.contains("transfer-encoding: chunked") {
            payload = dechunk(&payload);
        }
        let id = String::from_utf8_lossy(&raw[..split])
            .lines()
            .find_map(|l| {
                l.to_ascii_lowercase()
                    .starts_with("mcp-session-id:")
                    .then(|| l[15..].trim().to_owned())
            });
        let text = String::from_utf8_lossy(&payload).into_owned();
        let messages = if head.contains("content-type: text/event-stream") {
            text.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str(d.trim()).ok())
                .collect()
        } else {
            serde_json::from_str(&text).into_iter().collect()
        };
        (id, messages)
    }

    /// A new MCP session, initialized; its id.
    fn connect(&self) -> String {
        let (id, _) = self.post(
            None,
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
        );
        let id = id.expect("initialize gives a session id");
        self.post(
            Some(&id),
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        );
        id
    }

    /// A tool call's result (`structuredContent`, or the error text with `Err`).
    fn tool(&self, session: &str, name: &str, arguments: Value) -> Result<Value, String> {
        let (_, messages) = self.post(
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
fn show(state: &Path, id: &str) -> Value {
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
    let server = HttpServer::start(state.path(), "[sessions]\nmax_live = 2\n");
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
