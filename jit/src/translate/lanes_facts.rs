//! What SIMD lockstep code knows statically about a register's lanes: the same value in every
//! lane (*uniform*), or consecutive values `v₀, v₀ + 1, …` (*affine*, modulo the register's
//! width), or nothing. The facts hold in the *aligned* SIMD function only, which runs the
//! launches whose workgroup x extent is a multiple of the group width: there a group's items
//! have consecutive x coordinates and share y and z.
//!
//! Facts are per instruction: a forward dataflow over the kernel's control flow from the
//! fresh item frame (every register the same in every lane: parameters and zeros), computed
//! optimistically to a fixpoint (a loop counter `i = globalIdX; i = i + stride` is affine). They
//! hold because lockstep code runs its lanes through the same instructions: a branch the lanes
//! disagree on leaves lockstep, and the group never comes back to it — which is why resumable
//! group functions, whose lanes come back from their files after running apart, use no facts.
//!
//! Used by `simd.rs`, which holds a register whose fact is uniform or affine as one scalar
//! (lane 0's value): an access whose index is uniform loads one element, one whose index is
//! affine one vector per four lanes after checking the first and last lanes; a branch on a
//! uniform condition is one branch; arithmetic on uniform and affine values is scalar.
//! One fact is not exact: a 32-bit affine value widened to 64 bits stays consecutive only if
//! no lane wrapped, which the widening checks at run time.

use cajeta_bytecode::{Function, Instr, Op, Operand};

/// What is known about a register's lanes.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) enum Fact {
    /// Not computed yet (the optimistic start; never a final fact).
    Unknown,
    /// The same value in every lane.
    Uniform,
    /// Lane `j` holds lane 0's value plus `j`, modulo the lane width, when the group's x
    /// coordinates are consecutive.
    Affine,
    /// Nothing.
    Varying,
}

impl Fact {
    fn meet(self, other: Fact) -> Fact {
        match (self, other) {
            (Fact::Unknown, x) | (x, Fact::Unknown) => x,
            (x, y) if x == y => x,
            _ => Fact::Varying,
        }
    }
}

/// The facts of every register before each instruction of `f`. A resumable group function
/// (`resumable`) stops at each barrier and continues after it with every lane's registers
/// from its file, where nothing is known of them.
pub(crate) fn facts(f: &Function, resumable: bool) -> Vec<Vec<Fact>> {
    let regs = f.regs.len();
    // The fresh frame: launch parameters and zeros.
    let (entry, continuation) = (vec![Fact::Uniform; regs], vec![Fact::Varying; regs]);
    let transfer = |_: usize, i: Instr, state: &mut Vec<Fact>| {
        if let Some((dst, fact)) = written(i, state) {
            if let Some(slot) = state.get_mut(usize::from(dst)) {
                *slot = fact;
            }
        }
    };
    let meet = |state: &mut Vec<Fact>, other: &Vec<Fact>| {
        let mut changed = false;
        for (x, &y) in state.iter_mut().zip(other) {
            let met = x.meet(y);
            changed |= met != *x;
            *x = met;
        }
        changed
    };
    forward(f, resumable, (entry, continuation), transfer, meet)
        .into_iter()
        .map(|s| s.unwrap_or_else(|| vec![Fact::Unknown; regs]))
        .collect()
}

/// Which registers hold a *counted* comparison before each instruction of `f`, on every path
/// to it: the booleans of a comparison `counted(pc, i)` accepts (one between an affine and a
/// uniform value, which holds for a run of consecutive lanes: see `simd.rs`), or a copy of
/// them. A branch on such a register needs no vector test. (In a resumable group function,
/// `resumable`, a continuation after a barrier knows of no counted register.)
pub(crate) fn counted(
    f: &Function,
    resumable: bool,
    counted: impl Fn(usize, Instr) -> bool,
) -> Vec<Vec<bool>> {
    let regs = f.regs.len();
    let transfer = |pc: usize, i: Instr, state: &mut Vec<bool>| {
        if let Operand::Dst(_) = i.op.operands()[0] {
            let holds = match i.op {
                Op::Mov => state.get(usize::from(i.b)).copied().unwrap_or(false),
                _ => counted(pc, i),
            };
            if let Some(slot) = state.get_mut(usize::from(i.a)) {
                *slot = holds;
            }
        }
    };
    // A must-analysis: held only where held on every path.
    let meet = |state: &mut Vec<bool>, other: &Vec<bool>| {
        let mut changed = false;
        for (x, &y) in state.iter_mut().zip(other) {
            changed |= *x && !y;
            *x &= y;
        }
        changed
    };
    let none = vec![false; regs];
    forward(f, resumable, (none.clone(), none), transfer, meet)
        .into_iter()
        .map(|s| s.unwrap_or_else(|| vec![false; regs]))
        .collect()
}

/// A forward dataflow over `f`'s control flow to a fixed point: the state before each
/// instruction (`None` where none reaches it), `entry` before the first, `continuation`
/// after each barrier of a resumable group function (which stops there, and continues from
/// its files), `transfer` through each instruction, `meet` where paths join (true if it
/// changed the state).
fn forward<S: Clone>(
    f: &Function,
    resumable: bool,
    (entry, continuation): (S, S),
    transfer: impl Fn(usize, Instr, &mut S),
    meet: impl Fn(&mut S, &S) -> bool,
) -> Vec<Option<S>> {
    let barrier = |i: &Instr| resumable && i.op == Op::Barrier;
    let mut before: Vec<Option<S>> = vec![None; f.code.len()];
    if let Some(first) = before.first_mut() {
        *first = Some(entry);
    }
    for (pc, _) in f.code.iter().enumerate().filter(|(_, i)| barrier(i)) {
        if let Some(after) = before.get_mut(pc + 1) {
            *after = Some(continuation.clone());
        }
    }
    let mut changed = true;
    while changed {
        changed = false;
        for (pc, &i) in f.code.iter().enumerate() {
            let Some(mut after) = before[pc].clone() else {
                continue;
            };
            transfer(pc, i, &mut after);
            let mut next = Vec::with_capacity(2);
            if i.op.is_branch() {
                next.push(i.bc() as usize);
            }
            if !(i.op.is_terminator() || i.op == Op::Jmp || barrier(&i)) {
                next.push(pc + 1);
            }
            for to in next {
                match before.get_mut(to) {
                    Some(Some(state)) => changed |= meet(state, &after),
                    Some(slot @ None) => {
                        *slot = Some(after.clone());
                        changed = true;
                    }
                    None => {}
                }
            }
        }
    }
    before
}

/// The register `i` writes and the fact of the value, from the facts of its operands.
pub(crate) fn written(i: Instr, facts: &[Fact]) -> Option<(u16, Fact)> {
    let ops = i.op.operands();
    if !matches!(ops[0], Operand::Dst(_)) {
        return None;
    }
    let of = |r: u16| facts.get(usize::from(r)).copied().unwrap_or(Fact::Varying);
    let sources: Vec<Fact> = [(ops[1], i.b), (ops[2], i.c)]
        .iter()
        .filter(|(o, _)| matches!(o, Operand::Src(_)))
        .map(|&(_, r)| of(r))
        .collect();
    if sources.contains(&Fact::Unknown) {
        return Some((i.a, Fact::Unknown));
    }
    let all_uniform = sources.iter().all(|&x| x == Fact::Uniform);
    let fact = match i.op {
        Op::Mov => of(i.b),
        Op::LoadI | Op::LoadK | Op::SharedRef | Op::BufLength => Fact::Uniform,
        // Item x and global x ids are consecutive in an aligned group; y and z are shared.
        Op::Geom => match i.b {
            0 | 9 => Fact::Affine,
            16 => Fact::Varying,
            _ => Fact::Uniform,
        },
        // Re-canonicalisation keeps consecutive values consecutive modulo the width; users
        // check the first and last lanes.
        Op::WrapI32 | Op::WrapU32 | Op::WrapI64 | Op::WrapU64 | Op::AddImmI32 | Op::AddImmI64 => {
            of(i.b)
        }
        op if is_add(op) || is_sub(op) => match (of(i.b), of(i.c)) {
            (Fact::Uniform, Fact::Uniform) => Fact::Uniform,
            (Fact::Affine, Fact::Uniform) => Fact::Affine,
            (Fact::Uniform, Fact::Affine) if is_add(op) => Fact::Affine,
            _ => Fact::Varying,
        },
        // Everything else computes lane by lane: uniform operands give a uniform result (a
        // load from a uniform index included).
        _ if all_uniform => Fact::Uniform,
        _ => Fact::Varying,
    };
    Some((i.a, fact))
}

fn is_add(op: Op) -> bool {
    matches!(op, Op::AddI32 | Op::AddU32 | Op::AddI64 | Op::AddU64)
}

fn is_sub(op: Op) -> bool {
    matches!(op, Op::SubI32 | Op::SubU32 | Op::SubI64 | Op::SubU64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cajeta_bytecode::{FnKind, Scalar, Type};

    fn kernel(regs: Vec<Type>, params: u16, code: Vec<Instr>) -> Function {
        crate::test_function::function(FnKind::Kernel, (params, None), regs, code)
    }

    #[test]
    fn a_grid_stride_counter_is_affine_and_a_reused_temporary_follows_its_value() {
        let i64t = Type::Scalar(Scalar::I64);
        let u32t = Type::Scalar(Scalar::U32);
        // r0 = n (param); r1 temporary; r2 = i; r3 = stride; r4 = i < n; r5 = i * stride
        let f = kernel(
            vec![i64t, u32t, i64t, i64t, Type::Scalar(Scalar::Bool), i64t],
            1,
            vec![
                Instr::new(Op::Geom, 1, 9, 0),
                Instr::new(Op::WrapI64, 2, 1, 0),
                Instr::new(Op::Geom, 1, 12, 0),
                Instr::new(Op::WrapI64, 3, 1, 0),
                Instr::new(Op::LtI64, 4, 2, 0),
                Instr::with_bc(Op::JmpIfNot, 4, 9),
                Instr::new(Op::MulI64, 5, 2, 3),
                Instr::new(Op::AddI64, 2, 2, 3),
                Instr::with_bc(Op::Jmp, 0, 4),
                Instr::new(Op::RetVoid, 0, 0, 0),
            ],
        );
        let facts = facts(&f, false);
        let at = |pc: usize, r: usize| facts[pc][r];
        assert_eq!(at(1, 1), Fact::Affine, "global x");
        assert_eq!(
            at(3, 1),
            Fact::Uniform,
            "the temporary now holds the grid size"
        );
        assert_eq!(at(4, 3), Fact::Uniform);
        assert_eq!(at(4, 2), Fact::Affine, "i around the loop");
        assert_eq!(at(5, 4), Fact::Varying, "an affine and a uniform compared");
        assert_eq!(at(7, 5), Fact::Varying, "an affine times a uniform");
        assert_eq!(at(4, 0), Fact::Uniform, "a parameter");
    }

    #[test]
    fn a_comparison_stays_counted_through_copies_and_merges_where_every_path_counts_it() {
        let u32t = Type::Scalar(Scalar::U32);
        let bool_t = Type::Scalar(Scalar::Bool);
        // `if (1 <= i && i < n)`, then r4 overwritten on one path: r0 = n (param), r1 = i.
        let f = kernel(
            vec![u32t, u32t, u32t, bool_t, bool_t, bool_t],
            1,
            vec![
                Instr::new(Op::Geom, 1, 9, 0),
                Instr::new(Op::LoadI, 2, 1, 0),
                Instr::new(Op::LeU32, 3, 2, 1),
                Instr::new(Op::Mov, 4, 3, 0),
                Instr::with_bc(Op::JmpIfNot, 4, 7),
                Instr::new(Op::LtU32, 5, 1, 0),
                Instr::new(Op::Mov, 4, 5, 0),
                Instr::with_bc(Op::JmpIfNot, 4, 9),
                Instr::new(Op::AndBool, 4, 3, 5),
                Instr::new(Op::RetVoid, 0, 0, 0),
            ],
        );
        let counted = counted(&f, false, |_, i| matches!(i.op, Op::LeU32 | Op::LtU32));
        assert!(counted[4][4], "a copy of a counted comparison");
        assert!(counted[7][4], "counted on both paths into the merge");
        assert!(!counted[9][4], "overwritten on one path");
        assert!(
            counted[9][3] && !counted[0][3],
            "before and after its comparison"
        );
    }
}
