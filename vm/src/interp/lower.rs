//! Lowering of verified bytecode to the interpreter's in-memory form (DESIGN §4).
//!
//! The lowered code of a function has **exactly one slot per bytecode instruction**, so pcs,
//! jump targets and line tables carry over unchanged. Each slot is an [`XInstr`]: the original
//! operands with an [`XOp`] opcode. `XOp` is generated from the bytecode's opcode table (same
//! names, same numbers) and extends it with *superinstructions* that fuse a common sequence
//! into one dispatch:
//!
//! * **compare-and-branch** — `lt/le/eq/ne` writing `r[a]`, followed by `jmpif`/`jmpifnot`
//!   on `r[a]`: the first slot becomes `Br*`, which writes `r[a]` as before, then either jumps
//!   to the branch's target or continues *after* the branch. The branch slot stays in place for
//!   code that jumps straight to it.
//! * **counted loop back-edge** — `addi r, r, k; jmp H` where `H` holds a fused
//!   compare-and-branch `r < n` / `r <= n` that leaves the loop when false: the `addi` slot
//!   becomes `Loop*`, which adds, compares, writes the condition register and jumps to `H + 2`
//!   or to the exit, as the four original instructions would (Lua's `FORLOOP`). Its `b` operand
//!   is replaced by `H` (the source register equals `a`, so nothing is lost).
//!
//! * **multiply-add** — `mul.f64 t, x, y` followed by `add.f64`/`sub.f64` that uses `t`:
//!   one dispatch computing both results with their own roundings (never an FMA), writing both
//!   registers; the product is kept in a machine register instead of a store/reload.
//!
//! Every fusion preserves the effect of the sequence exactly (all registers written, same
//! control flow), so a program cannot tell lowered code from the original.
//!
//! Invariant **LOWER** (relied on by the interpreter's fused arms, and checked here rather
//! than derived from the verifier): a `Br*` slot at `p` has its conditional branch at `p + 1`,
//! that branch's target is `< len` and `p + 2 < len`; a `Loop*` slot's `b` is a loop head `H`
//! with `H + 2 < len`, a `Br*` compare at `H` and a `jmpifnot` at `H + 1` whose target is
//! `< len`; a `Mul*` slot at `p` has the `add`/`sub` it fuses at `p + 1` and `p + 2 < len`.

use cajeta_bytecode::{Function, Instr, Op};

macro_rules! define_xops {
    ($($name:ident $mn:literal [$a:expr, $b:expr, $c:expr] $sem:literal;)*) => {
        /// The interpreter's opcodes: every bytecode [`Op`] (same name and number), then the
        /// superinstructions introduced by lowering.
        #[derive(Copy, Clone, PartialEq, Eq, Debug)]
        #[repr(u16)]
        pub(crate) enum XOp {
            $($name,)*
            /// `r[a] := r[b] < r[c]` (signed, any width); jump if true.
            BrLtS,
            /// As `BrLtS`, jump if false.
            BrNotLtS,
            /// `r[a] := r[b] <= r[c]` (signed); jump if true.
            BrLeS,
            /// As `BrLeS`, jump if false.
            BrNotLeS,
            /// `r[a] := r[b] < r[c]` (unsigned); jump if true.
            BrLtU,
            /// As `BrLtU`, jump if false.
            BrNotLtU,
            /// `r[a] := r[b] <= r[c]` (unsigned); jump if true.
            BrLeU,
            /// As `BrLeU`, jump if false.
            BrNotLeU,
            /// `r[a] := r[b] == r[c]` (canonical cells); jump if true.
            BrEq,
            /// As `BrEq`, jump if false.
            BrNotEq,
            /// `r[a] := r[b] != r[c]` (canonical cells); jump if true.
            BrNe,
            /// As `BrNe`, jump if false.
            BrNotNe,
            /// `r[a] := r[b] < r[c]` (float64); jump if true.
            BrLtF64,
            /// As `BrLtF64`, jump if false.
            BrNotLtF64,
            /// `r[a] := r[b] <= r[c]` (float64); jump if true.
            BrLeF64,
            /// As `BrLeF64`, jump if false.
            BrNotLeF64,
            /// `r[a] := r[b] < r[c]` (float32); jump if true.
            BrLtF32,
            /// As `BrLtF32`, jump if false.
            BrNotLtF32,
            /// `r[a] := r[b] <= r[c]` (float32); jump if true.
            BrLeF32,
            /// As `BrLeF32`, jump if false.
            BrNotLeF32,
            /// `r[a] += c as i16` (int64), then the loop test `r[a] < n` at `b`.
            LoopLtI64,
            /// `r[a] += c as i16` (int64), then the loop test `r[a] <= n` at `b`.
            LoopLeI64,
            /// `r[a] += c as i16` (int32, wrapping), then the loop test `r[a] < n` at `b`.
            LoopLtI32,
            /// `r[a] += c as i16` (int32, wrapping), then the loop test `r[a] <= n` at `b`.
            LoopLeI32,
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

/// The comparison a `Br*` superinstruction performs.
#[derive(Copy, Clone, PartialEq, Eq)]
enum Cmp {
    LtS,
    LeS,
    LtU,
    LeU,
    Eq,
    Ne,
    LtF64,
    LeF64,
    LtF32,
    LeF32,
}

/// The comparison of a bytecode comparison opcode, if it can be fused.
fn cmp_of(op: Op) -> Option<Cmp> {
    use Op::*;
    Some(match op {
        LtI8 | LtI16 | LtI32 | LtI64 => Cmp::LtS,
        LeI8 | LeI16 | LeI32 | LeI64 => Cmp::LeS,
        LtU8 | LtU16 | LtU32 | LtU64 => Cmp::LtU,
        LeU8 | LeU16 | LeU32 | LeU64 => Cmp::LeU,
        EqBool | EqChar | EqI8 | EqU8 | EqI16 | EqU16 | EqI32 | EqU32 | EqI64 | EqU64 | EqRef => {
            Cmp::Eq
        }
        NeBool | NeChar | NeI8 | NeU8 | NeI16 | NeU16 | NeI32 | NeU32 | NeI64 | NeU64 => Cmp::Ne,
        LtF64 => Cmp::LtF64,
        LeF64 => Cmp::LeF64,
        LtF32 => Cmp::LtF32,
        LeF32 => Cmp::LeF32,
        _ => return None,
    })
}

/// The `Br*` opcode for comparison `cmp`, jumping when the result equals `jump_if`.
fn br_op(cmp: Cmp, jump_if: bool) -> XOp {
    use XOp::*;
    match (cmp, jump_if) {
        (Cmp::LtS, true) => BrLtS,
        (Cmp::LtS, false) => BrNotLtS,
        (Cmp::LeS, true) => BrLeS,
        (Cmp::LeS, false) => BrNotLeS,
        (Cmp::LtU, true) => BrLtU,
        (Cmp::LtU, false) => BrNotLtU,
        (Cmp::LeU, true) => BrLeU,
        (Cmp::LeU, false) => BrNotLeU,
        (Cmp::Eq, true) => BrEq,
        (Cmp::Eq, false) => BrNotEq,
        (Cmp::Ne, true) => BrNe,
        (Cmp::Ne, false) => BrNotNe,
        (Cmp::LtF64, true) => BrLtF64,
        (Cmp::LtF64, false) => BrNotLtF64,
        (Cmp::LeF64, true) => BrLeF64,
        (Cmp::LeF64, false) => BrNotLeF64,
        (Cmp::LtF32, true) => BrLtF32,
        (Cmp::LtF32, false) => BrNotLtF32,
        (Cmp::LeF32, true) => BrLeF32,
        (Cmp::LeF32, false) => BrNotLeF32,
    }
}

/// Lowers a verified function's code (see the module documentation).
pub(crate) fn lower(f: &Function) -> Box<[XInstr]> {
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

    // Compare-and-branch.
    for p in 0..n.saturating_sub(1) {
        let (cmp, br) = (code[p], code[p + 1]);
        let jump_if = match br.op {
            Op::JmpIf => true,
            Op::JmpIfNot => false,
            _ => continue,
        };
        if let Some(kind) = cmp_of(cmp.op) {
            // p + 2 < n: the fallthrough after the branch stays inside the code (also implied by
            // V-TERM, checked here so the superinstruction's safety is local to this pass).
            if br.a == cmp.a && (br.bc() as usize) < n && p + 2 < n {
                out[p].op = br_op(kind, jump_if);
            }
        }
    }

    // Counted loop back-edges: `addi r, r, k; jmp H` with `H: lt/le r, n` (signed, of the
    // addi's width) `; jmpifnot` (exit when false).
    for p in 0..n.saturating_sub(1) {
        let (add, jmp) = (code[p], code[p + 1]);
        if jmp.op != Op::Jmp || add.a != add.b {
            continue;
        }
        let head = jmp.bc() as usize;
        if head + 2 >= n || head > u16::MAX as usize {
            continue;
        }
        let (test, exit) = (code[head], code[head + 1]);
        if test.b != add.a || exit.op != Op::JmpIfNot || exit.a != test.a || exit.bc() as usize >= n
        {
            continue;
        }
        // The head must itself be a fused compare-and-branch (checked by construction above).
        if !matches!(out[head].op, XOp::BrNotLtS | XOp::BrNotLeS) {
            continue;
        }
        let fused = match (add.op, test.op) {
            (Op::AddImmI64, Op::LtI64) => XOp::LoopLtI64,
            (Op::AddImmI64, Op::LeI64) => XOp::LoopLeI64,
            (Op::AddImmI32, Op::LtI32) => XOp::LoopLtI32,
            (Op::AddImmI32, Op::LeI32) => XOp::LoopLeI32,
            _ => continue,
        };
        out[p] = XInstr {
            op: fused,
            a: add.a,
            b: head as u16,
            c: add.c,
        };
    }
    // Multiply-add: `mul t, x, y` at p, `add/sub` reading t at p + 1.
    for p in 0..n.saturating_sub(1) {
        let (mul, next) = (code[p], code[p + 1]);
        if !matches!(out[p].op, XOp::MulF64 | XOp::MulF32) || p + 2 >= n {
            continue;
        }
        let f64_ops = mul.op == Op::MulF64;
        let t = mul.a;
        let fused = match (next.op, f64_ops) {
            (Op::AddF64, true) | (Op::AddF32, false) if next.c == t => {
                if f64_ops {
                    XOp::MulAddBF64
                } else {
                    XOp::MulAddBF32
                }
            }
            (Op::AddF64, true) | (Op::AddF32, false) if next.b == t => {
                if f64_ops {
                    XOp::MulAddCF64
                } else {
                    XOp::MulAddCF32
                }
            }
            (Op::SubF64, true) | (Op::SubF32, false) if next.c == t => {
                if f64_ops {
                    XOp::MulSubF64
                } else {
                    XOp::MulSubF32
                }
            }
            (Op::SubF64, true) | (Op::SubF32, false) if next.b == t => {
                if f64_ops {
                    XOp::MulRsubF64
                } else {
                    XOp::MulRsubF32
                }
            }
            _ => continue,
        };
        out[p].op = fused;
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
        let low = lower(&f(code.clone()));
        assert_eq!(low.len(), code.len());
        assert_eq!(low[1].op, XOp::BrNotLtS);
        assert_eq!(
            low[2].op,
            XOp::JmpIfNot,
            "the branch stays for direct jumps"
        );
        assert_eq!(
            low[3],
            XInstr {
                op: XOp::LoopLtI64,
                a: 1,
                b: 1,
                c: 1
            }
        );
        assert_eq!(low[4].op, XOp::Jmp);
    }

    #[test]
    fn does_not_fuse_mismatched_sequences() {
        let code = vec![
            Instr::new(Op::LtI64, 3, 1, 0),
            Instr::with_bc(Op::JmpIfNot, 2, 4), // branches on another register
            Instr::new(Op::AddImmI64, 1, 2, 1), // a != b
            Instr::with_bc(Op::Jmp, 0, 0),
            Instr::new(Op::RetVoid, 0, 0, 0),
        ];
        let low = lower(&f(code));
        assert_eq!(low[0].op, XOp::LtI64);
        assert_eq!(low[2].op, XOp::AddImmI64);
    }
}
