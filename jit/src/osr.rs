//! On-stack replacement: entries into a compiled function at its loop headers.
//!
//! A function with a loop may start in the interpreter while a background thread compiles it
//! (the VM's `auto` tiering). When the code is ready, the interpreter hands the running
//! activation over at a backward jump: it sets [`crate::JitContext::osr_pc`] to the jump's
//! target plus one and enters the function's code with the frame's window, as for a call.
//! The prologue of code compiled by [`crate::Jit::compile_osr`] sees the request and, instead
//! of starting at pc 0, loads the registers live at that header from the window and jumps to
//! the header (through the lookups its preheaders would have made: `Tr::osr_dispatch`).
//! The rest of the activation — its result, its errors and their traces — is the compiled
//! function's, exactly as if it had been compiled from the start.
//!
//! Nothing but the registers carries state across the switch: everything else the compiled
//! code keeps in variables is set up per block (bounds already checked, views looked up),
//! per loop entry (hoisted views, strength-reduced products, redone by the entry itself) or
//! per activation (depth, a tail-call loop's count of elided frames, which starts at this
//! activation).

use cajeta_bytecode::{effects, FnKind, Function, Module, RegSet};

use crate::liveness;

/// The most registers times instructions a function may have to get entries: the liveness
/// below is a dataflow over both (about 1 Mi words of sets at most).
const MAX_WORK: usize = 64 << 20;

/// One entry: a loop header and the registers live there (those the entry loads).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    /// The header's pc in the function's own code.
    pub pc: u32,
    /// The registers read before being written on some path from the header.
    pub live: Vec<u16>,
}

/// Whether [`entries`] gives function `f` any entries: a host function with a backward jump,
/// small enough for the analysis.
pub(crate) fn supported(f: &Function) -> bool {
    f.kind == FnKind::Host
        && !headers(f).is_empty()
        && f.code.len().saturating_mul(f.regs.len().max(1)) <= MAX_WORK
}

/// The targets of backward jumps (`target <= pc`), in pc order: where the interpreter may
/// switch.
pub(crate) fn headers(f: &Function) -> Vec<u32> {
    let mut h: Vec<u32> = f
        .code
        .iter()
        .enumerate()
        .filter(|(pc, i)| i.op.is_branch() && i.bc() as usize <= *pc)
        .map(|(_, i)| i.bc())
        .collect();
    h.sort_unstable();
    h.dedup();
    h
}

/// The entries of function `f` of `module` (verified), or none if it is not [`supported`].
pub(crate) fn entries(module: &Module, f: &Function) -> Vec<Entry> {
    if !supported(f) {
        return Vec::new();
    }
    let live = live_in(module, f);
    headers(f)
        .into_iter()
        .map(|pc| Entry {
            pc,
            live: (0..f.regs.len() as u16)
                .filter(|&r| live[pc as usize].contains(r))
                .collect(),
        })
        .collect()
}

/// The registers live on entry to each instruction: read on some path before a write. (A
/// call's result and the frame it clobbers are not counted as writes: more registers live,
/// never fewer.)
fn live_in(module: &Module, f: &Function) -> Vec<RegSet> {
    let (mut reads, mut writes) = (Vec::new(), Vec::new());
    let effects: Vec<(Vec<u16>, Vec<u16>)> = f
        .code
        .iter()
        .map(|&i| {
            effects::reads(module, i, &mut reads);
            effects::writes(i, &mut writes);
            (reads.clone(), writes.clone())
        })
        .collect();
    liveness::live_in_with(f, &effects)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_function::function;
    use cajeta_bytecode::{Instr, Op, Type};

    /// `r0` counts to `r1`, summing into `r2`; `r3` is scratch written before each read.
    fn counting_loop() -> Function {
        function(
            FnKind::Host,
            (2, Some(Type::I64)),
            vec![Type::I64; 5],
            vec![
                Instr::with_bc(Op::LoadI, 2, 0),
                Instr::new(Op::LtI64, 3, 0, 1), // 1: header
                Instr::with_bc(Op::JmpIfNot, 3, 6),
                Instr::new(Op::AddI64, 2, 2, 0),
                Instr::new(Op::AddImmI64, 0, 0, 1),
                Instr::with_bc(Op::Jmp, 0, 1),
                Instr::new(Op::Ret, 2, 0, 0),
            ],
        )
    }

    #[test]
    fn an_entry_loads_what_is_live_at_its_header() {
        let f = counting_loop();
        let module = Module {
            functions: vec![f.clone()],
            ..Module::default()
        };
        assert_eq!(headers(&f), vec![1]);
        assert_eq!(
            entries(&module, &f),
            vec![Entry {
                pc: 1,
                live: vec![0, 1, 2]
            }],
            "r3 is written before it is read, r4 never used"
        );
    }

    #[test]
    fn loop_free_and_device_functions_have_no_entries() {
        let mut f = counting_loop();
        f.code = vec![Instr::new(Op::Ret, 2, 0, 0)];
        assert!(!supported(&f));
        let mut k = counting_loop();
        k.kind = FnKind::Kernel;
        assert!(!supported(&k));
    }
}
