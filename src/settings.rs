//! The operator's settings: where sessions live, where configuration is read from, and the
//! roots every path a tool or command takes must resolve inside. `check_path` and
//! `check_new_path` are the one entry point of the path policy.

use std::path::{Path, PathBuf};

use crate::fsroot::{NewFile, Opened, Roots};

/// The operator's configuration file in `$REA_CONFIG_DIR`: the capture policy (`[capture]`) and
/// deep providers' settings (`[providers.angr]`).
pub const CONFIG_FILE_NAME: &str = "rea.toml";

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
    /// Settings from the environment, with an optional explicit state directory.
    pub fn from_env(state_dir: Option<&Path>) -> Settings {
        let roots: Vec<PathBuf> = std::env::var_os("REA_ALLOWED_ROOTS")
            .map(|v| {
                std::env::split_paths(&v)
                    .filter(|p| !p.as_os_str().is_empty())
                    .collect()
            })
            .unwrap_or_default();
        Settings {
            state_dir: crate::session::state_dir(state_dir),
            config_dir: std::env::var_os("REA_CONFIG_DIR")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
            allowed_roots: Roots::new(roots),
        }
    }

    /// The directory of operator prompt files.
    pub fn prompts_dir(&self) -> Option<PathBuf> {
        self.config_dir.as_ref().map(|d| d.join("prompts"))
    }

    /// Resolves `path` beneath the allowed roots and opens it: the returned file or directory is
    /// what the operation reads from then on, by descriptor (see [`crate::fsroot`]).
    pub fn check_path(&self, path: &Path) -> Result<Opened, String> {
        self.allowed_roots.open(path).map_err(|e| e.to_string())
    }

    /// Resolves the directory of a file that may not exist yet (an export destination) beneath
    /// the allowed roots; the file is created in it by descriptor.
    pub fn check_new_path(&self, path: &Path) -> Result<NewFile, String> {
        self.allowed_roots.open_new(path).map_err(|e| e.to_string())
    }
}
