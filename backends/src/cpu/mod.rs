//! The `cpu` backend: device memory in host RAM and kernels run by a deterministic lane
//! scheduler over the kernel bytecode. It is the conformance reference (XPU §8.4): every check
//! is on (indices, integer division, divergent barriers) and, within a workgroup, execution
//! follows exactly the order of XPU §5.5.
//!
//! Code map:
//! - `memory`: storage objects, accounting, typed atomic element views;
//! - `plan`: the one-scan facts about a kernel (rendezvous, stack size, recursion check);
//! - `interp`: the interpreter of one work-item;
//! - `lanes`: workgroups over worker threads, items inside a workgroup (barriers and wave
//!   collectives), fault selection;
//! - `pool`: the backend's persistent worker threads, parked between launches;
//! - `wave`: the arithmetic of the wave collectives.
//!
//! Launches complete before [`Backend::launch`] returns (XPU §3.4 step 6), so streams are
//! trivial: every stream is already synchronised when the VM could ask.

mod compiled;
mod interp;
mod lanes;
mod memory;
mod plan;
mod pool;
mod wave;

pub use memory::advise_huge_pages;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use cajeta_bytecode::{Function, KernelAttrs, Module, Scalar, Type};

use crate::{
    Backend, Capabilities, Dims, KernelArg, KernelFault, LaunchError, MemStats, MemoryKind,
    StorageId, StreamId, XpuError,
};
use memory::{Accounting, Storage};

/// Default wave width on `cpu` (XPU §8.2).
const WAVE_WIDTH: u32 = 8;
/// Items per workgroup (XPU §8.3).
const MAX_ITEMS: u32 = 1024;
/// Block size per axis.
const MAX_BLOCK: [u32; 3] = [1024, 1024, 64];
/// Grid size per axis.
const MAX_GRID: u32 = (1 << 31) - 1;
/// Shared bytes per workgroup (static declarations plus `sharedBytes:`).
const MAX_SHARED_BYTES: u64 = 16 << 20;
/// Most register cells the items of one workgroup may need together (128 MiB per worker).
const MAX_WORKGROUP_CELLS: u64 = 1 << 24;
/// Most worker threads a configuration may ask for.
const MAX_WORKERS: usize = 256;

/// How the `cpu` backend schedules workgroups.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Default)]
pub struct CpuConfig {
    /// Worker threads; 0 means one per core (`std::thread::available_parallelism`).
    pub workers: usize,
    /// Run workgroups one at a time, in increasing linear index, on the launching thread
    /// (every launch is then deterministic).
    pub serial: bool,
}

impl CpuConfig {
    /// The configuration of the environment (XPU §8.5): `CAJETA_XPU_CPU_WORKERS=n` (0 or an
    /// invalid value: one per core) and `CAJETA_XPU_CPU_SERIAL=1`.
    pub fn from_env() -> CpuConfig {
        CpuConfig::from_values(
            std::env::var("CAJETA_XPU_CPU_WORKERS").ok().as_deref(),
            std::env::var("CAJETA_XPU_CPU_SERIAL").ok().as_deref(),
        )
    }

    /// The configuration of the two variables' values (`None`: unset).
    fn from_values(workers: Option<&str>, serial: Option<&str>) -> CpuConfig {
        CpuConfig {
            workers: workers.and_then(|v| v.trim().parse().ok()).unwrap_or(0),
            serial: serial.is_some_and(|v| v.trim() == "1"),
        }
    }
}

/// The `cpu` backend.
///
/// # Examples
///
/// ```
/// use cajeta_backends::{cpu::CpuBackend, Backend, MemoryKind};
///
/// let cpu = CpuBackend::new();
/// let id = cpu.alloc(8, MemoryKind::Device, false).unwrap();
/// cpu.write(id, 0, &7u32.to_le_bytes());
/// let mut out = [0xAAu8; 8];
/// cpu.read(id, 0, &mut out);
/// assert_eq!(out, [7, 0, 0, 0, 0, 0, 0, 0]);
/// cpu.release(id);
/// assert_eq!(cpu.mem_stats().live, 0);
/// ```
#[derive(Debug)]
pub struct CpuBackend {
    caps: Capabilities,
    acct: Arc<Accounting>,
    /// The VM's references: one per live storage id.
    storages: Mutex<HashMap<u64, Arc<Storage>>>,
    next_storage: AtomicU64,
    next_stream: AtomicU64,
    /// Worker cap (0: one per core).
    worker_cap: AtomicUsize,
    /// Cores (`available_parallelism`, 1 if unknown).
    cores: usize,
    serial: bool,
    /// Compiled or lane scheduler, per kernel.
    compile: compiled::CompileConfig,
    kernels: Arc<compiled::Cache>,
    /// Worker threads of multi-worker launches, started by the first one (joined on drop).
    pool: pool::Pool,
}

impl Default for CpuBackend {
    fn default() -> Self {
        CpuBackend::new()
    }
}

impl CpuBackend {
    /// A backend configured from the environment ([`CpuConfig::from_env`]).
    pub fn new() -> CpuBackend {
        CpuBackend::with_config(CpuConfig::from_env())
    }

    /// A backend with an explicit configuration.
    pub fn with_config(config: CpuConfig) -> CpuBackend {
        CpuBackend {
            caps: Capabilities {
                name: "cpu",
                wave_width: WAVE_WIDTH,
                max_items: MAX_ITEMS,
                max_block: MAX_BLOCK,
                max_grid: [MAX_GRID; 3],
                max_shared_bytes: MAX_SHARED_BYTES,
                device_memory_host_accessible: true,
                atomics_64: true,
                f64: true,
            },
            acct: Arc::new(Accounting::default()),
            storages: Mutex::new(HashMap::new()),
            next_storage: AtomicU64::new(1),
            next_stream: AtomicU64::new(1),
            worker_cap: AtomicUsize::new(config.workers),
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            serial: config.serial,
            compile: compiled::CompileConfig::from_env(),
            kernels: Arc::default(),
            pool: pool::Pool::default(),
        }
    }

    /// Worker threads a launch uses (`Device.multiprocessorCount()` on `cpu`).
    pub fn workers(&self) -> usize {
        match self.worker_cap.load(Ordering::Relaxed) {
            0 => self.cores,
            n => n.min(MAX_WORKERS),
        }
    }

    /// The worker cap (0: one per core), as `Device.cpuWorkerCap()`.
    pub fn worker_cap(&self) -> usize {
        self.worker_cap.load(Ordering::Relaxed)
    }

    /// Sets the worker cap (0: one per core), as `Device.setCpuWorkerCap(n)`; applies to later
    /// launches.
    pub fn set_worker_cap(&self, n: usize) {
        self.worker_cap.store(n, Ordering::Relaxed);
    }

    /// Whether workgroups run one at a time (`CAJETA_XPU_CPU_SERIAL=1`).
    pub fn serial(&self) -> bool {
        self.serial
    }

    /// The VM's reference to storage `id`, if it is live.
    fn storage(&self, id: StorageId) -> Option<Arc<Storage>> {
        self.storages
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&id.0)
            .cloned()
    }
}

/// The source name of parameter `i` of `f` (`#i` if it has none).
fn param_name(f: &Function, i: usize) -> String {
    f.locals
        .iter()
        .find(|n| usize::from(n.reg) == i)
        .map_or_else(|| format!("#{i}"), |n| n.name.clone())
}

/// Re-canonicalises a scalar argument cell (see `bytecode::types`).
fn canonical(s: Scalar, bits: u64) -> u64 {
    match s {
        Scalar::Bool => u64::from(bits != 0),
        Scalar::I8 => bits as i8 as i64 as u64,
        Scalar::U8 => bits & 0xff,
        Scalar::I16 => bits as i16 as i64 as u64,
        Scalar::U16 | Scalar::F16 | Scalar::BF16 => bits & 0xffff,
        Scalar::I32 => bits as i32 as i64 as u64,
        Scalar::Char | Scalar::U32 | Scalar::F32 => bits & 0xffff_ffff,
        Scalar::I64 | Scalar::U64 | Scalar::F64 => bits,
    }
}

/// Checks launch geometry and shared memory against the `cpu` limits (XPU §3.4 step 3, §8.3).
fn check_dims(dims: &Dims, static_shared: u64) -> Result<(), String> {
    const AXES: [&str; 3] = ["x", "y", "z"];
    for axis in 0..3 {
        if dims.block[axis] > MAX_BLOCK[axis] {
            return Err(format!(
                "block dimension {} of {} exceeds the limit {}",
                AXES[axis], dims.block[axis], MAX_BLOCK[axis]
            ));
        }
    }
    let items: u64 = dims.block.iter().map(|&b| u64::from(b)).product();
    if items > u64::from(MAX_ITEMS) {
        return Err(format!(
            "block of {items} items exceeds the limit {MAX_ITEMS}"
        ));
    }
    for ((axis, &g), &b) in AXES.iter().zip(&dims.grid).zip(&dims.block) {
        if g > MAX_GRID {
            return Err(format!(
                "grid dimension {axis} of {g} exceeds the limit {MAX_GRID}"
            ));
        }
        let total = u64::from(g) * u64::from(b);
        if total > 1 << 32 {
            return Err(format!(
                "grid × block on axis {axis} is {total} (at most 2^32)"
            ));
        }
    }
    let workgroups: u128 = dims.grid.iter().map(|&g| u128::from(g)).product();
    if workgroups > 1 << 63 {
        return Err(format!("a grid of {workgroups} workgroups is too large"));
    }
    match static_shared.checked_add(dims.shared_bytes) {
        Some(n) if n <= MAX_SHARED_BYTES => Ok(()),
        _ => Err(format!(
            "{} bytes of shared memory ({static_shared} static + {} dynamic) exceed the limit {MAX_SHARED_BYTES}",
            u128::from(static_shared) + u128::from(dims.shared_bytes),
            dims.shared_bytes
        )),
    }
}

impl Backend for CpuBackend {
    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    fn alloc(&self, bytes: u64, kind: MemoryKind, poison: bool) -> Result<StorageId, XpuError> {
        let Some(storage) = Storage::new(bytes, poison, &self.acct) else {
            return Err(XpuError {
                code: "XPU-E-OOM",
                message: format!(
                    "cannot allocate {bytes} bytes of {} memory on backend cpu",
                    kind.name()
                ),
            });
        };
        let id = self.next_storage.fetch_add(1, Ordering::Relaxed);
        self.storages
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id, Arc::new(storage));
        Ok(StorageId(id))
    }

    fn release(&self, id: StorageId) {
        let dropped = self
            .storages
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&id.0);
        // Freed here unless a launch still holds it (then when that launch ends).
        drop(dropped);
    }

    /// Copies `data` in. An unknown storage or a range outside it copies nothing (the VM never
    /// asks for that).
    fn write(&self, id: StorageId, offset: u64, data: &[u8]) {
        if let Some(s) = self.storage(id) {
            let _ = s.write(offset, data);
        }
    }

    /// Copies out. An unknown storage or a range outside it leaves `out` unchanged (the VM
    /// never asks for that).
    fn read(&self, id: StorageId, offset: u64, out: &mut [u8]) {
        if let Some(s) = self.storage(id) {
            let _ = s.read(offset, out);
        }
    }

    fn host_accessible(&self, _id: StorageId) -> bool {
        true
    }

    fn prepare(&self, module: &Arc<Module>) {
        self.kernels.prepare(module, self.compile);
    }

    fn launch(
        &self,
        module: &Arc<Module>,
        kernel: u32,
        dims: Dims,
        args: &[KernelArg],
        _stream: StreamId,
    ) -> Result<(), LaunchError> {
        let kf = module.functions.get(kernel as usize);
        let name = kf.map_or_else(|| format!("#{kernel}"), |f| f.simple_name().to_string());
        let refuse = |reason: String| {
            LaunchError::Refused(XpuError {
                code: "XPU-E-LAUNCH",
                message: format!("kernel {name} refused by backend cpu: {reason}"),
            })
        };
        let Some(kf) = kf else {
            return Err(refuse("no such function".into()));
        };
        let plan = plan::plan(module, kernel).map_err(refuse)?;
        check_dims(&dims, plan.shared_bytes).map_err(refuse)?;
        // With rendezvous every item of a workgroup keeps its own registers.
        let live_items: u64 = if plan.has_rendezvous {
            dims.block.iter().map(|&b| u64::from(b)).product()
        } else {
            1
        };
        let cells = live_items.saturating_mul(plan.stack_cells as u64);
        if cells > MAX_WORKGROUP_CELLS {
            return Err(refuse(format!(
                "a workgroup needs {cells} registers (at most {MAX_WORKGROUP_CELLS})"
            )));
        }

        // Arguments: scalars by value, buffers as handles into the launch's buffer table.
        if args.len() != usize::from(kf.params) {
            return Err(refuse(format!(
                "{} arguments for {} parameters",
                args.len(),
                kf.params
            )));
        }
        let mut params = Vec::with_capacity(args.len());
        // (storage id, storage, first element, length, element width)
        let mut bound: Vec<(u64, Arc<Storage>, u64, u64, u8)> = Vec::new();
        for (i, (arg, ty)) in args.iter().zip(&kf.regs).enumerate() {
            match (*ty, *arg) {
                (Type::Scalar(s), KernelArg::Scalar(bits)) => params.push(canonical(s, bits)),
                (
                    Type::Buffer(s),
                    KernelArg::Buffer {
                        storage,
                        offset,
                        len,
                    },
                ) => {
                    let Some(st) = self.storage(storage) else {
                        return Err(LaunchError::Refused(XpuError {
                            code: "XPU-E-FREED",
                            message: "launch on a freed buffer".into(),
                        }));
                    };
                    params.push(bound.len() as u64);
                    bound.push((storage.0, st, offset, len, s.size() as u8));
                }
                (Type::Scalar(_), _) => {
                    return Err(refuse(format!(
                        "argument {} must be a scalar",
                        param_name(kf, i)
                    )))
                }
                (Type::Buffer(_), _) => {
                    return Err(refuse(format!(
                        "argument {} must be a buffer",
                        param_name(kf, i)
                    )))
                }
                (t, _) => {
                    return Err(refuse(format!(
                        "parameter {} has type {t}, which kernels cannot take",
                        param_name(kf, i)
                    )))
                }
            }
        }
        let mut views = Vec::with_capacity(bound.len());
        for (n, (_, st, first, len, width)) in bound.iter().enumerate() {
            let view = st.view(*first, *len, *width).ok_or_else(|| {
                refuse(format!(
                    "buffer argument {n} ({len} elements at {first}) lies outside its storage of {} bytes",
                    st.bytes()
                ))
            })?;
            if !st.claim_width(*width) {
                return Err(refuse(format!(
                    "buffer argument {n} uses storage that kernels access with another element size"
                )));
            }
            views.push(view);
        }
        // The kernel's initial frame: parameters, then zeroed registers.
        params.resize(kf.regs.len().max(params.len()), 0);
        if dims.grid.contains(&0) || dims.block.contains(&0) {
            return Ok(());
        }
        // Hold every storage's gate (each once, in id order, so launches never deadlock) for
        // the whole run: host copies wait for the launch.
        let mut order: Vec<usize> = (0..bound.len()).collect();
        order.sort_by_key(|&i| bound[i].0);
        order.dedup_by_key(|i| bound[*i].0);
        let _gates: Vec<_> = order.iter().map(|&i| bound[i].1.enter_launch()).collect();

        let compiled = self.kernels.get(module, kernel, &plan, self.compile);
        let launch = lanes::Launch {
            module,
            kernel,
            name: &name,
            plan: &plan,
            grid: dims.grid,
            block: dims.block,
            frame: &params,
            bufs: &views,
            // `@Wave(width = N)` (XPU §8.2); V-KATTR keeps N a power of two 1…64.
            wave: KernelAttrs::of(kf).wave_width.unwrap_or(WAVE_WIDTH),
            workers: self.workers(),
            serial: self.serial,
            compiled: compiled.as_deref(),
            shared_bytes: dims.shared_bytes,
            turns: {
                let bytes = views.iter().map(|v| v.len() * u64::from(v.width())).sum();
                self.compile.turns.takes_turns(bytes)
            },
        };
        lanes::execute(&launch, &self.pool).map_err(|e| match e {
            lanes::RunError::Fault(f) => LaunchError::Fault(f),
            lanes::RunError::Oom(x) => LaunchError::Refused(x),
        })
    }

    fn stream_create(&self) -> StreamId {
        StreamId(self.next_stream.fetch_add(1, Ordering::Relaxed))
    }

    /// Launches complete synchronously on `cpu`, so there is never pending work or a pending
    /// fault.
    fn stream_sync(&self, _stream: StreamId) -> Result<(), KernelFault> {
        Ok(())
    }

    fn stream_destroy(&self, _stream: StreamId) {}

    fn mem_stats(&self) -> MemStats {
        self.acct.snapshot()
    }

    /// Any power of two from 1 to 64 (XPU §8.2).
    fn supports_wave_width(&self, w: u32) -> bool {
        w.is_power_of_two() && w <= wave::MAX_WAVE as u32
    }

    /// The host's memory: `cpu` storage is plain host memory.
    fn memory_bytes(&self) -> i64 {
        host_memory_bytes().unwrap_or(0)
    }

    fn compute_units(&self) -> i32 {
        i32::try_from(self.workers()).unwrap_or(i32::MAX)
    }

    /// `CoopMatrixBf16F32Acc` (2) and `AtomicInt64` (3), XPU §2.10.
    fn supports(&self, cap: i32) -> bool {
        matches!(cap, 2 | 3)
    }

    fn kernel_available(&self, module: &Arc<Module>, kernel: u32) -> bool {
        plan::plan(module, kernel).is_ok()
    }

    fn set_worker_cap(&self, cap: usize) {
        CpuBackend::set_worker_cap(self, cap);
    }

    fn worker_cap(&self) -> usize {
        CpuBackend::worker_cap(self)
    }
}

/// `MemTotal` of `/proc/meminfo` in bytes, where the system has one.
fn host_memory_bytes() -> Option<i64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: i64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

#[cfg(test)]
mod tests;
