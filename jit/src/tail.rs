//! Tail and accumulator recursion as a loop.
//!
//! A function whose last act on some path is to call itself — `return f(args)`,
//! `f(args); return;`, or `return x ⊕ f(args)` with `⊕` an integer `add`, `mul`, `and`, `or`
//! or `xor` at the result's width (also `f(args) + c` and `f(args) - x`, as `+ (−x)`) — pays a
//! frame per level for nothing: the caller only hands the callee's result on, maybe combined
//! with a value it computed before the call or a constant. The translator turns such a call
//! into a jump back to the function's start with the arguments as the new parameters, and,
//! for `⊕`, folds `x` into an accumulator that every later `ret v` combines with its result
//! (`acc ⊕ v`, exact because `⊕` is associative and commutative modulo 2^64, hence at every
//! width). Fib's `return fib(n - 1) + fib(n - 2)` becomes a loop around the first call, as
//! LLVM compiles it.
//!
//! What a real call would have done differently is settled by the translator:
//!
//! * depth: each pass through the loop is one more level. The depth travels in a variable,
//!   so calls made from a later pass see the depth they would have seen, and the jump first
//!   checks the limit exactly as the callee's prologue does (`E-STACK` at the call's pc);
//! * errors: an error on the *k*-th pass must show, under the failing frame's entry, *k*
//!   entries of this function at the call's pc (the frames that would have been waiting
//!   there). The error exit pushes them (`trace_push_repeated`);
//! * order: `x` is folded in before the jump instead of after the callee returns; the
//!   operation cannot fail and reads only `x`, which the call could not change (or a
//!   constant loaded just after the call, which the jump loads instead).
//!
//! Kept simple enough that nothing else differs: one such call per function (the trace needs
//! only the count of elided frames, not their sites), every register a scalar (no String
//! window, no object to drop or own across the call), no fuel (a call is a unit of it), and
//! the call's successors reached only from it.

use cajeta_bytecode::{Function, Op, Scalar, Type};

/// How an instruction combines the call's result with `x`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    /// `x ⊕ r` or `r ⊕ x`.
    Commutative,
    /// `r + imm` (`addi`).
    Immediate,
    /// `r - x`.
    Subtract,
}

/// The recursive call that becomes a jump (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TailCall {
    /// The `call`'s pc.
    pub pc: u32,
    /// For accumulator recursion, the operation, its width and its other operand.
    pub fold: Option<Fold>,
}

/// `x ⊕ f(…)`: the operation combining a value computed before the call with its result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Fold {
    pub op: FoldOp,
    pub scalar: Scalar,
    pub x: FoldOperand,
    /// `f(…) - x`, folded as `+ (−x)` (the same modulo 2^64).
    pub negate: bool,
}

/// Where `x` of `x ⊕ f(…)` comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FoldOperand {
    /// A register below the call's window (the call cannot have written it).
    Reg(u16),
    /// The register that the `loadi`/`loadk` at `pc`, just after the call, loads with a
    /// constant (`return 2 * f(n - 1)`): the jump loads it instead.
    Loaded { pc: u32, reg: u16 },
    /// The immediate of an `addi` (`return f(n - 1) + 1`).
    Imm(i64),
}

/// An operation that is associative and commutative modulo 2^64.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FoldOp {
    Add,
    Mul,
    And,
    Or,
    Xor,
}

impl FoldOp {
    /// The operation of a mnemonic, its width suffix, and whether it is `addi` (an
    /// immediate operand) or `sub` (the call's result must be the minuend).
    fn of(mnemonic: &str) -> Option<(FoldOp, &str, Form)> {
        let (base, suffix) = mnemonic.split_once('.')?;
        let op = match base {
            "add" | "addi" | "sub" => FoldOp::Add,
            "mul" => FoldOp::Mul,
            "and" => FoldOp::And,
            "or" => FoldOp::Or,
            "xor" => FoldOp::Xor,
            _ => return None,
        };
        let form = match base {
            "addi" => Form::Immediate,
            "sub" => Form::Subtract,
            _ => Form::Commutative,
        };
        Some((op, suffix, form))
    }

    /// The accumulator's start: the operation's identity on canonical cells.
    pub fn identity(self) -> i64 {
        match self {
            FoldOp::Add | FoldOp::Or | FoldOp::Xor => 0,
            FoldOp::Mul => 1,
            // All ones: `acc & v` is `v` for any cell `v`.
            FoldOp::And => -1,
        }
    }
}

/// The call of `f` (function `index`) to itself that can become a jump, if there is exactly
/// one. `leader(pc)` says whether a branch may reach `pc`.
pub(crate) fn tail_call(
    f: &Function,
    index: u32,
    leader: impl Fn(usize) -> bool,
) -> Option<TailCall> {
    if !f.regs.iter().all(|t| matches!(t, Type::Scalar(_))) {
        return None;
    }
    let ret = match f.ret {
        Some(Type::Scalar(s)) => Some(s),
        _ => None,
    };
    let mut found = None;
    for (pc, i) in f.code.iter().enumerate() {
        if i.op != Op::Call || u32::from(i.c) != index {
            continue;
        }
        let next = |k: usize| f.code.get(pc + k).filter(|_| !leader(pc + k));
        // A constant operand is loaded after the call (`return 1 + f(n - 1)`).
        let load = next(1).filter(|l| matches!(l.op, Op::LoadI | Op::LoadK) && l.a != i.a);
        let skip = usize::from(load.is_some());
        let fold = match (next(1), next(1 + skip), next(2 + skip)) {
            (Some(r), ..) if r.op == Op::RetVoid && f.ret.is_none() => None,
            (Some(r), ..) if r.op == Op::Ret && r.a == i.a => None,
            (_, Some(c), Some(r)) if r.op == Op::Ret && r.a == c.a => {
                let Some((op, suffix, form)) = FoldOp::of(c.op.mnemonic()) else {
                    continue;
                };
                let Some(scalar) = ret.filter(|s| s.is_int() && s.suffix() == suffix) else {
                    continue;
                };
                let x = match (form, load) {
                    (Form::Immediate, None) if c.b == i.a => {
                        FoldOperand::Imm(i64::from(c.c as i16))
                    }
                    (Form::Immediate, _) => continue,
                    // Otherwise `x` is the other operand: the constant just loaded, or a
                    // register from below the call's window.
                    (_, _) => {
                        let x = match (c.b == i.a, c.c == i.a) {
                            (true, false) => c.c,
                            (false, true) if form == Form::Commutative => c.b,
                            _ => continue,
                        };
                        match load {
                            Some(l) if l.a == x => FoldOperand::Loaded {
                                pc: pc as u32 + 1,
                                reg: x,
                            },
                            None if x < i.b => FoldOperand::Reg(x),
                            _ => continue,
                        }
                    }
                };
                let negate = form == Form::Subtract;
                Some(Fold {
                    op,
                    scalar,
                    x,
                    negate,
                })
            }
            _ => continue,
        };
        if found.is_some() {
            return None;
        }
        found = Some(TailCall {
            pc: pc as u32,
            fold,
        });
    }
    found
}

#[cfg(test)]
mod tests {
    use cajeta_bytecode::{FnKind, Instr, Op, Scalar, Type};

    use super::{tail_call, Fold, FoldOp, FoldOperand, TailCall};
    use crate::test_function::function;

    /// fib's shape: `if (n < 2) return n; return fib(n - 1) + fib(n - 2);` (function 0).
    fn fib(code_tail: &[Instr]) -> Vec<Instr> {
        let mut code = vec![
            Instr::with_bc(Op::LoadI, 1, 2),
            Instr::new(Op::LtI64, 2, 0, 1),
            Instr::with_bc(Op::JmpIfNot, 2, 4),
            Instr::new(Op::Ret, 0, 0, 0),
            Instr::new(Op::AddImmI64, 3, 0, 0xffff),
            Instr::new(Op::Call, 4, 3, 0),
            Instr::new(Op::AddImmI64, 5, 0, 0xfffe),
            Instr::new(Op::Call, 6, 5, 0),
        ];
        code.extend_from_slice(code_tail);
        code
    }

    fn found(regs: &[Type], ret: Type, code: Vec<Instr>) -> Option<TailCall> {
        let f = function(FnKind::Host, (1, Some(ret)), regs.to_vec(), code);
        let leader = crate::translate::leaders(&f);
        tail_call(&f, 0, |pc| leader.get(pc).copied().unwrap_or(true))
    }

    const REGS: [Type; 8] = [
        Type::I64,
        Type::I64,
        Type::BOOL,
        Type::I64,
        Type::I64,
        Type::I64,
        Type::I64,
        Type::I64,
    ];

    #[test]
    fn the_last_call_folded_with_an_earlier_value_is_found() {
        let code = fib(&[
            Instr::new(Op::AddI64, 7, 4, 6),
            Instr::new(Op::Ret, 7, 0, 0),
        ]);
        let fold = Fold {
            op: FoldOp::Add,
            scalar: Scalar::I64,
            x: FoldOperand::Reg(4),
            negate: false,
        };
        let want = TailCall {
            pc: 7,
            fold: Some(fold),
        };
        assert_eq!(found(&REGS, Type::I64, code), Some(want));
        // Either operand order.
        let code = fib(&[
            Instr::new(Op::XorI64, 7, 6, 4),
            Instr::new(Op::Ret, 7, 0, 0),
        ]);
        let fold = found(&REGS, Type::I64, code).and_then(|t| t.fold);
        assert_eq!(
            fold.map(|f| (f.op, f.x)),
            Some((FoldOp::Xor, FoldOperand::Reg(4)))
        );
        // A constant loaded after the call.
        let code = fib(&[
            Instr::with_bc(Op::LoadI, 7, 1),
            Instr::new(Op::MulI64, 4, 7, 6),
            Instr::new(Op::Ret, 4, 0, 0),
        ]);
        let fold = found(&REGS, Type::I64, code).and_then(|t| t.fold);
        let loaded = FoldOperand::Loaded { pc: 8, reg: 7 };
        assert_eq!(fold.map(|f| (f.op, f.x)), Some((FoldOp::Mul, loaded)));
        // An immediate.
        let code = fib(&[
            Instr::new(Op::AddImmI64, 4, 6, 0xfffd),
            Instr::new(Op::Ret, 4, 0, 0),
        ]);
        let fold = found(&REGS, Type::I64, code).and_then(|t| t.fold);
        assert_eq!(fold.map(|f| f.x), Some(FoldOperand::Imm(-3)));
        // A subtraction from the result.
        let code = fib(&[
            Instr::new(Op::SubI64, 7, 6, 4),
            Instr::new(Op::Ret, 7, 0, 0),
        ]);
        let fold = found(&REGS, Type::I64, code).and_then(|t| t.fold);
        let sub = (FoldOp::Add, FoldOperand::Reg(4), true);
        assert_eq!(fold.map(|f| (f.op, f.x, f.negate)), Some(sub));
        // Not any register written after the call.
        let code = fib(&[
            Instr::new(Op::Mov, 7, 1, 0),
            Instr::new(Op::MulI64, 4, 7, 6),
            Instr::new(Op::Ret, 4, 0, 0),
        ]);
        assert!(found(&REGS, Type::I64, code).is_none());
        // A plain tail call.
        let code = fib(&[Instr::new(Op::Ret, 6, 0, 0)]);
        let call = found(&REGS, Type::I64, code);
        assert_eq!(call.map(|t| (t.pc, t.fold)), Some((7, None)));
    }

    #[test]
    fn anything_else_after_the_call_keeps_it_a_call() {
        let none = |tail: &[Instr]| found(&REGS, Type::I64, fib(tail)).is_none();
        // Another register returned.
        assert!(none(&[Instr::new(Op::Ret, 4, 0, 0)]));
        // Not associative and commutative, or not at the result's width; and `x - f(…)`.
        for op in [Op::SubI64, Op::DivI64, Op::AddI32, Op::MinI64] {
            assert!(none(&[
                Instr::new(op, 7, 4, 6),
                Instr::new(Op::Ret, 7, 0, 0)
            ]));
        }
        // The other operand from the call's window.
        assert!(none(&[
            Instr::new(Op::AddI64, 7, 5, 6),
            Instr::new(Op::Ret, 7, 0, 0)
        ]));
        // The result folded with itself.
        assert!(none(&[
            Instr::new(Op::AddI64, 7, 6, 6),
            Instr::new(Op::Ret, 7, 0, 0)
        ]));
        // A branch into the fold: it is reached without the call.
        let mut code = fib(&[
            Instr::new(Op::AddI64, 7, 4, 6),
            Instr::new(Op::Ret, 7, 0, 0),
        ]);
        code[2] = Instr::with_bc(Op::JmpIfNot, 2, 8);
        assert!(found(&REGS, Type::I64, code).is_none());
    }

    #[test]
    fn floats_strings_and_two_sites_keep_every_call() {
        // A float sum is not associative.
        let mut regs = REGS.to_vec();
        for r in [4, 6, 7] {
            regs[r] = Type::F64;
        }
        let code = fib(&[
            Instr::new(Op::AddF64, 7, 4, 6),
            Instr::new(Op::Ret, 7, 0, 0),
        ]);
        assert!(found(&regs, Type::F64, code).is_none());
        // A String register (its window would be reused).
        let mut regs = REGS.to_vec();
        regs.push(Type::Str);
        let code = fib(&[Instr::new(Op::Ret, 6, 0, 0)]);
        assert!(found(&regs, Type::I64, code).is_none());
        // Two tail calls: the trace could not tell which site each level waited at.
        let code = vec![
            Instr::new(Op::LtI64, 2, 0, 1),
            Instr::with_bc(Op::JmpIfNot, 2, 4),
            Instr::new(Op::Call, 4, 3, 0),
            Instr::new(Op::Ret, 4, 0, 0),
            Instr::new(Op::Call, 6, 5, 0),
            Instr::new(Op::Ret, 6, 0, 0),
        ];
        assert!(found(&REGS, Type::I64, code).is_none());
    }
}
