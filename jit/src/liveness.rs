//! Register liveness of a kernel body: which registers may be read before they are written
//! again, at each pc.
//!
//! Lockstep code leaves lockstep by storing each lane's registers; only the live ones matter,
//! and keeping the others out of those stores keeps them out of every register of the loop
//! around them (see `translate/lockstep.rs`). The dataflow itself ([`live_in_with`]) also
//! serves the entries at loop headers of host code (`osr.rs`), with the precise per-opcode
//! lists of `cajeta_bytecode::effects`.
//!
//! The analysis is conservative: an operand slot counts as a read unless it is a plain `Dst`
//! (a `Special` slot may read; an atomic's `Dst` is read before it is written and
//! `atom.cas` also reads the register after it), and only `Dst` slots of other instructions
//! end a register's life. An opcode that reads registers beyond its operand slots must be
//! listed in [`reads`].

use cajeta_bytecode::{Function, Instr, Op, Operand, RegSet};

/// A set of registers.
pub(crate) type Regs = RegSet;

/// The registers live on entry to each instruction of `f`.
pub(crate) fn live_in(f: &Function) -> Vec<Regs> {
    let effects: Vec<(Vec<u16>, Vec<u16>)> = f.code.iter().map(|i| (reads(i), kills(i))).collect();
    live_in_with(f, &effects)
}

/// The registers live on entry to each instruction of `f`, given per instruction the
/// registers it reads and those it certainly overwrites: a backward dataflow to a fixed
/// point (kernels and the functions given OSR entries are small enough for plain rounds).
pub(crate) fn live_in_with(f: &Function, effects: &[(Vec<u16>, Vec<u16>)]) -> Vec<Regs> {
    let n = f.regs.len();
    let code = &f.code;
    let mut live = vec![Regs::new(n); code.len()];
    let mut changed = true;
    while changed {
        changed = false;
        for pc in (0..code.len()).rev() {
            let i = code[pc];
            let mut set = Regs::new(n);
            for s in successors(pc as u32, &i, code.len()) {
                set.union_with(&live[s as usize]);
            }
            let (reads, kills) = &effects[pc];
            for &r in kills {
                set.remove(r);
            }
            for &r in reads {
                set.insert(r);
            }
            if set != live[pc] {
                live[pc] = set;
                changed = true;
            }
        }
    }
    live
}

/// The pcs control may reach after `i` at `pc`.
pub(crate) fn successors(pc: u32, i: &Instr, len: usize) -> Vec<u32> {
    let next = (pc as usize + 1 < len).then_some(pc + 1);
    match i.op {
        Op::Jmp => vec![i.bc()],
        Op::JmpIf | Op::JmpIfNot => [Some(i.bc()), next].into_iter().flatten().collect(),
        Op::Ret | Op::RetOwn | Op::RetVoid => Vec::new(),
        _ => next.into_iter().collect(),
    }
}

/// The registers `i` may read.
fn reads(i: &Instr) -> Vec<u16> {
    let m = i.op.mnemonic();
    let atomic = m.starts_with("atom.");
    let mut out = Vec::new();
    for (k, (o, r)) in i.op.operands().into_iter().zip([i.a, i.b, i.c]).enumerate() {
        match o {
            Operand::Special if k == 0 && writes_first(i.op) => {}
            Operand::Src(_) | Operand::Special => out.push(r),
            Operand::Dst(_) if atomic => out.push(r),
            _ => {}
        }
    }
    if m.starts_with("atom.cas") {
        out.push(i.a.wrapping_add(1));
    }
    out
}

/// The registers `i` certainly overwrites without reading.
fn kills(i: &Instr) -> Vec<u16> {
    if i.op.mnemonic().starts_with("atom.") {
        return Vec::new();
    }
    let mut out: Vec<u16> =
        i.op.operands()
            .into_iter()
            .zip([i.a, i.b, i.c])
            .filter(|(o, _)| matches!(o, Operand::Dst(_)))
            .map(|(_, r)| r)
            .collect();
    if writes_first(i.op) {
        out.push(i.a);
    }
    out
}

/// Opcodes whose `Special` first operand is a register they only write (`r[a] := …`).
fn writes_first(op: Op) -> bool {
    matches!(op, Op::GetStatic | Op::GetField)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cajeta_bytecode::{FnKind, Scalar, Type};

    fn instr(op: Op, a: u16, b: u16, c: u16) -> Instr {
        Instr { op, a, b, c }
    }

    #[test]
    fn a_register_is_live_from_its_write_to_its_last_read_around_loops() {
        // r0 := 0; loop: r1 := r0 < r2 (pc 1); if !r1 goto 5; r0 := r0 + r2; goto 1; ret
        let lt = Op::ALL
            .iter()
            .copied()
            .find(|o| o.mnemonic() == "lt.i32")
            .expect("lt.i32");
        let add = Op::ALL
            .iter()
            .copied()
            .find(|o| o.mnemonic() == "add.i32")
            .expect("add.i32");
        let mut jmp_out = instr(Op::JmpIfNot, 1, 0, 0);
        jmp_out.set_bc(5);
        let mut back = instr(Op::Jmp, 0, 0, 0);
        back.set_bc(1);
        let f = Function {
            name: "k".into(),
            kind: FnKind::Kernel,
            params: 0,
            ret: None,
            regs: vec![Type::Scalar(Scalar::I32); 3],
            code: vec![
                instr(Op::LoadI, 0, 0, 0),
                instr(lt, 1, 0, 2),
                jmp_out,
                instr(add, 0, 0, 2),
                back,
                instr(Op::RetVoid, 0, 0, 0),
            ],
            file: 0,
            lines: Vec::new(),
            regions: Vec::new(),
            locals: Vec::new(),
            shared: Vec::new(),
            inlined: vec![],
        };
        let live = live_in(&f);
        // r2 (a parameter-like input) is live everywhere before the exit; r0 is dead before
        // its first write; r1 only between the compare and the branch.
        assert!(live[0].contains(2) && !live[0].contains(0));
        assert!(live[1].contains(0) && live[1].contains(2) && !live[1].contains(1));
        assert!(live[2].contains(1) && live[2].contains(0));
        assert!(live[4].contains(0) && !live[4].contains(1));
        assert!(!live[5].contains(0) && !live[5].contains(2));
    }
}
