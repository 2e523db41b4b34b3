//! Strict JSON-RPC on both transports (issue 17, item 4), from raw frames: the built binary over
//! stdio, and `rea serve --http` over a plain TCP socket, so that no SDK smooths anything over.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

/// How long a test waits for one answer before it fails (a missing answer must not hang).
const ANSWER_WAIT: Duration = Duration::from_secs(20);

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;

/// `rea serve` over stdio, read line by line on a thread.
struct StdioServer {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    _state: tempfile::TempDir,
}

impl StdioServer {
    fn start() -> Self {
        let state = tempfile::tempdir().unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_rea"))
            .arg("serve")
            .env("REA_STATE_DIR", state.path())
            .env_remove("REA_CONFIG_DIR")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        StdioServer {
            stdin: child.stdin.take(),
            child,
            lines,
            _state: state,
        }
    }

    fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// The next frame the server writes, as text (to see `"id":null` as written) and as JSON.
    fn next(&self) -> (String, Value) {
        let line = self
            .lines
            .recv_timeout(ANSWER_WAIT)
            .expect("the server answered nothing");
        let value = serde_json::from_str(&line).unwrap();
        (line, value)
    }

    /// Sends `line` and returns the one frame it is answered with.
    fn ask(&mut self, line: &str) -> (String, Value) {
        self.send(line);
        self.next()
    }
}

impl Drop for StdioServer {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

fn initialized() -> StdioServer {
    let mut s = StdioServer::start();
    let (_, answer) = s.ask(INITIALIZE);
    assert_eq!(answer["result"]["serverInfo"]["name"], "rea");
    s.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    s
}

#[test]
fn stdio_answers_unreadable_messages_with_a_null_id_regression_17() {
    let mut s = initialized();
    for (input, code) in [
        ("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":", -32700),
        ("this is not json", -32700),
        ("[]", -32600),
        (r#"[{"jsonrpc":"2.0","id":3,"method":"ping"}]"#, -32600),
        ("42", -32600),
        (r#"{"foo":"bar"}"#, -32600),
        (r#"{"jsonrpc":"1.0","id":4,"method":"ping"}"#, -32600),
        (r#"{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}"#, -32600),
        (r#"{"jsonrpc":"2.0","id":5,"method":["ping"]}"#, -32600),
    ] {
        let (text, answer) = s.ask(input);
        assert_eq!(answer["error"]["code"], code, "{input} -> {text}");
        assert!(text.contains(r#""id":null"#), "{input} -> {text}");
        assert_eq!(answer["jsonrpc"], "2.0");
    }
    // The connection is still good.
    let (_, pong) = s.ask(r#"{"jsonrpc":"2.0","id":6,"method":"ping"}"#);
    assert_eq!(pong, json!({"jsonrpc": "2.0", "id": 6, "result": {}}));
}

#[test]
fn stdio_tells_unknown_methods_from_bad_params_regression_17() {
    let mut s = initialized();
    for (input, id, code) in [
        (
            r#"{"jsonrpc":"2.0","id":10,"method":"no/such/method","params":{}}"#,
            10,
            -32601,
        ),
        (
            r#"{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":5}}"#,
            11,
            -32602,
        ),
        (
            r#"{"jsonrpc":"2.0","id":12,"method":"tools/call"}"#,
            12,
            -32602,
        ),
        (
            r#"{"jsonrpc":"2.0","id":13,"method":"prompts/get","params":[1]}"#,
            13,
            -32602,
        ),
        (
            r#"{"jsonrpc":"2.0","id":14,"method":"completion/complete","params":{"ref":{}}}"#,
            14,
            -32602,
        ),
        (
            r#"{"jsonrpc":"2.0","id":15,"method":"tools/list","params":{"cursor":5}}"#,
            15,
            -32602,
        ),
        (
            r#"{"jsonrpc":"2.0","id":16,"method":"tools/list","params":{"cursor":"bogus"}}"#,
            16,
            -32602,
        ),
        (
            r#"{"jsonrpc":"2.0","id":17,"method":"prompts/list","params":{"cursor":"x"}}"#,
            17,
            -32602,
        ),
        (
            r#"{"jsonrpc":"2.0","id":"s","method":"ping","params":7}"#,
            -1,
            -32602,
        ),
    ] {
        let (text, answer) = s.ask(input);
        assert_eq!(answer["error"]["code"], code, "{input} -> {text}");
        let expected_id = if id < 0 { json!("s") } else { json!(id) };
        assert_eq!(answer["id"], expected_id, "{input} -> {text}");
    }
    // A list without a cursor is served.
    let (_, tools) = s.ask(r#"{"jsonrpc":"2.0","id":18,"method":"tools/list","params":{}}"#);
    assert!(!tools["result"]["tools"].as_array().unwrap().is_empty());
}

#[test]
fn stdio_refuses_a_second_initialize_regression_17() {
    let mut s = initialized();
    let again = INITIALIZE.replace(r#""id":1"#, r#""id":2"#);
    let (_, answer) = s.ask(&again);
    assert_eq!(answer["id"], 2);
    assert_eq!(answer["error"]["code"], -32600);
    assert_eq!(
        answer["error"]["message"],
        "Invalid Request: the connection is already initialized"
    );
    let (_, pong) = s.ask(r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#);
    assert_eq!(pong["result"], json!({}));
}

#[test]
fn stdio_answers_garbage_before_the_handshake_and_then_serves() {
    let mut s = StdioServer::start();
    let (text, answer) = s.ask("{oops");
    assert_eq!(answer["error"]["code"], -32700, "{text}");
    let (_, answer) = s.ask(INITIALIZE);
    assert_eq!(answer["id"], 1);
    assert_eq!(answer["result"]["serverInfo"]["name"], "rea");
}

/// `rea serve --http` on a free loopback port, with the token it generated, which every request
/// sends.
struct Http {
    child: Child,
    port: u16,
    token: String,
    _state: tempfile::TempDir,
}

impl Http {
    fn start() -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let state = tempfile::tempdir().unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_rea"))
            .args(["serve", "--http", &format!("127.0.0.1:{port}")])
            .env("REA_STATE_DIR", state.path())
            .env_remove("REA_CONFIG_DIR")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The server says so once it is bound.
        let mut line = String::new();
        BufReader::new(child.stderr.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(line.contains("/mcp"), "{line}");
        // Written before the address is announced.
        let token = std::fs::read_to_string(state.path().join("http-token"))
            .unwrap()
            .trim_end()
            .to_owned();
        Http {
            child,
            port,
            token,
            _state: state,
        }
    }

    /// One request; the status, the headers (lower-cased names) and the body, read until the
    /// connection closes or one JSON-RPC message has arrived (an SSE stream stays open).
    fn request(
        &self,
        method: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> (u16, Vec<(String, String)>, String) {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        stream.set_read_timeout(Some(ANSWER_WAIT)).unwrap();
        let mut head = format!(
            "{method} /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {}\r\nContent-Length: {}\r\nConnection: close\r\n",
            self.port,
            self.token,
            body.len()
        );
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes()).unwrap();
        stream.write_all(body.as_bytes()).unwrap();
        let mut raw = Vec::new();
        let mut buf = [0u8; 8192];
        loop {
            let n = stream.read(&mut buf).expect("the server answered in time");
            raw.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&raw);
            let done = text.split_once("\r\n\r\n").is_some_and(|(_, body)| {
                body.lines().any(|l| {
                    l.strip_prefix("data:")
                        .is_some_and(|d| d.contains("\"jsonrpc\""))
                })
            });
            if n == 0 || done {
                break;
            }
        }
        let text = String::from_utf8_lossy(&raw).into_owned();
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let mut lines = head.lines();
        let status = lines
            .next()
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let headers = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        (status, headers, body.to_owned())
    }

    fn post(&self, headers: &[(&str, &str)], body: &str) -> (u16, Vec<(String, String)>, String) {
        let mut all = vec![
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ];
        all.extend_from_slice(headers);
        self.request("POST", &all, body)
    }

    /// Starts a session; its id.
    fn session(&self) -> String {
        let (status, headers, body) = self.post(&[], INITIALIZE);
        assert_eq!(status, 200, "{body}");
        assert!(body.contains(r#""serverInfo":{"name":"rea""#), "{body}");
        header(&headers, "mcp-session-id").expect("a session id")
    }
}

impl Drop for Http {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn header(headers: &[(String, String)], name: &str) -> Option<String> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.clone())
}

/// A JSON body (not SSE): its JSON.
fn json_body(headers: &[(String, String)], body: &str) -> Value {
    assert_eq!(
        header(headers, "content-type").as_deref(),
        Some("application/json"),
        "{body}"
    );
    serde_json::from_str(body.trim()).unwrap_or_else(|e| panic!("{e}: {body}"))
}

#[test]
fn http_refuses_foreign_origins_with_403_regression_17() {
    let http = Http::start();
    for origin in [
        "https://evil.example",
        "null",
        "http://127.0.0.1.evil.example:8080",
    ] {
        let (status, headers, body) = http.post(&[("Origin", origin)], INITIALIZE);
        assert_eq!(status, 403, "{origin}: {body}");
        let answer = json_body(&headers, &body);
        assert_eq!(answer["error"]["code"], -32600, "{body}");
        assert_eq!(answer["id"], Value::Null, "{body}");
        let (status, _, _) = http.request("GET", &[("Origin", origin)], "");
        assert_eq!(status, 403, "GET from {origin}");
    }
    // A page served from this machine, and a client that sends no Origin, are served.
    let local = format!("http://localhost:{}", http.port);
    let (status, _, body) = http.post(&[("Origin", &local)], INITIALIZE);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(r#""serverInfo""#), "{body}");
    http.session();
}

#[test]
fn http_answers_bad_bodies_with_json_rpc_errors_regression_17() {
    let http = Http::start();
    let session = http.session();
    let with_session = [("Mcp-Session-Id", session.as_str())];
    for (body, code) in [
        ("{\"jsonrpc\":\"2.0\",\"id\":2,", -32700),
        ("[]", -32600),
        (r#"[{"jsonrpc":"2.0","id":3,"method":"ping"}]"#, -32600),
        (r#"{"id":4,"method":"ping"}"#, -32600),
    ] {
        let (status, headers, text) = http.post(&with_session, body);
        assert_eq!(status, 400, "{body} -> {text}");
        let answer = json_body(&headers, &text);
        assert_eq!(answer["error"]["code"], code, "{body} -> {text}");
        assert!(text.contains(r#""id":null"#), "{body} -> {text}");
    }
    // Params that do not fit a known method are -32602, answering the request's id.
    let (status, headers, text) = http.post(
        &with_session,
        r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":5}}"#,
    );
    assert_eq!(status, 200, "{text}");
    let answer = json_body(&headers, &text);
    assert_eq!(
        (answer["id"].clone(), answer["error"]["code"].clone()),
        (json!(5), json!(-32602))
    );
    // A second initialize inside the session is refused.
    let again = INITIALIZE.replace(r#""id":1"#, r#""id":6"#);
    let (status, headers, text) = http.post(&with_session, &again);
    assert_eq!(status, 200, "{text}");
    let answer = json_body(&headers, &text);
    assert_eq!(
        (answer["id"].clone(), answer["error"]["code"].clone()),
        (json!(6), json!(-32600))
    );
    // The session still serves.
    let (status, _, text) = http.post(&with_session, r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#);
    assert_eq!(status, 200, "{text}");
    assert!(text.contains(r#""id":7,"result":{}"#), "{text}");
}

#[test]
fn http_deleting_a_deleted_session_is_404_regression_17() {
    let http = Http::start();
    let session = http.session();
    let with_session = [("Mcp-Session-Id", session.as_str())];
    let (status, _, body) = http.request("DELETE", &with_session, "");
    assert!((200..300).contains(&status), "{status} {body}");
    let (status, headers, body) = http.request("DELETE", &with_session, "");
    assert_eq!(status, 404, "{body}");
    assert_eq!(json_body(&headers, &body)["error"]["code"], -32600);
    let (status, _, _) = http.request("DELETE", &[("Mcp-Session-Id", "never-issued")], "");
    assert_eq!(status, 404);
}
