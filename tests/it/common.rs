//! Test harness: a real `ReaServer` on one end of a duplex pipe and an rmcp client on the other.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use rea::server::{ReaServer, Shared};
use rea::settings::Settings;
use rmcp::model::{
    ArgumentInfo, CallToolRequestParams, CallToolResult, CompleteRequestParams, CompletionContext,
    CompletionInfo, GetPromptRequestParams, GetPromptResult, ProtocolVersion, Reference,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, ClientServiceExt, RoleClient, ServiceError, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// A client that reports prompt and tool list changes, and progress, on a channel.
#[derive(Clone)]
pub struct Client {
    pub changes: mpsc::UnboundedSender<&'static str>,
}

impl ClientHandler for Client {
    async fn on_progress(
        &self,
        _: rmcp::model::ProgressNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        let _ = self.changes.send("progress");
    }
    async fn on_prompt_list_changed(&self, _: NotificationContext<RoleClient>) {
        let _ = self.changes.send("prompts");
    }
    async fn on_tool_list_changed(&self, _: NotificationContext<RoleClient>) {
        let _ = self.changes.send("tools");
    }
}

/// A server and a connected client with their own state and config directories.
pub struct Harness {
    pub client: RunningService<RoleClient, Client>,
    pub changes: mpsc::UnboundedReceiver<&'static str>,
    /// Kept alive for the test: the state directory holding session databases.
    pub _state: tempfile::TempDir,
    pub config: tempfile::TempDir,
    pub shared: Arc<Shared>,
    _watcher: Option<notify::RecommendedWatcher>,
}

/// Which handshake the client uses.
#[derive(Clone, Copy, Debug)]
pub enum Mode {
    /// `initialize` handshake.
    Legacy,
    /// Stateless 2026-07-28 (`server/discover`).
    Modern,
}

pub async fn start() -> Harness {
    start_mode(Mode::Legacy).await
}

pub async fn start_mode(mode: Mode) -> Harness {
    let state = tempfile::tempdir().unwrap();
    let config = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(config.path().join("prompts")).unwrap();
    start_in(mode, state, config).await
}

pub async fn start_in(mode: Mode, state: tempfile::TempDir, config: tempfile::TempDir) -> Harness {
    start_confined(mode, state, config, vec![]).await
}

/// [`start_in`] with the operator's allowed roots (`REA_ALLOWED_ROOTS`).
pub async fn start_confined(
    mode: Mode,
    state: tempfile::TempDir,
    config: tempfile::TempDir,
    allowed_roots: Vec<PathBuf>,
) -> Harness {
    let settings = Settings {
        state_dir: state.path().to_owned(),
        config_dir: Some(config.path().to_owned()),
        allowed_roots: rea::fsroot::Roots::new(allowed_roots),
    };
    let shared = Shared::new(settings);
    let watcher = rea::server::watch_config(shared.clone());
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    let server = ReaServer::new(shared.clone());
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let (tx, rx) = mpsc::unbounded_channel();
    let handler = Client { changes: tx };
    let client = match mode {
        Mode::Legacy => handler.serve(client_io).await.unwrap(),
        Mode::Modern => handler
            .serve_with_lifecycle(
                client_io,
                rmcp::ClientLifecycleMode::Discover {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                },
            )
            .await
            .unwrap(),
    };
    Harness {
        client,
        changes: rx,
        _state: state,
        config,
        shared,
        _watcher: watcher,
    }
}

impl Harness {
    /// Calls a tool; returns the raw result.
    pub async fn call_raw(&self, name: &str, args: Value) -> CallToolResult {
        let params = CallToolRequestParams::new(name.to_owned())
            .with_arguments(args.as_object().cloned().unwrap_or_default());
        self.client.call_tool(params).await.unwrap()
    }

    /// Calls a tool that must succeed; returns its structured content.
    pub async fn call(&self, name: &str, args: Value) -> Value {
        let r = self.call_raw(name, args).await;
        assert_ne!(r.is_error, Some(true), "{name} failed: {:?}", r.content);
        r.structured_content
            .clone()
            .unwrap_or_else(|| panic!("{name} returned no structured content"))
    }

    /// Calls a tool that must fail with a tool error; returns its message.
    pub async fn call_err(&self, name: &str, args: Value) -> String {
        let r = self.call_raw(name, args).await;
        assert_eq!(
            r.is_error,
            Some(true),
            "{name} should fail: {:?}",
            r.structured_content
        );
        r.content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect::<Vec<_>>()
            .join("\n")
    }

    pub async fn complete(&self, prompt: &str, argument: &str, value: &str) -> CompletionInfo {
        self.complete_ctx(prompt, argument, value, &[])
            .await
            .unwrap()
    }

    pub async fn complete_ctx(
        &self,
        prompt: &str,
        argument: &str,
        value: &str,
        context: &[(&str, &str)],
    ) -> Result<CompletionInfo, ServiceError> {
        let mut params = CompleteRequestParams::new(
            Reference::for_prompt(prompt),
            ArgumentInfo::new(argument, value),
        );
        if !context.is_empty() {
            let args = context
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            params = params.with_context(CompletionContext::with_arguments(args));
        }
        self.client.complete(params).await.map(|r| r.completion)
    }

    pub async fn get_prompt(
        &self,
        name: &str,
        args: &[(&str, &str)],
    ) -> Result<GetPromptResult, ServiceError> {
        let map: serde_json::Map<String, Value> = args
            .iter()
            .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
            .collect();
        self.client
            .get_prompt(GetPromptRequestParams::new(name).with_arguments(map))
            .await
    }

    pub async fn prompt_text(&self, name: &str, args: &[(&str, &str)]) -> String {
        let r = self.get_prompt(name, args).await.unwrap();
        r.messages
            .iter()
            .filter_map(|m| m.content.as_text().map(|t| t.text.clone()))
            .collect::<Vec<_>>()
            .join("\n")
    }

    pub async fn tool_names(&self) -> Vec<String> {
        self.client
            .list_all_tools()
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.name.to_string())
            .collect()
    }

    /// Waits for the next list-changed notification (bounded, so a missing one fails the test).
    pub async fn next_change(&mut self) -> Option<&'static str> {
        tokio::time::timeout(Duration::from_secs(10), self.changes.recv())
            .await
            .ok()
            .flatten()
    }

    pub fn prompts_dir(&self) -> PathBuf {
        self.config.path().join("prompts")
    }
}

/// The JSON-RPC error code of a failed request.
pub fn error_code(e: &ServiceError) -> Option<i32> {
    match e {
        ServiceError::McpError(data) => Some(data.code.0),
        _ => None,
    }
}

/// Where test fixtures were fetched (`.ci/fixtures.sh`).
pub fn fixtures() -> PathBuf {
    std::env::var_os("REA_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".fixtures"))
}

/// A fixture file that `.ci/fixtures.sh` fetched; fails the test with a hint when missing.
pub fn fixture(rel: &str) -> PathBuf {
    let p = fixtures().join(rel);
    assert!(
        p.exists(),
        "fixture {} missing: run .ci/fixtures.sh",
        p.display()
    );
    p
}

/// A small JavaScript/Electron app directory.
pub fn javascript_app() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("package.json"),
        r#"{"name":"demo","version":"1.0.0","main":"main.js"}"#,
    )
    .unwrap();
    std::fs::write(
        dir.path().join("main.js"),
        "const { app, BrowserWindow, ipcMain } = require('electron');\nipcMain.handle('search', () => 1);\n",
    )
    .unwrap();
    dir
}

pub fn str_values(info: &CompletionInfo) -> Vec<&str> {
    info.values.iter().map(String::as_str).collect()
}

/// The built `rea serve` over stdio, spoken to in JSON-RPC lines.
pub struct StdioServer {
    pub child: Child,
    pub stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl StdioServer {
    /// Starts `rea serve` on `state` and completes the initialize handshake.
    pub fn start(state: &std::path::Path) -> StdioServer {
        let mut command = Command::new(env!("CARGO_BIN_EXE_rea"));
        command.arg("serve").env("REA_STATE_DIR", state);
        StdioServer::start_command(command)
    }

    /// Starts `rea serve` on `state` with its log (warnings and worse) written to `log`.
    pub fn start_logging(state: &std::path::Path, log: &std::path::Path) -> StdioServer {
        let mut command = Command::new(env!("CARGO_BIN_EXE_rea"));
        command.arg("serve").env("REA_STATE_DIR", state);
        StdioServer::start_with(command, std::fs::File::create(log).unwrap().into())
    }

    /// Starts `command`, which runs `rea serve` (through a wrapper, say), and completes the
    /// initialize handshake.
    pub fn start_command(command: Command) -> StdioServer {
        StdioServer::start_with(command, Stdio::null())
    }

    fn start_with(mut command: Command, stderr: Stdio) -> StdioServer {
        let mut child = command
            .env_remove("REA_CONFIG_DIR")
            .env_remove("REA_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut s = StdioServer {
            child,
            stdin,
            stdout,
            next_id: 0,
        };
        s.request("initialize", json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "crash", "version": "1"}}));
        s.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        s
    }

    pub fn send(&mut self, v: Value) {
        writeln!(self.stdin, "{v}").unwrap();
        self.stdin.flush().unwrap();
    }

    pub fn submit(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// The next frame, response or notification.
    pub fn read_frame(&mut self) -> Value {
        let mut line = String::new();
        assert!(
            self.stdout.read_line(&mut line).unwrap() > 0,
            "server closed stdout"
        );
        serde_json::from_str(&line).expect("stdout carries only JSON-RPC frames")
    }

    pub fn read(&mut self) -> Value {
        loop {
            let mut line = String::new();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "server closed stdout"
            );
            let v: Value =
                serde_json::from_str(&line).expect("stdout carries only JSON-RPC frames");
            if v.get("id").is_some() {
                return v;
            }
        }
    }

    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.submit(method, params);
        let v = self.read();
        assert_eq!(v["id"], id);
        v
    }

    pub fn tool(&mut self, name: &str, arguments: Value) -> Value {
        let v = self.request("tools/call", json!({"name": name, "arguments": arguments}));
        assert_ne!(v["result"]["isError"], true, "{name}: {v}");
        v["result"]["structuredContent"].clone()
    }
}
