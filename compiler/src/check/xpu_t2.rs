//! Tier-2 library calls (XPU §2.7, §2.8, §2.12): `Bits` and the `Cajeta` bit casts (host and
//! device), the T2 `Wave` collectives and `Barrier.wave`, and the atomics family on buffers and
//! shared arrays.

use super::builtins::LibClass;
use super::func::{FnBuilder, Val};
use super::ty::Ty;
use crate::ast::{Arg, Ident};
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
