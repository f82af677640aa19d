//! Statics, arrays (with bounds and null errors), strings and printing, instances and drops:
//! everything that goes through the embedder's hooks.

mod common;

use cajeta_bytecode::{Class, Const, Elem, Field, Op, Scalar, Type};
use cajeta_jit::{JitOptions, Status, TraceEntry};
use common::*;

const I64: Type = Type::I64;
const I32: Type = Type::I32;
const F64: Type = Type::F64;
const BOOL: Type = Type::BOOL;
const STR: Type = Type::Str;

#[test]
fn statics_of_every_kind() {
    // s0 (int32) += arg; s1 (float64) := s1 * 2; s2 (String) := "hi"; s3 (float32) := 1.5.
    let f = func(
        "T.f",
        1,
        Some(I32),
        vec![I32, I32, F64, F64, STR, Type::Scalar(Scalar::F32)],
        vec![
            ibc(Op::GetStatic, 1, 0),
            i(Op::AddI32, 1, 1, 0),
            ibc(Op::SetStatic, 1, 0),
            ibc(Op::GetStatic, 2, 1),
            i(Op::AddF64, 3, 2, 2),
            ibc(Op::SetStatic, 3, 1),
            ibc(Op::LoadK, 4, 0),
            ibc(Op::SetStatic, 4, 2),
            ibc(Op::LoadK, 5, 1),
            ibc(Op::SetStatic, 5, 3),
            i(Op::Ret, 1, 0, 0),
        ],
    );
    let m = module_with(
        vec![f],
        vec![
            Const::Str("hi".into()),
            Const::Bits(1.5f32.to_bits() as u64),
        ],
        vec![I32, F64, STR, Type::Scalar(Scalar::F32)],
        vec![],
    );
    let mut jit = make_jit(&m, JitOptions::default());
    let mut vm = TestVm::new(m, 64);
    vm.statics[0] = (-10i64) as u64;
    vm.statics[1] = 1.25f64.to_bits();
    assert_eq!(run(&mut jit, &mut vm, 0, &[3]), Ok(((-7i64) as u64, 0)));
    assert_eq!(run(&mut jit, &mut vm, 0, &[3]), Ok(((-4i64) as u64, 0)));
    assert_eq!(vm.statics[1], 5.0f64.to_bits());
    assert_eq!(vm.str(vm.statics[2]), Some("hi"));
    assert_eq!(
        vm.statics[3],
        1.5f32.to_bits() as u64,
        "float32 cells keep the high half zero"
    );
}

/// `a = new T[n]; a[i] = v; return a[j]` over element type `e` with value register type `t`.
fn array_fn(e: Scalar) -> cajeta_bytecode::Function {
    let t = Type::Scalar(e);
    func(
        "T.arr",
        4,
        Some(t),
        vec![I64, I64, t, I64, Type::Array(Elem::Scalar(e)), t, I64],
        vec![
            i(Op::NewArr, 4, 0, 0),
            i(set_op(e), 4, 1, 2),
            i(get_op(e), 5, 4, 3),
            i(Op::ArrLen, 6, 4, 0),
            i(Op::Ret, 5, 0, 0),
        ],
    )
}

fn get_op(e: Scalar) -> Op {
    match e {
        Scalar::Bool => Op::ArrGetBool,
        Scalar::Char => Op::ArrGetChar,
        Scalar::I8 => Op::ArrGetI8,
        Scalar::U8 => Op::ArrGetU8,
        Scalar::I16 => Op::ArrGetI16,
        Scalar::U16 => Op::ArrGetU16,
        Scalar::I32 => Op::ArrGetI32,
        Scalar::U32 => Op::ArrGetU32,
        Scalar::I64 => Op::ArrGetI64,
        Scalar::U64 => Op::ArrGetU64,
        Scalar::F32 => Op::ArrGetF32,
        Scalar::F64 => Op::ArrGetF64,
        Scalar::F16 => Op::ArrGetF16,
        Scalar::BF16 => Op::ArrGetBF16,
    }
}

fn set_op(e: Scalar) -> Op {
    match e {
        Scalar::Bool => Op::ArrSetBool,
        Scalar::Char => Op::ArrSetChar,
        Scalar::I8 => Op::ArrSetI8,
        Scalar::U8 => Op::ArrSetU8,
        Scalar::I16 => Op::ArrSetI16,
        Scalar::U16 => Op::ArrSetU16,
        Scalar::I32 => Op::ArrSetI32,
        Scalar::U32 => Op::ArrSetU32,
        Scalar::I64 => Op::ArrSetI64,
        Scalar::U64 => Op::ArrSetU64,
        Scalar::F32 => Op::ArrSetF32,
        Scalar::F64 => Op::ArrSetF64,
        Scalar::F16 => Op::ArrSetF16,
        Scalar::BF16 => Op::ArrSetBF16,
    }
}

#[test]
fn array_elements_of_every_type_round_trip() {
    for e in Scalar::ALL {
        let value = match e {
            Scalar::Bool => 1,
            Scalar::I8 => (-5i64) as u64,
            Scalar::I16 => (-300i64) as u64,
            Scalar::I32 => (-70000i64) as u64,
            Scalar::I64 => (-1i64 << 40) as u64,
            Scalar::F32 => (-2.5f32).to_bits() as u64,
            Scalar::F64 => (-2.5f64).to_bits(),
            // -2.5 as float16 / bfloat16 bits.
            Scalar::F16 => 0xc100,
            Scalar::BF16 => 0xc020,
            _ => 200,
        };
        let m = module(vec![array_fn(e)]);
        let mut jit = make_jit(&m, JitOptions::default());
        let mut vm = TestVm::new(m, 64);
        assert_eq!(
            run(&mut jit, &mut vm, 0, &[4, 2, value, 2]),
            Ok((value, 0)),
            "{e}"
        );
        assert_eq!(
            run(&mut jit, &mut vm, 0, &[4, 2, value, 3]),
            Ok((0, 0)),
            "{e}: zero-filled"
        );
    }
}

#[test]
fn array_errors_carry_index_length_and_pc() {
    let m = module(vec![array_fn(Scalar::I32)]);
    let mut jit = make_jit(&m, JitOptions::default());
    let mut vm = TestVm::new(m, 64);
    let e = run(&mut jit, &mut vm, 0, &[5, 5, 1, 0]).unwrap_err();
    assert_eq!(e.status, Status::Error);
    assert_eq!(e.trace, vec![TraceEntry { func: 0, pc: 1 }]);
    let err = e.error.unwrap();
    assert_eq!(
        (err.code, err.message.as_str()),
        ("E-BOUNDS", "index 5 out of bounds for length 5")
    );
    let e = run(&mut jit, &mut vm, 0, &[5, 0, 1, (-1i64) as u64]).unwrap_err();
    assert_eq!(e.trace, vec![TraceEntry { func: 0, pc: 2 }]);
    assert_eq!(
        e.error.unwrap().message,
        "index -1 out of bounds for length 5"
    );
    let e = run(&mut jit, &mut vm, 0, &[(-3i64) as u64, 0, 1, 0]).unwrap_err();
    assert_eq!(e.trace, vec![TraceEntry { func: 0, pc: 0 }]);
    let err = e.error.unwrap();
    assert_eq!(
        (err.code, err.message.as_str()),
        ("E-SIZE", "invalid array length -3")
    );
}

#[test]
fn null_references() {
    // r0: int64[] (null); count() of it fails at pc 1.
    let f = func(
        "T.f",
        0,
        Some(I64),
        vec![Type::Array(Elem::Scalar(Scalar::I64)), I64],
        vec![
            i(Op::LoadNull, 0, 0, 0),
            i(Op::ArrLen, 1, 0, 0),
            i(Op::Ret, 1, 0, 0),
        ],
    );
    let m = module(vec![f]);
    let mut jit = make_jit(&m, JitOptions::default());
    let mut vm = TestVm::new(m, 64);
    let e = run(&mut jit, &mut vm, 0, &[]).unwrap_err();
    assert_eq!(e.trace, vec![TraceEntry { func: 0, pc: 1 }]);
    assert_eq!(e.error.unwrap().code, "E-NULL");
}

#[test]
fn strings_and_printing() {
    // s := "n=" ++ tostr(n); print s (newline); print tostr(x) to stderr; eq.str; parseInt.
    let f = func(
        "T.f",
        2,
        Some(I64),
        vec![I32, F64, STR, STR, STR, BOOL, I64, STR],
        vec![
            ibc(Op::LoadK, 2, 0),
            i(Op::ToStrI32, 3, 0, 0),
            i(Op::Concat, 4, 2, 3),
            i(Op::Print, 4, 2, 0),
            i(Op::ToStrF64, 3, 1, 0),
            i(Op::Print, 3, 3, 0),
            ibc(Op::LoadK, 7, 1),
            i(Op::EqStr, 5, 4, 7),
            i(Op::Print, 7, 0, 0), // 8
            i(Op::ParseInt, 6, 3, 0),
            i(Op::Ret, 6, 0, 0),
        ],
    );
    let m = module_with(
        vec![f],
        vec![Const::Str("n=".into()), Const::Str("n=-4".into())],
        vec![],
        vec![],
    );
    let mut jit = make_jit(&m, JitOptions::default());
    let mut vm = TestVm::new(m, 64);
    // "2" parses.
    assert_eq!(
        run(&mut jit, &mut vm, 0, &[(-4i64) as u64, 2f64.to_bits()]),
        Ok((2, 0))
    );
    assert_eq!(vm.out, "n=-4\nn=-4");
    assert_eq!(vm.err, "2\n");
    // "2.5" does not: E-FORMAT at pc 9.
    let e = run(&mut jit, &mut vm, 0, &[7, 2.5f64.to_bits()]).unwrap_err();
    assert_eq!(e.trace, vec![TraceEntry { func: 0, pc: 9 }]);
    let err = e.error.unwrap();
    assert_eq!(
        (err.code, err.message.as_str()),
        ("E-FORMAT", "invalid integer '2.5'")
    );
}

#[test]
fn string_registers_live_in_the_window() {
    // A string collector scans register windows: every String register write must be there
    // before the next hook runs. r1 := "a" ++ "b" must be in stack[1] when print runs.
    let f = func(
        "T.f",
        0,
        None,
        vec![STR, STR, BOOL],
        vec![
            ibc(Op::LoadK, 0, 0),
            i(Op::Concat, 1, 0, 0),
            i(Op::EqStr, 2, 1, 0),
            i(Op::RetVoid, 0, 0, 0),
        ],
    );
    let m = module_with(vec![f], vec![Const::Str("ab".into())], vec![], vec![]);
    let mut jit = make_jit(&m, JitOptions::default());
    let mut vm = TestVm::new(m, 64);
    run(&mut jit, &mut vm, 0, &[]).unwrap();
    assert_eq!(vm.str(vm.stack[0]), Some("ab"));
    assert_eq!(vm.str(vm.stack[1]), Some("abab"));
}

#[test]
fn instances_fields_and_drops() {
    // p := new Point; p.x := a; p.y := b; r := p.x * p.y; drop p if own; then p.x fails.
    let point = Class {
        name: "T.Point".into(),
        fields: vec![
            Field {
                name: "x".into(),
                ty: F64,
            },
            Field {
                name: "y".into(),
                ty: F64,
            },
        ],
    };
    let obj = Type::Object(0);
    let f = func(
        "T.f",
        3,
        Some(F64),
        vec![F64, F64, BOOL, obj, F64, F64],
        vec![
            ibc(Op::NewObj, 3, 0),
            i(Op::SetField, 3, 0, 0),
            i(Op::SetField, 3, 1, 1),
            i(Op::GetField, 4, 3, 0),
            i(Op::GetField, 5, 3, 1),
            i(Op::MulF64, 4, 4, 5),
            i(Op::Drop, 3, 2, 0),
            i(Op::Ret, 4, 0, 0),
        ],
    );
    let m = module_with(vec![f], vec![], vec![], vec![point]);
    let mut jit = make_jit(&m, JitOptions::default());
    let mut vm = TestVm::new(m, 64);
    let (a, b) = (1.5f64.to_bits(), (-4.0f64).to_bits());
    assert_eq!(
        run(&mut jit, &mut vm, 0, &[a, b, 0]),
        Ok(((-6.0f64).to_bits(), 0))
    );
    assert!(vm.released.is_empty(), "no drop without the owns-flag");
    assert_eq!(
        run(&mut jit, &mut vm, 0, &[a, b, 1]),
        Ok(((-6.0f64).to_bits(), 0))
    );
    assert_eq!(vm.released.len(), 1);
    assert_eq!(vm.obj(vm.released[0]), Some(&Obj::Freed));
}

#[test]
fn object_arrays_and_returned_ownership() {
    // String[] of 2: a[1] := "x"; r := a[1]; retown a with flag.
    let f = func(
        "T.f",
        1,
        Some(Type::Array(Elem::Str)),
        vec![BOOL, Type::Array(Elem::Str), I64, STR, I64, STR],
        vec![
            ibc(Op::LoadI, 2, 2),
            i(Op::NewArr, 1, 2, 0),
            ibc(Op::LoadK, 3, 0),
            ibc(Op::LoadI, 4, 1),
            i(Op::ArrSetRef, 1, 4, 3),
            i(Op::ArrGetRef, 5, 1, 4),
            i(Op::RetOwn, 1, 0, 0),
        ],
    );
    let m = module_with(vec![f], vec![Const::Str("x".into())], vec![], vec![]);
    let mut jit = make_jit(&m, JitOptions::default());
    let mut vm = TestVm::new(m, 64);
    let (h, own) = run(&mut jit, &mut vm, 0, &[1]).unwrap();
    assert_eq!(own, 1);
    match vm.obj(h) {
        Some(Obj::Array(Elem::Str, cells)) => {
            assert_eq!(cells[0], 0);
            assert_eq!(vm.str(cells[1]), Some("x"));
        }
        other => panic!("not a String[]: {other:?}"),
    }
    assert_eq!(vm.str(vm.stack[5]), Some("x"));
    assert_eq!(run(&mut jit, &mut vm, 0, &[0]).map(|r| r.1), Ok(0));
}

#[test]
fn refused_functions_fail_compilation_only() {
    // A kernel is refused as a whole (kernels run on a device backend).
    let mut k = func("T.k", 0, None, vec![], vec![i(Op::RetVoid, 0, 0, 0)]);
    k.kind = cajeta_bytecode::FnKind::Kernel;
    let ok = func("T.g", 0, None, vec![], vec![i(Op::RetVoid, 0, 0, 0)]);
    let m = module(vec![k, ok]);
    let mut jit = make_jit(&m, JitOptions::default());
    let e = jit.compile(0).unwrap_err();
    assert_eq!(e.func, Some(0));
    assert!(jit.compiled(0).is_none());
    // The JIT stays usable.
    let c = jit.compile(1).unwrap();
    assert!(c.code_size > 0);
    assert_eq!(jit.compile(99).unwrap_err().func, Some(99));
}

#[test]
fn xpu_instructions_run_through_the_hook_on_the_window() {
    // r1 := stream.current (the hook writes XPU_RESULT to r[a]); r2, computed before, need
    // not go to the window (the hook reads no operand) but survives the hook; then both go
    // to statics.
    let f = func(
        "T.f",
        1,
        None,
        vec![F64, Type::Stream, F64],
        vec![
            i(Op::AddF64, 2, 0, 0),
            i(Op::StreamCurrent, 1, 0, 0),
            ibc(Op::SetStatic, 1, 0),
            ibc(Op::SetStatic, 2, 1),
            i(Op::RetVoid, 0, 0, 0),
        ],
    );
    let m = module_with(vec![f], vec![], vec![Type::Stream, F64], vec![]);
    let mut jit = make_jit(&m, JitOptions::default());
    let mut vm = TestVm::new(m, 64);
    assert_eq!(run(&mut jit, &mut vm, 0, &[1.25f64.to_bits()]), Ok((0, 0)));
    assert_eq!(vm.xpu_calls.len(), 1);
    let (ins, window) = &vm.xpu_calls[0];
    assert_eq!(*ins, [Op::StreamCurrent as u32, 1, 0, 0]);
    assert_eq!(window[0], 1.25f64.to_bits(), "the parameter's cell");
    assert_eq!(vm.statics[0], XPU_RESULT, "the hook's result is read back");
    assert_eq!(
        vm.statics[1],
        2.5f64.to_bits(),
        "other registers survive the hook"
    );
}

#[test]
fn an_xpu_instructions_operands_go_to_the_window() {
    // r1 := stream.current; r2 := r1 (a copy only compiled code holds); stream.sync r2 reads
    // r2 from the window.
    let f = func(
        "T.f",
        0,
        None,
        vec![F64, Type::Stream, Type::Stream],
        vec![
            i(Op::StreamCurrent, 1, 0, 0),
            i(Op::Mov, 2, 1, 0),
            i(Op::StreamSync, 2, 0, 0),
            i(Op::RetVoid, 0, 0, 0),
        ],
    );
    let m = module_with(vec![f], vec![], vec![], vec![]);
    let mut jit = make_jit(&m, JitOptions::default());
    let mut vm = TestVm::new(m, 64);
    assert_eq!(run(&mut jit, &mut vm, 0, &[]), Ok((0, 0)));
    assert_eq!(vm.xpu_calls.len(), 2);
    let (ins, window) = &vm.xpu_calls[1];
    assert_eq!(*ins, [Op::StreamSync as u32, 2, 0, 0]);
    assert_eq!(window[2], XPU_RESULT, "the operand is in the window");
}

#[test]
fn string_lengths_clock_and_exit() {
    // r2 := count(s); r3 := size(s); r4 := nanoTime; r5 := nanoTime; exit(r2 * 1000 + r3)
    // when the clock did not go backwards, else return.
    let f = func(
        "T.f",
        1,
        Some(I64),
        vec![STR, BOOL, I64, I64, I64, I64, I32, I64],
        vec![
            i(Op::StrCount, 2, 0, 0),
            i(Op::StrSize, 3, 0, 0),
            i(Op::SysTime, 4, 1, 0),
            i(Op::SysTime, 5, 1, 0),
            i(Op::LeI64, 1, 4, 5),
            ibc(Op::JmpIfNot, 1, 13),
            ibc(Op::LoadI, 7, 1000),
            i(Op::MulI64, 7, 2, 7),
            i(Op::AddI64, 7, 7, 3),
            i(Op::WrapI32, 6, 7, 0),
            i(Op::SysExit, 6, 0, 0), // 10
            i(Op::Print, 0, 0, 0),   // unreachable
            i(Op::Ret, 2, 0, 0),
            i(Op::Ret, 4, 0, 0), // 13
        ],
    );
    let m = module(vec![f]);
    let mut jit = make_jit(&m, JitOptions::default());
    let mut vm = TestVm::new(m, 64);
    let s = vm.alloc(Obj::Str("h\u{e9}!".into()));
    let e = run(&mut jit, &mut vm, 0, &[s]).unwrap_err();
    assert_eq!(e.status, Status::Exit);
    assert_eq!(e.trace, vec![TraceEntry { func: 0, pc: 10 }]);
    assert!(vm.out.is_empty());
    // The exit status is (3 * 1000 + 4) & 0xFF, in `ret`.
    assert_eq!(vm.last_ret, (3 * 1000 + 4) & 0xff);
    let e = run(&mut jit, &mut vm, 0, &[0]).unwrap_err();
    assert_eq!(e.trace, vec![TraceEntry { func: 0, pc: 0 }]);
    assert_eq!(e.error.unwrap().code, "E-NULL");

    // currentTimeMillis is after 2020.
    let g = func(
        "T.g",
        0,
        Some(I64),
        vec![I64],
        vec![i(Op::SysTime, 0, 0, 0), i(Op::Ret, 0, 0, 0)],
    );
    let m = module(vec![g]);
    let mut jit = make_jit(&m, JitOptions::default());
    let mut vm = TestVm::new(m, 64);
    let (ms, _) = run(&mut jit, &mut vm, 0, &[]).unwrap();
    assert!(ms > 1_577_836_800_000, "{ms}");
}
