//! Read-only memory maps of regular files, guarded against the file being cut while mapped.
//!
//! A document is mapped rather than read so that its pages cost memory only when an analysis
//! touches them (a 3.9 GB sparse file read whole cost 3.9 GiB). A map has one hazard a read does
//! not: when another process truncates the file, touching a page past the new end raises
//! `SIGBUS`, which would end the server. So every map is registered in a fixed table, and a
//! `SIGBUS` handler that finds the faulting address in it maps a page of zeros there and marks the
//! map as changed; the read then sees zeros and the operation can say the file changed under it.
//! A fault outside every registered map goes on to the handler that was installed before (Rust's
//! own stack-overflow handler), or to the default action.
//!
//! That is Unix. Windows refuses to cut a file while a view of it is mapped, so a map there
//! (`memmap2`) needs no guard.

use std::ops::Deref;

#[cfg(unix)]
pub use guarded::Mapped;
#[cfg(windows)]
pub use windows::Mapped;

#[cfg(unix)]
mod guarded {
    use std::io;
    use std::ops::Deref;
    use std::os::fd::AsRawFd;
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    /// How many maps may be live at once. A map that finds no free slot is not made: the caller
    /// reads the bytes instead.
    const SLOTS: usize = 4096;

    struct Slot {
        /// Claimed by a live map.
        used: AtomicBool,
        /// First byte of the mapping (0 while the slot is being filled or emptied).
        start: AtomicUsize,
        /// One past its last byte.
        end: AtomicUsize,
        /// Set by the handler when it replaced a page of this mapping by zeros.
        faulted: AtomicBool,
    }

    static TABLE: [Slot; SLOTS] = [const {
        Slot {
            used: AtomicBool::new(false),
            start: AtomicUsize::new(0),
            end: AtomicUsize::new(0),
            faulted: AtomicBool::new(false),
        }
    }; SLOTS];

    /// The page size, read once before the handler is installed (sysconf is not for handlers).
    static PAGE: AtomicUsize = AtomicUsize::new(0);

    /// The `SIGBUS` action that was in place before ours.
    static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();

    /// Installs the handler once; false when that failed (maps are then not made).
    fn install() -> bool {
        static INSTALLED: OnceLock<bool> = OnceLock::new();
        *INSTALLED.get_or_init(|| {
            // SAFETY: sysconf has no preconditions.
            let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
            if page <= 0 {
                return false;
            }
            PAGE.store(page as usize, Ordering::Relaxed);
            // SAFETY: sigaction with a zeroed struct and our handler; the previous action is read
            // into `old` and kept for chaining before any fault can reach our handler.
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut old) != 0 {
                    return false;
                }
                let _ = PREVIOUS.set(old);
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_sigbus as *const () as libc::sighandler_t;
                action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                libc::sigemptyset(&mut action.sa_mask);
                libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut()) == 0
            }
        })
    }

    /// The `SIGBUS` handler: only atomics and `mmap`/`sigaction` system calls.
    extern "C" fn on_sigbus(
        signal: libc::c_int,
        info: *mut libc::siginfo_t,
        context: *mut libc::c_void,
    ) {
        // SAFETY: the kernel passes a valid siginfo for an SA_SIGINFO handler.
        let address = unsafe { (*info).si_addr() } as usize;
        let page = PAGE.load(Ordering::Relaxed);
        for slot in &TABLE {
            let start = slot.start.load(Ordering::Acquire);
            if start == 0 || address < start || address >= slot.end.load(Ordering::Acquire) {
                continue;
            }
            let at = address & !(page - 1);
            // SAFETY: replaces one page inside a mapping this module owns by a private zero page.
            let mapped = unsafe {
                libc::mmap(
                    at as *mut libc::c_void,
                    page,
                    libc::PROT_READ,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                    -1,
                    0,
                )
            };
            if mapped != libc::MAP_FAILED {
                slot.faulted.store(true, Ordering::Release);
                return;
            }
        }
        // Not one of ours: whoever handled SIGBUS before us decides.
        match PREVIOUS.get() {
            Some(old) if old.sa_sigaction != libc::SIG_DFL && old.sa_sigaction != libc::SIG_IGN => {
                // SAFETY: the previous handler was installed for this signal with these flags.
                unsafe {
                    if old.sa_flags & libc::SA_SIGINFO != 0 {
                        let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                            std::mem::transmute(old.sa_sigaction);
                        f(signal, info, context);
                    } else {
                        let f: extern "C" fn(libc::c_int) = std::mem::transmute(old.sa_sigaction);
                        f(signal);
                    }
                }
            }
            _ => {
                // SAFETY: restores the default action; returning re-runs the faulting access, which
                // then ends the process as it would have without us.
                unsafe {
                    let mut action: libc::sigaction = std::mem::zeroed();
                    action.sa_sigaction = libc::SIG_DFL;
                    libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut());
                }
            }
        }
    }

    /// A read-only, private map of part of a regular file.
    pub struct Mapped {
        /// Start of the mapping (page aligned).
        base: *mut libc::c_void,
        /// Length of the mapping.
        map_len: usize,
        /// Offset of the first requested byte within the mapping.
        delta: usize,
        /// Requested length.
        len: usize,
        slot: usize,
    }

    // SAFETY: the mapping is read-only and owned by this value; the table slot is atomics only.
    unsafe impl Send for Mapped {}
    // SAFETY: as above; shared access only reads.
    unsafe impl Sync for Mapped {}

    impl std::fmt::Debug for Mapped {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("Mapped").field("len", &self.len).finish()
        }
    }

    impl Mapped {
        /// Maps `len` bytes of `file` from `offset`. `len` must be at least 1 and the range inside
        /// the file as it is now; the caller checks both.
        pub(crate) fn new(file: &std::fs::File, offset: u64, len: usize) -> io::Result<Mapped> {
            if len == 0 || !install() {
                return Err(io::Error::from_raw_os_error(libc::EINVAL));
            }
            let page = PAGE.load(Ordering::Relaxed) as u64;
            let aligned = offset & !(page - 1);
            let delta = (offset - aligned) as usize;
            let map_len = len
                .checked_add(delta)
                .ok_or_else(|| io::Error::from_raw_os_error(libc::EOVERFLOW))?;
            let slot = TABLE
                .iter()
                .position(|s| {
                    s.used
                        .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
                        .is_ok()
                })
                .ok_or_else(|| io::Error::from_raw_os_error(libc::ENOMEM))?;
            // SAFETY: a fresh read-only private mapping of a descriptor the caller holds open.
            let base = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    map_len,
                    libc::PROT_READ,
                    libc::MAP_PRIVATE,
                    file.as_raw_fd(),
                    aligned as libc::off_t,
                )
            };
            if base == libc::MAP_FAILED {
                let e = io::Error::last_os_error();
                TABLE[slot].used.store(false, Ordering::Release);
                return Err(e);
            }
            let entry = &TABLE[slot];
            entry.faulted.store(false, Ordering::Relaxed);
            entry.end.store(base as usize + map_len, Ordering::Release);
            entry.start.store(base as usize, Ordering::Release);
            Ok(Mapped {
                base,
                map_len,
                delta,
                len,
                slot,
            })
        }

        /// Whether a page of this map had to be replaced by zeros because the file was cut while it
        /// was mapped: what was read from it since is not the file's content.
        pub fn changed(&self) -> bool {
            TABLE[self.slot].faulted.load(Ordering::Acquire)
        }

        /// Gives back the memory of the mapped pages wholly inside `range` (offsets into the
        /// requested bytes).
        pub(super) fn release(&self, range: std::ops::Range<usize>) {
            let page = PAGE.load(Ordering::Relaxed).max(1);
            let end = range.end.min(self.len);
            let start = (self.delta + range.start).div_ceil(page) * page;
            let end = ((self.delta + end) / page) * page;
            if end <= start {
                return;
            }
            // SAFETY: `[start, end)` is page aligned and inside the mapping, which is read-only and
            // private and never written, so dropping its pages loses nothing: reads fault them in
            // again from the file. A range past a cut end holds the handler's anonymous zeros, which
            // come back as zeros.
            unsafe {
                libc::madvise(
                    (self.base as *mut u8).add(start).cast(),
                    end - start,
                    libc::MADV_DONTNEED,
                );
            }
        }
    }

    impl Deref for Mapped {
        type Target = [u8];

        fn deref(&self) -> &[u8] {
            // SAFETY: the mapping is `map_len` readable bytes for the life of `self`; pages past a
            // truncated end are replaced by zeros by the handler instead of faulting.
            unsafe {
                std::slice::from_raw_parts((self.base as *const u8).add(self.delta), self.len)
            }
        }
    }

    impl Drop for Mapped {
        fn drop(&mut self) {
            let entry = &TABLE[self.slot];
            entry.start.store(0, Ordering::Release);
            entry.end.store(0, Ordering::Release);
            // SAFETY: unmaps the mapping made in `new`, which nothing borrows any more.
            unsafe { libc::munmap(self.base, self.map_len) };
            entry.used.store(false, Ordering::Release);
        }
    }
}

/// Maps on Windows, where a mapped file cannot be cut.
#[cfg(windows)]
mod windows {
    use std::io;
    use std::ops::Deref;

    /// A read-only map of part of a regular file.
    pub struct Mapped(memmap2::Mmap);

    impl std::fmt::Debug for Mapped {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("Mapped")
                .field("len", &self.0.len())
                .finish()
        }
    }

    impl Mapped {
        /// Maps `len` bytes of `file` from `offset`; the caller checks the range.
        pub(crate) fn new(file: &std::fs::File, offset: u64, len: usize) -> io::Result<Mapped> {
            // SAFETY: the map is read-only, and Windows refuses to truncate a file while a view
            // of it is mapped, so its pages stay backed for the life of the map.
            let map = unsafe {
                memmap2::MmapOptions::new()
                    .offset(offset)
                    .len(len)
                    .map(file)?
            };
            Ok(Mapped(map))
        }

        /// Never: the file cannot be cut while mapped.
        pub fn changed(&self) -> bool {
            false
        }

        /// Windows gives back a view's pages as it needs them.
        pub(super) fn release(&self, _: std::ops::Range<usize>) {}
    }

    impl Deref for Mapped {
        type Target = [u8];

        fn deref(&self) -> &[u8] {
            &self.0
        }
    }
}

/// Bytes of a document: mapped from its file, or owned (read, or built by a test).
#[derive(Debug)]
pub enum Bytes {
    /// A map of the file.
    Mapped(Mapped),
    /// Bytes in memory.
    Owned(Vec<u8>),
}

impl Bytes {
    /// Gives back the memory of the mapped pages wholly inside `range` (offsets into these
    /// bytes): a scan of a large file then holds only the window it reads, not every page it has
    /// read. The bytes stay readable; touched again, they are read from the file (or are the
    /// zeros a cut page was replaced with). Owned bytes are kept as they are.
    pub fn release(&self, range: std::ops::Range<usize>) {
        if let Bytes::Mapped(m) = self {
            m.release(range);
        }
    }

    /// Whether the file was cut while mapped (see [`Mapped::changed`]); never for owned bytes.
    pub fn changed(&self) -> bool {
        match self {
            Bytes::Mapped(m) => m.changed(),
            Bytes::Owned(_) => false,
        }
    }
}

impl Deref for Bytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Mapped(m) => m,
            Bytes::Owned(v) => v,
        }
    }
}

impl From<Vec<u8>> for Bytes {
    fn from(v: Vec<u8>) -> Bytes {
        Bytes::Owned(v)
    }
}
