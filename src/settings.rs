//! The operator's settings: where sessions live, where configuration is read from, and the
//! roots every path a tool or command takes must resolve inside. `check_path` and
//! `check_new_path` are the one entry point of the path policy.

use std::path::{Path, PathBuf};

/// Operator settings shared by every connection.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Where session directories live.
    pub state_dir: PathBuf,
    /// `$REA_CONFIG_DIR`: prompt files under `prompts/`, policy in `rea.toml`.
    pub config_dir: Option<PathBuf>,
    /// When non-empty, every path a tool takes must lie under one of these (canonical) roots.
    pub allowed_roots: Vec<PathBuf>,
}

impl Settings {
    /// Settings from the environment, with an optional explicit state directory.
    pub fn from_env(state_dir: Option<&Path>) -> Settings {
        let roots = std::env::var_os("REA_ALLOWED_ROOTS")
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
            allowed_roots: roots,
        }
    }

    /// The directory of operator prompt files.
    pub fn prompts_dir(&self) -> Option<PathBuf> {
        self.config_dir.as_ref().map(|d| d.join("prompts"))
    }

    /// Canonicalizes `path` (resolving symlinks and `..`) and checks it against the allowed roots.
    pub fn check_path(&self, path: &Path) -> Result<PathBuf, String> {
        let canonical =
            std::fs::canonicalize(path).map_err(|e| format!("{}: {e}", path.display()))?;
        self.check_canonical(&canonical)?;
        Ok(canonical)
    }

    /// Checks a path that may not exist yet (an export destination): its parent must resolve
    /// inside the allowed roots.
    pub fn check_new_path(&self, path: &Path) -> Result<PathBuf, String> {
        let name = path
            .file_name()
            .ok_or_else(|| format!("{} names no file", path.display()))?;
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let parent =
            std::fs::canonicalize(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        let full = parent.join(name);
        self.check_canonical(&full)?;
        Ok(full)
    }

    fn check_canonical(&self, canonical: &Path) -> Result<(), String> {
        if self.allowed_roots.is_empty() {
            return Ok(());
        }
        let inside = self.allowed_roots.iter().any(|root| {
            std::fs::canonicalize(root)
                .map(|r| canonical.starts_with(r))
                .unwrap_or(false)
        });
        if inside {
            Ok(())
        } else {
            Err(format!(
                "{} is outside the allowed roots set by the operator (REA_ALLOWED_ROOTS)",
                canonical.display()
            ))
        }
    }
}
