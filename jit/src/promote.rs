//! Scalar promotion: array elements at loop-invariant indices held in variables across an
//! innermost loop instead of being loaded and stored at every access (nbody's `vx[i]`, …,
//! updated in the `j` loop).
//!
//! A promoted loop is a hoisting loop ([`crate::loops`]) with no loop inside it whose every
//! instruction is a branch, a register computation ([`crate::translate`]'s prefix
//! operations: no heap, no strings, no hooks but those that raise an error) or an element
//! access through one of its hoisted views. Its *candidates* are (array, index) register
//! pairs it accesses, neither written in the loop — or the index written only by one pure,
//! total instruction from registers the loop does not write, and dead at the header (the
//! compiler's `wrap.i64 t, i` before `a[t]`: the same value wherever it is read; the
//! preheader computes it once more). The translation (`translate/promote.rs`) keeps each
//! candidate's element in a variable from the loop's preheader on, and writes the stored
//! ones back on every way out (its exits and its error exits), when the preheader found
//!
//! * every candidate's index inside its array (so the preload and write-back are valid and
//!   no access of a candidate can fail), and
//! * the [`Promotion::distinct`] arrays distinct objects (distinct arrays never share
//!   storage: an element of one cannot be reached through another).
//!
//! Accesses of a candidate's array at another index register may still reach its element
//! (`pvx[j]` when `j == i`): those are the [`Promotion::conflicts`]. The unchecked copy of a
//! versioned block tests them apart (`j != i`) with its bounds — or the preheader does,
//! once, when `j` is the counter of a counted loop that starts above `i` ([`Induction`],
//! which also settles the bounds of its accesses: [`Promotion::counted`]); elsewhere such an
//! access goes to memory and also reads or updates the variable when the indices meet. So
//! every read of the element sees the last value written, as in the interpreter.

use cajeta_bytecode::{Elem, Function, Instr, Scalar, Type};

use crate::loops::{self, HoistedLoop};

/// At most this many elements are promoted in one loop: each holds a machine register
/// through the loop.
const MAX_CANDIDATES: usize = 8;

/// One promoted loop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Promotion {
    /// The loop's index among the hoisting loops.
    pub hoisted: usize,
    pub header: u32,
    pub end: u32,
    pub candidates: Vec<Candidate>,
    /// Accesses `arr[k]` (array register, index register as in [`Promotion::index_of`]) of
    /// a candidate's array at another index, where one side stores: with the candidate's
    /// index in `candidates`.
    pub conflicts: Vec<Conflict>,
    /// Array registers (of one element type) that must hold distinct objects.
    pub distinct: Vec<(u16, u16)>,
    /// Index registers computed in the loop by the same instruction as a candidate's index
    /// (`wrap.i64` at each access of `a[i]`): (register, the candidate's index register).
    pub same_index: Vec<(u16, u16)>,
    /// The loop's counter, when it has the shape of a counted `for`.
    pub induction: Option<Induction>,
    /// Accesses (array, index register) whose index is the counter as it was tested at the
    /// header (so inside `[start, bound)`): with the start at least 0 and the bound at most
    /// the arrays' lengths, found by the preheader, they need no check.
    pub counted: Vec<(u16, u16)>,
}

/// A loop counter `j`: the header leaves the loop unless `j < bound` (signed `lt.i32` or
/// `lt.i64`), and the loop's one write of `j` is `addi j, j, 1`. Inside the loop `j` only
/// grows from its value at the entry and never wraps (it is below the bound, at most the
/// type's maximum, before each increment).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Induction {
    pub j: u16,
    pub bound: Bound,
    /// The pc of the header's exit test (its branch).
    pub test: u32,
    /// The pc of the increment.
    pub inc: u32,
}

/// The bound of an [`Induction`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Bound {
    /// A register the loop does not write.
    Reg(u16),
    /// A constant the header loads.
    Const(i64),
}

impl Promotion {
    /// Whether `pc` lies inside the loop.
    pub fn contains(&self, pc: u32) -> bool {
        self.header <= pc && pc <= self.end
    }

    /// The index register standing for `idx` ([`Promotion::same_index`]).
    pub fn index_of(&self, idx: u16) -> u16 {
        self.same_index
            .iter()
            .find(|&&(r, _)| r == idx)
            .map_or(idx, |&(_, x)| x)
    }

    /// The candidate for an access of `arr` at index register `idx`, if it is one.
    pub fn candidate(&self, arr: u16, idx: u16) -> Option<usize> {
        let idx = self.index_of(idx);
        self.candidates
            .iter()
            .position(|c| c.arr == arr && c.idx == idx)
    }
}

/// An element held in a variable: `arr[idx]`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Candidate {
    pub arr: u16,
    pub idx: u16,
    /// The pc of the instruction in the loop that computes `idx` from invariant registers,
    /// if the loop writes it.
    pub idx_def: Option<u32>,
    pub elem: Scalar,
    /// The loop stores it (it is written back).
    pub stored: bool,
}

/// An access `arr[k]` that may reach candidate `candidate`'s element when `k` equals its
/// index.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Conflict {
    pub arr: u16,
    pub k: u16,
    pub candidate: usize,
    /// `k` is the loop's counter (or it widened): it never meets the candidate's index when
    /// the counter starts above it (nbody's `j = i + 1`), which the preheader tests.
    pub counter: bool,
}

/// One element access in a loop.
#[derive(Copy, Clone)]
struct Access {
    pc: u32,
    arr: u16,
    idx: u16,
    /// `idx` as written (`idx` may stand for it: [`Promotion::same_index`]).
    reg: u16,
    /// The loaded or stored register.
    value: u16,
    store: bool,
    /// The array's element type.
    elem: Scalar,
}

/// The element access `i` at `pc` makes, if it is one of a scalar array.
fn access(f: &Function, i: Instr, pc: u32) -> Option<Access> {
    let (arr, idx) = loops::element_operands(&i)?;
    let m = i.op.mnemonic();
    let store = m.starts_with("aset.");
    let value = if store { i.c } else { i.a };
    let elem = match f.regs.get(usize::from(arr)) {
        Some(Type::Array(Elem::Scalar(s))) if !m.ends_with(".ref") => *s,
        _ => return None,
    };
    Some(Access {
        pc,
        arr,
        idx,
        reg: idx,
        value,
        store,
        elem,
    })
}

/// The loops of `f` (among `loops`, its hoisting loops) whose elements can be promoted;
/// `computes(i)`: `i` only computes registers from registers (it may raise an error, but
/// touches no heap memory and calls nothing that does); `total(i)`: such an instruction
/// that cannot fail.
pub(crate) fn promotions(
    f: &Function,
    loops: &[HoistedLoop],
    computes: impl Fn(Instr) -> bool,
    total: impl Fn(Instr) -> bool,
) -> Vec<Promotion> {
    let live = std::cell::OnceCell::new();
    let live_at =
        |pc: u32, r: u16| live.get_or_init(|| crate::liveness::live_in(f))[pc as usize].contains(r);
    let rules = Rules {
        computes: &computes,
        total: &total,
        live_at: &live_at,
    };
    loops
        .iter()
        .enumerate()
        .filter_map(|(k, l)| promotion(f, k, l, &rules))
        .collect()
}

/// What [`promotion`] asks of the instructions and registers.
struct Rules<'a> {
    computes: &'a dyn Fn(Instr) -> bool,
    total: &'a dyn Fn(Instr) -> bool,
    live_at: &'a dyn Fn(u32, u16) -> bool,
}

fn promotion(
    f: &Function,
    hoisted: usize,
    l: &HoistedLoop,
    rules: &Rules<'_>,
) -> Option<Promotion> {
    let body = f.code.get(l.header as usize..=l.end as usize)?;
    let mut accesses = Vec::new();
    for (k, &i) in body.iter().enumerate() {
        let pc = l.header + k as u32;
        if i.op.is_branch() {
            // Innermost: every backward branch goes to this loop's header.
            if i.bc() <= pc && i.bc() != l.header {
                return None;
            }
            continue;
        }
        if let Some(a) = access(f, i, pc) {
            // (The verifier makes the loaded or stored register of the element's type; the
            // translation relies on it.)
            if f.regs.get(usize::from(a.value)) != Some(&Type::Scalar(a.elem)) {
                return None;
            }
            let hoisted_view = l.regs.iter().any(|&(r, _)| r == a.arr)
                && !l.statics.iter().any(|&(r, _)| r == a.arr);
            if !hoisted_view {
                return None;
            }
            accesses.push(a);
            continue;
        }
        if !(rules.computes)(i) {
            return None;
        }
    }
    let written = |r: u16| body.iter().any(|i| loops::writes(i, r));
    // An index the loop writes: the pc of its one definition, if that computes it from
    // registers the loop leaves alone and nothing in the loop reads an older value.
    let invariant_def = |r: u16| -> Option<u32> {
        let mut defs = body.iter().enumerate().filter(|(_, i)| loops::writes(i, r));
        let (k, &d) = defs.next()?;
        let ops = d.op.operands();
        let inputs = [(ops[0], d.a), (ops[1], d.b), (ops[2], d.c)]
            .into_iter()
            .filter(|(o, _)| matches!(o, cajeta_bytecode::Operand::Src(_)))
            .all(|(_, x)| x != r && !written(x));
        let once = defs.next().is_none();
        (once && inputs && (rules.total)(d) && !(rules.live_at)(l.header, r))
            .then_some(l.header + k as u32)
    };
    // Index registers the loop computes with one instruction from the same registers hold
    // one value: the first one stands for the others.
    let mut same_index: Vec<(u16, u16)> = Vec::new();
    let mut defined: Vec<((cajeta_bytecode::Op, u16, u16), u16)> = Vec::new();
    for a in &accesses {
        if let Some(d) = written(a.idx).then(|| invariant_def(a.idx)).flatten() {
            let i = f.code[d as usize];
            match defined.iter().find(|(k, _)| *k == (i.op, i.b, i.c)) {
                Some(&(_, first)) if first != a.idx => {
                    if !same_index.contains(&(a.idx, first)) {
                        same_index.push((a.idx, first));
                    }
                }
                Some(_) => {}
                None => defined.push(((i.op, i.b, i.c), a.idx)),
            }
        }
    }
    let rep = |r: u16| {
        same_index
            .iter()
            .find(|&&(x, _)| x == r)
            .map_or(r, |&(_, first)| first)
    };
    let accesses: Vec<Access> = accesses
        .into_iter()
        .map(|a| Access {
            idx: rep(a.idx),
            ..a
        })
        .collect();
    // (candidate, accesses of it)
    let mut found: Vec<(Candidate, usize)> = Vec::new();
    let mut refused: Vec<(u16, u16)> = Vec::new();
    for a in &accesses {
        let elem = a.elem;
        let idx_def = if written(a.idx) {
            match invariant_def(a.idx) {
                Some(d) => Some(d),
                None => continue,
            }
        } else {
            None
        };
        if written(a.arr) || refused.contains(&(a.arr, a.idx)) {
            continue;
        }
        // The variable holds what a load yields (half floats keep their bits in integer
        // cells: left alone).
        let typed = !matches!(elem, Scalar::F16 | Scalar::BF16);
        match found
            .iter_mut()
            .find(|(c, _)| c.arr == a.arr && c.idx == a.idx)
        {
            _ if !typed => {
                found.retain(|(c, _)| !(c.arr == a.arr && c.idx == a.idx));
                refused.push((a.arr, a.idx));
            }
            Some((c, n)) => {
                c.stored |= a.store;
                *n += 1;
            }
            None => found.push((
                Candidate {
                    arr: a.arr,
                    idx: a.idx,
                    idx_def,
                    elem,
                    stored: a.store,
                },
                1,
            )),
        }
    }
    // Two invariant indices into one array may be equal: both variables would stand for
    // one element. Left alone when either is stored.
    let shared: Vec<u16> = found
        .iter()
        .filter(|(c, _)| {
            found
                .iter()
                .any(|(d, _)| d.arr == c.arr && d.idx != c.idx && (c.stored || d.stored))
        })
        .map(|(c, _)| c.arr)
        .collect();
    found.retain(|(c, _)| !shared.contains(&c.arr));
    // The stored ones first (they save a load and a store per access), then the busiest.
    found.sort_by_key(|&(c, n)| (std::cmp::Reverse(c.stored), std::cmp::Reverse(n)));
    found.truncate(MAX_CANDIDATES);
    if found.is_empty() {
        return None;
    }
    let candidates: Vec<Candidate> = found.into_iter().map(|(c, _)| c).collect();
    let stored_arr = |arr: u16| accesses.iter().any(|a| a.arr == arr && a.store);
    let counter = induction(f, l);
    let counts =
        |a: &Access| counter.is_some_and(|c| is_counter(body, l.header, &c, (a.reg, a.pc), rules));
    let mut conflicts = Vec::new();
    let mut distinct = Vec::new();
    for (n, c) in candidates.iter().enumerate() {
        for a in &accesses {
            if a.arr == c.arr {
                let conflict = Conflict {
                    arr: a.arr,
                    k: a.idx,
                    candidate: n,
                    counter: counts(a),
                };
                if a.idx != c.idx && (c.stored || a.store) {
                    // (A counter at every access of the pair, or at none.)
                    let same = |d: &Conflict| (d.arr, d.k, d.candidate) == (a.arr, a.idx, n);
                    match conflicts.iter_mut().find(|d| same(d)) {
                        Some(d) => d.counter &= conflict.counter,
                        None => conflicts.push(conflict),
                    }
                }
            } else if f.regs[usize::from(a.arr)] == f.regs[usize::from(c.arr)]
                && (c.stored || stored_arr(a.arr))
            {
                let pair = (c.arr.min(a.arr), c.arr.max(a.arr));
                if !distinct.contains(&pair) {
                    distinct.push(pair);
                }
            }
        }
    }
    // (Every access of the pair: the unchecked copy skips the checks of all of them.)
    let mut counted: Vec<(u16, u16)> = Vec::new();
    if counter.is_some() {
        for a in &accesses {
            let all = accesses
                .iter()
                .filter(|b| (b.arr, b.reg) == (a.arr, a.reg))
                .all(counts);
            if all && !counted.contains(&(a.arr, a.reg)) {
                counted.push((a.arr, a.reg));
            }
        }
    }
    Some(Promotion {
        hoisted,
        header: l.header,
        end: l.end,
        candidates,
        conflicts,
        distinct,
        same_index,
        induction: counter,
        counted,
    })
}

/// The counter of loop `l`, if it has the shape of an [`Induction`].
fn induction(f: &Function, l: &HoistedLoop) -> Option<Induction> {
    let code = &f.code;
    let body = code.get(l.header as usize..=l.end as usize)?;
    let written = |r: u16| body.iter().any(|i| loops::writes(i, r));
    // The header block: up to its first branch, the exit test.
    let k = body.iter().position(|i| i.op.is_branch())?;
    let exit = body[k];
    let outside = |t: u32| t < l.header || t > l.end;
    if exit.op != cajeta_bytecode::Op::JmpIfNot || !outside(exit.bc()) {
        return None;
    }
    // Every pass runs the whole header block: nothing in the loop branches into it.
    let into_header = body
        .iter()
        .any(|i| i.op.is_branch() && i.bc() > l.header && i.bc() <= l.header + k as u32);
    if into_header {
        return None;
    }
    let test = body[..k].iter().rposition(|i| loops::writes(i, exit.a))?;
    let lt = body[test];
    use cajeta_bytecode::Op;
    let (wide, add) = match lt.op {
        Op::LtI32 => (Type::Scalar(Scalar::I32), Op::AddImmI32),
        Op::LtI64 => (Type::I64, Op::AddImmI64),
        _ => return None,
    };
    let (j, n) = (lt.b, lt.c);
    if f.regs.get(usize::from(j)) != Some(&wide) || j == n {
        return None;
    }
    let defs: Vec<usize> = (0..body.len())
        .filter(|&p| loops::writes(&body[p], j))
        .collect();
    let [inc] = defs[..] else {
        return None;
    };
    let step = body[inc];
    if step.op != add || step.b != j || step.c != 1 || inc <= k {
        return None;
    }
    let bound = if !written(n) {
        Bound::Reg(n)
    } else {
        // `loadi n, K` in the header block, the loop's only write of `n`.
        let d = body[..test].iter().rposition(|i| loops::writes(i, n))?;
        let once = body.iter().filter(|i| loops::writes(i, n)).count() == 1;
        if body[d].op != Op::LoadI || !once {
            return None;
        }
        Bound::Const(i64::from(body[d].bc() as i32))
    };
    Some(Induction {
        j,
        bound,
        test: l.header + k as u32,
        inc: l.header + inc as u32,
    })
}

/// Whether index register `r`, read at `pc`, holds the counter's value as tested at the
/// header: `j` itself or its `wrap.i64`, read after the test and before the increment (an
/// innermost loop runs its pcs in increasing order within an iteration).
fn is_counter(
    body: &[Instr],
    header: u32,
    c: &Induction,
    (r, pc): (u16, u32),
    rules: &Rules<'_>,
) -> bool {
    if pc <= c.test || pc >= c.inc {
        return false;
    }
    if r == c.j {
        return true;
    }
    // (Dead at the header, it is written in each iteration before it is read.)
    if (rules.live_at)(header, r) {
        return false;
    }
    let defs: Vec<(usize, &Instr)> = body
        .iter()
        .enumerate()
        .filter(|(_, i)| loops::writes(i, r))
        .collect();
    matches!(defs[..], [(d, i)] if i.op == cajeta_bytecode::Op::WrapI64
        && i.b == c.j
        && header + (d as u32) < pc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cajeta_bytecode::{FnKind, Op};

    const F64S: Type = Type::Array(Elem::Scalar(Scalar::F64));

    fn computes(i: Instr) -> bool {
        matches!(
            i.op,
            Op::LoadI | Op::WrapI64 | Op::AddImmI32 | Op::LtI32 | Op::SubF64 | Op::AddF64
        )
    }

    /// `for (j = i + 1; j < n; j++) { v[i] = v[i] - x[j]; w[j] = w[j] + x[i]; }` (the
    /// indices widened in the loop, as the compiler does): `v[i]` and `x[i]` are promoted.
    fn pair_loop() -> Function {
        let regs = vec![
            F64S,                      // r0 v
            F64S,                      // r1 x
            F64S,                      // r2 w
            Type::Scalar(Scalar::I32), // r3 i
            Type::Scalar(Scalar::I32), // r4 j
            Type::Scalar(Scalar::I32), // r5 n
            Type::Scalar(Scalar::F64), // r6
            Type::Scalar(Scalar::F64), // r7
            Type::Scalar(Scalar::F64), // r8
            Type::Scalar(Scalar::F64), // r9
            Type::BOOL,                // r10
            Type::I64,                 // r11 i as int64
            Type::I64,                 // r12 j as int64
        ];
        let code = vec![
            Instr::new(Op::AddImmI32, 4, 3, 1),   // 0
            Instr::new(Op::LtI32, 10, 4, 5),      // 1 header
            Instr::with_bc(Op::JmpIfNot, 10, 15), // 2
            Instr::new(Op::WrapI64, 11, 3, 0),    // 3
            Instr::new(Op::WrapI64, 12, 4, 0),    // 4
            Instr::new(Op::ArrGetF64, 6, 0, 11),  // 5
            Instr::new(Op::ArrGetF64, 7, 1, 12),  // 6
            Instr::new(Op::SubF64, 6, 6, 7),      // 7
            Instr::new(Op::ArrSetF64, 0, 11, 6),  // 8
            Instr::new(Op::ArrGetF64, 8, 2, 12),  // 9
            Instr::new(Op::ArrGetF64, 9, 1, 11),  // 10
            Instr::new(Op::AddF64, 8, 8, 9),      // 11
            Instr::new(Op::ArrSetF64, 2, 12, 8),  // 12
            Instr::new(Op::AddImmI32, 4, 4, 1),   // 13
            Instr::with_bc(Op::Jmp, 0, 1),        // 14
            Instr::new(Op::RetVoid, 0, 0, 0),     // 15
        ];
        crate::test_function::function(FnKind::Host, (6, None), regs, code)
    }

    fn promoted(f: &Function) -> Vec<Promotion> {
        let free = loops::free_points(f, &|_| true);
        let ls = loops::hoisted_loops(f, &free);
        promotions(f, &ls, |i| computes(i) || i.op == Op::DivI32, computes)
    }

    #[test]
    fn invariant_elements_are_promoted_with_the_arrays_they_must_differ_from() {
        let p = promoted(&pair_loop());
        assert_eq!(p.len(), 1);
        let p = &p[0];
        let cands: Vec<(u16, u16, Option<u32>, bool)> = p
            .candidates
            .iter()
            .map(|c| (c.arr, c.idx, c.idx_def, c.stored))
            .collect();
        // The index is `wrap.i64 r11, r3` at pc 3, recomputed by the preheader.
        assert_eq!(cands, vec![(0, 11, Some(3), true), (1, 11, Some(3), false)]);
        // v[i] (stored) against x and w; x[i] (read) against w (stored).
        assert_eq!(p.distinct, vec![(0, 1), (0, 2), (1, 2)]);
        // x[j] and x[i] are both reads: no conflict.
        assert!(p.conflicts.is_empty());
        // j counts from its start to n by 1; x[j] and w[j] read it before the increment.
        let counter = Induction {
            j: 4,
            bound: Bound::Reg(5),
            test: 2,
            inc: 13,
        };
        assert_eq!(p.induction, Some(counter));
        assert_eq!(p.counted, vec![(1, 12), (2, 12)]);
    }

    #[test]
    fn a_counter_read_after_its_increment_or_stepping_by_two_is_not_counted() {
        // w[j] after the increment: j may have reached n.
        let mut f = pair_loop();
        f.code.swap(12, 13);
        f.code[12] = Instr::new(Op::AddImmI32, 4, 4, 1);
        f.code[13] = Instr::new(Op::ArrSetF64, 2, 12, 8);
        let p = promoted(&f);
        assert_eq!(p[0].counted, vec![(1, 12)], "{p:?}");
        // j += 2 may step over n and wrap.
        let mut f = pair_loop();
        f.code[13] = Instr::new(Op::AddImmI32, 4, 4, 2);
        let p = promoted(&f);
        assert_eq!(p[0].induction, None);
        assert!(p[0].counted.is_empty());
    }

    #[test]
    fn another_index_into_a_stored_candidates_array_is_a_conflict() {
        let mut f = pair_loop();
        // w[j] becomes v[j]: j may be i.
        f.code[9] = Instr::new(Op::ArrGetF64, 8, 0, 12);
        f.code[12] = Instr::new(Op::ArrSetF64, 0, 12, 8);
        let p = promoted(&f);
        let conflicts: Vec<(u16, u16, usize, bool)> = p[0]
            .conflicts
            .iter()
            .map(|c| (c.arr, c.k, c.candidate, c.counter))
            .collect();
        // v[j] reads the counter: apart from v[i] whenever j starts above i.
        assert_eq!(conflicts, vec![(0, 12, 0, true)]);
        assert_eq!(p[0].distinct, vec![(0, 1)]);
    }

    #[test]
    fn loops_that_touch_memory_otherwise_are_left_alone() {
        let mut f = pair_loop();
        f.code[11] = Instr::new(Op::Print, 8, 0, 0);
        assert!(promoted(&f).is_empty());
    }

    #[test]
    fn an_index_the_loop_changes_or_reads_before_writing_is_not_invariant() {
        // The index computed from j, which the loop changes.
        let mut f = pair_loop();
        f.code[3] = Instr::new(Op::WrapI64, 11, 4, 0);
        assert!(promoted(&f).is_empty());
        // The widened index may fail to compute (a division): not recomputed ahead.
        let mut f = pair_loop();
        f.code[3] = Instr::new(Op::DivI32, 11, 3, 5);
        assert!(promoted(&f).is_empty());
    }

    #[test]
    fn two_invariant_indices_into_a_stored_array_are_left_alone() {
        let mut f = pair_loop();
        // x[i] becomes v[n]: n may be i.
        f.regs[5] = Type::I64;
        f.code[10] = Instr::new(Op::ArrGetF64, 9, 0, 5);
        let p = promoted(&f);
        let cands: Vec<u16> = p
            .iter()
            .flat_map(|p| &p.candidates)
            .map(|c| c.arr)
            .collect();
        assert!(!cands.contains(&0), "{p:?}");
    }
}
