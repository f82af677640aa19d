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
//! `--xpu-sim` and `--xpu-verbose` set these):
//! * `CAJETA_XPU_SIM=1`: every kernel on the lane scheduler (the checked, deterministic
//!   simulator);
//! * `CAJETA_XPU_VERBOSE=1`: one line on stderr per kernel, compiled or why not.
//!
//! Compiled kernels always check element indices: `cpu` always does (XPU §8.5), so an
//! out-of-range index is `XPU-E-BOUNDS`, never a write outside the buffer.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use cajeta_bytecode::Module;
use cajeta_jit::device::{
    compile_kernel, turn, CompiledKernel, DeviceFault, KernelOptions, MemView, Shape, TurnSlots,
    WorkgroupCtx, FAULT_BAD_HANDLE, FAULT_BOUNDS, FAULT_INDEX, STOP_BAIL, STOP_DECLINE,
    STOP_RENDEZVOUS, TURN_UNPARK,
};
use cajeta_jit::Status;

use super::interp::{self, Env, FaultKind, Item, Stop};
use super::lanes::{self, Launch};
use super::memory::MemRef;
use super::plan::Plan;
use crate::KernelFault;

/// The largest lockstep group (`CAJETA_XPU_LANES`).
pub(crate) const MAX_LANES: usize = 64;

/// How kernels are run, from the environment.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) struct CompileConfig {
    /// Never compile (`CAJETA_XPU_SIM=1`).
    pub sim: bool,
    /// Report each kernel's path (`CAJETA_XPU_VERBOSE=1`).
    pub verbose: bool,
    /// Items per lockstep group (`CAJETA_XPU_LANES`, 1 to [`MAX_LANES`]; 1 runs items one by
    /// one); `None`: the compiler's default for the kernel.
    pub lanes: Option<usize>,
    /// Lockstep groups in vectors where the kernel allows it (`CAJETA_XPU_SIMD` is not
    /// `off`).
    pub simd: bool,
    /// When the groups of a run of workgroups take turns at a streaming loop's header, where
    /// the kernel allows it (`CAJETA_XPU_TURNS`: see [`TurnMode`] and [`turns`]).
    pub turns: TurnMode,
}

/// When compiled kernels' groups take turns (see [`turns`]).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) enum TurnMode {
    /// Never (`off`).
    Off,
    /// In every launch the kernel allows (`on`).
    On,
    /// In launches whose buffers together are at least half the last-level cache's size
    /// (`auto`, the default): from there on groups that walk memory in order win, and below
    /// it the turns' bookkeeping costs more than it saves (measured in
    /// `docs/notes/cpu-backend.md`, "Turns").
    Auto,
}

impl TurnMode {
    /// Whether a launch whose buffers total `bytes` takes turns.
    pub fn takes_turns(self, bytes: u64) -> bool {
        match self {
            TurnMode::Off => false,
            TurnMode::On => true,
            TurnMode::Auto => bytes >= last_level_cache_bytes() / 2,
        }
    }
}

/// The size of the largest CPU cache (Linux sysfs; 32 MiB where it cannot be read).
fn last_level_cache_bytes() -> u64 {
    static BYTES: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *BYTES.get_or_init(|| {
        let sizes = std::fs::read_dir("/sys/devices/system/cpu/cpu0/cache").map(|dir| {
            dir.flatten()
                .filter_map(|e| std::fs::read_to_string(e.path().join("size")).ok())
                .filter_map(|s| parse_cache_size(s.trim()))
                .max()
        });
        sizes.ok().flatten().unwrap_or(32 << 20)
    })
}

/// A sysfs cache size: `32768K`, `2M` or bytes.
fn parse_cache_size(s: &str) -> Option<u64> {
    let (digits, unit) = match s.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((at, _)) => s.split_at(at),
        None => (s, ""),
    };
    let n: u64 = digits.parse().ok()?;
    let shift = match unit {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        _ => return None,
    };
    n.checked_mul(1 << shift)
}

impl CompileConfig {
    /// The configuration of the environment.
    pub fn from_env() -> CompileConfig {
        let var = |name| std::env::var(name).ok();
        CompileConfig {
            sim: var("CAJETA_XPU_SIM").is_some_and(|v| v.trim() == "1"),
            verbose: var("CAJETA_XPU_VERBOSE").is_some_and(|v| v.trim() == "1"),
            lanes: var("CAJETA_XPU_LANES")
                .and_then(|v| v.trim().parse().ok())
                .filter(|n| (1..=MAX_LANES).contains(n)),
            simd: var("CAJETA_XPU_SIMD").is_none_or(|v| v.trim() != "off"),
            turns: match var("CAJETA_XPU_TURNS").as_deref().map(str::trim) {
                Some("off") => TurnMode::Off,
                Some("on") => TurnMode::On,
                _ => TurnMode::Auto,
            },
        }
    }
}

/// A cached kernel: its module (kept alive so that its address, the key, is not reused) and
/// its compiled form once compiled, `None` for a kernel that runs on the scheduler.
struct Entry {
    _module: Arc<Module>,
    compiled: OnceLock<Option<Arc<CompiledKernel>>>,
}

/// Compiled kernels by (module address, kernel). Each kernel compiles once, outside the map's
/// lock: different kernels compile at the same time, and a launch of a kernel being compiled
/// (by [`Cache::prepare`]'s thread, say) waits for it.
#[derive(Default)]
pub(crate) struct Cache {
    kernels: Mutex<HashMap<(usize, u32), Arc<Entry>>>,
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
        let entry = {
            let mut kernels = self.kernels.lock().unwrap_or_else(PoisonError::into_inner);
            let entry = kernels.entry(key).or_insert_with(|| {
                Arc::new(Entry {
                    _module: Arc::clone(module),
                    compiled: OnceLock::new(),
                })
            });
            Arc::clone(entry)
        };
        entry
            .compiled
            .get_or_init(|| compile(module, kernel, plan, config))
            .clone()
    }

    /// Compiles the kernels of `module` on a thread of their own, while the program's host
    /// code runs up to their first launches (which then find them compiled, or wait for the
    /// one being compiled), including the turn functions launches over large buffers use.
    /// Nothing under `--xpu-sim`.
    pub fn prepare(self: &Arc<Self>, module: &Arc<Module>, config: CompileConfig) {
        if config.sim {
            return;
        }
        let (cache, module) = (Arc::clone(self), Arc::clone(module));
        let work = move || {
            let kernels = module.functions.iter().enumerate();
            for (k, _) in kernels.filter(|(_, f)| f.kind == cajeta_bytecode::FnKind::Kernel) {
                let Ok(plan) = super::plan::plan(&module, k as u32) else {
                    continue;
                };
                if let Some(compiled) = cache.get(&module, k as u32, &plan, config) {
                    if config.turns != TurnMode::Off {
                        compiled.prepare_turns();
                    }
                }
            }
        };
        // (Without a thread, kernels compile at their first launch, as before.)
        let _ = std::thread::Builder::new()
            .name("cajeta-xpu-compile".into())
            .spawn(work);
    }
}

/// Compiles `kernel` of `module` (plan `plan`), reporting it with `config.verbose`.
fn compile(
    module: &Module,
    kernel: u32,
    plan: &Plan,
    config: CompileConfig,
) -> Option<Arc<CompiledKernel>> {
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
                checks: true,
                lanes: config.lanes,
                simd: config.simd,
                turns: config.turns != TurnMode::Off,
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
                "xpu: compiled kernel {name} in {:.2} ms ({} bytes, {})",
                k.compile_time.as_secs_f64() * 1e3,
                k.code_size,
                match k.shape {
                    Shape::Resumable => match k.group_widths()[..] {
                        [] => "items resumable at rendezvous".to_string(),
                        [w, ..] if k.scalar_reason.is_none() => format!(
                            "items resumable at rendezvous, barrier phases in groups of {w} \
                             in vectors"
                        ),
                        [w, ..] => format!(
                            "items resumable at rendezvous, barrier phases in groups of {w}, \
                             scalar: {}",
                            k.scalar_reason.as_deref().unwrap_or("?")
                        ),
                    },
                    Shape::Lockstep { lanes, simd: true } if k.takes_turns() => format!(
                        "{lanes} items in lockstep, in vectors, groups taking turns at \
                         the streaming loop"
                    ),
                    Shape::Lockstep { lanes, simd: true } => {
                        format!("{lanes} items in lockstep, in vectors")
                    }
                    Shape::Lockstep { lanes, simd: false } => format!(
                        "{lanes} items in lockstep, scalar: {}",
                        k.scalar_reason.as_deref().unwrap_or("?")
                    ),
                    Shape::Workgroup => "items one by one".to_string(),
                }
            ),
            Err(why) => eprintln!("xpu: kernel {name} runs on the lane scheduler: {why}"),
        }
    }
    outcome.ok().map(Arc::new)
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
    if it.registers().len() < k.registers {
        return Stop::Fault(FaultKind::Internal(
            "item register file smaller than the kernel's",
        ));
    }
    let mut ctx = item_ctx(l, env, views, it);
    // SAFETY: as in `workgroup`, and `regs` points at the item's register file, which holds at
    // least the kernel's registers (checked above) and nothing else touches during the call.
    let status = unsafe { k.run(&mut ctx) };
    let ahead = stopped(l, k, it, status, &ctx);
    resume_ahead(l, env, k, it, ahead)
}

/// Where an item stopped in compiled code, before the scheduler has seen it (see
/// [`step_at`]).
#[derive(Debug)]
pub(crate) enum Ahead {
    /// Before the rendezvous at this kernel pc (registers and `resume` stored).
    Rendezvous(u32),
    /// Returned.
    Done,
    /// Faulted (the item placed at the faulting instruction).
    Fault(FaultKind),
}

/// The stop of item `it` from a compiled function's `status` and `ctx`.
fn stopped(
    l: &Launch<'_>,
    k: &CompiledKernel,
    it: &mut Item,
    status: u32,
    ctx: &WorkgroupCtx,
) -> Ahead {
    match status {
        0 => Ahead::Done,
        STOP_RENDEZVOUS => {
            it.resume = ctx.resume;
            Ahead::Rendezvous(ctx.stop_pc as u32)
        }
        _ => Ahead::Fault(located_fault(l, k, it, status, &ctx.fault)),
    }
}

/// The scheduler's stop for `ahead`: at a rendezvous the interpreter executes that instruction
/// (placing the item there, with the registers compiled code stored), so the scheduler sees
/// exactly its own stop, and the next call continues after it in compiled code.
fn resume_ahead(
    l: &Launch<'_>,
    env: &Env<'_>,
    k: &CompiledKernel,
    it: &mut Item,
    ahead: Ahead,
) -> Stop {
    match ahead {
        Ahead::Done => Stop::Done,
        Ahead::Rendezvous(pc) => {
            // Always one of the kernel's own instructions (callees with rendezvous are not
            // inlined).
            let origin = k.origin(l.kernel, pc);
            it.place_frames(&origin.frames);
            interp::run(env, it)
        }
        Ahead::Fault(f) => Stop::Fault(f),
    }
}

/// Runs `items[0]`, the lowest runnable item of its workgroup (the `runnable` items from it on
/// are all runnable), like [`step`]. A kernel that runs in lockstep groups of `W` items runs
/// `items[..W]` together when they all continue at the same point, and keeps the stops of
/// items 1… (`Item::ahead`) for when the scheduler gets to them: it always runs the lowest
/// runnable item, so it gets to them next, in order — no stop of a lower item can complete a
/// barrier while they are live and not at it (such kernels have no wave collectives).
pub(crate) fn step_at(
    l: &Launch<'_>,
    env: &Env<'_>,
    k: &CompiledKernel,
    views: &[MemView],
    items: &mut [Item],
    runnable: usize,
) -> Stop {
    let Some(first) = items.first_mut() else {
        return Stop::Fault(FaultKind::Internal("no item to run"));
    };
    if let Some(ahead) = first.ahead.take() {
        return resume_ahead(l, env, k, first, ahead);
    }
    let resume = first.resume;
    if let Some(w) = k.group_width(l.block.map(u64::from)) {
        let together = items.get(..w.min(runnable)).filter(|g| {
            g.len() == w && g.iter().all(|it| it.resume == resume && it.ahead.is_none())
        });
        if together.is_some() {
            return group(l, env, k, views, &mut items[..w]);
        }
    }
    step(l, env, k, views, &mut items[0])
}

/// Runs the fresh items of a workgroup of a kernel that runs in lockstep groups (barriers
/// only), phase by phase: every group to the next barrier, and on when all of them stopped
/// at the same one — the scheduler's order for race-free kernels, without its bookkeeping
/// per item. `Ok(true)` when every item returned. Anything else — a group leaving lockstep,
/// groups stopping at different barriers or some returning while others wait — hands over to
/// the scheduler (`Ok(false)`), with each item where the scheduler would have it: the items of
/// the groups run in this phase hold their stops as `Item::ahead` (the lanes of a group that
/// left lockstep finish one by one, up to a fault), the others continue at the phase's start.
pub(crate) fn barrier_phases(
    l: &Launch<'_>,
    env: &Env<'_>,
    k: &CompiledKernel,
    views: &[MemView],
    items: &mut [Item],
) -> Result<bool, FaultKind> {
    let Some(w) = k.group_width(l.block.map(u64::from)) else {
        return Ok(false);
    };
    let n = k.registers;
    let stride = n + 1;
    if items.iter_mut().any(|it| it.registers().len() < n) {
        return Err(FaultKind::Internal(
            "item register file smaller than the kernel's",
        ));
    }
    // The worker's buffer, reused and not filled: groups start from the fresh item frame
    // without reading their files, and a file is read later only where a stop wrote it.
    let mut files = std::mem::take(&mut items[0].files);
    files.resize(items.len() * stride, 0);
    let phases = barrier_phases_in(l, env, k, views, items, &mut files, w);
    items[0].files = files;
    phases
}

/// [`barrier_phases`] with the workgroup's files in `files` and groups of `w` items.
fn barrier_phases_in(
    l: &Launch<'_>,
    env: &Env<'_>,
    k: &CompiledKernel,
    views: &[MemView],
    items: &mut [Item],
    files: &mut [u64],
    w: usize,
) -> Result<bool, FaultKind> {
    let n = k.registers;
    let stride = n + 1;
    let groups = items.len() / w;
    let mut resume = 0;
    // Groups whose items ran apart (left lockstep) since the workgroup started.
    let mut apart = vec![false; groups];
    loop {
        // The phase's common stop: (rendezvous pc, continuation), or `None` for returned.
        let mut common: Option<Option<(u64, u64)>> = None;
        for g in 0..groups {
            let file = files[g * w * stride..].as_mut_ptr();
            let mut ctx = group_ctx(l, env, views, items[g * w].geo, file, resume);
            // SAFETY: as in `workgroup`, and `regs` points at the group's `w` files of
            // `n + 1` cells inside `files`, which nothing else touches during the call and
            // which hold what the group function stored there unless the group is `apart`.
            let status = unsafe { k.run_group(w, &mut ctx, apart[g]) };
            let stop = match status {
                0 => None,
                STOP_RENDEZVOUS => Some((ctx.stop_pc, ctx.resume)),
                STOP_BAIL => {
                    apart[g] = true;
                    // The lanes one by one to their next stops: the phase goes on if they
                    // all stop where the others do.
                    let lanes = &mut items[g * w..(g + 1) * w];
                    let group_files = &mut files[g * w * stride..(g + 1) * w * stride];
                    match finish_alike(l, env, k, views, lanes, group_files, resume) {
                        Some(stop) => stop,
                        None => {
                            let (first, settled) = (g * w, Some(g * w + w));
                            let at = (first, first);
                            hand_over((l, n), items, files, at, common, resume, settled);
                            return Ok(false);
                        }
                    }
                }
                _ => return Err(FaultKind::Internal("unknown status from a lockstep group")),
            };
            match common {
                None => common = Some(stop),
                Some(c) if c == stop => {}
                Some(_) => {
                    // (This group ran too: its registers are in its files.)
                    let at = (g * w, g * w + w);
                    hand_over((l, n), items, files, at, common, resume, None);
                    // The group that differs stopped as a whole: its items hold that stop.
                    for it in &mut items[g * w..(g + 1) * w] {
                        it.ahead = Some(match stop {
                            Some((pc, cont)) => {
                                it.resume = cont;
                                Ahead::Rendezvous(pc as u32)
                            }
                            None => Ahead::Done,
                        });
                    }
                    return Ok(false);
                }
            }
        }
        match common.flatten() {
            Some((_, cont)) => resume = cont,
            None => return Ok(true),
        }
    }
}

/// Hands a workgroup of [`barrier_phases`] over to the scheduler when the group starting at
/// item `first` did not stop like the groups before it (`common`) in the phase that started
/// at `resume`: registers (files of `n + 1` cells) back to the items that ran (in this phase,
/// those below `ran`); the items before `first` hold the common stop; the others continue
/// at `resume`, except items `first..settled`, which already hold their registers and stops
/// (else the caller settles the group at `first`).
fn hand_over(
    (l, n): (&Launch<'_>, usize),
    items: &mut [Item],
    files: &[u64],
    (first, ran): (usize, usize),
    common: Option<Option<(u64, u64)>>,
    resume: u64,
    settled: Option<usize>,
) {
    for (j, (file, it)) in files.chunks_exact(n + 1).zip(items.iter_mut()).enumerate() {
        if settled.is_some_and(|end| (first..end).contains(&j)) {
            continue;
        }
        // In the first phase, the items that have not run start from the fresh frame (their
        // files were never written).
        if j < ran || resume != 0 {
            it.registers()[..n].copy_from_slice(&file[..n]);
        } else {
            it.start(l.kernel, l.frame);
        }
        it.resume = resume;
        if j < first {
            it.ahead = match common {
                Some(Some((pc, cont))) => {
                    it.resume = cont;
                    Some(Ahead::Rendezvous(pc as u32))
                }
                _ => Some(Ahead::Done),
            };
        }
    }
}

/// A group of [`barrier_phases`] that left lockstep: its lanes (registers in `files`, where
/// each left lockstep in its last cell) one by one to their next stops, in order, up to a
/// fault. If they all stopped alike — at the same barrier, or all returned — their registers
/// go back to `files` and that stop is returned, as a group's; else the lanes hold their stops
/// (`Item::ahead`) and registers, and `None` is returned.
fn finish_alike(
    l: &Launch<'_>,
    env: &Env<'_>,
    k: &CompiledKernel,
    views: &[MemView],
    lanes: &mut [Item],
    files: &mut [u64],
    resume: u64,
) -> Option<Option<(u64, u64)>> {
    let n = k.registers;
    for (file, it) in files.chunks_exact(n + 1).zip(lanes.iter_mut()) {
        it.registers()[..n].copy_from_slice(&file[..n]);
        it.resume = resume;
    }
    finish_lanes(l, env, k, views, lanes, files);
    let stop_of = |it: &Item| match it.ahead {
        Some(Ahead::Done) => Some(None),
        Some(Ahead::Rendezvous(pc)) => Some(Some((u64::from(pc), it.resume))),
        _ => None,
    };
    let first = lanes.first().and_then(stop_of)?;
    if !lanes.iter().all(|it| stop_of(it) == Some(first)) {
        return None;
    }
    for (file, it) in files.chunks_exact_mut(n + 1).zip(lanes.iter_mut()) {
        file[..n].copy_from_slice(&it.registers()[..n]);
        file[n] = 0;
        it.ahead = None;
    }
    Some(first)
}

/// The lanes of a group that left lockstep (`files`: theirs first), each from where it left
/// to its next stop, in order, up to a fault (the launch ends there).
fn finish_lanes(
    l: &Launch<'_>,
    env: &Env<'_>,
    k: &CompiledKernel,
    views: &[MemView],
    lanes: &mut [Item],
    files: &[u64],
) {
    let n = k.registers;
    for (file, it) in files.chunks_exact(n + 1).zip(lanes.iter_mut()) {
        let stop = lane(l, env, k, views, it, file[n].saturating_sub(1) as u32);
        let fault = matches!(stop, Ahead::Fault(_));
        it.ahead = Some(stop);
        if fault {
            return;
        }
    }
}

/// Runs `items` (consecutive, continuing at the same point) as one lockstep group to their
/// next stops; `items[0]`'s is returned, the others' kept as `Item::ahead`.
fn group(
    l: &Launch<'_>,
    env: &Env<'_>,
    k: &CompiledKernel,
    views: &[MemView],
    items: &mut [Item],
) -> Stop {
    let n = k.registers;
    let mut files = vec![0u64; items.len() * (n + 1)];
    for (file, it) in files.chunks_exact_mut(n + 1).zip(items.iter_mut()) {
        let Some(regs) = it.registers().get(..n) else {
            return Stop::Fault(FaultKind::Internal(
                "item register file smaller than the kernel's",
            ));
        };
        file[..n].copy_from_slice(regs);
    }
    let mut ctx = group_ctx(
        l,
        env,
        views,
        items[0].geo,
        files.as_mut_ptr(),
        items[0].resume,
    );
    // SAFETY: as in `workgroup`, and `regs` points at one file of `n + 1` cells per item of the
    // group, which nothing else touches during the call.
    let status = unsafe { k.run_group(items.len(), &mut ctx, true) };
    for (file, it) in files.chunks_exact(n + 1).zip(items.iter_mut()) {
        it.registers()[..n].copy_from_slice(&file[..n]);
    }
    match status {
        0 | STOP_RENDEZVOUS => {
            for it in items.iter_mut() {
                it.ahead = Some(stopped(l, k, it, status, &ctx));
            }
        }
        STOP_BAIL => finish_lanes(l, env, k, views, items, &files),
        _ => {
            let kind = FaultKind::Internal("unknown status from a lockstep group");
            items[0].ahead = Some(Ahead::Fault(kind));
        }
    }
    match items[0].ahead.take() {
        Some(ahead) => resume_ahead(l, env, k, &mut items[0], ahead),
        None => Stop::Fault(FaultKind::Internal("empty lockstep group")),
    }
}

/// Runs item `it` of a resumable lockstep kernel with the item function from pc `pc`, where
/// its group left lockstep, to its next stop.
fn lane(
    l: &Launch<'_>,
    env: &Env<'_>,
    k: &CompiledKernel,
    views: &[MemView],
    it: &mut Item,
    pc: u32,
) -> Ahead {
    let mut ctx = item_ctx(l, env, views, it);
    // SAFETY: as in `step` (the caller checked the register file's size).
    let status = unsafe { k.run_item(&mut ctx, pc) };
    stopped(l, k, it, status, &ctx)
}

/// The context of an item function for item `it` (its geometry, register file and
/// continuation).
fn item_ctx(l: &Launch<'_>, env: &Env<'_>, views: &[MemView], it: &mut Item) -> WorkgroupCtx {
    let regs = it.registers().as_mut_ptr();
    group_ctx(l, env, views, it.geo, regs, it.resume)
}

/// The context of a compiled function for the item (or group from the item) with geometry
/// `g`, register file(s) `regs` and continuation `resume`.
fn group_ctx(
    l: &Launch<'_>,
    env: &Env<'_>,
    views: &[MemView],
    g: [u64; interp::GEOM_LEN],
    regs: *mut u64,
    resume: u64,
) -> WorkgroupCtx {
    WorkgroupCtx {
        group: [g[3], g[4], g[5]],
        item: [g[0], g[1], g[2]],
        lin: g[0] + g[1] * g[6] + g[2] * g[6] * g[7],
        lane: g[16],
        regs,
        resume,
        ..launch_ctx(l, env, views)
    }
}

/// The context of a compiled function of launch `l` with memory views `views`: its launch
/// fields; workgroup 0, no item, no files, no slots.
fn launch_ctx(l: &Launch<'_>, env: &Env<'_>, views: &[MemView]) -> WorkgroupCtx {
    WorkgroupCtx {
        mems: views.as_ptr(),
        nmems: env.mems.len().max(1) as u64,
        nbufs: env.nbuf,
        frame: l.frame.as_ptr(),
        group: [0; 3],
        block: l.block.map(u64::from),
        grid: l.grid.map(u64::from),
        wave: u64::from(l.wave.max(1)),
        item: [0; 3],
        lin: 0,
        lane: 0,
        regs: std::ptr::null_mut(),
        resume: 0,
        stop_pc: 0,
        workgroups: 1,
        turns: std::ptr::null_mut(),
        nturns: 0,
        turn: 0,
        fault: Default::default(),
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
        FAULT_INDEX => FaultKind::Index {
            index: f.index,
            len: f.len,
            reg,
        },
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
        group: wg.map(u64::from),
        ..launch_ctx(l, env, views)
    };
    if let Shape::Lockstep { .. } = k.shape {
        let lanes = k.lockstep_lanes(ctx.block[0]);
        return lockstep(l, env, k, lanes, &mut ctx, it);
    }
    // SAFETY: `views` describes `env.mems` (built by `views` from the worker's memory table,
    // padded to one entry) — launch buffers pinned by the launch and the worker's shared
    // arrays, alive for this call, accessed concurrently only at their storage's one element
    // width (the launch's width gates) — `frame` holds the kernel's parameter cells, and the
    // geometry is the launch's, validated by `CpuBackend::launch`.
    let status = unsafe { k.run(&mut ctx) };
    if status == 0 {
        return Ok(());
    }
    Err(fault(l, env, k, it, status, &ctx))
}

/// Runs workgroups `run` of a lockstep kernel that runs consecutive workgroups in one call
/// ([`CompiledKernel::spans_workgroups`]) and whose groups fill a workgroup (its items a
/// multiple of the group width): one call for the run, a group that leaves lockstep finished
/// lane by lane as in [`lockstep`], then on from the next group. A fault comes with its
/// workgroup's index.
pub(crate) fn workgroups(
    l: &Launch<'_>,
    env: &Env<'_>,
    k: &CompiledKernel,
    views: &[MemView],
    run: Range<u64>,
    it: &mut Item,
) -> Result<(), (u64, KernelFault)> {
    let mut ctx = WorkgroupCtx {
        group: lanes::coordinates(l, run.start).map(u64::from),
        workgroups: run.end - run.start,
        ..launch_ctx(l, env, views)
    };
    let lanes = k.lockstep_lanes(ctx.block[0]) as u64;
    let per_workgroup = ctx.block.iter().product::<u64>() / lanes;
    let n = k.registers;
    // The worker's files, reused (as in `lockstep`).
    let mut files = std::mem::take(&mut it.files);
    files.resize(lanes as usize * (n + 1), 0);
    let mut bails = 0;
    loop {
        ctx.regs = files.as_mut_ptr();
        // SAFETY: as in `workgroup`, for every workgroup of `run` (the launch's), and `regs`
        // points at `lanes` files of `n + 1` cells that nothing else touches during the call.
        let status = unsafe { k.run(&mut ctx) };
        // (The workgroup the call stopped in.)
        let g = run.end - ctx.workgroups.max(1);
        match status {
            0 => break,
            STOP_BAIL => {
                let first = ctx.lin;
                finish_bailed(l, env, k, &mut ctx, &mut files, first, it).map_err(|f| (g, f))?;
                ctx.lin = first + lanes;
                // Mostly leaving lockstep (see `lockstep`): item by item from here on.
                bails += 1;
                let groups = (g - run.start) * per_workgroup + ctx.lin / lanes;
                if groups >= DIVERGENCE_PROBE && 2 * bails > groups {
                    k.set_divergent();
                    one_by_one(l, env, k, &mut ctx, it).map_err(|f| (g, f))?;
                    for h in g + 1..run.end {
                        ctx.group = lanes::coordinates(l, h).map(u64::from);
                        ctx.lin = 0;
                        one_by_one(l, env, k, &mut ctx, it).map_err(|f| (h, f))?;
                    }
                    break;
                }
            }
            _ => {
                it.geo = lanes::geometry(l, ctx.group.map(|g| g as u32), [0; 3], 0);
                let kind = FaultKind::Internal("unknown status from a lockstep kernel");
                return Err((g, lanes::describe(l, env, it, kind)));
            }
        }
    }
    it.files = files;
    Ok(())
}

/// Runs workgroups `run` of a kernel with a turn function whose slots are `slots`
/// ([`CompiledKernel::turn_slots`] of the launch): their lockstep groups take turns at the
/// kernel's streaming loop, so that together they walk memory in order (see
/// `cajeta_jit::device::CompiledKernel::run_turns`). A fault is the first in execution order
/// (XPU §5.5) of the lowest faulting workgroup of the run, with that workgroup's index.
/// `false` when the function declines the launch (nothing ran): run the workgroups another
/// way.
pub(crate) fn turns(
    l: &Launch<'_>,
    env: &Env<'_>,
    k: &CompiledKernel,
    (views, slots): (&[MemView], TurnSlots),
    run: Range<u64>,
    it: &mut Item,
) -> Result<bool, (u64, KernelFault)> {
    let (width, cells, n) = (slots.width as u64, slots.cells, k.registers);
    let block = l.block.map(u64::from);
    let groups = block.iter().product::<u64>() / width;
    // A slot per group of the run: fresh, with its group's coordinates.
    let total = (run.end - run.start) * groups;
    let mut memory = std::mem::take(&mut it.turns);
    memory.resize(total as usize * cells, 0);
    let mut next = SlotCursor {
        g: run.start,
        wg: lanes::coordinates(l, run.start).map(u64::from),
        at: [0; 3],
    };
    for slot in memory.chunks_exact_mut(cells) {
        slot[0] = turn::FRESH;
        slot[slots.geometry..slots.geometry + 6].copy_from_slice(&next.advance(l, width));
    }
    let mut files = std::mem::take(&mut it.files);
    files.resize(slots.width * (n + 1), 0);
    let mut ctx = WorkgroupCtx {
        regs: files.as_mut_ptr(),
        turns: memory.as_mut_ptr(),
        nturns: total,
        ..launch_ctx(l, env, views)
    };
    let turns = Turns {
        l,
        env,
        k,
        run: run.start,
        groups,
        width,
        cells,
    };
    let mut bails = 0;
    let result = loop {
        ctx.regs = files.as_mut_ptr();
        ctx.turns = memory.as_mut_ptr();
        // SAFETY: as in `workgroup`, for every workgroup of `run` (the launch's); the slots
        // are `nturns` of `cells` cells of full groups of the width `turn_slots` gave for
        // this launch's x extent, and they and the files are touched by nothing else during
        // the call.
        let status = unsafe { k.run_turns(&mut ctx) };
        match status {
            0 => break Ok(()),
            STOP_DECLINE => {
                it.files = files;
                it.turns = memory;
                return Ok(false);
            }
            STOP_BAIL => {
                let s = ctx.turn;
                memory[s as usize * cells] = turn::DONE;
                bails += 1;
                if let Err(fault) = turns.finish(&mut ctx, &mut files, s, it) {
                    let earlier = turns.earlier_fault(&mut ctx, &mut files, &mut memory, s, it);
                    break Err(earlier.unwrap_or(fault));
                }
                ctx.turn = s + 1;
                ctx.resume = 0;
            }
            _ => {
                it.geo = lanes::geometry(l, lanes::coordinates(l, run.start), [0; 3], 0);
                let kind = FaultKind::Internal("unknown status from a turn function");
                break Err((run.start, lanes::describe(l, env, it, kind)));
            }
        }
    };
    // Groups that mostly leave lockstep: the kernel's next runs go workgroup by workgroup
    // (which then run item by item).
    if total >= DIVERGENCE_PROBE && 2 * bails > total {
        k.set_divergent();
    }
    it.files = files;
    it.turns = memory;
    result.map(|()| true)
}

/// The groups of a run of workgroups in order: the coordinates of each one's first item in
/// its workgroup and of the workgroup.
struct SlotCursor {
    g: u64,
    wg: [u64; 3],
    at: [u64; 3],
}

impl SlotCursor {
    /// The next group's six coordinate cells (groups of `width` items along x, which divides
    /// the x extent).
    fn advance(&mut self, l: &Launch<'_>, width: u64) -> [u64; 6] {
        let [x, y, z] = self.at;
        let cells = [x, y, z, self.wg[0], self.wg[1], self.wg[2]];
        let block = l.block.map(u64::from);
        self.at[0] += width;
        if self.at[0] == block[0] {
            self.at = [0, y + 1, z];
            if y + 1 == block[1] {
                self.at = [0, 0, z + 1];
                if z + 1 == block[2] {
                    self.at = [0; 3];
                    self.g += 1;
                    self.wg = lanes::coordinates(l, self.g).map(u64::from);
                }
            }
        }
        cells
    }
}

/// A run of workgroups in turns: where slot `s`'s group is.
struct Turns<'a> {
    l: &'a Launch<'a>,
    env: &'a Env<'a>,
    k: &'a CompiledKernel,
    /// The run's first workgroup, groups per workgroup, items per group.
    run: u64,
    groups: u64,
    width: u64,
    /// Cells per slot.
    cells: usize,
}

impl Turns<'_> {
    /// Finishes the lanes of slot `s`'s group one by one from their files (`files`, also at
    /// `ctx.regs`); a fault with its workgroup's index.
    fn finish(
        &self,
        ctx: &mut WorkgroupCtx,
        files: &mut [u64],
        s: u64,
        it: &mut Item,
    ) -> Result<(), (u64, KernelFault)> {
        let l = self.l;
        let g = self.run + s / self.groups;
        ctx.group = lanes::coordinates(l, g).map(u64::from);
        let first = s % self.groups * self.width;
        finish_bailed(l, self.env, self.k, ctx, files, first, it).map_err(|f| (g, f))
    }

    /// After the group of slot `s` faulted: the fault of the first parked group before it
    /// whose lanes fault when finished one by one, in slot order — their items run before
    /// `s`'s in the order of XPU §5.5 (a lower workgroup, or lower items of the same one),
    /// though turns ran `s`'s fault first.
    fn earlier_fault(
        &self,
        ctx: &mut WorkgroupCtx,
        files: &mut [u64],
        memory: &mut [u64],
        s: u64,
        it: &mut Item,
    ) -> Option<(u64, KernelFault)> {
        let cells = self.cells;
        for p in 0..s {
            if memory[p as usize * cells] != turn::PARKED {
                continue;
            }
            ctx.turn = p;
            ctx.resume = TURN_UNPARK;
            ctx.regs = files.as_mut_ptr();
            // SAFETY: as in `turns` (the call stores slot `p`'s lanes to the files).
            let status = unsafe { self.k.run_turns(ctx) };
            memory[p as usize * cells] = turn::DONE;
            if status != STOP_BAIL {
                continue;
            }
            if let Err(fault) = self.finish(ctx, files, p, it) {
                return Some(fault);
            }
        }
        None
    }
}

/// The report of a compiled kernel's fault `status` recorded in `ctx`.
fn fault(
    l: &Launch<'_>,
    env: &Env<'_>,
    k: &CompiledKernel,
    it: &mut Item,
    status: u32,
    ctx: &WorkgroupCtx,
) -> KernelFault {
    let f = ctx.fault;
    let wg = ctx.group.map(|g| g as u32);
    it.geo = lanes::geometry(l, wg, f.item, f.lane);
    let kind = located_fault(l, k, it, status, &f);
    lanes::describe(l, env, it, kind)
}

/// Runs a workgroup of a lockstep kernel (`ctx` prepared by [`workgroup`]): the full groups of
/// `lanes` items in lockstep, a group that leaves it lane by lane with the item function, then
/// the items after the last full group one by one — the item order of the scheduler for
/// every lane that leaves lockstep, so the first fault in that order is the one reported.
fn lockstep(
    l: &Launch<'_>,
    env: &Env<'_>,
    k: &CompiledKernel,
    lanes: usize,
    ctx: &mut WorkgroupCtx,
    it: &mut Item,
) -> Result<(), KernelFault> {
    if k.divergent() {
        return one_by_one(l, env, k, ctx, it);
    }
    let n = k.registers;
    // The worker's files, reused: a cell is only read after the kernel wrote it (a bail
    // stores every live register), so stale values from an earlier workgroup are never seen.
    let mut files = std::mem::take(&mut it.files);
    files.resize(lanes * (n + 1), 0);
    ctx.regs = files.as_mut_ptr();
    let total: u64 = ctx.block.iter().product();
    let mut bails = 0;
    loop {
        // SAFETY: as in `workgroup`, and `regs` points at `lanes` files of `n + 1` cells that
        // nothing else touches during the call.
        let status = unsafe { k.run(ctx) };
        let first = ctx.lin;
        match status {
            0 => break,
            STOP_BAIL => {
                finish_bailed(l, env, k, ctx, &mut files, first, it)?;
                ctx.lin = first + lanes as u64;
                ctx.regs = files.as_mut_ptr();
                // A kernel whose groups mostly leave lockstep pays for every lane's exit and
                // re-entry: it runs item by item from here on, in this workgroup and the rest.
                bails += 1;
                let groups = ctx.lin / lanes as u64;
                if groups >= DIVERGENCE_PROBE && 2 * bails > groups {
                    k.set_divergent();
                    return one_by_one(l, env, k, ctx, it);
                }
            }
            _ => {
                it.geo = lanes::geometry(l, ctx.group.map(|g| g as u32), [0; 3], 0);
                let kind = FaultKind::Internal("unknown status from a lockstep kernel");
                return Err(lanes::describe(l, env, it, kind));
            }
        }
    }
    // The rest, each from the interpreter's fresh frame.
    let regs = &mut files[..n];
    for lin in ctx.lin..total {
        regs.fill(0);
        let params = k.params.min(n).min(l.frame.len());
        regs[..params].copy_from_slice(&l.frame[..params]);
        item(l, env, k, ctx, lin, regs, 0, it)?;
    }
    it.files = files;
    Ok(())
}

/// Finishes the lanes of a group that left lockstep, whose first item is `first` of the
/// workgroup in `ctx`: each from its file in `files` (the kernel's registers, then where it
/// continues plus one), in item order, to its end or its fault.
fn finish_bailed(
    l: &Launch<'_>,
    env: &Env<'_>,
    k: &CompiledKernel,
    ctx: &mut WorkgroupCtx,
    files: &mut [u64],
    first: u64,
    it: &mut Item,
) -> Result<(), KernelFault> {
    let n = k.registers;
    for (j, file) in files.chunks_exact_mut(n + 1).enumerate() {
        let pc = file[n].saturating_sub(1) as u32;
        item(l, env, k, ctx, first + j as u64, &mut file[..n], pc, it)?;
    }
    Ok(())
}

/// Groups of a workgroup after which a lockstep kernel whose groups mostly left lockstep is
/// run item by item.
const DIVERGENCE_PROBE: u64 = 4;

/// Runs the items of the workgroup in `ctx` from item `ctx.lin` on one by one, with the
/// lockstep kernel's item-by-item workgroup function.
fn one_by_one(
    l: &Launch<'_>,
    env: &Env<'_>,
    k: &CompiledKernel,
    ctx: &mut WorkgroupCtx,
    it: &mut Item,
) -> Result<(), KernelFault> {
    // SAFETY: as in `workgroup` (the function reads no register files).
    let status = unsafe { k.run_sequential(ctx) };
    if status == 0 {
        Ok(())
    } else {
        Err(fault(l, env, k, it, status, ctx))
    }
}

/// Runs item `lin` of the workgroup in `ctx` with register file `regs` from pc `pc` with the
/// lockstep kernel's item function.
#[allow(clippy::too_many_arguments)]
fn item(
    l: &Launch<'_>,
    env: &Env<'_>,
    k: &CompiledKernel,
    ctx: &mut WorkgroupCtx,
    lin: u64,
    regs: &mut [u64],
    pc: u32,
    it: &mut Item,
) -> Result<(), KernelFault> {
    let [bx, by, _] = ctx.block;
    ctx.item = [lin % bx, lin / bx % by, lin / (bx * by)];
    ctx.lin = lin;
    ctx.lane = lin % ctx.wave;
    ctx.regs = regs.as_mut_ptr();
    // SAFETY: as in `workgroup`, and `regs` is one register file of the kernel's registers
    // that nothing else touches during the call.
    let status = unsafe { k.run_item(ctx, pc) };
    if status == 0 {
        Ok(())
    } else {
        Err(fault(l, env, k, it, status, ctx))
    }
}
