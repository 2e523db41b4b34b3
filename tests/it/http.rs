//! `rea serve --http`: streamable HTTP on loopback only.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};

#[test]
fn http_transport_serves_mcp_on_loopback_and_refuses_other_addresses() {
    let refused = Command::new(env!("CARGO_BIN_EXE_rea"))
        .args(["serve", "--http", "0.0.0.0:1"])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("loopback only"));

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
    // The server announces the address once it is bound.
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    assert!(line.contains(&format!("127.0.0.1:{port}/mcp")), "{line}");
    // With no token configured, one was made at start (issue 25).
    let token = std::fs::read_to_string(state.path().join("http-token")).unwrap();

    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        token.trim_end(),
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    let mut buf = [0u8; 4096];
    while !response.contains("\"serverInfo\"") {
        let n = stream.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        response.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(
        response.contains(r#""serverInfo":{"name":"rea""#),
        "{response}"
    );
}
