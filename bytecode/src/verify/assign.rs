//! **V-DEF**, definite assignment: on every path from a function's entry, each register an
//! instruction reads was written before, in this frame, after the last call whose frame
//! covers it.
//!
//! Frames overlap (a callee's window starts at the caller's register `b`, see
//! `vm/src/interp/frame.rs`), so a register that was never written holds whatever an earlier
//! frame left there: a cell of another type, or a stale handle. And a `call a b c` leaves the
//! callee's values in the caller's registers `b .. b + F.regs.len()`, which the JIT and the
//! compiled cpu kernels (whose frames do not overlap) would not. Proving that no such register
//! is read makes every executor see the same values and makes V-CANON hold for every read.
//!
//! A forward must-analysis over the function's basic blocks: a block's entry set is the
//! intersection of its predecessors' exit sets (unreached blocks are never checked: they
//! cannot run). Sets only shrink as the analysis proceeds, so a read missing from a set seen on
//! the way is missing at the fixed point too, and is reported at once.

use crate::effects;
use crate::module::{Function, Module};
use crate::opcodes::{Instr, Op};
use crate::regset::RegSet;

/// The most register-set words (blocks × ⌈registers / 64⌉) the check holds at once: 32 MiB.
/// A function over it is refused, with V-DEF, rather than verified slowly.
const BUDGET_WORDS: usize = 1 << 22;

/// Why a function fails V-DEF.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Unassigned {
    /// The instruction at `pc` reads `reg`, which some path reaches unwritten.
    Read { pc: u32, reg: u16 },
    /// The function is too large for the check's memory budget.
    TooLarge { blocks: usize, regs: usize },
}

/// Checks V-DEF for `f`, a verified non-native function of `m` (V-REG, V-CALL, V-LAUNCH,
/// V-DEVMEM, V-SLICE, V-FORMAT and V-TERM hold, so every register named below is in range
/// and control never falls off the end).
pub(super) fn check(m: &Module, f: &Function) -> Result<(), Unassigned> {
    let code = &f.code;
    let n = f.regs.len();
    let starts = block_starts(code);
    let words = n.div_ceil(64);
    if starts.len().saturating_mul(words) > BUDGET_WORDS {
        return Err(Unassigned::TooLarge {
            blocks: starts.len(),
            regs: n,
        });
    }
    let block_of = |pc: u32| starts.binary_search(&pc).ok();
    // Entry sets; `None`: not reached yet (the top of the lattice).
    let mut entry: Vec<Option<RegSet>> = vec![None; starts.len()];
    let mut params = RegSet::new(n);
    for r in 0..f.params {
        params.insert(r);
    }
    entry[0] = Some(params);
    // Pending blocks, lowest first: code order is close to reverse postorder.
    let mut pending = std::collections::BTreeSet::from([0usize]);
    let mut regs = Vec::new();
    while let Some(b) = pending.pop_first() {
        let Some(mut set) = entry[b].clone() else {
            continue;
        };
        let start = starts[b];
        let end = starts.get(b + 1).copied().unwrap_or(code.len() as u32);
        for pc in start..end {
            let i = code[pc as usize];
            effects::reads(m, i, &mut regs);
            if let Some(&reg) = regs.iter().find(|&&r| !set.contains(r)) {
                return Err(Unassigned::Read { pc, reg });
            }
            write(m, f, i, &mut set, &mut regs);
        }
        let last = code[end as usize - 1];
        let fall = (!last.op.is_terminator() && (end as usize) < code.len()).then_some(end);
        let target = last.op.is_branch().then(|| last.bc());
        for succ in [fall, target].into_iter().flatten().filter_map(block_of) {
            let changed = match &mut entry[succ] {
                Some(old) => old.intersect_with(&set),
                e @ None => {
                    *e = Some(set.clone());
                    true
                }
            };
            if changed {
                pending.insert(succ);
            }
        }
    }
    Ok(())
}

/// The first pc of each basic block, ascending: pc 0, every jump target, and every pc after a
/// branch or a terminator.
fn block_starts(code: &[Instr]) -> Vec<u32> {
    let mut starts = vec![0u32];
    for (pc, i) in code.iter().enumerate() {
        if i.op.is_branch() {
            starts.push(i.bc());
        }
        if (i.op.is_branch() || i.op.is_terminator()) && pc + 1 < code.len() {
            starts.push(pc as u32 + 1);
        }
    }
    starts.sort_unstable();
    starts.dedup();
    starts
}

/// Applies `i`'s writes to `set`, the registers certainly written.
fn write(m: &Module, f: &Function, i: Instr, set: &mut RegSet, scratch: &mut Vec<u16>) {
    if i.op == Op::Call {
        // The callee's frame, arguments included (a callee may assign its parameters), now
        // holds the callee's values; only the result is the caller's again.
        let callee = &m.functions[usize::from(i.c)];
        let end = (usize::from(i.b) + callee.regs.len()).min(f.regs.len());
        for r in usize::from(i.b)..end {
            set.remove(r as u16);
        }
        if callee.ret.is_some() {
            set.insert(i.a);
        }
        return;
    }
    effects::writes(i, scratch);
    for &r in scratch.iter() {
        set.insert(r);
    }
}
