//! What [`super`] asks of the system, on Windows: resolution beneath a root by `cap-std`, which
//! holds a handle to every directory it resolves through, follows links only while they stay
//! beneath the directory it starts from, and refuses `..` above it.
//!
//! What Windows gets less of than Unix (the README's platform section says the same): an escape
//! through a link is refused with `cap-std`'s own error rather than named as an escape; only the
//! lexical path is shown (there is no `/proc/self/fd`); and there is no atomic exchange of names,
//! so an export that replaces a file looks at the name once more just before renaming over it,
//! as Unix systems other than Linux do. Windows has no FIFOs or devices beneath a directory, so
//! checking what was opened is enough for the regular-file rule.

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::path::{Component, Path, PathBuf};

use cap_fs_ext::{
    DirExt as _, FollowSymlinks, MetadataExt as _, OpenOptionsFollowExt as _,
    OpenOptionsMaybeDirExt as _,
};
use cap_std::fs::{Dir, OpenOptions};

use super::{Admitted, DirEntry, EntryKind, FileId, FsError, Links};

/// A directory held open.
pub(crate) type DirFd = Dir;

/// How paths are resolved: on Windows always by `cap-std`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Resolver {
    /// `cap-std`'s resolution beneath a directory handle.
    CapStd,
}

impl Resolver {
    /// The resolver of this system.
    pub(crate) fn native() -> Resolver {
        Resolver::CapStd
    }
}

/// Never: Windows has no kernel call that resolves beneath a handle.
pub(crate) fn kernel_resolves_beneath() -> bool {
    false
}

fn kind_of(t: cap_std::fs::FileType) -> EntryKind {
    if t.is_symlink() {
        EntryKind::Symlink
    } else if t.is_dir() {
        EntryKind::Dir
    } else if t.is_file() {
        EntryKind::File
    } else {
        EntryKind::Unknown
    }
}

/// Device and inode: the volume serial number and file index, read through an open handle.
fn id_of(m: &cap_std::fs::Metadata) -> FileId {
    FileId {
        dev: m.dev(),
        ino: m.ino(),
    }
}

/// Admits a file `cap-std` opened: a regular file, or a directory (reopened as one).
fn admit(file: cap_std::fs::File, path: PathBuf) -> Result<Admitted, FsError> {
    let meta = file.metadata().map_err(|e| FsError::io(&path, e))?;
    let id = id_of(&meta);
    match kind_of(meta.file_type()) {
        EntryKind::File => Ok(Admitted::File {
            file: file.into_std(),
            id,
            len: meta.len(),
            path,
        }),
        EntryKind::Dir => Ok(Admitted::Dir {
            fd: Dir::from_std_file(file.into_std()),
            id,
            path,
        }),
        other => Err(FsError::NotRegular {
            path,
            kind: other.describe(),
        }),
    }
}

fn read_options(links: Links) -> OpenOptions {
    let mut options = OpenOptions::new();
    options.read(true).maybe_dir(true);
    if links == Links::Never {
        options.follow(FollowSymlinks::No);
    }
    options
}

/// Opens `rel` beneath `dir` and admits it. With [`Links::Never`] every directory on the way is
/// opened without following a link, and so is the last component.
pub(crate) fn open_beneath_admitted(
    dir: &DirFd,
    _: Resolver,
    rel: &Path,
    links: Links,
    shown: PathBuf,
    within: &Path,
) -> Result<Admitted, FsError> {
    let escapes = || FsError::Escapes {
        path: shown.clone(),
        within: within.to_path_buf(),
    };
    // Lexically first: `..` above the directory, or an absolute path, escapes whatever links
    // there are.
    let mut depth = 0usize;
    for c in rel.components() {
        match c {
            Component::Normal(_) => depth += 1,
            Component::ParentDir if depth == 0 => return Err(escapes()),
            Component::ParentDir => depth -= 1,
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => return Err(escapes()),
        }
    }
    let rel = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    let opened = match links {
        Links::Beneath => dir.open_with(rel, &read_options(links)),
        Links::Never => open_nofollow(dir, rel),
    };
    match opened {
        Ok(file) => admit(file, shown),
        // A link where none is followed is named as one.
        Err(_) if links == Links::Never && has_link(dir, rel) => Err(FsError::Link { path: shown }),
        Err(e) => Err(FsError::io(&shown, e)),
    }
}

/// Opens `rel` following no link: each directory on the way with `open_dir_nofollow`, `..`
/// back to the directory it came from.
fn open_nofollow(dir: &Dir, rel: &Path) -> io::Result<cap_std::fs::File> {
    let parts: Vec<&OsStr> = rel
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n),
            Component::ParentDir => Some(OsStr::new("..")),
            _ => None,
        })
        .collect();
    let Some((last, parents)) = parts.split_last() else {
        return dir.open_with(".", &read_options(Links::Never));
    };
    let mut stack: Vec<Dir> = Vec::new();
    for name in parents {
        if *name == ".." {
            stack.pop();
            continue;
        }
        let current = stack.last().unwrap_or(dir);
        stack.push(current.open_dir_nofollow(name)?);
    }
    if *last == ".." {
        stack.pop();
        let current = stack.last().unwrap_or(dir);
        return current.open_with(".", &read_options(Links::Never));
    }
    let current = stack.last().unwrap_or(dir);
    current.open_with(last, &read_options(Links::Never))
}

/// Whether any prefix of `rel` beneath `dir` is a symbolic link (or junction).
fn has_link(dir: &Dir, rel: &Path) -> bool {
    let mut prefix = PathBuf::new();
    rel.components().any(|c| {
        prefix.push(c);
        matches!(c, Component::Normal(_))
            && dir
                .symlink_metadata(&prefix)
                .is_ok_and(|m| m.file_type().is_symlink())
    })
}

/// What `rel` is beneath `dir`, following links that stay inside.
pub(crate) fn kind_beneath(dir: &DirFd, _: Resolver, rel: &Path) -> Option<EntryKind> {
    let rel = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    dir.metadata(rel).ok().map(|m| kind_of(m.file_type()))
}

/// Opens `path` with no roots and admits it.
pub(crate) fn open_path(path: &Path, _: Resolver) -> Result<Admitted, FsError> {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let shown = std::fs::canonicalize(path).unwrap_or(absolute);
    let meta = std::fs::metadata(path).map_err(|e| FsError::io(path, e))?;
    if meta.is_dir() {
        let dir = Dir::open_ambient_dir(path, cap_std::ambient_authority())
            .map_err(|e| FsError::io(path, e))?;
        let id = id_of(&dir.dir_metadata().map_err(|e| FsError::io(path, e))?);
        return Ok(Admitted::Dir {
            fd: dir,
            id,
            path: shown,
        });
    }
    let file = File::open(path).map_err(|e| FsError::io(path, e))?;
    admit(cap_std::fs::File::from_std(file), shown)
}

/// Device and inode of what `path` names (links followed), and whether it is a directory.
pub(crate) fn path_id(path: &Path) -> Option<(FileId, bool)> {
    match open_path(path, Resolver::CapStd).ok()? {
        Admitted::Dir { id, .. } => Some((id, true)),
        Admitted::File { id, .. } => Some((id, false)),
    }
}

/// The parent of `dir`, held open, with its device and inode.
pub(crate) fn parent(dir: &DirFd, _: Resolver) -> io::Result<(DirFd, FileId)> {
    let up = dir.open_parent_dir(cap_std::ambient_authority())?;
    let id = id_of(&up.dir_metadata()?);
    Ok((up, id))
}

/// Device and inode of what is at `name` in `dir` (a link itself, not followed).
pub(crate) fn entry_id(dir: &DirFd, name: &OsStr) -> io::Result<FileId> {
    dir.symlink_metadata(name).map(|m| id_of(&m))
}

/// Lists a directory (links not followed).
pub(crate) fn list(dir: &DirFd) -> io::Result<Vec<DirEntry>> {
    let mut out = Vec::new();
    for entry in dir.entries()? {
        let entry = entry?;
        let meta = match entry.metadata() {
            Ok(m) => m,
            // Removed between the listing and the look at it.
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        out.push(DirEntry {
            name: entry.file_name(),
            kind: kind_of(meta.file_type()),
            size: meta.len(),
        });
    }
    Ok(out)
}

/// The target text of the link `name` in `dir`.
pub(crate) fn read_link(dir: &DirFd, name: &OsStr) -> io::Result<PathBuf> {
    dir.read_link_contents(name)
}

/// A new file at `name` in `dir`; fails when anything, a link included, has the name.
pub(crate) fn create_new(dir: &DirFd, name: &OsStr) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    dir.open_with(name, &options)
        .map(cap_std::fs::File::into_std)
}

/// Renames `from` to `to` in `dir`; unless `replace`, through a hard link, which fails when `to`
/// exists, then the removal of `from`.
pub(crate) fn rename(
    dir: &DirFd,
    _: Resolver,
    from: &OsStr,
    to: &OsStr,
    replace: bool,
) -> io::Result<()> {
    if replace {
        dir.rename(from, dir, to)
    } else {
        dir.hard_link(from, dir, to)?;
        let _ = dir.remove_file(from);
        Ok(())
    }
}

/// Unsupported: Windows has no atomic exchange of two names.
pub(crate) fn exchange(_: &DirFd, _: Resolver, _: &OsStr, _: &OsStr) -> io::Result<()> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

/// Removes the file `name` in `dir`.
pub(crate) fn unlink(dir: &DirFd, name: &OsStr) -> io::Result<()> {
    dir.remove_file(name)
}

/// Reads at `offset`. Every read of a document names its offset, so the handle's own position,
/// which this moves, is never relied on.
pub(crate) fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    std::os::windows::fs::FileExt::seek_read(file, buf, offset)
}
