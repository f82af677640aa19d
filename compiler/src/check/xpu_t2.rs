//! Tier-2 library calls (XPU §2.7, §2.8, §2.12): `Bits` and the `Cajeta` bit casts (host and
//! device), the T2 `Wave` collectives and `Barrier.wave`, and the atomics family on buffers and
//! shared arrays.

use super::builtins::LibClass;
use super::expr::typed_op;
use super::func::{FnBuilder, Val};
use super::ty::{EnumTy, Ty};
use crate::ast::{Arg, ExprKind, Ident};
use crate::diag::{code, Span};
use cajeta_bytecode::{Op, Scalar, Type};

impl FnBuilder<'_> {
    /// `Bits.count/reverse/rotateLeft/rotateRight` (uint32 in and out) and
    /// `Cajeta.f32ToBits/bitsToF32/f64ToBits/bitsToF64`; `None` for any other member.
    pub(super) fn bits_call(
        &mut self,
        lib: LibClass,
        name: &Ident,
        args: &[Arg],
        span: Span,
    ) -> Option<Val> {
        let u32t = Scalar::U32;
        // (opcode, parameter types, result type)
        let (op, params, ret): (Op, &[Scalar], Scalar) = match (lib, name.name.as_str()) {
            (LibClass::Bits, "count") => (Op::PopcU32, &[u32t], u32t),
            (LibClass::Bits, "reverse") => (Op::BrevU32, &[u32t], u32t),
            (LibClass::Bits, "rotateLeft") => (Op::RotlU32, &[u32t, u32t], u32t),
            (LibClass::Bits, "rotateRight") => (Op::RotrU32, &[u32t, u32t], u32t),
            (LibClass::Cajeta, "f32ToBits") => (Op::F32Bits, &[Scalar::F32], Scalar::I32),
            (LibClass::Cajeta, "bitsToF32") => (Op::BitsF32, &[Scalar::I32], Scalar::F32),
            (LibClass::Cajeta, "f64ToBits") => (Op::F64Bits, &[Scalar::F64], Scalar::I64),
            (LibClass::Cajeta, "bitsToF64") => (Op::BitsF64, &[Scalar::I64], Scalar::F64),
            _ => return None,
        };
        let what = format!("{}.{}", lib.name(), name.name);
        if !self.expect_args(args, params.len(), &what, span) {
            let _ = self.eval_args(args);
            return Some(Val::error());
        }
        let vals = self.eval_args(args);
        if vals.iter().any(|v| v.ty == Ty::Error) {
            return Some(Val::error());
        }
        let mut regs = vec![];
        for (i, (v, &p)) in vals.iter().zip(params).enumerate() {
            // Numbers convert as arguments do (LANGUAGE §3.2); nothing else does.
            if !v.ty.is_numeric() {
                let n = self.ty_name(&v.ty);
                self.error(
                    code::TYPE_MISMATCH,
                    args[i].value.span,
                    format!("{what} needs a number, found {n}"),
                );
                return Some(Val::error());
            }
            regs.push(self.arg_to(args, &vals, i, &Ty::Prim(p))?);
        }
        self.set_pos(span);
        let c = regs.get(1).copied().unwrap_or(0);
        let d = self.def(op, Type::Scalar(ret), regs[0], c);
        Some(Val::reg(Ty::Prim(ret), d))
    }
}

impl FnBuilder<'_> {
    /// `b.atomicOp(i, v[, o])` and `b.atomicCompareExchange(i, expected, desired[, o])` on a
    /// buffer or shared array (XPU §2.8): the element's old value. `o` must be written as a
    /// `MemoryOrder` constant; every order is accepted (the `cpu` backend is sequentially
    /// consistent throughout).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn atomic_method(
        &mut self,
        recv: &Val,
        elem: Scalar,
        n: &str,
        name: &Ident,
        args: &[Arg],
        span: Span,
        what: &str,
    ) -> Val {
        let base_op = match n {
            "atomicAdd" => "add",
            "atomicSub" => "sub",
            "atomicMin" => "min",
            "atomicMax" => "max",
            "atomicAnd" => "and",
            "atomicOr" => "or",
            "atomicXor" => "xor",
            "atomicExchange" => "xchg",
            "atomicCompareExchange" => "cas",
            _ => {
                let _ = self.eval_args(args);
                self.error(
                    code::UNRESOLVED_METHOD,
                    name.span,
                    format!("a {what} has no method '{n}'"),
                );
                return Val::error();
            }
        };
        if !self.device_only(n, span) {
            let _ = self.eval_args(args);
            return Val::error();
        }
        let Some(op) = typed_op(&format!("atom.{base_op}"), elem) else {
            let _ = self.eval_args(args);
            self.error(
                code::TYPE_MISMATCH,
                name.span,
                format!("{n} is not available on {} elements", elem.name()),
            );
            return Val::error();
        };
        let operands = if base_op == "cas" { 3 } else { 2 };
        // An optional trailing MemoryOrder constant.
        let with_order = args.len() == operands + 1;
        let count = if with_order { operands + 1 } else { operands };
        if !self.expect_args(args, count, n, span) {
            let _ = self.eval_args(args);
            return Val::error();
        }
        let vals = self.eval_args(args);
        if vals.iter().any(|v| v.ty == Ty::Error) {
            return Val::error();
        }
        if with_order {
            let o = &args[operands].value;
            let constant = matches!(&o.kind, ExprKind::Field { target, .. }
                if matches!(&target.kind, ExprKind::Name(id) if id.name == "MemoryOrder"));
            if vals[operands].ty != Ty::Enum(EnumTy::MemoryOrder) || !constant {
                self.error(
                    code::TYPE_MISMATCH,
                    o.span,
                    "the memory order of an atomic must be a MemoryOrder constant",
                );
                return Val::error();
            }
        }
        let Some(base) = self.materialize(recv) else {
            return Val::error();
        };
        let Some(idx) = self.device_index(&vals[0], args[0].value.span) else {
            return Val::error();
        };
        let t = Ty::Prim(elem);
        let Some(v) = self.arg_to(args, &vals, 1, &t) else {
            return Val::error();
        };
        // r[a] holds the operand (the expected value for cas, the desired one in r[a+1]) and
        // receives the old value.
        let d = if base_op == "cas" {
            let Some(w) = self.arg_to(args, &vals, 2, &t) else {
                return Val::error();
            };
            let d = self.window(&[Type::Scalar(elem); 2]);
            self.emit(Op::Mov, d + 1, w, 0);
            d
        } else {
            self.temp(Type::Scalar(elem))
        };
        self.emit(Op::Mov, d, v, 0);
        self.set_pos(span);
        self.emit(op, d, base, idx);
        Val::reg(t, d)
    }
}
