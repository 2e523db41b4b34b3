//! Fuzzes the JSON-RPC boundary: arbitrary bytes written as frames into a real `ReaServer` served
//! by rmcp over `tokio::io::duplex`, then a `ping` that must be answered (the server survived).
//!
//! The first input byte, modulo 3, is the mode: 0 sends the input at once after a complete
//! `initialize` handshake (requests run concurrently); 1 sends it first, before any handshake
//! (where rmcp may refuse and close), then the handshake; 2 sends it after the handshake one line
//! at a time, awaiting each request's answer, so open_binary → list_procedures → analyze_function
//! runs in order. Then the checks:
//! - everything the server writes is one JSON-RPC 2.0 object per line;
//! - after the handshake the connection stays open and the `ping` is answered;
//! - every well-formed request in the input gets a response or error with its id (unless the input
//!   also cancels requests, or the server refused the connection before its handshake);
//! - closing the client end stops the server within a bounded time.
//!
//! Tools may read and write only under the fixed root `/tmp/rea-fuzz-root` (the seeds name files
//! there); it holds a small ELF, a raw file and a tiny JavaScript application, restored after every
//! input. Each input gets its own `Shared` and server, and the session directories it created are
//! removed afterwards.
#![no_main]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use rea::server::{ReaServer, Shared};
use rea::settings::Settings;
use rmcp::ServiceExt;
use rmcp::model::{ClientJsonRpcMessage, ClientNotification, JsonRpcMessage};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// The only directory tool calls may touch (`allowed_roots`). Fixed, so seeds can name it.
const ROOT: &str = "/tmp/rea-fuzz-root";

/// Files restored under [`ROOT`] before every input.
const ROOT_FILES: &[(&str, &[u8])] = &[
    ("tiny.elf", include_bytes!("../corpus/native_image/elf-x86_64-hello")),
    ("data.bin", b"rea fuzz data https://example.invalid/x \x00\x01\x02"),
    (
        "jsapp/package.json",
        br#"{"name":"jsapp","main":"main.js","dependencies":{"electron":"1"}}"#,
    ),
    (
        "jsapp/main.js",
        b"const { ipcMain } = require('electron');\nipcMain.on('ping', (e) => e.reply('pong'));\n",
    ),
];

const INIT_ID: &str = "\u{1}rea-fuzz-init";
const PING_ID: &str = "\u{1}rea-fuzz-ping";

/// How long an input may take before the server counts as hung.
const DEADLINE: Duration = Duration::from_secs(30);

fn init_frames() -> String {
    let init = serde_json::json!({
        "jsonrpc": "2.0", "id": INIT_ID, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "rea-fuzz", "version": "0"}}
    });
    let initialized = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    format!("{init}\n{initialized}\n")
}

fn ping_frame() -> String {
    format!("{}\n", serde_json::json!({"jsonrpc": "2.0", "id": PING_ID, "method": "ping"}))
}

fn state_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| rea_fuzz::fresh_dir("jsonrpc-state"))
}

/// Puts the root back as the seeds expect it (a tool may have exported a file over it).
fn restore_root() {
    let root = Path::new(ROOT);
    for (name, bytes) in ROOT_FILES {
        let path = root.join(name);
        if std::fs::read(&path).ok().as_deref() != Some(*bytes) {
            rea_fuzz::write_file(&path, bytes);
        }
    }
}

/// Removes whatever the input left behind: session directories and files exported under the
/// root.
fn clean_up() {
    let state = state_dir();
    if std::fs::read_dir(state).is_ok_and(|mut d| d.next().is_some()) {
        let _ = std::fs::remove_dir_all(state);
        let _ = std::fs::create_dir_all(state);
    }
    let keep: BTreeSet<PathBuf> = ROOT_FILES.iter().map(|(n, _)| Path::new(ROOT).join(n)).collect();
    let mut stack = vec![PathBuf::from(ROOT)];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path);
            } else if !keep.contains(&path) {
                let _ = std::fs::remove_file(&path);
            }
        }
    }
}

/// Ids of the well-formed requests in `frames`, parsed as rmcp parses them, and whether any
/// notification cancels a request (after which a request may rightly go unanswered).
fn expected_requests(frames: &[u8]) -> (BTreeSet<String>, bool) {
    let mut ids = BTreeSet::new();
    let mut cancels = false;
    for line in frames.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let line = line.strip_prefix(b"\xef\xbb\xbf".as_slice()).unwrap_or(line);
        match serde_json::from_slice::<ClientJsonRpcMessage>(line) {
            Ok(JsonRpcMessage::Request(request)) => {
                // A subscription stream stays open until it is cancelled or the client leaves.
                if request.request.method() != "subscriptions/listen" {
                    ids.insert(serde_json::to_string(&request.id).unwrap());
                }
            }
            Ok(JsonRpcMessage::Notification(n)) => {
                if matches!(n.notification, ClientNotification::CancelledNotification(_)) {
                    cancels = true;
                }
            }
            _ => {}
        }
    }
    (ids, cancels)
}

/// The id of `line` when it is a well-formed request that must be answered, parsed as rmcp
/// parses it.
fn request_id(line: &[u8]) -> Option<String> {
    match serde_json::from_slice::<ClientJsonRpcMessage>(line) {
        Ok(JsonRpcMessage::Request(request)) if request.request.method() != "subscriptions/listen" => {
            Some(serde_json::to_string(&request.id).unwrap())
        }
        _ => None,
    }
}

/// What the client has heard from the server so far.
struct Heard {
    rx: tokio::sync::mpsc::UnboundedReceiver<Value>,
    answered: BTreeSet<String>,
    ping_answered: bool,
    closed: bool,
    deadline: tokio::time::Instant,
}

impl Heard {
    /// Reads messages until `done` holds or the server closes; panics at the deadline.
    async fn until(&mut self, what: &str, done: impl Fn(&Heard) -> bool) {
        while !done(self) && !self.closed {
            match tokio::time::timeout_at(self.deadline, self.rx.recv()).await {
                Err(_) => panic!("hung: no {what} within {DEADLINE:?}; answered so far: {:?}", self.answered),
                Ok(None) => self.closed = true,
                Ok(Some(message)) => {
                    let is_response = message.get("method").is_none()
                        && (message.get("result").is_some() || message.get("error").is_some());
                    if let (true, Some(id)) = (is_response, message.get("id")) {
                        if id == PING_ID {
                            assert!(message["result"].is_object(), "ping answered with {message}");
                            self.ping_answered = true;
                        } else {
                            self.answered.insert(id.to_string());
                        }
                    }
                }
            }
        }
    }
}

/// How the input is sent.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    /// Handshake, then the whole input at once (requests run concurrently), then the ping.
    AfterHandshake,
    /// Handshake, then one line at a time, each request's answer awaited before the next line, so
    /// a sequence such as open_binary, list_procedures, analyze_function runs in order.
    Lockstep,
    /// The input first, before any handshake (rmcp may refuse and close), then handshake and ping.
    Raw,
}

async fn exchange(mode: Mode, frames: Vec<u8>) {
    let shared = Shared::new(Settings {
        state_dir: state_dir().to_path_buf(),
        config_dir: None,
        allowed_roots: rea::fsroot::Roots::new([PathBuf::from(ROOT)]),
    });
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    let server = ReaServer::new(shared);
    let server_task = tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let (read, write) = tokio::io::split(client_io);
    let mut write = Some(write);

    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Value>();
    let reader = tokio::spawn(async move {
        let mut read = BufReader::new(read);
        let mut line = Vec::new();
        loop {
            line.clear();
            match read.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let value: Value = serde_json::from_slice(&line).unwrap_or_else(|e| {
                        panic!("the server wrote a line that is not JSON ({e}): {}", rea_fuzz::excerpt(&line))
                    });
                    assert_eq!(value["jsonrpc"], "2.0", "not a JSON-RPC 2.0 message: {value}");
                    if tx.send(value).is_err() {
                        break;
                    }
                }
            }
        }
    });
    let mut heard = Heard {
        rx,
        answered: BTreeSet::new(),
        ping_answered: false,
        closed: false,
        deadline: tokio::time::Instant::now() + DEADLINE,
    };

    let (expected, cancels) = expected_requests(&frames);
    let mut frames = frames;
    if !frames.is_empty() && !frames.ends_with(b"\n") {
        frames.push(b'\n');
    }
    // The server may refuse the connection and go: writing then fails, which is fine.
    let writer = if mode == Mode::Lockstep {
        let write = write.as_mut().expect("the writing half");
        let _ = write.write_all(init_frames().as_bytes()).await;
        let init = serde_json::to_string(INIT_ID).unwrap();
        heard.until("initialize answer", |h| h.answered.contains(&init)).await;
        for line in frames.split_inclusive(|&b| b == b'\n') {
            let _ = write.write_all(line).await;
            let trimmed = line.strip_suffix(b"\n").unwrap_or(line);
            let trimmed = trimmed.strip_suffix(b"\r").unwrap_or(trimmed);
            let trimmed = trimmed.strip_prefix(b"\xef\xbb\xbf".as_slice()).unwrap_or(trimmed);
            if let Some(id) = request_id(trimmed) {
                heard.until("answer in lockstep", |h| h.answered.contains(&id)).await;
            }
        }
        let _ = write.write_all(ping_frame().as_bytes()).await;
        None
    } else {
        // All at once, from a task of its own: the server's answers may fill the pipe before the
        // input is written, and they are read here meanwhile.
        let mut write = write.take().expect("the writing half");
        Some(tokio::spawn(async move {
            let mut out = Vec::with_capacity(frames.len() + 512);
            if mode == Mode::AfterHandshake {
                out.extend_from_slice(init_frames().as_bytes());
            }
            out.extend_from_slice(&frames);
            if mode == Mode::Raw {
                out.extend_from_slice(init_frames().as_bytes());
            }
            out.extend_from_slice(ping_frame().as_bytes());
            let _ = write.write_all(&out).await;
            let _ = write.flush().await;
            write
        }))
    };

    heard
        .until("ping answer and answers to every request", |h| {
            h.ping_answered && (cancels || expected.is_subset(&h.answered))
        })
        .await;
    if mode != Mode::Raw {
        assert!(!heard.closed, "the server closed the connection after a completed handshake");
    }
    if !heard.closed && !cancels {
        assert!(
            expected.is_subset(&heard.answered),
            "requests without an answer: {:?}",
            expected.difference(&heard.answered).collect::<Vec<_>>()
        );
    }

    // Closing the client's writing side must end the server, which closes the reading side.
    let mut write = match writer {
        None => write.take().expect("the writing half"),
        Some(task) => tokio::time::timeout_at(heard.deadline, task)
            .await
            .expect("writing the input did not finish")
            .expect("the writer task"),
    };
    let _ = write.shutdown().await;
    drop(write);
    tokio::time::timeout_at(heard.deadline, server_task)
        .await
        .expect("the server did not stop after the client closed")
        .expect("the server task");
    drop(heard);
    let _ = tokio::time::timeout(DEADLINE, reader).await;
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, frames)) = data.split_first() else {
        return;
    };
    restore_root();
    let mode = match mode % 3 {
        0 => Mode::AfterHandshake,
        1 => Mode::Raw,
        _ => Mode::Lockstep,
    };
    rea_fuzz::runtime().block_on(exchange(mode, frames.to_vec()));
    clean_up();
});
