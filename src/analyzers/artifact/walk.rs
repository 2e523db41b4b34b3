//! Enumerates the files of a directory target (without following symbolic links) and classifies
//! each file into a [`PartKind`] from its path and leading bytes.

use super::PartKind;
use crate::fsroot::{Deadline, DeadlineExceeded, Directory, EntryKind};
use crate::vocabulary::Format;

/// One file or symbolic link of a directory target.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    /// '/'-separated path relative to the target.
    pub rel: String,
    /// Size from the directory entry's metadata.
    pub size: u64,
    /// Target text, when the entry is a symbolic link.
    pub link: Option<String>,
}

/// The result of walking a directory.
#[derive(Debug, Default)]
pub(crate) struct Walk {
    /// Entries sorted by `rel` (byte order).
    pub entries: Vec<Entry>,
    /// Whether the walk stopped at the file cap.
    pub truncated: bool,
    /// Entries that could not be read, one sentence each.
    pub problems: Vec<String>,
}

/// Walks `root` depth-first, collecting at most `max_files` files and links. Nothing is
/// followed: each directory is reopened beneath `root` by its relative path with no link
/// followed, so only the directories on the way are open and the walk cannot leave the target.
pub(crate) fn walk(
    root: &Directory,
    max_files: usize,
    deadline: &Deadline,
) -> Result<Walk, DeadlineExceeded> {
    let mut out = Walk::default();
    let mut stack: Vec<String> = vec![String::new()];
    while let Some(prefix) = stack.pop() {
        deadline.check(|| format!("the walk of {}", root.path().display()))?;
        let listed = if prefix.is_empty() {
            root.entries()
        } else {
            root.open_dir_nofollow(&prefix).and_then(|d| d.entries())
        };
        let items = match listed {
            Ok(items) => items,
            Err(e) => {
                out.problems
                    .push(format!("cannot list {}: {e}", display_rel(&prefix)));
                continue;
            }
        };
        for item in items {
            let Some(name) = item.name.to_str() else {
                out.problems.push(format!(
                    "skipped an entry of {} whose name is not valid UTF-8: {:?}",
                    display_rel(&prefix),
                    item.name
                ));
                continue;
            };
            let rel = if prefix.is_empty() {
                name.to_string()
            } else {
                format!("{prefix}/{name}")
            };
            if item.kind == EntryKind::Dir {
                stack.push(rel);
                continue;
            }
            if out.entries.len() >= max_files {
                out.truncated = true;
                continue;
            }
            match item.kind {
                EntryKind::Symlink => {
                    let link = match root.read_link(&rel) {
                        Ok(link) => link.to_string_lossy().into_owned(),
                        Err(e) => {
                            out.problems.push(format!("cannot read link {rel}: {e}"));
                            continue;
                        }
                    };
                    out.entries.push(Entry {
                        rel,
                        size: link.len() as u64,
                        link: Some(link),
                    });
                }
                EntryKind::File => out.entries.push(Entry {
                    rel,
                    size: item.size,
                    link: None,
                }),
                other => out.problems.push(format!(
                    "skipped {rel}: {}, neither a file, a directory nor a link",
                    other.describe()
                )),
            }
        }
    }
    out.entries.sort_by(|a, b| a.rel.cmp(&b.rel));
    out.problems.sort();
    Ok(out)
}

fn display_rel(rel: &str) -> &str {
    if rel.is_empty() {
        "the target root"
    } else {
        rel
    }
}

/// The last path component.
pub(crate) fn file_name(rel: &str) -> &str {
    rel.rsplit('/').next().unwrap_or(rel)
}

/// The directory part of a relative path (`""` at the root).
pub(crate) fn parent(rel: &str) -> &str {
    rel.rsplit_once('/').map_or("", |(dir, _)| dir)
}

fn extension(rel: &str) -> Option<String> {
    let name = file_name(rel);
    name.rsplit_once('.')
        .filter(|(stem, _)| !stem.is_empty())
        .map(|(_, ext)| ext.to_ascii_lowercase())
}

/// Whether `rel` is the binary of a framework: `X.framework/X` or `X.framework/Versions/V/X`.
pub(crate) fn is_framework_binary_path(rel: &str) -> bool {
    let components: Vec<&str> = rel.split('/').collect();
    let n = components.len();
    let name = components[n - 1];
    let framework = |component: &str| component.strip_suffix(".framework") == Some(name);
    (n >= 2 && framework(components[n - 2]))
        || (n >= 4 && components[n - 3] == "Versions" && framework(components[n - 4]))
}

/// Classifies a regular file. `head` is its first bytes; native images are classified by the
/// caller from their headers, so only their container-level kind is decided here.
pub(crate) fn classify(rel: &str, head: &[u8], sniffed: Format) -> PartKind {
    match sniffed {
        Format::MachO | Format::MachOUniversal if is_framework_binary_path(rel) => {
            return PartKind::FrameworkBinary;
        }
        Format::MachOUniversal => return PartKind::MachoUniversal,
        // Thin Mach-O kinds come from the file type in the header; the caller refines this.
        Format::MachO => return PartKind::MachoOther,
        Format::Elf => return PartKind::Elf,
        Format::Pe => return PartKind::Pe,
        _ => {}
    }
    if rel == "_CodeSignature/CodeResources" || rel.ends_with("/_CodeSignature/CodeResources") {
        return PartKind::CodeSignature;
    }
    if rel
        .split('/')
        .any(|c| c.ends_with(".nib") && !c.starts_with('.'))
    {
        return PartKind::Nib;
    }
    let ext = extension(rel);
    match ext.as_deref() {
        Some("strings" | "stringsdict") => return PartKind::StringsTable,
        Some("asar") => return PartKind::Asar,
        Some("js" | "mjs" | "cjs" | "sh" | "py") => return PartKind::Script,
        _ => {}
    }
    if head.starts_with(b"bplist") {
        return PartKind::BinaryPlist;
    }
    if ext.as_deref() == Some("plist") || looks_like_xml_plist(head) {
        return PartKind::Plist;
    }
    if head.starts_with(b"#!") {
        return PartKind::Script;
    }
    let resource_ext = matches!(
        ext.as_deref(),
        Some(
            "icns"
                | "png"
                | "jpg"
                | "jpeg"
                | "gif"
                | "tif"
                | "tiff"
                | "pdf"
                | "rtf"
                | "car"
                | "ttf"
                | "otf"
                | "wav"
                | "mp3"
                | "aiff"
                | "html"
                | "htm"
                | "css"
                | "svg"
                | "json"
                | "txt"
                | "pak"
                | "dat"
                | "bin"
                | "lproj"
        )
    );
    if resource_ext || rel.starts_with("Contents/Resources/") || rel.contains("/Resources/") {
        return PartKind::Resource;
    }
    PartKind::Other
}

fn looks_like_xml_plist(head: &[u8]) -> bool {
    let window = &head[..head.len().min(256)];
    (window.starts_with(b"<?xml") && memchr::memmem::find(window, b"<plist").is_some())
        || memchr::memmem::find(window, b"<!DOCTYPE plist").is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification_by_path_and_content() {
        let none = Format::Raw;
        assert_eq!(
            classify("Contents/_CodeSignature/CodeResources", b"<?xml", none),
            PartKind::CodeSignature
        );
        assert_eq!(
            classify(
                "Contents/Resources/en.lproj/MainMenu.nib",
                b"bplist00",
                none
            ),
            PartKind::Nib
        );
        assert_eq!(
            classify(
                "Contents/Resources/Base.lproj/X.nib/keyedobjects.nib",
                b"",
                none
            ),
            PartKind::Nib
        );
        assert_eq!(
            classify(
                "Contents/Resources/en.lproj/InfoPlist.strings",
                b"\xff\xfe",
                none
            ),
            PartKind::StringsTable
        );
        assert_eq!(
            classify("Contents/Resources/app.asar", b"\x04\0\0\0", none),
            PartKind::Asar
        );
        assert_eq!(
            classify("Contents/Info.plist", b"<?xml version", none),
            PartKind::Plist
        );
        assert_eq!(
            classify("x/settings", b"bplist00", none),
            PartKind::BinaryPlist
        );
        assert_eq!(classify("bin/run", b"#!/bin/sh\n", none), PartKind::Script);
        assert_eq!(
            classify("Contents/Resources/Terminal.icns", b"icns", none),
            PartKind::Resource
        );
        assert_eq!(
            classify("Contents/PkgInfo", b"APPL????", none),
            PartKind::Other
        );
        assert_eq!(
            classify(
                "Contents/Frameworks/A.framework/Versions/A/A",
                b"",
                Format::MachO
            ),
            PartKind::FrameworkBinary
        );
        assert_eq!(
            classify(
                "Contents/Frameworks/A.framework/A",
                b"",
                Format::MachOUniversal
            ),
            PartKind::FrameworkBinary
        );
        assert_eq!(
            classify("Contents/MacOS/app", b"", Format::MachOUniversal),
            PartKind::MachoUniversal
        );
    }

    #[test]
    fn path_helpers() {
        assert_eq!(file_name("a/b/c"), "c");
        assert_eq!(parent("a/b/c"), "a/b");
        assert_eq!(parent("c"), "");
        assert_eq!(extension("a/.hidden"), None);
        assert!(!is_framework_binary_path("A"));
    }
}
