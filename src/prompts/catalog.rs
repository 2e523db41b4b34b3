//! The prompt catalog: built-in prompts overlaid with operators' TOML prompt files.
//!
//! A file that does not parse, or whose workflow names a tool that does not exist, is refused
//! with a logged reason and changes nothing: the catalog keeps that file's last good definition.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::{PromptDef, builtin_prompts};

/// Why a prompt file was refused.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not a valid prompt definition.
    #[error("{path}: not a valid prompt definition: {source}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: Box<toml::de::Error>,
    },
    /// The workflow names a tool that does not exist.
    #[error("{path}: step names tool {tool:?}, which does not exist")]
    UnknownTool {
        /// The file.
        path: PathBuf,
        /// The tool name.
        tool: String,
    },
    /// A name or argument is malformed.
    #[error("{path}: {reason}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

/// Checks the text of one prompt file (read from `path`) against the names of all tools.
fn parse_prompt_file(
    path: &Path,
    text: &str,
    known_tools: &BTreeSet<String>,
) -> Result<PromptDef, CatalogError> {
    let def: PromptDef = toml::from_str(text).map_err(|source| CatalogError::Parse {
        path: path.to_owned(),
        source: Box::new(source),
    })?;
    let valid_name = |n: &str| {
        !n.is_empty()
            && n.len() <= 64
            && n.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    };
    if !valid_name(&def.name) {
        return Err(CatalogError::Invalid {
            path: path.to_owned(),
            reason: format!(
                "prompt name {:?} must be 1-64 letters, digits, _ or -",
                def.name
            ),
        });
    }
    let mut seen = BTreeSet::new();
    for a in &def.arguments {
        if !valid_name(&a.name) || !seen.insert(a.name.as_str()) {
            return Err(CatalogError::Invalid {
                path: path.to_owned(),
                reason: format!("argument name {:?} is malformed or repeated", a.name),
            });
        }
    }
    if let Some(tool) = def.tools().find(|t| !known_tools.contains(*t)) {
        return Err(CatalogError::UnknownTool {
            path: path.to_owned(),
            tool: tool.to_owned(),
        });
    }
    Ok(def)
}

/// The prompts the server offers.
#[derive(Debug, Clone)]
pub struct Catalog {
    builtin: Vec<PromptDef>,
    /// Last good definition of each prompt file, by path.
    files: BTreeMap<PathBuf, PromptDef>,
    /// Refused prompt files by path, with the digest of the content that was refused: a refusal
    /// is logged once per change of the file, not at every reload.
    refused: BTreeMap<PathBuf, [u8; 32]>,
}

impl Default for Catalog {
    fn default() -> Self {
        Self {
            builtin: builtin_prompts(),
            files: BTreeMap::new(),
            refused: BTreeMap::new(),
        }
    }
}

impl Catalog {
    /// Every prompt: built-ins in their order (overridden in place by a file of the same name),
    /// then the other file prompts by name.
    pub fn prompts(&self) -> Vec<PromptDef> {
        let by_name: BTreeMap<&str, &PromptDef> =
            self.files.values().map(|p| (p.name.as_str(), p)).collect();
        let mut out: Vec<PromptDef> = self
            .builtin
            .iter()
            .map(|b| (*by_name.get(b.name.as_str()).unwrap_or(&b)).clone())
            .collect();
        let builtin: BTreeSet<&str> = self.builtin.iter().map(|b| b.name.as_str()).collect();
        out.extend(
            by_name
                .into_iter()
                .filter(|(n, _)| !builtin.contains(n))
                .map(|(_, p)| p.clone()),
        );
        out
    }

    /// The prompt with this name.
    pub fn get(&self, name: &str) -> Option<PromptDef> {
        self.prompts().into_iter().find(|p| p.name == name)
    }

    /// Re-reads the `*.toml` files of `dir`. Returns whether the offered prompts changed. Refused
    /// files keep their last good definition; each refusal is logged once for the content that
    /// was refused. A deleted file's prompt goes away.
    pub fn reload(&mut self, dir: &Path, known_tools: &BTreeSet<String>) -> bool {
        use sha2::{Digest, Sha256};
        let before = self.prompts();
        let mut present = BTreeSet::new();
        if let Ok(entries) = std::fs::read_dir(dir) {
            let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
            paths.sort();
            for path in paths
                .into_iter()
                .filter(|p| p.extension().is_some_and(|e| e == "toml"))
            {
                present.insert(path.clone());
                let read = std::fs::read(&path).map_err(|source| CatalogError::Io {
                    path: path.clone(),
                    source,
                });
                let digest: [u8; 32] = read
                    .as_deref()
                    .map(|bytes| Sha256::digest(bytes).into())
                    .unwrap_or_default();
                let parsed = read.and_then(|bytes| {
                    let text = String::from_utf8(bytes).map_err(|e| CatalogError::Io {
                        path: path.clone(),
                        source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
                    })?;
                    parse_prompt_file(&path, &text, known_tools)
                });
                match parsed {
                    Ok(def) => {
                        self.refused.remove(&path);
                        self.files.insert(path, def);
                    }
                    Err(error) => {
                        if self.refused.insert(path, digest) != Some(digest) {
                            tracing::warn!(%error, "prompt file refused; keeping its previous definition")
                        }
                    }
                }
            }
        }
        self.files.retain(|p, _| present.contains(p));
        self.refused.retain(|p, _| present.contains(p));
        self.prompts() != before
    }
}
