//! Calls, recursion, strings, printing, arrays, objects, statics, ownership bits, traces and
//! the program-level entry/exit rules, on hand-assembled modules.

mod common;

use std::io::BufWriter;
use std::sync::Arc;

use cajeta_bytecode::{Const, Elem, LineEntry, Op, Scalar, Type};
use cajeta_vm::{Capture, Value, Vm};
use common::*;

/// `int32 fib(int32 n) { if (n < 2) return n; return fib(n - 1) + fib(n - 2); }` as function
/// `idx`.
fn fib(idx: u16) -> cajeta_bytecode::Function {
    func(
        "demo.Main.fib",
        1,
        Some(I32),
        vec![I32, BOOL, I32, I32, I32],
        vec![
            ibc(Op::LoadI, 2, 2),
            i(Op::LtI32, 1, 0, 2),
            ibc(Op::JmpIfNot, 1, 4),
            i(Op::Ret, 0, 0, 0),
            i(Op::AddImmI32, 3, 0, (-1i16) as u16),
            i(Op::Call, 3, 3, idx),
            i(Op::AddImmI32, 4, 0, (-2i16) as u16),
            i(Op::Call, 4, 4, idx),
            i(Op::AddI32, 3, 3, 4),
            i(Op::Ret, 3, 0, 0),
        ],
    )
}

#[test]
fn recursive_fib() {
    let m = module(vec![fib(0)]);
    let mut vm = new_vm(m);
    for (n, want) in [(0, 0), (1, 1), (2, 1), (10, 55), (20, 6765), (25, 75025)] {
        assert_eq!(
            vm.call_index(0, &[Value::I32(n)]).unwrap(),
            Some(Value::I32(want)),
            "fib({n})"
        );
    }
}

/// `int64 deep(int64 n) { if (n == 0) return 0; return deep(n - 1) + 1; }`
fn deep() -> cajeta_bytecode::Function {
    func(
        "demo.Main.deep",
        1,
        Some(I64),
        vec![I64, I64, BOOL, I64],
        vec![
            ibc(Op::LoadI, 1, 0),
            i(Op::EqI64, 2, 0, 1),
            ibc(Op::JmpIfNot, 2, 4),
            i(Op::Ret, 1, 0, 0),
            i(Op::AddImmI64, 3, 0, (-1i16) as u16),
            i(Op::Call, 3, 3, 0),
            i(Op::AddImmI64, 3, 3, 1),
            i(Op::Ret, 3, 0, 0),
        ],
    )
}

#[test]
fn deep_recursion_is_allowed_to_the_limit() {
    let mut vm = new_vm(module(vec![deep()]));
    // LANGUAGE §5.4: at least 10 000 frames; the default limit is far above.
    assert_eq!(
        vm.call_index(0, &[Value::I64(50_000)]).unwrap(),
        Some(Value::I64(50_000))
    );
    assert_eq!(
        vm.call_index(0, &[Value::I64(cajeta_vm::DEFAULT_MAX_DEPTH as i64 - 1)])
            .unwrap(),
        Some(Value::I64(cajeta_vm::DEFAULT_MAX_DEPTH as i64 - 1))
    );
}

#[test]
fn the_register_stack_counts_towards_the_memory_limit() {
    // f() calls itself with its whole frame of 65 535 registers below the callee's window:
    // 512 KiB of register stack per level, so a 64 MiB limit stops it after about 128
    // levels, with E-MEMORY (not an abort in the allocator).
    let f = func(
        "demo.Main.f",
        0,
        None,
        vec![I64; 65535],
        vec![i(Op::Call, 0, 65535, 0), i(Op::RetVoid, 0, 0, 0)],
    );
    let mut vm = new_vm(module(vec![f]));
    vm.set_memory_limit(Some(64 << 20));
    let e = vm.call_index(0, &[]).unwrap_err();
    assert_eq!(e.code, "E-MEMORY", "{}", e.message);
    assert!(
        e.message.starts_with("memory limit exceeded"),
        "{}",
        e.message
    );
    assert_eq!(vm.heap_stats().live_objects, 0);
}

#[test]
fn an_embedders_call_window_counts_towards_the_memory_limit() {
    // The entry's own window (65 535 registers: 512 KiB) does not fit under a 256 KiB limit:
    // E-MEMORY before the call starts, and the VM stays usable for a small function.
    let big = func(
        "demo.Main.big",
        0,
        None,
        vec![I64; 65535],
        vec![i(Op::RetVoid, 0, 0, 0)],
    );
    let small = func(
        "demo.Main.small",
        0,
        None,
        vec![I64],
        vec![i(Op::RetVoid, 0, 0, 0)],
    );
    let mut vm = new_vm(module(vec![big, small]));
    vm.set_memory_limit(Some(256 << 10));
    let e = vm.call_index(0, &[]).unwrap_err();
    assert_eq!(e.code, "E-MEMORY", "{}", e.message);
    assert_eq!(vm.call_index(1, &[]).unwrap(), None);
}

#[test]
fn runaway_recursion_is_e_stack_not_a_crash() {
    let mut vm = new_vm(module(vec![deep()]));
    let e = vm.call_index(0, &[Value::I64(10_000_000)]).unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        ("E-STACK", "call depth limit exceeded")
    );
    assert_eq!(e.trace.len(), cajeta_vm::DEFAULT_MAX_DEPTH);
    assert_eq!(
        e.trace[0].line, 6,
        "innermost frame at the call that overflowed"
    );
    // The VM stays usable after an error.
    assert_eq!(
        vm.call_index(0, &[Value::I64(3)]).unwrap(),
        Some(Value::I64(3))
    );
    // A configurable limit.
    vm.set_max_depth(100);
    assert_eq!(
        vm.call_index(0, &[Value::I64(98)]).unwrap(),
        Some(Value::I64(98))
    );
    assert_eq!(
        vm.call_index(0, &[Value::I64(100)]).unwrap_err().code,
        "E-STACK"
    );
}

#[test]
fn call_windows_do_not_clobber_lower_registers() {
    // sum3(a, b, c) = a + b + c; caller keeps a value in r0 below the window at r1.
    let sum3 = func(
        "T.sum3",
        3,
        Some(I64),
        vec![I64, I64, I64, I64],
        vec![
            i(Op::AddI64, 3, 0, 1),
            i(Op::AddI64, 3, 3, 2),
            i(Op::Ret, 3, 0, 0),
        ],
    );
    let main = func(
        "T.main",
        0,
        Some(I64),
        vec![I64, I64, I64, I64],
        vec![
            ibc(Op::LoadI, 0, 1000),
            ibc(Op::LoadI, 1, 1),
            ibc(Op::LoadI, 2, 20),
            ibc(Op::LoadI, 3, 300),
            i(Op::Call, 1, 1, 0),
            i(Op::AddI64, 0, 0, 1),
            i(Op::Ret, 0, 0, 0),
        ],
    );
    assert_eq!(
        call(module(vec![sum3, main]), 1, &[]).0.unwrap(),
        Some(Value::I64(1321))
    );
}

#[test]
fn void_calls_and_return_ownership_bits() {
    let mut m = module(vec![]);
    let c = class(&mut m, "demo.Box", &[("v", I32)]);
    // 0: #Box make() { return heap Box(); }  (RetOwn with bit true)
    m.functions.push(func(
        "demo.Main.make",
        0,
        Some(Type::Object(c)),
        vec![Type::Object(c), BOOL],
        vec![
            ibc(Op::NewObj, 0, c),
            ibc(Op::LoadI, 1, 1),
            i(Op::RetOwn, 0, 1, 0),
        ],
    ));
    // 1: Box borrow(Box b) { return b; }
    m.functions.push(func(
        "demo.Main.borrow",
        1,
        Some(Type::Object(c)),
        vec![Type::Object(c)],
        vec![i(Op::Ret, 0, 0, 0)],
    ));
    // 2: void nothing() {}
    m.functions.push(func(
        "demo.Main.nothing",
        0,
        None,
        vec![],
        vec![i(Op::RetVoid, 0, 0, 0)],
    ));
    // 3: returns own(make) * 2 + own(borrow)
    m.functions.push(func(
        "demo.Main.main",
        0,
        Some(I32),
        vec![Type::Object(c), BOOL, Type::Object(c), BOOL, I32, I32],
        vec![
            i(Op::Call, 0, 0, 0),
            i(Op::TakeOwn, 1, 0, 0),
            i(Op::Mov, 2, 0, 0),
            i(Op::Call, 2, 2, 1),
            i(Op::TakeOwn, 3, 0, 0),
            i(Op::Call, 0, 6, 2), // void: result register ignored
            ibc(Op::LoadI, 4, 0),
            ibc(Op::JmpIfNot, 1, 9),
            ibc(Op::LoadI, 4, 2),
            ibc(Op::LoadI, 5, 0),
            ibc(Op::JmpIfNot, 3, 12),
            ibc(Op::LoadI, 5, 1),
            i(Op::AddI32, 4, 4, 5),
            i(Op::Drop, 0, 1, 0),
            i(Op::Ret, 4, 0, 0),
        ],
    ));
    let (mut vm, _, _) = vm(m);
    assert_eq!(vm.call_index(3, &[]).unwrap(), Some(Value::I32(2)));
    assert_eq!(
        vm.heap_stats().live_objects,
        0,
        "the owned result was dropped"
    );
}

#[test]
fn strings_conversions_and_printing() {
    let mut m = module(vec![]);
    let k_i = konst(&mut m, Const::Str("i=".into()));
    let k_01 = konst(&mut m, Const::Bits(0.1f64.to_bits()));
    let k_ab = konst(&mut m, Const::Str("ab".into()));
    let k_a = konst(&mut m, Const::Str("a".into()));
    let k_b = konst(&mut m, Const::Str("b".into()));
    let k_big = konst(&mut m, Const::Bits(u64::MAX));
    let regs = vec![
        STR, I32, STR, STR, F64, STR, STR, STR, STR, CHAR, U64, I8, BOOL, F32, STR, STR, BOOL,
    ];
    let code = vec![
        ibc(Op::LoadK, 0, k_i),
        ibc(Op::LoadI, 1, 42),
        i(Op::ToStrI32, 2, 1, 0),
        i(Op::Concat, 3, 0, 2),
        i(Op::Print, 3, 2, 0), // "i=42\n"
        ibc(Op::LoadK, 4, k_01),
        i(Op::ToStrF64, 5, 4, 0),
        i(Op::Print, 5, 0, 0), // "0.1"
        i(Op::FmtFixed, 6, 4, 3),
        i(Op::Print, 6, 2, 0), // "0.100\n"
        i(Op::LoadNull, 7, 0, 0),
        i(Op::Print, 7, 2, 0), // "null\n"
        i(Op::Concat, 8, 7, 0),
        i(Op::Print, 8, 2, 0), // "nulli=\n"
        ibc(Op::LoadI, 9, 0x1F600),
        i(Op::ToStrChar, 8, 9, 0),
        i(Op::Print, 8, 0, 0), // emoji
        ibc(Op::LoadI, 9, 0xD800),
        i(Op::ToStrChar, 8, 9, 0),
        i(Op::Print, 8, 2, 0), // U+FFFD
        ibc(Op::LoadK, 10, k_big),
        i(Op::ToStrU64, 8, 10, 0),
        i(Op::Print, 8, 2, 0), // 18446744073709551615
        ibc(Op::LoadI, 11, (-128i32) as u32),
        i(Op::ToStrI8, 8, 11, 0),
        i(Op::Print, 8, 2, 0), // -128
        ibc(Op::LoadI, 12, 1),
        i(Op::ToStrBool, 8, 12, 0),
        i(Op::Print, 8, 2, 0), // true
        i(Op::F64ToF32, 13, 4, 0),
        i(Op::ToStrF32, 8, 13, 0),
        i(Op::Print, 8, 2, 0), // 0.1 (float32 widened exactly, %g)
        ibc(Op::LoadK, 14, k_a),
        ibc(Op::LoadK, 15, k_b),
        i(Op::Concat, 14, 14, 15),
        ibc(Op::LoadK, 15, k_ab),
        i(Op::EqStr, 16, 14, 15),
        i(Op::ToStrBool, 8, 16, 0),
        i(Op::Print, 8, 3, 0), // stderr: "true\n" (contents equal)
        i(Op::EqRef, 16, 14, 15),
        i(Op::ToStrBool, 8, 16, 0),
        i(Op::Print, 8, 3, 0), // stderr: "false\n" (different objects)
        i(Op::EqStr, 16, 7, 7),
        i(Op::ToStrBool, 8, 16, 0),
        i(Op::Print, 8, 3, 0), // null == null
        i(Op::EqStr, 16, 7, 15),
        i(Op::ToStrBool, 8, 16, 0),
        i(Op::Print, 8, 3, 0), // null != "ab"
        i(Op::RetVoid, 0, 0, 0),
    ];
    m.functions
        .push(func("demo.Main.main", 0, None, regs, code));
    let (r, out, err) = call(m, 0, &[]);
    assert_eq!(r.unwrap(), None);
    assert_eq!(
        out,
        "i=42\n0.10.100\nnull\nnulli=\n😀\u{FFFD}\n18446744073709551615\n-128\ntrue\n0.1\n"
    );
    assert_eq!(err, "true\nfalse\ntrue\nfalse\n");
}

#[test]
fn stdout_is_flushed_before_stderr() {
    let mut m = module(vec![]);
    let k = konst(&mut m, Const::Str("x".into()));
    m.functions.push(func(
        "T.main",
        0,
        None,
        vec![STR],
        vec![
            ibc(Op::LoadK, 0, k),
            i(Op::Print, 0, 0, 0),
            i(Op::Print, 0, 1, 0),
            i(Op::Print, 0, 2, 0),
            i(Op::Print, 0, 3, 0),
            i(Op::RetVoid, 0, 0, 0),
        ],
    ));
    // One capture behind both sinks, stdout behind a BufWriter as in the real VM.
    let both = Capture::new();
    let mut vm = Vm::with_output(
        Arc::new(m),
        Box::new(BufWriter::new(both.clone())),
        both.sink(),
    );
    vm.call_index(0, &[]).unwrap();
    vm.flush();
    assert_eq!(both.text(), "xxx\nx\n");
}

#[test]
fn fixed_formatting_opcode() {
    let mut m = module(vec![]);
    let cases = [
        (-0.125f64, 2u16, "-0.12"),
        (2.5, 0, "2"),
        (253687315.46875, 6, "253687315.468750"),
        (-0.126, 2, "-0.13"),
    ];
    let mut code = vec![];
    for (x, n, _) in cases {
        let k = konst(&mut m, Const::Bits(x.to_bits()));
        code.push(ibc(Op::LoadK, 0, k));
        code.push(i(Op::FmtFixed, 1, 0, n));
        code.push(i(Op::Print, 1, 2, 0));
    }
    code.push(i(Op::RetVoid, 0, 0, 0));
    m.functions
        .push(func("T.main", 0, None, vec![F64, STR], code));
    let (_, out, _) = call(m, 0, &[]);
    let want: Vec<&str> = cases.iter().map(|c| c.2).collect();
    assert_eq!(out.lines().collect::<Vec<_>>(), want);
}

/// `void churn(int64 n) { for (i = 0; i < n; i++) String s = "" + i; }` as function `idx`.
fn churn() -> cajeta_bytecode::Function {
    func(
        "T.churn",
        1,
        None,
        vec![I64, I64, BOOL, STR],
        vec![
            ibc(Op::LoadI, 1, 0),
            i(Op::LtI64, 2, 1, 0),
            ibc(Op::JmpIfNot, 2, 6),
            i(Op::ToStrI64, 3, 1, 0),
            i(Op::AddImmI64, 1, 1, 1),
            ibc(Op::Jmp, 0, 1),
            i(Op::RetVoid, 0, 0, 0),
        ],
    )
}

#[test]
fn a_few_long_strings_trigger_a_collection() {
    // 200 strings of 2 MiB each, discarded at once: far fewer than the count that triggers a
    // collection, but 400 MiB in all, so their bytes must trigger it.
    let mut m = module(vec![]);
    let k = konst(&mut m, Const::Str("x".repeat(1 << 20)));
    m.functions.push(func(
        "T.main",
        0,
        None,
        vec![I64, I64, BOOL, STR, STR],
        vec![
            ibc(Op::LoadI, 0, 200),
            ibc(Op::LoadI, 1, 0),
            ibc(Op::LoadK, 3, k),
            i(Op::LtI64, 2, 1, 0),
            ibc(Op::JmpIfNot, 2, 8),
            i(Op::Concat, 4, 3, 3),
            i(Op::AddImmI64, 1, 1, 1),
            ibc(Op::Jmp, 0, 3),
            i(Op::RetVoid, 0, 0, 0),
        ],
    ));
    let (mut vm, _, _) = vm(m);
    vm.call_index(0, &[]).unwrap();
    let stats = vm.heap_stats();
    assert!(stats.collections > 0, "{stats:?}");
    let host = vm.memory_usage().host;
    assert!(host < 100 << 20, "{host} bytes of strings held: {stats:?}");
}

#[test]
fn printing_in_a_loop_does_not_leak_strings() {
    let mut m = module(vec![]);
    let k = konst(&mut m, Const::Str("i=".into()));
    let n = 300_000u32;
    m.functions.push(func(
        "T.main",
        0,
        None,
        vec![I64, I64, BOOL, STR, STR, STR],
        vec![
            ibc(Op::LoadI, 0, n),
            ibc(Op::LoadI, 1, 0),
            ibc(Op::LoadK, 3, k),
            i(Op::LtI64, 2, 1, 0),
            ibc(Op::JmpIfNot, 2, 10),
            i(Op::ToStrI64, 4, 1, 0),
            i(Op::Concat, 5, 3, 4),
            i(Op::Print, 5, 2, 0),
            i(Op::AddImmI64, 1, 1, 1),
            ibc(Op::Jmp, 0, 3),
            i(Op::RetVoid, 0, 0, 0),
        ],
    ));
    let (mut vm, out, _) = vm(m);
    vm.call_index(0, &[]).unwrap();
    let stats = vm.heap_stats();
    assert!(stats.collections > 0, "{stats:?}");
    assert!(stats.live_strings < 100_000, "strings leak: {stats:?}");
    assert_eq!(stats.allocs, 1 + 2 * n as u64);
    let text = out.text();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), n as usize);
    assert_eq!(lines[0], "i=0");
    assert_eq!(lines[123_456], "i=123456");
    assert_eq!(lines[n as usize - 1], format!("i={}", n - 1));
}

#[test]
fn collector_keeps_every_root() {
    let mut m = module(vec![churn()]);
    let c = class(&mut m, "demo.Named", &[("id", I32), ("name", STR)]);
    let s = stat(&mut m, "demo.Main.label", STR);
    let k = konst(&mut m, Const::Str("k".into()));
    let regs = vec![
        STR,
        I64,
        Type::Array(Elem::Str),
        I64,
        Type::Object(c),
        STR,
        STR,
        I64,
        STR,
    ];
    m.functions.push(func(
        "T.main",
        0,
        None,
        regs,
        vec![
            // r0 = "reg" + 1 (a frame root of the caller)
            ibc(Op::LoadI, 1, 1),
            i(Op::ToStrI64, 0, 1, 0),
            // static = "7"
            ibc(Op::LoadI, 1, 7),
            i(Op::ToStrI64, 5, 1, 0),
            i(Op::SetStatic, 5, s, 0),
            // arr = new String[2]; arr[1] = "8"
            ibc(Op::LoadI, 1, 2),
            i(Op::NewArr, 2, 1, 0),
            ibc(Op::LoadI, 3, 1),
            ibc(Op::LoadI, 1, 8),
            i(Op::ToStrI64, 5, 1, 0),
            i(Op::ArrSetRef, 2, 3, 5),
            // obj.name = "9"
            ibc(Op::NewObj, 4, c),
            ibc(Op::LoadI, 1, 9),
            i(Op::ToStrI64, 5, 1, 0),
            i(Op::SetField, 4, 1, 5),
            i(Op::LoadNull, 5, 0, 0),
            // 200k garbage strings in a callee (window at r7)
            ibc(Op::LoadI, 7, 200_000),
            i(Op::Call, 0, 7, 0),
            // print everything
            i(Op::Print, 0, 2, 0),
            i(Op::GetStatic, 6, s, 0),
            i(Op::Print, 6, 2, 0),
            i(Op::ArrGetRef, 6, 2, 3),
            i(Op::Print, 6, 2, 0),
            i(Op::GetField, 6, 4, 1),
            i(Op::Print, 6, 2, 0),
            ibc(Op::LoadK, 8, k),
            i(Op::Print, 8, 2, 0),
            i(Op::RetVoid, 0, 0, 0),
        ],
    ));
    let (mut vm, out, _) = vm(m);
    vm.call_index(1, &[]).unwrap();
    assert!(vm.heap_stats().collections >= 2, "{:?}", vm.heap_stats());
    assert_eq!(out.text(), "1\n7\n8\n9\nk\n");
}

#[test]
fn arrays_of_every_element_type() {
    let cases: &[(Type, Op, Op, Value)] = &[
        (BOOL, Op::ArrSetBool, Op::ArrGetBool, Value::Bool(true)),
        (CHAR, Op::ArrSetChar, Op::ArrGetChar, Value::Char(0x1F600)),
        (I8, Op::ArrSetI8, Op::ArrGetI8, Value::I8(-5)),
        (U8, Op::ArrSetU8, Op::ArrGetU8, Value::U8(250)),
        (I16, Op::ArrSetI16, Op::ArrGetI16, Value::I16(-30000)),
        (U16, Op::ArrSetU16, Op::ArrGetU16, Value::U16(65000)),
        (
            I32,
            Op::ArrSetI32,
            Op::ArrGetI32,
            Value::I32(-2_000_000_000),
        ),
        (U32, Op::ArrSetU32, Op::ArrGetU32, Value::U32(4_000_000_000)),
        (I64, Op::ArrSetI64, Op::ArrGetI64, Value::I64(i64::MIN)),
        (U64, Op::ArrSetU64, Op::ArrGetU64, Value::U64(u64::MAX)),
        (F32, Op::ArrSetF32, Op::ArrGetF32, Value::F32(-1.5)),
        (F64, Op::ArrSetF64, Op::ArrGetF64, Value::F64(1e300)),
        // float16/bfloat16 cross the API as float32 (exactly representable values here).
        (
            Type::Scalar(Scalar::F16),
            Op::ArrSetF16,
            Op::ArrGetF16,
            Value::F32(-1.5),
        ),
        (
            Type::Scalar(Scalar::BF16),
            Op::ArrSetBF16,
            Op::ArrGetBF16,
            Value::F32(-0.375),
        ),
    ];
    for (ty, set, get, v) in cases {
        let elem = Elem::Scalar(ty.scalar().unwrap());
        // (T x) -> T: a = new T[3]; a[2] = x; y = a[2]; z = a[0]; return y (z must be zero)
        let f = func(
            "T.f",
            1,
            Some(*ty),
            vec![*ty, Type::Array(elem), I64, *ty, *ty, I64],
            vec![
                ibc(Op::LoadI, 2, 3),
                i(Op::NewArr, 1, 2, 0),
                ibc(Op::LoadI, 2, 2),
                i(*set, 1, 2, 0),
                i(*get, 3, 1, 2),
                ibc(Op::LoadI, 2, 0),
                i(*get, 4, 1, 2),
                i(Op::ArrLen, 5, 1, 0),
                i(Op::Ret, 3, 0, 0),
            ],
        );
        let (r, _, _) = call(module(vec![f]), 0, std::slice::from_ref(v));
        assert_eq!(r.unwrap(), Some(v.clone()), "{ty}");
    }
}

#[test]
fn array_errors_have_exact_messages() {
    // f(int64 len, int64 idx): a = new float32[len]; return a[idx] (as float32)
    let f = func(
        "demo.Main.fill",
        2,
        Some(F32),
        vec![
            I64,
            I64,
            Type::Array(Elem::Scalar(cajeta_bytecode::Scalar::F32)),
            F32,
        ],
        vec![
            i(Op::NewArr, 2, 0, 0),
            i(Op::ArrGetF32, 3, 2, 1),
            i(Op::Ret, 3, 0, 0),
        ],
    );
    let mut vm = new_vm(module(vec![f]));
    assert_eq!(
        vm.call_index(0, &[Value::I64(4), Value::I64(3)]).unwrap(),
        Some(Value::F32(0.0))
    );
    let e = vm
        .call_index(0, &[Value::I64(8), Value::I64(8)])
        .unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        ("E-BOUNDS", "index 8 out of bounds for length 8")
    );
    let e = vm
        .call_index(0, &[Value::I64(4), Value::I64(-1)])
        .unwrap_err();
    assert_eq!(e.message, "index -1 out of bounds for length 4");
    let e = vm
        .call_index(0, &[Value::I64(-5), Value::I64(0)])
        .unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        ("E-SIZE", "invalid array length -5")
    );
    let e = vm
        .call_index(0, &[Value::I64(i64::MAX), Value::I64(0)])
        .unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        ("E-SIZE", "invalid array length 9223372036854775807")
    );
    // A large float32 array is cheap (compact, lazily zeroed).
    assert_eq!(
        vm.call_index(0, &[Value::I64(1 << 24), Value::I64((1 << 24) - 1)])
            .unwrap(),
        Some(Value::F32(0.0))
    );
    // Nothing drops these arrays, but the failed calls released theirs.
    assert_eq!(vm.heap_stats().live_objects, 2);
}

#[test]
fn null_and_dropped_references() {
    let mut m = module(vec![]);
    let c = class(&mut m, "demo.Point", &[("x", I32), ("y", I32)]);
    let arr = Type::Array(Elem::Scalar(cajeta_bytecode::Scalar::I32));
    // 0: field read through null
    m.functions.push(func(
        "demo.Main.a",
        0,
        Some(I32),
        vec![Type::Object(c), I32],
        vec![
            i(Op::LoadNull, 0, 0, 0),
            i(Op::GetField, 1, 0, 1),
            i(Op::Ret, 1, 0, 0),
        ],
    ));
    // 1: set/get, drop (owns = true), then read
    m.functions.push(func(
        "demo.Main.b",
        0,
        Some(I32),
        vec![Type::Object(c), I32, BOOL, I32],
        vec![
            ibc(Op::NewObj, 0, c),
            ibc(Op::LoadI, 1, 5),
            i(Op::SetField, 0, 0, 1),
            i(Op::GetField, 3, 0, 0),
            ibc(Op::LoadI, 2, 0),
            i(Op::Drop, 0, 2, 0), // borrowed: nothing happens
            i(Op::GetField, 3, 0, 0),
            ibc(Op::LoadI, 2, 1),
            i(Op::Drop, 0, 2, 0),
            i(Op::Drop, 0, 2, 0), // already released: nothing
            i(Op::GetField, 3, 0, 0),
            i(Op::Ret, 3, 0, 0),
        ],
    ));
    // 2: index into a null array; 3: count() of null; 4: write to a dropped array; 5: store
    // through null
    m.functions.push(func(
        "demo.Main.c",
        0,
        Some(I32),
        vec![arr, I64, I32],
        vec![
            i(Op::LoadNull, 0, 0, 0),
            ibc(Op::LoadI, 1, 0),
            i(Op::ArrGetI32, 2, 0, 1),
            i(Op::Ret, 2, 0, 0),
        ],
    ));
    m.functions.push(func(
        "demo.Main.d",
        0,
        Some(I64),
        vec![arr, I64],
        vec![
            i(Op::LoadNull, 0, 0, 0),
            i(Op::ArrLen, 1, 0, 0),
            i(Op::Ret, 1, 0, 0),
        ],
    ));
    m.functions.push(func(
        "demo.Main.e",
        0,
        None,
        vec![arr, I64, BOOL, I32],
        vec![
            ibc(Op::LoadI, 1, 4),
            i(Op::NewArr, 0, 1, 0),
            ibc(Op::LoadI, 2, 1),
            i(Op::Drop, 0, 2, 0),
            ibc(Op::LoadI, 1, 0),
            ibc(Op::LoadI, 3, 0),
            i(Op::ArrSetI32, 0, 1, 3),
            i(Op::RetVoid, 0, 0, 0),
        ],
    ));
    m.functions.push(func(
        "demo.Main.f",
        0,
        None,
        vec![Type::Object(c), I32],
        vec![
            i(Op::LoadNull, 0, 0, 0),
            ibc(Op::LoadI, 1, 0),
            i(Op::SetField, 0, 0, 1),
            i(Op::RetVoid, 0, 0, 0),
        ],
    ));
    let (mut vm, _, _) = vm(m);
    let e = vm.call_index(0, &[]).unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        ("E-NULL", "null reference: field 'y' of null")
    );
    let e = vm.call_index(1, &[]).unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        ("E-DROPPED", "use of dropped Point object")
    );
    assert_eq!(e.trace[0].line, 11, "the failing getfield");
    assert_eq!(vm.heap_stats().live_objects, 0);
    let e = vm.call_index(2, &[]).unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        ("E-NULL", "null reference: index into null array")
    );
    let e = vm.call_index(3, &[]).unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        ("E-NULL", "null reference: count() of null array")
    );
    let e = vm.call_index(4, &[]).unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        ("E-DROPPED", "use of dropped int32[] object")
    );
    let e = vm.call_index(5, &[]).unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        ("E-NULL", "null reference: field 'x' of null")
    );
}

#[test]
fn errors_release_the_failed_calls_objects() {
    let mut m = module(vec![]);
    let c = class(&mut m, "demo.P", &[("x", I32)]);
    let s = stat(&mut m, "demo.Main.keep", Type::Object(c));
    // init: static keep = new P (survives)
    m.functions.push(func(
        "demo.Main.<clinit>",
        0,
        None,
        vec![Type::Object(c)],
        vec![
            ibc(Op::NewObj, 0, c),
            i(Op::SetStatic, 0, s, 0),
            i(Op::RetVoid, 0, 0, 0),
        ],
    ));
    m.init.push(0);
    // main: three objects, then 1 / 0
    m.functions.push(func(
        "demo.Main.main",
        0,
        None,
        vec![Type::Object(c), I32],
        vec![
            ibc(Op::NewObj, 0, c),
            ibc(Op::NewObj, 0, c),
            ibc(Op::NewObj, 0, c),
            ibc(Op::LoadI, 1, 0),
            i(Op::DivI32, 1, 1, 1),
            i(Op::RetVoid, 0, 0, 0),
        ],
    ));
    let (mut vm, _, _) = vm(m);
    vm.run_static_init().unwrap();
    assert_eq!(vm.heap_stats().live_objects, 1);
    assert_eq!(vm.call_index(1, &[]).unwrap_err().code, "E-DIVZERO");
    assert_eq!(
        vm.heap_stats().live_objects,
        1,
        "the static's object stays, the call's go"
    );
}

#[test]
fn statics_and_static_init() {
    let mut m = module(vec![]);
    let s = stat(&mut m, "demo.Main.counter", I32);
    let t = stat(&mut m, "demo.Main.untouched", F64);
    m.functions.push(func(
        "demo.Main.<clinit>",
        0,
        None,
        vec![I32],
        vec![
            ibc(Op::LoadI, 0, 41),
            i(Op::SetStatic, 0, s, 0),
            i(Op::RetVoid, 0, 0, 0),
        ],
    ));
    m.init.push(0);
    m.functions.push(func(
        "demo.Main.main",
        0,
        Some(I32),
        vec![I32, F64, I32],
        vec![
            i(Op::GetStatic, 0, s, 0),
            i(Op::AddImmI32, 0, 0, 1),
            i(Op::SetStatic, 0, s, 0),
            i(Op::GetStatic, 2, s, 0),
            i(Op::GetStatic, 1, t, 0),
            i(Op::F64ToI32, 0, 1, 0),
            i(Op::AddI32, 2, 2, 0),
            i(Op::Ret, 2, 0, 0),
        ],
    ));
    assert_eq!(run(m, 1, &[]).0, 42);
}

#[test]
fn trace_format_matches_language_10_3() {
    let mut m = module(vec![]);
    let arr = Type::Array(Elem::Scalar(cajeta_bytecode::Scalar::I32));
    let mut fill = func(
        "demo.Main.fill",
        1,
        None,
        vec![arr, I64, I32],
        vec![
            ibc(Op::LoadI, 1, 8),
            ibc(Op::LoadI, 2, 1),
            i(Op::ArrSetI32, 0, 1, 2),
            i(Op::RetVoid, 0, 0, 0),
        ],
    );
    fill.lines = vec![
        LineEntry {
            pc: 0,
            line: 11,
            col: 5,
        },
        LineEntry {
            pc: 2,
            line: 12,
            col: 9,
        },
    ];
    m.functions.push(fill);
    let mut run_f = func(
        "demo.Main.run",
        0,
        None,
        vec![I64, arr],
        vec![
            ibc(Op::LoadI, 0, 8),
            i(Op::NewArr, 1, 0, 0),
            i(Op::Call, 0, 1, 0),
            i(Op::RetVoid, 0, 0, 0),
        ],
    );
    run_f.lines = vec![
        LineEntry {
            pc: 0,
            line: 19,
            col: 5,
        },
        LineEntry {
            pc: 2,
            line: 20,
            col: 5,
        },
    ];
    m.functions.push(run_f);
    let (status, out, err) = run(m, 1, &[]);
    assert_eq!(status, 70);
    assert_eq!(out, "");
    assert_eq!(
        err,
        "cajeta: runtime error: E-BOUNDS: index 8 out of bounds for length 8\n\
         \x20 at demo.Main.fill (Main.cajeta:12:9)\n\
         \x20 at demo.Main.run (Main.cajeta:20:5)\n"
    );
}

/// A module whose function 0 is `main` returning `ty` computed by `code` (value in r0).
fn returning(
    ty: Option<Type>,
    consts: Vec<Const>,
    regs: Vec<Type>,
    code: Vec<cajeta_bytecode::Instr>,
) -> cajeta_bytecode::Module {
    let mut m = module(vec![func("demo.Main.main", 0, ty, regs, code)]);
    m.consts = consts;
    m
}

#[test]
fn program_exit_statuses_and_result_line() {
    let ret0 = i(Op::Ret, 0, 0, 0);
    let (s, out, _) = run(
        returning(None, vec![], vec![], vec![i(Op::RetVoid, 0, 0, 0)]),
        0,
        &[],
    );
    assert_eq!((s, out.as_str()), (0, ""));
    let (s, out, _) = run(
        returning(
            Some(I32),
            vec![],
            vec![I32],
            vec![ibc(Op::LoadI, 0, 777), ret0],
        ),
        0,
        &[],
    );
    assert_eq!((s, out.as_str()), (9, ""));
    let (s, _, _) = run(
        returning(
            Some(I8),
            vec![],
            vec![I8],
            vec![ibc(Op::LoadI, 0, u32::MAX), ret0],
        ),
        0,
        &[],
    );
    assert_eq!(s, 255);
    let (s, _, _) = run(
        returning(
            Some(U64),
            vec![Const::Bits(0x1_0000_0101)],
            vec![U64],
            vec![ibc(Op::LoadK, 0, 0), ret0],
        ),
        0,
        &[],
    );
    assert_eq!(s, 1);
    let (s, out, _) = run(
        returning(
            Some(F64),
            vec![Const::Bits(2.5f64.to_bits())],
            vec![F64],
            vec![ibc(Op::LoadK, 0, 0), ret0],
        ),
        0,
        &[],
    );
    assert_eq!((s, out.as_str()), (0, "result: 2.5\n"));
    let (s, out, _) = run(
        returning(
            Some(F32),
            vec![Const::Bits(16777216f32.to_bits() as u64)],
            vec![F32],
            vec![ibc(Op::LoadK, 0, 0), ret0],
        ),
        0,
        &[],
    );
    assert_eq!((s, out.as_str()), (0, "result: 1.67772e+07\n"));
    let (s, out, _) = run(
        returning(
            Some(BOOL),
            vec![],
            vec![BOOL],
            vec![ibc(Op::LoadI, 0, 1), ret0],
        ),
        0,
        &[],
    );
    assert_eq!((s, out.as_str()), (0, "result: true\n"));
    let (s, out, _) = run(
        returning(
            Some(CHAR),
            vec![],
            vec![CHAR],
            vec![ibc(Op::LoadI, 0, 65), ret0],
        ),
        0,
        &[],
    );
    assert_eq!((s, out.as_str()), (0, "result: A\n"));
    let (s, out, _) = run(
        returning(
            Some(STR),
            vec![Const::Str("hé".into())],
            vec![STR],
            vec![ibc(Op::LoadK, 0, 0), ret0],
        ),
        0,
        &[],
    );
    assert_eq!((s, out.as_str()), (0, "result: hé\n"));
    let (s, out, _) = run(
        returning(
            Some(STR),
            vec![],
            vec![STR],
            vec![i(Op::LoadNull, 0, 0, 0), ret0],
        ),
        0,
        &[],
    );
    assert_eq!((s, out.as_str()), (0, "result: null\n"));
    // A runtime error: 70, the §10.3 text on stderr, stdout flushed first.
    let (s, out, err) = run(
        returning(
            Some(I32),
            vec![Const::Str("before".into())],
            vec![I32, STR],
            vec![
                ibc(Op::LoadK, 1, 0),
                i(Op::Print, 1, 2, 0),
                ibc(Op::LoadI, 0, 0),
                i(Op::RemI32, 0, 0, 0),
                ret0,
            ],
        ),
        0,
        &[],
    );
    assert_eq!((s, out.as_str()), (70, "before\n"));
    assert_eq!(err, "cajeta: runtime error: E-DIVZERO: integer division by zero\n  at demo.Main.main (Main.cajeta:4:1)\n");
}

#[test]
fn entry_receives_command_line_words() {
    let sarr = Type::Array(Elem::Str);
    // int64 main(String[] args) { println(args[1]); return args.count(); }
    let m = module(vec![func(
        "demo.Main.main",
        1,
        Some(I64),
        vec![sarr, I64, STR],
        vec![
            ibc(Op::LoadI, 1, 1),
            i(Op::ArrGetRef, 2, 0, 1),
            i(Op::Print, 2, 2, 0),
            i(Op::ArrLen, 1, 0, 0),
            i(Op::Ret, 1, 0, 0),
        ],
    )]);
    let (s, out, _) = run(m, 0, &["a", "bé", "c"]);
    assert_eq!((s, out.as_str()), (3, "bé\n"));
}

#[test]
fn embedding_api_rejects_bad_calls() {
    let m = module(vec![fib(0)]);
    let mut vm = new_vm(m);
    assert_eq!(vm.call_index(7, &[]).unwrap_err().code, "E-CALL");
    assert_eq!(vm.call_index(0, &[]).unwrap_err().code, "E-CALL");
    assert_eq!(
        vm.call_index(0, &[Value::I64(3)]).unwrap_err().code,
        "E-CALL"
    );
    assert_eq!(
        vm.call_index(0, &[Value::I32(12)]).unwrap(),
        Some(Value::I32(144))
    );
}

#[test]
fn strings_cross_the_embedding_boundary() {
    // String greet(String who) { return "hi " + who; }
    let mut m = module(vec![]);
    let k = konst(&mut m, Const::Str("hi ".into()));
    m.functions.push(func(
        "T.greet",
        1,
        Some(STR),
        vec![STR, STR],
        vec![
            ibc(Op::LoadK, 1, k),
            i(Op::Concat, 1, 1, 0),
            i(Op::Ret, 1, 0, 0),
        ],
    ));
    let mut vm = new_vm(m);
    assert_eq!(
        vm.call_index(0, &[Value::Str(Some("bob".into()))]).unwrap(),
        Some(Value::Str(Some("hi bob".into())))
    );
    assert_eq!(
        vm.call_index(0, &[Value::Str(None)]).unwrap(),
        Some(Value::Str(Some("hi null".into())))
    );
}
