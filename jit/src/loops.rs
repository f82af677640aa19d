//! Loop-invariant object lookups: which array and instance registers a loop may look up once,
//! before it starts, instead of at every access.
//!
//! A loop here is the pc range `[header, end]` of a backward branch at `end` to `header` (the
//! furthest such branch for a header). Its lookups may be hoisted into a *preheader* — a block
//! that every entry into the loop from outside passes through — when
//!
//! * nothing in the loop can release an object or run unknown code: no `call` and no `drop`
//!   (every other instruction either works on registers or reaches the heap through a hook
//!   that may allocate but never frees an array or an instance, so element and field storage
//!   found before the loop stays where it is), and
//! * the loop is entered only through its header: no branch from outside the range targets a
//!   pc inside it other than the header (and the header is not pc 0, so that a fallthrough or
//!   a branch from outside reaches it).
//!
//! The candidates of such a loop are the registers of a scalar-array or instance type that an
//! element or field instruction in the loop uses as its object and that no instruction in the
//! loop writes — or that only a `getstatic` of a static the loop leaves alone writes, where
//! no read in the loop can see an older value ([`HoistedLoop::statics`]: a function that
//! borrows a static array into a local, inlined into a loop by [`crate::inline`]). A `drop`
//! whose owns-flag is never set (a borrowed local's) frees nothing. The preheader looks each one up *speculatively* and keeps its data address
//! and length in variables, with a length of 0 when the lookup fails (null, stale, another
//! kind). An access in the loop then only checks its index against that length (instances:
//! that the length is not 0); a failed check falls to the access's cold path, where the hook
//! raises the error at the right instruction — so a loop that never runs an access never
//! faults, as in the interpreter.

use cajeta_bytecode::{Elem, Function, Instr, Op, Operand, Scalar, Type};

use crate::context::ObjectView;

/// One loop whose object lookups are hoisted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct HoistedLoop {
    /// The loop header's pc.
    pub header: u32,
    /// The last pc of the loop (its furthest backward branch).
    pub end: u32,
    /// The hoisted registers and the view kind each is looked up as (none when the loop
    /// calls or drops).
    pub regs: Vec<(u16, u32)>,
    /// Its strength-reduced multiplications (see [`Reduced`]).
    pub reduced: Vec<Reduced>,
    /// Hoisted registers that the loop writes, each only by `getstatic` of one static the
    /// loop does not write, and that are dead at its header: every read in the loop follows
    /// that `getstatic`, so the register holds the static's value wherever it is read, and
    /// the preheader looks up the static's object. (register, static index)
    pub statics: Vec<(u16, u16)>,
}

/// A multiplication `mul r, x, j` (or `r, j, x`) in a loop where `x` is loop-invariant and
/// `j` an induction variable: written in the loop only by one `addi j, j, step`. The product
/// is then kept in a variable `p`, set to `x * j` in the preheader and advanced by
/// `x * step` right after the `addi`, so that `p ≡ x * j` (modulo 2^64) at every point of
/// the loop; the `mul` becomes `r = p` re-canonicalised to its width, which is exact because
/// a narrow `addi` changes `j` by `step` modulo its width, which `p` sees modulo 2^64.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Reduced {
    /// The `mul`'s pc.
    pub mul: u32,
    /// The invariant factor.
    pub x: u16,
    /// The induction variable.
    pub j: u16,
    /// The `addi`'s pc and immediate.
    pub inc: u32,
    pub step: i64,
}

impl HoistedLoop {
    /// Whether `pc` lies inside the loop.
    pub fn contains(&self, pc: u32) -> bool {
        self.header <= pc && pc <= self.end
    }
}

/// The object register an element or field instruction accesses, with its view kind, when
/// it has an inline path (arrays of scalars, instances of classes with a view kind).
pub(crate) fn object_operand(f: &Function, op: Op, a: u16, b: u16) -> Option<(u16, u32)> {
    let m = op.mnemonic();
    let reg = if m.starts_with("aget.") || op == Op::GetField {
        b
    } else if m.starts_with("aset.") || op == Op::SetField {
        a
    } else {
        return None;
    };
    match f.regs.get(usize::from(reg))? {
        Type::Array(Elem::Scalar(s)) if !m.ends_with(".ref") => {
            Some((reg, ObjectView::array_kind(*s)))
        }
        Type::Object(k) if op == Op::GetField || op == Op::SetField => {
            ObjectView::instance_kind(*k).map(|kind| (reg, kind))
        }
        _ => None,
    }
}

/// The (array, index) registers of an element access (`aget.*` or `aset.*`).
pub(crate) fn element_operands(i: &Instr) -> Option<(u16, u16)> {
    let m = i.op.mnemonic();
    if m.starts_with("aget.") {
        Some((i.b, i.c))
    } else if m.starts_with("aset.") {
        Some((i.a, i.b))
    } else {
        None
    }
}

/// Whether instruction `i` may write register `r`: a `Dst` operand writes its register, and
/// so may a `Special` first operand (`getfield` and `getstatic` write `r[a]`; counting the
/// reads among them only makes callers more careful).
pub(crate) fn writes(i: &Instr, r: u16) -> bool {
    let ops = i.op.operands();
    matches!(ops[0], Operand::Special) && i.a == r
        || [(ops[0], i.a), (ops[1], i.b), (ops[2], i.c)]
            .iter()
            .any(|&(o, x)| matches!(o, Operand::Dst(_)) && x == r)
}

/// The loops of `f` whose lookups can be hoisted (see the module documentation) or that
/// have strength-reduced multiplications ([`Reduced`]), innermost last among loops sharing
/// code; loops with neither are left out.
///
/// `free_at[pc]` tells whether the instruction at `pc` may release an object
/// ([`free_points`]); a loop with no such instruction keeps its views.
pub(crate) fn hoisted_loops(f: &Function, free_at: &[bool]) -> Vec<HoistedLoop> {
    let code = &f.code;
    // Liveness only matters to registers loaded from statics in a loop: computed the first
    // time one is a candidate.
    let live = std::cell::OnceCell::new();
    let dead_at = |pc: u32, r: u16| {
        !live.get_or_init(|| crate::liveness::live_in(f))[pc as usize].contains(r)
    };
    let view_regs = |header, end| view_regs(f, header, end, free_at, &dead_at);
    // header -> furthest backward branch.
    let mut ranges: Vec<(u32, u32)> = Vec::new();
    for (pc, i) in code.iter().enumerate() {
        let pc = pc as u32;
        if i.op.is_branch() && i.bc() <= pc {
            match ranges.iter_mut().find(|(h, _)| *h == i.bc()) {
                Some((_, end)) => *end = (*end).max(pc),
                None => ranges.push((i.bc(), pc)),
            }
        }
    }
    let mut loops = Vec::new();
    for (header, end) in ranges {
        if header == 0 || !single_entry(code, header, end) {
            continue;
        }
        let (regs, statics) = view_regs(header, end);
        let reduced = reductions(header, &code[header as usize..=end as usize]);
        if !regs.is_empty() || !reduced.is_empty() {
            loops.push(HoistedLoop {
                header,
                end,
                regs,
                reduced,
                statics,
            });
        }
    }
    // A loop and the next one after it (siblings, in nesting terms) share their lookups when
    // nothing from the first one's header to the second one's end can free an object, write
    // one of their registers or enter past that header: the first one's range is extended
    // over the second, whose preheader then finds every view looked up already.
    loops.sort_by_key(|l| l.header);
    let mut k = 0;
    while k < loops.len() {
        let first = &loops[k];
        let next = loops[k + 1..].iter().find(|l| l.header > first.end);
        let merged = next.and_then(|next| {
            let (header, end) = (first.header, next.end);
            let (regs, statics) = view_regs(header, end);
            let keeps = first
                .regs
                .iter()
                .chain(&next.regs)
                .all(|r| regs.contains(r));
            let both = !first.regs.is_empty() && !next.regs.is_empty();
            (both && keeps && single_entry(code, header, end)).then_some((end, regs, statics))
        });
        match merged {
            Some((end, regs, statics)) => {
                loops[k].end = end;
                loops[k].regs = regs;
                loops[k].statics = statics;
            }
            None => k += 1,
        }
    }
    loops
}

/// Whether the code range `[header, end]` is entered only at `header`: no branch from
/// outside it targets a pc inside it past the header.
fn single_entry(code: &[Instr], header: u32, end: u32) -> bool {
    !code.iter().enumerate().any(|(pc, i)| {
        let pc = pc as u32;
        let outside = pc < header || pc > end;
        outside && i.op.is_branch() && i.bc() > header && i.bc() <= end
    })
}

/// The object registers whose views the range `[header, end]` may look up once: those an
/// element or field instruction in it uses and nothing in it writes, or only a `getstatic`
/// (then also listed with the static; `dead_at(pc, r)`: `r` is dead at `pc`) — none when
/// something in it may free an object (`free_at`, see [`free_points`]).
fn view_regs(
    f: &Function,
    header: u32,
    end: u32,
    free_at: &[bool],
    dead_at: &dyn Fn(u32, u16) -> bool,
) -> ViewRegs {
    let range = header as usize..=end as usize;
    let body = &f.code[range.clone()];
    let mut regs: Vec<(u16, u32)> = Vec::new();
    let mut statics: Vec<(u16, u16)> = Vec::new();
    if free_at.get(range).is_none_or(|r| r.contains(&true)) {
        return (regs, statics);
    }
    let written = |r: u16| body.iter().any(|i| writes(i, r));
    // The one static that alone writes `r` in the range, if the range never writes it.
    let static_of = |r: u16| -> Option<u16> {
        let mut k = None;
        for i in body.iter().filter(|i| writes(i, r)) {
            if i.op != Op::GetStatic || k.is_some_and(|k| k != i.b) {
                return None;
            }
            k = Some(i.b);
        }
        let k = k?;
        // (Liveness does not see the argument ranges of calls and the like.)
        let ranges = body.iter().any(|i| {
            let ops = i.op.operands();
            i.op == Op::Call
                || matches!(ops[1], Operand::Special)
                || matches!(ops[2], Operand::Special)
        });
        let stored = ranges || body.iter().any(|i| i.op == Op::SetStatic && i.b == k);
        (!stored && dead_at(header, r)).then_some(k)
    };
    for i in body {
        if let Some((r, kind)) = object_operand(f, i.op, i.a, i.b) {
            if regs.iter().any(|&(x, _)| x == r) {
                continue;
            }
            if !written(r) {
                regs.push((r, kind));
            } else if let Some(k) = static_of(r) {
                regs.push((r, kind));
                statics.push((r, k));
            }
        }
    }
    (regs, statics)
}

/// The registers a range may look up once, with their view kinds, and those of them that
/// are loaded from a static, with the static (see [`HoistedLoop::statics`]).
type ViewRegs = (Vec<(u16, u32)>, Vec<(u16, u16)>);

/// Per pc of `f`, whether its instruction may release an array or an instance: a `drop` of a
/// possibly owned object, or a `call` of a function `g` for which `frees(g)` says so (see
/// [`crate::translate`]'s `pure_function`). Every other instruction works on registers or
/// reaches the heap through a hook that may allocate but never frees, so element and field
/// storage found before it stays where it is.
pub(crate) fn free_points(f: &Function, frees: &dyn Fn(u16) -> bool) -> Vec<bool> {
    // Whether a register may hold a set owns-flag: a parameter, or written otherwise than
    // by `loadi r, 0` (a borrowed local's flag is only ever cleared).
    let mut owns: Vec<bool> = (0..f.regs.len())
        .map(|r| r < usize::from(f.params))
        .collect();
    for i in f
        .code
        .iter()
        .filter(|i| !(i.op == Op::LoadI && i.bc() == 0))
    {
        for r in [i.a, i.b, i.c] {
            if writes(i, r) {
                if let Some(x) = owns.get_mut(usize::from(r)) {
                    *x = true;
                }
            }
        }
    }
    f.code
        .iter()
        .map(|i| match i.op {
            Op::Drop => owns.get(usize::from(i.b)).copied().unwrap_or(true),
            Op::Call => frees(i.c),
            _ => false,
        })
        .collect()
}

/// The strength-reducible multiplications of the loop `body` starting at pc `header`.
fn reductions(header: u32, body: &[Instr]) -> Vec<Reduced> {
    // Per register: how many instructions of the body write it, and the last of them (one
    // pass, so that a long body with many multiplications stays linear).
    let mut writers: std::collections::HashMap<u16, (u32, usize)> = Default::default();
    for (k, i) in body.iter().enumerate() {
        let mut regs = [i.a, i.b, i.c];
        regs.sort_unstable();
        for (n, &r) in regs.iter().enumerate() {
            if (n == 0 || regs[n - 1] != r) && writes(i, r) {
                let e = writers.entry(r).or_insert((0, k));
                *e = (e.0 + 1, k);
            }
        }
    }
    let written = |r: u16| writers.contains_key(&r);
    let mut out = Vec::new();
    for (k, i) in body.iter().enumerate() {
        let m = i.op.mnemonic();
        let int_mul = m
            .strip_prefix("mul.")
            .is_some_and(|s| Scalar::ALL.iter().any(|x| !x.is_float() && x.suffix() == s));
        if !int_mul {
            continue;
        }
        for (x, j) in [(i.b, i.c), (i.c, i.b)] {
            if x == j || written(x) {
                continue;
            }
            let Some(&(1, at)) = writers.get(&j) else {
                continue;
            };
            let w = &body[at];
            if w.op.mnemonic().starts_with("addi.") && w.a == j && w.b == j {
                out.push(Reduced {
                    mul: header + k as u32,
                    x,
                    j,
                    inc: header + at as u32,
                    step: i64::from(w.c as i16),
                });
                break;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use cajeta_bytecode::FnKind;

    /// The hoisted loops of `f` when every call frees an object (`frees`) or none does.
    fn hoist(f: &Function, frees: bool) -> Vec<HoistedLoop> {
        hoisted_loops(f, &free_points(f, &|_| frees))
    }

    /// `for (i = 0; i < n; i++) x = a[i];` with `extra` inserted in the loop body and `entry`
    /// as the instruction before the loop.
    fn sum_loop(extra: Option<Instr>, entry: Instr) -> Function {
        let regs = vec![
            Type::Array(Elem::Scalar(Scalar::F64)), // r0 a
            Type::I64,                              // r1 i
            Type::I64,                              // r2 n
            Type::F64,                              // r3 x
            Type::BOOL,                             // r4 i < n
            Type::I64,                              // r5 1
        ];
        let mut code = vec![
            entry,                              // 0
            Instr::with_bc(Op::LoadI, 5, 1),    // 1
            Instr::new(Op::LtI64, 4, 1, 2),     // 2 header
            Instr::with_bc(Op::JmpIfNot, 4, 7), // 3
            Instr::new(Op::ArrGetF64, 3, 0, 1), // 4
            Instr::new(Op::AddI64, 1, 1, 5),    // 5
            Instr::with_bc(Op::Jmp, 0, 2),      // 6
            Instr::new(Op::RetVoid, 0, 0, 0),   // 7
        ];
        if let Some(x) = extra {
            code.insert(5, x);
            // Shift the targets past the insertion.
            for i in &mut code {
                if i.op.is_branch() && i.bc() >= 5 {
                    i.set_bc(i.bc() + 1);
                }
            }
        }
        crate::test_function::function(FnKind::Host, (3, None), regs, code)
    }

    const START: Instr = Instr::new(Op::LoadI, 1, 0, 0);

    #[test]
    fn an_invariant_array_is_hoisted() {
        let loops = hoist(&sum_loop(None, START), true);
        let kind = ObjectView::array_kind(Scalar::F64);
        assert_eq!(
            loops,
            vec![HoistedLoop {
                header: 2,
                end: 6,
                regs: vec![(0, kind)],
                reduced: Vec::new(),
                statics: Vec::new(),
            }]
        );
    }

    /// `for (j = 0; j < n; j++) r = x * j;` with `extra` before the increment.
    fn product_loop(extra: Option<Instr>) -> Function {
        let mut f = sum_loop(None, START);
        f.regs = vec![Type::I64; 6];
        f.regs[4] = Type::BOOL;
        // r0 x, r1 j, r2 n, r3 r; pc 4: r3 = x * j (or j * x); pc 5: j += 1.
        f.code[4] = Instr::new(Op::MulI64, 3, 0, 1);
        f.code[5] = Instr::new(Op::AddImmI64, 1, 1, 1);
        if let Some(x) = extra {
            f.code.insert(5, x);
            for i in &mut f.code {
                if i.op.is_branch() && i.bc() >= 5 {
                    i.set_bc(i.bc() + 1);
                }
            }
        }
        f
    }

    #[test]
    fn a_product_of_an_invariant_and_an_induction_variable_is_reduced() {
        let loops = hoist(&product_loop(None), true);
        let want = Reduced {
            mul: 4,
            x: 0,
            j: 1,
            inc: 5,
            step: 1,
        };
        assert_eq!(loops.len(), 1);
        assert_eq!(loops[0].reduced, vec![want.clone()]);
        // Either operand order; a call does not matter (registers are the frame's own).
        let mut swapped = product_loop(Some(Instr::new(Op::Call, 3, 6, 0)));
        swapped.code[4] = Instr::new(Op::MulI64, 3, 1, 0);
        let loops = hoist(&swapped, true);
        assert_eq!(loops[0].reduced, vec![Reduced { inc: 6, ..want }]);
        // A second write of j, or any write of x, keeps the multiplication.
        for extra in [
            Instr::new(Op::AddI64, 1, 1, 5),
            Instr::new(Op::LoadI, 0, 0, 0),
        ] {
            assert!(hoist(&product_loop(Some(extra)), true).is_empty());
        }
    }

    #[test]
    fn consecutive_loops_share_their_lookups() {
        // Two copies of the loop one after the other: the first range covers both.
        let mut f = sum_loop(None, START);
        let second: Vec<Instr> = f.code[1..7]
            .iter()
            .map(|&i| {
                let mut i = i;
                if i.op.is_branch() {
                    i.set_bc(i.bc() + 6);
                }
                i
            })
            .collect();
        f.code.splice(7..7, second);
        let kind = ObjectView::array_kind(Scalar::F64);
        let loops = hoist(&f, true);
        assert_eq!(loops.len(), 2);
        assert_eq!((loops[0].header, loops[0].end), (2, 12));
        assert_eq!(loops[0].regs, vec![(0, kind)]);
        assert_eq!((loops[1].header, loops[1].end), (8, 12));
        // A write of the array between them: each keeps its own.
        f.code[7] = Instr::new(Op::LoadNull, 0, 0, 0);
        let loops = hoist(&f, true);
        assert_eq!((loops[0].header, loops[0].end), (2, 6));
    }

    #[test]
    fn an_array_borrowed_from_a_static_in_the_loop_is_looked_up_from_the_static() {
        // pc 4 becomes `getstatic r0, static 3` before the access at pc 5.
        let get = Instr::new(Op::GetStatic, 0, 3, 0);
        let f = sum_loop(Some(get), START);
        let mut f = f;
        f.code.swap(4, 5);
        let kind = ObjectView::array_kind(Scalar::F64);
        let loops = hoist(&f, true);
        assert_eq!(loops.len(), 1);
        assert_eq!(loops[0].regs, vec![(0, kind)]);
        assert_eq!(loops[0].statics, vec![(0, 3)]);
        // Read before the `getstatic` (its older value may be seen): not hoisted.
        let g = sum_loop(Some(get), START);
        assert!(hoist(&g, true).is_empty());
        // A loop that writes the static: not hoisted.
        let mut h = f.clone();
        h.code[6] = Instr::new(Op::SetStatic, 3, 3, 0);
        assert!(hoist(&h, true).is_empty());
    }

    #[test]
    fn a_drop_of_a_borrowed_local_frees_nothing() {
        // `drop r3, r5` where r5 (the owns-flag) is only ever `loadi r5, 0`.
        let drop = Instr::new(Op::Drop, 0, 5, 0);
        let mut f = sum_loop(Some(drop), START);
        f.code[1] = Instr::with_bc(Op::LoadI, 5, 0);
        f.regs[5] = Type::BOOL;
        assert_eq!(hoist(&f, true).len(), 1);
        // A flag that may be set: the drop may free.
        f.code[1] = Instr::with_bc(Op::LoadI, 5, 1);
        assert!(hoist(&f, true).is_empty());
    }

    #[test]
    fn calls_drops_writes_and_side_entries_prevent_hoisting() {
        let call = Instr::new(Op::Call, 3, 6, 0);
        assert!(hoist(&sum_loop(Some(call), START), true).is_empty());
        // A callee that cannot free anything does not count.
        assert_eq!(hoist(&sum_loop(Some(call), START), false).len(), 1);
        let drop = Instr::new(Op::Drop, 0, 4, 0);
        assert!(hoist(&sum_loop(Some(drop), START), true).is_empty());
        // The array register is written in the loop.
        let write = Instr::new(Op::LoadNull, 0, 0, 0);
        assert!(hoist(&sum_loop(Some(write), START), true).is_empty());
        // A jump from before the loop into its body, past the header.
        let side = Instr::with_bc(Op::Jmp, 0, 4);
        assert!(hoist(&sum_loop(None, side), true).is_empty());
    }
}
