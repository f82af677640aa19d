//! Integer, float and conversion semantics at every width, checked against Rust's own typed
//! arithmetic (which has the LANGUAGE §3/§4 semantics: wrapping, truncating division,
//! saturating float → int) over edge values.

mod common;

use cajeta_bytecode::{MathFn, Op, Type};
use cajeta_vm::{Value, Vm};
use common::*;

/// A VM whose function 0 is `r2 := op(r0, r1); ret r2` (or unary `r1 := op(r0)`).
fn op_vm(o: Op, arg: Type, arg2: Option<Type>, out: Type) -> Vm {
    let f = match arg2 {
        Some(t2) => func(
            "T.f",
            2,
            Some(out),
            vec![arg, t2, out],
            vec![i(o, 2, 0, 1), i(Op::Ret, 2, 0, 0)],
        ),
        None => func(
            "T.f",
            1,
            Some(out),
            vec![arg, out],
            vec![i(o, 1, 0, 0), i(Op::Ret, 1, 0, 0)],
        ),
    };
    new_vm(module(vec![f]))
}

type Outcome = Result<Value, &'static str>;
type BinF64 = fn(f64, f64) -> Value;
type BinF32 = fn(f32, f32) -> Value;
type FromInt = fn(i128) -> Value;
type FromF64 = fn(f64) -> Value;

fn check_bin<T: Copy + std::fmt::Debug>(
    mnemonic: &str,
    ty: Type,
    out: Type,
    vals: &[T],
    wrap: impl Fn(T) -> Value,
    reference: impl Fn(T, T) -> Outcome,
) {
    let mut vm = op_vm(op(mnemonic), ty, Some(ty), out);
    for &x in vals {
        for &y in vals {
            let got = vm.call_index(0, &[wrap(x), wrap(y)]);
            match (reference(x, y), got) {
                (Ok(want), Ok(Some(g))) => assert_eq!(g, want, "{mnemonic} {x:?} {y:?}"),
                (Err(code), Err(e)) => assert_eq!(e.code, code, "{mnemonic} {x:?} {y:?}"),
                (want, got) => panic!("{mnemonic} {x:?} {y:?}: want {want:?}, got {got:?}"),
            }
        }
    }
}

fn check_un<T: Copy + std::fmt::Debug>(
    mnemonic: &str,
    ty: Type,
    out: Type,
    vals: &[T],
    wrap: impl Fn(T) -> Value,
    reference: impl Fn(T) -> Value,
) {
    let mut vm = op_vm(op(mnemonic), ty, None, out);
    for &x in vals {
        let got = vm.call_index(0, &[wrap(x)]).unwrap().unwrap();
        assert_eq!(got, reference(x), "{mnemonic} {x:?}");
    }
}

macro_rules! int_suite {
    ($name:ident, $t:ty, $ut:ty, $V:ident, $TY:expr, $sfx:literal, signed: $signed:tt, $vals:expr) => {
        #[test]
        fn $name() {
            let vals: &[$t] = &$vals;
            let w = |x: $t| Value::$V(x);
            let s = |m: &str| format!("{m}.{}", $sfx);
            check_bin(&s("add"), $TY, $TY, vals, w, |x, y| Ok(Value::$V(x.wrapping_add(y))));
            check_bin(&s("sub"), $TY, $TY, vals, w, |x, y| Ok(Value::$V(x.wrapping_sub(y))));
            check_bin(&s("mul"), $TY, $TY, vals, w, |x, y| Ok(Value::$V(x.wrapping_mul(y))));
            check_bin(&s("div"), $TY, $TY, vals, w, |x, y| {
                if y == 0 {
                    Err("E-DIVZERO")
                } else {
                    x.checked_div(y).map(Value::$V).ok_or("E-OVERFLOW")
                }
            });
            check_bin(&s("rem"), $TY, $TY, vals, w, |x, y| {
                if y == 0 { Err("E-DIVZERO") } else { Ok(Value::$V(x.wrapping_rem(y))) }
            });
            check_bin(&s("shl"), $TY, $TY, vals, w, |x, y| Ok(Value::$V(x.wrapping_shl(y as u32))));
            check_bin(&s("shr"), $TY, $TY, vals, w, |x, y| Ok(Value::$V(x.wrapping_shr(y as u32))));
            check_bin(&s("ushr"), $TY, $TY, vals, w, |x, y| {
                Ok(Value::$V((x as $ut).wrapping_shr(y as u32) as $t))
            });
            check_bin(&s("min"), $TY, $TY, vals, w, |x, y| Ok(Value::$V(x.min(y))));
            check_bin(&s("max"), $TY, $TY, vals, w, |x, y| Ok(Value::$V(x.max(y))));
            check_bin(&s("and"), $TY, $TY, vals, w, |x, y| Ok(Value::$V(x & y)));
            check_bin(&s("or"), $TY, $TY, vals, w, |x, y| Ok(Value::$V(x | y)));
            check_bin(&s("xor"), $TY, $TY, vals, w, |x, y| Ok(Value::$V(x ^ y)));
            check_bin(&s("eq"), $TY, BOOL, vals, w, |x, y| Ok(Value::Bool(x == y)));
            check_bin(&s("ne"), $TY, BOOL, vals, w, |x, y| Ok(Value::Bool(x != y)));
            check_bin(&s("lt"), $TY, BOOL, vals, w, |x, y| Ok(Value::Bool(x < y)));
            check_bin(&s("le"), $TY, BOOL, vals, w, |x, y| Ok(Value::Bool(x <= y)));
            check_un(&s("neg"), $TY, $TY, vals, w, |x| Value::$V(x.wrapping_neg()));
            check_un(&s("not"), $TY, $TY, vals, w, |x| Value::$V(!x));
            int_suite!(@abs $signed, $t, $V, $TY, vals, w, s);
        }
    };
    (@abs true, $t:ty, $V:ident, $TY:expr, $vals:expr, $w:expr, $s:expr) => {
        check_un(&$s("abs"), $TY, $TY, $vals, $w, |x: $t| Value::$V(x.wrapping_abs()));
    };
    (@abs false, $t:ty, $V:ident, $TY:expr, $vals:expr, $w:expr, $s:expr) => {};
}

int_suite!(ints_i8, i8, u8, I8, I8, "i8", signed: true, [0, 1, -1, 2, -2, 3, 7, 8, 9, 55, -77, 100, 127, -128, -127]);
int_suite!(ints_u8, u8, u8, U8, U8, "u8", signed: false, [0, 1, 2, 3, 7, 8, 9, 55, 100, 127, 128, 200, 254, 255]);
int_suite!(ints_i16, i16, u16, I16, I16, "i16", signed: true,
    [0, 1, -1, 2, -3, 15, 16, 17, 300, -300, 32767, -32768, -32767, 12345]);
int_suite!(ints_u16, u16, u16, U16, U16, "u16", signed: false, [0, 1, 2, 15, 16, 17, 300, 32767, 32768, 65535, 65534]);
int_suite!(ints_i32, i32, u32, I32, I32, "i32", signed: true,
    [0, 1, -1, 2, -2, 31, 32, 33, -8, 3, -3, 8, 65536, i32::MAX, i32::MIN, i32::MIN + 1, 123456789]);
int_suite!(ints_u32, u32, u32, U32, U32, "u32", signed: false,
    [0, 1, 2, 3, 31, 32, 33, 65536, 2147483647, 2147483648, 4000000000, u32::MAX]);
int_suite!(ints_i64, i64, u64, I64, I64, "i64", signed: true,
    [0, 1, -1, 2, -2, 63, 64, 65, -8, 3, 1 << 40, i64::MAX, i64::MIN, i64::MIN + 1, -1234567890123]);
int_suite!(ints_u64, u64, u64, U64, U64, "u64", signed: false,
    [0, 1, 2, 3, 63, 64, 65, 1 << 40, i64::MAX as u64, 1 << 63, u64::MAX - 1, u64::MAX]);

#[test]
fn language_4_examples() {
    let mut div = op_vm(Op::DivI32, I32, Some(I32), I32);
    let mut rem = op_vm(Op::RemI32, I32, Some(I32), I32);
    assert_eq!(
        div.call_index(0, &[Value::I32(-8), Value::I32(3)]).unwrap(),
        Some(Value::I32(-2))
    );
    assert_eq!(
        rem.call_index(0, &[Value::I32(-8), Value::I32(3)]).unwrap(),
        Some(Value::I32(-2))
    );
    assert_eq!(
        rem.call_index(0, &[Value::I32(8), Value::I32(-3)]).unwrap(),
        Some(Value::I32(2))
    );
    assert_eq!(
        rem.call_index(0, &[Value::I32(i32::MIN), Value::I32(-1)])
            .unwrap(),
        Some(Value::I32(0))
    );
    let e = div
        .call_index(0, &[Value::I32(i32::MIN), Value::I32(-1)])
        .unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        ("E-OVERFLOW", "integer overflow in division")
    );
    let e = div
        .call_index(0, &[Value::I32(1), Value::I32(0)])
        .unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        ("E-DIVZERO", "integer division by zero")
    );
    // Shift amounts are taken modulo the width, from any integer type.
    let mut shl = op_vm(Op::ShlI32, I32, Some(I64), I32);
    assert_eq!(
        shl.call_index(0, &[Value::I32(1), Value::I64(33)]).unwrap(),
        Some(Value::I32(2))
    );
    let mut shr = op_vm(Op::ShrI32, I32, Some(I8), I32);
    assert_eq!(
        shr.call_index(0, &[Value::I32(i32::MIN), Value::I8(-1)])
            .unwrap(),
        Some(Value::I32(-1))
    );
    let mut ushr = op_vm(Op::UshrI32, I32, Some(U8), I32);
    assert_eq!(
        ushr.call_index(0, &[Value::I32(-1), Value::U8(31)])
            .unwrap(),
        Some(Value::I32(1))
    );
    // Wrapping: -(int32)MIN == MIN, -(uint32)1 == 4294967295; no small-integer promotion.
    let mut neg = op_vm(Op::NegU32, U32, None, U32);
    assert_eq!(
        neg.call_index(0, &[Value::U32(1)]).unwrap(),
        Some(Value::U32(4294967295))
    );
    let mut add = op_vm(Op::AddU8, U8, Some(U8), U8);
    assert_eq!(
        add.call_index(0, &[Value::U8(200), Value::U8(100)])
            .unwrap(),
        Some(Value::U8(44))
    );
}

#[test]
fn add_immediate() {
    let f = func(
        "T.f",
        2,
        Some(I64),
        vec![I32, I64, I32, I64, I64],
        vec![
            i(Op::AddImmI32, 2, 0, (-5i16) as u16),
            i(Op::AddImmI64, 3, 1, 7),
            i(Op::AddI64, 4, 3, 3),
            i(Op::Ret, 4, 0, 0),
        ],
    );
    let g = func(
        "T.g",
        1,
        Some(I32),
        vec![I32, I32],
        vec![i(Op::AddImmI32, 1, 0, 1), i(Op::Ret, 1, 0, 0)],
    );
    let mut vm = new_vm(module(vec![f, g]));
    assert_eq!(
        vm.call_index(0, &[Value::I32(3), Value::I64(-10)]).unwrap(),
        Some(Value::I64(-6))
    );
    assert_eq!(
        vm.call_index(1, &[Value::I32(i32::MAX)]).unwrap(),
        Some(Value::I32(i32::MIN))
    );
}

#[test]
fn loadi_and_loadk() {
    let mut m = module(vec![]);
    let k = konst(&mut m, cajeta_bytecode::Const::Bits((-3i64) as u64));
    let kf = konst(&mut m, cajeta_bytecode::Const::Bits(2.5f64.to_bits()));
    m.functions.push(func(
        "T.f",
        0,
        Some(F64),
        vec![I64, I64, I64, F64, F64],
        vec![
            ibc(Op::LoadI, 0, (-7i32) as u32),
            ibc(Op::LoadK, 1, k),
            i(Op::MulI64, 2, 0, 1), // 21
            i(Op::SToF64, 3, 2, 0),
            ibc(Op::LoadK, 4, kf),
            i(Op::MulF64, 3, 3, 4),
            i(Op::Ret, 3, 0, 0),
        ],
    ));
    assert_eq!(call(m, 0, &[]).0.unwrap(), Some(Value::F64(52.5)));
}

const F64_VALS: [f64; 16] = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    2.5,
    -2.5,
    1e300,
    -1e-300,
    3.0,
    7.25,
    f64::INFINITY,
    f64::NEG_INFINITY,
    f64::NAN,
    f64::MAX,
    f64::MIN_POSITIVE,
];
const F32_VALS: [f32; 15] = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    2.5,
    -2.5,
    1e30,
    -1e-30,
    3.0,
    7.25,
    f32::INFINITY,
    f32::NEG_INFINITY,
    f32::NAN,
    f32::MAX,
];

/// Float results compare by bits, except that any NaN matches any NaN.
fn same_float(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::F64(x), Value::F64(y)) => (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits(),
        (Value::F32(x), Value::F32(y)) => (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits(),
        _ => a == b,
    }
}

/// IEEE 754-2019 minimumNumber (spec-questions 27): a NaN operand yields the other; -0.0 is
/// below +0.0. (maximumNumber is its mirror: `-min(-x, -y)`.)
fn min_number(x: f64, y: f64) -> f64 {
    if x.is_nan() {
        y
    } else if y.is_nan() || x < y || (x == 0.0 && y == 0.0 && x.is_sign_negative()) {
        x
    } else {
        y
    }
}

#[test]
fn float64_ops() {
    let bins: &[(&str, BinF64)] = &[
        ("add.f64", |x, y| Value::F64(x + y)),
        ("sub.f64", |x, y| Value::F64(x - y)),
        ("mul.f64", |x, y| Value::F64(x * y)),
        ("div.f64", |x, y| Value::F64(x / y)),
        ("rem.f64", |x, y| Value::F64(x % y)),
        ("min.f64", |x, y| Value::F64(min_number(x, y))),
        ("max.f64", |x, y| Value::F64(-min_number(-x, -y))),
        ("pow.f64", |x, y| Value::F64(x.powf(y))),
        ("atan2.f64", |x, y| Value::F64(x.atan2(y))),
        ("eq.f64", |x, y| Value::Bool(x == y)),
        ("ne.f64", |x, y| Value::Bool(x != y)),
        ("lt.f64", |x, y| Value::Bool(x < y)),
        ("le.f64", |x, y| Value::Bool(x <= y)),
    ];
    for (m, reference) in bins {
        let out = if m.starts_with(['e', 'n', 'l']) {
            BOOL
        } else {
            F64
        };
        let mut vm = op_vm(op(m), F64, Some(F64), out);
        for &x in &F64_VALS {
            for &y in &F64_VALS {
                let got = vm
                    .call_index(0, &[Value::F64(x), Value::F64(y)])
                    .unwrap()
                    .unwrap();
                assert!(same_float(&got, &reference(x, y)), "{m} {x} {y}: {got:?}");
            }
        }
    }
    // NaN handling of min/max: the non-NaN operand.
    let mut min = op_vm(Op::MinF64, F64, Some(F64), F64);
    assert_eq!(
        min.call_index(0, &[Value::F64(f64::NAN), Value::F64(2.0)])
            .unwrap(),
        Some(Value::F64(2.0))
    );
    assert_eq!(
        min.call_index(0, &[Value::F64(2.0), Value::F64(f64::NAN)])
            .unwrap(),
        Some(Value::F64(2.0))
    );
    let mut neg = op_vm(Op::NegF64, F64, None, F64);
    assert_eq!(
        neg.call_index(0, &[Value::F64(0.0)])
            .unwrap()
            .map(|v| v.to_text()),
        Some("-0".into())
    );
}

#[test]
fn float32_ops_round_once() {
    let bins: &[(&str, BinF32)] = &[
        ("add.f32", |x, y| Value::F32(x + y)),
        ("sub.f32", |x, y| Value::F32(x - y)),
        ("mul.f32", |x, y| Value::F32(x * y)),
        ("div.f32", |x, y| Value::F32(x / y)),
        ("rem.f32", |x, y| Value::F32(x % y)),
        ("min.f32", |x, y| {
            Value::F32(min_number(x.into(), y.into()) as f32)
        }),
        ("max.f32", |x, y| {
            Value::F32(-min_number(-f64::from(x), -f64::from(y)) as f32)
        }),
        ("pow.f32", |x, y| {
            Value::F32((x as f64).powf(y as f64) as f32)
        }),
        ("atan2.f32", |x, y| {
            Value::F32((x as f64).atan2(y as f64) as f32)
        }),
        ("eq.f32", |x, y| Value::Bool(x == y)),
        ("lt.f32", |x, y| Value::Bool(x < y)),
        ("le.f32", |x, y| Value::Bool(x <= y)),
    ];
    for (m, reference) in bins {
        let out = if m.starts_with(['e', 'l']) { BOOL } else { F32 };
        let mut vm = op_vm(op(m), F32, Some(F32), out);
        for &x in &F32_VALS {
            for &y in &F32_VALS {
                let got = vm
                    .call_index(0, &[Value::F32(x), Value::F32(y)])
                    .unwrap()
                    .unwrap();
                assert!(same_float(&got, &reference(x, y)), "{m} {x} {y}: {got:?}");
            }
        }
    }
}

#[test]
fn fma_has_one_rounding() {
    // a*b + c where the unfused product rounds: (1 + 2^-23)^2 - (1 + 2^-22) is 2^-46 exactly
    // when fused and 0 when the product is rounded first.
    let x = 1.0f32 + f32::EPSILON;
    let c = -(x * x);
    let f = func(
        "T.f",
        3,
        Some(F32),
        vec![F32, F32, F32],
        vec![i(Op::FmaF32, 0, 1, 2), i(Op::Ret, 0, 0, 0)],
    );
    let mut vm = new_vm(module(vec![f]));
    let got = vm
        .call_index(0, &[Value::F32(x), Value::F32(x), Value::F32(c)])
        .unwrap();
    assert_eq!(got, Some(Value::F32(2f32.powi(-46))), "must be fused");
    let y = 1.0f64 + f64::EPSILON;
    let c = -(y * y);
    let g = func(
        "T.g",
        3,
        Some(F64),
        vec![F64, F64, F64],
        vec![i(Op::FmaF64, 0, 1, 2), i(Op::Ret, 0, 0, 0)],
    );
    let mut vm = new_vm(module(vec![g]));
    let got = vm
        .call_index(0, &[Value::F64(y), Value::F64(y), Value::F64(c)])
        .unwrap();
    assert_eq!(got, Some(Value::F64(2f64.powi(-104))), "must be fused");
}

#[test]
fn math1_functions() {
    for f in MathFn::ALL {
        let mut v64 = op_vm(Op::Math1F64, F64, None, F64);
        v64 = {
            // Patch the selector into `c`.
            let m = v64.module().as_ref().clone();
            let mut m = m;
            m.functions[0].code[0].c = f as u16;
            new_vm(m)
        };
        let mut m32 = op_vm(Op::Math1F32, F32, None, F32)
            .module()
            .as_ref()
            .clone();
        m32.functions[0].code[0].c = f as u16;
        let mut v32 = new_vm(m32);
        for &x in &[0.3f64, -2.5, 2.5, 4.0, 0.0, -0.0, 100.0, f64::NAN] {
            let want = match f {
                MathFn::Sqrt => x.sqrt(),
                MathFn::Floor => x.floor(),
                MathFn::Ceil => x.ceil(),
                MathFn::Trunc => x.trunc(),
                MathFn::Round => x.round(),
                MathFn::Abs => x.abs(),
                MathFn::Rsqrt => 1.0 / x.sqrt(),
                MathFn::Sin => x.sin(),
                MathFn::Cos => x.cos(),
                MathFn::Tan => x.tan(),
                MathFn::Asin => x.asin(),
                MathFn::Acos => x.acos(),
                MathFn::Atan => x.atan(),
                MathFn::Exp => x.exp(),
                MathFn::Exp2 => x.exp2(),
                MathFn::Log => x.ln(),
                MathFn::Log2 => x.log2(),
                MathFn::Log10 => x.log10(),
            };
            let got = v64.call_index(0, &[Value::F64(x)]).unwrap().unwrap();
            assert!(
                same_float(&got, &Value::F64(want)),
                "{} {x}: {got:?}",
                f.name()
            );
            // float32: the float64 result of the (exactly widened) argument, rounded once.
            let x32 = x as f32;
            let want32 = match f {
                MathFn::Rsqrt => (1.0 / (x32 as f64).sqrt()) as f32,
                _ => {
                    let w = match f {
                        MathFn::Sqrt => (x32 as f64).sqrt(),
                        _ => return_f64(f, x32 as f64),
                    };
                    w as f32
                }
            };
            let got = v32.call_index(0, &[Value::F32(x32)]).unwrap().unwrap();
            assert!(
                same_float(&got, &Value::F32(want32)),
                "{} f32 {x32}: {got:?}",
                f.name()
            );
        }
    }
    // Round is half away from zero.
    let mut m = op_vm(Op::Math1F64, F64, None, F64)
        .module()
        .as_ref()
        .clone();
    m.functions[0].code[0].c = MathFn::Round as u16;
    let mut vm = new_vm(m);
    assert_eq!(
        vm.call_index(0, &[Value::F64(-0.5)]).unwrap(),
        Some(Value::F64(-1.0))
    );
    assert_eq!(
        vm.call_index(0, &[Value::F64(0.5)]).unwrap(),
        Some(Value::F64(1.0))
    );
}

fn return_f64(f: MathFn, x: f64) -> f64 {
    match f {
        MathFn::Floor => x.floor(),
        MathFn::Ceil => x.ceil(),
        MathFn::Trunc => x.trunc(),
        MathFn::Round => x.round(),
        MathFn::Abs => x.abs(),
        MathFn::Sin => x.sin(),
        MathFn::Cos => x.cos(),
        MathFn::Tan => x.tan(),
        MathFn::Asin => x.asin(),
        MathFn::Acos => x.acos(),
        MathFn::Atan => x.atan(),
        MathFn::Exp => x.exp(),
        MathFn::Exp2 => x.exp2(),
        MathFn::Log => x.ln(),
        MathFn::Log2 => x.log2(),
        MathFn::Log10 => x.log10(),
        MathFn::Sqrt | MathFn::Rsqrt => unreachable!(),
    }
}

/// Every integer-like source value, as (type, Value, the value as i128 for reference).
fn int_sources() -> Vec<(Type, Value, i128)> {
    let mut v = Vec::new();
    for x in [0i8, 1, -1, 127, -128, 44] {
        v.push((I8, Value::I8(x), x as i128));
    }
    for x in [0u8, 200, 255] {
        v.push((U8, Value::U8(x), x as i128));
    }
    for x in [-300i16, 32767, -32768] {
        v.push((I16, Value::I16(x), x as i128));
    }
    for x in [300u16, 65535] {
        v.push((U16, Value::U16(x), x as i128));
    }
    for x in [-1i32, 300, i32::MIN, i32::MAX, 0x1F600] {
        v.push((I32, Value::I32(x), x as i128));
    }
    for x in [4294967295u32, 0x8000_0000] {
        v.push((U32, Value::U32(x), x as i128));
    }
    for x in [-1i64, i64::MIN, i64::MAX, 0x1_0000_0041] {
        v.push((I64, Value::I64(x), x as i128));
    }
    for x in [u64::MAX, 1 << 63, 300] {
        v.push((U64, Value::U64(x), x as i128));
    }
    for x in [0u32, 0x41, 0x10FFFF] {
        v.push((CHAR, Value::Char(x), x as i128));
    }
    v.push((BOOL, Value::Bool(true), 1));
    v
}

#[test]
fn integer_and_char_conversions() {
    let targets: &[(&str, Type, FromInt)] = &[
        ("wrap.i8", I8, |x| Value::I8(x as i8)),
        ("wrap.u8", U8, |x| Value::U8(x as u8)),
        ("wrap.i16", I16, |x| Value::I16(x as i16)),
        ("wrap.u16", U16, |x| Value::U16(x as u16)),
        ("wrap.i32", I32, |x| Value::I32(x as i32)),
        ("wrap.u32", U32, |x| Value::U32(x as u32)),
        ("wrap.i64", I64, |x| Value::I64(x as i64)),
        ("wrap.u64", U64, |x| Value::U64(x as u64)),
        ("wrap.char", CHAR, |x| Value::Char(x as u32)),
        ("cvt.f32.s", F32, |x| Value::F32(x as i64 as f32)),
        ("cvt.f64.s", F64, |x| Value::F64(x as i64 as f64)),
    ];
    for (m, out, reference) in targets {
        for (ty, val, x) in int_sources() {
            let mut vm = op_vm(op(m), ty, None, *out);
            let got = vm
                .call_index(0, std::slice::from_ref(&val))
                .unwrap()
                .unwrap();
            assert_eq!(got, reference(x), "{m} of {val:?}");
        }
    }
    // Unsigned sources convert by value; signed ones by their signed value.
    let mut u = op_vm(Op::UToF64, U64, None, F64);
    assert_eq!(
        u.call_index(0, &[Value::U64(u64::MAX)]).unwrap(),
        Some(Value::F64(18446744073709551615.0))
    );
    let mut u = op_vm(Op::UToF32, U32, None, F32);
    assert_eq!(
        u.call_index(0, &[Value::U32(u32::MAX)]).unwrap(),
        Some(Value::F32(4294967295.0))
    );
    // Spec examples (§3.1).
    let mut w = op_vm(Op::WrapU8, I32, None, U8);
    assert_eq!(
        w.call_index(0, &[Value::I32(300)]).unwrap(),
        Some(Value::U8(44))
    );
    let mut w = op_vm(Op::WrapI32, U32, None, I32);
    assert_eq!(
        w.call_index(0, &[Value::U32(4294967295)]).unwrap(),
        Some(Value::I32(-1))
    );
    let mut w = op_vm(Op::WrapU64, I32, None, U64);
    assert_eq!(
        w.call_index(0, &[Value::I32(-1)]).unwrap(),
        Some(Value::U64(18446744073709551615))
    );
    let mut w = op_vm(Op::WrapI32, U8, None, I32);
    assert_eq!(
        w.call_index(0, &[Value::U8(200)]).unwrap(),
        Some(Value::I32(200))
    );
}

#[test]
fn float_to_int_saturates() {
    let vals = [
        0.0f64,
        -0.0,
        1.9,
        -1.9,
        -1.5,
        1e10,
        -1e10,
        3e38,
        1e300,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        255.5,
        4294967295.9,
    ];
    let targets: &[(&str, &str, Type, FromF64)] = &[
        ("cvt.i8.f64", "cvt.i8.f32", I8, |x| Value::I8(x as i8)),
        ("cvt.u8.f64", "cvt.u8.f32", U8, |x| Value::U8(x as u8)),
        ("cvt.i16.f64", "cvt.i16.f32", I16, |x| Value::I16(x as i16)),
        ("cvt.u16.f64", "cvt.u16.f32", U16, |x| Value::U16(x as u16)),
        ("cvt.i32.f64", "cvt.i32.f32", I32, |x| Value::I32(x as i32)),
        ("cvt.u32.f64", "cvt.u32.f32", U32, |x| Value::U32(x as u32)),
        ("cvt.i64.f64", "cvt.i64.f32", I64, |x| Value::I64(x as i64)),
        ("cvt.u64.f64", "cvt.u64.f32", U64, |x| Value::U64(x as u64)),
    ];
    for (m64, m32, out, reference) in targets {
        let mut v64 = op_vm(op(m64), F64, None, *out);
        let mut v32 = op_vm(op(m32), F32, None, *out);
        for &x in &vals {
            assert_eq!(
                v64.call_index(0, &[Value::F64(x)]).unwrap().unwrap(),
                reference(x),
                "{m64} {x}"
            );
            let x32 = x as f32;
            assert_eq!(
                v32.call_index(0, &[Value::F32(x32)]).unwrap().unwrap(),
                reference(x32 as f64),
                "{m32} {x32}"
            );
        }
    }
    let mut c = op_vm(Op::F64ToI32, F64, None, I32);
    assert_eq!(
        c.call_index(0, &[Value::F64(1e10)]).unwrap(),
        Some(Value::I32(2147483647))
    );
    let mut c = op_vm(Op::F64ToU8, F64, None, U8);
    assert_eq!(
        c.call_index(0, &[Value::F64(-1.5)]).unwrap(),
        Some(Value::U8(0))
    );
    let mut c = op_vm(Op::F64ToF32, F64, None, F32);
    assert_eq!(
        c.call_index(0, &[Value::F64(1e300)]).unwrap(),
        Some(Value::F32(f32::INFINITY))
    );
    assert_eq!(
        c.call_index(0, &[Value::F64(0.1)]).unwrap(),
        Some(Value::F32(0.1))
    );
    let mut c = op_vm(Op::F32ToF64, F32, None, F64);
    assert_eq!(
        c.call_index(0, &[Value::F32(0.1)]).unwrap(),
        Some(Value::F64(0.1f32 as f64))
    );
}

#[test]
fn booleans() {
    for (m, f) in [
        ("and.bool", (|x, y| x & y) as fn(bool, bool) -> bool),
        ("or.bool", |x, y| x | y),
        ("xor.bool", |x, y| x ^ y),
        ("eq.bool", |x, y| x == y),
        ("ne.bool", |x, y| x != y),
    ] {
        let mut vm = op_vm(op(m), BOOL, Some(BOOL), BOOL);
        for x in [false, true] {
            for y in [false, true] {
                assert_eq!(
                    vm.call_index(0, &[Value::Bool(x), Value::Bool(y)]).unwrap(),
                    Some(Value::Bool(f(x, y))),
                    "{m}"
                );
            }
        }
    }
    let mut not = op_vm(Op::LNot, BOOL, None, BOOL);
    assert_eq!(
        not.call_index(0, &[Value::Bool(true)]).unwrap(),
        Some(Value::Bool(false))
    );
    assert_eq!(
        not.call_index(0, &[Value::Bool(false)]).unwrap(),
        Some(Value::Bool(true))
    );
    let mut eq = op_vm(Op::EqChar, CHAR, Some(CHAR), BOOL);
    assert_eq!(
        eq.call_index(0, &[Value::Char(65), Value::Char(65)])
            .unwrap(),
        Some(Value::Bool(true))
    );
    let mut ne = op_vm(Op::NeChar, CHAR, Some(CHAR), BOOL);
    assert_eq!(
        ne.call_index(0, &[Value::Char(65), Value::Char(66)])
            .unwrap(),
        Some(Value::Bool(true))
    );
}
