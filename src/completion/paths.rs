//! Path completion for the prompts' path arguments: entries beneath the allowed roots (or the
//! working directory when none are set), directories first, bounded in count and time, files
//! filtered to what the argument takes.
//!
//! Listing a directory is the only thing done with it; a file is opened only to read the few
//! bytes that say whether it is a target, and only once it is known to lie beneath a root.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::Family;
use crate::store::CompletionPage;

/// Directory entries read at most per answer: a directory of a million files answers quickly
/// with the first of them, and `hasMore` says there are others.
pub const MAX_ENTRIES: usize = 4096;

/// How long one answer may take: completion runs as a person types.
pub const MAX_TIME: Duration = Duration::from_millis(250);

/// Bytes read from a file to tell a binary from anything else.
const HEAD_BYTES: usize = 4096;

/// What the argument takes, so which files are offered (directories always are: they lead on).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wanted {
    /// Binaries (ELF, Mach-O, PE) and `.asar` archives; directories are `.app` bundles and
    /// JavaScript applications, or lead to them.
    Target,
    /// Files with an execute permission bit.
    Executable,
    /// Directories only.
    Directory,
}

fn wanted(family: Family) -> Option<Wanted> {
    match family {
        Family::TargetPath => Some(Wanted::Target),
        Family::ExecutablePath => Some(Wanted::Executable),
        Family::DirectoryPath => Some(Wanted::Directory),
        _ => None,
    }
}

/// The paths `typed` may continue into for a path argument of `family`: beneath `roots` when
/// there are any, else beneath `cwd`. A typed path outside them completes to the roots it is a
/// prefix of (or to nothing). Directories end with `/` and come first; each group is in code
/// point order; a relative typed path completes relative to `cwd`, as it was typed.
pub fn complete(
    family: Family,
    roots: &[PathBuf],
    cwd: &Path,
    typed: &str,
    limit: usize,
) -> CompletionPage {
    let Some(wanted) = wanted(family) else {
        return CompletionPage::default();
    };
    let deadline = Instant::now() + MAX_TIME;
    let bases: Vec<PathBuf> = if roots.is_empty() {
        vec![cwd.to_owned()]
    } else {
        roots.iter().map(|r| cwd.join(r)).collect()
    };
    let bases: Vec<PathBuf> = bases
        .iter()
        .filter_map(|b| std::fs::canonicalize(b).ok())
        .collect();
    // Nothing typed: the entries of the working directory, or the roots themselves.
    if typed.is_empty() && !roots.is_empty() {
        let values = bases.iter().map(|b| format!("{}/", b.display()));
        return page(values.collect(), vec![], false, limit);
    }
    let (dir_text, name_prefix) = match typed.rfind('/') {
        Some(i) => (&typed[..=i], &typed[i + 1..]),
        None => ("", typed),
    };
    let dir = if dir_text.is_empty() {
        cwd.to_owned()
    } else {
        cwd.join(dir_text)
    };
    let inside = |p: &Path| bases.iter().any(|b| p.starts_with(b));
    let Some(dir) = std::fs::canonicalize(&dir).ok().filter(|d| inside(d)) else {
        // Outside every root: the roots that continue what was typed lead the way in.
        let values = bases
            .iter()
            .map(|b| format!("{}/", b.display()))
            .filter(|b| b.starts_with(typed))
            .collect();
        return page(values, vec![], false, limit);
    };
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return CompletionPage::default();
    };
    let (mut dirs, mut files, mut cut) = (vec![], vec![], false);
    for (read, entry) in entries.enumerate() {
        if read >= MAX_ENTRIES || Instant::now() >= deadline {
            cut = true;
            break;
        }
        let Ok(entry) = entry else { continue };
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        // Hidden entries only when asked for, as shells complete them.
        if !name.starts_with(name_prefix)
            || (name.starts_with('.') && !name_prefix.starts_with('.'))
        {
            continue;
        }
        // Followed, so that a link to a directory leads on; where it leads must stay inside.
        let Ok(path) = std::fs::canonicalize(entry.path()) else {
            continue;
        };
        if !inside(&path) {
            continue;
        }
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        let value = format!("{dir_text}{name}");
        if meta.is_dir() {
            dirs.push(format!("{value}/"));
        } else if meta.is_file() && takes(wanted, &path, &meta) {
            files.push(value);
        }
    }
    page(dirs, files, cut, limit)
}

/// Whether a regular file is one the argument takes.
fn takes(wanted: Wanted, path: &Path, meta: &std::fs::Metadata) -> bool {
    match wanted {
        Wanted::Directory => false,
        Wanted::Executable => is_executable(path, meta),
        Wanted::Target => {
            if path.extension().is_some_and(|e| e == "asar") {
                return true;
            }
            let mut head = vec![0u8; HEAD_BYTES];
            let read = std::fs::File::open(path).and_then(|mut f| {
                let mut n = 0;
                while n < head.len() {
                    match std::io::Read::read(&mut f, &mut head[n..])? {
                        0 => break,
                        k => n += k,
                    }
                }
                Ok(n)
            });
            let Ok(n) = read else { return false };
            crate::providers::native::sniff(&head[..n], meta.len())
                != crate::vocabulary::Format::Raw
        }
    }
}

/// Whether a regular file can be run: an execute bit on Unix.
#[cfg(unix)]
fn is_executable(_: &Path, meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o111 != 0
}

/// Whether a regular file can be run: Windows has no execute bit, so an executable's extension.
#[cfg(not(unix))]
fn is_executable(path: &Path, _: &std::fs::Metadata) -> bool {
    path.extension().is_some_and(|e| {
        ["exe", "com", "bat", "cmd"]
            .iter()
            .any(|x| e.eq_ignore_ascii_case(x))
    })
}

/// Directories first, then files, each in code point order; the first `limit`.
fn page(mut dirs: Vec<String>, mut files: Vec<String>, cut: bool, limit: usize) -> CompletionPage {
    dirs.sort();
    dirs.dedup();
    files.sort();
    let mut values = dirs;
    values.append(&mut files);
    let total = values.len() as u64;
    values.truncate(limit.min(super::MAX_VALUES));
    CompletionPage {
        has_more: cut || total > values.len() as u64,
        values,
        total,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(family: Family, roots: &[PathBuf], cwd: &Path, typed: &str) -> Vec<String> {
        complete(family, roots, cwd, typed, 100).values
    }

    /// A tree with a binary, a script, a text file, an archive, and directories, one hidden.
    fn tree() -> tempfile::TempDir {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let p = d.path();
        std::fs::create_dir_all(p.join("app/Notes.app/Contents")).unwrap();
        std::fs::create_dir_all(p.join("build")).unwrap();
        // An ELF header is all the sniffer needs to call it a binary.
        let mut elf = b"\x7fELF\x02\x01\x01".to_vec();
        elf.resize(64, 0);
        std::fs::write(p.join("app/tool"), elf).unwrap();
        std::fs::set_permissions(p.join("app/tool"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        std::fs::write(p.join("app/run.sh"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(p.join("app/run.sh"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        std::fs::write(p.join("app/notes.txt"), "text").unwrap();
        std::fs::write(p.join("app/app.asar"), "x").unwrap();
        std::fs::create_dir(p.join("app/.cache")).unwrap();
        d
    }

    #[test]
    fn paths_complete_directories_first_filtered_to_the_argument_regression_29() {
        let d = tree();
        let cwd = d.path();
        assert_eq!(
            values(Family::TargetPath, &[], cwd, "app/"),
            ["app/Notes.app/", "app/app.asar", "app/tool"]
        );
        // Executables: the copied test binary and the script, not the text or the archive.
        assert_eq!(
            values(Family::ExecutablePath, &[], cwd, "app/"),
            ["app/Notes.app/", "app/run.sh", "app/tool"]
        );
        assert_eq!(
            values(Family::DirectoryPath, &[], cwd, ""),
            ["app/", "build/"]
        );
        assert_eq!(
            values(Family::TargetPath, &[], cwd, "app/N"),
            ["app/Notes.app/"]
        );
        // Hidden entries only when a dot is typed.
        assert_eq!(
            values(Family::DirectoryPath, &[], cwd, "app/"),
            ["app/Notes.app/"]
        );
        assert_eq!(
            values(Family::DirectoryPath, &[], cwd, "app/."),
            ["app/.cache/"]
        );
        // Absolute paths complete as typed.
        let abs = format!("{}/app/r", cwd.canonicalize().unwrap().display());
        assert_eq!(
            values(Family::ExecutablePath, &[], cwd, &abs),
            [format!("{abs}un.sh")]
        );
        // Not a path family: nothing.
        assert!(values(Family::Document, &[], cwd, "").is_empty());
    }

    #[test]
    fn paths_stay_beneath_the_allowed_roots_regression_29() {
        let d = tree();
        let root = d.path().canonicalize().unwrap().join("app");
        let elsewhere = tempfile::tempdir().unwrap();
        let roots = vec![root.clone()];
        // Nothing typed: the roots.
        assert_eq!(
            values(Family::TargetPath, &roots, elsewhere.path(), ""),
            [format!("{}/", root.display())]
        );
        // A prefix of a root leads into it; a directory outside the roots lists nothing.
        let parent = format!("{}/", d.path().canonicalize().unwrap().display());
        assert_eq!(
            values(Family::TargetPath, &roots, elsewhere.path(), &parent),
            [format!("{}/", root.display())]
        );
        assert_eq!(
            values(Family::TargetPath, &roots, elsewhere.path(), "/"),
            [format!("{}/", root.display())]
        );
        let outside = format!("{}/", elsewhere.path().canonicalize().unwrap().display());
        assert!(values(Family::TargetPath, &roots, elsewhere.path(), &outside).is_empty());
        // A link inside a root that leads out of it is not offered.
        std::os::unix::fs::symlink(d.path().join("build"), root.join("out")).unwrap();
        let inside = format!("{}/", root.display());
        assert_eq!(
            values(Family::DirectoryPath, &roots, elsewhere.path(), &inside),
            [format!("{inside}Notes.app/")]
        );
    }

    #[test]
    fn a_large_directory_answers_a_bounded_page_regression_29() {
        let d = tempfile::tempdir().unwrap();
        for i in 0..(MAX_ENTRIES + 10) {
            std::fs::create_dir(d.path().join(format!("d{i:05}"))).unwrap();
        }
        let page = complete(Family::DirectoryPath, &[], d.path(), "", 100);
        assert_eq!(page.values.len(), 100);
        assert_eq!(page.total, MAX_ENTRIES as u64);
        assert!(page.has_more);
    }
}
