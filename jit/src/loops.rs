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
//! loop writes. The preheader looks each one up *speculatively* and keeps its data address
//! and length in variables, with a length of 0 when the lookup fails (null, stale, another
//! kind). An access in the loop then only checks its index against that length (instances:
//! that the length is not 0); a failed check falls to the access's cold path, where the hook
//! raises the error at the right instruction — so a loop that never runs an access never
//! faults, as in the interpreter.

use cajeta_bytecode::{Elem, Function, Instr, Op, Operand, Type};

use crate::context::ObjectView;

/// One loop whose object lookups are hoisted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct HoistedLoop {
    /// The loop header's pc.
    pub header: u32,
    /// The last pc of the loop (its furthest backward branch).
    pub end: u32,
    /// The hoisted registers and the view kind each is looked up as.
    pub regs: Vec<(u16, u32)>,
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

/// The loops of `f` whose lookups can be hoisted (see the module documentation), innermost
/// last among loops sharing code; loops without candidates are left out.
pub(crate) fn hoisted_loops(f: &Function) -> Vec<HoistedLoop> {
    let code = &f.code;
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
        if header == 0 {
            continue;
        }
        let body = &code[header as usize..=end as usize];
        if body.iter().any(|i| matches!(i.op, Op::Call | Op::Drop)) {
            continue;
        }
        let entered_inside = code.iter().enumerate().any(|(pc, i)| {
            let pc = pc as u32;
            let outside = pc < header || pc > end;
            outside && i.op.is_branch() && i.bc() > header && i.bc() <= end
        });
        if entered_inside {
            continue;
        }
        let written = |r: u16| body.iter().any(|i| writes(i, r));
        let mut regs: Vec<(u16, u32)> = Vec::new();
        for i in body {
            if let Some((r, kind)) = object_operand(f, i.op, i.a, i.b) {
                if !regs.iter().any(|&(x, _)| x == r) && !written(r) {
                    regs.push((r, kind));
                }
            }
        }
        if !regs.is_empty() {
            loops.push(HoistedLoop { header, end, regs });
        }
    }
    loops
}

#[cfg(test)]
mod tests {
    use super::*;
    use cajeta_bytecode::{FnKind, Scalar};

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
        Function {
            name: "T.f".into(),
            kind: FnKind::Host,
            params: 3,
            ret: None,
            regs,
            code,
            file: 0,
            lines: Vec::new(),
            regions: Vec::new(),
            locals: Vec::new(),
            shared: Vec::new(),
        }
    }

    const START: Instr = Instr::new(Op::LoadI, 1, 0, 0);

    #[test]
    fn an_invariant_array_is_hoisted() {
        let loops = hoisted_loops(&sum_loop(None, START));
        let kind = ObjectView::array_kind(Scalar::F64);
        assert_eq!(
            loops,
            vec![HoistedLoop {
                header: 2,
                end: 6,
                regs: vec![(0, kind)]
            }]
        );
    }

    #[test]
    fn calls_drops_writes_and_side_entries_prevent_hoisting() {
        let call = Instr::new(Op::Call, 3, 6, 0);
        assert!(hoisted_loops(&sum_loop(Some(call), START)).is_empty());
        let drop = Instr::new(Op::Drop, 0, 4, 0);
        assert!(hoisted_loops(&sum_loop(Some(drop), START)).is_empty());
        // The array register is written in the loop.
        let write = Instr::new(Op::LoadNull, 0, 0, 0);
        assert!(hoisted_loops(&sum_loop(Some(write), START)).is_empty());
        // A jump from before the loop into its body, past the header.
        let side = Instr::with_bc(Op::Jmp, 0, 4);
        assert!(hoisted_loops(&sum_loop(None, side)).is_empty());
    }
}
