//! Tiering: when host functions leave the interpreter for native code (`cajeta-jit`), how the
//! two tiers call each other, and the [`RuntimeHooks`] through which compiled code reaches the
//! VM's objects, strings and output.
//!
//! # Policy ([`JitMode`])
//!
//! * `off`: everything is interpreted;
//! * `auto` (the default of [`crate::RunOptions`]): a function containing a loop (a backward
//!   jump) is compiled at its first call, any other host function once it has been called
//!   [`AUTO_CALLS`] times. Where a second thread is available ([`worker`]), both are
//!   compiled there, and the calls stay interpreted until the code is ready; the worker also
//!   compiles the callees with loops of a function with loops, which are likely to run soon.
//!   Without a worker, a function with a loop is compiled before its first run.
//! * `eager`: every host function is compiled before its first call, on the calling thread.
//! * `osr`: for testing on-stack replacement (below): every function with a loop starts in
//!   the interpreter and moves to its code, compiled then on the calling thread, at its first
//!   backward jump.
//!
//! # On-stack replacement
//!
//! A function with a loop that starts interpreted runs a second lowering of its code
//! (`FnInfo::switch_to_osr_code`, chosen at its first call, when no frame of it exists, so
//! every frame runs the lowering it started in) whose backward jumps check whether the code is
//! ready ([`Vm::osr_due`]: a few loads). At the first one after it is, [`Vm::osr_enter`] pops
//! the frame and enters the code compiled by `Jit::compile_osr` at the jump's target, with
//! the frame's window; what the code returns (or the error it raises) is the frame's. A call
//! of the function made meanwhile starts its own activation, which moves on its own. So a
//! short run no longer waits for the compiler (a program whose loops finish in a few
//! milliseconds runs about twice as fast from start to end), and a long one loses nothing:
//! it moves to compiled code about when it would have started it.
//!
//! A metered VM (fuel or an interrupt handle) compiles everything on the calling thread, so
//! that the points where it stops do not depend on timing.
//!
//! A function the JIT refuses (the xpu host API, say) stays interpreted for good; with
//! `jit_verbose` each decision is one line on stderr.
//!
//! # Calls between the tiers
//!
//! Both tiers use the interpreter's register windows. A function whose tier byte
//! (`FnInfo::tier`) is nonzero makes the interpreter's `call` take the cold path
//! [`Vm::slow_call`], which counts, compiles, and enters compiled code with the callee's window
//! (`Vm::jit_enter`). Compiled code calls an interpreted function through the
//! `call_interp` hook, which pushes an interpreter frame at the window and runs the
//! interpreter (a nested `interp::run`) until that frame returns.
//!
//! * **Depth.** JIT frames are not in `Vm::frames`. While a nested interpreter activation
//!   runs, `Vm::hidden_frames` counts the JIT (and outer) frames it cannot see and
//!   `Vm::max_depth` is lowered by as much, so the interpreter's own one-compare depth check
//!   stays exact.
//! * **Traces.** A nested activation's error trace covers only its own frames
//!   (`Vm::frames_floor` and up); the hook parks the error in `JitState::pending`, compiled
//!   code unwinds pushing one entry per JIT frame, and the code that entered the JIT appends
//!   those and then its own interpreter frames. The result is the interpreter's trace.
//! * **Native stack.** Compiled code recurses on the thread's stack. The outermost entry
//!   allows JIT → JIT calls [`NATIVE_STACK_BUDGET`] bytes; beneath that, calls go to the
//!   interpreter and the interpreter does not enter compiled code again.
//! * **Strings.** While compiled code is active the string collector treats every cell of the
//!   register stack as a possible root (see `Vm::collect_strings`).

use std::ffi::c_void;
use std::fmt;
use std::sync::Arc;

use cajeta_bytecode::{FnKind, Function, Module, Op, Scalar};
use cajeta_jit::{
    decode_elem, guard, Jit, JitContext, JitError, JitFn, JitOptions, RuntimeHooks, Status,
    ELEM_OWN_FLAG, ELEM_REF, ELEM_TAKE_OWNED, FIELD_CHECK_CALL,
};

use crate::api::Vm;
use crate::error::{ErrorCode, RuntimeError};
use crate::heap::{ArrData, Obj};
use crate::interp::{self, Access, Fault, Frame, XInstr, XOp};

mod worker;

use worker::{Claim, Compiled, Worker};

/// In `auto` mode, the number of interpreted calls of a loop-free function before it is
/// compiled (its next call runs compiled). Small: compiling costs about a millisecond, and
/// a function called twice is likely to be called again.
pub const AUTO_CALLS: u32 = 2;

/// Native stack that JIT → JIT calls may use below the outermost entry into compiled code.
/// Deeper recursion continues in the interpreter. It leaves room for the hooks (and nested
/// interpreter activations) on an 8 MiB main thread or a 2 MiB test thread.
pub const NATIVE_STACK_BUDGET: usize = 1 << 20;

/// `FnInfo::tier`: interpreted, the call goes straight to the interpreter.
pub(crate) const TIER_INTERP: u8 = 0;
/// `FnInfo::tier`: the JIT is interested in this function (counting or compiled): calls take
/// the cold path [`Vm::slow_call`].
pub(crate) const TIER_JIT: u8 = 1;

/// When host functions are compiled to native code.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum JitMode {
    /// Never: everything runs in the interpreter.
    Off,
    /// Functions with a loop before their first run, others after [`AUTO_CALLS`] calls.
    #[default]
    Auto,
    /// Every host function before its first call.
    Eager,
    /// For testing on-stack replacement: as `Auto` on the calling thread alone, except that
    /// a function with a loop starts in the interpreter and moves to its compiled code
    /// (compiled then) at its first backward jump.
    Osr,
}

impl JitMode {
    /// Parses `off`, `auto`, `eager` or `osr` (the `--jit` and `CAJETA_JIT` values).
    pub fn parse(s: &str) -> Option<JitMode> {
        match s {
            "off" => Some(JitMode::Off),
            "auto" => Some(JitMode::Auto),
            "eager" => Some(JitMode::Eager),
            "osr" => Some(JitMode::Osr),
            _ => None,
        }
    }

    /// The mode named by the environment variable `CAJETA_JIT` (`None` when it is unset or
    /// empty).
    ///
    /// # Errors
    ///
    /// A value that names no mode, described for a usage error (as `--jit bogus` is one).
    pub fn from_env() -> Result<Option<JitMode>, String> {
        match std::env::var("CAJETA_JIT") {
            Ok(v) if !v.trim().is_empty() => JitMode::parse(v.trim()).map(Some).ok_or_else(|| {
                format!("invalid JIT mode '{v}' in CAJETA_JIT (expected off, auto, eager or osr)")
            }),
            _ => Ok(None),
        }
    }
}

impl fmt::Display for JitMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            JitMode::Off => "off",
            JitMode::Auto => "auto",
            JitMode::Eager => "eager",
            JitMode::Osr => "osr",
        })
    }
}

/// Where a function stands with the JIT.
#[derive(Copy, Clone, Debug)]
enum Slot {
    /// Interpreted for now: compiled on the call that finds `calls >= threshold`.
    Counting { calls: u32, threshold: u32 },
    /// Interpreted until the worker's code for it is ready.
    Background,
    /// Compiled: calls enter at `entry`; with `osr`, the code also has entries at the
    /// function's loop headers ([`Jit::compile_osr`]).
    Compiled { entry: JitFn, osr: bool },
    /// Refused or not a host function: always interpreted.
    Interpreted,
}

/// Whether and how functions with loops start in the interpreter and move to their compiled
/// code at a backward jump (on-stack replacement).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Osr {
    /// They are compiled before their first run.
    Off,
    /// `auto` with a worker: the worker compiles them while they start interpreted.
    Background,
    /// `osr`: compiled on the VM's thread at their first backward jump.
    Stress,
}

/// An error a hook recorded while compiled code runs, turned into a [`RuntimeError`] once the
/// JIT frames have unwound.
pub(crate) enum Pending {
    /// A fault whose message needs the faulting function (the innermost JIT frame).
    Fault(Fault),
    /// A complete error from a nested interpreter activation (its frames already traced).
    Error(RuntimeError),
}

/// The VM's JIT: the compiler, the context compiled code runs with, and the tiering state.
pub(crate) struct JitState {
    jit: Jit,
    /// The background compiler, if there is one (started on first use; see [`worker`]).
    worker: Option<Worker>,
    /// Whether a worker may be started (`auto` mode, not metered).
    background: bool,
    /// Whether functions with loops start in the interpreter (see [`Vm::osr_enter`]).
    osr: Osr,
    /// Owned (from `Box::into_raw`, freed in `Drop`); kept outside `Vm` so that compiled code
    /// and hooks can use it while the VM itself is borrowed.
    ctx: *mut JitContext,
    slots: Vec<Slot>,
    pub(crate) mode: JitMode,
    pub(crate) verbose: bool,
    /// Entries into compiled code currently on the native stack.
    pub(crate) active: u32,
    /// The error being unwound through JIT frames.
    pub(crate) pending: Option<Pending>,
}

impl JitState {
    /// The worker, started on first use; `None` where there is none.
    fn worker(&mut self) -> Option<&Worker> {
        if self.worker.is_none() && self.background {
            // On one core a second thread would only take turns with the program.
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            self.background = cores > 1;
        }
        if self.worker.is_none() && self.background {
            let osr = self.osr == Osr::Background;
            self.worker = self
                .jit
                .companion()
                .ok()
                .and_then(|j| Worker::start(j, osr));
            self.background = self.worker.is_some();
        }
        self.worker.as_ref()
    }

    /// Compiles `func` now: on this thread, unless the worker is already at it (then waits
    /// for it). First queues on the worker the functions with loops that `func` will call
    /// ([`JitState::loop_callees`]). Returns whether the worker compiled it.
    fn compile_now(&mut self, module: &Module, func: u32) -> (Result<Compiled, JitError>, bool) {
        let callees = self.loop_callees(module, func);
        if !callees.is_empty() {
            if let Some(w) = self.worker() {
                for g in callees {
                    w.request(g);
                }
            }
        }
        if let Some(Claim::Done(result)) = self.worker.as_ref().map(|w| w.claim(func)) {
            return (result, true);
        }
        let result = self.jit.compile(func).map(|c| Compiled::new(&self.jit, c));
        (result, false)
    }

    /// The not yet compiled functions with loops that `func` calls, directly or through
    /// loop-free callees (which stay interpreted until they are hot, so their own callees
    /// with loops would otherwise be compiled on this thread at their first call), in
    /// breadth-first order and at most [`QUEUED_CALLEES`] of them: the worker compiles them
    /// while `func` compiles here, so that they are ready, or nearly, when first called.
    fn loop_callees(&self, module: &Module, func: u32) -> Vec<u32> {
        let mut seen = vec![false; module.functions.len()];
        let mut walk = std::collections::VecDeque::from([func]);
        let mut found = Vec::new();
        while let Some(g) = walk.pop_front() {
            let Some(f) = module.functions.get(g as usize) else {
                continue;
            };
            // Not those spliced into `func`: they run in its code.
            let spliced = if g == func {
                self.jit.spliced_calls(func)
            } else {
                Vec::new()
            };
            for (pc, i) in f.code.iter().enumerate() {
                let h = u32::from(i.c);
                if i.op != Op::Call || spliced.contains(&(pc as u32)) || h == func {
                    continue;
                }
                match seen.get_mut(h as usize) {
                    Some(s) if !*s => *s = true,
                    _ => continue,
                }
                match self.slots.get(h as usize) {
                    Some(Slot::Counting { threshold: 0, .. }) => {
                        found.push(h);
                        if found.len() == QUEUED_CALLEES {
                            return found;
                        }
                    }
                    Some(Slot::Counting { .. }) => walk.push_back(h),
                    _ => {}
                }
            }
        }
        found
    }
}

/// At most this many callees are queued on the worker for one function compiled on the
/// VM's thread: the ones found first are called soonest, and a large program's whole call
/// graph would keep the worker (and a core) busy with functions that may never run.
const QUEUED_CALLEES: usize = 8;

impl Drop for JitState {
    fn drop(&mut self) {
        // SAFETY: `ctx` came from `Box::into_raw` in `Vm::set_jit` and is freed only here;
        // no compiled code runs once the VM is being dropped.
        drop(unsafe { Box::from_raw(self.ctx) });
    }
}

/// True when function `f` contains a backward jump (a loop).
fn has_loop(f: &Function) -> bool {
    f.code
        .iter()
        .enumerate()
        .any(|(pc, i)| i.op.is_branch() && i.bc() as usize <= pc)
}

impl Vm {
    /// Chooses when host functions are compiled to native code ([`JitMode`]); with
    /// `verbose`, prints one line per function on stderr when it is compiled or refused.
    /// Call it before running code; the default of a new `Vm` is [`JitMode::Off`].
    pub fn set_jit(&mut self, mode: JitMode, verbose: bool) {
        self.jit = None;
        for info in &self.fns {
            info.tier.set(TIER_INTERP);
        }
        if mode == JitMode::Off {
            return;
        }
        // Arrays and fields inline: the heap maintains the object views. `CAJETA_JIT_DISASM`
        // (with `--jit-verbose`) also prints each compiled function's machine code.
        // A metered VM (fuel or an interrupt handle) compiles its check points too.
        let options = JitOptions {
            inline_objects: true,
            fuel: self.metered,
            disasm: std::env::var_os("CAJETA_JIT_DISASM").is_some(),
        };
        let jit = match Jit::new(Arc::clone(&self.module), hooks(), options) {
            Ok(j) => j,
            Err(e) => {
                if verbose {
                    self.out
                        .write(true, &format!("jit: disabled: {}", e.message), true);
                }
                return;
            }
        };
        let slots = self
            .module
            .functions
            .iter()
            .zip(&self.fns)
            .map(|(f, info)| {
                if f.kind != FnKind::Host || f.code.is_empty() {
                    return Slot::Interpreted;
                }
                info.tier.set(TIER_JIT);
                let threshold = match mode {
                    JitMode::Auto | JitMode::Osr if !has_loop(f) => AUTO_CALLS,
                    _ => 0,
                };
                Slot::Counting {
                    calls: 0,
                    threshold,
                }
            })
            .collect();
        let ctx = Box::into_raw(Box::new(JitContext::new(
            std::ptr::null_mut(),
            self.max_depth as u64,
        )));
        let background = mode == JitMode::Auto && !self.metered;
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let osr = match mode {
            JitMode::Auto if background && cores > 1 => Osr::Background,
            JitMode::Osr if !self.metered => Osr::Stress,
            _ => Osr::Off,
        };
        if osr != Osr::Off {
            // Now, while no code runs: lowering appends to the constant cells.
            let module = Arc::clone(&self.module);
            for (g, f) in module.functions.iter().enumerate() {
                if jit.osr_supported(g as u32) {
                    self.fns[g].lower_for_osr(f, &mut self.kvals);
                }
            }
        }
        self.jit = Some(Box::new(JitState {
            jit,
            worker: None,
            background,
            osr,
            ctx,
            slots,
            mode,
            verbose,
            active: 0,
            pending: None,
        }));
    }

    /// True while compiled code is on the native stack (the collector then scans every
    /// register cell).
    pub(crate) fn jit_active(&self) -> bool {
        self.jit.as_ref().is_some_and(|j| j.active > 0)
    }

    /// The compiled entry of `func` if it should run compiled now: counts the call and
    /// compiles (or has the worker compile) when the threshold is reached. `None`: interpret
    /// this call.
    pub(crate) fn jit_entry(&mut self, func: u32) -> Option<JitFn> {
        let st = self.jit.as_mut()?;
        let slot = st.slots.get_mut(func as usize)?;
        match *slot {
            Slot::Compiled { entry, .. } => {
                if st.active > 0 && below_native_limit(st.ctx) {
                    return None;
                }
                Some(entry)
            }
            Slot::Interpreted => None,
            Slot::Background => {
                let result = st.worker.as_ref()?.poll(func)?;
                self.install(func, result, true);
                self.jit_entry(func)
            }
            Slot::Counting { calls, threshold } => {
                if calls < threshold {
                    *slot = Slot::Counting {
                        calls: calls + 1,
                        threshold,
                    };
                    return None;
                }
                // A loop-free function can wait for its code: its calls are short.
                if threshold > 0 {
                    if let Some(w) = st.worker() {
                        w.request(func);
                        st.slots[func as usize] = Slot::Background;
                        return None;
                    }
                }
                // One with loops starts in the interpreter, if it can move to its code at a
                // backward jump (its first frame: frames keep the code they started in).
                let info = &self.fns[func as usize];
                if st.osr != Osr::Off
                    && info.has_osr_code()
                    && !self.frames.iter().any(|fr| fr.func == func)
                {
                    let queued = match st.osr {
                        Osr::Background => st.worker().map(|w| w.request(func)).is_some(),
                        _ => true,
                    };
                    if queued && info.switch_to_osr_code() {
                        st.slots[func as usize] = Slot::Background;
                        if st.osr == Osr::Background {
                            let callees = st.loop_callees(&self.module, func);
                            if let Some(w) = st.worker.as_ref() {
                                for g in callees {
                                    w.request(g);
                                }
                            }
                        }
                        return None;
                    }
                }
                let (result, background) = st.compile_now(&self.module, func);
                self.install(func, result, background);
                self.jit_entry(func)
            }
        }
    }

    /// Records the outcome of compiling `func` (by the worker if `background`) in its slot
    /// and tier byte, and reports it with `--jit-verbose`.
    fn install(&mut self, func: u32, result: Result<Compiled, JitError>, background: bool) {
        let Some(st) = self.jit.as_mut() else {
            return;
        };
        let name = |g: u32| self.module.functions[g as usize].name.as_str();
        let line = match result {
            Ok(c) => {
                st.slots[func as usize] = Slot::Compiled {
                    entry: c.entry,
                    osr: c.osr,
                };
                let mut notes: Vec<String> = Vec::new();
                if !c.inlined.is_empty() {
                    let names: Vec<&str> = c.inlined.iter().map(|&g| name(g)).collect();
                    notes.push(format!("inlined {}", names.join(", ")));
                }
                if let Some(pc) = c.tail_call {
                    notes.push(format!("self-call at pc {pc} as a loop"));
                }
                if c.promoted > 0 {
                    let s = if c.promoted == 1 { "" } else { "s" };
                    notes.push(format!("{} array element{s} held across loops", c.promoted));
                }
                if c.single_pass {
                    notes.push("large: single-pass register allocation".into());
                }
                if background {
                    notes.push("in the background".into());
                }
                let code = c.disassembly.unwrap_or_default();
                format!(
                    "jit: compiled {} in {:.2} ms ({} bytes{}){}{code}",
                    name(func),
                    c.compile_time.as_secs_f64() * 1e3,
                    c.code_size,
                    notes.iter().map(|n| format!("; {n}")).collect::<String>(),
                    if code.is_empty() { "" } else { "\n" },
                )
            }
            Err(e) => {
                st.slots[func as usize] = Slot::Interpreted;
                self.fns[func as usize].tier.set(TIER_INTERP);
                let at = e.pc.map(|pc| format!(" (pc {pc})")).unwrap_or_default();
                format!("jit: interpreting {}: {}{at}", name(func), e.message)
            }
        };
        if st.verbose {
            self.out.write(true, &line, true);
        }
    }

    /// Waits for the worker's queued jobs and records them (so that `--jit-verbose` reports
    /// every function compiled, also those whose code the program never used).
    pub(crate) fn jit_drain(&mut self) {
        let Some(done) = self
            .jit
            .as_ref()
            .and_then(|st| st.worker.as_ref())
            .map(Worker::drain)
        else {
            return;
        };
        for (func, result) in done {
            self.install(func, result, true);
        }
    }

    /// The interpreter's `call a b c` (the instruction before `ip`, in the running frame
    /// whose window starts at `base`) when the depth limit is reached (`E-STACK`) or the
    /// callee has a nonzero tier byte: runs it
    /// compiled if it is (or now gets) compiled, writing the result into `r[a]` (for a
    /// non-void callee). `Ok(false)`: interpret the call as usual. An error's trace ends with
    /// the interpreter's frames, as if the interpreter had raised it.
    #[cold]
    #[inline(never)]
    pub(crate) fn slow_call(
        &mut self,
        base: usize,
        ip: *const XInstr,
    ) -> Result<bool, RuntimeError> {
        if self.frames.len() >= self.max_depth {
            return Err(self.fault(ip, Fault::Stack));
        }
        // SAFETY: `ip` is one past the `call` being executed, inside the running code.
        let call = unsafe { *ip.sub(1) };
        let func = u32::from(call.c);
        let Some(entry) = self.jit_entry(func) else {
            return Ok(false);
        };
        match self.jit_enter(entry, base + usize::from(call.b)) {
            Ok(v) => {
                if self.module.functions[func as usize].ret.is_some() {
                    if let Some(cell) = self.stack.get_mut(base + usize::from(call.a)) {
                        *cell = v;
                    }
                }
                Ok(true)
            }
            Err(mut e) => {
                e.trace.extend(self.host_trace(ip));
                Err(e)
            }
        }
    }

    /// At a backward jump in OSR code (`XOp::OsrJmp*`): whether the running function may
    /// have compiled code to move to ([`Vm::osr_enter`]). A few loads; such code runs only
    /// while a function waits for its compiled code (or for good when the JIT refused it).
    #[inline(always)]
    pub(crate) fn osr_due(&self) -> bool {
        let (Some(st), Some(frame)) = (self.jit.as_deref(), self.frames.last()) else {
            return false;
        };
        let func = frame.func;
        match st.osr {
            Osr::Off => false,
            Osr::Stress => true,
            Osr::Background => {
                st.worker.as_ref().is_some_and(|w| w.ready(func))
                    || matches!(
                        st.slots.get(func as usize),
                        Some(Slot::Compiled { osr: true, .. })
                    )
            }
        }
    }

    /// On-stack replacement: the running frame (the top one, interpreting OSR code) is at a
    /// backward jump to `target`. If its function's compiled code is ready and has entries at
    /// its loop headers, the frame is popped and the code entered at `target` with the
    /// frame's window, and the activation's result comes back as `Some((cell, has_result))`
    /// (the ownership bit in `vm.own`), for the interpreter to return as the frame would
    /// have. `None`: keep interpreting. An error's trace ends with the interpreter's frames
    /// below, as for a call into compiled code.
    #[cold]
    #[inline(never)]
    pub(crate) fn osr_enter(&mut self, target: u32) -> Result<Option<(u64, bool)>, RuntimeError> {
        let Some(&frame) = self.frames.last() else {
            return Ok(None);
        };
        let func = frame.func;
        let Some(st) = self.jit.as_mut() else {
            return Ok(None);
        };
        if matches!(st.slots.get(func as usize), Some(Slot::Background)) {
            let result = match st.osr {
                Osr::Stress => Some((
                    st.jit.compile_osr(func).map(|c| Compiled::new(&st.jit, c)),
                    false,
                )),
                _ => st
                    .worker
                    .as_ref()
                    .and_then(|w| w.poll(func))
                    .map(|r| (r, true)),
            };
            match result {
                Some((result, background)) => self.install(func, result, background),
                None => return Ok(None),
            }
        }
        let Some(st) = self.jit.as_mut() else {
            return Ok(None);
        };
        let Some(&Slot::Compiled { entry, osr: true }) = st.slots.get(func as usize) else {
            return Ok(None);
        };
        if st.active > 0 && below_native_limit(st.ctx) {
            return Ok(None);
        }
        let ctx = st.ctx;
        if st.verbose {
            let name = &self.module.functions[func as usize].name;
            let line = format!("jit: {name} continues in compiled code at pc {target}");
            self.out.write(true, &line, true);
        }
        self.frames.pop();
        // SAFETY: the context is live (owned by the JIT state) and no compiled code runs.
        unsafe { (*ctx).osr_pc = u64::from(target) + 1 };
        let result = self.jit_enter(entry, frame.base);
        // SAFETY: as above. (The prologue clears it, but not when it fails at the depth limit.)
        unsafe { (*ctx).osr_pc = 0 };
        match result {
            Ok(v) => Ok(Some((
                v,
                self.module.functions[func as usize].ret.is_some(),
            ))),
            Err(mut e) => {
                let ip = self.frames.last().map_or(std::ptr::null(), |f| f.ip);
                e.trace.extend(self.host_trace(ip));
                Err(e)
            }
        }
    }

    /// Runs compiled `entry` with its window at stack cell `base` (the window fits, the
    /// arguments are there) and returns its result cell; sets the ownership bit.
    pub(crate) fn jit_enter(&mut self, entry: JitFn, base: usize) -> Result<u64, RuntimeError> {
        let depth = (self.frames.len() + self.hidden_frames) as u64;
        let max_depth = (self.max_depth + self.hidden_frames) as u64;
        let Some(st) = self.jit.as_mut() else {
            return Err(RuntimeError::new(ErrorCode::Call, "no JIT"));
        };
        let ctxp = st.ctx;
        let outermost = st.active == 0;
        st.active += 1;
        let vm: *mut Vm = self;
        // SAFETY: `ctxp` is the live context owned by the JIT state (see `JitState::ctx`);
        // nothing else holds a reference to it here.
        let ctx = unsafe { &mut *ctxp };
        let saved_vm = ctx.vm;
        ctx.vm = vm.cast::<c_void>();
        ctx.stack_base = self.stack.as_mut_ptr();
        ctx.stack_len = self.stack.len() as u64;
        ctx.statics = self.statics.as_mut_ptr();
        ctx.consts = self.kvals.as_ptr();
        ctx.views = self.heap.object_views();
        ctx.depth = depth;
        ctx.max_depth = max_depth;
        ctx.fuel = self.fuel;
        ctx.interrupt = Arc::as_ptr(&self.interrupt);
        if outermost {
            ctx.trace.clear();
            ctx.limit_native_stack(NATIVE_STACK_BUDGET);
        }
        // SAFETY: `base` is inside the stack (the caller made the window fit).
        let regs = unsafe { ctx.stack_base.add(base) };
        // SAFETY: the context's pointers are valid (set just above from the VM's own storage,
        // which hooks keep up to date when they move it); the window fits in the stack; the
        // JIT that compiled `entry` lives in `self.jit`, which is not replaced while code runs
        // (hooks never call `set_jit`); hooks reach the VM only through `ctx.vm`, derived from
        // `self`, which is not used until the call returns.
        let status = unsafe { entry(ctxp, regs) };
        // SAFETY: as above; the call has returned, so this is again the only reference.
        let ctx = unsafe { &mut *ctxp };
        ctx.vm = saved_vm;
        let (ret, own) = (ctx.ret, ctx.own);
        self.fuel = ctx.fuel;
        if let Some(st) = self.jit.as_mut() {
            st.active -= 1;
        }
        self.own = own != 0;
        if status == Status::Ok as u32 {
            Ok(ret)
        } else {
            Err(self.jit_error(status, ret))
        }
    }

    /// The runtime error for a nonzero status of compiled code: what the hook recorded (or
    /// the status itself), with the JIT frames' trace entries.
    #[cold]
    fn jit_error(&mut self, status: u32, ret: u64) -> RuntimeError {
        let (entries, pending) = match self.jit.as_mut() {
            // SAFETY: the context is live and no compiled code runs now.
            Some(st) => (
                std::mem::take(unsafe { &mut (*st.ctx).trace }),
                st.pending.take(),
            ),
            None => (Vec::new(), None),
        };
        let innermost = entries.first().map(|e| (e.func, e.pc));
        let fault = match Status::from_u32(status) {
            Some(Status::Exit) => Some(Fault::Exit((ret & 0xFF) as i32)),
            Some(Status::DivZero) => Some(Fault::DivZero),
            Some(Status::Overflow) => Some(Fault::Overflow),
            Some(Status::Stack) => Some(Fault::Stack),
            Some(Status::Fuel) => Some(Fault::Fuel),
            Some(Status::Interrupted) => {
                // The error consumes the request (as in the interpreter's `meter_fault`).
                self.interrupt
                    .store(false, std::sync::atomic::Ordering::Relaxed);
                Some(Fault::Interrupted)
            }
            _ => None,
        };
        let mut err = match (fault, pending) {
            (Some(f), _) | (None, Some(Pending::Fault(f))) => {
                let (code, message) = self.describe(f, innermost);
                RuntimeError {
                    code: code.code(),
                    message,
                    trace: Vec::new(),
                }
            }
            (None, Some(Pending::Error(e))) => e,
            (None, None) => RuntimeError::new(
                ErrorCode::Call,
                format!("internal error: compiled code failed with status {status}"),
            ),
        };
        err.trace
            .extend(entries.iter().flat_map(|e| self.frames_at(e.func, e.pc)));
        err
    }
}

/// True when the native stack pointer is below the limit compiled code may use.
fn below_native_limit(ctx: *mut JitContext) -> bool {
    let here = 0u8;
    let sp = std::hint::black_box(&here) as *const u8 as u64;
    // SAFETY: the context is live (owned by the JIT state); a plain field read.
    let limit = unsafe { (*ctx).native_stack_limit };
    sp < limit
}

/// The context and the VM behind it.
///
/// # Safety
///
/// `ctx` is the live context of a running entry (`Vm::jit_enter`), whose `vm` points to the
/// VM that entered; the hook holds no other reference to either.
unsafe fn vm_of<'a>(ctx: *mut JitContext) -> &'a mut Vm {
    // SAFETY: the caller's contract.
    unsafe { &mut *((*ctx).vm as *mut Vm) }
}

/// Records `fault` for the unwinding and returns [`Status::Error`].
fn fail(vm: &mut Vm, fault: Fault) -> u32 {
    if let Some(st) = vm.jit.as_mut() {
        st.pending = Some(Pending::Fault(fault));
    }
    Status::Error as u32
}

/// Stores a hook's result (or records its fault).
fn done(vm: &mut Vm, ctx: *mut JitContext, r: Result<u64, Fault>) -> u32 {
    match r {
        Ok(v) => {
            // SAFETY: `ctx` is live (hook contract); a plain field write.
            unsafe { (*ctx).ret = v };
            0
        }
        Err(f) => fail(vm, f),
    }
}

/// Defines an `extern "C"` hook whose body gets the VM (`$vm`) and the raw context (`$c`),
/// and runs under [`guard`] so that it never unwinds into compiled code.
macro_rules! hook {
    ($name:ident($($arg:ident: $t:ty),*) |$c:ident, $vm:ident| $body:block) => {
        unsafe extern "C" fn $name($c: *mut JitContext, $($arg: $t),*) -> u32 {
            guard(|| {
                // SAFETY: hooks are called only by compiled code entered through
                // `Vm::jit_enter`, with its live context.
                let $vm = unsafe { vm_of($c) };
                $body
            })
        }
    };
}

hook!(h_call_interp(func: u32, regs: *mut u64) |c, vm| {
    // Compiled code calls here when the callee has no code yet (or the native stack is
    // short): count the call, compile if it is due, and enter the code if there is some. The
    // window holds the arguments and the context the caller's depth, as an entry expects.
    if let Some(entry) = vm.jit_entry(func) {
        // SAFETY: the context is live and set up (we are inside `Vm::jit_enter`); the window
        // was reserved by the caller; `vm` is not used after this call.
        return unsafe { entry(c, regs) };
    }
    // SAFETY: plain reads of the live context (hook contract).
    let (depth, stack_base, fuel) = unsafe { ((*c).depth as usize, (*c).stack_base, (*c).fuel) };
    // Compiled code stored its fuel before the call; the interpreter uses (and `run` charges
    // the callee's entry to) the VM's, which goes back to the context below.
    vm.fuel = fuel;
    let limit = vm.max_depth + vm.hidden_frames;
    if depth >= limit {
        return fail(vm, Fault::Stack);
    }
    let Some(info) = vm.fns.get(func as usize) else {
        return fail(vm, Fault::DeviceOnly);
    };
    let (nregs, ip) = (info.nregs as usize, info.code());
    let base = (regs as usize).wrapping_sub(stack_base as usize) / 8;
    if base + nregs > vm.stack.len() {
        if let Err(f) = vm.grow_stack(base + nregs) {
            return fail(vm, f);
        }
    }
    let saved = (vm.frames_floor, vm.hidden_frames, vm.max_depth);
    let floor = vm.frames.len();
    let hidden = depth.saturating_sub(floor);
    vm.frames_floor = floor;
    vm.hidden_frames = hidden;
    vm.max_depth = limit.saturating_sub(hidden).max(1);
    vm.frames.push(Frame { func, base, ip });
    let r = interp::run(vm, floor);
    vm.frames.truncate(floor);
    (vm.frames_floor, vm.hidden_frames, vm.max_depth) = saved;
    // SAFETY: plain writes to the live context: the interpreter may have moved the stack.
    unsafe {
        (*c).stack_base = vm.stack.as_mut_ptr();
        (*c).stack_len = vm.stack.len() as u64;
        (*c).fuel = vm.fuel;
    }
    match r {
        Ok(v) => {
            // SAFETY: as above.
            unsafe {
                (*c).ret = v;
                (*c).own = vm.own as u64;
            }
            0
        }
        Err(e) => {
            if let Some(st) = vm.jit.as_mut() {
                st.pending = Some(Pending::Error(e));
            }
            Status::Error as u32
        }
    }
});

hook!(h_xpu(func: u32, op: u32, abc: u64, base: u64) |ctx, vm| {
    // Compiled code stored the registers the instruction reads in the window at `base`
    // (`cajeta_bytecode::effects::reads`) and reloads those it writes; the instruction uses
    // them there, as in the interpreter. The xpu code reads register types from
    // the running frame: a frame for the compiled function stands in while it runs.
    let (Some(op), Some(info)) = (
        u16::try_from(op).ok().and_then(Op::from_u16),
        vm.fns.get(func as usize),
    ) else {
        return fail(vm, Fault::DeviceOnly);
    };
    let x = XInstr {
        op: XOp::from_op(op),
        a: abc as u16,
        b: (abc >> 16) as u16,
        c: (abc >> 32) as u16,
    };
    let base = base as usize;
    let ip = info.code();
    vm.frames.push(Frame { func, base, ip });
    let r = crate::xpu::exec_compiled(vm, base, x);
    vm.frames.pop();
    // SAFETY: plain writes to the live context (hook contract): nothing here moves the stack,
    // but a launch may have run code that did.
    unsafe {
        (*ctx).stack_base = vm.stack.as_mut_ptr();
        (*ctx).stack_len = vm.stack.len() as u64;
    }
    match r {
        Ok(()) => 0,
        Err(e) => {
            if let Some(st) = vm.jit.as_mut() {
                st.pending = Some(Pending::Error(e));
            }
            Status::Error as u32
        }
    }
});

hook!(h_grow(cells: u64) |c, vm| {
    if let Err(f) = vm.grow_stack(cells as usize) {
        return fail(vm, f);
    }
    // SAFETY: plain writes to the live context.
    unsafe {
        (*c).stack_base = vm.stack.as_mut_ptr();
        (*c).stack_len = vm.stack.len() as u64;
    }
    0
});

hook!(h_to_string(scalar: u32, bits: u64) |c, vm| {
    let s = Scalar::from_u8(scalar as u8).unwrap_or(Scalar::I64);
    let r = vm.convert_to_string(s, bits);
    done(vm, c, r)
});

hook!(h_concat(x: u64, y: u64) |c, vm| {
    let r = vm.concat(x, y);
    done(vm, c, r)
});

hook!(h_fmt_fixed(bits: u64, decimals: u32) |c, vm| {
    let r = vm.fmt_fixed(bits, decimals as u16);
    done(vm, c, r)
});

hook!(h_format(fmt: u64, strs: u64, vals: u64) |c, vm| {
    let r = vm.format_dyn(fmt, strs, vals);
    done(vm, c, r)
});

hook!(h_parse_int(s: u64) |c, vm| {
    let r = vm.parse_int(s);
    done(vm, c, r)
});

hook!(h_str_len(s: u64, bytes: u32) |c, vm| {
    let r = match vm.heap.str(s) {
        Some(t) => Ok(if bytes != 0 { t.len() } else { t.chars().count() } as u64),
        None => Err(Fault::NullString),
    };
    done(vm, c, r)
});

hook!(h_clock(selector: u32) |c, vm| {
    done(vm, c, Ok(interp::clock(selector as u16) as u64))
});

hook!(h_str_eq(x: u64, y: u64) |c, vm| {
    let r = vm.str_eq(x, y) as u64;
    done(vm, c, Ok(r))
});

hook!(h_print(s: u64, flags: u32) |c, vm| {
    let r = vm.print(s, flags as u16).map(|()| 0);
    done(vm, c, r)
});

hook!(h_new_array(elem: u64, len: u64) |c, vm| {
    let n = len as i64;
    let r = match decode_elem(elem) {
        Some(e) => vm.alloc_array(e, n),
        None => Err(Fault::Size(n)),
    };
    done(vm, c, r)
});

hook!(h_array_len(arr: u64, reg: u32) |c, vm| {
    let r = match vm.heap.get(arr) {
        Some(Obj::Array(a)) => Ok(a.data.len() as u64),
        _ => Err(Fault::BadRef { reg: reg as u16, handle: arr, access: Access::Count }),
    };
    done(vm, c, r)
});

/// Element `i` of `data` as a canonical cell, if `elem` (a [`Scalar`] code or [`ELEM_REF`])
/// is the storage's kind (the interpreter's `aget` arms). `Err(len)`: out of bounds.
fn element(data: &ArrData, elem: u32, i: u64) -> Option<Result<u64, usize>> {
    macro_rules! get {
        ($v:expr, $x:ident => $e:expr) => {
            Some($v.get(i as usize).map(|&$x| $e).ok_or($v.len()))
        };
    }
    match (elem, data) {
        (ELEM_REF, ArrData::Ref(v)) => get!(v, x => x),
        (e, d) => match (Scalar::from_u8(e as u8)?, d) {
            (Scalar::Bool, ArrData::Bool(v)) => get!(v, x => x as u64),
            (Scalar::Char, ArrData::Char(v)) => get!(v, x => x as u64),
            (Scalar::I8, ArrData::I8(v)) => get!(v, x => x as i64 as u64),
            (Scalar::U8, ArrData::U8(v)) => get!(v, x => x as u64),
            (Scalar::I16, ArrData::I16(v)) => get!(v, x => x as i64 as u64),
            (Scalar::U16, ArrData::U16(v))
            | (Scalar::F16, ArrData::F16(v))
            | (Scalar::BF16, ArrData::BF16(v)) => get!(v, x => x as u64),
            (Scalar::I32, ArrData::I32(v)) => get!(v, x => x as i64 as u64),
            (Scalar::U32, ArrData::U32(v)) => get!(v, x => x as u64),
            (Scalar::I64, ArrData::I64(v)) => get!(v, x => x as u64),
            (Scalar::U64, ArrData::U64(v)) => get!(v, x => x),
            (Scalar::F32, ArrData::F32(v)) => get!(v, x => x.to_bits() as u64),
            (Scalar::F64, ArrData::F64(v)) => get!(v, x => x.to_bits()),
            _ => None,
        },
    }
}

/// Stores cell `x` at `i` of `data` (the interpreter's `aset` arms); `None`: wrong kind,
/// `Some(Err(len))`: out of bounds.
fn set_element(data: &mut ArrData, elem: u32, i: u64, x: u64) -> Option<Result<(), usize>> {
    macro_rules! set {
        ($v:expr, $e:expr) => {{
            let len = $v.len();
            Some(match $v.get_mut(i as usize) {
                Some(slot) => {
                    *slot = $e;
                    Ok(())
                }
                None => Err(len),
            })
        }};
    }
    match (elem, data) {
        (ELEM_REF, ArrData::Ref(v)) => set!(v, x),
        (e, d) => match (Scalar::from_u8(e as u8)?, d) {
            (Scalar::Bool, ArrData::Bool(v)) => set!(v, (x != 0) as u8),
            (Scalar::Char, ArrData::Char(v)) => set!(v, x as u32),
            (Scalar::I8, ArrData::I8(v)) => set!(v, x as i8),
            (Scalar::U8, ArrData::U8(v)) => set!(v, x as u8),
            (Scalar::I16, ArrData::I16(v)) => set!(v, x as i16),
            (Scalar::U16, ArrData::U16(v))
            | (Scalar::F16, ArrData::F16(v))
            | (Scalar::BF16, ArrData::BF16(v)) => set!(v, x as u16),
            (Scalar::I32, ArrData::I32(v)) => set!(v, x as i32),
            (Scalar::U32, ArrData::U32(v)) => set!(v, x as u32),
            (Scalar::I64, ArrData::I64(v)) => set!(v, x as i64),
            (Scalar::U64, ArrData::U64(v)) => set!(v, x),
            (Scalar::F32, ArrData::F32(v)) => set!(v, f32::from_bits(x as u32)),
            (Scalar::F64, ArrData::F64(v)) => set!(v, f64::from_bits(x)),
            _ => None,
        },
    }
}

/// `aown.get` / `aown.set` (`set`: the flag to store) in the array hooks, as the interpreter.
fn owns_flag(vm: &mut Vm, arr: u64, index: u64, set: Option<bool>, reg: u32) -> Result<u64, Fault> {
    let r = match set {
        None => vm.heap.elem_owns(arr, index).map(u64::from),
        Some(owns) => vm.heap.set_elem_owns(arr, index, owns).map(|()| 0),
    };
    r.map_err(|e| interp::elem_fault(e, reg as u16, arr, index))
}

hook!(h_array_get(elem: u32, arr: u64, index: u64, reg: u32) |c, vm| {
    match elem {
        ELEM_OWN_FLAG => {
            let r = owns_flag(vm, arr, index, None, reg);
            return done(vm, c, r);
        }
        ELEM_TAKE_OWNED => {
            let h = vm.heap.take_owned_elem(arr);
            return done(vm, c, Ok(h));
        }
        _ => {}
    }
    let got = match vm.heap.get(arr) {
        Some(Obj::Array(a)) => element(&a.data, elem, index),
        _ => None,
    };
    let r = match got {
        Some(Ok(v)) => Ok(v),
        Some(Err(len)) => Err(Fault::Bounds { index: index as i64, len }),
        None => Err(Fault::BadRef { reg: reg as u16, handle: arr, access: Access::Index }),
    };
    done(vm, c, r)
});

hook!(h_array_set(elem: u32, arr: u64, index: u64, value: u64, reg: u32) |c, vm| {
    if elem == ELEM_OWN_FLAG {
        return match owns_flag(vm, arr, index, Some(value != 0), reg) {
            Ok(_) => 0,
            Err(f) => fail(vm, f),
        };
    }
    let got = match vm.heap.get_mut(arr) {
        Some(Obj::Array(a)) => set_element(&mut a.data, elem, index, value),
        _ => None,
    };
    let r = match got {
        Some(Ok(())) => Ok(0),
        Some(Err(len)) => Err(Fault::Bounds { index: index as i64, len }),
        None => Err(Fault::BadRef { reg: reg as u16, handle: arr, access: Access::Index }),
    };
    match r {
        Ok(_) => 0,
        Err(f) => fail(vm, f),
    }
});

hook!(h_new_object(class: u32) |c, vm| {
    let r = vm.new_instance(class);
    done(vm, c, r)
});

hook!(h_get_field(obj: u64, field: u32, reg: u32) |c, vm| {
    let access = if field & FIELD_CHECK_CALL != 0 {
        Access::Call(field as u16)
    } else {
        Access::Field(field as u16)
    };
    let got = match (vm.heap.get(obj), access) {
        (Some(Obj::Instance(_)), Access::Call(_)) => Some(0),
        (Some(Obj::Instance(o)), _) => o.fields.get(field as usize).copied(),
        _ => None,
    };
    let r = got.ok_or(Fault::BadRef {
        reg: reg as u16,
        handle: obj,
        access,
    });
    done(vm, c, r)
});

hook!(h_set_field(obj: u64, field: u32, value: u64, reg: u32) |c, vm| {
    let slot = match vm.heap.get_mut(obj) {
        Some(Obj::Instance(o)) => o.fields.get_mut(field as usize),
        _ => None,
    };
    match slot {
        Some(slot) => {
            *slot = value;
            0
        }
        None => fail(
            vm,
            Fault::BadRef { reg: reg as u16, handle: obj, access: Access::Field(field as u16) },
        ),
    }
});

hook!(h_release(obj: u64) |c, vm| {
    vm.heap.release(obj);
    0
});

/// The hooks over [`Vm`].
fn hooks() -> RuntimeHooks {
    RuntimeHooks {
        call_interp: h_call_interp,
        grow_stack: h_grow,
        to_string: h_to_string,
        concat: h_concat,
        fmt_fixed: h_fmt_fixed,
        format: h_format,
        parse_int: h_parse_int,
        str_len: h_str_len,
        clock: h_clock,
        str_eq: h_str_eq,
        print: h_print,
        new_array: h_new_array,
        array_len: h_array_len,
        array_get: h_array_get,
        array_set: h_array_set,
        new_object: h_new_object,
        get_field: h_get_field,
        set_field: h_set_field,
        release: h_release,
        xpu: h_xpu,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A function compiled on the VM's thread queues the functions with loops it will call:
    /// directly, and through loop-free callees (interpreted until hot), breadth first; not
    /// itself, not twice, and not loop-free ones (they wait for their call count).
    #[test]
    fn loop_callees_reach_through_loop_free_functions() {
        let src = "public class Q {
            static int64 sum(int64 n) { int64 s = 0; for (int64 i = 0; i < n; i++) { s += i; } return s; }
            static int64 deep(int64 n) { while (n > 9) { n = n / 2; } return n; }
            static int64 twice(int64 n) { return sum(n) + deep(n) + sum(n); }
            static int64 plain(int64 n) { return n + 1; }
            static int64 outer(int64 n) { int64 t = 0; for (int64 k = 0; k < n; k++) { t += twice(k) + deep(k); } return t; }
            public static void main(String[] args) {
                for (int64 i = 0; i < 3; i++) {
                    System.stdout.println(\"{} {} {}\", twice(i), plain(i), outer(i));
                }
            }
        }";
        let c = cajeta_compiler::driver::compile_sources(vec![("q.cajeta".into(), src.into())]);
        let module = Arc::new(c.module.expect("compiles"));
        let index = |name: &str| {
            let full = format!("Q.{name}");
            module
                .functions
                .iter()
                .position(|f| f.name == full)
                .expect(name) as u32
        };
        let mut vm = Vm::new(Arc::clone(&module));
        vm.set_jit(JitMode::Auto, false);
        let st = vm.jit.as_ref().expect("a JIT on this host");
        let names = |fs: Vec<u32>| {
            fs.iter()
                .map(|&f| module.functions[f as usize].name.clone())
                .collect::<Vec<_>>()
        };
        // main calls twice, plain, outer; twice (loop-free) calls sum and deep.
        assert_eq!(
            names(st.loop_callees(&module, index("main"))),
            ["Q.outer", "Q.sum", "Q.deep"]
        );
        // A leaf spliced into a loop is no call: deep in outer.
        assert_eq!(
            names(st.loop_callees(&module, index("outer"))),
            ["Q.sum", "Q.deep"]
        );
        assert!(st.loop_callees(&module, index("sum")).is_empty());
    }
}
