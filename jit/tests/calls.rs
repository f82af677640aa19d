//! Calls: recursion, JIT → JIT in both compile orders, JIT → interpreter, stack growth, the
//! depth limit, error traces through frames, loops and fuel.

mod common;

use cajeta_bytecode::{Const, Op, Type};
use cajeta_jit::{JitOptions, Status, TraceEntry};
use common::*;

const I64: Type = Type::I64;
const BOOL: Type = Type::BOOL;
const STR: Type = Type::Str;

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
fn scalar_frames_need_no_window_and_string_frames_grow_the_stack() {
    // fib keeps everything in machine registers: a 6-cell stack is enough for any depth.
    let m = module(vec![fib(0)]);
    let mut jit = make_jit(&m, JitOptions::default());
    let mut vm = TestVm::new(m, 6);
    assert_eq!(run(&mut jit, &mut vm, 0, &[18]), Ok((fib_ref(18), 0)));
    assert_eq!(vm.grows, 0);

    // g(n) = { s := "x" ++ "x"; n == 0 ? 0 : g(n - 1) + (s == s) }: every frame has a String
    // register, so its window must exist; the stack grows (and moves) under live frames, and
    // each frame's string is still in its window after its callee returns.
    let g = func(
        "T.g",
        1,
        Some(I64),
        vec![I64, STR, STR, BOOL, I64, I64],
        vec![
            ibc(Op::LoadK, 1, 0),
            i(Op::Concat, 2, 1, 1),
            ibc(Op::LoadI, 4, 0),
            i(Op::EqI64, 3, 0, 4),
            ibc(Op::JmpIfNot, 3, 6),
            i(Op::Ret, 4, 0, 0),
            i(Op::AddImmI64, 5, 0, (-1i16) as u16), // 6
            i(Op::Call, 4, 5, 0),
            i(Op::EqStr, 3, 2, 2),
            i(Op::WrapI64, 5, 3, 0),
            i(Op::AddI64, 4, 4, 5),
            i(Op::Ret, 4, 0, 0),
        ],
    );
    let m = module_with(vec![g], vec![Const::Str("x".into())], vec![], vec![]);
    let mut jit = make_jit(&m, JitOptions::default());
    let mut vm = TestVm::new(m, 6);
    assert_eq!(run(&mut jit, &mut vm, 0, &[40]), Ok((40, 0)));
    assert!(vm.grows >= 3, "grew {} times", vm.grows);
    // Frame k's window starts at cell 5k; its r2 holds "xx".
    for k in 0..40 {
        assert_eq!(vm.str(vm.stack[5 * k + 2]), Some("xx"), "frame {k}");
    }
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
}

#[test]
fn loops() {
    let m = module(vec![sum_of_squares()]);
    let mut jit = make_jit(&m, JitOptions::default());
    let mut vm = TestVm::new(m, 64);
    for n in [0u64, 1, 2, 1000] {
        let want: u64 = (0..n).map(|k| k * k).sum();
        assert_eq!(run(&mut jit, &mut vm, 0, &[n]), Ok((want, 0)));
    }
}

#[test]
fn fuel_counts_calls_and_back_edges() {
    let m = module(vec![sum_of_squares()]);
    let mut jit = make_jit(
        &m,
        JitOptions {
            fuel: true,
            ..JitOptions::default()
        },
    );
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
    let mut jf = make_jit(
        &m,
        JitOptions {
            fuel: true,
            ..JitOptions::default()
        },
    );
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
        let mut jit = make_jit(
            &m,
            JitOptions {
                fuel,
                ..JitOptions::default()
            },
        );
        jit.compile(1).unwrap();
        let mut vm = TestVm::new(m.clone(), 64);
        assert_eq!(run(&mut jit, &mut vm, 0, &[5]), Ok((0, 0)));
        assert_eq!(vm.statics[0], 0);
        vm.statics[0] = 99;
        assert_eq!(run(&mut jit, &mut vm, 0, &[1]), Ok((0, 0)));
        assert_eq!(vm.statics[0], 0);
    }
}

#[test]
fn deep_recursion_continues_in_the_interpreter_when_native_stack_runs_short() {
    // f(n) = n == 0 ? 0 : f(n - 1) + 1, entered with n = 100 000 under a native budget that
    // holds far fewer frames: the call that finds the stack short goes to `call_interp`
    // (here a stub returning 1000) with its argument in the window, and the frames above it
    // finish natively. (The `mov` keeps the calls real: `f(n - 1) + 1` straight after the
    // call would run as a loop, `jit/src/tail.rs`.)
    let f = func(
        "T.f",
        1,
        Some(I64),
        vec![I64, BOOL, I64, I64],
        vec![
            ibc(Op::LoadI, 2, 0),
            i(Op::EqI64, 1, 0, 2),
            ibc(Op::JmpIfNot, 1, 4),
            i(Op::Ret, 0, 0, 0),
            i(Op::AddImmI64, 3, 0, (-1i16) as u16),
            i(Op::Call, 2, 3, 0),
            i(Op::Mov, 2, 2, 0),
            i(Op::AddImmI64, 2, 2, 1),
            i(Op::Ret, 2, 0, 0),
        ],
    );
    let m = module(vec![f]);
    let mut jit = make_jit(&m, JitOptions::default());
    let mut vm = TestVm::new(m, 64);
    vm.interp_result = 1000;
    let n = 100_000u64;
    let out = run_with_native_budget(&mut jit, &mut vm, 0, &[n], 64 << 10);
    assert_eq!(
        vm.interp_calls.len(),
        1,
        "one fallback, then the interpreter's job"
    );
    let (callee, args) = &vm.interp_calls[0];
    assert_eq!(*callee, 0);
    let native_frames = n - args[0];
    assert!(
        native_frames > 10 && native_frames < 5000,
        "{native_frames} native frames"
    );
    assert_eq!(out, Ok((1000 + native_frames, 0)));
}

#[test]
fn mixed_parameters_cross_native_calls() {
    // mix(s: String, x: float64, y: float32, k: int8, t: String) -> float64: x * y + k, and
    // prints s ++ t; called natively from main with its arguments in registers (the
    // Strings through the window), and through the interpreter hook before it is compiled.
    let f32t = Type::Scalar(cajeta_bytecode::Scalar::F32);
    let i8t = Type::Scalar(cajeta_bytecode::Scalar::I8);
    let mix = func(
        "T.mix",
        5,
        Some(Type::F64),
        vec![STR, Type::F64, f32t, i8t, STR, Type::F64, Type::F64, STR],
        vec![
            i(Op::F32ToF64, 5, 2, 0),
            i(Op::MulF64, 5, 1, 5),
            i(Op::SToF64, 6, 3, 0),
            i(Op::AddF64, 5, 5, 6),
            i(Op::Concat, 7, 0, 4),
            i(Op::Print, 7, 2, 0),
            i(Op::Ret, 5, 0, 0),
        ],
    );
    let main = func(
        "T.main",
        3,
        Some(Type::F64),
        vec![
            Type::F64,
            f32t,
            i8t,
            Type::F64,
            STR,
            Type::F64,
            f32t,
            i8t,
            STR,
        ],
        vec![
            ibc(Op::LoadK, 4, 0),
            i(Op::Mov, 5, 0, 0),
            i(Op::Mov, 6, 1, 0),
            i(Op::Mov, 7, 2, 0),
            ibc(Op::LoadK, 8, 1),
            i(Op::Call, 3, 4, 1),
            i(Op::Ret, 3, 0, 0),
        ],
    );
    let m = module_with(
        vec![main, mix],
        vec![Const::Str("a".into()), Const::Str("b".into())],
        vec![],
        vec![],
    );
    let x = 1.5f64.to_bits();
    let y = (-2.0f32).to_bits() as u64;
    let k = (-3i64) as u64;
    let want = (1.5f64 * (-2.0f32) as f64 + -3.0).to_bits();
    let mut jit = make_jit(&m, JitOptions::default());
    let mut vm = TestVm::new(m, 64);
    assert_eq!(run(&mut jit, &mut vm, 0, &[x, y, k]), Ok((0, 0)));
    assert_eq!(vm.interp_calls.len(), 1);
    let args = &vm.interp_calls[0].1;
    assert_eq!(vm.str(args[0]), Some("a"));
    assert_eq!(&args[1..4], &[x, y, k]);
    assert_eq!(vm.str(args[4]), Some("b"));
    jit.compile(1).unwrap();
    assert_eq!(run(&mut jit, &mut vm, 0, &[x, y, k]), Ok((want, 0)));
    assert_eq!(vm.out, "ab\n");
}

#[test]
fn calls_through_the_interpreter_hook_can_reenter_compiled_code() {
    // With the native limit above every stack pointer, each call takes the `call_interp`
    // path; the stub hook re-enters the callee's public entry, as the VM's interpreter would
    // call compiled code. Results, depth and traces must be as for native calls.
    let m = module(vec![fib(0)]);
    let mut jit = make_jit(&m, JitOptions::default());
    let entry = jit.compile(0).unwrap().entry();
    let mut vm = TestVm::new(m, 4096);
    vm.reenter = vec![Some(entry)];
    let budget = Some(usize::MAX);
    assert_eq!(
        run_full(&mut jit, &mut vm, 0, &[15], 0, 1000, None, budget),
        Ok((fib_ref(15), 0))
    );
    // fib(12) recurses 12 frames deep: a limit of 8 fails at the 8th frame's call (pc 5),
    // with one trace entry per frame, exactly as natively.
    let hooked = run_full(&mut jit, &mut vm, 0, &[12], 0, 8, None, budget).unwrap_err();
    let native = run_full(&mut jit, &mut vm, 0, &[12], 0, 8, None, None).unwrap_err();
    assert_eq!(hooked.status, Status::Stack);
    assert_eq!(hooked.trace, native.trace);
    assert_eq!(hooked.trace.len(), 8);
    assert!(hooked
        .trace
        .iter()
        .all(|t| *t == TraceEntry { func: 0, pc: 5 }));
}

/// A companion JIT shares the function table: a callee it compiles on another thread is
/// called natively by the first JIT's code, and the companion's code stays valid while the
/// companion lives.
#[test]
fn a_companion_compiles_callees_on_another_thread() {
    let m = two_functions();
    let mut jit = make_jit(&m, JitOptions::default());
    let companion = jit.companion().expect("companion");
    let mut vm = TestVm::new(m, 64);
    vm.interp_result = 100;
    // The callee is not compiled yet: the call goes through the interpreter hook.
    assert_eq!(run(&mut jit, &mut vm, 0, &[3]), Ok((200, 0)));
    let companion = std::thread::spawn(move || {
        let mut companion = companion;
        companion.compile(1).expect("callee compiles");
        companion
    })
    .join()
    .expect("thread");
    assert!(companion.compiled(1).is_some() && jit.compiled(1).is_none());
    vm.interp_calls.clear();
    assert_eq!(run(&mut jit, &mut vm, 0, &[3]), Ok((9 + 16, 0)));
    assert!(vm.interp_calls.is_empty(), "{:?}", vm.interp_calls);
    // The spliced-call query answers without compiling (nothing is spliced here: no loop).
    assert!(jit.spliced_calls(0).is_empty());
    drop(jit);
    drop(companion);
}
