//! Lowering of verified bytecode to the interpreter's in-memory form (DESIGN §4).
//!
//! The lowered code of a function has **exactly one slot per bytecode instruction**, so pcs,
//! jump targets and line tables carry over unchanged. Each slot is an [`XInstr`]: the original
//! operands with an [`XOp`] opcode. `XOp` is generated from the bytecode's opcode table (same
//! names, same numbers) and extends it with *superinstructions*.
//!
//! A superinstruction in slot `p` is the **sequential composition** of the instructions in
//! slots `p, p+1, …`: it runs their bodies one after the other, exactly as the dispatch loop
//! would, minus the dispatches in between (and, where a value can stay in a machine register,
//! minus a store and reload). Every register they write is written, faults report the pc of
//! the instruction that faulted, and the later slots stay in place, unchanged, for code that
//! jumps straight to them. So a program cannot tell lowered code from the original. The set,
//! chosen from what a straightforward compiler emits in the benchmark loops:
//!
//! * `Br*` — a comparison and the `jmpif`/`jmpifnot` after it;
//! * `BrK*` — `loadi`/`loadk`, then a comparison and branch (`k < 50`, `x > 4.0`);
//! * `K*` — `loadi`/`loadk` into `t`, then an arithmetic instruction reading `t`
//!   (`(i * j) % 7`, `2.0 * zr`): the constant feeds the operation directly, and a division by
//!   a constant other than 0 and -1 skips its checks;
//! * `Loop*` — a loop's back-edge `addi r, r, k; jmp H`, then the loop test at `H` (a
//!   `BrNot*` or `BrKNot*` on a signed `<`/`<=`), like Lua's `FORLOOP`; the slot holds `H` in
//!   place of the `addi`'s (equal) source register;
//! * `AGet2*` — two `aget.f64` in a row (each checked; a fault in the second reports its
//!   own slot), optionally followed by the `add`/`sub`/`mul.f64` of the next slot;
//! * `Mul*` — `mul.f64 t, x, y`, then an `add`/`sub` reading `t` (the product stays in a
//!   machine register; two roundings, never an FMA).
//!
//! A `loadi` absorbed into a `BrK*`/`K*` slot has its immediate moved to the VM's constant
//! cells (`kvals`), so both forms read their constant as `kvals[bc]`.
//!
//! Invariant **LOWER** (relied on by the superinstruction arms; established by the checks in
//! [`lower`], not derived from the verifier): a superinstruction's constituent slots exist,
//! hold the instructions its name says, and are followed by at least one more slot
//! (`p + k < len` for a `k`-slot composition, so the fall-through stays inside the code);
//! branch targets it takes are `< len`; a `BrK*`/`K*` slot's `bc` is `< kvals.len()`; a
//! `Loop*` slot's `b` is the head `H < len` of the loop test its name says.

use cajeta_bytecode::{FnKind, Function, Instr, Op};

macro_rules! define_xops {
    ($($name:ident $mn:literal [$a:expr, $b:expr, $c:expr] $sem:literal;)*) => {
        /// The interpreter's opcodes: every bytecode [`Op`] (same name and number), then the
        /// superinstructions introduced by lowering.
        #[derive(Copy, Clone, PartialEq, Eq, Debug)]
        #[repr(u16)]
        pub(crate) enum XOp {
            $($name,)*
            /// `lt` (signed, any width) and `jmpif`.
            BrLtS,
            /// `lt` (signed) and `jmpifnot`.
            BrNotLtS,
            /// `le` (signed) and `jmpif`.
            BrLeS,
            /// `le` (signed) and `jmpifnot`.
            BrNotLeS,
            /// `lt` (unsigned) and `jmpif`.
            BrLtU,
            /// `lt` (unsigned) and `jmpifnot`.
            BrNotLtU,
            /// `le` (unsigned) and `jmpif`.
            BrLeU,
            /// `le` (unsigned) and `jmpifnot`.
            BrNotLeU,
            /// `eq` (canonical cells, references) and `jmpif`.
            BrEq,
            /// `eq` and `jmpifnot`.
            BrNotEq,
            /// `ne` and `jmpif`.
            BrNe,
            /// `ne` and `jmpifnot`.
            BrNotNe,
            /// `lt.f64` and `jmpif`.
            BrLtF64,
            /// `lt.f64` and `jmpifnot`.
            BrNotLtF64,
            /// `le.f64` and `jmpif`.
            BrLeF64,
            /// `le.f64` and `jmpifnot`.
            BrNotLeF64,
            /// `lt.f32` and `jmpif`.
            BrLtF32,
            /// `lt.f32` and `jmpifnot`.
            BrNotLtF32,
            /// `le.f32` and `jmpif`.
            BrLeF32,
            /// `le.f32` and `jmpifnot`.
            BrNotLeF32,
            /// A constant load, then `BrLtS`.
            BrKLtS,
            /// A constant load, then `BrNotLtS`.
            BrKNotLtS,
            /// A constant load, then `BrLeS`.
            BrKLeS,
            /// A constant load, then `BrNotLeS`.
            BrKNotLeS,
            /// A constant load, then `BrLtU`.
            BrKLtU,
            /// A constant load, then `BrNotLtU`.
            BrKNotLtU,
            /// A constant load, then `BrLeU`.
            BrKLeU,
            /// A constant load, then `BrNotLeU`.
            BrKNotLeU,
            /// A constant load, then `BrEq`.
            BrKEq,
            /// A constant load, then `BrNotEq`.
            BrKNotEq,
            /// A constant load, then `BrNe`.
            BrKNe,
            /// A constant load, then `BrNotNe`.
            BrKNotNe,
            /// A constant load, then `BrLtF64`.
            BrKLtF64,
            /// A constant load, then `BrNotLtF64`.
            BrKNotLtF64,
            /// A constant load, then `BrLeF64`.
            BrKLeF64,
            /// A constant load, then `BrNotLeF64`.
            BrKNotLeF64,
            /// A constant load, then `BrLtF32`.
            BrKLtF32,
            /// A constant load, then `BrNotLtF32`.
            BrKNotLtF32,
            /// A constant load, then `BrLeF32`.
            BrKLeF32,
            /// A constant load, then `BrNotLeF32`.
            BrKNotLeF32,
            /// A constant load into `t`, then `mul.i64` with `t` as either operand.
            KMulI64,
            /// A constant load into `t`, then `div.i64 d, x, t`; the constant is neither 0 nor
            /// -1, so the division cannot fault.
            KDivI64,
            /// As `KDivI64` for `rem.i64`.
            KRemI64,
            /// As `KMulI64` for `mul.i32`.
            KMulI32,
            /// As `KDivI64` for `div.i32`.
            KDivI32,
            /// As `KDivI64` for `rem.i32`.
            KRemI32,
            /// A constant load into `t`, then `add.f64` with `t` as either operand.
            KAddF64,
            /// A constant load into `t`, then `sub.f64 d, x, t`.
            KSubF64,
            /// A constant load into `t`, then `sub.f64 d, t, x`.
            KRsubF64,
            /// As `KAddF64` for `mul.f64`.
            KMulF64,
            /// A constant load into `t`, then `div.f64 d, x, t`.
            KDivF64,
            /// A constant load into `t`, then `div.f64 d, t, x`.
            KRdivF64,
            /// `addi.i64; jmp H`, then the test `BrNotLtS` at `H`.
            LoopI64Lt,
            /// `addi.i64; jmp H`, then `BrNotLeS` at `H`.
            LoopI64Le,
            /// `addi.i64; jmp H`, then `BrKNotLtS` at `H`.
            LoopI64KLt,
            /// `addi.i64; jmp H`, then `BrKNotLeS` at `H`.
            LoopI64KLe,
            /// `addi.i32; jmp H`, then `BrNotLtS` at `H`.
            LoopI32Lt,
            /// `addi.i32; jmp H`, then `BrNotLeS` at `H`.
            LoopI32Le,
            /// `addi.i32; jmp H`, then `BrKNotLtS` at `H`.
            LoopI32KLt,
            /// `addi.i32; jmp H`, then `BrKNotLeS` at `H`.
            LoopI32KLe,
            /// `mul.f64 t, x, y` then `add.f64 d, o, t` or `add.f64 d, t, o` (o = the next
            /// slot's `b` here): `r[t] := x * y; r[d] := r[o] + r[t]`, two roundings.
            MulAddBF64,
            /// As `MulAddBF64` with `o` the next slot's `c`.
            MulAddCF64,
            /// `mul.f64 t, x, y; sub.f64 d, o, t`: `r[d] := r[o] - r[t]`.
            MulSubF64,
            /// `mul.f64 t, x, y; sub.f64 d, t, o`: `r[d] := r[t] - r[o]`.
            MulRsubF64,
            /// The float32 forms of the four above.
            MulAddBF32,
            /// See `MulAddCF64`.
            MulAddCF32,
            /// See `MulSubF64`.
            MulSubF32,
            /// See `MulRsubF64`.
            MulRsubF32,
            /// Two `aget.f64` in a row (float64 array-heavy loops load operands in pairs): both
            /// run, each with its own checks, and a fault in the second reports its own slot.
            AGet2F64,
            /// `AGet2F64`, then the `add.f64` in the third slot.
            AGet2AddF64,
            /// `AGet2F64`, then the `sub.f64` in the third slot.
            AGet2SubF64,
            /// `AGet2F64`, then the `mul.f64` in the third slot.
            AGet2MulF64,
            /// Metered code only (see [`lower`]): `call`, then one unit of fuel (and the
            /// interrupt check) at the callee's entry when the interpreter runs it.
            CallMetered,
            /// Metered code only: a backward `jmp`, one unit of fuel first.
            JmpBack,
            /// Metered code only: a backward `jmpif`, one unit of fuel when it jumps.
            JmpIfBack,
            /// Metered code only: a backward `jmpifnot`, one unit of fuel when it jumps.
            JmpIfNotBack,
            /// Code lowered for on-stack replacement only (see [`lower`]): a backward `jmp`
            /// where the activation may move to the function's compiled code
            /// (`Vm::osr_enter`).
            OsrJmp,
            /// The same for a backward `jmpif`, when it jumps.
            OsrJmpIf,
            /// The same for a backward `jmpifnot`, when it jumps.
            OsrJmpIfNot,
            /// The whole body of a native function (no bytecode): calls the host function
            /// registered for the running function with its parameter registers, then
            /// returns its result (`a == 1`) or nothing (`a == 0`).
            NativeCall,
        }

        impl XOp {
            /// The interpreter opcode of a bytecode opcode (same number).
            pub(crate) fn from_op(op: Op) -> XOp {
                match op {
                    $(Op::$name => XOp::$name,)*
                }
            }
        }
    };
}

cajeta_bytecode::for_each_opcode!(define_xops);

/// One lowered instruction; the same layout as [`Instr`].
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
#[repr(C, align(8))]
pub(crate) struct XInstr {
    /// The opcode.
    pub(crate) op: XOp,
    /// Operand a.
    pub(crate) a: u16,
    /// Operand b (low half of `bc`).
    pub(crate) b: u16,
    /// Operand c (high half of `bc`).
    pub(crate) c: u16,
}

impl XInstr {
    /// The 32-bit immediate formed by `b` (low) and `c` (high).
    #[inline(always)]
    pub(crate) fn bc(self) -> u32 {
        self.b as u32 | (self.c as u32) << 16
    }
}

/// The `Br*` superinstruction for a comparison opcode followed by a branch that jumps when the
/// result equals `jump_if`, if there is one.
fn br_op(op: Op, jump_if: bool) -> Option<XOp> {
    use Op::*;
    use XOp as X;
    let (yes, no) = match op {
        LtI8 | LtI16 | LtI32 | LtI64 => (X::BrLtS, X::BrNotLtS),
        LeI8 | LeI16 | LeI32 | LeI64 => (X::BrLeS, X::BrNotLeS),
        LtU8 | LtU16 | LtU32 | LtU64 => (X::BrLtU, X::BrNotLtU),
        LeU8 | LeU16 | LeU32 | LeU64 => (X::BrLeU, X::BrNotLeU),
        EqBool | EqChar | EqI8 | EqU8 | EqI16 | EqU16 | EqI32 | EqU32 | EqI64 | EqU64 | EqRef => {
            (X::BrEq, X::BrNotEq)
        }
        NeBool | NeChar | NeI8 | NeU8 | NeI16 | NeU16 | NeI32 | NeU32 | NeI64 | NeU64 => {
            (X::BrNe, X::BrNotNe)
        }
        LtF64 => (X::BrLtF64, X::BrNotLtF64),
        LeF64 => (X::BrLeF64, X::BrNotLeF64),
        LtF32 => (X::BrLtF32, X::BrNotLtF32),
        LeF32 => (X::BrLeF32, X::BrNotLeF32),
        _ => return None,
    };
    Some(if jump_if { yes } else { no })
}

/// The `BrK*` form (a constant load first) of a `Br*` superinstruction.
fn brk_op(br: XOp) -> Option<XOp> {
    use XOp::*;
    Some(match br {
        BrLtS => BrKLtS,
        BrNotLtS => BrKNotLtS,
        BrLeS => BrKLeS,
        BrNotLeS => BrKNotLeS,
        BrLtU => BrKLtU,
        BrNotLtU => BrKNotLtU,
        BrLeU => BrKLeU,
        BrNotLeU => BrKNotLeU,
        BrEq => BrKEq,
        BrNotEq => BrKNotEq,
        BrNe => BrKNe,
        BrNotNe => BrKNotNe,
        BrLtF64 => BrKLtF64,
        BrNotLtF64 => BrKNotLtF64,
        BrLeF64 => BrKLeF64,
        BrNotLeF64 => BrKNotLeF64,
        BrLtF32 => BrKLtF32,
        BrNotLtF32 => BrKNotLtF32,
        BrLeF32 => BrKLeF32,
        BrNotLeF32 => BrKNotLeF32,
        _ => return None,
    })
}

/// The `K*` superinstruction for a constant `k` loaded into register `t` followed by `next`,
/// if `next` is an arithmetic instruction that reads `t` in a supported position.
fn k_op(t: u16, k: u64, next: Instr) -> Option<XOp> {
    use XOp::*;
    let (in_b, in_c) = (next.b == t, next.c == t);
    // Division by a constant that is neither 0 nor -1 never faults.
    let safe_divisor = k != 0 && k as i64 != -1 && in_c;
    Some(match next.op {
        Op::MulI64 if in_b || in_c => KMulI64,
        Op::MulI32 if in_b || in_c => KMulI32,
        Op::DivI64 if safe_divisor => KDivI64,
        Op::RemI64 if safe_divisor => KRemI64,
        Op::DivI32 if safe_divisor => KDivI32,
        Op::RemI32 if safe_divisor => KRemI32,
        Op::AddF64 if in_b || in_c => KAddF64,
        Op::MulF64 if in_b || in_c => KMulF64,
        Op::SubF64 if in_c => KSubF64,
        Op::SubF64 if in_b => KRsubF64,
        Op::DivF64 if in_c => KDivF64,
        Op::DivF64 if in_b => KRdivF64,
        _ => return None,
    })
}

/// The `Loop*` superinstruction for an `addi` of opcode `add` whose loop test (the lowered
/// slot at the head) is `head`.
fn loop_op(add: Op, head: XOp) -> Option<XOp> {
    use XOp::*;
    Some(match (add, head) {
        (Op::AddImmI64, BrNotLtS) => LoopI64Lt,
        (Op::AddImmI64, BrNotLeS) => LoopI64Le,
        (Op::AddImmI64, BrKNotLtS) => LoopI64KLt,
        (Op::AddImmI64, BrKNotLeS) => LoopI64KLe,
        (Op::AddImmI32, BrNotLtS) => LoopI32Lt,
        (Op::AddImmI32, BrNotLeS) => LoopI32Le,
        (Op::AddImmI32, BrKNotLtS) => LoopI32KLt,
        (Op::AddImmI32, BrKNotLeS) => LoopI32KLe,
        _ => return None,
    })
}

/// The `Mul*` superinstruction for `mul` (`MulF64`/`MulF32`) with destination `t` followed by
/// `next`, if `next` is an add or subtract of the same type that reads `t`.
fn mul_add_op(mul: Op, t: u16, next: Instr) -> Option<XOp> {
    use XOp::*;
    let f64 = match (mul, next.op) {
        (Op::MulF64, Op::AddF64 | Op::SubF64) => true,
        (Op::MulF32, Op::AddF32 | Op::SubF32) => false,
        _ => return None,
    };
    let add = matches!(next.op, Op::AddF64 | Op::AddF32);
    Some(match (add, next.c == t, next.b == t, f64) {
        (true, true, _, true) => MulAddBF64,
        (true, false, true, true) => MulAddCF64,
        (false, true, _, true) => MulSubF64,
        (false, false, true, true) => MulRsubF64,
        (true, true, _, false) => MulAddBF32,
        (true, false, true, false) => MulAddCF32,
        (false, true, _, false) => MulSubF32,
        (false, false, true, false) => MulRsubF32,
        _ => return None,
    })
}

/// Lowers a verified function's code (see the module documentation). Immediates of absorbed
/// `loadi` instructions are appended to `kvals`, the VM's constant cells.
///
/// With `metered` (a VM with fuel or an interrupt handle) the code gets **check points**
/// where the JIT has them: every `call` becomes `CallMetered` and every backward jump
/// (target `<=` its own pc) `JmpBack`/`JmpIfBack`/`JmpIfNotBack`; superinstructions that
/// would absorb a backward jump (`Loop*`, a `Br*` whose branch goes back) are not formed. Code
/// lowered without `metered` has no check point at all, so an unmetered VM pays nothing.
///
/// With `osr` (never together with `metered`) every backward jump instead becomes
/// `OsrJmp`/`OsrJmpIf`/`OsrJmpIfNot`, the points where an activation that started in the
/// interpreter may move to compiled code, with the same superinstructions left out. The VM
/// runs such code only while a function's compiled code is being made.
pub(crate) fn lower(f: &Function, kvals: &mut Vec<u64>, metered: bool, osr: bool) -> Box<[XInstr]> {
    if f.kind == FnKind::Native {
        return Box::new([XInstr {
            op: XOp::NativeCall,
            a: u16::from(f.ret.is_some()),
            b: 0,
            c: 0,
        }]);
    }
    let code: &[Instr] = &f.code;
    let n = code.len();
    let mut out: Vec<XInstr> = code
        .iter()
        .map(|i| XInstr {
            op: XOp::from_op(i.op),
            a: i.a,
            b: i.b,
            c: i.c,
        })
        .collect();
    let is_target_ok = |t: u32| (t as usize) < n;
    // A jump at `pc` to `t` goes back (a check point when metered or for OSR).
    let checked = metered || osr;
    let back = |pc: usize, t: u32| checked && t as usize <= pc;
    if metered {
        for (p, (i, x)) in code.iter().zip(out.iter_mut()).enumerate() {
            x.op = match i.op {
                Op::Call => XOp::CallMetered,
                Op::Jmp if back(p, i.bc()) => XOp::JmpBack,
                Op::JmpIf if back(p, i.bc()) => XOp::JmpIfBack,
                Op::JmpIfNot if back(p, i.bc()) => XOp::JmpIfNotBack,
                _ => continue,
            };
        }
    } else if osr {
        for (p, (i, x)) in code.iter().zip(out.iter_mut()).enumerate() {
            x.op = match i.op {
                Op::Jmp if back(p, i.bc()) => XOp::OsrJmp,
                Op::JmpIf if back(p, i.bc()) => XOp::OsrJmpIf,
                Op::JmpIfNot if back(p, i.bc()) => XOp::OsrJmpIfNot,
                _ => continue,
            };
        }
    }

    // Compare-and-branch: slots p (compare), p + 1 (branch on its result), p + 2 exists.
    for p in 0..n.saturating_sub(2) {
        let (cmp, br) = (code[p], code[p + 1]);
        let jump_if = match br.op {
            Op::JmpIf => true,
            Op::JmpIfNot => false,
            _ => continue,
        };
        if br.a == cmp.a && is_target_ok(br.bc()) && !back(p + 1, br.bc()) {
            if let Some(x) = br_op(cmp.op, jump_if) {
                out[p].op = x;
            }
        }
    }

    // Constant load + compare-and-branch (slots p..p+2, p + 3 exists) or + arithmetic
    // (slots p, p + 1, p + 2 exists).
    for p in 0..n.saturating_sub(2) {
        let load = code[p];
        let k = match load.op {
            Op::LoadK if (load.bc() as usize) < kvals.len() => kvals[load.bc() as usize],
            Op::LoadI => load.bc() as i32 as i64 as u64,
            _ => continue,
        };
        let fused = match brk_op(out[p + 1].op) {
            Some(x) if p + 3 < n => Some(x),
            _ => k_op(load.a, k, code[p + 1]),
        };
        let Some(x) = fused else { continue };
        let kidx = if load.op == Op::LoadI {
            kvals.push(k);
            (kvals.len() - 1) as u32
        } else {
            load.bc()
        };
        out[p] = XInstr {
            op: x,
            a: load.a,
            b: kidx as u16,
            c: (kidx >> 16) as u16,
        };
    }

    // Counted-loop back-edges: `addi r, r, k` at p, `jmp H` at p + 1, a loop test at H. The
    // slot keeps `r` and `k` and takes `H` in `b` (free since the source is `r` too), so the
    // jump needs no load of the `jmp` slot: the next pc is known as soon as the slot is.
    // (Not in metered or OSR code: the `jmp` is a check point.)
    for p in 0..if checked { 0 } else { n.saturating_sub(1) } {
        let (add, jmp) = (code[p], code[p + 1]);
        let head = jmp.bc();
        if jmp.op != Op::Jmp || !is_target_ok(head) || head > u16::MAX as u32 || add.a != add.b {
            continue;
        }
        if let Some(x) = loop_op(add.op, out[head as usize].op) {
            out[p] = XInstr {
                op: x,
                a: add.a,
                b: head as u16,
                c: add.c,
            };
        }
    }

    // Paired float64 array loads: slots p and p + 1 (both still plain), p + 2 exists; with a
    // plain float64 add/sub/mul in p + 2 (and p + 3 existing) that slot runs too.
    for p in 0..n.saturating_sub(2) {
        if code[p].op == Op::ArrGetF64
            && code[p + 1].op == Op::ArrGetF64
            && out[p].op == XOp::ArrGetF64
            && out[p + 1].op == XOp::ArrGetF64
        {
            let third = if p + 3 < n { out[p + 2].op } else { XOp::Nop };
            out[p].op = match third {
                XOp::AddF64 => XOp::AGet2AddF64,
                XOp::SubF64 => XOp::AGet2SubF64,
                XOp::MulF64 => XOp::AGet2MulF64,
                _ => XOp::AGet2F64,
            };
        }
    }

    // Multiply-add: slots p (mul), p + 1 (add/sub reading the product), p + 2 exists.
    for p in 0..n.saturating_sub(2) {
        if !matches!(out[p].op, XOp::MulF64 | XOp::MulF32) {
            continue;
        }
        if let Some(x) = mul_add_op(code[p].op, code[p].a, code[p + 1]) {
            out[p].op = x;
        }
    }
    out.into_boxed_slice()
}

#[cfg(test)]
mod tests {
    use super::*;
    use cajeta_bytecode::{FnKind, Type};

    fn f(code: Vec<Instr>) -> Function {
        Function {
            name: "T.f".into(),
            kind: FnKind::Host,
            params: 0,
            ret: None,
            regs: vec![Type::I64; 4],
            code,
            file: 0,
            lines: vec![],
            regions: vec![],
            locals: vec![],
            shared: vec![],
            inlined: vec![],
        }
    }

    #[test]
    fn opcode_numbers_are_shared() {
        for (k, op) in Op::ALL.iter().enumerate() {
            assert_eq!(XOp::from_op(*op) as u16, k as u16);
        }
        assert_eq!(std::mem::size_of::<XInstr>(), std::mem::size_of::<Instr>());
    }

    #[test]
    fn fuses_compare_and_branch_and_counted_loops() {
        let code = vec![
            Instr::with_bc(Op::LoadI, 1, 0),
            Instr::new(Op::LtI64, 3, 1, 0), // 1: head
            Instr::with_bc(Op::JmpIfNot, 3, 5),
            Instr::new(Op::AddImmI64, 1, 1, 1),
            Instr::with_bc(Op::Jmp, 0, 1),
            Instr::new(Op::RetVoid, 0, 0, 0),
        ];
        let low = lower(&f(code.clone()), &mut vec![], false, false);
        assert_eq!(low.len(), code.len());
        assert_eq!(low[0].op, XOp::BrKNotLtS, "loadi then the fused test");
        assert_eq!(low[1].op, XOp::BrNotLtS);
        assert_eq!(
            low[2].op,
            XOp::JmpIfNot,
            "the branch stays for direct jumps"
        );
        assert_eq!(
            low[3],
            XInstr {
                op: XOp::LoopI64Lt,
                a: 1,
                b: 1,
                c: 1
            }
        );
        assert_eq!(low[4].op, XOp::Jmp);
    }

    #[test]
    fn constant_loads_move_to_kvals() {
        let code = vec![
            Instr::with_bc(Op::LoadI, 2, (-7i32) as u32),
            Instr::new(Op::RemI64, 1, 0, 2),
            Instr::with_bc(Op::LoadI, 2, 50),
            Instr::new(Op::LtI64, 3, 1, 2),
            Instr::with_bc(Op::JmpIf, 3, 0),
            Instr::new(Op::RetVoid, 0, 0, 0),
        ];
        let mut kvals = vec![99];
        let low = lower(&f(code), &mut kvals, false, false);
        assert_eq!(
            low[0],
            XInstr {
                op: XOp::KRemI64,
                a: 2,
                b: 1,
                c: 0
            }
        );
        assert_eq!(
            low[2],
            XInstr {
                op: XOp::BrKLtS,
                a: 2,
                b: 2,
                c: 0
            }
        );
        assert_eq!(low[3].op, XOp::BrLtS);
        assert_eq!(kvals, vec![99, (-7i64) as u64, 50]);
    }

    #[test]
    fn does_not_fuse_mismatched_sequences() {
        let code = vec![
            Instr::new(Op::LtI64, 3, 1, 0),
            Instr::with_bc(Op::JmpIfNot, 2, 4), // branches on another register
            Instr::new(Op::AddImmI64, 1, 2, 1),
            Instr::with_bc(Op::Jmp, 0, 0), // to a head that is not a loop test
            Instr::new(Op::MulF64, 1, 2, 3),
            Instr::new(Op::AddF64, 1, 2, 3), // does not read the product
            Instr::new(Op::RetVoid, 0, 0, 0),
        ];
        let low = lower(&f(code), &mut vec![], false, false);
        assert_eq!(low[0].op, XOp::LtI64);
        assert_eq!(low[2].op, XOp::AddImmI64);
        assert_eq!(low[4].op, XOp::MulF64);
    }
    #[test]
    fn metered_and_osr_code_keep_every_check_point() {
        let code = vec![
            Instr::with_bc(Op::LoadI, 1, 0),
            Instr::new(Op::LtI64, 3, 1, 0), // 1: head
            Instr::with_bc(Op::JmpIfNot, 3, 7),
            Instr::new(Op::Call, 2, 2, 0),
            Instr::new(Op::LtI64, 4, 1, 0),
            Instr::with_bc(Op::JmpIf, 4, 1), // a backward conditional branch
            Instr::new(Op::AddImmI64, 1, 1, 1),
            Instr::with_bc(Op::Jmp, 0, 1),
            Instr::new(Op::RetVoid, 0, 0, 0),
        ];
        let plain = lower(&f(code.clone()), &mut vec![], false, false);
        assert_eq!(plain[4].op, XOp::BrLtS, "unmetered: the back branch fuses");
        assert_eq!(plain[6].op, XOp::LoopI64Lt);
        let low = lower(&f(code.clone()), &mut vec![], true, false);
        assert_eq!(low[1].op, XOp::BrNotLtS, "forward branches still fuse");
        assert_eq!(low[3].op, XOp::CallMetered);
        assert_eq!(low[4].op, XOp::LtI64, "no Br* over a backward branch");
        assert_eq!(low[5].op, XOp::JmpIfBack);
        assert_eq!(low[6].op, XOp::AddImmI64, "no Loop* superinstruction");
        assert_eq!(low[7].op, XOp::JmpBack);
        let osr = lower(&f(code), &mut vec![], false, true);
        assert_eq!(osr[1].op, XOp::BrNotLtS, "forward branches still fuse");
        assert_eq!(osr[3].op, XOp::Call, "calls are no switch points");
        assert_eq!(osr[4].op, XOp::LtI64, "no Br* over a backward branch");
        assert_eq!(osr[5].op, XOp::OsrJmpIf);
        assert_eq!(osr[6].op, XOp::AddImmI64, "no Loop* superinstruction");
        assert_eq!(osr[7].op, XOp::OsrJmp);
    }
}
