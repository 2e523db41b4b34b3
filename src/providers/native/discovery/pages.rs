//! The walk's bits of code, all clear, in memory of their own.
//!
//! A walk reads and writes its bits all over the code (at each jump's and call's target), so a
//! large file's bits span thousands of 4 KiB pages: each costs a fault when first written and a
//! TLB entry while walked. On Linux, bits of 2 MiB or more are mapped on their own, aligned to
//! 2 MiB and advised as huge pages (`MADV_HUGEPAGE`, which transparent huge pages honour in their
//! usual `madvise` mode), so 2 MiB cost one fault. Elsewhere, where the system gives no huge
//! pages, and for less, they are a `Vec`.

use std::ops::{Deref, DerefMut};

use super::Bits;

/// `len` [`Bits`], all clear.
pub(super) struct BitPages(Inner);

enum Inner {
    Vec(Vec<Bits>),
    #[cfg(target_os = "linux")]
    Map(linux::Map),
}

impl BitPages {
    /// `len` clear [`Bits`], each page of them written once: the walk reads a word before it
    /// writes it, and a page read first is the shared zero page, which the write then replaces at
    /// the cost of a second fault (and, while another thread runs, an interrupt of its core).
    pub(super) fn new(len: usize) -> BitPages {
        #[cfg(target_os = "linux")]
        let map = linux::Map::new(len).map(Inner::Map);
        #[cfg(not(target_os = "linux"))]
        let map = None;
        let mut pages = BitPages(map.unwrap_or_else(|| Inner::Vec(vec![[0; 3]; len])));
        pages.touch();
        pages
    }

    fn touch(&mut self) {
        for word in self.iter_mut().step_by(4096 / std::mem::size_of::<Bits>()) {
            // Opaque to the compiler, which would otherwise drop the store of a known zero.
            word[0] = std::hint::black_box(0);
        }
    }
}

impl Deref for BitPages {
    type Target = [Bits];

    fn deref(&self) -> &[Bits] {
        match &self.0 {
            Inner::Vec(v) => v,
            #[cfg(target_os = "linux")]
            Inner::Map(m) => m.bits(),
        }
    }
}

impl DerefMut for BitPages {
    fn deref_mut(&mut self) -> &mut [Bits] {
        match &mut self.0 {
            Inner::Vec(v) => v,
            #[cfg(target_os = "linux")]
            Inner::Map(m) => m.bits_mut(),
        }
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use super::Bits;

    /// A huge page's size on x86-64 and on AArch64 with 4 KiB pages.
    const HUGE: usize = 2 << 20;

    /// An anonymous private map (zero-filled by the kernel) holding `len` [`Bits`] from its
    /// first 2 MiB boundary on.
    pub(super) struct Map {
        base: *mut libc::c_void,
        mapped: usize,
        bits: *mut Bits,
        len: usize,
    }

    // The map is owned by one `Map` alone, as a `Vec` owns its buffer.
    unsafe impl Send for Map {}
    unsafe impl Sync for Map {}

    impl Map {
        /// `None` for less than a huge page, or when the system maps nothing.
        pub(super) fn new(len: usize) -> Option<Map> {
            let bytes = len.checked_mul(std::mem::size_of::<Bits>())?;
            if bytes < HUGE {
                return None;
            }
            // Room to start at a 2 MiB boundary wherever the kernel puts the map.
            let mapped = bytes.checked_add(HUGE)?;
            // SAFETY: a new anonymous private map; no existing memory is named or changed.
            let base = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    mapped,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            if base == libc::MAP_FAILED {
                return None;
            }
            let offset = (base as usize).next_multiple_of(HUGE) - base as usize;
            // SAFETY: `offset + bytes <= mapped`, inside the map just made.
            let start = unsafe { base.cast::<u8>().add(offset) };
            // Only advice: without huge pages (a kernel without them, or set to `never`) the
            // map is made of small pages, which serve as well.
            // SAFETY: the range lies inside the map just made.
            unsafe {
                libc::madvise(start.cast(), bytes, libc::MADV_HUGEPAGE);
            }
            Some(Map {
                base,
                mapped,
                bits: start.cast(),
                len,
            })
        }

        pub(super) fn bits(&self) -> &[Bits] {
            // SAFETY: `len` zero-filled (so valid) `Bits` at an 8-byte-aligned address of the
            // map, which lives as long as `self`; shared while `self` is borrowed.
            unsafe { std::slice::from_raw_parts(self.bits, self.len) }
        }

        pub(super) fn bits_mut(&mut self) -> &mut [Bits] {
            // SAFETY: as in `bits`, borrowed exclusively with `self`.
            unsafe { std::slice::from_raw_parts_mut(self.bits, self.len) }
        }
    }

    impl Drop for Map {
        fn drop(&mut self) {
            // SAFETY: the map made in `new`, unmapped once; no slice of it outlives `self`.
            unsafe {
                libc::munmap(self.base, self.mapped);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_pages_are_clear_and_kept_whole_in_their_own_map_from_two_mib() {
        let words_in_two_mib = (2usize << 20).div_ceil(std::mem::size_of::<Bits>());
        for len in [0, 1, 170, words_in_two_mib - 1, words_in_two_mib, 300_001] {
            let mut bits = BitPages::new(len);
            assert_eq!(bits.len(), len);
            assert!(bits.iter().all(|word| *word == [0; 3]), "len {len}");
            #[cfg(target_os = "linux")]
            assert_eq!(
                matches!(bits.0, Inner::Map(_)),
                len >= words_in_two_mib,
                "len {len}"
            );
            if len > 1 {
                bits[0][2] = 7;
                bits[len - 1] = [1, 2, 3];
                assert_eq!((bits[0], bits[len - 1]), ([0, 0, 7], [1, 2, 3]));
            }
        }
    }
}
