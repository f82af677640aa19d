//! On-stack replacement through the public API: code from `Jit::compile_osr`, entered with
//! `JitContext::osr_pc` at a loop header, continues from the registers in the window.

mod common;

use std::ffi::c_void;

use cajeta_bytecode::{Op, Type};
use cajeta_jit::{JitContext, JitOptions, Status};
use common::*;

const I64: Type = Type::I64;

/// Runs `entry` on `window` (copied to the bottom of the stack) with `osr_pc`; returns the
/// status, the result cell and what `osr_pc` was after the call.
fn enter(
    vm: &mut TestVm,
    entry: cajeta_jit::JitFn,
    window: &[u64],
    osr_pc: u64,
) -> (u32, u64, u64) {
    vm.stack[..window.len()].copy_from_slice(window);
    let vmp: *mut TestVm = vm;
    let mut ctx = JitContext::new(vmp as *mut c_void, 1000);
    // SAFETY: `vmp` is live for the whole call; hooks reach the VM only through it.
    unsafe {
        ctx.stack_base = (*vmp).stack.as_mut_ptr();
        ctx.stack_len = (*vmp).stack.len() as u64;
    }
    ctx.osr_pc = osr_pc;
    let regs = ctx.stack_base;
    // SAFETY: the context points at the TestVm's live storage and the window fits.
    let st = unsafe { entry(&mut ctx, regs) };
    (st, ctx.ret, ctx.osr_pc)
}

#[test]
fn an_entry_at_a_loop_header_continues_from_the_window() {
    let m = module(vec![sum_of_squares()]);
    let mut jit = make_jit(&m, JitOptions::default());
    assert!(jit.osr_supported(0));
    let c = jit.compile_osr(0).expect("compiles");
    assert!(c.osr, "the code has entries");
    let mut vm = TestVm::new(m, 64);
    let squares = |from: u64, to: u64| (from..to).map(|k| k * k).sum::<u64>();
    // A plain entry runs from pc 0.
    assert_eq!(
        enter(&mut vm, c.entry(), &[100], 0),
        (0, squares(0, 100), 0)
    );
    // At the header with k = 40 and s holding the first 40 squares (r3, r4 as garbage: they
    // are written before they are read): the same result, and the request is consumed.
    let window = [100, squares(0, 40), 40, 0xDEAD, 0xBEEF];
    assert_eq!(
        enter(&mut vm, c.entry(), &window, 3),
        (0, squares(0, 100), 0)
    );
    // With a different s, the code visibly used the window's.
    let window = [100, 7, 99, 0, 0];
    assert_eq!(enter(&mut vm, c.entry(), &window, 3), (0, 7 + 99 * 99, 0));
    // A pc with no entry is refused with an error status, not run from somewhere.
    let (st, _, _) = enter(&mut vm, c.entry(), &window, 5);
    assert_eq!(st, Status::Error as u32);
}

#[test]
fn plain_compiles_and_loop_free_functions_have_no_entries() {
    let f = func("T.id", 1, Some(I64), vec![I64], vec![i(Op::Ret, 0, 0, 0)]);
    let m = module(vec![sum_of_squares(), f]);
    let mut jit = make_jit(&m, JitOptions::default());
    assert!(!jit.compile(0).expect("compiles").osr);
    assert!(!jit.osr_supported(1));
    assert!(!jit.compile_osr(1).expect("compiles").osr);
    let fueled = make_jit(
        &m,
        JitOptions {
            fuel: true,
            ..JitOptions::default()
        },
    );
    assert!(
        !fueled.osr_supported(0),
        "fuel's check points stay where they are"
    );
}
