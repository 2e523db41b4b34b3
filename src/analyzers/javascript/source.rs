//! Where an application's files come from: a directory on disk or an asar archive (with its
//! `.unpacked` sibling). Both list files as relative `/`-separated paths and read them into
//! memory, so the rest of the analysis cannot tell them apart and nothing is extracted.

use std::collections::BTreeSet;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::analyzers::asar::Archive;

use super::JsError;
use super::model::{InputInfo, InputKind};

/// Directories deeper than this are not walked (a symlink-free tree this deep is hostile).
const MAX_DIR_DEPTH: usize = 64;

/// The most files listed from one input.
pub(crate) const MAX_LISTED_FILES: usize = 200_000;

/// One file of the application.
#[derive(Debug, Clone)]
pub(crate) struct FileRef {
    pub path: String,
    pub size: u64,
}

/// What listing the input found.
#[derive(Debug, Default)]
pub(crate) struct Listing {
    pub files: Vec<FileRef>,
    /// Distinct top-most `node_modules` directories skipped.
    pub node_modules_dirs: BTreeSet<String>,
    /// Symbolic links skipped.
    pub links_skipped: usize,
    /// True when `MAX_LISTED_FILES` cut the listing short.
    pub truncated: bool,
}

/// The opened input.
pub(crate) enum Root {
    Dir(PathBuf),
    Asar(Box<Archive>),
}

/// Works out what `input` is and opens it.
pub(crate) fn open_input(input: &Path) -> Result<(InputInfo, Root), JsError> {
    let meta = fs::metadata(input).map_err(|source| JsError::Io {
        path: input.to_path_buf(),
        source,
    })?;
    let given = input.display().to_string();
    if meta.is_file() {
        let archive = Archive::open(input)?;
        let info = InputInfo {
            kind: InputKind::Asar,
            path: given,
            root: input.display().to_string(),
            asar_header_sha256: Some(archive.header_sha256()),
        };
        return Ok((info, Root::Asar(Box::new(archive))));
    }
    let resources = input.join("Contents").join("Resources");
    if resources.is_dir() {
        return open_within(input, &resources, InputKind::App);
    }
    if input.join("package.json").is_file() || has_top_level_scripts(input) {
        let info = InputInfo {
            kind: InputKind::Dir,
            path: given,
            root: input.display().to_string(),
            asar_header_sha256: None,
        };
        return Ok((info, Root::Dir(input.to_path_buf())));
    }
    for candidate in [input.to_path_buf(), input.join("resources")] {
        if candidate.join("app.asar").is_file() || candidate.join("app").is_dir() {
            return open_within(input, &candidate, InputKind::Dir);
        }
    }
    Err(JsError::NotAnApplication {
        path: input.to_path_buf(),
        reason:
            "no package.json, no .js/.ts files at the top, and no app.asar or resources/app.asar"
                .to_string(),
    })
}

/// Opens `dir/app.asar`, or failing that `dir/app/`, for an input that packages an app inside.
fn open_within(input: &Path, dir: &Path, kind: InputKind) -> Result<(InputInfo, Root), JsError> {
    let asar = dir.join("app.asar");
    let given = input.display().to_string();
    if asar.is_file() {
        let archive = Archive::open(&asar)?;
        let info = InputInfo {
            kind,
            path: given,
            root: asar.display().to_string(),
            asar_header_sha256: Some(archive.header_sha256()),
        };
        return Ok((info, Root::Asar(Box::new(archive))));
    }
    let app = dir.join("app");
    if app.is_dir() {
        let info = InputInfo {
            kind,
            path: given,
            root: app.display().to_string(),
            asar_header_sha256: None,
        };
        return Ok((info, Root::Dir(app)));
    }
    Err(JsError::NotAnApplication {
        path: input.to_path_buf(),
        reason: format!("{} holds neither app.asar nor app/", dir.display()),
    })
}

/// True when `dir` directly holds a JavaScript or TypeScript source file.
pub(crate) fn has_top_level_scripts(dir: &Path) -> bool {
    let Ok(entries) = fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().take(10_000).any(|e| {
        let name = e.file_name();
        let name = name.to_string_lossy();
        e.file_type().is_ok_and(|t| t.is_file()) && super::is_source_path(&name)
    })
}

impl Root {
    /// Lists every file outside `node_modules` and `.git`, sorted by path.
    pub(crate) fn list(&self) -> Listing {
        let mut listing = match self {
            Root::Dir(dir) => list_dir(dir),
            Root::Asar(archive) => list_asar(archive),
        };
        listing.files.sort_by(|a, b| a.path.cmp(&b.path));
        listing
    }

    /// Reads one listed file, refusing files larger than `cap` bytes.
    pub(crate) fn read(&self, file: &FileRef, cap: u64) -> Result<Vec<u8>, String> {
        if file.size > cap {
            return Err(format!("{} bytes exceeds the {cap}-byte limit", file.size));
        }
        match self {
            Root::Asar(archive) => archive.read(&file.path).map_err(|e| e.to_string()),
            Root::Dir(dir) => {
                let mut disk = dir.clone();
                disk.extend(file.path.split('/'));
                let f = fs::File::open(&disk).map_err(|e| format!("{}: {e}", disk.display()))?;
                let mut buf = Vec::new();
                f.take(cap.saturating_add(1))
                    .read_to_end(&mut buf)
                    .map_err(|e| format!("{}: {e}", disk.display()))?;
                if buf.len() as u64 > cap {
                    return Err(format!("file grew past the {cap}-byte limit while reading"));
                }
                Ok(buf)
            }
        }
    }
}

/// True for directory names whose contents are never application code.
fn skipped_dir(name: &str) -> bool {
    name == "node_modules" || name == ".git"
}

fn list_dir(root: &Path) -> Listing {
    let mut listing = Listing::default();
    let mut stack: Vec<(PathBuf, String, usize)> = vec![(root.to_path_buf(), String::new(), 0)];
    while let Some((dir, rel, depth)) = stack.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        let mut entries: Vec<_> = entries.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = if rel.is_empty() {
                name.clone()
            } else {
                format!("{rel}/{name}")
            };
            let Ok(meta) = fs::symlink_metadata(entry.path()) else {
                continue;
            };
            if meta.file_type().is_symlink() {
                listing.links_skipped += 1;
            } else if meta.is_dir() {
                if name == "node_modules" {
                    listing.node_modules_dirs.insert(path);
                } else if !skipped_dir(&name) && depth < MAX_DIR_DEPTH {
                    stack.push((entry.path(), path, depth + 1));
                }
            } else if meta.is_file() {
                if listing.files.len() >= MAX_LISTED_FILES {
                    listing.truncated = true;
                    return listing;
                }
                listing.files.push(FileRef {
                    path,
                    size: meta.len(),
                });
            }
        }
    }
    listing
}

fn list_asar(archive: &Archive) -> Listing {
    let mut listing = Listing::default();
    for entry in archive.entries() {
        let parts: Vec<&str> = entry.path.split('/').collect();
        let dirs = &parts[..parts.len().saturating_sub(1)];
        if let Some(i) = dirs.iter().position(|p| skipped_dir(p)) {
            if dirs[i] == "node_modules" {
                listing.node_modules_dirs.insert(parts[..=i].join("/"));
            }
            continue;
        }
        if entry.link.is_some() {
            listing.links_skipped += 1;
            continue;
        }
        if listing.files.len() >= MAX_LISTED_FILES {
            listing.truncated = true;
            break;
        }
        listing.files.push(FileRef {
            path: entry.path.clone(),
            size: entry.size,
        });
    }
    listing
}
