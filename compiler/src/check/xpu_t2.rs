//! Tier-2 library calls (XPU §2.7, §2.8, §2.12): `Bits` and the `Cajeta` bit casts (host and
//! device), the T2 `Wave` collectives and `Barrier.wave`, and the atomics family on buffers and
//! shared arrays.

use super::builtins::LibClass;
use super::expr::typed_op;
use super::func::{FnBuilder, Val};
use super::ty::{EnumTy, Ty};
use crate::ast::{Arg, ExprKind, Ident};
use crate::diag::{code, Diag, Span};
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
        let Some(vals) = self.arg_vals(args, params.len(), &what, span) else {
            return Some(Val::error());
        };
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
    /// Checks that the evaluated argument `v` of `arg` is written as a `MemoryOrder` constant
    /// (XPU §2.8), reporting `CAJETA_ERROR_TYPE_MISMATCH` for `what` otherwise.
    fn check_memory_order(&mut self, arg: &Arg, v: &Val, what: &str) -> bool {
        let o = &arg.value;
        let constant = matches!(&o.kind, ExprKind::Field { target, .. }
            if matches!(&target.kind, ExprKind::Name(id) if id.name == "MemoryOrder"));
        if v.ty != Ty::Enum(EnumTy::MemoryOrder) || !constant {
            if v.ty != Ty::Error {
                self.error(
                    code::TYPE_MISMATCH,
                    o.span,
                    format!("the memory order of {what} must be a MemoryOrder constant"),
                );
            }
            return false;
        }
        true
    }

    /// Evaluates the optional order argument of a fence (`Barrier.workgroupMemory(o)`).
    pub(super) fn memory_order_arg(&mut self, arg: &Arg, what: &str) -> bool {
        let vals = self.eval_args(std::slice::from_ref(arg));
        match vals.first() {
            Some(v) => self.check_memory_order(arg, v, what),
            None => false,
        }
    }

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
        let Some(vals) = self.arg_vals(args, count, n, span) else {
            return Val::error();
        };
        if with_order && !self.check_memory_order(&args[operands], &vals[operands], "an atomic") {
            return Val::error();
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

/// The `kattr` operands (selector, value) of a kernel's `@Wave(width = N)`,
/// `@Occupancy(maxThreads = N, …)` and `@FastMath` (XPU §3.1), or the `XPU-K01` errors of
/// malformed ones: a width that is not a power of two 1…64, a `maxThreads` that is not an
/// integer ≥ 1. Other `@Occupancy` elements are accepted and ignored.
pub(super) fn kernel_attrs(anns: &[crate::ast::Annotation]) -> Result<Vec<(u16, u16)>, Vec<Diag>> {
    use cajeta_bytecode::KernelAttrs;
    let mut out = vec![];
    let mut errors = vec![];
    // An integer literal argument named `name` (or the unnamed `value=` one).
    let int_arg = |a: &crate::ast::Annotation, name: &str| {
        a.args
            .iter()
            .find(|x| x.name.as_ref().is_none_or(|n| n.name == name))
            .map(|x| match &x.value.kind {
                ExprKind::Int { value, .. } => Ok(*value),
                _ => Err(x.value.span),
            })
    };
    for a in anns {
        match a.name.joined().as_str() {
            "Wave" => match int_arg(a, "width") {
                Some(Ok(n)) if n.is_power_of_two() && n <= 64 => {
                    out.push((KernelAttrs::WAVE_WIDTH, n as u16));
                }
                Some(Ok(n)) => errors.push(Diag::error(
                    code::XPU_K01,
                    a.span,
                    format!("@Wave width {n} is not a power of two from 1 to 64"),
                )),
                Some(Err(span)) => errors.push(Diag::error(
                    code::XPU_K01,
                    span,
                    "@Wave width must be an integer constant",
                )),
                None => errors.push(Diag::error(code::XPU_K01, a.span, "@Wave needs width = N")),
            },
            "Occupancy" => match int_arg(a, "maxThreads") {
                // Blocks never exceed 2^32 items; a limit beyond 65535 never refuses one on
                // any backend (1024 items at most), so it is recorded as 65535.
                Some(Ok(n)) if n >= 1 => {
                    out.push((KernelAttrs::MAX_THREADS, n.min(65535) as u16));
                }
                Some(Ok(_)) => errors.push(Diag::error(
                    code::XPU_K01,
                    a.span,
                    "@Occupancy maxThreads must be at least 1",
                )),
                Some(Err(span)) => errors.push(Diag::error(
                    code::XPU_K01,
                    span,
                    "@Occupancy maxThreads must be an integer constant",
                )),
                None => {}
            },
            "FastMath" => out.push((KernelAttrs::FAST_MATH, 1)),
            _ => {}
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

impl FnBuilder<'_> {
    /// The T2 members of `Wave` (XPU §2.7): the integer and float reductions, the exclusive
    /// scans, shuffle, rotate and ballot. Every one is a wave collective. `None` for any other
    /// member.
    pub(super) fn wave_t2_call(&mut self, n: &str, args: &[Arg], span: Span) -> Option<Val> {
        let (u32t, f32t) = (Scalar::U32, Scalar::F32);
        // (opcode, parameter types, result type)
        let (op, params, ret): (Op, &[Scalar], Scalar) = match n {
            "reduceMax" => (Op::WaveMaxU32, &[u32t], u32t),
            "reduceMin" => (Op::WaveMinU32, &[u32t], u32t),
            "reduceAnd" => (Op::WaveAndU32, &[u32t], u32t),
            "reduceOr" => (Op::WaveOrU32, &[u32t], u32t),
            "reduceXor" => (Op::WaveXorU32, &[u32t], u32t),
            "reduceMaxF32" => (Op::WaveMaxF32, &[f32t], f32t),
            "prefixSum" => (Op::WaveScanAddU32, &[u32t], u32t),
            "prefixProduct" => (Op::WaveScanMulU32, &[u32t], u32t),
            "shuffleSync" => (Op::WaveShflU32, &[u32t, u32t], u32t),
            "rotate" => (Op::WaveRotU32, &[u32t, u32t], u32t),
            "ballotSync" => (Op::WaveBallot, &[Scalar::Bool], Scalar::U64),
            _ => return None,
        };
        let what = format!("Wave.{n}");
        let Some(vals) = self.arg_vals(args, params.len(), &what, span) else {
            return Some(Val::error());
        };
        let mut regs = vec![];
        for (i, &p) in params.iter().enumerate() {
            // Integer types convert to uint32 as arguments do (XPU §2.7); floats travel as
            // bits, so a float where an integer is expected is an error.
            let Some(r) = self.arg_to(args, &vals, i, &Ty::Prim(p)) else {
                return Some(Val::error());
            };
            regs.push(r);
        }
        self.set_pos(span);
        let c = regs.get(1).copied().unwrap_or(0);
        let d = self.def(op, Type::Scalar(ret), regs[0], c);
        Some(Val::reg(Ty::Prim(ret), d))
    }
}

impl FnBuilder<'_> {
    /// The T2 `Device` queries (XPU §2.10): `waveSize`, `memoryBytes`, `multiprocessorCount`,
    /// `integrated`, `launchFailures`, `cpuWorkerCap`, `supports(Capability)`,
    /// `kernelAvailable(String)` and `setCpuWorkerCap(int32)`. `None` for any other name.
    pub(super) fn device_query_call(&mut self, n: &str, args: &[Arg], span: Span) -> Option<Val> {
        let what = format!("Device.{n}");
        let query = match n {
            "waveSize" => Some((0, Scalar::I32)),
            "memoryBytes" => Some((1, Scalar::I64)),
            "multiprocessorCount" => Some((2, Scalar::I32)),
            "integrated" => Some((3, Scalar::Bool)),
            "launchFailures" => Some((4, Scalar::I64)),
            "cpuWorkerCap" => Some((5, Scalar::I32)),
            _ => None,
        };
        if let Some((sel, t)) = query {
            if !self.expect_args(args, 0, &what, span) {
                let _ = self.eval_args(args);
                return Some(Val::error());
            }
            self.set_pos(span);
            let d = self.def(Op::DeviceQuery, Type::Scalar(t), sel, 0);
            return Some(Val::reg(Ty::Prim(t), d));
        }
        // (opcode, parameter type, result type)
        let (op, param, ret) = match n {
            "supports" => (
                Op::DeviceSupports,
                Ty::Enum(EnumTy::Capability),
                Some(Scalar::Bool),
            ),
            "kernelAvailable" => (Op::DeviceKernelOk, Ty::Str, Some(Scalar::Bool)),
            "setCpuWorkerCap" => (Op::DeviceSetWorkers, Ty::Prim(Scalar::I32), None),
            _ => return None,
        };
        if !self.expect_args(args, 1, &what, span) {
            let _ = self.eval_args(args);
            return Some(Val::error());
        }
        let vals = self.eval_args(args);
        if vals[0].ty == Ty::Error {
            return Some(Val::error());
        }
        if param == Ty::Enum(EnumTy::Capability) && vals[0].ty != param {
            let found = self.ty_name(&vals[0].ty);
            self.error(
                code::TYPE_MISMATCH,
                args[0].value.span,
                format!("{what} needs a Capability, found {found}"),
            );
            return Some(Val::error());
        }
        // A Capability constant converts to its ordinal (XPU §2.9).
        let want = if param == Ty::Str {
            Ty::Str
        } else {
            Ty::Prim(Scalar::I32)
        };
        let Some(r) = self.arg_to(args, &vals, 0, &want) else {
            return Some(Val::error());
        };
        self.set_pos(span);
        Some(match ret {
            Some(t) => {
                let d = self.def(op, Type::Scalar(t), r, 0);
                Val::reg(Ty::Prim(t), d)
            }
            None => {
                self.emit(op, r, 0, 0);
                Self::void()
            }
        })
    }
}

impl FnBuilder<'_> {
    /// `Event.create()` (XPU §2.3): an owned new event, like `KernelStream.create()`.
    pub(super) fn event_static_call(&mut self, name: &Ident, args: &[Arg], span: Span) -> Val {
        let n = name.name.as_str();
        if !self.expect_args(args, 0, &format!("Event.{n}"), span) || !self.host_only("Event", span)
        {
            let _ = self.eval_args(args);
            return Val::error();
        }
        if n != "create" {
            self.error(
                code::UNRESOLVED_METHOD,
                name.span,
                format!("Event has no static method '{n}'"),
            );
            return Val::error();
        }
        self.set_pos(span);
        let d = self.def(Op::EventCreate, Type::Event, 0, 0);
        Val {
            own: super::func::Own::Yes,
            ..Val::reg(Ty::Event, d)
        }
    }

    /// `e.recordOn(s)`, `e.waitHost()`, `e.query()`, `e.destroy()` (XPU §2.3). `waitHost()`
    /// as an expression statement releases launch borrows as `sync()` does (§4.2).
    pub(super) fn event_method(
        &mut self,
        recv: &Val,
        name: &Ident,
        args: &[Arg],
        span: Span,
    ) -> Val {
        let n = name.name.as_str();
        let arity = usize::from(n == "recordOn");
        let known = ["recordOn", "waitHost", "query", "destroy"];
        if !self.host_method_ok("Event", name, &known, arity, args, span) {
            return Val::error();
        }
        let Some(e) = self.materialize(recv) else {
            return Val::error();
        };
        match n {
            "recordOn" => {
                let vals = self.eval_args(args);
                let Some(s) = self.arg_to(args, &vals, 0, &Ty::Stream) else {
                    return Val::error();
                };
                self.set_pos(span);
                self.emit(Op::EventRecord, e, s, 0);
                Self::void()
            }
            "query" => {
                self.set_pos(span);
                let d = self.def(Op::EventQuery, Type::BOOL, e, 0);
                Val::reg(Ty::BOOL, d)
            }
            _ => {
                let op = if n == "waitHost" {
                    self.synced = true;
                    Op::EventWaitHost
                } else {
                    Op::EventDestroy
                };
                self.set_pos(span);
                self.emit(op, e, 0, 0);
                Self::void()
            }
        }
    }

    /// The checks a method of a host object (`Event`, `KernelTimer`) starts with: `arity`
    /// unnamed arguments, host code, and a name among `known` (else
    /// `CAJETA_ERROR_UNRESOLVED_METHOD`). False once one is reported.
    pub(super) fn host_method_ok(
        &mut self,
        class: &str,
        name: &Ident,
        known: &[&str],
        arity: usize,
        args: &[Arg],
        span: Span,
    ) -> bool {
        let n = name.name.as_str();
        // An unknown name first: its arity would only mislead.
        if !known.contains(&n) {
            let _ = self.eval_args(args);
            self.error(
                code::UNRESOLVED_METHOD,
                name.span,
                format!("{class} has no method '{n}'"),
            );
            return false;
        }
        if !self.expect_args(args, arity, &format!("{class}.{n}"), span)
            || !self.host_only(class, span)
        {
            let _ = self.eval_args(args);
            return false;
        }
        true
    }

    /// `s.waitFor(e)` (XPU §2.2): later work on stream register `s` waits for the event.
    pub(super) fn stream_wait_for(&mut self, s: u16, args: &[Arg], span: Span) -> Val {
        let vals = self.eval_args(args);
        let Some(e) = self.arg_to(args, &vals, 0, &Ty::Event) else {
            return Val::error();
        };
        self.set_pos(span);
        self.emit(Op::StreamWaitFor, s, e, 0);
        Self::void()
    }
}
