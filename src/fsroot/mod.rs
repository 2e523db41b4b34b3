//! Paths resolved once, beneath an allowed root, and then used by descriptor.
//!
//! The operator's allowed roots are opened once, when the server starts ([`Roots::new`]): a root
//! that is a symbolic link re-pointed later changes nothing. A path a tool takes is resolved
//! beneath the root that holds it ([`Roots::open`]) with `openat2(RESOLVE_BENEATH |
//! RESOLVE_NO_MAGICLINKS)` where the kernel has it, else one component at a time with
//! `O_NOFOLLOW`; either way no symbolic link or `..` leads out of the root. What the path names is
//! then kept open: a [`RegularFile`] or a [`Directory`] that every later read goes through, so a
//! file swapped or re-linked after the check cannot be read in its place. Members of a bundle or
//! an application are opened beneath its [`Directory`] the same way, so links inside it are
//! followed only while they stay inside it.
//!
//! Only regular files and directories are ever opened for reading: a path is first opened with
//! `O_PATH` (which neither blocks on a FIFO nor wakes a device), classified, and reopened through
//! that descriptor only when it is a regular file or a directory. Pseudo-files of `/proc` and
//! `/sys`, whose size is not their content, are refused too. Exports ([`NewFile`]) are written to
//! a temporary file created beside the destination with `O_EXCL | O_NOFOLLOW` and renamed over
//! the name (with `RENAME_NOREPLACE` unless overwriting), so they never write through a link and
//! a failed export leaves nothing behind. An export is never written into a [`Protected`]
//! directory (rea's state and configuration, checked by device and inode on the opened directory
//! and every ancestor reached through `..`) nor over a protected file (a session's database under
//! any name), and replaces an existing file only when [`NewFile::claim`] recognised it, on its
//! descriptor, as an earlier export: the replacement is an exchange of names, undone when what was
//! swapped out is not the file checked.
//!
//! That is Linux. Other Unix systems have neither `O_PATH` nor `openat2`: there the walk opens
//! directories `O_DIRECTORY | O_NOFOLLOW`, classifies the last component with `fstatat` before
//! opening anything, opens only a regular file or a directory and checks its device and inode on
//! the descriptor; exports are put in place with `linkat` (which never replaces) and, where a
//! name is replaced, a last look at it just before `renameat`. Linux tests force that resolver
//! too. On Windows, resolution beneath a root is `cap-std`'s, and reads go through the handles it
//! opened; see the README's platform section for what that does not give.
//!
//! This module sits on the bottom floor: it knows nothing of the protocol or of any analysis.
//!
//! # Layout
//! - `sys`: the system calls: on Unix `sys.rs` (`openat2` and the component walks, listing by
//!   descriptor, `renameat2` and its portable fallback), on Windows `windows.rs` (`cap-std`).
//! - `map`: read-only maps of documents, guarded against the file being cut while mapped.
//! - `deadline`: the deadline long analyses check between steps.

mod deadline;
mod map;
#[cfg(unix)]
mod sys;
#[cfg(windows)]
#[path = "windows.rs"]
mod sys;

use std::ffi::{OsStr, OsString};
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest as _, Sha256};

pub use deadline::{ANALYSIS_BUDGET, Deadline, DeadlineExceeded};
pub use map::{Bytes, Mapped};

/// Device and inode of a file: what was checked when it was opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FileId {
    /// `st_dev`.
    pub dev: u64,
    /// `st_ino`.
    pub ino: u64,
}

/// What a directory entry or an opened path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link (only seen in listings, which do not follow links).
    Symlink,
    /// A FIFO (named pipe).
    Fifo,
    /// A Unix socket.
    Socket,
    /// A character device.
    CharDevice,
    /// A block device.
    BlockDevice,
    /// Something else.
    Unknown,
}

impl EntryKind {
    /// The kind with its article, for messages (`a FIFO (named pipe)`).
    pub fn describe(self) -> &'static str {
        match self {
            EntryKind::File => "a regular file",
            EntryKind::Dir => "a directory",
            EntryKind::Symlink => "a symbolic link",
            EntryKind::Fifo => "a FIFO (named pipe)",
            EntryKind::Socket => "a socket",
            EntryKind::CharDevice => "a character device",
            EntryKind::BlockDevice => "a block device",
            EntryKind::Unknown => "a file of unknown kind",
        }
    }
}

/// How a path beneath a directory may be resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Links {
    /// Symbolic links are followed while they stay beneath the directory (absolute targets and
    /// `..` past the directory are refused).
    Beneath,
    /// No symbolic link is followed anywhere on the path.
    Never,
}

/// What `sys` opened and admitted: a regular file or a directory, held for reading.
pub(crate) enum Admitted {
    /// A regular file, its size when opened.
    File {
        file: std::fs::File,
        id: FileId,
        len: u64,
        path: PathBuf,
    },
    /// A directory.
    Dir {
        fd: sys::DirFd,
        id: FileId,
        path: PathBuf,
    },
}

/// What a pseudo-file of `/proc` or `/sys` is called in refusals.
#[cfg_attr(windows, allow(dead_code))]
const PSEUDO_FILE: &str = "a pseudo-file of /proc or /sys (its size is not its content)";

/// Why a path could not be opened, read or written.
#[derive(Debug, thiserror::Error)]
pub enum FsError {
    /// Nothing exists at the path.
    #[error("{path}: no such file or directory")]
    NotFound {
        /// The path as resolved.
        path: PathBuf,
    },
    /// The path does not lie beneath any allowed root, or leads out of every root.
    #[error("{path} is outside the allowed roots set by the operator (REA_ALLOWED_ROOTS)")]
    OutsideRoots {
        /// The path as given (made absolute).
        path: PathBuf,
    },
    /// A path inside a bundle or application leads out of it.
    #[error(
        "{path} leads outside {within} (a symbolic link or `..` that escapes it); only links that stay inside are followed"
    )]
    Escapes {
        /// The path.
        path: PathBuf,
        /// The directory it must stay in.
        within: PathBuf,
    },
    /// A symbolic link where links are not followed.
    #[error("{path} is a symbolic link, which is not followed here")]
    Link {
        /// The path.
        path: PathBuf,
    },
    /// Not a regular file (or, where one may be, not a directory): refused before any read.
    #[error("{path} is {kind}, not a regular file; only regular files are read")]
    NotRegular {
        /// The path.
        path: PathBuf,
        /// What it is instead ([`EntryKind::describe`]).
        kind: &'static str,
    },
    /// A directory was expected.
    #[error("{path} is not a directory")]
    NotADirectory {
        /// The path.
        path: PathBuf,
    },
    /// A regular file was expected.
    #[error("{path} is a directory, not a file")]
    IsADirectory {
        /// The path.
        path: PathBuf,
    },
    /// An export destination exists and may not be replaced.
    #[error("{path} exists; choose another file or allow overwriting")]
    Exists {
        /// The destination.
        path: PathBuf,
    },
    /// An export destination's name holds a control character (a newline, a tab, any other
    /// below 0x20, or 0x7f): such a name misleads every listing that shows it.
    #[error(
        "{path:?} holds a control character in its file name (newline, tab, another below 0x20, or 0x7f); choose a name without one"
    )]
    ControlCharacter {
        /// The path as given.
        path: PathBuf,
    },
    /// An export destination lies inside a directory rea keeps its own state or configuration
    /// in, however the path was spelled.
    #[error(
        "{path} is inside {within}, rea's own {what} directory; exports are never written there: choose a directory outside it"
    )]
    Protected {
        /// The destination.
        path: PathBuf,
        /// The protected directory it lies in.
        within: PathBuf,
        /// `state` or `configuration`.
        what: &'static str,
    },
    /// An export destination is a session database file of rea (by device and inode: another
    /// name or a hard link of it is the same file).
    #[error(
        "{path} is the same file as {file}, a session database file of rea; exports never replace it"
    )]
    ProtectedFile {
        /// The destination.
        path: PathBuf,
        /// The session file it is.
        file: PathBuf,
    },
    /// `overwrite` named an existing file that is not an earlier rea export.
    #[error(
        "{path} exists and is not an earlier rea export ({what}); overwrite replaces only a file rea exported (a SQLite copy or JSON lines with rea's header), so remove it yourself or choose another name"
    )]
    NotAnExport {
        /// The destination.
        path: PathBuf,
        /// What it is instead.
        what: String,
    },
    /// A destination path that ends in no file name (`/`, `..`).
    #[error("{path} names no file")]
    NoFileName {
        /// The path as given.
        path: PathBuf,
    },
    /// The file changed while it was opened or read (shrank, or was replaced).
    #[error("{path} changed while it was read: {what}")]
    Changed {
        /// The path.
        path: PathBuf,
        /// What was seen.
        what: String,
    },
    /// Any other failure of the operating system.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The operating system's reason.
        #[source]
        source: io::Error,
    },
    /// The work ran past its deadline.
    #[error(transparent)]
    Stopped(#[from] DeadlineExceeded),
}

impl FsError {
    fn io(path: &Path, source: io::Error) -> FsError {
        match source.kind() {
            io::ErrorKind::NotFound => FsError::NotFound {
                path: path.to_path_buf(),
            },
            io::ErrorKind::NotADirectory => FsError::NotADirectory {
                path: path.to_path_buf(),
            },
            _ => FsError::Io {
                path: path.to_path_buf(),
                source,
            },
        }
    }
}

/// A path that was opened: a regular file or a directory, held by descriptor.
#[derive(Debug, Clone)]
pub enum Opened {
    /// A regular file.
    File(RegularFile),
    /// A directory.
    Dir(Directory),
}

impl Opened {
    /// The path it was opened at (canonical where the kernel tells it).
    pub fn path(&self) -> &Path {
        match self {
            Opened::File(f) => f.path(),
            Opened::Dir(d) => d.path(),
        }
    }

    /// Device and inode as checked.
    pub fn id(&self) -> FileId {
        match self {
            Opened::File(f) => f.id(),
            Opened::Dir(d) => d.id(),
        }
    }

    /// The regular file, or an error naming what it is instead.
    pub fn into_file(self) -> Result<RegularFile, FsError> {
        match self {
            Opened::File(f) => Ok(f),
            Opened::Dir(d) => Err(FsError::IsADirectory {
                path: d.path().to_path_buf(),
            }),
        }
    }

    /// The directory, or an error.
    pub fn into_dir(self) -> Result<Directory, FsError> {
        match self {
            Opened::Dir(d) => Ok(d),
            Opened::File(f) => Err(FsError::NotADirectory {
                path: f.path().to_path_buf(),
            }),
        }
    }
}

/// How a file was reached, for opening what sits beside it (an asar's `.unpacked` directory)
/// the same way.
#[derive(Debug, Clone)]
enum Origin {
    /// Resolved beneath a directory (an allowed root) as `rel`.
    Beneath { dir: Directory, rel: PathBuf },
    /// Opened without roots at this absolute path.
    Given(PathBuf, sys::Resolver),
}

struct FileInner {
    file: std::fs::File,
    path: PathBuf,
    id: FileId,
    len: u64,
    origin: Option<Origin>,
}

/// A regular file held open: every read of it goes through this descriptor. Cloning shares it.
#[derive(Clone)]
pub struct RegularFile(Arc<FileInner>);

impl std::fmt::Debug for RegularFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegularFile")
            .field("path", &self.0.path)
            .field("id", &self.0.id)
            .field("len", &self.0.len)
            .finish()
    }
}

/// Two handles are equal when they hold the same file (device and inode).
impl PartialEq for RegularFile {
    fn eq(&self, other: &Self) -> bool {
        self.0.id == other.0.id
    }
}

impl Eq for RegularFile {}

/// A digest of a whole file, with its first bytes.
#[derive(Debug, Clone)]
pub struct FileDigest {
    /// Lowercase hex SHA-256 of the file's bytes.
    pub sha256: String,
    /// The first bytes (as many as asked for, or the whole file when shorter).
    pub head: Vec<u8>,
}

/// Bytes hashed between two looks at the deadline.
const DIGEST_CHUNK: usize = 1 << 20;

impl RegularFile {
    /// Opens `path` without roots (following links), refusing anything but a regular file.
    pub fn open(path: &Path) -> Result<RegularFile, FsError> {
        open_unconfined(path, sys::Resolver::native())?.into_file()
    }

    /// The path it was opened at.
    pub fn path(&self) -> &Path {
        &self.0.path
    }

    /// Device and inode as checked when it was opened.
    pub fn id(&self) -> FileId {
        self.0.id
    }

    /// Its size when it was opened; reads never go past it.
    pub fn len(&self) -> u64 {
        self.0.len
    }

    /// Whether it was empty when opened.
    pub fn is_empty(&self) -> bool {
        self.0.len == 0
    }

    /// Its size now (it may have been cut or grown since it was opened).
    pub fn current_len(&self) -> io::Result<u64> {
        Ok(self.0.file.metadata()?.len())
    }

    /// The raw descriptor (to hand to a child process as `/proc/self/fd/N`).
    #[cfg(unix)]
    pub fn as_raw_fd(&self) -> std::os::fd::RawFd {
        std::os::fd::AsRawFd::as_raw_fd(&self.0.file)
    }

    /// Reads at `offset` into `buf`; fewer bytes at the end of the file.
    pub fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        sys::read_at(&self.0.file, buf, offset)
    }

    /// Exactly `len` bytes at `offset`, or an error when the file ends first. The caller bounds
    /// `len`.
    pub fn read_range(&self, offset: u64, len: u64) -> io::Result<Vec<u8>> {
        let len = usize::try_from(len).map_err(|_| too_large(len))?;
        let mut buf = vec![0u8; len];
        let mut got = 0;
        while got < len {
            match sys::read_at(&self.0.file, &mut buf[got..], offset + got as u64) {
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(buf)
    }

    /// At most `max` bytes from `offset`, fewer when the file (as opened) ends first.
    pub fn read_head(&self, offset: u64, max: usize) -> io::Result<Vec<u8>> {
        let available = self.0.len.saturating_sub(offset);
        let want = (max as u64).min(available) as usize;
        let mut buf = vec![0u8; want];
        let mut got = 0;
        while got < want {
            match sys::read_at(&self.0.file, &mut buf[got..], offset + got as u64) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        buf.truncate(got);
        Ok(buf)
    }

    /// The whole file as opened (at most `limit` bytes, else an error): for small files such as
    /// plists and sources.
    pub fn read_all(&self, limit: u64) -> Result<Vec<u8>, FsError> {
        if self.0.len > limit {
            return Err(FsError::Io {
                path: self.0.path.clone(),
                source: io::Error::new(
                    io::ErrorKind::FileTooLarge,
                    format!("{} bytes exceeds the {limit}-byte limit", self.0.len),
                ),
            });
        }
        let bytes = self
            .read_head(0, self.0.len as usize)
            .map_err(|e| FsError::io(&self.0.path, e))?;
        if (bytes.len() as u64) < self.0.len {
            return Err(self.changed(format!(
                "{} bytes when opened, {} read",
                self.0.len,
                bytes.len()
            )));
        }
        Ok(bytes)
    }

    /// `len` bytes at `offset`, mapped (read when no map can be made). The range is checked
    /// against the file's size now, so a file cut since it was opened is an error, not a fault.
    pub fn bytes(&self, offset: u64, len: u64) -> Result<Bytes, FsError> {
        let now = self
            .current_len()
            .map_err(|e| FsError::io(&self.0.path, e))?;
        if offset.checked_add(len).is_none_or(|end| end > now) {
            return Err(self.changed(format!(
                "{len} bytes at offset {offset} asked of a file of {now} bytes"
            )));
        }
        let size = usize::try_from(len).map_err(|_| FsError::io(&self.0.path, too_large(len)))?;
        if size == 0 {
            return Ok(Bytes::Owned(Vec::new()));
        }
        match Mapped::new(&self.0.file, offset, size) {
            Ok(m) => Ok(Bytes::Mapped(m)),
            Err(_) => self
                .read_range(offset, len)
                .map(Bytes::Owned)
                .map_err(|e| FsError::io(&self.0.path, e)),
        }
    }

    /// SHA-256 of the file as opened (exactly [`len`](Self::len) bytes, in chunks with the
    /// deadline checked between them), with its first `head` bytes: hashed from a map of the
    /// file, which copies nothing, else read.
    pub fn digest(&self, head: usize, deadline: &Deadline) -> Result<FileDigest, FsError> {
        match self.digest_mapped(head, deadline)? {
            Some(digest) => Ok(digest),
            None => self.digest_read(head, deadline),
        }
    }

    /// [`digest`](Self::digest) from a map of the file, each chunk's pages given back once
    /// hashed (a large file's pages do not stay in memory); `None` when no map is made (an
    /// empty file, one cut since it was opened, or no map to be had).
    fn digest_mapped(
        &self,
        head: usize,
        deadline: &Deadline,
    ) -> Result<Option<FileDigest>, FsError> {
        let Ok(len) = usize::try_from(self.0.len) else {
            return Ok(None);
        };
        let now = self
            .current_len()
            .map_err(|e| FsError::io(&self.0.path, e))?;
        if len == 0 || now < self.0.len {
            return Ok(None);
        }
        let Ok(map) = Mapped::new(&self.0.file, 0, len) else {
            return Ok(None);
        };
        let bytes = Bytes::Mapped(map);
        let first = bytes[..head.min(len)].to_vec();
        let mut hasher = Sha256::new();
        for at in (0..len).step_by(DIGEST_CHUNK) {
            deadline.check(|| format!("hashing {}", self.0.path.display()))?;
            let chunk = at..(at + DIGEST_CHUNK).min(len);
            hasher.update(&bytes[chunk.clone()]);
            bytes.release(chunk);
        }
        if bytes.changed() {
            return Err(self.changed("it was cut while it was hashed".into()));
        }
        Ok(Some(FileDigest {
            sha256: hex::encode(hasher.finalize()),
            head: first,
        }))
    }

    /// [`digest`](Self::digest) read in chunks.
    fn digest_read(&self, head: usize, deadline: &Deadline) -> Result<FileDigest, FsError> {
        let mut hasher = Sha256::new();
        let mut first = Vec::with_capacity(head.min(self.0.len as usize));
        let mut buffer = vec![0u8; DIGEST_CHUNK.min(self.0.len.max(1) as usize)];
        let mut offset = 0u64;
        while offset < self.0.len {
            deadline.check(|| format!("hashing {}", self.0.path.display()))?;
            let want = (self.0.len - offset).min(buffer.len() as u64) as usize;
            let n = match sys::read_at(&self.0.file, &mut buffer[..want], offset) {
                Ok(0) => {
                    return Err(self.changed(format!(
                        "{} bytes when opened, ended at {offset}",
                        self.0.len
                    )));
                }
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(FsError::io(&self.0.path, e)),
            };
            let chunk = &buffer[..n];
            hasher.update(chunk);
            if first.len() < head {
                let take = (head - first.len()).min(n);
                first.extend_from_slice(&chunk[..take]);
            }
            offset += n as u64;
        }
        Ok(FileDigest {
            sha256: hex::encode(hasher.finalize()),
            head: first,
        })
    }

    /// The file's SHA-256 as [`digest`](Self::digest) takes it, refused as changed when its first
    /// bytes are no longer `head` (what an earlier read of them found).
    pub fn digest_expecting(&self, head: &[u8], deadline: &Deadline) -> Result<String, FsError> {
        let digest = self.digest(head.len(), deadline)?;
        if digest.head != head {
            return Err(self.changed("its first bytes changed while it was read".into()));
        }
        Ok(digest.sha256)
    }

    /// The directory named `<this file's name><suffix>` beside it, reached the way this file
    /// was (beneath the same root): an asar archive's `.unpacked` sibling.
    pub fn sibling_dir(&self, suffix: &str) -> Result<Directory, FsError> {
        let with_suffix = |p: &Path| {
            let mut name = p.file_name().unwrap_or_default().to_os_string();
            name.push(suffix);
            p.with_file_name(name)
        };
        match &self.0.origin {
            Some(Origin::Beneath { dir, rel }) => dir.open_dir(with_suffix(rel)),
            Some(Origin::Given(path, resolver)) => {
                open_unconfined(&with_suffix(path), *resolver)?.into_dir()
            }
            None => Err(FsError::NotFound {
                path: with_suffix(&self.0.path),
            }),
        }
    }

    fn changed(&self, what: String) -> FsError {
        FsError::Changed {
            path: self.0.path.clone(),
            what,
        }
    }
}

/// A length that does not fit in memory here.
fn too_large(len: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::FileTooLarge,
        format!("{len} bytes do not fit in memory"),
    )
}

struct DirInner {
    fd: sys::DirFd,
    path: PathBuf,
    id: FileId,
    /// How paths beneath it are resolved (what it was itself opened with).
    resolver: sys::Resolver,
}

/// A directory held open: what lies beneath it is opened relative to this descriptor.
#[derive(Clone)]
pub struct Directory(Arc<DirInner>);

impl std::fmt::Debug for Directory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Directory")
            .field("path", &self.0.path)
            .field("id", &self.0.id)
            .finish()
    }
}

impl PartialEq for Directory {
    fn eq(&self, other: &Self) -> bool {
        self.0.id == other.0.id
    }
}

impl Eq for Directory {}

/// One entry of a directory listing, as the entry itself is: links are not followed.
#[derive(Debug, Clone)]
pub struct DirEntry {
    /// Its name in the directory.
    pub name: OsString,
    /// What it is.
    pub kind: EntryKind,
    /// `st_size` of the entry itself (a link's is the length of its target text).
    pub size: u64,
}

impl Directory {
    /// Opens `path` without roots (following links), refusing anything but a directory.
    pub fn open(path: &Path) -> Result<Directory, FsError> {
        open_unconfined(path, sys::Resolver::native())?.into_dir()
    }

    /// The path it was opened at.
    pub fn path(&self) -> &Path {
        &self.0.path
    }

    /// Device and inode as checked.
    pub fn id(&self) -> FileId {
        self.0.id
    }

    fn fd(&self) -> &sys::DirFd {
        &self.0.fd
    }

    /// Opens `rel` beneath this directory, following links only while they stay inside it.
    pub fn open_beneath(&self, rel: impl AsRef<Path>) -> Result<Opened, FsError> {
        self.open_with(rel.as_ref(), Links::Beneath, None)
    }

    /// [`open_beneath`](Self::open_beneath), for a regular file.
    pub fn open_file(&self, rel: impl AsRef<Path>) -> Result<RegularFile, FsError> {
        self.open_beneath(rel)?.into_file()
    }

    /// [`open_beneath`](Self::open_beneath), for a directory.
    pub fn open_dir(&self, rel: impl AsRef<Path>) -> Result<Directory, FsError> {
        self.open_beneath(rel)?.into_dir()
    }

    /// Opens `rel` beneath this directory following no link at all (for walkers, which list
    /// links as links).
    pub fn open_nofollow(&self, rel: impl AsRef<Path>) -> Result<Opened, FsError> {
        self.open_with(rel.as_ref(), Links::Never, None)
    }

    /// [`open_nofollow`](Self::open_nofollow), for a regular file.
    pub fn open_file_nofollow(&self, rel: impl AsRef<Path>) -> Result<RegularFile, FsError> {
        self.open_nofollow(rel)?.into_file()
    }

    /// [`open_nofollow`](Self::open_nofollow), for a directory.
    pub fn open_dir_nofollow(&self, rel: impl AsRef<Path>) -> Result<Directory, FsError> {
        self.open_nofollow(rel)?.into_dir()
    }

    /// What `rel` is beneath this directory, following links that stay inside; `None` when it
    /// does not exist, leads outside, or cannot be looked at. Opens nothing for reading.
    pub fn kind(&self, rel: impl AsRef<Path>) -> Option<EntryKind> {
        sys::kind_beneath(self.fd(), self.0.resolver, rel.as_ref())
    }

    /// Whether `rel` is a regular file beneath this directory (links inside followed).
    pub fn is_file(&self, rel: impl AsRef<Path>) -> bool {
        self.kind(rel) == Some(EntryKind::File)
    }

    /// Whether `rel` is a directory beneath this directory (links inside followed).
    pub fn is_dir(&self, rel: impl AsRef<Path>) -> bool {
        self.kind(rel) == Some(EntryKind::Dir)
    }

    /// The entries of this directory (not `.` and `..`), in no particular order.
    pub fn entries(&self) -> Result<Vec<DirEntry>, FsError> {
        sys::list(self.fd()).map_err(|e| FsError::io(&self.0.path, e))
    }

    /// The target text of the link `rel` (relative to this directory), not followed.
    pub fn read_link(&self, rel: impl AsRef<Path>) -> Result<PathBuf, FsError> {
        let rel = rel.as_ref();
        let (parent, name) = split_last(rel).ok_or_else(|| FsError::NoFileName {
            path: rel.to_path_buf(),
        })?;
        let dir;
        let fd = if parent.as_os_str().is_empty() {
            self.fd()
        } else {
            dir = self.open_dir_nofollow(parent)?;
            dir.fd()
        };
        sys::read_link(fd, name).map_err(|e| FsError::io(&self.0.path.join(rel), e))
    }

    fn open_with(
        &self,
        rel: &Path,
        links: Links,
        origin: Option<Origin>,
    ) -> Result<Opened, FsError> {
        let shown = self.0.path.join(rel);
        let admitted = sys::open_beneath_admitted(
            self.fd(),
            self.0.resolver,
            rel,
            links,
            shown,
            &self.0.path,
        )?;
        Ok(opened(admitted, self.0.resolver, origin))
    }
}

/// Splits `rel` into its parent and its last normal component.
fn split_last(rel: &Path) -> Option<(&Path, &OsStr)> {
    match rel.components().next_back()? {
        Component::Normal(name) => Some((rel.parent().unwrap_or(Path::new("")), name)),
        _ => None,
    }
}

/// What `sys` admitted, as the handle this module gives out.
fn opened(admitted: Admitted, resolver: sys::Resolver, origin: Option<Origin>) -> Opened {
    match admitted {
        Admitted::Dir { fd, id, path } => Opened::Dir(Directory(Arc::new(DirInner {
            fd,
            path,
            id,
            resolver,
        }))),
        Admitted::File {
            file,
            id,
            len,
            path,
        } => Opened::File(RegularFile(Arc::new(FileInner {
            file,
            path,
            id,
            len,
            origin,
        }))),
    }
}

/// Opens `path` with no roots: links are followed as the system does, and only regular files
/// and directories are admitted.
fn open_unconfined(path: &Path, resolver: sys::Resolver) -> Result<Opened, FsError> {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let admitted = sys::open_path(path, resolver)?;
    Ok(opened(
        admitted,
        resolver,
        Some(Origin::Given(absolute, resolver)),
    ))
}

#[derive(Debug)]
struct Root {
    /// The root as the operator wrote it, made absolute when the server started.
    given: PathBuf,
    /// The directory it named then, held open; `None` when it could not be opened.
    dir: Option<Directory>,
    /// Why it could not be opened.
    problem: Option<String>,
}

/// The operator's allowed roots, opened once. Empty means not confined: paths open as the system
/// resolves them, with the regular-file rules still applied. Cloning shares the descriptors.
#[derive(Debug, Clone)]
pub struct Roots {
    roots: Arc<Vec<Root>>,
    /// How paths are resolved beneath them (and opened without them).
    resolver: sys::Resolver,
}

impl Default for Roots {
    fn default() -> Roots {
        Roots {
            roots: Arc::default(),
            resolver: sys::Resolver::native(),
        }
    }
}

impl Roots {
    /// Opens each root now. A root that cannot be opened admits nothing (and is reported by
    /// [`problems`](Self::problems)); it is not looked at again.
    pub fn new<I, P>(paths: I) -> Roots
    where
        I: IntoIterator<Item = P>,
        P: Into<PathBuf>,
    {
        Roots::with_resolver(paths, sys::Resolver::native())
    }

    /// [`Roots::new`] resolving with `resolver`: tests force the portable one on Linux.
    pub(crate) fn with_resolver<I, P>(paths: I, resolver: sys::Resolver) -> Roots
    where
        I: IntoIterator<Item = P>,
        P: Into<PathBuf>,
    {
        let roots = paths
            .into_iter()
            .map(|p| {
                let given: PathBuf = p.into();
                let given = std::path::absolute(&given).unwrap_or(given);
                match open_unconfined(&given, resolver).and_then(Opened::into_dir) {
                    Ok(dir) => Root {
                        given,
                        dir: Some(dir),
                        problem: None,
                    },
                    Err(e) => {
                        tracing::warn!("allowed root {} admits nothing: {e}", given.display());
                        Root {
                            given,
                            dir: None,
                            problem: Some(e.to_string()),
                        }
                    }
                }
            })
            .collect();
        Roots {
            roots: Arc::new(roots),
            resolver,
        }
    }

    /// No roots: not confined.
    pub fn none() -> Roots {
        Roots::default()
    }

    /// Whether paths are confined to roots.
    pub fn is_confined(&self) -> bool {
        !self.roots.is_empty()
    }

    /// The roots as the operator gave them.
    pub fn paths(&self) -> impl Iterator<Item = &Path> {
        self.roots.iter().map(|r| r.given.as_path())
    }

    /// Roots that could not be opened at start, with the reason.
    pub fn problems(&self) -> Vec<String> {
        self.roots
            .iter()
            .filter_map(|r| {
                r.problem
                    .as_ref()
                    .map(|p| format!("{}: {p}", r.given.display()))
            })
            .collect()
    }

    /// Resolves `path` beneath the root that holds it and opens it: a regular file or a
    /// directory, kept by descriptor. Without roots, opens it as the system resolves it.
    pub fn open(&self, path: &Path) -> Result<Opened, FsError> {
        if !self.is_confined() {
            return open_unconfined(path, self.resolver);
        }
        let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let outside = || FsError::OutsideRoots {
            path: absolute.clone(),
        };
        // First as written: beneath the root whose spelling (as given, or as it resolved when
        // the server started) begins the path.
        for root in self.roots.iter() {
            let Some(dir) = &root.dir else { continue };
            for spelling in [&root.given, &dir.0.path] {
                if let Ok(rel) = absolute.strip_prefix(spelling) {
                    match self.open_in(dir, rel) {
                        Err(FsError::Escapes { .. }) => break,
                        other => return other,
                    }
                }
            }
        }
        // Then through links above the roots (a path spelled through a link to a root): the
        // resolution that finds the root is only a guide, since the open is beneath the root.
        let Ok(canonical) = std::fs::canonicalize(&absolute) else {
            return Err(outside());
        };
        for root in self.roots.iter() {
            let Some(dir) = &root.dir else { continue };
            if let Ok(rel) = canonical.strip_prefix(&dir.0.path) {
                match self.open_in(dir, rel) {
                    Err(FsError::Escapes { .. }) => continue,
                    other => return other,
                }
            }
        }
        Err(outside())
    }

    fn open_in(&self, root: &Directory, rel: &Path) -> Result<Opened, FsError> {
        let origin = Origin::Beneath {
            dir: root.clone(),
            rel: rel.to_path_buf(),
        };
        root.open_with(rel, Links::Beneath, Some(origin))
    }

    /// Resolves the directory an export is to be written in (beneath a root), for a file named
    /// by the last component of `path`. Nothing is created yet. The name may hold no control
    /// character; the directory, checked on its descriptor and on every ancestor reached through
    /// `..` from it, may not be one of `protected`'s directories or lie beneath one (so no
    /// spelling, link or bind mount of it gets around the check); and `protected`'s files are
    /// kept with the destination, which is never allowed to be one of them.
    pub fn open_new(&self, path: &Path, protected: &Protected) -> Result<NewFile, FsError> {
        let (parent, name) = split_last(path).ok_or_else(|| FsError::NoFileName {
            path: path.to_path_buf(),
        })?;
        if name
            .as_encoded_bytes()
            .iter()
            .any(|&b| b < 0x20 || b == 0x7f)
        {
            return Err(FsError::ControlCharacter {
                path: path.to_path_buf(),
            });
        }
        let parent = if parent.as_os_str().is_empty() {
            Path::new(".")
        } else {
            parent
        };
        let dir = self.open(parent)?.into_dir()?;
        let full = dir.path().join(name);
        protected.refuse_within(&dir, &full)?;
        Ok(NewFile {
            dir,
            name: name.to_os_string(),
            path: full,
            protected: protected.clone(),
        })
    }
}

/// What an export may never be written into or over: directories (and everything beneath them)
/// and files, each known by device and inode, taken when it is added, so that another spelling,
/// a symbolic link, a bind mount or a hard link names the same thing.
#[derive(Debug, Clone, Default)]
pub struct Protected {
    dirs: Vec<(FileId, PathBuf, &'static str)>,
    files: Vec<(FileId, PathBuf)>,
}

/// The most ancestors an ancestor walk climbs; far above any real depth, it only bounds a
/// file system that never reaches its root.
const MAX_ANCESTORS: usize = 4096;

impl Protected {
    /// Nothing protected.
    pub fn none() -> Protected {
        Protected::default()
    }

    /// Protects the directory at `path` (`what` names it in refusals: `state`, `configuration`),
    /// when it exists now; one that does not exist holds nothing to protect.
    pub fn dir(mut self, path: &Path, what: &'static str) -> Protected {
        if let Some((id, true)) = sys::path_id(path) {
            self.dirs.push((id, path.to_path_buf(), what));
        }
        self
    }

    /// Protects the file at `path` when it exists now.
    pub fn file(mut self, path: &Path) -> Protected {
        if let Some((id, _)) = sys::path_id(path) {
            self.files.push((id, path.to_path_buf()));
        }
        self
    }

    /// Refuses `dir` (where `dest` is to be created) when it or any ancestor of it, climbed by
    /// `..` from its descriptor, is a protected directory.
    fn refuse_within(&self, dir: &Directory, dest: &Path) -> Result<(), FsError> {
        if self.dirs.is_empty() {
            return Ok(());
        }
        let io = |e| FsError::io(dir.path(), e);
        let mut current: Option<sys::DirFd> = None;
        let mut id = dir.id();
        for _ in 0..MAX_ANCESTORS {
            if let Some((_, within, what)) = self.dirs.iter().find(|(d, _, _)| *d == id) {
                return Err(FsError::Protected {
                    path: dest.to_path_buf(),
                    within: within.clone(),
                    what,
                });
            }
            let from = current.as_ref().unwrap_or(dir.fd());
            let (up, up_id) = sys::parent(from, dir.0.resolver).map_err(io)?;
            // The root is its own parent.
            if up_id == id {
                return Ok(());
            }
            id = up_id;
            current = Some(up);
        }
        Ok(())
    }

    fn file_named(&self, id: FileId) -> Option<&Path> {
        self.files
            .iter()
            .find(|(f, _)| *f == id)
            .map(|(_, p)| p.as_path())
    }
}

/// The name that opens the descriptor `fd` again, in this process or in a child that inherited
/// it: `/proc/self/fd/N` on Linux, `/dev/fd/N` on other Unix systems. What is opened by it is the
/// file the descriptor holds, whatever has its path since.
#[cfg(unix)]
pub fn descriptor_name(fd: std::os::fd::RawFd) -> PathBuf {
    if cfg!(target_os = "linux") {
        PathBuf::from(format!("/proc/self/fd/{fd}"))
    } else {
        PathBuf::from(format!("/dev/fd/{fd}"))
    }
}

/// Whether the kernel resolves paths with `openat2` here (else the component walk is used).
pub fn kernel_resolves_beneath() -> bool {
    sys::kernel_resolves_beneath()
}

/// A file to be created in a directory held open: written to a temporary file beside it, then
/// renamed over its name.
#[derive(Debug, Clone)]
pub struct NewFile {
    dir: Directory,
    name: OsString,
    path: PathBuf,
    /// What the destination may never be (checked when an existing file is claimed).
    protected: Protected,
}

/// What a destination's name holds before an export is renamed over it: decided once, on the
/// descriptor of what was there, by [`NewFile::claim`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// Nothing: the name must still be free when the export is renamed into place.
    Fresh,
    /// An earlier export, this file (device and inode): only it may be replaced.
    Replace(FileId),
}

/// The bytes of an existing destination read to recognise an earlier export.
pub const CLAIM_HEAD: usize = 4096;

/// Distinguishes temporary names of one process.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

impl NewFile {
    /// Where the file will be.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether something (a file, a link, dangling or not) has the name now.
    pub fn exists(&self) -> bool {
        sys::entry_id(self.dir.fd(), &self.name).is_ok()
    }

    /// Decides what may be done with the destination's name. A free name is [`Claim::Fresh`]. A
    /// taken one is refused unless `overwrite`; then it is opened without following a link, and
    /// may be replaced only when it is a regular file, none of the protected files, and an
    /// earlier export by its content: `recognise` is given its first [`CLAIM_HEAD`] bytes, read
    /// through the descriptor opened for this check, and returns what it is instead when it is
    /// not one. The answer names that very file, so a file put at the name afterwards is not
    /// replaced ([`TempFile::commit`]).
    pub fn claim(
        &self,
        overwrite: bool,
        recognise: impl FnOnce(&[u8]) -> Result<(), String>,
    ) -> Result<Claim, FsError> {
        let id = match sys::entry_id(self.dir.fd(), &self.name) {
            Ok(id) => id,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Claim::Fresh),
            Err(e) => return Err(FsError::io(&self.path, e)),
        };
        if let Some(file) = self.protected.file_named(id) {
            return Err(FsError::ProtectedFile {
                path: self.path.clone(),
                file: file.to_path_buf(),
            });
        }
        if !overwrite {
            return Err(FsError::Exists {
                path: self.path.clone(),
            });
        }
        let not_export = |what: String| FsError::NotAnExport {
            path: self.path.clone(),
            what,
        };
        let file = match self.dir.open_file_nofollow(&self.name) {
            Ok(f) => f,
            Err(FsError::Link { .. }) => return Err(not_export("a symbolic link".into())),
            Err(FsError::NotRegular { kind, .. }) => return Err(not_export(kind.into())),
            Err(FsError::IsADirectory { .. }) => return Err(not_export("a directory".into())),
            Err(e) => return Err(e),
        };
        if let Some(protected) = self.protected.file_named(file.id()) {
            return Err(FsError::ProtectedFile {
                path: self.path.clone(),
                file: protected.to_path_buf(),
            });
        }
        let head = file
            .read_head(0, CLAIM_HEAD)
            .map_err(|e| FsError::io(&self.path, e))?;
        recognise(&head).map_err(not_export)?;
        Ok(Claim::Replace(file.id()))
    }

    /// A new temporary file beside the destination, created with `O_EXCL | O_NOFOLLOW`. It is
    /// removed when dropped unless [`TempFile::commit`] renamed it into place.
    pub fn temp(&self) -> Result<TempFile<'_>, FsError> {
        loop {
            let mut name = OsString::from(".");
            name.push(&self.name);
            name.push(format!(
                ".rea-{}-{}.tmp",
                std::process::id(),
                TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
            ));
            match sys::create_new(self.dir.fd(), &name) {
                Ok(file) => {
                    return Ok(TempFile {
                        dest: self,
                        name,
                        file,
                        done: false,
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(FsError::io(&self.dir.path().join(&name), e)),
            }
        }
    }

    fn rename_error(&self, e: io::Error) -> FsError {
        if e.kind() == io::ErrorKind::AlreadyExists {
            FsError::Exists {
                path: self.path.clone(),
            }
        } else {
            FsError::io(&self.path, e)
        }
    }
}

/// A temporary file beside an export destination; removed on drop unless committed.
#[derive(Debug)]
pub struct TempFile<'a> {
    dest: &'a NewFile,
    name: OsString,
    file: std::fs::File,
    done: bool,
}

impl TempFile<'_> {
    /// The file to write.
    pub fn file(&mut self) -> &mut std::fs::File {
        &mut self.file
    }

    /// The name by which something that opens files by name (SQLite's `VACUUM INTO`) writes this
    /// very file: on Unix its descriptor's ([`descriptor_name`]), so what is written is the file
    /// created whatever has its name since; on Windows, which has no such name, its path, where it
    /// was created as a new file a moment before.
    pub fn reopen_name(&self) -> PathBuf {
        #[cfg(unix)]
        {
            descriptor_name(std::os::fd::AsRawFd::as_raw_fd(&self.file))
        }
        #[cfg(not(unix))]
        {
            self.dest.dir.path().join(&self.name)
        }
    }

    /// Flushes it to disk and puts it at the destination's name as `claim` allows: a
    /// [`Claim::Fresh`] name must still be free; a [`Claim::Replace`] name must still hold the
    /// file that was checked. The replacement is an atomic exchange of the two names, after which
    /// what was swapped out is compared with the checked file: anything else is swapped back and
    /// kept, and the export is refused. Returns its size.
    pub fn commit(mut self, claim: Claim) -> Result<u64, FsError> {
        let path = self.dest.path.clone();
        self.file.sync_all().map_err(|e| FsError::io(&path, e))?;
        let size = self
            .file
            .metadata()
            .map_err(|e| FsError::io(&path, e))?
            .len();
        let dir = self.dest.dir.fd();
        let resolver = self.dest.dir.0.resolver;
        let changed = || FsError::Changed {
            path: path.clone(),
            what: "another file took the name after it was checked; it was left as it is".into(),
        };
        let (temp, name) = (&self.name, &self.dest.name);
        match claim {
            Claim::Fresh => sys::rename(dir, resolver, temp, name, false)
                .map_err(|e| self.dest.rename_error(e))?,
            Claim::Replace(checked) => match sys::exchange(dir, resolver, temp, name) {
                Ok(()) => {
                    // The temporary name now holds what was at the destination.
                    let out = sys::entry_id(dir, temp);
                    if out.as_ref().ok() != Some(&checked) {
                        sys::exchange(dir, resolver, temp, name)
                            .map_err(|e| FsError::io(&path, e))?;
                        return Err(changed());
                    }
                    sys::unlink(dir, temp).map_err(|e| FsError::io(&path, e))?;
                }
                // Nothing at the name any more: it is put there as a new file.
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    sys::rename(dir, resolver, temp, name, false)
                        .map_err(|e| self.dest.rename_error(e))?
                }
                // A system or file system without the exchange: the name is looked at once more
                // just before the rename, the narrowest check left.
                Err(e) if e.kind() == io::ErrorKind::Unsupported => {
                    let now = sys::entry_id(dir, name);
                    if now.as_ref().ok() != Some(&checked) {
                        return Err(changed());
                    }
                    sys::rename(dir, resolver, temp, name, true)
                        .map_err(|e| self.dest.rename_error(e))?
                }
                Err(e) => return Err(FsError::io(&path, e)),
            },
        }
        self.done = true;
        Ok(size)
    }
}

impl Drop for TempFile<'_> {
    fn drop(&mut self) {
        if !self.done {
            let _ = sys::unlink(self.dest.dir.fd(), &self.name);
        }
    }
}

#[cfg(unix)]
impl std::os::fd::AsFd for RegularFile {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        std::os::fd::AsFd::as_fd(&self.0.file)
    }
}

#[cfg(all(test, unix))]
mod tests;
