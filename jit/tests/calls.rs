//! Calls: recursion, JIT → JIT in both compile orders, JIT → interpreter, stack growth, the
//! depth limit, error traces through frames, loops and fuel.

mod common;

use cajeta_bytecode::{Op, Type};
use cajeta_jit::{JitOptions, Status, TraceEntry};
use common::*;

const I64: Type = Type::I64;
const BOOL: Type = Type::BOOL;

/// `int64 fib(int64 n) { if (n < 2) return n; return fib(n - 1) + fib(n - 2); }` as the
/// compiler emits it (function index `idx`).
fn fib(idx: u16) -> cajeta_bytecode::Function {
    func(
        "T.fib",
        1,
        Some(I64),
        vec![I64, BOOL, I64, I64, I64],
        vec![
            ibc(Op::LoadI, 2, 2),
            i(Op::LtI64, 1, 0, 2),
            ibc(Op::JmpIfNot, 1, 4),
            i(Op::Ret, 0, 0, 0),
            i(Op::AddImmI64, 3, 0, (-1i16) as u16),
            i(Op::Call, 3, 3, idx),
            i(Op::AddImmI64, 4, 0, (-2i16) as u16),
            i(Op::Call, 4, 4, idx),
            i(Op::AddI64, 3, 3, 4),
            i(Op::Ret, 3, 0, 0),
        ],
    )
}

fn fib_ref(n: u64) -> u64 {
    if n < 2 {
        n
    } else {
        fib_ref(n - 1) + fib_ref(n - 2)
    }
}

#[test]
fn recursion() {
    let m = module(vec![fib(0)]);
    let mut jit = make_jit(&m, JitOptions::default());
    let mut vm = TestVm::new(m, 1 << 12);
    for n in [0, 1, 2, 10, 20] {
        assert_eq!(
            run(&mut jit, &mut vm, 0, &[n]),
            Ok((fib_ref(n), 0)),
            "fib {n}"
        );
    }
    assert_eq!(vm.grows, 0);
}

#[test]
fn the_stack_grows_and_moves_under_running_code() {
    // A 6-cell stack: every level of recursion needs 3 more cells, so the hook reallocates
    // (moving the stack) many times while frames below are live.
    let m = module(vec![fib(0)]);
    let mut jit = make_jit(&m, JitOptions::default());
    let mut vm = TestVm::new(m, 6);
    assert_eq!(run(&mut jit, &mut vm, 0, &[18]), Ok((fib_ref(18), 0)));
    assert!(vm.grows >= 3, "grew {} times", vm.grows);
}

#[test]
fn windows_start_where_the_caller_says() {
    // Entering at a nonzero base: the function's window is stack[5..].
    let m = module(vec![fib(0)]);
    let mut jit = make_jit(&m, JitOptions::default());
    let mut vm = TestVm::new(m, 256);
    vm.stack[..5].copy_from_slice(&[11, 12, 13, 14, 15]);
    assert_eq!(run_at(&mut jit, &mut vm, 0, &[12], 5), Ok((144, 0)));
    assert_eq!(
        &vm.stack[..5],
        &[11, 12, 13, 14, 15],
        "cells below the window untouched"
    );
}

/// `main(x) = sq(x) + sq(x + 1)` (function 0) and `sq(y) = y * y` (function 1).
fn two_functions() -> std::sync::Arc<cajeta_bytecode::Module> {
    let main = func(
        "T.main",
        1,
        Some(I64),
        vec![I64, I64, I64, I64],
        vec![
            i(Op::Mov, 2, 0, 0),
            i(Op::Call, 1, 2, 1),
            i(Op::AddImmI64, 2, 0, 1),
            i(Op::Call, 3, 2, 1),
            i(Op::AddI64, 1, 1, 3),
            i(Op::Ret, 1, 0, 0),
        ],
    );
    let sq = func(
        "T.sq",
        1,
        Some(I64),
        vec![I64, I64],
        vec![i(Op::MulI64, 1, 0, 0), i(Op::Ret, 1, 0, 0)],
    );
    module(vec![main, sq])
}

#[test]
fn jit_to_jit_calls_in_either_compile_order() {
    let m = two_functions();
    // Callee first.
    let mut jit1 = make_jit(&m, JitOptions::default());
    jit1.compile(1).unwrap();
    let mut vm = TestVm::new(m.clone(), 64);
    assert_eq!(run(&mut jit1, &mut vm, 0, &[3]), Ok((9 + 16, 0)));
    assert!(vm.interp_calls.is_empty());
    // Caller first: the first run goes through the interpreter hook, and once the callee is
    // compiled the same caller code calls it natively.
    let mut jit2 = make_jit(&m, JitOptions::default());
    let mut vm = TestVm::new(m, 64);
    vm.interp_result = 100;
    // main's own `ret` clears the ownership bit the hook set.
    assert_eq!(run(&mut jit2, &mut vm, 0, &[3]), Ok((200, 0)));
    assert_eq!(vm.interp_calls, vec![(1, vec![3]), (1, vec![4])]);
    jit2.compile(1).unwrap();
    vm.interp_calls.clear();
    assert_eq!(run(&mut jit2, &mut vm, 0, &[3]), Ok((25, 0)));
    assert!(vm.interp_calls.is_empty());
}

#[test]
fn interpreted_callees_get_their_arguments_and_own_bit() {
    // main(a: i64, b: f64): r := callee(a, b) through the interpreter hook; o := takeown.
    let callee = func(
        "T.callee",
        2,
        Some(I64),
        vec![I64, Type::F64, I64],
        vec![i(Op::Ret, 0, 0, 0)],
    );
    let main = func(
        "T.main",
        2,
        Some(BOOL),
        vec![I64, Type::F64, I64, BOOL, I64, Type::F64],
        vec![
            i(Op::Mov, 4, 0, 0),
            i(Op::Mov, 5, 1, 0),
            i(Op::Call, 2, 4, 1),
            i(Op::TakeOwn, 3, 0, 0),
            i(Op::Ret, 3, 0, 0),
        ],
    );
    let m = module(vec![main, callee]);
    let mut jit = make_jit(&m, JitOptions::default());
    let mut vm = TestVm::new(m, 64);
    let x = 2.5f64.to_bits();
    assert_eq!(run(&mut jit, &mut vm, 0, &[7, x]), Ok((1, 0)));
    assert_eq!(vm.interp_calls, vec![(1, vec![7, x])]);
}

#[test]
fn errors_unwind_with_one_trace_entry_per_frame() {
    // f0 calls f1 at pc 1; f1 divides by its argument at pc 1.
    let f0 = func(
        "T.outer",
        1,
        Some(I64),
        vec![I64, I64, I64],
        vec![
            i(Op::Mov, 2, 0, 0),
            i(Op::Call, 1, 2, 1),
            i(Op::Ret, 1, 0, 0),
        ],
    );
    let f1 = func(
        "T.inner",
        1,
        Some(I64),
        vec![I64, I64],
        vec![
            ibc(Op::LoadI, 1, 100),
            i(Op::DivI64, 1, 1, 0),
            i(Op::Ret, 1, 0, 0),
        ],
    );
    let m = module(vec![f0, f1]);
    let mut jit = make_jit(&m, JitOptions::default());
    jit.compile(1).unwrap();
    let mut vm = TestVm::new(m, 64);
    assert_eq!(run(&mut jit, &mut vm, 0, &[4]), Ok((25, 0)));
    let e = run(&mut jit, &mut vm, 0, &[0]).unwrap_err();
    assert_eq!(e.status, Status::DivZero);
    assert_eq!(
        e.trace,
        vec![TraceEntry { func: 1, pc: 1 }, TraceEntry { func: 0, pc: 1 }]
    );
}

#[test]
fn the_depth_limit_fails_at_the_call_site() {
    // f(n) = f(n + 1): unbounded recursion.
    let f = func(
        "T.f",
        1,
        Some(I64),
        vec![I64, I64],
        vec![
            i(Op::AddImmI64, 1, 0, 1),
            i(Op::Call, 1, 1, 0),
            i(Op::Ret, 1, 0, 0),
        ],
    );
    let m = module(vec![f]);
    let mut jit = make_jit(&m, JitOptions::default());
    let mut vm = TestVm::new(m, 16);
    let e = run_with(&mut jit, &mut vm, 0, &[0], 0, 50, None).unwrap_err();
    assert_eq!(e.status, Status::Stack);
    // 50 frames fit; each of them is on the trace at its call (pc 1), as in the interpreter.
    assert_eq!(e.trace.len(), 50);
    assert!(e.trace.iter().all(|t| *t == TraceEntry { func: 0, pc: 1 }));
    // Frame n holds argument n: the 50th frame's window starts at cell 49.
    assert_eq!(vm.stack[49], 49);
}

/// `s = 0; for (i = 0; i < n; i++) s += i * i;` with the test at the top and one back edge.
fn loop_fn() -> cajeta_bytecode::Function {
    func(
        "T.loop",
        1,
        Some(I64),
        vec![I64, I64, I64, BOOL, I64],
        vec![
            ibc(Op::LoadI, 1, 0),
            ibc(Op::LoadI, 2, 0),
            i(Op::LtI64, 3, 2, 0),
            ibc(Op::JmpIfNot, 3, 8),
            i(Op::MulI64, 4, 2, 2),
            i(Op::AddI64, 1, 1, 4),
            i(Op::AddImmI64, 2, 2, 1),
            ibc(Op::Jmp, 0, 2),
            i(Op::Ret, 1, 0, 0),
        ],
    )
}

#[test]
fn loops() {
    let m = module(vec![loop_fn()]);
    let mut jit = make_jit(&m, JitOptions::default());
    let mut vm = TestVm::new(m, 64);
    for n in [0u64, 1, 2, 1000] {
        let want: u64 = (0..n).map(|k| k * k).sum();
        assert_eq!(run(&mut jit, &mut vm, 0, &[n]), Ok((want, 0)));
    }
}

#[test]
fn fuel_counts_calls_and_back_edges() {
    let m = module(vec![loop_fn()]);
    let mut jit = make_jit(&m, JitOptions { fuel: true });
    let mut vm = TestVm::new(m, 64);
    // n iterations: one unit for the call and one per back edge.
    let n = 10;
    let want: u64 = (0..n).map(|k| k * k).sum();
    assert_eq!(
        run_with(&mut jit, &mut vm, 0, &[n], 0, 100, Some(1 + n as i64)),
        Ok((want, 0))
    );
    let e = run_with(&mut jit, &mut vm, 0, &[n], 0, 100, Some(n as i64)).unwrap_err();
    assert_eq!(e.status, Status::Fuel);
    assert_eq!(e.trace, vec![TraceEntry { func: 0, pc: 7 }]);
    let e = run_with(&mut jit, &mut vm, 0, &[n], 0, 100, Some(0)).unwrap_err();
    assert_eq!(
        e.trace,
        vec![TraceEntry { func: 0, pc: 0 }],
        "the call's own unit"
    );

    // Recursion: fib(5) makes 15 calls.
    let m = module(vec![fib(0)]);
    let mut jf = make_jit(&m, JitOptions { fuel: true });
    let mut vm = TestVm::new(m, 64);
    assert_eq!(
        run_with(&mut jf, &mut vm, 0, &[5], 0, 100, Some(15)),
        Ok((5, 0))
    );
    let e = run_with(&mut jf, &mut vm, 0, &[5], 0, 100, Some(14)).unwrap_err();
    assert_eq!(e.status, Status::Fuel);
    assert_eq!(e.trace.last(), Some(&TraceEntry { func: 0, pc: 7 }));
}

#[test]
fn void_calls_and_conditional_backward_branches() {
    // f0: r0 counts down to 0 with a conditional back edge (jmpif), calling the void f1 each
    // time; f1 writes its argument into static 0 (the last value wins).
    let f0 = func(
        "T.main",
        1,
        Some(I64),
        vec![I64, BOOL, I64, I64],
        vec![
            i(Op::AddImmI64, 0, 0, (-1i16) as u16), // 0
            i(Op::Mov, 3, 0, 0),
            i(Op::Call, 0, 3, 1),
            ibc(Op::LoadI, 2, 0),
            i(Op::LtI64, 1, 2, 0),
            ibc(Op::JmpIf, 1, 0),
            i(Op::Ret, 0, 0, 0),
        ],
    );
    let f1 = func(
        "T.store",
        1,
        None,
        vec![I64],
        vec![ibc(Op::SetStatic, 0, 0), i(Op::RetVoid, 0, 0, 0)],
    );
    let m = module_with(vec![f0, f1], vec![], vec![I64], vec![]);
    for fuel in [false, true] {
        let mut jit = make_jit(&m, JitOptions { fuel });
        jit.compile(1).unwrap();
        let mut vm = TestVm::new(m.clone(), 64);
        assert_eq!(run(&mut jit, &mut vm, 0, &[5]), Ok((0, 0)));
        assert_eq!(vm.statics[0], 0);
        vm.statics[0] = 99;
        assert_eq!(run(&mut jit, &mut vm, 0, &[1]), Ok((0, 0)));
        assert_eq!(vm.statics[0], 0);
    }
}
