//! The object table: strings, host arrays and class instances behind generation-checked
//! handles, and the mark-sweep collector for strings.
//!
//! # Handles
//!
//! A handle is `(index + 1) | (generation << 32)`; `0` is `null`. Releasing a slot bumps its
//! generation, so every handle to the old object becomes *stale*: lookups fail cleanly and the
//! interpreter reports `E-DROPPED` (or `E-NULL` for 0). A forged handle (any 64-bit value) is
//! likewise either a live object or a clean failure, never memory unsafety.
//!
//! # Ownership and collection
//!
//! Arrays and instances are released explicitly (`drop`, compiled from the ownership rules of
//! LANGUAGE §6). Strings are outside ownership: they are collected by a precise mark-sweep
//! collector ([`Heap::collect`]) that the VM runs when the number of live strings, or the
//! bytes of host objects, has doubled since the last collection. The slots `[0, pinned)` hold the module's constant strings and
//! are never collected.
//!
//! Invariant: `live_strings` equals the number of slots holding [`Obj::Str`].
//!
//! # Device objects
//!
//! [`KernelBuffer`]s, [`KernelStream`]s and [`Event`]s are objects like arrays (released by
//! `drop`, or with the failed call that allocated them), but they also hold backend
//! resources, released deterministically by their Rust `Drop`: an owning buffer releases its
//! [`Storage`], a created stream is destroyed, an event releases its recording. A buffer's storage lives in a small shared record
//! (`Rc<Storage>`) that its views point to as well; releasing the storage (`free()`, a drop,
//! `allocate()`) marks the record released, so every view sees it at once (XPU §2.1: views
//! die with their parent's storage). The backend itself keeps storage used by in-flight work
//! alive (XPU §4.3); [`Storage::release`] only drops the VM's reference.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;

use cajeta_backends::{Backend, EventId, MemoryKind, StorageId, StreamId};
use cajeta_bytecode::{Elem, Scalar};
use cajeta_jit::{ObjectView, ObjectViews};

/// The null handle.
pub const NULL: u64 = 0;

/// Collections never run while fewer strings than this are live.
const GC_MIN_THRESHOLD: usize = 1 << 14;

/// Nor, for want of bytes, while host objects hold fewer bytes than this.
const GC_MIN_BYTES: u64 = 32 << 20;

/// A heap object.
#[derive(Debug)]
pub enum Obj {
    /// An empty slot (on the free list).
    Free,
    /// An immutable string.
    Str(Box<str>),
    /// A host array.
    Array(Array),
    /// An instance of a class of the module.
    Instance(Instance),
    /// A `KernelBuffer<T>` (owning or a view).
    Buffer(KernelBuffer),
    /// A `KernelStream` (the default stream or a created one).
    Stream(KernelStream),
    /// An `Event` (XPU §2.3, T2).
    Event(Event),
}

/// Backend storage of one allocation, shared by the owning buffer and its views.
///
/// Invariant: the backend's `release` is called exactly once per record, by the first
/// [`Storage::release`] (or by `Drop`, as a safety net, if nobody released it).
pub struct Storage {
    backend: Arc<dyn Backend>,
    id: StorageId,
    released: Cell<bool>,
    /// The allocation's size and the VM's live device byte counter ([`Heap::device_meter`]),
    /// which holds it until the release.
    bytes: u64,
    meter: Rc<Cell<u64>>,
}

impl Storage {
    /// A record for storage `id` of `bytes` bytes just allocated on `backend`; `meter` (the
    /// VM's live device byte counter) is raised by `bytes` until the release.
    pub fn new(
        backend: Arc<dyn Backend>,
        id: StorageId,
        bytes: u64,
        meter: &Rc<Cell<u64>>,
    ) -> Rc<Storage> {
        meter.set(meter.get().saturating_add(bytes));
        Rc::new(Storage {
            backend,
            id,
            released: Cell::new(false),
            bytes,
            meter: Rc::clone(meter),
        })
    }

    /// The backend's handle.
    pub fn id(&self) -> StorageId {
        self.id
    }

    /// True once the storage was released (every buffer using it is then freed).
    pub fn is_released(&self) -> bool {
        self.released.get()
    }

    /// Releases the storage (idempotent).
    pub fn release(&self) {
        if !self.released.replace(true) {
            self.backend.release(self.id);
            self.meter.set(self.meter.get().saturating_sub(self.bytes));
        }
    }
}

impl Drop for Storage {
    fn drop(&mut self) {
        self.release();
    }
}

impl std::fmt::Debug for Storage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Storage")
            .field("id", &self.id)
            .field("released", &self.released.get())
            .finish()
    }
}

/// Where a buffer's elements live (XPU §2.1: allocated, unallocated or freed; owning or view).
#[derive(Debug)]
pub enum BufState {
    /// Created by the `(0, n)` constructor and not yet given storage by `allocate()`.
    Unallocated,
    /// After `free()` (or an `allocate()` that failed after releasing the old storage).
    Freed,
    /// An owning buffer's storage (elements `0..len`).
    Owned(Rc<Storage>),
    /// A view: elements `offset..offset + len` of another buffer's storage. Freed once the
    /// record is released.
    View {
        /// The parent's storage record.
        storage: Rc<Storage>,
        /// Offset in elements from the start of the storage.
        offset: u64,
    },
}

/// A `KernelBuffer<T>` object.
#[derive(Debug)]
pub struct KernelBuffer {
    /// The element type `T`.
    pub elem: Scalar,
    /// Length in elements (also known after `free()`).
    pub len: u64,
    /// The memory kind of the current (or last) storage.
    pub kind: MemoryKind,
    /// The storage.
    pub state: BufState,
}

impl KernelBuffer {
    /// The storage and element offset, if the buffer is usable (allocated and not released).
    pub fn live_storage(&self) -> Option<(&Rc<Storage>, u64)> {
        match &self.state {
            BufState::Owned(s) if !s.is_released() => Some((s, 0)),
            BufState::View { storage, offset } if !storage.is_released() => {
                Some((storage, *offset))
            }
            _ => None,
        }
    }

    /// True for a view.
    pub fn is_view(&self) -> bool {
        matches!(self.state, BufState::View { .. })
    }

    /// Releases an owning buffer's storage (`free()`); nothing on a view or without storage.
    pub fn free(&mut self) {
        if let BufState::Owned(s) = &self.state {
            s.release();
            self.state = BufState::Freed;
        }
    }
}

impl Drop for KernelBuffer {
    /// Dropping an owning buffer is `free()` (LANGUAGE §6.5); views release nothing.
    fn drop(&mut self) {
        self.free();
    }
}

/// A `KernelStream` object.
pub struct KernelStream {
    /// The backend that created it.
    pub backend: Arc<dyn Backend>,
    /// The backend's stream ([`StreamId::DEFAULT`] for `KernelStream.current()`).
    pub id: StreamId,
    /// Set by `destroy()`; later launches and async copies on it are `XPU-E-FREED`.
    pub destroyed: bool,
}

impl KernelStream {
    /// True for the default stream (never destroyed, never released by `drop`).
    pub fn is_default(&self) -> bool {
        self.id == StreamId::DEFAULT
    }

    /// `destroy()`: waits for and destroys a created stream (idempotent; nothing on the
    /// default stream).
    pub fn destroy(&mut self) {
        if !self.destroyed && !self.is_default() {
            self.destroyed = true;
            self.backend.stream_destroy(self.id);
        }
    }
}

impl Drop for KernelStream {
    /// Dropping a created stream destroys it (LANGUAGE §6.5).
    fn drop(&mut self) {
        self.destroy();
    }
}

impl std::fmt::Debug for KernelStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KernelStream")
            .field("id", &self.id)
            .field("destroyed", &self.destroyed)
            .finish()
    }
}

/// An `Event` object (XPU §2.3): its backend recording, if `recordOn` ran.
pub struct Event {
    /// The backend that records it.
    pub backend: Arc<dyn Backend>,
    /// The latest recording (`None`: never recorded, which counts as signalled).
    pub recorded: Option<EventId>,
    /// Set by `destroy()`; later uses are `XPU-E-FREED`.
    pub destroyed: bool,
}

impl Event {
    /// Replaces the recording by `id` (the previous one is released).
    pub fn record(&mut self, id: EventId) {
        if let Some(old) = self.recorded.replace(id) {
            self.backend.event_release(old);
        }
    }

    /// `destroy()`: releases the recording (idempotent).
    pub fn destroy(&mut self) {
        self.destroyed = true;
        if let Some(old) = self.recorded.take() {
            self.backend.event_release(old);
        }
    }
}

impl Drop for Event {
    /// Dropping an event destroys it (XPU §2.3).
    fn drop(&mut self) {
        self.destroy();
    }
}

impl std::fmt::Debug for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Event")
            .field("recorded", &self.recorded)
            .field("destroyed", &self.destroyed)
            .finish()
    }
}

impl Obj {
    /// True for the objects ownership governs (released by `drop`): arrays, instances,
    /// buffers, created streams and events. Strings are collected; the default stream is
    /// permanent.
    fn is_owned_kind(&self) -> bool {
        match self {
            Obj::Array(_) | Obj::Instance(_) | Obj::Buffer(_) | Obj::Event(_) => true,
            Obj::Stream(s) => !s.is_default(),
            Obj::Free | Obj::Str(_) => false,
        }
    }
}

/// A host array: its element type and compact storage.
#[derive(Debug)]
pub struct Array {
    /// The element type (decides which [`ArrData`] variant `data` is).
    pub elem: Elem,
    /// The elements.
    pub data: ArrData,
}

/// Array storage, one variant per element representation; scalars are stored at their
/// natural width (a `float32[]` of 2^24 elements takes 64 MiB, not 128).
#[derive(Debug)]
pub enum ArrData {
    /// `boolean[]`: 0 or 1 per byte.
    Bool(Vec<u8>),
    /// `char[]`: code points.
    Char(Vec<u32>),
    /// `int8[]`.
    I8(Vec<i8>),
    /// `uint8[]`.
    U8(Vec<u8>),
    /// `int16[]`.
    I16(Vec<i16>),
    /// `uint16[]`.
    U16(Vec<u16>),
    /// `float16[]`: the IEEE binary16 bits (T2).
    F16(Vec<u16>),
    /// `bfloat16[]`: the bits (T2).
    BF16(Vec<u16>),
    /// `int32[]`.
    I32(Vec<i32>),
    /// `uint32[]`.
    U32(Vec<u32>),
    /// `int64[]`.
    I64(Vec<i64>),
    /// `uint64[]`.
    U64(Vec<u64>),
    /// `float32[]`.
    F32(Vec<f32>),
    /// `float64[]`.
    F64(Vec<f64>),
    /// Arrays of references (`String[]`, `C[]`): handles.
    Ref(Vec<u64>),
}

impl ArrData {
    /// The number of elements.
    pub fn len(&self) -> usize {
        match self {
            ArrData::Bool(v) | ArrData::U8(v) => v.len(),
            ArrData::Char(v) | ArrData::U32(v) => v.len(),
            ArrData::I8(v) => v.len(),
            ArrData::I16(v) => v.len(),
            ArrData::U16(v) | ArrData::F16(v) | ArrData::BF16(v) => v.len(),
            ArrData::I32(v) => v.len(),
            ArrData::I64(v) => v.len(),
            ArrData::U64(v) | ArrData::Ref(v) => v.len(),
            ArrData::F32(v) => v.len(),
            ArrData::F64(v) => v.len(),
        }
    }

    /// True if the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The elements' bytes (native byte order); empty for arrays of references.
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            ArrData::Bool(v) | ArrData::U8(v) => v,
            ArrData::Char(v) | ArrData::U32(v) => bytes_of(v),
            ArrData::I8(v) => bytes_of(v),
            ArrData::I16(v) => bytes_of(v),
            ArrData::U16(v) | ArrData::F16(v) | ArrData::BF16(v) => bytes_of(v),
            ArrData::I32(v) => bytes_of(v),
            ArrData::I64(v) => bytes_of(v),
            ArrData::U64(v) => bytes_of(v),
            ArrData::F32(v) => bytes_of(v),
            ArrData::F64(v) => bytes_of(v),
            ArrData::Ref(_) => &[],
        }
    }

    /// The elements' bytes, writable (every byte pattern is a valid element: `boolean[]` and
    /// `char[]` cells are plain integers here, read with `!= 0` and checked on printing).
    pub fn as_bytes_mut(&mut self) -> &mut [u8] {
        match self {
            ArrData::Bool(v) | ArrData::U8(v) => v,
            ArrData::Char(v) | ArrData::U32(v) => bytes_of_mut(v),
            ArrData::I8(v) => bytes_of_mut(v),
            ArrData::I16(v) => bytes_of_mut(v),
            ArrData::U16(v) | ArrData::F16(v) | ArrData::BF16(v) => bytes_of_mut(v),
            ArrData::I32(v) => bytes_of_mut(v),
            ArrData::I64(v) => bytes_of_mut(v),
            ArrData::U64(v) => bytes_of_mut(v),
            ArrData::F32(v) => bytes_of_mut(v),
            ArrData::F64(v) => bytes_of_mut(v),
            ArrData::Ref(_) => &mut [],
        }
    }

    /// A zero-filled array of `n` elements of type `elem`, or `None` if it cannot be allocated.
    pub fn zeroed(elem: Elem, n: usize) -> Option<ArrData> {
        Some(match elem {
            Elem::Scalar(s) => match s {
                Scalar::Bool => ArrData::Bool(zeroed_vec(n)?),
                Scalar::Char => ArrData::Char(zeroed_vec(n)?),
                Scalar::I8 => ArrData::I8(zeroed_vec(n)?),
                Scalar::U8 => ArrData::U8(zeroed_vec(n)?),
                Scalar::I16 => ArrData::I16(zeroed_vec(n)?),
                Scalar::U16 => ArrData::U16(zeroed_vec(n)?),
                Scalar::I32 => ArrData::I32(zeroed_vec(n)?),
                Scalar::U32 => ArrData::U32(zeroed_vec(n)?),
                Scalar::I64 => ArrData::I64(zeroed_vec(n)?),
                Scalar::U64 => ArrData::U64(zeroed_vec(n)?),
                Scalar::F32 => ArrData::F32(zeroed_vec(n)?),
                Scalar::F64 => ArrData::F64(zeroed_vec(n)?),
                Scalar::F16 => ArrData::F16(zeroed_vec(n)?),
                Scalar::BF16 => ArrData::BF16(zeroed_vec(n)?),
            },
            Elem::Str | Elem::Object(_) => ArrData::Ref(zeroed_vec(n)?),
        })
    }
}

/// Primitive element types whose all-zero bit pattern is the value zero (and, being plain
/// numbers, whose every bit pattern is a valid value).
///
/// # Safety
///
/// Implementors must be plain integer or float types (no padding, every bit pattern valid).
unsafe trait Zeroable: Copy {}
// SAFETY: primitive integers and floats: all-zero bits are a valid value (0 / 0.0).
unsafe impl Zeroable for u8 {}
// SAFETY: as above.
unsafe impl Zeroable for i8 {}
// SAFETY: as above.
unsafe impl Zeroable for u16 {}
// SAFETY: as above.
unsafe impl Zeroable for i16 {}
// SAFETY: as above.
unsafe impl Zeroable for u32 {}
// SAFETY: as above.
unsafe impl Zeroable for i32 {}
// SAFETY: as above.
unsafe impl Zeroable for u64 {}
// SAFETY: as above.
unsafe impl Zeroable for i64 {}
// SAFETY: as above.
unsafe impl Zeroable for f32 {}
// SAFETY: as above.
unsafe impl Zeroable for f64 {}

/// The bytes of a slice of plain numbers.
fn bytes_of<T: Zeroable>(v: &[T]) -> &[u8] {
    // SAFETY: `Zeroable` types are plain integers/floats: no padding, so every byte of the
    // slice is initialised; `u8` has alignment 1 and the length is the slice's size in bytes.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}

/// The bytes of a slice of plain numbers, writable.
fn bytes_of_mut<T: Zeroable>(v: &mut [T]) -> &mut [u8] {
    // SAFETY: as in `bytes_of`; moreover every bit pattern is a valid `T` (`Zeroable`), so any
    // bytes written through the view leave valid elements. The view borrows `v` mutably.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}

/// A vector of `n` zeros from `alloc_zeroed` (calloc: large arrays get fresh zero pages instead
/// of a memset), or `None` when the size overflows or the allocator refuses.
fn zeroed_vec<T: Zeroable>(n: usize) -> Option<Vec<T>> {
    if n == 0 || std::mem::size_of::<T>() == 0 {
        return Some(Vec::new());
    }
    let layout = std::alloc::Layout::array::<T>(n).ok()?;
    // SAFETY: `layout` has non-zero size (n > 0 and T is not zero-sized).
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) } as *mut T;
    if ptr.is_null() {
        return None;
    }
    // SAFETY: `ptr` was allocated by the global allocator with the layout of `[T; n]`, which is
    // what `Vec<T>` with capacity `n` uses; all `n` elements are initialised (zero bits are a
    // valid `T` by `Zeroable`).
    let v = unsafe { Vec::from_raw_parts(ptr, n, n) };
    // (A big array is about to be filled: a fault per 2 MiB rather than per 4 KiB.)
    cajeta_backends::cpu::advise_huge_pages(&v);
    Some(v)
}

/// An instance of a class: its class index and one cell per field.
#[derive(Debug)]
pub struct Instance {
    /// The class index in the module.
    pub class: u32,
    /// Field cells in declaration order (canonical form, handles for references).
    pub fields: Box<[u64]>,
}

/// One entry of the object table.
#[derive(Debug)]
struct Slot {
    /// Bumped on every release; the high half of each handle.
    generation: u32,
    /// The top-level call (see [`Heap::epoch`]) during which the object was allocated.
    epoch: u32,
    /// The object.
    obj: Obj,
    /// The owns-flags of an array of references' elements (LANGUAGE §6.2): bit `i % 64` of
    /// word `i / 64` is element `i`'s. Trailing zero words are trimmed, so the highest owning
    /// element is in the last word and an array whose elements only borrow has none.
    owns: Vec<u64>,
    /// The length of the buffer the previous generation held, [`NO_LENGTH`] if it held none:
    /// `length()` through a borrow of a dropped buffer still answers (XPU §2.1).
    dropped_len: u64,
}

/// [`Slot::dropped_len`] when the previous generation was not a buffer.
const NO_LENGTH: u64 = u64::MAX;

/// Counters for tests and `--mem-stats`-style reporting.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Default)]
pub struct HeapStats {
    /// Objects allocated so far (strings included).
    pub allocs: u64,
    /// Objects released or collected so far.
    pub frees: u64,
    /// Collections run so far.
    pub collections: u64,
    /// Strings live now.
    pub live_strings: usize,
    /// Arrays, instances, buffers and streams live now.
    pub live_objects: usize,
}

/// The object table.
#[derive(Debug)]
pub struct Heap {
    slots: Vec<Slot>,
    /// Indices of free slots.
    free: Vec<u32>,
    /// Slots `[0, pinned)` are constant strings, never collected.
    pinned: usize,
    /// Number of slots holding strings.
    live_strings: usize,
    /// Number of slots holding other objects (arrays, instances, buffers, streams).
    live_objects: usize,
    /// Collect when `live_strings` reaches this,
    gc_threshold: usize,
    /// or when `host_bytes` reaches this (a few long strings, such as text built by repeated
    /// concatenation, fill memory long before their count doubles).
    gc_bytes: u64,
    /// The current top-level call's number (stamped on every allocation).
    epoch: u32,
    /// Mark bits, one per slot, reused between collections.
    marks: Vec<bool>,
    /// What compiled code reads to reach array elements and instance fields inline, one entry
    /// per slot (the contract is [`ObjectView`]'s): kept in step with `slots` by `alloc` and
    /// `free_slot`, the only places a slot's object changes.
    views: Vec<ObjectView>,
    /// Where `views` is now, for `JitContext::views` (boxed: its address survives moves of
    /// the heap; rewritten whenever `views` grows).
    view_table: Box<ObjectViews>,
    allocs: u64,
    frees: u64,
    collections: u64,
    /// Bytes held by live strings, arrays and instances (their text, elements and fields).
    /// Invariant: the sum of [`obj_bytes`] over the slots.
    host_bytes: u64,
    /// Live device bytes of this VM's buffers (shared with every [`Storage`] record).
    device_bytes: Rc<Cell<u64>>,
    /// Bytes of the VM's register stack beyond its initial size ([`Heap::reserve_stack`]).
    stack_bytes: u64,
    /// The memory limit on `host_bytes + device_bytes + stack_bytes` (`u64::MAX`: none).
    limit: u64,
}

/// Why an owns-flag access (`aown.get`, `aown.set`) failed.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum ElemError {
    /// The handle is null, stale, or not an array of references.
    BadRef,
    /// The index is outside `0 … len − 1`.
    Bounds {
        /// The array's length.
        len: usize,
    },
}

/// Why an allocation failed.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum AllocError {
    /// 2^32 − 1 objects are live.
    TableFull,
    /// The allocation of `requested` bytes would pass the memory limit.
    Memory {
        /// Bytes asked for.
        requested: u64,
        /// Host plus device bytes in use.
        in_use: u64,
        /// The limit.
        limit: u64,
    },
    /// The system refused `requested` bytes (address-space limit, no memory left) although
    /// they fit under the VM's limit.
    System {
        /// Bytes asked for.
        requested: u64,
    },
}

/// Drops the trailing zero words of an owns-flag bitset.
fn trim(owns: &mut Vec<u64>) {
    while owns.last() == Some(&0) {
        owns.pop();
    }
}

/// The bytes `obj` holds on the host (what the memory limit counts): a string's text, an
/// array's elements (8 per reference), an instance's field cells. Buffers count on the
/// device, through their storage.
fn obj_bytes(obj: &Obj) -> u64 {
    match obj {
        Obj::Str(s) => s.len() as u64,
        Obj::Array(a) => match &a.data {
            ArrData::Ref(v) => 8 * v.len() as u64,
            data => data.as_bytes().len() as u64,
        },
        Obj::Instance(i) => 8 * i.fields.len() as u64,
        Obj::Free | Obj::Buffer(_) | Obj::Stream(_) | Obj::Event(_) => 0,
    }
}

impl Default for Heap {
    fn default() -> Self {
        Heap::new()
    }
}

impl Heap {
    /// An empty table.
    pub fn new() -> Heap {
        Heap {
            slots: Vec::new(),
            free: Vec::new(),
            pinned: 0,
            live_strings: 0,
            live_objects: 0,
            gc_threshold: GC_MIN_THRESHOLD,
            gc_bytes: GC_MIN_BYTES,
            epoch: 0,
            marks: Vec::new(),
            views: Vec::new(),
            view_table: Box::new(ObjectViews {
                ptr: std::ptr::null(),
                len: 0,
            }),
            allocs: 0,
            frees: 0,
            collections: 0,
            host_bytes: 0,
            device_bytes: Rc::new(Cell::new(0)),
            stack_bytes: 0,
            limit: u64::MAX,
        }
    }

    /// Sets the memory limit on host plus device bytes (`None`: no limit). Objects already
    /// live stay; only later allocations are checked.
    pub fn set_limit(&mut self, limit: Option<u64>) {
        self.limit = limit.unwrap_or(u64::MAX);
    }

    /// The memory limit, if any.
    pub fn limit(&self) -> Option<u64> {
        (self.limit != u64::MAX).then_some(self.limit)
    }

    /// Counts `bytes` more of register stack towards the memory limit (the stack never
    /// shrinks, so they stay counted).
    ///
    /// # Errors
    ///
    /// [`AllocError::Memory`] if they do not fit under the limit.
    pub fn reserve_stack(&mut self, bytes: u64) -> Result<(), AllocError> {
        self.check_room(bytes)?;
        self.stack_bytes += bytes;
        Ok(())
    }

    /// Bytes held by live strings, arrays and instances.
    pub fn host_bytes(&self) -> u64 {
        self.host_bytes
    }

    /// The VM's live device byte counter, for new [`Storage`] records.
    pub fn device_meter(&self) -> &Rc<Cell<u64>> {
        &self.device_bytes
    }

    /// Bytes counted towards the limit: host objects, device memory, the register stack.
    fn in_use(&self) -> u64 {
        self.host_bytes
            .saturating_add(self.device_bytes.get())
            .saturating_add(self.stack_bytes)
    }

    /// Bytes that still fit under the limit (`u64::MAX` less what is in use, without one).
    pub fn room(&self) -> u64 {
        self.limit.saturating_sub(self.in_use())
    }

    /// Checks that `bytes` more fit under the memory limit.
    ///
    /// # Errors
    ///
    /// [`AllocError::Memory`] if they do not.
    pub fn check_room(&self, bytes: u64) -> Result<(), AllocError> {
        if self.limit == u64::MAX {
            return Ok(());
        }
        let in_use = self.in_use();
        if in_use.saturating_add(bytes) > self.limit {
            return Err(AllocError::Memory {
                requested: bytes,
                in_use,
                limit: self.limit,
            });
        }
        Ok(())
    }

    /// An empty string with room for `bytes` bytes of text, when they fit under the memory
    /// limit and the system provides them: text that may grow without bound (concatenation)
    /// is built here, so that running out is `E-MEMORY`, not an abort.
    ///
    /// # Errors
    ///
    /// [`AllocError::Memory`] past the limit, [`AllocError::System`] when the allocation fails.
    pub fn text_buffer(&self, bytes: usize) -> Result<String, AllocError> {
        self.check_room(bytes as u64)?;
        let mut s = String::new();
        s.try_reserve_exact(bytes).map_err(|_| AllocError::System {
            requested: bytes as u64,
        })?;
        Ok(s)
    }

    /// The object view table for compiled code (`JitContext::views`); valid as long as the
    /// heap lives.
    pub fn object_views(&self) -> *const ObjectViews {
        &*self.view_table
    }

    /// Makes every slot allocated so far permanent (used once, after the constant strings).
    pub fn pin_all(&mut self) {
        self.pinned = self.slots.len();
    }

    /// Makes every slot collectable again (the constants of a replaced module; the new
    /// module's constants are rooted by the VM instead).
    pub fn unpin_all(&mut self) {
        self.pinned = 0;
    }

    /// Releases object `h` and, first, what its fields and elements hold (`classes` gives the
    /// field types of instances): the drops the compiler emits for owning fields (LANGUAGE
    /// §6.5), for references known to be the last ones (statics at program end, statics a
    /// replaced module no longer has). Strings are left to the collector.
    pub fn release_tree(&mut self, h: u64, classes: &[cajeta_bytecode::Class]) {
        let mut work = vec![h];
        while let Some(h) = work.pop() {
            match self.get(h) {
                Some(Obj::Instance(inst)) => {
                    if let Some(class) = classes.get(inst.class as usize) {
                        for (f, cell) in class.fields.iter().zip(inst.fields.iter()) {
                            if f.ty.is_ref() && f.ty != cajeta_bytecode::Type::Str {
                                work.push(*cell);
                            }
                        }
                    }
                }
                // What the elements own, walked here (not by `release`) so that owned
                // instances' fields are reached too.
                Some(Obj::Array(_)) => {
                    let idx = (h as u32).wrapping_sub(1) as usize;
                    work.extend(self.take_owned(idx));
                }
                _ => {}
            }
            self.release(h);
        }
    }

    /// Renumbers the classes of instances and of object arrays after a module replacement:
    /// class `c` becomes `map[c]`. Objects whose class has no counterpart (`None`) are first
    /// released with what they own ([`Heap::release_tree`], reading the field types from
    /// `old`, the replaced module's classes): nothing the new module can name reaches them.
    pub fn renumber_classes(&mut self, map: &[Option<u32>], old: &[cajeta_bytecode::Class]) {
        let class_of = |obj: &Obj| match obj {
            Obj::Instance(inst) => Some(inst.class),
            Obj::Array(Array {
                elem: Elem::Object(c),
                ..
            }) => Some(*c),
            _ => None,
        };
        let orphans: Vec<u64> = self
            .slots
            .iter()
            .enumerate()
            .filter(|(_, slot)| {
                class_of(&slot.obj)
                    .is_some_and(|c| map.get(c as usize).copied().flatten().is_none())
            })
            .map(|(idx, slot)| handle(idx, slot.generation))
            .collect();
        for h in orphans {
            self.release_tree(h, old);
        }
        for slot in &mut self.slots {
            let class = match &mut slot.obj {
                Obj::Instance(inst) => &mut inst.class,
                Obj::Array(Array {
                    elem: Elem::Object(c),
                    ..
                }) => c,
                _ => continue,
            };
            if let Some(new) = map.get(*class as usize).copied().flatten() {
                *class = new;
            }
        }
        // Instance views name their class.
        for (slot, view) in self.slots.iter_mut().zip(self.views.iter_mut()) {
            if matches!(slot.obj, Obj::Instance(_)) {
                *view = view_of(&mut slot.obj, slot.generation);
            }
        }
    }

    /// Starts a new top-level call: later allocations carry the new epoch number.
    pub fn next_epoch(&mut self) -> u32 {
        self.epoch = self.epoch.wrapping_add(1);
        self.epoch
    }

    /// The counters.
    pub fn stats(&self) -> HeapStats {
        HeapStats {
            allocs: self.allocs,
            frees: self.frees,
            collections: self.collections,
            live_strings: self.live_strings,
            live_objects: self.live_objects,
        }
    }

    /// Adds `obj` to the table and returns its handle.
    ///
    /// # Errors
    ///
    /// [`AllocError::TableFull`] when 2^32 − 1 objects are live, [`AllocError::Memory`] when
    /// the object would pass the memory limit ([`Heap::set_limit`]).
    pub fn alloc(&mut self, obj: Obj) -> Result<u64, AllocError> {
        if matches!(obj, Obj::Free) {
            return Ok(NULL);
        }
        let bytes = obj_bytes(&obj);
        self.check_room(bytes)?;
        match &obj {
            Obj::Str(_) => self.live_strings += 1,
            _ => self.live_objects += 1,
        }
        self.host_bytes += bytes;
        self.allocs += 1;
        let mut obj = obj;
        if let Some(idx) = self.free.pop() {
            let slot = &mut self.slots[idx as usize];
            self.views[idx as usize] = view_of(&mut obj, slot.generation);
            slot.obj = obj;
            slot.epoch = self.epoch;
            return Ok(handle(idx as usize, slot.generation));
        }
        let idx = self.slots.len();
        // Index u32::MAX would make `index + 1` overflow the low half of the handle.
        if idx >= u32::MAX as usize {
            match obj {
                Obj::Str(_) => self.live_strings -= 1,
                _ => self.live_objects -= 1,
            }
            self.allocs -= 1;
            self.host_bytes -= bytes;
            return Err(AllocError::TableFull);
        }
        self.views.push(view_of(&mut obj, 0));
        *self.view_table = ObjectViews {
            ptr: self.views.as_ptr(),
            len: self.views.len() as u64,
        };
        self.slots.push(Slot {
            generation: 0,
            epoch: self.epoch,
            obj,
            owns: Vec::new(),
            dropped_len: NO_LENGTH,
        });
        Ok(handle(idx, 0))
    }

    /// Allocates a string.
    ///
    /// # Errors
    ///
    /// As [`Heap::alloc`].
    pub fn alloc_str(&mut self, s: impl Into<Box<str>>) -> Result<u64, AllocError> {
        self.alloc(Obj::Str(s.into()))
    }

    /// The object `h` designates, or `None` for null, a stale handle or a free slot.
    #[inline(always)]
    pub fn get(&self, h: u64) -> Option<&Obj> {
        // Null (index 0 - 1 = u32::MAX) is never a valid slot index: see `alloc`.
        let idx = (h as u32).wrapping_sub(1) as usize;
        let slot = self.slots.get(idx)?;
        if slot.generation != (h >> 32) as u32 {
            return None;
        }
        Some(&slot.obj)
    }

    /// The length of the buffer `h` designated if it has been dropped (and its slot not
    /// released again since).
    pub fn dropped_buffer_len(&self, h: u64) -> Option<u64> {
        let idx = (h as u32).wrapping_sub(1) as usize;
        let slot = self.slots.get(idx)?;
        let previous = slot.generation.wrapping_sub(1) == (h >> 32) as u32;
        (previous && slot.dropped_len != NO_LENGTH).then_some(slot.dropped_len)
    }

    /// Mutable access to the object `h` designates (see [`Heap::get`]).
    #[inline(always)]
    pub fn get_mut(&mut self, h: u64) -> Option<&mut Obj> {
        let idx = (h as u32).wrapping_sub(1) as usize;
        let slot = self.slots.get_mut(idx)?;
        if slot.generation != (h >> 32) as u32 {
            return None;
        }
        Some(&mut slot.obj)
    }

    /// The text of string `h`, or `None` if `h` is not a live string.
    pub fn str(&self, h: u64) -> Option<&str> {
        match self.get(h) {
            Some(Obj::Str(s)) => Some(s),
            _ => None,
        }
    }

    /// Releases the array, instance, buffer or created stream `h` (the `drop` instruction);
    /// a buffer's storage goes with it (unless it is a view), a created stream is destroyed.
    /// Null, stale handles, strings (outside ownership) and the default stream are left
    /// alone. Returns whether something was released.
    ///
    /// An array also releases what its elements own (LANGUAGE §6.5), last index first, an
    /// owned array's elements before its next sibling. The compiler runs the destructors of
    /// owned class elements first (`aown.take`), so what remains here needs no user code.
    pub fn release(&mut self, h: u64) -> bool {
        match self.get(h) {
            Some(obj) if obj.is_owned_kind() => {}
            _ => return false,
        }
        let mut work = vec![];
        let mut next = Some(h);
        while let Some(h) = next {
            if let Some(obj) = self.get(h).filter(|o| o.is_owned_kind()) {
                let owns_elements = matches!(obj, Obj::Array(_));
                let idx = (h as u32).wrapping_sub(1) as usize;
                if owns_elements {
                    work.extend(self.take_owned(idx));
                }
                self.free_slot(idx);
            }
            next = work.pop();
        }
        true
    }

    /// The handles slot `idx`'s array elements own, in index order, their flags cleared.
    fn take_owned(&mut self, idx: usize) -> Vec<u64> {
        let slot = &mut self.slots[idx];
        let owns = std::mem::take(&mut slot.owns);
        let Obj::Array(Array {
            data: ArrData::Ref(cells),
            ..
        }) = &slot.obj
        else {
            return vec![];
        };
        cells
            .iter()
            .enumerate()
            .filter(|&(i, _)| owns.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 != 0))
            .map(|(_, &c)| c)
            .collect()
    }

    /// The slot of `h` if it is a live array of references, with its length.
    fn ref_array_slot(&mut self, h: u64) -> Option<(&mut Slot, usize)> {
        let idx = (h as u32).wrapping_sub(1) as usize;
        let slot = self.slots.get_mut(idx)?;
        match &slot.obj {
            Obj::Array(Array {
                data: ArrData::Ref(cells),
                ..
            }) if slot.generation == (h >> 32) as u32 => {
                let len = cells.len();
                Some((slot, len))
            }
            _ => None,
        }
    }

    /// The owns-flag of element `i` of the array of references `h` (`aown.get`).
    ///
    /// # Errors
    ///
    /// [`ElemError::BadRef`] if `h` is not a live array of references, [`ElemError::Bounds`]
    /// if `i` (read as unsigned) is not an index of it.
    pub fn elem_owns(&mut self, h: u64, i: u64) -> Result<bool, ElemError> {
        let (slot, len) = self.ref_array_slot(h).ok_or(ElemError::BadRef)?;
        if i >= len as u64 {
            return Err(ElemError::Bounds { len });
        }
        let i = i as usize;
        Ok(slot
            .owns
            .get(i / 64)
            .is_some_and(|w| w >> (i % 64) & 1 != 0))
    }

    /// Sets the owns-flag of element `i` of the array of references `h` (`aown.set`).
    ///
    /// # Errors
    ///
    /// As [`Heap::elem_owns`].
    pub fn set_elem_owns(&mut self, h: u64, i: u64, owns: bool) -> Result<(), ElemError> {
        let (slot, len) = self.ref_array_slot(h).ok_or(ElemError::BadRef)?;
        if i >= len as u64 {
            return Err(ElemError::Bounds { len });
        }
        let (word, bit) = (i as usize / 64, i % 64);
        if owns {
            if slot.owns.len() <= word {
                slot.owns.resize(word + 1, 0);
            }
            slot.owns[word] |= 1 << bit;
        } else if let Some(w) = slot.owns.get_mut(word) {
            *w &= !(1 << bit);
            trim(&mut slot.owns);
        }
        Ok(())
    }

    /// The owning element of highest index of the array of references `h`, its flag cleared
    /// (`aown.take`: the caller takes the title); null when no element owns, or `h` is not a
    /// live array of references. Amortised O(1) per element: trailing zero words are trimmed.
    pub fn take_owned_elem(&mut self, h: u64) -> u64 {
        let Some((slot, _)) = self.ref_array_slot(h) else {
            return NULL;
        };
        let Some(&w) = slot.owns.last() else {
            return NULL;
        };
        let word = slot.owns.len() - 1;
        let bit = 63 - w.leading_zeros() as usize;
        slot.owns[word] &= !(1 << bit);
        trim(&mut slot.owns);
        match &slot.obj {
            Obj::Array(Array {
                data: ArrData::Ref(cells),
                ..
            }) => cells.get(word * 64 + bit).copied().unwrap_or(NULL),
            _ => NULL,
        }
    }

    /// Frees slot `idx` (which must hold an object) and bumps its generation.
    fn free_slot(&mut self, idx: usize) {
        let slot = &mut self.slots[idx];
        slot.owns = Vec::new();
        let obj = std::mem::replace(&mut slot.obj, Obj::Free);
        self.host_bytes -= obj_bytes(&obj);
        match obj {
            Obj::Free => return,
            Obj::Str(_) => self.live_strings -= 1,
            _ => self.live_objects -= 1,
        }
        slot.dropped_len = match &obj {
            Obj::Buffer(b) => b.len,
            _ => NO_LENGTH,
        };
        slot.generation = slot.generation.wrapping_add(1);
        self.views[idx] = ObjectView::default();
        self.frees += 1;
        self.free.push(idx as u32);
    }

    /// Releases every array, instance, buffer and created stream allocated during top-level
    /// call `epoch` that is still live (used when a runtime error unwinds that call, LANGUAGE
    /// §6.4: buffers' storage goes too, so live device bytes return to their earlier level).
    /// What those arrays' elements own goes too, even if allocated earlier: the failed call
    /// held its title.
    pub fn release_epoch(&mut self, epoch: u32) {
        let mut owned = vec![];
        for idx in 0..self.slots.len() {
            let slot = &self.slots[idx];
            if slot.epoch == epoch && slot.obj.is_owned_kind() {
                owned.extend(self.take_owned(idx));
                self.free_slot(idx);
            }
        }
        for h in owned {
            self.release(h);
        }
    }

    /// True when enough strings, or bytes, were allocated since the last collection to run
    /// another: twice what was live after it.
    #[inline]
    pub fn wants_collection(&self) -> bool {
        self.live_strings >= self.gc_threshold || self.host_bytes >= self.gc_bytes
    }

    /// Runs a collection: `roots` is called with a [`Marker`] and must mark every string
    /// handle held outside the heap (registers, statics, the constant table). Strings held by
    /// live arrays and instances are marked here, using `class_str_fields[c]`, the indices of
    /// class `c`'s String-typed fields. Unmarked, unpinned strings are freed.
    pub fn collect(
        &mut self,
        class_str_fields: &[Box<[u32]>],
        roots: impl FnOnce(&mut Marker<'_>),
    ) {
        self.marks.clear();
        self.marks.resize(self.slots.len(), false);
        {
            let mut m = Marker {
                slots: &self.slots,
                marks: &mut self.marks,
            };
            roots(&mut m);
            // Strings referenced from objects: every live array and instance is a root, since
            // their lifetime is governed by ownership, not reachability.
            for slot in m.slots {
                match &slot.obj {
                    Obj::Array(Array {
                        elem: Elem::Str,
                        data: ArrData::Ref(v),
                    }) => {
                        for &h in v {
                            mark(m.slots, m.marks, h);
                        }
                    }
                    Obj::Instance(inst) => {
                        if let Some(fields) = class_str_fields.get(inst.class as usize) {
                            for &f in fields.iter() {
                                if let Some(&h) = inst.fields.get(f as usize) {
                                    mark(m.slots, m.marks, h);
                                }
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        for idx in self.pinned..self.slots.len() {
            if matches!(self.slots[idx].obj, Obj::Str(_)) && !self.marks[idx] {
                self.free_slot(idx);
            }
        }
        self.collections += 1;
        self.gc_threshold = (self.live_strings * 2).max(GC_MIN_THRESHOLD);
        self.gc_bytes = self.host_bytes.saturating_mul(2).max(GC_MIN_BYTES);
    }
}

/// Marks string handles during [`Heap::collect`].
pub struct Marker<'a> {
    slots: &'a [Slot],
    marks: &'a mut Vec<bool>,
}

impl Marker<'_> {
    /// Marks `h` if it designates a live string; any other value (null, numbers left in a
    /// register by an earlier use, stale handles) is ignored.
    #[inline]
    pub fn mark(&mut self, h: u64) {
        mark(self.slots, self.marks, h);
    }
}

fn mark(slots: &[Slot], marks: &mut [bool], h: u64) {
    let idx = (h as u32).wrapping_sub(1) as usize;
    if let Some(slot) = slots.get(idx) {
        if slot.generation == (h >> 32) as u32 && matches!(slot.obj, Obj::Str(_)) {
            marks[idx] = true;
        }
    }
}

/// The [`ObjectView`] of `obj` in a slot at `generation`: arrays of scalars (elements at
/// their natural width, as [`ArrData`] stores them) and instances (one cell per field); every
/// other object gets the empty view, so compiled code takes its hook. The addresses stay valid
/// while the object lives: array and field storage is never reallocated.
fn view_of(obj: &mut Obj, generation: u32) -> ObjectView {
    fn array<T>(v: &mut [T], s: Scalar, generation: u32) -> ObjectView {
        ObjectView {
            tag: ObjectView::tag(generation, ObjectView::array_kind(s)),
            data: v.as_mut_ptr() as u64,
            len: v.len() as u64,
        }
    }
    match obj {
        Obj::Array(Array { elem, data }) => {
            let Elem::Scalar(s) = *elem else {
                return ObjectView::default();
            };
            match data {
                ArrData::Bool(v) | ArrData::U8(v) => array(v, s, generation),
                ArrData::Char(v) | ArrData::U32(v) => array(v, s, generation),
                ArrData::I8(v) => array(v, s, generation),
                ArrData::I16(v) => array(v, s, generation),
                ArrData::U16(v) | ArrData::F16(v) | ArrData::BF16(v) => array(v, s, generation),
                ArrData::I32(v) => array(v, s, generation),
                ArrData::I64(v) => array(v, s, generation),
                ArrData::U64(v) => array(v, s, generation),
                ArrData::F32(v) => array(v, s, generation),
                ArrData::F64(v) => array(v, s, generation),
                ArrData::Ref(_) => ObjectView::default(),
            }
        }
        Obj::Instance(inst) => match ObjectView::instance_kind(inst.class) {
            Some(kind) => ObjectView {
                tag: ObjectView::tag(generation, kind),
                data: inst.fields.as_mut_ptr() as u64,
                len: inst.fields.len() as u64,
            },
            None => ObjectView::default(),
        },
        _ => ObjectView::default(),
    }
}

/// The handle of slot `idx` at generation `generation`.
#[inline]
fn handle(idx: usize, generation: u32) -> u64 {
    (idx as u64 + 1) | ((generation as u64) << 32)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The view entry of handle `h` (what compiled code reads).
    fn view(heap: &Heap, h: u64) -> ObjectView {
        // SAFETY: `object_views` points at the heap's live table, which nothing mutates while
        // `heap` is borrowed; the index is checked against its length.
        unsafe {
            let table = &*heap.object_views();
            let idx = (h as u32 - 1) as u64;
            assert!(idx < table.len);
            *table.ptr.add(idx as usize)
        }
    }

    #[test]
    fn object_views_follow_allocation_release_and_reuse() {
        let mut heap = Heap::new();
        let s = heap.alloc_str("text").unwrap();
        assert_eq!(
            view(&heap, s),
            ObjectView::default(),
            "strings take the hooks"
        );
        let a = heap
            .alloc(Obj::Array(Array {
                elem: Elem::Scalar(Scalar::F64),
                data: ArrData::zeroed(Elem::Scalar(Scalar::F64), 5).unwrap(),
            }))
            .unwrap();
        let v = view(&heap, a);
        assert_eq!(
            v.tag,
            ObjectView::tag(0, ObjectView::array_kind(Scalar::F64))
        );
        assert_eq!(v.len, 5);
        match heap.get(a) {
            Some(Obj::Array(Array {
                data: ArrData::F64(d),
                ..
            })) => assert_eq!(v.data, d.as_ptr() as u64),
            other => panic!("{other:?}"),
        }
        assert!(heap.release(a));
        assert_eq!(view(&heap, a).tag, 0, "a released slot has no view");
        // The slot is reused at the next generation by an instance.
        let o = heap
            .alloc(Obj::Instance(Instance {
                class: 3,
                fields: vec![1, 2].into_boxed_slice(),
            }))
            .unwrap();
        assert_eq!(o as u32, a as u32, "same slot");
        let v = view(&heap, o);
        assert_eq!(
            v.tag,
            ObjectView::tag(1, ObjectView::instance_kind(3).unwrap())
        );
        assert_eq!(v.len, 2);
        // Growing the table moves it; the boxed location follows.
        let many: Vec<u64> = (0..1000)
            .map(|i| heap.alloc_str(format!("{i}")).unwrap())
            .collect();
        assert_eq!(view(&heap, o).len, 2);
        assert_eq!(view(&heap, many[999]).tag, 0);
    }

    #[test]
    fn handles_go_stale_on_release() {
        let mut heap = Heap::new();
        let a = heap
            .alloc(Obj::Instance(Instance {
                class: 0,
                fields: vec![0; 2].into(),
            }))
            .unwrap();
        assert!(heap.get(a).is_some());
        assert!(heap.release(a));
        assert!(heap.get(a).is_none());
        assert!(!heap.release(a), "second release is a no-op");
        let b = heap
            .alloc(Obj::Instance(Instance {
                class: 0,
                fields: vec![0; 2].into(),
            }))
            .unwrap();
        assert_ne!(a, b, "reused slot has a new generation");
        assert_eq!(a as u32, b as u32, "same slot");
        assert!(heap.get(a).is_none());
        assert!(heap.get(NULL).is_none());
        assert_eq!(heap.stats().live_objects, 1);
    }

    #[test]
    fn strings_are_not_released_by_drop() {
        let mut heap = Heap::new();
        let s = heap.alloc_str("x").unwrap();
        assert!(!heap.release(s));
        assert_eq!(heap.str(s), Some("x"));
    }

    #[test]
    fn collector_frees_only_unmarked_unpinned_strings() {
        let mut heap = Heap::new();
        let k = heap.alloc_str("const").unwrap();
        heap.pin_all();
        let keep = heap.alloc_str("keep").unwrap();
        let lose = heap.alloc_str("lose").unwrap();
        let in_arr = heap.alloc_str("in array").unwrap();
        let arr = heap
            .alloc(Obj::Array(Array {
                elem: Elem::Str,
                data: ArrData::Ref(vec![in_arr, 12345]),
            }))
            .unwrap();
        heap.collect(&[], |m| {
            m.mark(keep);
            m.mark(0xdead_beef_0000_0001); // garbage: ignored
        });
        assert_eq!(heap.str(k), Some("const"));
        assert_eq!(heap.str(keep), Some("keep"));
        assert_eq!(heap.str(in_arr), Some("in array"));
        assert_eq!(heap.str(lose), None);
        assert!(heap.get(arr).is_some());
        assert_eq!(heap.stats().live_strings, 3);
    }

    #[test]
    fn zeroed_arrays() {
        let d = ArrData::zeroed(Elem::Scalar(Scalar::F32), 1 << 20).unwrap();
        match d {
            ArrData::F32(v) => assert!(v.len() == 1 << 20 && v.iter().all(|&x| x == 0.0)),
            _ => panic!("wrong storage"),
        }
        assert!(ArrData::zeroed(Elem::Scalar(Scalar::F64), usize::MAX / 4).is_none());
        assert_eq!(ArrData::zeroed(Elem::Str, 0).unwrap().len(), 0);
    }

    #[test]
    fn release_epoch_frees_that_calls_objects() {
        let mut heap = Heap::new();
        let old = heap
            .alloc(Obj::Instance(Instance {
                class: 0,
                fields: Box::new([]),
            }))
            .unwrap();
        let e = heap.next_epoch();
        let new = heap
            .alloc(Obj::Instance(Instance {
                class: 0,
                fields: Box::new([]),
            }))
            .unwrap();
        let s = heap.alloc_str("s").unwrap();
        heap.release_epoch(e);
        assert!(heap.get(old).is_some());
        assert!(heap.get(new).is_none());
        assert!(heap.get(s).is_some());
    }

    fn instance(heap: &mut Heap) -> u64 {
        heap.alloc(Obj::Instance(Instance {
            class: 0,
            fields: Box::new([]),
        }))
        .unwrap()
    }

    fn object_array(heap: &mut Heap, cells: Vec<u64>) -> u64 {
        heap.alloc(Obj::Array(Array {
            elem: Elem::Object(0),
            data: ArrData::Ref(cells),
        }))
        .unwrap()
    }

    #[test]
    fn owns_flags_are_per_element_and_checked() {
        let mut heap = Heap::new();
        let arr = object_array(&mut heap, vec![NULL; 130]);
        assert_eq!(heap.elem_owns(arr, 129), Ok(false));
        heap.set_elem_owns(arr, 129, true).unwrap();
        heap.set_elem_owns(arr, 3, true).unwrap();
        assert_eq!(heap.elem_owns(arr, 129), Ok(true));
        assert_eq!(heap.elem_owns(arr, 128), Ok(false));
        heap.set_elem_owns(arr, 129, false).unwrap();
        assert_eq!(heap.elem_owns(arr, 129), Ok(false));
        assert_eq!(heap.elem_owns(arr, 3), Ok(true));
        assert_eq!(
            heap.set_elem_owns(arr, 130, true),
            Err(ElemError::Bounds { len: 130 })
        );
        assert_eq!(
            heap.elem_owns(arr, u64::MAX),
            Err(ElemError::Bounds { len: 130 })
        );
        assert_eq!(heap.elem_owns(NULL, 0), Err(ElemError::BadRef));
        let ints = heap
            .alloc(Obj::Array(Array {
                elem: Elem::Scalar(Scalar::I32),
                data: ArrData::zeroed(Elem::Scalar(Scalar::I32), 4).unwrap(),
            }))
            .unwrap();
        assert_eq!(heap.elem_owns(ints, 0), Err(ElemError::BadRef));
        assert_eq!(heap.take_owned_elem(ints), NULL);
        // A released array's handle is stale: its flags are gone with it.
        heap.release(arr);
        assert_eq!(heap.elem_owns(arr, 3), Err(ElemError::BadRef));
    }

    #[test]
    fn take_returns_owning_elements_last_index_first() {
        let mut heap = Heap::new();
        let (a, b, c) = (
            instance(&mut heap),
            instance(&mut heap),
            instance(&mut heap),
        );
        let mut cells = vec![NULL; 70];
        (cells[0], cells[5], cells[69]) = (a, b, c);
        let arr = object_array(&mut heap, cells);
        for i in [0, 69] {
            heap.set_elem_owns(arr, i, true).unwrap();
        }
        // Element 5 borrows.
        assert_eq!(heap.take_owned_elem(arr), c);
        assert_eq!(heap.elem_owns(arr, 69), Ok(false));
        assert_eq!(heap.take_owned_elem(arr), a);
        assert_eq!(heap.take_owned_elem(arr), NULL);
        assert_eq!(heap.take_owned_elem(NULL), NULL);
    }

    #[test]
    fn releasing_an_array_releases_what_its_elements_own() {
        let mut heap = Heap::new();
        let (owned, lent, deep) = (
            instance(&mut heap),
            instance(&mut heap),
            instance(&mut heap),
        );
        let inner = object_array(&mut heap, vec![deep]);
        heap.set_elem_owns(inner, 0, true).unwrap();
        let outer = heap
            .alloc(Obj::Array(Array {
                elem: Elem::Str,
                data: ArrData::Ref(vec![inner]),
            }))
            .unwrap();
        heap.set_elem_owns(outer, 0, true).unwrap();
        let arr = object_array(&mut heap, vec![owned, lent, outer]);
        heap.set_elem_owns(arr, 0, true).unwrap();
        heap.set_elem_owns(arr, 2, true).unwrap();
        let live = heap.stats().live_objects;
        assert!(heap.release(arr));
        assert!(heap.get(owned).is_none() && heap.get(outer).is_none());
        assert!(heap.get(inner).is_none() && heap.get(deep).is_none());
        assert!(heap.get(lent).is_some());
        assert_eq!(heap.stats().live_objects, live - 5);
        // A reused slot starts without flags.
        let fresh = object_array(&mut heap, vec![NULL]);
        assert_eq!(heap.elem_owns(fresh, 0), Ok(false));
    }

    #[test]
    fn release_tree_and_failed_calls_follow_owning_elements() {
        let mut heap = Heap::new();
        let before = instance(&mut heap);
        let e = heap.next_epoch();
        let arr = object_array(&mut heap, vec![before]);
        heap.set_elem_owns(arr, 0, true).unwrap();
        heap.release_epoch(e);
        assert!(heap.get(arr).is_none() && heap.get(before).is_none());
        let (owned, lent) = (instance(&mut heap), instance(&mut heap));
        let arr = object_array(&mut heap, vec![owned, lent]);
        heap.set_elem_owns(arr, 0, true).unwrap();
        heap.release_tree(arr, &[]);
        assert!(heap.get(owned).is_none());
        assert!(heap.get(lent).is_some());
    }
}
