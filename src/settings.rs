//! The operator's settings: where sessions live, where configuration is read from, and the
//! roots every path a tool or command takes must resolve inside. `check_path` and
//! `check_new_path` are the one entry point of the path policy.

use std::path::{Path, PathBuf};

use crate::fsroot::{NewFile, Opened, Protected, Roots};

pub mod http;

pub use http::Principal;

/// The operator's configuration file in `$REA_CONFIG_DIR`: the capture policy (`[capture]`),
/// deep providers' settings (`[providers.angr]`) and the message bound (`[messages]`).
pub const CONFIG_FILE_NAME: &str = "rea.toml";

/// The largest tool result rea sends when `rea.toml` sets no other (`[messages]
/// max_result_bytes`): 1 MiB, under every MCP client's message limit that we know of.
pub const DEFAULT_MAX_RESULT_BYTES: u64 = 1 << 20;

/// The smallest bound an operator may set: a capture's or a listing's envelope (scenario, limits,
/// Evidence inline) must still fit beside a useful part of its output.
pub const MIN_MAX_RESULT_BYTES: u64 = 64 << 10;

/// Why the `[messages]` table of `rea.toml` cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum MessagesError {
    /// The file exists but could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The configuration file.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// The file is not TOML, or `[messages]` has a wrong type or an unknown key.
    #[error("{path}: the [messages] table is not valid: {reason}")]
    Syntax {
        /// The configuration file.
        path: PathBuf,
        /// What the TOML parser said.
        reason: String,
    },
    /// `max_result_bytes` is below the smallest bound that still holds a result.
    #[error(
        "{path}: [messages] max_result_bytes = {value} is below the smallest bound {MIN_MAX_RESULT_BYTES}; raise it or remove the key for the default {DEFAULT_MAX_RESULT_BYTES}"
    )]
    TooSmall {
        /// The configuration file.
        path: PathBuf,
        /// The value set.
        value: u64,
    },
}

/// The part of `rea.toml` read here; other tables belong to other modules.
#[derive(serde::Deserialize, Default)]
struct ConfigFile {
    #[serde(default)]
    messages: Option<MessagesTable>,
}

/// `[messages]`: how large one message to the client may be.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct MessagesTable {
    max_result_bytes: Option<u64>,
}

/// The message bound a `rea.toml` text sets (the default when it sets none).
pub fn max_result_bytes_from_toml(text: &str, path: &Path) -> Result<u64, MessagesError> {
    let file: ConfigFile = toml::from_str(text).map_err(|e| MessagesError::Syntax {
        path: path.to_owned(),
        reason: e.to_string(),
    })?;
    let value = file
        .messages
        .and_then(|m| m.max_result_bytes)
        .unwrap_or(DEFAULT_MAX_RESULT_BYTES);
    if value < MIN_MAX_RESULT_BYTES {
        return Err(MessagesError::TooSmall {
            path: path.to_owned(),
            value,
        });
    }
    Ok(value)
}

/// Operator settings shared by every connection.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Where session directories live.
    pub state_dir: PathBuf,
    /// `$REA_CONFIG_DIR`: prompt files under `prompts/`, policy in `rea.toml`.
    pub config_dir: Option<PathBuf>,
    /// When confined, every path a tool takes is resolved beneath one of these roots, which are
    /// opened once when the settings are made (`REA_ALLOWED_ROOTS`).
    pub allowed_roots: Roots,
}

impl Settings {
    /// Settings from the environment, with an optional explicit state directory; an error when
    /// no state directory can be chosen (see [`crate::session::state_dir`]).
    pub fn from_env(state_dir: Option<&Path>) -> Result<Settings, crate::session::StateDirError> {
        let roots: Vec<PathBuf> = std::env::var_os("REA_ALLOWED_ROOTS")
            .map(|v| {
                std::env::split_paths(&v)
                    .filter(|p| !p.as_os_str().is_empty())
                    .collect()
            })
            .unwrap_or_default();
        Ok(Settings {
            state_dir: crate::session::state_dir(state_dir)?,
            config_dir: std::env::var_os("REA_CONFIG_DIR")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
            allowed_roots: Roots::new(roots),
        })
    }

    /// The directory of operator prompt files.
    pub fn prompts_dir(&self) -> Option<PathBuf> {
        self.config_dir.as_ref().map(|d| d.join("prompts"))
    }

    /// The largest tool result to send, in bytes of its JSON: `[messages] max_result_bytes` of
    /// `rea.toml`, else [`DEFAULT_MAX_RESULT_BYTES`]. Read at each use (a small file), so an
    /// operator's change applies to the next call without a restart.
    pub fn max_result_bytes(&self) -> Result<u64, MessagesError> {
        let Some(dir) = &self.config_dir else {
            return Ok(DEFAULT_MAX_RESULT_BYTES);
        };
        let path = dir.join(CONFIG_FILE_NAME);
        match std::fs::read_to_string(&path) {
            Ok(text) => max_result_bytes_from_toml(&text, &path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(DEFAULT_MAX_RESULT_BYTES),
            Err(source) => Err(MessagesError::Read { path, source }),
        }
    }

    /// Resolves `path` beneath the allowed roots and opens it: the returned file or directory is
    /// what the operation reads from then on, by descriptor (see [`crate::fsroot`]).
    pub fn check_path(&self, path: &Path) -> Result<Opened, String> {
        self.allowed_roots.open(path).map_err(|e| e.to_string())
    }

    /// Resolves the directory of a file that may not exist yet (an export destination) beneath
    /// the allowed roots; the file is created in it by descriptor. The state and configuration
    /// directories and every session's database files are refused ([`Settings::protected`]).
    pub fn check_new_path(&self, path: &Path) -> Result<NewFile, String> {
        self.allowed_roots
            .open_new(path, &self.protected())
            .map_err(|e| e.to_string())
    }

    /// What no export may be written into or over: rea's state and configuration directories,
    /// and the database files of every session in the state directory (by device and inode, so
    /// a hard link or another name of one is refused too). Taken anew for each export, since
    /// sessions come and go.
    pub fn protected(&self) -> Protected {
        let mut protected = Protected::none().dir(&self.state_dir, "state");
        if let Some(config) = &self.config_dir {
            protected = protected.dir(config, "configuration");
        }
        crate::session::database_files(&self.state_dir)
            .iter()
            .fold(protected, |p, f| p.file(f))
    }
}

/// How many binary sessions a server keeps live, and how long an HTTP session may sit idle: the
/// `[sessions]` table of `rea.toml` (`max_live`, `max_live_per_principal`, `idle_timeout_secs`). Other tables belong to
/// other modules and are ignored here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLimits {
    /// Live binary sessions one server process holds at most; one more is refused.
    pub max_live: usize,
    /// Live binary sessions one principal holds at most (`max_live_per_principal`, by default
    /// a quarter of `max_live`), so no one principal can take every slot.
    pub max_live_per_principal: usize,
    /// An HTTP session that hears nothing from its client for this long is ended and its binary
    /// session released (it stays on disk, resumable).
    pub idle_timeout: std::time::Duration,
}

impl SessionLimits {
    /// Default `max_live`: each live session holds a few descriptors and two threads.
    pub const DEFAULT_MAX_LIVE: usize = 64;
    /// Default `idle_timeout_secs`.
    pub const DEFAULT_IDLE_TIMEOUT_SECS: u64 = 60;

    /// The limits in `<config_dir>/rea.toml`, or the defaults when there is no such file or
    /// table. A table that does not parse is an error naming the file.
    pub fn load(config_dir: Option<&Path>) -> Result<SessionLimits, String> {
        #[derive(serde::Deserialize)]
        struct File {
            #[serde(default)]
            sessions: Option<Table>,
        }
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Table {
            max_live: Option<usize>,
            max_live_per_principal: Option<usize>,
            idle_timeout_secs: Option<u64>,
        }
        let defaults = SessionLimits::default();
        let Some(dir) = config_dir else {
            return Ok(defaults);
        };
        let path = dir.join(CONFIG_FILE_NAME);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(defaults),
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        let file: File =
            toml::from_str(&text).map_err(|e| format!("{}: [sessions]: {e}", path.display()))?;
        let Some(t) = file.sessions else {
            return Ok(defaults);
        };
        let max_live = t.max_live.unwrap_or(defaults.max_live);
        let limits = SessionLimits {
            max_live,
            max_live_per_principal: t
                .max_live_per_principal
                .unwrap_or_else(|| Self::quarter(max_live)),
            idle_timeout: t
                .idle_timeout_secs
                .map_or(defaults.idle_timeout, std::time::Duration::from_secs),
        };
        if limits.max_live == 0
            || limits.max_live_per_principal == 0
            || limits.idle_timeout.is_zero()
        {
            return Err(format!(
                "{}: [sessions] max_live, max_live_per_principal and idle_timeout_secs must be at least 1",
                path.display()
            ));
        }
        if limits.max_live_per_principal > limits.max_live {
            return Err(format!(
                "{}: [sessions] max_live_per_principal = {} is above max_live = {}",
                path.display(),
                limits.max_live_per_principal,
                limits.max_live
            ));
        }
        Ok(limits)
    }

    /// The default share of one principal: a quarter of `max_live`, at least one.
    fn quarter(max_live: usize) -> usize {
        (max_live / 4).max(1)
    }
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits {
            max_live: Self::DEFAULT_MAX_LIVE,
            max_live_per_principal: Self::quarter(Self::DEFAULT_MAX_LIVE),
            idle_timeout: std::time::Duration::from_secs(Self::DEFAULT_IDLE_TIMEOUT_SECS),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_bound_is_read_from_its_table() {
        let path = Path::new("/etc/rea/rea.toml");
        assert_eq!(
            max_result_bytes_from_toml("[capture]\nenabled = true\n", path).unwrap(),
            1_048_576
        );
        assert_eq!(
            max_result_bytes_from_toml("[messages]\nmax_result_bytes = 200000\n", path).unwrap(),
            200_000
        );
        let small = max_result_bytes_from_toml("[messages]\nmax_result_bytes = 100\n", path);
        assert!(matches!(
            small,
            Err(MessagesError::TooSmall { value: 100, .. })
        ));
        let typo = max_result_bytes_from_toml("[messages]\nmax_bytes = 100000\n", path);
        assert!(matches!(typo, Err(MessagesError::Syntax { .. })));
    }
}
