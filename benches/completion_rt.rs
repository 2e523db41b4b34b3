//! Completion as a client sees it (issue 30, item 1): `completion/complete` round trips over a
//! bare stdio pipe to `rea serve`, against a `ping` round trip on the same pipe in the same run
//! (the floor: framing, JSON and the server's dispatch). Procedure completion is typed one
//! character at a time along an address and a name of the inventory, so every prefix length a
//! person passes through is measured, including those matching most of it (every Mach-O address
//! starts `0x1000`); Provider completion is measured too. Goals: procedure p99 ≤ 1 ms at every
//! prefix length, provider p99 ≤ 0.5 ms.
//!
//! Files: the largest Mach-O under the fixture directory (`REA_FIXTURES`, else `.fixtures`;
//! `REA_BENCH_MACHO` overrides: the figure is biome's, `npm pack
//! @biomejs/cli-darwin-arm64@2.6.8`, `package/biome`, ~80k procedures) and `/usr/bin/gdb`
//! (`REA_BENCH_ELF`). A file that is missing is skipped. `REA_BENCH_CALLS` sets the calls per
//! prefix (default 300). Run: `cargo bench --bench completion_rt`.

#[allow(dead_code)]
mod common;

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use common::{Latency, Table, fmt_duration, meets};

/// `rea serve` on a pipe, spoken to in newline-delimited JSON-RPC.
struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: u64,
}

impl Server {
    fn start(state: &Path) -> Server {
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
                   "clientInfo": {"name": "completion-bench", "version": "0"}}),
        );
        server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        server
    }

    fn send(&mut self, message: &Value) {
        let mut line = serde_json::to_vec(message).unwrap();
        line.push(b'\n');
        self.stdin.write_all(&line).unwrap();
        self.stdin.flush().unwrap();
    }

    /// One request and its response (notifications before it are skipped).
    fn call(&mut self, method: &str, params: Value) -> Value {
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

    fn complete(&mut self, argument: &str, value: &str) -> Value {
        self.call(
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "investigate_feature"},
                   "argument": {"name": argument, "value": value}}),
        )
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Every prefix of `value` from one character on.
fn typing(value: &str) -> Vec<String> {
    value
        .char_indices()
        .map(|(i, c)| value[..i + c.len_utf8()].to_owned())
        .collect()
}

fn main() {
    let calls: usize = std::env::var("REA_BENCH_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300)
        .max(10);
    let macho = std::env::var_os("REA_BENCH_MACHO")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| common::largest_macho(&common::fixtures()));
    let elf = std::env::var_os("REA_BENCH_ELF")
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from("/usr/bin/gdb"), PathBuf::from);
    let mut table = Table::new(&[
        "file",
        "completion",
        "matches",
        "p50",
        "p99",
        "ping p99 (same run)",
        "p99 / ping p99",
        "goal",
    ]);
    let scratch = common::scratch_dir("completion_rt");
    for path in [macho, Some(elf)].into_iter().flatten() {
        if !path.is_file() {
            continue;
        }
        let state = scratch.join(path.file_name().unwrap_or_default());
        let _ = std::fs::remove_dir_all(&state);
        std::fs::create_dir_all(&state).unwrap();
        let mut server = Server::start(&state);
        let opened = server.call(
            "tools/call",
            json!({"name": "open_binary", "arguments": {"path": path}}),
        );
        assert_ne!(opened["isError"], true, "{opened}");
        // The inventory's last address and its longest unique name, typed character by
        // character: the address passes through prefixes matching nearly every procedure.
        let listed = server.call(
            "tools/call",
            json!({"name": "list_procedures", "arguments": {"limit": 500, "offset": 0}}),
        );
        let procedures = listed["structuredContent"]["procedures"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let address = procedures
            .last()
            .and_then(|p| p["address"].as_str())
            .unwrap_or("0x1000")
            .to_owned();
        let name = procedures
            .iter()
            .filter_map(|p| p["name"].as_str())
            .max_by_key(|n| n.len().min(24))
            .unwrap_or("_")
            .to_owned();
        let mut cases: Vec<(String, &str, String)> = Vec::new();
        for typed in typing(&address)
            .into_iter()
            .chain(typing(&name).into_iter().take(12))
        {
            cases.push(("procedure".into(), "procedure", typed));
        }
        cases.push(("provider".into(), "provider_id", String::new()));
        cases.push(("provider".into(), "provider_id", "a".into()));
        let file = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        for (family, argument, typed) in cases {
            let answer = server.complete(argument, &typed);
            let matches = answer["completion"]["total"].as_u64().unwrap_or(0);
            let (mut own, mut ping) = (Vec::new(), Vec::new());
            // Interleaved, so both see the same machine.
            for _ in 0..calls {
                let start = Instant::now();
                server.complete(argument, &typed);
                own.push(start.elapsed());
                let start = Instant::now();
                server.call("ping", json!({}));
                ping.push(start.elapsed());
            }
            let (own, ping) = (Latency::of(&own).unwrap(), Latency::of(&ping).unwrap());
            let goal = if family == "provider" {
                Duration::from_micros(500)
            } else {
                Duration::from_millis(1)
            };
            table.row(&[
                file.clone(),
                format!("{family} `{typed}`"),
                matches.to_string(),
                fmt_duration(own.p50),
                fmt_duration(own.p99),
                fmt_duration(ping.p99),
                format!("{:.2}×", own.p99.as_secs_f64() / ping.p99.as_secs_f64()),
                format!("≤ {} {}", fmt_duration(goal), meets(own.p99 <= goal)),
            ]);
        }
    }
    let markdown = format!(
        "### Completion round trips over stdio (`rea serve`), {calls} calls per prefix, each \
         followed by a `ping`\n\n{}\n{}\n",
        common::machine(),
        table.finish()
    );
    print!("{markdown}");
    common::publish("completion_rt", &markdown);
}
