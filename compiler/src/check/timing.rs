//! `KernelTimer` and `KernelManifest` (XPU §2.13, T2), host only.
//!
//! Both are objects of classes the checker adds after the user classes
//! ([`Program::timer_class`](super::collect::Program::timer_class),
//! [`Program::manifest_class`](super::collect::Program::manifest_class)), so ownership, drops,
//! `null` and field reads work as for any object. A timer keeps two host clock readings and a
//! state word; its methods are lowered here to field accesses around three opcodes:
//! `device.timermark` (read the clock once the stream has reached the mark),
//! `device.timerlive` (XPU-E-FREED after `destroy()`) and, for the manifest,
//! `device.kernelwave` (the wave width the active backend runs a kernel at, 0 if it cannot)
//! and `device.kernelname` (the kernel's qualified name, the manifest's `kernel`).
//!
//! Every backend is host-timed (`KernelTimer.tier()` is 1): a mark waits for its stream, which
//! on `cpu` (synchronous launches) is at once. `elapsedNanos()` is `end − begin` when `end`
//! ran after the latest `begin`, else −1 (never begun, begun but not ended, ended before the
//! latest `begin`); `begin`, `end` and `elapsedNanos` on a destroyed timer are XPU-E-FREED;
//! `destroy()` is idempotent.

use super::collect::ClassRef;
use super::collect::{
    TIMER_BEGIN_FIELD, TIMER_BEGUN, TIMER_DESTROYED, TIMER_ENDED, TIMER_END_FIELD,
    TIMER_STATE_FIELD,
};
use super::func::{FnBuilder, Own, Reg, Val};
use super::ty::Ty;
use crate::ast::{Arg, Expr, ExprKind, Ident};
use crate::diag::{code, Span};
use cajeta_bytecode::{FnKind, Op, RegionKind, Type};

/// The tier every backend has: marks are host clock readings (XPU §2.13).
const HOST_TIMED: u64 = 1;

/// `device.timermark`/`device.timerlive` method selectors (for the VM's messages).
const SEL_BEGIN: u16 = 0;
const SEL_END: u16 = 1;
const SEL_ELAPSED: u16 = 2;

impl FnBuilder<'_> {
    /// `KernelTimer.create()` and `KernelTimer.tier()`.
    pub(super) fn timer_static_call(&mut self, name: &Ident, args: &[Arg], span: Span) -> Val {
        let n = name.name.as_str();
        if !self.expect_args(args, 0, &format!("KernelTimer.{n}"), span)
            || !self.host_only("KernelTimer", span)
        {
            let _ = self.eval_args(args);
            return Val::error();
        }
        self.set_pos(span);
        match n {
            "create" => {
                let c = self.p.timer_class;
                let t = self.new_library_object(c);
                Val {
                    own: Own::Yes,
                    ..Val::reg(Ty::Class(c), t)
                }
            }
            "tier" => {
                let r = self.load_bits(Type::I32, HOST_TIMED);
                Val::reg(Ty::Prim(cajeta_bytecode::Scalar::I32), r)
            }
            _ => {
                self.error(
                    code::UNRESOLVED_METHOD,
                    name.span,
                    format!("KernelTimer has no static method '{n}'"),
                );
                Val::error()
            }
        }
    }

    /// `t.begin(s)`, `t.end(s)`, `t.elapsedNanos()`, `t.destroy()` on a `KernelTimer`.
    pub(super) fn timer_method(
        &mut self,
        recv: &Val,
        name: &Ident,
        args: &[Arg],
        span: Span,
    ) -> Val {
        let n = name.name.as_str();
        let arity = usize::from(matches!(n, "begin" | "end"));
        let known = ["begin", "end", "elapsedNanos", "destroy"];
        if !self.host_method_ok("KernelTimer", name, &known, arity, args, span) {
            return Val::error();
        }
        let Some(t) = self.materialize(recv) else {
            return Val::error();
        };
        let stream = if arity == 1 {
            let vals = self.eval_args(args);
            match self.arg_to(args, &vals, 0, &Ty::Stream) {
                Some(s) => Some(s),
                None => return Val::error(),
            }
        } else {
            None
        };
        self.set_pos(span);
        let state = self.def(Op::GetField, Type::I32, t, TIMER_STATE_FIELD);
        let v = match (n, stream) {
            ("begin", Some(s)) => {
                self.emit(Op::TimerLive, state, SEL_BEGIN, 0);
                let now = self.def(Op::TimerMark, Type::I64, s, SEL_BEGIN);
                self.emit(Op::SetField, t, TIMER_BEGIN_FIELD, now);
                // A new measurement: the end mark of an earlier one no longer counts.
                let begun = self.load_bits(Type::I32, TIMER_BEGUN);
                let next = self.def(Op::OrI32, Type::I32, state, begun);
                let keep = self.load_bits(Type::I32, !TIMER_ENDED);
                self.emit(Op::AndI32, next, next, keep);
                self.emit(Op::SetField, t, TIMER_STATE_FIELD, next);
                Self::void()
            }
            ("end", Some(s)) => {
                self.emit(Op::TimerLive, state, SEL_END, 0);
                let now = self.def(Op::TimerMark, Type::I64, s, SEL_END);
                self.emit(Op::SetField, t, TIMER_END_FIELD, now);
                self.set_state_bits(t, state, TIMER_ENDED);
                Self::void()
            }
            ("elapsedNanos", _) => {
                self.emit(Op::TimerLive, state, SEL_ELAPSED, 0);
                let r = self.timer_elapsed(t, state);
                Val::reg(Ty::Prim(cajeta_bytecode::Scalar::I64), r)
            }
            _ => {
                self.set_state_bits(t, state, TIMER_DESTROYED);
                Self::void()
            }
        };
        self.drop_unstored(recv);
        v
    }

    /// `KernelManifest.of(String kernel)`.
    pub(super) fn manifest_static_call(&mut self, name: &Ident, args: &[Arg], span: Span) -> Val {
        let n = name.name.as_str();
        if !self.expect_args(args, 1, &format!("KernelManifest.{n}"), span)
            || !self.host_only("KernelManifest", span)
        {
            let _ = self.eval_args(args);
            return Val::error();
        }
        if n != "of" {
            let _ = self.eval_args(args);
            self.error(
                code::UNRESOLVED_METHOD,
                name.span,
                format!("KernelManifest has no static method '{n}'"),
            );
            return Val::error();
        }
        let vals = self.eval_args(args);
        let Some(kernel) = self.arg_to(args, &vals, 0, &Ty::Str) else {
            return Val::error();
        };
        self.set_pos(span);
        self.manifest_of(kernel)
    }

    /// `k.manifest()`, `k` a kernel of this class or `Class.k` (XPU §2.13): the manifest of
    /// that kernel, found by its qualified name. `None` when `target` names no kernel (a
    /// variable called `k` wins, as for any name), so the call is an ordinary method call.
    pub(super) fn kernel_manifest_call(
        &mut self,
        target: &Expr,
        args: &[Arg],
        span: Span,
    ) -> Option<Val> {
        let kernel_in = |c: u32, n: &str| {
            self.p.classes[c as usize]
                .methods
                .iter()
                .find(|m| m.name == n && m.kind == FnKind::Kernel)
                .map(|m| m.func)
        };
        let func = match &target.kind {
            ExprKind::Name(id) if self.lookup_local(&id.name).is_none() => {
                let c = &self.p.classes[self.class as usize];
                let shadowed = c.fields.iter().any(|f| f.name == id.name)
                    || c.statics
                        .iter()
                        .any(|&s| self.p.statics[s as usize].name == id.name);
                if shadowed {
                    return None;
                }
                kernel_in(self.class, &id.name)
            }
            ExprKind::Field { target: t, name } => match self.class_path(t) {
                Some(ClassRef::User(c)) => kernel_in(c, &name.name),
                _ => None,
            },
            _ => None,
        }?;
        if !self.expect_args(args, 0, "manifest", span) || !self.host_only("KernelManifest", span) {
            let _ = self.eval_args(args);
            return Some(Val::error());
        }
        self.set_pos(span);
        let qual = self.p.functions[func as usize].name.clone();
        let k = self.temp(Type::Str);
        let at = self.pool.str(&qual);
        self.emit_bc(Op::LoadK, k, at);
        Some(self.manifest_of(k))
    }

    /// The manifest of the kernel named by string register `kernel`: `null` when the active
    /// backend cannot run it (`device.kernelwave` gives 0), else a new object holding the
    /// kernel's qualified name (`pkg.Class.k`, whichever name form found it), the backend's
    /// name and the wave width.
    pub(super) fn manifest_of(&mut self, kernel: Reg) -> Val {
        let c = self.p.manifest_class;
        let wave = self.def(Op::KernelWave, Type::I32, kernel, 0);
        let res = self.temp(Type::Object(c));
        self.emit(Op::LoadNull, res, 0, 0);
        let zero = self.load_bits(Type::I32, 0);
        let runs = self.def(Op::NeI32, Type::BOOL, wave, zero);
        let skip = self.emit_bc(Op::JmpIfNot, runs, 0);
        let m = self.new_library_object(c);
        let qual = self.def(Op::KernelName, Type::Str, kernel, 0);
        self.emit(Op::SetField, m, 0, qual);
        let target = self.def(Op::DeviceBackend, Type::Str, 0, 0);
        self.emit(Op::SetField, m, 1, target);
        self.emit(Op::SetField, m, 2, wave);
        self.emit(Op::Mov, res, m, 0);
        let merge = self.pc();
        self.patch(skip, merge);
        self.region(RegionKind::If, skip as u32, 0, merge);
        Val {
            own: Own::Yes,
            ..Val::reg(Ty::Class(c), res)
        }
    }

    /// A new zero-filled object of class `c` in a temporary.
    fn new_library_object(&mut self, c: u32) -> Reg {
        let r = self.def(Op::NewObj, Type::Object(c), 0, 0);
        let last = self.code.len() - 1;
        self.code[last].set_bc(c);
        r
    }

    /// Stores `state | bits` as timer `t`'s state word.
    fn set_state_bits(&mut self, t: Reg, state: Reg, bits: u64) {
        let b = self.load_bits(Type::I32, bits);
        let next = self.def(Op::OrI32, Type::I32, state, b);
        self.emit(Op::SetField, t, TIMER_STATE_FIELD, next);
    }

    /// `end − begin` when both marks of the latest measurement are set, else −1.
    fn timer_elapsed(&mut self, t: Reg, state: Reg) -> Reg {
        let res = self.temp(Type::I64);
        self.load_bits_into(res, Type::I64, u64::MAX);
        let both = self.load_bits(Type::I32, TIMER_BEGUN | TIMER_ENDED);
        let marks = self.def(Op::AndI32, Type::I32, state, both);
        let done = self.def(Op::EqI32, Type::BOOL, marks, both);
        let skip = self.emit_bc(Op::JmpIfNot, done, 0);
        let begin = self.def(Op::GetField, Type::I64, t, TIMER_BEGIN_FIELD);
        let end = self.def(Op::GetField, Type::I64, t, TIMER_END_FIELD);
        self.emit(Op::SubI64, res, end, begin);
        let merge = self.pc();
        self.patch(skip, merge);
        self.region(RegionKind::If, skip as u32, 0, merge);
        res
    }
}
