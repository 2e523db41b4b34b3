//! The command line: `rea serve`, `mcp-config`, `doctor`, `sessions`, `evidence`, `complete`, `analyze`,
//! `inspect`, `compare`, `capture`, `documents`, `procedures`. Every command runs over the same library the server uses.

mod analyze;
mod ledger;
mod mcp_config;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Parser, Subcommand};

use crate::completion::{self, CompletionPage, Family};
use crate::investigation::{
    self, Address, DoctorArgs, Investigation, ListProceduresArgs, ReadOnlySession,
};
use crate::server::{ReaServer, Shared};
use crate::settings::Settings;

/// Every environment variable rea reads, as `--help` lists them.
const ENVIRONMENT_HELP: &str = "\
Environment:
  REA_STATE_DIR       where sessions and the generated HTTP token live (else $XDG_STATE_HOME/rea,
                      else ~/.local/state/rea; with no HOME either, rea asks for this variable)
  XDG_STATE_HOME      the base of the default state directory
  HOME                the base of the default state directory when XDG_STATE_HOME is not set
  REA_CONFIG_DIR      rea.toml (capture policy, [http] tokens, [sessions], [messages],
                      [providers.angr]) and operator prompts under prompts/
  REA_ALLOWED_ROOTS   directories every path must resolve beneath, separated by ':' (default:
                      any path)
  REA_ANGR_PYTHON     the Python interpreter with angr, for the angr decompiler
  GHIDRA_INSTALL_DIR  a Ghidra installation, offered as a deep provider candidate
  PATH                where objdump, llvm-objdump and gdb are looked for as deep candidates
  REA_LOG             what is logged to stderr, a tracing filter (default warn; e.g. info, rea=debug)";

/// rea: investigate shipped software over MCP, keeping every observation as auditable Evidence.
#[derive(Debug, Parser)]
#[command(name = "rea", version, about, after_help = ENVIRONMENT_HELP)]
pub struct Cli {
    /// State directory holding session databases (else $REA_STATE_DIR, $XDG_STATE_HOME/rea,
    /// ~/.local/state/rea).
    #[arg(long, global = true)]
    pub state_dir: Option<PathBuf>,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve MCP over stdio (stdout carries only MCP frames; logs go to stderr).
    Serve {
        /// Serve streamable HTTP at this loopback address (for example 127.0.0.1:8765 or
        /// localhost:8765) instead of stdio, at path /mcp. Each MCP session gets its own binary
        /// session.
        #[arg(long, value_name = "ADDR", value_parser = loopback)]
        http: Option<std::net::SocketAddr>,
    },
    /// Print the ready-to-paste setup of an MCP client for this rea binary.
    McpConfig {
        /// The client.
        client: mcp_config::Client,
        /// The setup of `rea serve --http ADDR` (its URL and bearer-token header) instead of stdio.
        #[arg(long, value_name = "ADDR", value_parser = loopback_text)]
        http: Option<String>,
    },
    /// Check the host, and whether TARGET would open as a target.
    Doctor {
        /// A file or .app bundle to check.
        target: Option<PathBuf>,
        /// Print the Evidence record (and id) of the check, as the server records it.
        #[arg(long)]
        json: bool,
    },
    /// List, show or prune sessions on disk.
    Sessions {
        #[command(subcommand)]
        action: Option<SessionsAction>,
        /// Print JSON.
        #[arg(long, global = true)]
        json: bool,
    },
    /// Read a session's Evidence ledger: list, show, verify, export.
    Evidence {
        #[command(subcommand)]
        action: ledger::EvidenceAction,
    },
    /// Complete a guided-prompt argument exactly as the server would, for a session.
    Complete {
        /// Prompt name, for example investigate_feature (`annotate` with argument `supersedes`
        /// completes annotation ids).
        prompt: String,
        /// Argument name, for example procedure.
        argument: String,
        /// What has been typed so far.
        #[arg(default_value = "")]
        prefix: String,
        /// Session to complete from (default: the only session on disk, if there is one).
        #[arg(long)]
        session: Option<String>,
        /// The `document` context argument, forwarded to procedure completion.
        #[arg(long)]
        document: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Analyze a JavaScript/Electron directory, app.asar or .app with an app.asar (a report of
    /// findings and the IPC map), or inventory any other binary or bundle.
    Analyze {
        /// The application, archive, binary or bundle.
        path: PathBuf,
        /// Print the Evidence record as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Inventory a binary or .app bundle: parts, edges, occurrences, findings.
    Inspect {
        /// A file or .app bundle.
        target: PathBuf,
        /// Print the Evidence record as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Compare two versions of an artifact.
    Compare {
        /// The older artifact.
        left: PathBuf,
        /// The newer artifact.
        right: PathBuf,
        /// Print the Evidence record as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run one bounded scenario (a JSON file with the capture_process_scenario arguments) under
    /// the capture policy of $REA_CONFIG_DIR/rea.toml.
    Capture {
        /// The scenario file.
        scenario: PathBuf,
        /// Print the Evidence record as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print the documents of TARGET, without a server.
    Documents {
        /// A file or .app bundle.
        target: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print the procedure inventory of TARGET, without a server (one JSON object per procedure
    /// with --json; the list_procedures Evidence record of one page with --evidence).
    Procedures {
        /// A file or .app bundle.
        target: PathBuf,
        /// Only this document.
        #[arg(long)]
        document: Option<String>,
        /// Print one JSON object per line.
        #[arg(long, conflicts_with = "evidence")]
        json: bool,
        /// Print the Evidence record (and id) list_procedures keeps for the page that --offset
        /// and --limit select, as the server records it.
        #[arg(long)]
        evidence: bool,
        /// With --evidence: procedures to skip.
        #[arg(long, default_value_t = 0, requires = "evidence")]
        offset: u64,
        /// With --evidence: procedures in the page (default 50, at most 500).
        #[arg(long, requires = "evidence")]
        limit: Option<u64>,
    },
}

/// Session subcommands.
#[derive(Debug, Subcommand)]
pub enum SessionsAction {
    /// List sessions (the default).
    List,
    /// Show one session.
    Show {
        /// Session id.
        id: String,
    },
    /// Delete sessions no live process holds. Sessions never exported are kept unless --force.
    Prune {
        /// Also delete sessions that were never exported.
        #[arg(long)]
        force: bool,
    },
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let settings = Settings::from_env(cli.state_dir.as_deref())?;
    match cli.command {
        Command::Serve { http: None } => serve(settings),
        Command::Serve { http: Some(addr) } => serve_http(settings, addr),
        Command::McpConfig { client, http } => {
            mcp_config::print(&settings, client, http.as_deref())
        }
        Command::Doctor { target, json } => doctor(settings, target.as_deref(), json),
        Command::Sessions { action, json } => {
            sessions(&settings, action.unwrap_or(SessionsAction::List), json)
        }
        Command::Evidence { action } => ledger::run(&settings, action),
        Command::Complete {
            prompt,
            argument,
            prefix,
            session,
            document,
            json,
        } => complete(
            &settings,
            &prompt,
            &argument,
            &prefix,
            session.as_deref(),
            document.as_deref(),
            json,
        ),
        Command::Analyze { path, json } => {
            analyze::analyze(&Shared::new(settings).investigation(), &path, json)
        }
        Command::Inspect { target, json } => {
            analyze::inspect(&Shared::new(settings).investigation(), &target, json)
        }
        Command::Compare { left, right, json } => {
            analyze::compare(&Shared::new(settings).investigation(), &left, &right, json)
        }
        Command::Capture { scenario, json } => analyze::capture(&settings, &scenario, json),
        Command::Documents { target, json } => documents(&target, json),
        Command::Procedures {
            target,
            document,
            json,
            evidence,
            offset,
            limit,
        } => match evidence {
            true => procedures_evidence(
                &Shared::new(settings).investigation(),
                &target,
                ListProceduresArgs {
                    document,
                    offset,
                    limit,
                },
            ),
            false => procedures(&target, document.as_deref(), json),
        },
    }
}

/// `--http ADDR` of `serve`: the loopback address it names.
fn loopback(text: &str) -> Result<std::net::SocketAddr, String> {
    crate::transport::http::loopback_address(text).map_err(|e| e.to_string())
}

/// `--http ADDR` of `mcp-config`: the text as given (a client connects to the name), once it is
/// known to name loopback only.
fn loopback_text(text: &str) -> Result<String, String> {
    loopback(text).map(|_| text.to_owned())
}

fn serve(settings: Settings) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        use rmcp::ServiceExt;
        let shared = Shared::new(settings);
        let _watcher = crate::server::watch_config(shared.clone());
        let service = match ReaServer::new(shared)
            .serve(crate::transport::stdio::stdio())
            .await
        {
            Ok(service) => service,
            // Input that ends before the handshake (`rea serve </dev/null`, a client probing
            // that the binary starts) asked for nothing, so nothing failed: exit 0, quietly.
            Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => {
                return anyhow::Ok(());
            }
            Err(e) => return Err(e).context("starting the MCP service"),
        };
        service.waiting().await.context("serving MCP over stdio")?;
        anyhow::Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}

fn serve_http(settings: Settings, addr: std::net::SocketAddr) -> anyhow::Result<ExitCode> {
    use crate::settings::http::{self, HttpAuth};
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    };
    // `--http` took loopback addresses only (see `loopback`); checked again for any other caller.
    if !addr.ip().is_loopback() {
        bail!("--http serves on loopback only (127.0.0.1 or ::1), not {addr}");
    }
    // Who may call is settled before anything listens: a table that does not do stops the
    // start, and a generated token is in its file before a client can learn the address.
    let (auth, notice) = match http::load(settings.config_dir.as_deref())? {
        HttpAuth::None => (
            crate::transport::http::Auth::Off,
            "rea: WARNING: [http] auth = \"none\" in rea.toml: every local program can call this server, read and change every session; use it only for throwaway work".to_owned(),
        ),
        HttpAuth::Bearer(tokens) if tokens.is_empty() => {
            let (token, path) = http::generate_token(&settings.state_dir)?;
            let principal = crate::settings::Principal::token(http::GENERATED_PRINCIPAL);
            (
                crate::transport::http::Auth::bearer(&[(principal, token)]),
                format!(
                    "rea: clients send `Authorization: Bearer <token>` with the token in {} (made at this start; [http] tokens in rea.toml names tokens of your own)",
                    path.display()
                ),
            )
        }
        HttpAuth::Bearer(tokens) => (
            crate::transport::http::Auth::bearer(&tokens),
            format!(
                "rea: clients send `Authorization: Bearer <token>` with one of the {} tokens of [http] in rea.toml",
                tokens.len()
            ),
        ),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let shared = Shared::new(settings);
        let _watcher = crate::server::watch_config(shared.clone());
        // A client that vanishes without DELETE leaves its session idle: it is ended after the
        // configured idle timeout, which releases its binary session (resumable on disk).
        let mut manager = LocalSessionManager::default();
        manager.session_config.keep_alive = Some(shared.session_limits().idle_timeout);
        let sessions = std::sync::Arc::new(manager);
        let config = StreamableHttpServerConfig::default();
        let max_body = config.max_request_body_bytes;
        let service: StreamableHttpService<ReaServer, LocalSessionManager> =
            StreamableHttpService::new(
                {
                    let shared = shared.clone();
                    move || Ok(ReaServer::for_http(shared.clone()))
                },
                sessions.clone(),
                config,
            );
        // Stateless requests' binary sessions are released once idle, as MCP sessions are.
        let _sweeper = tokio::spawn({
            let shared = shared.clone();
            async move {
                let every = (shared.session_limits().idle_timeout / 4)
                    .clamp(Duration::from_millis(100), Duration::from_secs(5));
                let mut tick = tokio::time::interval(every);
                loop {
                    tick.tick().await;
                    shared.release_idle();
                }
            }
        });
        let router = crate::transport::http::strict(
            axum::Router::new().nest_service("/mcp", service),
            sessions,
            max_body,
            auth,
        );
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("binding {addr}"))?;
        // The bound address, so that port 0 (any free port) tells the client where to connect.
        let bound = listener.local_addr().unwrap_or(addr);
        // One write, the address first (supervisors read that line); a reader that is gone
        // does not stop the server.
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            format!("rea: serving MCP over streamable HTTP at http://{bound}/mcp\n{notice}\n")
                .as_bytes(),
        );
        axum::serve(listener, router)
            .await
            .context("serving HTTP")?;
        anyhow::Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}

fn print_json<T: serde::Serialize>(value: &T) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

fn doctor(settings: Settings, target: Option<&Path>, json: bool) -> anyhow::Result<ExitCode> {
    let shared = Shared::new(settings);
    let args = DoctorArgs {
        target: target.map(|t| t.display().to_string()),
    };
    let (report, recording) = shared
        .investigation()
        .doctor_detached(args, shared.prompt_count())?;
    if json {
        analyze::print_recording(&recording)?;
    } else {
        println!("rea {}", report.version);
        // Everything --json says, so that a person reading the text sees all the check knows.
        println!(
            "state directory: {} ({})",
            report.state_dir,
            if report.state_dir_writable {
                "writable"
            } else {
                "NOT writable: sessions cannot be created"
            }
        );
        match &report.config_dir {
            Some(d) => println!("config directory: {d}"),
            None => println!("config directory: not set (REA_CONFIG_DIR)"),
        }
        println!(
            "allowed roots: {}",
            if report.allowed_roots.is_empty() {
                "any path (REA_ALLOWED_ROOTS not set)".to_owned()
            } else {
                report.allowed_roots.join(", ")
            }
        );
        println!("prompts: {}", report.prompts);
        println!("process capture: {}", report.process_capture);
        let ids: Vec<&str> = report
            .deep_candidates
            .iter()
            .map(|c| c.id.as_str())
            .collect();
        println!(
            "deep provider candidates: {}",
            if ids.is_empty() {
                "none".into()
            } else {
                ids.join(", ")
            }
        );
        if let Some(c) = &report.target {
            if c.admitted {
                println!(
                    "target {}: opens as {} ({}), documents: {}",
                    c.path,
                    c.format.map(|f| f.as_str()).unwrap_or("?"),
                    c.architecture.map(|a| a.as_str()).unwrap_or("?"),
                    c.documents.join(", ")
                );
            } else {
                println!(
                    "target {}: not admitted: {}",
                    c.path,
                    c.refusal.as_deref().unwrap_or("")
                );
                if let Some(a) = &c.available_action {
                    println!("available analysis: {a}");
                }
            }
        }
    }
    Ok(match &report.target {
        Some(c) if !c.admitted => ExitCode::from(2),
        _ => ExitCode::SUCCESS,
    })
}

fn sessions(settings: &Settings, action: SessionsAction, json: bool) -> anyhow::Result<ExitCode> {
    let dir = &settings.state_dir;
    match action {
        SessionsAction::List => {
            let list = investigation::list_sessions(settings)?;
            if json {
                print_json(&list)?;
            } else if list.is_empty() {
                println!("no sessions under {}", dir.display());
            } else {
                println!(
                    "{:<32} {:<9} {:>9} {:<24} active target",
                    "session", "state", "evidence", "created"
                );
                for s in list {
                    println!(
                        "{:<32} {:<9} {:>9} {:<24} {}",
                        s.id,
                        if s.live { "live" } else { "resumable" },
                        s.evidence
                            .map(|n| n.to_string())
                            .unwrap_or_else(|| "?".into()),
                        s.created_at.unwrap_or_default(),
                        s.active_target.unwrap_or_default()
                    );
                }
            }
        }
        SessionsAction::Show { id } => {
            let info = investigation::show_session(settings, &id)?;
            if json {
                print_json(&info)?;
            } else {
                println!(
                    "session {}\n  directory: {}\n  state: {}\n  created: {}\n  exported: {}\n  evidence rows: {}\n  active target: {}\n  bytes: {}",
                    info.id,
                    info.dir,
                    if info.live { "live" } else { "resumable" },
                    info.created_at.unwrap_or_default(),
                    info.exported_at.unwrap_or_else(|| "never".into()),
                    info.evidence.unwrap_or(0),
                    info.active_target.unwrap_or_default(),
                    info.bytes
                );
            }
        }
        SessionsAction::Prune { force } => {
            let pruned = investigation::prune_sessions(settings, force)?;
            for (id, e) in &pruned.failed {
                eprintln!("rea: keeping {id}: {e}");
            }
            let (deleted, kept) = (pruned.deleted, pruned.kept_unexported);
            if json {
                print_json(&serde_json::json!({ "deleted": deleted, "kept_unexported": kept }))?;
            } else {
                for id in &deleted {
                    println!("deleted {id}");
                }
                for id in &kept {
                    println!("kept {id}: never exported (rea evidence export, or prune --force)");
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The session a CLI command reads: the named one, or the only one on disk.
pub(crate) fn session_id(settings: &Settings, id: Option<&str>) -> anyhow::Result<Option<String>> {
    let id = match id {
        Some(id) => id.to_owned(),
        None => {
            let all = investigation::list_sessions(settings)?;
            match all.as_slice() {
                [] => return Ok(None),
                [one] => one.id.clone(),
                many => bail!(
                    "several sessions exist; choose one with --session: {}",
                    many.iter()
                        .map(|s| s.id.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            }
        }
    };
    Ok(Some(id))
}

/// Opens a session's database for reading by a CLI command (the named session, or the only
/// one): read-only, taking no lock and writing nothing, so it works beside a live server and on
/// a read-only file system.
pub(crate) fn open_read_only(
    settings: &Settings,
    id: Option<&str>,
) -> anyhow::Result<Option<ReadOnlySession>> {
    let Some(id) = session_id(settings, id)? else {
        return Ok(None);
    };
    Ok(Some(ReadOnlySession::open(settings, &id)?))
}

fn complete(
    settings: &Settings,
    prompt: &str,
    argument: &str,
    prefix: &str,
    session: Option<&str>,
    document: Option<&str>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    // `annotate`'s `supersedes` is a tool argument, not a prompt's: it completes annotation ids.
    if prompt == "annotate" && argument == "supersedes" {
        let store = open_read_only(settings, session)?;
        let page = completion::complete_annotations(
            store.as_ref().map(ReadOnlySession::completion_source),
            prefix,
            completion::MAX_VALUES,
        );
        return print_completion(&page, json);
    }
    let shared = Shared::new(settings.clone());
    let def = shared
        .catalog
        .read()
        .map_err(|_| anyhow::anyhow!("prompt catalog poisoned"))?
        .get(prompt);
    let Some(def) = def else {
        bail!("unknown prompt {prompt:?}")
    };
    let family: Option<Family> = def.argument(argument).and_then(|a| a.completion);
    if let Some(f) = family.filter(|f| f.is_path()) {
        return print_completion(&shared.complete_path(f, prefix), json);
    }
    let store = open_read_only(settings, session)?;
    let page = match family {
        Some(f) => completion::complete(
            store.as_ref().map(ReadOnlySession::completion_source),
            f,
            prefix,
            document,
            completion::MAX_VALUES,
        ),
        None => Default::default(),
    };
    print_completion(&page, json)
}

fn print_completion(page: &CompletionPage, json: bool) -> anyhow::Result<ExitCode> {
    if json {
        print_json(
            &serde_json::json!({ "values": page.values, "total": page.total, "hasMore": page.has_more }),
        )?;
    } else {
        for v in &page.values {
            println!("{v}");
        }
        if page.has_more {
            eprintln!("({} of {} shown)", page.values.len(), page.total);
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn documents(target: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let t = investigation::read_target(target)?;
    if json {
        print_json(&t.documents)?;
    } else {
        println!("{} ({}, {})", t.path.display(), t.format, t.architecture);
        for d in &t.documents {
            println!("  {}\t{}\t{}\t{}", d.name, d.format, d.architecture, d.role);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `rea procedures TARGET --evidence`: the list_procedures record of one page.
fn procedures_evidence(
    investigation: &Investigation,
    target: &Path,
    args: ListProceduresArgs,
) -> anyhow::Result<ExitCode> {
    let (_, recording) = investigation.list_procedures_detached(target, args)?;
    analyze::print_recording(&recording)?;
    Ok(ExitCode::SUCCESS)
}

/// One line of `rea procedures --json`, written straight from the inventory (building a
/// `serde_json::Value` per procedure cost as much as parsing the file). Keys in the order
/// they always had.
#[derive(serde::Serialize)]
struct ProcedureLine<'a> {
    address: &'a str,
    document: &'a str,
    name: Option<&'a str>,
    size: Option<u64>,
    /// How a procedure no table lists was found; absent for a listed one, so lines of listed
    /// procedures read as they always did.
    #[serde(skip_serializing_if = "Option::is_none")]
    found_by: Option<&'static str>,
}

fn procedures(target: &Path, document: Option<&str>, json: bool) -> anyhow::Result<ExitCode> {
    use std::io::Write;
    let documents = investigation::documents_at(target)?;
    if let Some(d) = document
        && !documents.iter().any(|x| x.name == d)
    {
        bail!("no document {d:?} in {}", target.display());
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for doc in documents
        .iter()
        .filter(|d| document.is_none_or(|n| n == d.name))
    {
        for p in investigation::procedures_of(doc)? {
            let address = Address(p.address).to_string();
            if json {
                serde_json::to_writer(
                    &mut out,
                    &ProcedureLine {
                        address: &address,
                        name: p.name.as_deref(),
                        size: p.size,
                        document: &doc.name,
                        found_by: p.found_by.map(|f| f.as_str()),
                    },
                )?;
                writeln!(out)?;
            } else {
                writeln!(
                    out,
                    "{}\t{}\t{}\t{}",
                    doc.name,
                    address,
                    p.size.map(|s| s.to_string()).unwrap_or_default(),
                    p.name.unwrap_or_default()
                )?;
            }
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
