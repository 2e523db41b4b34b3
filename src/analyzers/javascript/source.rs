//! Where an application's files come from: a directory on disk or an asar archive (with its
//! `.unpacked` sibling). Both list files as relative `/`-separated paths and read them into
//! memory, so the rest of the analysis cannot tell them apart and nothing is extracted. Both are
//! read through descriptors opened beneath the input, never by path.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::analyzers::asar::Archive;
use crate::fsroot::{Directory, EntryKind, Opened};

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

/// The opened input: the application's directory held open (its files are opened beneath it),
/// or an asar archive.
pub(crate) enum Root {
    Dir(Directory),
    Asar(Box<Archive>),
}

/// Works out what the opened `input` is; `given` is how the caller named it (for the report).
/// Everything inside it is looked at beneath its descriptor, so a link such as `Contents` or
/// `resources` is followed only while it stays inside the input.
pub(crate) fn open_input(input: &Opened, given: &str) -> Result<(InputInfo, Root), JsError> {
    let dir = match input {
        Opened::File(file) => {
            let archive = Archive::from_file(file.clone(), file.sibling_dir(".unpacked").ok())?;
            let info = InputInfo {
                kind: InputKind::Asar,
                path: given.to_string(),
                root: given.to_string(),
                asar_header_sha256: Some(archive.header_sha256()),
                files_sha256: String::new(),
            };
            return Ok((info, Root::Asar(Box::new(archive))));
        }
        Opened::Dir(dir) => dir,
    };
    if dir.is_dir("Contents/Resources") {
        return open_within(dir, given, "Contents/Resources", InputKind::App);
    }
    if dir.is_file("package.json") || has_top_level_scripts(dir) {
        let info = InputInfo {
            kind: InputKind::Dir,
            path: given.to_string(),
            root: given.to_string(),
            asar_header_sha256: None,
            files_sha256: String::new(),
        };
        return Ok((info, Root::Dir(dir.clone())));
    }
    for candidate in ["", "resources"] {
        let inside = |name: &str| join_rel(candidate, name);
        if dir.is_file(inside("app.asar")) || dir.is_dir(inside("app")) {
            return open_within(dir, given, candidate, InputKind::Dir);
        }
    }
    Err(JsError::NotAnApplication {
        path: PathBuf::from(given),
        reason:
            "no package.json, no .js/.ts files at the top, and no app.asar or resources/app.asar"
                .to_string(),
    })
}

fn join_rel(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

/// Opens `rel/app.asar`, or failing that `rel/app/`, beneath the input directory.
fn open_within(
    input: &Directory,
    given: &str,
    rel: &str,
    kind: InputKind,
) -> Result<(InputInfo, Root), JsError> {
    let asar = join_rel(rel, "app.asar");
    if input.is_file(&asar) {
        let file = input.open_file(&asar)?;
        let unpacked = input.open_dir(format!("{asar}.unpacked")).ok();
        let archive = Archive::from_file(file, unpacked)?;
        let info = InputInfo {
            kind,
            path: given.to_string(),
            root: Path::new(given).join(&asar).display().to_string(),
            asar_header_sha256: Some(archive.header_sha256()),
            files_sha256: String::new(),
        };
        return Ok((info, Root::Asar(Box::new(archive))));
    }
    let app = join_rel(rel, "app");
    if input.is_dir(&app) {
        let info = InputInfo {
            kind,
            path: given.to_string(),
            root: Path::new(given).join(&app).display().to_string(),
            asar_header_sha256: None,
            files_sha256: String::new(),
        };
        return Ok((info, Root::Dir(input.open_dir(&app)?)));
    }
    Err(JsError::NotAnApplication {
        path: PathBuf::from(given),
        reason: format!(
            "{} holds neither app.asar nor app/",
            Path::new(given).join(rel).display()
        ),
    })
}

/// True when `dir` directly holds a JavaScript or TypeScript source file.
pub(crate) fn has_top_level_scripts(dir: &Directory) -> bool {
    let Ok(entries) = dir.entries() else {
        return false;
    };
    entries
        .iter()
        .take(10_000)
        .any(|e| e.kind == EntryKind::File && super::is_source_path(&e.name.to_string_lossy()))
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

    /// Reads one listed file, refusing files larger than `cap` bytes. A file of a directory is
    /// opened beneath the application directory (a link is followed only while it stays inside),
    /// and only a regular file is read.
    pub(crate) fn read(&self, file: &FileRef, cap: u64) -> Result<Vec<u8>, String> {
        if file.size > cap {
            return Err(format!("{} bytes exceeds the {cap}-byte limit", file.size));
        }
        match self {
            Root::Asar(archive) => archive.read(&file.path).map_err(|e| e.to_string()),
            Root::Dir(dir) => dir
                .open_file(&file.path)
                .and_then(|f| f.read_all(cap))
                .map_err(|e| e.to_string()),
        }
    }
}

/// True for directory names whose contents are never application code.
fn skipped_dir(name: &str) -> bool {
    name == "node_modules" || name == ".git"
}

/// Walks the application directory without following links: each directory is reopened
/// beneath the root by its relative path with no link followed, so only the directories on the
/// way are open and nothing outside is listed.
fn list_dir(root: &Directory) -> Listing {
    let mut listing = Listing::default();
    let mut stack: Vec<(String, usize)> = vec![(String::new(), 0)];
    while let Some((rel, depth)) = stack.pop() {
        let dir = if rel.is_empty() {
            root.clone()
        } else {
            match root.open_dir_nofollow(&rel) {
                Ok(dir) => dir,
                Err(_) => continue,
            }
        };
        let Ok(mut entries) = dir.entries() else {
            continue;
        };
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        for entry in entries {
            let name = entry.name.to_string_lossy().into_owned();
            let path = if rel.is_empty() {
                name.clone()
            } else {
                format!("{rel}/{name}")
            };
            match entry.kind {
                EntryKind::Symlink => listing.links_skipped += 1,
                EntryKind::Dir => {
                    if name == "node_modules" {
                        listing.node_modules_dirs.insert(path);
                    } else if !skipped_dir(&name) && depth < MAX_DIR_DEPTH {
                        stack.push((path, depth + 1));
                    }
                }
                EntryKind::File => {
                    if listing.files.len() >= MAX_LISTED_FILES {
                        listing.truncated = true;
                        return listing;
                    }
                    listing.files.push(FileRef {
                        path,
                        size: entry.size,
                    });
                }
                _ => {}
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
