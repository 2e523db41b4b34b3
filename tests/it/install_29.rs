//! Installing and setting up rea as people expect (issue 29): a licensed package that installs
//! with one command, `rea mcp-config` for every client we know, and the rough edges a new user
//! met first (help, titles, state directory, colours, addresses, quiet ends, doctor's text).

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

use crate::http_sessions::HttpServer;

/// The repository root.
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The binary, by the path `mcp-config` prints for it.
fn binary() -> String {
    std::fs::canonicalize(env!("CARGO_BIN_EXE_rea"))
        .unwrap()
        .display()
        .to_string()
}

/// `rea ARGS` with exactly the environment `env` (nothing inherited), stdin empty.
fn rea(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rea"))
        .args(args)
        .env_clear()
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

#[test]
fn the_package_is_licensed_described_and_installs_in_one_line_regression_29() {
    let manifest: toml::Table = std::fs::read_to_string(root().join("Cargo.toml"))
        .unwrap()
        .parse()
        .unwrap();
    let package = manifest["package"].as_table().unwrap();
    assert_eq!(package["license"].as_str(), Some("MIT OR Apache-2.0"));
    assert_eq!(package["readme"].as_str(), Some("README.md"));
    // No `repository`: the project has no public address yet, and a guessed one would send
    // users (and crates.io) to someone else's page.
    assert!(package.get("repository").is_none());
    assert!(package["description"].as_str().unwrap().len() > 20);
    let words = |key: &str| -> Vec<String> {
        package[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect()
    };
    // crates.io takes at most five keywords.
    assert_eq!(words("keywords").len(), 5);
    assert!(words("categories").contains(&"command-line-utilities".to_owned()));
    // Both licenses the expression names are shipped, and the package includes them.
    let mit = std::fs::read_to_string(root().join("LICENSE-MIT")).unwrap();
    assert!(mit.starts_with("MIT License\n"));
    let apache = std::fs::read_to_string(root().join("LICENSE-APACHE")).unwrap();
    assert!(apache.contains("Apache License\n                        Version 2.0, January 2004"));
    let include = words("include");
    for file in [
        "/LICENSE-MIT",
        "/LICENSE-APACHE",
        "/README.md",
        "/migrations/**",
        "/src/**",
    ] {
        assert!(include.contains(&file.to_owned()), "{file}");
    }
    // The README's install command is the one CI runs, followed by the installed doctor.
    let install = "cargo install --locked --path .";
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    assert!(readme.contains(&format!("{install}      # from a clone")));
    let ci = std::fs::read_to_string(root().join(".ci/run")).unwrap();
    assert!(ci.contains(&format!("{install} --debug --root \"$install_root\"")));
    assert!(ci.contains("\"$install_root/bin/rea\" doctor"));
    assert!(ci.contains("cargo package --list --locked"));
}

/// `rea mcp-config CLIENT` with a state and a configuration directory.
fn mcp_config(client: &str, state: &Path, config: &Path, extra: &[&str]) -> String {
    let mut args = vec!["mcp-config", client];
    args.extend_from_slice(extra);
    let out = rea(
        &args,
        &[
            ("REA_STATE_DIR", state.to_str().unwrap()),
            ("REA_CONFIG_DIR", config.to_str().unwrap()),
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout)
}

#[test]
fn mcp_config_prints_each_clients_setup_of_this_binary_regression_29() {
    let state = tempfile::tempdir().unwrap();
    let config = tempfile::tempdir().unwrap();
    let (s, c) = (
        state.path().display().to_string(),
        config.path().display().to_string(),
    );
    let env = json!({ "REA_STATE_DIR": s, "REA_CONFIG_DIR": c });
    let stdio = json!({ "command": binary(), "args": ["serve"], "env": env });
    for (client, key) in [
        ("claude-desktop", "mcpServers"),
        ("cursor", "mcpServers"),
        ("gemini", "mcpServers"),
    ] {
        let printed: Value =
            serde_json::from_str(&mcp_config(client, state.path(), config.path(), &[])).unwrap();
        assert_eq!(printed, json!({ key: { "rea": stdio } }), "{client}");
    }
    let vscode: Value =
        serde_json::from_str(&mcp_config("vscode", state.path(), config.path(), &[])).unwrap();
    assert_eq!(
        vscode,
        json!({ "servers": { "rea": { "type": "stdio", "command": binary(), "args": ["serve"], "env": env } } })
    );
    let zed: Value =
        serde_json::from_str(&mcp_config("zed", state.path(), config.path(), &[])).unwrap();
    assert_eq!(
        zed,
        json!({ "context_servers": { "rea": { "source": "custom", "command": binary(), "args": ["serve"], "env": env } } })
    );
    let codex: toml::Table = mcp_config("codex", state.path(), config.path(), &[])
        .parse()
        .unwrap();
    let server = codex["mcp_servers"]["rea"].as_table().unwrap();
    assert_eq!(server["command"].as_str(), Some(binary().as_str()));
    assert_eq!(
        server["args"].as_array().unwrap(),
        &vec![toml::Value::from("serve")]
    );
    assert_eq!(server["env"]["REA_STATE_DIR"].as_str(), Some(s.as_str()));
    assert_eq!(server["env"]["REA_CONFIG_DIR"].as_str(), Some(c.as_str()));
    // The temporary directories hold no character a shell treats specially: no quotes.
    assert_eq!(
        mcp_config("claude-code", state.path(), config.path(), &[]),
        format!(
            "claude mcp add rea --scope user --transport stdio --env REA_STATE_DIR={s} --env REA_CONFIG_DIR={c} -- {} serve\n",
            binary()
        )
    );
}

#[test]
fn mcp_config_over_http_carries_the_token_a_client_connects_with_regression_29() {
    let state = tempfile::tempdir().unwrap();
    // No [http] tokens: the server generates one into <state>/http-token.
    let server = HttpServer::launch(state.path(), "", true);
    let config = tempfile::tempdir().unwrap();
    let address = format!("127.0.0.1:{}", server.port);
    let url = format!("http://{address}/mcp");
    let token = std::fs::read_to_string(state.path().join("http-token")).unwrap();
    let bearer = format!("Bearer {}", token.trim());
    let cursor: Value = serde_json::from_str(&mcp_config(
        "cursor",
        state.path(),
        config.path(),
        &["--http", &address],
    ))
    .unwrap();
    assert_eq!(
        cursor,
        json!({ "mcpServers": { "rea": { "url": url, "headers": { "Authorization": bearer } } } })
    );
    let vscode: Value = serde_json::from_str(&mcp_config(
        "vscode",
        state.path(),
        config.path(),
        &["--http", &address],
    ))
    .unwrap();
    assert_eq!(
        vscode,
        json!({ "servers": { "rea": { "type": "http", "url": url, "headers": { "Authorization": bearer } } } })
    );
    let gemini: Value = serde_json::from_str(&mcp_config(
        "gemini",
        state.path(),
        config.path(),
        &["--http", &address],
    ))
    .unwrap();
    assert_eq!(gemini["mcpServers"]["rea"]["httpUrl"], json!(url));
    let codex: toml::Table =
        mcp_config("codex", state.path(), config.path(), &["--http", &address])
            .parse()
            .unwrap();
    assert_eq!(
        codex["mcp_servers"]["rea"]["url"].as_str(),
        Some(url.as_str())
    );
    assert_eq!(
        codex["mcp_servers"]["rea"]["http_headers"]["Authorization"].as_str(),
        Some(bearer.as_str())
    );
    assert_eq!(
        mcp_config(
            "claude-code",
            state.path(),
            config.path(),
            &["--http", &address]
        ),
        format!(
            "claude mcp add rea --scope user --transport http {url} --header 'Authorization: {bearer}'\n"
        )
    );
    // The header printed is the one the server takes: initialize with it opens an MCP session.
    let header = cursor["mcpServers"]["rea"]["headers"]["Authorization"]
        .as_str()
        .unwrap();
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let answer = server.exchange(
        "POST",
        &format!("Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nAuthorization: {header}\r\n"),
        initialize,
    );
    assert_eq!(answer.status, 200);
    let id = answer
        .head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .starts_with("mcp-session-id:")
                .then(|| l[15..].trim().to_owned())
        })
        .unwrap();
    // Its DELETE answers 204: the session is gone when the answer comes.
    let deleted = server.exchange(
        "DELETE",
        &format!("Authorization: {header}\r\nMcp-Session-Id: {id}\r\nMcp-Protocol-Version: 2025-11-25\r\n"),
        "",
    );
    assert_eq!(deleted.status, 204, "{}", deleted.head);
    assert_eq!(deleted.body, b"");
    let again = server.exchange(
        "DELETE",
        &format!("Authorization: {header}\r\nMcp-Session-Id: {id}\r\nMcp-Protocol-Version: 2025-11-25\r\n"),
        "",
    );
    assert_eq!(again.status, 404);
}

#[test]
fn help_lists_every_environment_variable_rea_reads_regression_29() {
    let out = rea(&["--help"], &[]);
    assert!(out.status.success());
    let help = text(&out.stdout);
    for variable in [
        "REA_STATE_DIR",
        "XDG_STATE_HOME",
        "HOME",
        "REA_CONFIG_DIR",
        "REA_ALLOWED_ROOTS",
        "REA_ANGR_PYTHON",
        "GHIDRA_INSTALL_DIR",
        "PATH",
        "REA_LOG",
    ] {
        assert!(
            help.lines()
                .any(|l| l.starts_with(&format!("  {variable} "))),
            "{variable} missing from --help:\n{help}"
        );
    }
    // And every one the sources read is in that list.
    let mut read = std::collections::BTreeSet::new();
    let pattern = regex::Regex::new(r#"var(?:_os)?\("([A-Z_]+)"\)"#).unwrap();
    let mut stack = vec![root().join("src")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let source = std::fs::read_to_string(&path).unwrap();
                for m in pattern.captures_iter(&source) {
                    read.insert(m[1].to_owned());
                }
            }
        }
    }
    // The fixture root, Cargo's home (where the matching test finds Lua's sources) and the
    // switch that writes `src/store/fresh.sql` again are tests' variables, not a user's.
    read.remove("REA_FIXTURES");
    read.remove("CARGO_HOME");
    read.remove("REA_WRITE_FRESH_SCHEMA");
    for variable in read {
        assert!(help.contains(&format!("  {variable} ")), "{variable}");
    }
}

#[test]
fn without_home_or_state_dir_rea_asks_for_rea_state_dir_regression_29() {
    let cwd = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_rea"))
        .arg("serve")
        .env_clear()
        .current_dir(cwd.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        "rea: no state directory: set REA_STATE_DIR (or --state-dir) to the directory rea keeps its sessions in; HOME and XDG_STATE_HOME are not set\n"
    );
    // Nothing was made in the working directory.
    assert_eq!(std::fs::read_dir(cwd.path()).unwrap().count(), 0);
}

#[test]
fn serve_with_stdin_at_eof_before_initialize_exits_0_quietly_regression_29() {
    let state = tempfile::tempdir().unwrap();
    let out = rea(
        &["serve"],
        &[("REA_STATE_DIR", state.path().to_str().unwrap())],
    );
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text(&out.stderr), "");
    assert_eq!(text(&out.stdout), "");
}

#[test]
fn logs_to_a_pipe_carry_no_colour_codes_regression_29() {
    let state = tempfile::tempdir().unwrap();
    let out = rea(
        &["serve"],
        &[
            ("REA_STATE_DIR", state.path().to_str().unwrap()),
            ("REA_LOG", "trace"),
        ],
    );
    let log = text(&out.stderr);
    assert!(log.lines().count() > 0, "nothing logged at trace");
    assert!(!log.contains('\u{1b}'), "{log:?}");
}

#[test]
fn http_takes_host_names_resolving_to_loopback_only_regression_29() {
    let state = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_rea"))
        .args(["serve", "--http", "localhost:0"])
        .env_clear()
        .env("REA_STATE_DIR", state.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stderr.take().unwrap()),
        &mut line,
    )
    .unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        line.starts_with("rea: serving MCP over streamable HTTP at http://127.0.0.1:"),
        "{line}"
    );
    let out = rea(
        &["serve", "--http", "0.0.0.0:8765"],
        &[("REA_STATE_DIR", state.path().to_str().unwrap())],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains(
        "--http serves on loopback only (127.0.0.1, ::1 or a name resolving only to them), and 0.0.0.0:8765 resolves to 0.0.0.0:8765"
    ));
}

#[test]
fn doctor_text_says_what_its_json_says_regression_29() {
    let state = tempfile::tempdir().unwrap();
    let s = state.path().display().to_string();
    let out = rea(&["doctor"], &[("REA_STATE_DIR", &s)]);
    assert!(out.status.success());
    let lines: Vec<String> = text(&out.stdout).lines().map(str::to_owned).collect();
    assert_eq!(
        lines[1..6],
        [
            format!("state directory: {s} (writable)"),
            "config directory: not set (REA_CONFIG_DIR)".to_owned(),
            "allowed roots: any path (REA_ALLOWED_ROOTS not set)".to_owned(),
            "prompts: 6".to_owned(),
            "process capture: disabled: an operator enables it in $REA_CONFIG_DIR/rea.toml ([capture] enabled = true with roots)".to_owned(),
        ]
    );
}

#[tokio::test]
async fn every_tool_has_a_title_regression_29() {
    let h = crate::common::start().await;
    let tools = h.client.list_all_tools().await.unwrap();
    // 34 of the 35: capture_process_scenario is listed only when capture is enabled.
    assert_eq!(tools.len(), 34);
    let untitled: Vec<&str> = tools
        .iter()
        .filter(|t| t.title.as_deref().is_none_or(str::is_empty))
        .map(|t| t.name.as_ref())
        .collect();
    assert_eq!(untitled, Vec::<&str>::new());
    let open = tools.iter().find(|t| t.name == "open_binary").unwrap();
    assert_eq!(open.title.as_deref(), Some("Open binary"));
}

#[tokio::test]
async fn every_path_argument_of_the_prompts_completes_beneath_the_roots_regression_29() {
    use std::os::unix::fs::PermissionsExt;
    let root = tempfile::tempdir().unwrap();
    let r = root.path().canonicalize().unwrap();
    std::fs::create_dir_all(r.join("Notes.app/Contents")).unwrap();
    std::fs::create_dir(r.join("work")).unwrap();
    let mut elf = b"\x7fELF\x02\x01\x01".to_vec();
    elf.resize(64, 0);
    std::fs::write(r.join("notes"), elf).unwrap();
    std::fs::write(r.join("run.sh"), "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(r.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(r.join("README.txt"), "text").unwrap();
    let h = crate::common::start_confined(
        crate::common::Mode::Legacy,
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        vec![r.clone()],
    )
    .await;
    let base = format!("{}/", r.display());
    let d = |name: &str| format!("{base}{name}");
    for (prompt, argument, expected) in [
        (
            "investigate_feature",
            "target_path",
            vec![d("Notes.app/"), d("work/"), d("notes")],
        ),
        (
            "compare_application_versions",
            "left_target_path",
            vec![d("Notes.app/"), d("work/"), d("notes")],
        ),
        (
            "compare_application_versions",
            "right_target_path",
            vec![d("Notes.app/"), d("work/"), d("notes")],
        ),
        (
            "trace_crash",
            "target_path",
            vec![d("Notes.app/"), d("work/"), d("notes")],
        ),
        (
            "prepare_bounded_process_capture",
            "executable",
            vec![d("Notes.app/"), d("work/"), d("run.sh")],
        ),
        (
            "prepare_bounded_process_capture",
            "working_directory",
            vec![d("Notes.app/"), d("work/")],
        ),
    ] {
        let c = h.complete(prompt, argument, &base).await;
        assert_eq!(c.values, expected, "{prompt}.{argument}");
        assert_eq!(c.total, Some(expected.len() as u32));
    }
    // Nothing typed: the root; a directory outside it: nothing.
    assert_eq!(
        h.complete("investigate_feature", "target_path", "")
            .await
            .values,
        std::slice::from_ref(&base)
    );
    let outside = tempfile::tempdir().unwrap();
    let outside = format!("{}/", outside.path().canonicalize().unwrap().display());
    assert!(
        h.complete("investigate_feature", "target_path", &outside)
            .await
            .values
            .is_empty()
    );
}

#[tokio::test]
async fn a_session_argument_naming_another_session_is_an_error_on_stdio_regression_29() {
    let h = crate::common::start().await;
    let other = "ses_0000000000000_00000000000000000000000000000000";
    // No binary session open on this connection: naming one is not silently a new one.
    let params = rmcp::model::CallToolRequestParams::new("binary_session")
        .with_arguments(json!({ "session": other }).as_object().cloned().unwrap());
    let refused = h.client.call_tool(params).await.unwrap_err().to_string();
    assert!(
        refused.contains(&format!(
            "this connection has no binary session open, so none is {other}"
        )),
        "{refused}"
    );
    let opened = h
        .call("open_binary", json!({ "path": env!("CARGO_BIN_EXE_rea") }))
        .await;
    let own = opened["session_id"].as_str().unwrap().to_owned();
    let params = rmcp::model::CallToolRequestParams::new("binary_session")
        .with_arguments(json!({ "session": other }).as_object().cloned().unwrap());
    let refused = h.client.call_tool(params).await.unwrap_err().to_string();
    assert!(
        refused.contains(&format!(
            "this connection's binary session is {own}, not {other}"
        )),
        "{refused}"
    );
    // Its own id is accepted.
    let named = h.call("binary_session", json!({ "session": own })).await;
    assert_eq!(named["open"], true);
}

#[test]
fn a_session_argument_naming_another_session_is_an_error_in_legacy_http_regression_29() {
    let state = tempfile::tempdir().unwrap();
    let server = HttpServer::start(state.path(), "");
    let mcp = server.connect_as(crate::http_sessions::ALICE);
    let other = "ses_0000000000000_00000000000000000000000000000000";
    let (_, messages) = server.post_as(
        crate::http_sessions::ALICE,
        Some(&mcp),
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "binary_session", "arguments": {"session": other}}}),
    );
    let answer = messages.iter().find(|m| m["id"] == 2).unwrap();
    assert_eq!(answer["error"]["code"], -32602);
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with(&format!(
                "this connection has no binary session open, so none is {other}"
            )),
        "{answer}"
    );
}

#[tokio::test]
async fn a_cut_analysis_keeps_a_share_of_each_list_ipc_first_regression_29() {
    // The issue's app: 6,000 IPC channels (2,000 listed) beside 1,000 navigation entries. The
    // IPC map used to be cut to nothing so that navigation could stay whole.
    let dir = tempfile::tempdir().unwrap();
    let app = dir.path().join("app");
    std::fs::create_dir_all(&app).unwrap();
    std::fs::write(app.join("package.json"), r#"{"name":"x","main":"main.js"}"#).unwrap();
    let mut main = String::from("const { ipcMain, shell } = require('electron');\n");
    for i in 0..6_000 {
        main.push_str(&format!(
            "ipcMain.handle('channel-with-a-long-name-{i}', () => {{}});\n"
        ));
    }
    for i in 0..1_000 {
        main.push_str(&format!(
            "shell.openExternal('https://example.com/a/long/path/to/page/{i}');\n"
        ));
    }
    std::fs::write(app.join("main.js"), &main).unwrap();
    let h = crate::common::start().await;
    let analyzed = h
        .call(
            "analyze_javascript_application",
            json!({ "input_path": app }),
        )
        .await;
    let cuts: Vec<(String, u64, u64)> = analyzed["truncated"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["list"].as_str().unwrap().to_owned(),
                c["shown"].as_u64().unwrap(),
                c["total"].as_u64().unwrap(),
            )
        })
        .collect();
    let shown = |list: &str| {
        cuts.iter()
            .find(|c| c.0 == list)
            .map(|c| (c.1, c.2))
            .unwrap_or_else(|| panic!("{list} not cut: {cuts:?}"))
    };
    // Largest first, the old order, cut the IPC map by all the excess and left navigation
    // whole; in shares, IPC keeps half the room and navigation the other half.
    assert_eq!(shown("ipc"), (610, 2_000));
    assert_eq!(shown("navigation"), (705, 1_000));
    let names: Vec<&str> = cuts.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(names, ["occurrences", "modules", "ipc", "navigation"]);
    assert_eq!(analyzed["ipc"].as_array().unwrap().len(), 610);
    assert_eq!(analyzed["navigation"].as_array().unwrap().len(), 705);
}
