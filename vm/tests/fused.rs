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
            let x = fused.call(0, a).unwrap().unwrap();
            let y = plain.call(0, a).unwrap().unwrap();
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
