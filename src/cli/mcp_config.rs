//! `rea mcp-config <client>`: the ready-to-paste setup of each MCP client we know, pointing at
//! the running binary, with the state and configuration variables this shell has.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use serde_json::json;

use crate::settings::Settings;
use crate::settings::http::{self, HttpAuth};

/// The clients `rea mcp-config` writes a setup for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Client {
    /// Claude Code: a `claude mcp add` command line.
    ClaudeCode,
    /// Claude Desktop: `claude_desktop_config.json`.
    ClaudeDesktop,
    /// Cursor: `~/.cursor/mcp.json` or `.cursor/mcp.json`.
    Cursor,
    /// VS Code: `.vscode/mcp.json`.
    Vscode,
    /// Codex CLI: `~/.codex/config.toml`.
    Codex,
    /// Gemini CLI: `~/.gemini/settings.json`.
    Gemini,
    /// Zed: `settings.json`.
    Zed,
}

impl Client {
    /// Where the client reads the printed text, said on stderr so stdout stays pasteable.
    fn destination(self) -> &'static str {
        match self {
            Client::ClaudeCode => "run this in a shell",
            Client::ClaudeDesktop => {
                "merge into claude_desktop_config.json (Settings > Developer > Edit Config)"
            }
            Client::Cursor => "merge into ~/.cursor/mcp.json (or .cursor/mcp.json of a project)",
            Client::Vscode => "merge into .vscode/mcp.json of the workspace",
            Client::Codex => "append to ~/.codex/config.toml",
            Client::Gemini => "merge into ~/.gemini/settings.json",
            Client::Zed => "merge into Zed's settings.json",
        }
    }
}

/// How a client reaches rea: it starts the binary, or it connects to a running `serve --http`.
enum Launch {
    Stdio {
        command: String,
        env: Vec<(&'static str, String)>,
    },
    Http {
        url: String,
        /// The `Authorization` header value, when the server checks one.
        authorization: Option<String>,
    },
}

/// Prints the setup of `client` for this binary, over stdio or for `serve --http ADDR`.
pub fn print(settings: &Settings, client: Client, http: Option<&str>) -> anyhow::Result<ExitCode> {
    let launch = match http {
        None => Launch::Stdio {
            command: binary()?.display().to_string(),
            env: environment(settings)?,
        },
        Some(address) => Launch::Http {
            url: format!("http://{address}/mcp"),
            authorization: authorization(settings)?,
        },
    };
    println!("{}", render(client, &launch)?);
    eprintln!("rea: {}", client.destination());
    Ok(ExitCode::SUCCESS)
}

/// The running binary, by its absolute path, so the client starts this very build.
fn binary() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe().context("finding the path of the running rea")?;
    Ok(std::fs::canonicalize(&exe).unwrap_or(exe))
}

/// A directory as an absolute path: the client starts rea in a working directory of its own.
fn absolute(path: &Path) -> anyhow::Result<String> {
    Ok(std::path::absolute(path)
        .with_context(|| format!("making {} absolute", path.display()))?
        .display()
        .to_string())
}

/// The variables the client must pass for rea to find the same state and configuration as this
/// shell's: the state directory always, the others when they are set here.
fn environment(settings: &Settings) -> anyhow::Result<Vec<(&'static str, String)>> {
    let mut env = vec![("REA_STATE_DIR", absolute(&settings.state_dir)?)];
    if let Some(config) = &settings.config_dir {
        env.push(("REA_CONFIG_DIR", absolute(config)?));
    }
    for name in ["REA_ALLOWED_ROOTS", "REA_ANGR_PYTHON"] {
        if let Some(value) = std::env::var_os(name).filter(|v| !v.is_empty()) {
            env.push((name, value.to_string_lossy().into_owned()));
        }
    }
    Ok(env)
}

/// The `Authorization` header of the HTTP setup: the generated token from its file, the one
/// configured token, or a placeholder with a note on stderr saying what to put there.
fn authorization(settings: &Settings) -> anyhow::Result<Option<String>> {
    let token_file = settings.state_dir.join(http::TOKEN_FILE_NAME);
    match http::load(settings.config_dir.as_deref())? {
        HttpAuth::None => Ok(None),
        HttpAuth::Bearer(tokens) if tokens.is_empty() => {
            match std::fs::read_to_string(&token_file) {
                Ok(token) => {
                    eprintln!(
                        "rea: the token is the one `rea serve --http` made at its last start ({}); it changes at every start, so name one in [http] tokens of rea.toml for a setup that lasts",
                        token_file.display()
                    );
                    Ok(Some(format!("Bearer {}", token.trim())))
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    eprintln!(
                        "rea: no token yet: start `rea serve --http` first (it writes {}), then run this again",
                        token_file.display()
                    );
                    Ok(Some("Bearer <token>".into()))
                }
                Err(e) => Err(e).with_context(|| format!("reading {}", token_file.display())),
            }
        }
        HttpAuth::Bearer(tokens) => match tokens.as_slice() {
            [(_, token)] => Ok(Some(format!("Bearer {token}"))),
            many => {
                let names: Vec<&str> = many
                    .iter()
                    .map(|(p, _)| p.as_str().trim_start_matches("http:"))
                    .collect();
                eprintln!(
                    "rea: put the token of one of {} ([http] tokens of rea.toml) in place of <token>",
                    names.join(", ")
                );
                Ok(Some("Bearer <token>".into()))
            }
        },
    }
}

/// The text of `client`'s setup.
fn render(client: Client, launch: &Launch) -> anyhow::Result<String> {
    let env_object = |env: &[(&str, String)]| {
        env.iter()
            .map(|(k, v)| ((*k).to_owned(), json!(v)))
            .collect::<serde_json::Map<_, _>>()
    };
    let headers = |authorization: &Option<String>| match authorization {
        Some(value) => json!({ "Authorization": value }),
        None => json!({}),
    };
    let pretty = |value: serde_json::Value| serde_json::to_string_pretty(&value);
    Ok(match (client, launch) {
        (Client::ClaudeCode, Launch::Stdio { command, env }) => {
            let mut line = vec!["claude mcp add rea --scope user --transport stdio".to_owned()];
            for (k, v) in env {
                line.push(format!("--env {}", shell_quote(&format!("{k}={v}"))));
            }
            line.push(format!("-- {} serve", shell_quote(command)));
            line.join(" ")
        }
        (Client::ClaudeCode, Launch::Http { url, authorization }) => {
            let mut line = format!(
                "claude mcp add rea --scope user --transport http {}",
                shell_quote(url)
            );
            if let Some(value) = authorization {
                line.push_str(&format!(
                    " --header {}",
                    shell_quote(&format!("Authorization: {value}"))
                ));
            }
            line
        }
        (
            Client::ClaudeDesktop | Client::Cursor | Client::Gemini,
            Launch::Stdio { command, env },
        ) => pretty(json!({ "mcpServers": { "rea": {
                "command": command, "args": ["serve"], "env": env_object(env)
            } } }))?,
        // Claude Desktop's file starts local servers only; the `mcp-remote` bridge carries HTTP.
        (Client::ClaudeDesktop, Launch::Http { url, authorization }) => {
            let mut args = vec![json!("-y"), json!("mcp-remote"), json!(url)];
            let mut env = serde_json::Map::new();
            if let Some(value) = authorization {
                args.extend([
                    json!("--header"),
                    json!("Authorization:${REA_AUTHORIZATION}"),
                ]);
                env.insert("REA_AUTHORIZATION".into(), json!(value));
            }
            pretty(json!({ "mcpServers": { "rea": {
                "command": "npx", "args": args, "env": env
            } } }))?
        }
        (Client::Cursor, Launch::Http { url, authorization }) => {
            pretty(json!({ "mcpServers": { "rea": {
                "url": url, "headers": headers(authorization)
            } } }))?
        }
        (Client::Gemini, Launch::Http { url, authorization }) => {
            pretty(json!({ "mcpServers": { "rea": {
                "httpUrl": url, "headers": headers(authorization)
            } } }))?
        }
        (Client::Vscode, Launch::Stdio { command, env }) => pretty(json!({ "servers": { "rea": {
            "type": "stdio", "command": command, "args": ["serve"], "env": env_object(env)
        } } }))?,
        (Client::Vscode, Launch::Http { url, authorization }) => {
            pretty(json!({ "servers": { "rea": {
                "type": "http", "url": url, "headers": headers(authorization)
            } } }))?
        }
        (Client::Zed, Launch::Stdio { command, env }) => {
            pretty(json!({ "context_servers": { "rea": {
                "source": "custom", "command": command, "args": ["serve"], "env": env_object(env)
            } } }))?
        }
        (Client::Zed, Launch::Http { url, authorization }) => {
            pretty(json!({ "context_servers": { "rea": {
                "source": "custom", "url": url, "headers": headers(authorization)
            } } }))?
        }
        (Client::Codex, launch) => {
            let mut server = toml::Table::new();
            match launch {
                Launch::Stdio { command, env } => {
                    server.insert("command".into(), command.clone().into());
                    server.insert("args".into(), vec!["serve".to_owned()].into());
                    let env: toml::Table = env
                        .iter()
                        .map(|(k, v)| ((*k).to_owned(), v.clone().into()))
                        .collect();
                    server.insert("env".into(), env.into());
                }
                Launch::Http { url, authorization } => {
                    server.insert("url".into(), url.clone().into());
                    if let Some(value) = authorization {
                        let mut headers = toml::Table::new();
                        headers.insert("Authorization".into(), value.clone().into());
                        server.insert("http_headers".into(), headers.into());
                    }
                }
            }
            let mut servers = toml::Table::new();
            servers.insert("rea".into(), server.into());
            let mut file = toml::Table::new();
            file.insert("mcp_servers".into(), servers.into());
            toml::to_string(&file)?.trim_end().to_owned()
        }
    })
}

/// `text` as one shell word: as it is when it holds only characters no shell treats specially,
/// else in single quotes.
fn shell_quote(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-./:=@,+%".contains(&b));
    if plain {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::shell_quote;

    #[test]
    fn shell_words_are_quoted_only_when_needed() {
        assert_eq!(shell_quote("/usr/bin/rea"), "/usr/bin/rea");
        assert_eq!(shell_quote("/my dir/rea"), "'/my dir/rea'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }
}
