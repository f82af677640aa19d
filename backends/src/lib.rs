//! Device backends: the [`Backend`] trait that the VM talks to, and its implementations:
//! [`cpu`] (runs everywhere), [`vulkan`] (SPIR-V through ash) and [`cuda`] (PTX through cudarc).
//! The GPU backends load their driver libraries at run time, so this crate builds and its CPU
//! backend runs on machines without them; `open` then reports why the backend is unavailable.
//!
//! A backend never sees source code: it receives verified kernel bytecode (a
//! [`cajeta_bytecode::Module`] and a kernel function index) and plain data — storage handles,
//! canonical scalar cells, launch geometry. The VM owns the Cajeta-level objects (buffers with
//! their length, kind, view offsets and freed state) and maps them onto backend storage.
//!
//! Architecture invariants:
//! - `backends` depends only on `bytecode` (and later `jit`); the VM depends on it, never the
//!   reverse.
//! - Storage is zero-filled on allocation (or `0xFF` with poisoning) and accounted exactly:
//!   [`MemStats`] is the truth `--mem-stats` prints.
//! - A launch keeps every storage it uses alive until it completes, whatever the VM releases
//!   meanwhile (XPU §4.3): [`Backend::release`] only drops the VM's reference.

#![deny(missing_docs)]

pub mod cpu;
pub mod cuda;
pub mod devmath;
pub mod vulkan;

/// A faulting index as XPU-E-BOUNDS prints it: the bits as a signed number, or unsigned when
/// the program's index was a uint64 ([`cajeta_bytecode::Function::index_holds_u64`]), as the
/// host's `E-BOUNDS` does.
pub(crate) fn index_text(bits: i64, unsigned: bool) -> String {
    if unsigned {
        (bits as u64).to_string()
    } else {
        bits.to_string()
    }
}

use cajeta_bytecode::Module;
use std::sync::Arc;

/// Memory kinds (XPU §2.9), by ordinal.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
#[repr(u8)]
pub enum MemoryKind {
    /// Device-local memory.
    Device = 0,
    /// Page-locked host memory.
    Pinned = 1,
    /// Managed memory.
    Unified = 2,
}

impl MemoryKind {
    /// The kind with this ordinal.
    pub fn from_ordinal(k: i64) -> Option<MemoryKind> {
        match k {
            0 => Some(MemoryKind::Device),
            1 => Some(MemoryKind::Pinned),
            2 => Some(MemoryKind::Unified),
            _ => None,
        }
    }

    /// The constant's name.
    pub fn name(self) -> &'static str {
        match self {
            MemoryKind::Device => "Device",
            MemoryKind::Pinned => "Pinned",
            MemoryKind::Unified => "Unified",
        }
    }
}

/// A kernel a code generator (PTX, SPIR-V) cannot lower, and why.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct LowerError {
    /// The kernel's qualified name.
    pub kernel: String,
    /// What is not supported, in words.
    pub message: String,
}

impl std::fmt::Display for LowerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot lower kernel {}: {}", self.kernel, self.message)
    }
}

impl std::error::Error for LowerError {}

/// A backend's storage handle. Unique for the backend's lifetime (never reused).
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct StorageId(pub u64);

/// A backend stream handle. `StreamId(0)` is the default stream.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct StreamId(pub u64);

impl StreamId {
    /// The default stream (`KernelStream.current()`).
    pub const DEFAULT: StreamId = StreamId(0);
}

/// A backend's handle for one recording of an `Event` (XPU §2.3): the point in a stream's
/// work that `Event.recordOn` marked. Released with [`Backend::event_release`].
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct EventId(pub u64);

impl EventId {
    /// A recording that is signalled already and holds nothing (what backends whose work is
    /// complete when its call returns record).
    pub const SIGNALLED: EventId = EventId(0);
}

/// What a backend can do (DESIGN §5).
#[derive(Clone, Debug)]
pub struct Capabilities {
    /// `cpu`, `vulkan` or `cuda`.
    pub name: &'static str,
    /// Default wave width `W`.
    pub wave_width: u32,
    /// Maximum items per workgroup.
    pub max_items: u32,
    /// Maximum block size per axis.
    pub max_block: [u32; 3],
    /// Maximum grid size per axis.
    pub max_grid: [u32; 3],
    /// Maximum shared bytes per workgroup.
    pub max_shared_bytes: u64,
    /// Whether `Device` memory is host-accessible (integrated GPU, CPU driver, `cpu`).
    pub device_memory_host_accessible: bool,
    /// 64-bit atomics.
    pub atomics_64: bool,
    /// float64 arithmetic in kernels.
    pub f64: bool,
}

/// Exact device memory accounting.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Default)]
pub struct MemStats {
    /// Bytes currently allocated.
    pub live: u64,
    /// Highest `live` so far.
    pub peak: u64,
    /// Allocations so far.
    pub allocs: u64,
    /// Releases so far.
    pub frees: u64,
}

/// An error of a backend operation (not a kernel fault), with its runtime code
/// (`XPU-E-OOM`, `XPU-E-LAUNCH`, …) and the spec's message.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct XpuError {
    /// The runtime error code.
    pub code: &'static str,
    /// The message.
    pub message: String,
}

/// A fault raised by kernel code (XPU §7.3): code, message (already naming kernel, workgroup and
/// item) and the device frames, innermost first, as `(function index, pc)`.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct KernelFault {
    /// `XPU-E-BOUNDS`, `XPU-E-DIVERGENT`, `E-DIVZERO`, `E-OVERFLOW`.
    pub code: &'static str,
    /// The full message.
    pub message: String,
    /// Device frames, innermost first.
    pub frames: Vec<(u32, u32)>,
}

/// One kernel argument, in the order of the kernel function's parameters.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum KernelArg {
    /// A scalar parameter: its canonical cell (see `bytecode::types`).
    Scalar(u64),
    /// A buffer parameter: `len` elements starting `offset` elements into `storage` (views).
    Buffer {
        /// The storage.
        storage: StorageId,
        /// Offset in elements (non-zero for views).
        offset: u64,
        /// Length in elements.
        len: u64,
    },
}

/// Launch geometry (already validated against the backend's limits by the caller).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct Dims {
    /// Workgroups per axis.
    pub grid: [u32; 3],
    /// Items per workgroup per axis.
    pub block: [u32; 3],
    /// Dynamic shared bytes (`sharedBytes:`).
    pub shared_bytes: u64,
}

/// Result of a launch: a refusal or a fault.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum LaunchError {
    /// The launch was refused (`XPU-E-LAUNCH`) or a buffer was unusable.
    Refused(XpuError),
    /// The kernel faulted.
    Fault(KernelFault),
}

/// A device backend. Implementations are internally synchronised (`&self` everywhere) so the
/// VM can share one per process.
pub trait Backend: Send + Sync {
    /// What it can do.
    fn capabilities(&self) -> &Capabilities;

    /// Allocates `bytes` bytes of `kind` memory, zero-filled (all `0xFF` if `poison`).
    ///
    /// # Errors
    /// `XPU-E-OOM` when the memory cannot be had.
    fn alloc(&self, bytes: u64, kind: MemoryKind, poison: bool) -> Result<StorageId, XpuError>;

    /// Drops the VM's reference: the memory is released once no in-flight work uses it.
    fn release(&self, id: StorageId);

    /// Blocking copy of `data` into the storage at byte `offset` (waits for earlier work on it).
    fn write(&self, id: StorageId, offset: u64, data: &[u8]);

    /// Blocking copy from the storage at byte `offset` into `out` (waits for earlier work on it).
    fn read(&self, id: StorageId, offset: u64, out: &mut [u8]);

    /// The fault a blocking transfer (`read`/`write`, a synchronisation point, XPU §7.3) has
    /// to report: the pending fault of the work it waited for. The default suits backends
    /// that report faults at the launch (`cpu`).
    ///
    /// # Errors
    /// The pending kernel fault (asynchronous backends).
    fn transfer_fault(&self) -> Result<(), KernelFault> {
        Ok(())
    }

    /// Whether the host can access the storage directly (`hostStore`/`hostLoad`).
    fn host_accessible(&self, id: StorageId) -> bool;

    /// Runs (or queues) kernel `kernel` of `module` on `stream`.
    ///
    /// # Errors
    /// A refusal or, on backends that complete launches synchronously (`cpu`), the kernel's
    /// first fault.
    fn launch(
        &self,
        module: &Arc<Module>,
        kernel: u32,
        dims: Dims,
        args: &[KernelArg],
        stream: StreamId,
    ) -> Result<(), LaunchError>;

    /// A new stream.
    fn stream_create(&self) -> StreamId;

    /// Waits for the stream's work (the default stream: all work).
    ///
    /// # Errors
    /// A pending kernel fault (asynchronous backends).
    fn stream_sync(&self, stream: StreamId) -> Result<(), KernelFault>;

    /// Waits for the stream's work (the default stream: all work) without reporting: a fault
    /// stays pending for the next synchronisation point (XPU §7.3), which a `KernelTimer`
    /// mark is not. The default suits backends whose work is complete, and whose faults are
    /// raised, when its call returns (`cpu`).
    fn stream_wait(&self, stream: StreamId) {
        let _ = stream;
    }

    /// Waits for and destroys a stream.
    fn stream_destroy(&self, stream: StreamId);

    /// Memory statistics.
    fn mem_stats(&self) -> MemStats;

    /// Records an event on `stream` (`Event.recordOn`): it is signalled once all work
    /// submitted to `stream` before this call completes (XPU §2.3).
    ///
    /// The default suits backends whose work is complete when its call returns (`cpu`): the
    /// event is signalled at once.
    fn event_record(&self, stream: StreamId) -> EventId {
        let _ = stream;
        EventId::SIGNALLED
    }

    /// Blocks until `event` is signalled (`Event.waitHost`, a synchronisation point).
    ///
    /// # Errors
    /// A pending kernel fault of the work the event covers (asynchronous backends, XPU §7.3).
    fn event_wait(&self, event: EventId) -> Result<(), KernelFault> {
        let _ = event;
        Ok(())
    }

    /// Whether `event` is signalled (`Event.query`); never waits for the work, never reports
    /// a fault.
    fn event_query(&self, event: EventId) -> bool {
        let _ = event;
        true
    }

    /// Makes later work on `stream` wait until `event` is signalled (`stream.waitFor`). The
    /// default does nothing, which is correct for backends that complete work before
    /// returning or run every stream in one queue in submission order.
    fn stream_wait_event(&self, stream: StreamId, event: EventId) {
        let _ = (stream, event);
    }

    /// Releases the recording (`Event.destroy`, a drop, or a new `recordOn`); work that
    /// waits for it is not affected.
    fn event_release(&self, event: EventId) {
        let _ = event;
    }

    /// Whether a kernel may run with wave width `w` (`@Wave(width = w)`, XPU §8.2); by
    /// default only the backend's own width. The VM refuses the launch otherwise.
    fn supports_wave_width(&self, w: u32) -> bool {
        w == self.capabilities().wave_width
    }

    /// Device memory in bytes (`Device.memoryBytes()`, XPU §2.10); 0 if unknown.
    fn memory_bytes(&self) -> i64 {
        0
    }

    /// Compute units (`Device.multiprocessorCount()`; `cpu`: workers); 0 if unknown.
    fn compute_units(&self) -> i32 {
        0
    }

    /// Native support of `Capability` ordinal `cap` (`Device.supports`, XPU §2.9–§2.10):
    /// by default only `AtomicInt64` (ordinal 3), when [`Capabilities::atomics_64`] holds.
    fn supports(&self, cap: i32) -> bool {
        cap == 3 && self.capabilities().atomics_64
    }

    /// A hint when the backend becomes a program's backend: the kernels of `module` may be
    /// launched. A backend may prepare them ahead (the `cpu` backend compiles them on a
    /// thread of their own while the host code runs); by default nothing.
    fn prepare(&self, module: &Arc<Module>) {
        let _ = module;
    }

    /// Whether this backend can run kernel `kernel` of `module` (`Device.kernelAvailable`).
    fn kernel_available(&self, module: &Arc<Module>, kernel: u32) -> bool {
        let _ = (module, kernel);
        true
    }

    /// Sets the cap on worker threads (`Device.setCpuWorkerCap`, 0 = one per core); only
    /// the `cpu` backend has workers.
    fn set_worker_cap(&self, cap: usize) {
        let _ = cap;
    }

    /// The worker cap (`Device.cpuWorkerCap()`); 0 on backends without workers.
    fn worker_cap(&self) -> usize {
        0
    }
}
