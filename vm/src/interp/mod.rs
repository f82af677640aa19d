//! The dispatch loop: one `loop { match }` over the lowered form of verified code.
//!
//! Each function's bytecode is first lowered ([`mod@lower`]) to one [`XInstr`] per instruction:
//! the same operands, with a few common sequences fused into superinstructions
//! (compare-and-branch, counted-loop back-edges, multiply-add). pcs are unchanged, so jump
//! targets, traces and line tables work on the lowered code as on the original.
//!
//! Hot state lives in locals: the instruction pointer `ip`, the register window `regs`, the
//! running function's `code` start (jump base) and `base` (window offset in the stack). There
//! are no bounds checks on the fast path: each raw access cites the verifier invariant that
//! makes it sound (see `bytecode/src/verify.rs` and [`frame`]):
//!
//! * **V-REG**: register operands are `< regs.len()` of their function;
//! * **V-JUMP**: jump targets are `< code.len()`;
//! * **V-TERM**: code is non-empty and ends in a terminator, so `ip` never leaves the code;
//! * **V-FUNC / V-CONST / V-STATIC**: function, constant and static indices are in range;
//! * **V-CALL / V-RET**: a non-void callee's result register `a` is a caller register, and
//!   only non-void functions use `ret`/`retown`;
//! * **LOWER** (checked by the lowering pass itself): the shape a superinstruction relies on.
//!
//! Soundness never depends on a register's *contents*: cells are untyped bits, every handle
//! is validated by the object table (a stale, null or mistyped reference is a clean
//! `E-NULL`/`E-DROPPED`), array indices are bounds-checked, shift amounts masked, division
//! checked before dividing. So a register read before it is written (which the verifier does
//! not exclude yet) yields a wrong value at worst, never undefined behaviour, and frames need
//! no zero-fill.
//!
//! Anything that can fail leaves through `fault!`, which calls the single `#[cold]`
//! [`Vm::fault`] with the current `ip` (the pc is recovered from it for the trace); no arm
//! returns a `Result` or saves the pc on the fast path.

mod frame;
mod lower;
mod ops;
mod slow;

pub(crate) use frame::Frame;
use frame::Word;
pub(crate) use lower::{lower, XInstr, XOp};
pub(crate) use slow::{clock, elem_fault, Access, Fault, SIGPIPE_STATUS};

use std::sync::atomic::Ordering;

use cajeta_bytecode::{float, half, Scalar};

use crate::api::{FnInfo, Vm};
use crate::error::RuntimeError;
use crate::heap::{ArrData, Array, Obj};
use crate::jit::TIER_INTERP;
use frame::CHECKED;
use ops::*;

/// Runs the frame on top of `vm.frames` until a return leaves `stop` frames on the stack,
/// and returns the returned cell (0 after `retvoid`).
///
/// Precondition: the top frame's window fits in the stack and its `ip` points into its
/// function's code (both set up by `Vm::call_index`).
pub(crate) fn run(vm: &mut Vm, stop: usize) -> Result<u64, RuntimeError> {
    let Some(&top) = vm.frames.last() else {
        return Ok(0);
    };
    // These tables are never resized while the VM runs, so raw pointers to them stay valid.
    let fns: *const FnInfo = vm.fns.as_ptr();
    let nfns = vm.fns.len();
    let kvals: *const u64 = vm.kvals.as_ptr();
    let nkvals = vm.kvals.len();
    let statics: *mut u64 = vm.statics.as_mut_ptr();
    let nstatics = vm.statics.len();

    let mut base = top.base;
    // SAFETY: `Vm::call_index` pushed a frame for an existing function (index < fns.len()).
    let mut info: &FnInfo = unsafe { &*fns.add(top.func as usize) };
    let mut code = info.code();
    let mut nregs = info.nregs as usize;
    let mut ip = top.ip;
    // SAFETY: `Vm::call_index` made the stack at least `base + nregs` cells long (window fits).
    let mut regs: *mut u64 = unsafe { vm.stack.as_mut_ptr().add(base) };
    // The instruction being executed (declared before the macros so they can name it).
    let mut ins: Word;

    // Reads register `i` of the running frame.
    macro_rules! rd {
        ($i:expr) => {{
            let i = $i as usize;
            if CHECKED {
                assert!(
                    i < nregs,
                    "register r{i} outside a frame of {nregs} registers"
                );
            }
            // SAFETY: V-REG gives i < regs.len() = nregs, and the window [base, base + nregs)
            // lies inside the stack (window fits, established at every call).
            unsafe { *regs.add(i) }
        }};
    }
    // Writes register `i` of the running frame.
    macro_rules! wr {
        ($i:expr, $v:expr) => {{
            let v: u64 = $v;
            let i = $i as usize;
            if CHECKED {
                assert!(
                    i < nregs,
                    "register r{i} outside a frame of {nregs} registers"
                );
            }
            // SAFETY: as for `rd!`.
            unsafe { *regs.add(i) = v }
            arm_end!();
        }};
    }
    // Ends an arm with an empty inline-asm statement unique to that arm (by line number).
    // Without it, LLVM's tail merging folds the identical "store the result, jump back" tails
    // of many arms into one shared block, which adds a jump to every executed instruction
    // (measured: about 30% on the loop benchmarks). It emits no machine code.
    macro_rules! arm_end {
        () => {
            #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
            // SAFETY: the template is an assembler comment only: it executes nothing and
            // touches no register, flag or memory.
            unsafe {
                core::arch::asm!("/* {0} */", const line!(), options(nomem, nostack, preserves_flags))
            }
        };
    }
    // Leaves through the cold error path.
    macro_rules! fault {
        ($f:expr) => {{
            let f: Fault = $f;
            return Err(vm.fault(ip, f));
        }};
    }
    // Once the running frame is gone: leaves `run` with `$v` if that was the entry frame,
    // else restores the caller's state.
    macro_rules! resume_caller {
        ($v:expr) => {{
            if vm.frames.len() == stop {
                return Ok($v);
            }
            // SAFETY: frames.len() > stop >= 0, so there is a caller frame.
            let caller = unsafe { *vm.frames.last().unwrap_unchecked() };
            // SAFETY: frames only hold existing function indices (V-FUNC at their call).
            info = unsafe { &*fns.add(caller.func as usize) };
            base = caller.base;
            code = info.code();
            nregs = info.nregs as usize;
            ip = caller.ip;
            // SAFETY: the caller's window fitted when it was entered; the stack only grows.
            regs = unsafe { vm.stack.as_mut_ptr().add(base) };
        }};
    }
    // Restores the caller's state after a return; leaves `run` if that was the entry frame.
    macro_rules! pop_frame {
        ($v:expr) => {{
            vm.frames.pop();
            resume_caller!($v);
        }};
    }
    // Returns `$v` into the caller's result register (the `a` of its `call`).
    macro_rules! ret_value {
        ($v:expr) => {{
            let v: u64 = $v;
            pop_frame!(v);
            // SAFETY: the caller's `ip` is just after its `call` instruction, inside its code.
            let call = unsafe { *ip.sub(1) };
            wr!(call.a, v);
        }};
    }
    // Binary op on cells: `bin!(x, y => expr)` computes r[a] := expr from x = r[b], y = r[c].
    macro_rules! bin {
        ($x:ident, $y:ident => $e:expr) => {{
            let $x = rd!(ins.b());
            let $y = rd!(ins.c());
            wr!(ins.a(), $e);
        }};
    }
    // Unary op on cells: r[a] := expr of x = r[b].
    macro_rules! un {
        ($x:ident => $e:expr) => {{
            let $x = rd!(ins.b());
            wr!(ins.a(), $e);
        }};
    }
    // Binary float32 op: operands and result as f32.
    macro_rules! binf32 {
        ($x:ident, $y:ident => $e:expr) => {
            bin!(p, q => { let $x = f32b(p); let $y = f32b(q); bf32($e) })
        };
    }
    // Binary float64 op.
    macro_rules! binf64 {
        ($x:ident, $y:ident => $e:expr) => {
            bin!(p, q => { let $x = f64b(p); let $y = f64b(q); bf64($e) })
        };
    }
    // Signed division and remainder: E-DIVZERO, E-OVERFLOW for MIN / -1 at width MIN.
    macro_rules! sdiv {
        ($min:expr) => {{
            let n = rd!(ins.b()) as i64;
            let d = rd!(ins.c()) as i64;
            if d == 0 {
                fault!(Fault::DivZero);
            }
            if d == -1 && n == $min as i64 {
                fault!(Fault::Overflow);
            }
            // Canonical inputs: the i64 quotient is the width's quotient (MIN / -1 excluded).
            wr!(ins.a(), n.wrapping_div(d) as u64);
        }};
    }
    macro_rules! srem {
        () => {{
            let n = rd!(ins.b()) as i64;
            let d = rd!(ins.c()) as i64;
            if d == 0 {
                fault!(Fault::DivZero);
            }
            // MIN % -1 is 0 (wrapping_rem), the dividend's sign otherwise.
            wr!(ins.a(), n.wrapping_rem(d) as u64);
        }};
    }
    macro_rules! udiv {
        ($op:tt) => {{
            let n = rd!(ins.b());
            let d = rd!(ins.c());
            if d == 0 {
                fault!(Fault::DivZero);
            }
            wr!(ins.a(), n $op d);
        }};
    }
    // String-producing ops: r[a] := the new string, or a fault.
    macro_rules! alloc_op {
        ($e:expr) => {{
            match $e {
                Ok(h) => wr!(ins.a(), h),
                Err(f) => fault!(f),
            }
        }};
    }
    // `aget.*`: r[a] := r[b][r[c]] from storage variant `$var`, element `$x` converted by `$e`.
    macro_rules! aget {
        ($var:ident, $x:ident => $e:expr) => {{
            let h = rd!(ins.b());
            let i = rd!(ins.c());
            let got = match vm.heap.get(h) {
                Some(Obj::Array(Array { data: ArrData::$var(v), .. })) => match v.get(i as usize) {
                    Some(&$x) => Ok($e),
                    None => Err(Fault::Bounds { index: i as i64, len: v.len() }),
                },
                _ => Err(Fault::BadRef { reg: ins.b(), handle: h, access: Access::Index }),
            };
            match got {
                Ok(v) => wr!(ins.a(), v),
                Err(f) => fault!(f),
            }
        }};
    }
    // `aset.*`: r[a][r[b]] := r[c] into storage variant `$var`, the cell `$x` converted by `$e`.
    macro_rules! aset {
        ($var:ident, $x:ident => $e:expr) => {{
            let h = rd!(ins.a());
            let i = rd!(ins.b());
            let $x = rd!(ins.c());
            let err = match vm.heap.get_mut(h) {
                Some(Obj::Array(Array { data: ArrData::$var(v), .. })) => {
                    let len = v.len();
                    match v.get_mut(i as usize) {
                        Some(slot) => {
                            *slot = $e;
                            None
                        }
                        None => Some(Fault::Bounds { index: i as i64, len }),
                    }
                }
                _ => Some(Fault::BadRef { reg: ins.a(), handle: h, access: Access::Index }),
            };
            if let Some(f) = err {
                fault!(f);
            }
        }};
    }

    // Compare-and-branch superinstruction (LOWER): r[a] := the comparison; if it equals
    // `$jump_if`, jump to the target of the branch in the next slot, else skip that branch.
    macro_rules! br {
        ($x:ident, $y:ident => $cond:expr, $jump_if:expr) => {{
            let $x = rd!(ins.b());
            let $y = rd!(ins.c());
            let t: bool = $cond;
            wr!(ins.a(), t as u64);
            if t == $jump_if {
                // SAFETY: LOWER: `ip` (the slot after this one) holds this superinstruction's
                // conditional branch, whose target is < code.len() (V-JUMP).
                ip = unsafe { code.add((*ip).bc() as usize) };
            } else {
                // SAFETY: LOWER: the branch at `ip` is not a terminator, so the slot after it
                // is still inside the code (V-TERM).
                ip = unsafe { ip.add(1) };
            }
        }};
    }
    // Superinstruction building blocks (see `lower.rs`; each relies on LOWER).
    // The body of `loadi`/`loadk` in a fused slot: r[a] := kvals[bc].
    macro_rules! load_k {
        () => {{
            let k = ins.bc() as usize;
            if CHECKED {
                assert!(k < nkvals, "constant cell #{k} out of range");
            }
            // SAFETY: LOWER: a fused constant load's `bc` is < kvals.len().
            wr!(ins.a(), unsafe { *kvals.add(k) });
        }};
    }
    // Moves to the next constituent slot, as the top of the dispatch loop would.
    macro_rules! step {
        () => {{
            // SAFETY: LOWER: the superinstruction's next constituent slot exists (it is `ip`).
            ins = unsafe { Word::load(ip) };
            // SAFETY: LOWER: a slot follows every constituent slot.
            ip = unsafe { ip.add(1) };
        }};
    }
    // A constant load into `t`, then the arithmetic in the next slot with the constant as the
    // operand in `t` and `$x` the other one (read after the load, so `op d, t, t` works).
    macro_rules! k_arith {
        ($x:ident, $k:ident => $e:expr) => {{
            let t = ins.a();
            let kidx = ins.bc() as usize;
            if CHECKED {
                assert!(kidx < nkvals, "constant cell #{kidx} out of range");
            }
            // SAFETY: LOWER: a fused constant load's `bc` is < kvals.len().
            let $k = unsafe { *kvals.add(kidx) };
            wr!(t, $k);
            step!();
            let $x = rd!(if ins.c() == t { ins.b() } else { ins.c() });
            wr!(ins.a(), $e);
        }};
    }
    // A constant load, then the compare-and-branch in the next slot.
    macro_rules! brk {
        ($x:ident, $y:ident => $cond:expr, $jump_if:expr) => {{
            load_k!();
            step!();
            br!($x, $y => $cond, $jump_if)
        }};
    }
    // A loop back-edge: `addi r, r, k` (wrapped by `$wrap`), then the `jmp` to the head `H`
    // (kept in `b`), then step into the loop test at `H`.
    macro_rules! back_edge {
        ($wrap:ident) => {{
            let r = ins.a();
            wr!(r, $wrap(rd!(r).wrapping_add(ins.c() as i16 as i64 as u64)));
            // SAFETY: LOWER: a `Loop*` slot's `b` is a loop head inside the code.
            ip = unsafe { code.add(ins.b() as usize) };
            step!();
        }};
    }

    // Multiply-add superinstruction (LOWER): the `mul` in this slot, then the `add`/`sub` in
    // the next slot (which reads `$o`, its other operand, after the product was stored).
    macro_rules! mul_add {
        ($from:ident, $to:ident, $o:ident, |$p:ident, $q:ident| $e:expr) => {{
            let prod = $from(rd!(ins.b())) * $from(rd!(ins.c()));
            wr!(ins.a(), $to(prod));
            // SAFETY: LOWER: the next slot (`ip`) is the fused add/sub.
            let next = unsafe { Word::load(ip) };
            let $p = $from(rd!(next.$o()));
            let $q = prod;
            wr!(next.a(), $to($e));
            // SAFETY: LOWER: the add/sub is not a terminator, so the slot after it is inside.
            ip = unsafe { ip.add(1) };
        }};
    }

    // A check point (metered code only): the interrupt flag, then one unit of fuel, as the
    // JIT's `consume_fuel` does; the fault reports the instruction before `ip`.
    macro_rules! charge {
        () => {{
            if (vm.fuel <= 0) | vm.interrupt.load(Ordering::Relaxed) {
                fault!(vm.meter_fault());
            }
            vm.fuel -= 1;
        }};
    }
    // A backward jump to `$t` in code lowered for on-stack replacement: once the function's
    // compiled code is ready, the rest of the activation runs there (`Vm::osr_enter`, which
    // pops the frame), and what it returns is this frame's return.
    macro_rules! osr_jump {
        ($t:expr) => {{
            let t: u32 = $t;
            let mut returned = None;
            if vm.osr_due() {
                returned = vm.osr_enter(t)?;
            }
            match returned {
                None => {
                    // SAFETY: V-JUMP.
                    ip = unsafe { code.add(t as usize) };
                }
                Some((v, has_result)) => {
                    resume_caller!(v);
                    if has_result {
                        // SAFETY: the caller's `ip` is just after its `call`, inside its code.
                        let call = unsafe { *ip.sub(1) };
                        wr!(call.a, v);
                    }
                }
            }
        }};
    }
    // Entering `run` is entering a function (`Vm::call_index`'s entry, or an interpreted callee of
    // compiled code): a check point in a metered VM. One predictable branch per activation.
    if vm.metered {
        charge!();
    }

    // `call a b c`; `$metered`: the callee's entry is a check point when the interpreter runs
    // it (compiled code counts its own entry).
    macro_rules! call {
        ($metered:expr) => {{
            let callee = ins.c() as usize;
            if CHECKED {
                assert!(callee < nfns, "function #{callee} out of range");
            }
            // SAFETY: V-FUNC: c < functions.len() = fns.len().
            let cinfo: &FnInfo = unsafe { &*fns.add(callee) };
            let new_base = base + ins.b() as usize;
            let top = new_base + cinfo.nregs as usize;
            if top > vm.stack.len() {
                if let Err(f) = vm.grow_stack(top) {
                    fault!(f);
                }
            }
            // One branch for both rare cases, the depth limit and a callee the JIT
            // handles (compiled, or counted towards compiling): the cold `slow_call`
            // raises `E-STACK`, or runs the callee natively and writes its result
            // (`true`), or leaves the call to the interpreter (`false`). (Leaving the arm
            // with `continue` instead of the `else` cost every dispatched instruction
            // about 5% through LLVM's code for the loop; see docs/notes/jit.md.)
            if (vm.frames.len() >= vm.max_depth) | (cinfo.tier.get() != TIER_INTERP)
                && vm.slow_call(base, ip)?
            {
                // Hooks may have moved the stack: re-derive the window pointer.
                // SAFETY: the caller's window still fits (the stack only grows).
                regs = unsafe { vm.stack.as_mut_ptr().add(base) };
            } else {
                // SAFETY: `run` always has at least one frame (the running one).
                unsafe { vm.frames.last_mut().unwrap_unchecked() }.ip = ip;
                vm.frames.push(Frame {
                    func: callee as u32,
                    base: new_base,
                    ip: cinfo.code(),
                });
                info = cinfo;
                base = new_base;
                code = info.code();
                nregs = info.nregs as usize;
                ip = code;
                // SAFETY: stack.len() >= top = base + nregs (checked above): window fits.
                regs = unsafe { vm.stack.as_mut_ptr().add(base) };
                if $metered {
                    // The callee's entry (pc 0, as the JIT's prologue reports it).
                    charge!();
                }
            }
        }};
    }

    loop {
        // SAFETY: `ip` points into the running function's code: it starts at the code's start
        // or a resume point after a `call`, moves by one after each non-terminator
        // (V-TERM: the last instruction is a terminator) and jumps only to targets
        // < code.len() (V-JUMP).
        ins = unsafe { Word::load(ip) };
        // SAFETY: as above; one past the current instruction is still inside (or one past the
        // end of) the code slice.
        ip = unsafe { ip.add(1) };
        match ins.op() {
            XOp::Nop => {}
            XOp::Mov => un!(x => x),
            XOp::LoadK => {
                let k = ins.bc() as usize;
                if CHECKED {
                    assert!(k < nkvals, "constant #{k} out of range");
                }
                // SAFETY: V-CONST: bc < consts.len() = kvals.len().
                wr!(ins.a(), unsafe { *kvals.add(k) });
            }
            XOp::LoadI => wr!(ins.a(), ins.bc() as i32 as i64 as u64),
            XOp::LoadNull => wr!(ins.a(), 0),
            XOp::Jmp => {
                // SAFETY: V-JUMP: bc < code.len().
                ip = unsafe { code.add(ins.bc() as usize) };
            }
            XOp::JmpIf => {
                if rd!(ins.a()) != 0 {
                    // SAFETY: V-JUMP.
                    ip = unsafe { code.add(ins.bc() as usize) };
                }
            }
            XOp::JmpIfNot => {
                if rd!(ins.a()) == 0 {
                    // SAFETY: V-JUMP.
                    ip = unsafe { code.add(ins.bc() as usize) };
                }
            }
            XOp::JmpBack => {
                charge!();
                // SAFETY: V-JUMP.
                ip = unsafe { code.add(ins.bc() as usize) };
            }
            XOp::JmpIfBack => {
                if rd!(ins.a()) != 0 {
                    charge!();
                    // SAFETY: V-JUMP.
                    ip = unsafe { code.add(ins.bc() as usize) };
                }
            }
            XOp::JmpIfNotBack => {
                if rd!(ins.a()) == 0 {
                    charge!();
                    // SAFETY: V-JUMP.
                    ip = unsafe { code.add(ins.bc() as usize) };
                }
            }
            XOp::Call => call!(false),
            XOp::CallMetered => call!(true),
            XOp::Ret => {
                vm.own = false;
                ret_value!(rd!(ins.a()));
            }
            XOp::RetOwn => {
                vm.own = rd!(ins.b()) != 0;
                ret_value!(rd!(ins.a()));
            }
            XOp::RetVoid => {
                vm.own = false;
                pop_frame!(0);
            }
            XOp::TakeOwn => wr!(ins.a(), vm.own as u64),

            // Integer arithmetic: compute on 64-bit cells, re-canonicalise to the width.
            XOp::AddI8 => bin!(x, y => sx8(x.wrapping_add(y))),
            XOp::SubI8 => bin!(x, y => sx8(x.wrapping_sub(y))),
            XOp::MulI8 => bin!(x, y => sx8(x.wrapping_mul(y))),
            XOp::DivI8 => sdiv!(i8::MIN),
            XOp::RemI8 => srem!(),
            XOp::NegI8 => un!(x => sx8(x.wrapping_neg())),
            XOp::AddU8 => bin!(x, y => x.wrapping_add(y) & 0xff),
            XOp::SubU8 => bin!(x, y => x.wrapping_sub(y) & 0xff),
            XOp::MulU8 => bin!(x, y => x.wrapping_mul(y) & 0xff),
            XOp::DivU8 => udiv!(/),
            XOp::RemU8 => udiv!(%),
            XOp::NegU8 => un!(x => x.wrapping_neg() & 0xff),
            XOp::AddI16 => bin!(x, y => sx16(x.wrapping_add(y))),
            XOp::SubI16 => bin!(x, y => sx16(x.wrapping_sub(y))),
            XOp::MulI16 => bin!(x, y => sx16(x.wrapping_mul(y))),
            XOp::DivI16 => sdiv!(i16::MIN),
            XOp::RemI16 => srem!(),
            XOp::NegI16 => un!(x => sx16(x.wrapping_neg())),
            XOp::AddU16 => bin!(x, y => x.wrapping_add(y) & 0xffff),
            XOp::SubU16 => bin!(x, y => x.wrapping_sub(y) & 0xffff),
            XOp::MulU16 => bin!(x, y => x.wrapping_mul(y) & 0xffff),
            XOp::DivU16 => udiv!(/),
            XOp::RemU16 => udiv!(%),
            XOp::NegU16 => un!(x => x.wrapping_neg() & 0xffff),
            XOp::AddI32 => bin!(x, y => sx32(x.wrapping_add(y))),
            XOp::SubI32 => bin!(x, y => sx32(x.wrapping_sub(y))),
            XOp::MulI32 => bin!(x, y => sx32(x.wrapping_mul(y))),
            XOp::DivI32 => sdiv!(i32::MIN),
            XOp::RemI32 => srem!(),
            XOp::NegI32 => un!(x => sx32(x.wrapping_neg())),
            XOp::AddU32 => bin!(x, y => x.wrapping_add(y) & 0xffff_ffff),
            XOp::SubU32 => bin!(x, y => x.wrapping_sub(y) & 0xffff_ffff),
            XOp::MulU32 => bin!(x, y => x.wrapping_mul(y) & 0xffff_ffff),
            XOp::DivU32 => udiv!(/),
            XOp::RemU32 => udiv!(%),
            XOp::NegU32 => un!(x => x.wrapping_neg() & 0xffff_ffff),
            XOp::AddI64 | XOp::AddU64 => bin!(x, y => x.wrapping_add(y)),
            XOp::SubI64 | XOp::SubU64 => bin!(x, y => x.wrapping_sub(y)),
            XOp::MulI64 | XOp::MulU64 => bin!(x, y => x.wrapping_mul(y)),
            XOp::DivI64 => sdiv!(i64::MIN),
            XOp::RemI64 => srem!(),
            XOp::NegI64 | XOp::NegU64 => un!(x => x.wrapping_neg()),
            XOp::DivU64 => udiv!(/),
            XOp::RemU64 => udiv!(%),
            XOp::AddImmI32 => un!(x => sx32(x.wrapping_add(ins.c() as i16 as i64 as u64))),
            XOp::AddImmI64 => un!(x => x.wrapping_add(ins.c() as i16 as i64 as u64)),

            // Floats: IEEE, one rounding per operation (Rust never contracts to FMA).
            XOp::AddF32 => binf32!(x, y => x + y),
            XOp::SubF32 => binf32!(x, y => x - y),
            XOp::MulF32 => binf32!(x, y => x * y),
            XOp::DivF32 => binf32!(x, y => x / y),
            XOp::RemF32 => binf32!(x, y => x % y),
            XOp::NegF32 => un!(x => bf32(-f32b(x))),
            XOp::AddF64 => binf64!(x, y => x + y),
            XOp::SubF64 => binf64!(x, y => x - y),
            XOp::MulF64 => binf64!(x, y => x * y),
            XOp::DivF64 => binf64!(x, y => x / y),
            XOp::RemF64 => binf64!(x, y => x % y),
            XOp::NegF64 => un!(x => bf64(-f64b(x))),

            // Shifts: the amount is the right operand's low log2(width) bits.
            XOp::ShlI8 => bin!(x, y => sx8(x << (y & 7))),
            XOp::ShrI8 => bin!(x, y => ((x as i64) >> (y & 7)) as u64),
            XOp::UshrI8 => bin!(x, y => sx8((x & 0xff) >> (y & 7))),
            XOp::NotI8 | XOp::NotI16 | XOp::NotI32 | XOp::NotI64 | XOp::NotU64 => un!(x => !x),
            XOp::MinI8 | XOp::MinI16 | XOp::MinI32 | XOp::MinI64 => bin!(x, y => smin(x, y)),
            XOp::MaxI8 | XOp::MaxI16 | XOp::MaxI32 | XOp::MaxI64 => bin!(x, y => smax(x, y)),
            XOp::AbsI8 => un!(x => sx8((x as i64).wrapping_abs() as u64)),
            XOp::ShlU8 => bin!(x, y => (x << (y & 7)) & 0xff),
            XOp::ShrU8 | XOp::UshrU8 => bin!(x, y => x >> (y & 7)),
            XOp::NotU8 => un!(x => !x & 0xff),
            XOp::MinU8 | XOp::MinU16 | XOp::MinU32 | XOp::MinU64 => bin!(x, y => x.min(y)),
            XOp::MaxU8 | XOp::MaxU16 | XOp::MaxU32 | XOp::MaxU64 => bin!(x, y => x.max(y)),
            XOp::ShlI16 => bin!(x, y => sx16(x << (y & 15))),
            XOp::ShrI16 => bin!(x, y => ((x as i64) >> (y & 15)) as u64),
            XOp::UshrI16 => bin!(x, y => sx16((x & 0xffff) >> (y & 15))),
            XOp::AbsI16 => un!(x => sx16((x as i64).wrapping_abs() as u64)),
            XOp::ShlU16 => bin!(x, y => (x << (y & 15)) & 0xffff),
            XOp::ShrU16 | XOp::UshrU16 => bin!(x, y => x >> (y & 15)),
            XOp::NotU16 => un!(x => !x & 0xffff),
            XOp::ShlI32 => bin!(x, y => sx32(x << (y & 31))),
            XOp::ShrI32 => bin!(x, y => ((x as i64) >> (y & 31)) as u64),
            XOp::UshrI32 => bin!(x, y => sx32((x & 0xffff_ffff) >> (y & 31))),
            XOp::AbsI32 => un!(x => sx32((x as i64).wrapping_abs() as u64)),
            XOp::ShlU32 => bin!(x, y => (x << (y & 31)) & 0xffff_ffff),
            XOp::ShrU32 | XOp::UshrU32 => bin!(x, y => x >> (y & 31)),
            XOp::NotU32 => un!(x => !x & 0xffff_ffff),
            // Bits (XPU §2.12): on the low 32 bits of a canonical uint32 cell.
            XOp::PopcU32 => un!(x => u64::from((x as u32).count_ones())),
            XOp::BrevU32 => un!(x => u64::from((x as u32).reverse_bits())),
            XOp::RotlU32 => bin!(x, y => u64::from((x as u32).rotate_left(y as u32 & 31))),
            XOp::RotrU32 => bin!(x, y => u64::from((x as u32).rotate_right(y as u32 & 31))),
            // Bit reinterpretation (Cajeta.f32ToBits …): float64/int64 cells are the same bits.
            XOp::F32Bits => un!(x => sx32(x)),
            XOp::BitsF32 => un!(x => x & 0xffff_ffff),
            XOp::F64Bits | XOp::BitsF64 => un!(x => x),
            XOp::ShlI64 | XOp::ShlU64 => bin!(x, y => x << (y & 63)),
            XOp::ShrI64 => bin!(x, y => ((x as i64) >> (y & 63)) as u64),
            XOp::UshrI64 | XOp::ShrU64 | XOp::UshrU64 => bin!(x, y => x >> (y & 63)),
            XOp::AbsI64 => un!(x => (x as i64).wrapping_abs() as u64),

            // Bitwise ops preserve canonical forms at every width (and for booleans).
            XOp::AndI8
            | XOp::AndU8
            | XOp::AndI16
            | XOp::AndU16
            | XOp::AndI32
            | XOp::AndU32
            | XOp::AndI64
            | XOp::AndU64
            | XOp::AndBool => bin!(x, y => x & y),
            XOp::OrI8
            | XOp::OrU8
            | XOp::OrI16
            | XOp::OrU16
            | XOp::OrI32
            | XOp::OrU32
            | XOp::OrI64
            | XOp::OrU64
            | XOp::OrBool => bin!(x, y => x | y),
            XOp::XorI8
            | XOp::XorU8
            | XOp::XorI16
            | XOp::XorU16
            | XOp::XorI32
            | XOp::XorU32
            | XOp::XorI64
            | XOp::XorU64
            | XOp::XorBool => bin!(x, y => x ^ y),
            XOp::LNot => un!(x => (x == 0) as u64),

            // Comparisons: one 64-bit compare serves every canonical width.
            XOp::EqBool
            | XOp::EqChar
            | XOp::EqI8
            | XOp::EqU8
            | XOp::EqI16
            | XOp::EqU16
            | XOp::EqI32
            | XOp::EqU32
            | XOp::EqI64
            | XOp::EqU64
            | XOp::EqRef => bin!(x, y => (x == y) as u64),
            XOp::NeBool
            | XOp::NeChar
            | XOp::NeI8
            | XOp::NeU8
            | XOp::NeI16
            | XOp::NeU16
            | XOp::NeI32
            | XOp::NeU32
            | XOp::NeI64
            | XOp::NeU64 => bin!(x, y => (x != y) as u64),
            XOp::EqF32 => bin!(x, y => (f32b(x) == f32b(y)) as u64),
            XOp::NeF32 => bin!(x, y => (f32b(x) != f32b(y)) as u64),
            XOp::EqF64 => bin!(x, y => (f64b(x) == f64b(y)) as u64),
            XOp::NeF64 => bin!(x, y => (f64b(x) != f64b(y)) as u64),
            XOp::LtI8 | XOp::LtI16 | XOp::LtI32 | XOp::LtI64 => {
                bin!(x, y => ((x as i64) < (y as i64)) as u64)
            }
            XOp::LeI8 | XOp::LeI16 | XOp::LeI32 | XOp::LeI64 => {
                bin!(x, y => ((x as i64) <= (y as i64)) as u64)
            }
            XOp::LtU8 | XOp::LtU16 | XOp::LtU32 | XOp::LtU64 => bin!(x, y => (x < y) as u64),
            XOp::LeU8 | XOp::LeU16 | XOp::LeU32 | XOp::LeU64 => bin!(x, y => (x <= y) as u64),
            XOp::LtF32 => bin!(x, y => (f32b(x) < f32b(y)) as u64),
            XOp::LeF32 => bin!(x, y => (f32b(x) <= f32b(y)) as u64),
            XOp::LtF64 => bin!(x, y => (f64b(x) < f64b(y)) as u64),
            XOp::LeF64 => bin!(x, y => (f64b(x) <= f64b(y)) as u64),
            XOp::EqStr => bin!(x, y => vm.str_eq(x, y) as u64),

            // Conversions (LANGUAGE §3.1); Rust `as` saturates float → int and maps NaN to 0.
            XOp::WrapI8 => un!(x => sx8(x)),
            XOp::WrapU8 => un!(x => x & 0xff),
            XOp::WrapI16 => un!(x => sx16(x)),
            XOp::WrapU16 => un!(x => x & 0xffff),
            XOp::WrapI32 => un!(x => sx32(x)),
            XOp::WrapU32 | XOp::WrapChar => un!(x => x & 0xffff_ffff),
            XOp::WrapI64 | XOp::WrapU64 => un!(x => x),
            XOp::SToF32 => un!(x => bf32(x as i64 as f32)),
            XOp::UToF32 => un!(x => bf32(x as f32)),
            XOp::SToF64 => un!(x => bf64(x as i64 as f64)),
            XOp::UToF64 => un!(x => bf64(x as f64)),
            XOp::F32ToI8 => un!(x => f32b(x) as i8 as i64 as u64),
            XOp::F32ToU8 => un!(x => f32b(x) as u8 as u64),
            XOp::F32ToI16 => un!(x => f32b(x) as i16 as i64 as u64),
            XOp::F32ToU16 => un!(x => f32b(x) as u16 as u64),
            XOp::F32ToI32 => un!(x => f32b(x) as i32 as i64 as u64),
            XOp::F32ToU32 => un!(x => f32b(x) as u32 as u64),
            XOp::F32ToI64 => un!(x => f32b(x) as i64 as u64),
            XOp::F32ToU64 => un!(x => f32b(x) as u64),
            XOp::F64ToI8 => un!(x => f64b(x) as i8 as i64 as u64),
            XOp::F64ToU8 => un!(x => f64b(x) as u8 as u64),
            XOp::F64ToI16 => un!(x => f64b(x) as i16 as i64 as u64),
            XOp::F64ToU16 => un!(x => f64b(x) as u16 as u64),
            XOp::F64ToI32 => un!(x => f64b(x) as i32 as i64 as u64),
            XOp::F64ToU32 => un!(x => f64b(x) as u32 as u64),
            XOp::F64ToI64 => un!(x => f64b(x) as i64 as u64),
            XOp::F64ToU64 => un!(x => f64b(x) as u64),
            XOp::F32ToF64 => un!(x => bf64(f32b(x) as f64)),
            XOp::F64ToF32 => un!(x => bf32(f64b(x) as f32)),
            XOp::F16ToF32 => un!(x => bf32(half::f16_to_f32(x as u16))),
            XOp::BF16ToF32 => un!(x => bf32(half::bf16_to_f32(x as u16))),
            XOp::F32ToF16 => un!(x => u64::from(half::f32_to_f16(f32b(x)))),
            XOp::F32ToBF16 => un!(x => u64::from(half::f32_to_bf16(f32b(x)))),
            XOp::F64ToF16 => un!(x => u64::from(half::f64_to_f16(f64b(x)))),
            XOp::F64ToBF16 => un!(x => u64::from(half::f64_to_bf16(f64b(x)))),

            // Math.
            XOp::Math1F32 => un!(x => bf32(math1_f32(ins.c(), f32b(x)))),
            XOp::MinF32 => binf32!(x, y => float::min_f32(x, y)),
            XOp::MaxF32 => binf32!(x, y => float::max_f32(x, y)),
            XOp::PowF32 => binf32!(x, y => (x as f64).powf(y as f64) as f32),
            XOp::Atan2F32 => binf32!(x, y => (x as f64).atan2(y as f64) as f32),
            XOp::FmaF32 => {
                let acc = f32b(rd!(ins.a()));
                let x = f32b(rd!(ins.b()));
                let y = f32b(rd!(ins.c()));
                wr!(ins.a(), bf32(acc.mul_add(x, y)));
            }
            XOp::Math1F64 => un!(x => bf64(math1_f64(ins.c(), f64b(x)))),
            XOp::MinF64 => binf64!(x, y => float::min_f64(x, y)),
            XOp::MaxF64 => binf64!(x, y => float::max_f64(x, y)),
            XOp::PowF64 => binf64!(x, y => x.powf(y)),
            XOp::Atan2F64 => binf64!(x, y => x.atan2(y)),
            XOp::FmaF64 => {
                let acc = f64b(rd!(ins.a()));
                let x = f64b(rd!(ins.b()));
                let y = f64b(rd!(ins.c()));
                wr!(ins.a(), bf64(acc.mul_add(x, y)));
            }

            // Strings and printing.
            XOp::ToStrBool => alloc_op!(vm.convert_to_string(Scalar::Bool, rd!(ins.b()))),
            XOp::ToStrChar => alloc_op!(vm.convert_to_string(Scalar::Char, rd!(ins.b()))),
            XOp::ToStrI8 | XOp::ToStrI16 | XOp::ToStrI32 | XOp::ToStrI64 => {
                alloc_op!(vm.convert_to_string(Scalar::I64, rd!(ins.b())))
            }
            XOp::ToStrU8 | XOp::ToStrU16 | XOp::ToStrU32 | XOp::ToStrU64 => {
                alloc_op!(vm.convert_to_string(Scalar::U64, rd!(ins.b())))
            }
            XOp::ToStrF32 => alloc_op!(vm.convert_to_string(Scalar::F32, rd!(ins.b()))),
            XOp::ToStrF64 => alloc_op!(vm.convert_to_string(Scalar::F64, rd!(ins.b()))),
            XOp::Concat => alloc_op!(vm.concat(rd!(ins.b()), rd!(ins.c()))),
            XOp::FmtFixed => alloc_op!(vm.fmt_fixed(rd!(ins.b()), ins.c())),
            XOp::Format => {
                // SAFETY: V-FORMAT proves r[c] and r[c+1] are registers of the frame.
                let vals = rd!(ins.c() + 1);
                alloc_op!(vm.format_dyn(rd!(ins.b()), rd!(ins.c()), vals))
            }
            XOp::ParseInt => alloc_op!(vm.parse_int(rd!(ins.b()))),
            XOp::SysExit => fault!(Fault::Exit((rd!(ins.a()) as i32) & 0xFF)),
            XOp::SysTime => wr!(ins.a(), crate::interp::slow::clock(ins.b()) as u64),
            XOp::StrCount | XOp::StrSize => {
                let h = rd!(ins.b());
                let bytes = ins.op() == XOp::StrSize;
                match vm.heap.str(h) {
                    Some(s) => wr!(
                        ins.a(),
                        if bytes { s.len() } else { s.chars().count() } as u64
                    ),
                    None => fault!(Fault::NullString),
                }
            }
            XOp::Print => {
                if let Err(f) = vm.print(rd!(ins.a()), ins.b()) {
                    fault!(f);
                }
            }

            // Arrays.
            XOp::NewArr => alloc_op!(vm.new_array(ins.a(), rd!(ins.b()))),
            XOp::ArrLen => {
                let h = rd!(ins.b());
                match vm.heap.get(h) {
                    Some(Obj::Array(arr)) => wr!(ins.a(), arr.data.len() as u64),
                    _ => fault!(Fault::BadRef {
                        reg: ins.b(),
                        handle: h,
                        access: Access::Count
                    }),
                }
            }
            XOp::ArrGetBool => aget!(Bool, x => x as u64),
            XOp::ArrSetBool => aset!(Bool, x => (x != 0) as u8),
            XOp::ArrGetChar => aget!(Char, x => x as u64),
            XOp::ArrSetChar => aset!(Char, x => x as u32),
            XOp::ArrGetI8 => aget!(I8, x => x as i64 as u64),
            XOp::ArrSetI8 => aset!(I8, x => x as i8),
            XOp::ArrGetU8 => aget!(U8, x => x as u64),
            XOp::ArrSetU8 => aset!(U8, x => x as u8),
            XOp::ArrGetI16 => aget!(I16, x => x as i64 as u64),
            XOp::ArrSetI16 => aset!(I16, x => x as i16),
            XOp::ArrGetU16 => aget!(U16, x => x as u64),
            XOp::ArrSetU16 => aset!(U16, x => x as u16),
            XOp::ArrGetF16 => aget!(F16, x => x as u64),
            XOp::ArrSetF16 => aset!(F16, x => x as u16),
            XOp::ArrGetBF16 => aget!(BF16, x => x as u64),
            XOp::ArrSetBF16 => aset!(BF16, x => x as u16),
            XOp::ArrGetI32 => aget!(I32, x => x as i64 as u64),
            XOp::ArrSetI32 => aset!(I32, x => x as i32),
            XOp::ArrGetU32 => aget!(U32, x => x as u64),
            XOp::ArrSetU32 => aset!(U32, x => x as u32),
            XOp::ArrGetI64 => aget!(I64, x => x as u64),
            XOp::ArrSetI64 => aset!(I64, x => x as i64),
            XOp::ArrGetU64 => aget!(U64, x => x),
            XOp::ArrSetU64 => aset!(U64, x => x),
            XOp::ArrGetF32 => aget!(F32, x => bf32(x)),
            XOp::ArrSetF32 => aset!(F32, x => f32b(x)),
            XOp::ArrGetF64 => aget!(F64, x => bf64(x)),
            XOp::AGet2F64 => {
                aget!(F64, x => bf64(x));
                step!();
                aget!(F64, x => bf64(x));
            }
            XOp::AGet2AddF64 | XOp::AGet2SubF64 | XOp::AGet2MulF64 => {
                let fused = ins.op();
                aget!(F64, x => bf64(x));
                step!();
                aget!(F64, x => bf64(x));
                step!();
                match fused {
                    XOp::AGet2AddF64 => binf64!(x, y => x + y),
                    XOp::AGet2SubF64 => binf64!(x, y => x - y),
                    _ => binf64!(x, y => x * y),
                }
            }
            XOp::ArrSetF64 => aset!(F64, x => f64b(x)),
            XOp::ArrGetRef => aget!(Ref, x => x),
            XOp::ArrSetRef => aset!(Ref, x => x),
            // Owns-flags of reference elements (LANGUAGE §6.2, §6.5).
            XOp::ArrOwnGet => {
                let (h, i) = (rd!(ins.b()), rd!(ins.c()));
                match vm.heap.elem_owns(h, i) {
                    Ok(owns) => wr!(ins.a(), owns as u64),
                    Err(e) => fault!(elem_fault(e, ins.b(), h, i)),
                }
            }
            XOp::ArrOwnSet => {
                let (h, i) = (rd!(ins.a()), rd!(ins.b()));
                if let Err(e) = vm.heap.set_elem_owns(h, i, rd!(ins.c()) != 0) {
                    fault!(elem_fault(e, ins.a(), h, i));
                }
            }
            XOp::ArrOwnTake => wr!(ins.a(), vm.heap.take_owned_elem(rd!(ins.b()))),

            // Objects and statics.
            XOp::NewObj => alloc_op!(vm.new_instance(ins.bc())),
            XOp::GetField => {
                let h = rd!(ins.b());
                let got = match vm.heap.get(h) {
                    Some(Obj::Instance(o)) => o.fields.get(ins.c() as usize).copied(),
                    _ => None,
                };
                match got {
                    Some(v) => wr!(ins.a(), v),
                    None => fault!(Fault::BadRef {
                        reg: ins.b(),
                        handle: h,
                        access: Access::Field(ins.c())
                    }),
                }
            }
            XOp::ChkObj => {
                let h = rd!(ins.a());
                if !matches!(vm.heap.get(h), Some(Obj::Instance(_))) {
                    fault!(Fault::BadRef {
                        reg: ins.a(),
                        handle: h,
                        access: Access::Call(ins.b())
                    })
                }
            }
            XOp::SetField => {
                let h = rd!(ins.a());
                let v = rd!(ins.c());
                let slot = match vm.heap.get_mut(h) {
                    Some(Obj::Instance(o)) => o.fields.get_mut(ins.b() as usize),
                    _ => None,
                };
                match slot {
                    Some(slot) => *slot = v,
                    None => fault!(Fault::BadRef {
                        reg: ins.a(),
                        handle: h,
                        access: Access::Field(ins.b())
                    }),
                }
            }
            XOp::GetStatic => {
                let s = ins.b() as usize;
                if CHECKED {
                    assert!(s < nstatics, "static #{s} out of range");
                }
                // SAFETY: V-STATIC: b < statics.len().
                wr!(ins.a(), unsafe { *statics.add(s) });
            }
            XOp::SetStatic => {
                let s = ins.b() as usize;
                if CHECKED {
                    assert!(s < nstatics, "static #{s} out of range");
                }
                let v = rd!(ins.a());
                // SAFETY: V-STATIC: b < statics.len().
                unsafe { *statics.add(s) = v };
            }
            // Superinstructions introduced by lowering (see `lower.rs`).
            XOp::BrLtS => br!(x, y => (x as i64) < (y as i64), true),
            XOp::BrNotLtS => br!(x, y => (x as i64) < (y as i64), false),
            XOp::BrLeS => br!(x, y => (x as i64) <= (y as i64), true),
            XOp::BrNotLeS => br!(x, y => (x as i64) <= (y as i64), false),
            XOp::BrLtU => br!(x, y => x < y, true),
            XOp::BrNotLtU => br!(x, y => x < y, false),
            XOp::BrLeU => br!(x, y => x <= y, true),
            XOp::BrNotLeU => br!(x, y => x <= y, false),
            XOp::BrEq => br!(x, y => x == y, true),
            XOp::BrNotEq => br!(x, y => x == y, false),
            XOp::BrNe => br!(x, y => x != y, true),
            XOp::BrNotNe => br!(x, y => x != y, false),
            XOp::BrLtF64 => br!(x, y => f64b(x) < f64b(y), true),
            XOp::BrNotLtF64 => br!(x, y => f64b(x) < f64b(y), false),
            XOp::BrLeF64 => br!(x, y => f64b(x) <= f64b(y), true),
            XOp::BrNotLeF64 => br!(x, y => f64b(x) <= f64b(y), false),
            XOp::BrLtF32 => br!(x, y => f32b(x) < f32b(y), true),
            XOp::BrNotLtF32 => br!(x, y => f32b(x) < f32b(y), false),
            XOp::BrLeF32 => br!(x, y => f32b(x) <= f32b(y), true),
            XOp::BrNotLeF32 => br!(x, y => f32b(x) <= f32b(y), false),
            XOp::BrKLtS => brk!(x, y => (x as i64) < (y as i64), true),
            XOp::BrKNotLtS => brk!(x, y => (x as i64) < (y as i64), false),
            XOp::BrKLeS => brk!(x, y => (x as i64) <= (y as i64), true),
            XOp::BrKNotLeS => brk!(x, y => (x as i64) <= (y as i64), false),
            XOp::BrKLtU => brk!(x, y => x < y, true),
            XOp::BrKNotLtU => brk!(x, y => x < y, false),
            XOp::BrKLeU => brk!(x, y => x <= y, true),
            XOp::BrKNotLeU => brk!(x, y => x <= y, false),
            XOp::BrKEq => brk!(x, y => x == y, true),
            XOp::BrKNotEq => brk!(x, y => x == y, false),
            XOp::BrKNe => brk!(x, y => x != y, true),
            XOp::BrKNotNe => brk!(x, y => x != y, false),
            XOp::BrKLtF64 => brk!(x, y => f64b(x) < f64b(y), true),
            XOp::BrKNotLtF64 => brk!(x, y => f64b(x) < f64b(y), false),
            XOp::BrKLeF64 => brk!(x, y => f64b(x) <= f64b(y), true),
            XOp::BrKNotLeF64 => brk!(x, y => f64b(x) <= f64b(y), false),
            XOp::BrKLtF32 => brk!(x, y => f32b(x) < f32b(y), true),
            XOp::BrKNotLtF32 => brk!(x, y => f32b(x) < f32b(y), false),
            XOp::BrKLeF32 => brk!(x, y => f32b(x) <= f32b(y), true),
            XOp::BrKNotLeF32 => brk!(x, y => f32b(x) <= f32b(y), false),
            XOp::KMulI64 => k_arith!(x, k => x.wrapping_mul(k)),
            XOp::KDivI64 => k_arith!(x, k => (x as i64).wrapping_div(k as i64) as u64),
            XOp::KRemI64 => k_arith!(x, k => (x as i64).wrapping_rem(k as i64) as u64),
            XOp::KMulI32 => k_arith!(x, k => sx32(x.wrapping_mul(k))),
            XOp::KDivI32 => k_arith!(x, k => (x as i64).wrapping_div(k as i64) as u64),
            XOp::KRemI32 => k_arith!(x, k => (x as i64).wrapping_rem(k as i64) as u64),
            XOp::KAddF64 => k_arith!(x, k => bf64(f64b(x) + f64b(k))),
            XOp::KSubF64 => k_arith!(x, k => bf64(f64b(x) - f64b(k))),
            XOp::KRsubF64 => k_arith!(x, k => bf64(f64b(k) - f64b(x))),
            XOp::KMulF64 => k_arith!(x, k => bf64(f64b(x) * f64b(k))),
            XOp::KDivF64 => k_arith!(x, k => bf64(f64b(x) / f64b(k))),
            XOp::KRdivF64 => k_arith!(x, k => bf64(f64b(k) / f64b(x))),
            XOp::LoopI64Lt => {
                back_edge!(id64);
                br!(x, y => (x as i64) < (y as i64), false)
            }
            XOp::LoopI64Le => {
                back_edge!(id64);
                br!(x, y => (x as i64) <= (y as i64), false)
            }
            XOp::LoopI64KLt => {
                back_edge!(id64);
                brk!(x, y => (x as i64) < (y as i64), false)
            }
            XOp::LoopI64KLe => {
                back_edge!(id64);
                brk!(x, y => (x as i64) <= (y as i64), false)
            }
            XOp::LoopI32Lt => {
                back_edge!(sx32);
                br!(x, y => (x as i64) < (y as i64), false)
            }
            XOp::LoopI32Le => {
                back_edge!(sx32);
                br!(x, y => (x as i64) <= (y as i64), false)
            }
            XOp::LoopI32KLt => {
                back_edge!(sx32);
                brk!(x, y => (x as i64) < (y as i64), false)
            }
            XOp::LoopI32KLe => {
                back_edge!(sx32);
                brk!(x, y => (x as i64) <= (y as i64), false)
            }

            XOp::MulAddBF64 => mul_add!(f64b, bf64, b, |o, t| o + t),
            XOp::MulAddCF64 => mul_add!(f64b, bf64, c, |o, t| t + o),
            XOp::MulSubF64 => mul_add!(f64b, bf64, b, |o, t| o - t),
            XOp::MulRsubF64 => mul_add!(f64b, bf64, c, |o, t| t - o),
            XOp::MulAddBF32 => mul_add!(f32b, bf32, b, |o, t| o + t),
            XOp::MulAddCF32 => mul_add!(f32b, bf32, c, |o, t| t + o),
            XOp::MulSubF32 => mul_add!(f32b, bf32, b, |o, t| o - t),
            XOp::MulRsubF32 => mul_add!(f32b, bf32, c, |o, t| t - o),

            // One arm for the three, so that the switch's code is there once.
            XOp::OsrJmp | XOp::OsrJmpIf | XOp::OsrJmpIfNot => {
                let taken = match ins.op() {
                    XOp::OsrJmp => true,
                    XOp::OsrJmpIf => rd!(ins.a()) != 0,
                    _ => rd!(ins.a()) == 0,
                };
                if taken {
                    osr_jump!(ins.bc());
                }
            }
            XOp::NativeCall => {
                // The host function cannot reach the stack, so `regs` stays valid.
                let v = vm.native_call(ip)?;
                vm.own = false;
                if ins.a() != 0 {
                    ret_value!(v);
                } else {
                    pop_frame!(0);
                }
            }
            XOp::Drop => {
                if rd!(ins.b()) != 0 {
                    vm.heap.release(rd!(ins.a()));
                }
            }
            // Host xpu instructions (buffers, streams, launches) run out of line, in the cold
            // `xpu::exec`; they never grow or shrink the stack.
            XOp::BufNew
            | XOp::BufNewEmpty
            | XOp::BufLength
            | XOp::BufAllocate
            | XOp::BufUpload
            | XOp::BufUploadN
            | XOp::BufDownload
            | XOp::BufDownloadN
            | XOp::BufUploadAsync
            | XOp::BufDownloadAsync
            | XOp::BufHostStore
            | XOp::BufHostLoad
            | XOp::BufFree
            | XOp::BufSlice
            | XOp::StreamCurrent
            | XOp::StreamCreate
            | XOp::StreamSync
            | XOp::StreamDestroy
            | XOp::StreamWaitFor
            | XOp::EventCreate
            | XOp::EventRecord
            | XOp::EventWaitHost
            | XOp::EventQuery
            | XOp::EventDestroy
            | XOp::DeviceForce
            | XOp::DeviceBackend
            | XOp::DeviceQuery
            | XOp::DeviceSupports
            | XOp::DeviceKernelOk
            | XOp::DeviceSetWorkers
            | XOp::KernelWave
            | XOp::KernelName
            | XOp::TimerMark
            | XOp::TimerLive
            | XOp::Launch => {
                crate::xpu::exec(vm, ip)?;
                // `exec` accessed the stack through `vm`: re-derive the window pointer.
                // SAFETY: the window still fits (the stack only grows).
                regs = unsafe { vm.stack.as_mut_ptr().add(base) };
            }
            // Device-only instructions never reach a host frame (V-SIDE).
            XOp::Geom
            | XOp::WaveSumU32
            | XOp::WaveSumF32
            | XOp::Barrier
            | XOp::SharedRef
            | XOp::CheckIndex
            | XOp::DevGetI8
            | XOp::DevSetI8
            | XOp::DevGetU8
            | XOp::DevSetU8
            | XOp::DevGetI16
            | XOp::DevSetI16
            | XOp::DevGetU16
            | XOp::DevSetU16
            | XOp::DevGetF16
            | XOp::DevSetF16
            | XOp::DevGetBF16
            | XOp::DevSetBF16
            | XOp::DevGetI32
            | XOp::DevSetI32
            | XOp::DevGetU32
            | XOp::DevSetU32
            | XOp::DevGetI64
            | XOp::DevSetI64
            | XOp::DevGetU64
            | XOp::DevSetU64
            | XOp::DevGetF32
            | XOp::DevSetF32
            | XOp::DevGetF64
            | XOp::DevSetF64
            | XOp::AtomicAddI32
            | XOp::AtomicAddU32
            | XOp::AtomicAddI64
            | XOp::AtomicAddU64
            | XOp::AtomicAddF32
            | XOp::AtomicSubI32
            | XOp::AtomicSubU32
            | XOp::AtomicSubI64
            | XOp::AtomicSubU64
            | XOp::AtomicMinI32
            | XOp::AtomicMinU32
            | XOp::AtomicMinI64
            | XOp::AtomicMinU64
            | XOp::AtomicMaxI32
            | XOp::AtomicMaxU32
            | XOp::AtomicMaxI64
            | XOp::AtomicMaxU64
            | XOp::AtomicAndI32
            | XOp::AtomicAndU32
            | XOp::AtomicAndI64
            | XOp::AtomicAndU64
            | XOp::AtomicOrI32
            | XOp::AtomicOrU32
            | XOp::AtomicOrI64
            | XOp::AtomicOrU64
            | XOp::AtomicXorI32
            | XOp::AtomicXorU32
            | XOp::AtomicXorI64
            | XOp::AtomicXorU64
            | XOp::AtomicXchgI32
            | XOp::AtomicXchgU32
            | XOp::AtomicXchgI64
            | XOp::AtomicXchgU64
            | XOp::AtomicMinF32
            | XOp::AtomicMaxF32
            | XOp::AtomicCasI32
            | XOp::AtomicCasU32
            | XOp::AtomicCasI64
            | XOp::AtomicCasU64
            | XOp::WaveMaxU32
            | XOp::WaveMinU32
            | XOp::WaveAndU32
            | XOp::WaveOrU32
            | XOp::WaveXorU32
            | XOp::WaveMaxF32
            | XOp::WaveScanAddU32
            | XOp::WaveScanMulU32
            | XOp::WaveShflU32
            | XOp::WaveRotU32
            | XOp::WaveBallot
            | XOp::WaveBarrier
            | XOp::Fence
            | XOp::KernelAttr => fault!(Fault::DeviceOnly),
        }
    }
}
