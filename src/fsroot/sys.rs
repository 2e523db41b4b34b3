//! The system calls behind [`super`]: `openat2` with its component-by-component fallback,
//! `fstat`/`fstatfs` classification, directory listing by descriptor, `renameat2`.
//!
//! Everything here works on raw descriptors and returns `io::Result`; the module above turns
//! results into typed errors that name paths.

use std::ffi::{CStr, CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};

use super::{EntryKind, FileId};

/// How a path beneath a directory may be resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Links {
    /// Symbolic links are followed while they stay beneath the directory (absolute targets and
    /// `..` past the directory are refused).
    Beneath,
    /// No symbolic link is followed anywhere on the path.
    Never,
}

/// The most symbolic links one resolution follows, as the kernel's own limit.
const MAX_LINKS: usize = 40;

/// How often a resolution that the kernel asks to retry (`EAGAIN`, a rename raced it) is tried.
const RETRIES: usize = 16;

/// Whether `openat2` works here: 0 unknown, 1 yes, 2 no (too old a kernel, or a seccomp filter
/// that refuses it). Checked at run time on first use.
static OPENAT2: AtomicU8 = AtomicU8::new(0);

/// Flags for a descriptor that only names a file (for `fstat`), whatever its kind.
pub(crate) const PATH_FLAGS: libc::c_int = libc::O_PATH | libc::O_CLOEXEC;

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

/// `openat(dir, name, flags)` for one component (no `/` in `name`).
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

/// `openat(dir, name, O_CREAT | O_EXCL | O_NOFOLLOW | O_WRONLY)`: a new file, never through a link.
pub(crate) fn create_new(dir: RawFd, name: &OsStr, mode: libc::mode_t) -> io::Result<OwnedFd> {
    let c = cstring(name)?;
    let flags = libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_WRONLY | libc::O_CLOEXEC;
    // SAFETY: as in `openat`.
    let fd = unsafe { libc::openat(dir, c.as_ptr(), flags, mode as libc::c_uint) };
    check(fd)?;
    // SAFETY: a fresh descriptor.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `fstat` of a descriptor.
pub(crate) fn fstat(fd: RawFd) -> io::Result<libc::stat> {
    // SAFETY: `st` is fully written by a successful fstat.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    check(unsafe { libc::fstat(fd, &mut st) })?;
    Ok(st)
}

/// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)`: what the entry itself is.
pub(crate) fn lstatat(dir: RawFd, name: &OsStr) -> io::Result<libc::stat> {
    let c = cstring(name)?;
    // SAFETY: as in `fstat`.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    check(unsafe { libc::fstatat(dir, c.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) })?;
    Ok(st)
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

pub(crate) fn id_of(st: &libc::stat) -> FileId {
    FileId {
        dev: st.st_dev,
        ino: st.st_ino,
    }
}

/// Whether a regular file lives on a pseudo file system (`/proc`, `/sys`, …) whose files report
/// a size that is not their content (`/proc/self/pagemap` says 0 and never ends).
pub(crate) fn is_pseudo_file_system(fd: RawFd) -> io::Result<bool> {
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

/// Clears `O_NONBLOCK` (set so that opening a FIFO could not block) once the file is known to be
/// regular, so reads behave normally.
pub(crate) fn clear_nonblock(fd: RawFd) -> io::Result<()> {
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

/// The path the kernel gives for an open descriptor, when `/proc` is mounted.
pub(crate) fn fd_path(fd: RawFd) -> Option<PathBuf> {
    let link = std::fs::read_link(format!("/proc/self/fd/{fd}")).ok()?;
    // Files the kernel no longer names (deleted, or not on a path) are not paths to show.
    (link.is_absolute() && !link.as_os_str().as_bytes().ends_with(b" (deleted)")).then_some(link)
}

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
fn openat2_raw(dir: RawFd, rel: &CStr, flags: libc::c_int, resolve: u64) -> io::Result<OwnedFd> {
    let how = OpenHow {
        flags: flags as u64,
        mode: 0,
        resolve,
    };
    for _ in 0..RETRIES {
        // SAFETY: `how` is a valid `struct open_how` of the size passed; `rel` is NUL-terminated.
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

/// The fallback for kernels without `openat2`: walks `rel` one component at a time from `dir`
/// with `O_NOFOLLOW`, keeping a descriptor per directory so that `..` returns to the directory
/// it came from (and refusing `..` above `dir`), and reading each symbolic link itself so that
/// only relative targets that stay beneath `dir` are followed.
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
        if links == Links::Never {
            return Err(io::Error::from_raw_os_error(libc::ELOOP));
        }
        followed += 1;
        if followed > MAX_LINKS {
            return Err(io::Error::from_raw_os_error(libc::ELOOP));
        }
        let target = readlinkat(current, &name)?;
        push_components(&mut pending, &target, true)?;
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

/// One entry of a directory listing, as the entry itself is (links not followed).
#[derive(Debug, Clone)]
pub(crate) struct RawEntry {
    pub name: OsString,
    pub kind: EntryKind,
    pub size: u64,
}

/// Lists a directory by descriptor (`.` and `..` left out), with what each entry is.
pub(crate) fn list(dir: BorrowedFd<'_>) -> io::Result<Vec<RawEntry>> {
    // A descriptor of its own, so the listing's position is not shared with anyone.
    let own = openat(
        dir.as_raw_fd(),
        OsStr::new("."),
        libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
    )?;
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
        unsafe { *libc::__errno_location() = 0 };
        // SAFETY: `stream` is a valid DIR* until closedir below.
        let entry = unsafe { libc::readdir64(stream) };
        if entry.is_null() {
            let errno = unsafe { *libc::__errno_location() };
            break if errno == 0 {
                Ok(())
            } else {
                Err(io::Error::from_raw_os_error(errno))
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
            Ok(st) => out.push(RawEntry {
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

/// `renameat2(from_dir, from, to_dir, to, RENAME_NOREPLACE when !replace)`. Renaming replaces a
/// name; it never writes through a link that sits at `to`.
pub(crate) fn rename(
    from_dir: RawFd,
    from: &OsStr,
    to_dir: RawFd,
    to: &OsStr,
    replace: bool,
) -> io::Result<()> {
    let (a, b) = (cstring(from)?, cstring(to)?);
    let flags: libc::c_uint = if replace { 0 } else { libc::RENAME_NOREPLACE };
    // SAFETY: both names are NUL-terminated.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            from_dir,
            a.as_ptr(),
            to_dir,
            b.as_ptr(),
            flags,
        )
    };
    if rc == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        // File systems without RENAME_NOREPLACE: a hard link fails atomically when `to` exists.
        Some(libc::EINVAL) | Some(libc::ENOSYS) if !replace => {
            // SAFETY: both names are NUL-terminated.
            check(unsafe { libc::linkat(from_dir, a.as_ptr(), to_dir, b.as_ptr(), 0) })?;
            // SAFETY: as above.
            unsafe { libc::unlinkat(from_dir, a.as_ptr(), 0) };
            Ok(())
        }
        _ => Err(e),
    }
}

/// `renameat2(a_dir, a, b_dir, b, RENAME_EXCHANGE)`: swaps two names atomically, both of which
/// must exist. `EINVAL` where the file system cannot.
pub(crate) fn exchange(a_dir: RawFd, a: &OsStr, b_dir: RawFd, b: &OsStr) -> io::Result<()> {
    let (a, b) = (cstring(a)?, cstring(b)?);
    // SAFETY: both names are NUL-terminated.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            a_dir,
            a.as_ptr(),
            b_dir,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// `unlinkat(dir, name, 0)`.
pub(crate) fn unlink(dir: RawFd, name: &OsStr) -> io::Result<()> {
    let c = cstring(name)?;
    // SAFETY: NUL-terminated name.
    check(unsafe { libc::unlinkat(dir, c.as_ptr(), 0) })?;
    Ok(())
}
