//! The device interpreter: runs one work-item of a kernel until it finishes, reaches a
//! rendezvous (a `barrier` or a wave collective), or faults.
//!
//! Each item has its own register stack and call stack ([`Item`]); the lane scheduler
//! ([`super::lanes`]) decides which item runs. Calls use the host's window convention
//! (`call a b c`: the callee's frame starts at caller register `b`, its result goes to `r[a]`).
//! The item's stack is allocated once with the size the kernel's [`Plan`] computed, so a call
//! never grows it, and a new frame's non-parameter registers are zeroed: a register read before
//! any write (the verifier does not prove definite assignment) reads 0, the same on every
//! schedule.
//!
//! Arithmetic follows the host interpreter (`vm/src/interp`) exactly: canonical cells
//! (`bytecode::types`), wrapping integers, shifts modulo the width, saturating float-to-integer
//! conversions, checked division (`E-DIVZERO`, `E-OVERFLOW`), `fmod`, and `Math` functions with
//! float32 transcendentals computed in float64 and rounded once.
//!
//! Soundness never depends on register *contents*: registers and code are accessed with
//! checked indexing, a buffer or shared handle is an index into the launch's memory table
//! checked on every access ([`MemRef`]'s accessors), and element indices are bounds-checked.
//! Malformed bytecode can therefore produce a wrong value or a fault, never undefined behaviour.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use cajeta_bytecode::{float, half, Const, Instr, Module, Op};

use super::memory::{alloc_filled, MemRef};
use super::plan::Plan;
use super::wave::WaveOp;

/// Number of `geom` selectors: 0-2 item, 3-5 workgroup, 6-8 block size, 9-11 global id,
/// 12-14 grid size in workgroups, 15 wave width, 16 lane id.
pub(crate) const GEOM_LEN: usize = 17;

/// A saved caller frame.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Frame {
    /// The caller.
    func: u32,
    /// The caller's pc after its `call` instruction.
    ret_pc: u32,
    /// The caller's window start in the stack.
    base: usize,
}

/// Why an item stopped running.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) enum Stop {
    /// The kernel returned.
    Done,
    /// The item waits at the `barrier` at `pc` of function `func`; it resumes after it.
    Barrier {
        /// Function of the barrier.
        func: u32,
        /// pc of the barrier.
        pc: u32,
    },
    /// The item waits at the wave collective at `pc` of function `func`; it resumes after it
    /// once the scheduler has written the result to register `dst` ([`Item::set_reg`]).
    Collective {
        /// Function of the collective.
        func: u32,
        /// pc of the collective.
        pc: u32,
        /// The operation.
        op: WaveOp,
        /// The result register (in the frame of `func`).
        dst: u16,
        /// This lane's operand cell.
        value: u64,
    },
    /// The item faulted; its [`Item::fault_frames`] locate the fault.
    Fault(FaultKind),
}

/// What went wrong, with just enough data to write the message later.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) enum FaultKind {
    /// Element index out of range of the memory `handle` named by register `reg`.
    Bounds {
        /// The index.
        index: i64,
        /// The memory-table handle.
        handle: u64,
        /// The register holding the handle (for the variable name).
        reg: u16,
    },
    /// `chk.idx`: index `index` is outside `0…len−1` of the shared array or vector whose
    /// register is `reg` (a dynamic shared array's length, a vector's lane count).
    Index {
        /// The index.
        index: i64,
        /// The length it was checked against.
        len: i64,
        /// The register of the checked array (a shared array, or a vector's lane 0).
        reg: u16,
    },
    /// Register `reg` holds no valid buffer or shared handle of the access's element width
    /// (only possible in bytecode that reads a register before writing it).
    BadHandle {
        /// The register holding the handle.
        reg: u16,
    },
    /// Integer division or remainder by zero.
    DivZero,
    /// Signed `MIN / -1`.
    Overflow,
    /// Items wait at different rendezvous that each needs the other to complete (raised by
    /// the scheduler); the item reported reached a barrier (`false`) or a wave collective
    /// (`true`).
    Divergent {
        /// The reported item stopped at a wave collective.
        collective: bool,
    },
    /// The item's `shuffleSync` or `rotate` (`rotate: true`) read wave lane `lane`, which is
    /// inactive (raised by the scheduler).
    InactiveLane {
        /// The collective was a rotate.
        rotate: bool,
        /// The lane read.
        lane: u32,
    },
    /// The call depth exceeded the kernel's plan (impossible for a plan-checked kernel).
    Stack,
    /// An instruction the device cannot run or a control transfer outside the code (excluded
    /// by the verifier and the plan).
    Internal(&'static str),
}

/// What a running item sees of its launch: the module, the memory table (the buffer arguments
/// in parameter order, then the kernel's shared arrays) and where shared handles start.
pub(crate) struct Env<'a> {
    /// The kernel's module.
    pub module: &'a Module,
    /// The memory table: buffer handles `0..nbuf`, shared handle `nbuf + slot`.
    pub mems: &'a [MemRef<'a>],
    /// Number of buffer arguments.
    pub nbuf: u64,
    /// The kernel's plan (for the depth limit).
    pub plan: &'a Plan,
}

/// One work-item's execution state.
#[derive(Debug)]
pub(crate) struct Item {
    /// The register stack (`plan.stack_cells` cells).
    stack: Box<[u64]>,
    /// Saved caller frames, outermost first.
    frames: Vec<Frame>,
    /// The running function.
    func: u32,
    /// The next instruction (at a stop: see [`Item::fault_frames`]).
    pc: u32,
    /// The running function's window start.
    base: usize,
    /// The `geom` values of this item.
    pub geo: [u64; GEOM_LEN],
    /// Where a resumable compiled kernel continues this item (0: from the start); see
    /// `super::compiled::step`.
    pub resume: u64,
    /// Where compiled code already ran this item to, in a lockstep group, before the scheduler
    /// got to it (see `super::compiled::step_at`).
    pub ahead: Option<super::compiled::Ahead>,
    /// Register files of a compiled lockstep group, kept from workgroup to workgroup (see
    /// `super::compiled::lockstep`).
    pub files: Vec<u64>,
    /// Turn slots of a compiled kernel's run of workgroups, kept from run to run (see
    /// `super::compiled::turns`).
    pub turns: Vec<u64>,
}

impl Item {
    /// An item with a stack of `cells` registers; `None` if the memory cannot be had.
    pub(crate) fn new(cells: usize) -> Option<Item> {
        Some(Item {
            stack: alloc_filled(cells, 0)?,
            frames: Vec::new(),
            func: 0,
            pc: 0,
            base: 0,
            geo: [0; GEOM_LEN],
            resume: 0,
            ahead: None,
            files: Vec::new(),
            turns: Vec::new(),
        })
    }

    /// Prepares the item to run kernel `kernel` from its start, with `frame` (the parameters,
    /// then zeros up to the kernel's register count) as its first registers.
    #[inline]
    pub(crate) fn start(&mut self, kernel: u32, frame: &[u64]) {
        // One copy of a prepared frame: cheaper per item than a copy plus a fill.
        let n = frame.len().min(self.stack.len());
        self.stack[..n].copy_from_slice(&frame[..n]);
        self.reset(kernel);
    }

    /// [`Item::start`] but for the registers, which the caller fills (from a compiled group's
    /// files, or with [`Item::start`] before the item runs from its start).
    #[inline]
    pub(crate) fn reset(&mut self, kernel: u32) {
        self.frames.clear();
        self.func = kernel;
        self.pc = 0;
        self.base = 0;
        self.resume = 0;
        self.ahead = None;
    }

    /// Places the item at the innermost of `frames` (`(function, pc)`, innermost first), the
    /// others as its callers stopped at their calls: how a fault in compiled code with
    /// inlined device calls is reported as the interpreter reports its own.
    pub(crate) fn place_frames(&mut self, frames: &[(u32, u32)]) {
        let Some((&(func, pc), callers)) = frames.split_first() else {
            return;
        };
        self.frames.clear();
        self.frames
            .extend(callers.iter().rev().map(|&(func, call)| Frame {
                func,
                ret_pc: call + 1,
                base: 0,
            }));
        self.func = func;
        self.pc = pc;
        self.base = 0;
    }

    /// The item's register stack (the running kernel's registers first, when it has no
    /// callers: what a resumable compiled kernel reads and writes).
    pub(crate) fn registers(&mut self) -> &mut [u64] {
        &mut self.stack
    }

    /// The device frames of the stopped item, innermost first, as `(function, pc)`: the
    /// instruction that stopped it, then each caller's `call`.
    pub(crate) fn fault_frames(&self) -> Vec<(u32, u32)> {
        let mut out = vec![(self.func, self.pc)];
        out.extend(
            self.frames
                .iter()
                .rev()
                .map(|f| (f.func, f.ret_pc.saturating_sub(1))),
        );
        out
    }

    /// The running function and pc (after a fault: the faulting instruction).
    pub(crate) fn position(&self) -> (u32, u32) {
        (self.func, self.pc)
    }

    /// Sets register `r` of the running frame (a collective's result, written while the item
    /// waits). The interpreter checked `r` against the frame before stopping; a register
    /// outside the stack is ignored all the same.
    pub(crate) fn set_reg(&mut self, r: u16, v: u64) {
        if let Some(x) = self.stack.get_mut(self.base + usize::from(r)) {
            *x = v;
        }
    }
}

// Little-endian element helpers: memory holds elements little-endian (as every backend);
// both conversions are no-ops on little-endian hosts.

/// Atomically adds `v` to a little-endian u32 element; returns the old value.
#[inline(always)]
fn add_u32(cell: &AtomicU32, v: u32) -> u32 {
    if cfg!(target_endian = "little") {
        cell.fetch_add(v, Ordering::SeqCst)
    } else {
        update_u32(cell, |old| old.wrapping_add(v))
    }
}

/// Atomically adds `v` to a little-endian u64 element; returns the old value.
#[inline(always)]
fn add_u64(cell: &AtomicU64, v: u64) -> u64 {
    if cfg!(target_endian = "little") {
        cell.fetch_add(v, Ordering::SeqCst)
    } else {
        let mut cur = cell.load(Ordering::SeqCst);
        loop {
            let old = u64::from_le(cur);
            let new = old.wrapping_add(v).to_le();
            match cell.compare_exchange_weak(cur, new, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => return old,
                Err(x) => cur = x,
            }
        }
    }
}

/// Atomically replaces a little-endian u32 element `x` by `f(x)` (a compare-exchange loop on
/// the bits); returns the old value.
#[inline(always)]
fn update_u32(cell: &AtomicU32, f: impl Fn(u32) -> u32) -> u32 {
    let mut cur = cell.load(Ordering::SeqCst);
    loop {
        let old = u32::from_le(cur);
        let new = f(old).to_le();
        match cell.compare_exchange_weak(cur, new, Ordering::SeqCst, Ordering::SeqCst) {
            Ok(_) => return old,
            Err(x) => cur = x,
        }
    }
}

/// Atomically replaces a little-endian u64 element `x` by `f(x)`; returns the old value.
#[inline(always)]
fn update_u64(cell: &AtomicU64, f: impl Fn(u64) -> u64) -> u64 {
    let mut cur = cell.load(Ordering::SeqCst);
    loop {
        let old = u64::from_le(cur);
        let new = f(old).to_le();
        match cell.compare_exchange_weak(cur, new, Ordering::SeqCst, Ordering::SeqCst) {
            Ok(_) => return old,
            Err(x) => cur = x,
        }
    }
}

/// Whether an atomic opcode's element type is signed (its old value is sign-extended).
fn op_signed(op: Op) -> bool {
    op.mnemonic().ends_with(".i32") || op.mnemonic().ends_with(".i64")
}

/// Re-canonicalises the low 8 bits as `int8`.
#[inline(always)]
fn sx8(x: u64) -> u64 {
    x as i8 as i64 as u64
}
/// Re-canonicalises the low 16 bits as `int16`.
#[inline(always)]
fn sx16(x: u64) -> u64 {
    x as i16 as i64 as u64
}
/// Re-canonicalises the low 32 bits as `int32`.
#[inline(always)]
fn sx32(x: u64) -> u64 {
    x as i32 as i64 as u64
}
/// The float32 of a cell.
#[inline(always)]
fn f32b(x: u64) -> f32 {
    f32::from_bits(x as u32)
}
/// The cell of a float32.
#[inline(always)]
fn bf32(x: f32) -> u64 {
    u64::from(x.to_bits())
}
/// The float64 of a cell.
#[inline(always)]
fn f64b(x: u64) -> f64 {
    f64::from_bits(x)
}
/// The cell of a float64.
#[inline(always)]
fn bf64(x: f64) -> u64 {
    x.to_bits()
}
/// Signed minimum of canonical cells.
#[inline(always)]
fn smin(x: u64, y: u64) -> u64 {
    if (x as i64) <= (y as i64) {
        x
    } else {
        y
    }
}
/// Signed maximum of canonical cells.
#[inline(always)]
fn smax(x: u64, y: u64) -> u64 {
    if (x as i64) >= (y as i64) {
        x
    } else {
        y
    }
}

/// `MathFn` `sel` on a `float64` (see [`cajeta_bytecode::MathFn::eval_f64`]).
#[inline]
pub(crate) fn math1_f64(sel: u16, x: f64) -> f64 {
    cajeta_bytecode::MathFn::eval_f64_sel(sel, x)
}

/// `MathFn` `sel` on a `float32` (see [`cajeta_bytecode::MathFn::eval_f32`]).
#[inline]
pub(crate) fn math1_f32(sel: u16, x: f32) -> f32 {
    cajeta_bytecode::MathFn::eval_f32_sel(sel, x)
}

/// Runs `it` until it finishes, reaches a rendezvous or faults. On return the item's position is
/// the instruction after the rendezvous (to resume) or the faulting instruction.
pub(crate) fn run(env: &Env<'_>, it: &mut Item) -> Stop {
    let m = env.module;
    let Item {
        stack,
        frames,
        func: it_func,
        pc: it_pc,
        base: it_base,
        geo,
        resume: _,
        ahead: _,
        files: _,
        turns: _,
    } = it;
    let stack: &mut [u64] = stack;
    let mut func = *it_func;
    let Some(f) = m.functions.get(func as usize) else {
        return Stop::Fault(FaultKind::Internal("no such function"));
    };
    let mut code: &[Instr] = &f.code;
    let mut pc = *it_pc as usize;
    let mut base = *it_base;
    let Some(mut regs) = stack.get_mut(base..base + f.regs.len()) else {
        return Stop::Fault(FaultKind::Internal("frame outside the stack"));
    };

    // Leaves the loop, saving the position: `$pc` is the pc to record.
    macro_rules! stop {
        ($pc:expr, $why:expr) => {{
            *it_func = func;
            *it_pc = $pc as u32;
            *it_base = base;
            return $why;
        }};
    }
    macro_rules! fault {
        ($k:expr) => {
            stop!(pc - 1, Stop::Fault($k))
        };
    }

    loop {
        let Some(&ins) = code.get(pc) else {
            // Excluded by V-TERM and V-JUMP.
            stop!(pc, Stop::Fault(FaultKind::Internal("pc outside the code")));
        };
        pc += 1;
        let (a, b, c) = (usize::from(ins.a), usize::from(ins.b), usize::from(ins.c));

        macro_rules! bin {
            ($x:ident, $y:ident => $e:expr) => {{
                let $x = regs[b];
                let $y = regs[c];
                regs[a] = $e;
            }};
        }
        macro_rules! un {
            ($x:ident => $e:expr) => {{
                let $x = regs[b];
                regs[a] = $e;
            }};
        }
        macro_rules! binf32 {
            ($x:ident, $y:ident => $e:expr) => {
                bin!(p, q => { let $x = f32b(p); let $y = f32b(q); bf32($e) })
            };
        }
        macro_rules! binf64 {
            ($x:ident, $y:ident => $e:expr) => {
                bin!(p, q => { let $x = f64b(p); let $y = f64b(q); bf64($e) })
            };
        }
        macro_rules! sdiv {
            ($min:expr) => {{
                let n = regs[b] as i64;
                let d = regs[c] as i64;
                if d == 0 {
                    fault!(FaultKind::DivZero);
                }
                if d == -1 && n == $min as i64 {
                    fault!(FaultKind::Overflow);
                }
                regs[a] = n.wrapping_div(d) as u64;
            }};
        }
        macro_rules! srem {
            () => {{
                let n = regs[b] as i64;
                let d = regs[c] as i64;
                if d == 0 {
                    fault!(FaultKind::DivZero);
                }
                // MIN % -1 is 0; the dividend's sign otherwise.
                regs[a] = n.wrapping_rem(d) as u64;
            }};
        }
        macro_rules! udiv {
            ($op:tt) => {{
                let n = regs[b];
                let d = regs[c];
                if d == 0 {
                    fault!(FaultKind::DivZero);
                }
                regs[a] = n $op d;
            }};
        }
        macro_rules! jump {
            () => {
                pc = ins.bc() as usize
            };
        }
        macro_rules! mem_width_of {
            (at8) => {
                1
            };
            (at16) => {
                2
            };
            (at32) => {
                4
            };
            (at64) => {
                8
            };
        }
        // The element `$idx` of memory handle r[$mreg] through accessor `$acc`, or a fault.
        macro_rules! elem {
            ($acc:ident, $mreg:expr, $idx:expr) => {{
                let h = regs[$mreg];
                let i = regs[$idx] as i64;
                let mem = usize::try_from(h).ok().and_then(|h| env.mems.get(h));
                match mem.map(|mem| (mem, mem.$acc(i))) {
                    Some((_, Some(cell))) => cell,
                    Some((mem, None)) if mem_width_of!($acc) == mem.width() => {
                        fault!(FaultKind::Bounds {
                            index: i,
                            handle: h,
                            reg: $mreg as u16
                        })
                    }
                    _ => fault!(FaultKind::BadHandle { reg: $mreg as u16 }),
                }
            }};
        }
        // atom.OP.T a b c on a 32-bit element: r[a] := old element r[c] of r[b], the element
        // becoming f(old, r[a]); the old value is re-canonicalised for the opcode's type.
        macro_rules! atom32 {
            (|$x:ident, $v:ident| $e:expr) => {{
                let $v = regs[a] as u32;
                let old = update_u32(elem!(at32, b, c), |$x| $e);
                regs[a] = if op_signed(ins.op) {
                    old as i32 as i64 as u64
                } else {
                    u64::from(old)
                };
            }};
        }
        // The same on a 64-bit element.
        macro_rules! atom64 {
            (|$x:ident, $v:ident| $e:expr) => {{
                let $v = regs[a];
                regs[a] = update_u64(elem!(at64, b, c), |$x| $e);
            }};
        }
        // ld.T a b c: r[a] := element r[c] of r[b], converted from its little-endian bits.
        macro_rules! ld {
            ($acc:ident, $from:ident, $x:ident => $e:expr) => {{
                let $x = $from::from_le(elem!($acc, b, c).load(Ordering::Relaxed));
                regs[a] = $e;
            }};
        }
        // st.T a b c: element r[b] of r[a] := r[c] truncated to the width.
        macro_rules! st {
            ($acc:ident, $to:ty) => {{
                let v = regs[c] as $to;
                elem!($acc, a, b).store(v.to_le(), Ordering::Relaxed);
            }};
        }

        match ins.op {
            Op::Nop => {}
            Op::Mov => un!(x => x),
            Op::LoadK => {
                regs[a] = match m.consts.get(ins.bc() as usize) {
                    Some(Const::Bits(bits)) => *bits,
                    // A string constant (no use in device code) or an index excluded by V-CONST.
                    _ => 0,
                }
            }
            Op::LoadI => regs[a] = ins.bc() as i32 as i64 as u64,
            Op::LoadNull => regs[a] = 0,
            Op::Jmp => jump!(),
            Op::JmpIf => {
                if regs[a] != 0 {
                    jump!()
                }
            }
            Op::JmpIfNot => {
                if regs[a] == 0 {
                    jump!()
                }
            }
            Op::Call => {
                let Some(callee) = m.functions.get(c) else {
                    fault!(FaultKind::Internal("call of a missing function"));
                };
                // The plan bounds the depth (no recursion); this guards against a wrong plan.
                if frames.len() + 2 > env.plan.max_depth {
                    fault!(FaultKind::Stack);
                }
                let nb = base + b;
                let n = callee.regs.len();
                let params = usize::from(callee.params).min(n);
                if nb + n > stack.len() {
                    fault!(FaultKind::Stack);
                }
                frames.push(Frame {
                    func,
                    ret_pc: pc as u32,
                    base,
                });
                stack[nb + params..nb + n].fill(0);
                func = c as u32;
                code = &callee.code;
                base = nb;
                pc = 0;
                regs = &mut stack[nb..nb + n];
            }
            Op::Ret | Op::RetVoid => {
                let v = if ins.op == Op::Ret { regs[a] } else { 0 };
                let Some(caller) = frames.pop() else {
                    stop!(pc - 1, Stop::Done);
                };
                func = caller.func;
                let Some(cf) = m.functions.get(func as usize) else {
                    fault!(FaultKind::Internal("no such function"));
                };
                code = &cf.code;
                pc = caller.ret_pc as usize;
                base = caller.base;
                // The caller's window fitted when it made the call.
                regs = &mut stack[base..base + cf.regs.len()];
                if ins.op == Op::Ret {
                    // V-CALL: a non-void callee's result register is a caller register.
                    if let Some(call) = code.get(pc - 1) {
                        regs[usize::from(call.a)] = v;
                    }
                }
            }

            // Integer arithmetic: 64-bit cells, re-canonicalised to the width.
            Op::AddI8 => bin!(x, y => sx8(x.wrapping_add(y))),
            Op::SubI8 => bin!(x, y => sx8(x.wrapping_sub(y))),
            Op::MulI8 => bin!(x, y => sx8(x.wrapping_mul(y))),
            Op::DivI8 => sdiv!(i8::MIN),
            Op::RemI8 => srem!(),
            Op::NegI8 => un!(x => sx8(x.wrapping_neg())),
            Op::AddU8 => bin!(x, y => x.wrapping_add(y) & 0xff),
            Op::SubU8 => bin!(x, y => x.wrapping_sub(y) & 0xff),
            Op::MulU8 => bin!(x, y => x.wrapping_mul(y) & 0xff),
            Op::DivU8 => udiv!(/),
            Op::RemU8 => udiv!(%),
            Op::NegU8 => un!(x => x.wrapping_neg() & 0xff),
            Op::AddI16 => bin!(x, y => sx16(x.wrapping_add(y))),
            Op::SubI16 => bin!(x, y => sx16(x.wrapping_sub(y))),
            Op::MulI16 => bin!(x, y => sx16(x.wrapping_mul(y))),
            Op::DivI16 => sdiv!(i16::MIN),
            Op::RemI16 => srem!(),
            Op::NegI16 => un!(x => sx16(x.wrapping_neg())),
            Op::AddU16 => bin!(x, y => x.wrapping_add(y) & 0xffff),
            Op::SubU16 => bin!(x, y => x.wrapping_sub(y) & 0xffff),
            Op::MulU16 => bin!(x, y => x.wrapping_mul(y) & 0xffff),
            Op::DivU16 => udiv!(/),
            Op::RemU16 => udiv!(%),
            Op::NegU16 => un!(x => x.wrapping_neg() & 0xffff),
            Op::AddI32 => bin!(x, y => sx32(x.wrapping_add(y))),
            Op::SubI32 => bin!(x, y => sx32(x.wrapping_sub(y))),
            Op::MulI32 => bin!(x, y => sx32(x.wrapping_mul(y))),
            Op::DivI32 => sdiv!(i32::MIN),
            Op::RemI32 => srem!(),
            Op::NegI32 => un!(x => sx32(x.wrapping_neg())),
            Op::AddU32 => bin!(x, y => x.wrapping_add(y) & 0xffff_ffff),
            Op::SubU32 => bin!(x, y => x.wrapping_sub(y) & 0xffff_ffff),
            Op::MulU32 => bin!(x, y => x.wrapping_mul(y) & 0xffff_ffff),
            Op::DivU32 => udiv!(/),
            Op::RemU32 => udiv!(%),
            Op::NegU32 => un!(x => x.wrapping_neg() & 0xffff_ffff),
            Op::AddI64 | Op::AddU64 => bin!(x, y => x.wrapping_add(y)),
            Op::SubI64 | Op::SubU64 => bin!(x, y => x.wrapping_sub(y)),
            Op::MulI64 | Op::MulU64 => bin!(x, y => x.wrapping_mul(y)),
            Op::DivI64 => sdiv!(i64::MIN),
            Op::RemI64 => srem!(),
            Op::NegI64 | Op::NegU64 => un!(x => x.wrapping_neg()),
            Op::DivU64 => udiv!(/),
            Op::RemU64 => udiv!(%),
            Op::AddImmI32 => un!(x => sx32(x.wrapping_add(ins.c as i16 as i64 as u64))),
            Op::AddImmI64 => un!(x => x.wrapping_add(ins.c as i16 as i64 as u64)),

            // Floats: IEEE, one rounding per operation (Rust never contracts).
            Op::AddF32 => binf32!(x, y => x + y),
            Op::SubF32 => binf32!(x, y => x - y),
            Op::MulF32 => binf32!(x, y => x * y),
            Op::DivF32 => binf32!(x, y => x / y),
            Op::RemF32 => binf32!(x, y => x % y),
            Op::NegF32 => un!(x => bf32(-f32b(x))),
            Op::AddF64 => binf64!(x, y => x + y),
            Op::SubF64 => binf64!(x, y => x - y),
            Op::MulF64 => binf64!(x, y => x * y),
            Op::DivF64 => binf64!(x, y => x / y),
            Op::RemF64 => binf64!(x, y => x % y),
            Op::NegF64 => un!(x => bf64(-f64b(x))),

            // Shifts: the amount is the right operand's low log2(width) bits.
            Op::ShlI8 => bin!(x, y => sx8(x << (y & 7))),
            Op::ShrI8 => bin!(x, y => ((x as i64) >> (y & 7)) as u64),
            Op::UshrI8 => bin!(x, y => sx8((x & 0xff) >> (y & 7))),
            Op::NotI8 | Op::NotI16 | Op::NotI32 | Op::NotI64 | Op::NotU64 => un!(x => !x),
            Op::MinI8 | Op::MinI16 | Op::MinI32 | Op::MinI64 => bin!(x, y => smin(x, y)),
            Op::MaxI8 | Op::MaxI16 | Op::MaxI32 | Op::MaxI64 => bin!(x, y => smax(x, y)),
            Op::AbsI8 => un!(x => sx8((x as i64).wrapping_abs() as u64)),
            Op::ShlU8 => bin!(x, y => (x << (y & 7)) & 0xff),
            Op::ShrU8 | Op::UshrU8 => bin!(x, y => x >> (y & 7)),
            Op::NotU8 => un!(x => !x & 0xff),
            Op::MinU8 | Op::MinU16 | Op::MinU32 | Op::MinU64 => bin!(x, y => x.min(y)),
            Op::MaxU8 | Op::MaxU16 | Op::MaxU32 | Op::MaxU64 => bin!(x, y => x.max(y)),
            Op::ShlI16 => bin!(x, y => sx16(x << (y & 15))),
            Op::ShrI16 => bin!(x, y => ((x as i64) >> (y & 15)) as u64),
            Op::UshrI16 => bin!(x, y => sx16((x & 0xffff) >> (y & 15))),
            Op::AbsI16 => un!(x => sx16((x as i64).wrapping_abs() as u64)),
            Op::ShlU16 => bin!(x, y => (x << (y & 15)) & 0xffff),
            Op::ShrU16 | Op::UshrU16 => bin!(x, y => x >> (y & 15)),
            Op::NotU16 => un!(x => !x & 0xffff),
            Op::ShlI32 => bin!(x, y => sx32(x << (y & 31))),
            Op::ShrI32 => bin!(x, y => ((x as i64) >> (y & 31)) as u64),
            Op::UshrI32 => bin!(x, y => sx32((x & 0xffff_ffff) >> (y & 31))),
            Op::AbsI32 => un!(x => sx32((x as i64).wrapping_abs() as u64)),
            Op::ShlU32 => bin!(x, y => (x << (y & 31)) & 0xffff_ffff),
            Op::ShrU32 | Op::UshrU32 => bin!(x, y => x >> (y & 31)),
            Op::NotU32 => un!(x => !x & 0xffff_ffff),
            Op::PopcU32 => un!(x => u64::from((x as u32).count_ones())),
            Op::BrevU32 => un!(x => u64::from((x as u32).reverse_bits())),
            Op::RotlU32 => bin!(x, y => u64::from((x as u32).rotate_left(y as u32 & 31))),
            Op::RotrU32 => bin!(x, y => u64::from((x as u32).rotate_right(y as u32 & 31))),
            Op::F32Bits => un!(x => sx32(x)),
            Op::BitsF32 => un!(x => x & 0xffff_ffff),
            Op::F64Bits | Op::BitsF64 => un!(x => x),
            Op::ShlI64 | Op::ShlU64 => bin!(x, y => x << (y & 63)),
            Op::ShrI64 => bin!(x, y => ((x as i64) >> (y & 63)) as u64),
            Op::UshrI64 | Op::ShrU64 | Op::UshrU64 => bin!(x, y => x >> (y & 63)),
            Op::AbsI64 => un!(x => (x as i64).wrapping_abs() as u64),

            // Bitwise ops preserve canonical forms at every width (and for booleans).
            Op::AndI8
            | Op::AndU8
            | Op::AndI16
            | Op::AndU16
            | Op::AndI32
            | Op::AndU32
            | Op::AndI64
            | Op::AndU64
            | Op::AndBool => bin!(x, y => x & y),
            Op::OrI8
            | Op::OrU8
            | Op::OrI16
            | Op::OrU16
            | Op::OrI32
            | Op::OrU32
            | Op::OrI64
            | Op::OrU64
            | Op::OrBool => bin!(x, y => x | y),
            Op::XorI8
            | Op::XorU8
            | Op::XorI16
            | Op::XorU16
            | Op::XorI32
            | Op::XorU32
            | Op::XorI64
            | Op::XorU64
            | Op::XorBool => bin!(x, y => x ^ y),
            Op::LNot => un!(x => u64::from(x == 0)),

            // Comparisons: one 64-bit compare serves every canonical width.
            Op::EqBool
            | Op::EqChar
            | Op::EqI8
            | Op::EqU8
            | Op::EqI16
            | Op::EqU16
            | Op::EqI32
            | Op::EqU32
            | Op::EqI64
            | Op::EqU64
            | Op::EqRef => bin!(x, y => u64::from(x == y)),
            Op::NeBool
            | Op::NeChar
            | Op::NeI8
            | Op::NeU8
            | Op::NeI16
            | Op::NeU16
            | Op::NeI32
            | Op::NeU32
            | Op::NeI64
            | Op::NeU64 => bin!(x, y => u64::from(x != y)),
            Op::EqF32 => bin!(x, y => u64::from(f32b(x) == f32b(y))),
            Op::NeF32 => bin!(x, y => u64::from(f32b(x) != f32b(y))),
            Op::EqF64 => bin!(x, y => u64::from(f64b(x) == f64b(y))),
            Op::NeF64 => bin!(x, y => u64::from(f64b(x) != f64b(y))),
            Op::LtI8 | Op::LtI16 | Op::LtI32 | Op::LtI64 => {
                bin!(x, y => u64::from((x as i64) < (y as i64)))
            }
            Op::LeI8 | Op::LeI16 | Op::LeI32 | Op::LeI64 => {
                bin!(x, y => u64::from((x as i64) <= (y as i64)))
            }
            Op::LtU8 | Op::LtU16 | Op::LtU32 | Op::LtU64 => bin!(x, y => u64::from(x < y)),
            Op::LeU8 | Op::LeU16 | Op::LeU32 | Op::LeU64 => bin!(x, y => u64::from(x <= y)),
            Op::LtF32 => bin!(x, y => u64::from(f32b(x) < f32b(y))),
            Op::LeF32 => bin!(x, y => u64::from(f32b(x) <= f32b(y))),
            Op::LtF64 => bin!(x, y => u64::from(f64b(x) < f64b(y))),
            Op::LeF64 => bin!(x, y => u64::from(f64b(x) <= f64b(y))),

            // Conversions (LANGUAGE §3.1); Rust `as` saturates float → int and maps NaN to 0.
            Op::WrapI8 => un!(x => sx8(x)),
            Op::WrapU8 => un!(x => x & 0xff),
            Op::WrapI16 => un!(x => sx16(x)),
            Op::WrapU16 => un!(x => x & 0xffff),
            Op::WrapI32 => un!(x => sx32(x)),
            Op::WrapU32 | Op::WrapChar => un!(x => x & 0xffff_ffff),
            Op::WrapI64 | Op::WrapU64 => un!(x => x),
            Op::SToF32 => un!(x => bf32(x as i64 as f32)),
            Op::UToF32 => un!(x => bf32(x as f32)),
            Op::SToF64 => un!(x => bf64(x as i64 as f64)),
            Op::UToF64 => un!(x => bf64(x as f64)),
            Op::F32ToI8 => un!(x => f32b(x) as i8 as i64 as u64),
            Op::F32ToU8 => un!(x => u64::from(f32b(x) as u8)),
            Op::F32ToI16 => un!(x => f32b(x) as i16 as i64 as u64),
            Op::F32ToU16 => un!(x => u64::from(f32b(x) as u16)),
            Op::F32ToI32 => un!(x => f32b(x) as i32 as i64 as u64),
            Op::F32ToU32 => un!(x => u64::from(f32b(x) as u32)),
            Op::F32ToI64 => un!(x => f32b(x) as i64 as u64),
            Op::F32ToU64 => un!(x => f32b(x) as u64),
            Op::F64ToI8 => un!(x => f64b(x) as i8 as i64 as u64),
            Op::F64ToU8 => un!(x => u64::from(f64b(x) as u8)),
            Op::F64ToI16 => un!(x => f64b(x) as i16 as i64 as u64),
            Op::F64ToU16 => un!(x => u64::from(f64b(x) as u16)),
            Op::F64ToI32 => un!(x => f64b(x) as i32 as i64 as u64),
            Op::F64ToU32 => un!(x => u64::from(f64b(x) as u32)),
            Op::F64ToI64 => un!(x => f64b(x) as i64 as u64),
            Op::F64ToU64 => un!(x => f64b(x) as u64),
            Op::F32ToF64 => un!(x => bf64(f64::from(f32b(x)))),
            Op::F64ToF32 => un!(x => bf32(f64b(x) as f32)),
            Op::F16ToF32 => un!(x => bf32(half::f16_to_f32(x as u16))),
            Op::BF16ToF32 => un!(x => bf32(half::bf16_to_f32(x as u16))),
            Op::F32ToF16 => un!(x => u64::from(half::f32_to_f16(f32b(x)))),
            Op::F32ToBF16 => un!(x => u64::from(half::f32_to_bf16(f32b(x)))),
            Op::F64ToF16 => un!(x => u64::from(half::f64_to_f16(f64b(x)))),
            Op::F64ToBF16 => un!(x => u64::from(half::f64_to_bf16(f64b(x)))),

            // Math.
            Op::Math1F32 => un!(x => bf32(math1_f32(ins.c, f32b(x)))),
            Op::MinF32 => binf32!(x, y => float::min_f32(x, y)),
            Op::MaxF32 => binf32!(x, y => float::max_f32(x, y)),
            Op::PowF32 => binf32!(x, y => f64::from(x).powf(f64::from(y)) as f32),
            Op::Atan2F32 => binf32!(x, y => f64::from(x).atan2(f64::from(y)) as f32),
            Op::FmaF32 => {
                let acc = f32b(regs[a]);
                regs[a] = bf32(acc.mul_add(f32b(regs[b]), f32b(regs[c])));
            }
            Op::Math1F64 => un!(x => bf64(math1_f64(ins.c, f64b(x)))),
            Op::MinF64 => binf64!(x, y => float::min_f64(x, y)),
            Op::MaxF64 => binf64!(x, y => float::max_f64(x, y)),
            Op::PowF64 => binf64!(x, y => x.powf(y)),
            Op::Atan2F64 => binf64!(x, y => x.atan2(y)),
            Op::FmaF64 => {
                let acc = f64b(regs[a]);
                regs[a] = bf64(acc.mul_add(f64b(regs[b]), f64b(regs[c])));
            }

            // Device operations.
            Op::BufLength => {
                let h = regs[b];
                match usize::try_from(h).ok().and_then(|h| env.mems.get(h)) {
                    Some(mem) => regs[a] = mem.len(),
                    None => fault!(FaultKind::BadHandle { reg: ins.b }),
                }
            }
            Op::Geom => match geo.get(b) {
                Some(&v) => regs[a] = v,
                None => fault!(FaultKind::Internal("unknown geometry selector")),
            },
            Op::Barrier => stop!(
                pc,
                Stop::Barrier {
                    func,
                    pc: (pc - 1) as u32
                }
            ),
            Op::WaveSumU32
            | Op::WaveSumF32
            | Op::WaveMaxU32
            | Op::WaveMinU32
            | Op::WaveAndU32
            | Op::WaveOrU32
            | Op::WaveXorU32
            | Op::WaveMaxF32
            | Op::WaveScanAddU32
            | Op::WaveScanMulU32
            | Op::WaveShflU32
            | Op::WaveRotU32
            | Op::WaveBallot
            | Op::WaveBarrier => {
                let Some(op) = WaveOp::of(ins.op) else {
                    fault!(FaultKind::Internal("unknown wave collective"));
                };
                if a >= regs.len() || b >= regs.len() || c >= regs.len() {
                    fault!(FaultKind::Internal("register outside the frame"));
                }
                // Shuffle and rotate carry their lane operand in the cell's high half.
                let value = match op {
                    WaveOp::Shuffle | WaveOp::Rotate => regs[b] | regs[c] << 32,
                    _ => regs[b],
                };
                stop!(
                    pc,
                    Stop::Collective {
                        func,
                        pc: (pc - 1) as u32,
                        op,
                        dst: ins.a,
                        value
                    }
                )
            }
            // Fences order the item's own accesses, which the lane scheduler already runs in
            // program order; kernel attributes act at launch.
            Op::Fence | Op::KernelAttr => {}
            Op::SharedRef => regs[a] = env.nbuf + b as u64,
            Op::CheckIndex => {
                let (index, len) = (regs[a] as i64, regs[b] as i64);
                if !(0..len).contains(&index) {
                    fault!(FaultKind::Index {
                        index,
                        len,
                        reg: ins.c
                    })
                }
            }
            Op::DevGetI8 => ld!(at8, u8, x => x as i8 as i64 as u64),
            Op::DevGetU8 => ld!(at8, u8, x => u64::from(x)),
            Op::DevGetI16 => ld!(at16, u16, x => x as i16 as i64 as u64),
            Op::DevGetU16 | Op::DevGetF16 | Op::DevGetBF16 => ld!(at16, u16, x => u64::from(x)),
            Op::DevGetI32 => ld!(at32, u32, x => x as i32 as i64 as u64),
            Op::DevGetU32 | Op::DevGetF32 => ld!(at32, u32, x => u64::from(x)),
            Op::DevGetI64 | Op::DevGetU64 | Op::DevGetF64 => ld!(at64, u64, x => x),
            Op::DevSetI8 | Op::DevSetU8 => st!(at8, u8),
            Op::DevSetI16 | Op::DevSetU16 | Op::DevSetF16 | Op::DevSetBF16 => st!(at16, u16),
            Op::DevSetI32 | Op::DevSetU32 | Op::DevSetF32 => st!(at32, u32),
            Op::DevSetI64 | Op::DevSetU64 | Op::DevSetF64 => st!(at64, u64),
            Op::AtomicAddI32 => {
                let old = add_u32(elem!(at32, b, c), regs[a] as u32);
                regs[a] = old as i32 as i64 as u64;
            }
            Op::AtomicAddU32 => {
                let old = add_u32(elem!(at32, b, c), regs[a] as u32);
                regs[a] = u64::from(old);
            }
            Op::AtomicAddI64 | Op::AtomicAddU64 => {
                regs[a] = add_u64(elem!(at64, b, c), regs[a]);
            }
            Op::AtomicAddF32 => {
                let v = f32b(regs[a]);
                let old = update_u32(elem!(at32, b, c), |x| (f32::from_bits(x) + v).to_bits());
                regs[a] = u64::from(old);
            }

            // The T2 atomics (XPU §2.8): one compare-exchange loop each, sequentially consistent.
            Op::AtomicSubI32 | Op::AtomicSubU32 => atom32!(|x, v| x.wrapping_sub(v)),
            Op::AtomicAndI32 | Op::AtomicAndU32 => atom32!(|x, v| x & v),
            Op::AtomicOrI32 | Op::AtomicOrU32 => atom32!(|x, v| x | v),
            Op::AtomicXorI32 | Op::AtomicXorU32 => atom32!(|x, v| x ^ v),
            Op::AtomicXchgI32 | Op::AtomicXchgU32 => atom32!(|_x, v| v),
            Op::AtomicMinI32 => atom32!(|x, v| (x as i32).min(v as i32) as u32),
            Op::AtomicMaxI32 => atom32!(|x, v| (x as i32).max(v as i32) as u32),
            Op::AtomicMinU32 => atom32!(|x, v| x.min(v)),
            Op::AtomicMaxU32 => atom32!(|x, v| x.max(v)),
            Op::AtomicSubI64 | Op::AtomicSubU64 => atom64!(|x, v| x.wrapping_sub(v)),
            Op::AtomicAndI64 | Op::AtomicAndU64 => atom64!(|x, v| x & v),
            Op::AtomicOrI64 | Op::AtomicOrU64 => atom64!(|x, v| x | v),
            Op::AtomicXorI64 | Op::AtomicXorU64 => atom64!(|x, v| x ^ v),
            Op::AtomicXchgI64 | Op::AtomicXchgU64 => atom64!(|_x, v| v),
            Op::AtomicMinI64 => atom64!(|x, v| (x as i64).min(v as i64) as u64),
            Op::AtomicMaxI64 => atom64!(|x, v| (x as i64).max(v as i64) as u64),
            Op::AtomicMinU64 => atom64!(|x, v| x.min(v)),
            Op::AtomicMaxU64 => atom64!(|x, v| x.max(v)),
            // As `min.f32`/`max.f32`: the non-NaN operand; -0.0 below +0.0.
            Op::AtomicMinF32 => {
                atom32!(|x, v| float::min_f32(f32::from_bits(x), f32::from_bits(v)).to_bits())
            }
            Op::AtomicMaxF32 => {
                atom32!(|x, v| float::max_f32(f32::from_bits(x), f32::from_bits(v)).to_bits())
            }
            Op::AtomicCasI32 | Op::AtomicCasU32 => {
                let Some(&desired) = regs.get(a + 1) else {
                    fault!(FaultKind::Internal("register outside the frame"));
                };
                let expected = regs[a] as u32;
                atom32!(|x, _v| if x == expected { desired as u32 } else { x })
            }
            Op::AtomicCasI64 | Op::AtomicCasU64 => {
                let Some(&desired) = regs.get(a + 1) else {
                    fault!(FaultKind::Internal("register outside the frame"));
                };
                let expected = regs[a];
                atom64!(|x, _v| if x == expected { desired } else { x })
            }

            // Host-only operations (V-SIDE) and object access, refused by the plan.
            _ => fault!(FaultKind::Internal(
                "instruction not available in device code"
            )),
        }
    }
}
