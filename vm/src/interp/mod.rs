//! The dispatch loop: one `loop { match }` over verified code.
//!
//! Hot state lives in locals: the instruction pointer `ip`, the register window `regs`, the
//! running function's `code` start (jump base) and `base` (window offset in the stack). There
//! are no bounds checks on the fast path: each raw access cites the verifier invariant that
//! makes it sound (see `bytecode/src/verify.rs` and [`frame`]):
//!
//! * **V-REG**: register operands are `< regs.len()` of their function;
//! * **V-JUMP**: jump targets are `< code.len()`;
//! * **V-TERM**: code is non-empty and ends in a terminator, so `ip` never leaves the code;
//! * **V-FUNC / V-CONST / V-STATIC / V-CLASS**: function, constant, static and class indices
//!   are in range;
//! * **V-CALL**: `call` and `ret` operands follow their special rules (a non-void callee's
//!   result register `a` is a caller register; only non-void functions use `ret`/`retown`).
//!
//! Objects are reached through the handle table, which validates every handle, so a stale,
//! null or mistyped reference is a clean `E-NULL`/`E-DROPPED`, never memory unsafety.
//!
//! Anything that can fail leaves through `fault!`, which calls the single `#[cold]`
//! [`Vm::fault`] with the current `ip` (the pc is recovered from it for the trace); no arm
//! returns a `Result` or saves the pc on the fast path.

mod frame;
mod ops;
mod slow;

pub(crate) use frame::Frame;

use cajeta_bytecode::{Instr, Op, Scalar};

use crate::api::{FnInfo, Vm};
use crate::error::RuntimeError;
use crate::heap::{ArrData, Array, Obj};
use frame::CHECKED;
use ops::*;
use slow::{Access, Fault};

/// Runs the frame on top of `vm.frames` until a return leaves `stop` frames on the stack,
/// and returns the returned cell (0 after `retvoid`).
///
/// Precondition: the top frame's window fits in the stack and its `ip` points into its
/// function's code (both set up by `Vm::call`).
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
    // SAFETY: `Vm::call` pushed a frame for an existing function (index < fns.len()).
    let mut info: &FnInfo = unsafe { &*fns.add(top.func as usize) };
    let mut code = info.code;
    let mut nregs = info.nregs as usize;
    let mut ip = top.ip;
    // SAFETY: `Vm::call` made the stack at least `base + nregs` cells long (window fits).
    let mut regs: *mut u64 = unsafe { vm.stack.as_mut_ptr().add(base) };
    // The instruction being executed (declared before the macros so they can name it).
    let mut ins: Instr;

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
        }};
    }
    // Leaves through the cold error path.
    macro_rules! fault {
        ($f:expr) => {{
            let f: Fault = $f;
            return Err(vm.fault(ip, f));
        }};
    }
    // Restores the caller's state after a return; leaves `run` if that was the entry frame.
    macro_rules! pop_frame {
        ($v:expr) => {{
            vm.frames.pop();
            if vm.frames.len() == stop {
                return Ok($v);
            }
            // SAFETY: frames.len() > stop >= 0, so there is a caller frame.
            let caller = unsafe { *vm.frames.last().unwrap_unchecked() };
            // SAFETY: frames only hold existing function indices (V-FUNC at their call).
            info = unsafe { &*fns.add(caller.func as usize) };
            base = caller.base;
            code = info.code;
            nregs = info.nregs as usize;
            ip = caller.ip;
            // SAFETY: the caller's window fitted when it was entered; the stack only grows.
            regs = unsafe { vm.stack.as_mut_ptr().add(base) };
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
            let $x = rd!(ins.b);
            let $y = rd!(ins.c);
            wr!(ins.a, $e);
        }};
    }
    // Unary op on cells: r[a] := expr of x = r[b].
    macro_rules! un {
        ($x:ident => $e:expr) => {{
            let $x = rd!(ins.b);
            wr!(ins.a, $e);
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
            let n = rd!(ins.b) as i64;
            let d = rd!(ins.c) as i64;
            if d == 0 {
                fault!(Fault::DivZero);
            }
            if d == -1 && n == $min as i64 {
                fault!(Fault::Overflow);
            }
            // Canonical inputs: the i64 quotient is the width's quotient (MIN / -1 excluded).
            wr!(ins.a, n.wrapping_div(d) as u64);
        }};
    }
    macro_rules! srem {
        () => {{
            let n = rd!(ins.b) as i64;
            let d = rd!(ins.c) as i64;
            if d == 0 {
                fault!(Fault::DivZero);
            }
            // MIN % -1 is 0 (wrapping_rem), the dividend's sign otherwise.
            wr!(ins.a, n.wrapping_rem(d) as u64);
        }};
    }
    macro_rules! udiv {
        ($op:tt) => {{
            let n = rd!(ins.b);
            let d = rd!(ins.c);
            if d == 0 {
                fault!(Fault::DivZero);
            }
            wr!(ins.a, n $op d);
        }};
    }
    // String-producing ops: r[a] := the new string, or a fault.
    macro_rules! alloc_op {
        ($e:expr) => {{
            match $e {
                Ok(h) => wr!(ins.a, h),
                Err(f) => fault!(f),
            }
        }};
    }
    // `aget.*`: r[a] := r[b][r[c]] from storage variant `$var`, element `$x` converted by `$e`.
    macro_rules! aget {
        ($var:ident, $x:ident => $e:expr) => {{
            let h = rd!(ins.b);
            let i = rd!(ins.c);
            let got = match vm.heap.get(h) {
                Some(Obj::Array(Array { data: ArrData::$var(v), .. })) => match v.get(i as usize) {
                    Some(&$x) => Ok($e),
                    None => Err(Fault::Bounds { index: i as i64, len: v.len() }),
                },
                _ => Err(Fault::BadRef { reg: ins.b, handle: h, access: Access::Index }),
            };
            match got {
                Ok(v) => wr!(ins.a, v),
                Err(f) => fault!(f),
            }
        }};
    }
    // `aset.*`: r[a][r[b]] := r[c] into storage variant `$var`, the cell `$x` converted by `$e`.
    macro_rules! aset {
        ($var:ident, $x:ident => $e:expr) => {{
            let h = rd!(ins.a);
            let i = rd!(ins.b);
            let $x = rd!(ins.c);
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
                _ => Some(Fault::BadRef { reg: ins.a, handle: h, access: Access::Index }),
            };
            if let Some(f) = err {
                fault!(f);
            }
        }};
    }

    loop {
        // SAFETY: `ip` points into the running function's code: it starts at the code's start
        // or a resume point after a `call`, moves by one after each non-terminator
        // (V-TERM: the last instruction is a terminator) and jumps only to targets
        // < code.len() (V-JUMP).
        ins = unsafe { *ip };
        // SAFETY: as above; one past the current instruction is still inside (or one past the
        // end of) the code slice.
        ip = unsafe { ip.add(1) };
        match ins.op {
            Op::Nop => {}
            Op::Mov => un!(x => x),
            Op::LoadK => {
                let k = ins.bc() as usize;
                if CHECKED {
                    assert!(k < nkvals, "constant #{k} out of range");
                }
                // SAFETY: V-CONST: bc < consts.len() = kvals.len().
                wr!(ins.a, unsafe { *kvals.add(k) });
            }
            Op::LoadI => wr!(ins.a, ins.bc() as i32 as i64 as u64),
            Op::LoadNull => wr!(ins.a, 0),
            Op::Jmp => {
                // SAFETY: V-JUMP: bc < code.len().
                ip = unsafe { code.add(ins.bc() as usize) };
            }
            Op::JmpIf => {
                if rd!(ins.a) != 0 {
                    // SAFETY: V-JUMP.
                    ip = unsafe { code.add(ins.bc() as usize) };
                }
            }
            Op::JmpIfNot => {
                if rd!(ins.a) == 0 {
                    // SAFETY: V-JUMP.
                    ip = unsafe { code.add(ins.bc() as usize) };
                }
            }
            Op::Call => {
                let callee = ins.c as usize;
                if CHECKED {
                    assert!(callee < nfns, "function #{callee} out of range");
                }
                // SAFETY: V-FUNC: c < functions.len() = fns.len().
                let cinfo: &FnInfo = unsafe { &*fns.add(callee) };
                let new_base = base + ins.b as usize;
                let top = new_base + cinfo.nregs as usize;
                if top > vm.stack.len() {
                    vm.grow_stack(top);
                }
                if vm.frames.len() >= vm.max_depth {
                    fault!(Fault::Stack);
                }
                // SAFETY: `run` always has at least one frame (the running one).
                unsafe { vm.frames.last_mut().unwrap_unchecked() }.ip = ip;
                vm.frames.push(Frame {
                    func: callee as u32,
                    base: new_base,
                    ip: cinfo.code,
                });
                info = cinfo;
                base = new_base;
                code = info.code;
                nregs = info.nregs as usize;
                ip = code;
                // SAFETY: stack.len() >= top = base + nregs (checked above): window fits.
                regs = unsafe { vm.stack.as_mut_ptr().add(base) };
            }
            Op::Ret => {
                vm.own = false;
                ret_value!(rd!(ins.a));
            }
            Op::RetOwn => {
                vm.own = rd!(ins.b) != 0;
                ret_value!(rd!(ins.a));
            }
            Op::RetVoid => {
                vm.own = false;
                pop_frame!(0);
            }
            Op::TakeOwn => wr!(ins.a, vm.own as u64),

            // Integer arithmetic: compute on 64-bit cells, re-canonicalise to the width.
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

            // Floats: IEEE, one rounding per operation (Rust never contracts to FMA).
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
            Op::LNot => un!(x => (x == 0) as u64),

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
            | Op::EqRef => bin!(x, y => (x == y) as u64),
            Op::NeBool
            | Op::NeChar
            | Op::NeI8
            | Op::NeU8
            | Op::NeI16
            | Op::NeU16
            | Op::NeI32
            | Op::NeU32
            | Op::NeI64
            | Op::NeU64 => bin!(x, y => (x != y) as u64),
            Op::EqF32 => bin!(x, y => (f32b(x) == f32b(y)) as u64),
            Op::NeF32 => bin!(x, y => (f32b(x) != f32b(y)) as u64),
            Op::EqF64 => bin!(x, y => (f64b(x) == f64b(y)) as u64),
            Op::NeF64 => bin!(x, y => (f64b(x) != f64b(y)) as u64),
            Op::LtI8 | Op::LtI16 | Op::LtI32 | Op::LtI64 => {
                bin!(x, y => ((x as i64) < (y as i64)) as u64)
            }
            Op::LeI8 | Op::LeI16 | Op::LeI32 | Op::LeI64 => {
                bin!(x, y => ((x as i64) <= (y as i64)) as u64)
            }
            Op::LtU8 | Op::LtU16 | Op::LtU32 | Op::LtU64 => bin!(x, y => (x < y) as u64),
            Op::LeU8 | Op::LeU16 | Op::LeU32 | Op::LeU64 => bin!(x, y => (x <= y) as u64),
            Op::LtF32 => bin!(x, y => (f32b(x) < f32b(y)) as u64),
            Op::LeF32 => bin!(x, y => (f32b(x) <= f32b(y)) as u64),
            Op::LtF64 => bin!(x, y => (f64b(x) < f64b(y)) as u64),
            Op::LeF64 => bin!(x, y => (f64b(x) <= f64b(y)) as u64),
            Op::EqStr => bin!(x, y => vm.str_eq(x, y) as u64),

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
            Op::F32ToU8 => un!(x => f32b(x) as u8 as u64),
            Op::F32ToI16 => un!(x => f32b(x) as i16 as i64 as u64),
            Op::F32ToU16 => un!(x => f32b(x) as u16 as u64),
            Op::F32ToI32 => un!(x => f32b(x) as i32 as i64 as u64),
            Op::F32ToU32 => un!(x => f32b(x) as u32 as u64),
            Op::F32ToI64 => un!(x => f32b(x) as i64 as u64),
            Op::F32ToU64 => un!(x => f32b(x) as u64),
            Op::F64ToI8 => un!(x => f64b(x) as i8 as i64 as u64),
            Op::F64ToU8 => un!(x => f64b(x) as u8 as u64),
            Op::F64ToI16 => un!(x => f64b(x) as i16 as i64 as u64),
            Op::F64ToU16 => un!(x => f64b(x) as u16 as u64),
            Op::F64ToI32 => un!(x => f64b(x) as i32 as i64 as u64),
            Op::F64ToU32 => un!(x => f64b(x) as u32 as u64),
            Op::F64ToI64 => un!(x => f64b(x) as i64 as u64),
            Op::F64ToU64 => un!(x => f64b(x) as u64),
            Op::F32ToF64 => un!(x => bf64(f32b(x) as f64)),
            Op::F64ToF32 => un!(x => bf32(f64b(x) as f32)),

            // Math.
            Op::Math1F32 => un!(x => bf32(math1_f32(ins.c, f32b(x)))),
            Op::MinF32 => binf32!(x, y => x.min(y)),
            Op::MaxF32 => binf32!(x, y => x.max(y)),
            Op::PowF32 => binf32!(x, y => (x as f64).powf(y as f64) as f32),
            Op::Atan2F32 => binf32!(x, y => (x as f64).atan2(y as f64) as f32),
            Op::FmaF32 => {
                let acc = f32b(rd!(ins.a));
                let x = f32b(rd!(ins.b));
                let y = f32b(rd!(ins.c));
                wr!(ins.a, bf32(acc.mul_add(x, y)));
            }
            Op::Math1F64 => un!(x => bf64(math1_f64(ins.c, f64b(x)))),
            Op::MinF64 => binf64!(x, y => x.min(y)),
            Op::MaxF64 => binf64!(x, y => x.max(y)),
            Op::PowF64 => binf64!(x, y => x.powf(y)),
            Op::Atan2F64 => binf64!(x, y => x.atan2(y)),
            Op::FmaF64 => {
                let acc = f64b(rd!(ins.a));
                let x = f64b(rd!(ins.b));
                let y = f64b(rd!(ins.c));
                wr!(ins.a, bf64(acc.mul_add(x, y)));
            }

            // Strings and printing.
            Op::ToStrBool => alloc_op!(vm.to_str(Scalar::Bool, rd!(ins.b))),
            Op::ToStrChar => alloc_op!(vm.to_str(Scalar::Char, rd!(ins.b))),
            Op::ToStrI8 | Op::ToStrI16 | Op::ToStrI32 | Op::ToStrI64 => {
                alloc_op!(vm.to_str(Scalar::I64, rd!(ins.b)))
            }
            Op::ToStrU8 | Op::ToStrU16 | Op::ToStrU32 | Op::ToStrU64 => {
                alloc_op!(vm.to_str(Scalar::U64, rd!(ins.b)))
            }
            Op::ToStrF32 => alloc_op!(vm.to_str(Scalar::F32, rd!(ins.b))),
            Op::ToStrF64 => alloc_op!(vm.to_str(Scalar::F64, rd!(ins.b))),
            Op::Concat => alloc_op!(vm.concat(rd!(ins.b), rd!(ins.c))),
            Op::FmtFixed => alloc_op!(vm.fmt_fixed(rd!(ins.b), ins.c)),
            Op::Print => vm.print(rd!(ins.a), ins.b),

            // Arrays.
            Op::NewArr => alloc_op!(vm.new_array(ins.a, rd!(ins.b))),
            Op::ArrLen => {
                let h = rd!(ins.b);
                match vm.heap.get(h) {
                    Some(Obj::Array(arr)) => wr!(ins.a, arr.data.len() as u64),
                    _ => fault!(Fault::BadRef {
                        reg: ins.b,
                        handle: h,
                        access: Access::Count
                    }),
                }
            }
            Op::ArrGetBool => aget!(Bool, x => x as u64),
            Op::ArrSetBool => aset!(Bool, x => (x != 0) as u8),
            Op::ArrGetChar => aget!(Char, x => x as u64),
            Op::ArrSetChar => aset!(Char, x => x as u32),
            Op::ArrGetI8 => aget!(I8, x => x as i64 as u64),
            Op::ArrSetI8 => aset!(I8, x => x as i8),
            Op::ArrGetU8 => aget!(U8, x => x as u64),
            Op::ArrSetU8 => aset!(U8, x => x as u8),
            Op::ArrGetI16 => aget!(I16, x => x as i64 as u64),
            Op::ArrSetI16 => aset!(I16, x => x as i16),
            Op::ArrGetU16 => aget!(U16, x => x as u64),
            Op::ArrSetU16 => aset!(U16, x => x as u16),
            Op::ArrGetI32 => aget!(I32, x => x as i64 as u64),
            Op::ArrSetI32 => aset!(I32, x => x as i32),
            Op::ArrGetU32 => aget!(U32, x => x as u64),
            Op::ArrSetU32 => aset!(U32, x => x as u32),
            Op::ArrGetI64 => aget!(I64, x => x as u64),
            Op::ArrSetI64 => aset!(I64, x => x as i64),
            Op::ArrGetU64 => aget!(U64, x => x),
            Op::ArrSetU64 => aset!(U64, x => x),
            Op::ArrGetF32 => aget!(F32, x => bf32(x)),
            Op::ArrSetF32 => aset!(F32, x => f32b(x)),
            Op::ArrGetF64 => aget!(F64, x => bf64(x)),
            Op::ArrSetF64 => aset!(F64, x => f64b(x)),
            Op::ArrGetRef => aget!(Ref, x => x),
            Op::ArrSetRef => aset!(Ref, x => x),

            // Objects and statics.
            Op::NewObj => alloc_op!(vm.new_instance(ins.bc())),
            Op::GetField => {
                let h = rd!(ins.b);
                let got = match vm.heap.get(h) {
                    Some(Obj::Instance(o)) => o.fields.get(ins.c as usize).copied(),
                    _ => None,
                };
                match got {
                    Some(v) => wr!(ins.a, v),
                    None => fault!(Fault::BadRef {
                        reg: ins.b,
                        handle: h,
                        access: Access::Field(ins.c)
                    }),
                }
            }
            Op::SetField => {
                let h = rd!(ins.a);
                let v = rd!(ins.c);
                let slot = match vm.heap.get_mut(h) {
                    Some(Obj::Instance(o)) => o.fields.get_mut(ins.b as usize),
                    _ => None,
                };
                match slot {
                    Some(slot) => *slot = v,
                    None => fault!(Fault::BadRef {
                        reg: ins.a,
                        handle: h,
                        access: Access::Field(ins.b)
                    }),
                }
            }
            Op::GetStatic => {
                let s = ins.b as usize;
                if CHECKED {
                    assert!(s < nstatics, "static #{s} out of range");
                }
                // SAFETY: V-STATIC: b < statics.len().
                wr!(ins.a, unsafe { *statics.add(s) });
            }
            Op::SetStatic => {
                let s = ins.b as usize;
                if CHECKED {
                    assert!(s < nstatics, "static #{s} out of range");
                }
                let v = rd!(ins.a);
                // SAFETY: V-STATIC: b < statics.len().
                unsafe { *statics.add(s) = v };
            }
            Op::Drop => {
                if rd!(ins.b) != 0 {
                    vm.heap.release(rd!(ins.a));
                }
            }
        }
    }
}
