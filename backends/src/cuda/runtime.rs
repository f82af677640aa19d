//! The CUDA runtime: [`CudaBackend`] implements [`Backend`] with the CUDA driver API through
//! cudarc's thin `result` layer (raw handles, explicit lifetimes), on device 0's primary context.
//!
//! * **Memory.** `Device` storage is `cuMemAlloc`, `Pinned` is `cuMemHostAlloc` (portable,
//!   device-mapped; kernels use its device alias), `Unified` is `cuMemAllocManaged`. Every
//!   allocation is filled with `0x00` (or `0xFF` when poisoned) before it is handed out; empty
//!   storage has no allocation at all. Accounting counts requested bytes and is exact.
//! * **Streams.** Every stream, the default one included, is a real non-blocking CUDA stream;
//!   syncing the default stream syncs them all (XPU §2.2).
//! * **Launches.** Kernels are lowered by [`super::ptx`] for the device's architecture (or
//!   `CAJETA_CUDA_ARCH`), loaded with `cuModuleLoadData` and cached per (module, kernel) and by
//!   the PTX text's hash. Each launch gets a zeroed 64-byte fault record and holds its storages
//!   until the stream is synchronised, so a released buffer outlives the launches using it
//!   (XPU §4.3). Faults are decoded at `stream_sync` (XPU §7.3).
//! * **Blocking copies** wait for the whole context first (earlier launches on any stream).
//!
//! Every driver call happens with the context made current on the calling thread.

use super::abi::{self, BoundStorage, Limits, PackError};
use super::ptx::{self, Lowered, FAULT_RECORD_BYTES, WAVE_WIDTH};
use crate::{
    Backend, Capabilities, Dims, EventId, KernelArg, KernelFault, LaunchError, MemStats,
    MemoryKind, StorageId, StreamId, XpuError,
};
use cajeta_bytecode::Module;
use cudarc::driver::{result, sys};
use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::ffi::{c_void, CString};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// Shared bytes a kernel may use without opting in (`cuFuncSetAttribute`).
const DEFAULT_SHARED_LIMIT: u64 = 48 << 10;

/// Locks a mutex, ignoring poisoning (the protected maps stay consistent: every update is a
/// single insert or remove).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A driver error in words (`CUDA_ERROR_OUT_OF_MEMORY, out of memory`).
fn driver_msg(e: result::DriverError) -> String {
    let name = e.error_name().map_or_else(
        |_| format!("{:?}", e.0),
        |n| n.to_string_lossy().into_owned(),
    );
    let text = e
        .error_string()
        .map_or_else(|_| String::new(), |s| s.to_string_lossy().into_owned());
    format!("{name}: {text}")
}

/// Device 0's retained primary context.
struct Ctx {
    ctx: sys::CUcontext,
    dev: sys::CUdevice,
}

// SAFETY: a CUDA context handle is a process-wide object that any thread may make current
// (`cuCtxSetCurrent`); the driver synchronises its own state. The handle is never freed before
// the last `Arc<Ctx>` drops.
unsafe impl Send for Ctx {}
// SAFETY: as above; `Ctx` has no interior mutability of its own.
unsafe impl Sync for Ctx {}

impl Ctx {
    /// Makes the context current on this thread.
    fn enter(&self) -> Result<(), String> {
        // SAFETY: `self.ctx` is the retained primary context, valid until `Drop`.
        unsafe { result::ctx::set_current(self.ctx) }.map_err(driver_msg)
    }
}

impl Drop for Ctx {
    fn drop(&mut self) {
        // SAFETY: the context was retained once in `CudaBackend::new` for this device.
        let _ = unsafe { result::primary_ctx::release(self.dev) };
    }
}

/// Exact memory accounting.
#[derive(Default)]
struct Accounting(Mutex<MemStats>);

impl Accounting {
    fn add(&self, bytes: u64) {
        let mut s = lock(&self.0);
        s.live += bytes;
        s.peak = s.peak.max(s.live);
        s.allocs += 1;
    }

    fn sub(&self, bytes: u64) {
        let mut s = lock(&self.0);
        s.live = s.live.saturating_sub(bytes);
        s.frees += 1;
    }
}

/// One allocation. Freed (and un-accounted) when the last reference drops: the VM's, or that
/// of the last launch using it.
struct Storage {
    ctx: Arc<Ctx>,
    acct: Arc<Accounting>,
    /// Device address (for `Pinned`: the device alias); 0 for empty storage.
    address: u64,
    /// Host pointer of `Pinned` storage (null otherwise).
    host: *mut c_void,
    bytes: u64,
    kind: MemoryKind,
    /// `bytes` was added to the accounting (undone in `Drop`).
    accounted: bool,
}

// SAFETY: the pointers are driver allocations owned by this value and released only in `Drop`;
// the driver allows using them from any thread with the context current.
unsafe impl Send for Storage {}
// SAFETY: as above; the value is never mutated after construction.
unsafe impl Sync for Storage {}

impl Storage {
    /// Allocates `bytes` of `kind` memory filled with `fill`.
    fn new(
        ctx: &Arc<Ctx>,
        acct: &Arc<Accounting>,
        bytes: u64,
        kind: MemoryKind,
        fill: u8,
    ) -> Result<Storage, String> {
        let n = usize::try_from(bytes).map_err(|_| "size exceeds the address space")?;
        let mut s = Storage {
            ctx: ctx.clone(),
            acct: acct.clone(),
            address: 0,
            host: std::ptr::null_mut(),
            bytes: 0,
            kind,
            accounted: false,
        };
        if n == 0 {
            acct.add(0);
            s.accounted = true;
            return Ok(s);
        }
        // SAFETY: plain allocation calls with the context current; each result is stored in
        // `s` at once so `Drop` frees it on any later failure.
        unsafe {
            match kind {
                MemoryKind::Device => s.address = result::malloc_sync(n).map_err(driver_msg)?,
                MemoryKind::Unified => {
                    s.address =
                        result::malloc_managed(n, sys::CUmemAttach_flags::CU_MEM_ATTACH_GLOBAL)
                            .map_err(driver_msg)?;
                }
                MemoryKind::Pinned => {
                    s.host = result::malloc_host(
                        n,
                        sys::CU_MEMHOSTALLOC_PORTABLE | sys::CU_MEMHOSTALLOC_DEVICEMAP,
                    )
                    .map_err(driver_msg)?;
                    let mut d: sys::CUdeviceptr = 0;
                    sys::cuMemHostGetDevicePointer_v2(&mut d, s.host, 0)
                        .result()
                        .map_err(driver_msg)?;
                    s.address = d;
                }
            }
        }
        s.bytes = bytes;
        acct.add(bytes);
        s.accounted = true;
        // SAFETY: `s.address` is a live allocation of `n` bytes (device alias for pinned).
        unsafe { result::memset_d8_sync(s.address, fill, n) }.map_err(driver_msg)?;
        Ok(s)
    }
}

impl Drop for Storage {
    fn drop(&mut self) {
        let _ = self.ctx.enter();
        // SAFETY: the allocations were made by `Storage::new` and are freed exactly once, here;
        // no launch uses them anymore (launches hold a reference until they complete).
        unsafe {
            if !self.host.is_null() {
                let _ = result::free_host(self.host);
            } else if self.address != 0 {
                let _ = result::free_sync(self.address);
            }
        }
        if self.accounted {
            self.acct.sub(self.bytes);
        }
    }
}

/// A loaded PTX module and its kernel function.
struct Loaded {
    ctx: Arc<Ctx>,
    module: sys::CUmodule,
    func: sys::CUfunction,
    /// The PTX it was loaded from (the text cache compares it).
    text: String,
}

/// A kernel of one bytecode module: the loaded code (shared by identical kernels of other
/// modules) and this module's lowering (its fault sites name this module's functions).
struct Kernel {
    loaded: Arc<Loaded>,
    lowered: Lowered,
}

// SAFETY: module and function handles belong to the context and may be used from any thread
// with it current; the module is unloaded only in `Drop`.
unsafe impl Send for Loaded {}
// SAFETY: as above; never mutated.
unsafe impl Sync for Loaded {}

impl Drop for Loaded {
    fn drop(&mut self) {
        let _ = self.ctx.enter();
        // SAFETY: loaded once in `CudaBackend::load`, unloaded once here after every launch
        // using it was synchronised (pending launches hold an `Arc<Loaded>`).
        let _ = unsafe { result::module::unload(self.module) };
    }
}

/// A launch not yet synchronised.
struct Pending {
    /// Device address of its fault record.
    record: u64,
    kernel: Arc<Kernel>,
    /// The kernel's simple name.
    name: String,
    /// Storages it uses, kept alive until it completes.
    _holds: Vec<Arc<Storage>>,
}

/// A stream and its unsynchronised launches.
struct Stream {
    raw: sys::CUstream,
    pending: Vec<Pending>,
}

// SAFETY: stream handles may be used from any thread with the context current; the stream is
// destroyed only by `stream_destroy` or `Drop` after removal from the map.
unsafe impl Send for Stream {}

/// A recorded `Event` (XPU §2.3): a CUDA event recorded on stream `stream`.
#[derive(Copy, Clone)]
struct Recording {
    raw: sys::CUevent,
    stream: u64,
}

// SAFETY: event handles may be used from any thread with the context current; the event is
// destroyed only by `event_release` or `Drop` after removal from the map.
unsafe impl Send for Recording {}

/// The kernel cache keyed by (module address, kernel index); the entry holds the module so the
/// address stays unique.
type ModuleCache = HashMap<(usize, u32), (Arc<Module>, Arc<Kernel>)>;

/// The `cuda` backend.
pub struct CudaBackend {
    caps: Capabilities,
    limits: Limits,
    /// The PTX target.
    arch: String,
    integrated: bool,
    acct: Arc<Accounting>,
    storages: Mutex<HashMap<u64, Arc<Storage>>>,
    next_storage: AtomicU64,
    streams: Mutex<HashMap<u64, Stream>>,
    next_stream: AtomicU64,
    /// Recorded events by [`EventId`] (never 0, which is [`EventId::SIGNALLED`]).
    events: Mutex<HashMap<u64, Recording>>,
    next_event: AtomicU64,
    /// (module address, kernel) → loaded kernel; holds the module so the address stays unique.
    by_module: Mutex<ModuleCache>,
    /// PTX text hash → loaded kernel (identical kernels of different modules share one).
    by_text: Mutex<HashMap<u64, Arc<Loaded>>>,
    /// Free fault records.
    records: Mutex<Vec<u64>>,
    /// Declared last: dropped after everything that uses it.
    ctx: Arc<Ctx>,
}

impl std::fmt::Debug for CudaBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaBackend")
            .field("arch", &self.arch)
            .field("caps", &self.caps)
            .finish_non_exhaustive()
    }
}

/// A device attribute (0 if the driver does not know it).
fn attr(dev: sys::CUdevice, a: sys::CUdevice_attribute) -> u32 {
    // SAFETY: `dev` was returned by `cuDeviceGet`.
    let v = unsafe { result::device::get_attribute(dev, a) }.unwrap_or(0);
    u32::try_from(v).unwrap_or(0)
}

impl CudaBackend {
    /// Opens device 0 (the driver library must be loadable; see [`super::open`]).
    ///
    /// # Errors
    /// Why the backend is unavailable: the driver fails to initialise, there is no device, its
    /// compute capability is below 7.0, or the context cannot be had.
    pub fn new() -> Result<CudaBackend, String> {
        use sys::CUdevice_attribute as A;
        result::init().map_err(|e| format!("cuInit failed ({})", driver_msg(e)))?;
        let count = result::device::get_count().map_err(driver_msg)?;
        if count < 1 {
            return Err("no CUDA device".into());
        }
        let dev = result::device::get(0).map_err(driver_msg)?;
        let (major, minor) = (
            attr(dev, A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
            attr(dev, A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR),
        );
        if major < 7 {
            return Err(format!(
                "device 0 has compute capability {major}.{minor} (7.0 or newer needed)"
            ));
        }
        // SAFETY: `dev` is a valid device; the retain is balanced by `Ctx::drop`.
        let raw = unsafe { result::primary_ctx::retain(dev) }.map_err(driver_msg)?;
        let ctx = Arc::new(Ctx { ctx: raw, dev });
        ctx.enter()?;
        let arch = std::env::var("CAJETA_CUDA_ARCH")
            .ok()
            .filter(|a| ptx::arch_number(a).is_some())
            .unwrap_or_else(|| format!("sm_{major}{minor}"));
        let limits = Limits {
            max_items: attr(dev, A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK),
            max_block: [
                attr(dev, A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X),
                attr(dev, A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y),
                attr(dev, A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z),
            ],
            max_grid: [
                attr(dev, A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X),
                attr(dev, A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y),
                attr(dev, A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z),
            ],
            max_shared: u64::from(
                attr(
                    dev,
                    A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                )
                .max(attr(
                    dev,
                    A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
                )),
            ),
        };
        let integrated = attr(dev, A::CU_DEVICE_ATTRIBUTE_INTEGRATED) != 0;
        let default =
            result::stream::create(result::stream::StreamKind::NonBlocking).map_err(driver_msg)?;
        let mut streams = HashMap::new();
        streams.insert(
            0,
            Stream {
                raw: default,
                pending: vec![],
            },
        );
        Ok(CudaBackend {
            caps: Capabilities {
                name: "cuda",
                wave_width: WAVE_WIDTH,
                max_items: limits.max_items,
                max_block: limits.max_block,
                max_grid: limits.max_grid,
                max_shared_bytes: limits.max_shared,
                device_memory_host_accessible: integrated,
                atomics_64: true,
                f64: true,
            },
            limits,
            arch,
            integrated,
            acct: Arc::new(Accounting::default()),
            storages: Mutex::new(HashMap::new()),
            next_storage: AtomicU64::new(1),
            streams: Mutex::new(streams),
            next_stream: AtomicU64::new(1),
            events: Mutex::new(HashMap::new()),
            next_event: AtomicU64::new(1),
            by_module: Mutex::new(HashMap::new()),
            by_text: Mutex::new(HashMap::new()),
            records: Mutex::new(vec![]),
            ctx,
        })
    }

    /// The PTX target kernels are lowered for.
    pub fn arch(&self) -> &str {
        &self.arch
    }

    fn storage(&self, id: StorageId) -> Option<Arc<Storage>> {
        lock(&self.storages).get(&id.0).cloned()
    }

    /// The loaded kernel `kernel` of `module`, lowering and loading it on first use.
    fn load(&self, module: &Arc<Module>, kernel: u32) -> Result<Arc<Kernel>, String> {
        let key = (Arc::as_ptr(module) as usize, kernel);
        if let Some((_, l)) = lock(&self.by_module).get(&key) {
            return Ok(l.clone());
        }
        let lowered = ptx::lower(module, kernel, &self.arch).map_err(|e| e.message)?;
        let mut h = DefaultHasher::new();
        lowered.text.hash(&mut h);
        let hash = h.finish();
        let cached = lock(&self.by_text)
            .get(&hash)
            .filter(|l| l.text == lowered.text)
            .cloned();
        let loaded = match cached {
            Some(l) => l,
            None => {
                let text = CString::new(lowered.text.as_str()).map_err(|e| e.to_string())?;
                let entry = CString::new(lowered.entry.as_str()).map_err(|e| e.to_string())?;
                // SAFETY: `text` is a NUL-terminated PTX image that outlives the call.
                let module = unsafe { result::module::load_data(text.as_ptr().cast()) }
                    .map_err(|e| format!("the driver rejected the PTX ({})", driver_msg(e)))?;
                // SAFETY: `module` was just loaded.
                let func = match unsafe { result::module::get_function(module, entry) } {
                    Ok(f) => f,
                    Err(e) => {
                        // SAFETY: loaded above, unused.
                        let _ = unsafe { result::module::unload(module) };
                        return Err(driver_msg(e));
                    }
                };
                let l = Arc::new(Loaded {
                    ctx: self.ctx.clone(),
                    module,
                    func,
                    text: lowered.text.clone(),
                });
                lock(&self.by_text).insert(hash, l.clone());
                l
            }
        };
        let k = Arc::new(Kernel { loaded, lowered });
        lock(&self.by_module).insert(key, (module.clone(), k.clone()));
        Ok(k)
    }

    /// A fault record (64 device bytes), from the pool or newly allocated.
    fn take_record(&self) -> Result<u64, String> {
        if let Some(r) = lock(&self.records).pop() {
            return Ok(r);
        }
        // SAFETY: a plain allocation with the context current; freed in `Drop`.
        unsafe { result::malloc_sync(FAULT_RECORD_BYTES) }.map_err(driver_msg)
    }

    /// Waits for `st`'s work and reads its launches' fault records, oldest first; returns the
    /// first fault.
    fn drain(&self, st: &mut Stream) -> Option<KernelFault> {
        // SAFETY: `st.raw` is a live stream of this context.
        let sync = unsafe { result::stream::synchronize(st.raw) };
        let mut first = None;
        for p in st.pending.drain(..) {
            let mut rec = [0u8; FAULT_RECORD_BYTES];
            // SAFETY: `p.record` is a live 64-byte record; the stream that wrote it is idle.
            let read = unsafe { result::memcpy_dtoh_sync(&mut rec, p.record) };
            if first.is_none() {
                first = match (sync, read) {
                    (Ok(()), Ok(())) => abi::decode_fault(&rec, &p.kernel.lowered, &p.name),
                    (Err(e), _) | (_, Err(e)) => Some(KernelFault {
                        code: "XPU-E-LAUNCH",
                        message: format!(
                            "kernel {} failed on backend cuda: {}",
                            p.name,
                            driver_msg(e)
                        ),
                        frames: vec![],
                    }),
                };
            }
            if read.is_ok() {
                lock(&self.records).push(p.record);
            }
        }
        first
    }
}

impl Drop for CudaBackend {
    fn drop(&mut self) {
        let _ = self.ctx.enter();
        for (_, ev) in lock(&self.events).drain() {
            // SAFETY: the event was removed from the map; destroyed once.
            let _ = unsafe { result::event::destroy(ev.raw) };
        }
        let mut streams = std::mem::take(&mut *lock(&self.streams));
        for st in streams.values_mut() {
            let _ = self.drain(st);
            // SAFETY: the stream is idle and removed from the map; destroyed once.
            let _ = unsafe { result::stream::destroy(st.raw) };
        }
        for r in lock(&self.records).drain(..) {
            // SAFETY: records were allocated by `take_record` and are no longer in use.
            let _ = unsafe { result::free_sync(r) };
        }
    }
}

impl Backend for CudaBackend {
    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    fn alloc(&self, bytes: u64, kind: MemoryKind, poison: bool) -> Result<StorageId, XpuError> {
        let oom = || XpuError {
            code: "XPU-E-OOM",
            message: format!(
                "cannot allocate {bytes} bytes of {} memory on backend cuda",
                kind.name()
            ),
        };
        self.ctx.enter().map_err(|_| oom())?;
        let fill = if poison { 0xFF } else { 0 };
        let s = Storage::new(&self.ctx, &self.acct, bytes, kind, fill).map_err(|_| oom())?;
        let id = self.next_storage.fetch_add(1, Ordering::Relaxed);
        lock(&self.storages).insert(id, Arc::new(s));
        Ok(StorageId(id))
    }

    fn release(&self, id: StorageId) {
        let dropped = lock(&self.storages).remove(&id.0);
        // Freed now unless a pending launch holds it (then at its stream's sync).
        drop(dropped);
    }

    fn write(&self, id: StorageId, offset: u64, data: &[u8]) {
        let Some(s) = self.storage(id) else { return };
        let fits = offset
            .checked_add(data.len() as u64)
            .is_some_and(|end| end <= s.bytes);
        if !fits || data.is_empty() || self.ctx.enter().is_err() {
            return;
        }
        // Earlier launches (on any stream) may use the storage: wait for them. A failure
        // here is a launch's and is reported at its stream's sync.
        let _ = result::ctx::synchronize();
        // SAFETY: the range lies inside the live allocation (checked above).
        let _ = unsafe { result::memcpy_htod_sync(s.address + offset, data) };
    }

    fn read(&self, id: StorageId, offset: u64, out: &mut [u8]) {
        let Some(s) = self.storage(id) else { return };
        let fits = offset
            .checked_add(out.len() as u64)
            .is_some_and(|end| end <= s.bytes);
        if !fits || out.is_empty() || self.ctx.enter().is_err() {
            return;
        }
        let _ = result::ctx::synchronize();
        // SAFETY: the range lies inside the live allocation (checked above).
        let _ = unsafe { result::memcpy_dtoh_sync(out, s.address + offset) };
    }

    /// Transfers wait for all work (`ctx::synchronize`); the launches' fault records are
    /// read as `sync()` reads them.
    fn transfer_fault(&self) -> Result<(), KernelFault> {
        self.stream_sync(StreamId::DEFAULT)
    }

    fn host_accessible(&self, id: StorageId) -> bool {
        self.storage(id)
            .is_some_and(|s| s.kind != MemoryKind::Device || self.integrated)
    }

    fn launch(
        &self,
        module: &Arc<Module>,
        kernel: u32,
        dims: Dims,
        args: &[KernelArg],
        stream: StreamId,
    ) -> Result<(), LaunchError> {
        let name = module
            .functions
            .get(kernel as usize)
            .map_or_else(|| format!("#{kernel}"), |f| f.simple_name().to_string());
        let refuse = |reason: String| {
            LaunchError::Refused(XpuError {
                code: "XPU-E-LAUNCH",
                message: format!("kernel {name} refused by backend cuda: {reason}"),
            })
        };
        self.ctx.enter().map_err(&refuse)?;
        let k = self.load(module, kernel).map_err(&refuse)?;
        abi::check_dims(&dims, k.lowered.shared_bytes, &self.limits).map_err(&refuse)?;

        let mut holds = vec![];
        let packed = {
            let storages = lock(&self.storages);
            abi::pack_args(&k.lowered.params, args, |id| {
                storages.get(&id.0).map(|s| {
                    holds.push(s.clone());
                    BoundStorage {
                        address: s.address,
                        bytes: s.bytes,
                    }
                })
            })
        };
        let mut cells = match packed {
            Ok((cells, _)) => cells,
            Err(PackError::Refused(r)) => return Err(refuse(r)),
            Err(PackError::Freed(_)) => {
                return Err(LaunchError::Refused(XpuError {
                    code: "XPU-E-FREED",
                    message: "launch on a freed buffer".into(),
                }))
            }
        };
        if dims.grid.contains(&0) || dims.block.contains(&0) {
            return Ok(());
        }
        let shared_total = k.lowered.shared_bytes + dims.shared_bytes;
        // Within the limit (checked), so it fits an i32 / u32. Static arrays beyond what PTX
        // may declare live at the start of the dynamic memory (`ptx::Lowered`).
        let dynamic = if k.lowered.static_in_dynamic {
            shared_total as u32
        } else {
            dims.shared_bytes as u32
        };
        if shared_total > DEFAULT_SHARED_LIMIT {
            // SAFETY: `k.loaded.func` is a live function of a loaded module.
            unsafe {
                result::function::set_function_attribute(
                    k.loaded.func,
                    sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    dynamic as i32,
                )
            }
            .map_err(|e| refuse(driver_msg(e)))?;
        }
        let record = self.take_record().map_err(&refuse)?;
        let mut streams = lock(&self.streams);
        let Some(st) = streams.get_mut(&stream.0) else {
            lock(&self.records).push(record);
            return Err(LaunchError::Refused(XpuError {
                code: "XPU-E-FREED",
                message: format!("launch of {name} on a destroyed stream"),
            }));
        };
        cells.push(record);
        // Each `.param` reads its size from the start of its cell: the low bytes of a
        // little-endian u64 for 32-bit parameters.
        let mut params: Vec<*mut c_void> = cells
            .iter_mut()
            .map(|c| (c as *mut u64).cast::<c_void>())
            .collect();
        // SAFETY: the record is a live 64-byte allocation; `st.raw` is a live stream. The
        // parameter pointers match the kernel's `.param` list (built from the same lowering)
        // and the driver copies the values before `cuLaunchKernel` returns; every buffer
        // address lies in a storage that `holds` keeps alive until the stream is synchronised.
        let launched = unsafe {
            result::memset_d8_async(record, 0, FAULT_RECORD_BYTES, st.raw).and_then(|()| {
                result::launch_kernel(
                    k.loaded.func,
                    (dims.grid[0], dims.grid[1], dims.grid[2]),
                    (dims.block[0], dims.block[1], dims.block[2]),
                    dynamic,
                    st.raw,
                    &mut params,
                )
            })
        };
        if let Err(e) = launched {
            lock(&self.records).push(record);
            return Err(refuse(driver_msg(e)));
        }
        st.pending.push(Pending {
            record,
            kernel: k,
            name,
            _holds: holds,
        });
        Ok(())
    }

    fn stream_create(&self) -> StreamId {
        if self.ctx.enter().is_err() {
            return StreamId::DEFAULT;
        }
        match result::stream::create(result::stream::StreamKind::NonBlocking) {
            Ok(raw) => {
                let id = self.next_stream.fetch_add(1, Ordering::Relaxed);
                lock(&self.streams).insert(
                    id,
                    Stream {
                        raw,
                        pending: vec![],
                    },
                );
                StreamId(id)
            }
            // Serialising on the default stream is a valid schedule (XPU §4.1).
            Err(_) => StreamId::DEFAULT,
        }
    }

    fn stream_sync(&self, stream: StreamId) -> Result<(), KernelFault> {
        let _ = self.ctx.enter();
        let mut streams = lock(&self.streams);
        let mut ids: Vec<u64> = if stream == StreamId::DEFAULT {
            streams.keys().copied().collect()
        } else {
            vec![stream.0]
        };
        ids.sort_unstable();
        let mut first = None;
        for id in ids {
            if let Some(st) = streams.get_mut(&id) {
                let f = self.drain(st);
                first = first.or(f);
            }
        }
        first.map_or(Ok(()), Err)
    }

    /// Waits on the driver's streams only: their launches stay pending, to be checked for
    /// faults by the next `stream_sync`.
    fn stream_wait(&self, stream: StreamId) {
        if self.ctx.enter().is_err() {
            return;
        }
        let streams = lock(&self.streams);
        for (&id, st) in streams.iter() {
            if stream == StreamId::DEFAULT || id == stream.0 {
                // SAFETY: `st.raw` is a live stream of this context (removed from the map
                // before it is destroyed); waiting on it has no other precondition.
                let _ = unsafe { result::stream::synchronize(st.raw) };
            }
        }
    }

    fn stream_destroy(&self, stream: StreamId) {
        if stream == StreamId::DEFAULT || self.ctx.enter().is_err() {
            return;
        }
        let mut streams = lock(&self.streams);
        let Some(mut st) = streams.remove(&stream.0) else {
            return;
        };
        // SAFETY: `st.raw` is live; after the wait it has no work and is destroyed once.
        let _ = unsafe { result::stream::synchronize(st.raw) };
        // Its launches' faults are reported at the next sync of the default stream.
        if let Some(default) = streams.get_mut(&0) {
            default.pending.append(&mut st.pending);
        }
        // SAFETY: as above.
        let _ = unsafe { result::stream::destroy(st.raw) };
    }

    fn mem_stats(&self) -> MemStats {
        *lock(&self.acct.0)
    }

    /// A CUDA event recorded on the stream. If the driver refuses one, the stream is waited
    /// for on the host instead and the recording is signalled at once (a valid schedule).
    fn event_record(&self, stream: StreamId) -> EventId {
        if self.ctx.enter().is_err() {
            return EventId::SIGNALLED;
        }
        let streams = lock(&self.streams);
        // A destroyed stream waited for its work: nothing is left to mark.
        let Some(st) = streams.get(&stream.0) else {
            return EventId::SIGNALLED;
        };
        let Ok(raw) = result::event::create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING) else {
            // SAFETY: `st.raw` is a live stream of this context.
            let _ = unsafe { result::stream::synchronize(st.raw) };
            return EventId::SIGNALLED;
        };
        // SAFETY: `raw` was just created; `st.raw` is a live stream of this context.
        if unsafe { result::event::record(raw, st.raw) }.is_err() {
            // SAFETY: as above; `raw` is not used again.
            unsafe {
                let _ = result::event::destroy(raw);
                let _ = result::stream::synchronize(st.raw);
            }
            return EventId::SIGNALLED;
        }
        let id = self.next_event.fetch_add(1, Ordering::Relaxed);
        lock(&self.events).insert(
            id,
            Recording {
                raw,
                stream: stream.0,
            },
        );
        EventId(id)
    }

    /// Waits for the event, then reports the first fault of its stream's launches (the
    /// stream is drained: its fault records are read once its work is done).
    fn event_wait(&self, event: EventId) -> Result<(), KernelFault> {
        let Some(ev) = lock(&self.events).get(&event.0).copied() else {
            return Ok(());
        };
        let _ = self.ctx.enter();
        // SAFETY: the event stays live while the VM's `Event` object holds `event`.
        let _ = unsafe { result::event::synchronize(ev.raw) };
        let mut streams = lock(&self.streams);
        // A destroyed stream's launches moved to the default stream.
        let id = if streams.contains_key(&ev.stream) {
            ev.stream
        } else {
            0
        };
        match streams.get_mut(&id).and_then(|st| self.drain(st)) {
            Some(f) => Err(f),
            None => Ok(()),
        }
    }

    /// `cuEventQuery`; a driver error counts as signalled (the fault is reported at the next
    /// synchronisation).
    fn event_query(&self, event: EventId) -> bool {
        let Some(ev) = lock(&self.events).get(&event.0).copied() else {
            return true;
        };
        let _ = self.ctx.enter();
        // SAFETY: the event is live (see `event_wait`).
        match unsafe { result::event::query(ev.raw) } {
            Ok(()) => true,
            Err(e) => e.0 != sys::cudaError_enum::CUDA_ERROR_NOT_READY,
        }
    }

    /// `cuStreamWaitEvent`; should the driver refuse, the host waits for the event instead.
    fn stream_wait_event(&self, stream: StreamId, event: EventId) {
        let Some(ev) = lock(&self.events).get(&event.0).copied() else {
            return;
        };
        let _ = self.ctx.enter();
        let streams = lock(&self.streams);
        let Some(st) = streams.get(&stream.0) else {
            return;
        };
        // SAFETY: both handles are live: the stream is in the map, the event held by the VM.
        let queued = unsafe {
            result::stream::wait_event(
                st.raw,
                ev.raw,
                sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT,
            )
        };
        if queued.is_err() {
            // SAFETY: as above.
            let _ = unsafe { result::event::synchronize(ev.raw) };
        }
    }

    /// `cuEventDestroy` (the driver releases a pending event once it completes).
    fn event_release(&self, event: EventId) {
        let Some(ev) = lock(&self.events).remove(&event.0) else {
            return;
        };
        let _ = self.ctx.enter();
        // SAFETY: removed from the map, so destroyed exactly once.
        let _ = unsafe { result::event::destroy(ev.raw) };
    }
}
