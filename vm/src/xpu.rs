//! The host side of the xpu runtime (XPU §2.1–2.2, §2.10, §3.4, §4, §7.2–7.3, §8.1): backend
//! selection, the host xpu instructions (`buf.*`, `stream.*`, `device.*`, `launch`) and the
//! end-of-program wait.
//!
//! The interpreter hands every host xpu instruction to [`exec`], one `#[cold]` function, so
//! the dispatch loop's fast path is unchanged. Buffers and streams are objects of the VM's
//! handle table ([`crate::heap::KernelBuffer`], [`crate::heap::KernelStream`]); this module
//! maps them onto a [`Backend`] and reports the spec's error codes and messages.
//!
//! # Backend selection (XPU §8.1)
//!
//! The backend is created lazily at the first *device touch* (`buf.new`, `buf.empty`,
//! `stream.current`, `stream.create`, `launch`, `device.backend`) and kept for the life of the
//! [`Vm`]. Priority: `Device.force(name)` before the first touch, then the run option
//! ([`Vm::set_backend_choice`], the CLI's `--backend`), then `CAJETA_XPU_BACKEND`, else `auto`.
//! `auto` is cuda, else a GPU-type Vulkan device, else cpu; an explicit `vulkan` or `cuda` that
//! cannot open is `XPU-E-BACKEND` at the first touch (never a silent fallback), as is an unknown
//! name.
//!
//! # Completion
//!
//! Every backend operation the VM uses either completes during the call (`cpu`) or is
//! ordered by the backend (§4.3: storage stays alive under in-flight work). The async copies
//! are issued as blocking copies after their stream checks: on `cpu` they complete during the
//! call anyway (§4.4), and a blocking copy is a valid schedule on any backend.

use std::rc::Rc;
use std::sync::Arc;

use cajeta_backends::cpu::CpuBackend;
use cajeta_backends::{
    Backend, Dims, KernelArg, KernelFault, LaunchError, MemStats, MemoryKind, StreamId, XpuError,
};
use cajeta_bytecode::{Elem, Function, KernelAttrs, Module, Scalar, Type};

use crate::api::Vm;
use crate::error::{ErrorCode, RuntimeError, TraceFrame};
use crate::heap::{AllocError, BufState, Event, KernelBuffer, KernelStream, Obj, Storage};
use crate::interp::{XInstr, XOp};

/// The names `--backend`, `CAJETA_XPU_BACKEND` and `Device.force` accept.
pub const BACKEND_NAMES: [&str; 4] = ["cpu", "vulkan", "cuda", "auto"];

/// The VM's device state.
#[derive(Default)]
pub(crate) struct XpuState {
    /// The active backend, from the first device touch on.
    pub(crate) backend: Option<Arc<dyn Backend>>,
    /// `Device.force(name)` seen before the first device touch.
    forced: Option<String>,
    /// The run option (`--backend`), if any.
    pub(crate) choice: Option<String>,
    /// A `cpu` backend created ahead of the first device touch when the run option or the
    /// environment names `cpu`, so that its kernels compile while the host code runs (see
    /// [`Vm::set_backend_choice`]); taken by the touch if it selects `cpu`.
    warm: Option<Arc<dyn Backend>>,
    /// Whether new storage is filled with `0xFF` (`CAJETA_XPU_POISON=1`, read at the touch).
    poison: bool,
    /// The handle of the default-stream object (0 until `KernelStream.current()` first runs).
    default_stream: u64,
    /// The last `Device.setCpuWorkerCap(n)`: given to the backend at the first device touch
    /// (or at once after it), and what `Device.cpuWorkerCap()` reads on a backend without
    /// workers, where the cap waits for a `cpu` backend that never comes.
    worker_cap: Option<usize>,
}

/// An xpu failure before the trace is attached.
enum XErr {
    /// A host-side error: code (one of [`ErrorCode::code`]) and message.
    Plain(&'static str, String),
    /// A kernel fault (its device frames go before the host frames).
    Kernel(KernelFault),
}

fn err(code: ErrorCode, message: impl Into<String>) -> XErr {
    XErr::Plain(code.code(), message.into())
}

impl From<XpuError> for XErr {
    fn from(e: XpuError) -> XErr {
        XErr::Plain(e.code, e.message)
    }
}

/// `backend <name> is not available: <reason>`.
fn unavailable(name: &str, reason: &str) -> XErr {
    err(
        ErrorCode::XpuBackend,
        format!("backend {name} is not available: {reason}"),
    )
}

/// Creates the backend `name` names (`source` says where the name came from, for messages).
///
/// `auto` (XPU §8.1) is cuda when a CUDA device opens, else a GPU-type Vulkan device, else cpu.
/// An explicit `vulkan` also accepts a CPU implementation of Vulkan (lavapipe).
fn create_backend(name: &str, source: &str) -> Result<Arc<dyn Backend>, XErr> {
    match name {
        "cpu" => Ok(Arc::new(CpuBackend::new())),
        "auto" => Ok(cajeta_backends::cuda::open()
            .or_else(|_| cajeta_backends::vulkan::open(false))
            .unwrap_or_else(|_| Arc::new(CpuBackend::new()))),
        "cuda" => cajeta_backends::cuda::open().map_err(|why| unavailable(name, &why)),
        "vulkan" => cajeta_backends::vulkan::open(true).map_err(|why| unavailable(name, &why)),
        other => Err(unavailable(
            other,
            &format!("unknown backend name{source} (expected cpu, vulkan, cuda or auto)"),
        )),
    }
}

/// Direction and checks of a buffer transfer instruction.
#[derive(Copy, Clone)]
struct Xfer {
    /// The method name used in messages (`upload`, `hostLoad`, …).
    name: &'static str,
    /// Host → buffer.
    upload: bool,
    /// `c` is a count (prefix forms: clamp instead of `XPU-E-LENGTH`).
    prefix: bool,
    /// `c` is a stream (async forms).
    stream: bool,
    /// Needs host-accessible storage (`hostStore`/`hostLoad`).
    host: bool,
}

impl Xfer {
    const fn new(name: &'static str, upload: bool) -> Xfer {
        Xfer {
            name,
            upload,
            prefix: false,
            stream: false,
            host: false,
        }
    }
    const UPLOAD: Xfer = Xfer::new("upload", true);
    const DOWNLOAD: Xfer = Xfer::new("download", false);
    const UPLOAD_N: Xfer = Xfer {
        prefix: true,
        ..Xfer::UPLOAD
    };
    const DOWNLOAD_N: Xfer = Xfer {
        prefix: true,
        ..Xfer::DOWNLOAD
    };
    const UPLOAD_ASYNC: Xfer = Xfer {
        stream: true,
        ..Xfer::new("uploadAsync", true)
    };
    const DOWNLOAD_ASYNC: Xfer = Xfer {
        stream: true,
        ..Xfer::new("downloadAsync", false)
    };
    const HOST_STORE: Xfer = Xfer {
        host: true,
        ..Xfer::new("hostStore", true)
    };
    const HOST_LOAD: Xfer = Xfer {
        host: true,
        ..Xfer::new("hostLoad", false)
    };
}

/// Runs the host xpu instruction just before `ip` (the interpreter's instruction pointer) in
/// the running frame. Two arguments only, so the dispatch loop's code around the call does
/// not change (measured: passing the decoded operands cost every instruction ~4%).
///
/// Registers are read and written through `vm.stack` with checked indexing: this path is
/// cold, so it needs no verifier invariant (V-REG makes every access land in the window).
#[cold]
#[inline(never)]
pub(crate) fn exec(vm: &mut Vm, ip: *const XInstr) -> Result<(), RuntimeError> {
    // The running frame's window; its saved `ip` is stale, the instruction is the one before
    // the interpreter's `ip`, inside the running function's lowered code.
    let base = vm.frames.last().map_or(0, |f| f.base);
    // SAFETY: `ip` is one past an instruction of the running function's code (the
    // interpreter's `ip` invariant, V-TERM/V-JUMP), so `ip - 1` is that instruction.
    let x = unsafe { *ip.sub(1) };
    exec_instr(vm, base, x).map_err(|e| vm.xpu_error(e, Some(ip)))
}

/// Runs host xpu instruction `x` of compiled code on the frame whose window starts at `base`
/// (compiled code stored every register there): the error carries the device frames of a
/// kernel fault, the JIT adds the host frames.
pub(crate) fn exec_compiled(vm: &mut Vm, base: usize, x: XInstr) -> Result<(), RuntimeError> {
    exec_instr(vm, base, x).map_err(|e| vm.xpu_error(e, None))
}

/// Runs host xpu instruction `x` on the frame whose window starts at `base`.
fn exec_instr(vm: &mut Vm, base: usize, x: XInstr) -> Result<(), XErr> {
    let (a, b, c) = (x.a, x.b, x.c);
    match x.op {
        XOp::BufNew => vm.buf_new(base, a, b, true),
        XOp::BufNewEmpty => vm.buf_new(base, a, b, false),
        XOp::BufLength => vm.buf_len(base, a, b),
        XOp::BufAllocate => vm.buf_allocate(base, a, b, c == 1),
        XOp::BufUpload => vm.transfer(base, a, b, c, Xfer::UPLOAD),
        XOp::BufUploadN => vm.transfer(base, a, b, c, Xfer::UPLOAD_N),
        XOp::BufDownload => vm.transfer(base, a, b, c, Xfer::DOWNLOAD),
        XOp::BufDownloadN => vm.transfer(base, a, b, c, Xfer::DOWNLOAD_N),
        XOp::BufUploadAsync => vm.transfer(base, a, b, c, Xfer::UPLOAD_ASYNC),
        XOp::BufDownloadAsync => vm.transfer(base, a, b, c, Xfer::DOWNLOAD_ASYNC),
        XOp::BufHostStore => vm.transfer(base, a, b, c, Xfer::HOST_STORE),
        XOp::BufHostLoad => vm.transfer(base, a, b, c, Xfer::HOST_LOAD),
        XOp::BufFree => vm.buf_free(base, a),
        XOp::BufSlice => vm.buf_slice(base, a, b, c),
        XOp::StreamCurrent => vm.stream_current(base, a),
        XOp::StreamCreate => vm.stream_create(base, a),
        XOp::StreamSync => vm.stream_sync(base, a),
        XOp::StreamDestroy => vm.stream_destroy(base, a),
        XOp::StreamWaitFor => vm.stream_wait_for(base, a, b),
        XOp::EventCreate => vm.event_create(base, a),
        XOp::EventRecord => vm.event_record(base, a, b),
        XOp::EventWaitHost => vm.event_wait_host(base, a),
        XOp::EventQuery => vm.event_query(base, a, b),
        XOp::EventDestroy => vm.event_destroy(base, a),
        XOp::DeviceForce => vm.device_force(base, a),
        XOp::DeviceBackend => vm.device_backend(base, a),
        XOp::DeviceQuery => vm.device_query(base, a, b),
        XOp::DeviceSupports => {
            let cap = vm.reg(base, usize::from(b)) as i64 as i32;
            let yes = vm.device()?.supports(cap);
            vm.set_reg(base, a, u64::from(yes));
            Ok(())
        }
        XOp::DeviceKernelOk => vm.device_kernel_ok(base, a, b),
        XOp::KernelWave => vm.kernel_wave(base, a, b),
        XOp::KernelName => vm.kernel_name(base, a, b),
        XOp::TimerMark => vm.timer_mark(base, a, b, c),
        XOp::TimerLive => timer_live(vm.reg(base, usize::from(a)), b),
        XOp::DeviceSetWorkers => {
            // Not a device touch: before one, the cap waits for the backend's selection.
            let cap = usize::try_from(vm.reg(base, usize::from(a)) as i64).unwrap_or(0);
            if let Some(backend) = vm.xpu.backend.as_ref() {
                backend.set_worker_cap(cap);
            }
            vm.xpu.worker_cap = Some(cap);
            Ok(())
        }
        XOp::Launch => vm.launch(base, a, b),
        other => Err(err(
            ErrorCode::Call,
            format!("{other:?} is not a host xpu instruction (the module was not verified)"),
        )),
    }
}

impl Vm {
    /// Register `r` of the frame at `base` (0 outside the stack, which V-REG excludes).
    fn reg(&self, base: usize, r: usize) -> u64 {
        self.stack.get(base + r).copied().unwrap_or(0)
    }

    /// Writes register `r` of the frame at `base`.
    fn set_reg(&mut self, base: usize, r: u16, v: u64) {
        if let Some(cell) = self.stack.get_mut(base + usize::from(r)) {
            *cell = v;
        }
    }

    /// The runtime error for `e`: device frames (kernel faults), then the host frames from
    /// the instruction before `ip` (none at program end).
    fn xpu_error(&self, e: XErr, ip: Option<*const XInstr>) -> RuntimeError {
        let (code, message, mut trace) = match e {
            XErr::Plain(code, message) => (code, message, Vec::new()),
            XErr::Kernel(f) => {
                let frames = f
                    .frames
                    .iter()
                    .flat_map(|&(func, pc)| self.frames_at(func, pc))
                    .collect::<Vec<TraceFrame>>();
                (f.code, f.message, frames)
            }
        };
        if let Some(ip) = ip {
            trace.extend(self.host_trace(ip));
        }
        RuntimeError {
            code,
            message,
            trace,
        }
    }

    /// The active backend, selecting and creating it at the first device touch (§8.1).
    fn device(&mut self) -> Result<Arc<dyn Backend>, XErr> {
        if let Some(b) = &self.xpu.backend {
            return Ok(Arc::clone(b));
        }
        let warm = self.xpu.warm.take();
        let (name, source) = self.backend_to_select();
        let backend = match warm.filter(|_| name == "cpu") {
            Some(warm) => warm,
            None => {
                let source = source.map_or(String::new(), |s| format!(" in {s}"));
                let backend = create_backend(&name, &source)?;
                backend.prepare(&self.module);
                backend
            }
        };
        if std::env::var("CAJETA_XPU_VERBOSE").is_ok_and(|v| v.trim() == "1") {
            // Which backend the first device touch selected, and why (`--verbose`).
            let why = source.map_or("by default".to_string(), |s| format!("in {s}"));
            eprintln!(
                "xpu: backend {} (`{name}` {why})",
                backend.capabilities().name
            );
        }
        self.xpu.poison = std::env::var("CAJETA_XPU_POISON").is_ok_and(|v| v == "1");
        if let Some(cap) = self.xpu.worker_cap {
            backend.set_worker_cap(cap);
        }
        self.xpu.backend = Some(Arc::clone(&backend));
        Ok(backend)
    }

    /// The backend name the first device touch selects, and what names it (`Device.force`,
    /// `--backend` — the run option —, `CAJETA_XPU_BACKEND`), or `auto` by default (XPU §8.1).
    pub fn backend_to_select(&self) -> (String, Option<&'static str>) {
        if let Some(name) = &self.xpu.forced {
            (name.clone(), Some("Device.force"))
        } else if let Some(name) = &self.xpu.choice {
            (name.clone(), Some("--backend"))
        } else if let Some(name) = std::env::var("CAJETA_XPU_BACKEND")
            .ok()
            .filter(|v| !v.is_empty())
        {
            (name, Some("CAJETA_XPU_BACKEND"))
        } else {
            ("auto".to_string(), None)
        }
    }

    /// Sets the backend the run option names (`cpu`, `vulkan`, `cuda`, `auto`; `None`: no
    /// option), used at the first device touch unless `Device.force` ran before it (XPU §8.1).
    /// An unusable or unknown name is `XPU-E-BACKEND` at that touch.
    ///
    /// When that name (or, without one, `CAJETA_XPU_BACKEND`) is `cpu` and the program has
    /// kernels, the `cpu` backend is created now and compiles them on a thread of its own
    /// ([`Backend::prepare`]); nothing observable changes — it becomes the active backend only
    /// at the first device touch, if that selects `cpu`.
    pub fn set_backend_choice(&mut self, name: Option<String>) {
        self.xpu.choice = name;
        self.xpu.warm = None;
        let named = self
            .xpu
            .choice
            .clone()
            .or_else(|| std::env::var("CAJETA_XPU_BACKEND").ok());
        let kernels = self
            .module
            .functions
            .iter()
            .any(|f| f.kind == cajeta_bytecode::FnKind::Kernel);
        if self.xpu.backend.is_none() && named.as_deref() == Some("cpu") && kernels {
            let warm: Arc<dyn Backend> = Arc::new(CpuBackend::new());
            warm.prepare(&self.module);
            self.xpu.warm = Some(warm);
        }
    }

    /// Makes `backend` the active backend (for embedders and tests), as if the first device
    /// touch had selected it.
    ///
    /// # Errors
    ///
    /// `XPU-E-BACKEND` if a backend is already active.
    pub fn set_backend(&mut self, backend: Arc<dyn Backend>) -> Result<(), RuntimeError> {
        if let Some(active) = &self.xpu.backend {
            return Err(RuntimeError::new(
                ErrorCode::XpuBackend,
                format!(
                    "backend {} is not available: backend {} is already active",
                    backend.capabilities().name,
                    active.capabilities().name
                ),
            ));
        }
        self.xpu.poison = std::env::var("CAJETA_XPU_POISON").is_ok_and(|v| v == "1");
        backend.prepare(&self.module);
        self.xpu.backend = Some(backend);
        Ok(())
    }

    /// The active backend's name (`cpu`, …), or `None` before the first device touch.
    pub fn active_backend(&self) -> Option<&'static str> {
        self.xpu.backend.as_ref().map(|b| b.capabilities().name)
    }

    /// Device memory statistics of the active backend (all zero if no device was touched).
    pub fn mem_stats(&self) -> MemStats {
        self.xpu
            .backend
            .as_ref()
            .map_or_else(MemStats::default, |b| b.mem_stats())
    }

    /// The element type of buffer register `r` of the running function.
    fn buffer_elem(&self, r: u16) -> Result<Scalar, XErr> {
        match self.current_reg_type(r) {
            Some(Type::Buffer(s)) => Ok(s),
            _ => Err(err(
                ErrorCode::Call,
                format!("r{r} is not a buffer register (the module was not verified)"),
            )),
        }
    }

    /// Allocates storage for `len` elements of `elem` (`XPU-E-OOM`, also when the byte count
    /// overflows 64 bits).
    fn alloc_storage(
        &self,
        backend: &Arc<dyn Backend>,
        elem: Scalar,
        len: u64,
        kind: MemoryKind,
    ) -> Result<Rc<Storage>, XErr> {
        let bytes = u128::from(len) * elem.size() as u128;
        let Ok(bytes64) = u64::try_from(bytes) else {
            return Err(err(
                ErrorCode::XpuOom,
                format!(
                    "cannot allocate {bytes} bytes of {} memory on backend {}",
                    kind.name(),
                    backend.capabilities().name
                ),
            ));
        };
        // (Not what is in use: that depends on when the executor last collected garbage.)
        if let Err(AllocError::Memory { limit, .. }) = self.heap.check_room(bytes64) {
            return Err(err(
                ErrorCode::XpuOom,
                format!(
                    "cannot allocate {bytes} bytes of {} memory on backend {}: memory limit \
                     exceeded (the limit is {limit} bytes)",
                    kind.name(),
                    backend.capabilities().name
                ),
            ));
        }
        let id = backend.alloc(bytes64, kind, self.xpu.poison)?;
        Ok(Storage::new(
            Arc::clone(backend),
            id,
            bytes64,
            self.heap.device_meter(),
        ))
    }

    /// Adds a device object to the table.
    fn add_object(&mut self, obj: Obj) -> Result<u64, XErr> {
        // On failure the object is dropped here, which releases its storage or stream.
        self.heap.alloc(obj).map_err(|e| {
            let (code, message) = self.describe(e.into(), None);
            err(code, message)
        })
    }

    /// `buf.new` (`allocate`: zero-filled Device storage) and `buf.empty` (unallocated).
    fn buf_new(&mut self, base: usize, a: u16, b: u16, allocate: bool) -> Result<(), XErr> {
        let backend = self.device()?;
        let elem = self.buffer_elem(a)?;
        let len = self.reg(base, usize::from(b));
        let kind = MemoryKind::Device;
        let state = if allocate {
            BufState::Owned(self.alloc_storage(&backend, elem, len, kind)?)
        } else {
            BufState::Unallocated
        };
        let h = self.add_object(Obj::Buffer(KernelBuffer {
            elem,
            len,
            kind,
            state,
        }))?;
        self.set_reg(base, a, h);
        Ok(())
    }

    /// The buffer `h` for method `method`: `E-NULL` for null, `XPU-E-FREED` for a dropped
    /// buffer (a stale handle, LANGUAGE §6.3).
    fn buffer(&self, h: u64, method: &str) -> Result<&KernelBuffer, XErr> {
        match self.heap.get(h) {
            Some(Obj::Buffer(buf)) => Ok(buf),
            _ if h == 0 => Err(err(
                ErrorCode::Null,
                format!("null reference: {method}() on null buffer"),
            )),
            _ => Err(freed(method, "a freed buffer")),
        }
    }

    /// Mutable form of [`Vm::buffer`].
    fn buffer_mut(&mut self, h: u64, method: &str) -> Result<&mut KernelBuffer, XErr> {
        match self.heap.get_mut(h) {
            Some(Obj::Buffer(buf)) => Ok(buf),
            _ if h == 0 => Err(err(
                ErrorCode::Null,
                format!("null reference: {method}() on null buffer"),
            )),
            _ => Err(freed(method, "a freed buffer")),
        }
    }

    /// `buf.len`: the length, also after `free()` or a drop (XPU §2.1).
    fn buf_len(&mut self, base: usize, a: u16, b: u16) -> Result<(), XErr> {
        let h = self.reg(base, usize::from(b));
        let len = match self.heap.dropped_buffer_len(h) {
            Some(len) => len,
            None => self.buffer(h, "length")?.len,
        };
        self.set_reg(base, a, len);
        Ok(())
    }

    /// `buf.allocate`: releases the current storage, then allocates `length()` elements of
    /// kind `r[b]` (-1: the current kind).
    fn buf_allocate(&mut self, base: usize, a: u16, b: u16, keep_kind: bool) -> Result<(), XErr> {
        let h = self.reg(base, usize::from(a));
        let k = self.reg(base, usize::from(b)) as i64;
        let buf = self.buffer(h, "allocate")?;
        if buf.is_view() {
            return Err(err(
                ErrorCode::XpuSlice,
                "allocate() on a view: a slice uses its parent's storage and cannot allocate",
            ));
        }
        let kind = if keep_kind {
            buf.kind
        } else {
            MemoryKind::from_ordinal(k).ok_or_else(|| {
                err(
                    ErrorCode::XpuKind,
                    format!(
                        "allocate({k}): not a MemoryKind ordinal (0 Device, 1 Pinned, 2 Unified)"
                    ),
                )
            })?
        };
        let (elem, len) = (buf.elem, buf.len);
        let backend = self.device()?;
        // Release first, so a reallocation never holds both storages (peak memory).
        self.buffer_mut(h, "allocate")?.free();
        let storage = self.alloc_storage(&backend, elem, len, kind)?;
        let buf = self.buffer_mut(h, "allocate")?;
        buf.state = BufState::Owned(storage);
        buf.kind = kind;
        Ok(())
    }

    /// `buf.free`: idempotent; nothing on a view, an unallocated or a dropped buffer.
    fn buf_free(&mut self, base: usize, a: u16) -> Result<(), XErr> {
        let h = self.reg(base, usize::from(a));
        match self.heap.get_mut(h) {
            Some(Obj::Buffer(buf)) => buf.free(),
            _ if h == 0 => {
                return Err(err(
                    ErrorCode::Null,
                    "null reference: free() on null buffer",
                ))
            }
            _ => {}
        }
        Ok(())
    }

    /// `buf.slice a b c`: `r[a]` := a view of `r[b]` at offset `r[c]` with `r[c+1]` elements.
    fn buf_slice(&mut self, base: usize, a: u16, b: u16, c: u16) -> Result<(), XErr> {
        let off = self.reg(base, usize::from(c));
        let count = self.reg(base, usize::from(c) + 1);
        let src = self.buffer(self.reg(base, usize::from(b)), "slice")?;
        let (storage, parent_off) = live(src, "slice")?;
        if off.checked_add(count).is_none_or(|end| end > src.len) {
            return Err(err(
                ErrorCode::XpuSlice,
                format!("slice({off}, {count}) exceeds buffer length {}", src.len),
            ));
        }
        let view = KernelBuffer {
            elem: src.elem,
            len: count,
            kind: src.kind,
            state: BufState::View {
                storage: Rc::clone(storage),
                offset: parent_off + off,
            },
        };
        let h = self.add_object(Obj::Buffer(view))?;
        self.set_reg(base, a, h);
        Ok(())
    }

    /// The buffer transfers: `upload`, `download`, their prefix and async forms, `hostStore`
    /// and `hostLoad` (buffer `r[a]`, host array `r[b]`, count or stream `r[c]`).
    fn transfer(&mut self, base: usize, a: u16, b: u16, c: u16, x: Xfer) -> Result<(), XErr> {
        let bh = self.reg(base, usize::from(a));
        let ah = self.reg(base, usize::from(b));
        let cv = self.reg(base, usize::from(c));
        let name = x.name;
        if bh == 0 {
            return Err(err(
                ErrorCode::Null,
                format!("null reference: {name}() on null buffer"),
            ));
        }
        if ah == 0 {
            return Err(err(
                ErrorCode::Null,
                format!("null reference: {name}() with null host array"),
            ));
        }
        if x.stream && cv == 0 {
            return Err(err(
                ErrorCode::Null,
                format!("null reference: {name}() on null stream"),
            ));
        }
        let buf = self.buffer(bh, name)?;
        let (storage, offset) = live(buf, name)?;
        let (id, elem, n, kind) = (storage.id(), buf.elem, buf.len, buf.kind);
        if x.stream {
            self.live_stream(cv, name)?;
        }
        let backend = self.device()?;
        let arr_type = self.current_reg_type(b);
        let dropped = || {
            let what = arr_type.map_or_else(|| "array".to_string(), |t| t.to_string());
            err(ErrorCode::Dropped, format!("use of dropped {what} object"))
        };
        let h = match self.heap.get(ah) {
            Some(Obj::Array(arr)) if arr.elem == Elem::Scalar(elem) => arr.data.len() as u64,
            _ => return Err(dropped()),
        };
        let count = if x.prefix {
            (cv as i64).max(0).unsigned_abs().min(n).min(h)
        } else if h != n {
            return Err(err(
                ErrorCode::XpuLength,
                format!("{name}: host array has {h} elements, buffer has {n}"),
            ));
        } else {
            n
        };
        if x.host && !backend.host_accessible(id) {
            return Err(err(
                ErrorCode::XpuHostAccess,
                format!(
                    "{name} on {} memory is not host-accessible on backend {}",
                    kind.name(),
                    backend.capabilities().name
                ),
            ));
        }
        let size = elem.size() as u64;
        // `count <= h`, the host array's length, so the byte count fits in memory.
        let bytes = (count * size) as usize;
        let byte_off = offset * size;
        match self.heap.get_mut(ah) {
            Some(Obj::Array(arr)) => {
                if x.upload {
                    backend.write(id, byte_off, &arr.data.as_bytes()[..bytes]);
                } else {
                    backend.read(id, byte_off, &mut arr.data.as_bytes_mut()[..bytes]);
                }
                if x.stream {
                    Ok(())
                } else {
                    backend.transfer_fault().map_err(XErr::Kernel)
                }
            }
            _ => Err(dropped()),
        }
    }

    /// The stream `h`, which must be usable for work (`E-NULL`; `XPU-E-FREED` when destroyed
    /// or dropped).
    fn live_stream(&self, h: u64, method: &str) -> Result<StreamId, XErr> {
        match self.heap.get(h) {
            Some(Obj::Stream(s)) if !s.destroyed => Ok(s.id),
            _ if h == 0 => Err(err(
                ErrorCode::Null,
                format!("null reference: {method}() on null stream"),
            )),
            _ => Err(freed(method, "a destroyed stream")),
        }
    }

    /// `stream.current`: the default stream (one object per VM, which `drop` never releases).
    fn stream_current(&mut self, base: usize, a: u16) -> Result<(), XErr> {
        let backend = self.device()?;
        let h = self.xpu.default_stream;
        let h = if matches!(self.heap.get(h), Some(Obj::Stream(s)) if s.is_default()) {
            h
        } else {
            let h = self.add_object(Obj::Stream(KernelStream {
                backend,
                id: StreamId::DEFAULT,
                destroyed: false,
            }))?;
            self.xpu.default_stream = h;
            h
        };
        self.set_reg(base, a, h);
        Ok(())
    }

    /// `stream.create`: a new stream (destroyed by `destroy()` or its drop).
    fn stream_create(&mut self, base: usize, a: u16) -> Result<(), XErr> {
        let backend = self.device()?;
        let id = backend.stream_create();
        let h = self.add_object(Obj::Stream(KernelStream {
            backend,
            id,
            destroyed: false,
        }))?;
        self.set_reg(base, a, h);
        Ok(())
    }

    /// `stream.sync`: waits for the stream's work (default stream: all work) and reports a
    /// pending kernel fault; nothing once destroyed or dropped.
    fn stream_sync(&mut self, base: usize, a: u16) -> Result<(), XErr> {
        let h = self.reg(base, usize::from(a));
        let (backend, id) = match self.heap.get(h) {
            Some(Obj::Stream(s)) if !s.destroyed => (Arc::clone(&s.backend), s.id),
            _ if h == 0 => {
                return Err(err(
                    ErrorCode::Null,
                    "null reference: sync() on null stream",
                ))
            }
            _ => return Ok(()),
        };
        backend.stream_sync(id).map_err(XErr::Kernel)
    }

    /// `stream.destroy`: idempotent; nothing on the default stream or a dropped stream.
    fn stream_destroy(&mut self, base: usize, a: u16) -> Result<(), XErr> {
        let h = self.reg(base, usize::from(a));
        match self.heap.get_mut(h) {
            Some(Obj::Stream(s)) => s.destroy(),
            _ if h == 0 => {
                return Err(err(
                    ErrorCode::Null,
                    "null reference: destroy() on null stream",
                ))
            }
            _ => {}
        }
        Ok(())
    }

    /// The event `h` with its backend and recording, if usable (`E-NULL`; `XPU-E-FREED` when
    /// destroyed or dropped).
    fn live_event(
        &self,
        h: u64,
        method: &str,
    ) -> Result<(Arc<dyn Backend>, Option<cajeta_backends::EventId>), XErr> {
        match self.heap.get(h) {
            Some(Obj::Event(e)) if !e.destroyed => Ok((Arc::clone(&e.backend), e.recorded)),
            _ if h == 0 => Err(err(
                ErrorCode::Null,
                format!("null reference: {method}() on null event"),
            )),
            _ => Err(freed(&format!("{method}()"), "a destroyed event")),
        }
    }

    /// `event.create`: a new, never-recorded event (a device touch; released by `destroy()`
    /// or its drop).
    fn event_create(&mut self, base: usize, a: u16) -> Result<(), XErr> {
        let backend = self.device()?;
        let h = self.add_object(Obj::Event(Event {
            backend,
            recorded: None,
            destroyed: false,
        }))?;
        self.set_reg(base, a, h);
        Ok(())
    }

    /// `event.record`: `e.recordOn(s)` marks the work submitted to `s` so far; a new
    /// recording replaces the previous one.
    fn event_record(&mut self, base: usize, a: u16, b: u16) -> Result<(), XErr> {
        let h = self.reg(base, usize::from(a));
        let (backend, _) = self.live_event(h, "recordOn")?;
        let stream = self.live_stream(self.reg(base, usize::from(b)), "recordOn")?;
        let id = backend.event_record(stream);
        if let Some(Obj::Event(e)) = self.heap.get_mut(h) {
            e.record(id);
        } else {
            backend.event_release(id);
        }
        Ok(())
    }

    /// `event.waithost`: blocks until the event is signalled (never recorded: at once) and
    /// reports a pending kernel fault of the work it covers.
    fn event_wait_host(&mut self, base: usize, a: u16) -> Result<(), XErr> {
        let h = self.reg(base, usize::from(a));
        match self.live_event(h, "waitHost")? {
            (backend, Some(id)) => backend.event_wait(id).map_err(XErr::Kernel),
            (_, None) => Ok(()),
        }
    }

    /// `event.query`: whether the event is signalled (never recorded: true).
    fn event_query(&mut self, base: usize, a: u16, b: u16) -> Result<(), XErr> {
        let h = self.reg(base, usize::from(b));
        let done = match self.live_event(h, "query")? {
            (backend, Some(id)) => backend.event_query(id),
            (_, None) => true,
        };
        self.set_reg(base, a, u64::from(done));
        Ok(())
    }

    /// `event.destroy`: idempotent; nothing on a dropped event.
    fn event_destroy(&mut self, base: usize, a: u16) -> Result<(), XErr> {
        let h = self.reg(base, usize::from(a));
        match self.heap.get_mut(h) {
            Some(Obj::Event(e)) => e.destroy(),
            _ if h == 0 => {
                return Err(err(
                    ErrorCode::Null,
                    "null reference: destroy() on null event",
                ))
            }
            _ => {}
        }
        Ok(())
    }

    /// `stream.waitfor`: later work on the stream waits for the event (never recorded:
    /// nothing to wait for).
    fn stream_wait_for(&mut self, base: usize, a: u16, b: u16) -> Result<(), XErr> {
        let stream = self.live_stream(self.reg(base, usize::from(a)), "waitFor")?;
        let eh = self.reg(base, usize::from(b));
        if eh == 0 {
            return Err(err(
                ErrorCode::Null,
                "null reference: waitFor(null) on a stream",
            ));
        }
        if let (backend, Some(id)) = self.live_event(eh, "waitFor")? {
            backend.stream_wait_event(stream, id);
        }
        Ok(())
    }

    /// `device.force`: fixes the selection before the first device touch; afterwards a no-op
    /// if it names the active backend, else `XPU-E-BACKEND` (as for unknown names).
    fn device_force(&mut self, base: usize, a: u16) -> Result<(), XErr> {
        let h = self.reg(base, usize::from(a));
        let Some(name) = self.heap.str(h).map(str::to_string) else {
            return Err(err(ErrorCode::Null, "null reference: Device.force(null)"));
        };
        if !BACKEND_NAMES.contains(&name.as_str()) {
            return Err(unavailable(
                &name,
                "unknown backend name in Device.force (expected cpu, vulkan, cuda or auto)",
            ));
        }
        match &self.xpu.backend {
            None => self.xpu.forced = Some(name),
            Some(active) => {
                let active = active.capabilities().name;
                // `auto` names whatever the first touch resolved to.
                if name != "auto" && name != active {
                    return Err(unavailable(
                        &name,
                        &format!(
                            "backend {active} is already active (Device.force after the first device touch)"
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// `device.backend`: the active backend's name (a device touch).
    fn device_backend(&mut self, base: usize, a: u16) -> Result<(), XErr> {
        let name = self.device()?.capabilities().name;
        let h = self
            .new_string(name.to_string())
            .map_err(|_| err(ErrorCode::Size, "object table full (2^32 - 1 live objects)"))?;
        self.set_reg(base, a, h);
        Ok(())
    }

    /// `device.query a b`: the `Device` query `b` (XPU §2.10) into `r[a]`.
    fn device_query(&mut self, base: usize, a: u16, b: u16) -> Result<(), XErr> {
        let backend = self.device()?;
        let v: u64 = match b {
            0 => u64::from(backend.capabilities().wave_width),
            1 => backend.memory_bytes() as u64,
            2 => backend.compute_units() as i64 as u64,
            3 => u64::from(backend.capabilities().device_memory_host_accessible),
            // A refused launch ends the program until exceptions exist (T3), so a program
            // that is still running has seen none.
            4 => 0,
            // The backend's own (cpu: its workers' cap, set or configured), else the cap
            // the program set: a getter reads back what its setter was given.
            5 => match (backend.worker_cap(), self.xpu.worker_cap) {
                (0, Some(set)) => set as u64,
                (cap, _) => cap as u64,
            },
            _ => {
                return Err(err(
                    ErrorCode::Call,
                    format!("unknown device query {b} (the module was not verified)"),
                ))
            }
        };
        self.set_reg(base, a, v);
        Ok(())
    }

    /// `device.kernelok a b`: whether the module has a kernel named `r[b]` (simple,
    /// `Class.k` or qualified name) that the active backend can run.
    fn device_kernel_ok(&mut self, base: usize, a: u16, b: u16) -> Result<(), XErr> {
        let (backend, module, found) = self.kernel_named(base, b, "Device.kernelAvailable")?;
        let ok = found.is_some_and(|k| backend.kernel_available(&module, k as u32));
        self.set_reg(base, a, u64::from(ok));
        Ok(())
    }

    /// `device.kernelwave a b` (`KernelManifest.of`, XPU §2.13): the wave width the active
    /// backend runs the kernel named `r[b]` at, or 0 when it cannot run it: no such kernel,
    /// a kernel the backend refuses (`kernel_available`), or an `@Wave` width it does not
    /// support (which its launches would refuse).
    fn kernel_wave(&mut self, base: usize, a: u16, b: u16) -> Result<(), XErr> {
        let (backend, module, found) = self.kernel_named(base, b, "KernelManifest.of")?;
        let width = found
            .filter(|&k| backend.kernel_available(&module, k as u32))
            .map(|k| match KernelAttrs::of(&module.functions[k]).wave_width {
                Some(w) if backend.supports_wave_width(w) => w,
                Some(_) => 0,
                None => backend.capabilities().wave_width,
            })
            .unwrap_or(0);
        self.set_reg(base, a, u64::from(width));
        Ok(())
    }

    /// `device.kernelname a b` (`KernelManifest.kernel`): the qualified name of the kernel
    /// named `r[b]`, or null.
    fn kernel_name(&mut self, base: usize, a: u16, b: u16) -> Result<(), XErr> {
        let (_, module, found) = self.kernel_named(base, b, "KernelManifest.of")?;
        let h = match found {
            Some(k) => self
                .new_string(module.functions[k].name.clone())
                .map_err(|_| err(ErrorCode::Size, "object table full (2^32 - 1 live objects)"))?,
            None => 0,
        };
        self.set_reg(base, a, h);
        Ok(())
    }

    /// The active backend (a device touch), the module and the index of its kernel named by
    /// the string `r[b]` (simple, `Class.k` or qualified name; the first match); E-NULL
    /// naming `what` for a null name.
    fn kernel_named(&mut self, base: usize, b: u16, what: &str) -> Result<NamedKernel, XErr> {
        let h = self.reg(base, usize::from(b));
        let Some(name) = self.heap.str(h).map(str::to_string) else {
            return Err(err(
                ErrorCode::Null,
                format!("null reference: {what}(null)"),
            ));
        };
        let backend = self.device()?;
        let module = Arc::clone(&self.module);
        let found = module.functions.iter().position(|f| {
            f.kind == cajeta_bytecode::FnKind::Kernel
                && (f.name == name
                    || f.name.ends_with(&format!(".{name}"))
                    || f.simple_name() == name)
        });
        Ok((backend, module, found))
    }

    /// `device.timermark a b c`: a host-timed `KernelTimer` mark (XPU §2.13). The clock is
    /// read once stream `r[b]` has run what was submitted to it so far, so the reading is
    /// taken when the stream reaches the mark (on `cpu`, whose launches are synchronous,
    /// at the call). A fault of that work stays pending: a mark is no synchronisation point.
    fn timer_mark(&mut self, base: usize, a: u16, b: u16, c: u16) -> Result<(), XErr> {
        let method = timer_method(c);
        let h = self.reg(base, usize::from(b));
        let (backend, id) = match self.heap.get(h) {
            Some(Obj::Stream(s)) if !s.destroyed => (Arc::clone(&s.backend), s.id),
            _ if h == 0 => {
                return Err(err(
                    ErrorCode::Null,
                    format!("null reference: {method}(null)"),
                ))
            }
            _ => return Err(freed(method, "a destroyed stream")),
        };
        // Not a synchronisation point (XPU §7.3): a fault of the work waited for stays
        // pending for the next one.
        backend.stream_wait(id);
        let now = crate::interp::clock(1);
        self.set_reg(base, a, now as u64);
        Ok(())
    }

    /// `launch a b`: kernel `F[b]` with the window at `r[a]` (stream, grid x/y/z, block x/y/z,
    /// shared bytes, then the kernel's parameters), per XPU §3.4's run-time steps.
    fn launch(&mut self, base: usize, a: u16, b: u16) -> Result<(), XErr> {
        let module = Arc::clone(&self.module);
        let Some(k) = module.functions.get(usize::from(b)) else {
            return Err(err(
                ErrorCode::Call,
                format!(
                    "launch of function #{b}, which does not exist (the module was not verified)"
                ),
            ));
        };
        let a = usize::from(a);
        let kname = k.simple_name();
        // Step 2: the device touch.
        let backend = self.device()?;
        let caps = backend.capabilities();
        // Step 3: validation.
        let dims = [0, 1, 2, 3, 4, 5].map(|i| self.reg(base, a + 1 + i) as i64);
        let shared = self.reg(base, a + 7) as i64;
        let dims = check_geometry(k, dims, shared, &backend).map_err(|reason| {
            err(
                ErrorCode::XpuLaunch,
                format!("kernel {kname} refused by backend {}: {reason}", caps.name),
            )
        })?;
        let sh = self.reg(base, a);
        let stream = match self.heap.get(sh) {
            Some(Obj::Stream(s)) if !s.destroyed => s.id,
            _ if sh == 0 => {
                return Err(err(
                    ErrorCode::Null,
                    format!("null reference: launch of {kname} on null stream"),
                ))
            }
            _ => return Err(freed(&format!("launch of {kname}"), "a destroyed stream")),
        };
        let mut args = Vec::with_capacity(usize::from(k.params));
        for p in 0..usize::from(k.params) {
            let cell = self.reg(base, a + 8 + p);
            let arg = match k.regs.get(p) {
                Some(Type::Scalar(_)) => KernelArg::Scalar(cell),
                Some(Type::Buffer(_)) => self.buffer_arg(k, p, cell)?,
                Some(t) => {
                    return Err(err(
                        ErrorCode::XpuLaunch,
                        format!(
                            "kernel {kname} refused by backend {}: parameter {} has type {t}, which kernels cannot take",
                            caps.name,
                            param_name(k, p)
                        ),
                    ))
                }
                None => KernelArg::Scalar(cell),
            };
            args.push(arg);
        }
        // Step 4: an empty grid runs nothing.
        if dims.grid.contains(&0) || dims.block.contains(&0) {
            return Ok(());
        }
        // Steps 5–6: submit; `cpu` completes the launch and reports its fault here.
        match backend.launch(&module, u32::from(b), dims, &args, stream) {
            Ok(()) => Ok(()),
            Err(LaunchError::Refused(e)) => Err(e.into()),
            Err(LaunchError::Fault(f)) => Err(XErr::Kernel(f)),
        }
    }

    /// The kernel argument for buffer parameter `p` of `k` holding handle `h`.
    fn buffer_arg(&self, k: &Function, p: usize, h: u64) -> Result<KernelArg, XErr> {
        let kname = k.simple_name();
        let freed_arg = |what: &str| {
            err(
                ErrorCode::XpuFreed,
                format!(
                    "launch of {kname} on {what} (argument {})",
                    param_name(k, p)
                ),
            )
        };
        let buf = match self.heap.get(h) {
            Some(Obj::Buffer(buf)) => buf,
            _ if h == 0 => {
                return Err(err(
                    ErrorCode::Null,
                    format!(
                        "null reference: launch of {kname}: argument {} is null",
                        param_name(k, p)
                    ),
                ))
            }
            _ => return Err(freed_arg("a freed buffer")),
        };
        let (storage, offset) = live(buf, "").map_err(|_| freed_arg(state_name(buf)))?;
        Ok(KernelArg::Buffer {
            storage: storage.id(),
            offset,
            len: buf.len,
        })
    }

    /// Program end (LANGUAGE §5.8 step 4, after the entry's drops): drops the objects owned
    /// by static fields in reverse initialisation order — the module's finalisers, which run
    /// destructors — then releases whatever statics still own (objects a destructor stored,
    /// everything after a failed finaliser), then waits for all device work.
    ///
    /// # Errors
    ///
    /// A runtime error raised by a destructor (the finalisers after it do not run: an error
    /// ends the program without destructors, §6.4), else a device fault found while waiting
    /// (no host frames: the program has ended).
    pub fn finish(&mut self) -> Result<(), RuntimeError> {
        let fini = self.module.fini.clone();
        let failed = fini.into_iter().find_map(|f| self.call_index(f, &[]).err());
        self.release_statics();
        if let Some(backend) = self.xpu.backend.clone() {
            let synced = backend
                .stream_sync(StreamId::DEFAULT)
                .map_err(|f| self.xpu_error(XErr::Kernel(f), None));
            if failed.is_none() {
                synced?;
            }
        }
        failed.map_or(Ok(()), Err)
    }

    /// Releases what the statics own, last static first, without running destructors (the
    /// normal end ran them through the module's `fini` functions; after a runtime error none
    /// run, LANGUAGE §6.4) and clears them.
    pub(crate) fn release_statics(&mut self) {
        for s in (0..self.statics.len()).rev() {
            let ty = self.module.statics[s].ty;
            if ty.is_ref() && ty != Type::Str {
                let h = std::mem::take(&mut self.statics[s]);
                if self.static_owns(s) {
                    self.release_tree(h);
                }
            }
        }
    }

    /// Whether static `s` owns its object: the compiler gives a static of an owned kind a
    /// hidden owns-flag, the static `pkg.Class.$own.name` right after it (LANGUAGE §6.2); a
    /// static without one (older bytecode) counts as owning.
    pub(crate) fn static_owns(&self, s: usize) -> bool {
        match self.owns_flag(s) {
            Some(f) => self.statics.get(f).is_some_and(|&c| c != 0),
            None => true,
        }
    }

    /// The index of static `s`'s hidden owns-flag, if it has one.
    pub(crate) fn owns_flag(&self, s: usize) -> Option<usize> {
        let name = &self.module.statics[s].name;
        let (class, field) = name.rsplit_once('.')?;
        let f = self.module.statics.get(s + 1)?;
        (f.name == format!("{class}.$own.{field}")).then_some(s + 1)
    }

    /// Releases object `h` and, first, what its fields and elements hold (the drops the
    /// compiler would emit for owning fields, LANGUAGE §6.5; at program end every such
    /// reference is the last one).
    fn release_tree(&mut self, h: u64) {
        let mut work = vec![h];
        while let Some(h) = work.pop() {
            let module = &self.module;
            match self.heap.get(h) {
                Some(Obj::Instance(inst)) => {
                    if let Some(class) = module.classes.get(inst.class as usize) {
                        for (f, cell) in class.fields.iter().zip(inst.fields.iter()) {
                            if f.ty.is_ref() && f.ty != Type::Str {
                                work.push(*cell);
                            }
                        }
                    }
                }
                Some(Obj::Array(arr)) if matches!(arr.elem, Elem::Object(_)) => {
                    if let crate::heap::ArrData::Ref(cells) = &arr.data {
                        work.extend(cells.iter().copied());
                    }
                }
                _ => {}
            }
            self.heap.release(h);
        }
    }
}

/// `XPU-E-FREED`: `<operation> on <what>`.
impl Vm {
    /// A new owning Device buffer of `len` elements of `elem` for the embedding API
    /// (`crate::Buffer`), filled with `data` (native element bytes, `len` elements) or zeros;
    /// returns its handle. Selects the backend if this is the first device touch.
    pub(crate) fn host_new_buffer(
        &mut self,
        elem: Scalar,
        len: u64,
        data: Option<&[u8]>,
    ) -> Result<u64, RuntimeError> {
        let r = (|| {
            let backend = self.device()?;
            let kind = MemoryKind::Device;
            let storage = self.alloc_storage(&backend, elem, len, kind)?;
            if let Some(bytes) = data.filter(|b| !b.is_empty()) {
                backend.write(storage.id(), 0, bytes);
            }
            self.add_object(Obj::Buffer(KernelBuffer {
                elem,
                len,
                kind,
                state: BufState::Owned(storage),
            }))
        })();
        r.map_err(|e| self.xpu_error(e, None))
    }

    /// Copies between buffer `h` (of `elem`) and host bytes for the embedding API: reads all
    /// its elements into `read`, or writes `write` over them (each exactly the buffer's size
    /// in bytes, else `XPU-E-LENGTH`). Blocking: earlier device work on the buffer completes
    /// first (the backends order host copies after it).
    pub(crate) fn host_buffer_copy(
        &mut self,
        h: u64,
        elem: Scalar,
        read: Option<&mut Vec<u8>>,
        write: Option<&[u8]>,
    ) -> Result<(), RuntimeError> {
        let method = if write.is_some() { "write" } else { "read" };
        let r = (|| {
            let buf = self.buffer(h, method)?;
            if buf.elem != elem {
                return Err(freed(method, "a buffer of another element type"));
            }
            let (storage, offset) = live(buf, method)?;
            let (id, len) = (storage.id(), buf.len);
            let backend = self.device()?;
            let size = elem.size() as u64;
            if let Some(bytes) = write {
                if bytes.len() as u64 != len * size {
                    return Err(err(
                        ErrorCode::XpuLength,
                        format!(
                            "{method}: host data has {} elements, buffer has {len}",
                            bytes.len() as u64 / size
                        ),
                    ));
                }
                backend.write(id, offset * size, bytes);
            }
            if let Some(out) = read {
                let n = usize::try_from(len * size).map_err(|_| {
                    err(
                        ErrorCode::XpuOom,
                        format!("{method}: {len} elements do not fit in host memory"),
                    )
                })?;
                out.resize(n, 0);
                backend.read(id, offset * size, out);
            }
            backend.transfer_fault().map_err(XErr::Kernel)
        })();
        r.map_err(|e| self.xpu_error(e, None))
    }
}

/// The active backend, the module and the index of the kernel a name found (if any).
type NamedKernel = (Arc<dyn Backend>, Arc<Module>, Option<usize>);

/// `device.timerlive a b`: XPU-E-FREED when the `KernelTimer` state word `state` has the
/// destroyed bit (4; the compiler's layout, `check/xpu_t2.rs`), naming method `b`.
fn timer_live(state: u64, b: u16) -> Result<(), XErr> {
    if state & 4 == 0 {
        Ok(())
    } else {
        Err(freed(timer_method(b), "a destroyed KernelTimer"))
    }
}

/// The `KernelTimer` method named by a `device.timermark`/`device.timerlive` selector.
fn timer_method(selector: u16) -> &'static str {
    match selector {
        0 => "KernelTimer.begin",
        1 => "KernelTimer.end",
        2 => "KernelTimer.elapsedNanos",
        _ => "a KernelTimer method",
    }
}

fn freed(operation: &str, what: &str) -> XErr {
    err(ErrorCode::XpuFreed, format!("{operation} on {what}"))
}

/// How a buffer without usable storage reads in messages.
fn state_name(buf: &KernelBuffer) -> &'static str {
    match buf.state {
        BufState::Unallocated => "an unallocated buffer",
        _ => "a freed buffer",
    }
}

/// The storage record and element offset of a usable buffer, else `XPU-E-FREED` for
/// `method` (freed, unallocated, or a view of released storage).
fn live<'b>(buf: &'b KernelBuffer, method: &str) -> Result<(&'b Rc<Storage>, u64), XErr> {
    buf.live_storage()
        .ok_or_else(|| freed(method, state_name(buf)))
}

/// The source name of parameter `p` of `k` (from the debug table), or `#p`.
fn param_name(k: &Function, p: usize) -> String {
    k.locals
        .iter()
        .find(|l| usize::from(l.reg) == p)
        .map_or_else(|| format!("#{p}"), |l| l.name.clone())
}

/// XPU §3.4 step 3 (geometry and shared memory): the dimensions as [`Dims`], or the reason
/// for refusing the launch.
fn check_geometry(
    k: &Function,
    dims: [i64; 6],
    shared: i64,
    backend: &Arc<dyn Backend>,
) -> Result<Dims, String> {
    const AXES: [&str; 3] = ["x", "y", "z"];
    let caps = backend.capabilities();
    let mut d = [0u32; 6];
    for (i, &v) in dims.iter().enumerate() {
        let what = if i < 3 { "grid" } else { "block" };
        d[i] = u32::try_from(v)
            .map_err(|_| format!("{what} {} = {v} is outside 0..4294967295", AXES[i % 3]))?;
    }
    let (grid, block) = ([d[0], d[1], d[2]], [d[3], d[4], d[5]]);
    for i in 0..3 {
        let items = u64::from(grid[i]) * u64::from(block[i]);
        if items > 1 << 32 {
            return Err(format!(
                "grid × block along {} is {items} items, more than 2^32",
                AXES[i]
            ));
        }
    }
    for i in 0..3 {
        if block[i] > caps.max_block[i] {
            return Err(format!(
                "block {} of {} exceeds the limit {}",
                AXES[i], block[i], caps.max_block[i]
            ));
        }
    }
    let items = block.iter().map(|&b| u64::from(b)).product::<u64>();
    if items > u64::from(caps.max_items) {
        return Err(format!(
            "block of {items} items exceeds the limit {}",
            caps.max_items
        ));
    }
    let attrs = cajeta_bytecode::KernelAttrs::of(k);
    // `@Wave(width = N)` (XPU §8.2): a backend that cannot run the width refuses the launch.
    if let Some(w) = attrs.wave_width {
        if !backend.supports_wave_width(w) {
            return Err(format!(
                "@Wave(width = {w}) is not supported (waves are {} lanes)",
                caps.wave_width
            ));
        }
    }
    // `@Occupancy(maxThreads = N)` (XPU §3.1).
    if let Some(max) = attrs.max_threads {
        if items > u64::from(max) {
            return Err(format!(
                "block of {items} items exceeds @Occupancy(maxThreads = {max})"
            ));
        }
    }
    for i in 0..3 {
        if grid[i] > caps.max_grid[i] {
            return Err(format!(
                "grid {} of {} exceeds the limit {}",
                AXES[i], grid[i], caps.max_grid[i]
            ));
        }
    }
    let Ok(dynamic) = u64::try_from(shared) else {
        return Err(format!("sharedBytes {shared} is negative"));
    };
    let fixed: u128 = k
        .shared
        .iter()
        .map(|s| s.elem.size() as u128 * u128::from(s.len))
        .sum();
    let total = fixed + u128::from(dynamic);
    if total > u128::from(caps.max_shared_bytes) {
        return Err(format!(
            "{total} bytes of shared memory exceed the limit {}",
            caps.max_shared_bytes
        ));
    }
    Ok(Dims {
        grid,
        block,
        shared_bytes: dynamic,
    })
}
