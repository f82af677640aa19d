//! The compiled path of the `cpu` backend (`cajeta_jit::device`): a kernel without calls runs
//! as native code, everything else on the lane scheduler's interpreter.
//!
//! * Without rendezvous, as one native function per workgroup that runs the items in the order
//!   the scheduler runs them (increasing linear index, each to completion) — [`workgroup`].
//! * With barriers or wave collectives, as a resumable native function per item that the
//!   scheduler runs in place of its interpreter ([`step`]): compiled code up to the next
//!   rendezvous, then the interpreter executes that one instruction, so the scheduler sees the
//!   same stops in the same order.
//!
//! The arithmetic is the interpreter's, so results are identical; a fault is reported through
//! the scheduler's own `describe`, so messages and frames are too. Kernels are compiled once
//! per module and kernel index and cached for the backend's lifetime.
//!
//! Selection (environment, as the rest of the backend's configuration; the CLI's
//! `--xpu-sim`, `--xpu-verbose` and `--xpu-checks` set these):
//! * `CAJETA_XPU_SIM=1`: every kernel on the lane scheduler (the checked, deterministic
//!   simulator);
//! * `CAJETA_XPU_VERBOSE=1`: one line on stderr per kernel, compiled or why not;
//! * `CAJETA_XPU_CHECKS=off`: compiled kernels skip element index checks.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use cajeta_bytecode::Module;
use cajeta_jit::device::{
    compile_kernel, CompiledKernel, DeviceFault, KernelOptions, MemView, WorkgroupCtx,
    FAULT_BAD_HANDLE, FAULT_BOUNDS, STOP_RENDEZVOUS,
};
use cajeta_jit::Status;

use super::interp::{self, Env, FaultKind, Item, Stop};
use super::lanes::{self, Launch};
use super::memory::MemRef;
use super::plan::Plan;
use crate::KernelFault;

/// How kernels are run, from the environment.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) struct CompileConfig {
    /// Never compile (`CAJETA_XPU_SIM=1`).
    pub sim: bool,
    /// Report each kernel's path (`CAJETA_XPU_VERBOSE=1`).
    pub verbose: bool,
    /// Element index checks (`CAJETA_XPU_CHECKS` is not `off`).
    pub checks: bool,
}

impl CompileConfig {
    /// The configuration of the environment.
    pub fn from_env() -> CompileConfig {
        let var = |name| std::env::var(name).ok();
        CompileConfig {
            sim: var("CAJETA_XPU_SIM").is_some_and(|v| v.trim() == "1"),
            verbose: var("CAJETA_XPU_VERBOSE").is_some_and(|v| v.trim() == "1"),
            checks: var("CAJETA_XPU_CHECKS").is_none_or(|v| v.trim() != "off"),
        }
    }
}

/// A cached kernel: its module (kept alive so that its address, the key, is not reused) and
/// its compiled form, `None` for a kernel that runs on the scheduler.
type Entry = (Arc<Module>, Option<Arc<CompiledKernel>>);

/// Compiled kernels by (module address, kernel).
#[derive(Default)]
pub(crate) struct Cache {
    kernels: Mutex<HashMap<(usize, u32), Entry>>,
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Cache")
    }
}

impl Cache {
    /// The compiled form of `kernel` (compiling it at its first launch), or `None` when it
    /// runs on the lane scheduler's interpreter: a call, an instruction the compiler does not
    /// handle, `sim`, or a big-endian host (memory holds elements little-endian).
    pub fn get(
        &self,
        module: &Arc<Module>,
        kernel: u32,
        plan: &Plan,
        config: CompileConfig,
    ) -> Option<Arc<CompiledKernel>> {
        let key = (Arc::as_ptr(module) as usize, kernel);
        let mut kernels = self.kernels.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, k)) = kernels.get(&key) {
            return k.clone();
        }
        let name = module
            .functions
            .get(kernel as usize)
            .map_or("?", |f| f.name.as_str());
        let outcome = if config.sim {
            Err("--xpu-sim".to_string())
        } else if cfg!(target_endian = "big") {
            Err("big-endian host".to_string())
        } else if plan.has_rendezvous != plan_has_sites(module, kernel) {
            // The plan sees rendezvous in callees too; compiled kernels have no callees.
            Err("its rendezvous are in device functions".to_string())
        } else {
            compile_kernel(
                module,
                kernel,
                KernelOptions {
                    checks: config.checks,
                },
            )
            .map_err(|e| match e.pc {
                Some(pc) => format!("{} (pc {pc})", e.message),
                None => e.message,
            })
        };
        if config.verbose {
            match &outcome {
                Ok(k) => eprintln!(
                    "xpu: compiled kernel {name} in {:.2} ms ({} bytes{})",
                    k.compile_time.as_secs_f64() * 1e3,
                    k.code_size,
                    if k.resumable {
                        ", items resumable at rendezvous"
                    } else {
                        ""
                    }
                ),
                Err(why) => eprintln!("xpu: kernel {name} runs on the lane scheduler: {why}"),
            }
        }
        let compiled = outcome.ok().map(Arc::new);
        kernels.insert(key, (Arc::clone(module), compiled.clone()));
        compiled
    }
}

/// Whether kernel `kernel` itself contains a rendezvous instruction.
fn plan_has_sites(module: &Module, kernel: u32) -> bool {
    module
        .functions
        .get(kernel as usize)
        .is_some_and(|f| !cajeta_jit::device::rendezvous_sites(f).is_empty())
}

/// Runs item `it` of a resumable compiled kernel `k` until it returns, faults or reaches a
/// rendezvous; at a rendezvous the interpreter executes that instruction (placing the item
/// there, with the registers compiled code stored), so the scheduler sees exactly its own
/// stop, and the next call continues after it in compiled code.
pub(crate) fn step(
    l: &Launch<'_>,
    env: &Env<'_>,
    k: &CompiledKernel,
    views: &[MemView],
    it: &mut Item,
) -> Stop {
    let g = it.geo;
    let mut ctx = WorkgroupCtx {
        mems: views.as_ptr(),
        nmems: env.mems.len().max(1) as u64,
        nbufs: env.nbuf,
        frame: l.frame.as_ptr(),
        group: [g[3], g[4], g[5]],
        block: l.block.map(u64::from),
        grid: l.grid.map(u64::from),
        wave: u64::from(l.wave.max(1)),
        item: [g[0], g[1], g[2]],
        lin: g[0] + g[1] * g[6] + g[2] * g[6] * g[7],
        lane: g[16],
        regs: it.registers().as_mut_ptr(),
        resume: it.resume,
        stop_pc: 0,
        fault: Default::default(),
    };
    if it.registers().len() < k.registers {
        return Stop::Fault(FaultKind::Internal(
            "item register file smaller than the kernel's",
        ));
    }
    // SAFETY: as in `workgroup`, and `regs` points at the item's register file, which holds at
    // least the kernel's registers (checked above) and nothing else touches during the call.
    let status = unsafe { k.run(&mut ctx) };
    match status {
        0 => Stop::Done,
        STOP_RENDEZVOUS => {
            // Always one of the kernel's own instructions (callees with rendezvous are not
            // inlined).
            it.resume = ctx.resume;
            let origin = k.origin(l.kernel, ctx.stop_pc as u32);
            it.place_frames(&origin.frames);
            interp::run(env, it)
        }
        _ => Stop::Fault(located_fault(l, k, it, status, &ctx.fault)),
    }
}

/// The fault of a compiled kernel's status and record, with `it` placed at the faulting
/// instruction's frames (inlined device calls mapped back to the functions they came from).
fn located_fault(
    l: &Launch<'_>,
    k: &CompiledKernel,
    it: &mut Item,
    status: u32,
    f: &DeviceFault,
) -> FaultKind {
    let origin = k.origin(l.kernel, f.pc);
    it.place_frames(&origin.frames);
    let reg = (f.reg as u16).wrapping_sub(origin.base);
    match status {
        FAULT_BOUNDS => FaultKind::Bounds {
            index: f.index,
            handle: f.handle,
            reg,
        },
        FAULT_BAD_HANDLE => FaultKind::BadHandle { reg },
        s if s == Status::DivZero as u32 => FaultKind::DivZero,
        s if s == Status::Overflow as u32 => FaultKind::Overflow,
        _ => FaultKind::Internal("unknown status from a compiled kernel"),
    }
}

/// The memory table of a worker for compiled code: one view per entry of `mems` (at least
/// one entry, as the compiled code requires).
pub(crate) fn views(mems: &[MemRef<'_>]) -> Vec<MemView> {
    let mut v: Vec<MemView> = mems.iter().map(MemRef::compiled_view).collect();
    if v.is_empty() {
        v.push(MemView::default());
    }
    v
}

/// Runs workgroup `wg` with the compiled kernel `k`; a fault is described through `it` (the
/// worker's item, placed at the faulting instruction with the faulting item's geometry).
pub(crate) fn workgroup(
    l: &Launch<'_>,
    env: &Env<'_>,
    k: &CompiledKernel,
    views: &[MemView],
    wg: [u32; 3],
    it: &mut Item,
) -> Result<(), KernelFault> {
    let mut ctx = WorkgroupCtx {
        mems: views.as_ptr(),
        nmems: env.mems.len().max(1) as u64,
        nbufs: env.nbuf,
        frame: l.frame.as_ptr(),
        group: wg.map(u64::from),
        block: l.block.map(u64::from),
        grid: l.grid.map(u64::from),
        wave: u64::from(l.wave.max(1)),
        item: [0; 3],
        lin: 0,
        lane: 0,
        regs: std::ptr::null_mut(),
        resume: 0,
        stop_pc: 0,
        fault: Default::default(),
    };
    // SAFETY: `views` describes `env.mems` (built by `views` from the worker's memory table,
    // padded to one entry) — launch buffers pinned by the launch and the worker's shared
    // arrays, alive for this call, accessed concurrently only at their storage's one element
    // width (the launch's width gates) — `frame` holds the kernel's parameter cells, and the
    // geometry is the launch's, validated by `CpuBackend::launch`.
    let status = unsafe { k.run(&mut ctx) };
    if status == 0 {
        return Ok(());
    }
    let f = ctx.fault;
    it.geo = lanes::geometry(l, wg, f.item, f.lane);
    let kind = located_fault(l, k, it, status, &f);
    Err(lanes::describe(l, env, it, kind))
}
