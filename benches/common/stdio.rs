//! `rea serve` on a bare stdio pipe, spoken to in newline-delimited JSON-RPC, as a client
//! without an SDK speaks to it: the round trips the benches time.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

/// `rea serve` on a pipe, spoken to in newline-delimited JSON-RPC.
pub struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: u64,
}

impl Server {
    /// A server keeping its sessions under `state`, initialized as client `client`.
    pub fn start(state: &Path, client: &str) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_rea"))
            .arg("serve")
            .env("REA_STATE_DIR", state)
            .env_remove("REA_CONFIG_DIR")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("rea serve");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut server = Server {
            child,
            stdin,
            stdout,
            next: 0,
        };
        server.call(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": client, "version": "0"}}),
        );
        server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        server
    }

    /// Writes one message, a line of JSON.
    pub fn send(&mut self, message: &Value) {
        let mut line = serde_json::to_vec(message).unwrap();
        line.push(b'\n');
        self.stdin.write_all(&line).unwrap();
        self.stdin.flush().unwrap();
    }

    /// One request and its response (notifications before it are skipped).
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let mut line = String::new();
        loop {
            line.clear();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "rea serve ended"
            );
            let frame: Value = serde_json::from_str(&line).unwrap();
            if frame["id"] == id {
                assert!(frame.get("error").is_none(), "{method}: {frame}");
                return frame["result"].clone();
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
