//! The lane scheduler: runs a launch's workgroups on worker threads and, inside a workgroup,
//! its items in the deterministic order of XPU §5.5.
//!
//! **Workgroups.** Workers claim linear workgroup indices `g` in increasing order from one
//! counter: the calling thread and threads of the backend's persistent [`Pool`]. With `serial`
//! (`CAJETA_XPU_CPU_SERIAL=1`), one worker or one workgroup, the calling thread runs
//! `g = 0, 1, …` itself and no other thread is involved.
//!
//! **Items.** Without a reachable rendezvous (see [`Plan`]), a workgroup's items run one after
//! another, in increasing linear index `l`, each to completion, reusing one register file.
//! Otherwise every item has its own [`Item`], and the scheduler always runs the *lowest runnable
//! `l`* until it returns or stops at a rendezvous (XPU §5.2):
//!
//! * a `barrier` is a rendezvous of the workgroup, a wave collective one of the item's wave
//!   (the items with `l` in `[kW, (k+1)W)`);
//! * a rendezvous completes when every member that has not returned waits at it (the same
//!   function and pc); its members then become runnable, so they resume lowest `l` first
//!   before any item of higher `l` runs. A collective's result is computed over the members
//!   waiting at it (its *active lanes*) and written to each of them first.
//!
//! With only barriers this is the familiar schedule: all items run up to the barrier in
//! increasing `l`, then all resume in increasing `l`.
//!
//! **Divergence.** An item that stops at a rendezvous while an item of its group waits at a
//! different rendezvous whose group contains the stopping item is `XPU-E-DIVERGENT`: each waits
//! for the other, so neither rendezvous could complete. Concretely: two different barriers; a
//! barrier and a collective of the same wave; two different collectives of the same wave. A
//! collective of one wave while items of another wave wait at a barrier is not divergent: the
//! collective completes within its wave, and its lanes then go on to the barrier (a portable
//! kernel, §5.2, never diverges). The checks make a state in which items wait and none can run
//! unreachable.
//!
//! **Faults.** A fault ends its workgroup at once. The reported fault is the first in execution
//! order of the lowest-numbered faulting workgroup (XPU §7.3): workers stop claiming
//! workgroups above the lowest faulting one known, but every workgroup below it still runs to
//! completion (claims are increasing, so each one below was claimed and is run), so the answer
//! does not depend on timing.

use std::cell::Cell;
use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use cajeta_bytecode::{Module, SharedDecl};

use super::interp::{self, Env, FaultKind, Item, Stop, GEOM_LEN};
use super::memory::{alloc_words, MemRef};
use super::plan::Plan;
use super::pool::Pool;
use super::wave::{self, WaveOp, MAX_WAVE};
use crate::{KernelFault, XpuError};

/// Everything a launch's workers share.
pub(crate) struct Launch<'a> {
    /// The kernel's module.
    pub module: &'a Module,
    /// The kernel's function index.
    pub kernel: u32,
    /// The kernel's simple name (for messages).
    pub name: &'a str,
    /// The kernel's plan.
    pub plan: &'a Plan,
    /// Workgroups per axis (all non-zero).
    pub grid: [u32; 3],
    /// Items per workgroup per axis (all non-zero).
    pub block: [u32; 3],
    /// The kernel's initial frame: its parameter registers (buffers as memory-table handles),
    /// then zeros up to its register count.
    pub frame: &'a [u64],
    /// The buffer arguments, in parameter order (memory-table handles `0..bufs.len()`).
    pub bufs: &'a [MemRef<'a>],
    /// The wave width `W` (a power of two, 1 to 64).
    pub wave: u32,
    /// Worker threads to use (at least 1).
    pub workers: usize,
    /// Run workgroups one by one in increasing `g` on the calling thread.
    pub serial: bool,
    /// The kernel compiled to a workgroup function (see [`super::compiled`]), if it is run
    /// that way.
    pub compiled: Option<&'a cajeta_jit::device::CompiledKernel>,
    /// The launch's `sharedBytes:`: the memory of the kernel's dynamic shared declaration.
    pub shared_bytes: u64,
    /// Whether a compiled kernel's groups take turns where it allows it (see
    /// `super::compiled::turns`).
    pub turns: bool,
}

/// Elements of shared declaration `d` in launch `l` (a dynamic one: `sharedBytes / size`).
fn shared_len(l: &Launch<'_>, d: &SharedDecl) -> u64 {
    match d.len {
        0 => l.shared_bytes / d.elem.size() as u64,
        n => u64::from(n),
    }
}

/// Why a launch did not complete.
#[derive(Debug)]
pub(crate) enum RunError {
    /// The kernel faulted.
    Fault(KernelFault),
    /// Per-worker memory (item stacks, shared arrays) could not be had.
    Oom(XpuError),
}

/// Scheduling state of one item inside its workgroup.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Status {
    /// Runs when it is the lowest runnable item.
    Runnable,
    /// Waits at the workgroup's pending barrier.
    AtBarrier,
    /// Waits at its wave's pending collective, contributing this operand cell.
    AtCollective(u64),
    /// Returned: no longer a member of any rendezvous.
    Finished,
}

/// A rendezvous site: the function and pc of the instruction.
type Site = (u32, u32);

/// The collective a wave's waiting members are at.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
struct Pending {
    site: Site,
    op: WaveOp,
    /// The result register (the same instruction, so the same for every member).
    dst: u16,
}

/// The rendezvous state of one wave of the running workgroup.
#[derive(Copy, Clone, Default, Debug)]
struct WaveState {
    /// Members that have not returned.
    live: usize,
    /// Members waiting at the workgroup's barrier.
    at_barrier: usize,
    /// Members waiting at `collective`.
    arrived: usize,
    /// The collective the members wait at, if any.
    collective: Option<Pending>,
}

/// The memory one worker reuses for every workgroup it runs.
struct Worker {
    /// One array per shared declaration of the kernel.
    shared: Vec<Box<[AtomicU64]>>,
    /// One item (no rendezvous) or one per item of a workgroup.
    items: Vec<Item>,
    status: Vec<Status>,
    waves: Vec<WaveState>,
}

impl Worker {
    fn new(l: &Launch<'_>) -> Option<Worker> {
        let decls = &l.module.functions.get(l.kernel as usize)?.shared;
        let mut shared = Vec::with_capacity(decls.len());
        for d in decls {
            let bytes = d.elem.size() as u64 * shared_len(l, d);
            shared.push(alloc_words(bytes.div_ceil(8), 0)?);
        }
        let n = if l.plan.has_rendezvous {
            l.block.iter().map(|&b| b as usize).product()
        } else {
            1
        };
        let mut items = Vec::new();
        items.try_reserve_exact(n).ok()?;
        for _ in 0..n {
            // A compiled kernel with inlined calls keeps its callees' registers after its own.
            let cells = l
                .compiled
                .map_or(0, |k| k.registers)
                .max(l.plan.stack_cells);
            items.push(Item::new(cells)?);
        }
        Some(Worker {
            shared,
            items,
            status: vec![Status::Runnable; n],
            waves: Vec::with_capacity(n.div_ceil(l.wave.max(1) as usize)),
        })
    }
}

/// Runs every workgroup of the launch.
///
/// # Errors
/// The launch's fault (see the module docs), or `XPU-E-OOM` if the workers' memory cannot be
/// had.
pub(crate) fn execute(l: &Launch<'_>, pool: &Pool) -> Result<(), RunError> {
    let [gx, gy, gz] = l.grid.map(u64::from);
    // The caller refuses grids whose workgroup count does not fit (far beyond what can run).
    let total = gx.saturating_mul(gy).saturating_mul(gz);
    let nworkers = if l.serial {
        1
    } else {
        (l.workers.max(1) as u64).min(total) as usize
    };
    // Fewer workers when memory is short; none at all is XPU-E-OOM.
    let mut workers: Vec<Worker> = (0..nworkers).map_while(|_| Worker::new(l)).collect();
    if workers.is_empty() {
        return Err(RunError::Oom(XpuError {
            code: "XPU-E-OOM",
            message: format!(
                "cannot allocate the work-item state of kernel {} on backend cpu",
                l.name
            ),
        }));
    }
    // Workers claim runs of consecutive workgroups: one atomic per run rather than per
    // workgroup (the counter's cache line moves between cores at each claim), and each
    // worker walks its buffers' neighbouring elements, which the prefetchers follow (and a
    // kernel with turns runs a run's groups in turns). A run is run in increasing order, each
    // workgroup only while no lower one has faulted, and workers claim until every run is
    // claimed, so the lowest faulting workgroup is still found: every workgroup below it
    // runs.
    let run = (total / (workers.len() as u64 * CLAIMS_PER_WORKER)).clamp(1, MAX_RUN);
    if workers.len() == 1 {
        // Increasing g, stopping at the first fault: it is the lowest faulting workgroup's.
        let claimed = Cell::new(0u64);
        let first: Cell<Option<KernelFault>> = Cell::new(None);
        let faulted = Cell::new(false);
        let clean = catch_unwind(AssertUnwindSafe(|| {
            work(
                l,
                &mut workers[0],
                || {
                    let g = claimed.get();
                    claimed.set(g.saturating_add(run).min(total));
                    (g < total && !faulted.get()).then(|| g..g.saturating_add(run).min(total))
                },
                |_| !faulted.get(),
                |_, fault| {
                    faulted.set(true);
                    first.set(Some(fault));
                },
            )
        }))
        .is_ok();
        return match first.take() {
            Some(f) => Err(RunError::Fault(f)),
            None if !clean => Err(RunError::Fault(panicked(l, None))),
            None => Ok(()),
        };
    }

    // Each worker claims runs from its own share of the workgroups first — the same share in
    // every launch, so that a kernel sweeping the same buffers launch after launch finds its
    // part of them in its own core's caches — then from the others' shares, in order (a
    // worker that falls behind, or never starts, leaves the rest of its share to the others).
    let n = workers.len();
    let shares: Vec<(AtomicU64, u64)> = (0..=n)
        .map(|k| (u128::from(total) * k as u128 / n as u128) as u64)
        .collect::<Vec<_>>()
        .windows(2)
        .map(|w| (AtomicU64::new(w[0]), w[1]))
        .collect();
    let claim = |me: usize| {
        (0..n).find_map(|j| {
            let (next, end) = &shares[(me + j) % n];
            let g = next.fetch_add(run, Ordering::Relaxed);
            (g < *end).then(|| g..g.saturating_add(run).min(*end))
        })
    };
    // The lowest faulting workgroup known so far (u64::MAX: none) and its fault.
    let lowest = AtomicU64::new(u64::MAX);
    let best: Mutex<Option<(u64, KernelFault)>> = Mutex::new(None);
    let wanted = |g: u64| g < lowest.load(Ordering::Acquire);
    let report = |g: u64, fault: KernelFault| {
        let mut slot = best.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.as_ref().is_none_or(|(h, _)| g < *h) {
            *slot = Some((g, fault));
        }
        lowest.fetch_min(g, Ordering::AcqRel);
    };
    // One slot per worker's memory; the pool runs each slot at most once (slot 0 on this
    // thread). A slot that does not run leaves its share to the others: claims are shared.
    let slots: Vec<Mutex<Worker>> = workers.into_iter().map(Mutex::new).collect();
    let job = |slot: usize| {
        if let Some(w) = slots.get(slot) {
            let mut w = w.lock().unwrap_or_else(PoisonError::into_inner);
            work(l, &mut w, || claim(slot), wanted, report);
        }
    };
    let clean = pool.run(slots.len() - 1, &job);
    match best.into_inner().unwrap_or_else(PoisonError::into_inner) {
        Some((_, fault)) => Err(RunError::Fault(fault)),
        // `work` turns a panic inside a workgroup into that workgroup's fault; this one was
        // outside any (setting a worker up).
        None if !clean => Err(RunError::Fault(panicked(l, None))),
        None => Ok(()),
    }
}

/// Runs of workgroups per worker a launch is cut into (more runs balance better, fewer
/// claim less often), and the longest run.
const CLAIMS_PER_WORKER: u64 = 8;
const MAX_RUN: u64 = 64;

/// The `XPU-E-LAUNCH` fault of a panic inside the backend (a bug), in workgroup `g` if known.
fn panicked(l: &Launch<'_>, g: Option<u64>) -> KernelFault {
    let at = g.map_or_else(String::new, |g| {
        let [x, y, z] = coordinates(l, g);
        format!(" (workgroup ({x},{y},{z}))")
    });
    KernelFault {
        code: "XPU-E-LAUNCH",
        message: format!(
            "kernel {}: internal error of backend cpu: a worker panicked{at}",
            l.name
        ),
        frames: Vec::new(),
    }
}

/// The coordinates of linear workgroup index `g`.
pub(crate) fn coordinates(l: &Launch<'_>, g: u64) -> [u32; 3] {
    let [gx, gy, gz] = l.grid.map(u64::from);
    // (A 1-D grid, the common case, needs no division: this runs once per workgroup.)
    if gy == 1 && gz == 1 {
        return [g as u32, 0, 0];
    }
    // Each coordinate is below its grid dimension, a u32.
    [
        (g % gx) as u32,
        ((g / gx) % gy) as u32,
        (g / (gx * gy)) as u32,
    ]
}

/// One worker: runs the runs of workgroups `claim` hands out until it returns `None`, each
/// workgroup only while `wanted`, reporting each workgroup's fault.
fn work(
    l: &Launch<'_>,
    w: &mut Worker,
    mut claim: impl FnMut() -> Option<Range<u64>>,
    wanted: impl Fn(u64) -> bool,
    mut report: impl FnMut(u64, KernelFault),
) {
    let Worker {
        shared,
        items,
        status,
        waves,
    } = w;
    let decls: &[SharedDecl] = l
        .module
        .functions
        .get(l.kernel as usize)
        .map_or(&[], |f| &f.shared[..]);
    let mut mems: Vec<MemRef<'_>> = l.bufs.to_vec();
    for (d, words) in decls.iter().zip(shared.iter()) {
        let len = shared_len(l, d);
        let bytes = d.elem.size() as u64 * len;
        // Fits by construction (the words were allocated for exactly this declaration); the
        // empty fallback keeps later slots at their handles anyway.
        let width = d.elem.size() as u8;
        let view =
            MemRef::new(words, bytes, 0, len, width).or_else(|| MemRef::new(&[], 0, 0, 0, width));
        mems.extend(view);
    }
    let env = Env {
        module: l.module,
        mems: &mems,
        nbuf: l.bufs.len() as u64,
        plan: l.plan,
    };
    let views = super::compiled::views(&mems);
    let mut fresh = true;
    while let Some(run) = claim() {
        if !wanted(run.start) {
            continue;
        }
        // A compiled kernel whose groups take turns over the whole run.
        let turns = l
            .compiled
            .filter(|k| l.turns && !k.resumable)
            .and_then(|k| Some((k, k.turn_slots(u64::from(l.block[0]))?)));
        if let (Some((k, slots)), Some(it)) = (turns, items.first_mut()) {
            let env = &env;
            let ran = guarded(l, run.start, &mut report, || {
                super::compiled::turns(l, env, k, (&views, slots), run.clone(), it)
            });
            match ran {
                None => return,
                // Declined: as any other kernel.
                Some(Some(false)) => {}
                Some(_) => continue,
            }
        }
        // A lockstep kernel whose groups fill its workgroups: one call for the run.
        let items_per_workgroup: u64 = l.block.iter().map(|&b| u64::from(b)).product();
        let spans = l.compiled.filter(|k| {
            let lanes = k.lockstep_lanes(u64::from(l.block[0])) as u64;
            k.spans_workgroups()
                && !k.divergent()
                && decls.is_empty()
                && items_per_workgroup.is_multiple_of(lanes)
        });
        if let (Some(k), Some(it)) = (spans, items.first_mut()) {
            let env = &env;
            let ran = guarded(l, run.start, &mut report, || {
                super::compiled::workgroups(l, env, k, &views, run.clone(), it)
            });
            match ran {
                None => return,
                Some(_) => continue,
            }
        }
        for g in run {
            if !wanted(g) {
                break;
            }
            if !fresh {
                // One zero-filled array per declaration per workgroup (XPU §2.6, cpu).
                for words in shared.iter() {
                    for x in words.iter() {
                        x.store(0, Ordering::Relaxed);
                    }
                }
            }
            fresh = false;
            let state = Lanes {
                items,
                status,
                waves,
            };
            let ran = guarded(l, g, &mut report, || {
                workgroup(l, &env, &views, g, state).map_err(|f| (g, f))
            });
            if ran.is_none() {
                return;
            }
        }
    }
}

/// Runs `f` (workgroups from `first` on), reporting its fault with its workgroup: `Some` of
/// its result, or of `None` after a fault; `None` after a panic, a bug of the backend, which
/// is `first`'s fault (so fault selection stays deterministic), after which the worker, whose
/// state may be inconsistent, stops.
fn guarded<T>(
    l: &Launch<'_>,
    first: u64,
    report: &mut impl FnMut(u64, KernelFault),
    f: impl FnOnce() -> Result<T, (u64, KernelFault)>,
) -> Option<Option<T>> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(x)) => Some(Some(x)),
        Ok(Err((g, fault))) => {
            report(g, fault);
            Some(None)
        }
        Err(_) => {
            report(first, panicked(l, Some(first)));
            None
        }
    }
}

/// The item after item `t` of a workgroup of `block` items (x fastest).
fn next_item(t: [u32; 3], block: [u32; 3]) -> [u32; 3] {
    let [x, y, z] = t;
    match (x + 1 < block[0], y + 1 < block[1]) {
        (true, _) => [x + 1, y, z],
        (false, true) => [0, y + 1, z],
        (false, false) => [0, 0, z + 1],
    }
}

/// The `geom` values of item (tx, ty, tz), linear index `lin`, of workgroup `wg`.
pub(crate) fn geometry(l: &Launch<'_>, wg: [u32; 3], t: [u32; 3], lin: u32) -> [u64; GEOM_LEN] {
    let mut geo = [0u64; GEOM_LEN];
    for axis in 0..3 {
        geo[axis] = u64::from(t[axis]);
        geo[3 + axis] = u64::from(wg[axis]);
        geo[6 + axis] = u64::from(l.block[axis]);
        // grid × block <= 2^32 per axis (validated), so this never wraps; as uint32 anyway.
        geo[9 + axis] = u64::from(wg[axis].wrapping_mul(l.block[axis]).wrapping_add(t[axis]));
        geo[12 + axis] = u64::from(l.grid[axis]);
    }
    geo[15] = u64::from(l.wave);
    geo[16] = u64::from(lin % l.wave.max(1));
    geo
}

/// A worker's per-item state, lent to one workgroup.
struct Lanes<'w> {
    items: &'w mut [Item],
    status: &'w mut [Status],
    waves: &'w mut Vec<WaveState>,
}

/// Runs workgroup `g`.
fn workgroup(
    l: &Launch<'_>,
    env: &Env<'_>,
    views: &[cajeta_jit::device::MemView],
    g: u64,
    lanes: Lanes<'_>,
) -> Result<(), KernelFault> {
    let wg = coordinates(l, g);
    if l.plan.has_rendezvous {
        return switching(l, env, views, wg, lanes);
    }
    let [bx, by, bz] = l.block;
    let Some(it) = lanes.items.first_mut() else {
        return Ok(());
    };
    if let Some(k) = l.compiled.filter(|k| !k.resumable) {
        return super::compiled::workgroup(l, env, k, views, wg, it);
    }
    // Only the item coordinates (0-2), global ids (9-11) and lane id (16) change from item to
    // item.
    it.geo = geometry(l, wg, [0, 0, 0], 0);
    let first = [0, 1, 2].map(|a| wg[a].wrapping_mul(l.block[a]));
    let w = l.wave.max(1);
    let mut lane = 0;
    for tz in 0..bz {
        for ty in 0..by {
            for tx in 0..bx {
                it.start(l.kernel, l.frame);
                it.geo[0] = u64::from(tx);
                it.geo[1] = u64::from(ty);
                it.geo[2] = u64::from(tz);
                it.geo[9] = u64::from(first[0].wrapping_add(tx));
                it.geo[10] = u64::from(first[1].wrapping_add(ty));
                it.geo[11] = u64::from(first[2].wrapping_add(tz));
                it.geo[16] = u64::from(lane);
                lane = if lane + 1 == w { 0 } else { lane + 1 };
                match interp::run(env, it) {
                    Stop::Done => {}
                    Stop::Barrier { .. } | Stop::Collective { .. } => {
                        return Err(describe(
                            l,
                            env,
                            it,
                            FaultKind::Internal("unplanned rendezvous"),
                        ))
                    }
                    Stop::Fault(k) => return Err(describe(l, env, it, k)),
                }
            }
        }
    }
    Ok(())
}

/// Runs the items of workgroup `wg` with their own registers, switching at rendezvous (see the
/// module docs).
fn switching(
    l: &Launch<'_>,
    env: &Env<'_>,
    views: &[cajeta_jit::device::MemView],
    wg: [u32; 3],
    lanes: Lanes<'_>,
) -> Result<(), KernelFault> {
    let Lanes {
        items,
        status,
        waves,
    } = lanes;
    let n = items.len().min(status.len());
    let w = (l.wave as usize).clamp(1, MAX_WAVE);
    // Kernels that run in lockstep groups go phase by phase without the scheduler while every
    // group stops at the same barrier (`compiled::barrier_phases`); the scheduler takes over
    // from wherever that ends, with the items that ran ahead holding their stops. (Their
    // items' registers come from the groups' files, or are set when they are handed over.)
    let groups = l
        .compiled
        .filter(|k| k.group_width(l.block.map(u64::from)).is_some());
    // The items' geometry, counted on from the workgroup's first item (x fastest).
    let base = geometry(l, wg, [0; 3], 0);
    let first = [0, 1, 2].map(|a| wg[a].wrapping_mul(l.block[a]));
    let mut t = [0u32; 3];
    for (lin, it) in items.iter_mut().enumerate().take(n) {
        match groups {
            Some(_) => it.reset(l.kernel),
            None => it.start(l.kernel, l.frame),
        }
        it.geo = base;
        for axis in 0..3 {
            it.geo[axis] = u64::from(t[axis]);
            it.geo[9 + axis] = u64::from(first[axis].wrapping_add(t[axis]));
        }
        // lin < bx * by * bz <= 1024.
        it.geo[16] = lin as u64 % u64::from(l.wave.max(1));
        t = next_item(t, l.block);
    }
    if let Some(k) = groups {
        match super::compiled::barrier_phases(l, env, k, views, &mut items[..n]) {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            Err(kind) => {
                if let Some(it) = items.first() {
                    return Err(describe(l, env, it, kind));
                }
            }
        }
    }
    status[..n].fill(Status::Runnable);
    waves.clear();
    waves.extend((0..n.div_ceil(w)).map(|k| WaveState {
        live: w.min(n - k * w),
        ..WaveState::default()
    }));

    // Items that have not returned; barrier waiters and their site.
    let mut live = n;
    let mut at_barrier = 0;
    let mut barrier: Option<Site> = None;
    // No item below `cur` is runnable.
    let mut cur = 0;
    loop {
        while cur < n && status[cur] != Status::Runnable {
            cur += 1;
        }
        if cur == n {
            break;
        }
        let i = cur;
        let k = i / w;
        let stop = match l.compiled {
            Some(k) if k.resumable => {
                // (At most a lockstep group's worth: counting further is quadratic.)
                let runnable = status[i..n]
                    .iter()
                    .take(super::compiled::MAX_LANES)
                    .take_while(|s| **s == Status::Runnable)
                    .count();
                super::compiled::step_at(l, env, k, views, &mut items[i..n], runnable)
            }
            _ => interp::run(env, &mut items[i]),
        };
        let it = &mut items[i];
        match stop {
            Stop::Done => {
                status[i] = Status::Finished;
                live -= 1;
                waves[k].live -= 1;
                // The returned item may be the last member a rendezvous waited for.
                if waves[k].collective.is_some() && waves[k].arrived == waves[k].live {
                    complete_collective(items, status, &mut waves[k], k * w, w)
                        .map_err(|e| inactive_read(l, env, items, e))?;
                    cur = cur.min(k * w);
                }
                if barrier.is_some() && at_barrier == live {
                    release_barrier(status, waves, &mut at_barrier, &mut barrier);
                    cur = 0;
                }
            }
            Stop::Barrier { func, pc } => {
                let site = (func, pc);
                if barrier.is_some_and(|b| b != site) || waves[k].collective.is_some() {
                    return Err(divergent(l, env, it, site, false));
                }
                barrier = Some(site);
                at_barrier += 1;
                waves[k].at_barrier += 1;
                status[i] = Status::AtBarrier;
                if at_barrier == live {
                    release_barrier(status, waves, &mut at_barrier, &mut barrier);
                    cur = 0;
                }
            }
            Stop::Collective {
                func,
                pc,
                op,
                dst,
                value,
            } => {
                let p = Pending {
                    site: (func, pc),
                    op,
                    dst,
                };
                let ws = &mut waves[k];
                if ws.at_barrier > 0 || ws.collective.is_some_and(|q| q != p) {
                    return Err(divergent(l, env, it, p.site, true));
                }
                ws.collective = Some(p);
                ws.arrived += 1;
                status[i] = Status::AtCollective(value);
                if ws.arrived == ws.live {
                    complete_collective(items, status, ws, k * w, w)
                        .map_err(|e| inactive_read(l, env, items, e))?;
                    cur = cur.min(k * w);
                }
            }
            Stop::Fault(f) => return Err(describe(l, env, it, f)),
        }
    }
    if live > 0 {
        // Excluded by the divergence checks (module docs); reported rather than ignored.
        if let Some(it) = items.first() {
            return Err(describe(
                l,
                env,
                it,
                FaultKind::Internal("a rendezvous never completed"),
            ));
        }
    }
    Ok(())
}

/// The `XPU-E-DIVERGENT` fault of item `it`, stopped at the rendezvous at `site`.
fn divergent(
    l: &Launch<'_>,
    env: &Env<'_>,
    it: &Item,
    site: Site,
    collective: bool,
) -> KernelFault {
    let mut f = describe(l, env, it, FaultKind::Divergent { collective });
    // Report the rendezvous itself, not the resume point.
    if let Some(top) = f.frames.first_mut() {
        *top = site;
    }
    f
}

/// The fault of a collective's lane that read an inactive lane (see [`complete_collective`]).
fn inactive_read(l: &Launch<'_>, env: &Env<'_>, items: &[Item], e: InactiveRead) -> KernelFault {
    let kind = FaultKind::InactiveLane {
        rotate: e.op == WaveOp::Rotate,
        lane: e.lane as u32,
    };
    let mut f = describe(l, env, &items[e.item], kind);
    if let Some(top) = f.frames.first_mut() {
        *top = e.site;
    }
    f
}

/// A shuffle or rotate lane reading an inactive lane: the reader (index in `items`), the
/// collective's site and operation, and the lane read.
struct InactiveRead {
    item: usize,
    site: Site,
    op: WaveOp,
    lane: usize,
}

/// Completes the pending barrier: every waiting item becomes runnable.
fn release_barrier(
    status: &mut [Status],
    waves: &mut [WaveState],
    at_barrier: &mut usize,
    barrier: &mut Option<Site>,
) {
    for st in status.iter_mut() {
        if *st == Status::AtBarrier {
            *st = Status::Runnable;
        }
    }
    for ws in waves.iter_mut() {
        ws.at_barrier = 0;
    }
    *at_barrier = 0;
    *barrier = None;
}

/// Completes the collective wave `ws` (lanes `first..first + w`) waits at: computes it over the
/// waiting members (the active lanes), writes each member's result and makes it runnable.
///
/// # Errors
/// The item that read an inactive lane.
fn complete_collective(
    items: &mut [Item],
    status: &mut [Status],
    ws: &mut WaveState,
    first: usize,
    w: usize,
) -> Result<(), InactiveRead> {
    let Some(p) = ws.collective.take() else {
        return Ok(());
    };
    ws.arrived = 0;
    let end = (first + w).min(status.len()).min(items.len());
    let mut lanes = [None; MAX_WAVE];
    for (slot, st) in lanes.iter_mut().zip(&status[first..end]) {
        if let Status::AtCollective(v) = *st {
            *slot = Some(v);
        }
    }
    let mut out = [0u64; MAX_WAVE];
    // Missing lanes of a partial wave stay inactive (None).
    wave::reduce(p.op, &lanes[..w], &mut out[..w]).map_err(|(j, lane)| InactiveRead {
        item: first + j,
        site: p.site,
        op: p.op,
        lane,
    })?;
    for ((it, st), &v) in items[first..end]
        .iter_mut()
        .zip(&mut status[first..end])
        .zip(&out)
    {
        if matches!(st, Status::AtCollective(_)) {
            if p.op.has_result() {
                it.set_reg(p.dst, v);
            }
            *st = Status::Runnable;
        }
    }
    Ok(())
}

/// The source name of register `reg` of function `func` (`r<reg>` if it has none).
fn var_name(m: &Module, func: u32, reg: u16) -> String {
    m.functions
        .get(func as usize)
        .and_then(|f| f.locals.iter().find(|n| n.reg == reg))
        .map_or_else(|| format!("r{reg}"), |n| n.name.clone())
}

/// The [`KernelFault`] of `kind` raised by item `it`.
pub(crate) fn describe(l: &Launch<'_>, env: &Env<'_>, it: &Item, kind: FaultKind) -> KernelFault {
    let (func, pc) = it.position();
    let unsigned_index = l
        .module
        .functions
        .get(func as usize)
        .is_some_and(|f| f.index_holds_u64(pc));
    let g = &it.geo;
    let at = format!(
        "workgroup ({},{},{}), item ({},{},{})",
        g[3], g[4], g[5], g[0], g[1], g[2]
    );
    let k = l.name;
    let (code, message) = match kind {
        FaultKind::Bounds { index, handle, reg } => {
            let index = crate::index_text(index, unsigned_index);
            let len = env.mems.get(handle as usize).map_or(0, MemRef::len);
            let what = if handle < env.nbuf {
                "buffer"
            } else {
                "shared"
            };
            let var = var_name(l.module, func, reg);
            (
                "XPU-E-BOUNDS",
                format!(
                    "kernel {k}: index {index} out of bounds for length {len} ({what} {var}, {at})"
                ),
            )
        }
        FaultKind::Index { index, len, reg } => {
            let index = crate::index_text(index, unsigned_index);
            let shared = l
                .module
                .functions
                .get(func as usize)
                .and_then(|f| f.regs.get(usize::from(reg)))
                .is_some_and(|t| matches!(t, cajeta_bytecode::Type::Shared(_)));
            let what = if shared { "shared" } else { "lane of vector" };
            let var = var_name(l.module, func, reg);
            (
                "XPU-E-BOUNDS",
                format!(
                    "kernel {k}: index {index} out of bounds for length {len} ({what} {var}, {at})"
                ),
            )
        }
        FaultKind::BadHandle { reg } => {
            let var = var_name(l.module, func, reg);
            (
                "E-NULL",
                format!("kernel {k}: invalid buffer reference in {var} ({at})"),
            )
        }
        FaultKind::DivZero => (
            "E-DIVZERO",
            format!("kernel {k}: integer division by zero ({at})"),
        ),
        FaultKind::Overflow => (
            "E-OVERFLOW",
            format!("kernel {k}: integer overflow in division ({at})"),
        ),
        FaultKind::Divergent { collective } => (
            "XPU-E-DIVERGENT",
            format!(
                "kernel {k}: divergent {} ({at})",
                if collective {
                    "wave collective"
                } else {
                    "barrier"
                }
            ),
        ),
        FaultKind::InactiveLane { rotate, lane } => (
            "XPU-E-DIVERGENT",
            format!(
                "kernel {k}: {} reads inactive lane {lane} ({at})",
                if rotate { "rotate" } else { "shuffleSync" }
            ),
        ),
        FaultKind::Stack => (
            "E-STACK",
            format!("kernel {k}: call depth limit exceeded ({at})"),
        ),
        FaultKind::Internal(what) => (
            "XPU-E-LAUNCH",
            format!("kernel {k}: internal error of backend cpu: {what} ({at})"),
        ),
    };
    KernelFault {
        code,
        message,
        frames: it.fault_frames(),
    }
}
