//! Compiled kernels for the CPU backend: a kernel (its `@Device` callees inlined) translated to
//! native functions that run a workgroup's items.
//!
//! The embedder (the `cpu` backend) fills a [`WorkgroupCtx`] — the memory table, the launch
//! frame and geometry, the workgroup's coordinates — and calls [`CompiledKernel::run`] once
//! per workgroup, from any number of threads at once (each with its own context and its own
//! shared-memory views). A fault status means an item faulted: [`WorkgroupCtx::fault`] says
//! which item, at which pc, and the access's index and handle, from which the embedder builds
//! the same fault report as its interpreter.
//!
//! Three shapes ([`CompiledKernel::shape`]):
//! * **workgroup**: `run` runs every item, one after another;
//! * **lockstep** (kernels without rendezvous or atomics, the default): `run` runs the items `W` at a
//!   time in lockstep from item `ctx.lin`, as long as a full group remains; it returns 0 with
//!   the first item not run in `ctx.lin`, or [`STOP_BAIL`] for a group whose lanes have to
//!   finish one by one: lane `j`'s registers are then in file `j` at `ctx.regs` (files of
//!   `registers + 1` cells, the last one the pc the lane continues at, plus one), and the
//!   embedder runs each with [`CompiledKernel::run_item`] before calling `run` for the next
//!   group (`ctx.lin + W`). Items after the last full group also go through `run_item`, from
//!   pc 0 with fresh registers (parameters, then zeros);
//! * **resumable** (kernels with barriers or wave collectives): `run` runs one item until a
//!   rendezvous ([`STOP_RENDEZVOUS`]) or its end.
//!
//! What the translation does and refuses is described in `translate/device.rs`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
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
/// A fault status: `chk.idx` found its index outside `0 … len − 1` (`XPU-E-BOUNDS`; index and
/// length in the record).
pub const FAULT_INDEX: u32 = 18;
/// The status of a resumable kernel stopped *before* the rendezvous (barrier or wave
/// collective) at [`WorkgroupCtx::stop_pc`], every register stored in [`WorkgroupCtx::regs`];
/// call it again with [`WorkgroupCtx::resume`] as it left it to continue after the rendezvous.
pub const STOP_RENDEZVOUS: u32 = 32;
/// The status of a lockstep function whose group at [`WorkgroupCtx::lin`] left lockstep (see
/// the module documentation), or of a turn function whose group in slot
/// [`WorkgroupCtx::turn`] did (see [`CompiledKernel::run_turns`]).
pub const STOP_BAIL: u32 = 33;
/// The status of a turn function that does not run this launch (a memory handle of the
/// wrong width): run its workgroups with [`CompiledKernel::run`].
pub const STOP_DECLINE: u32 = 34;
/// [`WorkgroupCtx::resume`] for a turn function: store the lanes of the parked group in slot
/// [`WorkgroupCtx::turn`] to their files, as a [`STOP_BAIL`] at the loop header.
pub const TURN_UNPARK: u64 = 1;

/// The states of a turn slot (its cell 0; see [`CompiledKernel::run_turns`]).
pub mod turn {
    /// The group has not started.
    pub const FRESH: u64 = 0;
    /// The group waits at the loop header.
    pub const PARKED: u64 = 1;
    /// The group returned (or the embedder finished its lanes).
    pub const DONE: u64 = 2;
}
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
    /// The length a `chk.idx` checked against.
    pub len: i64,
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
    /// Item functions: the item's coordinates in its workgroup.
    pub item: [u64; 3],
    /// Item functions: the item's linear index. Lockstep functions: the first item to run,
    /// and on return the first not run (0) or the group that left lockstep ([`STOP_BAIL`]).
    pub lin: u64,
    /// Item functions: the item's lane id.
    pub lane: u64,
    /// Item functions: the item's register file (the kernel's registers, read at entry and
    /// written at a rendezvous stop). Lockstep functions: `W` files of `registers + 1` cells,
    /// written at a [`STOP_BAIL`].
    pub regs: *mut u64,
    /// Resumable kernels only: 0 to start the item, else the rendezvous to continue after
    /// (written by the kernel when it stops).
    pub resume: u64,
    /// The pc of the rendezvous a resumable item stopped before, or of the instruction a
    /// lockstep group left lockstep at.
    pub stop_pc: u64,
    /// Lockstep functions held in vectors ([`CompiledKernel::spans_workgroups`]): the
    /// workgroups to run, from `group` on in linear order (0 is 1); on [`STOP_BAIL`], those
    /// left, the bailing group's included (`group` then names its workgroup).
    pub workgroups: u64,
    /// Turn functions: the turn slots ([`TurnSlots::cells`] cells each).
    pub turns: *mut u64,
    /// Turn functions: the number of slots.
    pub nturns: u64,
    /// Turn functions: the slot to go on from (or to unpark); on [`STOP_BAIL`], the slot of
    /// the group that left lockstep.
    pub turn: u64,
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
    pub const WORKGROUPS: i32 = offset_of!(WorkgroupCtx, workgroups) as i32;
    pub const TURNS: i32 = offset_of!(WorkgroupCtx, turns) as i32;
    pub const NTURNS: i32 = offset_of!(WorkgroupCtx, nturns) as i32;
    pub const TURN: i32 = offset_of!(WorkgroupCtx, turn) as i32;
    const FAULT: usize = offset_of!(WorkgroupCtx, fault);
    pub const FAULT_STATUS: i32 = (FAULT + offset_of!(DeviceFault, status)) as i32;
    pub const FAULT_PC: i32 = (FAULT + offset_of!(DeviceFault, pc)) as i32;
    pub const FAULT_ITEM: i32 = (FAULT + offset_of!(DeviceFault, item)) as i32;
    pub const FAULT_LANE: i32 = (FAULT + offset_of!(DeviceFault, lane)) as i32;
    pub const FAULT_INDEX: i32 = (FAULT + offset_of!(DeviceFault, index)) as i32;
    pub const FAULT_LEN: i32 = (FAULT + offset_of!(DeviceFault, len)) as i32;
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
    /// Items per lockstep group for kernels without rendezvous (1 runs them one by one);
    /// `None`: [`DEFAULT_LANES`], or [`DEFAULT_SIMD_LANES`] for a kernel held in vectors.
    pub lanes: Option<usize>,
    /// Lockstep groups in vectors where the kernel allows it (with a multiple of 4 lanes).
    pub simd: bool,
    /// Turn functions for kernels with a streaming loop (see [`CompiledKernel::run_turns`]).
    pub turns: bool,
}

/// The lockstep width used by default in scalar code (see `docs/notes/cpu-backend.md` for the
/// measurements).
pub const DEFAULT_LANES: usize = 8;
/// The lockstep width used by default when the lanes are held in vectors.
pub const DEFAULT_SIMD_LANES: usize = 16;
/// The lockstep width in vectors of a kernel with a streaming loop (a grid-stride loop: see
/// `translate/simd.rs`, `Plan::streams`), for launches whose x extent is a multiple of it.
pub const WIDE_SIMD_LANES: usize = 32;

/// Kernels longer than this many instructions times lanes are not run in lockstep (their
/// code would grow too much).
const MAX_LOCKSTEP_CODE: usize = 8192;

impl Default for KernelOptions {
    fn default() -> Self {
        KernelOptions {
            checks: true,
            lanes: None,
            simd: true,
            turns: true,
        }
    }
}

/// What a kernel was compiled to (see the module documentation).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Shape {
    /// One function per workgroup, items one after another.
    Workgroup,
    /// Items `lanes` at a time in lockstep, lanes leaving it finished by the item function.
    Lockstep {
        /// Items per group.
        lanes: usize,
        /// The lanes are held in vectors (`translate/simd.rs`).
        simd: bool,
    },
    /// One resumable function per item, stopping before each rendezvous.
    Resumable,
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

/// A compiled kernel (see the module documentation for its shapes).
pub struct CompiledKernel {
    entry: WorkgroupFn,
    /// The kernel's shape.
    pub shape: Shape,
    /// A resumable item function (see [`STOP_RENDEZVOUS`]) rather than a workgroup loop.
    pub resumable: bool,
    /// The kernel's register count (the register file an item needs), inlined callees'
    /// registers included.
    pub registers: usize,
    /// The kernel's parameter count (the first registers of a fresh item).
    pub params: usize,
    /// With inlined calls: where each compiled pc came from (see [`CompiledKernel::origin`]).
    origins: Option<Vec<Origin>>,
    /// Resumable kernels run in lockstep groups: the group function and its width.
    groups: Vec<(WorkgroupFn, usize)>,
    /// Resumable kernels whose groups are held in vectors: the aligned group function for
    /// groups whose items ran apart (the eager one is for groups that never did), compiled
    /// when first needed.
    apart: Lazy,
    /// Resumable kernels whose groups are held in vectors wider than the default: the default
    /// width, for workgroups the wide one does not suit, aligned and unaligned, compiled when
    /// first needed.
    narrow_group: Option<(usize, Lazy, Lazy)>,
    /// Resumable kernels whose groups are held in vectors: the scalar group width, for the
    /// workgroup sizes the vector width does not divide, compiled when first needed.
    scalar_group: Option<(usize, Lazy)>,
    /// Kernels held in vectors (lockstep, or resumable groups): the width, for launches whose
    /// workgroup x extent it does not divide (`entry`, resp. `groups`, are only for the
    /// others), compiled when first needed.
    unaligned: Option<(usize, Lazy)>,
    /// Lockstep kernels held in vectors wider than the default ([`WIDE_SIMD_LANES`]): the
    /// aligned function of the default width, for launches whose x extent it divides but the
    /// wide one does not, compiled when first needed.
    narrow: Option<(usize, Lazy)>,
    /// Lockstep kernels: the workgroup function that runs items one by one (from `ctx.lin`),
    /// for kernels whose groups keep leaving lockstep.
    sequential: Option<WorkgroupFn>,
    /// Lockstep kernels held in vectors with a streaming loop: the turn function's slots, and
    /// the function, compiled when first needed.
    turns: Option<(TurnSlots, Lazy)>,
    /// Set once a workgroup of this lockstep kernel found its groups mostly divergent.
    divergent: AtomicBool,
    /// Lockstep kernels: the item function that finishes lanes, and what compiles more.
    items: Option<Items>,
    /// Owns the code `entry` points into.
    _code: Code,
    /// Why a lockstep kernel's lanes are not held in vectors (for `--xpu-verbose`).
    pub scalar_reason: Option<String>,
    /// Time spent compiling.
    pub compile_time: Duration,
    /// Machine code bytes.
    pub code_size: usize,
}

/// The item functions of a lockstep kernel: `main` continues at every point a divergent
/// branch leaves a lane at; a fault leaves every lane at the faulting instruction, which gets
/// an item function of its own when it first happens (faults are rare, and `main` keeps the
/// blocks of the workgroup function that way).
struct Items {
    main: ItemFn,
    at: Mutex<HashMap<u32, Arc<ItemFn>>>,
    /// The (flattened) module and options to compile those from.
    module: Module,
    kernel: u32,
    checks: bool,
}

/// The turn slots of a kernel's turn function (see [`CompiledKernel::run_turns`]).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct TurnSlots {
    /// Items per group: one slot per `width` items of a workgroup.
    pub width: usize,
    /// Cells per slot.
    pub cells: usize,
    /// The first of the slot's six coordinate cells: the group's first item in its workgroup
    /// (x, y, z), then the workgroup's coordinates.
    pub geometry: usize,
}

/// Whether `w` lanes divide an extent of `x` items (without a division for the usual
/// power-of-two widths: this runs at every call).
fn divides(w: usize, x: u64) -> bool {
    let w = w as u64;
    match w.is_power_of_two() {
        true => x & (w - 1) == 0,
        false => x.is_multiple_of(w),
    }
}

/// A function compiled when first needed (for shapes few launches have). Read without a lock
/// once compiled: the workers of a launch may each call it many times.
#[derive(Default)]
struct Lazy(OnceLock<Option<ItemFn>>);

impl Lazy {
    /// The function, compiled by `compile` on the first call (concurrent first calls wait for
    /// it); `None` if that failed, which is not retried.
    fn get(&self, compile: impl FnOnce() -> Result<ItemFn, JitError>) -> Option<&ItemFn> {
        self.0.get_or_init(|| compile().ok()).as_ref()
    }
}

impl Items {
    /// A SIMD lockstep function (`resume`: group function) of `width` lanes (see
    /// `translate/simd.rs`).
    fn simd(
        &self,
        width: usize,
        resume: Option<&[u32]>,
        variant: Variant,
    ) -> Result<ItemFn, JitError> {
        let f = &self.module.functions[self.kernel as usize];
        let plan = crate::translate::simd_plan(&self.module, f, resume.is_some())
            .map_err(|why| JitError::new(Some(self.kernel), None, why))?;
        let shape = ShapeOf::Simd {
            width,
            plan: &plan,
            resume,
            variant,
        };
        compile_item(&self.module, self.kernel, self.checks, shape)
    }
}

/// An item function and its continuation points (`ctx.resume = k + 1` continues at
/// `resume[k]`).
struct ItemFn {
    entry: WorkgroupFn,
    resume: Vec<u32>,
    /// Owns the code, unless it lives in the kernel's own module.
    _code: Option<Code>,
}

// SAFETY: the compiled code is immutable after finalisation and reentrant (it keeps no state
// outside the context it is given), and `Code` is only touched again when dropped; the item
// function cache is behind a `Mutex`.
unsafe impl Send for CompiledKernel {}
// SAFETY: as for `Send`: `run` only reads `entry`, `run_item` the cache through its lock.
unsafe impl Sync for CompiledKernel {}

impl std::fmt::Debug for CompiledKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledKernel")
            .field("shape", &self.shape)
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
    /// the first faulting item (details in `ctx.fault`). A lockstep function: runs the full
    /// groups from `ctx.lin` (0 or [`STOP_BAIL`], never a fault). A resumable item function:
    /// runs item `ctx.item` from `ctx.resume` until it returns (0), stops before a rendezvous
    /// ([`STOP_RENDEZVOUS`]) or faults.
    ///
    /// # Safety
    ///
    /// `ctx.mems` must point at `ctx.nmems >= 1` views, each describing `len` elements of
    /// `width` bytes at `addr`, aligned to `width`, valid for reads and writes during the
    /// call and accessed concurrently only with accesses of the same width (single-copy
    /// atomic on the host); `ctx.frame` must hold the kernel's parameter cells; the geometry
    /// must be the launch's (validated by the embedder); `ctx.regs` must hold a register file
    /// (resumable) or `W` files of `registers + 1` cells (lockstep; `W` is
    /// [`CompiledKernel::lockstep_lanes`] of `ctx.block[0]`), not touched by anything
    /// else during the call.
    pub unsafe fn run(&self, ctx: &mut WorkgroupCtx) -> u32 {
        if let (Shape::Lockstep { lanes, simd: true }, Some(items)) = (self.shape, &self.items) {
            let x = ctx.block[0];
            if !divides(lanes, x) {
                let (width, slot, aligned) = match (&self.narrow, &self.unaligned) {
                    (Some((w, slot)), _) if divides(*w, x) => (*w, slot, true),
                    (_, Some((w, slot))) => (*w, slot, false),
                    _ => return crate::Status::Panic as u32,
                };
                let variant = match aligned {
                    true => Variant::Aligned,
                    false => Variant::Unaligned,
                };
                let f = slot.get(|| items.simd(width, None, variant));
                return match f {
                    // SAFETY: as below; `width` is what `lockstep_lanes` says for this launch,
                    // and the function runs it (aligned: its x extent is a multiple of it).
                    Some(f) => unsafe { (f.entry)(ctx) },
                    None => crate::Status::Panic as u32,
                };
            }
        }
        // SAFETY: the caller's contract above is the compiled code's (and an aligned SIMD
        // function's condition was just checked).
        unsafe { (self.entry)(ctx) }
    }

    /// Lockstep kernels: runs item `ctx.item` (`ctx.lin`, `ctx.lane`) from pc `pc` (0: its
    /// start) with the registers in `ctx.regs` until it returns (0) or faults (its status,
    /// details in `ctx.fault`). `pc` must be where [`STOP_BAIL`] left the lane, or 0.
    /// `Status::Panic` for a kernel of another shape or a pc the item function cannot be
    /// compiled to continue at.
    ///
    /// # Safety
    ///
    /// As for [`CompiledKernel::run`], with `ctx.regs` one register file of `registers` cells.
    pub unsafe fn run_item(&self, ctx: &mut WorkgroupCtx, pc: u32) -> u32 {
        let Some(items) = &self.items else {
            return crate::Status::Panic as u32;
        };
        let continuation = |f: &ItemFn| {
            if pc == 0 {
                Some(0)
            } else {
                f.resume.iter().position(|&r| r == pc).map(|k| k as u64 + 1)
            }
        };
        if let Some(k) = continuation(&items.main) {
            ctx.resume = k;
            // SAFETY: the caller's contract; the item function reads one register file.
            return unsafe { (items.main.entry)(ctx) };
        }
        let f = {
            let mut at = items.at.lock().unwrap_or_else(PoisonError::into_inner);
            match at.get(&pc) {
                Some(f) => Arc::clone(f),
                None => {
                    // `main`'s continuations first, so that a rendezvous stop names the same
                    // continuation in both.
                    let mut points = items.main.resume.clone();
                    points.push(pc);
                    let shape = ShapeOf::Item { resume: &points };
                    let Ok(f) = compile_item(&items.module, items.kernel, items.checks, shape)
                    else {
                        return crate::Status::Panic as u32;
                    };
                    let f = Arc::new(f);
                    at.insert(pc, Arc::clone(&f));
                    f
                }
            }
        };
        ctx.resume = f.resume.len() as u64;
        // SAFETY: as above.
        unsafe { (f.entry)(ctx) }
    }

    /// Lockstep kernels: runs the items of workgroup `ctx.group` from item `ctx.lin` to its
    /// end one by one, like a workgroup function (0 or the first fault's status).
    /// `Status::Panic` for other kernels.
    ///
    /// # Safety
    ///
    /// As for [`CompiledKernel::run`].
    pub unsafe fn run_sequential(&self, ctx: &mut WorkgroupCtx) -> u32 {
        match self.sequential {
            // SAFETY: the caller's contract above is the compiled code's.
            Some(f) => unsafe { f(ctx) },
            None => crate::Status::Panic as u32,
        }
    }

    /// Whether [`CompiledKernel::run`] runs consecutive workgroups in one call
    /// ([`WorkgroupCtx::workgroups`]): lockstep kernels held in vectors.
    pub fn spans_workgroups(&self) -> bool {
        matches!(self.shape, Shape::Lockstep { simd: true, .. })
    }

    /// The turn slots of launches whose workgroups are `block_x` items wide along x, when
    /// this kernel runs them with [`CompiledKernel::run_turns`]: a kernel held in vectors
    /// with a streaming loop (a grid-stride loop) and no shared memory, at its vector width
    /// (which must divide `block_x`), unless its groups were found to diverge.
    pub fn turn_slots(&self, block_x: u64) -> Option<TurnSlots> {
        let (slots, _) = self.turns.as_ref()?;
        (divides(slots.width, block_x) && !self.divergent()).then_some(*slots)
    }

    /// Whether this kernel has a turn function (for `--xpu-verbose`; launches use
    /// [`CompiledKernel::turn_slots`]).
    pub fn takes_turns(&self) -> bool {
        self.turns.is_some()
    }

    /// Compiles the turn function now if this kernel has one (it is otherwise compiled by
    /// the first [`CompiledKernel::run_turns`]).
    pub fn prepare_turns(&self) {
        if let (Some((slots, slot)), Some(items)) = (&self.turns, &self.items) {
            let _ = slot.get(|| items.simd(slots.width, None, Variant::Turns));
        }
    }

    /// A turn function (see `translate/simd/turns.rs`): runs the lockstep groups of the
    /// slots at `ctx.turns` (`ctx.nturns` of them, in (workgroup, item) order), from slot
    /// `ctx.turn` on, taking turns at the streaming loop's header: each round, every group
    /// not done continues to its next arrival at the header or to its end. 0 once every
    /// group is done; [`STOP_BAIL`] for the group of slot `ctx.turn` leaving lockstep (its
    /// lanes' registers in the `W` files at `ctx.regs` as for [`CompiledKernel::run`]; the
    /// caller finishes them, marks the slot done and calls again from the next slot, with
    /// `ctx.resume = 0`); [`STOP_DECLINE`] (nothing run) for a launch it does not run. With
    /// `ctx.resume = TURN_UNPARK`, stores the lanes of the parked group of slot `ctx.turn` to
    /// their files ([`STOP_BAIL`], `ctx.stop_pc` the header).
    ///
    /// The caller fills each slot with [`turn::FRESH`] and its group's coordinates (see
    /// [`TurnSlots::geometry`]); `ctx.group` and `ctx.lin` are not read. `Status::Panic` for
    /// a kernel without turns.
    ///
    /// # Safety
    ///
    /// As for [`CompiledKernel::run`], for every workgroup named in a slot; `ctx.turns` must
    /// point at `ctx.nturns` slots of [`TurnSlots::cells`] cells, not touched by anything
    /// else during the call, whose groups are full lockstep groups of those workgroups
    /// ([`CompiledKernel::turn_slots`] says the width), and `ctx.block[0]` a multiple of it.
    pub unsafe fn run_turns(&self, ctx: &mut WorkgroupCtx) -> u32 {
        let (Some((slots, slot)), Some(items)) = (&self.turns, &self.items) else {
            return crate::Status::Panic as u32;
        };
        if !divides(slots.width, ctx.block[0]) {
            return crate::Status::Panic as u32;
        }
        match slot.get(|| items.simd(slots.width, None, Variant::Turns)) {
            // SAFETY: the caller's contract above is the compiled code's.
            Some(f) => unsafe { (f.entry)(ctx) },
            None => crate::Status::Panic as u32,
        }
    }

    /// Lockstep kernels: the items per group of a launch whose workgroups are `block_x` items
    /// wide along x (the group width `run` uses for it: a wide vector function's only where
    /// it divides `block_x`).
    pub fn lockstep_lanes(&self, block_x: u64) -> usize {
        let Shape::Lockstep { lanes, simd } = self.shape else {
            return 1;
        };
        if !simd || divides(lanes, block_x) {
            return lanes;
        }
        match (&self.narrow, &self.unaligned) {
            (Some((w, _)), _) if divides(*w, block_x) => *w,
            (_, Some((w, _))) => *w,
            _ => lanes,
        }
    }

    /// Whether a workgroup of this lockstep kernel found most of its groups leaving lockstep
    /// (a divergent kernel, which then runs item by item: [`CompiledKernel::run_sequential`]).
    pub fn divergent(&self) -> bool {
        self.divergent.load(Ordering::Relaxed)
    }

    /// Records that this kernel's groups mostly leave lockstep (see
    /// [`CompiledKernel::divergent`]).
    pub fn set_divergent(&self) {
        self.divergent.store(true, Ordering::Relaxed);
    }

    /// Resumable kernels that run in lockstep groups: the group width for workgroups of
    /// `block` items — the widest vector width that divides the x extent (groups of
    /// consecutive x), else the widest vector width that divides the workgroup, else the
    /// scalar width if it does.
    pub fn group_width(&self, block: [u64; 3]) -> Option<usize> {
        let items: u64 = block.iter().product();
        let vector = self.groups.first().map(|&(_, w)| w);
        let narrow = self.narrow_group.as_ref().map(|(w, ..)| *w);
        let scalar = self.scalar_group.as_ref().map(|(w, _)| *w);
        let aligned = [vector, narrow]
            .into_iter()
            .flatten()
            .find(|&w| divides(w, block[0]));
        let fills = |w: &usize| *w > 0 && items.is_multiple_of(*w as u64);
        aligned.or_else(|| [vector, narrow, scalar].into_iter().flatten().find(fills))
    }

    /// The widths of the lockstep groups of a resumable kernel, widest first (for
    /// `--xpu-verbose`).
    pub fn group_widths(&self) -> Vec<usize> {
        self.groups.iter().map(|&(_, w)| w).collect()
    }

    /// Resumable kernels with a group of width `W`: runs items `ctx.lin … ctx.lin + W − 1` (their
    /// registers in `W` files of `registers + 1` cells at `ctx.regs`, all continuing at
    /// `ctx.resume`) in lockstep until they all stop before the same barrier
    /// ([`STOP_RENDEZVOUS`]: registers stored, `ctx.resume` and `ctx.stop_pc` set for every
    /// lane), all return (0), or the group leaves lockstep ([`STOP_BAIL`], as for
    /// [`CompiledKernel::run`] of a lockstep kernel). `Status::Panic` for other kernels.
    /// `apart`: whether the group's items ever ran apart since the workgroup started (left
    /// lockstep, or were run by the scheduler) — a group that never did gets code that knows
    /// its lanes' facts across barriers (see `translate/simd.rs`).
    ///
    /// # Safety
    ///
    /// As for [`CompiledKernel::run`], and a group that is not `apart` must hold in its files
    /// what this function stored at the group's previous stop.
    pub unsafe fn run_group(&self, width: usize, ctx: &mut WorkgroupCtx, apart: bool) -> u32 {
        if let Some(&(f, _)) = self.groups.iter().find(|&&(_, w)| w == width) {
            if let (Some((w, slot)), Some(items)) = (&self.unaligned, &self.items) {
                if *w == width && !divides(width, ctx.block[0]) {
                    let resume = Some(&items.main.resume[..]);
                    let f = slot.get(|| items.simd(width, resume, Variant::Unaligned));
                    return match f {
                        // SAFETY: as below; this function runs any launch.
                        Some(f) => unsafe { (f.entry)(ctx) },
                        None => crate::Status::Panic as u32,
                    };
                }
                // A group that left lockstep since the start: facts end at barriers.
                if *w == width && apart {
                    let resume = Some(&items.main.resume[..]);
                    let f = self
                        .apart
                        .get(|| items.simd(width, resume, Variant::Aligned));
                    return match f {
                        // SAFETY: as below (aligned, as just checked).
                        Some(f) => unsafe { (f.entry)(ctx) },
                        None => crate::Status::Panic as u32,
                    };
                }
            }
            // SAFETY: the caller's contract above is the compiled code's (and an aligned
            // vector group function's condition was just checked).
            return unsafe { f(ctx) };
        }
        if let (Some((w, aligned, unaligned)), Some(items)) = (&self.narrow_group, &self.items) {
            if *w == width {
                let resume = Some(&items.main.resume[..]);
                let (slot, variant) = match divides(width, ctx.block[0]) {
                    true => (aligned, Variant::Aligned),
                    false => (unaligned, Variant::Unaligned),
                };
                return match slot.get(|| items.simd(width, resume, variant)) {
                    // SAFETY: as above (aligned only where it applies, as just checked).
                    Some(f) => unsafe { (f.entry)(ctx) },
                    None => crate::Status::Panic as u32,
                };
            }
        }
        let (Some((w, slot)), Some(items)) = (&self.scalar_group, &self.items) else {
            return crate::Status::Panic as u32;
        };
        if *w != width {
            return crate::Status::Panic as u32;
        }
        let f = slot.get(|| {
            let shape = ShapeOf::Lockstep {
                width,
                resume: Some(&items.main.resume),
            };
            compile_item(&items.module, items.kernel, items.checks, shape)
        });
        match f {
            // SAFETY: as above.
            Some(f) => unsafe { (f.entry)(ctx) },
            None => crate::Status::Panic as u32,
        }
    }
}

use crate::translate::{Shape as ShapeOf, SimdVariant as Variant};

/// Compiles kernel `kernel` of `module` (verified by the caller).
///
/// # Errors
///
/// A kernel this path does not compile (device calls it cannot inline, instructions it does
/// not know) or a code generation failure: the caller runs the kernel another way. A kernel
/// with barriers or wave collectives becomes a resumable item function; others run in lockstep
/// groups of `options.lanes` items when that is above 1 and the kernel is not too long.
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
    // Strings are host values (the verifier leaves register types of device code unchecked,
    // and the compiler never gives a kernel one): such a kernel goes to the scheduler.
    if let Some(r) = f.regs.iter().position(|t| *t == cajeta_bytecode::Type::Str) {
        return Err(JitError::new(
            Some(kernel),
            None,
            format!("register r{r} is a String, a host type"),
        ));
    }
    let sites = crate::translate::rendezvous_sites(f);
    let after: Vec<u32> = sites.iter().map(|&pc| pc + 1).collect();
    let lanes = options.lanes.unwrap_or(DEFAULT_LANES).max(1);
    // Atomics keep the items one by one: lockstep would interleave the atomics of different
    // items, which race-free kernels can observe (XPU §5.5 allows lockstep only where results
    // are identical).
    let atomics = f.code.iter().any(|i| i.op.mnemonic().starts_with("atom."));
    let fits = lanes > 1 && !atomics && f.code.len().saturating_mul(lanes) <= MAX_LOCKSTEP_CODE;
    // Lockstep groups stop together at barriers; wave collectives complete per wave, whose
    // items the scheduler then runs on before the next wave starts, so those kernels keep
    // items one by one.
    let barriers_only = sites
        .iter()
        .all(|&pc| f.code[pc as usize].op == cajeta_bytecode::Op::Barrier);
    let shape = if !sites.is_empty() {
        Shape::Resumable
    } else if fits {
        Shape::Lockstep { lanes, simd: false }
    } else {
        Shape::Workgroup
    };
    let grouped = shape == Shape::Resumable && fits && barriers_only;
    // Where items continue: after each rendezvous and, when lanes leave lockstep, at the
    // targets of conditional branches and after them.
    let mut points = after;
    if grouped || shape != Shape::Resumable {
        points.extend(continuations(f));
        points.sort_unstable();
        points.dedup();
    }
    let mut jm = crate::new_jit_module()?;
    let mut code_size = 0;
    let checks = options.checks;
    // Lockstep kernels (and the groups of kernels with barriers) hold their lanes in vectors
    // when every instruction allows it; scalar lockstep code is the fallback (also for a
    // vector lowering Cranelift refuses).
    let vectors = |jm: &mut JITModule, resume: Option<&[u32]>, size: &mut usize| {
        if !options.simd {
            return Err("SIMD off".to_string());
        }
        let plan = crate::translate::simd_plan(module, f, resume.is_some())?;
        // Wide groups for streaming loops, and for barrier kernels (half the groups to take
        // through each phase); the default width for the others.
        let default = match resume.is_some() || plan.streams() {
            true => WIDE_SIMD_LANES,
            false => DEFAULT_SIMD_LANES,
        };
        let width = options.lanes.unwrap_or(default).max(1);
        if !width.is_multiple_of(4) {
            return Err(format!("{width} lanes are not a multiple of 4"));
        }
        // Compiled for aligned launches (see `translate/simd.rs`); the others get a function
        // without lane facts when first needed (`CompiledKernel::run`, `run_group`).
        let variant = match resume {
            Some(_) => Variant::Through,
            None => Variant::Aligned,
        };
        let shape = ShapeOf::Simd {
            width,
            plan: &plan,
            resume,
            variant,
        };
        let turns = crate::translate::turn_layout(f, &plan)
            .filter(|_| options.turns && resume.is_none())
            .map(|layout| TurnSlots {
                width,
                cells: layout.cells(),
                geometry: layout.geometry(),
            });
        define(jm, module, kernel, checks, shape, size)
            .map(|id| (id, width, turns))
            .map_err(|e| e.message)
    };
    let mut scalar_reason = None;
    let mut vector = |jm: &mut JITModule, resume, size: &mut usize| {
        vectors(jm, resume, size)
            .map_err(|why| scalar_reason = Some(why))
            .ok()
    };
    let (mut unaligned, mut narrow, mut turns) = (None, None, None);
    let (id, shape) = match shape {
        Shape::Lockstep { .. } => match vector(&mut jm, None, &mut code_size) {
            Some((id, width, slots)) => {
                turns = slots.map(|s| (s, Lazy::default()));
                // Launches a wide group does not suit run the default width.
                let rest = width.min(DEFAULT_SIMD_LANES);
                narrow = (width > rest).then(|| (rest, Lazy::default()));
                unaligned = Some((rest, Lazy::default()));
                (
                    id,
                    Shape::Lockstep {
                        lanes: width,
                        simd: true,
                    },
                )
            }
            None => {
                let scalar = ShapeOf::Lockstep {
                    width: lanes,
                    resume: None,
                };
                let id = define(&mut jm, module, kernel, checks, scalar, &mut code_size)?;
                (id, Shape::Lockstep { lanes, simd: false })
            }
        },
        Shape::Resumable => {
            let item = ShapeOf::Item { resume: &points };
            (
                define(&mut jm, module, kernel, checks, item, &mut code_size)?,
                shape,
            )
        }
        Shape::Workgroup => {
            let all = ShapeOf::Workgroup;
            (
                define(&mut jm, module, kernel, checks, all, &mut code_size)?,
                shape,
            )
        }
    };
    let (mut scalar_group, mut narrow_group) = (None, None);
    let (item_id, group_id, sequential_id) = match shape {
        Shape::Lockstep { .. } => {
            let item = ShapeOf::Item { resume: &points };
            let item = define(&mut jm, module, kernel, checks, item, &mut code_size)?;
            let one_by_one = ShapeOf::Workgroup;
            let one_by_one = define(&mut jm, module, kernel, checks, one_by_one, &mut code_size)?;
            (Some(item), Vec::new(), Some(one_by_one))
        }
        Shape::Resumable if grouped => match vector(&mut jm, Some(&points), &mut code_size) {
            // Vectors where the kernel allows it (scalar groups, for the workgroup sizes the
            // vector width does not divide, when first needed).
            Some((group, width, _)) => {
                scalar_group = (width != lanes).then(|| (lanes, Lazy::default()));
                narrow_group = (width > DEFAULT_SIMD_LANES)
                    .then(|| (DEFAULT_SIMD_LANES, Lazy::default(), Lazy::default()));
                unaligned = Some((width, Lazy::default()));
                (Some(id), vec![(group, width)], None)
            }
            None => {
                let scalar = ShapeOf::Lockstep {
                    width: lanes,
                    resume: Some(&points),
                };
                let group = define(&mut jm, module, kernel, checks, scalar, &mut code_size)?;
                (Some(id), vec![(group, lanes)], None)
            }
        },
        _ => (None, Vec::new(), None),
    };
    jm.finalize_definitions()
        .map_err(|e| codegen_error(kernel, e))?;
    // SAFETY: these are finalized functions declared by `define` as (i64) -> i32 in the host's
    // default C calling convention: `WorkgroupFn`'s ABI (one pointer in, `u32` out).
    let as_fn = |ptr| unsafe { std::mem::transmute::<*const u8, WorkgroupFn>(ptr) };
    let entry = as_fn(jm.get_finalized_function(id));
    let groups = group_id
        .into_iter()
        .map(|(g, width)| (as_fn(jm.get_finalized_function(g)), width))
        .collect();
    let sequential = sequential_id.map(|f| as_fn(jm.get_finalized_function(f)));
    let items = item_id.map(|item| Items {
        main: ItemFn {
            entry: as_fn(jm.get_finalized_function(item)),
            resume: points,
            _code: None,
        },
        at: Mutex::new(HashMap::new()),
        module: module.clone(),
        kernel,
        checks: options.checks,
    });
    Ok(CompiledKernel {
        entry,
        shape,
        resumable: shape == Shape::Resumable,
        registers: f.regs.len(),
        params: usize::from(f.params),
        origins,
        groups,
        scalar_group,
        narrow_group,
        unaligned,
        narrow,
        sequential,
        turns,
        apart: Lazy::default(),
        divergent: AtomicBool::new(false),
        items,
        scalar_reason,
        _code: Code(Mutex::new(Some(jm))),
        compile_time: start.elapsed(),
        code_size,
    })
}

/// Where a lane that leaves lockstep at a divergent branch may continue: the targets of the
/// conditional branches of `f` and the instructions after them.
fn continuations(f: &cajeta_bytecode::Function) -> Vec<u32> {
    use cajeta_bytecode::Op;
    f.code
        .iter()
        .enumerate()
        .filter(|(_, i)| matches!(i.op, Op::JmpIf | Op::JmpIfNot))
        .flat_map(|(pc, i)| [i.bc(), pc as u32 + 1])
        .collect()
}

/// Compiles an item function of kernel `kernel` on its own (see [`Items`]).
fn compile_item(
    module: &Module,
    kernel: u32,
    checks: bool,
    shape: ShapeOf<'_>,
) -> Result<ItemFn, JitError> {
    let mut jm = crate::new_jit_module()?;
    let mut size = 0;
    let id = define(&mut jm, module, kernel, checks, shape, &mut size)?;
    jm.finalize_definitions()
        .map_err(|e| codegen_error(kernel, e))?;
    let ptr = jm.get_finalized_function(id);
    // SAFETY: as in `compile_kernel`.
    let entry = unsafe { std::mem::transmute::<*const u8, WorkgroupFn>(ptr) };
    let resume = match shape {
        ShapeOf::Item { resume } => resume.to_vec(),
        _ => Vec::new(),
    };
    Ok(ItemFn {
        entry,
        resume,
        _code: Some(Code(Mutex::new(Some(jm)))),
    })
}

fn codegen_error(kernel: u32, e: cranelift_module::ModuleError) -> JitError {
    JitError::new(Some(kernel), None, format!("code generation failed: {e}"))
}

/// Translates kernel `kernel` of `module` to a function `(ctx) -> status` of shape `shape` in
/// `jm` (adding its machine code size to `code_size`).
fn define(
    jm: &mut JITModule,
    module: &Module,
    kernel: u32,
    checks: bool,
    shape: ShapeOf<'_>,
    code_size: &mut usize,
) -> Result<cranelift_module::FuncId, JitError> {
    let mut cctx = jm.make_context();
    let mut fctx = FunctionBuilderContext::new();
    let mut sig = jm.make_signature();
    sig.params.push(AbiParam::new(types::I64));
    sig.returns.push(AbiParam::new(types::I32));
    let name = format!(
        "cajeta_kernel{kernel}_{}",
        NAMES.fetch_add(1, Ordering::Relaxed)
    );
    let id = jm
        .declare_function(&name, Linkage::Local, &sig)
        .map_err(|e| codegen_error(kernel, e))?;
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
        splice: false,
        osr: false,
        self_ref,
        call_conv: jm.isa().default_call_conv(),
        frontend: jm.target_config(),
    };
    let builder = FunctionBuilder::new(&mut cctx.func, &mut fctx);
    crate::translate::translate_kernel(builder, &setup, checks, shape)?;
    // `CAJETA_JIT_DISASM` prints the machine code (a debugging aid, as for host code).
    let disasm = std::env::var_os("CAJETA_JIT_DISASM").is_some();
    cctx.set_disasm(disasm);
    crate::define(jm, id, &mut cctx).map_err(|e| codegen_error(kernel, e))?;
    *code_size += cctx.compiled_code().map_or(0, |c| c.code_buffer().len());
    if let Some(code) = cctx
        .compiled_code()
        .and_then(|c| c.vcode.as_ref())
        .filter(|_| disasm)
    {
        let f = &module.functions[kernel as usize];
        eprintln!(
            "xpu: machine code of kernel {} ({shape:?}):\n{code}",
            f.name
        );
    }
    jm.clear_context(&mut cctx);
    Ok(id)
}

/// Distinct symbol names for the functions of one module.
static NAMES: AtomicUsize = AtomicUsize::new(0);

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
