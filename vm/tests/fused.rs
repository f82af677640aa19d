//! Differential tests of the superinstructions introduced by lowering: every program runs
//! once as written (the VM fuses the sequences) and once with a `nop` inserted that prevents
//! the fusion; results (including the registers the fused sequence writes) must agree.

mod common;

use cajeta_bytecode::{Instr, Op, Type};
use cajeta_vm::Value;
use common::*;

/// `code` with a `nop` inserted at `at`, branch targets adjusted.
fn unfuse(code: &[Instr], at: usize) -> Vec<Instr> {
    let mut out = code.to_vec();
    for ins in out.iter_mut() {
        if matches!(ins.op, Op::Jmp | Op::JmpIf | Op::JmpIfNot) && ins.bc() as usize >= at {
            ins.set_bc(ins.bc() + 1);
        }
    }
    out.insert(at, i(Op::Nop, 0, 0, 0));
    out
}

/// Runs `code` (function 0, `params` params, `regs`, returning `ret`) fused and unfused at
/// `at` with each argument list, asserting equal results; returns the fused results.
fn both(
    params: u16,
    ret: Type,
    regs: &[Type],
    code: Vec<Instr>,
    at: usize,
    args: &[Vec<Value>],
) -> Vec<Value> {
    let fused = new_vm(module(vec![func(
        "T.f",
        params,
        Some(ret),
        regs.to_vec(),
        code.clone(),
    )]));
    let plain = new_vm(module(vec![func(
        "T.f",
        params,
        Some(ret),
        regs.to_vec(),
        unfuse(&code, at),
    )]));
    let (mut fused, mut plain) = (fused, plain);
    args.iter()
        .map(|a| {
            let x = fused.call_index(0, a).unwrap().unwrap();
            let y = plain.call_index(0, a).unwrap().unwrap();
            let same = match (&x, &y) {
                (Value::F64(p), Value::F64(q)) => {
                    p.to_bits() == q.to_bits() || (p.is_nan() && q.is_nan())
                }
                (Value::F32(p), Value::F32(q)) => {
                    p.to_bits() == q.to_bits() || (p.is_nan() && q.is_nan())
                }
                _ => x == y,
            };
            assert!(same, "fused {x:?} != unfused {y:?} for {a:?}");
            x
        })
        .collect()
}

fn values(ty: Type) -> Vec<Value> {
    match ty {
        I8 => [0i8, 1, -1, 127, -128].map(Value::I8).to_vec(),
        U8 => [0u8, 1, 255, 128].map(Value::U8).to_vec(),
        I16 => [0i16, -300, 300, i16::MIN].map(Value::I16).to_vec(),
        U16 => [0u16, 300, 65535].map(Value::U16).to_vec(),
        I32 => [0i32, 1, -1, i32::MAX, i32::MIN].map(Value::I32).to_vec(),
        U32 => [0u32, 1, u32::MAX, 1 << 31].map(Value::U32).to_vec(),
        I64 => [0i64, -1, 1, i64::MIN, i64::MAX].map(Value::I64).to_vec(),
        U64 => [0u64, 1, u64::MAX, 1 << 63].map(Value::U64).to_vec(),
        F32 => [0.0f32, -0.0, 1.5, -2.0, f32::NAN, f32::INFINITY]
            .map(Value::F32)
            .to_vec(),
        F64 => [0.0f64, -0.0, 1.5, -2.0, f64::NAN, f64::NEG_INFINITY]
            .map(Value::F64)
            .to_vec(),
        BOOL => vec![Value::Bool(false), Value::Bool(true)],
        CHAR => [0u32, 65, 0x10FFFF].map(Value::Char).to_vec(),
        _ => unreachable!(),
    }
}

#[test]
fn compare_and_branch() {
    let mut ops = vec![];
    for (ty, sfx) in [
        (I8, "i8"),
        (U8, "u8"),
        (I16, "i16"),
        (U16, "u16"),
        (I32, "i32"),
        (U32, "u32"),
        (I64, "i64"),
        (U64, "u64"),
        (F32, "f32"),
        (F64, "f64"),
    ] {
        for c in ["lt", "le", "eq", "ne"] {
            ops.push((ty, op(&format!("{c}.{sfx}"))));
        }
    }
    ops.extend([
        (BOOL, Op::EqBool),
        (BOOL, Op::NeBool),
        (CHAR, Op::EqChar),
        (CHAR, Op::NeChar),
    ]);
    for (ty, cmp) in ops {
        for br in [Op::JmpIf, Op::JmpIfNot] {
            // r3 := taken ? 2 : 1; return r3 * 10 + r2 (the comparison's own result)
            let code = vec![
                i(cmp, 2, 0, 1),
                ibc(br, 2, 4),
                ibc(Op::LoadI, 3, 1),
                ibc(Op::Jmp, 0, 5),
                ibc(Op::LoadI, 3, 2),
                i(Op::WrapI64, 4, 2, 0),
                ibc(Op::LoadI, 5, 10),
                i(Op::MulI64, 3, 3, 5),
                i(Op::AddI64, 3, 3, 4),
                i(Op::Ret, 3, 0, 0),
            ];
            let vals = values(ty);
            let mut args = vec![];
            for x in &vals {
                for y in &vals {
                    args.push(vec![x.clone(), y.clone()]);
                }
            }
            let got = both(2, I64, &[ty, ty, BOOL, I64, I64, I64], code, 1, &args);
            // Sanity: the comparison really ran (not every result is the same).
            assert!(got.iter().any(|v| v != &got[0]), "{cmp:?} {br:?}");
        }
    }
}

#[test]
fn counted_loops() {
    for (ty, add, cmp) in [
        (I64, Op::AddImmI64, Op::LtI64),
        (I64, Op::AddImmI64, Op::LeI64),
        (I32, Op::AddImmI32, Op::LtI32),
        (I32, Op::AddImmI32, Op::LeI32),
    ] {
        let wrap = |v: i64| {
            if ty == I64 {
                Value::I64(v)
            } else {
                Value::I32(v as i32)
            }
        };
        for step in [1i16, 3, 7] {
            // f(i, n): s = 0; while (i < n) { s = s + i; i += step } return s * 4096 + i + c
            let code = vec![
                ibc(Op::LoadI, 2, 0),
                i(cmp, 3, 0, 1), // 1: head
                ibc(Op::JmpIfNot, 3, 6),
                i(if ty == I64 { Op::AddI64 } else { Op::AddI32 }, 2, 2, 0),
                i(add, 0, 0, step as u16),
                ibc(Op::Jmp, 0, 1),
                ibc(Op::LoadI, 4, 4096), // 6
                i(if ty == I64 { Op::MulI64 } else { Op::MulI32 }, 2, 2, 4),
                i(if ty == I64 { Op::AddI64 } else { Op::AddI32 }, 2, 2, 0),
                i(if ty == I64 { Op::WrapI64 } else { Op::WrapI32 }, 4, 3, 0),
                i(if ty == I64 { Op::AddI64 } else { Op::AddI32 }, 2, 2, 4),
                i(Op::Ret, 2, 0, 0),
            ];
            let args: Vec<Vec<Value>> = [(0, 10), (5, 5), (5, 6), (-7, 20), (3, 0), (0, 100)]
                .iter()
                .map(|&(a, b)| vec![wrap(a), wrap(b)])
                .collect();
            // Unfused: a nop between the addi and the jmp.
            both(2, ty, &[ty, ty, ty, BOOL, ty], code.clone(), 5, &args);
            // The reference for f(0, 10): the sum of i over the iterations, and the first i that
            // fails the test.
            let inclusive = cmp == Op::LeI64 || cmp == Op::LeI32;
            let end = if inclusive { 11 } else { 10 };
            let sum: i64 = (0..end).step_by(step as usize).sum();
            let last = (0..).step_by(step as usize).find(|&v| v >= end).unwrap();
            let got = both(2, ty, &[ty, ty, ty, BOOL, ty], code, 5, &args[..1]);
            assert_eq!(got[0], wrap(sum * 4096 + last), "{cmp:?} step {step}");
        }
    }
}

#[test]
fn multiply_add() {
    for (ty, mul, add, sub) in [
        (F64, Op::MulF64, Op::AddF64, Op::SubF64),
        (F32, Op::MulF32, Op::AddF32, Op::SubF32),
    ] {
        let vals = values(ty);
        let mut args = vec![];
        for x in &vals {
            for y in &vals[..3] {
                args.push(vec![x.clone(), y.clone(), vals[2].clone()]);
            }
        }
        // r3 = r0 * r1, then each add/sub form; the second function returns the product.
        let forms = [
            i(add, 4, 2, 3),
            i(add, 4, 3, 2),
            i(sub, 4, 2, 3),
            i(sub, 4, 3, 2),
            i(add, 4, 3, 3), // both operands the product
            i(sub, 3, 3, 2), // overwrites the product
            i(add, 2, 2, 3), // overwrites the other operand
        ];
        for form in forms {
            for ret in [4u16, 3, 2] {
                let code = vec![
                    i(Op::Mov, 4, 0, 0),
                    i(mul, 3, 0, 1),
                    form,
                    i(Op::Ret, ret, 0, 0),
                ];
                both(3, ty, &[ty, ty, ty, ty, ty], code, 2, &args);
            }
        }
        // Two roundings, never an FMA.
        let e = if ty == F64 {
            Value::F64(1.0 + f64::EPSILON)
        } else {
            Value::F32(1.0 + f32::EPSILON)
        };
        let m = if ty == F64 {
            Value::F64(-(1.0 + 2.0 * f64::EPSILON))
        } else {
            Value::F32(-(1.0 + 2.0 * f32::EPSILON))
        };
        let code = vec![i(mul, 3, 0, 1), i(add, 4, 2, 3), i(Op::Ret, 4, 0, 0)];
        let got = both(
            3,
            ty,
            &[ty, ty, ty, ty, ty],
            code,
            1,
            &[vec![e.clone(), e, m]],
        );
        let zero = if ty == F64 {
            Value::F64(0.0)
        } else {
            Value::F32(0.0)
        };
        assert_eq!(got[0], zero, "the product must be rounded before the add");
    }
}

#[test]
fn constant_then_compare_and_branch() {
    for (ty, cmp, k) in [
        (I64, Op::LtI64, 0u64),
        (I64, Op::LeI64, (-1i64) as u64),
        (I32, Op::LtI32, 50),
        (U32, Op::LtU32, 7),
        (U64, Op::LeU64, u64::MAX),
        (I8, Op::EqI8, (-128i64) as u64),
        (I16, Op::NeI16, 300),
        (F64, Op::LtF64, 4.0f64.to_bits()),
        (F64, Op::LeF64, (-0.0f64).to_bits()),
        (F32, Op::LtF32, 1.5f32.to_bits() as u64),
    ] {
        for k_left in [false, true] {
            for br in [Op::JmpIf, Op::JmpIfNot] {
                // r3 := k (loadk); r2 := cmp(r0, r3) or cmp(r3, r0); branch; result as in
                // `compare_and_branch`.
                let (b, c) = if k_left { (3, 0) } else { (0, 3) };
                let code = vec![
                    ibc(Op::LoadK, 3, 0),
                    i(cmp, 2, b, c),
                    ibc(br, 2, 5),
                    ibc(Op::LoadI, 4, 1),
                    ibc(Op::Jmp, 0, 6),
                    ibc(Op::LoadI, 4, 2),
                    i(Op::WrapI64, 5, 2, 0),
                    ibc(Op::LoadI, 6, 10),
                    i(Op::MulI64, 4, 4, 6),
                    i(Op::AddI64, 4, 4, 5),
                    i(Op::Ret, 4, 0, 0),
                ];
                let args: Vec<Vec<Value>> = values(ty)
                    .into_iter()
                    .map(|v| vec![v, Value::Bool(false)])
                    .collect();
                let regs = [ty, BOOL, BOOL, ty, I64, I64, I64];
                let mut m = module(vec![func("T.f", 2, Some(I64), regs.to_vec(), code.clone())]);
                m.consts.push(cajeta_bytecode::Const::Bits(k));
                let mut plain = m.clone();
                plain.functions[0].code = unfuse(&code, 1);
                let (mut fused, mut plain) = (new_vm(m), new_vm(plain));
                for a in &args {
                    assert_eq!(
                        fused.call_index(0, a).unwrap(),
                        plain.call_index(0, a).unwrap(),
                        "{cmp:?} {br:?} {a:?}"
                    );
                }
            }
        }
    }
    // The loadi form.
    let code = vec![
        ibc(Op::LoadI, 2, 50),
        i(Op::LtI64, 1, 0, 2),
        ibc(Op::JmpIfNot, 1, 5),
        ibc(Op::LoadI, 2, 7),
        i(Op::Ret, 2, 0, 0),
        i(Op::Ret, 2, 0, 0),
    ];
    let got = both(
        1,
        I64,
        &[I64, BOOL, I64],
        code,
        1,
        &[vec![Value::I64(49)], vec![Value::I64(50)]],
    );
    assert_eq!(got, vec![Value::I64(7), Value::I64(50)]);
}

#[test]
fn constant_then_arithmetic() {
    let ints: &[(Type, Op, &[i64])] = &[
        (I64, Op::MulI64, &[3, -1, 0]),
        (I64, Op::DivI64, &[7, -7, 2, 0, -1]),
        (I64, Op::RemI64, &[7, -7, 0, -1]),
        (I32, Op::MulI32, &[65537, -1]),
        (I32, Op::DivI32, &[3, 0, -1]),
        (I32, Op::RemI32, &[3, -2, 0, -1]),
    ];
    for &(ty, o, ks) in ints {
        for &k in ks {
            for k_left in [false, true] {
                let (b, c) = if k_left { (2, 0) } else { (0, 2) };
                let code = vec![
                    ibc(Op::LoadI, 2, k as i32 as u32),
                    i(o, 1, b, c),
                    i(Op::Ret, 1, 0, 0),
                ];
                let vals = values(ty);
                let m = module(vec![func(
                    "T.f",
                    1,
                    Some(ty),
                    vec![ty, ty, ty],
                    code.clone(),
                )]);
                let mut plain = m.clone();
                plain.functions[0].code = unfuse(&code, 1);
                let (mut fused, mut plain) = (new_vm(m), new_vm(plain));
                for v in &vals {
                    let a = [v.clone()];
                    let (x, y) = (fused.call_index(0, &a), plain.call_index(0, &a));
                    match (x, y) {
                        (Ok(x), Ok(y)) => assert_eq!(x, y, "{o:?} k={k} {v:?}"),
                        (Err(x), Err(y)) => {
                            assert_eq!((x.code, &x.message), (y.code, &y.message));
                            assert_eq!(x.trace[0].line, y.trace[0].line - 1, "fault at the divide");
                        }
                        (x, y) => panic!("{o:?} k={k} {v:?}: {x:?} vs {y:?}"),
                    }
                }
            }
        }
    }
    for o in [Op::AddF64, Op::SubF64, Op::MulF64, Op::DivF64] {
        for k in [2.0f64, -0.0, 0.1, f64::INFINITY] {
            for (b, c) in [(0, 2), (2, 0), (2, 2)] {
                let mut m = module(vec![func(
                    "T.f",
                    1,
                    Some(F64),
                    vec![F64, F64, F64],
                    vec![ibc(Op::LoadK, 2, 0), i(o, 1, b, c), i(Op::Ret, 1, 0, 0)],
                )]);
                m.consts.push(cajeta_bytecode::Const::Bits(k.to_bits()));
                let mut plain = m.clone();
                plain.functions[0].code = unfuse(&m.functions[0].code, 1);
                let (mut fused, mut plain) = (new_vm(m), new_vm(plain));
                for v in values(F64) {
                    let a = [v];
                    let (x, y) = (
                        fused.call_index(0, &a).unwrap().unwrap(),
                        plain.call_index(0, &a).unwrap().unwrap(),
                    );
                    let same = match (&x, &y) {
                        (Value::F64(p), Value::F64(q)) => {
                            p.to_bits() == q.to_bits() || (p.is_nan() && q.is_nan())
                        }
                        _ => false,
                    };
                    assert!(same, "{o:?} k={k} ({b},{c}) {a:?}: {x:?} vs {y:?}");
                }
            }
        }
    }
}

#[test]
fn counted_loops_with_constant_bounds() {
    for (ty, add, cmp) in [
        (I64, Op::AddImmI64, Op::LtI64),
        (I64, Op::AddImmI64, Op::LeI64),
        (I32, Op::AddImmI32, Op::LtI32),
        (I32, Op::AddImmI32, Op::LeI32),
    ] {
        let (addr, mul) = if ty == I64 {
            (Op::AddI64, Op::MulI64)
        } else {
            (Op::AddI32, Op::MulI32)
        };
        // f(i): s = 0; while (i < 20) { s = s + i; i += 3 } return s * 4096 + i
        let code = vec![
            ibc(Op::LoadI, 1, 0),
            ibc(Op::LoadI, 2, 20), // 1: head (a constant load)
            i(cmp, 3, 0, 2),
            ibc(Op::JmpIfNot, 3, 7),
            i(addr, 1, 1, 0),
            i(add, 0, 0, 3),
            ibc(Op::Jmp, 0, 1),
            ibc(Op::LoadI, 2, 4096), // 7
            i(mul, 1, 1, 2),
            i(addr, 1, 1, 0),
            i(Op::Ret, 1, 0, 0),
        ];
        let wrap = |v: i64| {
            if ty == I64 {
                Value::I64(v)
            } else {
                Value::I32(v as i32)
            }
        };
        let args: Vec<Vec<Value>> = [0, 19, 20, 21, -5].iter().map(|&v| vec![wrap(v)]).collect();
        let got = both(1, ty, &[ty, ty, ty, BOOL], code, 6, &args);
        let end = if matches!(cmp, Op::LeI64 | Op::LeI32) {
            21
        } else {
            20
        };
        let sum: i64 = (0..end).step_by(3).sum();
        let last = (0..).step_by(3).find(|&v| v >= end).unwrap();
        assert_eq!(got[0], wrap(sum * 4096 + last), "{cmp:?}");
    }
}

#[test]
fn paired_float64_array_loads() {
    use cajeta_bytecode::{Elem, Scalar};
    let arr = Type::Array(Elem::Scalar(Scalar::F64));
    // f(x: f64, y: f64, i: i64, j: i64): a = [x, y, x + y]; return a[i] op a[j].
    // r0 x, r1 y, r2 i, r3 j, r4 a, r5 len/idx, r6 s, r7 p, r8 q, r9 out
    let regs = [F64, F64, I64, I64, arr, I64, F64, F64, F64, F64];
    let build = |tail: Vec<Instr>| {
        let mut code = vec![
            Instr::with_bc(Op::LoadI, 5, 3),
            i(Op::NewArr, 4, 5, 0),
            Instr::with_bc(Op::LoadI, 5, 0),
            i(Op::ArrSetF64, 4, 5, 0),
            Instr::with_bc(Op::LoadI, 5, 1),
            i(Op::ArrSetF64, 4, 5, 1),
            i(Op::AddF64, 6, 0, 1),
            Instr::with_bc(Op::LoadI, 5, 2),
            i(Op::ArrSetF64, 4, 5, 6),
        ];
        code.extend(tail);
        code
    };
    let first = 9; // the first `aget.f64`
    let mut args = vec![];
    for x in values(F64).into_iter().take(4) {
        for (p, q) in [(0i64, 1i64), (2, 0), (1, 1)] {
            args.push(vec![
                x.clone(),
                Value::F64(0.75),
                Value::I64(p),
                Value::I64(q),
            ]);
        }
    }
    for op in [Op::AddF64, Op::SubF64, Op::MulF64, Op::DivF64] {
        for (d, b, c) in [(9u16, 7u16, 8u16), (9, 8, 7), (7, 7, 8), (8, 8, 8)] {
            let code = build(vec![
                i(Op::ArrGetF64, 7, 4, 2),
                i(Op::ArrGetF64, 8, 4, 3),
                i(op, d, b, c),
                i(Op::Ret, d, 0, 0),
            ]);
            // Unfused between the loads, and between the second load and the arithmetic.
            both(4, F64, &regs, code.clone(), first + 1, &args);
            both(4, F64, &regs, code, first + 2, &args);
        }
    }
    // A fault in either load reports that load's position, fused or not.
    let code = build(vec![
        i(Op::ArrGetF64, 7, 4, 2),
        i(Op::ArrGetF64, 8, 4, 3),
        i(Op::SubF64, 9, 7, 8),
        i(Op::Ret, 9, 0, 0),
    ]);
    for (p, q, bad) in [(7i64, 0i64, 7i64), (0, 9, 9)] {
        let a = vec![
            Value::F64(1.0),
            Value::F64(2.0),
            Value::I64(p),
            Value::I64(q),
        ];
        let mut fused = new_vm(module(vec![func(
            "T.f",
            4,
            Some(F64),
            regs.to_vec(),
            code.clone(),
        )]));
        let err = fused.call_index(0, &a).unwrap_err();
        assert_eq!(err.code, "E-BOUNDS");
        assert_eq!(
            err.message,
            format!("index {bad} out of bounds for length 3")
        );
        let mut plain = new_vm(module(vec![func(
            "T.f",
            4,
            Some(F64),
            regs.to_vec(),
            unfuse(&code, first + 1),
        )]));
        let err2 = plain.call_index(0, &a).unwrap_err();
        assert_eq!(err.message, err2.message);
    }
}
