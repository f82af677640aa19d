//! The xpu side of the checker (XPU.md): `KernelBuffer`/`KernelStream`/`Device` host API,
//! device code (`KernelThread`, `Workgroup`, `Barrier`, buffer and shared elements, atomics),
//! the launch statement, and the side rules `XPU-K04` (device-only in host code), `XPU-N01`
//! (not allowed in device code) and `XPU-N02` (malformed launch).
//!
//! Kernel ABI (what every backend receives): a kernel's parameters are scalars and buffers
//! only. A POD-class parameter is *flattened* into one scalar parameter per field, in field
//! order; device functions use the same convention, and kernels and device functions take no
//! owns-flags (device code never owns anything).

use super::builtins::{self, LibClass};
use super::collect::ClassRef;
use super::expr::typed_op;
use super::func::{FnBuilder, Loc, Own, Reg, Val};
use super::ty::Ty;
use super::MethodSig;
use crate::ast::{Arg, Expr, ExprKind, Ident, TypeArg};
use crate::diag::{code, Span};
use cajeta_bytecode::{FnKind, Op, Scalar, Type};

/// `Geom` selectors (see the opcode table).
pub mod geom {
    /// `KernelThread.x()`; +1, +2 for y, z.
    pub const THREAD: u16 = 0;
    /// `Workgroup.x()`; +1, +2 for y, z.
    pub const GROUP: u16 = 3;
    /// `Workgroup.dimX()`; +1, +2 for Y, Z.
    pub const BLOCK_DIM: u16 = 6;
    /// `KernelThread.globalIdX()`; +1, +2 for Y, Z.
    pub const GLOBAL: u16 = 9;
    /// The grid size (workgroups) along x; +1, +2 for y, z. Internal (grid-stride loops).
    pub const GRID_DIM: u16 = 12;
    /// `Wave.width()`.
    pub const WAVE_WIDTH: u16 = 15;
    /// `Wave.laneId()`.
    pub const LANE_ID: u16 = 16;
}

/// Register types a call passes for `sig`'s parameters (after a constructor's `this`):
/// host functions take declared parameters then owns-flags; device code takes POD parameters
/// flattened to their fields.
pub fn param_types(fb: &FnBuilder<'_>, sig: &MethodSig) -> Vec<Type> {
    let mut out = vec![];
    if sig.kind == FnKind::Host {
        out.extend(
            sig.params
                .iter()
                .flat_map(|(_, t)| std::iter::repeat_n(t.reg(), t.lanes())),
        );
        out.extend(std::iter::repeat_n(Type::BOOL, sig.flag_count()));
    } else {
        for (_, t) in &sig.params {
            match t {
                Ty::Class(c) => {
                    out.extend(fb.p.classes[*c as usize].fields.iter().map(|f| f.ty.reg()))
                }
                // A shared array travels with its int64 length (see `FnBuilder::emit`).
                Ty::Shared(s) => out.extend([Type::Shared(*s), Type::I64]),
                t => out.extend(std::iter::repeat_n(t.reg(), t.lanes())),
            }
        }
    }
    out
}

impl FnBuilder<'_> {
    pub(super) fn void() -> Val {
        Val {
            ty: Ty::Void,
            loc: Loc::None,
            untyped: false,
            own: Own::No,
        }
    }

    /// Reports `XPU-K04` in host code; true if the operation may proceed.
    pub(super) fn device_only(&mut self, what: &str, span: Span) -> bool {
        if !self.device {
            self.error(
                code::XPU_K04,
                span,
                format!("{what} is only available in @Kernel or @Device code"),
            );
            return false;
        }
        true
    }

    /// Reports `XPU-N01` in device code; true if the operation may proceed.
    pub fn host_only(&mut self, what: &str, span: Span) -> bool {
        if self.device {
            self.error(
                code::XPU_N01,
                span,
                format!("{what} is not allowed in device code"),
            );
            return false;
        }
        true
    }

    /// Converts an argument to `t` or reports a mismatch.
    pub(super) fn arg_to(&mut self, args: &[Arg], vals: &[Val], i: usize, t: &Ty) -> Option<Reg> {
        let v = vals.get(i)?.clone();
        self.coerce(v, t, args[i].value.span)
    }

    pub(super) fn expect_args(&mut self, args: &[Arg], n: usize, what: &str, span: Span) -> bool {
        if let Some(a) = args.iter().find(|a| a.name.is_some()) {
            self.error(
                code::NAMEDARG,
                a.value.span,
                format!("{what} takes no named arguments"),
            );
            return false;
        }
        if args.len() != n {
            self.error(
                code::UNRESOLVED_METHOD,
                span,
                format!("{what} takes {n} argument(s), found {}", args.len()),
            );
            return false;
        }
        true
    }

    /// The values of `args` when there are `n` of them, unnamed (else reported as in
    /// [`expect_args`](Self::expect_args), the arguments still checked) and none is in error:
    /// `None` means the call's value is an error.
    pub(super) fn arg_vals(
        &mut self,
        args: &[Arg],
        n: usize,
        what: &str,
        span: Span,
    ) -> Option<Vec<Val>> {
        if !self.expect_args(args, n, what, span) {
            let _ = self.eval_args(args);
            return None;
        }
        let vals = self.eval_args(args);
        (!vals.iter().any(|v| v.ty == Ty::Error)).then_some(vals)
    }

    /// `heap KernelBuffer<T>(n)` and `heap KernelBuffer<T>(0, n)` (XPU §2.1, parameters
    /// `count` and `handle, count`, which named arguments may bind: LANGUAGE §8.4), or, with
    /// `alloc`, `KernelBuffer<T>.alloc(count)`, a static method.
    pub fn new_buffer(&mut self, elem: Scalar, args: &[Arg], span: Span, alloc: bool) -> Val {
        if !self.host_only("creating a buffer", span) {
            return Val::error();
        }
        let vals = self.eval_args(args);
        if vals.iter().any(|v| v.ty == Ty::Error) {
            return Val::error();
        }
        let (not_found, takes) = if alloc {
            (
                code::UNRESOLVED_METHOD,
                "KernelBuffer<T>.alloc takes (uint64 count)",
            )
        } else {
            (
                code::NO_MATCHING_CONSTRUCTOR,
                "KernelBuffer takes (uint64 count) or (int64 handle, uint64 count)",
            )
        };
        let params: &[&str] = match vals.len() {
            1 => &["count"],
            2 if !alloc => &["handle", "count"],
            _ => &[],
        };
        // Argument `k` for each parameter, positional ones first.
        let mut order: Vec<Option<usize>> = vec![None; params.len()];
        for (k, a) in args.iter().enumerate() {
            if a.name.is_none() && args[..k].iter().any(|b| b.name.is_some()) {
                let msg = "a positional argument follows a named argument";
                self.error(code::NAMEDARG, a.value.span, msg);
                return Val::error();
            }
            let slot = match &a.name {
                None => Some(k).filter(|&k| k < params.len()),
                Some(n) => params.iter().position(|p| *p == n.name),
            };
            match (slot, &a.name) {
                (Some(p), _) if order[p].is_none() => order[p] = Some(k),
                (Some(_), Some(n)) => {
                    let msg = format!("parameter '{}' is bound twice", n.name);
                    self.error(code::NAMEDARG, n.span, msg);
                    return Val::error();
                }
                (None, Some(n)) if !params.is_empty() => {
                    let msg = format!("no parameter '{}': {takes}", n.name);
                    self.error(code::NAMEDARG, n.span, msg);
                    return Val::error();
                }
                _ => {}
            }
        }
        let arg = |p: usize| order.get(p).copied().flatten().unwrap_or(p);
        let ty = Ty::Buffer(elem);
        let wrong = |this: &mut Self| {
            this.error(not_found, span, takes);
            Val::error()
        };
        let count = |this: &mut Self, k: usize| match vals[k].ty.scalar() {
            Some(s) if s.is_int() || s.is_float() => {
                this.arg_to(args, &vals, k, &Ty::Prim(Scalar::U64))
            }
            _ => None,
        };
        match params.len() {
            1 => {
                let Some(n) = count(self, arg(0)) else {
                    return wrong(self);
                };
                self.set_pos(span);
                let d = self.def(Op::BufNew, ty.reg(), n, 0);
                Val {
                    ty,
                    loc: Loc::Reg(d),
                    untyped: false,
                    own: Own::Yes,
                }
            }
            2 => {
                let h = arg(0);
                if !matches!(vals[h].loc, Loc::Num(super::ty::Num::Int(0))) {
                    self.error(
                        code::TYPE_MISMATCH,
                        args[h].value.span,
                        "the handle of KernelBuffer(handle, count) must be the constant 0",
                    );
                    return Val::error();
                }
                let Some(n) = count(self, arg(1)) else {
                    return wrong(self);
                };
                self.set_pos(span);
                let d = self.def(Op::BufNewEmpty, ty.reg(), n, 0);
                Val {
                    ty,
                    loc: Loc::Reg(d),
                    untyped: false,
                    own: Own::Yes,
                }
            }
            _ => wrong(self),
        }
    }

    /// Static calls on xpu library classes (`KernelBuffer<T>.alloc`, `KernelStream.current`,
    /// `Event.create`, `KernelTimer.*`, `KernelManifest.of`, `Device.*`, `KernelThread.*`,
    /// `Workgroup.*`, `Barrier.*`).
    pub fn xpu_static_call(
        &mut self,
        lib: LibClass,
        target: &Expr,
        name: &Ident,
        args: &[Arg],
        span: Span,
    ) -> Option<Val> {
        let n = name.name.as_str();
        let v = match lib {
            LibClass::KernelBuffer => {
                let ExprKind::GenericName { args: targs, .. } = &target.kind else {
                    self.error(
                        code::TYPE_MISMATCH,
                        target.span,
                        "use KernelBuffer<T>.alloc(n) with an element type",
                    );
                    return Some(Val::error());
                };
                let Some(elem) = self.buffer_elem_arg(targs, target.span) else {
                    let _ = self.eval_args(args);
                    return Some(Val::error());
                };
                if n != "alloc" {
                    self.error(
                        code::UNRESOLVED_METHOD,
                        name.span,
                        format!("KernelBuffer has no static method '{n}'"),
                    );
                    return Some(Val::error());
                }
                self.new_buffer(elem, args, span, true)
            }
            LibClass::KernelStream => {
                if !self.expect_args(args, 0, &format!("KernelStream.{n}"), span)
                    || !self.host_only("KernelStream", span)
                {
                    return Some(Val::error());
                }
                let op = match n {
                    "current" => Op::StreamCurrent,
                    "create" => Op::StreamCreate,
                    _ => {
                        self.error(
                            code::UNRESOLVED_METHOD,
                            name.span,
                            format!("KernelStream has no static method '{n}'"),
                        );
                        return Some(Val::error());
                    }
                };
                self.set_pos(span);
                let d = self.def(op, Type::Stream, 0, 0);
                Val {
                    ty: Ty::Stream,
                    loc: Loc::Reg(d),
                    untyped: false,
                    own: Own::Yes,
                }
            }
            LibClass::Event => self.event_static_call(name, args, span),
            LibClass::KernelTimer => self.timer_static_call(name, args, span),
            LibClass::KernelManifest => self.manifest_static_call(name, args, span),
            LibClass::Device => {
                if !self.host_only("Device", span) {
                    return Some(Val::error());
                }
                match n {
                    "force" => {
                        if !self.expect_args(args, 1, "Device.force", span) {
                            return Some(Val::error());
                        }
                        let vals = self.eval_args(args);
                        // (`None` from here would read as "no member 'force'".)
                        let Some(r) = self.arg_to(args, &vals, 0, &Ty::Str) else {
                            return Some(Val::error());
                        };
                        self.set_pos(span);
                        self.emit(Op::DeviceForce, r, 0, 0);
                        Self::void()
                    }
                    "activeBackend" => {
                        if !self.expect_args(args, 0, "Device.activeBackend", span) {
                            return Some(Val::error());
                        }
                        self.set_pos(span);
                        let d = self.def(Op::DeviceBackend, Type::Str, 0, 0);
                        Val::reg(Ty::Str, d)
                    }
                    _ => match self.device_query_call(n, args, span) {
                        Some(v) => v,
                        None => {
                            let _ = self.eval_args(args);
                            self.error(
                                code::UNRESOLVED_METHOD,
                                name.span,
                                format!("Device has no method '{n}'"),
                            );
                            Val::error()
                        }
                    },
                }
            }
            LibClass::KernelThread | LibClass::Workgroup => {
                let sel = match (lib, n) {
                    (LibClass::KernelThread, "x") => geom::THREAD,
                    (LibClass::KernelThread, "y") => geom::THREAD + 1,
                    (LibClass::KernelThread, "z") => geom::THREAD + 2,
                    (LibClass::KernelThread, "globalIdX") => geom::GLOBAL,
                    (LibClass::KernelThread, "globalIdY") => geom::GLOBAL + 1,
                    (LibClass::KernelThread, "globalIdZ") => geom::GLOBAL + 2,
                    (LibClass::Workgroup, "x") => geom::GROUP,
                    (LibClass::Workgroup, "y") => geom::GROUP + 1,
                    (LibClass::Workgroup, "z") => geom::GROUP + 2,
                    (LibClass::Workgroup, "dimX") => geom::BLOCK_DIM,
                    (LibClass::Workgroup, "dimY") => geom::BLOCK_DIM + 1,
                    (LibClass::Workgroup, "dimZ") => geom::BLOCK_DIM + 2,
                    _ => {
                        let _ = self.eval_args(args);
                        self.unknown_lib_member(lib.name(), name, span);
                        return Some(Val::error());
                    }
                };
                if !self.expect_args(args, 0, &format!("{}.{n}", lib.name()), span)
                    || !self.device_only(&format!("{}.{n}()", lib.name()), span)
                {
                    return Some(Val::error());
                }
                let d = self.def(Op::Geom, Type::Scalar(Scalar::U32), sel, 0);
                Val::reg(Ty::Prim(Scalar::U32), d)
            }
            LibClass::Wave => {
                if !self.device_only(&format!("Wave.{n}()"), span) {
                    let _ = self.eval_args(args);
                    return Some(Val::error());
                }
                let u32t = Type::Scalar(Scalar::U32);
                match n {
                    "width" | "laneId" | "isFirstLane" => {
                        if !self.expect_args(args, 0, &format!("Wave.{n}"), span) {
                            return Some(Val::error());
                        }
                        let sel = if n == "width" {
                            geom::WAVE_WIDTH
                        } else {
                            geom::LANE_ID
                        };
                        let d = self.def(Op::Geom, u32t, sel, 0);
                        if n != "isFirstLane" {
                            return Some(Val::reg(Ty::Prim(Scalar::U32), d));
                        }
                        let zero = self.load_bits(u32t, 0);
                        let b = self.def(Op::EqU32, Type::BOOL, d, zero);
                        Val::reg(Ty::BOOL, b)
                    }
                    "reduceSum" | "reduceSumF32" => {
                        if !self.expect_args(args, 1, &format!("Wave.{n}"), span) {
                            return Some(Val::error());
                        }
                        let vals = self.eval_args(args);
                        // Other integer types convert to uint32 (XPU §2.7).
                        let (t, op) = if n == "reduceSum" {
                            (Scalar::U32, Op::WaveSumU32)
                        } else {
                            (Scalar::F32, Op::WaveSumF32)
                        };
                        let Some(r) = self.arg_to(args, &vals, 0, &Ty::Prim(t)) else {
                            return Some(Val::error());
                        };
                        self.set_pos(span);
                        let d = self.def(op, Type::Scalar(t), r, 0);
                        Val::reg(Ty::Prim(t), d)
                    }
                    _ => match self.wave_t2_call(n, args, span) {
                        Some(v) => v,
                        None => {
                            // (Segmented wave reductions are T3: XPU §2.14.)
                            let _ = self.eval_args(args);
                            self.unknown_lib_member("Wave", name, span);
                            Val::error()
                        }
                    },
                }
            }
            LibClass::Barrier => {
                if !matches!(n, "workgroup" | "wave" | "workgroupMemory" | "deviceMemory") {
                    let _ = self.eval_args(args);
                    self.unknown_lib_member("Barrier", name, span);
                    return Some(Val::error());
                }
                if !self.device_only(&format!("Barrier.{n}()"), span) {
                    return Some(Val::error());
                }
                match n {
                    "workgroup" => {
                        if !self.expect_args(args, 0, "Barrier.workgroup", span) {
                            return Some(Val::error());
                        }
                        self.set_pos(span);
                        self.emit(Op::Barrier, 0, 0, 0);
                    }
                    "wave" => {
                        if !self.expect_args(args, 0, "Barrier.wave", span) {
                            return Some(Val::error());
                        }
                        self.set_pos(span);
                        self.emit(Op::WaveBarrier, 0, 0, 0);
                    }
                    // Fences order the caller's own accesses (no rendezvous); the optional
                    // order must be a `MemoryOrder` constant. Every order fences fully.
                    "workgroupMemory" | "deviceMemory" => {
                        let what = format!("Barrier.{n}");
                        if args.len() > 1 {
                            let _ = self.expect_args(args, 1, &what, span);
                            return Some(Val::error());
                        }
                        if let Some(o) = args.first() {
                            if !self.memory_order_arg(o, &what) {
                                return Some(Val::error());
                            }
                        }
                        self.set_pos(span);
                        self.emit(Op::Fence, 0, u16::from(n == "deviceMemory"), 0);
                    }
                    _ => {
                        // (Not reached: unknown members are reported above.)
                        self.unknown_lib_member("Barrier", name, span);
                        return Some(Val::error());
                    }
                }
                Self::void()
            }
            _ => return None,
        };
        Some(v)
    }

    fn buffer_elem_arg(&mut self, targs: &[TypeArg], span: Span) -> Option<Scalar> {
        let [TypeArg::Type(t)] = targs else {
            self.error(
                code::TYPE_MISMATCH,
                span,
                "KernelBuffer takes exactly one element type",
            );
            return None;
        };
        match self.p.resolve_type(self.unit, t) {
            Ok(Ty::Prim(s)) if s.is_numeric() => Some(s),
            Ok(other) => {
                let n = self.ty_name(&other);
                self.error(
                    code::TYPE_MISMATCH,
                    t.span,
                    format!("'{n}' is not a buffer element type"),
                );
                None
            }
            Err(d) => {
                self.diags.push(d);
                None
            }
        }
    }

    /// Methods on buffers, shared arrays, streams, events and timers; `None` if `recv` is
    /// none of those.
    pub fn xpu_method(
        &mut self,
        recv: &Val,
        name: &Ident,
        args: &[Arg],
        span: Span,
    ) -> Option<Val> {
        let n = name.name.as_str();
        match recv.ty.clone() {
            Ty::Buffer(elem) => Some(self.buffer_method(recv, elem, n, name, args, span)),
            Ty::Shared(elem) => {
                Some(self.atomic_method(recv, elem, n, name, args, span, "shared array"))
            }
            Ty::Event => Some(self.event_method(recv, name, args, span)),
            Ty::Class(c) if c == self.p.timer_class => {
                Some(self.timer_method(recv, name, args, span))
            }
            Ty::Stream if n == "waitFor" => {
                if !self.expect_args(args, 1, "KernelStream.waitFor", span)
                    || !self.host_only("KernelStream", span)
                {
                    return Some(Val::error());
                }
                let s = self.materialize(recv)?;
                Some(self.stream_wait_for(s, args, span))
            }
            Ty::Stream => {
                // An unknown name first: its arity would only mislead.
                let op = match n {
                    "sync" => Op::StreamSync,
                    "destroy" => Op::StreamDestroy,
                    _ => {
                        let _ = self.eval_args(args);
                        self.error(
                            code::UNRESOLVED_METHOD,
                            name.span,
                            format!("KernelStream has no method '{n}'"),
                        );
                        return Some(Val::error());
                    }
                };
                if !self.expect_args(args, 0, &format!("KernelStream.{n}"), span)
                    || !self.host_only("KernelStream", span)
                {
                    return Some(Val::error());
                }
                if op == Op::StreamSync {
                    self.synced = true;
                }
                let r = self.materialize(recv)?;
                self.set_pos(span);
                self.emit(op, r, 0, 0);
                Some(Self::void())
            }
            _ => None,
        }
    }

    fn buffer_method(
        &mut self,
        recv: &Val,
        elem: Scalar,
        n: &str,
        name: &Ident,
        args: &[Arg],
        span: Span,
    ) -> Val {
        if n.starts_with("atomic") {
            return self.atomic_method(recv, elem, n, name, args, span, "buffer");
        }
        if n == "length" {
            if !self.expect_args(args, 0, "length", span) {
                return Val::error();
            }
            let Some(r) = self.materialize(recv) else {
                return Val::error();
            };
            self.set_pos(span);
            let d = self.def(Op::BufLength, Type::Scalar(Scalar::U64), r, 0);
            return Val::reg(Ty::Prim(Scalar::U64), d);
        }
        // A later-tier member is that in device code too (its own arm below, on the host).
        if !builtins::later_tier_member("KernelBuffer", n)
            && !self.host_only(&format!("KernelBuffer.{n}"), span)
        {
            let _ = self.eval_args(args);
            return Val::error();
        }
        let vals = self.eval_args(args);
        if vals.iter().any(|v| v.ty == Ty::Error) {
            return Val::error();
        }
        let Some(b) = self.materialize(recv) else {
            return Val::error();
        };
        let arr_ty = Ty::Array(Box::new(Ty::Prim(elem)));
        let host_array = |this: &mut Self, i: usize| -> Option<Reg> {
            if vals[i].ty != arr_ty {
                let (a, want) = (this.ty_name(&vals[i].ty), this.ty_name(&arr_ty));
                this.error(
                    code::TYPE_MISMATCH,
                    args[i].value.span,
                    format!("{n} needs a {want}, found {a}"),
                );
                return None;
            }
            this.materialize(&vals[i])
        };
        let named = args.iter().find(|a| a.name.is_some()).map(|a| a.value.span);
        if let Some(s) = named {
            self.error(
                code::NAMEDARG,
                s,
                format!("KernelBuffer.{n} takes no named arguments"),
            );
            return Val::error();
        }
        match (n, vals.len()) {
            ("upload" | "download" | "hostStore" | "hostLoad", 1) => {
                let Some(a) = host_array(self, 0) else {
                    return Val::error();
                };
                let op = match n {
                    "upload" => Op::BufUpload,
                    "download" => Op::BufDownload,
                    "hostStore" => Op::BufHostStore,
                    _ => Op::BufHostLoad,
                };
                self.set_pos(span);
                self.emit(op, b, a, 0);
                Self::void()
            }
            ("upload" | "download", 2) => {
                let Some(a) = host_array(self, 0) else {
                    return Val::error();
                };
                let Some(c) = self.arg_to(args, &vals, 1, &Ty::Prim(Scalar::I64)) else {
                    return Val::error();
                };
                let op = if n == "upload" {
                    Op::BufUploadN
                } else {
                    Op::BufDownloadN
                };
                self.set_pos(span);
                self.emit(op, b, a, c);
                Self::void()
            }
            ("uploadAsync" | "downloadAsync", 2) => {
                let Some(a) = host_array(self, 0) else {
                    return Val::error();
                };
                let Some(s) = self.arg_to(args, &vals, 1, &Ty::Stream) else {
                    return Val::error();
                };
                let op = if n == "uploadAsync" {
                    Op::BufUploadAsync
                } else {
                    Op::BufDownloadAsync
                };
                self.set_pos(span);
                self.emit(op, b, a, s);
                Self::void()
            }
            ("free", 0) => {
                self.set_pos(span);
                self.emit(Op::BufFree, b, 0, 0);
                Self::void()
            }
            ("allocate", 0 | 1) => {
                let keep_kind = vals.is_empty() as u16;
                let k = if vals.is_empty() {
                    self.load_bits(Type::I32, 0)
                } else {
                    let Some(k) = self.arg_to(args, &vals, 0, &Ty::Prim(Scalar::I32)) else {
                        return Val::error();
                    };
                    k
                };
                self.set_pos(span);
                self.emit(Op::BufAllocate, b, k, keep_kind);
                Self::void()
            }
            ("slice", 2) => {
                let (Some(off), Some(cnt)) = (
                    self.arg_to(args, &vals, 0, &Ty::Prim(Scalar::U64)),
                    self.arg_to(args, &vals, 1, &Ty::Prim(Scalar::U64)),
                ) else {
                    return Val::error();
                };
                let base = self.window(&[Type::Scalar(Scalar::U64), Type::Scalar(Scalar::U64)]);
                self.emit(Op::Mov, base, off, 0);
                self.emit(Op::Mov, base + 1, cnt, 0);
                self.set_pos(span);
                let ty = Ty::Buffer(elem);
                let d = self.def(Op::BufSlice, ty.reg(), b, base);
                Val {
                    ty,
                    loc: Loc::Reg(d),
                    untyped: false,
                    own: Own::Yes,
                }
            }
            (later, _) if builtins::later_tier_member("KernelBuffer", later) => {
                self.error(
                    code::NOT_IMPLEMENTED,
                    span,
                    builtins::later_tier(&format!("'KernelBuffer.{later}'")),
                );
                Val::error()
            }
            _ => {
                self.error(
                    code::UNRESOLVED_METHOD,
                    name.span,
                    format!(
                        "KernelBuffer has no method '{n}' taking {} argument(s)",
                        vals.len()
                    ),
                );
                Val::error()
            }
        }
    }

    /// An index for device memory (any integer type), as int64.
    pub(super) fn device_index(&mut self, v: &Val, span: Span) -> Option<Reg> {
        match v.ty.scalar() {
            Some(s) if s.is_int() => self.coerce(v.clone(), &Ty::Prim(Scalar::I64), span),
            _ if v.ty == Ty::Error || self.void_value(v, span) => None,
            _ => {
                let n = self.ty_name(&v.ty);
                self.error(
                    code::TYPE_MISMATCH,
                    span,
                    format!("an index must be an integer, found {n}"),
                );
                None
            }
        }
    }

    /// The field registers of a POD argument passed to a device function: the argument must
    /// be a (flattened) POD parameter of the calling device function.
    pub fn pod_fields(&mut self, arg: Option<&Expr>, v: &Val, want: &Ty) -> Option<Vec<Reg>> {
        if v.ty != *want {
            let (a, b) = (self.ty_name(&v.ty), self.ty_name(want));
            self.error(
                code::TYPE_MISMATCH,
                arg.map_or(Span::default(), |a| a.span),
                format!("expected {b}, found {a}"),
            );
            return None;
        }
        if let Some(ExprKind::Name(id)) = arg.map(|a| &a.kind) {
            if let Some(li) = self.lookup_local(&id.name) {
                if let Some(regs) = self.locals[li].pod.clone() {
                    return Some(regs);
                }
            }
        }
        self.error(
            code::XPU_N01,
            arg.map_or(Span::default(), |a| a.span),
            "device code can only pass its own POD parameters on",
        );
        None
    }

    /// `p.field` for a POD parameter of device code: the flattened field register.
    pub fn pod_field(&mut self, target: &Expr, name: &Ident) -> Option<Val> {
        let ExprKind::Name(id) = &target.kind else {
            return None;
        };
        let li = self.lookup_local(&id.name)?;
        let regs = self.locals[li].pod.clone()?;
        let Ty::Class(c) = self.locals[li].ty else {
            return None;
        };
        let cls = &self.p.classes[c as usize];
        match cls.fields.iter().position(|f| f.name == name.name) {
            Some(fi) => Some(Val::reg(cls.fields[fi].ty.clone(), regs[fi])),
            None => {
                let cn = cls.qual.clone();
                self.error(
                    code::VARIABLE_NOT_FOUND,
                    name.span,
                    format!("'{cn}' has no field '{}'", name.name),
                );
                Some(Val::error())
            }
        }
    }

    /// The initialiser of static field `si` if it is a constant (a `static final` primitive
    /// whose initialiser is a constant expression).
    fn constant_initialiser(&self, si: u32, depth: u32) -> Option<Expr> {
        let st = &self.p.statics[si as usize];
        if depth > 16 || !st.is_final || !matches!(st.ty, Ty::Prim(_) | Ty::Str) {
            return None;
        }
        let init = self.static_initialiser(si)?;
        self.is_const_expr(&init, st.class, depth).then_some(init)
    }

    /// The initialiser of static `si` in its declaration, if it has one.
    pub(super) fn static_initialiser(&self, si: u32) -> Option<Expr> {
        let st = &self.p.statics[si as usize];
        self.field_declarator(st.class, &st.name, true)?.1.clone()
    }

    /// Constant expressions (LANGUAGE §5.3): literals, constants of `class`, primitive casts,
    /// unary, binary and `?:` operators over them.
    pub(super) fn is_const_expr(&self, e: &Expr, class: u32, depth: u32) -> bool {
        if depth > 16 {
            return false;
        }
        match &e.kind {
            ExprKind::Int { .. }
            | ExprKind::Float { .. }
            | ExprKind::Char(_)
            | ExprKind::Str(_)
            | ExprKind::Bool(_) => true,
            ExprKind::Paren(i) | ExprKind::Cast { expr: i, .. } => {
                self.is_const_expr(i, class, depth + 1)
            }
            ExprKind::Unary { op, operand } => {
                !matches!(op, crate::ast::UnOp::PreInc | crate::ast::UnOp::PreDec)
                    && self.is_const_expr(operand, class, depth + 1)
            }
            ExprKind::Binary { lhs, rhs, .. } => {
                self.is_const_expr(lhs, class, depth + 1)
                    && self.is_const_expr(rhs, class, depth + 1)
            }
            ExprKind::Cond { cond, then, els } => [cond, then, els]
                .iter()
                .all(|e| self.is_const_expr(e, class, depth + 1)),
            // A name not shadowed by a local (the current class's initialisers are lowered in
            // the current function's scope; another class's are not).
            ExprKind::Name(id) => {
                let shadowed = class == self.class && self.lookup_local(&id.name).is_some();
                !shadowed && self.is_named_constant(class, &id.name, depth)
            }
            // `Cls.NAME`, resolved as `class`'s unit sees it.
            ExprKind::Field { target, name } => match &target.kind {
                ExprKind::Name(id)
                    if !(class == self.class && self.lookup_local(&id.name).is_some()) =>
                {
                    let unit = self.p.classes[class as usize].unit;
                    matches!(self.p.lookup_class(unit, &id.name), Some(ClassRef::User(c))
                        if self.is_named_constant(c, &name.name, depth))
                }
                _ => false,
            },
            _ => false,
        }
    }

    /// Whether `class` has a static field `name` that is a constant.
    fn is_named_constant(&self, class: u32, name: &str, depth: u32) -> bool {
        self.p.classes[class as usize]
            .statics
            .iter()
            .find(|&&s| self.p.statics[s as usize].name == name)
            .is_some_and(|&si| self.constant_initialiser(si, depth + 1).is_some())
    }

    /// A constant static read (of any class): its value, or `None` if it is not a constant.
    /// The initialiser is lowered as its own class sees it: that class's names, none of the
    /// current function's locals.
    pub fn static_constant(&mut self, si: u32, span: Span) -> Option<Val> {
        let home = self.p.statics[si as usize].class;
        if home == self.class {
            return self.own_static_constant(si, span);
        }
        let outer = (self.class, self.unit, self.scope_floor);
        self.class = home;
        self.unit = self.p.classes[home as usize].unit;
        self.scope_floor = self.scopes.len();
        let v = self.own_static_constant(si, span);
        (self.class, self.unit, self.scope_floor) = outer;
        v
    }

    /// [`Self::static_constant`] of the current class.
    fn own_static_constant(&mut self, si: u32, span: Span) -> Option<Val> {
        if self.inline_depth >= 16 {
            return None;
        }
        let init = self.constant_initialiser(si, 0)?;
        let ty = self.p.statics[si as usize].ty.clone();
        self.inline_depth += 1;
        let v = self.expr(&init);
        self.inline_depth -= 1;
        let v = match (v.loc.clone(), ty.scalar(), v.ty.scalar()) {
            // Keep constants as constants (typed, not untyped) so they fold further.
            (Loc::Num(n), Some(to), Some(from)) if to.is_numeric() && from.is_numeric() => {
                let cell = super::ty::const_cell(n, to);
                Val {
                    ty: ty.clone(),
                    loc: Loc::Num(super::ty::cell_num(cell, to)),
                    untyped: false,
                    own: Own::No,
                }
            }
            // char, String and boolean constants stay constants too (case labels, §7; a
            // constant condition, §7's definite assignment).
            (Loc::Char(_) | Loc::Str(_) | Loc::Bool(_), _, _) if v.ty == ty => {
                Val { own: Own::No, ..v }
            }
            _ => match self.coerce(v, &ty, span) {
                Some(r) => Val::reg(ty, r),
                None => Val::error(),
            },
        };
        Some(v)
    }

    /// A static field read in device code: a constant (LANGUAGE §5.3) is inlined; any other
    /// static, a `static final` one with a call in its initialiser included, is `XPU-N01`
    /// (XPU §3.3): its value exists only on the host.
    pub fn device_static(&mut self, si: u32, span: Span) -> Val {
        if let Some(v) = self.static_constant(si, span) {
            return v;
        }
        let st = &self.p.statics[si as usize];
        let why = if st.is_final {
            "its initialiser is not a constant expression"
        } else {
            "only static final constants"
        };
        let msg = format!(
            "device code cannot read the static field '{}' ({why})",
            st.name
        );
        self.error(code::XPU_N01, span, msg);
        Val::error()
    }

    /// `buf[i]` / `shared[i]` read in device code.
    pub fn device_elem_get(&mut self, base: Reg, elem: Scalar, index: &Expr, span: Span) -> Val {
        let Some(idx) = self.device_elem_index(index) else {
            return Val::error();
        };
        self.set_pos(span);
        let d = self.def(
            typed_op("ld", elem).expect("ld"),
            Type::Scalar(elem),
            base,
            idx,
        );
        Val::reg(Ty::Prim(elem), d)
    }

    /// The index register of a device element store target.
    pub fn device_elem_index(&mut self, index: &Expr) -> Option<Reg> {
        let iv = self.expr(index);
        if let Some(r) = self.local_index(index, &iv) {
            return Some(r);
        }
        self.device_index(&iv, index.span)
    }

    /// `shared T[n]` in a kernel: one array per workgroup (XPU §2.6).
    pub fn shared_array(&mut self, elem: &crate::ast::TypeExpr, len: &Expr, span: Span) -> Val {
        if self.job.sig.as_ref().map(|s| s.kind) != Some(FnKind::Kernel) {
            self.error(
                code::XPU_K03,
                span,
                "'shared' arrays are only allowed in a @Kernel body",
            );
            return Val::error();
        }
        let et = match self.p.resolve_type(self.unit, elem) {
            Ok(Ty::Prim(s)) if s.is_numeric() => s,
            Ok(other) => {
                let n = self.ty_name(&other);
                self.error(
                    code::TYPE_MISMATCH,
                    elem.span,
                    format!("'{n}' is not a shared element type"),
                );
                return Val::error();
            }
            Err(d) => {
                self.diags.push(d);
                return Val::error();
            }
        };
        let lv = self.expr(len);
        let count = match lv.loc {
            Loc::Num(super::ty::Num::Int(n)) if n > 0 && n <= (16 << 20) => n as u32,
            Loc::Num(super::ty::Num::Int(n)) => {
                self.error(
                    code::TYPE_MISMATCH,
                    len.span,
                    format!(
                        "a constant shared array size must be 1 to {}, not {n}",
                        16 << 20
                    ),
                );
                return Val::error();
            }
            _ if lv.ty.is_int() => return self.dynamic_shared(et, lv, len.span),
            _ if lv.ty == Ty::Error => return Val::error(),
            _ => {
                let n = self.ty_name(&lv.ty);
                self.error(
                    code::TYPE_MISMATCH,
                    len.span,
                    format!("a shared array size must be an integer, found {n}"),
                );
                return Val::error();
            }
        };
        let slot = self.shared.len() as u16;
        self.shared.push(cajeta_bytecode::SharedDecl {
            elem: et,
            len: count,
        });
        let ty = Ty::Shared(et);
        let d = self.def(Op::SharedRef, ty.reg(), slot, 0);
        Val::reg(ty, d)
    }

    /// `shared T[n]` with a run-time `n` (XPU §2.6, T2): the kernel's one dynamic shared
    /// array (declaration length 0), whose memory is the launch's `sharedBytes`. Its length
    /// is `min(n, sharedBytes / sizeof(T))` as evaluated by the executing item (a negative `n`
    /// counts as 0), kept in a register; every access through a register holding the array is
    /// checked against it by `chk.idx` (see [`FnBuilder::emit`]).
    fn dynamic_shared(&mut self, et: Scalar, n: Val, span: Span) -> Val {
        let slot = match self.shared.iter().position(|d| d.len == 0) {
            Some(s) if self.dyn_shared.as_ref().is_some_and(|d| d.span == span) => s,
            Some(_) => {
                self.error(
                    code::XPU_N01,
                    span,
                    "a kernel may declare at most one dynamic shared array",
                );
                return Val::error();
            }
            None => {
                self.shared
                    .push(cajeta_bytecode::SharedDecl { elem: et, len: 0 });
                self.shared.len() - 1
            }
        };
        let Some(n) = self.coerce(n, &Ty::Prim(Scalar::I64), span) else {
            return Val::error();
        };
        let ty = Ty::Shared(et);
        let d = self.new_reg(ty.reg());
        self.emit(Op::SharedRef, d, slot as u16, 0);
        let cap = self.temp(Type::Scalar(Scalar::U64));
        self.emit(Op::BufLength, cap, d, 0);
        let cap = self.convert(cap, Scalar::U64, Scalar::I64);
        let zero = self.load_bits(Type::I64, 0);
        let min = typed_op("min", Scalar::I64).expect("min.i64");
        let max = typed_op("max", Scalar::I64).expect("max.i64");
        let len = match &self.dyn_shared {
            Some(dy) => dy.len,
            None => self.new_reg(Type::I64),
        };
        self.emit(max, len, n, zero);
        self.emit(min, len, len, cap);
        self.checked_mems.push((d, len));
        if self.dyn_shared.is_none() {
            self.dyn_shared = Some(super::func::DynShared { len, span });
        }
        Val::reg(ty, d)
    }

    /// The int64 length passed with shared array `r` to a `Shared<T>` parameter: the
    /// register the compiler checks `r` against (the dynamic array, a parameter), else the
    /// array's own length.
    pub fn shared_arg_len(&mut self, r: Reg) -> Reg {
        if let Some(len) = self.mem_len_reg(r) {
            return len;
        }
        let n = self.temp(Type::Scalar(Scalar::U64));
        self.emit(Op::BufLength, n, r, 0);
        self.convert(n, Scalar::U64, Scalar::I64)
    }

    /// A launch's `grid:` or `block:` list, each entry an int64 register; `None` after an
    /// error.
    fn launch_dims(&mut self, e: &Expr) -> Option<Vec<Reg>> {
        let parts: Vec<&Expr> = match &e.kind {
            ExprKind::ArrayLit(items) => items.iter().collect(),
            _ => vec![e],
        };
        if parts.is_empty() || parts.len() > 3 {
            self.error(
                code::XPU_N02,
                e.span,
                "a launch dimension list has 1 to 3 entries",
            );
            return None;
        }
        let mut regs = vec![];
        for p in parts {
            let v = self.expr(p);
            if !v.ty.is_int() {
                if v.ty != Ty::Error {
                    let n = self.ty_name(&v.ty);
                    self.error(
                        code::TYPE_MISMATCH,
                        p.span,
                        format!("a launch dimension must be an integer, found {n}"),
                    );
                }
                return None;
            }
            regs.push(self.coerce(v, &Ty::Prim(Scalar::I64), p.span)?);
        }
        Some(regs)
    }

    /// A launch's `sharedBytes:` as an int64 register; `None` after an error.
    fn launch_shared_bytes(&mut self, e: &Expr) -> Option<Reg> {
        let e = match &e.kind {
            ExprKind::ArrayLit(items) if items.len() == 1 => &items[0],
            _ => e,
        };
        let v = self.expr(e);
        if !v.ty.is_int() {
            self.error(
                code::TYPE_MISMATCH,
                e.span,
                "sharedBytes must be an integer",
            );
            return None;
        }
        self.coerce(v, &Ty::Prim(Scalar::I64), e.span)
    }

    /// The launch statement `k.launch(s?, grid: …, block: …, sharedBytes: …)(args)`.
    /// The method the receiver of `.launch` names (a name in this class, or `Class.name`),
    /// with its class.
    pub fn launched_method(&self, kref: &Expr) -> Option<(u32, MethodSig)> {
        let (class, name) = match &kref.kind {
            ExprKind::Name(id) => (self.class, &id.name),
            ExprKind::Field { target, name } => match self.class_path(target) {
                Some(ClassRef::User(c)) => (c, &name.name),
                _ => return None,
            },
            _ => return None,
        };
        let m = self.p.classes[class as usize]
            .methods
            .iter()
            .find(|m| &m.name == name)?;
        Some((class, m.clone()))
    }

    pub fn launch(&mut self, callee: &Expr, args: &[Arg], span: Span) -> Val {
        let ExprKind::Call {
            target: Some(kref),
            args: opts,
            ..
        } = &callee.kind
        else {
            unreachable!("caller checked the launch shape")
        };
        if self.device {
            self.error(
                code::XPU_N01,
                span,
                "kernels cannot be launched from device code",
            );
            return Val::error();
        }
        let kernel = self.launched_method(kref);
        if let (Some((c, k)), ExprKind::Field { name, .. }) = (&kernel, &kref.kind) {
            // A launch is a use of the kernel method (LANGUAGE §5.2).
            self.check_access(k.access, *c, name.span, &name.name);
        }
        let Some(kernel) = kernel.map(|(_, k)| k).filter(|k| k.kind == FnKind::Kernel) else {
            self.error(
                code::XPU_N02,
                kref.span,
                "the receiver of .launch must be a @Kernel method",
            );
            return Val::error();
        };
        // Options: an optional unnamed stream first, then grid:, block:, sharedBytes:.
        let mut stream: Option<&Expr> = None;
        let (mut grid, mut block, mut shared): (Option<&Expr>, Option<&Expr>, Option<&Expr>) =
            (None, None, None);
        for (i, o) in opts.iter().enumerate() {
            match o.name.as_ref().map(|n| n.name.as_str()) {
                None if i == 0 => stream = Some(&o.value),
                None => {
                    self.error(
                        code::XPU_N02,
                        o.value.span,
                        "only the stream may be passed without a name",
                    );
                    return Val::error();
                }
                Some(opt @ ("grid" | "block" | "sharedBytes")) => {
                    let slot = match opt {
                        "grid" => &mut grid,
                        "block" => &mut block,
                        _ => &mut shared,
                    };
                    if slot.is_some() {
                        self.error(
                            code::XPU_N02,
                            o.value.span,
                            format!("launch option '{opt}' is given twice"),
                        );
                        return Val::error();
                    }
                    *slot = Some(&o.value);
                }
                Some("spec") => {
                    let at = o.name.as_ref().map_or(o.value.span, |n| n.span);
                    self.error(
                        code::NOT_IMPLEMENTED,
                        at,
                        builtins::later_tier(
                            "the launch option 'spec:' (specialization constants)",
                        ),
                    );
                    return Val::error();
                }
                Some(other) => {
                    self.error(
                        code::XPU_N02,
                        o.value.span,
                        format!("unknown launch option '{other}'"),
                    );
                    return Val::error();
                }
            }
        }
        let (Some(grid), Some(block)) = (grid, block) else {
            self.error(
                code::XPU_N02,
                callee.span,
                "a launch needs grid: and block:",
            );
            return Val::error();
        };
        // Evaluate in source order: stream, options, then the kernel arguments.
        let sreg = match stream {
            Some(e) => {
                let v = self.expr(e);
                let Some(r) = self.coerce(v, &Ty::Stream, e.span) else {
                    return Val::error();
                };
                r
            }
            None => self.def(Op::StreamCurrent, Type::Stream, 0, 0),
        };
        // The options in the order they are written (XPU §3.4: stream, options, arguments).
        let mut written: Vec<(&Expr, usize)> = vec![(grid, 0), (block, 1)];
        written.extend(shared.map(|e| (e, 2)));
        written.sort_by_key(|(e, _)| e.span.start);
        let (mut grid_regs, mut block_regs, mut sh) = (vec![], vec![], None);
        for (e, which) in written {
            let ok = match which {
                0 => self.launch_dims(e).map(|r| grid_regs = r),
                1 => self.launch_dims(e).map(|r| block_regs = r),
                _ => self.launch_shared_bytes(e).map(|r| sh = Some(r)),
            };
            if ok.is_none() {
                return Val::error();
            }
        }
        let dims: Vec<(&Expr, Vec<Reg>)> = vec![(grid, grid_regs), (block, block_regs)];
        let vals = self.eval_args(args);
        if vals.iter().any(|v| v.ty == Ty::Error) {
            return Val::error();
        }
        let Some(sig) =
            self.resolve_overload(std::slice::from_ref(&kernel), args, &vals, span, false)
        else {
            return Val::error();
        };
        // Fresh arguments (`heap KernelBuffer<T>(n)`) are stored nowhere: they drop at the end
        // of the statement (LANGUAGE §6.4), a buffer once the launch's work is done (XPU §4.3).
        let fresh: Vec<Val> = vals
            .iter()
            .filter(|v| !matches!(v.own, Own::No))
            .cloned()
            .collect();
        // Arguments, converted (buffers must match exactly; POD objects are flattened).
        let binding = Self::bind_args(&sig, args).unwrap_or_default();
        let mut arg_regs: Vec<Reg> = vec![];
        for (pi, (_, pty)) in sig.params.iter().enumerate() {
            let ai = binding.get(pi).copied().unwrap_or(pi);
            let v = vals[ai].clone();
            let aspan = args[ai].value.span;
            match pty {
                Ty::Buffer(_) if v.ty != *pty => {
                    let (a, b) = (self.ty_name(&v.ty), self.ty_name(pty));
                    self.error(
                        code::TYPE_MISMATCH,
                        aspan,
                        format!("kernel argument: expected {b}, found {a}"),
                    );
                    return Val::error();
                }
                Ty::Class(c) => {
                    let Some(obj) = self.coerce(v, pty, aspan) else {
                        return Val::error();
                    };
                    let fields = self.p.classes[*c as usize].fields.clone();
                    for (fi, f) in fields.iter().enumerate() {
                        let d = self.def(Op::GetField, f.ty.reg(), obj, fi as u16);
                        arg_regs.push(d);
                    }
                }
                _ => {
                    let Some(r) = self.coerce(v, pty, aspan) else {
                        return Val::error();
                    };
                    // A vector argument is its lanes (consecutive registers).
                    arg_regs.extend((0..pty.lanes() as u16).map(|k| r + k));
                }
            }
            // Record launch borrows of bare buffer names (XPU-K02).
            if let (Ty::Buffer(_), ExprKind::Name(id)) = (pty, &args[ai].value.kind) {
                if let Some(li) = self.lookup_local(&id.name) {
                    let line = self.pos_line();
                    self.record_borrow(li, &sig.name, line);
                }
            }
        }
        let mut types = vec![Type::Stream];
        types.extend(std::iter::repeat_n(Type::I64, 7));
        types.extend(param_types(self, &sig));
        let base = self.window(&types);
        self.emit(Op::Mov, base, sreg, 0);
        let one = self.load_bits(Type::I64, 1);
        for (k, (_, regs)) in dims.iter().enumerate() {
            for axis in 0..3 {
                let r = regs.get(axis).copied().unwrap_or(one);
                self.emit(Op::Mov, base + 1 + (k * 3 + axis) as u16, r, 0);
            }
        }
        match sh {
            Some(r) => self.emit(Op::Mov, base + 7, r, 0),
            None => self.emit_bc(Op::LoadI, base + 7, 0),
        };
        for (i, r) in arg_regs.into_iter().enumerate() {
            self.emit(Op::Mov, base + 8 + i as u16, r, 0);
        }
        self.set_pos(span);
        self.emit(Op::Launch, base, sig.func as u16, 0);
        for v in fresh {
            self.drop_at_end(v);
        }
        Self::void()
    }
}
