//! Device memory of the `cpu` backend: storage objects, their exact accounting, and the typed
//! element views kernels access them through.
//!
//! # Representation
//!
//! A [`Storage`] is a boxed slice of `AtomicU64` words (so its base is 8-byte aligned) holding
//! `bytes` bytes, zero-filled or `0xFF`-filled at allocation. Elements are packed at their
//! natural width and little-endian, as on every backend, so a host copy and a kernel agree
//! on the layout.
//!
//! # Why atomics
//!
//! Kernel items of different workgroups run on different threads and may race on an element
//! (XPU §5.4 allows it: a racing read sees some value written during the launch). In Rust a
//! racing plain access is undefined behaviour, so every element access goes through an atomic
//! of the element's width: `Relaxed` for plain loads and stores (a plain `mov` on x86-64 and
//! AArch64) and `SeqCst` for `atom.*`. A racing access therefore never tears an element.
//!
//! The memory model also forbids *racing atomic accesses of different sizes*. Two rules
//! exclude them:
//!
//! * **Width lock.** Kernels access one storage at one element width for its whole life: the
//!   first launch that uses it claims the width ([`Storage::claim_width`]) and a launch that
//!   would use another width is refused. (The VM never does that: a storage belongs to one
//!   `KernelBuffer<T>` and its views, which share `T`.) Shared arrays live in one worker
//!   thread and have one width each.
//! * **Gate.** Host copies ([`Storage::write`], [`Storage::read`]), which move whole words
//!   and single bytes, hold the storage's gate exclusively; launches hold it shared for their
//!   whole run. A copy and a launch on one storage therefore never overlap in time.
//!
//! # Lifetime and accounting
//!
//! The backend's registry holds one `Arc<Storage>` per live [`StorageId`](crate::StorageId);
//! a launch clones the `Arc` of every storage it uses. `release` only drops the registry's
//! reference, so the memory (and its accounting: `live`, `frees`) goes away when the last
//! running launch drops its clone ([`Storage`]'s `Drop`), as XPU §4.3 requires.

use std::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock, RwLockReadGuard};

use crate::MemStats;

/// Exact accounting shared by the backend and all its storages.
#[derive(Debug, Default)]
pub(crate) struct Accounting {
    stats: Mutex<MemStats>,
}

impl Accounting {
    /// A snapshot of the statistics.
    pub(crate) fn snapshot(&self) -> MemStats {
        *self.stats.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn allocated(&self, bytes: u64) {
        let mut s = self.stats.lock().unwrap_or_else(PoisonError::into_inner);
        s.live = s.live.saturating_add(bytes);
        s.peak = s.peak.max(s.live);
        s.allocs += 1;
    }

    fn freed(&self, bytes: u64) {
        let mut s = self.stats.lock().unwrap_or_else(PoisonError::into_inner);
        s.live = s.live.saturating_sub(bytes);
        s.frees += 1;
    }
}

/// The largest allocation attempted at all: the machine's physical memory where it is known
/// (Linux `/proc/meminfo`), else `isize::MAX`. Larger requests are `XPU-E-OOM` at once instead
/// of an overcommitted allocation that the zero-fill would turn into an abort.
fn max_alloc_bytes() -> u64 {
    static LIMIT: OnceLock<u64> = OnceLock::new();
    *LIMIT.get_or_init(|| {
        let total = std::fs::read_to_string("/proc/meminfo").ok().and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("MemTotal:"))?;
            let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            kib.checked_mul(1024)
        });
        total.unwrap_or(isize::MAX as u64).min(isize::MAX as u64)
    })
}

/// Element types for which every byte pattern is a valid value, so memory filled with any
/// byte is an initialised array of them.
///
/// # Safety
/// Implement only for types of non-zero size without invalid bit patterns, padding or drop
/// glue.
pub(crate) unsafe trait AnyBits: Sized {}

// SAFETY: u64 is a plain 8-byte integer: every bit pattern is a value, no padding, no drop
// glue.
unsafe impl AnyBits for u64 {}
// SAFETY: AtomicU64 has the same in-memory representation as u64 (its documentation), so the
// same holds.
unsafe impl AnyBits for AtomicU64 {}

/// Allocates `n` elements with every byte set to `byte`, without aborting on failure: `None`
/// if the memory cannot be had.
///
/// Zero-filled memory comes from the allocator's zeroed allocation (`calloc`, fresh pages for
/// large blocks: no pass over the memory at all); other fills are one `memset`. Both are fast
/// in debug builds too, unlike filling element by element.
pub(crate) fn alloc_filled<T: AnyBits>(n: usize, byte: u8) -> Option<Box<[T]>> {
    let layout = std::alloc::Layout::array::<T>(n).ok()?;
    if layout.size() == 0 {
        // n == 0 (AnyBits types have a non-zero size): the allocator is not asked for zero
        // bytes.
        return Some(Vec::new().into_boxed_slice());
    }
    let p = if byte == 0 {
        // SAFETY: the layout has a non-zero size (checked above).
        unsafe { std::alloc::alloc_zeroed(layout) }
    } else {
        // SAFETY: the layout has a non-zero size (checked above).
        let p = unsafe { std::alloc::alloc(layout) };
        if !p.is_null() {
            // SAFETY: p is a fresh allocation of layout.size() bytes, writable and unaliased.
            unsafe { std::ptr::write_bytes(p, byte, layout.size()) };
        }
        p
    };
    if p.is_null() {
        return None;
    }
    let slice = std::ptr::slice_from_raw_parts_mut(p.cast::<T>(), n);
    // SAFETY: p was allocated by the global allocator with Layout::array::<T>(n), which is the
    // layout a Box<[T]> of n elements deallocates with; all layout.size() bytes are initialised
    // (zeroed or filled), and every byte pattern is a valid T (AnyBits), so the n elements are
    // initialised values; the Box becomes the allocation's only owner.
    Some(unsafe { Box::from_raw(slice) })
}

/// Allocates `words` words with every byte set to `byte` (0 or `0xFF`), without aborting on
/// failure.
pub(crate) fn alloc_words(words: u64, byte: u8) -> Option<Box<[AtomicU64]>> {
    let words = alloc_filled(usize::try_from(words).ok()?, byte)?;
    advise_huge_pages(&words);
    Some(words)
}

/// Asks the kernel to back a large allocation with transparent huge pages where it is
/// configured to on request (`madvise` mode): kernels run item after item, and a
/// grid-stride item touches one page per iteration, so with 4 KiB pages nearly every access
/// of a big buffer misses the TLB; and filling a big array page fault by page fault costs a
/// fault per 4 KiB (the VM's arrays take the advice too). Advice only: nothing changes if it
/// is not taken.
#[cfg(target_os = "linux")]
pub fn advise_huge_pages<T>(memory: &[T]) {
    const HUGE: usize = 2 << 20;
    let start = memory.as_ptr() as usize;
    let end = start + std::mem::size_of_val(memory);
    let (lo, hi) = (start.next_multiple_of(HUGE), end - end % HUGE);
    if hi > lo {
        // SAFETY: madvise only advises on the page range [lo, hi), which lies inside this
        // live allocation; MADV_HUGEPAGE changes no contents and no mapping the program sees.
        unsafe {
            libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_HUGEPAGE);
        }
    }
}

/// Huge-page advice is Linux-only.
#[cfg(not(target_os = "linux"))]
pub fn advise_huge_pages<T>(_memory: &[T]) {}

/// One allocation of device memory.
///
/// Invariant: `words.len() * 8 >= bytes`, and the words are only ever accessed atomically.
#[derive(Debug)]
pub(crate) struct Storage {
    words: Box<[AtomicU64]>,
    bytes: u64,
    /// Element width (1, 2, 4 or 8) kernels use on this storage; 0 until the first launch.
    width: AtomicU8,
    /// Held shared by launches, exclusively by host copies (see the module docs).
    gate: RwLock<()>,
    acct: Arc<Accounting>,
}

impl Storage {
    /// Allocates `bytes` bytes, zero-filled (`0xFF` if `poison`), and counts the allocation.
    /// `None` when the memory cannot be had.
    pub(crate) fn new(bytes: u64, poison: bool, acct: &Arc<Accounting>) -> Option<Storage> {
        if bytes > max_alloc_bytes() {
            return None;
        }
        let words = alloc_words(bytes.div_ceil(8), if poison { 0xFF } else { 0 })?;
        acct.allocated(bytes);
        Some(Storage {
            words,
            bytes,
            width: AtomicU8::new(0),
            gate: RwLock::new(()),
            acct: Arc::clone(acct),
        })
    }

    /// Size in bytes.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Claims element width `width` for kernel accesses: true if the storage is unused by
    /// kernels so far or already used at this width.
    pub(crate) fn claim_width(&self, width: u8) -> bool {
        match self
            .width
            .compare_exchange(0, width, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => true,
            Err(w) => w == width,
        }
    }

    /// Holds the gate shared for a launch (see the module docs).
    pub(crate) fn enter_launch(&self) -> RwLockReadGuard<'_, ()> {
        self.gate.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Byte `p` of the storage. Precondition: `p < bytes`.
    fn byte(&self, p: usize) -> &AtomicU8 {
        debug_assert!((p as u64) < self.bytes);
        // SAFETY: p < bytes <= words.len() * 8 (the type invariant; callers check p), so the
        // pointer lies inside the words' allocation, which lives as long as `&self`; a byte is
        // always aligned for AtomicU8; the words sit in `UnsafeCell`s (inside AtomicU64), so
        // writing through a pointer derived from a shared reference is allowed; and every
        // access to the storage is atomic. A byte access only happens inside a host copy, which
        // holds the gate exclusively, so it never races with an access of another size.
        unsafe { AtomicU8::from_ptr(self.words.as_ptr().cast::<u8>().add(p).cast_mut()) }
    }

    /// Copies `data` into the storage at byte `offset` (waits for running launches on it).
    /// Returns false, copying nothing, if the range does not lie inside the storage.
    pub(crate) fn write(&self, offset: u64, data: &[u8]) -> bool {
        let Some(end) = offset.checked_add(data.len() as u64) else {
            return false;
        };
        if end > self.bytes {
            return false;
        }
        let _excl = self.gate.write().unwrap_or_else(PoisonError::into_inner);
        // In range: offset <= end <= bytes <= words.len() * 8 <= usize::MAX.
        let mut p = offset as usize;
        let mut src = data;
        // Head bytes up to a word boundary, whole words, then the tail bytes.
        while !src.is_empty() && !p.is_multiple_of(8) {
            self.byte(p).store(src[0], Ordering::Relaxed);
            p += 1;
            src = &src[1..];
        }
        let mut chunks = src.chunks_exact(8);
        for chunk in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(chunk);
            // The word's memory bytes are exactly `w` (native order on both sides).
            self.words[p / 8].store(u64::from_ne_bytes(w), Ordering::Relaxed);
            p += 8;
        }
        for &b in chunks.remainder() {
            self.byte(p).store(b, Ordering::Relaxed);
            p += 1;
        }
        true
    }

    /// Copies from the storage at byte `offset` into `out` (waits for running launches on it).
    /// Returns false, leaving `out` unchanged, if the range does not lie inside the storage.
    pub(crate) fn read(&self, offset: u64, out: &mut [u8]) -> bool {
        let Some(end) = offset.checked_add(out.len() as u64) else {
            return false;
        };
        if end > self.bytes {
            return false;
        }
        let _excl = self.gate.write().unwrap_or_else(PoisonError::into_inner);
        let mut p = offset as usize;
        let mut dst = &mut out[..];
        while !dst.is_empty() && !p.is_multiple_of(8) {
            dst[0] = self.byte(p).load(Ordering::Relaxed);
            p += 1;
            dst = &mut dst[1..];
        }
        let mut chunks = dst.chunks_exact_mut(8);
        for chunk in &mut chunks {
            let w = self.words[p / 8].load(Ordering::Relaxed);
            chunk.copy_from_slice(&w.to_ne_bytes());
            p += 8;
        }
        for b in chunks.into_remainder() {
            *b = self.byte(p).load(Ordering::Relaxed);
            p += 1;
        }
        true
    }

    /// A view of `len` elements of `width` bytes starting `first` elements into the storage;
    /// `None` if it does not lie inside or `width` is not 1, 2, 4 or 8.
    pub(crate) fn view(&self, first: u64, len: u64, width: u8) -> Option<MemRef<'_>> {
        MemRef::new(&self.words, self.bytes, first, len, width)
    }
}

impl Drop for Storage {
    fn drop(&mut self) {
        self.acct.freed(self.bytes);
    }
}

/// A typed window onto device memory (a buffer argument or a shared array): `len` elements of
/// `width` bytes starting at byte `byte_off` of `words`.
///
/// Invariants (established by [`MemRef::new`], the only constructor): `width` is 1, 2, 4 or 8;
/// `byte_off` is a multiple of `width`; `byte_off + len * width <= limit <= words.len() * 8`.
/// With `words` 8-byte aligned, element `i < len` therefore lies inside `words` and is aligned
/// for the atomic type of its width.
#[derive(Copy, Clone, Debug)]
pub(crate) struct MemRef<'a> {
    words: &'a [AtomicU64],
    byte_off: usize,
    len: u64,
    width: u8,
}

// Element accessor: `&Atomic` for element `i` if the view has width `$w` and `0 <= i < len`.
macro_rules! accessor {
    ($name:ident, $atomic:ty, $int:ty, $w:literal) => {
        /// The element at `i` as an atomic of this width; `None` if `i` is out of range or the
        /// view has another element width.
        #[inline(always)]
        pub(crate) fn $name(&self, i: i64) -> Option<&'a $atomic> {
            // A negative `i` becomes >= 2^63 > len.
            if self.width != $w || (i as u64) >= self.len {
                return None;
            }
            let byte = self.byte_off + (i as usize) * $w;
            // SAFETY: by the type invariants and 0 <= i < len, bytes byte..byte + $w lie inside
            // `words` (alive for 'a) and `byte` is a multiple of $w = align_of::<$atomic>()
            // (`words` is 8-aligned). The memory is inside `UnsafeCell`s (AtomicU64), so atomic
            // writes through it are allowed, and it is only ever accessed atomically. Racing
            // accesses all have width $w: the storage's width lock and gate (module docs).
            Some(unsafe {
                <$atomic>::from_ptr(
                    self.words
                        .as_ptr()
                        .cast::<u8>()
                        .add(byte)
                        .cast::<$int>()
                        .cast_mut(),
                )
            })
        }
    };
}

impl<'a> MemRef<'a> {
    /// A view of `len` elements of `width` bytes, `first` elements into the first `limit`
    /// bytes of `words`; `None` unless it fits (see the type invariants).
    pub(crate) fn new(
        words: &'a [AtomicU64],
        limit: u64,
        first: u64,
        len: u64,
        width: u8,
    ) -> Option<MemRef<'a>> {
        if !matches!(width, 1 | 2 | 4 | 8) || limit > (words.len() as u64).checked_mul(8)? {
            return None;
        }
        let w = u64::from(width);
        let start = first.checked_mul(w)?;
        let end = first.checked_add(len)?.checked_mul(w)?;
        if end > limit {
            return None;
        }
        Some(MemRef {
            words,
            byte_off: usize::try_from(start).ok()?,
            len,
            width,
        })
    }

    /// Length in elements.
    #[inline(always)]
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Element width in bytes.
    pub(crate) fn width(&self) -> u8 {
        self.width
    }

    /// The view as compiled kernels read it: the address of element 0, the length and the
    /// width (see `cajeta_jit::device::CompiledKernel::run` for the access contract, which
    /// this type's invariants meet: in bounds, aligned, one width per storage at a time).
    pub(crate) fn compiled_view(&self) -> cajeta_jit::device::MemView {
        cajeta_jit::device::MemView {
            addr: self.words.as_ptr() as u64 + self.byte_off as u64,
            len: self.len,
            width: u64::from(self.width),
        }
    }

    accessor!(at8, AtomicU8, u8, 1);
    accessor!(at16, AtomicU16, u16, 2);
    accessor!(at32, AtomicU32, u32, 4);
    accessor!(at64, AtomicU64, u64, 8);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accounting_follows_the_last_reference() {
        let acct = Arc::new(Accounting::default());
        let s = Arc::new(Storage::new(100, false, &acct).unwrap());
        assert_eq!(acct.snapshot().live, 100);
        // A launch holds a clone while the VM releases its reference.
        let in_flight = Arc::clone(&s);
        drop(s);
        let st = acct.snapshot();
        assert_eq!((st.live, st.frees), (100, 0), "still in flight");
        drop(in_flight);
        let st = acct.snapshot();
        assert_eq!((st.live, st.peak, st.allocs, st.frees), (0, 100, 1, 1));
    }

    #[test]
    fn filled_allocations() {
        let empty: Box<[u64]> = alloc_filled(0, 0xFF).unwrap();
        assert!(empty.is_empty());
        let zeros: Box<[AtomicU64]> = alloc_filled(1000, 0).unwrap();
        assert_eq!(zeros.len(), 1000);
        assert!(zeros.iter().all(|w| w.load(Ordering::Relaxed) == 0));
        let ones: Box<[u64]> = alloc_filled(1001, 0xFF).unwrap();
        assert_eq!(ones.len(), 1001);
        assert!(ones.iter().all(|&w| w == u64::MAX));
        let fives: Box<[u64]> = alloc_filled(3, 0x55).unwrap();
        assert_eq!(&fives[..], &[0x5555_5555_5555_5555; 3]);
        // A size that has no layout, and one the allocator refuses. (`black_box`: an
        // allocation whose result is unused may be elided, and then "succeeds", in optimised
        // builds.)
        use std::hint::black_box;
        assert!(black_box(alloc_filled::<u64>(usize::MAX, 0)).is_none());
        assert!(black_box(alloc_filled::<u64>(isize::MAX as usize / 8, 0)).is_none());
        assert!(black_box(alloc_filled::<u64>(isize::MAX as usize / 8, 0xFF)).is_none());
    }

    #[test]
    fn absurd_sizes_fail_cleanly() {
        let acct = Arc::new(Accounting::default());
        assert!(Storage::new(u64::MAX, false, &acct).is_none());
        assert!(Storage::new(1 << 62, true, &acct).is_none());
        assert_eq!(acct.snapshot(), MemStats::default());
    }

    #[test]
    fn copies_at_any_alignment() {
        let acct = Arc::new(Accounting::default());
        let s = Storage::new(37, true, &acct).unwrap();
        let data: Vec<u8> = (0..30).collect();
        assert!(s.write(3, &data));
        let mut all = [0u8; 37];
        assert!(s.read(0, &mut all));
        assert_eq!(&all[..3], &[0xFF; 3]);
        assert_eq!(&all[3..33], &data[..]);
        assert_eq!(&all[33..], &[0xFF; 4]);
        assert!(!s.write(30, &data), "past the end");
        assert!(!s.read(u64::MAX, &mut all[..2]), "overflowing offset");
    }

    #[test]
    fn views_check_width_bounds_and_fit() {
        let acct = Arc::new(Accounting::default());
        let s = Storage::new(16, false, &acct).unwrap();
        assert!(s.write(4, &7u32.to_le_bytes()));
        let v = s.view(1, 3, 4).unwrap();
        assert_eq!(
            v.at32(0).map(|a| a.load(Ordering::Relaxed)),
            Some(7u32.to_le())
        );
        assert!(v.at32(3).is_none() && v.at32(-1).is_none());
        assert!(v.at64(0).is_none(), "another width");
        assert!(s.view(1, 4, 4).is_none(), "past the end");
        assert!(s.view(0, 1, 3).is_none(), "bad width");
        assert!(s.view(u64::MAX, 1, 8).is_none(), "overflow");
        assert!(s.claim_width(4) && s.claim_width(4) && !s.claim_width(8));
    }
}
