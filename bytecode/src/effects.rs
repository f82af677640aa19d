//! Which registers of its frame an instruction reads and writes: the one definition behind
//! the verifier's definite assignment (V-DEF) and the JIT's spills around runtime hooks.
//!
//! Both lists come from the opcode table's `Src` and `Dst` slots plus the opcode rules of
//! `verify.rs` (call arguments, launch windows, the registers after `c` of `buf.slice` and
//! `str.format`, `atom.cas`'s desired value). A new opcode with a `Special` operand must be
//! added here; a test checks that every such opcode is.

use crate::module::Module;
use crate::opcodes::{Instr, Op, Operand};

/// The registers `i` may read, into `out` (cleared first). `m` must be verified as far as
/// V-FUNC and V-LAUNCH (the function operands of `call` and `launch` are in range).
pub fn reads(m: &Module, i: Instr, out: &mut Vec<u16>) {
    out.clear();
    let mnemonic = i.op.mnemonic();
    // Atomics and fma read their destination before writing it.
    let reads_dst = mnemonic.starts_with("atom.") || mnemonic.starts_with("fma.");
    for (slot, (o, r)) in i.op.operands().into_iter().zip([i.a, i.b, i.c]).enumerate() {
        // `allocate()` keeping the current kind leaves r[b] unused.
        let unused = i.op == Op::BufAllocate && i.c == 1 && slot == 1;
        match o {
            Operand::Src(_) if !unused => out.push(r),
            Operand::Dst(_) if reads_dst => out.push(r),
            _ => {}
        }
    }
    let window = |out: &mut Vec<u16>, first: u16, len: usize| {
        out.extend((usize::from(first)..usize::from(first) + len).map(|r| r as u16));
    };
    let params = |f: u16| m.functions.get(usize::from(f)).map_or(0, |f| f.params);
    match i.op {
        Op::Call => window(out, i.b, usize::from(params(i.c))),
        Op::Ret | Op::RetOwn | Op::SetStatic => out.push(i.a),
        Op::SetField => out.push(i.c),
        Op::BufSlice | Op::Format => window(out, i.c, 2),
        // The stream, grid x/y/z, block x/y/z, shared bytes, then the kernel's parameters.
        Op::Launch => window(out, i.a, 8 + usize::from(params(i.b))),
        // In range by V-DEVMEM.
        _ if mnemonic.starts_with("atom.cas.") => out.push(i.a.wrapping_add(1)),
        _ => {}
    }
}

/// The registers `i` certainly writes when it completes, into `out` (cleared first): its
/// `Dst` slots and the `r[a]` of `getfield`, `getstatic` and `device.query`. A `call`'s result
/// is left out (it also clobbers its callee's frame, which only the caller can bound).
pub fn writes(i: Instr, out: &mut Vec<u16>) {
    out.clear();
    for (o, r) in i.op.operands().into_iter().zip([i.a, i.b, i.c]) {
        if matches!(o, Operand::Dst(_)) {
            out.push(r);
        }
    }
    if matches!(i.op, Op::GetField | Op::GetStatic | Op::DeviceQuery) {
        out.push(i.a);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every opcode with a `Special` operand has its registers classified above: a new one
    /// must be added to [`reads`] or [`writes`] (or here, if it names no register).
    #[test]
    fn every_special_operand_is_classified() {
        let classified = [
            Op::Call,
            Op::Ret,
            Op::RetOwn,
            Op::GetField,
            Op::SetField,
            Op::GetStatic,
            Op::SetStatic,
            Op::BufSlice,
            Op::Launch,
            Op::Format,
            Op::DeviceQuery,
        ];
        for op in Op::ALL.iter().copied() {
            if op.operands().contains(&Operand::Special) {
                assert!(
                    classified.contains(&op),
                    "{} is not classified",
                    op.mnemonic()
                );
            }
        }
    }
}
