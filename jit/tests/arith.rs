//! Arithmetic, comparisons and conversions at every width against Rust's own arithmetic, and
//! the division errors with their pc.

mod common;

use cajeta_bytecode::{Const, MathFn, Op, Scalar, Type};
use cajeta_jit::{JitOptions, Status, TraceEntry};
use common::*;

fn t(s: Scalar) -> Type {
    Type::Scalar(s)
}

/// Runs `r2 := op r0, r1; ret r2` (types `tx`, `ty` → `tr`) on the cells `x`, `y`.
fn bin(op: Op, tx: Scalar, ty: Scalar, tr: Scalar, x: u64, y: u64) -> Outcome {
    let f = func(
        "T.f",
        2,
        Some(t(tr)),
        vec![t(tx), t(ty), t(tr)],
        vec![i(op, 2, 0, 1), i(Op::Ret, 2, 0, 0)],
    );
    let m = module(vec![f]);
    let mut jit = make_jit(&m, JitOptions::default());
    let mut vm = TestVm::new(m, 64);
    run(&mut jit, &mut vm, 0, &[x, y])
}

/// Runs `r1 := op r0 [c]; ret r1`.
fn un(op: Op, tx: Scalar, tr: Scalar, c: u16, x: u64) -> Outcome {
    let f = func(
        "T.f",
        1,
        Some(t(tr)),
        vec![t(tx), t(tr)],
        vec![i(op, 1, 0, c), i(Op::Ret, 1, 0, 0)],
    );
    let m = module(vec![f]);
    let mut jit = make_jit(&m, JitOptions::default());
    let mut vm = TestVm::new(m, 64);
    run(&mut jit, &mut vm, 0, &[x])
}

fn ok(o: Outcome) -> u64 {
    match o {
        Ok((v, _)) => v,
        Err(e) => panic!("unexpected failure {e:?}"),
    }
}

/// A binary op on one type.
fn same(op: Op, s: Scalar, x: u64, y: u64) -> u64 {
    ok(bin(op, s, s, s, x, y))
}

fn cmp(op: Op, s: Scalar, x: u64, y: u64) -> u64 {
    ok(bin(op, s, s, Scalar::Bool, x, y))
}

use Scalar::*;

fn c8(v: i8) -> u64 {
    v as i64 as u64
}
fn c16(v: i16) -> u64 {
    v as i64 as u64
}
fn c32(v: i32) -> u64 {
    v as i64 as u64
}
fn c64(v: i64) -> u64 {
    v as u64
}
fn f64c(v: f64) -> u64 {
    v.to_bits()
}
fn f32c(v: f32) -> u64 {
    v.to_bits() as u64
}

#[test]
fn wrapping_arithmetic_at_every_width() {
    assert_eq!(same(Op::AddI8, I8, c8(127), c8(1)), c8(i8::MIN));
    assert_eq!(same(Op::SubI8, I8, c8(-128), c8(1)), c8(127));
    assert_eq!(same(Op::MulI8, I8, c8(16), c8(16)), c8(0));
    assert_eq!(same(Op::AddU8, U8, 255, 1), 0);
    assert_eq!(same(Op::SubU8, U8, 0, 1), 255);
    assert_eq!(same(Op::MulU8, U8, 16, 17), (16u8.wrapping_mul(17)) as u64);
    assert_eq!(
        same(Op::MulI16, I16, c16(300), c16(300)),
        c16(300i16.wrapping_mul(300))
    );
    assert_eq!(same(Op::AddU16, U16, 65535, 2), 1);
    assert_eq!(same(Op::AddI32, I32, c32(i32::MAX), c32(1)), c32(i32::MIN));
    assert_eq!(same(Op::MulI32, I32, c32(65536), c32(65536)), 0);
    assert_eq!(same(Op::SubU32, U32, 0, 1), u32::MAX as u64);
    assert_eq!(same(Op::AddI64, I64, c64(i64::MAX), 1), c64(i64::MIN));
    assert_eq!(same(Op::MulU64, U64, u64::MAX, u64::MAX), 1);
    assert_eq!(ok(un(Op::NegI8, I8, I8, 0, c8(-128))), c8(-128));
    assert_eq!(ok(un(Op::NegU8, U8, U8, 0, 1)), 255);
    assert_eq!(ok(un(Op::NegU32, U32, U32, 0, 1)), u32::MAX as u64);
    assert_eq!(ok(un(Op::NegI64, I64, I64, 0, 5)), c64(-5));
    assert_eq!(
        ok(un(Op::AddImmI32, I32, I32, (-3i16) as u16, c32(i32::MIN))),
        c32(i32::MAX - 2)
    );
    assert_eq!(ok(un(Op::AddImmI64, I64, I64, 7, c64(-7))), 0);
    assert_eq!(ok(un(Op::AbsI8, I8, I8, 0, c8(-128))), c8(-128));
    assert_eq!(ok(un(Op::AbsI32, I32, I32, 0, c32(-5))), 5);
    assert_eq!(
        ok(un(Op::AbsI64, I64, I64, 0, c64(i64::MIN))),
        c64(i64::MIN)
    );
    assert_eq!(ok(un(Op::NotU16, U16, U16, 0, 0)), 0xffff);
    assert_eq!(ok(un(Op::NotI32, I32, I32, 0, 0)), c32(-1));
    assert_eq!(ok(un(Op::NotU64, U64, U64, 0, 0)), u64::MAX);
}

#[test]
fn division_and_remainder() {
    assert_eq!(same(Op::DivI32, I32, c32(-7), c32(2)), c32(-3));
    assert_eq!(same(Op::RemI32, I32, c32(-7), c32(2)), c32(-1));
    assert_eq!(same(Op::RemI32, I32, c32(7), c32(-2)), c32(1));
    assert_eq!(same(Op::RemI32, I32, c32(i32::MIN), c32(-1)), 0);
    assert_eq!(same(Op::RemI64, I64, c64(i64::MIN), c64(-1)), 0);
    assert_eq!(same(Op::DivI8, I8, c8(-100), c8(-1)), c8(100));
    assert_eq!(same(Op::DivI64, I64, c64(-9), c64(-1)), 9);
    assert_eq!(same(Op::DivU8, U8, 200, 3), 66);
    assert_eq!(same(Op::RemU16, U16, 65535, 10), 5);
    assert_eq!(same(Op::DivU64, U64, u64::MAX, 2), u64::MAX / 2);
    assert_eq!(same(Op::RemU64, U64, u64::MAX, u64::MAX), 0);
}

#[test]
fn division_errors_carry_the_pc() {
    let fault = |o: Outcome| o.expect_err("must fail");
    for (op, s, x) in [
        (Op::DivI8, I8, c8(1)),
        (Op::RemI16, I16, c16(-1)),
        (Op::DivI32, I32, c32(5)),
        (Op::RemI64, I64, c64(i64::MIN)),
        (Op::DivU8, U8, 1),
        (Op::RemU32, U32, 7),
        (Op::DivU64, U64, u64::MAX),
    ] {
        let e = fault(bin(op, s, s, s, x, 0));
        assert_eq!(e.status, Status::DivZero, "{}", op.mnemonic());
        assert_eq!(e.trace, vec![TraceEntry { func: 0, pc: 0 }]);
    }
    for (op, s, min) in [
        (Op::DivI8, I8, c8(i8::MIN)),
        (Op::DivI16, I16, c16(i16::MIN)),
        (Op::DivI32, I32, c32(i32::MIN)),
        (Op::DivI64, I64, c64(i64::MIN)),
    ] {
        let e = fault(bin(op, s, s, s, min, c64(-1)));
        assert_eq!(e.status, Status::Overflow, "{}", op.mnemonic());
    }

    // The pc is the faulting instruction's, after other work.
    let f = func(
        "T.f",
        2,
        Some(Type::I64),
        vec![Type::I64; 3],
        vec![
            i(Op::AddI64, 2, 0, 1),
            i(Op::MulI64, 2, 2, 2),
            i(Op::DivI64, 2, 2, 1),
            i(Op::Ret, 2, 0, 0),
        ],
    );
    let m = module(vec![f]);
    let mut jit = make_jit(&m, JitOptions::default());
    let mut vm = TestVm::new(m, 64);
    assert_eq!(ok(run(&mut jit, &mut vm, 0, &[3, 1])), 16);
    let e = run(&mut jit, &mut vm, 0, &[3, 0]).unwrap_err();
    assert_eq!(
        (e.status, e.trace),
        (Status::DivZero, vec![TraceEntry { func: 0, pc: 2 }])
    );
}

#[test]
fn division_by_known_constants_skips_checks_but_not_semantics() {
    // r1 := K; r2 := r0 op r1, with K loaded in the same block (the JIT sees the constant).
    for (op, k, x, want) in [
        (Op::RemI64, 7i64, -23i64, -23i64 % 7),
        (Op::DivI64, 7, -23, -23 / 7),
        (Op::DivI32, -3, i32::MIN as i64, (i32::MIN / -3) as i64),
        (Op::RemI32, 1000, 123456, 456),
    ] {
        let ty = if matches!(op, Op::DivI32 | Op::RemI32) {
            Type::I32
        } else {
            Type::I64
        };
        let f = func(
            "T.f",
            1,
            Some(ty),
            vec![ty; 3],
            vec![
                ibc(Op::LoadI, 1, k as i32 as u32),
                i(op, 2, 0, 1),
                i(Op::Ret, 2, 0, 0),
            ],
        );
        let m = module(vec![f]);
        let mut jit = make_jit(&m, JitOptions::default());
        let mut vm = TestVm::new(m, 64);
        assert_eq!(
            ok(run(&mut jit, &mut vm, 0, &[x as u64])),
            want as u64,
            "{}",
            op.mnemonic()
        );
    }
    // A constant divisor of 0 or -1 keeps its checks.
    for (k, x, status) in [
        (0i64, 5i64, Status::DivZero),
        (-1, i64::MIN, Status::Overflow),
    ] {
        let f = func(
            "T.f",
            1,
            Some(Type::I64),
            vec![Type::I64; 3],
            vec![
                ibc(Op::LoadI, 1, k as i32 as u32),
                i(Op::DivI64, 2, 0, 1),
                i(Op::Ret, 2, 0, 0),
            ],
        );
        let m = module(vec![f]);
        let mut jit = make_jit(&m, JitOptions::default());
        let mut vm = TestVm::new(m, 64);
        let e = run(&mut jit, &mut vm, 0, &[x as u64]).unwrap_err();
        assert_eq!(e.status, status);
        assert_eq!(e.trace, vec![TraceEntry { func: 0, pc: 1 }]);
    }
}

#[test]
fn shifts_use_the_low_bits_of_the_amount() {
    assert_eq!(same(Op::ShlI8, I8, 1, 7), c8(i8::MIN));
    assert_eq!(same(Op::ShlU8, U8, 1, 9), 2);
    assert_eq!(same(Op::ShrI8, I8, c8(-128), 1), c8(-64));
    assert_eq!(same(Op::UshrI8, I8, c8(-128), 1), 64);
    assert_eq!(same(Op::UshrI16, I16, c16(-1), 12), 15);
    assert_eq!(same(Op::UshrI32, I32, c32(-1), 28), 15);
    assert_eq!(same(Op::UshrI32, I32, c32(-1), 0), c32(-1));
    assert_eq!(same(Op::ShrU16, U16, 0x8000, 15), 1);
    assert_eq!(same(Op::ShlI64, I64, 1, 65), 2);
    assert_eq!(same(Op::ShrI64, I64, c64(-16), 2), c64(-4));
    assert_eq!(same(Op::UshrI64, I64, c64(-1), 63), 1);
    assert_eq!(same(Op::ShlU32, U32, 0xffff_ffff, 4), 0xffff_fff0);
    // The amount may be of any integer type.
    assert_eq!(ok(bin(Op::ShlI32, I32, U8, I32, 1, 33)), 2);
    assert_eq!(
        ok(bin(Op::ShrI16, I16, I64, I16, c16(-32768), c64(-1))),
        c16(-1)
    );
}

#[test]
fn bitwise_min_max() {
    assert_eq!(same(Op::AndI8, I8, c8(-1), c8(0x0f)), 0x0f);
    assert_eq!(same(Op::OrU16, U16, 0xf000, 0x000f), 0xf00f);
    assert_eq!(same(Op::XorI32, I32, c32(-1), c32(1)), c32(-2));
    assert_eq!(same(Op::XorBool, Bool, 1, 1), 0);
    assert_eq!(same(Op::MinI32, I32, c32(-5), c32(3)), c32(-5));
    assert_eq!(same(Op::MaxU8, U8, 200, 100), 200);
    assert_eq!(same(Op::MinU64, U64, u64::MAX, 1), 1);
    assert_eq!(same(Op::MaxI64, I64, c64(i64::MIN), c64(-1)), c64(-1));
    assert_eq!(ok(un(Op::LNot, Bool, Bool, 0, 0)), 1);
    assert_eq!(ok(un(Op::LNot, Bool, Bool, 0, 1)), 0);
}

#[test]
fn comparisons() {
    assert_eq!(cmp(Op::LtI32, I32, c32(-1), 1), 1);
    assert_eq!(cmp(Op::LtU32, U32, 0xffff_ffff, 1), 0);
    assert_eq!(cmp(Op::LeI8, I8, c8(-128), c8(-128)), 1);
    assert_eq!(cmp(Op::LtU64, U64, 1, u64::MAX), 1);
    assert_eq!(cmp(Op::LtI64, I64, 1, u64::MAX), 0);
    assert_eq!(cmp(Op::EqChar, Char, 'x' as u64, 'x' as u64), 1);
    assert_eq!(cmp(Op::NeU16, U16, 1, 2), 1);
    let nan = f64c(f64::NAN);
    assert_eq!(cmp(Op::LeF64, F64, nan, nan), 0);
    assert_eq!(cmp(Op::LtF64, F64, f64c(1.0), nan), 0);
    assert_eq!(cmp(Op::NeF64, F64, nan, nan), 1);
    assert_eq!(cmp(Op::EqF64, F64, nan, nan), 0);
    assert_eq!(cmp(Op::EqF32, F32, f32c(-0.0), f32c(0.0)), 1);
    assert_eq!(cmp(Op::LtF32, F32, f32c(-1.5), f32c(-1.25)), 1);
    assert_eq!(cmp(Op::LeF32, F32, f32c(f32::NAN), f32c(0.0)), 0);
}

#[test]
fn float_arithmetic_rounds_once_per_operation() {
    let x = 0.1f64;
    let y = 0.2f64;
    assert_eq!(same(Op::AddF64, F64, f64c(x), f64c(y)), f64c(x + y));
    assert_eq!(same(Op::DivF64, F64, f64c(1.0), f64c(3.0)), f64c(1.0 / 3.0));
    assert_eq!(same(Op::RemF64, F64, f64c(5.5), f64c(2.0)), f64c(1.5));
    assert_eq!(same(Op::RemF64, F64, f64c(-5.5), f64c(2.0)), f64c(-1.5));
    assert_eq!(same(Op::RemF32, F32, f32c(7.25), f32c(2.0)), f32c(1.25));
    assert_eq!(
        same(Op::MulF32, F32, f32c(0.1), f32c(3.0)),
        f32c(0.1f32 * 3.0)
    );
    assert_eq!(ok(un(Op::NegF64, F64, F64, 0, f64c(0.0))), f64c(-0.0));
    assert_eq!(ok(un(Op::NegF32, F32, F32, 0, f32c(1.0))), f32c(-1.0));
    assert_eq!(
        same(Op::PowF64, F64, f64c(2.0), f64c(0.5)),
        f64c(2f64.powf(0.5))
    );
    assert_eq!(
        same(Op::PowF32, F32, f32c(3.0), f32c(1.7)),
        f32c((3f64).powf(1.7f32 as f64) as f32)
    );
    assert_eq!(
        same(Op::Atan2F64, F64, f64c(1.0), f64c(-2.0)),
        f64c(1f64.atan2(-2.0))
    );
    assert_eq!(same(Op::MinF64, F64, f64c(f64::NAN), f64c(1.0)), f64c(1.0));
    assert_eq!(same(Op::MinF64, F64, f64c(2.0), f64c(f64::NAN)), f64c(2.0));
    assert_eq!(same(Op::MaxF32, F32, f32c(-3.0), f32c(2.0)), f32c(2.0));
    assert_eq!(same(Op::MinF32, F32, f32c(-3.0), f32c(2.0)), f32c(-3.0));
    // Results of float32 ops keep the high half of the cell zero.
    assert_eq!(same(Op::SubF32, F32, f32c(1.0), f32c(3.0)) >> 32, 0);
}

#[test]
fn fma_rounds_once() {
    // r0 := fma(r0, r1, r2) = r0 * r1 + r2 with a single rounding.
    for (s, a, b, c, want) in [
        (
            F64,
            f64c(0.1),
            f64c(10.0),
            f64c(-1.0),
            f64c(0.1f64.mul_add(10.0, -1.0)),
        ),
        (
            F32,
            f32c(0.1),
            f32c(10.0),
            f32c(-1.0),
            f32c(0.1f32.mul_add(10.0, -1.0)),
        ),
    ] {
        let op = if s == F64 { Op::FmaF64 } else { Op::FmaF32 };
        let f = func(
            "T.f",
            3,
            Some(t(s)),
            vec![t(s); 3],
            vec![i(op, 0, 1, 2), i(Op::Ret, 0, 0, 0)],
        );
        let m = module(vec![f]);
        let mut jit = make_jit(&m, JitOptions::default());
        let mut vm = TestVm::new(m, 64);
        assert_eq!(ok(run(&mut jit, &mut vm, 0, &[a, b, c])), want);
    }
    // Not contracted: a separate mul and add round twice.
    let x = 0.1f64;
    assert_ne!(x.mul_add(10.0, -1.0), x * 10.0 - 1.0);
}

#[test]
fn math_functions() {
    let m1 = |s: Scalar, f: MathFn, x: u64| {
        let op = if s == F64 { Op::Math1F64 } else { Op::Math1F32 };
        ok(un(op, s, s, f as u16, x))
    };
    let x = 2.5f64;
    for f in MathFn::ALL {
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
        let got = f64::from_bits(m1(F64, f, f64c(x)));
        assert!(
            got.to_bits() == want.to_bits() || got.is_nan() && want.is_nan(),
            "{}",
            f.name()
        );
        let xf = -1.5f32;
        let want32 = match f {
            MathFn::Sqrt => xf.sqrt(),
            MathFn::Floor => xf.floor(),
            MathFn::Ceil => xf.ceil(),
            MathFn::Trunc => xf.trunc(),
            MathFn::Round => xf.round(),
            MathFn::Abs => xf.abs(),
            MathFn::Rsqrt => (1.0 / (xf as f64).sqrt()) as f32,
            MathFn::Sin => (xf as f64).sin() as f32,
            MathFn::Cos => (xf as f64).cos() as f32,
            MathFn::Tan => (xf as f64).tan() as f32,
            MathFn::Asin => (xf as f64).asin() as f32,
            MathFn::Acos => (xf as f64).acos() as f32,
            MathFn::Atan => (xf as f64).atan() as f32,
            MathFn::Exp => (xf as f64).exp() as f32,
            MathFn::Exp2 => (xf as f64).exp2() as f32,
            MathFn::Log => (xf as f64).ln() as f32,
            MathFn::Log2 => (xf as f64).log2() as f32,
            MathFn::Log10 => (xf as f64).log10() as f32,
        };
        let got32 = f32::from_bits(m1(F32, f, f32c(xf)) as u32);
        assert!(
            got32.to_bits() == want32.to_bits() || got32.is_nan() && want32.is_nan(),
            "{} f32: {got32} vs {want32}",
            f.name()
        );
    }
    assert_eq!(m1(F64, MathFn::Round, f64c(-2.5)), f64c(-3.0));
    assert_eq!(m1(F32, MathFn::Round, f32c(0.5)), f32c(1.0));
}

#[test]
fn float_to_int_saturates_and_maps_nan_to_zero() {
    let cases: Vec<(Op, Scalar, Scalar, u64, u64)> = vec![
        (Op::F64ToI32, F64, I32, f64c(1e10), c32(i32::MAX)),
        (Op::F64ToI32, F64, I32, f64c(-1e10), c32(i32::MIN)),
        (Op::F64ToI32, F64, I32, f64c(f64::NAN), 0),
        (Op::F64ToI32, F64, I32, f64c(-2.9), c32(-2)),
        (Op::F64ToU8, F64, U8, f64c(-1.5), 0),
        (Op::F64ToU8, F64, U8, f64c(300.7), 255),
        (Op::F64ToI8, F64, I8, f64c(-200.0), c8(i8::MIN)),
        (Op::F32ToI8, F32, I8, f32c(127.9), c8(127)),
        (Op::F32ToU16, F32, U16, f32c(65535.9), 65535),
        (Op::F32ToU16, F32, U16, f32c(f32::INFINITY), 65535),
        (Op::F64ToI16, F64, I16, f64c(-32768.9), c16(i16::MIN)),
        (Op::F64ToU32, F64, U32, f64c(4294967296.5), u32::MAX as u64),
        (Op::F64ToU32, F64, U32, f64c(-0.5), 0),
        (Op::F64ToU64, F64, U64, f64c(1e20), u64::MAX),
        (Op::F64ToU64, F64, U64, f64c(f64::NEG_INFINITY), 0),
        (Op::F64ToI64, F64, I64, f64c(-0.9), 0),
        (Op::F64ToI64, F64, I64, f64c(9.3e18), c64(i64::MAX)),
        (Op::F32ToI64, F32, I64, f32c(f32::NAN), 0),
        (Op::F32ToU64, F32, U64, f32c(1.5e19), 1.5e19f32 as u64),
        (Op::F32ToI32, F32, I32, f32c(-3e9), c32(i32::MIN)),
        (Op::F32ToU32, F32, U32, f32c(3e9), 3e9f32 as u32 as u64),
    ];
    for (op, from, to, x, want) in cases {
        assert_eq!(
            ok(un(op, from, to, 0, x)),
            want,
            "{} of {x:#x}",
            op.mnemonic()
        );
    }
}

#[test]
fn int_to_float_and_wraps() {
    assert_eq!(ok(un(Op::SToF64, I64, F64, 0, c64(-1))), f64c(-1.0));
    assert_eq!(
        ok(un(Op::UToF64, U64, F64, 0, u64::MAX)),
        f64c(u64::MAX as f64)
    );
    assert_eq!(
        ok(un(Op::UToF32, U64, F32, 0, u64::MAX)),
        f32c(u64::MAX as f32)
    );
    assert_eq!(
        ok(un(Op::UToF32, U64, F32, 0, (1 << 63) + 1)),
        f32c(((1u64 << 63) + 1) as f32)
    );
    assert_eq!(
        ok(un(Op::SToF32, I64, F32, 0, c64(i64::MIN + 1))),
        f32c((i64::MIN + 1) as f32)
    );
    assert_eq!(ok(un(Op::SToF32, I8, F32, 0, c8(-3))), f32c(-3.0));
    assert_eq!(ok(un(Op::UToF64, Char, F64, 0, 0x41)), f64c(65.0));
    assert_eq!(
        ok(un(Op::F32ToF64, F32, F64, 0, f32c(0.1))),
        f64c(0.1f32 as f64)
    );
    assert_eq!(
        ok(un(Op::F64ToF32, F64, F32, 0, f64c(0.1))),
        f32c(0.1f64 as f32)
    );
    assert_eq!(ok(un(Op::WrapI8, I32, I8, 0, c32(200))), c8(-56));
    assert_eq!(ok(un(Op::WrapU8, I32, U8, 0, c32(-1))), 255);
    assert_eq!(ok(un(Op::WrapI16, U32, I16, 0, 0x1_8000)), c16(i16::MIN));
    assert_eq!(ok(un(Op::WrapChar, I64, Char, 0, c64(-1))), 0xffff_ffff);
    assert_eq!(ok(un(Op::WrapI64, U32, I64, 0, 0xffff_ffff)), 0xffff_ffff);
    assert_eq!(ok(un(Op::WrapU64, I8, U64, 0, c8(-1))), u64::MAX);
    assert_eq!(ok(un(Op::WrapI32, Bool, I32, 0, 1)), 1);
    assert_eq!(ok(un(Op::WrapU32, I64, U32, 0, c64(-2))), 0xffff_fffe);
}

#[test]
fn constants_and_moves() {
    // loadk of every scalar kind, loadi, mov.
    let consts = vec![
        Const::Bits(f64c(2.75)),
        Const::Bits(f32c(-0.5)),
        Const::Bits(u64::MAX),
    ];
    let f = func(
        "T.f",
        0,
        Some(Type::F64),
        vec![Type::F64, t(F32), t(U64), Type::I32, Type::F64, Type::F64],
        vec![
            ibc(Op::LoadK, 0, 0),
            ibc(Op::LoadK, 1, 1),
            ibc(Op::LoadK, 2, 2),
            ibc(Op::LoadI, 3, (-7i32) as u32),
            i(Op::F32ToF64, 4, 1, 0),
            i(Op::AddF64, 5, 0, 4),
            i(Op::Mov, 4, 5, 0),
            i(Op::Ret, 4, 0, 0),
        ],
    );
    let m = module_with(vec![f], consts, vec![], vec![]);
    let mut jit = make_jit(&m, JitOptions::default());
    let mut vm = TestVm::new(m, 64);
    assert_eq!(ok(run(&mut jit, &mut vm, 0, &[])), f64c(2.25));
}
