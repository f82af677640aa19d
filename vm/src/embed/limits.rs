//! Limits on what a [`Vm`] may do: fuel, interruption from another thread, and a memory cap.
//!
//! # Check points
//!
//! Fuel and interruption are checked at the same **check points** in both tiers: each
//! function entry (a `call`, or the function [`Vm::call`] enters) and each backward jump
//! (a jump whose target is at or before its own pc). A check point first reads the
//! interrupt flag, then uses one unit of fuel, failing when none is left. So a program's fuel
//! use does not depend on whether the interpreter or the JIT runs it.
//!
//! A VM that uses neither (no fuel limit, no interrupt handle taken) runs code without check
//! points: the interpreter's lowered code has none and the JIT compiles none, so it pays
//! nothing. Taking an interrupt handle or setting fuel relowers the code (and restarts the
//! JIT) once; a VM stays metered while an interrupt handle exists.
//!
//! # Errors
//!
//! * `E-FUEL` (`fuel exhausted`): the fuel ran out. The call is abandoned (its objects
//!   released); the VM stays usable: [`Vm::set_fuel`] and call again.
//! * `E-INTERRUPTED` (`interrupted`): the flag was set. Raising the error clears the flag,
//!   so the next call runs; a flag set while no call runs stops the next call at its first
//!   check point.
//! * `E-MEMORY`: a host allocation (array, string, instance) would take host plus device
//!   bytes past [`Vm::set_memory_limit`]; `XPU-E-OOM` for a device allocation over it. Both
//!   are raised at the allocation, as a runtime error of the running call.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::api::{lower_all, Vm};
use crate::jit::JitMode;

/// A handle that stops a [`Vm`]'s running call from any thread (`E-INTERRUPTED` at the next
/// check point: a call or a backward jump, in interpreted and compiled code alike).
///
/// Cheap to clone; `Send + Sync`. Get one with [`Vm::interrupt_handle`], or share one between
/// VMs with [`Vm::set_interrupt_handle`].
///
/// ```
/// # use cajeta_vm::InterruptHandle;
/// let h = InterruptHandle::new();
/// assert!(!h.interrupt(), "it was not set before");
/// assert!(h.is_interrupted());
/// h.clear();
/// assert!(!h.is_interrupted());
/// ```
#[derive(Clone, Debug, Default)]
pub struct InterruptHandle {
    flag: Arc<AtomicBool>,
}

impl InterruptHandle {
    /// A handle not yet attached to a VM (see [`Vm::set_interrupt_handle`]).
    pub fn new() -> InterruptHandle {
        InterruptHandle::default()
    }

    /// Asks the VM to stop its running call (or, if none runs, its next one) with
    /// `E-INTERRUPTED`. Returns whether a request was already pending (a second Ctrl-C, say).
    pub fn interrupt(&self) -> bool {
        self.flag.swap(true, Ordering::SeqCst)
    }

    /// Withdraws a pending request.
    pub fn clear(&self) {
        self.flag.store(false, Ordering::SeqCst);
    }

    /// True while a request is pending (the VM clears it when it raises `E-INTERRUPTED`).
    pub fn is_interrupted(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }
}

/// The memory limit the `cajeta` command gives a program by default: the machine's physical
/// memory, or the process's address-space limit (`ulimit -v`) when that is lower; `None` when
/// neither is known. A program that would need more ends in `E-MEMORY` at the allocation
/// instead of being killed by the system once it touches memory it was promised.
pub fn system_memory_limit() -> Option<u64> {
    // SAFETY: `sysconf` only reads configuration values; it has no preconditions.
    let (pages, page) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    let physical = (pages > 0 && page > 0).then(|| (pages as u64).saturating_mul(page as u64));
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `rl` is a valid, writable `rlimit` for the duration of the call.
    let address_space = (unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut rl) } == 0
        && rl.rlim_cur != libc::RLIM_INFINITY)
        .then_some(rl.rlim_cur);
    match (physical, address_space) {
        (Some(p), Some(a)) => Some(p.min(a)),
        (p, a) => p.or(a),
    }
}

/// Whether `bytes` could be allocated at all on this machine, within
/// [`system_memory_limit`] (measured once per process): an array larger than that has an
/// unallocatable length (`E-SIZE`, LANGUAGE §6.1) whatever the VM's own limit.
pub(crate) fn machine_allows(bytes: u64) -> bool {
    static MACHINE: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    MACHINE
        .get_or_init(system_memory_limit)
        .is_none_or(|m| bytes <= m)
}

/// A VM's memory in use, as the memory limit counts it ([`Vm::memory_usage`]).
#[derive(Copy, Clone, PartialEq, Eq, Debug, Default)]
pub struct MemoryUsage {
    /// Bytes of live strings' text, arrays' elements and instances' fields.
    pub host: u64,
    /// Bytes of live device storage of this VM's buffers.
    pub device: u64,
}

impl MemoryUsage {
    /// `host + device`.
    pub fn total(&self) -> u64 {
        self.host.saturating_add(self.device)
    }
}

impl Vm {
    /// Sets the fuel (`Some(n)`: `n` more check points may pass; `None`: unlimited). See the
    /// [module documentation](self) for what uses fuel; running out is `E-FUEL`, after which
    /// the VM can be refuelled and called again.
    ///
    /// ```
    /// # use cajeta_vm::{Engine, Module, Vm};
    /// let engine = Engine::default();
    /// let src = "class Spin { static void forever() { while (true) { } } }";
    /// let module = Module::from_source(&engine, "Spin.cajeta", src)?;
    /// let mut vm = Vm::instantiate(&engine, &module);
    /// vm.set_fuel(Some(1000));
    /// let e = vm.call::<(), ()>("Spin.forever", ()).unwrap_err();
    /// assert_eq!(e.code, "E-FUEL");
    /// assert_eq!(vm.fuel(), Some(0));
    /// # Ok::<(), cajeta_vm::Error>(())
    /// ```
    pub fn set_fuel(&mut self, fuel: Option<u64>) {
        match fuel {
            Some(n) => {
                self.fuel = i64::try_from(n).unwrap_or(i64::MAX);
                self.fuel_limited = true;
                self.set_metered(true);
            }
            None => {
                self.fuel = i64::MAX;
                self.fuel_limited = false;
                // Still metered while someone can interrupt.
                let handles = Arc::strong_count(&self.interrupt) > 1;
                self.set_metered(handles);
            }
        }
    }

    /// The fuel left (`None`: unlimited).
    pub fn fuel(&self) -> Option<u64> {
        self.fuel_limited.then(|| self.fuel.max(0) as u64)
    }

    /// A handle that interrupts this VM's running call from any thread (see
    /// [`InterruptHandle`]). The VM checks for interruption from now on (the first handle
    /// relowers its code; see the [module documentation](self)).
    ///
    /// ```
    /// # use cajeta_vm::{Engine, Module, Vm};
    /// let engine = Engine::default();
    /// let src = "class Spin { static void forever() { while (true) { } } }";
    /// let module = Module::from_source(&engine, "Spin.cajeta", src)?;
    /// let mut vm = Vm::instantiate(&engine, &module);
    /// let handle = vm.interrupt_handle();
    /// let stopper = std::thread::spawn(move || {
    ///     std::thread::sleep(std::time::Duration::from_millis(20));
    ///     handle.interrupt();
    /// });
    /// let e = vm.call::<(), ()>("Spin.forever", ()).unwrap_err();
    /// assert_eq!(e.code, "E-INTERRUPTED");
    /// stopper.join().unwrap();
    /// # Ok::<(), cajeta_vm::Error>(())
    /// ```
    pub fn interrupt_handle(&mut self) -> InterruptHandle {
        self.set_metered(true);
        InterruptHandle {
            flag: Arc::clone(&self.interrupt),
        }
    }

    /// Makes `handle` this VM's interrupt flag (so one handle can serve a series of VMs, as
    /// the REPL's Ctrl-C does across `:reset`). A pending request on it stays pending.
    pub fn set_interrupt_handle(&mut self, handle: &InterruptHandle) {
        self.interrupt = Arc::clone(&handle.flag);
        self.set_metered(true);
    }

    /// Sets the memory limit on host bytes (strings, arrays, instances) plus this VM's live
    /// device bytes (`None`: no limit). Objects already live stay; an allocation that would
    /// pass the limit fails with `E-MEMORY` (host) or `XPU-E-OOM` (device).
    ///
    /// ```
    /// # use cajeta_vm::{Engine, Module, Vm};
    /// let engine = Engine::default();
    /// let src = "class Big { static int64 make(int64 n) { int64[] a = heap int64[n]; return a.count(); } }";
    /// let module = Module::from_source(&engine, "Big.cajeta", src)?;
    /// let mut vm = Vm::instantiate(&engine, &module);
    /// vm.set_memory_limit(Some(1 << 20));
    /// assert_eq!(vm.call::<i64, i64>("Big.make", 1000)?, 1000);
    /// let e = vm.call::<i64, i64>("Big.make", 1 << 20).unwrap_err();
    /// assert_eq!(e.code, "E-MEMORY");
    /// assert_eq!(vm.call::<i64, i64>("Big.make", 10)?, 10, "the VM stays usable");
    /// # Ok::<(), cajeta_vm::Error>(())
    /// ```
    pub fn set_memory_limit(&mut self, bytes: Option<u64>) {
        self.heap.set_limit(bytes);
    }

    /// The memory limit ([`Vm::set_memory_limit`]), if any.
    pub fn memory_limit(&self) -> Option<u64> {
        self.heap.limit()
    }

    /// The memory this VM holds now, as the limit counts it.
    pub fn memory_usage(&self) -> MemoryUsage {
        MemoryUsage {
            host: self.heap.host_bytes(),
            device: self.heap.device_meter().get(),
        }
    }

    /// Switches check points on or off: relowers every function and, if the JIT is on,
    /// restarts it (compiled code is compiled with or without them). Never called while
    /// code runs (it needs `&mut self`, which no host function gets).
    pub(crate) fn set_metered(&mut self, on: bool) {
        if self.metered == on {
            return;
        }
        self.metered = on;
        let module = Arc::clone(&self.module);
        // Keep the constants' cells; drop the immediates the old lowering appended.
        self.kvals.truncate(module.consts.len());
        self.fns = lower_all(&module, &mut self.kvals, on);
        let mode = self.jit_mode();
        if mode != JitMode::Off {
            let verbose = self.jit.as_ref().is_some_and(|j| j.verbose);
            self.set_jit(mode, verbose);
        }
    }
}
