//! Compiled kernels for the CPU backend: a kernel (without calls or rendezvous) translated to
//! one native function per workgroup that runs the workgroup's items in order.
//!
//! The embedder (the `cpu` backend) fills a [`WorkgroupCtx`] — the memory table, the launch
//! frame and geometry, the workgroup's coordinates — and calls [`CompiledKernel::run`] once
//! per workgroup, from any number of threads at once (each with its own context and its own
//! shared-memory views). A nonzero status means an item faulted: [`WorkgroupCtx::fault`] says
//! which item, at which pc, and the access's index and handle, from which the embedder builds
//! the same fault report as its interpreter.
//!
//! What the translation does and refuses is described in `translate/device.rs`.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use cajeta_bytecode::{FnKind, Module};
use cranelift_codegen::ir::{types, AbiParam, UserFuncName};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::JITModule;
use cranelift_module::{Linkage, Module as _};

use crate::context::{JitContext, RuntimeHooks};
pub use crate::flatten::Origin;
pub use crate::translate::rendezvous_sites;
use crate::JitError;

/// A fault status: an element index out of range (`XPU-E-BOUNDS`).
pub const FAULT_BOUNDS: u32 = 16;
/// A fault status: a handle register naming no memory of the access's width (`E-NULL`).
pub const FAULT_BAD_HANDLE: u32 = 17;
/// The status of a resumable kernel stopped *before* the rendezvous (barrier or wave
/// collective) at [`WorkgroupCtx::stop_pc`], every register stored in [`WorkgroupCtx::regs`];
/// call it again with [`WorkgroupCtx::resume`] as it left it to continue after the rendezvous.
pub const STOP_RENDEZVOUS: u32 = 32;
// Integer division faults use `Status::DivZero` (1) and `Status::Overflow` (2).

/// One entry of the memory table: a buffer argument (handles `0..nbufs`) or a shared array of
/// the workgroup (handles `nbufs..`).
#[repr(C)]
#[derive(Copy, Clone, PartialEq, Eq, Debug, Default)]
pub struct MemView {
    /// Address of element 0.
    pub addr: u64,
    /// Number of elements.
    pub len: u64,
    /// Bytes per element (1, 2, 4 or 8).
    pub width: u64,
}

/// Where and why an item faulted.
#[repr(C)]
#[derive(Copy, Clone, PartialEq, Eq, Debug, Default)]
pub struct DeviceFault {
    /// The status returned (see the constants of this module).
    pub status: u32,
    /// The kernel pc of the faulting instruction.
    pub pc: u32,
    /// The item's coordinates in its workgroup.
    pub item: [u32; 3],
    /// The item's linear index.
    pub lane: u32,
    /// The element index of an out-of-bounds access.
    pub index: i64,
    /// The memory handle of a failed access.
    pub handle: u64,
    /// The register that held the handle.
    pub reg: u32,
}

/// What a workgroup function reads and writes. The pointers must stay valid for the call.
#[repr(C)]
#[derive(Debug)]
pub struct WorkgroupCtx {
    /// The memory table (at least one entry: pad an empty launch with a zero view).
    pub mems: *const MemView,
    /// Entries of the memory table.
    pub nmems: u64,
    /// Buffer arguments among them (shared arrays follow).
    pub nbufs: u64,
    /// The kernel's parameter cells (buffer parameters as memory handles).
    pub frame: *const u64,
    /// This workgroup's coordinates.
    pub group: [u64; 3],
    /// Items per workgroup per axis.
    pub block: [u64; 3],
    /// Workgroups per axis.
    pub grid: [u64; 3],
    /// The wave width.
    pub wave: u64,
    /// Resumable kernels only: the item's coordinates in its workgroup.
    pub item: [u64; 3],
    /// Resumable kernels only: the item's linear index and lane id.
    pub lin: u64,
    /// See `lin`.
    pub lane: u64,
    /// Resumable kernels only: the item's register file (the kernel's registers, read at
    /// entry and written at a rendezvous stop).
    pub regs: *mut u64,
    /// Resumable kernels only: 0 to start the item, else the rendezvous to continue after
    /// (written by the kernel when it stops).
    pub resume: u64,
    /// Resumable kernels only: the pc of the rendezvous the item stopped before.
    pub stop_pc: u64,
    /// Written when an item faults.
    pub fault: DeviceFault,
}

/// Byte offsets of the context and view fields compiled code touches.
pub(crate) mod off {
    use super::{DeviceFault, MemView, WorkgroupCtx};
    use std::mem::offset_of;

    pub const MEMS: i32 = offset_of!(WorkgroupCtx, mems) as i32;
    pub const NMEMS: i32 = offset_of!(WorkgroupCtx, nmems) as i32;
    pub const NBUFS: i32 = offset_of!(WorkgroupCtx, nbufs) as i32;
    pub const FRAME: i32 = offset_of!(WorkgroupCtx, frame) as i32;
    pub const GROUP: i32 = offset_of!(WorkgroupCtx, group) as i32;
    pub const BLOCK: i32 = offset_of!(WorkgroupCtx, block) as i32;
    pub const GRID: i32 = offset_of!(WorkgroupCtx, grid) as i32;
    pub const WAVE: i32 = offset_of!(WorkgroupCtx, wave) as i32;
    pub const ITEM: i32 = offset_of!(WorkgroupCtx, item) as i32;
    pub const LIN: i32 = offset_of!(WorkgroupCtx, lin) as i32;
    pub const LANE: i32 = offset_of!(WorkgroupCtx, lane) as i32;
    pub const REGS: i32 = offset_of!(WorkgroupCtx, regs) as i32;
    pub const RESUME: i32 = offset_of!(WorkgroupCtx, resume) as i32;
    pub const STOP_PC: i32 = offset_of!(WorkgroupCtx, stop_pc) as i32;
    const FAULT: usize = offset_of!(WorkgroupCtx, fault);
    pub const FAULT_STATUS: i32 = (FAULT + offset_of!(DeviceFault, status)) as i32;
    pub const FAULT_PC: i32 = (FAULT + offset_of!(DeviceFault, pc)) as i32;
    pub const FAULT_ITEM: i32 = (FAULT + offset_of!(DeviceFault, item)) as i32;
    pub const FAULT_LANE: i32 = (FAULT + offset_of!(DeviceFault, lane)) as i32;
    pub const FAULT_INDEX: i32 = (FAULT + offset_of!(DeviceFault, index)) as i32;
    pub const FAULT_HANDLE: i32 = (FAULT + offset_of!(DeviceFault, handle)) as i32;
    pub const FAULT_REG: i32 = (FAULT + offset_of!(DeviceFault, reg)) as i32;
    pub const VIEW_ADDR: i32 = offset_of!(MemView, addr) as i32;
    pub const VIEW_LEN: i32 = offset_of!(MemView, len) as i32;
    pub const VIEW_WIDTH: i32 = offset_of!(MemView, width) as i32;
    pub const VIEW_SIZE: i64 = std::mem::size_of::<MemView>() as i64;
}

/// The native workgroup function.
type WorkgroupFn = unsafe extern "C" fn(ctx: *mut WorkgroupCtx) -> u32;

/// Compilation options of a kernel.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct KernelOptions {
    /// Element index checks (`--xpu-checks`); handles are checked either way.
    pub checks: bool,
}

impl Default for KernelOptions {
    fn default() -> Self {
        KernelOptions { checks: true }
    }
}

/// The code memory of a compiled kernel, freed when the kernel is dropped.
struct Code(Mutex<Option<JITModule>>);

impl Drop for Code {
    fn drop(&mut self) {
        let jm = self
            .0
            .get_mut()
            .map_or_else(|e| e.into_inner().take(), Option::take);
        if let Some(jm) = jm {
            // SAFETY: the code is only reachable through the `CompiledKernel` that owns this
            // `Code`, which is being dropped: nothing can run it any more.
            unsafe { jm.free_memory() };
        }
    }
}

/// A kernel compiled to a workgroup function, or, for a kernel with rendezvous, to a
/// resumable item function.
pub struct CompiledKernel {
    entry: WorkgroupFn,
    /// A resumable item function (see [`STOP_RENDEZVOUS`]) rather than a workgroup loop.
    pub resumable: bool,
    /// The kernel's register count (the register file a resumable item needs), inlined
    /// callees' registers included.
    pub registers: usize,
    /// With inlined calls: where each compiled pc came from (see [`CompiledKernel::origin`]).
    origins: Option<Vec<Origin>>,
    /// Owns the code `entry` points into.
    _code: Code,
    /// Time spent compiling.
    pub compile_time: Duration,
    /// Machine code bytes.
    pub code_size: usize,
}

// SAFETY: the compiled code is immutable after finalisation and reentrant (it keeps no state
// outside the context it is given), and `Code` is only touched again when dropped.
unsafe impl Send for CompiledKernel {}
// SAFETY: as for `Send`: `run` only reads `entry`.
unsafe impl Sync for CompiledKernel {}

impl std::fmt::Debug for CompiledKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledKernel")
            .field("compile_time", &self.compile_time)
            .field("code_size", &self.code_size)
            .finish()
    }
}

impl CompiledKernel {
    /// Where the instruction at compiled pc `pc` (a fault's or a stop's) came from: its
    /// device frames, innermost first, and the register base of its function (subtract it
    /// from a register named in the fault). The kernel's own instructions map to themselves.
    pub fn origin(&self, kernel: u32, pc: u32) -> Origin {
        match self.origins.as_ref().and_then(|o| o.get(pc as usize)) {
            Some(o) => o.clone(),
            None => Origin {
                frames: vec![(kernel, pc)],
                base: 0,
            },
        }
    }

    /// A workgroup function: runs every item of the workgroup `ctx.group`; 0, or the status of
    /// the first faulting item (details in `ctx.fault`). A resumable item function: runs item
    /// `ctx.item` from `ctx.resume` until it returns (0), stops before a rendezvous
    /// ([`STOP_RENDEZVOUS`]) or faults.
    ///
    /// # Safety
    ///
    /// `ctx.mems` must point at `ctx.nmems >= 1` views, each describing `len` elements of
    /// `width` bytes at `addr`, aligned to `width`, valid for reads and writes during the
    /// call and accessed concurrently only with accesses of the same width (single-copy
    /// atomic on the host); `ctx.frame` must hold the kernel's parameter cells; the geometry
    /// must be the launch's (validated by the embedder).
    pub unsafe fn run(&self, ctx: &mut WorkgroupCtx) -> u32 {
        // SAFETY: the caller's contract above is the compiled code's.
        unsafe { (self.entry)(ctx) }
    }
}

/// Compiles kernel `kernel` of `module` (verified by the caller) to a workgroup function.
///
/// # Errors
///
/// A kernel this path does not compile (device calls, instructions it does not know) or a code
/// generation failure: the caller runs the kernel another way. A kernel with barriers or wave
/// collectives becomes a resumable item function.
pub fn compile_kernel(
    module: &Module,
    kernel: u32,
    options: KernelOptions,
) -> Result<CompiledKernel, JitError> {
    let start = Instant::now();
    let f = module
        .functions
        .get(kernel as usize)
        .ok_or_else(|| JitError::new(Some(kernel), None, "no such function".into()))?;
    if f.kind != FnKind::Kernel {
        return Err(JitError::new(Some(kernel), None, "not a kernel".into()));
    }
    let codegen = |e: cranelift_module::ModuleError| {
        JitError::new(Some(kernel), None, format!("code generation failed: {e}"))
    };
    // `@Device` calls are inlined first: the translator then sees one function.
    let flat = if f.code.iter().any(|i| i.op == cajeta_bytecode::Op::Call) {
        let flat = crate::flatten::flatten(module, kernel, crate::translate::rendezvous)
            .map_err(|why| JitError::new(Some(kernel), None, format!("not inlined: {why}")))?;
        let mut m = module.clone();
        m.functions[kernel as usize] = flat.func;
        Some((m, flat.origins))
    } else {
        None
    };
    let (module, origins) = match &flat {
        Some((m, origins)) => (m, Some(origins.clone())),
        None => (module, None),
    };
    let f = &module.functions[kernel as usize];
    let mut jm = crate::new_jit_module()?;
    let mut cctx = jm.make_context();
    let mut fctx = FunctionBuilderContext::new();
    let mut sig = jm.make_signature();
    sig.params.push(AbiParam::new(types::I64));
    sig.returns.push(AbiParam::new(types::I32));
    let id = jm
        .declare_function(&format!("cajeta_kernel{kernel}"), Linkage::Local, &sig)
        .map_err(codegen)?;
    cctx.func.signature = sig;
    cctx.func.name = UserFuncName::user(0, id.as_u32());
    let self_ref = jm.declare_func_in_func(id, &mut cctx.func);
    let hooks = no_hooks();
    let setup = crate::translate::Setup {
        module,
        func: kernel,
        hooks: &hooks,
        table: 0,
        fuel: false,
        inline_objects: false,
        self_ref,
        call_conv: jm.isa().default_call_conv(),
        frontend: jm.target_config(),
    };
    let builder = FunctionBuilder::new(&mut cctx.func, &mut fctx);
    let sites = crate::translate::rendezvous_sites(f);
    crate::translate::translate_kernel(builder, &setup, options.checks, &sites)?;
    // `CAJETA_JIT_DISASM` prints the machine code (a debugging aid, as for host code).
    let disasm = std::env::var_os("CAJETA_JIT_DISASM").is_some();
    cctx.set_disasm(disasm);
    jm.define_function(id, &mut cctx).map_err(codegen)?;
    let code_size = cctx.compiled_code().map_or(0, |c| c.code_buffer().len());
    if let Some(code) = cctx
        .compiled_code()
        .and_then(|c| c.vcode.as_ref())
        .filter(|_| disasm)
    {
        eprintln!("xpu: machine code of kernel {}:\n{code}", f.name);
    }
    jm.clear_context(&mut cctx);
    jm.finalize_definitions().map_err(codegen)?;
    let ptr = jm.get_finalized_function(id);
    // SAFETY: `ptr` is the finalized code of a function declared as (i64) -> i32 in the host's
    // default C calling convention: `WorkgroupFn`'s ABI (one pointer in, `u32` out).
    let entry = unsafe { std::mem::transmute::<*const u8, WorkgroupFn>(ptr) };
    Ok(CompiledKernel {
        entry,
        resumable: !sites.is_empty(),
        registers: f.regs.len(),
        origins,
        _code: Code(Mutex::new(Some(jm))),
        compile_time: start.elapsed(),
        code_size,
    })
}

/// Hooks for kernel code, which calls none (device code has no host objects): each one
/// reports an embedder bug.
fn no_hooks() -> RuntimeHooks {
    macro_rules! never {
        ($($arg:ty),*) => {{
            unsafe extern "C" fn never(_: *mut JitContext, $(_: $arg),*) -> u32 {
                crate::Status::Panic as u32
            }
            never
        }};
    }
    RuntimeHooks {
        call_interp: never!(u32, *mut u64),
        grow_stack: never!(u64),
        to_string: never!(u32, u64),
        concat: never!(u64, u64),
        fmt_fixed: never!(u64, u32),
        format: never!(u64, u64, u64),
        parse_int: never!(u64),
        str_len: never!(u64, u32),
        clock: never!(u32),
        str_eq: never!(u64, u64),
        print: never!(u64, u32),
        new_array: never!(u64, u64),
        array_len: never!(u64, u32),
        array_get: never!(u32, u64, u64, u32),
        array_set: never!(u32, u64, u64, u64, u32),
        new_object: never!(u32),
        get_field: never!(u64, u32, u32),
        set_field: never!(u64, u32, u64, u32),
        release: never!(u64),
        xpu: never!(u32, u32, u64, u64),
    }
}
