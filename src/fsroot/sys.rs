//! The system calls behind [`super`] on Unix: resolution beneath a directory, classification by
//! `fstat`, admission of regular files and directories, listing by descriptor, and the renames
//! that put exports in place.
//!
//! There are two resolvers ([`Resolver`]). Linux has `Kernel`: `openat2(RESOLVE_BENEATH)` where
//! the kernel has it, else a component walk over `O_PATH` descriptors; what a path names is opened
//! `O_PATH` (which neither blocks on a FIFO nor wakes a device), classified, and reopened through
//! `/proc/self/fd`; exports are renamed with `renameat2`. Every other Unix has `Portable`, which
//! uses only what POSIX gives: a component walk with `O_NOFOLLOW`, the last component classified
//! by `fstatat` before it is opened (only a regular file or a directory is ever opened) and its
//! device and inode checked on the opened descriptor; exports are renamed with `linkat` (which
//! never replaces) or `renameat`. Linux tests force `Portable` so that it stays tested.
//!
//! Everything here works on raw descriptors; the module above turns results into typed errors
//! that name paths.

use std::ffi::{CStr, CString, OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Component, Path, PathBuf};

use super::{Admitted, DirEntry, EntryKind, FileId, FsError, Links, PSEUDO_FILE};

/// A directory held open.
pub(crate) type DirFd = OwnedFd;

/// How paths are resolved and opened, and exports renamed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Resolver {
    /// Linux: `openat2` (else the walk over `O_PATH` descriptors), `O_PATH` classification and
    /// `renameat2`.
    #[cfg(target_os = "linux")]
    Kernel,
    /// Any Unix: the component walk with plain descriptors, classification by `fstatat` before
    /// anything is opened, and `linkat`/`renameat`.
    // On Linux only the tests choose it.
    #[cfg_attr(all(target_os = "linux", not(test)), allow(dead_code))]
    Portable,
}

impl Resolver {
    /// The resolver of this system.
    pub(crate) fn native() -> Resolver {
        #[cfg(target_os = "linux")]
        {
            Resolver::Kernel
        }
        #[cfg(not(target_os = "linux"))]
        {
            Resolver::Portable
        }
    }
}

/// The most symbolic links one resolution follows, as the kernel's own limit.
const MAX_LINKS: usize = 40;

/// How often a resolution that raced a rename is tried again: the kernel's `EAGAIN` from
/// `openat2`, or, in the portable walk, a file that was not the one classified when it was opened.
const RETRIES: usize = 16;

/// Flags for reading what was classified as a regular file: `O_NONBLOCK` so that a FIFO put at
/// the name after the check cannot block the open (the device and inode check then refuses it),
/// `O_NOCTTY` so that a terminal never becomes ours.
const READ_FLAGS: libc::c_int =
    libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC;

/// Flags for a directory to resolve beneath and list.
const DIR_FLAGS: libc::c_int = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC;

fn cstring(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

fn check(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

/// `openat(dir, name, flags)`, `EINTR` retried.
pub(crate) fn openat(dir: RawFd, name: &OsStr, flags: libc::c_int) -> io::Result<OwnedFd> {
    let c = cstring(name)?;
    loop {
        // SAFETY: `c` is a valid NUL-terminated string; the result is a new descriptor we own.
        let fd = unsafe { libc::openat(dir, c.as_ptr(), flags, 0o666 as libc::c_uint) };
        if fd >= 0 {
            // SAFETY: `fd` was just returned by the kernel and is owned by no one else.
            return Ok(unsafe { OwnedFd::from_raw_fd(fd) });
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// `openat(dir, name, O_CREAT | O_EXCL | O_NOFOLLOW | O_WRONLY)`: a new file, never through a
/// link.
pub(crate) fn create_new(dir: &DirFd, name: &OsStr) -> io::Result<File> {
    let c = cstring(name)?;
    let flags = libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_WRONLY | libc::O_CLOEXEC;
    // SAFETY: as in `openat`.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), c.as_ptr(), flags, 0o644 as libc::c_uint) };
    check(fd)?;
    // SAFETY: a fresh descriptor.
    Ok(File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// `fstat` of a descriptor.
pub(crate) fn fstat(fd: RawFd) -> io::Result<libc::stat> {
    // SAFETY: `st` is fully written by a successful fstat.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    check(unsafe { libc::fstat(fd, &mut st) })?;
    Ok(st)
}

/// `fstatat(dir, name, flags)`.
fn fstatat(dir: RawFd, name: &OsStr, flags: libc::c_int) -> io::Result<libc::stat> {
    let c = cstring(name)?;
    // SAFETY: as in `fstat`.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    check(unsafe { libc::fstatat(dir, c.as_ptr(), &mut st, flags) })?;
    Ok(st)
}

/// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)`: what the entry itself is.
pub(crate) fn lstatat(dir: RawFd, name: &OsStr) -> io::Result<libc::stat> {
    fstatat(dir, name, libc::AT_SYMLINK_NOFOLLOW)
}

/// Device and inode of what is at `name` in `dir` (a link itself, not followed).
pub(crate) fn entry_id(dir: &DirFd, name: &OsStr) -> io::Result<FileId> {
    lstatat(dir.as_raw_fd(), name).map(|st| id_of(&st))
}

/// The kind of a file from its `st_mode`.
pub(crate) fn kind_of(st: &libc::stat) -> EntryKind {
    match st.st_mode & libc::S_IFMT {
        libc::S_IFREG => EntryKind::File,
        libc::S_IFDIR => EntryKind::Dir,
        libc::S_IFLNK => EntryKind::Symlink,
        libc::S_IFIFO => EntryKind::Fifo,
        libc::S_IFSOCK => EntryKind::Socket,
        libc::S_IFCHR => EntryKind::CharDevice,
        libc::S_IFBLK => EntryKind::BlockDevice,
        _ => EntryKind::Unknown,
    }
}

// `st_dev` and `st_ino` are narrower than u64 on some systems.
#[allow(clippy::unnecessary_cast)]
pub(crate) fn id_of(st: &libc::stat) -> FileId {
    FileId {
        dev: st.st_dev as u64,
        ino: st.st_ino as u64,
    }
}

/// Device and inode of the file or directory at `path` (links followed), and whether it is a
/// directory.
pub(crate) fn path_id(path: &Path) -> Option<(FileId, bool)> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    let id = FileId {
        dev: m.dev(),
        ino: m.ino(),
    };
    Some((id, m.is_dir()))
}

/// Whether a regular file lives on a pseudo file system (`/proc`, `/sys`, …) whose files report
/// a size that is not their content (`/proc/self/pagemap` says 0 and never ends).
#[cfg(target_os = "linux")]
fn is_pseudo_file_system(fd: RawFd) -> io::Result<bool> {
    // SAFETY: `sf` is fully written by a successful fstatfs.
    let mut sf: libc::statfs = unsafe { std::mem::zeroed() };
    check(unsafe { libc::fstatfs(fd, &mut sf) })?;
    const PSEUDO: [i64; 10] = [
        0x9fa0,      // proc
        0x6265_6572, // sysfs
        0x6462_6720, // debugfs
        0x7472_6163, // tracefs
        0x7363_6673, // securityfs
        0x0027_e0eb, // cgroup
        0x6367_7270, // cgroup2
        0x6265_6570, // configfs
        0xde5e_81e4, // efivarfs
        0xcafe_4a11, // bpf
    ];
    Ok(PSEUDO.contains(&(sf.f_type as i64)))
}

/// Elsewhere the pseudo file systems (`procfs`, `devfs`) hold no regular files whose size lies.
#[cfg(not(target_os = "linux"))]
fn is_pseudo_file_system(_: RawFd) -> io::Result<bool> {
    Ok(false)
}

/// Clears `O_NONBLOCK` (set so that opening a FIFO could not block) once the file is known to be
/// regular, so reads behave normally.
fn clear_nonblock(fd: RawFd) -> io::Result<()> {
    // SAFETY: fcntl on a descriptor we own.
    let flags = check(unsafe { libc::fcntl(fd, libc::F_GETFL) })?;
    check(unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) })?;
    Ok(())
}

/// `readlinkat(dir, name)`.
pub(crate) fn readlinkat(dir: RawFd, name: &OsStr) -> io::Result<PathBuf> {
    let c = cstring(name)?;
    let mut buf = vec![0u8; 4096];
    loop {
        // SAFETY: `buf` has `buf.len()` writable bytes.
        let n = unsafe { libc::readlinkat(dir, c.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let n = n as usize;
        if n < buf.len() {
            buf.truncate(n);
            return Ok(PathBuf::from(OsString::from_vec(buf)));
        }
        if buf.len() >= 1 << 16 {
            return Err(io::Error::from_raw_os_error(libc::ENAMETOOLONG));
        }
        buf.resize(buf.len() * 2, 0);
    }
}

/// The target text of the link `name` in `dir`, not followed.
pub(crate) fn read_link(dir: &DirFd, name: &OsStr) -> io::Result<PathBuf> {
    readlinkat(dir.as_raw_fd(), name)
}

/// The path the kernel gives for an open descriptor, when `/proc` is mounted.
#[cfg(target_os = "linux")]
fn fd_path(fd: RawFd) -> Option<PathBuf> {
    let link = std::fs::read_link(format!("/proc/self/fd/{fd}")).ok()?;
    // Files the kernel no longer names (deleted, or not on a path) are not paths to show.
    (link.is_absolute() && !link.as_os_str().as_bytes().ends_with(b" (deleted)")).then_some(link)
}

/// The path the kernel gives for an open descriptor (`F_GETPATH`).
#[cfg(target_os = "macos")]
fn fd_path(fd: RawFd) -> Option<PathBuf> {
    let mut buf = vec![0u8; libc::PATH_MAX as usize];
    // SAFETY: F_GETPATH writes at most PATH_MAX bytes, NUL-terminated.
    if unsafe { libc::fcntl(fd, libc::F_GETPATH, buf.as_mut_ptr()) } < 0 {
        return None;
    }
    let path = CStr::from_bytes_until_nul(&buf).ok()?;
    let path = PathBuf::from(OsStr::from_bytes(path.to_bytes()));
    path.is_absolute().then_some(path)
}

/// Elsewhere the kernel does not say: the path as resolved is shown.
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
fn fd_path(_: RawFd) -> Option<PathBuf> {
    None
}

/// `openat2` and the walk over `O_PATH` descriptors: Linux only.
#[cfg(target_os = "linux")]
mod kernel {
    use std::sync::atomic::{AtomicU8, Ordering};

    use super::*;

    /// Whether `openat2` works here: 0 unknown, 1 yes, 2 no (too old a kernel, or a seccomp
    /// filter that refuses it). Checked at run time on first use.
    static OPENAT2: AtomicU8 = AtomicU8::new(0);

    /// Flags for a descriptor that only names a file (for `fstat`), whatever its kind.
    pub(crate) const PATH_FLAGS: libc::c_int = libc::O_PATH | libc::O_CLOEXEC;

    #[repr(C)]
    struct OpenHow {
        flags: u64,
        mode: u64,
        resolve: u64,
    }

    const RESOLVE_NO_MAGICLINKS: u64 = 0x02;
    const RESOLVE_NO_SYMLINKS: u64 = 0x04;
    const RESOLVE_BENEATH: u64 = 0x08;

    /// One `openat2` call; `Err` with the raw error, `EAGAIN` and `EINTR` retried.
    fn openat2_raw(
        dir: RawFd,
        rel: &CStr,
        flags: libc::c_int,
        resolve: u64,
    ) -> io::Result<OwnedFd> {
        let how = OpenHow {
            flags: flags as u64,
            mode: 0,
            resolve,
        };
        for _ in 0..RETRIES {
            // SAFETY: `how` is a valid `struct open_how` of the size passed; `rel` is
            // NUL-terminated.
            let fd = unsafe {
                libc::syscall(
                    libc::SYS_openat2,
                    dir,
                    rel.as_ptr(),
                    &how as *const OpenHow,
                    std::mem::size_of::<OpenHow>(),
                )
            };
            if fd >= 0 {
                // SAFETY: a fresh descriptor.
                return Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) });
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                // A rename raced the resolution of `..`; the kernel asks to try again.
                Some(libc::EAGAIN) | Some(libc::EINTR) => continue,
                _ => return Err(e),
            }
        }
        Err(io::Error::from_raw_os_error(libc::EAGAIN))
    }

    /// Whether this kernel has `openat2` (5.6 and later) and lets us call it: probed once with a
    /// harmless call, since a seccomp filter may refuse it with `EPERM` or `ENOSYS`.
    pub(crate) fn openat2_available() -> bool {
        match OPENAT2.load(Ordering::Relaxed) {
            1 => true,
            2 => false,
            _ => {
                let ok = openat2_raw(libc::AT_FDCWD, c".", PATH_FLAGS, RESOLVE_BENEATH).is_ok();
                OPENAT2.store(if ok { 1 } else { 2 }, Ordering::Relaxed);
                ok
            }
        }
    }

    /// `openat2(dir, rel, flags, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS [| RESOLVE_NO_SYMLINKS])`.
    fn openat2(dir: RawFd, rel: &Path, flags: libc::c_int, links: Links) -> io::Result<OwnedFd> {
        let c = cstring(rel.as_os_str())?;
        let mut resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
        if links == Links::Never {
            resolve |= RESOLVE_NO_SYMLINKS;
        }
        openat2_raw(dir, &c, flags, resolve)
    }

    /// Opens `rel` beneath `dir` with `flags`: `openat2` where the kernel has it, else
    /// [`resolve_by_components`]. An escape is `EXDEV`; a refused link is `ELOOP`.
    pub(crate) fn open_beneath(
        dir: RawFd,
        rel: &Path,
        flags: libc::c_int,
        links: Links,
    ) -> io::Result<OwnedFd> {
        if rel.is_absolute() {
            return Err(io::Error::from_raw_os_error(libc::EXDEV));
        }
        let rel = if rel.as_os_str().is_empty() {
            Path::new(".")
        } else {
            rel
        };
        if openat2_available() {
            openat2(dir, rel, flags, links)
        } else {
            resolve_by_components(dir, rel, flags, links)
        }
    }

    /// The fallback for kernels without `openat2`: walks `rel` one component at a time from
    /// `dir` with `O_NOFOLLOW`, keeping an `O_PATH` descriptor per directory so that `..` returns
    /// to the directory it came from (and refusing `..` above `dir`), and reading each symbolic
    /// link itself so that only relative targets that stay beneath `dir` are followed.
    pub(crate) fn resolve_by_components(
        dir: RawFd,
        rel: &Path,
        flags: libc::c_int,
        links: Links,
    ) -> io::Result<OwnedFd> {
        let mut pending: std::collections::VecDeque<OsString> = std::collections::VecDeque::new();
        push_components(&mut pending, rel, false)?;
        // Descriptors of the directories below `dir` on the current path; empty means `dir`.
        let mut stack: Vec<OwnedFd> = Vec::new();
        let mut followed = 0usize;
        loop {
            let Some(name) = pending.pop_front() else {
                // The path ended on a directory (`.` or `x/..`): open it with the final flags.
                let current = stack.last().map_or(dir, |fd| fd.as_raw_fd());
                return openat(current, OsStr::new("."), flags);
            };
            if name == ".." {
                if stack.pop().is_none() {
                    return Err(io::Error::from_raw_os_error(libc::EXDEV));
                }
                continue;
            }
            let current = stack.last().map_or(dir, |fd| fd.as_raw_fd());
            let last = pending.is_empty();
            if last {
                match openat(current, &name, flags | libc::O_NOFOLLOW) {
                    Ok(fd) => {
                        // An `O_PATH | O_NOFOLLOW` open of a link succeeds on the link itself.
                        if flags & libc::O_PATH == 0
                            || kind_of(&fstat(fd.as_raw_fd())?) != EntryKind::Symlink
                        {
                            return Ok(fd);
                        }
                    }
                    Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {}
                    Err(e) => return Err(e),
                }
            } else {
                let fd = openat(
                    current,
                    &name,
                    libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                )?;
                match kind_of(&fstat(fd.as_raw_fd())?) {
                    EntryKind::Dir => {
                        stack.push(fd);
                        continue;
                    }
                    EntryKind::Symlink => {}
                    _ => return Err(io::Error::from_raw_os_error(libc::ENOTDIR)),
                }
            }
            // `name` is a symbolic link.
            follow(&mut pending, &mut followed, current, &name, links)?;
        }
    }

    /// Turns an `O_PATH` descriptor into an [`Admitted`] when it names a regular file or a
    /// directory: classifies it without reading, then reopens that very file for reading
    /// through `/proc/self/fd/N` (or, without `/proc`, by resolving again with `reopen` and
    /// checking that the device and inode are the ones classified).
    pub(super) fn admit(
        fd: OwnedFd,
        path: PathBuf,
        reopen: impl Fn(libc::c_int) -> io::Result<OwnedFd>,
    ) -> Result<Admitted, FsError> {
        let st = fstat(fd.as_raw_fd()).map_err(|e| FsError::io(&path, e))?;
        let kind = kind_of(&st);
        let mut flags = libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NOCTTY;
        match kind {
            EntryKind::File => refuse_pseudo(fd.as_raw_fd(), &path)?,
            EntryKind::Dir => flags |= libc::O_DIRECTORY,
            other => {
                return Err(FsError::NotRegular {
                    path,
                    kind: other.describe(),
                });
            }
        }
        let proc_path = PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()));
        let readable = match openat(libc::AT_FDCWD, proc_path.as_os_str(), flags) {
            Ok(readable) => readable,
            Err(_) => {
                let readable =
                    reopen(flags | libc::O_NONBLOCK).map_err(|e| FsError::io(&path, e))?;
                clear_nonblock(readable.as_raw_fd()).map_err(|e| FsError::io(&path, e))?;
                readable
            }
        };
        let now = fstat(readable.as_raw_fd()).map_err(|e| FsError::io(&path, e))?;
        if id_of(&now) != id_of(&st) {
            return Err(FsError::Changed {
                path,
                what: "it was replaced between the check and the open".into(),
            });
        }
        Ok(admitted(kind, readable, &now, path))
    }

    /// `renameat2(from_dir, from, to_dir, to, RENAME_NOREPLACE when !replace)`.
    pub(super) fn renameat2(
        dir: RawFd,
        from: &CStr,
        to: &CStr,
        flags: libc::c_uint,
    ) -> io::Result<()> {
        // SAFETY: both names are NUL-terminated.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_renameat2,
                dir,
                from.as_ptr(),
                dir,
                to.as_ptr(),
                flags,
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }
}

#[cfg(target_os = "linux")]
pub(crate) use kernel::open_beneath;
#[cfg(all(test, target_os = "linux"))]
pub(crate) use kernel::resolve_by_components;

/// Whether the kernel resolves paths beneath a directory itself here (`openat2`).
pub(crate) fn kernel_resolves_beneath() -> bool {
    #[cfg(target_os = "linux")]
    {
        kernel::openat2_available()
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

/// Puts the components of `path` in front of `pending`; absolute paths escape (`EXDEV`).
fn push_components(
    pending: &mut std::collections::VecDeque<OsString>,
    path: &Path,
    front: bool,
) -> io::Result<()> {
    let mut parts = Vec::new();
    for c in path.components() {
        match c {
            Component::Normal(n) => parts.push(n.to_os_string()),
            Component::ParentDir => parts.push(OsString::from("..")),
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => {
                return Err(io::Error::from_raw_os_error(libc::EXDEV));
            }
        }
    }
    if front {
        for p in parts.into_iter().rev() {
            pending.push_front(p);
        }
    } else {
        pending.extend(parts);
    }
    Ok(())
}

/// Follows the symbolic link `name` in `current` by putting its target's components in front of
/// `pending`: refused (`ELOOP`) where links are not followed or after [`MAX_LINKS`]; an absolute
/// target escapes (`EXDEV`).
fn follow(
    pending: &mut std::collections::VecDeque<OsString>,
    followed: &mut usize,
    current: RawFd,
    name: &OsStr,
    links: Links,
) -> io::Result<()> {
    if links == Links::Never {
        return Err(io::Error::from_raw_os_error(libc::ELOOP));
    }
    *followed += 1;
    if *followed > MAX_LINKS {
        return Err(io::Error::from_raw_os_error(libc::ELOOP));
    }
    let target = readlinkat(current, name)?;
    push_components(pending, &target, true)
}

/// What the portable walk found at the end of a path.
pub(crate) struct Found {
    /// Its `stat`: taken on `fd` when there is one, else on the name, not followed.
    pub st: libc::stat,
    /// The file opened for reading (a regular file with `O_NONBLOCK` still set) or the directory
    /// opened, when it is one of those and opening was asked; anything else is never opened.
    pub fd: Option<OwnedFd>,
}

/// The portable resolution: walks `rel` one component at a time from `dir`, each directory
/// opened `O_DIRECTORY | O_NOFOLLOW` and kept so that `..` returns to the directory it came from
/// (`..` above `dir` escapes, `EXDEV`), each symbolic link read by the walk itself so that only
/// relative targets that stay beneath `dir` are followed. The last component is classified by
/// `fstatat` without following it; a regular file or a directory is then opened (when `open`)
/// with `O_NOFOLLOW`, and its device and inode compared with what was classified: when another
/// file took the name in between, the component is looked at again.
pub(crate) fn walk(dir: RawFd, rel: &Path, links: Links, open: bool) -> io::Result<Found> {
    let mut pending: std::collections::VecDeque<OsString> = std::collections::VecDeque::new();
    push_components(&mut pending, rel, false)?;
    let mut stack: Vec<OwnedFd> = Vec::new();
    let mut followed = 0usize;
    let mut raced = 0usize;
    loop {
        let current = stack.last().map_or(dir, |fd| fd.as_raw_fd());
        let Some(name) = pending.pop_front() else {
            // The path ended on a directory (`.`, `x/..` or nothing).
            let fd = openat(current, OsStr::new("."), DIR_FLAGS)?;
            let st = fstat(fd.as_raw_fd())?;
            return Ok(Found { st, fd: Some(fd) });
        };
        if name == ".." {
            if stack.pop().is_none() {
                return Err(io::Error::from_raw_os_error(libc::EXDEV));
            }
            continue;
        }
        let last = pending.is_empty();
        let st = lstatat(current, &name)?;
        let kind = kind_of(&st);
        if kind == EntryKind::Symlink {
            follow(&mut pending, &mut followed, current, &name, links)?;
            continue;
        }
        if !last && kind != EntryKind::Dir {
            return Err(io::Error::from_raw_os_error(libc::ENOTDIR));
        }
        let flags = match kind {
            _ if last && !open => return Ok(Found { st, fd: None }),
            EntryKind::Dir => DIR_FLAGS | libc::O_NOFOLLOW,
            EntryKind::File => READ_FLAGS | libc::O_NOFOLLOW,
            // Classified and not to be opened: a FIFO, socket or device is never opened.
            _ => return Ok(Found { st, fd: None }),
        };
        let fd = match openat(current, &name, flags) {
            Ok(fd) => fd,
            // A link or something else took the name after it was classified: look again.
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ELOOP | libc::EMLINK | libc::ENOTDIR | libc::ENOENT)
                ) && raced < RETRIES =>
            {
                raced += 1;
                pending.push_front(name);
                continue;
            }
            Err(e) => return Err(e),
        };
        let now = fstat(fd.as_raw_fd())?;
        if id_of(&now) != id_of(&st) {
            if raced >= RETRIES {
                return Err(io::Error::from_raw_os_error(libc::EAGAIN));
            }
            raced += 1;
            pending.push_front(name);
            continue;
        }
        if last {
            return Ok(Found {
                st: now,
                fd: Some(fd),
            });
        }
        stack.push(fd);
    }
}

/// Refuses a regular file of a pseudo file system.
fn refuse_pseudo(fd: RawFd, path: &Path) -> Result<(), FsError> {
    if is_pseudo_file_system(fd).map_err(|e| FsError::io(path, e))? {
        return Err(FsError::NotRegular {
            path: path.to_path_buf(),
            kind: PSEUDO_FILE,
        });
    }
    Ok(())
}

fn admitted(kind: EntryKind, fd: OwnedFd, st: &libc::stat, path: PathBuf) -> Admitted {
    let id = id_of(st);
    match kind {
        EntryKind::Dir => Admitted::Dir { fd, id, path },
        _ => Admitted::File {
            file: File::from(fd),
            id,
            len: st.st_size as u64,
            path,
        },
    }
}

/// Admits what the portable walk found: a regular file (not of a pseudo file system) or a
/// directory, already opened by the walk; anything else is refused by its kind.
fn admit_found(
    found: Found,
    path: impl FnOnce(Option<RawFd>) -> PathBuf,
) -> Result<Admitted, FsError> {
    let kind = kind_of(&found.st);
    let path = path(found.fd.as_ref().map(|fd| fd.as_raw_fd()));
    let fd = match (kind, found.fd) {
        (EntryKind::File | EntryKind::Dir, Some(fd)) => fd,
        (other, _) => {
            return Err(FsError::NotRegular {
                path,
                kind: other.describe(),
            });
        }
    };
    if kind == EntryKind::File {
        refuse_pseudo(fd.as_raw_fd(), &path)?;
        clear_nonblock(fd.as_raw_fd()).map_err(|e| FsError::io(&path, e))?;
    }
    Ok(admitted(kind, fd, &found.st, path))
}

/// Maps the error of a resolution beneath `within` to a typed error.
fn beneath_error(path: &Path, within: &Path, links: Links, e: io::Error) -> FsError {
    match e.raw_os_error() {
        Some(libc::EXDEV) => FsError::Escapes {
            path: path.to_path_buf(),
            within: within.to_path_buf(),
        },
        Some(libc::ELOOP) if links == Links::Never => FsError::Link {
            path: path.to_path_buf(),
        },
        // Opening a socket (or a device without a driver) for reading fails this way.
        Some(libc::ENXIO) => FsError::NotRegular {
            path: path.to_path_buf(),
            kind: "a socket or a device",
        },
        _ => FsError::io(path, e),
    }
}

/// Opens `rel` beneath `dir` (shown as `shown`, an escape named as leaving `within`) and admits
/// it: a regular file or a directory, held open for reading.
pub(crate) fn open_beneath_admitted(
    dir: &DirFd,
    resolver: Resolver,
    rel: &Path,
    links: Links,
    shown: PathBuf,
    within: &Path,
) -> Result<Admitted, FsError> {
    let refused = |e| beneath_error(&shown, within, links, e);
    // Without links, the lexical path is the real one; with them, ask the kernel.
    let named = |fd: Option<RawFd>, shown: PathBuf| match links {
        Links::Never => shown,
        Links::Beneath => fd.and_then(fd_path).unwrap_or(shown),
    };
    match resolver {
        #[cfg(target_os = "linux")]
        Resolver::Kernel => {
            let fd =
                open_beneath(dir.as_raw_fd(), rel, kernel::PATH_FLAGS, links).map_err(refused)?;
            let path = named(Some(fd.as_raw_fd()), shown.clone());
            let reopen = |flags| open_beneath(dir.as_raw_fd(), rel, flags, links);
            kernel::admit(fd, path, reopen)
        }
        Resolver::Portable => {
            if rel.is_absolute() {
                return Err(refused(io::Error::from_raw_os_error(libc::EXDEV)));
            }
            let found = walk(dir.as_raw_fd(), rel, links, true).map_err(refused)?;
            admit_found(found, |fd| named(fd, shown))
        }
    }
}

/// What `rel` is beneath `dir`, following links that stay inside; `None` when it does not exist,
/// leads outside, or cannot be looked at. Opens nothing for reading.
pub(crate) fn kind_beneath(dir: &DirFd, resolver: Resolver, rel: &Path) -> Option<EntryKind> {
    let st = match resolver {
        #[cfg(target_os = "linux")]
        Resolver::Kernel => {
            let fd = open_beneath(dir.as_raw_fd(), rel, kernel::PATH_FLAGS, Links::Beneath).ok()?;
            fstat(fd.as_raw_fd()).ok()?
        }
        Resolver::Portable => {
            if rel.is_absolute() {
                return None;
            }
            walk(dir.as_raw_fd(), rel, Links::Beneath, false).ok()?.st
        }
    };
    Some(kind_of(&st))
}

/// Opens `path` with no roots (links followed as the system does) and admits it.
pub(crate) fn open_path(path: &Path, resolver: Resolver) -> Result<Admitted, FsError> {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let shown = |fd: Option<RawFd>| {
        fd.and_then(fd_path)
            .or_else(|| std::fs::canonicalize(path).ok())
            .unwrap_or_else(|| absolute.clone())
    };
    match resolver {
        #[cfg(target_os = "linux")]
        Resolver::Kernel => {
            let fd = openat(libc::AT_FDCWD, path.as_os_str(), kernel::PATH_FLAGS)
                .map_err(|e| FsError::io(path, e))?;
            let reopen = |flags| openat(libc::AT_FDCWD, path.as_os_str(), flags);
            let named = shown(Some(fd.as_raw_fd()));
            kernel::admit(fd, named, reopen)
        }
        Resolver::Portable => {
            let found = open_classified(path).map_err(|e| FsError::io(path, e))?;
            admit_found(found, shown)
        }
    }
}

/// `path` classified by `stat` (links followed) and opened only when it is a regular file or a
/// directory, its device and inode then compared with what was classified.
fn open_classified(path: &Path) -> io::Result<Found> {
    for _ in 0..RETRIES {
        let st = fstatat(libc::AT_FDCWD, path.as_os_str(), 0)?;
        let flags = match kind_of(&st) {
            EntryKind::File => READ_FLAGS,
            EntryKind::Dir => DIR_FLAGS,
            _ => return Ok(Found { st, fd: None }),
        };
        let fd = openat(libc::AT_FDCWD, path.as_os_str(), flags)?;
        let now = fstat(fd.as_raw_fd())?;
        if id_of(&now) == id_of(&st) {
            return Ok(Found {
                st: now,
                fd: Some(fd),
            });
        }
    }
    Err(io::Error::from_raw_os_error(libc::EAGAIN))
}

/// The parent of the directory `dir` (its `..`), held open, with its device and inode.
pub(crate) fn parent(dir: &DirFd, resolver: Resolver) -> io::Result<(DirFd, FileId)> {
    let flags = match resolver {
        #[cfg(target_os = "linux")]
        Resolver::Kernel => kernel::PATH_FLAGS | libc::O_DIRECTORY,
        Resolver::Portable => DIR_FLAGS,
    };
    let up = openat(dir.as_raw_fd(), OsStr::new(".."), flags)?;
    let id = id_of(&fstat(up.as_raw_fd())?);
    Ok((up, id))
}

/// Where `errno` lives, for clearing it before a call whose only error report is `errno`.
fn errno() -> *mut libc::c_int {
    // SAFETY: these return the calling thread's errno, always valid.
    #[cfg(any(target_os = "linux", target_os = "emscripten"))]
    unsafe {
        libc::__errno_location()
    }
    #[cfg(any(
        target_os = "macos",
        target_os = "ios",
        target_os = "freebsd",
        target_os = "dragonfly"
    ))]
    unsafe {
        libc::__error()
    }
    #[cfg(any(target_os = "android", target_os = "netbsd", target_os = "openbsd"))]
    unsafe {
        libc::__errno()
    }
}

/// Lists a directory by descriptor (`.` and `..` left out), with what each entry is.
pub(crate) fn list(dir: &DirFd) -> io::Result<Vec<DirEntry>> {
    // A descriptor of its own, so the listing's position is not shared with anyone.
    let own = openat(dir.as_raw_fd(), OsStr::new("."), DIR_FLAGS)?;
    let raw = own.as_raw_fd();
    // SAFETY: fdopendir takes ownership of `raw` on success; on failure we still own it.
    let stream = unsafe { libc::fdopendir(raw) };
    if stream.is_null() {
        return Err(io::Error::last_os_error());
    }
    std::mem::forget(own);
    let mut out = Vec::new();
    let result = loop {
        // SAFETY: clearing errno distinguishes the end of the stream from an error.
        unsafe { *errno() = 0 };
        // SAFETY: `stream` is a valid DIR* until closedir below.
        #[cfg(target_os = "linux")]
        let entry = unsafe { libc::readdir64(stream) };
        #[cfg(not(target_os = "linux"))]
        let entry = unsafe { libc::readdir(stream) };
        if entry.is_null() {
            let code = unsafe { *errno() };
            break if code == 0 {
                Ok(())
            } else {
                Err(io::Error::from_raw_os_error(code))
            };
        }
        // SAFETY: d_name is NUL-terminated within the entry.
        let name = unsafe { CStr::from_ptr((*entry).d_name.as_ptr()) };
        let bytes = name.to_bytes();
        if bytes == b"." || bytes == b".." {
            continue;
        }
        let name = OsStr::from_bytes(bytes).to_os_string();
        match lstatat(raw, &name) {
            Ok(st) => out.push(DirEntry {
                name,
                kind: kind_of(&st),
                size: st.st_size as u64,
            }),
            // Removed between the listing and the stat: it is not there any more.
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => break Err(e),
        }
    };
    // SAFETY: closes the stream and the descriptor it owns.
    unsafe { libc::closedir(stream) };
    result.map(|()| out)
}

/// Renames `from` to `to` in `dir`; unless `replace`, fails (`AlreadyExists`) when `to` exists.
/// Renaming replaces a name; it never writes through a link that sits at `to`. Linux uses
/// `renameat2(RENAME_NOREPLACE)`; elsewhere, and on file systems without it, a hard link, which
/// fails atomically when `to` exists, then the removal of `from`.
pub(crate) fn rename(
    dir: &DirFd,
    resolver: Resolver,
    from: &OsStr,
    to: &OsStr,
    replace: bool,
) -> io::Result<()> {
    let (a, b) = (cstring(from)?, cstring(to)?);
    let fd = dir.as_raw_fd();
    #[cfg(target_os = "linux")]
    if resolver == Resolver::Kernel {
        let flags = if replace { 0 } else { libc::RENAME_NOREPLACE };
        match kernel::renameat2(fd, &a, &b, flags) {
            Err(e) if !replace && matches!(e.raw_os_error(), Some(libc::EINVAL | libc::ENOSYS)) => {
            }
            other => return other,
        }
    }
    let _ = resolver;
    if replace {
        // SAFETY: both names are NUL-terminated.
        check(unsafe { libc::renameat(fd, a.as_ptr(), fd, b.as_ptr()) })?;
    } else {
        // SAFETY: both names are NUL-terminated.
        check(unsafe { libc::linkat(fd, a.as_ptr(), fd, b.as_ptr(), 0) })?;
        // SAFETY: as above.
        unsafe { libc::unlinkat(fd, a.as_ptr(), 0) };
    }
    Ok(())
}

/// Swaps the names `a` and `b` in `dir` atomically, both of which must exist
/// (`renameat2(RENAME_EXCHANGE)` on Linux). `Unsupported` where the system or the file system
/// cannot.
pub(crate) fn exchange(dir: &DirFd, resolver: Resolver, a: &OsStr, b: &OsStr) -> io::Result<()> {
    match resolver {
        #[cfg(target_os = "linux")]
        Resolver::Kernel => {
            let (a, b) = (cstring(a)?, cstring(b)?);
            kernel::renameat2(dir.as_raw_fd(), &a, &b, libc::RENAME_EXCHANGE).map_err(|e| {
                match e.raw_os_error() {
                    Some(libc::EINVAL | libc::ENOSYS) => {
                        io::Error::from(io::ErrorKind::Unsupported)
                    }
                    _ => e,
                }
            })
        }
        Resolver::Portable => {
            let _ = (dir, a, b);
            Err(io::Error::from(io::ErrorKind::Unsupported))
        }
    }
}

/// `unlinkat(dir, name, 0)`.
pub(crate) fn unlink(dir: &DirFd, name: &OsStr) -> io::Result<()> {
    let c = cstring(name)?;
    // SAFETY: NUL-terminated name.
    check(unsafe { libc::unlinkat(dir.as_raw_fd(), c.as_ptr(), 0) })?;
    Ok(())
}

/// Reads at `offset` without moving a shared position.
pub(crate) fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, offset)
}
